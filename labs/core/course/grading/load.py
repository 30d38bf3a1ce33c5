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

import hashlib
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
    RECEIPT_FILE,
    FileReport,
    blackboard_receipt,
    Limits,
    iter_sources,
    too_large,
)

__all__ = [
    "Batch", "EventRecord", "FileReport", "LEDGER_SUFFIXES", "Limits", "RECEIPT_FILE",
    "blackboard_receipt", "first_spellings", "iter_sources", "load_ledgers", "merge_events",
    "own_files", "parse_source", "share_summaries", "summarise_file", "too_large"
]

_RECOVERY_RE = re.compile(r"\.recovery-\d+\.jsonl$")
_CHUNK = 64 * 1024  # bytes parsed at a time (limits are checked between pieces)
_EARLIEST = datetime.min.replace(tzinfo=timezone.utc)


@dataclass(slots=True)  # millions of them in a large class: no __dict__ each
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
    #: the latest time in its file up to this line, and its file's rank: the merged order
    #: of a student's files is (running, rank, line)
    running: datetime = _EARLIEST
    rank: int = 0

    def to_tuple(self) -> tuple:
        """The event as read from its file (before attribution), compact for pickling."""
        return (self.lab_id, self.item_id, self.kind, self.seq, self.ts, self.time,
                self.lab_version, self.session, self.payload, self.hash, self.source,
                self.line, self.valid, self.recovery, self.written_id, self.base_flags,
                self.running, self.rank)

    @classmethod
    def from_tuple(cls, t: tuple) -> "EventRecord":
        (lab_id, item_id, kind, seq, ts, time, lab_version, session, payload, hash_, source,
         line, valid, recovery, written_id, base_flags, running, rank) = t
        return cls(written_id, lab_id, item_id, kind, seq, ts, time, lab_version, session,
                   payload, hash_, source, line, valid, recovery, list(base_flags), 0, 0,
                   written_id, base_flags, running, rank)


def summarise_file(report: FileReport, events: list[EventRecord]) -> None:
    """What the class-wide plan needs to know of a file without its events, per id its
    events carry (``report.by_written``): where its first event sits in the merged order
    (which spelling of an id wins), the labs it has events of, the items it predicted per lab
    and its newest time. A few hundred bytes a file: a class of any size is planned in
    memory."""
    by: dict[str, dict] = {}
    for e in events:
        w = by.get(e.written_id)
        if w is None:
            w = by[e.written_id] = {"first": (e.running, e.rank, e.line), "labs": set(),
                                    "predicted": {}, "newest": None, "events": 0}
        w["events"] += 1
        w["labs"].add(e.lab_id)
        if e.time is not None and (w["newest"] is None or e.time > w["newest"]) \
                and "future_timestamp" not in e.base_flags:
            w["newest"] = e.time
        if e.valid and e.kind == "predict":
            w["predicted"].setdefault(e.lab_id, set()).add(e.item_id)
    for w in by.values():  # frozen, so that files that say the same share one
        w["labs"] = frozenset(w["labs"])
        w["predicted"] = {lab: frozenset(items) for lab, items in w["predicted"].items()}
    report.by_written = by
    students = {norm_id(w): w for w in by}
    report.written_ids = sorted(students.values())
    report.student_ids = list(report.written_ids)
    if len(students) > 1 and "mixed_students" not in report.problems:
        report.problems.append("mixed_students")


def share_summaries(report: FileReport, pool: dict) -> None:
    """Make the report's sets of labs and items the ones ``pool`` already holds when equal
    (most files of a class say the same): what the plan keeps per file stays small."""
    for w in report.by_written.values():
        w["labs"] = pool.setdefault(w["labs"], w["labs"])
        w["predicted"] = {pool.setdefault(lab, lab): pool.setdefault(items, items)
                          for lab, items in w["predicted"].items()}


def own_files(report: FileReport, owners: dict[str, str]) -> None:
    """Give a file's events their owners (written id -> the student's id as spelt)."""
    report.owners = owners
    report.student_ids = sorted({owners.get(w, w) for w in report.by_written})


def merge_events(pieces: Iterable[tuple[FileReport, list[EventRecord]]],
                 keys: set[str] | None = None) -> tuple[list[EventRecord], dict[str, set[str]]]:
    """The events of the students ``keys`` (norm ids; None: everyone) from the files
    ``pieces``: each event attributed to its file's owner of the id it carries
    (``report.owners``), kept once per student (an event handed in twice counts once; the
    copy is counted in ``duplicates`` and flagged ``duplicates_merged`` only when the same
    file was handed in twice, not when a later upload of the same ledger extends an earlier
    one), merged by time with each file in its own chain order. Also every hash each student
    handed in (for receipts)."""
    out: list[EventRecord] = []
    hashes: dict[str, set[str]] = {}
    by_hash: dict[tuple[str, str], tuple[EventRecord, str]] = {}
    sort_keys: dict[int, tuple] = {}
    for report, events in pieces:
        owners = report.owners
        firsts: dict[tuple[str, str], tuple] = {}
        report.first_predicts = firsts  # (student, item) -> (hash, value) of its first
        for e in events:
            owner = owners.get(e.written_id) or e.written_id
            key = norm_id(owner)
            if keys is not None and key not in keys:
                continue
            if e.valid and e.kind == "predict" and (key, e.item_id) not in firsts \
                    and holds_value(e.payload):
                firsts[(key, e.item_id)] = (e.hash, e.payload.get("value"))
            e.student_id, e.flags, e.duplicates = owner, list(e.base_flags), 0
            hashes.setdefault(key, set()).add(e.hash)
            k = (key, e.hash if e.valid else f"invalid:{e.source}:{e.line}")
            seen = by_hash.get(k)
            if seen is not None:
                first, digest = seen
                first.duplicates += 1
                if digest and digest == report.digest and first.source != e.source \
                        and "duplicates_merged" not in first.flags:
                    first.flags.append("duplicates_merged")
                continue
            by_hash[k] = (e, report.digest)
            sort_keys[id(e)] = (key, e.running, e.rank, e.line)
            out.append(e)
    out.sort(key=lambda e: sort_keys[id(e)])
    odd: dict[str, bool] = {}
    for i, e in enumerate(out):
        e.order = i
        w = e.written_id
        if w not in odd:
            odd[w] = not _valid_student_id(w)
        if odd[w] and "odd_student_id" not in e.flags:
            e.flags.append("odd_student_id")
    return out, hashes


@dataclass
class Batch:
    """Everything loaded: unique events (duplicates merged, counted) and per-file reports."""

    events: list[EventRecord] = field(default_factory=list)
    files: list[FileReport] = field(default_factory=list)
    # per student (by norm_id): hashes of every line of every chain (for receipts)
    hashes: dict[str, set[str]] = field(default_factory=dict)
    #: (file, its events as read) of every file that had events: :meth:`attribute` builds
    #: ``events`` from them
    raw: list = field(default_factory=list, repr=False)

    def _pieces(self) -> list[tuple[FileReport, list[EventRecord]]]:
        """The files with their events; events added to ``events`` by hand (read from an
        events.csv) become pieces of their own, per source."""
        known = {id(e) for _, evs in self.raw for e in evs}
        loose = [e for e in self.events if id(e) not in known]
        if loose:
            reports = {f.source: f for f in self.files}
            by_source: dict[str, list[EventRecord]] = {}
            for e in loose:
                if not e.written_id:
                    e.written_id = e.student_id
                e.base_flags = tuple(e.flags)
                e.running = e.time or _EARLIEST
                by_source.setdefault(e.source, []).append(e)
            rank = len(self.raw)
            for src, evs in by_source.items():
                report = reports.get(src) or FileReport(src)
                for e in evs:
                    e.rank = rank
                summarise_file(report, evs)
                self.raw.append((report, evs))
                rank += 1
        return self.raw

    def attribute(self, owner: Callable[[FileReport, str], str] | None = None,
                  spelling: dict[str, str] | None = None) -> None:
        """(Re)build ``events`` from the files: each event belongs to ``owner(file, id it
        carries)`` (default: the id it carries), spelt as ``spelling`` says (norm id -> id;
        default: as the student's first event in the merged order spells it), kept once per
        owner (:func:`merge_events`). ``FileReport.student_ids`` become the owners."""
        owner = owner or (lambda report, written: written)
        pieces = self._pieces()
        owners = {id(r): {w: owner(r, w) or w for w in r.by_written} for r, _ in pieces}
        spelled = first_spellings([(r, owners[id(r)]) for r, _ in pieces])
        spelled.update(spelling or {})
        for report, _ in pieces:
            own_files(report, {w: spelled.get(norm_id(o), o)
                               for w, o in owners[id(report)].items()})
        self.events, self.hashes = merge_events(pieces)
        self.reindex()

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
            if f.owners:
                f.owners = {w: spelling.get(norm_id(o), o) for w, o in f.owners.items()}
        self.reindex()


def first_spellings(files: Iterable[tuple[FileReport, dict[str, str]]]) -> dict[str, str]:
    """One spelling per student (norm id -> id): the owner id as given for the student's
    first event in the merged order (surrounding spaces stripped)."""
    best: dict[str, tuple] = {}
    for report, owners in files:
        for written, summary in report.by_written.items():
            owner = owners.get(written, written)
            key = norm_id(owner)
            where = summary["first"]
            if key not in best or where < best[key][0]:
                best[key] = (where, owner.strip() or owner)
    return {k: v for k, (_, v) in best.items()}


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
        report.problems.append(too_large(len(data), limits.max_file_bytes))
        return []
    if not data.strip():
        report.problems.append("file_empty")
        return []
    if blackboard_receipt(source, data[:4096]):
        report.skipped = RECEIPT_FILE
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
                 line_flags: dict[int, list[str]], rank: int = 0) -> list[EventRecord]:
    """EventRecords of one file in chain order, with per-line flags."""
    out, last_time = [], None
    running = _EARLIEST
    future = now + timedelta(days=1)
    recovery = report.recovery
    parse_ts = _ledger.parse_ts
    for ev, ln, valid in records:
        t = parse_ts(ev["ts"])
        flags = list(line_flags[ln]) if ln in line_flags else []
        if recovery:
            flags.append("recovery_merged")
        if t is not None:
            if last_time is not None and t < last_time:
                flags.append("ts_backwards")  # flagged where it happens; the order stays
            if t > future:
                flags.append("future_timestamp")
            if last_time is None or t > last_time:
                last_time = t
            if t > running:
                running = t
        sid = ev["student_id"]
        out.append(EventRecord(  # (positional: the fields' order)
            sid, ev["lab_id"], ev["item_id"], ev["kind"], ev["seq"], ev["ts"], t,
            ev["lab_version"], ev["session"], ev["payload"], ev["hash"], source, ln, valid,
            recovery, flags, 0, 0, sid, tuple(flags), running, rank))
    return out


def parse_source(source: str, data, limits: Limits, now: datetime,
                 rank: int = 0) -> tuple[FileReport, list[EventRecord]]:
    """One candidate file read into its report and its events (in chain order), summarised
    for the class-wide plan (:func:`summarise_file`). ``data``: the file's bytes, or an object
    whose ``read()`` gives them (a file read where it is parsed). Never raises."""
    report = FileReport(source, recovery=bool(_RECOVERY_RE.search(source.lower())))
    try:
        if not isinstance(data, (bytes, bytearray)):
            data = data.read()
        report.digest = hashlib.sha256(data).hexdigest()[:32]
        records = _read_file(source, data, limits, report)
        line_flags: dict[int, list[str]] = {}
        for p in report.problems:
            code, _, line = p.partition("@")
            if line.isdigit():
                line_flags.setdefault(int(line), []).append(code)
        events = _file_events(source, records, report, now, line_flags, rank)
    except Exception as exc:  # noqa: BLE001 - one file must never stop the class
        report.problems.append(f"file_unreadable (the grader could not read it: "
                               f"{type(exc).__name__})")
        report.events = report.edited = 0
        return report, []
    summarise_file(report, events)
    return report, events


def load_ledgers(inputs: Iterable[str | os.PathLike], *, limits: Limits | None = None,
                 now: datetime | None = None) -> Batch:
    """Read ledger files / folders / zips into a :class:`Batch`. Never raises for bad input.

    Every valid event is kept once per student (an event handed in twice, e.g. the same file
    uploaded two times or a download that extends the saved file, counts once; see
    :func:`merge_events`). Edited lines are kept with ``valid=False``.
    Events are ordered per student: each file in its own (chain) order, files merged by time.
    Events belong to the id they carry until :meth:`Batch.attribute` says otherwise (the
    grader does, with the roster: see :func:`~labs.core.course.grading.score.grade`).
    For a class too large to hold in memory, ``labs-grade`` reads the files in parallel and
    grades student by student (:mod:`~labs.core.course.grading.run`).
    """
    limits = limits or Limits()
    now = now or datetime.now(timezone.utc)
    batch = Batch()
    for rank, (source, data) in enumerate(iter_sources(inputs, limits, batch.files)):
        report, events = parse_source(source, data, limits, now, rank)
        batch.files.append(report)
        if events:
            batch.raw.append((report, events))
    batch.attribute()
    return batch


def _valid_student_id(sid: str) -> bool:
    try:
        _ledger.validate_student_id(sid)
        return sid == sid.strip()
    except ValueError:
        return False
