"""Lab 7's default profile, timed: the tiny decoder's prefill (256 tokens: Part 2's opening
case) and decode step (context 1024: Part 1's batch-1 case) at batch 1, fp32, math attention,
2 s timing budget per profile, this machine's roofline measured first with a 3 s budget, as a
student's first presses do them.

    python benchmarks/bench_profile.py [--runs 2] [--threads 1] [--device cpu]

Prints, per run, the wall time of the whole thing (roofline measurement included), then the
README's summary table of the last run (`measure.markdown_summary`), with the date, the device
as detected, torch threads and the load average before and after.

Its table shows what Lab 7's Predictions 1, 3 and 4 ask (the largest operator type of a
batch-1 decode step, the memory-bound share, the operators closest to their bounds in a
prefill): lock those predictions in the lab first.
"""

from __future__ import annotations

import argparse
import datetime
import os
import sys
import time


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except (AttributeError, OSError):
        return "n/a"


def one_run(device, threads) -> tuple[float, float, list]:
    from labs.core import measure
    from labs.core.measure.profile import profiler

    profiler.clear_roofline_cache()  # a student's first press measures the roofline too
    t0, c0 = time.perf_counter(), time.process_time()
    profiles = []
    for phase, context in (("prefill", 256), ("decode", 1024)):
        model, inputs = measure.builtin_case("decoder", phase=phase, batch=1, context=context,
                                             precision="fp32", attention="math", device=device)
        profiles.append(measure.profile_model(model, inputs, device=device, budget_s=2.0,
                                              roofline_budget_s=3.0, threads=threads,
                                              label=f"decoder {phase}, batch 1, context {context}"))
    return time.perf_counter() - t0, time.process_time() - c0, profiles


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n")[-1].strip())
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    ap.add_argument("--device", default=None)
    a = ap.parse_args(argv)
    from labs.core import measure

    info = measure.detect(a.device)
    if not info.available:
        print(info.message, file=sys.stderr)
        return 1
    before = _load()
    walls, cpus, last = [], [], None
    for i in range(a.runs):
        wall, cpu, last = one_run(info, a.threads)
        walls.append(wall)
        cpus.append(cpu)
        print(f"run {i + 1}: {wall:.1f} s wall, {cpu:.1f} s CPU of this process (prefill + "
              "decode, roofline measurement included)")
    import torch

    threads = last[0].threads
    print(f"\n{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC · {info.name} "
          f"({info.backend}, torch {torch.__version__}) · "
          + (f"{threads} torch thread(s) on {info.cores} logical CPUs" if threads else "GPU")
          + f" · load average {before} → {_load()} · per run: wall "
          + ", ".join(f"{w:.1f} s" for w in walls) + "; CPU time "
          + ", ".join(f"{c:.1f} s" for c in cpus)
          + f" · roofline: {last[0].roofline}\n")
    print(measure.markdown_summary(last))
    return 0


if __name__ == "__main__":
    sys.exit(main())
