"""Helpers for running the lab notebooks headless in tests."""

import importlib.util
import time
from pathlib import Path

from labs.core import quiz


def load_app(path: Path, name: str):
    """The notebook's marimo App, loaded from its file under a private module name.

    Loaded once per file and test process while the file is unchanged: marimo tokenizes and
    compiles every cell (about half a second for a lab, which tests load ~150 times in a run).
    A lab defines only cells, which ``App.run`` executes afresh on every run, so the tests
    sharing an App share no state (a module's tests already share one)."""
    path = Path(path).resolve()
    stat = path.stat()
    key = (path, stat.st_mtime_ns, stat.st_size)
    if key not in _LOADED:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _LOADED[key] = module.app
    return _LOADED[key]


_LOADED: dict = {}


def choice(item: str, value) -> quiz.Prediction:
    """A locked multiple-choice prediction whose label is its value."""
    return quiz.Prediction(item, value, answer_type="choice", label=value, confidence=3,
                           reason="test")


def exported_site(tmp_path_factory):
    """The offline instructor site of every lab (``labs-export --reveal --offline``), exported
    once per test run for all workers (run_support.build_once) and shared by the lab tests'
    instructor copies and the offline browser test. ``export.export_site``'s result."""
    from run_support import build_once

    from labs.core import export

    return build_once(tmp_path_factory, "offline-site", lambda site: export.export_site(
        site, export.discover_labs(), reveal=True, offline=True, log=lambda *_: None))


def exported_lab(site, lab_file: Path):
    """``lab_file``'s result in an exported ``site``, which must have exported it without a
    problem (a problem names the lab's file)."""
    lab_file = Path(lab_file).resolve()
    mine = [p for p in site.problems if lab_file.name in p]
    result = next((r for r in site.labs if Path(r.meta.path).resolve() == lab_file), None)
    assert result is not None and not mine, "\n".join(mine) or f"{lab_file.name} was not exported"
    return result


def export_page(lab_file: Path, tmp_path_factory, *, reveal: bool = False) -> str:
    """The lab exported as ``labs-export`` does it (throwaway ledger, code left out, the page
    checked for cell errors and "output is too large"), once per test run: the student copy
    on its own, the instructor copy from :func:`exported_site`. The page's HTML."""
    from run_support import build_once

    from labs.core import export

    lab_file = Path(lab_file).resolve()
    if reveal:
        page = exported_lab(exported_site(tmp_path_factory), lab_file).page
    else:
        page, problems = build_once(tmp_path_factory, f"student-{lab_file.stem}", lambda out: (
            out / f"{lab_file.stem}.html",
            export.export_lab(lab_file, out / f"{lab_file.stem}.html", reveal=False)[2]))
        assert not problems, problems
    html = page.read_text(encoding="utf-8")
    assert "Traceback" not in html
    return html


def visible_text(obj) -> str:
    """Visible text of a marimo output: tags stripped, entities decoded, and the content that
    nested components (stacks, callouts, accordions) keep in escaped ``data-*`` attributes
    (a widget's ``data-element-id``, which follows its cell's position, left out)."""
    import html
    import json
    import re

    parts = []

    def pull(markup: str) -> None:
        for m in re.finditer(r"data-([\w-]+)='([^']*)'", markup):
            if m.group(1) == "element-id":  # marimo's widget id (from its cell id): not shown
                continue
            inner = html.unescape(m.group(2))
            try:
                inner = json.loads(inner)
            except ValueError:
                pass
            if isinstance(inner, str):
                pull(inner)
            elif isinstance(inner, list):
                for item in inner:
                    pull(str(item))
        parts.append(html.unescape(re.sub(r"<[^>]+>", " ", markup)))

    pull(getattr(obj, "text", None) or str(obj))
    return re.sub(r"\s+", " ", " ".join(parts))


def cells_that_only_show(app, widget: str) -> list[str]:
    """The code of every cell, other than the one that makes ``widget``, that names it without
    reading anything from it (``widget.value`` and the like): a cell that only shows a widget.
    marimo re-runs every cell that names a widget on each of its steps, so a layout
    of widgets is built where they are made and shown by a cell that names none of them."""
    import ast

    app._maybe_initialize()
    graph = app._graph
    makers = set(graph.definitions.get(widget, ()))
    found = []
    for cid, cell in graph.cells.items():
        if cid in makers or widget not in cell.refs:
            continue
        read = any(isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
                   and n.value.id == widget for n in ast.walk(ast.parse(cell.code)))
        if not read:
            found.append(cell.code)
    return found


def cell_cpu_seconds(cell, kw: dict) -> float:
    """One run of ``cell`` with inputs ``kw``, in CPU seconds of this process (every thread):
    what the recompute costs, which the other jobs of a shared machine change far less than
    its wall-clock time."""
    start = time.process_time()
    cell.run(**kw)
    return time.process_time() - start
