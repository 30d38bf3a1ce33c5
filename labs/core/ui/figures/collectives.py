"""Figures of Lab 6 (many chips): collective time against message size (the model and this
machine's measurements), the three roofs, a sharded block's times against the batch, a decode
step against the tensor-parallel degree and a data-parallel step against the batch per chip.
Plotly only; re-exported by :mod:`labs.core.ui.figures`, so labs call ``figures.<builder>``.

Every number drawn comes from labs.core (``roofline.attainable_tflops`` on the device and on a
device that differs from it only in bandwidth, for a link; times from
``physics.collectives`` and the results of ``physics.sharding``); nothing is recomputed here. Colour is never the only cue: lines
differ by dash, measured points by symbol, and every roof and point is named in text.
"""

from __future__ import annotations

import html
import math
from typing import Sequence

import numpy as np
import plotly.graph_objects as go

from labs.core.physics import collectives, hardware, roofline
from labs.core.physics.units import format_seconds, format_value
from labs.core.ui.figures.base import LEGEND, fast_figure
from labs.core.ui.figures.charts import loglog_lines_figure
from labs.core.ui.tokens import COLORS, PLOT_GRID, PLOT_TEXT, TERM_COLORS

__all__ = ["LINK_COLOR_KEY", "alpha_beta_figure", "block_batch_figure", "block_roofs_figure",
           "decode_time_figure", "decode_throughput_figure", "dp_step_figure",
           "measured_collectives_figure", "ring_allreduce_figure", "scaling_figure",
           "three_roof_figure"]

#: The link's colour (purple: distinct from HBM blue and compute orange for every colour
#: vision, as tested for the regime trio); communication-bound uses it too (tokens).
LINK_COLOR_KEY = "overhead"
_SYMBOLS = ("circle", "square", "diamond", "triangle-up", "x", "star")
_DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")


def _color(c: str | None, i: int) -> str:
    return COLORS.get(c, c) if c else TERM_COLORS[i % len(TERM_COLORS)]


def _log_axis(title: str, values, pad: float = 2.0) -> dict:
    vals = [float(v) for v in values if v is not None and math.isfinite(v) and v > 0]
    if not vals:
        raise ValueError(f"nothing to draw on the axis {title!r}: no positive finite value")
    lo, hi = math.log10(min(vals) / pad), math.log10(max(vals) * pad)
    return dict(type="log", title=dict(text=title), exponentformat="SI", dtick=1,
                range=[math.floor(lo), math.ceil(hi)],
                minor=dict(showgrid=True, gridcolor=PLOT_GRID.replace("0.28", "0.10")))


def _seconds_axis(title: str, values) -> dict:
    """A log time axis whose decades read "10 µs", "1 ms", "1 s": one unit per tick, never
    plotly's mix of "100µ" and "0.001"."""
    axis = _log_axis(title, values)
    lo, hi = axis["range"]
    ticks = [10.0 ** e for e in range(int(lo), int(hi) + 1)]
    return dict(axis, tickmode="array", tickvals=ticks,
                ticktext=[format_seconds(t) for t in ticks])


def alpha_beta_figure(lines: Sequence = (), points: Sequence = (), *, marks: Sequence = (),
                      title: str, height: int = 430) -> go.Figure:
    """Time of one collective against message size, log-log.

    ``lines``: (name, sizes, seconds, colour, dash) model curves (a link's α-β model, a fit);
    ``points``: (name, sizes, seconds, colour) measured medians, drawn as open markers;
    ``marks``: (label, size, seconds, colour) single points named in the legend (a prediction).
    Colours are colour strings, COLORS keys, or None for the next term colour.
    """
    if not (lines or points or marks):
        raise ValueError("alpha_beta_figure needs at least one line, point set or mark")
    data, xs, ys = [], [], []
    for i, (name, sizes, secs, color, dash) in enumerate(lines):
        x, y = np.asarray(sizes, float), np.asarray(secs, float)
        xs += x.tolist()
        ys += y.tolist()
        data.append(dict(type="scatter", x=x.tolist(), y=y.tolist(), mode="lines",
                         name=html.escape(name), line=dict(color=_color(color, i), width=2.5,
                                                           dash=dash or _DASHES[i % 6]),
                         hovertemplate=f"{html.escape(name)}<br>%{{x:.3s}}B → %{{y:.3s}}s"
                                       "<extra></extra>"))
    for i, (name, sizes, secs, color) in enumerate(points):
        x, y = np.asarray(sizes, float), np.asarray(secs, float)
        xs += x.tolist()
        ys += y.tolist()
        c = _color(color, i)
        data.append(dict(type="scatter", x=x.tolist(), y=y.tolist(), mode="markers",
                         name=html.escape(name),
                         marker=dict(size=10, color=c, symbol=_SYMBOLS[i % 6] + "-open",
                                     line=dict(width=2, color=c)),
                         hovertemplate=f"{html.escape(name)} (measured)<br>%{{x:.3s}}B → "
                                       "%{y:.3s}s<extra></extra>"))
    for i, (label, size, secs, color) in enumerate(marks):
        xs.append(float(size))
        ys.append(float(secs))
        # named in the legend: a label beside the point ran across the other links' lines
        data.append(dict(type="scatter", x=[float(size)], y=[float(secs)], mode="markers",
                         name=html.escape(label), showlegend=True, cliponaxis=False,
                         marker=dict(size=13, color=_color(color, i), symbol="star",
                                     line=dict(width=1, color=PLOT_TEXT)),
                         hovertemplate=f"{html.escape(label)}<br>%{{x:.3s}}B → %{{y:.3s}}s"
                                       "<extra></extra>"))
    layout = dict(title=dict(text=html.escape(title)), height=int(height), hovermode="closest",
                  xaxis=_log_axis("Message size (bytes; k, M, G = 1e3, 1e6, 1e9)", xs, 1.5),
                  yaxis=_seconds_axis("Time per collective", ys),
                  legend=LEGEND, showlegend=True, margin=dict(l=70, r=30, t=50, b=40))
    return fast_figure(data, layout)


def ring_allreduce_figure(links: Sequence[str], n: int, sizes, *, achievable_link: str,
                          marks: Sequence = ()) -> go.Figure:
    """A ring all-reduce of ``n`` chips against message size on each of ``links`` (α-β
    model at the ideal one-way rate), with ``achievable_link`` drawn again at what nccl-tests
    reaches on it; ``marks`` as :func:`alpha_beta_figure`'s. Raises ValueError where a link
    cannot join ``n`` chips."""
    lines = [(collectives.collective_path(k, n).name, sizes,
              [collectives.link_time("all-reduce", s, n, k) for s in sizes], None, None)
             for k in links]
    mine = collectives.collective_path(achievable_link, n, achievable=True)
    lines.insert(1, (f"{mine.link.short_name} at {mine.efficiency:.0%}: achievable "
                     "ring, nccl-tests",
                     sizes, [mine.time("all-reduce", s) for s in sizes], "muted",
                     "longdash"))
    return alpha_beta_figure(lines, marks=marks,
                             title=f"Ring all-reduce, n = {n}: α-β model on each link")


def measured_collectives_figure(rows: Sequence[dict], fits: Sequence, *, backend: str,
                                n: int) -> go.Figure:
    """This machine's measured collectives next to NVLink's and PCIe's all-reduce model.
    ``rows``: the benchmark's measured rows (dicts with op, bytes, median_s; status "ok");
    ``fits``: its α-β fits (each with op, alpha_s, busbw_gbs and predict(nbytes))."""
    sizes = np.geomspace(min(r["bytes"] for r in rows) / 2, 1e9, 41)
    points = [(f"{op} (measured)", [r["bytes"] for r in rows if r["op"] == op],
               [r["median_s"] for r in rows if r["op"] == op], None)
              for op in collectives.OPS if any(r["op"] == op for r in rows)]
    lines = [(f"{f.op} fit: α {format_seconds(f.alpha_s)}, β {f.busbw_gbs:.3g} GB/s",
              sizes, [f.predict(s) for s in sizes], None, "dash") for f in fits]
    lines += [(f"{collectives.get_link(k).short_name}, all-reduce model", sizes,
               [collectives.link_time("all-reduce", s, n, k) for s in sizes], "muted", "dot")
              for k in ("nvlink4", "pcie5-x16")]
    return alpha_beta_figure(
        lines, points, title=f"This machine ({backend}, {n} workers) next to NVLink and PCIe")


def _roof_device(device: hardware.Device, precision: str, name: str, gbs: float):
    """The device with another bandwidth: a link's roof is a roofline whose slope is the link."""
    return hardware.custom(name, bandwidth_gbs=gbs, peaks={precision: device.peak_tflops(
        precision)}, memory_gb=device.memory_gb, source="the link's one-way bandwidth")


def three_roof_figure(device, precision: str, links: Sequence, *, ai_hbm: float,
                      ai_link: float, attained_tflops: float | None = None,
                      title: str | None = None, height: int = 450) -> go.Figure:
    """Compute, HBM and link roofs on one log-log chart, the layer placed on each.

    x is an intensity in FLOP per byte: of HBM traffic for the HBM roof, of link traffic for
    the link roofs. ``links``: (name, one-way GB/s) pairs, the first the layer's own link (the
    others drawn dotted for comparison). The layer appears twice (at its HBM intensity on the
    HBM roof, at its link intensity on its link roof); the lower of the two is the binding
    roof, stated in the legend and by a dashed line. ``attained_tflops``: the layer's
    throughput with the collective's latency counted, drawn below its link point.
    """
    d = hardware.get(device)
    peak = d.peak_tflops(precision)
    if not links:
        raise ValueError("links must hold at least one (name, one-way GB/s) pair")
    for name, v in (("ai_hbm", ai_hbm), ("ai_link", ai_link)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0):
            raise ValueError(f"{name} must be a finite number > 0 (FLOP/byte), got {v!r}")
    roofs = [("HBM", d, COLORS["memory"], "solid")] + [
        (str(n), _roof_device(d, precision, str(n), gbs), COLORS[LINK_COLOR_KEY] if i == 0
         else COLORS["muted"], "solid" if i == 0 else ("dot", "dash", "dashdot")[(i - 1) % 3])
        for i, (n, gbs) in enumerate(links)]
    ridges = [roofline.ridge_point(r, precision) for _, r, _, _ in roofs]
    lo = 10 ** math.floor(math.log10(min(ridges + [ai_hbm, ai_link]) / 10))
    hi = 10 ** math.ceil(math.log10(max(ridges + [ai_hbm, ai_link]) * 10))
    data = [dict(type="scatter", x=[lo, hi], y=[peak, peak], mode="lines",
                 name=f"compute roof: {format_value(peak)} TFLOP/s ({precision}, dense)",
                 line=dict(color=COLORS["compute"], width=2.5),
                 hovertemplate=f"compute roof {format_value(peak)} TFLOP/s<extra></extra>")]
    for (name, dev, color, dash), ridge in zip(roofs, ridges):
        # ridges sit on one line (the compute roof): their labels go in the legend, where
        # they cannot collide, and in the hover
        ridge_text = f"ridge ({precision}, dense) = {format_value(ridge)} FLOP/B"
        x = [lo, min(ridge, hi)]
        y = roofline.attainable_tflops(np.asarray(x), dev, precision).tolist()
        data.append(dict(type="scatter", x=x, y=y, mode="lines+markers",
                         name=f"{html.escape(name)} roof: {format_value(dev.bandwidth_gbs)} GB/s"
                              + (" one way" if name != "HBM" else "") + f" · {ridge_text}",
                         line=dict(color=color, width=2.5, dash=dash),
                         marker=dict(size=[0, 10], color=color, symbol="diamond"),
                         cliponaxis=False,
                         hovertemplate=f"{html.escape(name)} roof, {ridge_text}<br>%{{x:.3s}} "
                                       "FLOP/B → %{y:.3s} TFLOP/s<extra></extra>"))
    on_hbm = float(roofline.attainable_tflops(ai_hbm, d, precision))
    on_link = float(roofline.attainable_tflops(ai_link, roofs[1][1], precision))
    binding = "link" if on_link < on_hbm else "HBM" if on_hbm < peak else "compute"
    bound = min(on_hbm, on_link)
    # the points are named in the legend, not by text on the plot: a label beside a point
    # sat on the compute roof or on the other label
    for label, x, y, key, symbol in (
            ("HBM intensity", ai_hbm, on_hbm, "memory", "circle"),
            ("link intensity", ai_link, on_link, LINK_COLOR_KEY, "square")):
        data.append(dict(type="scatter", x=[x], y=[y], mode="markers",
                         name=f"this layer at its {label}: {format_value(x)} FLOP/B",
                         cliponaxis=False,
                         marker=dict(size=13, color=COLORS[key], symbol=symbol,
                                     line=dict(width=1.5, color=PLOT_TEXT)),
                         hovertemplate=f"this layer at its {label}<br>%{{x:.3s}} FLOP/B → "
                                       "%{y:.3s} TFLOP/s<extra></extra>"))
    data.append(dict(type="scatter", x=[lo, hi], y=[bound, bound], mode="lines",
                     name=f"the layer's roof: {binding}, ≤ {format_value(bound)} TFLOP/s (latency "
                          "aside)",
                     line=dict(color=COLORS["danger"], width=1.5, dash="dash"),
                     hovertemplate="the layer's bound<extra></extra>"))
    ys = [bound, peak] + [float(roofline.attainable_tflops(lo, r, precision))
                          for _, r, _, _ in roofs]
    if attained_tflops is not None:
        data.append(dict(type="scatter", x=[ai_link], y=[float(attained_tflops)],
                         mode="markers", name="with the collective's latency α",
                         cliponaxis=False,
                         marker=dict(size=12, color=COLORS[LINK_COLOR_KEY],
                                     symbol="x-thin-open",
                                     line=dict(width=2.5, color=COLORS[LINK_COLOR_KEY])),
                         hovertemplate="with latency: %{y:.3s} TFLOP/s<extra></extra>"))
        ys.append(float(attained_tflops))
    axis = dict(type="log", dtick=1, exponentformat="none",
                minor=dict(showgrid=True, gridcolor=PLOT_GRID.replace("0.28", "0.10")))
    layout = dict(
        title=dict(text=html.escape(title or f"Three roofs · {d.name} · {precision}")),
        height=int(height), hovermode="closest", legend=dict(LEGEND, y=-0.18), showlegend=True,
        xaxis=dict(axis, title=dict(text="Intensity (FLOP per byte of HBM traffic, or per "
                                         "byte sent over the link)"),
                   range=[math.log10(lo), math.log10(hi)]),
        yaxis=dict(axis, title=dict(text="Attainable throughput per chip (TFLOP/s)"),
                   range=[math.log10(min(ys) / 3), math.log10(peak * 4)]),
        margin=dict(l=70, r=30, t=50, b=40))
    return fast_figure(data, layout)


def block_roofs_figure(device, precision: str, link, mm, times) -> go.Figure:
    """A sharded block (``mm``, a :class:`labs.core.physics.sharding.ShardedMatmul`, at
    ``times``, its :class:`~labs.core.physics.sharding.ShardTimes`) under the three roofs: the
    link its ring runs on, and for comparison up to two other links this chip can really be
    joined by."""
    lk = collectives.ring_link(link, mm.n)
    others = [(collectives.get_link(k).short_name, collectives.get_link(k).one_way_gbs)
              for k in ("nvlink4", "pcie5-x16", "pcie4-x16", "ib-ndr")
              if k != lk.key and collectives.pair_problem(device, k) is None]
    return three_roof_figure(
        device, precision, [(lk.short_name, lk.one_way_gbs)] + others[:2],
        ai_hbm=mm.ai_hbm, ai_link=mm.ai_link, attained_tflops=mm.flops / times.lower / 1e12,
        title=f"One block of {mm.matmuls} matmul{'s' if mm.matmuls > 1 else ''} "
              f"per all-reduce: T = {mm.tokens:,}, F/n = {mm.k_shard:,.0f}, n = {mm.n}")


def block_batch_figure(tokens: Sequence[int], times: Sequence, *, k_shard: float,
                       your_batch: int) -> go.Figure:
    """A sharded block's per-chip time on each roof (compute, HBM, link) against the batch:
    ``times`` holds one :class:`labs.core.physics.sharding.ShardTimes` per entry of
    ``tokens``; ``your_batch`` is marked."""
    return loglog_lines_figure(
        [("compute", tokens, [t.t_compute for t in times], COLORS["compute"], "solid"),
         ("HBM", tokens, [t.t_hbm for t in times], COLORS["memory"], "dash"),
         ("link (all-reduce)", tokens, [t.t_link for t in times], COLORS[LINK_COLOR_KEY],
          "dot")],
        title=f"Per-GPU time of this block against the batch (F/n = {k_shard:,.0f})",
        x_title="Batch T (tokens)", y_title="Time per GPU (s)",
        vlines=[(your_batch, "your batch", COLORS["muted"])], height=380)


def scaling_figure(series: Sequence, degrees: Sequence[int], *, title: str, y_title: str,
                   x_title: str = "GPUs", chosen=None, oom_below: float | None = None,
                   height: int = 400) -> go.Figure:
    """A quantity (linear y, e.g. tokens/s) against a number of chips (log x, one tick per
    entry of ``degrees``). ``series``: (name, values, colour, dash), a value None where the
    design does not fit (a gap); ``chosen``: (label, x, y) marked; ``oom_below``: the chips
    below this do not fit: shaded and labelled "out of memory"."""
    xs = [int(v) for v in degrees]
    if not xs or any(v <= 0 for v in xs):
        raise ValueError("degrees must be positive integers")
    data, ys = [], []
    for i, (name, values, color, dash) in enumerate(series):
        vals = [None if v is None else float(v) for v in values]
        if len(vals) != len(xs):
            raise ValueError(f"series {name!r} needs one value per degree ({len(xs)})")
        ys += [v for v in vals if v is not None]
        c = _color(color, i)
        data.append(dict(type="scatter", x=xs, y=vals, mode="lines+markers",
                         name=html.escape(name), connectgaps=False,
                         line=dict(color=c, width=2.5, dash=dash or _DASHES[i % 6]),
                         marker=dict(size=8, color=c, symbol=_SYMBOLS[i % 6]),
                         hovertext=["" if v is None else format_value(v) for v in vals],
                         hovertemplate=f"{html.escape(name)}<br>%{{x}} GPUs → %{{hovertext}}"
                                       "<extra></extra>"))
    shapes, notes = [], []
    if oom_below is not None and oom_below > min(xs):
        below = [x for x in xs if x < oom_below]
        edge = math.sqrt(max(below) * oom_below) if oom_below <= max(xs) else oom_below
        shapes.append(dict(type="rect", xref="x", yref="paper", x0=min(xs) / 1.3,
                           x1=edge, y0=0, y1=1, fillcolor=COLORS["danger"], opacity=0.09,
                           line=dict(width=0), layer="below"))
        notes.append(dict(xref="x", yref="paper", x=math.log10((min(xs) / 1.3 * edge) ** 0.5),
                          y=0.97, yanchor="top", showarrow=False,
                          text="<b>out of memory</b>", font=dict(color=COLORS["danger"])))
    if chosen is not None:
        label, cx, cy = chosen
        data.append(dict(type="scatter", x=[cx], y=[cy], mode="markers+text",
                         name=html.escape(label), text=[html.escape(label)],
                         textposition="top center", showlegend=False, cliponaxis=False,
                         marker=dict(size=15, color=COLORS["danger"], symbol="diamond-open",
                                     line=dict(width=2.5, color=COLORS["danger"])),
                         hovertemplate=f"{html.escape(label)}: {format_value(float(cy))}"
                                       "<extra></extra>"))
        ys.append(float(cy))
    top = max(ys) * 1.15 if ys else 1.0
    layout = dict(
        title=dict(text=html.escape(title)), height=int(height), hovermode="closest",
        xaxis=dict(type="log", title=dict(text=x_title), tickmode="array", tickvals=xs,
                   ticktext=[str(v) for v in xs],
                   range=[math.log10(min(xs) / 1.3), math.log10(max(xs) * 1.3)]),
        yaxis=dict(title=dict(text=y_title), range=[0, top], rangemode="tozero"),
        shapes=shapes, annotations=notes, legend=LEGEND, showlegend=True,
        margin=dict(l=70, r=30, t=50, b=40))
    return fast_figure(data, layout)


_DEGREES_TITLE = "GPUs (tensor-parallel degree; gaps: does not fit)"


def _out_of_memory_below(rows: Sequence) -> float:
    """The smallest degree that fits among serving ``rows`` (past the last when none does)."""
    fits = [s.n for s in rows if s.fits]
    return min(fits) if fits else max(s.n for s in rows) * 1.3


def decode_time_figure(rows: Sequence, link) -> go.Figure:
    """Where a decode step's time goes at each tensor-parallel degree: the matmuls (the slower
    of compute and HBM) against the collectives. ``rows``: one
    :func:`labs.core.physics.sharding.tp_scaling` on ``link`` (a link's key)."""
    link_name = collectives.get_link(link).short_name
    return scaling_figure(
        [("matmuls: max(compute, HBM)", [max(s.t_compute, s.t_hbm) * 1e3 if s.fits else None
                                         for s in rows], "memory", "solid"),
         ("collectives", [s.t_comm * 1e3 if s.fits else None for s in rows],
          LINK_COLOR_KEY, "dash")],
        [s.n for s in rows],
        title=f"Time per decode step on {link_name}: matmuls against collectives",
        y_title="ms per decode step", x_title=_DEGREES_TITLE,
        oom_below=_out_of_memory_below(rows))


def decode_throughput_figure(rows_by_link: dict, your_link: str, your_step=None) -> go.Figure:
    """Decode tokens/s (all users) against the tensor-parallel degree on each link of
    ``rows_by_link`` ({link key: :func:`labs.core.physics.sharding.tp_scaling` rows}), the
    student's ``your_link`` named so; ``your_step`` (one of its rows), where it fits, marked
    "<n>-way"."""
    chosen = (f"{your_step.n}-way", your_step.n, your_step.tokens_per_s) if (
        your_step is not None and your_step.fits) else None
    series = []
    for i, (key, rows) in enumerate(rows_by_link.items()):
        name = collectives.get_link(key).short_name
        series.append((("your link: " if key == your_link else "") + name,
                       [s.tokens_per_s if s.fits else None for s in rows],
                       (LINK_COLOR_KEY, "ok", "muted")[i % 3], ("solid", "dash", "dot")[i % 3]))
    return scaling_figure(
        series, [s.n for s in rows_by_link[your_link]],
        title="Decode tokens/s (all users) against the tensor-parallel degree",
        y_title="tokens/s", x_title=_DEGREES_TITLE, chosen=chosen,
        oom_below=_out_of_memory_below(rows_by_link[your_link]))


def dp_step_figure(tokens: Sequence[int], steps: Sequence, *, critical: float,
                   your_batch: int) -> go.Figure:
    """A data-parallel step against the batch per chip: the backward pass, the gradient
    all-reduce, and the step without and with overlap. ``steps``: one
    :class:`labs.core.physics.sharding.DPStep` per entry of ``tokens``, all on the same
    chips; the critical batch and ``your_batch`` are marked."""
    return loglog_lines_figure(
        [("backward pass (4PT / π)", tokens, [s.t_bwd for s in steps],
          COLORS["compute"], "solid"),
         ("gradient all-reduce", tokens, [s.t_comm for s in steps], COLORS[LINK_COLOR_KEY],
          "dash"),
         ("step, no overlap: fwd + bwd + all-reduce", tokens,
          [s.t_fwd + s.t_bwd + s.t_comm for s in steps], COLORS["danger"], "dot"),
         ("step, overlapped: fwd + max(bwd, all-reduce)", tokens,
          [s.t_fwd + max(s.t_bwd, s.t_comm) for s in steps], COLORS["ok"], "dashdot")],
        title=f"One data-parallel step on {steps[0].n} GPUs against the batch per GPU",
        x_title="Tokens per GPU per step", y_title="Time per step (s)",
        vlines=[(critical, "critical batch", COLORS["muted"]),
                (your_batch, "your batch", COLORS["danger"])],
        height=400)
