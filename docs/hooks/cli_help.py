"""mkdocs hook: write each command's ``--help`` into the page at build time.

A line ``<!-- cli-help: labs-export -->`` in a page becomes a code block with what
``labs-export --help`` prints, so the reference never drifts from the code. The command is
found in ``pyproject.toml``'s ``[project.scripts]`` (``name = "module:function"``) and its
``main`` is called in-process with ``["--help"]`` (argparse prints and exits). A command that
is not in ``[project.scripts]``, or whose help cannot be produced, fails the build.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import os
import re
import sys
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
MARKER = re.compile(r"^<!-- cli-help: ([\w-]+) -->$", re.M)
_cache: dict[str, str] = {}


def _scripts() -> dict[str, str]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]["scripts"]


def cli_help(name: str) -> str:
    """What ``<name> --help`` prints, at a fixed width of 80 columns."""
    if name in _cache:
        return _cache[name]
    scripts = _scripts()
    if name not in scripts:
        raise ValueError(f"cli-help: {name!r} is not in pyproject.toml [project.scripts] "
                         f"(known: {', '.join(sorted(scripts))})")
    module, _, function = scripts[name].partition(":")
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    main = getattr(importlib.import_module(module), function)
    out = io.StringIO()
    old_columns, old_argv = os.environ.get("COLUMNS"), sys.argv
    os.environ["COLUMNS"] = "80"
    sys.argv = [name, "--help"]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            try:
                main(["--help"])
            except SystemExit as done:
                if done.code not in (0, None):
                    raise RuntimeError(f"cli-help: {name} --help exited {done.code}:\n"
                                       f"{out.getvalue()}") from None
    finally:
        sys.argv = old_argv
        if old_columns is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old_columns
    text = out.getvalue().rstrip()
    if not text.startswith("usage:"):
        raise RuntimeError(f"cli-help: {name} --help printed no usage:\n{text}")
    _cache[name] = text
    return text


def on_page_markdown(markdown: str, **_kwargs) -> str:
    return MARKER.sub(lambda m: f"```text\n$ {m.group(1)} --help\n{cli_help(m.group(1))}\n```",
                      markdown)
