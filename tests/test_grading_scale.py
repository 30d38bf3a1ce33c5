"""labs-grade at scale: the parallel, student-by-student run writes exactly what the
in-memory grader and a one-process run write; an interrupted run leaves nothing behind;
shards graded apart merge into the folder one run writes."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labs.core import grading
from labs.core.course.classroom.canvas_class import write_canvas_class
from labs.core.course.classroom.synth import write_synthetic_class
from labs.core.course.grading import run as grading_run
from labs.core.course.grading.load import Limits

OUTPUTS = ("gradebook.csv", "items.csv", "events.csv", "files.csv", "canvas.csv")


@pytest.fixture(scope="module")
def canvas_class(tmp_path_factory):
    return write_canvas_class(tmp_path_factory.mktemp("scale") / "c", 40, seed=11)


def _run(cls, out: Path, **kwargs) -> grading_run.RunResult:
    out.mkdir(parents=True)
    return grading_run.run_class([str(cls.submissions)], grading.load_config(cls.config), out,
                                 limits=Limits(), **kwargs)


def test_a_pool_of_workers_writes_what_one_process_writes(canvas_class, tmp_path, monkeypatch):
    """Chunks of 7 students in 2 processes against one process: every file byte for byte,
    every feedback page, and the same console summary."""
    one = _run(canvas_class, tmp_path / "one", workers=1)
    monkeypatch.setattr(grading_run, "SERIAL_BELOW", 0)
    many = _run(canvas_class, tmp_path / "many", workers=2, chunk_size=7)
    for name in OUTPUTS:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "many" / name).read_bytes(), \
            name
    pages = sorted(p.name for p in (tmp_path / "one" / "feedback").iterdir())
    assert pages == sorted(p.name for p in (tmp_path / "many" / "feedback").iterdir())
    for page in pages:
        assert (tmp_path / "one" / "feedback" / page).read_bytes() == \
            (tmp_path / "many" / "feedback" / page).read_bytes(), page
    assert [(s.sid, s.level, s.lines, s.info) for s in one.students] == \
        [(s.sid, s.level, s.lines, s.info) for s in many.students]
    assert not any(p.name.startswith(".") for p in (tmp_path / "many").iterdir())  # no spill


def test_the_run_grades_as_the_in_memory_grader_does(canvas_class, tmp_path):
    _run(canvas_class, tmp_path / "run", workers=1)
    batch = grading.load_ledgers([canvas_class.submissions])
    book = grading.grade(batch, grading.load_config(canvas_class.config))
    grading.write_csv(grading.gradebook_rows(book), tmp_path / "book.csv")
    grading.write_csv(grading.item_rows(book), tmp_path / "items.csv", grading.ITEM_COLUMNS)
    grading.write_csv(grading.event_rows(batch), tmp_path / "events.csv", grading.EVENT_COLUMNS)
    for name in ("book.csv", "items.csv", "events.csv"):
        ran = "gradebook.csv" if name == "book.csv" else name
        assert (tmp_path / name).read_bytes() == (tmp_path / "run" / ran).read_bytes(), name


# --- interrupted runs ------------------------------------------------------------------------

def _staging_left(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _no_such_process() -> int:
    dead = 2**22 + 12345
    while True:
        try:
            os.kill(dead, 0)
            dead += 1
        except ProcessLookupError:
            return dead


@pytest.mark.slow
@pytest.mark.parametrize("signum, status, after", [
    (signal.SIGINT, 130, 1.0), (signal.SIGTERM, 143, 1.0),
    (signal.SIGTERM, 143, 0.05), (signal.SIGHUP, 129, 0.3)])  # (while the pool starts)
def test_an_interrupted_run_removes_its_partial_output(tmp_path, signum, status, after):
    sub = tmp_path / "sub"
    write_synthetic_class(sub, 600, seed=2)
    out = tmp_path / "grades"
    proc = subprocess.Popen([sys.executable, "-m", "labs.core.course.grading",
                             str(sub), "-o", str(out), "--workers", "2"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120  # (a busy machine starts Python slowly)
    while not any(p.name.startswith(".grades.labs-grade-") for p in tmp_path.iterdir()):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.05)
    time.sleep(after)  # starting the pool, or reading the files in it
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == status, err
    assert "partial run was removed" in err
    assert _staging_left(tmp_path) == [] and not out.exists()


def test_the_next_run_removes_what_a_killed_run_left_and_says_so(tmp_path, capsys):
    sub = tmp_path / "sub"
    write_synthetic_class(sub, 3, seed=1)
    dead = _no_such_process()
    for kind in ("labs-grade", "old"):
        left = tmp_path / f".grades.{kind}-{dead}"
        (left / "feedback").mkdir(parents=True)
        (left / "gradebook.csv").write_text("a class's grades")
    (tmp_path / ".grades.labs-grade-notapid").mkdir()  # not labs-grade's: left alone
    rc = grading.main([str(sub), "-o", str(tmp_path / "grades")])
    console = capsys.readouterr().out
    assert rc in (0, 1)
    assert _staging_left(tmp_path) == [".grades.labs-grade-notapid"]
    assert console.count("left by an interrupted run") == 2


def test_a_run_leaves_alone_the_staging_folder_of_a_run_still_going(tmp_path, capsys):
    sub = tmp_path / "sub"
    write_synthetic_class(sub, 3, seed=1)
    alive = os.getppid()  # a process that is running (this test's parent)
    going = tmp_path / f".grades.labs-grade-{alive}"
    going.mkdir()
    (going / "gradebook.csv").write_text("another run's grades")
    assert grading.main([str(sub), "-o", str(tmp_path / "grades")]) in (0, 1)
    assert "still going" in capsys.readouterr().out
    assert (going / "gradebook.csv").read_text() == "another run's grades"


def test_the_next_merge_removes_what_a_killed_merge_left_and_says_so(tmp_path, capsys):
    sub = tmp_path / "sub"
    write_synthetic_class(sub, 3, seed=1)
    grading.main([str(sub), "-o", str(tmp_path / "shard")])
    dead = _no_such_process()
    left = tmp_path / f".merged.labs-grade-{dead}"
    left.mkdir()
    (left / "gradebook.csv").write_text("a class's grades")
    capsys.readouterr()
    assert grading.main(["--merge", "-o", str(tmp_path / "merged"), str(tmp_path / "shard")]) == 0
    assert "left by an interrupted run" in capsys.readouterr().out
    assert _staging_left(tmp_path) == []


def test_force_refuses_an_output_it_could_not_remove(tmp_path, capsys, monkeypatch):
    sub = tmp_path / "sub"
    write_synthetic_class(sub, 3, seed=1)
    out = tmp_path / "grades"
    assert grading.main([str(sub), "-o", str(out), "--no-feedback"]) in (0, 1)
    before = (out / "gradebook.csv").read_bytes()
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(out) else
                        real(p, mode))  # (the tests may run as root, whom nothing stops)
    assert grading.main([str(sub), "-o", str(out), "--force"]) == 2
    assert "cannot be removed" in capsys.readouterr().err
    assert (out / "gradebook.csv").read_bytes() == before
    assert _staging_left(tmp_path) == []


# --- shards ----------------------------------------------------------------------------------

def _split(cls, tmp_path: Path) -> tuple[Path, Path]:
    """The class's submissions in two sections, by student (each student's files in one;
    the student who typed a classmate's id sits in the classmate's section: what compares
    two students is decided within a section)."""
    a, b = tmp_path / "section-a", tmp_path / "section-b"
    a.mkdir()
    b.mkdir()
    together = {cls.situation[s].lastfirst for s in ("victim", "classmate")}
    for n, f in enumerate(sorted(cls.submissions.iterdir())):
        who = f.name.split("_")[0]
        target = a if who in together or sum(map(ord, who)) % 2 == 0 else b
        (target / f.name).write_bytes(f.read_bytes())
    return a, b


def _rows(path: Path) -> list[list[str]]:
    """A CSV's rows, a file's path shown by its name (the sections' copies are elsewhere)."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    if rows and "source" in rows[0]:
        at = rows[0].index("source")
        for row in rows[1:]:
            row[at] = Path(row[at]).name
    return rows


def test_sections_graded_apart_merge_into_what_one_run_writes(tmp_path, capsys):
    cls = write_canvas_class(tmp_path / "c", 24, seed=5)
    a, b = _split(cls, tmp_path)
    base = ["-c", str(cls.config), "--roster", str(cls.roster)]
    assert grading.main([str(cls.submissions), "-o", str(tmp_path / "whole"), *base]) == 1
    for section in (a, b):
        grading.main([str(section), "-o", str(tmp_path / f"g-{section.name}"), *base])
    capsys.readouterr()
    rc = grading.main(["--merge", "-o", str(tmp_path / "merged"), str(tmp_path / "g-section-a"),
                 str(tmp_path / "g-section-b")])
    assert rc == 0, capsys.readouterr()
    whole, merged = tmp_path / "whole", tmp_path / "merged"
    # with the whole roster, a student is Missing in the section they did not hand in to:
    # the merge keeps the row with work, so every file is the whole run's
    for name in ("gradebook.csv", "canvas.csv", "items.csv", "events.csv"):
        assert _rows(merged / name) == _rows(whole / name), name
    assert sorted(map(tuple, _rows(merged / "files.csv")[1:])) == \
        sorted(map(tuple, _rows(whole / "files.csv")[1:]))
    pages = {p.name for p in (merged / "feedback").iterdir()}
    assert pages == {p.name for p in (whole / "feedback").iterdir()}


def test_merging_shards_of_students_graded_once_each_is_exact(tmp_path, capsys):
    """Without a roster, each section's gradebook holds its own students: the merge is the
    whole run, every file byte for byte (feedback pages too)."""
    cls = write_canvas_class(tmp_path / "c", 24, seed=6)
    a, b = _split(cls, tmp_path)
    base = ["-c", str(cls.config)]
    cfg = cls.config.read_text(encoding="utf-8").replace('roster = "roster.csv"\n', "") \
        .replace('overrides = "overrides.csv"\n', "")  # (an override names one student)
    cls.config.write_text(cfg, encoding="utf-8")
    grading.main([str(cls.submissions), "-o", str(tmp_path / "whole"), *base])
    for section in (a, b):
        grading.main([str(section), "-o", str(tmp_path / f"g-{section.name}"), *base])
    rc = grading.main(["--merge", "-o", str(tmp_path / "merged"), str(tmp_path / "g-section-a"),
                 str(tmp_path / "g-section-b")])
    assert rc == 0, capsys.readouterr()
    for name in ("gradebook.csv", "items.csv", "events.csv", "canvas.csv"):
        assert _rows(tmp_path / "merged" / name) == _rows(tmp_path / "whole" / name), name
    # a student in both shards: the first shard's row is kept, and it is said
    rc = grading.main(["--merge", "-o", str(tmp_path / "twice"), str(tmp_path / "g-section-a"),
                 str(tmp_path / "g-section-a")])
    assert rc == 1 and "has work graded in" in capsys.readouterr().out
    # shards of different labs are refused, nothing written
    grading.main([str(a), "-o", str(tmp_path / "one-lab"), "--lab", "lab01"])
    capsys.readouterr()
    rc = grading.main(["--merge", "-o", str(tmp_path / "bad"), str(tmp_path / "g-section-a"),
                 str(tmp_path / "one-lab")])
    assert rc == 2 and "other columns" in capsys.readouterr().err
    assert not (tmp_path / "bad").exists()
