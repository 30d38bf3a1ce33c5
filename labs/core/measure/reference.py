"""Checking the timer against an independent reference timer, interleaved in the same run.

``compare_with_reference(m, n, k, precision)`` times the same GEMM (same tensors) with this
package's timer and with torch.utils.benchmark (CPU; GPU without triton) or
triton.testing.do_bench (GPU), alternating so both see the same load, and returns both
medians, the samples, and the noise floor of the comparison (``resolution``).

It never retries toward agreement: the caller fixes the number of attempts in advance, every
attempt is reported (``TimerCheck.per_attempt``) and pooled, and a disagreement is returned
as a result (``TimerCheck.verdict``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

from labs.core.measure.cases import (check_precision_supported, gemm_case, matmul_mode,
                                     checked_precision, estimate_bytes, gemm_cost)
from labs.core.measure.choices import GEMM_PRECISIONS
from labs.core.measure.device import DeviceInfo, guarded, check_fits
from labs.core.measure.timer import (Measurement, TimingDevice, l2_flusher, resolve_device, sample_stats, torch_threads,
                                     time_fn, timed_reps, warm_up)
from labs.core.physics.validate import positive, positive_int

__all__ = ["TimerAttempt", "TimerCheck", "compare_with_reference"]


@dataclass(frozen=True)
class TimerAttempt:
    """One attempt of a timer check: both medians over that attempt's samples."""

    ours_s: float
    reference_s: float
    samples: int  # interleaved pairs (per-call mode) or rounds (per-round mode)
    resolution: float  # 95% bootstrap half-width of this attempt's ratio

    @property
    def rel_diff(self) -> float:
        """ours / reference - 1 in this attempt."""
        return self.ours_s / self.reference_s - 1


@dataclass(frozen=True)
class TimerCheck:
    """This package's median vs a reference timer's, measured interleaved in the same run.

    Every attempt is kept (``per_attempt``); the headline is the median over attempts of each
    attempt's medians (with two attempts, their mean). The number of attempts is the one asked for: none is repeated or dropped because
    of its result. ``verdict`` says what the pooled figures show against ``tolerance``.
    """

    measurement: Measurement  # ours: every sample of every attempt
    ours_s: float  # our median (median over attempts of each attempt's median)
    reference_s: float  # the reference timer's median, the same way
    reference: str  # which reference timer, and how it was interleaved
    samples: int  # pairs or rounds, all attempts together
    attempts: int  # how many attempts ran (always the number asked for)
    resolution: float  # 95% bootstrap half-width of ours/reference: what the noise allows
    per_attempt: tuple[TimerAttempt, ...] = ()
    tolerance: float = 0.05

    @property
    def rel_diff(self) -> float:
        """ours / reference - 1 (the headline over attempts)."""
        return self.ours_s / self.reference_s - 1

    @property
    def reference_tflops(self) -> float:
        return self.measurement.flops / self.reference_s / 1e12

    @property
    def verdict(self) -> str:
        """"agree" (|diff| <= tolerance); "disagree" (a larger diff that this run can
        resolve: its noise is within the tolerance, or the diff exceeds tolerance + noise);
        "unresolved" (a larger diff inside noise wider than the tolerance: this run cannot
        tell). The result to show, whatever it is."""
        diff = abs(self.rel_diff)
        if diff <= self.tolerance:
            return "agree"
        if self.resolution <= self.tolerance or diff - self.resolution > self.tolerance:
            return "disagree"
        return "unresolved"

    def summary(self) -> str:
        """One line: both medians, the difference with its noise, every attempt's difference."""
        each = ", ".join(f"{a.rel_diff:+.1%}" for a in self.per_attempt)
        return (f"ours {self.ours_s * 1e3:.4g} ms vs reference {self.reference_s * 1e3:.4g} ms: "
                f"{self.rel_diff:+.1%} ± {self.resolution:.1%} over {self.attempts} "
                f"attempt(s) decided in advance ({each}; {self.samples} samples): "
                f"{self.verdict} at {self.tolerance:.0%}")


def _has_triton() -> bool:
    try:
        import triton.testing  # noqa: F401, PLC0415

        return True
    except Exception:
        return False


def _reference_round(dev: TimingDevice, fn: Callable[[], object],
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
                           budget_s: float = 0.1, attempts: int = 1, tolerance: float = 0.05,
                           threads: int | None = None) -> TimerCheck:
    """Time the same GEMM (same tensors) with this package's timer and a reference timer in
    the same run, interleaved, and compare the two medians.

    CPU: the reference is torch.utils.benchmark.Timer with the same thread count (``threads``,
    default torch's current). For calls of 0.1 ms or more the two timers alternate call by
    call (Timer.timeit(1), which is what blocked_autorange samples at number=1, then ours,
    order swapped each pair, each timed call after two untimed ones as timeit does): the
    number of pairs is decided before the first one, from a warm-up call's time, to fill
    about ``2 x rounds x budget_s`` seconds (15 to 400 pairs); on a shared machine both see
    the same load. Shorter calls: ``rounds`` rounds of blocked_autorange and ours (``budget_s``
    each, alternating which goes first), ours averaged in blocks of the size blocked_autorange
    chose (its samples are block means). GPU: rounds of triton.testing.do_bench (ours then
    flushes L2 as do_bench does) when triton imports, else of torch.utils.benchmark.Timer
    (which synchronizes the GPU).

    ``attempts`` such comparisons run, a number fixed by the caller: all of them are
    reported (``per_attempt``) and the headline is the median over them of each attempt's
    medians; a disagreement is returned as a result (``verdict``), never retried away.
    ``tolerance`` only labels the verdict. ``resolution`` is the 95% bootstrap half-width of
    the headline ratio (resampled within each attempt): this run's noise floor.
    """
    m, n, k = positive_int("m", m), positive_int("n", n), positive_int("k", k)
    p = checked_precision(precision, GEMM_PRECISIONS)
    rounds = positive_int("rounds", rounds)
    attempts = positive_int("attempts", attempts)
    positive("budget_s", budget_s)
    positive("tolerance", tolerance)
    dev = resolve_device(device)
    check_precision_supported(dev, p, "gemm")
    flush_l2 = dev.cuda and _has_triton()
    check_fits(estimate_bytes("gemm", (m, n, k), p, flush_l2=flush_l2, kind=dev.info.kind),
               dev.info)
    cost = gemm_cost(m, n, k, p)
    torch = dev.torch

    def run():
        with torch.no_grad(), torch_threads(torch, threads), matmul_mode(torch, p, dev.info.kind):
            case = gemm_case(dev, m, n, k, p)
            flush = l2_flusher(dev, flush_l2)
            one = warm_up(dev, case.fn, 0.05, flush)
            per_call = not dev.cuda and one >= _PER_CALL_MIN_S
            pairs = int(min(max(2 * rounds * budget_s / (6 * one), 15), 400))
            done = [_per_call(dev, case.fn, pairs) if per_call
                    else _per_round(dev, case.fn, flush, rounds, budget_s)
                    for _attempt in range(attempts)]
            nthreads = torch.get_num_threads() if not dev.cuda else None
        return done, nthreads

    done, nthreads = guarded(f"GEMM {m}x{n}x{k} {p}", dev.info, run)
    ours = [x for ours_i, _refs, _name, _count in done for x in ours_i]
    per_attempt = tuple(TimerAttempt(_median(o), _median(r), count, _ratio_resolution(o, r))
                        for o, r, _name, count in done)
    meas = Measurement("gemm", (m, n, k), p, dev.info.name, dev.info.kind,
                       "cuda events" if dev.cuda else "time.perf_counter", nthreads,
                       len(ours), flops=cost.flops, bytes=cost.bytes, flush_l2=flush_l2,
                       note="timer check", samples_s=tuple(ours), **sample_stats(ours))
    name = done[0][2] + (f"; median over {attempts} attempts" if attempts > 1 else "")
    # Headline: the median over attempts of each attempt's medians. Samples are not pooled
    # across attempts: the load can change between them, and pooled bimodal samples put the
    # two timers' medians in different modes.
    return TimerCheck(meas, _median([a.ours_s for a in per_attempt]),
                      _median([a.reference_s for a in per_attempt]), name,
                      sum(a.samples for a in per_attempt), attempts,
                      _ratio_resolution_attempts([(o, r) for o, r, _n, _c in done]),
                      per_attempt, tolerance)


def _median(xs: Sequence[float]) -> float:
    import numpy as np

    return float(np.median(np.asarray(xs, dtype=float)))


def _per_call(dev: TimingDevice, fn: Callable[[], object],
              pairs: int) -> tuple[list[float], list[float], str, int]:
    """``pairs`` alternating single calls of ours and Timer.timeit(1): (ours, refs, name, n)."""
    from torch.utils import benchmark  # noqa: PLC0415

    nthreads = dev.torch.get_num_threads()
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=nthreads)

    def ours_once():
        # Timer.timeit(1) runs two untimed calls before its timed one; so do we, so that
        # both timed calls start equally hot (worker threads awake, caches warm), as our
        # back-to-back repetitions do in time_gemm.
        fn()
        fn()
        return timed_reps(dev, fn, 1, None)

    ours, refs = [], []
    for i in range(pairs):
        if i % 2:
            refs.append(timer.timeit(1).median)
            ours += ours_once()
        else:
            ours += ours_once()
            refs.append(timer.timeit(1).median)
    name = (f"torch.utils.benchmark.Timer ({nthreads} threads), one call per sample as its "
            f"blocked_autorange takes at this size; {pairs} pairs alternating with ours")
    return ours, refs, name, pairs


def _per_round(dev: TimingDevice, fn: Callable[[], object], flush, rounds: int,
               budget_s: float) -> tuple[list[float], list[float], str, int]:
    """``rounds`` rounds of ours and the reference timer, alternating which goes first."""
    ours, refs, name, number = [], [], "", 1
    for r in range(rounds):
        if r % 2 == 0:
            s = time_fn(dev, fn, budget_s=budget_s, warmup_s=0.02, reps=None,
                         min_reps=5, max_reps=5000, flush=flush)
            ref, name, number = _reference_round(dev, fn, budget_s)
        else:
            ref, name, number = _reference_round(dev, fn, budget_s)
            s = time_fn(dev, fn, budget_s=budget_s, warmup_s=0.02, reps=None,
                         min_reps=5, max_reps=5000, flush=flush)
        ours += _block_means(s, number)  # like for like with the reference's samples
        refs += ref
    blocks = f", ours averaged in blocks of {number} calls as it does" if number > 1 else ""
    return ours, refs, f"{name}; {rounds} rounds alternating with ours{blocks}", rounds


def _ratio_resolution_attempts(attempts: Sequence[tuple[Sequence[float], Sequence[float]]],
                               draws: int = 400) -> float:
    """95% bootstrap half-width of the headline ratio median_i(ours_i) / median_i(refs_i)
    over attempts i, resampling within each attempt (one attempt: ``_ratio_resolution``)."""
    import numpy as np

    if len(attempts) == 1:
        return _ratio_resolution(*attempts[0], draws=draws)
    arrays = [(np.asarray(o, dtype=float), np.asarray(r, dtype=float)) for o, r in attempts]
    if any(o.size < 3 or r.size < 3 for o, r in arrays):
        return math.inf
    rng = np.random.default_rng(0)
    o_meds = np.stack([np.median(rng.choice(o, (draws, o.size)), axis=1) for o, _r in arrays])
    r_meds = np.stack([np.median(rng.choice(r, (draws, r.size)), axis=1) for _o, r in arrays])
    ratios = np.median(o_meds, axis=0) / np.median(r_meds, axis=0)
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float((hi - lo) / 2)


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


