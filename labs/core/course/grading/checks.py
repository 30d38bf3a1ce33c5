"""Student-level checks for ``labs-grade``: files, identity, records, and the instructor's inputs.

Per student (ids compared by :func:`~labs.core.course.grading.ids.norm_id`):

- files: ``unreadable_submission (file: reason)`` for a file named for the student that gave
  nothing to grade; file-level problems of their files (``malformed``, ``torn_tail``,
  ``mixed_students``);
- identity: ``id_mismatch`` on both rows when a file named for one id holds another's events
  (a name that is one of the student's roster ids, such as their SIS Login ID, is theirs);
  with a roster, ``not_on_roster (closest roster id: x)`` and, on the roster student it
  probably belongs to, ``possible_submission (id: file)``;
- records: ``contradicting_files (item: file A says x; file B says y)`` when two files of the
  student start an item with different predictions; ``receipt_missing``; ``unknown_lab``;
  ``odd_student_id``.

Facts that are not problems (an id spelt two ways, a file read as UTF-16) become notes. The
instructor's overrides and extensions are checked here too: an override naming no student or
item of the class raises ConfigError with the close matches; so does an extension naming no
roster student (without a roster: one that is a graded student's id with leading zeros added or
lost; any other naming no graded student is a warning for the console). Part of
:mod:`labs.core.course.grading` (import it through that name).
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from labs.core.course.grading.ids import (close_ids, close_matches, norm_id, same_digits,
                                          same_owner)
from labs.core.course.grading.instructor_csvs import ConfigError, Override
from labs.core.course.grading.sources import SIDE_FILE

__all__ = [
    "FLAG_HELP", "LINE_FLAGS", "SEVERITY", "SEVERITY_WORDS", "check_extensions", "check_overrides",
    "check_student", "severity", "short_name", "student_line", "student_severity", "summarise",
    "unreadable_uploads"
]

#: How much a flag matters to the grade: "wrong" (the grade may be wrong: look before
#: uploading), "check" (the grade stands, but something is odd), "info" (a fact: no action).
SEVERITY = {
    **dict.fromkeys(("contradicting_files", "id_mismatch", "not_on_roster",
                     "possible_submission", "unknown_lab", "unreadable_submission",
                     "hash_mismatch", "chain_break", "seq_order", "mixed_students",
                     "receipt_missing"), "wrong"),
    **dict.fromkeys(("impossible_order", "second_predict", "unknown_lab_version", "torn_tail",
                     "malformed", "ts_backwards", "future_timestamp", "old_timestamp",
                     "odd_student_id"), "check"),
    **dict.fromkeys(("revised", "duplicates_merged", "recovery_merged"), "info"),
}
SEVERITY_WORDS = {"wrong": "grade may be wrong", "check": "worth a look", "info": "note"}


#: flag code -> (what it means, how to fix it). Every code the grader emits has an entry.
FLAG_HELP: dict[str, tuple[str, str]] = {
    "hash_mismatch": ("A line of the ledger was edited after the lab wrote it; it earns "
                      "nothing.", "Hand in the ledger exactly as the lab saved it (or use the "
                      "lab's Download button); never edit it by hand."),
    "chain_break": ("Lines were removed, inserted or reordered.", "Hand in the whole file "
                    "as the lab saved it; do not merge or cut ledgers by hand."),
    "seq_order": ("Event numbers go backwards: lines were reordered or files pasted "
                  "together.", "Hand in each ledger file as it is, side by side."),
    "torn_tail": ("The last line was cut off (the lab or the computer stopped mid-write).",
                  "Nothing to do: earlier lines count. Keep the recovery file if the lab "
                  "made one and hand it in too."),
    "malformed": ("Some lines are not ledger events.", "Do not open the ledger in an editor "
                  "or spreadsheet and save it; hand in the file the lab wrote."),
    "ts_backwards": ("A timestamp goes back in time within a file (a changed clock, or a "
                     "line added later). The file's own order is what is graded.",
                     "Keep your computer's clock right; never add lines by hand."),
    "future_timestamp": ("An event is dated more than a day in the future.",
                         "Set your computer's clock correctly."),
    "old_timestamp": ("Some events are dated more than half a year before the lab's deadline "
                      "(a ledger from another term, or a clock far off).",
                      "Hand in the ledger of this term's work, with your computer's clock "
                      "right."),
    "unknown_lab_version": ("The lab file you used is not a released version.",
                            "Use the lab files the course released (download them again)."),
    "duplicates_merged": ("The same events were handed in more than once; they count once.",
                          "Nothing to do."),
    "recovery_merged": ("Events came from a recovery file the lab wrote after a problem "
                        "with the main ledger; they count.", "Nothing to do."),
    "revised": ("You changed a prediction after locking it; the first one is graded.",
                "Nothing to do: predictions are meant to be locked before the reveal."),
    "second_predict": ("An item has two predictions (two windows, or a second ledger); the "
                       "first is graded.", "Do each lab in one window, with one ledger."),
    "impossible_order": ("Something happened before the prediction it depends on (e.g. an "
                         "explanation before the prediction).", "Predict first, then reveal, "
                         "then explain, in one ledger."),
    "receipt_missing": ("A receipt you were given is not in the ledger you handed in.",
                        "Hand in the ledger that contains all your work."),
    "unknown_lab": ("The ledger has events of a lab this course does not grade.",
                    "Nothing to do unless that lab should count: ask your instructor."),
    "odd_student_id": ("Your student id has characters a lab would not accept.",
                       "Enter the id your instructor gave you in the lab's ledger panel."),
    "mixed_students": ("One file holds events of several students.", "Hand in only your own "
                       "ledger."),
    "unreadable_submission": ("A file you handed in could not be read, so it earned nothing.",
                              "Hand in the file the lab saved (or its Download button gives), "
                              "unchanged, as UTF-8: see the reason given."),
    "id_mismatch": ("A file you handed in carries another student's id (or is named for "
                    "one), or another student handed in a file with your id. Your instructor "
                    "decides whose work it is.", "Hand in your own ledger; type your own "
                    "student id (the one your instructor gave you) in every lab."),
    "not_on_roster": ("The student id in the ledger is not on the class roster.",
                      "Enter exactly the id your instructor gave you in every lab."),
    "possible_submission": ("A ledger under a similar id may be yours.", "Tell your "
                            "instructor which id you used; use the roster id from now on."),
    "contradicting_files": ("Two of your ledgers start an item with different predictions "
                            "(e.g. a fresh file in a new folder after the reveal).",
                            "Keep one ledger folder; the earliest prediction is graded."),
}

def severity(flag: str) -> str:
    """``"wrong"``, ``"check"`` or ``"info"`` for a flag such as ``id_mismatch (...)`` (a flag
    this table does not know is "wrong": look at it)."""
    return SEVERITY.get(flag.split(" ", 1)[0].split("@")[0], "wrong")


def student_severity(book, sid: str) -> str:
    """The most serious severity of a student's flags (``""`` for none)."""
    flags = list(book.student_flags.get(sid, []))
    flags += [f for lab in book.labs for f in book.grades[(sid, lab.lab_id)].flags]
    found = {severity(f) for f in flags}
    return next((s for s in ("wrong", "check", "info") if s in found), "")


LINE_FLAGS = ("hash_mismatch", "chain_break", "seq_order", "torn_tail", "malformed",
              "ts_backwards", "future_timestamp", "old_timestamp")
_FILE_LEVEL = ("malformed", "torn_tail", "mixed_students")


@functools.lru_cache(maxsize=4096)  # a file's events ask for its name one by one
def short_name(source: str) -> str:
    return Path(source.split("!")[-1].replace("\\", "/")).name


def summarise(where: dict[tuple[str, str], list[int]]) -> list[str]:
    """``code (file: line 1, 2, 6)`` per code and file; codes without lines stay bare."""
    out = []
    for (code, name), lines in where.items():
        if code in LINE_FLAGS and lines:
            shown = ", ".join(str(n) for n in sorted(set(lines))[:10])
            more = " ..." if len(set(lines)) > 10 else ""
            text = f"{code} ({name}: line{'s' if len(set(lines)) > 1 else ''} {shown}{more})"
        else:
            text = code
        if text not in out:
            out.append(text)
    return out


def _shown(value: Any) -> str:
    text = repr(value) if not isinstance(value, str) else value
    return text if len(text) <= 40 else text[:37] + "..."


def _who(sid: str, roster) -> str:
    entry = roster.get(sid) if roster else None
    return f"{sid} ({entry.name})" if entry and entry.name else sid


def _typed_as(written: str, sid: str, roster) -> str:
    """How an id the student typed names them: ``"jdoe (their SIS Login ID)"``."""
    hit = roster.resolve(written) if roster else None
    column = hit[1] if hit and hit[0].student_id == sid else ""
    return f"{written!r} (their {column})" if column else repr(written)


def _submitter_checks(f, name: str, key: str, sid: str, roster, out: list,
                      notes: list) -> None:
    """A file the LMS says ``f.submitter`` handed in, whose events carry other ids: flagged
    on the submitter's row and on the row of each student whose id it carries."""
    for written in f.written_ids:
        hit = roster.resolve(written) if roster else None
        named = hit[0].student_id if hit else written
        if norm_id(named) == norm_id(f.submitter):
            if key == norm_id(f.submitter) and hit and hit[1]:
                notes.append(f"{name}: id typed as {_typed_as(written, sid, roster)}")
            continue
        if key == norm_id(f.submitter):
            whose = _who(named, roster) if hit else f"{written}, not on the roster"
            out.append(f"id_mismatch (handed in {name} (LMS id {f.lms_id}), whose events "
                       f"carry the id of {whose}; graded as this student's)")
        elif key == norm_id(named):
            out.append(f"id_mismatch ({_who(f.submitter, roster)} handed in {name} with this "
                       f"student's id in its events; graded as {f.submitter}'s, not this "
                       "student's)")


def _contradictions(files: list, key: str) -> list[str]:
    firsts: dict[str, list[tuple[str, str, Any]]] = {}
    for f in files:
        for (k, item), (h, value) in f.first_predicts.items():
            if k == key:
                firsts.setdefault(item, []).append((short_name(f.source), h, value))
    out = []
    for item, seen in firsts.items():
        distinct = {}
        for name, h, value in seen:
            distinct.setdefault(repr(value), (name, value))
        if len(distinct) > 1:
            said = "; ".join(f"{name} says {_shown(v)}" for name, v in distinct.values())
            out.append(f"contradicting_files ({item}: {said})")
    return out


def _copies(files: list) -> list[tuple[Any, str]]:
    """Files grouped by content: (the first of each group, how to name the group), so a file
    uploaded twice is named once (``a.jsonl and its copy a-1.jsonl``)."""
    groups: dict[str, list] = {}
    for f in files:
        groups.setdefault(f.digest or f"source:{f.source}", []).append(f)
    out = []
    for group in groups.values():
        name = short_name(group[0].source)
        others = sorted({short_name(g.source) for g in group[1:]} - {name})
        if others:
            name += (f" and its cop{'ies' if len(others) > 1 else 'y'} "
                     f"{', '.join(others[:3])}{' ...' if len(others) > 3 else ''}")
        out.append((group[0], name))
    return out


def _named_mine(f, key: str) -> bool:
    """Whether the LMS, or the file's name, says the file is the student's (``name_owner``:
    whom the plan found its name stands for)."""
    if f.submitter:
        return norm_id(f.submitter) == key
    return bool(f.name_id) and f.name_owner == key


def unreadable_uploads(files: list, key: str, has_events: bool) -> list:
    """The student's uploads that gave nothing to grade (one per group of copies): a file the
    LMS or its name says is theirs that could not be read, or that an LMS says they handed in
    and holds no event. The lab's lock file handed in next to a graded ledger is not one."""
    out = []
    for f, _ in _copies(files):
        if _named_mine(f, key) and (f.unreadable or (f.submitter and not f.events)):
            if f.skipped == SIDE_FILE and has_events:
                continue
            out.append(f)
    return out


def check_student(plan, sid: str, mine: list, hashes: set[str]) -> tuple[list[str], list[str]]:
    """(flags, notes) of one student: their files, identity and records (see the module doc).
    ``mine``: their events in the merged order; ``hashes``: every hash they handed in."""
    config = plan.config
    key = norm_id(sid)
    lab_ids = {lab.lab_id for lab in plan.labs}
    out: list[str] = []
    notes: list[str] = []
    out += [f"unknown_lab ({x})" for x in sorted({e.lab_id for e in mine} - lab_ids)]
    if any("odd_student_id" in e.flags for e in mine):
        out.append("odd_student_id")
    for h in plan.receipts.get(key, []):
        if not any(x.startswith(h) for x in hashes):
            out.append(f"receipt_missing ({h[:16]})")
    where: dict[tuple[str, str], list[int]] = {}
    files = plan.files_of.get(key, [])
    for f, name in _copies(files):
        named_mine = _named_mine(f, key)
        if named_mine and (f.unreadable or (f.submitter and not f.events)):
            if f.skipped == SIDE_FILE and mine:  # the lock file next to a graded ledger
                notes.append(f"{name}: handed in too, not graded ({f.reason})")
                continue
            out.append(f"unreadable_submission ({name}: {f.reason})")
        if f.submitter:
            _submitter_checks(f, name, key, sid, config.roster, out, notes)
        if any(norm_id(s) == key for s in f.student_ids):
            for p in f.problems:  # problems no event carries: malformed lines, a torn tail
                code, _, line = p.partition("@")
                if code in _FILE_LEVEL:
                    lines = where.setdefault((code, name), [])
                    if line.isdigit():
                        lines.append(int(line))
            notes.extend(f"{name}: {n}" for n in f.notes)
        for other in ([] if f.submitter else f.student_ids):  # the LMS said whose it is
            if f.name_id and not same_owner(f.name_id, other) and \
                    f.name_owner != norm_id(other):  # e.g. a login
                if named_mine:
                    out.append(f"id_mismatch ({name} is named for {f.name_id} but holds "
                               f"events of {other})")
                elif norm_id(other) == key:
                    out.append(f"id_mismatch (events in {name}, a file named for "
                               f"{f.name_id})")
    out += summarise(where)
    out += _contradictions(files, key)
    accounts = sorted({f.lms_id for f in files if f.lms_id and not f.submitter
                       and any(norm_id(x) == key for x in f.student_ids)})
    if len(accounts) > 1:  # no roster ID column to say who: at least say it is two people
        out.append(f"id_mismatch (files handed in by {len(accounts)} LMS accounts "
                   f"({', '.join(accounts[:4])}) carry this id; add the roster's ID column "
                   "to tell whose is whose)")
    submitted = {f.source for f in files if f.submitter}  # the LMS said whose they are
    typed = {e.written_id.strip() for e in mine if e.source not in submitted} - {sid}
    spellings = sorted(w for w in typed if norm_id(w) == key)
    if spellings:
        notes.append(f"id also written as {', '.join(spellings)}")
    for w in sorted(typed - set(spellings)):
        notes.append(f"id typed as {_typed_as(w, sid, config.roster)}: matched on the roster")
    out += plan.class_flags.get(sid, [])
    return out, notes


def check_overrides(students: list[str], labs: list, config, overrides: list[Override]):
    """(override, student as the gradebook spells it, lab) per row; ConfigError otherwise."""
    students = {norm_id(s): s for s in students}
    items = {i: lab for lab in labs for i in lab.items}
    labs = {lab.lab_id: lab for lab in labs}
    seen: dict[tuple[str, str], int] = {}
    out = []
    for o in overrides:
        where = f"overrides {o.source}: row {o.row}"
        sid = students.get(norm_id(o.student_id))
        hit = config.roster.resolve(o.student_id) if config.roster else None
        if sid is None and hit:  # the student's SIS Login ID, e-mail, ...
            sid = students.get(norm_id(hit[0].student_id))
        if sid is None:
            raise ConfigError(f"{where}: student {o.student_id!r} is not in the class"
                              f"{close_matches(o.student_id, list(students.values()))}")
        lab = items.get(o.item) or labs.get(o.item)
        if lab is None:
            raise ConfigError(f"{where}: item {o.item!r} is not a graded item or lab"
                              f"{close_matches(o.item, list(items) + list(labs))}")
        key = (norm_id(sid), o.item)
        if key in seen:
            raise ConfigError(f"{where}: {o.student_id} / {o.item} is also on row {seen[key]}")
        seen[key] = o.row
        out.append((o, sid, lab))
    return out


def check_extensions(config, labs, students: list[str]) -> list[str]:
    """Every extension must name a student, by any of their ids; it is re-keyed to the
    student's id as the gradebook spells it. With a roster (or ``course.students``), a key on
    no roster row raises ConfigError. Without one, the class is the students graded: a key
    that is one of them with leading zeros added or lost raises ConfigError (``"2310222"`` for
    ``02310222``); any other key naming no one is returned as a warning, for the console
    (the student may not have handed in yet, or the key is wrong: it was not applied)."""
    roster = {norm_id(s): s for s in config.roster_ids()}
    graded = {norm_id(s): s for s in students}
    tables = [("course.extensions", config.extensions)] + [
        (f"labs.{lab.lab_id}.extensions", lab.extensions) for lab in labs]
    warnings = []
    for where, table in tables:
        for key in list(table):
            if roster:
                hit = config.roster.resolve(key) if key not in roster and config.roster \
                    else None
                if hit and norm_id(hit[0].student_id) not in table:  # another roster id
                    table[norm_id(hit[0].student_id)] = table.pop(key)
                    continue
                if key not in roster:
                    raise ConfigError(f"{where}: {key!r} is not on the roster"
                                      f"{close_ids(key, roster.values())}")
                continue
            if key in graded:
                continue
            zeros = [s for s in graded.values() if same_digits(key, s)]
            if zeros:
                raise ConfigError(
                    f"{where}: {key!r} names no student in the submissions{close_ids(key, zeros)} "
                    "(the same digits with the leading zeros added or lost); write the id as "
                    "the student's ledger does")
            warnings.append(f"{where}: {key!r} names no student in the submissions"
                            f"{close_ids(key, graded.values())}; not applied (a student who "
                            "has handed in nothing yet, or a wrong id: give a roster to check)")
    return warnings


def student_line(book, sid: str, level: str) -> str:
    """The console's line for a student: their id, name and first three flags of ``level``."""
    entry = book.config.roster.get(sid) if book.config.roster else None
    name = f" {entry.name}" if entry and entry.name else ""
    flags = [f for f in book.student_flags.get(sid, []) if severity(f) == level]
    flags += [f"{lab.lab_id}: {f}" for lab in book.labs
              for f in book.grades[(sid, lab.lab_id)].flags if severity(f) == level]
    shown = "; ".join(f if len(f) <= 240 else f[:237] + "..." for f in flags[:3])
    more = f" (and {len(flags) - 3} more)" if len(flags) > 3 else ""
    return f"    {sid}{name}: {shown}{more}"
