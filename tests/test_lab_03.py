"""Lab 3 "Precision and ρ", headless: locked and unlocked runs, the missing-rate failure state
and its recovery, ledger events with stable item ids, the live part (message without a device,
a tiny CPU measurement when torch is installed) and the HTML export."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import plotly.graph_objects as go
import pytest

from labs.core import hardware, measure, precision, quiz, roofline
from labs.core import precision_study
from labs.core.measure import live as _live
from notebook_support import choice, export_page, load_app

LAB_FILE = Path(__file__).resolve().parents[1] / "labs" / "lab_03_precision_rho.py"
ITEMS = ("lab03.rho_ratio", "lab03.weight_only_rho", "lab03.nvfp4_byte_ratio",
         "lab03.naive_bandwidth")
INSTRUMENTS = ("classic", "classic_figure", "explorer_rows", "explorer_roofline", "rho_bars",
               "ai_bars", "ridge_bars", "ibit_bars", "weight_only", "quant_rows",
               "quant_figure", "naive", "naive_figure", "kai", "tf32")
GEMM_4096 = {"m": 4096, "n": 4096, "k": 4096}
DEFAULT_FORMATS = ["fp32", "tf32", "fp16", "bf16", "fp8", "int8", "mxfp8", "nf4", "int4-g128"]


@pytest.fixture(scope="module")
def app():
    return load_app(LAB_FILE, "_lab03_under_test")


PREDICTIONS = {
    "rho_ratio_prediction": quiz.Prediction("lab03.rho_ratio", 2, units="×", confidence=3,
                                            reason="bytes halve"),
    "weight_only_prediction": choice("lab03.weight_only_rho", "down"),
    "nvfp4_prediction": quiz.Prediction("lab03.nvfp4_byte_ratio", 4, units="×", confidence=2,
                                        reason="16/4"),
    "naive_prediction": choice("lab03.naive_bandwidth", "about_right"),
}


def _texts(outputs) -> str:
    return "\n".join(getattr(o, "text", "") or "" for o in outputs if o is not None)


def _ns(**values):
    return {k: SimpleNamespace(value=v) for k, v in values.items()}


def test_locked_run_hides_every_instrument(env, app):
    outputs, defs = app.run()
    for name in PREDICTIONS:
        assert defs[name] is None
    for name in INSTRUMENTS:
        assert name not in defs, name
    text = _texts(outputs)
    # the instruments wait for the predictions they answer, and name them
    rule = defs["INSTRUMENTS"]
    assert rule.answered_by("classic") == ["lab03.rho_ratio"]
    assert rule.answered_by("weight only") == list(ITEMS[:2])  # it shows the fp16 ridge
    assert rule.answered_by("decode") == list(ITEMS[1:3])  # int4 weights keep the fp16 peak
    assert rule.answered_by("lee") == ["lab03.nvfp4_byte_ratio"]
    assert rule.answered_by("explorer") == list(ITEMS[:3])
    assert rule.answered_by("kai run") == ["lab03.naive_bandwidth"]
    for name in ("classic", "weight only", "device", "decode", "lee", "explorer", "kai",
                 "kai run", "measure"):
        assert rule.notice_text(name, set()) in text, name
    assert defs["live_results"] is None  # nothing is measured on open
    assert defs["lab"].events() == []


def test_unlocked_run_shows_core_numbers(env, app):
    outputs, defs = app.run(defs=PREDICTIONS)
    for name in INSTRUMENTS:
        assert name in defs, name
    for name in ("classic_figure", "explorer_roofline", "rho_bars", "ai_bars", "ridge_bars",
                 "ibit_bars", "quant_figure", "naive_figure"):
        assert isinstance(defs[name], go.Figure), name
    # Part 1: rho(fp16)/rho(fp32) = 2 x 67 / 989.5 on the H100 SXM
    classic = defs["classic"]
    assert classic.rho_ratio == pytest.approx(
        precision_study.rho_change("gemm", GEMM_4096, "h100-sxm", "fp32", "fp16"))
    assert classic.rho_ratio == pytest.approx(0.1354, abs=1e-4)
    assert classic.ai_ratio == pytest.approx(2) and classic.ridge_ratio == pytest.approx(14.769,
                                                                                          abs=1e-3)
    labels = [t for tr in defs["classic_figure"].data for t in (tr.text or ())]
    assert "ridge (fp16, dense) = 295 FLOP/B" in labels
    assert "ridge (fp32, dense) = 20 FLOP/B" in labels
    # Part 2: the explorer's rows are core's for the default widgets
    weights = defs["circuit_weights"].value  # the editable estimates, shown to 3 decimals
    assert weights == {p: round(w, 3) for p, w in precision.CIRCUIT_WEIGHTS.items()}
    assert defs["explorer_rows"] == precision_study.study("gemm", GEMM_4096, "h100-sxm", DEFAULT_FORMATS,
                                             weights=weights)
    rho_bar = defs["rho_bars"].data[0]
    assert list(rho_bar.y) == [r.rho for r in defs["explorer_rows"]]
    assert list(rho_bar.x) == [precision_study.row_label(r) for r in defs["explorer_rows"]]
    # every bar chart whose colours mean something has a legend naming each colour (18.7)
    for name in ("rho_bars", "ai_bars", "ridge_bars", "ibit_bars"):
        fig = defs[name]
        named = {tr.marker.color for tr in fig.data if tr.showlegend}
        assert fig.layout.showlegend and set(fig.data[0].marker.color) <= named, name
    assert [tr.name for tr in defs["ai_bars"].data if tr.showlegend][:2] == [
        "math in fp32", "math in tf32"]
    roof_names = [tr.name for tr in defs["explorer_roofline"].data]
    for p in ("fp32", "tf32", "fp16", "fp8"):
        assert f"{p} (dense)" in roof_names
    assert "bf16 has the same peak as fp16 (same roof)" in _texts(outputs)
    assert defs["weight_only"].direction == "up"
    # Part 3: decode table; NVFP4 reads 16 / 4.5 = 3.55x fewer bytes (the graded number),
    # which the roofline's speedup equals as a ceiling
    assert defs["quant_rows"] == precision_study.decode_quant_table(4096, 4096, "h100-sxm")
    assert defs["nvfp4_row"].byte_ratio == pytest.approx(3.55, abs=0.01)
    assert defs["nvfp4_row"].speedup == pytest.approx(defs["nvfp4_row"].byte_ratio)
    # Part 4: Kai's 100 iterations of a 14336 x 4096 GEMV (117 MB, more than the H100's 50 MB
    # L2, so really from HBM): the naive figure is 100x low
    assert defs["kai"].fvt.ratio == pytest.approx(100)
    assert defs["kai"].fits_in_l2 is False
    assert defs["naive"] == precision_study.naive_bandwidth("gemv", {"n": 14336, "k": 4096}, "fp16",
                                               defs["device"], iterations=100)
    assert defs["tf32"] == precision_study.tf32_misreading("gemm", GEMM_4096, "h100-sxm")
    text = _texts(outputs)
    assert text.count("You predicted") == 4
    for shown in ("0.135", "34.1 → 4.62", "3.55", "33.5 GB/s", "3,350 GB/s", "1,150 FLOP/B"):
        assert shown in text, shown
    # the comparisons recorded what each instrument showed, under the stable item ids
    results = {e["item_id"]: e["payload"] for e in defs["lab"].events(kind="result")}
    assert set(results) == set(ITEMS)
    assert results["lab03.rho_ratio"]["actual"] == pytest.approx(0.1354, abs=1e-4)
    assert results["lab03.weight_only_rho"] == {"actual": "up", "correct": False}
    assert results["lab03.naive_bandwidth"]["actual"] == "too_low"
    assert results["lab03.nvfp4_byte_ratio"]["actual"] == pytest.approx(
        defs["nvfp4_row"].byte_ratio)


def test_other_op_and_weight_only_compute(env, app):
    widgets = _ns(op_picker="mlp_train", size_m=2048, size_n=14336, size_k=4096,
                  weight_only_compute="bf16", format_picker=["bf16", "nf4"])
    _, defs = app.run(defs=dict(PREDICTIONS, **widgets))
    shape = {"tokens": 2048, "d_model": 4096, "d_ff": 14336}
    assert defs["explorer_shape"] == shape
    rows = defs["explorer_rows"]
    assert rows == precision_study.study("mlp_train", shape, "h100-sxm", ["bf16", "nf4"],
                            compute_for_weight_only="bf16",
                            weights=defs["circuit_weights"].value)
    assert [r.compute for r in rows] == ["bf16", "bf16"]
    assert precision_study.row_label(rows[1]) == "nf4→bf16"


def test_editing_circuit_weights_moves_i_bit_only(env, app):
    weights = dict(precision.CIRCUIT_WEIGHTS, fp16=2.0)
    import marimo as mo

    from labs.core import style

    edited = mo.ui.dictionary({p: style.NumberBox(w, lo=0.001, hi=100.0, label=p)
                               for p, w in weights.items()})  # a real widget: it is laid out
    _, defs = app.run(defs=dict(PREDICTIONS, circuit_weights=edited,
                                **_ns(format_picker=["fp16", "bf16"])))
    fp16, bf16 = defs["explorer_rows"]
    assert fp16.i_bit == pytest.approx(2.0 * fp16.ai / 8)  # I_bit = F w / (8 B)
    shown = defs["circuit_weights"].value  # the boxes show 3 decimals
    assert shown["bf16"] == round(precision.CIRCUIT_WEIGHTS["bf16"], 3)
    assert bf16.i_bit == pytest.approx(shown["bf16"] * bf16.ai / 8)
    assert fp16.rho == pytest.approx(bf16.rho)  # the weights never touch AI, ridge or rho
    assert list(defs["ibit_bars"].data[0].y) == [fp16.i_bit, bf16.i_bit]


def test_missing_rate_failure_state_is_reached_and_recovered(env, app):
    tpu = dict(PREDICTIONS, **_ns(device_picker="tpu-v5e",
                                  format_picker=["fp32", "bf16", "int4-g128"]))
    outputs, defs = app.run(defs=tpu)
    text = _texts(outputs)
    assert "That combination does not work" in text
    assert "Google TPU v5e has no fp32, fp16 rate in the registry" in text
    assert "Traceback" not in text
    assert [r.storage for r in defs["explorer_ok"]] == ["bf16"]  # the rest keeps working
    assert isinstance(defs["explorer_roofline"], go.Figure)
    assert defs["tf32"] is None  # TPU: no fp32/tf32 rate, a message instead of cards
    assert "TF32 is a tensor-core mode only some GPUs have. Pick one that has it" in text
    # FP4 formats on an H100: the same message; a B200 has the rate
    fp4 = dict(PREDICTIONS, **_ns(format_picker=["fp16", "nvfp4"]))
    text = _texts(app.run(defs=fp4)[0])
    assert "NVIDIA H100 SXM5 has no fp4 rate" in text
    outputs, defs = app.run(defs=dict(fp4, **_ns(device_picker="b200")))
    assert "so these formats cannot run here" not in _texts(outputs)
    assert [r.compute for r in defs["explorer_ok"]] == ["fp16", "fp4"]
    # recovering: back to a supported choice, no message
    outputs, defs = app.run(defs=dict(PREDICTIONS, **_ns(device_picker="tpu-v5e",
                                                         format_picker=["bf16", "int8"])))
    text = _texts(outputs)
    assert "so these formats cannot run here" not in text
    assert len(defs["explorer_ok"]) == 2
    # the classic switch: the cause (both rates missing) and the way out (a device with both)
    assert ("Google TPU v5e has no fp32 or fp16 rate in the registry, so Part 1's fp32 → "
            "fp16 switch does not exist there: pick a device with both in Part 3") in text


def test_locking_through_the_forms_writes_predict_and_unlock_events(env, app):
    _, defs = app.run()
    answers = {"rho_ratio_form": 2, "weight_only_form": "down", "nvfp4_form": 4,
               "naive_form": "about_right"}
    for form, answer in answers.items():
        quiz.simulate_submit(defs[form], answer=answer, confidence=4, reason="a reason")
    lab = defs["lab"]
    assert {e["item_id"] for e in lab.events()} == set(ITEMS)
    for item in ITEMS:
        assert [e["kind"] for e in lab.events(item)] == ["predict", "unlock"]
    assert lab.first_prediction("lab03.nvfp4_byte_ratio").value == 4
    # reopening restores every lock from the ledger and opens the instruments
    _, again = app.run()
    assert again["nvfp4_prediction"].value == 4
    assert isinstance(again["explorer_roofline"], go.Figure)
    quiz.simulate_submit(again["rho_ratio_explain"], observe="rho fell",
                         explain="the ridge moved 15x")
    kinds = {(e["item_id"], e["kind"]) for e in again["lab"].events()}
    assert {(i, "result") for i in ITEMS} <= kinds
    assert {("lab03.rho_ratio", "observe"), ("lab03.rho_ratio", "explain")} <= kinds
    assert all(e["lab_id"] == "lab03" for e in again["lab"].events())


def test_reveal_mode_opens_every_gate_without_writing_predictions(env, app, monkeypatch):
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    outputs, defs = app.run()
    assert defs["rho_ratio_prediction"].value == pytest.approx(0.1354, abs=1e-4)
    assert defs["weight_only_prediction"].value == "up"
    assert defs["naive_prediction"].value == "too_low"
    assert defs["nvfp4_prediction"].value == pytest.approx(defs["nvfp4_row"].byte_ratio)
    for name in INSTRUMENTS:
        assert name in defs, name
    assert not defs["lab"].events(kind="predict")


# --- instruments open on what they reveal (LABS_SPEC §3) ---------------------------------

#: Each instrument's first name in ``defs``, and the predictions it waits for: the device card
#: (any device's peaks and ridges) answers Prediction 1; the decode table Predictions 2 and 3
#: (int4 weights at the fp16 peak with fewer bytes give ρ's direction); the explorer (AI,
#: ridge, ρ and time of any op and format) Predictions 1 to 3; Kai's benchmark (its TF32 card
#: shows the peaks) Predictions 1 and 4; the measurement (its decode table too) 1 to 3.
WAITS = {"device card": ("device_card", {"rho_ratio_prediction"}),
         "decode": ("quant_rows", {"weight_only_prediction", "nvfp4_prediction"}),
         "explorer": ("explorer_rows", {"rho_ratio_prediction", "weight_only_prediction",
                                        "nvfp4_prediction"}),
         "kai": ("naive", {"rho_ratio_prediction", "naive_prediction"}),
         "measure": ("measure_open", {"rho_ratio_prediction", "weight_only_prediction",
                                      "nvfp4_prediction"})}
#: The explorer set to Prediction 3's case in all but name (the review's repro: M = 2, the Q
#: projection's N = K, FP16 and NF4, 4.5 bits as NVFP4), and to the GEMV itself.
P3_CASES = [dict(op_picker="gemm", size_m=2, size_n=4096, size_k=4096,
                 format_picker=["fp16", "nf4"]),
            dict(op_picker="gemv", size_n=4096, size_k=4096, format_picker=["fp16", "nf4"])]


def test_each_instrument_waits_for_every_prediction_it_answers_in_any_order(env, app):
    for instrument, (name, waits) in WAITS.items():
        for missing in sorted(waits):  # every other prediction locked, this one open
            outputs, defs = app.run(defs={**PREDICTIONS, missing: None})
            assert name not in defs, (instrument, missing)
            item = PREDICTIONS[missing].item_id
            k = list(ITEMS).index(item) + 1
            notices = [line for line in _texts(outputs).split("Instrument hidden.")
                       if "Lock Prediction" in line]
            assert any(re.search(rf"\b{k}\b", n) for n in notices), (instrument, missing)
        # and only those: with them locked, the others open, it opens
        outputs, defs = app.run(defs={n: (p if n in waits else None)
                                      for n, p in PREDICTIONS.items()})
        assert name in defs, instrument


@pytest.mark.parametrize("widgets", P3_CASES, ids=["m2-nf4", "gemv"])
def test_the_explorer_reaches_prediction_3s_case_only_after_its_lock(env, app, widgets):
    # open before: nothing of the explorer runs, whatever its settings
    _, defs = app.run(defs=dict(PREDICTIONS, nvfp4_prediction=None, **_ns(**widgets)))
    for name in ("explorer_rows", "explorer_ok", "rho_bars", "ai_bars", "explorer_roofline"):
        assert name not in defs, name
    # locked: the same settings give the byte ratio the question asks for (NF4 and NVFP4
    # both take 4.5 bits a weight), with no setting-level gate in the way
    _, defs = app.run(defs=dict(PREDICTIONS, **_ns(**widgets)))
    fp16, nf4 = defs["explorer_ok"]
    reference = precision_study.decode_quant_table(4096, 4096, "h100-sxm", ["fp16", "nvfp4"])[1].byte_ratio
    assert fp16.seconds / nf4.seconds == pytest.approx(reference, rel=0.01)


def test_no_reflection_points_at_a_view_that_is_still_hidden(env, app):
    """With Predictions 1 and 2 locked, Part 2's reflection asks about what is on the page
    (its own cards), not the explorer, which waits for Prediction 3 too."""
    _, defs = app.run(defs=dict(PREDICTIONS, nvfp4_prediction=None, naive_prediction=None))
    assert "explorer_rows" not in defs
    form = defs["weight_only_explain"]
    labels = " ".join(str(v) for v in vars(form).values() if isinstance(v, str))
    labels += str(getattr(form, "text", ""))
    for pointer in ("GEMV", "MLP", "explorer", "try the"):
        assert pointer not in labels, pointer


def test_the_decode_speedup_is_a_ceiling_and_measurements_are_quoted(env, app, monkeypatch):
    """Prediction 3 grades a byte ratio, never a speedup; wherever the lab shows the
    roofline's decode speedup it calls it the speedup of the roofline bounds, the ideal (a
    ratio of two lower bounds is no upper bound on a measured speedup), says that a
    weight-only kernel also dequantises every weight, and quotes what real kernels measured
    (gpt-fast, Marlin)."""
    from labs.core import catalogue

    item = next(i for e in catalogue.catalogue() for i in e.items
                if i.item_id == "lab03.nvfp4_byte_ratio")
    assert "fewer bytes" in item.text and "faster" not in item.text
    outputs, defs = app.run(defs=PREDICTIONS)
    text = _texts(outputs)
    measured = precision_study.measured_weight_only_text()
    assert measured.split(";")[0] in text.replace("&#x27;", "'")  # the table's note
    assert "speedup of the roofline bounds (ideal)" in text and "dequantises every weight" in text
    assert "at most" not in text.split("Part 4")[0].split("Part 3")[-1]
    title = str(defs["quant_figure"].layout.title.text)
    assert "faster" not in title and "ceiling" not in title and "ideal" in title
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    _, defs = app.run()
    explanation = defs["nvfp4_prediction"].reason  # the instructor copy's "why"
    assert "the ideal" in explanation and "dequantises" in explanation
    assert "at most" not in explanation
    assert "so 3.55× faster" not in explanation


def test_live_without_a_device_is_a_message(env, app, monkeypatch):
    none = measure.DeviceInfo("none", "no device", "torch is not installed, so this machine "
                              "cannot be measured.")
    monkeypatch.setattr(measure, "detect", lambda *a, **k: none)
    outputs, defs = app.run(defs=dict(PREDICTIONS, **_ns(live_run=True)))
    assert defs["live_results"]["error"].startswith("torch is not installed")
    assert "Live measurement is off." in _texts(outputs)
    assert "torch is not installed, so this machine cannot be measured." in _texts(outputs)
    assert "live_decode" not in defs and "Traceback" not in _texts(outputs)
    assert not [e for e in defs["lab"].events() if e["item_id"].startswith("lab03.live_")]


@pytest.mark.slow
def test_live_tiny_cpu_measurement(env, app):
    pytest.importorskip("torch")
    # tiny sizes so the real measurement path runs in a few seconds on a CPU
    tiny = {"LIVE_PEAK_SIZES": (64, 128), "LIVE_STREAM_MB": 4, "LIVE_PEAK_PRECISIONS": ("fp32",)}
    settings = _ns(live_budget=1.0, live_matrix=(128, 256))  # the settings cell's names
    settings["live_settings"] = _live.read_at_press(matrix=settings["live_matrix"],
                                                          budget=settings["live_budget"])
    outputs, defs = app.run(defs=dict(PREDICTIONS, **tiny, **settings, **_ns(live_run=True)))
    live = defs["live_results"]
    assert live["error"] is None, live["error"]
    # the baseline is what weight-only formats dequantise to on the measured roofline: with
    # only fp32 measured, fp32 (a CPU's fp16 matmul is emulated: never its baseline by default)
    base = precision_study.dequant_target(live["reference"])
    assert base == "fp32"
    assert base in live["measured_s"] or "int8" in live["measured_s"]
    rows = {r["storage"]: r for r in defs["live_decode"]}
    assert set(rows) == {base, "fp8", "int8", "nvfp4", "int4-g128"}
    assert defs["live_decode"][0]["storage"] == base
    assert rows["nvfp4"]["status"].startswith("not timed")
    for r in rows.values():
        if r["measured_s"]:
            assert r["error_pct"] == pytest.approx(precision_study.percent_error(r["measured_s"],
                                                                   r["predicted_s"]))
    assert isinstance(defs["live_figure"], go.Figure)
    events = [e for e in defs["lab"].events(kind="result") if e["item_id"] not in ITEMS]
    assert {e["item_id"] for e in events} == {"lab03.live_peaks", "lab03.live_gemv"}
    assert events[0]["payload"]["kind"] == live["info"].kind
    assert "Download lab03_measurements.csv" in _texts(outputs)


@pytest.mark.slow
def test_export_html_student_and_instructor_copies(tmp_path_factory):
    student = export_page(LAB_FILE, tmp_path_factory)
    assert "Lock Prediction" in student and "two precisions, two ridges" not in student
    assert "two precisions, two ridges" not in student  # Part 1's roofline title
    teacher = export_page(LAB_FILE, tmp_path_factory, reveal=True)
    assert "two precisions, two ridges" in teacher
    assert "GEMM in fp16" in teacher and "one roof per math precision" in teacher
    assert "Lock your prediction to" not in teacher and "Lock Prediction" not in teacher


# --- moved from tests/test_physics_review_labs.py (filed by the module they test) ----
from types import SimpleNamespace as NS  # noqa: E402

import labs  # noqa: E402

LABS = Path(labs.__file__).parent


@pytest.fixture(scope="module")
def lab3():
    return load_app(LABS / "lab_03_precision_rho.py", "_review_lab03")


def test_says_the_gemv_timing_rotates_cache_cold_copies(env, lab3):
    """(The physics review, in the labs: Lab 3: what the GEMV timing does.)"""
    outputs, _ = lab3.run()
    text = _texts(outputs)
    assert "cache flush between" not in text
    assert "rotate through copies of the weight matrix" in text


def test_kais_gemv_streams_from_hbm_and_the_small_one_is_flagged(env, lab3):
    """(The physics review, in the labs: Lab 3: the L2 trap.)"""
    # (its TF32 card shows the H100's peaks: Kai's benchmark waits for Prediction 1 too)
    naive = {"naive_prediction": choice("lab03.naive_bandwidth", "too_low"),
             "rho_ratio_prediction": PREDICTIONS["rho_ratio_prediction"]}
    outputs, defs = lab3.run(defs=naive)
    kai = defs["kai"]
    assert kai.fits_in_l2 is False  # 117 MB > 50 MiB: really HBM traffic
    assert "14336×4096" in _texts(outputs)
    small = {"naive_op": NS(value=("gemv", {"n": 4096, "k": 4096}))}
    outputs, defs = lab3.run(defs={**naive, **small})
    assert defs["naive"].fits_in_l2 is True
    text = _texts(outputs)
    assert "second trap" in text and "L2" in text
    assert "traffic from L2 after the 1st iteration" in text


# --- a fresh review's findings: no answer readable before its lock ----------------------------

def _visible(outputs) -> str:
    from notebook_support import visible_text

    return " ".join(visible_text(o) for o in outputs if o is not None)


def test_prediction_3_s_bits_are_nowhere_before_its_lock(env, app):
    """NVFP4's 4.5 bits were readable before Prediction 3's lock three ways: Part 4's format
    picker showed (its labels give each format's bits, "NVFP4 (E2M1) · 4.5 bits"), Part 2's
    math peek gave the method ("4 + 16/128 = 4.125 bits"), and the question spelled out the
    layout ("one 8-bit scale per block of 16"), defusing "ignores the scales" (4x)."""
    from labs.core import catalogue

    item = next(i for e in catalogue.catalogue() for i in e.items
                if i.item_id == "lab03.nvfp4_byte_ratio")
    assert "block of 16" not in item.text and "8-bit scale" not in item.text
    assert "NVIDIA specifies" in item.text and "https://docs.nvidia.com/" in item.text
    open_p3 = {**PREDICTIONS, "nvfp4_prediction": None}
    outputs, defs = app.run(defs=open_p3)
    text = _texts(outputs)
    assert "format_picker" not in defs and "op_picker" not in defs
    for leak in ("4.5 bits", "4 + 16/128", "4.125", "bits per element include block scales"):
        assert leak not in text, leak
    outputs, defs = app.run(defs=PREDICTIONS)  # all locked: the picker and its bits show
    assert "NVFP4 (E2M1) · 4.5 bits" in _texts(outputs)


def test_prediction_2_s_rule_waits_for_its_lock_whatever_the_order(env, app):
    """With Prediction 3 locked before 2, Part 3's decode table showed int4-g128 at "math
    fp16" with 8.67 MB against 33.6 MB, and its peak "weights dequantised to fp16": same peak,
    fewer bytes, so "ρ up" in one step. Part 2's introduction stated the rule outright."""
    open_p2 = {**PREDICTIONS, "weight_only_prediction": None}
    outputs, defs = app.run(defs=open_p2)
    text = _visible(outputs)
    assert "quant_rows" not in defs and "quant_figure" not in defs
    assert "decides which peak applies" not in text and "dequantised to" not in text
    assert "nvfp4_row" in defs  # Lee's own comparison (the byte ratio) opens on Prediction 3
    outputs, defs = app.run(defs=PREDICTIONS)
    assert "decides which peak applies" in _visible(outputs)


def test_kai_s_l2_resident_repeats_are_timed_at_the_l2_and_advice_fits_the_device(env, app):
    """A working set in L2 showed "bandwidth really used 3,350 GB/s" (the H100's HBM) next
    to a callout saying L2 traffic can exceed it; on the B200, whose L2 holds Kai's 117 MB,
    the callout advised timing "a working set larger than L2 (Kai's 117 MB)"."""
    small = {"naive_op": SimpleNamespace(value=("gemv", {"n": 4096, "k": 4096}))}
    outputs, defs = app.run(defs={**PREDICTIONS, **small})
    naive, text = defs["naive"], _visible(outputs)
    assert naive.l2_gbs == 6650.0 and naive.traffic_gbs > 3350
    assert f"{naive.traffic_gbs:,.0f} GB/s" in text and "from L2 at 6,650 GB/s" in text
    assert "50 MiB L2" in text and "52.4 MB" not in text
    b200 = {"device_picker": SimpleNamespace(value="b200"), "device": hardware.get("b200")}
    outputs, defs = app.run(defs={**PREDICTIONS, **b200})
    text = _visible(outputs)
    assert defs["naive"].fits_in_l2 and defs["naive"].l2_gbs is None
    assert "no L2 bandwidth is published for the NVIDIA B200" in text
    assert "even Kai's 117 MB fit" in text and "(Kai's 117 MB)" not in text


def test_units_and_wording_the_review_flagged(env, app):
    """int8 ridges read "FLOP/B" beside TOPS; Part 4 said "Now that Parts 1 to 3 are
    predicted" before they were; the H100's L2 was "50 MB" in one place and "52.4 MB" in
    another (it is 50 MiB)."""
    outputs, defs = app.run(defs=PREDICTIONS)
    text = _visible(outputs)
    assert "ridge (int8, dense) = 591 OP/B" in text
    assert "ridge (int8, dense) = 591 FLOP/B" not in text
    assert "Now that Parts 1 to 3 are predicted" not in text
    assert "50 MiB" in text and "50 MB" not in text and "52.4 MB" not in text


def test_a_gemv_timed_faster_than_its_own_bound_is_flagged(env, app, monkeypatch):
    """A CPU's fp16 GEMV measured below its own "at least" bound (the bound used fp16's
    emulated GEMM peak) and plotted above the fp16 roof as "measured, compute-bound", with no
    word. The table, a callout and the figure's note now say so."""
    pytest.importorskip("torch")
    real = measure.sweep_gemv

    def faster_than_bound(*args, **kwargs):
        rows = real(*args, **kwargs)
        for r in rows[:1]:  # the baseline, timed at half its bound
            if r["measured_us"] and r["predicted_us"]:
                r["measured_us"] = r["predicted_us"] / 2
        return rows

    monkeypatch.setattr(measure, "sweep_gemv", faster_than_bound)
    tiny = {"LIVE_PEAK_SIZES": (64, 128), "LIVE_STREAM_MB": 4, "LIVE_PEAK_PRECISIONS": ("fp32",)}
    settings = _ns(live_budget=1.0, live_matrix=(128, 256))
    settings["live_settings"] = _live.read_at_press(matrix=settings["live_matrix"],
                                                          budget=settings["live_budget"])
    outputs, defs = app.run(defs=dict(PREDICTIONS, **tiny, **settings, **_ns(live_run=True)))
    assert defs["live_results"]["error"] is None, defs["live_results"]["error"]
    base = defs["live_decode"][0]
    assert base["below_bound"] is True
    text = _visible(outputs)
    assert "faster than its own bound" in text and "Faster than its own bound: fp32" in text
    assert f"Above its own roof: GEMV {base['storage']}" in text
