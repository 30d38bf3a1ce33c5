"""Lab 5, Part 4: what a single roofline cannot tell you.

Two effects the roofline's smooth curve misses, each predicted here and measured by
``labs.core.measure.working_set``:

* **Quantisation.** A GEMM is computed in T x T output tiles; a size that is not a multiple of
  T pays for whole tiles anyway (tile quantisation), and on a GPU the tiles run in *waves* of
  one tile per SM, so one tile past a multiple of the SM count costs a whole extra wave (wave
  quantisation). Throughput follows a sawtooth in N that the roofline (a function of AI only)
  does not have. On a CPU the tile is the BLAS micro-kernel's block (one core: one "SM").
  This is the model's step, an upper limit on the dip: libraries soften it with other tile
  shapes (cuBLAS on H100 also runs 128 x 256 tiles with clusters) and stream-K or split-K
  schedules for ragged wave counts, and a small GEMM's time is dominated by launch and
  ramp-up, so a measured curve shows a shallower dip.
* **Fixed cost per call.** A call that reads a small array pays a fixed overhead (Python, the
  framework's dispatch, a kernel launch) before any byte moves: time = overhead + bytes /
  bandwidth. Below bytes = overhead x bandwidth the time hardly shrinks with the bytes, and
  the kernel is latency- or overhead-bound, not on any memory roof.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from labs.core.physics.validate import (
    flag,
    non_negative,
    positive,
    positive_int,
    sequence,
)

__all__ = [
    "GPU_GEMM_TILE", "Quantization", "call_time", "cpu_gemm_tile", "efficiency_curve",
    "fit_call_time", "overhead_crossover_bytes", "quantization", "relative_throughput",
    "relative_throughput_fixed_wave_time", "sawtooth_relative", "shrink_speedup"
]

#: A stated, editable figure: the output tile of a large bf16 GEMM on a datacenter GPU. CUTLASS's
#: default threadblock shape for Ampere/Hopper tensor-core GEMMs is 128 x 128 (x 32 or 64 in K);
#: cuBLAS picks among similar shapes per problem, so this is a model, not cuBLAS's choice.
GPU_GEMM_TILE = 128


@dataclass(frozen=True)
class Quantization:
    """A square-ish GEMM's tiles and waves. ``efficiency`` = useful work / work paid for."""

    m: int
    n: int
    tile: int
    units: int  # SMs (GPU) or cores running tiles at once (1 for one CPU thread)
    tiles: int
    waves: int

    @property
    def tile_efficiency(self) -> float:
        """Useful fraction of the padded tiles: M N / (T ceil(M/T) T ceil(N/T))."""
        return self.m * self.n / (self.tile * self.tile * self.tiles)

    @property
    def wave_efficiency(self) -> float:
        """Busy fraction of the units over all waves: tiles / (waves x units)."""
        return self.tiles / (self.waves * self.units)

    @property
    def efficiency(self) -> float:
        """The fraction of the peak this GEMM can reach (1 = no quantisation loss)."""
        return self.tile_efficiency * self.wave_efficiency


def quantization(m, n, tile, units: int = 1) -> Quantization:
    """Tiles of an M x N output cut into T x T tiles, run ``units`` at a time."""
    m, n = positive_int("m", m), positive_int("n", n)
    t, u = positive_int("tile", tile), positive_int("units", units)
    tiles = math.ceil(m / t) * math.ceil(n / t)
    return Quantization(m, n, t, u, tiles, math.ceil(tiles / u))


def relative_throughput(n_from, n_to, tile, units: int = 1) -> float:
    """Throughput of the N = ``n_to`` square GEMM as a fraction of N = ``n_from``'s, when
    only quantisation changes (both otherwise run at the same per-tile speed)."""
    n_from, n_to = positive_int("n_from", n_from), positive_int("n_to", n_to)
    a = quantization(n_from, n_from, tile, units).efficiency
    return quantization(n_to, n_to, tile, units).efficiency / a


def relative_throughput_fixed_wave_time(n_from, n_to, tile, units: int = 1) -> float:
    """A slip's answer to :func:`relative_throughput`: every wave takes the same time whatever
    N, as if a tile's work did not grow with K = N, so throughput = FLOPs / waves and the
    ratio is (n_to / n_from)^3 x waves(n_from) / waves(n_to). H100 (132 SMs), 128 x 128
    tiles, N 1,280 -> 1,536: 1.2^3 x 1 / 2 = 0.864 (the model counts the tiles instead)."""
    n_from, n_to = positive_int("n_from", n_from), positive_int("n_to", n_to)
    a, b = (quantization(n, n, tile, units) for n in (n_from, n_to))
    return (n_to / n_from) ** 3 * a.waves / b.waves


def efficiency_curve(sizes, tile, units: int = 1) -> list[float]:
    """``quantization(n, n, tile, units).efficiency`` for every n in ``sizes``."""
    return [quantization(n, n, tile, units).efficiency
            for n in (positive_int("sizes", x) for x in sequence("sizes", sizes))]


def sawtooth_relative(sizes, throughputs, tile, units: int = 1, *,
                      per_tile: bool) -> tuple[list[float], list[float]]:
    """(measured, predicted) throughput of square GEMMs relative to a baseline, for plotting a
    measured sawtooth beside the model. ``per_tile`` (one CPU core): each N against the
    multiple of ``tile`` at or below it, measured and predicted alike (that takes out the slow
    rise of small GEMMs, which is call overhead, and leaves the sawtooth; an N whose base was
    not measured falls back to the best); else (a GPU, where waves matter) against the best."""
    ns = [positive_int("sizes", n) for n in sequence("sizes", sizes)]
    thr = [positive("throughputs", t) for t in sequence("throughputs", throughputs)]
    per_tile = flag("per_tile", per_tile)
    if len(ns) != len(thr):
        raise ValueError(f"sizes and throughputs must be the same length ({len(ns)} sizes, "
                         f"{len(thr)} throughputs)")
    by = dict(zip(ns, thr))
    eff = dict(zip(ns, efficiency_curve(ns, tile, units)))
    best, top = max(thr), max(eff.values())
    meas, pred = [], []
    for n in ns:
        base = (n // tile) * tile
        if per_tile and base in by:
            meas.append(by[n] / by[base])
            pred.append(eff[n] / eff[base])
        else:
            meas.append(by[n] / best)
            pred.append(eff[n] / top)
    return meas, pred


def cpu_gemm_tile(simd_fp32_lanes: int) -> int:
    """The N-width of a CPU BLAS micro-kernel's C block, taken as two vector registers of
    fp32 (16 with AVX2's 8 lanes, 32 with AVX-512's 16): an assumption (MKL and oneDNN do
    not publish their blocking) that the measured sawtooth checks."""
    return 2 * positive_int("simd_fp32_lanes", simd_fp32_lanes)


# --- fixed cost per call --------------------------------------------------------------------

def call_time(nbytes, bandwidth_gbs, overhead_s) -> float:
    """Seconds for one call that reads ``nbytes`` once: overhead + bytes / bandwidth (the
    fixed cost comes before the read, so the two add; they do not overlap)."""
    return non_negative("overhead_s", overhead_s) + non_negative("nbytes", nbytes) / (
        positive("bandwidth_gbs", bandwidth_gbs) * 1e9)


def overhead_crossover_bytes(bandwidth_gbs, overhead_s) -> float:
    """Bytes at which reading costs as long as the fixed overhead: overhead x bandwidth.
    Below it, the call is overhead-bound."""
    return positive("overhead_s", overhead_s) * positive("bandwidth_gbs", bandwidth_gbs) * 1e9


#: Tukey's bisquare constant (95% efficiency under normal noise) and the smallest scale of the
#: relative residuals the robust fit assumes (timings of a shared machine scatter by ~5%).
_BISQUARE_C, _MIN_RELATIVE_SCALE = 4.685, 0.05


def fit_call_time(sizes, seconds) -> tuple[float, float]:
    """(overhead_s, bandwidth_gbs) of ``call_time`` fitted to a measured curve: ``seconds[i]``
    per call reading ``sizes[i]`` bytes once.

    Fitted on *relative* error (a 1 µs call weighs as much as a 100 µs one: the curve spans
    decades) and robustly: Tukey's bisquare, iteratively reweighted, so one size that ran from
    a slower level (a 4 MiB read past a 1 MiB L2) or was disturbed by load does not pull the
    line off the others. The overhead is kept >= 0; a curve that never grows with the bytes
    gets the bandwidth its largest size allows. ValueError naming the argument on bad input
    (fewer than two sizes, lengths that differ, a size or time <= 0)."""
    x = [positive("sizes", v) for v in sequence("sizes", sizes)]
    t = [positive("seconds", v) for v in sequence("seconds", seconds)]
    if len(x) != len(t) or len(x) < 2:
        raise ValueError(f"sizes and seconds must have the same length, at least 2 (got "
                         f"{len(x)} sizes and {len(t)} seconds)")
    if len(set(x)) < 2:
        raise ValueError("sizes must hold at least two different byte counts")
    w = [1.0] * len(x)
    t0 = slope = 0.0
    for _ in range(50):
        t0, slope = _relative_least_squares(x, t, w)
        r = [(t0 + slope * xi) / ti - 1 for xi, ti in zip(x, t)]
        scale = max(1.4826 * _median([abs(v) for v in r]), _MIN_RELATIVE_SCALE)
        new = [(1 - (v / (_BISQUARE_C * scale)) ** 2) ** 2
               if abs(v) < _BISQUARE_C * scale else 0.0 for v in r]
        if sum(1 for v in new if v > 0) < 2 or max(abs(a - b) for a, b in zip(new, w)) < 1e-6:
            break
        w = new
    return t0, 1.0 / slope / 1e9


def _relative_least_squares(x, t, w) -> tuple[float, float]:
    """(t0, slope) minimising sum w_i ((t0 + slope x_i) / t_i - 1)^2, t0 >= 0, slope > 0."""
    a = [1 / ti for ti in t]
    b = [xi / ti for xi, ti in zip(x, t)]
    saa = sum(wi * ai * ai for wi, ai in zip(w, a))
    sab = sum(wi * ai * bi for wi, ai, bi in zip(w, a, b))
    sbb = sum(wi * bi * bi for wi, bi in zip(w, b))
    sa, sb = sum(wi * ai for wi, ai in zip(w, a)), sum(wi * bi for wi, bi in zip(w, b))
    det = saa * sbb - sab * sab
    t0, slope = ((sa * sbb - sb * sab) / det, (saa * sb - sab * sa) / det) if det > 0 \
        else (0.0, 0.0)
    if t0 < 0 or det <= 0:
        t0, slope = 0.0, sb / sbb
    if slope <= 0:  # no growth with the bytes: the largest size bounds the bandwidth
        big = max(range(len(x)), key=lambda i: x[i])
        t0 = min(t0, 0.5 * t[big])
        slope = (t[big] - t0) / x[big]
    return t0, slope


def _median(values: list[float]) -> float:
    v = sorted(values)
    mid = len(v) // 2
    return v[mid] if len(v) % 2 else 0.5 * (v[mid - 1] + v[mid])


def shrink_speedup(big_bytes, small_bytes, bandwidth_gbs, overhead_s) -> float:
    """How many times shorter a call gets when its array shrinks from ``big_bytes`` to
    ``small_bytes`` (far less than the ratio of bytes once the overhead dominates)."""
    if positive("small_bytes", small_bytes) > positive("big_bytes", big_bytes):
        raise ValueError(f"small_bytes={small_bytes} must not exceed big_bytes={big_bytes}")
    return call_time(big_bytes, bandwidth_gbs, overhead_s) / call_time(
        small_bytes, bandwidth_gbs, overhead_s)
