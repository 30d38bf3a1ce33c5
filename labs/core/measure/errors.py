"""The failures a measurement can end in, each a sentence a notebook can show as it is.

``Unavailable`` (no torch, no GPU, browser/WASM run), ``Unsupported`` (a precision or shape
this hardware or torch cannot run), ``DoesNotFit`` (refused before allocating) and
``OutOfMemory`` (caught, cache freed) all derive from ``MeasureError``. Bad arguments are not
measurement failures: they raise ``ValueError``/``KeyError`` naming the argument.
"""

from __future__ import annotations

__all__ = ["DoesNotFit", "MeasureError", "OutOfMemory", "Unavailable", "Unsupported"]


class MeasureError(RuntimeError):
    """Base of every measurement failure; ``str(err)`` is a sentence for the student."""


class Unavailable(MeasureError):
    """Nothing can be measured here (no torch, no such device, browser/WASM run)."""


class Unsupported(MeasureError):
    """The hardware or torch cannot run this precision or shape."""


class DoesNotFit(MeasureError):
    """Refused before allocating: the tensors would not fit in free memory."""


class OutOfMemory(MeasureError):
    """The device ran out of memory anyway; the cache was freed and the run abandoned."""

