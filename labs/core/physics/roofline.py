"""Roofline math: ridge points per precision, attainable throughput, regimes, time bounds, rho.

Units: AI in FLOP/byte, throughput in TFLOP/s (1e12), bandwidth GB/s (1e9), time in seconds.
Peak (TFLOP/s) / bandwidth (GB/s) * 1000 = ridge (FLOP/byte): a ridge point always names its
precision, because one device has one ridge per compute precision.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import numpy as np

from labs.core.physics import hardware as _hw
from labs.core.physics._validate import non_negative, positive, positive_int
from labs.core.physics.formulas import Cost

#: A stated, editable figure: per-kernel launch overhead of a framework on a GPU, in µs
#: (a few µs is typical for CUDA launches from PyTorch eager; see "Making Deep Learning Go
#: Brrrr From First Principles", H. He, 2022). Used for the overhead regime.
DEFAULT_LAUNCH_OVERHEAD_US = 5.0

MEMORY, COMPUTE, OVERHEAD = "memory-bound", "compute-bound", "overhead-bound"


def _device(hw) -> _hw.Device:
    return _hw.get(hw)


def _ai(ai):
    """Validate AI: a positive finite number or an array of them (vectorised for figures)."""
    if isinstance(ai, (list, tuple, np.ndarray)):
        arr = np.asarray(ai, dtype=float)
        if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
            raise ValueError("ai must contain only finite values > 0 (FLOP/byte)")
        return arr
    return positive("ai", ai)


def ridge_point(hw, precision: str) -> float:
    """FLOP/byte where the memory slope meets the ``precision`` compute roof."""
    d = _device(hw)
    return d.peak_tflops(precision) * 1e12 / (d.bandwidth_gbs * 1e9)


def attainable_tflops(ai, hw, precision: str):
    """min(peak, AI x bandwidth) in TFLOP/s; ``ai`` may be an array."""
    d = _device(hw)
    a = _ai(ai)
    return np.minimum(d.peak_tflops(precision), a * d.bandwidth_gbs / 1e3)


def rho(ai, hw, precision: str):
    """rho = AI / ridge(precision): < 1 memory-bound, > 1 compute-bound."""
    return _ai(ai) / ridge_point(hw, precision)


def regime(ai, hw, precision: str) -> str:
    """Memory- or compute-bound by AI alone (the overhead regime needs sizes: see kernel_time)."""
    return MEMORY if _ai(ai) < ridge_point(hw, precision) else COMPUTE


@dataclass(frozen=True)
class TimeBounds:
    t_compute: float  # s at the compute roof
    t_memory: float  # s at the memory roof
    t_overhead: float  # s of launch overhead (0 if not modelled)

    @property
    def lower(self) -> float:
        """Perfect overlap: no kernel finishes faster than its slowest resource."""
        return max(self.t_compute, self.t_memory, self.t_overhead)

    @property
    def upper(self) -> float:
        """No overlap at all: compute, memory and launch one after another."""
        return self.t_compute + self.t_memory + self.t_overhead

    @property
    def regime(self) -> str:
        m = self.lower
        if self.t_overhead >= m and self.t_overhead > 0:
            return OVERHEAD
        return COMPUTE if self.t_compute >= self.t_memory else MEMORY

    @property
    def bound_name(self) -> str:
        return self.regime.split("-")[0]


def time_bounds(flops, bytes_, hw, precision: str, *, launches: int = 0,
                launch_overhead_us: float = DEFAULT_LAUNCH_OVERHEAD_US) -> TimeBounds:
    """T_compute = FLOPs / peak, T_memory = bytes / bandwidth, T_overhead = launches x overhead.

    Launches are asynchronous, so a stream of tiny kernels runs no faster than one launch per
    overhead interval: the lower bound is max of the three, the upper bound their sum.
    """
    d = _device(hw)
    f = non_negative("flops", flops)
    b = positive("bytes", bytes_)
    n = non_negative("launches", launches)
    ov = non_negative("launch_overhead_us", launch_overhead_us)
    return TimeBounds(f / (d.peak_tflops(precision) * 1e12), b / (d.bandwidth_gbs * 1e9),
                      n * ov * 1e-6)


def cost_time(cost: Cost, hw, precision: str | None = None, *,
              launch_overhead_us: float = 0.0) -> TimeBounds:
    """Time bounds for a Cost at its own compute precision (or ``precision``)."""
    p = precision or cost.compute
    if p == "mixed":
        raise ValueError(f"{cost.name} mixes compute precisions; pass precision= explicitly")
    return time_bounds(cost.flops, cost.bytes, hw, p, launches=cost.kernels if launch_overhead_us
                       else 0, launch_overhead_us=launch_overhead_us)


def kernels_time(costs, hw, *, launch_overhead_us: float = DEFAULT_LAUNCH_OVERHEAD_US) -> float:
    """Lower-bound time of kernels run one after another, each max(compute, memory, launch)."""
    return sum(cost_time(c, hw, launch_overhead_us=launch_overhead_us).lower for c in costs)


def overhead_crossover_elements(bytes_per_element: float, hw, *,
                                launch_overhead_us: float = DEFAULT_LAUNCH_OVERHEAD_US) -> float:
    """Tensor size (elements) below which one memory-bound kernel is launch-overhead-bound:
    n * bytes_per_element / bandwidth = overhead."""
    d = _device(hw)
    positive("bytes_per_element", bytes_per_element)
    return positive("launch_overhead_us", launch_overhead_us) * 1e-6 * d.bandwidth_gbs * 1e9 / (
        bytes_per_element)


def mfu(achieved_tflops, hw, precision: str) -> float:
    """Model FLOP utilisation: achieved / dense peak for that precision."""
    return non_negative("achieved_tflops", achieved_tflops) / _device(hw).peak_tflops(precision)


def bandwidth_utilization(achieved_gbs, hw) -> float:
    return non_negative("achieved_gbs", achieved_gbs) / _device(hw).bandwidth_gbs


def mfu_bound(ai, hw, precision: str) -> float:
    """Best MFU a kernel of this AI can reach: attainable / peak."""
    return float(attainable_tflops(ai, hw, precision)) / _device(hw).peak_tflops(precision)


def gemm_crossover_n(hw, precision: str, bytes_per_element: float | None = None) -> float:
    """N* where a square N^3 GEMM's AI = 2N^3 / (3N^2 b) = 2N/(3b) meets the ridge:
    N* = 1.5 * b * ridge. Storage bytes default to the compute precision's."""
    from labs.core.physics import precision as _fmt

    b = bytes_per_element if bytes_per_element is not None else _fmt.bytes_per_element(precision)
    return 1.5 * positive("bytes_per_element", b) * ridge_point(hw, precision)


# --- bit-level intensity --------------------------------------------------------------------

#: ROUGH, editable estimates of the circuit cost of one multiply-add in each compute precision,
#: relative to FP16 = 1. Multiplier area/energy grows ~ with the square of the significand width
#: (24 bits FP32, 11 TF32/FP16, 8 BF16, 4 FP8-E4M3, 2 FP4-E2M1; INT8 8x8). These are teaching
#: estimates, not measurements: real units share logic across precisions.
CIRCUIT_WEIGHTS: Mapping[str, float] = {
    "fp32": 24**2 / 11**2, "tf32": 1.0, "fp16": 1.0, "bf16": 8**2 / 11**2,
    "fp8": 4**2 / 11**2, "int8": 8**2 / 11**2, "fp4": 2**2 / 11**2,
}


def i_bit(flops, bytes_, compute: str, weights: Mapping[str, float] | None = None) -> float:
    """Bit-level intensity: circuit-weighted operations per *bit* moved,
    I_bit = FLOPs x w(compute) / (8 x bytes). Lower precision shrinks both numerator (cheaper
    ops) and denominator (fewer bits), so I_bit shows whether the silicon or the wires gain."""
    w = dict(CIRCUIT_WEIGHTS if weights is None else weights)
    if compute not in w:
        raise KeyError(f"no circuit weight for compute={compute!r}; have {', '.join(w)}")
    positive(f"weights[{compute!r}]", w[compute])
    return non_negative("flops", flops) * w[compute] / (8 * positive("bytes", bytes_))


# --- Lab 1: fitting in memory, yardsticks, what moves AI ------------------------------------

def require_fits(footprint_bytes, hw, *, what: str = "this operation") -> float:
    """Fraction of the device's memory a footprint (bytes) takes; ValueError saying
    "this GEMM needs X GB, the <device> has Y GB" when it does not fit."""
    d = _device(hw)
    b = positive("footprint_bytes", footprint_bytes)
    cap = d.memory_gb * 1e9
    if b > cap:
        raise ValueError(f"{what} needs {b / 1e9:,.1f} GB, the {d.name} has {d.memory_gb:,.0f} GB "
                         f"of memory ({b / cap:.1f}x too much).")
    return b / cap


def implied_ai(achieved_tflops, achieved_gbs) -> float:
    """AI a kernel must have to run at ``achieved_tflops`` while moving ``achieved_gbs``:
    FLOP/s / (B/s) = TFLOP/s x 1e12 / (GB/s x 1e9), in FLOP/byte."""
    return positive("achieved_tflops", achieved_tflops) * 1e3 / positive("achieved_gbs",
                                                                         achieved_gbs)


def fraction_of_roof(achieved_tflops, ai, hw, precision: str) -> float:
    """The right yardstick: achieved / attainable at the kernel's own AI (1 = on the roof).
    For a memory-bound kernel this equals bandwidth utilisation; for a compute-bound one, MFU."""
    return non_negative("achieved_tflops", achieved_tflops) / float(
        attainable_tflops(ai, hw, precision))


def tiled_gemm_bytes(m, n, k, tile, bytes_per_element) -> float:
    """Main-memory bytes of C[M,N] = A[M,K] @ B[K,N] computed in T x T output tiles that keep
    nothing on chip between tiles: every tile column re-reads all of A, every tile row all of B.
    A: M*K*ceil(N/T), B: K*N*ceil(M/T), C: M*N written once. T >= max(M, N) gives the
    compulsory bytes of formulas.gemm; T = 1 is the naive kernel (two loads per FMA)."""
    m, n, k = positive_int("m", m), positive_int("n", n), positive_int("k", k)
    t = positive_int("tile", tile)
    b = positive("bytes_per_element", bytes_per_element)
    return b * (m * k * math.ceil(n / t) + k * n * math.ceil(m / t) + m * n)


@dataclass(frozen=True)
class Lever:
    """One change to a kernel or machine, and what it does to AI and to the ridge."""

    name: str
    ai: float  # FLOP/byte after the change
    ridge: float  # FLOP/byte of the (possibly changed) machine, same precision
    why: str

    @property
    def rho(self) -> float:
        return self.ai / self.ridge


#: Stated, editable sizes of the "what moves AI" levers (Lab 1's reflection).
LEVER_TILE_FACTOR = 2  # bigger on-chip tiles: 2x the tile edge
LEVER_BATCH_FACTOR = 4  # 4x more rows (tokens) share the same weights
LEVER_CLOCK_FACTOR = 1.2  # a 20% higher core clock
LEVER_CAPACITY_FACTOR = 2  # twice the memory capacity


def ai_levers(m, n, k, hw, precision: str, *, tile: int = 64,
              bytes_per_element: float | None = None) -> list[Lever]:
    """AI and ridge of a T-tiled GEMM (``tiled_gemm_bytes``) before and after each lever:
    bigger tiles (more reuse), batching (more rows share B), half the bytes per element,
    a faster core clock (peak up, bandwidth and AI unchanged: the ridge moves right),
    more memory capacity (nothing in AI or ridge changes)."""
    from labs.core.physics import precision as _fmt

    d = _device(hw)
    b = bytes_per_element if bytes_per_element is not None else _fmt.bytes_per_element(precision)
    t = positive_int("tile", tile)
    ridge = ridge_point(d, precision)
    flops = 2.0 * m * n * k

    def ai(mm=m, tt=t, bb=b, f=flops):
        return f / tiled_gemm_bytes(mm, n, k, tt, bb)

    base = ai()
    return [
        Lever("baseline", base, ridge, f"{t} x {t} output tiles"),
        Lever(f"{LEVER_TILE_FACTOR}x larger tiles", ai(tt=t * LEVER_TILE_FACTOR), ridge,
              "each byte fetched is reused by more FMAs"),
        Lever(f"{LEVER_BATCH_FACTOR}x batch (M)", ai(mm=m * LEVER_BATCH_FACTOR,
                                                     f=flops * LEVER_BATCH_FACTOR), ridge,
              "more rows share every weight read"),
        Lever("half the bytes per element", ai(bb=b / 2), ridge,
              "same FLOPs, half the bytes (e.g. fp8 storage, same compute precision)"),
        Lever(f"+{LEVER_CLOCK_FACTOR - 1:.0%} core clock", base, ridge * LEVER_CLOCK_FACTOR,
              "peak rises, bandwidth and AI do not: the ridge moves away"),
        Lever(f"{LEVER_CAPACITY_FACTOR}x memory capacity", base, ridge,
              "capacity decides what fits, not how fast bytes arrive"),
    ]
