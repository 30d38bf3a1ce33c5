"""A log-scale prediction slider opens at its range's geometric middle; that opening value must
not already be graded correct, or a student who locks the untouched slider (the deliberate
second press) scores without predicting. Every lab, every log-scale form, against the reference
answer its instructor copy reveals."""

from __future__ import annotations

from pathlib import Path

import pytest

from labs.core import quiz
from labs.core.course.quiz.prediction import GRADE_TOLERANCE, ratio_off
from leak_support import lab_files
from notebook_support import load_app

ROOT = Path(__file__).resolve().parents[1]
LABS = lab_files(ROOT)


@pytest.mark.parametrize("lab_file", LABS, ids=[p.stem for p in LABS])
def test_no_log_slider_opens_on_an_answer_graded_correct(lab_file, env, monkeypatch):
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    _, defs = load_app(lab_file, f"_{lab_file.stem}_forms").run()
    values = [defs[name] for name in defs]
    starts = {v.item_id: v.handler.start
              for v in values if isinstance(v, quiz.PredictionForm)
              and getattr(v.handler, "start", None) is not None}
    references = {v.item_id: v.value for v in values
                  if isinstance(v, quiz.Prediction) and v.reference}
    for item, start in starts.items():
        assert item in references, f"{item}: no reference answer to compare the slider with"
        off = ratio_off(start, references[item])
        assert off is None or off > GRADE_TOLERANCE, (
            f"{lab_file.name}: {item}'s slider opens at {start}, graded correct against the "
            f"reference {references[item]} ({off:.2f}x off, tolerance {GRADE_TOLERANCE}x)")
