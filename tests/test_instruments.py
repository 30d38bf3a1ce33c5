"""No open instrument answers an open prediction (LABS_SPEC §3, "Instruments open on what they
reveal"), every lab, read from the lab itself:

1. the lab declares what each of its predictions' answers follows from (``INSTRUMENTS``, a
   ``quiz.Instruments``), every catalogue item, in the lab's order;
2. every declared instrument stops on the rule (``INSTRUMENTS.gate(name, locked)``) and every
   gate names a declared instrument;
3. each instrument comes after the predictions it waits for (a student meets the question
   before the view that would answer it);
4. with any set of predictions locked (each prefix of the lab's order, and every set that
   leaves just one open), each gate is closed exactly when the rule says so, and nothing below
   a closed gate runs;
5. with every prediction locked and each widget swept, every view that follows a widget a
   student moves is behind a gate, and each dimension it shows (a number with its unit, a
   regime's name: ``instrument_support.dimensions_shown``) is declared by an instrument gating
   it;
6. with every prediction locked, every cell that opens with a prediction (a comparison, a
   math peek, a reflection) and shows a dimension is behind a gate that declares it: what
   opens after one lock must not answer another prediction still open, so it declares what it
   shows like any instrument (the takeaways, which wait for every prediction, aside);
7. locking a prediction re-runs no cell that holds what a student did (a widget, a measure
   button, a measurement's result) unless that cell's instruments wait for it: a measurement
   stays on the page while the student locks later predictions.

Which case of a dimension a view shows (``time:allreduce`` or ``time:exposed``) is held by the
answer walks, which search the answers' values with one prediction open in any order
(``tests/test_answer_leaks.py``).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labs.core import catalogue, quiz
from instrument_support import dimensions_shown, lab_gates
from leak_support import (DownstreamRuns, collect_references, lab_files, locked,
                          prediction_steps, rendered_cells, run_with_outputs)
from notebook_support import load_app
from widget_sweep import changed_defs, sample_settings

ROOT = Path(__file__).resolve().parents[1]
_IS_OPEN = re.compile(r"INSTRUMENTS\.is_open\(\s*[\"']([^\"']+)[\"']")
LABS = lab_files(ROOT)
pytestmark = pytest.mark.slow


class LabUnderTest:
    """One lab: its app, declarations, gates, prediction steps and a closed run."""

    def __init__(self, lab_file: Path, ledger_dir: Path):
        self.file = lab_file
        self.app = load_app(lab_file, f"_{lab_file.stem}_instruments")
        self.references = collect_references(lab_file, ledger_dir)
        self.steps = prediction_steps(self.app, self.references)
        self.outputs, self.closed = run_with_outputs(self.app)
        self.rule = self.closed.get("INSTRUMENTS")
        self.gates = lab_gates(self.app)
        self.cells = {d.cell_id: d for d in self.app._cell_manager.cell_data()}
        self.position = {cid: i for i, cid in enumerate(self.cells)}
        self.graph = self.app._graph

    def locks(self, items) -> dict:
        """``defs`` that lock ``items`` (with their reference answers) and leave the rest
        as a student finds them."""
        out: dict = {}
        for s in self.steps:
            if s.item_id in items:
                out.update({n: self.closed[n] for n in self.cells[s.cell_id].cell.defs
                            if n in self.closed})
                out[s.variable] = locked(s.reference)
        return out

    def gated_by(self, cid) -> set[str]:
        """The instruments whose gate is ``cid`` or above it, or that it (or a cell above it)
        asks about with ``INSTRUMENTS.is_open(name, ...)``."""
        above = self.graph.ancestors(cid) | {cid}
        return {g.instrument for g in self.gates if g.cell_id in above} | {
            name for c in above for name in _IS_OPEN.findall(self.cells[c].code)}


@pytest.fixture(scope="module", params=LABS, ids=[p.stem for p in LABS])
def lab(request, tmp_path_factory) -> LabUnderTest:
    return LabUnderTest(request.param, tmp_path_factory.mktemp(request.param.stem))


def test_every_prediction_declares_what_its_answer_follows_from(lab):
    assert isinstance(lab.rule, quiz.Instruments), (
        f"{lab.file.name}: declare INSTRUMENTS = quiz.Instruments(answers=..., "
        "instruments=...) in the lab's constants cell")
    entry = next(e for e in catalogue.catalogue() if e.file == lab.file.name)
    assert list(lab.rule.order) == entry.item_ids, (
        f"{lab.file.name}: INSTRUMENTS.answers must list every prediction in the lab's order")


def test_every_instrument_stops_on_the_rule(lab):
    declared = set(lab.rule.instruments)
    gated = {g.instrument for g in lab.gates}
    assert declared <= gated, f"{lab.file.name}: declared but never gated: {declared - gated}"
    assert gated <= declared, f"{lab.file.name}: gated but not declared: {gated - declared}"


def test_each_instrument_comes_after_the_predictions_it_waits_for(lab):
    where = {s.item_id: lab.position[s.cell_id] for s in lab.steps}
    late = [(g.instrument, item) for g in lab.gates for item in lab.rule.answered_by(g.instrument)
            if where[item] > g.index]
    assert not late, (f"{lab.file.name}: an instrument comes before a prediction it answers "
                      f"(move the prediction above it, or into a 'predict first' block): {late}")


def _lock_sets(order: tuple[str, ...]) -> list[frozenset[str]]:
    prefixes = [frozenset(order[:k]) for k in range(len(order) + 1)]
    all_but_one = [frozenset(order) - {item} for item in order]
    return list(dict.fromkeys(prefixes + all_but_one))


def test_gates_follow_the_rule_whatever_the_order(lab):
    for items in _lock_sets(lab.rule.order):
        outputs, defs = run_with_outputs(lab.app, lab.locks(items) or None)
        said: dict[str, bool] = {}
        for g in lab.gates:
            is_open = lab.rule.is_open(g.instrument, items)
            below = lab.graph.descendants(g.cell_id) - {
                cid for cid in lab.graph.descendants(g.cell_id)
                if set(lab.cells[cid].cell.defs) & set(lab.locks(items))}
            names = {n for cid in below | {g.cell_id} for n in lab.cells[cid].cell.defs}
            shown = sorted(n for n in names if n in defs)
            if not is_open:
                assert not shown, (
                    f"{lab.file.name}: with {sorted(items)} locked, '{g.instrument}' should "
                    f"wait for {lab.rule.waiting(g.instrument, items)}, but {shown} ran")
            if not is_open and _reached(lab, g.cell_id, defs):
                text = getattr(outputs.get(g.cell_id), "text", "") or ""
                said[g.instrument] = said.get(g.instrument, False) or "Lock Prediction" in text
        quiet = sorted(name for name, told in said.items() if not told)
        assert not quiet, (f"{lab.file.name}: with {sorted(items)} locked, closed instruments "
                           f"{quiet} say nowhere what to lock")


def _reached(lab: LabUnderTest, cid, defs: dict) -> bool:
    """Whether the cell ran: every name it reads from another cell was defined (a cell below a
    measure button that was never pressed does not run, gate or no gate)."""
    others = {n for other, d in lab.cells.items() if other != cid for n in d.cell.defs}
    return all(n in defs for n in lab.cells[cid].cell.refs & others)


def _widgets(lab: LabUnderTest, defs: dict) -> dict:
    """Widgets a student moves (not the prediction and explain forms)."""
    out = {}
    for name, value in defs.items():
        if isinstance(value, quiz.PredictionForm) or name.startswith("_"):
            continue
        if sample_settings(value):
            out[name] = value
    return out


def test_every_view_a_widget_moves_is_a_declared_instrument(lab):
    everything = lab.locks(set(lab.rule.order))
    downstream = DownstreamRuns(lab.app, everything)
    owner = {n: cid for cid, d in lab.cells.items() for n in d.cell.defs}
    problems: dict = {}
    memo: dict = {}
    for name, widget in _widgets(lab, downstream.defs).items():
        reached = lab.graph.descendants(owner[name])
        for value in sample_settings(widget):
            outputs, _ = downstream.run(changed_defs(lab.app, downstream.defs, {name: value}))
            for cell in rendered_cells(lab.app, outputs, memo=memo):
                cid = list(lab.cells)[cell.index]
                if cid not in reached:
                    continue
                shown = dimensions_shown(cell.text)
                if not shown:
                    continue
                gates = lab.gated_by(cid)
                declared = {q.partition(":")[0] for g in gates
                            for q in lab.rule.instruments[g]}
                for dimension, example in shown.items():
                    if dimension not in declared:
                        problems.setdefault((cell.where(), dimension), (
                            f"{name} = {value!r}: shows {example!r} "
                            f"(gated by {sorted(gates) or 'no instrument'})"))
    assert not problems, (f"{lab.file.name}: views that show a dimension no gating instrument "
                          "declares:\n" + "\n".join(f"  - {where}: {dim}: {why}"
                                                   for (where, dim), why in problems.items()))


def _holds_state(lab: LabUnderTest, cid, defs: dict) -> bool:
    """The cell reads a run button (a measurement starts there), or makes a widget behind an
    instrument's gate (a widget made outside every gate shows nowhere until its instrument
    opens, so re-making it before then loses nothing)."""
    import marimo as mo

    if any(isinstance(defs.get(n), mo.ui.run_button) for n in lab.cells[cid].cell.refs):
        return True
    made = [defs.get(n) for n in lab.cells[cid].cell.defs]
    return bool(lab.gated_by(cid)) and any(_is_widget(v) for v in made)


def _is_widget(value) -> bool:
    from marimo._plugins.ui._core.ui_element import UIElement

    return isinstance(value, UIElement)


def test_locking_a_prediction_re_runs_no_measurement_it_does_not_answer(lab):
    everything = lab.locks(set(lab.rule.order))
    _, defs = run_with_outputs(lab.app, everything)
    by_cell = {s.cell_id: s.item_id for s in lab.steps}
    problems = []
    for cid in lab.cells:
        if not _holds_state(lab, cid, defs):
            continue
        above = lab.graph.ancestors(cid)
        items = {by_cell[c] for c in above if c in by_cell}
        needed = {i for g in lab.gated_by(cid) for i in lab.rule.answered_by(g)}
        if items - needed:
            first = lab.cells[cid].code.strip().splitlines()[0][:60]
            problems.append(f"cell {lab.position[cid]} (`{first}`) re-runs when "
                            f"{sorted(items - needed)} lock (gate it by "
                            "INSTRUMENTS.gate(name, <only the predictions it waits for>))")
    assert not problems, f"{lab.file.name}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("text, dimension", [
    ("59.5 % busy", "share"), ("(10%)", "share"), ("spread 4%\n", "share"),
    ("171\n\n%{hovertext}", None),  # a plotly hover template's token after a position
    ("64.0\n\n        \n100%400px__resizeIframe(this)0", None),  # a figure iframe's width
    ("ridge 591 OP/B", "intensity"),  # integer math's intensity
])
def test_a_share_is_a_number_before_a_percent_sign_not_markup(text, dimension):
    assert dimensions_shown(text).keys() == ({dimension} if dimension else set())


def test_every_view_that_opens_with_a_lock_declares_what_it_shows(lab):
    everything = lab.locks(set(lab.rule.order))
    outputs, _ = run_with_outputs(lab.app, everything)
    below = set()
    for step in lab.steps:
        below |= lab.graph.descendants(step.cell_id)
    problems = {}
    for cell in rendered_cells(lab.app, outputs):
        cid = list(lab.cells)[cell.index]
        if cid not in below or "takeaways_gate" in cell.code:
            continue
        declared = {q.partition(":")[0] for g in lab.gated_by(cid)
                    for q in lab.rule.instruments[g]}
        for dimension, example in dimensions_shown(cell.text).items():
            if dimension not in declared:
                problems.setdefault(cell.where(), []).append(f"{dimension} ({example!r})")
    assert not problems, (
        f"{lab.file.name}: views that open with a lock show dimensions no gate declares "
        "(gate them with INSTRUMENTS.gate and declare what they show):\n" + "\n".join(
            f"  - {where}: {', '.join(dims)}" for where, dims in problems.items()))
