"""labs-bench-gemm: the command line that times GEMMs per precision against the roofline and
a reference timer, prints the tables and writes JSON (also ``python benchmarks/bench_gemm.py``).
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import sys
from typing import Sequence

from labs.core.measure.cases import GEMV_PRECISIONS, gemm_cost, supported_precisions
from labs.core.measure.device import _cpu_model, _gpu_clock_mhz, _torch, detect
from labs.core.measure.errors import MeasureError
from labs.core.measure.reference import TimerCheck, compare_with_reference
from labs.core.measure.sweeps import _predict, stream_bandwidth, sweep_gemv
from labs.core.physics import hardware as _hw
from labs.core.physics._validate import positive_int


def _fmt(v, spec=".3g", none="—"):
    return none if v is None else format(v, spec)


def _fmt_res(pct: float | None) -> str:
    return "?" if pct is None else f"{pct:.1f}" if pct <= 100 else ">100"


def _table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    line = lambda r: "  ".join(c.rjust(w) for c, w in zip(r, widths))  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, cells)])


def main(argv: Sequence[str] | None = None) -> int:
    """labs-bench-gemm: time GEMMs per precision against the roofline and a reference timer,
    print a table and write JSON."""
    import argparse

    ap = argparse.ArgumentParser(prog="labs-bench-gemm", description=main.__doc__)
    ap.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: GPU if any)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch CPU threads for the whole run (default: torch's choice)")
    ap.add_argument("--precisions", default=None, help="comma list (default: all supported)")
    ap.add_argument("--sizes", default=None, help="square N, comma list "
                    "(default: 256,512,1024,2048 on CPU; 1024,2048,4096,8192 on GPU)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timer rounds per row")
    ap.add_argument("--budget-s", type=float, default=0.2, help="timed seconds per timer round")
    ap.add_argument("--gemv", default="4096x4096,14336x4096", help="decode GEMV shapes NxK "
                    "('' for none)")
    ap.add_argument("--stream-mb", type=float, default=None, help="MiB per STREAM array")
    ap.add_argument("--gemv-budget-s", type=float, default=4.0, help="seconds for the GEMV table")
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/results/"
                    "<host>-<date>.json)")
    a = ap.parse_args(argv)
    torch = _torch()
    if a.threads is not None and torch is not None:
        saved_threads = torch.get_num_threads()
        torch.set_num_threads(positive_int("--threads", a.threads))
        try:
            return _bench(a)
        finally:
            torch.set_num_threads(saved_threads)
    return _bench(a)


def _bench(a) -> int:
    import json
    import socket

    info = detect(a.device)
    print(info.summary())
    if not info.available:
        return 2
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"torch {info.torch_version}, {info.backend}; timer: "
          f"{'CUDA events' if info.kind == 'cuda' else 'time.perf_counter'}"
          + (f"; load average {load[0]:.1f} on {os.cpu_count()} CPUs" if load else ""))
    support = supported_precisions(info)
    ps = a.precisions.split(",") if a.precisions else [p for p, why in support.items()
                                                       if why is None]
    for p, why in support.items():
        if why and (a.precisions is None or p in ps):
            print(f"  {p}: unsupported: {why}")
    ps = [p for p in ps if support.get(p) is None]
    sizes = [int(s) for s in a.sizes.split(",")] if a.sizes else (
        [1024, 2048, 4096, 8192] if info.kind == "cuda" else [256, 512, 1024, 2048])

    bw = stream_bandwidth(info, size_mb=a.stream_mb, budget_s=1.0)
    print(f"STREAM: copy {bw.copy.effective_gbs:.1f} GB/s, triad "
          f"{bw.triad.effective_gbs:.1f} GB/s ({bw.copy.shape[0] * 4 / 2**20:.0f} MiB arrays)")

    checks: dict[tuple[str, int], TimerCheck] = {}
    for p in ps:
        for n in sizes:
            try:
                checks[(p, n)] = compare_with_reference(n, n, n, p, device=info,
                                                        rounds=a.rounds, budget_s=a.budget_s)
            except MeasureError as e:
                print(f"  {p} N={n}: {e}")
    spec = info.spec()
    measured_peaks = {p: max(c.measurement.flops / c.ours_s / 1e12
                             for (q, _n), c in checks.items() if q == p)
                      for p in ps if any(q == p for q, _n in checks)}
    emp = _hw.custom(f"{info.name} (measured)", bandwidth_gbs=bw.gbs, peaks=measured_peaks,
                     memory_gb=info.memory_gb or 1.0) if measured_peaks else None
    ref, roof = (spec, f"spec {spec.key}") if spec else (emp, "measured roof (this run)")

    rows = []
    for (p, n), c in checks.items():
        cost = gemm_cost(n, n, n, p)
        pred = _predict(cost, ref if ref is not None and ref.has(p) else emp, p)
        ours = cost.flops / c.ours_s / 1e12
        rows.append({"shape": f"{n}x{n}x{n}", "precision": p, "measured_tflops": ours,
                     "median_ms": c.ours_s * 1e3, "spread": c.measurement.spread,
                     "predicted_tflops": pred["predicted_tflops"], "bound": pred["bound"],
                     "ratio": ours / pred["predicted_tflops"] if pred["predicted_tflops"]
                     else None, "roof": roof if ref is not None and ref.has(p)
                     else "measured roof (this run)",
                     "reference_tflops": c.reference_tflops, "reference_timer": c.reference,
                     "timer_diff_pct": c.rel_diff * 100,
                     "timer_resolution_pct": (c.resolution * 100 if math.isfinite(c.resolution)
                                              else None),
                     "threads": c.measurement.threads})
    print()
    print(_table(["shape", "precision", "measured TFLOP/s", "predicted bound", "meas/pred",
                  "reference TFLOP/s", "timer diff"],
                 [[r["shape"], r["precision"], _fmt(r["measured_tflops"], ".4g"),
                   f"{_fmt(r['predicted_tflops'], '.4g')} ({(r['bound'] or '?').split()[0]})",
                   _fmt(r["ratio"], ".2f"), _fmt(r["reference_tflops"], ".4g"),
                   f"{r['timer_diff_pct']:+.1f}% ±{_fmt_res(r['timer_resolution_pct'])}"]
                  for r in rows]))
    print(f"predicted bound from: {roof}; reference timer: "
          f"{next(iter(checks.values())).reference if checks else '-'}")
    worst = max((abs(r["timer_diff_pct"]) for r in rows), default=float("nan"))
    print(f"timer agreement: worst |diff| {worst:.1f}% (criterion: 5%; ± = 95% bootstrap "
          "half-width of the ratio, i.e. what this run's noise can resolve)")

    verdict = None
    if spec and spec.key in ("h100-sxm", "h200-sxm") and ("bf16", 8192) in checks:
        frac = checks[("bf16", 8192)].measurement.flops / checks[("bf16", 8192)].ours_s / 1e12 / (
            spec.peak_tflops("bf16"))
        verdict = {"bf16_8192_fraction_of_dense_peak": frac, "pass": frac >= 0.70}
        clock = _gpu_clock_mhz(info)
        verdict["sm_clock_mhz_after"] = clock
        print(f"bf16 8192^3: {frac:.0%} of the dense spec peak (criterion >= 70%): "
              f"{'PASS' if frac >= 0.7 else 'FAIL - check clocks, TF32 flags, timing'}; "
              f"SM clock now {_fmt(clock, '.0f')} MHz (max {_fmt(info.sm_clock_mhz, '.0f')})")

    gemv_rows = []
    if a.gemv:
        shapes = [tuple(int(x) for x in s.lower().split("x")) for s in a.gemv.split(",")]
        gemv_rows = sweep_gemv(shapes, [p for p in GEMV_PRECISIONS if p in ps or support.get(p)],
                               device=info, budget_s=a.gemv_budget_s,
                               reference=spec if spec else emp)
        print()
        print(_table(["GEMV NxK", "precision", "measured µs", "predicted µs", "error %",
                      "GB/s", "status"],
                     [[r["name"], r["precision"], _fmt(r["measured_us"], ".4g"),
                      _fmt(r["predicted_us"], ".4g"), _fmt(r["error_pct"], "+.0f"),
                      _fmt(r["measured_gbs"], ".4g"), r["status"][:60]] for r in gemv_rows]))

    now = _dt.datetime.now()
    out = a.out or os.path.join("benchmarks", "results",
                                f"{socket.gethostname()}-{now.date().isoformat()}.json")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        json.dump({"date": now.isoformat(timespec="seconds"), "host": socket.gethostname(),
                   "device": info.as_dict(), "cpu_model": _cpu_model(),
                   "load_average_1min_at_start": load[0] if load else None,
                   "bandwidth": {"copy_gbs": bw.copy.effective_gbs,
                                 "triad_gbs": bw.triad.effective_gbs,
                                 "array_bytes": bw.copy.bytes / 2},
                   "gemm": rows, "gemv": gemv_rows, "check_70pct": verdict}, f, indent=1)
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
