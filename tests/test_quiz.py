"""The prediction lock, headless: locked/unlocked runs, reload restores, revise, validation."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from pathlib import Path

import marimo as mo
import pytest
from isolation_support import (CHROMIUM_ARGS, CHROMIUM_CANDIDATES, browser_required,
                               chromium_path)

from labs.core import ledger
from labs.core import quiz
from labs.core import units
from labs.core.course.quiz import explain as quiz_explain
from labs.core.course.quiz import lock as quiz_lock

LAB_FILE = Path(__file__).parent / "_lock_lab.py"


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A private ledger folder, config folder and student id for each test."""
    monkeypatch.setenv(ledger.ENV_LEDGER_DIR, str(tmp_path / "ledger"))
    monkeypatch.setenv(ledger.ENV_STUDENT_ID, "ada")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "ledger"


def _load_app():
    spec = importlib.util.spec_from_file_location("_lock_lab_under_test", LAB_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.app


@pytest.fixture(scope="module")
def app():
    return _load_app()


def _kinds(lab, item=None):
    return [e["kind"] for e in lab.events(item)]


def _html(obj) -> str:
    return obj.text if hasattr(obj, "text") else str(obj)


# --- the notebook, headless ---------------------------------------------------------------

def test_unlocked_run_keeps_the_instrument_hidden(env, app):
    _, defs = app.run()
    assert defs["bw_prediction"] is None and defs["regime_prediction"] is None
    assert "measured_bw" not in defs and "regime_reveal" not in defs
    assert defs["lab"].events() == []


def test_lock_then_reload_restores_the_lock_from_the_ledger(env, app):
    _, defs = app.run()
    quiz.simulate_submit(defs["bw_form"], answer="3e3", confidence=4, reason="HBM is ~3 TB/s")
    locked = defs["get_bw"]()
    assert isinstance(locked, quiz.Prediction) and locked.value == 3000
    assert _kinds(defs["lab"], "locklab.bandwidth") == ["predict", "unlock"]

    # a new run is a page reload: mo.state starts again, the ledger restores the lock
    _, again = app.run()
    restored = again["bw_prediction"]
    assert restored == locked  # same value, confidence, reason, timestamp
    assert again["measured_bw"] == 2000.0  # the gate opened
    args = again["bw_form"].form._args.args
    assert args["submit-button-disabled"] is True
    for name in ("answer", "confidence", "reason"):
        assert again["bw_form"].form.element[name]._args.args["disabled"] is True
    # the reveal recorded what the instrument showed, once
    results = again["lab"].events("locklab.bandwidth", "result")
    assert [r["payload"]["actual"] for r in results] == [2000.0]
    assert results[0]["payload"]["ratio"] == pytest.approx(1.5)
    # the other prediction is still open
    assert again["regime_prediction"] is None and "regime_reveal" not in again


def test_a_later_different_submission_is_a_revision_not_an_overwrite(env, app):
    _, defs = app.run()
    form = defs["bw_form"]
    quiz.simulate_submit(form, answer=500, confidence=2, reason="first guess")
    quiz.simulate_submit(form, answer=500, confidence=2, reason="first guess")  # duplicate
    quiz.simulate_submit(form, answer=2000, confidence=5, reason="peeked")  # stale tab
    assert _kinds(defs["lab"], "locklab.bandwidth") == ["predict", "unlock", "revise"]
    assert defs["get_bw"]().value == 500
    _, again = app.run()
    assert again["bw_prediction"].value == 500


def test_choice_lock_and_compare(env, app):
    _, defs = app.run()
    quiz.simulate_submit(defs["regime_form"], answer="compute", confidence=3,
                         reason="it is a big kernel")
    pred = defs["get_regime"]()
    assert (pred.value, pred.label, pred.answer_type) == ("compute", "compute roof", "choice")
    _, again = app.run()
    text = _html(again["regime_reveal"])
    assert "compute roof" in text and "memory roof" in text and "not what you predicted" in text


@pytest.mark.parametrize("values, message", [
    ({"answer": "", "confidence": 3, "reason": "r"}, "The box is empty"),
    ({"answer": "lots", "confidence": 3, "reason": "r"}, "is not a number"),
    ({"answer": "20000", "confidence": 3, "reason": "r"}, "from 1 to 10000 GB/s"),
    ({"answer": "0.5", "confidence": 3, "reason": "r"}, "from 1 to 10000 GB/s"),
    ({"answer": "100", "confidence": None, "reason": "r"}, "confident"),
    ({"answer": "100", "confidence": 3, "reason": "  "}, "why"),
    ({"answer": "100", "confidence": 3, "reason": "x" * 300}, "one line"),
    ({"answer": "100", "confidence": 3, "reason": "it is big\nand slow"}, "one line"),
])
def test_bad_submissions_give_a_message_and_record_nothing(env, app, values, message):
    _, defs = app.run()
    form = defs["bw_form"]
    handler = form.handler
    raw = {"answer": values["answer"], "reason": values["reason"],
           "confidence": next((k for k, v in quiz.CONFIDENCE_OPTIONS.items()
                               if v == values["confidence"]), None)}
    assert message in handler.validate(raw)  # what the browser shows in the form
    quiz.simulate_submit(form, **values)  # and if it arrives anyway: ignored, no exception
    assert defs["get_bw"]() is None and defs["lab"].events() == []


def test_defs_override_opens_and_closes_the_gate(env, app):
    opened = quiz.Prediction("locklab.bandwidth", 1000.0, units="GB/s", confidence=3)
    _, defs = app.run(defs={"bw_prediction": opened})
    assert defs["measured_bw"] == 2000.0
    _, defs = app.run(defs={"bw_prediction": None})
    assert "measured_bw" not in defs


def test_explain_form_records_observe_and_explain_and_prefills(env, app):
    _, defs = app.run(defs={"bw_prediction": quiz.Prediction("locklab.bandwidth", 1000)})
    form = defs["bw_explain"]
    assert form.handler.check({"observe": "", "explain": "x"})
    quiz.simulate_submit(form, observe="2000 GB/s", explain="copy is memory-bound <script>")
    evs = [e for e in defs["lab"].events("locklab.bandwidth") if e["kind"] != "result"]
    assert [e["kind"] for e in evs] == ["observe", "explain"]
    assert evs[1]["payload"]["text"] == "copy is memory-bound <script>"
    _, again = app.run(defs={"bw_prediction": quiz.Prediction("locklab.bandwidth", 1000)})
    assert again["bw_explain"].form.element["explain"].value == "copy is memory-bound <script>"


# --- feedback on actions ----------------------------------------------

def test_saving_an_explanation_says_saved_with_the_time_at_once(env, app, monkeypatch):
    shown = []
    monkeypatch.setattr(quiz_explain.mo.output, "replace", shown.append)
    _, defs = app.run(defs={"bw_prediction": quiz.Prediction("locklab.bandwidth", 1000)})
    form = defs["bw_explain"]
    assert "Saved" not in form.form._args.label  # nothing saved yet
    quiz.simulate_submit(form, observe="2000 GB/s", explain="the copy is memory-bound")
    handler = form.handler
    saved = defs["lab"].events("locklab.bandwidth", "explain")[-1]
    hhmmss = saved["ts"][11:19]
    assert handler.feedback.startswith("Saved ✓ at " + hhmmss) and "in your ledger" in \
        handler.feedback
    # the form is replaced in place (no reload): pre-filled, labelled with what happened
    [view] = shown
    assert hhmmss in view.form._args.label and view.form.element["explain"].value == (
        "the copy is memory-bound")
    # the same texts again: nothing new is written, and it says so
    n = len(defs["lab"].events())
    quiz.simulate_submit(view, observe="2000 GB/s", explain="the copy is memory-bound")
    assert len(defs["lab"].events()) == n
    assert view.handler.feedback.startswith("No change since your last save")
    assert shown[-1].form._args.label.startswith("No change")
    # a reload shows when it was saved
    _, again = app.run(defs={"bw_prediction": quiz.Prediction("locklab.bandwidth", 1000)})
    assert again["bw_explain"].form._args.label.startswith("Saved ✓ at " + hhmmss)


def test_saving_in_memory_mode_says_where_it_went(env, monkeypatch):
    monkeypatch.setattr(sys, "platform", "emscripten")
    quiz.MEMORY_LEDGERS.clear()
    lab = quiz.LabSession("locklab", str(LAB_FILE))
    form = quiz.explain_form(lab, "locklab.x", observe_label="o", explain_label="e")
    quiz.simulate_submit(form, observe="seen it", explain="because of bytes")
    assert "in memory only: download your ledger" in form.handler.feedback
    quiz.MEMORY_LEDGERS.clear()


def test_a_stale_tab_is_told_that_the_first_answer_stands(env, app):
    _, tab_a = app.run()
    _, tab_b = app.run()  # opened before tab A locked: its form is still open
    quiz.simulate_submit(tab_a["bw_form"], answer=500, confidence=2, reason="first")
    quiz.simulate_submit(tab_b["bw_form"], answer=2000, confidence=5, reason="second")
    assert tab_b["get_bw"]().value == 500  # tab B's lock shows the first answer
    text = _html(quiz.prediction_panel(tab_b["bw_form"], tab_b["get_bw"]()))
    assert "already locked" in text and "first answer stands" in text
    assert "You submitted 2,000 GB/s" in text and "with 500 GB/s" in text
    assert "500 GB/s · confidence 2/5" in text  # the card shows the answer that stands
    # tab A locked its own answer: no such message there
    text_a = _html(quiz.prediction_panel(tab_a["bw_form"], tab_a["get_bw"]()))
    assert "already locked" not in text_a
    # tab B submitting the same answer again is told it was already locked with it
    quiz.simulate_submit(tab_b["bw_form"], answer=500, confidence=2, reason="first")
    assert "with the same answer" in _html(
        quiz.prediction_panel(tab_b["bw_form"], tab_b["get_bw"]()))


# --- components ---------------------------------------------------------------------------

@pytest.fixture
def lab(env):
    return quiz.LabSession("locklab", str(LAB_FILE))


def test_locked_card_escapes_student_text(lab):
    form = quiz.numeric_form(lab, "locklab.x", question="How fast?", units="GB/s", lo=1,
                             hi=10, locked=None, on_lock=lambda p: None)
    assert quiz.prediction_panel(form, None) is form.form
    pred = quiz.Prediction("locklab.x", 3, units="GB/s", confidence=2,
                           reason='<img src=x onerror="alert(1)">', timestamp=ledger.utc_now())
    assert "marimo-callout" in _html(quiz.prediction_panel(form, pred))
    text = quiz.locked_card_html(pred)
    assert "<img" not in text and "&lt;img" in text and "3 GB/s" in text
    assert "confidence 2/5" in text and "Locked 20" in text


def test_a_prediction_form_is_typed_and_leaves_marimo_s_object_alone(lab):
    """The item, question and handler are fields of a PredictionForm, not attributes set on
    marimo's form; a headless submission goes through the handler, never marimo's private
    form._update."""
    got = []
    form = quiz.numeric_form(lab, "locklab.x", question="How fast?", units="GB/s", lo=1,
                             hi=10, locked=None, on_lock=got.append)
    assert isinstance(form, quiz.PredictionForm)
    assert (form.item_id, form.question, form.handler.units) == ("locklab.x", "How fast?", "GB/s")
    assert isinstance(form.form, mo.ui.form) and not hasattr(form.form, "roofline_item")
    assert form._mime_() == form.form._mime_()  # shown in a cell, it draws as its form
    assert form.text == form.form.text

    def private_update(value):
        raise AssertionError("simulate_submit called marimo's private form._update")

    form.form._update = private_update
    quiz.simulate_submit(form, answer=3, confidence=2, reason="HBM bound")
    assert [p.value for p in got] == [3] and _kinds(lab, "locklab.x") == ["predict", "unlock"]
    choice = quiz.choice_form(lab, "locklab.r", question="Which?", options={"a": 1, "b": 2},
                              locked=None, on_lock=got.append)
    assert (choice.item_id, choice.question, choice.handler.options) == (
        "locklab.r", "Which?", {"a": 1, "b": 2})
    with pytest.raises(ValueError, match="numeric_form or quiz.choice_form"):
        quiz.prediction_panel(form.form, None)


def test_no_core_code_calls_marimo_s_private_update():
    root = Path(__file__).resolve().parents[1] / "labs" / "core"
    callers = [str(p.relative_to(root)) for p in root.rglob("*.py") if "._update(" in p.read_text()]
    assert callers == []


def test_the_session_s_public_methods(lab):
    assert lab.check_item("locklab.x") == "locklab.x"
    with pytest.raises(ValueError, match="locklab.<item>"):
        lab.check_item("other.x")
    first = lab.record_result("locklab.x", {"actual": 3})
    assert first is not None and first["kind"] == "result"
    assert lab.record_result("locklab.x", {"actual": 3}) is None  # the same reading: once
    assert lab.record_result("locklab.x", {"actual": 4}) is not None
    again = quiz.LabSession("locklab", str(LAB_FILE))  # a reload reads the last one recorded
    assert again.record_result("locklab.x", {"actual": 4}) is None
    widget = mo.ui.text()
    assert lab.keep_widget(widget) is widget and lab.widgets[-1] is widget
    lab.forget_widgets()
    assert lab.widgets == ()


def test_events_before_a_student_id_are_counted(tmp_path, monkeypatch):
    monkeypatch.setenv(ledger.ENV_LEDGER_DIR, str(tmp_path / "ledger"))
    monkeypatch.delenv(ledger.ENV_STUDENT_ID, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    lab = quiz.LabSession("locklab", str(LAB_FILE))
    assert lab.student_id is None and lab.pending_count == 0
    lab.record("observe", "locklab.x", {"text": "flat"})
    assert lab.pending_count == 1


@pytest.mark.parametrize("pred, actual, expect, kind", [
    (300, 100, "off by 3× (too high)", "danger"),
    (100, 300, "off by 3× (too low)", "danger"),
    # within the grader's 1.5x is "close" (≈), not a ✓ that reads as right
    (110, 100, "close: off by 1.1× (too high), within the 1.5× graded as correct", "warn"),
    (147, 100, "close: off by 1.47× (too high)", "warn"),
    (151, 100, "off by 1.51× (too high)", "danger"),
    (1, 1000, "off by 1,000× (too low)", "danger"),
    (886, 886, "✓ right (within 0.5 %)", "success"),
    (1000, 1004, "✓ right (within 0.5 %)", "success"),
    (-5, 5, "off by 10", "warn"),
])
def test_compare_numeric(pred, actual, expect, kind):
    p = quiz.Prediction("lab01.x", pred, units="GB/s")
    text = _html(quiz.compare(p, actual, units="GB/s"))
    assert expect in text and kind in text


def test_compare_choice_and_missing_prediction():
    p = quiz.Prediction("lab01.r", "memory", label="memory roof", answer_type="choice")
    assert "right" in _html(quiz.compare(p, "memory", actual_label="memory roof"))
    assert "No prediction" in _html(quiz.compare(None, 3))
    with pytest.raises(ValueError, match="actual"):
        quiz.compare(quiz.Prediction("lab01.x", 3), float("nan"))


def test_the_lock_refuses_a_confidence_outside_one_to_five_however_it_arrives(lab):
    """The form offers 1-5; a value that arrives another way (0, 6, true) is refused too."""
    form = quiz.numeric_form(lab, "locklab.x", question="q", units="", lo=1, hi=1000,
                             locked=None, on_lock=lambda p: None)
    handler = form.handler
    for conf in (0, 6, True, None, "3"):
        prediction, message = handler.check({"answer": "100", "confidence": conf, "reason": "r"})
        assert prediction is None and "confident" in message, conf
    prediction, message = handler.check({"answer": "100", "confidence": 1, "reason": "r"})
    assert message is None and prediction.confidence == 1


def test_the_first_prediction_in_the_ledger_is_the_locked_one(lab):
    """Two predict events of one item (an old ledger, two windows of an older version): the
    lock and a reload restore the first, never the newest."""
    for value in (300, 900):
        lab.record("predict", "locklab.x", {"value": value, "answer_type": "numeric",
                                            "confidence": 3, "reason": "r"})
    assert lab.first_prediction("locklab.x").value == 300
    reloaded = quiz.LabSession("locklab", str(LAB_FILE))
    assert reloaded.first_prediction("locklab.x").value == 300


def test_a_ledger_confidence_that_is_not_a_whole_number_is_not_restored():
    def restored(conf):
        return quiz.Prediction.from_event(
            {"item_id": "lab01.x", "payload": {"value": 3, "confidence": conf}}).confidence

    assert restored(4) == 4
    assert restored(True) is None and restored("4") is None and restored(4.0) is None


def test_form_arguments_are_checked(lab):
    kw = dict(question="q", units="", locked=None, on_lock=lambda p: None)
    with pytest.raises(ValueError, match="lo must be < hi"):
        quiz.numeric_form(lab, "locklab.x", lo=5, hi=1, **kw)
    with pytest.raises(ValueError, match="lo must be < hi"):  # a range of one point
        quiz.numeric_form(lab, "locklab.x", lo=5, hi=5, **kw)
    with pytest.raises(ValueError, match="log_scale"):
        quiz.numeric_form(lab, "locklab.x", lo=0, hi=1, log_scale=True, **kw)
    with pytest.raises(ValueError, match="item_id"):
        quiz.numeric_form(lab, "other.x", lo=0, hi=1, **kw)
    with pytest.raises(ValueError, match="options"):
        quiz.choice_form(lab, "locklab.c", question="q", options={"only": 1}, locked=None,
                         on_lock=lambda p: None)
    with pytest.raises(ValueError, match="options values"):
        quiz.choice_form(lab, "locklab.c", question="q", options={"a": object(), "b": 1},
                         locked=None, on_lock=lambda p: None)
    with pytest.raises(ValueError, match="lab_id"):
        quiz.LabSession("lab.01", None)


def test_log_scale_slider_locks_a_round_number(lab):
    got = []
    form = quiz.numeric_form(lab, "locklab.n", question="q", units="tokens", lo=1, hi=1e6,
                             locked=None, on_lock=got.append, log_scale=True)
    steps = form.handler.steps
    assert steps[0] == 1 and steps[-1] == 1_000_000 and 300 in steps and 150_000 in steps
    quiz.simulate_submit(form, answer=300, confidence=3, reason="guess")
    assert got[0].value == 300 and lab.first_prediction("locklab.n").value == 300


@pytest.mark.parametrize("answer", ["past the end", -1, "886", 3.0, True, None, [3]])
def test_a_slider_form_reads_only_an_index_of_its_own_steps(lab, answer):
    """I-4: an index past the slider's end (or a string) reached the number rule as the value
    itself: on a 1-1e6 slider, index len(steps) locked that many tokens, "886" locked 886."""
    got = []
    form = quiz.numeric_form(lab, "locklab.n", question="q", units="tokens", lo=1, hi=1e6,
                             locked=None, on_lock=got.append, log_scale=True)
    handler = form.handler
    answer = len(handler.steps) if answer == "past the end" else answer
    raw = {"answer": answer, "confidence": "3", "reason": "r"}
    assert handler.validate(raw) == quiz_lock.MOVE_SLIDER
    handler(handler.from_frontend(raw))  # on_change, should it come some other way
    assert got == [] and handler.last_error == quiz_lock.MOVE_SLIDER
    handler({"answer": 886, "confidence": 3, "reason": "r"})  # a value, but not on the slider
    assert got == [] and handler.last_error == quiz_lock.MOVE_SLIDER
    last = {"answer": len(handler.steps) - 1, "confidence": "3", "reason": "r"}
    assert handler.validate(last) is None  # the slider's last step is still read
    handler(handler.from_frontend(last))
    assert [p.value for p in got] == [1_000_000]


def test_number_parsing_and_formatting():
    assert quiz.parse_number("3e5") == quiz.parse_number("300k") == quiz.parse_number(
        "300,000,000") / 1000 == 300000.0
    assert quiz.parse_number("inf") is None and quiz.parse_number("1e999") is None
    assert quiz.parse_number(True) is None and quiz.parse_number("") is None
    assert [units.format_value(v) for v in (300000, 295.4, 0.01234, 1.5, 2e10, 0)] == [
        "300,000", "295", "0.0123", "1.5", "2e+10", "0"]


def test_events_before_the_student_id_are_kept_and_written_once_given(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv(ledger.ENV_STUDENT_ID, raising=False)
    seen = []
    lab = quiz.LabSession("locklab", str(LAB_FILE),
                          settings={"student_id": None, "ledger_dir": str(tmp_path / "l")},
                          on_settings=seen.append)
    status = _html(lab.status())
    assert "student id" in status.lower() and "Save my id" in status
    locked = lab.commit(quiz.Prediction("locklab.x", 7, confidence=3, reason="r"))
    assert locked.value == 7 and lab.first_prediction("locklab.x").value == 7
    assert "Your student id must be" in lab.set_student_id("bad id")
    assert lab.set_student_id("ada") is None
    assert seen and seen[-1]["student_id"] == "ada" and seen[-1]["generation"] == 1
    assert ledger.load_config()["student_id"] == "ada"  # remembered for next time
    events = ledger.read_ledger_file(tmp_path / "l" / "roofline-ledger-ada.jsonl")
    assert events.clean and [e["kind"] for e in events.events] == ["predict", "unlock"]
    # a session re-created from the new settings restores the lock
    again = quiz.LabSession("locklab", str(LAB_FILE), settings=seen[-1])
    assert again.first_prediction("locklab.x").value == 7


def test_status_shows_path_student_and_download(lab, env):
    lab.record("decision", "locklab.choice", {"device": "h100"})
    text = _html(lab.status())
    assert str(env) in text and "ada" in text and "1 event" in text
    assert "Download roofline-ledger-ada.jsonl" in text or "roofline-ledger-ada.jsonl" in text


def test_status_reports_a_corrupt_ledger_and_keeps_it(env):
    env.mkdir(parents=True)
    bad = env / "roofline-ledger-ada.jsonl"
    bad.write_bytes(b"this is not a ledger\n")
    lab = quiz.LabSession("locklab", str(LAB_FILE))
    text = _html(lab.status())
    assert "kept untouched" in text and "recovery-1" in text
    lab.record("decision", "locklab.c", {"x": 1})
    assert bad.read_bytes() == b"this is not a ledger\n"


def test_memory_mode_status_offers_download_and_upload(tmp_path, monkeypatch, env):
    monkeypatch.setattr(sys, "platform", "emscripten")
    lab = quiz.LabSession("locklab", str(LAB_FILE))
    lab.commit(quiz.Prediction("locklab.x", 7, confidence=3, reason="r"))
    text = _html(lab.status())
    assert "browser-only" in text and "marimo-file" in text and "marimo-download" in text
    [(name, data)] = lab.ledger.export_files()
    # re-created by a settings change in the same kernel: the records are still there
    again = quiz.LabSession("locklab", str(LAB_FILE))
    assert again.first_prediction("locklab.x").value == 7
    # a new page (new kernel): empty until the student uploads the downloaded file
    quiz.MEMORY_LEDGERS.clear()
    seen = []
    fresh = quiz.LabSession("locklab", str(LAB_FILE), on_settings=seen.append)
    assert fresh.first_prediction("locklab.x") is None
    assert "Loaded 2 records" in fresh.upload(data, name)
    assert fresh.first_prediction("locklab.x").value == 7
    after = quiz.LabSession("locklab", str(LAB_FILE), settings=seen[-1])  # the re-run
    assert after.first_prediction("locklab.x").value == 7
    after.record("decision", "locklab.c", {"x": 1})
    [(name2, data2)] = after.ledger.export_files()
    assert name2 == name and data2.startswith(data) and ledger.read_ledger(data2).clean
    quiz.MEMORY_LEDGERS.clear()


def test_record_converts_numpy_and_rejects_objects(lab):
    import numpy as np

    ev = lab.record("result", "locklab.x", {"n": np.int64(3), "v": np.float32(0.5),
                                            "a": np.arange(3), "t": (1, 2)})
    assert ev["payload"] == {"n": 3, "v": 0.5, "a": [0, 1, 2], "t": [1, 2]}
    with pytest.raises(ValueError, match=r"payload\['d'\]"):
        lab.record("result", "locklab.x", {"d": object()})
    with pytest.raises(ValueError, match="finite"):
        lab.record("result", "locklab.x", {"d": float("inf")})


def test_record_rejects_foreign_items_and_kinds(lab):
    with pytest.raises(ValueError, match="item_id"):
        lab.record("decision", "lab99.x", {})
    with pytest.raises(ValueError, match="kind"):
        lab.record("grade", "locklab.x", {})
    with pytest.raises(ValueError, match="payload"):
        lab.record("decision", "locklab.x", ["not", "a", "dict"])


def test_lock_state_is_seeded_from_the_ledger(lab):
    get, _ = quiz.lock_state(lab, "locklab.x")
    assert get() is None
    lab.commit(quiz.Prediction("locklab.x", 5, confidence=1, reason="r"))
    get, _ = quiz.lock_state(lab, "locklab.x")
    assert get().value == 5 and json.dumps(get().payload())


# --- in a real browser (marimo run + Debian chromium) --------------------------------------

#: The desktop chromium a student opens, where installed: the browser tests in tests/browser/
#: drive the lighter headless shell, so this flow is also walked in the real browser.
CHROMIUM = chromium_path(("/usr/bin/chromium", *CHROMIUM_CANDIDATES))


def _browser_skip() -> str | None:
    if not Path(CHROMIUM).exists():
        return f"no chromium at {CHROMIUM}"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "playwright is not installed"
    return None


@pytest.mark.browser
@pytest.mark.slow
@pytest.mark.skipif(_browser_skip() is not None and not browser_required(CHROMIUM),
                    reason=str(_browser_skip()))
def test_browser_id_entry_lock_and_reload(tmp_path):
    if _browser_skip() is not None:  # in CI: no browser is a failure (browser_required)
        pytest.fail(f"the browser tests cannot run: {_browser_skip()}", pytrace=False)
    import socket
    import subprocess
    import time
    import urllib.request

    from playwright.sync_api import sync_playwright

    env = dict(os.environ, ROOFLINE_LEDGER_DIR=str(tmp_path / "ledger"),
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    env.pop(ledger.ENV_STUDENT_ID, None)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    marimo = Path(sys.executable).with_name("marimo")
    server = subprocess.Popen([str(marimo), "run", str(LAB_FILE), "--headless", "--port",
                               str(port), "--no-token"], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(url, timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "no server"
                time.sleep(0.25)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1100, "height": 1300})
            page.set_default_timeout(60_000)
            page.goto(url)
            # the id is asked once, then the status says where it writes
            page.get_by_placeholder("e.g. your university login").fill("ada")
            page.get_by_role("button", name="Save my id").click()
            page.get_by_text("student ada").wait_for()
            assert page.get_by_text("Instrument:").count() == 0  # the gate is closed
            # an out-of-range answer is refused with a message, not a traceback
            page.get_by_placeholder("1 to 10000").fill("20000")
            page.get_by_text("4", exact=True).first.click()
            page.get_by_placeholder("one line: why do you expect this?").first.fill("HBM")
            page.get_by_role("button", name="Lock prediction").first.click()
            page.get_by_text("from 1 to 10000 GB/s").wait_for()
            page.get_by_placeholder("1 to 10000").fill("3000")
            page.get_by_role("button", name="Lock prediction").first.click()
            page.get_by_text("Instrument:").wait_for()
            page.get_by_text("Locked prediction").first.wait_for()
            # a reload restores the lock from the ledger: no form, instrument shown
            page.reload()
            page.get_by_text("Locked prediction").first.wait_for()
            page.get_by_text("Instrument:").wait_for()
            page.get_by_text("close: off by 1.5× (too high)").wait_for()
            page.screenshot(path=str(tmp_path / "reloaded.png"), full_page=True)
            browser.close()
    finally:
        server.terminate()
        server.wait(timeout=20)
    result = ledger.read_ledger_file(tmp_path / "ledger" / "roofline-ledger-ada.jsonl")
    assert result.clean
    assert [e["kind"] for e in result.events] == ["predict", "unlock", "result"]
    assert result.events[0]["payload"]["value"] == 3000


def test_static_export_status_says_nothing_is_recorded(lab, monkeypatch):
    monkeypatch.setenv("ROOFLINE_STATIC_EXPORT", "1")
    text = lab.status().text
    assert "Static preview" in text and "not recorded" in text
    # students open the labs with roofline-labs, so that is what the page names
    assert "roofline-labs" in text and "marimo edit" not in text
    assert "writing to" not in text  # not the exporter's throwaway ledger path
    monkeypatch.delenv("ROOFLINE_STATIC_EXPORT")
    assert "Ledger" in lab.status().text


@pytest.mark.parametrize("pred, actual, words", [
    (886, 886, "right (within 0.5 %)"),
    (1004, 1000, "right (within 0.5 %)"),
    (1010, 1000, "close: off by 1.01× (too high), within the 1.5× graded as correct"),
    # exactly at the tolerance: graded right, so told it is within it
    (150, 100, "close: off by 1.5× (too high), within the 1.5× graded as correct"),
    (100, 150, "close: off by 1.5× (too low), within the 1.5× graded as correct"),
    (1, 1000, "off by 1,000× (too low)"),
    (0, 5, None), (-5, 5, None),
])
def test_ratio_verdict_is_one_rule_for_labs_and_feedback_pages(pred, actual, words):
    from labs.core.course.grading.feedback import ratio_text
    assert quiz.ratio_verdict(pred, actual) == words
    text = ratio_text(pred, actual, quiz.GRADE_TOLERANCE)
    assert (text == "" if words is None else words in text)


@pytest.mark.parametrize("pred, actual, ratio", [
    (10, 2, 5.0), (2, 10, 5.0), (-4, -2, 2.0), (3, 3, 1.0),
    (0, 5, None), (5, 0, None), (-5, 5, None), (True, 5, None), (5, False, None),
    ("5", 5, None), (None, 5, None), (float("nan"), 5, None), (5, float("inf"), None),
])
def test_ratio_off_is_the_one_rule_for_the_lab_the_grade_and_the_dashboard(pred, actual, ratio):
    from labs.core.course.classroom import data as classroom_data
    from labs.core.course.classroom import synth as classroom_synth
    from labs.core.course.grading import score as grading_score
    assert quiz.ratio_off(pred, actual) == (None if ratio is None else pytest.approx(ratio))
    # grading and the class dashboard call this rule; none keeps a private copy
    for module in (classroom_data, classroom_synth):
        assert module.ratio_off is quiz.ratio_off
        assert not hasattr(module, "_ratio")
    assert grading_score.within_factor is quiz.within_factor  # the grade's boundary rule


def test_the_verdict_follows_the_graders_tolerance():
    """The grader keeps no tolerance of its own: without a course file's, an item is graded
    within the factor the lab's comparison words use (the item's own band)."""
    from labs.core import catalogue
    from labs.core.course.grading.config import LabConfig, Rubric
    from labs.core.physics import misconceptions

    assert Rubric().tolerance is None
    for entry in catalogue.catalogue():
        lab = LabConfig(entry.lab_id, entry.title, items=entry.item_ids)
        for item in entry.items:
            assert lab.tolerance_for(item.item_id) == (
                misconceptions.tolerance(item.item_id), ""), item.item_id


@pytest.mark.parametrize("pred, actual, fmt, shown", [
    (0.60, 0.595, ".2f", ("0.60", "0.59")),      # never "0.60" against "0.60"
    (0.6, 0.5951, None, ("0.6", "0.595")),
    (1001, 1003, None, ("1,001", "1,003")),
    (886, 886.2, None, ("886", "886")),          # right: the same text is honest
])
def test_numbers_shown_differ_when_the_verdict_is_not_right(pred, actual, fmt, shown):
    assert quiz.distinct_texts(pred, actual, fmt) == shown
    text = _html(quiz.compare(quiz.Prediction("lab01.x", pred), actual, fmt=fmt))
    assert f"{shown[0]}" in text and f"{shown[1]}" in text


@pytest.mark.parametrize("a, b, factor, inside", [
    (1.2, 1.0, 1.25, True), (1.0, 1.25, 1.25, True), (1.3, 1.0, 1.25, False),
    (0.7, 1.0, 1.5, True), (0.6, 1.0, 1.5, False),
    # no ratio exists: never "near" (ratio_off is None there, which a bare <= would raise on)
    (0.0, 1.0, 1.5, False), (-1.0, 1.0, 1.5, False), (float("nan"), 1.0, 1.5, False),
    (True, 1.0, 1.5, False), ("1", 1.0, 1.5, False)])
def test_within_factor_is_false_where_no_ratio_exists(a, b, factor, inside):
    assert quiz.within_factor(a, b, factor) is inside


def test_a_reading_no_ratio_can_use_is_skipped_by_the_page_as_by_the_grader(lab, env):
    """A first reading that is not a finite number (an instrument that showed inf) cannot
    grade: labs-grade judges the next one, and the page names that same reading."""
    from labs.core import grading

    lab.commit(quiz.Prediction("locklab.x", 3.0, units="×", confidence=3, reason="r",
                               timestamp=ledger.utc_now()))
    lab.record("result", "locklab.x", {"actual": "inf"})
    lab.record("result", "locklab.x", {"actual": 2.0})
    assert quiz.graded_reading(lab, "locklab.x")["actual"] == 2.0
    config = grading.CourseConfig(configured=True, labs={
        "locklab": grading.LabConfig("locklab", "locklab", items=["locklab.x"])})
    book = grading.grade(grading.load_ledgers([env]), config)
    item = next(i for i in book.grades[("ada", "locklab")].items if i.item_id == "locklab.x")
    assert item.graded_actual == 2.0 and item.correct is True


def test_a_later_reading_says_the_grade_uses_the_first_and_the_grader_agrees(lab, env):
    """The page never contradicts the grade: after a second, different reading the comparison
    says the grade uses the first one, and labs-grade judges the same first reading; a page
    reloaded after the run shows that recorded reading as the graded one."""
    from labs.core import grading

    prediction = lab.commit(quiz.Prediction("locklab.x", 3.0, units="×", confidence=3,
                                            reason="r", timestamp=ledger.utc_now()))
    assert quiz.graded_reading(lab, "locklab.x") is None
    first = _html(quiz.compare(prediction, 2.0, units="×", lab=lab))
    assert "first reading" not in first
    later = _html(quiz.compare(prediction, 9.0, units="×", lab=lab))
    assert "Your grade uses your first reading" in later and "2 ×" in later
    assert quiz.graded_reading(lab, "locklab.x")["actual"] == 2.0
    reloaded = quiz.LabSession("locklab", str(LAB_FILE))
    text = _html(quiz.recorded_comparison(reloaded, prediction, units="×"))
    assert "your recorded reading" in text and "graded" in text and "off by 1.5×" in text
    config = grading.CourseConfig(configured=True, labs={
        "locklab": grading.LabConfig("locklab", "locklab", items=["locklab.x"])})
    book = grading.grade(grading.load_ledgers([env]), config)
    item = next(i for i in book.grades[("ada", "locklab")].items if i.item_id == "locklab.x")
    assert item.graded_actual == 2.0 and item.graded_from == "result"
