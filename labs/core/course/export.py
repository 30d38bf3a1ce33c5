"""``labs-export``: publish the labs as a static site an instructor can hand out.

Each lab (``labs/lab_*.py``, found by glob) is run once with ``marimo export html`` and written
as ``<lab>.html`` next to an ``index.html`` that lists every lab's title, learning goals and
estimated minutes (read from the lab's ``style.lab_header(...)`` call, see :func:`read_lab_meta`).

Modes (see the README, "For instructors"):

* student copy (default, ``site/student``): gates closed, as a student first sees the lab;
* ``--reveal`` instructor copy (``site/instructor``): the labs run with ``-- --reveal`` so every
  prediction is filled with its reference answer (``labs.core.course.reveal``) and every instrument,
  figure and explanation is shown;
* ``--offline``: marimo's frontend (``marimo/_static`` of the installed package) is copied to
  ``<site>/_marimo/`` and the pages point there instead of the public CDN, so the site renders
  with no internet when served over http (``python -m http.server`` in the site folder);
* ``--wasm``: also run ``marimo export html-wasm`` per lab into ``<site>/wasm/<lab>/`` (needs
  ``uv``; skipped with a message when it is missing).

Pages leave the notebook code out (``--with-code`` keeps it: about 150 KB more per lab; the
students have the notebooks anyway). The export fails (exit status 1, a message naming the lab
and the cell) when a page contains marimo's "output is too large" placeholder or a cell that
raised. Exporting never touches the instructor's own ledger: the labs run with
``ROOFLINE_LEDGER_DIR`` pointing to a temporary folder and ``ROOFLINE_STUDENT_ID=export``.
"""

from __future__ import annotations

import argparse
import ast
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

REPO_ROOT = Path(__file__).resolve().parents[3]
DEFAULT_LABS_DIR = REPO_ROOT / "labs"
LAB_GLOB = "lab_*.py"
ASSET_DIR_NAME = "_marimo"

#: What marimo writes in place of an output over ``output_max_bytes`` (export still exits 0).
TOO_LARGE_MARKER = "output is too large"
#: The fixed words of ``labs.core.ui.style.gate_notice``: what a closed gate shows where an
#: instrument would be (tests/test_export.py checks that style still says it).
GATE_TEXT = "Instrument hidden."
#: marimo error kinds that are not failures: a cell below a ``mo.stop`` gate.
BENIGN_ERROR_KINDS = frozenset({"ancestor-stopped"})

# The frontend prefix marimo writes ~190 times into each page, matched by its shape (package
# name, version, dist) rather than by host, so a change of CDN in marimo still matches.
_FRONTEND_URL_RE = re.compile(r"https?://[^\s\"'`()<>]*?/@marimo-team/frontend@[^/\s\"'`]+/dist")
# The plotly plugin asks a CDN for MathJax on every page (only needed for LaTeX in plotly
# labels, which the labs do not use). Offline it is pointed at a local path that does not
# exist: the request fails at once on the same server, the plot renders without it, and the
# page makes no request off the machine.
_MATHJAX_URL_RE = re.compile(r"https?://[^\s\"'`()<>]*?/mathjax-full@[^\s\"'`]*?\.js")
MATHJAX_LOCAL = "./mathjax-not-bundled.js"

# Shown instead of a blank page when an offline copy is opened from disk (file://): browsers
# refuse to load ES modules from file:// pages, so marimo's frontend cannot start there.
_FILE_PROTOCOL_NOTICE = """<script>
if (location.protocol === "file:") {
  document.addEventListener("DOMContentLoaded", function () {
    var d = document.createElement("div");
    d.setAttribute("role", "alert");
    d.style.cssText = "font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:3em auto;" +
      "padding:1em 1.2em;border:2px solid #d55e00;border-radius:8px";
    d.textContent = "This page was opened from disk (file://), where browsers do not run " +
      "marimo's frontend. Serve the folder instead: open a terminal in it, run " +
      "`python -m http.server 8000`, then open http://localhost:8000/";
    document.body.prepend(d);
  });
}
</script>"""


class ExportError(RuntimeError):
    """A lab could not be exported, or its page is not fit to publish."""


# --------------------------------------------------------------------------------------------
# Discovering labs and reading their metadata


@dataclass
class LabMeta:
    """What the index page says about a lab, read from the lab file without running it."""

    path: Path
    title: str
    subtitle: str = ""
    goals: list[str] = field(default_factory=list)
    minutes: float | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def slug(self) -> str:
        return self.path.stem


def discover_labs(labs_dir: str | os.PathLike = DEFAULT_LABS_DIR,
                  only: Sequence[str] = ()) -> list[Path]:
    """``labs_dir/lab_*.py`` sorted by name; ``only`` keeps those whose stem contains one of
    the given strings (``lab_01`` or ``memory_wall``). Raises ValueError when nothing matches."""
    labs_dir = Path(labs_dir)
    if not labs_dir.is_dir():
        raise ValueError(f"labs_dir {str(labs_dir)!r} is not a folder")
    found = sorted(labs_dir.glob(LAB_GLOB))
    if only:
        found = [p for p in found if any(key in p.stem for key in only)]
    if not found:
        what = f" matching {', '.join(only)}" if only else ""
        raise ValueError(f"no {LAB_GLOB} notebooks{what} in {labs_dir}")
    return found


def _literal(node: ast.AST | None, names: dict[str, Any]) -> Any:
    """The value of a literal expression, resolving bare names from simple assignments."""
    if node is None:
        return None
    if isinstance(node, ast.Name) and node.id in names:
        return names[node.id]
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _simple_assignments(tree: ast.AST) -> dict[str, Any]:
    """``NAME = <literal>`` anywhere in the file (module level or inside a cell)."""
    names: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name):
            value = _literal(node.value, {})
            if value is not None:
                names[node.targets[0].id] = value
    return names


def read_lab_meta(path: str | os.PathLike) -> LabMeta:
    """Title, subtitle, goals and minutes of a lab, from its source.

    The lab contract (LABS_SPEC §3) puts them in the header call
    ``style.lab_header(title, subtitle, goals=[...], minutes=N, reading=[...])``; arguments that
    are literals (or names bound to literals) are read. A ``LAB_META = {"title": ..., "goals":
    [...], "minutes": N}`` literal, if present, takes precedence. Missing pieces become warnings
    (the export goes on; the index shows what it has).
    """
    path = Path(path)
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source, filename=str(path))
    names = _simple_assignments(tree)
    found: dict[str, Any] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            fname = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
            if fname == "lab_header":
                order = ("title", "subtitle", "goals", "minutes", "reading")
                for key, arg in zip(order, node.args):
                    found[key] = _literal(arg, names)
                for kw in node.keywords:
                    if kw.arg:
                        found[kw.arg] = _literal(kw.value, names)
                break
    meta_literal = names.get("LAB_META")
    if isinstance(meta_literal, dict):
        found.update({k: v for k, v in meta_literal.items() if v is not None})

    warnings = []
    title = found.get("title")
    if not isinstance(title, str) or not title.strip():
        title = path.stem.replace("_", " ")
        warnings.append("no literal title in style.lab_header(...) or LAB_META")
    subtitle = found.get("subtitle") if isinstance(found.get("subtitle"), str) else ""
    goals = found.get("goals")
    if not (isinstance(goals, (list, tuple)) and all(isinstance(g, str) for g in goals)):
        goals = []
        warnings.append("no literal learning goals in style.lab_header(goals=[...])")
    minutes = found.get("minutes")
    if not (isinstance(minutes, (int, float)) and not isinstance(minutes, bool) and minutes > 0):
        minutes = None
        warnings.append("no literal estimated minutes in style.lab_header(minutes=N)")
    return LabMeta(path=path, title=title.strip(), subtitle=subtitle.strip(), goals=list(goals),
                   minutes=minutes, warnings=warnings)


# --------------------------------------------------------------------------------------------
# Checking an exported page


@dataclass
class CellReport:
    """One cell of an exported page, as marimo recorded it."""

    index: int  # 1-based position in the notebook
    cell_id: str
    name: str
    first_line: str
    error_kinds: list[str]
    error_text: str
    html_bytes: int
    too_large: bool
    gate_closed: bool
    figures: int

    def where(self) -> str:
        named = f" {self.name!r}" if self.name and self.name != "_" else ""
        return f"cell {self.index}{named} (`{self.first_line}`)"


@dataclass
class PageReport:
    """What :func:`inspect_page` found in an exported page."""

    cells: list[CellReport]
    size_bytes: int
    frontend_urls: int  # references to marimo's frontend on a CDN (0 once made offline)

    @property
    def errors(self) -> list[CellReport]:
        return [c for c in self.cells if c.error_kinds]

    @property
    def too_large(self) -> list[CellReport]:
        return [c for c in self.cells if c.too_large]

    @property
    def closed_gates(self) -> list[CellReport]:
        return [c for c in self.cells if c.gate_closed]

    @property
    def figures(self) -> int:
        return sum(c.figures for c in self.cells)

    def problems(self, lab: str) -> list[str]:
        """Publishing blockers, one sentence each, naming the lab and the cell."""
        out = []
        for c in self.errors:
            out.append(f"{lab}: {c.where()} raised an error "
                       f"({', '.join(c.error_kinds)}): {c.error_text}")
        for c in self.too_large:
            out.append(f"{lab}: {c.where()} output was replaced by marimo's "
                       f"'{TOO_LARGE_MARKER}' placeholder (shrink that output)")
        return out


def _mount_json(page: str, key: str) -> Any:
    """A top-level value of the ``__MARIMO_MOUNT_CONFIG__`` object embedded in the page."""
    start = page.find("__MARIMO_MOUNT_CONFIG__")
    if start < 0:
        raise ExportError("the page has no marimo mount config (not a marimo HTML export?)")
    match = re.compile(r'\n\s*"' + re.escape(key) + r'":\s*').search(page, start)
    if not match:
        raise ExportError(f"the page's marimo mount config has no {key!r}")
    value, _ = json.JSONDecoder().raw_decode(page, match.end())
    return value


_TAG_RE = re.compile(r"<[^>]+>")


def _plain(text: str) -> str:
    return html.unescape(_TAG_RE.sub("", text))


def _error_text(cell: dict, outputs: list) -> str:
    """The exception line of a failed cell: last line of its traceback, else marimo's message."""
    for stream in cell.get("console") or []:
        if stream.get("mimetype") == "application/vnd.marimo+traceback":
            lines = [ln for ln in _plain(stream.get("text", "")).splitlines() if ln.strip()]
            if lines:
                return lines[-1].strip()[:300]
    for out in outputs:
        if out.get("type") == "error":
            return str(out.get("evalue") or out.get("msg") or out.get("ename"))[:300]
    return "unknown error"


def lab_cell_code(path: str | os.PathLike) -> dict[str, str]:
    """Cell id -> code of a notebook, as marimo numbers its cells (the ids an export uses).

    Pages exported without code carry no code to name a failing cell by; this reads it from
    the notebook file (parsed, not run). Empty if marimo cannot load the file.
    """
    try:
        from marimo._ast.load import load_app

        app = load_app(str(path))
        return {str(c.cell_id): c.code for c in app._cell_manager.cell_data()} if app else {}
    except Exception:  # naming cells is a courtesy: never let it hide the real problem
        return {}


def inspect_page(page: str, cell_code: dict[str, str] | None = None) -> PageReport:
    """Per-cell errors, placeholders, closed gates and figure counts of an exported page.

    ``cell_code`` (from :func:`lab_cell_code`) names cells when the page has no code in it.
    """
    notebook = _mount_json(page, "notebook")
    session = _mount_json(page, "session") or {}
    code_by_id = {c.get("id"): c for c in (notebook or {}).get("cells", [])}
    order = [c.get("id") for c in (notebook or {}).get("cells", [])]
    cells = []
    for scell in session.get("cells", []):
        cid = scell.get("id")
        ncell = code_by_id.get(cid, {})
        code = ncell.get("code") or (cell_code or {}).get(str(cid), "")
        code_lines = [ln.strip() for ln in str(code).splitlines() if ln.strip()]
        first = code_lines[0] if code_lines else ""
        outputs = scell.get("outputs") or []
        kinds = [str(o.get("ename", "error")) for o in outputs if o.get("type") == "error"]
        kinds = [k for k in kinds if k not in BENIGN_ERROR_KINDS]
        blob = json.dumps(outputs, ensure_ascii=False)
        cells.append(CellReport(
            index=order.index(cid) + 1 if cid in order else len(cells) + 1,
            cell_id=str(cid), name=str(ncell.get("name", "_")),
            first_line=first if len(first) <= 70 else first[:67] + "...",
            error_kinds=kinds, error_text=_error_text(scell, outputs) if kinds else "",
            html_bytes=len(blob.encode("utf-8")),
            too_large=TOO_LARGE_MARKER in blob.lower(),
            gate_closed=GATE_TEXT in blob,
            figures=blob.count("<marimo-plotly"),
        ))
    # The placeholder can only come from an output, but check the whole page too.
    if TOO_LARGE_MARKER in page.lower() and not any(c.too_large for c in cells):
        cells.append(CellReport(len(cells) + 1, "?", "_", "(outside any cell)", [], "", 0,
                                True, False, 0))
    return PageReport(cells=cells, size_bytes=len(page.encode("utf-8")),
                      frontend_urls=len(_FRONTEND_URL_RE.findall(page)))


# --------------------------------------------------------------------------------------------
# Running marimo


def export_env(ledger_dir: str | os.PathLike, *, reveal: bool) -> dict[str, str]:
    """The environment a lab is exported in: a throwaway ledger, reveal only when asked."""
    env = dict(os.environ)
    env["ROOFLINE_LEDGER_DIR"] = str(ledger_dir)
    env["ROOFLINE_STUDENT_ID"] = "export"
    env["ROOFLINE_STATIC_EXPORT"] = "1"  # the page's ledger line says it records nothing
    # An instructor's shell setting must not leak into a student copy; the instructor copy is
    # switched on by the CLI argument ``-- --reveal`` alone (what labs.core.course.reveal reads).
    env.pop("ROOFLINE_REVEAL", None)
    return env


def marimo_cmd() -> list[str]:
    """How to call the marimo CLI of this interpreter (works without an activated venv)."""
    return [sys.executable, "-m", "marimo"]


@dataclass
class LabResult:
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


# --------------------------------------------------------------------------------------------
# Offline assets


def marimo_static_dir() -> Path:
    """The frontend build shipped inside the installed marimo package."""
    import marimo

    static = Path(marimo.__file__).parent / "_static"
    if not (static / "assets").is_dir():
        raise ExportError(f"marimo's frontend assets are missing from {static}")
    return static


def bundle_offline_assets(site: Path) -> Path:
    """Copy marimo's frontend into ``site/_marimo`` (once per site); returns that folder.

    The entry script's MathJax URL is pointed at a local path (see ``_MATHJAX_URL_RE``).
    """
    static = marimo_static_dir()
    target = site / ASSET_DIR_NAME
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(static, target, ignore=shutil.ignore_patterns("index.html", "*.md"))
    for js in (target / "assets").glob("*.js"):
        text = js.read_text(encoding="utf-8", errors="surrogateescape")
        if "mathjax-full@" in text:
            js.write_text(_MATHJAX_URL_RE.sub(MATHJAX_LOCAL, text), encoding="utf-8",
                          errors="surrogateescape")
    return target


def make_page_offline(page: str, asset_prefix: str = f"./{ASSET_DIR_NAME}") -> str:
    """Point every frontend URL of an exported page at the local copy; add the file:// note."""
    page = _FRONTEND_URL_RE.sub(asset_prefix, page)
    return page.replace("</head>", _FILE_PROTOCOL_NOTICE + "</head>", 1)


# --------------------------------------------------------------------------------------------
# WASM


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


def _stage_for_wasm(path: Path, stage: Path) -> Path:
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

    Raises ExportError when uv is missing, the export fails, or the lab's package did not end
    up in the bundle.
    """
    uv = find_uv()
    if uv is None:
        raise ExportError("uv missing")
    path, out_dir = Path(path).resolve(), Path(out_dir).resolve()
    env = dict(os.environ)
    env["PATH"] = str(Path(uv).parent) + os.pathsep + env.get("PATH", "")
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="roofline-wasm-") as stage:
        staged = _stage_for_wasm(path, Path(stage))
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
    return time.perf_counter() - t0


# --------------------------------------------------------------------------------------------
# The index page


def _fmt_minutes(minutes: float | None) -> str:
    return f"about {round(minutes)} min" if minutes else "time not stated"


def render_index(results: Sequence[LabResult], *, reveal: bool, offline: bool,
                 wasm_dirs: dict[str, str] | None = None) -> str:
    """A self-contained index page (no scripts, no external resources)."""
    e = html.escape
    mode = ("Instructor copy: every prediction is filled with the reference answer, so all "
            "instruments and explanations are shown. Do not give this copy to students."
            if reveal else
            "Student copy: each lab shows its prediction gates closed, as a student first sees "
            "it. This static page does not run Python: to make predictions and use the "
            "instruments, open the lab with marimo (see the course README).")
    total = sum(r.meta.minutes or 0 for r in results)
    cards = []
    for r in results:
        m = r.meta
        goals = "".join(f"<li>{e(g)}</li>" for g in m.goals)
        wasm = ""
        if wasm_dirs and m.slug in wasm_dirs:
            wasm = (f' · <a href="{e(wasm_dirs[m.slug])}/index.html">interactive '
                    f"(runs in the browser)</a>")
        cards.append(
            f'<article class="lab"><h2><a href="{e(r.page.name)}">{e(m.title)}</a></h2>'
            f'<p class="meta">{e(_fmt_minutes(m.minutes))} · <code>{e(m.path.name)}</code>'
            f"{wasm}</p>"
            + (f'<p class="sub">{e(m.subtitle)}</p>' if m.subtitle else "")
            + (f"<h3>Learning goals</h3><ol>{goals}</ol>" if goals else "")
            + "</article>")
    note = ("" if not offline else
            '<p class="note">This copy works without internet when served over http '
            "(<code>python -m http.server</code> in this folder). Opened from disk "
            "(file://) the lab pages cannot start.</p>")
    title = "Roofline Labs · " + ("instructor copy" if reveal else "student copy")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)}</title>
<style>
:root {{ color-scheme: light dark; --muted: #6b7280; --border: rgba(128,128,128,.35); }}
body {{ font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 52rem;
       margin: 2rem auto; padding: 0 1rem; }}
h1 {{ font-size: 1.9rem; margin: 0 0 .3rem; }}
.mode {{ border-left: 4px solid {"#d55e00" if reveal else "#0072b2"}; padding: .4rem .8rem; }}
.lab {{ border: 1px solid var(--border); border-radius: 8px; padding: .6rem 1rem; margin: 1rem 0; }}
.lab h2 {{ font-size: 1.3rem; margin: .2rem 0; }}
.lab h3 {{ font-size: 1rem; margin: .6rem 0 .2rem; }}
.meta, .note {{ color: var(--muted); font-size: .9rem; margin: .1rem 0; }}
.sub {{ margin: .3rem 0; }}
ol {{ margin: .2rem 0; padding-left: 1.4rem; }}
</style></head>
<body><header><h1>{e(title)}</h1>
<p class="mode">{e(mode)}</p>
<p class="meta">{len(results)} labs · about {round(total)} minutes in all</p>{note}</header>
<main>{"".join(cards)}</main></body></html>
"""


# --------------------------------------------------------------------------------------------
# The whole site


@dataclass
class SiteResult:
    site: Path
    labs: list[LabResult]
    problems: list[str]
    warnings: list[str]
    wasm_skipped: str | None = None


def export_site(out: Path, labs: Sequence[Path], *, reveal: bool = False, offline: bool = False,
                wasm: bool = False, include_code: bool = False, jobs: int | None = None,
                timeout: float = 300.0, log=None) -> SiteResult:
    """Export ``labs`` into the site folder ``out`` (created; old lab pages are replaced)."""
    log = log or (lambda message: print(message, flush=True))
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    metas = [read_lab_meta(p) for p in labs]
    warnings = [f"{m.path.name}: {w}" for m in metas for w in m.warnings]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(metas)))

    def one(meta: LabMeta) -> LabResult:
        page = out / f"{meta.slug}.html"
        seconds, report, problems = export_lab(meta.path, page, reveal=reveal,
                                               include_code=include_code, timeout=timeout)
        log(f"  {meta.path.name}: {seconds:.1f} s, {report.size_bytes / 1024:.0f} KB, "
            f"{report.figures} figures" + (f", {len(problems)} problem(s)" if problems else ""))
        return LabResult(meta, page, seconds, report, problems)

    log(f"Exporting {len(metas)} lab(s) to {out} "
        f"({'instructor copy, --reveal' if reveal else 'student copy'}"
        f"{', offline' if offline else ''}) ...")
    results: list[LabResult] = []
    problems: list[str] = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(one, m) for m in metas]
        for meta, fut in zip(metas, futures):
            try:
                results.append(fut.result())
            except ExportError as exc:
                problems.append(str(exc))
    for r in results:
        problems.extend(r.problems)
        if reveal and r.report and r.report.closed_gates:
            where = ", ".join(c.where() for c in r.report.closed_gates[:3])
            warnings.append(f"{r.meta.path.name}: the instructor copy still shows "
                            f"{len(r.report.closed_gates)} closed gate(s): {where}")

    if offline and results:
        bundle_offline_assets(out)
        for r in results:
            page = make_page_offline(r.page.read_text(encoding="utf-8"))
            r.page.write_text(page, encoding="utf-8")
            if r.report:
                r.report.frontend_urls = len(_FRONTEND_URL_RE.findall(page))
                r.report.size_bytes = len(page.encode("utf-8"))

    wasm_dirs: dict[str, str] = {}
    wasm_skipped = None
    if wasm:
        if find_uv() is None:
            wasm_skipped = ("--wasm skipped: `uv` is not installed (marimo export html-wasm "
                            "needs it on PATH; `pip install uv` or see the uv docs), "
                            "the static pages were exported")
        else:
            for m in metas:
                target = out / "wasm" / m.slug
                try:
                    secs = export_wasm(m.path, target, timeout=max(timeout, 600.0))
                    wasm_dirs[m.slug] = f"wasm/{m.slug}"
                    log(f"  {m.path.name}: WASM in {secs:.1f} s")
                except ExportError as exc:
                    problems.append(str(exc))

    (out / "index.html").write_text(
        render_index(results, reveal=reveal, offline=offline, wasm_dirs=wasm_dirs),
        encoding="utf-8")
    return SiteResult(out, results, problems, warnings, wasm_skipped)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="labs-export",
        description="Export the Roofline Labs to a static site folder with an index page.")
    p.add_argument("-o", "--out", type=Path, default=None,
                   help="site folder (default: site/student, or site/instructor with --reveal)")
    p.add_argument("--reveal", action="store_true",
                   help="instructor copy: predictions filled with reference answers")
    p.add_argument("--offline", action="store_true",
                   help="bundle marimo's frontend next to the pages (no CDN; serve over http)")
    p.add_argument("--wasm", action="store_true",
                   help="also export browser-only interactive pages (needs uv)")
    p.add_argument("--labs-dir", type=Path, default=DEFAULT_LABS_DIR,
                   help="folder holding lab_*.py (default: the repo's labs/)")
    p.add_argument("--lab", action="append", default=[], metavar="NAME",
                   help="only labs whose file name contains NAME (repeatable)")
    p.add_argument("--with-code", action="store_true",
                   help="include the notebook code in the pages (about 150 KB more per lab)")
    p.add_argument("--jobs", type=int, default=None, help="labs exported at once (default: cores)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per lab (default 300)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = args.out or Path("site") / ("instructor" if args.reveal else "student")
    try:
        labs = discover_labs(args.labs_dir, args.lab)
    except ValueError as exc:
        print(f"labs-export: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    result = export_site(out, labs, reveal=args.reveal, offline=args.offline, wasm=args.wasm,
                         include_code=args.with_code, jobs=args.jobs, timeout=args.timeout)
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if result.wasm_skipped:
        print(result.wasm_skipped, file=sys.stderr)
    if result.problems:
        print(f"labs-export FAILED: {len(result.problems)} problem(s); do not publish "
              f"{out}:", file=sys.stderr)
        for p in result.problems:
            print(f"  - {p}", file=sys.stderr)
        return 1
    print(f"Wrote {out / 'index.html'} and {len(result.labs)} lab page(s) in "
          f"{time.perf_counter() - t0:.1f} s.")
    if args.offline:
        print(f"Serve it offline: cd {out} && python -m http.server 8000  "
              "(then open http://localhost:8000/)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
