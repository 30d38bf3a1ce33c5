"""The lab and the grader read a ledger the same way, under one size limit."""

from __future__ import annotations

import codecs

import pytest

from labs.core import grading
from labs.core import ledger
from labs.core.course.ledger import store as ledger_store
from grading_support import X, honest_session


def _resaved(tmp_path, encode) -> ledger.Ledger:
    led = ledger.Ledger("ada", tmp_path / "l")
    honest_session(led)
    led.path.write_bytes(encode(led.path.read_bytes()))
    return ledger.Ledger("ada", tmp_path / "l")


def test_a_ledger_resaved_with_a_utf8_bom_keeps_its_locks_and_stays_appendable(tmp_path):
    led = _resaved(tmp_path, lambda b: codecs.BOM_UTF8 + b)
    assert X in led.first_predictions() and led.mode == "file", led.warnings
    led.append("observe", lab_id="lab01", item_id=X, payload={"text": "again"})
    again = ledger.Ledger("ada", tmp_path / "l")
    assert again.mode == "file" and len(again.events()) == 11
    g = grading.grade(grading.load_ledgers([led.path])).grades[("ada", "lab01")]
    assert g.points == 5.0


def test_a_ledger_resaved_as_utf16_keeps_its_locks(tmp_path):
    led = _resaved(tmp_path, lambda b: b.decode("utf-8").encode("utf-16"))
    assert X in led.first_predictions()  # the lock is restored, as the grader reads it
    assert led.mode == "recovery"  # never appended to: it is not UTF-8 any more
    assert any("UTF-16" in w for w in led.warnings)
    g = grading.grade(grading.load_ledgers([led.path])).grades[("ada", "lab01")]
    assert g.points == 5.0


def test_one_size_limit_for_the_lab_and_the_grader():
    assert grading.Limits().max_file_bytes == ledger.MAX_READ_BYTES
    # the lab starts a new file before one could pass the limit with its longest event
    assert not ledger_store.room_left(ledger.MAX_READ_BYTES - ledger.MAX_LINE_BYTES + 1)


def test_the_lab_refuses_an_explanation_longer_than_an_event_may_be(tmp_path):
    led = ledger.Ledger("ada", tmp_path / "l")
    with pytest.raises(ValueError, match="too large"):
        led.append("explain", lab_id="lab01", item_id=X,
                   payload={"text": "w" * ledger.MAX_LINE_BYTES})
