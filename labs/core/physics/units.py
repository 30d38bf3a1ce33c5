"""How numbers are shown to students: values, bytes, durations, FLOPs, error messages.

Pure Python (no marimo, no plotly), shared by the labs, style, quiz and the tests, so that every
lab writes "119 µs" or "1.9 GB" the same way.
"""

from __future__ import annotations

import math
from typing import Any, Callable


def format_value(value: Any, fmt: Callable[[Any], str] | str | None = None) -> str:
    """A number to 3 significant figures with thousands separators (``300,000``, ``0.0123``).

    ``fmt`` overrides: a format spec (``",.0f"``) or a callable.
    """
    if callable(fmt):
        return str(fmt(value))
    if isinstance(fmt, str):
        return format(value, fmt)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    v = float(value)
    if not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    a = abs(v)
    if 1e-3 <= a < 1e9:
        digits = max(0, 2 - math.floor(math.log10(a)))
        text = f"{round(v, digits):,.{digits}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return f"{v:.3g}"


def format_bytes(n: float) -> str:
    """Bytes in decimal units (GB = 1e9, as the labs' spec says): '80.0 GB', '512 MB', '0 B'."""
    n = float(n)
    for unit, size in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if abs(n) >= size:
            v = n / size
            return f"{v:.1f} {unit}" if abs(v) < 100 else f"{v:.0f} {unit}"
    return f"{n:.0f} B"


_TIME_UNITS = (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6), ("ns", 1e-9))


def _time_unit(seconds: float) -> tuple[str, float]:
    return next(((u, s) for u, s in _TIME_UNITS if abs(seconds) >= s), _TIME_UNITS[-1])


def format_seconds(seconds: float, upper: float | None = None) -> str:
    """A duration in the unit that reads best (s, ms, µs, ns), 3 significant figures:
    '567 µs', '1.2 ms'. With ``upper``, a range: '119–179 µs'."""
    unit, scale = _time_unit(seconds)
    if upper is None:
        return f"{format_value(seconds / scale)} {unit}"
    if _time_unit(upper)[0] != unit:
        return f"{format_seconds(seconds)} – {format_seconds(upper)}"
    lo, hi = format_value(seconds / scale), format_value(upper / scale)
    return f"{lo} {unit}" if lo == hi else f"{lo}–{hi} {unit}"


def format_flops(flops: float) -> str:
    """FLOPs with an SI prefix: '275 GFLOP', '70.4 TFLOP'."""
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(flops) >= scale:
            return f"{format_value(flops / scale)} {prefix}FLOP"
    return f"{format_value(flops)} FLOP"


def rate_unit(precision: str) -> str:
    """The unit of a throughput at ``precision``: integer math is counted in TOPS, not FLOP/s."""
    return "TOPS" if str(precision).lower().startswith("int") else "TFLOP/s"


def error_message(exc: BaseException) -> str:
    """What a core ValueError/KeyError says, for a student (KeyError's str() adds quotes)."""
    return str(exc.args[0]) if exc.args else str(exc)
