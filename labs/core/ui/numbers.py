"""How a number a student types is read and checked: one rule for the whole course.

:func:`check_number` reads what a student types into a box of known units and range and either
returns the number as it will be stored or a message that says what was wrong and what to type
instead. It accepts:

* ``300``, ``3e5``, ``300k`` (k, M, G, T: thousand, million, ...), ``1,000,000`` and
  ``1,234.5`` (thousands separators in groups of three, a point for decimals);
* a **decimal comma** where it cannot be a thousands separator: ``5,5`` is 5.5, ``0,6`` is
  0.6 and ``0,132`` is 0.132 (no thousands group leads with 0). ``5,500`` could be either (5500 or 5.5): it is refused with a message naming both
  readings, unless the caller shows the reading before using it (``previewed=True``: a
  prediction form's "You are locking …"); there it is read the one way that fits the box's
  range, and refused when both fit. ``"5,5"`` is never read as 55;
* the **units of the question**: ``2x`` in a ``×`` box, ``2.4 ms`` in an ``ms`` box (and
  ``2400 µs``, converted), ``70%`` in a ``%`` box, ``4k tokens`` in a ``tokens`` box. A unit
  of another kind is refused with a message naming the box's unit.
  In a box of time a unit symbol is matched as written (``ms``, ``µs``, ``s``): a bare ``m`` or
  ``M`` (``7M``, ``7 m``), or ``MS``, is refused ("did you mean ms?"). Elsewhere ``k``, ``M``
  (and ``m``) stay suffixes: ``3m tokens`` is 3,000,000. Only a word unit (``tokens``,
  ``GPUs``) also takes its singular.
* a **fraction** of two plain numbers, ``19/7`` (2.714...), optionally followed by the box's
  unit (``19/7 x``): a ratio a student worked out need not be rounded by hand first (a
  prediction form shows the value it will lock, "You are locking 2.714 ...");
* In a ``%`` box, a number from 0 to 1 without ``%`` (``0.7``) is refused: it could be a
  fraction (70 %) or 0.7 %; the message says the box is in percent.
* A number too small for a float (``1e-400``, or ``1e-320 ns`` in a box of seconds) is
  refused, never stored as 0.

A whole-number quantity (a batch, a token count) accepts whole numbers only, and a value outside
its range is refused with a message that says the range, never clamped or rounded in silence.
Used by the prediction forms (``quiz.numeric_form``) and by
:class:`labs.core.ui.inputs.NumberBox`. No marimo here (the grader reads predictions too).
"""

from __future__ import annotations

import math
import re
from typing import Any

from labs.core.physics.units import format_value

__all__ = [
    "as_stored", "check_number", "comma_reading", "examples", "parse_number", "plain",
    "read_number"
]

_SUFFIX = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}
#: Units of time, in seconds: a box in one of them takes the others, converted.
_TIME = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "sec": 1.0}
#: Other ways of writing a box's unit (lower case, spaces removed).
_ALIASES = {
    "×": {"×", "x", "times"},
    "%": {"%", "percent", "pct"},
    "tokens": {"token", "tokens", "tok"},
    "sequences": {"sequence", "sequences", "seq", "seqs"},
    "elements": {"element", "elements", "elems"},
}
_NUMBER = re.compile(r"^(?P<sign>[+-]?)(?P<num>\d[\d,]*(?:\.\d*)?|\.\d+)(?P<exp>[eE][+-]?\d+)?"
                     r"(?P<rest>.*)$")
#: A fraction of two plain numbers (no separators, suffixes or exponents), then the rest.
_FRACTION = re.compile(r"^(?P<top>[+-]?(?:\d+(?:\.\d*)?|\.\d+))\s*/\s*"
                       r"(?P<bottom>\d+(?:\.\d*)?|\.\d+)(?P<rest>(?:\s.*|[^\d.].*)?)$")


class _Refused(ValueError):
    """What was wrong with a typed number, in words for the student."""


def _shown(text: Any) -> str:
    return f"“{str(text).strip()[:40]}”"


def plain(value: float) -> str:
    """A number as a student can type it back: no thousands separators (``100000``, ``0.5``)."""
    return format_value(value).replace(",", "")


def _digits(num: str, typed: str) -> list[str]:
    """The readings of the digits part, comma-free (one, or two when a comma is ambiguous)."""
    if "," not in num:
        return [num]
    whole, _, decimals = num.partition(".")
    groups = whole.split(",")
    # a thousands grouping never leads with a 0 group: 0,132 can only be a decimal comma
    thousands = (1 <= len(groups[0]) <= 3 and not groups[0].startswith("0")
                 and all(len(g) == 3 for g in groups[1:]))
    if "." in num:
        if thousands:
            return [whole.replace(",", "") + "." + decimals]
        raise _Refused(f"{_shown(typed)} mixes a comma and a point: write the number with a "
                       "point for decimals and no thousands separators (e.g. 1234.5).")
    if len(groups) > 2:
        if thousands:
            return [whole.replace(",", "")]
        raise _Refused(f"{_shown(typed)} is not a number: use commas only between groups of "
                       "three digits (1,000,000), or one decimal comma (5,5).")
    head, tail = groups
    if not tail:
        raise _Refused(f"{_shown(typed)} ends in a comma: write the whole number.")
    decimal = f"{head}.{tail}"
    if thousands:  # 5,500: 5500 or 5.5
        return [head + tail, decimal]
    return [decimal]


def _unit_factor(rest: str, units: str, typed: str) -> float:
    """The factor that turns a number followed by ``rest`` (a unit, a k/M suffix, both) into the
    box's ``units``."""
    r = rest.strip().replace(" ", "")
    if not r:
        return 1.0
    u = units.strip().replace(" ", "")
    if u in _TIME and r.lower() in ("m", "ms") and r != "ms":  # 7M, 7m, 7 MS in a time box
        raise _Refused(f"{_shown(typed)}: did you mean ms? In a box of time “{r}” is not read "
                       "(m could be milli or minutes, M a million): write the unit as ns, µs, "
                       f"ms or s, or enter a number of {u}")
    factor = _unit_only(r, units)
    if factor is not None:
        return factor
    if r[0].lower() in _SUFFIX:  # 4k, 4k tokens, 1.5M
        factor = _unit_only(r[1:], units) if r[1:] else 1.0
        if factor is not None:
            return _SUFFIX[r[0].lower()] * factor
    # a symbol is not a thing to count: "a number of ×" reads oddly, so say "a plain number"
    # (the range that follows names the symbol)
    counted = f"a number of {units}" if any(c.isalpha() for c in units) else "a plain number"
    want = (f"this box is in {units}: enter {counted}" if units
            else "this box takes a plain number, without a unit")
    if units == "" and r == "%":
        want += " (write 60% as 0.6)"
    raise _Refused(f"{_shown(typed)}: {want}.")


def _unit_only(r: str, units: str) -> float | None:
    """The factor for a unit written ``r`` in a box of ``units``, or None if it is another."""
    u = units.strip().replace(" ", "")
    if u in _TIME:  # a time unit symbol, matched as written: never m or M for "ms"
        return _TIME[r] / _TIME[u] if r in _TIME else None
    names = _ALIASES.get(u)
    if names is None:  # the unit as written, in any case; a word unit also in the singular
        names = {u.lower()} if u else set()
        stem = u[:-1]
        if u.isalpha() and u.endswith("s") and len(stem) >= 3:  # GPUs, GPU (never ms, m)
            names.add(stem.lower())
    return 1.0 if r.lower() in names else None


def read_number(text: Any, *, units: str = "") -> list[float]:
    """The readings of ``text`` as a number in ``units`` (one; two when a comma could be a
    thousands separator or a decimal comma: ``"5,500"`` -> ``[5500.0, 5.5]``).

    Raises ValueError with a message for the student when it is not a number in these units.
    """
    if isinstance(text, bool) or text is None:
        raise _Refused("The box is empty.")
    if isinstance(text, (int, float)):
        if not math.isfinite(text):
            raise _Refused(f"{_shown(text)} is not a number.")
        return [float(text)]
    s = str(text).strip().replace("_", "").replace("\u2009", "").replace("\u202f", "")
    f = _FRACTION.match(s) if "/" in s[:80] else None
    if f:
        bottom = float(f["bottom"])
        if bottom == 0:
            raise _Refused(f"{_shown(text)} divides by zero.")
        v = float(f["top"]) / bottom * _unit_factor(f["rest"], units, text)
        if not math.isfinite(v):
            raise _Refused(f"{_shown(text)} is not a finite number.")
        return [float(f"{v:.15g}")]
    m = _NUMBER.match(s)
    if not m:
        raise _Refused(f"{_shown(text)} is not a number.")
    if m["rest"].strip()[:1] in (",", "."):  # 1.234,5 (thousands points), 1.2.3
        raise _Refused(f"{_shown(text)} mixes a comma and a point: write the number with a "
                       "point for decimals and no thousands separators (e.g. 1234.5).")
    factor = _unit_factor(m["rest"], units, text)
    out = []
    for digits in _digits(m["num"], text):
        v = float(m["sign"] + digits + (m["exp"] or ""))
        if factor != 1.0:  # 3.9 ms in s and back: 0.0039, not 0.0039000000000000003
            v = float(f"{v * factor:.15g}")
        if not math.isfinite(v):
            raise _Refused(f"{_shown(text)} is not a finite number.")
        if v == 0 and any(c.isdigit() and int(c) != 0 for c in digits):  # 1e-400 is not 0
            raise _Refused(f"{_shown(text)} is too small to represent (it would be stored as 0)")
        out.append(v)
    return out


def parse_number(text: Any) -> float | None:
    """``"3e5"``, ``"1,000,000"``, ``"300k"``, ``"5,5"`` (decimal comma) -> a float; None if it
    is not a finite number or could be read two ways (``"5,500"``). No units."""
    try:
        readings = read_number(text)
    except ValueError:
        return None
    return readings[0] if len(readings) == 1 else None


def examples(lo: float, hi: float) -> str:
    """Ways to type a number that a box from ``lo`` to ``hi`` takes, for its messages: "300,
    3e5 or 300k" where those fit, else round numbers inside the range ("30 or 2.5" for a box
    from 0.1 to 100), never an example the box refuses."""
    forms = [plain(v) for v in (300, 30, 3, 3000, 0.3, 0.03, 30_000, 0.003) if lo <= v <= hi][:1]
    if lo <= 3e5 <= hi:
        forms += ["3e5", "300k"]
    elif lo <= 2.5 <= hi and forms and forms[0] != "2.5":
        forms.append("2.5")
    if not forms:
        forms = [plain(lo), plain(hi)]
    return forms[0] if len(forms) == 1 else ", ".join(forms[:-1]) + " or " + forms[-1]


def check_number(text: Any, *, lo: float, hi: float, integer: bool = False,
                 units: str = "", previewed: bool = False) -> tuple[float | int | None, str | None]:
    """``(value, None)`` if ``text`` is a number in ``[lo, hi]`` (a whole one if ``integer``)
    in the box's ``units`` (see the module docstring for what is read), else
    ``(None, message)``: the message says what was wrong and what to enter instead.

    ``previewed``: the caller shows the value as stored before it is used (a prediction form's
    "You are locking …", with :func:`comma_reading`), so a comma that could be a thousands
    separator or a decimal comma (``5,500``) is read the one way that fits the range. Without
    it such a comma is refused with a message naming both readings: a box that uses the value
    at once (:class:`labs.core.ui.inputs.NumberBox`) must not pick one in silence (``1,000``
    in a 1-512 box was read as 1).

    Whole numbers come back as ``int``.
    """
    unit = f" {units}" if units else ""
    span = f"from {plain(lo)} to {plain(hi)}{unit}"
    typed = str(text).strip()[:40] if isinstance(text, str) else None
    if text is None or (isinstance(text, str) and not text.strip()):
        return None, f"The box is empty: enter a number {span}."
    try:
        readings = read_number(text, units=units)
    except ValueError as refused:
        message = str(refused)
        if "not a number" in message and "use commas" not in message:
            message = message.rstrip(".") + f": enter one {span} (e.g. {examples(lo, hi)})."
        elif "enter" not in message:
            message = message.rstrip(".") + f": enter a number {span}."
        else:
            message = message.rstrip(".") + f" {span}."
        return None, message
    typed = typed if typed is not None else format_value(readings[0])
    if units == "%" and isinstance(text, str) and "%" not in text and "percent" not in \
            text.lower() and 0 < readings[0] <= 1:
        return None, (f"{_shown(text)}: this box is in percent (0 to 100). For "
                      f"{format_value(100 * readings[0])} % type {plain(100 * readings[0])}; "
                      f"for {typed} % type {typed}%.")
    fits = [v for v in readings if lo <= v <= hi and (not integer or v == int(v))]
    if len(readings) == 2:
        if len(fits) == 2 or (fits and not previewed):
            a, b = readings
            message = (f"{_shown(text)}: is the comma a thousands separator ({plain(a)}) or a "
                       f"decimal comma ({plain(b)})? Type {plain(a)} or {plain(b)}, without "
                       "the comma.")
            if len(fits) == 1:
                message += f" This box takes {'whole numbers' if integer else 'values'} {span}."
            return None, message
        number = fits[0] if fits else readings[0]
    else:
        number = readings[0]
    if integer and number != int(number):
        return None, (f"{typed} is not a whole number{' of ' + units if units else ''}: "
                      f"enter a whole number {span}.")
    if not lo <= number <= hi:
        return None, (f"{typed}{'' if _has_unit(typed) else unit} is out of range: "
                      f"enter a value {span}.")
    if number == int(number) and abs(number) < 2**53:
        return int(number), None
    return number, None


def comma_reading(text: Any, value: float, *, units: str = "") -> str | None:
    """How a comma in ``text`` was read to give ``value`` ("the comma read as a decimal
    comma"), for a preview; None when ``text`` has no comma that could be read two ways."""
    try:
        readings = read_number(text, units=units)
    except ValueError:
        return None
    if len(readings) != 2 or value not in readings:
        return None
    other = readings[1] if value == readings[0] else readings[0]
    how = "a thousands separator" if value == readings[0] else "a decimal comma"
    return f"the comma read as {how}, not {plain(other)}"


def _has_unit(typed: str) -> bool:
    return bool(re.search(r"[^\d\s.,+\-eE]", typed or ""))


def as_stored(value: float, units: str = "") -> str:
    """The number as it will be stored, for a lock's preview: every digit kept (``5.5 ×``,
    ``0.0039 ms``, ``5500 tokens``)."""
    text = f"{value:.15g}" if isinstance(value, float) else str(value)
    return f"{text} {units}".strip()
