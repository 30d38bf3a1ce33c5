"""measure.time_ratio: two callables timed in alternation, so a load that comes and goes lands on
both sides of each round (Lab 7's measured change: one profile a minute after the other gave
0.35 and 0.98 for the same change on a busy machine)."""

from __future__ import annotations

import time

import pytest

from labs.core import measure

pytestmark = pytest.mark.torch


@pytest.mark.alone  # it times wall-clock sleeps: other tests' load would stretch them
def test_the_ratio_of_two_known_sleeps_and_the_calls_alternate():
    calls: list[str] = []

    def old():
        calls.append("old")
        time.sleep(0.003)

    def new():
        calls.append("new")
        time.sleep(0.006)

    r = measure.time_ratio(old, new, device="cpu", budget_s=0.6, rounds=4)
    assert 1.6 < r.ratio < 2.5  # 6 ms over 3 ms, sleeps overshoot a little
    assert len(r.ratios) == 4 and r.spread >= 1.0
    assert r.old.reps >= 12 and r.new.reps >= 12  # every round's samples pooled
    # old and new take turns, round by round (not all of one, then all of the other)
    runs = [c for i, c in enumerate(calls) if i == 0 or c != calls[i - 1]]
    assert len(runs) >= 8


@pytest.mark.parametrize("rounds", [1, 0, 2.5, True, 101])
def test_a_round_count_that_means_nothing_is_refused(rounds):
    with pytest.raises(ValueError, match="rounds"):
        measure.time_ratio(lambda: None, lambda: None, device="cpu", rounds=rounds)
