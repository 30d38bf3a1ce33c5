"""The output folder of ``labs-grade`` (and of ``--merge``): checked, staged, swapped in,
and cleaned up after an interrupted run.

A run writes into a hidden staging folder next to the output (``.<out>.labs-grade-<pid>``) and
swaps it in at the end (the old output set aside as ``.<out>.old-<pid>``, then removed). A
non-empty output is refused unless ``--force``, and then only when it holds nothing but what
labs-grade writes, all of which can be removed. What a run killed outright leaves is removed by
the next run into the same folder (:func:`clean_stale`), which says so: a class's grades are
never kept anywhere but the output folder. Part of :mod:`labs.core.course.grading` (import it
through that name).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

__all__ = [
    "OUTPUT_NAMES", "RUN_FILE", "check_out", "clean_stale", "glob_escape", "replace_with",
    "staging"
]

#: what labs-grade writes into its output folder (a folder holding only these, or its own
#: RUN_FILE, may be replaced with --force)
OUTPUT_NAMES = {"gradebook.csv", "events.csv", "files.csv", "canvas.csv", "items.csv",
                "canvas-left-out.csv", "gradescope.csv", "feedback", "README.txt"}
RUN_FILE = "README.txt"


def check_out(out: Path, force: bool) -> str:
    """Why ``out`` cannot take this run ("" if it can: absent, empty, or with ``--force`` a
    folder holding only what labs-grade writes, all of which can be removed)."""
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
    stuck = _undeletable(out)
    if stuck:
        return (f"{out} cannot be replaced: {stuck} cannot be removed (read-only?); make it "
                f"writable, or give a new folder with -o")
    return ""


def _undeletable(folder: Path) -> str:
    """A folder under ``folder`` (itself included) whose entries cannot be removed, or ""."""
    for root, dirs, _ in os.walk(folder):
        if not os.access(root, os.W_OK | os.X_OK):
            return root
    parent = folder.resolve().parent
    return "" if os.access(parent, os.W_OK | os.X_OK) else str(parent)


#: The staging folder of a run (``.<out>.labs-grade-<pid>``) and the old output a --force
#: run sets aside while it swaps the new one in (``.<out>.old-<pid>``), next to ``-o``.
_STAGING = ("labs-grade", "old")


def staging(out: Path, kind: str, pid: int | None = None) -> Path:
    return out.with_name(f".{out.name}.{kind}-{os.getpid() if pid is None else pid}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # someone else's process: leave its folder alone
    return True


def clean_stale(out: Path) -> list[str]:
    """Remove what an interrupted run into ``out`` left next to it (its staging folder, or
    the old output a --force run set aside), when the run that made it is gone; what was
    done, in words, for the console."""
    said = []
    if not out.parent.is_dir():
        return said
    for path in sorted(out.parent.glob(f".{glob_escape(out.name)}.*-*")):
        kind, _, pid = path.name[len(out.name) + 2:].rpartition("-")
        if kind not in _STAGING or not pid.isdigit() or not path.is_dir():
            continue
        if int(pid) != os.getpid() and _alive(int(pid)):
            said.append(f"{path} belongs to a labs-grade run still going (process {pid}): "
                        "left alone")
            continue
        shutil.rmtree(path, ignore_errors=True)
        if path.exists():
            said.append(f"{path}, left by an interrupted run, could not be removed: it holds "
                        "students' grades, remove it by hand")
        else:
            said.append(f"removed {path}, left by an interrupted run")
    return said


def glob_escape(text: str) -> str:
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def replace_with(tmp: Path, out: Path) -> list[str]:
    """Put the finished run ``tmp`` where ``out`` was (the old one removed whole); what could
    not be cleaned up, in words."""
    if not out.exists():
        os.replace(tmp, out)
        return []
    old = staging(out, "old")
    os.replace(out, old)
    os.replace(tmp, out)
    shutil.rmtree(old, ignore_errors=True)
    if old.exists():
        return [f"the previous run, set aside at {old}, could not be removed: it holds "
                "students' grades, remove it by hand"]
    return []
