"""The CSVs ``labs-grade`` writes: gradebook, events and files rows, neutralised for spreadsheets.

Every cell goes through :func:`csv_safe` (formula-looking text gets a leading ``'``, control
characters are dropped, cells are cut); :func:`write_csv` writes UTF-8 with a BOM. Part of
:mod:`labs.core.course.grading` (import it through that name).
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Sequence

from labs.core.course.grading.checks import severity
from labs.core.course.grading.load import Batch
from labs.core.course.grading.score import Gradebook, answer_text

__all__ = [
    "EVENT_COLUMNS", "FILE_COLUMNS", "ITEM_COLUMNS", "MAX_CELL_CHARS", "MAX_EXACT_INT", "csv_safe",
    "event_rows", "event_table", "file_rows", "format_lateness", "gradebook_rows", "item_rows",
    "item_table", "write_csv", "write_table"
]

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r", "\n", "\uff1d", "\uff0b", "\uff0d", "\uff20")
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE_RE = re.compile("[\ud800-\udfff]")
_ODD_RE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")
_FORMULA_FIRST = frozenset(_FORMULA_START)  # each is one character
_FORMULA_AFTER_SPACES = frozenset(_FORMULA_START[:4])
MAX_CELL_CHARS = 2000
_ORDER = {"wrong": 0, "check": 1, "info": 2}
_LAB_PREFIX = re.compile(r"^[A-Za-z0-9_-]{1,40}: ")  # "lab01: revised (...)"
#: Integers beyond this are written as text: a spreadsheet keeps 15 significant digits.
MAX_EXACT_INT = 10**15


def csv_safe(value: Any) -> Any:
    """A cell a spreadsheet will not run: formula-looking text gets a leading ``'``.

    Numbers stay numbers (integers past 15 digits become text, as a sheet would round them).
    Control characters are dropped, lone surrogates become U+FFFD, text is cut at
    MAX_CELL_CHARS. Never raises.
    """
    if value.__class__ is str:  # most cells: checked without copying
        text = value if len(value) <= MAX_CELL_CHARS else value[:MAX_CELL_CHARS]
        if _ODD_RE.search(text):
            text = _SURROGATE_RE.sub("\ufffd", _CONTROL_RE.sub("", text))
        first = text[:1]
        if first in _FORMULA_FIRST or (first == " " and text.lstrip(" ")[:1]
                                       in _FORMULA_AFTER_SPACES):
            return "'" + text
        return text
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        if abs(value) < MAX_EXACT_INT:
            return value
        value = str(value) if value.bit_length() < 10_000 else f"an integer of about " \
            f"{int(value.bit_length() * 0.30103)} digits"
    elif isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    text = str(value)[:MAX_CELL_CHARS]
    if _ODD_RE.search(text):  # rare: only then pay for the substitutions
        text = _CONTROL_RE.sub("", text)
        text = _SURROGATE_RE.sub("\ufffd", text)  # a lone surrogate cannot be UTF-8
    if text[:1] in _FORMULA_FIRST or text.lstrip(" ")[:1] in _FORMULA_AFTER_SPACES:
        text = "'" + text
    return text


def _fmt_time(t: datetime | None) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ") if t else ""


def format_lateness(d: timedelta) -> str:
    s = int(d.total_seconds())
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}"


def gradebook_rows(book: Gradebook, *, neutralise: bool = True) -> list[dict]:
    """Wide gradebook rows (one per student), neutralised for CSV (``neutralise=False``: the
    values as they are, for a page that shows them as text)."""
    rows = []
    roster = book.config.roster
    for sid in book.students:
        row: dict[str, Any] = {(roster.id_column if roster else "") or book.config.id_column:
                               sid}
        entry = roster.get(sid) if roster else None
        if roster and roster.has_names:
            row["Name"] = entry.name if entry else ""
        if roster and roster.has_emails:
            row["Email"] = entry.email if entry else ""
        total = max_total = 0.0
        flags = list(book.student_flags.get(sid, []))
        for lab in book.labs:
            g = book.grades[(sid, lab.lab_id)]
            t = lab.title
            row[t] = round(g.points, 2)
            row[f"{t} - Max Points"] = round(g.max_points, 2)
            row[f"{t} - Submission Time"] = _fmt_time(g.submitted)
            row[f"{t} - Lateness (H:M:S)"] = format_lateness(g.lateness)
            row[f"{t} - Status"] = g.status
            row[f"{t} - Correct"] = g.correct_text
            total += g.points
            max_total += g.max_points
            flags += [f"{lab.lab_id}: {f}" for f in g.flags]
        row["Total Points"] = round(total, 2)
        row["Max Points"] = round(max_total, 2)
        info = [f for f in flags if severity(_LAB_PREFIX.sub("", f)) == "info"]
        flags = [f for f in flags if f not in info]  # the most serious first
        flags.sort(key=lambda f: _ORDER[severity(_LAB_PREFIX.sub("", f))])
        row["Flags"] = "; ".join(flags)
        row["Notes"] = "; ".join(info + book.notes.get(sid, []))
        rows.append({csv_safe(k): csv_safe(v) for k, v in row.items()} if neutralise else row)
    return rows


ITEM_COLUMNS = ("student_id", "lab_id", "item_id", "points", "max_points", "committed",
                "reasoned", "explained", "correct", "tolerance", "tolerance_from",
                "graded_against", "predicted_at", "explained_at", "late_parts", "penalty",
                "override", "comment")


def item_table(book: Gradebook) -> list[list]:
    """``items.csv``'s rows as lists in :data:`ITEM_COLUMNS` order (see :func:`item_rows`)."""
    rows = []
    lab_cells = {}
    for lab in book.labs:  # the cells every student shares, neutralised once
        lab_cells[lab.lab_id] = (csv_safe(lab.lab_id), round(lab.rubric.per_item, 4),
                                 {i: csv_safe(i) for i in lab.items})
    for sid in book.students:
        who = csv_safe(sid)
        for lab in book.labs:
            g = book.grades[(sid, lab.lab_id)]
            lab_id, per, item_ids = lab_cells[lab.lab_id]
            for ig in g.items:
                late = "; ".join(f"{what} {format_lateness(lateness)} late x {factor:g}"
                                 for what, _, lateness, factor in ig.late_parts)
                rows.append([
                    who, lab_id, item_ids.get(ig.item_id) or csv_safe(ig.item_id),
                    csv_safe(round(ig.points, 4)), per, _BOOL[ig.committed],
                    _BOOL[ig.reasoned], _BOOL[ig.explained],
                    "" if ig.correct is None else _BOOL[bool(ig.correct)],
                    csv_safe(ig.tolerance) if ig.tolerance is not None else "",
                    csv_safe(ig.tolerance_from or "the item's own"), ig.graded_from,
                    _fmt_time(ig.predicted_at), _fmt_time(ig.explained_at), late,
                    csv_safe(ig.penalty) if ig.late_parts else "",
                    "" if ig.override is None else csv_safe(ig.override),
                    csv_safe(ig.comment)])
    return rows


_BOOL = {True: "true", False: "false"}


def item_rows(book: Gradebook) -> list[dict]:
    """One row per student and prediction item (``items.csv``): the points and the parts that
    earned them, the tolerance the item was judged within and where it came from (the item's
    own, or the course file's key that set it), what it was judged against, when, and what a
    late penalty or an override changed. Neutralised for CSV."""
    return [dict(zip(ITEM_COLUMNS, row)) for row in item_table(book)]


EVENT_COLUMNS = ("student_id", "lab_id", "item_id", "kind", "seq", "timestamp", "value",
                 "units", "confidence", "label", "text", "payload", "lab_version", "session",
                 "valid", "duplicates", "flags", "source", "line", "hash", "written_id")


_PAYLOAD = json.JSONEncoder(sort_keys=True)  # what json.dumps(p, sort_keys=True) builds


def event_table(events: list) -> list[list]:
    """Long events rows as lists in :data:`EVENT_COLUMNS` order (one per unique event, merged
    order), neutralised for CSV; what :func:`event_rows` gives, for a writer of millions."""
    memo: dict[Any, Any] = {}  # cells that repeat (ids, files, kinds): neutralised once each

    def same(key: Any, make) -> Any:
        v = memo.get(key)
        if v is None:
            if len(memo) > 100_000:
                memo.clear()
            v = memo[key] = make(key)
        return v

    def each(key: tuple) -> tuple:
        return tuple(csv_safe(x) for x in key)

    rows = []
    for e in events:
        p = e.payload if isinstance(e.payload, dict) else {}
        text = answer_text(p, "reason") if e.kind in ("predict", "revise") else answer_text(p)
        seq, line, dup, conf = e.seq, e.line, e.duplicates, p.get("confidence")
        student, written, version, session, source = same(
            (e.student_id, e.written_id, e.lab_version, e.session, e.source), each)
        lab_id, item_id, kind = same((e.lab_id, e.item_id, e.kind), each)
        units = p.get("units")
        rows.append([
            student, lab_id, item_id, kind,
            seq if type(seq) is int and abs(seq) < MAX_EXACT_INT else csv_safe(seq),
            csv_safe(e.ts), csv_safe(_scalar(p.get("value", p.get("actual")))),
            same(("units", units), lambda k: csv_safe(_scalar(k[1])))
            if units.__class__ is str else csv_safe(_scalar(units)),
            conf if type(conf) is int and abs(conf) < MAX_EXACT_INT else csv_safe(_scalar(conf)),
            csv_safe(_scalar(p.get("label"))), csv_safe(text),
            # JSON of a dict: starts with "{", escapes every control character: safe as it is
            _PAYLOAD.encode(p)[:MAX_CELL_CHARS], version, session,
            "true" if e.valid is True else csv_safe(e.valid),
            dup if type(dup) is int and abs(dup) < MAX_EXACT_INT else csv_safe(dup),
            same(("flags",) + tuple(e.flags), lambda k: csv_safe(";".join(k[1:])))
            if e.flags else "", source,
            line if type(line) is int and abs(line) < MAX_EXACT_INT else csv_safe(line),
            csv_safe(e.hash), written])
    return rows


def event_rows(batch: Batch) -> list[dict]:
    """Long events rows (one per unique event, merged order), neutralised for CSV."""
    return [dict(zip(EVENT_COLUMNS, row)) for row in event_table(batch.events)]


def _scalar(v: Any) -> Any:
    if v is None or isinstance(v, (str, int, float, bool)):
        return v
    return json.dumps(v)[:200]


FILE_COLUMNS = ("source", "name_id", "lms_id", "submitter", "student_ids", "events", "edited",
                "recovery",
                "head_hash", "unreadable", "problems", "notes", "skipped")


def file_rows(batch: Batch) -> list[dict]:
    rows = []
    for f in batch.files:
        row = {"source": f.source, "name_id": f.name_id, "lms_id": f.lms_id,
               "submitter": f.submitter, "student_ids": " ".join(f.student_ids),
               "events": f.events, "edited": f.edited, "recovery": f.recovery,
               "head_hash": f.head_hash, "unreadable": f.unreadable,
               "notes": "; ".join(f.notes),
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
    with open(path, "w", newline="", encoding="utf-8-sig", errors="replace") as f:
        writer = csv.DictWriter(f, fieldnames=cols, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path



def write_table(header: Sequence[str], rows: Sequence[Sequence[Any]],
                path: str | os.PathLike) -> Path:
    """Write a header and list rows as UTF-8 CSV with BOM (cells already neutralised)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8-sig", errors="replace") as f:
        writer = csv.writer(f)
        writer.writerow([csv_safe(h) for h in header])
        writer.writerows(rows)
    return path
