"""Lab 7's lesson builders (labs.core.course.lessons.your_model) and the roofline's step
figure (ui/figures/profile.step_bound_figure), held against hand arithmetic on the tiny
decoder (4 layers, d_model 512, 8 query heads, 2 KV heads of 64, SwiGLU 1,792, vocabulary
16,384, fp32) and the H100 SXM5 spec sheet (67 TFLOP/s fp32, 3,350 GB/s), never against
what the builders compute."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from labs.core import figures, style, tiny_models
from labs.core.course.lessons import your_model

DECODE_B1 = dict(phase="decode", batch=1, context=1024, precision="fp32", attention="math")
DECODE_B64 = dict(DECODE_B1, batch=64)
C = tiny_models.TINY_DECODER


def test_option_label_finds_the_label_of_a_value():
    options = {"The large weight GEMMs": "weight GEMMs", "Attention": "attention (KV cache)"}
    assert your_model.option_label(options, "attention (KV cache)") == "Attention"


def test_the_model_card_states_the_size_and_the_ridge_it_is_given():
    text = your_model.model_card(C, "NVIDIA H100 SXM5", "fp32", "20 FLOP/B")
    # embedding and LM head 16,384 x 512 each; per layer q, o 512^2, k, v 512 x 128, MLP
    # 3 x 512 x 1,792, two norms of 512; a final norm: 30,413,312 parameters
    assert "30.4 M parameters" in text and "vocabulary 16,384" in text
    assert "8 query heads sharing 2 KV heads of 64" in text
    assert "the NVIDIA H100 SXM5 spec sheet (ridge (fp32, dense) = 20 FLOP/B)" in text


def test_prediction_1_explains_the_weights_read_against_the_kv_cache():
    text = your_model.dominant_small_explanation("h100-sxm", DECODE_B1)
    # weights read: 30,413,312 - 16,384 x 512 + 512 (one embedding row) = 22,025,216 x 4 B
    # = 88.1 MB; KV cache 2 x 4 layers x 2 heads x 64 x 1,024 x 4 B = 4.19 MB
    assert "(88.1 MB in fp32;" in text and "only 4.2 MB of KV cache" in text
    assert text.startswith("A batch-1 decode step") and "NVIDIA H100 SXM5 the weight GEMMs" in text


def test_prediction_2_explains_the_kv_cache_and_its_copies():
    text = your_model.dominant_large_explanation("h100-sxm", DECODE_B64)
    # KV cache x 64 sequences = 268 MB; the math attention's copies to 8 query heads:
    # 2 x 8 x 1,024 x 64 x 64 x 4 B x 4 layers = 1.07 GB, written then read: 2.15e9 B, "2.1 GB"
    # (format_bytes: one decimal below 100 GB)
    assert "every one of the 64 sequences" in text and "KV cache: 268 MB in all" in text
    assert "(2.1 GB written and read again)" in text
    assert "the attention (KV cache) take" in text


def test_prediction_3_derives_the_share_from_the_launches():
    text = your_model.memory_share_explanation("h100-sxm", DECODE_B1)
    # fp32 ridge 67e12 / 3,350e9 = 20 FLOP/B; a GEMV's AI 2NK / ((K + NK + N) 4 B) = 0.50;
    # 172 kernels x 5 µs = 860 µs; bound T = 37.8 µs: share T / (T + 860 µs) = 4.2%; a bare
    # launch, 172 x 2.5 = 430 µs: 37.8 / 467.8 = 8.1%
    # highest AI: the LM head at batch 1, 2·16,384·512 / (4·(16,384·512 + 512 + 16,384)) = 0.499
    assert "highest AI 0.499 FLOP/B against the NVIDIA H100 SXM5's fp32 ridge of 20 FLOP/B" in text
    assert "172 kernels × 5 µs = 860 µs" in text and "= 4.2% of the step" in text
    assert "about 2.5 µs (share 8.1%)" in text


def test_prediction_3_states_the_ridge_of_the_steps_precision():
    # a bf16 step: H100 SXM's bf16 ridge 989.5e12 / 3,350e9 = 295 FLOP/B, not the fp32 one
    text = your_model.memory_share_explanation("h100-sxm", dict(DECODE_B1, precision="bf16"))
    assert "the NVIDIA H100 SXM5's bf16 ridge of 295 FLOP/B" in text


def test_the_weights_read_use_the_precisions_element_size():
    # bf16: the table 16,384 x 512 x 2 B = 16.8 MB, one row 512 x 2 B = 1,024 B, "1.0 kB"
    reads = your_model.weights_read_text(C, "bf16", 1)
    assert "16.8 MB embedding table" in reads and "(1.0 kB)" in reads


def test_prediction_4_derives_the_ratio_the_launches_keep_near_1():
    text = your_model.bf16_ratio_explanation("h100-sxm", DECODE_B1)
    # (T/2 + 860 µs) / (T + 860 µs) with T = 37.8 µs: 878.9 / 897.8 = 0.979
    assert "The roofline alone says 0.50×" in text and "launches (5 µs each) 860 µs" in text
    assert "= 0.979×, on a GPU in eager mode" in text


def test_prediction_5_names_the_type_closest_to_its_bound():
    ratios = {"weight GEMMs": 1.04, "attention (KV cache)": 3.0, "norms & elementwise": 25.0}
    text = your_model.best_predicted_explanation(ratios, 256)
    assert ("a 256-token prefill's weight GEMMs would run 1.04× their bound, its norms and "
            "elementwise ops 25.0×.") in text


def test_the_roofline_s_leader_is_named_with_its_share():
    times = {"weight GEMMs": 3e-6, "attention (KV cache)": 1e-6}
    names = {"weight GEMMs": "Weight GEMMs", "attention (KV cache)": "Attention"}
    assert your_model.roofline_leader_label(times, names) == (
        "the roofline (spec sheet) says Weight GEMMs (75.0% of the bound)")


def _profile(**over):
    rows = [{"name": "aten::mm"}] * 10
    values = dict(device="this CPU", forward_s=2e-3, op_sum_s=1.5e-3, overhead_s=5e-4,
                  bound_s=1e-4, threads=1, rows=rows, kernel_calls=8, reps=5,
                  roofline="this CPU (measured)", op_time_caveat=None,
                  by_op_type=lambda: [{"op_type": "overhead (outside operators)", "share": 0.6},
                                      {"op_type": "norms & elementwise", "share": 0.3},
                                      {"op_type": "weight GEMMs", "share": 0.1}],
                  share=lambda regime: 0.25 if regime == "memory-bound" else 0.0)
    return SimpleNamespace(**{**values, **over})


def test_the_measured_leader_is_among_the_question_s_types_not_the_overhead_row():
    names = {"norms & elementwise": "Norms and elementwise ops", "weight GEMMs": "Weight GEMMs"}
    text = your_model.measured_leader_note(_profile(), names, names)
    assert text.startswith("**Measured on this CPU** (not graded")
    assert "**Norms and elementwise ops** take the most time, 30% of the step." in text


def test_the_measured_step_s_cards():
    cards = your_model.decode_step_cards(_profile())
    assert [c[0] if isinstance(c, tuple) else c.label for c in cards] == [
        "Measured step", "Sum of operators", "Overhead", "Roofline bound"]
    assert cards[0][1:] == ("2 ms", "median of the whole pass (1 CPU thread(s))")
    assert cards[1][2] == "10 aten calls (8 not views), median of 5 profiled passes"
    assert cards[2].value == "500 µs" and "Python, dispatch" in cards[2].caption
    assert "cannot be told apart" in your_model.decode_step_cards(
        _profile(op_time_caveat="scaled"))[2].caption
    assert your_model.decode_step_cards(_profile(threads=None))[0][2] == (
        "median of the whole pass (GPU)")


def test_the_memory_share_cards_and_the_measured_share():
    cards = your_model.memory_share_cards(1.0, 0.042, [("a bare CUDA launch", 2.5, 0.081)], 1)
    assert [(c.label, c.value) for c in cards] == [
        ("The roofline alone", "100.0%"), ("Roofline + 5 µs per kernel", "4.2%"),
        ("At 2.5 µs per kernel", "8.1%")]
    assert all(isinstance(c, style.Metric) and c.kind == "memory-bound" for c in cards)
    assert "of the bound of a batch-1 decode step" in cards[0].caption
    assert "25.0% of the measured step is in memory-bound operators" in (
        your_model.measured_memory_share_note(_profile()))


def test_the_math_peeks_paragraphs_are_flush_markdown_with_hand_numbers():
    reads = your_model.weights_read_text(C, "fp32", 1)
    # allocated 30,413,312 x 4 B = 122 MB; read 22,025,216 x 4 B = 88.1 MB; the table 16,384 x 512 x 4 B = 33.6 MB,
    # one row 512 x 4 B = 2,048 B, "2.0 kB"
    assert "122 MB in fp32" in reads and "88.1 MB of them" in reads
    assert "33.6 MB embedding table" in reads and "(2.0 kB)" in reads
    grows = your_model.batch_growth_text(C, 64, 1024)
    # 64 tokens read 64 embedding rows: 22,025,216 - 512 + 64 x 512 = 22,057,472 x 4 B = 88.2 MB
    assert "weights read 88.2 MB\nper step (of 122 MB allocated)" in grows
    assert "batch\n64 and context 1,024: 268 MB" in grows and "4× more bytes" in grows
    for text in (reads, grows):  # appended to a cell's dedented markdown: no indent, no code
        assert not [line for line in text.splitlines() if line.startswith(" ")], text


def test_the_operator_table_rows():
    rows = [{"name": "aten::mm", "module": "lm_head", "shapes": "[1, 512]", "bound_s": 2e-5,
             "measured_s": 5e-5, "error_pct": 149.6, "lost_s": 3e-5, "regime": "memory-bound"},
            {"name": "aten::view", "module": "", "shapes": "", "bound_s": 0.0,
             "measured_s": 1e-6, "error_pct": None, "lost_s": 1e-6, "regime": "overhead-bound"}]
    first, view = your_model.operator_table_rows(rows)
    assert first == {"operator": "aten::mm", "module": "lm_head", "shapes": "[1, 512]",
                     "predicted (bound)": "20 µs", "measured": "50 µs", "error %": 150,
                     "lost": "30 µs", "regime": "memory-bound"}
    assert view["predicted (bound)"] == "—" and view["error %"] == "—"


def test_the_change_cards():
    result = {"change": "precision", "old_s": 2e-3, "new_s": 1.5e-3, "ratio": 0.75,
              "spread": 1.07, "threads": 1}
    cards = your_model.change_cards(result, "fp32 → bf16", 0.5, None)
    assert [c[:2] for c in cards] == [
        ("Before", "2 ms"), ("After", "1.5 ms"), ("Measured new / old", "0.75×"),
        ("Roofline's new / old", "0.5×"), ("Roofline + launches", "not modelled")]
    assert cards[2][2].endswith("; rounds agree within 1.07×")
    compiled = your_model.change_cards(
        {"change": "compile", "old_s": 2e-3, "new_s": 1e-3, "ratio": 0.5, "threads": 0,
         "compile_s": 12.5}, "torch.compile", None, None)
    assert compiled[-1] == ("Compile time", "12.5 s", "first call")
    assert compiled[0][2] == "measured step, all CPU thread(s)"
    assert "rounds agree" not in compiled[2][2]


def test_the_roofline_s_step_figure():
    fig = figures.step_bound_figure({"weight GEMMs": 3e-6, "attention (KV cache)": 1e-6},
                                    title="one step")
    bars = fig.data[0]
    assert list(bars.x) == ["weight GEMMs", "attention (KV cache)"]
    assert list(bars.y) == pytest.approx([3.0, 1.0])  # µs
    assert list(bars.text) == ["3 µs · 75.0%", "1 µs · 25.0%"]
    assert fig.layout.yaxis.title.text == "roofline bound (µs)"
