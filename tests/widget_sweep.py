"""Drive a lab's widgets headless, one at a time, and collect every failure message it shows.

``failure_messages(lab_file)`` runs the lab in reveal mode (every gate open), then once per
setting of each dropdown (every option), multiselect (none, a few, all) and slider (both ends),
the way the browser sets them (``UIElement._update`` on a copy, passed to ``app.run(defs=...)``
together with the other names of its cell), and returns each distinct error callout
("That combination does not work." or a warning/danger callout that is not a comparison) with
the setting that produced it. Used by tests/test_failure_messages.py (issue 18.6).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import marimo as mo

from leak_support import flatten
from notebook_support import load_app

_DROPDOWN = type(mo.ui.dropdown(["a"]))
_SLIDER = type(mo.ui.slider(1, 2))
_MULTISELECT = type(mo.ui.multiselect(["a"]))
#: Callouts that report a comparison or a result, not a failure.
_NOT_FAILURES = ("You predicted", "Reference answer", "off by", "Committed.")


def settings(widget: Any) -> list:
    """The frontend values to try for ``widget``."""
    if isinstance(widget, _DROPDOWN):
        return [[label] for label in widget.options]
    if isinstance(widget, _MULTISELECT):
        labels = list(widget.options)
        return [[], labels[:3], labels]
    if isinstance(widget, _SLIDER):
        args = widget._args.args
        steps = args.get("steps")
        return [0, len(steps) - 1] if steps else [args["start"], args["stop"]]
    return []


def _failures(outputs) -> list[str]:
    found = []
    for out in outputs:
        raw = getattr(out, "text", "") or ""
        if "marimo-callout-output" not in raw:
            continue
        if not re.search(r"data-kind='&quot;(danger|warn)&quot;'", raw):
            continue
        text = re.sub(r"\s+", " ", flatten(raw)[0]).replace(" danger", "").replace(" warn", "")
        if not any(marker in text for marker in _NOT_FAILURES):
            found.append(text.strip())
    return found


def failure_messages(lab_file: Path) -> dict[str, str]:
    """{message: the widget setting that showed it} for one lab (reveal mode)."""
    app = load_app(lab_file, f"_{lab_file.stem}_sweep")
    _, base = app.run()
    owner = {name: data for data in app._cell_manager.cell_data() for name in data.cell.defs}
    seen: dict[str, str] = {}
    for name, widget in base.items():
        if name not in owner or not settings(widget):
            continue
        for value in settings(widget):
            defs = {other: base[other] for other in owner[name].cell.defs}
            changed = copy.deepcopy(widget)
            changed._update(value)
            defs[name] = changed
            outputs, _ = app.run(defs=defs)
            for message in _failures(outputs):
                seen.setdefault(message, f"{name} = {value!r}")
    return seen
