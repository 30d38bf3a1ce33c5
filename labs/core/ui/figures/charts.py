"""Figures other than the roofline: bars, the memory budget, log-log line charts. Plotly only.

Each builder makes one go.Figure from plain dicts (see :mod:`labs.core.ui.figures.base`); the
verdict of a chart (fits / out of memory, which term crosses) is written in words, not colour alone.
"""

from __future__ import annotations

import html
import math
from typing import Mapping, Sequence

from labs.core.physics.deferred import numpy as np
import plotly.graph_objects as go

from labs.core.ui.figures.base import LEGEND, fast_figure, is_real
from labs.core.physics import quantization
from labs.core.physics.units import format_bytes, format_value
from labs.core.ui.tokens import COLORS, PLOT_TEXT, REGIME_COLOR_KEY, TERM_COLORS

__all__ = [
    "NOTE_WRAP", "bar_figure", "budget_summary", "call_time_figure", "decade_ticks",
    "grouped_bar_figure", "loglog_lines_figure", "memory_budget_figure"
]


def _resolve_color(c: str) -> str:
    return COLORS.get(REGIME_COLOR_KEY.get(c, c), c)


def _check_axis_title(yaxis_title) -> None:
    if not isinstance(yaxis_title, str) or not yaxis_title.strip():
        raise ValueError("yaxis_title must name the quantity and its unit, e.g. 'time (µs)'")


def _log_axis(log: bool | str, vals: Sequence[float]) -> bool:
    """``log="auto"``: a log axis only where the values, all > 0, span more than a decade
    (below that a log axis has at most one labelled tick)."""
    if log == "auto":
        return bool(vals) and min(vals) > 0 and max(vals) > 10 * min(vals)
    if not isinstance(log, bool):
        raise ValueError(f"log must be True, False or 'auto', got {log!r}")
    return log


def _check_values(vals: Sequence[float], log: bool) -> None:
    if not all(math.isfinite(v) for v in vals) or (log and min(vals) <= 0):
        raise ValueError("values must be finite" + (" and > 0 on a log axis" if log else ""))


def _value_text(v: float) -> str:
    """A bar's value written above it: 3 significant figures, the sign kept."""
    return format_value(v)


def _bar_layout(title, yaxis_title: str, log: bool, *, height: int, showlegend: bool) -> dict:
    """The layout every bar chart shares: title, y axis (log: a tick per decade), legend below."""
    return dict(height=height, showlegend=showlegend, legend=LEGEND,
                title=dict(text=html.escape(title or "")),
                yaxis=dict(title=dict(text=html.escape(yaxis_title)),
                           type="log" if log else "linear", **({"dtick": 1} if log else {})),
                margin=dict(l=70, r=20, t=50 if title else 24, b=60))


def bar_figure(labels: Sequence[str], values: Sequence[float], *, colors=None, title=None,
               yaxis_title: str, log: bool | str = False, annotations=None,
               legend: Mapping[str, str] | None = None, note: str | None = None) -> go.Figure:
    """One bar per label; each bar also shows its value (or its annotation) as text.
    ``log``: True, False or "auto" (log where the values span more than a decade).
    ``colors``: colour strings or semantic keys ("memory", "compute-bound", "danger" ...).
    ``annotations``: one string per bar, written above it instead of the value.
    ``legend``: {what a colour means: colour or key} when the colours encode something the
    bar labels do not say; every bar's colour must be in it (ValueError otherwise).
    ``note``: a sentence written in the figure under the title (wrapped), for what the bars
    count where another view shows the same quantity counted another way."""
    labels = [str(v) for v in labels]
    vals = [float(v) for v in values]
    if not labels or len(labels) != len(vals):
        raise ValueError("labels and values must be non-empty and the same length")
    log = _log_axis(log, vals)
    _check_values(vals, log)
    _check_axis_title(yaxis_title)
    if colors is None:
        cols = [COLORS["accent"]] * len(vals)
    elif isinstance(colors, str):
        cols = [_resolve_color(colors)] * len(vals)
    else:
        cols = [_resolve_color(c) for c in colors]
        if len(cols) != len(vals):
            raise ValueError("colors must have one entry per bar")
    if annotations is not None:
        text = [str(a) for a in annotations]
        if len(text) != len(vals):
            raise ValueError("annotations must have one entry per bar")
    else:
        text = [_value_text(v) for v in vals]
    data = [dict(type="bar", x=labels, y=vals, marker=dict(color=cols, line=dict(width=0)),
                 text=[html.escape(t) for t in text], textposition="outside", showlegend=False,
                 cliponaxis=False, hovertext=[format_value(v) for v in vals],
                 hovertemplate="%{x}: %{hovertext}<extra></extra>")]
    data += _legend_entries(legend, cols)
    layout = _bar_layout(title, yaxis_title, log, height=360 + (40 if legend else 0),
                         showlegend=bool(legend))
    if note is not None:
        _add_note(layout, note)
    return fast_figure(data, layout)


#: Characters per line of a figure's note: about the plot width of a medium-width lab at 12 px.
NOTE_WRAP = 110


def _add_note(layout: dict, note: str) -> None:
    """Write ``note`` under the title, inside the figure, wrapped at NOTE_WRAP characters."""
    import textwrap

    if not isinstance(note, str) or not note.strip():
        raise ValueError("note must be a sentence (or None for no note)")
    lines = textwrap.wrap(note.strip(), NOTE_WRAP)
    layout["annotations"] = list(layout.get("annotations", [])) + [dict(
        xref="paper", yref="paper", x=0, y=1.0, xanchor="left", yanchor="bottom",
        yshift=6, text="<br>".join(html.escape(line, quote=False) for line in lines), showarrow=False,
        align="left", font=dict(size=12, color=PLOT_TEXT))]
    layout["margin"] = dict(layout["margin"], t=layout["margin"]["t"] + 18 * len(lines) + 8)
    layout["height"] += 18 * len(lines)


def grouped_bar_figure(labels: Sequence[str], series: Mapping[str, Sequence[float]], *,
                       yaxis_title: str, title=None, log: bool | str = False, colors=None,
                       texts: Mapping[str, Sequence[str]] | None = None,
                       unit: str = "") -> go.Figure:
    """Bars side by side: one group per label, one bar per series in each group, the legend
    naming the series. ``series``: {name: one value per label}. Each bar shows its value
    (or ``texts[name]``) above it; ``unit`` follows the value in the hover.
    ``colors``: one colour (or semantic key) per series, in order; default TERM_COLORS.
    ``log``: True, False or "auto" (log where all the values span more than a decade)."""
    labels = [str(v) for v in labels]
    if not labels or not series:
        raise ValueError("labels and series must be non-empty")
    _check_axis_title(yaxis_title)
    cols = list(TERM_COLORS if colors is None else [_resolve_color(c) for c in colors])
    if len(cols) < len(series):
        raise ValueError("colors must have one entry per series")
    values = {name: [float(v) for v in vs] for name, vs in series.items()}
    if any(len(vals) != len(labels) for vals in values.values()):
        raise ValueError("every series must have one value per label")
    log = _log_axis(log, [v for vals in values.values() for v in vals])
    data = []
    for (name, vals), color in zip(values.items(), cols):
        _check_values(vals, log)
        text = list((texts or {}).get(name) or [_value_text(v) for v in vals])
        if len(text) != len(vals):
            raise ValueError(f"texts[{name!r}] must have one entry per label")
        data.append(dict(type="bar", name=html.escape(str(name)), x=labels, y=vals,
                         marker=dict(color=color, line=dict(width=0)),
                         text=[html.escape(str(t)) for t in text], textposition="outside",
                         cliponaxis=False, hovertext=[format_value(v) for v in vals],
                         hovertemplate=f"%{{x}}: %{{hovertext}}{html.escape(unit)}"
                                                         f"<extra>{html.escape(str(name))}</extra>"))
    return fast_figure(data, dict(_bar_layout(title, yaxis_title, log, height=380, showlegend=True),
                              barmode="group"))


def _legend_entries(legend: Mapping[str, str] | None, bar_colors: list[str]) -> list:
    """Legend-only square markers, one per meaning, checked to cover every bar's colour."""
    if not legend:
        return []
    named = {_resolve_color(c): str(k) for k, c in legend.items()}
    missing = sorted(set(bar_colors) - set(named))
    if missing:
        raise ValueError(f"legend names no meaning for the bar colour(s) {missing}")
    return [dict(type="scatter", mode="markers", x=[None], y=[None], name=html.escape(name),
                 showlegend=True, marker=dict(color=color, size=12, symbol="square"),
                 hoverinfo="skip")
            for color, name in named.items() if color in bar_colors]


def budget_summary(terms: Mapping[str, float], capacity_bytes: float) -> dict:
    """Numbers behind a memory budget: total, free/over, fraction of capacity, and the term
    whose addition (in the given order) crosses capacity (None if it fits)."""
    if not isinstance(terms, Mapping) or not terms:
        raise ValueError("terms must be a non-empty dict {name: bytes}")
    if not (is_real(capacity_bytes) and math.isfinite(capacity_bytes) and capacity_bytes > 0):
        raise ValueError(f"capacity_bytes must be a finite number > 0, got {capacity_bytes!r}")
    t = {}
    for k, v in terms.items():
        if not (is_real(v) and math.isfinite(v) and v >= 0):
            raise ValueError(f"terms[{k!r}] must be a finite number of bytes >= 0, got {v!r}")
        t[str(k)] = float(v)
    total, running, crossing = sum(t.values()), 0.0, None
    for k, v in t.items():
        running += v
        if crossing is None and running > capacity_bytes:
            crossing = k
    return {"terms": t, "total": total, "capacity": float(capacity_bytes),
            "fits": total <= capacity_bytes, "over": max(0.0, total - capacity_bytes),
            "free": max(0.0, capacity_bytes - total), "crossing": crossing,
            "fraction": total / capacity_bytes}


def memory_budget_figure(terms: dict[str, float], capacity_bytes: float, *,
                         title=None) -> go.Figure:
    """Horizontal stacked bar (GB) of memory terms with the capacity line; the verdict (fits /
    out of memory: how much over, which term crosses capacity) is written under the title.
    Segments too small for their label hide it; the legend and hover still name them."""
    s = budget_summary(terms, capacity_bytes)
    data = []
    for (k, v), c in zip(s["terms"].items(), TERM_COLORS * 4):
        data.append(dict(type="bar", orientation="h", x=[v / 1e9], y=["memory"], name=k,
                         marker=dict(color=c, line=dict(width=1, color="rgba(0,0,0,0)")),
                         text=[f"{html.escape(k)}<br>{format_bytes(v)}"],
                         textposition="inside", insidetextanchor="middle",
                         hovertemplate=f"{html.escape(k)}: {format_bytes(v)}<extra></extra>"))
    cap = s["capacity"] / 1e9
    top = max(s["total"], s["capacity"]) / 1e9 * 1.05
    shapes = [dict(type="line", xref="x", yref="paper", x0=cap, x1=cap, y0=0, y1=1,
                   line=dict(color=PLOT_TEXT, width=2, dash="dash"))]
    if s["fits"]:
        verdict = (f"<b>✓ fits</b>: {format_bytes(s['total'])} of "
                   f"{format_bytes(s['capacity'])}, {format_bytes(s['free'])} free")
        vcolor = COLORS["ok"]
    else:
        shapes.append(dict(type="rect", xref="x", yref="paper", x0=cap, x1=s["total"] / 1e9,
                           y0=0, y1=1, fillcolor=COLORS["danger"], opacity=0.15,
                           line=dict(width=1.5, color=COLORS["danger"], dash="dot")))
        verdict = (f"<b>✗ out of memory</b>: {format_bytes(s['over'])} over; "
                   f"{html.escape(s['crossing'])} crosses capacity")
        vcolor = COLORS["danger"]
    # the verdict goes in the title block, in words, so it never collides with the axis
    head = (html.escape(title) + "<br>") if title else ""
    notes = [dict(xref="x", yref="paper", x=cap, y=1.0, yanchor="bottom", showarrow=False,
                  text=f"capacity {format_bytes(s['capacity'])}", font=dict(size=11))]
    layout = dict(barmode="stack", height=240 if title else 210, showlegend=True,
                  legend=dict(LEGEND, y=-0.45, traceorder="normal"), uniformtext=dict(minsize=10, mode="hide"),
                  title=dict(text=f"{head}<span style='font-size:13px;color:{vcolor}'>"
                                  f"{verdict}</span>"),
                  xaxis=dict(title=dict(text="Memory (GB, 1e9 bytes)"), range=[0, top]),
                  yaxis=dict(showticklabels=False, showline=False),
                  shapes=shapes, annotations=notes,
                  margin=dict(l=20, r=20, t=70 if title else 50, b=40))
    return fast_figure(data, layout)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def decade_ticks(values) -> dict:
    """One tick per decade of a log axis, every label in one style (plotly's SI
    labels mixed "100µ" with "0.001" and "10k" with "1000"): plain numbers with thousands
    separators ("0.01", "1", "10,000") when the decades run from 0.001 to 1,000,000, else
    powers of ten for all ("10⁻⁷", "10⁻³", "10⁰")."""
    vals = [float(v) for v in values if v is not None and np.isfinite(v) and v > 0]
    if not vals:
        return dict(dtick=1)
    lo, hi = math.floor(math.log10(min(vals))), math.ceil(math.log10(max(vals)))
    decades = range(lo, hi + 1)
    plain = lo >= -3 and hi <= 6
    text = [(f"{10.0 ** e:,.{max(0, -e)}f}" if plain else f"10{str(e).translate(_SUPERSCRIPT)}")
            for e in decades]
    return dict(tickmode="array", tickvals=[10.0 ** e for e in decades], ticktext=text)


def loglog_lines_figure(series, *, title, x_title, y_title, vlines=(), markers=(),
                        bands=(), x_ticks=None, y_ticks=None, height=400):
    """A log-log line chart (time vs size, traffic vs sequence length ...).

    series: (name, x, y, colour, dash); vlines: (x, label, colour), labels staggered;
    markers: (name, x, y, colour); bands: (x0, x1, label, colour); x_ticks, y_ticks:
    (values, labels) or None for one tick per decade."""
    data = [dict(type="scatter", x=np.asarray(x).tolist(), y=np.asarray(y).tolist(),
                 name=n, mode="lines", line=dict(color=c, width=2.5, dash=d),
                 hovertemplate=f"{n}<br>%{{x:.3s}} → %{{y:.3s}}<extra></extra>")
            for n, x, y, c, d in series]
    data += [dict(type="scatter", x=[x], y=[y], name=n, mode="markers+text", text=[n],
                  textposition="top left", marker=dict(size=11, color=c, symbol="diamond",
                                                       line=dict(width=1, color=PLOT_TEXT)),
                  hovertemplate=f"{n}<br>%{{x:.3s}} → %{{y:.3s}}<extra></extra>",
                  showlegend=False, cliponaxis=False) for n, x, y, c in markers]
    shapes = [dict(type="line", xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1,
                   line=dict(color=c, width=1.5, dash="dot")) for x, _, c in vlines]
    shapes += [dict(type="rect", xref="x", yref="paper", x0=a, x1=b, y0=0, y1=1,
                    fillcolor=c, opacity=0.09, line=dict(width=0), layer="below")
               for a, b, _, c in bands]
    notes = [dict(xref="x", yref="paper", x=np.log10(x), y=1.0 + 0.07 * i,
                  yanchor="bottom", xanchor="right" if i == 0 else "left", text=lbl,
                  showarrow=False, font=dict(color=PLOT_TEXT, size=11))  # the line has the
             for i, (x, lbl, c) in enumerate(sorted(vlines))]  # colour; text must read on both themes
    notes += [dict(xref="x", yref="paper", x=np.log10((a * b) ** 0.5), y=0.97,
                   yanchor="top", text=f"<b>{lbl}</b>", showarrow=False,
                   font=dict(color=c, size=12)) for a, b, lbl, c in bands]
    xs = [v for _, x, _, _, _ in series for v in np.ravel(x)] + [m[1] for m in markers]
    ys = [v for _, _, y, _, _ in series for v in np.ravel(y)] + [m[2] for m in markers]
    xaxis = dict(type="log", title=dict(text=x_title), **decade_ticks(xs))
    if x_ticks is not None:
        xaxis.update(tickmode="array", tickvals=list(x_ticks[0]), ticktext=list(x_ticks[1]))
    yaxis = dict(type="log", title=dict(text=y_title), **decade_ticks(ys))
    if y_ticks is not None:  # a range under a decade or two has no decade to label
        yaxis.update(tickmode="array", tickvals=list(y_ticks[0]), ticktext=list(y_ticks[1]))
    return fast_figure(data, dict(
        title=dict(text=html.escape(title)), height=height,
        xaxis=xaxis, yaxis=yaxis,
        shapes=shapes, annotations=notes, hovermode="closest",
        legend=dict(orientation="h", x=0, y=-0.22, yanchor="top"),
        margin=dict(l=70, r=30, t=60 + 18 * len(vlines), b=40)))


def call_time_figure(reference, measured, overhead_s: float, bandwidth_gbs: float):
    """Time per call against the bytes one call reads once (Lab 5, Part 4): the reference
    machine's recorded run and this machine's (``reference``, ``measured``: (bytes, seconds)
    rows; ``measured`` None before a press), the model t0 + W/beta fitted to the curve
    (``overhead_s``, ``bandwidth_gbs``), and its overhead-bound band below W* = t0 x beta.
    Seconds on the axis, labelled in µs (hovers read 2.01µ): a time, in SI units."""
    series = [("reference machine (recorded)", [r[0] for r in reference],
               [r[1] for r in reference], COLORS["muted"], "dot")]
    if measured is not None:
        series.insert(0, ("this machine (median per call)", [r[0] for r in measured],
                          [r[1] for r in measured], COLORS["memory"], "solid"))
    x = [2.0**k for k in range(8, 23)]
    series.append((f"model fitted to the curve: {overhead_s * 1e6:.2g} µs + bytes / "
                   f"{bandwidth_gbs:.0f} GB/s", x,
                   [quantization.call_time(v, bandwidth_gbs, overhead_s) for v in x],
                   COLORS["compute"], "dash"))
    cross = quantization.overhead_crossover_bytes(bandwidth_gbs, overhead_s)
    y_us = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]  # the range spans about a decade
    return loglog_lines_figure(
        series, vlines=[(cross, f"overhead = read time at {format_bytes(cross, binary=True)}",
                         COLORS["overhead"])],
        bands=[(x[0], cross, "overhead-bound", COLORS["overhead"])],
        title="Time per call vs bytes read once per call",
        x_title="Bytes read per call", y_title="Time per call (µs)",
        x_ticks=([4.0**k for k in range(4, 12)],
                 [format_bytes(4.0**k, binary=True) for k in range(4, 12)]),
        y_ticks=([v * 1e-6 for v in y_us], [format_value(v) for v in y_us]))
