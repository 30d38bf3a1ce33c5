"""The course wing: the record of what each student predicted, saw and explained.

The ledger file (``ledger``: a public face over ``ledger_config``, ``ledger_events``,
``ledger_files`` and ``ledger_store``), the prediction lock and forms a lab shows (``quiz``: a
public face over ``quiz_prediction``, ``quiz_session``, ``quiz_status``, ``quiz_lock`` and
``quiz_explain``), the instructor copy's reference answers (``reveal``), every lab's prediction
items in order (``catalogue``, read from the notebooks' source with ``catalogue_reader``),
grading a class's ledgers (``grading``: a public face over ``grading_sources``,
``grading_load``, ``grading_ids``, ``grading_inputs``, ``grading_config``, ``grading_checks``,
``grading_score``, ``grading_csv``, ``grading_lms``, ``grading_feedback`` and ``grading_cli``),
the class dashboard's data and figures (``classroom``: a public face over ``classroom_data``,
``classroom_synth`` and ``classroom_figures``), and publishing the labs as a site (``export``:
a public face over ``export_index``, ``export_lab``, ``export_inspect``, ``export_offline``,
``export_wasm`` and ``export_site``).

May import: ``labs.core.physics`` and ``labs.core.ui``; never ``labs.core.measure``.
"""
