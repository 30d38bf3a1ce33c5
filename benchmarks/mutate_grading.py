"""Hand-written mutations of the grader's rules, each run against the grading tests: a mutation
the tests do not catch (a survivor) is a rule no test holds.

    python benchmarks/mutate_grading.py [--only SUBSTRING] [--tests "tests/test_x.py ..."]

Each mutation replaces one exact piece of source (it must occur once), runs the tests in one
process (``-x``: the first failure kills it), restores the file, and is reported killed or
survived. The file is restored even when the run is interrupted. Prints a Markdown table and
the kill rate (docs/authors/testing.md describes the habit).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ("tests/test_grading_rules.py tests/test_answers.py tests/test_grading_oracle.py "
         "tests/test_grading.py tests/test_grading_class.py tests/test_grading_course.py "
         "tests/test_grading_robust.py tests/test_grading_scale.py")
REVEAL_TESTS = "tests/test_reveal.py"  # (the slow export test included)
G = "labs/core/course/grading/"

#: (what the mistake is, file, the source, what it becomes[, the tests that hold it])
MUTATIONS = [
    ("the boundary of a tolerance is outside (<= becomes <)", "labs/core/course/answers.py",
     "return big <= _decimal(factor) * small", "return big < _decimal(factor) * small"),
    ("the boundary compared in binary floats", "labs/core/course/answers.py",
     "    if r < factor * (1 - _NEAR):\n        return True",
     "    if True:\n        return r <= factor"),
    ("the late factor is not floored at 0", G + "score.py",
     "return max(0.0, 1.0 - per_day * math.ceil(lateness / timedelta(days=1)))",
     "return 1.0 - per_day * math.ceil(lateness / timedelta(days=1))"),
    ("an extension dated before the deadline shortens it", G + "config.py",
     "return max(ext, self.deadline)", "return ext"),
    ("course-wide extensions are ignored", G + "config.py",
     "            ext = course.extensions.get(norm_id(student_id))",
     "            ext = None"),
    ("an unlock before the predict keeps the commit point", G + "score.py",
     'ig.committed = not any(e.kind in ("unlock", "observe", "explain", "result")',
     'ig.committed = not any(e.kind in ("observe", "explain", "result")'),
    ("whitespace counts towards an explanation's length", G + "score.py",
     'return len("".join(text.split()))', "return len(text.strip())"),
    ("the grader keeps its own 1.5 tolerance", G + "config.py",
     "        return own[item_id], \"\"", "        return 1.5, \"\""),
    ("any ROOFLINE_REVEAL value but 0 reveals", "labs/core/course/quiz/reveal.py",
     "return value.strip().lower() in TRUE_VALUES", 'return value.strip() not in ("0", "")',
     REVEAL_TESTS),
    ("a predict without a value is the first prediction", "labs/core/course/answers.py",
     'if _field(e, "kind") == "predict" and holds_value(_field(e, "payload")) and (',
     'if _field(e, "kind") == "predict" and ('),
    ("a blank reason counts as a reason", "labs/core/course/answers.py",
     "and isinstance(reason, str) and bool(reason.strip()))",
     "and isinstance(reason, str) and bool(reason))"),
    ("correctness is judged against the last reading", G + "score.py",
     "    for e in later:\n        if e.kind != \"result\":",
     "    for e in reversed(later):\n        if e.kind != \"result\":"),
    ("a dropped student's file is pointed at a classmate", G + "plan.py",
     "        if accounts and lms:", "        if False:"),
    ("Canvas's test student is graded", G + "plan.py",
     '    if report.lms_id and name.startswith(TEST_STUDENT_PREFIX):\n        return True',
     '    if False:\n        return True'),
    ("one unreadable upload marks every empty lab", G + "score.py",
     "unreadable = bool(uploads and empty) and (not mine or uploads >= len(empty))",
     "unreadable = bool(uploads and empty)"),
    ("a growing ledger handed in twice is a duplicate note", G + "load.py",
     "if digest and digest == report.digest and first.source != e.source \\",
     "if first.source != e.source \\"),
    ("the feedback page shows the last reading as graded", G + "feedback.py",
     "        head = _shown(ig.graded_actual, info, units)\n",
     "        head = _shown(results[-1].payload.get('actual'), info, units)\n"),
    ("Canvas points possible are a fixed 10", G + "lms.py",
     "return round(lab.rubric.per_item * len(lab.items), 2)", "return 10.0"),
    ("a named time zone is read as UTC", G + "config.py",
     "        value = value.replace(tzinfo=zone)",
     "        value = value.replace(tzinfo=timezone.utc)"),
    ("copies of one file are flagged once each", G + "checks.py",
     'groups.setdefault(f.digest or f"source:{f.source}", []).append(f)',
     'groups.setdefault(f"source:{f.source}", []).append(f)'),
    ("a right prediction without a result still earns the correct point", G + "score.py",
     "+ r.correct * bool(ig.correct), ig.predicted_at)",
     "+ r.correct * (ig.correct is not False), ig.predicted_at)"),
    ("work exactly at the deadline is late", G + "score.py",
     "            if late > timedelta(0):\n                factor",
     "            if late >= timedelta(0):\n                factor"),
    ("an interrupted run's copy is not cleaned up next time", G + "outdir.py",
     "        shutil.rmtree(path, ignore_errors=True)\n        if path.exists():",
     "        if path.exists():"),
    ("a stopped run keeps its partial output", G + "cli.py",
     "                shutil.rmtree(tmp, ignore_errors=True)  # gone already unless it failed",
     "                pass"),
    ("the item's tolerance in the feedback words is the default", G + "feedback.py",
     '**({"tolerance": tolerance} if tolerance else {}))', "))"),
    ("a year-old ledger is not flagged", G + "score.py",
     "against - e.time > STALE_AFTER", "against - e.time > STALE_AFTER * 10"),
    ("an item's own tolerance is replaced by the lab's default in items.csv", G + "gradebook.py",
     "csv_safe(ig.tolerance_from or \"the item's own\")", "\"the item's own\""),
]


def run(mutation, tests: str) -> tuple[bool, float, str]:
    what, path, old, new = mutation[:4]
    tests = mutation[4] if len(mutation) > 4 else tests
    file = ROOT / path
    source = file.read_text(encoding="utf-8")
    if source.count(old) != 1:
        return False, 0.0, f"the source to mutate occurs {source.count(old)} times"
    file.write_text(source.replace(old, new), encoding="utf-8")
    t0 = time.perf_counter()
    try:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:xdist",
                               "-p", "no:cacheprovider", "-m", "not browser", *tests.split()],
                              cwd=ROOT, env=env, capture_output=True, text=True)
    finally:
        file.write_text(source, encoding="utf-8")
    failed = [ln for ln in proc.stdout.splitlines() if ln.startswith("FAILED")]
    return proc.returncode != 0, time.perf_counter() - t0, failed[0] if failed else ""


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default="", help="mutations whose description contains this")
    p.add_argument("--tests", default=TESTS)
    args = p.parse_args(argv)
    chosen = [m for m in MUTATIONS if args.only in m[0]]
    rows, killed = [], 0
    for m in chosen:
        dead, seconds, by = run(m, args.tests)
        killed += dead
        rows.append(f"| {m[0]} | `{m[1].split('/')[-1]}` | {'killed' if dead else 'SURVIVED'} "
                    f"| {by.replace('FAILED ', '')[:90]} |")
        print(rows[-1], flush=True)
    print("\n| mutation | file | result | first failing test |\n|---|---|---|---|")
    print("\n".join(rows))
    print(f"\n{killed} of {len(chosen)} killed ({killed / max(1, len(chosen)):.0%}).")
    return 0 if killed == len(chosen) else 1


if __name__ == "__main__":
    raise SystemExit(main())
