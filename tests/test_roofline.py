"""Roofline math: hand-derived values and hypothesis properties."""

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labs.core import formulas
from labs.core import hardware, precision, roofline, utilization

H100 = hardware.get("h100-sxm")


def test_h100_ridges_per_precision():
    assert roofline.ridge_point(H100, "fp16") == pytest.approx(989.5e12 / 3350e9)  # ~295, not ~591
    assert roofline.ridge_point(H100, "fp16") == pytest.approx(295.4, abs=0.1)
    assert roofline.ridge_point(H100, "fp32") == pytest.approx(20.0, abs=0.1)  # CUDA-core FP32


def test_attainable_and_regime():
    assert roofline.attainable_tflops(1.0, H100, "fp16") == pytest.approx(3.35)  # 1 FLOP/B x 3.35 TB/s
    assert roofline.attainable_tflops(1e4, H100, "fp16") == pytest.approx(989.5)
    assert roofline.regime(1.0, H100, "fp16") == roofline.MEMORY
    assert roofline.regime(1365, H100, "fp16") == roofline.COMPUTE
    arr = roofline.attainable_tflops(np.array([1.0, 1e4]), "h100-sxm", "fp16")
    assert arr.tolist() == pytest.approx([3.35, 989.5])


#: Ridges by hand, peak (TFLOP/s, dense) x 1000 / bandwidth (GB/s), from the datasheets
#: (../shared/reference/hardware.md): device, precision, peak, bandwidth.
RIDGE_CASES = [
    ("h100-sxm", "fp16", 989.5, 3350),  # 295.37 FLOP/B
    ("h100-sxm", "fp32", 67, 3350),  # 20.0: the CUDA-core ridge
    ("a100-sxm-80gb", "bf16", 312, 2039),  # 153.02
    ("h200-sxm", "fp32", 67, 4800),  # 13.958: its float depends on the order of operations
    ("jetson-orin-nx-16gb", "fp32", 1.9, 102.4),  # 18.5546875 exactly, in decimal
    ("mi300x", "fp32", 163.4, 5300),  # 30.83
    ("tpu-v5e", "int8", 394, 819),  # 481.07
]


@pytest.mark.parametrize("device, precision, peak, bandwidth", RIDGE_CASES,
                         ids=[f"{d}-{p}" for d, p, *_ in RIDGE_CASES])
def test_a_kernel_exactly_at_the_ridge_is_compute_bound(device, precision, peak, bandwidth):
    """At the ridge both roofs give the same time; the rule (LABS_SPEC §2) names it
    compute-bound, whichever way the float of the ridge was computed (peak / bandwidth x
    1000 and peak x 1e12 / (bandwidth x 1e9) differ in the last bit for some devices). Just
    below, memory-bound; just above, compute-bound."""
    on_ridge = {peak / bandwidth * 1000, peak * 1e12 / (bandwidth * 1e9),
                peak * 1000 / bandwidth, (peak * 1e3) / bandwidth}
    for ai in on_ridge:
        for side in (math.nextafter(ai, 0), ai, math.nextafter(ai, math.inf)):
            assert roofline.regime(side, device, precision) == roofline.COMPUTE, (device, precision, side)
    ridge = peak / bandwidth * 1000
    assert roofline.regime(ridge * (1 - 1e-6), device, precision) == roofline.MEMORY
    assert roofline.regime(ridge * (1 + 1e-6), device, precision) == roofline.COMPUTE
    assert roofline.regime(ridge / 2, device, precision) == roofline.MEMORY
    # the time bounds name the same regime: FLOPs and bytes whose ratio is the ridge
    flops, bytes_ = peak * 1e12, bandwidth * 1e9  # one second at either roof
    assert roofline.time_bounds(flops, bytes_, device, precision).regime == roofline.COMPUTE
    assert roofline.time_bounds(flops * (1 - 1e-6), bytes_, device, precision).regime == roofline.MEMORY
    assert roofline.time_bounds(flops * (1 + 1e-6), bytes_, device, precision).regime == roofline.COMPUTE


def test_a_model_step_at_the_ridge_is_compute_bound():
    """A step whose compute and memory times are equal (to rounding) is compute-bound, as
    ``regime`` says; a hair below the ridge it is memory-bound."""
    from labs.core import models

    def step(t_compute, t_memory):
        return models.StepBound("decode", 1, 1, 1.0, 1.0, t_compute, t_memory)

    assert step(1e-3, 1e-3).bound == "compute"
    assert step(0.1 + 0.2, 0.3).bound == "compute"  # 0.30000000000000004 vs 0.3
    assert step(0.3, 0.1 + 0.2).bound == "compute"
    assert step(1e-3 * (1 - 1e-6), 1e-3).bound == "memory"


def test_time_bounds_for_4096_gemm_on_h100():
    g = formulas.gemm(4096, 4096, 4096, "fp16")
    tb = roofline.time_bounds(g.flops, g.bytes, H100, "fp16")
    assert tb.t_compute == pytest.approx(2 * 4096**3 / 989.5e12)  # 139 us
    assert tb.t_memory == pytest.approx(3 * 4096**2 * 2 / 3350e9)  # 30 us
    assert tb.lower == tb.t_compute and tb.no_overlap == tb.t_compute + tb.t_memory
    assert tb.regime == roofline.COMPUTE


def test_overhead_regime_for_tiny_kernels():
    tiny = formulas.elementwise("gelu", 1000, "fp16")
    tb = roofline.cost_time(tiny, H100, launch_overhead_us=5)
    assert tb.t_overhead == pytest.approx(5e-6)
    assert tb.regime == roofline.OVERHEAD
    big = formulas.elementwise("gelu", 1 << 28, "fp16")
    assert roofline.cost_time(big, H100, launch_overhead_us=5).regime == roofline.MEMORY
    # n x 4 B (read + write fp16) / 3350 GB/s = 5 us  ->  n = 4.19e6 elements
    assert roofline.overhead_crossover_elements(4, H100, launch_overhead_us=5) == pytest.approx(4.1875e6)


def test_the_launch_overhead_is_part_of_the_time_bound():
    """A kernel of 1 kFLOP and 1 kB on the H100 takes 1 ns of compute and 0.3 ns of memory;
    one launch of 5 us is its lower bound (the bound is the slowest of the three)."""
    tb = roofline.time_bounds(1e3, 1e3, H100, "fp16", launches=1, launch_overhead_us=5)
    assert tb.lower == pytest.approx(5e-6)
    assert tb.no_overlap == pytest.approx(5e-6 + 1e3 / 989.5e12 + 1e3 / 3350e9)


def test_a_tpus_vector_ceiling_stands_in_with_its_floating_point_peak():
    """No vector rate is sourced for TPUs: the stand-in is the highest floating-point matrix
    peak (tpu-v5e: 197 TFLOP/s bf16), never the int8 TOPS (394)."""
    assert roofline.peak_tflops("tpu-v5e", roofline.VECTOR) == pytest.approx(197)
    assert roofline.peak_tflops("tpu-v7x", roofline.VECTOR) == pytest.approx(4614)  # its fp8 peak
    assert roofline.peak_tflops(H100, roofline.VECTOR) == pytest.approx(67)  # sourced: CUDA-core fp32


def test_flop_utilisation_bandwidth_utilisation_and_bound():
    assert utilization.flop_utilization(494.75, H100, "fp16") == pytest.approx(0.5)
    assert utilization.mfu(494.75, H100, "fp16") == pytest.approx(0.5)  # the same ratio, for models
    assert utilization.bandwidth_utilization(3015, H100) == pytest.approx(0.9)
    # the 3%-of-peak kernel that is at 90% of bandwidth: AI = 0.9 x 3.35 / ... (Lab 1 misconception)
    ai = 0.03 * 989.5 / 3.35 / 0.9
    assert utilization.flop_utilization_bound(ai, H100, "fp16") == pytest.approx(ai * 3.35 / 989.5)


def test_rho_and_crossover():
    assert roofline.rho(295.37, H100, "fp16") == pytest.approx(1.0, rel=1e-3)
    # square GEMM AI = 2N/(3b): meets the fp16 ridge at N* = 1.5 x 2 x 295.4 = 886
    n_star = roofline.gemm_crossover_n(H100, "fp16")
    assert n_star == pytest.approx(886.1, abs=0.1)
    assert formulas.gemm(round(n_star), round(n_star), round(n_star)).ai == pytest.approx(
        roofline.ridge_point(H100, "fp16"), rel=1e-3)


def test_crossover_states_its_assumptions_and_the_slips_follow_from_them():
    # H100 SXM bf16 (datasheet): 989.5 TFLOP/s dense, 1979 with 2:4 sparsity, 3.35 TB/s.
    # N* = operands x b x ridge / FLOPs per MAC; hand arithmetic for each assumption:
    ridge = 989.5e12 / 3350e9  # 295.37 FLOP/B
    assert roofline.gemm_crossover_n(H100, "bf16") == pytest.approx(3 * 2 * ridge / 2)  # 886.1
    assert roofline.gemm_crossover_n(H100, "bf16", operands=2) == pytest.approx(2 * 2 * ridge / 2)
    assert roofline.gemm_crossover_n(H100, "bf16", operands=2) == pytest.approx(590.7, abs=0.1)
    assert roofline.gemm_crossover_n(H100, "bf16", flops_per_mac=1) == pytest.approx(1772.2, abs=0.1)
    assert roofline.gemm_crossover_n(H100, "bf16", 4) == pytest.approx(1772.2, abs=0.1)  # fp32 bytes
    assert roofline.sparse_ridge_point(H100, "bf16") == pytest.approx(1979e12 / 3350e9)  # 590.7
    assert roofline.gemm_crossover_n(H100, "bf16", sparse=True) == pytest.approx(1772.2, abs=0.1)
    # FP32 runs on the CUDA cores: no sparse figure is quoted, and the message says which
    with pytest.raises(KeyError, match="precision='fp32'"):
        roofline.sparse_ridge_point(H100, "fp32")
    with pytest.raises(ValueError, match="operands"):
        roofline.gemm_crossover_n(H100, "bf16", operands=0)


def test_fp32_to_fp16_moves_the_ridge_faster_than_the_workload():
    g32, g16 = formulas.gemm(4096, 4096, 4096, "fp32"), formulas.gemm(4096, 4096, 4096, "fp16")
    assert g16.ai / g32.ai == pytest.approx(2.0)
    ratio = roofline.rho(g16.ai, H100, "fp16") / roofline.rho(g32.ai, H100, "fp32")
    assert ratio == pytest.approx(2 * 67 / 989.5)  # rho falls ~7.4x
    assert ratio < 1


def test_i_bit():
    g = formulas.gemm(4096, 4096, 4096, "fp16")
    assert precision.i_bit(g.flops, g.bytes, "fp16") == pytest.approx(g.ai / 8)
    assert precision.i_bit(g.flops, g.bytes, "fp16", weights={"fp16": 2}) == pytest.approx(g.ai / 4)
    with pytest.raises(KeyError):
        precision.i_bit(1, 1, "fp64")
    with pytest.raises(ValueError, match="weights"):
        precision.i_bit(1, 1, "fp16", weights={"fp16": 0})


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), "x"])
def test_bad_ai_raises(bad):
    with pytest.raises(ValueError, match="ai"):
        roofline.attainable_tflops(bad, H100, "fp16")
    with pytest.raises(ValueError):
        roofline.attainable_tflops([1.0, bad], H100, "fp16")


def test_unknown_device_or_precision():
    with pytest.raises(KeyError, match="h100-sxm"):
        roofline.ridge_point("h100-sxn", "fp16")
    with pytest.raises(KeyError, match="no hardware rate"):
        roofline.ridge_point("tpu-v5e", "fp16")


ais = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)
devices = st.sampled_from(hardware.keys())


@settings(max_examples=200, deadline=None)
@given(ai=ais, key=devices, data=st.data())
def test_attainable_never_exceeds_either_roof(ai, key, data):
    d = hardware.get(key)
    p = data.draw(st.sampled_from(d.precisions))
    a = roofline.attainable_tflops(ai, d, p)
    assert a <= d.peak_tflops(p) * (1 + 1e-12)
    assert a <= ai * d.bandwidth_gbs / 1e3 * (1 + 1e-12)


# Attainable TFLOP/s worked by hand from the published figures (shared reference hardware.md:
# bandwidth in TB/s, dense peak), on both sides of each ridge (the property test
# above used to restate min(peak, ai x bw), which passes with any model that computes it).
@pytest.mark.parametrize("key, precision, ai, want", [
    ("a100-sxm-80gb", "fp16", 100, 203.9),    # 100 FLOP/B x 2.039 TB/s < 312
    ("a100-sxm-80gb", "fp16", 200, 312),      # 200 x 2.039 = 407.8 > 312 dense
    ("l4", "fp8", 500, 150),                  # 500 x 0.300 = 150 < 242.5
    ("l4", "fp8", 1000, 242.5),               # 1000 x 0.300 = 300 > 242.5
    ("h200-sxm", "fp8", 100, 480),            # 100 x 4.8 = 480 < 1979
    ("mi300x", "fp16", 100, 530),             # 100 x 5.3 = 530 < 1307.4
    ("mi300x", "fp16", 1000, 1307.4),         # 1000 x 5.3 = 5300 > 1307.4
    ("tpu-v5e", "bf16", 100, 81.9),           # 100 x 0.819 = 81.9 < 197
    ("rtx-4090", "fp32", 10, 10.08),          # 10 x 1.008 = 10.08 < 82.6 (CUDA cores)
    ("jetson-agx-orin-64gb", "int8", 1000, 85),  # 1000 x 0.2048 = 204.8 > 85 (GPU, dense)
])
def test_attainable_from_published_figures(key, precision, ai, want):
    assert roofline.attainable_tflops(ai, key, precision) == pytest.approx(want)


@settings(max_examples=200, deadline=None)
@given(a1=ais, a2=ais, key=devices)
def test_attainable_is_monotone_in_ai(a1, a2, key):
    d = hardware.get(key)
    p = d.precisions[0]
    lo, hi = sorted([a1, a2])
    assert roofline.attainable_tflops(lo, d, p) <= roofline.attainable_tflops(hi, d, p)


sizes = st.integers(min_value=1, max_value=1 << 14)


@settings(max_examples=200, deadline=None)
@given(m=sizes, n=sizes, k=sizes, pair=st.sampled_from([("fp32", "fp16"), ("fp16", "fp8"),
                                                         ("bf16", "int8"), ("fp8", "fp4")]))
def test_ai_doubles_when_bytes_per_element_halve(m, n, k, pair):
    wide, narrow = pair
    assert formulas.gemm(m, n, k, narrow).ai == pytest.approx(2 * formulas.gemm(m, n, k, wide).ai)
    assert formulas.gemv(n, k, narrow).ai == pytest.approx(2 * formulas.gemv(n, k, wide).ai)


@settings(max_examples=100, deadline=None)
@given(f=st.floats(0, 1e18), b=st.floats(1, 1e15), key=devices)
def test_time_bounds_are_ordered_and_finite(f, b, key):
    d = hardware.get(key)
    tb = roofline.time_bounds(f, b, d, d.precisions[0])
    assert math.isfinite(tb.no_overlap) and tb.lower <= tb.no_overlap <= 2 * tb.lower + 1e-30


# --- Lab 1 helpers: fitting, yardsticks, levers (hand-derived) ------------------------------

def test_require_fits_names_needed_and_available_memory():
    # 4096^3 fp16: 3 x 4096^2 x 2 B = 100.7 MB of 80 GiB
    assert roofline.require_fits(3 * 4096**2 * 2, H100, what="this GEMM") == pytest.approx(
        100_663_296 / (80 * 2**30))
    # 131072^3 bf16: 3 x 131072^2 x 2 B = 103.1 GB > 80 GiB (85.9 GB)
    with pytest.raises(ValueError, match=r"this GEMM needs 103\.1 GB, the NVIDIA H100 SXM5 has "
                                         r"80 GiB \(85\.9 GB\)"):
        roofline.require_fits(3 * 131072**2 * 2, H100, what="this GEMM")
    with pytest.raises(ValueError, match="footprint_bytes"):
        roofline.require_fits(0, H100)


def test_a_reading_is_judged_against_its_own_precisions_ridge():
    # 30% of the bf16 peak at 90% of the bandwidth: 296.85 TFLOP/s over 3,015 GB/s = 98.5
    # FLOP/B, below the bf16 ridge of 989.5 / 3.35 = 295.4 (above fp32's 67 / 3.35 = 20)
    reading = utilization.reading(0.3, 0.9, H100, "bf16")
    assert reading["ai"] == pytest.approx(296.85e12 / 3015e9)
    assert reading["regime"] == roofline.MEMORY
    assert reading["of_roof"] == pytest.approx(0.9)  # memory-bound: its bandwidth utilisation
    assert reading["flop_util_bound"] == pytest.approx(296.85e12 / 3015e9 * 3.35 / 989.5)
    # 90% of the bandwidth at 90% of the bf16 peak: AI 295.4 x 0.9 / 0.9, at the ridge
    assert utilization.reading(0.9, 0.9, H100, "bf16")["regime"] == roofline.COMPUTE


def test_yardsticks_for_3pct_mfu_at_90pct_bandwidth():
    tflops, gbs = 0.03 * 989.5, 0.9 * 3350  # 29.685 TFLOP/s, 3015 GB/s
    ai = utilization.implied_ai(tflops, gbs)
    assert ai == pytest.approx(29.685e12 / 3015e9)  # 9.846 FLOP/B
    assert ai == pytest.approx(roofline.ridge_point(H100, "fp16") * 0.03 / 0.9)
    assert roofline.regime(ai, H100, "fp16") == roofline.MEMORY
    # attainable 9.846 x 3.35 = 32.98 TFLOP/s: the kernel is at 90% of its own roof
    assert utilization.fraction_of_roof(tflops, ai, H100, "fp16") == pytest.approx(0.9)
    assert utilization.fraction_of_roof(tflops, ai, H100, "fp16") == pytest.approx(
        utilization.bandwidth_utilization(gbs, H100))
    assert utilization.mfu(tflops, H100, "fp16") == pytest.approx(0.03)
    with pytest.raises(ValueError, match="achieved_gbs"):
        utilization.implied_ai(1.0, 0)


def test_tiled_gemm_bytes_from_naive_to_compulsory():
    # M=N=K=4, fp16. T=1: A and B re-read per output: (64 + 64 + 16) x 2 B = 288 = 2MNK b + MN b
    assert roofline.tiled_gemm_bytes(4, 4, 4, 1, 2) == 288
    assert roofline.tiled_gemm_bytes(4, 4, 4, 2, 2) == (32 + 32 + 16) * 2  # each read twice
    assert roofline.tiled_gemm_bytes(4, 4, 4, 4, 2) == formulas.gemm(4, 4, 4, "fp16").bytes  # compulsory
    assert roofline.tiled_gemm_bytes(4, 4, 4, 64, 2) == formulas.gemm(4, 4, 4, "fp16").bytes
    with pytest.raises(ValueError, match="tile"):
        roofline.tiled_gemm_bytes(4, 4, 4, 0, 2)


def test_ai_levers_for_4096_bf16_gemm_with_64_tiles():
    lv = {x.name: x for x in roofline.ai_levers(4096, 4096, 4096, H100, "bf16", tile=64)}
    ridge = roofline.ridge_point(H100, "bf16")
    # bytes = 2 x 4096^2 x (64 + 64 + 1), FLOPs = 2 x 4096^3  ->  AI = 4096 / 129
    assert lv["baseline"].ai == pytest.approx(4096 / 129)
    assert lv["2x larger tiles"].ai == pytest.approx(4096 / 65)  # 32 + 32 + 1
    # M = 16384 with 64-tiles: A 4x64 + B 256 + C 4 (units 4096^2 x 2 B), FLOPs 4x: no gain
    assert lv["4x batch (M)"].ai == pytest.approx(8 * 4096 / (2 * 516))
    # weights (B) in half the bytes: A 64 + B 32 + C 1 (units 4096^2 x 2 B): < 2x
    assert lv["weights in half the bytes"].ai == pytest.approx(4096 / 97)
    assert lv["+20% core clock"].ai == lv["baseline"].ai
    assert lv["+20% core clock"].ridge == pytest.approx(1.2 * ridge)
    assert lv["2x memory capacity"].ai == lv["baseline"].ai
    assert lv["2x memory capacity"].ridge == ridge
    assert lv["baseline"].rho == pytest.approx((4096 / 129) / ridge)
    # a skinny GEMM (decode batch 16) gains from batching: all rows fit one tile, so B is
    # still read once. AI = M*N / (M*ceil(N/T) + N + M) in units of K x 2 B:
    skinny = {x.name: x for x in roofline.ai_levers(16, 4096, 4096, H100, "bf16", tile=64)}
    assert skinny["baseline"].ai == pytest.approx(16 * 4096 / (16 * 64 + 4096 + 16))  # 12.8
    assert skinny["4x batch (M)"].ai == pytest.approx(64 * 4096 / (64 * 64 + 4096 + 64))  # 31.8


# --- moved from tests/test_physics_review.py (filed by the module they test) ---------
from labs.core import models  # noqa: E402


def test_every_device_has_a_sourced_achievable_derating():
    """(The physics review: achievable derating; spec-only verdicts are "not
    ruled out".)"""
    for d in hardware.all_devices():
        der = roofline.achievable(d)
        assert 0 < der.compute < 1 and 0 < der.bandwidth < 1, d.key
        assert der.source.strip(), d.key
    h = roofline.achievable("h100-sxm")
    assert h.compute == pytest.approx(794.5 / 989, abs=0.005)  # measured MAMF, bf16
    assert "MAMF" in h.source or "Maximum Achievable Matmul" in h.source
    assert roofline.achievable("mi300x").compute == pytest.approx(668.4 / 1300, abs=0.005)


def test_derated_time_divides_by_the_fractions():
    """(The physics review: achievable derating; spec-only verdicts are "not
    ruled out".)"""
    der = roofline.Derating(0.5, 0.8, "test")
    tb = roofline.time_bounds(1e12, 1e9, "h100-sxm", "bf16", derating=der)
    assert tb.t_compute == pytest.approx(1e12 / (0.5 * 989.5e12))
    assert tb.t_memory == pytest.approx(1e9 / (0.8 * 3350e9))
    with pytest.raises(ValueError, match="compute"):
        roofline.Derating(1.5, 0.8, "x")
    with pytest.raises(ValueError, match="bandwidth"):
        roofline.Derating(0.5, 0.0, "x")


def test_measured_roofs_give_the_derating():
    """(The physics review: achievable derating; spec-only verdicts are "not
    ruled out".)"""
    der = roofline.derating_from_measurement("h100-sxm", {"bf16": 700.0, "fp32": 50.0}, 3000.0,
                                      source="my run")
    assert der.compute_for("bf16") == pytest.approx(700 / 989.5)
    assert der.compute_for("fp32") == pytest.approx(50 / 67)
    assert der.bandwidth == pytest.approx(3000 / 3350)
    assert der.compute_for("fp8") == pytest.approx(700 / 989.5)  # unmeasured: best measured
    assert "my run" in der.source


def test_elementwise_ops_run_on_the_vector_ceiling():
    """(The physics review: the vector (non-tensor) ceiling for elementwise
    ops.)"""
    gelu = formulas.elementwise("gelu", 1 << 20, "fp16")
    assert gelu.compute == roofline.VECTOR
    tb = roofline.cost_time(gelu, "h100-sxm")
    assert tb.t_compute == pytest.approx(8 * (1 << 20) / 67e12)  # FP32 CUDA cores, not 989.5
    for make in (lambda: formulas.rmsnorm(64, 4096, "bf16"), lambda: formulas.layernorm(64, 4096),
                 lambda: formulas.softmax(64, 4096)):
        assert make().compute == roofline.VECTOR
    assert roofline.ridge_point("h100-sxm", roofline.VECTOR) == pytest.approx(67e12 / 3350e9)
    assert roofline.peak_tflops("h100-sxm", roofline.VECTOR) == 67


def test_vector_ceiling_is_sourced_and_a_lower_bound_without_one():
    """(The physics review: the vector (non-tensor) ceiling for elementwise
    ops.)"""
    for d in hardware.all_devices():
        v = roofline.peak_tflops(d, roofline.VECTOR)
        assert v > 0
        if d.vector_tflops is not None:
            assert d.source("vector_tflops")
        else:  # no sourced vector rate (TPUs): the matrix peak stands in, so times stay bounds
            assert v >= max(x for p, x in d.peaks.items() if not p.startswith("int")) * 0.999
            assert d.note("vector_tflops")


def test_fp8_weights_lever_halves_only_the_weight_bytes():
    """(The physics review: Lab 1's "fp8 weights" lever halves the weights
    only.)"""
    m, n, k, t = 16, 8192, 8192, 64
    lv = {x.name: x for x in roofline.ai_levers(m, n, k, "h100-sxm", "bf16", tile=t)}
    flops = 2 * m * n * k
    a_bytes = 2 * m * k * math.ceil(n / t)  # activations re-read once per tile column, bf16
    c_bytes = 2 * m * n
    assert lv["baseline"].ai == pytest.approx(flops / (a_bytes + 2 * k * n + c_bytes))
    half = lv["weights in half the bytes"].ai
    assert half == pytest.approx(flops / (a_bytes + 1 * k * n + c_bytes))
    assert 1 < half / lv["baseline"].ai < 2


def test_time_bounds_name_the_no_overlap_estimate():
    """(The physics review, also: FLOP utilisation for kernels, the
    no-overlap estimate, the critical decode batch.)"""
    tb = roofline.time_bounds(1e12, 1e9, "h100-sxm", "bf16")
    assert tb.no_overlap == tb.t_compute + tb.t_memory + tb.t_overhead
    assert not hasattr(tb, "upper")
    assert "estimate" in roofline.TimeBounds.no_overlap.__doc__


def test_flop_utilisation_for_a_kernel():
    """(The physics review, also: FLOP utilisation for kernels, the
    no-overlap estimate, the critical decode batch.)"""
    assert utilization.flop_utilization(494.75, "h100-sxm", "fp16") == pytest.approx(0.5)
    assert utilization.flop_utilization_bound(1.0, "h100-sxm", "fp16") == pytest.approx(3.35 / 989.5)
    assert not hasattr(roofline, "mfu_bound")


def test_each_labs_launch_overhead_rule_is_the_one_labs_spec_states():
    """LABS_SPEC §2: launch overhead joins a kernel's time by max in Lab 4 (asynchronous
    launches back to back), by addition in Lab 5 (one call timed from the host) and Lab 7 (the
    step as the profiler reports it). Hand values; a change of rule in one lab fails here."""
    from labs.core.physics import fusion
    from labs.core.physics import quantization
    from labs.core.physics import tiny_models

    # Lab 4, max: 1,000 fp16 elements a kernel moves <= 6 kB, ~2 ns at 3,350 GB/s, so each of
    # the 4 kernels costs its 5 us launch and no more: 20 us, not 20 us + the bytes
    tiny = fusion.chain_timing(1_000, "h100-sxm")
    assert tiny.seconds == pytest.approx(4 * 5e-6)
    # on 100 M elements every kernel's bytes outlast the launch: 19 B x 1e8 / 3.35e12 B/s
    big = fusion.chain_timing(100_000_000, "h100-sxm")
    assert big.seconds == pytest.approx(19 * 1e8 / 3.35e12, rel=1e-3)
    # Lab 5, add: 1 MB at 10 GB/s after a 10 us fixed cost = 10 + 100 us
    assert quantization.call_time(1e6, 10, 1e-5) == pytest.approx(1.1e-4)
    # Lab 7, add: the tiny decoder's batch-1 fp32 decode step launches 172 kernels, and every
    # one adds its 5 us to the operators' bounds, whatever their size
    t = tiny_models.time_with_launches("a100-sxm-80gb")
    assert t[tiny_models.LAUNCHES] == pytest.approx(172 * 5e-6)
    bound = sum(v for k, v in t.items() if k != tiny_models.LAUNCHES)
    assert tiny_models.memory_bound_share_with_launches("a100-sxm-80gb") == pytest.approx(
        tiny_models.memory_bound_share("a100-sxm-80gb") * bound / (bound + 172 * 5e-6))


def test_a_regime_change_reads_as_words():
    """A card read "compute-bound → compute-bound" where nothing changed."""
    from labs.core.physics import precision_study

    assert precision_study.regime_change("compute-bound", "compute-bound") == \
        "still compute-bound"
    assert precision_study.regime_change("compute-bound", "memory-bound") == \
        "compute-bound → memory-bound"


def test_best_lever_is_the_highest_ai_change_not_the_baseline():
    """Lab 1's answer rule, one function: the change (never the baseline) with the most AI."""
    lv = roofline.ai_levers(16, 8192, 8192, "h100-sxm", "bf16", tile=64)
    # by hand, bf16, T = 64, bytes in units of K x 2 B: AI = M N / (M ceil(N/T) + N + M N/K)
    # batch x4: 64 x 8192 / (64 x 128 + 8192 + 64) = 31.9; tiles x2: 16 x 8192 /
    # (16 x 64 + 8192 + 16) = 14.2; half-byte weights: 16 x 8192 / (16 x 128 + 4096 + 16) = 21.3
    assert roofline.best_lever(lv).name == "4x batch (M)"
    assert roofline.best_lever(lv).ai == pytest.approx(64 * 8192 / (64 * 128 + 8192 + 64))
    base = roofline.Lever("baseline", 100.0, 50.0, "")
    worse = roofline.Lever("worse", 10.0, 50.0, "")
    same = roofline.Lever("same", 10.0, 60.0, "")
    assert roofline.best_lever([base, worse, same]) is worse  # the baseline never wins; tie: first
    with pytest.raises(ValueError, match="at least one lever"):
        roofline.best_lever([base])
