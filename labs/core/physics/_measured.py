"""Published measurements of what real kernels reach, with their sources: the tables that
``roofline.achievable`` reads (private to the physics wing; import them through roofline).

Launches: what a kernel costs besides its work, measured (what ``roofline``'s stated launch
figure stands between). Compute: the maximum achievable matmul throughput per device (MAMF table), a class figure
elsewhere. Memory: the bandwidth streaming kernels measure per device, a stated default
elsewhere. Each figure carries its source, which the labs show with the derating.
"""

from __future__ import annotations

__all__ = [
    "BW_DEFAULT", "BW_MEASURED", "CLASS_COMPUTE_FRACTION", "CLASS_SOURCE",
    "DEFAULT_BANDWIDTH_FRACTION", "EAGER_KERNEL_US", "LAUNCH_BACK_TO_BACK_US",
    "LAUNCH_CUDA_GRAPH_US", "MAMF", "MATMUL_MEASURED", "MEASURED_KERNEL_COSTS_US", "UNMEASURED",
    "bandwidth_fraction"
]

MAMF = ("stas00/ml-engineering, 'Maximum Achievable Matmul FLOPS comparison table' "
        "(compute/accelerator/README.md; mamf-finder.py, mean of 100 iterations, torch 2.5-2.7, "
        "2025)")
#: Measured achievable memory bandwidth (fraction of the spec bandwidth), where published:
#: what streaming kernels reach on the device's own memory. Each entry: (fraction, source).
BW_MEASURED = {
    "h200-sxm": (3898 / 4800, "H200 SXM: 3,898 of 4,800 GB/s (0.81), RRZE-HPC gpu-benches "
                 "gpu-stream (te42kyfo/gpu-benches, gpu-stream/h200.txt: its best kernel at "
                 "full occupancy; triad 3,534)"),
    "a100-sxm-80gb": (0.85, "A100 SXM 80GB: about 0.85 of 2,039 GB/s: gpt-fast measured "
                      "about 1,700 GB/s (0.83; pytorch-labs/gpt-fast README, the GPU "
                      "power-limited to 330 W) and a read kernel 1.80 TB/s (0.88; NVIDIA "
                      "developer forum, 'Trouble to Reach Peak Bandwidth of A100', confirmed "
                      "by Nsight Compute)"),
}
#: Where nothing is published for a device: 0.85, the middle of the published measurements
#: above (0.81 on the H200 to 0.88 for a read kernel on the A100). A stated assumption, not a
#: measurement (the former 0.90 lay above every published figure).
DEFAULT_BANDWIDTH_FRACTION = 0.85
BW_DEFAULT = ("stated assumption: no achievable-bandwidth measurement is published for this "
              "device, so 85% of the spec bandwidth is used, the middle of the published HBM "
              "measurements (0.81 of spec on an H200, RRZE-HPC gpu-stream; 0.83-0.88 on an "
              "A100 80GB, gpt-fast and a read kernel); measure yours (Lab 3, Part 5)")


def bandwidth_fraction(key: str) -> tuple[float, str, str]:
    """(fraction, full source, short label) of the spec bandwidth kernels reach on ``key``."""
    if key in BW_MEASURED:
        frac, what = BW_MEASURED[key]
        return round(frac, 4), f"measured, {what}", "bandwidth: measured, gpu-stream-like"
    return DEFAULT_BANDWIDTH_FRACTION, BW_DEFAULT, "bandwidth: nothing published, a stated assumption"


#: Measured achievable matmul fractions (MAMF / dense spec), bf16 (fp8 where measured).
MATMUL_MEASURED = {
    "h100-sxm": (794.5 / 989, {"fp8": 1402.6 / 1979}, "H100 SXM: 794.5 of 989 bf16, 1402.6 of "
                 "1979 fp8"),
    "h200-sxm": (794.5 / 989, {"fp8": 1453.4 / 1979}, "H200 SXM: bf16 as H100 (same compute), "
                 "1453.4 of 1979 fp8"),
    "a100-sxm-80gb": (271.2 / 312, {}, "A100 SXM: 271.2 of 312 bf16"),
    "b200": (1745.0 / 2250, {"fp8": 3432.5 / 4500}, "B200 SXM: 1745 of 2250 bf16, 3432.5 of "
             "4500 fp8"),
    "mi300x": (668.4 / 1300, {}, "MI300X: 668.4 of 1300 bf16 (ROCm 6.3, TunableOp on)"),
}
#: Per device class: the datacenter GPUs' median measured fraction; other classes have no
#: published measurement, so the same figure is a stated assumption there.
CLASS_COMPUTE_FRACTION = 0.80
CLASS_SOURCE = {
    "datacenter": f"{MAMF}: NVIDIA datacenter GPUs reach 78-87% of the dense bf16 peak; 80% used",
}
UNMEASURED = ("assumption: no achievable-matmul measurement is published for {cls} devices, "
              "so the datacenter figure (80% of the dense peak; " + MAMF + ") is used; "
               "measure yours (Lab 3, Part 5)")

#: Measured µs per kernel besides its work, what a fixed launch figure stands for (sources
#: below; the eager figure is (2,818 µs step - 26 µs of bounds) / 172 kernels).
LAUNCH_BACK_TO_BACK_US = 2.5
LAUNCH_CUDA_GRAPH_US = 1.3
EAGER_KERNEL_US = 16.2
MEASURED_KERNEL_COSTS_US = (
    ("small kernels launched back to back, NVIDIA H200", LAUNCH_BACK_TO_BACK_US,
     "RRZE-HPC gpu-benches, gpu-small-kernels"),
    ("the same kernels replayed as a CUDA graph, NVIDIA H200", LAUNCH_CUDA_GRAPH_US,
     "RRZE-HPC gpu-benches, gpu-small-kernels"),
    ("one kernel of eager PyTorch, host dispatch included: Lab 7's decoder step, NVIDIA H200",
     EAGER_KERNEL_US, "this project's run (torch 2.11, fp32, 2026-11-26)"),
)

