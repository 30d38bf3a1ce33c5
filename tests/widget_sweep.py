"""Drive a lab's widgets headless and collect every failure message it shows.

``failure_messages(lab_file)`` runs the lab in reveal mode (every gate open), then once per
setting of each dropdown (every option), multiselect (none, a few, all), slider (both ends) and
course number box, alone or in a ``mo.ui.dictionary`` (both ends, then each entry of
:data:`MALFORMED`, which must be refused with a message), and once per cell with all of that
cell's sliders at their low ends and once at their high ends (a GEMM that outgrows memory needs M, N and K large together). Each setting is made the
way the browser makes it (``UIElement._update`` on a copy, passed to ``app.run(defs=...)``
together with the other names of its cell). It returns the text of each distinct failure
callout (kind danger or warn, not a comparison with the student's prediction) with the setting
that produced it. Used by tests/test_failure_messages.py.
"""

from __future__ import annotations

import copy
import html
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import marimo as mo

from leak_support import DownstreamRuns, flatten, remembered
from notebook_support import load_app

_DROPDOWN = type(mo.ui.dropdown(["a"]))
_SLIDER = type(mo.ui.slider(1, 2))
_MULTISELECT = type(mo.ui.multiselect(["a"]))
#: Entries a student mistypes, typed into every course number box by the failure sweep: each
#: must be refused with a message naming it, never read as another number ("1,000" was read as
#: 1 in a 1-512 box; "7M" as 7 ms).
MALFORMED = ("1,000", "7M")
#: Callouts that report a comparison or a result, not a failure.
_NOT_FAILURES = ("You predicted", "Reference answer", "off by", "Committed.")


def settings(widget: Any) -> list:
    """The frontend values to try for ``widget`` alone."""
    if isinstance(widget, _DROPDOWN):
        return [[label] for label in widget.options]
    if isinstance(widget, _MULTISELECT):
        labels = list(widget.options)
        return [[], labels[:3], labels]
    if isinstance(widget, _SLIDER):
        return list(_slider_ends(widget))
    if number_boxes(widget):
        return _typed(widget, [_low, _high] + [lambda box, t=t: t for t in MALFORMED])
    return []


def number_boxes(widget: Any) -> dict:
    """``{None: widget}`` for a course NumberBox, ``{key: box}`` for a ``mo.ui.dictionary`` of
    them (Lab 3's circuit weights); empty for anything else."""
    from labs.core.ui.inputs import NumberBox

    if isinstance(widget, NumberBox):
        return {None: widget}
    elements = getattr(widget, "elements", None) if isinstance(widget, mo.ui.dictionary) else None
    if elements and all(isinstance(box, NumberBox) for box in elements.values()):
        return dict(elements)
    return {}


def _typed(widget: Any, texts: list) -> list:
    """The frontend values that type ``text(box)`` into every box of ``widget``, one per text:
    the text itself for a NumberBox, ``{key: text}`` for a dictionary of them."""
    boxes = number_boxes(widget)
    if None in boxes:
        return [text(boxes[None]) for text in texts]
    return [{key: text(box) for key, box in boxes.items()} for text in texts]


def _low(box) -> str:
    from labs.core.ui.numbers import plain
    return plain(box.lo)


def _high(box) -> str:
    from labs.core.ui.numbers import plain
    return plain(box.hi)


def _middle(box) -> str:
    from labs.core.ui.numbers import plain
    middle = (box.lo * box.hi) ** 0.5 if box.lo > 0 else (box.lo + box.hi) / 2
    return plain(round(middle) if box.integer else middle)  # a batch box takes 23, not 22.6


def _slider_ends(widget) -> tuple:
    args = widget._args.args
    steps = args.get("steps")
    return (0, len(steps) - 1) if steps else (args["start"], args["stop"])


class _Callouts(HTMLParser):
    """(kind, inner HTML) of every marimo callout in an output, nested ones included."""

    def __init__(self, found: list[tuple[str, str]]):
        super().__init__(convert_charrefs=True)
        self.found = found

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "marimo-callout-output":
            self.found.append((_json(attrs.get("data-kind")), _json(attrs.get("data-html"))))
            return
        for value in attrs.values():  # tabs, accordions ... carry their children as JSON/HTML
            if value and "marimo-callout-output" in value:
                _callouts(_json(value) if isinstance(_json(value), str) else value, self.found)


def _json(value):
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value


def _callouts(fragment: str, found: list[tuple[str, str]]) -> None:
    parser = _Callouts(found)
    parser.feed(fragment)
    parser.close()


def failures(outputs, memo: dict | None = None) -> list[str]:
    """The text of each failure callout (danger or warn) among a run's cell outputs.
    ``memo``: a dict kept between calls whose outputs are often the very same objects; an
    output already read is not parsed again."""
    return [text for out in outputs
            for text in remembered(memo, id(out), out, _output_failures)]


def _output_failures(out) -> list[str]:
    found: list[tuple[str, str]] = []
    raw = getattr(out, "text", "") or ""
    if "marimo-callout-output" in raw:
        _callouts(raw, found)
    texts = []
    for kind, inner in found:
        if kind not in ("danger", "warn") or not isinstance(inner, str):
            continue
        text = re.sub(r"\s+", " ", html.unescape(flatten(inner)[0])).strip()
        if text and not any(marker in text for marker in _NOT_FAILURES):
            texts.append(text)
    return texts


def failure_messages(lab_file: Path, shown: dict | None = None) -> dict[str, str]:
    """{message: the widget setting that showed it} for one lab (reveal mode). ``shown``: a
    dict filled with {setting: (name -> frontend value, [every message it showed])}."""
    app = load_app(lab_file, f"_{lab_file.stem}_sweep")
    # each setting re-runs what it reaches, as the kernel does (leak_support.DownstreamRuns,
    # held against whole runs in test_answer_leaks)
    runs, memo = DownstreamRuns(app), {}
    base = runs.defs
    cells = {data.cell_id: data for data in app._cell_manager.cell_data()}
    owner = {name: cid for cid, data in cells.items() for name in data.cell.defs}
    trials: list[tuple[str, dict]] = []
    for name, widget in base.items():
        if name in owner:
            trials += [(f"{name} = {value!r}", {name: value}) for value in settings(widget)]
    for cid, data in cells.items():  # every slider of a cell at one end together
        sliders = [n for n in data.cell.defs if isinstance(base.get(n), _SLIDER)]
        if len(sliders) > 1:
            for end, label in ((0, "low"), (1, "high")):
                trials.append((f"{', '.join(sorted(sliders))} all {label}",
                               {n: _slider_ends(base[n])[end] for n in sliders}))
    seen: dict[str, str] = {}
    for how, values in trials:
        outputs, _ = runs.run(changed_defs(app, base, values))
        messages = failures([outputs[cid] for cid in cells if cid in outputs], memo)
        for message in messages:
            seen.setdefault(message, how)
        if shown is not None:
            shown[how] = (values, messages)
    return seen


# --- the answer-leak walk --------------------------------------------------------

_RADIO = type(mo.ui.radio(["a"]))
_SWITCH = type(mo.ui.switch())
_CHECKBOX = type(mo.ui.checkbox())


def sample_settings(widget: Any) -> list:
    """Frontend values that sample what ``widget`` can show: every option of a dropdown or
    radio, none/some/all of a multiselect, five points of a slider (ends, quartiles), both
    states of a switch, the ends and the middle of a course number box (every box of a
    ``mo.ui.dictionary`` of them together). Buttons, forms and free text are not swept (a
    button starts a measurement; forms are the predictions)."""
    if isinstance(widget, (_DROPDOWN, _RADIO)):
        return [[label] if isinstance(widget, _DROPDOWN) else label for label in widget.options]
    if isinstance(widget, _MULTISELECT):
        return settings(widget)
    if isinstance(widget, _SLIDER):
        args = widget._args.args
        steps = args.get("steps")
        if steps:
            n = len(steps) - 1
            return sorted({0, n // 4, n // 2, (3 * n) // 4, n})
        lo, hi, step = args["start"], args["stop"], args.get("step") or 1
        points = {lo, hi}
        for q in (0.25, 0.5, 0.75):
            points.add(lo + round((hi - lo) * q / step) * step)
        return sorted(points)
    if isinstance(widget, (_SWITCH, _CHECKBOX)):
        return [True, False]
    if number_boxes(widget):
        return _typed(widget, [_low, _middle, _high])
    return []


def frontend_value(widget: Any, value: Any) -> Any:
    """The frontend value that makes ``widget.value == value`` (a scenario is written in the
    values a lab reads: a slider's number, a dropdown's key)."""
    if isinstance(widget, _SLIDER):
        steps = widget._args.args.get("steps")
        return list(steps).index(value) if steps else value
    if isinstance(widget, (_DROPDOWN, _RADIO)):
        options = widget.options
        label = value if value in options else next(
            (k for k, v in options.items() if v == value), None)
        if label is None:  # the widget does not offer it (yet): that scenario is unreachable
            raise ValueError(f"{value!r} is not an option of this widget")
        return [label] if isinstance(widget, _DROPDOWN) else label
    return value


def changed_defs(app: Any, base: dict, values: dict) -> dict:
    """``defs`` for ``app.run``: each widget in ``values`` (name -> frontend value) set as the
    browser sets it, with the other names of its cell as they were."""
    cells = {data.cell_id: data for data in app._cell_manager.cell_data()}
    owner = {name: cid for cid, data in cells.items() for name in data.cell.defs}
    defs: dict = {}
    for name, value in values.items():
        defs.update({other: base[other] for other in cells[owner[name]].cell.defs
                     if other not in defs and other in base})
        changed = copy.deepcopy(base[name])
        changed._update(value)
        defs[name] = changed
    return defs
