"""Argument checks shared by the physics modules: clear messages, never a silent NaN."""

from __future__ import annotations

import difflib
import math
import numbers
from typing import Iterable


def close_matches(name: str, known: Iterable[str], *, always_list: bool = False) -> str:
    """A sentence naming the closest known names (or all of them when none is close)."""
    known = list(known)
    near = difflib.get_close_matches(str(name).lower(), known, n=4, cutoff=0.5)
    if near:
        return f" Did you mean: {', '.join(near)}?"
    return f" Known: {', '.join(known)}." if always_list else ""


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if math.isnan(v) or math.isinf(v):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return v


def positive(name: str, value) -> float:
    """A finite number > 0, else ValueError naming the argument."""
    v = _number(name, value)
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {value!r}")
    return v


def non_negative(name: str, value) -> float:
    v = _number(name, value)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {value!r}")
    return v


def positive_int(name: str, value) -> int:
    """A whole number >= 1 (floats like 4096.0 accepted), else ValueError naming the argument."""
    v = positive(name, value)
    if v != int(v):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    return int(v)
