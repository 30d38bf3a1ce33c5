"""The ``labs-grade`` command line: inputs, course config and the instructor's CSVs in; the
gradebook, its LMS twins, the long CSVs and one feedback page per student out.

Exit status: 0 when the class was graded and nothing needs a look, 1 when it was graded and
problems were found (files that could not be graded, flagged students: both named on the
console), 2 on a usage or configuration error (nothing written), 3 if the grader itself failed
(a bug: please report it). One bad submission never stops the others. Part of
:mod:`labs.core.course.grading` (the console script points at
``labs.core.course.grading:main``).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import traceback
from pathlib import Path
from typing import Sequence

from labs.core.course import ledger as _ledger
from labs.core.course.grading_config import example_config, load_config
from labs.core.course.grading_csv import (EVENT_COLUMNS, FILE_COLUMNS, event_rows, file_rows,
                                          gradebook_rows, write_csv, write_table)
from labs.core.course.grading_feedback import write_feedback
from labs.core.course.grading_inputs import (ConfigError, load_overrides, load_roster,
                                             read_receipts)
from labs.core.course.grading_lms import canvas_rows, gradescope_rows
from labs.core.course.grading_load import Limits, load_ledgers
from labs.core.course.grading_score import grade

MAX_LISTED = 50  # files named on the console; the rest are in files.csv


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="labs-grade",
        description="Grade Roofline Labs design ledgers into gradebook.csv (plus canvas.csv, "
                    "gradescope.csv, events.csv, files.csv) and one feedback page per student. "
                    "Inputs: ledger files, folders, or zips as your LMS gives them.",
        epilog="Exit status: 0 graded, nothing to look at; 1 graded, problems found (named "
               "above the summary); 2 usage or config error. A course config to start from: "
               "labs-grade --example-config > course.toml",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", help="ledger files, folders or zip files")
    p.add_argument("-c", "--config", help="course TOML (deadlines, rubric, extensions per lab)")
    p.add_argument("-o", "--out", default="grades", help="output folder (default: grades)")
    p.add_argument("--roster", help="roster CSV: ids, names, e-mails (a Canvas or Gradescope "
                                    "export works)")
    p.add_argument("--overrides", help="CSV of student,item,points,comment merged into the "
                                       "gradebook")
    p.add_argument("--receipts", help="CSV of student id, hash (receipts collected earlier)")
    p.add_argument("--max-file-mb", type=float, default=20.0,
                   help="skip ledger files larger than this (default 20)")
    p.add_argument("--no-feedback", action="store_true", help="do not write feedback pages")
    p.add_argument("--lab-version", nargs="+", metavar="LAB_FILE",
                   help="print the version string of released lab files and exit")
    p.add_argument("--example-config", action="store_true",
                   help="print a course config listing every lab and its items, and exit")
    return p


def _say(text: str, stream=None) -> None:
    """Print text any console can show (a lone surrogate from a file name included)."""
    stream = stream or sys.stdout
    enc = getattr(stream, "encoding", None) or "utf-8"
    stream.write(text.encode(enc, "replace").decode(enc, "replace") + "\n")


def _inputs(args, config):
    if args.roster:
        config.roster = load_roster(args.roster, config.id_column)
    overrides = load_overrides(args.overrides) if args.overrides else None
    receipts = read_receipts(args.receipts) if args.receipts else None
    return overrides, receipts


def _report(batch, book, out: Path, written: list[str]) -> int:
    """The console summary; the exit status (0 nothing to look at, 1 problems found)."""
    unreadable = [f for f in batch.files if f.unreadable]
    damaged = [f for f in batch.files if f.problems and not f.unreadable]
    flagged = [s for s in book.students if book.student_flags.get(s) or any(
        book.grades[(s, lab.lab_id)].flags for lab in book.labs)]
    _say(f"labs-grade: {len(batch.files)} files, {len(book.students)} students, "
         f"{len(batch.events)} events.")
    if unreadable:
        _say(f"  {len(unreadable)} file(s) could not be graded (their students' rows say "
             f"\"Unreadable submission\"):")
        for f in unreadable[:MAX_LISTED]:
            who = f"student {f.name_id}" if f.name_id else "no student id in its name"
            _say(f"    {f.source} ({who}): {f.reason}")
    if damaged:
        _say(f"  {len(damaged)} file(s) had problems but were graded (details in files.csv):")
        for f in damaged[:MAX_LISTED]:
            who = ", ".join(f.student_ids) or f.name_id or "?"
            _say(f"    {f.source} ({who}): {f.reason}"
                 + (f" and {len(f.problems) - 1} more" if len(f.problems) > 1 else ""))
    if len(unreadable) > MAX_LISTED or len(damaged) > MAX_LISTED:
        _say(f"    ... and more: every file is in {out / 'files.csv'}")
    if flagged:
        _say(f"  {len(flagged)} student(s) flagged (see the Flags column and their feedback "
             "pages).")
    _say("Wrote " + ", ".join(written) + ".")
    return 1 if unreadable or damaged or flagged else 0


def _write(batch, book, out: Path, feedback: bool) -> list[str]:
    written = []
    write_csv(gradebook_rows(book), out / "gradebook.csv")
    write_csv(event_rows(batch), out / "events.csv", EVENT_COLUMNS)
    write_csv(file_rows(batch), out / "files.csv", FILE_COLUMNS)
    written += [str(out / n) for n in ("gradebook.csv", "events.csv", "files.csv")]
    try:
        write_table(*canvas_rows(book), out / "canvas.csv")
        written.append(str(out / "canvas.csv"))
    except ConfigError as exc:
        _say(f"labs-grade: no canvas.csv: {exc}", sys.stderr)
    header, rows, left_out = gradescope_rows(book)
    if rows:  # Gradescope matches students by e-mail: only with a roster that has them
        write_table(header, rows, out / "gradescope.csv")
        written.append(str(out / "gradescope.csv"))
    if rows and left_out:
        _say(f"labs-grade: gradescope.csv leaves out {len(left_out)} student(s) without a "
             f"roster e-mail: {', '.join(left_out[:10])}{' ...' if len(left_out) > 10 else ''}")
    if feedback:
        pages = write_feedback(book, batch, out / "feedback")
        written.append(f"{out / 'feedback'}/ ({len(pages)} pages)")
    return written


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``labs-grade`` (exit status: see the module doc)."""
    args = _parser().parse_args(argv)
    if args.example_config:
        print(example_config())
        return 0
    if args.lab_version:
        for f in args.lab_version:
            print(f"{_ledger.lab_version(f)}  {f}")
        return 0
    if not args.inputs:
        _parser().print_usage(sys.stderr)
        print("labs-grade: give at least one ledger file, folder or zip", file=sys.stderr)
        return 2
    missing = [i for i in args.inputs if not os.path.exists(i)]
    if missing:
        _say(f"labs-grade: not found: {', '.join(missing)}", sys.stderr)
        return 2
    try:
        config = load_config(args.config)
        overrides, receipts = _inputs(args, config)
        limits = Limits(max_file_bytes=int(args.max_file_mb * 1024 * 1024))
        batch = load_ledgers(args.inputs, limits=limits)
        book = grade(batch, config, receipts=receipts, overrides=overrides)
    except (ConfigError, OSError, UnicodeDecodeError, csv.Error) as exc:
        _say(f"labs-grade: {exc}", sys.stderr)
        return 2
    except Exception:  # noqa: BLE001 - a bug, not a bad submission: say so, distinctly
        _say("labs-grade: internal error (please report it with this output):\n"
             + traceback.format_exc(), sys.stderr)
        return 3
    out = Path(args.out)
    try:
        written = _write(batch, book, out, not args.no_feedback)
    except OSError as exc:
        _say(f"labs-grade: cannot write to {out}: {exc}", sys.stderr)
        return 2
    return _report(batch, book, out, written)
