"""Lab 6's lesson builders (labs.core.course.lessons.many_chips): each card list and derivation
states the numbers a hand calculation from the datasheets gives (H100 SXM: 989.5 TFLOP/s bf16
dense, 3,350 GB/s; H100 PCIe: 756 TFLOP/s; NVLink 4: 450 GB/s one way, α 1 µs; PCIe Gen5 x16:
63 GB/s one way, α 3 µs; NVLink 3: 300 GB/s; InfiniBand HDR: 25 GB/s a NIC, α 5 µs)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from labs.core import sharding, units
from labs.core.course.lessons import many_chips

ALLREDUCE = {"op": "all-reduce", "nbytes": 1e9, "n": 8, "link": "nvlink4"}
SERVE = {"model": "llama-3-70b", "device": "h100-pcie", "link": "pcie5-x16", "batch": 1,
         "seq_len": 8192}
TRAIN = {"model": "llama-3-8b", "device": "a100-sxm-80gb", "n": 32, "link": "nvlink3",
         "nic": "ib-hdr", "nics_per_node": 8, "grad_bytes": 2, "tokens_per_gpu": 1024,
         "algorithm": "ring"}
#: Llama-3-8B's parameters (meta-llama config) and Prediction 5's all-reduce by hand: NCCL's
#: Ring over 4 nodes of 8, the node's 8 HDR NICs (8 x 25 = 200 GB/s) slower than NVLink 3:
#: 2 x 31/32 x 2P / 200e9, plus 62 steps (6 between nodes at 5 µs, 56 at 1 µs).
P_8B = 8_030_261_248
P5_COMM = 2 * 31 / 32 * 2 * P_8B / 200e9 + (56 * 1 + 6 * 5) * 1e-6
P5_BWD = 4 * P_8B * 1024 / 312e12  # the A100's bf16 dense peak


def test_datasheet_cards_quote_the_chip_and_the_link():
    peak, hbm, link = many_chips.datasheet_cards("h100-sxm", "nvlink4", "bf16")
    assert (peak.label, peak.value) == ("Peak π (bf16, dense)", "989.5 TFLOP/s")
    assert hbm.value == "3,350 GB/s"
    assert link.value.startswith("900 GB/s")  # the headline, both directions


def test_native_link_note_names_the_chips_own_link_or_says_there_is_none():
    assert "**NVLink 4" in many_chips.native_link_note("h100-sxm")
    assert "**PCIe Gen5 x16**" in many_chips.native_link_note("h100-pcie")
    assert "No chip-to-chip link is sourced" in many_chips.native_link_note("tpu-v7x")


def test_pair_error_says_where_to_pick_or_passes_the_models_message():
    text = many_chips.pair_error("h100-pcie", "nvlink4", ValueError("unused"),
                                 "in the serving pickers above")
    assert "NVLink 4" in text and "H100 PCIe" in text
    assert text.endswith("Then pick a chip and a link that go together in the serving pickers "
                         "above.")
    assert many_chips.pair_error("h100-sxm", "nvlink4", ValueError("n=12 is no node")) \
        == "n=12 is no node"


def test_allreduce_derivation_halves_the_headline_and_adds_fourteen_steps():
    text = many_chips.allreduce_derivation(ALLREDUCE)
    # 2 x 7/8 x 1 GB / 450 GB/s = 3.889 ms; 2(8-1) = 14 steps x 1 µs; 3.903 ms in all
    assert "B = 450 GB/s" in text
    assert "2 × 7/8 × 1 GB / 450 GB/s = 3.89 ms" in text
    assert "14 steps × α (1 µs, stated) = 14 µs" in text
    assert "Total 3.9 ms" in text and "not 1 GB / 900 GB/s" in text
    # a ring in NCCL: 370 of 450 GB/s, so 3.889 / (370/450) + 0.014 = 4.74 ms
    assert "about 82% of it, about 4.74 ms" in text


def test_ring_cards_split_the_time_into_latency_and_bandwidth():
    one_way, total, real, latency, bandwidth, crossover = many_chips.ring_cards("nvlink4", 8)
    assert one_way.value == "450 GB/s"
    assert total.value == units.format_seconds(14e-6 + 1.75e9 / 450e9)
    assert real.value == units.format_seconds(14e-6 + 1.75e9 / 370e9)
    assert "nccl-tests, NCCL_ALGO=Ring, 8xH100" in real.caption
    assert latency.value == units.format_seconds(14e-6)
    assert bandwidth.caption == "1.75 × 1 GB / 450 GB/s"
    # the terms are equal at S* = n α B = 8 x 1 µs x 450 GB/s = 3.6 MB
    assert crossover.value == units.format_bytes(8 * 1e-6 * 450e9)
    with pytest.raises(ValueError):
        many_chips.ring_cards("nvlink4", 12)  # not whole nodes of 8


def test_allreduce_model_note_states_nccls_ring_and_nvlink_sharp():
    text = many_chips.allreduce_model_note(ALLREDUCE)
    assert "2 × 7/8 × 1 GB / 450 GB/s one way, plus 14 steps of α = 1 µs" in text
    assert "about 370 of 450 GB/s bus bandwidth" in text and "about 4.74 ms" in text
    # NVLink SHARP: 1 GB x 2 x 7/8 / 480 GB/s bus bandwidth = 3.65 ms (algbw ~275 GB/s: 3.6 ms)
    assert "about 480 GB/s bus bandwidth (algbw about 275 GB/s): about 3.65 ms" in text


def test_tp_shard_derivation_meets_the_link_ridge_at_the_critical_slice():
    text = many_chips.tp_shard_derivation("h100-pcie", "pcie5-x16", 8, 2, "bf16")
    # ridge 756e12 / 63e9 = 12,000 FLOP/B; F/n* = 7/8 x 2 B x 12,000 / 2 = 10,500
    assert "π / B = 12,000 FLOP/B" in text
    assert "F/n = 7/8 × 2 B × 12,000 / 2 = 10,500" in text
    assert "(bf16, dense, NVIDIA H100 PCIe; PCIe Gen5 x16 63 GB/s one way)" in text


def test_tp_shard_derivation_uses_the_element_size_and_matmuls_asked():
    # fp32 sends 4 B per element; with one matmul per all-reduce a SwiGLU MLP (3) needs 1/3
    text = many_chips.tp_shard_derivation("h100-pcie", "pcie5-x16", 8, 1, "fp32")
    assert "F/n = 7/8 × 4 B × " in text and " / 1 = " in text
    assert "a SwiGLU MLP (3 matmuls) needs 1/3 of it" in text
    assert "a SwiGLU MLP (3 matmuls) needs 2/3 of it" in many_chips.tp_shard_derivation(
        "h100-pcie", "pcie5-x16", 8, 2, "bf16")


def test_bus_bandwidth_text_states_the_ring_and_nvlink_sharp_measurements():
    # nccl-tests on 8 H100s: Ring ~370 of 450 GB/s bus bandwidth; NVLink SHARP ~480 GB/s
    text = many_chips.bus_bandwidth_text()
    assert "8 H100s reach about 370 of 450 GB/s" in text
    assert 'nccl-tests reports about 480 GB/s "bus bandwidth"' in text


def test_serving_derivation_counts_the_rings_steps_between_boxes():
    text = many_chips.serving_derivation(SERVE)
    # Llama-3-70B: 80 layers, 2 all-reduces each + the embedding's + the logits' all-gather
    assert "each of the 162 collectives per step" in text
    assert "2(n-1) × 3 µs in one box" in text
    # 16-way is 2 boxes of 8: 2(16-1) = 30 steps, 2(2-1) = 2 of them between boxes
    assert "(30 steps at 16-way, 2 of them between boxes)" in text
    assert "2-way: collectives" in text and "16-way: collectives" in text
    assert "1-way" not in text  # 141 GB of weights do not fit one 80 GB card
    assert "The answer rests on the stated α: it is 16-way" in text


def test_serving_comparison_label_adds_the_times_where_a_degree_answers():
    option = "none of these: the collectives never take longer than the matmuls"
    assert many_chips.serving_comparison_label(option, SERVE, 0) == option
    label = many_chips.serving_comparison_label("16-way", SERVE, 16)
    assert label.startswith("16-way: collectives ") and " ms vs matmuls " in label


@pytest.mark.parametrize("tokens_range,text", [
    (None, "no batch"), ((1.0, float("inf")), "every batch"),
    ((512.0, float("inf")), "batches from 512 tokens up"),
    ((1.0, 2048.0), "batches up to 2,048 tokens"),
    ((16.0, 4096.0), "batches of 16 to 4,096 tokens")])
def test_batch_range_text_says_where_the_link_binds(tokens_range, text):
    assert many_chips.batch_range_text(tokens_range) == text


def test_tp_block_cards_mark_the_binding_roof_and_the_critical_slice():
    mm = sharding.sharded_matmul(4096, 1024 * 8, 8192, 8, "bf16", matmuls=2)
    times = sharding.shard_times(mm, "h100-sxm", "nvlink4")
    compute, hbm, link, intensity, ridge, critical = many_chips.tp_block_cards(
        mm, times, "h100-sxm", "nvlink4", "bf16")
    # per GPU 2 x 2 x 4096 x 1024 x 8192 FLOPs at 989.5 TFLOP/s
    assert compute.value == units.format_seconds(2 * 2 * 4096 * 1024 * 8192 / 989.5e12)
    # link intensity m (F/n) / ((n-1)/n x b) = 2 x 1024 / (7/8 x 2) = 1,170 FLOP/B, below the
    # ridge 989.5e12 / 450e9 = 2,199: the link binds
    assert intensity.value == "1,170 FLOP/B"
    assert ridge.value == f"{units.format_value(989.5e12 / 450e9)} FLOP/B"
    assert link.kind == "communication-bound" and compute.kind is None and hbm.kind is None
    assert critical.value == units.format_value(7 / 8 * 989.5e12 / 450e9)  # 1,924
    assert critical.caption.startswith("n = 8; the link binds for ")


def test_tp_case_heading_names_the_chip_and_the_link():
    assert (many_chips.tp_case_heading("h100-pcie", "pcie5-x16", 8)
            == "**NVIDIA H100 PCIe on PCIe Gen5 x16** (n = 8):")


def test_serving_links_put_the_chosen_link_first_without_repeats():
    assert many_chips.serving_links("h100-sxm", "pcie5-x16") == ["pcie5-x16", "nvlink4",
                                                                 "ib-ndr"]
    assert many_chips.serving_links("h100-sxm", "nvlink4") == ["nvlink4", "ib-ndr"]
    assert many_chips.serving_links("h100-sxm", "ib-ndr") == ["ib-ndr", "nvlink4"]


def test_serving_warning_only_for_a_failing_design():
    assert many_chips.serving_warning(sharding.Diagnosis("ok", "fine")) is None
    oom = many_chips.serving_warning(sharding.Diagnosis("oom", "Out of memory: shard more."))
    assert "Out of memory: shard more." in oom.text
    comm = many_chips.serving_warning(sharding.Diagnosis("comm", "Use fewer GPUs."))
    assert "More GPUs, fewer tokens/s." in comm.text and "Use fewer GPUs." in comm.text


def test_serving_cards_say_a_design_that_does_not_fit():
    one = sharding.tp_serving("llama-3-70b", "h100-pcie", "pcie5-x16", 1, batch=1,
                              seq_len=8192)  # 141 GB of bf16 weights on an 80 GB card
    tokens, matmuls, collectives, bound = many_chips.serving_cards(one)
    assert tokens.value.endswith(" (does not fit)") and tokens.kind == "danger"
    assert matmuls.label == "matmuls (compute | HBM)" and bound.label == "decode step is"


def _train_step(**override):
    how = {k: TRAIN[k] for k in ("grad_bytes", "nic", "nics_per_node", "algorithm")}
    return sharding.dp_step(TRAIN["model"], TRAIN["n"], TRAIN["tokens_per_gpu"], TRAIN["device"],
                            "bf16", TRAIN["link"], overlap=True, **{**how, **override})


def test_training_derivation_reads_the_rings_bus_bandwidth_off_the_nics():
    text = many_chips.training_derivation(TRAIN, _train_step())
    assert "each of the 8 rings runs through all 32 GPUs" in text
    assert "2(n-1)/n = 1.938×" in text  # 2 x 31/32
    assert "its 8 NICs carry 8 × 25 = 200 GB/s together" in text
    assert "62 steps of latency, the 6 between nodes at 5 µs and 56 at 1 µs = 86 µs" in text
    assert f"{P5_COMM * 1e3:.3g} ms. Not one ring" in text  # 156 ms
    # hierarchical: in the node 2 x 7/8 / 300e9 per byte; across nodes 2 x 3/4 / 8 / 25e9
    node, cross = 2 * 7 / 8 / 300e9, 2 * 3 / 4 / 8 / 25e9
    assert f"{(2 * P_8B * max(node, cross) + 44e-6) * 1e3:.3g} ms with its two levels" in text
    assert f"{(2 * P_8B * (node + cross) + 44e-6) * 1e3:.3g} ms run one level" in text


def test_training_derivation_states_the_time_the_reference_holds():
    """The explanation's stated all-reduce is the step's ``t_comm`` (the reference's number),
    not a second computation: a step with another time is the time it states."""
    text = many_chips.training_derivation(TRAIN, _train_step())
    stated = text.split(" ms. Not one ring")[0].rsplit(": ", 1)[1]
    assert float(stated) == float(f"{P5_COMM * 1e3:.3g}") == 156  # the reference, ms
    hierarchical = _train_step(algorithm="hierarchical")  # another t_comm, same case
    text = many_chips.training_derivation(TRAIN, hierarchical)
    assert f"{units.format_seconds(hierarchical.t_comm)}. Not one ring" in text
    assert units.format_seconds(hierarchical.t_comm) != units.format_seconds(P5_COMM)


def test_training_cards_name_the_nics_and_the_critical_batch():
    how = {k: TRAIN[k] for k in ("grad_bytes", "nic", "nics_per_node", "algorithm")}
    step = sharding.dp_step(TRAIN["model"], 32, 1024, TRAIN["device"], "bf16", TRAIN["link"],
                            overlap=True, **how)
    critical = 2 * (2 * 31 / 32 / 200e9) * 312e12 / 4  # T* = g c π / 4
    cards = many_chips.training_cards(step, TRAIN["link"], how, critical)
    compute, comm, step_card, wait, crit, gain = cards
    assert comm.value == units.format_seconds(P5_COMM)
    assert "bus 200 GB/s, set by the NICs between nodes" in comm.caption
    assert wait.value == units.format_seconds(P5_COMM - P5_BWD)
    assert crit.value == f"{critical:,.0f} tokens"
    assert gain.caption.startswith("at most 1.67×")


def test_training_wait_note_subtracts_the_backward_pass():
    step = sharding.dp_step(TRAIN["model"], 32, 1024, TRAIN["device"], "bf16", TRAIN["link"],
                            overlap=True, grad_bytes=2, nic="ib-hdr", nics_per_node=8)
    text = many_chips.training_wait_note(step, TRAIN)
    assert f"4 P T / π = {P5_BWD * 1e3:.3g} ms" in text  # 105 ms
    # to 4 figures, a difference shown with its terms: 155.585 + 0.086 = 155.7 ms of all-reduce,
    # 4 x 8,030,261,248 x 1024 / 312e12 = 105.4 ms of backward pass, 50.25 ms left
    assert "waits 155.7 − 105.4 = **50.25 ms per step**" in text
    # the whole step (2 + 4) P T / π = 158 ms outlasts the all-reduce: nothing left
    assert "would leave 0 ms" in text
    assert "per NIC (94%)" in text  # 47 of 50 GB/s


def test_fit_cards_flag_a_poor_fit():
    fit = SimpleNamespace(op="all-reduce", alpha_s=20e-6, busbw_gbs=12.3, residual=0.1,
                          crossover_bytes=2e5, alpha_step_s=10e-6)
    good, bad = many_chips.fit_cards([fit, SimpleNamespace(**{**vars(fit), "residual": 0.3})])
    assert good.value == "20 µs · 12.3 GB/s" and good.kind == "ok"
    assert "residual 10%" in good.caption and bad.kind == "warn"


def test_a_measurement_says_how_it_ran_and_which_run_stays_below():
    from types import SimpleNamespace
    run = SimpleNamespace(elapsed_s=7.6, device="cpu", torch_version="2.13.0", backend="gloo",
                          world_size=4)
    assert many_chips.measured_note("gloo between worker processes.", run) == (
        "gloo between worker processes. Measured in 7.6 s (cpu, torch 2.13.0).")
    assert many_chips.last_measurement_note(run) == (
        "*Below: your last measurement (gloo, 4 workers, cpu).*")
