"""What a widget step re-runs, in every lab (each re-run cell costs a browser step
~5-15 ms, whether its output changed or not).

1. A live run's settings (time budget, precision to time, threads, workers, backend, matrix)
   are read at the press (``live.read_at_press``): no cell but the one that makes them names
   them, so a settings step re-runs nothing and never throws a finished measurement away.
2. Widgets are laid out where they are made: no cell names a widget only to show it
   (``notebook_support.cells_that_only_show``), but for the exceptions listed with a reason.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from marimo._plugins.ui._core.ui_element import UIElement
from notebook_support import cells_that_only_show, load_app

LABS = sorted((Path(__file__).resolve().parents[1] / "labs").glob("lab_*.py"))

#: Settings of a live run whose label does not say "budget" (those are found by label).
SETTINGS = {"lab_01_memory_wall": {"live_precision"},
            "lab_03_precision_rho": {"live_matrix"},
            "lab_06_many_chips": {"comm_workers", "comm_backend_choice"},
            "lab_07_your_model": {"run_threads"}}

#: Widgets a cell names only to show them, and why that cell re-runs on their steps anyway.
SHOWN_ELSEWHERE = {
    # the design panel, re-shown with each instrument, carries the compute note, which reads
    # every design widget: it re-runs on each of their steps whatever it names
    "lab_02_design_challenge": {"device_picker", "model_picker", "weight_picker",
                                "activation_picker", "kv_picker", "context_slider"},
    # the register-tile pickers are made anew for each machine, laid out with it
    "lab_05_memory_hierarchy": {"machine_picker"},
    # Part 1's collective panel shows the link picker made at the top of the lab
    "lab_06_many_chips": {"link_picker"},
}

#: Widgets a student steps (a typed number's box or a run button is named for its message or
#: its press, which is reading it).
STEPPED = {"slider", "dropdown", "radio", "switch", "multiselect"}


@pytest.fixture(scope="module", params=LABS, ids=lambda p: p.stem)
def lab(request, tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("ROOFLINE_LEDGER_DIR", str(tmp_path_factory.mktemp("ledger")))
    mp.setenv("ROOFLINE_STUDENT_ID", "tester")
    mp.delenv("ROOFLINE_REVEAL", raising=False)
    app = load_app(request.param, request.param.stem)
    _, defs = app.run()
    app._maybe_initialize()
    yield request.param.stem, app, {k: v for k, v in defs.items() if isinstance(v, UIElement)}
    mp.undo()


def test_a_live_runs_settings_are_named_only_where_they_are_made(lab):
    stem, app, widgets = lab
    settings = {k for k, w in widgets.items() if "budget" in str(w._args.label or "").lower()}
    settings |= SETTINGS.get(stem, set())
    assert settings <= set(widgets), settings - set(widgets)
    graph = app._graph
    for name in settings:
        makers = graph.definitions[name]
        others = [c.code.strip().splitlines()[0] for cid, c in graph.cells.items()
                  if name in c.refs and cid not in makers]
        assert others == [], f"{stem}: {name} is named by {others}"


def test_no_cell_names_a_widget_only_to_show_it(lab):
    stem, app, widgets = lab
    allowed = SHOWN_ELSEWHERE.get(stem, set())
    for name, w in sorted(widgets.items()):
        if type(w).__name__ not in STEPPED or name in allowed:
            continue
        assert cells_that_only_show(app, name) == [], f"{stem}: {name}"
