"""The instructor copy's reference answer is the number its comparison shows (Labs 1 to 7).

A student who reads a reference after the lab and compares it with their comparison must see
the same number: each reference and its comparison come from one function (a lab's
``@app.function`` or a core function), and this test holds them equal on the instructor copy,
where every prediction is its reference answer. The comparison is read as it shows its number
(its ``fmt``); a choice must name the same option. A prediction graded against the student's
own measurement has a model's reference and no comparison until something is measured: it is
named below and must show none here."""

from __future__ import annotations

from pathlib import Path

import pytest

from labs.core import quiz
from labs.core.physics.units import format_value
from leak_support import collect_references

ROOT = Path(__file__).resolve().parents[1]
#: lab -> the items graded only against the student's own measurement (no comparison here)
LABS = {
    "lab_01_memory_wall": set(),
    "lab_02_design_challenge": set(),
    "lab_03_precision_rho": set(),
    "lab_04_fusion": set(),
    "lab_05_memory_hierarchy": set(),
    "lab_06_many_chips": set(),
    "lab_07_your_model": {"lab07.bf16_ratio", "lab07.best_predicted"},
}


@pytest.mark.parametrize("lab", sorted(LABS))
def test_the_reference_is_the_number_its_comparison_shows(lab, tmp_path, monkeypatch):
    shown: dict[str, list] = {}
    compare = quiz.compare

    def recording(prediction, actual, **kwargs):
        if prediction is not None:
            shown.setdefault(prediction.item_id, []).append((actual, kwargs.get("fmt")))
        return compare(prediction, actual, **kwargs)
    monkeypatch.setattr(quiz, "compare", recording)
    references = collect_references(ROOT / "labs" / f"{lab}.py", tmp_path)
    assert references, lab
    for ref in references:
        if ref.item_id in LABS[lab]:
            assert ref.item_id not in shown, f"{ref.item_id}: compared before a measurement"
            continue
        assert ref.item_id in shown, f"{ref.item_id}: no comparison on the instructor copy"
        for actual, fmt in shown[ref.item_id]:
            if ref.label is not None:  # a choice: the same option
                assert actual == ref.value, ref.item_id
            else:
                assert format_value(ref.value, fmt) == format_value(actual, fmt), (
                    ref.item_id, ref.value, actual, fmt)
