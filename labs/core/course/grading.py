"""``labs-grade``: grade design ledgers into a gradebook CSV and a long events CSV.

Usage::

    labs-grade SUBMISSIONS... [-c course.toml] [-o OUTDIR] [--receipts receipts.csv]
    labs-grade --lab-version labs/lab_01_memory_wall.py     # the version string to release

SUBMISSIONS are ledger files, folders of them (searched recursively) or zip files as an LMS
download gives them (nested zips too). OUTDIR (default ``grades``) receives:

- ``gradebook.csv``: one row per student id (Canvas/Gradescope-style columns: the id column,
  then per lab ``<title>`` (points), ``<title> - Max Points``, ``<title> - Submission Time``,
  ``<title> - Lateness (H:M:S)``, ``<title> - Status``, ``<title> - Correct``, then
  ``Total Points``, ``Max Points``, ``Flags``);
- ``events.csv``: every event, one row each, with its source file, line and flags;
- ``files.csv``: every input file, what was found in it and what was wrong with it.

What is graded (per lab, per prediction item, configurable in the course TOML): *commitment*
(a ``predict`` before the item was unlocked, observed or explained), *reasoning* (the prediction
has a confidence and a reason), *reconciliation* (an ``observe`` and an ``explain`` of at least
``min_explain_chars`` after the prediction). Correctness is reported (``Correct``) and earns
points only if the rubric gives it some (default 0).

Checks, reported as flags and never silently dropped: hash chain (``hash_mismatch``: a line
edited; ``chain_break``: lines removed, inserted or reordered; ``seq_order``), ``torn_tail``,
``malformed`` lines, ``impossible_order`` (e.g. explain before predict), ``ts_backwards``,
``future_timestamp``, ``unknown_lab_version``, ``duplicates_merged`` (the same event handed in
twice counts once), ``recovery_merged`` (events from a recovery file), ``revised`` (a prediction
changed after locking: the first one is graded), ``receipt_missing``, ``file_unreadable``,
``file_too_large``, ``skipped_member``, ``mixed_students``, ``odd_student_id``, ``unknown_lab``.
Lines whose own hash does not match (edited) are listed but never earn points.

Hostile input: nothing is executed or extracted to disk; sizes, zip member counts, nesting and
line lengths are bounded; every string written to CSV that a spreadsheet could read as a
formula (``=``, ``+``, ``-``, ``@``, tab, CR) is prefixed with ``'``. The CSVs are plain data:
any page that shows their text (the instructor dashboard) must HTML-escape it.

The hash chain proves little on its own: edits after the fact are detectable by a grader who
kept a later hash (``--receipts``: a CSV of student id, hash prefix shown in the lab's "Ledger
details"); a student who rewrites the whole chain is not stopped. Nothing here is a security
boundary.

Functions for other tools (the instructor dashboard): :func:`load_ledgers` (inputs -> a
:class:`Batch` of :class:`EventRecord` with flags, and :class:`FileReport`), :func:`load_config`
(TOML -> :class:`CourseConfig`), :func:`grade` (-> :class:`Gradebook` with :class:`LabGrade`
per student and lab), :func:`gradebook_rows`, :func:`event_rows`, :func:`file_rows` (CSV-ready
dicts, already neutralised), :func:`write_csv`, :func:`csv_safe`.

This module is the grader's public face (``from labs.core import grading``); the work is done in
``grading_load`` (reading submissions), ``grading_config`` (the course TOML), ``grading_score``
(scoring), ``grading_csv`` (the CSVs) and ``grading_cli`` (the command line).
"""

from __future__ import annotations

import sys

from labs.core.course.grading_cli import main  # noqa: F401  (the public API, re-exported)
from labs.core.course.grading_config import (  # noqa: F401
    EXAMPLE_CONFIG,
    ConfigError,
    CourseConfig,
    LabConfig,
    Rubric,
    load_config,
)
from labs.core.course.grading_csv import (  # noqa: F401
    EVENT_COLUMNS,
    FILE_COLUMNS,
    MAX_CELL_CHARS,
    _fmt_lateness,
    csv_safe,
    event_rows,
    file_rows,
    gradebook_rows,
    write_csv,
)
from labs.core.course.grading_load import (  # noqa: F401
    LEDGER_SUFFIXES,
    Batch,
    EventRecord,
    FileReport,
    Limits,
    load_ledgers,
)
from labs.core.course.grading_score import (  # noqa: F401
    Gradebook,
    ItemGrade,
    LabGrade,
    grade,
    grade_lab,
    read_receipts,
)

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
