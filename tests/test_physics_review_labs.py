"""Issue 14 (and issue 18 points 3 and 6) in the labs: the text and the instruments agree with
core's numbers. Each test names its item; each failed on the labs the review read."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace as NS

import pytest

import labs
from labs.core import formulas as F
from labs.core import fusion as FU
from labs.core import models, quiz
from labs.core import roofline as R
from notebook_support import choice, load_app, visible_text

LABS = Path(labs.__file__).parent


def _texts(outputs) -> str:
    return "\n".join(getattr(o, "text", "") or "" for o in outputs if o is not None)


def _plain(markup: str) -> str:
    import html
    return html.unescape(re.sub(r"<[^>]+>", " ", markup))


@pytest.fixture(scope="module")
def lab1():
    return load_app(LABS / "lab_01_memory_wall.py", "_review_lab01")


@pytest.fixture(scope="module")
def lab2():
    return load_app(LABS / "lab_02_design_challenge.py", "_review_lab02")


@pytest.fixture(scope="module")
def lab3():
    return load_app(LABS / "lab_03_precision_rho.py", "_review_lab03")


@pytest.fixture(scope="module")
def lab4():
    return load_app(LABS / "lab_04_fusion.py", "_review_lab04")


# --- 1. the math precision follows from the operands in Lab 2's pickers ------------------------

def test_1_lab2_offers_no_independent_math_picker_and_refuses_an_impossible_design(env, lab2):
    preds = {"dominant_prediction": choice("lab02.decode_dominant", "weight GEMMs"),
             "oom_prediction": quiz.Prediction("lab02.oom_batch", 50, units="sequences")}
    outputs, defs = lab2.run(defs={**preds,
                                   "weight_picker": NS(value="int4-g128"),
                                   "activation_picker": NS(value="int8"),
                                   "kv_picker": NS(value="bf16"),
                                   "model_picker": NS(value="llama-3-8b"),
                                   "device_picker": NS(value="jetson-orin-nx-16gb")})
    assert "compute_picker" not in defs
    assert defs["design_compute"] == "int8"  # W4A8: the int4 weights dequantise to int8
    v = defs["live_verdict"]
    assert v == models.check_design("edge", "jetson-orin-nx-16gb", model="llama-3-8b", batch=1,
                                    seq_len=4096, weight_precision="int4-g128",
                                    activation_precision="int8")
    # not ruled out at spec, but the 4k prefill misses 2.5 s at achievable rates
    assert v.not_ruled_out and v.failed == ["prefill time"]


# --- 2. spec-only is "not ruled out"; the verdict is at achievable rates ----------------------

def test_2_lab2_never_calls_a_design_feasible(env, lab2):
    src = (LABS / "lab_02_design_challenge.py").read_text(encoding="utf-8")
    assert not re.search(r"\bfeasible\b", src, re.I)


# --- 3. Lab 4's refused tile: the story and the model agree ------------------------------------

def test_3_lab4_scenario_names_the_pool_the_model_says_overflows(env, lab4):
    outputs, defs = lab4.run()
    card = next(_plain(o.text) for o in outputs if o is not None and "Lena Fischer" in o.text)
    tile = FU.flash_tile(256, 256, 128, "h100-sxm")
    assert tile.overflows == ("registers",)
    story = card.split("refused:")[1].split(".")[0]
    assert "registers" in story and "shared memory" not in story


# --- 5. two ceilings in Lab 4's chain roofline, and it says why -------------------------------

def test_5_lab4_draws_the_vector_ceiling_and_says_several_ceilings_is_a_lesson(env, lab4):
    preds = {"speedup_prediction": quiz.Prediction("lab04.fusion_speedup", 2.0, "×"),
             "tiny_prediction": choice("lab04.tiny_tensor", "launches"),
             "oom_prediction": quiz.Prediction("lab04.oom_seq_len", 30_000, "tokens"),
             "tile_prediction": choice("lab04.largest_tile", 128)}
    outputs, defs = lab4.run(defs=preds)
    fig = defs["fusion_roofline"]
    names = [t.name for t in fig.data]
    assert "vector ceiling (non-tensor)" in names and "fp16 (dense)" in names
    vec = next(t for t in fig.data if t.name == "vector ceiling (non-tensor)")
    assert max(vec.y) == pytest.approx(67)  # the H100's FP32 CUDA-core rate
    shown = _texts(outputs)
    assert "Two compute ceilings" in shown and "lesson" in shown


# --- 9 and 10. Lab 3: what the GEMV timing does; the L2 trap -----------------------------------

def test_9_lab3_says_the_gemv_timing_rotates_cache_cold_copies(env, lab3):
    outputs, _ = lab3.run()
    text = _texts(outputs)
    assert "cache flush between" not in text
    assert "rotate through copies of the weight matrix" in text


def test_10_lab3_kais_gemv_streams_from_hbm_and_the_small_one_is_flagged(env, lab3):
    naive = {"naive_prediction": choice("lab03.naive_bandwidth", "too_low")}
    outputs, defs = lab3.run(defs=naive)
    kai = defs["kai"]
    assert kai.fits_in_l2 is False  # 117 MB > 50 MB: really HBM traffic
    assert "14336×4096" in _texts(outputs)
    small = {"naive_op": NS(value=("gemv", {"n": 4096, "k": 4096}))}
    outputs, defs = lab3.run(defs={**naive, **small})
    assert defs["naive"].fits_in_l2 is True
    text = _texts(outputs)
    assert "second trap" in text and "L2" in text
    assert "traffic from L2 after the 1st iteration" in text


# --- issue 18.3: instruments open on the question's case --------------------------------------

def test_18_lab1_lever_chart_opens_on_the_question_and_agrees_with_the_verdict(env, lab1):
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


def test_18_lab2_sam_asks_the_question_the_form_asks(env, lab2):
    outputs, defs = lab2.run()
    text = _texts(outputs)
    assert "first batch that runs out of memory" in text
    assert "how many can we batch before" not in text.lower()


def test_18_lab4_out_of_memory_names_the_score_matrix(env, lab4):
    preds = {"oom_prediction": quiz.Prediction("lab04.oom_seq_len", 30_000, "tokens")}
    # the attention widgets share one cell: all its names are given (with its layout's)
    _, defs = lab4.run(defs={**preds, "seq_slider": NS(value=262_144),
                             "attn_batch": NS(value=32), "attn_heads": NS(value=64),
                             "head_dim_picker": NS(value=128),
                             "attention_controls": "(attention_controls)"})
    shown = visible_text(defs["attention_memory"])
    # the unfused budget names its S^2 term; the fused one (Q, K, V, O alone: 550 GB) its own
    assert "score matrix (B×H×S×S) is the term that crosses capacity" in shown
    assert shown.count("Q, K, V, O is the term that crosses capacity") == 1


def test_18_lab4_tpu_in_part_4_is_a_sentence_not_a_keyerror(env, lab4):
    preds = {"tile_prediction": choice("lab04.largest_tile", 128)}
    _, defs = lab4.run(defs={**preds, "device_picker": NS(value="tpu-v5e"),
                             "precision_picker": NS(value="bf16")})
    msg = visible_text(defs["tile_status"])
    assert "Pick one of" in msg and "KeyError" not in msg
    assert "'The registry" not in msg and '"The registry' not in msg


def test_2_lab2_judges_at_the_students_own_measured_roofs_when_lab3_measured_the_device(env, lab2):
    # Lab 3's Part 5 recorded a measurement of an H100 SXM: 700 of 989.5 TFLOP/s in bf16,
    # 3,000 of 3,350 GB/s. Lab 2 judges an H100 design at those fractions, and says so.
    lab3 = quiz.LabSession("lab03", str(LABS / "lab_03_precision_rho.py"))
    lab3.record("result", "lab03.live_peaks", {
        "device": "NVIDIA H100 80GB HBM3", "kind": "cuda", "registry_key": "h100-sxm",
        "date": "2026-01-02T03:04:05", "rows": [
            {"what": "memory bandwidth (GB/s)", "measured": 3000.0, "spec": 3350.0},
            {"what": "bf16 peak (TFLOP/s)", "measured": 700.0, "spec": 989.5},
            {"what": "fp8 peak", "measured": None, "spec": 1979, "detail": "no fp8 here"}]})
    preds = {"dominant_prediction": choice("lab02.decode_dominant", "weight GEMMs"),
             "oom_prediction": quiz.Prediction("lab02.oom_batch", 50, units="sequences")}
    outputs, defs = lab2.run(defs={**preds, "device_picker": NS(value="h100-sxm")})
    der = defs["design_derating"]
    assert "your Lab 3 measurement of 2026-01-02" in der.source
    assert der.compute_for("bf16") == pytest.approx(700 / 989.5)
    assert der.bandwidth == pytest.approx(3000 / 3350)
    assert defs["live_verdict"].derating == der
    assert "your Lab 3 measurement" in _texts(outputs)
    # another device: the sourced default, not this measurement
    _, defs = lab2.run(defs={**preds, "device_picker": NS(value="b200")})
    assert defs["design_derating"] == R.achievable("b200")
