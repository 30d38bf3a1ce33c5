"""How a number a student types is read and checked: one rule for the whole course (issue 18.4).

:func:`parse_number` reads ``300``, ``3e5``, ``300,000`` and ``300k``; :func:`check_number` adds
the rule every input follows: a whole-number quantity (a batch, a token count) accepts whole
numbers only, and a value outside its range is refused with a message that says the range,
never clamped or rounded in silence. Used by the prediction forms (``quiz.numeric_form``) and
by :class:`labs.core.ui.inputs.NumberBox`. No marimo here (the grader reads predictions too).
"""

from __future__ import annotations

import math
from typing import Any

from labs.core.physics.units import format_value

_SUFFIX = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def parse_number(text: Any) -> float | None:
    """``"3e5"``, ``"300,000"``, ``"300k"`` -> 300000.0; None if it is not a finite number."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return float(text) if math.isfinite(text) else None
    if not isinstance(text, str):
        return None
    s = text.strip().replace(",", "").replace("_", "").replace(" ", "")
    scale = 1.0
    if s and s[-1].lower() in _SUFFIX and not s.lower().endswith("e"):
        scale, s = _SUFFIX[s[-1].lower()], s[:-1]
    try:
        v = float(s) * scale
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def _shown(text: Any) -> str:
    return f"“{str(text).strip()[:40]}”"


def check_number(text: Any, *, lo: float, hi: float, integer: bool = False,
                 units: str = "") -> tuple[float | int | None, str | None]:
    """``(value, None)`` if ``text`` is a number in ``[lo, hi]`` (a whole one if ``integer``),
    else ``(None, message)``: the message says what was wrong and what to enter instead.

    Whole numbers come back as ``int``.
    """
    unit = f" {units}" if units else ""
    span = f"from {format_value(lo)} to {format_value(hi)}{unit}"
    number = parse_number(text)
    typed = str(text).strip()[:40] if isinstance(text, str) else format_value(number)
    if number is None:
        if not str(text if text is not None else "").strip():
            return None, f"The box is empty: enter a number {span}."
        return None, (f"{_shown(text)} is not a number: enter one {span} "
                      "(e.g. 300, 3e5 or 300k).")
    if integer and number != int(number):
        return None, (f"{typed} is not a whole number{' of ' + units if units else ''}: "
                      f"enter a whole number {span}.")
    if not lo <= number <= hi:
        return None, f"{typed}{unit} is out of range: enter a value {span}."
    if number == int(number) and abs(number) < 2**53:
        return int(number), None
    return number, None
