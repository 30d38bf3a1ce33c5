"""Smoke test of the benchmark's browser mode (benchmarks/bench_browser.py, issue 15): on the
floor notebook it sees the figure drawn and times a slider step to the redrawn figure."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser]

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_browser.py"


def test_browser_mode_times_first_figure_and_a_redraw(browser):
    spec = importlib.util.spec_from_file_location("bench_browser", BENCH)
    bb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bb)
    row = bb.bench_notebook(browser, bb.FLOOR_NOTEBOOK, steps=2, floor=True)
    assert "error" not in row, row.get("error")
    assert row["figures"] == row["figures_drawn"] == 1
    assert 0 < row["first_figure_s"] < 120
    by_label = {w["label"]: w for w in row["widgets"]}
    assert set(by_label) == {"empty cell", "text output", "plot, 2 points"}
    plot = by_label["plot, 2 points"]
    # each key press redrew the figure, timed from the key press (never negative, never 0)
    assert plot["redraws"] == plot["steps"] == 2
    assert 0 < plot["p50_ms"] <= plot["p95_ms"] < bb.NO_REDRAW_MS + 1000
    assert plot["kernel_p50_ms"] is not None and plot["kernel_p50_ms"] > 0
