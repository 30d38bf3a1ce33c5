"""``labs-grade``: grade design ledgers into a gradebook, LMS imports and feedback pages.

Usage::

    labs-grade SUBMISSIONS... [-c course.toml] [-o OUTDIR] [--roster roster.csv]
               [--overrides overrides.csv] [--receipts receipts.csv] [--lab LAB_ID]
               [--workers N] [--no-feedback] [--force]
    labs-grade --example-config > course.toml                # every lab and its items
    labs-grade --lab-version labs/lab_01_memory_wall.py     # the version string to release
    labs-grade --merge -o OUTDIR SHARD_OUTDIR...             # sections graded apart, joined

SUBMISSIONS are ledger files, folders of them (searched recursively) or zip files as an LMS
download gives them (nested zips too). OUTDIR (default ``grades``) receives:

- ``gradebook.csv``: one row per student (the id column, ``Name`` and ``Email`` from a roster,
  then per lab ``<title>`` (points), ``<title> - Max Points``, ``<title> - Submission Time``,
  ``<title> - Lateness (H:M:S)``, ``<title> - Status``, ``<title> - Correct``, then
  ``Total Points``, ``Max Points``, ``Flags``, ``Notes``);
- ``canvas.csv``: the lab scores as Canvas's gradebook import takes them (``Title (id)``
  headers from ``canvas_assignment_id``; students not on the roster apart, in
  ``canvas-left-out.csv``) (:mod:`~labs.core.course.grading.canvas_csv`). There is no
  Gradescope file: Gradescope documents no CSV import of scores;
- ``items.csv``: one row per student and item: its points, the parts that earned them, the
  tolerance it was judged within and where that came from;
- ``events.csv``: every event, one row each, with its source file, line and flags;
- ``files.csv``: every input file, what was found in it and what was wrong with it;
- ``feedback/<id>.html``: one page per student, ready to return (and ``feedback/index.html``);
- ``README.txt``: what each file is, and whether the scores include a late penalty.

OUTDIR is written whole: a non-empty folder is refused unless ``--force`` (then replaced
whole, and only if it holds nothing but what labs-grade writes), so two runs never mix; an
interrupted run leaves nothing (:mod:`~labs.core.course.grading.outdir`).

What is graded (per lab, per prediction item, configurable in the course TOML): *commitment*
(a ``predict`` before the item was unlocked, observed or explained), *reasoning* (the prediction
has a confidence and a reason), *reconciliation* (an ``observe`` and an ``explain`` of at least
``min_explain_chars`` characters that are not whitespace, after the prediction). Only the
first ``predict`` that holds a value is graded (:func:`labs.core.course.answers.first_prediction`).
Correctness is reported (``Correct``) and earns points only if the rubric gives it some
(default 0): a number is right within the item's own tolerance
(:func:`labs.core.physics.misconceptions.tolerance`; a course file's ``tolerance`` per lab or
``tolerances`` per item replaces it, and the run says so), exactly on the decimals written,
the boundary inside (:func:`labs.core.course.answers.within_factor`). A lab's items are, by
default, every prediction item the lab asks (the lab catalogue). Overrides replace an item's or
a lab's points; extensions move a student's deadline.

Lateness is decided per graded part: an item's prediction (commit, reason, correct) is dated by
its first ``predict``, its explanation by the later of the observe and the explain that earned
it. Events that change nothing graded (a re-measurement, a re-opened page, a ``revise``) never
make on-time work late. ``late_penalty_per_day`` takes ``penalty x started days late`` from each
late part only; ``late_policy = "deadline"`` gives late parts 0 and on-time parts their points.

Identity, with a roster: a file whose name is a Canvas bulk-download name
(``<lastfirst>[_LATE]_<user id>_<submission id>_<file>``) belongs to the student whose ``ID``
is that user id, whatever id its events carry (a disagreement is ``id_mismatch`` on both rows);
any other event belongs to the student whose id, or any roster identity column (SIS Login ID,
e-mail, Canvas ID, the id without leading zeros), it carries (Notes say which), and a file whose
name carries such an id (``roofline-ledger-<login>.jsonl``) is that student's (no row of its
own, no ``id_mismatch``).

Checks, reported as flags and never silently dropped: hash chain (``hash_mismatch``: a line
edited; ``chain_break``: lines removed, inserted or reordered; ``seq_order``), ``torn_tail``,
``malformed`` lines, ``impossible_order`` (e.g. explain before predict), ``ts_backwards`` (the
file's own order is graded, never re-sorted by time), ``future_timestamp``,
``unknown_lab_version``, ``old_timestamp`` (half a year before the deadline: another term's
ledger), ``duplicates_merged`` (the same file handed in twice: its events count once; a
growing ledger handed in to several assignments is no note),
``recovery_merged`` (events from a recovery file), ``revised`` and ``second_predict`` (only the
first prediction is graded), ``contradicting_files`` (two files start an item differently),
``receipt_missing``, ``unreadable_submission`` (a file named for the student gave nothing to
grade: the row says "Unreadable submission", never "Missing"), ``id_mismatch``,
``not_on_roster`` / ``possible_submission``, ``mixed_students``, ``odd_student_id``,
``unknown_lab``. Lines whose own hash does not match (edited) are listed but never earn points.
Ids compare ignoring case and surrounding spaces (:func:`norm_id`).

Hostile input: nothing is executed or extracted to disk; sizes, lines and problems per file,
zip member counts and nesting are bounded; one file that breaks the reader is reported, never
fatal; every string written to CSV that a spreadsheet could read as a formula (``=``, ``+``,
``-``, ``@``, tab, CR) is prefixed with ``'``. The CSVs are plain data: any page that shows
their text (the instructor dashboard) must HTML-escape it; the feedback pages do.

The hash chain proves little on its own: edits after the fact are detectable by a grader who
kept a later hash (``--receipts``: a CSV of student id, hash prefix shown in the lab's "Ledger
details"); a student who rewrites the whole chain is not stopped. Nothing here is a security
boundary.

Functions for other tools (the instructor dashboard): :func:`load_ledgers` (inputs -> a
:class:`Batch` of :class:`EventRecord` with flags, and :class:`FileReport`), :func:`load_config`
(TOML -> :class:`CourseConfig`), :func:`grade` (-> :class:`Gradebook` with :class:`LabGrade`
per student and lab), :func:`gradebook_rows`, :func:`event_rows`, :func:`file_rows` (CSV-ready
dicts, already neutralised), :func:`write_csv`, :func:`csv_safe`, :func:`feedback_page`,
:data:`FLAG_HELP` (what each flag means and how to fix it).

This module is the grader's public face (``from labs.core import grading``); the work is done in
``grading.sources`` (finding submissions), ``grading.load`` (reading them), ``grading.ids`` (how
ids compare), ``grading.instructor_csvs`` (the instructor's roster, overrides and receipts
CSVs), ``grading.config`` (the course TOML), ``grading.plan`` (the class-wide part: labs,
owners, spelling, checks that compare students), ``grading.checks`` (student-level flags),
``grading.score`` (scoring a student), ``grading.gradebook`` (the CSVs), ``grading.canvas_csv``
(``canvas.csv``, the Canvas file), ``grading.feedback`` (the pages), ``grading.run`` (a class of
any size: reading and grading in a pool of processes, a chunk at a time), ``grading.merge``
(shards joined), ``grading.outdir`` (the output folder) and ``grading.cli`` (the command line).
"""

from __future__ import annotations

import sys

from labs.core.course.grading.cli import main  # noqa: F401  (the public API, re-exported)
from labs.core.course.grading.config import (  # noqa: F401
    CourseConfig,
    LabConfig,
    Rubric,
    example_config,
    load_config,
)
from labs.core.course.grading.gradebook import (  # noqa: F401
    EVENT_COLUMNS,
    FILE_COLUMNS,
    ITEM_COLUMNS,
    MAX_CELL_CHARS,
    format_lateness,
    csv_safe,
    event_rows,
    event_table,
    file_rows,
    gradebook_rows,
    item_rows,
    write_csv,
    write_table,
)
from labs.core.course.grading.feedback import (  # noqa: F401
    FLAG_HELP,
    feedback_page,
    write_feedback,
)
from labs.core.course.grading.ids import id_from_name, norm_id  # noqa: F401
from labs.core.course.grading.instructor_csvs import (  # noqa: F401
    ConfigError,
    Override,
    Roster,
    RosterEntry,
    load_overrides,
    load_roster,
    read_receipts,
)
from labs.core.course.grading.canvas_csv import canvas_header, canvas_rows  # noqa: F401
from labs.core.course.grading.load import (  # noqa: F401
    LEDGER_SUFFIXES,
    Batch,
    EventRecord,
    FileReport,
    Limits,
    load_ledgers,
)
from labs.core.course.grading.plan import ClassPlan, plan_class  # noqa: F401
from labs.core.course.grading.run import run_class  # noqa: F401
from labs.core.course.grading.score import (  # noqa: F401
    UNREADABLE,
    Gradebook,
    ItemGrade,
    LabGrade,
    grade,
    grade_lab,
    grade_student,
)

__all__ = [
    "Batch", "ClassPlan", "ConfigError", "CourseConfig", "EVENT_COLUMNS", "EventRecord",
    "FILE_COLUMNS", "FLAG_HELP", "FileReport", "Gradebook", "ITEM_COLUMNS", "ItemGrade",
    "LEDGER_SUFFIXES", "LabConfig", "LabGrade", "Limits", "MAX_CELL_CHARS", "Override", "Roster",
    "RosterEntry", "Rubric", "UNREADABLE", "canvas_header", "canvas_rows", "csv_safe",
    "event_rows", "event_table", "example_config", "feedback_page", "file_rows", "format_lateness",
    "grade", "grade_lab", "grade_student", "gradebook_rows", "id_from_name", "item_rows",
    "load_config", "load_ledgers", "load_overrides", "load_roster", "main", "norm_id",
    "plan_class", "read_receipts", "run_class", "write_csv", "write_feedback", "write_table"
]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
