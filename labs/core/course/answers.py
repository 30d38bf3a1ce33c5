"""What a prediction is and when it counts as right: the rules the lab, the grader, the feedback
page and the class dashboard share. No marimo here: ``labs-grade`` imports it.

- :class:`Prediction`: a committed prediction, as the lock holds it and a ``predict`` event
  records it.
- **The first prediction counts** (:func:`first_prediction`): an item's graded prediction is
  its first ``predict`` event that holds a value (a ``payload`` with a ``"value"`` that is not
  null). A ``predict`` without one is no prediction: it neither locks the item nor counts.
  The lab's lock, the ledger's commit, the grader, the feedback page and the dashboard all
  call this one function.
- **Reasoned** (:func:`is_reasoned`): the prediction states a confidence of 1 to 5 and a reason
  that is not blank.
- **Within a tolerance** (:func:`within_factor`): a number ``p`` is within a factor ``t``
  (>= 1) of ``a`` when both are non-zero and finite, have the same sign, and
  ``max(p/a, a/p) <= t``. The comparison is **exact on the decimals the numbers print as**
  (Python's shortest round-trip form, the digits a student typed and a ledger records): 1.05
  against 0.7 is exactly 1.5 times off, so it is within 1.5, although the binary floats'
  quotient is 1.5000000000000002. The boundary itself is inside (``<=``).
- :func:`ratio_off`, :func:`ratio_verdict` and :func:`verdict_kind`: how many times off, in
  the words a lab's comparison and a feedback page both show.
- **A computed reference** (:func:`reference_value`): a number a model computes is graded
  as :data:`REFERENCE_FIGURES` (3) significant figures, the reference a reveal holds and the
  actual its comparison grades against rounded by this one function, so the two agree.

Part of :mod:`labs.core.course` (``quiz`` re-exports these names for the labs).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Iterable

from labs.core.physics import misconceptions
from labs.core.physics.units import format_value

__all__ = ["CONFIDENCE_LEVELS", "GRADE_TOLERANCE", "REFERENCE_FIGURES", "SPOT_ON_RATIO",
           "finite_number", "first_prediction", "graded_result", "holds_value", "is_reasoned",
           "Prediction", "ratio_off", "ratio_verdict", "reference_value", "verdict_kind",
           "with_units", "within_factor"]

#: The confidence a student may state, 1 (a guess) to 5 (sure).
CONFIDENCE_LEVELS = (1, 2, 3, 4, 5)
#: A prediction this close (as a ratio) is called right, not "off by 1×".
SPOT_ON_RATIO = 1.005
#: The tolerance of an item without one of its own (each lab's items have their own:
#: :func:`labs.core.physics.misconceptions.tolerance`).
GRADE_TOLERANCE = misconceptions.DEFAULT_TOLERANCE
#: The significant figures of a computed reference answer (:func:`reference_value`).
REFERENCE_FIGURES = 3


@dataclass(frozen=True)
class Prediction:
    """A committed prediction. Tests construct it directly: ``Prediction("lab01.x", 300.0)``.

    ``value`` is a number (numeric items) or the option's value (choice items, whose ``label``
    is the text the student picked). ``timestamp`` is the UTC ISO time of the ``predict`` event.
    ``reference`` marks the instructor copy's reference answer (``reveal.reference``),
    whose ``reason`` is the reference explanation; it is never recorded in a ledger.
    """

    item_id: str
    value: Any
    units: str = ""
    confidence: int | None = None
    reason: str = ""
    timestamp: str = ""
    label: str | None = None
    answer_type: str = "numeric"  # "numeric" | "choice"
    seq: int | None = None
    reference: bool = False

    def display(self, fmt: Callable[[Any], str] | str | None = None) -> str:
        """The answer as text: the option label, or the number with its units."""
        if self.answer_type == "choice":
            return self.label if self.label is not None else str(self.value)
        return with_units(format_value(self.value, fmt), self.units)

    def payload(self) -> dict:
        """The ``predict``/``revise`` event payload for this prediction."""
        out = {"value": self.value, "answer_type": self.answer_type, "units": self.units,
               "confidence": self.confidence, "reason": self.reason}
        if self.label is not None:
            out["label"] = self.label
        return out

    @classmethod
    def from_event(cls, event: Mapping) -> "Prediction | None":
        """The prediction a ``predict``/``revise`` event records, or None if it holds none
        (:func:`holds_value`)."""
        p = event.get("payload") if isinstance(event, Mapping) else None
        if not holds_value(p):
            return None
        conf = p.get("confidence")
        label = p.get("label")
        return cls(
            item_id=str(event.get("item_id", "")), value=p["value"],
            units=str(p.get("units") or ""),
            confidence=conf if isinstance(conf, int) and not isinstance(conf, bool) else None,
            reason=str(p.get("reason") or ""), timestamp=str(event.get("ts", "")),
            label=label if isinstance(label, str) else None,
            answer_type="choice" if p.get("answer_type") == "choice" else "numeric",
            seq=event.get("seq") if isinstance(event.get("seq"), int) else None,
        )

    def same_answer(self, other: "Prediction") -> bool:
        return (self.value, self.confidence, self.reason.strip()) == (
            other.value, other.confidence, other.reason.strip())


def with_units(text: str, units: str) -> str:
    """``"300 GB/s"``: a number's text and its units (the text alone without units)."""
    return f"{text} {units}".strip() if units else text


# --- which prediction counts ------------------------------------------------------------------

def _field(event: Any, name: str) -> Any:
    """A field of an event as a ledger dict or as the grader's record (an attribute)."""
    if type(event) is dict or isinstance(event, Mapping):
        return event.get(name)
    return getattr(event, name, None)


def holds_value(payload: Any) -> bool:
    """Whether a ``predict``/``revise`` payload holds an answer: a ``"value"`` that is not
    null."""
    return (type(payload) is dict or isinstance(payload, Mapping)) and \
        payload.get("value") is not None


def first_prediction(events: Iterable[Any], item_id: str | None = None) -> Any:
    """The event that is the graded prediction: the first ``predict`` (of ``item_id``, if
    given) holding a value (:func:`holds_value`), in the order given; None if there is none.

    ``events`` are ledger dicts or records with ``kind``, ``item_id`` and ``payload``
    attributes (the grader's); the caller decides which events are trusted (the grader passes
    only lines whose hash matches)."""
    for e in events:
        if _field(e, "kind") == "predict" and holds_value(_field(e, "payload")) and (
                item_id is None or _field(e, "item_id") == item_id):
            return e
    return None


def finite_number(value: Any) -> float | None:
    """``value`` as a finite float, or None for what no ratio can use: a bool, text, None,
    inf, nan, or an integer too large for a float."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        v = float(value)
    except OverflowError:  # an integer of hundreds of digits: no ratio means anything
        return None
    return v if math.isfinite(v) else None


def graded_result(first: Any, later: Iterable[Any]) -> Any:
    """The reading the prediction ``first`` is graded against: the first ``result`` event of
    ``later`` (the events after it, in order) that can judge it. For a choice, one stating
    ``correct`` (a bool) or an ``actual``; for a number, one whose ``actual`` is a finite
    number. Later readings (a re-measurement) change nothing; None where none can judge.

    The one rule: labs-grade grades against this event, and the lab's comparison says which
    reading is graded with it (``quiz.graded_reading``)."""
    choice = (_field(first, "payload") or {}).get("answer_type") == "choice"
    for e in later:
        if _field(e, "kind") != "result":
            continue
        payload = _field(e, "payload") or {}
        if choice:
            if isinstance(payload.get("correct"), bool) or "actual" in payload:
                return e
        elif finite_number(payload.get("actual")) is not None:
            return e
    return None


def is_reasoned(payload: Any) -> bool:
    """Whether a prediction states a confidence (an integer 1-5, not a bool) and a reason that
    is not blank."""
    if not isinstance(payload, Mapping):
        return False
    conf, reason = payload.get("confidence"), payload.get("reason")
    return (isinstance(conf, int) and not isinstance(conf, bool) and conf in CONFIDENCE_LEVELS
            and isinstance(reason, str) and bool(reason.strip()))


# --- how far off, and the boundary ------------------------------------------------------------

def ratio_off(predicted: Any, actual: Any) -> float | None:
    """How many times off (>= 1), or None when a ratio means nothing: zero, opposite signs,
    not finite, or not a number (a bool is not one). The one rule for the lab's comparison, the
    grade and the class dashboard."""
    if isinstance(predicted, bool) or isinstance(actual, bool) \
            or not isinstance(predicted, (int, float)) or not isinstance(actual, (int, float)):
        return None
    try:
        p, a = float(predicted), float(actual)
    except OverflowError:  # an integer of hundreds of digits: no ratio means anything
        return None
    if not (math.isfinite(p) and math.isfinite(a)) or p == 0 or a == 0 or (p > 0) != (a > 0):
        return None
    r = p / a
    return max(r, 1 / r)


#: How far the floating-point ratio may be from the exact one: far more than a division's
#: rounding, far less than any tolerance a course sets. Inside it the exact rule decides.
_NEAR = 1e-9


def _decimal(x: Any) -> Fraction:
    """A number as the decimal it prints as (an int exactly; a float by its shortest
    round-trip repr: 1.05 is 105/100, not the binary float's 1.05000000000000004440...)."""
    if isinstance(x, int):
        return Fraction(x)
    return Fraction(repr(float(x)))


def reference_value(value: Any) -> float:
    """A computed answer as it is graded: rounded to :data:`REFERENCE_FIGURES` significant
    figures (``0.15638`` -> ``0.156``, ``1234.5`` -> ``1230.0``), the digits the page prints.
    A lab's reference answer and the actual its comparison grades against both come through
    here, so they are the same number. ValueError for anything but a finite number."""
    v = finite_number(value)
    if v is None:
        raise ValueError(f"a reference answer must be a finite number, got {value!r}")
    return float(f"{v:.{REFERENCE_FIGURES}g}")


def within_factor(a: Any, b: Any, factor: float) -> bool:
    """Whether ``a`` is within ``factor`` (>= 1) of ``b``: ``max(a/b, b/a) <= factor``,
    exact on the decimals the three numbers print as (see the module doc: the boundary is
    inside). False where a ratio means nothing (zero, opposite signs, not a number). The
    grade, the lab's words and the labs' gates all use it."""
    r = ratio_off(a, b)
    if r is None:
        return False
    factor = float(factor)
    if not math.isfinite(factor):
        return factor > 0
    if r < factor * (1 - _NEAR):
        return True
    if r > factor * (1 + _NEAR):
        return False
    big, small = sorted((abs(_decimal(a)), abs(_decimal(b))), reverse=True)
    return big <= _decimal(factor) * small


def ratio_verdict(predicted: float, actual: float, *,
                  tolerance: float = GRADE_TOLERANCE) -> str | None:
    """The words a lab's comparison and a student's feedback page both use: "right (within
    0.5 %)", "close: off by 1.47× (too high), within the 1.5× graded as correct", or "off by
    3× (too high)"; None when a ratio means nothing. ``tolerance`` is the one the item is
    graded with; "close" and "correct" follow :func:`within_factor`."""
    r = ratio_off(predicted, actual)
    if r is None or not math.isfinite(r):
        return None
    if r < SPOT_ON_RATIO:
        return "right (within 0.5 %)"
    off = f"off by {format_value(r)}× (too {'high' if predicted > actual else 'low'})"
    if within_factor(predicted, actual, tolerance):
        return f"close: {off}, within the {format_value(tolerance)}× graded as correct"
    return off


def verdict_kind(predicted: float, actual: float, *,
                 tolerance: float = GRADE_TOLERANCE) -> str:
    """The callout kind that goes with :func:`ratio_verdict`: "ok" (✓) for right only,
    "warn" (≈) for close, "danger" (✗) beyond the tolerance or when no ratio means anything."""
    r = ratio_off(predicted, actual)
    if r is None or not math.isfinite(r):
        return "warn"
    if r < SPOT_ON_RATIO:
        return "ok"
    return "warn" if within_factor(predicted, actual, tolerance) else "danger"
