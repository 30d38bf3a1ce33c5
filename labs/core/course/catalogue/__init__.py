"""The lab catalogue: every lab's prediction items, in lab order, read from the notebooks' source.

For each ``labs/lab_*.py`` (file-name order): its ``LAB_ID``, its title (the first argument of
``style.lab_header``; :func:`read_header` reads the whole header, which ``labs-export``'s index
page shows) and, in the order a student meets them, its prediction items: every
``quiz.numeric_form(lab, item_id, question=..., units=..., lo=..., hi=...)`` and
``quiz.choice_form(lab, item_id, question=..., options={...})`` call, with the item's kind,
question text, units and bounds or options. The grader's ``--example-config``, the course
config's checks and the instructor dashboard's item order and question text come from here, so
they follow the labs without a hand-kept list (a new lab file is picked up as it lands).

How it reads a notebook: the source is parsed (``ast``), never run or imported. A question is
often an f-string built from the lab's own constants (``f"On the {hardware.get(X).name} ..."``);
``catalogue.reader`` evaluates that small subset of Python itself: literals, f-strings,
arithmetic, comprehensions, the notebook's constants (its setup cell's, cells' and module's
top-level names) and the cell's own names, a few pure builtins, and attributes and functions of ``labs.core.physics`` (pure functions, so
reading them has no effect). Anything else (widget values, other wings, I/O) is not evaluated:
the text shows ``…`` there and the item says ``resolved=False``. Errors in a notebook never
raise here; they become :attr:`LabEntry.problems`.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import labs
from labs.core.course.catalogue.reader import (UNRESOLVED, Reader, Unresolved, assignments,
                                               cells, setup_cell, top_blocks)

__all__ = [
    "CatalogueItem", "FORMS", "LABS_DIR", "LAB_GLOB", "LabEntry", "Reader", "UNRESOLVED",
    "HEADER_ARGS", "Unresolved", "assignments", "catalogue", "cells", "item", "item_order", "items",
    "lab", "read_header", "read_lab", "setup_cell", "top_blocks"
]

#: Where the labs live: the folder of the ``labs`` package (``labs/lab_*.py``).
LABS_DIR = Path(labs.__file__).parent
LAB_GLOB = "lab_*.py"
FORMS = {"numeric_form": "numeric", "choice_form": "choice"}


@dataclass(frozen=True)
class CatalogueItem:
    """One prediction item as the lab asks it."""

    lab_id: str
    item_id: str
    kind: str  # "numeric" | "choice"
    question: str  # markdown, as the lab shows it (opening values filled in)
    position: int  # 1-based order within its lab
    line: int  # line of the form call in the notebook
    units: str = ""
    lo: float | None = None
    hi: float | None = None
    log_scale: bool = False
    options: tuple[tuple[str, Any], ...] = ()  # choice: (label, recorded value), in order
    resolved: bool = True  # False: some part could not be read from the source (shown as …)

    @property
    def text(self) -> str:
        """The question as plain text (markdown emphasis and code marks removed)."""
        return re.sub(r"\*\*|__|`", "", self.question).strip()

    def label_of(self, value: Any) -> str | None:
        """The option label a recorded choice value stands for (None if not an option)."""
        return next((label for label, v in self.options if v == value and
                     type(v) is type(value)), None)


@dataclass(frozen=True)
class LabEntry:
    """One lab file: its id, title and prediction items in order."""

    lab_id: str
    title: str
    file: str  # file name, e.g. lab_01_memory_wall.py
    items: tuple[CatalogueItem, ...]
    problems: tuple[str, ...] = ()  # what could not be read (never raised)

    @property
    def item_ids(self) -> list[str]:
        return [i.item_id for i in self.items]


def _form_calls(cell: ast.FunctionDef):
    """(kind, call) for every prediction-form call in a cell, in source order."""
    found = []
    for node in ast.walk(cell):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
            if name in FORMS:
                found.append((FORMS[name], node))
    return sorted(found, key=lambda fc: (fc[1].lineno, fc[1].col_offset))


def _kw(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _item(reader: Reader, kind: str, call: ast.Call, local, lab_id: str, position: int,
          problems: list[str]) -> CatalogueItem | None:
    where = f"line {call.lineno}"
    node = call.args[1] if len(call.args) > 1 else _kw(call, "item_id")
    try:
        item_id = reader.value(node, local) if node is not None else None
    except Unresolved:
        item_id = None
    if not isinstance(item_id, str):
        problems.append(f"{where}: the item id is not readable from the source")
        return None
    q = _kw(call, "question")
    question, ok = reader.text(q, local) if q is not None else (UNRESOLVED, False)
    fields: dict[str, Any] = {}
    if kind == "numeric":
        for key in ("units", "lo", "hi", "log_scale"):
            n = _kw(call, key)
            if n is None:
                continue
            try:
                fields[key] = reader.value(n, local)
            except Unresolved:
                ok = False
        fields["units"] = str(fields.get("units", ""))
        for key in ("lo", "hi"):
            if not isinstance(fields.get(key), (int, float)) or isinstance(fields[key], bool):
                fields.pop(key, None)
                ok = False
            else:
                fields[key] = float(fields[key])
        fields["log_scale"] = bool(fields.get("log_scale", False))
    else:
        n = _kw(call, "options")
        try:
            options = reader.value(n, local) if n is not None else None
        except Unresolved:
            options = None
        if isinstance(options, dict) and all(isinstance(k, str) for k in options):
            fields["options"] = tuple(options.items())
        else:
            ok = False
    if not ok:
        problems.append(f"{where}: part of {item_id} is not readable from the source")
    return CatalogueItem(lab_id, item_id, kind, question, position, call.lineno,
                         resolved=ok, **fields)


#: ``style.lab_header``'s positional arguments, in order (LABS_SPEC §3).
HEADER_ARGS = ("title", "subtitle", "goals", "minutes", "reading")


def _header_call(tree: ast.Module) -> tuple[ast.Call, dict[str, ast.expr]] | None:
    """The lab's first ``style.lab_header(...)`` call and its block's own names."""
    for block in ast.walk(tree):
        if not isinstance(block, (ast.FunctionDef, ast.With)):
            continue
        for node in ast.walk(block):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(
                    node.func, "id", "")) == "lab_header":
                return node, {name: value for stmt in block.body
                              for name, value in assignments(stmt)}
    return None


def read_header(tree: ast.Module, reader: Reader | None = None) -> dict[str, Any]:
    """What a lab's header says, from its source: the arguments of its ``style.lab_header(title,
    subtitle, goals=[...], minutes=N, reading=[...])`` call by :data:`HEADER_ARGS` name, those
    the catalogue's reader can read (the others are absent). A ``LAB_META = {...}`` constant's
    keys take precedence. ``css_file``: the style sheet ``marimo.App(css_file=...)`` names.
    Never raises."""
    reader = reader or Reader(tree)
    found: dict[str, Any] = {}
    header = _header_call(tree)
    if header is not None:
        call, local = header
        named = list(zip(HEADER_ARGS, call.args)) + [(k.arg, k.value) for k in call.keywords
                                                    if k.arg]
        for key, node in named:
            try:
                found[key] = reader.value(node, local)
            except Unresolved:
                found.pop(key, None)
    try:
        meta = reader.value(ast.Name("LAB_META"), {})
    except Unresolved:
        meta = None
    if isinstance(meta, dict):
        found.update({k: v for k, v in meta.items() if v is not None})
    css_file = _app_css_file(tree)
    if css_file is not None:
        found["css_file"] = css_file
    return found


def _app_css_file(tree: ast.Module) -> str | None:
    """The ``css_file`` that ``app = marimo.App(...)`` names, if a literal."""
    for node in tree.body:
        if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                and ast.unparse(node.value.func) == "marimo.App"):
            for kw in node.value.keywords:
                if kw.arg == "css_file" and isinstance(kw.value, ast.Constant):
                    return str(kw.value.value)
    return None


def read_lab(path: str | Path) -> LabEntry:
    """The catalogue entry of one lab file (never raises for a bad notebook: see ``problems``)."""
    path = Path(path)
    problems: list[str] = []
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError) as exc:
        return LabEntry(path.stem, path.stem, path.name, (), (f"cannot read: {exc}",))
    reader = Reader(tree)
    try:
        lab_id = reader.value(ast.Name("LAB_ID"), {})
    except Unresolved:
        lab_id = None
    if not isinstance(lab_id, str):
        problems.append("no LAB_ID = \"...\" constant")
        lab_id = path.stem
    header = _header_call(tree)
    title = reader.text(header[0].args[0], header[1])[0] if header and header[0].args else lab_id
    items: list[CatalogueItem] = []
    seen: set[str] = set()
    for cell in cells(tree):
        local = {name: value for stmt in cell.body for name, value in assignments(stmt)}
        for kind, call in _form_calls(cell):
            item = _item(reader, kind, call, local, lab_id, len(items) + 1, problems)
            if item is None:
                continue
            if item.item_id in seen:
                problems.append(f"line {call.lineno}: {item.item_id} has a second form")
                continue
            seen.add(item.item_id)
            items.append(item)
    # every item the lab locks must have a form the catalogue read (a new way of asking
    # a prediction would otherwise drop out of the gradebook silently)
    for item_id in _locked_items(reader, tree):
        if item_id not in seen:
            problems.append(f"{item_id} is locked (quiz.lock_state) but no prediction form "
                            "for it was read")
    return LabEntry(lab_id, title, path.name, tuple(items), tuple(problems))


def _locked_items(reader: Reader, tree: ast.Module) -> list[str]:
    out = []
    for cell in cells(tree):
        local = {name: value for stmt in cell.body for name, value in assignments(stmt)}
        for node in ast.walk(cell):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "lock_state" \
                    and len(node.args) > 1:
                try:
                    value = reader.value(node.args[1], local)
                except Unresolved:
                    continue
                if isinstance(value, str):
                    out.append(value)
    return out


_CACHE: dict[tuple, list[LabEntry]] = {}


def catalogue(folder: str | Path | None = None) -> list[LabEntry]:
    """Every ``lab_*.py`` in ``folder`` (default: the installed labs), in file-name order.

    Cached until a lab file is added, removed or changed.
    """
    folder = Path(folder) if folder is not None else LABS_DIR
    files = sorted(folder.glob(LAB_GLOB))
    key = (str(folder),) + tuple((f.name, f.stat().st_mtime_ns, f.stat().st_size)
                                 for f in files)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = [read_lab(f) for f in files]
    return list(_CACHE[key])


def lab(lab_id: str, folder: str | Path | None = None) -> LabEntry:
    """One lab's entry; KeyError naming ``lab_id`` and the known ids if there is none."""
    entries = catalogue(folder)
    for entry in entries:
        if entry.lab_id == lab_id:
            return entry
    raise KeyError(f"lab_id {lab_id!r} is not a lab in {folder or LABS_DIR}; known: "
                   f"{', '.join(e.lab_id for e in entries)}")


def items(lab_id: str | None = None, folder: str | Path | None = None) -> list[CatalogueItem]:
    """Prediction items in lab order (all labs, or one)."""
    entries = [lab(lab_id, folder)] if lab_id is not None else catalogue(folder)
    return [i for e in entries for i in e.items]


def item(item_id: str, folder: str | Path | None = None) -> CatalogueItem:
    """One item by id; KeyError naming ``item_id`` if no lab asks it."""
    for i in items(folder=folder):
        if i.item_id == item_id:
            return i
    raise KeyError(f"item_id {item_id!r} is not asked by any lab")


def item_order(folder: str | Path | None = None) -> dict[str, int]:
    """item id -> position across all labs (lab order, then the order within the lab)."""
    return {i.item_id: n for n, i in enumerate(items(folder=folder))}

