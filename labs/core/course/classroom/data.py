"""A class's ledgers reshaped for the instructor dashboard: per item, per student, calibration.

Loading and grading are :mod:`labs.core.course.grading`'s (``load_ledgers``, ``load_config``,
``grade``, ``gradebook_rows``, ``event_rows``); :func:`load_class` only reshapes their results
into a :class:`Classroom`:

* per item (:class:`ItemSummary`): every student's *first* committed prediction (what grading
  grades), the value that student's instrument showed (the reading the grade judged: the
  first ``result`` after the prediction; the latest when none was judged), how far off it
  was, the grader's verdicts (committed before unlocking, reasoned, explained, correct), who
  has not predicted or not explained, and the grader's flags about the item;
* calibration: share correct per confidence level (1-5);
* per student: a timeline of events;
* the gradebook as CSV bytes for a download button.

Nothing here writes outside a temporary folder. Student text is data, kept as written.
"""

from __future__ import annotations

import csv
import json
import decimal
import math
import os
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Iterable, Sequence

from labs.core.course import catalogue, grading
from labs.core.course.grading.ids import norm_id
from labs.core.course import ledger as _ledger
from labs.core.course.answers import first_prediction, ratio_off

__all__ = [
    "CONFIDENCE_LEVELS", "Classroom", "ItemSummary", "PredictionRow", "load_class", "plain_number",
    "summarise_items", "uncsv"
]

#: Confidence levels a prediction form offers (quiz.CONFIDENCE_OPTIONS values).
CONFIDENCE_LEVELS = (1, 2, 3, 4, 5)


def plain_number(value: Any, units: str = "") -> str:
    """A number as people write it: ``35,100``, ``0.246``, ``1,234.5`` (up to 7 significant
    digits, thousands separated, never ``3.51e+04``), then the units. Beyond 10^15 or below
    10^-6 (never a sensible prediction) it reads ``1.2 × 10^20``. Anything else: ``str()``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        text = str(value)
    elif isinstance(value, float) and not math.isfinite(value):
        text = str(float(value))
    elif value == 0:
        text = "0"
    elif not 1e-6 <= abs(value) < 1e15:
        # Decimal: an int of any size (a ledger may hold 10**400) formats without a float
        mantissa, exponent = f"{decimal.Decimal(value):.2e}".split("e")
        text = f"{float(mantissa):g} × 10^{int(exponent)}"
    elif float(value).is_integer():
        text = f"{int(value):,}"
    else:
        digits = max(0, 6 - math.floor(math.log10(abs(value))))
        text = f"{value:,.{digits}f}"
        text = text.rstrip("0").rstrip(".") if "." in text else text
    return f"{text} {units}".strip() if units else text


def uncsv(text: Any) -> Any:
    """The value ``grading.csv_safe`` was given, for the text it changed (a leading ``'``
    before formula-looking text): CSV escaping is for spreadsheets, not for pages."""
    if isinstance(text, str) and text.startswith("'") and grading.csv_safe(text[1:]) == text:
        return text[1:]
    return text


@dataclass
class PredictionRow:
    """One student's first committed prediction of one item, with what grading made of it."""

    student_id: str
    item_id: str
    answer_type: str  # "numeric" | "choice"
    value: Any
    label: str | None
    units: str
    confidence: int | None
    reason: str
    time: datetime | None
    actual: Any = None  # what this student's instrument showed (the reading graded)
    ratio: float | None = None  # numeric: times off (>= 1)
    correct: bool | None = None  # grading's verdict (None: unknown)
    committed: bool = False  # predicted before unlocking / observing / explaining
    explained: bool = False
    revised: bool = False

    @property
    def shown(self) -> str:
        """The answer as the student saw it: the option's label, or the number with units."""
        if self.answer_type == "choice":
            return self.label if self.label is not None else str(self.value)
        return plain_number(self.value, self.units)


@dataclass
class ItemSummary:
    item_id: str
    lab_id: str
    answer_type: str
    units: str  # the lab's units for the item (the catalogue's; else what the ledgers say)
    rows: list[PredictionRow]
    students: list[str]  # everyone expected to do this item (the roster or all seen)
    not_predicted: list[str]
    not_explained: list[str]  # predicted, not yet observed and explained
    flags: dict[str, list[str]]  # student -> grader flags that name this item
    question: str = ""  # the question as the lab asks it (plain text; "" if no lab asks it)
    options: tuple[tuple[str, Any], ...] = ()  # choice: (label, value) as the lab offers them

    @property
    def title(self) -> str:
        """How the dashboard names the item: its question (or its id, if no lab asks it)."""
        return self.question or f"{self.item_id} (not asked by any lab in this copy)"

    @property
    def n(self) -> int:
        return len(self.rows)

    @property
    def committed_share(self) -> float | None:
        """Share of predictions made before the student unlocked (or observed) the item."""
        return sum(r.committed for r in self.rows) / self.n if self.rows else None

    @property
    def correct_share(self) -> float | None:
        known = [r.correct for r in self.rows if r.correct is not None]
        return sum(known) / len(known) if known else None

    @property
    def actuals(self) -> list[Any]:
        return [r.actual for r in self.rows if r.actual is not None]

    def reference_value(self) -> Any:
        """The value most students' instruments showed (the median for numbers)."""
        acts = self.actuals
        if not acts:
            return None
        nums = [a for a in acts if isinstance(a, (int, float)) and not isinstance(a, bool)]
        if self.answer_type == "numeric" and nums:
            return statistics.median(nums)
        return Counter(str(a) for a in acts).most_common(1)[0][0]

    def show(self, value: Any) -> str:
        """A value of this item as the lab shows it: the option's label (choice), or the number
        with the item's units; anything else as ``str()``."""
        if value is None:
            return ""
        if self.answer_type == "choice":
            return next((label for label, v in self.options if str(v) == str(value)),
                        str(value))
        return plain_number(value, self.units)

    def reference_text(self) -> str:
        """:meth:`reference_value` as the lab shows it (number with units, or option label)."""
        ref = self.reference_value()
        return "n/a" if ref is None else self.show(ref)

    def choice_counts(self) -> list[tuple[str, int, bool | None]]:
        """(option shown, how many chose it, whether it was right) for a choice item."""
        counts: Counter = Counter()
        right: dict[str, set] = defaultdict(set)
        for r in self.rows:
            counts[r.shown] += 1
            if r.correct is not None:
                right[r.shown].add(r.correct)
        return [(opt, n, (True in right[opt]) if right[opt] else None)
                for opt, n in counts.most_common()]


@dataclass
class Classroom:
    """Everything the dashboard shows, computed once per load."""

    sources: list[str]
    batch: grading.Batch | None
    book: grading.Gradebook | None
    items: dict[str, ItemSummary]
    gradebook: list[dict]  # one row per student, values as they are (not CSV-escaped)
    load_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)

    @property
    def students(self) -> list[str]:
        if self.book is not None:
            return list(self.book.students)
        col = self.id_column
        return sorted({str(r.get(col, "")) for r in self.gradebook if r.get(col)})

    @property
    def id_column(self) -> str:
        if self.book is not None:
            roster = self.book.config.roster
            return (roster.id_column if roster else "") or self.book.config.id_column
        return next(iter(self.gradebook[0])) if self.gradebook else "student"

    @property
    def labs(self) -> list[str]:
        """Lab ids in lab order (the items are)."""
        return list(dict.fromkeys(s.lab_id for s in self.items.values()))

    def item_choices(self, width: int = 90) -> dict[str, str]:
        """Dropdown label -> item id, in lab order: "lab01 · <question> · lab01.x" (cut to
        ``width`` characters; the id ends each label, so two labels never read the same)."""
        out: dict[str, str] = {}
        for s in self.items.values():
            text = " ".join(s.title.split())
            room = max(10, width - len(s.lab_id) - min(len(s.item_id), 40) - 6)
            short = text if len(text) <= room else text[: room - 1].rstrip() + "…"
            sid = s.item_id if len(s.item_id) <= 40 else s.item_id[:39] + "…"
            label = f"{s.lab_id} · {short} · {sid}"
            while label in out:  # two ids cut to the same 40 characters
                label += " ·"
            out[label] = s.item_id
        return out

    def items_of(self, lab_id: str | None = None) -> list[ItemSummary]:
        return [s for s in self.items.values() if lab_id is None or s.lab_id == lab_id]

    def calibration(self, item_ids: Iterable[str] | None = None) -> list[dict]:
        """Per confidence level: predictions, how many were right, the share right."""
        ids = set(item_ids) if item_ids is not None else set(self.items)
        tally = {c: [0, 0] for c in CONFIDENCE_LEVELS}
        for item_id in ids:
            for r in self.items[item_id].rows:
                if r.confidence in tally and r.correct is not None:
                    tally[r.confidence][0] += 1
                    tally[r.confidence][1] += bool(r.correct)
        return [{"confidence": c, "predictions": n, "correct": k,
                 "share_correct": (k / n) if n else None} for c, (n, k) in tally.items()]

    def timeline(self, student_id: str) -> list[dict]:
        """The student's events in merged order (time, lab, item, kind, value/text, flags)."""
        if self.batch is None:
            return []
        out = []
        for e in self.batch.for_student(student_id):
            p = e.payload if isinstance(e.payload, dict) else {}
            what = p.get("label") or p.get("value", p.get("actual", p.get("text", "")))
            out.append({"time": e.time, "lab": e.lab_id, "item": e.item_id, "kind": e.kind,
                        "what": str(what)[:120], "valid": e.valid,
                        "flags": ", ".join(e.flags)})
        return out

    def student_choices(self) -> dict[str, str]:
        """Dropdown label -> student id: the id, with the roster's name when it has one."""
        roster = self.book.config.roster if self.book is not None else None
        out: dict[str, str] = {}
        for sid in self.students:
            entry = roster.get(sid) if roster else None
            label = f"{sid} · {entry.name}" if entry is not None and entry.name else sid
            while label in out:
                label += " ·"
            out[label] = sid
        return out

    def find_student(self, wanted) -> str | None:
        """The student a command line or a person names, as the class spells them: the id
        (compared as the grader compares ids), any roster identity column (SIS Login ID,
        e-mail, ...), or an id given as a number (``marimo``'s ``cli_args`` turns
        ``--student 02310140`` into the integer 2310140: the same digits without their leading
        zeros name the student when only one id has them). None when no one is named."""
        if wanted is None or isinstance(wanted, bool) or wanted == "":
            return None
        text = str(wanted).strip()
        students = self.students
        by_key = {norm_id(s): s for s in students}
        if norm_id(text) in by_key:
            return by_key[norm_id(text)]
        roster = self.book.config.roster if self.book is not None else None
        hit = roster.resolve(text) if roster else None
        if hit and norm_id(hit[0].student_id) in by_key:
            return by_key[norm_id(hit[0].student_id)]
        if text.isdigit():
            same = [s for s in students if s.strip().isdigit() and s.strip().lstrip("0") ==
                    text.lstrip("0")]
            if len(same) == 1:
                return same[0]
        return None

    def student_notes(self, student_id: str) -> list[str]:
        """The grader's notes about a student (facts, not problems: an extension, an override)."""
        return list(self.book.notes.get(student_id, [])) if self.book is not None else []

    def student_flags(self, student_id: str) -> list[str]:
        if self.book is None:
            return []
        flags = list(self.book.student_flags.get(student_id, []))
        for lab in self.book.labs:
            g = self.book.grades.get((student_id, lab.lab_id))
            if g is not None:
                flags += [f"{lab.lab_id}: {f}" for f in g.flags]
        return flags

    def gradebook_csv(self) -> bytes:
        """The gradebook as ``labs-grade`` writes it (UTF-8 with BOM, neutralised cells)."""
        rows = [{grading.csv_safe(k): grading.csv_safe(v) for k, v in r.items()}
                for r in self.gradebook]
        with tempfile.TemporaryDirectory(prefix="roofline-gradebook-") as tmp:
            path = grading.write_csv(rows, Path(tmp) / "gradebook.csv")
            return path.read_bytes()


# --------------------------------------------------------------------------------------------
# Loading


def _csv_kind(path: Path) -> str | None:
    """``"events"`` for labs-grade's events.csv, ``"gradebook"`` for gradebook.csv, else None."""
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return None
    if {"student_id", "item_id", "kind", "payload"} <= set(header):
        return "events"
    if "Total Points" in header:
        return "gradebook"
    return None


def _events_from_csv(path: Path) -> grading.Batch:
    """A Batch from labs-grade's events.csv (already checked by the grader: flags kept)."""
    batch = grading.Batch()
    with open(path, newline="", encoding="utf-8-sig") as f:
        for i, row in enumerate(csv.DictReader(f)):
            row = {k: uncsv(v) for k, v in row.items()}  # the values, not their CSV escaping
            text = row.get("payload", "")
            try:
                payload = json.loads(text) if text else {}
            except ValueError:
                payload = {}
            seq = row.get("seq", "")
            batch.events.append(grading.EventRecord(
                student_id=row.get("student_id", ""), lab_id=row.get("lab_id", ""),
                item_id=row.get("item_id", ""), kind=row.get("kind", ""),
                seq=int(seq) if seq.isdigit() else 0,
                ts=row.get("timestamp", ""), time=_ledger.parse_ts(row.get("timestamp", "")),
                lab_version=row.get("lab_version", ""), session=row.get("session", ""),
                payload=payload if isinstance(payload, dict) else {}, hash=row.get("hash", ""),
                source=row.get("source", str(path)),
                line=int(row["line"]) if str(row.get("line", "")).isdigit() else 0,
                valid=str(row.get("valid", "true")).lower() == "true",
                flags=[x for x in row.get("flags", "").split(";") if x], order=i))
    return batch


def _gradebook_from_csv(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8-sig") as f:
        return [{uncsv(k): uncsv(v) for k, v in r.items()} for r in csv.DictReader(f)]


def load_class(inputs: Sequence[str | os.PathLike], config: str | os.PathLike | None = None,
               *, now: datetime | None = None,
               labs_dir: str | os.PathLike | None = None) -> Classroom:
    """Load ledgers (files, folders, zips), or labs-grade's ``events.csv`` / ``gradebook.csv``.

    Items are ordered and named by the labs in ``labs_dir`` (default: the installed labs).

    Raises ValueError naming ``inputs`` when nothing usable is given, and grading.ConfigError
    for a bad course TOML.
    """
    t0 = time.perf_counter()
    paths = [Path(p).expanduser() for p in inputs if str(p).strip()]
    if not paths:
        raise ValueError("inputs: give a folder, zip or file of ledgers (or events.csv)")
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        raise ValueError(f"inputs: not found: {', '.join(missing)}")
    course = grading.load_config(config) if config else None
    csvs = {p: _csv_kind(p) for p in paths if p.is_file() and p.suffix.lower() == ".csv"}
    notes: list[str] = []
    if any(k == "gradebook" for k in csvs.values()) and not any(
            k == "events" for k in csvs.values()) and len(paths) == len(csvs):
        rows = [r for p in paths for r in _gradebook_from_csv(p)]
        notes.append("Only a gradebook was loaded: per-item predictions need the ledgers or "
                     "labs-grade's events.csv.")
        return Classroom([str(p) for p in paths], None, None, {}, rows,
                         time.perf_counter() - t0, notes)
    ledgers = [p for p in paths if p not in csvs]
    batch = grading.load_ledgers(ledgers, now=now) if ledgers else grading.Batch()
    for p, kind in csvs.items():
        if kind == "events":
            batch.events.extend(_events_from_csv(p).events)
        else:
            notes.append(f"{p.name}: not a ledger, events.csv or gradebook.csv; ignored")
    if not batch.events:
        raise ValueError("inputs: no ledger events found in "
                         + ", ".join(str(p) for p in paths))
    batch.reindex()  # events were added from several sources
    book = grading.grade(batch, course)
    notes += book.warnings  # e.g. an extension naming no student in the ledgers
    notes += book.config.roster.report() if book.config.roster else []
    items = summarise_items(batch, book, labs_dir)
    return Classroom([str(p) for p in paths], batch, book, items,
                     grading.gradebook_rows(book, neutralise=False), time.perf_counter() - t0,
                     notes)


def summarise_items(batch: grading.Batch, book: grading.Gradebook,
                    labs_dir: str | os.PathLike | None = None) -> dict[str, ItemSummary]:
    """Per item: first predictions with grading's verdicts, who is missing, flags. One pass.

    Items (the ones the grader grades) come in lab order with their question, units and option
    labels from the lab catalogue (:mod:`labs.core.course.catalogue`, read from ``labs_dir``,
    default the installed labs); an item no lab asks (a course TOML naming one) follows its
    lab's, by id.
    """
    asked = {i.item_id: i for i in catalogue.items(folder=labs_dir)}
    item_rank = {item_id: n for n, item_id in enumerate(asked)}
    lab_rank = {e.lab_id: n for n, e in enumerate(catalogue.catalogue(labs_dir))}
    by_key: dict[tuple[str, str], list[grading.EventRecord]] = defaultdict(list)
    for e in batch.events:
        if e.valid:
            by_key[(e.student_id, e.item_id)].append(e)
    verdicts = {(g.student_id, it.item_id): it for g in book.grades.values() for it in g.items}
    flags_by_student_lab = {(g.student_id, g.lab_id): g.flags for g in book.grades.values()}
    out: list[ItemSummary] = []
    for lab in book.labs:
        for item_id in lab.items:
            out.append(_summarise_item(lab.lab_id, item_id, asked.get(item_id),
                                       list(book.students), by_key, verdicts,
                                       flags_by_student_lab))
    out.sort(key=lambda s: (lab_rank.get(s.lab_id, len(lab_rank)), s.lab_id,
                            item_rank.get(s.item_id, len(item_rank)), s.item_id))
    return {s.item_id: s for s in out}


def _summarise_item(lab_id: str, item_id: str, asked: Any, expected: list[str], by_key: dict,
                    verdicts: dict, flags_by_student_lab: dict) -> ItemSummary:
    """One item's summary; ``asked`` is its catalogue entry (None when no lab asks it)."""
    rows, not_pred, not_expl, flags = [], [], [], {}
    answer_type = asked.kind if asked else "numeric"
    units = asked.units if asked else ""
    for sid in expected:
        evs = by_key.get((sid, item_id), [])
        first = first_prediction(evs)
        item_flags = [f for f in flags_by_student_lab.get((sid, lab_id), [])
                      if f"({item_id})" in f or f"({item_id}" in f]
        if item_flags:
            flags[sid] = item_flags
        if first is None:
            not_pred.append(sid)
            continue
        p = first.payload
        if not asked:
            answer_type = "choice" if p.get("answer_type") == "choice" else "numeric"
            units = str(p.get("units") or units)
        results = [e for e in evs if e.kind == "result" and e.order > first.order]
        v = verdicts.get((sid, item_id))
        actual = v.graded_actual if v is not None and v.graded_from == "result" else (
            results[-1].payload.get("actual") if results else None)
        label = asked.label_of(p.get("value")) if asked else None
        if label is None and isinstance(p.get("label"), str):
            label = p["label"]
        conf = p.get("confidence")
        row = PredictionRow(
            student_id=sid, item_id=item_id, answer_type=answer_type, value=p.get("value"),
            label=label, units=units if asked else str(p.get("units") or ""),
            confidence=conf if isinstance(conf, int) and not isinstance(conf, bool) else None,
            reason=str(p.get("reason") or ""), time=first.time, actual=actual,
            ratio=ratio_off(p.get("value"), actual) if answer_type == "numeric" else None,
            correct=v.correct if v else None, committed=bool(v and v.committed),
            explained=bool(v and v.explained), revised=any(e.kind == "revise" for e in evs))
        rows.append(row)
        if not row.explained:
            not_expl.append(sid)
    return ItemSummary(item_id, lab_id, answer_type, units, rows, expected, not_pred, not_expl,
                       flags, question=asked.text if asked else "",
                       options=tuple(asked.options) if asked else ())
