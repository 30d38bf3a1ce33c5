"""Numbers a student types (issue 18.4): whole-number quantities take whole numbers only, and an
entry out of range is refused with a message while the last good value stays in use.

The rule is ``labs.core.ui.numbers.check_number``; ``NumberBox`` (the labs' text box for a
number) and ``quiz.numeric_form(integer=True)`` use it. The labs' own widgets are audited in
tests/test_answer_leaks.py's sibling below (``test_no_lab_widget_clamps_in_silence``) and in the
browser (tests/browser/test_inputs_browser.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import marimo as mo
import pytest
from hypothesis import given
from hypothesis import strategies as st

from labs.core import quiz, style
from labs.core.ui.numbers import check_number, parse_number
from notebook_support import load_app

LABS = sorted((Path(__file__).resolve().parents[1] / "labs").glob("lab_*.py"))


@given(x=st.floats(allow_nan=False, allow_infinity=False, min_value=-1e12, max_value=1e12),
       lo=st.floats(min_value=-1e6, max_value=1e6), width=st.floats(min_value=1, max_value=1e6),
       integer=st.booleans())
def test_a_number_is_accepted_exactly_when_the_rule_allows_it(x, lo, width, integer):
    hi = lo + width
    text = repr(x)
    value, message = check_number(text, lo=lo, hi=hi, integer=integer, units="tokens")
    allowed = lo <= x <= hi and (not integer or x == int(x))
    assert (value is not None) == allowed and (message is None) == allowed
    if allowed:
        assert value == x  # never rounded or clamped
    else:
        assert "enter" in message and "tokens" in message  # says what to do instead


@pytest.mark.parametrize("text, expect", [
    ("12.5", "not a whole number of sequences"), ("0", "out of range"),
    ("-5", "out of range"), ("1e9", "out of range"), ("lots", "is not a number"),
    ("", "The box is empty"), ("nan", "is not a number"), ("inf", "is not a number"),
])
def test_messages_name_the_problem_and_the_way_out(text, expect):
    value, message = check_number(text, lo=1, hi=512, integer=True, units="sequences")
    assert value is None and expect in message and "from 1 to 512 sequences" in message


def test_whole_numbers_come_back_as_int_and_shorthand_is_read():
    assert check_number("52", lo=1, hi=512, integer=True) == (52, None)
    assert check_number("3k", lo=1, hi=1e4, integer=True) == (3000, None)
    assert check_number("2.5", lo=0.5, hi=100) == (2.5, None)
    assert parse_number("300,000") == 300000 and parse_number(True) is None
    assert quiz.parse_number is parse_number  # one reading rule for the forms too


@pytest.mark.parametrize("typed", ["0", "-5", "1e9", "abc", ""])
def test_number_box_keeps_the_last_good_value_and_says_why(typed):
    box = style.NumberBox(1.0, lo=0.001, hi=100.0, label="fp16")
    box._update("2.5")
    assert box.value == 2.5 and box.message is None
    box._update(typed)  # what the browser sends when the student types
    assert box.value == 2.5 and box.message
    shown = style.input_messages([box]).text
    assert "fp16" in shown and box.message.split(":")[0] in shown and "2.5" in shown
    box._update("3")
    assert box.value == 3 and box.message is None
    assert style.input_messages([box]).text == ""  # nothing to say, and never "None"


def test_number_box_inside_a_dictionary_reports_per_entry():
    weights = mo.ui.dictionary({p: style.NumberBox(1.0, lo=0.001, hi=100.0, label=p)
                                for p in ("fp16", "fp8")})
    weights._update({"fp16": "1", "fp8": "-5"})  # what the browser sends: key -> text
    assert weights.value == {"fp16": 1, "fp8": 1}
    assert "fp8" in style.input_messages(weights).text


def test_a_box_cannot_start_outside_its_own_rule():
    with pytest.raises(ValueError, match="value"):
        style.NumberBox(0, lo=1, hi=10, label="batch", integer=True)


def test_integer_prediction_forms_refuse_fractions(env):
    from labs.core.course.quiz_lock import _LockHandler
    from labs.core.course.quiz_session import LabSession

    lab = LabSession("lab99", __file__)
    locked = []
    form = quiz.numeric_form(lab, "lab99.batch", question="q", units="sequences", lo=1,
                             hi=1000, integer=True, locked=None, on_lock=locked.append)
    handler = form.roofline_item["handler"]
    assert isinstance(handler, _LockHandler)
    raw = {"answer": "12.5", "confidence": "3", "reason": "r"}
    assert "not a whole number of sequences" in handler.validate(raw)
    quiz.simulate_submit(form, answer=12.5, confidence=3, reason="why")
    assert locked == [] and lab.events("lab99.batch", "predict") == []
    quiz.simulate_submit(form, answer=52, confidence=3, reason="why")
    assert [p.value for p in locked] == [52]
    free = quiz.numeric_form(lab, "lab99.ratio", question="q", units="×", lo=0.1, hi=10,
                             locked=None, on_lock=locked.append)
    assert free.roofline_item["handler"].validate(
        {"answer": "2.5", "confidence": "3", "reason": "r"}) is None


# --- the labs' own widgets --------------------------------------------------------------------

#: Units that count things: a prediction in them is a whole number.
COUNT_UNITS = {"sequences", "tokens", "elements", "requests", "layers", "kernels", "heads",
               "iterations", "users", "GPUs", "devices"}


@pytest.mark.parametrize("lab_file", LABS, ids=[p.stem for p in LABS])
def test_no_lab_widget_clamps_or_rounds_in_silence(lab_file, env, monkeypatch):
    """Every lab, all gates open: no ``mo.ui.number`` and no slider with a typing box (marimo
    clamps and rounds what is typed there without a word), and every numeric prediction in a
    counting unit refuses fractions."""
    from labs.core.course import quiz_lock

    forms = []
    original = quiz_lock.numeric_form

    def recording(*args, **kwargs):
        forms.append(kwargs)
        return original(*args, **kwargs)

    monkeypatch.setattr(quiz_lock, "numeric_form", recording)
    monkeypatch.setattr(quiz, "numeric_form", recording)
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    outputs, _ = load_app(lab_file, f"_{lab_file.stem}_inputs").run()
    shown = " ".join(getattr(o, "text", "") for o in outputs if o is not None)
    assert "<marimo-number" not in shown, f"{lab_file.name} uses mo.ui.number"
    assert "data-include-input='true'" not in shown, f"{lab_file.name}: slider with a text box"
    for kw in forms:
        if kw.get("units") in COUNT_UNITS:
            assert kw.get("integer") is True, f"{lab_file.name}: {kw.get('question', '')[:60]}"
