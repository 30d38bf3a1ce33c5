"""Gradebook files an LMS imports as they are: ``canvas.csv`` and ``gradescope.csv``.

**Canvas** (Grades > Import): the header is ``Student, ID, SIS User ID, SIS Login ID,
Section`` then one column per lab. Canvas's importer treats the columns up to ``Section`` as
the student's identity (it finds the student by Canvas ``ID``, then ``SIS User ID``, then
``SIS Login ID``, then by name) and turns **every later column into an assignment**: a column
whose header equals an assignment's title (or ``Title (assignment id)``) updates it, any other
creates a new assignment, except headers containing Current or Final Score/Points/Grade or
Override Score/Grade/Status, which it ignores. So the file holds nothing but lab scores; a
second row ``Points Possible`` gives new assignments their maximum. Missing and unreadable
submissions are left blank (Canvas shows them ungraded; enter 0 yourself if that is your
policy), so no one gets a zero the grader made up. With a roster exported from Canvas, its
``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID`` and ``Section`` are copied; otherwise
the student's ledger id goes in the ``id_column`` (``SIS User ID`` by default).

**Gradescope**: ``Name, Email, SID`` (its roster columns: a header row, a unique e-mail per
student, names in one column) then per lab ``<title>``, ``<title> - Max Points``,
``<title> - Submission Time``, ``<title> - Lateness (H:M:S)`` as Gradescope's own grade
export lays them out. Students without an e-mail (not on the roster) are left out and named.
Part of :mod:`labs.core.course.grading` (import it through that name).
"""

from __future__ import annotations

import re
from typing import Any

from labs.core.course.grading_csv import _fmt_lateness, _fmt_time, csv_safe
from labs.core.course.grading_inputs import ConfigError
from labs.core.course.grading_score import UNREADABLE, Gradebook

CANVAS_STUDENT_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
#: Canvas ignores columns whose header contains one of these (read-only totals).
CANVAS_IGNORED = re.compile("Current Score|Current Points|Current Grade|Final Score|"
                            "Final Points|Final Grade|Override Score|Override Grade|"
                            "Override Status")
CANVAS_RESERVED = CANVAS_STUDENT_COLUMNS + ("LastName", "FirstName", "Integration ID",
                                            "Root Account")
GRADESCOPE_COLUMNS = ("Name", "Email", "SID")


def _score(book: Gradebook, sid: str, lab_id: str) -> Any:
    g = book.grades[(sid, lab_id)]
    if g.status in ("Missing", UNREADABLE) and g.override is None:
        return ""
    return round(g.points, 2)


def canvas_rows(book: Gradebook) -> tuple[list[str], list[list[Any]]]:
    """(header, rows) for Canvas's gradebook import; ConfigError if a lab title would not
    become its own assignment there."""
    titles = [lab.title for lab in book.labs]
    for lab in book.labs:
        if CANVAS_IGNORED.search(lab.title) or lab.title in CANVAS_RESERVED:
            raise ConfigError(f"labs.{lab.lab_id}.title {lab.title!r}: Canvas would not import "
                              "a column with this header; choose another title")
    if len(set(titles)) != len(titles):
        raise ConfigError("two labs have the same title: Canvas would merge their columns")
    id_col = book.config.id_column if book.config.id_column in CANVAS_STUDENT_COLUMNS[1:4] \
        else "SIS User ID"
    roster = book.config.roster
    header = list(CANVAS_STUDENT_COLUMNS) + titles
    rows = [["Points Possible", "", "", "", ""] + [round(lab.rubric.per_item * len(lab.items), 2)
                                                   for lab in book.labs]]
    for sid in book.students:
        entry = roster.get(sid) if roster else None
        ident = {c: (entry.extra.get(c, "") if entry else "") for c in CANVAS_STUDENT_COLUMNS}
        if entry and entry.name and not ident["Student"]:
            ident["Student"] = entry.name
        ident[id_col] = ident[id_col] or sid
        rows.append([ident[c] for c in CANVAS_STUDENT_COLUMNS]
                    + [_score(book, sid, lab.lab_id) for lab in book.labs])
    return header, [[csv_safe(v) for v in row] for row in rows]


def gradescope_rows(book: Gradebook) -> tuple[list[str], list[list[Any]], list[str]]:
    """(header, rows, students left out for want of an e-mail)."""
    roster = book.config.roster
    header = list(GRADESCOPE_COLUMNS)
    for lab in book.labs:
        header += [lab.title, f"{lab.title} - Max Points", f"{lab.title} - Submission Time",
                   f"{lab.title} - Lateness (H:M:S)"]
    rows, left_out, emails = [], [], set()
    for sid in book.students:
        entry = roster.get(sid) if roster else None
        email = entry.email if entry else ""
        if not email or email.casefold() in emails:
            left_out.append(sid)
            continue
        emails.add(email.casefold())
        row: list[Any] = [entry.name, email, sid]
        for lab in book.labs:
            g = book.grades[(sid, lab.lab_id)]
            row += [_score(book, sid, lab.lab_id), round(g.max_points, 2),
                    _fmt_time(g.submitted), _fmt_lateness(g.lateness)]
        rows.append(row)
    return header, [[csv_safe(v) for v in row] for row in rows], left_out
