"""labs.core's architecture, checked from the source: four wings and the directions they import.

The rule (also in labs/core/__init__.py and LABS_SPEC §1):
- physics imports nothing else of labs.core, and never marimo or plotly;
- ui may import physics;
- measure may import physics; its notebook face ``measure/live.py`` may also import ui;
  nothing else in measure imports marimo;
- course may import physics and ui, never measure.
Every module is found by walking the package, so a new module is checked without being listed.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

import labs.core

CORE = Path(labs.core.__file__).parent
WINGS = ("physics", "ui", "measure", "course")
ALLOWED = {
    "physics": set(),
    "ui": {"physics"},
    "measure": {"physics"},
    "course": {"physics", "ui"},
}
#: Modules that may import one wing more than their own wing's rule (the notebook face of a wing).
NOTEBOOK_FACES = {"labs.core.measure.live": {"ui"},
                  # labs-profile writes the operator roofline as HTML: the CLI face of measure
                  "labs.core.measure.profile.cli": {"ui"}}
#: Third-party packages a wing must not import (physics stays importable without them).
FORBIDDEN_PACKAGES = {"physics": {"marimo", "plotly", "torch"}, "measure": {"marimo", "plotly"}}
MAX_LINES = 500
#: The phrase a module's docstring uses to claim the exemption from MAX_LINES, followed by why
#: ("The module is kept as one piece (past 500 lines): ..."). Exact, so that a docstring that
#: merely talks about pieces ("each function states one piece of the lab") claims nothing.
ONE_PIECE = "kept as one piece"


def _modules():
    for path in sorted(CORE.rglob("*.py")):
        rel = path.relative_to(CORE.parent.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def _imports(path: Path) -> list[tuple[str, int]]:
    """Every module name an import statement in ``path`` names, at any depth (lazy ones too)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, node.lineno))
            found += [(f"{node.module}.{a.name}", node.lineno) for a in node.names]
    return found


def _wing_of(module: str) -> str | None:
    """The wing a ``labs.core...`` module name belongs to (short names resolved through the map)."""
    parts = module.split(".")
    if parts[:2] != ["labs", "core"] or len(parts) < 3:
        return None
    if parts[2] in WINGS:
        return parts[2]
    target = labs.core.SHORT_NAMES.get(parts[2])
    return target.split(".")[2] if target else None


def test_every_module_sits_in_a_wing():
    loose = [name for name, path in _modules()
             if name.count(".") == 2 and name not in {f"labs.core.{w}" for w in WINGS}]
    assert loose == [], f"modules outside the four wings: {loose}"


@pytest.mark.parametrize("name,path", list(_modules()), ids=lambda v: str(v))
def test_imports_follow_the_wing_directions(name, path):
    wing = _wing_of(name)
    if wing is None:  # labs.core itself: the short-name map, which imports lazily
        return
    allowed = ALLOWED[wing] | NOTEBOOK_FACES.get(name, set()) | {wing}
    bad = []
    for imported, line in _imports(path):
        target = _wing_of(imported)
        if target is not None and target not in allowed:
            bad.append(f"line {line}: {imported} ({target})")
        top = imported.split(".")[0]
        if top in FORBIDDEN_PACKAGES.get(wing, set()) and name not in NOTEBOOK_FACES:
            bad.append(f"line {line}: {imported} (the {wing} wing never imports {top})")
    assert bad == [], f"{name} may import {sorted(allowed)} only:\n" + "\n".join(bad)


def test_short_names_resolve_and_point_into_the_wings():
    for short, target in labs.core.SHORT_NAMES.items():
        assert _wing_of(target) in WINGS, (short, target)
        module = importlib.import_module(target)
        assert getattr(labs.core, short) is module


def test_unknown_short_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_module"):
        labs.core.no_such_module  # noqa: B018


@pytest.mark.parametrize("name,path", list(_modules()), ids=lambda v: str(v))
def test_modules_are_readable_in_one_sitting(name, path):
    """No module over ~500 lines, unless its docstring says it is kept as one piece
    (:data:`ONE_PIECE`, line breaks aside) and why. Its ``__all__`` is not counted: an index of
    names is looked up, not read through."""
    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    index = sum(node.end_lineno - node.lineno + 1 for node in tree.body
                if isinstance(node, ast.Assign)
                and any(getattr(t, "id", None) == "__all__" for t in node.targets))
    lines = text.count("\n") - index
    doc = " ".join((ast.get_docstring(tree) or "").split())
    claims = ONE_PIECE in doc and f"not {ONE_PIECE}" not in doc
    if lines > MAX_LINES:
        assert claims, (f"{name} has {lines} lines (> {MAX_LINES}); split it by "
                        f"responsibility or say in its docstring that it is {ONE_PIECE!r} and why")
    else:  # an exemption a module no longer needs is slack: the next 500 lines would pass
        assert not claims, f"{name} ({lines} lines) fits: drop {ONE_PIECE!r} from its docstring"


def test_physics_imports_without_marimo_or_plotly():
    """The physics wing is usable on its own (a script, a grader, a browser build)."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['marimo'] = None; sys.modules['plotly'] = None\n"
            "from labs.core import hardware, formulas, roofline, models, precision, fusion, "
            "precision_study, units\n"
            "print(roofline.ridge_point(hardware.get('h100-sxm'), 'bf16'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr


# --- moved from tests/test_physics_review.py (filed by the module they test) ---------
def test_core_cites_no_file_outside_the_repository():
    """(The physics review: TOPS on int8 hover text; docstrings cite public
    sources.)"""
    from pathlib import Path

    import labs.core

    files = list(Path(labs.core.__file__).parent.rglob("*.py"))
    assert len(files) > 20
    for f in files:
        assert "shared/reference" not in f.read_text(encoding="utf-8"), f


# --- wings in rooms, and no import cycles -------------------------------------------



def _core_graph() -> dict[str, set[str]]:
    """module -> the labs.core modules it imports (lazy imports too), names resolved to modules."""
    modules = dict(_modules())
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for imported, _line in _imports(path):
            parts = imported.split(".")
            if parts[:2] != ["labs", "core"]:
                continue
            if len(parts) >= 3 and parts[2] in labs.core.SHORT_NAMES and parts[2] not in WINGS:
                parts = labs.core.SHORT_NAMES[parts[2]].split(".") + parts[3:]
            # the longest prefix that is a module (``from pkg import name`` names a module or not)
            for cut in range(len(parts), 2, -1):
                target = ".".join(parts[:cut])
                if target in modules:
                    if target != name:
                        graph[name].add(target)
                    break
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _is_face_of(package: str, module: str) -> bool:
    """A package's ``__init__`` re-exports its own modules: that edge is not a cycle of rooms."""
    return module.startswith(package + ".")


def test_no_module_imports_one_that_imports_it_back():
    """No import cycle between modules of labs.core, lazy imports included (LABS_SPEC §1). A
    package face importing its own modules is the one expected direction and is left out."""
    graph = {m: {t for t in ts if not _is_face_of(m, t) and not _is_face_of(t, m)}
             for m, ts in _core_graph().items()}
    assert _cycles(graph) == []


#: Wings split into rooms (subpackages), each with a docstring map in its ``__init__``.
ROOMED_WINGS = ("physics", "course", "measure", "ui")
#: Flat prefix families a wing keeps, with the reason (checked to still exist, so none is slack).
PREFIX_FAMILIES_KEPT = {
    # ``precision`` is the table of number formats every lab reads; ``precision_study`` is Lab 3's
    # physics built on it (how AI, the ridge and rho move with the format). A ``precision/``
    # room would file every lab's format lookup under one lab's study, and the labs, docs and
    # graded references name both modules by these short names.
    ("physics", "precision"): "the format table and Lab 3's study of it",
}


def _room(module: str, wing: str = "course") -> str | None:
    parts = module.split(".")
    if parts[:3] != ["labs", "core", wing] or len(parts) < 4:
        return None
    return parts[3]


@pytest.mark.parametrize("wing", ROOMED_WINGS)
def test_rooms_import_downward_only(wing):
    """A wing's rooms (subpackages and loose modules) form no cycle: a room imports no room that
    imports it back (LABS_SPEC §1 draws the directions)."""
    rooms: dict[str, set[str]] = {}
    for module, targets in _core_graph().items():
        src = _room(module, wing)
        if src is None:
            continue
        for target in targets:
            dst = _room(target, wing)
            if dst is not None and dst != src:
                rooms.setdefault(src, set()).add(dst)
    assert _cycles(rooms) == [], rooms


def _course_room_table() -> dict[str, set[str]]:
    """The course wing's map (``labs/core/course/__init__.py``): room -> the rooms its last
    column says it imports, rows in the table's order."""
    import labs.core.course as course

    lines = course.__doc__.splitlines()
    rules = [i for i, line in enumerate(lines) if line.startswith("=====")]
    last_column = lines[rules[0]].rindex(" ") + 1
    table: dict[str, set[str]] = {}
    room = None
    for line in lines[rules[1] + 1:rules[2]]:
        if line.startswith("``"):
            room = line.split("``")[1]
            table[room] = set()
        cell = line[last_column:].strip()
        if room and cell and cell != "(none)":
            table[room] |= {name.strip() for name in cell.split(",") if name.strip()}
    return table


def test_the_course_map_lists_what_each_room_imports_in_order():
    """The course wing's table is true: each room imports exactly the rooms its row names, and
    only rooms above it (read a room's row and you know what it may touch)."""
    table = _course_room_table()
    actual: dict[str, set[str]] = {}
    for module, targets in _core_graph().items():
        src = _room(module, "course")
        if src is not None:
            actual.setdefault(src, set()).update(
                d for d in (_room(t, "course") for t in targets) if d and d != src)
    assert set(table) == set(actual), ("rooms missing from the map or gone from the code: "
                                       f"{sorted(set(table) ^ set(actual))}")
    wrong = {room: (sorted(table[room]), sorted(actual[room])) for room in table
             if table[room] != actual[room]}
    assert not wrong, f"room: (the map says, the code imports): {wrong}"
    order = list(table)
    upward = [(room, dep) for room in order for dep in table[room]
              if order.index(dep) > order.index(room)]
    assert not upward, f"a room imports one below it in the map: {upward}"


def test_a_private_module_is_imported_only_inside_its_wing():
    """A module whose name starts with an underscore (``physics._measured``,
    ``hierarchy._levels``) is its wing's own: another wing imports its public face instead,
    by any import form (``from``, ``import ... as``)."""
    bad = []
    for name, path in _modules():
        wing = _wing_of(name)
        for imported, line in _imports(path):
            parts = imported.split(".")
            private = [p for p in parts[3:] if p.startswith("_") and not p.startswith("__")]
            if parts[:2] == ["labs", "core"] and private and _wing_of(imported) != wing:
                bad.append(f"{name} line {line}: {imported}")
    assert bad == [], bad


def test_only_the_labs_import_the_lessons():
    """A lesson module is one lab's prose (LABS_SPEC §1): no module of labs.core imports one,
    so a lab's text never becomes another room's dependency."""
    bad = [f"{name} line {line}: {imported}" for name, path in _modules()
           if not name.startswith("labs.core.course.lessons")
           for imported, line in _imports(path) if imported.startswith("labs.core.course.lessons")]
    assert bad == [], bad


@pytest.mark.parametrize("wing", ROOMED_WINGS)
def test_wings_have_rooms_not_prefix_families(wing):
    """Modules of one concern live in a folder, not in a flat family of ``prefix_*.py`` files
    (a private module's leading underscore is not a prefix: ``_measured``); the
    families a wing keeps are listed with their reason in :data:`PREFIX_FAMILIES_KEPT`."""
    folder = CORE / wing
    flat = [p.stem.lstrip("_") for p in folder.glob("*.py") if p.stem != "__init__"]
    prefixes = [name.split("_")[0] for name in flat if "_" in name]
    families = sorted({p for p in prefixes if prefixes.count(p) + flat.count(p) > 1})
    kept = sorted(prefix for w, prefix in PREFIX_FAMILIES_KEPT if w == wing)
    assert [f for f in kept if f not in families] == [], "a kept family is gone: drop it"
    families = [f for f in families if f not in kept]
    assert families == [], f"flat prefix families in labs/core/{wing}/: {families}; move each into a subpackage"
    for room in [p for p in folder.iterdir() if p.is_dir() and (p / "__init__.py").exists()]:
        doc = ast.get_docstring(ast.parse((room / "__init__.py").read_text(encoding="utf-8"))) or ""
        assert doc.strip(), f"{wing}/{room.name}/__init__.py needs a docstring map of the room"
        stale = [p.stem for p in room.glob("*.py") if p.stem.startswith(room.name + "_")]
        assert stale == [], f"{wing}/{room.name}/ repeats its name as a prefix: {stale}"


def test_every_notebook_names_the_labs_style_sheet_beside_it():
    # the sheet makes the forms' messages readable in both themes (tests/browser/
    # test_inputs_browser.py measures it); the launcher and the WebAssembly export take it
    # along with a lab (export.index.LAB_STYLE_SHEET)
    from labs.core import catalogue
    from labs.core.course.export.index import DEFAULT_LABS_DIR, LAB_STYLE_SHEET

    notebooks = [p for p in sorted(DEFAULT_LABS_DIR.glob("*.py"))
                 if "marimo.App(" in p.read_text(encoding="utf-8")]  # labs, dashboard, gallery
    assert len(notebooks) >= 9
    for notebook in notebooks:
        tree = ast.parse(notebook.read_text(encoding="utf-8"))
        assert catalogue.read_header(tree).get("css_file") == LAB_STYLE_SHEET, notebook.name
    assert ".text-error" in (DEFAULT_LABS_DIR / LAB_STYLE_SHEET).read_text(encoding="utf-8")


# --- no tracker numbers: a reader has no tracker to look them up in -----------------------------

REPO = CORE.parent.parent
#: A tracker number: "issue", "review", "pull request" or "ticket" (or their plurals), perhaps
#: "item", "finding" or "point", then a number, perhaps after "#" or a letter ("T-4", "F8");
#: "PR" then a number, perhaps after "#"; or a bare "#" then one to five digits (not part of a
#: word or a path).
TRACKER_REFERENCE = re.compile(
    r"(?i:\b(?:issues?|reviews?|pull requests?|tickets?)(?: (?:findings?|items?|points?))?)"
    r" ?#?(?:[A-Z]-?)?\d+"
    r"|\bPRs? ?#?\d+"
    r"|(?<![\w&#/])#\d{1,5}(?![\w-])")
#: A colour literal is no tracker number: "#000" or "#999" right after a colon or a quote
#: (CSS ``color:#000``, a string ``"#999"``); six and eight digits are past the bare form anyway.
COLOUR_LITERAL = re.compile(r"""[:"']#(?:\d{3}|\d{4})$""")
#: An issue in a named public repository ("NVIDIA/nccl issue 812", "nccl-tests issue 119") is a
#: citation a reader can follow, not a tracker number; a line break or a string's quotes may
#: stand between the repository and the word "issue".
PUBLIC_REPOSITORY = re.compile(r"(?:[\w.-]+/[\w.-]+|\bnccl|\bnccl-tests)$")


def tracker_references(text: str) -> list[str]:
    """The project-tracker references in ``text``, each with its line number."""
    found = []
    for match in TRACKER_REFERENCE.finditer(text):
        if COLOUR_LITERAL.search(text[max(0, match.start() - 1):match.end()]):
            continue
        before = text[max(0, match.start() - 80):match.start()].rstrip(" \t\n#:\"'")
        if PUBLIC_REPOSITORY.search(before):
            continue
        found.append(f"line {text.count(chr(10), 0, match.start()) + 1}: {match.group(0)}")
    return found


def _sources_a_reader_reads() -> list[Path]:
    files = [p for top in ("labs", "tests", "benchmarks") for p in (REPO / top).rglob("*.py")]
    files += list((REPO / "docs").rglob("*.md"))
    return sorted(files + [REPO / "LABS_SPEC.md", REPO / "README.md"])


def test_tracker_reference_finder_tells_a_tracker_from_a_citation():
    number = "1" + "5"  # built, so that this file holds no reference itself
    for text in (f"re-runs no cell (issue {number})", f"Issue {number}, the review, item 3",
                 f"(never typed, review T-{number})", f"review finding {number}",
                 f"issues {number} and 17 found", f"issue #{number}", f"fixed in #{number}",
                 f"(#{number})", f"PR {number}", f"PR #{number}", f"PRs {number} and 16",
                 f"pull request {number}", f"ticket {number}", f"# see #{number}"):
        assert tracker_references(text), text
    for text in (f"NVIDIA/nccl issue {number}", f"nccl-tests issue {number}",
                 f'"(NVIDIA/nccl "\n    "issue {number})"', f"#:  NVIDIA/nccl-tests\n#: issue {number}",
                 f"the issue's {number} examples", f"a review of {number} labs", "issued 3 ids",
                 f"pytorch/ao PR {number}", f"NVIDIA/nccl#{number}", 'style="color:#000"',
                 '"#999"', "#72232d on #191111", '"#000000"', "a PRNG 3 draws", "SPR 4",
                 f"lab_{number}#{number}", f"docs/x.md#{number}"):
        assert not tracker_references(text), text


def test_no_code_doc_or_test_cites_a_tracker_number():
    """Code, tests and docs state the rule itself (or a LABS_SPEC § reference), never a tracker
    number a reader cannot look up."""
    bad = {str(p.relative_to(REPO)): refs for p in _sources_a_reader_reads()
           if (refs := tracker_references(p.read_text(encoding="utf-8")))}
    assert bad == {}, "state the rule instead of the tracker number:\n" + "\n".join(
        f"{path}: {', '.join(refs)}" for path, refs in bad.items())


# --- each module under one name -----------------------------------------------------------------

#: Aliases every reader knows (a leading underscore may keep one private: ``_np``).
WELL_KNOWN_ALIASES = {"numpy": "np", "pandas": "pd", "marimo": "mo", "matplotlib.pyplot": "plt",
                      "plotly.graph_objects": "go", "plotly.express": "px", "plotly.io": "pio",
                      "hypothesis.strategies": "st", "torch.nn.functional": "F",
                      "torch.distributed": "dist", "tomli": "tomllib",
                      # numpy imported on first use: it reads as numpy
                      "labs.core.physics.deferred.numpy": "np"}


def _is_labs_module(name: str) -> bool:
    parts = name.split(".")
    if parts[:2] == ["labs", "core"] and len(parts) >= 3 and parts[2] in labs.core.SHORT_NAMES:
        parts = labs.core.SHORT_NAMES[parts[2]].split(".") + parts[3:]
    path = REPO.joinpath(*parts)
    return parts[0] == "labs" and (path.with_suffix(".py").exists() or (path / "__init__.py").exists())


def module_aliases(path: Path) -> list[tuple[int, str, str, bool]]:
    """(line, dotted name, alias, whether it is a module) for each import in ``path`` that binds
    a module, or a name of a labs module, under another name. A ``from`` import names a module
    when it names a labs module (third-party names are not looked up: ``from types import
    SimpleNamespace as NS`` is outside the labs' vocabulary and left alone; ``from hypothesis
    import strategies as st`` counts as a module through :data:`WELL_KNOWN_ALIASES`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name, a.asname, True) for a in node.names
                      if a.asname and a.asname != a.name]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                dotted = f"{node.module}.{a.name}"
                if not a.asname or a.asname == a.name:
                    continue
                if _is_labs_module(dotted) or dotted in WELL_KNOWN_ALIASES:
                    found.append((node.lineno, dotted, a.asname, True))
                elif node.module.split(".")[0] == "labs":
                    found.append((node.lineno, dotted, a.asname, False))
    return sorted(found)


def alias_reads_as_the_module(module: str, alias: str, is_module: bool = True) -> bool:
    """The rule: less one leading underscore (a binding private to the importing file, such as
    ``_units`` or ``_ledger``, still reads as the module), the alias is

    - the module's own last name (``roofline``);
    - or that name after the name of a package it sits in, to say whose it is
      (``ledger_store`` for ``course.ledger.store``, ``profile_cli``, ``marimo_md``);
    - or the alias every reader knows for it (``np``, ``mo``, ``go``: :data:`WELL_KNOWN_ALIASES`).

    A name (not a module) imported from a labs module keeps its own name, perhaps with a
    leading underscore (``_non_negative``): never ``format_value as fmt``. Any other prefix
    (``my_units``), an abbreviation (``R``, ``_fmt``, ``_m``) or a second name is a nickname."""
    bare = alias[1:] if alias.startswith("_") and not alias.startswith("__") else alias
    parts = module.split(".")
    own = parts[-1]
    if not is_module:
        return bare == own
    packages = {p.lstrip("_") for p in parts[:-1]} - {""}
    return (bare == own
            or any(bare == f"{package}_{own}" for package in packages)
            or WELL_KNOWN_ALIASES.get(module) == bare)


def test_alias_rule_tells_a_name_from_a_nickname():
    assert alias_reads_as_the_module("labs.core.roofline", "roofline")
    assert alias_reads_as_the_module("labs.core.course.ledger", "_ledger")
    assert alias_reads_as_the_module("labs.core.course.ledger.store", "ledger_store")
    assert alias_reads_as_the_module("labs.core.course.ledger.events", "_ledger_events")
    assert alias_reads_as_the_module("numpy", "np")
    assert alias_reads_as_the_module("labs.core.physics.deferred.numpy", "_np")
    assert alias_reads_as_the_module("labs.core.physics.validate.non_negative", "_non_negative",
                                     is_module=False)
    for module, alias in [("labs.core.roofline", "R"), ("labs.core.physics.precision", "_fmt"),
                          ("labs.core.physics.models", "_m"), ("labs.core.measure", "_m"),
                          ("labs.core.ui.style", "st"), ("datetime", "dt"),
                          ("labs.core.physics.units", "my_units"),
                          ("labs.core.physics.units", "__units"),
                          ("labs.core.course.ledger.store", "shop_store")]:
        assert not alias_reads_as_the_module(module, alias), (module, alias)
    for name, alias in [("labs.core.physics.units.format_value", "fmt"),
                        ("labs.core.physics._measured.MATMUL_MEASURED", "_MEASURED"),
                        ("labs.core.physics.units.format_value", "units_format_value")]:
        assert not alias_reads_as_the_module(name, alias, is_module=False), (name, alias)


def test_alias_finder_sees_modules_and_labs_names(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import labs.core.physics.units as u\n"
                      "from labs.core.physics import roofline as R\n"
                      "from labs.core.physics.units import format_value as fmt\n"
                      "from types import SimpleNamespace as NS\n"
                      "from hypothesis import strategies as st\n", encoding="utf-8")
    assert module_aliases(sample) == [
        (1, "labs.core.physics.units", "u", True), (2, "labs.core.physics.roofline", "R", True),
        (3, "labs.core.physics.units.format_value", "fmt", False),
        (5, "hypothesis.strategies", "st", True)]


def test_every_module_is_imported_under_its_own_name():
    """No one-letter or cryptic module aliases (``R``, ``_fmt``, ``_m``), no labs name imported
    under a second name: a reader meets each module, and each name of the labs, under one name
    everywhere (the rule: :func:`alias_reads_as_the_module`)."""
    files = [p for top in ("labs", "tests", "benchmarks") for p in (REPO / top).rglob("*.py")]
    bad = [f"{p.relative_to(REPO)}:{line}: {module} as {alias}" for p in sorted(files)
           for line, module, alias, is_module in module_aliases(p)
           if not alias_reads_as_the_module(module, alias, is_module)]
    assert bad == [], "import each module under its own name:\n" + "\n".join(bad)


# --- one privacy convention: a name another module uses is public --------------------------------


def private_imports(path: Path) -> list[tuple[int, str]]:
    """(line, ``module.name``) for each ``from labs... import _name`` in ``path``. A private module
    may hold public names (``from labs.core.physics._measured import EAGER_KERNEL_US``), as sklearn's
    ``_ridge.py`` does; what crosses a module boundary never starts with an underscore."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "labs":
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names
                      if a.name.startswith("_") and not a.name.startswith("__")]
    return found


def test_private_import_finder_sees_names_and_modules(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("from labs.core.ui.figures.base import LEGEND, _hidden\n"
                      "from labs.core.physics import _measured\n"
                      "from labs.core.physics._measured import EAGER_KERNEL_US\n", encoding="utf-8")
    assert [name for _line, name in private_imports(sample)] == [
        "labs.core.ui.figures.base._hidden", "labs.core.physics._measured"]


def test_no_module_imports_another_modules_private_name():
    """Names used across modules are public (httpx's convention): no ``from labs... import _x``
    in the labs, their core, the tests or the benchmarks."""
    files = [p for top in ("labs", "tests", "benchmarks") for p in (REPO / top).rglob("*.py")]
    bad = [f"{p.relative_to(REPO)}:{line}: {name}" for p in sorted(files)
           for line, name in private_imports(p)]
    assert bad == [], "make the name public (drop its underscore) or the module private:\n" + "\n".join(bad)


def labs_module_names(tree: ast.Module) -> dict[str, str]:
    """{name: labs module} for each name an import in ``tree`` binds to a labs module or package:
    ``import labs.core.physics.roofline`` binds ``labs``; ``from labs.core import roofline`` and
    ``from labs.core.physics import units as _units`` bind the last name (or the alias)."""
    bound = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split(".")[0] == "labs":
                    bound[a.asname or "labs"] = a.name if a.asname else "labs"
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                if _is_labs_module(f"{node.module}.{a.name}"):
                    bound[a.asname or a.name] = f"{node.module}.{a.name}"
    return bound


def private_attribute_uses(path: Path) -> list[tuple[int, str]]:
    """(line, ``name._x``) for each private attribute read through a name bound to a labs module:
    ``roofline._ai`` after ``from labs.core import roofline``, ``labs.core.physics.roofline._ai``
    after ``import labs.core.physics.roofline``. The same boundary as ``from ... import _x``,
    crossed the other way."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    modules = labs_module_names(tree)
    found = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and node.attr.startswith("_")
                and not node.attr.startswith("__")):
            continue
        chain, root = [node.attr], node.value
        while isinstance(root, ast.Attribute):
            chain.insert(0, root.attr)
            root = root.value
        if isinstance(root, ast.Name) and root.id in modules:
            found.append((node.lineno, ".".join([root.id, *chain])))
    return sorted(found)


def test_private_attribute_finder_sees_each_way_a_module_is_bound(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text("import labs.core.physics.roofline\n"
                      "import labs.core.physics.units as units\n"
                      "from labs.core import hardware\n"
                      "from labs.core.physics import collectives as _collectives\n"
                      "from labs.core.physics.roofline import Derating\n"
                      "import numpy\n"
                      "labs.core.physics.roofline._ai(1)\n"
                      "units._scale(1)\n"
                      "hardware._REGISTRY\n"
                      "_collectives._op('all-reduce')\n"
                      "Derating._fields, numpy._core, hardware.get, self._x, hardware.__name__\n",
                      encoding="utf-8")
    assert [name for _line, name in private_attribute_uses(sample)] == [
        "labs.core.physics.roofline._ai", "units._scale", "hardware._REGISTRY",
        "_collectives._op"]


def test_no_module_reads_another_modules_private_attribute():
    """``module._x`` on an imported labs module crosses the module boundary as ``from module
    import _x`` does (httpx's convention, LABS_SPEC §1): in the labs, their core and the
    benchmarks, a name read from another module is public. Tests are exempt (they may check
    any module's internals: its constants, its helpers), which no reader of the labs meets."""
    files = [p for top in ("labs", "benchmarks") for p in (REPO / top).rglob("*.py")]
    bad = [f"{p.relative_to(REPO)}:{line}: {name}" for p in sorted(files)
           for line, name in private_attribute_uses(p)]
    assert bad == [], ("make the name public under a name that says what it is, and add it to "
                       "the module's __all__:\n" + "\n".join(bad))


def test_package_faces_export_no_private_names():
    """A package's ``__init__`` re-exports public names only."""
    for face in sorted(CORE.rglob("__init__.py")):
        module = ".".join(face.relative_to(REPO).parent.parts)
        package = importlib.import_module(module)
        exported = getattr(package, "__all__", [])
        assert [n for n in exported if n.startswith("_")] == [], module
        assert private_imports(face) == [], module




@pytest.mark.parametrize("name,path", list(_modules()), ids=lambda v: str(v))
def test_every_core_module_says_what_it_exports(name, path):
    """Every module of labs.core has an ``__all__`` of public names it really defines."""
    module = importlib.import_module(name)
    exported = getattr(module, "__all__", None)
    assert exported is not None, f"{name} has no __all__"
    assert [n for n in exported if n.startswith("_")] == [], name
    assert [n for n in exported if not hasattr(module, n)] == [], name


# --- the notebook budget: a lab reads as a story ---------------------------------------------
LABS = sorted((REPO / "labs").glob("lab_*.py"))
#: A cell at most this long (decorator to last line): one screen, one idea.
MAX_CELL_LINES = 60
#: A lab at most this long after its setup cell, every line counted: cells, ``@app.function``
#: blocks, blank lines (marimo's largest example app is ~870 lines).
MAX_LAB_LINES = 1_200
#: The setup cell at most this long (the longest today, Lab 1's, is 105 lines): imports, LAB_ID,
#: the scenario and opening values, so that it cannot absorb what belongs in cells.
MAX_SETUP_LINES = 110
#: Exceptions, held at their size so that they cannot grow: none today. A cell goes here only
#: when it is one expression that splitting would break (found by a phrase of it); a lab only
#: while its prose builders and figure wiring are on their way to labs.core.
LONG_CELLS: dict[tuple[str, str], int] = {}
LONG_LABS: dict[str, int] = {}


def _is_app_block(node: ast.stmt) -> bool:
    """A top-level block marimo runs: a function or class decorated by ``app.<anything>``,
    called or not (``@app.cell``, ``@app.cell(hide_code=True)``, ``@app.function``,
    ``@app.class_definition``), async or not."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return False
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                and target.value.id == "app":
            return True
    return False


def _lab_blocks(path: Path):
    """(lines, setup cell, blocks): the blocks are every top-level block marimo runs
    (:func:`_is_app_block`), in file order; each is held to the same cap."""
    from labs.core.course.catalogue import setup_cell

    text = path.read_text(encoding="utf-8")
    tree = ast.parse(text)
    blocks = [node for node in tree.body if _is_app_block(node)]
    return text.splitlines(), setup_cell(tree), blocks


def test_every_kind_of_block_counts(tmp_path):
    """A block marimo runs is counted whatever its decorator: a hidden cell, an async cell, a
    called @app.function and an @app.class_definition are held like any cell."""
    body = "\n".join(f"    x{i} = {i}" for i in range(3))
    source = "\n\n".join([
        "import marimo", "app = marimo.App()", "with app.setup:\n    LAB_ID = 'lab99'",
        f"@app.cell(hide_code=True)\ndef _():\n{body}\n    return",
        f"@app.cell\nasync def _():\n{body}\n    return",
        f"@app.function(hide_code=True)\ndef helper():\n{body}\n    return 1",
        f"@app.class_definition\nclass Thing:\n{body}",
        "def plain():\n    return 0"])
    lab = tmp_path / "lab_99_probe.py"
    lab.write_text(source, encoding="utf-8")
    _, setup, blocks = _lab_blocks(lab)
    assert setup is not None
    assert [type(b).__name__ for b in blocks] == ["FunctionDef", "AsyncFunctionDef",
                                                  "FunctionDef", "ClassDef"]


def _block_start(block) -> int:
    return min([d.lineno for d in block.decorator_list] + [block.lineno])


def names_bound_by(statements: list[ast.stmt]) -> set[str]:
    """The global names ``statements`` bind: assignments (unpacking too), imports, ``def`` and
    ``class``, loop and ``with`` targets, inside ``if``/``try``/``for``; not the names local to a
    function, class or comprehension defined there."""
    bound: set[str] = set()

    def visit(node):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
            return
        if isinstance(node, (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp)):
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name.split(".")[0]) for a in node.names if a.name != "*")
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.NamedExpr):
            bound.add(node.target.id)
        for child in ast.iter_child_nodes(node):
            visit(child)

    for statement in statements:
        visit(statement)
    return bound


def test_setup_names_finder_sees_every_binding():
    tree = ast.parse("import marimo as mo\nimport labs.core.physics.units\n"
                     "from labs.core import quiz, roofline as _roofline\n"
                     "LAB_ID, (A, B) = 'lab', (1, 2)\nC: int = 3\nD += 1\n"
                     "for E in []: pass\nwith open('x') as F: pass\n"
                     "try:\n    import tomllib\nexcept ImportError:\n    tomllib = None\n"
                     "def helper(local):\n    inner = 1\nclass Scenario: field = 1\n"
                     "SQUARES = [x * x for x in range(3)]\n")
    assert names_bound_by(tree.body) == {
        "mo", "labs", "quiz", "_roofline", "LAB_ID", "A", "B", "C", "D", "E", "F", "tomllib",
        "helper", "Scenario", "SQUARES"}


@pytest.mark.parametrize("path", LABS, ids=lambda p: p.stem)
def test_every_lab_starts_with_its_setup_cell(path):
    """Imports, LAB_ID and constants live in ``with app.setup:`` (LABS_SPEC §4.1), before
    every cell and ``@app.function``, so no cell lists any name the setup cell binds as a
    parameter."""
    lines, setup, blocks = _lab_blocks(path)
    assert setup is not None, f"{path.name}: no `with app.setup:` cell"
    assert blocks and setup.lineno < _block_start(blocks[0]), (
        f"{path.name}: the setup cell comes before every cell and @app.function")
    bound = names_bound_by(setup.body)
    assert "LAB_ID" in bound, f"{path.name}: LAB_ID belongs in the setup cell"
    taken = sorted({f"line {c.lineno}: {a.arg}" for c in blocks if not isinstance(c, ast.ClassDef)
                    for a in c.args.args + c.args.kwonlyargs if a.arg in bound})
    assert taken == [], (f"{path.name}: cells take names the setup cell binds as parameters "
                         "(they are globals; `marimo check --fix` drops them): " + ", ".join(taken))


@pytest.mark.parametrize("path", LABS, ids=lambda p: p.stem)
def test_notebook_budget_cells_and_lab_length(path):
    """Every line after the setup cell counts toward the lab's budget (the setup cell comes
    before every block: test_every_lab_starts_with_its_setup_cell), an ``@app.function`` is held
    to a cell's cap, and the setup cell to its own, so that moving code into either dodges
    nothing."""
    lines, setup, cells = _lab_blocks(path)
    setup_length = setup.end_lineno - setup.lineno + 1
    assert setup_length <= MAX_SETUP_LINES, (
        f"{path.name}: a setup cell of {setup_length} lines (at most {MAX_SETUP_LINES}): it holds "
        "imports, LAB_ID, the scenario and opening values; the rest goes to cells or labs.core")
    after_setup = len(lines) - setup.end_lineno
    cap = LONG_LABS.get(path.name, MAX_LAB_LINES)
    assert after_setup <= cap, (
        f"{path.name} is {after_setup} lines after its setup cell; the budget is "
        f"{MAX_LAB_LINES}" + (f" (held at its size today, {cap})" if cap > MAX_LAB_LINES else ""))
    for cell in cells:
        start = _block_start(cell)
        length = cell.end_lineno - start + 1
        text = "\n".join(lines[start - 1:cell.end_lineno])
        allowed = max([n for (name, phrase), n in LONG_CELLS.items()
                       if name == path.name and phrase in text] + [MAX_CELL_LINES])
        assert length <= allowed, (f"{path.name} line {cell.lineno}: a cell of {length} lines "
                                   f"(at most {allowed}): move narration to its own markdown "
                                   "cell, physics to labs.core")


def test_held_labs_and_cells_are_still_over_the_budget():
    """An exception is removed once its lab or cell fits: it must not sit there as slack."""
    for name, cap in LONG_LABS.items():
        lines, setup, _ = _lab_blocks(REPO / "labs" / name)
        assert len(lines) - setup.end_lineno > MAX_LAB_LINES, f"{name} fits: drop it"
    for (name, phrase), cap in LONG_CELLS.items():
        lines, _, cells = _lab_blocks(REPO / "labs" / name)
        found = [c for c in cells if phrase in "\n".join(lines[c.lineno - 1:c.end_lineno])]
        assert found and any(c.end_lineno - c.lineno + 2 > MAX_CELL_LINES for c in found), (
            f"{name}: the cell with {phrase!r} fits (or is gone): drop it")
