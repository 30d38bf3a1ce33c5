"""labs-grade's rules, each with a case that fails on a plausible mistake in the code: the
exact boundary of a tolerance, which tolerance applies, the late floor, extensions (per lab
and course-wide; never shorter), commitment, explanations' length, what the feedback page
shows as graded, a dropped student's file, Canvas points, named time zones, and the noise an
instructor should not have to read (values by hand: commit 1 + reason 0.5 + explain 1, and
correct 1 where a test turns correctness on)."""

from __future__ import annotations

import csv
import tempfile
import textwrap
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import pytest

from labs.core import grading
from labs.core import ledger
from labs.core.course.grading.score import late_factor
from labs.core.physics import misconceptions

X, R = "lab01.crossover_n", "lab01.which_roof"
DEADLINE = datetime(2025, 3, 7, 23, 59, tzinfo=timezone.utc)
TITLE = "Lab 1"


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def session(folder: Path, sid: str, steps, *, start: datetime = DEADLINE - timedelta(days=2),
            name: str | None = None) -> Path:
    """A ledger of ``steps`` = (kind, item, payload, minutes after the previous step)."""
    led = ledger.Ledger(sid, Path(tempfile.mkdtemp(prefix="ledger-")))  # not under the submissions
    t = start
    for kind, item, payload, minutes in steps:
        t += timedelta(minutes=minutes)
        led.append(kind, lab_id="lab01", item_id=item, payload=payload, ts=_ts(t),
                   lab_version="v1", session="s")
    target = folder / (name or led.path.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(led.path.read_bytes())
    return target


def predict(value, item=X, conf=3, reason="the ridge point", kind="numeric"):
    return ("predict", item, {"value": value, "answer_type": kind, "confidence": conf,
                              "reason": reason, "units": ""}, 1)


def honest(value=300.0, actual=886.0, item=X, explain="intensity below the ridge point",
           late_minutes: float = 0.0):
    """predict -> unlock -> result -> observe -> explain (the explanation ``late_minutes``
    after the rest)."""
    return [predict(value, item), ("unlock", item, {}, 0), ("result", item, {"actual": actual}, 0),
            ("observe", item, {"text": "under the slope"}, 1),
            ("explain", item, {"text": explain}, 1 + late_minutes)]


def config(tmp_path: Path, extra: str = "", *, correct: float = 1.0, items=(X,),
           course: str = "", lab: str = "") -> Path:
    path = tmp_path / "course.toml"
    path.write_text(textwrap.dedent(f"""
        [course]
        name = "rules"
        {course}

        [labs.lab01]
        title = "{TITLE}"
        deadline = {DEADLINE.strftime('%Y-%m-%dT%H:%M:%SZ')}
        items = {list(items)!r}
        {lab}

        [labs.lab01.rubric]
        correct = {correct}
        """) + textwrap.dedent(extra), encoding="utf-8")
    return path


def grade(tmp_path: Path, cfg: Path | None = None, *args: str, sub: Path | None = None
          ) -> tuple[int, dict, Path]:
    out = tmp_path / "out"
    argv = [str(sub or tmp_path / "sub"), "-o", str(out), *args]
    if cfg is not None:
        argv += ["-c", str(cfg)]
    rc = grading.main(argv)
    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as f:
        rows = {next(iter(r.values())): r for r in csv.DictReader(f)}
    return rc, rows, out


def items_csv(out: Path) -> list[dict]:
    with open(out / "items.csv", newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


# --- the boundary of a tolerance is inside, exactly ---------------------------------------------

def test_a_prediction_exactly_at_the_tolerance_is_graded_right(tmp_path, capsys):
    """1.05 typed against a measured 0.7 is exactly 1.5x: with a 1.5x tolerance it earns the
    correct point (3.5, not 2.5), and the page says so in the lab's words."""
    session(tmp_path / "sub", "ada", honest(1.05, 0.7))
    session(tmp_path / "sub", "bob", honest(1.0500001, 0.7))
    rc, rows, out = grade(tmp_path, config(tmp_path, lab="tolerances = { crossover_n = 1.5 }"))
    assert float(rows["ada"][TITLE]) == 3.5 and rows["ada"][f"{TITLE} - Correct"] == "1/1"
    assert float(rows["bob"][TITLE]) == 2.5 and rows["bob"][f"{TITLE} - Correct"] == "0/1"
    page = (out / "feedback" / "ada.html").read_text(encoding="utf-8")
    assert "✓ right" in page and "within the 1.5× graded as correct" in page
    assert "✗ not right" in (out / "feedback" / "bob.html").read_text(encoding="utf-8")


@pytest.mark.parametrize("tolerance", ["1.0", "1.1", "1.25", "1.3", "1.5", "2", "2.5", "10"])
def test_the_boundary_is_inside_for_the_tolerance_a_course_sets(tmp_path, tolerance):
    actual = Decimal("0.7")
    at = float(actual * Decimal(tolerance))
    beyond = float(actual * Decimal(tolerance) * Decimal("1.0001"))
    session(tmp_path / "sub", "ada", honest(at, float(actual)))
    session(tmp_path / "sub", "bob", honest(float(actual), at))  # too low, by as much
    session(tmp_path / "sub", "cy", honest(beyond, float(actual)))
    _, rows, _ = grade(tmp_path, config(tmp_path, f"tolerance = {tolerance}\n"))
    assert rows["ada"][f"{TITLE} - Correct"] == "1/1"
    assert rows["bob"][f"{TITLE} - Correct"] == "1/1"
    assert rows["cy"][f"{TITLE} - Correct"] == "0/1"


def test_without_a_course_tolerance_an_item_is_graded_within_its_own(tmp_path, monkeypatch):
    """The grader keeps no tolerance of its own: the item's band decides (here 1.2x)."""
    from labs.core.physics.misconceptions import lab01

    monkeypatch.setitem(lab01.TOLERANCES, X, 1.2)
    assert misconceptions.tolerance(X) == 1.2
    session(tmp_path / "sub", "ada", honest(0.84, 0.7))   # exactly 1.2x
    session(tmp_path / "sub", "bob", honest(0.875, 0.7))  # 1.25x: within 1.5, not 1.2
    rc, rows, out = grade(tmp_path, config(tmp_path))
    assert rows["ada"][f"{TITLE} - Correct"] == "1/1"
    assert rows["bob"][f"{TITLE} - Correct"] == "0/1"
    assert {r["tolerance"] for r in items_csv(out)} == {"1.2"}
    assert {r["tolerance_from"] for r in items_csv(out)} == {"the item's own"}
    page = (out / "feedback" / "bob.html").read_text(encoding="utf-8")
    assert "off by 1.25×" in page and "graded as correct" not in page


def test_without_a_course_file_an_item_is_graded_within_its_own(tmp_path, monkeypatch):
    """No course file (the labs seen, the default rubric): still the item's own band (1.2x),
    never a default of the rubric's."""
    from labs.core.physics.misconceptions import lab01

    monkeypatch.setitem(lab01.TOLERANCES, X, 1.2)
    session(tmp_path / "sub", "ada", honest(0.84, 0.7))   # exactly 1.2x
    session(tmp_path / "sub", "bob", honest(0.875, 0.7))  # 1.25x: within 1.5, not 1.2
    _, _, out = grade(tmp_path)
    rows = {r["student_id"]: r for r in items_csv(out) if r["item_id"] == X}
    assert (rows["ada"]["correct"], rows["bob"]["correct"]) == ("true", "false")
    assert {(r["tolerance"], r["tolerance_from"]) for r in rows.values()} == {
        ("1.2", "the item's own")}


def test_a_course_files_tolerance_is_used_and_said_where_it_overrides(tmp_path, capsys,
                                                                   monkeypatch):
    from labs.core.physics.misconceptions import lab01

    monkeypatch.setitem(lab01.TOLERANCES, X, 1.2)
    session(tmp_path / "sub", "bob", honest(0.875, 0.7))  # 1.25x
    rc, rows, out = grade(tmp_path, config(tmp_path, lab="tolerances = { crossover_n = 2 }"))
    assert rows["bob"][f"{TITLE} - Correct"] == "1/1"
    console = capsys.readouterr().out
    said = "lab01.crossover_n is graded within 2x (labs.lab01.tolerances in the course file), " \
           "not its own 1.2x"
    assert said in console and said in (out / "README.txt").read_text(encoding="utf-8")
    (row,) = items_csv(out)
    assert row["tolerance"] == "2.0" and row["tolerance_from"] == "labs.lab01.tolerances"
    assert "within the 2× graded as correct" in (out / "feedback" / "bob.html").read_text(
        encoding="utf-8")


def test_a_tolerance_for_an_item_that_is_not_numeric_is_a_config_error(tmp_path):
    with pytest.raises(grading.ConfigError, match="which_roof.*not a numeric prediction item"):
        grading.load_config(config(tmp_path, lab="tolerances = { which_roof = 2 }"))
    with pytest.raises(grading.ConfigError, match="must be a number >= 1"):
        grading.load_config(config(tmp_path, lab="tolerances = { crossover_n = 0.5 }"))


# --- commitment, explanations --------------------------------------------------------------------

def test_a_prediction_nothing_measured_earns_no_correct_point(tmp_path):
    """No reading and no course answer: correctness is unknown, reported blank, worth
    nothing (2.5 of 3.5)."""
    steps = [s for s in honest() if s[0] != "result"]
    session(tmp_path / "sub", "ada", steps)
    _, rows, out = grade(tmp_path, config(tmp_path))
    assert float(rows["ada"][TITLE]) == 2.5 and rows["ada"][f"{TITLE} - Correct"] == ""
    (row,) = items_csv(out)
    assert row["correct"] == "" and row["graded_against"] == ""


def test_work_exactly_at_the_deadline_is_on_time(tmp_path):
    """The explanation lands at 23:59:00.000000, the deadline itself: on time, no penalty;
    a microsecond later it is late."""
    for sid, extra in (("ada", timedelta(0)), ("bob", timedelta(microseconds=1))):
        steps = honest()
        session(tmp_path / "sub", sid, steps,
                start=DEADLINE - timedelta(minutes=sum(s[3] for s in steps)) + extra)
    _, rows, out = grade(tmp_path, config(tmp_path, correct=0,
                                          course="late_penalty_per_day = 0.5"))
    assert rows["ada"][f"{TITLE} - Status"] == "On time" and float(rows["ada"][TITLE]) == 2.5
    assert rows["bob"][f"{TITLE} - Status"] == "Late" and float(rows["bob"][TITLE]) == 2.0
    late = {r["student_id"]: r["late_parts"] for r in items_csv(out)}
    assert late == {"ada": "", "bob": "explanation 0:00:00 late x 0.5"}


def test_an_unlock_before_the_prediction_loses_the_commit_point(tmp_path):
    steps = honest()
    session(tmp_path / "sub", "ada", [("unlock", X, {}, 1)] + steps)
    session(tmp_path / "sub", "bob", steps)
    _, rows, out = grade(tmp_path, config(tmp_path, correct=0))
    assert float(rows["bob"][TITLE]) == 2.5
    assert float(rows["ada"][TITLE]) == 1.5  # reasoned and explained, not committed
    ada = next(r for r in items_csv(out) if r["student_id"] == "ada")
    assert ada["committed"] == "false" and ada["reasoned"] == "true"


@pytest.mark.parametrize("text, explained", [
    ("a b c d e f g h i j k l m n", False),  # 14 characters that are not whitespace, 27 long
    ("a\n\n\n\n\n\n\n\n\n\n\nbcdefghijklm", False),
    ("abcdefghijklmno", True),  # 15
    ("  abc def ghi jkl mno  ", True)])
def test_whitespace_does_not_count_towards_an_explanations_length(tmp_path, text, explained):
    session(tmp_path / "sub", "ada", honest(explain=text))
    _, rows, _ = grade(tmp_path, config(tmp_path, correct=0))
    assert float(rows["ada"][TITLE]) == (2.5 if explained else 1.5)


def test_a_prediction_of_true_is_no_number(tmp_path):
    """A numeric item predicted as ``true`` (a ledger edited by hand) is judged against
    nothing: not as the number 1, which is within 1.5x of the 1.2 measured. Both readings
    of the pair: a reading of ``true`` is no number either."""
    steps = honest(actual=1.2)
    steps[0] = predict(True)
    session(tmp_path / "sub", "ada", steps)
    session(tmp_path / "sub", "bob", honest(value=1.0, actual=True))
    session(tmp_path / "sub", "cy", honest(value=1.0, actual=1.2))
    _, rows, _ = grade(tmp_path, config(tmp_path))
    assert float(rows["cy"][TITLE]) == 3.5 and rows["cy"][f"{TITLE} - Correct"] == "1/1"
    for sid in ("ada", "bob"):
        assert float(rows[sid][TITLE]) == 2.5 and rows[sid][f"{TITLE} - Correct"] == "", sid


def test_a_blank_observation_is_not_observed(tmp_path):
    """The explain point needs an observation that is not blank and then an explanation: an
    observation of spaces leaves commit 1 + reason 0.5."""
    steps = honest()
    steps[3] = ("observe", X, {"text": "   \n "}, 1)
    session(tmp_path / "sub", "ada", steps)
    session(tmp_path / "sub", "bob", honest())
    _, rows, out = grade(tmp_path, config(tmp_path, correct=0))
    assert float(rows["ada"][TITLE]) == 1.5 and float(rows["bob"][TITLE]) == 2.5
    ada = next(r for r in items_csv(out) if r["student_id"] == "ada")
    assert ada["explained"] == "false"


# --- lateness: the floor, extensions ----------------------------------------------------------

def test_very_late_work_scores_zero_never_negative(tmp_path):
    assert late_factor(timedelta(days=3), 0.4) == 0.0
    assert late_factor(timedelta(days=1, seconds=1), 0.4) == pytest.approx(0.2)
    # the explanation 3 started days late at 40 % a day: it keeps nothing, and takes nothing
    session(tmp_path / "sub", "ada", honest(late_minutes=2 * 24 * 60 + 120),
            start=DEADLINE - timedelta(minutes=10))
    _, rows, out = grade(tmp_path, config(tmp_path, correct=0,
                                          course="late_penalty_per_day = 0.4"))
    assert float(rows["ada"][TITLE]) == 1.5  # commit 1 + reason 0.5 on time; explain 0
    (row,) = items_csv(out)
    assert float(row["points"]) == 1.5 and float(row["penalty"]) == 1.0


def test_an_extension_dated_before_the_deadline_never_shortens_it(tmp_path):
    """ada's extension says a day before the deadline; her work 2 h before the deadline is on
    time (the lab's deadline stands)."""
    session(tmp_path / "sub", "ada", honest(), start=DEADLINE - timedelta(hours=2))
    early = (DEADLINE - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    _, rows, _ = grade(tmp_path, config(tmp_path, correct=0,
                                        course="late_penalty_per_day = 0.5",
                                        extra=f"[labs.lab01.extensions]\nada = {early}\n"))
    assert rows["ada"][f"{TITLE} - Status"] == "On time"
    assert float(rows["ada"][TITLE]) == 2.5


def test_course_wide_extensions_move_every_labs_deadline(tmp_path):
    """ada has 2 days on every lab ([course.extensions]); bob, the same work a day and some
    minutes late (2 started days), has none: ada is on time with 2.5, bob late with
    1 - 2 x 0.25 of it."""
    for sid in ("ada", "bob"):
        session(tmp_path / "sub", sid, honest(), start=DEADLINE + timedelta(days=1))
    _, rows, _ = grade(tmp_path, config(tmp_path, correct=0,
                                        course="late_penalty_per_day = 0.25",
                                        extra='[course.extensions]\nada = "2d"\n'))
    assert rows["ada"][f"{TITLE} - Status"] == "On time" and float(rows["ada"][TITLE]) == 2.5
    assert rows["bob"][f"{TITLE} - Status"] == "Late" and float(rows["bob"][TITLE]) == 1.25
    assert "extension to" in rows["ada"]["Notes"]


# --- the feedback page shows the reading that was graded --------------------------------------

def test_the_feedback_page_shows_the_graded_reading_and_later_ones_as_later(tmp_path):
    steps = honest(300.0, 320.0) + [("result", X, {"actual": 2550.0}, 60 * 24 * 9)]
    session(tmp_path / "sub", "ada", steps)
    _, rows, out = grade(tmp_path, config(tmp_path))
    assert rows["ada"][f"{TITLE} - Correct"] == "1/1"  # against the first reading, 320
    page = (out / "feedback" / "ada.html").read_text(encoding="utf-8")
    cell = page.split("the ridge point", 1)[1].split("</tr>", 1)[0]
    assert cell.index("320") < cell.index("later:") < cell.index("2,550")
    assert "✓ right" in cell and "off by 1.07×" in cell and "7.97" not in cell


# --- identity: a dropped student's file is never pointed at a classmate ------------------------

def _canvas_roster(path: Path, rows) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section"])
        w.writerow(["    Points Possible", "", "", "", ""])
        w.writerows(rows)
    return path


def test_a_file_from_an_account_not_on_the_roster_names_no_classmate(tmp_path, capsys):
    sub = tmp_path / "sub"
    session(sub, "02310001", honest(), name="lovelaceada_104001_5000001_roofline-ledger-"
                                              "02310001.jsonl")
    session(sub, "02310003", honest(), name="dropperdan_104003_5000003_roofline-ledger-"
                                              "02310003.jsonl")  # dropped: not on the roster
    roster = _canvas_roster(tmp_path / "roster.csv", [
        ["Lovelace, Ada", "104001", "02310001", "alovelace", "S1"],
        ["Babbage, Bo", "104002", "02310002", "bbabbage", "S1"]])  # handed in nothing
    rc, rows, _ = grade(tmp_path, config(tmp_path, correct=0), "--roster", str(roster))
    flags = rows["02310003"]["Flags"]
    assert "not_on_roster (handed in through LMS account 104003" in flags
    assert "closest" not in flags and "02310002" not in flags
    assert "possible_submission" not in rows["02310002"]["Flags"]
    # an id a student typed wrong, outside an LMS download, still gets the closest roster id
    session(sub, "02310020", honest(), name="roofline-ledger-02310020.jsonl")
    rc, rows, _ = grade(tmp_path, config(tmp_path, correct=0), "--roster", str(roster),
                        "--force")
    assert "closest roster id: 02310002" in rows["02310020"]["Flags"]


# --- Canvas points and time zones --------------------------------------------------------------

def test_canvas_points_possible_are_printed_and_in_the_row_canvas_reads(tmp_path, capsys):
    session(tmp_path / "sub", "ada", honest())
    rc, rows, out = grade(tmp_path, config(tmp_path, correct=1.5, items=(X, R)))
    with open(out / "canvas.csv", newline="", encoding="utf-8-sig") as f:
        canvas = list(csv.reader(f))
    assert canvas[1][0] == "Points Possible" and canvas[1][5:] == ["8.0"]  # 2 x (1+.5+1+1.5)
    console = capsys.readouterr().out
    assert "Canvas points possible per assignment" in console and f"{TITLE} 8" in console
    assert f"{TITLE} 8" in (out / "README.txt").read_text(encoding="utf-8")


def test_named_time_zones_follow_daylight_saving(tmp_path):
    path = tmp_path / "tz.toml"
    path.write_text(textwrap.dedent("""
        [course]
        timezone = "America/New_York"
        [labs.lab01]
        deadline = 2025-03-07T23:59:00
        [labs.lab02]
        deadline = "2025-03-14T23:59 America/New_York"
        [labs.lab02.extensions]
        ada = 2025-03-16T12:00:00
        """), encoding="utf-8")
    cfg = grading.load_config(path)
    # EST (UTC-5) before 9 March 2025, EDT (UTC-4) after
    assert cfg.labs["lab01"].deadline == datetime(2025, 3, 8, 4, 59, tzinfo=timezone.utc)
    assert cfg.labs["lab02"].deadline == datetime(2025, 3, 15, 3, 59, tzinfo=timezone.utc)
    assert cfg.labs["lab02"].extensions["ada"] == datetime(2025, 3, 16, 16, 0,
                                                          tzinfo=timezone.utc)
    path.write_text('[course]\ntimezone = "America/New_Yrok"\n', encoding="utf-8")
    with pytest.raises(grading.ConfigError, match="America/New_York"):
        grading.load_config(path)
    path.write_text("[labs.lab01]\ndeadline = 2025-03-07T23:59:00\n", encoding="utf-8")
    with pytest.raises(grading.ConfigError, match="has no time zone.*timezone"):
        grading.load_config(path)


def test_the_example_config_uses_a_named_zone_and_parses(tmp_path, capsys):
    assert grading.main(["--example-config"]) == 0
    text = capsys.readouterr().out
    assert 'timezone = "America/New_York"' in text and "-05:00" not in text
    text = "\n".join(x for x in text.splitlines() if not x.startswith("file ="))
    (tmp_path / "c.toml").write_text(text, encoding="utf-8")
    cfg = grading.load_config(tmp_path / "c.toml")
    assert cfg.labs["lab01"].deadline.utcoffset() == timedelta(0)


# --- less noise ----------------------------------------------------------------------------------

def test_a_file_uploaded_twice_is_flagged_once_and_noted_once(tmp_path):
    sub = tmp_path / "sub"
    torn = session(sub, "ada", honest() + honest(item=R, value="memory-bound"),
                   name="lovelaceada_104001_5000001_roofline-ledger-ada.jsonl")
    torn.write_bytes(torn.read_bytes()[:-20])  # a torn tail
    (sub / "lovelaceada_104001_5000002_roofline-ledger-ada-1.jsonl").write_bytes(
        torn.read_bytes())
    _, rows, _ = grade(tmp_path, config(tmp_path, correct=0, items=(X, R)))
    flags = rows["ada"]["Flags"]
    assert flags.count("torn_tail") == 1, flags
    assert "and its copy lovelaceada_104001_5000002_roofline-ledger-ada-1.jsonl" in flags


def test_labs_handed_in_as_separate_assignments_are_no_duplicate_note(tmp_path, capsys):
    """The same growing ledger handed in to each lab's assignment: no note; the same file
    twice: one note."""
    sub = tmp_path / "sub"
    whole = session(sub / "full", "ada", honest() + honest(item=R, value="memory-bound"))
    lines = whole.read_bytes().splitlines(keepends=True)
    (sub / "first").mkdir()
    (sub / "first" / whole.name).write_bytes(b"".join(lines[:5]))
    session(sub / "twice", "bob", honest())
    (sub / "twice2").mkdir()
    (sub / "twice2" / "roofline-ledger-bob.jsonl").write_bytes(
        (sub / "twice" / "roofline-ledger-bob.jsonl").read_bytes())
    rc, rows, _ = grade(tmp_path, config(tmp_path, correct=0, items=(X, R)))
    assert "duplicates_merged" not in rows["ada"]["Notes"] + rows["ada"]["Flags"]
    assert "duplicates_merged" in rows["bob"]["Notes"]


def test_canvas_test_student_is_not_graded_and_a_clean_class_exits_0(tmp_path, capsys):
    sub = tmp_path / "sub"
    session(sub, "02310001", honest(), name="lovelaceada_104001_5000001_roofline-ledger-"
                                              "02310001.jsonl")
    session(sub, "teststudent", honest(), name="studenttest_999001_5000009_roofline-ledger-"
                                                "teststudent.jsonl")
    roster = _canvas_roster(tmp_path / "roster.csv", [
        ["Lovelace, Ada", "104001", "02310001", "alovelace", "S1"],
        ["Student, Test", "999001", "", "", "S1"]])
    rc, rows, out = grade(tmp_path, config(tmp_path, correct=0), "--roster", str(roster))
    assert rc == 0, capsys.readouterr().out
    assert set(rows) == {"02310001"}
    assert "test student" in (out / "README.txt").read_text(encoding="utf-8")


@pytest.mark.parametrize("labs, status", [(("lab01", "lab02"), "Unreadable submission"),
                                          (("lab01", "lab02", "lab03"), "Missing")])
def test_one_empty_upload_marks_an_empty_lab_only_when_it_can_account_for_it(tmp_path, labs,
                                                                           status):
    sub = tmp_path / "sub"
    session(sub, "ada", honest())
    (sub / "roofline-ledger-ada (1).jsonl").write_bytes(b"")
    cfg = grading.CourseConfig(configured=True, labs={
        lab: grading.LabConfig(lab, lab, items=[X] if lab == "lab01" else []) for lab in labs})
    for lab in labs[1:]:
        cfg.labs[lab].items = [f"{lab}.x"]
    book = grading.grade(grading.load_ledgers([sub]), cfg)
    assert [book.grades[("ada", lab)].status for lab in labs[1:]] == [status] * (len(labs) - 1)
    flags = book.student_flags["ada"]
    assert any(f.startswith("unreadable_submission (roofline-ledger-ada (1).jsonl") for f in flags)
    if status == "Missing":
        assert any("may be the work of lab02, lab03" in f for f in flags)


def test_the_size_refusal_names_the_option_that_raises_it(tmp_path, capsys):
    sub = tmp_path / "sub"
    session(sub, "ada", honest())
    (sub / "roofline-ledger-bob.jsonl").write_bytes(b"{}\n" * 400_000)
    rc, rows, out = grade(tmp_path, None, "--max-file-mb", "1")
    assert "--max-file-mb raises it" in rows["bob"]["Flags"]
    assert "--max-file-mb" in capsys.readouterr().out


def test_help_names_every_exit_status(capsys):
    with pytest.raises(SystemExit):
        grading.main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    for status in ("0 graded", "1 graded", "2 usage", "3 the grader itself failed"):
        assert status in text, status
    assert "--merge" in text and "--lab" in text


def test_outside_canvas_the_submitters_folder_names_them(tmp_path):
    sub = tmp_path / "sub"
    session(sub / "alovelace", "02310001", honest(), name="my-work.jsonl")
    (sub / "bbabbage").mkdir(parents=True)
    (sub / "bbabbage" / "lab1.jsonl").write_bytes(b"")  # empty, in Bo's folder
    roster = tmp_path / "roster.csv"
    roster.write_text("Name,SIS User ID,SIS Login ID\nAda,02310001,alovelace\n"
                      "Bo,02310002,bbabbage\n", encoding="utf-8")
    _, rows, _ = grade(tmp_path, config(tmp_path, correct=0), "--roster", str(roster))
    assert set(rows) == {"02310001", "02310002"}
    assert float(rows["02310001"][TITLE]) == 2.5 and rows["02310001"]["Flags"] == ""
    assert rows["02310002"][f"{TITLE} - Status"] == "Unreadable submission"


def test_one_lab_is_graded_alone_with_one_canvas_column(tmp_path, capsys):
    sub = tmp_path / "sub"
    session(sub, "ada", honest())
    out = tmp_path / "out"
    assert grading.main([str(sub), "-o", str(out), "--lab", "lab01"]) in (0, 1)
    with open(out / "canvas.csv", newline="", encoding="utf-8-sig") as f:
        header = next(csv.reader(f))
    assert len(header) == 6 and header[5].startswith("Lab 1")
    assert grading.main([str(sub), "-o", str(tmp_path / "o2"), "--lab", "lab99"]) == 2
    assert "--lab lab99: not a lab" in capsys.readouterr().err


def test_a_year_old_ledger_is_flagged(tmp_path):
    session(tmp_path / "sub", "ada", honest(), start=DEADLINE - timedelta(days=365))
    session(tmp_path / "sub", "bob", honest())
    _, rows, _ = grade(tmp_path, config(tmp_path, correct=0))
    assert "old_timestamp" in rows["ada"]["Flags"] and "old_timestamp" not in rows["bob"]["Flags"]


def test_without_a_deadline_old_is_measured_against_the_class_not_one_clock(tmp_path):
    """A lab with no deadline: an event is old against the median of the files' newest events.
    Ada worked a year before the class and is flagged; Cy's clock runs a year ahead, which
    makes no one else old (against the newest event every classmate would be)."""
    session(tmp_path / "sub", "ada", honest(), start=DEADLINE - timedelta(days=365))
    session(tmp_path / "sub", "bob", honest())
    session(tmp_path / "sub", "dee", honest())
    session(tmp_path / "sub", "cy", honest(), start=DEADLINE + timedelta(days=365))
    _, rows, _ = grade(tmp_path)  # no course file: the lab seen, no deadline
    assert "old_timestamp" in rows["ada"]["Flags"]
    assert [s for s in ("bob", "cy", "dee") if "old_timestamp" in rows[s]["Flags"]] == []


def test_blackboards_receipts_are_not_unreadable_submissions(tmp_path, capsys):
    sub = tmp_path / "sub"
    session(sub, "ada", honest(), name="Lab 1_ada_attempt_2025-03-06-10-00-00_roofline-ledger-"
                                       "ada.jsonl")
    (sub / "Lab 1_ada_attempt_2025-03-06-10-00-00.txt").write_text(
        "Name: Ada Lovelace (ada)\nAssignment: Lab 1\nDate Submitted: Thursday, March 6, "
        "2025 10:00:00 AM EST\nCurrent Grade: Needs Grading\n", encoding="utf-8")
    (sub / "receipt.txt").write_text("Name: Bo (bo)\nAssignment: Lab 1\nDate Submitted: x\n",
                                     encoding="utf-8")
    rc, rows, out = grade(tmp_path, config(tmp_path, correct=0))
    assert rc == 0 and set(rows) == {"ada"}
    files = (out / "files.csv").read_text(encoding="utf-8-sig")
    assert files.count("Blackboard's receipt of a submission") == 2


def test_a_per_item_points_file_is_written(tmp_path):
    session(tmp_path / "sub", "ada", honest() + honest(item=R, value="memory-bound"))
    _, _, out = grade(tmp_path, config(tmp_path, correct=0, items=(X, R)))
    rows = items_csv(out)
    assert [(r["student_id"], r["item_id"], r["points"]) for r in rows] == [
        ("ada", X, "2.5"), ("ada", R, "2.5")]


# --- --merge compares students as the grader does -----------------------------------------------

def test_merge_orders_and_matches_students_by_id_ignoring_case(tmp_path, capsys):
    """Ids compare ignoring case: merged shards keep the whole run's order (ada before Bob,
    although "B" sorts before "a"), and Ada in one shard and ada in another are one student
    with work in two shards."""
    session(tmp_path / "a", "Bob", honest())
    session(tmp_path / "b", "ada", honest())
    for shard in ("a", "b"):
        (tmp_path / "whole").mkdir(exist_ok=True)
        for f in (tmp_path / shard).iterdir():
            (tmp_path / "whole" / f"{shard}-{f.name}").write_bytes(f.read_bytes())
    cfg = config(tmp_path, correct=0)
    for name in ("a", "b", "whole"):
        grading.main([str(tmp_path / name), "-o", str(tmp_path / f"g-{name}"), "-c", str(cfg)])
    capsys.readouterr()
    assert grading.main(["--merge", "-o", str(tmp_path / "merged"), str(tmp_path / "g-a"),
                   str(tmp_path / "g-b")]) == 0
    for name in ("gradebook.csv", "items.csv"):
        merged = (tmp_path / "merged" / name).read_bytes()
        assert merged == (tmp_path / "g-whole" / name).read_bytes(), name
    session(tmp_path / "c", "Ada", honest())
    grading.main([str(tmp_path / "c"), "-o", str(tmp_path / "g-c"), "-c", str(cfg)])
    capsys.readouterr()
    assert grading.main(["--merge", "-o", str(tmp_path / "twice"), str(tmp_path / "g-b"),
                   str(tmp_path / "g-c")]) == 1
    assert "has work graded in" in capsys.readouterr().out
