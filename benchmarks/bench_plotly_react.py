"""plotly.js's own share of a redraw: every figure a lab draws, updated in place with
``Plotly.react`` in headless chromium, with nothing of marimo around it.

    python benchmarks/bench_plotly_react.py [--rounds 10] [--lab lab_03] [--bare]

Per notebook (every lab, the reference and the floor notebook): the notebook runs once as a
script in reveal mode (``app.run()``, a throwaway ledger), and every plotly figure it defines
as a global or shows as a cell's output is taken as marimo would send it
(``to_plotly_json``; a figure inside a stack or a callout is not seen). A blank chromium page loads
the plotly.js bundled with the plotly package (``plotly.offline.get_plotlyjs``; marimo's
frontend carries its own build of plotly.js). Each figure is drawn once (``Plotly.newPlot``),
then ``--rounds`` times given new data arrays with every y value scaled by 1.05 or 1.10, as a
re-run cell hands plotly new arrays, and redrawn with ``Plotly.react``; each redraw is timed
with ``performance.now()`` until the next animation frame. The first two are warm-up and left
out. Prints, per notebook, the median ``Plotly.react`` of its figures (min–max over figures)
and of ``Plotly.newPlot``, with the date, the machine and the load average.

Beside the browser table (``bench_labs.py --browser``) this says how much of a step is
plotly.js redrawing a figure and how much is the rest of the page: marimo's frontend turning
the kernel's messages into the cell's new output.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
import bench_browser  # noqa: E402  (puts tests/browser on the path)
from browser_support import isolated_env  # noqa: E402

WARMUP = 2

#: Run in a child process: the notebook as a script, its figures as plotly JSON on stdout.
DUMP = r"""
import importlib.util, json, sys
import plotly.graph_objects as go
spec = importlib.util.spec_from_file_location("notebook", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
outputs, defs = module.app.run()
found = {id(v): (k, v) for k, v in defs.items() if isinstance(v, go.Figure)}
for i, v in enumerate(outputs):  # figures a cell shows without naming them
    if isinstance(v, go.Figure) and id(v) not in found:
        found[id(v)] = (f"output {i}", v)
figs = {k: v.to_plotly_json() for k, v in found.values()}
print(json.dumps(figs, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o)))
"""

#: One figure: newPlot once, then ``rounds`` Plotly.react calls with fresh, scaled data.
REACT_JS = r"""
async ([fig, rounds]) => {
  const div = document.createElement('div');
  div.style.width = '900px';
  document.body.appendChild(div);
  const frame = () => new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  let t0 = performance.now();
  await Plotly.newPlot(div, fig.data, fig.layout || {});
  await frame();
  const newPlot = performance.now() - t0;
  const react = [];
  for (let i = 0; i < rounds; i++) {
    const scale = 1 + 0.05 * ((i % 2) + 1);
    const data = JSON.parse(JSON.stringify(fig.data)).map(t => Array.isArray(t.y)
      ? {...t, y: t.y.map(v => typeof v === 'number' ? v * scale : v)} : t);
    const layout = JSON.parse(JSON.stringify(fig.layout || {}));
    t0 = performance.now();
    await Plotly.react(div, data, layout);
    await frame();
    react.push(performance.now() - t0);
  }
  Plotly.purge(div);
  div.remove();
  return {newPlot, react};
}
"""


def notebook_figures(path: Path) -> dict:
    """The figures ``path`` defines as globals once run in reveal mode."""
    with tempfile.TemporaryDirectory(prefix="bench-plotly-") as tmp:
        env = isolated_env(Path(tmp), ROOFLINE_REVEAL="1", ROOFLINE_STUDENT_ID="bench")
        out = subprocess.run([sys.executable, "-c", DUMP, str(path.resolve()), "--reveal"],
                             env=env, cwd=tmp, capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"{path.name} did not run: {out.stderr.strip().splitlines()[-1:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def bare(fig: dict) -> dict:
    """``fig`` without annotations, shapes, legend and minor grid lines."""
    layout = {k: v for k, v in (fig.get("layout") or {}).items()
              if k not in ("annotations", "shapes")}
    layout["showlegend"] = False
    for axis in [k for k in layout if k.startswith(("xaxis", "yaxis"))]:
        layout[axis] = {**layout[axis], "minor": {"showgrid": False}}
    return {**fig, "layout": layout}


def plotly_page(browser):
    """A blank page holding the plotly package's plotly.js, nothing of marimo."""
    from plotly.offline import get_plotlyjs

    page = browser.new_page(viewport=bench_browser.VIEWPORT)
    page.set_content("<!doctype html><html><body></body></html>")
    page.add_script_tag(content=get_plotlyjs())
    return page


def time_figures(page, figures: dict, rounds: int, *, stripped: bool = False) -> dict:
    """Per figure: its newPlot and its median Plotly.react (warm-up left out), in ms."""
    rows = {}
    for name, fig in figures.items():
        fig = bare(fig) if stripped else fig
        t = page.evaluate(REACT_JS, [fig, rounds + WARMUP])
        rows[name] = {"newplot_ms": t["newPlot"], "react_ms": statistics.median(t["react"][WARMUP:])}
    return rows


def markdown(command: str, started: str, machine: str, load: tuple, version: str,
             results: dict, stripped: bool = False) -> str:
    lines = [f"**`{command}`, {started} UTC** on {machine}; Debian chromium headless; plotly.js "
             f"{version} (the plotly package's bundle); load average {load[0]} → {load[1]}"
             + ("; every figure stripped of annotations, shapes, legend and minor grid lines."
                if stripped else "."),
             "", "| notebook | figures | Plotly.react median ms (min–max over its figures) | "
             "Plotly.newPlot median ms |", "|---|---|---|---|"]
    for name, rows in results.items():
        if not rows:
            lines.append(f"| {name} | 0 | | |")
            continue
        react = [r["react_ms"] for r in rows.values()]
        new = [r["newplot_ms"] for r in rows.values()]
        lines.append(f"| {name} | {len(rows)} | {statistics.median(react):.0f} "
                     f"({min(react):.0f}–{max(react):.0f}) | {statistics.median(new):.0f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=10, help="timed redraws per figure")
    ap.add_argument("--lab", action="append", default=[], help="only labs whose name has this")
    ap.add_argument("--bare", action="store_true",
                    help="strip annotations, shapes, legend and minor grid lines first")
    a = ap.parse_args(argv)
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    if bench_browser.cannot_run():
        return 1
    labs = sorted(p for p in (REPO / "labs").glob("lab_*.py")
                  if not a.lab or any(x in p.stem for x in a.lab))
    notebooks = labs + [REPO / "benchmarks" / "reference_notebook.py", bench_browser.FLOOR_NOTEBOOK]
    from playwright.sync_api import sync_playwright
    from plotly.offline import get_plotlyjs_version

    from labs.core.measure.device import load_average, machine_line

    started, before = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M"), load_average()
    results = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=bench_browser.CHROMIUM, args=bench_browser.CHROMIUM_ARGS)
        try:
            page = plotly_page(browser)
            for nb in notebooks:
                print(f"{nb.name} ...", file=sys.stderr, flush=True)
                results[nb.name] = time_figures(page, notebook_figures(nb), a.rounds,
                                                stripped=a.bare)
        finally:
            browser.close()
    print(markdown(bench_browser.command_line("bench_plotly_react.py", argv), started, machine_line(), (before, load_average()),
                   get_plotlyjs_version(), results, a.bare))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
