"""The mutation run: does the test suite catch plausible mistakes in the code it guards?

Each mutation (``mutations.py``; grading's in ``mutations_grading.py``) is one hand-written,
plausible mistake: a file, an exact snippet of it, the snippet as the mistake would leave it,
the area it belongs to (physics, quiz, export, grading, lessons: the course's lesson modules)
and the tests that should catch it. For each, this script writes the mistake into a *temporary copy* of the repository, runs the
listed tests there (``python -m pytest -x``, one process), and records:

* ``killed``: the tests failed (or errored, or hung past ``--timeout``) with the mistake in;
* ``survived``: they passed: the tests cannot tell the mistake from the code;
* ``stale``: the snippet is not in the file exactly once (the code moved on: update the
  mutation);
* ``invalid``: the listed tests fail without the mistake too (fix them first).

The working tree is never written: the copy lives in a temporary folder that is removed at the
end, on an error and on Ctrl+C. A table per area ends the run (kill rate = killed / (killed +
survived)), then every survivor with its mistake. ``--goal 0.9`` makes the exit status 1 when
an area is below 90%.

    python tests/mutation/run_mutations.py                 # every area
    python tests/mutation/run_mutations.py --area physics  # one area (repeatable)
    python tests/mutation/run_mutations.py --only quiz.within-factor-strict
    python tests/mutation/run_mutations.py --list          # what would run, and stale ones

docs/authors/testing.md ("Mutation run") records the kill rates and explains each survivor.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
AREAS = ("physics", "quiz", "export", "grading", "lessons")
#: What the copy leaves out: version control, caches, build and test outputs.
IGNORED = (".git", "__pycache__", ".pytest_cache", ".hypothesis", "artifacts", "site",
           "*.egg-info", "__marimo__", ".venv", "venv", "build", "dist")


@dataclass(frozen=True)
class Mutation:
    """One plausible mistake. ``id`` is ``<area>.<name>``; ``tests`` the pytest arguments
    (files, node ids, ``-k``/``-m`` expressions) as one shell-quoted string."""

    id: str
    file: str
    original: str
    mutated: str
    tests: str
    mistake: str

    @property
    def area(self) -> str:
        return self.id.split(".", 1)[0]

    @property
    def test_args(self) -> tuple[str, ...]:
        return tuple(shlex.split(self.tests))


@dataclass
class Result:
    id: str
    area: str
    status: str  # killed | survived | stale | invalid
    seconds: float = 0.0
    detail: str = ""  # why stale or invalid, how it was killed, the mistake of a survivor
    mistake: str = ""


def load(areas: Iterable[str] | None = None, only: Iterable[str] | None = None) -> list[Mutation]:
    """The mutations of ``areas`` (default: all), or exactly the ids in ``only``."""
    sys.path.insert(0, str(HERE))
    try:
        import mutations
        import mutations_grading
    finally:
        sys.path.remove(str(HERE))
    every = [*mutations.MUTATIONS, *mutations_grading.MUTATIONS]
    ids = [m.id for m in every]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    if duplicates:
        raise ValueError(f"mutation ids must be unique: {', '.join(duplicates)}")
    if only:
        wanted = list(only)
        unknown = [i for i in wanted if i not in ids]
        if unknown:
            raise ValueError(f"no mutation {', '.join(unknown)}")
        return [m for m in every if m.id in wanted]
    chosen = set(areas or AREAS)
    return [m for m in every if m.area in chosen]


def copy_tree(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(*IGNORED), symlinks=True)
    return dst


def problem(root: Path, m: Mutation) -> str | None:
    """Why ``m`` cannot be applied to the tree at ``root`` (stale), or None."""
    path = root / m.file
    if not path.is_file():
        return f"{m.file} does not exist"
    count = path.read_text(encoding="utf-8").count(m.original)
    if count != 1:
        return f"the snippet occurs {count} times in {m.file} (must be once)"
    if m.original == m.mutated:
        return "the mutated snippet is the original"
    return None


def run_env(copy: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(copy)  # the copy's packages, never the working tree's
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    for name in [n for n in env if n.startswith("PYTEST_")]:
        del env[name]  # an outer pytest (xdist worker) must not leak into the run
    return env


def pytest_command(args: Sequence[str]) -> list[str]:
    # one process, stop at the first failure; the project's addopts (xdist, durations) off
    return [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
            "-p", "no:xdist", "-o", "addopts=", *args]


def run_tests(copy: Path, args: Sequence[str], timeout: float) -> tuple[str, float, str]:
    """Run ``args`` in ``copy``: ("passed" | "failed" | "timeout" | "error", seconds, tail)."""
    t0 = time.perf_counter()
    try:
        done = subprocess.run(pytest_command(args), cwd=copy, env=run_env(copy),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - t0, f"no result in {timeout:.0f} s"
    seconds = time.perf_counter() - t0
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-6:])
    # 0: passed; 1: failed; 2: interrupted or a collection error; 3: internal error;
    # 4: usage error; 5: no test collected (the selection is wrong, not the code)
    outcome = {0: "passed", 1: "failed", 2: "failed", 3: "failed"}.get(done.returncode, "error")
    return outcome, seconds, tail


def check_imports_from(copy: Path, package: str = "labs") -> None:
    """The tests in ``copy`` must import ``package`` from the copy, or the run means nothing."""
    if not (copy / package).is_dir():
        return
    done = subprocess.run([sys.executable, "-c", f"import {package}; print({package}.__file__)"],
                          cwd=copy, env=run_env(copy), capture_output=True, text=True,
                          timeout=120)
    where = Path(done.stdout.strip() or ".").resolve()
    if not where.is_relative_to(copy.resolve()):
        raise RuntimeError(f"`import {package}` in the copy finds {where}, not the copy: the "
                           "mutation run would test the working tree")


def run(chosen: Sequence[Mutation], *, root: Path = REPO, timeout: float = 300.0,
        baseline: bool = True, log: Callable[[str], None] = print,
        runner: Callable[[Path, Sequence[str], float], tuple[str, float, str]] | None = None
        ) -> list[Result]:
    """Apply each mutation to a temporary copy of ``root`` in turn, run its tests, restore.
    ``root`` itself is only read. The copy is removed at the end, also on Ctrl+C."""
    runner = runner or run_tests
    results: list[Result] = []
    tmp = Path(tempfile.mkdtemp(prefix="roofline-mutation-"))
    try:
        copy = copy_tree(root, tmp / "repo")
        check_imports_from(copy)
        broken: dict[tuple[str, ...], str] = {}
        for i, m in enumerate(chosen, 1):
            why = problem(copy, m)
            if why:
                results.append(Result(m.id, m.area, "stale", detail=why, mistake=m.mistake))
                log(f"[{i}/{len(chosen)}] {m.id}: STALE ({why})")
                continue
            if baseline and m.test_args not in broken:
                outcome, _, tail = runner(copy, m.test_args, timeout)
                broken[m.test_args] = "" if outcome == "passed" else f"{outcome}: {tail}"
            if broken.get(m.test_args):
                results.append(Result(m.id, m.area, "invalid",
                                      detail=f"the tests fail without the mistake "
                                             f"({broken[m.test_args]})", mistake=m.mistake))
                log(f"[{i}/{len(chosen)}] {m.id}: INVALID (tests fail unmutated)")
                continue
            path = copy / m.file
            text = path.read_text(encoding="utf-8")
            try:
                path.write_text(text.replace(m.original, m.mutated, 1), encoding="utf-8")
                outcome, seconds, tail = runner(copy, m.test_args, timeout)
            finally:
                path.write_text(text, encoding="utf-8")
            if outcome == "error":
                status, detail = "invalid", f"pytest could not run the selection: {tail}"
            elif outcome == "passed":
                status, detail = "survived", m.mistake
            else:
                status = "killed"
                detail = "timed out" if outcome == "timeout" else (tail.splitlines() or [""])[-1]
            results.append(Result(m.id, m.area, status, seconds, detail, m.mistake))
            log(f"[{i}/{len(chosen)}] {m.id}: {status} ({seconds:.1f} s)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return results


@dataclass
class AreaRate:
    area: str
    counts: dict = field(default_factory=dict)

    @property
    def rate(self) -> float | None:
        judged = self.counts.get("killed", 0) + self.counts.get("survived", 0)
        return self.counts.get("killed", 0) / judged if judged else None


def rates(results: Sequence[Result]) -> list[AreaRate]:
    out = []
    for area in [a for a in AREAS if any(r.area == a for r in results)]:
        mine = [r for r in results if r.area == area]
        out.append(AreaRate(area, {s: sum(r.status == s for r in mine)
                                   for s in ("killed", "survived", "stale", "invalid")}))
    return out


def table(results: Sequence[Result]) -> str:
    """The per-area table, then the survivors, stale and invalid mutations with why."""
    lines = ["| area | mutations | killed | survived | stale | invalid | kill rate |",
             "|---|---|---|---|---|---|---|"]
    for a in rates(results):
        c = a.counts
        rate = "–" if a.rate is None else f"{a.rate:.0%}"
        lines.append(f"| {a.area} | {sum(c.values())} | {c['killed']} | {c['survived']} | "
                     f"{c['stale']} | {c['invalid']} | {rate} |")
    for status in ("survived", "stale", "invalid"):
        listed = [r for r in results if r.status == status]
        if listed:
            lines.append(f"\n{status}:")
            lines += [f"  {r.id}: {r.detail}" for r in listed]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="run_mutations", description=__doc__.split("\n\n")[0])
    p.add_argument("--area", action="append", choices=AREAS, help="only this area (repeatable)")
    p.add_argument("--only", action="append", metavar="ID", help="only this mutation (repeatable)")
    p.add_argument("--list", action="store_true", help="list the mutations and stale ones; run nothing")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per test run (default 300)")
    p.add_argument("--no-baseline", action="store_true",
                   help="skip running each test selection once without a mistake first")
    p.add_argument("--json", type=Path, help="also write the results here")
    p.add_argument("--goal", type=float, default=None,
                   help="exit 1 when an area's kill rate is below this (e.g. 0.9)")
    args = p.parse_args(argv)
    try:
        chosen = load(args.area, args.only)
    except ValueError as exc:
        print(f"run_mutations: {exc}", file=sys.stderr)
        return 2
    if args.list:
        for m in chosen:
            why = problem(REPO, m)
            print(f"{m.id:45} {m.file}{'  STALE: ' + why if why else ''}")
        return 0
    t0 = time.perf_counter()
    try:
        results = run(chosen, timeout=args.timeout, baseline=not args.no_baseline,
                      log=lambda s: print(s, flush=True))
    except KeyboardInterrupt:
        print("\nrun_mutations: interrupted; the working tree was not touched.", file=sys.stderr)
        return 130
    print(f"\n{len(results)} mutations in {time.perf_counter() - t0:.0f} s\n")
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps([asdict(r) for r in results], indent=1),
                             encoding="utf-8")
    if args.goal is not None and any(a.rate is not None and a.rate < args.goal
                                     for a in rates(results)):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
