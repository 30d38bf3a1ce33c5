"""A committed prediction and how a typed answer becomes one number.

:class:`Prediction` and the ratio rules (how far off, the boundary of a tolerance, which
prediction counts) live in :mod:`labs.core.course.answers`, free of marimo, so the grader
shares them; they are re-exported here for the labs. :func:`parse_number` reads what a student
types (``300``, ``3e5``, ``300k``). No marimo here. Part of :mod:`labs.core.course.quiz`
(import it through that name).
"""

from __future__ import annotations

from typing import Any, Callable

from labs.core.course.answers import (  # noqa: F401  (re-exported for the labs)
    CONFIDENCE_LEVELS,
    GRADE_TOLERANCE,
    SPOT_ON_RATIO,
    Prediction,
    first_prediction,
    holds_value,
    is_reasoned,
    ratio_off,
    ratio_verdict,
    reference_value,
    verdict_kind,
    with_units as with_units,
    within_factor,
)
from labs.core.physics.units import format_value

__all__ = [
    "CONFIDENCE_LEVELS", "CONFIDENCE_OPTIONS", "GRADE_TOLERANCE", "MAX_REASON_CHARS", "Prediction",
    "SPOT_ON_RATIO", "distinct_texts", "first_prediction", "holds_value", "is_reasoned",
    "ratio_off", "ratio_verdict", "reference_value", "verdict_kind", "with_units", "within_factor"
]

MAX_REASON_CHARS = 200
CONFIDENCE_OPTIONS = {"1 · a guess": 1, "2": 2, "3": 3, "4": 4, "5 · sure": 5}


def distinct_texts(predicted: float, actual: float,
                   fmt: Callable[[Any], str] | str | None = None) -> tuple[str, str]:
    """The two numbers as text, with enough significant digits that they differ when the
    verdict is not "right" (0.80 against 0.795 reads "0.8" and "0.795", never "0.80" twice)."""
    p_text, a_text = format_value(predicted, fmt), format_value(actual, fmt)
    r = ratio_off(predicted, actual)
    if p_text != a_text or r is None or r < SPOT_ON_RATIO:
        return p_text, a_text
    for sig in range(3, 10):
        p_text = format_value(predicted, significant=sig)
        a_text = format_value(actual, significant=sig)
        if p_text != a_text:
            break
    return p_text, a_text


# One reading rule for every number a student types (labs.core.ui.inputs).
from labs.core.ui.numbers import parse_number  # noqa: E402,F401  (re-exported)
