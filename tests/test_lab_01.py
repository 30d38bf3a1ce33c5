"""Lab 1 "The Memory Wall", headless: locked and unlocked runs, the OOM failure state and its
recovery, ledger events with stable item ids, and the HTML export."""

from __future__ import annotations

import html
from pathlib import Path
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest

from labs.core import formulas, measure, quiz, roofline, units, utilization
from labs.core.measure import live
from notebook_support import choice, export_page, load_app, visible_text

LAB_FILE = Path(__file__).resolve().parents[1] / "labs" / "lab_01_memory_wall.py"
ITEMS = ("lab01.which_roof", "lab01.levers", "lab01.crossover_n", "lab01.other_device",
         "lab01.yardstick")  # the lab's order
INSTRUMENTS = ("scenario_figure", "scenario_metrics", "levers_figure", "crossover_figure",
               "crossover_n", "overlay_figure", "yardstick_figure", "gemm_figure",
               "gemm_metrics", "live_rows", "live_figure")


@pytest.fixture(scope="module")
def app():
    return load_app(LAB_FILE, "_lab01_under_test")


PREDICTIONS = {
    "which_roof_prediction": choice("lab01.which_roof", "compute-bound"),
    "crossover_prediction": quiz.Prediction("lab01.crossover_n", 500, confidence=2, reason="t"),
    "other_device_prediction": choice("lab01.other_device", "memory-bound"),
    "yardstick_prediction": choice("lab01.yardstick", "flop_util"),
    "levers_prediction": choice("lab01.levers", "4x batch (M)"),
}


def _texts(outputs) -> str:
    return "\n".join(getattr(o, "text", "") or "" for o in outputs if o is not None)


def _sliders(m, n, k):
    return {"m_slider": SimpleNamespace(value=m), "n_slider": SimpleNamespace(value=n),
            "k_slider": SimpleNamespace(value=k)}


def test_locked_run_hides_every_instrument(env, app):
    outputs, defs = app.run()
    for name in PREDICTIONS:
        assert defs[name] is None
    for name in INSTRUMENTS:
        assert name not in defs
    text = _texts(outputs)
    assert text.count("Lock prediction") >= 5  # five lock buttons
    # each instrument names the predictions it waits for, whatever the order they are locked
    assert "Lock Prediction 1 first" in text
    # the explorer of any GEMM answers every question
    assert "Lock Predictions 1, 2, 3, 4 and 5 first" in text
    assert defs["lab"].events() == []


def test_unlocked_run_shows_figures_with_core_numbers(env, app):
    outputs, defs = app.run(defs=PREDICTIONS)
    for name in ("scenario_figure", "gemm_figure", "crossover_figure", "overlay_figure",
                 "yardstick_figure", "levers_figure"):
        assert isinstance(defs[name], go.Figure), name
    # Part 1: Priya's GEMM 16 x 8192 x 8192 bf16 on the default H100 SXM
    g = formulas.gemm(16, 8192, 8192, "bf16")
    tb = roofline.time_bounds(g.flops, g.bytes, "h100-sxm", "bf16")
    met = defs["scenario_metrics"]
    assert met["ai"] == pytest.approx(g.ai) and met["ai"] == pytest.approx(15.94, abs=0.01)
    assert met["ridge"] == pytest.approx(roofline.ridge_point("h100-sxm", "bf16"))
    assert met["attainable"] == pytest.approx(g.ai * 3.35)  # AI x 3.35 TB/s
    assert (met["lower"], met["no_overlap"]) == pytest.approx((tb.lower, tb.no_overlap))
    assert met["flop_util_bound"] == pytest.approx(
        utilization.flop_utilization_bound(g.ai, "h100-sxm", "bf16"))
    assert defs["scenario_regime"] == roofline.MEMORY
    assert defs["gemv_cost"].ai == pytest.approx(1.0, rel=0.01)  # decode GEMV: AI ~ 1
    # Part 6's explorer opens on Priya's shape in the picked precision
    assert defs["gemm_metrics"]["ai"] == pytest.approx(g.ai)
    # Part 2: N* = 1.5 x 2 B x 295.4 FLOP/B ~ 886
    assert defs["crossover_n"] == pytest.approx(roofline.gemm_crossover_n("h100-sxm", "bf16"))
    assert defs["crossover_n"] == pytest.approx(886.1, abs=0.1)
    # Part 3: 256 x 8192 x 8192 bf16 (AI 241) is compute-bound on the Jetson, memory-bound on
    # the H100
    assert set(defs["overlay_keys"]) == {"h100-sxm", "jetson-orin-nx-16gb"}
    ai = defs["overlay_cost"].ai
    assert roofline.regime(ai, "jetson-orin-nx-16gb", "bf16") == roofline.COMPUTE
    assert roofline.regime(ai, "h100-sxm", "bf16") == roofline.MEMORY
    # Part 4: 3% MFU at 90% bandwidth = 90% of its roof, memory-bound
    ys = defs["yardstick"]
    assert ys["regime"] == roofline.MEMORY
    assert ys["of_roof"] == pytest.approx(0.9) and ys["flop_util"] == pytest.approx(0.03)
    assert ys["ai"] == pytest.approx(roofline.ridge_point("h100-sxm", "bf16") * 0.03 / 0.9)
    # Part 2: the levers are core's
    assert defs["levers"] == roofline.ai_levers(16, 8192, 8192, "h100-sxm", "bf16", tile=64)
    text = _texts(outputs)
    assert text.count("You predicted") == 5
    assert "886" in text and "ridge (bf16, dense)" in text
    labels = [t for tr in defs["scenario_figure"].data for t in (tr.text or ())]
    assert "ridge (bf16, dense) = 295 FLOP/B" in labels
    # the comparisons recorded what each instrument showed, under the stable item ids
    results = {e["item_id"]: e["payload"] for e in defs["lab"].events(kind="result")}
    assert set(results) == set(ITEMS)
    assert results["lab01.crossover_n"]["actual"] == 886
    assert results["lab01.which_roof"]["correct"] is False


def test_oom_failure_state_is_reached_and_recovered(env, app):
    big = dict(PREDICTIONS, **_sliders(131072, 131072, 131072))
    outputs, defs = app.run(defs=big)
    assert "gemm_figure" not in defs and "gemm_metrics" not in defs
    msg = defs["gemm_error"]
    assert "needs 103.1 GB" in msg and "has 80 GiB (85.9 GB)" in msg  # 3 x 131072^2 x 2 B
    assert "needs 103.1 GB" in _texts(outputs) and "Traceback" not in _texts(outputs)
    # the rest of the lab keeps working
    assert isinstance(defs["crossover_figure"], go.Figure)
    # moving the sliders back recovers the instrument
    _, defs = app.run(defs=dict(PREDICTIONS, **_sliders(4096, 4096, 4096)))
    assert defs["gemm_error"] is None and isinstance(defs["gemm_figure"], go.Figure)
    assert defs["gemm_metrics"]["ai"] == pytest.approx(formulas.gemm(4096, 4096, 4096, "bf16").ai)


def test_part_1_shows_priyas_gemm_whatever_the_sliders_and_precision(env, app):
    # Part 1's view is Priya's GEMM and its decode GEMV in bf16, only the device moves it:
    # before Prediction 2 it must not show the AI of her GEMM batched (M = 64: 63 FLOP/B) or
    # in fp8 (31.9), which answer "which lever raises AI the most".
    from marimo._runtime import dataflow

    app._maybe_initialize()
    graph = app._graph
    part1 = set(graph.definitions["scenario_cost"]) | set(graph.definitions["gemv_cost"])
    movers = {cid for name in ("m_slider", "n_slider", "k_slider", "precision_picker")
              for cid in graph.definitions[name]}
    assert not part1 & dataflow.transitive_closure(graph, movers)
    only_p1 = {"which_roof_prediction": PREDICTIONS["which_roof_prediction"]}
    batched = formulas.gemm(64, 8192, 8192, "bf16").ai
    fp8 = formulas.gemm(16, 8192, 8192, "fp8").ai
    for precision in ("bf16", "fp8"):
        outputs, defs = app.run(defs={**only_p1, **_sliders(64, 8192, 8192),
                                      "precision_picker": SimpleNamespace(value=precision)})
        assert defs["scenario_cost"].ai == pytest.approx(formulas.gemm(16, 8192, 8192).ai)
        text = " ".join(visible_text(o) for o in outputs if o is not None)
        for ai in (batched, fp8):
            assert f"{units.format_value(ai)} FLOP/B" not in text, (precision, ai)
        assert "gemm_cost" not in defs and "levers" not in defs


def test_precision_the_device_lacks_is_a_message_not_a_traceback(env, app):
    tpu = dict(PREDICTIONS, device_picker=SimpleNamespace(value="tpu-v5e"),
               precision_picker=SimpleNamespace(value="fp16"))
    outputs, defs = app.run(defs=tpu)
    text = _texts(outputs)
    assert "no hardware rate for fp16" in defs["gemm_error"]  # in the student's words
    assert "precision=" not in defs["gemm_error"]
    assert "Pick a compute precision this device has" in defs["gemm_error"]  # the way out
    assert "gemm_figure" not in defs and "crossover_figure" not in defs
    assert "Traceback" not in text and "has no hardware rate" in text


def test_locking_through_the_forms_writes_predict_and_unlock_events(env, app):
    _, defs = app.run()
    answers = {"which_roof_form": "memory-bound", "crossover_form": 1000,
               "other_device_form": "memory-bound", "yardstick_form": "bandwidth",
               "levers_form": "4x batch (M)"}
    for form, answer in answers.items():
        quiz.simulate_submit(defs[form], answer=answer, confidence=4, reason="a reason")
    lab = defs["lab"]
    events = lab.events()
    assert {e["item_id"] for e in events} == set(ITEMS)
    for item in ITEMS:
        assert [e["kind"] for e in lab.events(item)] == ["predict", "unlock"]
    assert lab.first_prediction("lab01.crossover_n").value == 1000
    # reopening the lab restores every lock from the ledger and opens the instruments
    _, again = app.run()
    assert again["crossover_prediction"].value == 1000
    assert isinstance(again["gemm_figure"], go.Figure)
    kinds = {(e["item_id"], e["kind"]) for e in again["lab"].events()}
    assert {(i, "result") for i in ITEMS} <= kinds
    assert all(e["lab_id"] == "lab01" for e in again["lab"].events())


@pytest.mark.slow
def test_export_html_student_and_instructor_copies(tmp_path_factory):
    student = export_page(LAB_FILE, tmp_path_factory)
    assert "Lock Prediction 1 first" in student
    assert "ridge (bf16, dense) = 295 FLOP/B" not in student
    teacher = export_page(LAB_FILE, tmp_path_factory, reveal=True)
    assert "ridge (bf16, dense) = 295 FLOP/B" in teacher  # the roofline figure is in the page
    assert "Lock Prediction" not in teacher


#: The button pressed, once the prediction its square GEMMs answer (N*) is locked.
PRESSED = {"live_button": SimpleNamespace(value=True),
           "crossover_prediction": PREDICTIONS["crossover_prediction"]}


def test_live_part_without_torch_or_gpu_says_so(env, app, monkeypatch):
    none = measure.DeviceInfo("none", "no device", "torch is not installed, so this machine "
                              "cannot be measured.")
    monkeypatch.setattr(measure, "detect", lambda *a, **k: none)
    outputs, defs = app.run(defs=PRESSED)
    text = _texts(outputs)
    assert "Live measurement is off" in text and "torch is not installed" in text
    assert "live_rows" not in defs and "Traceback" not in text
    assert defs["lab"].events("lab01.measured_sweep") == []


@pytest.mark.slow
def test_tiny_cpu_sweep_plots_measured_points_and_records_a_result(env, app, monkeypatch):
    pytest.importorskip("torch")
    cpu = measure.detect("cpu")  # the CPU even where a GPU exists: tiny and quick
    monkeypatch.setattr(measure, "detect", lambda *a, **k: cpu)
    settings = {"live_budget": SimpleNamespace(value=2),  # the settings cell's names
                "live_precision": SimpleNamespace(value="auto")}
    settings["live_settings"] = live.read_at_press(precision=settings["live_precision"],
                                                   budget=settings["live_budget"])
    tiny = dict(PRESSED, LIVE_SIZES=(64, 128), LIVE_STREAM_MB=4, **settings)
    outputs, defs = app.run(defs=tiny)
    assert defs["live_p"] == "fp32"  # auto on a CPU
    rows = defs["live_rows"]
    assert [r["n"] for r in rows] == [64, 128]
    ok = [r for r in rows if r["status"] == "ok"]
    assert ok, rows
    for r in ok:  # measured / predicted against this machine's measured roofline
        assert r["measured_tflops"] > 0 and r["predicted_tflops"] > 0
        assert r["ratio"] == pytest.approx(r["measured_tflops"] / r["predicted_tflops"])
        assert r["ai"] == pytest.approx(formulas.gemm(r["n"], r["n"], r["n"], "fp32").ai)
    fig = defs["live_figure"]
    assert isinstance(fig, go.Figure)
    measured = [t for t in fig.data if t.name and t.name.startswith("measured")]
    assert measured and len(measured[0].x) == len(ok)
    assert "Download lab01_gemm_sweep.csv" in _texts(outputs)
    results = defs["lab"].events("lab01.measured_sweep", "result")
    assert len(results) == 1 and results[0]["payload"]["precision"] == "fp32"
    assert [r["n"] for r in results[0]["payload"]["rows"]] == [64, 128]


def test_measurement_waits_for_the_prediction_its_square_gemms_answer(env, app, monkeypatch):
    # Square GEMMs timed on an H100 against its spec roof bracket N*: the button does nothing
    # (no timing, no ledger result) until Prediction 3 is locked, whatever else is.
    monkeypatch.setattr(measure, "detect", lambda *a, **k: pytest.fail("measured too early"))
    others = {k: v for k, v in PREDICTIONS.items() if k != "crossover_prediction"}
    outputs, defs = app.run(defs={**others, "live_button": SimpleNamespace(value=True)})
    assert "live_rows" not in defs and "Lock Prediction 3 first" in _texts(outputs)
    assert defs["lab"].events("lab01.measured_sweep") == []


def _sweep_rows(cases):
    """Rows of a fabricated fp32 CPU sweep: (N, measured / predicted) each."""
    out = []
    for n, ratio in cases:
        ai = formulas.gemm(n, n, n, "fp32").ai
        out.append({"n": n, "status": "ok", "ai": ai, "measured_tflops": 0.05 * ratio,
                    "predicted_tflops": 0.05, "ratio": ratio, "bound": "compute",
                    "median_ms": 1.0})
    return out


def _measured(app, cases, cache_mb=32.0):
    info = measure.DeviceInfo("cpu", "a test CPU", "", torch_device="cpu", cache_mb=cache_mb)
    reference = SimpleNamespace(bandwidth_gbs=10.0, as_device=lambda: hardware.custom(
        "a test CPU (measured)", bandwidth_gbs=10.0, peaks={"fp32": 0.05}, memory_gb=16))
    outputs, defs = app.run(defs={**PREDICTIONS, "live_info": info, "live_p": "fp32",
                                  "live_reference": reference,
                                  "live_rows": _sweep_rows(cases)})
    return _texts(outputs), defs


def test_the_measured_sweep_asks_about_what_this_machine_measured(env, app):
    # A CPU's small GEMMs can run from cache, above a roof drawn from its DRAM bandwidth: the
    # questions must not ask why they "fall furthest below the roof".
    text, defs = _measured(app, [(128, 4.6), (256, 2.1), (512, 0.9), (1024, 0.8)])
    assert [r["n"] for r in defs["live_above"]] == [128, 256]
    assert "N = 128, 256 ran above the predicted roof (up to 4.6×)" in text
    assert "fall furthest below" not in text
    # the figure says why a point may beat the memory roof: its operands fit in the cache
    # (3 x 1024^2 x 4 B = 12 MiB <= 32 MiB; 2048 would need 48 MiB)
    assert "last-level cache for N ≤ 1,024 (fp32)" in defs["live_note"]
    assert "32 MiB" in defs["live_note"] and "10 GB/s" in defs["live_note"]
    # points above the compute roof (every row here is predicted compute-bound): the note says
    # the run that measured that roof was slowed
    assert "only as good as its run" in defs["live_note"]
    # where the small ones do fall furthest below (a GPU's launch overhead), it asks that
    text, _ = _measured(app, [(128, 0.1), (256, 0.4), (512, 0.8)])
    assert "Why do small GEMMs fall furthest below the roof" in text
    text, _ = _measured(app, [(128, 0.6), (256, 0.3), (512, 0.8)])
    assert "gap below the roof largest at N = 256" in text
    # no cache size known: the note says nothing about caches
    _, defs = _measured(app, [(128, 0.6)], cache_mb=None)
    assert "last-level cache" not in defs["live_note"]
    assert "only as good as its run" not in defs["live_note"]


def test_the_measured_table_fits_the_page(env, app):
    # the columns a student reads (the precision and roof are in the figure's title and note):
    # eight fit a medium-width page (issue: eleven were clipped at 1,280 px)
    text, _ = _measured(app, [(128, 0.6)])
    for clipped in ("reps", "threads"):
        assert f'"{clipped}"' not in text


def test_int8_rates_read_in_tops(env, app):
    int8 = dict(PREDICTIONS, precision_picker=SimpleNamespace(value="int8"))
    text = _texts(app.run(defs=int8)[0])
    assert "1,979 TOPS" in text  # the H100's dense int8 peak
    assert "1,979 TFLOP/s" not in text
    # and its ridge in operations per byte: 1,979 TOPS / 3.35 TB/s
    assert "591 OP/B" in text and "591 FLOP/B" not in text


def test_the_lever_chart_says_an_8_by_8_tile(env, app):
    _, defs = app.run(defs=dict(PREDICTIONS, tile_slider=SimpleNamespace(value=8)))
    note = " ".join(a.text for a in defs["levers_figure"].layout.annotations)
    assert "an 8 × 8-tiled kernel" in note and "a 8 × 8" not in note


# --- moved from tests/test_physics_review.py (filed by the module they test) ---------
import math  # noqa: E402
from types import SimpleNamespace as NS  # noqa: E402

import labs  # noqa: E402
from labs.core import formulas  # noqa: E402
from labs.core import fusion  # noqa: E402
from labs.core import roofline  # noqa: E402

LABS = Path(labs.__file__).parent


def test_part_3_gemm_is_roofline_bound_on_both_devices_not_overhead():
    """(The physics review: Lab 1 Part 3's shape is in the regime the question
    teaches.)"""
    import importlib.util
    from pathlib import Path

    import labs

    lab = Path(labs.__file__).parent / "lab_01_memory_wall.py"
    spec = importlib.util.spec_from_file_location("_lab01_consts", lab)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    _, defs = mod.app.run()
    o = defs["OVERLAY_SCENARIO"]
    g = formulas.gemm(o.get("m", o.get("n")), o["n"], o.get("k", o["n"]), o["precision"])
    assert roofline.regime(g.ai, o["edge"], o["precision"]) == roofline.COMPUTE
    assert roofline.regime(g.ai, o["datacenter"], o["precision"]) == roofline.MEMORY
    # enough 128 x 128 output tiles to give every SM of the datacenter GPU work, and enough work
    # that a 5 us launch is a small part of it
    tiles = math.ceil(o.get("m", o["n"]) / 128) * math.ceil(o["n"] / 128)
    assert tiles >= 0.9 * fusion.onchip(o["datacenter"]).sms
    assert roofline.time_bounds(g.flops, g.bytes, o["datacenter"], o["precision"]).lower >= 5 * 5e-6


# --- moved from tests/test_physics_review_labs.py (filed by the module they test) ----
@pytest.fixture(scope="module")
def lab1():
    return load_app(LABS / "lab_01_memory_wall.py", "_review_lab01")


def test_lever_chart_opens_on_the_question_and_agrees_with_the_verdict(env, lab1):
    """(Instruments open on the question's case, in the labs.)"""
    preds = {"which_roof_prediction": choice("lab01.which_roof", "memory-bound"),
             "crossover_prediction": quiz.Prediction("lab01.crossover_n", 900),
             "other_device_prediction": choice("lab01.other_device", "memory-bound"),
             "yardstick_prediction": choice("lab01.yardstick", "bandwidth"),
             "levers_prediction": choice("lab01.levers", "4x batch (M)"),
             # Part 1's sliders moved somewhere else: the lever chart must not follow them
             "m_slider": NS(value=4096), "n_slider": NS(value=4096), "k_slider": NS(value=4096)}
    outputs, defs = lab1.run(defs=preds)
    sc = defs["SCENARIO"]
    assert defs["levers"] == roofline.ai_levers(sc["m"], sc["n"], sc["k"], "h100-sxm", "bf16", tile=64)
    best = max(defs["levers"][1:], key=lambda lv: lv.ai)
    # the figure itself says why its AI (a tiled kernel's bytes) is not Part 1's
    (note,) = [a.text for a in defs["levers_figure"].layout.annotations
               if "Part 1" in (a.text or "")]
    note = html.unescape(note.replace("<br>", " "))
    assert f"{units.format_value(defs['levers'][0].ai)} FLOP/B today" in note
    assert f"Part 1's {units.format_value(formulas.gemm(16, 8192, 8192).ai)} FLOP/B" in note
    results = {e["item_id"]: e["payload"] for e in defs["lab"].events(kind="result")}
    assert results["lab01.levers"]["actual"] == best.name  # chart and verdict: one answer


# --- answers reachable before their lock (the answer-leak reviews) ----------------------------
import re  # noqa: E402

from labs.core import hardware  # noqa: E402
from labs.core.physics import misconceptions  # noqa: E402


def _shown(app, locked, **widgets):
    """(the visible text, defs) of the lab with ``locked`` predictions and widgets set."""
    outputs, defs = app.run(defs={**locked, **{k: SimpleNamespace(value=v)
                                               for k, v in widgets.items()}})
    return " ".join(visible_text(o) for o in outputs if o is not None), defs


def test_the_answer_paths_new_students_found_stay_closed(env, app):
    # Prediction 3 (N*): after Predictions 1 and 2, the explorer of any GEMM stays closed for
    # 1,024^3 on the other chips (AI does not depend on the chip), and no notice suggests a
    # setting that gets around it
    first_two = {k: PREDICTIONS[k] for k in ("which_roof_prediction", "levers_prediction")}
    for device in ("h100-pcie", "h200-sxm", "a100-sxm-80gb"):
        text, defs = _shown(app, first_two, device_picker=device, m_slider=1024,
                            n_slider=1024, k_slider=2048)
        assert "gemm_cost" not in defs and "gemm_regime" not in defs, device
        assert "make M, N and K differ" not in text and "move a slider" not in text
    # Prediction 4 (the prefill chunk on the H100): with 1-3 locked, no device or precision
    # shows its AI, 241 FLOP/B, nor any verdict of the overlay
    first_three = {**first_two, "crossover_prediction": PREDICTIONS["crossover_prediction"]}
    ai = formulas.gemm(256, 8192, 8192, "bf16").ai
    for device in ("jetson-orin-nx-16gb", "a100-sxm-80gb", "h200-sxm", "h100-pcie",
                   "h100-sxm"):
        text, defs = _shown(app, first_three, device_picker=device, m_slider=256,
                            n_slider=8192, k_slider=8192)
        assert f"{units.format_value(ai)} FLOP/B" not in text, device
        assert "overlay_cost" not in defs and "gemm_cost" not in defs
    # what Prediction 1's reflection asks does not point at Prediction 2's lever (a slider)
    text, _ = _shown(app, {"which_roof_prediction": PREDICTIONS["which_roof_prediction"]})
    assert "slider" not in text.split("Why can no tiling scheme")[1].split("Part 2")[0]


def test_the_crossover_reflection_says_what_the_instrument_shows(env, app):
    # N* on the H100 is the same in fp8 as in bf16 (peak x2, bytes / 2): the reflection must
    # not say a faster precision needs a bigger matrix; fp32 (CUDA cores) moves it
    same = [round(roofline.gemm_crossover_n("h100-sxm", q)) for q in ("bf16", "fp8", "fp16")]
    assert len(set(same)) == 1
    assert round(roofline.gemm_crossover_n("h100-sxm", "fp32")) != same[0]
    text, _ = _shown(app, PREDICTIONS)
    assert "faster precision need a *bigger* matrix" not in text
    assert "why does its N* stay where bf16's is?" in text


def test_prediction_3_asks_for_the_roofline_bound_and_catches_the_slips(env, app):
    # Real cuBLAS runs cross over gradually: the question asks for the roofline's N*, and its
    # band (not the lab-wide 1.5x) grades forgetting C's write (exactly 1.5x off) wrong
    from labs.core import catalogue

    (item,) = [i for e in catalogue.catalogue() for i in e.items
               if i.item_id == "lab01.crossover_n"]
    assert "the roofline's N*" in item.text and "H100 SXM" in item.text
    band = misconceptions.band("lab01.crossover_n")
    assert band.asks_bound and band.tolerance < 1.5 / misconceptions.WRONG_MARGIN
    forgot_c = roofline.gemm_crossover_n("h100-sxm", "bf16", operands=2)
    assert forgot_c == pytest.approx(590.7, abs=0.1)  # 2 x 2 B x 295.4 / 2
    assert quiz.verdict_kind(forgot_c, 886, tolerance=band.tolerance) == "danger"
    assert quiz.verdict_kind(900, 886, tolerance=band.tolerance) != "danger"


def test_prediction_3_takes_each_wrong_models_own_answer_and_grades_it_wrong(env, app,
                                                                          monkeypatch):
    # A log slider's round steps (500, 700, 1,000) could not take 591 (forgetting C's write),
    # and its neighbour 700 is inside the 1.3x band around 886: the student who held the wrong
    # model and moved to the nearest step was graded right. A text box takes the number itself.
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    _, defs = app.run()
    reference = defs["crossover_prediction"].value  # the instructor copy's reference answer
    assert reference == round(roofline.gemm_crossover_n("h100-sxm", "bf16"))
    handler = defs["crossover_form"].handler
    assert handler.steps is None  # a text box: no opening value to lock untouched
    band = misconceptions.band("lab01.crossover_n")
    monkeypatch.delenv("ROOFLINE_REVEAL")
    for typed, right in [(round(w.value), False) for w in band.wrong_models] + [(900, True),
                                                                               (886, True)]:
        locked, error = handler.check({"answer": str(typed), "confidence": 3,
                                       "reason": "from the ridge"})
        assert error is None and locked.value == typed, (typed, error)
        kind = quiz.verdict_kind(locked.value, reference, tolerance=band.tolerance)
        assert (kind != "danger") is right, (typed, kind)
    # every device's N* in the registry can be typed
    crossovers = [roofline.gemm_crossover_n(k, q) for k in hardware.keys()
                  for q in hardware.get(k).precisions if q in hardware.PRECISIONS]
    assert handler.lo <= min(crossovers) and max(crossovers) <= handler.hi


#: A later prediction locked alone, and what its comparison, math peek and reflection must not
#: show before the earlier predictions they answer are locked: Priya's AI (Prediction 1 against
#: the ridge on the spec sheet), "AI ~ 2M/b" (Predictions 1 and 2), the decode kernel placed
#: by the profiler, and prompts pointing at instruments that are still closed.
LOCKED_ALONE = {
    "levers_prediction": ["12.8", "31.9", "2M/b", "Move the tile edge"],
    "other_device_prediction": ["241", "2M/b", "Move M"],
    "yardstick_prediction": ["9.85", "0.0333", "Set FLOP utilisation"],
}


@pytest.mark.parametrize("alone", sorted(LOCKED_ALONE))
def test_a_later_prediction_locked_alone_shows_no_earlier_answer(env, app, alone):
    text, _ = _shown(app, {alone: PREDICTIONS[alone]})
    below = text.split("Prediction 2.")[1]  # Part 1's own texts (the scenario) aside
    for forbidden in LOCKED_ALONE[alone]:
        assert forbidden not in below, (alone, forbidden)
    # the comparison opens once the predictions it answers are locked too
    text, _ = _shown(app, PREDICTIONS)
    assert all(f in text for f in LOCKED_ALONE[alone]), alone


def test_the_tiled_bytes_peek_says_a_cache_holds_a_large_gemms_reuse(env, app):
    # "for large M, N: AI ~ T/b" alone gives an 8192^3 bf16 GEMM with 128 x 128 tiles AI 64:
    # memory-bound on an H100, against cuBLAS's measured 794 TFLOP/s. The peek says that count
    # has no cache, and that L2 sets a large GEMM's HBM traffic.
    text, _ = _shown(app, PREDICTIONS)
    peek = text.split("bytes of a tiled GEMM")[1].split("Part 3")[0]
    assert "no cache" in peek and "L2" in peek and "wave" in peek
    assert "reuse (tile size) and bytes per element set it" not in peek


def test_part_6_does_not_say_every_question_is_locked_before_it_is(env, app):
    text, _ = _shown(app, {})
    assert "is locked now" not in text
    assert "Once every question of this lab is locked" in text


def test_the_sweep_table_shows_its_timings_before_the_long_status(env, app):
    # a skipped size's status is a sentence: shown last, it no longer pushes median_ms off the
    # page; and the table says the budget a status names is the sweep's two thirds
    rows = _sweep_rows([(128, 0.6)])
    rows[0]["status"] = "skipped: needs ~9.0 s, 2.0 s of the 13.3 s budget left"
    text = live.results_table(rows, columns=["n", "median_ms", "status"]).text
    assert text.index("median_ms") < text.index("status") and "bound" not in text
    text, _ = _measured(app, [(128, 0.6)])
    assert "the sweep had the other two thirds" in text


@pytest.mark.slow
def test_int8_measured_on_a_cpu_draws_its_roof(env, app, monkeypatch):
    # int8 on a CPU the registry does not know: a measured roof of int8 alone has no
    # floating-point (vector) ceiling, and the figure failed with a GPU's wording and a Python
    # call ("no vector (CUDA-core) rate ... empirical_roofline(...)"). fp32 is measured with it.
    pytest.importorskip("torch")
    cpu = measure.detect("cpu")
    if "int8" in {p for p, why in measure.supported_precisions(cpu).items() if why}:
        pytest.skip("this torch build has no CPU int8 matmul")
    monkeypatch.setattr(measure, "detect", lambda *a, **k: cpu)
    monkeypatch.setattr(type(cpu), "spec", lambda self: None)  # an unknown machine
    settings = {"live_budget": SimpleNamespace(value=3),
                "live_precision": SimpleNamespace(value="int8")}
    settings["live_settings"] = live.read_at_press(precision=settings["live_precision"],
                                                   budget=settings["live_budget"])
    outputs, defs = app.run(defs=dict(PRESSED, LIVE_SIZES=(64, 128), LIVE_STREAM_MB=4,
                                      **settings))
    text = _texts(outputs)
    assert defs["live_p"] == "int8" and "fp32" in defs["live_reference"].peaks
    assert "CUDA-core" not in text and "empirical_roofline" not in text
    assert isinstance(defs.get("live_figure"), go.Figure), text[-2000:]


def test_the_style_gallery_shows_no_lab_1_answer(env):
    """labs/gallery.py ships next to the labs and a student can run it: no N* it
    shows, in its source or its output, is graded correct for Prediction 2."""
    gallery = LABS / "gallery.py"
    outputs, _ = load_app(gallery, "_gallery_lab01").run()
    text = gallery.read_text(encoding="utf-8") + " ".join(
        visible_text(o) for o in outputs if o is not None)
    answer = round(roofline.gemm_crossover_n("h100-sxm", "bf16"))
    assert not re.search(rf"(?<![\w.,]){answer}(?![\w]|[.,]\d)", text)
    shown = [float(v.replace(",", "")) for v in re.findall(r"N\* = (\d[\d,]*)", text)]
    assert shown and all(quiz.ratio_off(v, answer) > quiz.GRADE_TOLERANCE for v in shown)
