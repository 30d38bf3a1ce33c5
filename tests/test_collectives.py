"""Lab 6 physics: links, the α-β collective model, sharded matmuls, tensor-parallel serving and
data-parallel training (labs.core.physics.collectives / sharding), against hand-derived values
and against the general rules (brute force, random inputs) they must obey.

The live measurement (worker processes, cleanup, the α-β fit) is in tests/test_comm_bench.py.
"""

from __future__ import annotations

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labs.core import collectives
from labs.core import hardware, models
from labs.core import sharding

H100_BF16 = 989.5e12  # dense peak, FLOP/s (hardware registry)


# --- links --------------------------------------------------------------------------------------

def test_links_store_one_way_bandwidth_with_sources():
    # vendors quote both directions: NVLink 4 = 900 GB/s total -> 450 one way
    assert collectives.get_link("nvlink4").one_way_gbs == 450
    assert collectives.get_link("NVLink3").one_way_gbs == 300 and collectives.get_link("nvlink5").one_way_gbs == 900
    # PCIe: 32 GT/s x 16 lanes x 128/130 / 8 = 63.0 GB/s one way (Gen5), 31.5 (Gen4)
    assert collectives.get_link("pcie5-x16").one_way_gbs == pytest.approx(32 * 16 * 128 / 130 / 8, abs=0.02)
    assert collectives.get_link("pcie4-x16").one_way_gbs == pytest.approx(16 * 16 * 128 / 130 / 8, abs=0.02)
    assert collectives.get_link("ib-ndr").one_way_gbs == 400 / 8
    for lk in collectives.LINKS.values():
        assert lk.source and lk.quoted and lk.derivation, lk.key
        assert lk.one_way_gbs > 0 and lk.latency_us > 0, lk.key
    assert "STATED" in collectives.LATENCY_NOTE


def test_every_device_link_exists_and_devices_are_registry_keys():
    for dev, link in collectives.DEVICE_LINKS.items():
        assert dev in hardware.keys() and link in collectives.LINKS
    assert collectives.device_link("h100-sxm").key == "nvlink4"
    assert collectives.device_link("tpu-v7x") is None  # no sourced ICI figure: none rather than a guess


def test_unknown_link_is_a_value_error_naming_the_argument():
    with pytest.raises(ValueError, match="link='nvlink9'") as e:
        collectives.get_link("nvlink9")
    assert isinstance(e.value, KeyError)  # like the other registries
    assert "nvlink4" in str(e.value)  # close matches offered
    with pytest.raises(ValueError, match="link="):
        collectives.link_time("all-reduce", 1e6, 8, "token-ring")


def test_nccls_flat_ring_across_nodes_is_bound_by_the_nodes_nics_together():
    # NCCL's Ring (the default algorithm here): one ring per NIC through all n GPUs, so each
    # NIC carries 2(n-1)/n of its ring's share. 2 HGX H100 nodes (16 GPUs, 8 NDR NICs of 50
    # GB/s each), 1 GB: the node's NICs together carry 400 GB/s, slower than NVLink's 450, so
    # 2 x 15/16 x 1 GB / 400 GB/s = 4.6875 ms. Latency (NCCL's ring model): 30 steps, the
    # 2 that cross between the nodes at the NIC's 5 µs, 28 at NVLink's 1 µs = 38 µs.
    assert collectives.link_time("all-reduce", 1e9, 16, "nvlink4") == pytest.approx(4.6875e-3 + 38e-6)
    p = collectives.collective_path("nvlink4", 16)
    assert p.bus_gbs() == pytest.approx(400) and p.binding_level() == "NICs"
    assert p.egress_gbs == 400 and p.rail_gbs == 50
    # the bus bandwidth does not grow with the node count: 8 nodes, 2 x 63/64 / 400 GB/s
    assert collectives.link_time("all-reduce", 1e9, 64, "nvlink4") == pytest.approx(
        2 * 63 / 64 * 1e9 / 400e9 + (126 - 14) * 1e-6 + 14 * 5e-6)
    # 2 DGX A100 (NVLink 3, 300 GB/s; 8 HDR NICs of 25): the NICs, 200 GB/s
    assert collectives.collective_path("nvlink3", 16, nic="ib-hdr").bus_gbs() == pytest.approx(200)
    # 4 NICs per node halve the egress: 200 GB/s on NDR
    assert collectives.collective_path("nvlink4", 32, nics_per_node=4).bus_gbs() == pytest.approx(200)
    # where the node's link is slower than its NICs, the link binds: PCIe Gen5 (63 GB/s)
    p = collectives.collective_path("pcie5-x16", 16)
    assert p.binding_level() == "link" and p.bus_gbs() == pytest.approx(63.0, rel=1e-3)
    # an all-gather: n-1 steps, M-1 of them between nodes; 15/16 x 1 GB / 400 GB/s
    assert collectives.link_time("all-gather", 1e9, 16, "nvlink4") == pytest.approx(
        15 / 16 * 1e9 / 400e9 + 14 * 1e-6 + 1 * 5e-6)


def test_a_hierarchical_collective_runs_in_two_pipelined_levels():
    # algorithm="hierarchical": reduce-scatter in the node, all-reduce of each GPU's 1/8 over
    # its own NIC, all-gather in the node. 2 HGX H100 nodes, 1 GB: node level 2 x 7/8 x 1 GB
    # / 450 GB/s = 3.889 ms; cross-node 2 x 1/2 x 0.125 GB / 50 GB/s = 2.5 ms. Pipelined: the
    # slower, 3.889 ms; latencies add: 14 x 1 µs + 2 x 5 µs = 24 µs.
    h = "hierarchical"
    assert collectives.link_time("all-reduce", 1e9, 16, "nvlink4", h) == pytest.approx(
        3.888889e-3 + 24e-6)
    # 8 nodes: cross-node 2 x 7/8 x 0.125 GB / 50 GB/s = 4.375 ms now the slower level
    assert collectives.link_time("all-reduce", 1e9, 64, "nvlink4", h) == pytest.approx(
        4.375e-3 + 14e-6 + 14 * 5e-6)
    # fewer NICs per node share the node's egress: 2 NICs -> each GPU 2 x 50 / 8 = 12.5 GB/s,
    # 2 x 7/8 x 0.125 GB / 12.5 GB/s = 17.5 ms
    assert collectives.link_time("all-reduce", 1e9, 64, "nvlink4", h, nics_per_node=2) == \
        pytest.approx(17.5e-3 + 14e-6 + 70e-6)
    p = collectives.collective_path("nvlink4", 64, nics_per_node=2)
    assert (p.g, p.nodes, p.nics, p.rail_gbs) == (8, 8, 2, 12.5) and p.hierarchical
    # 4 nodes of 8 H100: the node level (3.889 ps/B) binds, a bus bandwidth of 2 x 31/32 /
    # 3.889e-12 = 498 GB/s, above what the node's 8 NICs can carry in a flat ring (400)
    p = collectives.collective_path("nvlink4", 32)
    assert p.bus_gbs("all-reduce", h) == pytest.approx(2 * 31 / 32 / (1.75 / 450e9) / 1e9)
    assert p.binding_level("all-reduce", h) == "link" and p.binding_level() == "NICs"
    assert collectives.collective_path("nvlink4", 8).nodes == 1  # one node: one ring, any algorithm
    assert collectives.link_time("all-reduce", 1e9, 8, "nvlink4", h) == collectives.link_time(
        "all-reduce", 1e9, 8, "nvlink4")
    assert collectives.link_time("all-reduce", 1e9, 1024, "ib-hdr") == pytest.approx(
        2 * 1023 / 1024 * 1e9 / 25e9 + 2 * 1023 * 5e-6)  # scale-out links have no domain


def test_a_hierarchical_all_reduce_run_one_level_after_the_other_adds_the_levels():
    # 4 DGX A100 (NVLink 3, 300 GB/s; 8 HDR NICs of 25 GB/s, one per GPU), 16 GB of gradients.
    # Node level: 2 x 7/8 x 16 GB / 300 GB/s = 93.33 ms; across nodes each GPU's 1/8 share,
    # 2 x 3/4 x 2 GB / 25 GB/s = 120 ms. Pipelined: the slower, 120 ms; one level after the
    # other: 213.33 ms, slower than the flat Ring's 2 x 31/32 x 16 GB / 200 GB/s = 155 ms.
    # The latencies are the same either way: 14 x 1 µs + 6 x 5 µs = 44 µs.
    kw = dict(nic="ib-hdr", nics_per_node=8)
    ring = collectives.link_time("all-reduce", 16e9, 32, "nvlink3", **kw)
    piped = collectives.link_time("all-reduce", 16e9, 32, "nvlink3", "hierarchical", **kw)
    seq = collectives.link_time("all-reduce", 16e9, 32, "nvlink3", "hierarchical-sequential", **kw)
    assert ring == pytest.approx(155e-3 + 56 * 1e-6 + 6 * 5e-6)  # 62 steps, 6 between nodes
    assert piped == pytest.approx(120e-3 + 44e-6)
    assert seq == pytest.approx(93.333333e-3 + 120e-3 + 44e-6)
    assert seq > ring > piped
    assert collectives.SEQUENTIAL in collectives.ALGORITHM_NAMES and "pipelined" in collectives.ALGORITHM_NAMES["hierarchical"]
    # within one node there is one level: every algorithm is the ring
    assert collectives.link_time("all-reduce", 1e9, 8, "nvlink3", "hierarchical-sequential") == \
        collectives.link_time("all-reduce", 1e9, 8, "nvlink3")


def test_a_nic_is_named_per_port_not_per_gpu():
    """A node may have fewer NICs than GPUs (the rails slider), so a NIC's rate is per port."""
    for key in ("ib-hdr", "ib-ndr"):
        assert "per port" in collectives.get_link(key).name and "per GPU" not in collectives.get_link(key).name


def test_a_collective_path_refuses_what_cannot_be_built():
    with pytest.raises(ValueError, match="n=12"):
        collectives.link_time("all-reduce", 1e9, 12, "nvlink4")  # not whole nodes of 8
    with pytest.raises(ValueError, match="nics_per_node"):
        collectives.collective_path("nvlink4", 16, nics_per_node=9)
    with pytest.raises(ValueError, match="nic="):
        collectives.collective_path("nvlink4", 16, nic="pcie5-x16")
    with pytest.raises(ValueError, match="nic="):  # checked within a node too
        collectives.collective_path("nvlink4", 8, nic="nvlink3")
    with pytest.raises(ValueError, match="algorithm"):
        collectives.link_time("all-reduce", 1e9, 16, "nvlink4", "flat")
    with pytest.raises(ValueError, match="achievable"):
        collectives.collective_path("nvlink4", 8, achievable="yes")


def test_achievable_links_are_sourced_and_scale_the_bandwidth_only():
    nv = collectives.link_efficiency("nvlink4")
    assert nv.measured and nv.fraction == pytest.approx(370 / 450) and "nccl-tests" in nv.source
    ib = collectives.link_efficiency("ib-ndr")
    assert ib.measured and ib.fraction == pytest.approx(47 / 50) and "46-48" in ib.source
    assert collectives.link_efficiency("ib-hdr") is ib  # one figure for InfiniBand NICs
    pcie = collectives.link_efficiency("pcie5-x16")
    assert not pcie.measured and "assumption" in pcie.source
    # 8 GPUs, 1 GB: 2 x 7/8 x 1 GB / 370 GB/s = 4.730 ms, plus the same 14 µs of latency
    assert collectives.link_time("all-reduce", 1e9, 8, "nvlink4", achievable=True) == pytest.approx(
        1.75e9 / 370e9 + 14e-6)
    # across nodes each link at its own fraction: 2 HGX H100, NVLink 370, NICs 8 x 47 = 376:
    # the NVLink ring binds, 2 x 15/16 x 1 GB / 370 GB/s
    p = collectives.collective_path("nvlink4", 16, achievable=True)
    assert (p.node_gbs, p.egress_gbs) == (pytest.approx(370), pytest.approx(376))
    assert collectives.link_time("all-reduce", 1e9, 16, "nvlink4", achievable=True) == pytest.approx(
        1.875e9 / 370e9 + 38e-6)


@pytest.mark.parametrize("device,link,ok", [
    ("a100-sxm-80gb", "nvlink4", False), ("a100-sxm-80gb", "nvlink3", True),
    ("h100-sxm", "pcie5-x16", False), ("h100-pcie", "pcie5-x16", True),
    ("l4", "pcie5-x16", False), ("l4", "pcie4-x16", True), ("mi300x", "nvlink4", False),
    ("tpu-v5e", "tpu-v5p-ici", False), ("jetson-agx-orin-64gb", "pcie4-x16", False),
    ("h100-sxm", "ib-ndr", True), ("gb10", "ethernet-10g", True),
])
def test_impossible_chip_and_link_pairs_are_refused_with_a_way_out(device, link, ok):
    assert (collectives.pair_problem(device, link) is None) == ok
    if not ok:
        assert "pick" in collectives.pair_problem(device, link).lower()
        with pytest.raises(ValueError, match="link="):
            sharding.link_ridge(device, "bf16", link)


# --- the α-β model ------------------------------------------------------------------------------

def test_ring_all_reduce_of_1_gb_over_8_gpus_on_nvlink4():
    # 2(n-1)/n x S / B = 2 x 7/8 x 1e9 B / 450e9 B/s = 3.8889 ms, plus 2(n-1) = 14 steps of α
    assert collectives.collective_time("all-reduce", 1e9, 8, 450, 0) == pytest.approx(3.888889e-3)
    assert collectives.collective_time("all-reduce", 1e9, 8, 450, 1e-6) == pytest.approx(3.902889e-3)
    assert collectives.link_time("all_reduce", 1e9, 8, "nvlink4") == pytest.approx(3.902889e-3)
    # all-gather and reduce-scatter: half the steps and half the bytes
    assert collectives.collective_time("all-gather", 1e9, 8, 450, 1e-6) == pytest.approx(
        7 / 8 * 1e9 / 450e9 + 7e-6)
    assert collectives.collective_time("reduce-scatter", 1e9, 8, 450, 1e-6) == pytest.approx(
        collectives.collective_time("all-gather", 1e9, 8, 450, 1e-6))
    # tree all-reduce: 2 ceil(log2 n) steps, 2 S / B
    assert collectives.collective_time("all-reduce", 1e9, 8, 450, 1e-6, algorithm="tree") == \
        pytest.approx(6e-6 + 2e9 / 450e9)
    assert collectives.latency_steps("all-reduce", 9, "tree") == 8


def test_bus_bandwidth_follows_nccl_tests_arithmetic():
    # nccl-tests PERFORMANCE.md: algbw = S / t; busbw = algbw x 2(n-1)/n (all-reduce), x (n-1)/n
    # (all-gather, reduce-scatter). 1 GB in 3.888889 ms: algbw 257.14 GB/s, busbw x 1.75 = 450.
    assert collectives.algbw_gbs(1e9, 3.888889e-3) == pytest.approx(257.14, abs=0.01)
    assert collectives.busbw_gbs("all-reduce", 1e9, 8, 3.888889e-3) == pytest.approx(450, abs=0.01)
    # an 8-GPU all-gather of 1 GB in 2.5 ms: 400 GB/s x 7/8 = 350
    assert collectives.busbw_gbs("all-gather", 1e9, 8, 2.5e-3) == pytest.approx(350)
    assert collectives.bus_factor("all-reduce", 8) == 1.75 and collectives.bus_factor("all-gather", 8) == 0.875


def test_the_bus_factor_is_worked_out_in_the_open():
    """What the ring sends per byte, as a student reads it: 2(n-1)/n = 2 × 7/8 on 8 GPUs, and
    (n-1)/n = 3/4 for an all-gather on 4; bad input is refused with the argument's name."""
    assert collectives.bus_factor_derivation("all-reduce", 8) == "2 × 7/8"
    assert collectives.bus_factor_derivation("all-gather", 4) == "3/4"
    assert collectives.bus_factor_derivation("reduce-scatter", 2) == "1/2"
    with pytest.raises(ValueError, match="n"):
        collectives.bus_factor_derivation("all-reduce", 0)


@settings(max_examples=60, deadline=None)
@given(op=st.sampled_from(collectives.OPS), n=st.integers(2, 512), gbs=st.floats(0.1, 2000),
       alpha=st.floats(1e-8, 1e-3))
def test_crossover_size_splits_latency_and_bandwidth_evenly(op, n, gbs, alpha):
    # hand-derived: all-reduce, 8 GPUs, 450 GB/s, α 1 µs: S* = 14 x 1e-6 x 450e9 / 1.75 = 3.6 MB
    assert collectives.crossover_bytes("all-reduce", 8, 450, 1e-6) == pytest.approx(3.6e6)
    s = collectives.crossover_bytes(op, n, gbs, alpha)
    lat, bw = collectives.latency_bandwidth_split(op, s, n, gbs, alpha)
    assert lat == pytest.approx(bw, rel=1e-9)
    # below it latency dominates, above it bandwidth does
    lat2, bw2 = collectives.latency_bandwidth_split(op, s * 4, n, gbs, alpha)
    assert bw2 > lat2


@pytest.mark.parametrize("call,name", [
    (lambda: collectives.collective_time("all-reduce", 1e9, 1, 450, 1e-6), "n"),
    (lambda: collectives.collective_time("all-reduce", 1e9, 0, 450, 1e-6), "n"),
    (lambda: collectives.collective_time("all-reduce", 1e9, 2.5, 450, 1e-6), "n"),
    (lambda: collectives.collective_time("all-reduce", 0, 8, 450, 1e-6), "nbytes"),
    (lambda: collectives.collective_time("all-reduce", -5, 8, 450, 1e-6), "nbytes"),
    (lambda: collectives.collective_time("all-reduce", 1e9, 8, 0, 1e-6), "link_gbs"),
    (lambda: collectives.collective_time("all-reduce", 1e9, 8, 450, -1), "latency_s"),
    (lambda: collectives.collective_time("broadcast", 1e9, 8, 450, 1e-6), "op"),
    (lambda: collectives.collective_time("all-gather", 1e9, 8, 450, 0, algorithm="tree"), "algorithm"),
    (lambda: collectives.collective_time("all-reduce", 1e9, 8, 450, 0, algorithm="mesh"), "algorithm"),
    (lambda: collectives.custom_link("", 10, 1), "name"),
])
def test_bad_input_raises_value_error_naming_the_argument(call, name):
    with pytest.raises(ValueError, match=name):
        call()


# --- the third roof: a row-parallel matmul ------------------------------------------------------

def test_tp_critical_slice_on_nvlink_and_pcie_for_one_matmul_and_a_megatron_block():
    # one row-parallel matmul: K/n* = (n-1)/n x b x π / B = 7/8 x 2 B x 989.5e12 / 450e9 = 3,848
    assert sharding.tp_critical_shard("h100-sxm", "bf16", "nvlink4", 8) == pytest.approx(3848.06,
                                                                                abs=0.01)
    # a SwiGLU block shares one all-reduce among 3 matmuls: a third, 1,282.7 (Lab 6 P3)
    assert sharding.tp_critical_shard("h100-sxm", "bf16", "nvlink4", 8, matmuls=3) == pytest.approx(
        7 / 8 * 2 * 989.5e12 / 450e9 / 3)
    # H100 PCIe (756 TFLOP/s bf16) on PCIe Gen5 (63 GB/s): 7/8 x 2 x 12,000 / 3 = 7,000 (P2)
    assert sharding.tp_critical_shard("h100-pcie", "bf16", "pcie5-x16", 8, matmuls=3) == pytest.approx(
        7000.0, rel=1e-3)
    # a reduce-scatter sends half the bytes: half the critical size
    assert sharding.tp_critical_shard("h100-sxm", "bf16", "nvlink4", 8, op="reduce-scatter") == \
        pytest.approx(3848.06 / 2, abs=0.01)
    # the link ridge names a precision like the HBM ridge: π / B = 989.5e12 / 450e9
    assert sharding.link_ridge("h100-sxm", "bf16", "nvlink4") == pytest.approx(2198.9, abs=0.1)
    with pytest.raises(ValueError, match="matmuls"):
        sharding.tp_critical_shard("h100-sxm", "bf16", "nvlink4", 8, matmuls=4)


PAIRS = [("h100-sxm", "nvlink4"), ("h100-pcie", "pcie5-x16"), ("h100-sxm", "ib-ndr")]


@settings(max_examples=50, deadline=None)
@given(n=st.sampled_from([2, 4, 8]), k_shard=st.integers(64, 65536), t=st.integers(1, 1 << 16),
       n_out=st.integers(64, 65536), pair=st.sampled_from(PAIRS),
       op=st.sampled_from(["all-reduce", "reduce-scatter"]), m=st.sampled_from([1, 2, 3]))
def test_link_intensity_crosses_the_link_ridge_at_the_critical_shard(n, k_shard, t, n_out, pair,
                                                                     op, m):
    dev, link = pair
    mm = sharding.sharded_matmul(t, k_shard * n, n_out, n, "bf16", op=op, matmuls=m)
    # FLOPs m x 2 T K N / n over factor x T N b bytes: T and N cancel
    assert mm.ai_link == pytest.approx(m * 2 * k_shard / (collectives.bus_factor(op, n) * 2))
    crit = sharding.tp_critical_shard(dev, "bf16", link, n, op=op, matmuls=m)
    # at large batch the block's binding roof follows (bandwidth terms only)
    big = sharding.sharded_matmul(1 << 20, k_shard * n, n_out, n, "bf16", op=op, matmuls=m)
    tt = sharding.shard_times(big, dev, link)
    if abs(k_shard / crit - 1) > 0.01:
        assert (tt.t_link > tt.t_compute) == (k_shard < crit)


def test_a_batch_sweep_moves_the_tokens_and_nothing_else():
    mm = sharding.sharded_matmul(16, 8192, 8192, 8, "bf16")
    big = mm.at_tokens(64)
    # 64 tokens: 2 x 64 x 8192 x 8192 / 8 FLOPs per GPU, a 64 x 8192 x 2 B partial output,
    # x 64 x 1024 and y 64 x 8192 elements around the same 1024 x 8192 weight slice
    assert big.tokens == 64 and big.flops == 2 * 64 * 8192 * 8192 / 8
    assert big.message_bytes == 64 * 8192 * 2
    assert big.hbm_bytes == 2 * (64 * 1024 + 1024 * 8192 + 64 * 8192)
    assert (big.k, big.n_out, big.n, big.storage, big.op) == (8192, 8192, 8, "bf16", "all-reduce")
    assert mm.tokens == 16  # the block swept from is unchanged
    with pytest.raises(ValueError, match="tokens"):
        mm.at_tokens(0)


def test_sharded_matmul_counts_per_chip_flops_and_bytes():
    mm = sharding.sharded_matmul(16, 8192, 8192, 8, "bf16")
    assert mm.flops == 2 * 16 * 8192 * 8192 / 8
    assert mm.hbm_bytes == 2 * (16 * 1024 + 1024 * 8192 + 16 * 8192)
    assert mm.message_bytes == 16 * 8192 * 2
    assert mm.link_bytes == 1.75 * 16 * 8192 * 2
    with pytest.raises(ValueError, match="k=8190"):
        sharding.sharded_matmul(16, 8190, 8192, 8)
    with pytest.raises(ValueError, match="op"):
        sharding.sharded_matmul(16, 8192, 8192, 8, op="all-gather")
    # a SwiGLU block (T 16, F 28672, N 8192, 8 GPUs): 3 matmuls of 2 x 16 x 3584 x 8192 FLOPs;
    # x read (16 x 8192), 3 weight slices (3 x 3584 x 8192), gate and up outputs written and
    # read (2 x 2 x 16 x 3584), y written (16 x 8192), 2 B each
    blk = sharding.sharded_matmul(16, 28672, 8192, 8, "bf16", matmuls=3)
    assert blk.flops == 3 * 2 * 16 * 3584 * 8192
    assert blk.hbm_bytes == 2 * (16 * 8192 + 3 * 3584 * 8192 + 4 * 16 * 3584 + 16 * 8192)
    assert blk.message_bytes == 16 * 8192 * 2  # still one all-reduce of T x N


@pytest.mark.parametrize("k,n_out,n,dev,link,m", [
    (8192, 8192, 8, "h100-sxm", "nvlink4", 1), (28672, 8192, 8, "h100-sxm", "nvlink4", 3),
    (28672, 8192, 8, "h100-pcie", "pcie5-x16", 3), (8192, 28672, 2, "h100-sxm", "nvlink4", 2),
    (65536, 1024, 4, "h100-sxm", "ib-ndr", 1), (4096, 4096, 2, "l4", "pcie4-x16", 1),
    (28672, 8192, 16, "h100-sxm", "nvlink4", 3),
])
def test_comm_bound_batch_range_matches_brute_force(k, n_out, n, dev, link, m):
    rng = sharding.comm_bound_tokens(k, n_out, n, dev, link, matmuls=m)
    for t in [1, 2, 3, 5, 8, 13, 30, 62, 63, 100, 300, 1000, 4096, 10_000, 100_000, 1 << 21]:
        times = sharding.shard_times(sharding.sharded_matmul(t, k, n_out, n, matmuls=m), dev, link)
        inside = rng is not None and rng[0] < t < rng[1]
        edge = rng is not None and min(abs(t - rng[0]), abs(t - rng[1])) < 1
        if not edge:
            assert (times.binding == "link") == inside, (t, rng, times)


# --- tensor-parallel serving of Llama-3-70B ------------------------------------------------------

def test_tp_serving_splits_weights_and_kv_heads_per_gpu():
    m = models.get("llama-3-70b")
    full = models.memory_budget(m, "h100-sxm", batch=4, seq_len=8192)
    for n in (1, 2, 4, 8, 16):
        s = sharding.tp_serving(m, "h100-sxm", "nvlink4", n, batch=4, seq_len=8192)
        assert s.budget.terms["weights"] == pytest.approx(full.terms["weights"] / n)
        # 8 KV heads: beyond 8 GPUs each head is replicated, not split further
        assert s.budget.terms["KV cache"] == pytest.approx(full.terms["KV cache"] / min(n, 8))
        assert s.budget.capacity_bytes == full.capacity_bytes
    one = sharding.tp_serving(m, "h100-sxm", "nvlink4", 1, batch=4, seq_len=8192)
    assert one.t_comm == 0 and not one.fits  # 141 GB of bf16 weights on one 80 GB GPU
    dec = models.step_bound(m, "h100-sxm", "decode", batch=4, seq_len=8192)
    assert one.flops == pytest.approx(dec.flops) and one.bytes == pytest.approx(dec.bytes)


def test_tp_serving_communication_is_two_all_reduces_per_layer():
    m = models.get("llama-3-70b")
    s = sharding.tp_serving(m, "h100-sxm", "nvlink4", 8, batch=2, seq_len=4096)
    per_ar = collectives.link_time("all-reduce", 2 * m.d_model * 2, 8, "nvlink4")
    gather = collectives.link_time("all-gather", 2 * m.vocab * 2, 8, "nvlink4")
    assert s.collectives == 2 * m.layers + 2
    assert s.t_comm == pytest.approx((2 * m.layers + 1) * per_ar + gather)
    assert s.t_step == pytest.approx(max(s.t_compute, s.t_hbm) + s.t_comm)
    assert s.tokens_per_s == pytest.approx(2 / s.t_step)


def test_the_two_failure_states_and_backing_out_of_them():
    kw = dict(batch=1, seq_len=8192)
    # H100 PCIe cards, one per machine, joined by InfiniBand NDR (a flat ring of n at 5 µs)
    rows = sharding.tp_scaling("llama-3-70b", "h100-pcie", "ib-ndr", **kw)
    assert sharding.tp_diagnosis(rows, 1).kind == "oom"  # too few GPUs: 141 GB on one 80 GB GPU
    assert "n = 2 fits" in sharding.tp_diagnosis(rows, 1).message
    assert sharding.tp_diagnosis(rows, 2).kind == "ok"
    # too many over a slow link: 16 GPUs fall behind 8
    bad = sharding.tp_diagnosis(rows, 16)
    assert bad.kind == "comm" and "fewer GPUs or a faster link" in bad.message
    by_n = {r.n: r for r in rows}
    assert by_n[16].tokens_per_s < by_n[8].tokens_per_s
    assert sharding.tp_diagnosis(rows, 8).kind == "ok"
    # Lab 6 P4: H100 PCIe on PCIe Gen5 first spends more time in collectives at 16-way
    # (2 levels past 8 GPUs); H100 SXM on NVLink 4 too, later in the step
    assert sharding.first_comm_bound_degree("llama-3-70b", "h100-pcie", "pcie5-x16", **kw) == 16
    assert sharding.first_comm_bound_degree("llama-3-70b", "h100-sxm", "nvlink4", **kw) == 16
    with pytest.raises(ValueError, match="n=3"):
        sharding.tp_diagnosis(rows, 3)
    with pytest.raises(ValueError, match="link="):  # H100 SXM on PCIe is not a product
        sharding.tp_scaling("llama-3-70b", "h100-sxm", "pcie5-x16", **kw)


def test_lab6_p4_collectives_against_matmuls_hand_derived():
    # Llama-3-70B decode, batch 1, H100 PCIe on PCIe Gen5, 8-way: 2 x 80 + 1 = 161 all-reduces
    # of 1 x 8192 x 2 B = 16 KiB, each 14 x 3 µs + 1.75 x 16384 / 63e9 s, plus an all-gather of
    # the 128,256-wide logits: 7 x 3 µs + 7/8 x 256,512 B / 63e9.
    m = models.get("llama-3-70b")
    s = sharding.tp_serving(m, "h100-pcie", "pcie5-x16", 8, batch=1, seq_len=8192)
    ar = 14 * 3e-6 + 1.75 * 8192 * 2 / 63e9
    ag = 7 * 3e-6 + 7 / 8 * m.vocab * 2 / 63e9
    assert s.t_comm == pytest.approx((2 * m.layers + 1) * ar + ag, rel=1e-3)


def test_serving_matmul_time_is_the_larger_of_compute_and_hbm():
    # A decode step's matmuls take their roofline bound: 1 ms of compute against 3 ms of HBM
    # reads is 3 ms, and the step adds 2 ms of collectives after them: 5 ms, link-bound
    # only when the collectives outlast the matmuls.
    budget = models.memory_budget("llama-3-8b", "h100-sxm", batch=1, seq_len=1)
    step = sharding.TPServing("llama-3-8b", "h100-sxm", collectives.get_link("nvlink4"), 2,
                              1, 1, budget, 0.0, 0.0, 1, 0.0, t_compute=1e-3, t_hbm=3e-3,
                              t_comm=2e-3)
    assert step.t_matmuls == 3e-3
    assert step.t_step == pytest.approx(5e-3)
    assert step.bound == "memory-bound"
    compute_bound = dataclasses.replace(step, t_compute=4e-3)
    assert compute_bound.t_matmuls == 4e-3 and compute_bound.bound == "compute-bound"
    assert dataclasses.replace(step, t_comm=3.5e-3).bound == sharding.COMMUNICATION


# --- data-parallel training -------------------------------------------------------------------

def test_dp_critical_batch_hand_derived_and_independent_of_the_model():
    # 64 H100 SXM in 8 nodes, one NDR NIC per GPU, NCCL's Ring: the node's NICs (400 GB/s)
    # are slower than NVLink (450): 2 x 63/64 / 400e9 = 4.921875 ps/B. Backward 4 P T / π =
    # P x 2 B x 4.921875e-12: T* = 2 x 4.921875e-12 x 989.5e12 / 4 = 2,435.2
    c = 2 * 63 / 64 / 400e9
    t_star = sharding.dp_critical_batch("h100-sxm", "bf16", "nvlink4", 64)
    assert t_star == pytest.approx(2 * c * H100_BF16 / 4)
    # hierarchical: the slower level, NICs 2 x 7/8 / 8 / 50e9 = 4.375 ps/B: 2,164.5
    assert sharding.dp_critical_batch("h100-sxm", "bf16", "nvlink4", 64,
                               algorithm="hierarchical") == pytest.approx(
        2 * 4.375e-12 * H100_BF16 / 4)
    # 2 NICs per node: the Ring's egress 100 GB/s, 4x the time per byte: 9,741 tokens
    assert sharding.dp_critical_batch("h100-sxm", "bf16", "nvlink4", 64, nics_per_node=2) == \
        pytest.approx(4 * 2 * c * H100_BF16 / 4)
    # A100 nodes with HDR NICs (200 GB/s per node): 2 x 31/32 / 200e9 x 312e12 / 2 = 1,511
    assert sharding.dp_critical_batch("a100-sxm-80gb", "bf16", "nvlink3", 32, nic="ib-hdr") == \
        pytest.approx(2 * 31 / 32 / 200e9 * 312e12 / 2)
    for model in ("llama-3-8b", "llama-3-70b"):
        below = sharding.dp_step(model, 64, int(t_star * 0.9), "h100-sxm", "bf16", "nvlink4")
        above = sharding.dp_step(model, 64, int(t_star * 1.1), "h100-sxm", "bf16", "nvlink4")
        # latency (112 x 1 + 14 x 5 µs) is negligible next to GBs of gradients
        assert below.comm_bound and not above.comm_bound


def test_overlap_hides_the_all_reduce_only_behind_the_backward_pass():
    on = sharding.dp_step("llama-3-8b", 8, 4096, "h100-sxm", "bf16", "nvlink4", overlap=True)
    off = sharding.dp_step("llama-3-8b", 8, 4096, "h100-sxm", "bf16", "nvlink4", overlap=False)
    p = models.get("llama-3-8b").params
    assert on.t_fwd == pytest.approx(2 * p * 4096 / H100_BF16)
    assert on.t_bwd == pytest.approx(4 * p * 4096 / H100_BF16)
    assert on.t_step == on.t_fwd + max(on.t_bwd, on.t_comm)
    assert off.t_step == on.t_fwd + on.t_bwd + on.t_comm
    assert 1 <= on.overlap_gain <= 5 / 3
    # 8 GPUs in one node: 2 x 7/8 x 2 P B / 450e9 + 14 x 1 µs
    assert on.t_comm == pytest.approx(1.75 * 2 * p / 450e9 + 14e-6)
    with pytest.raises(ValueError, match="tokens_per_chip"):
        sharding.dp_step("llama-3-8b", 8, 0, "h100-sxm", "bf16", "nvlink4")
    with pytest.raises(ValueError, match="n"):
        sharding.dp_step("llama-3-8b", 1, 4096, "h100-sxm", "bf16", "nvlink4")


def test_the_wait_per_step_is_the_all_reduce_the_backward_pass_does_not_hide():
    # Llama-3-8B (P = 8.030e9), 32 A100 SXM in 4 DGX A100 nodes (NVLink 3
    # inside, 8 HDR NICs of 25 GB/s per node), 1,024 tokens per GPU, NCCL's Ring. The NICs
    # together (200 GB/s) are slower than NVLink 3 (300): all-reduce 2P x 2 x 31/32 / 200e9
    # + (56 x 1 + 6 x 5) µs = 155.67 ms; backward 4 P x 1024 / 312e12 = 105.42 ms; wait 50.25
    # ms. Without overlap the wait is the whole all-reduce.
    p = models.get("llama-3-8b").params
    comm, bwd = 2 * p * 2 * 31 / 32 / 200e9 + 86e-6, 4 * p * 1024 / 312e12
    kw = dict(nic="ib-hdr", nics_per_node=8)
    on = sharding.dp_step("llama-3-8b", 32, 1024, "a100-sxm-80gb", "bf16", "nvlink3", **kw)
    off = sharding.dp_step("llama-3-8b", 32, 1024, "a100-sxm-80gb", "bf16", "nvlink3", overlap=False,
                    **kw)
    assert on.t_comm == pytest.approx(comm, rel=1e-9)
    assert on.t_exposed == pytest.approx(comm - bwd, rel=1e-6)
    assert off.t_exposed == pytest.approx(comm, rel=1e-6)
    # above the critical batch nothing waits
    big = sharding.dp_step("llama-3-8b", 32, 2048, "a100-sxm-80gb", "bf16", "nvlink3", **kw)
    assert big.t_exposed == 0


def test_the_wait_if_the_whole_step_hid_the_all_reduce():
    # forward 2 s, backward 4 s: an all-reduce of 7 s waits 7 - 6 = 1 s behind the whole step
    # (the backward pass alone leaves 7 - 4 = 3 s); one of 5 s, none.
    step = sharding.DPStep(1e9, 8, 1024, t_fwd=2.0, t_bwd=4.0, t_comm=7.0, overlap=True)
    assert step.t_exposed_behind_whole_step == 1.0
    assert step.t_exposed == 3.0
    short = sharding.DPStep(1e9, 8, 1024, t_fwd=2.0, t_bwd=4.0, t_comm=5.0, overlap=True)
    assert short.t_exposed_behind_whole_step == 0.0


def test_alpha_where_collectives_equal_matmuls_hand_derived():
    # Lab 6 P4 at 8-way (F12): the HBM time reads the weights but the input embedding table
    # (70.55e9 - 128,256 x 8,192 params x 2 B) plus the 8k KV cache (80 layers x 8 KV heads x
    # 128 x 2 x 2 B x 8,192 = 2.68 GB), / 8 GPUs / 2.0 TB/s = 8.856 ms. Collectives at α = 0:
    # 161 x 1.75 x 16,384 B / 63e9 + 7/8 x 256,512 B / 63e9 = 0.0768 ms; α steps per step:
    # 161 x 14 + 7 = 2,261. α* = (8.856 - 0.0768) ms / 2,261 = 3.883 µs.
    m = models.get("llama-3-70b")
    weights = (m.params - m.vocab * m.d_model) * 2
    kv = 80 * 8 * 128 * 2 * 2 * 8192
    t_mm = (weights + kv) / 8 / 2.0e12
    zero = 161 * 1.75 * 16384 / 63e9 + 7 / 8 * m.vocab * 2 / 63e9
    hand = (t_mm - zero) / (161 * 14 + 7)
    a8 = sharding.alpha_where_collectives_equal_matmuls(m, "h100-pcie", "pcie5-x16", 8, batch=1,
                                                 seq_len=8192)
    assert a8 == pytest.approx(hand, rel=0.01)
    # at α* the two times are equal (the defining property)
    import dataclasses

    at = sharding.tp_serving(m, "h100-pcie", dataclasses.replace(collectives.get_link("pcie5-x16"),
                                                          latency_us=a8 * 1e6), 8, batch=1,
                      seq_len=8192)
    assert at.t_comm == pytest.approx(max(at.t_compute, at.t_hbm), rel=1e-9)
    assert sharding.alpha_where_collectives_equal_matmuls(m, "h100-pcie", "pcie5-x16", 1, batch=1,
                                                   seq_len=8192) is None


def test_unverified_link_figures_are_marked_and_derated_as_upper_bounds():
    # F14: MI300X Infinity Fabric, 7 x 64 GB/s one way if every link ran at full rate: derived,
    # unverified, an upper bound
    lf = collectives.get_link("infinity-fabric")
    assert lf.approximate and lf.one_way_text == "~448 GB/s" and "UPPER BOUND" in lf.derivation
    eff = collectives.link_efficiency(lf)
    assert not eff.measured and "upper bound" in eff.source
    assert collectives.get_link("nvlink4").one_way_text == "450 GB/s"
    assert not collectives.get_link("nvlink4").approximate


def test_nvlink_sharp_all_reduce_is_stated_apart_from_the_ring():
    # F9: NCCL's default on 8xH100 SXM: busbw ~480, algbw ~275 GB/s (NVIDIA/nccl-tests issue
    # 212): 1 GB in 1e9 x 2 x 7/8 / 480e9 = 3.65 ms, faster than the ring at its datasheet
    # bandwidth (3.90 ms); the 82% derating is the ring's
    assert collectives.NVLS_H100.time(1e9) == pytest.approx(1.75e9 / 480e9)
    assert collectives.NVLS_H100.time(1e9) < collectives.link_time("all-reduce", 1e9, 8, "nvlink4")
    assert "Ring" in collectives.NVLINK_ACHIEVABLE.source and "NVLink SHARP" in collectives.__doc__
    with pytest.raises(ValueError, match="nbytes"):
        collectives.NVLS_H100.time(0)


def test_module_docstrings_name_their_sources():
    assert "nccl-tests" in collectives.__doc__ and "Thakur" in collectives.__doc__
    assert "scaling-book" in sharding.__doc__ and "Megatron" in sharding.__doc__
    assert math.isclose(sharding.TRAIN_FLOPS_PER_PARAM_TOKEN, 6)


def test_mixed_precision_adam_keeps_16_bytes_a_parameter():
    # bf16 weights 2 B + bf16 gradients 2 B + fp32 master weights 4 B + two fp32 moments 8 B
    assert sharding.ADAM_MIXED_PRECISION_BYTES_PER_PARAM == 2 + 2 + 4 + 4 + 4


def test_gradient_bytes_are_parameters_times_bytes_per_gradient():
    """Llama-3-8B's 8,030,261,248 parameters (meta-llama config) in bf16: 16.06 GB; fp32 4 B."""
    assert sharding.gradient_bytes("llama-3-8b") == 2 * 8_030_261_248
    assert sharding.gradient_bytes(models.get("llama-3-8b"), 4) == 4 * 8_030_261_248
    assert sharding.gradient_bytes(1e9, 2) == 2e9
    with pytest.raises(ValueError, match="grad_bytes"):
        sharding.gradient_bytes("llama-3-8b", 0)
    # the step all-reduces exactly these bytes: 2 x 31/32 x 2P / 200 GB/s + 86 µs (hand)
    step = sharding.dp_step("llama-3-8b", 32, 1024, "a100-sxm-80gb", "bf16", "nvlink3",
                            nic="ib-hdr", nics_per_node=8)
    assert step.t_comm == pytest.approx(2 * 31 / 32 * 2 * 8_030_261_248 / 200e9 + 86e-6)


def test_a_paths_bandwidth_term_and_crossover_by_hand():
    """One ring of 8 on NVLink 4 (450 GB/s one way, α 1 µs): 1 GB's bandwidth term is
    2 x 7/8 x 1e9 / 450e9 = 3.889 ms; 14 steps x 1 µs equal it at 14e-6 x 450e9 / 1.75 = 3.6 MB,
    as the one-ring crossover_bytes says. Achievable: 370 GB/s (nccl-tests). Across 4 DGX A100
    nodes (NVLink 3 300 GB/s, 8 HDR NICs of 25 GB/s): 62 steps, 86 µs, over 2 x 31/32 / 200e9."""
    p = collectives.collective_path("nvlink4", 8)
    assert p.bandwidth_time("all-reduce", 1e9) == pytest.approx(1.75e9 / 450e9)
    assert p.time("all-reduce", 1e9) == pytest.approx(1.75e9 / 450e9 + 14e-6)
    assert p.crossover_bytes("all-reduce") == pytest.approx(14e-6 * 450e9 / 1.75)
    assert p.crossover_bytes("all-reduce") == pytest.approx(
        collectives.crossover_bytes("all-reduce", 8, 450, 1e-6))
    assert collectives.collective_path("nvlink4", 8, achievable=True).node_gbs == \
        pytest.approx(370)
    across = collectives.collective_path("nvlink3", 32, nic="ib-hdr", nics_per_node=8)
    assert across.crossover_bytes("all-reduce") == pytest.approx(86e-6 / (2 * 31 / 32 / 200e9))
    with pytest.raises(ValueError, match="nbytes"):
        p.bandwidth_time("all-reduce", 0)
