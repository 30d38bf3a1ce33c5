"""labs-bench-comm: time collectives between worker processes on this machine, fit α and β per
collective, print the tables and write JSON (also ``python benchmarks/bench_comm.py``). The
measuring is :func:`labs.core.measure.comm.bench.measure_collectives`.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import sys
from typing import Sequence

from labs.core.measure.comm.bench import (COMM_SIZES, DEFAULT_BUDGET_S, usable_cpus, comm_backend,
                                          measure_collectives)
from labs.core.measure.device import detect
from labs.core.measure.errors import MeasureError
from labs.core.physics import collectives

__all__ = ["main"]


def _size(text: str) -> int:
    t = text.strip().lower().rstrip("b")
    mult = {"k": 2**10, "m": 2**20, "g": 2**30}.get(t[-1:], 1)
    return int(float(t[:-1] if mult > 1 else t) * mult)


def _us(seconds):
    return None if seconds is None else seconds * 1e6


def main(argv: Sequence[str] | None = None) -> int:
    """labs-bench-comm: time collectives between worker processes on this machine, fit α and
    β per collective, print the tables and write JSON (like labs-bench-gemm)."""
    import argparse

    from labs.core.measure.tables import format_or_dash, md_table  # the benchmarks' tables

    ap = argparse.ArgumentParser(prog="labs-bench-comm", description=main.__doc__)
    ap.add_argument("--world-size", type=int, default=2, help="worker processes (default 2)")
    ap.add_argument("--backend", default="auto", help="auto, gloo or nccl (default auto)")
    ap.add_argument("--sizes", default=None, help="bytes, comma list, k/m/g = KiB/MiB/GiB "
                    "(default 4k,16k,...,64m)")
    ap.add_argument("--ops", default=",".join(collectives.OPS), help="comma list of collectives")
    ap.add_argument("--budget-s", type=float, default=DEFAULT_BUDGET_S,
                    help="seconds of measuring, after the workers have started")
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/results/"
                    "comm-<host>-<date>.json)")
    a = ap.parse_args(argv)
    try:
        return _run(a, format_or_dash, md_table)
    except KeyboardInterrupt:
        # measure_collectives stops every worker before the interrupt reaches here
        print("\nInterrupted (Ctrl+C): every worker process was stopped; nothing was written.")
        return 130


def _run(a, format_or_dash, md_table) -> int:
    status = comm_backend(a.backend)
    print(status.message)
    if not status.available:
        return 2
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    sizes = [_size(s) for s in a.sizes.split(",")] if a.sizes else list(COMM_SIZES)
    try:
        run = measure_collectives(a.world_size, sizes, a.backend, ops=a.ops.split(","),
                                  budget_s=a.budget_s)
    except (MeasureError, ValueError) as e:
        print(f"error: {e}")
        return 1
    print(f"{run.world_size} workers, {run.backend}, {run.device}, torch {run.torch_version}; "
          f"{run.elapsed_s:.1f} s" + (f"; load average {load[0]:.2f} on {usable_cpus()} CPUs at the "
                                     "start" if load else ""))
    print(md_table(
        ["op", "bytes", "median µs", "p10-p90 µs", "busbw GB/s", "reps", "status"],
        [[r["op"], f"{r['bytes']:,}", format_or_dash(_us(r.get("median_s")), ".4g"),
          f"{r['p10_s'] * 1e6:.4g}-{r['p90_s'] * 1e6:.4g}" if "p10_s" in r else "—",
          format_or_dash(r.get("busbw_gbs"), ".3g"), r["reps"], r["status"]] for r in run.rows]))
    print()
    for f in run.fits.values():
        print(f"{f.op}: α = {f.alpha_s * 1e6:.1f} µs ({f.alpha_step_s * 1e6:.1f} µs per ring "
              f"step), β = {f.busbw_gbs:.2f} GB/s bus bandwidth, residual "
              f"{f.residual:.0%}; latency dominates below {f.crossover_bytes / 1e3:,.0f} kB")
    for o, why in run.fit_errors.items():
        print(f"{o}: no fit ({why})")
    now = datetime.datetime.now()
    out = a.out or os.path.join("benchmarks", "results",
                                f"comm-{socket.gethostname()}-{now.date().isoformat()}.json")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as fh:
        json.dump({"date": now.isoformat(timespec="seconds"), "host": socket.gethostname(),
                   "cpu_model": detect("cpu").name, "cpus": usable_cpus(),
                   "load_average_1min_at_start": load[0] if load else None, **run.as_dict()},
                  fh, indent=1)
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
