"""The working-set sweep: read W bytes over and over, for W from 16 KiB to past the last
cache, and find the memory hierarchy's plateaus in the result (Lab 5, Part 1).

``working_set_sweep(device=None, sizes=None, budget_s=20)`` returns a ``WorkingSetSweep`` (per
size: bandwidth with its spread); ``hierarchy_levels(sweep)`` finds the plateaus from the data
(``labs.core.physics.staircase``) and names them by the cache sizes the OS (or, on a GPU, the
driver and the registry) reports. Timed by ``time_callable``, the package's one timer.

Timing traps, and how each is handled:

* **Elided or skipped reads.** The read is a library reduction (``torch.sum``), which is never
  optimised away the way a C loop whose result is unused can be; the sum of the all-ones
  buffer is checked against its known value once per size, so a read that skipped data fails
  loudly instead of reporting an impossible bandwidth.
* **First-touch page faults.** The buffer is allocated and *written* (``torch.full``) before any
  timing, so the OS maps every page first; each size then gets one untimed pass over its whole
  working set (and the timer's own warm-up) before the timed repetitions, so what is timed is
  the steady state, with the working set as cache-resident as it can be.
* **Call overhead.** A Python call into torch costs a few µs, as long as reading 100 KiB from
  a cache. So a timed call always reads about ``chunk_bytes``: a working set smaller than that
  is read R times inside one call (a stride-0 view: the same W bytes, R times), a larger one
  is read one chunk per call, the chunks taken in turn so that every byte of W is re-read
  before it is read again (the working set stays W). The per-call overhead is measured on its
  own (``labs.core.measure.effects.call_overhead_sweep``).
* **Per-core vs shared caches.** The CPU sweep runs ONE thread: it sees one core's L1 and L2
  and as much of a shared L3 as other processes leave it. ``cache_sizes()`` says which caches
  are shared; the plateau naming uses their full sizes.
* **Other processes.** On a shared machine another process can take the core mid-read, which
  only ever slows a repetition down. Following STREAM, the bandwidth of a size is from its
  fastest repetition (``gbs``); the median (``median_gbs``) and the p10-p90 spread of the
  repetitions are kept beside it, and a plateau reports the spread of its sizes.
* **Load that comes and goes.** Every size is timed in ``ROUNDS`` rounds spread over the run
  and its repetitions pooled, so one burst of load does not shape a step.
* **Budget.** Within a round, sizes are timed coarse to fine (one per octave over the whole
  range first, then the ones between: :func:`measure_order`), each with an equal share of what
  is left of the round's part of ``budget_s``; the sweep stops when the budget is spent and
  marks the sizes it never reached, so a short budget gives a coarser staircase that still
  reaches main memory.

On a CUDA GPU the same sweep runs on the GPU (CUDA events; L2 vs HBM), chunks of 64 MiB.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from labs.core.measure.caches import CacheSizes, cache_sizes, gpu_cache_sizes
from labs.core.measure.device import DeviceInfo, guarded, import_torch, check_fits, detect, fits
from labs.core.measure.errors import Unavailable
from labs.core.measure.timer import time_callable
from labs.core.physics import staircase
from labs.core.physics.validate import positive, positive_int
from labs.core.physics.units import format_bytes

__all__ = [
    "MAX_REPS", "PAST_LLC", "PAST_LLC_MIN", "Progress", "ROUNDS", "SweepPoint", "WorkingSetSweep",
    "default_sizes", "hierarchy_levels", "measure_order", "working_set_sweep"
]

Progress = Callable[[int, int, str], None]
_ELEMENT = 4  # fp32: bandwidth does not depend on the values' type; 4 B keeps sizes exact
_CHUNK = {"cpu": 4 * 2**20, "cuda": 64 * 2**20}
_MIN_BYTES = 4096
#: Repetitions per size and round at most: the fastest of 100 is a stable estimate of what the
#: level can do, and a shorter size leaves budget for the whole range.
MAX_REPS = 100
#: Every size is timed in this many rounds spread over the run (its samples pooled), so a
#: burst of load from other processes during one round does not shape the staircase.
ROUNDS = 2


@dataclass(frozen=True)
class SweepPoint:
    """One working-set size. Bytes; GB/s = 1e9 B/s."""

    bytes: int
    status: str  # "ok", "skipped: time budget", "refused: ..." 
    gbs: float | None = None  # from the fastest repetition (STREAM's convention)
    median_gbs: float | None = None
    spread: float | None = None  # (p90 - p10) / median of the repetitions' times
    reps: int = 0
    reads_per_call: int = 1  # >1: the working set is read this many times in one call
    call_bytes: float = 0.0  # bytes one timed call reads

    def as_row(self) -> dict:
        return {"bytes": self.bytes, "KiB": self.bytes / 1024, "status": self.status,
                "gbs": self.gbs, "median_gbs": self.median_gbs, "spread": self.spread,
                "reps": self.reps, "reads_per_call": self.reads_per_call,
                "call_bytes": self.call_bytes}


@dataclass(frozen=True)
class WorkingSetSweep:
    """What ``working_set_sweep`` measured, and on what."""

    device: str
    kind: str  # "cpu" or "cuda"
    threads: int | None
    points: tuple[SweepPoint, ...]
    caches: CacheSizes
    budget_s: float
    elapsed_s: float
    chunk_bytes: int
    load_average: tuple[float, float, float] | None = None
    note: str = ""
    registry_key: str | None = None
    extra: dict = field(default_factory=dict)

    @property
    def measured(self) -> list[SweepPoint]:
        return [p for p in self.points if p.status == "ok"]

    @property
    def skipped(self) -> list[SweepPoint]:
        return [p for p in self.points if p.status != "ok"]

    def rows(self) -> list[dict]:
        return [p.as_row() for p in self.points]

    @property
    def memory_name(self) -> str:
        return "HBM" if self.kind == "cuda" else "DRAM"


#: How far past the largest reported cache the CPU sweep reaches (8x, at least 64 MiB; at most
#: 2 GiB unless 4x the cache needs more): main memory's plateau must be made of several sizes
#: well past the last-level cache, or the graded L2 / DRAM ratio depends on where the plateau
#: finder puts the last step (a victim or shared L3 still serves part of a working set just
#: past its size).
PAST_LLC, PAST_LLC_MIN = 8, 4


def default_sizes(info: DeviceInfo, caches: CacheSizes | None = None) -> list[int]:
    """Two sizes per octave (x sqrt 2, rounded to 4 KiB) from 16 KiB (CPU; 256 KiB on a GPU)
    to ``PAST_LLC`` (8) x the largest cache: on a CPU at least 64 MiB and at most 2 GiB, or
    ``PAST_LLC_MIN`` (4) x the largest cache where that is more (a server's shared L3 can be
    hundreds of MiB); on a GPU at least 512 MiB and at most 2 GiB. Past the last level, so
    main memory gets a plateau of its own, of sizes no cache can hold."""
    caches = caches if caches is not None else (
        gpu_cache_sizes(info) if info.kind == "cuda" else cache_sizes())
    largest = max(caches.as_mapping().values(), default=32 * 2**20)
    if info.kind == "cuda":
        lo, hi = 256 * 2**10, min(max(PAST_LLC * largest, 512 * 2**20), 2 * 2**30)
    else:
        lo = 16 * 2**10
        hi = max(64 * 2**20, min(PAST_LLC * largest, max(2 * 2**30, PAST_LLC_MIN * largest)))
    out, k = [], 0
    while True:
        v = int(round(lo * 2 ** (k / 2) / 4096)) * 4096
        if v > hi:
            break
        out.append(v)
        k += 1
    return out


def _check_sizes(sizes) -> list[int]:
    try:
        vals = [positive_int("sizes", s) for s in sizes]
    except TypeError:
        raise ValueError(f"sizes must be a list of byte counts, got {sizes!r}") from None
    if not vals:
        raise ValueError("sizes must not be empty")
    for v in vals:
        if v < _MIN_BYTES or v % _ELEMENT:
            raise ValueError(f"sizes must be multiples of {_ELEMENT} bytes of at least "
                             f"{_MIN_BYTES} B, got {v}")
    return sorted(set(vals))


def _load_average():
    try:
        return tuple(round(x, 2) for x in os.getloadavg())
    except (OSError, AttributeError):
        return None


def _reader(torch, buf, w_elems: int, chunk_elems: int):
    """(fn, reads_per_call, elements per call, untimed pre-pass calls, expected sum): fn reads
    the first ``w_elems`` of ``buf``: R times per call when small, one chunk per call in turn
    when large (see the module doc)."""
    if w_elems <= chunk_elems:
        r = max(1, chunk_elems // w_elems)
        view = buf[:w_elems].expand(r, w_elems)  # stride 0: the same bytes, r times
        return (lambda: torch.sum(view)), r, r * w_elems, 1, float(r * w_elems)
    n_chunks = -(-w_elems // chunk_elems)  # equal chunks covering all of W (ceil division)
    size = w_elems // n_chunks
    chunks = [buf[i * size:(i + 1) * size] for i in range(n_chunks)]
    state = {"i": 0}

    def fn():
        c = chunks[state["i"]]
        state["i"] = (state["i"] + 1) % len(chunks)
        return torch.sum(c)
    return fn, 1, size, n_chunks, float(size)


def working_set_sweep(device: str | DeviceInfo | None = None, sizes: Sequence[int] | None = None,
                      budget_s: float = 20.0, *, progress: Progress | None = None,
                      chunk_bytes: int | None = None, threads: int | None = 1) -> WorkingSetSweep:
    """Bandwidth of re-reading W bytes, for every W in ``sizes`` (bytes; default
    :func:`default_sizes`), within ``budget_s`` seconds (see the module doc for the method).
    ``threads`` (CPU): torch threads while timing, 1 by default (one core's caches).
    Raises Unavailable (no torch / WASM), DoesNotFit (the largest size is refused before
    allocating), OutOfMemory; ValueError naming a bad argument."""
    budget = positive("budget_s", budget_s)
    info = detect(device)
    if not info.available:
        raise Unavailable(info.message)
    caches = gpu_cache_sizes(info) if info.kind == "cuda" else cache_sizes()
    todo = _check_sizes(sizes) if sizes is not None else default_sizes(info, caches)
    chunk = positive_int("chunk_bytes", chunk_bytes) if chunk_bytes else _CHUNK[info.kind]
    chunk_elems = max(chunk // _ELEMENT, 1)
    if sizes is None:  # the default reaches far past the last cache: trim it to free memory
        while len(todo) > 2 and not fits(max(todo), info)[0]:
            todo.pop()
    check_fits(max(todo), info)
    torch = import_torch()
    t0 = time.perf_counter()
    cpu_threads = threads if info.kind == "cpu" else None

    def run():
        buf = torch.full((max(todo) // _ELEMENT,), 1.0, dtype=torch.float32,
                         device=info.torch_device)  # written now: pages mapped before timing
        samples: dict[int, list[float]] = {w: [] for w in todo}
        shape: dict[int, tuple[int, float]] = {}
        order = measure_order(todo)
        total = ROUNDS * len(order)
        for rnd in range(ROUNDS):
            end = budget * (rnd + 1) / ROUNDS  # each round gets its share of the budget
            # sizes a cut-short round never reached go first in the next one
            order = [w for w in order if not samples[w]] + [w for w in order if samples[w]]
            for i, w in enumerate(order):
                spent = time.perf_counter() - t0
                if spent > (end if rnd + 1 < ROUNDS else budget) and any(samples.values()):
                    break  # (the first size always runs: a sweep of nothing helps nobody)
                if progress is not None:
                    progress(rnd * len(order) + i, total,
                             f"{_label(w)} working set (round {rnd + 1} of {ROUNDS})")
                share = max(0.8 * (end - spent) / (len(order) - i), 0.01)
                got, reps_in_call, call_bytes = _time_size(torch, info, buf, w, chunk_elems,
                                                           share, cpu_threads)
                samples[w] += got
                shape[w] = (reps_in_call, call_bytes)
        if progress is not None:
            progress(total, total, "done")
        return [_point(w, samples[w], *shape[w]) if samples[w]
                else SweepPoint(w, "skipped: time budget") for w in todo]

    points = guarded("working-set sweep", info, run)
    return WorkingSetSweep(info.name, info.kind, cpu_threads, tuple(points), caches, budget,
                           time.perf_counter() - t0, chunk, _load_average(),
                           registry_key=info.registry_key)


def measure_order(sizes: Sequence[int]) -> list[int]:
    """Coarse to fine: every other size first (one per octave, over the whole range), then the
    ones between. A sweep cut short by its budget keeps a coarser staircase that still reaches
    main memory, rather than a fine one that stops inside the caches."""
    s = sorted(sizes)
    return s[::2] + s[1::2]


def _time_size(torch, info, buf, w: int, chunk_elems: int, share_s: float,
               threads) -> tuple[list[float], int, float]:
    """One round of one size: (seconds per call, reads of W per call, bytes per call)."""
    fn, reps_in_call, elems, prepass, expect = _reader(torch, buf, w // _ELEMENT, chunk_elems)
    for _ in range(prepass):  # one untimed pass over the whole working set
        fn()
    got = float(fn())  # a read that skipped data would not sum to this
    if abs(got - expect) > 1e-3 * expect:
        raise RuntimeError(f"the {w}-byte read summed to {got}, expected {expect}: data was "
                           "skipped, the bandwidth would be wrong")
    m = time_callable(fn, device=info, budget_s=max(0.7 * share_s, 0.01),
                      warmup_s=min(0.02, 0.1 * share_s), min_reps=5, max_reps=MAX_REPS,
                      threads=threads, op="read", shape=(w,), nbytes=elems * _ELEMENT)
    return list(m.samples_s), reps_in_call, float(elems * _ELEMENT)


def _point(w: int, samples: list[float], reps_in_call: int, call_bytes: float) -> SweepPoint:
    import numpy as np

    q10, q50, q90 = np.percentile(samples, [10, 50, 90])
    return SweepPoint(w, "ok", call_bytes / min(samples) / 1e9, call_bytes / q50 / 1e9,
                      float((q90 - q10) / q50), len(samples), reps_in_call, call_bytes)


def _label(nbytes: float) -> str:
    return format_bytes(nbytes, binary=True)


def hierarchy_levels(sweep: WorkingSetSweep, *, caches: dict | None = None,
                     **options) -> list[staircase.Plateau]:
    """The plateaus of a sweep, found from its data and named by ``caches`` ({name: bytes};
    default: what the sweep's OS or GPU reported), main memory ("DRAM"/"HBM") made of the
    sizes past the largest (``staircase.levels``; ``options`` go to ``find_plateaus``).
    ValueError when fewer than two sizes were measured."""
    if not isinstance(sweep, WorkingSetSweep):
        raise ValueError(f"sweep must be a WorkingSetSweep, got {type(sweep).__name__}")
    pts = sweep.measured
    if len(pts) < 2:
        raise ValueError(f"the sweep measured {len(pts)} size(s): at least 2 are needed to "
                         "find plateaus (raise budget_s)")
    names = sweep.caches.as_mapping() if caches is None else caches
    return staircase.levels([p.bytes for p in pts], [p.gbs for p in pts], names,
                            [p.spread for p in pts], memory_name=sweep.memory_name, **options)
