"""A generated class as Canvas gives it (bulk-download names, a roster with every
identity column, extensions, an override, late and revisited work, a classmate's id, an alias
typed for the id, duplicates) graded end to end by ``labs-grade``.

Points by hand (the default rubric: commit 1 + reason 0.5 + explain 1 = 2.5 per item; Lab 1
asks 5 items = 12.5, Lab 2 asks 2 = 5.0; the course takes 10 % per started day late).
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from labs.core import catalogue
from labs.core import grading
from labs.core.course.classroom.canvas_class import write_canvas_class

T1, T2 = catalogue.lab("lab01").title, catalogue.lab("lab02").title


def _rows(path: Path, key: str = "SIS User ID") -> dict[str, dict]:
    with open(path, newline="", encoding="utf-8-sig") as f:
        return {r[key]: r for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("canvas")
    cls = write_canvas_class(root / "class", 30, seed=3)
    out = root / "out"
    rc = grading.main([str(cls.submissions), "-c", str(cls.config), "-o", str(out)])
    return cls, out, rc, _rows(out / "gradebook.csv")


def _row(graded, situation: str) -> dict:
    cls, _, _, rows = graded
    return rows[cls.situation[situation].sis_id]


# -- §1 a file that carries a classmate's id ---------------------------------------------------

def test_a_file_with_a_classmates_id_is_flagged_on_both_rows_and_graded_as_the_submitters(
        graded):
    victim, classmate = _row(graded, "victim"), _row(graded, "classmate")
    # the victim submitted a whole, honest ledger: it is theirs (Canvas says who handed it in)
    assert victim[f"{T1} - Status"] == "On time" and float(victim["Total Points"]) == 17.5
    assert "id_mismatch" in victim["Flags"] and classmate["SIS User ID"] in victim["Flags"]
    # the classmate is graded on their own file only, and told someone else used their id
    assert float(classmate["Total Points"]) == 17.5
    assert "id_mismatch" in classmate["Flags"] and victim["SIS User ID"] in classmate["Flags"]
    assert "contradicting_files" not in classmate["Flags"]


def test_a_file_submitted_under_a_students_lms_id_is_never_a_silent_missing(graded):
    row = _row(graded, "unreadable")
    assert row[f"{T1} - Status"] == "Unreadable submission"
    assert "unreadable_submission" in row["Flags"]
    missing = _row(graded, "missing")  # nothing submitted: Missing, honestly
    assert missing[f"{T1} - Status"] == "Missing"


# -- §2 an alias typed for the id --------------------------------------------------------------

@pytest.mark.parametrize("situation, column", [
    ("login", "SIS Login ID"), ("email", "Email"),
    ("leading_zeros", "SIS User ID without its leading zeros")])
def test_an_alias_from_any_roster_column_is_the_one_student(graded, situation, column):
    cls, _, _, rows = graded
    row = _row(graded, situation)
    assert float(row["Total Points"]) == 17.5, row
    assert f"(their {column})" in row["Notes"], row["Notes"]
    assert cls.typed[row["SIS User ID"]] in row["Notes"]
    # no extra not-on-roster row; Canvas's test student is no student of the class
    assert set(rows) == {s.sis_id for s in cls.students}
    assert [k for k, r in rows.items() if "not_on_roster" in r["Flags"]] == []


def test_aliases_also_resolve_without_lms_file_names(tmp_path):
    cls = write_canvas_class(tmp_path / "c", 16, seed=1)
    for f in cls.submissions.iterdir():  # as a student would name it, no Canvas prefix
        f.rename(f.with_name(f.name.split("_", 3)[-1]))
    grading.main([str(cls.submissions), "-c", str(cls.config), "-o", str(tmp_path / "o")])
    rows = _rows(tmp_path / "o" / "gradebook.csv")
    row = rows[cls.situation["login"].sis_id]
    assert float(row["Total Points"]) == 17.5 and "(their SIS Login ID)" in row["Notes"]
    # a file named for an alias (roofline-ledger-<login>.jsonl) is the
    # student's own: no id_mismatch on their row, and no phantom row for the alias
    for situation, column in (("login", "SIS Login ID"), ("email", "Email"),
                              ("leading_zeros", "SIS User ID without its leading zeros")):
        student = cls.situation[situation]
        assert cls.typed[student.sis_id] != student.sis_id
        row = rows[student.sis_id]
        assert float(row["Total Points"]) == 17.5 and f"(their {column})" in row["Notes"]
        assert row["Flags"] == "", (situation, row["Flags"])
    assert set(rows) == {s.sis_id for s in cls.students} | {"teststudent"}
    assert [k for k, r in rows.items() if "not_on_roster" in r["Flags"]] == ["teststudent"]


def test_an_unreadable_file_named_for_an_alias_is_that_students(tmp_path):
    """An empty ``roofline-ledger-<SIS Login ID>.jsonl`` (no Canvas name)
    makes the student's own row say "Unreadable submission"; no row for the login."""
    cls = write_canvas_class(tmp_path / "c", 16, seed=1)
    student = cls.students[0]
    for f in cls.submissions.iterdir():
        if f"_{student.canvas_id}_" in f.name:
            f.unlink()
    (cls.submissions / f"roofline-ledger-{student.login}.jsonl").write_bytes(b"")
    grading.main([str(cls.submissions), "-c", str(cls.config), "-o", str(tmp_path / "o")])
    rows = _rows(tmp_path / "o" / "gradebook.csv")
    assert rows[student.sis_id][f"{T1} - Status"] == "Unreadable submission"
    assert "unreadable_submission" in rows[student.sis_id]["Flags"]
    assert student.login not in rows and len(rows) == len(cls.students)


def test_an_alias_two_students_share_maps_to_neither(tmp_path):
    roster = tmp_path / "r.csv"
    roster.write_text("Student,ID,SIS User ID,SIS Login ID,Email\n"
                      "a,1,001,shared,a@x.example\nb,2,002,shared,b@x.example\n")
    r = grading.load_roster(roster)
    assert r.resolve("shared") is None
    assert r.resolve("a@x.example")[0].student_id == "001"
    assert r.resolve("1") == (r.get("001"), "ID") and r.by_lms_id("2").student_id == "002"


# -- §3 lateness per graded event --------------------------------------------------------------

def test_revisiting_a_lab_after_its_deadline_leaves_on_time_work_on_time(graded):
    row = _row(graded, "revisit")
    assert row[f"{T1} - Status"] == "On time", row
    assert float(row[T1]) == 12.5 and row[f"{T1} - Lateness (H:M:S)"] == "0:00:00"
    assert row[f"{T1} - Submission Time"] < "2025-03-07T23:59:00Z"


def test_late_work_loses_its_penalty_and_only_its_late_parts_do(graded):
    late = _row(graded, "late")  # every part 2.5 days late: 3 started days, 1 - 0.3
    assert late[f"{T1} - Status"] == "Late" and float(late[T1]) == pytest.approx(12.5 * 0.7)
    # one explanation (1 point) 3 days and a minute late: 4 started days, keeps 0.6
    part = _row(graded, "late_explain")
    assert part[f"{T1} - Status"] == "Late"
    assert float(part[T1]) == pytest.approx(12.5 - 1.0 + 1.0 * 0.6)
    ext = _row(graded, "extension")  # a day late with two days' extension
    assert ext[f"{T1} - Status"] == "On time" and float(ext[T1]) == 12.5


def test_late_policy_deadline_never_penalises_on_time_events(tmp_path):
    cls = write_canvas_class(tmp_path / "c", 16, seed=2)
    text = cls.config.read_text().replace("late_penalty_per_day = 0.1",
                                          'late_penalty_per_day = 0.1\nlate_policy = "deadline"')
    cls.config.write_text(text)
    grading.main([str(cls.submissions), "-c", str(cls.config), "-o", str(tmp_path / "o")])
    rows = _rows(tmp_path / "o" / "gradebook.csv")
    row = lambda s: rows[cls.situation[s].sis_id]  # noqa: E731
    assert float(row("revisit")[T1]) == 12.5
    assert float(row("late_explain")[T1]) == pytest.approx(12.5 - 1.0)  # the late part: 0
    assert float(row("late")[T1]) == 0.0
    assert float(row("late")[T2]) == 5.0  # Lab 2 was on time


def test_the_feedback_page_shows_per_item_times_and_the_penalty_arithmetic(graded):
    cls, out, _, _ = graded
    sid = cls.situation["late_explain"].sis_id
    page = (out / "feedback" / f"{sid}.html").read_text(encoding="utf-8")
    assert "2025-03-07 23:59 UTC" in page  # the deadline
    assert "2025-03-11" in page  # the late explanation's time
    assert "× 0.6" in page or "x 0.6" in page  # the arithmetic
    assert "“”" not in page


# -- §4 one run, one folder --------------------------------------------------------------------

def test_a_second_run_never_mixes_with_the_first(tmp_path, capsys):
    big = write_canvas_class(tmp_path / "big", 24, seed=4)
    small = write_canvas_class(tmp_path / "small", 16, seed=5)
    out = tmp_path / "grades"
    grading.main([str(big.submissions), "-c", str(big.config), "-o", str(out)])
    first = (out / "gradebook.csv").read_bytes()
    capsys.readouterr()
    rc = grading.main([str(small.submissions), "-c", str(small.config), "-o", str(out)])
    assert rc == 2 and "--force" in capsys.readouterr().err
    assert (out / "gradebook.csv").read_bytes() == first  # untouched
    grading.main([str(small.submissions), "-c", str(small.config), "-o", str(out), "--force"])
    rows = _rows(out / "gradebook.csv")
    assert set(rows) == {s.sis_id for s in small.students}
    pages = {p.name for p in (out / "feedback").iterdir()} - {"index.html"}
    assert pages == {f"{s}.html" for s in rows}  # no stale page left
    (out / "my-notes.txt").write_text("mine")
    rc = grading.main([str(small.submissions), "-c", str(small.config), "-o", str(out), "--force"])
    assert rc == 2 and (out / "my-notes.txt").exists()  # never deletes what it did not write


# -- §5 the console names who needs a look -----------------------------------------------------

def test_the_console_names_the_students_whose_grade_may_be_wrong_first(tmp_path, capsys):
    cls = write_canvas_class(tmp_path / "c", 16, seed=6)
    grading.main([str(cls.submissions), "-c", str(cls.config), "-o", str(tmp_path / "o")])
    console = capsys.readouterr().out
    wrong = console.split("Grades that may be wrong", 1)[1].split("\n  ", 1)[0]
    head, body = console.split("Grades that may be wrong", 1)
    listed = body.split("\n  Notes", 1)[0]
    for who in ("victim", "classmate", "unreadable"):
        s = cls.situation[who]
        assert f"{s.sis_id} {s.name.split()[1]}" in listed or s.sis_id in listed, who
    assert cls.situation["revisit"].sis_id not in listed  # a revision is a note, not a flag
    assert "1 revised a prediction" in console and wrong
    row = _rows(tmp_path / "o" / "gradebook.csv")[cls.situation["revisit"].sis_id]
    assert "revised" not in row["Flags"] and "revised" in row["Notes"]


# -- §6 Canvas ---------------------------------------------------------------------------------

def test_canvas_csv_matches_assignments_and_leaves_strangers_out(graded, capsys):
    cls, out, _, _ = graded
    with open(out / "canvas.csv", newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    assert rows[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    assert rows[0][5:] == [f"{T1} (880011)", f"{T2} (880012)"]
    assert rows[1][0] == "Points Possible" and rows[1][5:] == ["12.5", "5.0"]
    sis = [r[2] for r in rows[2:]]
    assert sorted(sis) == sorted(s.sis_id for s in cls.students)  # leading zeros kept
    assert not (out / "canvas-left-out.csv").exists()  # Canvas's test student is not graded
    files = (out / "files.csv").read_text(encoding="utf-8-sig")
    assert "studenttest_" in files and "Canvas's test student (Student View): not graded" in files
    readme = (out / "README.txt").read_text(encoding="utf-8")
    assert "test student" in readme
    assert "already include this penalty" in readme and "10%" in readme


# -- §8 feedback pages -------------------------------------------------------------------------

def test_the_feedback_index_has_names_and_severity_and_the_pages_style(graded):
    cls, out, _, _ = graded
    index = (out / "feedback" / "index.html").read_text(encoding="utf-8")
    assert "<style>" in index and "grade may be wrong" in index
    at = {s.sis_id: index.index(f">{s.sis_id}</a>") for s in cls.students
          if s is not cls.situation["missing"]}
    serious = [cls.situation[k].sis_id for k in ("victim", "classmate", "unreadable")]
    ordinary = cls.students[0]  # on time, nothing odd
    assert ordinary.name.split()[1] in index  # names from the roster
    assert max(at[s] for s in serious) < at[ordinary.sis_id]  # the serious ones first


def test_an_empty_reason_is_not_shown_as_empty_quotes(tmp_path):
    from labs.core import ledger
    from grading_support import _ts

    led = ledger.Ledger("ada", tmp_path / "l")
    led.append("predict", lab_id="lab01", item_id="lab01.crossover_n", ts=_ts(1),
               payload={"value": 300, "confidence": 3, "reason": "", "answer_type": "numeric"})
    book = grading.grade(grading.load_ledgers([led.path]))
    page = grading.feedback_page(book, grading.load_ledgers([led.path]), "ada")
    assert "<q></q>" not in page and "no reason given" in page


# -- §9 nothing silently dropped ---------------------------------------------------------------

def test_every_path_under_a_submission_root_is_graded_or_reported(tmp_path, monkeypatch):
    import os
    import signal

    cls = write_canvas_class(tmp_path / "c", 16, seed=7)
    sub, s = cls.submissions, cls.students
    ledgers = sorted(sub.glob("*_roofline-ledger-*.jsonl"))
    real = tmp_path / "elsewhere"
    real.mkdir()
    # 1. a folder link holding a real ledger, named for s[0] through the Canvas name
    victim_file = next(p for p in ledgers if f"_{s[0].canvas_id}_" in p.name)
    victim_file.rename(real / victim_file.name)
    (sub / f"{s[0].lastfirst}_{s[0].canvas_id}_1_folder").symlink_to(real)
    # 2. a folder that cannot be read (simulated: the grader may run as root)
    locked = sub / f"{s[1].lastfirst}_{s[1].canvas_id}_2_roofline-ledger-{s[1].sis_id}"
    locked.mkdir()
    # 3. a folder link loop; 4. an empty folder named like a ledger
    (sub / "loop").symlink_to(sub)
    (sub / f"roofline-ledger-{s[2].sis_id}.jsonl.d").mkdir()
    empty = sub / f"{s[3].lastfirst}_{s[3].canvas_id}_4_roofline-ledger-{s[3].sis_id}.jsonl"
    for p in ledgers:  # s[1]..s[5] hand in only the odd paths
        if any(f"_{x.canvas_id}_" in p.name for x in s[1:6]) and p.exists():
            p.unlink()
    empty.mkdir()
    # 5. a link to a ledger file; 6. a FIFO; 7. a link to /dev/zero
    (sub / f"{s[4].lastfirst}_{s[4].canvas_id}_5_roofline-ledger-{s[4].sis_id}.jsonl"
     ).symlink_to(real / victim_file.name)
    os.mkfifo(sub / f"{s[5].lastfirst}_{s[5].canvas_id}_6_roofline-ledger-{s[5].sis_id}.jsonl")
    (sub / "roofline-ledger-zero.jsonl").symlink_to("/dev/zero")
    scandir = os.scandir

    def no_entry(path):
        if not isinstance(path, int) and Path(path) == locked:  # (an int: rmtree's own fd)
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", no_entry)
    signal.alarm(60)  # a FIFO or /dev/zero must never block the grader
    try:
        rc = grading.main([str(sub), "-c", str(cls.config), "-o", str(tmp_path / "o")])
    finally:
        signal.alarm(0)
    assert rc == 1
    rows = _rows(tmp_path / "o" / "gradebook.csv")
    with open(tmp_path / "o" / "files.csv", newline="", encoding="utf-8-sig") as f:
        sources = {Path(r["source"]).name: r for r in csv.DictReader(f)}
    for name in (f"{s[0].lastfirst}_{s[0].canvas_id}_1_folder", locked.name, "loop",
                 f"roofline-ledger-{s[2].sis_id}.jsonl.d", empty.name,
                 "roofline-ledger-zero.jsonl"):
        assert name in sources, name
        assert sources[name]["problems"] or sources[name]["skipped"], sources[name]
    for x in (s[0], s[1], s[3], s[4], s[5]):  # named by their Canvas id: never silent
        assert rows[x.sis_id][f"{T1} - Status"] == "Unreadable submission", x
        assert "unreadable_submission" in rows[x.sis_id]["Flags"]
    assert "zero" in rows  # a file named for a student who is not on the roster: a row


def test_a_lock_file_handed_in_through_canvas_is_reported_with_its_student(tmp_path):
    """The lab's ``.lock`` file uploaded instead of the ledger (Canvas names
    it ``name_<id>_<sub>_.roofline-ledger-<sis>.lock``) was dropped without a trace and its
    student shown Missing. It is listed in files.csv and the row says Unreadable submission;
    uploaded next to the ledger, it is a note; the lab's own lock file in a folder is still
    ignored."""
    import zipfile

    cls = write_canvas_class(tmp_path / "c", 16, seed=7)
    sub, (alone, both, folder) = cls.submissions, cls.students[:3]
    for p in sorted(sub.iterdir()):
        if f"_{alone.canvas_id}_" in p.name:
            p.unlink()
    lock = f"{alone.lastfirst}_{alone.canvas_id}_7000001_.roofline-ledger-{alone.sis_id}.lock"
    (sub / lock).write_bytes(b"")
    (sub / f"{both.lastfirst}_{both.canvas_id}_7000002_.roofline-ledger-{both.sis_id}.lock"
     ).write_bytes(b"")
    (sub / "x").mkdir()
    (sub / "x" / f".roofline-ledger-{folder.sis_id}.lock").write_bytes(b"")
    zipped = tmp_path / "submissions.zip"
    with zipfile.ZipFile(zipped, "w") as z:
        for p in sorted(sub.rglob("*")):
            if p.is_file():
                z.write(p, p.relative_to(sub).as_posix())
    for inputs, out in (([str(sub)], tmp_path / "o"), ([str(zipped)], tmp_path / "z")):
        assert grading.main(inputs + ["-c", str(cls.config), "-o", str(out)]) == 1
        rows = _rows(out / "gradebook.csv")
        assert rows[alone.sis_id][f"{T1} - Status"] == "Unreadable submission"
        assert "unreadable_submission" in rows[alone.sis_id]["Flags"]
        assert "lock file" in rows[alone.sis_id]["Flags"]
        assert rows[both.sis_id][f"{T1} - Status"] != "Unreadable submission"
        assert "unreadable_submission" not in rows[both.sis_id]["Flags"]
        assert "handed in too, not graded" in rows[both.sis_id]["Notes"]
        with open(out / "files.csv", newline="", encoding="utf-8-sig") as f:
            listed = {Path(r["source"].split("!")[-1]).name: r for r in csv.DictReader(f)}
        assert lock in listed and "lock file" in listed[lock]["skipped"]
        assert listed[lock]["submitter"] == alone.sis_id
        assert f".roofline-ledger-{folder.sis_id}.lock" not in listed


def test_a_feedback_page_never_names_another_student(graded):
    cls, out, _, rows = graded
    victim, classmate = cls.situation["victim"], cls.situation["classmate"]
    for me, other in ((victim, classmate), (classmate, victim)):
        page = (out / "feedback" / f"{me.sis_id}.html").read_text(encoding="utf-8")
        assert "id_mismatch" in page
        assert other.sis_id not in page and other.name.split()[1] not in page
        assert other.sis_id in rows[me.sis_id]["Flags"]  # the instructor's gradebook does


def test_a_zip_a_student_uploaded_is_theirs_and_an_override_may_name_any_roster_id(tmp_path):
    import zipfile

    cls = write_canvas_class(tmp_path / "c", 16, seed=10)
    login = cls.situation["login"]
    f = next(cls.submissions.glob(f"*_{login.canvas_id}_*"))
    with zipfile.ZipFile(f.with_name(f"{login.lastfirst}_{login.canvas_id}_1_ledger.zip"),
                         "w") as z:
        z.writestr("inner/" + f.name.split("_", 3)[-1], f.read_bytes())
    f.unlink()
    (tmp_path / "ov.csv").write_text(f"student,item,points,comment\n{login.email},lab01,1,x\n")
    grading.main([str(cls.submissions), "-c", str(cls.config), "-o", str(tmp_path / "o"),
            "--overrides", str(tmp_path / "ov.csv")])
    row = _rows(tmp_path / "o" / "gradebook.csv")[login.sis_id]
    assert float(row[T1]) == 1.0 and float(row[T2]) == 5.0  # the override, by e-mail
    assert "(their SIS Login ID)" in row["Notes"]


def test_without_the_rosters_id_column_two_accounts_behind_one_id_are_flagged(tmp_path):
    cls = write_canvas_class(tmp_path / "c", 16, seed=12)
    with open(cls.roster, newline="") as f:
        rows = [[c for i, c in enumerate(r) if i != 1] for r in csv.reader(f)]  # drop "ID"
    with open(cls.roster, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    grading.main([str(cls.submissions), "-c", str(cls.config), "-o", str(tmp_path / "o")])
    row = _rows(tmp_path / "o" / "gradebook.csv")[cls.situation["classmate"].sis_id]
    assert "id_mismatch" in row["Flags"] and "2 LMS accounts" in row["Flags"]


TEST_STUDENT_ROW = ["Student, Test", "999999", "", "", "Section 1", ""]  # as Canvas exports it


def test_a_canvas_roster_without_sis_ids_uses_the_next_identity_column(tmp_path, capsys):
    cls = write_canvas_class(tmp_path / "c", 16, seed=13)
    with open(cls.roster, newline="") as f:
        rows = list(csv.reader(f))
    for r in rows[2:]:
        r[2] = ""  # a course without SIS: Canvas exports the column, empty
    with open(cls.roster, "w", newline="") as f:
        csv.writer(f).writerows(rows + [TEST_STUDENT_ROW])
    r = grading.load_roster(cls.roster, "SIS User ID")
    assert r.id_column == "SIS Login ID" and len(r.entries) == 16
    assert r.notes == ["the roster's SIS User ID column is blank on every row: its ids are its "
                       "SIS Login ID column"]
    assert [why for _, _, why in r.left_out] == ["Canvas's test student"]
    for path in (cls.config, cls.overrides):  # the course names students by their login now
        text = path.read_text()
        for st in cls.students:
            text = text.replace(st.sis_id, st.login)
        path.write_text(text)
    out = tmp_path / "o"
    grading.main([str(cls.submissions), "-c", str(cls.config), "-o", str(out)])
    assert "its ids are its SIS Login ID column" in capsys.readouterr().out
    with open(out / "canvas.csv", newline="", encoding="utf-8-sig") as f:
        canvas = list(csv.DictReader(f))[1:]
    logins = {s.login for s in cls.students}
    assert {c["SIS Login ID"] for c in canvas} == logins
    assert {c["SIS User ID"] for c in canvas} == {""}  # blank as exported: never a login


def test_a_roster_with_the_test_student_or_a_row_without_a_sis_id_keeps_the_id_column(
        tmp_path, capsys):
    """Canvas's export lists its test student with no SIS User ID (and a
    student added by hand may have none). The gradebook stays keyed by the configured id
    column; those rows are left out and named on the console; canvas.csv never imports the
    test student, nor puts another column's value in SIS User ID."""
    cls = write_canvas_class(tmp_path / "c", 16, seed=16)
    with open(cls.roster, newline="") as f:
        rows = list(csv.reader(f))
    auditor = cls.students[0]  # an ordinary student, with a file handed in
    row = next(r for r in rows if r[2] == auditor.sis_id)
    row[2] = ""  # no SIS User ID
    with open(cls.roster, "w", newline="") as f:
        csv.writer(f).writerows(rows + [TEST_STUDENT_ROW])
    r = grading.load_roster(cls.roster, "SIS User ID")
    assert r.id_column == "SIS User ID" and r.notes == []
    assert len(r.entries) == 15 and [x[2] for x in r.left_out] == [
        "no SIS User ID", "Canvas's test student"]
    out = tmp_path / "o"
    assert grading.main([str(cls.submissions), "-c", str(cls.config), "-o", str(out)]) == 1
    console = capsys.readouterr().out
    assert "Roster: 2 row(s) left out, not graded and never in canvas.csv" in console
    assert "Student, Test (Canvas's test student)" in console
    assert "(no SIS User ID)" in console
    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as f:
        book = list(csv.DictReader(f))
    assert list(book[0])[0] == "SIS User ID"
    assert not any("(their SIS User ID)" in b["Notes"] for b in book)  # nobody re-keyed
    keys = {b["SIS User ID"] for b in book}
    assert {s.sis_id for s in cls.students if s is not auditor} <= keys
    assert not keys & {s.canvas_id for s in cls.students} and "999999" not in keys
    with open(out / "canvas.csv", newline="", encoding="utf-8-sig") as f:
        canvas = list(csv.DictReader(f))[1:]
    assert "Student, Test" not in {c["Student"] for c in canvas}
    assert {c["SIS User ID"] for c in canvas} == {s.sis_id for s in cls.students
                                                  if s is not auditor}
    assert all(c["SIS User ID"] != c["ID"] for c in canvas)


def test_an_extension_may_name_a_student_by_any_roster_id(tmp_path):
    cls = write_canvas_class(tmp_path / "c", 16, seed=14)
    ext = cls.situation["extension"]
    cls.config.write_text(cls.config.read_text().replace(f'"{ext.sis_id}"', f'"{ext.login}"'))
    grading.main([str(cls.submissions), "-c", str(cls.config), "-o", str(tmp_path / "o")])
    row = _rows(tmp_path / "o" / "gradebook.csv")[ext.sis_id]
    assert row[f"{T1} - Status"] == "On time" and float(row[T1]) == 12.5


def test_the_console_says_when_canvas_marked_on_time_work_late(tmp_path, capsys):
    cls = write_canvas_class(tmp_path / "c", 16, seed=15)
    grading.main([str(cls.submissions), "-c", str(cls.config), "-o", str(tmp_path / "o")])
    console = capsys.readouterr().out
    # the student who re-ran a lab after its deadline, and the one with an extension
    assert "Canvas marked 2 upload(s) LATE whose graded work was on time" in console
    said = console.split("Canvas marked", 1)[1].split("\n", 1)[0]
    assert cls.situation["revisit"].sis_id in said and cls.situation["extension"].sis_id in said


def test_a_canvas_named_file_keeps_its_file_level_flags(tmp_path):
    cls = write_canvas_class(tmp_path / "c", 16, seed=16)
    s = cls.students[0]
    f = next(cls.submissions.glob(f"*_{s.canvas_id}_*"))
    f.write_bytes(f.read_bytes()[:-20])  # the last line cut off
    grading.main([str(cls.submissions), "-c", str(cls.config), "-o", str(tmp_path / "o")])
    row = _rows(tmp_path / "o" / "gradebook.csv")[s.sis_id]
    assert "torn_tail" in row["Flags"], row["Flags"]
