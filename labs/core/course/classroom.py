"""A class's design ledgers, summarised per prediction item and per student (instructor dashboard).

Loading and grading are :mod:`labs.core.course.grading`'s (``load_ledgers``, ``load_config``,
``grade``, ``gradebook_rows``, ``event_rows``); this module only reshapes their results for
``labs/instructor_dashboard.py``:

* per item: every student's *first* committed prediction (what grading grades), the value that
  student's instrument showed (their latest ``result`` event), how far off it was, the grader's
  verdicts (committed before unlocking, reasoned, explained, correct), who has not predicted or
  not explained, and the grader's flags about the item;
* calibration: share correct per confidence level (1-5);
* per student: a timeline of events;
* the gradebook as CSV bytes for a download button;
* :func:`write_synthetic_class`: a realistic class of hash-chained ledgers (with the anomalies a
  grader flags) for tests, benchmarks and demos.

Figures (plotly) are built by the ``*_figure`` functions at the end; they use the labs' plotly
template. Nothing here writes outside the folder it is given. Student text is data: the
dashboard shows it through marimo tables and plotly (which escape it), never as raw HTML.
"""

from __future__ import annotations

import csv
import json
import math
import os
import random
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable, Sequence

from labs.core.course import grading
from labs.core.course import ledger as _ledger

#: Confidence levels a prediction form offers (quiz.CONFIDENCE_OPTIONS values).
CONFIDENCE_LEVELS = (1, 2, 3, 4, 5)


def _ratio(predicted: Any, actual: Any) -> float | None:
    """How many times off (>= 1); None when a ratio means nothing (same rule as quiz.ratio_off)."""
    if isinstance(predicted, bool) or isinstance(actual, bool):
        return None
    if not isinstance(predicted, (int, float)) or not isinstance(actual, (int, float)):
        return None
    p, a = float(predicted), float(actual)
    if not (math.isfinite(p) and math.isfinite(a)) or p == 0 or a == 0 or (p > 0) != (a > 0):
        return None
    return max(p / a, a / p)


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
    actual: Any = None  # what this student's instrument showed (latest result event)
    ratio: float | None = None  # numeric: times off (>= 1)
    correct: bool | None = None  # grading's verdict (None: unknown)
    committed: bool = False  # predicted before unlocking / observing / explaining
    explained: bool = False
    revised: bool = False

    @property
    def shown(self) -> str:
        if self.answer_type == "choice":
            return self.label if self.label is not None else str(self.value)
        return f"{self.value:.4g}" if isinstance(self.value, (int, float)) else str(self.value)


@dataclass
class ItemSummary:
    item_id: str
    lab_id: str
    answer_type: str
    units: str
    rows: list[PredictionRow]
    students: list[str]  # everyone expected to do this item (the roster or all seen)
    not_predicted: list[str]
    not_explained: list[str]  # predicted, not yet observed and explained
    flags: dict[str, list[str]]  # student -> grader flags that name this item

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
    gradebook: list[dict]  # grading.gradebook_rows (or rows read from a gradebook.csv)
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
            return self.book.config.id_column
        return next(iter(self.gradebook[0])) if self.gradebook else "student"

    @property
    def labs(self) -> list[str]:
        return sorted({s.lab_id for s in self.items.values()})

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
        with tempfile.TemporaryDirectory(prefix="roofline-gradebook-") as tmp:
            path = grading.write_csv(self.gradebook, Path(tmp) / "gradebook.csv")
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
            text = row.get("payload", "")
            try:
                payload = json.loads(text.lstrip("'")) if text else {}
            except ValueError:
                payload = {}
            sid = row.get("student_id", "").lstrip("'")
            seq = row.get("seq", "")
            batch.events.append(grading.EventRecord(
                student_id=sid, lab_id=row.get("lab_id", ""), item_id=row.get("item_id", ""),
                kind=row.get("kind", ""), seq=int(seq) if seq.isdigit() else 0,
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
        return [dict(r) for r in csv.DictReader(f)]


def load_class(inputs: Sequence[str | os.PathLike], config: str | os.PathLike | None = None,
               *, now: datetime | None = None) -> Classroom:
    """Load ledgers (files, folders, zips), or labs-grade's ``events.csv`` / ``gradebook.csv``.

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
    items = summarise_items(batch, book)
    return Classroom([str(p) for p in paths], batch, book, items, grading.gradebook_rows(book),
                     time.perf_counter() - t0, notes)


def summarise_items(batch: grading.Batch, book: grading.Gradebook) -> dict[str, ItemSummary]:
    """Per item: first predictions with grading's verdicts, who is missing, flags. One pass."""
    by_key: dict[tuple[str, str], list[grading.EventRecord]] = defaultdict(list)
    for e in batch.events:
        if e.valid:
            by_key[(e.student_id, e.item_id)].append(e)
    verdicts = {(g.student_id, it.item_id): it for g in book.grades.values() for it in g.items}
    flags_by_student_lab = {(g.student_id, g.lab_id): g.flags for g in book.grades.values()}
    out: dict[str, ItemSummary] = {}
    for lab in book.labs:
        expected = list(book.students)
        for item_id in lab.items:
            rows, not_pred, not_expl, flags = [], [], [], {}
            answer_type, units = "numeric", ""
            for sid in expected:
                evs = by_key.get((sid, item_id), [])
                first = next((e for e in evs if e.kind == "predict"), None)
                item_flags = [f for f in flags_by_student_lab.get((sid, lab.lab_id), [])
                              if f"({item_id})" in f or f"({item_id}" in f]
                if item_flags:
                    flags[sid] = item_flags
                if first is None:
                    not_pred.append(sid)
                    continue
                p = first.payload
                answer_type = "choice" if p.get("answer_type") == "choice" else "numeric"
                units = str(p.get("units") or units)
                results = [e for e in evs if e.kind == "result" and e.order > first.order]
                actual = results[-1].payload.get("actual") if results else None
                v = verdicts.get((sid, item_id))
                conf = p.get("confidence")
                row = PredictionRow(
                    student_id=sid, item_id=item_id, answer_type=answer_type,
                    value=p.get("value"), label=p.get("label") if isinstance(
                        p.get("label"), str) else None, units=str(p.get("units") or ""),
                    confidence=conf if isinstance(conf, int) and not isinstance(conf, bool)
                    else None, reason=str(p.get("reason") or ""), time=first.time,
                    actual=actual,
                    ratio=_ratio(p.get("value"), actual) if answer_type == "numeric" else None,
                    correct=v.correct if v else None, committed=bool(v and v.committed),
                    explained=bool(v and v.explained),
                    revised=any(e.kind == "revise" for e in evs))
                rows.append(row)
                if not row.explained:
                    not_expl.append(sid)
            out[item_id] = ItemSummary(item_id, lab.lab_id, answer_type, units, rows, expected,
                                       not_pred, not_expl, flags)
    return out


# --------------------------------------------------------------------------------------------
# A synthetic class (tests, benchmark, demo)


@dataclass(frozen=True)
class SynthItem:
    item_id: str
    kind: str  # "numeric" | "choice"
    actual: Any  # numeric: the reference value; choice: the right option's value
    units: str = ""
    options: tuple[tuple[str, Any], ...] = ()  # choice: (label, value)


#: Items of the four labs (ids as the labs use them; values plausible, not authoritative).
SYNTH_COURSE: dict[str, tuple[SynthItem, ...]] = {
    "lab01": (
        SynthItem("lab01.which_roof", "choice", "memory",
                  options=(("The memory roof", "memory"), ("The compute roof", "compute"),
                           ("Neither: badly written", "neither"))),
        SynthItem("lab01.crossover_n", "numeric", 443.0, ""),
        SynthItem("lab01.yardstick", "choice", "bandwidth",
                  options=(("Bandwidth utilisation", "bandwidth"), ("MFU", "mfu"))),
    ),
    "lab02": (
        SynthItem("lab02.decode_dominant", "choice", "weights",
                  options=(("Weights", "weights"), ("KV cache", "kv"),
                           ("Activations", "act"))),
        SynthItem("lab02.oom_batch", "numeric", 54.0, "sequences"),
    ),
    "lab03": (
        SynthItem("lab03.rho_ratio", "numeric", 7.5, "×"),
        SynthItem("lab03.nvfp4_speedup", "numeric", 3.6, "×"),
    ),
    "lab04": (
        SynthItem("lab04.fusion_speedup", "numeric", 3.0, "×"),
        SynthItem("lab04.oom_seq_len", "numeric", 46000.0, "tokens"),
        SynthItem("lab04.tiny_tensor", "choice", "overhead",
                  options=(("Overhead", "overhead"), ("Memory", "memory"),
                           ("Compute", "compute"))),
    ),
}


class _Writer:
    """Builds one hash-chained ledger in memory with ledger.py's own hashing."""

    def __init__(self, student_id: str, start: datetime, rng: random.Random):
        self.student_id, self.t, self.rng = student_id, start, rng
        self.seq, self.prev = 0, _ledger.GENESIS_HASH
        self.lines: list[bytes] = []
        self.session = "%032x" % rng.getrandbits(128)

    def add(self, kind: str, lab_id: str, item_id: str, payload: dict,
            minutes: float = 1.0) -> dict:
        self.t += timedelta(minutes=minutes * (0.5 + self.rng.random()))
        self.seq += 1
        event = {"schema": _ledger.SCHEMA_VERSION, "seq": self.seq,
                 "ts": self.t.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "student_id": self.student_id,
                 "lab_id": lab_id, "lab_version": "synthetic", "item_id": item_id, "kind": kind,
                 "payload": payload, "session": self.session, "prev_hash": self.prev}
        event["hash"] = _ledger.event_hash(event)
        self.prev = event["hash"]
        self.lines.append(_ledger.event_line(event))
        return event


def _synth_student(sid: str, rng: random.Random, start: datetime,
                   course: dict[str, tuple[SynthItem, ...]]) -> list[bytes]:
    w = _Writer(sid, start, rng)
    skill = rng.gauss(0, 1)  # better students predict closer and are better calibrated
    for lab_id, items in course.items():
        if rng.random() < 0.06:  # lab not started
            continue
        w.t += timedelta(days=rng.randint(1, 6), minutes=rng.randint(0, 600))
        stop_at = len(items) if rng.random() > 0.1 else rng.randint(0, len(items) - 1)
        for n, it in enumerate(items):
            if n >= stop_at:
                break
            cheat = rng.random() < 0.03  # looked first: observe before predicting
            if cheat:
                w.add("observe", lab_id, it.item_id, {"text": "looked at the plot first"})
            if it.kind == "numeric":
                spread = max(0.1, 0.6 - 0.15 * skill)
                value = float(f"{it.actual * 10 ** rng.gauss(0, spread):.3g}")
                off = max(value / it.actual, it.actual / value)
                conf = max(1, min(5, round(3 + skill + rng.gauss(0, 1) - (off > 3))))
                payload = {"value": value, "answer_type": "numeric", "units": it.units,
                           "confidence": conf, "reason": "scaled from the ridge point"}
            else:
                p_right = min(0.95, max(0.15, 0.55 + 0.15 * skill))
                right = rng.random() < p_right
                label, value = (next(o for o in it.options if o[1] == it.actual) if right
                                else rng.choice([o for o in it.options if o[1] != it.actual]))
                conf = max(1, min(5, round(3 + skill + rng.gauss(0, 1) + (0.5 if right else -0.5))))
                payload = {"value": value, "answer_type": "choice", "units": "",
                           "confidence": conf, "reason": "bytes per FLOP", "label": label}
            if rng.random() < 0.04:
                payload["reason"] = ""  # no reason given
            ev = w.add("predict", lab_id, it.item_id, payload, minutes=3)
            w.add("unlock", lab_id, it.item_id, {"after_seq": ev["seq"]}, minutes=0.05)
            result = ({"actual": it.actual, "units": it.units,
                       "ratio": _ratio(payload["value"], it.actual)} if it.kind == "numeric"
                      else {"actual": it.actual, "correct": payload["value"] == it.actual})
            w.add("result", lab_id, it.item_id, result, minutes=0.1)
            if rng.random() < 0.03:  # changed their mind after seeing it
                w.add("revise", lab_id, it.item_id, {**payload, "value": it.actual})
            if rng.random() < 0.85 and not cheat:
                w.add("observe", lab_id, it.item_id, {"text": "the point sits under the slope"})
            if rng.random() < 0.8:
                w.add("explain", lab_id, it.item_id,
                      {"text": "AI is below the ridge, so bandwidth sets the time"}, minutes=4)
    if rng.random() < 0.01 and len(w.lines) > 3:  # an edited line: its hash no longer matches
        w.lines[2] = w.lines[2].replace(b'"confidence":', b'"confidence":5,"x":', 1)
    return w.lines


def write_synthetic_class(folder: str | os.PathLike, n_students: int = 500, *, seed: int = 0,
                          course: dict[str, tuple[SynthItem, ...]] | None = None,
                          start: datetime | None = None) -> list[Path]:
    """Write ``n_students`` ledgers ``roofline-ledger-s0001.jsonl`` ... into ``folder``.

    Deterministic for a seed. About 6 % skip a lab, 10 % stop part-way, 3 % observe before
    predicting, 3 % revise, ~20 % do not explain, 1 % have an edited line.
    """
    if not isinstance(n_students, int) or n_students < 1:
        raise ValueError(f"n_students must be a positive integer, got {n_students!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    start = start or datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)
    paths = []
    for i in range(1, n_students + 1):
        sid = f"s{i:04d}"
        lines = _synth_student(sid, random.Random(rng.getrandbits(64)), start,
                               course or SYNTH_COURSE)
        path = folder / _ledger.ledger_filename(sid)
        path.write_bytes(b"".join(lines))
        paths.append(path)
    return paths


# --------------------------------------------------------------------------------------------
# Figures (plotly; the labs' template)


def _go():
    import plotly.graph_objects as go

    from labs.core import figures  # noqa: F401  (registers the "roofline" template)
    from labs.core.ui.tokens import COLORS

    return go, COLORS


def _log_bins(values: list[float], n: int = 24) -> list[float]:
    lo, hi = min(values), max(values)
    if lo == hi:
        return [lo / 1.5, hi * 1.5]
    step = (math.log10(hi) - math.log10(lo)) / n
    return [10 ** (math.log10(lo) + i * step) for i in range(n + 1)]


def distribution_figure(item: ItemSummary):
    """Numeric: how far off each prediction was (log ×, signed); choice: counts per option."""
    go, C = _go()
    if item.answer_type == "choice":
        rows = item.choice_counts()
        colors = [C["ok"] if right else (C["danger"] if right is False else C["muted"])
                  for _, _, right in rows]
        fig = go.Figure(go.Bar(
            x=[n for _, n, _ in rows], y=[opt for opt, _, _ in rows], orientation="h",
            marker_color=colors, text=[("✓ right" if r else "✗" if r is False else "")
                                       for _, _, r in rows], textposition="auto",
            hovertemplate="%{y}: %{x} students<extra></extra>"))
        fig.update_layout(title=f"{item.item_id}: committed answers (n = {item.n})",
                          xaxis_title="students", yaxis=dict(autorange="reversed"),
                          height=120 + 40 * len(rows), margin=dict(l=10, r=10, t=50, b=40))
        return fig
    signed = []
    for r in item.rows:
        if r.ratio is not None and isinstance(r.value, (int, float)) and isinstance(
                r.actual, (int, float)):
            signed.append(math.log10(r.value / r.actual))
    fig = go.Figure()
    if signed:
        fig.add_trace(go.Histogram(x=signed, xbins=dict(size=0.1), marker_color=C["accent"],
                                   hovertemplate="%{y} students<extra></extra>",
                                   name="predictions"))
    fig.add_vline(x=0, line_color=C["ok"], line_width=2)
    fig.add_annotation(x=0, y=1, yref="paper", text="true value", showarrow=False,
                       yanchor="bottom", font=dict(color=C["ok"]))
    ticks = [-3, -2, -1, math.log10(0.5), 0, math.log10(2), 1, 2, 3]
    fig.update_layout(
        title=f"{item.item_id}: prediction ÷ true value (n = {len(signed)}, log scale)",
        xaxis=dict(title="predicted ÷ what the student's instrument showed", tickvals=ticks,
                   ticktext=["1/1000", "1/100", "1/10", "1/2", "1", "2", "10", "100", "1000"]),
        yaxis_title="students", bargap=0.05, height=340, margin=dict(l=10, r=10, t=50, b=50))
    return fig


def calibration_figure(rows: list[dict], title: str = "Calibration"):
    """Share correct per confidence level, with the count of predictions per level."""
    go, C = _go()
    xs = [r["confidence"] for r in rows if r["predictions"]]
    ys = [100 * r["share_correct"] for r in rows if r["predictions"]]
    ns = [r["predictions"] for r in rows if r["predictions"]]
    fig = go.Figure(go.Bar(x=xs, y=ys, text=[f"n={n}" for n in ns], textposition="outside",
                           marker_color=C["accent"], name="share correct",
                           hovertemplate="confidence %{x}: %{y:.0f}% right<extra></extra>"))
    fig.add_trace(go.Scatter(x=[1, 5], y=[20, 100], mode="lines", name="ideal (20% per step)",
                             line=dict(dash="dot", color=C["muted"])))
    fig.update_layout(title=title, xaxis=dict(title="stated confidence (1 = guess, 5 = sure)",
                                              tickvals=list(CONFIDENCE_LEVELS)),
                      yaxis=dict(title="% correct", range=[0, 115]), height=320,
                      margin=dict(l=10, r=10, t=50, b=50), showlegend=False)
    return fig


KIND_ORDER = ("predict", "unlock", "result", "observe", "explain", "revise", "decision")


def timeline_figure(rows: list[dict], student_id: str):
    """A student's events: one row per item, x = minutes since their first event in that lab
    (labs are done days apart; within a lab the order of predict / unlock / observe matters),
    one marker shape per kind; the hover gives the date and time."""
    go, C = _go()
    symbols = {"predict": "circle", "unlock": "triangle-up", "result": "diamond",
               "observe": "square", "explain": "star", "revise": "x", "decision": "cross"}
    lab_start: dict[str, datetime] = {}
    for r in rows:
        if r["time"] is not None:
            lab_start[r["lab"]] = min(lab_start.get(r["lab"], r["time"]), r["time"])
    fig = go.Figure()
    for kind in KIND_ORDER:
        pts = [r for r in rows if r["kind"] == kind and r["time"] is not None]
        if pts:
            fig.add_trace(go.Scatter(
                x=[(r["time"] - lab_start[r["lab"]]).total_seconds() / 60 for r in pts],
                y=[r["item"] for r in pts], mode="markers", name=kind,
                marker=dict(symbol=symbols.get(kind, "circle"), size=11, line=dict(width=1)),
                customdata=[[r["time"].strftime("%Y-%m-%d %H:%M:%S"), r["what"],
                             r["flags"] or "-"] for r in pts],
                hovertemplate="%{y} · %{customdata[0]} UTC<br>" + kind +
                              ": %{customdata[1]}<br>flags: %{customdata[2]}<extra></extra>"))
    items = sorted({r["item"] for r in rows})
    fig.update_layout(title=f"Timeline of {student_id}", height=170 + 26 * max(1, len(items)),
                      xaxis_title="minutes since the student's first event in that lab",
                      yaxis=dict(categoryorder="array", categoryarray=items[::-1]),
                      margin=dict(l=10, r=10, t=50, b=50))
    return fig
