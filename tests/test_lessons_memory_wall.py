"""Lab 1's lesson module: each card, sentence and note states the numbers hand arithmetic and the
datasheets give. H100 SXM5: 989.5 TFLOP/s bf16 dense, 3,350 GB/s, 80 GiB (ridge 989.5e12 /
3.35e12 = 295.4 FLOP/B); Jetson Orin NX 16GB: 15 TFLOP/s bf16, 102.4 GB/s (ridge 146.5)."""

from __future__ import annotations

import pytest

from labs.core import formulas, roofline, utilization
from labs.core.course.lessons import memory_wall

H100, JETSON = "h100-sxm", "jetson-orin-nx-16gb"
PRIYA = {"m": 16, "n": 8192, "k": 8192, "precision": "bf16"}
PREFILL = {"m": 256, "n": 8192, "k": 8192, "precision": "bf16", "edge": JETSON,
           "datacenter": H100}
# Priya's GEMM by hand: 2 x 16 x 8192^2 FLOPs over (16 x 8192 x 2 + 8192^2) bf16 elements
PRIYA_FLOPS = 2 * 16 * 8192 * 8192
PRIYA_BYTES = (2 * 16 * 8192 + 8192 * 8192) * 2
PRIYA_AI = PRIYA_FLOPS / PRIYA_BYTES  # 15.94 FLOP/B
RIDGE = 989.5e12 / 3350e9  # 295.4 FLOP/B


def _priya():
    cost = formulas.gemm(16, 8192, 8192, "bf16")
    return cost, roofline.time_bounds(cost.flops, cost.bytes, H100, "bf16")


def test_device_cards_state_the_datasheet_and_its_ridge():
    cards = memory_wall.device_cards(H100, "bf16")
    assert [c.label for c in cards] == ["Memory", "Bandwidth β", "Peak π (bf16, dense)",
                                        "Ridge (bf16, dense)"]
    assert cards[0].value.startswith("80 GiB") and cards[1].value == "3,350 GB/s"
    assert cards[2].value == "989.5 TFLOP/s" and cards[3].value == f"{RIDGE:.0f} FLOP/B"


def test_device_cards_raise_for_a_precision_the_device_lacks():
    with pytest.raises(KeyError):
        memory_wall.device_cards(JETSON, "fp8")


def test_priya_gemm_numbers_and_cards_match_hand_arithmetic():
    cost, bounds = _priya()
    numbers = memory_wall.gemm_numbers(cost, bounds, H100, "bf16")
    assert numbers["ai"] == pytest.approx(PRIYA_AI)
    assert numbers["ridge"] == pytest.approx(RIDGE)
    assert numbers["attainable"] == pytest.approx(PRIYA_AI * 3.35)  # AI x 3.35 TB/s
    assert numbers["flop_util_bound"] == pytest.approx(PRIYA_AI / RIDGE)
    assert numbers["lower"] == pytest.approx(PRIYA_BYTES / 3350e9)  # the memory roof binds
    cards = memory_wall.gemm_cards(numbers, cost, bounds, H100, "bf16", roofline.MEMORY,
                                   footprint_of="A, B and C: ")
    by = {c.label: c for c in cards}
    assert by["Arithmetic intensity"].value == "15.9 FLOP/B"
    assert by["Attainable"].value == "53.4 TFLOP/s" and by["Attainable"].kind == "memory-bound"
    assert by["Time, lower bound"].value == "40.2 µs"  # 134.7 MB / 3,350 GB/s
    assert by["FLOP-utilisation bound"].value == "5.4%"  # 15.94 / 295.4
    # 134,742,016 B of 80 GiB = 85,899,345,920 B
    assert by["Memory footprint"].caption == "A, B and C: 0.157% of the device"
    plain = memory_wall.gemm_cards(numbers, cost, bounds, H100, "bf16", roofline.MEMORY)
    assert plain[-1].caption == "0.157% of the device"


def test_gemm_hover_gives_time_bounds_flops_and_bytes():
    cost, bounds = _priya()
    hover = memory_wall.gemm_hover(cost, bounds)
    assert hover["time, lower bound"] == "40.2 µs"
    assert hover["bytes"] == f"{PRIYA_BYTES:,}"  # 134,742,016


def test_gemv_cards_put_the_decode_gemv_at_one_flop_per_byte():
    cost = formulas.gemv(8192, 8192, "bf16")
    bounds = roofline.time_bounds(cost.flops, cost.bytes, H100, "bf16")
    cards = {c.label: c for c in memory_wall.gemv_cards(cost, bounds, H100, "bf16")}
    assert cards["GEMV AI"].value == "1 FLOP/B"  # 2NK / ~NK x 2 bytes
    assert cards["GEMV attainable"].value == "3.35 TFLOP/s"  # 1 FLOP/B x 3.35 TB/s
    assert cards["GEMV FLOP-utilisation bound"].value == "0.338%"  # 1 / 295.4


def test_which_roof_sentences_name_the_ai_ridge_and_cap():
    text = memory_wall.which_roof_explanation(16, PRIYA_AI, H100, "bf16")
    assert "AI = 15.9 FLOP/B" in text and "ridge of 295 FLOP/B" in text
    assert "memory-bound" in text and "5.4% of peak" in text and "waits for bytes" in text
    actual = memory_wall.which_roof_actual("The memory roof", PRIYA_AI, H100, "bf16")
    assert actual == ("The memory roof (Priya's GEMM on the NVIDIA H100 SXM5: AI = 15.9 FLOP/B, "
                      "ridge (bf16, dense) = 295 FLOP/B)")


def test_decode_ai_note_states_both_ais():
    note = memory_wall.decode_ai_note(PRIYA, 15.94, 1.0)
    assert "M = 16, N = K = 8192, bf16" in note
    assert "AI = 15.9 FLOP/B; its decode GEMV: AI = 1 FLOP/B." in note


def test_lever_texts_follow_the_tiled_byte_count():
    levers = roofline.ai_levers(16, 8192, 8192, H100, "bf16", tile=64)
    # 64 x 64 tiles: A re-read 8192 / 64 = 128 times, B once, C written once
    tiled = 2 * 16 * 8192 * 128 + 2 * 8192 * 8192 + 2 * 16 * 8192
    batched = 2 * 64 * 8192 * 128 + 2 * 8192 * 8192 + 2 * 64 * 8192  # 4x M
    base_ai, batch_ai = PRIYA_FLOPS / tiled, 4 * PRIYA_FLOPS / batched  # 12.8, 31.9
    text = memory_wall.levers_explanation(levers)
    assert text.startswith(f"From AI {base_ai:.1f} FLOP/B (64 x 64 output tiles)")
    assert f"4x batch (M) → {batch_ai:.1f}" in text and "4x batch (M) wins" in text
    cards = {c.label: c for c in memory_wall.lever_cards(levers)}
    assert cards["4x batch (M)"].value == f"AI × {batch_ai / base_ai:.3g}"  # 2.49
    assert cards["+20% core clock"].value == "AI × 1"
    assert cards["+20% core clock"].caption.startswith("ρ × 0.833")  # 1 / 1.2
    actual = memory_wall.levers_actual("4x batch", levers, PRIYA, 64)
    assert actual.startswith(f"4x batch: AI {base_ai:.1f} → {batch_ai:.1f} FLOP/B")
    assert "(16 × 8,192 × 8,192) with 64 × 64 tiles" in actual


def test_levers_note_reads_an_before_eight():
    note = memory_wall.levers_note(8, 12.78, 15.94)
    assert note.startswith("AI here counts the bytes an 8 × 8-tiled kernel moves")
    assert "12.8 FLOP/B today. Part 1's 15.9 FLOP/B" in note
    assert "a 64 × 64-tiled" in memory_wall.levers_note(64, 12.78, 15.94)


def test_crossover_texts_give_n_star_as_one_and_a_half_b_times_the_ridge():
    n_star = 1.5 * 2 * RIDGE  # 886
    text = memory_wall.crossover_explanation(H100, "bf16")
    assert "AI = N / 3 FLOP/B" in text and "N* = 3 × 295.4 ≈ 886" in text  # the factor to 4 figures
    cards = memory_wall.crossover_cards(n_star, H100, "bf16", guess=500)
    assert cards[0].value == "886" and cards[1].value == "295 FLOP/B"
    # the student's N* = 500: AI = 2 x 500 / (3 x 2) = 167 FLOP/B, below the ridge
    assert cards[3].value == "AI 167 FLOP/B" and cards[3].kind == "memory-bound"
    assert len(memory_wall.crossover_cards(n_star, H100, "bf16")) == 3


def test_crossover_examples_give_each_precision_and_slip():
    text = memory_wall.crossover_examples(H100)
    # the bf16 line states the bf16 ridge: 989.5e12 / 3.35e12 = 295.4 (fp8's would be 591)
    assert "bf16 dense π = 989.5 TFLOP/s, β =\n3,350 GB/s, ridge = 295\nFLOP/B, N* = 886." in text
    assert "N* = 886. In fp8" in text and "b halves: N* = 886." in text  # 1.5 x 1 x 590.7
    assert "ridge 20 FLOP/B, b = 4):\nN* = 120." in text  # 1.5 x 4 x 67 / 3.35
    assert "N* = 591; the" in text  # C forgotten: 2 x 2 x 295.4 / 2
    assert text.rstrip().endswith("1,772.")  # the 2:4-sparse peak doubles the ridge


def test_other_device_texts_hold_one_ai_against_two_ridges():
    ai = 2 * 256 * 8192 * 8192 / ((2 * 256 * 8192 + 8192 * 8192) * 2)  # 241 FLOP/B
    text = memory_wall.other_device_explanation(ai, JETSON, H100, "bf16")
    assert "AI is 241 FLOP/B" in text
    assert "ridge is 146 FLOP/B (compute-bound there)" in text  # 15e12 / 102.4e9
    assert "295 FLOP/B: memory-bound" in text
    cards = memory_wall.overlay_cards(ai, [H100, JETSON], "bf16")
    assert [(c.label, c.value) for c in cards] == [("H100 SXM5", "memory-bound"),
                                                   ("Jetson Orin NX 16GB", "compute-bound")]
    assert memory_wall.regime_against_ridge("memory-bound", ai, H100, "bf16") == (
        "memory-bound: AI 241 FLOP/B vs ridge (bf16, dense) = 295 FLOP/B")
    assert memory_wall.overlay_title(256, PREFILL, "bf16", ai) == (
        "One 256 × 8,192 × 8,192 bf16 GEMM (AI 241 FLOP/B) against several roofs")


def test_ridges_example_lists_both_chips_then_the_gemm():
    text = memory_wall.ridges_example(PREFILL)
    assert "- NVIDIA H100 SXM5: bf16 dense 989.5 TFLOP/s, 3,350 GB/s, ridge 295 FLOP/B" in text
    assert "- NVIDIA Jetson Orin NX 16GB: bf16 dense 15 TFLOP/s, 102 GB/s, ridge 146" in text  # 102.4 to 3 figures
    assert text.index("H100 SXM5:") < text.index("Jetson") < text.index("has AI =\n241 FLOP/B")


def test_overlay_messages_name_the_skipped_devices():
    assert memory_wall.no_rate_message("int8", ["A", "B"]) == (
        "None of the chosen devices has an int8 rate in the registry (A, B). Pick another "
        "precision.")
    assert "has a bf16 rate" in memory_wall.no_rate_message("bf16", ["A"])
    assert memory_wall.not_drawn_note("fp8", ["A"]) == "Not drawn (no fp8 rate): A."
    assert memory_wall.not_drawn_note("fp8", []) is None


def test_profiler_reading_of_three_percent_at_ninety_percent_bandwidth():
    reading = utilization.reading(0.03, 0.90, H100, "bf16")
    assert reading["tflops"] == pytest.approx(0.03 * 989.5)
    assert reading["gbs"] == pytest.approx(0.9 * 3350)
    assert reading["ai"] == pytest.approx(RIDGE * 0.03 / 0.9)  # ridge x FU / BWU = 9.85
    assert reading["regime"] == roofline.MEMORY
    assert reading["of_roof"] == pytest.approx(0.9)  # memory-bound: = BWU
    assert reading["flop_util_bound"] == pytest.approx(1 / 30)  # AI / ridge


def test_yardstick_texts_and_cards():
    reading = utilization.reading(0.03, 0.90, H100, "bf16")
    text = memory_wall.yardstick_explanation(reading, 0.03, H100, "bf16")
    assert "AI: 9.85 FLOP/B, below the bf16 ridge of 295: memory-bound" in text
    assert "only 3.3% of peak" in text and "already 90% of what is possible" in text  # 3 / 3.33
    cards = {c.label: c for c in memory_wall.yardstick_cards(reading, "bf16")}
    assert cards["Implied AI"].value == "9.85 FLOP/B"
    assert cards["Fraction of its roof"].value == "90%"
    assert cards["FLOP-utilisation bound"].value == "3.33%"
    assert memory_wall.yardstick_actual("Bandwidth", reading, "bf16") == (
        "Bandwidth: at 9.85 FLOP/B (bf16) the kernel reaches 90% of its roof")
    example = memory_wall.yardstick_worked_example(reading, 0.03, 0.9, H100, "bf16")
    assert "3% FLOP utilisation at 90% bandwidth" in example
    assert "9.85 FLOP/B, 0.0333\n× the ridge" in example  # 9.85 / 295.4 = 1 / 30
    point = memory_wall.profiled_point(reading)
    assert (point.ai, point.kind) == (pytest.approx(RIDGE / 30), "measured")
    assert point.hover == {"FLOP utilisation": "3%", "bandwidth": "90%"}


def test_regime_verdict_names_the_subject_and_regime():
    html = memory_wall.regime_verdict("Your GEMM", "memory-bound", [("AI", "1 FLOP/B", "")]).text
    assert "Your GEMM is" in html and "memory-bound" in html and "1 FLOP/B" in html


def test_sweep_note_says_where_the_roof_came_from():
    spec = memory_wall.sweep_note("bf16", measured_gbs=None, spec_name="NVIDIA H100 SXM5",
                                  cache_bytes=None, largest_fit=None, roof_run_slowed=False)
    assert spec == "The roof is the spec sheet of the NVIDIA H100 SXM5."
    measured = memory_wall.sweep_note("fp32", measured_gbs=10.0, spec_name=None,
                                      cache_bytes=32 * 2**20, largest_fit=1024,
                                      roof_run_slowed=True)
    assert "measured roofline: 10 GB/s" in measured and "best fp32 GEMM rate" in measured
    assert "32 MiB last-level cache for N ≤ 1,024 (fp32)" in measured
    assert measured.endswith("a measured roof is only as good as its run.")


def test_measured_points_say_what_fits_in_cache():
    rows = [{"n": 1024, "ai": 170.7, "measured_tflops": 0.5, "ratio": 0.8, "median_ms": 4.3}]
    (point,) = memory_wall.measured_points(rows, "fp32", {1024: True})
    assert point.label == "N=1024" and point.kind == "measured"
    # 3 x 1024^2 fp32 elements = 12 MiB
    assert point.hover["A + B + C"] == "12 MiB (fits in the last-level cache)"
    assert point.hover["median time"] == "4.3 ms"
    (point,) = memory_wall.measured_points(rows, "fp32", {1024: False})
    assert point.hover["A + B + C"] == "12 MiB"


def test_sweep_questions_follow_what_was_measured():
    rows = [{"n": 128, "ratio": 0.2, "status": "ok"}, {"n": 256, "ratio": 0.6, "status": "ok"}]
    assert memory_wall.sweep_question(rows, []).startswith("Why do small GEMMs fall furthest")
    rows[1]["ratio"] = 0.1
    assert "largest at N = 256?" in memory_wall.sweep_question(rows, [])
    above = [{"n": 128, "ratio": 1.5}]
    assert memory_wall.sweep_question(rows, above).startswith(
        "N = 128 ran above the predicted roof (up to 1.5×)")
    failed = [{"n": 128, "status": "out of memory"}]
    assert memory_wall.nothing_measured_message(failed).startswith(
        "No size could be measured: N=128: out of memory.\n\nPick another precision")
