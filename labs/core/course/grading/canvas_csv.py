"""The gradebook file Canvas imports as it is: ``canvas.csv`` (and who is left out of it).

**Canvas** (Grades > Import): the header is ``Student, ID, SIS User ID, SIS Login ID,
Section`` then one column per lab. Canvas's importer treats the columns up to ``Section`` as
the student's identity (it finds the student by Canvas ``ID``, then ``SIS User ID``, then
``SIS Login ID``, then by name) and turns **every later column into an assignment**: a column
whose header is ``Title (assignment id)`` updates that assignment (the course TOML's
``canvas_assignment_id`` per lab; the id is the number at the end of the assignment's Canvas
address), a header equal to an assignment's title updates it, any other creates a new
assignment; headers containing Current or Final Score/Points/Grade or Override
Score/Grade/Status are ignored. So the file holds nothing but lab scores; a second row
``Points Possible`` sets each assignment's points possible (Canvas's importer reads the row
whose first cell says Points Possible; :func:`points_possible`, printed on the console too).
Missing and unreadable submissions are left blank (Canvas shows them ungraded; enter 0 yourself
if that is your policy), so no one gets a zero the grader made up, unless the instructor's
overrides give points to the lab or to any of its items (a file e-mailed in and graded by
hand): then the lab's points are written, as in ``gradebook.csv``. With a roster exported from
Canvas, its ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID`` and ``Section`` are copied
as they are (a blank one stays blank: no other column's value is ever put in it), and students
who are not on the roster are left out (Canvas would not find them: :func:`canvas_rows` returns
them apart); without a roster, or with one that has no such column, the student's id goes in
the ``id_column`` (``SIS User ID`` by default).

**Gradescope** documents a roster CSV upload (names, a unique e-mail, SID, sections) but no
CSV import of scores, so there is no Gradescope file: a course that grades in Gradescope and
keeps its grades in Canvas imports ``canvas.csv``; ``gradebook.csv`` is the plain spreadsheet.
Part of :mod:`labs.core.course.grading` (import it through that name).
"""

from __future__ import annotations

import re
from typing import Any

from labs.core.course.grading.gradebook import csv_safe
from labs.core.course.grading.instructor_csvs import ConfigError
from labs.core.course.grading.score import UNREADABLE, Gradebook

__all__ = [
    "CANVAS_IGNORED", "CANVAS_RESERVED", "CANVAS_STUDENT_COLUMNS", "canvas_header",
    "canvas_header_rows", "canvas_rows", "points_possible"
]

CANVAS_STUDENT_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
#: Canvas ignores columns whose header contains one of these (read-only totals).
CANVAS_IGNORED = re.compile("Current Score|Current Points|Current Grade|Final Score|"
                            "Final Points|Final Grade|Override Score|Override Grade|"
                            "Override Status")
CANVAS_RESERVED = CANVAS_STUDENT_COLUMNS + ("LastName", "FirstName", "Integration ID",
                                            "Root Account")


def _score(book: Gradebook, sid: str, lab_id: str) -> Any:
    """The lab's points; blank for a Missing or unreadable lab that the instructor gave no
    points by hand (no override of the lab, nor of any of its items)."""
    g = book.grades[(sid, lab_id)]
    by_hand = g.override is not None or any(i.override is not None for i in g.items)
    if g.status in ("Missing", UNREADABLE) and not by_hand:
        return ""
    return round(g.points, 2)


def canvas_header(lab) -> str:
    """``Title (assignment id)`` when the course TOML gives the lab's Canvas assignment id
    (Canvas matches the column to that assignment), else the title."""
    return f"{lab.title} ({lab.canvas_assignment_id})" if lab.canvas_assignment_id \
        else lab.title


def points_possible(lab) -> float:
    """A lab's most points: what its Canvas assignment's "Points possible" must be."""
    return round(lab.rubric.per_item * len(lab.items), 2)


def canvas_header_rows(book: Gradebook) -> tuple[list[str], list[list[Any]], str]:
    """(header, the ``Points Possible`` row, its text for the console) of ``canvas.csv``.
    Canvas's importer reads the row whose first cell says Points Possible and sets each
    assignment's points possible from it, so an assignment made "out of 10" does not receive
    12.5-point scores. ConfigError if a lab title would not become its own assignment."""
    titles = [lab.title for lab in book.labs]
    for lab in book.labs:
        if CANVAS_IGNORED.search(lab.title) or lab.title in CANVAS_RESERVED:
            raise ConfigError(f"labs.{lab.lab_id}.title {lab.title!r}: Canvas would not import "
                              "a column with this header; choose another title")
    if len(set(titles)) != len(titles):
        raise ConfigError("two labs have the same title: Canvas would merge their columns")
    header = list(CANVAS_STUDENT_COLUMNS) + [canvas_header(lab) for lab in book.labs]
    row = ["Points Possible", "", "", "", ""] + [points_possible(lab) for lab in book.labs]
    text = "; ".join(f"{canvas_header(lab)} {points_possible(lab):g}" for lab in book.labs)
    return header, [[csv_safe(v) for v in row]], text


def canvas_rows(book: Gradebook, *, header: bool = True
                ) -> tuple[list[str], list[list[Any]], list[str]]:
    """(header, rows, students left out) for Canvas's gradebook import: with a roster, only
    roster students (the others are returned apart: Canvas would not know them). The rows
    begin with the ``Points Possible`` row (:func:`canvas_header_rows`) unless ``header`` is
    False (then the header is empty too: the students' rows alone, for a run that writes the
    file in pieces). ConfigError if a lab title would not become its own assignment there."""
    head, points, _ = canvas_header_rows(book)
    id_col = book.config.id_column if book.config.id_column in CANVAS_STUDENT_COLUMNS[1:4] \
        else "SIS User ID"
    roster = book.config.roster
    rows = []
    left_out = []
    for sid in book.students:
        entry = roster.get(sid) if roster else None
        if roster and entry is None:
            left_out.append(sid)
            continue
        ident = {c: (entry.extra.get(c, "") if entry else "") for c in CANVAS_STUDENT_COLUMNS}
        if entry and entry.name and not ident["Student"]:
            ident["Student"] = entry.name
        if entry is None or id_col not in roster.columns:  # no such column to copy: the id
            ident[id_col] = ident[id_col] or sid
        rows.append([ident[c] for c in CANVAS_STUDENT_COLUMNS]
                    + [_score(book, sid, lab.lab_id) for lab in book.labs])
    rows = [[csv_safe(v) for v in row] for row in rows]
    if not header:
        return [], rows, left_out
    return head, points + rows, left_out
