"""A Canvas class with every case that makes grading hard, for a grader's tests and an
instructor's dry run: :func:`write_every_case_class`.

Built on :mod:`labs.core.course.classroom.canvas_class` (Canvas bulk-download names, a roster
with every identity column) and :mod:`labs.core.course.classroom.synth` (ledgers hashed with the
ledger's own hashing). Besides ordinary students it holds one student per :data:`CASES` entry:
late, very late and re-uploaded work (``_LATE``, ``-1``), extensions (per lab, course-wide, one
dated before the deadline), overrides of an item and of a lab, revisits and re-measurements
after the deadline, a classmate's id, a login, an e-mail and an id without its leading zero
typed for the id, damaged files, an empty upload, a growing ledger handed in to two assignments,
a predict without a value, an unlock before a predict, an explanation padded with whitespace,
predictions exactly at and just beyond the tolerance, a dropped student (a Canvas account no
longer on the roster), a year-old ledger; Canvas's test student and an auditor on the roster; a
Blackboard receipt among the files. Correctness earns a point, so the tolerance's boundary moves
grades. Deterministic for a seed; the ids, names and e-mails are made up.
"""

from __future__ import annotations

import csv
import os
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

from labs.core.course import ledger as _ledger
from labs.core.course.classroom.canvas_class import (
    CANVAS_ASSIGNMENT_IDS, DEADLINES, LATE_PENALTY_PER_DAY, GeneratedClass, Student, roster_row,
    synthetic_student, write_roster)
from labs.core.course.classroom.synth import SynthItem, LedgerWriter, catalogue_course

__all__ = [
    "BOUNDARY_ITEM", "BOUNDARY_TOLERANCE", "CASES", "EXPLAIN", "EveryCaseClass", "LABS", "main",
    "write_every_case_class"
]

LABS = ("lab01", "lab02")
#: the numeric item whose boundary the class tests, and the tolerance its course file sets
BOUNDARY_ITEM, BOUNDARY_TOLERANCE = "lab01.crossover_n", "1.5"
#: case -> what the student does (each happens to one student)
CASES = {
    "late": "lab01 done 2.5 days late (uploaded _LATE)",
    "very_late": "lab01 done 12 days late: the penalty takes everything, never more",
    "late_explain": "lab01 predicted on time, one explanation 3 days late",
    "extension": "lab01 done 1 day late with a 2-day extension of lab01",
    "course_extension": "both labs done 2 days late with a 3-day extension of every lab",
    "early_extension": "lab01 done 3 hours late; an extension dated a day before the deadline",
    "override": "an instructor's override of one lab01 item",
    "lab_override": "an instructor's override of the whole of lab02",
    "revisit": "lab01 done early; re-opened 10 days after the deadline (re-measured, revised)",
    "remeasure": "lab01's numeric item re-measured after the deadline on another device",
    "victim": "typed a classmate's SIS User ID in the lab; submitted the file",
    "classmate": "whose id the victim typed; submitted their own file",
    "login": "typed their SIS Login ID", "email": "typed their e-mail",
    "leading_zeros": "typed their SIS User ID without its leading zero",
    "duplicate": "uploaded the same ledger twice (Canvas renamed it ...-1.jsonl)",
    "separate": "handed in the ledger after lab01 and again, grown, after lab02",
    "missing": "submitted nothing",
    "unreadable": "submitted only an empty file",
    "damaged": "a torn last line, an edited explanation line and a junk line",
    "valueless": "a predict without a value before the real one",
    "unlock_first": "unlocked lab01's numeric item before predicting it",
    "padded": "an explanation of 14 letters padded to 40 characters with spaces",
    "boundary": "lab01's numeric item predicted exactly at the tolerance (correct)",
    "beyond": "lab01's numeric item predicted just beyond the tolerance (not correct)",
    "boundary_low": "lab01's numeric item predicted exactly the tolerance too low",
    "no_reason": "every prediction without a reason",
    "dropped": "a Canvas account no longer on the roster (dropped the course)",
    "old": "lab01 done a year before its deadline (a ledger from another term)",
}
EXPLAIN = "intensity is below the ridge, so bandwidth sets the time"


@dataclass
class EveryCaseClass(GeneratedClass):
    case: dict[str, Student] = field(default_factory=dict)  # case -> student
    auditor: Student | None = None  # on the roster without a SIS User ID
    test_student_lms_id: str = ""


def _boundary_value(actual: float, factor: str, up: bool = True) -> float:
    exact = Decimal(repr(actual)) * Decimal(factor) if up else \
        Decimal(repr(actual)) / Decimal(factor)
    return float(exact)


def _item(w: LedgerWriter, lab_id: str, it: SynthItem, rng: random.Random, case: str) -> None:
    """One item: predict -> unlock -> result -> observe -> explain, as the case says."""
    if it.kind == "numeric":
        value = float(f"{it.actual * 10 ** rng.gauss(0, 0.25):.3g}")
        if it.item_id == BOUNDARY_ITEM and case in ("boundary", "beyond", "boundary_low"):
            value = _boundary_value(it.actual, BOUNDARY_TOLERANCE, case != "boundary_low")
            if case == "beyond":
                value = float(Decimal(repr(value)) * Decimal("1.001"))
        result = {"actual": it.actual, "units": it.units}
    else:
        value = it.options[rng.randrange(len(it.options))][1]
        result = {"actual": it.actual, "correct": value == it.actual}
    payload = {"value": value, "answer_type": it.kind, "units": it.units,
               "confidence": rng.randint(1, 5),
               "reason": "" if case == "no_reason" else "bytes per FLOP at the ridge"}
    if it.kind == "choice":
        payload["label"] = next(label for label, v in it.options if v == value)
    first_numeric = it.kind == "numeric" and lab_id == "lab01"
    if case == "unlock_first" and first_numeric:
        w.add("unlock", lab_id, it.item_id, {"after_seq": 0}, minutes=1)
    if case == "valueless" and first_numeric:
        w.add("predict", lab_id, it.item_id, {"answer_type": "numeric", "confidence": 3,
                                              "reason": "clicked too early"}, minutes=1)
    ev = w.add("predict", lab_id, it.item_id, payload, minutes=3)
    w.add("unlock", lab_id, it.item_id, {"after_seq": ev["seq"]}, minutes=0)
    w.add("result", lab_id, it.item_id, result, minutes=0)
    w.add("observe", lab_id, it.item_id, {"text": "the point sits under the slope"})
    text = ("a b c d e f g h i j k l m n" + " " * 13) if case == "padded" and first_numeric \
        else EXPLAIN
    w.add("explain", lab_id, it.item_id, {"text": text}, minutes=2)


def _start(case: str, lab_id: str, rng: random.Random) -> datetime:
    deadline = DEADLINES[lab_id]
    late = {"late": timedelta(days=2, hours=12), "very_late": timedelta(days=12),
            "extension": timedelta(days=1), "early_extension": timedelta(hours=3),
            "course_extension": timedelta(days=2)}
    if lab_id == "lab01" and case in late or case == "course_extension":
        return deadline + late[case]
    if lab_id == "lab01" and case == "old":
        return deadline - timedelta(days=365)
    return deadline - timedelta(days=3, hours=rng.randint(0, 30))


def write_every_case_class(folder: str | os.PathLike, n_students: int = 60, *,
                           seed: int = 0) -> EveryCaseClass:
    """Write the class into ``folder`` (``submissions/``, ``roster.csv``, ``course.toml``,
    ``overrides.csv``); the students who are not a case do both labs on time."""
    if not isinstance(n_students, int) or n_students < len(CASES) + 4:
        raise ValueError(f"n_students must be an integer >= {len(CASES) + 4}, got "
                         f"{n_students!r}")
    folder = Path(folder)
    sub = folder / "submissions"
    sub.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    course = {lab: catalogue_course()[lab] for lab in LABS}
    students = [synthetic_student(n, rng) for n in range(1, n_students + 1)]
    cls = EveryCaseClass(folder, sub, folder / "roster.csv", folder / "course.toml",
                         folder / "overrides.csv", students)
    for name, s in zip(CASES, students[1:]):
        cls.case[name] = s
    cls.auditor = students[-1]
    who = {s.sis_id: name for name, s in cls.case.items()}
    submission_id = 6_000_000
    for s in students:
        case = who.get(s.sis_id, "")
        if case == "missing":
            continue
        typed = {"victim": cls.case["classmate"].sis_id, "login": s.login, "email": s.email,
                 "leading_zeros": s.sis_id.lstrip("0")}.get(case, s.sis_id)
        cls.typed[s.sis_id] = typed
        w = LedgerWriter(typed, DEADLINES["lab01"] - timedelta(days=6),
                    random.Random(rng.getrandbits(64)))
        uploads: list[bytes] = []
        for lab_id in LABS:
            start = _start(case, lab_id, rng)
            w.t = start if case == "old" else max(w.t, start)  # (old: a year back, then now)
            for it in course[lab_id]:
                _item(w, lab_id, it, rng, case)
            if case == "separate" and lab_id == "lab01":
                uploads.append(b"".join(w.lines))
        if case in ("revisit", "remeasure"):
            w.t = DEADLINES["lab01"] + timedelta(days=10)
            it = next(i for i in course["lab01"] if i.kind == "numeric")
            w.add("result", "lab01", it.item_id, {"actual": it.actual * 7.97, "units": it.units,
                                                  "device": "another machine"}, minutes=5)
            if case == "revisit":
                w.add("revise", "lab01", it.item_id, {"value": it.actual,
                                                      "answer_type": "numeric",
                                                      "confidence": 5, "reason": "seen it"})
        lines = list(w.lines)
        if case == "damaged":
            at = next(n for n, ln in enumerate(lines) if b'"kind":"explain"' in ln)
            lines[at] = lines[at].replace(EXPLAIN.encode(), b"I knew it all along, truly")
            lines.insert(3, b"this line is not an event\n")
            lines[-1] = lines[-1][:30]
        uploads.append(b"".join(lines))
        late_any = any(_start(case, lab, random.Random(0)) > DEADLINES[lab] for lab in LABS) \
            or case in ("revisit", "remeasure", "late_explain")
        for n, data in enumerate(uploads):
            submission_id += rng.randint(1, 999)
            late = "_LATE" if late_any and n == len(uploads) - 1 else ""
            stem = f"{s.lastfirst}{late}_{s.canvas_id}_{submission_id}_"
            name = _ledger.ledger_filename(typed)
            if case == "unreadable":
                (sub / f"{stem}lab1-ledger.jsonl").write_bytes(b"")
                continue
            (sub / f"{stem}{name}").write_bytes(data)
            if case == "duplicate":
                (sub / f"{s.lastfirst}{late}_{s.canvas_id}_{submission_id + 1}_"
                       f"{name[:-len('.jsonl')]}-1.jsonl").write_bytes(data)
    # Canvas's test student, and a Blackboard receipt someone left among the files
    test_uid = str(999_000 + n_students)
    cls.test_student_lms_id = test_uid
    w = LedgerWriter("teststudent", DEADLINES["lab01"] - timedelta(days=1), rng)
    for it in course["lab01"]:
        _item(w, "lab01", it, rng, "")
    (sub / f"studenttest_{test_uid}_{submission_id + 7}_"
           f"{_ledger.ledger_filename('teststudent')}").write_bytes(b"".join(w.lines))
    (sub / "Lab 1_jdoe_attempt_2025-03-06-10-00-00.txt").write_text(
        "Name: J Doe (jdoe)\nAssignment: Lab 1\nDate Submitted: Thursday, March 6, 2025\n",
        encoding="utf-8")
    _write_roster(cls, test_uid)
    _write_config(cls)
    return cls


def _write_roster(cls: EveryCaseClass, test_uid: str) -> None:
    # the dropped student is no longer on the roster; the auditor has no SIS id; Canvas adds
    # its test student
    rows = [roster_row(s, sis_id="" if s is cls.auditor else None) for s in cls.students
            if s is not cls.case["dropped"]]
    write_roster(cls.roster, rows + [["Student, Test", test_uid, "", "", "Section 1", ""]])


def _write_config(cls: EveryCaseClass) -> None:
    c = cls.case
    deadline = DEADLINES["lab01"]
    lines = ["[course]", 'name = "Roofline Labs, every case"', 'id_column = "SIS User ID"',
             'roster = "roster.csv"', 'overrides = "overrides.csv"',
             f"late_penalty_per_day = {LATE_PENALTY_PER_DAY}", "",
             "[course.extensions]", f'"{c["course_extension"].sis_id}" = "3d"', ""]
    for lab_id in LABS:
        lines += [f"[labs.{lab_id}]", f"deadline = {DEADLINES[lab_id].isoformat()}",
                  f"canvas_assignment_id = {CANVAS_ASSIGNMENT_IDS[lab_id]}", "",
                  f"[labs.{lab_id}.rubric]", "correct = 1.0", ""]
        if lab_id == "lab01":
            early = (deadline - timedelta(days=1)).astimezone(timezone.utc).isoformat()
            lines += ["[labs.lab01.tolerances]",
                      f'"{BOUNDARY_ITEM}" = {BOUNDARY_TOLERANCE}', "",
                      "[labs.lab01.extensions]", f'"{c["extension"].sis_id}" = "2d"',
                      f'"{c["early_extension"].sis_id}" = {early}', ""]
    cls.config.write_text("\n".join(lines), encoding="utf-8")
    course = catalogue_course()
    with open(cls.overrides, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["student", "item", "points", "comment"])
        out.writerow([c["override"].sis_id, course["lab01"][1].item_id, "3.5",
                      "explained in office hours"])
        out.writerow([c["lab_override"].sis_id, "lab02", "4", "graded by hand"])


def main(argv=None) -> int:
    """``python -m labs.core.course.classroom.cases FOLDER [N] [SEED]``: write the class (see
    the module doc) to try ``labs-grade`` on."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or len(args) > 3:
        print("usage: python -m labs.core.course.classroom.cases FOLDER [N_STUDENTS] [SEED]",
              file=sys.stderr)
        return 2
    try:
        n = int(args[1]) if len(args) > 1 else len(CASES) + 10
        seed = int(args[2]) if len(args) > 2 else 0
        cls = write_every_case_class(args[0], n, seed=seed)
    except ValueError as exc:
        print(f"classroom.cases: {exc}", file=sys.stderr)
        return 2
    print(f"Wrote {cls.submissions}, {cls.roster}, {cls.config}, {cls.overrides}.")
    for name, s in cls.case.items():
        print(f"  {s.sis_id} {s.name}: {CASES[name]}")
    print(f"  {cls.auditor.sis_id} {cls.auditor.name}: an auditor (no SIS User ID on the roster)")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
