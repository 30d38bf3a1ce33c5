"""The :class:`Ledger`: one student's ledger files in a folder, read, appended to and exported.

It picks the file new events go to (the main file, a recovery file when the main one is not
clean, or memory when nothing can be written), appends under the lock of
:mod:`labs.core.course.ledger_files`, and gives the bytes to download. The rules it keeps are
in :mod:`labs.core.course.ledger`'s docstring.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from labs.core.course.ledger_config import (
    FILE_PREFIX,
    default_ledger_dir,
    ledger_filename,
    validate_student_id,
)
from labs.core.course.ledger_events import (
    GENESIS_HASH,
    KINDS,
    MAX_ID_CHARS,
    MAX_LINE_BYTES,
    MAX_PAYLOAD_DEPTH,
    MAX_READ_BYTES,
    SCHEMA_VERSION,
    Problem,
    ReadResult,
    _finite_json,
    event_hash,
    event_line,
    read_ledger,
    read_ledger_file,
    utc_now,
)
from labs.core.course.ledger_files import _append_bytes, file_lock, in_browser

_RECOVERY_RE = re.compile(r"\.recovery-(\d+)\.jsonl$")


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

    @property
    def clean(self) -> bool:
        return not self.problems


class Ledger:
    """A student's ledger in ``directory``: read it, append events to it, export it.

    Modes: ``"file"`` (appending to the main file), ``"recovery"`` (the main file is not clean
    and is kept untouched; appending to a recovery file), ``"memory"`` (nothing can be written:
    events are kept in memory and offered for download). ``warnings`` holds what the student
    should be told, in plain sentences.
    """

    def __init__(self, student_id: str, directory: str | os.PathLike | None = None, *,
                 memory: bool | None = None):
        self.student_id = validate_student_id(student_id)
        self.directory = Path(directory).expanduser() if directory else default_ledger_dir()
        self.path = self.directory / ledger_filename(self.student_id)
        self.warnings: list[str] = []
        self.mode = "file"
        self._chains: list[_Chain] = []
        self._target: _Chain | None = None  # chain that receives new events
        self._memory = _Chain(None, "memory")
        force_memory = in_browser() if memory is None else memory
        self._open(force_memory)

    # -- opening -------------------------------------------------------------------------
    @property
    def lock_path(self) -> Path:
        return self.directory / f".{FILE_PREFIX}{self.student_id}.lock"

    def _recovery_path(self, n: int) -> Path:
        return self.directory / f"{FILE_PREFIX}{self.student_id}.recovery-{n}.jsonl"

    def _existing_files(self) -> list[Path]:
        """The main file then recovery files in order, those that exist."""
        found = []
        if self.path.exists():
            found.append(self.path)
        try:
            names = os.listdir(self.directory)
        except OSError:
            names = []
        stem = f"{FILE_PREFIX}{self.student_id}.recovery-"
        recoveries = []
        for name in names:
            m = _RECOVERY_RE.search(name)
            if name.startswith(stem) and m and name == f"{stem}{m.group(1)}.jsonl":
                recoveries.append((int(m.group(1)), self.directory / name))
        found.extend(p for _, p in sorted(recoveries))
        return found

    def _load(self, path: Path) -> _Chain:
        chain = _Chain(path, path.name)
        result = read_ledger_file(path)
        chain.events, chain.problems = result.events, result.problems
        chain.head_hash, chain.last_seq, chain.offset = (result.head_hash, result.last_seq,
                                                         result.size)
        return chain

    def _open(self, force_memory: bool) -> None:
        if force_memory:
            self._to_memory("This is a browser-only run: nothing is saved on this computer. "
                            "Download your ledger before closing the page; upload it next time.")
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            self._to_memory(f"The ledger folder {self.directory} cannot be created ({exc}). "
                            "Your records are kept in memory only: download them before "
                            "closing the lab.")
            return
        self._chains = [self._load(p) for p in self._existing_files()]
        self._pick_target()
        if not self._writable():
            self._to_memory(f"The ledger folder {self.directory} is not writable. Your records "
                            "are kept in memory only: download them before closing the lab.")

    def _pick_target(self) -> None:
        """Append to the main file if it is clean, else to the first clean recovery file."""
        main = next((c for c in self._chains if c.path == self.path), None)
        if main is None:
            main = _Chain(self.path, self.path.name)
            self._chains.insert(0, main)
        if main.clean:
            self._target, self.mode = main, "file"
            return
        self._warn_unclean(main)
        n = 1
        while True:
            path = self._recovery_path(n)
            chain = next((c for c in self._chains if c.path == path), None)
            if chain is None:  # another lab may have created it since we opened
                chain = self._load(path) if path.exists() else _Chain(path, path.name)
                self._chains.append(chain)
            if chain.clean:
                break
            self._warn_unclean(chain)
            n += 1
        self._target, self.mode = chain, "recovery"
        msg = (f"New records go to {chain.path}. Hand in every "
               f"{FILE_PREFIX}{self.student_id}*.jsonl file; the grader merges them.")
        if msg not in self.warnings:
            self.warnings.append(msg)

    def _warn_unclean(self, chain: _Chain) -> None:
        first = chain.problems[0]
        if first.code == "torn_tail":
            what = "its last record was cut off (the lab was probably interrupted while writing)"
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
            self._memory.name = base.name
        self._target = None

    # -- reading -------------------------------------------------------------------------
    def refresh(self) -> None:
        """Pick up events other processes appended since we last looked (no lock needed)."""
        chain = self._target
        if chain is None or chain.path is None:
            return
        try:
            with open(chain.path, "rb") as f:
                f.seek(chain.offset)
                data = f.read(MAX_READ_BYTES)
        except OSError:
            return
        self._consume(chain, data, final=False)

    def _consume(self, chain: _Chain, data: bytes, *, final: bool) -> None:
        result = read_ledger(data, start_hash=chain.head_hash, start_seq=chain.last_seq,
                             final=final)
        chain.events.extend(result.events)
        chain.problems.extend(result.problems)
        chain.head_hash, chain.last_seq = result.head_hash, result.last_seq
        chain.offset += result.size

    def events(self) -> list[dict]:
        """Every valid event of this student: files in order (main, recoveries), then memory."""
        self.refresh()
        out: list[dict] = []
        for chain in self._chains:
            out.extend(e for e in chain.events if e.get("student_id") == self.student_id)
        out.extend(self._memory.events)
        return out

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
    def append(self, kind: str, *, lab_id: str, item_id: str, payload: dict,
               lab_version: str = "unknown", session: str = "", ts: str | None = None) -> dict:
        """Seal and durably append one event; returns it (with seq and hash).

        Raises ValueError for a bad kind, id or payload. Never raises for storage problems:
        those switch the ledger to a recovery file or to memory and add a warning.
        """
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
        for name, value in (("lab_id", lab_id), ("item_id", item_id)):
            if not isinstance(value, str) or not value or len(value) > MAX_ID_CHARS:
                raise ValueError(f"{name} must be a non-empty string of at most "
                                 f"{MAX_ID_CHARS} characters, got {value!r}")
        if not isinstance(payload, dict) or not _finite_json(payload):
            raise ValueError("payload must be a dict of plain JSON values (no NaN/inf, "
                             f"at most {MAX_PAYLOAD_DEPTH} levels deep), got {payload!r}")
        draft = {
            "schema": SCHEMA_VERSION, "ts": ts or utc_now(), "student_id": self.student_id,
            "lab_id": lab_id, "lab_version": str(lab_version)[:MAX_ID_CHARS],
            "item_id": item_id, "kind": kind, "payload": payload,
            "session": str(session)[:MAX_ID_CHARS],
        }
        if len(event_line({**draft, "seq": 0, "prev_hash": GENESIS_HASH,
                           "hash": GENESIS_HASH})) > MAX_LINE_BYTES:
            raise ValueError(f"payload too large: an event must fit in {MAX_LINE_BYTES} bytes")
        if self.mode != "memory":
            try:
                return self._append_file(draft)
            except OSError as exc:
                self._to_memory(f"Writing to {self.target_path or self.directory} failed "
                                f"({exc}). Your records are kept in memory only: download them "
                                "before closing the lab.")
        return self._seal_into(self._memory, draft)

    @staticmethod
    def _seal(chain: _Chain, draft: dict) -> dict:
        event = {**draft, "seq": chain.last_seq + 1, "prev_hash": chain.head_hash}
        event["hash"] = event_hash(event)
        return event

    def _seal_into(self, chain: _Chain, draft: dict) -> dict:
        event = self._seal(chain, draft)
        line = event_line(event)
        chain.events.append(event)
        chain.head_hash, chain.last_seq = event["hash"], event["seq"]
        chain.data += line
        return event

    def _append_file(self, draft: dict) -> dict:
        with file_lock(self.lock_path):
            self._sync_locked()
            chain = self._target
            assert chain is not None and chain.path is not None
            event = self._seal(chain, draft)
            line = event_line(event)
            _append_bytes(chain.path, line)
            chain.events.append(event)
            chain.head_hash, chain.last_seq = event["hash"], event["seq"]
            chain.offset += len(line)
            return event

    def _sync_locked(self) -> None:
        """Under the lock: read what others appended; leave a target that became unclean."""
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
            if chain.clean:
                return
            self._pick_target()
        raise OSError("too many unreadable recovery files")

    # -- export / import (download and re-upload in memory mode) -------------------------
    def export_files(self) -> list[tuple[str, bytes]]:
        """(file name, bytes) for each file to hand in.

        Files on disk are given byte for byte; in memory mode the events kept in memory are
        appended to the file they continue (so the download is one unbroken chain).
        """
        out: list[tuple[str, bytes]] = []
        for chain in self._chains:
            if chain.path is not None:
                try:
                    data = chain.path.read_bytes()
                except OSError:
                    continue
            else:
                data = chain.data
            if data:
                out.append((chain.name, data))
        if self._memory.events:
            name = self._memory.name if self._memory.name != "memory" else self.path.name
            for i, (n, data) in enumerate(out):
                if n == name:
                    out[i] = (n, data + self._memory.data)
                    break
            else:
                out.append((name, self._memory.data))
        return out

    def import_bytes(self, data: bytes, name: str = "uploaded.jsonl") -> ReadResult:
        """Adopt an uploaded ledger (browser-only runs): its events count for restoring locks.

        The bytes are kept as they are and exported again unchanged; when nothing was recorded
        in memory yet, new events continue its chain so the next download is one file.
        Events of another student are ignored (and reported as a problem).
        """
        if len(data) > MAX_READ_BYTES:
            return ReadResult(problems=[Problem(0, "too_large", "uploaded file is too large")])
        result = read_ledger(bytes(data))
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
            self._memory.name = chain.name
        return result
