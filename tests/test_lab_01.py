"""Lab 1 "The Memory Wall", headless: locked and unlocked runs, the OOM failure state and its
recovery, ledger events with stable item ids, and the HTML export."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest

from labs.core import formulas, measure, quiz, roofline
from labs.core.measure import live
from notebook_support import choice, export_page, load_app

LAB_FILE = Path(__file__).resolve().parents[1] / "labs" / "lab_01_memory_wall.py"
ITEMS = ("lab01.which_roof", "lab01.crossover_n", "lab01.other_device", "lab01.yardstick",
         "lab01.levers")
INSTRUMENTS = ("gemm_figure", "gemm_metrics", "crossover_figure", "crossover_n",
               "overlay_figure", "yardstick_figure", "levers_figure", "live_rows", "live_figure")


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
    assert text.count("Lock prediction") >= 5  # five gate notices / lock buttons
    assert "Lock prediction 1 to reveal the roofline instrument" in text
    assert "Nothing has been measured yet" in text  # the live sweep waits for its button
    assert defs["lab"].events() == []


def test_unlocked_run_shows_figures_with_core_numbers(env, app):
    outputs, defs = app.run(defs=PREDICTIONS)
    for name in ("gemm_figure", "crossover_figure", "overlay_figure", "yardstick_figure",
                 "levers_figure"):
        assert isinstance(defs[name], go.Figure), name
    # Part 1: Priya's GEMM 16 x 8192 x 8192 bf16 on the default H100 SXM
    g = formulas.gemm(16, 8192, 8192, "bf16")
    tb = roofline.time_bounds(g.flops, g.bytes, "h100-sxm", "bf16")
    met = defs["gemm_metrics"]
    assert met["ai"] == pytest.approx(g.ai) and met["ai"] == pytest.approx(15.94, abs=0.01)
    assert met["ridge"] == pytest.approx(roofline.ridge_point("h100-sxm", "bf16"))
    assert met["attainable"] == pytest.approx(g.ai * 3.35)  # AI x 3.35 TB/s
    assert (met["lower"], met["no_overlap"]) == pytest.approx((tb.lower, tb.no_overlap))
    assert met["flop_util_bound"] == pytest.approx(
        roofline.flop_utilization_bound(g.ai, "h100-sxm", "bf16"))
    assert defs["gemm_regime"] == roofline.MEMORY
    assert defs["gemv_cost"].ai == pytest.approx(1.0, rel=0.01)  # decode GEMV: AI ~ 1
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
    # Part 5: the levers are core's
    assert defs["levers"] == roofline.ai_levers(16, 8192, 8192, "h100-sxm", "bf16", tile=64)
    text = _texts(outputs)
    assert text.count("You predicted") == 5
    assert "886" in text and "ridge (bf16, dense)" in text
    labels = [t for tr in defs["gemm_figure"].data for t in (tr.text or ())]
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


def test_an_m_step_leaves_the_decode_gemv_alone(env, app):
    # The GEMV has no M: a step of the M slider re-runs no cell that reads or shows it
    # (issue 15: each re-run cell is one more output update in the browser).
    from marimo._runtime import dataflow

    app._maybe_initialize()
    graph = app._graph
    readers = {cid for cid, c in graph.cells.items() if "m_slider" in c.refs}
    rerun = dataflow.transitive_closure(graph, readers - set(graph.definitions["m_slider"]))
    gemv = {cid for cid, c in graph.cells.items() if c.refs & {"gemv_cost", "gemv_bounds"}
            and "gemm_cost" not in c.refs}  # the GEMV cards (the figure plots both kernels)
    assert gemv and not rerun & gemv
    assert not rerun & set(graph.definitions["gemv_cost"])
    # A GEMM too big for the device still leaves its decode GEMV (N x K weights) on show.
    outputs, defs = app.run(defs=dict(PREDICTIONS, **_sliders(262144, 131072, 131072)))
    assert defs["gemm_error"] is not None and "needs" in defs["gemm_error"]
    assert defs["gemv_cost"].ai == pytest.approx(1.0, rel=0.01)
    assert "GEMV time bound" in _texts(outputs)
    # A GEMV whose weights do not fit shows no cards; the GEMM's message says why.
    outputs, defs = app.run(defs=dict(PREDICTIONS, **_sliders(16, 262144, 262144)))
    assert defs["gemv_cost"] is None and "GEMV time bound" not in _texts(outputs)
    assert "needs" in defs["gemm_error"] and "Traceback" not in _texts(outputs)

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
    assert "Lock prediction 1 to reveal the roofline instrument" in student
    assert "ridge (bf16, dense) = 295 FLOP/B" not in student
    teacher = export_page(LAB_FILE, tmp_path_factory, reveal=True)
    assert "ridge (bf16, dense) = 295 FLOP/B" in teacher  # the roofline figure is in the page
    assert "Lock prediction 1 to reveal" not in teacher


PRESSED = {"live_button": SimpleNamespace(value=True)}


def test_live_part_without_torch_or_gpu_says_so(env, app, monkeypatch):
    none = measure.DeviceInfo("none", "no device", "torch is not installed, so this machine "
                              "cannot be measured.")
    monkeypatch.setattr(measure, "detect", lambda *a, **k: none)
    outputs, defs = app.run(defs=PRESSED)
    text = _texts(outputs)
    assert "Live measurement is off" in text and "torch is not installed" in text
    assert "live_rows" not in defs and "Traceback" not in text
    assert defs["lab"].events(kind="result") == []


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


def test_int8_rates_read_in_tops(env, app):
    int8 = dict(PREDICTIONS, precision_picker=SimpleNamespace(value="int8"))
    text = _texts(app.run(defs=int8)[0])
    assert "1,979 TOPS" in text  # the H100's dense int8 peak
    assert "1,979 TFLOP/s" not in text


# --- moved from tests/test_physics_review.py (issue 36.8: filed by the module they test) ---------
import math  # noqa: E402
from types import SimpleNamespace as NS  # noqa: E402

import labs  # noqa: E402
from labs.core import formulas as F  # noqa: E402
from labs.core import fusion as FU  # noqa: E402
from labs.core import roofline as R  # noqa: E402

LABS = Path(labs.__file__).parent


def test_part_3_gemm_is_roofline_bound_on_both_devices_not_overhead():
    """(Issue 14, the physics review, item 11: Lab 1 Part 3's shape is in the regime the question
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
    g = F.gemm(o.get("m", o.get("n")), o["n"], o.get("k", o["n"]), o["precision"])
    assert R.regime(g.ai, o["edge"], o["precision"]) == R.COMPUTE
    assert R.regime(g.ai, o["datacenter"], o["precision"]) == R.MEMORY
    # enough 128 x 128 output tiles to give every SM of the datacenter GPU work, and enough work
    # that a 5 us launch is a small part of it
    tiles = math.ceil(o.get("m", o["n"]) / 128) * math.ceil(o["n"] / 128)
    assert tiles >= 0.9 * FU.onchip(o["datacenter"]).sms
    assert R.time_bounds(g.flops, g.bytes, o["datacenter"], o["precision"]).lower >= 5 * 5e-6


# --- moved from tests/test_physics_review_labs.py (issue 36.8: filed by the module they test) ----
@pytest.fixture(scope="module")
def lab1():
    return load_app(LABS / "lab_01_memory_wall.py", "_review_lab01")


def test_lever_chart_opens_on_the_question_and_agrees_with_the_verdict(env, lab1):
    """(Issue 18, points 3 and 6: instruments open on the question's case, in the labs.)"""
    preds = {"which_roof_prediction": choice("lab01.which_roof", "memory-bound"),
             "crossover_prediction": quiz.Prediction("lab01.crossover_n", 900),
             "other_device_prediction": choice("lab01.other_device", "memory-bound"),
             "yardstick_prediction": choice("lab01.yardstick", "bandwidth"),
             "levers_prediction": choice("lab01.levers", "4x batch (M)"),
             # Part 1's sliders moved somewhere else: the lever chart must not follow them
             "m_slider": NS(value=4096), "n_slider": NS(value=4096), "k_slider": NS(value=4096)}
    outputs, defs = lab1.run(defs=preds)
    sc = defs["SCENARIO"]
    assert defs["levers_shape"] == (sc["m"], sc["n"], sc["k"])
    best = max(defs["levers"][1:], key=lambda lv: lv.ai)
    results = {e["item_id"]: e["payload"] for e in defs["lab"].events(kind="result")}
    assert results["lab01.levers"]["actual"] == best.name  # chart and verdict: one answer


# --- answers reachable before their lock (the answer-leak review: L-1 and L-6) --------------
import itertools  # noqa: E402
import re  # noqa: E402

from labs.core import hardware  # noqa: E402
from notebook_support import visible_text  # noqa: E402

#: Predictions 1 and 2 locked, Prediction 3 still open: Part 1's explorer is open.
BEFORE_P3 = {k: PREDICTIONS[k] for k in ("which_roof_prediction", "crossover_prediction")}


def _explore(app, locked, shape, precision, device):
    """Part 1's explorer set to ``shape`` (M, N, K) in ``precision`` on ``device``, with the
    ``locked`` predictions: (each output's visible text, defs)."""
    outputs, defs = app.run(defs={**locked, **_sliders(*shape),
                                  "precision_picker": SimpleNamespace(value=precision),
                                  "device_picker": SimpleNamespace(value=device)})
    return [visible_text(o) for o in outputs if o is not None], defs


def _p3_spellings(o):
    """Every setting of Part 1's explorer that is Prediction 3's own GEMM on its datacenter GPU
    for the roofline: the three sizes in any order (AI = 2MNK / ((MK + KN + MN) b) is
    symmetric), in every precision that device runs at the question's peak with its bytes."""
    dc, p = hardware.get(o["datacenter"]), o["precision"]
    twins = [q for q in hardware.PRECISIONS if dc.has(q)
             and dc.peak_tflops(q) == dc.peak_tflops(p)
             and formulas.gemm(1, 1, 1, q).bytes == formulas.gemm(1, 1, 1, p).bytes]
    return [(s, q) for s in sorted(set(itertools.permutations((o["m"], o["n"], o["k"]))))
            for q in twins]


def test_part_1_explorer_answers_prediction_3_in_no_spelling_before_its_lock(env, app):
    o = app.run()[1]["OVERLAY_SCENARIO"]
    p, dc = o["precision"], o["datacenter"]
    cases = [(s, q, dc) for s, q in _p3_spellings(o)]
    assert {q for _, q, _ in cases} > {p} and len({s for s, _, _ in cases}) == 3  # fp16, swaps
    # the same regime told by a neighbour: a doubled K, and the GEMM on a chip whose ridge is
    # within 5% of the datacenter GPU's (the B200's in bf16)
    cases.append(((o["m"], o["n"], 2 * o["k"]), p, dc))
    # the same shape in a precision whose bytes and peak both scale (fp8, int8, tf32 on the
    # H100): the same AI against the same ridge, measured in FLOP per element
    margin = {q: formulas.gemm(o["m"], o["n"], o["k"], q).ai / roofline.ridge_point(dc, q)
              for q in hardware.PRECISIONS if hardware.get(dc).has(q)}
    scaled = [q for q in margin if q not in {x for _, x, _ in cases}
              and quiz.ratio_off(margin[q], margin[p]) < 1.01]
    assert scaled, "no precision of the datacenter GPU scales its bytes and peak together"
    cases += [((o["m"], o["n"], o["k"]), q, dc) for q in scaled]
    near = [k for k in hardware.keys() if k != dc and hardware.get(k).has(p)
            and quiz.ratio_off(roofline.ridge_point(k, p), roofline.ridge_point(dc, p)) < 1.05]
    assert near
    cases += [((o["m"], o["n"], o["k"]), p, k) for k in near]
    answer = roofline.regime(formulas.gemm(o["m"], o["n"], o["k"], p).ai, dc, p)
    for shape, q, device in cases:
        texts, defs = _explore(app, BEFORE_P3, shape, q, device)
        assert "gemm_regime" not in defs and "gemm_metrics" not in defs, (shape, q, device)
        assert not any("Your GEMM is" in t for t in texts), (shape, q, device)
        notice = [t for t in texts if "too close to Prediction 3" in t]
        assert len(notice) == 1, (shape, q, device)
        # the notice itself names no regime and no AI or ridge
        assert "bound" not in notice[0] and not re.search(r"\d\d", notice[0])
        # once Prediction 3 is locked the same setting shows its regime
        _, defs = _explore(app, PREDICTIONS, shape, q, device)
        assert defs["gemm_regime"] == roofline.regime(formulas.gemm(*shape, q).ai, device, q)
    # the question's own case, after the lock, shows the answer
    texts, defs = _explore(app, PREDICTIONS, (o["m"], o["n"], o["k"]), p, dc)
    assert defs["gemm_regime"] == answer == roofline.MEMORY
    assert any("Your GEMM is" in t for t in texts)
    # the gate is narrow: half and twice the question's M still show both regimes before it
    for m, regime in ((o["m"] // 2, roofline.MEMORY), (o["m"] * 2, roofline.COMPUTE)):
        _, defs = _explore(app, BEFORE_P3, (m, o["n"], o["k"]), p, dc)
        assert defs["gemm_regime"] == regime, m


def test_prediction_2_slider_does_not_open_on_an_answer_graded_correct(env, app, monkeypatch):
    # The log-scale slider opens at the step nearest its range's geometric middle; pressing
    # "Lock" twice without moving it locks that step. It must be graded wrong for the
    # reference case, and an answer graded right must still be reachable on the slider.
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    _, defs = app.run()
    reference = defs["crossover_prediction"].value  # the instructor copy's reference answer
    assert reference == round(roofline.gemm_crossover_n("h100-sxm", "bf16"))
    handler = defs["crossover_form"].roofline_item["handler"]
    assert handler.start in handler.steps
    assert quiz.ratio_off(handler.start, reference) > quiz.GRADE_TOLERANCE, handler.start
    assert any(quiz.ratio_off(s, reference) <= quiz.GRADE_TOLERANCE for s in handler.steps)
    # a natural range: every device's N* in the registry is on the slider
    crossovers = [roofline.gemm_crossover_n(k, q) for k in hardware.keys()
                  for q in hardware.get(k).precisions if q in hardware.PRECISIONS]
    assert handler.steps[0] <= min(crossovers) and max(crossovers) <= handler.steps[-1]
    # a student who locks the slider where it opened is graded wrong
    monkeypatch.delenv("ROOFLINE_REVEAL")
    _, defs = app.run()
    quiz.simulate_submit(defs["crossover_form"], answer=handler.start, confidence=3,
                         reason="left the slider where it was")
    locked = defs["lab"].first_prediction("lab01.crossover_n")
    assert locked.value == handler.start
    assert quiz.verdict_kind(locked.value, reference) == "danger"


def test_the_style_gallery_shows_no_lab_1_answer(env):
    """labs/gallery.py ships next to the labs and a student can run it (review T-3): no N* it
    shows, in its source or its output, is graded correct for Prediction 2."""
    gallery = LABS / "gallery.py"
    outputs, _ = load_app(gallery, "_gallery_lab01").run()
    text = gallery.read_text(encoding="utf-8") + " ".join(
        visible_text(o) for o in outputs if o is not None)
    answer = round(roofline.gemm_crossover_n("h100-sxm", "bf16"))
    assert not re.search(rf"(?<![\w.,]){answer}(?![\w]|[.,]\d)", text)
    shown = [float(v.replace(",", "")) for v in re.findall(r"N\* = (\d[\d,]*)", text)]
    assert shown and all(quiz.ratio_off(v, answer) > quiz.GRADE_TOLERANCE for v in shown)


def test_part_1_explorer_brackets_no_crossover_before_prediction_2(env, app):
    # Prediction 2 asks the square GEMM's crossover N* (H100, bf16): Part 1's explorer, open
    # after Prediction 1, showed 512^3 memory-bound and 1024^3 compute-bound, a bracket whose
    # every guess inside is graded right (final review F-10). Square GEMMs wait for Prediction
    # 2 on any device and precision whose ridge in FLOP per element is near the question's:
    # bf16, fp8 and tf32 on the H100 (the same ridge x bytes: hand check below), and the B200.
    before_p2 = {"which_roof_prediction": PREDICTIONS["which_roof_prediction"]}
    h100 = hardware.get("h100-sxm")
    per_element = {q: roofline.ridge_point("h100-sxm", q) * formulas.gemm(1, 1, 1, q).bytes / 3
                   for q in ("bf16", "fp8", "tf32") if h100.has(q)}
    assert len(per_element) == 3 and max(per_element.values()) / min(per_element.values()) < 1.01
    cases = [(n, q, "h100-sxm") for n in (512, 1024) for q in per_element]
    cases += [(n, "bf16", "b200") for n in (512, 1024)]
    for n, q, device in cases:
        texts, defs = _explore(app, before_p2, (n, n, n), q, device)
        assert "gemm_cost" not in defs, (n, q, device)
        notice = [t for t in texts if "Square GEMMs on a device and precision like" in t]
        assert len(notice) == 1 and "bound" not in notice[0], (n, q, device)
        _, after = _explore(app, {**before_p2, "crossover_prediction":
                                  PREDICTIONS["crossover_prediction"]}, (n, n, n), q, device)
        assert after["gemm_cost"] is not None, (n, q, device)
    # a GEMM that is not square, and a square one on a chip whose ridge is far off, stay open
    for shape, device in (((2048, 1024, 1024), "h100-sxm"), ((1024, 1024, 1024), "a100-sxm-80gb")):
        _, defs = _explore(app, before_p2, shape, "bf16", device)
        assert defs["gemm_cost"] is not None, (shape, device)
