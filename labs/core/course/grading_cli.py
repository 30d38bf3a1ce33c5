"""The ``labs-grade`` command line: inputs, course config and receipts in, three CSVs out.

Exit status 0 when the class was graded (flags are data, not errors), 2 on a usage or config
error. Part of :mod:`labs.core.course.grading` (the console script points at
``labs.core.course.grading:main``).
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
from pathlib import Path
from typing import Sequence

from labs.core.course import ledger as _ledger
from labs.core.course.grading_config import EXAMPLE_CONFIG, ConfigError, load_config
from labs.core.course.grading_csv import (EVENT_COLUMNS, FILE_COLUMNS, event_rows, file_rows,
                                          gradebook_rows, write_csv)
from labs.core.course.grading_load import Limits, load_ledgers
from labs.core.course.grading_score import grade, read_receipts


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="labs-grade",
        description="Grade Roofline Labs design ledgers into gradebook.csv, events.csv and "
                    "files.csv. Inputs: ledger files, folders, or zips as your LMS gives them.",
        epilog="Course config example:\n\n" + EXAMPLE_CONFIG,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", help="ledger files, folders or zip files")
    p.add_argument("-c", "--config", help="course TOML (deadlines, rubric per lab)")
    p.add_argument("-o", "--out", default="grades", help="output folder (default: grades)")
    p.add_argument("--receipts", help="CSV of student id, hash (receipts collected earlier)")
    p.add_argument("--max-file-mb", type=float, default=20.0,
                   help="skip ledger files larger than this (default 20)")
    p.add_argument("--lab-version", nargs="+", metavar="LAB_FILE",
                   help="print the version string of released lab files and exit")
    p.add_argument("--example-config", action="store_true",
                   help="print an example course config and exit")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``labs-grade``. Exit 0 on success (flags are data, not errors), 2 on a
    usage or config error."""
    args = _parser().parse_args(argv)
    if args.example_config:
        print(EXAMPLE_CONFIG, end="")
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
        print(f"labs-grade: not found: {', '.join(missing)}", file=sys.stderr)
        return 2
    try:
        config = load_config(args.config)
        receipts = read_receipts(args.receipts) if args.receipts else None
    except (ConfigError, OSError, UnicodeDecodeError, csv.Error) as exc:
        print(f"labs-grade: {exc}", file=sys.stderr)
        return 2
    limits = Limits(max_file_bytes=int(args.max_file_mb * 1024 * 1024))
    batch = load_ledgers(args.inputs, limits=limits)
    book = grade(batch, config, receipts=receipts)
    out = Path(args.out)
    gb = gradebook_rows(book)
    write_csv(gb, out / "gradebook.csv")
    write_csv(event_rows(batch), out / "events.csv", EVENT_COLUMNS)
    write_csv(file_rows(batch), out / "files.csv", FILE_COLUMNS)
    flagged = sum(1 for r in gb if r.get("Flags"))
    bad_files = sum(1 for f in batch.files if f.problems)
    print(f"labs-grade: {len(batch.files)} files, {len(book.students)} students, "
          f"{len(batch.events)} events; {flagged} students flagged, {bad_files} files with "
          f"problems. Wrote {out / 'gradebook.csv'}, {out / 'events.csv'}, {out / 'files.csv'}.")
    return 0

