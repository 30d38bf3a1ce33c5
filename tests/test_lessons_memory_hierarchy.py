"""Lab 5's prose builders (labs.core.course.lessons.memory_hierarchy): each states the numbers it
is given, checked against hand arithmetic and the datasheet, not against its own output."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from labs.core import hierarchy, quantization, reference_machine, staircase, style
from labs.core.course.lessons import memory_hierarchy
from labs.core.physics import hardware
from notebook_support import visible_text

KIB, MIB = 2**10, 2**20
A100 = hierarchy.gpu_hierarchy("a100-sxm-80gb", "bf16")


def plateau(name, gbs, lo=32 * KIB, hi=512 * KIB, spread=0.05, points=6):
    return staircase.Plateau(lo, hi, gbs, spread, points, name)


def naive_a100(n=1024):
    return hierarchy.place(hierarchy.gemm_kernel(n, n, n, "bf16", tile=1), A100)


# --- Part 1 ---------------------------------------------------------------------------------

def test_staircase_explanation_states_both_plateaus_and_their_ratio():
    text = memory_hierarchy.staircase_explanation(plateau("L2", 90.0), plateau("DRAM", 15.0),
                                                  90.0 / 15.0)
    assert "L2 plateau reads 90 GB/s and the DRAM plateau 15 GB/s: 6.0×" in text
    assert reference_machine.MACHINE in text and reference_machine.DATE in text


def test_cache_cards_and_plateau_rows_say_sizes_in_binary_units():
    cache = NS(name="L2", size_bytes=512 * KIB, scope="per core", source="sysfs")
    assert memory_hierarchy.cache_cards([cache]) == [("L2", "512 KiB", "per core · sysfs")]
    row, = memory_hierarchy.plateau_rows([plateau("L2", 97.07, spread=0.047)])
    assert row == {"level": "L2", "working sets": "32 KiB – 512 KiB",
                   "bandwidth (GB/s)": "97.1", "spread of its sizes": "5%", "sizes": 6}


def test_sweep_summary_counts_sizes_and_says_what_was_skipped():
    text = memory_hierarchy.sweep_summary(12, 15, 3, 14.0, "Test CPU", (1.0, 1.0, 1.0))
    assert text.startswith("Measured 12 of 15 sizes in 14") and "**Test CPU**" in text
    assert text.endswith("Skipped for time: 3.")
    assert "load average unknown" in memory_hierarchy.sweep_summary(3, 3, 0, 1.0, "x", None)
    assert "Skipped" not in memory_hierarchy.sweep_summary(3, 3, 0, 1.0, "x", None)


def test_staircase_curves_start_with_the_reference_run_and_put_a_measurement_first():
    series, caches = memory_hierarchy.staircase_curves()
    assert len(series) == 1 and series[0][3] == "recorded"
    assert series[0][1][0] == 16384 and series[0][2][0] == 149.95  # the recorded first size
    assert caches == [("L1d (reference)", 32768.0), ("L2 (reference)", 524288.0),
                      ("L3 (reference)", 33554432.0)]
    sweep = NS(kind="cpu", device="Test CPU", measured=[NS(bytes=16 * KIB, gbs=120.0)],
               caches=NS(levels=[NS(name="L2", size_bytes=MIB, source="sysfs")]))
    series, caches = memory_hierarchy.staircase_curves(sweep)
    assert [s[3] for s in series] == ["measured", "recorded"]
    assert series[0][:3] == ("this machine (Test CPU)", [16 * KIB], [120.0])
    assert caches == [("L2 (your OS)", MIB)]


def test_staircase_grading_names_whose_ratio_grades_and_why():
    clear = staircase.RatioSeparation(6.0, "L3", 3.0, 2.0, 1.575)
    assert memory_hierarchy.staircase_grading(clear, "DRAM", 1.5) == (
        "**Prediction vs reality** · your machine's L2 plateau over its DRAM plateau (graded):")
    close = staircase.RatioSeparation(3.83, "L3", 3.13, 1.22, 1.575)
    text = memory_hierarchy.staircase_grading(close, "DRAM", 1.5)
    assert "L2 plateau is 3.8× its DRAM plateau, but its L3 plateau (3.1× DRAM's)" in text
    assert "only 1.22× from that: a 1.5× band cannot tell L2" in text
    flat = staircase.RatioSeparation(1.1, staircase.ONE_ROOF, 1.0, 1.1, 1.575)
    assert "one memory roof (a ratio of 1)" in memory_hierarchy.staircase_grading(flat, "HBM", 1.5)


def test_unmeasured_heading_says_whether_the_reference_grades():
    assert "(graded: this machine cannot be measured here)" in \
        memory_hierarchy.unmeasured_heading(True, "measurement")
    assert "not graded yet: your grade uses your own staircase, so press the button above" in \
        memory_hierarchy.unmeasured_heading(False, "staircase")


# --- Part 2 ---------------------------------------------------------------------------------

def test_binding_explanation_of_the_naive_a100_gemm_states_the_hand_derived_numbers():
    text = memory_hierarchy.binding_explanation(naive_a100())
    # 2 N^3 = 2.147e9 FLOP; L1 serves 2 loads of 2 B per multiply-add: AI 1/b = 0.5
    assert "for 2.15 GFLOP" in text and "AI of 0.5 FLOP/B" in text  # 2·1024³ = 2.147e9
    # HBM the compulsory 3 N^2 b = 6 MiB: AI 2N/(3b) = 341; L2 measured at 5.3 TB/s
    assert "(AI 341, roof" in text and "measured 5.3 TB/s" in text
    # scalar code: the fp32 FMA vector ceiling, 19.5 TFLOP/s on the A100 (datasheet)
    assert "(19.5 TFLOP/s), not the 312 TFLOP/s tensor-core peak" in text
    assert "The lowest roof binds: L1 / shared memory" in text
    # L1: 128 B per clock x 108 SMs x 1.41 GHz = 19.49 TB/s; the loads plus C's write,
    # 2·1024³·2 + 1024²·2 = 4,297,064,448 B, give AI 0.49976: roof 0.49976 x 19.49 = 9.74 TFLOP/s,
    # 9.75 / 312 = 3% of the tensor-core peak (of the 19.5 TFLOP/s vector ceiling it is 50%)
    assert "at most 9.74 TFLOP/s, 3% of the tensor-core peak" in text


def test_level_cards_colour_the_binding_level_and_end_with_what_binds():
    cards = memory_hierarchy.level_cards(naive_a100())
    assert [c.label for c in cards] == ["L1 / shared memory", "L2", "HBM", "Binds"]
    assert cards[0].kind == "danger" and cards[1].kind is None and cards[-1].kind == "danger"
    assert cards[0].value == "AI 0.5 FLOP/B" and cards[2].value == "AI 341 FLOP/B"
    assert "roof at most" in cards[0].caption  # a derived per-clock peak is an upper bound
    assert cards[-1].value == "L1 / shared memory" and "19.5" in cards[-1].caption


def test_level_cards_say_what_a_level_without_a_figure_would_need():
    toy = hierarchy.measured_hierarchy("toy", {"L1": (32 * KIB, 100.0), "L2": (MIB, None),
                                               "DRAM": (2**34, 10.0)}, 1.0)
    point = hierarchy.place(hierarchy.reduction_kernel(2**17, "fp32"), toy)  # 512 KiB: in L2
    cards = memory_hierarchy.level_cards(point)
    assert "no bandwidth figure" in cards[1].caption
    assert cards[-1].label == "Binds" and cards[-1].value in ("? undetermined", point.binding)


def test_kernel_rows_mark_upper_bounds_and_say_why_a_kernel_cannot_be_placed():
    rows = memory_hierarchy.kernel_rows({"naive GEMM": naive_a100(),
                                         "5-point stencil": ValueError("n must be >= 3")})
    assert rows[0]["binds"] == "L1 / shared memory"
    assert rows[0]["attainable (TFLOP/s)"].startswith("≤ ")  # L1's derived peak: at most
    assert rows[0]["AI at HBM"] == "341"
    assert rows[1] == {"kernel": "5-point stencil", "binds": "—", "note": "n must be >= 3"}


def test_other_machine_binding_names_the_pick_and_says_at_most_for_a_derived_peak():
    text = memory_hierarchy.other_machine_binding(naive_a100(), "The L1 / shared-memory roof")
    assert text.startswith("On **NVIDIA A100 SXM 80GB** (your pick, not graded) the same kernel "
                           "binds at: The L1 / shared-memory roof (at most ")
    # L1: 108 SMs x 128 B per clock x 1.41 GHz = 19.5 TB/s, at AI 0.5 FLOP/B: ~9.75 TFLOP/s
    rate = float(text.split("(at most ")[1].split(" TFLOP/s")[0])
    assert rate == pytest.approx(108 * 128 * 1.41e9 * 0.5 / 1e12, rel=0.01)


def test_missing_cache_sizes_names_what_is_missing_and_machines_that_work():
    text = memory_hierarchy.missing_cache_sizes(hardware.get("tpu-v5e"))
    assert "no cache sizes for the Google TPU v5e" in text
    drawable = [hardware.get(k).name for k in hardware.keys() if k in hierarchy.gpu_keys()]
    assert f"({', '.join(drawable[:3])}, or the reference machine)" in text


# --- Part 3 ---------------------------------------------------------------------------------

def test_tile_problem_names_the_slider_to_move():
    assert "register tile r (64) is larger than the cache tile T (32)" in \
        memory_hierarchy.tile_problem(1024, 32, 64)
    assert "larger than the matrix (N = 64): move T down to 64" in \
        memory_hierarchy.tile_problem(64, 128, 8)
    assert memory_hierarchy.tile_problem(1024, 128, 64) is None


def test_tile_explanation_states_the_hand_derived_traffic_and_the_fit():
    n, r = 8192, 64
    small, large = hierarchy.tile_sweep(n, "bf16", [64, 128], A100, register_tile=r)
    bigger = hierarchy.gemm_kernel(n, n, n, "bf16", tile=256, register_tile=r)
    text = memory_hierarchy.tile_explanation(small, large, bigger, 257 / 129, tiles=(64, 128))
    # Q(T) = b (MK N/T + KN M/T + MN): 2 x 8192^2 x 257 B at T = 64, x 129 at T = 128
    assert "1.99× less (not 4×" in text
    # slabs 3 x (128 + 128) x 32 x 2 B = 48 KiB; accumulators 4 x 128^2 = 64 KiB
    assert "48 KiB at 128 × 128" in text and "fp32 accumulators, 64 KiB per block" in text
    # at 256: slabs 96 KiB still fit, 65,536 accumulators = 256 KiB = the register file
    assert "still fit (96 KiB)" in text and "the 65,536 accumulators (256 KiB)" in text
    assert "whole register file (256 KiB)" in text


def test_tile_status_callout_says_a_bad_combination_a_failed_launch_and_a_fitting_tile():
    bad = visible_text(memory_hierarchy.tile_status_callout(32, None, ValueError("T too big")))
    assert "T too big" in bad
    err = hierarchy.LaunchError("needs 192 KiB of shared memory")
    failed = visible_text(memory_hierarchy.tile_status_callout(512, None, err))
    assert "The 512 × 512 tile does not fit on an SM" in failed
    point = hierarchy.place(hierarchy.gemm_kernel(8192, 8192, 8192, "bf16", tile=128,
                                                  register_tile=64), A100)
    assert "(48 KiB) lives in" in visible_text(
        memory_hierarchy.tile_status_callout(128, point, None))


def test_library_gemm_note_says_what_the_clusters_multicast_saves():
    h100 = hierarchy.gpu_hierarchy("h100-sxm", "bf16")
    lib = hierarchy.place(hierarchy.library_gemm_kernel(h100, 8192, 8192, 8192), h100)
    alone = hierarchy.place(hierarchy.library_gemm_kernel(h100, 8192, 8192, 8192,
                                                          multicast=False), h100)
    text = memory_hierarchy.library_gemm_note(lib, alone)
    # 2 N^3 / (b N^2 (N/256 + N/(2 x 128) + 1)) = 8192 / 65 = 126 FLOP/B (the peek's figure)
    assert text.startswith("**What the library runs here**") and "(AI 126 FLOP/B)" in text
    assert "The cluster's 2 CTAs share their B tile" in text
    assert "The cluster's" not in memory_hierarchy.library_gemm_note(lib)


# --- Part 4 ---------------------------------------------------------------------------------

def test_shrink_explanation_compares_the_time_ratio_with_the_bytes_ratio():
    text = memory_hierarchy.shrink_explanation(2**20, 2**10, 22e-6, 2e-6)
    assert "reading 1 MiB took 22 µs and one reading 1 KiB 2 µs: 11.0×, not 1,024×" in text


def test_wave_explanation_counts_tiles_and_waves_by_hand():
    sms = 132  # H100 SXM5
    a, b = (quantization.quantization(n, n, 128, sms) for n in (1280, 1536))
    text = memory_hierarchy.wave_explanation((1280, 1536), a, b, sms, (144 / 264) / (100 / 132))
    # 10^2 = 100 tiles in one wave (76% busy); 12^2 = 144 tiles in two, 12 in the second (55%)
    assert "N = 1,280: 100 tiles in 1 wave on 132 SMs (76% busy)" in text
    assert "144 tiles need 2 waves, the second with 12 tiles" in text and "55% busy" in text
    assert "0.72 of N = 1,280's" in text


def test_sawtooth_caption_says_what_was_assumed():
    assert memory_hierarchy.sawtooth_caption(None, True).startswith(
        "*Assumed micro-kernel width 16; one thread. Each N is compared")
    assert memory_hierarchy.sawtooth_caption(NS(tile_note="tiles of 128"), False) == \
        "*Tiles of 128.*"


def test_every_builder_is_exported():
    assert sorted(memory_hierarchy.__all__) == sorted(
        n for n in dir(memory_hierarchy) if callable(getattr(memory_hierarchy, n))
        and getattr(getattr(memory_hierarchy, n), "__module__", "") == memory_hierarchy.__name__
        and not n.startswith("_"))
    assert isinstance(memory_hierarchy.level_cards(naive_a100())[0], style.Metric)
