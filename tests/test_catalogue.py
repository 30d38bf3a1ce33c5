"""The lab catalogue: read from the notebooks' source, equal to what the labs really ask."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from labs.core import catalogue, quiz
from notebook_support import load_app

LAB_FILES = sorted(catalogue.LABS_DIR.glob(catalogue.LAB_GLOB))


def test_every_lab_file_is_catalogued_in_file_order():
    entries = catalogue.catalogue()
    assert [e.file for e in entries] == [f.name for f in LAB_FILES]
    for entry, path in zip(entries, LAB_FILES):
        source = path.read_text(encoding="utf-8")
        assert re.search(rf'LAB_ID = "{re.escape(entry.lab_id)}"', source), entry
        assert entry.items, f"{entry.file}: no prediction items"
        assert entry.problems == (), entry.problems
        assert all(i.resolved and catalogue.UNRESOLVED not in i.question for i in entry.items)
        assert all(i.item_id.startswith(entry.lab_id + ".") for i in entry.items)
        assert [i.position for i in entry.items] == list(range(1, len(entry.items) + 1))


@pytest.mark.parametrize("path", LAB_FILES, ids=lambda p: p.stem)
def test_catalogue_equals_what_the_lab_shows(path, env):
    """Run the lab headless (gates closed) and compare every prediction form it builds with the
    catalogue: item id, order, question text (with the opening values filled in), kind, units,
    bounds and options. Holds for any lab, including ones added later."""
    _, defs = load_app(path, f"catalogue_{path.stem}").run()
    forms = sorted((v for v in defs.values()
                    if isinstance(v, quiz.PredictionForm) and v.question),
                   key=lambda f: catalogue.item(f.item_id).position)
    entry = catalogue.lab(defs["LAB_ID"])
    assert [f.item_id for f in forms] == entry.item_ids
    for form, item in zip(forms, entry.items):
        h = form.handler
        assert form.question == item.question
        assert (h.answer_type, h.units) == (item.kind, item.units)
        if item.kind == "numeric":
            assert (h.lo, h.hi, h.steps is not None) == (item.lo, item.hi, item.log_scale)
        else:
            assert list(h.options.items()) == list(item.options)


def _write(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


LAB_X = '''
import marimo
app = marimo.App()

@app.cell
def _():
    from labs.core import hardware as H, quiz, style
    LAB_ID = "labx"
    REF = {"hw": "h100-sxm", "n": 2 ** 10}
    SIZES = [16, 32]
    OPTS = {f"{b} x {b}": b for b in SIZES} | {"none": None}
    return

@app.cell
def _(style):
    style.lab_header(f"Lab X · {REF['n']:,}", "s", goals=[], minutes=1, reading=[])
    return

@app.cell
def _(H, lab, quiz, slider):
    _hw = H.get(REF["hw"])
    _gb = _hw.memory_nominal
    first = quiz.numeric_form(lab, "labx.first", question=f"**On the {_hw.name}** ({_gb:g} GiB), "
                              f"N = {REF['n']}?", units="GB/s", lo=1, hi=1e4, log_scale=True,
                              locked=None, on_lock=None)
    second = quiz.choice_form(lab, LAB_ID + ".second", question=f"Now {slider.value}?",
                              options=OPTS, locked=None, on_lock=None)
    third = quiz.choice_form(lab, "labx.third", question="Which?", options=open("x").read(),
                             locked=None, on_lock=None)
    get_fourth = quiz.lock_state(lab, "labx.fourth")
    return
'''


def test_reads_constants_fstrings_comprehensions_and_physics(tmp_path):
    path = _write(tmp_path, "lab_09_x.py", LAB_X)
    entry = catalogue.read_lab(path)
    assert (entry.lab_id, entry.title) == ("labx", "Lab X · 1,024")
    first, second, third = entry.items
    assert first.question == "**On the NVIDIA H100 SXM5** (80 GiB), N = 1024?"
    assert first.text == "On the NVIDIA H100 SXM5 (80 GiB), N = 1024?"
    assert (first.kind, first.units, first.lo, first.hi, first.log_scale, first.resolved) == \
        ("numeric", "GB/s", 1.0, 1e4, True, True)
    # a widget value is not read: shown as … and the item says so; options still read
    assert second.item_id == "labx.second" and second.question == f"Now {catalogue.UNRESOLVED}?"
    assert not second.resolved
    assert second.options == (("16 x 16", 16), ("32 x 32", 32), ("none", None))
    assert second.label_of(32) == "32 x 32" and second.label_of("32") is None
    # I/O is never evaluated: the options stay unknown
    assert third.options == () and not third.resolved
    problems = " ".join(entry.problems)
    assert "labx.fourth is locked" in problems and "labx.third" in problems
    assert not (tmp_path / "x").exists()


def test_reads_the_setup_cell_where_a_lab_keeps_its_constants(tmp_path):
    """A lab's imports, LAB_ID and constants live in ``with app.setup:`` (LABS_SPEC §4.1): the
    catalogue reads them there as it reads a cell's, and no other ``with`` block."""
    setup = LAB_X.replace("@app.cell\ndef _():\n    from", "with app.setup:\n    from", 1)
    setup = setup.replace("    return\n\n@app.cell\ndef _(style)", "\n@app.cell\ndef _(style)", 1)
    assert "with app.setup:" in setup and setup.count("def _(") == 2
    entry = catalogue.read_lab(_write(tmp_path, "lab_09_x.py", setup))
    assert (entry.lab_id, entry.title) == ("labx", "Lab X · 1,024")
    assert entry.items[0].question == "**On the NVIDIA H100 SXM5** (80 GiB), N = 1024?"
    assert entry.items[0].resolved
    other = setup.replace("with app.setup:", "with open('x') as f:", 1)
    assert "no LAB_ID" in " ".join(catalogue.read_lab(_write(tmp_path, "lab_09_x.py",
                                                             other)).problems)


@pytest.mark.parametrize("body, problem", [
    ("def broken(:\n", "cannot read"),
    ("import marimo\napp = marimo.App()\n", "no LAB_ID"),
])
def test_a_broken_notebook_is_a_problem_not_a_crash(tmp_path, body, problem):
    entry = catalogue.read_lab(_write(tmp_path, "lab_01_a.py", body))
    assert entry.items == () and problem in " ".join(entry.problems)


def test_a_new_lab_file_is_picked_up_and_ordered(tmp_path):
    _write(tmp_path, "lab_10_y.py", LAB_X.replace('"labx', '"laby'))
    assert [e.lab_id for e in catalogue.catalogue(tmp_path)] == ["laby"]
    _write(tmp_path, "lab_09_x.py", LAB_X)
    assert [e.lab_id for e in catalogue.catalogue(tmp_path)] == ["labx", "laby"]
    order = catalogue.item_order(tmp_path)
    assert order["labx.first"] < order["labx.second"] < order["laby.first"]
    with pytest.raises(KeyError, match="labz.*known: labx, laby"):
        catalogue.lab("labz", tmp_path)
    with pytest.raises(KeyError, match="nope"):
        catalogue.item("nope", tmp_path)
