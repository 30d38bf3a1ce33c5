"""Record Lab 5's instruments on this machine: the working-set staircase, the per-call
overhead, the GEMM sawtooth and a one-thread fp32 GEMM peak.

A student: this measures what Lab 5's Predictions 1 (the L2 / DRAM plateau ratio) and 4 (how
much shorter a call gets) ask. Lock those predictions in the lab first; the lab measures the
same things itself, behind its own buttons.

    python benchmarks/bench_hierarchy.py [--runs 2] [--budget 25] [--out PATH] [--write-reference]

Records ``--runs`` runs (2, fixed in advance, back to back) and prints the README's tables: per
working set the min–max over the runs, each run's plateaus, the OS's cache sizes, date, time,
CPU and each run's load average; writes JSON with every run (default
benchmarks/results/hierarchy-<host>-<date>.json). ``--write-reference`` also rewrites
``labs/core/physics/reference_machine.py`` from the first run: the recorded run Lab 5 shows
before a student measures and computes its instructor-copy answers from. Re-record it on a
quiet machine and commit both files together.

It answers Lab 5's Predictions 1 and 4 for this machine (the L2-to-DRAM plateau ratio and how
much shorter a call gets from 1 MiB to 1 KiB): lock those predictions in the lab first.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import pprint
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _kib(b: float) -> str:
    return f"{b / 2**20:.3g} MiB" if b >= 2**20 else f"{b / 1024:.3g} KiB"


def record(budget: float) -> dict:
    from labs.core import measure
    from labs.core.measure.device import ram_bytes

    t_press = time.perf_counter()
    info = measure.detect()
    if not info.available:
        raise SystemExit(info.message)
    t_ready = time.perf_counter()
    sweep = measure.working_set_sweep(info, budget_s=budget)
    levels = measure.hierarchy_levels(sweep)
    overhead = measure.call_overhead_sweep(info, budget_s=4)
    saw = measure.gemm_sawtooth(info, budget_s=10)
    peak = measure.time_gemm(512, 512, 512, "fp32", device=info, budget_s=2, threads=1)
    return {
        "date": datetime.date.today().isoformat(), "host": platform.node(), "cpu": info.name,
        "time_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%H:%M"),
        "device_kind": info.kind, "torch": info.torch_version, "threads": sweep.threads,
        "load_average": sweep.load_average, "memory_bytes": ram_bytes("MemTotal"),
        "caches": [{"name": c.name, "bytes": c.size_bytes, "scope": c.scope,
                    "source": c.source} for c in sweep.caches.levels],
        "cache_source": sweep.caches.source,
        "seconds": {"detect_incl_torch_import": t_ready - t_press,
                    "sweep": sweep.elapsed_s, "budget": budget},
        "sweep": sweep.rows(),
        "plateaus": [{"name": p.name, "lo_bytes": p.lo_bytes, "hi_bytes": p.hi_bytes,
                      "gbs": p.bandwidth_gbs, "spread": p.spread, "points": p.points}
                     for p in levels],
        "overhead": {"rows": list(overhead.rows), "overhead_s": overhead.overhead_s,
                     "bandwidth_gbs": overhead.bandwidth_gbs},
        "sawtooth": {"tile": saw.tile, "note": saw.tile_note, "rows": list(saw.rows),
                     "dips": saw.dips()},
        "gemm_fp32_1thread": {"n": 512, "best_gflops": peak.flops / peak.min_s / 1e9,
                              "median_gflops": peak.achieved_tflops * 1e3},
    }


def table(runs: list[dict]) -> str:
    """The README's tables: working sets as min–max over the runs, each run's plateaus."""
    from labs.core.measure.tables import md_table, value_range

    r = runs[0]
    lines = [f"**{r['cpu']}**, {r['date']}, torch {r['torch']}, {r['threads']} thread, "
             f"{len(runs)} run(s) back to back, fixed in advance; caches ({r['cache_source']}): "
             + "; ".join(f"{c['name']} {_kib(c['bytes'])} ({c['scope']})" for c in r["caches"])
             + ". " + "; ".join(
                 f"run {i} at {x.get('time_utc', '?')} UTC, load average {x['load_average']}, "
                 f"sweep {x['seconds']['sweep']:.1f} s (budget {x['seconds']['budget']:g} s) "
                 f"plus {x['seconds']['detect_incl_torch_import']:.1f} s to import torch"
                 for i, x in enumerate(runs, 1)) + ". Each cell is the min–max over the runs.",
             ""]

    def per_size(key: str, spec: str) -> dict:
        got: dict[int, list] = {}
        for x in runs:
            for p in x["sweep"]:
                got.setdefault(p["bytes"], []).append(p[key] if p["status"] == "ok" else None)
        return {b: value_range(v, spec) for b, v in got.items()}

    best, median, spread = per_size("gbs", ".1f"), per_size("median_gbs", ".1f"), \
        per_size("spread", ".2f")
    lines.append(md_table(["working set", "GB/s (best)", "GB/s (median)", "spread"],
                           [[_kib(b), best[b], median[b], spread[b]] for b in sorted(best)]))
    lines += ["", md_table(["run", "plateau", "sizes", "GB/s", "spread (p10-p90 of its sizes)"],
                            [[i, p["name"], f"{_kib(p['lo_bytes'])} – {_kib(p['hi_bytes'])}",
                              f"{p['gbs']:.1f}", f"{p['spread']:.0%}"]
                             for i, x in enumerate(runs, 1) for p in x["plateaus"]])]

    def each(f, spec: str) -> str:
        return value_range([f(x) for x in runs], spec)

    lines += ["", f"Per-call overhead {each(lambda x: x['overhead']['overhead_s'] * 1e6, '.2f')} µs; "
              f"one-thread fp32 GEMM (512³, best) "
              f"{each(lambda x: x['gemm_fp32_1thread']['best_gflops'], '.1f')} GFLOP/s; sawtooth "
              f"tile {each(lambda x: x['sawtooth']['tile'], 'd')}: throughput past a tile boundary"
              f" / at it = measured {each(lambda x: x['sawtooth']['dips'][0], '.2f')}, predicted "
              f"{each(lambda x: x['sawtooth']['dips'][1], '.2f')}."]
    return "\n".join(lines)


def write_reference(r: dict, path: Path) -> None:
    sweep = tuple((p["bytes"], round(p["gbs"], 2), round(p["spread"], 3))
                  for p in r["sweep"] if p["status"] == "ok")
    caches = {c["name"]: c["bytes"] for c in r["caches"]}
    scopes = {c["name"]: c["scope"] for c in r["caches"]}
    text = (ROOT / "benchmarks" / "reference_machine.py.in").read_text(encoding="utf-8")
    values = {
        "MACHINE": r["cpu"], "DATE": r["date"], "TORCH": r["torch"],
        "LOAD_AVERAGE": tuple(r["load_average"] or ()), "CACHES": caches,
        "CACHE_SCOPES": scopes, "CACHE_SOURCE": r["cache_source"],
        "MEMORY_BYTES": r["memory_bytes"], "SWEEP": sweep,
        "GEMM_FP32_GFLOPS": round(r["gemm_fp32_1thread"]["best_gflops"], 2),
        "CALL_OVERHEAD_S": round(r["overhead"]["overhead_s"], 9),
        "OVERHEAD_BANDWIDTH_GBS": round(r["overhead"]["bandwidth_gbs"], 2),
        "OVERHEAD_ROWS": tuple((x["bytes"], round(x["median_s"], 9))
                               for x in r["overhead"]["rows"]),
        "SAWTOOTH_TILE": r["sawtooth"]["tile"],
        "SAWTOOTH": tuple((x["n"], round(x["tflops"] * 1e3, 2))
                          for x in r["sawtooth"]["rows"] if x["status"] == "ok"),
    }
    body = "\n".join(f"{k} = {pprint.pformat(v, width=99 - len(k) - 3, compact=True)}"
                     for k, v in values.items())
    path.write_text(text.replace("# @VALUES@", body), encoding="utf-8")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 epilog=__doc__.split("\n\n")[-1].strip())
    ap.add_argument("--budget", type=float, default=25.0, help="sweep budget, seconds")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--runs", type=int, default=2, help="runs, back to back (default 2)")
    ap.add_argument("--write-reference", action="store_true",
                    help="also rewrite labs/core/physics/reference_machine.py from the first run")
    a = ap.parse_args(argv)
    if a.runs < 1:
        ap.error("--runs must be at least 1")
    runs = []
    for i in range(a.runs):
        print(f"run {i + 1} of {a.runs} ...", file=sys.stderr, flush=True)
        runs.append(record(a.budget))
    r = runs[0]
    out = a.out or ROOT / "benchmarks" / "results" / f"hierarchy-{r['host']}-{r['date']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    args = sys.argv[1:] if argv is None else list(argv)
    command = " ".join(["python", "benchmarks/bench_hierarchy.py", *args])
    out.write_text(json.dumps({"command": command, "runs": runs}, indent=1), encoding="utf-8")
    print(table(runs))
    print(f"\nwritten: {out}")
    if a.write_reference:
        write_reference(r, ROOT / "labs" / "core" / "physics" / "reference_machine.py")
        print("written: labs/core/physics/reference_machine.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
