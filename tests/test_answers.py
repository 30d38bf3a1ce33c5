"""The answer rules every part shares (labs.core.course.answers): which prediction counts, what
is reasoned, and the exact boundary of a tolerance, for every tolerance a course may set."""

from __future__ import annotations

import subprocess
import sys
from decimal import Decimal

import pytest

from labs.core import catalogue, quiz
from labs.core.course import answers
from labs.core.physics import misconceptions

#: tolerances a course file may set (any factor >= 1), and every item's own
COURSE_TOLERANCES = (1.0, 1.01, 1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.33, 1.4, 1.5, 1.6, 1.75, 2.0,
                     2.5, 3.0, 4.0, 5.0, 10.0, 100.0)
ITEM_TOLERANCES = tuple(sorted({misconceptions.tolerance(i.item_id)
                                for e in catalogue.catalogue() for i in e.items
                                if i.kind == "numeric"}))
#: measured values as a ledger records them (decimals a student or an instrument writes)
ACTUALS = ("0.7", "0.3", "1", "3", "886", "0.001234", "7e-05", "36380", "2.71", "1924.5")


def _float(d: Decimal) -> float:
    return float(f"{d:.15g}")


def test_the_issue_case_is_exactly_at_the_boundary_and_inside():
    # 1.05 / 0.7 is 1.5000000000000002 in binary floats; as the decimals typed it is 3/2
    assert 1.05 / 0.7 > 1.5
    assert answers.within_factor(1.05, 0.7, 1.5)
    assert answers.within_factor(0.7, 1.05, 1.5)
    assert not answers.within_factor(1.0500001, 0.7, 1.5)
    assert answers.ratio_verdict(1.05, 0.7, tolerance=1.5).endswith(
        "within the 1.5× graded as correct")
    assert answers.verdict_kind(1.05, 0.7, tolerance=1.5) == "warn"


@pytest.mark.parametrize("tolerance", sorted(set(COURSE_TOLERANCES + ITEM_TOLERANCES)))
def test_the_boundary_is_inside_for_every_tolerance(tolerance):
    t = Decimal(repr(tolerance))
    for text in ACTUALS:
        a = Decimal(text)
        at = _float(a * t)  # exactly t times off, high and low
        assert answers.within_factor(at, float(a), tolerance), (at, text, tolerance)
        assert answers.within_factor(float(a), at, tolerance), (text, at, tolerance)
        beyond = _float(a * t * Decimal("1.000001"))
        inside = _float(a * t * Decimal("0.999999"))
        assert not answers.within_factor(beyond, float(a), tolerance), (beyond, text)
        assert not answers.within_factor(float(a), beyond, tolerance), (text, beyond)
        assert answers.within_factor(inside, float(a), tolerance) == (tolerance > 1.0 or
                                                                      inside == float(a))
        # the lab's words follow the same rule
        words = answers.ratio_verdict(at, float(a), tolerance=tolerance)
        assert words == "right (within 0.5 %)" or "graded as correct" in words, words
        assert "graded as correct" not in answers.ratio_verdict(beyond, float(a),
                                                                tolerance=tolerance)


def test_no_ratio_is_never_within():
    for a, b in ((0, 1), (1, 0), (-1, 1), (float("nan"), 1), (True, 1), ("1", 1), (None, 1),
                 (10**400, 1)):
        assert not answers.within_factor(a, b, 1.5)


def test_quiz_keeps_the_names_the_labs_use():
    for name in ("Prediction", "ratio_off", "within_factor", "ratio_verdict", "verdict_kind",
                 "GRADE_TOLERANCE", "first_prediction", "is_reasoned"):
        assert getattr(quiz, name) is getattr(answers, name), name
    from labs.core.course.quiz import prediction
    assert prediction.SPOT_ON_RATIO is answers.SPOT_ON_RATIO
    assert answers.GRADE_TOLERANCE == misconceptions.DEFAULT_TOLERANCE


# --- the first prediction counts: the first predict that holds a value ----------------------

def _ev(kind, value=..., item="lab01.x"):
    payload = {} if value is ... else {"value": value, "confidence": 3, "reason": "r"}
    return {"kind": kind, "item_id": item, "payload": payload}


def test_first_prediction_is_the_first_predict_holding_a_value():
    empty, none, real, later = _ev("predict"), _ev("predict", None), _ev("predict", 5), \
        _ev("predict", 7)
    events = [_ev("unlock"), empty, none, _ev("revise", 9), real, later]
    assert answers.first_prediction(events) is real
    assert answers.first_prediction(events, "lab01.y") is None
    assert answers.first_prediction([empty, none]) is None
    assert answers.Prediction.from_event(real).value == 5
    assert answers.Prediction.from_event(none) is None


def test_every_caller_uses_the_one_rule(tmp_path):
    """The lab's lock, the ledger's commit, the grader (score, load's contradiction check),
    the feedback page and the dashboard all skip a predict that holds no value."""
    from labs.core import grading
    from labs.core import ledger
    from labs.core.course.classroom import data as classroom_data
    from labs.core.course.grading import feedback, load, score
    from labs.core.course.ledger import store
    from labs.core.course.quiz import session

    for module in (classroom_data, feedback, score, session):
        assert module.first_prediction is answers.first_prediction, module.__name__
    assert load.holds_value is answers.holds_value and store.first_prediction is \
        answers.first_prediction
    led = ledger.Ledger("ada", tmp_path / "ada")
    ts = iter(f"2025-03-01T12:0{n}:00.000000Z" for n in range(10))
    for kind, payload in (("predict", {"answer_type": "numeric", "confidence": 3}),
                          ("predict", {"value": 400, "answer_type": "numeric",
                                       "confidence": 3, "reason": "the ridge"}),
                          ("unlock", {}), ("result", {"actual": 886}),
                          ("observe", {"text": "under the slope"}),
                          ("explain", {"text": "intensity below the ridge point"})):
        led.append(kind, lab_id="lab01", item_id="lab01.crossover_n", payload=payload,
                   ts=next(ts), lab_version="v1", session="s")
    assert ledger.first_predictions(led.events())["lab01.crossover_n"]["payload"]["value"] == 400
    book = grading.grade(grading.load_ledgers([tmp_path / "ada"]))
    ig = next(i for i in book.grades[("ada", "lab01")].items
              if i.item_id == "lab01.crossover_n")
    assert ig.committed and ig.reasoned and ig.explained  # the valueless predict is no commit
    assert not any("second_predict" in f for f in book.grades[("ada", "lab01")].flags)


# --- reasoned -----------------------------------------------------------------------------------

@pytest.mark.parametrize("payload, reasoned", [
    ({"confidence": 3, "reason": "the ridge"}, True),
    ({"confidence": 1, "reason": "x"}, True), ({"confidence": 5, "reason": "x"}, True),
    ({"confidence": 0, "reason": "x"}, False), ({"confidence": 6, "reason": "x"}, False),
    ({"confidence": True, "reason": "x"}, False), ({"confidence": 3.0, "reason": "x"}, False),
    ({"confidence": 3, "reason": "  \n\t"}, False), ({"confidence": 3, "reason": 5}, False),
    ({"confidence": 3}, False), ({"reason": "x"}, False), (None, False)])
def test_is_reasoned(payload, reasoned):
    assert answers.is_reasoned(payload) is reasoned


# --- the grader runs without marimo ----------------------------------------------------------

REFUSE_MARIMO = """
import sys
class Refuse:
    def find_spec(self, name, path=None, target=None):
        if name == "marimo" or name.startswith("marimo."):
            raise ImportError("marimo is not installed here")
sys.meta_path.insert(0, Refuse())
import labs.core.course.grading as G
from labs.core.course import answers
assert not [m for m in sys.modules if m.startswith("marimo")]
sys.exit(G.main(sys.argv[1:]))
"""


def test_grading_imports_and_runs_without_marimo(tmp_path):
    from grading_support import write_class

    folder = write_class(tmp_path / "in", tmp_path / "work")
    out = subprocess.run([sys.executable, "-c", REFUSE_MARIMO, str(folder), "-o",
                          str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert out.returncode in (0, 1), out.stderr
    assert (tmp_path / "out" / "gradebook.csv").exists()
    assert (tmp_path / "out" / "feedback" / "ada.html").exists()


# --- which reading grades: one rule for labs-grade and the lab's page --------------------------

def _event(kind, payload, order=0):
    return {"kind": kind, "payload": payload, "order": order}


def test_a_number_is_graded_against_the_first_finite_reading():
    first = _event("predict", {"value": 3.0})
    later = [_event("observe", {"text": "x"}), _event("result", {"actual": None}),
             _event("result", {"actual": "inf"}), _event("result", {"actual": float("nan")}),
             _event("result", {"actual": True}), _event("result", {"actual": 2.0}, order=6),
             _event("result", {"actual": 9.0})]
    assert answers.graded_result(first, later)["order"] == 6
    assert answers.graded_result(first, later[:5]) is None


def test_a_choice_is_graded_against_the_first_reading_that_states_it():
    first = _event("predict", {"value": "memory", "answer_type": "choice"})
    later = [_event("result", {"note": "no reading"}), _event("result", {"correct": "yes"}),
             _event("result", {"correct": False}, order=3), _event("result", {"actual": "x"})]
    assert answers.graded_result(first, later)["order"] == 3
    assert answers.graded_result(first, [_event("result", {"actual": None}, order=1)])[
        "order"] == 1  # an actual stated, even null, judges a choice (it is not the value)


@pytest.mark.parametrize("value, number", [(2, 2.0), (0.5, 0.5), (True, None), ("2", None),
                                           (float("inf"), None), (10 ** 400, None),
                                           (None, None)])
def test_finite_number_keeps_only_what_a_ratio_can_use(value, number):
    assert answers.finite_number(value) == number


def test_a_computed_reference_is_graded_to_three_significant_figures():
    """A reference and its comparison round through one function, to the digits shown."""
    reference_value = answers.reference_value
    assert answers.REFERENCE_FIGURES == 3 and quiz.reference_value is reference_value
    assert reference_value(156.38) == 156.0  # Lab 6's training all-reduce, by hand
    assert reference_value(0.0123456) == 0.0123
    assert reference_value(1234.5) == 1230.0
    assert reference_value(-2.71828) == -2.72
    assert reference_value(7) == 7.0 and isinstance(reference_value(7), float)
    for bad in (float("nan"), float("inf"), "156", None, True):
        with pytest.raises(ValueError, match="finite number"):
            reference_value(bad)
