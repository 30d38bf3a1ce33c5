"""labs-grade: good, tampered, reordered, duplicated, malformed, late and recovered ledgers."""

from __future__ import annotations

import csv
import json
import os
import shutil
import zipfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labs.core import catalogue
from labs.core import grading
from labs.core import ledger

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)
DEADLINE = T0 + timedelta(days=1)
GOOD_VERSION = "sha256:1111111111111111"


def _ts(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _lab_session(led: ledger.Ledger, *, start=0.0, version=GOOD_VERSION, x_value=300,
                 reason="HBM is about 3 TB/s", explain="the copy is limited by bandwidth"):
    """A complete, honest run of lab01: two items, predict -> unlock -> result -> observe ->
    explain. Returns the events."""
    out = []
    t = start

    def add(kind, item, payload):
        nonlocal t
        t += 1
        out.append(led.append(kind, lab_id="lab01", item_id=item, payload=payload,
                              lab_version=version, session="s1", ts=_ts(t)))

    add("predict", "lab01.crossover_n", {"value": x_value, "answer_type": "numeric",
                                         "units": "GB/s", "confidence": 4, "reason": reason})
    add("unlock", "lab01.crossover_n", {"after_seq": 1})
    add("result", "lab01.crossover_n", {"actual": 2000.0, "ratio": 2000 / x_value})
    add("observe", "lab01.crossover_n", {"text": "2000 GB/s"})
    add("explain", "lab01.crossover_n", {"text": explain})
    add("predict", "lab01.which_roof", {"value": "memory", "label": "memory roof",
                                        "answer_type": "choice", "units": "", "confidence": 3,
                                        "reason": "copies do no math"})
    add("unlock", "lab01.which_roof", {})
    add("result", "lab01.which_roof", {"actual": "memory", "correct": True})
    add("observe", "lab01.which_roof", {"text": "memory roof"})
    add("explain", "lab01.which_roof", {"text": "arithmetic intensity is tiny"})
    return out


def _forged_line(student_id: str, seq: int, prev: str, **fields) -> tuple[bytes, str]:
    """A line with a *valid* hash for arbitrary content (anyone can compute one)."""
    ev = {"schema": 1, "seq": seq, "ts": _ts(seq), "student_id": student_id, "lab_id": "lab01",
          "lab_version": GOOD_VERSION, "item_id": "lab01.crossover_n", "kind": "predict",
          "payload": {"value": 1, "confidence": 3, "reason": "r"}, "session": "s",
          "prev_hash": prev}
    ev.update(fields)
    ev["hash"] = ledger.event_hash(ev)
    return ledger.event_line(ev), ev["hash"]


@pytest.fixture(scope="module")
def submissions(tmp_path_factory):
    """A folder as an LMS download gives it (one folder per student, a zip, odd files)."""
    work = tmp_path_factory.mktemp("ledgers")
    sub = tmp_path_factory.mktemp("submissions")

    def ledger_of(sid):
        return ledger.Ledger(sid, work / sid)

    # good
    ada = ledger_of("ada")
    ada_events = _lab_session(ada)
    (sub / "ada_1001").mkdir()
    shutil.copy(ada.path, sub / "ada_1001" / ada.path.name)

    # tampered: the first prediction edited after the fact (its hash no longer matches)
    bob = ledger_of("bob")
    _lab_session(bob, x_value=200)
    lines = bob.path.read_bytes().splitlines(keepends=True)
    lines[0] = lines[0].replace(b'"value":200', b'"value":2000')
    (sub / "bob_1002").mkdir()
    (sub / "bob_1002" / bob.path.name).write_bytes(b"".join(lines))

    # reordered: the explanation moved before the prediction
    cy = ledger_of("cy")
    _lab_session(cy)
    lines = cy.path.read_bytes().splitlines(keepends=True)
    lines.insert(0, lines.pop(4))
    (sub / "cy_1003").mkdir()
    (sub / "cy_1003" / cy.path.name).write_bytes(b"".join(lines))

    # duplicated: the same file handed in twice (a copy, and inside a zip in a zip)
    dee = ledger_of("dee")
    _lab_session(dee)
    (sub / "dee_1004").mkdir()
    shutil.copy(dee.path, sub / "dee_1004" / "roofline-ledger-dee.jsonl")
    shutil.copy(dee.path, sub / "dee_1004" / "roofline-ledger-dee (1).jsonl")
    inner = work / "inner.zip"
    with zipfile.ZipFile(inner, "w") as z:
        z.write(dee.path, "dee/roofline-ledger-dee.jsonl")
    with zipfile.ZipFile(sub / "dee_1004_resubmission.zip", "w") as z:
        z.write(inner, "inner.zip")
        z.writestr("notes.pdf", b"%PDF not a ledger")

    # malformed lines between good ones, and formula-looking text
    eve = ledger_of("eve")
    _lab_session(eve, reason="=HYPERLINK(\"http://evil\",\"x\")",
                 explain="@SUM(1+1) is what I think <script>alert(1)</script>")
    lines = eve.path.read_bytes().splitlines(keepends=True)
    hostile = [b"{not json\n", b"[" * 3000 + b"]" * 3000 + b"\n", b'{"seq": NaN}\n',
               b"\xff\xfe garbage\n", b'"x"\n']
    (sub / "eve_1005").mkdir()
    (sub / "eve_1005" / eve.path.name).write_bytes(b"".join(lines[:3] + hostile + lines[3:]))

    # late, and an unreleased lab version
    fay = ledger_of("fay")
    _lab_session(fay, start=60 * 26, version="sha256:9999999999999999")
    (sub / "fay_1006").mkdir()
    shutil.copy(fay.path, sub / "fay_1006" / fay.path.name)

    # a torn main file and its recovery file
    gus = ledger_of("gus")
    evs = _lab_session(gus)
    lines = gus.path.read_bytes().splitlines(keepends=True)
    (sub / "gus_1007").mkdir()
    (sub / "gus_1007" / gus.path.name).write_bytes(b"".join(lines[:5]) + lines[5][:40])
    rec = ledger.Ledger("gus", work / "gus-rec")
    for ev in evs[5:]:
        rec.append(ev["kind"], lab_id="lab01", item_id=ev["item_id"], payload=ev["payload"],
                   lab_version=GOOD_VERSION, session="s2", ts=ev["ts"])
    shutil.copy(rec.path, sub / "gus_1007" / "roofline-ledger-gus.recovery-1.jsonl")

    # hostile ids with valid hashes: formula-looking student id
    line, _ = _forged_line("=cmd|' /C calc'!A0", 1, ledger.GENESIS_HASH)
    (sub / "zz_evil.jsonl").write_bytes(line)
    # junk that must be skipped or reported, never crash
    (sub / "random.jsonl").write_bytes(os.urandom(3000))
    (sub / "empty.jsonl").write_bytes(b"")
    (sub / "broken.zip").write_bytes(b"PK\x03\x04 this is not really a zip")
    (sub / "big.jsonl").write_bytes(b"{}\n" * 400_000)  # 1.2 MB, over the test limit
    try:
        (sub / "link.jsonl").symlink_to(sub / "ada_1001" / ada.path.name)
    except OSError:
        pass
    return {"dir": sub, "ada_head": ada_events[-1]["hash"]}


@pytest.fixture(scope="module")
def config_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("cfg") / "course.toml"
    path.write_text(f"""
[course]
name = "test"
id_column = "SID"

[labs.lab01]
title = "Lab 1"
deadline = {DEADLINE.strftime('%Y-%m-%dT%H:%M:%SZ')}
versions = ["{GOOD_VERSION}"]
items = ["lab01.crossover_n", "lab01.which_roof"]

[labs.lab01.rubric]
commit = 1.0
reason = 0.5
explain = 1.0
correct = 0.0
min_explain_chars = 15
""")
    return path


@pytest.fixture(scope="module")
def graded(submissions, config_file):
    batch = grading.load_ledgers([submissions["dir"]], limits=grading.Limits(max_file_bytes=1_000_000))
    book = grading.grade(batch, grading.load_config(config_file))
    return batch, book


def test_every_flag_has_a_meaning_and_a_fix(graded):
    from grading_support import assert_flags_explained

    assert_flags_explained(graded[1])


def _flags(book, sid):
    g = book.grades[(sid, "lab01")]
    return " ".join(g.flags + book.student_flags[sid])


def test_good_ledger_earns_full_points_without_flags(graded):
    _, book = graded
    g = book.grades[("ada", "lab01")]
    assert (g.points, g.max_points, g.status) == (5.0, 5.0, "On time")
    assert _flags(book, "ada") == ""
    assert g.correct_text == "1/2"  # 300 vs 2000 GB/s is off by 6.7x; the choice was right
    assert all(i.committed and i.reasoned and i.explained for i in g.items)


def test_tampered_line_is_flagged_and_earns_nothing(graded):
    _, book = graded
    g = book.grades[("bob", "lab01")]
    assert "hash_mismatch (roofline-ledger-bob.jsonl: line 1)" in g.flags
    x = next(i for i in g.items if i.item_id == "lab01.crossover_n")
    assert not x.committed and not x.explained  # the edited prediction does not count
    assert g.points == 2.5


def test_reordered_ledger_is_flagged(graded):
    _, book = graded
    text = _flags(book, "cy")
    assert "chain_break (roofline-ledger-cy.jsonl: lines 1, 2, 6)" in text
    assert "seq_order (roofline-ledger-cy.jsonl: lines 2, 3, 4, 5)" in text
    # in the merged (time) order the explanation still follows the prediction, but the chain
    # shows the file was rearranged


def test_duplicates_are_merged_not_double_counted(graded):
    batch, book = graded
    g = book.grades[("dee", "lab01")]
    assert g.points == 5.0 and "duplicates_merged" in g.flags
    dee = batch.for_student("dee")
    assert len(dee) == 10 and all(e.duplicates == 2 for e in dee)  # 3 copies


def test_malformed_lines_are_reported_and_good_lines_still_count(graded):
    batch, book = graded
    assert book.grades[("eve", "lab01")].points == 5.0
    assert "malformed (roofline-ledger-eve.jsonl: lines 4, 5, 6, 7, 8)" in _flags(book, "eve")
    report = next(f for f in batch.files if f.source.endswith("roofline-ledger-eve.jsonl"))
    assert sum(p.startswith("malformed") for p in report.problems) == 5


def test_late_and_unknown_version(graded):
    _, book = graded
    g = book.grades[("fay", "lab01")]
    assert g.status == "Late" and grading.format_lateness(g.lateness) == "2:10:00"
    assert "unknown_lab_version (sha256:9999999999999999)" in g.flags


def test_recovery_file_is_merged(graded):
    _, book = graded
    g = book.grades[("gus", "lab01")]
    assert g.points == 5.0
    text = _flags(book, "gus")
    assert "recovery_merged" in text and "torn_tail (roofline-ledger-gus.jsonl: line 6)" in text


def test_junk_is_reported_never_fatal(graded):
    batch, _ = graded
    by_name = {Path(f.source.split("!")[-1]).name: f for f in batch.files}
    assert by_name["random.jsonl"].problems and by_name["random.jsonl"].events == 0
    assert by_name["empty.jsonl"].events == 0
    assert by_name["broken.zip"].problems == ["file_unreadable (not a valid zip)"]
    assert by_name["big.jsonl"].problems[0].startswith("file_too_large")
    assert by_name["notes.pdf"].skipped.startswith("not a ledger")
    if "link.jsonl" in by_name:
        assert "symbolic link" in by_name["link.jsonl"].skipped


def test_csv_outputs_are_neutralised(graded, tmp_path):
    batch, book = graded
    grading.write_csv(grading.gradebook_rows(book), tmp_path / "gb.csv")
    grading.write_csv(grading.event_rows(batch), tmp_path / "ev.csv", grading.EVENT_COLUMNS)
    for name in ("gb.csv", "ev.csv"):
        with open(tmp_path / name, newline="", encoding="utf-8-sig") as f:
            for row in csv.reader(f):
                for cell in row:
                    if cell[:1] in ("=", "+", "@", "\t", "\r"):
                        raise AssertionError(f"{name}: formula-looking cell {cell!r}")
                    if cell[:1] == "-":
                        float(cell)  # only real negative numbers may start with '-'
    text = (tmp_path / "gb.csv").read_text(encoding="utf-8-sig")
    assert "'=cmd|' /C calc'!A0" in text
    events = (tmp_path / "ev.csv").read_text(encoding="utf-8-sig")
    assert "'=HYPERLINK" in events and "'@SUM(1+1)" in events


@pytest.mark.parametrize("value, expected", [
    ("=1+1", "'=1+1"), ("+1", "'+1"), ("-2+3", "'-2+3"), ("@SUM(A1)", "'@SUM(A1)"),
    ("\t=1", "'\t=1"), ("  =1", "'  =1"), ("＝1", "'＝1"), ("plain", "plain"), (-3.5, -3.5),
    ("a\x00b", "ab"), (None, ""), (True, "true"),
])
def test_csv_safe(value, expected):
    assert grading.csv_safe(value) == expected


def test_gradebook_columns_follow_lms_conventions(graded):
    _, book = graded
    row = next(r for r in grading.gradebook_rows(book) if r["SID"] == "ada")
    assert list(row)[:7] == ["SID", "Lab 1", "Lab 1 - Max Points", "Lab 1 - Submission Time",
                             "Lab 1 - Lateness (H:M:S)", "Lab 1 - Status", "Lab 1 - Correct"]
    assert row["Lab 1 - Submission Time"] == "2025-03-01T12:10:00Z"
    assert (row["Total Points"], row["Max Points"], row["Flags"]) == (5.0, 5.0, "")


def test_rubric_reasoning_and_reconciliation(tmp_path):
    led = ledger.Ledger("ada", tmp_path / "l")
    _lab_session(led, reason="", explain="too short")
    book = grading.grade(grading.load_ledgers([led.path]), grading.CourseConfig())
    g = book.grades[("ada", "lab01")]
    x = next(i for i in g.items if i.item_id == "lab01.crossover_n")
    assert (x.committed, x.reasoned, x.explained) == (True, False, False)
    assert g.points == 1.0 + 2.5


def test_explaining_before_predicting_is_an_impossible_order(tmp_path):
    led = ledger.Ledger("ada", tmp_path / "l")
    led.append("explain", lab_id="lab01", item_id="lab01.crossover_n", payload={"text": "a" * 30},
               ts=_ts(1))
    led.append("predict", lab_id="lab01", item_id="lab01.crossover_n",
               payload={"value": 1, "confidence": 3, "reason": "r"}, ts=_ts(2))
    led.append("unlock", lab_id="lab01", item_id="lab01.crossover_n", payload={}, ts=_ts(3))
    book = grading.grade(grading.load_ledgers([led.path]))
    g = book.grades[("ada", "lab01")]
    assert "impossible_order (explain before predict (lab01.crossover_n))" in g.flags
    # an explanation that existed before the prediction means it was not committed blind
    assert not g.items[0].committed and not g.items[0].explained


def test_late_policy_deadline_and_penalty(tmp_path):
    led = ledger.Ledger("ada", tmp_path / "l")
    _lab_session(led, start=60 * 24 - 3)  # x predicted before the deadline, the rest after
    cfg = grading.CourseConfig(configured=True, late_policy="deadline", labs={
        "lab01": grading.LabConfig("lab01", "Lab 1", DEADLINE,
                             ["lab01.crossover_n", "lab01.which_roof"])})
    g = grading.grade(grading.load_ledgers([led.path]), cfg).grades[("ada", "lab01")]
    assert g.status == "Late" and g.points == 1.5
    cfg.late_policy, cfg.late_penalty_per_day = "report", 0.25
    g = grading.grade(grading.load_ledgers([led.path]), cfg).grades[("ada", "lab01")]
    # the penalty takes only what was earned late: x's prediction (1 + 0.5) was
    # on time; x's explanation (1) and all of which_roof (2.5) came within a day after
    assert g.points == pytest.approx(1.5 + (1.0 + 2.5) * 0.75)


def test_receipts(submissions, tmp_path):
    receipts = tmp_path / "r.csv"
    receipts.write_text(f"student,hash\nada,{submissions['ada_head'][:16]}\n"
                        f"bob,{'f' * 16}\n")
    batch = grading.load_ledgers([submissions["dir"] / "ada_1001", submissions["dir"] / "bob_1002"])
    book = grading.grade(batch, receipts=grading.read_receipts(receipts))
    assert book.student_flags["ada"] == []
    assert book.student_flags["bob"] == ["receipt_missing (ffffffffffffffff)"]


def test_roster_students_without_ledgers_are_missing(tmp_path):
    cfg = grading.CourseConfig(configured=True, students=["zed"],
                         labs={"lab01": grading.LabConfig("lab01", "Lab 1", items=["lab01.crossover_n"])})
    book = grading.grade(grading.Batch(), cfg)
    assert book.grades[("zed", "lab01")].status == "Missing"
    assert grading.gradebook_rows(book)[0]["Lab 1"] == 0


@pytest.mark.parametrize("body, key", [
    ('[labs.lab01]\ndeadline = 2025-03-01T23:59:00\n', "has no time zone"),
    ('[labs.lab01]\ndeadline = 2025-03-01\n', "needs a time"),
    ('[labs.lab01.rubric]\ncommit = -1\n', "labs.lab01.rubric.commit"),
    ('[course]\nlate_policy = "never"\n', "late_policy"),
    ('[labs."bad id!"]\n', "lab ids"),
    ('[labs.lab01]\nfile = "missing.py"\n', "labs.lab01.file"),
    ("not toml = = =", "not valid TOML"),
])
def test_config_errors_name_the_key(tmp_path, body, key):
    path = tmp_path / "c.toml"
    path.write_text(body)
    with pytest.raises(grading.ConfigError, match=key):
        grading.load_config(path)


def test_example_config_parses(tmp_path):
    (tmp_path / "labs").symlink_to(catalogue.LABS_DIR)
    (tmp_path / "c.toml").write_text(grading.example_config())
    cfg = grading.load_config(tmp_path / "c.toml")
    lab_file = catalogue.LABS_DIR / "lab_01_memory_wall.py"
    assert cfg.labs["lab01"].versions == {ledger.lab_version(lab_file)}
    assert cfg.labs["lab01"].deadline == datetime(2025, 3, 8, 4, 59, tzinfo=timezone.utc)


def test_cli_end_to_end(submissions, config_file, tmp_path, capsys):
    out = tmp_path / "grades"
    rc = grading.main([str(submissions["dir"]), "-c", str(config_file), "-o", str(out),
                 "--max-file-mb", "1"])
    assert rc == 1  # graded; problems found (hostile files, flagged students)
    assert "Grades that may be wrong" in capsys.readouterr().out
    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as f:
        rows = {r["SID"]: r for r in csv.DictReader(f)}
    assert rows["ada"]["Lab 1"] == "5.0" and rows["bob"]["Flags"]
    with open(out / "events.csv", newline="", encoding="utf-8-sig") as f:
        events = list(csv.DictReader(f))
    assert {e["kind"] for e in events} >= {"predict", "unlock", "observe", "explain", "result"}
    assert any(e["valid"] == "false" and "hash_mismatch" in e["flags"] for e in events)
    assert (out / "files.csv").exists()
    assert grading.main([str(tmp_path / "nope")]) == 2
    bad = tmp_path / "bad.toml"
    bad.write_text("[labs.lab01]\ndeadline = 2025-03-01T23:59:00\n")
    assert grading.main([str(submissions["dir"]), "-c", str(bad)]) == 2
    assert "has no time zone" in capsys.readouterr().err
    assert grading.main(["--lab-version", str(config_file)]) == 0
    assert capsys.readouterr().out.startswith("sha256:")


def test_console_script_is_installed():
    from importlib.metadata import entry_points
    eps = [e for e in entry_points(group="console_scripts") if e.name == "labs-grade"]
    assert eps and eps[0].value == "labs.core.course.grading:main"


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.binary(max_size=2000), lines=st.lists(st.text(max_size=80), max_size=5))
def test_random_bytes_never_crash_the_batch(tmp_path, data, lines):
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(data + "\n".join(lines).encode("utf-8", "surrogatepass"))
    batch = grading.load_ledgers([path])
    book = grading.grade(batch)
    grading.gradebook_rows(book)
    grading.event_rows(batch)
    grading.file_rows(batch)


def test_hostile_zip_limits(tmp_path):
    bomb = tmp_path / "bomb.zip"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("roofline-ledger-x.jsonl", b"\n" * 5_000_000)  # compresses to a few KB
        for i in range(30):
            z.writestr(f"many/{i}.jsonl", b"")
    batch = grading.load_ledgers([bomb], limits=grading.Limits(max_file_bytes=100_000, max_zip_members=20))
    assert batch.files[0].problems[0].startswith("file_too_large")
    batch = grading.load_ledgers([bomb], limits=grading.Limits(max_file_bytes=100_000))
    big = next(f for f in batch.files if f.source.endswith("roofline-ledger-x.jsonl"))
    assert big.problems[0].startswith("file_too_large")
    # nested zips beyond the depth limit
    inner = tmp_path / "z0.zip"
    with zipfile.ZipFile(inner, "w") as z:
        z.writestr("a.jsonl", b"")
    for i in range(1, 5):
        outer = tmp_path / f"z{i}.zip"
        with zipfile.ZipFile(outer, "w") as z:
            z.write(inner, inner.name)
        inner = outer
    batch = grading.load_ledgers([inner])
    assert any(f.skipped == "zip nested too deeply" for f in batch.files)


def test_event_rows_keep_payload_json_parseable(graded):
    batch, _ = graded
    rows = grading.event_rows(batch)
    assert all(isinstance(json.loads(r["payload"]), dict) for r in rows if r["valid"] == "true"
               and not r["payload"].startswith("'"))


def test_for_student_index_follows_appends_and_reordering():
    from labs.core.course.grading import Batch, EventRecord

    def ev(student, lab, seq):
        return EventRecord(student, lab, f"{lab}.x", "predict", seq, "", None, "v", "s", {},
                           f"h{student}{seq}", "f", seq)

    b = Batch(events=[ev("a", "lab01", 1), ev("b", "lab01", 1), ev("a", "lab02", 2)])
    assert [e.seq for e in b.for_student("a")] == [1, 2]
    assert [e.lab_id for e in b.for_student("a", "lab02")] == ["lab02"]
    b.events.append(ev("a", "lab01", 3))  # added after a lookup: the index is rebuilt
    assert [e.seq for e in b.for_student("a")] == [1, 2, 3]
    b.events.reverse()
    b.reindex()  # reordered in place: the index follows once told
    assert [e.seq for e in b.for_student("a")] == [3, 2, 1]
    assert b.for_student("nobody") == []
