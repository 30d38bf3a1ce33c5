"""Instructor copy: fill every prediction with its reference answer so all instruments show.

Reveal mode is on when the lab runs with ``-- --reveal`` (``marimo export html lab.py -o x.html
-- --reveal``, ``marimo run lab.py -- --reveal``) or with the environment variable
``ROOFLINE_REVEAL=1`` (``true``, ``yes``, ``on``). Set to any other value (``0``, ``false``,
``no``, ``off``, empty) the variable means "no answers", even with ``--reveal``. A lab's prediction cell reads::

    x_prediction = get_x() or reveal.reference(
        lab, "lab01.x", value, units="FLOP/B",
        explanation=f"AI = ... = {ai:.0f} FLOP/B, below the ridge ({ridge:.0f}) ...")
    reveal.card(x_prediction)

where ``value`` and every number in ``explanation`` are computed from ``labs.core`` in that
cell, never typed in. Outside reveal mode ``reference`` returns None, so the gate stays closed
until the student locks a prediction, and ``card`` shows nothing (a student's own prediction is
shown by the form's locked card). In reveal mode the prediction form is replaced by its question
(:func:`quiz.prediction_panel`) and ``card`` shows the reference answer with its explanation,
so the widget never shows a value the comparisons do not use. Reveal answers are not written
to the ledger.
"""

from __future__ import annotations

import html
import os
from typing import Any

__all__ = [
    "FALSE_VALUES", "REFERENCE_REASON", "TRUE_VALUES", "band_html", "card", "env_reveal",
    "is_revealed", "reference", "reference_card_html"
]

REFERENCE_REASON = "reference answer (instructor copy)"


#: ``ROOFLINE_REVEAL`` values that turn the instructor copy on (any case, spaces ignored).
TRUE_VALUES = ("1", "true", "yes", "on")
#: Values that mean "no answers"; so does any other value the variable is set to, and it then
#: wins over ``--reveal`` (an instructor who writes ``ROOFLINE_REVEAL=0`` means no answers).
FALSE_VALUES = ("0", "false", "no", "off", "")


def env_reveal(value: str | None) -> bool | None:
    """What a ``ROOFLINE_REVEAL`` value says: True for a true value (:data:`TRUE_VALUES`),
    False for any other value it is set to (``0``, ``false``, ``no``, ``off``, empty, in any
    case, with spaces around, or anything unrecognised: answers stay hidden when in doubt),
    None when it is not set (then ``--reveal`` decides)."""
    if value is None:
        return None
    return value.strip().lower() in TRUE_VALUES


def is_revealed() -> bool:
    """Whether this run is the instructor copy: ``ROOFLINE_REVEAL`` when it is set
    (:func:`env_reveal`), else ``--reveal`` among the notebook's arguments."""
    said = env_reveal(os.environ.get("ROOFLINE_REVEAL"))
    if said is not None:
        return said
    try:
        import marimo as mo

        return "reveal" in mo.cli_args()
    except Exception:  # no marimo context (plain import): not revealed
        return False


def reference(lab: Any, item_id: str, value: Any, units: str = "", *,
              label: str | None = None, explanation: str = ""):
    """The reference answer as a ``quiz.Prediction`` in reveal mode, else None.

    ``label`` is the option text for choice items (``value`` is then the option's value).
    ``explanation``: why this is the answer, in a sentence or two, its numbers computed from
    ``labs.core`` by the calling cell; shown by :func:`card` in the instructor copy only.
    ``lab`` is the lab's ``LabSession``; its lab id must prefix ``item_id``.
    """
    if not is_revealed():
        return None
    from labs.core.course.quiz.prediction import Prediction

    lab_id = getattr(lab, "lab_id", None)
    if lab_id and not item_id.startswith(lab_id.split("_")[0]) and not item_id.startswith(lab_id):
        raise ValueError(f"item_id {item_id!r} does not belong to lab {lab_id!r}")
    if not isinstance(explanation, str):
        raise ValueError(f"explanation must be a string, got {type(explanation).__name__}")
    return Prediction(item_id, value, units=units, confidence=None,
                      reason=explanation.strip() or REFERENCE_REASON, label=label,
                      answer_type="choice" if label is not None else "numeric", reference=True)


def card(prediction: Any):
    """The reference answer's card (answer and explanation) when ``prediction`` is one, else
    None: a prediction cell ends with ``reveal.card(x_prediction)``, which shows nothing in a
    student's copy."""
    if not getattr(prediction, "reference", False):
        return None
    import marimo as mo

    return mo.callout(mo.Html(reference_card_html(prediction)), kind="info")


def reference_card_html(prediction: Any) -> str:
    """The instructor copy's reference answer and its explanation as HTML (escaped), with the
    item's band (:func:`band_html`) for a numeric item."""
    body = (f"<div><strong>Reference answer (instructor copy):</strong> "
            f"{html.escape(prediction.display())}</div>")
    if prediction.reason:
        body += f"<div><em>Why:</em> {html.escape(prediction.reason)}</div>"
    if getattr(prediction, "answer_type", "numeric") != "choice":
        body += band_html(prediction.item_id)
    return body + ('<div style="font-size:.85em;opacity:.75">Students see the answer they '
                   "locked here; the comparisons below use this reference answer.</div>")


def band_html(item_id: str) -> str:
    """Why the item's band is what it is, for the instructor copy: the tolerance it is graded
    with and where each named wrong model and published measurement lands
    (``labs.core.physics.misconceptions``); empty for an item without a band."""
    from labs.core.physics import misconceptions
    from labs.core.physics.units import format_value

    try:
        band = misconceptions.band(item_id)
    except KeyError:
        return ""
    unit = f" {band.units}" if band.units else ""
    lo, hi = band.reference / band.tolerance, band.reference * band.tolerance
    rows = [("the reference", band.reference, "graded right")]
    rows += [(f"wrong model: {w.name}", w.value, "graded wrong") for w in band.wrong_models]
    rows += [(f"measured: {m.source}", m.value, "graded right") for m in band.measured]
    pad = ' style="padding:.1em .6em;text-align:left"'  # columns apart: "1.03 ×  2.64× off"
    cells = "".join(
        f"<tr><td{pad}>{html.escape(what)}</td>"
        f"<td{pad}>{html.escape(format_value(value) + unit)}</td>"
        f"<td{pad}>{html.escape(format_value(band.ratio(value)))}× off</td>"
        f"<td{pad}>{verdict}</td></tr>" for what, value, verdict in rows)
    head = (f"<div><em>Graded band:</em> within {html.escape(format_value(band.tolerance))}× "
            f"of the reference ({html.escape(format_value(lo))} to "
            f"{html.escape(format_value(hi) + unit)}).")
    if band.why:
        head += f" {html.escape(band.why)}"
    heads = "".join(f"<th{pad}>{h}</th>" for h in ("answer of", "value", "off by", "grade"))
    return head + f"</div><table><tr>{heads}</tr>{cells}</table>"
