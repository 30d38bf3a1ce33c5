"""Argument checks shared by the physics modules: clear messages, never a silent NaN.

Every public function of the physics wing checks its arguments here, under the caller's own
argument names, so bad input raises ``ValueError`` (wrong type, sign, size, finiteness, an
empty name) or ``KeyError`` (an unknown name: device, model, format, op), and the message names
the argument: never an ``OverflowError``, ``TypeError`` or ``AttributeError`` from deep inside.
"""

from __future__ import annotations

import difflib
import math
import numbers
from collections.abc import Mapping as _Mapping
from typing import Any, Iterable, Sequence


def shown(value: Any, limit: int = 60) -> str:
    """``repr(value)``, shortened: a 400-digit integer or a long list stays readable."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001  (a value whose repr fails is still an argument)
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else f"{text[:limit - 12]}…({len(text)} chars)"


def close_matches(name: str, known: Iterable[str], *, always_list: bool = False) -> str:
    """A sentence naming the closest known names (or all of them when none is close)."""
    known = list(known)
    near = difflib.get_close_matches(str(name).lower(), known, n=4, cutoff=0.5)
    if near:
        return f" Did you mean: {', '.join(near)}?"
    return f" Known: {', '.join(known)}." if always_list else ""


def _number(name: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {shown(value)}")
    try:
        v = float(value)
    except (OverflowError, ValueError, TypeError):
        raise ValueError(f"{name} is too large to be a number here, got {shown(value)}") from None
    if math.isnan(v) or math.isinf(v):
        raise ValueError(f"{name} must be finite, got {shown(value)}")
    return v


def number(name: str, value) -> float:
    """Any finite real number (not a bool), else ValueError naming the argument."""
    return _number(name, value)


def positive(name: str, value) -> float:
    """A finite number > 0, else ValueError naming the argument."""
    v = _number(name, value)
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {shown(value)}")
    return v


def non_negative(name: str, value) -> float:
    """A finite number >= 0, else ValueError naming the argument."""
    v = _number(name, value)
    if v < 0:
        raise ValueError(f"{name} must be >= 0, got {shown(value)}")
    return v


def fraction(name: str, value) -> float:
    """A number in (0, 1], else ValueError naming the argument."""
    v = positive(name, value)
    if v > 1:
        raise ValueError(f"{name} must be a fraction in (0, 1], got {shown(value)}")
    return v


def positive_int(name: str, value) -> int:
    """A whole number >= 1 (floats like 4096.0 accepted), else ValueError naming the argument."""
    v = positive(name, value)
    if v != int(v):
        raise ValueError(f"{name} must be a whole number, got {shown(value)}")
    return int(v)


def optional(check, name: str, value, *args):
    """``None`` stays None (the argument's default); anything else goes through ``check``."""
    return None if value is None else check(name, value, *args)


def text(name: str, value) -> str:
    """A non-empty string (surrounding spaces removed), else ValueError naming the argument."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty string, got {shown(value)}")
    return value.strip()


def flag(name: str, value) -> bool:
    """True or False (0 and 1 accepted), else ValueError naming the argument."""
    if isinstance(value, bool):
        return value
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    raise ValueError(f"{name} must be True or False, got {shown(value)}")


def one_of(name: str, value, options: Iterable[str]) -> str:
    """One of ``options`` (case-insensitive): ValueError if not a non-empty string, KeyError
    naming the argument and the closest options if unknown."""
    key = text(name, value).lower()
    options = list(options)
    if key not in options:
        raise KeyError(f"unknown {name}={shown(value)}." + close_matches(key, options,
                                                                        always_list=True))
    return key


def mapping(name: str, value, *, allow_empty: bool = False) -> _Mapping:
    """A dict-like mapping (non-empty unless ``allow_empty``), else ValueError naming it."""
    if not isinstance(value, _Mapping):
        raise ValueError(f"{name} must be a dict, got {shown(value)}")
    if not value and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    return value


def sequence(name: str, value, *, allow_empty: bool = False) -> list:
    """A list or tuple (not a string: "abc" is not a list of names), non-empty unless
    ``allow_empty``, else ValueError naming the argument."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise ValueError(f"{name} must be a list, got {shown(value)}")
    if not value and not allow_empty:
        raise ValueError(f"{name} must not be empty")
    return list(value)


def instance(name: str, value, cls, what: str):
    """An instance of ``cls``, else ValueError naming the argument and ``what`` it must be."""
    if not isinstance(value, cls):
        raise ValueError(f"{name} must be {what}, got {shown(value)}")
    return value
