"""A class's design ledgers, summarised per prediction item and per student (instructor dashboard).

Loading and grading are :mod:`labs.core.course.grading`'s (``load_ledgers``, ``load_config``,
``grade``, ``gradebook_rows``, ``event_rows``); this module only reshapes their results for
``labs/instructor_dashboard.py``:

* per item: every student's *first* committed prediction (what grading grades), the value that
  student's instrument showed (their latest ``result`` event), how far off it was, the grader's
  verdicts (committed before unlocking, reasoned, explained, correct), who has not predicted or
  not explained, and the grader's flags about the item;
* calibration: share correct per confidence level (1-5);
* per student: a timeline of events;
* the gradebook as CSV bytes for a download button;
* :func:`write_synthetic_class`: a realistic class of hash-chained ledgers (with the anomalies a
  grader flags) for tests, benchmarks and demos.

Figures (plotly) are built by the ``*_figure`` functions; they use the labs' plotly template.
Nothing here writes outside the folder it is given. Student text is data: the dashboard shows it
through marimo tables and plotly (which escape it), never as raw HTML.

This module is the dashboard's public face (``from labs.core import classroom``); the work is
done in ``classroom_data`` (loading and the summaries), ``classroom_synth`` (the synthetic
class) and ``classroom_figures`` (the figures).
"""

from __future__ import annotations

from labs.core.course.classroom_data import (  # noqa: F401  (the public API, re-exported)
    CONFIDENCE_LEVELS,
    Classroom,
    ItemSummary,
    PredictionRow,
    load_class,
    summarise_items,
)
from labs.core.course.classroom_figures import (  # noqa: F401
    KIND_ORDER,
    calibration_figure,
    distribution_figure,
    timeline_figure,
)
from labs.core.course.classroom_synth import (  # noqa: F401
    SYNTH_COURSE,
    SynthItem,
    write_synthetic_class,
)
