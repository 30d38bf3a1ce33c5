"""The course's reference machine: one recorded run of Lab 5's instruments (measured, not a
spec sheet).

``benchmarks/bench_hierarchy.py --write-reference`` wrote the values below on the machine named
in ``MACHINE`` on ``DATE``, one thread, with the load average ``LOAD_AVERAGE`` (other jobs shared
its cores: a quieter machine reads higher, main memory most). Lab 5 draws this staircase before
a student measures their own and computes its instructor-copy answers from it; a student's
comparisons use their own measurement. Re-record on a quiet machine with that script (it also
writes the run's JSON to ``benchmarks/results/``) and commit both together.

``CALL_OVERHEAD_S`` and ``OVERHEAD_BANDWIDTH_GBS`` are the per-call line fitted to
``OVERHEAD_ROWS`` (``quantization.fit_call_time``, robust, on relative error); they were
re-derived from the same recorded rows when that fit replaced the old one (smallest size's time,
bandwidth from the largest size alone), nothing re-measured. ``plateaus()`` finds and names the
plateaus as a student's are (``staircase.levels``: main memory only past the largest cache).

Units: bytes, GB/s (1e9 B/s), seconds, GFLOP/s.
"""

from __future__ import annotations

from labs.core.physics import hierarchy as _hierarchy
from labs.core.physics import quantization as _quantization
from labs.core.physics import staircase as _staircase

__all__ = [
    "CACHES", "CACHE_SCOPES", "CACHE_SOURCE", "CALL_OVERHEAD_S", "DATE", "GEMM_FP32_GFLOPS",
    "LOAD_AVERAGE", "MACHINE", "MEMORY_BYTES", "OVERHEAD_BANDWIDTH_GBS", "OVERHEAD_ROWS",
    "SAWTOOTH", "SAWTOOTH_TILE", "SWEEP", "TORCH", "as_hierarchy", "call_time_ratio", "plateaus",
    "sawtooth_relative", "source"
]

MACHINE = 'AMD EPYC'
DATE = '2026-11-23'
TORCH = '2.13.0+cpu'
LOAD_AVERAGE = (6.64, 5.65, 6.36)
CACHES = {'L1d': 32768.0, 'L2': 524288.0, 'L3': 33554432.0}
CACHE_SCOPES = {'L1d': 'per core', 'L2': 'per core', 'L3': 'shared by 2 CPUs'}
CACHE_SOURCE = 'Linux sysfs (/sys/devices/system/cpu/cpu0/cache)'
MEMORY_BYTES = 25276063744.0
SWEEP = ((16384, 149.95, 0.032), (24576, 156.42, 0.371), (32768, 158.52, 0.029),
 (45056, 98.32, 0.078), (65536, 96.8, 0.165), (94208, 97.6, 0.046), (131072, 97.07, 0.047),
 (184320, 96.37, 0.056), (262144, 95.84, 0.083), (372736, 92.59, 0.32),
 (524288, 79.09, 0.363), (741376, 63.75, 0.453), (1048576, 57.82, 0.222),
 (1482752, 55.77, 0.294), (2097152, 57.35, 0.172), (2965504, 56.27, 0.283),
 (4194304, 57.48, 0.215), (5931008, 55.79, 0.325), (8388608, 54.21, 0.374),
 (11862016, 52.99, 1.751), (16777216, 47.04, 0.987), (23728128, 27.54, 0.448),
 (33554432, 19.96, 0.279), (47452160, 17.03, 0.295), (67108864, 16.85, 0.206),
 (94904320, 16.77, 0.349), (134217728, 16.83, 0.391), (189812736, 17.0, 0.276),
 (268435456, 17.3, 0.261))
GEMM_FP32_GFLOPS = 91.84
CALL_OVERHEAD_S = 1.974e-06
OVERHEAD_BANDWIDTH_GBS = 78.6
OVERHEAD_ROWS = ((256, 2.014e-06), (1024, 2.004e-06), (4096, 2.054e-06), (16384, 2.184e-06),
 (65536, 2.715e-06), (262144, 5.079e-06), (1048576, 2.1891e-05),
 (4194304, 5.7834e-05))
SAWTOOTH_TILE = 16
SAWTOOTH = ((64, 68.14), (68, 63.02), (72, 68.61), (76, 63.55), (80, 77.72), (84, 71.23),
 (88, 75.91), (92, 70.37), (96, 83.19), (100, 76.37), (104, 80.08), (108, 74.4),
 (112, 86.11), (116, 80.0), (120, 83.65), (124, 77.77), (128, 88.53), (132, 82.35),
 (136, 85.53), (140, 79.62), (144, 90.37), (148, 83.7), (152, 87.12), (156, 81.13),
 (160, 91.33), (164, 85.29), (168, 88.42), (172, 82.06), (176, 91.76), (180, 85.91),
 (184, 88.6), (188, 82.89), (192, 92.4))


def source() -> str:
    """One line naming the run: machine, date, threads, load."""
    load = ", ".join(f"{x:g}" for x in LOAD_AVERAGE) or "unknown"
    return (f"measured with labs.core.measure on {MACHINE}, {DATE}, one thread, torch {TORCH}, "
            f"load average {load} (benchmarks/bench_hierarchy.py)")


def plateaus() -> list[_staircase.Plateau]:
    """The recorded sweep's plateaus, found and named as a student's are."""
    return _staircase.levels([p[0] for p in SWEEP], [p[1] for p in SWEEP], CACHES,
                             [p[2] for p in SWEEP])


def as_hierarchy() -> _hierarchy.Hierarchy:
    """Levels (OS cache sizes, plateau bandwidths), compute roof = the one-thread fp32 GEMM."""
    return _hierarchy.from_plateaus(f"Reference machine ({MACHINE})", CACHES, plateaus(),
                                    MEMORY_BYTES, GEMM_FP32_GFLOPS / 1e3, source=source(),
                                    key="reference")


def call_time_ratio(big_bytes: int, small_bytes: int) -> float:
    """The recorded time per call of a tensor of ``big_bytes`` over that of ``small_bytes``
    (both sizes of ``OVERHEAD_ROWS``): how much faster the smaller call ran."""
    rows = dict(OVERHEAD_ROWS)
    for name, size in (("big_bytes", big_bytes), ("small_bytes", small_bytes)):
        if isinstance(size, bool) or not isinstance(size, (int, float)) or size not in rows:
            raise KeyError(f"{name}={size!r} is not a recorded size: one of "
                           f"{', '.join(f'{s:g}' for s in rows)}")
    return rows[big_bytes] / rows[small_bytes]


def sawtooth_relative() -> tuple[list[int], list[float], list[float]]:
    """The recorded GEMM sawtooth as sizes N and the measured and modelled throughput of each
    N relative to the tile multiple at or below it (one thread: ``SAWTOOTH_TILE`` wide
    micro-kernels, :func:`quantization.sawtooth_relative` with ``per_tile``)."""
    sizes = [n for n, _ in SAWTOOTH]
    measured, modelled = _quantization.sawtooth_relative(
        sizes, [gflops for _, gflops in SAWTOOTH], SAWTOOTH_TILE, 1, per_tile=True)
    return sizes, measured, modelled
