"""Lab 3's prose builders (course/lessons/precision_rho): each states the numbers a reader can
work out by hand from the H100 SXM datasheet (67 TFLOP/s fp32, 494.7 tf32 and 989.5 fp16
dense, 3,350 GB/s of HBM3, a 50 MiB L2) and the formats' bits."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from labs.core import hardware, precision_study
from labs.core.course.lessons import precision_rho

H100 = hardware.get("h100-sxm")
GEMM_4096 = {"m": 4096, "n": 4096, "k": 4096}


@pytest.fixture(scope="module")
def classic():
    return precision_study.rho_change_parts("gemm", GEMM_4096, "h100-sxm", "fp32", "fp16")


@pytest.fixture(scope="module")
def weight_only():
    return precision_study.rho_change_parts("gemm", GEMM_4096, "h100-sxm", "fp16", "int4-g128")


def test_fp32_to_fp16_explanation_and_cards_state_both_factors(classic):
    # AI = 2·4096³ / (3·4096²·b): 8192/12 = 683 at 4 B, 1365 at 2 B; ridge = peak / 3.35 TB/s:
    # 67/3.35 = 20 and 989.5/3.35 = 295; ρ = 34.1 → 4.62, ×(2 · 67/989.5) = ×0.135
    text = precision_rho.rho_change_explanation(classic)
    for part in ("AI rises 2.0× (683 → 1,365 FLOP/B)", "14.8× (67 → 990 TFLOP/s)",
                 "20 → 295 FLOP/B", "34.1 → 4.62: ×0.135, not 2."):
        assert part in text, part
    ai, ridge, rho = precision_rho.rho_change_cards(classic)
    assert (ai.value, ai.caption) == ("683 → 1,365 FLOP/B", "×2: half the bytes per element")
    assert ridge.value == "20 → 295 FLOP/B" and ridge.caption.startswith("×14.8: ")
    assert rho.value == "34.1 → 4.62" and rho.caption.startswith("×0.135: ")
    assert rho.kind == "compute-bound"  # 4.62 > 1


def test_weight_only_int4_keeps_the_ridge_and_raises_rho(weight_only):
    # fp16: 3·4096²·2 B = 101 MB; int4-g128 weights at 4 + 16/128 = 4.125 bits:
    # 4096²·(2 + 4.125/8 + 2) B = 75.8 MB; ρ ×101/75.8 = ×1.33, 4.62 → 6.14
    text = precision_rho.weight_only_explanation(weight_only)
    for part in ("ridge stays 295 FLOP/B", "from 101 MB to 75.8 MB", "×1.33 (4.62 → 6.14)"):
        assert part in text, part
    ai, ridge, rho = precision_rho.weight_only_cards(weight_only)
    assert ai.value == "1,365 → 1,814 FLOP/B" and ai.caption == "×1.33"
    assert (ridge.value, ridge.caption) == ("295 FLOP/B", "×1: the math is still fp16")
    assert rho.value == "4.62 → 6.14"


def test_nvfp4_explanation_counts_the_block_scales():
    rows = {q.storage: q for q in precision_study.decode_quant_table(4096, 4096, "h100-sxm")}
    text = precision_rho.nvfp4_explanation(rows["fp16"], rows["nvfp4"])
    # 4096²·2 + 2·4096·2 = 33.57 MB; at 4 + 8/16 = 4.5 bits: 4096²·4.5/8 + 16,384 = 9.45 MB;
    # 33,570,816 / 9,453,568 = 3.55
    for part in ("FP16 weights: 33.6 MB; NVFP4: 9.45 MB", "(4.5 bits a weight",
                 "one per 32, 4.25 bits", "3.55× fewer bytes, not 16 / 4 = 4×",
                 "memory-bound, so the speedup of the roofline bounds (the ideal) is 3.55×"):
        assert part in text, part


def test_device_spec_cards_give_memory_then_each_precisions_peak_and_ridge():
    cards = precision_rho.device_spec_cards(H100)
    assert cards[0] == ("NVIDIA H100 SXM5 · memory", "3,350 GB/s", "80 GiB (85.9 GB) HBM3")
    assert cards[1] == ("fp32 peak (dense)", "67 TFLOP/s", "ridge (fp32, dense) = 20 FLOP/B")
    assert len(cards) == 1 + len(H100.precisions)


def test_decode_table_rows_and_the_measured_note():
    rows = precision_study.decode_quant_table(4096, 4096, "h100-sxm")
    unmeasured = precision_study.merge_measured(rows, {})
    table = {r["format"]: r for r in precision_rho.decode_table_rows(rows, unmeasured)}
    assert table["nvfp4"]["bits/weight"] == "4.5" and table["nvfp4"]["byte ratio"] == "3.55×"
    assert table["fp16"]["bytes moved"] == "33.6 MB"
    # int4 with an fp16 scale per 128 weights: 4 + 16/128 = 4.125 bits, exact (not "4.12")
    assert table["int4-g128"]["bits/weight"] == "4.125"
    assert table["nvfp4"]["measured time"] == table["nvfp4"]["error"] == "—"
    assert precision_rho.decode_measured_note(unmeasured, None).startswith("Measured columns")
    # fp16 measured at twice its bound (10.02 µs = 33.57 MB / 3.35 TB/s): error +100 %
    measured = precision_study.merge_measured(rows, {"fp16": 2 * 33_570_816 / 3350e9})
    fp16 = precision_rho.decode_table_rows(rows, measured)[0]
    assert fp16["error"] == "+100 %" and fp16["measured speedup"] == "1×"
    assert precision_rho.decode_measured_note(measured, "Box") == "Measured on Box."


def test_missing_rate_message_names_the_rate_the_formats_and_the_way_out():
    missing = [SimpleNamespace(storage="nvfp4", compute="fp4"),
               SimpleNamespace(storage="mxfp4", compute="fp4")]
    text = precision_rho.missing_rate_message(H100, missing)
    assert text.startswith("NVIDIA H100 SXM5 has no fp4 rate in the registry")
    assert "nvfp4 (math in fp4), mxfp4 (math in fp4)" in text
    assert "It has rates for: fp32, tf32, fp16, bf16, fp8, int8." in text


def test_explorer_rows_and_part_1_switch_on_the_device_picked(classic):
    rows = precision_study.study("gemm", GEMM_4096, "h100-sxm", ["fp16"])
    (row,) = precision_rho.explorer_table_rows(rows)
    assert (row["AI"], row["ridge (dense)"], row["ρ"]) == ("1,365 FLOP/B", "295 FLOP/B", "4.62")
    (card,) = precision_rho.switch_cards(H100, classic)
    assert (card.value, card.caption) == ("ρ ×0.135", "AI ×2 ÷ ridge ×14.8")
    # a TPU v5e has bf16 and int8 only: neither side of the switch exists there
    note = precision_rho.switch_unavailable_note(hardware.get("tpu-v5e"), KeyError("fp32"))
    assert "has no fp32 or fp16 rate in the registry" in note
    assert precision_rho.switch_unavailable_note(H100, ValueError("odd")) == "_odd_"


def test_kai_explanation_and_cards_footprint_against_traffic():
    kai = precision_study.naive_bandwidth("gemv", {"n": 14336, "k": 4096}, "fp16", "h100-sxm",
                                          iterations=100)
    # footprint 14336·4096·2 + (4096 + 14336)·2 = 117,477,376 B; 100 reads: 11.75 GB at the
    # HBM's 3,350 GB/s (to 3 figures, as the cards: 117 MB, 11.7 GB); footprint ÷ the same time = 33.5 GB/s, 100× less
    text = precision_rho.naive_explanation(kai)
    for part in ("footprint, 117 MB", "11.7 GB of traffic", "gives 33.5 GB/s",
                 "gives 3,350 GB/s, 100× more"):
        assert part in text, part
    peak, traffic, naive, used = precision_rho.naive_bandwidth_cards(kai, H100)
    assert traffic.label == "traffic from HBM (every read and write)"
    assert (naive.value, naive.kind, used.value, used.kind) == ("33.5 GB/s", "danger",
                                                                  "3,350 GB/s", "ok")


def test_a_working_set_that_fits_in_l2_shows_the_second_trap():
    small = precision_study.naive_bandwidth("gemv", {"n": 4096, "k": 4096}, "fp16", "h100-sxm",
                                            iterations=100)
    # 33.57 MB in a 50 MiB L2: the 1st read from HBM (3,350 GB/s), 99 from L2 at 6,650 GB/s
    # (the registry's published measurement): 3.357 GB in 10.0 µs + 499.8 µs = 6,585 GB/s
    seconds = 33_570_816 / 3350e9 + 99 * 33_570_816 / 6650e9
    expected = f"{100 * 33_570_816 / seconds / 1e9:,.0f}"
    assert expected == "6,585"
    cards = precision_rho.naive_bandwidth_cards(small, H100)
    assert cards[1].label.startswith("traffic from L2 after the 1st iteration")
    assert cards[3].value == "6,585 GB/s" and cards[3].kind == "warn"
    text = precision_rho.l2_trap_text(small, H100, 117_477_376)
    for part in ("these 33.6 MB fit in the NVIDIA H100 SXM5's 50 MiB L2 cache",
                 "here 6,585 GB/s, above the HBM's 3,350", "(Kai's 117 MB is)"):
        assert part in text, part
    assert "even Kai's 33.6 MB fit" in precision_rho.l2_trap_text(small, H100, 33_570_816)


def test_tf32_cards_read_tf32_as_a_compute_mode():
    tf32 = precision_study.tf32_misreading("gemm", GEMM_4096, "h100-sxm")
    right, wrong, attainable = precision_rho.tf32_cards(tf32)
    # AI at 32-bit storage 8192/12 = 683; at 19 bits 8192/(3·19/8) = 1,150, ×32/19 = ×1.68;
    # TF32 dense 494.7 TFLOP/s = 7.38× the FP32 67
    assert right.value == "683 FLOP/B" and wrong.value == "1,150 FLOP/B"
    assert wrong.caption == "wrong: ×1.68 too high"
    assert attainable.value == "495 TFLOP/s"
    assert attainable.caption == "= 7.38× the FP32 peak (67)"


def test_live_tables_and_the_faster_than_bound_note():
    peaks = precision_rho.live_peak_rows([
        {"what": "fp16", "measured": 500.0, "spec": 989.5, "ratio": 500 / 989.5, "detail": ""},
        {"what": "fp4", "measured": None, "spec": None, "ratio": None, "detail": "no kernel"}])
    assert peaks[0]["measured / spec"] == "51%" and peaks[1]["measured"] == "—"
    (row,) = precision_rho.live_decode_rows([
        {"storage": "fp8", "compute": "fp8", "predicted_s": 5e-6, "measured_s": 4e-6,
         "error_pct": -20.0, "predicted_speedup": 2.0, "measured_speedup": 2.5,
         "status": "timed", "below_bound": True}])
    assert row["error"] == "-20 %" and row["measured speedup"] == "2.5×"
    assert row["status"] == "timed · faster than its own bound"
    assert precision_rho.faster_than_bound_text(["fp8", "int8"]).startswith(
        "**Faster than its own bound: fp8, int8.**")
