"""Find reference answers in what a lab shows before its predictions are locked.

How the answer-leak test works (``tests/test_answer_leaks.py``):

1. Run the lab in reveal mode (``ROOFLINE_REVEAL=1``) with ``reveal.reference`` wrapped, and
   record every reference answer it returns: :func:`collect_references`.
2. Run it again with an empty ledger and reveal off (every gate closed) and turn each cell's
   output into text exactly as marimo formats it for the browser (HTML, widget attributes,
   and each plotly figure's text and positions, parsed out of the ``Plotly.newPlot`` script
   that draws it: see "plotly figures" below): :func:`rendered_cells`.
3. Search that text for every plausible rendering of each answer: :func:`find_leaks`.

What counts as a rendering (documented here so the rule, not today's wording, is tested):

* **Numeric answers**: ``units.format_value`` (what the labs print); the integer with and
  without thousands separators (for values >= 10, or whole numbers); a whole number printed as
  a float (``886.0``) and the float as Python prints it; the value rounded to 2 and 3
  significant figures, with and without separators; scientific notation (``8.86e+02``,
  ``8.86E+02``, ``8.9e2``, ``8.86 × 10^2``); a fraction below 1 also as a percentage, with or
  without a space before the ``%`` (``59.5%``, ``59.5 %``). Thousands written LaTeX-style
  (``35{,}100``, ``35\\,100``) or with thin spaces count as separators, and a space before a
  unit may be plain, no-break or thin. A match must stand alone as a number (no digit, letter
  or decimal part glued to it).
* **A time in another prefix**: an answer in µs, ms or s is also searched in the others, with
  the unit written after it (``29.3 ms`` or ``0.0293 s`` for 29,300 µs; ``3,900 µs`` for
  3.9 ms; µs also spelled ``us``): :func:`prefix_renderings`.
* **A percentage as a fraction, where the text says so**: an answer of 4.2 % is also searched as
  0.042 in a sentence that calls it a fraction, share or proportion (alone, 0.042 is any
  number).
* **A time or a size is not a count or a ratio**: a match followed by a time unit (``ms``,
  ``µs``, ``s``) or a size (``GB``, ``MiB``, ``GB/s``) is not evidence for an answer of
  another dimension ("one step ≥ 57 ms" does not answer "batch 57"), nor one followed by
  ``%`` for an answer that is not a percentage; followed by any other unit (``FLOP/B``,
  ``×``, none) it is. Numbers under figure styling keys (``size``, ``width``: a font size of
  11) are not read, nor the day or month of an ISO date ("recorded 2026-11-23" is no 11).
* **Within the grader's tolerance**: the walk also reports any number written
  with the answer's own unit (``2.4 ms``, ``1.3×``, ``70 %``, ``4,000 tokens``) that the
  grader would count as correct (``find_leaks(..., tolerance=1.5)``).
* **Trivially common numbers are not evidence**: a rendering with fewer than two significant
  digits (``1``, ``2``, ``0.5``, ``100``, ``3,000``) or whose value is a power of two (the
  labs' own shapes and sizes: 128, 4,096, ...) appears in any lab for other reasons, so it is
  not searched. An answer that is such a number must be asked as a choice (whose label is
  searched) or stated nowhere before its gate by review.
* **Choice answers**: the *label* a student reads (the value is a ledger code, never shown).
  Its key phrase is the label up to the first ``:``, ``,`` or `` (`` (labels read "answer:
  why"), unless another option of the same question has the same key phrase (then the whole
  label, and also its distinctive phrases: the text after its colon and each parenthesis that
  no other option contains, "it cuts kernel launches" and "overhead-bound" for "Helps: it
  cuts kernel launches (overhead-bound)"). Matching ignores case, spacing and hyphens. Two
  kinds of text are not evidence: the option lists of widgets (a form offers every option
  equally; slider steps and ranges likewise), and a sentence that names *every* option of the
  question (by any of its phrases: "memory-bound vs compute-bound") since it cannot point to
  one of them.
* **Choice answers in a text** (README, docs, LABS_SPEC, docstrings, the gallery): a word such
  as "memory-bound" is every page's vocabulary, so there a choice answer counts only in a
  sentence (wrapped lines joined) that also names its graded case (the test's
  CHOICE_SCENARIOS, the item's id, "Lab 5 P2"): :func:`scenario_leaks`.

Limits (why labs gate whole cells rather than reword them): a paraphrase ("ρ rises" for the
option "ρ goes up") or a number derived from the answer is not found by text search.
"""

from __future__ import annotations

import functools
import html
import json
import math
import re
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, Iterable

from labs.core import units

#: Widget attributes that list a widget's options or range: every option equally, no answer.
NEUTRAL_ATTRIBUTES = {"data-options", "data-steps", "data-start", "data-stop", "data-step"}
#: Attributes that carry ids, styling or markup plumbing, never lab content.
NOISE_ATTRIBUTES = {"object-id", "random-id", "data-element-id", "data-element-ids", "class",
                    "style", "id", "href", "src"}
_KEY_SEPARATORS = re.compile(r":|,|\s\(")
_BLOCK_TAGS = {"p", "li", "div", "br", "tr", "td", "th", "h1", "h2", "h3", "h4", "span"}


@dataclass(frozen=True)
class Reference:
    """One reference answer of a lab, as ``reveal.reference`` returned it."""

    item_id: str
    value: Any
    label: str | None = None  # the chosen option's text, for choice items
    units: str = ""


@dataclass(frozen=True)
class Cell:
    index: int
    code: str
    text: str  # the rendered output, flattened (see rendered_text)
    options: tuple = ()  # option lists of the widgets in this output

    def where(self) -> str:
        first = self.code.strip().splitlines()[0] if self.code.strip() else ""
        if "\n" not in self.code.strip() and not self.code.startswith(("mo.", "_")) \
                and self.code.endswith((".md", "(docstrings)", "(strings)")):
            return first  # a text a student reads (student_texts)
        return f"cell {self.index} (`{first[:60]}`)"


@dataclass(frozen=True)
class Leak:
    cell: Cell
    reference: Reference
    rendering: str
    context: str

    def __str__(self) -> str:
        answer = (f"option {self.reference.label!r}" if self.reference.label is not None
                  else f"value {self.reference.value!r}")
        return (f"{self.cell.where()} shows the answer to {self.reference.item_id} "
                f"({answer}) as {self.rendering!r}: ...{self.context}...")


# --- rendered text ----------------------------------------------------------------------------


def _unescape_all(text: str) -> str:
    """HTML entities and JSON \\uXXXX escapes, as often as they are nested."""
    for _ in range(6):
        new = html.unescape(text)
        new = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), new)
        if new == text:
            break
        text = new
    return text


class _Flattener(HTMLParser):
    """Text nodes and attribute values of an HTML fragment (attributes holding JSON or HTML
    are opened recursively), one piece per line; neutral and noise attributes are skipped."""

    def __init__(self, pieces: list[str], options: list[list[str]]):
        super().__init__(convert_charrefs=True)
        self.pieces = pieces
        self.options = options
        self.in_code = 0  # inside <script> or <style>: code, not text a student reads

    def handle_starttag(self, tag, attrs):
        if tag in ("script", "style"):
            self.in_code += 1
        attrs = dict(attrs)
        if tag in _BLOCK_TAGS:
            self.pieces.append("\n")
        for name, value in attrs.items():
            if name == "data-options" and value:
                self.options.append(_option_labels(value))
            if value is None or name in NEUTRAL_ATTRIBUTES or name in NOISE_ATTRIBUTES:
                continue
            if name == "data-initial-value" and "data-steps" in attrs:
                value = _slider_value(value, attrs["data-steps"])
            if name == "data-figure" and tag == "marimo-plotly":  # the kernel's figure form
                try:
                    figure = json.loads(value)
                except ValueError:
                    figure = None
                if isinstance(figure, dict):
                    _flatten_figure(figure, self.pieces, self.options)
                    continue
            _flatten_value(value, self.pieces, self.options)
        if tag in ("marimo-tex",):
            self.pieces.append(" ")

    def handle_endtag(self, tag):
        if tag in ("script", "style"):
            self.in_code = max(0, self.in_code - 1)
        if tag in _BLOCK_TAGS:
            self.pieces.append("\n")

    def handle_data(self, data):
        if not self.in_code:
            self.pieces.append(data)
        elif _NEW_PLOT in data:  # a figure outside marimo's kernel: its JSON is in the script
            for figure in plotly_figures(data):
                _flatten_figure(figure, self.pieces, self.options)


def _option_labels(value: str) -> list[str]:
    try:
        opts = json.loads(value)
    except ValueError:
        return []
    return [str(o) for o in opts] if isinstance(opts, (list, dict)) else []


def _slider_value(index: str, steps: str) -> str:
    """A steps slider stores the index of its value: show the value a student sees."""
    try:
        return json.dumps(json.loads(steps)[int(json.loads(index))])
    except (ValueError, TypeError, IndexError, KeyError):
        return index


def _flatten_value(value: Any, pieces: list[str], options: list[list[str]]) -> None:
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in "[{\"" or stripped in ("null", "true", "false"):
            try:
                _flatten_json(json.loads(stripped), pieces, options)
                return
            except ValueError:
                pass
        _flatten_html(value, pieces, options)
    else:
        _flatten_json(value, pieces, options)


#: Figure JSON keys whose numbers are styling (a font size of 11, a line width), not content.
STYLE_KEYS = {"size", "width", "height", "opacity", "borderwidth", "tickangle", "standoff",
              "pad", "l", "r", "t", "b", "zorder", "dtick", "tick0", "ticklen", "nticks",
              "bgcolor", "gridwidth", "linewidth", "sizes"}


def _flatten_json(obj: Any, pieces: list[str], options: list[list[str]]) -> None:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in STYLE_KEYS and isinstance(v, (int, float)) and not isinstance(v, bool):
                continue
            if k not in ("uid", "uuid", "id"):
                _flatten_json(v, pieces, options)
    elif isinstance(obj, list):
        for v in obj:
            _flatten_json(v, pieces, options)
    elif isinstance(obj, str):
        _flatten_html(obj, pieces, options)
    elif isinstance(obj, bool) or obj is None:
        return
    else:
        pieces.append(f"\n{_exact(obj)}\n")


def _exact(v) -> str:
    """A number as a browser shows it: an integral float without its ".0" (plotly's hover
    and a widget's value show 886, not 886.0)."""
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        return str(int(v))
    return repr(v)


# --- plotly figures ---------------------------------------------------------------------------
#
# Outside marimo's kernel (``app.run``, the walks) a go.Figure is formatted through its
# ``_repr_html_``: an ``<iframe srcdoc>`` whose figure (data, layout) is the JSON argument of a
# ``Plotly.newPlot(...)`` call inside a <script>, which the flattener otherwise drops as code.
# It is parsed out and read as a student reads the figure:
#
# * its text: every ``text``, ``hovertext``, ``hovertemplate``, ``texttemplate``, ``name``,
#   ``title`` (plot, axes, legend, colour bar), ``ticktext``, ``label(s)`` at any depth of a
#   trace or of the layout (annotations' and shapes' labels included);
# * its positions, where a marker, a bar, a line or a label can stand at an answer: a
#   trace's ``x``, ``y``, ``z`` and ``customdata`` (hovering shows them, or the hover template
#   fills them in), an axis's ``tickvals``, a shape's ``x0``..``y1`` and an annotation's ``x``,
#   ``y`` in data coordinates (an annotation on a log axis is placed at log10 of the value:
#   read as the value). Paper and domain coordinates (a legend at x = 0.98) are layout, not
#   data, and are not read. Each position is written exactly and at 3 significant figures: the
#   labs' hover templates show ``.3s`` / ``.4g``, and a position read off an axis is no finer;
# * not read: the template (the theme's defaults, the same in every figure), colours, fonts,
#   sizes, ranges and every other styling key.
#
# numpy arrays arrive as plotly's typed arrays ({"dtype": "f8", "bdata": base64}): decoded.

_NEW_PLOT = "Plotly.newPlot("
_NEW_PLOT_CALL = re.compile(r"Plotly\.newPlot\(\s*(?:\"[^\"]*\"|'[^']*'|[\w.]+)\s*,\s*")
_JSON_DECODER = json.JSONDecoder()
FIGURE_TEXT_KEYS = {"text", "hovertext", "hovertemplate", "texttemplate", "name", "title",
                    "ticktext", "label", "labels"}
TRACE_POSITION_KEYS = {"x", "y", "z", "customdata"}


def plotly_figures(script: str) -> list[dict]:
    """Every figure ({"data", "layout"}) a script draws with ``Plotly.newPlot(id, data,
    layout, config)``. A call it cannot read is an error, never skipped: a figure the rule
    cannot read is one the walk is blind to."""
    figures = []
    for call in _NEW_PLOT_CALL.finditer(script):
        try:
            data, end = _JSON_DECODER.raw_decode(script, call.end())
            comma = re.compile(r"\s*,\s*").match(script, end)
            layout, _ = _JSON_DECODER.raw_decode(script, comma.end()) if comma else ({}, 0)
        except ValueError as e:
            raise ValueError(f"a plotly figure the leak rule cannot read: {e}") from e
        figures.append({"data": data, "layout": layout})
    if not figures or len(figures) != script.count(_NEW_PLOT):
        raise ValueError("a Plotly.newPlot call the leak rule cannot read: "
                         + script[script.find(_NEW_PLOT):][:120])
    return figures


def _typed_array(obj: Any) -> Any:
    """A plotly typed array ({"dtype", "bdata", "shape"}) as a list; anything else as is."""
    if isinstance(obj, dict) and "bdata" in obj and "dtype" in obj:
        import base64

        import numpy as np

        arr = np.frombuffer(base64.b64decode(obj["bdata"]), dtype=np.dtype(obj["dtype"]))
        shape = obj.get("shape")
        if shape:
            dims = [int(d) for d in str(shape).split(",")] if isinstance(shape, str) else shape
            arr = arr.reshape(dims)
        return arr.tolist()
    return obj


def _position_pieces(obj: Any, pieces: list[str], options: list[list[str]],
                     log: bool = False) -> None:
    """A position (or a list of them): a number exactly and at 3 significant figures; a
    string (a category on the axis) as text."""
    obj = _typed_array(obj)
    if isinstance(obj, (list, tuple)):
        for v in obj:
            _position_pieces(v, pieces, options, log)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        v = float(obj)
        if log:
            v = 10 ** v if abs(v) < 300 else v
        if not math.isfinite(v):
            return
        shown = {_exact(v if log else obj)}
        if v:
            r, decimals = _fixed(v, 3)
            shown.add(f"{r:.{decimals}f}")
        pieces.append("\n" + "\n".join(sorted(shown)) + "\n")
    elif isinstance(obj, str):
        pieces.append("\n")
        _flatten_html(obj, pieces, options)
        pieces.append("\n")
    elif isinstance(obj, dict):
        _figure_text(obj, pieces, options)


def _figure_text(obj: Any, pieces: list[str], options: list[list[str]]) -> None:
    """The text fields (FIGURE_TEXT_KEYS) of a figure part at any depth, and tick values."""
    if isinstance(obj, list):
        for v in obj:
            _figure_text(v, pieces, options)
    elif isinstance(obj, dict):
        for k, v in obj.items():
            if k in FIGURE_TEXT_KEYS:
                v = _typed_array(v)
                if isinstance(v, (dict, list)) and k not in ("text", "hovertext", "ticktext",
                                                             "labels"):
                    _figure_text(v, pieces, options)  # a title's {"text": ...}
                else:  # each text on its own line: "N* = 886" glued to a name is not "886x"
                    for text in v if isinstance(v, list) else [v]:
                        pieces.append("\n")
                        _flatten_json(text, pieces, options)
                        pieces.append("\n")
            elif k == "tickvals":
                _position_pieces(v, pieces, options)
            elif isinstance(v, (dict, list)):
                _figure_text(v, pieces, options)


def _axis_is_log(layout: dict, ref: Any) -> bool:
    """Whether ``xref``/``yref`` ("x", "y2") names a log axis of the layout."""
    if not isinstance(ref, str) or not re.fullmatch(r"[xy]\d*", ref):
        return False
    axis = layout.get(ref[0] + "axis" + ref[1:], {})
    return isinstance(axis, dict) and axis.get("type") == "log"


def _in_data_coordinates(ref: Any) -> bool:
    return not isinstance(ref, str) or not (ref == "paper" or ref.endswith("domain"))


def _flatten_figure(figure: dict, pieces: list[str], options: list[list[str]]) -> None:
    """A plotly figure's text and positions, as described above."""
    layout = {k: v for k, v in (figure.get("layout") or {}).items() if k != "template"}
    pieces.append("\n")
    for trace in figure.get("data") or []:
        if not isinstance(trace, dict):
            continue
        _figure_text(trace, pieces, options)
        for k in TRACE_POSITION_KEYS & set(trace):
            _position_pieces(trace[k], pieces, options)
    notes = layout.pop("annotations", None) or []
    shapes = layout.pop("shapes", None) or []
    _figure_text(layout, pieces, options)
    for note in notes if isinstance(notes, list) else []:
        _figure_text(note, pieces, options)
        for axis in "xy":
            ref = note.get(axis + "ref", axis)
            if axis in note and _in_data_coordinates(ref):
                _position_pieces(note[axis], pieces, options, _axis_is_log(layout, ref))
    for shape in shapes if isinstance(shapes, list) else []:
        _figure_text(shape, pieces, options)
        for axis in "xy":
            ref = shape.get(axis + "ref", axis)
            if _in_data_coordinates(ref):
                for k in (axis + "0", axis + "1"):
                    if k in shape:
                        _position_pieces(shape[k], pieces, options)
    pieces.append("\n")


def _flatten_html(fragment: str, pieces: list[str], options: list[list[str]]) -> None:
    if "<" in fragment and ">" in fragment:
        parser = _Flattener(pieces, options)
        parser.feed(fragment)
        parser.close()
    else:
        pieces.append(fragment)


def flatten(html_text: str) -> tuple[str, list[list[str]]]:
    """An HTML output flattened to text (see _Flattener), and its widgets' option lists."""
    pieces: list[str] = []
    options: list[list[str]] = []
    _flatten_html(html_text, pieces, options)
    text = _unescape_all("".join(pieces))
    # Thousands separators as LaTeX ({,} or \,) or thin / no-break spaces read as commas.
    text = re.sub(r"(\d)(?:\{,\}|\\,|[\u2009\u202f\u00a0])(?=\d{3}\b)", r"\1,", text)
    return text, options


def rendered_text(output: Any) -> tuple[str, list[list[str]]]:
    """One cell output as the browser gets it (marimo's formatter), flattened."""
    if output is None:
        return "", []
    from marimo._output.formatting import try_format

    formatted = try_format(output)
    data = formatted.data if isinstance(formatted.data, str) else json.dumps(formatted.data)
    if "<" not in data:  # plain text or JSON: wrap so that the same flattener reads it
        data = f"<pre>{html.escape(data)}</pre>"
    return flatten(data)


def run_with_outputs(app: Any, defs: dict | None = None) -> tuple[dict, Any]:
    """``app.run(defs=defs)`` keeping each output with its cell id (``run`` drops cells that did
    not run, so its list cannot be matched to cells by position)."""
    captured: dict = {}
    flatten_outputs = app._flatten_outputs

    def capture(outputs):
        captured.update(outputs)
        return flatten_outputs(outputs)

    app._flatten_outputs = capture
    try:
        _, out_defs = app.run(defs=defs) if defs else app.run()
    finally:
        del app._flatten_outputs
    return captured, out_defs


class DownstreamRuns:
    """A lab run once with ``defs`` (the base), then re-run for widget changes the way marimo's
    kernel re-runs a notebook when a student moves a widget: only the cells downstream of the
    changed cells run again, every other cell keeps its output and its definitions.

    ``run(changes)`` gives what ``run_with_outputs(app, {**defs, **changes})`` gives (tested
    against it in test_answer_leaks), at the cost of the cells the change reaches: the walks
    sweep one part's widgets hundreds of times, and a whole run re-made every part's figures.
    A cell downstream of one that stopped (``mo.stop``) or did not run in the base does not
    run either, as in a whole run.
    """

    def __init__(self, app: Any, defs: dict | None = None):
        self.app = app
        self.fixed = dict(defs or {})
        self.outputs, namespace = run_with_outputs(app, self.fixed or None)
        self.defs = dict(namespace)
        self._cells = {d.cell_id: d.cell for d in app._cell_manager.cell_data()}

    def _ran(self, cid) -> bool:
        """The cell ran in the base run and defined all its names (not stopped). The setup
        cell (``with app.setup:``) always runs first and has no output entry of its own."""
        from marimo._ast.names import SETUP_CELL_NAME

        return (cid in self.outputs or cid == SETUP_CELL_NAME) and all(
            n in self.defs for n in self._cells[cid].defs)

    def run(self, changes: dict) -> tuple[dict, dict]:
        """(outputs by cell id, definitions) with ``changes`` (name -> value) made."""
        from marimo._ast.app import InternalApp
        from marimo._runtime.app.script_runner import AppScriptRunner
        from marimo._runtime.runner.scheduler import SequentialScheduler

        graph = self.app._graph
        overridden = set(self.fixed) | set(changes)
        changed = {cid for cid, cell in self._cells.items() if set(cell.defs) & set(changes)}
        reached = set()
        for cid in changed:
            reached |= graph.descendants(cid)
        reached -= {cid for cid in reached if set(self._cells[cid].defs) & overridden}
        given = {cid for cid, cell in self._cells.items() if set(cell.defs) & overridden}

        def ready(parent) -> bool:  # its names hold this run's values
            if parent in reached:
                return parent in to_run
            return parent in given or self._ran(parent)

        to_run: list = []
        for cid in InternalApp(self.app).execution_order:  # parents before children
            if cid in reached and all(ready(p) for p in graph.parents[cid]):
                to_run.append(cid)
        stale = {n for cid in reached for n in self._cells[cid].defs}
        glbls = {k: v for k, v in self.defs.items() if k not in stale}
        glbls.update(changes)
        runner = AppScriptRunner(InternalApp(self.app), filename=self.app._filename,
                                 glbls=glbls)
        runner._scheduler = SequentialScheduler(to_run, graph)
        new_outputs, namespace = runner.run()
        # a changed cell does not run (its names are given), so it shows nothing, as in a
        # whole run with those names given
        outputs = {cid: out for cid, out in self.outputs.items()
                   if cid not in reached and cid not in changed}
        outputs.update(new_outputs)
        defs = {name: namespace[name] for name in self.app._defs if name in namespace}
        return outputs, defs


def remembered(memo: dict | None, key, obj, make):
    """``make(obj)``, made once per object under ``key`` while ``memo`` lives (None: always
    made). The entry holds ``obj``, so the identity test stays sound: re-runs
    (:class:`DownstreamRuns`) hand back the very objects of the cells they did not re-run."""
    if memo is None:
        return make(obj)
    known = memo.get(key)
    if known is None or known[0] is not obj:
        known = memo[key] = (obj, make(obj))
    return known[1]


def rendered_cells(app: Any, outputs: dict, *, scrub: Iterable[str] = (),
                   memo: dict | None = None) -> list[Cell]:
    """Each cell's code and rendered output (``outputs``: cell id -> output, from
    :func:`run_with_outputs`); ``scrub`` strings (temporary paths, the test's student id) are
    replaced first, so that the test's own environment cannot match. ``memo``: a dict kept
    between calls whose outputs are often the very same objects (:class:`DownstreamRuns`):
    an output object already rendered is not rendered again."""
    cells = []
    for i, data in enumerate(app._cell_manager.cell_data()):
        text, options = remembered(memo, data.cell_id, outputs.get(data.cell_id),
                                   rendered_text)
        for s in scrub:
            if s:
                text = text.replace(s, "<scrubbed>")
        cells.append(Cell(i, data.code, text, tuple(tuple(o) for o in options)))
    return cells


# --- renderings of an answer ------------------------------------------------------------------


def _significant_digits(text: str) -> int:
    digits = re.sub(r"\D", "", re.split(r"[eE]", text)[0].split("×")[0]).lstrip("0").rstrip("0")
    return len(digits)


def _is_power_of_two(v: float) -> bool:
    if v <= 0 or v != int(v):
        return False
    n = int(v)
    return n & (n - 1) == 0


def _fixed(v: float, sig: int) -> tuple[float, int]:
    """v rounded to ``sig`` significant figures and the decimals that shows."""
    if v == 0:
        return 0.0, 0
    exp = math.floor(math.log10(abs(v)))
    decimals = max(0, sig - 1 - exp)
    return round(v, sig - 1 - exp), decimals


def numeric_renderings(value: float) -> set[str]:
    """Every plausible way a lab could print ``value`` (see the module docstring), minus the
    trivially common ones."""
    v = float(value)
    if not math.isfinite(v) or v == 0:
        return set()
    out = {units.format_value(v)}
    if abs(v) >= 10 or v == round(v):
        n = round(v)
        out |= {str(n), f"{n:,}"}
    if v == round(v):  # a float printed as such ("886.0", str() of an integral float)
        out |= {f"{round(v)}.0", f"{round(v):,}.0"}
    out.add(repr(v))  # the float itself, as Python prints it
    for sig in (2, 3):
        r, decimals = _fixed(v, sig)
        out |= {f"{r:,.{decimals}f}", f"{r:.{decimals}f}"}
        mantissa, exp = f"{v:.{sig - 1}e}".split("e")
        e = int(exp)
        out |= {f"{mantissa}e{exp}", f"{mantissa}e{e}", f"{mantissa}E{exp}", f"{mantissa}E{e}",
                f"{mantissa} × 10^{e}",
                f"{mantissa}×10^{e}", f"{mantissa} × 10^{{{e}}}", f"{mantissa}\\times10^{{{e}}}",
                f"{mantissa} \\times 10^{{{e}}}"}
        if 0 < abs(v) < 1:
            p, d = _fixed(100 * v, sig)
            out |= {f"{p:.{d}f}%", f"{p:.{d}f} %"}
    keep = set()
    for text in out:
        try:
            as_number = float(re.sub(r"[,%]", "", text).replace(" × 10^", "e").replace(
                "×10^", "e").replace("\\times10^", "e").replace(" \\times 10^", "e").replace(
                "{", "").replace("}", ""))
        except ValueError:
            as_number = None
        if _significant_digits(text) < 2:
            continue
        if as_number is not None and _is_power_of_two(abs(as_number)):
            continue
        keep.add(text)
    return keep


def _number_pattern(rendering: str) -> re.Pattern:
    # Standing alone: no word character or "<digit>." / "<digit>," glued before, no word
    # character or decimal/thousands continuation after. A space in a rendering ("59.5 %",
    # "29.3 ms") is any one space a page prints there: plain, no-break or thin.
    body = re.escape(rendering).replace(r"\ ", "[ \u00a0\u202f\u2009]").replace(
        "µs", "(?:µs|μs|us)")
    return re.compile(r"(?<![\w.])(?<!\d,)(?<!\d:)" + body + r"(?![\w])(?![.,]\d)")


#: Seconds per time unit: an answer in one is also shown in another ("29.3 ms" for 29,300 µs).
TIME_UNITS = {"ns": 1e-9, "µs": 1e-6, "μs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def prefix_renderings(value: float, units: str, renderings=None) -> set[str]:
    """A time answer in the labs' other time units, each rendering with its unit written
    after it (the unit is what makes "29.3" in "29.3 ms" the answer 29,300 µs): "29.3 ms",
    "0.0293 s", "3,900 µs" for 3.9 ms. Empty for an answer that is not a time."""
    scale = TIME_UNITS.get(units.strip())
    if scale is None or not isinstance(value, (int, float)) or not value:
        return set()
    renderings = renderings or numeric_renderings
    out = set()
    for unit, other in TIME_UNITS.items():
        if unit in ("μs", "us") or other == scale:
            continue  # µs is written once; its spellings are matched by the time pattern
        shown = float(f"{value * scale / other:.12g}")  # 29,300 µs is 29.3 ms, not 29.2999...
        out |= {f"{r} {unit}" for r in renderings(shown) if not r.endswith("%")}
    return out


#: Words that say a number is a fraction of a whole ("a share of 0.042 of the step").
FRACTION_WORDS = re.compile(r"\b(?:fraction|share|proportion)s?\b", re.I)


def key_phrase(label: str, other_labels: Iterable[str] = ()) -> str:
    """The distinctive head of an option label ("The memory roof: it waits ..." -> "The memory
    roof"); the whole label when another option shares that head."""
    head = _KEY_SEPARATORS.split(label, maxsplit=1)[0].strip() or label
    others = [_KEY_SEPARATORS.split(o, maxsplit=1)[0].strip().lower() for o in other_labels
              if o != label]
    return label.strip() if head.lower() in others else head


def distinctive_phrases(label: str, other_labels: Iterable[str] = ()) -> list[str]:
    """What tells an option from the others when their heads are the same ("Helps: it cuts
    kernel launches (overhead-bound)" beside "Helps: it cuts HBM bytes (memory-bound)"): the
    text after its colon (less its parentheses) and each parenthesis, each only where no other
    option's label contains it ("memory-bound" is also in "No effect: it is memory-bound
    anyway", so it tells nothing) and of 6 characters or more."""
    rest = label.split(":", 1)[1] if ":" in label else ""
    parts = [re.sub(r"\([^()]*\)", " ", rest), *re.findall(r"\(([^()]*)\)", label)]
    others = [_norm(o) for o in other_labels if o != label]
    out = []
    for part in parts:
        phrase = _norm(part)
        if len(phrase) >= 6 and not any(phrase in o for o in others):
            out.append(" ".join(part.split()))
    return out


def choice_phrases(label: str, other_labels: Iterable[str] = ()) -> list[str]:
    """The phrases that name an option in a text: its key phrase, and where that is the whole
    label (another option shares its head) also its distinctive phrases, which a page can
    show without the rest of the label (Lab 4's "Regime overhead-bound")."""
    other_labels = list(other_labels)
    key = key_phrase(label, other_labels)
    shared_head = key == label.strip() and _KEY_SEPARATORS.search(label)
    return [key, *(distinctive_phrases(label, other_labels) if shared_head else [])]


def _norm(text: str) -> str:
    """Case, spacing and hyphens ignored ("shared-memory" is "shared memory")."""
    return re.sub(r"\s+", " ", re.sub(r"(?<=\w)[-\u2010\u2011](?=\w)", " ", text)).strip().lower()


_SENTENCE_END = re.compile(r"\n+|(?<=[.!?;])\s+")


def _names_every_option(sentence: str, others: list[list[str]]) -> bool:
    """The contrast rule: a (normalised) sentence that names every other option too (by any
    of its phrases) cannot point to one of them."""
    return bool(others) and all(any(p in sentence for p in o) for o in others)


def prose_sentences(text: str) -> list[str]:
    """A Markdown or docstring text's sentences, a sentence wrapped over lines joined again:
    paragraphs end at a blank line, a list item or a table row; sentences at . ! ? or ;."""
    out = []
    for paragraph in re.split(r"\n\s*\n|\n(?=[ \t]*(?:[-*+]\s|\d+\.\s|\|))", text):
        out += [s for s in re.split(r"(?<=[.!?;])\s+", " ".join(paragraph.split())) if s]
    return out


def answer_name(value: Any) -> str | None:
    """A choice's recorded value when it is a name a text would use (two words or more, with
    hyphens, underscores and slashes as spaces: "L1 / shared memory", "memory-bound",
    "weight GEMMs"), else None ("up", "launches" and 128 are any text's words)."""
    if not isinstance(value, str):
        return None
    return value if len(re.sub(r"[-_/()]", " ", value).split()) >= 2 else None


def scenario_leaks(cells: Iterable[Cell], ref: Reference, labels: Iterable[str],
                   scenario: re.Pattern) -> list[Leak]:
    """A choice answer stated where a text names its graded case: a sentence (wrapped lines
    joined) that matches ``scenario`` (the question's own case: "a naive GEMM", the item's id,
    "Lab 5 P2") and names the correct option, by its choice phrases or its recorded value
    (:func:`answer_name`), but not every other option as well."""
    labels = list(labels)
    name = answer_name(ref.value)
    phrases = [_norm(p) for p in choice_phrases(ref.label, labels) + ([name] if name else [])]
    others = [[_norm(p) for p in choice_phrases(o, labels)] for o in labels if o != ref.label]
    leaks = []
    for cell in cells:
        for sentence in prose_sentences(cell.text):
            if not scenario.search(sentence):
                continue
            s = _norm(sentence)
            phrase = next((p for p in phrases if p in s), None)
            if phrase and not _names_every_option(s, others):
                leaks.append(Leak(cell, ref, phrase, sentence[:200]))
    return leaks


_DIMENSIONS = {
    "time": re.compile(r"\s?(?:ns|µs|μs|us|ms|s|sec|seconds?|minutes?|hours?)\b"),
    "size": re.compile(r"\s?(?:[kKMGTP]i?B|bytes?|B)(?:/s)?(?![\w/])"),
    # a layout length (a label's font, a plot's width, a text cut at N characters) is never
    # a lab's answer
    "length": re.compile(r"\s?(?:px|pt|em|characters?)\b"),
}


def _dimension(units: str) -> str | None:
    return next((d for d, p in _DIMENSIONS.items() if p.fullmatch(" " + units.strip())),
                None) if units else None


_PERCENT = re.compile(r"\s?%")


def _other_dimension(after: str, ref_units: str) -> bool:
    """True when the number is followed by a time or a size and the answer is not one: "57 ms"
    is not an answer of 57 sequences (a ratio or a count stays evidence in any unit); and a
    number followed by "%" is not an answer that is not a percentage (11 % is not 10.9 ×; a
    fraction's own percentage form, "13.5%", is a rendering of its own)."""
    mine = _dimension(ref_units)
    if ref_units.strip() != "%" and _PERCENT.match(after):
        return True
    return any(p.match(after) for d, p in _DIMENSIONS.items() if d != mine)


def text_renderings(value: float) -> set[str]:
    """The renderings of ``value`` that count in prose (README, docs, docstrings): those with
    three or more significant digits, and shorter ones only when they are the value itself
    (within 0.2 %): "3.9" for 3.9 counts, "11" for 10.92 (a font size) does not."""
    v = float(value)
    out = set()
    for text in numeric_renderings(v):
        try:
            as_number = float(re.sub(r"[,%]", "", text))
        except ValueError:
            out.add(text)  # scientific forms: kept
            continue
        if text.endswith("%"):
            as_number /= 100
        if _significant_digits(text) >= 3 or abs(as_number - v) <= 0.002 * abs(v):
            out.add(text)
    return out


#: How a unit may be written after a number, per answer unit (lower case). Not searched within
#: the tolerance: a time in another prefix (the exact renderings are: "29.3 ms" for 29,300 µs):
#: Lab 6 shows a dozen neighbours in ms (a 1 GB all-reduce, a decode step) within 1.5x of its
#: 29,300 µs answer, none of them that answer.
_UNIT_WORDS = {"×": ("×", "x"), "%": ("%", " %", "percent"), "ms": (" ms", "ms"),
               "tokens": (" tokens", " token"), "sequences": (" sequences", " sequence"),
               "elements": (" elements", " element")}
_ANY_NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?![\w.,]\d)")


def near_answers(text: str, ref: Reference, tolerance: float) -> list[tuple[str, int, int]]:
    """Numbers in ``text`` written with the answer's unit ("2.4 ms", "1.3×", "70 %") that
    the grader would count as correct (within ``tolerance`` as a ratio): (text, start, end)."""
    words = _UNIT_WORDS.get(ref.units.strip())
    if not words or not isinstance(ref.value, (int, float)) or ref.value <= 0:
        return []
    out = []
    for m in _ANY_NUMBER.finditer(text):
        after = text[m.end():m.end() + 12]
        if not any(after.startswith(w) and not after[len(w):len(w) + 1].isalpha()
                   for w in words):
            continue
        if _in_date(text, m.start()):
            continue
        if text[max(0, m.start() - 8):m.start()].lower().endswith("off by "):
            continue  # a verdict's ratio (your prediction against its instrument), not a value
        v = float((m.group(1) + (m.group(2) or "")).replace(",", ""))
        if v > 0 and max(v / ref.value, ref.value / v) <= tolerance:
            out.append((m.group(0), m.start(), m.end()))
    return out


# The walks search the same texts (the cells a trial did not change) for the same answers
# hundreds of times: each search is a function of its arguments, so it is remembered.
@functools.lru_cache(maxsize=1 << 16)
def _rendering_at(rendering: str, text: str, units: str) -> tuple[int, int] | None:
    """Where ``rendering`` first stands in ``text`` as a number of the answer's dimension."""
    for m in _number_pattern(rendering).finditer(text):
        if not _other_dimension(text[m.end():], units) and not _in_date(text, m.start()):
            return m.start(), m.end()
    return None


#: An ISO date, with a time of day or not ("recorded 2026-11-23", "2026-11-23T10:04").
ISO_DATE = re.compile(r"(?<!\d)\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d)?)?(?!\d)")


@functools.lru_cache(maxsize=1 << 12)
def _date_spans(text: str) -> tuple:
    return tuple(m.span() for m in ISO_DATE.finditer(text))


def _in_date(text: str, position: int) -> bool:
    """Whether ``position`` is inside an ISO date: its day and month (11 in "2026-11-23") are
    a calendar's, never a quantity (figure captions and reference machines carry dates)."""
    return any(a <= position < b for a, b in _date_spans(text))


@functools.lru_cache(maxsize=1 << 16)
def _near_answers(text: str, ref: Reference, tolerance: float) -> tuple:
    return tuple(near_answers(text, ref, tolerance))


def find_leaks(cells: Iterable[Cell], references: Iterable[Reference], *,
               renderings=numeric_renderings, tolerance: float | None = None,
               other_cases: dict | None = None) -> list[Leak]:
    """Every occurrence of a reference answer in the cells' rendered text.

    A choice's fellow options (for its key phrase and the contrast rule) are those of the
    widget option list, in any cell, that contains its label.

    ``other_cases`` (item id -> compiled pattern): a number within the tolerance (not an exact
    rendering) in a cell whose text matches the item's pattern is not reported: the pattern
    names the other case of the question that cell states (the batch-64 chart of a batch-1
    question); every such entry says why in the test that passes it.
    """
    other_cases = other_cases or {}
    cells = list(cells)
    options = [list(o) for c in cells for o in c.options]
    leaks: list[Leak] = []
    for ref in references:
        if ref.label is not None:
            fellows = next((o for o in options if ref.label in o), [ref.label])
            phrases = [_norm(p) for p in choice_phrases(ref.label, fellows)]
            others = [[_norm(p) for p in choice_phrases(o, fellows)]
                      for o in fellows if o != ref.label]
            for cell in cells:
                for sentence in _SENTENCE_END.split(cell.text):
                    s = _norm(sentence)
                    phrase = next((p for p in phrases if p in s), None)
                    if phrase and not _names_every_option(s, others):
                        leaks.append(Leak(cell, ref, phrase, sentence.strip()[:160]))
        elif isinstance(ref.value, (int, float)) and not isinstance(ref.value, bool):
            shown = renderings(ref.value) | prefix_renderings(ref.value, ref.units, renderings)
            for rendering in sorted(shown):
                for cell in cells:
                    m = _rendering_at(rendering, cell.text, ref.units)
                    if m:
                        a, b = max(0, m[0] - 70), m[1] + 70
                        leaks.append(Leak(cell, ref, rendering,
                                          re.sub(r"\s+", " ", cell.text[a:b])))
            if ref.units.strip() == "%":  # 4.2 % as the fraction 0.042, where the text says so
                fractions = {r for r in renderings(ref.value / 100) if not r.endswith("%")}
                for cell in cells:
                    for sentence in _SENTENCE_END.split(cell.text):
                        if not FRACTION_WORDS.search(sentence):
                            continue
                        hit = next((r for r in sorted(fractions)
                                    if _rendering_at(r, sentence, "")), None)
                        if hit:
                            leaks.append(Leak(cell, ref, f"{hit} (a fraction)",
                                              re.sub(r"\s+", " ", sentence.strip())[:160]))
            if tolerance is not None:  # the answer's unit, a value the grader counts correct
                other = other_cases.get(ref.item_id)
                for cell in cells:
                    if other is not None and other.search(cell.text):
                        continue
                    for shown, start, end in _near_answers(cell.text, ref, tolerance)[:1]:
                        a, b = max(0, start - 70), end + 70
                        leaks.append(Leak(cell, ref, f"{shown} {ref.units} (within "
                                          f"{tolerance:g}x)", re.sub(r"\s+", " ", cell.text[a:b])))
    return leaks


def lab_files(root: Path) -> list[Path]:
    return sorted((root / "labs").glob("lab_*.py"))


def collect_references(lab_file: Path, ledger_dir: Path) -> list[Reference]:
    """Run the lab in reveal mode (its own ledger folder) and record every answer
    ``reveal.reference`` returns."""
    import pytest

    from labs.core import ledger, reveal
    from notebook_support import load_app

    seen: list[Reference] = []
    original = reveal.reference

    def recording(*args, **kwargs):
        answer = original(*args, **kwargs)
        if answer is not None:
            is_choice = getattr(answer, "answer_type", "numeric") == "choice"
            seen.append(Reference(answer.item_id, answer.value,
                                  getattr(answer, "label", None) if is_choice else None,
                                  getattr(answer, "units", "") or ""))
        return answer

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reveal, "reference", recording)
        mp.setenv("ROOFLINE_REVEAL", "1")
        mp.setenv(ledger.ENV_LEDGER_DIR, str(ledger_dir))
        outputs, _ = load_app(lab_file, f"_{lab_file.stem}_revealed").run()
    shown = " ".join(getattr(o, "text", "") for o in outputs if o is not None)
    # gating must not hide them for good: the instructor copy (every answer in) shows them
    assert "Key takeaways" in shown, f"{lab_file.name}: reveal mode shows no takeaways"
    return seen


# --- the walk: each prediction in order, the instruments before it swept ---------

_PREDICTION_CELL = re.compile(
    r"(\w+_prediction)\s*=\s*get_\w+\(\)\s*or\s*\(?\s*(?:reveal\.reference|_reference)\(\s*"
    r"(?:lab\s*,\s*)?[\"']([\w.]+)[\"']")


@dataclass(frozen=True)
class Step:
    """One prediction of a lab, in the lab's order: its item, the notebook variable that holds
    the locked prediction (the gate), the cell that defines it, and its reference answer."""

    item_id: str
    variable: str
    cell_id: Any
    reference: "Reference"


def prediction_steps(app: Any, references: Iterable["Reference"]) -> list[Step]:
    """The lab's predictions in notebook order (the order a student meets them)."""
    by_item = {r.item_id: r for r in references}
    steps = []
    for data in app._cell_manager.cell_data():
        for variable, item in _PREDICTION_CELL.findall(data.code):
            if item in by_item:
                steps.append(Step(item, variable, data.cell_id, by_item[item]))
    return steps


def locked(ref: "Reference", units: str = "") -> Any:
    """A student's locked prediction that holds the reference answer (what a student who
    guessed right would have locked)."""
    from labs.core import quiz

    if ref.label is not None:
        return quiz.Prediction(ref.item_id, ref.value, label=ref.label, answer_type="choice",
                               confidence=3, reason="walk")
    return quiz.Prediction(ref.item_id, ref.value, units=units or ref.units, confidence=3,
                           reason="walk")


# --- texts a student is sent to --------------------------------------------------


#: Benchmark output quoted verbatim in a docs page (a recorded run's table): measured numbers,
#: not examples, left out of the search like dates and times of day.
BENCHMARK_OUTPUT = re.compile(
    r"<!-- benchmark output: verbatim -->.*?<!-- end of benchmark output -->", re.S)
DATE_TIME = re.compile(r"\b\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d)?)?\b|\b\d\d:\d\d\b")
#: A section's number, no quantity: "LABS_SPEC §4.2", a markdown heading "### 4.2 Each ...".
SECTION_NUMBER = re.compile(r"§\s?\d+(?:\.\d+)*|^#{1,6}[ \t]+\d+(?:\.\d+)*", re.M)


def without_benchmark_output(text: str) -> str:
    """The text less dates, times, section numbers and the benchmarks' verbatim output
    (marked in the page)."""
    return SECTION_NUMBER.sub(" ", DATE_TIME.sub(" ", BENCHMARK_OUTPUT.sub(" ", text)))


def student_texts(root: Path) -> dict[str, str]:
    """{name: text} of what a student reads outside the labs: README.md, every docs/**/*.md
    (whatever exists), LABS_SPEC.md, the docstrings of labs/core's public modules, classes and
    functions (``help()`` and the API pages show them), and the string literals of
    labs/gallery.py (the style gallery beside the labs)."""
    import ast

    out = {}
    for path in [root / "README.md", root / "LABS_SPEC.md",
                 *sorted((root / "docs").rglob("*.md"))]:
        if path.is_file():
            out[str(path.relative_to(root))] = without_benchmark_output(
                path.read_text(encoding="utf-8"))
    for path in sorted((root / "labs" / "core").rglob("*.py")):
        if any(part.startswith("_") and part != "__init__.py" for part in path.parts[-1:]):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = [ast.get_docstring(tree) or ""]
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) \
                    and not node.name.startswith("_"):
                docs.append(ast.get_docstring(node) or "")
        text = "\n\n".join(d for d in docs if d)
        if text:
            out[f"{path.relative_to(root)} (docstrings)"] = text
    gallery = root / "labs" / "gallery.py"
    if gallery.is_file():  # ships beside the labs, and a student can run it
        out["labs/gallery.py (strings)"] = source_strings(gallery.read_text(encoding="utf-8"))
    return out


def source_strings(source: str) -> str:
    """Every string literal of a Python source (an f-string's literal parts included), one per
    paragraph: what a notebook that is not a lab (labs/gallery.py) writes on its page."""
    import ast

    return "\n\n".join(node.value for node in ast.walk(ast.parse(source))
                       if isinstance(node, ast.Constant) and isinstance(node.value, str)
                       and node.value.strip())


def text_cells(texts: dict[str, str]) -> list[Cell]:
    """Each text as a :class:`Cell` for :func:`find_leaks` (its name in place of the code)."""
    return [Cell(i, name, text) for i, (name, text) in enumerate(texts.items())]
