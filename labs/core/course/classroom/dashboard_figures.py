"""The instructor dashboard's figures (plotly, the labs' template).

One figure per question an instructor asks: how far off were the class's predictions of one
item (:func:`distribution_figure`), were the students who said they were sure right more often
(:func:`calibration_figure`), and in what order did one student do things
(:func:`timeline_figure`).

Student text (ids, option labels, reasons, item ids from a hand-edited file) reaches plotly
only through :func:`plot_text`: plotly reads ``<b>``, ``<a href>``, ``<br>`` and ``$...$``
(LaTeX) in any string it draws, so every such string is escaped first and shows as typed.
Titles sit below the space plotly's toolbar takes at the top right (``_TOOLBAR_PX``), and long
titles and labels are wrapped, so neither is cut or hidden.
"""

from __future__ import annotations

import html
import math
import textwrap
from datetime import datetime

from labs.core.course.classroom.data import CONFIDENCE_LEVELS, ItemSummary

__all__ = [
    "KIND_ORDER", "TIMELINE_GAP", "calibration_figure", "distribution_figure", "plot_text",
    "timeline_figure", "timeline_points"
]

#: Where plotly's toolbar (shown on hover at the top right) ends, from the figure's top.
_TOOLBAR_PX = 30
#: Title pad: plotly puts the first line's baseline there, and 15 px glyphs rise ~14 px above
#: it, so the title starts a few pixels below the toolbar (checked in the browser test).
_TITLE_PAD = _TOOLBAR_PX + 18
_TITLE_LINE_PX = 20
#: Characters per line of a wrapped title (fits a figure ~420 px wide), and of a choice
#: label on the y axis.
_TITLE_CHARS = 48
_LABEL_CHARS = 26
_LABEL_LINES = 3


def _go():
    import plotly.graph_objects as go

    from labs.core.ui.tokens import COLORS, register_template

    register_template()  # plain go.Figure() below takes the "roofline" look as plotly's default
    return go, COLORS


def plot_text(text: object, width: int | None = None, lines: int | None = None) -> str:
    """``text`` as plotly shows it literally: ``<`` ``>`` ``&`` and ``$`` escaped (plotly reads
    them as markup and LaTeX), control characters as spaces; with ``width``, wrapped with
    ``<br>`` into at most ``lines`` lines (the last one ending in "…" if cut)."""
    flat = " ".join(str(text).split())
    parts = textwrap.wrap(flat, width, break_long_words=True) if width else [flat]
    parts = parts or [""]
    if lines and len(parts) > lines:
        parts = parts[:lines]
        parts[-1] = parts[-1][: max(1, (width or 80) - 1)].rstrip() + "…"
    return "<br>".join(html.escape(p, quote=False).replace("$", "&#36;") for p in parts)


def _title(fig, text: str, sub: str = "") -> int:
    """Wrapped title (and a smaller second line) below the toolbar; returns the top margin."""
    title = plot_text(text, _TITLE_CHARS, 3)
    n = title.count("<br>") + 1
    if sub:
        title += f"<br><span style='font-size:12px'>{plot_text(sub, _TITLE_CHARS + 12, 1)}</span>"
        n += 1
    fig.update_layout(title=dict(text=title, x=0, xref="container", xanchor="left",
                                 y=1, yref="container", yanchor="top",
                                 pad=dict(t=_TITLE_PAD, l=12)))
    return _TITLE_PAD + _TITLE_LINE_PX * n + 4


def distribution_figure(item: ItemSummary):
    """Numeric: how far off each prediction was (log ×, signed); choice: counts per option."""
    go, C = _go()
    fig = go.Figure()
    if item.answer_type == "choice":
        rows = item.choice_counts()
        colors = [C["ok"] if right else (C["danger"] if right is False else C["muted"])
                  for _, _, right in rows]
        labels = [plot_text(opt, _LABEL_CHARS, _LABEL_LINES) for opt, _, _ in rows]
        fig.add_trace(go.Bar(
            x=[n for _, n, _ in rows], y=labels, orientation="h", marker_color=colors,
            text=[("✓ right" if r else "✗" if r is False else "") for _, _, r in rows],
            textposition="auto", customdata=[[plot_text(opt)] for opt, _, _ in rows],
            hovertemplate="%{customdata[0]}: %{x} students<extra></extra>"))
        top = _title(fig, item.title, f"{item.item_id} · committed answers (n = {item.n})")
        lines = sum(label.count("<br>") + 1 for label in labels)
        fig.update_layout(xaxis_title="students",
                          yaxis=dict(autorange="reversed", automargin=True),
                          height=top + 60 + 22 * max(lines, 2) + 8 * len(rows),
                          margin=dict(l=10, r=10, t=top, b=50))
        return fig
    signed = []
    for r in item.rows:
        if r.ratio is not None and isinstance(r.value, (int, float)) and isinstance(
                r.actual, (int, float)):
            signed.append(math.log10(r.value / r.actual))
    if signed:
        fig.add_trace(go.Histogram(x=signed, xbins=dict(size=0.1), marker_color=C["accent"],
                                   hovertemplate="%{y} students<extra></extra>",
                                   name="predictions"))
    fig.add_vline(x=0, line_color=C["ok"], line_width=2)
    fig.add_annotation(x=0, y=1, yref="paper", text="true value", showarrow=False,
                       yanchor="bottom", font=dict(color=C["ok"]))
    ticks = [-3, -2, -1, math.log10(0.5), 0, math.log10(2), 1, 2, 3]
    top = _title(fig, item.title, f"{item.item_id} · prediction ÷ true value "
                                  f"(n = {len(signed)}, log scale)")
    fig.update_layout(
        xaxis=dict(title="predicted ÷ what the student's instrument showed", tickvals=ticks,
                   ticktext=["1/1000", "1/100", "1/10", "1/2", "1", "2", "10", "100", "1000"]),
        yaxis_title="students", bargap=0.05, height=top + 290,
        margin=dict(l=10, r=10, t=top + 16, b=50))
    return fig


def calibration_figure(rows: list[dict], title: str = "Calibration"):
    """Share correct per confidence level, with the count of predictions per level."""
    go, C = _go()
    xs = [r["confidence"] for r in rows if r["predictions"]]
    ys = [100 * r["share_correct"] for r in rows if r["predictions"]]
    ns = [r["predictions"] for r in rows if r["predictions"]]
    fig = go.Figure(go.Bar(x=xs, y=ys, text=[f"n={n:,}" for n in ns], textposition="outside",
                           marker_color=C["accent"], name="share correct",
                           hovertemplate="confidence %{x}: %{y:.0f}% right<extra></extra>"))
    fig.add_trace(go.Scatter(x=[1, 5], y=[20, 100], mode="lines", name="ideal (20% per step)",
                             line=dict(dash="dot", color=C["muted"])))
    top = _title(fig, title)
    fig.update_layout(xaxis=dict(title="stated confidence (1 = guess, 5 = sure)",
                                 tickvals=list(CONFIDENCE_LEVELS)),
                      yaxis=dict(title="% correct", range=[0, 115]), height=top + 280,
                      margin=dict(l=10, r=10, t=top, b=50), showlegend=False)
    return fig


KIND_ORDER = ("predict", "unlock", "result", "observe", "explain", "revise", "decision")
_SYMBOLS = {"predict": "circle", "unlock": "triangle-up", "result": "diamond",
            "observe": "square", "explain": "star", "revise": "x", "decision": "cross"}
#: Smallest gap between two markers of one row, as a share of the time axis (~15 px wide).
TIMELINE_GAP = 0.016


def timeline_points(rows: list[dict]) -> list[dict]:
    """Where each timed event of :meth:`Classroom.timeline` is drawn: ``y`` the item's row (in
    the order the student first touched the items, first on top), ``x`` minutes since the
    student's first event in that lab, except that markers closer than ``TIMELINE_GAP`` of the
    axis (one click in a lab writes predict, unlock and result in the same second) are drawn
    side by side in the order they were written; ``minutes`` keeps the true time."""
    items = list(dict.fromkeys(r["item"] for r in rows))
    row_of = {item: len(items) - 1 - n for n, item in enumerate(items)}
    lab_start: dict[str, datetime] = {}
    for r in rows:
        if r["time"] is not None:
            lab_start[r["lab"]] = min(lab_start.get(r["lab"], r["time"]), r["time"])
    timed = [{**r, "minutes": (r["time"] - lab_start[r["lab"]]).total_seconds() / 60,
              "y": row_of[r["item"]], "n": n} for n, r in enumerate(rows) if r["time"]]
    span = max((p["minutes"] for p in timed), default=0.0) - min(
        (p["minutes"] for p in timed), default=0.0)
    gap = TIMELINE_GAP * (span or 1.0)
    last: dict[int, float] = {}
    for p in sorted(timed, key=lambda p: (p["y"], p["minutes"], p["n"])):
        p["x"] = max(p["minutes"], last.get(p["y"], -math.inf) + gap)
        last[p["y"]] = p["x"]
    return timed


def timeline_figure(rows: list[dict], student_id: str):
    """A student's events: one row per item (first touched on top), x = minutes since their
    first event in that lab (labs are done days apart; within a lab the order of predict /
    unlock / observe matters), one marker shape per kind; events of the same moment are drawn
    side by side in order (:func:`timeline_points`); the hover gives the time to the second."""
    go, C = _go()
    points = timeline_points(rows)
    items = list(dict.fromkeys(r["item"] for r in rows))
    fig = go.Figure()
    for kind in KIND_ORDER + tuple(sorted({p["kind"] for p in points} - set(KIND_ORDER))):
        pts = [p for p in points if p["kind"] == kind]
        if pts:
            fig.add_trace(go.Scatter(
                x=[p["x"] for p in pts], y=[p["y"] for p in pts], mode="markers",
                name=plot_text(kind, 20, 1),
                marker=dict(symbol=_SYMBOLS.get(kind, "circle"), size=10, line=dict(width=1)),
                customdata=[[plot_text(p["item"], 60, 2),
                             p["time"].strftime("%Y-%m-%d %H:%M:%S"),
                             plot_text(p["what"], 60, 3), plot_text(p["flags"] or "-", 60, 3)]
                            for p in pts],
                hovertemplate="%{customdata[0]} · %{customdata[1]} UTC<br>" + plot_text(kind)
                              + ": %{customdata[2]}<br>flags: %{customdata[3]}"
                                "<extra></extra>"))
    n = max(1, len(items))
    top = _title(fig, f"Timeline of {student_id}")
    fig.update_layout(
        height=top + 90 + 34 * n,
        xaxis_title="minutes since the student's first event in that lab "
                    "(events of the same moment side by side, in order)",
        yaxis=dict(tickvals=list(range(n)), range=[-0.6, n - 0.4], zeroline=False,
                   fixedrange=True,
                   ticktext=[plot_text(i, 34, 1) for i in reversed(items)], showgrid=False),
        shapes=[dict(type="line", xref="paper", x0=0, x1=1, y0=k + 0.5, y1=k + 0.5,
                     line=dict(color="rgba(128,128,128,0.25)", width=1))
                for k in range(n - 1)],
        margin=dict(l=10, r=10, t=top, b=50))
    return fig
