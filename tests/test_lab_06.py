"""Lab 6 "Many chips", headless: locked and unlocked runs, the two serving failure states and
backing out of them, the link roof's binding switch, the live cell's no-backend message and a
real run, ledger item ids and locks restored from the ledger, the instructor reveal, export."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest

from labs.core import collectives, quiz, sharding
from labs.core.measure import live
from notebook_support import cells_that_only_show, export_page, load_app

LAB_FILE = Path(__file__).resolve().parents[1] / "labs" / "lab_06_many_chips.py"
ITEMS = {"lab06.allreduce_ms", "lab06.tp_shard_pcie", "lab06.tp_shard_nvlink",
         "lab06.tp_comm_degree", "lab06.dp_exposed_us", "lab06.measured_collectives"}
PREDICTION_ITEMS = ITEMS - {"lab06.measured_collectives"}
INSTRUMENTS = ("allreduce_figure", "allreduce_actual_ms", "comm_status", "comm_run",
               "shard_mm", "shard_now", "three_roofs", "shard_time_figure", "shard_actual",
               "serve_rows", "serve_now", "serve_diagnosis", "serve_figure", "serve_actual",
               "train_now", "train_figure", "train_actual")  # absent while gates are closed
DEVICE = "h100-sxm"  # the opening chip; the opening link is NVLink 4


@pytest.fixture(scope="module")
def app():
    return load_app(LAB_FILE, "_lab06_under_test")


PREDICTIONS = {
    "allreduce_prediction": quiz.Prediction("lab06.allreduce_ms", 1.1, units="ms",
                                            confidence=2, reason="900 GB/s"),
    "shard_slow_prediction": quiz.Prediction("lab06.tp_shard_pcie", 4096, units="elements",
                                             confidence=2, reason="t"),
    "shard_fast_prediction": quiz.Prediction("lab06.tp_shard_nvlink", 512, units="elements",
                                             confidence=2, reason="t"),
    "serve_prediction": quiz.Prediction("lab06.tp_comm_degree", 16, answer_type="choice",
                                        label="16-way", confidence=3, reason="t"),
    "train_prediction": quiz.Prediction("lab06.dp_exposed_us", 10000, units="µs",
                                        confidence=1, reason="t"),
}


def _texts(outputs) -> str:
    return "\n".join(getattr(o, "text", "") or "" for o in outputs if o is not None)


#: A widget cell's layout of its widgets (shown by a cell that names no widget): overridden
#: with a plain stand-in, never a widget.
LAYOUT = object()


class Reader(dict):
    """A widget cell's ``live.read_at_press`` reader ({setting: widget name}): a run cell
    reads its settings through it when its button is pressed; overridden with the same
    reader over the stand-ins."""


#: Each widget cell's names with their opening values: overriding one widget of a cell means
#: providing all of that cell's definitions (marimo's rule for app.run(defs=...)).
WIDGET_CELLS = (
    {"device_picker": DEVICE, "link_picker": "nvlink4", "context_controls": LAYOUT},
    {"workers_slider": 8, "workers_controls": LAYOUT},
    {"comm_workers": 2, "comm_budget": 8, "comm_backend_choice": "auto",
     "comm_settings": Reader(workers="comm_workers", budget="comm_budget",
                             backend="comm_backend_choice")},
    {"comm_button": False},
    {"shard_k_slider": 1024, "shard_n_slider": 8, "shard_tokens_slider": 4096,
     "shard_block": 2, "shard_controls": LAYOUT},
    {"serve_device": "h100-pcie", "serve_link": "pcie5-x16", "serve_model": "llama-3-70b",
     "serve_weights": "bf16", "serve_tp": 4, "serve_batch": 1, "serve_context": 8192,
     "serve_controls": LAYOUT},
    {"train_model": "llama-3-8b", "train_n": 32, "train_tokens": 1024, "train_nics": 8,
     "train_overlap": False, "train_controls": LAYOUT},
)


def _stand_in(cell: dict, name: str, values: dict):
    v = cell[name]
    if v is LAYOUT:
        return f"({name})"
    if isinstance(v, Reader):
        return live.read_at_press(**{setting: SimpleNamespace(value=values.get(k, cell[k]))
                                     for setting, k in v.items()})
    return SimpleNamespace(value=values.get(name, v))


def _set(**values):
    """Widget stand-ins for ``values``, plus the opening values of the other widgets defined
    in the same cells."""
    out = {}
    for cell in WIDGET_CELLS:
        if set(cell) & set(values):
            out.update({k: _stand_in(cell, k, values) for k in cell})
    unknown = set(values) - set(out)
    assert not unknown, f"not a widget of the lab: {unknown}"
    return out


def _re_run_by(app, widget: str) -> list[str]:
    """The code of every cell a step of ``widget`` re-runs: those that name it, other than its
    maker, and every cell below them."""
    from marimo._runtime import dataflow

    app._maybe_initialize()
    graph = app._graph
    named = {cid for cid, c in graph.cells.items() if widget in c.refs}
    rerun = dataflow.transitive_closure(graph, named - set(graph.definitions[widget]))
    return [graph.cells[cid].code for cid in rerun]


def test_locked_run_hides_every_instrument(env, app):
    outputs, defs = app.run()
    for name in PREDICTIONS:
        assert defs[name] is None, name
    for name in INSTRUMENTS:
        assert name not in defs, name
    text = _texts(outputs)
    assert "Lock prediction 1 to reveal the collective" in text
    assert "Lock predictions 2 and 3 to reveal the three roofs." in text
    assert "Lock prediction 4 to reveal the serving instrument." in text
    assert "Lock prediction 5 to reveal the training-step instrument." in text
    assert "they appear once all 5 predictions of this lab are locked (0 so far)" in text
    assert "Math peek" not in text  # the equations give the answers away
    assert "Link, one way" not in text  # how a datasheet figure becomes B is Part 1's question
    assert "Key takeaways" not in text and "Traceback" not in text
    assert defs["lab"].events() == []


def test_unlocked_run_shows_figures_with_core_numbers(env, app):
    outputs, defs = app.run(defs=PREDICTIONS)
    for name in ("allreduce_figure", "three_roofs", "shard_time_figure", "serve_figure",
                 "train_figure"):
        assert isinstance(defs[name], go.Figure), name
    # Part 1: 2 x 7/8 x 1 GB / 450 GB/s + 14 x 1 µs = 3.90 ms (not 1 GB / 900 GB/s = 1.1 ms)
    assert defs["allreduce_actual_ms"] == pytest.approx(3.902889)
    text = _texts(outputs)
    assert "3.9 ms" in text and "You predicted" in text
    # Part 2: the critical slices of a GeLU MLP block (2 matmuls per all-reduce), n = 8:
    # H100 PCIe on PCIe Gen5 7/8 x 2 x 756e12 / 63e9 / 2 = 10,500; H100 SXM on NVLink 4
    # 7/8 x 2 x 989.5e12 / 450e9 / 2 = 1,924.0
    assert defs["shard_actual"]["slow"] == pytest.approx(10500, rel=1e-3)
    assert defs["shard_actual"]["fast"] == pytest.approx(7 / 8 * 989.5e12 / 450e9, abs=0.01)
    mm = sharding.sharded_matmul(4096, 8192, 8192, 8, "bf16", matmuls=2)
    assert defs["shard_mm"] == mm
    assert defs["shard_now"] == sharding.shard_times(mm, DEVICE, "nvlink4")
    assert defs["shard_now"].binding == "link"  # 1024 < 1924: communication-bound
    assert "communication-bound" in text
    link_pts = next(t for t in defs["three_roofs"].data
                    if t.name.startswith("this layer at its link intensity"))
    assert list(link_pts.x) == pytest.approx([mm.ai_link])
    # Part 3 opens on the question's case (H100 PCIe on PCIe Gen5): 4-way fits; the answer
    # is 16-way
    assert defs["serve_now"] == sharding.tp_serving("llama-3-70b", "h100-pcie", "pcie5-x16", 4,
                                                    batch=1, seq_len=8192)
    assert defs["serve_diagnosis"].kind == "ok" and defs["serve_actual"] == 16
    # Part 4: 4 nodes, a NIC per GPU: the slower level is the node's, 2 x 7/8 / 450e9 =
    # 3.889 ps/B (the NICs: 2 x 3/4 / 8 / 50e9 = 3.75 ps/B); the all-reduce of P = 8.030e9
    # bf16 gradients takes 2P x 3.889 ps/B + (14 x 1 + 6 x 5) µs = 62.50 ms; the backward
    # pass 4 P x 1,024 / 989.5e12 = 33.24 ms; each GPU waits 29.3 ms per step
    p = 8_030_261_248
    wait_us = (2 * p * 1.75 / 450e9 + 44e-6 - 4 * p * 1024 / 989.5e12) * 1e6
    assert defs["train_actual"] == pytest.approx(wait_us) and round(wait_us, -2) == 29300
    assert defs["train_critical"] == pytest.approx(2 * 1.75 / 450e9 * 989.5e12 / 4)  # 1,924
    assert defs["train_now"] == sharding.dp_step("llama-3-8b", 32, 1024, DEVICE, "bf16",
                                                 "nvlink4", overlap=False, nics_per_node=8)
    assert "Key takeaways" in text and "Traceback" not in text
    # every comparison recorded what the instrument showed, under the stable item ids
    results = {e["item_id"]: e["payload"] for e in defs["lab"].events(kind="result")}
    assert set(results) == PREDICTION_ITEMS
    assert results["lab06.tp_comm_degree"]["actual"] == 16
    assert results["lab06.dp_exposed_us"]["actual"] == 29300


def test_too_few_gpus_is_out_of_memory_and_backing_out_recovers(env, app):
    outputs, defs = app.run(defs={**PREDICTIONS, **_set(serve_tp=1)})
    assert defs["serve_diagnosis"].kind == "oom" and not defs["serve_now"].fits
    text = _texts(outputs)
    assert "Out of memory: each GPU needs" in text and "n = 2 fits" in text
    assert "does not fit" in text
    outputs, defs = app.run(defs={**PREDICTIONS, **_set(serve_tp=2)})
    assert defs["serve_diagnosis"].kind == "ok"
    assert "Out of memory" not in _texts(outputs)
    # fewer bits also backs out: int4 weights fit on one GPU
    _, defs = app.run(defs={**PREDICTIONS, **_set(serve_tp=1, serve_weights="int4-g128")})
    assert defs["serve_now"].fits


def test_too_many_gpus_over_a_slow_link_and_backing_out(env, app):
    # H100 PCIe cards one per machine, joined by InfiniBand NDR: 16 GPUs fall behind 8
    slow = {**PREDICTIONS, **_set(serve_tp=16, serve_link="ib-ndr")}
    outputs, defs = app.run(defs=slow)
    assert defs["serve_diagnosis"].kind == "comm"
    rows = {s.n: s for s in defs["serve_rows"]["ib-ndr"]}
    assert rows[16].tokens_per_s < rows[8].tokens_per_s
    text = _texts(outputs)
    assert "More GPUs, fewer tokens/s." in text and "fewer GPUs or a faster link" in text
    # back out: fewer GPUs on the same link
    outputs, defs = app.run(defs={**slow, **_set(serve_tp=8)})
    assert defs["serve_diagnosis"].kind != "comm"
    assert "More GPUs, fewer tokens/s." not in _texts(outputs)


def test_a_device_where_nothing_fits_says_so(env, app):
    # 256 sequences of 8k tokens: the KV cache alone is 687 GB, 86 GB per GPU at 8 KV heads
    outputs, defs = app.run(defs={**PREDICTIONS, **_set(serve_device="jetson-orin-nx-16gb",
                                                        serve_link="ethernet-10g",
                                                        serve_tp=16, serve_batch=256)})
    assert not any(s.fits for s in defs["serve_rows"]["ethernet-10g"])
    assert "No degree offered fits" in _texts(outputs)
    assert "Traceback" not in _texts(outputs)


def test_the_slice_size_moves_the_layer_off_the_link_roof(env, app):
    link = "pcie5-x16"
    crit = sharding.tp_critical_shard("h100-pcie", "bf16", link, 8, matmuls=2)  # 10,500
    base = {**PREDICTIONS, **_set(device_picker="h100-pcie", link_picker=link,
                                  shard_tokens_slider=65536)}
    _, thin = app.run(defs={**base, **_set(shard_k_slider=4096)})
    _, thick = app.run(defs={**base, **_set(shard_k_slider=16384)})
    assert 4096 < crit < 16384
    assert thin["shard_now"].binding == "link" and thick["shard_now"].binding == "compute"
    # a slice that does not split evenly is a message, not a traceback (K = K/n x n always
    # splits, so use a bad n instead)
    outputs, defs = app.run(defs={**PREDICTIONS, **_set(shard_n_slider=1)})
    assert defs["shard_error"] and "n" in defs["shard_error"]
    assert "three_roofs" not in defs and "Traceback" not in _texts(outputs)


def test_overlap_switch_hides_the_all_reduce_behind_the_backward_pass_only(env, app):
    _, off = app.run(defs=PREDICTIONS)
    outputs, on = app.run(defs={**PREDICTIONS, **_set(train_overlap=True)})
    a, b = off["train_now"], on["train_now"]
    assert a.t_step == pytest.approx(a.t_fwd + a.t_bwd + a.t_comm)
    assert b.t_step == pytest.approx(b.t_fwd + max(b.t_bwd, b.t_comm))
    text = _texts(outputs)
    assert "at most 1.67×" in text and "never more than 2×" not in text
    assert "at most halve" not in text


def test_live_cell_waits_for_its_button_and_says_why_nothing_can_run(env, app):
    outputs, defs = app.run(defs=PREDICTIONS)
    assert "Nothing has been measured yet" in _texts(outputs) and "comm_run" not in defs
    pytest.importorskip("torch")
    import torch

    if torch.cuda.device_count() >= 2:
        pytest.skip("this machine can run NCCL: the refusal message is not reachable")
    outputs, defs = app.run(defs={**PREDICTIONS, **_set(comm_button=True,
                                                        comm_backend_choice="nccl")})
    text = _texts(outputs)
    assert "No collective can run here." in text and "two or more CUDA GPUs" in text
    assert "comm_run" not in defs and "Traceback" not in text


@pytest.mark.slow
def test_live_cell_measures_fits_and_records_a_result(env, app):
    pytest.importorskip("torch")
    outputs, defs = app.run(defs={**PREDICTIONS, **_set(comm_button=True, comm_budget=4,
                                                        comm_workers=2,
                                                        comm_backend_choice="gloo")})
    run = defs["comm_run"]
    assert run.world_size == 2 and run.backend == "gloo"
    assert isinstance(defs["comm_figure"], go.Figure)
    payload = defs["lab"].events("lab06.measured_collectives", "result")[0]["payload"]
    assert payload["backend"] == "gloo" and payload["world_size"] == 2
    assert {f["op"] for f in payload["fits"]} | set(payload["fit_errors"]) == set(
        collectives.OPS)
    assert "gloo between worker processes" in _texts(outputs)


def test_locking_through_the_forms_and_reopening_restores_the_locks(env, app):
    _, defs = app.run()
    answers = {"allreduce_form": 2, "shard_slow_form": 30000, "shard_fast_form": 4000,
               "serve_form": 8, "train_form": 10000}
    for form, answer in answers.items():
        quiz.simulate_submit(defs[form], answer=answer, confidence=3, reason="a reason")
    lab = defs["lab"]
    for item in PREDICTION_ITEMS:
        assert [e["kind"] for e in lab.events(item)] == ["predict", "unlock"], item
    _, again = app.run()
    assert again["allreduce_prediction"].value == 2
    assert again["serve_prediction"].value == 8
    assert isinstance(again["three_roofs"], go.Figure)
    events = again["lab"].events()
    assert {e["item_id"] for e in events} <= ITEMS
    assert all(e["lab_id"] == "lab06" for e in events)


def test_reveal_mode_fills_predictions_from_core(env, app, monkeypatch):
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    _, defs = app.run()
    assert defs["allreduce_prediction"].value == pytest.approx(3.9)
    # a GeLU block, 2 matmuls per all-reduce (was SwiGLU's 3: 7,000 and 1,283)
    assert defs["shard_slow_prediction"].value == 10500
    assert defs["shard_fast_prediction"].value == 1924
    assert defs["serve_prediction"].value == 16 and defs["serve_prediction"].label == "16-way"
    # the wait per step at 1,024 tokens per GPU (was the critical batch, 2,165 tokens)
    assert defs["train_prediction"].value == 29300
    assert isinstance(defs["train_figure"], go.Figure)
    assert defs["lab"].events(kind="predict") == []


@pytest.mark.slow
def test_export_html_student_and_instructor_copies(tmp_path_factory):
    student = export_page(LAB_FILE, tmp_path_factory)
    assert "Lock predictions 2 and 3 to reveal the three roofs." in student
    assert "One block of 2 matmuls per all-reduce" not in student
    teacher = export_page(LAB_FILE, tmp_path_factory, reveal=True)
    assert "One block of 2 matmuls per all-reduce" in teacher and "Key takeaways" in teacher
    assert "Instrument hidden" not in teacher  # every gate open in the instructor copy


def test_a_serving_step_re_runs_no_cell_that_only_shows_its_widgets(env, app):
    # The serving widgets are laid out where they are made (serve_controls): the panel that
    # shows them names none, so a step re-runs only the cells that read a value (issue 15).
    for widget in ("serve_device", "serve_link", "serve_model", "serve_weights", "serve_tp",
                   "serve_batch", "serve_context"):
        assert cells_that_only_show(app, widget) == [], widget
    outputs, defs = app.run(defs=PREDICTIONS)
    shown = _texts(outputs)
    for label in ("Tensor-parallel degree (GPUs)", "Batch (sequences)", "Context (tokens)",
                  "Weights stored as"):
        assert label in shown
    # a serving model that fails (core's error, whatever its cause) still shows the widgets,
    # to back out with, and the message in the cell below them
    outputs, defs = app.run(defs={**PREDICTIONS, "serve_rows": None,
                                  "serve_error": "No hardware rate for fp16 on this chip."})
    texts = [getattr(o, "text", "") or "" for o in outputs if o is not None]
    panel = next(i for i, t in enumerate(texts) if "Tensor-parallel degree (GPUs)" in t)
    assert "No hardware rate for fp16" in texts[panel + 1] and "Traceback" not in _texts(outputs)
    assert "serve_now" not in defs


#: The widgets of the collective, sharding and training panels and the pickers: each panel is
#: laid out where its widgets are made (workers_controls, shard_controls, train_controls,
#: context_controls) and shown by a cell that names none of them (issue 15).
PANEL_WIDGETS = ("device_picker", "workers_slider", "shard_block", "shard_k_slider",
                 "shard_n_slider",
                 "shard_tokens_slider", "train_model", "train_n", "train_tokens", "train_nics",
                 "train_overlap")


@pytest.mark.parametrize("widget", PANEL_WIDGETS)
def test_no_cell_only_shows_a_panel_widget(app, widget):
    assert cells_that_only_show(app, widget) == []


def test_only_the_collective_panel_shows_the_link_picker_by_name(app):
    # It shows the link beside n (the chip is not asked there): a Link step re-runs it, as it
    # re-runs most cells of the lab anyway.
    (panel,) = cells_that_only_show(app, "link_picker")
    assert "workers_controls" in panel


def test_an_overlap_flip_re_runs_only_the_cards_and_a_run_setting_nothing(env, app):
    (cards,) = _re_run_by(app, "train_overlap")  # not the figure: it draws both cases
    assert "train_now = " in cards
    for setting in ("comm_workers", "comm_budget", "comm_backend_choice"):
        assert _re_run_by(app, setting) == [], setting
    # what a press reads is the settings on screen
    _, defs = app.run()
    defs["comm_workers"]._update(5)
    defs["comm_budget"]._update(20)
    defs["comm_backend_choice"]._update(["gloo (CPU processes)"])
    now = defs["comm_settings"]()
    assert (now.workers, now.budget, now.backend) == (5, 20, "gloo")


def test_each_panel_shows_its_widgets_past_its_gate_above_what_it_drives(env, app):
    panels = (("Link between chips", "Participants n"),
              ("Chip", "F/n: per-GPU slice of the hidden dimension", "GPUs n",
               "Batch T (tokens)"),
              ("Chip", "GPUs (data-parallel)", "Tokens per GPU per step",
               "Overlap the all-reduce with the backward pass"))
    locked = _texts(app.run()[0])
    for labels in panels:
        assert labels[1] not in locked, labels
    # a layer or a step that fails (core's error, whatever its cause) still shows the panel,
    # to back out with, and the message in the cell below it
    outputs, defs = app.run(defs={
        **PREDICTIONS, "shard_mm": None, "shard_now": None,
        "shard_error": "No layer: the shard error.", "train_steps": None,
        "train_critical": None, "train_error": "No step: the training error."})
    texts = [getattr(o, "text", "") or "" for o in outputs if o is not None]
    shown = [next(i for i, t in enumerate(texts) if all(lb in t for lb in labels))
             for labels in panels]
    assert shown == sorted(shown)
    assert "No layer: the shard error." in texts[shown[1] + 1]
    assert "No step: the training error." in texts[shown[2] + 1]
    assert "Traceback" not in _texts(outputs)
    assert "three_roofs" not in defs and "train_now" not in defs


# --- no answer before its lock, with every open instrument swept (issue 34.1 and 34.3) --------

#: The predictions in the order the lab asks them: (item, the name its cell defines).
ORDER = (("lab06.allreduce_ms", "allreduce_prediction"),
         ("lab06.tp_shard_pcie", "shard_slow_prediction"),
         ("lab06.tp_shard_nvlink", "shard_fast_prediction"),
         ("lab06.tp_comm_degree", "serve_prediction"),
         ("lab06.dp_exposed_us", "train_prediction"))
#: Widgets an instrument opens with each lock (the pickers show cards from the start).
OPENS = {0: ("device_picker", "link_picker"), 1: ("workers_slider",), 2: (), 3: (
    "shard_block", "shard_k_slider", "shard_n_slider", "shard_tokens_slider"), 4: (
    "serve_device", "serve_link", "serve_model", "serve_weights", "serve_tp", "serve_batch",
    "serve_context")}
#: The graded scenarios, set together where an instrument can reach them.
GRADED = ({"device_picker": "h100-pcie", "link_picker": "pcie5-x16"},
          {"device_picker": "h100-sxm", "link_picker": "nvlink4"},
          {"device_picker": "h100-pcie", "link_picker": "pcie5-x16", "shard_n_slider": 8,
           "shard_tokens_slider": 65536},
          {"serve_device": "h100-pcie", "serve_link": "pcie5-x16", "serve_batch": 1,
           "serve_context": 8192})


def _references(env) -> dict:
    """{item: leak_support.Reference} from the instructor copy (reveal mode)."""
    from leak_support import Reference

    from labs.core import ledger, reveal

    seen = {}
    original = reveal.reference

    def recording(*args, **kwargs):
        answer = original(*args, **kwargs)
        if answer is not None:
            choice = getattr(answer, "answer_type", "numeric") == "choice"
            seen[answer.item_id] = Reference(answer.item_id, answer.value,
                                             answer.label if choice else None)
        return answer

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reveal, "reference", recording)
        mp.setenv("ROOFLINE_REVEAL", "1")
        mp.setenv(ledger.ENV_LEDGER_DIR, str(env / "reveal-ledger"))
        load_app(LAB_FILE, "_lab06_revealed").run()
    return seen


def _widget_values(app, name) -> list:
    """Every option of a dropdown; a slider's ends, middle and every fourth step."""
    _, defs = app.run()
    w = defs[name]
    if hasattr(w, "options") and isinstance(w.options, dict):
        return list(w.options.values())
    steps = w._args.args.get("steps")
    return sorted({steps[0], steps[len(steps) // 2], steps[-1], *steps[::4]})


#: Numbers that give an answer by one multiplication (issue 34.1): the link ridge π / B of a
#: graded chip and link, from which K/n* = (n-1)/n x b / m x π / B.
TELLTALES = {"lab06.tp_shard_pcie": sharding.link_ridge("h100-pcie", "bf16", "pcie5-x16"),
             "lab06.tp_shard_nvlink": sharding.link_ridge("h100-sxm", "bf16", "nvlink4")}


@pytest.mark.slow
def test_no_prediction_is_answered_before_its_lock_by_any_open_instrument(env, app):
    """Issue 34.3 for Lab 6: for each prediction k, with 1..k-1 locked and every open
    instrument swept (sampled values, and the exact graded scenarios), no rendered output shows
    k's reference answer (leak_support's renderings; a choice's label)."""
    from leak_support import DownstreamRuns, Reference, find_leaks, rendered_cells

    refs = _references(env)
    assert set(refs) == PREDICTION_ITEMS
    values = {name: _widget_values(app, name) for names in OPENS.values() for name in names}
    leaks = []
    for k, (item, _name) in enumerate(ORDER):
        # locked before k; None (what a student's open prediction is) from k on
        locked = {n: PREDICTIONS[n] if i < k else None for i, (_, n) in enumerate(ORDER)}
        open_widgets = [w for j in range(k + 1) for w in OPENS.get(j, ())]
        settings = [{}] + [{w: v} for w in open_widgets for v in values[w]]
        settings += [g for g in GRADED if set(g) <= set(open_widgets)]
        # each setting re-runs what its widgets reach, as the kernel does (test_answer_leaks
        # holds DownstreamRuns against whole runs)
        downstream, memo = DownstreamRuns(app, locked), {}
        for setting in settings:
            outputs = downstream.run(_set(**setting))[0] if setting else downstream.outputs
            cells = rendered_cells(app, outputs, scrub=["ada"], memo=memo)
            answers = [refs[item]] + ([Reference(item, TELLTALES[item])]
                                      if item in TELLTALES else [])
            leaks += [f"P{k + 1} with {setting}: {leak}" for leak in find_leaks(cells, answers)]
    assert not leaks, "\n".join(leaks[:20])


def test_the_link_ridge_card_waits_for_predictions_2_and_3(env, app):
    # issue 34.1: "Link ridge 2,199 FLOP/B" after Prediction 1 gave Prediction 3 by one
    # multiplication (and Prediction 2 by switching the link)
    one = {"allreduce_prediction": PREDICTIONS["allreduce_prediction"]}
    for setting in ({}, {"device_picker": "h100-pcie", "link_picker": "pcie5-x16"}):
        text = _texts(app.run(defs={**one, **_set(**setting)})[0])
        assert "Link, one way" in text and "Link ridge" not in text and "2,199" not in text
    text = _texts(app.run(defs={**one, "shard_slow_prediction":
                                PREDICTIONS["shard_slow_prediction"],
                                "shard_fast_prediction": PREDICTIONS["shard_fast_prediction"]})[0])
    assert "Link ridge" in text and "2,199" in text


@pytest.mark.parametrize("device,link,words", [
    ("a100-sxm-80gb", "nvlink4", "NVLink 4 (H100/H200 SXM) joins only"),
    ("h100-sxm", "pcie5-x16", "is not a PCIe card"),
    ("l4", "pcie5-x16", "PCIe Gen4 card"),
])
def test_an_impossible_chip_and_link_pair_is_refused_with_a_message(env, app, device, link,
                                                                    words):
    # issue 34.9: the chip picker accepted an A100 with NVLink 4
    outputs, defs = app.run(defs={**PREDICTIONS, **_set(device_picker=device, link_picker=link)})
    text = _texts(outputs)
    assert "This chip and this link do not go together." in text and words in text
    assert "Traceback" not in text
    assert defs["shard_error"] and defs["train_error"]  # the instruments say so too
    assert "three_roofs" not in defs and "train_now" not in defs


def test_part_3_opens_on_the_question_and_plots_the_times_it_compares(env, app):
    # issue 34.9: Prediction 4 asks about H100 PCIe on PCIe Gen5; its instrument opens there
    # and plots the collectives' and the matmuls' times per degree that the comparison quotes
    outputs, defs = app.run(defs=PREDICTIONS)
    assert defs["serve_now"].device == "h100-pcie" and defs["serve_now"].link.key == "pcie5-x16"
    fig = defs["serve_time_figure"]
    comm = next(t for t in fig.data if t.name == "collectives")
    rows = {s.n: s for s in defs["serve_rows"]["pcie5-x16"]}
    assert list(comm.y)[-1] == pytest.approx(rows[16].t_comm * 1e3)
    assert f"{rows[16].t_comm * 1e3:.2f} ms" in _texts(outputs)  # the comparison's figure


def test_no_doubled_parentheses_anywhere_in_the_lab(env, app):
    # issue 34.10: "NVLink 4 (H100/H200 SXM) (NVIDIA H100 and H200 datasheets)"
    import re

    from leak_support import flatten

    for defs in (PREDICTIONS, {}):
        outputs, _ = app.run(defs=defs)
        text = "\n".join(flatten(re.sub(r"<script.*?</script>", " ", getattr(o, "text", "")
                                         or "", flags=re.S))[0] for o in outputs
                         if o is not None)
        text = re.sub(r"\|\|\(.*?\|\|\)|\|\|\[.*?\|\|\]|\$[^$]*\$", " ", text,
                      flags=re.S)  # math
        text = "\n".join(line for line in text.splitlines()  # plotly's loader script
                         if "Plotly" not in line and "document." not in line)
        bad = re.search(r".{0,60}(\)\s*\(|\(\(|\)\)).{0,40}", text)
        assert bad is None, bad.group(0)


@pytest.mark.parametrize("typed", ["1234.5", "1,234.5", "7000.25"])
def test_a_fraction_typed_into_a_count_is_refused_as_typed(env, app, typed):
    # issue 34.9: "1,235 is not a whole number" for 1234.5: the message must show what was typed
    _, defs = app.run()
    handler = defs["shard_slow_form"].roofline_item["handler"]
    message = handler.validate({"answer": typed, "confidence": "3", "reason": "r"})
    assert message.startswith(f"{typed} is not a whole number of elements")


# --- the physics review of Lab 6 (F9-F14) -------------------------------------------------------

def _reveal_refs(app, monkeypatch) -> dict:
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    _, defs = app.run()
    return {name: defs[name].value for name in PREDICTIONS}


def _graded_right(predicted, reference) -> bool:
    """The grader's rule (labs-grade): within the rubric's tolerance, as a ratio."""
    from labs.core.course.grading.config import Rubric

    r = quiz.ratio_off(predicted, reference)
    return r is not None and r <= Rubric().tolerance


def test_p2_p3_one_matmul_per_all_reduce_or_the_headline_figure_is_graded_wrong(
        env, app, monkeypatch):
    # F11: with SwiGLU's 3 matmuls, a student who used 2 (a GeLU pair) was exactly x1.5 off and
    # graded right: any answer scales as 1/matmuls. The graded block is now a GeLU MLP (2
    # matmuls), whose common slips land 1.75-2x off.
    refs = _reveal_refs(app, monkeypatch)
    cases = {"shard_slow_prediction": (756e12, 63e9), "shard_fast_prediction": (989.5e12, 450e9)}
    for name, (peak, one_way) in cases.items():
        right = 7 / 8 * 2 / 2 * peak / one_way  # (n-1)/n x b / m x π / B, m = 2
        assert refs[name] == round(right), name  # 10,500 and 1,924 (were 7,000 and 1,283)
        wrong = {"one matmul per all-reduce (m = 1)": 7 / 8 * 2 / 1 * peak / one_way,
                 "the both-directions headline as B": 7 / 8 * 2 / 2 * peak / (2 * one_way),
                 "the message sent once, not 2(n-1)/n times": 2 / (2 * 2) * peak / one_way}
        for why, value in wrong.items():
            assert not _graded_right(value, refs[name]), (name, why)
        # a slip that does not change the physics stays right: the ring's (n-1)/n left out
        assert _graded_right(2 / 2 * peak / one_way, refs[name])
        assert _graded_right(right, refs[name])


def test_p5_hiding_the_all_reduce_behind_the_whole_step_is_graded_wrong(env, app, monkeypatch):
    # F11: the critical batch against 6PT instead of 4PT was exactly x1.5 off (1,443 vs 2,165)
    # and graded right, whatever the case. Prediction 5 now asks the wait per step at 1,024
    # tokens per GPU on 4 nodes. Hand-derived: all-reduce 2P x 2 x 7/8 / 450e9 (the node
    # level, slower than the NICs' 2 x 3/4 / 8 / 50e9) + 44 µs = 62.50 ms, backward
    # 4 P T / π = 33.24 ms, forward 16.62 ms (P = 8.030e9, T = 1,024, π = 989.5e12).
    refs = _reveal_refs(app, monkeypatch)
    p, t, pi = 8_030_261_248, 1024, 989.5e12
    comm, bwd, fwd = 2 * p * 1.75 / 450e9 + 44e-6, 4 * p * t / pi, 2 * p * t / pi
    right_us = (comm - bwd) * 1e6
    assert refs["train_prediction"] == pytest.approx(right_us, rel=2e-3)  # 29,300 µs
    wrong_us = {"hidden behind forward + backward": (comm - bwd - fwd) * 1e6,  # 12,600
                "no overlap at all": comm * 1e6,  # 62,500
                "one ring of 32 at one 50 GB/s NIC": (2 * 31 / 32 * 2 * p / 50e9 - bwd) * 1e6}
    for why, value in wrong_us.items():
        assert not _graded_right(value, refs["train_prediction"]), why
    # slips that keep the model stay right: the NIC level taken as the slower (3.75 ps/B), or
    # the node ring's (n-1)/n left out
    assert _graded_right((2 * p * 2 * 3 / 4 / 8 / 50e9 - bwd) * 1e6, refs["train_prediction"])
    assert _graded_right((2 * p * 2 / 450e9 - bwd) * 1e6, refs["train_prediction"])


def test_nccl_default_nvlink_sharp_is_named_where_the_lab_says_what_a_real_node_does(env, app):
    # F9: "NCCL reaches ~82% ... the same all-reduce takes about 4.7 ms on a real node" is the
    # ring's figure; NCCL's default on an NVSwitch H100 node (NVLink SHARP) is ~480 GB/s busbw,
    # 1 GB in about 1e9 x 1.75 / 480e9 = 3.6 ms (NVIDIA/nccl-tests issue 212)
    outputs, _ = app.run(defs=PREDICTIONS)
    text = _texts(outputs)
    assert "the same all-reduce takes about" not in text
    assert "a ring all-reduce takes about 4.7 ms" in text
    assert "NVLink SHARP" in text and "480 GB/s bus bandwidth" in text and "3.6 ms" in text
    assert "achievable, ring" in text and "NCCL_ALGO=Ring" in text


def test_p2_and_p3_state_the_datasheet_bandwidth_and_p4_its_alpha_and_boxes(env, app):
    # F13 and F12: the questions say what the graded answers assume
    text = _texts(app.run()[0])
    q2 = text[text.index("Prediction 2."):text.index("Prediction 3.")]
    q3 = text[text.index("Prediction 3."):]
    for q in (q2, q3):
        assert "links at their datasheet bandwidth" in q[:600]
    q4 = text[text.index("Prediction 4."):][:900]
    for words in ("α = 3 µs", "5 µs", "8 cards per box",
                  "beyond 8 GPUs the cards span two boxes", "one InfiniBand NDR NIC per GPU"):
        assert words in q4, words


def test_p4_reveal_counts_two_level_steps_and_says_how_the_answer_rests_on_alpha(
        env, app, monkeypatch):
    # F10 and F12: past a node the latency is 2(g-1)α + 2(M-1)α_NIC (16 steps at 16-way,
    # not 2(n-1) = 30), and the answer holds for α between ~1.3 and ~3.9 µs per PCIe step
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    outputs, _ = app.run()
    text = _texts(outputs)
    assert "pays 2(n-1) latency steps (past 8 GPUs" not in text
    assert "16 steps at 16-way, not 30" in text
    assert "16-way for α between 1.3 and 3.9 µs per PCIe step" in text
    assert "it would be 8-way" in text
    # the math peek restricts the square-root peak to one flat ring
    assert "Within one node" in text and "2(M-1)" in text


@pytest.mark.parametrize("alpha_pcie_us", [2.0, 2.5, 3.0, 3.5])
@pytest.mark.parametrize("alpha_nic_us", [2.0, 5.0, 10.0, 20.0])
def test_p4_answer_holds_over_the_stated_alpha_range(alpha_pcie_us, alpha_nic_us, monkeypatch):
    # F12: 16-way for α_PCIe from 2 to 3.5 µs per step (the stated 3 µs; a published 8-byte
    # all-reduce over 8 PCIe GPUs takes ~40-42 µs, ~2.9 µs per step of 14: NVIDIA/nccl issue
    # 1530) and any NIC step from 2 to 20 µs. (Below ~1.3 µs no degree is; above ~3.9 µs,
    # 8-way: the reveal says so.)
    import dataclasses

    monkeypatch.setitem(collectives.LINKS, "ib-ndr", dataclasses.replace(
        collectives.LINKS["ib-ndr"], latency_us=alpha_nic_us))
    pcie = dataclasses.replace(collectives.LINKS["pcie5-x16"], latency_us=alpha_pcie_us)
    assert sharding.first_comm_bound_degree("llama-3-70b", "h100-pcie", pcie, batch=1,
                                            seq_len=8192) == 16


def test_an_unverified_link_figure_is_shown_with_a_tilde(env, app):
    # F14: MI300X Infinity Fabric 448 GB/s one way is derived and unverified (an upper bound)
    one = {"allreduce_prediction": PREDICTIONS["allreduce_prediction"]}
    text = _texts(app.run(defs={**one, **_set(device_picker="mi300x",
                                              link_picker="infinity-fabric")})[0])
    assert "~448 GB/s" in text and "upper bound" in text


def _first_link_bound_degree(model, tokens, link, matmuls, device="h100-pcie"):
    """Hand-rolled analogue (independent of the lab's cell): the first n of the slider whose
    block, F/n the slider step nearest d_ff / n, is link-bound at ``tokens``."""
    import math

    from labs.core import models
    d_ff = models.get(model).d_ff
    for n in (2, 4, 8, 16):
        k = 2 ** round(math.log2(d_ff / n))
        mm = sharding.sharded_matmul(tokens, k * n, 8192, n, "bf16", matmuls=matmuls)
        if sharding.shard_times(mm, device, link).binding == "link":
            return n
    return 0


def test_part_2_shows_no_decode_batch_of_the_p4_chip_before_prediction_4(env, app):
    # Part 2's three roofs at decode-sized batches on Prediction 4's H100 PCIe cards, with
    # Llama-3-70B's FFN split n ways, turn link-bound first at the graded degree (16): its
    # answer by analogy, open once predictions 2 and 3 were locked (review L-5, final F-1).
    # The gate, the card's "the link binds for ..." and the time-vs-batch figure all stop
    # below the largest such batch until Prediction 4 is locked, on every link the chip takes.
    answer = sharding.first_comm_bound_degree("llama-3-70b", "h100-pcie", "pcie5-x16",
                                              batch=1, seq_len=8192)
    links = [k for k in collectives.link_options().values()
             if collectives.pair_problem("h100-pcie", k) is None]
    analogue = [2 ** i for i in range(17) for lk in links for b in (1, 2, 3)
                if _first_link_bound_degree("llama-3-70b", 2 ** i, lk, b) == answer]
    largest = max(analogue)
    assert 1 in analogue and largest >= 64  # the analogy holds at decode batches
    before_p4 = {**{k: v for k, v in PREDICTIONS.items() if k != "serve_prediction"},
                 "serve_prediction": None}
    for link in links:
        for tokens in (1, largest):
            setting = _set(device_picker="h100-pcie", link_picker=link, shard_block=3,
                           shard_n_slider=16, shard_k_slider=2048, shard_tokens_slider=tokens)
            outputs, defs = app.run(defs={**before_p4, **setting})
            assert "shard_now" not in defs and "three_roofs" not in defs, (link, tokens)
            assert "lock Prediction 4 to see them here" in _texts(outputs)
            _, after = app.run(defs={**PREDICTIONS, **setting})
            assert after["shard_now"] is not None, (link, tokens)
    # past the analogy the instrument is open, and neither its card nor its figure reaches
    # down to the closed batches
    setting = _set(device_picker="h100-pcie", link_picker="pcie5-x16", shard_block=3,
                   shard_n_slider=16, shard_k_slider=2048, shard_tokens_slider=2 * largest)
    outputs, defs = app.run(defs={**before_p4, **setting})
    assert defs["shard_now"] is not None
    text = _texts(outputs)
    assert "binds for every batch" not in text and "binds for batches up to" not in text
    assert f"binds for batches from {largest + 1} tokens up" in text
    x = [v for tr in defs["shard_time_figure"].data for v in tr.x]
    assert min(x) > largest
    # once Prediction 4 is locked the figure starts at one token, and another chip is open
    _, after = app.run(defs={**PREDICTIONS, **setting})
    assert min(v for tr in after["shard_time_figure"].data for v in tr.x) == 1
    _, other = app.run(defs={**before_p4, **_set(device_picker="h100-sxm",
                                                 link_picker="nvlink4", shard_tokens_slider=1)})
    assert other["shard_now"] is not None
