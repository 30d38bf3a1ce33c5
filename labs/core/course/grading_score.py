"""Scoring for ``labs-grade``: a :class:`~labs.core.course.grading_load.Batch` and a course
config into a :class:`Gradebook`.

Per student and lab, per prediction item: commitment (a ``predict`` before the item was
unlocked, observed or explained), reasoning (confidence and reason), reconciliation (observed
and explained afterwards) and correctness (reported; points only if the rubric gives some);
plus the flags a reader of the gradebook needs (impossible orders, revisions, receipts, file
problems). Part of :mod:`labs.core.course.grading` (import it through that name).
"""

from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from labs.core.course.grading_config import _LAB_ID_RE, CourseConfig, LabConfig
from labs.core.course.grading_load import Batch, EventRecord

_FILE_LEVEL = ("malformed", "torn_tail", "mixed_students")


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

