"""Two measured effects one roofline misses (Lab 5, Part 4); the predictions are in
``labs.core.physics.quantization``.

* ``call_overhead_sweep``: time per call of reading a small array ONCE per call (the way a
  Python program calls a library), from a few hundred bytes to a few MiB. Below some size the
  time stops shrinking with the bytes: a fixed cost per call (Python, dispatch, a kernel
  launch) sets it, not any memory level's bandwidth. The sweep of ``working_set`` hides this
  on purpose (its calls read ~4 MiB each); this one shows it.
* ``gemm_sawtooth``: square GEMM throughput over N in steps smaller than the tile, on a GPU
  (bf16; 128 x 128 tiles in waves of one per SM) or on one CPU core (fp32; the BLAS
  micro-kernel's block), next to the quantisation model's prediction.

Both time through ``time_callable`` (directly, or via ``cases.time_gemm``) and report the
fastest repetition beside the median: on a shared machine other processes only slow a
repetition down.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Sequence

from labs.core.measure.cases import time_gemm
from labs.core.measure.device import DeviceInfo, guarded, import_torch, detect
from labs.core.measure.errors import Unavailable
from labs.core.measure.timer import time_callable
from labs.core.physics import fusion
from labs.core.physics import quantization
from labs.core.physics.validate import positive, positive_int

__all__ = [
    "OVERHEAD_SIZES", "OverheadSweep", "Progress", "Sawtooth", "call_overhead_sweep",
    "default_sawtooth_sizes", "gemm_sawtooth", "simd_fp32_lanes"
]

Progress = Callable[[int, int, str], None]


def _device(device) -> DeviceInfo:
    info = detect(device)
    if not info.available:
        raise Unavailable(info.message)
    return info


def _tick(progress, done, total, label):
    if progress is not None:
        progress(done, total, label)


# --- fixed cost per call --------------------------------------------------------------------

#: 256 B ... 4 MiB, x2 steps: from far below to far above the overhead crossover, enough sizes
#: that the robust fit (``quantization.fit_call_time``) sees the line through several of them.
OVERHEAD_SIZES = tuple(256 * 2**k for k in range(15))


@dataclass(frozen=True)
class OverheadSweep:
    """Time per call vs bytes read once per call. Seconds, bytes, GB/s."""

    device: str
    rows: tuple[dict, ...]  # bytes, median_s, p10_s, p90_s, min_s, reps
    overhead_s: float  # fitted: overhead + bytes / bandwidth through the median times
    bandwidth_gbs: float  # (quantization.fit_call_time: relative error, robust to outliers)

    @property
    def crossover_bytes(self) -> float:
        return quantization.overhead_crossover_bytes(self.bandwidth_gbs, self.overhead_s)


def call_overhead_sweep(device: str | DeviceInfo | None = None,
                        sizes: Sequence[int] | None = None, budget_s: float = 4.0, *,
                        progress: Progress | None = None) -> OverheadSweep:
    """Median time of ``torch.sum`` over an array of each size (bytes, fp32), one read per
    call, one thread on a CPU. Raises Unavailable; ValueError naming a bad argument."""
    budget = positive("budget_s", budget_s)
    todo = sorted({positive_int("sizes", s) for s in (sizes or OVERHEAD_SIZES)})
    if len(todo) < 2 or todo[0] < 4:
        raise ValueError("sizes must hold at least two byte counts >= 4")
    info = _device(device)
    torch = import_torch()

    def run():
        buf = torch.full((max(todo) // 4,), 1.0, dtype=torch.float32, device=info.torch_device)
        rows = []
        for i, w in enumerate(todo):
            _tick(progress, i, len(todo), f"{w:,} B per call")
            view = buf[:max(w // 4, 1)]
            m = time_callable(lambda v=view: torch.sum(v), device=info,
                              budget_s=budget / len(todo) * 0.8, warmup_s=0.01, min_reps=20,
                              max_reps=2000, threads=1 if info.kind == "cpu" else None,
                              op="read once", shape=(w,), nbytes=w)
            rows.append({"bytes": w, "median_s": m.median_s, "p10_s": m.p10_s,
                         "p90_s": m.p90_s, "min_s": m.min_s, "reps": m.reps})
        _tick(progress, len(todo), len(todo), "done")
        return rows

    rows = guarded("call-overhead sweep", info, run)
    over, bw = quantization.fit_call_time([r["bytes"] for r in rows], [r["median_s"] for r in rows])
    return OverheadSweep(info.name, tuple(rows), over, bw)


# --- quantisation ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Sawtooth:
    """Square GEMM throughput over N, measured and predicted (relative to the best)."""

    device: str
    kind: str
    precision: str
    tile: int
    units: int  # SMs, or 1 (one CPU thread)
    rows: tuple[dict, ...]  # n, status, tflops, median_tflops, relative, predicted
    tile_note: str

    @property
    def measured(self) -> list[dict]:
        return [r for r in self.rows if r["status"] == "ok"]

    def dips(self) -> tuple[float | None, float | None]:
        """(measured, predicted) median throughput just past a tile boundary over the
        throughput at it: N = kT + T/4 against N = kT, over every k measured. None where no
        such pair was measured."""
        by = {r["n"]: r for r in self.measured}
        pairs = [(by[n], by[n + self.tile // 4]) for n in by
                 if n % self.tile == 0 and n + self.tile // 4 in by]
        if not pairs:
            return None, None
        import statistics

        meas = statistics.median(b["tflops"] / a["tflops"] for a, b in pairs)
        pred = statistics.median(quantization.quantization(b["n"], b["n"], self.tile, self.units).efficiency
                                 / quantization.quantization(a["n"], a["n"], self.tile, self.units).efficiency
                                 for a, b in pairs)
        return meas, pred


def simd_fp32_lanes(torch) -> int:
    """fp32 lanes of the vector unit torch uses on this CPU (AVX-512: 16, AVX2: 8, else 4)."""
    try:
        cap = str(torch.backends.cpu.get_cpu_capability()).upper()
    except Exception:
        cap = ""
    return 16 if "AVX512" in cap else 8 if "AVX2" in cap else 4


def default_sawtooth_sizes(tile: int, kind: str) -> list[int]:
    """CPU: 4T ... 12T in steps of T/4 (each tile boundary crossed eight times, sizes large
    enough that the call overhead stays small); GPU: 1024 ... 3072 in steps of T/2 (several
    wave boundaries of a 100-plus-SM GPU)."""
    if kind == "cuda":
        return list(range(1024, 3072 + 1, max(tile // 2, 1)))
    return list(range(4 * tile, 12 * tile + 1, max(tile // 4, 1)))


def _relative(rows: list[dict], tile: int, units: int, *, per_tile: bool) -> None:
    """Add ``relative`` (measured) and ``predicted`` to the measured rows
    (``quantization.sawtooth_relative``)."""
    ok = [r for r in rows if r["status"] == "ok"]
    rel, pred = quantization.sawtooth_relative([r["n"] for r in ok], [r["tflops"] for r in ok], tile,
                                    units, per_tile=per_tile)
    for r, a, b in zip(ok, rel, pred):
        r["relative"], r["predicted"] = a, b


def gemm_sawtooth(device: str | DeviceInfo | None = None, sizes: Sequence[int] | None = None,
                  budget_s: float = 10.0, *, precision: str | None = None,
                  progress: Progress | None = None) -> Sawtooth:
    """Time N x N x N GEMMs over ``sizes`` (default :func:`default_sawtooth_sizes`) and put the
    quantisation model beside them: GPU bf16 with ``quantization.GPU_GEMM_TILE`` tiles and one
    unit per SM; CPU fp32 on ONE thread with ``quantization.cpu_gemm_tile`` (an assumption the
    data checks). ``relative`` and ``predicted``: see :func:`_relative`. Stops when the budget
    is spent (rows say "skipped: time budget")."""
    budget = positive("budget_s", budget_s)
    info = _device(device)
    torch = import_torch()
    cuda = info.kind == "cuda"
    p = precision or ("bf16" if cuda else "fp32")
    if cuda:
        tile = quantization.GPU_GEMM_TILE
        units = info.sm_count or (fusion.onchip(info.registry_key).sms if info.registry_key else 1)
        note = (f"{tile}×{tile} output tiles (a stated model of cuBLAS's choice), one per SM "
                f"at a time ({units} SMs)")
    else:
        lanes = simd_fp32_lanes(torch)
        tile, units = quantization.cpu_gemm_tile(lanes), 1
        note = (f"assumed micro-kernel width {tile} (two {lanes}-lane fp32 vector registers); "
                "one thread")
    todo = [positive_int("sizes", s) for s in (sizes or default_sawtooth_sizes(tile, info.kind))]
    t0, rows = time.perf_counter(), []
    for i, n in enumerate(todo):
        if time.perf_counter() - t0 > budget:
            rows += [{"n": v, "status": "skipped: time budget"} for v in todo[i:]]
            break
        _tick(progress, i, len(todo), f"N = {n}")
        share = (budget - (time.perf_counter() - t0)) / (len(todo) - i)
        m = time_gemm(n, n, n, p, device=info, budget_s=max(0.6 * share, 0.005),
                      warmup_s=min(0.02, 0.1 * share), threads=None if cuda else 1)
        rows.append({"n": n, "status": "ok", "tflops": m.flops / m.min_s / 1e12,
                     "median_tflops": m.achieved_tflops, "reps": m.reps})
    _tick(progress, len(todo), len(todo), "done")
    _relative(rows, tile, units, per_tile=not cuda)
    return Sawtooth(info.name, info.kind, p, tile, units, tuple(rows), note)
