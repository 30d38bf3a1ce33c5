"""Reads the values a lab's prediction forms are built from, out of the notebook's source.

The safe subset of Python the catalogue evaluates itself (see :mod:`labs.core.course.catalogue`):
literals, f-strings, arithmetic, comparisons, comprehensions, the notebook's constants (its setup
cell's, cells' and module's top-level names) and a cell's own names, a few pure builtins and methods of
str/dict/list, and attributes and functions of ``labs.core.physics`` (pure, so reading them has
no effect). Anything else raises :class:`Unresolved`; nothing of the notebook is run or
imported. Part of :mod:`labs.core.course.catalogue` (import it through that name).
"""

from __future__ import annotations

import ast
import importlib
import types
from typing import Any

__all__ = ["Reader", "UNRESOLVED", "Unresolved", "assignments", "cells", "setup_cell",
           "top_blocks"]

UNRESOLVED = "…"  # what a question shows where a value cannot be read
_MAX_ITEMS = 10_000  # a comprehension or range the reader will build at most


class Unresolved(Exception):
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


class Reader:
    """Evaluates the safe subset of one notebook's expressions (see the module doc)."""

    def __init__(self, tree: ast.Module):
        self.globals: dict[str, ast.expr] = {}  # notebook-level name -> its expression
        self.modules: dict[str, Any] = {}  # notebook name -> physics module
        self.cache: dict[str, Any] = {}
        self.busy: set[str] = set()
        for cell in top_blocks(tree):
            for node in ast.walk(cell):
                if isinstance(node, ast.ImportFrom) and node.module == "labs.core":
                    for alias in node.names:
                        module = _physics_module(alias.name)
                        if module is not None:
                            self.modules[alias.asname or alias.name] = module
            for stmt in cell.body:
                for name, value in assignments(stmt):
                    if not name.startswith("_"):
                        self.globals.setdefault(name, value)
        for stmt in tree.body:  # a notebook's own module level (``app``; a script's constants)
            for name, value in assignments(stmt):
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
                except Unresolved:
                    parts.append(UNRESOLVED)
                    ok = False
            return "".join(parts), ok
        try:
            v = self.value(node, local)
        except Unresolved:
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
            raise Unresolved(str(exc)) from None

    def _name(self, name: str, local, scope) -> Any:
        if name in scope:
            return scope[name]
        if name in local:
            key = f"local:{name}"
            if key in self.busy:
                raise Unresolved(f"{name} refers to itself")
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
                    raise Unresolved(f"{name} refers to itself")
                self.busy.add(name)
                try:
                    self.cache[name] = self._eval(self.globals[name], {}, {})
                finally:
                    self.busy.discard(name)
            return self.cache[name]
        if name in _BUILTINS:
            return _BUILTINS[name]
        raise Unresolved(f"name {name}")

    def _call(self, node: ast.Call, local, scope) -> Any:
        func = self._eval(node.func, local, scope)
        allowed = isinstance(func, _Method) or _is_physics(func) or any(
            func is b for b in _BUILTINS.values())
        if not allowed or any(isinstance(a, ast.Starred) for a in node.args):
            raise Unresolved("call")
        args = [self._eval(a, local, scope) for a in node.args]
        kwargs = {}
        for kw in node.keywords:
            if kw.arg is None:
                kwargs.update(self._eval(kw.value, local, scope))
            else:
                kwargs[kw.arg] = self._eval(kw.value, local, scope)
        if func is range and len(range(*args)) > _MAX_ITEMS:
            raise Unresolved("range too long")
        try:
            return func(*args, **kwargs)
        except Exception as exc:  # a physics error for these arguments: not readable here
            raise Unresolved(str(exc)) from None

    def _comprehension(self, node, local, scope) -> list:
        """The (scope) bindings a comprehension's generators produce, in order."""
        scopes = [dict(scope)]
        for gen in node.generators:
            if gen.is_async:
                raise Unresolved("async")
            nxt = []
            for s in scopes:
                for item in self._eval(gen.iter, local, s):
                    bound = dict(s)
                    _bind(gen.target, item, bound)
                    if all(self._eval(c, local, bound) for c in gen.ifs):
                        nxt.append(bound)
                    if len(nxt) > _MAX_ITEMS:
                        raise Unresolved("comprehension too long")
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
                raise Unresolved("private attribute")
            obj = self._eval(node.value, local, scope)
            if type(obj) in _METHODS and node.attr in _METHODS[type(obj)]:
                return _Method(getattr(obj, node.attr))
            if not (_is_physics(type(obj)) or isinstance(obj, types.ModuleType)
                    and obj.__name__.startswith("labs.core.physics")):
                raise Unresolved("attribute")
            try:
                return getattr(obj, node.attr)
            except AttributeError:
                raise Unresolved(node.attr) from None
        if isinstance(node, ast.Subscript):
            obj, key = self._eval(node.value, local, scope), self._eval(node.slice, local, scope)
            try:
                return obj[key]
            except (KeyError, IndexError, TypeError):
                raise Unresolved("subscript") from None
        if isinstance(node, ast.Slice):
            return slice(*(self._eval(p, local, scope) if p is not None else None
                           for p in (node.lower, node.upper, node.step)))
        if isinstance(node, ast.BinOp):
            left, right = self._eval(node.left, local, scope), self._eval(node.right, local, scope)
            if isinstance(node.op, ast.Pow):
                if not (isinstance(left, (int, float)) and isinstance(right, (int, float))
                        and abs(right) <= 64):
                    raise Unresolved("power")
                return left ** right
            op = _OPS.get(type(node.op))
            if op is None:
                raise Unresolved("operator")
            if isinstance(node.op, ast.Mult) and isinstance(left, (str, list, tuple)) \
                    or isinstance(right, (str, list, tuple)) and isinstance(node.op, ast.Mult):
                raise Unresolved("sequence repetition")
            try:
                return op(left, right)
            except (TypeError, ValueError, ZeroDivisionError, OverflowError):
                raise Unresolved("arithmetic") from None
        if isinstance(node, ast.UnaryOp):
            v = self._eval(node.operand, local, scope)
            if isinstance(node.op, ast.USub):
                return -v
            if isinstance(node.op, ast.UAdd):
                return +v
            if isinstance(node.op, ast.Not):
                return not v
            raise Unresolved("operator")
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
            scopes = self._comprehension(node, local, scope)
            items = [self._eval(node.elt, local, s) for s in scopes]
            return set(items) if isinstance(node, ast.SetComp) else items
        if isinstance(node, ast.DictComp):
            return {self._eval(node.key, local, s): self._eval(node.value, local, s)
                    for s in self._comprehension(node, local, scope)}
        raise Unresolved(type(node).__name__)


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
            raise Unresolved("unpacking")
        for t, v in zip(target.elts, values):
            _bind(t, v, scope)
    else:
        raise Unresolved("target")


def assignments(stmt: ast.stmt):
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


def setup_cell(tree: ast.Module) -> ast.With | None:
    """The notebook's setup cell (``with app.setup:`` or ``with app.setup(...):``), if any.

    A lab's imports, ``LAB_ID`` and constants live there: marimo runs it first and its names
    are globals of every cell (LABS_SPEC §1).
    """
    for node in tree.body:
        if isinstance(node, ast.With) and len(node.items) == 1:
            expr = node.items[0].context_expr
            expr = expr.func if isinstance(expr, ast.Call) else expr
            if isinstance(expr, ast.Attribute) and expr.attr == "setup":
                return node
    return None


def top_blocks(tree: ast.Module) -> list[ast.With | ast.FunctionDef]:
    """The notebook's setup cell (if any), then its cells: every block whose top-level
    assignments are the notebook's names."""
    setup = setup_cell(tree)
    return ([setup] if setup is not None else []) + cells(tree)


def cells(tree: ast.Module) -> list[ast.FunctionDef]:
    """The notebook's cell functions (``@app.cell``), in file order."""
    out = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
                isinstance(d, (ast.Attribute, ast.Call)) and "cell" in ast.dump(d)
                for d in node.decorator_list):
            out.append(node)
    return out

