"""Graded numbers discriminate (LABS_SPEC §2): every numeric prediction of every lab, read from
the labs themselves, has a band in ``labs.core.physics.misconceptions`` in which

- the lab's own reference answer (its instructor copy) is graded right;
- every named wrong model is graded wrong, by a margin (a student who rounds it stays wrong);
- every published measurement of the same case is graded right, or the question says it asks
  for the model's bound, or the item is graded against the student's own measurement;

and the lab's comparison and the grader use that band's tolerance. A new lab cannot pass
without its bands: the items come from the catalogue, not from a list here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labs.core import catalogue, quiz
from labs.core.physics import misconceptions
from leak_support import collect_references, lab_files

ROOT = Path(__file__).resolve().parents[1]
NUMERIC = [item for entry in catalogue.catalogue() for item in entry.items
           if item.kind == "numeric"]
#: How a question says it asks for the model's bound rather than what hardware measures.
ASKS_BOUND = re.compile(r"\bat (?:most|least)\b|\bthe roofline'?s?\b|\bideal\b|\bthe model'?s\b"
                        r"|\bupper bound\b|\blower bound\b|\bby the roofline\b", re.I)


def _ids(items):
    return [i.item_id for i in items]


@pytest.fixture(scope="module")
def lab_references(tmp_path_factory) -> dict:
    """{item id: the numeric reference the lab's instructor copy shows}."""
    out = {}
    for lab_file in lab_files(ROOT):
        for ref in collect_references(lab_file, tmp_path_factory.mktemp(lab_file.stem)):
            if ref.label is None:
                out[ref.item_id] = ref.value
    return out


def test_every_lab_has_numeric_items_to_check():
    assert len({i.lab_id for i in NUMERIC}) >= 7, _ids(NUMERIC)


@pytest.mark.parametrize("item", NUMERIC, ids=_ids(NUMERIC))
def test_each_named_wrong_model_is_graded_wrong(item):
    band = misconceptions.band(item.item_id)
    assert band.wrong_models, f"{item.item_id}: name the misconceptions this item catches"
    assert band.tolerance > 1
    assert quiz.within_factor(band.reference, band.reference, band.tolerance)
    for wrong in band.wrong_models:
        assert not quiz.within_factor(wrong.value, band.reference,
                                      band.tolerance * misconceptions.WRONG_MARGIN), (
            f"{item.item_id}: the wrong model {wrong.name!r} answers {wrong.value:g}, "
            f"{band.ratio(wrong.value):.3f}x off the reference {band.reference:g}: inside the "
            f"band of {band.tolerance:g}x (with the {misconceptions.WRONG_MARGIN:g} margin)")


@pytest.mark.parametrize("item", NUMERIC, ids=_ids(NUMERIC))
def test_a_student_reasoning_from_measurement_is_graded_right(item):
    band = misconceptions.band(item.item_id)
    for m in band.measured:
        assert quiz.within_factor(m.value, band.reference, band.tolerance), (
            f"{item.item_id}: the measurement {m.value:g} ({m.source}) is "
            f"{band.ratio(m.value):.3f}x off the reference, outside {band.tolerance:g}x")
    if band.asks_bound:
        assert ASKS_BOUND.search(item.text), (
            f"{item.item_id} asks for the model's bound: its question must say so "
            f"(\"at most\", \"the roofline's\", \"the ideal\"): {item.text!r}")
    assert band.measured or band.asks_bound or band.own_measurement, (
        f"{item.item_id}: give a published measurement of its case, or ask for the model's "
        "bound in the question, or grade it against the student's own measurement")


@pytest.mark.parametrize("item", NUMERIC, ids=_ids(NUMERIC))
def test_the_band_is_of_the_answer_the_lab_grades(item, lab_references):
    band = misconceptions.band(item.item_id)
    shown = lab_references.get(item.item_id)
    assert shown is not None, f"{item.item_id}: its instructor copy shows no reference"
    assert band.ratio(shown) < 1.005, (
        f"{item.item_id}: the lab's reference {shown:g} is not the band's {band.reference:g}")
    assert misconceptions.tolerance(item.item_id) == band.tolerance
    assert band.units == item.units, f"{item.item_id}: units {band.units!r} vs {item.units!r}"


def test_an_item_without_a_band_keeps_the_default_and_says_so():
    assert misconceptions.tolerance("lab99.unknown") == misconceptions.DEFAULT_TOLERANCE
    with pytest.raises(KeyError, match="lab99.unknown"):
        misconceptions.band("lab99.unknown")


def test_every_band_belongs_to_an_item_a_lab_asks():
    asked = {i.item_id for i in NUMERIC}
    assert set(misconceptions.item_ids()) <= asked, set(misconceptions.item_ids()) - asked
