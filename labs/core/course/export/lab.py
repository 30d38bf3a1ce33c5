"""One lab through ``marimo export html``, in a throwaway ledger, then checked (``labs-export``).

:func:`export_lab` runs marimo in a subprocess with :func:`export_env` (``ROOFLINE_LEDGER_DIR``
a temporary folder, ``ROOFLINE_STUDENT_ID=export``, never the instructor's own ledger; the
instructor copy is switched on by ``-- --reveal`` alone) and inspects the page it wrote
(:func:`labs.core.course.export.inspection.inspect_page`).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from labs.core.course.export.index import LabMeta
from labs.core.course.export.inspection import (
    ExportError,
    PageReport,
    inspect_page,
    lab_cell_code,
)

__all__ = ["LabResult", "export_env", "export_lab", "marimo_cmd"]


def export_env(ledger_dir: str | os.PathLike, *, reveal: bool) -> dict[str, str]:
    """The environment a lab is exported in: a throwaway ledger, reveal only when asked."""
    env = dict(os.environ)
    env["ROOFLINE_LEDGER_DIR"] = str(ledger_dir)
    env["ROOFLINE_STUDENT_ID"] = "export"
    env["ROOFLINE_STATIC_EXPORT"] = "1"  # the page's ledger line says it records nothing
    # An instructor's shell setting must not leak into a student copy; the instructor copy is
    # switched on by the CLI argument ``-- --reveal`` alone (what labs.core.course.quiz.reveal
    # reads). A student copy says "no answers" outright: a false value wins over --reveal.
    env.pop("ROOFLINE_REVEAL", None)
    if not reveal:
        env["ROOFLINE_REVEAL"] = "0"
    return env


def marimo_cmd() -> list[str]:
    """How to call the marimo CLI of this interpreter (works without an activated venv)."""
    return [sys.executable, "-m", "marimo"]


@dataclass
class LabResult:
    """One exported lab: its metadata, its page, how long marimo took, what the check found."""

    meta: LabMeta
    page: Path
    seconds: float
    report: PageReport | None = None
    problems: list[str] = field(default_factory=list)


def export_lab(path: Path, out_html: Path, *, reveal: bool, include_code: bool = False,
               timeout: float = 300.0) -> tuple[float, PageReport, list[str]]:
    """Export one lab to ``out_html``; returns (seconds, page report, problems)."""
    lab = path.name
    path, out_html = Path(path).resolve(), Path(out_html).resolve()
    cmd = marimo_cmd() + ["export", "html", str(path), "-o", str(out_html), "--force"]
    if not include_code:
        cmd.append("--no-include-code")
    if reveal:
        cmd += ["--", "--reveal"]
    with tempfile.TemporaryDirectory(prefix="roofline-export-ledger-") as ledger_dir:
        t0 = time.perf_counter()
        try:
            proc = subprocess.run(cmd, env=export_env(ledger_dir, reveal=reveal),
                                  cwd=str(path.parent), capture_output=True, text=True,
                                  timeout=timeout)
        except subprocess.TimeoutExpired:
            raise ExportError(f"{lab}: marimo export did not finish in {timeout:.0f} s") from None
        seconds = time.perf_counter() - t0
    if not out_html.exists():
        tail = (proc.stderr or proc.stdout or "").strip()[-1500:]
        raise ExportError(f"{lab}: marimo export wrote no page (exit {proc.returncode}):\n{tail}")
    report = inspect_page(out_html.read_text(encoding="utf-8"),
                          None if include_code else lab_cell_code(path))
    problems = report.problems(lab)
    if proc.returncode != 0 and not problems:
        tail = (proc.stderr or proc.stdout or "").strip()[-1500:]
        problems.append(f"{lab}: marimo export exited {proc.returncode}:\n{tail}")
    return seconds, report, problems
