"""Lab 7 "Your model on the roofline", headless: locked and unlocked runs, the measured parts
behind their run buttons (tiny settings), the failure state (refused before allocating) and its
recovery, ledger events with stable item ids, and the HTML export."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest
from notebook_support import choice, export_page, load_app, visible_text
from test_failure_messages import problems
from widget_sweep import failures

from labs.core import measure, quiz, tiny_models
from labs.core.measure import live
from labs.core.measure.profile import opcost

LAB_FILE = Path(__file__).resolve().parents[1] / "labs" / "lab_07_your_model.py"
ITEMS = ("lab07.dominant_b1", "lab07.dominant_b64", "lab07.memory_share",
         "lab07.bf16_ratio", "lab07.best_predicted")
PHYSICS = ("decode_predicted", "decode_memory_share", "change_predicted")
MEASURED = ("decode_profiles", "case_profile", "change_result", "decode_small_figure",
            "decode_large_figure", "regime_figure", "case_table", "case_figure")
BASE = dict(phase="decode", batch=1, context=1024, precision="fp32", attention="math")


@pytest.fixture(scope="module")
def app():
    return load_app(LAB_FILE, "_lab07_under_test")


PREDICTIONS = {
    "dominant_small_prediction": choice("lab07.dominant_b1", "weight GEMMs"),
    "dominant_large_prediction": choice("lab07.dominant_b64", "weight GEMMs"),
    "memory_share_prediction": quiz.Prediction("lab07.memory_share", 80, units="%",
                                               confidence=2, reason="t"),
    "best_predicted_prediction": choice("lab07.best_predicted", "norms & elementwise"),
    "bf16_ratio_prediction": quiz.Prediction("lab07.bf16_ratio", 0.5, units="×", confidence=3,
                                             reason="t"),
}


def _ns(**values):
    return {k: SimpleNamespace(value=v) for k, v in values.items()}


def _run_settings(budget, threads):
    """The settings cell's names: its two widgets and the reader the measurement cells call."""
    widgets = _ns(run_budget=budget, run_threads=threads)
    return {**widgets, "run_settings": live.read_at_press(budget=widgets["run_budget"],
                                                          threads=widgets["run_threads"])}


def _case(model=("decoder", "prefill"), batch=1, context=64, attention="math"):
    """Part 4's case cell's names: its four widgets and the reader the profile calls."""
    widgets = _ns(case_picker=model, case_batch=batch, case_context=context,
                  case_attention=attention)
    return {**widgets, "case_settings": live.read_at_press(
        model=widgets["case_picker"], batch=widgets["case_batch"],
        context=widgets["case_context"], attention=widgets["case_attention"])}


#: Every run button pressed, with settings that run in seconds on a shared 2-core machine.
TINY = {"LIVE": {"context": 64, "roofline_budget_s": 0.4}, **_run_settings(0.3, 1),
        **_ns(decode_button=True, case_button=True, change_button=True), **_case()}


def _texts(outputs) -> str:
    return "\n".join(getattr(o, "text", "") or "" for o in outputs if o is not None)


@pytest.fixture
def no_measuring(monkeypatch):
    """Fail the test if anything is profiled."""
    def refuse(*a, **k):
        raise AssertionError("measured without a button press")

    monkeypatch.setattr(measure, "profile_model", refuse)
    monkeypatch.setattr(measure, "builtin_case", refuse)
    monkeypatch.setattr(measure, "empirical_roofline", refuse)


def test_locked_run_hides_every_instrument_and_measures_nothing(env, app, no_measuring):
    outputs, defs = app.run()
    for name in PREDICTIONS:
        assert defs[name] is None
    for name in ("decode_button", "case_button", "change_button", *MEASURED):
        assert name not in defs, name
    text = _texts(outputs)
    # each instrument's notice names the predictions it waits for (quiz.Instruments)
    assert "Lock Predictions 1, 2, 3 and 4 first" in text  # Part 1's block
    assert "Lock Predictions 1, 2, 3, 4 and 5 first" in text and "Key takeaways" not in text
    assert "Traceback" not in text and defs["lab"].events() == []


def test_the_measuring_settings_the_run_cards_point_to_are_on_the_page(env, app,
                                                                        no_measuring):
    """The run cards say the thread count comes from the "CPU threads" setting
    under "Measuring on this machine"; that setting must be shown (it was built but never
    displayed: its cell ended with an assignment)."""
    outputs, _ = app.run()
    text = " ".join(visible_text(o) for o in outputs if o is not None)
    assert "Measuring on this machine" in text and "CPU threads" in text
    assert "Timing budget per profile" in text


def test_option_values_are_the_profilers_operator_types(app):
    _, defs = app.run()
    assert set(defs["TYPE_OPTIONS"].values()) <= set(opcost.OP_TYPES)
    assert set(defs["BEST_OPTIONS"].values()) <= set(opcost.OP_TYPES)
    assert set(defs["TYPE_OPTIONS"].values()) >= set(tiny_models.time_by_group("h100-sxm"))


def test_predictions_1_and_2_ask_for_the_roofline_s_answer_and_offer_only_what_it_can_pick(
        env, app, no_measuring):
    """Graded against the roofline, which has no overhead term, P1 and P2 say so
    and do not offer overhead (on a GPU a batch-1 step is mostly overhead: the option would
    be right and graded wrong). The measured comparison still names overhead when it leads."""
    outputs, defs = app.run()
    assert "overhead (outside operators)" not in defs["TYPE_OPTIONS"].values()
    assert set(defs["TYPE_OPTIONS"].values()) == set(tiny_models.time_by_group("h100-sxm"))
    assert defs["TYPE_NAMES"]["overhead (outside operators)"]
    text = " ".join(visible_text(o) for o in outputs if o is not None)
    assert "Prediction 1. On the roofline picked at the top (each operator at its bound, no " \
           "overhead term)" in text
    assert "same roofline, no overhead term" in text
    # P3 asks for the model's number, and says what its 5 µs stands between
    assert "In the model's terms (the step = every operator at its bound, plus kernels × 5 µs of " \
           "launches added outside every operator" in text
    # ... on the question's device, whose bound it gives (the K, V copies included)
    assert "On the NVIDIA H100 SXM5 the step's operators take 37.8 µs at their roofline " \
           "bounds (the math attention's copies of K and V to every query head included)" in text
    assert "a bare CUDA launch (about 2.5 µs measured)" in text
    assert "eager PyTorch with its host dispatch (about 16 µs measured)" in text
    # ... and gives the step's kernel count, from the module profiled (physics, not typed)
    assert tiny_models.step_kernels(**BASE) == 172
    assert "A batch-1 decode step launches 172 kernels, one per operator that is not a view" \
        in text
    assert "measured on this machine (overhead included" in text  # P4 names its model


def test_unlocked_run_shows_the_roofline_answers_from_core(env, app, no_measuring):
    outputs, defs = app.run(defs=PREDICTIONS)
    for b in (1, 64):
        assert defs["decode_predicted"][b] == tiny_models.time_by_group(
            "h100-sxm", **dict(BASE, batch=b))
    assert defs["decode_memory_share"] == pytest.approx(
        tiny_models.memory_bound_share("h100-sxm", **BASE))
    assert defs["change_predicted"]["precision"] == pytest.approx(
        tiny_models.predicted_ratio("precision", "h100-sxm", BASE))
    assert defs["change_predicted"]["compile"] is None  # not modelled: said so
    text = _texts(outputs)
    assert text.count("Nothing has been measured yet") == 3  # three run buttons, unpressed
    assert "torch.compile is not on the chart" in text and "Key takeaways" in text
    assert isinstance(defs["case_terms"], dict)
    # the comparisons against the roofline recorded what it showed, under the stable ids
    results = {e["item_id"]: e["payload"] for e in defs["lab"].events(kind="result")}
    assert set(results) == {"lab07.dominant_b1", "lab07.dominant_b64", "lab07.memory_share"}
    assert results["lab07.dominant_b1"] == {"actual": "weight GEMMs", "correct": True}
    assert results["lab07.dominant_b64"]["actual"] == "attention (KV cache)"
    # Prediction 3 is graded against the roofline plus 5 µs per kernel
    assert defs["decode_launch_share"] == pytest.approx(
        tiny_models.memory_bound_share_with_launches("h100-sxm", **BASE))
    assert results["lab07.memory_share"]["actual"] == pytest.approx(
        round(100 * tiny_models.memory_bound_share_with_launches("h100-sxm", **BASE), 1))


def test_the_overhead_figure_shows_both_phases_at_the_case_s_batch_and_context(
        env, app, no_measuring):
    """Whatever model is picked, the figure holds the whole decoder's prefill and decode step,
    each bar core's ratio at the case's batch, context and attention, on the picked device."""
    case = {**_case(model=("mlp", "prefill"), batch=8, context=512, attention="sdpa"),
            **_ns(device_picker="a100-sxm-80gb")}
    _, defs = app.run(defs=dict(PREDICTIONS, **case))
    fig = defs["overhead_figure"]
    assert [t.name for t in fig.data] == ["prefill", "decode step"]
    for trace, phase in zip(fig.data, ("prefill", "decode")):
        ratios = tiny_models.overhead_ratio_by_group(
            "a100-sxm-80gb", phase=phase, batch=8, context=512, precision="fp32", attention="sdpa")
        assert list(trace.x) == list(ratios) and list(trace.y) == pytest.approx(list(ratios.values()))
    everything = [y for t in fig.data for y in t.y]
    assert (fig.layout.yaxis.type == "log") == (max(everything) > 10 * min(everything))
    assert "batch 8, context 512" in fig.layout.title.text
    assert fig.layout.barmode == "group" and fig.layout.showlegend


def test_a_model_step_redraws_only_the_memory_figure(app):
    # the overhead figure names no model: a step of the Model picker re-runs one cell, the
    # memory needed by the picked model (one figure redrawn, not two)
    app._maybe_initialize()
    graph = app._graph
    readers = [c for c, cell in graph.cells.items() if "case_picker" in cell.refs]
    assert [graph.cells[c].defs for c in readers] == [{"case_terms"}]
    # and nothing below it re-runs with it
    assert not [c for c, cell in graph.cells.items() if cell.refs & {"case_terms"}]


def test_a_device_without_an_fp32_rate_is_a_message(env, app, no_measuring):
    outputs, defs = app.run(defs=dict(PREDICTIONS, **_ns(device_picker="tpu-v5e")))
    text = _texts(outputs)
    # the cause in the student's words, and the way out (a device with the rate)
    assert defs["decode_predicted"] is None and "no hardware rate for fp32" in defs["decode_error"]
    assert "precision=" not in defs["decode_error"]
    assert "pick one in the picker at the top" in text and "Traceback" not in text
    # back to a GPU: the answers return
    _, defs = app.run(defs=dict(PREDICTIONS, **_ns(device_picker="l4")))
    assert defs["decode_error"] is None and defs["decode_predicted"][1]


def test_reveal_mode_fills_every_prediction_from_core(env, app, monkeypatch, no_measuring):
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    outputs, defs = app.run()
    assert defs["dominant_small_prediction"].value == tiny_models.dominant_group(
        "h100-sxm", **BASE)
    assert defs["dominant_large_prediction"].value == tiny_models.dominant_group(
        "h100-sxm", **dict(BASE, batch=64))
    assert defs["best_predicted_prediction"].value == tiny_models.best_predicted_group(
        "h100-sxm", **dict(BASE, phase="prefill"))
    # the launch model's answers, hand-derived in test_models
    # (test_the_launch_model_of_a_batch_1_decode_step): the bound T = 126.35 MB / 3,350 GB/s,
    # 172 kernels (the module's non-view operators) x 5 µs = 860 µs; share T / (T + 860 µs)
    # = 4.2%, bf16 (T/2 + 860 µs) / (T + 860 µs) = 0.979
    bound = 126_353_408 / 3350e9
    assert defs["memory_share_prediction"].value == pytest.approx(
        100 * bound / (bound + 860e-6), abs=0.1)
    assert defs["bf16_ratio_prediction"].value == pytest.approx(
        (bound / 2 + 860e-6) / (bound + 860e-6), abs=1e-3)
    assert "Key takeaways" in _texts(outputs)
    assert not defs["lab"].events(kind="predict")  # reveal answers are not predictions


def test_locking_through_the_forms_writes_predict_and_unlock_events(env, app, no_measuring):
    _, defs = app.run()
    answers = {"dominant_small_form": "weight GEMMs", "dominant_large_form": "attention (KV cache)",
               "memory_share_form": 90, "best_predicted_form": "weight GEMMs",
               "bf16_ratio_form": 2}
    for form, answer in answers.items():
        quiz.simulate_submit(defs[form], answer=answer, confidence=4, reason="a reason")
    lab = defs["lab"]
    assert {e["item_id"] for e in lab.events()} == set(ITEMS)
    for item in ITEMS:
        assert [e["kind"] for e in lab.events(item)] == ["predict", "unlock"]
    _, again = app.run()  # reopening restores every lock from the ledger
    assert again["memory_share_prediction"].value == 90
    assert again["bf16_ratio_prediction"].value == 2
    assert all(e["lab_id"] == "lab07" for e in again["lab"].events())


def test_the_grader_and_dashboard_know_lab_7(env, app, no_measuring, tmp_path):
    """A ledger written by locking Lab 7's forms is graded under Lab 7's title, one column per
    lab, every item counted; the dashboard's catalogue lists the same items."""
    import csv

    from labs.core import catalogue
    from labs.core import grading

    _, defs = app.run()
    for form, answer in {"dominant_small_form": "weight GEMMs",
                         "dominant_large_form": "attention (KV cache)", "memory_share_form": 90,
                         "best_predicted_form": "weight GEMMs", "bf16_ratio_form": 2}.items():
        quiz.simulate_submit(defs[form], answer=answer, confidence=4, reason="a reason")
    entry = catalogue.lab("lab07")
    assert entry.file == LAB_FILE.name and tuple(entry.item_ids) == ITEMS
    assert [i.item_id for i in catalogue.items("lab07")] == list(ITEMS)
    out = tmp_path / "graded"
    grading.main([str(env / "ledger"), "-o", str(out)])
    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as f:
        row = next(r for r in csv.DictReader(f) if "ada" in r.values())
    assert float(row[entry.title]) > 0, row


def test_without_torch_or_a_device_the_buttons_say_why(env, app, monkeypatch):
    none = measure.DeviceInfo("none", "no device", "torch is not installed, so this machine "
                              "cannot be measured.")
    monkeypatch.setattr(measure, "detect", lambda *a, **k: none)
    outputs, defs = app.run(defs=dict(PREDICTIONS, **TINY))
    text = _texts(outputs)
    assert text.count("Live measurement is off") == 3 and "torch is not installed" in text
    assert not any(name in defs for name in MEASURED) and "Traceback" not in text
    assert not [e for e in defs["lab"].events(kind="result")
                if e["item_id"].startswith("lab07.measured")]


def test_in_a_browser_build_every_run_button_says_it_cannot_measure(env, app, monkeypatch):
    """WASM (sys.platform "emscripten"): the lab opens, the roofline's answers work, and each
    pressed run button says the browser cannot run torch; nothing is built or profiled."""
    import sys

    def refuse(*a, **k):
        raise AssertionError("measured in a browser build")

    monkeypatch.setattr(sys, "platform", "emscripten")
    for name in ("profile_model", "builtin_case", "time_compiled"):
        monkeypatch.setattr(measure, name, refuse)
    for change in ("precision", "compile"):
        outputs, defs = app.run(defs=dict(PREDICTIONS, **TINY, **_ns(change_picker=change)))
        text = _texts(outputs)
        assert text.count("runs in the browser (WebAssembly)") == 3, text[:3000]
        assert not any(name in defs for name in MEASURED) and "Traceback" not in text
        assert defs["decode_predicted"][1] and "Key takeaways" in text


@pytest.mark.slow
def test_every_run_button_profiles_on_this_cpu(env, app):
    pytest.importorskip("torch")
    outputs, defs = app.run(defs=dict(PREDICTIONS, **TINY))
    text = _texts(outputs)
    assert "Traceback" not in text, text[text.find("Traceback") - 500:][:2000]
    profiles = defs["decode_profiles"]
    assert set(profiles) == {1, 64}
    for b, prof in profiles.items():
        assert prof.label == f"decode, batch {b}" and prof.reps >= 3 and prof.threads == 1
        assert prof.counted_flops == pytest.approx(sum(  # decode: causal changes nothing
            o.flops for o in tiny_models.step_ops(**dict(BASE, batch=b, context=64))
            if "projection" in o.name or o.name == "LM head" or o.name.startswith("attention")))
        assert prof.overhead is not None and not prof.predicted_only
        # the launch model's kernel count is what the profile measures (Prediction 3)
        assert prof.kernel_calls == tiny_models.step_kernels(**dict(BASE, batch=b, context=64))
    _p1 = profiles[1]
    assert f"{len(_p1.rows)} aten calls ({_p1.kernel_calls} not views)" in text
    for name in ("decode_small_figure", "decode_large_figure", "regime_figure", "case_figure"):
        assert isinstance(defs[name], go.Figure), name
    assert defs["case_profile"].label == "decoder prefill, batch 1, context 64, math attention"
    assert "This is <strong>decoder prefill, batch 1, context 64, math attention</strong>" in text
    assert "Profiled with 1 torch thread on this machine's" in text
    change = defs["change_result"]
    assert change["change"] == "precision" and change["ratio"] > 0
    old, new = change["profiles"]
    assert {r["precision"] for r in old.rows if r["op_type"] == opcost.WEIGHT_GEMMS} == {"fp32"}
    assert {r["precision"] for r in new.rows if r["op_type"] == opcost.WEIGHT_GEMMS} == {"bf16"}
    # the ratio comes from both steps timed in alternation, not from the two profiles
    import statistics

    assert len(change["ratios"]) >= 2
    assert change["ratio"] == pytest.approx(statistics.median(change["ratios"]))
    assert change["spread"] >= 1.0
    kinds = {(e["item_id"], e["kind"]) for e in defs["lab"].events()}
    for item in ("lab07.measured_decode", "lab07.measured_table", "lab07.measured_change"):
        assert (item, "result") in kinds, item
    # Prediction 5 is graded on its own case only (these runs profile a 64-token prefill)
    assert ("lab07.best_predicted", "result") not in kinds
    assert "Not recorded for grading: " in text  # the case (or, on a busy machine, a roof
    # measured too low to rank the operators) says why
    # Prediction 4 is recorded when the alternating rounds agree within its band
    from labs.core.physics import misconceptions

    steady = change["spread"] <= misconceptions.tolerance("lab07.bf16_ratio")
    assert (("lab07.bf16_ratio", "result") in kinds) == steady
    assert ("the rounds of this measurement disagree" in text) == (not steady)
    assert "Download lab07_operators.csv" in text


def _measured(what_if, scale=1.0, gap=1e-4):
    """A what-if profile dressed as measured: each operator at its bound, the overhead row
    ``gap``, ``op_scale`` as given (below 1: the times were scaled to fit the pass)."""
    import dataclasses

    rows = tuple(dict(r, measured_s=r["bound_s"], lost_s=0.0,
                      ratio=1.0 if r["bound_s"] else None,
                      error_pct=0.0 if r["bound_s"] else None) for r in what_if.rows)
    total = sum(r["measured_s"] for r in rows) + gap
    over = dict(rows[0], name=opcost.OVERHEAD, op_type=opcost.OVERHEAD, regime="overhead-bound",
                flops=0.0, bytes=0.0, bound_s=0.0, measured_s=gap, lost_s=gap, ai=None)
    return dataclasses.replace(what_if, rows=rows, overhead=over, forward_s=total,
                               predicted_only=False, reps=3, op_scale=scale,
                               profiled_sum_s=total / scale if scale < 1 else None,
                               call_cost_s=1.0)  # the profiler's cost explains the excess


@pytest.fixture(scope="module")
def what_if_decode():
    pytest.importorskip("torch")
    model, inputs = measure.builtin_case("decoder", phase="decode", context=32, device="cpu")
    return measure.profile_model(model, inputs, device="cpu", roofline="h100-sxm")


def test_a_profile_scaled_to_fit_its_step_says_its_times_cannot_be_trusted(env, app,
                                                                           what_if_decode):
    """Operator times that summed past the step are scaled to fit it; the
    step's card then says the overhead cannot be told apart, and a callout says why the
    per-operator times cannot be trusted. A profile that fits reads as Python and dispatch."""
    for scale, words in ((0.5, "cannot be trusted"),
                         (1.0, "the step minus its operators: Python, dispatch")):
        prof = _measured(what_if_decode, scale, gap=0.0 if scale < 1 else 1e-4)
        outputs, _ = app.run(defs={**PREDICTIONS, "decode_profiles": {1: prof, 64: prof},
                                   "live_info": measure.detect("cpu")})
        text = " ".join(visible_text(o) for o in outputs if o is not None)
        assert words in text and "Traceback" not in text
        assert ("cannot be told apart" in text) == (scale < 1)


def test_a_configuration_that_does_not_fit_is_refused_and_the_student_backs_out(
        env, app, monkeypatch):
    pytest.importorskip("torch")
    built = []
    real_build = measure.builtin_case

    def watch(*a, **k):
        built.append(k)
        return real_build(*a, **k)

    monkeypatch.setattr(measure, "builtin_case", watch)
    huge = {**PREDICTIONS, **TINY, **_case(("decoder", "decode"), batch=256, context=32768),
            **_ns(decode_button=False, change_button=False)}
    outputs, defs = app.run(defs=huge)
    text = _texts(outputs)
    terms = tiny_models.memory_terms(phase="decode", batch=256, context=32768)
    assert "refused before allocating" in text and "Traceback" not in text
    assert f"KV cache {terms['KV cache'] / 1e9:.2f} GB" in text
    refusal = next(m for m in failures(outputs) if "refused before allocating" in m)
    assert "Lower the batch or the context above" in refusal and not problems(refusal)
    assert "case_profile" not in defs and len(built) == 1  # checked, never built
    assert defs["case_terms"] == terms  # the same numbers were on screen before the press
    # backing out: a small configuration is built and profiled
    back = {**huge, **_case(("decoder", "decode"), batch=1, context=64)}
    outputs, defs = app.run(defs=back)
    assert built[-1]["batch"] == 1 and built[-1]["context"] == 64
    assert defs["case_profile"].label == "decoder decode, batch 1, context 64, math attention"
    assert "refused" not in _texts(outputs)


def test_a_case_step_keeps_the_last_profile_until_the_next_press(app):
    # the profile reads the case at the press (case_settings): no cell that profiles names a
    # case widget, so a step redraws the memory (and, but for Model, overhead) figures and
    # keeps the profile
    app._maybe_initialize()
    graph = app._graph
    case_widgets = {"case_picker", "case_batch", "case_context", "case_attention"}
    profile_cells = graph.definitions["case_profile"]
    assert profile_cells and all(not graph.cells[c].refs & case_widgets for c in profile_cells)
    assert all(graph.cells[c].refs & {"case_settings"} for c in profile_cells)
    shown = [c for c, cell in graph.cells.items() if cell.refs & case_widgets]
    assert not {d for c in shown for d in graph.cells[c].defs} & {"case_profile", "case_table",
                                                                  "case_figure"}


@pytest.mark.slow
def test_export_html_student_and_instructor_copies(tmp_path_factory):
    student = export_page(LAB_FILE, tmp_path_factory)
    assert "Lock Predictions 1, 2, 3 and 4 first" in student
    assert "The roofline&#x27;s answer" not in student and "roofline's answer: one" not in student
    teacher = export_page(LAB_FILE, tmp_path_factory, reveal=True)
    assert "Key takeaways" in teacher and "Lock Prediction" not in teacher
    assert "Nothing has been measured yet" in teacher  # the export never measures


def test_without_torch_installed_the_lab_says_so(env, tmp_path):
    """torch blocked (as in a torch-less install or a browser build): the lab opens, every
    prediction and the roofline's answers work, each pressed run button says why nothing can
    be measured. In a subprocess, so torch stays importable here."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(f"""
        import sys
        sys.modules["torch"] = None  # `import torch` raises ImportError
        from types import SimpleNamespace as NS
        sys.path.insert(0, {str(Path(__file__).parent)!r})
        from notebook_support import choice, load_app, visible_text
        from labs.core import quiz
        app = load_app({str(LAB_FILE)!r}, "_lab07_no_torch")
        preds = {{
            "dominant_small_prediction": choice("lab07.dominant_b1", "weight GEMMs"),
            "dominant_large_prediction": choice("lab07.dominant_b64", "weight GEMMs"),
            "memory_share_prediction": quiz.Prediction("lab07.memory_share", 80, units="%"),
            "best_predicted_prediction": choice("lab07.best_predicted", "weight GEMMs"),
            "bf16_ratio_prediction": quiz.Prediction("lab07.bf16_ratio", 0.5, units="x"),
        }}
        pressed = {{k: NS(value=True) for k in ("decode_button", "case_button",
                                                 "change_button")}}
        outputs, defs = app.run(defs={{**preds, **pressed}})
        text = "\\n".join(getattr(o, "text", "") or "" for o in outputs if o is not None)
        assert text.count("torch is not installed") >= 3, text[:2000]
        # before any press, the comparisons of Predictions 4 and 5 say why they
        # cannot come, with the exact command that brings torch
        unpressed, _ = app.run(defs=preds)
        shown = " ".join(visible_text(o) for o in unpressed if o is not None)
        for k in (4, 5):
            assert f"The comparison of Prediction {{k}} needs a measurement" in shown, k
        assert shown.count('--torch-backend=cpu') >= 2, shown[:2000]
        assert "Traceback" not in text and "Key takeaways" in text
        assert defs["decode_predicted"][1] and "decode_profiles" not in defs
        print("ok")
    """)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip().endswith("ok")


def test_torch_compile_that_cannot_run_is_a_message(env, app, monkeypatch):
    pytest.importorskip("torch")
    import shutil

    from labs.core.measure.profile import profiler

    monkeypatch.setattr(shutil, "which", lambda name: None)  # no C++ compiler anywhere
    monkeypatch.delenv("CXX", raising=False)
    why = profiler.compile_unavailable("cpu")
    assert "C++ compiler" in why
    with pytest.raises(measure.Unsupported, match="C\\+\\+ compiler"):
        measure.time_compiled(torch_linear(), __import__("torch").randn(2, 8), device="cpu")
    outputs, defs = app.run(defs={**PREDICTIONS, **TINY, **_ns(
        change_picker="compile", decode_button=False, case_button=False)})
    text = _texts(outputs)
    assert "C++ compiler" in text and "change_result" not in defs and "Traceback" not in text
    assert "Pick another change above" in text
    message = next(m for m in failures(outputs) if "C++ compiler" in m)
    assert not problems(message)  # the cause and a way out


def torch_linear():
    import torch

    return torch.nn.Linear(8, 4)


# --- walk the lab in prediction order --------------------------------------------

ORDER = ("dominant_small_prediction", "dominant_large_prediction", "memory_share_prediction",
         "bf16_ratio_prediction", "best_predicted_prediction")
#: What shows each prediction's answer besides its reference value or label: the figures and
#: words of its own instrument (the scenario it asks about), which must wait for its lock.
#: P3: the launch model's share, and the step's launch total, from which it
#: is arithmetic once the bound is known.
MARKERS = {
    1: [r"answer: one decode step at batch 1\b", r"operator type, batch 1\b"],
    2: [r"answer: one decode step at batch 64\b", r"operator type, batch 64\b",
        r"batch-64 decode step"],
    3: [r"memory-bound \((?:measured|predicted)", r"by regime", r"FLOP/B in fp32",
        r"The roofline alone", r"Roofline \+ 5 µs per kernel", r"kernels × 5 µs = \d+ µs",
        r"kernels add \d+ µs"],
    4: [r"answer for each change", r"new step time / old", r"Roofline \+ launches"],
    5: [r"If every kernel paid", r"measured / bound", r"Measured / bound"],
}
DEVICES = ("h100-sxm", "a100-sxm-80gb", "l4")


def _rendered(app, outputs, env, memo=None):
    """The cells of a run's ``outputs`` (leak_support.run_with_outputs, DownstreamRuns)."""
    from leak_support import rendered_cells

    cells = rendered_cells(app, outputs, scrub=[str(env), "ada"], memo=memo)
    # a figure's font sizes ("size":11 in its layout JSON) are no number a student reads:
    # without this, a font size such as 11 would be "found" as an answer in every figure
    import dataclasses

    return [dataclasses.replace(c, text=re.sub(r'"size":\s*\d+', '"size":<font>', c.text))
            for c in cells]


def _references(app, monkeypatch):
    from leak_support import Reference

    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    _, defs = app.run()
    monkeypatch.delenv("ROOFLINE_REVEAL")
    refs = []
    for name in ORDER:
        r = defs[name]
        is_choice = getattr(r, "answer_type", "numeric") == "choice"
        refs.append(Reference(r.item_id, r.value, r.label if is_choice else None))
    return refs


def _sweeps(k):
    """The open instruments' settings with predictions 1..k-1 locked: the device picker
    (a sample), and once Part 2 is open its case widgets at their ends and at every graded
    scenario, and Part 3's change picker."""
    out = [_ns(device_picker=d) for d in DEVICES]
    if k > len(ORDER):  # Part 2's case widgets open only once all five are locked
        for model in (("decoder", "prefill"), ("decoder", "decode"), ("mlp", "prefill"),
                      ("attention", "prefill")):
            for batch, context in ((1, 64), (256, 32768), (1, 1024), (64, 1024), (1, 256)):
                out.append(_case(model, batch, context))
        out += [_ns(change_picker=c) for c in tiny_models.CHANGES]
    return out


@pytest.mark.slow
def test_walking_in_prediction_order_never_shows_a_later_answer(env, app, monkeypatch,
                                                                what_if_decode):
    """For every prediction k, with 1..k-1 locked and every open instrument swept (measured
    profiles in place where their buttons are visible), nothing visible shows prediction k's
    reference answer (its value or choice label, leak_support's rule) or its instrument's
    figures (MARKERS)."""
    import re

    from leak_support import DownstreamRuns, find_leaks

    refs = _references(app, monkeypatch)
    measured = {"decode_profiles": {1: _measured(what_if_decode), 64: _measured(what_if_decode)},
                "live_info": measure.detect("cpu"), "case_info": measure.detect("cpu"),
                "case_profile": _measured(what_if_decode)}
    problems_found = []
    for k in range(1, 6):
        locked = {name: PREDICTIONS[name] for name in ORDER[:k - 1]}
        # each setting re-runs what its widgets reach, as the kernel does (test_answer_leaks
        # holds DownstreamRuns against whole runs)
        downstream, memo = DownstreamRuns(app, {**locked, **measured}), {}
        for setting in _sweeps(k):
            cells = _rendered(app, downstream.run(setting)[0], env, memo)
            for leak in find_leaks(cells, [refs[k - 1]]):
                problems_found.append(f"P{k} {setting}: {leak}")
            for cell in cells:
                for marker in MARKERS[k]:
                    m = re.search(marker, cell.text)
                    if m:
                        problems_found.append(
                            f"P{k} {sorted(setting)}: {cell.where()} shows {marker!r}: "
                            f"...{cell.text[max(0, m.start() - 60):m.end() + 60]}...")
    assert not problems_found, "\n".join(problems_found[:20])
