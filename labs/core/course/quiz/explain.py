"""After the reveal: compare a prediction with what the instrument shows, then observe and explain.

:func:`compare` renders "You predicted X · the instrument shows Y" and records the ``result``;
:func:`explain_form` records the student's ``observe`` and ``explain`` texts. Part of
:mod:`labs.core.course.quiz` (import it through that name).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import marimo as mo

from labs.core.course import ledger as _ledger
from labs.core.course.answers import first_prediction, graded_result
from labs.core.course.quiz.lock import PredictionForm, gate_notice
from labs.core.physics.units import format_value
from labs.core.course.quiz.prediction import (
    Prediction,
    with_units,
    distinct_texts,
    parse_number,
    ratio_off,
    ratio_verdict,
    verdict_kind,
)
from labs.core.course.quiz.session import LabSession
from labs.core.course.quiz.status import stack_elements
from labs.core.physics import misconceptions
from labs.core.ui import style

__all__ = ["MAX_TEXT_CHARS", "compare", "explain_form", "graded_reading", "recorded_comparison",
           "saved_label"]

MAX_TEXT_CHARS = 2000


def compare(prediction: Prediction | None, actual: Any, *, units: str = "",
            fmt: Callable[[Any], str] | str | None = None, actual_label: str | None = None,
            lab: LabSession | None = None):
    """"You predicted X · the instrument shows Y · off by Z×" (numeric) or right/wrong (choice).

    With ``lab=``, the actual value is recorded once as a ``result`` event of the item (again
    only when it changes), so the grader can report correctness against what this student's
    instrument showed. The grade uses the first reading (:func:`graded_reading`): where this
    one differs, a line under the comparison says so, so the page never contradicts the grade.
    """
    if prediction is None:
        return gate_notice("No prediction locked yet.")
    who = "Reference answer" if prediction.reference else "You predicted"
    if prediction.answer_type == "choice":
        right = prediction.value == actual
        shown = actual_label if actual_label is not None else str(actual)
        verdict = "right" if right else "not what you predicted: explain the difference below"
        # a wrong choice is wrong (✗): "≈" is reserved for a number within the graded band
        out = style.comparison_callout(prediction.display(), shown, verdict,
                                       "ok" if right else "danger", predicted_label=who)
        result = {"actual": _jsonable(actual), "correct": right}
    else:
        p, a = parse_number(prediction.value), parse_number(actual)
        if a is None:
            raise ValueError(f"actual must be a finite number, got {actual!r}")
        r = ratio_off(p, a) if p is not None else None
        p_text, a_text = (distinct_texts(p, a, fmt) if r is not None
                          else (format_value(prediction.value, fmt), format_value(a, fmt)))
        shown = with_units(a_text, units)
        if actual_label:  # which case the instrument's number is for, when the page shows others
            shown = f"{shown} ({actual_label})"
        predicted = with_units(p_text, units or prediction.units)
        if r is None:
            verdict, kind = (f"off by {with_units(format_value(abs((p or 0) - a), fmt), units)}",
                             "warn")
        else:  # the item's graded band decides the words: right, close, or off by
            band = misconceptions.tolerance(prediction.item_id)
            verdict = ratio_verdict(p, a, tolerance=band)
            kind = verdict_kind(p, a, tolerance=band)
        out = style.comparison_callout(predicted, shown, verdict, kind, predicted_label=who)
        result = {"actual": a, "units": units, "ratio": r}
    if lab is not None:  # record what this student's instrument showed, once per value
        item = prediction.item_id
        lab.record_result(item, result)
        first = graded_reading(lab, item)
        if first is not None and first["actual"] != result["actual"]:
            shown_first = (format_value(first["actual"], fmt) if prediction.answer_type != "choice"
                           else str(first["actual"]))
            out = mo.vstack([out, mo.md(
                f"Your grade uses your first reading, **{with_units(shown_first, units)}** "
                f"(recorded {first['ts'][:16].replace('T', ' ')} UTC); this later one changes "
                "nothing.")])
    return out


def recorded_comparison(lab: LabSession, prediction: Prediction, *, units: str = "",
                        fmt: Callable[[Any], str] | str | None = None):
    """The comparison with the reading already in the ledger (a page reloaded after a
    measurement: the run is gone, the grade is not), said as the graded one."""
    first = graded_reading(lab, prediction.item_id)
    if first is None:
        return gate_notice("No reading recorded yet.")
    when = first["ts"][:16].replace("T", " ")
    return mo.vstack([mo.md(f"**Prediction vs your recorded reading** (graded: the first "
                            f"reading this lab recorded after your prediction, {when} UTC; "
                            "measuring again shows a later reading, which changes nothing):"),
                      compare(prediction, first["actual"], units=units, fmt=fmt)])


def graded_reading(lab: LabSession, item_id: str) -> dict | None:
    """The reading of ``item_id``'s instrument the grader judges the prediction against
    (``answers.graded_result``, labs-grade's one rule), as ``{"actual": ..., "ts": ...}``;
    None before there is one."""
    events = lab.events(item_id)
    first = first_prediction(events)
    if first is None:
        return None
    result = graded_result(first, events[events.index(first) + 1:])
    if result is None:
        return None
    return {"actual": result["payload"].get("actual"), "ts": str(result.get("ts", ""))}


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return str(value)


class _ExplainHandler:
    """The explain form's on_change: record, then say what happened in place of the form.

    The new form (pre-filled, labelled "Saved ✓ at <time>") replaces the cell's output at
    once (``mo.output.replace`` runs in the context of the cell that made the form), so the
    student sees the save without a reload; it is kept on the lab so marimo keeps it alive.
    """

    def __init__(self, lab: LabSession, item_id: str, labels: dict):
        self.lab, self.item_id, self.labels = lab, item_id, labels
        self.feedback: str | None = None  # what the last submission did, in words

    @staticmethod
    def check(value: Any) -> str | None:
        if not isinstance(value, dict):
            return "Fill in both boxes."
        for key, what in (("observe", "what the instrument shows"),
                          ("explain", "your explanation")):
            text = value.get(key)
            if not isinstance(text, str) or len(text.strip()) < 3:
                return f"Write {what}."
            if len(text) > MAX_TEXT_CHARS:
                return f"Keep {what} under {MAX_TEXT_CHARS} characters."
        return None

    def __call__(self, value: Any) -> None:
        if value is None or self.check(value) is not None:
            return
        lab, item = self.lab, self.item_id
        observe, explain = value["observe"].strip(), value["explain"].strip()
        if (observe, explain) == (lab.last_text(item, "observe"), lab.last_text(item, "explain")):
            last = lab.events(item, "explain")
            self.feedback = "No change since your last save" + (
                _when(last[-1].get("ts")) if last else "") + "."
        else:
            lab.record("observe", item, {"text": observe})
            event = lab.record("explain", item, {"text": explain})
            self.feedback = saved_label(lab, event)
        view = explain_form(lab, item, **self.labels, _status=self.feedback)
        lab.keep_explain_view(item, view)
        mo.output.replace(view)  # a no-op outside a running notebook (headless tests)


def _when(ts: Any) -> str:
    dt = _ledger.parse_ts(ts)
    return f" at {dt:%H:%M:%S} UTC on {dt:%Y-%m-%d}" if dt else ""


def saved_label(lab: LabSession, event: dict | None) -> str:
    """"Saved ✓ at <time>" and where it went, for the newest ``explain`` event (or None: kept
    until the student id is given)."""
    if event is None:
        return ("Saved ✓ for now: it is written to your ledger as soon as you enter your "
                "student id (top of the lab).")
    where = ("in memory only: download your ledger before closing the lab"
             if lab.ledger is not None and lab.ledger.mode == "memory" else "in your ledger")
    return f"Saved ✓{_when(event.get('ts'))}, {where}. You can edit and save again."


def explain_form(lab: LabSession, item_id: str, *, observe_label: str, explain_label: str,
                 _status: str | None = None) -> PredictionForm:
    """Observe and explain: two text boxes; "Save" records an ``observe`` and an ``explain``
    event and says so at once ("Saved ✓ at <time>", or "No change" when the texts are the ones
    already saved). Pre-filled with the last saved texts, so a reload shows them (with the time
    of that save); saving again appends new events (nothing is overwritten)."""
    lab.check_item(item_id)
    handler = _ExplainHandler(lab, item_id, {"observe_label": observe_label,
                                             "explain_label": explain_label})
    saved = lab.events(item_id, "explain")
    status = _status or (saved_label(lab, saved[-1]) if saved else "")
    form = stack_elements(
        observe=mo.ui.text_area(value=lab.last_text(item_id, "observe"), rows=2,
                                max_length=MAX_TEXT_CHARS, full_width=True,
                                label=observe_label),
        explain=mo.ui.text_area(value=lab.last_text(item_id, "explain"), rows=3,
                                max_length=MAX_TEXT_CHARS, full_width=True,
                                label=explain_label),
    ).form(submit_button_label="Save", validate=handler.check, on_change=handler,
            label=status, bordered=not status)
    # marimo frames a form amber until it is submitted on this page, even when it holds the
    # texts already saved (after a reload): a saved form is drawn without the frame, so it
    # does not say "unsaved" next to "Saved ✓"; an unsaved one keeps marimo's amber card.
    return PredictionForm(form=form, item_id=item_id, handler=handler)
