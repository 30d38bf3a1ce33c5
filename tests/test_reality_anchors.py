"""Reality anchors for the roofline placement and the cache-level (hierarchy) model.

Each test holds a model's prediction against a *published measurement of the same case*,
within a stated tolerance, with its source here in the test. A model that passes its own
unit tests (which derive their expectations from the model's formulas) can still predict
that a real library runs at half its measured speed; these tests catch that (the
hierarchy model once put an 8192^3 bf16 GEMM on an A100 under the HBM roof at 129 TFLOP/s,
while cuBLAS measures about 271).

Measurements used (all in ../shared/reference/hardware.md, "Measured achievable matmul
throughput" and "On-chip memory facts"):

* stas00/ml-engineering, "Maximum Achievable Matmul FLOPS comparison table"
  (compute/accelerator/README.md; mamf-finder.py, torch matmul = cuBLAS/hipBLASLt, large
  bf16 shapes): A100 SXM 271.2 of 312 TFLOP/s; H100 SXM 794.5 of 989(.5); MI300X 668.4 of
  1300; B200 1745 of 2250.
* NVIDIA A100 / H100 datasheets: dense bf16 peaks 312 and 989.5 TFLOP/s; A100 FP32 (CUDA
  core) 19.5 TFLOP/s.
* L2 bandwidth, measured by microbenchmarks (NVIDIA publishes none in GB/s): RRZE-HPC
  gpu-benches ``gpu-l2-cache`` (A100-80 5.2-5.5 TB/s, H100 PCIe 6.9, H200 9.78) and the
  openxla/xla GPU cost model (H100 6.65).
* The project's own H200 run (docs/authors/testing.md, "Last GPU run"): torch.matmul 8192^3
  bf16 at 764-778 TFLOP/s.
* Achievable memory bandwidth ("Reality anchors" in the same file): RRZE-HPC gpu-benches
  gpu-stream measures 3,898 of the H200's 4,800 GB/s; gpt-fast's README measures about 1,700
  GB/s on its A100-80GB (330 W) and a read kernel reaches 1.80 TB/s on an A100 80GB (NVIDIA
  developer forum, "Trouble to Reach Peak Bandwidth of A100").
* FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608, Fig. 5): forward attention, head dim
  128, fp16, non-causal, H100 SXM5: 638 TFLOP/s at sequence length 4k (cuDNN 609).

Tolerances. A roofline is an upper bound: the model's attainable throughput must be at least
the measurement (a model below a measured library is wrong). It may not be far above it
either: a tuned cuBLAS GEMM at these sizes reaches 78-87% of the dense peak (the same table),
so the bound must be within 1.3x of the measurement (1/1.3 = 77%).
"""

from __future__ import annotations

import pytest

from labs.core import formulas
from labs.core import fusion
from labs.core import hardware
from labs.core import hierarchy
from labs.core import roofline

#: (device, measured cuBLAS bf16 TFLOP/s for large square matmuls, the source's own line)
MEASURED_MATMUL = {
    "a100-sxm-80gb": (271.2, "MAMF table: A100 SXM 271.2 of 312 bf16"),
    "h100-sxm": (794.5, "MAMF table: H100 SXM 794.5 of 989 bf16"),
    # the project's own run (docs/authors/testing.md, "Last GPU run", 2026-11-26, one H200,
    # torch 2.11 + cu130): a plain back-to-back torch.matmul of 8192^3 bf16 reached 764-778
    # TFLOP/s (the low end is used). The GPU test's own timer read 676 there; that gap is
    # open in the test suite and is not a library measurement of this case.
    "h200-sxm": (764.0, "project's H200 run: torch.matmul 8192^3 bf16, 764-778 TFLOP/s"),
}
#: A bound may be at most this much above the measured library (see the module docstring).
UPPER_BAND = 1.3
#: L2 read bandwidth measured by microbenchmarks (hardware.md "Reality anchors"), GB/s:
#: (low, high, source). NVIDIA publishes none in GB/s.
MEASURED_L2 = {
    "a100-sxm-80gb": (5200, 5500, "RRZE-HPC gpu-benches gpu-l2-cache, A100-80: 5.2-5.5 TB/s"),
    "h100-sxm": (6650, 6650, "openxla/xla GPU cost model: H100 L2 6.65 TB/s (measured)"),
    "h100-pcie": (6900, 6900, "RRZE-HPC gpu-benches gpu-l2-cache, H100 PCIe: 6.9 TB/s"),
    "h200-sxm": (9780, 9780, "RRZE-HPC gpu-benches gpu-l2-cache, H200: 9.78 TB/s"),
}


def _library_gemm(device):
    """The 8192^3 bf16 GEMM as cuBLAS tiles it on ``device`` (A100: 128 x 128 tiles, 64 x 64
    warp tiles; Hopper: 128 x 256 tiles in 2-CTA clusters with TMA multicast), placed on the
    hierarchy model (shared memory, L2, HBM)."""
    h = hierarchy.gpu_hierarchy(device, "bf16")
    return hierarchy.place(hierarchy.library_gemm_kernel(h, 8192, 8192, 8192), h)


# --- the cache-level model: a tiled GEMM on the hierarchy ------------------------------------

@pytest.mark.parametrize("device", sorted(MEASURED_L2))
def test_the_l2_roofs_are_the_measured_bandwidths_within_the_band(device):
    """Each registry GPU's L2 roof is a measurement within LABS_SPEC §5's 1.3x of the
    published microbenchmark (the A100's 5120 B/clk x 1.41 GHz = 7.2 TB/s peak was 1.36x the
    measured 5.3: outside it)."""
    low, high, source = MEASURED_L2[device]
    l2 = hierarchy.gpu_hierarchy(device, "bf16").level("L2")
    assert l2.bandwidth_gbs is not None and l2.measured, source
    assert low / UPPER_BAND <= l2.bandwidth_gbs <= UPPER_BAND * low, source
    assert low <= l2.bandwidth_gbs <= high, source


@pytest.mark.parametrize("device", sorted(MEASURED_MATMUL))
def test_tiled_8192_bf16_gemms_bound_holds_what_cublas_measures(device):
    """The bound (every level has a figure, so it is the attainable rate) is not below the
    measurement and within the band of it: A100 312 (compute) of 271.2; H100 838 (L2: 8192 /
    65 FLOP/B x 6.65 TB/s) of 794.5; H200 989.5 (compute; L2's roof is 1,233) of 764."""
    measured, source = MEASURED_MATMUL[device]
    p = _library_gemm(device)
    assert p.determined, f"{device}: {p.verdict}"
    assert measured <= p.attainable_tflops <= UPPER_BAND * measured, (
        f"{device}: model {p.attainable_tflops:.0f} TFLOP/s ({p.binding}) vs measured "
        f"{measured} ({source})")


def test_on_the_a100_the_tiled_gemm_is_compute_bound_as_cublas_measures():
    """Every level the A100's GEMM uses has a figure (L2 measured, 5.3 TB/s: a roof of 8192 /
    129 x 5.3 = 337 TFLOP/s): the model names the binding roof, compute, at the 312 TFLOP/s
    dense peak (cuBLAS 271.2)."""
    measured, source = MEASURED_MATMUL["a100-sxm-80gb"]
    p = _library_gemm("a100-sxm-80gb")
    assert p.determined and p.binding == hierarchy.COMPUTE, (
        f"the model says {p.binding} binds at {p.attainable_tflops:.0f} TFLOP/s; {source} "
        "(compute-bound in practice)")


@pytest.mark.parametrize("device, binding", [("h100-sxm", "L2"), ("h200-sxm", hierarchy.COMPUTE)])
def test_the_flagship_gemm_gets_a_verdict_on_hopper(device, binding):
    """With the measured L2 figures the headline kernel gets a verdict: on the H100 L2 binds at
    838 TFLOP/s (cuBLAS 794.5, 0.95 of it), on the H200 (9.78 TB/s) compute does."""
    p = _library_gemm(device)
    assert p.determined and p.binding == binding


@pytest.mark.parametrize("device", sorted(MEASURED_MATMUL))
def test_the_tiled_gemms_roofs_are_not_below_the_measured_library(device):
    """Whatever binds, no level's roof may sit below what cuBLAS measures for the same GEMM:
    a roof below a measurement is a traffic model that counts bytes the hardware does not move
    (L2 is shared by every SM: a wave of CTAs reads each A and B panel from HBM once; on
    Hopper a cluster's shared tile is multicast, read from L2 once per cluster)."""
    measured, source = MEASURED_MATMUL[device]
    p = _library_gemm(device)
    for u in p.uses:
        roof = u.roof_tflops()
        assert roof is None or roof >= measured, (
            f"{device}: the {u.level.name} roof is {roof:.0f} TFLOP/s, below the measured "
            f"{measured} ({source})")


@pytest.mark.parametrize("device", ["h100-sxm", "h200-sxm"])
def test_hopper_without_the_cluster_multicast_contradicts_the_measurement(device):
    """The reason for the Hopper schedule: with 128 x 128 tiles and no multicast the L2 roof is
    8192 / 129 x 6.65 = 422 TFLOP/s on the H100 and x 9.78 = 621 on the H200, below cuBLAS's
    794.5 and the H200's 764: that traffic model is wrong for Hopper, not the measurements."""
    measured, _ = MEASURED_MATMUL[device]
    h = hierarchy.gpu_hierarchy(device, "bf16")
    square = hierarchy.place(hierarchy.gemm_kernel(8192, 8192, 8192, "bf16", tile=128, register_tile=64), h)
    assert square.use("L2").roof_tflops() < measured


# --- Lab 4: tiled flash attention on the roofline of each level --------------------------------

#: J. Shah, G. Bikshandi, Y. Zhang, V. Thakkar, P. Ramani, T. Dao, "FlashAttention-3: Fast and
#: Accurate Attention with Asynchrony and Low-precision" (arXiv:2407.08608, 2024), Fig. 5:
#: forward, fp16/bf16, head dim 128, non-causal, H100 SXM5, 16k tokens per batch (batch 4 x
#: 16 heads at sequence length 4k; hidden 2048): FlashAttention-3 638 TFLOP/s, cuDNN 609.
FA3_H100_4K = (638.0, "FlashAttention-3 (Shah et al. 2024) Fig. 5: H100 SXM5, fp16 forward, "
                      "head dim 128, non-causal, seqlen 4k: 638 TFLOP/s (cuDNN 609)")


def test_flash_attentions_bound_holds_what_flashattention_3_measures():
    """Lab 4's 128 x 128 tile (its largest square tile on the H100) at FA3's own shape: every
    query tile re-reads K and V, which L2 serves (each head's 2 MiB stays in L2 while its tiles
    run), so the L2 roof binds at 124 FLOP/B x 6.65 TB/s = 825 TFLOP/s, 1.29x the measured 638:
    within the band, above the measurement."""
    measured, source = FA3_H100_4K
    p = fusion.flash_roof_point(4, 16, 4096, 128, 128, 128, "h100-sxm", "fp16")
    assert p.determined and p.limit == "L2 bandwidth", p.limit
    assert measured <= p.attainable_tflops <= UPPER_BAND * measured, (
        f"model {p.attainable_tflops:.0f} TFLOP/s ({p.limit}) vs measured {measured} ({source})")
    # the same hierarchy as Lab 5 places it agrees
    h = hierarchy.gpu_hierarchy("h100-sxm", "fp16")
    placed = hierarchy.place(hierarchy.flash_kernel(4, 16, 4096, 128, 128, 128, "fp16"), h)
    assert placed.binding == "L2" and placed.attainable_tflops == pytest.approx(
        p.attainable_tflops)


def test_flash_re_reads_from_hbm_would_contradict_the_measurement():
    """Counting every query tile's K and V re-read from HBM (no L2) capped the kernel at
    124 FLOP/B x 3.35 TB/s = 416 TFLOP/s at every S, below what FlashAttention-3 measures."""
    measured, source = FA3_H100_4K
    p = fusion.flash_roof_point(4, 16, 4096, 128, 128, 128, "h100-sxm", "fp16")
    no_l2 = p.ai_l2 * 3350 / 1e3  # the H100 SXM's 3.35 TB/s of HBM3 (datasheet)
    assert no_l2 < measured, source


# --- the cache-level model: Lab 5's flash-attention tile on the H100 -------------------------

#: FlashAttention-3's forward pass on an H100 80GB SXM5, head dim 128, fp16, no causal mask
#: (Shah et al., "FlashAttention-3", 2024, Figure "Attention forward speed, head dim 128"): the
#: paper's setting holds 16k tokens (batch x sequence) and a hidden size of 2048 (16 heads);
#: TFLOP/s counted as 4 x batch x S^2 x heads x d. cuDNN's kernel in the same figure runs
#: 595-617 from 2k on.
FA3_FWD_H100 = {2048: 625.0, 4096: 638.0, 8192: 646.0, 16384: 648.0}
FA3_SOURCE = "FlashAttention-3 (Shah et al. 2024), forward, head dim 128, fp16, H100 SXM5"


def _fa3_case(seq_len):
    """The paper's case, placed on the hierarchy model with the lab's 128 x 128 tile (FA3's
    query tile is 128 rows too: K and V cross L2 once per query tile either way)."""
    h = hierarchy.gpu_hierarchy("h100-sxm", "bf16")
    return hierarchy.place(hierarchy.flash_kernel(16384 // seq_len, 16, seq_len, 128, 128, 128, "bf16"), h)


@pytest.mark.parametrize("seq_len", sorted(FA3_FWD_H100))
def test_the_flash_tiles_roofs_are_not_below_what_flashattention_3_measures(seq_len):
    """No level's roof below FA3's measurement. The model once re-read K and V from HBM for
    every query tile once the problem outgrew L2 (HBM-bound at 404-425 TFLOP/s from 2k on,
    below FA3's 625-648); the query tiles running at once share each head's K and V in L2,
    as a GEMM's wave shares its panels, so HBM serves about the compulsory bytes."""
    measured = FA3_FWD_H100[seq_len]
    p = _fa3_case(seq_len)
    assert p.determined
    for u in p.uses:
        roof = u.roof_tflops()
        assert roof is None or roof >= measured, (
            f"S = {seq_len}: the {u.level.name} roof is {roof:.0f} TFLOP/s, below the "
            f"measured {measured} ({FA3_SOURCE})")


@pytest.mark.parametrize("seq_len", [2048, 4096, 8192])
def test_the_flash_tiles_bound_is_within_the_band_of_flashattention_3(seq_len):
    """L2 binds (K and V served to every query tile: about 2 B_q / b = 128 FLOP/B at 6.65 TB/s):
    801, 825 and 838 TFLOP/s against FA3's 625, 638 and 646 (1.28-1.30x: FA3 spends the rest
    on the softmax's exponentials, which a roofline of bytes and matmul FLOPs does not count)."""
    measured = FA3_FWD_H100[seq_len]
    p = _fa3_case(seq_len)
    assert p.binding == "L2"
    assert measured <= p.attainable_tflops <= UPPER_BAND * measured, (
        f"S = {seq_len}: model {p.attainable_tflops:.0f} TFLOP/s ({p.binding}) vs measured "
        f"{measured} ({FA3_SOURCE})")


@pytest.mark.xfail(strict=True, reason=(
    "a known gap: at 16k the L2 roof (845 TFLOP/s) sits 1.304x above FlashAttention-3's 648, a "
    "hair past the 1.3 band; the roofline charges bytes and matmul FLOPs, not the softmax's "
    "exponentials that FA3 names its bottleneck"))
def test_at_16k_the_flash_tiles_bound_is_within_the_band_of_flashattention_3():
    """The same anchor at 16k: it fails today (1.304x), and is kept visible rather than the
    band widened."""
    p = _fa3_case(16384)
    assert p.binding == "L2"
    assert FA3_FWD_H100[16384] <= p.attainable_tflops <= UPPER_BAND * FA3_FWD_H100[16384]


# --- the single roofline: placement of the same GEMM -----------------------------------------

@pytest.mark.parametrize("device", sorted(MEASURED_MATMUL))
def test_roofline_places_the_large_gemm_compute_bound_within_the_band(device):
    measured, source = MEASURED_MATMUL[device]
    cost = formulas.gemm(8192, 8192, 8192, "bf16")
    assert cost.ai > roofline.ridge_point(device, "bf16")  # compulsory bytes: far past the ridge
    peak = roofline.peak_tflops(device, "bf16")
    assert measured <= peak <= UPPER_BAND * measured, f"{device}: {source}"


#: Published large-matmul rates (MAMF table, see the module docstring), TFLOP/s dense:
#: (device, precision, measured, the source's own line).
MEASURED_MATMUL_RATES = [
    ("a100-sxm-80gb", "bf16", 271.2, "MAMF table: A100 SXM 271.2 of 312 bf16"),
    ("h100-sxm", "bf16", 794.5, "MAMF table: H100 SXM 794.5 of 989 bf16"),
    ("h100-sxm", "fp8", 1402.6, "MAMF table: H100 SXM 1402.6 of 1979 fp8"),
    ("h200-sxm", "fp8", 1453.4, "MAMF table: H200 SXM 1453.4 of 1979 fp8"),
    ("mi300x", "bf16", 668.4, "MAMF table: MI300X 668.4 of 1300 bf16"),
    ("b200", "bf16", 1745.0, "MAMF table: B200 1745 of 2250 bf16"),
    ("b200", "fp8", 3432.5, "MAMF table: B200 3432.5 of 4500 fp8"),
]


@pytest.mark.parametrize("device, precision, measured, source", MEASURED_MATMUL_RATES,
                         ids=[f"{d}-{p}" for d, p, *_ in MEASURED_MATMUL_RATES])
def test_the_achievable_matmul_rate_is_what_the_library_measures(device, precision, measured,
                                                                source):
    """What the labs call achievable, core's dense peak (the registry) times core's achievable
    fraction, is the rate the library measures, to 1%; so is an 8192^3 GEMM's time at
    achievable rates. A wrong peak (the sparse headline) or a wrong fraction fails here."""
    der = roofline.achievable(device)
    rate = roofline.peak_tflops(device, precision) * der.compute_for(precision)
    assert rate == pytest.approx(measured, rel=0.01), source
    t = roofline.cost_time(formulas.gemm(8192, 8192, 8192, precision), device, derating=der).lower
    assert t == pytest.approx(2 * 8192**3 / (measured * 1e12), rel=0.01), source


#: Published achievable memory bandwidth, GB/s: (device, lowest, highest, sources).
MEASURED_BANDWIDTH = [
    ("h200-sxm", 3898, 3898, "RRZE-HPC gpu-benches gpu-stream, h200.txt: 3,898 GB/s at full "
                             "occupancy (its best kernel; triad 3,534)"),
    ("a100-sxm-80gb", 1700, 1800, "gpt-fast README: 'about 1700 GB/s' (A100-80GB at 330 W); "
                                  "a read kernel 1.80 TB/s (NVIDIA developer forum, Nsight "
                                  "Compute 88%)"),
]
#: The project's own H200 run (tests/test_reality_anchors_profile.py): a Llama-3-8B decode
#: step's GEMVs as one CUDA graph streamed 3,235 GB/s; a streaming kernel does at least as well.
H200_GEMV_CHAIN_GBS = 3235


@pytest.mark.parametrize("device, lowest, highest, source", MEASURED_BANDWIDTH,
                         ids=[d for d, *_ in MEASURED_BANDWIDTH])
def test_the_achievable_bandwidth_is_what_streaming_kernels_measure(device, lowest, highest,
                                                                   source):
    """Core's spec bandwidth times its achievable fraction lies within 1% of the published
    measurements (the former 0.9 of spec on every device gave 4,320 GB/s on the H200 and
    1,835 on the A100: above both)."""
    rate = hardware.get(device).bandwidth_gbs * roofline.achievable(device).bandwidth
    assert lowest * 0.99 <= rate <= highest * 1.01, f"{device}: {rate:.0f} GB/s; {source}"
    assert "measured" in roofline.achievable(device).source


def test_the_h200s_achievable_bandwidth_is_not_below_what_its_gemvs_streamed():
    rate = hardware.get("h200-sxm").bandwidth_gbs * roofline.achievable("h200-sxm").bandwidth
    assert H200_GEMV_CHAIN_GBS <= rate


def test_devices_without_a_measurement_use_the_stated_default_inside_the_published_range():
    """Where nothing is published the fraction is a stated assumption, and it lies within the
    published fractions (0.81 of spec on the H200 to 0.88 on the A100), not above them."""
    fractions = [lo / hardware.get(d).bandwidth_gbs for d, lo, _, _ in MEASURED_BANDWIDTH] + [
        hi / hardware.get(d).bandwidth_gbs for d, _, hi, _ in MEASURED_BANDWIDTH]
    der = roofline.achievable("h100-sxm")  # no published figure for the SXM part
    assert der.bandwidth == roofline.DEFAULT_BANDWIDTH_FRACTION
    assert min(fractions) <= der.bandwidth <= max(fractions)
    assert "stated assumption" in der.source and "85%" in der.source
    assert "85% of the bandwidth" in der.describe()


def test_scalar_kernels_sit_under_the_cuda_core_ceiling():
    """A naive (scalar, untiled) GEMM cannot use tensor cores: its ceiling is the A100's
    CUDA-core rate, 19.5 TFLOP/s FP32 (NVIDIA A100 datasheet; hardware.md 'On-chip memory
    facts'), not the 312 TFLOP/s tensor-core peak. Same for a stencil and a reduction."""
    h = hierarchy.gpu_hierarchy("a100-sxm-80gb", "bf16")
    for kernel in (hierarchy.gemm_kernel(1024, 1024, 1024, "bf16", tile=1),
                   hierarchy.stencil_kernel(4096, "bf16"), hierarchy.reduction_kernel(2**20, "bf16")):
        p = hierarchy.place(kernel, h)
        assert p.ceiling_tflops == pytest.approx(19.5), kernel.name
        assert p.attainable_tflops <= 19.5, kernel.name


# --- the naive (unstaged) GEMM: L1 absorbs the block's shared loads ---------------------------

#: NVIDIA RTX A6000 (GA102), the GPU of S. Boehm's measurements below. NVIDIA RTX A6000
#: datasheet: 10,752 CUDA cores (84 SMs x 128), boost clock 1,800 MHz, 38.7 TFLOP/s FP32,
#: 48 GB GDDR6 at 768 GB/s; NVIDIA Ampere GA102 GPU Architecture whitepaper: 6 MB L2, 128 KB
#: of L1 / shared memory per SM; CUDA C++ Programming Guide (compute capability 8.6): at most
#: 99 KB of shared memory per block. L1 bandwidth derived as for the registry GPUs: SMs x
#: 128 B/clock x boost clock. NVIDIA publishes no L2 bandwidth for it (no roof).
A6000_SMS, A6000_BOOST_GHZ = 84, 1.80

#: S. Boehm, "How to Optimize a CUDA Matmul Kernel for cuBLAS-like Performance: a Worklog"
#: (siboehm.com/articles/22/CUDA-MMM, 2022), fp32 SGEMM, 4092 x 4092 matrices, RTX A6000:
#: kernel 1 "Naive" 309.0 GFLOP/s (1.3% of cuBLAS) and kernel 2 "GMEM Coalescing" 1986.5
#: GFLOP/s (8.5%), one thread per element of C in 32 x 32-thread blocks, no shared memory.
#: Nsight Compute shows such kernels limited by the L1/TEX and load-store path (the SMs'
#: loads), not by L2 or DRAM bandwidth.
BOEHM_NAIVE = {"naive": 309.0, "coalesced": 1986.5}
#: A naive kernel is latency-bound well below its load-path roof: the bound may be at most
#: this much above the best naive measurement (the coalesced kernel).
NAIVE_BAND = 3.0


def _a6000():
    sm = A6000_SMS
    levels = (
        hierarchy.Level("L1 / shared memory", 128 * 1024, 99 * 1024, sm * 128 * A6000_BOOST_GHZ,
                "RTX A6000 datasheet; GA102 whitepaper; CUDA guide (CC 8.6)", True,
                scope=f"per SM ({sm} SMs)", scratchpad=True),
        hierarchy.Level("L2", 6 * 2**20, 6 * 2**20 / sm, None, "GA102 whitepaper: 6 MB", False,
                scope=f"shared by {sm} SMs", sharers=sm),
        hierarchy.Level("DRAM", 48e9, 48e9, 768.0, "RTX A6000 datasheet: 768 GB/s GDDR6"),
    )
    return hierarchy.hierarchy("rtx-a6000", "NVIDIA RTX A6000", "gpu", levels, 38.7, "fp32",
                       "RTX A6000 datasheet", vector_tflops=38.7)


def test_a_naive_sgemm_is_bound_by_l1_and_sits_under_it_as_boehm_measures():
    """A naive fp32 GEMM, N = 4092, on an RTX A6000: every multiply-add loads one
    A and one B element, 2 N^3 x 4 B through L1 (AI 1/4 FLOP/B): roof 0.25 x 84 x 128 B x
    1.8 GHz = 4.84 TFLOP/s. L1 keeps what a 32 x 32-thread block's warps share, so L2 and DRAM
    see 32x less: DRAM's roof is 32/4 FLOP/B x 0.768 TB/s = 6.1 TFLOP/s (L2: no figure).
    Boehm measures 0.31 and 1.99 TFLOP/s: both under the bound, the coalesced kernel within
    NAIVE_BAND of it, and the binding level is the SMs' load path, as Nsight Compute reports.
    The old model (every load passed to the next level) put DRAM's roof at 0.25 x 0.768 =
    0.19 TFLOP/s, below both measurements."""
    n = 4092
    p = hierarchy.place(hierarchy.gemm_kernel(n, n, n, "fp32", tile=1), _a6000())
    l1_roof = 2 * n**3 / (4 * (2 * n**3 + n * n)) * A6000_SMS * 128 * A6000_BOOST_GHZ / 1e3
    for kernel, measured in BOEHM_NAIVE.items():
        assert measured / 1e3 <= p.attainable_tflops, (kernel, p.binding, p.attainable_tflops)
        for u in p.uses:  # no level's roof below what was measured
            roof = u.roof_tflops()
            assert roof is None or roof >= measured / 1e3, (kernel, u.level.name, roof)
    assert p.binding == "L1 / shared memory"
    assert p.attainable_tflops == pytest.approx(l1_roof, rel=1e-6)  # 4.84
    assert p.attainable_tflops <= NAIVE_BAND * BOEHM_NAIVE["coalesced"] / 1e3
