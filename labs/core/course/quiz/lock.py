"""The prediction lock and its forms: lock state seeded from the ledger, numeric and choice forms,
the locked card, and the notice a closed gate shows.

A form's submission becomes a :class:`Prediction` through :class:`LockHandler`, which commits
it with :meth:`LabSession.commit` (first answer wins) and sets the lock state. Part of
:mod:`labs.core.course.quiz` (import it through that name).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import marimo as mo

from labs.core.course import ledger as _ledger
from labs.core.course.quiz import reveal as _reveal
from labs.core.course.quiz.prediction import (
    CONFIDENCE_OPTIONS,
    MAX_REASON_CHARS,
    Prediction,
)
from labs.core.course.quiz.session import LabSession
from labs.core.course.quiz.status import stack_elements
from labs.core.ui import style
from labs.core.ui.numbers import as_stored, check_number, comma_reading, examples, plain

__all__ = [
    "LOCK_LABEL", "LockHandler", "MOVE_SLIDER", "PredictionForm", "choice_form", "gate_notice",
    "lock_state", "locked_card_html", "log_steps", "numeric_form", "prediction_panel",
    "simulate_submit"
]

LOCK_LABEL = "Lock prediction"
#: What a slider form says to a submission that is not one of its positions.
MOVE_SLIDER = "Move the slider to your prediction, then lock it."


def lock_state(lab: LabSession, item_id: str):
    """``(get, set)`` for one prediction, seeded from the ledger so a reload restores the lock.

    ``get()`` is the locked :class:`Prediction` or None. Assign both to notebook globals.
    """
    return mo.state(lab.first_prediction(item_id), allow_self_loops=True)


def _check_bounds(lo: Any, hi: Any, log_scale: bool) -> tuple[float, float]:
    for name, v in (("lo", lo), ("hi", hi)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{name} must be a finite number, got {v!r}")
    if not lo < hi:
        raise ValueError(f"lo must be < hi, got lo={lo!r}, hi={hi!r}")
    if log_scale and lo <= 0:
        raise ValueError(f"lo must be > 0 with log_scale=True, got {lo!r}")
    return float(lo), float(hi)


def log_steps(lo: float, hi: float) -> list[float]:
    """Round numbers (1, 1.5, 2, 3, 5, 7 per decade) from lo to hi, lo and hi included."""
    mantissas = (1, 1.5, 2, 3, 5, 7)
    steps = {lo, hi}
    for exp in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in mantissas:
            v = float(f"{m * 10.0 ** exp:.6g}")
            if lo < v < hi:
                steps.add(v)
    return sorted(int(v) if v == int(v) and abs(v) < 2**53 else v for v in steps)


@dataclass(frozen=True, eq=False)
class PredictionForm:
    """A quiz form: marimo's form and what the quiz needs beside it, as typed fields (nothing
    is set on marimo's object). Shown in a cell, it draws as its form.

    ``handler`` is what a submission goes through (a :class:`LockHandler` for a prediction,
    the explain form's handler for observe-and-explain); ``question`` is empty for an
    explain form."""

    form: Any  # the mo.ui.form the student submits
    item_id: str
    handler: Any
    question: str = ""

    def _mime_(self) -> tuple[str, str]:
        return self.form._mime_()

    @property
    def text(self) -> str:
        """The form's HTML (as marimo's ``Html.text``): what a cell showing it renders."""
        return self.form.text

    def submit(self, raw: Any) -> None:
        """Hand ``raw`` (what the browser sends) to the handler, as marimo's on_change does:
        the same conversion (:meth:`LockHandler.from_frontend`), the same handler."""
        convert = getattr(self.handler, "from_frontend", None)
        self.handler(convert(raw) if convert is not None else raw)


_OFF_SLIDER = object()  # from_frontend's answer when a slider form sent no index of a step


class LockHandler:
    """The form's on_change: turn a submission into a locked Prediction, record it, call back.

    Also checks the submission (the browser checks it first through the form's ``validate``;
    a submission that arrives some other way and is invalid is ignored, never raised).
    """

    def __init__(self, lab: LabSession, item_id: str, *, answer_type: str, units: str,
                 lo: float | None = None, hi: float | None = None,
                 options: Mapping[str, Any] | None = None,
                 steps: list | None = None, on_lock: Callable[[Prediction], None],
                 integer: bool = False):
        self.lab, self.item_id, self.answer_type, self.units = lab, item_id, answer_type, units
        self.lo, self.hi, self.options, self.steps, self.on_lock = lo, hi, options, steps, on_lock
        self.integer = integer
        self.last_error: str | None = None
        self.start: Any = None  # a slider's starting value (locking it needs a second press)
        self._previewed: Any = None  # the value the last "You are locking ..." named

    # raw = what the browser sends (text, slider index, option label); value = marimo's value
    def from_frontend(self, raw: Any) -> dict:
        raw = raw if isinstance(raw, dict) else {}
        answer = raw.get("answer")
        if self.steps is not None:
            # a slider sends the index of one of its steps; anything else (an index out of
            # range, a number, text) is no position of the slider and is never read as a value
            in_range = type(answer) is int and 0 <= answer < len(self.steps)
            answer = self.steps[answer] if in_range else _OFF_SLIDER
        elif self.options is not None:
            answer = self.options.get(answer) if isinstance(answer, str) else None
        conf = raw.get("confidence")
        return {"answer": answer, "reason": raw.get("reason"),
                "confidence": CONFIDENCE_OPTIONS.get(conf) if isinstance(conf, str) else None,
                "_label": raw.get("answer") if self.options is not None else None}

    def preview(self, value: dict, prediction: Prediction) -> str | None:
        """What to say before a numeric lock whose stored value is not plainly what the student
        typed ("5,5", "2.4 ms", "4k tokens"), or whose slider was never moved: "You are
        locking 5.5 ×" and that a second press locks it. None when nothing needs saying."""
        if self.answer_type != "numeric":
            return None
        stored = as_stored(prediction.value, self.units)
        if self.steps is not None:
            if prediction.value != self.start:
                return None
            message = (f"The slider is still where it started ({stored}). If {stored} is your "
                       f"prediction, press “{LOCK_LABEL}” again to lock it; otherwise move "
                       "the slider first.")
        else:
            typed = str(value.get("answer") or "").strip()
            if typed == as_stored(prediction.value):
                return None
            how = comma_reading(typed, prediction.value, units=self.units)
            message = (f"You are locking {stored} (you typed “{typed[:40]}”"
                       f"{': ' + how if how else ''}). Press "
                       f"“{LOCK_LABEL}” again to lock it, or correct the box first.")
        return message

    def check(self, value: Any) -> tuple[Prediction | None, str | None]:
        """(prediction, None) for a valid submission, else (None, message for the student)."""
        if not isinstance(value, dict):
            return None, "Fill in the form first."
        answer, conf, reason = value.get("answer"), value.get("confidence"), value.get("reason")
        label = None
        if self.options is not None:
            label = value.get("_label")
            if label is None:
                label = next((k for k, v in self.options.items() if v == answer), None)
            if answer is None or label is None:
                return None, "Choose one of the options."
        else:
            if self.steps is not None and (answer is _OFF_SLIDER or isinstance(answer, bool) or
                                           not isinstance(answer, (int, float))
                                           or answer not in self.steps):
                return None, MOVE_SLIDER  # a slider's value is one of its steps, nothing else
            if answer is None or isinstance(answer, bool) \
                    or not isinstance(answer, (str, int, float)):
                return None, (f"Enter your prediction as a number (e.g. "
                              f"{examples(self.lo, self.hi)}).")
            # one reading rule (labs.core.ui.numbers): decimal commas, the question's units,
            # whole numbers for counts; out of range is refused, never clamped or rounded
            # previewed: validate says "You are locking ..." (and how a comma was read)
            # before a value that is not plainly what was typed is locked
            number, error = check_number(answer, lo=self.lo, hi=self.hi, integer=self.integer,
                                         units=self.units, previewed=True)
            if error is not None:
                return None, error
            answer = number
        if not (isinstance(conf, int) and 1 <= conf <= 5) or isinstance(conf, bool):
            return None, "Choose how confident you are (1-5)."
        if not isinstance(reason, str) or not reason.strip():
            return None, "Write one line on why you expect this."
        if len(reason) > MAX_REASON_CHARS or "\n" in reason.strip():
            return None, f"Keep the reason to one line (at most {MAX_REASON_CHARS} characters)."
        return Prediction(item_id=self.item_id, value=answer, units=self.units,
                          confidence=conf, reason=reason.strip(), timestamp=_ledger.utc_now(),
                          label=label, answer_type=self.answer_type), None

    def validate(self, raw: Any) -> str | None:
        """The form's ``validate``: a message shown in the form instead of submitting. A
        numeric answer whose stored value needs saying first (:meth:`preview`) is refused once
        with "You are locking ..."; pressing again with the same value locks it."""
        value = self.from_frontend(raw)
        prediction, error = self.check(value)
        if prediction is None:
            self._previewed = None
            return error
        message = self.preview(value, prediction)
        if message is None or self._previewed == prediction.value:
            self._previewed = None
            return None
        self._previewed = prediction.value
        return message

    def __call__(self, value: Any) -> None:
        if value is None:
            return
        prediction, error = self.check(value)
        self.last_error = error
        if prediction is None:
            return
        locked = self.lab.commit(prediction)
        self.on_lock(locked)


def _prediction_form(handler: LockHandler, answer_element, question: str,
                     locked: Prediction | None) -> PredictionForm:
    disabled = locked is not None
    confidence = mo.ui.radio(
        CONFIDENCE_OPTIONS, inline=True, disabled=disabled, label="Confidence",
        value=next((k for k, v in CONFIDENCE_OPTIONS.items()
                    if locked is not None and v == locked.confidence), None))
    reason = mo.ui.text(value=locked.reason if locked else "", max_length=MAX_REASON_CHARS,
                        placeholder="one line: why do you expect this?", full_width=True,
                        disabled=disabled, label="Reason")
    form = stack_elements(answer=answer_element, confidence=confidence, reason=reason).form(
        label=question, submit_button_label=LOCK_LABEL,
        submit_button_disabled=disabled, validate=handler.validate, on_change=handler,
        submit_button_tooltip="Once locked, the prediction cannot be changed." if not disabled
        else "Locked.")
    return PredictionForm(form=form, item_id=handler.item_id, handler=handler,
                          question=question)


def numeric_form(lab: LabSession, item_id: str, *, question: str, units: str, lo: float,
                 hi: float, locked: Prediction | None,
                 on_lock: Callable[[Prediction], None], log_scale: bool = False,
                 integer: bool = False) -> PredictionForm:
    """A bounded numeric prediction: answer, confidence 1-5, one-line reason, "Lock prediction".

    ``log_scale=False``: a text box (accepts 300, 3e5, 300k; no default to anchor on).
    ``log_scale=True``: a slider over round numbers spaced logarithmically from lo to hi.
    ``integer=True``: a count (sequences, tokens): only whole numbers are accepted.
    Out-of-range, fractional (for counts) or missing answers show a message in the form.
    Disabled once ``locked``.
    """
    lab.check_item(item_id)
    lo, hi = _check_bounds(lo, hi, log_scale)
    disabled = locked is not None
    steps = None
    what = ", ".join(x for x in (units, "a whole number" if integer else "") if x)
    if log_scale:
        steps = log_steps(lo, hi)
        start = locked.value if locked is not None and locked.value in steps else \
            min(steps, key=lambda s: abs(math.log(s) - (math.log(lo) + math.log(hi)) / 2))
        answer = mo.ui.slider(steps=steps, value=start, show_value=True, disabled=disabled,
                              full_width=True, label=f"Your prediction ({what})" if what
                              else "Your prediction")
    else:
        answer = mo.ui.text(
            value=str(locked.value) if locked is not None else "",
            placeholder=f"{plain(lo)} to {plain(hi)}", disabled=disabled,
            label=f"Your prediction ({what})" if what else "Your prediction")
    handler = LockHandler(lab, item_id, answer_type="numeric", units=units, lo=lo, hi=hi,
                           steps=steps, on_lock=on_lock, integer=integer)
    handler.start = start if log_scale else None
    return _prediction_form(handler, answer, question, locked)


def choice_form(lab: LabSession, item_id: str, *, question: str, options: Mapping[str, Any],
                locked: Prediction | None,
                on_lock: Callable[[Prediction], None]) -> PredictionForm:
    """Multiple choice twin of :func:`numeric_form`: ``options`` maps label -> value."""
    lab.check_item(item_id)
    if not isinstance(options, Mapping) or len(options) < 2 \
            or not all(isinstance(k, str) and k for k in options):
        raise ValueError(f"options must map at least two labels to values, got {options!r}")
    odd = [k for k, v in options.items() if not (v is None or isinstance(v, (str, int, bool))
                                                   or (isinstance(v, float) and math.isfinite(v)))]
    if odd:  # the value goes into the ledger: it must be plain JSON
        raise ValueError(f"options values must be str, int, float, bool or None (they are "
                         f"recorded in the ledger); not so for {odd!r}")
    label = None
    if locked is not None:
        label = locked.label if locked.label in options else next(
            (k for k, v in options.items() if v == locked.value), None)
    answer = mo.ui.radio(dict(options), value=label, disabled=locked is not None,
                         label="Your prediction")
    handler = LockHandler(lab, item_id, answer_type="choice", units="",
                           options=dict(options), on_lock=on_lock)
    return _prediction_form(handler, answer, question, locked)


def prediction_panel(form: PredictionForm, locked_prediction: Prediction | None):
    """The form while unlocked; once locked, a card with the locked answer (text escaped).
    In the instructor copy (reveal mode) an unlocked item shows its question only: the
    prediction cell's :func:`reveal.card` shows the reference answer under it.

    When this window's submission did not lock its own answer (the item was already locked,
    e.g. in another tab), the card says so and shows the answer that stands.
    """
    if not isinstance(form, PredictionForm):
        raise ValueError("form must come from quiz.numeric_form or quiz.choice_form")
    question = form.question
    if locked_prediction is None:
        if not _reveal.is_revealed():
            return form.form
        # instructor copy: no widget showing a value nobody chose; the reference card follows
        return mo.vstack([mo.md(question), mo.md(
            "*Instructor copy: students lock their own answer in a form here; the reference "
            "answer and its explanation follow.*")])
    notice = form.handler.lab.commit_notices.get(locked_prediction.item_id)
    card = mo.callout(mo.Html(locked_card_html(locked_prediction, notice=notice)),
                      kind="warn" if notice else "success")
    return mo.vstack([mo.md(question), card]) if question else card


def locked_card_html(prediction: Prediction, *, notice: str | None = None) -> str:
    """The locked answer as HTML, every piece of student text escaped; ``notice``: what this
    window's last submission led to, when it was not locked (shown first)."""
    conf = (f" · confidence {prediction.confidence}/5"
            if prediction.confidence is not None else "")
    body = (f"<div><strong>⚠ {html.escape(notice)}</strong></div>" if notice else "")
    body += (f"<div><strong>Locked prediction:</strong> "
             f"{html.escape(prediction.display())}{html.escape(conf)}</div>")
    if prediction.reason:
        body += f"<div><em>Why:</em> {html.escape(prediction.reason)}</div>"
    return body + (f'<div style="font-size:.85em;opacity:.75">'
                   f"{html.escape(_short_time(prediction.timestamp))}"
                   "This is your first committed answer; it stays as it is.</div>")


def _short_time(ts: str) -> str:
    dt = _ledger.parse_ts(ts)
    return f"Locked {dt:%Y-%m-%d %H:%M} UTC. " if dt else ""


def gate_notice(message: str):
    """What a closed gate shows in place of the instrument."""
    return style.gate_notice(message)


def simulate_submit(form: PredictionForm, **values: Any) -> None:
    """Submit ``form`` as a browser would (headless tests): same conversion, same on_change.

    Prediction forms: ``answer=`` (number, or an option *value* or label for choices),
    ``confidence=`` (1-5), ``reason=``. Explain forms: ``observe=``, ``explain=``.
    """
    if not isinstance(form, PredictionForm):
        raise ValueError("form must come from quiz.numeric_form/choice_form/explain_form")
    handler = form.handler
    if not isinstance(handler, LockHandler):  # an explain form
        raw = {"observe": str(values.get("observe", "")), "explain": str(values.get("explain", ""))}
    else:
        answer = values.get("answer")
        if handler.options is not None:
            answer = answer if answer in handler.options else next(
                (k for k, v in handler.options.items() if v == answer), None)
        elif handler.steps is not None:
            answer = min(range(len(handler.steps)),
                         key=lambda i: abs(handler.steps[i] - float(answer)))
        else:
            answer = "" if answer is None else str(answer)
        conf = next((k for k, v in CONFIDENCE_OPTIONS.items()
                     if v == values.get("confidence")), None)
        raw = {"answer": answer, "confidence": conf, "reason": values.get("reason", "")}
    form.submit(raw)
