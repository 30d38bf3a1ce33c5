"""``labs-export --wasm``: browser-only interactive pages (``marimo export html-wasm``).

A lab is staged in a temporary folder next to a copy of the ``labs`` package, its short-name
imports rewritten to the wings' real module paths (:func:`resolve_short_imports`), so that
marimo's bundler finds and ships exactly the modules the lab uses. Needs ``uv`` on PATH.
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from labs.core.course.export.index import copy_style_sheet
from labs.core.course.export.inspection import ExportError
from labs.core.course.export.lab import marimo_cmd
from labs.core.course.export.offline import needed_files, prune_to

__all__ = [
    "UV_MISSING", "bundled_wasm_files", "export_wasm", "find_uv", "resolve_short_imports",
    "stage_for_wasm"
]

#: Why ``--wasm`` cannot run (labs-export says it, then exits non-zero).
UV_MISSING = ("--wasm needs `uv` (marimo export html-wasm runs it): `pip install uv`, or leave "
              "out --wasm")


def find_uv() -> str | None:
    """``uv`` on PATH or next to this interpreter (a venv's bin folder)."""
    local = Path(sys.executable).parent / ("uv.exe" if os.name == "nt" else "uv")
    return shutil.which("uv") or (str(local) if local.exists() else None)


def _short_names(package_dir: Path) -> dict[str, str]:
    """The ``SHORT_NAMES`` map of a staged ``labs/core/__init__.py`` (read, never imported)."""
    init = package_dir / "core" / "__init__.py"
    try:
        tree = ast.parse(init.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return {}
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else (
            node.target if isinstance(node, ast.AnnAssign) else None)
        if isinstance(target, ast.Name) and target.id == "SHORT_NAMES" and node.value is not None:
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return {}
            return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
    return {}


def resolve_short_imports(source: str, short_names: dict[str, str]) -> str:
    """Rewrite ``from labs.core import quiz, style`` to the wings' full paths.

    marimo's html-wasm export bundles the modules a notebook imports by following import
    statements; ``labs.core`` maps short names to modules lazily (PEP 562), which a static
    reader cannot follow. The staged copy of the lab therefore names each module's real path
    (``from labs.core.course import quiz``) and the bundle holds exactly what the lab uses.
    """
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    edits = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.module == "labs.core" and node.level == 0):
            continue
        groups: dict[str, list[str]] = {}
        for alias in node.names:
            target = short_names.get(alias.name, f"labs.core.{alias.name}")
            parent, _, leaf = target.rpartition(".")
            name = leaf if alias.asname is None and leaf == alias.name else f"{leaf} as {alias.asname or alias.name}"
            groups.setdefault(parent, []).append(name)
        indent = lines[node.lineno - 1][: node.col_offset]
        text = "\n".join(f"{indent if i else ''}from {parent} import {', '.join(names)}"
                         for i, (parent, names) in enumerate(groups.items()))
        edits.append((node.lineno, node.col_offset, node.end_lineno, node.end_col_offset, text))
    for lineno, col, end_lineno, end_col, text in sorted(edits, reverse=True):
        head = lines[lineno - 1][:col]
        tail = lines[end_lineno - 1][end_col:]
        lines[lineno - 1:end_lineno] = [head + text + tail]
    return "".join(lines)


def stage_for_wasm(path: Path, stage: Path) -> Path:
    """Copy the lab and its package into ``stage`` so marimo bundles the package by its name.

    marimo bundles local modules relative to the notebook's folder: a lab inside ``labs/``
    would ship ``labs/core`` as a package named ``core`` and ``from labs.core import ...``
    would fail in the browser. Staged as ``stage/<lab>.py`` next to ``stage/labs/``, the
    package is found as ``labs``. The staged lab's short-name imports are rewritten to full
    paths (:func:`resolve_short_imports`) so that marimo can follow them.
    """
    pkg = path.parent
    source = path.read_text(encoding="utf-8")
    if (pkg / "__init__.py").exists():
        target = stage / pkg.name
        shutil.copytree(pkg, target, ignore=shutil.ignore_patterns(
            "__pycache__", "__marimo__", "lab_*.py", "*.pyc", "instructor_dashboard.py"))
        source = resolve_short_imports(source, _short_names(target))
    staged = stage / path.name
    staged.write_text(source, encoding="utf-8")
    copy_style_sheet(pkg, stage)  # the lab's css_file, beside it as in labs/
    return staged


def bundled_wasm_files(out_dir: Path) -> set[str]:
    """Paths inside the local-module wheels of an html-wasm export."""
    import zipfile

    names: set[str] = set()
    for wheel in out_dir.glob("public/wheels/*.whl"):
        with zipfile.ZipFile(wheel) as z:
            names.update(z.namelist())
    return names


def export_wasm(path: Path, out_dir: Path, *, timeout: float = 600.0) -> float:
    """``marimo export html-wasm`` (run mode) of one lab into ``out_dir``; returns seconds.

    marimo copies its whole frontend folder (icons, web manifests, a notes file for coding
    assistants) next to the page; only what the page needs is kept (:func:`needed_files`: the
    page, what it names, what those name, ...), so a lab folder publishes nothing unrelated.
    Raises ExportError when uv is missing, the export fails, or the lab's package did not end
    up in the bundle.
    """
    uv = find_uv()
    if uv is None:
        raise ExportError(UV_MISSING)
    path, out_dir = Path(path).resolve(), Path(out_dir).resolve()
    env = dict(os.environ)
    env["PATH"] = str(Path(uv).parent) + os.pathsep + env.get("PATH", "")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="roofline-wasm-") as stage:
        staged = stage_for_wasm(path, Path(stage))
        cmd = marimo_cmd() + ["export", "html-wasm", str(staged), "-o", str(out_dir),
                              "--mode", "run", "--force"]
        proc = subprocess.run(cmd, env=env, cwd=stage, capture_output=True, text=True,
                              timeout=timeout)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout or "").strip()[-1500:]
        raise ExportError(f"{path.name}: marimo export html-wasm failed:\n{tail}")
    if (path.parent / "__init__.py").exists():
        pkg_init = f"{path.parent.name}/__init__.py"
        if pkg_init not in bundled_wasm_files(out_dir):
            raise ExportError(f"{path.name}: the WASM page does not bundle the "
                              f"'{path.parent.name}' package, so its imports would fail")
    prune_to(out_dir, needed_files(out_dir, [out_dir / "index.html"]))
    return time.perf_counter() - t0
