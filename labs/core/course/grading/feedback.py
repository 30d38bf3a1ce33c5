"""Per-student feedback pages for ``labs-grade``: ``feedback/<id>.html``, ready to return.

One self-contained HTML page per student (no script, nothing fetched, prints on A4/Letter):
per lab, the points and status; per prediction item, the lab's question, what the student
predicted (with confidence and reason), what their instrument showed, how far off it was, and
which parts of the rubric they earned; their calibration (how often they were right at each
confidence level); the instructor's override comments; and every flag with what it means and
how to fix it (:data:`FLAG_HELP`). Every piece of student text is HTML-escaped. Colours are the
labs' semantic tokens (:mod:`labs.core.ui.tokens`) and never carry meaning alone. An
``index.html`` lists the pages for the instructor. Part of :mod:`labs.core.course.grading`
(import it through that name).
"""

from __future__ import annotations

import hashlib
import math
import html
import os
import re
import string
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from labs.core.course import catalogue as _catalogue
from labs.core.course.grading.checks import (  # noqa: F401  (FLAG_HELP re-exported)
    FLAG_HELP, severity, student_severity)
from labs.core.course.grading.load import Batch
from labs.core.course.grading.score import Gradebook, LabGrade
from labs.core.course.answers import first_prediction, is_reasoned, ratio_verdict
from labs.core.physics.units import format_value

__all__ = [
    "FLAG_HELP", "feedback_page", "index_entry", "page_name", "ratio_text", "severity",
    "student_severity", "write_feedback", "write_index", "write_pages"
]

_CSS = """
:root{--fg:#1f2328;--muted:$muted;--ok:$ok;--danger:$danger;--warn:$warn;
--accent:$memory;--border:#d0d7de}
body{font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);
max-width:54rem;margin:2rem auto;padding:0 1rem}
h1{font-size:1.5rem;margin:0}h2{font-size:1.2rem;border-bottom:2px solid var(--accent);
padding-bottom:.2rem;margin-top:2rem}h3{font-size:1rem;margin:1.2rem 0 .3rem}
.meta,.muted{color:var(--muted)}table{border-collapse:collapse;width:100%;margin:.4rem 0}
th,td{border:1px solid var(--border);padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}td.num{text-align:right;font-variant-numeric:tabular-nums}
table.items{table-layout:fixed}td{overflow-wrap:anywhere}
table.items td.num{overflow-wrap:normal;font-size:.9em}
.ok{color:var(--ok)}.danger{color:var(--danger)}.warn{color:var(--warn)}
.flag{border-left:4px solid var(--danger);padding:.3rem .6rem;margin:.4rem 0;background:#fafafa}
.flag.check{border-left-color:var(--warn)}.flag.info{border-left-color:var(--accent)}
.sev{font-size:.8em;text-transform:uppercase;letter-spacing:.04em;color:var(--muted)}
td.wrong{color:var(--danger);font-weight:600}td.check{color:var(--warn)}
.note{border-left:4px solid var(--accent);padding:.3rem .6rem;margin:.4rem 0}
td.note{border-left:4px solid var(--accent)}
q{font-style:italic}code{font-size:.9em}
@media print{body{margin:0;max-width:none;font-size:11pt}h2{break-after:avoid}
tr,.flag,.note{break-inside:avoid}th{background:none}}
"""


def _e(value: Any) -> str:
    """Student (or any) text as HTML text: escaped, lone surrogates replaced."""
    return html.escape(re.sub("[\ud800-\udfff]", "\ufffd", str(value)), quote=True)


def _num(value: Any, units: str = "") -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return _e(value)
    try:
        text = format_value(value)
    except (OverflowError, ValueError):
        text = str(value)[:24] + ("…" if len(str(value)) > 24 else "")
    return _e(f"{text} {units}".strip())


def page_name(student_id: str) -> str:
    """A safe file name for a student's page (the id if it is a plain one)."""
    if re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}", student_id):
        return f"{student_id}.html"
    digest = hashlib.sha256(student_id.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"student-{digest}.html"


_SEVERITY_TEXT = {"wrong": "Your grade may change: your instructor will look at this",
                  "check": "Worth a look", "info": "For your information"}


def _student_facing(flag: str) -> str:
    """A flag as its student may read it: never another student's id or name."""
    code = flag.split(" ", 1)[0]
    if code == "id_mismatch":
        if "graded as this student's" in flag or "holds events of" in flag:
            return "id_mismatch (a file you handed in carries another student's id)"
        return "id_mismatch (another student handed in a file with your id)"
    if code in ("not_on_roster", "possible_submission"):
        return code
    return flag


def _flags_html(flags: list[tuple[str, str]]) -> str:
    """(where, flag) pairs, the most serious first: each with its meaning and how to fix it."""
    if not [f for _, f in flags if severity(f) != "info"]:
        head = "<p class='ok'>✓ No flags: the ledger is intact and in order.</p>"
        if not flags:
            return head
    else:
        head = ""
    out = [head]
    order = {"wrong": 0, "check": 1, "info": 2}
    for where, f in sorted(flags, key=lambda wf: order[severity(wf[1])]):
        code = f.split(" ", 1)[0]
        level = severity(f)
        meaning, fix = FLAG_HELP.get(code, ("", "Ask your instructor."))
        out.append(f"<div class='flag {level}'><span class='sev'>{_SEVERITY_TEXT[level]}</span>"
                   f"<br><strong>{_e(where)}{_e(f)}</strong><br>{_e(meaning)}<br>"
                   f"<em>How to fix:</em> {_e(fix)}</div>")
    return "\n".join(out)


def _item_rows(events, g: LabGrade, items: dict) -> tuple[str, list[tuple[int, bool]]]:
    """The lab's item table and (confidence, right) pairs for calibration."""
    rows, calib = [], []
    by_item: dict[str, list] = {}
    for e in events:
        if e.valid:
            by_item.setdefault(e.item_id, []).append(e)
    for ig in g.items:
        info = items.get(ig.item_id)
        question = info.text if info else ig.item_id
        evs = by_item.get(ig.item_id, [])
        first = first_prediction(evs)
        extra = (f"<tr><td colspan='6' class='note'>Instructor (override: {ig.points:g} "
                 f"points){': ' + _e(ig.comment) if ig.comment else ''}</td></tr>"
                 if ig.override is not None else "")
        if first is None:
            rows.append(f"<tr><td>{_e(question)}</td><td colspan='3' class='muted'>no "
                        f"prediction</td><td class='num'>{ig.points:g}</td><td></td></tr>"
                        f"{extra}")
            continue
        p = first.payload
        units = str(p.get("units") or (info.units if info else ""))
        label = p["label"] if isinstance(p.get("label"), str) else (
            info.label_of(p.get("value")) if info else None)
        said = _e(label) if label else _num(p.get("value"), units)
        shown = _readings(ig, evs, first, info, units)
        verdict = ""
        if ig.correct is True:
            verdict = "<span class='ok'>✓ right</span>"
        elif ig.correct is False:
            verdict = "<span class='danger'>✗ not right</span>"
        ratio = ratio_text(p.get("value"), ig.graded_actual, ig.tolerance) \
            if ig.graded_from else ""
        conf = p.get("confidence")
        if isinstance(conf, int) and not isinstance(conf, bool) and ig.correct is not None:
            calib.append((conf, bool(ig.correct)))
        earned = ", ".join(w for w, ok in (("committed", ig.committed), ("reasoned",
                           ig.reasoned), ("explained", ig.explained)) if ok) or "nothing yet"
        reason = p.get("reason") if isinstance(p.get("reason"), str) else ""
        reason = f" · <q>{_e(reason)}</q>" if reason.strip() else " · no reason given"
        if reason.strip() and not is_reasoned(p):
            reason += " · no confidence 1-5 given"
        rows.append(
            f"<tr><td>{_e(question)}</td><td>{said}<br><span class='muted'>confidence "
            f"{_e(conf)}/5{reason}</span></td><td>{shown}</td>"
            f"<td>{verdict} {ratio}</td><td class='num'>{ig.points:g}<br>"
            f"<span class='muted'>{_e(earned)}</span></td><td>{_times(ig, g)}</td></tr>"
            f"{extra}")
    head = ("<colgroup><col style='width:25%'><col style='width:22%'><col style='width:14%'>"
            "<col style='width:11%'><col style='width:13%'><col style='width:15%'></colgroup>"
            "<tr><th>Question</th><th>You predicted</th><th>Your instrument showed</th>"
            "<th>Verdict</th><th>Points</th><th>When (UTC)</th></tr>")
    return f"<table class='items'>{head}{''.join(rows)}</table>", calib


def _shown(value: Any, info, units: str) -> str:
    label = info.label_of(value) if info and value is not None else None
    return _e(label) if label else _num(value, units)


def _readings(ig, evs, first, info, units: str) -> str:
    """What the prediction was judged against (the first reading after it, or the course's
    answer), then any later readings, marked as later: a re-measurement after the deadline,
    on another device, never replaces the reading that was graded."""
    results = [e for e in evs if e.kind == "result" and e.order > first.order
               and "actual" in e.payload]
    if ig.graded_from == "answer":
        head = f"{_shown(ig.graded_actual, info, units)}<br><span class='muted'>(the course's " \
               "answer, which this was graded against)</span>"
    elif ig.graded_from == "result":
        head = _shown(ig.graded_actual, info, units)
        results = [e for e in results if e.order != ig.graded_order]
        if results:
            head += "<br><span class='muted'>graded against this first reading</span>"
    elif results:
        head = _shown(results[0].payload.get("actual"), info, units)
        results = results[1:]
    else:
        return "not seen yet"
    later = [f"{_shown(e.payload.get('actual'), info, units)} ({_when(e.time)})"
             for e in results if not (ig.graded_from == "result" and e.order < (
                 ig.graded_order or 0))][-3:]
    if later:
        head += "<br><span class='muted'>later: " + "; ".join(later) + "</span>"
    return head


def _when(t) -> str:
    return t.strftime("%Y-%m-%d %H:%M") if t else "–"


def _times(ig, g: LabGrade) -> str:
    """The graded events' times (the prediction; observed and explained), late ones marked
    with what the penalty kept."""
    late = {what: (lateness, factor) for what, _, lateness, factor in ig.late_parts}
    out = []
    for what, label, t in (("prediction", "predicted", ig.predicted_at),
                           ("explanation", "explained", ig.explained_at)):
        if t is None:
            continue
        text = f"{label} {_when(t)}"
        if what in late:
            lateness, factor = late[what]
            text += (f" <span class='danger'>late {_e(_duration(lateness))}, × {factor:g}"
                     "</span>")
        out.append(text)
    return "<br>".join(out) or "<span class='muted'>–</span>"


def _duration(d) -> str:
    """``2 d 3 h 5 min`` (minutes rounded up, so "3 d" is never a little over three days)."""
    minutes = math.ceil(d.total_seconds() / 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, mins = divmod(rest, 60)
    parts = [f"{days} d" if days else "", f"{hours} h" if hours or days and mins else "",
             f"{mins} min" if mins or not (days or hours) else ""]
    return " ".join(p for p in parts if p)


def _late_terms(parts, config) -> str:
    """The late parts grouped by what they keep: ``12.5 points done 2 d 12 h 3 min to
    2 d 12 h 32 min late × 0.7 (3 started days × 10% off)``."""
    groups: dict[float, list] = {}
    for points, lateness, factor in parts:
        groups.setdefault(factor, []).append((points, lateness))
    out = []
    for factor, got in sorted(groups.items(), reverse=True):
        points = round(sum(p for p, _ in got), 4)
        lo, hi = min(t for _, t in got), max(t for _, t in got)
        when = _duration(lo) if _duration(lo) == _duration(hi) else \
            f"{_duration(lo)} to {_duration(hi)}"
        days = math.ceil(hi / timedelta(days=1))
        why = ("late work earns nothing" if config.late_policy == "deadline" else
               f"{days} started day{'s' if days != 1 else ''} × "
               f"{config.late_penalty_per_day:.0%} off")
        out.append(f"{points:g} point{'s' if points != 1 else ''} done {when} late × "
                   f"{factor:g} ({why})")
    return " + ".join(out)


def _lab_timing(g: LabGrade, lab, config) -> str:
    """The deadline that applied, the lateness and the late-penalty arithmetic, in words."""
    if g.deadline is None:
        return ""
    ext = (" (with your extension)" if lab.deadline is not None and g.deadline != lab.deadline
           else "")
    text = f"Deadline {g.deadline.strftime('%Y-%m-%d %H:%M')} UTC{ext}. "
    if g.status != "Late":
        text += ("Everything graded was done by then." if g.submitted else "")
        return f"<p class='meta'>{text}</p>"
    text += f"Last graded work {_duration(g.lateness)} after it. "
    parts = [(ig.item_id, what, pts, lateness, factor) for ig in g.items
             if ig.override is None for what, pts, lateness, factor in ig.late_parts]
    if not parts:
        return f"<p class='meta'>{_e(text)}</p>"
    if config.late_policy == "deadline":
        rule = "work done after the deadline earns nothing"
    else:
        rule = (f"work done after the deadline loses {config.late_penalty_per_day:.0%} per "
                "started day late" if config.late_penalty_per_day else "no late penalty")
    on_time = round(sum(i.points for i in g.items) - sum(
        round(p * f, 4) for *_, p, _, f in parts), 4)
    terms = _late_terms([(p, late, f) for *_, p, late, f in parts], config)
    arithmetic = (f"{on_time:g} point{'s' if on_time != 1 else ''} on time + {terms} = "
                  f"{g.points:g} points"
                  if g.override is None else f"the instructor set {g.points:g} points")
    return (f"<p class='meta'>{_e(text)}Rule: {_e(rule)}. {_e(arithmetic)}.</p>")


def ratio_text(value: Any, actual: Any, tolerance: float | None) -> str:
    """How far off, in the lab's words, with the tolerance the grade used."""
    if isinstance(value, bool) or isinstance(actual, bool) or not isinstance(
            value, (int, float)) or not isinstance(actual, (int, float)):
        return ""
    try:
        p, a = float(value), float(actual)
    except OverflowError:
        return ""
    words = None if p <= 0 or a <= 0 else ratio_verdict(
        value, actual, **({"tolerance": tolerance} if tolerance else {}))
    return f"<span class='muted'>{_e(words)}</span>" if words else ""


def _calibration(calib: list[tuple[int, bool]]) -> str:
    if not calib:
        return "<p class='muted'>No prediction has a verdict yet.</p>"
    rows = []
    for level in range(1, 6):
        hits = [ok for c, ok in calib if c == level]
        share = f"{sum(hits) / len(hits):.0%}" if hits else "–"
        rows.append(f"<tr><td>{level}</td><td class='num'>{len(hits)}</td>"
                    f"<td class='num'>{sum(hits)}</td><td class='num'>{share}</td></tr>")
    return ("<table><tr><th>Confidence</th><th>Predictions</th><th>Right</th><th>Share right"
            "</th></tr>" + "".join(rows) + "</table><p class='muted'>When your confidence is "
            "well calibrated, the share right rises with it.</p>")


def feedback_page(book: Gradebook, batch: Batch, student_id: str, *,
                  items: dict | None = None) -> str:
    """One student's feedback page (HTML text). ``items``: the catalogue by item id."""
    from labs.core.ui.tokens import COLORS  # plotly comes with it: only when pages are made

    items = items if items is not None else {i.item_id: i for i in _catalogue.items()}
    roster = book.config.roster.get(student_id) if book.config.roster else None
    mine = batch.for_student(student_id)
    parts, calib, lab_flags = [], [], []
    summary = []
    for lab in book.labs:
        g = book.grades[(student_id, lab.lab_id)]
        when = g.submitted.strftime("%Y-%m-%d %H:%M UTC") if g.submitted else "–"
        late = f" ({_duration(g.lateness)})" if g.status == "Late" else ""
        deadline = g.deadline.strftime("%Y-%m-%d %H:%M UTC") if g.deadline else "–"
        summary.append(f"<tr><td>{_e(lab.title)}</td><td class='num'>{g.points:g} / "
                       f"{g.max_points:g}</td><td>{_e(g.status + late)}</td>"
                       f"<td>{_e(deadline)}</td><td>{_e(when)}</td></tr>")
        table, c = _item_rows([e for e in mine if e.lab_id == lab.lab_id], g, items)
        calib += c
        lab_flags += [(f"{lab.title}: ", f) for f in g.flags]
        comment = f"<p class='note'>Instructor: {_e(g.comment)}</p>" if g.comment else ""
        parts.append(f"<h3>{_e(lab.title)}: {g.points:g} / {g.max_points:g} · "
                     f"{_e(g.status)}</h3>{_lab_timing(g, lab, book.config)}{comment}{table}")
    flags = [("", _student_facing(f)) for f in book.student_flags.get(student_id, [])] + [
        (w, _student_facing(f)) for w, f in lab_flags]
    notes = "".join(f"<div class='note'>{_e(n)}</div>" for n in book.notes.get(student_id, []))
    name = f" · {_e(roster.name)}" if roster and roster.name else ""
    total = sum(book.grades[(student_id, lab.lab_id)].points for lab in book.labs)
    most = sum(book.grades[(student_id, lab.lab_id)].max_points for lab in book.labs)
    css = string.Template(_CSS).substitute(COLORS)
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>Feedback · {_e(student_id)}</title><style>{css}</style></head><body>"
        f"<h1>Roofline Labs feedback · {_e(student_id)}{name}</h1>"
        f"<p class='meta'>{_e(book.config.name or 'Roofline Labs')} · generated "
        f"{datetime.now(timezone.utc).strftime('%Y-%m-%d')} · total {total:g} / {most:g} "
        "points</p>"
        "<h2>Labs</h2><table><tr><th>Lab</th><th>Points</th><th>Status</th><th>Deadline</th>"
        "<th>Last graded work</th></tr>" + "".join(summary) + "</table>"
        "<p class='muted'>Each prediction earns points for committing before the reveal, for a "
        "confidence and a reason, and for observing and explaining afterwards; being right is "
        "reported (and counts only if your instructor says so). A line edited after the lab "
        "wrote it earns nothing.</p>"
        "<h2>Your predictions and what the instruments showed</h2>" + "".join(parts)
        + "<h2>Calibration</h2>" + _calibration(calib)
        + "<h2>Flags</h2>" + _flags_html(flags)
        + (f"<h2>Notes</h2>{notes}" if notes else "") + "</body></html>")


_INDEX_WORDS = {"wrong": "grade may be wrong", "check": "worth a look", "info": "notes only",
                "": "–"}
_INDEX_ORDER = {"wrong": 0, "check": 1, "info": 2, "": 3}


def index_entry(book: Gradebook, sid: str, page: str, error: str = "") -> tuple:
    """One student's line of ``index.html``: (severity, id, name, total, most, statuses,
    page file name, why there is no page)."""
    roster = book.config.roster
    entry = roster.get(sid) if roster else None
    name = entry.name if entry and entry.name else (None if roster else "")
    total = sum(book.grades[(sid, lab.lab_id)].points for lab in book.labs)
    most = sum(book.grades[(sid, lab.lab_id)].max_points for lab in book.labs)
    status = ", ".join(sorted({book.grades[(sid, lab.lab_id)].status for lab in book.labs}))
    return (student_severity(book, sid), sid, name, total, most, status, page, error)


def write_pages(book: Gradebook, batch: Batch, folder: str | os.PathLike,
                students: list[str] | None = None, items: dict | None = None) -> list[tuple]:
    """Write the pages of ``students`` (default: all) into ``folder``; their
    :func:`index_entry` lines (a page that cannot be made is listed with why, never fatal)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    items = items if items is not None else {i.item_id: i for i in _catalogue.items()}
    out = []
    for sid in book.students if students is None else students:
        path = folder / page_name(sid)
        try:
            path.write_text(feedback_page(book, batch, sid, items=items), encoding="utf-8",
                            errors="replace")
        except Exception as exc:  # noqa: BLE001 - one page must never stop the others
            out.append(index_entry(book, sid, "", type(exc).__name__))
            continue
        out.append(index_entry(book, sid, path.name))
    return out


def write_index(folder: str | os.PathLike, title: str, entries: list[tuple]) -> Path:
    """``index.html``: every student's page, the ones whose grade may be wrong first."""
    from labs.core.ui.tokens import COLORS

    rows = []
    pages = 0
    for level, sid, name, total, most, status, page, error in sorted(
            entries, key=lambda x: (_INDEX_ORDER[x[0]], x[1])):
        who = _e(name) if name else ("<span class='muted'>not on the roster</span>"
                                     if name is None else "")
        if not page:
            rows.append(f"<tr><td>{_e(sid)}</td><td>{who}</td><td colspan='3'>no page "
                        f"({_e(error)})</td></tr>")
            continue
        pages += 1
        rows.append(f"<tr><td><a href='{_e(page)}'>{_e(sid)}</a></td><td>{who}</td>"
                    f"<td class='num'>{total:g} / {most:g}</td><td>{_e(status)}</td>"
                    f"<td class='{level}'>{_INDEX_WORDS[level]}</td></tr>")
    css = string.Template(_CSS).substitute(COLORS)
    title = _e(title or "Roofline Labs")
    path = Path(folder) / "index.html"
    path.write_text(
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width,initial-scale=1'>"
        f"<title>Feedback pages · {title}</title><style>{css}</style></head><body>"
        f"<h1>Feedback pages · {title}</h1><p class='meta'>{pages} students, the ones "
        "whose grade may be wrong first. Each page is ready to return to its student.</p>"
        "<table><tr><th>Student</th><th>Name</th><th>Points</th><th>Status</th><th>Flags</th>"
        "</tr>" + "".join(rows) + "</table></body></html>", encoding="utf-8")
    return path


def write_feedback(book: Gradebook, batch: Batch, folder: str | os.PathLike) -> list[Path]:
    """Write one page per student and an ``index.html`` into ``folder``; the pages' paths.

    A student whose page cannot be made is listed in the index with the reason (never fatal).
    """
    entries = write_pages(book, batch, folder)
    write_index(folder, book.config.name, entries)
    return [Path(folder) / e[6] for e in entries if e[6]]
