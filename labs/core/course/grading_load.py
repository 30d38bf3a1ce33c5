"""Reading submissions for ``labs-grade``: files, folders and zips into a :class:`Batch`.

Finds every candidate ledger in what an LMS download holds (files, folders searched
recursively, zips nested up to a limit), reads each with the ledger's own parser, and keeps
every event once with the flags it earned (hash chain, order, timestamps, duplicates, recovery
files) and a :class:`FileReport` per input. Nothing is executed or extracted to disk; sizes,
member counts and nesting are bounded by :class:`Limits`. Part of
:mod:`labs.core.course.grading` (import it through that name).
"""

from __future__ import annotations

import io
import os
import re
import zipfile
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Iterable, Iterator

from labs.core.course import ledger as _ledger

LEDGER_SUFFIXES = (".jsonl", ".ndjson", ".json", ".txt", ".log")
_RECOVERY_RE = re.compile(r"\.recovery-\d+\.jsonl$")


@dataclass
class Limits:
    """Bounds that keep a hostile submission from exhausting the grader."""

    max_file_bytes: int = 20 * 1024 * 1024
    max_zip_members: int = 10_000
    max_zip_total_bytes: int = 512 * 1024 * 1024
    max_zip_depth: int = 3
    max_files: int = 100_000


@dataclass
class EventRecord:
    """One event as found in a submission, with what the grader noticed about it.

    ``valid`` is False for a line that is well-formed but whose hash does not match its content
    (edited): it is listed, never graded. ``flags`` are codes (see the module doc).
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


@dataclass
class FileReport:
    """One input file: what it held and what was wrong with it (problems: ``code@line`` text)."""

    source: str
    student_ids: list[str] = field(default_factory=list)
    events: int = 0
    problems: list[str] = field(default_factory=list)
    skipped: str = ""
    head_hash: str = ""
    recovery: bool = False


@dataclass
class Batch:
    """Everything loaded: unique events (duplicates merged, counted) and per-file reports."""

    events: list[EventRecord] = field(default_factory=list)
    files: list[FileReport] = field(default_factory=list)
    # per student: hashes of every line of every chain (for receipts)
    hashes: dict[str, set[str]] = field(default_factory=dict)

    def students(self) -> list[str]:
        return sorted({e.student_id for e in self.events})

    def for_student(self, student_id: str, lab_id: str | None = None) -> list[EventRecord]:
        # grade() asks for every student in turn: index once instead of scanning all events
        # per student (500 students x 20 000 events). Rebuilt when events were added;
        # reindex() after reordering them.
        key = (id(self.events), len(self.events))
        if self.__dict__.get("_index_key") != key:
            index: dict[str, list[EventRecord]] = {}
            for e in self.events:
                index.setdefault(e.student_id, []).append(e)
            self.__dict__["_index"], self.__dict__["_index_key"] = index, key
        return [e for e in self.__dict__["_index"].get(student_id, ())
                if lab_id is None or e.lab_id == lab_id]

    def reindex(self) -> None:
        """Forget the per-student index (call after reordering ``events`` in place)."""
        self.__dict__.pop("_index_key", None)


def _iter_sources(inputs: Iterable[str | os.PathLike], limits: Limits,
                  files: list[FileReport]) -> Iterator[tuple[str, bytes]]:
    """(display name, bytes) of every candidate ledger; problems go into ``files``."""
    count = 0
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            for root, dirs, names in os.walk(path, followlinks=False):
                dirs.sort()
                for name in sorted(names):
                    count += 1
                    if count > limits.max_files:
                        files.append(FileReport(str(path), skipped="too many files"))
                        return
                    yield from _from_path(Path(root) / name, limits, files)
        else:
            yield from _from_path(path, limits, files)


def _from_path(path: Path, limits: Limits, files: list[FileReport]):
    name = str(path)
    if path.is_symlink() or not path.is_file():
        files.append(FileReport(name, skipped="not a regular file"))
        return
    try:
        size = path.stat().st_size
        if name.lower().endswith(".zip") and not zipfile.is_zipfile(path):
            files.append(FileReport(name, problems=["file_unreadable (not a valid zip)"]))
            return
        if zipfile.is_zipfile(path):
            with open(path, "rb") as f:
                yield from _from_zip(name, f, limits, files, depth=1)
            return
        if not name.lower().endswith(LEDGER_SUFFIXES):
            files.append(FileReport(name, skipped="not a ledger file (by its name)"))
            return
        if size > limits.max_file_bytes:
            files.append(FileReport(name, problems=[f"file_too_large ({size} bytes)"]))
            return
        with open(path, "rb") as f:
            yield name, f.read(limits.max_file_bytes + 1)
    except (OSError, zipfile.BadZipFile) as exc:
        files.append(FileReport(name, problems=[f"file_unreadable ({type(exc).__name__})"]))


def _from_zip(name: str, fileobj, limits: Limits, files: list[FileReport], depth: int):
    if depth > limits.max_zip_depth:
        files.append(FileReport(name, skipped="zip nested too deeply"))
        return
    try:
        archive = zipfile.ZipFile(fileobj)
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
        files.append(FileReport(name, problems=[f"file_unreadable (zip: {type(exc).__name__})"]))
        return
    if len(members) > limits.max_zip_members:
        files.append(FileReport(name, problems=[f"file_too_large ({len(members)} zip members)"]))
        return
    total = 0
    for info in members:
        member = f"{name}!{info.filename}"
        if info.is_dir():
            continue
        lower = info.filename.lower()
        is_zip = lower.endswith(".zip")
        if not (is_zip or lower.endswith(LEDGER_SUFFIXES)):
            files.append(FileReport(member, skipped="not a ledger file (by its name)"))
            continue
        limit = limits.max_zip_total_bytes if is_zip else limits.max_file_bytes
        if info.file_size > limit:
            files.append(FileReport(member, problems=[f"file_too_large ({info.file_size} bytes)"]))
            continue
        try:
            with archive.open(info) as f:
                data = f.read(limit + 1)  # the header may lie: read at most limit + 1
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError,
                EOFError) as exc:
            files.append(FileReport(member, problems=[f"file_unreadable ({type(exc).__name__})"]))
            continue
        if len(data) > limit:
            files.append(FileReport(member, problems=["file_too_large (more than declared)"]))
            continue
        total += len(data)
        if total > limits.max_zip_total_bytes:
            files.append(FileReport(member, skipped="zip larger than the total limit"))
            return
        if is_zip:
            yield from _from_zip(member, io.BytesIO(data), limits, files, depth + 1)
        else:
            yield member, data


def load_ledgers(inputs: Iterable[str | os.PathLike], *, limits: Limits | None = None,
                 now: datetime | None = None) -> Batch:
    """Read ledger files / folders / zips into a :class:`Batch`. Never raises for bad input.

    Every valid event is kept once (an event handed in twice, e.g. the same file uploaded two
    times or a download that extends the saved file, counts once and is flagged
    ``duplicates_merged`` with ``duplicates`` > 0). Edited lines are kept with ``valid=False``.
    Events are ordered per student: each file in its own order, files merged by timestamp.
    """
    limits = limits or Limits()
    now = now or datetime.now(timezone.utc)
    batch = Batch()
    by_hash: dict[str, EventRecord] = {}
    rank = 0
    for source, data in _iter_sources(inputs, limits, batch.files):
        report = FileReport(source, recovery=bool(_RECOVERY_RE.search(source.lower())))
        batch.files.append(report)
        if len(data) > limits.max_file_bytes:
            report.problems.append("file_too_large")
            continue
        result = _ledger.read_ledger(data)
        report.head_hash = result.head_hash
        line_flags: dict[int, list[str]] = {}
        for p in result.problems:
            report.problems.append(f"{p.code}@{p.line}" if p.line else p.code)
            line_flags.setdefault(p.line, []).append(p.code)
        records = [(ev, ln, True) for ev, ln in zip(result.events, result.lines)]
        records += [(obj, ln, False) for ln, obj, _ in result.rejected
                    if isinstance(obj, dict)]
        report.events = len(result.events)
        students = sorted({ev["student_id"] for ev, _, _ in records})
        report.student_ids = students
        for sid in students:  # every hash of this file, for receipts (also edited lines)
            batch.hashes.setdefault(sid, set()).update(
                ev["hash"] for ev, _, _ in records if ev["student_id"] == sid)
        if len(students) > 1:
            report.problems.append("mixed_students")
        last_time = None
        for ev, ln, valid in sorted(records, key=lambda r: r[1]):
            t = _ledger.parse_ts(ev["ts"])
            flags = list(line_flags.get(ln, []))
            if report.recovery:
                flags.append("recovery_merged")
            if t is not None and last_time is not None and t < last_time:
                flags.append("ts_backwards")
            if t is not None and t > now + timedelta(days=1):
                flags.append("future_timestamp")
            last_time = t or last_time
            rank += 1
            rec = EventRecord(
                student_id=ev["student_id"], lab_id=ev["lab_id"], item_id=ev["item_id"],
                kind=ev["kind"], seq=ev["seq"], ts=ev["ts"], time=t,
                lab_version=ev["lab_version"], session=ev["session"], payload=ev["payload"],
                hash=ev["hash"], source=source, line=ln, valid=valid,
                recovery=report.recovery, flags=flags, order=rank)
            key = ev["hash"] if valid else f"invalid:{source}:{ln}"
            if key in by_hash:
                first = by_hash[key]
                first.duplicates += 1
                if "duplicates_merged" not in first.flags:
                    first.flags.append("duplicates_merged")
                continue
            by_hash[key] = rec
            batch.events.append(rec)
    # merged order per student: by time, ties (and untimed) in the order they were read
    batch.events.sort(key=lambda e: (e.student_id, e.time or datetime.max.replace(
        tzinfo=timezone.utc), e.order))
    batch.reindex()
    for i, e in enumerate(batch.events):
        e.order = i
        if not _valid_student_id(e.student_id) and "odd_student_id" not in e.flags:
            e.flags.append("odd_student_id")
    return batch


def _valid_student_id(sid: str) -> bool:
    try:
        _ledger.validate_student_id(sid)
        return sid == sid.strip()
    except ValueError:
        return False

