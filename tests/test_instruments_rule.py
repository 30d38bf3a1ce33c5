"""The one gating rule (quiz.Instruments, LABS_SPEC §3): an instrument is open only when every
prediction whose quantities it shows is locked, in any order."""

from __future__ import annotations

import itertools

import pytest

from labs.core import quiz
from labs.core.course.quiz.instruments import meets

RULE = quiz.Instruments(
    answers={"lab09.roof": ["regime:gemm"], "lab09.n_star": ["count:crossover", "regime:gemm"],
             "lab09.comm": ["time:allreduce"], "lab09.exposed": ["time:exposed"],
             "lab09.free": []},
    instruments={"explorer": ["intensity", "regime"], "collective": ["time:allreduce"],
                 "training": ["time"], "shapes": ["count:tile"]})


def test_quantities_meet_when_equal_or_one_is_bare():
    assert meets("time", "time:allreduce") and meets("time:allreduce", "time")
    assert meets("time:allreduce", "time:allreduce")
    assert not meets("time:allreduce", "time:exposed")
    assert not meets("time", "bytes") and not meets("regime:gemm", "count:gemm")


def test_an_instrument_waits_for_every_prediction_it_answers_in_the_labs_order():
    assert RULE.answered_by("explorer") == ["lab09.roof", "lab09.n_star"]
    assert RULE.answered_by("collective") == ["lab09.comm"]
    assert RULE.answered_by("training") == ["lab09.comm", "lab09.exposed"]
    assert RULE.answered_by("shapes") == []


@pytest.mark.parametrize("order", list(itertools.permutations(
    ["lab09.roof", "lab09.n_star", "lab09.comm", "lab09.exposed"])))
def test_locking_order_does_not_matter(order):
    locked: set[str] = set()
    for item in order:
        for name in RULE.instruments:
            needed = set(RULE.answered_by(name))
            assert RULE.is_open(name, locked) == needed.issubset(locked)
        locked.add(item)
    assert all(RULE.is_open(name, locked) for name in RULE.instruments)


def test_the_notice_names_the_predictions_to_lock_and_nothing_else():
    text = RULE.notice_text("training", set())
    assert text.startswith("Lock Predictions 3 and 4 first")
    assert "allreduce" not in text and "time" not in text
    assert RULE.notice_text("training", {"lab09.comm"}).startswith("Lock Prediction 4 first")
    assert RULE.notice_text("training", {"lab09.comm", "lab09.exposed"}) is None
    assert RULE.gate("shapes") is None
    comm, exposed = (quiz.Prediction(i, 1.0) for i in ("lab09.comm", "lab09.exposed"))
    assert RULE.gate("training", comm, exposed) is None
    assert RULE.gate("training", comm, None) is not None  # Prediction 4 still open
    assert RULE.gate("training", comm) is not None  # a prediction not passed counts as open


def test_locked_items_reads_the_prediction_variables():
    p = quiz.Prediction("lab09.roof", "memory")
    assert quiz.locked_items(p, None, None) == {"lab09.roof"}
    assert quiz.locked_items(None) == frozenset()


@pytest.mark.parametrize("answers, instruments", [
    ({"lab09.x": ["speed"]}, {}),  # no such dimension
    ({"lab09.x": "time"}, {}),  # a bare string, not a list
    ({"lab09.x": ["time"]}, {"v": [""]}),
    ({}, {}),
])
def test_a_declaration_that_means_nothing_is_refused(answers, instruments):
    with pytest.raises(ValueError):
        quiz.Instruments(answers, instruments)


def test_an_undeclared_instrument_is_an_error_naming_it():
    with pytest.raises(KeyError, match="nowhere"):
        RULE.gate("nowhere", set())
