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
import shutil
import traceback
from datetime import datetime, timezone
from pathlib import Path
from typing import Sequence

from labs.core.course import ledger as _ledger
from labs.core.course.grading.config import example_config, load_config
from labs.core.course.grading.gradebook import (EVENT_COLUMNS, FILE_COLUMNS, csv_safe, event_rows,
                                          file_rows, gradebook_rows, write_csv, write_table)
from labs.core.course.grading.feedback import write_feedback
from labs.core.course.grading.inputs import (ConfigError, load_overrides, load_roster,
                                             read_receipts)
from labs.core.course.grading.lms import canvas_rows
from labs.core.course.grading.load import Limits, load_ledgers
from labs.core.course.ledger.events import MAX_READ_BYTES
from labs.core.course.grading.score import grade

MAX_LISTED = 50  # files named on the console; the rest are in files.csv


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="labs-grade",
        description="Grade Roofline Labs design ledgers into gradebook.csv (plus canvas.csv "
                    "for Canvas's grade import, events.csv, files.csv) and one feedback page per "
                    "student, in a fresh output folder. "
                    "Inputs: ledger files, folders, or zips as your LMS gives them.",
        epilog="Exit status: 0 graded, nothing to look at; 1 graded, problems found (named "
               "above the summary); 2 usage or config error. A course config to start from: "
               "labs-grade --example-config > course.toml",
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
#: what labs-grade writes into its output folder (a folder holding only these, or its own
#: RUN_FILE, may be replaced with --force)
OUTPUT_NAMES = {"gradebook.csv", "events.csv", "files.csv", "canvas.csv",
                "canvas-left-out.csv", "gradescope.csv", "feedback", "README.txt"}
RUN_FILE = "README.txt"


_INFO_WORDS = {
    "revised": "revised a prediction after locking it (the first is graded)",
    "duplicates_merged": "handed in the same records twice (counted once)",
    "recovery_merged": "handed in a recovery file too (merged)",
    "alias": "typed another roster id (SIS Login ID, e-mail, ...) and were matched by it",
}


def _student_line(book, sid: str, level: str) -> str:
    from labs.core.course.grading.checks import severity

    entry = book.config.roster.get(sid) if book.config.roster else None
    name = f" {entry.name}" if entry and entry.name else ""
    flags = [f for f in book.student_flags.get(sid, []) if severity(f) == level]
    flags += [f"{lab.lab_id}: {f}" for lab in book.labs
              for f in book.grades[(sid, lab.lab_id)].flags if severity(f) == level]
    shown = "; ".join(f if len(f) <= 240 else f[:237] + "..." for f in flags[:3])
    more = f" (and {len(flags) - 3} more)" if len(flags) > 3 else ""
    return f"    {sid}{name}: {shown}{more}"


def _report(batch, book, out: Path, written: list[str], left_out: list[str]) -> int:
    """The console summary; the exit status (0 nothing to look at, 1 problems found)."""
    from labs.core.course.grading.checks import severity, student_severity

    unreadable = [f for f in batch.files if f.unreadable]
    damaged = [f for f in batch.files if f.problems and not f.unreadable]
    level = {s: student_severity(book, s) for s in book.students}
    _say(f"labs-grade: {len(batch.files)} files, {len(book.students)} students, "
         f"{len(batch.events)} events.")
    for sev in ("wrong", "check"):  # each student once, under their most serious flag
        who = [s for s in book.students if level[s] == sev]
        if not who:
            continue
        _say(f"  {_SEVERITY_HEAD[sev]} ({len(who)} student{'s' if len(who) != 1 else ''}):")
        for sid in who[:MAX_LISTED]:
            _say(_student_line(book, sid, sev))
        if len(who) > MAX_LISTED:
            _say(f"    ... and {len(who) - MAX_LISTED} more: the Flags column of "
                 f"{out / 'gradebook.csv'}")
    warnings = getattr(book, "warnings", [])
    if warnings:
        _say("  The course config names something the class does not have (look before "
             "uploading):")
        for w in warnings[:MAX_LISTED]:
            _say(f"    {w}")
    roster = book.config.roster
    for line in roster.report() if roster else []:
        _say(f"  {line}")
    if unreadable:
        _say(f"  {len(unreadable)} file(s) could not be graded (their students' rows say "
             f"\"Unreadable submission\"):")
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
    skipped = [f for f in batch.files if f.skipped]
    if skipped:
        _say(f"  {len(skipped)} path(s) under the submissions were not graded (not a ledger, a "
             "link, a folder that could not be read...): each is in files.csv")
        for f in skipped[:10]:
            who = f" (student {f.submitter or f.name_id})" if (f.submitter or f.name_id) else ""
            _say(f"    {f.source}{who}: {f.skipped}")
    info: dict[str, set] = {}
    for sid in book.students:
        flags = list(book.student_flags.get(sid, [])) + [
            f for lab in book.labs for f in book.grades[(sid, lab.lab_id)].flags]
        for f in flags:
            if severity(f) == "info":
                info.setdefault(f.split(" ", 1)[0], set()).add(sid)
    aliases = [s for s in book.students if any("id typed as" in n
                                               for n in book.notes.get(s, []))]
    if aliases:
        info["alias"] = set(aliases)
    if info:
        _say("  Notes, no action needed (the Notes column): " + "; ".join(
            f"{len(who)} {_INFO_WORDS.get(code, code)}" for code, who in sorted(info.items()))
             + ".")
    _say(_late_line(book, batch.files))
    if left_out:
        _say(f"  canvas.csv leaves out {len(left_out)} student(s) not on the roster (listed in "
             f"canvas-left-out.csv): {', '.join(left_out[:10])}"
             f"{' ...' if len(left_out) > 10 else ''}")
    _say("Wrote " + ", ".join(written) + ".")
    problems = unreadable or damaged or warnings or (roster and roster.rows_without_id) \
        or any(level[s] in ("wrong", "check") for s in book.students)
    return 1 if problems or left_out else 0


def _late_line(book, files) -> str:
    late = [s for s in book.students for lab in book.labs
            if book.grades[(s, lab.lab_id)].status == "Late"]
    penalised = any(book.grades[(s, lab.lab_id)].penalty > 0 for s in book.students
                    for lab in book.labs)
    cfg = book.config
    if cfg.late_policy == "deadline":
        rule = "parts done after the deadline earn nothing (late_policy = \"deadline\")"
    elif cfg.late_penalty_per_day:
        rule = (f"parts done after the deadline lose {cfg.late_penalty_per_day:.0%} per started "
                "day late")
    else:
        rule = "no late penalty (late work is reported in the Status column)"
    text = f"  Late work: {len(set(late))} student(s); {rule}."
    if penalised:
        text += (" The scores in canvas.csv already include this penalty: switch off Canvas's "
                 "own late policy for these assignments, or it is taken twice.")
    marked = sorted({s for f in files if f.lms_late
                     for s in ([f.submitter] if f.submitter else f.student_ids)
                     if s in book.students and not any(
                         book.grades[(s, lab.lab_id)].status == "Late" for lab in book.labs)})
    if marked:
        text += (f" Canvas marked {len(marked)} upload(s) LATE whose graded work was on time "
                 f"({', '.join(marked[:5])}{' ...' if len(marked) > 5 else ''}): a re-run "
                 "after the deadline changes nothing graded; Canvas's own late policy, if on, "
                 "would still deduct from them.")
    return text



def _readme(book, files, args, written: list[str]) -> str:
    lines = [f"labs-grade run of {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
             "inputs: " + " ".join(str(i) for i in args.inputs),
             f"course config: {args.config or '(none)'}", "",
             "gradebook.csv  one row per student: points, status, lateness per lab; Flags "
             "(the grade may be wrong first), Notes",
             "canvas.csv     Canvas > Grades > Import: only lab scores, roster students only",
             "canvas-left-out.csv  students not on the roster, kept out of canvas.csv",
             "events.csv     every event, with its file, line and flags",
             "files.csv      every path under the submissions: graded, or why not",
             "feedback/      one page per student (feedback/index.html lists them)", "",
             _late_line(book, files).strip()]
    lines += [f"course config warning: {w}" for w in book.warnings]
    lines += book.config.roster.report(limit=10_000) if book.config.roster else []
    return "\n".join(lines) + "\n"


def _write(batch, book, out: Path, feedback: bool, args) -> tuple[list[str], list[str]]:
    written = []
    write_csv(gradebook_rows(book), out / "gradebook.csv")
    write_csv(event_rows(batch), out / "events.csv", EVENT_COLUMNS)
    write_csv(file_rows(batch), out / "files.csv", FILE_COLUMNS)
    written += ["gradebook.csv", "events.csv", "files.csv"]
    left_out: list[str] = []
    try:
        header, rows, left_out = canvas_rows(book)
        write_table(header, rows, out / "canvas.csv")
        written.append("canvas.csv")
        if left_out:
            write_table(["student", "why"], [[csv_safe(s), "not on the roster"]
                                             for s in left_out], out / "canvas-left-out.csv")
            written.append("canvas-left-out.csv")
    except ConfigError as exc:
        _say(f"labs-grade: no canvas.csv: {exc}", sys.stderr)
    if feedback:
        pages = write_feedback(book, batch, out / "feedback")
        written.append(f"feedback/ ({len(pages)} pages)")
    written.append(RUN_FILE)
    (out / RUN_FILE).write_text(_readme(book, batch.files, args, written), encoding="utf-8")
    return written, left_out


def _check_out(out: Path, force: bool) -> str:
    """Why ``out`` cannot take this run ("" if it can: absent, empty, or with ``--force`` a
    folder holding only what labs-grade writes)."""
    if not out.exists() and not out.is_symlink():
        return ""
    if out.is_symlink() or not out.is_dir():
        return f"{out} exists and is not a folder"
    names = {p.name for p in out.iterdir()}
    if not names:
        return ""
    if not force:
        return (f"{out} is not empty (a previous run?). Add --force to replace it whole, or "
                f"give a new folder with -o; two runs are never mixed")
    foreign = sorted(names - OUTPUT_NAMES)
    if foreign:
        return (f"{out} holds files labs-grade did not write ({', '.join(foreign[:5])}"
                f"{' ...' if len(foreign) > 5 else ''}): even with --force it is not replaced; "
                f"give a new folder with -o")
    return ""


def _replace(tmp: Path, out: Path) -> None:
    """Put the finished run ``tmp`` where ``out`` was (the old one removed whole)."""
    if out.exists():
        old = out.with_name(f".{out.name}.old-{os.getpid()}")
        os.replace(out, old)
        os.replace(tmp, out)
        shutil.rmtree(old, ignore_errors=True)
    else:
        os.replace(tmp, out)


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
    missing = [i for i in args.inputs if not os.path.lexists(i)]
    if missing:
        _say(f"labs-grade: not found: {', '.join(missing)}", sys.stderr)
        return 2
    out = Path(args.out)
    why = _check_out(out, args.force)
    if why:
        _say(f"labs-grade: {why}", sys.stderr)
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
    target = out.resolve()
    tmp = target.with_name(f".{target.name}.labs-grade-{os.getpid()}")
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        written, left_out = _write(batch, book, tmp, not args.no_feedback, args)
        _replace(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        _say(f"labs-grade: cannot write to {out}: {exc}", sys.stderr)
        return 2
    return _report(batch, book, out, [str(out / w) for w in written], left_out)
