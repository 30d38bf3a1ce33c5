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

__all__ = [
    "MAX_ITEMS", "at_most", "close_matches", "culprit", "finite_results", "flag", "fraction",
    "instance", "mapping", "non_negative", "number", "one_of", "optional", "positive",
    "positive_int", "require_finite", "sequence", "shown", "text"
]


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


# --- finite results -------------------------------------------------------------------------
# Each argument may be finite and still give a result that is not (memory_gb=1e300 is 1e309
# bytes: inf; a 1e-300 GB/s bandwidth gives an infinite ridge; 10**15 ops cannot be listed).
# The rule: a physics result is a finite number, or the call is refused with a message naming
# the argument that took it out of range.

#: The most items a function builds a list of (ops in a chain, groups): far above any real
#: kernel chain, far below a list that exhausts memory.
MAX_ITEMS = 100_000


def at_most(name: str, value: int, limit: int = MAX_ITEMS, what: str = "items") -> int:
    """``value`` <= ``limit``, else ValueError naming the argument (a list that large would
    exhaust memory, not describe a real case)."""
    if value > limit:
        raise ValueError(f"{name}={shown(value)} is too many {what} to list here: at most "
                         f"{limit:,}")
    return value


def _bad_number(value, depth: int = 0):
    """The first number in ``value`` (a number, a mapping's values, a sequence, a dataclass's
    fields, an object's ``flops``/``bytes``) that is inf or NaN, else None."""
    import dataclasses

    if depth > 4 or isinstance(value, (bool, str, bytes)) or value is None:
        return None
    if isinstance(value, numbers.Real):
        try:
            v = float(value)
        except OverflowError:  # an integer past float's range
            return math.inf
        return v if (math.isinf(v) or math.isnan(v)) else None
    if isinstance(value, _Mapping):
        items = list(value.values())
    elif isinstance(value, (list, tuple)):
        items = list(value)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [getattr(value, f.name) for f in dataclasses.fields(value)]
    else:
        return None
    for item in items[:10_000]:
        bad = _bad_number(item, depth + 1)
        if bad is not None:
            return bad
    return None


def _numbers_in(name: str, value, out: dict, depth: int = 0) -> None:
    import dataclasses

    if depth > 2 or isinstance(value, (bool, str, bytes)) or value is None:
        return
    if isinstance(value, numbers.Real):
        out[name] = value
    elif isinstance(value, _Mapping):
        for k, v in list(value.items())[:100]:
            _numbers_in(f"{name}[{k!r}]", v, out, depth + 1)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value)[:50]:  # a config's own fields (self: no prefix)
            _numbers_in(f"{name}.{f.name}" if name else f.name, getattr(value, f.name), out,
                        depth + 1)


def culprit(arguments: _Mapping) -> str:
    """'name=value' of the argument furthest from 1 in orders of magnitude (the one that
    overflows or underflows a result), among the numbers in ``arguments``."""
    nums: dict = {}
    for k, v in arguments.items():
        _numbers_in(k, v, nums)

    def magnitude(item):
        try:
            v = abs(float(item[1]))
        except OverflowError:
            return math.inf
        return abs(math.log10(v)) if v and not math.isinf(v) and not math.isnan(v) else math.inf
    if not nums:
        return "an argument"
    k, v = max(nums.items(), key=magnitude)
    return f"{k}={shown(v)}"


def require_finite(result, arguments: _Mapping, what: str = "the result"):
    """``result`` if every number in it is finite, else ValueError naming the argument that
    took it out of range (:func:`culprit`)."""
    bad = _bad_number(result)
    if bad is not None:
        raise ValueError(f"{culprit(arguments)} is out of range: {what} would be {shown(bad)}, "
                         "not a finite number. Use a value a real machine or model could have.")
    return result


def finite_results(func):
    """Decorator: ``func``'s result passes :func:`require_finite`, naming the argument that
    took it out of range (an OverflowError inside becomes the same message)."""
    import functools
    import inspect

    sig = inspect.signature(func)

    def arguments(args, kwargs):
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError:
            return {}
        return {("" if k == "self" else k): v for k, v in bound.arguments.items()}

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        outermost = not getattr(_DEPTH, "n", 0)
        _DEPTH.n = getattr(_DEPTH, "n", 0) + 1
        try:
            out = func(*args, **kwargs)
        except (OverflowError, ValueError) as e:
            # an overflow, or an inner check refusing an intermediate that is no longer finite:
            # the call the student made names its own argument that caused it
            inner = isinstance(e, OverflowError) or any(
                m in str(e) for m in (" must be finite, got inf", " must be finite, got nan",
                                      "too large to be a number"))
            given = {}
            for k, v in arguments(args, kwargs).items():
                _numbers_in(k, v, given)
            if not outermost or not inner or _bad_number(list(given.values())) is not None:
                raise  # not an overflow, or an argument itself not finite: already named
            raise ValueError(f"{culprit(arguments(args, kwargs))} is out of range: "
                             f"{func.__name__} overflows. Use a value a real machine or model "
                             "could have.") from None
        finally:
            _DEPTH.n -= 1
        if not outermost:  # the call the student made checks, naming its own arguments
            return out
        return require_finite(out, arguments(args, kwargs), f"{func.__name__}'s result")
    return wrapper


_DEPTH = __import__("threading").local()
