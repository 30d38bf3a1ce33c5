"""Reveal mode fills predictions with reference answers only when asked."""

import pytest

from labs.core import reveal


def test_not_revealed_by_default(monkeypatch):
    monkeypatch.delenv("ROOFLINE_REVEAL", raising=False)
    assert reveal.reference(None, "lab01.x", 3.0) is None


@pytest.mark.parametrize("value", ["0", "false", "False", "no", "off", "", "  ", "2", "on?"])
def test_a_false_or_unknown_reveal_value_keeps_the_answers_hidden(monkeypatch, value):
    """Only 1, true or yes reveal: ROOFLINE_REVEAL=0 or false is a student's copy."""
    monkeypatch.setenv("ROOFLINE_REVEAL", value)
    assert not reveal.is_revealed()
    assert reveal.reference(None, "lab01.x", 3.0) is None


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "Yes", " yes ", " 1\n"])
def test_reveal_reads_true_values_in_any_case_and_spacing(monkeypatch, value):
    monkeypatch.setenv("ROOFLINE_REVEAL", value)
    assert reveal.is_revealed()


def test_env_var_reveals_numeric_and_choice(monkeypatch):
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    p = reveal.reference(None, "lab01.crossover_n", 886.0, units="")
    assert p.value == 886.0 and p.answer_type == "numeric" and "reference" in p.reason
    c = reveal.reference(None, "lab01.which_roof", "memory", label="The memory roof")
    assert c.answer_type == "choice" and c.display() == "The memory roof"


def test_item_must_belong_to_the_lab(monkeypatch):
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")

    class Lab:
        lab_id = "lab01"

    assert reveal.reference(Lab(), "lab01.x", 1).value == 1
    with pytest.raises(ValueError, match="does not belong"):
        reveal.reference(Lab(), "lab02.x", 1)


# --- the instructor copy shows the reference answer, never a widget value -----

import re  # noqa: E402
from pathlib import Path  # noqa: E402

from notebook_support import load_app  # noqa: E402

from labs.core import catalogue, quiz  # noqa: E402

LABS = sorted((Path(__file__).parents[1] / "labs").glob("lab_*.py"))
CARD = "Reference answer (instructor copy):"


def _text(obj) -> str:
    return obj.text if hasattr(obj, "text") else str(obj)


def test_a_reference_carries_its_explanation_and_shows_as_a_card(monkeypatch):
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    p = reveal.reference(None, "lab01.crossover_n", 886, explanation="N* = 1.5 b ridge <b>")
    assert p.reference and p.reason == "N* = 1.5 b ridge <b>" and p.payload()["value"] == 886
    card = _text(reveal.card(p))
    assert CARD in card and "886" in card and "N* = 1.5 b ridge" in card and "<b>" not in card
    # a student's own prediction, or none, shows no card
    assert reveal.card(quiz.Prediction("lab01.crossover_n", 1000)) is None
    assert reveal.card(None) is None
    with pytest.raises(ValueError, match="explanation"):
        reveal.reference(None, "lab01.x", 1, explanation=3)


def test_instructor_copy_form_and_comparison_name_the_reference(monkeypatch, env):
    lab = quiz.LabSession("lab01", None)
    form = quiz.numeric_form(lab, "lab01.crossover_n", question="Above which N?", units="",
                             lo=10, hi=100_000, log_scale=True, locked=None,
                             on_lock=lambda p: None)
    assert quiz.prediction_panel(form, None) is form.form  # a student copy: the form
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    panel = _text(quiz.prediction_panel(form, None))
    assert "Above which N?" in panel and "Instructor copy" in panel
    assert "marimo-slider" not in panel and "Lock prediction" not in panel  # no stray value
    ref = reveal.reference(lab, "lab01.crossover_n", 886)
    text = _text(quiz.compare(ref, 886.1))
    assert "Reference answer" in text and "You predicted" not in text
    own = quiz.Prediction("lab01.crossover_n", 1000)
    assert "You predicted" in _text(quiz.compare(own, 886.1))


@pytest.mark.slow
@pytest.mark.parametrize("lab_file", LABS, ids=lambda p: p.stem)
def test_every_prediction_of_the_instructor_copy_has_a_reference_card(lab_file, env,
                                                                     monkeypatch):
    items = [i.item_id for i in catalogue.read_lab(lab_file).items]
    assert items
    app = load_app(lab_file, f"reveal_{lab_file.stem}")
    outputs, _ = app.run()
    student = "\n".join(_text(o) for o in outputs if o is not None)
    assert CARD not in student and "Instructor copy" not in student
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    outputs, defs = app.run()
    teacher = "\n".join(_text(o) for o in outputs if o is not None)
    assert teacher.count(CARD) == len(items)
    assert "Lock prediction" not in teacher and "You predicted" not in teacher
    assert reveal.REFERENCE_REASON not in teacher  # every card has its own explanation
    for item in items:  # each explanation says something, with a number in it
        name = item.split(".", 1)[1]
        pred = defs.get(f"{name}_prediction") or next(
            (v for k, v in defs.items() if k.endswith("_prediction")
             and getattr(v, "item_id", None) == item), None)
        assert pred is not None and pred.reference, item
        assert len(pred.reason) > 60 and re.search(r"\d", pred.reason), (item, pred.reason)
        # the explanation never appears in the student copy
        assert pred.reason[:40] not in student


# --- ROOFLINE_REVEAL: only a true value reveals; any other value means no answers -----------

FALSE_VALUES = ("0", "false", "FALSE", "False", "no", "NO", "off", "Off", "", "  ", " 0 ",
                "\tfalse\n", " No", "nonsense")
TRUE_VALUES = ("1", "true", "TRUE", " yes ", "On", "\t1\n")


@pytest.fixture()
def reveal_flag(monkeypatch):
    """The notebook was started with ``-- --reveal`` (what marimo's cli_args would say)."""
    import marimo

    monkeypatch.setattr(marimo, "cli_args", lambda: {"reveal": ""})


@pytest.mark.parametrize("value", FALSE_VALUES)
def test_a_false_value_means_no_answers_even_with_the_reveal_flag(value, monkeypatch,
                                                                  reveal_flag):
    monkeypatch.setenv("ROOFLINE_REVEAL", value)
    assert reveal.env_reveal(value) is False
    assert reveal.is_revealed() is False
    assert reveal.reference(None, "lab01.crossover_n", 886.0) is None


@pytest.mark.parametrize("value", TRUE_VALUES)
def test_a_true_value_reveals(value, monkeypatch):
    monkeypatch.setenv("ROOFLINE_REVEAL", value)
    assert reveal.is_revealed() is True


def test_unset_leaves_it_to_the_reveal_flag(monkeypatch, reveal_flag):
    monkeypatch.delenv("ROOFLINE_REVEAL", raising=False)
    assert reveal.env_reveal(None) is None
    assert reveal.is_revealed() is True


@pytest.mark.parametrize("value", ["0", " FALSE ", ""])
def test_a_lab_run_with_a_false_value_shows_no_reference_card(value, env, monkeypatch):
    lab_file = LABS[0]
    app = load_app(lab_file, f"false_reveal_{lab_file.stem}")
    monkeypatch.setenv("ROOFLINE_REVEAL", value)
    outputs, defs = app.run()
    text = "\n".join(_text(o) for o in outputs if o is not None)
    assert CARD not in text and "Instructor copy" not in text
    assert not any(isinstance(v, quiz.Prediction) and v.reference for v in defs.values())


@pytest.mark.slow
def test_a_student_export_has_no_reference_answer_when_the_variable_is_false(
        env, monkeypatch, tmp_path):
    """labs-export without --reveal, in a shell where ROOFLINE_REVEAL is a false value: the
    page holds no reference card and no reference explanation (found as the instructor copy
    shows them)."""
    from labs.core import export

    lab_file = LABS[0]
    app = load_app(lab_file, f"export_reveal_{lab_file.stem}")
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    _, defs = app.run()
    references = [v for v in defs.values() if isinstance(v, quiz.Prediction) and v.reference]
    assert references
    monkeypatch.setenv("ROOFLINE_REVEAL", "false")
    site = tmp_path / "site"
    rc = export.main(["-o", str(site), "--labs-dir", str(lab_file.parent), "--lab",
                      lab_file.stem])
    assert rc == 0
    page = (site / f"{lab_file.stem}.html").read_text(encoding="utf-8")
    assert CARD not in page and "Instructor copy" not in page
    for ref in references:  # each explanation's opening words, as plain words
        words = " ".join(re.findall(r"[A-Za-z]{3,}", ref.reason)[:6])
        assert words and words not in " ".join(re.findall(r"[A-Za-z]{3,}", page)), ref.item_id
