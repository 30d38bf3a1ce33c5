"""Lab 6 physics: links, the α-β collective model, sharded matmuls, tensor-parallel serving and
data-parallel training (labs.core.physics.collectives / sharding), against hand-derived values
and against the general rules (brute force, random inputs) they must obey.

The live measurement (worker processes, cleanup, the α-β fit) is in tests/test_comm_bench.py.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labs.core import collectives as C
from labs.core import hardware, models
from labs.core import sharding as S

H100_BF16 = 989.5e12  # dense peak, FLOP/s (hardware registry)


# --- links --------------------------------------------------------------------------------------

def test_links_store_one_way_bandwidth_with_sources():
    # vendors quote both directions: NVLink 4 = 900 GB/s total -> 450 one way
    assert C.get_link("nvlink4").one_way_gbs == 450
    assert C.get_link("NVLink3").one_way_gbs == 300 and C.get_link("nvlink5").one_way_gbs == 900
    # PCIe: 32 GT/s x 16 lanes x 128/130 / 8 = 63.0 GB/s one way (Gen5), 31.5 (Gen4)
    assert C.get_link("pcie5-x16").one_way_gbs == pytest.approx(32 * 16 * 128 / 130 / 8, abs=0.02)
    assert C.get_link("pcie4-x16").one_way_gbs == pytest.approx(16 * 16 * 128 / 130 / 8, abs=0.02)
    assert C.get_link("ib-ndr").one_way_gbs == 400 / 8
    for lk in C.LINKS.values():
        assert lk.source and lk.quoted and lk.derivation, lk.key
        assert lk.one_way_gbs > 0 and lk.latency_us > 0, lk.key
    assert "STATED" in C.LATENCY_NOTE


def test_every_device_link_exists_and_devices_are_registry_keys():
    for dev, link in C.DEVICE_LINKS.items():
        assert dev in hardware.keys() and link in C.LINKS
    assert C.device_link("h100-sxm").key == "nvlink4"
    assert C.device_link("tpu-v7x") is None  # no sourced ICI figure: none rather than a guess


def test_unknown_link_is_a_value_error_naming_the_argument():
    with pytest.raises(ValueError, match="link='nvlink9'") as e:
        C.get_link("nvlink9")
    assert isinstance(e.value, KeyError)  # like the other registries
    assert "nvlink4" in str(e.value)  # close matches offered
    with pytest.raises(ValueError, match="link="):
        C.link_time("all-reduce", 1e6, 8, "token-ring")


def test_a_ring_beyond_the_links_domain_runs_at_the_scale_out_link():
    assert C.ring_link("nvlink4", 8).key == "nvlink4"
    wide = C.ring_link("nvlink4", 16)
    assert wide.one_way_gbs == C.get_link("ib-ndr").one_way_gbs  # the slowest hop
    assert wide.latency_us == max(C.get_link("nvlink4").latency_us,
                                  C.get_link("ib-ndr").latency_us)
    assert C.ring_link("ib-hdr", 1024).key == "ib-hdr"  # scale-out links have no domain
    assert C.ring_link("ethernet-10g", 64).one_way_gbs == 1.25  # slower than IB: unchanged


# --- the α-β model ------------------------------------------------------------------------------

def test_ring_all_reduce_of_1_gb_over_8_gpus_on_nvlink4():
    # 2(n-1)/n x S / B = 2 x 7/8 x 1e9 B / 450e9 B/s = 3.8889 ms, plus 2(n-1) = 14 steps of α
    assert C.collective_time("all-reduce", 1e9, 8, 450, 0) == pytest.approx(3.888889e-3)
    assert C.collective_time("all-reduce", 1e9, 8, 450, 1e-6) == pytest.approx(3.902889e-3)
    assert C.link_time("all_reduce", 1e9, 8, "nvlink4") == pytest.approx(3.902889e-3)
    # all-gather and reduce-scatter: half the steps and half the bytes
    assert C.collective_time("all-gather", 1e9, 8, 450, 1e-6) == pytest.approx(
        7 / 8 * 1e9 / 450e9 + 7e-6)
    assert C.collective_time("reduce-scatter", 1e9, 8, 450, 1e-6) == pytest.approx(
        C.collective_time("all-gather", 1e9, 8, 450, 1e-6))
    # tree all-reduce: 2 ceil(log2 n) steps, 2 S / B
    assert C.collective_time("all-reduce", 1e9, 8, 450, 1e-6, algorithm="tree") == \
        pytest.approx(6e-6 + 2e9 / 450e9)
    assert C.latency_steps("all-reduce", 9, "tree") == 8


def test_bus_bandwidth_of_a_perfect_ring_is_the_links_one_way_bandwidth():
    for op in C.OPS:
        for n in (2, 3, 8, 64):
            t = C.collective_time(op, 3e8, n, 450, 0)
            assert C.busbw_gbs(op, 3e8, n, t) == pytest.approx(450)
    # nccl-tests: busbw = algbw x 2(n-1)/n for all-reduce
    assert C.algbw_gbs(1e9, 3.888889e-3) == pytest.approx(257.14, abs=0.01)
    assert C.bus_factor("all-reduce", 8) == 1.75 and C.bus_factor("all-gather", 8) == 0.875


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(C.OPS), n=st.integers(2, 512), gbs=st.floats(0.1, 2000),
       alpha=st.floats(1e-8, 1e-3))
def test_crossover_size_splits_latency_and_bandwidth_evenly(op, n, gbs, alpha):
    s = C.crossover_bytes(op, n, gbs, alpha)
    lat, bw = C.latency_bandwidth_split(op, s, n, gbs, alpha)
    assert lat == pytest.approx(bw, rel=1e-9)
    # below it latency dominates, above it bandwidth does
    lat2, bw2 = C.latency_bandwidth_split(op, s * 4, n, gbs, alpha)
    assert bw2 > lat2


@pytest.mark.parametrize("call,name", [
    (lambda: C.collective_time("all-reduce", 1e9, 1, 450, 1e-6), "n"),
    (lambda: C.collective_time("all-reduce", 1e9, 0, 450, 1e-6), "n"),
    (lambda: C.collective_time("all-reduce", 1e9, 2.5, 450, 1e-6), "n"),
    (lambda: C.collective_time("all-reduce", 0, 8, 450, 1e-6), "nbytes"),
    (lambda: C.collective_time("all-reduce", -5, 8, 450, 1e-6), "nbytes"),
    (lambda: C.collective_time("all-reduce", 1e9, 8, 0, 1e-6), "link_gbs"),
    (lambda: C.collective_time("all-reduce", 1e9, 8, 450, -1), "latency_s"),
    (lambda: C.collective_time("broadcast", 1e9, 8, 450, 1e-6), "op"),
    (lambda: C.collective_time("all-gather", 1e9, 8, 450, 0, algorithm="tree"), "algorithm"),
    (lambda: C.collective_time("all-reduce", 1e9, 8, 450, 0, algorithm="mesh"), "algorithm"),
    (lambda: C.custom_link("", 10, 1), "name"),
])
def test_bad_input_raises_value_error_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- the third roof: a row-parallel matmul ------------------------------------------------------

def test_tp_layers_critical_shard_size_on_nvlink_and_pcie():
    # K/n* = (n-1)/n x b x π / B: 7/8 x 2 B x 989.5e12 / 450e9 = 3,848 (NVLink 4, n = 8)
    assert S.tp_critical_shard("h100-sxm", "bf16", "nvlink4", 8) == pytest.approx(
        7 / 8 * 2 * H100_BF16 / 450e9)
    assert S.tp_critical_shard("h100-sxm", "bf16", "nvlink4", 8) == pytest.approx(3848.06,
                                                                                abs=0.01)
    assert S.tp_critical_shard("h100-sxm", "bf16", "pcie5-x16", 8) == pytest.approx(27486.1,
                                                                                  abs=0.1)
    # a reduce-scatter sends half the bytes: half the critical size
    assert S.tp_critical_shard("h100-sxm", "bf16", "nvlink4", 8, op="reduce-scatter") == \
        pytest.approx(3848.06 / 2, abs=0.01)
    # the link ridge names a precision like the HBM ridge: π / B
    assert S.link_ridge("h100-sxm", "bf16", "nvlink4") == pytest.approx(2198.9, abs=0.1)


@settings(max_examples=50, deadline=None)
@given(n=st.sampled_from([2, 4, 8]), k_shard=st.integers(64, 65536), t=st.integers(1, 1 << 16),
       n_out=st.integers(64, 65536), link=st.sampled_from(["nvlink4", "pcie5-x16", "ib-ndr"]),
       op=st.sampled_from(["all-reduce", "reduce-scatter"]))
def test_link_intensity_crosses_the_link_ridge_at_the_critical_shard(n, k_shard, t, n_out, link,
                                                                     op):
    mm = S.sharded_matmul(t, k_shard * n, n_out, n, "bf16", op=op)
    assert mm.ai_link == pytest.approx(2 * k_shard / (C.bus_factor(op, n) * 2))  # T, N cancel
    crit = S.tp_critical_shard("h100-sxm", "bf16", link, n, op=op)
    ridge = S.link_ridge("h100-sxm", "bf16", link, n)
    assert (mm.ai_link < ridge) == (k_shard < crit)
    # and at large batch the layer's binding roof follows (bandwidth terms only)
    big = S.sharded_matmul(1 << 20, k_shard * n, n_out, n, "bf16", op=op)
    tt = S.shard_times(big, "h100-sxm", link)
    if abs(k_shard / crit - 1) > 0.01:
        assert (tt.t_link > tt.t_compute) == (k_shard < crit)


def test_sharded_matmul_counts_per_chip_flops_and_bytes():
    mm = S.sharded_matmul(16, 8192, 8192, 8, "bf16")
    assert mm.flops == 2 * 16 * 8192 * 8192 / 8
    assert mm.hbm_bytes == 2 * (16 * 1024 + 1024 * 8192 + 16 * 8192)
    assert mm.message_bytes == 16 * 8192 * 2
    assert mm.link_bytes == 1.75 * 16 * 8192 * 2
    with pytest.raises(ValueError, match="k=8190"):
        S.sharded_matmul(16, 8190, 8192, 8)
    with pytest.raises(ValueError, match="op"):
        S.sharded_matmul(16, 8192, 8192, 8, op="all-gather")


@pytest.mark.parametrize("k,n_out,n,link", [
    (8192, 8192, 8, "nvlink4"), (28672, 8192, 8, "nvlink4"), (28672, 8192, 8, "pcie5-x16"),
    (8192, 28672, 2, "nvlink4"), (65536, 1024, 4, "ib-ndr"), (4096, 4096, 2, "pcie4-x16"),
])
def test_comm_bound_batch_range_matches_brute_force(k, n_out, n, link):
    rng = S.comm_bound_tokens(k, n_out, n, "h100-sxm", link)
    for t in [1, 2, 3, 5, 8, 13, 30, 62, 63, 100, 300, 1000, 4096, 10_000, 100_000, 1 << 21]:
        times = S.shard_times(S.sharded_matmul(t, k, n_out, n), "h100-sxm", link)
        inside = rng is not None and rng[0] < t < rng[1]
        edge = rng is not None and min(abs(t - rng[0]), abs(t - rng[1])) < 1
        if not edge:
            assert (times.binding == "link") == inside, (t, rng, times)


# --- tensor-parallel serving of Llama-3-70B ------------------------------------------------------

def test_tp_serving_splits_weights_and_kv_heads_per_gpu():
    m = models.get("llama-3-70b")
    full = models.memory_budget(m, "h100-sxm", batch=4, seq_len=8192)
    for n in (1, 2, 4, 8, 16):
        s = S.tp_serving(m, "h100-sxm", "nvlink4", n, batch=4, seq_len=8192)
        assert s.budget.terms["weights"] == pytest.approx(full.terms["weights"] / n)
        # 8 KV heads: beyond 8 GPUs each head is replicated, not split further
        assert s.budget.terms["KV cache"] == pytest.approx(full.terms["KV cache"] / min(n, 8))
        assert s.budget.capacity_bytes == full.capacity_bytes
    one = S.tp_serving(m, "h100-sxm", "nvlink4", 1, batch=4, seq_len=8192)
    assert one.t_comm == 0 and not one.fits  # 141 GB of bf16 weights on one 80 GB GPU
    dec = models.step_bound(m, "h100-sxm", "decode", batch=4, seq_len=8192)
    assert one.flops == pytest.approx(dec.flops) and one.bytes == pytest.approx(dec.bytes)


def test_tp_serving_communication_is_two_all_reduces_per_layer():
    m = models.get("llama-3-70b")
    s = S.tp_serving(m, "h100-sxm", "nvlink4", 8, batch=2, seq_len=4096)
    per_ar = C.link_time("all-reduce", 2 * m.d_model * 2, 8, "nvlink4")
    gather = C.link_time("all-gather", 2 * m.vocab * 2, 8, "nvlink4")
    assert s.collectives == 2 * m.layers + 2
    assert s.t_comm == pytest.approx((2 * m.layers + 1) * per_ar + gather)
    assert s.t_step == pytest.approx(max(s.t_compute, s.t_hbm) + s.t_comm)
    assert s.tokens_per_s == pytest.approx(2 / s.t_step)


def test_the_two_failure_states_and_backing_out_of_them():
    kw = dict(batch=1, seq_len=8192)
    rows = S.tp_scaling("llama-3-70b", "h100-sxm", "pcie5-x16", **kw)
    assert S.tp_diagnosis(rows, 1).kind == "oom"  # too few GPUs: 141 GB on one 80 GiB GPU
    assert "n = 2 fits" in S.tp_diagnosis(rows, 1).message
    assert S.tp_diagnosis(rows, 2).kind == "ok"
    # too many over a slow link: 16 GPUs cross nodes and fall behind 8
    bad = S.tp_diagnosis(rows, 16)
    assert bad.kind == "comm" and "fewer GPUs or a faster link" in bad.message
    by_n = {r.n: r for r in rows}
    assert by_n[16].tokens_per_s < by_n[8].tokens_per_s
    assert S.first_comm_bound_degree("llama-3-70b", "h100-sxm", "pcie5-x16", **kw) == 8
    assert S.first_comm_bound_degree("llama-3-70b", "h100-sxm", "nvlink4", **kw) == 16
    assert S.best_tp_degree("llama-3-70b", "h100-sxm", "nvlink4", **kw) == 8
    with pytest.raises(ValueError, match="n=3"):
        S.tp_diagnosis(rows, 3)


# --- data-parallel training -------------------------------------------------------------------

def test_dp_critical_batch_hand_derived_and_independent_of_the_model():
    # T* = 2(n-1)/n x g x π / (6 B): 2 x 63/64 x 2 B x 989.5e12 / (6 x 50e9) = 12,987 tokens
    t_star = S.dp_critical_batch("h100-sxm", "bf16", "ib-ndr", 64)
    assert t_star == pytest.approx(2 * 63 / 64 * 2 * H100_BF16 / (6 * 50e9))
    assert t_star == pytest.approx(12987.2, abs=0.1)
    for model in ("llama-3-8b", "llama-3-70b", 1e6):
        below = S.dp_step(model, 64, int(t_star * 0.9), "h100-sxm", "bf16", "ib-ndr")
        above = S.dp_step(model, 64, int(t_star * 1.1), "h100-sxm", "bf16", "ib-ndr")
        # latency is 2 x 63 x 5 µs = 0.6 ms: negligible next to GBs of gradients, not for 1e6
        if model != 1e6:
            assert below.comm_bound and not above.comm_bound


def test_overlap_is_bounded_by_max_versus_sum():
    on = S.dp_step("llama-3-8b", 8, 4096, "h100-sxm", "bf16", "nvlink4", overlap=True)
    off = S.dp_step("llama-3-8b", 8, 4096, "h100-sxm", "bf16", "nvlink4", overlap=False)
    assert on.t_step == max(on.t_compute, on.t_comm)
    assert off.t_step == on.t_compute + on.t_comm
    assert 1 <= off.t_step / on.t_step <= 2  # overlap buys at most 2x
    assert on.t_compute == pytest.approx(6 * models.get("llama-3-8b").params * 4096 / H100_BF16)
    assert on.t_comm == pytest.approx(C.link_time("all-reduce",
                                                  2 * models.get("llama-3-8b").params, 8,
                                                  "nvlink4"))
    with pytest.raises(ValueError, match="tokens_per_chip"):
        S.dp_step("llama-3-8b", 8, 0, "h100-sxm", "bf16", "nvlink4")
    with pytest.raises(ValueError, match="n"):
        S.dp_step("llama-3-8b", 1, 4096, "h100-sxm", "bf16", "nvlink4")


def test_module_docstrings_name_their_sources():
    assert "nccl-tests" in C.__doc__ and "Thakur" in C.__doc__
    assert "scaling-book" in S.__doc__ and "Megatron" in S.__doc__
    assert math.isclose(S.TRAIN_FLOPS_PER_PARAM_TOKEN, 6)
