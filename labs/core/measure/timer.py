"""The timer: how every measurement in this package turns a callable into seconds.

``time_callable(fn, ...)`` is the one timing function (``time_ratio`` alternates two
callables through it, for a ratio a busy machine cannot skew) (GEMMs, GEMVs and STREAM here; the
working-set sweep, collectives and per-operator profiles of the later labs call it too). It
warms up, then times repetitions and returns a ``Measurement`` (median, p10/p90, quartiles,
every sample, the timer and thread count used).

Method (after /work/.library METHOD.md and common practice): warm-up for a time budget (at
least two calls: the first pays for library handles, kernel selection, page faults), then
timed repetitions, their number fixed in advance from the last warm-up call's time (never
"until it looks right"). CUDA events around each repetition on a GPU, with an untimed spin
(or the cache flush) queued before each start event so a short kernel's launch gap is not
timed; ``time.perf_counter`` on a CPU, with torch's thread count recorded. Median and
percentiles over repetitions. ``flush`` (an untimed callable run before each repetition) lets
a caller time cache-cold, as triton.testing.do_bench does with an L2-sized buffer write.
"""

from __future__ import annotations

import dataclasses
import statistics
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable, Sequence

from labs.core.measure.device import DeviceInfo, guarded, llc_bytes, import_torch, detect
from labs.core.measure.errors import Unavailable
from labs.core.physics.validate import positive, positive_int

__all__ = [
    "Measurement", "PairedRatio", "TimingDevice", "check_timing_args", "flush_bytes", "gpu_spacer",
    "l2_flusher", "resolve_device", "sample_stats", "time_callable", "time_fn", "time_ratio",
    "timed_measurement", "timed_reps", "torch_threads", "warm_up"
]

#: Bytes written to evict the GPU L2 between repetitions (as triton.testing.do_bench does).
_GPU_FLUSH_BYTES = 256 * 2**20


@contextmanager
def torch_threads(torch, threads: int | None):
    if threads is None:
        yield
        return
    saved = torch.get_num_threads()
    torch.set_num_threads(positive_int("threads", threads))
    try:
        yield
    finally:
        torch.set_num_threads(saved)

@dataclass(frozen=True)
class Measurement:
    """One timed operation. Times in seconds over ``reps`` repetitions (after warm-up)."""

    op: str  # "gemm", "gemv", "copy", "triad"
    shape: tuple[int, ...]
    precision: str
    device: str  # device name
    kind: str  # "cuda" or "cpu"
    timer: str  # "cuda events" or "time.perf_counter"
    threads: int | None  # torch threads (CPU timings); None on a GPU
    reps: int
    median_s: float
    p10_s: float
    p90_s: float
    q25_s: float
    q75_s: float
    min_s: float
    flops: float  # useful FLOPs per repetition (2MNK; 2NK for a GEMV)
    bytes: float  # compulsory bytes per repetition (labs.core.physics.formulas; STREAM convention)
    flush_l2: bool
    note: str = ""
    samples_s: tuple[float, ...] = field(default=(), repr=False)

    @property
    def achieved_tflops(self) -> float:
        """FLOP/s / 1e12 at the median (TOPS for int8)."""
        return self.flops / self.median_s / 1e12

    @property
    def effective_gbs(self) -> float:
        """Compulsory bytes / median time, GB/s."""
        return self.bytes / self.median_s / 1e9

    @property
    def spread(self) -> float:
        """(p90 - p10) / median: how noisy the repetitions were."""
        return (self.p90_s - self.p10_s) / self.median_s

    @property
    def shape_label(self) -> str:
        return "×".join(str(s) for s in self.shape)

    def as_row(self) -> dict:
        """Flat dict for tables, CSV and the ledger (times in ms)."""
        return {"op": self.op, "shape": self.shape_label, "precision": self.precision,
                "device": self.device, "timer": self.timer, "threads": self.threads,
                "reps": self.reps, "median_ms": self.median_s * 1e3, "p10_ms": self.p10_s * 1e3,
                "p90_ms": self.p90_s * 1e3, "achieved_tflops": self.achieved_tflops,
                "effective_gbs": self.effective_gbs, "flush_l2": self.flush_l2,
                "note": self.note}


@dataclass
class TimingDevice:
    """What the timing loop needs to know about the device it runs on."""

    info: DeviceInfo
    torch: object
    device: object  # torch.device

    @property
    def cuda(self) -> bool:
        return self.info.kind == "cuda"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def generator(self, seed: int):
        g = self.torch.Generator(device=self.device)
        g.manual_seed(seed)
        return g


def resolve_device(device) -> TimingDevice:
    info = detect(device)
    if not info.available:
        raise Unavailable(info.message)
    torch = import_torch()
    return TimingDevice(info, torch, torch.device(info.torch_device))


def sample_stats(samples: Sequence[float]) -> dict:
    import numpy as np

    a = np.asarray(samples, dtype=float)
    q = np.percentile(a, [10, 25, 50, 75, 90])
    return {"p10_s": float(q[0]), "q25_s": float(q[1]), "median_s": float(q[2]),
            "q75_s": float(q[3]), "p90_s": float(q[4]), "min_s": float(a.min())}


def warm_up(dev: TimingDevice, fn: Callable[[], object], warmup_s: float,
             flush: Callable[[], object] | None) -> float:
    """At least two calls (the first pays for library handles, kernel selection, page
    faults), then more until ``warmup_s`` has passed. Returns one more call's time, alone."""
    t0 = time.perf_counter()
    calls = 0
    while calls < 2 or (time.perf_counter() - t0 < warmup_s and calls < 10_000):
        fn()
        calls += 1
        dev.sync()
    if flush is not None:
        flush()
        dev.sync()
    t1 = time.perf_counter()
    fn()
    dev.sync()
    return max(time.perf_counter() - t1, 1e-7)


def timed_reps(dev: TimingDevice, fn: Callable[[], object], n: int,
                flush: Callable[[], object] | None) -> list[float]:
    """``n`` timed calls of ``fn`` (seconds each). GPU: a CUDA event pair around each call,
    one sync at the end (the flush, when asked, is queued before the start event, so it is
    not timed). CPU: time.perf_counter around each call (CPU ops return when done)."""
    if dev.cuda:
        torch = dev.torch
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        # Keep the GPU busy (untimed) while the host queues start event, kernel, end event:
        # otherwise a short kernel's launch gap lands between the events and is timed.
        spacer = flush if flush is not None else gpu_spacer(dev)
        for i in range(n):
            if spacer is not None:
                spacer()
            starts[i].record()
            fn()
            ends[i].record()
        dev.sync()
        return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)]
    out = []
    clock = time.perf_counter
    for _ in range(n):
        if flush is not None:
            flush()
        t = clock()
        fn()
        out.append(clock() - t)
    return out


def gpu_spacer(dev: TimingDevice, microseconds: float = 50.0):
    """An untimed ~50 µs GPU spin (torch.cuda._sleep) queued before each start event."""
    sleep = getattr(dev.torch.cuda, "_sleep", None)
    if sleep is None:
        return None
    cycles = int(microseconds * (dev.info.sm_clock_mhz or 2000.0))
    return lambda: sleep(cycles)


def time_fn(dev: TimingDevice, fn: Callable[[], object], *, budget_s: float, warmup_s: float,
             reps: int | None, min_reps: int, max_reps: int,
             flush: Callable[[], object] | None) -> list[float]:
    """Per-repetition times of ``fn`` in seconds: warm up, then as many repetitions as fit in
    ``budget_s`` by the last warm-up call's time (clamped to [min_reps, max_reps]), or
    ``reps`` if given."""
    one = warm_up(dev, fn, warmup_s, flush)
    n = reps if reps is not None else int(min(max(budget_s / one, min_reps), max_reps))
    return timed_reps(dev, fn, positive_int("reps", n), flush)


def l2_flusher(dev: TimingDevice, enabled: bool):
    if not enabled:
        return None
    buf = dev.torch.empty(flush_bytes(dev.info.kind) // 4, dtype=dev.torch.float32,
                          device=dev.device)
    return buf.zero_


def flush_bytes(kind: str) -> int:
    """Size of the cache-flush buffer: 256 MiB on a GPU; 2x the CPU's last-level cache
    (64 MiB .. 1 GiB) on a CPU."""
    if kind == "cuda":
        return _GPU_FLUSH_BYTES
    llc = llc_bytes() or 32 * 2**20
    return int(min(max(2 * llc, 64 * 2**20), 1 << 30))


def check_timing_args(budget_s, warmup_s, min_reps, max_reps, reps=None) -> None:
    positive("budget_s", budget_s)
    if warmup_s < 0:
        raise ValueError(f"warmup_s must be >= 0, got {warmup_s!r}")
    positive_int("min_reps", min_reps)
    positive_int("max_reps", max_reps)
    if reps is not None:
        positive_int("reps", reps)


def timed_measurement(dev: TimingDevice, fn: Callable[[], object], *, budget_s: float,
                       warmup_s: float, reps: int | None, min_reps: int, max_reps: int,
                       flush: Callable[[], object] | None, op: str, shape: Sequence[int],
                       precision: str, flops: float, nbytes: float, note: str) -> Measurement:
    """Time ``fn`` (already set up, inside the caller's thread/precision contexts) and wrap
    the samples in a Measurement."""
    samples = time_fn(dev, fn, budget_s=budget_s, warmup_s=warmup_s, reps=reps,
                       min_reps=min_reps, max_reps=max_reps, flush=flush)
    nthreads = dev.torch.get_num_threads() if not dev.cuda else None
    return Measurement(op, tuple(shape), precision, dev.info.name, dev.info.kind,
                       "cuda events" if dev.cuda else "time.perf_counter", nthreads,
                       len(samples), flops=float(flops), bytes=float(nbytes),
                       flush_l2=flush is not None, note=note, samples_s=tuple(samples),
                       **sample_stats(samples))


def time_callable(fn: Callable[[], object], *, device: str | DeviceInfo | None = None,
                  budget_s: float = 0.5, warmup_s: float = 0.1, reps: int | None = None,
                  min_reps: int = 5, max_reps: int = 1000,
                  flush: Callable[[], object] | None = None, threads: int | None = None,
                  op: str = "call", shape: Sequence[int] = (), precision: str = "",
                  flops: float = 0.0, nbytes: float = 0.0, note: str = "") -> Measurement:
    """Time ``fn()`` on ``device`` and return a Measurement: the package's one timer.

    ``fn`` takes no arguments and does the work to time on tensors already allocated (on
    ``device``: ``None`` = a CUDA GPU if torch sees one, else the CPU; or a DeviceInfo from
    ``detect``). It is warmed up for ``warmup_s`` (at least two calls), then called ``reps``
    times, or as many times as ``budget_s`` allows at the last warm-up call's speed, clamped
    to [``min_reps``, ``max_reps``]. The number of repetitions is decided before the first
    timed call, and every timed sample is returned (``samples_s``): nothing is repeated until
    it agrees with anything. ``flush``, when given, runs before each repetition, untimed
    (e.g. a buffer write that evicts the caches). ``threads`` sets torch's CPU threads for
    this call only (restored after). GPU work is timed with CUDA events, CPU work with
    ``time.perf_counter``; autograd is off while timing.

    ``flops`` and ``nbytes`` are what one call does and moves (your count): they give the
    result's ``achieved_tflops`` and ``effective_gbs``; ``op``, ``shape``, ``precision`` and
    ``note`` label it. Raises Unavailable (nothing to measure here), OutOfMemory (after
    freeing the cache), ValueError naming a bad argument; any other error from ``fn`` passes
    through unchanged.
    """
    if not callable(fn):
        raise ValueError(f"fn must be a callable taking no arguments, got {type(fn).__name__}")
    check_timing_args(budget_s, warmup_s, min_reps, max_reps, reps)
    dev = resolve_device(device)

    def run():
        with dev.torch.no_grad(), torch_threads(dev.torch, threads):
            return timed_measurement(dev, fn, budget_s=budget_s, warmup_s=warmup_s,
                                      reps=reps, min_reps=min_reps, max_reps=max_reps,
                                      flush=flush, op=op, shape=shape, precision=precision,
                                      flops=flops, nbytes=nbytes, note=note)

    return guarded(f"{op} {'x'.join(map(str, shape))} {precision}".strip(), dev.info, run)


@dataclass(frozen=True)
class PairedRatio:
    """Two callables timed in alternation (:func:`time_ratio`): ``ratio`` = the median over
    rounds of (new / old), each round timing both back to back, so a load that comes and goes
    slows both sides of a round alike. ``spread`` is the 90th over the 10th percentile of the
    rounds' ratios (1 = every round agreed); ``old`` and ``new`` pool every sample."""

    ratio: float
    ratios: tuple[float, ...]
    spread: float
    old: Measurement
    new: Measurement


def time_ratio(old: Callable[[], object], new: Callable[[], object], *,
               device: str | DeviceInfo | None = None, budget_s: float = 2.0,
               rounds: int = 8, threads: int | None = None, op: str = "pass") -> PairedRatio:
    """How many times longer ``new()`` takes than ``old()``, timed in alternation: ``rounds``
    rounds, each timing ``old`` then ``new`` with :func:`time_callable` (a share of
    ``budget_s`` each, at least 3 repetitions). Timing one after the other a minute apart lets
    a busy machine's load land on one side only; alternating puts it on both."""
    if isinstance(rounds, bool) or not isinstance(rounds, int) or not 2 <= rounds <= 100:
        raise ValueError(f"rounds must be a whole number from 2 to 100, got {rounds!r}")
    check_timing_args(budget_s, 0.05, 3, 1000)
    share = budget_s / (2 * rounds)
    olds, news = [], []
    for _ in range(rounds):
        olds.append(time_callable(old, device=device, budget_s=share, warmup_s=0.02,
                                  min_reps=3, threads=threads, op=f"old {op}"))
        news.append(time_callable(new, device=device, budget_s=share, warmup_s=0.02,
                                  min_reps=3, threads=threads, op=f"new {op}"))
    ratios = tuple(n.median_s / o.median_s for o, n in zip(olds, news))
    ranked = sorted(ratios)
    low, high = ranked[max(0, round(0.1 * (len(ranked) - 1)))], ranked[
        min(len(ranked) - 1, round(0.9 * (len(ranked) - 1)))]
    pooled = [_pooled(olds), _pooled(news)]
    return PairedRatio(statistics.median(ratios), ratios, high / low, *pooled)


def _pooled(parts: Sequence[Measurement]) -> Measurement:
    """One Measurement of every sample of ``parts`` (the same callable timed in rounds)."""
    samples = [s for m in parts for s in m.samples_s]
    return dataclasses.replace(parts[0], **sample_stats(samples), reps=len(samples),
                               samples_s=tuple(samples))
