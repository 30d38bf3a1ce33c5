"""Ids are text everywhere; a read-only ledger file is not a read-only folder."""

from __future__ import annotations

import os

from labs.core import classroom
from labs.core import ledger
from labs.core.course.classroom.canvas_class import write_canvas_class
from grading_support import honest_session


def test_student_given_as_a_number_on_the_command_line_opens_that_student(tmp_path):
    from marimo._cli.parse_args import parse_args

    cls = write_canvas_class(tmp_path / "c", 16, seed=8)
    room = classroom.load_class([cls.submissions], cls.config)
    victim = cls.situation["victim"]
    wanted = parse_args(["--student", victim.sis_id])["student"]  # what cli_args gives
    assert wanted == int(victim.sis_id)  # marimo turned the id into a number
    assert room.find_student(wanted) == victim.sis_id  # leading zero and all
    assert room.find_student(victim.sis_id) == victim.sis_id
    assert room.find_student(victim.login) == victim.sis_id  # any roster identity column
    assert room.find_student("nobody") is None and room.find_student("") is None
    source = (classroom.__file__.rsplit("/core/", 1)[0] + "/instructor_dashboard.py")
    assert "cls.find_student(chosen.get(\"student\"))" in open(source, encoding="utf-8").read()


def test_a_read_only_ledger_file_in_a_writable_folder_is_not_a_read_only_folder(
        tmp_path, monkeypatch):
    led = ledger.Ledger("ada", tmp_path / "l")
    honest_session(led)
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if str(p) == str(led.path)
                        and mode & os.W_OK else real_access(p, mode, **kw))
    again = ledger.Ledger("ada", tmp_path / "l")
    text = " ".join(again.warnings)
    assert "not writable" not in text and "read-only" in text, text
    assert again.mode == "recovery" and len(again.first_predictions()) == 2
    again.append("observe", lab_id="lab01", item_id="lab01.crossover_n",
                  payload={"text": "kept going"})
    assert again.target_path != led.path
