"""Lab 5 "The Memory Hierarchy": headless locked/unlocked runs, numbers equal labs.core, the
failure state (a tile too big for shared memory fails to launch) reached and recovered through
widget values, a measured machine fed in as the measurement cell's result, ledger events,
export, and the walk in prediction order: no open instrument shows a later answer."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as NS

import plotly.graph_objects as go
import pytest

from labs.core import hierarchy
from labs.core import measure, quiz
from labs.core.measure import live
from labs.core import quantization
from labs.core import reference_machine
from labs.core import staircase
from labs.core.measure.caches import CacheLevel, CacheSizes
from labs.core.measure.working_set import SweepPoint, WorkingSetSweep
from labs.core.physics import misconceptions
from labs.lab_05_memory_hierarchy import app
from notebook_support import (cell_cpu_seconds, cells_that_only_show, choice, export_page,
                              visible_text)

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "labs" / "lab_05_memory_hierarchy.py"
ITEMS = ("lab05.staircase_ratio", "lab05.binding_level", "lab05.tile_traffic",
         "lab05.shrink_speedup", "lab05.wave_fraction")
PREDICTIONS = {
    "staircase_prediction": quiz.Prediction("lab05.staircase_ratio", 3.0, "×"),
    "binding_prediction": choice("lab05.binding_level", "HBM"),
    "tile_prediction": quiz.Prediction("lab05.tile_traffic", 4.0, "×"),
    "shrink_prediction": quiz.Prediction("lab05.shrink_speedup", 1000.0, "×"),
    "wave_prediction": quiz.Prediction("lab05.wave_fraction", 0.9),
}
FIGURES = ("staircase_figure", "hierarchical_roofline", "tile_figure", "overhead_figure",
           "wave_figure", "sawtooth_figure")
INSTRUMENTS = FIGURES + ("level_cards", "staircase_explain", "binding_explain", "tile_explain",
                         "shrink_explain", "wave_explain")
KIB, MIB = 2**10, 2**20


@pytest.fixture(autouse=True)
def ledger_env(tmp_path, monkeypatch):
    monkeypatch.setenv("ROOFLINE_LEDGER_DIR", str(tmp_path / "ledger"))
    monkeypatch.setenv("ROOFLINE_STUDENT_ID", "tester")
    monkeypatch.delenv("ROOFLINE_REVEAL", raising=False)
    return tmp_path


#: A widget cell's layout of its widgets (shown by a cell that names no widget), and a function
#: that lays them out with widgets made elsewhere: overridden with plain stand-ins.
LAYOUT, LAY_OUT = object(), object()
#: The settings reader of the measurement's widget cell: overridden to read the budget given.
BUDGET = object()
#: A plain value a widget cell defines beside its widgets (not a widget): kept as it is.
OPEN = object()

#: Each widget cell's names with their opening values: overriding one widget of a cell means
#: providing all of that cell's definitions (marimo's rule for app.run(defs=...)).
WIDGET_CELLS = (
    {"machine_picker": "a100-sxm-80gb"},
    {"sweep_budget": 25, "sweep_button": False, "sweep_controls": LAYOUT,
     "sweep_settings": BUDGET},
    {"kernel_picker": "naive GEMM", "size_slider": 1024, "lay_out_kernel_controls": LAY_OUT},
    {"gemm_n_slider": 8192, "gemm_tile_slider": 64, "lay_out_tile_controls": LAY_OUT},
    {"gemm_register_picker": 64, "tile_controls": LAYOUT},
)
PANEL_WIDGETS = ("sweep_budget", "kernel_picker", "size_slider", "gemm_n_slider",
                 "gemm_tile_slider", "gemm_register_picker")


def _set(**values):
    """Widget stand-ins for ``values``, plus the opening values of the other widgets defined
    in the same cells."""
    out = {}
    for cell in WIDGET_CELLS:
        if set(cell) & set(values):
            now = {k: values.get(k, v) for k, v in cell.items()}
            out.update({k: f"({k})" if v is LAYOUT
                        else (lambda *_controls: "(controls)") if v is LAY_OUT
                        else live.read_at_press(budget=NS(value=now["sweep_budget"]))
                        if v is BUDGET
                        else True if v is OPEN
                        else NS(value=v) for k, v in now.items()})
    return out


#: A measurement cell's results: overriding one means giving its cell's other name too.
MEASUREMENTS = ({"hierarchy_run": None, "hierarchy_unavailable": None},
                {"overhead_run": None, "overhead_unavailable": None})


def run(**values):
    """The lab with every prediction locked; widget names take plain values (see _set), any
    other name its cell's result."""
    widgets = {k: v for k, v in values.items() if any(k in cell for cell in WIDGET_CELLS)}
    others = {k: v for k, v in values.items() if k not in widgets}
    for cell in MEASUREMENTS:
        if set(cell) & set(others):
            others = {**cell, **others}
    return app.run(defs={**PREDICTIONS, **_set(**widgets), **others})


def shown(outputs) -> str:
    return " ".join(visible_text(o) for o in outputs if o is not None)


def fake_run(l2_gbs=90.0, dram_gbs=15.0, l1_gbs=150.0, l3_gbs=50.0):
    """What the Part 1 measurement cell returns after a press, built without torch."""
    sizes = [16 * KIB * 2**k for k in range(15)]
    bw = [l1_gbs if s <= 32 * KIB else l2_gbs if s <= 512 * KIB else l3_gbs if s <= 8 * MIB
          else dram_gbs for s in sizes]
    caches = CacheSizes((CacheLevel("L1d", 1, 32 * KIB, 1), CacheLevel("L2", 2, 512 * KIB, 1),
                         CacheLevel("L3", 3, 32 * MIB, 2)), "test sysfs")
    sweep = WorkingSetSweep("Test CPU", "cpu", 1, tuple(
        SweepPoint(s, "ok", g, g * 0.9, 0.1, 40) for s, g in zip(sizes, bw)), caches, 20, 12,
        4 * MIB, (1.0, 1.0, 1.0))
    info = measure.DeviceInfo("cpu", "Test CPU", "Measuring the CPU", "cpu", None, 16.0,
                              cores=2, threads=2, torch_version="2.x")
    return {"info": info, "sweep": sweep, "levels": measure.hierarchy_levels(sweep),
            "precision": "fp32", "peak_tflops": 0.08, "seconds": 14.0}


# --- locked and unlocked --------------------------------------------------------------------

def test_locked_run_hides_every_instrument_and_measures_nothing():
    outputs, defs = app.run()
    for name in INSTRUMENTS:
        assert name not in defs, name
    for p in PREDICTIONS:
        assert defs[p] is None
    text = shown(outputs)
    rule = defs["INSTRUMENTS"]
    for name in ("staircase", "roofline", "tiling", "call_overhead", "sawtooth"):
        assert rule.notice_text(name, set()) in text, name  # says which predictions to lock
    assert "Math peek" not in text and "Key takeaways" not in text
    assert "appear once all 5 predictions of this lab are locked (0 so far)" in text
    assert defs["hierarchy_run"] is None and defs["overhead_run"] is None
    assert defs["sawtooth_run"] is None


def test_unlocked_run_shows_figures_and_core_numbers():
    outputs, defs = run()
    text = shown(outputs)
    # one peek a part, Part 4's two effects each beside its own instrument
    assert text.count("Math peek") == 5 and "Key takeaways" in text
    for name in INSTRUMENTS:
        assert name in defs, name
    for name in FIGURES:
        assert isinstance(defs[name], go.Figure)
        go.Figure(defs[name].to_dict())  # valid plotly when validated
    # nothing measured: the staircase is the reference machine's recording
    assert defs["hierarchy_run"] is None
    ref = defs["staircase_figure"].data[0]
    assert list(ref.y) == [p[1] for p in reference_machine.SWEEP]
    # Part 2 on the opening machine (A100, bf16): the picked kernel and every kernel are core's
    a100 = hierarchy.gpu_hierarchy("a100-sxm-80gb", "bf16")
    assert defs["machine"] == a100
    naive = defs["all_points"]["naive GEMM"]
    assert naive == hierarchy.place(hierarchy.gemm_kernel(1024, 1024, 1024, "bf16", tile=1), a100)
    assert naive.binding == "L1 / shared memory"  # L1 absorbs the block's loads
    # Part 2 has no GEMM with a cache tile: that, and the library's tile, are Part 3's
    assert set(defs["all_points"]) == {"naive GEMM", "5-point stencil",
                                       "sum reduction (re-read)", "flash-attention tile (Lab 4)"}
    assert defs["gemm_register_picker"].value == hierarchy.DEFAULT_REGISTER_TILE["gpu"]
    # Part 3: N = 8192, T = 64, r = 64
    assert defs["tile_point"] == hierarchy.place(hierarchy.gemm_kernel(8192, 8192, 8192, "bf16", tile=64,
                                                       register_tile=64), a100)
    # Part 4: the wave model's curve is core's
    fig = defs["wave_figure"].data[0]
    assert list(fig.y) == pytest.approx(quantization.efficiency_curve(list(fig.x), 128, 132))


def test_comparisons_use_core_values():
    outputs, _ = run()
    text = shown(outputs)
    ratio = staircase.plateau_ratio(reference_machine.plateaus(), "L2", "DRAM")
    assert f"{ratio:.1f} ×" in text  # the reference machine's ratio, before measuring
    assert "The L1 / shared-memory roof" in text  # Part 2's answer for the A100
    # Part 3: L2 serves the tile's misses, b (2 N^2 ceil(N/T) + N^2): (2*128+1) / (2*64+1)
    assert f"{257 / 129:.2f} ×" in text
    assert f"{quantization.relative_throughput(1280, 1536, 128, 132):.2f}" in text  # 0.72


def test_reveal_mode_opens_every_gate_with_core_references(monkeypatch):
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    outputs, defs = app.run()
    assert defs["staircase_prediction"].value == pytest.approx(
        staircase.plateau_ratio(reference_machine.plateaus(), "L2", "DRAM"), abs=0.01)
    # the SMs' loads, 2 N^3 b at 0.5 FLOP/B x 19.5 TB/s = 9.7 TFLOP/s, bind (L1
    # keeps what a 32 x 32 block's warps share; L2's roof is 15.75 x 7.2 = 114 TFLOP/s)
    assert defs["binding_prediction"].value == "L1 / shared memory"
    assert defs["binding_prediction"].label == "The L1 / shared-memory roof"
    # the traffic L2 serves (the shared-memory tile's misses), T 64 -> 128, N = 8192:
    # (2 ceil(8192/64) + 1) / (2 ceil(8192/128) + 1) = 257 / 129 (derived by hand)
    assert defs["tile_prediction"].value == pytest.approx(257 / 129, abs=0.005)
    rows = dict(reference_machine.OVERHEAD_ROWS)
    assert defs["shrink_prediction"].value == pytest.approx(rows[MIB] / rows[KIB], abs=0.01)
    # N = 1,280 -> 1,536 on 132 SMs: (144 / 264) / (100 / 132) = 0.72 (derived by hand)
    assert defs["wave_prediction"].value == pytest.approx(0.72, abs=0.001)
    for name in FIGURES:
        assert name in defs
    text = shown(outputs)
    assert "Reference answer (instructor copy)" in text
    # the reveal shows the L1 roof, 0.49976 FLOP/B (C's write counted: 2·1024³ /
    # (2·1024³·2 + 1024²·2)) x 19.49 TB/s = 9.74 TFLOP/s, 3% of 312;
    # L1's bandwidth is a per-clock peak (108 SMs x 128 B x 1.41 GHz), so that roof is an upper
    # bound and the text says "at most" wherever it shows it
    assert "at most 9.74 TFLOP/s, 3% of the tensor-core peak" in text
    assert "so its roof is at most 9.74 TFLOP/s (an upper bound" in text
    assert "L1/load-store-bound" in text and "vector (CUDA-core, fp32 FMA) ceiling" in text
    # staged K-slabs (3 x 256 x 32 x 2 B = 48 KiB), the >48 KB opt-in, the
    # register file ruling out 256 x 256 (65,536 x 4 B = 256 KiB)
    assert "48 KiB at 128 × 128" in text and "cudaFuncAttributeMaxDynamicSharedMemorySize" in text
    assert "65,536 accumulators (256 KiB) fill the SM's whole register file (256 KiB)" in text
    # L2's roof is its measured 5.3 TB/s (not the per-clock peak); libraries make the wave dip
    # shallower
    assert "L2's roof uses its measured 5.3 TB/s" in text and "stream-K" in text
    # P2: 1024 / 65 x 5.3 = 83.495, to 3 figures
    assert "roof 83.5 TFLOP/s at its measured 5.3 TB/s" in text


# --- the failure state: a tile too big for shared memory, and backing out ---------------------

def test_a_tile_too_big_for_shared_memory_fails_to_launch_and_recovers():
    # T = 512 stages 3 x (512 + 512) x 32 x 2 B = 192 KiB > the A100's 163 KiB per
    # block: no launch, never a kernel that "spills" shared memory to L2
    outputs, bad = run(gemm_tile_slider=512)
    msg = shown(outputs)
    assert ("The 512 × 512 tile does not fit on an SM (shared memory or registers): the kernel "
            "fails to launch.") in msg
    assert "192 KiB of shared memory per block" in msg and "at most 163 KiB" in msg
    assert "Shrink the tile to back out." in msg and "spill" not in msg.split("fails to")[0]
    # T = 256 stages only 96 KiB, but its 65,536 fp32 accumulators (256 KiB) fill the SM's
    # register file (64K x 4 B): it fails too, for that reason
    outputs, bad = run(gemm_tile_slider=256)
    msg = shown(outputs)
    assert "accumulators take 256 KiB of registers per block" in msg
    assert "has 256 KiB of registers in all" in msg and "Shrink the tile to back out." in msg
    assert bad["tile_point"] is None and isinstance(bad["tile_error"], hierarchy.LaunchError)
    # the figure draws the tiles that launch and marks the rest
    assert bad["tiles_failed"] == [256, 512, 1024, 2048, 4096, 8192][:len(bad["tiles_failed"])]
    assert 256 in bad["tiles_failed"] and isinstance(bad["tile_figure"], go.Figure)
    outputs, good = run(gemm_tile_slider=128)
    assert "fails to launch." not in shown(outputs)
    assert good["tile_point"].home == "L1 / shared memory" and good["tile_point"].thrashes == ()
    # the tile the status shows is the staged slabs: 3 x 256 x 32 x 2 B = 48 KiB
    assert good["tile_point"].tile_bytes == 48 * KIB and "(48 KiB) lives in" in shown(outputs)
    assert good["tile_point"].binding == "compute"
    assert good["tile_point"].attainable_tflops == pytest.approx(312)  # A100 bf16 dense


def test_the_flagship_gpus_gemm_gets_a_verdict_with_the_measured_l2():
    """The H100's L2 roof is its measured 6.65 TB/s (it read "undetermined" without a figure).
    Part 3 shows what the library runs beside the T x T tile: cuBLAS's Hopper schedule, 128 x
    256 tiles in clusters of two sharing B by multicast: AI_L2 = 8192 / 65, so L2 binds at
    126 x 6.65 = 838 TFLOP/s (cuBLAS measures 794.5); without the multicast, 8192 / 97 x 6.65
    = 562. Part 3's own T x T tile, T = 64: L2 binds at 8192 / 257 x 6.65 = 212 TFLOP/s."""
    outputs, defs = run(machine_picker="h100-sxm", gemm_n_slider=8192, gemm_tile_slider=64,
                        gemm_register_picker=64)
    text = shown(outputs)
    part3 = defs["tile_point"]
    assert part3.binding == "L2" and part3.attainable_tflops == pytest.approx(
        8192 / 257 * 6650 / 1e3)
    assert "What the library runs here · tiled GEMM (128×256 tile, 2-CTA clusters)" in text
    assert "L2 serves 8.7 GB (AI 126 FLOP/B); the L2 roof binds at 838 TFLOP/s." in text
    assert "Without that, the same tiles would be L2-bound at 562 TFLOP/s." in text
    assert "? undetermined" not in text and "what binds is undetermined" not in text
    assert "the L2 roof binds at 212 TFLOP/s" in text
    assert "cuBLAS on this GPU runs 128 × 256 tiles in clusters of 2" in text
    outputs, _ = run(machine_picker="h200-sxm", gemm_n_slider=8192)
    assert "the compute roof binds at 990 TFLOP/s." in shown(outputs)  # L2: 126 x 9.78 = 1,233
    outputs, defs = run(gemm_tile_slider=64, gemm_register_picker=64)  # the A100, measured L2
    assert defs["tile_point"].binding == "L2" and "the L2 roof binds at 169 TFLOP/s." in shown(
        outputs)  # 31.875 x 5.3 TB/s


def test_a_measured_level_without_a_plateau_reads_undetermined_never_compute():
    """The undetermined machinery stays for levels that truly have no figure: a measured CPU
    whose sweep found no L3 plateau has an L3 without a bandwidth. A tiled GEMM whose tile
    lives in L1 (16 x 16 fp32: 3 KiB) sends L3 its misses at ~2 FLOP/B: what binds is
    undetermined, with what L3 would need, never 'compute'."""
    result = fake_run()
    result["levels"] = [p for p in result["levels"] if p.name != "L3"]
    outputs, defs = run(hierarchy_run=result, machine_picker="measured",
                        gemm_register_picker=8, gemm_tile_slider=16, gemm_n_slider=1024)
    text = shown(outputs)
    assert defs["machine"].level("L3").bandwidth_gbs is None
    assert defs["tile_point"].binding == hierarchy.UNDETERMINED
    assert "what binds is undetermined" in text and "L3 has no published or measured" in text


def test_a_cpu_cache_too_small_thrashes_and_says_so():
    # the reference machine's L1 (a cache, not a scratchpad): T = 64 fp32 needs 48 KiB
    outputs, defs = run(machine_picker="reference", gemm_register_picker=8, gemm_tile_slider=64)
    msg = shown(outputs)
    assert "The tile no longer fits its cache: the cache thrashes." in msg
    assert defs["tile_point"].thrashes == ("L1d",) and defs["tile_point"].home == "L2"
    assert "does not fit in shared memory" not in msg  # a cache is not a scratchpad


def test_machines_without_hierarchy_data_say_so():
    outputs, defs = run(machine_picker="tpu-v5e")
    text = shown(outputs)
    # the cause and a way out that works in this lab (a machine whose hierarchy can be drawn)
    assert defs["machine"] is None and "has no cache sizes for the Google TPU v5e" in text
    assert "Pick a machine whose cache sizes it has (NVIDIA H100 SXM5" in text
    assert "KeyError" not in text and "Traceback" not in text
    assert "hierarchical_roofline" not in defs and defs["tile_figure"] is None
    assert "staircase_figure" in defs and "wave_figure" in defs  # Parts 1 and 4 still work


def test_a_gpu_with_an_l2_size_but_no_on_chip_figures_says_which_are_missing():
    """The MI300X has its L2 size; what the registry lacks is the on-chip (LDS per
    CU, register file) figures."""
    outputs, defs = run(machine_picker="mi300x")
    text = shown(outputs)
    assert defs["machine"] is None
    assert "lacks its on-chip figures (shared memory or LDS per SM or CU" in text
    assert "its L2 size is known" in text and "(on-chip memory or L2)" not in text


def test_this_machine_before_measuring_asks_for_the_measurement():
    outputs, defs = run(machine_picker="measured")
    text = shown(outputs)
    assert defs["machine"] is None
    # once per part that draws the machine (Parts 2 and 3), as a notice, not a failure title
    assert text.count("has not been measured yet: press the button in Part 1") == 2
    assert "Nothing measured yet." in text and "That combination does not work" not in text
    # the graded comparisons still use the question's machine (the A100)
    assert "The L2 roof" in text and f"{257 / 129:.2f} ×" in text


def test_another_machine_never_regrades_the_a100_predictions(ledger_env):
    """Picking the reference machine (a CPU) must not grade Prediction 2 against
    its L3 roof: the comparison stays on the A100 the question names."""
    outputs, defs = run(machine_picker="reference", gemm_register_picker=8)
    text = shown(outputs)
    assert "on the NVIDIA A100 SXM 80GB (the question's machine)" in text
    assert "(your pick, not graded)" in text
    results = {e["item_id"]: e["payload"] for e in defs["lab"].events() if e["kind"] == "result"}
    assert results["lab05.binding_level"]["actual"] == "L1 / shared memory"
    assert results["lab05.tile_traffic"]["actual"] == pytest.approx(257 / 129, abs=0.005)


def test_bad_widget_combinations_show_messages():
    outputs, defs = run(gemm_tile_slider=1024, gemm_n_slider=512)
    assert "The cache tile T (1024) is larger than the matrix (N = 512): move T down" in shown(
        outputs)
    outputs, defs = run(machine_picker="reference", gemm_register_picker=64,
                        gemm_tile_slider=16)
    assert ("The register tile r (64) is larger than the cache tile T (16)" in shown(outputs)
            and "register_tile=" not in shown(outputs))


def test_part_2_has_no_cache_tile_and_part_3_moves_it():
    """Part 2's explorer has no tile widget and no GEMM with a cache tile, so it cannot read off
    how a GEMM's traffic falls with the tile, Prediction 3's question; Part 3 does."""
    _, defs = run(kernel_picker="flash-attention tile (Lab 4)", size_slider=8192)
    a100 = hierarchy.gpu_hierarchy("a100-sxm-80gb", "bf16")
    assert not {"tile_slider", "register_picker"} & set(defs)
    assert defs["all_points"]["flash-attention tile (Lab 4)"] == hierarchy.place(
        hierarchy.flash_kernel(1, 32, 8192, 128, 128, 128, "bf16"), a100)
    assert defs["tile_point"] == hierarchy.place(hierarchy.gemm_kernel(8192, 8192, 8192, "bf16", tile=64,
                                                       register_tile=64), a100)
    outputs, defs = run(gemm_register_picker=64, gemm_tile_slider=16)
    assert "The register tile r (64) is larger than the cache tile T (16)" in shown(outputs)
    assert defs["tile_point"] is None


def test_the_reference_machine_is_a_cpu_hierarchy():
    outputs, defs = run(machine_picker="reference")
    assert defs["machine"] == reference_machine.as_hierarchy()
    assert defs["all_points"]["naive GEMM"].hierarchy.kind == "cpu"
    assert "hierarchical_roofline" in defs


# --- a measured machine ---------------------------------------------------------------------------

def test_a_measurement_feeds_the_figure_the_comparison_and_parts_2_and_3(ledger_env):
    result = fake_run(l2_gbs=90.0, dram_gbs=15.0)
    outputs, defs = run(hierarchy_run=result, machine_picker="measured")
    text = shown(outputs)
    fig = defs["staircase_figure"]
    assert fig.data[0].name.startswith("this machine (Test CPU)")
    assert "L2 (your OS)" in str(fig.layout.annotations)
    assert "6.0 ×" in text  # 90 / 15, the measured plateaus
    assert defs["machine"].name == "This machine (Test CPU)"
    assert [lv.bandwidth_gbs for lv in defs["machine"].levels] == pytest.approx(
        [150, 90, 50, 15])
    assert "hierarchical_roofline" in defs and defs["tile_figure"] is not None
    events = defs["lab"].events()
    results = {e["item_id"]: e["payload"] for e in events if e["kind"] == "result"}
    assert results["lab05.staircase_ratio"]["actual"] == pytest.approx(6.0)
    assert results["lab05.measured_sweep"]["device"] == "Test CPU"
    assert [p["name"] for p in results["lab05.measured_sweep"]["plateaus"]] == [
        "L1d", "L2", "L3", "DRAM"]


def test_a_machine_whose_caches_sit_close_is_graded_against_the_reference_machine(ledger_env):
    """One EPYC VM measured L1d 153.5, L2 110.8, L3 90.5 and DRAM 28.9 GB/s: L2/DRAM 3.83, and
    a student who took L3's plateau for L2's (3.13, 1.22x off) or L1's (5.31, 1.39x) would be
    graded right within 1.5x. There the lab says so and grades against the reference machine's
    recorded 5.7x (its neighbours 1.6x and 1.7x off), recording that as the result."""
    result = fake_run(l1_gbs=153.5, l2_gbs=110.8, l3_gbs=90.5, dram_gbs=28.9)
    assert [p.name for p in result["levels"]] == ["L1d", "L2", "L3", "DRAM"]
    outputs, defs = run(hierarchy_run=result)
    text = shown(outputs)
    assert "cannot tell L2 from its neighbour on this machine" in text
    assert "its L3 plateau (3.1× DRAM's)" in text and "1.22×" in text
    results = {e["item_id"]: e["payload"] for e in defs["lab"].events()
               if e["kind"] == "result"}
    reference = staircase.plateau_ratio(reference_machine.plateaus(), "L2", "DRAM")
    assert results["lab05.staircase_ratio"]["actual"] == pytest.approx(reference, abs=0.05)
    # a wrong model on this machine is graded wrong against what is recorded
    assert not quiz.within_factor(90.5 / 28.9, results["lab05.staircase_ratio"]["actual"],
                                  misconceptions.tolerance("lab05.staircase_ratio"))


def fake_gpu_run(l2_gbs=7000.0, hbm_gbs=2800.0):
    """A CUDA sweep (H100: L2 vs HBM), as the measurement cell returns it, without a GPU."""
    from labs.core.measure.caches import gpu_cache_sizes

    info = measure.DeviceInfo("cuda", "NVIDIA H100 80GB HBM3", "Measuring the GPU", "cuda:0",
                              "h100-sxm", 80.0, sm_count=132, cache_mb=50.0)
    sizes = [256 * KIB * 2**k for k in range(13)]
    bw = [l2_gbs if s <= 32 * MIB else hbm_gbs for s in sizes]
    sweep = WorkingSetSweep(info.name, "cuda", None, tuple(
        SweepPoint(s, "ok", g, g * 0.95, 0.05, 40) for s, g in zip(sizes, bw)),
        gpu_cache_sizes(info), 20, 9, 64 * MIB, (1.0, 1.0, 1.0), registry_key="h100-sxm")
    return {"info": info, "sweep": sweep, "levels": measure.hierarchy_levels(sweep),
            "precision": "bf16", "peak_tflops": 700.0, "seconds": 11.0}


def test_a_gpu_measurement_compares_l2_with_hbm_and_draws_the_driver_and_registry_sizes():
    result = fake_gpu_run()
    assert [p.name for p in result["levels"]] == ["L2", "HBM"]
    outputs, defs = run(hierarchy_run=result, machine_picker="measured")
    text = shown(outputs)
    assert "L2 plateau over its HBM plateau" in text and "2.5 ×" in text  # 7000 / 2800
    notes = str(defs["staircase_figure"].layout.annotations)
    assert "L2 (driver)" in notes and "shared memory (registry)" in notes
    machine = defs["machine"]  # Parts 2 and 3 use the registry's sizes, the measured roofs
    assert machine.level("L2").bandwidth_gbs == pytest.approx(7000)
    assert machine.level("HBM").bandwidth_gbs == pytest.approx(2800)
    assert machine.level("L2").capacity_bytes == hierarchy.gpu_hierarchy("h100-sxm").level(
        "L2").capacity_bytes


def test_pressing_measure_without_torch_says_why_and_grades_the_reference(monkeypatch):
    """Prediction 1 asks about this machine and is graded against its measurement; where it
    cannot be measured (no torch, a browser build), the question's fallback, the reference
    machine, is recorded as the result instead."""
    monkeypatch.setattr(measure, "detect", lambda device=None: measure.DeviceInfo(
        "none", "no device", "torch is not installed: pip install -e '.[live]'"))
    outputs, defs = run(sweep_button=True)
    text = shown(outputs)
    assert defs["hierarchy_run"] is None and "torch is not installed" in defs[
        "hierarchy_unavailable"]
    assert "Live measurement is off" in text and "torch is not installed" in text
    assert "staircase_figure" in defs  # the recorded run stays on screen
    assert "(graded: this machine cannot be measured here)" in text
    results = [e for e in defs["lab"].events() if e["kind"] == "result"
               and e["item_id"] == "lab05.staircase_ratio"]
    assert [e["payload"]["actual"] for e in results] == [pytest.approx(
        staircase.plateau_ratio(reference_machine.plateaus(), "L2", "DRAM"))]


def test_the_per_call_prediction_is_graded_against_this_machines_sweep(monkeypatch):
    """Prediction 4, like Prediction 1: a measured sweep's ratio is recorded (graded), the
    reference machine's only where this machine cannot be measured, nothing before a press."""
    rows = tuple({"bytes": b, "median_s": 1e-6 + b / 50e9} for b in (KIB, 64 * KIB, MIB))
    sweep = NS(rows=rows, overhead_s=1e-6, bandwidth_gbs=50.0)
    outputs, defs = run(overhead_run=sweep)
    results = {e["item_id"]: e["payload"] for e in defs["lab"].events() if e["kind"] == "result"}
    want = (1e-6 + MIB / 50e9) / (1e-6 + KIB / 50e9)
    assert results["lab05.shrink_speedup"]["actual"] == pytest.approx(want)
    assert "your machine, median time per call (graded)" in shown(outputs)
    outputs, defs = run(overhead_unavailable="torch is not installed")
    results = {e["item_id"]: e["payload"] for e in defs["lab"].events() if e["kind"] == "result"}
    rows = dict(reference_machine.OVERHEAD_ROWS)
    assert results["lab05.shrink_speedup"]["actual"] == pytest.approx(rows[MIB] / rows[KIB])


# --- what a widget step re-runs -------------------------------------------------------

@pytest.mark.parametrize("widget", PANEL_WIDGETS)
def test_a_widget_step_re_runs_no_cell_that_only_shows_it(widget):
    # Each panel is laid out where its widgets are made and shown by a cell that names none of
    # them. The machine picker, shared by Parts 2 and 3, is still named by the cells that make
    # the register-tile pickers: a Machine step re-makes those pickers, and so both panels.
    assert cells_that_only_show(app, widget) == []


def test_the_panels_still_show_their_widgets_in_place():
    outputs, _ = run()
    texts = [visible_text(o) if o is not None else "" for o in outputs]

    def cell_with(*labels):
        return next(i for i, t in enumerate(texts) if all(lb in t for lb in labels))

    cell_with("What your OS reports", "Measure the staircase on this machine",
              "Time budget for the whole measurement (s)")
    cell_with("Machine (Parts 2 and 3)", "Kernel", "Size N (matrix side", "cache tile, and the "
              "tile its library runs")
    part3 = cell_with("Machine (Parts 2 and 3)", "GEMM size N (N × N × N)",
                      "Cache tile T (T × T)", "Register tile r (r × r)")
    assert "lives in L1 / shared memory" in texts[part3 + 1]  # the tile's status, right under it


def test_a_budget_step_re_runs_nothing_and_a_press_measures_within_the_budget(monkeypatch):
    app._maybe_initialize()
    graph = app._graph
    makers = graph.definitions["sweep_budget"]
    assert not [c.code for cid, c in graph.cells.items()
                if "sweep_budget" in c.refs and cid not in makers]
    _, defs = run()
    defs["sweep_budget"]._update(40)  # a step in the page
    assert defs["sweep_settings"]().budget == 40  # what a press reads is the budget on screen
    seen = {}

    def sweep(info, *, budget_s, progress):
        seen.update(budget_s=budget_s, progress=progress)
        return fake_run()["sweep"]

    monkeypatch.setattr(measure, "detect", lambda device=None: fake_run()["info"])
    monkeypatch.setattr(measure, "working_set_sweep", sweep)
    monkeypatch.setattr(measure, "time_gemm", lambda *a, **k: NS(flops=2 * 512**3, min_s=1e-3))
    _, defs = run(sweep_button=True, sweep_budget=40)
    assert 37 < seen["budget_s"] <= 38 and callable(seen["progress"])  # 2 s kept for the GEMM
    assert defs["hierarchy_run"]["sweep"].device == "Test CPU"


# --- the ledger -----------------------------------------------------------------------------------

def test_ledger_events_use_the_stable_item_ids(ledger_env):
    _, defs = app.run()
    lab = defs["lab"]
    quiz.simulate_submit(defs["staircase_form"], answer=5, confidence=2, reason="caches")
    quiz.simulate_submit(defs["binding_form"], answer="HBM", confidence=3, reason="DRAM")
    quiz.simulate_submit(defs["tile_form"], answer=4, confidence=3, reason="area")
    quiz.simulate_submit(defs["shrink_form"], answer="1k", confidence=2, reason="bytes")
    quiz.simulate_submit(defs["wave_form"], answer=0.9, confidence=2, reason="tiles")
    kinds = {(e["item_id"], e["kind"]) for e in lab.events()}
    for item in ITEMS:
        assert (item, "predict") in kinds and (item, "unlock") in kinds
    _, again = app.run()  # reopening restores every lock from the ledger
    assert again["binding_prediction"].value == "HBM"
    assert again["shrink_prediction"].value == 1000
    for name in FIGURES:
        assert name in again
    quiz.simulate_submit(again["binding_explain"], observe="L1 binds at AI 0.5",
                         explain="every multiply-add loads through L1")
    events = again["lab"].events()
    assert {e["item_id"] for e in events} == set(ITEMS)
    results = {e["item_id"]: e["payload"] for e in events if e["kind"] == "result"}
    assert results["lab05.binding_level"]["correct"] is False
    assert results["lab05.wave_fraction"]["actual"] == pytest.approx(0.72, abs=0.001)
    # nothing was measured, so Parts 1 and 4a compared with the recording: no result recorded
    assert "lab05.staircase_ratio" not in results and "lab05.shrink_speedup" not in results


# --- speed and export -----------------------------------------------------------------------------

def test_instrument_cells_recompute_fast():
    """Each instrument cell re-run with a new widget value stays well under the budget."""
    _, defs = run()
    env = {**defs, **PREDICTIONS}
    slowest = {}
    for cd in app._cell_manager.cell_data():
        cell = cd.cell
        if not set(cell.defs) & (set(INSTRUMENTS) | {"all_points", "tile_curve", "machine"}):
            continue
        kw = {r: env[r] for r in cell.refs if r in env}
        best = min(cell_cpu_seconds(cell, kw) for _ in range(3))
        slowest[tuple(sorted(cell.defs))] = best
    assert slowest and max(slowest.values()) < 0.1, slowest  # 100 ms of CPU: generous


@pytest.mark.slow
@pytest.mark.parametrize("reveal", [False, True])
def test_export_html(tmp_path_factory, reveal):
    page = export_page(LAB, tmp_path_factory, reveal=reveal)
    assert "Measure the staircase" not in page or reveal  # the button shows after the lock
    if reveal:
        assert page.count("marimo-plotly") >= len(FIGURES)
        assert "Nothing has been measured yet" in page  # export never measures
    else:
        assert "marimo-plotly" not in page
        assert "Lock Prediction 1 first: this shows what it asks." in page


# --- the walk in prediction order: no instrument answers a later question --------

ORDER = ("staircase_prediction", "binding_prediction", "tile_prediction", "shrink_prediction",
         "wave_prediction")
#: Every widget a student can move (the measurement buttons aside: their results are fed in
#: as the cells' values below), and the values each one is tried at on its own.
SWEPT = ("machine_picker", "kernel_picker", "size_slider", "gemm_n_slider", "gemm_tile_slider",
         "gemm_register_picker")
MACHINES = ("a100-sxm-80gb", "h100-sxm", "reference", "measured", "tpu-v5e")


def _references() -> list:
    """Every reference answer, as the instructor copy computes it (reveal mode)."""
    import os

    from leak_support import Reference

    os.environ["ROOFLINE_REVEAL"] = "1"
    try:
        _, defs = app.run()
    finally:
        del os.environ["ROOFLINE_REVEAL"]
    out = []
    for name in ORDER:
        p = defs[name]
        label = getattr(p, "label", None) if p.answer_type == "choice" else None
        out.append(Reference(p.item_id, p.value, label))
    return out


def _frontend(widget, value):
    """The browser's value for ``value`` of ``widget`` (a dropdown's label list, a steps
    slider's index); None when the widget cannot reach it (not one of its options/steps)."""
    import marimo as mo

    if isinstance(widget, type(mo.ui.dropdown(["a"]))):
        labels = [k for k, v in widget.options.items() if v == value or k == value]
        return [labels[0]] if labels else None
    steps = widget._args.args.get("steps")
    if steps:
        return steps.index(value) if value in steps else None
    return value if widget.start <= value <= widget.stop else None


def _values(widget) -> list:
    """Sample values of one widget: every option of a short dropdown (the machine picker: a
    few of each kind), a steps slider's ends, middle and every power-of-two step."""
    import marimo as mo

    if isinstance(widget, type(mo.ui.dropdown(["a"]))):
        vals = list(widget.options.values())
        return [v for v in vals if v in MACHINES] if len(vals) > 10 else vals
    steps = widget._args.args.get("steps")
    if steps:
        return sorted(set([steps[0], steps[len(steps) // 2], steps[-1]]))
    return [widget.start, widget.stop]


def _scenarios() -> list[dict]:
    """The graded scenarios, set together on every instrument that could show them."""
    a100 = "a100-sxm-80gb"
    part3 = [{"machine_picker": a100, "gemm_n_slider": 8192, "gemm_register_picker": 64,
              "gemm_tile_slider": t} for t in (64, 128)]
    part2 = [{"machine_picker": a100, "kernel_picker": "naive GEMM", "size_slider": 1024}]
    return part2 + part3 + [{"machine_picker": "measured", "__measured": True},
                            {"machine_picker": "reference", "gemm_n_slider": 8192,
                             "gemm_tile_slider": 128, "gemm_register_picker": 8}]


def _leaks(cells, reference) -> list:
    """``leak_support.find_leaks`` for a choice; for a number, its renderings with three or more
    significant digits anywhere, and its two-digit roundings only where a unit "×" follows
    (a bare "11" or "0.60" is everywhere in a figure's styling: font sizes, widths, opacity)."""
    import re

    from leak_support import Leak, _number_pattern, _significant_digits, find_leaks,\
        numeric_renderings

    if reference.label is not None:
        return find_leaks(cells, [reference])
    out = []
    for rendering in sorted(numeric_renderings(reference.value)):
        pattern = _number_pattern(rendering)
        if _significant_digits(rendering) < 3:
            pattern = re.compile(pattern.pattern + r"(?=\s?×)")
        for cell in cells:
            m = pattern.search(cell.text)
            if m:
                out.append(Leak(cell, reference, rendering,
                                re.sub(r"\s+", " ", cell.text[max(0, m.start() - 70):m.end() + 70])))
    return out


def _run_cells(runs, defs, memo):
    """The lab's cells' rendered text (tests/leak_support) with ``defs`` set on ``runs`` (a
    leak_support.DownstreamRuns: what ``defs`` reaches re-runs, as in the kernel)."""
    from leak_support import rendered_cells

    return rendered_cells(app, runs.run(defs)[0], scrub=["tester"], memo=memo)


def _settings(base, values: dict):
    """Widget overrides for ``values`` the way the browser sets them: each widget a copy of
    the one on screen, updated; the other names of its cell as they were. None when a widget
    cannot reach its value (the instrument keeps that scenario out of range)."""
    import copy

    app._maybe_initialize()
    owner = {n: cid for cid, c in app._graph.cells.items() for n in c.defs}
    defs = {}
    for name, value in values.items():
        if name.startswith("__"):
            continue
        widget = base.get(name)
        if widget is None:  # the instrument is not open at this stage
            continue
        frontend = _frontend(widget, value)
        if frontend is None:
            return None
        for other in app._graph.cells[owner[name]].defs:
            defs.setdefault(other, base[other])
        changed = copy.deepcopy(widget)
        changed._update(frontend)
        defs[name] = changed
    if values.get("__measured"):
        defs["hierarchy_run"] = fake_run()
    return defs


@pytest.mark.parametrize("stage", range(len(ORDER)), ids=[n.split("_")[0] for n in ORDER])
def test_no_open_instrument_shows_the_next_answer(stage):
    """The walk in prediction order, for Lab 5: with predictions 1..k-1 locked, every open instrument swept
    over its widgets (sampled values, and the graded scenarios set together) shows nothing
    within reach of prediction k's reference answer (tests/leak_support's renderings: the
    numbers the grader would accept as it, or the choice's label)."""
    from leak_support import DownstreamRuns

    reference = _references()[stage]
    locked = {name: (PREDICTIONS[name] if i < stage else None) for i, name in enumerate(ORDER)}
    # each trial re-runs what its widgets reach (test_answer_leaks holds DownstreamRuns
    # against whole runs)
    runs, memo = DownstreamRuns(app, locked), {}
    base = runs.defs
    trials = [{name: v} for name in SWEPT if name in base for v in _values(base[name])]
    trials += _scenarios()
    checked = 0
    for values in trials:
        defs = _settings(base, values)
        if defs is None:
            continue
        leaks = _leaks(_run_cells(runs, defs, memo), reference)
        assert not leaks, (f"{ORDER[stage]} is shown before its lock with {values}:\n"
                           + "\n".join(f"  - {leak}" for leak in leaks))
        checked += 1
    assert checked >= 5
    # A ratio is read off two settings: moving an open instrument between the two settings of
    # this prediction's graded scenario must change nothing on screen (or be out of reach).
    for common, widget, pair in PAIRS.get(ORDER[stage], ()):
        shown_at = []
        for value in pair:
            defs = _settings(base, {**common, widget: value})
            if defs is None:
                break
            shown_at.append([_UUID.sub("<id>", c.text) for c in _run_cells(runs, defs, memo)])
        if len(shown_at) == 2:
            changed = [i for i, (a, b) in enumerate(zip(*shown_at)) if a != b]
            assert not changed, (f"{ORDER[stage]}: moving {widget} {pair[0]} -> {pair[1]} "
                                 f"({common}) changes cells {changed} before the lock")


_UUID = __import__("re").compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
#: The graded scenarios a ratio is read from: (the other widgets, the widget moved, its two
#: values), per prediction (Prediction 3: T 64 -> 128, N = 8,192, r = 64, on the A100).
PAIRS = {"tile_prediction": [
    ({"machine_picker": "a100-sxm-80gb", "gemm_n_slider": 8192, "gemm_register_picker": 64},
     "gemm_tile_slider", (64, 128)),
]}


def test_each_instrument_opens_on_its_own_predictions_in_any_order():
    """The one rule (LABS_SPEC §3): Part 2's explorer shows level bandwidths (Prediction 1's
    quantity) and which roof binds a naive GEMM (Prediction 2's): locked out of order, P2
    alone leaves it closed with a notice naming Prediction 1; P1 and P2 open it, P3 still
    open. Part 3's tile instrument waits for Predictions 1-3 (T = 1 is the naive kernel)."""
    only_p2 = {name: (PREDICTIONS[name] if name == "binding_prediction" else None)
               for name in ORDER}
    outputs, defs = app.run(defs=only_p2)
    text = shown(outputs)
    assert "level_cards" not in defs and "hierarchical_roofline" not in defs
    assert defs["INSTRUMENTS"].notice_text("roofline", {"lab05.binding_level"}) in text
    assert "Predictions 1 and 2" in defs["INSTRUMENTS"].notice_text("roofline", set())
    first_two = {name: (PREDICTIONS[name] if i < 2 else None) for i, name in enumerate(ORDER)}
    _, defs = app.run(defs=first_two)
    assert "level_cards" in defs and "hierarchical_roofline" in defs
    assert "tile_figure" not in defs  # Part 3 waits for Prediction 3
    _, defs = app.run(defs={**first_two, "tile_prediction": PREDICTIONS["tile_prediction"]})
    assert "tile_figure" in defs


def test_part_4_says_what_a_press_costs_without_a_budget_it_does_not_show():
    """Part 4 said "up to the time budget shown" with no budget on screen."""
    outputs, _ = run()
    text = shown(outputs)
    assert "time budget shown" not in text.split("Part 4")[-1]
    assert "press “Measure the cost of a call on this machine” to time calls here (about 5 s)" \
        in text
    assert "press “Measure the GEMM sawtooth on this machine”" in text


def _cell_of(outputs, words: str) -> int:
    """The position (notebook order) of the first output showing ``words``."""
    return next(i for i, o in enumerate(outputs) if o is not None and words in visible_text(o))


def test_part_4s_idle_messages_sit_below_the_buttons_they_refer_to():
    # "Nothing has been measured yet: press ..." once rendered above the text and the button
    outputs, _ = run()
    for button, idle in (("Measure the cost of a call on this machine",
                          "Nothing has been measured yet: press “Measure the cost"),
                         ("Measure the GEMM sawtooth on this machine",
                          "Nothing has been measured yet: press “Measure the GEMM")):
        assert _cell_of(outputs, button) < _cell_of(outputs, idle), button


def test_prediction_5s_instrument_says_once_what_to_lock():
    # the wave figure and the sawtooth each said "Lock Prediction 5 first": one notice per
    # instrument is enough
    open5 = {**PREDICTIONS, "wave_prediction": None}
    outputs, defs = app.run(defs=open5)
    text = shown(outputs)
    assert text.count("Lock Prediction 5 first") == 1
    assert "wave_figure" not in defs and "sawtooth_figure" not in defs


def test_the_sawtooth_reads_plainly_and_its_prompt_fits_a_flat_curve():
    # the modebar covered the end of a long title; "Throughput vs the tile multiple below"
    # was unclear; the prompt asked how deep the measured steps were when a CPU's are flat
    outputs, defs = run()
    fig = defs["sawtooth_figure"]
    assert len(fig.layout.title.text) <= 60
    assert fig.layout.yaxis.title.text == "Throughput ÷ that at the tile multiple ≤ N"
    text = shown(outputs)
    assert "Assumed micro-kernel width" in text  # the note, below the figure now
    assert "or is it flat?" in text and "how deep are they?" not in text


def test_prediction_5s_slips_are_graded_wrong_and_the_model_right(monkeypatch):
    """N = 1,280 -> 1,536 on 132 SMs: the model 0.72. A wave that takes the same time whatever
    K gives 1.2^3 / 2 = 0.864 (1.2x); N = 1,280's wave taken as full gives 144/264 = 0.545
    (1.32x); at 1,408 -> 1,536 both sat 1.09x off, inside the 1.12x band."""
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    _, defs = app.run()
    ref = defs["wave_prediction"].value
    tol = misconceptions.tolerance("lab05.wave_fraction")
    assert ref == pytest.approx((144 / 264) / (100 / 132), abs=0.001)
    for why, value in {"same time per wave": 1.2**3 / 2, "a full first wave": 144 / 264,
                       "two waves: half": 0.5, "the roofline: the same": 1.0}.items():
        assert not quiz.within_factor(value, ref, tol), why
    assert quiz.within_factor(0.7, ref, tol)


def test_the_peeks_open_with_the_instruments_whose_quantities_they_state():
    # a peek that opens with one lock must not state another open prediction's quantities:
    # Part 2's (the GPUs' L2 bandwidths) waits for Prediction 1 too; Part 3's for 1 and 2
    only = {name: (PREDICTIONS[name] if name in ("binding_prediction", "tile_prediction")
                   else None) for name in ORDER}
    text = shown(app.run(defs=only)[0])
    assert "Math peek" not in text.split("Part 4")[0]
    assert "9.78 TB/s" not in text and "87%" not in text


@pytest.mark.parametrize("item, measured", [("lab05.staircase_ratio", 3.4),
                                            ("lab05.shrink_speedup", 480.0)])
def test_a_reloaded_page_shows_the_recorded_reading_as_the_graded_one(item, measured):
    """After a measurement the page may be reloaded: the run is gone, the ledger's reading is
    not, and the grade uses it; the comparison says so instead of "not graded yet"."""
    lab = quiz.LabSession("lab05", str(LAB))
    lab.record("predict", item, {"value": 3.0, "answer_type": "numeric", "units": "×",
                                 "confidence": 3, "reason": "r"})
    lab.record("result", item, {"actual": measured, "units": "×", "ratio": measured / 3.0})
    text = shown(run()[0])
    assert "Prediction vs your recorded reading" in text
    assert "not graded yet: your grade uses your own " + (
        "staircase" if item == "lab05.staircase_ratio" else "measurement") not in text


def test_the_reference_grades_a_measured_prediction_only_where_nothing_can_be_measured(
        tmp_path, monkeypatch):
    """The notebook chooses what grades a measured prediction while its reading is missing:
    the reference machine's ratio, recorded as the result, only where this machine cannot be
    measured; otherwise the reference is shown, not recorded, until the student measures."""
    from labs.lab_05_memory_hierarchy import reference_comparison
    monkeypatch.setenv("ROOFLINE_LEDGER_DIR", str(tmp_path))
    monkeypatch.setenv("ROOFLINE_STUDENT_ID", "tester")
    lab = quiz.LabSession("lab05", str(LAB))
    guess = quiz.Prediction("lab05.shrink_speedup", 10.0, "×")

    def results():
        return [e for e in lab.events(guess.item_id) if e.get("kind") == "result"]
    waiting = visible_text(reference_comparison(lab, guess, 11.0, unavailable=False,
                                                measurement="staircase"))
    assert "not graded yet: your grade uses your own staircase" in waiting and "11.0" in waiting
    assert results() == []
    graded = visible_text(reference_comparison(lab, guess, 11.0, unavailable=True,
                                               measurement="measurement"))
    assert "(graded: this machine cannot be measured here)" in graded and "11.0" in graded
    assert len(results()) == 1
