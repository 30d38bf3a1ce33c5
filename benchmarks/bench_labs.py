"""Speed benchmark of the labs, with a plain reference notebook and marimo's own floor
measured in the same run; prints the README's table in Markdown.

    python benchmarks/bench_labs.py                 # every labs/lab_*.py, 2 runs
    python benchmarks/bench_labs.py --lab lab_01    # one lab (+ the reference and the floor)
    python benchmarks/bench_labs.py --baseline /path/to/other/checkout --no-updates
                                                    # before/after: cold runs and exports of
                                                    # that checkout's labs, interleaved
    python benchmarks/bench_labs.py --browser       # in chromium: first figure, slider to
                                                    # redrawn figure (benchmarks/bench_browser.py)
    python benchmarks/bench_labs.py --browser --baseline /path/to/other/checkout
                                                    # the same, each lab from that checkout too

Per notebook it measures (method in the README, "Speed"):

* **cold run**: ``python <notebook>.py`` in a fresh subprocess (imports + every cell, headless,
  gates closed as a student first opens it); the median of ``--cold-runs`` per run;
* **floor**: ``python -c "import marimo, numpy, plotly.graph_objects"`` the same way: what any
  marimo + plotly notebook pays before its first cell, so "cold - floor" is what a lab's own
  code costs; and the floor plus one ``mo.md`` and one plotly figure (marimo's and plotly's
  one-time setups, which any notebook with text and a figure pays);
* **widget update**: how long the notebook takes to react to a widget change. The notebook runs
  once with every gate open (reveal mode, ``ROOFLINE_REVEAL=1``); then, for each widget (slider,
  dropdown, radio, number, switch) the widget's value is set the way the frontend sets it
  (``UIElement._update``) and exactly the cells marimo's kernel would re-run (the cells that
  reference the widget and their descendants, in topological order) are run through marimo's
  own cell API (``Cell.run(**refs)``) and their outputs formatted for the browser with marimo's
  formatters (plotly figures to JSON). p50/p95 over the updates that re-render a figure;
* **export**: ``marimo export html`` time (student copy) and page size of the student and
  instructor (``-- --reveal``) copies, code left out as ``labs-export`` does.

Everything is repeated ``--runs`` times (default 2, fixed in advance); the table shows the
range over runs (min-max of each run's figure). The caption names the command, the date, the
machine as detected (labs.core.measure.machine_description), the load average before and
after, and the bytecode mode: ``--bytecode cached`` (default) lets Python keep compiled
modules in a private cache primed by one untimed run, as a student's every open after the
first; ``--bytecode none`` compiles every module every time (PYTHONDONTWRITEBYTECODE=1 and
no cache). Targets are printed next to each figure, and a missed one says so.
Writes JSON to ``benchmarks/results/`` (default ``latest.json``).
"""

from __future__ import annotations

import argparse
import builtins
import importlib.util
import json
import os
import platform
import resource
import shlex
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
FLOOR_CODE = "import marimo, numpy, plotly.graph_objects"
#: The floor plus two one-time costs every notebook with text and a figure pays: marimo's
#: markdown setup (the first ``mo.md`` builds its converter and extensions) and plotly's first
#: figure (it loads its validator table, even for a figure built without validation).
FLOOR_FIRST_CODE = (FLOOR_CODE + "; marimo.md('*a*').text; plotly.graph_objects.Figure("
                 "plotly.graph_objects.Scatter(x=[0, 1], y=[0, 1])).to_plotly_json()")
FLOOR_FIRST = "floor + first text and figure"


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


#: Set by main(): the environment changes for the bytecode mode (and a baseline's PYTHONPATH).
BYTECODE_ENV: dict[str, str | None] = {}


def bench_env(tmp: str, *, reveal: bool, tree: Path = REPO) -> dict:
    env = dict(os.environ)
    env.update(ROOFLINE_LEDGER_DIR=str(Path(tmp) / "ledger"), ROOFLINE_STUDENT_ID="bench",
               XDG_CONFIG_HOME=str(Path(tmp) / "config"))
    env.pop("ROOFLINE_REVEAL", None)
    if reveal:
        env["ROOFLINE_REVEAL"] = "1"
    for k, v in BYTECODE_ENV.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    if tree != REPO:  # a baseline checkout: its labs package, not this one
        env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def machine() -> dict:
    """This machine as detected now (never typed in) and the versions that set the floor."""
    import marimo
    import numpy
    import plotly

    from labs.core.measure.device import machine_description, machine_line

    desc = machine_description()
    return {**desc, "line": machine_line(desc), "marimo": marimo.__version__,
            "plotly": plotly.__version__, "numpy": numpy.__version__,
            "platform": platform.platform()}


def loadavg() -> float | None:
    from labs.core.measure.device import load_average

    return load_average()


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


class _environ:
    """Temporarily apply environment changes in this process (for subprocesses it starts
    without an explicit env, such as labs.core.export's marimo export)."""

    def __init__(self, changes: dict[str, str | None]):
        self.changes, self.saved = changes, {}

    def __enter__(self):
        for k, v in self.changes.items():
            self.saved[k] = os.environ.get(k)
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def __exit__(self, *exc):
        for k, v in self.saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def cold_runs(cmd: list[str], n: int, *, tree: Path = REPO) -> dict:
    """``cmd`` (a notebook run or the floor's imports) in a fresh process, ``n`` times."""
    walls, cpus = [], []
    for _ in range(n):
        with tempfile.TemporaryDirectory(prefix="bench-cold-") as tmp:
            c0, w0 = children_cpu(), time.perf_counter()
            proc = subprocess.run(cmd, env=bench_env(tmp, reveal=False, tree=tree),
                                  cwd=str(tree), capture_output=True, text=True, timeout=300)
            walls.append(time.perf_counter() - w0)
            cpus.append(children_cpu() - c0)
        if proc.returncode != 0:
            return {"error": (proc.stderr or proc.stdout).strip()[-600:]}
    return {"cold_s": statistics.median(walls), "cold_cpu_s": statistics.median(cpus),
            "cold_runs_s": walls}


def exports(path: Path, *, tree: Path = REPO,
            modes: tuple[str, ...] = ("student", "instructor")) -> dict:
    """``labs-export``'s page of the notebook, timed, per mode (student, instructor)."""
    from labs.core import export

    out: dict = {}
    changes = dict(BYTECODE_ENV)
    if tree != REPO:
        changes["PYTHONPATH"] = str(tree) + os.pathsep + os.environ.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory(prefix="bench-export-") as tmp, _environ(changes):
        for mode in modes:
            reveal = mode == "instructor"
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


def interleaved_cold_runs(commands: dict[str, tuple[list[str], Path]], n: int) -> dict:
    """``n`` rounds, each running every command once in turn; per label what ``cold_runs``
    gives. Interleaved because this VM's speed drifts (the floor went 1.19 -> 0.82 s over five
    back-to-back runs): a slow spell then touches every notebook alike instead of the one that
    happened to be measured in it."""
    walls: dict = {label: [] for label in commands}
    cpus: dict = {label: [] for label in commands}
    failed: dict = {}
    for i in range(n):
        print(f"  cold runs, round {i + 1} of {n} ...", flush=True)
        for label, (cmd, tree) in commands.items():
            if label in failed:
                continue
            one = cold_runs(cmd, 1, tree=tree)
            if "error" in one:
                failed[label] = one
                continue
            walls[label] += one["cold_runs_s"]
            cpus[label].append(one["cold_cpu_s"])
    return {label: failed.get(label) or {
        "cold_s": statistics.median(walls[label]), "cold_cpu_s": statistics.median(cpus[label]),
        "cold_runs_s": walls[label]} for label in commands}


def interleaved_exports(items, n: int) -> dict:
    """``n`` rounds of exports, each notebook once per round in turn (as the cold runs): the
    first round exports the student and the instructor copies, the others the student copy
    again. Per label: the first round's figures, with ``student_export_s`` (and its CPU time)
    the median over the rounds and every round's in ``student_export_runs_s``."""
    out: dict = {}
    walls: dict = {label: [] for label, _p, _t in items}
    cpus: dict = {label: [] for label, _p, _t in items}
    for i in range(n):
        print(f"  exports, round {i + 1} of {n} ...", flush=True)
        for label, path, tree in items:
            if i and "student_export_s" not in out[label]:
                continue  # its student copy failed in round 1: said once, not retried
            got = exports(path, tree=tree, modes=("student", "instructor") if i == 0
                          else ("student",))
            if i == 0:
                out[label] = got
            if "student_export_s" in got:
                walls[label].append(got["student_export_s"])
                cpus[label].append(got["student_export_cpu_s"])
    for label, row in out.items():
        if walls[label]:
            row.update(student_export_s=statistics.median(walls[label]),
                       student_export_cpu_s=statistics.median(cpus[label]),
                       student_export_runs_s=walls[label])
    return out


def bench_notebook(path: Path, args, *, label: str, cold: dict, exported: dict) -> dict:
    """One notebook's row: its cold runs and exports (measured interleaved by the caller),
    then its widget updates."""
    row = {"notebook": label, **cold}
    if not args.no_updates and not label.endswith(" (baseline)"):
        print(f"  {label}: widget updates ...", flush=True)
        row["update"] = run_worker(path, args.values, args.rounds)
    row.update(exported)
    return row


def notebooks(args) -> list[tuple[str, Path, Path]]:
    """(label, notebook, tree) in the order each run measures them; a baseline's copy of a
    lab right before this checkout's, so the two see the same load."""
    labs = sorted((REPO / "labs").glob("lab_*.py"))
    if args.lab:
        labs = [x for x in labs if any(k in x.stem for k in args.lab)]
    out = [(REFERENCE.name, REFERENCE, REPO)]
    for lab in labs:
        if args.baseline and (args.baseline / "labs" / lab.name).exists():
            out.append((f"{lab.name} (baseline)", args.baseline / "labs" / lab.name,
                        args.baseline))
        out.append((lab.name, lab, REPO))
    return out


def one_run(args, items) -> dict:
    """Every measurement once: the cold runs of the floors and every notebook, interleaved;
    then each notebook's updates and exports; a dict by label."""
    commands = {"floor": ([sys.executable, "-c", FLOOR_CODE], REPO),
                FLOOR_FIRST: ([sys.executable, "-c", FLOOR_FIRST_CODE], REPO)}
    commands.update({label: ([sys.executable, str(path)], tree) for label, path, tree in items})
    cold = interleaved_cold_runs(commands, args.cold_runs)
    exported = {} if args.no_export else interleaved_exports(items, args.export_runs)
    rows = {label: {"notebook": label, **cold[label]} for label in ("floor", FLOOR_FIRST)}
    for label, path, _tree in items:
        rows[label] = bench_notebook(path, args, label=label, cold=cold[label],
                                     exported=exported.get(label, {}))
    return rows


def prime(items) -> None:
    """One untimed run of everything, so that the bytecode cache is warm (cached mode)."""
    cold_runs([sys.executable, "-c", FLOOR_CODE], 1)
    cold_runs([sys.executable, "-c", FLOOR_FIRST_CODE], 1)
    for _label, path, tree in items:
        cold_runs([sys.executable, str(path)], 1, tree=tree)
    exports(REFERENCE)


# --------------------------------------------------------------------------------------------
# Report: the README's Markdown


def _f(v, spec: str, missing: str = "n/a") -> str:
    return missing if v is None else format(v, spec)


def _span(values: list, spec: str) -> str:
    """'lo–hi' over runs ('x' when they agree to the digits shown)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return "n/a"
    lo, hi = format(min(vals), spec), format(max(vals), spec)
    return lo if lo == hi else f"{lo}–{hi}"


def _missed(values: list, target: float) -> str:
    """'' when every run meets ``target``; else says so, next to the figure."""
    vals = [v for v in values if v is not None]
    over = sum(v > target for v in vals)
    if not over:
        return ""
    return " **missed**" if over == len(vals) else f" **missed in {over} of {len(vals)} runs**"


def _per_run(runs: list[dict], label: str, get) -> list:
    out = []
    for run in runs:
        row = run.get(label)
        try:
            out.append(get(row, run) if row is not None else None)
        except (KeyError, TypeError, ZeroDivisionError):
            out.append(None)
    return out


def table(runs: list[dict], labels: list[str]) -> str:
    t = TARGETS
    head = (f"| notebook | cold run s (target < {t['cold_s']:g}) | cold − floor s | update p50 / "
            f"p95 ms (target p95 < {t['update_p95_ms']:g}) | × reference p95 | export s "
            f"(target < {t['export_s']:g}) | page KB student / instructor (target < "
            f"{t['page_kb']:g}) |")
    lines = [head, "|" + "---|" * 7]
    floor = _per_run(runs, "floor", lambda r, _run: r["cold_s"])
    lines.append(f"| floor: `{FLOOR_CODE}` | {_span(floor, '.2f')} | 0 | | | | |")
    md = _per_run(runs, FLOOR_FIRST, lambda r, _run: r["cold_s"])
    md_above = _per_run(runs, FLOOR_FIRST, lambda r, run: r["cold_s"] - run["floor"]["cold_s"])
    if any(v is not None for v in md):
        lines.append(f"| {FLOOR_FIRST}: `{FLOOR_FIRST_CODE}` | {_span(md, '.2f')} | "
                     f"{_span(md_above, '.2f')} | | | | |")
    for label in labels:
        is_ref = label == REFERENCE.name
        cold = _per_run(runs, label, lambda r, _run: r["cold_s"])
        above = _per_run(runs, label, lambda r, run: r["cold_s"] - run["floor"]["cold_s"])
        p50 = _per_run(runs, label, lambda r, _run: r["update"]["p50_ms"])
        p95 = _per_run(runs, label, lambda r, _run: r["update"]["p95_ms"])
        ratio = _per_run(runs, label, lambda r, run: r["update"]["p95_ms"]
                         / run[REFERENCE.name]["update"]["p95_ms"])
        exp = _per_run(runs, label, lambda r, _run: r["student_export_s"])
        pages = [_per_run(runs, label, lambda r, _run, m=m: r[f"{m}_page_kb"])
                 for m in ("student", "instructor")]
        flag = (lambda vals, key: "") if is_ref else (lambda vals, key: _missed(vals, t[key]))
        upd = ("not measured" if all(v is None for v in p95) else
               f"{_span(p50, '.1f')} / {_span(p95, '.1f')}{flag(p95, 'update_p95_ms')}")
        lines.append(
            f"| {label} | {_span(cold, '.2f')}{flag(cold, 'cold_s')} | {_span(above, '.2f')} | "
            f"{upd} | {'1' if is_ref else _span(ratio, '.2f')} | "
            f"{_span(exp, '.1f')}{flag(exp, 'export_s')} | "
            f"{_span(pages[0], '.0f')}{flag(pages[0], 'page_kb')} / "
            f"{_span(pages[1], '.0f')}{flag(pages[1], 'page_kb')} |")
    return "\n".join(lines)


def before_after(runs: list[dict], labels: list[str]) -> str:
    """Medians over the runs, this checkout against the baseline, same runs, same load, and
    the paired differences: the two copies of a lab run back to back in every round, so each
    round's difference sees one moment of the machine (its speed drifts between rounds). CPU
    seconds (the processes' user + system time) beside the wall time: on a shared machine
    they move far less with the other jobs' load."""
    def med(label, key):
        vals = [v for v in _per_run(runs, label, lambda r, _run: r[key]) if v is not None]
        return statistics.median(vals) if vals else None

    def pair(label, key):
        cpu = med(label, key.replace("_s", "_cpu_s"))
        return f"{_f(med(label, key), '.2f')} ({_f(cpu, '.2f')})"

    def paired(base, label, key):
        """Each round's after − before (measured back to back): 'median Δ (faster in k of n)'."""
        deltas = []
        for run in runs:
            b, a = (run.get(x, {}).get(key) or [] for x in (base, label))
            deltas += [y - x for x, y in zip(b, a)]
        if not deltas:
            return "n/a"
        faster = sum(d < 0 for d in deltas)
        return f"{statistics.median(deltas):+.2f} (faster in {faster} of {len(deltas)})"

    floor = med("floor", "cold_s")
    head = ("| notebook | cold s (CPU s) before → after | cold − floor s before → after | "
            "cold: paired Δ s | export s (CPU s) before → after | export: paired Δ s |")
    lines = [head, "|---|---|---|---|---|---|"]
    for label in labels:
        base = f"{label} (baseline)"
        b, a = med(base, "cold_s"), med(label, "cold_s")
        if label.endswith(" (baseline)") or label == REFERENCE.name or b is None:
            continue
        above_b = b - floor if floor else None
        above_a = a - floor if floor and a is not None else None
        lines.append(f"| {label} | {pair(base, 'cold_s')} → {pair(label, 'cold_s')} | "
                     f"{_f(above_b, '.2f')} → {_f(above_a, '.2f')} | "
                     f"{paired(base, label, 'cold_runs_s')} | "
                     f"{pair(base, 'student_export_s')} → {pair(label, 'student_export_s')} | "
                     f"{paired(base, label, 'student_export_runs_s')} |")
    lines.append(f"| (same runs) floor / reference notebook | {pair('floor', 'cold_s')} / "
                 f"{pair(REFERENCE.name, 'cold_s')} | | | reference "
                 f"{pair(REFERENCE.name, 'student_export_s')} | |")
    return "\n".join(lines)


def markdown(info: dict, runs: list[dict], labels: list[str], args) -> str:
    m = info["machine"]
    caption = (f"**`{info['command']}`, {info['started'][:16].replace('T', ' ')} UTC** on "
               f"{m['line']}; marimo {m['marimo']}, plotly {m['plotly']}, numpy {m['numpy']}; "
               f"load average {_f(info['load_before'], '.2f')} → {_f(info['load_after'], '.2f')}"
               f" on {m['logical_cpus']} logical CPUs; bytecode {args.bytecode}; {args.runs} "
               f"run(s) fixed in advance, each with the median of {args.cold_runs} cold runs"
               + ("" if args.no_export else
                  f", of {args.export_runs} student-copy exports")
               + ("" if args.no_updates else f" and {args.rounds} updates per widget")
               + "; every cell is the min–max over the runs.")
    out = [caption, "", table(runs, labels)]
    if args.baseline:
        out += ["", f"Before (`{args.baseline}`, {info.get('baseline_commit', '?')}) and after "
                f"({info.get('commit', '?')}), medians over the same run(s):", "",
                before_after(runs, labels)]
    return "\n".join(out)


def _commit(tree: Path) -> str | None:
    try:
        return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lab", action="append", default=[], help="only labs whose name contains this")
    p.add_argument("--runs", type=int, default=2, help="full repetitions, fixed in advance "
                   "(the table shows the range over them; default 2)")
    p.add_argument("--cold-runs", type=int, default=3, help="cold runs per notebook per run")
    p.add_argument("--export-runs", type=int, default=3,
                   help="student-copy exports per notebook per run (interleaved; the median)")
    p.add_argument("--values", type=int, default=6, help="distinct values per widget")
    p.add_argument("--rounds", type=int, default=12, help="timed updates per widget")
    p.add_argument("--no-export", action="store_true")
    p.add_argument("--no-updates", action="store_true", help="skip the widget updates")
    p.add_argument("--bytecode", choices=("cached", "none"), default="cached",
                   help="cached: compiled modules kept (a student's every open after the "
                   "first); none: every module compiled every time")
    p.add_argument("--baseline", type=Path, default=None, help="another checkout: also measure "
                   "its labs' cold runs and exports, interleaved with these (before/after)")
    p.add_argument("--out", type=Path, default=None, help="JSON file (default: results/)")
    p.add_argument("--browser", action="store_true", help="measure in chromium instead: "
                   "time to first/all figures and widget-to-redraw (benchmarks/bench_browser.py)")
    p.add_argument("--steps", type=int, default=6, help="browser mode: keyboard steps per widget")
    p.add_argument("--widget", action="append", default=[], metavar="TEXT",
                   help="browser mode: step only the lab widgets whose label contains TEXT, or "
                   "LAB:TEXT for one lab's (repeatable; the floor and reference notebooks are "
                   "stepped whole)")
    p.add_argument("--no-replay", action="store_true", help="browser mode: do not replay each "
                   "widget's figure changes alone (benchmarks/replay_notebook.py, its floor)")
    p.add_argument("--report", type=Path, metavar="JSON", help="browser mode: print the "
                   "tables again from a kept results file (its own command, date and load)")
    p.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = p.parse_args(argv)

    if args.worker:  # child process: one notebook's widget updates, JSON on the last line
        print(json.dumps(measure_updates(args.worker, values_per_widget=args.values,
                                         rounds=args.rounds)))
        return 0

    sys.path.insert(0, str(REPO))
    if args.report:
        return browser_report(args.report, p)
    if args.browser:
        if args.baseline:
            args.baseline = args.baseline.resolve()
            if not (args.baseline / "labs").is_dir():
                p.error(f"--baseline {args.baseline} is not a checkout of this project")
        return browser_main(args, argv)
    if args.runs < 1 or args.cold_runs < 1 or args.export_runs < 1:
        p.error("--runs, --cold-runs and --export-runs must be at least 1")
    if args.baseline:
        args.baseline = args.baseline.resolve()
    cache = None
    if args.bytecode == "cached":
        cache = tempfile.TemporaryDirectory(prefix="bench-pycache-")
        BYTECODE_ENV.update(PYTHONPYCACHEPREFIX=cache.name, PYTHONDONTWRITEBYTECODE=None)
    else:
        BYTECODE_ENV.update(PYTHONDONTWRITEBYTECODE="1", PYTHONPYCACHEPREFIX=None)
    items = notebooks(args)
    info = {"command": "python benchmarks/bench_labs.py " + shlex.join(
                list(argv) if argv is not None else sys.argv[1:]),
            "machine": machine(), "started": datetime.now(timezone.utc).isoformat(),
            "load_before": loadavg(), "targets": TARGETS, "bytecode": args.bytecode,
            "commit": _commit(REPO),
            "baseline_commit": _commit(args.baseline) if args.baseline else None,
            "settings": {"runs": args.runs, "cold_runs": args.cold_runs, "values": args.values,
                         "rounds": args.rounds}}
    print(f"Benchmarking {len(items)} notebook(s) and the floor, {args.runs} run(s), on "
          f"{info['machine']['line']}, load {info['load_before']} ...", flush=True)
    try:
        if cache is not None:
            print("priming the bytecode cache (untimed) ...", flush=True)
            prime(items)
        runs = []
        for i in range(args.runs):
            print(f"run {i + 1} of {args.runs}:", flush=True)
            runs.append(one_run(args, items))
    finally:
        if cache is not None:
            cache.cleanup()
    info["load_after"] = loadavg()
    info["runs"] = runs
    labels = [label for label, _path, _tree in items]
    info["markdown"] = markdown(info, runs, labels, args)
    print()
    print(info["markdown"])
    print("\nslowest cells on a widget change (median ms per run, wall, last run):")
    for label in labels:
        hot = (runs[-1].get(label, {}).get("update") or {}).get("hot_cells") or []
        if hot:
            print(f"  {label}: " + "; ".join(
                f"cell {h['cell']} `{h['first_line'][:40]}` {h['median_ms']:.1f}"
                for h in hot[:3]))
    for run in runs:
        for label, r in run.items():
            for e in (r.get("update") or {}).get("errors", []) or []:
                print(f"  {label}: {e}")
            for key in ("error", "student_error", "instructor_error"):
                if r.get(key):
                    print(f"  {label}: {key}: {r[key]}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = args.out or RESULTS / "latest.json"
    out.write_text(json.dumps(info, indent=1, default=str) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0


def browser_main(args, argv) -> int:
    """``--browser``: the felt speed in chromium, reference interleaved per lab."""
    import signal

    sys.path.insert(0, str(REPO / "benchmarks"))
    import bench_browser

    # Stopped with SIGTERM: unwind (servers stopped, results so far kept), as on Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    labs = sorted((REPO / "labs").glob("lab_*.py"))
    if args.lab:
        labs = [x for x in labs if any(k in x.stem for k in args.lab)]
    info = {"command": "python benchmarks/bench_labs.py " + shlex.join(
                list(argv) if argv is not None else sys.argv[1:]),
            "machine": machine(), "started": datetime.now(timezone.utc).isoformat(),
            "load_before": loadavg(), "commit": _commit(REPO), "targets": bench_browser.TARGETS,
            "settings": {"runs": args.runs, "steps": args.steps,
                         "quiet_ms": bench_browser.QUIET_MS, "replay": not args.no_replay,
                         "replay_kind": bench_browser.REPLAY_KIND, "widgets": args.widget}}
    print(f"Browser benchmark: {len(labs)} lab(s), the reference before each, the floor "
          f"notebook; {args.runs} run(s) on {info['machine']['line']}, load "
          f"{info['load_before']} ...", flush=True)
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = args.out or RESULTS / "browser-latest.json"

    def save(runs, final=False):
        info["load_after"], info["runs"], info["complete"] = loadavg(), runs, final
        info["markdown"] = _browser_markdown(info, runs, args)
        out.write_text(json.dumps(info, indent=1, default=str) + "\n", encoding="utf-8")

    if args.baseline:
        info["baseline"], info["baseline_commit"] = str(args.baseline), _commit(args.baseline)
    runs = bench_browser.run_browser(labs, REFERENCE, runs=args.runs, steps=args.steps,
                                     log=lambda m: print(m, flush=True), checkpoint=save,
                                     baseline=args.baseline, replay=not args.no_replay,
                                     only=tuple(args.widget))
    save(runs, final=True)
    print()
    print(info["markdown"])
    print("\nper widget (last run):")
    print("\n".join(bench_browser.widget_lines(runs)))
    print(f"wrote {out}")
    return 0


def browser_report(path: Path, parser) -> int:
    """``--report JSON``: a kept browser run's tables printed again (as the run printed them,
    with the report's present rules: a results file outlives the code that wrote it)."""
    try:
        info = json.loads(Path(path).read_text(encoding="utf-8"))
        settings, runs = info["settings"], info["runs"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        parser.error(f"--report {path}: not a browser benchmark's results file ({exc})")
    sys.path.insert(0, str(REPO / "benchmarks"))
    args = argparse.Namespace(runs=settings.get("runs", len(runs)), steps=settings.get("steps"),
                              no_replay=not settings.get("replay", False),
                              replay_kind=settings.get("replay_kind", "figures"))
    print(_browser_markdown(info, runs, args))
    return 0


def _browser_markdown(info: dict, runs: list, args) -> str:
    import bench_browser

    m = info["machine"]
    kind = getattr(args, "replay_kind", bench_browser.REPLAY_KIND)
    return (
        f"**`{info['command']}`, {info['started'][:16].replace('T', ' ')} UTC** on {m['line']};"
        f" marimo {m['marimo']}, plotly {m['plotly']}, Debian chromium headless; load average "
        f"{_f(info['load_before'], '.2f')} → {_f(info['load_after'], '.2f')} on "
        f"{m['logical_cpus']} logical CPUs; {args.runs} run(s), {args.steps} keyboard steps per "
        "widget; each cell is the min–max over the runs"
        + (f"; a lab marked (baseline) is the same lab from `{info['baseline']}` "
           f"({info.get('baseline_commit', '?')}), measured right after it against the same "
           "reference" if info.get("baseline") else "")
        + ("" if info.get("complete") else " (**incomplete**: the run was cut off)")
        + ".\n\n" + bench_browser.table(runs, kind)
        + (f"\n\nEvery widget that redraws a figure, against its floor: the "
           f"{bench_browser.replayed_words(kind)} replayed alone "
           "(`benchmarks/replay_notebook.py`: one cell hands marimo the recorded "
           + ("outputs, as the page received them; no physics" if kind == "outputs" else
              "figure JSON; no physics, no other output")
           + "); where the lab missed and that floor met, the same outputs replayed on the "
           "lab's page, each in its own cell among the lab's other cells as they stood "
           "(`bench_browser.page_notebook`). Per lab:\n\n"
           + bench_browser.widget_summary(runs) + "\n\nPer widget:\n\n"
           + bench_browser.widget_table(runs, kind) if args.runs and not args.no_replay else ""))


if __name__ == "__main__":
    sys.exit(main())
