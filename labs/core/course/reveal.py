"""Instructor copy: fill every prediction with its reference answer so all instruments show.

Reveal mode is on when the lab runs with ``-- --reveal`` (``marimo export html lab.py -o x.html
-- --reveal``, ``marimo run lab.py -- --reveal``) or with the environment variable
``ROOFLINE_REVEAL=1``. A lab's prediction cell reads::

    x_prediction = get_x() or reveal.reference(lab, "lab01.x", value, units="FLOP/B")

where ``value`` is computed from ``labs.core`` in that cell, never typed in. Outside reveal mode
``reference`` returns None, so the gate stays closed until the student locks a prediction.
Reveal answers are not written to the ledger.
"""

from __future__ import annotations

import os
from typing import Any


def is_revealed() -> bool:
    if os.environ.get("ROOFLINE_REVEAL", "").strip().lower() in ("1", "true", "yes"):
        return True
    try:
        import marimo as mo

        return "reveal" in mo.cli_args()
    except Exception:  # no marimo context (plain import): not revealed
        return False


def reference(lab: Any, item_id: str, value: Any, units: str = "", *,
              label: str | None = None):
    """The reference answer as a ``quiz.Prediction`` in reveal mode, else None.

    ``label`` is the option text for choice items (``value`` is then the option's value).
    ``lab`` is the lab's ``LabSession``; its lab id must prefix ``item_id``.
    """
    if not is_revealed():
        return None
    from labs.core.course.quiz import Prediction

    lab_id = getattr(lab, "lab_id", None)
    if lab_id and not item_id.startswith(lab_id.split("_")[0]) and not item_id.startswith(lab_id):
        raise ValueError(f"item_id {item_id!r} does not belong to lab {lab_id!r}")
    return Prediction(item_id, value, units=units, confidence=None,
                      reason="reference answer (instructor copy)", label=label,
                      answer_type="choice" if label is not None else "numeric")
