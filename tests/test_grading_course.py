"""No silent Missing, identity, configuration, what instructors expect."""

from __future__ import annotations

import csv
import html
import re
from datetime import timedelta
from pathlib import Path

import pytest

from labs.core import catalogue
from labs.core import grading
from labs.core import ledger
from grading_support import (R, T0, X, _ts, assert_flags_explained, honest_session,
                             write_class)

T1 = catalogue.lab("lab01").title  # an unconfigured lab is titled as the lab titles itself


def _rows(path: Path, key: str = "SIS User ID") -> dict[str, dict]:
    with open(path, newline="", encoding="utf-8-sig") as f:
        return {r[key]: r for r in csv.DictReader(f)}


def _session_bytes(tmp_path: Path, sid: str, **kw) -> bytes:
    led = ledger.Ledger(sid, tmp_path / "work" / f"{sid}-{len(kw)}")
    honest_session(led, **kw)
    return led.path.read_bytes()


# -- §2 No silent Missing ----------------------------------------------------------------------

@pytest.fixture
def unreadable_class(tmp_path):
    sub = write_class(tmp_path / "sub", tmp_path / "work", ids=("ada",))
    good = {sid: _session_bytes(tmp_path, sid) for sid in ("bob", "cy", "gus")}
    (sub / "roofline-ledger-bob.jsonl").write_bytes(good["bob"].decode().encode("utf-16"))
    (sub / "roofline-ledger-cy.jsonl").write_bytes(b"\xef\xbb\xbf" + good["cy"])
    (sub / "roofline-ledger-dee.jsonl").write_bytes(bytes(range(256)) * 20)
    (sub / "roofline-ledger-eve.jsonl").write_bytes(b"")
    (sub / "roofline-ledger-fay.jsonl").write_bytes(b"{}\n" * 400_000)  # over a 1 MB limit
    (sub / "roofline-ledger-gus.jsonl").write_bytes(
        "not a ledger at all\n".encode("utf-16"))
    (sub / ".roofline-ledger-ada.lock").write_bytes(b"")  # the lab's lock side file
    (sub / "ada" / ".roofline-ledger-ada.lock").write_bytes(b"")
    return sub


def test_unreadable_files_are_named_and_never_silently_missing(unreadable_class, tmp_path,
                                                                capsys):
    out = tmp_path / "out"
    rc = grading.main([str(unreadable_class), "-o", str(out), "--max-file-mb", "1"])
    console = capsys.readouterr().out
    assert rc == 1  # problems were found
    rows = _rows(out / "gradebook.csv")
    for sid in ("ada", "bob", "cy"):  # UTF-16 and UTF-8-with-BOM ledgers are read
        assert float(rows[sid][T1]) == 5.0, rows[sid]
    for sid, reason in (("dee", "not a ledger"), ("eve", "empty"), ("fay", "too large"),
                        ("gus", "re-save as UTF-8")):
        row = rows[sid]
        assert row[f"{T1} - Status"] == "Unreadable submission", row
        assert "unreadable_submission" in row["Flags"] and reason in row["Flags"], row
        line = next(ln for ln in console.splitlines() if f"roofline-ledger-{sid}.jsonl (" in ln)
        assert f"student {sid}" in line and reason in line, line
    assert "UTF-16" in rows["bob"]["Notes"]
    with open(out / "files.csv", newline="", encoding="utf-8-sig") as f:
        sources = [r["source"] for r in csv.DictReader(f)]
    assert not any(s.endswith(".lock") for s in sources)  # side files are not inputs


def test_a_student_with_one_unreadable_file_is_not_missing_in_other_labs(tmp_path):
    sub = write_class(tmp_path / "sub", tmp_path / "work", ids=("ada",))
    (sub / "roofline-ledger-ada (1).jsonl").write_bytes(b"\x00\x01binary")
    cfg = grading.CourseConfig(configured=True, labs={
        "lab01": grading.LabConfig("lab01", "Lab 1", items=[X, R]),
        "lab02": grading.LabConfig("lab02", "Lab 2", items=["lab02.oom_batch"])})
    book = grading.grade(grading.load_ledgers([sub]), cfg)
    assert book.grades[("ada", "lab01")].status == "Submitted"
    assert book.grades[("ada", "lab02")].status == "Unreadable submission"


# -- §3 Identity -------------------------------------------------------------------------------

def _roster(tmp_path: Path, rows: list[tuple[str, str, str]]) -> Path:
    path = tmp_path / "roster.csv"
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["Name", "SIS User ID", "Email"])
        w.writerows(rows)
    return path


ROSTER = [("Ada Lovelace", " Ada ", "ada@uni.edu"), ("Bob Smith", "bob", "bob@uni.edu"),
          ("Carol Jones", "carol", "carol@uni.edu")]


def test_roster_identity_mismatches_and_id_rule(tmp_path):
    sub = write_class(tmp_path / "sub", tmp_path / "work", ids=("ada", "carl"))
    (sub / "bob").mkdir()  # bob's folder holds a file named for bob with dan's events
    (sub / "bob" / "roofline-ledger-bob.jsonl").write_bytes(_session_bytes(tmp_path, "dan"))
    cfg = grading.load_config(None)
    cfg.roster = grading.load_roster(_roster(tmp_path, ROSTER))
    book = grading.grade(grading.load_ledgers([sub]), cfg)
    flags = {s: " ".join(book.student_flags[s]) for s in book.students}
    # ids compare after stripping and case-folding: the roster's " Ada " is ada, spelt as listed
    assert "Ada" in book.students and "ada" not in book.students
    assert book.grades[("Ada", "lab01")].points == 5.0 and flags["Ada"] == ""
    # an id not on the roster: flagged with the closest roster id; carol is not silently Missing
    assert "not_on_roster (closest roster id: carol)" in flags["carl"]
    assert book.grades[("carol", "lab01")].status == "Missing"
    assert "possible_submission (carl" in flags["carol"]
    # a file named for bob holding dan's events: flagged on both rows
    assert "id_mismatch" in flags["bob"] and "dan" in flags["bob"]
    assert "id_mismatch" in flags["dan"] and "roofline-ledger-bob.jsonl" in flags["dan"]
    assert_flags_explained(book)


def test_names_and_emails_pass_through_from_the_roster(tmp_path):
    sub = write_class(tmp_path / "sub", tmp_path / "work", ids=("ada",))
    out = tmp_path / "out"
    assert grading.main([str(sub), "-o", str(out), "--roster",
                   str(_roster(tmp_path, ROSTER))]) in (0, 1)
    rows = _rows(out / "gradebook.csv")
    assert list(next(iter(rows.values())))[:3] == ["SIS User ID", "Name", "Email"]
    assert (rows["Ada"]["Name"], rows["Ada"]["Email"]) == ("Ada Lovelace", "ada@uni.edu")
    assert rows["carol"][f"{T1} - Status"] == "Missing"


@pytest.mark.parametrize("a, b, same", [(" Ada ", "ada", True), ("ADA", "ada", True),
                                        ("ada1", "ada", False), ("ａｄａ", "ada", True)])
def test_id_comparison_rule(a, b, same):
    assert (grading.norm_id(a) == grading.norm_id(b)) is same


def test_id_rule_applies_to_receipts_overrides_and_extensions(tmp_path):
    led = ledger.Ledger("ada", tmp_path / "l")
    honest_session(led, start=60 * 24 + 5)  # after the deadline below
    cfg_path = tmp_path / "c.toml"
    cfg_path.write_text(f"""
[labs.lab01]
deadline = {(T0 + timedelta(days=1)).strftime('%Y-%m-%dT%H:%M:%SZ')}
[labs.lab01.extensions]
" ADA" = "2d"
""")
    overrides = tmp_path / "o.csv"
    overrides.write_text(f"student,item,points,comment\nAda ,{X},2,checked by hand\n")
    receipts = tmp_path / "r.csv"
    receipts.write_text(f"ADA,{'f' * 16}\n")
    cfg = grading.load_config(cfg_path)
    book = grading.grade(grading.load_ledgers([led.path]), cfg, receipts=grading.read_receipts(receipts),
                   overrides=grading.load_overrides(overrides))
    g = book.grades[("ada", "lab01")]
    assert g.status == "On time"  # the extension applied
    assert next(i for i in g.items if i.item_id == X).points == 2.0  # the override applied
    assert "receipt_missing" in " ".join(book.student_flags["ada"])


# -- §4 Configuration that cannot silently misgrade --------------------------------------------

@pytest.mark.parametrize("body, words", [
    ("[labs.lab01.rubrik]\ncommit = 2\n", ["labs.lab01.rubrik", "rubric"]),
    ("[labs.lab01]\ntitel = 'x'\n", ["labs.lab01.titel", "title"]),
    ("[course]\nlate_polcy = 'report'\n", ["course.late_polcy", "late_policy"]),
    ("[lab.lab01]\n", ["lab", "labs"]),
    ("[labs.lab1]\n", ["labs.lab1", "lab01"]),
    ("[labs.lab01]\nitems = []\n", ["labs.lab01.items", "no items"]),
    (f"[labs.lab01]\nitems = ['{X}x']\n", [f"{X}x", X]),
    ("[labs.lab01.rubric]\ncomit = 1\n", ["labs.lab01.rubric.comit", "commit"]),
])
def test_config_errors_name_the_key_and_close_matches(tmp_path, body, words):
    path = tmp_path / "c.toml"
    path.write_text(body)
    with pytest.raises(grading.ConfigError) as info:
        grading.load_config(path)
    for w in words:
        assert w in str(info.value)


def _answers(tmp_path: Path, lab: str, answers: str):
    path = tmp_path / "c.toml"
    path.write_text(f"[labs.{lab}]\nanswers = {{ {answers} }}\n", encoding="utf-8")
    return grading.load_config(path).labs[lab].answers


def test_answers_take_an_option_label_or_a_quoted_number_as_the_ledger_records_them(tmp_path):
    """An answer written as the option's label, or a number in quotes, is
    what the ledger records (the option's value, a number), so it can match a student's."""
    item = catalogue.item(R)
    label, value = item.options[0]
    assert label != value
    assert _answers(tmp_path, "lab01", f'"{R}" = "{label}", "{X}" = "300"') == {
        R: value, X: 300.0}
    assert _answers(tmp_path, "lab01", f'"{R}" = "  {label.upper()} "') == {R: value}
    sub = write_class(tmp_path / "sub", tmp_path / "work", ids=("ada",))  # predicts 300, and
    cfg = tmp_path / "c.toml"  # honest_session's choice value
    cfg.write_text(f'[labs.lab01]\nitems = ["{X}", "{R}"]\nanswers = {{ "{X}" = "300", '
                   f'"{R}" = "{item.label_of("memory-bound")}" }}\n', encoding="utf-8")
    book = grading.grade(grading.load_ledgers([sub]), grading.load_config(cfg))
    assert book.grades[("ada", "lab01")].correct_text == "2/2"
    tile = catalogue.item("lab04.largest_tile")  # options whose values are numbers
    tile_label, tile_value = tile.options[1]
    assert isinstance(tile_value, int)
    for written in (f'"{tile_label}"', f'"{tile_value}"', str(tile_value), f"{tile_value}.0"):
        got = _answers(tmp_path, "lab04", f'"lab04.largest_tile" = {written}')
        assert got == {"lab04.largest_tile": tile_value} and type(got[tile.item_id]) is int


@pytest.mark.parametrize("item, written, words", [
    (R, '"the memory one"', ["not an option", "memory-bound", "compute-bound", "broken"]),
    (R, "1", ["not an option", "memory-bound"]),
    (R, "true", ["not an option"]),
    ("lab04.largest_tile", '"sixty-four"', ["not an option", "64", "64 × 64"]),
    (X, '"443 ms"', ["asks for a number", "'443 ms'"]),
    (X, "0", ["other than 0"]),
    (X, '"nan"', ["finite"]),
    (X, "true", ["asks for a number"]),
    (X, "[443]", ["asks for a number"]),
])
def test_an_answer_no_ledger_can_record_is_a_config_error(tmp_path, item, written, words):
    """A value that no student's ledger can ever equal would mark the whole
    class wrong; it is an error naming the item and the values it takes."""
    with pytest.raises(grading.ConfigError) as info:
        _answers(tmp_path, item.split(".")[0], f'"{item}" = {written}')
    assert f"answers.\"{item}\"" in str(info.value)
    for w in words:
        assert w in str(info.value), str(info.value)


def test_example_config_lists_each_choices_values(capsys):
    assert grading.main(["--example-config"]) == 0
    text = capsys.readouterr().out
    for item in catalogue.items():
        if item.kind == "choice":
            shown = " | ".join(f'"{v}"' if isinstance(v, str) else str(v)
                               for _, v in item.options)
            assert f"#   values: {shown}" in text, item.item_id
    assert "its label also works" in text


def test_a_lab_with_no_items_is_an_error(tmp_path):
    labs_dir = tmp_path / "labs"
    labs_dir.mkdir()
    (labs_dir / "lab_01_x.py").write_text(
        'import marimo\napp = marimo.App()\n@app.cell\ndef _():\n    LAB_ID = "labx"\n'
        '    return\n')
    path = tmp_path / "c.toml"
    path.write_text("[labs.labx]\n")
    with pytest.raises(grading.ConfigError, match="labs.labx.*no prediction items"):
        grading.load_config(path, labs_dir=labs_dir)


def test_example_config_is_generated_from_the_labs(tmp_path, capsys):
    assert grading.main(["--example-config"]) == 0
    text = capsys.readouterr().out
    positions = [text.index(i.item_id) for i in catalogue.items()]
    assert positions == sorted(positions)  # every item, in lab order
    for entry in catalogue.catalogue():
        assert f"[labs.{entry.lab_id}]" in text and entry.title in text
    (tmp_path / "labs").symlink_to(catalogue.LABS_DIR)
    (tmp_path / "c.toml").write_text(text)
    cfg = grading.load_config(tmp_path / "c.toml")
    assert [lab.lab_id for lab in cfg.labs.values()] == [e.lab_id for e in catalogue.catalogue()]
    assert cfg.labs["lab01"].items == catalogue.lab("lab01").item_ids


def test_example_config_follows_a_new_lab(tmp_path):
    labs_dir = tmp_path / "labs"
    labs_dir.mkdir()
    (labs_dir / "lab_09_new.py").write_text(
        "import marimo\napp = marimo.App()\n@app.cell\ndef _(quiz, lab):\n"
        '    LAB_ID = "lab09"\n'
        '    f = quiz.numeric_form(lab, "lab09.speed", question="How fast?", units="x",\n'
        "                          lo=1, hi=10, locked=None, on_lock=None)\n    return\n")
    text = grading.example_config(labs_dir)
    assert "[labs.lab09]" in text and "lab09.speed" in text and "How fast?" in text


# -- §5 Extensions, overrides, feedback, LMS -------------------------------------------------

def _late_class(tmp_path: Path, ids: tuple[str, ...], extensions: str) -> tuple[Path, Path]:
    """Students ``ids`` whose lab 1 is 30 minutes late (half a point off per day), and a config
    whose ``[labs.lab01.extensions]`` table holds the line ``extensions``."""
    sub = write_class(tmp_path / "sub", tmp_path / "work", ids=ids, start=60 * 24 + 30)
    path = tmp_path / "c.toml"
    path.write_text(f"""
[course]
late_penalty_per_day = 0.5
[labs.lab01]
deadline = {(T0 + timedelta(days=1)).strftime('%Y-%m-%dT%H:%M:%SZ')}
items = ["{X}", "{R}"]
[labs.lab01.extensions]
{extensions}
""")
    return sub, path


def test_per_student_extensions(tmp_path):
    until = (T0 + timedelta(days=3)).strftime('%Y-%m-%dT%H:%M:%SZ')
    sub, path = _late_class(tmp_path, ("ada", "bob"), f"ada = {until}")
    book = grading.grade(grading.load_ledgers([sub]), grading.load_config(path))
    ada, bob = book.grades[("ada", "lab01")], book.grades[("bob", "lab01")]
    assert (ada.status, ada.points) == ("On time", 5.0)
    assert (bob.status, bob.points) == ("Late", 2.5)
    assert "extension" in " ".join(book.notes["ada"])


def _extension_class(tmp_path: Path, key: str) -> tuple[Path, Path]:
    """One student, 02310222, whose lab 1 is 30 minutes late; an extension keyed ``key``."""
    return _late_class(tmp_path, ("02310222",), f'"{key}" = "1d"')


@pytest.mark.parametrize("key", ["2310222", "002310222"])
def test_without_a_roster_an_extension_with_leading_zeros_lost_or_added_is_an_error(
        tmp_path, capsys, key):
    """Without a roster, an extension keyed by a graded student's id whose
    leading zeros were lost (or added) was silently not applied; it is a config error naming
    the student (exit 2, nothing written)."""
    sub, cfg = _extension_class(tmp_path, key)
    with pytest.raises(grading.ConfigError) as info:
        grading.grade(grading.load_ledgers([sub]), grading.load_config(cfg))
    assert "labs.lab01.extensions" in str(info.value) and "'02310222'" in str(info.value)
    assert "leading zeros" in str(info.value)
    assert grading.main([str(sub), "-c", str(cfg), "-o", str(tmp_path / "o")]) == 2
    assert not (tmp_path / "o").exists() and "'02310222'" in capsys.readouterr().err


def test_without_a_roster_an_extension_naming_no_graded_student_is_reported(tmp_path, capsys):
    """An extension for a student who handed in nothing (or a wrong id) is
    not applied to anyone, and the console says so (exit 1), with the close ids."""
    sub, cfg = _extension_class(tmp_path, "02310223")
    book = grading.grade(grading.load_ledgers([sub]), grading.load_config(cfg))
    assert book.grades[("02310222", "lab01")].status == "Late"
    assert len(book.warnings) == 1 and "'02310223'" in book.warnings[0]
    assert "'02310222'" in book.warnings[0] and "not applied" in book.warnings[0]
    out = tmp_path / "o"
    assert grading.main([str(sub), "-c", str(cfg), "-o", str(out)]) == 1
    console = capsys.readouterr().out
    assert "The course config names something the class does not have" in console
    assert "labs.lab01.extensions: '02310223'" in console
    assert "02310223" in (out / "README.txt").read_text(encoding="utf-8")
    sub2, cfg2 = _extension_class(tmp_path / "exact", "02310222")  # the id itself: applied
    book = grading.grade(grading.load_ledgers([sub2]), grading.load_config(cfg2))
    assert book.warnings == [] and book.grades[("02310222", "lab01")].status == "On time"


@pytest.mark.parametrize("bad, words", [
    ("carl,{X},1,x", ["row 2", "carl", "carol"]),
    ("ada,{X}z,1,x", ["row 2", f"{X}z", X]),
    ("ada,{X},lots,x", ["row 2", "points", "lots"]),
    ("ada,{X},-1,x", ["row 2", "points"]),
])
def test_override_errors_name_row_and_close_matches(tmp_path, bad, words):
    path = tmp_path / "o.csv"
    path.write_text("student,item,points,comment\n" + bad.format(X=X) + "\n")
    cfg = grading.load_config(None)
    cfg.roster = grading.load_roster(_roster(tmp_path, ROSTER))
    led = ledger.Ledger("ada", tmp_path / "l")
    honest_session(led)
    with pytest.raises(grading.ConfigError) as info:
        grading.grade(grading.load_ledgers([led.path]), cfg, overrides=grading.load_overrides(path))
    for w in words:
        assert w in str(info.value)


def test_overrides_are_merged_with_their_comment(tmp_path):
    sub = write_class(tmp_path / "sub", tmp_path / "work", ids=("ada",))
    path = tmp_path / "o.csv"
    path.write_text(f"student,item,points,comment\nada,{X},1.25,"
                    "\"explanation misses the ridge, <b>see me</b>\"\n")
    out = tmp_path / "out"
    grading.main([str(sub), "-o", str(out), "--overrides", str(path)])
    row = _rows(out / "gradebook.csv")["ada"]
    assert float(row[T1]) == 2.5 + 1.25
    assert "override" in row["Notes"] and "misses the ridge" in row["Notes"]
    page = (out / "feedback" / "ada.html").read_text(encoding="utf-8")
    assert "misses the ridge" in page and "<b>see me</b>" not in page


def test_feedback_page_per_student(tmp_path):
    sub = write_class(tmp_path / "sub", tmp_path / "work", ids=("ada", "bob"))
    evil = ledger.Ledger("eve", tmp_path / "work" / "eve")
    evil.append("predict", lab_id="lab01", item_id=X, ts=_ts(1), lab_version="v1",
                payload={"value": 300, "answer_type": "numeric", "confidence": 2,
                         "reason": "<script>alert(1)</script> & <img src=x onerror=alert(2)>"})
    evil.append("explain", lab_id="lab01", item_id=R, ts=_ts(0), lab_version="v1",
                payload={"text": "</td><h1>injected</h1>"})
    (sub / "eve").mkdir()
    (sub / "eve" / evil.path.name).write_bytes(evil.path.read_bytes())
    out = tmp_path / "out"
    grading.main([str(sub), "-o", str(out)])
    pages = sorted(p.name for p in (out / "feedback").glob("*.html"))
    assert pages == ["ada.html", "bob.html", "eve.html", "index.html"]
    ada = (out / "feedback" / "ada.html").read_text(encoding="utf-8")
    # their predictions vs what the instruments showed, with the lab's question text
    assert catalogue.item(X).text.split("?")[0][:40] in html.unescape(ada)
    assert "300" in ada and "886" in ada
    g = grading.grade(grading.load_ledgers([sub])).grades[("ada", "lab01")]
    assert f"{g.points:g} / {g.max_points:g}" in ada
    assert "Calibration" in ada
    eve = (out / "feedback" / "eve.html").read_text(encoding="utf-8")
    assert "<script>" not in eve and "<img" not in eve and "<h1>injected" not in eve
    assert "&lt;script&gt;" in eve
    assert "ts_backwards" in eve and "How to fix" in eve  # flags and how to fix them
    assert not re.search(r"<script|https?://", eve)  # self-contained, nothing fetched


# -- LMS import formats ------------------------------------------------------------------------

_CANVAS_RESERVED = ("Student", "LastName", "FirstName", "ID", "SIS User ID", "SIS Login ID",
                    "Section", "Integration ID", "Root Account")
_CANVAS_NON_ASSIGNMENT = re.compile("Current Score|Current Points|Current Grade|Final Score|"
                                    "Final Points|Final Grade|Override Score|Override Grade|"
                                    "Override Status")


def canvas_import(path: Path) -> tuple[dict[str, float], dict[str, dict[str, str]]]:
    """What Canvas's gradebook importer makes of a CSV (its header rules, re-stated from its
    source): the assignments each non-student column becomes (with points possible from a
    "Points Possible" row) and each student's grades, keyed by SIS User ID."""
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    assert len(head) > 3 and "Student" in head[0] and "ID" in head[1], head
    n = 3
    if re.search(r"SIS\s+Login\s+ID", head[2]):
        n = 4
    elif re.search(r"SIS\s+User\s+ID", head[2]) and re.search(r"SIS\s+Login\s+ID", head[3]):
        n = 5 + bool(re.search(r"Integration\s+ID", head[4]))
    assert "Section" in head[n - 1], "the last student column must be Section"
    assignments = [h for h in head[n:] if not _CANVAS_NON_ASSIGNMENT.search(h)]
    assert not set(assignments) & set(_CANVAS_RESERVED)
    assert len(set(assignments)) == len(assignments)
    points = {}
    grades = {}
    for row in rows[1:]:
        if "Points Possible" in row[0]:
            points = {h: float(row[head.index(h)]) for h in assignments}
            continue
        sis = row[2]
        grades[sis] = {h: row[head.index(h)] for h in assignments}
        for v in grades[sis].values():
            assert v == "" or re.fullmatch(r"-?\d+(\.\d+)?", v), v
    return points, grades


def test_canvas_csv_follows_canvas_import_rules(tmp_path):
    sub = write_class(tmp_path / "sub", tmp_path / "work", ids=("ada",))
    (sub / "roofline-ledger-dee.jsonl").write_bytes(b"\x00\x01")
    out = tmp_path / "out"
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[labs.lab01]\ntitle = "Roofline Lab 1"\nitems = ["{X}", "{R}"]\n'
                   '[labs.lab02]\ntitle = "Roofline Lab 2"\n')
    grading.main([str(sub), "-o", str(out), "-c", str(cfg), "--roster",
            str(_roster(tmp_path, ROSTER))])
    points, grades = canvas_import(out / "canvas.csv")
    n2 = len(catalogue.lab("lab02").items)
    assert points == {"Roofline Lab 1": 5.0, "Roofline Lab 2": 2.5 * n2}
    assert grades["Ada"]["Roofline Lab 1"] == "5.0"
    assert grades["carol"]["Roofline Lab 1"] == ""  # Missing: left blank, never a made-up 0
    assert "dee" not in grades  # not on the roster: Canvas would not know them
    assert "dee" in (out / "canvas-left-out.csv").read_text(encoding="utf-8-sig")


def test_an_item_override_of_a_missing_or_unreadable_lab_reaches_canvas_csv(tmp_path):
    """A hand regrade of one item (a file e-mailed in) for a student with no
    readable submission is in canvas.csv, as in gradebook.csv; a lab nobody graded stays
    blank."""
    sub = write_class(tmp_path / "sub", tmp_path / "work", ids=("ada",))
    (sub / "roofline-ledger-bob.jsonl").write_bytes(b"")  # unreadable
    overrides = tmp_path / "o.csv"
    overrides.write_text(f"student,item,points,comment\nbob,{X},2,by e-mail\n"
                         f"carol,{R},1.5,office hours\n")
    cfg = tmp_path / "c.toml"
    cfg.write_text(f'[labs.lab01]\ntitle = "Roofline Lab 1"\nitems = ["{X}", "{R}"]\n'
                   '[labs.lab02]\ntitle = "Roofline Lab 2"\n')
    out = tmp_path / "out"
    grading.main([str(sub), "-o", str(out), "-c", str(cfg), "--roster",
            str(_roster(tmp_path, ROSTER)), "--overrides", str(overrides)])
    book = _rows(out / "gradebook.csv")
    assert book["bob"]["Roofline Lab 1 - Status"] == "Unreadable submission"
    assert book["carol"]["Roofline Lab 1 - Status"] == "Missing"
    _, grades = canvas_import(out / "canvas.csv")
    assert grades["bob"]["Roofline Lab 1"] == "2.0" == book["bob"]["Roofline Lab 1"]
    assert grades["carol"]["Roofline Lab 1"] == "1.5" == book["carol"]["Roofline Lab 1"]
    assert grades["bob"]["Roofline Lab 2"] == grades["carol"]["Roofline Lab 2"] == ""


def test_no_gradescope_file_is_claimed(tmp_path):
    """Gradescope documents no CSV import of scores: no file pretends to be one."""
    sub = write_class(tmp_path / "sub", tmp_path / "work", ids=("ada",))
    out = tmp_path / "out"
    grading.main([str(sub), "-o", str(out), "--roster", str(_roster(tmp_path, ROSTER))])
    assert not (out / "gradescope.csv").exists()
    assert "gradescope" not in (out / "README.txt").read_text(encoding="utf-8").split("\n\n", 1)[1]


def test_the_course_page_says_what_an_edited_line_costs():
    text = (Path(__file__).parents[1] / "docs" / "instructors" / "index.md").read_text(
        encoding="utf-8")
    section = text.split("## 2. Write the course file", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"edited line[^.]*earns nothing", section)


def test_the_late_penalty_is_described_as_the_grader_applies_it(tmp_path):
    """The penalty is taken from each late part, not from the lab's points:
    the course page, the example config and the scoring agree (one explanation of an item,
    1 point, 1 started day late at 0.25 a day loses 0.25, not a quarter of the lab)."""
    text = (Path(__file__).parents[1] / "docs" / "instructors" / "index.md").read_text(
        encoding="utf-8")
    words = " ".join(text.split())
    assert "lab's points per started day" not in words
    assert "taken from each part done late, not from the whole lab" in words
    assert "lab's points per started day" not in grading.example_config()
    led = ledger.Ledger("ada", tmp_path / "work")
    honest_session(led)  # 10 events a minute apart; the last item's explain at minute 10
    deadline = T0 + timedelta(minutes=9, seconds=30)  # only that explanation is after it
    cfg = tmp_path / "c.toml"
    cfg.write_text(f"[course]\nlate_penalty_per_day = 0.25\n[labs.lab01]\n"
                   f"items = [\"{X}\", \"{R}\"]\n"
                   f"deadline = {deadline.strftime('%Y-%m-%dT%H:%M:%SZ')}\n")
    g = grading.grade(grading.load_ledgers([led.path]), grading.load_config(cfg)).grades[("ada", "lab01")]
    assert g.status == "Late"
    assert g.points == pytest.approx(5.0 - 1.0 * 0.25)  # 1 started day: the part keeps 0.75


def test_an_lms_copy_suffix_is_the_same_student(tmp_path):
    """Canvas renames a resubmission ada-1.jsonl: no phantom student, no false mismatch; an
    unreadable copy still lands on ada's row."""
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / "roofline-ledger-ada-1.jsonl").write_bytes(_session_bytes(tmp_path, "ada"))
    (sub / "roofline-ledger-ada-2.jsonl").write_bytes(b"\x00\x01")
    book = grading.grade(grading.load_ledgers([sub]))
    assert book.students == ["ada"]
    flags = " ".join(book.student_flags["ada"])
    assert "id_mismatch" not in flags and "unreadable_submission (roofline-ledger-ada-2" in flags
