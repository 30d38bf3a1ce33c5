"""A class's design ledgers, summarised per prediction item and per student (instructor dashboard).

Loading and grading are :mod:`labs.core.course.grading`'s (``load_ledgers``, ``load_config``,
``grade``, ``gradebook_rows``, ``event_rows``); this module only reshapes their results for
``labs/instructor_dashboard.py``:

* per item: every student's *first* committed prediction (what grading grades), the value that
  student's instrument showed (the reading the grade judged: the first ``result`` after
  the prediction; the latest when none was judged), how far off it was, the grader's
  verdicts (committed before unlocking, reasoned, explained, correct), who has not predicted or
  not explained, and the grader's flags about the item;
* calibration: share correct per confidence level (1-5);
* per student: a timeline of events;
* the gradebook as CSV bytes for a download button;
* :func:`write_synthetic_class`: a realistic class of hash-chained ledgers (with the anomalies a
  grader flags) for tests, benchmarks and demos.

Figures (plotly) are built by the ``*_figure`` functions; they use the labs' plotly template.
Nothing here writes outside the folder it is given. Student text is data, kept as written: the
dashboard shows it through ``style.text_table``/``style.notice_list`` and :func:`plot_text`
(escaped, never a link or an image, never markdown), and CSV escaping is applied only to the
CSVs (:func:`uncsv` undoes it for text read back from them).

This module is the dashboard's public face (``from labs.core import classroom``); the work is
done in ``classroom.data`` (loading and the summaries), ``classroom.synth`` (the synthetic
class) and ``classroom.dashboard_figures`` (the dashboard's figures).
"""

from __future__ import annotations

from labs.core.course.classroom.data import (  # noqa: F401  (the public API, re-exported)
    CONFIDENCE_LEVELS,
    Classroom,
    ItemSummary,
    PredictionRow,
    load_class,
    plain_number,
    summarise_items,
    uncsv,
)
from labs.core.course.classroom.dashboard_figures import (  # noqa: F401
    KIND_ORDER,
    calibration_figure,
    distribution_figure,
    plot_text,
    timeline_figure,
    timeline_points,
)
from labs.core.course.classroom.synth import (  # noqa: F401
    HOSTILE_IDS,
    HOSTILE_TEXTS,
    SYNTH_COURSE,
    SynthItem,
    catalogue_course,
    write_hostile_ledgers,
    write_synthetic_class,
)

__all__ = [
    "CONFIDENCE_LEVELS", "Classroom", "HOSTILE_IDS", "HOSTILE_TEXTS", "ItemSummary", "KIND_ORDER",
    "PredictionRow", "SYNTH_COURSE", "SynthItem", "calibration_figure", "catalogue_course",
    "distribution_figure", "load_class", "plain_number", "plot_text", "summarise_items",
    "timeline_figure", "timeline_points", "uncsv", "write_hostile_ledgers", "write_synthetic_class"
]
