"""Lab 5's GEMM sawtooth: throughput against the square GEMM's side N, the quantisation
model beside a measurement, with a faint line at every tile multiple. Plotly only;
re-exported by :mod:`labs.core.ui.figures`.

Every number drawn comes from labs.core (``quantization.sawtooth_relative``, a measured run's
rows, :func:`labs.core.physics.reference_machine.sawtooth_relative`), never recomputed here.
"""

from __future__ import annotations

import html
from typing import Sequence

import plotly.graph_objects as go

from labs.core.physics import reference_machine
from labs.core.physics.units import format_value
from labs.core.ui.figures.base import LEGEND, fast_figure
from labs.core.ui.tokens import COLORS, PLOT_GRID, PLOT_TEXT

__all__ = ["gemm_sawtooth_figure", "sawtooth_figure"]


def sawtooth_figure(sizes: Sequence[int], predicted: Sequence[float],
                    measured: Sequence[float] | None = None, *, tile: int, title: str,
                    y_title: str = "Throughput relative to the best (1 = best)",
                    predicted_label: str = "predicted (quantisation model)",
                    measured_label: str = "measured on this machine",
                    marks: Sequence[tuple[int, str]] = (), height: int = 400) -> go.Figure:
    """Throughput vs N on linear axes: the quantisation model (dashed) and, when given, a
    measurement (markers and line), with a faint vertical line at every multiple of ``tile``
    and a labelled marker line at each (N, label) in ``marks``."""
    n = [int(v) for v in sizes]
    if not n or len(n) != len(predicted) or (measured is not None and len(n) != len(measured)):
        raise ValueError("sizes, predicted (and measured) must be non-empty and the same length")
    data = [dict(type="scatter", x=n, y=list(map(float, predicted)), mode="lines",
                 name=html.escape(predicted_label),
                 line=dict(color=COLORS["compute"], width=2, dash="dash"),
                 hovertext=[format_value(float(v)) for v in predicted],
                 hovertemplate="N = %{x}: predicted %{hovertext}<extra></extra>")]
    if measured is not None:
        data.append(dict(type="scatter", x=n, y=list(map(float, measured)),
                         mode="lines+markers", name=html.escape(measured_label),
                         line=dict(color=COLORS["memory"], width=2),
                         marker=dict(size=7, color=COLORS["memory"]),
                         hovertext=[format_value(float(v)) for v in measured],
                         hovertemplate="N = %{x}: measured %{hovertext}<extra></extra>"))
    t = int(tile)
    first = -(-min(n) // t) * t
    shapes = [dict(type="line", xref="x", yref="paper", x0=v, x1=v, y0=0, y1=1,
                   line=dict(color=PLOT_GRID, width=1, dash="dot"))
              for v in range(first, max(n) + 1, t)]
    shapes += [dict(type="line", xref="x", yref="paper", x0=v, x1=v, y0=0, y1=1,
                    line=dict(color=COLORS["danger"], width=1.5, dash="dash")) for v, _ in marks]
    notes = [dict(xref="x", yref="paper", x=v, y=1.0 + 0.07 * (i % 2), yanchor="bottom",
                  text=html.escape(lbl), showarrow=False, font=dict(color=PLOT_TEXT, size=11))
             for i, (v, lbl) in enumerate(marks)]
    return fast_figure(data, dict(
        title=dict(text=html.escape(title)), height=int(height), hovermode="closest",
        xaxis=dict(title=dict(text=f"N (square GEMM; dotted lines every {t})")),
        yaxis=dict(title=dict(text=html.escape(y_title)),
                   range=[0, max([1.1] + [1.1 * float(v) for v in (measured or ())])]),
        shapes=shapes, annotations=notes, legend=LEGEND,
        margin=dict(l=70, r=30, t=60 + 16 * bool(marks), b=40)))


def gemm_sawtooth_figure(run=None, *, per_tile: bool) -> go.Figure:
    """The sawtooth instrument's figure: ``run``'s measured and modelled throughput (a
    measured GEMM sawtooth: its ``measured`` rows, ``tile`` and ``device``), else the
    reference machine's recorded run; ``per_tile``: each N against the tile multiple at or
    below it (else against the best N)."""
    if run is not None:
        sizes = [r["n"] for r in run.measured]
        measured, modelled = ([r[key] for r in run.measured] for key in ("relative", "predicted"))
        tile, who = run.tile, f"this machine ({run.device})"
    else:
        sizes, measured, modelled = reference_machine.sawtooth_relative()
        tile = reference_machine.SAWTOOTH_TILE
        who = f"reference machine ({reference_machine.MACHINE}, recorded)"
    # a short title (the plotly modebar sits at its right end); what was assumed goes below
    return sawtooth_figure(
        sizes, modelled, measured, tile=tile, measured_label=f"measured: {who}",
        y_title=("Throughput ÷ that at the tile multiple ≤ N" if per_tile else
                 "Throughput ÷ the best N's"),
        title="GEMM throughput vs N, measured and modelled")
