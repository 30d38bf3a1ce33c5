"""A committed prediction and how a typed answer becomes one number.

:class:`Prediction` is what the lock holds and what ``predict``/``revise`` events record;
:func:`parse_number` reads what a student types (``300``, ``3e5``, ``300k``). No marimo here.
Part of :mod:`labs.core.course.quiz` (import it through that name).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from labs.core.physics.units import format_value

MAX_REASON_CHARS = 200
CONFIDENCE_OPTIONS = {"1 · a guess": 1, "2": 2, "3": 3, "4": 4, "5 · sure": 5}


@dataclass(frozen=True)
class Prediction:
    """A committed prediction. Tests construct it directly: ``Prediction("lab01.x", 300.0)``.

    ``value`` is a number (numeric items) or the option's value (choice items, whose ``label``
    is the text the student picked). ``timestamp`` is the UTC ISO time of the ``predict`` event.
    ``reference`` marks the instructor copy's reference answer (:func:`reveal.reference`),
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
        return _with_units(format_value(self.value, fmt), self.units)

    def payload(self) -> dict:
        """The ``predict``/``revise`` event payload for this prediction."""
        out = {"value": self.value, "answer_type": self.answer_type, "units": self.units,
               "confidence": self.confidence, "reason": self.reason}
        if self.label is not None:
            out["label"] = self.label
        return out

    @classmethod
    def from_event(cls, event: Mapping) -> "Prediction | None":
        """The prediction a ``predict``/``revise`` event records, or None if it holds none."""
        p = event.get("payload") if isinstance(event, Mapping) else None
        if not isinstance(p, Mapping) or "value" not in p:
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


def _with_units(text: str, units: str) -> str:
    return f"{text} {units}".strip() if units else text


def ratio_off(predicted: Any, actual: Any) -> float | None:
    """How many times off (>= 1), or None when a ratio means nothing: zero, opposite signs,
    not finite, or not a number (a bool is not one). The one rule for the lab's comparison, the
    grade and the class dashboard."""
    if isinstance(predicted, bool) or isinstance(actual, bool) \
            or not isinstance(predicted, (int, float)) or not isinstance(actual, (int, float)):
        return None
    p, a = float(predicted), float(actual)
    if not (math.isfinite(p) and math.isfinite(a)) or p == 0 or a == 0 or (p > 0) != (a > 0):
        return None
    r = p / a
    return max(r, 1 / r)


def within_factor(a: Any, b: Any, factor: float) -> bool:
    """Whether ``a`` is within ``factor`` (>= 1) of ``b``, as :func:`ratio_off` measures it;
    False where a ratio means nothing (zero, opposite signs, not a number). For the labs' gates
    that close an instrument on a setting near a prediction's case."""
    r = ratio_off(a, b)
    return r is not None and r <= factor


#: A prediction this close (as a ratio) is called right, not "off by 1×".
SPOT_ON_RATIO = 1.005
#: The grader's default tolerance (``grading_config.Rubric.tolerance``): a numeric prediction
#: off by at most this factor is graded correct. The lab's words follow it (issue 34.7).
GRADE_TOLERANCE = 1.5


def ratio_verdict(predicted: float, actual: float, *,
                  tolerance: float = GRADE_TOLERANCE) -> str | None:
    """The words a lab's comparison and a student's feedback page both use: "right (within
    0.5 %)", "close: off by 1.47× (too high), within the 1.5× graded as correct", or "off by
    3× (too high)"; None when a ratio means nothing."""
    r = ratio_off(predicted, actual)
    if r is None or not math.isfinite(r):
        return None
    if r < SPOT_ON_RATIO:
        return "right (within 0.5 %)"
    off = f"off by {format_value(r)}× (too {'high' if predicted > actual else 'low'})"
    if r <= tolerance:
        return f"close: {off}, within the {format_value(tolerance)}× graded as correct"
    return off


def verdict_kind(predicted: float, actual: float, *,
                 tolerance: float = GRADE_TOLERANCE) -> str:
    """The callout kind that goes with :func:`ratio_verdict`: "ok" (✓) for right only,
    "warn" (≈) for close, "danger" (✗) beyond the tolerance or when no ratio means anything."""
    r = ratio_off(predicted, actual)
    if r is None or not math.isfinite(r):
        return "warn"
    return "ok" if r < SPOT_ON_RATIO else ("warn" if r <= tolerance else "danger")


def distinct_texts(predicted: float, actual: float,
                   fmt: Callable[[Any], str] | str | None = None) -> tuple[str, str]:
    """The two numbers as text, with enough significant digits that they differ when the
    verdict is not "right" (0.80 against 0.795 reads "0.8" and "0.795", never "0.80" twice)."""
    p_text, a_text = format_value(predicted, fmt), format_value(actual, fmt)
    r = ratio_off(predicted, actual)
    if p_text != a_text or r is None or r < SPOT_ON_RATIO:
        return p_text, a_text
    for sig in range(3, 10):
        p_text, a_text = _sig(predicted, sig), _sig(actual, sig)
        if p_text != a_text:
            break
    return p_text, a_text


def _sig(v: float, sig: int) -> str:
    v = float(v)
    if v == 0:
        return "0"
    decimals = max(0, sig - 1 - math.floor(math.log10(abs(v))))
    if abs(v) >= 1e9 or abs(v) < 1e-3:
        return f"{v:.{sig}g}"
    text = f"{v:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


# One reading rule for every number a student types (labs.core.ui.inputs).
from labs.core.ui.numbers import parse_number  # noqa: E402,F401  (re-exported)
