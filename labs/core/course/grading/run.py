"""A class of any size on one machine: ``labs-grade``'s run, streaming and in parallel.

1. **Read** (a process pool over files): each candidate file is read, parsed and summarised
   (:func:`~labs.core.course.grading.load.parse_source`) where it is parsed; its events go to
   a spill file inside the run's own staging folder (never anywhere else), and only the
   file's report comes back.
2. **Plan** (this process): :func:`~labs.core.course.grading.plan.plan_class` decides, from the
   reports alone, the labs, who is whose and the class-wide checks.
3. **Grade** (a process pool over chunks of students, in gradebook order): each chunk's events
   are read back from the spill, merged per student
   (:func:`~labs.core.course.grading.load.merge_events`) and graded
   (:func:`~labs.core.course.grading.score.grade_student`); the chunk's gradebook, Canvas,
   items and events rows and its feedback pages are written, and only a small summary per
   student comes back for the console.

Memory holds the reports and the plan (a few hundred bytes per file and per student) and one
chunk of events per process; time grows with the class, linearly. The staging folder
(``.<out>.labs-grade-<pid>``, next to the output folder) becomes the output folder at the end;
an interrupted run removes it (Ctrl+C, a terminal closed, ``kill``: the signal asks the run to
stop, which it does between two pieces of work, :func:`stop_on_signals`), and a run killed
outright leaves one that the next run into the same folder removes and names on the console.
"""

from __future__ import annotations

import contextlib
import csv
import itertools
import multiprocessing
import os
import pickle
import shutil
import signal
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterable, Iterator

from labs.core.course.grading.checks import severity, student_line, student_severity
from labs.core.course.grading.gradebook import (EVENT_COLUMNS, FILE_COLUMNS, ITEM_COLUMNS,
                                                csv_safe, event_table, file_rows,
                                                gradebook_rows, item_table, write_csv,
                                                write_table)
from labs.core.course.grading.ids import norm_id
from labs.core.course.grading.instructor_csvs import ConfigError
from labs.core.course.grading.canvas_csv import canvas_header_rows, canvas_rows
from labs.core.course.grading.load import (Batch, EventRecord, Limits, merge_events,
                                           parse_source, share_summaries)
from labs.core.course.grading.plan import ClassPlan, plan_class
from labs.core.course.grading.score import empty_book, grade_student
from labs.core.course.grading.sources import FileReport, iter_sources

__all__ = [
    "FILES_PER_TASK", "Interrupted", "RunResult", "SERIAL_BELOW", "STUDENTS_PER_CHUNK",
    "StudentSummary", "TASKS_IN_FLIGHT", "check_stop", "default_workers", "grade_chunk",
    "read_class", "run_class", "stop_on_signals"
]

#: files read per task, and tasks held at once (a zip's members are in memory until read)
FILES_PER_TASK = 32
TASKS_IN_FLIGHT = 64
#: students graded per task
STUDENTS_PER_CHUNK = 250


@dataclass
class StudentSummary:
    """What the console, README.txt and the feedback index need of one graded student."""

    sid: str
    level: str  # the most serious flag's severity ("" for none)
    lines: dict[str, str]  # severity -> "id name: flag; flag (and N more)"
    info: set[str]  # codes of the "info" flags (and "alias")
    late: bool
    penalised: bool
    index: tuple | None  # feedback/index.html's line (feedback.index_entry)


@dataclass
class RunResult:
    files: list[FileReport]
    plan: ClassPlan
    students: list[StudentSummary]
    events: int
    left_out: list[str]  # not in canvas.csv (not on the roster)
    written: list[str] = field(default_factory=list)
    canvas_error: str = ""
    points: str = ""  # each Canvas assignment's points possible, for the console
    seconds: dict[str, float] = field(default_factory=dict)  # read, plan, grade, write


# --- the pool ---------------------------------------------------------------------------------

#: Fewer candidate files than this are read in this process (starting workers costs more).
SERIAL_BELOW = 200


def _context():
    """Workers start from a clean process: ``forkserver`` where there is one (it has
    imported the grader once), else ``spawn``. Never a plain fork of this process, whose
    threads may hold a lock a child would wait on for ever."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload([__name__])
        return ctx
    return multiprocessing.get_context("spawn")


def default_workers() -> int:
    """One process per core this process may use."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


class _Serial:
    """The pool's ``imap`` in this process (one worker: no processes to start)."""

    def __init__(self, initializer=None, initargs=()):
        if initializer:
            initializer(*initargs)

    def imap(self, fn, tasks):
        return map(fn, tasks)


_STOP_SIGNALS = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                 if hasattr(signal, name)}


class Interrupted(Exception):
    """A signal asked the run to stop (Ctrl+C, a closed terminal, ``kill``)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_STOP = {"signum": 0}


def check_stop() -> None:
    """Raise :class:`Interrupted` if a signal asked the run to stop: called between pieces of
    work, never from inside a lock the pool's threads share (a signal handler that raised
    there could leave one held)."""
    if _STOP["signum"]:
        raise Interrupted(_STOP["signum"])


@contextlib.contextmanager
def stop_on_signals():
    """While the run lasts, SIGINT, SIGTERM and SIGHUP ask it to stop (:func:`check_stop`,
    at most one file or chunk later) instead of killing it, so it can remove its staging
    folder and stop its workers."""
    def ask(signum, _frame):
        _STOP["signum"] = _STOP["signum"] or signum

    old = {}
    _STOP["signum"] = 0
    try:
        for sig in _STOP_SIGNALS:
            try:
                old[sig] = signal.signal(sig, ask)
            except ValueError:  # not the main thread: nothing to install
                pass
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)
        _STOP["signum"] = 0


@contextlib.contextmanager
def _pool(workers: int, initializer=None, initargs=()):
    """A pool of ``workers`` processes (this process alone for one), stopped on the way out."""
    if workers <= 1:
        yield _Serial(initializer, initargs)
        return
    pool = _context().Pool(workers, initializer=initializer, initargs=initargs)
    try:
        yield pool
    finally:
        pool.terminate()
        pool.join()


def _windows(tasks: Iterator, size: int) -> Iterator[list]:
    window: list = []
    for t in tasks:
        window.append(t)
        if len(window) >= size:
            yield window
            window = []
    if window:
        yield window


# --- 1. read ----------------------------------------------------------------------------------

_STATE: dict[str, Any] = {}


def _worker_signals() -> None:
    """A worker leaves Ctrl+C to its parent (which removes the run and stops the pool) and
    dies at once when the pool is stopped."""
    if multiprocessing.parent_process() is None:
        return  # not a worker: the run in this process keeps its handlers
    for name, action in (("SIGINT", signal.SIG_IGN), ("SIGTERM", signal.SIG_DFL),
                         ("SIGHUP", signal.SIG_DFL)):
        sig = getattr(signal, name, None)
        if sig is not None:
            signal.signal(sig, action)


def _init_read(spill_dir: str, limits: Limits, now: datetime) -> None:
    _worker_signals()
    _STATE.update(spill_dir=spill_dir, limits=limits, now=now, spill=None)


def _spill(events: list[EventRecord]) -> tuple[str, int, int]:
    """Append a file's events to this process's spill file; where they are."""
    if _STATE.get("spill") is None:
        path = Path(_STATE["spill_dir"]) / f"events-{os.getpid()}.bin"
        _STATE["spill"] = open(path, "ab")  # noqa: SIM115 - kept open for the process's life
        _STATE["spill_path"] = str(path)
    f = _STATE["spill"]
    data = pickle.dumps([e.to_tuple() for e in events], protocol=pickle.HIGHEST_PROTOCOL)
    offset = f.tell()
    f.write(data)
    f.flush()
    return _STATE["spill_path"], offset, len(data)


def _read_task(task: list[tuple[int, str, Any]]) -> list[tuple[int, FileReport]]:
    out = []
    for rank, source, data in task:
        report, events = parse_source(source, data, _STATE["limits"], _STATE["now"], rank)
        if events:
            report.spill = _spill(events)
        out.append((rank, report))
    return out


def read_class(inputs: Iterable[str | os.PathLike], spill_dir: Path, *, limits: Limits,
               workers: int, now: datetime | None = None) -> list[FileReport]:
    """Every path under the inputs as a :class:`FileReport` (candidates read, summarised and
    their events spilled), in the order they were found."""
    now = now or datetime.now(timezone.utc)
    spill_dir.mkdir(parents=True, exist_ok=True)
    files: list = []  # reports, and a rank where a candidate's report will go

    def tasks() -> Iterator[tuple[int, str, Any]]:
        for source, data in iter_sources(inputs, limits, files, lazy=True):
            rank = len(files)
            files.append(rank)
            yield rank, source, data

    windows = _windows(_windows(tasks(), FILES_PER_TASK), TASKS_IN_FLIGHT)
    first = next(windows, [])
    small = sum(len(t) for t in first) < SERIAL_BELOW
    shared: dict = {}
    with _pool(1 if small else workers, _init_read, (str(spill_dir), limits, now)) as pool:
        for window in itertools.chain([first], windows):  # (small: the first is the last)
            for done in pool.imap(_read_task, window):
                check_stop()
                for rank, report in done:
                    share_summaries(report, shared)
                    files[rank] = report
    spill_file = _STATE.pop("spill", None)  # this process's, when it read alone
    if spill_file is not None:
        spill_file.close()
    return files


# --- 3. grade ---------------------------------------------------------------------------------

def _init_grade(config, staging: str, feedback: bool) -> None:
    _worker_signals()
    _STATE.update(config=config, staging=staging, feedback=feedback, items=None)


def _load(report: FileReport, cache: dict) -> list[EventRecord]:
    path, offset, length = report.spill
    handle = cache.get(path)
    if handle is None:
        handle = cache[path] = open(path, "rb")  # noqa: SIM115 - closed by the caller
    handle.seek(offset)
    return [EventRecord.from_tuple(t) for t in pickle.loads(handle.read(length))]


def _summary(book, sid: str, index: tuple | None) -> StudentSummary:
    flags = list(book.student_flags.get(sid, []))
    flags += [f for lab in book.labs for f in book.grades[(sid, lab.lab_id)].flags]
    info = {f.split(" ", 1)[0] for f in flags if severity(f) == "info"}
    if any("id typed as" in n for n in book.notes.get(sid, [])):
        info.add("alias")
    grades = [book.grades[(sid, lab.lab_id)] for lab in book.labs]
    return StudentSummary(
        sid, student_severity(book, sid),
        {lvl: student_line(book, sid, lvl) for lvl in ("wrong", "check")},
        info, any(g.status == "Late" for g in grades), any(g.penalty > 0 for g in grades),
        index)


def grade_chunk(plan: ClassPlan, students: list[str], staging: Path, chunk: int,
                feedback: bool, items_info: dict | None = None) -> dict:
    """Grade ``students`` (a slice of the plan's, in order) and write what is theirs: their
    feedback pages, and their events and items rows as ``.parts/<file>-<chunk>.csv``.
    Returns their gradebook and Canvas rows and a :class:`StudentSummary` each."""
    from labs.core.course.grading import feedback as _feedback

    keys = {norm_id(s) for s in students}
    files: dict[int, FileReport] = {}
    for key in keys:
        for f in plan.files_of.get(key, []):
            if f.spill is not None:
                files[id(f)] = f
    handles: dict = {}
    try:
        pieces = [(f, _load(f, handles)) for f in files.values()]
    finally:
        for h in handles.values():
            h.close()
    pieces.sort(key=lambda piece: piece[1][0].rank)  # the order the files were found in
    events, hashes = merge_events(pieces, keys)
    batch = Batch(events=events, files=[f for f, _ in pieces], hashes=hashes)
    book = empty_book(plan)
    book.students = list(students)
    for sid in students:
        grade_student(plan, book, sid, batch.for_student(sid), hashes.get(norm_id(sid), set()))
    parts = {}
    for name, rows in (("events", event_table(batch.events)), ("items", item_table(book))):
        part = parts[name] = staging / ".parts" / f"{name}-{chunk:06d}.csv"
        part.parent.mkdir(parents=True, exist_ok=True)
        with open(part, "w", newline="", encoding="utf-8", errors="replace") as f:
            csv.writer(f).writerows(rows)
    entries = {}
    if feedback:
        for entry in _feedback.write_pages(book, batch, staging / "feedback", students,
                                           items_info):
            entries[entry[1]] = entry
    try:
        _, canvas, left_out = canvas_rows(book, header=False)
    except ConfigError:
        canvas, left_out = [], []
    return {"gradebook": gradebook_rows(book), "canvas": canvas, "left_out": left_out,
            "events": len(events), "parts": {k: str(v) for k, v in parts.items()},
            "students": [_summary(book, sid, entries.get(sid)) for sid in students]}


def _grade_task(task: tuple[int, ClassPlan]) -> dict:
    chunk, part = task
    if _STATE.get("items") is None and _STATE["feedback"]:
        from labs.core.course import catalogue as _catalogue

        _STATE["items"] = {i.item_id: i for i in _catalogue.items()}
    part.config = _STATE["config"]
    return grade_chunk(part, part.students, Path(_STATE["staging"]), chunk,
                       _STATE["feedback"], _STATE["items"])


def _chunks(plan: ClassPlan, size: int) -> Iterator[tuple[int, ClassPlan]]:
    """The plan in pieces of ``size`` students, in gradebook order, each without the config
    (its worker has it)."""
    for n, i in enumerate(range(0, len(plan.students), size)):
        part = plan.chunk(plan.students[i:i + size])
        yield n, part


def run_class(inputs: list[str], config, staging: Path, *, limits: Limits,
              receipts: dict | None = None, overrides: list | None = None,
              lab_ids: list[str] | None = None, feedback: bool = True,
              workers: int | None = None, chunk_size: int = STUDENTS_PER_CHUNK,
              now: datetime | None = None) -> RunResult:
    """Grade the class under ``inputs`` into the folder ``staging`` (see the module doc):
    ``gradebook.csv``, ``canvas.csv`` (and ``canvas-left-out.csv``), ``items.csv``,
    ``events.csv``, ``files.csv`` and ``feedback/``. ConfigError for the instructor's inputs."""
    workers = workers or default_workers()
    spill = staging / ".spill"
    clock = [time.perf_counter()]
    seconds: dict[str, float] = {}

    def lap(name: str) -> None:
        now_ = time.perf_counter()
        seconds[name] = round(now_ - clock[0], 2)
        clock[0] = now_

    files = read_class(inputs, spill, limits=limits, workers=workers, now=now)
    lap("read")
    check_stop()
    plan = plan_class(files, config, receipts=receipts, overrides=overrides, lab_ids=lab_ids)
    lap("plan")
    check_stop()
    for f in files:
        f.by_written = {}  # planned: the workers need none of it
    book = empty_book(plan)
    try:
        header, points, points_text = canvas_header_rows(book)
        canvas_error = ""
    except ConfigError as exc:
        header, points, points_text, canvas_error = [], [], "", str(exc)
    summaries: list[StudentSummary] = []
    left_out: list[str] = []
    n_events = 0
    gradebook = open(staging / "gradebook.csv", "w", newline="", encoding="utf-8-sig",
                     errors="replace")
    canvas = open(staging / "canvas.csv.tmp", "w", newline="", encoding="utf-8-sig",
                  errors="replace")
    items = open(staging / "items.csv", "wb")  # noqa: SIM115 - closed below
    events = open(staging / "events.csv", "wb")  # noqa: SIM115 - closed below
    try:
        gb_writer = None
        canvas_writer = csv.writer(canvas)
        canvas_writer.writerow([csv_safe(h) for h in header])
        canvas_writer.writerows(points)
        items.write(("\ufeff" + ",".join(ITEM_COLUMNS) + "\r\n").encode("utf-8"))
        events.write(("\ufeff" + ",".join(EVENT_COLUMNS) + "\r\n").encode("utf-8"))
        alone = len(plan.students) <= chunk_size or len(files) < SERIAL_BELOW
        with _pool(1 if alone else workers, _init_grade, (plan.config, str(staging),
                                                          feedback)) as pool:
            # (the pool takes every chunk's plan at once: a few hundred bytes per student)
            for done in pool.imap(_grade_task, _chunks(plan, chunk_size)):
                check_stop()
                if gb_writer is None:
                    cols = list(done["gradebook"][0].keys()) if done["gradebook"] else []
                    gb_writer = csv.DictWriter(gradebook, fieldnames=cols, extrasaction="ignore")
                    gb_writer.writeheader()
                gb_writer.writerows(done["gradebook"])
                canvas_writer.writerows(done["canvas"])
                left_out += done["left_out"]
                n_events += done["events"]
                summaries += done["students"]
                for name, into in (("events", events), ("items", items)):
                    with open(done["parts"][name], "rb") as part:
                        shutil.copyfileobj(part, into, 1 << 20)
                    os.unlink(done["parts"][name])
        if gb_writer is None:  # no student at all
            csv.DictWriter(gradebook, fieldnames=[]).writeheader()
    finally:
        for f in (gradebook, canvas, items, events):
            f.close()
    lap("grade")
    check_stop()
    written = ["gradebook.csv", "items.csv", "events.csv"]
    if canvas_error:
        os.unlink(staging / "canvas.csv.tmp")
    else:
        os.replace(staging / "canvas.csv.tmp", staging / "canvas.csv")
        written.append("canvas.csv")
        if left_out:
            write_table(["student", "why"], [[csv_safe(s), "not on the roster"]
                                             for s in left_out],
                        staging / "canvas-left-out.csv")
            written.append("canvas-left-out.csv")
    write_csv(file_rows(Batch(files=files)), staging / "files.csv", FILE_COLUMNS)
    written.insert(3, "files.csv")
    if feedback:
        from labs.core.course.grading.feedback import write_index

        (staging / "feedback").mkdir(exist_ok=True)
        write_index(staging / "feedback", plan.config.name,
                    [s.index for s in summaries if s.index is not None])
        written.append(f"feedback/ ({sum(1 for s in summaries if s.index and s.index[6])} "
                       "pages)")
    shutil.rmtree(spill, ignore_errors=True)
    shutil.rmtree(staging / ".parts", ignore_errors=True)
    lap("write")
    return RunResult(files, plan, summaries, n_events, left_out, written, canvas_error,
                     points_text, seconds)
