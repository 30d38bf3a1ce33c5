"""The prediction lock: commit a prediction before the instrument renders, then compare and explain.

Everything a lab needs for predict -> observe -> explain, backed by :mod:`labs.core.course.ledger`.
The exact cells a lab writes are in LABS_SPEC.md §4. In short::

    get_ledger_settings, set_ledger_settings = quiz.ledger_settings()      # cell 1
    lab = quiz.LabSession("lab01", __file__, settings=get_ledger_settings(),
                          on_settings=set_ledger_settings)                 # cell 2
    lab.status()
    get_x, set_x = quiz.lock_state(lab, "lab01.x")                         # per prediction
    x_form = quiz.numeric_form(lab, "lab01.x", question=..., units=..., lo=..., hi=...,
                               locked=get_x(), on_lock=set_x)
    quiz.prediction_panel(x_form, get_x())
    x_prediction = get_x()                                                 # gate variable
    mo.stop(x_prediction is None, quiz.gate_notice("Lock your prediction ..."))

Why the lock survives a reload: ``mo.state`` resets when the page reloads, so
:func:`lock_state` seeds it with the *first* ``predict`` event of the item in the ledger. A later
different submission (a second tab, a stale page) is recorded as ``revise`` and never replaces
the first. All student text is HTML-escaped wherever it is shown.

This module is the public face (``from labs.core import quiz``); the work is done in
``course.answers`` (the :class:`Prediction`, which prediction counts, the ratio rules and
the boundary of a tolerance, re-exported through ``quiz.prediction``), ``quiz.prediction``
(reading typed numbers), ``quiz.session`` (the
:class:`LabSession`: settings, events, the first commit, changing folders), ``quiz.status`` (the
ledger status line and its controls), ``quiz.lock`` (lock state and prediction forms) and
``quiz.explain`` (compare and explain).
"""

from __future__ import annotations

from labs.core.course.quiz.explain import (  # noqa: F401  (the public API, re-exported)
    MAX_TEXT_CHARS,
    compare,
    explain_form,
    graded_reading,
    recorded_comparison,
)
from labs.core.course.quiz.instruments import (  # noqa: F401
    DIMENSIONS,
    Instruments,
    locked_items,
)
from labs.core.course.quiz.lock import (  # noqa: F401
    LOCK_LABEL,
    PredictionForm,
    choice_form,
    gate_notice,
    lock_state,
    locked_card_html,
    log_steps,
    numeric_form,
    prediction_panel,
    simulate_submit,
)
from labs.core.course.quiz.prediction import (  # noqa: F401
    CONFIDENCE_OPTIONS,
    GRADE_TOLERANCE,
    MAX_REASON_CHARS,
    SPOT_ON_RATIO,
    Prediction,
    distinct_texts,
    first_prediction,
    is_reasoned,
    parse_number,
    ratio_off,
    ratio_verdict,
    reference_value,
    verdict_kind,
    within_factor,
)
from labs.core.course.quiz.session import (  # noqa: F401
    MEMORY_LEDGERS,
    LabSession,
    ledger_settings,
    resolved_settings,
)

__all__ = [
    "choice_form", "compare", "CONFIDENCE_OPTIONS", "DIMENSIONS", "explain_form", "graded_reading",
    "recorded_comparison",
    "first_prediction", "gate_notice", "Instruments", "is_reasoned",
    "LabSession", "ledger_settings", "lock_state", "locked_items", "log_steps", "numeric_form",
    "parse_number", "Prediction", "PredictionForm", "prediction_panel", "ratio_off", "ratio_verdict",
    "reference_value", "resolved_settings", "simulate_submit", "within_factor",
]
