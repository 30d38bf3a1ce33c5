"""Lab 5's figures (``labs/core/ui/figures/hierarchy.py``): every number drawn equals labs.core,
one roof per level with a bandwidth, the OS's cache sizes as vertical lines, the plateaus as
bars, the tiles that fail to launch or thrash a cache shaded, readable log ticks, the plots
named for what they are (the per-level plot is the hierarchical roofline), and bad input
refused."""

from __future__ import annotations

from types import SimpleNamespace

import math

import numpy as np
import plotly.graph_objects as go
import pytest

from labs.core import figures
from labs.core import hierarchy
from labs.core import reference_machine
from labs.core.ui.figures.hierarchy import nice_log_ticks

KIB, MIB = 2**10, 2**20


def _validated(fig: go.Figure) -> go.Figure:
    """Builders skip plotly's validation for speed; rebuilding with it on must succeed."""
    return go.Figure(fig.to_dict())


def test_working_set_figure_draws_series_cache_lines_and_plateaus():
    sweep = reference_machine.SWEEP
    caches = [("L1d", 32 * KIB), ("L2", 512 * KIB), ("L3", 32 * MIB)]
    plateaus = reference_machine.plateaus()
    fig = _validated(figures.working_set_figure(
        [("this machine", [p[0] for p in sweep], [p[1] for p in sweep], "measured")],
        caches=caches, plateaus=plateaus, title="t"))
    (series,) = [t for t in fig.data if t.name == "this machine"]
    assert list(series.y) == [p[1] for p in sweep]
    lines = [s.x0 for s in fig.layout.shapes if s.type == "line"]
    assert sorted(lines) == [b for _, b in caches]  # one vertical line per reported cache
    bars = [t for t in fig.data if t.legendgroup == "plateaus"]
    assert [(t.x[0], t.y[0]) for t in bars] == [(p.lo_bytes, p.bandwidth_gbs) for p in plateaus]
    labels = " ".join(a.text for a in fig.layout.annotations)
    for name, _ in caches:
        assert name in labels
    for p in plateaus:
        assert p.name in labels


@pytest.mark.parametrize("series", [
    [("x", [1, 2], [1, 2], "simulated")],  # kind
    [("x", [1, 2], [1], "measured")],  # lengths
    [("x", [0, 2], [1, 2], "measured")],  # a zero size
    [],
])
def test_working_set_figure_refuses_bad_series(series):
    with pytest.raises(ValueError, match="series"):
        figures.working_set_figure(series, title="t")


def without_l2_figure(device):
    """A registry GPU as it would be without a published L2 measurement (a level with no
    figure: listed, never drawn)."""
    import dataclasses

    h = hierarchy.gpu_hierarchy(device, "bf16")
    return dataclasses.replace(h, levels=tuple(
        dataclasses.replace(lv, bandwidth_gbs=None, measured=False, estimate=False)
        if lv.name == "L2" else lv for lv in h.levels))


def test_hierarchical_roofline_has_one_roof_per_level_with_a_bandwidth():
    h = without_l2_figure("h100-sxm")
    p = hierarchy.place(hierarchy.gemm_kernel(1024, 1024, 1024, "bf16", tile=1), h)
    fig = _validated(figures.per_level_roofline_figure(h, [p], title="t"))
    names = [t.name or "" for t in fig.data]
    assert any(n.startswith("bf16 tensor-core peak: 990 TFLOP/s") for n in names)  # 989.5
    # the scalar kernels' ceiling, the H100's 67 TFLOP/s CUDA-core rate
    assert any(n.startswith("vector (CUDA-core) ceiling: 67") for n in names)
    drawn = [lv for lv in h.levels if lv.bandwidth_gbs is not None]
    for lv in drawn:
        (roof,) = [t for t in fig.data if (t.name or "").startswith(f"{lv.name} · ")]
        x = np.array(roof.x, float)
        np.testing.assert_allclose(roof.y, hierarchy.level_roof_tflops(x, lv, h.peak_tflops))
    assert any("L2: no bandwidth figure (not drawn)" in n for n in names)
    points = [t for t in fig.data if t.mode == "markers+text"]
    assert sorted(t.x[0] for t in points) == sorted(u.ai for u in p.uses)
    assert all(t.y[0] == pytest.approx(p.attainable_tflops) for t in points)
    assert fig.layout.title.text == "t"
    default = figures.per_level_roofline_figure(h, [p])
    assert default.layout.title.text.startswith("Hierarchical roofline")
    assert figures.cache_roofline_figure is figures.per_level_roofline_figure  # the old name
    with pytest.raises(ValueError, match="hier"):
        figures.per_level_roofline_figure("h100-sxm")
    with pytest.raises(ValueError, match="ai_range"):
        figures.per_level_roofline_figure(h, ai_range=(10, 1))


def test_roof_names_say_how_the_bandwidth_is_known():
    """A measured bandwidth is "(measured)", not "(estimate)"; a derived one
    (shared memory, from bytes per clock) "(derived)"; a vendor figure plain. The registry's
    L2 figures are published measurements: "(measured)" too."""
    h = hierarchy.with_bandwidths(hierarchy.gpu_hierarchy("a100-sxm-80gb"), {"HBM": 1800.0})
    names = [t.name or "" for t in figures.per_level_roofline_figure(h).data]
    assert "HBM · 1,800 GB/s (measured)" in names or any(
        n.startswith("HBM · ") and n.endswith("(measured)") for n in names)
    assert any(n.startswith("L1 / shared memory · ") and n.endswith("(derived)") for n in names)
    assert "L2 · 5,300 GB/s (measured)" in names
    assert not any("estimate" in n for n in names)
    a100 = [t.name or "" for t in figures.per_level_roofline_figure(
        hierarchy.gpu_hierarchy("a100-sxm-80gb")).data]
    assert any(n.startswith("HBM · ") and "(" not in n for n in a100)


def test_roof_names_sit_above_their_knees_clear_of_every_line_and_each_other():
    """A roof's name sits just above the compute roof, centred where its slanted
    line meets it (AI = peak / bandwidth): every slanted line lies below the compute roof, so
    no line runs through a name; two names that would touch take different rows; the points'
    labels sharing an AI are merged ("binds: L2 = L1 / shared memory"), never printed twice."""
    for h in (hierarchy.gpu_hierarchy("a100-sxm-80gb"), reference_machine.as_hierarchy()):
        p = hierarchy.place(hierarchy.gemm_kernel(1024, 1024, 1024, h.precision, tile=1), h)
        fig = figures.per_level_roofline_figure(h, [p])
        notes = [a for a in fig.layout.annotations if a.text and a.text.startswith("<b>")]
        drawn = [lv for lv in h.levels if lv.bandwidth_gbs]
        assert [a.text for a in notes] == [f"<b>{lv.name}</b>" for lv in drawn]
        for a, lv in zip(notes, drawn):
            assert (a.xanchor, a.yanchor) == ("center", "bottom") and a.yshift >= 3
            assert a.y == pytest.approx(math.log10(h.peak_tflops))
            assert a.x == pytest.approx(math.log10(h.peak_tflops * 1e3 / lv.bandwidth_gbs))
        # names in one row are at least their half-widths apart (6.3 px per character, at
        # 640 px for the x range: the narrowest plot a lab draws)
        lo, hi = fig.layout.xaxis.range
        px = 640 / (hi - lo)
        for i, a in enumerate(notes):
            for c in notes[i + 1:]:
                if a.yshift == c.yshift:
                    need = (len(a.text) + len(c.text) - 14) * 6.3 / 2
                    assert abs(a.x - c.x) * px >= need, (a.text, c.text)
    h = hierarchy.gpu_hierarchy("a100-sxm-80gb")
    p = hierarchy.place(hierarchy.reduction_kernel(2**20, "bf16"), h)  # L1 and L2 serve the same bytes
    texts = [t.text[0] for t in figures.per_level_roofline_figure(h, [p]).data
             if t.mode == "markers+text"]
    assert "<b>binds: L2 = L1 / shared memory</b>" in texts and texts.count("") == 1


def test_tile_traffic_figure_shades_tiles_that_fail_to_launch_and_keeps_levels_visible():
    h = hierarchy.gpu_hierarchy("a100-sxm-80gb", "bf16")
    ok, failed = hierarchy.launchable_tiles(8192, "bf16", [64, 128, 256, 512], h, register_tile=64)
    assert (ok, failed) == ([64, 128], [256, 512])
    curve = list(zip(ok, hierarchy.tile_sweep(8192, "bf16", ok, h, register_tile=64)))
    fig = _validated(figures.tile_traffic_figure(h, curve, current=512, failed=failed,
                                                 title="t"))
    lines = {t.name: t for t in fig.data}
    for i, lv in enumerate(h.levels):
        trace = lines[f"bytes {lv.name} serves"]
        assert list(trace.y) == pytest.approx([p.uses[i].bytes / 1e9 for _, p in curve])
        assert list(trace.x) == ok  # no traffic drawn for a kernel that does not launch
    # a level drawn over a lower one is thinner, so overlapping lines both show
    widths = [lines[f"bytes {lv.name} serves"].line.width for lv in h.levels]
    assert widths == sorted(widths) and len(set(widths)) == len(widths)
    # L2 (the wave) and HBM no longer coincide: HBM serves far less than L2
    assert all(h_ < l2 / 4 for h_, l2 in zip(lines["bytes HBM serves"].y,
                                           lines["bytes L2 serves"].y))
    rects = [s for s in fig.layout.shapes if s.type == "rect"]
    assert len(rects) == 1 and 128 < rects[0].x0 < 256
    text = " ".join(a.text for a in fig.layout.annotations)
    assert "fails to launch" in text and "spill" not in text
    assert list(fig.layout.xaxis.tickvals) == [64, 128, 256, 512]
    ticks = list(fig.layout.yaxis.tickvals)
    lo, hi = (10**v for v in fig.layout.yaxis.range)
    assert 2 <= len(ticks) <= 8 and all(lo <= t <= hi for t in ticks)
    with pytest.raises(ValueError, match="curve"):
        figures.tile_traffic_figure(h, [], title="t")


def test_tile_traffic_figure_shades_a_thrashing_cache():
    h = reference_machine.as_hierarchy()  # L1d 32 KiB: T = 64 fp32 (48 KiB) thrashes it
    tiles = [8, 16, 32, 64, 128]
    curve = list(zip(tiles, hierarchy.tile_sweep(4096, "fp32", tiles, h, register_tile=8)))
    text = " ".join(a.text for a in figures.tile_traffic_figure(h, curve, title="t")
                    .layout.annotations)
    assert "the cache thrashes" in text and "fails to launch" not in text


@pytest.mark.parametrize("lo,hi", [(10.8, 55), (0.001, 1000), (30, 55), (2.0, 9.0), (1e9, 3e12)])
def test_log_ticks_are_few_inside_the_range_and_evenly_readable(lo, hi):
    ticks = nice_log_ticks(lo, hi)
    assert ticks == sorted(ticks) and all(lo <= t <= hi for t in ticks)
    assert 2 <= len(ticks) <= max(8, math.ceil(math.log10(hi / lo)) + 1)


def test_sawtooth_figure_marks_every_tile_multiple():
    ns = list(range(64, 129, 4))
    fig = _validated(figures.sawtooth_figure(ns, [1.0] * len(ns), [0.9] * len(ns), tile=16,
                                             title="t", marks=[(80, "N = 80")]))
    dotted = [s.x0 for s in fig.layout.shapes if s.line.dash == "dot"]
    assert dotted == [64, 80, 96, 112, 128]
    with pytest.raises(ValueError, match="same length"):
        figures.sawtooth_figure(ns, [1.0], tile=16, title="t")


def test_gemm_sawtooth_figure_draws_a_run_or_the_reference_machines():
    # the reference machine's recorded run: N = 68 against 64, 63.02 / 68.14 measured and
    # (68/80)^2 = 0.7225 modelled; tile 16
    fig = _validated(figures.gemm_sawtooth_figure(per_tile=True))
    modelled, measured = fig.data
    assert list(measured.x[:2]) == [64, 68]
    assert measured.y[1] == pytest.approx(63.02 / 68.14) and modelled.y[1] == pytest.approx(0.7225)
    assert "reference machine" in measured.name and "recorded" in measured.name
    assert fig.layout.yaxis.title.text == "Throughput ÷ that at the tile multiple ≤ N"
    run = SimpleNamespace(measured=[{"n": 128, "relative": 1.0, "predicted": 1.0},
                                    {"n": 160, "relative": 0.5, "predicted": 0.625}],
                          tile=128, device="a GPU")
    fig = _validated(figures.gemm_sawtooth_figure(run, per_tile=False))
    assert fig.data[1].name == "measured: this machine (a GPU)"
    assert list(fig.data[0].y) == [1.0, 0.625] and list(fig.data[1].y) == [1.0, 0.5]
    assert fig.layout.yaxis.title.text == "Throughput ÷ the best N&#x27;s"  # escaped


def test_loglog_lines_figure_takes_y_ticks():
    fig = _validated(figures.loglog_lines_figure(
        [("t", [256, 4 * MIB], [2.0, 60.0], "#000000", "solid")], title="t", x_title="x",
        y_title="y", y_ticks=([1, 2, 5, 10, 20, 50, 100], ["1", "2", "5", "10", "20", "50",
                                                          "100"])))
    assert list(fig.layout.yaxis.tickvals) == [1, 2, 5, 10, 20, 50, 100]
    assert fig.layout.yaxis.ticktext[2] == "5"


def test_an_undetermined_verdict_is_drawn_as_such_not_as_a_binding_roof():
    """Physics review: on an H100 without an L2 figure the 8192^3 bf16 GEMM with a
    64 tile needs >= 989.5 / (8192/257) = 31 TB/s of L2 to reach its bound. The hierarchical
    roofline names no binding level, draws no L2 roof, puts the L2 point at the known bound
    labelled "undetermined" with that need, in the warning colour, on a dashed guide; the
    A100's same kernel still says "binds: L2"."""
    from labs.core.ui.tokens import COLORS

    kernel = hierarchy.gemm_kernel(8192, 8192, 8192, "bf16", tile=64, register_tile=64)
    h = without_l2_figure("h100-sxm")
    p = hierarchy.place(kernel, h)
    fig = _validated(figures.per_level_roofline_figure(h, [p]))
    points = {t.name.split(" · AI at ")[1]: t for t in fig.data if t.mode == "markers+text"}
    texts = [t.text[0] for t in points.values()]
    assert not any("binds" in t for t in texts)
    # L1 / shared memory sits at the same AI (T = r = 64): one label, the need is L2's
    assert points["L2"].text[0] == ("<b>undetermined: L2 (needs ≥ 31 TB/s) = L1 / shared "
                                    "memory</b>")
    assert points["L1 / shared memory"].text[0] == ""
    assert points["L2"].marker.line.color == COLORS["warn"]
    assert points["L2"].y[0] == pytest.approx(989.5)  # the known roofs' bound, no more
    assert "undetermined" in points["L2"].hovertext[0] and "at most" in points["L2"].hovertext[0]
    assert not any((t.name or "").startswith("L2 · ") for t in fig.data)  # no L2 roof
    (guide,) = [t for t in fig.data if t.mode == "lines" and t.showlegend is False]
    assert (guide.line.color, guide.line.dash) == (COLORS["warn"], "dash")
    a100 = hierarchy.place(kernel, hierarchy.gpu_hierarchy("a100-sxm-80gb", "bf16"))
    texts = [t.text[0] for t in figures.per_level_roofline_figure(a100.hierarchy, [a100]).data
             if t.mode == "markers+text"]
    assert "<b>binds: L2 = L1 / shared memory</b>" in texts
    assert not any("undetermined" in t for t in texts)
    # the tile figure: "undetermined" above every tile on the H100, the verdict on hover
    tiles = [32, 64, 128]
    for hier, want in ((h, ["undetermined"] * 3), (a100.hierarchy, ["L2", "L2", "compute"])):
        curve = list(zip(tiles, hierarchy.tile_sweep(8192, "bf16", tiles, hier, register_tile=64)))
        notes = [a for a in figures.tile_traffic_figure(hier, curve, title="t").layout.annotations
                 if a.textangle == -30]
        assert [a.text for a in notes] == want
        for a in notes:
            if a.text == "undetermined":
                assert a.font.color == COLORS["warn"] and "needs ≥" in a.hovertext
            else:
                assert a.hovertext is None
