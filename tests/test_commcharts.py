"""Lab 6's figure builders (labs.core.ui.figures.collectives, via figures): valid plotly (rebuilt
with validation on), every drawn number from core, the binding roof said in words, bad input."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import plotly.graph_objects as go
import pytest

from labs.core import collectives, figures, hardware, roofline, sharding


def _valid(fig: go.Figure) -> go.Figure:
    return go.Figure(fig.to_dict())  # raises on any invalid property


def _trace(fig, prefix):
    return next(t for t in fig.data if (t.name or "").startswith(prefix))


@pytest.mark.parametrize("k_shard,binding", [(1024, "link"), (65536, "compute")])
def test_three_roofs_place_the_layer_on_each_roof_and_name_the_binding_one(k_shard, binding):
    mm = sharding.sharded_matmul(1 << 16, k_shard * 8, 8192, 8)
    fig = _valid(figures.three_roof_figure("h100-sxm", "bf16", [("NVLink 4", 450),
                                                                ("PCIe Gen5", 63.0)],
                                           ai_hbm=mm.ai_hbm, ai_link=mm.ai_link))
    d = hardware.get("h100-sxm")
    hbm_pt = _trace(fig, "this layer at its HBM intensity")
    assert list(hbm_pt.y) == pytest.approx([float(roofline.attainable_tflops(mm.ai_hbm, d,
                                                                             "bf16"))])
    link_pt = _trace(fig, "this layer at its link intensity")
    assert list(link_pt.y) == pytest.approx([min(989.5, mm.ai_link * 450 / 1e3)])
    assert _trace(fig, "compute roof").y[0] == 989.5
    roof_line = _trace(fig, "the layer's roof")
    assert f": {binding}," in roof_line.name
    assert roof_line.y[0] == pytest.approx(min(link_pt.y[0], hbm_pt.y[0]))
    # ridges name their precision (in the legend: on the plot they share one line); the
    # link's ridge is π / B
    names = [tr.name for tr in fig.data]
    assert "HBM roof: 3,350 GB/s · ridge (bf16, dense) = 295 FLOP/B" in names
    assert "NVLink 4 roof: 450 GB/s one way · ridge (bf16, dense) = 2,199 FLOP/B" in names
    assert "PCIe Gen5 roof: 63 GB/s one way · ridge (bf16, dense) = 15,706 FLOP/B" in names


def test_three_roofs_reject_bad_input():
    with pytest.raises(ValueError, match="ai_link"):
        figures.three_roof_figure("h100-sxm", "bf16", [("NVLink 4", 450)], ai_hbm=10,
                                  ai_link=0)
    with pytest.raises(ValueError, match="links"):
        figures.three_roof_figure("h100-sxm", "bf16", [], ai_hbm=10, ai_link=10)
    with pytest.raises(KeyError, match="fp8"):
        figures.three_roof_figure("a100-sxm-80gb", "fp8", [("NVLink 3", 300)], ai_hbm=10,
                                  ai_link=10)


def test_alpha_beta_figure_draws_lines_points_and_marks_as_given():
    sizes = np.geomspace(1e3, 1e9, 13)
    times = [collectives.link_time("all-reduce", s, 8, "nvlink4") for s in sizes]
    fig = _valid(figures.alpha_beta_figure(
        [("NVLink 4", sizes, times, None, None)],
        [("all-reduce (measured)", [1e4, 1e5], [2e-4, 3e-4], "memory")],
        marks=[("your prediction", 1e9, 1.1e-3, "danger")], title="t"))
    line = _trace(fig, "NVLink 4")
    mark = _trace(fig, "your prediction")  # in the legend, no label across the lines (34.10)
    assert mark.showlegend and "text" not in mark.mode
    assert list(line.y) == pytest.approx(times)
    assert _trace(fig, "all-reduce (measured)").marker.symbol.endswith("-open")
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    assert "bytes" in fig.layout.xaxis.title.text and "Time" in fig.layout.yaxis.title.text
    # one unit per tick, never plotly's "100µ" next to "0.001"
    assert list(fig.layout.yaxis.ticktext) == ["1 µs", "10 µs", "100 µs", "1 ms", "10 ms"]
    assert list(fig.layout.yaxis.tickvals) == pytest.approx([1e-6, 1e-5, 1e-4, 1e-3, 1e-2])
    with pytest.raises(ValueError, match="at least one"):
        figures.alpha_beta_figure(title="empty")
    with pytest.raises(ValueError, match="positive"):
        figures.alpha_beta_figure([("x", [0, -1], [0, 0], None, None)], title="bad")


def test_scaling_figure_leaves_gaps_where_a_design_does_not_fit():
    rows = sharding.tp_scaling("llama-3-70b", "h100-pcie", "pcie5-x16", batch=1, seq_len=8192)
    vals = [s.tokens_per_s if s.fits else None for s in rows]
    fig = _valid(figures.scaling_figure([("PCIe Gen5", vals, None, None)],
                                        sharding.TP_DEGREES, title="t", y_title="tokens/s",
                                        chosen=("8-way", 8, vals[3]), oom_below=4))
    line = _trace(fig, "PCIe Gen5")
    assert list(line.x) == list(sharding.TP_DEGREES)
    assert any(v is None for v in vals) and any(v is not None for v in vals)
    for shown, design in zip(line.y, rows):  # a gap exactly where the design does not fit
        assert (shown is None) == (not design.fits)
        if design.fits:
            assert shown == pytest.approx(design.tokens_per_s)
    assert fig.layout.yaxis.type != "log" and fig.layout.annotations[0].text == \
        "<b>out of memory</b>"
    with pytest.raises(ValueError, match="one value per degree"):
        figures.scaling_figure([("x", [1.0], None, None)], [1, 2], title="t", y_title="y")


def test_three_roof_points_are_named_in_the_legend_not_by_labels_on_the_plot():
    # "layer: HBM intensity" sat on the compute roof and "layer: link intensity"
    # on "with latency α" (Lab 6 Part 2)
    fig = figures.three_roof_figure("h100-sxm", "bf16", [("NVLink 4", 450), ("IB NDR", 50)],
                                    ai_hbm=950, ai_link=1755, attained_tflops=780)
    assert not [t.name for t in fig.data if "text" in (t.mode or "")]
    names = [t.name for t in fig.data if t.showlegend is not False]
    assert "this layer at its link intensity: 1,755 FLOP/B" in names
    assert "with the collective's latency α" in names


def test_ring_allreduce_figure_draws_each_link_and_the_achievable_ring():
    sizes = [1e6, 1e9]
    fig = _valid(figures.ring_allreduce_figure(["nvlink4", "pcie5-x16"], 8, sizes,
                                               achievable_link="nvlink4"))
    names = [t.name for t in fig.data]
    assert names[1] == "NVLink 4 at 82%: achievable ring, nccl-tests"  # 370 of 450 GB/s
    # 1 GB on NVLink 4: 14 x 1 µs + 2 x 7/8 x 1 GB / 450 GB/s; achievable at 370 GB/s
    assert fig.data[0].y[-1] == pytest.approx(14e-6 + 1.75e9 / 450e9)
    assert fig.data[1].y[-1] == pytest.approx(14e-6 + 1.75e9 / 370e9)
    # PCIe Gen5: 14 x 3 µs + 1.75 x 1 GB / 63 GB/s
    assert fig.data[2].y[-1] == pytest.approx(42e-6 + 1.75e9 / 63e9)
    assert fig.layout.title.text == "Ring all-reduce, n = 8: α-β model on each link"
    with pytest.raises(ValueError):
        figures.ring_allreduce_figure(["nvlink4"], 12, sizes, achievable_link="nvlink4")


def test_measured_collectives_figure_draws_the_points_the_fits_and_the_links():
    rows = [{"op": "all-reduce", "bytes": 4096, "median_s": 1e-4},
            {"op": "all-reduce", "bytes": 65536, "median_s": 2e-4}]
    fit = SimpleNamespace(op="all-reduce", alpha_s=1e-4, busbw_gbs=2.0,
                          predict=lambda s: 1e-4 + s / 2e9)
    fig = _valid(figures.measured_collectives_figure(rows, [fit], backend="gloo", n=2))
    points = _trace(fig, "all-reduce (measured)")
    assert list(points.x) == [4096, 65536] and list(points.y) == [1e-4, 2e-4]
    line = _trace(fig, "all-reduce fit: α 100 µs, β 2 GB/s")
    assert line.y[-1] == pytest.approx(1e-4 + 1e9 / 2e9)  # the fit's own prediction at 1 GB
    # NVLink 4 with 2 chips: 2 x 1 µs + 2 x 1/2 x 1 GB / 450 GB/s
    assert _trace(fig, "NVLink 4, all-reduce model").y[-1] == pytest.approx(2e-6 + 1e9 / 450e9)
    assert fig.layout.title.text == "This machine (gloo, 2 workers) next to NVLink and PCIe"


def test_block_figures_draw_the_blocks_roofs_and_its_times_against_the_batch():
    mm = sharding.sharded_matmul(4096, 1024 * 8, 8192, 8, matmuls=2)
    now = sharding.shard_times(mm, "h100-sxm", "nvlink4")
    roofs = _valid(figures.block_roofs_figure("h100-sxm", "bf16", "nvlink4", mm, now))
    names = [t.name for t in roofs.data]
    assert any(n.startswith("NVLink 4") for n in names)
    assert not any("PCIe Gen4" in n for n in names)  # at most two other links, then stop
    assert roofs.layout.title.text == ("One block of 2 matmuls per all-reduce: T = 4,096, "
                                       "F/n = 1,024, n = 8")
    times = [SimpleNamespace(t_compute=1.0, t_hbm=2.0, t_link=3.0),
             SimpleNamespace(t_compute=2.0, t_hbm=2.5, t_link=3.5)]
    fig = _valid(figures.block_batch_figure([1, 2], times, k_shard=1024, your_batch=2))
    assert [list(t.y) for t in fig.data[:3]] == [[1.0, 2.0], [2.0, 2.5], [3.0, 3.5]]
    assert [t.name for t in fig.data[:3]] == ["compute", "HBM", "link (all-reduce)"]
    assert fig.layout.shapes[0].x0 == 2  # your batch


def test_decode_figures_leave_gaps_where_a_degree_does_not_fit():
    rows = sharding.tp_scaling("llama-3-70b", "h100-pcie", "pcie5-x16", batch=1, seq_len=8192)
    time_fig = _valid(figures.decode_time_figure(rows, "pcie5-x16"))
    assert time_fig.layout.title.text.startswith("Time per decode step on PCIe Gen5 x16:")
    matmuls = _trace(time_fig, "matmuls: max(compute, HBM)")
    assert matmuls.y[0] is None  # 141 GB of bf16 weights do not fit one 80 GB card
    assert matmuls.y[1] == pytest.approx(max(rows[1].t_compute, rows[1].t_hbm) * 1e3)
    assert time_fig.layout.annotations[0].text == "<b>out of memory</b>"
    by_link = {"pcie5-x16": rows,
               "ib-ndr": sharding.tp_scaling("llama-3-70b", "h100-pcie", "ib-ndr", batch=1,
                                             seq_len=8192)}
    fig = _valid(figures.decode_throughput_figure(by_link, "pcie5-x16", rows[1]))
    assert [t.name for t in fig.data[:2]] == ["your link: PCIe Gen5 x16", "InfiniBand NDR"]
    assert [t.line.dash for t in fig.data[:2]] == ["solid", "dash"]
    assert list(fig.data[0].x) == [1, 2, 4, 8, 16]
    marked = [d for d in fig.data if d.name == "2-way"]
    assert len(marked) == 1 and list(marked[0].y) == [pytest.approx(rows[1].tokens_per_s)]
    # a degree that does not fit (one 80 GB card for 141 GB of weights) is not marked
    unfit = _valid(figures.decode_throughput_figure(by_link, "pcie5-x16", rows[0]))
    assert len(unfit.data) == len(fig.data) - 1


def test_dp_step_figure_adds_the_step_both_ways():
    steps = [sharding.DPStep(1e9, 8, t, t_fwd=1.0, t_bwd=2.0, t_comm=3.0, overlap=True)
             for t in (256, 512)]
    fig = _valid(figures.dp_step_figure([256, 512], steps, critical=300, your_batch=512))
    assert _trace(fig, "step, no overlap").y[0] == 6.0  # 1 + 2 + 3
    assert _trace(fig, "step, overlapped").y[0] == 4.0  # 1 + max(2, 3)
    assert fig.layout.title.text == "One data-parallel step on 8 GPUs against the batch per GPU"
    assert [s.x0 for s in fig.layout.shapes] == [300, 512]
