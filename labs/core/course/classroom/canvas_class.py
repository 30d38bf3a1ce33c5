"""A generated class as an LMS hands it to an instructor: Canvas bulk-download names, a roster
with every identity column, a course config, overrides, and the situations that make grading
hard (for tests, demos and an instructor's dry run).

:func:`write_canvas_class` writes into one folder:

- ``submissions/``: one file per submission, named as Canvas's "Download Submissions" names
  them: ``<lastfirst>_<canvas user id>_<submission id>_<file name>`` (``<lastfirst>_LATE_...``
  for a file uploaded after the due date; ``roofline-ledger-<id>-1.jsonl`` for a re-upload);
- ``roster.csv``: ``Student, ID, SIS User ID, SIS Login ID, Section, Email`` (Canvas's
  gradebook export columns, plus e-mail); SIS User IDs are eight digits with leading zeros;
- Canvas's test student's submission (``studenttest_...``), never on the roster;
- ``course.toml`` (two labs with deadlines, Canvas assignment ids, a 10 %/day late penalty,
  extensions) and ``overrides.csv``.

Hash-chained with the ledger's own hashing (:mod:`labs.core.course.classroom.synth`'s writer).
Deterministic for a seed. :class:`CanvasClass` says which student is in which situation, so a
test can check each one. The ids, names and e-mails are made up.
"""

from __future__ import annotations

import csv
import os
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

from labs.core.course import ledger as _ledger
from labs.core.course.classroom.synth import SynthItem, LedgerWriter, catalogue_course

__all__ = [
    "CANVAS_ASSIGNMENT_IDS", "CanvasClass", "DEADLINES", "GeneratedClass", "LATE_PENALTY_PER_DAY",
    "SITUATIONS", "Student", "main", "roster_row", "synthetic_student", "write_canvas_class",
    "write_roster"
]

DEADLINES = {"lab01": datetime(2025, 3, 7, 23, 59, tzinfo=timezone.utc),
             "lab02": datetime(2025, 3, 14, 23, 59, tzinfo=timezone.utc)}
CANVAS_ASSIGNMENT_IDS = {"lab01": 880011, "lab02": 880012}
LATE_PENALTY_PER_DAY = 0.1
_FIRST = ("Ada", "Bo", "Cyd", "Dee", "Eli", "Fay", "Gus", "Hal", "Ida", "Jon", "Kai", "Lea",
          "Max", "Nia", "Oto", "Pia", "Quy", "Rex", "Sol", "Tam", "Uma", "Vic", "Wes", "Xia")
_LAST = ("Okafor", "Lindqvist", "Moreau", "Tanaka", "Novak", "Osei", "Reyes", "Kowalski",
         "Haddad", "Brennan", "Iyer", "Zhou", "Petrov", "Mensah", "Silva", "Dubois")

#: situation -> what it is; every one appears once in a class of at least len(SITUATIONS)
SITUATIONS = {
    "late": "lab01 done 2.5 days after the deadline, uploaded late (LATE in the name)",
    "revisit": "lab01 done 2 days early; re-ran a measurement and revised an answer 10 days "
               "after the deadline",
    "late_explain": "lab01 predicted on time, one explanation written 3 days late",
    "extension": "lab01 done 1 day late with a 2-day extension",
    "override": "an instructor's override of one lab01 item",
    "victim": "typed the classmate's SIS User ID in the lab: the file they submitted carries "
              "it",
    "classmate": "whose id the victim typed; submitted their own file",
    "login": "typed their SIS Login ID instead of their SIS User ID",
    "email": "typed their e-mail instead of their SIS User ID",
    "duplicate": "uploaded the same ledger twice (Canvas renamed the second ...-1.jsonl)",
    "missing": "submitted nothing",
    "unreadable": "submitted an empty file they had renamed lab1-ledger.jsonl",
    "leading_zeros": "typed their SIS User ID without its leading zero",
}


@dataclass
class Student:
    name: str
    canvas_id: str  # Canvas's user id (the roster's ``ID``; the number in a download's name)
    sis_id: str  # ``SIS User ID``: eight digits, leading zeros kept
    login: str  # ``SIS Login ID``
    email: str
    section: str

    @property
    def lastfirst(self) -> str:
        first, last = self.name.split(" ", 1)
        return (last + first).lower().replace(" ", "").replace("-", "")


@dataclass
class GeneratedClass:
    """A generated class as Canvas hands it over: where each file was written, and who is who."""

    folder: Path
    submissions: Path
    roster: Path
    config: Path
    overrides: Path
    students: list[Student]
    typed: dict[str, str] = field(default_factory=dict)  # SIS id -> id typed in the lab

    def by_sis(self, sis_id: str) -> Student:
        return next(s for s in self.students if s.sis_id == sis_id)


@dataclass
class CanvasClass(GeneratedClass):
    situation: dict[str, Student] = field(default_factory=dict)  # situation -> student


def synthetic_student(n: int, rng: random.Random) -> Student:
    first, last = _FIRST[n % len(_FIRST)], _LAST[(n * 7) % len(_LAST)]
    if n >= len(_FIRST):
        last = f"{last}-{_LAST[n % len(_LAST)]}"
    login = f"{first[0]}{last.split('-')[0]}{n:02d}".lower()
    return Student(f"{first} {last}", str(104_000 + n * 17 + rng.randint(0, 9)),
                   f"0{2_310_000 + n * 37:07d}", login,
                   f"{login}@students.example.edu", f"Section {1 + n % 2}")


def _lab_session(w: LedgerWriter, lab_id: str, items: tuple[SynthItem, ...], rng: random.Random,
                 *, late_explain_after: timedelta | None = None) -> None:
    """predict -> unlock -> result -> observe -> explain for each item, from ``w.t``."""
    for n, it in enumerate(items):
        value = (float(f"{it.actual * 10 ** rng.gauss(0, 0.3):.3g}") if it.kind == "numeric"
                 else it.options[rng.randrange(len(it.options))][1])
        payload = {"value": value, "answer_type": it.kind, "units": it.units,
                   "confidence": rng.randint(1, 5), "reason": "bytes per FLOP at the ridge"}
        if it.kind == "choice":
            payload["label"] = next(lab for lab, v in it.options if v == value)
        ev = w.add("predict", lab_id, it.item_id, payload, minutes=3)
        w.add("unlock", lab_id, it.item_id, {"after_seq": ev["seq"]}, minutes=0)
        w.add("result", lab_id, it.item_id, {"actual": it.actual, "units": it.units}, minutes=0)
        w.add("observe", lab_id, it.item_id, {"text": "the point sits under the slope"})
        if late_explain_after is not None and n == 0:
            continue  # written later
        w.add("explain", lab_id, it.item_id,
              {"text": "intensity is below the ridge, so bandwidth sets the time"}, minutes=2)


def _revisit(w: LedgerWriter, lab_id: str, items: tuple[SynthItem, ...]) -> None:
    """A re-opened lab: a re-measurement, a re-read note and a revised (ungraded) answer."""
    it = items[0]
    w.add("unlock", lab_id, it.item_id, {"after_seq": 1}, minutes=1)
    w.add("result", lab_id, it.item_id, {"actual": it.actual, "units": it.units}, minutes=0)
    w.add("observe", lab_id, it.item_id, {"text": "re-measured: the same point"}, minutes=1)
    value = it.actual if it.kind == "numeric" else it.options[0][1]
    w.add("revise", lab_id, it.item_id, {"value": value, "answer_type": it.kind,
                                         "units": it.units, "confidence": 5,
                                         "reason": "after seeing it"}, minutes=1)


def write_canvas_class(folder: str | os.PathLike, n_students: int = 30, *, seed: int = 0,
                       labs: tuple[str, ...] = ("lab01", "lab02")) -> CanvasClass:
    """Write a class of ``n_students`` (at least ``len(SITUATIONS)``) as a Canvas download.

    Each :data:`SITUATIONS` entry happens to one student (``CanvasClass.situation``); the rest
    do every lab on time. Returns what was written and who is who.
    """
    if not isinstance(n_students, int) or n_students < len(SITUATIONS) + 2:
        raise ValueError(f"n_students must be an integer >= {len(SITUATIONS) + 2}, "
                         f"got {n_students!r}")
    folder = Path(folder)
    sub = folder / "submissions"
    sub.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    course = catalogue_course()
    course = {lab: course[lab] for lab in labs}
    students = [synthetic_student(n, rng) for n in range(1, n_students + 1)]
    cls = CanvasClass(folder, sub, folder / "roster.csv", folder / "course.toml",
                      folder / "overrides.csv", students)
    for name, s in zip(SITUATIONS, students[1:]):  # students[0] stays ordinary
        cls.situation[name] = s
    who = {s.sis_id: name for name, s in cls.situation.items()}
    submission_id = 5_000_000
    for s in students:
        kind = who.get(s.sis_id, "")
        if kind == "missing":
            continue
        typed = {"victim": cls.situation.get("classmate", s).sis_id, "login": s.login,
                 "email": s.email, "leading_zeros": s.sis_id.lstrip("0")}.get(kind, s.sis_id)
        cls.typed[s.sis_id] = typed
        w = LedgerWriter(typed, DEADLINES[labs[0]] - timedelta(days=4, hours=rng.randint(0, 40)),
                    random.Random(rng.getrandbits(64)))
        late_upload = False
        for lab_id in labs:
            deadline = DEADLINES[lab_id]
            w.t = max(w.t, deadline - timedelta(days=3, hours=rng.randint(0, 30)))
            if lab_id == labs[0] and kind == "late":
                w.t = deadline + timedelta(days=2, hours=12)
                late_upload = True
            if lab_id == labs[0] and kind == "extension":
                w.t = deadline + timedelta(days=1)
                late_upload = True
            if lab_id == labs[0] and kind == "revisit":
                w.t = deadline - timedelta(days=2, hours=1)
            _lab_session(w, lab_id, course[lab_id], rng,
                         late_explain_after=timedelta(days=3) if lab_id == labs[0]
                         and kind == "late_explain" else None)
            if lab_id == labs[0] and kind == "late_explain":
                w.t = deadline + timedelta(days=3)
                w.add("explain", lab_id, course[lab_id][0].item_id,
                      {"text": "intensity is below the ridge, so bandwidth sets the time"})
                late_upload = True
        if kind == "revisit":
            w.t = DEADLINES[labs[0]] + timedelta(days=10)
            _revisit(w, labs[0], course[labs[0]])
        data = b"".join(w.lines)
        submission_id += rng.randint(1, 999)
        late = "_LATE" if late_upload or kind == "revisit" else ""
        stem = f"{s.lastfirst}{late}_{s.canvas_id}_{submission_id}_"
        name = _ledger.ledger_filename(typed)
        if kind == "unreadable":  # renamed by the student, and empty
            (sub / f"{stem}lab1-ledger.jsonl").write_bytes(b"")
            continue
        (sub / f"{stem}{name}").write_bytes(data)
        if kind == "duplicate":
            again = f"{s.lastfirst}{late}_{s.canvas_id}_{submission_id + 1}_"
            (sub / f"{again}{name[:-len('.jsonl')]}-1.jsonl").write_bytes(data)
    # Canvas's "Student View" test student: submits, but is never on an exported roster
    w = LedgerWriter("teststudent", DEADLINES[labs[0]] - timedelta(days=1), rng)
    _lab_session(w, labs[0], course[labs[0]], rng)
    (sub / f"studenttest_{999_000 + n_students}_{submission_id + 7}_"
           f"{_ledger.ledger_filename('teststudent')}").write_bytes(b"".join(w.lines))
    write_roster(cls.roster, [roster_row(s) for s in cls.students])
    _write_config(cls, labs)
    return cls


def roster_row(s: Student, *, sis_id: str | None = None) -> list[str]:
    """A student's row of Canvas's gradebook export ("Last, First", Canvas id, SIS id, ...);
    ``sis_id`` overrides theirs (an auditor's is blank)."""
    first, last = s.name.split(" ", 1)
    return [f"{last}, {first}", s.canvas_id, s.sis_id if sis_id is None else sis_id, s.login,
            s.section, s.email]


def write_roster(path: Path, rows: list[list[str]]) -> None:
    """Canvas's gradebook export as a roster: its header, its "Points Possible" row, then
    ``rows`` (:func:`roster_row`)."""
    with open(path, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "Email"])
        out.writerow(["    Points Possible", "", "", "", "", ""])
        out.writerows(rows)


def _write_config(cls: CanvasClass, labs: tuple[str, ...]) -> None:
    lines = ["[course]", 'name = "Roofline Labs, generated class"',
             'id_column = "SIS User ID"', 'roster = "roster.csv"',
             'overrides = "overrides.csv"',
             f"late_penalty_per_day = {LATE_PENALTY_PER_DAY}", ""]
    for lab_id in labs:
        lines += [f"[labs.{lab_id}]", f"deadline = {DEADLINES[lab_id].isoformat()}",
                  f"canvas_assignment_id = {CANVAS_ASSIGNMENT_IDS[lab_id]}", ""]
        if lab_id == labs[0] and "extension" in cls.situation:
            lines += [f"[labs.{lab_id}.extensions]",
                      f'"{cls.situation["extension"].sis_id}" = "2d"', ""]
    cls.config.write_text("\n".join(lines), encoding="utf-8")
    course = catalogue_course()
    with open(cls.overrides, "w", newline="", encoding="utf-8") as f:
        out = csv.writer(f)
        out.writerow(["student", "item", "points", "comment"])
        if "override" in cls.situation:
            out.writerow([cls.situation["override"].sis_id, course[labs[0]][1].item_id, "2.5",
                          "explained in office hours"])


def main(argv=None) -> int:
    """``python -m labs.core.course.classroom.canvas_class FOLDER [N] [SEED]``: write a class
    to try ``labs-grade`` on (see the module doc)."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if not args or len(args) > 3:
        print("usage: python -m labs.core.course.classroom.canvas_class FOLDER [N_STUDENTS] "
              "[SEED]", file=sys.stderr)
        return 2
    try:
        n = int(args[1]) if len(args) > 1 else 30
        seed = int(args[2]) if len(args) > 2 else 0
        cls = write_canvas_class(args[0], n, seed=seed)
    except ValueError as exc:
        print(f"canvas_class: {exc}", file=sys.stderr)
        return 2
    print(f"Wrote {cls.submissions} ({len(list(cls.submissions.iterdir()))} files), "
          f"{cls.roster}, {cls.config}, {cls.overrides}.")
    for name, s in cls.situation.items():
        print(f"  {s.sis_id} {s.name}: {SITUATIONS[name]}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
