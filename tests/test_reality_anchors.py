"""Reality anchors for the roofline placement and the cache-level (hierarchy) model.

Each test holds a model's prediction against a *published measurement of the same case*,
within a stated tolerance, with its source here in the test. A model that passes its own
unit tests (which derive their expectations from the model's formulas) can still predict
that a real library runs at half its measured speed; these tests catch that (issue 32:
the hierarchy model once put an 8192^3 bf16 GEMM on an A100 under the HBM roof at 129
TFLOP/s, while cuBLAS measures about 271).

Measurements used (all in ../shared/reference/hardware.md, "Measured achievable matmul
throughput" and "On-chip memory facts"):

* stas00/ml-engineering, "Maximum Achievable Matmul FLOPS comparison table"
  (compute/accelerator/README.md; mamf-finder.py, torch matmul = cuBLAS/hipBLASLt, large
  bf16 shapes): A100 SXM 271.2 of 312 TFLOP/s; H100 SXM 794.5 of 989(.5); MI300X 668.4 of
  1300; B200 1745 of 2250.
* NVIDIA A100 / H100 datasheets: dense bf16 peaks 312 and 989.5 TFLOP/s; A100 FP32 (CUDA
  core) 19.5 TFLOP/s.

Tolerances. A roofline is an upper bound: the model's attainable throughput must be at least
the measurement (a model below a measured library is wrong). It may not be far above it
either: a tuned cuBLAS GEMM at these sizes reaches 78-87% of the dense peak (the same table),
so the bound must be within 1.3x of the measurement (1/1.3 = 77%).
"""

from __future__ import annotations

import pytest

from labs.core import formulas as F
from labs.core import hierarchy as H
from labs.core import roofline as R

#: (device, measured cuBLAS bf16 TFLOP/s for large square matmuls, the source's own line)
MEASURED_MATMUL = {
    "a100-sxm-80gb": (271.2, "MAMF table: A100 SXM 271.2 of 312 bf16"),
    "h100-sxm": (794.5, "MAMF table: H100 SXM 794.5 of 989 bf16"),
}
#: A bound may be at most this much above the measured library (see the module docstring).
UPPER_BAND = 1.3


# --- the cache-level model: a tiled GEMM on the hierarchy ------------------------------------

@pytest.mark.parametrize("device", sorted(MEASURED_MATMUL))
def test_tiled_8192_bf16_gemm_is_compute_bound_as_cublas_measures(device):
    """An 8192^3 bf16 GEMM with 128 x 128 cache tiles and 64 x 64 warp (register) tiles,
    the shape cuBLAS runs for it, placed on the hierarchy model (shared memory, L2, HBM)."""
    measured, source = MEASURED_MATMUL[device]
    h = H.gpu_hierarchy(device, "bf16")
    p = H.place(H.gemm_kernel(8192, 8192, 8192, "bf16", tile=128, register_tile=64), h)
    assert p.binding == H.COMPUTE, (
        f"{device}: the model says {p.binding} binds at {p.attainable_tflops:.0f} TFLOP/s; "
        f"{source} (compute-bound in practice)")
    assert measured <= p.attainable_tflops <= UPPER_BAND * measured, (
        f"{device}: model {p.attainable_tflops:.0f} TFLOP/s vs measured {measured} ({source})")


@pytest.mark.parametrize("device", sorted(MEASURED_MATMUL))
def test_the_tiled_gemms_hbm_roof_is_not_below_the_measured_library(device):
    """Whatever binds, no level's roof may sit below what cuBLAS measures for the same GEMM:
    a roof below a measurement is a traffic model that counts bytes the hardware does not move
    (L2 is shared by every SM: a wave of CTAs reads each A and B panel from HBM once)."""
    measured, source = MEASURED_MATMUL[device]
    h = H.gpu_hierarchy(device, "bf16")
    p = H.place(H.gemm_kernel(8192, 8192, 8192, "bf16", tile=128, register_tile=64), h)
    for u in p.uses:
        roof = u.roof_tflops()
        assert roof is None or roof >= measured, (
            f"{device}: the {u.level.name} roof is {roof:.0f} TFLOP/s, below the measured "
            f"{measured} ({source})")


# --- the single roofline: placement of the same GEMM -----------------------------------------

@pytest.mark.parametrize("device", sorted(MEASURED_MATMUL))
def test_roofline_places_the_large_gemm_compute_bound_within_the_band(device):
    measured, source = MEASURED_MATMUL[device]
    cost = F.gemm(8192, 8192, 8192, "bf16")
    assert cost.ai > R.ridge_point(device, "bf16")  # compulsory bytes: far past the ridge
    peak = R.peak_tflops(device, "bf16")
    assert measured <= peak <= UPPER_BAND * measured, f"{device}: {source}"


@pytest.mark.parametrize("device, measured, spec, source", [
    ("a100-sxm-80gb", 271.2, 312, "MAMF table: A100 SXM 271.2 of 312 bf16"),
    ("h100-sxm", 794.5, 989, "MAMF table: H100 SXM 794.5 of 989 bf16"),
    ("mi300x", 668.4, 1300, "MAMF table: MI300X 668.4 of 1300 bf16"),
    ("b200", 1745.0, 2250, "MAMF table: B200 1745 of 2250 bf16"),
])
def test_achievable_fractions_are_the_measured_matmul_table(device, measured, spec, source):
    """The derating the labs apply (roofline.achievable) is the measured table, to 1%."""
    assert R.achievable(device).compute == pytest.approx(measured / spec, rel=0.01), source


def test_scalar_kernels_sit_under_the_cuda_core_ceiling():
    """A naive (scalar, untiled) GEMM cannot use tensor cores: its ceiling is the A100's
    CUDA-core rate, 19.5 TFLOP/s FP32 (NVIDIA A100 datasheet; hardware.md 'On-chip memory
    facts'), not the 312 TFLOP/s tensor-core peak. Same for a stencil and a reduction."""
    h = H.gpu_hierarchy("a100-sxm-80gb", "bf16")
    for kernel in (H.gemm_kernel(1024, 1024, 1024, "bf16", tile=1),
                   H.stencil_kernel(4096, "bf16"), H.reduction_kernel(2**20, "bf16")):
        p = H.place(kernel, h)
        assert p.ceiling_tflops == pytest.approx(19.5), kernel.name
        assert p.attainable_tflops <= 19.5, kernel.name
