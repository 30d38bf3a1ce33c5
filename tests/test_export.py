"""labs-export: metadata from lab sources, page checks, offline rewriting, and real exports of
tiny fixture notebooks (student copy, --reveal, a broken lab that must fail loudly).

The real labs are exported in tests/browser/test_offline_export.py (and by each lab's tests).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest
from isolation_support import in_ci

from labs.core import export

# A miniature lab: header, a gate that only --reveal opens, a figure behind the gate.
GOOD_LAB = '''
import marimo

app = marimo.App()


@app.cell
def _():
    import os
    import marimo as mo
    import plotly.graph_objects as go
    from labs.core import style
    return go, mo, os, style


@app.cell
def _(style):
    style.lab_header("Fixture lab", "A tiny lab for the export tests.",
                     goals=["See a gate", "See a figure"], minutes=5, reading=[])
    return


@app.cell
def _(mo, os):
    # What the export must guarantee: a throwaway ledger, never the instructor's own.
    prediction = "reference" if "reveal" in mo.cli_args() else None
    mo.plain_text(f"LEDGER {os.environ.get('ROOFLINE_LEDGER_DIR')} "
                  f"{os.environ.get('ROOFLINE_STUDENT_ID')} REVEAL "
                  f"{os.environ.get('ROOFLINE_REVEAL')}")
    return (prediction,)


@app.cell
def _(go, mo, prediction, style):
    mo.stop(prediction is None, style.gate_notice("Lock your prediction to see the figure."))
    go.Figure(go.Scatter(x=[1, 2, 3], y=[1, 4, 9], name="instrument"))
    return
'''

# Its own output limit, in its PEP 723 header: a script's settings override the user's marimo
# config and MARIMO_OUTPUT_MAX_BYTES alike, so the "too large" cell is too large everywhere.
BROKEN_LAB = '''
# /// script
# [tool.marimo.runtime]
# output_max_bytes = 2000
# ///
import marimo

app = marimo.App()


@app.cell
def _():
    import marimo as mo
    return (mo,)


@app.cell
def _(mo):
    mo.md("# Broken fixture")
    return


@app.cell
def _():
    ratio = 1 / 0
    return


@app.cell
def _(mo):
    mo.md("x" * 5000)
    return
'''


def write_lab(folder: Path, name: str, source: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return path


# --- metadata ---------------------------------------------------------------------------------


def test_meta_from_literal_header_call(tmp_path):
    lab = write_lab(tmp_path, "lab_09_x.py", GOOD_LAB)
    meta = export.read_lab_meta(lab)
    assert (meta.title, meta.subtitle, meta.goals, meta.minutes) == (
        "Fixture lab", "A tiny lab for the export tests.", ["See a gate", "See a figure"], 5)
    assert meta.warnings == [] and meta.slug == "lab_09_x"


def test_meta_resolves_names_and_lab_meta_wins(tmp_path):
    src = '''
    GOALS = ["one", "two"]
    TITLE = "From a name"
    def _(style):
        style.lab_header(TITLE, "sub", goals=GOALS, minutes=30, reading=[])
    '''
    meta = export.read_lab_meta(write_lab(tmp_path, "lab_10_names.py", src))
    assert (meta.title, meta.goals, meta.minutes) == ("From a name", ["one", "two"], 30)
    src_meta = textwrap.dedent(src) + 'LAB_META = {"title": "Meta title", "minutes": 20}\n'
    meta = export.read_lab_meta(write_lab(tmp_path, "lab_11_meta.py", src_meta))
    assert (meta.title, meta.minutes, meta.goals) == ("Meta title", 20, ["one", "two"])


def test_meta_and_catalogue_read_one_header_from_the_setup_cell(tmp_path):
    """The index page and the catalogue read a lab's header with one reader: constants of the
    setup cell and an f-string of them give the same title in both."""
    from labs.core.course import catalogue

    src = '''
    import marimo
    app = marimo.App()

    with app.setup:
        LAB_ID = "labz"
        N = 2 ** 10
        GOALS = ["one", "two"]

    @app.cell
    def _(style):
        style.lab_header(f"Lab Z · {N:,}", "sub", goals=GOALS, minutes=N // 32, reading=[])
        return
    '''
    path = write_lab(tmp_path, "lab_13_setup.py", src)
    meta = export.read_lab_meta(path)
    assert (meta.title, meta.goals, meta.minutes, meta.warnings) == (
        "Lab Z · 1,024", ["one", "two"], 32, [])
    assert catalogue.read_lab(path).title == meta.title


def test_meta_missing_pieces_are_warnings_not_crashes(tmp_path):
    meta = export.read_lab_meta(write_lab(tmp_path, "lab_12_bare.py", "x = compute()\n"))
    assert meta.title == "lab 12 bare" and meta.goals == [] and meta.minutes is None
    assert len(meta.warnings) == 3 and any("minutes" in w for w in meta.warnings)


def test_discover_labs_globs_and_filters(tmp_path):
    for name in ("lab_02_b.py", "lab_01_a.py", "gallery.py", "lab_notes.txt"):
        write_lab(tmp_path, name, "")
    assert [p.name for p in export.discover_labs(tmp_path)] == ["lab_01_a.py", "lab_02_b.py"]
    assert [p.name for p in export.discover_labs(tmp_path, ["02"])] == ["lab_02_b.py"]
    with pytest.raises(ValueError, match="no lab_"):
        export.discover_labs(tmp_path, ["nope"])
    with pytest.raises(ValueError, match="labs_dir"):
        export.discover_labs(tmp_path / "missing")


def test_real_labs_have_machine_readable_header():
    """Every lab states title, goals and minutes in its style.lab_header(...) call."""
    labs = sorted((export.DEFAULT_LABS_DIR).glob(export.LAB_GLOB))
    if not labs:
        pytest.skip("no labs yet")
    for lab in labs:
        meta = export.read_lab_meta(lab)
        assert meta.warnings == [], f"{lab.name}: {meta.warnings}"
        assert meta.goals and 10 <= meta.minutes <= 90


def test_the_index_page_escapes_what_the_labs_say_and_names_its_copy(tmp_path):
    """A lab's title, subtitle and goals (and a WASM folder) go into the index as text: a
    title with markup shows as written, it never runs."""
    from labs.core.course.export.index import LabMeta
    from labs.core.course.export.lab import LabResult

    meta = LabMeta(tmp_path / "lab_01_x.py", title="<script>alert(1)</script> & co",
                   subtitle="a <b>bold</b> claim", goals=["<img src=x onerror=alert(2)>"],
                   minutes=30)
    labs = [LabResult(meta, tmp_path / "lab_01_x.html", 1.0)]
    page = export.render_index(labs, reveal=False, offline=False,
                               wasm_dirs={"lab_01_x": 'wasm/"><script>'})
    assert "<script>" not in page and "<img" not in page and "<b>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; co" in page
    assert "&lt;img src=x onerror=alert(2)&gt;" in page and "a &lt;b&gt;bold" in page
    assert 'href="wasm/&quot;&gt;&lt;script&gt;/index.html"' in page
    assert "<title>Roofline Labs · student copy</title>" in page and "Student copy:" in page
    teacher = export.render_index(labs, reveal=True, offline=False)
    assert "<title>Roofline Labs · instructor copy</title>" in teacher
    assert "Instructor copy:" in teacher and "Student copy" not in teacher


# --- the export command and the page check, without marimo -----------------------------------


def test_the_export_command_asks_for_reveal_and_code_only_when_told(tmp_path, monkeypatch):
    """The student copy: no --reveal, no code; the instructor copy: -- --reveal (the CLI
    argument the labs read), code only when asked."""
    import subprocess

    seen = []

    def run(cmd, **kwargs):
        seen.append(cmd)
        raise subprocess.TimeoutExpired(cmd, 1)  # stop before a page is read

    monkeypatch.setattr(subprocess, "run", run)
    for reveal, code in ((False, False), (True, True)):
        with pytest.raises(export.ExportError, match="did not finish"):
            export.export_lab(tmp_path / "lab_01_x.py", tmp_path / "x.html", reveal=reveal,
                              include_code=code, timeout=1)
    student, teacher = seen
    assert "--reveal" not in student and "--no-include-code" in student
    assert teacher[-2:] == ["--", "--reveal"] and "--no-include-code" not in teacher


def _page(cells: list[dict]) -> str:
    """A minimal page as ``marimo export html`` writes it: the mount config's notebook (code)
    and session (outputs), each key on its own line."""
    import json

    notebook = {"cells": [{"id": c["id"], "code": c["code"], "name": "_"} for c in cells]}
    session = {"cells": [{"id": c["id"], "outputs": c["outputs"], "console": []}
                         for c in cells]}
    return ("<html><script>window.__MARIMO_MOUNT_CONFIG__ = {\n"
            f' "notebook": {json.dumps(notebook)},\n "session": {json.dumps(session)}\n'
            "}</script></html>")


def test_the_page_check_reports_a_cell_that_raised_not_a_gated_one():
    """Below a closed gate marimo records 'ancestor-stopped': not a failure. A cell that raised
    is, named by its position and first line; so is marimo's too-large placeholder."""
    page = _page([
        {"id": "a", "code": "mo.stop(p is None, gate)",
         "outputs": [{"type": "data", "data": {"text/html": export.GATE_TEXT}}]},
        {"id": "b", "code": "y = x * 2",
         "outputs": [{"type": "error", "ename": "ancestor-stopped", "msg": "stopped"}]},
        {"id": "c", "code": "ratio = 1 / 0",
         "outputs": [{"type": "error", "ename": "exception", "evalue": "division by zero"}]},
        {"id": "d", "code": "big",
         "outputs": [{"type": "data", "data": {"text/html": "Output is too large"}}]},
        {"id": "e", "code": "fig", "outputs": [
            {"type": "data", "data": {"text/html": "<marimo-plotly></marimo-plotly>"}}]},
    ])
    report = export.inspect_page(page)
    assert [c.index for c in report.errors] == [3]
    assert [c.index for c in report.closed_gates] == [1]
    assert [c.index for c in report.too_large] == [4] and report.figures == 1
    problems = report.problems("lab_01_x.py")
    assert problems[0] == ("lab_01_x.py: cell 3 (`ratio = 1 / 0`) raised an error "
                           "(exception): division by zero")
    assert len(problems) == 2 and "cell 4 (`big`)" in problems[1]


def test_closed_gates_are_warned_about_in_the_instructor_copy_only(tmp_path, monkeypatch):
    """A closed gate is what a student copy should show; in the instructor copy it means a
    reference answer is missing."""
    from labs.core.course.export import site

    gate = export.CellReport(4, "d", "_", "mo.stop(p is None)", [], "", 10, False, True, 0)

    def exported(path, page, **kwargs):
        page.write_text("page")
        return 1.0, export.PageReport([gate], 4, 0), []

    monkeypatch.setattr(site, "export_lab", exported)
    lab = write_lab(tmp_path / "labs", "lab_09_x.py", GOOD_LAB)
    teacher = export.export_site(tmp_path / "t", [lab], reveal=True, log=lambda *_: None)
    assert teacher.warnings == ["lab_09_x.py: the instructor copy still shows 1 closed "
                                "gate(s): cell 4 (`mo.stop(p is None)`)"]
    student = export.export_site(tmp_path / "s", [lab], reveal=False, log=lambda *_: None)
    assert student.warnings == [] and student.problems == []


# --- offline rewriting ------------------------------------------------------------------------


def test_make_page_offline_rewrites_every_frontend_url():
    cdn = "https://cdn.example.org/npm/@marimo-team/frontend@0.25.2/dist"
    page = (f'<html><head><link href="{cdn}/favicon.ico"><script src="{cdn}/assets/i.js">'
            f"</script></head><body>import('{cdn}/assets/x.js')</body></html>")
    out = export.make_page_offline(page)
    assert "@marimo-team/frontend@" not in out
    assert out.count("./_marimo/assets/") == 2 and "./_marimo/favicon.ico" in out
    assert 'location.protocol === "file:"' in out and "http.server" in out


def test_bundle_offline_assets_copies_frontend_and_drops_mathjax_cdn(tmp_path):
    target = export.bundle_offline_assets(tmp_path)
    assert target == tmp_path / "_marimo" and (target / "assets").is_dir()
    assert not (target / "index.html").exists()
    assert not list(target.rglob("*.md"))  # marimo's notes for coding assistants stay out
    src = export.marimo_static_dir() / "assets"
    assert len(list((target / "assets").iterdir())) == len(list(src.iterdir()))
    rewritten = 0
    for js in (target / "assets").glob("*.js"):
        text = js.read_text(encoding="utf-8", errors="surrogateescape")
        assert "mathjax-full@" not in text
        for url in re.findall(r"[\"'`](\./[^\"'`]*mathjax[^\"'`]*)[\"'`]", text):
            # loaded as a <script src> by pages at the site's root: it must be there (no 404)
            assert (tmp_path / url).is_file(), f"{js.name} loads {url}, which is not bundled"
            rewritten += 1
    assert rewritten >= 1


def assert_only_needed_files(folder: Path, pages: list[Path]) -> None:
    """Every file under ``folder`` is named by one of ``pages`` or by another file there (its
    name, possibly URL-encoded, appears in it), and marimo's notes for coding assistants and
    other Markdown never ship."""
    from urllib.parse import quote

    files = [p for p in folder.rglob("*") if p.is_file()]
    assert not [p for p in files if p.suffix == ".md"], "a Markdown file was published"
    texts = [p.read_text(encoding="utf-8", errors="replace") for p in pages]
    texts += [p.read_text(encoding="utf-8", errors="replace") for p in files
              if p.suffix in (".js", ".css", ".json", ".html", ".webmanifest")]
    blob = "\n".join(texts)
    for p in files:
        if p in pages:
            continue
        spellings = {p.name, quote(p.name), quote(quote(p.name))}
        assert any(s in blob for s in spellings), f"{p.relative_to(folder)} is not needed"


def test_needed_files_follows_names_and_prunes_the_rest(tmp_path):
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text('<link href="./favicon.ico"><script src="./assets/a.js">')
    (tmp_path / "assets" / "a.js").write_text("import('./b-x1.js'); fetch('../public/w%252Bx.whl')")
    (tmp_path / "assets" / "b-x1.js").write_text("url(c.woff2)")
    (tmp_path / "public").mkdir()
    for name in ("favicon.ico", "assets/c.woff2", "public/w+x.whl", "CLAUDE.md",
                 "assets/unused.js", "site.webmanifest"):
        (tmp_path / name).write_bytes(b"x")
    keep = export.needed_files(tmp_path, [tmp_path / "index.html"])
    removed = export.prune_to(tmp_path, keep)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in removed) == [
        "CLAUDE.md", "assets/unused.js", "site.webmanifest"]
    assert_only_needed_files(tmp_path, [tmp_path / "index.html"])


def test_gate_text_is_what_style_shows():
    from labs.core import style

    assert export.GATE_TEXT in style.gate_notice("Lock it.").text


def test_export_env_uses_throwaway_ledger_and_drops_reveal(monkeypatch, tmp_path):
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    monkeypatch.setenv("ROOFLINE_LEDGER_DIR", "/home/teacher/ledgers")
    env = export.export_env(tmp_path, reveal=True)
    assert env["ROOFLINE_LEDGER_DIR"] == str(tmp_path) and env["ROOFLINE_STUDENT_ID"] == "export"
    assert "ROOFLINE_REVEAL" not in env  # the instructor copy is switched by `-- --reveal`
    # a student copy says "no answers" outright, whatever the instructor's shell says
    assert export.export_env(tmp_path, reveal=False)["ROOFLINE_REVEAL"] == "0"


# --- real exports of the fixtures (subprocess marimo export) ----------------------------------


@pytest.fixture(scope="module")
def fixture_labs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("labs")
    write_lab(folder, "lab_90_fixture.py", GOOD_LAB)
    return folder


def test_wasm_without_uv_says_so_and_exits_non_zero(fixture_labs, tmp_path, monkeypatch,
                                                    capsys):
    """Asked for --wasm without uv: a message, a failing exit status, and no half-built site."""
    monkeypatch.setattr("labs.core.course.export.wasm.find_uv", lambda: None)
    site = tmp_path / "site"
    rc = export.main(["-o", str(site), "--labs-dir", str(fixture_labs), "--wasm"])
    err = capsys.readouterr().err
    assert rc != 0
    assert "--wasm needs `uv`" in err and "pip install uv" in err and "Nothing was exported" in err
    assert not site.exists() or not any(site.iterdir())


@pytest.mark.slow
def test_student_copy_offline(fixture_labs, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")  # must not leak into the student copy
    site = tmp_path / "site"
    rc = export.main(["-o", str(site), "--labs-dir", str(fixture_labs), "--offline"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "http.server" in out
    page = (site / "lab_90_fixture.html").read_text(encoding="utf-8")
    report = export.inspect_page(page, export.lab_cell_code(fixture_labs / "lab_90_fixture.py"))
    assert report.frontend_urls == 0 and report.errors == [] and report.figures == 0
    assert [c.index for c in report.closed_gates] == [4]
    assert report.closed_gates[0].where().startswith("cell 4 (`mo.stop(prediction is None")
    assert re.search(r"LEDGER \S*roofline-export-ledger-\S* export REVEAL 0\b", page)
    index = (site / "index.html").read_text(encoding="utf-8")
    assert "Fixture lab" in index and "See a figure" in index and "about 5 min" in index
    assert 'href="lab_90_fixture.html"' in index and "Student copy" in index
    assert (site / "_marimo" / "assets").is_dir() and not (site / "wasm").exists()
    assert "import plotly.graph_objects" not in page  # code left out by default
    assert (site / ".nojekyll").exists()  # GitHub Pages would skip _marimo/ without it
    assert_only_needed_files(site / "_marimo", list(site.glob("*.html")))


@pytest.mark.slow
def test_instructor_copy_opens_gates_via_cli_args(fixture_labs, tmp_path):
    site = tmp_path / "instructor"
    result = export.export_site(site, export.discover_labs(fixture_labs), reveal=True,
                                log=lambda *_: None)
    assert result.problems == [] and result.warnings == []
    (r,) = result.labs
    assert r.report.figures == 1 and r.report.closed_gates == []
    assert r.report.frontend_urls > 100  # not --offline: the CDN pages marimo writes
    assert "Instructor copy" in (site / "index.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_broken_lab_fails_loudly_naming_lab_and_cells(tmp_path, monkeypatch, capsys):
    labs = tmp_path / "labs"
    write_lab(labs, "lab_91_broken.py", BROKEN_LAB)
    monkeypatch.setenv("MARIMO_OUTPUT_MAX_BYTES", "8000000")  # what a user's config may say
    rc = export.main(["-o", str(tmp_path / "site"), "--labs-dir", str(labs)])
    err = capsys.readouterr().err
    assert rc == 1 and "labs-export FAILED: 2 problem(s)" in err
    assert "lab_91_broken.py: cell 3 (`ratio = 1 / 0`) raised an error (exception): " \
           "division by zero" in err
    assert "lab_91_broken.py: cell 4 (`mo.md(\"x\" * 5000)`) output was replaced by marimo's " \
           "'output is too large' placeholder" in err


def test_inspect_page_rejects_non_marimo_html():
    with pytest.raises(export.ExportError, match="mount config"):
        export.inspect_page("<html><body>hello</body></html>")


def test_main_reports_missing_labs(tmp_path, capsys):
    assert export.main(["--labs-dir", str(tmp_path)]) == 2
    assert "no lab_*.py notebooks" in capsys.readouterr().err


@pytest.mark.slow
def test_wasm_export_bundles_the_labs_package(fixture_labs, tmp_path):
    """Needs uv (the test extra installs it; and, once, network for marimo to fetch ruff):
    skipped without uv outside CI, a failure in CI."""
    if export.find_uv() is None:
        if in_ci():
            pytest.fail("uv is not installed, yet the test extra installs it (pip install -e "
                        "'.[test]')", pytrace=False)
        pytest.skip("uv is not installed (pip install uv)")
    pkg = tmp_path / "labs"
    (pkg / "core" / "ui").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    # The real layout in miniature: a lazy short-name map and a wing.
    (pkg / "core" / "__init__.py").write_text(
        "import importlib\n"
        "SHORT_NAMES = {'style': 'labs.core.ui.style', 'tokens': 'labs.core.ui.tokens',\n"
        "               'unused': 'labs.core.ui.unused'}\n"
        "def __getattr__(name):\n"
        "    return importlib.import_module(SHORT_NAMES[name])\n")
    (pkg / "core" / "ui" / "__init__.py").write_text("")
    (pkg / "core" / "ui" / "style.py").write_text("from labs.core.ui import tokens\n")
    (pkg / "core" / "ui" / "tokens.py").write_text("X = 1\n")
    (pkg / "core" / "ui" / "unused.py").write_text("Y = 2\n")
    lab = write_lab(pkg, "lab_92_wasm.py", GOOD_LAB)
    try:
        export.export_wasm(lab, tmp_path / "wasm")
    except export.ExportError as exc:
        if "Failed to run uv" in str(exc) or "ruff" in str(exc).lower():
            pytest.skip(f"uv could not fetch ruff here: {str(exc).splitlines()[0]}")
        raise
    files = export.bundled_wasm_files(tmp_path / "wasm")
    assert {"labs/__init__.py", "labs/core/__init__.py", "labs/core/ui/style.py",
            "labs/core/ui/tokens.py"} <= files
    assert "labs/core/ui/unused.py" not in files  # only what the lab imports
    assert (tmp_path / "wasm" / "index.html").exists()
    # only what the page needs: nothing else from marimo's package folder
    assert_only_needed_files(tmp_path / "wasm", [tmp_path / "wasm" / "index.html"])
    assert (tmp_path / "wasm" / "assets").is_dir() and list((tmp_path / "wasm").rglob("*.whl"))


def test_wasm_staging_names_every_short_import_by_its_real_module():
    """The html-wasm bundle follows import statements, so each staged lab must name real files."""
    import ast
    import labs.core

    root = Path(labs.core.__file__).parent.parent.parent
    for lab in sorted((root / "labs").glob("lab_*.py")):
        staged = export.resolve_short_imports(lab.read_text(), labs.core.SHORT_NAMES)
        for node in ast.walk(ast.parse(staged)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("labs.core"):
                for alias in node.names:
                    mod = root.joinpath(*node.module.split("."), alias.name)
                    assert mod.with_suffix(".py").exists() or (mod / "__init__.py").exists(), \
                        f"{lab.name}: {node.module}.{alias.name} is not a module file"


def test_a_lab_staged_for_webassembly_keeps_its_style_sheet_beside_it(tmp_path):
    # the lab names css_file="labs.css", resolved from the lab's own folder (without uv too)
    from labs.core.course.export.index import DEFAULT_LABS_DIR, LAB_STYLE_SHEET
    from labs.core.course.export.wasm import stage_for_wasm

    lab = sorted(DEFAULT_LABS_DIR.glob("lab_*.py"))[0]
    staged = stage_for_wasm(lab, tmp_path)
    assert staged.parent == tmp_path
    assert (tmp_path / LAB_STYLE_SHEET).read_bytes() == (
        DEFAULT_LABS_DIR / LAB_STYLE_SHEET).read_bytes()


def test_a_lab_whose_style_sheet_is_missing_is_warned_about(tmp_path):
    # marimo would only log it and draw the page without the sheet: the export says so
    from labs.core.course.export.index import DEFAULT_LABS_DIR, LAB_STYLE_SHEET

    lab = tmp_path / "lab_01_copy.py"
    lab.write_bytes(sorted(DEFAULT_LABS_DIR.glob("lab_*.py"))[0].read_bytes())
    (warning,) = [w for w in export.read_lab_meta(lab).warnings if LAB_STYLE_SHEET in w]
    assert "not beside it" in warning
    (tmp_path / LAB_STYLE_SHEET).write_text("/* the sheet */\n")
    assert not [w for w in export.read_lab_meta(lab).warnings if LAB_STYLE_SHEET in w]


@pytest.mark.slow
def test_every_offline_page_carries_the_labs_style_sheet(tmp_path_factory):
    # marimo inlines the sheet each lab names (css_file): a page without it draws the forms'
    # messages at marimo's 1.8:1 in the dark theme
    from notebook_support import exported_site

    rule = ".text-error.text-error"
    assert rule in (Path(__file__).resolve().parents[1] / "labs" / "labs.css").read_text(
        encoding="utf-8")
    site = exported_site(tmp_path_factory)
    missing = [r.page.name for r in site.labs if rule not in r.page.read_text(encoding="utf-8")]
    assert site.labs and not missing, missing
