"""``labs-grade``: grade design ledgers into a gradebook CSV and a long events CSV.

Usage::

    labs-grade SUBMISSIONS... [-c course.toml] [-o OUTDIR] [--receipts receipts.csv]
    labs-grade --lab-version labs/lab_01_memory_wall.py     # the version string to release

SUBMISSIONS are ledger files, folders of them (searched recursively) or zip files as an LMS
download gives them (nested zips too). OUTDIR (default ``grades``) receives:

- ``gradebook.csv``: one row per student id (Canvas/Gradescope-style columns: the id column,
  then per lab ``<title>`` (points), ``<title> - Max Points``, ``<title> - Submission Time``,
  ``<title> - Lateness (H:M:S)``, ``<title> - Status``, ``<title> - Correct``, then
  ``Total Points``, ``Max Points``, ``Flags``);
- ``events.csv``: every event, one row each, with its source file, line and flags;
- ``files.csv``: every input file, what was found in it and what was wrong with it.

What is graded (per lab, per prediction item, configurable in the course TOML): *commitment*
(a ``predict`` before the item was unlocked, observed or explained), *reasoning* (the prediction
has a confidence and a reason), *reconciliation* (an ``observe`` and an ``explain`` of at least
``min_explain_chars`` after the prediction). Correctness is reported (``Correct``) and earns
points only if the rubric gives it some (default 0).

Checks, reported as flags and never silently dropped: hash chain (``hash_mismatch``: a line
edited; ``chain_break``: lines removed, inserted or reordered; ``seq_order``), ``torn_tail``,
``malformed`` lines, ``impossible_order`` (e.g. explain before predict), ``ts_backwards``,
``future_timestamp``, ``unknown_lab_version``, ``duplicates_merged`` (the same event handed in
twice counts once), ``recovery_merged`` (events from a recovery file), ``revised`` (a prediction
changed after locking: the first one is graded), ``receipt_missing``, ``file_unreadable``,
``file_too_large``, ``skipped_member``, ``mixed_students``, ``odd_student_id``, ``unknown_lab``.
Lines whose own hash does not match (edited) are listed but never earn points.

Hostile input: nothing is executed or extracted to disk; sizes, zip member counts, nesting and
line lengths are bounded; every string written to CSV that a spreadsheet could read as a
formula (``=``, ``+``, ``-``, ``@``, tab, CR) is prefixed with ``'``. The CSVs are plain data:
any page that shows their text (the instructor dashboard) must HTML-escape it.

The hash chain proves little on its own: edits after the fact are detectable by a grader who
kept a later hash (``--receipts``: a CSV of student id, hash prefix shown in the lab's "Ledger
details"); a student who rewrites the whole chain is not stopped. Nothing here is a security
boundary.

Functions for other tools (the instructor dashboard): :func:`load_ledgers` (inputs -> a
:class:`Batch` of :class:`EventRecord` with flags, and :class:`FileReport`), :func:`load_config`
(TOML -> :class:`CourseConfig`), :func:`grade` (-> :class:`Gradebook` with :class:`LabGrade`
per student and lab), :func:`gradebook_rows`, :func:`event_rows`, :func:`file_rows` (CSV-ready
dicts, already neutralised), :func:`write_csv`, :func:`csv_safe`.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import re
import sys
import zipfile
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from labs.core.course import ledger as _ledger

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

LEDGER_SUFFIXES = (".jsonl", ".ndjson", ".json", ".txt", ".log")
_LAB_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
_RECOVERY_RE = re.compile(r"\.recovery-\d+\.jsonl$")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
MAX_CELL_CHARS = 2000
_FILE_LEVEL = ("malformed", "torn_tail", "mixed_students")


# --------------------------------------------------------------------------------------------
# Loading


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


# --------------------------------------------------------------------------------------------
# Course configuration


@dataclass
class Rubric:
    """Points per prediction item; correctness earns nothing unless ``correct`` > 0."""

    commit: float = 1.0  # predicted before the item was unlocked / observed / explained
    reason: float = 0.5  # the prediction has a confidence 1-5 and a one-line reason
    explain: float = 1.0  # observed and explained (>= min_explain_chars) after predicting
    correct: float = 0.0  # prediction within `tolerance` of the instrument (or the right choice)
    min_explain_chars: int = 15
    tolerance: float = 1.5  # numeric: correct if off by at most this factor

    @property
    def per_item(self) -> float:
        return self.commit + self.reason + self.explain + self.correct


@dataclass
class LabConfig:
    lab_id: str
    title: str
    deadline: datetime | None = None
    items: list[str] = field(default_factory=list)  # empty: inferred from the submissions
    versions: set[str] = field(default_factory=set)  # empty: not checked
    answers: dict[str, Any] = field(default_factory=dict)  # item -> right value (optional)
    rubric: Rubric = field(default_factory=Rubric)


@dataclass
class CourseConfig:
    name: str = ""
    id_column: str = "SIS User ID"
    late_policy: str = "report"  # "report": all events count; "deadline": only those before it
    late_penalty_per_day: float = 0.0  # fraction of the lab's points per started day late
    labs: dict[str, LabConfig] = field(default_factory=dict)
    students: list[str] = field(default_factory=list)  # roster: listed even with no ledger
    configured: bool = False  # False: labs are inferred from the submissions


EXAMPLE_CONFIG = """\
[course]
name = "Roofline Labs, spring term"
id_column = "SIS User ID"          # Canvas; Gradescope uses "SID"
late_policy = "report"             # or "deadline": events after the deadline earn nothing
late_penalty_per_day = 0.0         # fraction of the lab's points per started day late
# students = ["ada", "bob"]        # optional roster: listed as Missing when nothing came in

[labs.lab01]
title = "Lab 1: The memory wall"
deadline = 2025-03-07T23:59:00-05:00
file = "labs/lab_01_memory_wall.py"   # released version: its hash is accepted
# versions = ["sha256:0123456789abcdef"]
# items = ["lab01.crossover_n", "lab01.regime"]   # default: every item seen in submissions
# answers = { "lab01.regime" = "memory" }         # default: the lab's recorded result events

[labs.lab01.rubric]
commit = 1.0
reason = 0.5
explain = 1.0
correct = 0.0
min_explain_chars = 15
tolerance = 1.5
"""


class ConfigError(ValueError):
    """A problem in the course TOML, with the key that caused it."""


def _deadline(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(f"{where}: deadline {value!r} is not an ISO date-time") from None
    if isinstance(value, date) and not isinstance(value, datetime):
        raise ConfigError(f"{where}: deadline needs a time and a UTC offset, e.g. "
                          f"{value.isoformat()}T23:59:00-05:00")
    if not isinstance(value, datetime):
        raise ConfigError(f"{where}: deadline must be a date-time, got {value!r}")
    if value.tzinfo is None:
        raise ConfigError(f"{where}: deadline {value.isoformat()} has no UTC offset; write "
                          f"e.g. {value.isoformat()}-05:00 or {value.isoformat()}Z")
    return value.astimezone(timezone.utc)


def _number(table: dict, key: str, default: float, where: str, *, lo: float = 0.0) -> float:
    v = table.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < lo:
        raise ConfigError(f"{where}.{key} must be a number >= {lo}, got {v!r}")
    return float(v)


def load_config(path: str | os.PathLike | None) -> CourseConfig:
    """Read the course TOML (see :data:`EXAMPLE_CONFIG`); None gives an empty config.

    Raises :class:`ConfigError` naming the offending key.
    """
    if path is None:
        return CourseConfig()
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the course config {path}: {exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    course = data.get("course", {})
    if not isinstance(course, dict):
        raise ConfigError("[course] must be a table")
    cfg = CourseConfig(
        name=str(course.get("name", "")), id_column=str(course.get("id_column", "SIS User ID")),
        late_policy=str(course.get("late_policy", "report")),
        late_penalty_per_day=_number(course, "late_penalty_per_day", 0.0, "course"),
        configured=True)
    if cfg.late_policy not in ("report", "deadline"):
        raise ConfigError(f"course.late_policy must be 'report' or 'deadline', "
                          f"got {cfg.late_policy!r}")
    students = course.get("students", [])
    if not isinstance(students, list) or not all(isinstance(s, str) for s in students):
        raise ConfigError("course.students must be a list of student ids")
    cfg.students = students
    labs = data.get("labs", {})
    if not isinstance(labs, dict):
        raise ConfigError("[labs] must be a table of [labs.<lab_id>] tables")
    for lab_id, table in labs.items():
        where = f"labs.{lab_id}"
        if not _LAB_ID_RE.match(lab_id) or not isinstance(table, dict):
            raise ConfigError(f"{where}: lab ids are letters, digits, _ and -; got {lab_id!r}")
        lab = LabConfig(lab_id, str(table.get("title", lab_id)),
                        _deadline(table.get("deadline"), where))
        items = table.get("items", [])
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise ConfigError(f"{where}.items must be a list of item ids")
        lab.items = items
        versions = table.get("versions", [])
        if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
            raise ConfigError(f"{where}.versions must be a list of strings")
        lab.versions = set(versions)
        if "file" in table:
            f = Path(str(table["file"]))
            f = f if f.is_absolute() else path.parent / f
            v = _ledger.lab_version(f)
            if v == "unknown":
                raise ConfigError(f"{where}.file: cannot read {f}")
            lab.versions.add(v)
        answers = table.get("answers", {})
        if not isinstance(answers, dict):
            raise ConfigError(f"{where}.answers must be a table of item = value")
        lab.answers = dict(answers)
        r = table.get("rubric", {})
        if not isinstance(r, dict):
            raise ConfigError(f"{where}.rubric must be a table")
        w = f"{where}.rubric"
        lab.rubric = Rubric(
            commit=_number(r, "commit", 1.0, w), reason=_number(r, "reason", 0.5, w),
            explain=_number(r, "explain", 1.0, w), correct=_number(r, "correct", 0.0, w),
            min_explain_chars=int(_number(r, "min_explain_chars", 15, w)),
            tolerance=_number(r, "tolerance", 1.5, w, lo=1.0))
        cfg.labs[lab_id] = lab
    return cfg


# --------------------------------------------------------------------------------------------
# Grading


@dataclass
class ItemGrade:
    item_id: str
    committed: bool = False
    reasoned: bool = False
    explained: bool = False
    correct: bool | None = None  # None: unknown (no answer and no recorded result)
    points: float = 0.0


@dataclass
class LabGrade:
    """One student's result for one lab."""

    student_id: str
    lab_id: str
    points: float = 0.0
    max_points: float = 0.0
    submitted: datetime | None = None  # time of the newest event of the lab
    lateness: timedelta = timedelta(0)
    status: str = "Missing"  # Missing | On time | Late | Submitted (no deadline)
    items: list[ItemGrade] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # "code (detail)"

    @property
    def correct_text(self) -> str:
        known = [i.correct for i in self.items if i.correct is not None]
        return f"{sum(known)}/{len(known)}" if known else ""


@dataclass
class Gradebook:
    config: CourseConfig
    labs: list[LabConfig]
    students: list[str]
    grades: dict[tuple[str, str], LabGrade]
    student_flags: dict[str, list[str]]


def _labs_for(batch: Batch, config: CourseConfig) -> list[LabConfig]:
    if config.configured and config.labs:
        labs = list(config.labs.values())
    else:
        seen = sorted({e.lab_id for e in batch.events if _LAB_ID_RE.match(e.lab_id)})
        labs = [config.labs.get(lab_id) or LabConfig(lab_id, lab_id) for lab_id in seen]
    out = []
    for lab in labs:
        if not lab.items:  # infer: every item anyone predicted in this lab
            items = sorted({e.item_id for e in batch.events if e.lab_id == lab.lab_id
                            and e.kind == "predict" and e.valid})
            lab = LabConfig(lab.lab_id, lab.title, lab.deadline, items, lab.versions,
                            lab.answers, lab.rubric)
        out.append(lab)
    return out


_LINE_FLAGS = ("hash_mismatch", "chain_break", "seq_order", "torn_tail", "malformed",
               "ts_backwards", "future_timestamp")


def _short_name(source: str) -> str:
    return Path(source.split("!")[-1]).name


def _summarise(where: dict[tuple[str, str], list[int]]) -> list[str]:
    """``code (file: line 1, 2, 6)`` per code and file; codes without lines stay bare."""
    out = []
    for (code, name), lines in where.items():
        if code in _LINE_FLAGS and lines:
            shown = ", ".join(str(n) for n in sorted(set(lines))[:10])
            more = " ..." if len(set(lines)) > 10 else ""
            text = f"{code} ({name}: line{'s' if len(set(lines)) > 1 else ''} {shown}{more})"
        else:
            text = code
        if text not in out:
            out.append(text)
    return out


def _text(payload: dict, key: str = "text") -> str:
    v = payload.get(key)
    return v if isinstance(v, str) else ""


def _is_correct(first: EventRecord, later: list[EventRecord], lab: LabConfig) -> bool | None:
    value = first.payload.get("value")
    choice = first.payload.get("answer_type") == "choice"
    if first.item_id in lab.answers:
        right = lab.answers[first.item_id]
        if choice or isinstance(right, str) or isinstance(value, (str, bool)):
            return value == right
        p, a = _finite(value), _finite(right)
        if p is None or a is None:
            return None
        r = _ratio(p, a)
        return r is not None and r <= lab.rubric.tolerance
    for e in later:
        if e.kind != "result":
            continue
        if choice:
            if isinstance(e.payload.get("correct"), bool):
                return e.payload["correct"]
            if "actual" in e.payload:
                return e.payload["actual"] == value
            continue
        p, a = _finite(value), _finite(e.payload.get("actual"))
        if p is not None and a is not None:
            r = _ratio(p, a)
            return r is not None and r <= lab.rubric.tolerance
    return None


def _finite(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    v = float(v)
    return v if math.isfinite(v) else None


def _ratio(p: float, a: float) -> float | None:
    if p == 0 or a == 0 or (p > 0) != (a > 0):
        return None
    return max(p / a, a / p)


def _order_problems(events: list[EventRecord]) -> list[str]:
    """Impossible orders within one item: unlock/observe/explain/revise before its predict,
    observe/explain before its unlock."""
    out = []
    has_predict = any(e.kind == "predict" for e in events)
    has_unlock = any(e.kind == "unlock" for e in events)
    seen_predict = seen_unlock = False
    for e in events:
        if e.kind == "predict":
            seen_predict = True
        elif e.kind == "unlock":
            if not seen_predict:
                out.append(f"unlock before predict ({e.item_id})")
            seen_unlock = True
        elif e.kind in ("observe", "explain", "revise") and has_predict and not seen_predict:
            out.append(f"{e.kind} before predict ({e.item_id})")
        elif e.kind in ("observe", "explain") and has_unlock and not seen_unlock:
            out.append(f"{e.kind} before unlock ({e.item_id})")
    return sorted(set(out))


def grade_lab(student_id: str, events: list[EventRecord], lab: LabConfig,
              config: CourseConfig) -> LabGrade:
    """Grade one student's events of one lab (events in merged order, valid and invalid)."""
    g = LabGrade(student_id, lab.lab_id, max_points=lab.rubric.per_item * len(lab.items))
    where: dict[tuple[str, str], list[int]] = {}
    for e in events:
        for f in e.flags:
            if f != "odd_student_id":  # a student-level flag
                lines = where.setdefault((f, _short_name(e.source)), [])
                if f in _LINE_FLAGS:
                    lines.append(e.line)
    flags = _summarise(where)
    if lab.versions:
        odd = sorted({e.lab_version for e in events if e.lab_version not in lab.versions})
        flags += [f"unknown_lab_version ({v})" for v in odd]
    valid = [e for e in events if e.valid]
    if not events:
        g.flags = flags
        return g
    times = [e.time for e in events if e.time is not None]
    g.submitted = max(times) if times else None
    if lab.deadline is not None and g.submitted is not None:
        g.lateness = max(timedelta(0), g.submitted - lab.deadline)
        g.status = "Late" if g.lateness > timedelta(0) else "On time"
    else:
        g.status = "Submitted"
    counted = valid
    if config.late_policy == "deadline" and lab.deadline is not None:
        counted = [e for e in valid if e.time is not None and e.time <= lab.deadline]
    by_item: dict[str, list[EventRecord]] = {}
    for e in counted:
        by_item.setdefault(e.item_id, []).append(e)
    for item_events in by_item.values():
        for problem in _order_problems(item_events):
            flags.append(f"impossible_order ({problem})")
    r = lab.rubric
    for item in lab.items:
        evs = by_item.get(item, [])
        ig = ItemGrade(item)
        first_i = next((i for i, e in enumerate(evs) if e.kind == "predict"), None)
        if first_i is not None:
            first = evs[first_i]
            before = evs[:first_i]
            ig.committed = not any(e.kind in ("unlock", "observe", "explain", "result")
                                   for e in before)
            conf = first.payload.get("confidence")
            ig.reasoned = (isinstance(conf, int) and not isinstance(conf, bool)
                           and 1 <= conf <= 5 and bool(_text(first.payload, "reason").strip()))
            after = evs[first_i + 1:]
            observed = any(e.kind == "observe" and _text(e.payload).strip() for e in after)
            ig.explained = observed and any(
                e.kind == "explain" and len(_text(e.payload).strip()) >= r.min_explain_chars
                for e in after)
            ig.correct = _is_correct(first, after, lab)
            if any(e.kind == "revise" for e in after):
                flags.append(f"revised ({item})")
        ig.points = (r.commit * ig.committed + r.reason * ig.reasoned
                     + r.explain * ig.explained + r.correct * bool(ig.correct))
        g.items.append(ig)
    points = sum(i.points for i in g.items)
    if config.late_penalty_per_day and g.lateness > timedelta(0):
        days = math.ceil(g.lateness / timedelta(days=1))
        points *= max(0.0, 1.0 - config.late_penalty_per_day * days)
    g.points = round(points, 4)
    g.flags = flags
    return g


def read_receipts(path: str | os.PathLike) -> dict[str, list[str]]:
    """A CSV of (student id, hash or hash prefix >= 12 hex), header optional."""
    out: dict[str, list[str]] = {}
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.reader(f):
            if len(row) < 2:
                continue
            sid, h = row[0].strip(), row[1].strip().lower()
            if re.fullmatch(r"[0-9a-f]{12,64}", h):
                out.setdefault(sid, []).append(h)
    return out


def grade(batch: Batch, config: CourseConfig | None = None, *,
          receipts: dict[str, list[str]] | None = None) -> Gradebook:
    """Grade every student in ``batch`` (plus the roster) on every lab of ``config``.

    Without a configured lab list, the labs seen in the submissions are graded with the default
    rubric and no deadline. Events of labs not in the config are flagged ``unknown_lab``.
    """
    config = config or CourseConfig()
    labs = _labs_for(batch, config)
    lab_ids = {lab.lab_id for lab in labs}
    students = sorted(set(batch.students()) | set(config.students))
    grades: dict[tuple[str, str], LabGrade] = {}
    student_flags: dict[str, list[str]] = {}
    for sid in students:
        mine = batch.for_student(sid)
        sflags: list[str] = []
        other_labs = sorted({e.lab_id for e in mine if e.lab_id not in lab_ids})
        sflags += [f"unknown_lab ({lab_id})" for lab_id in other_labs]
        if any("odd_student_id" in e.flags for e in mine):
            sflags.append("odd_student_id")
        for h in (receipts or {}).get(sid, []):
            if not any(x.startswith(h) for x in batch.hashes.get(sid, ())):
                sflags.append(f"receipt_missing ({h[:16]})")
        where: dict[tuple[str, str], list[int]] = {}
        for f in batch.files:  # problems no event carries: malformed lines, a torn tail
            if sid in f.student_ids:
                for p in f.problems:
                    code, _, line = p.partition("@")
                    if code in _FILE_LEVEL:
                        lines = where.setdefault((code, _short_name(f.source)), [])
                        if line.isdigit():
                            lines.append(int(line))
        sflags += _summarise(where)
        student_flags[sid] = sflags
        for lab in labs:
            grades[(sid, lab.lab_id)] = grade_lab(
                sid, [e for e in mine if e.lab_id == lab.lab_id], lab, config)
    return Gradebook(config, labs, students, grades, student_flags)


# --------------------------------------------------------------------------------------------
# CSV output


def csv_safe(value: Any) -> Any:
    """A cell a spreadsheet will not run: formula-looking text gets a leading ``'``.

    Numbers stay numbers. Control characters are dropped, text is cut at MAX_CELL_CHARS.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (int, float)):
        return value if math.isfinite(value) else str(value)
    text = _CONTROL_RE.sub("", str(value))[:MAX_CELL_CHARS]
    if text.startswith(_FORMULA_START) or text.lstrip(" ").startswith(_FORMULA_START[:4]):
        text = "'" + text
    return text


def _fmt_time(t: datetime | None) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ") if t else ""


def _fmt_lateness(d: timedelta) -> str:
    s = int(d.total_seconds())
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def gradebook_rows(book: Gradebook) -> list[dict]:
    """Wide gradebook rows (one per student), neutralised for CSV."""
    rows = []
    for sid in book.students:
        row: dict[str, Any] = {book.config.id_column: sid}
        total = max_total = 0.0
        flags = list(book.student_flags.get(sid, []))
        for lab in book.labs:
            g = book.grades[(sid, lab.lab_id)]
            t = lab.title
            row[t] = round(g.points, 2)
            row[f"{t} - Max Points"] = round(g.max_points, 2)
            row[f"{t} - Submission Time"] = _fmt_time(g.submitted)
            row[f"{t} - Lateness (H:M:S)"] = _fmt_lateness(g.lateness)
            row[f"{t} - Status"] = g.status
            row[f"{t} - Correct"] = g.correct_text
            total += g.points
            max_total += g.max_points
            flags += [f"{lab.lab_id}: {f}" for f in g.flags]
        row["Total Points"] = round(total, 2)
        row["Max Points"] = round(max_total, 2)
        row["Flags"] = "; ".join(flags)
        rows.append({csv_safe(k): csv_safe(v) for k, v in row.items()})
    return rows


EVENT_COLUMNS = ("student_id", "lab_id", "item_id", "kind", "seq", "timestamp", "value",
                 "units", "confidence", "label", "text", "payload", "lab_version", "session",
                 "valid", "duplicates", "flags", "source", "line", "hash")


def event_rows(batch: Batch) -> list[dict]:
    """Long events rows (one per unique event, merged order), neutralised for CSV."""
    rows = []
    for e in batch.events:
        p = e.payload if isinstance(e.payload, dict) else {}
        text = _text(p, "reason") if e.kind in ("predict", "revise") else _text(p)
        row = {
            "student_id": e.student_id, "lab_id": e.lab_id, "item_id": e.item_id,
            "kind": e.kind, "seq": e.seq, "timestamp": e.ts,
            "value": _scalar(p.get("value", p.get("actual"))), "units": _scalar(p.get("units")),
            "confidence": _scalar(p.get("confidence")), "label": _scalar(p.get("label")),
            "text": text, "payload": json.dumps(p, sort_keys=True)[:MAX_CELL_CHARS],
            "lab_version": e.lab_version, "session": e.session, "valid": e.valid,
            "duplicates": e.duplicates, "flags": ";".join(e.flags), "source": e.source,
            "line": e.line, "hash": e.hash,
        }
        rows.append({k: csv_safe(v) for k, v in row.items()})
    return rows


def _scalar(v: Any) -> Any:
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return json.dumps(v)[:200]


FILE_COLUMNS = ("source", "student_ids", "events", "recovery", "head_hash", "problems",
                "skipped")


def file_rows(batch: Batch) -> list[dict]:
    rows = []
    for f in batch.files:
        row = {"source": f.source, "student_ids": " ".join(f.student_ids), "events": f.events,
               "recovery": f.recovery, "head_hash": f.head_hash,
               "problems": "; ".join(f.problems[:50]) + (
                   f"; ... {len(f.problems) - 50} more" if len(f.problems) > 50 else ""),
               "skipped": f.skipped}
        rows.append({k: csv_safe(v) for k, v in row.items()})
    return rows


def write_csv(rows: Sequence[dict], path: str | os.PathLike,
              columns: Sequence[str] | None = None) -> Path:
    """Write rows as UTF-8 CSV (with BOM, so spreadsheet programs detect the encoding)."""
    path = Path(path)
    cols = list(columns) if columns else (list(rows[0].keys()) if rows else [])
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8-sig") as f:
        writer = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


# --------------------------------------------------------------------------------------------
# Command line


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="labs-grade",
        description="Grade Roofline Labs design ledgers into gradebook.csv, events.csv and "
                    "files.csv. Inputs: ledger files, folders, or zips as your LMS gives them.",
        epilog="Course config example:\n\n" + EXAMPLE_CONFIG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", help="ledger files, folders or zip files")
    p.add_argument("-c", "--config", help="course TOML (deadlines, rubric per lab)")
    p.add_argument("-o", "--out", default="grades", help="output folder (default: grades)")
    p.add_argument("--receipts", help="CSV of student id, hash (receipts collected earlier)")
    p.add_argument("--max-file-mb", type=float, default=20.0,
                   help="skip ledger files larger than this (default 20)")
    p.add_argument("--lab-version", nargs="+", metavar="LAB_FILE",
                   help="print the version string of released lab files and exit")
    p.add_argument("--example-config", action="store_true",
                   help="print an example course config and exit")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``labs-grade``. Exit 0 on success (flags are data, not errors), 2 on a
    usage or config error."""
    args = _parser().parse_args(argv)
    if args.example_config:
        print(EXAMPLE_CONFIG, end="")
        return 0
    if args.lab_version:
        for f in args.lab_version:
            print(f"{_ledger.lab_version(f)}  {f}")
        return 0
    if not args.inputs:
        _parser().print_usage(sys.stderr)
        print("labs-grade: give at least one ledger file, folder or zip", file=sys.stderr)
        return 2
    missing = [i for i in args.inputs if not os.path.exists(i)]
    if missing:
        print(f"labs-grade: not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        config = load_config(args.config)
        receipts = read_receipts(args.receipts) if args.receipts else None
    except (ConfigError, OSError, UnicodeDecodeError, csv.Error) as exc:
        print(f"labs-grade: {exc}", file=sys.stderr)
        return 2
    limits = Limits(max_file_bytes=int(args.max_file_mb * 1024 * 1024))
    batch = load_ledgers(args.inputs, limits=limits)
    book = grade(batch, config, receipts=receipts)
    out = Path(args.out)
    gb = gradebook_rows(book)
    write_csv(gb, out / "gradebook.csv")
    write_csv(event_rows(batch), out / "events.csv", EVENT_COLUMNS)
    write_csv(file_rows(batch), out / "files.csv", FILE_COLUMNS)
    flagged = sum(1 for r in gb if r.get("Flags"))
    bad_files = sum(1 for f in batch.files if f.problems)
    print(f"labs-grade: {len(batch.files)} files, {len(book.students)} students, "
          f"{len(batch.events)} events; {flagged} students flagged, {bad_files} files with "
          f"problems. Wrote {out / 'gradebook.csv'}, {out / 'events.csv'}, {out / 'files.csv'}.")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
