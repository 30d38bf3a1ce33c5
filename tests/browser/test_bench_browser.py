"""Smoke test of the benchmark's browser mode (benchmarks/bench_browser.py): on the
floor notebook it sees the figure drawn, times a slider step to the redrawn figure, and
replays each widget's figure changes alone (benchmarks/replay_notebook.py); on a small
notebook, it steps a widget shown in two places once and tells same-labelled widgets apart.

The tests drive the benchmark's code in the suite's ``browser`` (whose cache outlives a page):
they check what it measures and how, not how long a first open takes; the benchmark's own
command line opens every page in a fresh context of a plain chromium."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser]

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_browser.py"


def test_browser_mode_times_first_figure_and_a_redraw(browser):
    bb = _bench_browser()
    row = bb.bench_notebook(browser, bb.FLOOR_NOTEBOOK, steps=2, floor=True, replay=True)
    assert "error" not in row, row.get("error")
    assert row["figures"] == row["figures_drawn"] == 9
    assert 0 < row["first_figure_s"] < 120
    by_label = {w["label"]: w for w in row["widgets"]}
    assert set(by_label) == {"empty cell", "text output", "plot, 2 points", "4 plots in 4 cells",
                             "4 plots in 1 cell"}
    plot = by_label["plot, 2 points"]
    # each key press redrew the figure, timed from the key press (never negative, never 0)
    assert plot["redraws"] == plot["steps"] == 2
    assert 0 < plot["p50_ms"] <= plot["p95_ms"] < bb.NO_REDRAW_MS + 1000
    assert plot["kernel_p50_ms"] is not None and plot["kernel_p50_ms"] > 0
    # the first figure change of a step comes after the key press and no later than the last
    assert all(0 < s["first_ms"] <= s["redraw_ms"] for s in plot["samples"])
    # a step of the four-figure sliders changes all four figures, in place
    for label in ("4 plots in 4 cells", "4 plots in 1 cell"):
        steps = by_label[label]["samples"]
        assert [s["figures_changed"] for s in steps] == [4, 4], label
        assert [s["figures_mounted"] for s in steps] == [0, 0], label
    # the replay redraws the same figures, step for step, in place; a widget that changes no
    # figure has nothing to replay
    for label, figures in (("plot, 2 points", 1), ("4 plots in 4 cells", 4),
                           ("4 plots in 1 cell", 4)):
        replay = by_label[label]["replay"]
        assert "error" not in replay, replay
        assert replay["redraws"] == 2 and 0 < replay["p50_ms"] <= replay["p95_ms"]
        assert [s["figures_changed"] for s in replay["samples"]] == [figures] * 2, label
        assert [s["figures_mounted"] for s in replay["samples"]] == [0, 0], label
    assert "replay" not in by_label["empty cell"] and "replay" not in by_label["text output"]
    assert row["replay"]["redraws"] == 6


#: A widget shown by two cells (a, t1), two sliders with one label (T), one of them made anew
#: by every step of a (the same object-id, a new element), and a dropdown with no label.
COPIES_NOTEBOOK = """
import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
    import plotly.graph_objects as go
    return go, mo


@app.cell
def _(mo):
    a = mo.ui.slider(1, 3, value=1, label="a")
    pick = mo.ui.dropdown(["x", "y"], value="x")
    return a, pick


@app.cell
def _(a, mo):
    t1 = mo.ui.slider(0, a.value + 3, value=1, label="T")
    t2 = mo.ui.slider(0, 3, value=2, label="T")
    return t1, t2


@app.cell
def _(a, go, mo, pick, t1, t2):
    mo.vstack([mo.md("Pick one"), pick, a, t1, t2,
               go.Figure(go.Scatter(y=[a.value, t1.value, t2.value, pick.value == "y"]))])
    return


@app.cell
def _(a, mo, t1):
    mo.hstack([a, t1])
    return
"""


def test_browser_mode_steps_each_widget_once_and_tells_same_labels_apart(browser, tmp_path):
    bb = _bench_browser()
    notebook = tmp_path / "copies_notebook.py"
    notebook.write_text(COPIES_NOTEBOOK)
    row = bb.bench_notebook(browser, notebook, steps=1)
    assert "error" not in row, row.get("error")
    rows = row["widgets"]
    assert [(w["kind"], w["label"][:21], w["copies"]) for w in rows] == [
        ("dropdown", "dropdown after 'Pick ", 1), ("slider", "a", 2), ("slider", "T", 2),
        ("slider", "T", 1)]
    assert len({w["oid"] for w in rows}) == 4 and rows[0]["oid"] in rows[0]["label"]
    # each stepped and redrew the figure, the second T too (not the first T found again)
    assert all("error" not in w and w["redraws"] == w["steps"] == 1 for w in rows), rows


#: One slider that changes a figure and, in another cell, a text; a third cell never changes.
CARDS_NOTEBOOK = """
import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
    import plotly.graph_objects as go
    n = mo.ui.slider(1, 5, value=2, label="n")
    n
    return go, mo, n


@app.cell
def _(go, n):
    go.Figure(go.Scatter(y=[0, n.value]))
    return


@app.cell
def _(mo, n):
    mo.md(f"<span class='card'>n is {n.value}</span>")
    return


@app.cell
def _(mo):
    mo.md("never changes")
    return
"""


def test_replay_plays_back_every_output_a_step_changed(browser, tmp_path):
    # the floor of a widget is its figure and its text (the outputs its steps changed), not
    # the figure alone and not the output that never changed
    bb = _bench_browser()
    notebook = tmp_path / "cards_notebook.py"
    notebook.write_text(CARDS_NOTEBOOK)
    row = bb.bench_notebook(browser, notebook, steps=2, replay=True)
    assert "error" not in row, row.get("error")
    (w,) = row["widgets"]
    replay = w["replay"]
    assert "error" not in replay, replay
    assert replay["outputs"] == 2
    assert replay["redraws"] == 2
    assert [s["figures_changed"] for s in replay["samples"]] == [1, 1]


def test_a_page_replay_steps_each_output_in_its_place_on_the_lab_s_page(browser, tmp_path):
    # the floor on the lab's page: the figure and the text the steps changed, each in its own
    # cell where the lab shows it, among the lab's other cells as they stood (the widget's
    # cell, the text that never changes), both redrawn on every replayed step
    bb = _bench_browser()
    notebook = tmp_path / "cards_notebook.py"
    notebook.write_text(CARDS_NOTEBOOK)
    states, whole = [], {}
    with bb._served(notebook) as url, bb._page(browser, url) as (page, _opened):
        ((index, w),) = bb.distinct_widgets(page.evaluate(bb.WIDGETS_JS))
        bb.step_widget(page, bb._rediscover(page, index, w), 2, record=states, whole=whole)
    assert len(states) == 3 and all(len(state) == 2 and None not in state for state in states)
    assert len(whole["cells"]) == 4 and whole["slots"] == [1, 2] and whole["widget_cell"] == 0
    assert "never changes" in whole["cells"][3]["data"]
    replayed = bb.bench_replays(browser, [("n", states)], 2, pages=[whole])[0]
    assert "error" not in replayed, replayed
    assert (replayed["cells"], replayed["page_cells"], replayed["outputs"],
            replayed["redraws"]) == (2, 4, 2, 2)
    assert [s["figures_changed"] for s in replayed["samples"]] == [1, 1]


def _bench_browser():
    spec = importlib.util.spec_from_file_location("bench_browser", BENCH)
    bb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bb)
    return bb


def test_plotly_react_benchmark_times_every_figure_of_a_notebook(browser):
    spec = importlib.util.spec_from_file_location(
        "bench_plotly_react", BENCH.parent / "bench_plotly_react.py")
    P = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(P)
    figures = P.notebook_figures(P.bench_browser.FLOOR_NOTEBOOK)
    assert len(figures) == 5  # the floor's one-figure cell and its four cells of four figures
    page = P.plotly_page(browser)
    try:
        rows = P.time_figures(page, figures, rounds=2)
    finally:
        page.close()
    assert set(rows) == set(figures)
    assert all(0 < r["react_ms"] < 10_000 and 0 < r["newplot_ms"] < 10_000 for r in rows.values())
