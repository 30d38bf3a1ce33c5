"""Record Lab 5's instruments on this machine: the working-set staircase, the per-call
overhead, the GEMM sawtooth and a one-thread fp32 GEMM peak.

    python benchmarks/bench_hierarchy.py [--budget 25] [--out PATH] [--write-reference]

Prints the README's table (sizes, plateaus, the OS's cache sizes, date, CPU, load average) and
writes JSON (default benchmarks/results/hierarchy-<host>-<date>.json). ``--write-reference``
also rewrites ``labs/core/physics/reference_machine.py``, the recorded run Lab 5 shows before
a student measures and computes its instructor-copy answers from: re-record it on a quiet
machine and commit both files together.
"""

from __future__ import annotations

import argparse
import datetime as dt
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
    from labs.core.measure.device import _ram_bytes

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
        "date": dt.date.today().isoformat(), "host": platform.node(), "cpu": info.name,
        "device_kind": info.kind, "torch": info.torch_version, "threads": sweep.threads,
        "load_average": sweep.load_average, "memory_bytes": _ram_bytes("MemTotal"),
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


def table(r: dict) -> str:
    lines = [f"**{r['cpu']}**, {r['date']}, torch {r['torch']}, {r['threads']} thread, load "
             f"average {r['load_average']}; caches ({r['cache_source']}): "
             + "; ".join(f"{c['name']} {_kib(c['bytes'])} ({c['scope']})" for c in r["caches"])
             + f". Sweep {r['seconds']['sweep']:.1f} s (budget {r['seconds']['budget']:g} s), "
             f"plus {r['seconds']['detect_incl_torch_import']:.1f} s to import torch.", "",
             "| working set | GB/s (best) | GB/s (median) | spread |", "|---|---|---|---|"]
    for p in r["sweep"]:
        if p["status"] == "ok":
            lines.append(f"| {_kib(p['bytes'])} | {p['gbs']:.1f} | {p['median_gbs']:.1f} | "
                         f"{p['spread']:.2f} |")
        else:
            lines.append(f"| {_kib(p['bytes'])} | {p['status']} | | |")
    lines += ["", "| plateau | sizes | GB/s | spread (p10-p90 of its sizes) |", "|---|---|---|---|"]
    for p in r["plateaus"]:
        lines.append(f"| {p['name']} | {_kib(p['lo_bytes'])} – {_kib(p['hi_bytes'])} | "
                     f"{p['gbs']:.1f} | {p['spread']:.0%} |")
    o, g, s = r["overhead"], r["gemm_fp32_1thread"], r["sawtooth"]
    lines += ["", f"Per-call overhead {o['overhead_s'] * 1e6:.2f} µs; one-thread fp32 GEMM "
              f"(512³, best) {g['best_gflops']:.1f} GFLOP/s; sawtooth tile {s['tile']}: "
              f"throughput past a tile boundary / at it = measured {s['dips'][0]:.2f}, "
              f"predicted {s['dips'][1]:.2f}."]
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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", type=float, default=25.0, help="sweep budget, seconds")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--write-reference", action="store_true")
    a = ap.parse_args(argv)
    r = record(a.budget)
    out = a.out or ROOT / "benchmarks" / "results" / f"hierarchy-{r['host']}-{r['date']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(r, indent=1), encoding="utf-8")
    print(table(r))
    print(f"\nwritten: {out}")
    if a.write_reference:
        write_reference(r, ROOT / "labs" / "core" / "physics" / "reference_machine.py")
        print("written: labs/core/physics/reference_machine.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
