"""Where a roofline point's text label goes: the first of plotly's text positions whose box
crosses no roof line, ridge label, marker or label already placed, and stays in the plot.

Plotly places a scatter's text but never moves it out of the way: two points at the same AI
(Lab 1's GEMM and GEMV at M=N=K=1) print their labels on top of each other, and a label
above a point on one roof runs over the next roof up (Lab 3's fp8 line). This module judges
each candidate box in approximate pixels (the plot area a figure gets at its height and
:data:`PLOT_WIDTH_PX`; characters ~6.3 px wide at the 11 px label font) and returns one
position per point. Plotly only in the sense of its position names; pure geometry.
"""

from __future__ import annotations

import math
from typing import Sequence

from labs.core.physics.deferred import numpy as np

__all__ = [
    "ABOVE_FIRST", "BELOW_FIRST", "CHAR_PX", "Frame", "GAP_PX", "LINE_PX", "PLOT_WIDTH_PX",
    "place", "plot_height_px", "text_box"
]

#: The plot-area width labels are judged in. Labs show a roofline in a full-width cell
#: (~800-900 px of plot); judging at a narrower width errs towards moving a label.
PLOT_WIDTH_PX = 640
CHAR_PX, LINE_PX, GAP_PX = 6.3, 14.0, 7.0


def plot_height_px(figure_height: float) -> float:
    """The plot area of a roofline ``figure_height`` px tall: title, axis title and legend
    take ~150 px (measured in Chromium at 420 and 480 px); never less than 100 px."""
    return max(float(figure_height) - 150.0, 100.0)


#: Candidate positions, in order of preference for a point drawn on a roof (label above)
#: and for a measured point (below its roof: label below).
ABOVE_FIRST = ("top center", "bottom center", "top left", "top right", "bottom left",
               "bottom right", "middle right", "middle left")
BELOW_FIRST = ("bottom center", "top center", "bottom left", "bottom right", "top left",
               "top right", "middle right", "middle left")


class Frame:
    """Log-log data coordinates to pixels (y up) of a plot area ``width`` x ``height``."""

    def __init__(self, x_range, y_range, height_px: float, width_px: float = PLOT_WIDTH_PX):
        self.lx, self.ly = (math.log10(v) for v in x_range), (math.log10(v) for v in y_range)
        self.lx, self.ly = tuple(self.lx), tuple(self.ly)
        self.w, self.h = float(width_px), float(height_px)

    def px(self, x, y):
        x, y = np.log10(np.asarray(x, float)), np.log10(np.asarray(y, float))
        return ((x - self.lx[0]) / (self.lx[1] - self.lx[0]) * self.w,
                (y - self.ly[0]) / (self.ly[1] - self.ly[0]) * self.h)


def text_box(x: float, y: float, position: str, text: str, radius: float = 6.0):
    """(x0, y0, x1, y1) in pixels of ``text`` placed at ``position`` of a marker at (x, y)."""
    lines = text.split("<br>")
    w = max(len(line) for line in lines) * CHAR_PX
    h = LINE_PX * len(lines)
    vertical, horizontal = position.split()
    if vertical == "middle":
        y0 = y - h / 2
        x0 = x + radius + 2 if horizontal == "right" else x - radius - 2 - w
    else:
        y0 = y + radius if vertical == "top" else y - radius - h
        x0 = {"center": x - w / 2, "left": x - w, "right": x}[horizontal]
    return x0, y0, x0 + w, y0 + h


def _line_inside(box, polylines) -> float:
    """Pixels of roof line that run through ``box`` (each segment sampled at 64 points)."""
    x0, y0, x1, y1 = box
    inside = 0.0
    for xs, ys in polylines:
        for i in range(len(xs) - 1):
            t = np.linspace(0.0, 1.0, 64)
            sx, sy = xs[i] + t * (xs[i + 1] - xs[i]), ys[i] + t * (ys[i + 1] - ys[i])
            share = np.mean((sx > x0) & (sx < x1) & (sy > y0) & (sy < y1))
            inside += share * math.hypot(xs[i + 1] - xs[i], ys[i + 1] - ys[i])
    return inside


def _overlap(a, b) -> float:
    """Overlapping area of two boxes, in pixels of one text line's height."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h / LINE_PX if w > 0 and h > 0 else 0.0


def _outside(box, frame: Frame) -> float:
    """Pixels of ``box`` beyond the plot area, in both directions."""
    return (max(0.0, -box[0]) + max(0.0, box[2] - frame.w)
            + max(0.0, -box[1]) + max(0.0, box[3] - frame.h))


def place(points: Sequence[tuple[float, float, str, bool]], polylines, boxes, frame: Frame,
          radius: float = 6.0) -> list[str]:
    """One plotly text position per point ``(x_px, y_px, text, above_first)``: the first
    candidate with nothing in the way (roof ``polylines`` in pixels, fixed ``boxes`` such as
    ridge labels, every marker, labels placed so far), else the one with least in the way
    (pixels of line through the label, overlapping area, pixels outside the plot)."""
    taken = list(boxes)
    r = radius - 1  # a label may touch a marker's edge, not cover it
    markers = [(x - r, y - r, x + r, y + r) for x, y, _, _ in points]
    chosen: dict[int, str] = {}
    # the longest labels first: they have the fewest places to go
    for i in sorted(range(len(points)), key=lambda k: -len(points[k][2])):
        x, y, text, above = points[i]
        best, best_cost = None, None
        for pos in ABOVE_FIRST if above else BELOW_FIRST:
            box = text_box(x, y, pos, text, radius)
            cost = (_line_inside(box, polylines) + sum(_overlap(box, b) for b in taken)
                    + sum(_overlap(box, m) for j, m in enumerate(markers) if j != i)
                    + _outside(box, frame))
            if best_cost is None or cost < best_cost - 1e-9:
                best, best_cost = (pos, box), cost
            if cost == 0:
                break
        chosen[i] = best[0]
        taken.append(best[1])
    return [chosen[i] for i in range(len(points))]
