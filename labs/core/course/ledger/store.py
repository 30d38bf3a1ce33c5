"""The :class:`Ledger`: one student's ledger files in a folder, read, appended to and exported.

It picks the file new events go to (the main file; a ``.recovery-<n>`` continuation file when
the main one is not clean or is full; memory when nothing can be written), appends under the
lock of :mod:`labs.core.course.ledger.files` (re-reading what other windows wrote, stamping the
time, deciding a first commit), and gives the bytes to download or to carry to another folder.
The rules it keeps are in :mod:`labs.core.course.ledger`'s docstring.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from labs.core.course.answers import first_prediction
from labs.core.course.ledger import events as ledger_events
from labs.core.course.ledger.config import (
    FILE_PREFIX,
    default_ledger_dir,
    ledger_filename,
    validate_student_id,
)
from labs.core.course.ledger.events import (  # the event format; the store writes it
    GENESIS_HASH, KINDS, MAX_ID_CHARS, MAX_LINE_BYTES, MAX_PAYLOAD_DEPTH, SCHEMA_VERSION,
    Problem, ReadResult, finite_json, event_hash, event_line, read_ledger, read_ledger_file,
    utc_now,
)
from labs.core.course.ledger.files import (
    append_bytes,
    file_lock,
    in_browser,
    recovery_name,
    student_files,
    write_new_file,
)

__all__ = ["Ledger", "first_predictions", "room_left"]

_TS_PLACEHOLDER = "0000-00-00T00:00:00.000000Z"  # as long as utc_now(): sizes a draft


def first_predictions(events: list[dict]) -> dict[str, dict]:
    """item id -> its first ``predict`` event holding an answer (what a lab's lock restores;
    the rule is :func:`labs.core.course.answers.first_prediction`)."""
    out: dict[str, dict] = {}
    for e in events:
        if e.get("item_id") not in out and first_prediction([e]) is e:
            out[e["item_id"]] = e
    return out


def room_left(size: int) -> bool:
    """Whether a file of ``size`` bytes may take another event and stay under the read limit.

    The headroom is the longest possible event, so every window decides the same from the size
    alone (they must agree on which file is the one being appended to).
    """
    limit = ledger_events.MAX_READ_BYTES
    return size + min(MAX_LINE_BYTES, limit // 8) <= limit


@dataclass
class _Chain:
    """One file of the ledger as this process knows it."""

    path: Path | None  # None: an uploaded or purely in-memory chain
    name: str
    events: list[dict] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    head_hash: str = GENESIS_HASH
    last_seq: int = 0
    offset: int = 0  # bytes of the file already read
    data: bytes = b""  # for chains without a file: the bytes as read or uploaded
    base: "_Chain | None" = None  # memory only: the chain it continues ...
    base_size: int = 0  # ... from this many bytes of it (the fork point)

    @property
    def clean(self) -> bool:
        return not self.problems


class Ledger:
    """A student's ledger in ``directory``: read it, append events to it, export it.

    Modes: ``"file"`` (appending to the main file), ``"recovery"`` (the main file is not clean,
    or is full, and is kept untouched; appending to a continuation file), ``"memory"`` (nothing
    can be written: events are kept in memory and offered for download). ``warnings`` holds
    what the student should be told, in plain sentences.
    """

    def __init__(self, student_id: str, directory: str | os.PathLike | None = None, *,
                 memory: bool | None = None, memory_reason: str | None = None):
        self.student_id = validate_student_id(student_id)
        self.directory = Path(directory).expanduser() if directory else default_ledger_dir()
        self.path = self.directory / ledger_filename(self.student_id)
        self.warnings: list[str] = []
        self.mode = "file"
        self._chains: list[_Chain] = []
        self._target: _Chain | None = None  # chain that receives new events
        self._memory = _Chain(None, "memory")
        force_memory = in_browser() if memory is None else memory
        if force_memory:
            self._to_memory(memory_reason or (
                "This is a browser-only run: nothing is saved on this computer. Download "
                "your ledger before closing the page; upload it next time."))
        else:
            self._open()

    # -- opening -------------------------------------------------------------------------
    @property
    def lock_path(self) -> Path:
        return self.directory / f".{FILE_PREFIX}{self.student_id}.lock"

    def _recovery_path(self, n: int) -> Path:
        return self.directory / recovery_name(self.student_id, n)

    def _load(self, path: Path) -> _Chain:
        chain = _Chain(path, path.name)
        result = read_ledger_file(path)
        chain.events, chain.problems = result.events, result.problems
        chain.head_hash, chain.last_seq, chain.offset = (result.head_hash, result.last_seq,
                                                         result.size)
        return chain

    def _open(self) -> None:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self._to_memory(f"The ledger folder {self.directory} cannot be created ({exc}). "
                            "Your records are kept in memory only: download them before "
                            "closing the lab.")
            return
        self._chains = [self._load(p) for p in student_files(self.directory, self.student_id)]
        self._pick_target()
        if not self._writable():
            self._to_memory(f"The ledger folder {self.directory} is not writable. Your records "
                            "are kept in memory only: download them before closing the lab.")

    def _takes_events(self, chain: _Chain) -> bool:
        return chain.clean and room_left(chain.offset) and not self._read_only(chain)

    def _read_only(self, chain: _Chain) -> bool:
        """A file that exists but cannot be written, in a folder that can (a read-only folder
        is the memory mode's case: the chain goes on in memory from this file)."""
        return (chain.path is not None and chain.path.exists()
                and not os.access(chain.path, os.W_OK)
                and os.access(self.directory, os.W_OK | os.X_OK))

    def _pick_target(self) -> None:
        """Append to the main file if it is clean and has room, else to the first continuation
        file that is; every window picks the same file from the same files."""
        main = next((c for c in self._chains if c.path == self.path), None)
        if main is None:
            main = _Chain(self.path, self.path.name)
            self._chains.insert(0, main)
        if self._takes_events(main):
            self._target, self.mode = main, "file"
            return
        self._warn_skipped(main)
        n = 1
        while True:
            path = self._recovery_path(n)
            chain = next((c for c in self._chains if c.path == path), None)
            if chain is None:  # another lab may have created it since we opened
                chain = self._load(path) if path.exists() else _Chain(path, path.name)
                self._chains.append(chain)
            if self._takes_events(chain):
                break
            self._warn_skipped(chain)
            n += 1
        self._target, self.mode = chain, "recovery"
        msg = (f"New records go to {chain.path}. Hand in every "
               f"{FILE_PREFIX}{self.student_id}*.jsonl file; the grader merges them.")
        if msg not in self.warnings:
            self.warnings.append(msg)

    def _warn_skipped(self, chain: _Chain) -> None:
        if chain.clean and self._read_only(chain):
            msg = (f"Your ledger file {chain.path} is read-only (its folder is writable): it "
                   f"is kept as it is and its {len(chain.events)} records are still used.")
        elif chain.clean:  # full, not damaged
            msg = (f"Your ledger {chain.path} reached the size limit "
                   f"({ledger_events.MAX_READ_BYTES // (1024 * 1024) or 1} MiB) and is kept as "
                   f"it is; its {len(chain.events)} records are still used.")
        else:
            first = chain.problems[0]
            if first.code == "re_encoded":
                what = ("an editor re-saved it as UTF-16; every record in it is read, and new "
                        "ones go to a new file")
            elif first.code == "torn_tail":
                what = ("its last record was cut off (the lab was probably interrupted while "
                        "writing)")
            else:
                what = f"it could not be read fully ({first})"
            msg = (f"Your ledger {chain.path} was kept untouched: {what}. "
                   f"{len(chain.events)} earlier records in it are still used.")
        if msg not in self.warnings:
            self.warnings.append(msg)

    def _writable(self) -> bool:
        target = self._target.path if self._target else None
        if not os.access(self.directory, os.W_OK | os.X_OK):
            return False
        return target is None or not target.exists() or os.access(target, os.W_OK)

    def _to_memory(self, warning: str) -> None:
        """Stop writing files: continue the chain of the current target in memory."""
        self.mode = "memory"
        if warning not in self.warnings:
            self.warnings.append(warning)
        base = self._target
        if base is not None and not self._memory.events:
            self._memory.head_hash, self._memory.last_seq = base.head_hash, base.last_seq
            self._memory.name, self._memory.base = base.name, base
            self._memory.base_size = base.offset if base.path is not None else len(base.data)
        self._target = None

    # -- reading -------------------------------------------------------------------------
    def refresh(self) -> None:
        """Pick up events other processes appended since we last looked (no lock needed),
        following them into the next file when the one we append to has filled up."""
        for _ in range(1000):  # bounded: each round moves to the next continuation file
            chain = self._target
            if chain is None or chain.path is None:
                return
            try:
                with open(chain.path, "rb") as f:
                    f.seek(chain.offset)
                    data = f.read(ledger_events.MAX_READ_BYTES)
            except OSError:
                return
            self._consume(chain, data, final=False)
            if not chain.clean or room_left(chain.offset):
                return
            self._pick_target()

    def _consume(self, chain: _Chain, data: bytes, *, final: bool) -> None:
        result = read_ledger(data, start_hash=chain.head_hash, start_seq=chain.last_seq,
                             final=final)
        chain.events.extend(result.events)
        chain.problems.extend(result.problems)
        chain.head_hash, chain.last_seq = result.head_hash, result.last_seq
        chain.offset += result.size

    def _known_events(self) -> list[dict]:
        out: list[dict] = []
        for chain in self._chains:
            out.extend(e for e in chain.events if e.get("student_id") == self.student_id)
        out.extend(self._memory.events)
        return out

    def events(self) -> list[dict]:
        """Every valid event of this student: files in order (main, recoveries), then memory."""
        self.refresh()
        return self._known_events()

    def first_predictions(self) -> dict[str, dict]:
        """item id -> the first ``predict`` event of every item (every lab) in this ledger."""
        return first_predictions(self.events())

    @property
    def head_hash(self) -> str:
        """Hash of the newest event written by this ledger's target chain (a grading receipt)."""
        if self.mode == "memory":
            return self._memory.head_hash
        return self._target.head_hash if self._target else GENESIS_HASH

    @property
    def target_path(self) -> Path | None:
        """The file new events are appended to (None in memory mode)."""
        return self._target.path if self._target else None

    # -- writing -------------------------------------------------------------------------
    def _draft(self, kind: str, lab_id: str, item_id: str, payload: dict, lab_version: str,
               session: str, ts: str | None) -> dict:
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        for name, value in (("lab_id", lab_id), ("item_id", item_id)):
            if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
                raise ValueError(f"{name} must be a non-empty string of at most "
                                 f"{MAX_ID_CHARS} characters, got {value!r}")
        if not isinstance(payload, dict) or not finite_json(payload):
            raise ValueError("payload must be a dict of plain JSON values (no NaN/inf, "
                             f"at most {MAX_PAYLOAD_DEPTH} levels deep), got {payload!r}")
        draft = {
            "schema": SCHEMA_VERSION, "ts": ts, "student_id": self.student_id,
            "lab_id": lab_id, "lab_version": str(lab_version)[:MAX_ID_CHARS],
            "item_id": item_id, "kind": kind, "payload": payload,
            "session": str(session)[:MAX_ID_CHARS],
        }
        if len(event_line({**draft, "ts": ts or _TS_PLACEHOLDER, "seq": 0,
                           "prev_hash": GENESIS_HASH, "hash": GENESIS_HASH})) > MAX_LINE_BYTES:
            raise ValueError(f"payload too large: an event must fit in {MAX_LINE_BYTES} bytes")
        return draft

    def append(self, kind: str, *, lab_id: str, item_id: str, payload: dict,
               lab_version: str = "unknown", session: str = "", ts: str | None = None) -> dict:
        """Seal and durably append one event; returns it (with seq, ts and hash).

        ``ts`` is stamped once the lock is held (so the file's times never go backwards between
        windows); pass ``ts`` only to record a time taken earlier. Raises ValueError for a bad
        kind, id or payload. Never raises for storage problems: those switch the ledger to a
        continuation file or to memory and add a warning.
        """
        draft = self._draft(kind, lab_id, item_id, payload, lab_version, session, ts)
        return self._write(lambda: draft)

    def commit_first(self, *, lab_id: str, item_id: str, payload: dict,
                     lab_version: str = "unknown", session: str = "",
                     same: Callable[[dict, dict], bool] | None = None
                     ) -> tuple[dict, dict | None]:
        """Record a first answer for ``item_id``, decided under the lock: ``(first, written)``.

        The ledger is re-read under the lock: if it holds no ``predict`` for the item, a
        ``predict`` with ``payload`` is appended (``first is written``); otherwise the earlier
        one stays first and ``payload`` becomes a ``revise`` event, or nothing is written when
        ``same(first_payload, payload)`` says it is the same answer. Two windows committing at
        the same moment therefore leave exactly one ``predict``.
        """
        predict = self._draft("predict", lab_id, item_id, payload, lab_version, session, None)
        found: list[dict] = []

        def decide() -> dict | None:
            first = first_predictions(self._known_events()).get(item_id)
            found[:] = [first] if first is not None else []
            if first is None:
                return predict
            if same is not None and same(first["payload"], payload):
                return None
            return {**predict, "kind": "revise"}

        written = self._write(decide)
        return (found[0] if found else written), written

    def _write(self, decide: Callable[[], dict | None]) -> dict | None:
        """Seal and append the draft ``decide()`` returns (None: nothing), under the lock."""
        if self.mode != "memory":
            try:
                with file_lock(self.lock_path):
                    self._sync_locked()
                    draft = decide()
                    return None if draft is None else self._append_locked(draft)
            except OSError as exc:
                self._to_memory(f"Writing to {self.target_path or self.directory} failed "
                                f"({exc}). Your records are kept in memory only: download them "
                                "before closing the lab.")
        draft = decide()
        return None if draft is None else self._seal_into(self._memory, draft)

    @staticmethod
    def _seal(chain: _Chain, draft: dict) -> dict:
        event = {**draft, "ts": draft.get("ts") or utc_now(), "seq": chain.last_seq + 1,
                 "prev_hash": chain.head_hash}
        event["hash"] = event_hash(event)
        return event

    def _seal_into(self, chain: _Chain, draft: dict) -> dict:
        event = self._seal(chain, draft)
        chain.events.append(event)
        chain.head_hash, chain.last_seq = event["hash"], event["seq"]
        chain.data += event_line(event)
        return event

    def _append_locked(self, draft: dict) -> dict:
        chain = self._target
        assert chain is not None and chain.path is not None
        event = self._seal(chain, draft)
        line = event_line(event)
        append_bytes(chain.path, line)
        chain.events.append(event)
        chain.head_hash, chain.last_seq = event["hash"], event["seq"]
        chain.offset += len(line)
        return event

    def _sync_locked(self) -> None:
        """Under the lock: read what others appended; leave a target that became unclean or
        full for the next continuation file."""
        for _ in range(1000):  # each round moves to the next recovery file; bounded anyway
            chain = self._target
            assert chain is not None and chain.path is not None
            try:
                size = chain.path.stat().st_size
            except FileNotFoundError:
                size = 0
            if size < chain.offset:  # replaced or truncated behind our back: re-read it whole
                fresh = self._load(chain.path)
                self._chains = [fresh if c is chain else c for c in self._chains]
                chain = self._target = fresh
            elif size > chain.offset:
                with open(chain.path, "rb") as f:
                    f.seek(chain.offset)
                    data = f.read(size - chain.offset)
                self._consume(chain, data, final=True)  # nobody writes while we hold the lock
            if self._takes_events(chain):
                return
            self._pick_target()
        raise OSError("too many unreadable recovery files")

    # -- export / import / copy ------------------------------------------------------------
    def export_files(self) -> list[tuple[str, bytes]]:
        """(file name, bytes) for each file to hand in.

        Files on disk are given byte for byte. In memory mode the events kept in memory follow
        the bytes of the file they continue as they were when writing stopped, so the download
        is always one unbroken chain (never glued to a half-written line, never forked by what
        another window wrote to that file since; that file is still on disk and is named in
        :attr:`warnings`).
        """
        out: list[tuple[str, bytes]] = []
        memory = self._memory
        for chain in self._chains:
            if chain.path is not None:
                try:
                    data = chain.path.read_bytes()
                except OSError:
                    data = b""
            else:
                data = chain.data
            if chain is memory.base and memory.events:
                if b"\n" in data[memory.base_size:]:
                    self._warn_forked(chain)
                data = data[:memory.base_size] + memory.data
            if data:
                out.append((chain.name, data))
        if memory.events and not any(c is memory.base for c in self._chains):
            out.append((self.path.name, memory.data))
        return out

    def _warn_forked(self, chain: _Chain) -> None:
        msg = (f"Another window added records to {chain.path} after this one switched to "
               "memory: hand in that file as well as your download.")
        if msg not in self.warnings:
            self.warnings.append(msg)

    def copy_to(self, directory: str | os.PathLike) -> list[Path]:
        """Write every file of this ledger (memory included) into ``directory``, which must
        hold no ledger file of this student: the main file first, then continuation files, so
        a ledger opened there restores the same locks. Returns the files written.

        Raises FileExistsError if the folder already holds one of this student's files, and
        OSError if it cannot be written; files already written are then removed again.
        """
        target = Path(directory).expanduser()
        if student_files(target, self.student_id):
            raise FileExistsError(f"{target} already holds a ledger of {self.student_id}")
        target.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        try:
            with file_lock(target / self.lock_path.name):
                for i, (_, data) in enumerate(self.export_files()):
                    name = ledger_filename(self.student_id) if i == 0 else \
                        recovery_name(self.student_id, i)
                    write_new_file(target / name, data)
                    written.append(target / name)
        except OSError:
            for path in written:  # all or nothing: a half copy would show other locks
                try:
                    path.unlink()
                except OSError:
                    pass
            raise
        return written

    def import_bytes(self, data: bytes, name: str = "uploaded.jsonl") -> ReadResult:
        """Adopt an uploaded ledger (browser-only runs): its events count for restoring locks.

        The bytes are kept as they are and exported again unchanged; when nothing was recorded
        in memory yet, new events continue its chain so the next download is one file.
        Events of another student are ignored (and reported as a problem).
        """
        if len(data) > ledger_events.MAX_READ_BYTES:
            return ReadResult(problems=[Problem(0, "too_large", "uploaded file is too large")])
        decoded = ledger_events.decode_ledger_bytes(bytes(data))
        if decoded.data is None:
            return ReadResult(problems=[Problem(0, "wrong_encoding",
                                                "UTF-16 that does not decode")])
        result = read_ledger(decoded.data)
        if decoded.encoding == "utf-16":
            result.problems.insert(0, Problem(0, "re_encoded", "an editor re-saved it as "
                                              "UTF-16; its records are read"))
        others = {e["student_id"] for e in result.events} - {self.student_id}
        if others:
            result.problems.append(Problem(0, "other_student",
                                           "contains records of another student id"))
        # downloads get renamed ("... (1).jsonl"): give it back the canonical name if free
        taken = {c.name for c in self._chains}
        if self.path.name not in taken:
            name = self.path.name
        elif not name.endswith(".jsonl"):
            name += ".jsonl"
        chain = _Chain(None, name,
                       events=result.events, problems=result.problems,
                       head_hash=result.head_hash, last_seq=result.last_seq, data=bytes(data))
        self._chains.append(chain)
        if self.mode == "memory" and not self._memory.events and chain.clean:
            self._memory.head_hash, self._memory.last_seq = chain.head_hash, chain.last_seq
            self._memory.name, self._memory.base = chain.name, chain
            self._memory.base_size = len(chain.data)
        return result
