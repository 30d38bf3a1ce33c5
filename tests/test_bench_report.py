"""benchmarks/bench_labs.py's report: the README's table is what the command prints, ranges
over runs, every missed target said next to its figure, the machine as detected."""

from __future__ import annotations

import importlib.util
import json
from argparse import Namespace
from pathlib import Path

import pytest

from labs.core.measure import device

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_labs.py"
spec = importlib.util.spec_from_file_location("bench_labs", BENCH)
B = importlib.util.module_from_spec(spec)
spec.loader.exec_module(B)
REF = B.REFERENCE.name


def _row(name, cold, p50, p95, export, pages=(100, 200)):
    return {"notebook": name, "cold_s": cold, "update": {"p50_ms": p50, "p95_ms": p95},
            "student_export_s": export, "student_page_kb": pages[0],
            "instructor_page_kb": pages[1]}


RUNS = [
    {"floor": {"cold_s": 0.9}, REF: _row(REF, 1.0, 30.0, 36.0, 2.2),
     "lab_01.py": _row("lab_01.py", 1.2, 6.0, 28.0, 2.5),
     "lab_02.py": _row("lab_02.py", 1.6, 5.0, 20.0, 3.4, (90, 320))},
    {"floor": {"cold_s": 1.1}, REF: _row(REF, 1.1, 31.0, 40.0, 2.4),
     "lab_01.py": _row("lab_01.py", 1.3, 6.5, 24.0, 2.6),
     "lab_02.py": _row("lab_02.py", 1.8, 5.5, 21.0, 3.6, (91, 321))},
]
LABELS = [REF, "lab_01.py", "lab_02.py"]


def _line(text, start):
    return next(ln for ln in text.splitlines() if ln.startswith(start))


def test_ranges_over_runs_and_misses_next_to_the_figure():
    text = B.table(RUNS, LABELS)
    lab1, lab2 = _line(text, "| lab_01.py"), _line(text, "| lab_02.py")
    assert "| 1.20–1.30 |" in lab1 and "0.20–0.30" in lab1  # cold, and cold - floor per run
    # p95 28 then 24 against < 25: missed in one run of two, said in the cell
    assert "24.0–28.0 **missed in 1 of 2 runs**" in lab1
    assert "0.60–0.78" in lab1  # x reference p95, per run
    assert "1.60–1.80 **missed**" in lab2 and "3.4–3.6 **missed**" in lab2
    assert "90–91 / 320–321 **missed**" in lab2  # instructor page over 300 KB
    assert "missed" not in _line(text, f"| {REF}")  # the reference has no targets
    assert "| floor: `import marimo, numpy, plotly.graph_objects` | 0.90–1.10 |" in text
    assert "target < 1.5" in text.splitlines()[0]


@pytest.mark.parametrize("values, target, said", [([1.0, 2.0], 1.5, "missed in 1 of 2"),
                                                  ([2.0, 3.0], 1.5, "**missed**"),
                                                  ([1.0, 1.4, None], 1.5, "")])
def test_missed_rule(values, target, said):
    assert (said in B._missed(values, target)) and (bool(said) == bool(B._missed(values, target)))


def test_caption_names_command_machine_load_and_mode():
    info = {"command": "python benchmarks/bench_labs.py --runs 2", "started":
            "2026-11-23T10:00:00+00:00", "load_before": 1.5, "load_after": 2.0,
            "machine": {**device.machine_description(), "line": device.machine_line(),
                        "marimo": "0.25.2", "plotly": "7.1.0", "numpy": "2.4.6"}}
    args = Namespace(bytecode="cached", runs=2, cold_runs=3, no_updates=False, rounds=12,
                     baseline=None, no_export=False, export_runs=3)
    text = B.markdown(info, RUNS, LABELS, args)
    first = text.splitlines()[0]
    assert "median of 3 cold runs, of 3 student-copy exports" in first
    assert "`python benchmarks/bench_labs.py --runs 2`" in first and "2026-11-23 10:00 UTC" in first
    assert device.machine_line() in first and device._cpu_model() in first
    assert "load average 1.50 → 2.00" in first and "bytecode cached" in first
    assert "2 run(s) fixed in advance" in first


def test_before_after_uses_the_same_runs():
    runs = [{**r, "lab_01.py (baseline)": _row("lab_01.py (baseline)", c, 0, 0, e)}
            for r, c, e in zip(RUNS, (1.5, 1.7), (2.9, 3.1))]
    text = B.before_after(runs, [REF, "lab_01.py (baseline)", "lab_01.py"])
    row = _line(text, "| lab_01.py")
    assert "1.60 (n/a) → 1.25 (n/a)" in row  # medians over the runs (no CPU time given)
    assert "3.00 (n/a) → 2.55 (n/a)" in row
    assert "0.60 → 0.25" in row  # minus the floor's median (1.0)


def test_before_after_pairs_each_round():
    """Each round ran the two copies back to back: the table gives the median of the per-round
    differences and in how many rounds the new copy was faster, so drift cannot fake a gain."""
    runs = [{"floor": {"cold_s": 1.0},
             "lab_01.py (baseline)": {"cold_s": 1.6, "cold_runs_s": [1.5, 1.9, 1.6],
                                      "student_export_runs_s": [3.0, 3.2]},
             "lab_01.py": {"cold_s": 1.6, "cold_runs_s": [1.4, 1.8, 1.7],
                           "student_export_runs_s": [3.1, 3.3]}}]
    row = _line(B.before_after(runs, ["lab_01.py (baseline)", "lab_01.py"]), "| lab_01.py")
    assert "-0.10 (faster in 2 of 3)" in row  # rounds: -0.1, -0.1, +0.1
    assert "+0.10 (faster in 0 of 2)" in row  # the export got slower in both rounds: said


def test_markdown_floor_row_is_measured_against_the_floor():
    runs = [{**r, B.FLOOR_FIRST: {"cold_s": r["floor"]["cold_s"] + d}} for r, d in zip(RUNS, (.2, .3))]
    row = _line(B.table(runs, LABELS), f"| {B.FLOOR_FIRST}")
    assert "| 1.10–1.40 | 0.20–0.30 |" in row  # its cold run, and minus the same run's floor
    assert "marimo.md(" in row
    assert B.FLOOR_FIRST not in B.table(RUNS, LABELS)  # an older JSON without it: no empty row


def test_cold_runs_are_interleaved_round_by_round(tmp_path, monkeypatch):
    order = []

    def fake(cmd, n, *, tree=B.REPO):
        order.append(cmd[-1])
        if cmd[-1] == "broken":
            return {"error": "boom"}
        return {"cold_s": 1.0, "cold_cpu_s": 0.9, "cold_runs_s": [1.0 + len(order) / 100]}

    monkeypatch.setattr(B, "cold_runs", fake)
    got = B.interleaved_cold_runs({"a": (["x", "a"], B.REPO), "b": (["x", "b"], B.REPO),
                                   "c": (["x", "broken"], B.REPO)}, 3)
    assert order == ["a", "b", "broken", "a", "b", "a", "b"]  # rounds, a failure not retried
    assert got["a"]["cold_runs_s"] == [1.01, 1.04, 1.06] and got["a"]["cold_s"] == 1.04
    assert got["c"] == {"error": "boom"}


def test_exports_are_interleaved_and_the_student_copy_repeated(monkeypatch):
    calls = []

    def fake(path, *, tree=B.REPO, modes=("student", "instructor")):
        calls.append((path, modes))
        if path == "broken":
            return {"student_error": "boom"}
        return {"student_export_s": 3.0 + len(calls) / 10, "student_export_cpu_s": 2.0,
                **({"instructor_page_kb": 200.0} if "instructor" in modes else {})}

    monkeypatch.setattr(B, "exports", fake)
    items = [("a", "a", B.REPO), ("b", "broken", B.REPO)]
    got = B.interleaved_exports(items, 3)
    assert calls == [("a", ("student", "instructor")), ("broken", ("student", "instructor")),
                     ("a", ("student",)), ("a", ("student",))]  # a failed copy is not retried
    assert got["a"]["student_export_runs_s"] == [3.1, 3.3, 3.4]
    assert got["a"]["student_export_s"] == 3.3 and got["a"]["instructor_page_kb"] == 200.0
    assert got["b"] == {"student_error": "boom"}


# The browser mode's report (benchmarks/bench_browser.py)
_BB = importlib.util.spec_from_file_location(
    "bench_browser", BENCH.parent / "bench_browser.py")
BB = importlib.util.module_from_spec(_BB)
_BB.loader.exec_module(BB)


def _brow(name, first, p50, p95, load=1.0):
    return {"notebook": name, "first_figure_s": first, "all_sent_s": first,
            "all_drawn_s": first + 1, "figures": 2, "p50_ms": p50, "p95_ms": p95,
            "send_p50_ms": 5.0, "kernel_p50_ms": 40.0, "render_p50_ms": 30.0,
            "first_p50_ms": p50 * 0.6, "load_before": load, "load_after": load}


def test_browser_ratio_is_to_the_reference_measured_right_before():
    runs = [{"floor": None, "pairs": [(_brow("ref.py", 3, 100, 200), _brow("lab_a.py", 4, 50, 90)),
                                      (_brow("ref.py", 3, 200, 400), _brow("lab_b.py", 6, 50, 120))]}]
    text = BB.table(runs)
    a, b = _line(text, "| lab_a.py"), _line(text, "| lab_b.py")
    assert "| 0.50 / 0.45 |" in a and "missed" not in a  # 50/100, 90/200
    assert "| 50 / 90 |  | 30 | 0.50" in a  # the first figure changed, beside the last
    assert all(ln.count("|") == 12 for ln in text.splitlines() if ln.startswith("|"))
    assert "| 0.25 / 0.30 |" in b  # against its own reference (200, 400), not the first one
    assert "6.0 **missed**" in b and "120 **missed**" in b  # first figure > 5 s, p95 > 100 ms
    assert "100–200 / 200–400" in _line(text, "| reference_notebook.py")


def test_browser_baseline_is_its_own_row_against_the_same_reference():
    ref = _brow("ref.py", 3, 200, 400)
    runs = [{"floor": None, "pairs": [(ref, _brow("lab_a.py", 4, 50, 90)),
                                      (ref, _brow("lab_a.py (baseline)", 4, 100, 300))]}]
    text = BB.table(runs)
    assert "| 0.25 / 0.23 |" in _line(text, "| lab_a.py |")
    assert "| 0.50 / 0.75 **missed** |" in _line(text, "| lab_a.py (baseline) |")


def test_replay_states_follow_each_figure_the_steps_changed():
    a0, a1, a2, b0, b2, c1 = ({"n": n} for n in ("a0", "a1", "a2", "b0", "b2", "c1"))
    # step 1 changed figure 1 and mounted figure 3; step 2 changed figures 1 and 2
    states = BB.replay_states({1: a0, 2: b0, 9: {"n": "never changed"}},
                              [{1: a1, 3: c1}, {1: a2, 2: b2}])
    # one slot per cell whose output changed (a page replay shows each in its own cell):
    # None where that cell had no output yet
    assert states == [[a0, b0, None], [a1, b0, c1], [a2, b2, c1]]
    assert BB.replay_states({1: a0}, [{}, {}]) == [[], [], []]  # nothing changed: nothing to play


def test_a_page_replay_lays_the_outputs_out_as_the_lab_s_page(tmp_path):
    # the floor on the lab's page: the stacked cell replaced by one cell per cell of the
    # lab's page, those the steps changed read by the replay slider and the others showing
    # the page as it stood; the slider in a cell of its own right before the widget's cell;
    # a real marimo notebook that marimo can load
    from marimo._ast.load import load_app

    def cells(path):
        app = load_app(str(path))
        app._maybe_initialize()
        return [c.code for c in app._graph.cells.values()]

    stacked = cells(BB.REPLAY_NOTEBOOK)
    text = BB.REPLAY_NOTEBOOK.read_text()
    assert BB.STACKED_CELL in text and BB.STEP_CELL in text
    for page, slots, widget in ((4, [1, 2], 0), (6, [5], 3), (3, [0, 2], -1)):
        path = tmp_path / f"replay_{page}_{widget}.py"
        path.write_text(BB.page_notebook([None] * page, slots, widget))
        laid = cells(path)
        assert len(laid) == len(stacked) - 2 + page + 1  # the page's cells and the slider
        body = laid[len(stacked) - 2:]
        slider = body.index(next(c for c in body if "mo.ui.slider" in c))
        assert slider == max(widget, 0)  # right before the widget's cell, or first
        body.pop(slider)
        for i, code in enumerate(body):
            if i in slots:
                assert f"states[step.value][{slots.index(i)}]" in code
            else:
                assert f'replayed["page"][{i}]' in code and "step" not in code
        assert BB.STACKED_CELL not in path.read_text()


def test_only_a_miss_over_a_met_floor_is_replayed_on_the_lab_s_page():
    states, whole = [[{"a": 0}]], {"cells": [None, {"a": 0}], "slots": [1], "widget_cell": 0}
    w = lambda step, floor: {"p95_ms": step, "replay": {"p95_ms": floor}}  # noqa: E731
    assert BB.needs_page_floor(w(120, 90), states, whole)  # one changed cell is enough
    assert not BB.needs_page_floor(w(95, 90), states, whole)  # met
    assert not BB.needs_page_floor(w(120, 110), states, whole)  # its floor misses already
    assert not BB.needs_page_floor({"p95_ms": 120}, states, whole)  # no floor measured
    assert not BB.needs_page_floor(w(120, 90), states, {})  # no page recorded


def _widget(label, p50, p95, figures=2, steps=2, replay=None):
    w = {"label": label, "kind": "slider", "steps": steps, "redraws": steps, "p50_ms": p50,
         "p95_ms": p95, "figures_changed": figures}
    if replay:
        w["replay"] = {"redraws": steps, "p50_ms": replay[0], "p95_ms": replay[1]}
    return w


def test_widget_table_sets_each_step_against_its_replayed_floor():
    def lab(p50, rep):
        return {**_brow("lab_a.py", 4, p50, p50 + 20),
                "replay": {"redraws": 6, "p50_ms": rep[0] - 50, "p95_ms": 240}, "widgets": [
            _widget("N", p50, p50 + 20, figures=8, replay=rep),
            _widget("T", 90, 95, replay=(60, 70)), _widget("T", 300, 310, replay=(250, 260)),
            {**_widget("machine", None, None), "redraws": 0}]}
    ref = _brow("ref.py", 3, 200, 400)
    runs = [{"floor": None, "pairs": [(ref, lab(180, (150, 130)))]},
            {"floor": None, "pairs": [(ref, lab(200, (120, 110)))]}]
    text = BB.widget_table(runs)
    n = _line(text, "| lab_a.py | N |")
    # 4 figures per step, the range over runs, the floor missed in both, the gap per run
    # and why it misses (its floor misses in every run that missed), floor p95 / ref p95 400
    assert ("| 4.0 | 180–200 / 200–220 | 120–150 / 110–130 **missed** | +30–+80 | "
            "out of reach: its floor misses too | 0.28–0.33 |") in n
    rows = [ln for ln in text.splitlines() if ln.startswith("| lab_a.py | T |")]
    assert len(rows) == 2  # one label twice in a lab: two rows, never merged
    assert "| 60 / 70 | +30 | met |" in rows[0]
    assert "| 250 / 260 **missed** | +50 | out of reach" in rows[1]
    assert "machine" not in text  # it redrew no figure
    lab_row = _line(BB.table(runs), "| lab_a.py")
    assert lab_row.count("|") == 12 and "| 180–200 / 200–220 **missed** | 70–100 / 240 |" in lab_row


# The dashboard's load time (benchmarks/bench_dashboard.py)
_BD = importlib.util.spec_from_file_location("bench_dashboard", BENCH.parent / "bench_dashboard.py")
BD = importlib.util.module_from_spec(_BD)
_BD.loader.exec_module(BD)


def test_dashboard_benchmark_prints_every_run_with_the_machine(capsys):
    assert BD.main(["--students", "6", "--runs", "2"]) == 0
    out = capsys.readouterr().out
    caption, row = out.splitlines()[0], _line(out, "| 6 |")
    assert "`python benchmarks/bench_dashboard.py --students 6 --runs 2`" in caption
    assert device.machine_line() in caption and "load average" in caption
    assert "2 run(s) fixed in advance" in caption
    per_run = row.rstrip(" |").split("| ")[-1].split(", ")
    assert len(per_run) == 2 and all(float(x) > 0 for x in per_run)  # both runs, as measured


def test_dashboard_benchmark_refuses_nonsense():
    with pytest.raises(SystemExit):
        BD.main(["--students", "0"])


def _hierarchy_run(scale: float, time_utc: str, plateau_gbs: float) -> dict:
    sweep = [{"bytes": b, "status": "ok", "gbs": g * scale, "median_gbs": g * scale * 0.95,
              "spread": 0.1} for b, g in ((16384, 150.0), (1 << 20, 56.0), (1 << 28, 17.0))]
    sweep.append({"bytes": 1 << 29, "status": "budget"})
    return {"cpu": "Test CPU", "date": "2026-11-23", "time_utc": time_utc, "torch": "2.13",
            "threads": 1, "load_average": [0.5, 0.5, 0.5], "cache_source": "sysfs",
            "caches": [{"name": "L1d", "bytes": 32768, "scope": "per core"}],
            "seconds": {"sweep": 10.0, "budget": 25.0, "detect_incl_torch_import": 3.0},
            "sweep": sweep,
            "plateaus": [{"name": "DRAM", "lo_bytes": 1 << 26, "hi_bytes": 1 << 28,
                          "gbs": plateau_gbs, "spread": 0.02}],
            "overhead": {"overhead_s": 2e-6 * scale}, "gemm_fp32_1thread": {"best_gflops": 90.0},
            "sawtooth": {"tile": 16, "dips": [0.93, 0.83]}}


def test_hierarchy_benchmark_shows_every_run_as_a_range():
    spec_h = importlib.util.spec_from_file_location(
        "bench_hierarchy", BENCH.parent / "bench_hierarchy.py")
    H = importlib.util.module_from_spec(spec_h)
    spec_h.loader.exec_module(H)
    text = H.table([_hierarchy_run(1.0, "20:01", 17.0), _hierarchy_run(1.1, "20:03", 18.5)])
    assert "2 run(s)" in text and "run 1 at 20:01 UTC" in text and "run 2 at 20:03 UTC" in text
    assert "| 16 KiB | 150.0–165.0 |" in text  # best GB/s: min–max over the runs
    assert "| 512 MiB | — | — | — |" in text  # a size no run measured says so
    assert "| 1 | DRAM |" in text and "| 2 | DRAM |" in text and "18.5" in text
    assert "Per-call overhead 2.00–2.20 µs" in text and "GFLOP/s" in text


def test_plotly_react_benchmark_reports_each_notebook_over_its_figures():
    spec_p = importlib.util.spec_from_file_location(
        "bench_plotly_react", BENCH.parent / "bench_plotly_react.py")
    P = importlib.util.module_from_spec(spec_p)
    spec_p.loader.exec_module(P)
    figs = {"a": {"react_ms": 10.0, "newplot_ms": 40.0}, "b": {"react_ms": 30.0,
            "newplot_ms": 80.0}, "c": {"react_ms": 21.0, "newplot_ms": 50.0}}
    text = P.markdown("python benchmarks/bench_plotly_react.py", "2026-11-23 22:00", "Test CPU",
                      (0.5, 0.7), "4.1.1", {"lab_01.py": figs, "empty.py": {}})
    assert "2026-11-23 22:00 UTC** on Test CPU" in text and "plotly.js 4.1.1" in text
    assert "load average 0.5 → 0.7" in text
    assert "| lab_01.py | 3 | 21 (10–30) | 50 |" in text  # median, then min–max over figures
    assert "| empty.py | 0 | | |" in text and "stripped" not in text
    fig = {"data": [{"y": [1]}], "layout": {"annotations": [{}], "shapes": [{}], "title": "t",
                                            "xaxis": {"type": "log", "minor": {"showgrid": True}}}}
    assert P.bare(fig)["layout"] == {"title": "t", "showlegend": False,
                                     "xaxis": {"type": "log", "minor": {"showgrid": False}}}
    assert fig["layout"]["annotations"] == [{}]  # the original is left as it was


def test_browser_benchmarks_write_their_command_as_typed():
    assert BB.command_line("bench_plotly_react.py", ["--lab", "lab_03", "--bare"]) == \
        "python benchmarks/bench_plotly_react.py --lab lab_03 --bare"
    assert BB.command_line("bench_first_reveal.py", []) == "python benchmarks/bench_first_reveal.py"


def _pair(step_p95, floor_p95, page_p95=None, ref_p95=300.0, figures=1):
    w = _widget("w", step_p95 - 10, step_p95, figures=figures,
                replay=None if floor_p95 is None else (floor_p95 - 10, floor_p95))
    if page_p95 is not None:
        w["replay_page"] = {"redraws": 2, "p50_ms": page_p95 - 10, "p95_ms": page_p95,
                            "cells": 3, "page_cells": 40}
    return w, {"p95_ms": ref_p95}


@pytest.mark.parametrize("runs, kind, words", [
    ([(90, 60), (99, 70)], BB.MET, "met"),
    ([(130, 120), (140, 101)], BB.FLOOR, "out of reach: its floor misses too"),
    ([(90, 60), (130, 120)], BB.FLOOR, "out of reach: its floor misses too (met in 1 of 2)"),
    ([(130, 70), (140, 120)], BB.OWN, "missed: the lab's own cost in 1 of 2"),
    ([(130, 70), (95, 60)], BB.OWN, "missed: the lab's own cost in 1 of 2 (met in 1 of 2)"),
    ([(130, None), (140, None)], BB.OWN, "missed: the lab's own cost in 2 of 2"),  # no floor
    # the same outputs on the lab's page (third figure: that floor's p95)
    ([(130, 70, 120), (140, 120)], BB.PAGE,
     "out of reach on its page: the same outputs on the lab's page miss too"),
    ([(130, 70, 120), (95, 60)], BB.PAGE,
     "out of reach on its page: the same outputs on the lab's page miss too (met in 1 of 2)"),
    ([(130, 70, 120), (140, 70, 90)], BB.OWN, "missed: the lab's own cost in 1 of 2"),
    ([(130, 70, 95), (140, 70)], BB.OWN, "missed: the lab's own cost in 2 of 2"),
])
def test_a_widget_out_of_reach_only_where_its_floor_misses_too(runs, kind, words):
    # the general rule: a miss is "out of reach" only when, in every run that missed, the same
    # output changes replayed alone (stacked in one cell, or one per cell as the lab shows
    # them) missed as well; floors that met the target, or none measured, leave the miss to
    # the lab
    assert BB.verdict([_pair(*r) for r in runs]) == (kind, words)
    assert BB.verdict([_pair(*r) for r in runs], target=1e9)[0] == BB.MET


def test_a_step_that_only_removes_a_figure_is_no_redraw_verdict():
    w, ref = _pair(150, None, figures=0)
    assert BB.verdict([(w, ref)])[0] == BB.REMOVED
    runs = [{"floor": None, "pairs": [(ref, {**_brow("lab_a.py", 4, 100, 150), "widgets": [w]})]}]
    assert "| lab_a.py | 0 | 0 | 0 | 0 | 0 | 0 |" in BB.widget_summary(runs)


def test_widget_summary_counts_each_lab_by_verdict_and_ratio():
    def lab(*pairs):
        ws = []
        for label, floors in pairs:
            w, _ = _pair(*floors)
            ws.append({**w, "label": label})
        return {**_brow("lab_a.py", 4, 100, 150), "widgets": ws}
    ref = _brow("ref.py", 3, 200, 300)
    widgets = [("met", (90, 60)), ("floor", (200, 180)), ("own", (150, 70)),
               ("page", (150, 70, 130))]
    runs = [{"floor": None, "pairs": [(ref, lab(*widgets))]} for _ in range(2)]
    # floors 60, 180, 70 and 70 against half the reference's 300 ms p95: one above
    assert "| lab_a.py | 4 | 1 | 1 | 1 | 1 | 1 |" in BB.widget_summary(runs)
    # the floor on the lab's page beside the widget that needed it, nowhere else
    table = BB.widget_table(runs)
    assert _line(table, "| lab_a.py | page |").endswith(
        "| 120 / 130 **missed** (3 of 40 cells) |")
    assert _line(table, "| lab_a.py | own |").endswith("| 0.23 |  |")


def test_report_prints_a_kept_browser_run_again(tmp_path, capsys):
    w, ref = _pair(90, 60)
    info = {"command": "python benchmarks/bench_labs.py --browser --runs 1",
            "started": "2026-11-24T22:47:54+00:00", "machine": B.machine(),
            "load_before": 0.6, "load_after": 0.9, "complete": True,
            "settings": {"runs": 1, "steps": 2, "replay": True},
            "runs": [{"floor": None,
                      "pairs": [(_brow("ref.py", 3, 200, 300),
                                 {**_brow("lab_a.py", 4, 80, 90), "widgets": [w]})]}]}
    kept = tmp_path / "run.json"
    kept.write_text(json.dumps(info))
    assert B.main(["--report", str(kept)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("**`python benchmarks/bench_labs.py --browser --runs 1`, "
                          "2026-11-24 22:47 UTC**")
    assert "load average 0.60 → 0.90" in out and "| lab_a.py | 1 | 1 | 0 | 0 | 0 |" in out
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(SystemExit):
        B.main(["--report", str(tmp_path / "bad.json")])


def _w(oid, label="w", hidden=False, kind="slider"):
    w = {"id": f"bench-{oid}", "kind": kind, "label": label, "oid": oid}
    return {**w, "hidden": True} if hidden else w


def test_a_widget_shown_by_several_cells_is_stepped_once():
    # Lab 2 shows its widgets in four places: one marimo element (object-id) is one widget,
    # stepped at its first visible copy; the row keeps how many places show it
    page = [_w("a-0", "Device"), _w("a-1", "Context"), _w("b-0", "N", hidden=True),
            _w("a-0", "Device"), _w("a-1", "Context"), _w("b-0", "N"), _w("c-0", "T"),
            _w(None, "no oid"), _w(None, "no oid")]
    got = BB.distinct_widgets(page)
    assert [i for i, _w_ in got] == [0, 1, 5, 6, 7, 8]  # b-0: its first visible copy
    assert [w["copies"] for _i, w in got] == [2, 2, 2, 1, 1, 1]
    assert got[2][1]["oid"] == "b-0" and "hidden" not in got[2][1]
    assert [i for i, _w_ in BB.distinct_widgets([_w("h", hidden=True)] * 2)] == [0]


def test_a_widget_is_found_again_by_its_object_id_before_its_label():
    # two sliders share a label (Lab 5: "Register tile r", once per part): the second is
    # found by its object-id even when the page's order changed, not as "the first T"
    second = _w("y-0", "T")
    now = [_w("n-0", "N"), _w("x-0", "T"), _w("y-0", "T")]
    assert BB.choose_widget(now, 2, second) is now[2]
    assert BB.choose_widget(now[::-1], 2, second) is now[::-1][0]
    # several copies: the one at its old place, else its first visible copy
    copies = [_w("y-0", "T", hidden=True), _w("x-0", "T"), _w("y-0", "T"), _w("y-0", "T")]
    assert BB.choose_widget(copies, 3, second) is copies[3]
    assert BB.choose_widget(copies, 1, second) is copies[2]
    # a row without an object-id (a page older than the oid): place and label, then label
    old = {"id": "bench-w2", "kind": "slider", "label": "T"}
    assert BB.choose_widget(now, 2, old) is now[2]
    assert BB.choose_widget(now, 0, old) is now[1]
    assert BB.choose_widget(now, 2, {**old, "label": "gone"}) is None


def test_widget_filter_takes_a_label_anywhere_or_in_one_lab():
    # --widget TEXT steps every lab's widget whose label holds TEXT; LAB:TEXT only one lab's
    assert BB.wanted("lab_04_fusion.py", "Batch", ())
    assert BB.wanted("lab_04_fusion.py", "Batch", ("Batch",))
    assert BB.wanted("lab_06_many_chips.py", "Batch T (tokens)", ("Batch",))
    assert not BB.wanted("lab_06_many_chips.py", "Batch T (tokens)", ("lab_04:Batch",))
    assert BB.wanted("lab_04_fusion.py", "Batch", ("lab_04:Batch",))
    assert not BB.wanted("lab_04_fusion.py", "Heads", ("lab_04:Batch", "lab_07:Heads"))
    assert BB.wanted("lab_04_fusion.py", "Heads", ("lab_04:Batch", "Heads"))
    assert not BB.wanted("lab_04_fusion.py", "Device", ("lab_04:Batch",))


def test_a_widget_shown_in_several_places_says_so_in_the_report():
    w, ref = _pair(90, 60)
    runs = [{"floor": None, "pairs": [(ref, {**_brow("lab_a.py", 4, 80, 90), "widgets": [
        {**w, "label": "Device", "copies": 4}, {**w, "label": "N", "copies": 1},
        {**w, "label": "old row"}]})]}]  # a row saved before copies was kept
    text = BB.widget_table(runs)
    assert "| lab_a.py | Device (shown in 4 places) |" in text
    assert "| lab_a.py | N |" in text and "| lab_a.py | old row |" in text
    lines = BB.widget_lines(runs)
    assert "'Device' (shown in 4 places):" in lines[0] and "'N':" in lines[1]


def test_report_reads_a_results_file_written_before_object_ids():
    kept = BENCH.parent / "results" / "browser-quiet-2026-11-24.json"
    if not kept.exists():
        pytest.skip(f"{kept.name} is not in this checkout")
    runs = json.loads(kept.read_text(encoding="utf-8"))["runs"]
    assert not any("oid" in w for run in runs for _ref, lab in run["pairs"]
                   for w in lab.get("widgets", []))
    assert "| notebook |" in BB.widget_summary(runs) and "| notebook |" in BB.widget_table(runs)
    assert BB.widget_lines(runs)
