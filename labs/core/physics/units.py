"""How numbers are shown to students: values, bytes, durations, FLOPs, error messages.

Pure Python (no marimo, no plotly), shared by the labs, style, quiz and the tests, so that every
lab writes "119 µs" or "1.9 GB" the same way.
"""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable

from labs.core.physics.validate import flag, shown, text

__all__ = [
    "MAX_SIGNIFICANT", "error_message", "format_bandwidth", "format_bytes", "format_flops",
    "format_seconds", "format_value", "intensity_unit", "rate_unit"
]


def _real(name: str, value) -> float:
    """A real number to show (inf and nan are shown as such), else ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {shown(value)}")
    try:
        return float(value)
    except (OverflowError, ValueError, TypeError):
        raise ValueError(f"{name} is too large to show, got {shown(value)}") from None


#: The most significant figures a float holds (a double's 17 decimal digits).
MAX_SIGNIFICANT = 17


def format_value(value: Any, fmt: Callable[[Any], str] | str | None = None, *,
                 significant: int = 3) -> str:
    """A number to 3 significant figures with thousands separators (``300,000``, ``0.0123``).

    The one way every number a student reads is written: a card, a table, a figure's label and
    its hover show the same value the same way. Whole digits are never dropped (``300,000``);
    below 1e-3 or from 1e9 on, scientific notation (``1.23e-05``). ``significant`` asks for
    more figures where two numbers must read apart (``0.795`` against ``0.8``).
    ``fmt`` overrides: a format spec (``",.0f"``) or a callable.
    """
    if callable(fmt):
        return str(fmt(value))
    if isinstance(fmt, str):
        try:
            return format(value, fmt)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"fmt={fmt!r} cannot format {shown(value)}: {exc}") from None
    if fmt is not None:
        raise ValueError(f"fmt must be a format spec such as ',.0f', a function or None, got "
                         f"{shown(fmt)}")
    if isinstance(significant, bool) or not isinstance(significant, int) or not (
            1 <= significant <= MAX_SIGNIFICANT):
        raise ValueError(f"significant must be a whole number from 1 to {MAX_SIGNIFICANT}, "
                         f"got {shown(significant)}")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return str(value)
    v = float(value)
    if not math.isfinite(v):
        return str(v)
    if v == 0:
        return "0"
    a = abs(v)
    if 1e-3 <= a < 1e9:
        digits = max(0, significant - 1 - math.floor(math.log10(a)))
        text = f"{round(v, digits):,.{digits}f}"
        return text.rstrip("0").rstrip(".") if "." in text else text
    return f"{v:.{significant}g}"


def format_bandwidth(gbs: float) -> str:
    """A bandwidth given in GB/s, to 3 significant figures: '605 GB/s', from 1,000 GB/s in
    TB/s ('10.5 TB/s'), decimal units as everywhere in the labs."""
    v = _real("gbs", gbs)
    return f"{format_value(v / 1e3)} TB/s" if abs(v) >= 1e3 else f"{format_value(v)} GB/s"


def format_bytes(n: float, *, binary: bool = False) -> str:
    """Bytes in decimal units (GB = 1e9, as the labs' spec says): '80.0 GB', '512 MB', '0 B'.
    ``binary=True`` for sizes that are powers of two by nature (caches, working sets): KiB,
    MiB, GiB (2^10, 2^20, 2^30), 3 significant figures: '32 KiB', '1.41 MiB', '256 MiB'."""
    n = _real("n", n)
    if flag("binary", binary):
        for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
            if abs(n) >= size:
                return f"{n / size:.3g} {unit}"
        return f"{n:.0f} B"
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
    seconds = _real("seconds", seconds)
    upper = None if upper is None else _real("upper", upper)
    unit, scale = _time_unit(seconds)
    if upper is None:
        return f"{format_value(seconds / scale)} {unit}"
    if _time_unit(upper)[0] != unit:
        return f"{format_seconds(seconds)} – {format_seconds(upper)}"
    lo, hi = format_value(seconds / scale), format_value(upper / scale)
    return f"{lo} {unit}" if lo == hi else f"{lo}–{hi} {unit}"


def format_flops(flops: float) -> str:
    """FLOPs with an SI prefix: '275 GFLOP', '70.4 TFLOP'."""
    flops = _real("flops", flops)
    for scale, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(flops) >= scale:
            return f"{format_value(flops / scale)} {prefix}FLOP"
    return f"{format_value(flops)} FLOP"


def rate_unit(precision: str) -> str:
    """The unit of a throughput at ``precision``: integer math is counted in TOPS, not FLOP/s.
    KeyError naming ``precision`` for a name that is no compute precision."""
    p = text("precision", precision).lower()
    if p not in _RATE_PRECISIONS:
        raise KeyError(f"unknown precision={precision!r}; known: {', '.join(_RATE_PRECISIONS)}")
    return "TOPS" if p.startswith("int") else "TFLOP/s"


def intensity_unit(precision: str) -> str:
    """The unit of an arithmetic intensity (or a ridge) at ``precision``: operations per byte
    for integer math ("OP/B", as its rate is TOPS), FLOP per byte otherwise."""
    return "OP/B" if rate_unit(precision) == "TOPS" else "FLOP/B"


#: Compute precisions a throughput can be quoted at (hardware.PRECISIONS and the vector ceiling).
_RATE_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4", "vector")


def error_message(exc: BaseException) -> str:
    """What a core ValueError/KeyError says, for a student (KeyError's str() adds quotes)."""
    return str(exc.args[0]) if exc.args else str(exc)
