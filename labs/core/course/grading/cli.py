"""The ``labs-grade`` command line: inputs, course config and the instructor's CSVs in; the
gradebook, its LMS twins, the long CSVs and one feedback page per student out.

Exit status: 0 when the class was graded and nothing needs a look, 1 when it was graded and
problems were found (files that could not be graded, flagged students: both named on the
console), 2 on a usage or configuration error (nothing written), 3 if the grader itself failed
(a bug: please report it); stopped by a signal, 128 + its number (130 for Ctrl+C), with the
partial run removed. One bad submission never stops the others. The run itself (reading in
parallel, grading student by student) is :mod:`~labs.core.course.grading.run`. Part of
:mod:`labs.core.course.grading` (the console script points at
``labs.core.course.grading:main``).
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import sys
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from labs.core.course import ledger as _ledger
from labs.core.course.grading.config import example_config, load_config
from labs.core.course.grading.instructor_csvs import (ConfigError, load_overrides,
                                                      load_roster, read_receipts)
from labs.core.course.grading.load import Limits
from labs.core.course.grading.outdir import (RUN_FILE, check_out, clean_stale, replace_with,
                                             staging)
from labs.core.course.grading.run import Interrupted, check_stop, run_class, stop_on_signals
from labs.core.course.ledger.events import MAX_READ_BYTES

__all__ = ["MAX_LISTED", "main"]

MAX_LISTED = 50  # files named on the console; the rest are in files.csv


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="labs-grade",
        description="Grade Roofline Labs design ledgers into gradebook.csv (plus canvas.csv "
                    "for Canvas's grade import, events.csv, files.csv) and one feedback page per "
                    "student, in a fresh output folder. "
                    "Inputs: ledger files, folders, or zips as your LMS gives them.",
        epilog="exit status:\n"
               "  0      graded, nothing to look at\n"
               "  1      graded, problems found (named above the summary)\n"
               "  2      usage or config error (nothing written)\n"
               "  3      the grader itself failed (a bug: please report it with its output)\n"
               "  128+N  stopped by signal N (Ctrl+C: 130); nothing written\n\n"
               "a course config to start from: labs-grade --example-config > course.toml\n"
               "sections graded apart, joined: labs-grade --merge -o grades grades-a grades-b",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("inputs", nargs="*", help="ledger files, folders or zip files")
    p.add_argument("-c", "--config", help="course TOML (deadlines, rubric, extensions per lab)")
    p.add_argument("-o", "--out", default="grades", help="output folder (default: grades)")
    p.add_argument("--roster", help="roster CSV: ids, names, e-mails (a Canvas gradebook "
                                    "export works; every identity column is used)")
    p.add_argument("--overrides", help="CSV of student,item,points,comment merged into the "
                                       "gradebook")
    p.add_argument("--receipts", help="CSV of student id, hash (receipts collected earlier)")
    p.add_argument("--max-file-mb", type=float, default=MAX_READ_BYTES / 2**20,
                   help="skip ledger files larger than this many MiB (default "
                        f"{MAX_READ_BYTES / 2**20:g}: the labs' own limit)")
    p.add_argument("--lab", action="append", metavar="LAB_ID",
                   help="grade only this lab (repeatable; e.g. --lab lab03), with or without a "
                        "course config")
    p.add_argument("--workers", type=int, default=None,
                   help="processes reading and grading (default: one per core)")
    p.add_argument("--merge", action="store_true",
                   help="merge the output folders given as inputs (each a labs-grade run of one "
                        "section) into -o, and exit")
    p.add_argument("--no-feedback", action="store_true", help="do not write feedback pages")
    p.add_argument("--force", action="store_true",
                   help="replace a non-empty output folder of an earlier run, whole")
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


_SEVERITY_HEAD = {
    "wrong": "Grades that may be wrong: look at these before uploading",
    "check": "Worth a look (the grade stands)",
}
_INFO_WORDS = {
    "revised": "revised a prediction after locking it (the first is graded)",
    "duplicates_merged": "handed in the same records twice (counted once)",
    "recovery_merged": "handed in a recovery file too (merged)",
    "alias": "typed another roster id (SIS Login ID, e-mail, ...) and were matched by it",
}


def _report(result, out: Path, stale: list[str]) -> int:
    """The console summary; the exit status (0 nothing to look at, 1 problems found)."""
    files, plan, students = result.files, result.plan, result.students
    unreadable = [f for f in files if f.unreadable]
    damaged = [f for f in files if f.problems and not f.unreadable]
    _say(f"labs-grade: {len(files)} files, {len(students)} students, {result.events} events.")
    for line in stale:
        _say(f"  {line}")
    for sev in ("wrong", "check"):  # each student once, under their most serious flag
        who = [s for s in students if s.level == sev]
        if not who:
            continue
        _say(f"  {_SEVERITY_HEAD[sev]} ({len(who)} student{'s' if len(who) != 1 else ''}):")
        for s in who[:MAX_LISTED]:
            _say(s.lines[sev])
        if len(who) > MAX_LISTED:
            _say(f"    ... and {len(who) - MAX_LISTED} more: the Flags column of "
                 f"{out / 'gradebook.csv'}")
    warnings = plan.warnings
    if warnings:
        _say("  The course config names something the class does not have (look before "
             "uploading):")
        for w in warnings[:MAX_LISTED]:
            _say(f"    {w}")
    for notice in plan.notices[:MAX_LISTED]:
        _say(f"  {notice}.")
    roster = plan.config.roster
    for line in roster.report() if roster else []:
        _say(f"  {line}")
    if unreadable:
        _say(f"  {len(unreadable)} file(s) could not be graded (named on their students' "
             "rows: \"Unreadable submission\", or a flag when it may be one of several labs):")
        for f in unreadable[:MAX_LISTED]:
            who = f"student {f.submitter or f.name_id}" if (f.submitter or f.name_id) \
                else "no student named by it"
            _say(f"    {f.source} ({who}): {f.reason}")
    if damaged:
        _say(f"  {len(damaged)} file(s) had problems but were graded (details in files.csv):")
        for f in damaged[:MAX_LISTED]:
            who = ", ".join(f.student_ids) or f.name_id or "?"
            _say(f"    {f.source} ({who}): {f.reason}"
                 + (f" and {len(f.problems) - 1} more" if len(f.problems) > 1 else ""))
    if len(unreadable) > MAX_LISTED or len(damaged) > MAX_LISTED:
        _say(f"    ... and more: every file is in {out / 'files.csv'}")
    skipped = [f for f in files if f.skipped]
    if skipped:
        _say(f"  {len(skipped)} path(s) under the submissions were not graded (not a ledger, a "
             "link, a receipt, Canvas's test student...): each is in files.csv")
        for f in skipped[:10]:
            who = f" (student {f.submitter or f.name_id})" if (f.submitter or f.name_id) else ""
            _say(f"    {f.source}{who}: {f.skipped}")
    info: dict[str, int] = {}
    for s in students:
        for code in s.info:
            info[code] = info.get(code, 0) + 1
    if info:
        _say("  Notes, no action needed (the Notes column): " + "; ".join(
            f"{n} {_INFO_WORDS.get(code, code)}" for code, n in sorted(info.items())) + ".")
    _say(_late_line(result))
    if result.points:
        _say(f"  Canvas points possible per assignment (canvas.csv's Points Possible row sets "
             f"them): {result.points}.")
    if result.canvas_error:
        _say(f"  No canvas.csv: {result.canvas_error}")
    if result.left_out:
        left_out = result.left_out
        _say(f"  canvas.csv leaves out {len(left_out)} student(s) not on the roster (listed in "
             f"canvas-left-out.csv): {', '.join(left_out[:10])}"
             f"{' ...' if len(left_out) > 10 else ''}")
    _say("Wrote " + ", ".join(str(out / w) for w in result.written + [RUN_FILE]) + ".")
    if os.environ.get("LABS_GRADE_TIMES"):  # for the benchmark: where the time went
        _say("  seconds: " + ", ".join(f"{k} {v:g}" for k, v in result.seconds.items()))
    problems = unreadable or damaged or warnings or (roster and roster.rows_without_id) \
        or any(s.level in ("wrong", "check") for s in students)
    return 1 if problems or result.left_out else 0


def _late_line(result) -> str:
    students, cfg = result.students, result.plan.config
    late = [s for s in students if s.late]
    penalised = any(s.penalised for s in students)
    if cfg.late_policy == "deadline":
        rule = "parts done after the deadline earn nothing (late_policy = \"deadline\")"
    elif cfg.late_penalty_per_day:
        rule = (f"parts done after the deadline lose {cfg.late_penalty_per_day:.0%} per started "
                "day late")
    else:
        rule = "no late penalty (late work is reported in the Status column)"
    text = f"  Late work: {len(late)} student(s); {rule}."
    if penalised:
        text += (" The scores in canvas.csv already include this penalty: switch off Canvas's "
                 "own late policy for these assignments, or it is taken twice.")
    late_ids = {s.sid for s in late}
    graded = {s.sid for s in students}
    marked = sorted({s for f in result.files if f.lms_late
                     for s in ([f.submitter] if f.submitter else f.student_ids)
                     if s in graded and s not in late_ids})
    if marked:
        text += (f" Canvas marked {len(marked)} upload(s) LATE whose graded work was on time "
                 f"({', '.join(marked[:5])}{' ...' if len(marked) > 5 else ''}): a re-run "
                 "after the deadline changes nothing graded; Canvas's own late policy, if on, "
                 "would still deduct from them.")
    return text


def _readme(result, args) -> str:
    plan = result.plan
    lines = [f"labs-grade run of {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
             "inputs: " + " ".join(str(i) for i in args.inputs),
             f"course config: {args.config or '(none)'}", "",
             "gradebook.csv  one row per student: points, status, lateness per lab; Flags "
             "(the grade may be wrong first), Notes",
             "items.csv      one row per student and item: the points, the parts that earned "
             "them, the tolerance and what it was judged against",
             "canvas.csv     Canvas > Grades > Import: only lab scores, roster students only; "
             "its Points Possible row sets each assignment's points",
             "canvas-left-out.csv  students not on the roster, kept out of canvas.csv",
             "events.csv     every event, with its file, line and flags",
             "files.csv      every path under the submissions: graded, or why not",
             "feedback/      one page per student (feedback/index.html lists them)", "",
             _late_line(result).strip()]
    if result.points:
        lines.append(f"Canvas points possible per assignment: {result.points}.")
    lines += [f"{n}." for n in plan.notices]
    lines += [f"course config warning: {w}" for w in plan.warnings]
    lines += plan.config.roster.report(limit=10_000) if plan.config.roster else []
    return "\n".join(lines) + "\n"


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
    if args.merge:
        from labs.core.course.grading.merge import merge_main

        return merge_main(args.inputs, Path(args.out), force=args.force)
    if not args.inputs:
        _parser().print_usage(sys.stderr)
        print("labs-grade: give at least one ledger file, folder or zip", file=sys.stderr)
        return 2
    missing = [i for i in args.inputs if not os.path.lexists(i)]
    if missing:
        _say(f"labs-grade: not found: {', '.join(missing)}", sys.stderr)
        return 2
    if args.workers is not None and args.workers < 1:
        _say("labs-grade: --workers must be 1 or more", sys.stderr)
        return 2
    out = Path(args.out)
    target = out.resolve()
    stale = clean_stale(target)
    why = check_out(out, args.force)
    if why:
        for line in stale:
            _say(f"labs-grade: {line}", sys.stderr)
        _say(f"labs-grade: {why}", sys.stderr)
        return 2
    try:
        config = load_config(args.config)
        overrides, receipts = _inputs(args, config)
    except (ConfigError, OSError, UnicodeDecodeError, csv.Error) as exc:
        _say(f"labs-grade: {exc}", sys.stderr)
        return 2
    limits = Limits(max_file_bytes=int(args.max_file_mb * 1024 * 1024))
    tmp = staging(target, "labs-grade")
    try:
        with stop_on_signals():
            try:
                shutil.rmtree(tmp, ignore_errors=True)
                tmp.mkdir(parents=True)
                result = run_class(args.inputs, config, tmp, limits=limits,
                                   receipts=receipts, overrides=overrides, lab_ids=args.lab,
                                   feedback=not args.no_feedback, workers=args.workers)
                (tmp / RUN_FILE).write_text(_readme(result, args), encoding="utf-8")
                check_stop()  # the last moment a stop leaves nothing behind
                stale += replace_with(tmp, target)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)  # gone already unless it failed
    except Interrupted as stop:
        _say(f"labs-grade: stopped by signal {stop.signum}; nothing was written and the "
             "partial run was removed", sys.stderr)
        return 128 + stop.signum
    except KeyboardInterrupt:
        _say("labs-grade: interrupted; nothing was written and the partial run was removed",
             sys.stderr)
        return 130
    except (ConfigError, UnicodeDecodeError, csv.Error) as exc:
        _say(f"labs-grade: {exc}", sys.stderr)
        return 2
    except OSError as exc:
        _say(f"labs-grade: cannot write to {out}: {exc}", sys.stderr)
        return 2
    except Exception:  # noqa: BLE001 - a bug, not a bad submission: say so, distinctly
        _say("labs-grade: internal error (please report it with this output):\n"
             + traceback.format_exc(), sys.stderr)
        return 3
    return _report(result, out, stale)
