"""Lab 4's prose builders (course/lessons/kernel_fusion): each states the numbers a reader can
work out by hand from the H100 SXM datasheet (3,350 GB/s of HBM3, 989.5 TFLOP/s fp16 dense,
67 TFLOP/s on the vector units, 80 GiB; 227 KiB of shared memory per block and a 256 KiB
register file per SM) and the byte counts of each kernel."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from labs.core import formulas, fusion, hardware, roofline
from labs.core.course.lessons import kernel_fusion

H100 = hardware.get("h100-sxm")
FUSED = [[0, 1, 2, 3]]
LARGE, TINY = 100_000_000, 1_000


@pytest.fixture(scope="module")
def large():
    return (fusion.chain_timing(LARGE, H100, None), fusion.chain_timing(LARGE, H100, FUSED))


@pytest.fixture(scope="module")
def tiny():
    return (fusion.chain_timing(TINY, H100, None), fusion.chain_timing(TINY, H100, FUSED))


def test_fusion_speedup_explanation_is_the_byte_ratio(large):
    # unfused 4 + 4 + 5 + 6 = 19 B per element: 1.9 GB in 1.9e9 / 3.35e12 = 567 µs; fused
    # 3·2 + 1 = 7 B: 700 MB in 209 µs; 19/7 = 2.71
    text = kernel_fusion.fusion_speedup_explanation(*large, LARGE, "fp16", 19 / 7)
    for part in ("memory-bound", "100 M-element fp16 tensor: 1.9 GB of HBM traffic in 567 µs",
                 "once: 700 MB in 209 µs", "Time follows bytes: 2.71×, not 4×."):
        assert part in text, part


def test_chain_cards_compare_the_grouping_with_the_unfused_chain(large):
    unfused, fused = large
    traffic, intensity, time, speedup, regime = kernel_fusion.chain_cards(
        fused, unfused, 19 / 7, H100)
    assert traffic == ("HBM traffic", "700 MB", "unfused: 1.9 GB")
    assert intensity[2].endswith("= 20 FLOP/B")  # vector ceiling 67 TFLOP/s / 3.35 TB/s
    assert time == ("Time (lower bound)", "209 µs", "1 kernel(s); unfused 567 µs")
    assert speedup[1] == "2.71×" and regime.value == regime.kind == roofline.MEMORY


def test_tiny_tensor_explanation_says_launches_not_bytes(tiny):
    # 1,000 × (2 + 2) B = 4.0 kB: 4e3 / 3.35e12 = 1.19 ns, far under a 5 µs launch; 4 launches
    # = 20 µs, fused 5 µs: 4.0×
    text = kernel_fusion.tiny_tensor_explanation(*tiny, TINY, "fp16")
    for part in ("On 1,000 fp16 elements the first kernel moves 4.0 kB: 1.19 ns",
                 "the 5 µs launch overhead", "overhead-bound: 4 launches = 20 µs",
                 "one launch: 5 µs, 4.0× faster"):
        assert part in text, part


def test_overhead_cards_and_the_crossover(tiny):
    # n* = 5 µs × 3,350 GB/s / 7 B per element = 2,392,857 elements
    crossover = 5e-6 * 3350e9 / 7
    unfused_card, fused_card, speedup, regime, cross = kernel_fusion.overhead_cards(
        *tiny, 4.0, crossover, 4)
    assert unfused_card == ("1,000 elements, unfused", "20 µs", "4 launches")
    assert fused_card == ("1,000 elements, fused", "5 µs", "1 launch")
    assert speedup[1] == "4.00×" and regime.value == roofline.OVERHEAD
    assert cross[1] == "2,392,857 elements"


def test_vector_ceiling_note_names_the_ceiling_or_what_stands_in():
    note = kernel_fusion.vector_ceiling_note(H100)
    assert "vector ceiling (67 TFLOP/s here)" in note and "stands in" not in note
    tpu = kernel_fusion.vector_ceiling_note(hardware.get("tpu-v5e"))  # no vector rate
    assert tpu.endswith("(The registry has no vector rate for the Google TPU v5e: its matrix "
                        "peak stands in, so times here are optimistic lower bounds.)")


def test_oom_explanation_at_the_longest_sequence():
    # 32 heads, d 128, fp16: 64 S² + 4·32·128·2 S <= 80 GiB = 85,899,345,920 B gives S = 36,380
    # (36,381 overflows); Q, K, V, O 32,768 × 36,380 B = 1.19e9 B reads "1.2 GB"; two S×S buffers: 128 S² + 32,768 S <= 80 GiB gives S = 25,777
    cap = 80 * 2**30
    assert 64 * 36380**2 + 32768 * 36380 <= cap < 64 * 36381**2 + 32768 * 36381
    assert 128 * 25777**2 + 32768 * 25777 <= cap < 128 * 25778**2 + 32768 * 25778
    terms = {"score matrix (B×H×S×S)": 64 * 36380**2, "Q, K, V, O": 32768 * 36380}
    text = kernel_fusion.oom_explanation(36380, terms, H100, 25777)
    for part in ("at S = 36,380 that is 84.7 GB, plus 1.2 GB for Q, K, V, O: 85.9 GB of the "
                 "NVIDIA H100 SXM5's 80 GiB (85.9 GB)", "runs out near S = 25,777"):
        assert part in text, part


def test_attention_cards_at_4k_tokens():
    unfused = formulas.attention(1, 32, 4096, 4096, 128, "fp16", fused=False)
    fused = formulas.attention(1, 32, 4096, 4096, 128, "fp16", fused=True)
    # Q, K, V, O: 4·32·4096·128·2 = 134 MB; scores 4 passes of 32·4096²·2 = 4.29 GB;
    # FLOPs 4·32·4096²·128 = 275 GFLOP; AI 274,877,906,944/4,429,185,024 = 62.06 (62.1) and 275e9/134e6 = 2,048;
    # time: 4.43 GB / 3.35 TB/s = 1.32 ms unfused, 275 GFLOP / 989.5 TFLOP/s = 278 µs fused
    times = {"unfused": 4_429_185_024 / 3350e9, "fused": 274_877_906_944 / 989.5e12}
    traffic_unfused, traffic_fused, ai, time = kernel_fusion.attention_cards(
        unfused, fused, times)
    assert traffic_unfused[1:] == ("4.4 GB", "of which score matrix: 4.3 GB (4 passes)")
    assert traffic_fused[1] == "134 MB"
    assert ai[1:] == ("62.1 → 2,048 FLOP/B", "FLOPs the same: 275 GFLOP")
    assert time[1] == "1.32 ms → 278 µs"


def test_largest_tile_explanation_and_the_peeks_worked_check():
    fit, bigger = (fusion.flash_tile(b, b, 128, H100) for b in (128, 256))
    # 128: Q, K, V (128·128 + 2·128·128)·2 B = 96 KiB of 227; S and O (128² + 128²)·4 B = 128
    # KiB of 256. 256: 192 KiB (fits) and (256² + 256·128)·4 B = 384 KiB (too much)
    text = kernel_fusion.largest_tile_explanation(128, 128, fit, bigger)
    for part in ("need 96 KiB of the 227 KiB of shared memory", "accumulators 128 KiB of the "
                 "256 KiB register file: both fit", "256×256 would need 192 KiB and 384 KiB "
                 "(registers too small)"):
        assert part in text, part
    assert kernel_fusion.tile_fit_text(H100, 128, 128) == (
        r"NVIDIA H100 SXM5, $d = 128$, fp16 (227 KiB of shared memory per block, a 256 KiB "
        r"register file): $128\times128$ needs 96 KiB and 128 KiB: both fit. $256\times256$ "
        "needs 192 KiB of shared memory (fits) and 384 KiB of registers (too much), so it does "
        "not fit.")


def test_flash_tile_cards_say_which_roof_binds_or_that_none_is_known():
    point = SimpleNamespace(l2_bytes=2.2e9, ai_l2=124.4, hbm_bytes=134e6, ai_hbm=2048.0,
                            ai_onchip=85.3, attainable_tflops=825.0, limit="L2 bandwidth",
                            determined=True)
    l2, ai_l2, hbm, ai_hbm, ai_chip, attainable = kernel_fusion.flash_tile_cards(point, H100)
    assert (l2[1], ai_l2[1], hbm[1], ai_hbm[1], ai_chip[1]) == (
        "2.2 GB", "124 FLOP/B", "134 MB", "2,048 FLOP/B", "85.3 FLOP/B")
    assert hbm[2] == "what L2 misses: Q, K, V and O about once"
    assert attainable[1:] == ("825 TFLOP/s", "bound by the L2 bandwidth roof")
    unknown = SimpleNamespace(**{**vars(point), "determined": False})
    no_l2 = kernel_fusion.flash_tile_cards(unknown, hardware.get("l4"))  # no L2 size
    assert no_l2[2][2].startswith("every re-read counted here")
    assert no_l2[5][2] == "an upper bound: L2 has no bandwidth figure"
