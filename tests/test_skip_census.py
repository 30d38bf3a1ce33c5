"""Every test that can skip says why, in one line: CI prints each skip with its reason (the
skip census, ``-rfEs`` in pyproject.toml's addopts), and a skip without a readable reason
hides what did not run. Read from the tests' source (no test is run here)."""

from __future__ import annotations

import ast
import functools
from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
MAX_REASON = 160  # characters: one line of the census


@functools.lru_cache(maxsize=None)
def _calls(root: Path = TESTS) -> tuple:
    """(where, kind, reason node or None) for every pytest.skip / skipif / importorskip."""
    return tuple(_find_calls(root))


def _find_calls(root: Path):
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        if "skip" not in source:
            continue
        tree = ast.parse(source, filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = ast.unparse(node.func)
            where = f"{path.relative_to(root)}:{node.lineno}"
            if name.endswith("pytest.skip") or name == "skip":
                reason = node.args[0] if node.args else next(
                    (k.value for k in node.keywords if k.arg in ("reason", "msg")), None)
                yield where, "skip", reason
            elif name.endswith("mark.skipif"):
                yield where, "skipif", next((k.value for k in node.keywords
                                             if k.arg == "reason"), None)
            elif name.endswith("importorskip"):
                # pytest writes "could not import 'x': ..." itself, or the reason given
                yield where, "importorskip", node.args[0] if node.args else None


def _literal_text(node) -> str | None:
    """The text of a reason written as a literal (the constant parts of an f-string)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value for v in node.values if isinstance(v, ast.Constant))
    return None


def test_every_skip_in_the_tests_gives_a_reason():
    missing = [f"{where}: {kind} without a reason" for where, kind, reason in _calls()
               if reason is None]
    assert not missing, "\n".join(missing)


def test_every_written_skip_reason_is_one_short_line():
    long = []
    for where, kind, reason in _calls():
        text = _literal_text(reason)
        if text is not None and ("\n" in text or len(text) > MAX_REASON or not text.strip()):
            long.append(f"{where}: {text!r}")
    assert not long, "skip reasons must be one line:\n" + "\n".join(long)


def test_the_census_is_printed():
    """pytest's addopts report every skip with its reason (-rs, part of -rfEs)."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    addopts = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"][
        "ini_options"]["addopts"]
    flags = [a[2:] for a in addopts if a.startswith("-r")]
    assert flags and "s" in flags[0], addopts


def test_the_census_reader_finds_a_skip_without_a_reason(tmp_path):
    """The reader sees every form the tests use, and a skip without a reason or over lines."""
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "pytest.skip()\n"
        "@pytest.mark.skipif(True)\n"
        "def test_a(): pass\n"
        "pytest.skip('two\\nlines')\n"
        "torch = pytest.importorskip('torch')\n")
    calls = list(_calls(tmp_path))
    assert [(kind, reason is None) for _, kind, reason in calls] == [
        ("skip", True), ("skipif", True), ("skip", False), ("importorskip", False)]
    assert "\n" in _literal_text(calls[2][2])
    assert {"skip", "skipif", "importorskip"} <= {kind for _, kind, _ in _calls()}
