"""Reveal mode fills predictions with reference answers only when asked."""

import pytest

from labs.core import reveal


def test_not_revealed_by_default(monkeypatch):
    monkeypatch.delenv("ROOFLINE_REVEAL", raising=False)
    assert reveal.reference(None, "lab01.x", 3.0) is None


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
