"""Numbers a student types: whole-number quantities take whole numbers only, and an
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
from labs.core.ui.numbers import check_number, parse_number, plain
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
    assert parse_number("1,000,000") == 1e6 and parse_number(True) is None
    assert parse_number("300,000") is None  # 300000 or 300.0: the box's range decides
    assert check_number("300,000", lo=1, hi=1e6, previewed=True) == (None, check_number(
        "300,000", lo=1, hi=1e6)[1])
    assert check_number("300,000", lo=1000, hi=1e6, previewed=True) == (300000, None)
    assert check_number("300,000", lo=1000, hi=1e6)[0] is None  # no preview: both are named
    assert quiz.parse_number is parse_number  # one reading rule for the forms too


# --- a decimal comma is read as one, never dropped --------------------------------


@pytest.mark.parametrize("typed, lo, hi, integer, stored, ambiguous", [
    ("5,5", 0.1, 100, False, 5.5, False),        # was 55: the comma was dropped
    ("0,6", 0.01, 2, False, 0.6, False),         # was 6, refused as out of range
    ("3,14159", 0.1, 100, False, 3.14159, False),
    ("1234,5", 1, 1e4, False, 1234.5, False),
    ("1,5k", 1, 1e4, True, 1500, False),
    ("5,500", 0.1, 100, False, 5.5, True),       # 5500 is out of this range: only 5.5 fits
    ("5,500", 128, 1e7, True, 5500, True),       # 5.5 is not a whole number: only 5500 fits
    ("1,000", 1, 512, True, 1, True),            # Lab 2's batch box: one thousand, or 1?
    ("5,000", 0.5, 100, False, 5, True),         # Lab 4's launch overhead (µs)
    ("1,000,000", 1, 1e7, False, 1_000_000, False),
    ("1,234.5", 1, 1e4, False, 1234.5, False),
    ("0,132", 0.001, 1e3, False, 0.132, False),  # Lab 3's weights: no thousands group leads with 0
    ("0,250", 0.001, 1e3, False, 0.25, False),
])
def test_a_comma_is_read_the_one_way_that_fits(typed, lo, hi, integer, stored, ambiguous):
    """Where the reading is shown before it is used (a prediction form: "You are locking …"),
    a comma is read the one way that fits. Where it is not (a NumberBox, the default), a comma
    that could be either (I-1: "1,000" in a 1-512 box was 1) is refused naming both readings;
    a comma with one reading is read so everywhere."""
    assert check_number(typed, lo=lo, hi=hi, integer=integer, previewed=True) == (stored, None)
    value, message = check_number(typed, lo=lo, hi=hi, integer=integer)
    if not ambiguous:
        assert (value, message) == (stored, None)
        return
    thousands, decimal = (plain(float(typed.replace(",", x))) for x in ("", "."))
    assert value is None and "thousands separator" in message and "decimal comma" in message
    for reading in (thousands, decimal):  # both readings, each as it can be typed
        assert f"Type {thousands} or {decimal}" in message and f"({reading})" in message
    assert f"from {plain(lo)} to {plain(hi)}" in message  # and the range, to say which one the box takes


@pytest.mark.parametrize("start, lo, hi, integer, units, typed", [
    (1, 1, 512, True, "sequences", "1,000"),     # Lab 2 batch box: was read as 1
    (1, 1, 512, True, "sequences", "2,000"),     # was 2
    (1, 1, 512, True, "sequences", "512,000"),   # was 512
    (5, 0.5, 100, False, "µs", "5,000"),         # Lab 4 launch overhead: was 5 µs
    (1.0, 0.001, 100.0, False, "", "1,000"),     # Lab 3 circuit weight: was 1
])
def test_number_box_refuses_a_comma_it_cannot_preview(start, lo, hi, integer, units, typed):
    box = style.NumberBox(start, lo=lo, hi=hi, integer=integer, units=units, label="box")
    box._update("2")  # a good value first: the refused entry must leave it in use
    box._update(typed)
    assert box.value == 2 and box.message is not None
    thousands, decimal = typed.replace(",", ""), typed.replace(",", ".").rstrip("0").rstrip(".")
    assert f"Type {thousands} or {decimal}" in box.message
    shown = style.input_messages(box).text
    assert "thousands separator" in shown and "last accepted value, 2" in shown
    box._update(thousands if float(thousands) <= hi else decimal)  # typed as asked: read
    assert box.message is None


def test_a_dictionary_of_number_boxes_refuses_an_ambiguous_comma():
    weights = mo.ui.dictionary({p: style.NumberBox(0.5, lo=0.001, hi=100.0, label=p)
                                for p in ("fp16", "fp8")})
    weights._update({"fp16": "1,000", "fp8": "1,5"})  # Lab 3: every weight "1,000" gave 1
    assert weights.value == {"fp16": 0.5, "fp8": 1.5}
    shown = style.input_messages(weights).text
    assert "fp16" in shown and "Type 1000 or 1" in shown and "fp8" not in shown


@pytest.mark.parametrize("typed, says", [
    ("5,500", "thousands separator (5500) or a decimal comma (5.5)"),
    ("1.234,5", "mixes a comma and a point"),
    ("1,23,456", "groups of three"),
    ("5,", "ends in a comma"),
])
def test_an_ambiguous_comma_is_refused_with_a_message(typed, says):
    value, message = check_number(typed, lo=0.1, hi=1e4)
    assert value is None and says in message


@pytest.mark.parametrize("typed, units", [
    ("1e-400", "%"), ("0." + "0" * 100_000 + "1", "%"), ("-1e-400", ""), ("1,5e-400", ""),
    ("1e-320 ns", "s"),  # converted to seconds, it is below the smallest float
])
def test_a_number_too_small_to_represent_is_refused_not_read_as_0(typed, units):
    """I-3: "1e-400" underflowed to 0 and was accepted as 0 (Lab 7's % box starts at 0)."""
    value, message = check_number(typed, lo=-1, hi=100, units=units)
    assert value is None and "too small to represent" in message and "enter a number" in message


@pytest.mark.parametrize("typed", ["0", "-0", "0e-400", "0.000", "0,0", "5e-324"])
def test_zero_and_the_smallest_floats_are_still_read(typed):
    assert check_number(typed, lo=-1, hi=100) == (float(typed.replace(",", ".")), None)


#: What an independent review found read exactly or refused with a message (its "checked and
#: sound" list): kept so by the fixes to what it found misread. (typed, units, lo, hi, integer,
#: stored or None for refused).
SOUND = [
    ("nan", "", 0, 100, False, None), ("inf", "", 0, 100, False, None),
    ("1e309", "", 0, 100, False, None), ("9" * 400, "", 0, 100, False, None),
    ("9" * 10**6, "", 0, 100, False, None), ("0x10", "", 0, 100, False, None),
    ("7e", "", 0, 100, False, None), ("--7", "", 0, 100, False, None),
    ("½", "", 0, 100, False, None), ("1 000", "", 0, 1e4, False, None),
    ("7\u00a0000", "", 0, 1e4, False, None), ("1.000,5", "", 0, 1e4, False, None),
    ("5,", "", 0, 100, False, None), ("1,23,456", "", 0, 1e6, False, None),
    ("7 TB/s", "ms", 0, 100, False, None), ("7 GB", "×", 0, 100, False, None),
    ("3 ms", "", 0, 100, False, None), ("60%", "", 0, 100, False, None),
    ("0.7", "%", 0, 100, False, None), ("1", "%", 0, 100, False, None),
    ("  7 ", "", 0, 100, False, 7), ("+7", "", 0, 100, False, 7), ("-0", "", -1, 100, False, 0),
    ("5.", "", 0, 100, False, 5), ("1.e3", "", 0, 1e4, False, 1000),
    ("1_000", "", 0, 1e4, False, 1000), ("٣", "", 0, 100, False, 3), ("１２", "", 0, 100, False, 12),
    ("2400 µs", "ms", 0.001, 1e4, False, 2.4), ("29.3 ms", "µs", 0.5, 1e5, False, 29300),
    ("12.5", "sequences", 1, 512, True, None), ("1,5", "sequences", 1, 512, True, None),
]


@pytest.mark.parametrize("typed, units, lo, hi, integer, stored", SOUND,
                         ids=[repr(row[0][:12]) for row in SOUND])
def test_what_was_sound_stays_sound(typed, units, lo, hi, integer, stored):
    value, message = check_number(typed, lo=lo, hi=hi, integer=integer, units=units)
    if stored is None:
        assert value is None and ("enter" in message or "type" in message.lower())
    else:
        assert (value, message) == (stored, None)


@pytest.mark.parametrize("typed", ["1," * 200_000 + "1", "1" + ",000" * 150_000,
                                   "7" * 100_000, "0." + "0" * 100_000 + "1"])
def test_long_entries_are_answered_at_once(typed):
    import time

    start = time.perf_counter()
    check_number(typed, lo=0, hi=100)
    assert time.perf_counter() - start < 0.5  # no regex blow-up (the review measured < 30 ms)


# --- the units of the question ----------------------------------------------------


@pytest.mark.parametrize("typed, units, lo, hi, integer, stored", [
    ("2x", "×", 0.1, 100, False, 2), ("2 ×", "×", 0.1, 100, False, 2),
    ("2.5X", "×", 0.1, 100, False, 2.5),
    ("3.9 ms", "ms", 0.001, 1e4, False, 3.9), ("1.1 ms", "ms", 0.001, 1e4, False, 1.1),
    ("3900 µs", "ms", 0.001, 1e4, False, 3.9), ("0.5 s", "ms", 0.001, 1e4, False, 500),
    ("70%", "%", 0, 100, False, 70), ("0.7 %", "%", 0, 100, False, 0.7),
    ("4k tokens", "tokens", 1, 1e8, True, 4000), ("4k", "tokens", 1, 1e8, True, 4000),
    ("64 sequences", "sequences", 1, 1000, True, 64),
])
def test_the_units_of_the_question_are_accepted_and_converted(typed, units, lo, hi, integer,
                                                              stored):
    assert check_number(typed, lo=lo, hi=hi, integer=integer, units=units) == (stored, None)


@pytest.mark.parametrize("typed, units, says", [
    ("4 GB", "ms", "this box is in ms"), ("2x", "ms", "this box is in ms"),
    ("70%", "×", "this box is in ×"), ("3 ms", "", "plain number, without a unit"),
    ("60%", "", "write 60% as 0.6"),
])
def test_another_unit_is_refused_naming_the_expected_one(typed, units, says):
    value, message = check_number(typed, lo=0.001, hi=1e4, units=units)
    assert value is None and says in message


@pytest.mark.parametrize("typed, units, lo, hi, says", [
    ("3 GB", "×", 0.1, 100, "this box is in ×: enter a plain number from 0.1 to 100 ×."),
    ("3 GB", "%", 0, 100, "this box is in %: enter a plain number from 0 to 100 %."),
    ("3 GB", "sequences", 1, 512, "enter a number of sequences from 1 to 512 sequences."),
])
def test_a_unit_symbol_is_not_counted_in_the_message(typed, units, lo, hi, says):
    """A box in × said "enter a number of × from 0.1 to 100 ×": a symbol is not counted."""
    value, message = check_number(typed, lo=lo, hi=hi, units=units)
    assert value is None and message.endswith(says), message


@pytest.mark.parametrize("typed, units", [
    ("7M", "ms"), ("7m", "ms"), ("7 m", "ms"), ("7 M", "ms"),  # were 7 ms ("ms" minus its "s")
    ("7 MS", "ms"), ("7 Ms", "ms"),                            # MS was ms, Ms is mega-seconds
    ("7M", "µs"), ("7m", "µs"), ("7 m", "s"),                  # 7m was 7,000,000 µs
])
def test_a_bare_m_in_a_box_of_time_is_refused(typed, units):
    """I-2: a plural-stripping alias made "m" (and so "7M", the course's million) read as ms."""
    value, message = check_number(typed, lo=0.001, hi=1e8, units=units)
    assert value is None and "did you mean ms?" in message and f"number of {units}" in message


@pytest.mark.parametrize("typed, units, stored", [
    ("7 ms", "ms", 7), ("7000 µs", "ms", 7), ("7 us", "µs", 7), ("7k ms", "ms", 7000),
    ("7M", "elements", 7_000_000), ("7 M", "tokens", 7_000_000),  # M is a million elsewhere
    ("4 GPU", "GPUs", 4), ("4 gpus", "GPUs", 4), ("4 token", "tokens", 4),  # word units
])
def test_unit_symbols_are_read_as_written_and_word_units_in_the_singular(typed, units, stored):
    assert check_number(typed, lo=0.001, hi=1e8, units=units) == (stored, None)


def test_a_prediction_in_ms_refuses_7M(env):
    """Lab 6's all-reduce prediction is in ms: "7M" locked 7 ms (after "You are locking")."""
    form, handler, _ = _handler(env, units="ms", lo=0.001, hi=1e4)
    assert "did you mean ms?" in handler.validate(_raw("7M"))
    assert handler.validate(_raw("7")) is None


@pytest.mark.parametrize("typed", ["0.7", "1", "0,7"])
def test_a_percent_box_says_its_scale_instead_of_taking_a_fraction(typed):
    value, message = check_number(typed, lo=0, hi=100, units="%")
    assert value is None and "this box is in percent" in message and "type 70" in message \
        if typed != "1" else "type 100" in message


# --- the value is shown before a lock that could surprise ------------------


def _handler(env, **kwargs):
    from labs.core.course.quiz.session import LabSession

    lab = LabSession("lab99", __file__)
    locked: list = []
    form = quiz.numeric_form(lab, "lab99.x", question="q", locked=None, on_lock=locked.append,
                             **kwargs)
    return form, form.handler, locked


def _raw(answer):
    return {"answer": answer, "confidence": "3", "reason": "r"}


def test_a_reread_number_is_shown_as_stored_before_it_locks(env):
    form, handler, _ = _handler(env, units="×", lo=0.1, hi=100)
    assert handler.validate(_raw("5.5")) is None  # typed as stored: nothing to say
    first = handler.validate(_raw("5,5"))
    assert first is not None and "You are locking 5.5 ×" in first and "again" in first
    assert handler.validate(_raw("5,5")) is None  # the second press locks
    assert "You are locking 2 ×" in handler.validate(_raw("2x"))
    assert "You are locking 0.5 ×" in handler.validate(_raw("0,5"))  # another value: asks again


def test_a_prediction_form_says_how_it_read_a_comma(env):
    form, handler, _ = _handler(env, units="×", lo=0.1, hi=100)
    first = handler.validate(_raw("5,500"))
    assert "You are locking 5.5 ×" in first and "decimal comma, not 5500" in first
    assert handler.validate(_raw("5,500")) is None  # read, shown, pressed again: locks
    form, handler, _ = _handler(env, units="sequences", lo=128, hi=1e7, integer=True)
    assert "thousands separator, not 5.5" in handler.validate(_raw("5,500"))


def test_an_untouched_slider_needs_a_second_press(env):
    form, handler, _ = _handler(env, units="×", lo=0.05, hi=20, log_scale=True)
    start = handler.steps.index(handler.start)
    first = handler.validate(_raw(start))
    assert first is not None and "still where it started" in first
    assert handler.validate(_raw(start)) is None
    moved = start + 1
    assert handler.validate(_raw(moved)) is None  # a value the student chose: no question


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
    from labs.core.course.quiz.lock import LockHandler
    from labs.core.course.quiz.session import LabSession

    lab = LabSession("lab99", __file__)
    locked = []
    form = quiz.numeric_form(lab, "lab99.batch", question="q", units="sequences", lo=1,
                             hi=1000, integer=True, locked=None, on_lock=locked.append)
    handler = form.handler
    assert isinstance(handler, LockHandler)
    raw = {"answer": "12.5", "confidence": "3", "reason": "r"}
    assert "not a whole number of sequences" in handler.validate(raw)
    quiz.simulate_submit(form, answer=12.5, confidence=3, reason="why")
    assert locked == [] and lab.events("lab99.batch", "predict") == []
    quiz.simulate_submit(form, answer=52, confidence=3, reason="why")
    assert [p.value for p in locked] == [52]
    free = quiz.numeric_form(lab, "lab99.ratio", question="q", units="×", lo=0.1, hi=10,
                             locked=None, on_lock=locked.append)
    assert free.handler.validate(
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
    from labs.core.course.quiz import lock as quiz_lock

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


# --- a fraction, and examples the box takes ------------------------------------------------


@pytest.mark.parametrize("typed, units, stored", [
    ("19/7", "×", 19 / 7), ("19 / 7", "×", 19 / 7), ("19/7x", "×", 19 / 7),
    ("19/7 ×", "×", 19 / 7), ("3/4", "", 0.75), ("1/2 ms", "µs", 500),
])
def test_a_fraction_is_read_as_its_value(typed, units, stored):
    """A ratio a student worked out (Lab 4's 19/7) is read, not refused: rounding it by hand
    first could cost the grade of a band as narrow as 1.05x."""
    value, message = check_number(typed, lo=0.1, hi=1e4, units=units)
    assert message is None and value == pytest.approx(stored, rel=1e-12)


@pytest.mark.parametrize("typed, says", [("1/0", "divides by zero"), ("1/2/3", "this box"),
                                         ("1,5/2", "this box")])
def test_a_fraction_that_is_no_number_is_refused(typed, says):
    value, message = check_number(typed, lo=0, hi=100)
    assert value is None and says in message


@pytest.mark.parametrize("lo, hi", [(0.1, 100), (10, 1e4), (128, 1e7), (1, 512), (0.5, 100),
                                    (-1, 100), (0.001, 0.002)])
def test_a_refusal_gives_examples_the_box_takes(lo, hi):
    """A box from 0.1 to 100 said "(e.g. 300, 3e5 or 300k)": examples it refuses."""
    _, message = check_number("abc", lo=lo, hi=hi)
    shown = message.split("(e.g. ")[1].rstrip(").")
    for example in shown.replace(" or ", ", ").split(", "):
        assert check_number(example, lo=lo, hi=hi)[1] is None, (example, message)
