"""The instructor dashboard's load and switch times on a synthetic class: what the README's
"a class of 500 ledgers loads in ..." says, reproduced.

    python benchmarks/bench_dashboard.py [--students 500] [--runs 2]

Per run (a fixed number, decided in advance; nothing is retried): a fresh synthetic class
(``classroom.write_synthetic_class``, seed 7, as the test) is written to a temporary folder,
then timed: loading every ledger (``classroom.load_class``), then what the dashboard recomputes
when the instructor picks another item (its distribution and calibration figures, averaged over
every item) or another student (the timeline, averaged over 20 students). Prints a caption
(the command, the date, the machine as detected, the load average before and after) and a
Markdown table with every run's figures, as the README quotes it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path


def one_run(students: int) -> dict:
    from labs.core import classroom

    with tempfile.TemporaryDirectory(prefix="bench-dashboard-") as tmp:
        classroom.write_synthetic_class(Path(tmp), students, seed=7)
        t0 = time.perf_counter()
        cls = classroom.load_class([Path(tmp)])
        load_s = time.perf_counter() - t0
        events = sum(len(cls.timeline(sid)) for sid in cls.students)
        t0 = time.perf_counter()
        for item in cls.items.values():
            classroom.distribution_figure(item)
            classroom.calibration_figure(cls.calibration([item.item_id]))
        per_item = (time.perf_counter() - t0) / len(cls.items)
        picked = cls.students[:20]
        t0 = time.perf_counter()
        for sid in picked:
            classroom.timeline_figure(cls.timeline(sid), sid)
        per_student = (time.perf_counter() - t0) / len(picked)
    return {"students": len(cls.students), "events": events, "items": len(cls.items),
            "load_s": load_s, "item_switch_s": per_item, "student_switch_s": per_student}


def markdown(command: str, started: str, machine: str, loads: tuple, runs: list[dict]) -> str:
    def span(key: str, spec: str) -> str:
        vals = [format(r[key], spec) for r in runs]
        return vals[0] if min(vals) == max(vals) else f"{min(vals)}–{max(vals)}"

    before, after = (f"{x:.2f}" if x is not None else "n/a" for x in loads)
    caption = (f"**`{command}`, {started} UTC** on {machine}; load average {before} → {after}; "
               f"{len(runs)} run(s) fixed in advance; each cell is the min–max over the runs.")
    head = ("| students | events | items | load all ledgers s | switch item ms | "
            "switch student ms | per run: load s |")
    row = (f"| {runs[0]['students']} | {runs[0]['events']:,} | {runs[0]['items']} | "
           f"{span('load_s', '.1f')} | {span('item_switch_ms', '.0f')} | "
           f"{span('student_switch_ms', '.0f')} | "
           f"{', '.join(format(r['load_s'], '.2f') for r in runs)} |")
    lines = [caption, "", head, "|---|---|---|---|---|---|---|", row]
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=500)
    ap.add_argument("--runs", type=int, default=2, help="runs, fixed in advance (default 2)")
    a = ap.parse_args(argv)
    if a.students < 1 or a.runs < 1:
        ap.error("--students and --runs must be at least 1")
    from labs.core.measure.device import load_average, machine_line

    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M")
    before = load_average()
    runs = []
    for i in range(a.runs):
        print(f"run {i + 1} of {a.runs}: {a.students} synthetic ledgers ...", file=sys.stderr,
              flush=True)
        r = one_run(a.students)
        r["item_switch_ms"], r["student_switch_ms"] = (r["item_switch_s"] * 1e3,
                                                       r["student_switch_s"] * 1e3)
        runs.append(r)
    command = "python benchmarks/bench_dashboard.py" + "".join(f" {x}" for x in (argv or
                                                                              sys.argv[1:]))
    print(markdown(command, started, machine_line(), (before, load_average()), runs))
    print(f"\nmedian load over the runs: {statistics.median(r['load_s'] for r in runs):.2f} s",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
