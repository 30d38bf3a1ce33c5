"""Lab 4 physics: fusion speedups, the overhead regime and flash tiles, hand-derived."""

import pytest

from labs.core import fusion
from labs.core import roofline

UNFUSED, FUSED = [[0], [1], [2], [3]], [[0, 1, 2, 3]]


def test_fusing_four_memory_bound_kernels_on_a_large_tensor():
    n = 1 << 26
    # bytes per element: unfused 4+4+(4+1)+6 = 19, fused 2+2(residual)+2+1 = 7 (fp16)
    s = fusion.fusion_speedup(n, "h100-sxm", UNFUSED, FUSED)
    assert s == pytest.approx(19 / 7, rel=1e-6)
    t = fusion.chain_timing(n, "h100-sxm", FUSED)
    assert t.regime == roofline.MEMORY
    assert t.seconds == pytest.approx(7 * n / 3350e9)


def test_on_a_tiny_tensor_fusion_helps_by_cutting_launches():
    t_un = fusion.chain_timing(1000, "h100-sxm", UNFUSED, launch_overhead_us=5)
    t_fu = fusion.chain_timing(1000, "h100-sxm", FUSED, launch_overhead_us=5)
    assert t_un.regime == t_fu.regime == roofline.OVERHEAD
    assert t_un.seconds == pytest.approx(4 * 5e-6) and t_fu.seconds == pytest.approx(5e-6)
    assert fusion.fusion_speedup(1000, "h100-sxm", UNFUSED, FUSED) == pytest.approx(4.0)


def test_overhead_crossover_size():
    # fused kernel moves 7 B/element: 5 us x 3350 GB/s / 7 B = 2.39 M elements
    n = fusion.chain_overhead_crossover("h100-sxm", FUSED, launch_overhead_us=5)
    assert n == pytest.approx(5e-6 * 3350e9 / 7)
    below = fusion.chain_timing(int(n * 0.5), "h100-sxm", FUSED, launch_overhead_us=5)
    above = fusion.chain_timing(int(n * 2), "h100-sxm", FUSED, launch_overhead_us=5)
    assert below.regime == roofline.OVERHEAD and above.regime == roofline.MEMORY


def test_flash_tile_fits_and_overflows():
    ok = fusion.flash_tile(128, 128, 128, "h100-sxm")
    # Q 32 KiB + K,V 64 KiB (fp16) ; S 64 KiB + O 64 KiB (fp32)
    assert ok.smem_bytes == 96 * 1024 and ok.register_bytes == 128 * 1024
    assert (ok.smem_capacity_bytes, ok.register_capacity_bytes) == (227 * 1024, 256 * 1024)
    assert ok.fits
    big = fusion.flash_tile(256, 256, 128, "h100-sxm")
    # Q/K/V 192 KiB fit the 227 KiB of shared memory; S + O 384 KiB overflow 256 KiB registers
    assert (big.smem_bytes, big.register_bytes) == (192 * 1024, (256 + 128) * 1024)
    assert not big.fits and big.overflows == ("registers",)
    assert "does NOT fit" in big.explain()
    assert not fusion.flash_tile(128, 128, 256, "l4").fits  # 99 KiB SMEM per block on Ada
    with pytest.raises(KeyError, match="no on-chip figures"):
        fusion.flash_tile(64, 64, 64, "tpu-v5e")


def test_bigger_query_tiles_reread_kv_less():
    # what the level below shared memory (L2) serves: K and V once per query tile
    kw = dict(batch=1, heads=32, seq_q=4096, seq_kv=4096, head_dim=128)
    small = fusion.flash_attention_l2_bytes(block_q=64, **kw)
    large = fusion.flash_attention_l2_bytes(block_q=128, **kw)
    qo = 2 * 32 * 4096 * 128 * 2
    assert (small - qo) == pytest.approx(2 * (large - qo))


def test_l2_keeps_the_kv_of_the_heads_in_flight():
    """The K and V re-reads of every query tile are L2's traffic, not HBM's: at S = 4k, d =
    128 a wave of 132 CTAs (one per SM, 32 query tiles per head) works on at most
    ceil(132 / 32) + 1 = 6 heads, whose K and V (2 MiB each, 12 MiB) fit the H100's 50 MiB L2:
    HBM reads K and V once. (Counting a re-read from HBM per query tile capped the kernel at
    416 TFLOP/s; FlashAttention-3 measures 638.)"""
    kv_head = 2 * 4096 * 128 * 2
    assert kv_head == 2 * 2**20
    assert fusion.flash_kv_hbm_passes(4096, 4096, 128, 128, "fp16", sharers=132,
                                  cache_bytes=50 * 2**20) == 1
    assert fusion.flash_attention_hbm_bytes(1, 32, 4096, 4096, 128, 128, "h100-sxm") == \
        4 * 32 * 4096 * 128 * 2  # Q, K, V, O once: 128 MiB
    # one head of 256k tokens: its K and V (128 MiB) overflow L2, so the wave's 132 CTAs walk
    # them together, once per wave of its 2,048 query tiles: ceil(2048 / 132) = 16 passes
    assert fusion.flash_kv_hbm_passes(262_144, 262_144, 128, 128, "fp16", sharers=132,
                                  cache_bytes=50 * 2**20) == 16
    qo = kv = 2 * 262_144 * 128 * 2
    assert fusion.flash_attention_hbm_bytes(1, 1, 262_144, 262_144, 128, 128, "h100-sxm") == \
        qo + 16 * kv
    # no L2 size in the registry (L4): every re-read counted from HBM, a pessimistic bound
    assert fusion.flash_attention_hbm_bytes(1, 32, 4096, 4096, 128, 128, "l4") == \
        fusion.flash_attention_l2_bytes(1, 32, 4096, 4096, 128, 128)


def test_unfused_score_matrix_grows_with_the_square_of_sequence():
    a = fusion.unfused_score_bytes(1, 32, 4096, 4096)
    assert a == 32 * 4096**2 * 2  # 1 GiB
    assert fusion.unfused_score_bytes(1, 32, 8192, 8192) == 4 * a


def test_hierarchical_roof_and_smem_bandwidth():
    oc = fusion.onchip("h100-sxm")
    assert oc.smem_bandwidth_gbs == pytest.approx(132 * 128 * 1.98)  # ~33.5 TB/s
    assert fusion.hierarchical_attainable(1000, 1000, "h100-sxm", "fp16") == 989.5
    assert fusion.hierarchical_attainable(10, 1000, "h100-sxm", "fp16") == pytest.approx(33.5)
    assert fusion.hierarchical_attainable(1000, 10, "h100-sxm", "fp16") == pytest.approx(334.5, rel=0.01)


# --- Lab 4 instrument helpers (appended) ----------------------------------------------------

import numpy as np  # noqa: E402

from labs.core import hardware  # noqa: E402


def test_chain_time_curve_matches_chain_timing_and_hand_values():
    # fused: 1,000 elements are launch-bound (5 us); 1e8 elements move 7 B each at 3350 GB/s
    curve = fusion.chain_time_curve([1_000, 100_000_000], "h100-sxm", FUSED, launch_overhead_us=5)
    assert curve[0] == pytest.approx(5e-6)
    assert curve[1] == pytest.approx(7e8 / 3350e9)
    # unfused, large: every kernel memory-bound, 4 + 4 + 5 + 6 = 19 B/element in total
    assert fusion.chain_time_curve([1e8], "h100-sxm", UNFUSED)[0] == pytest.approx(19e8 / 3350e9)
    for n in (10, 3_000, 2_000_000, 2_500_000, 40_000_000):
        for groups in (UNFUSED, FUSED, [[0, 1], [2, 3]]):
            want = fusion.chain_timing(n, "l4", groups, launch_overhead_us=3).seconds
            got = fusion.chain_time_curve([n], "l4", groups, launch_overhead_us=3)[0]
            assert got == pytest.approx(want)
    with pytest.raises(ValueError, match="sizes"):
        fusion.chain_time_curve([], "h100-sxm")


def test_kernel_tflops_below_the_roof_when_launch_bound():
    # fused chain FLOPs per element: 8 + 8 + 2 + 1 = 19
    tiny = fusion.chain_timing(1000, "h100-sxm", FUSED, launch_overhead_us=5)
    assert fusion.kernel_tflops(tiny) == pytest.approx((19_000 / 5e-6 / 1e12,))
    big = fusion.chain_timing(10**8, "h100-sxm", FUSED)
    # memory-bound: AI x bandwidth = (19 / 7) FLOP/B x 3.35 TB/s
    assert fusion.kernel_tflops(big)[0] == pytest.approx(19 / 7 * 3.35)


def test_fusion_benefit_names_why_fusion_helps():
    assert fusion.fusion_benefit(1000, "h100-sxm") == fusion.BENEFIT_LAUNCHES
    assert fusion.fusion_benefit(10**8, "h100-sxm") == fusion.BENEFIT_BYTES
    # a device with enormous bandwidth and a tiny peak: the chain is compute-bound, fusing
    # changes no FLOPs, so no speedup
    slow = hardware.custom("slow alu", bandwidth_gbs=1e6, peaks={"fp16": 1e-3}, memory_gb=1)
    assert fusion.fusion_benefit(10**8, slow) == fusion.BENEFIT_NONE


def test_attention_memory_terms_and_the_oom_sequence_length():
    t = fusion.attention_memory_terms(1, 32, 4096, 128, fused=False)
    assert t["Q, K, V, O"] == 4 * 32 * 4096 * 128 * 2  # 128 MiB
    assert t["score matrix (B×H×S×S)"] == 32 * 4096**2 * 2  # 1 GiB
    assert list(fusion.attention_memory_terms(1, 32, 4096, 128, fused=True)) == ["Q, K, V, O"]
    # H100 80 GiB (85.9e9 B): 64 S^2 + 32768 S <= 85.9e9  ->  S = 36,380 (36,381 is over)
    cap = 80 * 2**30
    s = fusion.unfused_max_seq_len("h100-sxm", 1, 32, 128)
    assert s == 36_380
    assert 64 * s**2 + 32768 * s <= cap < 64 * (s + 1) ** 2 + 32768 * (s + 1)
    terms = fusion.attention_memory_terms(1, 32, s + 1, 128, fused=False)
    assert sum(terms.values()) > cap >= sum(
        fusion.attention_memory_terms(1, 32, s, 128, fused=False).values())


def test_onchip_roof_and_onchip_bytes():
    assert fusion.onchip_roof_tflops(10, "h100-sxm", "fp16") == pytest.approx(334.54, rel=1e-4)
    assert fusion.onchip_roof_tflops(1000, "h100-sxm", "fp16") == 989.5
    assert np.allclose(fusion.onchip_roof_tflops([10, 1000], "h100-sxm", "fp16"), [334.54, 989.5],
                       rtol=1e-4)
    # S = 256, 128-row tiles: Q rows read once per KV tile (2 x 256), K and V rows once per
    # query tile (2 x 2 x 256): 1536 rows x 64 x 2 B
    assert fusion.flash_onchip_bytes(1, 1, 256, 256, 64, 128, 128) == 1536 * 64 * 2
    # partial tiles: S = 300 -> 3 tiles each way: 3 x 300 + 2 x 3 x 300 = 2700 rows
    assert fusion.flash_onchip_bytes(1, 1, 300, 300, 64, 128, 128) == 2700 * 64 * 2


def test_flash_roof_point_names_the_binding_roof():
    p = fusion.flash_roof_point(1, 32, 4096, 128, 128, 128, "h100-sxm")
    assert p.flops == 4 * 32 * 4096**2 * 128
    # L2: Q + O once (64 MiB) + 32 query tiles x K and V (64 MiB each pass)
    assert p.l2_bytes == 67_108_864 * 33
    assert p.ai_l2 == pytest.approx(124.12, rel=1e-4)
    # the H100's L2 measured at 6.65 TB/s (openxla/xla's GPU cost model)
    assert p.l2_tflops == pytest.approx(124.1212 * 6.65, rel=1e-4)  # 825 TFLOP/s
    # HBM: Q, K, V, O once (128 MiB): AI = S / 2 = 2048 at fp16, far above the ridge
    assert p.hbm_bytes == 134_217_728 and p.ai_hbm == pytest.approx(2048)
    assert p.limit == "L2 bandwidth" and p.attainable_tflops == p.l2_tflops
    # 64-row query tiles: twice the re-reads, half the AI on L2 (419 TFLOP/s)
    assert fusion.flash_roof_point(1, 32, 4096, 128, 64, 128, "h100-sxm").attainable_tflops == \
        pytest.approx(4 * 32 * 4096**2 * 128 / (67_108_864 * 65) * 6.65, rel=1e-9)
    # no L2 size for the L4: the re-reads are HBM's, which binds (300 GB/s)
    l4 = fusion.flash_roof_point(1, 32, 4096, 128, 64, 64, "l4")
    assert l4.hbm_bytes == l4.l2_bytes and l4.limit == "HBM bandwidth" and l4.determined
    # 512-row query tiles: 8 passes -> AI_L2 455; on chip (256 x 4096 + 16 x 4096) rows
    # -> AI 30.1 x 33.45 TB/s = 1008 > 989.5: compute-bound
    assert fusion.flash_roof_point(1, 32, 4096, 128, 512, 16, "h100-sxm").limit == "compute"
    # 8-row KV tiles: Q re-read from shared memory 512 times -> AI_onchip 15.5 -> 519 TFLOP/s
    low = fusion.flash_roof_point(1, 32, 4096, 128, 512, 8, "h100-sxm")
    assert low.limit == "on-chip bandwidth"
    assert low.ai_onchip == pytest.approx(4 * 4096**2 * 128 / (2_162_688 * 128 * 2))


def test_largest_square_tile():
    # H100, d = 128: 128 x 128 needs 96 KiB smem + 128 KiB registers; 256 x 256's S and O
    # need 384 KiB of registers > 256 KiB
    assert fusion.largest_square_tile(128, "h100-sxm") == 128
    # d = 64: 256 x 256 needs 96 KiB of shared memory (fits) but 320 KiB of registers
    # (S, O): it did "fit" the old pooled 483 KiB; the separate pools refuse it
    assert fusion.largest_square_tile(64, "h100-sxm") == 128
    assert fusion.largest_square_tile(128, "h100-sxm", candidates=(512,)) is None
    with pytest.raises(KeyError, match="no on-chip figures"):
        fusion.largest_square_tile(128, "tpu-v5e")


def test_kernel_crossovers_per_kernel():
    # unfused default chain on an H100: 4, 4, 5, 6 B/element; n = 5 us x 3350 GB/s / bytes
    got = fusion.kernel_crossovers("h100-sxm", UNFUSED, launch_overhead_us=5)
    assert got == pytest.approx(tuple(5e-6 * 3350e9 / b for b in (4, 4, 5, 6)))
    assert min(got) == pytest.approx(fusion.chain_overhead_crossover("h100-sxm", UNFUSED))
    assert fusion.kernel_crossovers("h100-sxm", FUSED) == pytest.approx((5e-6 * 3350e9 / 7,))
    with pytest.raises(ValueError, match="launch_overhead_us"):
        fusion.kernel_crossovers("h100-sxm", FUSED, launch_overhead_us=0)


# --- moved from tests/test_physics_review.py (filed by the module they test) ---------
from labs.core import hardware  # noqa: E402


def test_tile_overflowing_registers_only_does_not_fit_and_says_so():
    """(The physics review: flash tiles: shared memory and registers are separate
    pools.)"""
    t = fusion.flash_tile(256, 256, 128, "h100-sxm")
    assert t.smem_bytes == 192 * 1024 and t.smem_bytes <= t.smem_capacity_bytes == 227 * 1024
    assert t.register_bytes == 384 * 1024 > t.register_capacity_bytes == 256 * 1024
    assert not t.fits and t.overflows == ("registers",)
    verdict = t.explain().split("does NOT fit")[1]
    assert "registers" in verdict and "shared memory" not in verdict


def test_tile_overflowing_shared_memory_only_does_not_fit():
    # 306 KiB in all would "fit" a pooled 483 KiB; its 266 KiB of Q/K/V tiles do not fit the
    # 227 KiB a block may use
    """(The physics review: flash tiles: shared memory and registers are separate
    pools.)"""
    t = fusion.flash_tile(16, 512, 128, "h100-sxm")
    assert t.smem_bytes == (16 * 128 + 2 * 512 * 128) * 2 > 227 * 1024
    assert t.register_bytes < 256 * 1024
    assert not t.fits and t.overflows == ("shared memory",)
    verdict = t.explain().split("does NOT fit")[1]
    assert "shared memory" in verdict and "registers" not in verdict


@pytest.mark.parametrize("bq,bkv,d", [(64, 64, 64), (128, 64, 128), (64, 256, 256),
                                      (512, 16, 64), (32, 512, 256)])
def test_fit_is_both_pools(bq, bkv, d):
    """(The physics review: flash tiles: shared memory and registers are separate
    pools.)"""
    for key in fusion.ONCHIP:
        t = fusion.flash_tile(bq, bkv, d, key)
        oc = fusion.onchip(key)
        smem_ok = (bq * d + 2 * bkv * d) * 2 <= oc.smem_per_block_kb * 1024
        reg_ok = (bq * bkv + bq * d) * 4 <= oc.registers_kb_per_sm * 1024
        assert t.fits == (smem_ok and reg_ok)
        assert set(t.overflows) == ({"shared memory"} - ({"shared memory"} if smem_ok else set())
                                    ) | ({"registers"} - ({"registers"} if reg_ok else set()))


def test_a_compute_heavy_elementwise_chain_is_bound_by_the_vector_ceiling():
    """(The physics review: the vector (non-tensor) ceiling for elementwise
    ops.)"""
    slow = hardware.custom("weak alu", bandwidth_gbs=1000, peaks={"fp16": 1000}, memory_gb=8,
                           vector_tflops=0.1)
    t = fusion.chain_timing(1 << 24, slow, [[0, 1, 2, 3]], launch_overhead_us=0)
    flops = (8 + 8 + 2 + 1) * (1 << 24)
    assert t.seconds == pytest.approx(flops / 0.1e12)
    assert t.regime == roofline.COMPUTE


def test_chain_byte_ratio_of_the_default_chain():
    # bytes per element, unfused: LayerNorm 2b, GELU 2b, dropout 2b + 1 (mask), residual 3b;
    # fused: input, skip, output (3b) + the 1-byte mask
    assert fusion.chain_byte_ratio() == pytest.approx((4 + 4 + 5 + 6) / 7)  # fp16: 19 / 7
    assert fusion.chain_byte_ratio(precision="fp32") == pytest.approx((8 + 8 + 9 + 12) / 13)
    assert fusion.chain_byte_ratio(("gelu",)) == 1.0  # one op: nothing to fuse
    assert fusion.chain_byte_ratio() == pytest.approx(fusion.fusion_speedup(1 << 26, "h100-sxm", None,
                                                                    FUSED))


def test_the_byte_counts_of_the_wrong_models_graded_against_prediction_1():
    # forgetting dropout's mask byte: unfused 4 + 4 + 4 + 6 = 18 B, fused 2 + 2 + 2 = 6 B
    assert fusion.chain_byte_ratio(count_masks=False) == pytest.approx(18 / 6)
    # two one-input ops: unfused 4 + 4 = 8 B, fused 4 B: fusion halves the bytes there
    assert fusion.chain_byte_ratio(("gelu", "relu")) == pytest.approx(2.0)
    assert fusion.chain_byte_ratio(("gelu", "relu"), count_masks=False) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="count_masks"):
        fusion.chain_byte_ratio(count_masks="no")


def test_a_launch_only_saving_is_about_nothing_on_a_large_tensor_and_all_on_a_tiny_one():
    # 100 M fp16 elements on the H100 SXM, unfused: 19 B x 1e8 / 3,350 GB/s = 567.2 us;
    # removing 3 launches of 5 us leaves 552.2 us
    unfused = 19 * 1e8 / 3350e9
    got = fusion.launch_saving_speedup(100_000_000, "h100-sxm", UNFUSED, FUSED)
    assert got == pytest.approx(unfused / (unfused - 3 * 5e-6))
    assert 1.02 < got < 1.03
    # 1,000 elements: every kernel launch-bound, 4 x 5 us -> 5 us, as fusion_speedup says
    assert fusion.launch_saving_speedup(1000, "h100-sxm", UNFUSED, FUSED) == pytest.approx(4.0)
    assert fusion.launch_saving_speedup(1000, "h100-sxm", UNFUSED, UNFUSED) == 1.0
    assert fusion.launch_saving_speedup(1000, "h100-sxm", UNFUSED, FUSED,
                                    launch_overhead_us=0) == 1.0


def test_the_longest_sequence_with_more_or_wider_score_buffers():
    # H100 SXM: 80 GiB = 85,899,345,920 B. Batch 1, 32 heads, head_dim 128, fp16 Q, K, V, O:
    # 4 x 32 x 128 x 2 = 32,768 B per token. One fp16 score matrix: 64 S^2 B -> S = 36,380;
    # fp32 scores, or scores and probabilities at once: 128 S^2 B -> S = 25,777.
    cap = 80 * 2**30

    def fits(a, s):
        return a * s * s + 32_768 * s <= cap

    assert fits(64, 36_380) and not fits(64, 36_381)
    assert fits(128, 25_777) and not fits(128, 25_778)
    assert fusion.unfused_max_seq_len("h100-sxm", 1, 32, 128) == 36_380
    assert fusion.unfused_max_seq_len("h100-sxm", 1, 32, 128, score_precision="fp32") == 25_777
    assert fusion.unfused_max_seq_len("h100-sxm", 1, 32, 128, score_copies=2) == 25_777
    # one head's score matrix: 2 S^2 + 32,768 S <= cap
    one = fusion.unfused_max_seq_len("h100-sxm", 1, 1, 128)
    assert 2 * one**2 + 4 * 128 * 2 * one <= cap < 2 * (one + 1)**2 + 4 * 128 * 2 * (one + 1)
    with pytest.raises(ValueError, match="score_copies"):
        fusion.unfused_max_seq_len("h100-sxm", 1, 32, 128, score_copies=0)
    with pytest.raises(KeyError, match="score_precision"):
        fusion.unfused_max_seq_len("h100-sxm", 1, 32, 128, score_precision="fp7")


