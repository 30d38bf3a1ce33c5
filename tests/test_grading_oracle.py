"""A generated Canvas class with every hard case (labs.core.course.classroom.cases) graded by
``labs-grade`` and by an oracle written here with the standard library alone: it reads the
roster, the course file, the overrides and the ledgers' JSON itself, and shares no code with
labs.core.course.grading. They must agree on every (student, lab) cell: the points and the
count of correct predictions.

The oracle's rules, as the instructors' pages state them: a file in a Canvas download is the
student whose Canvas ``ID`` its name carries (else the roster student whose id, login, e-mail
or id without leading zeros its events carry, else that id); Canvas's test student and
Blackboard's receipts are no one's; a line counts when its hash is the SHA-256 of its canonical
JSON; an event handed in twice counts once; per item, the first ``predict`` that holds a value
is graded: commit (nothing of the item before it), reason (confidence 1-5 and a reason),
correct (within the item's tolerance of the first reading after it, exact on the decimals, the
boundary inside; a choice as its result says), explain (an observe and an explain of 15
non-whitespace characters after it); the prediction's parts are dated by the predict, the
explanation by the later of the two; a part done late keeps 1 - 0.1 x started days late of its
points, at least 0; a lab's extension moves its deadline (never earlier), else the
course-wide one; an override replaces the item's or the lab's points."""

from __future__ import annotations

import csv
import hashlib
import json
import math
import re
import sys
from datetime import datetime, timedelta, timezone
from fractions import Fraction
from pathlib import Path

import pytest

from labs.core import catalogue
from labs.core.course.classroom.cases import CASES, write_every_case_class
from labs.core.physics import misconceptions

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CANVAS = re.compile(r"^(?P<who>[^_]*?)(?:_LATE)?_(?P<uid>\d+)_(?P<sub>\d+)_(?P<file>.+)$")


# --- the oracle -------------------------------------------------------------------------------

def _key(text: str) -> str:
    return text.strip().casefold()


def _roster(path: Path) -> tuple[dict, dict, set]:
    """(Canvas ID -> SIS id, any identity -> SIS id, SIS ids) of the students on it."""
    by_uid, alias, ids = {}, {}, set()
    with open(path, newline="", encoding="utf-8-sig") as f:
        for row in csv.DictReader(f):
            name, sis = row["Student"].strip(), row["SIS User ID"].strip()
            if "Points Possible" in name or name == "Student, Test" or not sis:
                continue
            ids.add(sis)
            by_uid[row["ID"].strip()] = sis
            for col in ("SIS User ID", "SIS Login ID", "Email"):
                if row.get(col, "").strip():
                    alias[_key(row[col])] = sis
            alias.setdefault(_key(sis.lstrip("0")), sis)
    return by_uid, alias, ids


def _valid(line: bytes):
    try:
        event = json.loads(line)
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("hash"), str):
        return None
    body = {k: v for k, v in event.items() if k != "hash"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                           allow_nan=False).encode("ascii")
    return event if hashlib.sha256(canonical).hexdigest() == event["hash"] else None


def _when(ts: str) -> datetime:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).astimezone(timezone.utc)


def _events(submissions: Path, by_uid: dict, alias: dict) -> dict[str, list[dict]]:
    """Each student's unique valid events, in time order."""
    seen: dict[str, dict[str, tuple]] = {}
    for order, path in enumerate(sorted(submissions.iterdir())):
        m = CANVAS.match(path.name)
        if path.suffix != ".jsonl" or path.name.startswith("studenttest_"):
            continue
        owner_by_name = by_uid.get(m.group("uid")) if m else None
        lines = path.read_bytes().split(b"\n")[:-1]  # the last piece: a torn line, or nothing
        for n, line in enumerate(lines, start=1):
            event = _valid(line) if line.strip() else None
            if event is None:
                continue
            owner = owner_by_name or alias.get(_key(event["student_id"]), event["student_id"])
            seen.setdefault(owner, {}).setdefault(event["hash"], (_when(event["ts"]), order, n,
                                                                  event))
    return {who: [e for *_, e in sorted(evs.values(), key=lambda x: x[:3])]
            for who, evs in seen.items()}


def _exactly_within(p: float, a: float, tolerance: str) -> bool:
    if p == 0 or a == 0 or (p > 0) != (a > 0):
        return False
    big, small = sorted((abs(Fraction(repr(p))), abs(Fraction(repr(a)))), reverse=True)
    return big <= Fraction(tolerance) * small


def _number(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) \
        and math.isfinite(float(v)) else None


def _item(evs: list[dict], item: str, kind: str, tolerance: str, deadline: datetime,
          per_day: float) -> tuple[float, bool | None]:
    """(points, correct) of one item."""
    mine = [e for e in evs if e["item_id"] == item]
    first = next((i for i, e in enumerate(mine) if e["kind"] == "predict"
                  and isinstance(e["payload"], dict) and e["payload"].get("value") is not None),
                 None)
    if first is None:
        return 0.0, None
    p = mine[first]["payload"]
    committed = not any(e["kind"] in ("unlock", "observe", "explain", "result")
                        for e in mine[:first])
    conf, reason = p.get("confidence"), p.get("reason")
    reasoned = type(conf) is int and 1 <= conf <= 5 and isinstance(reason, str) and \
        reason.strip() != ""
    after = mine[first + 1:]
    correct = None
    for e in after:
        if e["kind"] != "result":
            continue
        if kind == "choice":
            correct = e["payload"].get("correct", e["payload"].get("actual") == p["value"])
            break
        a, v = _number(e["payload"].get("actual")), _number(p["value"])
        if a is not None and v is not None:
            correct = _exactly_within(v, a, tolerance)
            break
    observe = next((e for e in after if e["kind"] == "observe"
                    and str(e["payload"].get("text", "")).strip()), None)
    explain = next((e for e in after if e["kind"] == "explain" and sum(
        not ch.isspace() for ch in str(e["payload"].get("text", ""))) >= 15), None)

    def kept(points: float, when: datetime) -> float:
        late = when - deadline
        if late <= timedelta(0):
            return points
        return points * max(0.0, 1 - per_day * math.ceil(late / timedelta(days=1)))

    points = kept(1.0 * committed + 0.5 * reasoned + 1.0 * bool(correct),
                  _when(mine[first]["ts"]))
    if observe and explain:
        points += kept(1.0, max(_when(observe["ts"]), _when(explain["ts"])))
    return points, correct


def oracle(cls) -> dict[tuple[str, str], tuple[float, str]]:
    """(student, lab) -> (points, "correct/known")."""
    config = tomllib.loads(cls.config.read_text(encoding="utf-8"))
    by_uid, alias, ids = _roster(cls.roster)
    events = _events(cls.submissions, by_uid, alias)
    overrides = list(csv.DictReader(open(cls.overrides, newline="", encoding="utf-8")))
    per_day = config["course"]["late_penalty_per_day"]
    course_ext = {_key(k): v for k, v in config["course"].get("extensions", {}).items()}
    out = {}
    for sid in ids | set(events):
        for lab_id, lab in config["labs"].items():
            deadline = datetime.fromisoformat(str(lab["deadline"])).astimezone(timezone.utc)
            ext = {_key(k): v for k, v in lab.get("extensions", {}).items()}.get(
                _key(sid), course_ext.get(_key(sid)))
            if isinstance(ext, datetime):
                deadline = max(deadline, ext.astimezone(timezone.utc))
            elif isinstance(ext, str):
                deadline += timedelta(days=int(ext.rstrip("d")))
            evs = [e for e in events.get(sid, []) if e["lab_id"] == lab_id]
            total, right, known = 0.0, 0, 0
            for item in catalogue.lab(lab_id).items:
                tolerance = str(lab.get("tolerances", {}).get(
                    item.item_id, misconceptions.tolerance(item.item_id)))
                points, correct = _item(evs, item.item_id, item.kind, tolerance, deadline,
                                        per_day)
                for o in overrides:
                    if o["student"] == sid and o["item"] == item.item_id:
                        points = float(o["points"])
                total += points
                if correct is not None:
                    known += 1
                    right += bool(correct)
            for o in overrides:
                if o["student"] == sid and o["item"] == lab_id:
                    total = float(o["points"])
            out[(sid, lab_id)] = (round(total, 2), f"{right}/{known}" if known else "")
    return out


# --- the class, graded both ways -----------------------------------------------------------

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    from labs.core import grading

    root = tmp_path_factory.mktemp("every-case")
    cls = write_every_case_class(root / "class", 64, seed=50)
    out = root / "out"
    rc = grading.main([str(cls.submissions), "-c", str(cls.config), "-o", str(out)])
    with open(out / "gradebook.csv", newline="", encoding="utf-8-sig") as f:
        rows = {r["SIS User ID"]: r for r in csv.DictReader(f)}
    return cls, rc, rows, out


def test_the_grader_and_the_oracle_agree_on_every_cell(graded):
    cls, rc, rows, _ = graded
    expected = oracle(cls)
    titles = {lab: catalogue.lab(lab).title for lab in ("lab01", "lab02")}
    assert set(rows) == {sid for sid, _ in expected}
    disagree = []
    for (sid, lab), (points, correct) in sorted(expected.items()):
        got = (float(rows[sid][titles[lab]]), rows[sid][f"{titles[lab]} - Correct"])
        if got != (points, correct):
            disagree.append(f"{sid} {lab}: grader {got}, oracle {(points, correct)}")
    assert not disagree, "\n".join(disagree)
    assert len(expected) >= 2 * 60


def test_every_case_is_in_the_class_and_moves_what_it_should(graded):
    cls, rc, rows, _ = graded
    t1, t2 = (catalogue.lab(lab).title for lab in ("lab01", "lab02"))
    case = {name: rows.get(s.sis_id) for name, s in cls.case.items()}
    assert set(case) == set(CASES)
    assert case["missing"][f"{t1} - Status"] == "Missing"
    assert case["unreadable"][f"{t1} - Status"] == "Unreadable submission"
    assert case["course_extension"][f"{t1} - Status"] == "On time"
    assert case["early_extension"][f"{t1} - Status"] == "Late"
    assert float(case["very_late"][t1]) >= 0
    dropped = case["dropped"]  # a row of its own, under the id it typed: not on the roster
    assert dropped["Name"] == "" and "not_on_roster (handed in through LMS account" in \
        dropped["Flags"] and "closest" not in dropped["Flags"]
    assert "possible_submission" not in "".join(r["Flags"] for r in rows.values())
    assert "teststudent" not in rows and cls.auditor.sis_id in rows
    assert "has no SIS User ID: an auditor" in rows[cls.auditor.sis_id]["Flags"]
    assert "old_timestamp" in case["old"]["Flags"]
    assert "duplicates_merged" in case["duplicate"]["Notes"]
    assert "duplicates_merged" not in case["separate"]["Notes"] + case["separate"]["Flags"]
    assert rc == 1  # the victim, the classmate, the dropped student and the auditor need a look
