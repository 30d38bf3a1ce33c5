"""Speed benchmark of the labs, with a plain reference notebook measured in the same run.

    python benchmarks/bench_labs.py                 # every labs/lab_*.py + the reference
    python benchmarks/bench_labs.py --lab lab_01    # one lab (+ the reference)

Per notebook it measures (method in the README, "Speed"):

* **cold run**: ``python <notebook>.py`` in a fresh subprocess (imports + every cell, headless,
  gates closed as a student first opens it); the median of ``--cold-runs``;
* **widget update**: how long the notebook takes to react to a widget change. The notebook runs
  once with every gate open (reveal mode, ``ROOFLINE_REVEAL=1``); then, for each widget (slider,
  dropdown, radio, number, switch) the widget's value is set the way the frontend sets it
  (``UIElement._update``) and exactly the cells marimo's kernel would re-run (the cells that
  reference the widget and their descendants, in topological order) are run through marimo's
  own cell API (``Cell.run(**refs)``) and their outputs formatted for the browser with marimo's
  formatters (plotly figures to JSON). p50/p95 over the updates that re-render a figure;
* **export**: ``marimo export html`` time (student copy) and page size of the student and
  instructor (``-- --reveal``) copies, code left out as ``labs-export`` does.

Targets (issue 7, this 2-core machine): p95 update < 25 ms, cold run < 1.5 s, export < 3 s,
page < 300 KB. Prints a table and writes JSON to ``benchmarks/results/``.
"""

from __future__ import annotations

import argparse
import builtins
import importlib.util
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "benchmarks" / "reference_notebook.py"
RESULTS = REPO / "benchmarks" / "results"
TARGETS = {"update_p95_ms": 25.0, "cold_s": 1.5, "export_s": 3.0, "page_kb": 300.0}
WIDGET_TYPES = ("slider", "dropdown", "radio", "number", "switch", "checkbox", "multiselect")


# --------------------------------------------------------------------------------------------
# Small helpers


def pct(values: list[float], q: float) -> float | None:
    """The q-th percentile (0-100), linear interpolation; None for no values."""
    if not values:
        return None
    xs = sorted(values)
    k = (len(xs) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def bench_env(tmp: str, *, reveal: bool) -> dict:
    env = dict(os.environ)
    env.update(ROOFLINE_LEDGER_DIR=str(Path(tmp) / "ledger"), ROOFLINE_STUDENT_ID="bench",
               XDG_CONFIG_HOME=str(Path(tmp) / "config"))
    env.pop("ROOFLINE_REVEAL", None)
    if reveal:
        env["ROOFLINE_REVEAL"] = "1"
    return env


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def machine() -> dict:
    cpu = platform.processor() or ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    mem_gb = None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                mem_gb = round(int(line.split()[1]) / 1e6, 1)
    except OSError:
        pass
    import marimo
    import numpy
    import plotly

    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": mem_gb,
            "os": platform.platform(), "python": platform.python_version(),
            "marimo": marimo.__version__, "plotly": plotly.__version__,
            "numpy": numpy.__version__}


def loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


# --------------------------------------------------------------------------------------------
# Widget updates (runs in a worker subprocess per notebook: a fresh interpreter each)


def _load_app(path: Path):
    spec = importlib.util.spec_from_file_location(f"bench_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app


def _frontend_values(el, n: int) -> list:
    """Up to ``n`` values the browser could send for widget ``el``, other than its current one."""
    kind = type(el).__name__
    out: list = []
    if kind == "slider":
        steps = getattr(el, "steps", None)
        if steps:
            idx = list(range(len(steps)))
            out = [i for i in idx if steps[i] != el.value]
        else:
            lo, hi, step = float(el.start), float(el.stop), float(el.step or 0) or None
            count = max(2, n + 1)
            for i in range(count):
                v = lo + (hi - lo) * i / (count - 1)
                if step:
                    v = lo + round((v - lo) / step) * step
                v = min(max(v, lo), hi)
                if v != el.value and v not in out:
                    out.append(v)
    elif kind == "number":
        lo, hi = el.start, el.stop
        if lo is not None and hi is not None and hi > lo:
            step = el.step or (hi - lo) / n
            vals = [lo + round(((hi - lo) * i / n) / step) * step for i in range(n + 1)]
            out = [min(max(v, lo), hi) for v in vals]
        else:
            base = el.value or 1
            out = [base * f for f in (0.5, 2, 4, 0.25)]
        out = [v for v in dict.fromkeys(out) if v != el.value]
    elif kind in ("dropdown",):
        current = el.selected_key if hasattr(el, "selected_key") else None
        out = [[k] for k in el.options if k != current]
    elif kind == "radio":
        out = [k for k, v in el.options.items() if v != el.value]
    elif kind in ("switch", "checkbox"):
        out = [not bool(el.value)]
    elif kind == "multiselect":
        keys = list(el.options)
        out = [keys[: i + 1] for i in range(min(len(keys), n))]
    if len(out) > n:  # spread the chosen values over the whole range
        stride = len(out) / n
        out = [out[int(i * stride)] for i in range(n)]
    return out


def _initial_frontend_value(el):
    kind = type(el).__name__
    if kind == "slider" and getattr(el, "steps", None):
        return list(el.steps).index(el.value) if el.value in el.steps else 0
    if kind == "dropdown":
        key = getattr(el, "selected_key", None)
        return [key] if key is not None else []
    if kind == "radio":
        return next((k for k, v in el.options.items() if v == el.value), None)
    if kind == "multiselect":
        return [k for k, v in el.options.items() if v in (el.value or [])]
    return el.value


def measure_updates(path: Path, *, values_per_widget: int, rounds: int) -> dict:
    """Time marimo's reaction to widget changes in one notebook (see the module docstring)."""
    from marimo._output.formatters.formatters import register_formatters
    from marimo._output.formatting import try_format
    from marimo._plugins.ui._core.ui_element import UIElement
    from marimo._runtime import dataflow

    # What the kernel does at start. marimo registers its plotly formatter (figure -> JSON in a
    # <marimo-plotly> element) only inside a running notebook; tell it that it is in one.
    from marimo._output.formatters import plotly_formatters

    plotly_formatters.running_in_notebook = lambda: True
    register_formatters()
    app = _load_app(path)
    t0 = time.perf_counter()
    _, defs = app.run()
    first_run_s = time.perf_counter() - t0
    app._maybe_initialize()
    graph = app._graph
    cells = dict(zip(app._cell_manager.cell_ids(), app._cell_manager.cells()))
    ns = dict(defs)
    cell_ms: dict[str, list[float]] = defaultdict(list)

    def rerun(cell_ids) -> tuple[float, float, int, int, list[str]]:
        w0, c0 = time.perf_counter(), time.process_time()
        ran = figs = 0
        errors = []
        for cid in cell_ids:
            impl = graph.cells[cid]
            refs = {r: ns[r] for r in impl.refs if r in ns}
            if any(r not in ns and not hasattr(builtins, r) for r in impl.refs):
                for d in impl.defs:  # an ancestor stopped: marimo cancels this cell
                    ns.pop(d, None)
                continue
            c_start = time.perf_counter()
            try:
                output, cdefs = cells[cid].run(**refs)
            except Exception as exc:  # a lab bug: count it, keep measuring
                errors.append(f"{type(exc).__name__}: {exc}"[:200])
                for d in impl.defs:
                    ns.pop(d, None)
                continue
            for d in impl.defs:
                ns.pop(d, None)
            ns.update(cdefs)
            ran += 1
            if output is not None:
                formatted = try_format(output)
                figs += formatted.data.count("<marimo-plotly") if isinstance(
                    formatted.data, str) else 0
            cell_ms[cid].append((time.perf_counter() - c_start) * 1e3)
        return ((time.perf_counter() - w0) * 1e3, (time.process_time() - c0) * 1e3, ran, figs,
                errors)

    widgets = {}
    for name, value in defs.items():
        if isinstance(value, UIElement) and type(value).__name__ in WIDGET_TYPES:
            def_cell = next(iter(graph.definitions.get(name, ())), None)
            roots = {cid for cid, c in graph.cells.items() if name in c.refs and cid != def_cell}
            affected = dataflow.topological_sort(
                graph, dataflow.transitive_closure(graph, roots)) if roots else []
            if affected:
                widgets[name] = (value, affected)

    updates, per_widget, errors = [], {}, []
    for name, (el, affected) in sorted(widgets.items()):
        values = _frontend_values(el, values_per_widget)
        if not values:
            continue
        initial = _initial_frontend_value(el)
        el._update(values[0])
        rerun(affected)  # warm-up: first-time imports and caches do not count
        samples = []
        for i in range(rounds):
            el._update(values[i % len(values)])
            wall, cpu, ran, figs, errs = rerun(affected)
            errors.extend(f"{name}={values[i % len(values)]!r}: {e}" for e in errs)
            samples.append({"widget": name, "wall_ms": wall, "cpu_ms": cpu, "cells": ran,
                            "figures": figs})
        el._update(initial)
        rerun(affected)
        updates.extend(samples)
        fig_walls = [s["wall_ms"] for s in samples if s["figures"]]
        per_widget[name] = {"type": type(el).__name__, "cells": samples[-1]["cells"],
                            "figures": max(s["figures"] for s in samples),
                            "p50_ms": pct(fig_walls, 50), "p95_ms": pct(fig_walls, 95)}
    code = {cid: next((ln.strip() for ln in graph.cells[cid].code.splitlines() if ln.strip()),
                      "") for cid in cell_ms}
    order = list(app._cell_manager.cell_ids())
    hot = sorted(cell_ms.items(), key=lambda kv: -statistics.median(kv[1]))[:6]
    hot_cells = [{"cell": order.index(cid) + 1, "first_line": code[cid][:80],
                  "median_ms": statistics.median(ms), "runs": len(ms)} for cid, ms in hot]
    inst = [u for u in updates if u["figures"]]
    walls = [u["wall_ms"] for u in inst]
    cpus = [u["cpu_ms"] for u in inst]
    return {"first_run_s": first_run_s, "widgets": per_widget, "updates": len(updates),
            "instrument_updates": len(inst), "p50_ms": pct(walls, 50), "p95_ms": pct(walls, 95),
            "cpu_p50_ms": pct(cpus, 50), "cpu_p95_ms": pct(cpus, 95),
            "max_ms": max(walls) if walls else None, "errors": sorted(set(errors))[:20],
            "hot_cells": hot_cells}


# --------------------------------------------------------------------------------------------
# Cold runs and exports (subprocesses from the parent)


def cold_runs(path: Path, n: int) -> dict:
    walls, cpus = [], []
    for _ in range(n):
        with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
            c0, w0 = children_cpu(), time.perf_counter()
            proc = subprocess.run([sys.executable, str(path)], env=bench_env(tmp, reveal=False),
                                  cwd=str(REPO), capture_output=True, text=True, timeout=300)
            walls.append(time.perf_counter() - w0)
            cpus.append(children_cpu() - c0)
        if proc.returncode != 0:
            return {"error": (proc.stderr or proc.stdout).strip()[-600:]}
    return {"cold_s": statistics.median(walls), "cold_cpu_s": statistics.median(cpus),
            "cold_runs_s": walls}


def exports(path: Path) -> dict:
    from labs.core import export

    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp:
        for mode, reveal in (("student", False), ("instructor", True)):
            page = Path(tmp) / f"{mode}.html"
            c0 = children_cpu()
            try:
                seconds, report, problems = export.export_lab(path, page, reveal=reveal)
            except export.ExportError as exc:
                out[f"{mode}_error"] = str(exc)[-600:]
                continue
            out[f"{mode}_export_s"] = seconds
            out[f"{mode}_export_cpu_s"] = children_cpu() - c0
            out[f"{mode}_page_kb"] = report.size_bytes / 1024
            out[f"{mode}_figures"] = report.figures
            if problems:
                out[f"{mode}_problems"] = problems
    return out


def run_worker(path: Path, values: int, rounds: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-upd-") as tmp:
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", str(path),
               "--values", str(values), "--rounds", str(rounds)]
        proc = subprocess.run(cmd, env=bench_env(tmp, reveal=True), cwd=str(REPO),
                              capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        return {"error": (proc.stderr or proc.stdout).strip()[-800:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def bench_notebook(path: Path, args) -> dict:
    row = {"notebook": path.name}
    print(f"  {path.name}: cold runs ...", flush=True)
    row.update(cold_runs(path, args.cold_runs))
    print(f"  {path.name}: widget updates ...", flush=True)
    row["update"] = run_worker(path, args.values, args.rounds)
    if not args.no_export:
        print(f"  {path.name}: exports ...", flush=True)
        row.update(exports(path))
    return row


# --------------------------------------------------------------------------------------------
# Report


def _f(v, spec: str, missing: str = "n/a") -> str:
    return missing if v is None else format(v, spec)


def misses(row: dict) -> list[str]:
    out = []
    upd = row.get("update", {})
    if upd.get("error"):
        out.append("update benchmark failed")
    elif upd.get("p95_ms") is None:
        out.append("no widget re-rendered a figure")
    elif upd["p95_ms"] > TARGETS["update_p95_ms"]:
        out.append(f"update p95 {upd['p95_ms']:.1f} ms > {TARGETS['update_p95_ms']:.0f}")
    if upd.get("errors"):
        out.append(f"{len(upd['errors'])} cell error(s) on widget changes")
    if row.get("error"):
        out.append("cold run failed")
    elif row.get("cold_s", 0) > TARGETS["cold_s"]:
        out.append(f"cold {row['cold_s']:.2f} s > {TARGETS['cold_s']}")
    if row.get("student_export_s", 0) > TARGETS["export_s"]:
        out.append(f"export {row['student_export_s']:.1f} s > {TARGETS['export_s']:.0f}")
    for mode in ("student", "instructor"):
        if row.get(f"{mode}_page_kb", 0) > TARGETS["page_kb"]:
            out.append(f"{mode} page {row[f'{mode}_page_kb']:.0f} KB > {TARGETS['page_kb']:.0f}")
        if row.get(f"{mode}_problems") or row.get(f"{mode}_error"):
            out.append(f"{mode} export has problems")
    return out


def table(rows: list[dict], ref: dict | None) -> str:
    head = ("| notebook | cold run s (CPU s) | update p50 / p95 ms (CPU p95) | × ref p95 | "
            "export s (CPU s) | page KB student / instructor | misses |")
    lines = [head, "|" + "---|" * 7]
    ref_p95 = (ref or {}).get("update", {}).get("p95_ms")
    for r in rows:
        u = r.get("update", {})
        ratio = (f"{u['p95_ms'] / ref_p95:.2f}" if u.get("p95_ms") and ref_p95 else "n/a")
        if r is ref:
            ratio = "1"
        lines.append(
            f"| {r['notebook']} | {_f(r.get('cold_s'), '.2f')} ({_f(r.get('cold_cpu_s'), '.2f')})"
            f" | {_f(u.get('p50_ms'), '.1f')} / {_f(u.get('p95_ms'), '.1f')} "
            f"({_f(u.get('cpu_p95_ms'), '.1f')}) | {ratio} "
            f"| {_f(r.get('student_export_s'), '.1f')} ({_f(r.get('student_export_cpu_s'), '.1f')})"
            f" | {_f(r.get('student_page_kb'), '.0f')} / {_f(r.get('instructor_page_kb'), '.0f')}"
            f" | {'; '.join(misses(r)) if r is not ref else '(reference)'} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lab", action="append", default=[], help="only labs whose name contains this")
    p.add_argument("--cold-runs", type=int, default=3)
    p.add_argument("--values", type=int, default=6, help="distinct values per widget")
    p.add_argument("--rounds", type=int, default=12, help="timed updates per widget")
    p.add_argument("--no-export", action="store_true")
    p.add_argument("--out", type=Path, default=None, help="JSON file (default: results/)")
    p.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.worker:  # child process: one notebook's widget updates, JSON on the last line
        print(json.dumps(measure_updates(args.worker, values_per_widget=args.values,
                                         rounds=args.rounds)))
        return 0

    sys.path.insert(0, str(REPO))
    labs = sorted((REPO / "labs").glob("lab_*.py"))
    if args.lab:
        labs = [x for x in labs if any(k in x.stem for k in args.lab)]
    info = {"machine": machine(), "started": datetime.now(timezone.utc).isoformat(),
            "load_before": loadavg(), "targets": TARGETS,
            "settings": {"cold_runs": args.cold_runs, "values": args.values,
                         "rounds": args.rounds}}
    print(f"Benchmarking {len(labs)} lab(s) + the reference notebook on "
          f"{info['machine']['cpu']} ({info['machine']['cores']} cores), load {loadavg()} ...")
    ref = bench_notebook(REFERENCE, args)
    rows = [bench_notebook(lab, args) for lab in labs]
    info["load_after"] = loadavg()
    info["reference"], info["labs"] = ref, rows
    text = table([ref] + rows, ref)
    print()
    print(text)
    print(f"\nload average before/after: {info['load_before']} / {info['load_after']}")
    print("\nslowest cells on a widget change (median ms per run, wall):")
    for r in [ref] + rows:
        hot = r.get("update", {}).get("hot_cells") or []
        print(f"  {r['notebook']}: " + "; ".join(
            f"cell {h['cell']} `{h['first_line'][:40]}` {h['median_ms']:.1f}" for h in hot[:3]))
    for r in rows:
        for e in r.get("update", {}).get("errors", []) or []:
            print(f"  {r['notebook']}: {e}")
        if r.get("update", {}).get("error"):
            print(f"  {r['notebook']}: update benchmark failed:\n{r['update']['error']}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = args.out or RESULTS / "latest.json"
    out.write_text(json.dumps(info, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
