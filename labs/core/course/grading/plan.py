"""The class-wide part of grading: which labs, who is whose, and the checks that compare a
student with the rest of the class, decided from the files' summaries without their events.

A :class:`ClassPlan` is small (a few hundred bytes per file and per student), so a class of
any size is planned in memory and then graded student by student
(:func:`~labs.core.course.grading.score.grade_student`), in one process for
:func:`~labs.core.course.grading.score.grade` or in a pool of them for ``labs-grade``
(:mod:`~labs.core.course.grading.run`); both call the same functions, so they agree.

What the plan decides:

- the labs graded (the course file's, or those seen; ``--lab`` keeps some);
- owners: a file an LMS says who handed in (Canvas's user id in a bulk-download name, the
  roster's ``ID``) is that student's, whatever id its events carry; any other event is the
  student whose id, or any roster identity column, it carries;
- spelling: as the roster spells an id, else as the student's first event does;
- which files are each student's, which students handed in an unreadable file, and, with a
  roster, who is not on it (``not_on_roster``; a file from an LMS account that is not on the
  roster is said to be from someone not on the roster and is never pointed at a classmate;
  an id a student typed is compared with the roster's, and the roster student it is closest
  to, who handed in nothing, gets ``possible_submission``);
- Canvas's test student (Student View) is left out of the class and said on the console;
- the instructor's extensions and overrides, checked against the class.

Part of :mod:`labs.core.course.grading` (import it through that name).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Iterable

from labs.core.course import catalogue as _catalogue
from labs.core.course.grading.checks import (check_extensions, check_overrides, short_name,
                                             unreadable_uploads)
from labs.core.course.grading.config import LAB_ID_RE, CourseConfig, LabConfig
from labs.core.course.grading.ids import closest, name_owner, norm_id
from labs.core.course.grading.instructor_csvs import ConfigError, Override, load_overrides
from labs.core.course.grading.load import first_spellings, own_files
from labs.core.course.grading.sources import FileReport

__all__ = ["ClassPlan", "TEST_STUDENT_PREFIX", "is_test_student", "labs_for", "plan_class"]

#: What Canvas's bulk download calls the files of its "Student View" test student.
TEST_STUDENT_PREFIX = "studenttest_"


@dataclass
class ClassPlan:
    """Everything class-wide that grading a student needs (see the module doc)."""

    config: CourseConfig
    labs: list[LabConfig]
    students: list[str]  # as spelt, in gradebook order
    files: list[FileReport]
    files_of: dict[str, list[FileReport]]  # norm id -> the student's files
    by_key: dict[str, str]  # norm id -> the student as spelt
    unreadable: dict[str, int]  # student -> how many unreadable uploads are theirs
    class_flags: dict[str, list[str]]  # flags that compare a student with the class
    warnings: list[str]
    overrides: dict[str, list[tuple[Override, LabConfig]]]  # student -> their overrides
    receipts: dict[str, list[str]]  # norm id -> hash prefixes
    with_events: set[str]  # norm ids of students with events
    #: facts about the class that are nobody's problem: the console and README.txt say them
    notices: list[str] = field(default_factory=list)
    #: what an event is old against when its lab has no deadline (:func:`_typical_newest`)
    newest: datetime | None = None

    def chunk(self, students: list[str]) -> "ClassPlan":
        """The part of the plan that grading ``students`` needs (what a worker is sent; its
        ``config`` is left out: each worker has it once)."""
        keys = {norm_id(s) for s in students}
        files_of = {k: self.files_of[k] for k in keys if k in self.files_of}
        files = list({id(f): f for fs in files_of.values() for f in fs}.values())
        return ClassPlan(
            None, self.labs, list(students), files, files_of,
            {k: self.by_key[k] for k in keys if k in self.by_key},
            {s: self.unreadable[s] for s in students if s in self.unreadable},
            {s: self.class_flags[s] for s in students if s in self.class_flags}, [],
            {s: self.overrides[s] for s in students if s in self.overrides},
            {k: self.receipts[k] for k in keys if k in self.receipts}, set(), [], self.newest)


def _seen(files: Iterable[FileReport]) -> tuple[set[str], dict[str, set[str]]]:
    """(labs with events, items predicted per lab) over the class's files."""
    labs: set[str] = set()
    items: dict[str, set[str]] = {}
    for f in files:
        for summary in f.by_written.values():
            labs |= summary["labs"]
            for lab_id, predicted in summary["predicted"].items():
                items.setdefault(lab_id, set()).update(predicted)
    return labs, items


def labs_for(files: list[FileReport], config: CourseConfig,
             lab_ids: Iterable[str] | None = None) -> list[LabConfig]:
    """The labs graded: the course file's, else every lab seen in the submissions (with all of
    its items, the default rubric, no deadline); ``lab_ids`` keeps only those (ConfigError
    for one that is neither)."""
    if config.configured and config.labs:
        labs = list(config.labs.values())
    else:
        entries = {e.lab_id: e for e in _catalogue.catalogue()}
        seen, predicted = _seen(files)
        seen = {x for x in seen if LAB_ID_RE.match(x)} | (set(lab_ids or ()) & set(entries))
        order = [x for x in entries if x in seen] + sorted(seen - set(entries))
        labs = []
        for lab_id in order:
            lab = config.labs.get(lab_id)
            entry = entries.get(lab_id)
            if lab is None:
                lab = LabConfig(lab_id, entry.title if entry else lab_id)
            if not lab.items:  # the lab's own items; for a lab not in the catalogue, those seen
                items = entry.item_ids if entry and entry.items else sorted(
                    predicted.get(lab_id, ()))
                lab = replace(lab, items=items)
            labs.append(lab)
    if lab_ids:
        wanted = list(dict.fromkeys(lab_ids))
        known = {lab.lab_id: lab for lab in labs}
        missing = [x for x in wanted if x not in known]
        if missing:
            from labs.core.course.grading.ids import close_matches

            raise ConfigError(f"--lab {missing[0]}: not a lab of this course"
                              f"{close_matches(missing[0], known)}; its labs: "
                              f"{', '.join(known) or '(none)'}")
        labs = [known[x] for x in wanted]
    return labs


def is_test_student(report: FileReport, config: CourseConfig) -> bool:
    """Whether a file is Canvas's test student's (Student View): its bulk-download name says
    so, or its LMS id is the roster's test-student row."""
    name = short_name(report.source).casefold()
    if report.lms_id and name.startswith(TEST_STUDENT_PREFIX):
        return True
    roster = config.roster
    return bool(report.lms_id and roster and report.lms_id in roster.test_student_lms_ids)


def plan_class(files: list[FileReport], config: CourseConfig | None = None, *,
               receipts: dict[str, list[str]] | None = None,
               overrides: list[Override] | None = None,
               lab_ids: Iterable[str] | None = None) -> ClassPlan:
    """Plan the grading of the class whose files (read and summarised) are ``files``; sets
    each file's owners (:func:`~labs.core.course.grading.load.own_files`)."""
    config = config or CourseConfig()
    if overrides is None and config.overrides_path is not None:
        overrides = load_overrides(config.overrides_path)
    notices: list[str] = []
    tests = [f for f in files if is_test_student(f, config)]
    if tests:
        for f in tests:
            f.skipped = "Canvas's test student (Student View): not graded"
            f.by_written, f.owners, f.student_ids = {}, {}, []
        notices.append(f"Canvas's test student (Student View) handed in {len(tests)} "
                       "file(s): not graded (listed in files.csv)")
    labs = labs_for(files, config, lab_ids)
    roster = config.roster
    for f in files:
        entry = roster.by_lms_id(f.lms_id) if roster else None
        f.submitter = entry.student_id if entry else ""
    known = {norm_id(w) for f in files for w in f.by_written}
    for f in files:  # outside Canvas: the submitter's folder (or Blackboard username)
        if not (f.name_id or f.lms_id) and f.folder_id and (
                norm_id(f.folder_id) in known or (roster and roster.resolve(f.folder_id))):
            f.name_id = f.folder_id

    def owner(report: FileReport, written: str) -> str:
        if report.submitter:
            return report.submitter
        hit = roster.resolve(written) if roster else None
        return hit[0].student_id if hit else written

    owners = {id(f): {w: owner(f, w) or w for w in f.by_written} for f in files}
    spelling = {norm_id(s): s for s in config.roster_ids()}
    for key, sid in first_spellings((f, owners[id(f)]) for f in files).items():
        spelling.setdefault(key, sid)
    for f in files:  # a file named for a student who has no events of their own
        if f.name_id and not f.submitter and (f.unreadable or f.by_written):
            # (a name that is a roster student's other id is that student's: no new row)
            spelling.setdefault(name_owner(f.name_id, spelling, roster), f.name_id)
    for f in files:
        own_files(f, {w: spelling.get(norm_id(o), o) for w, o in owners[id(f)].items()})
    students = sorted(spelling.values(), key=lambda s: (norm_id(s), s))
    by_key = {norm_id(s): s for s in students}
    warnings = check_extensions(config, labs, students)
    files_of = _files_by_student(files, by_key, roster)
    with_events = {norm_id(o) for f in files for o in f.owners.values()}
    for f in files:
        f.name_owner = name_owner(f.name_id, by_key, roster) if f.name_id else ""
    unreadable = {sid: n for sid in students
                  if (n := len(unreadable_uploads(files_of.get(norm_id(sid), []),
                                                  norm_id(sid), norm_id(sid) in with_events)))}
    newest = _typical_newest(files)
    plan = ClassPlan(config, labs, students, files, files_of, by_key, unreadable, {},
                     warnings, {}, {norm_id(k): v for k, v in (receipts or {}).items()},
                     with_events, notices, newest)
    plan.class_flags = _roster_flags(plan)
    for o, sid, lab in check_overrides(students, labs, config, overrides or []):
        plan.overrides.setdefault(sid, []).append((o, lab))
    for lab in labs:
        plan.notices += lab.tolerance_overrides()
    return plan


def _typical_newest(files: list[FileReport]) -> datetime | None:
    """The median over the class's files of each file's newest event: what an event is old
    against when its lab has no deadline (one student's clock set a year ahead moves it
    little)."""
    newest = sorted(s["newest"] for f in files for s in f.by_written.values()
                    if s["newest"] is not None)
    return newest[len(newest) // 2] if newest else None


def _files_by_student(files: list[FileReport], known: dict, roster) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in files:
        keys = {norm_id(s) for s in f.student_ids}
        if f.submitter:
            keys.add(norm_id(f.submitter))
        elif f.name_id:
            keys.add(name_owner(f.name_id, known, roster))
        keys |= {norm_id(w) for w in f.written_ids}
        for k in keys:
            out.setdefault(k, []).append(f)
    return out


def _roster_flags(plan: ClassPlan) -> dict[str, list[str]]:
    """``not_on_roster`` for a student with work who is not on the roster, and
    ``possible_submission`` on the roster student an id a student typed is closest to, when
    that student handed in nothing. A file from an LMS account that is not on the roster
    (a student who dropped the course) is said to be so, and never pointed at a classmate."""
    roster = {norm_id(s): s for s in plan.config.roster_ids()}
    out: dict[str, list[str]] = {}
    if not roster:
        return out
    lms = plan.config.roster is not None and "ID" in plan.config.roster.columns
    for sid in plan.students:
        key = norm_id(sid)
        if key in roster or not (key in plan.with_events or sid in plan.unreadable):
            continue
        mine = plan.files_of.get(key, [])
        accounts = sorted({f.lms_id for f in mine if f.lms_id and not f.submitter})
        if accounts and lms:
            rows = plan.config.roster.left_out_lms
            without = [f"row {rows[a][0]} ({rows[a][1]})" for a in accounts if a in rows]
            out.setdefault(sid, []).append(
                f"not_on_roster (handed in through LMS account {', '.join(accounts[:3])}, "
                + (f"whose roster {', '.join(without[:3])} has no "
                   f"{plan.config.roster.id_column}: an auditor, or a student added by hand)"
                   if without else "which is not on the roster: someone who dropped the "
                   "course, or a roster older than the submissions)"))
            continue
        near = closest(sid, roster.values())
        out.setdefault(sid, []).append(f"not_on_roster (closest roster id: {near[0]})" if near
                                       else "not_on_roster (no roster id is close)")
        if near and norm_id(near[0]) not in plan.with_events:
            source = next((short_name(f.source) for f in mine if f.by_written), "")
            out.setdefault(plan.by_key.get(norm_id(near[0]), near[0]), []).append(
                f"possible_submission ({sid}" + (f": {source})" if source else ")"))
    return out
