"""The instructor dashboard's figures (plotly, the labs' template).

One figure per question an instructor asks: how far off were the class's predictions of one
item (:func:`distribution_figure`), were the students who said they were sure right more often
(:func:`calibration_figure`), and in what order did one student do things
(:func:`timeline_figure`).
"""

from __future__ import annotations

import math
from datetime import datetime

from labs.core.course.classroom_data import CONFIDENCE_LEVELS, ItemSummary


def _go():
    import plotly.graph_objects as go

    from labs.core import figures  # noqa: F401  (registers the "roofline" template)
    from labs.core.ui.tokens import COLORS

    return go, COLORS


def _log_bins(values: list[float], n: int = 24) -> list[float]:
    lo, hi = min(values), max(values)
    if lo == hi:
        return [lo / 1.5, hi * 1.5]
    step = (math.log10(hi) - math.log10(lo)) / n
    return [10 ** (math.log10(lo) + i * step) for i in range(n + 1)]


def distribution_figure(item: ItemSummary):
    """Numeric: how far off each prediction was (log ×, signed); choice: counts per option."""
    go, C = _go()
    if item.answer_type == "choice":
        rows = item.choice_counts()
        colors = [C["ok"] if right else (C["danger"] if right is False else C["muted"])
                  for _, _, right in rows]
        fig = go.Figure(go.Bar(
            x=[n for _, n, _ in rows], y=[opt for opt, _, _ in rows], orientation="h",
            marker_color=colors, text=[("✓ right" if r else "✗" if r is False else "")
                                       for _, _, r in rows], textposition="auto",
            hovertemplate="%{y}: %{x} students<extra></extra>"))
        fig.update_layout(title=f"{item.item_id}: committed answers (n = {item.n})",
                          xaxis_title="students", yaxis=dict(autorange="reversed"),
                          height=120 + 40 * len(rows), margin=dict(l=10, r=10, t=50, b=40))
        return fig
    signed = []
    for r in item.rows:
        if r.ratio is not None and isinstance(r.value, (int, float)) and isinstance(
                r.actual, (int, float)):
            signed.append(math.log10(r.value / r.actual))
    fig = go.Figure()
    if signed:
        fig.add_trace(go.Histogram(x=signed, xbins=dict(size=0.1), marker_color=C["accent"],
                                   hovertemplate="%{y} students<extra></extra>",
                                   name="predictions"))
    fig.add_vline(x=0, line_color=C["ok"], line_width=2)
    fig.add_annotation(x=0, y=1, yref="paper", text="true value", showarrow=False,
                       yanchor="bottom", font=dict(color=C["ok"]))
    ticks = [-3, -2, -1, math.log10(0.5), 0, math.log10(2), 1, 2, 3]
    fig.update_layout(
        title=f"{item.item_id}: prediction ÷ true value (n = {len(signed)}, log scale)",
        xaxis=dict(title="predicted ÷ what the student's instrument showed", tickvals=ticks,
                   ticktext=["1/1000", "1/100", "1/10", "1/2", "1", "2", "10", "100", "1000"]),
        yaxis_title="students", bargap=0.05, height=340, margin=dict(l=10, r=10, t=50, b=50))
    return fig


def calibration_figure(rows: list[dict], title: str = "Calibration"):
    """Share correct per confidence level, with the count of predictions per level."""
    go, C = _go()
    xs = [r["confidence"] for r in rows if r["predictions"]]
    ys = [100 * r["share_correct"] for r in rows if r["predictions"]]
    ns = [r["predictions"] for r in rows if r["predictions"]]
    fig = go.Figure(go.Bar(x=xs, y=ys, text=[f"n={n}" for n in ns], textposition="outside",
                           marker_color=C["accent"], name="share correct",
                           hovertemplate="confidence %{x}: %{y:.0f}% right<extra></extra>"))
    fig.add_trace(go.Scatter(x=[1, 5], y=[20, 100], mode="lines", name="ideal (20% per step)",
                             line=dict(dash="dot", color=C["muted"])))
    fig.update_layout(title=title, xaxis=dict(title="stated confidence (1 = guess, 5 = sure)",
                                              tickvals=list(CONFIDENCE_LEVELS)),
                      yaxis=dict(title="% correct", range=[0, 115]), height=320,
                      margin=dict(l=10, r=10, t=50, b=50), showlegend=False)
    return fig


KIND_ORDER = ("predict", "unlock", "result", "observe", "explain", "revise", "decision")


def timeline_figure(rows: list[dict], student_id: str):
    """A student's events: one row per item, x = minutes since their first event in that lab
    (labs are done days apart; within a lab the order of predict / unlock / observe matters),
    one marker shape per kind; the hover gives the date and time."""
    go, C = _go()
    symbols = {"predict": "circle", "unlock": "triangle-up", "result": "diamond",
               "observe": "square", "explain": "star", "revise": "x", "decision": "cross"}
    lab_start: dict[str, datetime] = {}
    for r in rows:
        if r["time"] is not None:
            lab_start[r["lab"]] = min(lab_start.get(r["lab"], r["time"]), r["time"])
    fig = go.Figure()
    for kind in KIND_ORDER:
        pts = [r for r in rows if r["kind"] == kind and r["time"] is not None]
        if pts:
            fig.add_trace(go.Scatter(
                x=[(r["time"] - lab_start[r["lab"]]).total_seconds() / 60 for r in pts],
                y=[r["item"] for r in pts], mode="markers", name=kind,
                marker=dict(symbol=symbols.get(kind, "circle"), size=11, line=dict(width=1)),
                customdata=[[r["time"].strftime("%Y-%m-%d %H:%M:%S"), r["what"],
                             r["flags"] or "-"] for r in pts],
                hovertemplate="%{y} · %{customdata[0]} UTC<br>" + kind +
                              ": %{customdata[1]}<br>flags: %{customdata[2]}<extra></extra>"))
    items = sorted({r["item"] for r in rows})
    fig.update_layout(title=f"Timeline of {student_id}", height=170 + 26 * max(1, len(items)),
                      xaxis_title="minutes since the student's first event in that lab",
                      yaxis=dict(categoryorder="array", categoryarray=items[::-1]),
                      margin=dict(l=10, r=10, t=50, b=50))
    return fig
