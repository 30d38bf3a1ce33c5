"""Figures of a model profile (Lab 7): every operator on the roofline, coloured and named by
regime, and time per operator type. Plotly only; re-exported by :mod:`labs.core.ui.figures`.

The builders take the profile's rows as plain dicts (the keys ``labs.core.measure.profile.profiler``
writes: name, module, shapes, op_type, flops, flops_source, bytes, ai, measured_s, bound_s,
regime), so the ui wing needs nothing from the measure wing.
"""

from __future__ import annotations

import html
from typing import Mapping, Sequence

import plotly.graph_objects as go

from labs.core.physics import units
from labs.core.ui.figures.roofline import Point, roofline_parts
from labs.core.ui.figures.charts import bar_figure, grouped_bar_figure
from labs.core.ui.figures.base import fast_figure
from labs.core.ui.tokens import COLORS, PLOT_TEXT, REGIME_COLOR_KEY

__all__ = ["before_after_figure", "operator_roofline_figure", "plottable", "step_bound_figure",
           "time_by_type_figure"]

_SYMBOL = {"measured": "x-thin-open", "predicted": "circle"}
#: Legend order and the words each regime's trace carries (colour is never the only cue).
_REGIME_ORDER = ("memory-bound", "compute-bound", "overhead-bound", "FLOPs unknown")


def plottable(rows: Sequence[Mapping], kind: str = "measured") -> tuple[list, list]:
    """(rows drawn, rows left off): a row is drawn when its AI is > 0 and its time (measured,
    or the bound for predicted points) is > 0; the rest (data movement at AI 0, views, FLOPs
    unknown) can't sit on a log axis."""
    key = "measured_s" if kind == "measured" else "bound_s"
    drawn, left = [], []
    for r in rows:
        ok = (r.get("ai") or 0) > 0 and (r.get(key) or 0) > 0 and (r.get("flops") or 0) > 0
        (drawn if ok else left).append(r)
    return drawn, left


def _hover(r: Mapping, kind: str) -> str:
    t = r.get("measured_s")
    e = lambda k: html.escape(str(r.get(k) or ""))  # noqa: E731
    lines = [f"<b>{e('name')}</b> · {e('module')}", f"shapes {e('shapes')} · {e('dtype')}",
             f"{e('op_type')} · {e('regime')}",
             f"FLOPs {units.format_flops(r['flops'])}"
             + (" (estimate)" if r.get("flops_source") == "estimate" else ""),
             f"bytes {units.format_bytes(r['bytes'])} · AI {units.format_value(r['ai'])} FLOP/B",
             f"roofline bound {units.format_seconds(r['bound_s'])}"]
    if kind == "measured" and t:
        lines.append(f"measured {units.format_seconds(t)} "
                     f"({units.format_value(t / r['bound_s'])}× the bound)" if r.get("bound_s") else
                     f"measured {units.format_seconds(t)}")
    return "<br>".join(lines)


def operator_roofline_figure(rows: Sequence[Mapping], roof, precision: str, *,
                             kind: str = "measured", title: str | None = None,
                             height: int = 460) -> go.Figure:
    """The roofline of ``roof`` (a hardware.Device or registry key) at ``precision`` with one
    point per operator call: measured throughput (FLOPs / measured time) for ``kind``
    "measured", the roof itself (FLOPs / bound) for "predicted". One trace per regime, named
    in the legend and the hover (name, module, shapes, FLOPs, bytes, AI, bound, time)."""
    if kind not in _SYMBOL:
        raise ValueError(f"kind must be 'measured' or 'predicted', got {kind!r}")
    drawn, _left = plottable(rows, kind)
    key = "measured_s" if kind == "measured" else "bound_s"
    ys = [r["flops"] / r[key] / 1e12 for r in drawn]
    anchors = [Point("", r["ai"], y, kind=kind) for r, y in zip(drawn, ys)]
    data, layout = roofline_parts(
        [(roof, precision)], anchors, ai_range=None, title=title, shade_regimes=True,
        height=height, label_points=False, project_points=False)
    data = [t for t in data if not str(t.get("name", "")).startswith(("measured", "predicted"))]
    # small operators reach down to ~1e-7 TFLOP/s: powers of ten read better than decimals
    layout["yaxis"] = dict(layout["yaxis"], exponentformat="power")
    for regime in _REGIME_ORDER:
        pts = [(r, y) for r, y in zip(drawn, ys) if r.get("regime") == regime]
        if not pts:
            continue
        color = COLORS[REGIME_COLOR_KEY.get(regime, "muted")]
        data.append(dict(
            type="scatter", mode="markers", name=f"{regime} ({kind}, {len(pts)})",
            x=[r["ai"] for r, _y in pts], y=[y for _r, y in pts],
            marker=dict(size=10 if kind == "measured" else 9, color=color,
                        symbol=_SYMBOL[kind], line=dict(width=2 if kind == "measured" else 1,
                                                        color=color if kind == "measured"
                                                        else PLOT_TEXT)),
            hovertext=[_hover(r, kind) for r, _y in pts],
            hovertemplate="%{hovertext}<extra></extra>", cliponaxis=False))
    return fast_figure(data, layout)


def step_bound_figure(times: Mapping[str, float], *, title: str) -> go.Figure:
    """The roofline's step: bars of seconds per operator type (``tiny_models.time_by_group``),
    shown in µs with each bar's time and share of the step's bound written above it."""
    total = sum(times.values())
    return bar_figure(list(times), [v * 1e6 for v in times.values()],
                      yaxis_title="roofline bound (µs)", title=title,
                      annotations=[f"{units.format_seconds(v)} · {v / total:.1%}"
                                   for v in times.values()])


def time_by_type_figure(groups: Sequence[Mapping], *, title: str, key: str = "op_type",
                        value: str = "time_s") -> go.Figure:
    """Bars of seconds per group (``Profile.by_op_type()`` or ``by_regime()`` rows), shown in
    ms with each bar's share of the pass written above it."""
    groups = [g for g in groups if (g.get(value) or 0) > 0]
    if not groups:
        raise ValueError("no group has any time to show")
    colors = [REGIME_COLOR_KEY.get(g[key], "overhead" if "overhead" in g[key] else "accent")
              for g in groups]
    return bar_figure([g[key] for g in groups], [g[value] * 1e3 for g in groups],
                      colors=colors, title=title, yaxis_title="time (ms)",
                      annotations=[f"{units.format_seconds(g[value])} · {g['share']:.0%}"
                                   for g in groups])


def before_after_figure(before: Sequence[Mapping], after: Sequence[Mapping], *,
                        labels: tuple[str, str], title: str, key: str = "op_type",
                        value: str = "time_s") -> go.Figure:
    """Grouped bars, ms per group, of two profiles' ``by_op_type()`` (or ``by_regime()``)
    rows: one change, before and after. The legend names each side; groups in ``before``'s
    order, then any only ``after`` has."""
    order = [g[key] for g in before] + [g[key] for g in after
                                        if g[key] not in {b[key] for b in before}]
    if not order:
        raise ValueError("no group to show")
    if len(set(labels)) != 2:
        raise ValueError(f"labels must name the two sides differently, got {labels!r}")
    ms = {name: [{g[key]: g[value] for g in rows}.get(k, 0.0) * 1e3 for k in order]
          for rows, name in ((before, labels[0]), (after, labels[1]))}
    return grouped_bar_figure(
        order, ms, colors=("muted", "accent"), title=title, yaxis_title="time (ms)", unit=" ms",
        texts={name: [units.format_seconds(y / 1e3) if y else "" for y in ys]
               for name, ys in ms.items()})
