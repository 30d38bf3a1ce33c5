"""labs-bench-gemm: time GEMMs per precision against the roofline and a reference timer, and
print the README's tables (Markdown) as they are to be pasted (also
``python benchmarks/bench_gemm.py``).

What it prints is what the README quotes, nothing typed by hand: a caption (date, the
machine as detected at run time, torch, threads, the load average before and after, the
command), the STREAM line, the GEMM table and the decode-GEMV table. Every figure is measured
``--attempts`` times (default 2; fixed before the run, each reported) and shown as the pooled
median with the min-max range over the attempts. The timer check is
``compare_with_reference``: its verdict at 5% is printed for every row, and a missed
criterion says so next to the figure. Everything is also written as JSON (with the Markdown).
The tables are ``measure.tables``'.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import shlex
import socket
import statistics
import sys
from collections.abc import Sequence

from labs.core.measure.cases import gemm_cost, supported_precisions
from labs.core.measure.choices import GEMV_PRECISIONS
from labs.core.measure.device import (gpu_clock_mhz, import_torch, detect, load_average,
                                      machine_description, machine_line)
from labs.core.measure.errors import MeasureError
from labs.core.measure.reference import TimerCheck, compare_with_reference
from labs.core.measure.sweeps import predict_bound, stream_bandwidth, sweep_gemv
from labs.core.measure.tables import (format_or_dash, md_table, signed_percent, table_number,
                                      value_range, with_range)
from labs.core.physics import hardware
from labs.core.physics.validate import positive_int

__all__ = ["GPU_PEAK_FRACTION", "TIMER_TOLERANCE", "main"]

#: The timer check's criterion: this timer and the reference agree within 5%.
TIMER_TOLERANCE = 0.05
#: H100/H200 criterion: a bf16 8192^3 GEMM reaches 70% of the dense spec peak.
GPU_PEAK_FRACTION = 0.70


def main(argv: Sequence[str] | None = None) -> int:
    """labs-bench-gemm: time GEMMs per precision against the roofline and a reference timer,
    print the README's tables (Markdown) and write JSON."""
    import argparse

    ap = argparse.ArgumentParser(prog="labs-bench-gemm", description=main.__doc__)
    ap.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: GPU if any)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch CPU threads for the whole run (default: torch's choice)")
    ap.add_argument("--precisions", default=None, help="comma list (default: all supported)")
    ap.add_argument("--sizes", default=None, help="square N, comma list "
                    "(default: 256,512,1024,2048 on CPU; 1024,2048,4096,8192 on GPU)")
    ap.add_argument("--attempts", type=int, default=2, help="times every figure is measured, "
                    "fixed in advance; ranges are min-max over them (default 2)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timer rounds per row")
    ap.add_argument("--budget-s", type=float, default=0.2, help="timed seconds per timer round")
    ap.add_argument("--gemv", default="4096x4096,14336x4096", help="decode GEMV shapes NxK "
                    "('' for none)")
    ap.add_argument("--row-budget-s", type=float, default=60.0, help="skip a size (saying "
                    "so) whose timer check would take longer, judged from the size below")
    ap.add_argument("--stream-mb", type=float, default=None, help="MiB per STREAM array")
    ap.add_argument("--gemv-budget-s", type=float, default=4.0,
                    help="seconds for the GEMV table, per attempt")
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/results/"
                    "<host>-<date>.json)")
    a = ap.parse_args(argv)
    positive_int("--attempts", a.attempts)
    a.command = "labs-bench-gemm " + shlex.join(list(argv) if argv is not None else sys.argv[1:])
    torch = import_torch()
    if a.threads is not None and torch is not None:
        saved_threads = torch.get_num_threads()
        torch.set_num_threads(positive_int("--threads", a.threads))
        try:
            return _bench(a)
        finally:
            torch.set_num_threads(saved_threads)
    return _bench(a)


def _bench(a) -> int:
    info = detect(a.device)
    if not info.available:
        print(info.message)
        return 2
    started = datetime.datetime.now(datetime.timezone.utc)
    load_before, machine = load_average(), machine_description()
    support = supported_precisions(info)
    ps = a.precisions.split(",") if a.precisions else [p for p, why in support.items()
                                                       if why is None]
    notes = [f"{p}: not measured: {why}" for p, why in support.items()
             if why and (a.precisions is None or p in ps)]
    ps = [p for p in ps if support.get(p) is None]
    sizes = [int(s) for s in a.sizes.split(",")] if a.sizes else (
        [1024, 2048, 4096, 8192] if info.kind == "cuda" else [256, 512, 1024, 2048])
    print(f"measuring on {info.summary()} ...", flush=True)

    bws = [stream_bandwidth(info, size_mb=a.stream_mb, budget_s=1.0) for _ in range(a.attempts)]
    checks: dict[tuple[str, int], TimerCheck] = {}
    for p in ps:
        rate = None  # FLOP/s of the last size measured in this precision
        for n in sorted(sizes):
            need = _row_seconds(gemm_cost(n, n, n, p).flops / rate, a) if rate else None
            if need is not None and need > a.row_budget_s:
                notes.append(f"{p} N={n}: not measured: at the {rate / 1e12:.3g} TFLOP/s of "
                             f"the size below, its timer check would take ~{need:.0f} s "
                             f"(--row-budget-s {a.row_budget_s:g})")
                continue
            try:
                checks[(p, n)] = compare_with_reference(
                    n, n, n, p, device=info, rounds=a.rounds, budget_s=a.budget_s,
                    attempts=a.attempts, tolerance=TIMER_TOLERANCE)
                rate = checks[(p, n)].measurement.flops / checks[(p, n)].ours_s
            except MeasureError as e:
                notes.append(f"{p} N={n}: not measured: {e}")
    bw_gbs = statistics.median(b.gbs for b in bws)
    spec = info.spec()
    peaks = {p: max(c.measurement.flops / c.ours_s / 1e12
                    for (q, _n), c in checks.items() if q == p)
             for p in ps if any(q == p for q, _n in checks)}
    emp = hardware.custom(f"{info.name} (measured)", bandwidth_gbs=bw_gbs, peaks=peaks,
                     memory_gb=info.memory_gb or 1.0) if peaks else None
    rows = [_gemm_row(p, n, c, spec, emp) for (p, n), c in checks.items()]
    verdict = _gpu_peak_check(info, spec, checks)
    gemv_rows = _gemv_rows(a, info, ps, support, spec or emp)

    result = {"command": a.command, "date": started.isoformat(timespec="seconds"),
              "host": socket.gethostname(), "machine": machine, "device": info.as_dict(),
              "attempts": a.attempts, "load_average_1min_before": load_before,
              "load_average_1min_after": load_average(),
              "bandwidth": {"copy_gbs": [b.copy.effective_gbs for b in bws],
                            "triad_gbs": [b.triad.effective_gbs for b in bws],
                            "gbs_median": bw_gbs, "array_bytes": bws[0].copy.bytes / 2},
              "gemm": rows, "gemv": gemv_rows, "check_gpu_peak": verdict, "notes": notes}
    result["markdown"] = _markdown(result, info, spec)
    print()
    print(result["markdown"])
    out = a.out or os.path.join("benchmarks", "results",
                                f"{socket.gethostname()}-{started.date().isoformat()}.json")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        json.dump(result, f, indent=1)
    print(f"\nwrote {out}")
    return 0


def _row_seconds(call_s: float, a) -> float:
    """Rough time of one row's timer check: per attempt, at least 15 interleaved pairs of 3
    calls each side (see compare_with_reference), or its rounds x budget, whichever is more."""
    return a.attempts * max(90 * call_s, 2 * a.rounds * a.budget_s + 6 * call_s)


def _gemm_row(p: str, n: int, c: TimerCheck, spec, emp) -> dict:
    cost_flops = c.measurement.flops
    ref = spec if spec is not None and spec.has(p) else emp
    pred = predict_bound(gemm_cost(n, n, n, p), ref, p)
    ours = cost_flops / c.ours_s / 1e12
    return {"shape": f"{n}x{n}x{n}", "n": n, "precision": p, "measured_tflops": ours,
            "measured_tflops_per_attempt": [cost_flops / x.ours_s / 1e12 for x in c.per_attempt],
            "median_ms": c.ours_s * 1e3, "spread": c.measurement.spread,
            "predicted_tflops": pred["predicted_tflops"], "bound": pred["bound"],
            "ratio": ours / pred["predicted_tflops"] if pred["predicted_tflops"] else None,
            "roof": f"spec {spec.key}" if ref is spec else "measured roof (this run)",
            "reference_tflops": c.reference_tflops, "reference_timer": c.reference,
            "timer_diff_pct": c.rel_diff * 100,
            "timer_diff_pct_per_attempt": [x.rel_diff * 100 for x in c.per_attempt],
            "timer_resolution_pct": c.resolution * 100 if math.isfinite(c.resolution) else None,
            "timer_verdict": c.verdict, "attempts": c.attempts, "samples": c.samples,
            "threads": c.measurement.threads}


def _gpu_peak_check(info, spec, checks) -> dict | None:
    """H100/H200: does bf16 8192^3 reach 70% of the dense spec peak? (None elsewhere)"""
    if not (spec and spec.key in ("h100-sxm", "h200-sxm") and ("bf16", 8192) in checks):
        return None
    c = checks[("bf16", 8192)]
    fractions = [c.measurement.flops / x.ours_s / 1e12 / spec.peak_tflops("bf16")
                 for x in c.per_attempt]
    frac = c.measurement.flops / c.ours_s / 1e12 / spec.peak_tflops("bf16")
    return {"bf16_8192_fraction_of_dense_peak": frac, "per_attempt": fractions,
            "pass": frac >= GPU_PEAK_FRACTION, "sm_clock_mhz_after": gpu_clock_mhz(info),
            "sm_clock_mhz_max": info.sm_clock_mhz}


def _gemv_rows(a, info, ps, support, reference) -> list[dict]:
    """The decode-GEMV table, measured once per attempt and merged row by row."""
    if not a.gemv:
        return []
    shapes = [tuple(int(x) for x in s.lower().split("x")) for s in a.gemv.split(",")]
    gemv_ps = [p for p in GEMV_PRECISIONS if p in ps or support.get(p)]
    runs = [sweep_gemv(shapes, gemv_ps, device=info, budget_s=a.gemv_budget_s,
                       reference=reference) for _ in range(a.attempts)]
    merged = []
    for i, first in enumerate(runs[0]):
        per = [run[i] for run in runs]
        ok = [r for r in per if r["measured_us"] is not None]
        row = dict(first)
        row["measured_us_per_attempt"] = [r["measured_us"] for r in per]
        row["error_pct_per_attempt"] = [r["error_pct"] for r in per]
        row["measured_us"] = statistics.median(r["measured_us"] for r in ok) if ok else None
        row["measured_gbs"] = (first["bytes"] / (row["measured_us"] * 1e-6) / 1e9
                               if row["measured_us"] else None)
        row["error_pct"] = ((row["measured_us"] - row["predicted_us"]) / row["predicted_us"]
                            * 100 if row["measured_us"] and row["predicted_us"] else None)
        row["status"] = first["status"] if len(ok) in (0, len(per)) else (
            f"measured in {len(ok)} of {len(per)} attempts: "
            + "; ".join(r["status"] for r in per if r["measured_us"] is None))
        merged.append(row)
    return merged


def _markdown(res: dict, info, spec) -> str:
    """The README's block: caption, STREAM line, GEMM table, verdicts, GEMV table."""
    n = res["attempts"]
    threads = (f"{info.threads} torch thread(s)" if info.kind == "cpu" else info.backend)
    gemm = res["gemm"]
    if gemm:
        threads = (f"{gemm[0]['threads']} torch thread(s)" if gemm[0]["threads"] else threads)
    caption = (f"**`{res['command']}`, {res['date'].replace('T', ' ')[:16]} UTC** on "
               f"{info.name if info.kind == 'cuda' else machine_line(res['machine'])}"
               f"{'' if info.kind == 'cpu' else ' (' + (info.backend or '') + ')'}; torch "
               f"{info.torch_version}, {threads}, timer "
               f"{'CUDA events' if info.kind == 'cuda' else 'time.perf_counter'}; load average "
               f"{format_or_dash(res['load_average_1min_before'], '.2f')} → "
               f"{format_or_dash(res['load_average_1min_after'], '.2f')} on "
               f"{res['machine']['logical_cpus']} logical CPUs. Every figure: median over "
               f"{n} attempt(s) fixed in advance, with the min–max range over them.")
    bw = res["bandwidth"]
    stream = (f"STREAM ({bw['array_bytes'] / 2**20:.0f} MiB arrays): copy "
              f"{value_range(bw['copy_gbs'], '.1f')} GB/s, triad {value_range(bw['triad_gbs'], '.1f')} "
              "GB/s.")
    table = md_table(
        ["shape", "precision", "measured TFLOP/s (range)", "predicted bound (roof)",
         "measured / predicted", "reference TFLOP/s", "timer difference ± noise (attempts)",
         f"timers within {TIMER_TOLERANCE:.0%}?"],
        [[f"{r['n']}³", r["precision"],
          f"{r['measured_tflops']:.3g} ({value_range(r['measured_tflops_per_attempt'], '.3g')})",
          f"{format_or_dash(r['predicted_tflops'], '.3g')} ({(r['bound'] or '?').split()[0]})",
          format_or_dash(r["ratio"], ".2f"), f"{r['reference_tflops']:.3g}",
          f"{signed_percent(r['timer_diff_pct'] / 100)} ±{format_or_dash(r['timer_resolution_pct'], '.1f', '?')}% "
          f"({', '.join(signed_percent(x / 100) for x in r['timer_diff_pct_per_attempt'])})",
          {"agree": "yes", "disagree": "**no: missed**",
           "unresolved": "cannot tell (noise > 5%)"}[r["timer_verdict"]]] for r in gemm])
    counts = {v: sum(r["timer_verdict"] == v for r in gemm)
              for v in ("agree", "disagree", "unresolved")}
    roof = (f"spec sheet `{spec.key}`" if spec else "this run's measured roof (best GEMM per "
            "precision, median STREAM bandwidth): each precision's best size reads 1.00 by "
            "construction")
    lines = [caption, "", stream, "", table, "",
             f"Predicted bound from: {roof}. Reference timer: "
             f"{gemm[0]['reference_timer'] if gemm else '—'}. ± is the 95% bootstrap "
             "half-width of the timers' ratio (what this run's noise can resolve).",
             f"Timer check (criterion: within {TIMER_TOLERANCE:.0%}): {counts['agree']} of "
             f"{len(gemm)} rows agree, {counts['disagree']} disagree"
             + (" (criterion missed)" if counts["disagree"] else "")
             + f", {counts['unresolved']} cannot be resolved at this load."]
    chk = res["check_gpu_peak"]
    if chk:
        lines.append(f"bf16 8192³: {chk['bf16_8192_fraction_of_dense_peak']:.0%} of the dense "
                     f"spec peak (criterion ≥ {GPU_PEAK_FRACTION:.0%}: "
                     f"{'met' if chk['pass'] else '**missed**'}); SM clock after "
                     f"{format_or_dash(chk['sm_clock_mhz_after'], '.0f')} MHz of "
                     f"{format_or_dash(chk['sm_clock_mhz_max'], '.0f')}.")
    for note in res["notes"]:
        lines.append(f"- {note}")
    if res["gemv"]:
        lines += ["", md_table(
            ["decode GEMV N×K", "precision", "measured µs (range)", "predicted µs",
             "measured vs predicted", "GB/s", "status"],
            [[r["name"], r["precision"],
              with_range(r["measured_us"], r["measured_us_per_attempt"]),
              table_number(r["predicted_us"]),
              signed_percent(r["error_pct"] / 100) if r["error_pct"] is not None else "—",
              format_or_dash(r["measured_gbs"], ".3g"), r["status"]] for r in res["gemv"]])]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
