"""The roofline: one or several devices, and the two-level (HBM and on-chip) roofline.

Plotly only (no marimo). Part of :mod:`labs.core.ui.figures` (labs call ``figures.<builder>``);
Lab 7's operator roofline (:mod:`labs.core.ui.figures.profile`) builds on :func:`roofline_parts`.

Every number drawn comes from labs.core (roofline.attainable_tflops, roofline.ridge_point,
hardware.Device), never recomputed here. Builders are fast enough for every slider move (a
roofline with 3 roofs and 10 points builds in a few ms): ONE go.Figure from plain dicts,
validated once, one trace per roof and per point kind, no plotly.express or update_layout.

Colour is never the only cue: roofs also differ by line dash and ridge-marker symbol per
precision and are named in the legend (device + precision); regimes are labelled in text;
measured points use a different marker shape than predicted ones.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from typing import Mapping, Sequence

from labs.core.physics.deferred import numpy as np
import plotly.graph_objects as go

from labs.core.physics import hardware, roofline
from labs.core.physics.units import format_value, rate_unit
from labs.core.ui.figures import labelplace
from labs.core.ui.figures.base import LEGEND, fast_figure, is_measured, is_real, ridge_label
from labs.core.ui.tokens import (
    COLORS,
    DEVICE_COLORS,
    PLOT_GRID,
    PLOT_TEXT,
    PRECISION_COLORS,
    PRECISION_DASH,
    PRECISION_SYMBOL,
    REGIME_COLOR_KEY,
)

__all__ = [
    "AI_TITLE", "POINT_KINDS", "Point", "Roof", "VECTOR_STYLE", "Y_TITLE", "auto_ai_range",
    "hierarchical_roofline_figure", "resolve_roofs", "roofline_figure", "roofline_parts",
    "short_name"
]

AI_TITLE = "Arithmetic intensity (FLOP/byte)"
Y_TITLE = "Attainable throughput (TFLOP/s)"
POINT_KINDS = ("predicted", "measured")
_POINT_SYMBOL = {"predicted": "circle", "measured": "x-thin-open"}
# Extra colours for roofs of different devices in the same class (never vermillion = danger).
_FALLBACK = (COLORS["accent"], COLORS["ok"], COLORS["overhead"], COLORS["warn"],
             COLORS["compute"], COLORS["memory"], COLORS["muted"])


@dataclass(frozen=True)
class Point:
    """An operation on the roofline. ``tflops=None`` places it on the roof of the first
    (device, precision) in the figure; ``hover`` adds lines {name: value} to its tooltip."""

    label: str
    ai: float
    tflops: float | None = None
    kind: str = "predicted"
    hover: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self):
        if not (is_real(self.ai) and math.isfinite(self.ai) and self.ai > 0):
            raise ValueError(f"Point {self.label!r}: ai must be a finite number > 0 (FLOP/byte), "
                             f"got {self.ai!r}")
        if self.tflops is not None and not (
                is_real(self.tflops) and math.isfinite(self.tflops) and self.tflops > 0):
            raise ValueError(f"Point {self.label!r}: tflops must be None or a finite number > 0, "
                             f"got {self.tflops!r}")
        if self.kind not in POINT_KINDS:
            raise ValueError(f"Point {self.label!r}: kind must be one of {POINT_KINDS}, "
                             f"got {self.kind!r}")


@dataclass(frozen=True)
class Roof:
    """One resolved (device, precision) roof as drawn: what tests and labs can read back."""

    device: hardware.Device
    precision: str
    peak: float  # dense TFLOP/s
    ridge: float  # FLOP/byte
    color: str
    name: str  # legend name: device + precision

    @property
    def ridge_label(self) -> str:
        return ridge_label(self.precision, self.ridge, measured=is_measured(self.device))


#: How the vector (non-tensor) ceiling is drawn: its own colour, dash and ridge symbol.
VECTOR_STYLE = {"color": COLORS["accent"], "dash": "dot", "symbol": "x"}


def short_name(device: hardware.Device) -> str:
    """Device name without the vendor prefix, for labels in a crowded plot."""
    n = device.name
    for prefix in ("NVIDIA GeForce ", "NVIDIA ", "Google ", "AMD Instinct ", "AMD "):
        if n.startswith(prefix):
            return n[len(prefix):]
    return n


def resolve_roofs(roofs) -> list[Roof]:
    """Validate (device, precision) pairs and pick colours: by precision when all roofs share
    one device, else by device class (with distinct fallbacks for same-class devices)."""
    if isinstance(roofs, tuple) and len(roofs) == 2 and isinstance(roofs[1], str):
        roofs = [roofs]  # one (device, precision) pair given bare
    if not isinstance(roofs, (list, tuple)) or not roofs:
        raise ValueError("roofs must be a non-empty list of (device, precision) pairs")
    pairs = []
    for r in roofs:
        if not (isinstance(r, (tuple, list)) and len(r) == 2):
            raise ValueError(f"roofs: each item must be a (device, precision) pair, got {r!r}")
        d = hardware.get(r[0])
        p = str(r[1]).strip().lower()
        roofline.peak_tflops(d, p)  # KeyError naming the precision and what the device has
        pairs.append((d, p))
    one_device = len({d.key for d, _ in pairs}) == 1
    used: dict[str, str] = {}  # colour -> device key that owns it
    out = []
    for d, p in pairs:
        if one_device:
            color = VECTOR_STYLE["color"] if p == roofline.VECTOR else PRECISION_COLORS[p]
        else:
            color = DEVICE_COLORS[d.device_class]
            if used.get(color, d.key) != d.key:
                color = next((c for c in _FALLBACK if c not in used), color)
            used.setdefault(color, d.key)
        vec = "vector ceiling (non-tensor)"
        if one_device:
            kind = "measured" if is_measured(d) else "dense"
            name = vec if p == roofline.VECTOR else f"{p} ({kind})"
        else:
            name = f"{short_name(d)} · {'vector' if p == roofline.VECTOR else p}"
        out.append(Roof(d, p, roofline.peak_tflops(d, p), roofline.ridge_point(d, p), color,
                        name))
    return out


def auto_ai_range(roofs: Sequence[Roof], points: Sequence[Point] = ()) -> tuple[float, float]:
    """Whole decades covering every point with >= 3x margin and every ridge with >= 10x margin
    either side (a ridge label is about a decade wide and must not run off the plot)."""
    ridges = [r.ridge for r in roofs]
    ais = [p.ai for p in points]
    lo = min(min(ridges) / 10, *(a / 3 for a in ais)) if ais else min(ridges) / 10
    hi = max(max(ridges) * 10, *(a * 3 for a in ais)) if ais else max(ridges) * 10
    return 10 ** math.floor(math.log10(lo)), 10 ** math.ceil(math.log10(hi))


def _check_range(ai_range) -> tuple[float, float]:
    try:
        lo, hi = (float(v) for v in ai_range)
    except (TypeError, ValueError):
        raise ValueError(f"ai_range must be (low, high) in FLOP/byte, got {ai_range!r}") from None
    if not (0 < lo < hi and math.isfinite(hi)):
        raise ValueError(f"ai_range must satisfy 0 < low < high, got {ai_range!r}")
    return lo, hi


_DASH_CYCLE = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
_SYMBOL_CYCLE = ("diamond", "square", "triangle-up", "circle", "triangle-down", "star",
                 "hexagon")


def _roof_trace(r: Roof, i: int, lo: float, hi: float, many_devices: bool,
                alone: bool = False) -> dict:
    """Memory slope and compute roof as one polyline (exact on log-log axes: both pieces are
    straight lines there), with the ridge marked and labelled at its vertex.

    One device: dash and ridge symbol follow the precision, labels sit above-left of the
    ridge (free space above the shared slope). Several devices: dash and symbol follow the
    roof's index (a colour-free cue per device), labels sit below-right of the ridge (under
    the roof's own flat part: above-left would cross the faster devices' slopes)."""
    x = [lo, r.ridge, hi] if lo < r.ridge < hi else [lo, hi]
    y = roofline.attainable_tflops(np.asarray(x), r.device, r.precision).tolist()
    ridge_i = 1 if len(x) == 3 else None
    text = [""] * len(x)
    size = [0] * len(x)
    unit = rate_unit(r.precision)
    hover = [f"{html.escape(r.device.name)} · {r.precision}<br>AI {format_value(xi)} FLOP/B → "
             f"{format_value(yi)} {unit}" for xi, yi in zip(x, y)]
    if ridge_i is not None:
        who = f"{html.escape(short_name(r.device))}: " if many_devices else ""
        text[ridge_i] = f"{who}{r.ridge_label}"
        size[ridge_i] = 11
        hover[ridge_i] = (f"{html.escape(r.device.name)}<br>{r.ridge_label}<br>peak "
                          f"{format_value(r.peak)} {unit} · {format_value(r.device.bandwidth_gbs)} GB/s")
    vector = r.precision == roofline.VECTOR
    dash = "solid" if alone else _DASH_CYCLE[i % 6] if many_devices else \
        VECTOR_STYLE["dash"] if vector else PRECISION_DASH[r.precision]
    symbol = _SYMBOL_CYCLE[i % 7] if many_devices else \
        VECTOR_STYLE["symbol"] if vector else PRECISION_SYMBOL[r.precision]
    return dict(
        type="scatter", x=x, y=y, name=r.name, mode="lines+markers+text",
        line=dict(color=r.color, width=2.5, dash=dash),
        marker=dict(size=size, color=r.color, symbol=symbol,
                    line=dict(width=1, color=PLOT_TEXT)),
        text=text, textposition="bottom right" if many_devices else "top left",
        textfont=dict(color=PLOT_TEXT, size=11),
        hovertext=hover, hovertemplate="%{hovertext}<extra></extra>", cliponaxis=False)


def _point_hover(p: Point, roofs: Sequence[Roof]) -> str:
    """Tooltip of a point: label, AI, its own throughput if given, and the attainable
    throughput and regime on each roof (up to 4), so one hover answers "which roof?"."""
    lines = [f"<b>{html.escape(p.label)}</b> ({p.kind})", f"AI = {format_value(p.ai)} FLOP/B"]
    if p.tflops is not None:
        lines.append(f"{p.kind} = {format_value(p.tflops)} {rate_unit(roofs[0].precision)}")
    for r in roofs[:4]:
        y = float(roofline.attainable_tflops(p.ai, r.device, r.precision))
        where = (f" on {html.escape(short_name(r.device))} · {r.precision}" if len(roofs) > 1
                 else f" ({r.precision})")
        lines.append(f"attainable{where} = {format_value(y)} {rate_unit(r.precision)}, "
                     f"{roofline.regime(p.ai, r.device, r.precision)}")
    lines += [f"{html.escape(str(k))}: {html.escape(str(v))}" for k, v in p.hover.items()]
    return "<br>".join(lines)


def _projection_trace(points: Sequence[Point], roofs: Sequence[Roof]) -> dict | None:
    """"Same kernel, other devices": each roof-placed point's AI marked on every other roof,
    joined by a dotted vertical guide (one trace, segments separated by None)."""
    xs, ys, hover, size, color = [], [], [], [], []
    for p in points:
        if p.tflops is not None:
            continue
        for j, r in enumerate(roofs):
            yv = float(roofline.attainable_tflops(p.ai, r.device, r.precision))
            xs.append(p.ai)
            ys.append(yv)
            size.append(0 if j == 0 else 10)  # the point itself is drawn on the first roof
            color.append(r.color)
            # the first entry coincides with the point itself and may win the hover: same text
            hover.append(_point_hover(p, roofs) if j == 0 else (
                f"<b>{html.escape(p.label)}</b> on {html.escape(short_name(r.device))}"
                f" · {r.precision}<br>AI = {format_value(p.ai)} FLOP/B<br>attainable = "
                f"{format_value(yv)} {rate_unit(r.precision)}, "
                f"{roofline.regime(p.ai, r.device, r.precision)}"))
        xs.append(None)
        ys.append(None)
        hover.append("")
        size.append(0)
        color.append(PLOT_TEXT)
    if not any(size):
        return None
    return dict(type="scatter", x=xs, y=ys, name="same AI on the other roofs",
                mode="lines+markers", connectgaps=False,
                line=dict(color=PLOT_TEXT, width=1, dash="dot"),
                marker=dict(size=size, color=color, symbol="circle-open", line=dict(width=2.5)),
                hovertext=hover, hovertemplate="%{hovertext}<extra></extra>", cliponaxis=False)


def _point_traces(points: Sequence[Point], roofs: Sequence[Roof], label_points: bool) -> list:
    main = roofs[0]
    traces = []
    for kind in POINT_KINDS:
        pts = [p for p in points if p.kind == kind]
        if not pts:
            continue
        ai = np.array([p.ai for p in pts])
        on_roof = roofline.attainable_tflops(ai, main.device, main.precision)
        y = [p.tflops if p.tflops is not None else float(v) for p, v in zip(pts, on_roof)]
        colors = [COLORS[REGIME_COLOR_KEY[roofline.regime(p.ai, main.device, main.precision)]]
                  for p in pts]
        hover = [_point_hover(p, roofs) for p in pts]
        traces.append(dict(
            type="scatter", x=ai.tolist(), y=y, name=f"{kind} point" + ("s" if len(pts) > 1 else ""),
            # the legend shows one marker per trace: the regimes get entries of their own
            showlegend=False, legendgroup=f"{kind} points",
            mode="markers+text" if label_points else "markers",
            marker=dict(size=11 if kind == "predicted" else 13, color=colors,
                        symbol=_POINT_SYMBOL[kind],
                        line=dict(width=1.5 if kind == "predicted" else 2.5,
                                  color=PLOT_TEXT if kind == "predicted" else colors)),
            # predicted points sit on a roof: label above (free space above the roofline);
            # measured points sit below it: label below
            text=[html.escape(p.label) for p in pts],
            textposition="top center" if kind == "predicted" else "bottom center",
            textfont=dict(size=11), hovertext=hover,
            hovertemplate="%{hovertext}<extra></extra>", cliponaxis=False))
        traces += _regime_legend(kind, pts, main)
    return traces


def _regime_legend(kind: str, pts: Sequence[Point], main: Roof) -> list:
    """Legend-only entries, one per regime present, in the colour the points are drawn in
    (one entry for points of two colours would name one and hide the other)."""
    regimes = {roofline.regime(p.ai, main.device, main.precision) for p in pts}
    return [dict(type="scatter", x=[None], y=[None], mode="markers", legendgroup=f"{kind} points",
                 name=f"{kind}, {regime}",
                 marker=dict(size=11, symbol=_POINT_SYMBOL[kind], color=COLORS[
                     REGIME_COLOR_KEY[regime]], line=dict(width=1.5, color=PLOT_TEXT)),
                 hoverinfo="skip")
            for regime in ("memory-bound", "compute-bound") if regime in regimes]


def _place_point_labels(data: list, n_roofs: int, frame: labelplace.Frame) -> None:
    """Move each point label where it crosses no roof, ridge label, marker or other label (see
    :mod:`labs.core.ui.figures.labelplace`): sets the point traces' ``textposition`` lists."""
    roofs = [t for t in data[:n_roofs]]
    lines = [frame.px(t["x"], t["y"]) for t in roofs]
    ridge_boxes = []
    for t in roofs:
        for xi, yi, text in zip(t["x"], t["y"], t["text"]):
            if text:
                ridge_boxes.append(labelplace.text_box(*map(float, frame.px(xi, yi)),
                                                       t["textposition"], text, 6))
    pts = [(t, i) for t in data[n_roofs:] if "text" in t and t.get("mode", "").endswith("text")
           for i in range(len(t["x"]))]
    where = [tuple(map(float, frame.px(t["x"][i], t["y"][i]))) for t, i in pts]
    chosen = labelplace.place(
        [(x, y, t["text"][i], t["textposition"] == "top center") for (x, y), (t, i) in
         zip(where, pts)], lines, ridge_boxes, frame)
    for t in data[n_roofs:]:
        if "text" in t and t.get("mode", "").endswith("text"):
            t["textposition"] = [pos for (tt, _), pos in zip(pts, chosen) if tt is t]


def _leader_labels(points: Sequence[Point], main: Roof) -> list:
    """Labels on leader lines, staggered above/below and further out for points whose AI is
    within ~2.8x of the previous one, so many ops of similar AI stay legible."""
    notes, prev_ai, k = [], None, 0
    for p in sorted(points, key=lambda p: p.ai):
        k = k + 1 if prev_ai is not None and p.ai / prev_ai < 10 ** 0.45 else 0
        prev_ai, up, level = p.ai, k % 2 == 0, k // 2
        y = p.tflops if p.tflops is not None else float(
            roofline.attainable_tflops(p.ai, main.device, main.precision))
        notes.append(dict(
            x=math.log10(p.ai), y=math.log10(y), xref="x", yref="y", text=html.escape(p.label),
            showarrow=True, arrowhead=0, arrowwidth=1.2, arrowcolor=PLOT_TEXT,
            ax=-24 if up else 24, ay=-(26 + 24 * level) if up else 26 + 24 * level,
            xanchor="right" if up else "left", font=dict(size=11, color=PLOT_TEXT)))
    return notes


def _regime_layout(main: Roof, lo: float, hi: float, many: bool) -> tuple[list, list]:
    """Shaded bands left/right of the main ridge, each labelled in words at the top."""
    span = math.log10(hi) - math.log10(lo)
    f = min(max((math.log10(main.ridge) - math.log10(lo)) / span, 0.0), 1.0)
    suffix = f"<br><span style='font-size:10px'>({html.escape(short_name(main.device))} · " \
             f"{main.precision})</span>" if many else ""
    shapes, notes = [], []
    # memory label top-left (above the slope: empty), compute label bottom-right (under the
    # flat roofs: empty; the top right is where the roofs run)
    for x0, x1, key, text, anchor in ((0.0, f, "memory", "← memory-bound", "left"),
                                      (f, 1.0, "compute", "compute-bound →", "right")):
        top = key == "memory"
        if x1 - x0 < 1e-6:
            continue
        shapes.append(dict(type="rect", xref="x domain", yref="y domain", x0=x0, x1=x1, y0=0,
                           y1=1, fillcolor=COLORS[key], opacity=0.09, line=dict(width=0),
                           layer="below"))
        notes.append(dict(xref="x domain", yref="y domain", x=x0 + 0.01 if anchor == "left"
                          else x1 - 0.01, y=0.99 if top else 0.01, xanchor=anchor,
                          yanchor="top" if top else "bottom",
                          text=f"<b>{text}</b>{suffix}", showarrow=False,
                          font=dict(color=PLOT_TEXT, size=12), align=anchor))
    return shapes, notes


def roofline_figure(roofs, points: Sequence[Point] = (), *, ai_range=None, title=None,
                    shade_regimes: bool = True, height: int = 420,
                    label_points: bool | str | None = None,
                    project_points: bool | None = None) -> go.Figure:
    """Log-log roofline: memory slope + compute roof per (device, precision), each ridge
    marked "ridge (fp16, dense) = 295 FLOP/B", regimes of the FIRST roof shaded and labelled,
    operation ``points`` with hover details (measured ones drawn as open crosses).

    ``label_points`` writes each point's label next to it (default: when there are <= 8);
    ``"leaders"`` puts the labels on staggered leader lines instead (many ops of similar AI).
    ``project_points`` marks each roof-placed point's AI on every other roof too ("same
    kernel, other devices"; default: when the roofs span several devices).
    """
    return fast_figure(*roofline_parts(
        roofs, points, ai_range=ai_range, title=title, shade_regimes=shade_regimes,
        height=height, label_points=label_points, project_points=project_points))


def roofline_parts(roofs, points, *, ai_range, title, shade_regimes, height, label_points,
                   project_points) -> tuple[list, dict]:
    """(data, layout) of ``roofline_figure``, shared with the two-level roofline."""
    rs = resolve_roofs(roofs)
    pts = list(points)
    for p in pts:
        if not isinstance(p, Point):
            raise ValueError(f"points must be figures.Point objects, got {p!r}")
    lo, hi = _check_range(ai_range) if ai_range is not None else auto_ai_range(rs, pts)
    many_devices = len({r.device.key for r in rs}) > 1
    leaders = label_points == "leaders"
    label_points = len(pts) <= 8 if label_points is None else bool(label_points) and not leaders
    roof_traces = [_roof_trace(r, i, lo, hi, many_devices, alone=len(rs) == 1)
                   for i, r in enumerate(rs)]
    for i, t in enumerate(roof_traces):
        t["legendrank"] = 1 + i  # legend in the caller's order ...
    # ... but drawn lowest peak first: roofs of one device share their memory slope, and the
    # roof that runs furthest along it is drawn on top, so the slope reads as one clean line
    data = [roof_traces[i] for i in sorted(range(len(rs)), key=lambda i: rs[i].peak)]
    project = many_devices if project_points is None else bool(project_points)
    proj = _projection_trace(pts, rs) if project and len(rs) > 1 else None
    if proj is not None:
        data.append(proj)
    data += _point_traces(pts, rs, label_points)
    ys = [float(roofline.attainable_tflops(lo, r.device, r.precision)) for r in rs]
    ys += [p.tflops for p in pts if p.tflops is not None]
    y_lo = min(ys) / 2
    # headroom for the ridge labels, and room for measured points above the roofs (a noisy
    # or mis-specified roofline must not push them off the chart)
    y_hi = max([r.peak * 3 for r in rs] + [p.tflops * 2 for p in pts if p.tflops is not None])
    if label_points:
        _place_point_labels(data, len(rs), labelplace.Frame((lo, hi), (y_lo, y_hi),
                                                            labelplace.plot_height_px(height)))
    shapes, notes = _regime_layout(rs[0], lo, hi, len(rs) > 1) if shade_regimes else ([], [])
    if leaders:
        notes = notes + _leader_labels(pts, rs[0])
    if title is None:
        names = list(dict.fromkeys(short_name(r.device) for r in rs))
        title = "Roofline · " + " vs ".join(names)
    y_title = Y_TITLE if not any(r.precision == "int8" for r in rs) else \
        "Attainable throughput (TFLOP/s; TOPS for int8)"
    axis = dict(type="log", dtick=1, exponentformat="none", minor=dict(showgrid=True,
                gridcolor=PLOT_GRID.replace("0.28", "0.10")))
    layout = dict(
        height=int(height), title=dict(text=html.escape(title)),
        xaxis=dict(axis, title=dict(text=AI_TITLE), range=[math.log10(lo), math.log10(hi)]),
        yaxis=dict(axis, title=dict(text=y_title),
                   range=[math.log10(y_lo), math.log10(y_hi)]),
        shapes=shapes, annotations=notes, legend=LEGEND, showlegend=True,
        hovermode="closest", margin=dict(l=70, r=30, t=50, b=40))
    return data, layout


def hierarchical_roofline_figure(roof, points: Sequence[Point] = (), *, onchip_bandwidth_gbs: float,
                                 onchip_label: str, onchip_points: Sequence[Point] = (),
                                 ai_range=None, title=None, height: int = 440) -> go.Figure:
    """Two-level roofline: the (device, precision) roof with its HBM slope, plus an on-chip
    memory roof (same compute peak, ``onchip_bandwidth_gbs``; roofline.attainable_tflops on a
    device differing only in bandwidth) and points placed by their on-chip AI."""
    (main,) = resolve_roofs([roof])
    data, layout = roofline_parts([roof], points, ai_range=ai_range, title=title, height=height,
                                   shade_regimes=True, label_points=None, project_points=False)
    lo, hi = (10 ** v for v in layout["xaxis"]["range"])
    onchip = hardware.custom(f"{main.device.name} on-chip", bandwidth_gbs=onchip_bandwidth_gbs,
                             peaks={main.precision: main.peak}, memory_gb=main.device.memory_gb,
                             source="derived on-chip bandwidth", vector_tflops=main.peak)
    x, color = np.geomspace(lo, hi, 41), COLORS["ok"]
    traces = [dict(type="scatter", x=x.tolist(), mode="lines", name=onchip_label,
                   y=roofline.attainable_tflops(x, onchip, main.precision).tolist(),
                   line=dict(color=color, width=2.5, dash="dash"),
                   hovertemplate="on-chip roof<br>AI %{x:.3s} FLOP/B → %{y:.3s} "
                                 f"{rate_unit(main.precision)}<extra></extra>")]
    for p in onchip_points:
        yv = p.tflops if p.tflops is not None else float(
            roofline.attainable_tflops(p.ai, onchip, main.precision))
        traces.append(dict(
            type="scatter", x=[p.ai], y=[yv], mode="markers+text", text=[html.escape(p.label)],
            textposition="top left", name=html.escape(p.label),
            marker=dict(size=11, color=color, symbol="square"),
            hovertext=[_point_hover(p, [main])], hovertemplate="%{hovertext}<extra></extra>"))
    if onchip_points:  # all labels placed together: an on-chip one never over an HBM one
        _place_point_labels(data + traces, 1, labelplace.Frame((lo, hi), tuple(
            10 ** v for v in layout["yaxis"]["range"]), labelplace.plot_height_px(height)))
    return fast_figure(data + traces, layout)

