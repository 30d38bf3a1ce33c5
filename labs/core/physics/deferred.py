"""A module imported on first use: ``from labs.core.physics.deferred import numpy as np``.

A lab whose prediction gates are closed draws no figure and computes on plain floats, so it
never needs numpy; importing it anyway cost every cold run and every student-copy export
0.12 s on the reference VM (``python -X importtime``). The modules a closed gate
loads (``roofline``, ``staircase``, ``figures``, ``charts``, ``labelplace``) therefore take
numpy through :data:`numpy`, which imports it when an attribute is first read and from then
on answers from its own ``__dict__`` (one dictionary lookup, like a module's).
``tests/test_measure.py::test_a_closed_gate_loads_no_measuring_code`` keeps it that way.
"""

from __future__ import annotations

import importlib
import sys

__all__ = ["DeferredModule", "is_ndarray", "numpy"]


class DeferredModule:
    """Stands in for the module ``name`` until an attribute is read, then forwards to it."""

    def __init__(self, name: str) -> None:
        self.__dict__["_deferred_name"] = name

    def __getattr__(self, attr: str):
        module = importlib.import_module(self.__dict__["_deferred_name"])
        value = getattr(module, attr)
        self.__dict__[attr] = value  # the next read is a plain attribute hit
        return value

    def __repr__(self) -> str:
        return f"<deferred module {self.__dict__['_deferred_name']!r}>"


numpy = DeferredModule("numpy")


def is_ndarray(x) -> bool:
    """Is ``x`` a numpy array? Asked without importing numpy: no array exists before it is."""
    module = sys.modules.get("numpy")
    return module is not None and isinstance(x, module.ndarray)
