"""The course's reference machine: one recorded run of Lab 5's instruments (measured, not a
spec sheet).

``benchmarks/bench_hierarchy.py --write-reference`` wrote the values below on the machine named
in ``MACHINE`` on ``DATE``, one thread, with the load average ``LOAD_AVERAGE`` (other jobs shared
its cores: a quieter machine reads higher, main memory most). Lab 5 draws this staircase before
a student measures their own and computes its instructor-copy answers from it; a student's
comparisons use their own measurement. Re-record on a quiet machine with that script (it also
writes the run's JSON to ``benchmarks/results/``) and commit both together.

Units: bytes, GB/s (1e9 B/s), seconds, GFLOP/s.
"""

from __future__ import annotations

from labs.core.physics import hierarchy as _hierarchy
from labs.core.physics import staircase as _staircase

MACHINE = 'AMD EPYC'
DATE = '2026-11-23'
TORCH = '2.13.0+cpu'
LOAD_AVERAGE = (17.49, 17.47, 16.15)
CACHES = {'L1d': 32768.0, 'L2': 524288.0, 'L3': 33554432.0}
CACHE_SCOPES = {'L1d': 'per core', 'L2': 'per core', 'L3': 'shared by 2 CPUs'}
CACHE_SOURCE = 'Linux sysfs (/sys/devices/system/cpu/cpu0/cache)'
MEMORY_BYTES = 25276063744.0
SWEEP = ((16384, 128.53, 0.741), (24576, 146.22, 0.899), (32768, 77.4, 0.458), (45056, 91.84, 0.612), (65536, 88.96, 0.868), (94208, 90.51, 0.789), (131072, 89.09, 0.926), (184320, 83.57, 0.52), (262144, 81.31, 0.983), (372736, 79.23, 0.845), (524288, 70.79, 0.741), (741376, 58.9, 0.793), (1048576, 57.72, 0.641), (1482752, 53.33, 0.793), (2097152, 61.2, 0.829), (2965504, 51.43, 0.711), (4194304, 65.3, 1.549), (5931008, 51.9, 4.596), (8388608, 53.89, 2.894), (11862016, 28.75, 27.363), (16777216, 22.57, 24.332), (23728128, 16.57, 30.695), (33554432, 13.97, 18.328), (47452160, 12.72, 28.26), (67108864, 12.59, 24.583), (134217728, 13.79, 19.524), (268435456, 14.21, 32.529))
GEMM_FP32_GFLOPS = 62.58
OVERHEAD_BANDWIDTH_GBS = 56.04
CALL_OVERHEAD_S = 4.518e-06
OVERHEAD_ROWS = ((256, 4.518e-06), (1024, 4.668e-06), (4096, 3.978e-06), (16384, 4.929e-06), (65536, 4.999e-06), (262144, 1.0309e-05), (1048576, 3.0557e-05), (4194304, 0.000100985))
SAWTOOTH_TILE = 16
SAWTOOTH = ((32, 16.48), (36, 19.2), (40, 25.86), (44, 28.34), (48, 34.12), (52, 35.94), (56, 44.1), (60, 40.87), (64, 53.02), (68, 50.74), (72, 54.39), (76, 51.37), (80, 62.82), (84, 59.45), (88, 61.86), (92, 59.04), (96, 71.62), (100, 63.55), (104, 76.15), (108, 62.46), (112, 74.61), (116, 66.55), (120, 69.03), (124, 66.12), (128, 74.58))


def source() -> str:
    """One line naming the run: machine, date, threads, load."""
    load = ", ".join(f"{x:g}" for x in LOAD_AVERAGE) or "unknown"
    return (f"measured with labs.core.measure on {MACHINE}, {DATE}, one thread, torch {TORCH}, "
            f"load average {load} (benchmarks/bench_hierarchy.py)")


def plateaus() -> list[_staircase.Plateau]:
    """The recorded sweep's plateaus, found and named as a student's are."""
    found = _staircase.find_plateaus([p[0] for p in SWEEP], [p[1] for p in SWEEP],
                                     [p[2] for p in SWEEP])
    return _staircase.name_plateaus(found, CACHES)


def as_hierarchy() -> _hierarchy.Hierarchy:
    """Levels (OS cache sizes, plateau bandwidths), compute roof = the one-thread fp32 GEMM."""
    return _hierarchy.from_plateaus(f"Reference machine ({MACHINE})", CACHES, plateaus(),
                                    MEMORY_BYTES, GEMM_FP32_GFLOPS / 1e3, source=source(),
                                    key="reference")
