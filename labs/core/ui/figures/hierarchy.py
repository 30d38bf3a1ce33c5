"""Lab 5's figures: the working-set staircase, the hierarchical roofline (one roof per memory
level, each kernel drawn once per level at that level's intensity: Yang, Kurth, Williams,
"Hierarchical Roofline Analysis for GPUs", 2020) and the bytes each level serves vs the tile
(the GEMM sawtooth: :mod:`labs.core.ui.figures.sawtooth`). Plotly only; re-exported by
:mod:`labs.core.ui.figures`.

Naming: the per-level-intensity plot is the *hierarchical* roofline. Ilic, Pratas and Sousa's
*cache-aware* roofline (IEEE CAL 2014) is a different plot, one core-side intensity under
per-level roofs; this module does not draw it, and does not use its name for the other.

Every number drawn comes from labs.core (``hierarchy.level_roof_tflops``, the kernels'
``LevelUse``, the sweeps' rows), never recomputed here. Levels differ by colour AND line dash
and marker symbol, are named in the legend and labelled on the plot; the binding level is
said in words ("binds") next to its point. A level without a bandwidth figure is never drawn as
a roof and never skipped as if unlimited: where it could bind, the verdict is "undetermined"
(``HierarchyPoint.undetermined_by``), said next to its point with the bandwidth it would need,
in the warning colour, and the points' height is an upper bound.
"""

from __future__ import annotations

import html
import math
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from labs.core.physics import hierarchy
from labs.core.physics.units import format_bytes, format_value
from labs.core.ui.figures import labelplace
from labs.core.ui.figures.base import LEGEND, fast_figure
from labs.core.ui.tokens import COLORS, PLOT_GRID, PLOT_TEXT

__all__ = [
    "cache_roofline_figure", "level_style", "nice_log_ticks", "per_level_roofline_figure",
    "tile_traffic_figure", "working_set_figure"
]

#: Cache levels fastest first (colour key, dash, symbol); main memory has its own style.
_CACHE_STYLES = (("accent", "dot", "diamond"), ("ok", "dash", "square"),
                 ("overhead", "dashdot", "triangle-up"), ("warn", "longdash", "star"))
_MEMORY_STYLE = ("memory", "solid", "circle")


#: Log axes with one labelled tick per decade and a faint minor grid (as the roofline's).
_LOG_AXIS = dict(type="log", dtick=1, exponentformat="none",
                 minor=dict(showgrid=True, gridcolor=PLOT_GRID.replace("0.28", "0.10")))


def level_style(index: int, count: int) -> tuple[str, str, str]:
    """(colour, dash, symbol) of level ``index`` of ``count`` (the last is main memory)."""
    key, dash, symbol = _MEMORY_STYLE if index == count - 1 else \
        _CACHE_STYLES[index % len(_CACHE_STYLES)]
    return COLORS[key], dash, symbol


def _binary_ticks(lo: float, hi: float) -> tuple[list[float], list[str]]:
    """Tick values every 4x from the power of 2 at or below ``lo``, labelled 16 KiB, 1 MiB."""
    v = 2.0 ** math.floor(math.log2(lo))
    vals = []
    while v <= hi * 1.001:
        vals.append(v)
        v *= 4
    return vals, [format_bytes(x, binary=True) for x in vals]


def nice_log_ticks(lo: float, hi: float) -> list[float]:
    """Decade ticks between ``lo`` and ``hi``, or 1-2-5 (then 1-1.5-2-3-5-7) where that
    leaves fewer than three: plotly's own log ticks crowd together under a decade."""
    for steps in ((1,), (1, 2, 5), (1, 1.5, 2, 3, 5, 7)):
        vals = [m * 10.0**k for k in range(math.floor(math.log10(lo)) - 1,
                                           math.ceil(math.log10(hi)) + 1)
                for m in steps if lo <= m * 10.0**k <= hi]
        if len(vals) >= 3:
            break
    return vals


def _bytes_axis(lo: float, hi: float, title: str) -> dict:
    vals, text = _binary_ticks(lo, hi)
    return dict(type="log", title=dict(text=title), tickmode="array", tickvals=vals,
                ticktext=text, range=[math.log10(lo / 1.3), math.log10(hi * 1.3)])


def working_set_figure(series, *, caches: Sequence[tuple[str, float]] = (),
                       plateaus: Sequence = (), title: str, height: int = 440) -> go.Figure:
    """Bandwidth (GB/s) vs working set (bytes), log-log.

    ``series``: (name, sizes, gbs, kind), kind ``"measured"`` (solid, filled markers) or
    ``"recorded"`` (a recorded run for comparison: dotted, open markers); ``caches``: (label,
    bytes) drawn as vertical lines (what the OS or the registry reports); ``plateaus``: objects
    with ``name``, ``lo_bytes``, ``hi_bytes``, ``bandwidth_gbs``, ``spread`` (found from the
    first series), drawn as labelled horizontal bars over their range."""
    data, xs, ys = [], [], []
    for name, sizes, gbs, kind in series:
        if kind not in ("measured", "recorded"):
            raise ValueError(f"series kind must be 'measured' or 'recorded', got {kind!r}")
        x, y = np.asarray(sizes, float), np.asarray(gbs, float)
        if x.size == 0 or x.size != y.size or np.any(x <= 0) or np.any(y <= 0):
            raise ValueError(f"series {name!r}: sizes and gbs must be non-empty, positive and "
                             "the same length")
        xs += x.tolist()
        ys += y.tolist()
        rec = kind == "recorded"
        color = COLORS["muted"] if rec else COLORS["memory"]
        data.append(dict(
            type="scatter", x=x.tolist(), y=y.tolist(), name=html.escape(name),
            mode="lines+markers", line=dict(color=color, width=1.5 if rec else 2.5,
                                            dash="dot" if rec else "solid"),
            marker=dict(size=7, color=color, symbol="circle-open" if rec else "circle"),
            text=[format_bytes(v, binary=True) for v in x],
            hovertemplate=f"{html.escape(name)}<br>%{{text}} → %{{y:.3s}} GB/s<extra></extra>"))
    if not data:
        raise ValueError("series must hold at least one (name, sizes, gbs, kind)")
    plateau_notes = []
    for i, p in enumerate(plateaus):
        color = COLORS["ok"]
        data.append(dict(
            type="scatter", x=[p.lo_bytes, p.hi_bytes], y=[p.bandwidth_gbs] * 2,
            mode="lines", line=dict(color=color, width=7), opacity=0.55,
            name="plateaus found in the data" if i == 0 else p.name, showlegend=i == 0,
            legendgroup="plateaus", cliponaxis=False,
            hovertemplate=(f"plateau {html.escape(p.name)}: {format_bytes(p.lo_bytes, binary=True)}"
                           f" – {format_bytes(p.hi_bytes, binary=True)}<br>{format_value(p.bandwidth_gbs)}"
                           f" GB/s (spread {p.spread:.0%})<extra></extra>")))
        # the label sits above the bar's middle, clear of the points that wobble around it
        plateau_notes.append(dict(
            xref="x", yref="y", x=math.log10(math.sqrt(p.lo_bytes * p.hi_bytes)),
            y=math.log10(p.bandwidth_gbs), yshift=22, showarrow=False,
            text=f"<b>{html.escape(p.name)}</b> · {format_value(p.bandwidth_gbs)} GB/s",
            font=dict(color=color, size=12)))
    lo, hi = min(xs + [c[1] for c in caches]), max(xs + [c[1] for c in caches])
    shapes = [dict(type="line", xref="x", yref="paper", x0=b, x1=b, y0=0, y1=1,
                   line=dict(color=PLOT_TEXT, width=1.2, dash="dash")) for _, b in caches]
    notes = [dict(xref="x", yref="paper", x=math.log10(b), y=1.0 + 0.065 * (i % 2),
                  yanchor="bottom", xanchor="center", text=html.escape(label), showarrow=False,
                  font=dict(color=PLOT_TEXT, size=11))
             for i, (label, b) in enumerate(sorted(caches, key=lambda c: c[1]))]
    y_lo, y_hi = min(ys) / 2, max(ys) * 2.5
    return fast_figure(data, dict(
        title=dict(text=html.escape(title)), height=int(height), hovermode="closest",
        xaxis=_bytes_axis(lo, hi, "Working set (bytes read over and over)"),
        yaxis=dict(_LOG_AXIS, title=dict(text="Bandwidth (GB/s)"),
                   range=[math.log10(y_lo), math.log10(y_hi)]),
        shapes=shapes, annotations=notes + plateau_notes, legend=LEGEND,
        margin=dict(l=70, r=30, t=70 + 16 * bool(caches), b=40)))


def per_level_roofline_figure(hier: hierarchy.Hierarchy, points: Sequence[hierarchy.HierarchyPoint] = (),
                             *, ai_range=None, title: str | None = None,
                             height: int = 460) -> go.Figure:
    """The hierarchical roofline (Yang, Kurth, Williams 2020): the compute roof, the vector
    (CUDA-core) ceiling where the hierarchy has one, and one memory roof per level with a
    bandwidth (``hierarchy.level_roof_tflops``); levels without one are named in the legend as
    "not drawn". Each kernel in ``points`` is drawn once per level at (that level's AI, the
    kernel's attainable throughput): the points share one height, and the one on its own roof
    is the binding level, labelled "binds". When a level without a bandwidth could bind
    (``HierarchyPoint.determined`` is False) no point says "binds": the height is the known
    roofs' upper bound (dashed guide, warning colour) and that level's point says
    "undetermined" with the bandwidth it would need. Each roof is named in the legend with how its
    bandwidth is known (published, derived, measured) and on the plot above its knee, clear
    of every line; the points' labels avoid the lines, the markers and each other."""
    if not isinstance(hier, hierarchy.Hierarchy):
        raise ValueError("hier must be a hierarchy.Hierarchy")
    ais = [u.ai for p in points for u in p.uses if u.ai is not None]
    if ai_range is None:
        lo = min([0.05] + [a / 4 for a in ais])
        hi = max([1e3] + [a * 4 for a in ais])
        lo, hi = 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))
    else:
        lo, hi = (float(v) for v in ai_range)
        if not 0 < lo < hi:
            raise ValueError(f"ai_range must satisfy 0 < low < high, got {ai_range!r}")
    n = len(hier.levels)
    peak_name = f"{hier.precision} tensor-core peak" if hier.kind == "gpu" else \
        f"compute roof ({hier.precision})"
    data = [dict(type="scatter", x=[lo, hi], y=[hier.peak_tflops] * 2, mode="lines",
                 name=f"{peak_name}: {format_value(hier.peak_tflops)} TFLOP/s",
                 line=dict(color=COLORS["compute"], width=2.5),
                 hovertemplate=f"{peak_name} %{{y:.3s}} TFLOP/s<extra></extra>")]
    if hier.vector_tflops and hier.vector_tflops < hier.peak_tflops:
        data.append(dict(type="scatter", x=[lo, hi], y=[hier.vector_tflops] * 2, mode="lines",
                         name=f"vector (CUDA-core) ceiling: {format_value(hier.vector_tflops)} TFLOP/s"
                              " (scalar kernels)",
                         line=dict(color=COLORS["compute"], width=1.5, dash="dot"),
                         hovertemplate="vector ceiling %{y:.3s} TFLOP/s<extra></extra>"))
    y_min = min(hier.peak_tflops, hier.vector_tflops or hier.peak_tflops)
    for i, lv in enumerate(hier.levels):
        color, dash, symbol = level_style(i, n)
        tag = f"{html.escape(lv.name)} · {format_value(lv.bandwidth_gbs)} GB/s" if lv.bandwidth_gbs \
            else f"{html.escape(lv.name)}: no bandwidth figure (not drawn)"
        if lv.bandwidth_gbs is None:
            data.append(dict(type="scatter", x=[None], y=[None], mode="lines", name=tag,
                             line=dict(color=color, dash=dash, width=2.5)))
            continue
        # a roof is two straight segments on log-log axes (slant, then flat): its ends and
        # its knee draw it exactly, and a hover reads the knee
        knee = min(max(hier.peak_tflops * 1e3 / lv.bandwidth_gbs, lo), hi)
        x = np.array(sorted({lo, knee, hi}))
        y = hierarchy.level_roof_tflops(x, lv, hier.peak_tflops)
        y_min = min(y_min, float(y[0]))
        basis = {"published": "", "derived": " (derived)", "measured": " (measured)"}[
            lv.bandwidth_basis]
        data.append(dict(type="scatter", x=x.tolist(), y=y.tolist(), mode="lines",
                         name=f"{tag}{basis}", line=dict(color=color, dash=dash, width=2.5),
                         hovertemplate=f"{tag}{basis}<br>AI %{{x:.3s}} FLOP/B → %{{y:.3s}} "
                                       "TFLOP/s<extra></extra>"))
    for p in points:
        y_min = min(y_min, p.attainable_tflops)
    y_range = (y_min / 3, hier.peak_tflops * 3)
    frame = labelplace.Frame((lo, hi), y_range, labelplace.plot_height_px(height))
    lines = [frame.px([lo, hi], [hier.peak_tflops] * 2)]
    if hier.vector_tflops:
        lines.append(frame.px([lo, hi], [hier.vector_tflops] * 2))
    for lv in hier.levels:  # a roof is two straight segments in log-log: slant, then flat
        if lv.bandwidth_gbs:
            knee = min(max(hier.peak_tflops * 1e3 / lv.bandwidth_gbs, lo), hi)
            xs = np.array([lo, knee, hi])
            lines.append(frame.px(xs, hierarchy.level_roof_tflops(xs, lv, hier.peak_tflops)))
    taken: list = []  # the points' labels and markers, placed first: the roof names avoid them
    for p in points:
        data += _kernel_traces(p, n, frame, lines, taken)
    roof_notes = _roof_labels(hier, frame, lo, hi, taken)
    if title is None:
        title = f"Hierarchical roofline · {hier.name}"
    axis = dict(type="log", dtick=1, exponentformat="none",
                minor=dict(showgrid=True, gridcolor=PLOT_GRID.replace("0.28", "0.10")))
    return fast_figure(data, dict(
        title=dict(text=html.escape(title)), height=int(height), hovermode="closest",
        xaxis=dict(axis, title=dict(text="Arithmetic intensity at each level (FLOP per byte "
                                         "that level serves)"),
                   range=[math.log10(lo), math.log10(hi)]),
        yaxis=dict(axis, title=dict(text="Attainable throughput (TFLOP/s)"),
                   range=[math.log10(v) for v in y_range]),
        annotations=roof_notes, legend=LEGEND, margin=dict(l=70, r=30, t=50, b=40)))


#: The old name of :func:`per_level_roofline_figure` (the plot is Yang and Williams'
#: hierarchical roofline, not Ilic's cache-aware one); kept so that callers keep working.
cache_roofline_figure = per_level_roofline_figure


def _roof_labels(hier: hierarchy.Hierarchy, frame, lo: float, hi: float, taken=()) -> list:
    """Each drawn roof's name just above the compute roof, centred on its knee (where the
    roof meets the compute roof: AI = peak / bandwidth), in its colour: clear of every
    slanted line (they all lie below the compute roof), one row up (at most three) where it
    would touch another name or a box in ``taken`` (the points' labels and markers, in
    ``frame``'s pixels)."""
    notes, boxes = [], []

    def hits(box):
        return any(min(box[2], t[2]) > max(box[0], t[0]) and min(box[3], t[3]) > max(box[1], t[1])
                   for t in list(taken) + [b[:4] for b in boxes])
    n = len(hier.levels)
    for i, lv in enumerate(hier.levels):
        if not lv.bandwidth_gbs:
            continue
        knee = hier.peak_tflops / (lv.bandwidth_gbs / 1e3)
        if not lo <= knee <= hi:
            continue
        x, y = (float(v) for v in frame.px(knee, hier.peak_tflops))
        w = len(lv.name) * labelplace.CHAR_PX + 4
        row = 0
        while row < 2 and hits((x - w / 2, y + 3 + row * labelplace.LINE_PX, x + w / 2,
                                y + 3 + (row + 1) * labelplace.LINE_PX)):
            row += 1
        y0 = y + 3 + row * labelplace.LINE_PX
        boxes.append((x - w / 2, y0, x + w / 2, y0 + labelplace.LINE_PX, x, w, row))
        notes.append(dict(xref="x", yref="y", x=math.log10(knee),
                          y=math.log10(hier.peak_tflops), xanchor="center", yanchor="bottom",
                          yshift=3 + row * labelplace.LINE_PX, showarrow=False,
                          text=f"<b>{html.escape(lv.name)}</b>",
                          font=dict(color=level_style(i, n)[0], size=11)))
    return notes


def _kernel_traces(p: hierarchy.HierarchyPoint, n: int, frame=None, lines=(),
                   boxes=()) -> list[dict]:
    """One kernel: a dotted guide at its attainable height, a marker per level it touches.
    Levels at the same AI (within 5%) share one label ("binds: L2 = L1 / shared memory"); each
    label takes the first place that crosses no roof line, marker or other label
    (``ui/labelplace.py``, judged in ``frame``'s pixels against the roof ``lines``). When the
    verdict is undetermined the guide is dashed in the warning colour (an upper bound) and
    the level without a figure is labelled "undetermined: L2 (needs ≥ 31 TB/s)"."""
    y = p.attainable_tflops
    uses = [(i, u) for i, u in enumerate(p.uses) if u.ai is not None]
    if not uses:
        return []
    ais = [u.ai for _, u in uses]
    open_ = {r.level.name: r for r in p.undetermined_by}
    out = [dict(type="scatter", x=[min(ais), max(ais)], y=[y, y], mode="lines",
                line=dict(color=PLOT_TEXT if not open_ else COLORS["warn"],
                          width=1 if not open_ else 1.5, dash="dot" if not open_ else "dash"),
                showlegend=False, hoverinfo="skip")]
    # the binding level (or the undetermined one) is drawn last, on top; a level at the AI of
    # one drawn after it gives its name to that one's label
    drawn = sorted(uses, key=lambda iu: iu[1].level.name == p.binding
                   or iu[1].level.name in open_)
    label = {}
    for k, (i, u) in enumerate(drawn):
        same = [v for _, v in drawn[k + 1:] if abs(math.log(v.ai / u.ai)) < math.log(1.05)]
        if same:
            label[i] = ""
            continue
        hidden = [v.level.name for _, v in drawn[:k] if label.get(_index(p, v)) == ""
                  and abs(math.log(v.ai / u.ai)) < math.log(1.05)]
        name = " = ".join([u.level.name] + hidden)
        if u.level.name in open_:
            need = open_[u.level.name].needs_gbs
            label[i] = " = ".join([f"undetermined: {u.level.name} (needs ≥ "
                                   f"{format_value(need / 1e3)} TB/s)"] + hidden)
        else:
            label[i] = f"binds: {name}" if u.level.name == p.binding else name
    place_text = {i: "top center" for i in label}
    shown = [(i, u) for i, u in drawn if label[i]]
    if frame is not None and shown:
        guide = frame.px([min(ais), max(ais)], [y, y])
        pts = [(*(float(v) for v in frame.px(u.ai, y)), label[i], True) for i, u in shown]
        for (i, _u), pos, pt in zip(shown, labelplace.place(pts, list(lines) + [guide],
                                                              list(boxes), frame), pts):
            place_text[i] = pos
            boxes.append(labelplace.text_box(pt[0], pt[1], pos, pt[2]))
        boxes.extend((px - 8, py - 8, px + 8, py + 8) for px, py, _t, _a in pts)
    for i, u in drawn:
        color, _, symbol = level_style(i, n)
        binds = u.level.name == p.binding
        unknown = open_.get(u.level.name)
        roof = u.roof_tflops()
        hover = (f"<b>{html.escape(p.kernel.name)}</b> at {html.escape(u.level.name)}<br>"
                 f"bytes served: {format_bytes(u.bytes)}<br>AI = {format_value(u.ai)} FLOP/B<br>"
                 + (f"this level's roof: {format_value(roof)} TFLOP/s" if roof is not None else
                    "no bandwidth figure for this level")
                 + f"<br>the level holds: {u.holds}" + ("<br><b>binds</b>" if binds else "")
                 + (f"<br><b>undetermined</b>: {html.escape(unknown.describe())}"
                    if unknown is not None else "")
                 + (f"<br>height: at most {format_value(y)} TFLOP/s (the known roofs' bound)"
                    if open_ else ""))
        out.append(dict(
            type="scatter", x=[u.ai], y=[y], mode="markers+text",
            name=f"{html.escape(p.kernel.name)} · AI at {html.escape(u.level.name)}",
            marker=dict(size=16 if binds or unknown else 11, color=color, symbol=symbol,
                        line=dict(width=2.5 if binds or unknown else 1,
                                  color=COLORS["warn"] if unknown else PLOT_TEXT)),
            text=[f"<b>{html.escape(label[i])}</b>" if binds or unknown
                  else html.escape(label[i])],
            textposition=place_text[i], textfont=dict(color=PLOT_TEXT, size=11),
            hovertext=[hover], hovertemplate="%{hovertext}<extra></extra>", showlegend=False,
            cliponaxis=False))
    return out


def tile_traffic_figure(hier: hierarchy.Hierarchy, curve: Sequence[tuple[int, hierarchy.HierarchyPoint]], *,
                        current: int | None = None, failed: Sequence[int] = (), title: str,
                        height: int = 440) -> go.Figure:
    """Bytes each level serves (log) vs the cache tile T (log 2), one line per level (colour,
    dash and symbol), the binding level written above every T ("undetermined", in the warning
    colour with the verdict on hover, where a level without a bandwidth could bind), the tiles
    whose cache thrashes
    shaded, the tiles in ``failed`` (too big for shared memory or the register file: they fail to launch) shaded
    and labelled with no traffic drawn, and the current tile marked. ``curve``: (T,
    ``hierarchy.place`` result) for the tiles that launch."""
    pts = list(curve)
    if not pts:
        raise ValueError("curve must hold at least one (tile, HierarchyPoint)")
    ts = [int(t) for t, _ in pts]
    bad = sorted(int(t) for t in failed)
    every = sorted(set(ts) | set(bad))
    n = len(hier.levels)
    data, ys = [], []
    # main memory first, faster levels drawn over it with smaller markers: levels serving the
    # same bytes overlap, and every one stays visible
    for i, lv in reversed(list(enumerate(hier.levels))):
        color, dash, symbol = level_style(i, n)
        y = [p.uses[i].bytes / 1e9 for _, p in pts]
        keep = [(t, v) for t, v in zip(ts, y) if v > 0]
        if not keep:
            continue
        ys += [v for _, v in keep]
        data.append(dict(type="scatter", x=[t for t, _ in keep], y=[v for _, v in keep],
                         mode="lines+markers", name=f"bytes {html.escape(lv.name)} serves",
                         legendrank=i + 1,
                         # wider underneath: a level serving the same bytes as the one
                         # below it shows as a dashed line over that level's band
                         line=dict(color=color, dash=dash, width=2 + 2 * i),
                         marker=dict(size=6 + 2 * i, color=color, symbol=symbol),
                         hovertemplate=f"{html.escape(lv.name)}: T = %{{x}} → %{{y:.3s}} GB"
                                       "<extra></extra>"))
    notes = [dict(xref="x", yref="paper", x=math.log10(t), y=1.0, yanchor="bottom",
                  text=f"{html.escape(p.binding)}", showarrow=False, textangle=-30,
                  font=dict(color=COLORS["danger"] if p.thrashes else PLOT_TEXT if p.determined
                            else COLORS["warn"], size=10),
                  **({} if p.determined else {"hovertext": html.escape(p.verdict)}))
             for t, p in pts]
    notes.append(dict(xref="paper", yref="paper", x=0, y=1.0, xanchor="right",
                      yanchor="bottom", text="binds:", showarrow=False,
                      font=dict(color=PLOT_TEXT, size=10)))
    shapes = []

    def band(first, last, label):
        i = every.index(first)
        lo = math.sqrt(first * (every[i - 1] if i else first / 2))
        j = every.index(last)
        hi = math.sqrt(last * every[j + 1]) if j + 1 < len(every) else last * 1.3
        shapes.append(dict(type="rect", xref="x", yref="paper", x0=lo, x1=hi, y0=0, y1=1,
                           fillcolor=COLORS["danger"], opacity=0.08, line=dict(width=0),
                           layer="below"))
        notes.append(dict(xref="x", yref="paper", x=math.log10(lo), y=0.02, xanchor="left",
                          yanchor="bottom", text=f"<b>{label}</b>", showarrow=False,
                          font=dict(color=COLORS["danger"], size=12)))

    thrash = [t for t, p in pts if p.thrashes]
    if thrash:
        band(thrash[0], thrash[-1], "the cache thrashes")
    if bad:
        band(bad[0], bad[-1], "fails to launch")
        notes += [dict(xref="x", yref="paper", x=math.log10(t), y=1.0, yanchor="bottom",
                       text="—", showarrow=False, font=dict(color=COLORS["danger"], size=10))
                  for t in bad]
    if current is not None and current in every:
        shapes.append(dict(type="line", xref="x", yref="paper", x0=current, x1=current,
                           y0=0, y1=1, line=dict(color=COLORS["danger"], width=2)))
        notes.append(dict(xref="x", yref="paper", x=math.log10(current), y=0.5,
                          xanchor="left", text=f" your T = {current}", showarrow=False,
                          font=dict(color=COLORS["danger"], size=11)))
    lo_y, hi_y = min(ys) / 1.6, max(ys) * 1.6
    yticks = nice_log_ticks(lo_y, hi_y)
    return fast_figure(data, dict(
        title=dict(text=html.escape(title)), height=int(height), hovermode="closest",
        xaxis=dict(type="log", title=dict(text="Cache tile T (T × T)"), tickmode="array",
                   tickvals=every, ticktext=[str(t) for t in every],
                   range=[math.log10(min(every) / 1.3), math.log10(max(every) * 1.3)]),
        yaxis=dict(type="log", title=dict(text="Bytes each level serves (GB)"),
                   range=[math.log10(lo_y), math.log10(hi_y)], tickmode="array",
                   tickvals=yticks, ticktext=[format_value(v) for v in yticks]),
        shapes=shapes, annotations=notes, legend=LEGEND,
        # room above the plot for the slanted "binds" names ("undetermined", "L1 / shared
        # memory") below the title
        margin=dict(l=70, r=30, t=110, b=40)))


def _index(p: hierarchy.HierarchyPoint, use: hierarchy.LevelUse) -> int:
    return next(i for i, u in enumerate(p.uses) if u is use)
