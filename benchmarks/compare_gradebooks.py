"""Does labs-grade still give the same grades? A refactor's check (behaviour unchanged).

    python benchmarks/compare_gradebooks.py BEFORE_TREE [AFTER_TREE]

``BEFORE_TREE`` and ``AFTER_TREE`` are two checkouts of the repository (``git worktree add
--detach /tmp/before main`` makes one; AFTER_TREE defaults to this checkout). The script writes
two generated classes with the BEFORE tree's generators: the Canvas class
(``classroom.canvas_class``: Canvas file names, every roster id column, late work, overrides,
re-uploads) and the every-case class (``classroom.cases``). Each tree's ``labs-grade`` grades
both, one process each, and the script compares every CSV and every feedback page byte for
byte. Exit 1 on any difference, naming the file. Beside ``compare_pages.py`` (the pages).
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CSVS = ("gradebook.csv", "canvas.csv", "items.csv", "events.csv", "files.csv")


def _python(tree: Path, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, capture_output=True,
                          text=True)


def generate(tree: Path, folder: Path) -> dict[str, Path]:
    """The two generated classes, written by ``tree``'s generators into ``folder``."""
    classes = {}
    for name, module, args in (("canvas", "labs.core.course.classroom.canvas_class", ["60", "7"]),
                               ("cases", "labs.core.course.classroom.cases", [])):
        classes[name] = folder / name
        done = _python(tree, ["-m", module, str(classes[name]), *args], cwd=folder)
        if done.returncode != 0:
            raise SystemExit(f"{module} failed in {tree}:\n{done.stderr[-1500:]}")
    return classes


def grade(tree: Path, class_dir: Path, out: Path) -> None:
    """``tree``'s labs-grade on one generated class (it exits 1 when a file could not be
    graded, which the generated classes hold on purpose: only a missing gradebook is an
    error)."""
    done = _python(tree, ["-m", "labs.core.course.grading", "submissions", "-c", "course.toml",
                          "--roster", "roster.csv", "--overrides", "overrides.csv",
                          "-o", str(out), "--workers", "1"], cwd=class_dir)
    if not (out / "gradebook.csv").exists():
        raise SystemExit(f"labs-grade wrote no gradebook in {tree}:\n{done.stderr[-1500:]}")


def differences(before: Path, after: Path) -> list[str]:
    """Every output file that differs or exists on one side only, relative to ``before``."""
    found = [name for name in CSVS if not filecmp.cmp(before / name, after / name,
                                                      shallow=False)]
    pages = {p.name for p in (before / "feedback").glob("*")} | {
        p.name for p in (after / "feedback").glob("*")}
    for name in sorted(pages):
        a, b = before / "feedback" / name, after / "feedback" / name
        if not (a.exists() and b.exists() and filecmp.cmp(a, b, shallow=False)):
            found.append(f"feedback/{name}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path, help="the checkout before the change")
    parser.add_argument("after", type=Path, nargs="?", default=ROOT,
                        help="the checkout after it (default: this one)")
    args = parser.parse_args(argv)
    before, after = args.before.resolve(), args.after.resolve()
    changed = 0
    with tempfile.TemporaryDirectory(prefix="compare-gradebooks-") as tmp:
        classes = generate(before, Path(tmp))
        for name, class_dir in classes.items():
            outs = {}
            for side, tree in (("before", before), ("after", after)):
                outs[side] = Path(tmp) / f"{name}-{side}"
                grade(tree, class_dir, outs[side])
            diff = differences(outs["before"], outs["after"])
            pages = len(list((outs["before"] / "feedback").glob("*")))
            print(f"{name} class: {len(CSVS)} CSVs and {pages} feedback pages, "
                  + ("the same" if not diff else f"{len(diff)} differ: {', '.join(diff[:8])}"))
            changed += len(diff)
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
