"""The server-side split of a widget step (benchmarks/bench_server_split.py): its log reading."""

import importlib.util
from pathlib import Path

import pytest

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_server_split.py"
_spec = importlib.util.spec_from_file_location("bench_server_split", _PATH)
S = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(S)

LOG = """\
100.0 kernel-start
101.0 cell-start a
102.0 cell-end a
0 BEGIN
1000.0 kernel-start
1008.0 cell-start a
1011.0 cell-end a
1011.5 cell-start b
1013.0 cell-end b
1014.0 kernel-end
1019.0 completed-run
2000.0 kernel-start
2006.0 cell-start a
2007.0 cell-end a
2008.0 kernel-end
3000.0 kernel-start
3001.0 cell-start a
"""


def test_steps_are_read_from_the_kernel_taking_the_value_after_the_last_begin():
    steps = S.split_steps(LOG.splitlines())
    # before BEGIN: the page's load, not a step; the last step never finished: left out
    assert steps == [
        {"first_cell": 8.0, "cells": 4.5, "cell_runs": 2, "kernel": 14.0, "sent": 19.0},
        {"first_cell": 6.0, "cells": 1.0, "cell_runs": 1, "kernel": 8.0, "sent": None},
    ]
    assert S.medians(steps) == {"first_cell": 7.0, "cells": 2.8, "kernel": 11.0, "sent": 19.0}
    assert S.split_steps([]) == [] and S.medians([])["cells"] is None


def test_marks_go_to_the_file_named_in_the_environment(tmp_path, monkeypatch):
    marks = tmp_path / "marks"
    monkeypatch.setenv(S.MARK_ENV, str(marks))
    S.mark("kernel-start")
    S.mark("kernel-end")
    (t0, a), (t1, b) = (line.split(" ", 1) for line in marks.read_text().splitlines())
    assert (a, b) == ("kernel-start", "kernel-end") and float(t1) >= float(t0)


def test_the_wrapped_functions_still_exist_in_this_marimo():
    # the split wraps these by name: a marimo that renames one fails here, not in silence
    from marimo._runtime import runtime
    from marimo._runtime.runner import cell_runner
    from marimo._server.api.endpoints.ws import ws_message_loop
    assert callable(runtime.Kernel.set_ui_element_value)
    assert callable(cell_runner.Runner.run)
    assert callable(ws_message_loop.prepare_wire_message)


def test_a_lab_that_does_not_exist_is_refused():
    with pytest.raises(SystemExit):
        S.main(["--lab", "lab_99_nothing", "--widget", "x"])
