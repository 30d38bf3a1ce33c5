"""Where a widget step's server time goes: the lab's kernel against its page floor.

    python benchmarks/bench_server_split.py --lab lab_07 --widget Model --steps 10

The browser benchmark splits a step at the page (key press, request sent, last message back,
figure drawn). This one splits the middle part inside the ``marimo run`` server, where the
kernel is a thread beside the server's event loop: it serves the lab through this script
(``--timed-marimo``: marimo's own CLI with four functions wrapped to write a time mark),
steps the widget in chromium as ``bench_browser`` does, then replays the same output
changes on the lab's page (``bench_browser.page_notebook``) through the same wrapper. Per
step, from the kernel taking the new value (``Kernel.set_ui_element_value``) it reports the
first cell starting, the cells' own run (``Runner.run``: their Python and marimo formatting
their outputs), the kernel finishing, and the server writing ``completed-run`` to the
websocket. The page floor runs none of the lab's code, so the difference in "cells" is the
lab's own cost and the rest is marimo's. Prints medians; ``--out`` keeps every step as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

MARK_ENV = "ROOFLINE_SERVER_MARKS"  # the file the wrapped server appends its marks to


_marks: dict = {}  # the open marks file, one per path: a mark costs a write, not an open


def mark(what: str) -> None:
    path = os.environ[MARK_ENV]
    if path not in _marks:
        _marks[path] = open(path, "a", encoding="utf-8", buffering=1)  # noqa: SIM115
    _marks[path].write(f"{time.perf_counter() * 1000:.3f} {what}\n")


def timed_marimo(argv: list[str]) -> int:
    """marimo's CLI with time marks around the kernel taking a value, each cell's run and
    each message the server writes to the websocket (the kernel runs in this process as a
    thread in ``marimo run``)."""
    from marimo._cli.cli import main
    from marimo._runtime import runtime
    from marimo._runtime.runner import cell_runner
    from marimo._server.api.endpoints.ws import ws_message_loop

    set_value, run_cell = runtime.Kernel.set_ui_element_value, cell_runner.Runner.run
    prepare = ws_message_loop.prepare_wire_message

    async def timed_set_value(self, *args, **kwargs):
        mark("kernel-start")
        try:
            return await set_value(self, *args, **kwargs)
        finally:
            mark("kernel-end")

    async def timed_run(self, cell_id, *args, **kwargs):
        mark(f"cell-start {cell_id}")
        try:
            return await run_cell(self, cell_id, *args, **kwargs)
        finally:
            mark(f"cell-end {cell_id}")

    def timed_prepare(data, *args, **kwargs):
        text = prepare(data, *args, **kwargs)
        if text is not None and '"completed-run"' in text[:40]:
            mark("completed-run")
        return text

    runtime.Kernel.set_ui_element_value = timed_set_value
    cell_runner.Runner.run = timed_run
    ws_message_loop.prepare_wire_message = timed_prepare
    sys.argv = ["marimo", *argv]
    return main()


def split_steps(lines: list[str]) -> list[dict]:
    """Marks (``'<ms> <what>'``) after the last ``BEGIN`` -> one dict per step, in ms from
    the kernel taking the value: ``first_cell``, ``cells`` (their runs summed), ``kernel``
    (it finished), ``sent`` (``completed-run`` written; None if not seen)."""
    begin = max((i for i, line in enumerate(lines) if line.endswith(" BEGIN")), default=-1)
    steps: list[list[tuple[float, str]]] = []
    for line in lines[begin + 1:]:
        t, _, what = line.partition(" ")
        if what == "kernel-start":
            steps.append([])
            t0 = float(t)
        elif steps:
            steps[-1].append((float(t) - t0, what))
    out = []
    for marks in steps:
        starts = [t for t, w in marks if w.startswith("cell-start")]
        ends = [t for t, w in marks if w.startswith("cell-end")]
        kernel = next((t for t, w in marks if w == "kernel-end"), None)
        if kernel is None:
            continue  # a step cut off by the end of the log
        out.append({"first_cell": starts[0] if starts else None,
                    "cells": sum(b - a for a, b in zip(starts, ends)), "cell_runs": len(starts),
                    "kernel": kernel,
                    "sent": next((t for t, w in marks if w == "completed-run"), None)})
    return out


def medians(steps: list[dict]) -> dict:
    out = {}
    for key in ("first_cell", "cells", "kernel", "sent"):
        values = [s[key] for s in steps if s[key] is not None]
        out[key] = round(statistics.median(values), 1) if values else None
    return out


def _served_timed(notebook: Path, marks: Path, **env_extra: str):
    """``bench_browser._served`` through this script's timed marimo, marking into ``marks``."""
    import bench_browser
    return bench_browser._served(notebook, marimo=(str(Path(__file__).resolve()), "--timed-marimo"),
                      **{MARK_ENV: str(marks)}, **env_extra)


def _step(page, w, steps, marks: Path, **kwargs):
    import bench_browser
    with marks.open("a", encoding="utf-8") as f:
        f.write("0 BEGIN\n")
    samples = bench_browser.step_widget(page, w, steps, **kwargs)
    # the steps back to where the widget started come after these: not timed here either
    return ([s["redraw_ms"] for s in samples],
            split_steps(marks.read_text().splitlines())[:len(samples)])


def run(lab: Path, label: str, steps: int) -> dict:
    import bench_browser
    from playwright.sync_api import sync_playwright
    out: dict = {"lab": lab.name, "widget": label, "steps": steps, "load_before": bench_browser._load()}
    with tempfile.TemporaryDirectory(prefix="bench-split-") as tmp, sync_playwright() as pw:
        tmp = Path(tmp)
        browser = pw.chromium.launch(executable_path=bench_browser.CHROMIUM, args=bench_browser.CHROMIUM_ARGS)
        try:
            states, whole = [], {}
            marks = tmp / "lab.marks"
            with _served_timed(lab, marks) as url, bench_browser._page(browser, url) as (page, _):
                found = [(i, w) for i, w in bench_browser.distinct_widgets(page.evaluate(bench_browser.WIDGETS_JS))
                         if w["label"] == label]
                if not found:
                    raise SystemExit(f"no widget labelled {label!r} in {lab.name}")
                index, w = found[0]
                kind = w["kind"]
                w = bench_browser._rediscover(page, index, w)
                out["lab_redraw_ms"], out["lab_split"] = _step(
                    page, w, steps, marks, record=states, whole=whole)
            bench_browser.write_states(tmp / "states.json", [(label, states)], kinds=[kind], pages=[whole])
            notebook = tmp / "page.py"
            notebook.write_text(bench_browser.page_notebook(**whole), encoding="utf-8")
            marks = tmp / "page.marks"
            with _served_timed(notebook, marks, ROOFLINE_REPLAY=str(tmp / "states.json")) as url, \
                    bench_browser._page(browser, f"{url}?widget=0") as (page, _):
                out["page_redraw_ms"], out["page_split"] = _step(
                    page, bench_browser.replay_stepper(page), len(states) - 1, marks)
        finally:
            browser.close()
    out["load_after"] = bench_browser._load()
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--timed-marimo"]:
        return timed_marimo(argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lab", required=True, help="a lab's file name or its start (lab_07)")
    p.add_argument("--widget", required=True, help="the widget's label, exactly")
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--out", type=Path, default=None, help="JSON file for every step")
    args = p.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import bench_browser
    reason = bench_browser.skip_reason(bench_browser.CHROMIUM, package="chromium")
    if reason:
        raise SystemExit(f"cannot run: {reason}")
    labs = [p for p in sorted((bench_browser.REPO / "labs").glob("lab_*.py")) if p.name.startswith(args.lab)]
    if not labs:
        raise SystemExit(f"no lab matches {args.lab!r}")
    lab = labs[0]
    result = run(lab, args.widget, args.steps)
    print(f"{lab.name} {args.widget!r}, {args.steps} steps, load {result['load_before']} → "
          f"{result['load_after']}; ms from the kernel taking the value, medians:")
    for name in ("lab", "page"):
        m = medians(result[f"{name}_split"])
        print(f"  {name:4}  first cell {m['first_cell']}  cells {m['cells']}  kernel done "
              f"{m['kernel']}  completed-run sent {m['sent']}  (redraw p50 "
              f"{bench_browser.pct([r for r in result[f'{name}_redraw_ms'] if r is not None], 50):.0f})")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
