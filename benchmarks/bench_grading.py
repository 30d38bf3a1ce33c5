"""``labs-grade`` on generated classes of 1,000, 10,000 and 100,000 students: time, events per
second and peak memory, as the instructors' page records them.

    python benchmarks/bench_grading.py [--sizes 1000 10000 100000] [--workers N]
                                      [--data DIR] [--feedback] [--keep]

Each class is a synthetic one (``classroom.synth``: every lab's items, 6 % of students skip a
lab, 10 % stop part-way, a few peek, revise, leave explanations out or edit a line), one ledger
file per student named as the lab names it, seed 7, written once into ``--data`` (default: a
folder in the system's temporary directory) and reused by later runs; generating 100,000
students takes several minutes, in parallel. Then ``python -m labs.core.course.grading`` grades
it into a fresh folder (without feedback pages unless ``--feedback``), timed from start to exit.
Peak memory is the largest total resident memory of the grader and its workers together,
sampled every 0.2 s from ``/proc`` (elsewhere: the largest single process's). Prints a caption
(the command, the date, the machine, the load average before and after) and a Markdown table.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from datetime import datetime, timezone
from pathlib import Path

SEED = 7


def _write_range(folder: str, first: int, last: int) -> int:
    """Students ``first``..``last`` (1-based, inclusive) of the class; their events."""
    from labs.core.course import ledger
    from labs.core.course.classroom import synth

    course = synth.catalogue_course() or synth.SYNTH_COURSE
    start = datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)
    events = 0
    for i in range(first, last + 1):
        sid = f"s{i:06d}"
        lines = synth.synth_student(sid, random.Random(SEED * 1_000_003 + i), start, course)
        (Path(folder) / ledger.ledger_filename(sid)).write_bytes(b"".join(lines))
        events += len(lines)
    return events


def generate(folder: Path, students: int, workers: int) -> None:
    """The class of ``students`` in ``folder`` (kept: a folder already complete is reused)."""
    done = folder.with_name(folder.name + ".complete")  # beside it: no file of the class
    if done.exists() and done.read_text().strip() == str(students):
        return
    shutil.rmtree(folder, ignore_errors=True)
    done.unlink(missing_ok=True)
    folder.mkdir(parents=True)
    step = max(1, students // (workers * 8))
    ranges = [(i, min(students, i + step - 1)) for i in range(1, students + 1, step)]
    with ProcessPoolExecutor(workers) as pool:
        list(pool.map(_write_range, [str(folder)] * len(ranges), *zip(*ranges)))
    done.write_text(str(students))


def _tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and every process below it (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    rss: dict[int, int] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
            fields = stat.rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
            rss[int(entry)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    total, todo = 0, [root]
    while todo:
        pid = todo.pop()
        total += rss.get(pid, 0)
        todo += children.get(pid, [])
    return total


def grade(folder: Path, out: Path, workers: int | None, feedback: bool) -> dict:
    cmd = [sys.executable, "-m", "labs.core.course.grading", str(folder), "-o", str(out),
           "--force"]
    if not feedback:
        cmd.append("--no-feedback")
    if workers:
        cmd += ["--workers", str(workers)]
    peak = [0]
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, LABS_GRADE_TIMES="1"))

    def sample() -> None:
        while proc.poll() is None:
            if sys.platform.startswith("linux"):
                peak[0] = max(peak[0], _tree_rss(proc.pid))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out_text, err = proc.communicate()
    seconds = time.perf_counter() - t0
    sampler.join()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"labs-grade failed ({proc.returncode}):\n{err}")
    first = out_text.splitlines()[0]  # "labs-grade: N files, M students, E events."
    files, students, events = (int(x.split()[0].replace(",", ""))
                               for x in first.split(": ", 1)[1].rstrip(".").split(", "))
    if not peak[0]:
        peak[0] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    phases = next((ln.split("seconds:", 1)[1].strip() for ln in out_text.splitlines()
                   if ln.strip().startswith("seconds:")), "")
    return {"students": students, "files": files, "events": events, "seconds": seconds,
            "peak": peak[0], "phases": phases}


def markdown(command: str, started: str, machine: str, loads: tuple, workers: int,
             rows: list[dict]) -> str:
    before, after = (f"{x:.2f}" if x is not None else "n/a" for x in loads)
    lines = [f"**`{command}`, {started} UTC** on {machine}, {workers} worker process(es); "
             f"load average {before} → {after}.", "",
             "| students | files | events | time | events/s | peak memory | seconds per phase |",
             "|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        minutes, secs = divmod(r["seconds"], 60)
        when = f"{int(minutes)} min {secs:.0f} s" if minutes else f"{secs:.1f} s"
        lines.append(f"| {r['students']:,} | {r['files']:,} | {r['events']:,} | {when} | "
                     f"{r['events'] / r['seconds']:,.0f} | {r['peak'] / 2**20:,.0f} MiB | "
                     f"{r.get('phases', '')} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000, 100_000])
    p.add_argument("--workers", type=int, default=None,
                   help="labs-grade's --workers (default: its own, one per core)")
    p.add_argument("--data", type=Path,
                   default=Path(tempfile.gettempdir()) / "roofline-bench-grading")
    p.add_argument("--feedback", action="store_true", help="write the feedback pages too")
    p.add_argument("--keep", action="store_true", help="keep the generated classes")
    args = p.parse_args(argv)
    from labs.core.course.grading.run import default_workers
    from labs.core.measure.device import load_average, machine_line

    workers = args.workers or default_workers()
    command = "python benchmarks/bench_grading.py " + " ".join(sys.argv[1:] if argv is None
                                                              else argv)
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")
    rows = []
    before = load_average()
    for n in args.sizes:
        folder = args.data / f"class-{n}"
        print(f"generating {n:,} students in {folder} ...", file=sys.stderr, flush=True)
        generate(folder, n, workers)
        print(f"grading {n:,} students ...", file=sys.stderr, flush=True)
        out = args.data / f"grades-{n}"
        rows.append(grade(folder, out, args.workers, args.feedback))
        shutil.rmtree(out, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
            folder.with_name(folder.name + ".complete").unlink(missing_ok=True)
        print(f"  {rows[-1]}", file=sys.stderr, flush=True)
    print(markdown(command.strip(), started, machine_line(), (before, load_average()), workers,
                   rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
