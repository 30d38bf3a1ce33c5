"""What every figure builder shares: one go.Figure from plain dicts, and the ridge label.

Numbers in figures are written by physics.units.format_value, as everywhere else: a hover
and a card show the same value the same way.

Plotly only (no marimo). Every figure gets the "roofline" template (tokens.TEMPLATE) as a
plain dict; nothing is registered with plotly at import (see tokens.register_template).
"""

from __future__ import annotations

import numbers

import plotly.graph_objects as go

from labs.core.physics import roofline
from labs.core.physics.units import format_value
from labs.core.ui.tokens import template

__all__ = ["LEGEND", "fast_figure", "is_measured", "is_real", "ridge_label"]

#: Legend below the plot, left-aligned (shared by every builder).
LEGEND = dict(orientation="h", x=0, xanchor="left", y=-0.2, yanchor="top")


def fast_figure(data: list, layout: dict) -> go.Figure:
    """One go.Figure from plain dicts, WITHOUT plotly's per-property validation (it costs
    ~7-15 ms per roofline, most of the slider budget). The builders' output is checked
    instead by the tests, which rebuild every figure with validation on. The template is
    passed as its dict (a name would only be resolved by validation)."""
    layout["template"] = template()
    return go.Figure(data=data, layout=layout, _validate=False)


def is_real(x) -> bool:
    """A real number, numpy scalars included, bools excluded."""
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def is_measured(device) -> bool:
    """Whether ``device`` is a machine's measured roofline (``EmpiricalRoofline.as_device``):
    its peaks are what its GEMMs reached, not a spec sheet's dense peaks."""
    return device.memory_type == "measured"


def ridge_label(precision: str, ridge: float, *, measured: bool = False) -> str:
    """'ridge (fp16, dense) = 295 FLOP/B': a ridge point always names its precision (or
    'vector, non-tensor' for the ceiling elementwise ops run at); a measured roof's says
    'measured': "dense" is a spec sheet's word (no 2:4 sparsity)."""
    label = roofline.ceiling_label(precision)
    if measured:
        label = label.replace(", dense", ", measured")
    return f"ridge ({label}) = {format_value(ridge)} FLOP/B"
