"""The lab catalogue: every lab's prediction items, in lab order, read from the notebooks' source.

For each ``labs/lab_*.py`` (file-name order): its ``LAB_ID``, its title (the first argument of
``style.lab_header``) and, in the order a student meets them, its prediction items: every
``quiz.numeric_form(lab, item_id, question=..., units=..., lo=..., hi=...)`` and
``quiz.choice_form(lab, item_id, question=..., options={...})`` call, with the item's kind,
question text, units and bounds or options. The grader's ``--example-config``, the course
config's checks and the instructor dashboard's item order and question text come from here, so
they follow the labs without a hand-kept list (a new lab file is picked up as it lands).

How it reads a notebook: the source is parsed (``ast``), never run or imported. A question is
often an f-string built from the lab's own constants (``f"On the {hardware.get(X).name} ..."``);
:class:`_Reader` evaluates that small subset of Python itself: literals, f-strings, arithmetic,
comprehensions, the notebook's module-level constants and the cell's own ``_private`` names,
a few pure builtins, and attributes and functions of ``labs.core.physics`` (pure functions, so
reading them has no effect). Anything else (widget values, other wings, I/O) is not evaluated:
the text shows ``…`` there and the item says ``resolved=False``. Errors in a notebook never
raise here; they become :attr:`LabEntry.problems`.
"""

from __future__ import annotations

import ast
import importlib
import re
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import labs

#: Where the labs live: the folder of the ``labs`` package (``labs/lab_*.py``).
LABS_DIR = Path(labs.__file__).parent
LAB_GLOB = "lab_*.py"
FORMS = {"numeric_form": "numeric", "choice_form": "choice"}
UNRESOLVED = "…"
_MAX_ITEMS = 10_000  # a comprehension or range the reader will build at most


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


class _Unresolved(Exception):
    """An expression the reader does not evaluate."""


_BUILTINS = {"dict": dict, "list": list, "tuple": tuple, "zip": zip, "len": len, "min": min,
             "max": max, "round": round, "abs": abs, "int": int, "float": float, "str": str,
             "sorted": sorted, "enumerate": enumerate, "range": range, "bool": bool, "sum": sum,
             "True": True, "False": False, "None": None}
_METHODS = {str: {"format", "upper", "lower", "title", "capitalize", "strip", "join", "replace"},
            dict: {"items", "keys", "values", "get"}, list: {"index", "count"}}
_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b,
        ast.Mult: lambda a, b: a * b, ast.Div: lambda a, b: a / b,
        ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
        ast.BitOr: lambda a, b: a | b}
_CMP = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
        ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
        ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
        ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}


def _physics_module(name: str):
    """The ``labs.core`` physics module a short name maps to, else None."""
    import labs.core

    target = labs.core.SHORT_NAMES.get(name, "")
    return importlib.import_module(target) if target.startswith("labs.core.physics.") else None


def _is_physics(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    return module.startswith("labs.core.physics")


class _Reader:
    """Evaluates the safe subset of one notebook's expressions (see the module doc)."""

    def __init__(self, tree: ast.Module):
        self.globals: dict[str, ast.expr] = {}  # notebook-level name -> its expression
        self.modules: dict[str, Any] = {}  # notebook name -> physics module
        self.cache: dict[str, Any] = {}
        self.busy: set[str] = set()
        for cell in _cells(tree):
            for node in ast.walk(cell):
                if isinstance(node, ast.ImportFrom) and node.module == "labs.core":
                    for alias in node.names:
                        module = _physics_module(alias.name)
                        if module is not None:
                            self.modules[alias.asname or alias.name] = module
            for stmt in cell.body:
                for name, value in _assignments(stmt):
                    if not name.startswith("_"):
                        self.globals.setdefault(name, value)

    def value(self, node: ast.expr, local: dict[str, ast.expr]) -> Any:
        return self._eval(node, local, {})

    def text(self, node: ast.expr, local: dict[str, ast.expr]) -> tuple[str, bool]:
        """A string expression as text, ``…`` where a part cannot be read; (text, resolved)."""
        if isinstance(node, ast.JoinedStr):
            parts, ok = [], True
            for part in node.values:
                if isinstance(part, ast.Constant):
                    parts.append(str(part.value))
                    continue
                try:
                    parts.append(self._format(part, local, {}))
                except _Unresolved:
                    parts.append(UNRESOLVED)
                    ok = False
            return "".join(parts), ok
        try:
            v = self.value(node, local)
        except _Unresolved:
            return UNRESOLVED, False
        return (v, True) if isinstance(v, str) else (UNRESOLVED, False)

    # -- evaluation ---------------------------------------------------------------------------
    def _format(self, node: ast.FormattedValue, local, scope) -> str:
        v = self._eval(node.value, local, scope)
        if node.conversion == ord("r"):
            v = repr(v)
        elif node.conversion == ord("s"):
            v = str(v)
        spec = self._eval(node.format_spec, local, scope) if node.format_spec else ""
        try:
            return format(v, spec)
        except (TypeError, ValueError) as exc:
            raise _Unresolved(str(exc)) from None

    def _name(self, name: str, local, scope) -> Any:
        if name in scope:
            return scope[name]
        if name in local:
            key = f"local:{name}"
            if key in self.busy:
                raise _Unresolved(f"{name} refers to itself")
            self.busy.add(key)
            try:
                return self._eval(local[name], local, {})
            finally:
                self.busy.discard(key)
        if name in self.modules:
            return self.modules[name]
        if name in self.globals:
            if name not in self.cache:
                if name in self.busy:
                    raise _Unresolved(f"{name} refers to itself")
                self.busy.add(name)
                try:
                    self.cache[name] = self._eval(self.globals[name], {}, {})
                finally:
                    self.busy.discard(name)
            return self.cache[name]
        if name in _BUILTINS:
            return _BUILTINS[name]
        raise _Unresolved(f"name {name}")

    def _call(self, node: ast.Call, local, scope) -> Any:
        func = self._eval(node.func, local, scope)
        allowed = isinstance(func, _Method) or _is_physics(func) or any(
            func is b for b in _BUILTINS.values())
        if not allowed or any(isinstance(a, ast.Starred) for a in node.args):
            raise _Unresolved("call")
        args = [self._eval(a, local, scope) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self._eval(kw.value, local, scope))
            else:
                kwargs[kw.arg] = self._eval(kw.value, local, scope)
        if func is range and len(range(*args)) > _MAX_ITEMS:
            raise _Unresolved("range too long")
        try:
            return func(*args, **kwargs)
        except Exception as exc:  # a physics error for these arguments: not readable here
            raise _Unresolved(str(exc)) from None

    def _comprehension(self, node, local, scope) -> list:
        """The (scope) bindings a comprehension's generators produce, in order."""
        scopes = [dict(scope)]
        for gen in node.generators:
            if gen.is_async:
                raise _Unresolved("async")
            nxt = []
            for s in scopes:
                for item in self._eval(gen.iter, local, s):
                    bound = dict(s)
                    _bind(gen.target, item, bound)
                    if all(self._eval(c, local, bound) for c in gen.ifs):
                        nxt.append(bound)
                    if len(nxt) > _MAX_ITEMS:
                        raise _Unresolved("comprehension too long")
            scopes = nxt
        return scopes

    def _eval(self, node: ast.expr, local, scope) -> Any:  # noqa: C901 (one dispatch)
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.JoinedStr):
            return "".join(str(p.value) if isinstance(p, ast.Constant)
                           else self._format(p, local, scope) for p in node.values)
        if isinstance(node, ast.Name):
            return self._name(node.id, local, scope)
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            items = [self._eval(e, local, scope) for e in node.elts]
            return {ast.List: list, ast.Tuple: tuple, ast.Set: set}[type(node)](items)
        if isinstance(node, ast.Dict):
            out = {}
            for k, v in zip(node.keys, node.values):
                if k is None:
                    out.update(self._eval(v, local, scope))
                else:
                    out[self._eval(k, local, scope)] = self._eval(v, local, scope)
            return out
        if isinstance(node, ast.Attribute):
            if node.attr.startswith("_"):
                raise _Unresolved("private attribute")
            obj = self._eval(node.value, local, scope)
            if type(obj) in _METHODS and node.attr in _METHODS[type(obj)]:
                return _Method(getattr(obj, node.attr))
            if not (_is_physics(type(obj)) or isinstance(obj, types.ModuleType)
                    and obj.__name__.startswith("labs.core.physics")):
                raise _Unresolved("attribute")
            try:
                return getattr(obj, node.attr)
            except AttributeError:
                raise _Unresolved(node.attr) from None
        if isinstance(node, ast.Subscript):
            obj, key = self._eval(node.value, local, scope), self._eval(node.slice, local, scope)
            try:
                return obj[key]
            except (KeyError, IndexError, TypeError):
                raise _Unresolved("subscript") from None
        if isinstance(node, ast.Slice):
            return slice(*(self._eval(p, local, scope) if p is not None else None
                           for p in (node.lower, node.upper, node.step)))
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, local, scope), self._eval(node.right, local, scope)
            if isinstance(node.op, ast.Pow):
                if not (isinstance(left, (int, float)) and isinstance(right, (int, float))
                        and abs(right) <= 64):
                    raise _Unresolved("power")
                return left ** right
            op = _OPS.get(type(node.op))
            if op is None:
                raise _Unresolved("operator")
            if isinstance(node.op, ast.Mult) and isinstance(left, (str, list, tuple)) \
                    or isinstance(right, (str, list, tuple)) and isinstance(node.op, ast.Mult):
                raise _Unresolved("sequence repetition")
            try:
                return op(left, right)
            except (TypeError, ValueError, ZeroDivisionError, OverflowError):
                raise _Unresolved("arithmetic") from None
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand, local, scope)
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return +v
            if isinstance(node.op, ast.Not):
                return not v
            raise _Unresolved("operator")
        if isinstance(node, ast.Compare):
            left = self._eval(node.left, local, scope)
            for op, comp in zip(node.ops, node.comparators):
                right = self._eval(comp, local, scope)
                if type(op) not in _CMP or not _CMP[type(op)](left, right):
                    return False
                left = right
            return True
        if isinstance(node, ast.BoolOp):
            values = (self._eval(v, local, scope) for v in node.values)
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.IfExp):
            test = self._eval(node.test, local, scope)
            return self._eval(node.body if test else node.orelse, local, scope)
        if isinstance(node, ast.Call):
            return self._call(node, local, scope)
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
            items = [self._eval(node.elt, local, s) for s in self._comprehension(node, local, scope)]
            return set(items) if isinstance(node, ast.SetComp) else items
        if isinstance(node, ast.DictComp):
            return {self._eval(node.key, local, s): self._eval(node.value, local, s)
                    for s in self._comprehension(node, local, scope)}
        raise _Unresolved(type(node).__name__)


class _Method:
    """A whitelisted method of a str/dict/list (see ``_METHODS``)."""

    def __init__(self, bound):
        self.bound = bound

    def __call__(self, *args, **kwargs):
        return self.bound(*args, **kwargs)


def _bind(target: ast.expr, value: Any, scope: dict) -> None:
    if isinstance(target, ast.Name):
        scope[target.id] = value
    elif isinstance(target, (ast.Tuple, ast.List)):
        values = list(value)
        if len(values) != len(target.elts):
            raise _Unresolved("unpacking")
        for t, v in zip(target.elts, values):
            _bind(t, v, scope)
    else:
        raise _Unresolved("target")


def _assignments(stmt: ast.stmt):
    """(name, expression) pairs a plain assignment statement binds (tuple targets paired up)."""
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
        yield stmt.target.id, stmt.value
    if not isinstance(stmt, ast.Assign):
        return
    for target in stmt.targets:
        if isinstance(target, ast.Name):
            yield target.id, stmt.value
        elif isinstance(target, ast.Tuple) and isinstance(stmt.value, ast.Tuple) \
                and len(target.elts) == len(stmt.value.elts):
            for t, v in zip(target.elts, stmt.value.elts):
                if isinstance(t, ast.Name):
                    yield t.id, v


def _cells(tree: ast.Module) -> list[ast.FunctionDef]:
    """The notebook's cell functions (``@app.cell``), in file order."""
    out = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and any(
                isinstance(d, (ast.Attribute, ast.Call)) and "cell" in ast.dump(d)
                for d in node.decorator_list):
            out.append(node)
    return out


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


def _item(reader: _Reader, kind: str, call: ast.Call, local, lab_id: str, position: int,
          problems: list[str]) -> CatalogueItem | None:
    where = f"line {call.lineno}"
    node = call.args[1] if len(call.args) > 1 else _kw(call, "item_id")
    try:
        item_id = reader.value(node, local) if node is not None else None
    except _Unresolved:
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
            except _Unresolved:
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
        except _Unresolved:
            options = None
        if isinstance(options, dict) and all(isinstance(k, str) for k in options):
            fields["options"] = tuple(options.items())
        else:
            ok = False
    if not ok:
        problems.append(f"{where}: part of {item_id} is not readable from the source")
    return CatalogueItem(lab_id, item_id, kind, question, position, call.lineno,
                         resolved=ok, **fields)


def read_lab(path: str | Path) -> LabEntry:
    """The catalogue entry of one lab file (never raises for a bad notebook: see ``problems``)."""
    path = Path(path)
    problems: list[str] = []
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError) as exc:
        return LabEntry(path.stem, path.stem, path.name, (), (f"cannot read: {exc}",))
    reader = _Reader(tree)
    try:
        lab_id = reader.value(ast.Name("LAB_ID"), {})
    except _Unresolved:
        lab_id = None
    if not isinstance(lab_id, str):
        problems.append("no LAB_ID = \"...\" constant")
        lab_id = path.stem
    title = lab_id
    items: list[CatalogueItem] = []
    seen: set[str] = set()
    for cell in _cells(tree):
        local = {name: value for stmt in cell.body for name, value in _assignments(stmt)}
        for node in ast.walk(cell):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "lab_header" \
                    and node.args:
                title = reader.text(node.args[0], local)[0]
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


def _locked_items(reader: _Reader, tree: ast.Module) -> list[str]:
    out = []
    for cell in _cells(tree):
        local = {name: value for stmt in cell.body for name, value in _assignments(stmt)}
        for node in ast.walk(cell):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "lock_state" \
                    and len(node.args) > 1:
                try:
                    value = reader.value(node.args[1], local)
                except _Unresolved:
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

