"""Lab 4 physics: fusion speedups, the overhead regime and flash tiles, hand-derived."""

import pytest

from labs.core import fusion as FU
from labs.core import roofline as R

UNFUSED, FUSED = [[0], [1], [2], [3]], [[0, 1, 2, 3]]


def test_fusing_four_memory_bound_kernels_on_a_large_tensor():
    n = 1 << 26
    # bytes per element: unfused 4+4+(4+1)+6 = 19, fused 2+2(residual)+2+1 = 7 (fp16)
    s = FU.fusion_speedup(n, "h100-sxm", UNFUSED, FUSED)
    assert s == pytest.approx(19 / 7, rel=1e-6)
    t = FU.chain_timing(n, "h100-sxm", FUSED)
    assert t.regime == R.MEMORY
    assert t.seconds == pytest.approx(7 * n / 3350e9)


def test_on_a_tiny_tensor_fusion_helps_by_cutting_launches():
    t_un = FU.chain_timing(1000, "h100-sxm", UNFUSED, launch_overhead_us=5)
    t_fu = FU.chain_timing(1000, "h100-sxm", FUSED, launch_overhead_us=5)
    assert t_un.regime == t_fu.regime == R.OVERHEAD
    assert t_un.seconds == pytest.approx(4 * 5e-6) and t_fu.seconds == pytest.approx(5e-6)
    assert FU.fusion_speedup(1000, "h100-sxm", UNFUSED, FUSED) == pytest.approx(4.0)


def test_overhead_crossover_size():
    # fused kernel moves 7 B/element: 5 us x 3350 GB/s / 7 B = 2.39 M elements
    n = FU.chain_overhead_crossover("h100-sxm", FUSED, launch_overhead_us=5)
    assert n == pytest.approx(5e-6 * 3350e9 / 7)
    below = FU.chain_timing(int(n * 0.5), "h100-sxm", FUSED, launch_overhead_us=5)
    above = FU.chain_timing(int(n * 2), "h100-sxm", FUSED, launch_overhead_us=5)
    assert below.regime == R.OVERHEAD and above.regime == R.MEMORY


def test_flash_tile_fits_and_overflows():
    ok = FU.flash_tile(128, 128, 128, "h100-sxm")
    # Q 32 KiB + K,V 64 KiB (fp16) ; S 64 KiB + O 64 KiB (fp32)
    assert ok.smem_bytes == 96 * 1024 and ok.register_bytes == 128 * 1024
    assert ok.capacity_bytes == (227 + 256) * 1024 and ok.fits
    big = FU.flash_tile(256, 256, 128, "h100-sxm")
    assert big.bytes == (192 + 256 + 128) * 1024 and not big.fits
    assert "does NOT fit" in big.explain()
    assert not FU.flash_tile(128, 128, 256, "l4").fits  # 99 KiB SMEM per block on Ada
    with pytest.raises(KeyError, match="no on-chip figures"):
        FU.flash_tile(64, 64, 64, "tpu-v5e")


def test_bigger_query_tiles_reread_kv_less():
    kw = dict(batch=1, heads=32, seq_q=4096, seq_kv=4096, head_dim=128)
    small = FU.flash_attention_hbm_bytes(block_q=64, **kw)
    large = FU.flash_attention_hbm_bytes(block_q=128, **kw)
    qo = 2 * 32 * 4096 * 128 * 2
    assert (small - qo) == pytest.approx(2 * (large - qo))


def test_unfused_score_matrix_grows_with_the_square_of_sequence():
    a = FU.unfused_score_bytes(1, 32, 4096, 4096)
    assert a == 32 * 4096**2 * 2  # 1 GiB
    assert FU.unfused_score_bytes(1, 32, 8192, 8192) == 4 * a


def test_hierarchical_roof_and_smem_bandwidth():
    oc = FU.onchip("h100-sxm")
    assert oc.smem_bandwidth_gbs == pytest.approx(132 * 128 * 1.98)  # ~33.5 TB/s
    assert FU.hierarchical_attainable(1000, 1000, "h100-sxm", "fp16") == 989.5
    assert FU.hierarchical_attainable(10, 1000, "h100-sxm", "fp16") == pytest.approx(33.5)
    assert FU.hierarchical_attainable(1000, 10, "h100-sxm", "fp16") == pytest.approx(334.5, rel=0.01)
