"""Chart polish (issue 18.7): point labels that overlap nothing, legends that show every
colour drawn. The rules are tested on generated cases, not only on the figures that were
reported (Lab 1 at M=N=K=1, Lab 3's fp8 line, Lab 2's prefill legend, Lab 3's bars)."""

from __future__ import annotations

import itertools

import plotly.graph_objects as go
import pytest

from labs.core import figures, roofline
from labs.core.ui import labelplace
from labs.core.ui.figures import Point


def _frame(fig: go.Figure) -> labelplace.Frame:
    x = [10 ** v for v in fig.layout.xaxis.range]
    y = [10 ** v for v in fig.layout.yaxis.range]
    return labelplace.Frame(x, y, labelplace.plot_height_px(fig.layout.height))


def _label_boxes(fig: go.Figure) -> list[tuple[str, tuple]]:
    """(label, pixel box) of every point label as placed."""
    frame, out = _frame(fig), []
    for t in fig.data:
        if t.mode != "markers+text":
            continue
        positions = t.textposition if isinstance(t.textposition, (list, tuple)) else \
            [t.textposition] * len(t.x)
        for x, y, text, pos in zip(t.x, t.y, t.text, positions):
            px, py = (float(v) for v in frame.px(x, y))
            out.append((text, labelplace.text_box(px, py, pos, text)))
    return out


def _roof_lines(fig: go.Figure):
    frame = _frame(fig)
    return [frame.px(t.x, t.y) for t in fig.data if t.mode == "lines+markers+text"]


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.mark.parametrize("device, precision", [("h100-sxm", "bf16"), ("l4", "fp16"),
                                               ("jetson-orin-nx-16gb", "fp16")])
@pytest.mark.parametrize("ratio", [1.0, 1.02, 1.2, 1.6])
def test_labels_of_points_close_together_do_not_overlap(device, precision, ratio):
    # Lab 1 at M=N=K=1: the GEMM and its GEMV share one AI (ratio 1); nearby AIs likewise
    for ai in (0.33, 12.0, 2000.0):
        fig = figures.roofline_figure([(device, precision)], [
            Point("your GEMM", ai), Point("GEMV (decode)", ai * ratio)], ai_range=(0.1, 1e4))
        (a, box_a), (b, box_b) = _label_boxes(fig)
        assert not _overlap(box_a, box_b), (device, ai, ratio, a, b)


def test_lab_1_at_m_n_k_1_labels_do_not_overlap():
    from labs.core import formulas

    gemm, gemv = formulas.gemm(1, 1, 1, "bf16"), formulas.gemv(1, 1, "bf16")
    fig = figures.roofline_figure([("h100-sxm", "bf16")], [
        Point("your GEMM", gemm.ai), Point("GEMV (decode)", gemv.ai)])
    (_, a), (_, b) = _label_boxes(fig)
    assert not _overlap(a, b)


@pytest.mark.parametrize("device", ["h100-sxm", "b200", "l4", "rtx-4090"])
def test_a_point_label_runs_over_no_roof(device):
    # Lab 3's explorer: one roof per math precision, points on each; a label above a point
    # on one roof must not run over the next roof up (the fp8 line) or its slope
    from labs.core import hardware

    d = hardware.get(device)
    precisions = [p for p in ("fp32", "tf32", "fp16", "fp8", "fp4") if d.has(p)]
    # each point on its own roof, as Lab 3's explorer draws them (GEMM 4096³)
    pts = [Point(label, ai, float(roofline.attainable_tflops(ai, d, p))) for label, ai, p in (
        ("fp16, bf16 | nf4→fp16, int4-g128→fp16", 1365.0, "fp16"), ("tf32", 683.0, "tf32"),
        ("fp32", 683.0, "fp32"), ("mxfp8, fp8, int8", 2731.0, "fp8")) if p in precisions]
    fig = figures.roofline_figure([(d, p) for p in precisions], pts, height=480,
                                  label_points=True)
    lines = _roof_lines(fig)
    for text, box in _label_boxes(fig):
        assert labelplace._line_inside(box, lines) == 0, (device, text)
    for (a, box_a), (b, box_b) in itertools.combinations(_label_boxes(fig), 2):
        assert not _overlap(box_a, box_b), (device, a, b)


@pytest.mark.parametrize("ais", [(0.5, 2000.0), (1.0, 60.0, 1300.0, 1800.0), (5.0,), (3e3,)])
def test_the_legend_shows_every_colour_a_point_is_drawn_in(ais):
    fig = figures.roofline_figure([("jetson-agx-orin-64gb", "bf16")],
                                  [Point(f"op {i}", ai) for i, ai in enumerate(ais)])
    go.Figure(fig.to_dict())  # valid plotly
    drawn = {c for t in fig.data if t.mode in ("markers", "markers+text") and t.x[0] is not None
             for c in t.marker.color}
    legend = {t.marker.color for t in fig.data if t.showlegend is not False and t.mode ==
              "markers"}
    assert drawn and drawn <= legend
    names = " ".join(t.name for t in fig.data if t.showlegend is not False)
    for ai in ais:
        assert roofline.regime(ai, "jetson-agx-orin-64gb", "bf16") in names


def test_a_bar_chart_legend_names_every_bar_colour():
    fig = figures.bar_figure(["fp16", "nf4→fp16", "fp8"], [1, 2, 3],
                             colors=["#0072B2", "#0072B2", "#BF8400"],
                             legend={"math in fp16": "#0072B2", "math in fp8": "#BF8400"},
                             yaxis_title="AI (FLOP/byte)")
    go.Figure(fig.to_dict())
    assert fig.layout.showlegend
    shown = {t.name: t.marker.color for t in fig.data if t.showlegend}
    assert shown == {"math in fp16": "#0072B2", "math in fp8": "#BF8400"}
    with pytest.raises(ValueError, match="legend names no meaning"):
        figures.bar_figure(["a", "b"], [1, 2], colors=["memory", "compute"],
                           legend={"memory-bound": "memory"}, yaxis_title="x (s)")
