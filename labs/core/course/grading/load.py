"""Reading submissions for ``labs-grade``: ledger bytes into a :class:`Batch` of events.

Each candidate file (found by :mod:`~labs.core.course.grading.sources`) is decoded (UTF-8;
UTF-8 with a byte-order mark and UTF-16 are read and noted), parsed with the ledger's own
reader in bounded pieces (:class:`~labs.core.course.grading.sources.Limits`: a file past its
line or problem limit is reported ``file_too_damaged`` and the rest is not read), and every
event is kept once with the flags it earned (hash chain, timestamps, duplicates, recovery
files). Within a file the chain order is the truth: a timestamp going backwards is flagged,
never reordered; files of one student are merged by time, each keeping its own order.
Student ids are compared by :func:`~labs.core.course.grading.ids.norm_id`. A file that
makes the reader fail in a way nobody foresaw is reported, never fatal. Part of
:mod:`labs.core.course.grading` (import it through that name).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Callable, Iterable

from labs.core.course import ledger as _ledger
from labs.core.course.answers import holds_value
from labs.core.course.ledger import events as _ledger_events
from labs.core.course.grading.ids import norm_id
from labs.core.course.grading.sources import (  # noqa: F401  (re-exported for grading)
    LEDGER_SUFFIXES,
    FileReport,
    Limits,
    iter_sources,
)

_RECOVERY_RE = re.compile(r"\.recovery-\d+\.jsonl$")
_CHUNK = 64 * 1024  # bytes parsed at a time (limits are checked between pieces)
_EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


@dataclass
class EventRecord:
    """One event as found in a submission, with what the grader noticed about it.

    ``valid`` is False for a line that is well-formed but whose hash does not match its content
    (edited): it is listed, never graded. ``flags`` are codes (see the module doc).
    ``student_id`` is the student's id as the batch spells it (all of one student's events
    spell it the same; the roster's spelling once graded with one); ``written_id`` is what
    this event's line says.
    """

    student_id: str
    lab_id: str
    item_id: str
    kind: str
    seq: int
    ts: str
    time: datetime | None
    lab_version: str
    session: str
    payload: dict
    hash: str
    source: str
    line: int
    valid: bool = True
    recovery: bool = False
    flags: list[str] = field(default_factory=list)
    duplicates: int = 0  # how many more times the same event appeared
    order: int = 0  # position in the merged order (set by load_ledgers)
    written_id: str = ""
    #: the flags the file itself earned (``flags`` starts from these at each attribution)
    base_flags: tuple = ()


@dataclass
class Batch:
    """Everything loaded: unique events (duplicates merged, counted) and per-file reports."""

    events: list[EventRecord] = field(default_factory=list)
    files: list[FileReport] = field(default_factory=list)
    # per student (by norm_id): hashes of every line of every chain (for receipts)
    hashes: dict[str, set[str]] = field(default_factory=dict)
    #: (file, rank, its events as read) of every file that had events: :meth:`attribute`
    #: builds ``events`` from them
    raw: list = field(default_factory=list, repr=False)

    def attribute(self, owner: Callable[[FileReport, str], str] | None = None) -> None:
        """(Re)build ``events`` from the files: each event belongs to ``owner(file, id it
        carries)`` (default: the id it carries), is kept once per owner (duplicates merged,
        counted and flagged), and a student's events are merged by time, each file in its
        own (chain) order. ``FileReport.student_ids`` become the owners."""
        owner = owner or (lambda report, written: written)
        if not self.raw and self.events:  # a batch built from events (events.csv): keep them
            reports = {f.source: f for f in self.files}
            by_source: dict[str, list[EventRecord]] = {}
            for e in self.events:
                if not e.written_id:
                    e.written_id = e.student_id
                e.base_flags = tuple(e.flags)
                by_source.setdefault(e.source, []).append(e)
            self.raw = [(reports.get(src) or FileReport(src), rank, evs)
                        for rank, (src, evs) in enumerate(by_source.items())]
        self.events, self.hashes = [], {}
        by_hash: dict[tuple[str, str], EventRecord] = {}
        sort_keys: dict[int, tuple] = {}
        for report, rank, events in self.raw:
            owners = set()
            running = _EARLIEST
            report.first_predicts = {}
            owner_of: dict[str, str] = {}
            for e in events:  # attributed in place: flags start again from the file's own
                e.flags, e.duplicates = list(e.base_flags), 0
                written = e.written_id
                if written not in owner_of:
                    owner_of[written] = owner(report, written) or written
                e.student_id = owner_of[written]
                key_student = norm_id(e.student_id)
                owners.add(e.student_id)
                if e.valid and e.kind == "predict" and holds_value(e.payload):
                    report.first_predicts.setdefault((key_student, e.item_id),
                                                     (e.hash, e.payload.get("value")))
                self.hashes.setdefault(key_student, set()).add(e.hash)
                running = max(running, e.time or running)
                key = (key_student, e.hash if e.valid else f"invalid:{e.source}:{e.line}")
                if key in by_hash:
                    first = by_hash[key]
                    first.duplicates += 1
                    if "duplicates_merged" not in first.flags:
                        first.flags.append("duplicates_merged")
                    continue
                by_hash[key] = e
                sort_keys[id(e)] = (key_student, running, rank, e.line)
                self.events.append(e)
            report.student_ids = sorted(owners)
        # merged order per student: by time, each file keeping its own (chain) order
        self.events.sort(key=lambda e: sort_keys[id(e)])
        _spell_ids(self)
        for i, e in enumerate(self.events):
            e.order = i
            if not _valid_student_id(e.written_id) and "odd_student_id" not in e.flags:
                e.flags.append("odd_student_id")

    def students(self) -> list[str]:
        """The students who have events, as the batch spells them."""
        return sorted({e.student_id for e in self.events})

    def for_student(self, student_id: str, lab_id: str | None = None) -> list[EventRecord]:
        """A student's events in merged order (ids compared by ``norm_id``)."""
        # grade() asks for every student in turn: index once instead of scanning all events
        # per student (500 students x 20 000 events). Rebuilt when events were added;
        # reindex() after reordering them.
        key = (id(self.events), len(self.events))
        if self.__dict__.get("_index_key") != key:
            index: dict[str, list[EventRecord]] = {}
            for e in self.events:
                index.setdefault(norm_id(e.student_id), []).append(e)
            self.__dict__["_index"], self.__dict__["_index_key"] = index, key
        return [e for e in self.__dict__["_index"].get(norm_id(student_id), ())
                if lab_id is None or e.lab_id == lab_id]

    def reindex(self) -> None:
        """Forget the per-student index (call after reordering ``events`` in place)."""
        self.__dict__.pop("_index_key", None)

    def rename(self, spelling: dict[str, str]) -> None:
        """Spell students as ``spelling`` says (norm key -> id), e.g. as the roster does."""
        for e in self.events:
            e.student_id = spelling.get(norm_id(e.student_id), e.student_id)
        for f in self.files:
            f.student_ids = sorted({spelling.get(norm_id(s), s) for s in f.student_ids})
        self.reindex()


def _decode(data: bytes, report: FileReport) -> bytes | None:
    """UTF-8 bytes of the file (a BOM dropped, UTF-16 converted: the lab's own reading,
    :func:`~labs.core.course.ledger.events.decode_ledger_bytes`), or None if it cannot be."""
    decoded = _ledger_events.decode_ledger_bytes(data)
    if decoded.data is None:
        report.problems.append("wrong_encoding (UTF-16 that does not decode: re-save as "
                               "UTF-8)")
        return None
    if decoded.note:
        report.notes.append(decoded.note)
    return decoded.data


def _read_bounded(data: bytes, limits: Limits, report: FileReport) -> _ledger.ReadResult:
    """``read_ledger`` in pieces, stopping past ``limits.max_lines`` or ``max_problems``."""
    out = _ledger.ReadResult()
    pos, line_no, n = 0, 1, len(data)
    while pos < n:
        end = data.find(b"\n", min(pos + _CHUNK, n))
        end = n if end < 0 else end + 1
        chunk, stop = data[pos:end], ""
        room = limits.max_lines - (line_no - 1)
        if chunk.count(b"\n") + (not chunk.endswith(b"\n")) > room:
            cut = 0
            for _ in range(max(room, 0)):
                cut = chunk.index(b"\n", cut) + 1
            chunk, stop = chunk[:cut], f"more than {limits.max_lines} lines"
        r = _ledger.read_ledger(chunk, start_hash=out.head_hash, start_seq=out.last_seq,
                                first_line=line_no, final=end >= n and not stop)
        out.events += r.events
        out.lines += r.lines
        out.problems += r.problems
        out.rejected += [x for x in r.rejected if isinstance(x[1], dict)]
        out.head_hash, out.last_seq = r.head_hash, r.last_seq
        line_no += chunk.count(b"\n")
        pos = end
        if len(out.problems) > limits.max_problems:
            last = out.problems[limits.max_problems - 1].line
            del out.problems[limits.max_problems:]
            stop = f"more than {limits.max_problems} problems by line {last}"
        if stop:
            report.problems.append(f"file_too_damaged ({stop}; the rest was not read)")
            break
    return out


def _read_file(source: str, data: bytes, limits: Limits, report: FileReport):
    """The (event dict, line, valid) records of one file, in chain (line) order."""
    if len(data) > limits.max_file_bytes:
        report.problems.append(f"file_too_large ({len(data)} bytes)")
        return []
    if not data.strip():
        report.problems.append("file_empty")
        return []
    decoded = _decode(data, report)
    if decoded is None:
        return []
    result = _read_bounded(decoded, limits, report)  # may add file_too_damaged
    report.head_hash = result.head_hash
    stopped = bool(report.problems)
    report.problems[:0] = [f"{p.code}@{p.line}" if p.line else p.code for p in result.problems]
    records = [(ev, ln, True) for ev, ln in zip(result.events, result.lines)]
    records += [(obj, ln, False) for ln, obj, _ in result.rejected]
    report.events, report.edited = len(result.events), len(result.rejected)
    if not records:
        lines = decoded.count(b"\n") + (not decoded.endswith(b"\n"))
        if report.notes and "UTF-16" in report.notes[-1]:
            report.problems.append("wrong_encoding (UTF-16 and not a ledger: re-save as "
                                   "UTF-8, or hand in the file the lab's Download gives)")
        elif not stopped:
            first = f"; line {result.problems[0].line}: {result.problems[0].detail}" \
                if result.problems else ""
            report.problems.append(f"not_a_ledger (no valid event in {lines} line"
                                   f"{'s' if lines != 1 else ''}{first})")
    return sorted(records, key=lambda r: r[1])


def _file_events(source: str, records, report: FileReport, now: datetime,
                 line_flags: dict[int, list[str]]) -> list[EventRecord]:
    """EventRecords of one file in chain order, with per-line flags."""
    out, last_time = [], None
    for ev, ln, valid in records:
        t = _ledger.parse_ts(ev["ts"])
        flags = list(line_flags.get(ln, []))
        if report.recovery:
            flags.append("recovery_merged")
        if t is not None and last_time is not None and t < last_time:
            flags.append("ts_backwards")  # flagged where it happens; the order stays
        if t is not None and t > now + timedelta(days=1):
            flags.append("future_timestamp")
        last_time = max(t, last_time) if t is not None and last_time is not None else \
            (t or last_time)
        out.append(EventRecord(
            student_id=ev["student_id"], lab_id=ev["lab_id"], item_id=ev["item_id"],
            kind=ev["kind"], seq=ev["seq"], ts=ev["ts"], time=t,
            lab_version=ev["lab_version"], session=ev["session"], payload=ev["payload"],
            hash=ev["hash"], source=source, line=ln, valid=valid, recovery=report.recovery,
            flags=flags, written_id=ev["student_id"], base_flags=tuple(flags)))
    return out


def load_ledgers(inputs: Iterable[str | os.PathLike], *, limits: Limits | None = None,
                 now: datetime | None = None) -> Batch:
    """Read ledger files / folders / zips into a :class:`Batch`. Never raises for bad input.

    Every valid event is kept once per student (an event handed in twice, e.g. the same file
    uploaded two times or a download that extends the saved file, counts once and is flagged
    ``duplicates_merged`` with ``duplicates`` > 0). Edited lines are kept with ``valid=False``.
    Events are ordered per student: each file in its own (chain) order, files merged by time.
    Events belong to the id they carry until :meth:`Batch.attribute` says otherwise (the
    grader does, with the roster: see :func:`~labs.core.course.grading.score.grade`).
    """
    limits = limits or Limits()
    now = now or datetime.now(timezone.utc)
    batch = Batch()
    for rank, (source, data) in enumerate(iter_sources(inputs, limits, batch.files)):
        report = FileReport(source, recovery=bool(_RECOVERY_RE.search(source.lower())))
        batch.files.append(report)
        try:
            records = _read_file(source, data, limits, report)
            line_flags: dict[int, list[str]] = {}
            for p in report.problems:
                code, _, line = p.partition("@")
                if line.isdigit():
                    line_flags.setdefault(int(line), []).append(code)
            events = _file_events(source, records, report, now, line_flags)
        except Exception as exc:  # noqa: BLE001 - one file must never stop the class
            report.problems.append(f"file_unreadable (the grader could not read it: "
                                   f"{type(exc).__name__})")
            report.events = report.edited = 0
            continue
        students = {norm_id(e.student_id): e.student_id for e in events}
        report.student_ids = sorted(students.values())
        report.written_ids = list(report.student_ids)
        if len(students) > 1:
            report.problems.append("mixed_students")
        batch.raw.append((report, rank, events))
    batch.attribute()
    return batch


def _spell_ids(batch: Batch) -> None:
    """One spelling per student: the first event's, surrounding spaces stripped."""
    spelling: dict[str, str] = {}
    for e in batch.events:
        spelling.setdefault(norm_id(e.student_id), e.student_id.strip() or e.student_id)
    batch.rename(spelling)


def _valid_student_id(sid: str) -> bool:
    try:
        _ledger.validate_student_id(sid)
        return sid == sid.strip()
    except ValueError:
        return False
