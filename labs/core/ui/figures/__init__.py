"""Figure builders, plotly only (no marimo): ``from labs.core import figures``, then
``figures.<builder>``. One module per thing drawn:

===============  ============================================================================
module           what it draws
===============  ============================================================================
``roofline``     the roofline of one or several devices, and the two-level (HBM and on-chip)
                 roofline; ``Point`` and ``Roof``
``charts``       bars, grouped bars, the memory budget, log-log line charts
``collectives``  Lab 6: collective time against message size, scaling, the three roofs
``hierarchy``    Lab 5: the working-set staircase, the per-level roofline, tile traffic
``sawtooth``     Lab 5: the GEMM sawtooth, measured against the quantisation model
``profile``      Lab 7: a model profile's operators on the roofline, time per operator type
``base``         what every builder shares: one go.Figure from plain dicts, number labels
``labelplace``   where a point's text label goes so it crosses no line or other label
===============  ============================================================================

The roofline is imported with this face; every other module's builders are imported on
first use (PEP 562, :data:`ON_FIRST_USE`): a lab pays only for the figure modules it draws
(Lab 5's and 6's cost every other lab ~30 ms of its cold run).
"""

from __future__ import annotations

import importlib

from labs.core.ui.figures.roofline import (
    AI_TITLE,
    POINT_KINDS,
    VECTOR_STYLE,
    Y_TITLE,
    Point,
    Roof,
    auto_ai_range,
    hierarchical_roofline_figure,
    resolve_roofs,
    roofline_figure,
    roofline_parts,
    short_name,
)

#: Module of this package -> the builders this face exports from it, imported on first use.
ON_FIRST_USE = {
    "charts": ("bar_figure", "budget_summary", "call_time_figure", "grouped_bar_figure",
               "loglog_lines_figure", "memory_budget_figure"),
    "collectives": ("LINK_COLOR_KEY", "alpha_beta_figure", "block_batch_figure",
                    "block_roofs_figure", "decode_throughput_figure", "decode_time_figure",
                    "dp_step_figure", "measured_collectives_figure", "ring_allreduce_figure",
                    "scaling_figure", "three_roof_figure"),
    "hierarchy": ("cache_roofline_figure", "level_style", "per_level_roofline_figure",
                  "tile_traffic_figure", "working_set_figure"),
    "sawtooth": ("gemm_sawtooth_figure", "sawtooth_figure"),
    "profile": ("before_after_figure", "operator_roofline_figure", "plottable",
                "step_bound_figure", "time_by_type_figure"),
}
_MODULE_OF = {name: f"{__name__}.{module}" for module, names in ON_FIRST_USE.items()
              for name in names}

__all__ = [
    "AI_TITLE", "ON_FIRST_USE", "POINT_KINDS", "Point", "Roof", "VECTOR_STYLE", "Y_TITLE",
    "auto_ai_range", "hierarchical_roofline_figure", "resolve_roofs", "roofline_figure",
    "roofline_parts", "short_name", *sorted(_MODULE_OF),
]


def __getattr__(name: str):
    try:
        module = _MODULE_OF[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_MODULE_OF))
