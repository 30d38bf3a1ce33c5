"""Checking the timer against an independent reference timer, interleaved in the same run.

``compare_with_reference(m, n, k, precision)`` times the same GEMM (same tensors) with this
package's timer and with torch.utils.benchmark (CPU; GPU without triton) or
triton.testing.do_bench (GPU), alternating so both see the same load, and returns both
medians, the samples, and the noise floor of the comparison (``resolution``).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Callable, Sequence

from labs.core.measure.cases import (GEMM_PRECISIONS, _check_precision_supported, _gemm_case,
                                     _matmul_mode, _precision, estimate_bytes, gemm_cost)
from labs.core.measure.device import DeviceInfo, _guarded, check_fits
from labs.core.measure.timer import (Measurement, _Dev, _flusher, _resolve, _stats, _threads,
                                     _time_fn, _timed_reps, _warm_up)
from labs.core.physics._validate import positive, positive_int


@dataclass(frozen=True)
class TimerCheck:
    """This module's median vs a reference timer's, measured interleaved in the same run."""

    measurement: Measurement  # ours: every sample of the attempt returned
    ours_s: float  # our median
    reference_s: float  # the reference timer's median
    reference: str  # which reference timer, and how it was interleaved
    samples: int  # interleaved pairs (per-call mode) or rounds (per-round mode)
    attempts: int
    resolution: float  # 95% bootstrap half-width of ours/reference: what the noise allows

    @property
    def rel_diff(self) -> float:
        """ours / reference - 1."""
        return self.ours_s / self.reference_s - 1

    @property
    def reference_tflops(self) -> float:
        return self.measurement.flops / self.reference_s / 1e12


def _has_triton() -> bool:
    try:
        import triton.testing  # noqa: F401, PLC0415

        return True
    except Exception:
        return False


def _reference_round(dev: _Dev, fn: Callable[[], object],
                     budget_s: float) -> tuple[list[float], str, int]:
    """Seconds per call of ``fn`` by an independent timer over about ``budget_s``: its
    samples, its name, and how many calls each sample averages (do_bench: 1;
    blocked_autorange: its block size)."""
    torch = dev.torch
    if dev.cuda and _has_triton():
        from triton.testing import do_bench  # noqa: PLC0415

        rep = max(int(budget_s * 1e3), 50)
        try:
            ms = list(do_bench(fn, warmup=25, rep=rep, return_mode="all"))
        except (TypeError, ValueError):  # older triton: no "all"
            ms = [do_bench(fn, warmup=25, rep=rep, return_mode="median")]
        return [x / 1e3 for x in ms], "triton.testing.do_bench (L2 flushed)", 1
    from torch.utils import benchmark  # noqa: PLC0415

    t = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    r = t.blocked_autorange(min_run_time=budget_s)
    sync = ", CUDA synchronized" if dev.cuda else f", {torch.get_num_threads()} threads"
    return (list(r.times), f"torch.utils.benchmark.Timer.blocked_autorange ({sync[2:]})",
            int(r.number_per_run))


def _block_means(samples: Sequence[float], number: int) -> list[float]:
    """Per-call samples averaged in consecutive blocks of ``number`` calls, as
    blocked_autorange reports them (a mean of a block is not a median of calls: on a loaded
    machine a few preempted calls pull a block's mean up)."""
    if number <= 1:
        return list(samples)
    full = len(samples) // number
    if full == 0:
        return [sum(samples) / len(samples)]
    return [sum(samples[i * number:(i + 1) * number]) / number for i in range(full)]


#: On a CPU, calls at least this long are compared call by call (see compare_with_reference):
#: Timer.timeit(1)'s own overhead (~1 µs) is then under 1%.
_PER_CALL_MIN_S = 1e-4


def compare_with_reference(m, n, k, precision: str = "fp32", *,
                           device: str | DeviceInfo | None = None, rounds: int = 9,
                           budget_s: float = 0.1, tolerance: float = 0.05, retries: int = 1,
                           threads: int | None = None) -> TimerCheck:
    """Time the same GEMM (same tensors) with this module's timer and a reference timer in
    the same run, interleaved, and compare the two medians.

    CPU: the reference is torch.utils.benchmark.Timer with the same thread count (``threads``,
    default torch's current). For calls of 0.1 ms or more the two timers alternate call by
    call (Timer.timeit(1), which is what blocked_autorange samples at number=1, then ours,
    order swapped each pair, each timed call after two untimed ones as timeit does) for about ``2 x rounds x budget_s`` seconds: on a shared machine
    both see the same load. Shorter calls: ``rounds`` rounds of blocked_autorange and ours
    (``budget_s`` each, alternating which goes first), ours averaged in blocks of the size
    blocked_autorange chose (its samples are block means); medians of the pooled samples.
    GPU: rounds of triton.testing.do_bench (ours then flushes L2 as do_bench does) when triton
    imports, else of torch.utils.benchmark.Timer (which synchronizes the GPU).
    If the medians differ by more than ``tolerance`` the comparison is repeated (up to
    ``retries`` times) and the closest attempt returned (``attempts`` says how many ran).
    ``resolution`` is the 95% bootstrap half-width of the ratio: the noise floor of this run.
    """
    m, n, k = positive_int("m", m), positive_int("n", n), positive_int("k", k)
    p = _precision(precision, GEMM_PRECISIONS)
    rounds = positive_int("rounds", rounds)
    positive("budget_s", budget_s)
    dev = _resolve(device)
    _check_precision_supported(dev, p, "gemm")
    flush_l2 = dev.cuda and _has_triton()
    check_fits(estimate_bytes("gemm", (m, n, k), p, flush_l2=flush_l2, kind=dev.info.kind),
               dev.info)
    cost = gemm_cost(m, n, k, p)
    torch = dev.torch
    import numpy as np

    def per_call(fn):
        from torch.utils import benchmark  # noqa: PLC0415

        nthreads = torch.get_num_threads()
        timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=nthreads)
        def ours_once():
            # Timer.timeit(1) runs two untimed calls before its timed one; so do we, so that
            # both timed calls start equally hot (worker threads awake, caches warm), as our
            # back-to-back repetitions do in time_gemm.
            fn()
            fn()
            return _timed_reps(dev, fn, 1, None)

        ours, refs = [], []
        deadline = time.perf_counter() + 2 * rounds * budget_s
        while len(ours) < 15 or (time.perf_counter() < deadline and len(ours) < 400):
            if len(ours) % 2:
                refs.append(timer.timeit(1).median)
                ours += ours_once()
            else:
                ours += ours_once()
                refs.append(timer.timeit(1).median)
        name = (f"torch.utils.benchmark.Timer ({nthreads} threads), one call per sample as its "
                f"blocked_autorange takes at this size; {len(ours)} pairs alternating with ours")
        return float(np.median(ours)), float(np.median(refs)), name, ours, len(ours), refs

    def per_round(fn, flush):
        ours, refs, name, number = [], [], "", 1
        for r in range(rounds):
            if r % 2 == 0:  # alternate the order so neither timer always goes first
                s = _time_fn(dev, fn, budget_s=budget_s, warmup_s=0.02, reps=None,
                             min_reps=5, max_reps=5000, flush=flush)
                ref, name, number = _reference_round(dev, fn, budget_s)
            else:
                ref, name, number = _reference_round(dev, fn, budget_s)
                s = _time_fn(dev, fn, budget_s=budget_s, warmup_s=0.02, reps=None,
                             min_reps=5, max_reps=5000, flush=flush)
            ours += _block_means(s, number)  # like for like with the reference's samples
            refs += ref
        blocks = f", ours averaged in blocks of {number} calls as it does" if number > 1 else ""
        return (float(np.median(ours)), float(np.median(refs)),
                f"{name}; {rounds} rounds alternating with ours{blocks}", ours, rounds, refs)

    def run():
        best, made = None, 0
        with torch.no_grad(), _threads(torch, threads), _matmul_mode(torch, p, dev.info.kind):
            case = _gemm_case(dev, m, n, k, p)
            flush = _flusher(dev, flush_l2)
            one = _warm_up(dev, case.fn, 0.05, flush)
            for _attempt in range(retries + 1):
                made += 1
                if not dev.cuda and one >= _PER_CALL_MIN_S:
                    check = per_call(case.fn)
                else:
                    check = per_round(case.fn, flush)
                if best is None or abs(check[0] / check[1] - 1) < abs(best[0] / best[1] - 1):
                    best = check
                if abs(best[0] / best[1] - 1) <= tolerance:
                    break
            nthreads = torch.get_num_threads() if not dev.cuda else None
        return best, made, nthreads

    (ours_s, ref_s, name, samples, count, refs), attempts, nthreads = _guarded(
        f"GEMM {m}x{n}x{k} {p}", dev.info, run)
    meas = Measurement("gemm", (m, n, k), p, dev.info.name, dev.info.kind,
                       "cuda events" if dev.cuda else "time.perf_counter", nthreads,
                       len(samples), flops=cost.flops, bytes=cost.bytes, flush_l2=flush_l2,
                       note="timer check", samples_s=tuple(samples), **_stats(samples))
    return TimerCheck(meas, ours_s, ref_s, name, count, attempts,
                      _ratio_resolution(samples, refs))


def _ratio_resolution(ours: Sequence[float], refs: Sequence[float], draws: int = 400) -> float:
    """95% bootstrap half-width of median(ours) / median(refs): how finely this run's noise
    lets the two timers be compared (seeded, so the same samples give the same answer)."""
    import numpy as np

    o, r = np.asarray(ours, dtype=float), np.asarray(refs, dtype=float)
    if o.size < 3 or r.size < 3:
        return math.inf  # too few samples to say anything
    rng = np.random.default_rng(0)
    ratios = (np.median(rng.choice(o, (draws, o.size)), axis=1)
              / np.median(rng.choice(r, (draws, r.size)), axis=1))
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float((hi - lo) / 2)


