"""Lab 4 physics: fusion, the overhead regime, and the on-chip limit of fused kernels.

- An elementwise chain split into kernels (``formulas.elementwise_chain``) takes, per kernel,
  max(compute, memory, launch overhead) (``roofline.time_bounds``); fusing cuts HBM bytes
  *and* launches.
- Fused (flash) attention keeps the scores on chip, tile by tile: its tiles, the bytes each
  level serves and its roofline of each level are in ``flash`` (re-exported here).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from labs.core.physics import formulas
from labs.core.physics import hardware
from labs.core.physics import precision as _precision
from labs.core.physics import roofline
from labs.core.physics.deferred import numpy as _np
from labs.core.physics.validate import (
    finite_results,
    close_matches,
    flag,
    instance,
    non_negative,
    positive,
    positive_int,
    sequence,
    shown,
)

# flash attention's tiles and traffic (Part 4) live in ``flash``; Lab 4 reads them here
from labs.core.physics.flash import (  # noqa: F401  (re-exported)
    FLASH_MEASURED,
    FLASH_SCHEDULE,
    L2_MEASURED_GBS,
    ONCHIP,
    REGISTERS,
    SMEM,
    UNDETERMINED_L2,
    FlashRoofPoint,
    OnChip,
    TileFit,
    flash_attention_hbm_bytes,
    flash_attention_l2_bytes,
    flash_kv_hbm_passes,
    flash_onchip_bytes,
    flash_roof_point,
    flash_shared_cache_misses,
    flash_tile,
    hierarchical_attainable,
    l2_bandwidth_gbs,
    largest_square_tile,
    onchip,
    onchip_device_names,
    onchip_roof_tflops,
)

__all__ = [
    "BENEFIT_BYTES", "BENEFIT_LAUNCHES", "BENEFIT_NONE", "ChainTiming", "DEFAULT_CHAIN",
    "FLASH_MEASURED", "FLASH_SCHEDULE", "FlashRoofPoint", "L2_MEASURED_GBS", "ONCHIP", "OnChip",
    "QUESTION_CHAIN_ELEMENTS", "QUESTION_HEADS", "QUESTION_HEAD_DIM", "QUESTION_TINY_ELEMENTS",
    "REGISTERS", "SMEM", "TileFit", "UNDETERMINED_L2", "attention_memory_terms",
    "chain_byte_ratio", "chain_overhead_crossover", "chain_time_curve", "chain_timing",
    "flash_attention_hbm_bytes", "flash_attention_l2_bytes", "flash_kv_hbm_passes",
    "flash_onchip_bytes", "flash_roof_point", "flash_shared_cache_misses", "flash_tile",
    "fusion_benefit", "fusion_speedup", "hierarchical_attainable", "kernel_crossovers",
    "kernel_tflops", "l2_bandwidth_gbs", "largest_square_tile", "launch_saving_speedup", "onchip",
    "onchip_device_names", "onchip_roof_tflops", "unfused_max_seq_len", "unfused_score_bytes"
]

DEFAULT_CHAIN = ("layernorm", "gelu", "dropout", "residual_add")
#: Lab 4's questions' cases: the lab asks them, its bands (misconceptions.lab04) grade them.
QUESTION_CHAIN_ELEMENTS = 100_000_000  # "a large tensor": 100 M elements, 200 MB at fp16
QUESTION_TINY_ELEMENTS = 1_000  # one token's hidden state of a small model
QUESTION_HEADS, QUESTION_HEAD_DIM = 32, 128  # the attention questions' shape (batch 1)


# --- fusion of an elementwise chain ---------------------------------------------------------

@dataclass(frozen=True)
class ChainTiming:
    chain: formulas.ChainCost
    kernel_times: tuple[roofline.TimeBounds, ...]

    @property
    def seconds(self) -> float:
        """Lower bound: kernels run back to back, each max(compute, memory, launch)."""
        return sum(t.lower for t in self.kernel_times)

    @property
    def regime(self) -> str:
        """The regime that holds most of the time."""
        by = {}
        for t in self.kernel_times:
            by[t.regime] = by.get(t.regime, 0.0) + t.lower
        return max(by, key=by.get)


@finite_results
def chain_timing(n_elements, hw, groups=None, ops: Sequence[str] = DEFAULT_CHAIN,
                 precision: str = "fp16", *,
                 launch_overhead_us: float = roofline.DEFAULT_LAUNCH_OVERHEAD_US) -> ChainTiming:
    non_negative("launch_overhead_us", launch_overhead_us)
    chain = formulas.elementwise_chain(n_elements, ops, groups, precision)
    d = hardware.get(hw, arg="hw")
    times = tuple(roofline.time_bounds(k.flops, k.bytes, d, k.compute, launches=1,
                                launch_overhead_us=launch_overhead_us) for k in chain.kernels_costs)
    return ChainTiming(chain, times)


def _ops(ops) -> list[str]:
    """The chain's op keys, each known (KeyError naming ``ops`` otherwise)."""
    return [formulas.elementwise_op(o, "ops").key for o in sequence("ops", ops)]


@finite_results
def fusion_speedup(n_elements, hw, groups_before, groups_after,
                   ops: Sequence[str] = DEFAULT_CHAIN, precision: str = "fp16", *,
                   launch_overhead_us: float = roofline.DEFAULT_LAUNCH_OVERHEAD_US) -> float:
    n_ops = len(_ops(ops))
    groups_before = formulas.chain_groups(groups_before, n_ops, arg="groups_before")
    groups_after = formulas.chain_groups(groups_after, n_ops, arg="groups_after")
    kw = dict(ops=ops, precision=precision, launch_overhead_us=launch_overhead_us)
    before = chain_timing(n_elements, hw, groups_before, **kw).seconds
    return before / chain_timing(n_elements, hw, groups_after, **kw).seconds


@finite_results
def chain_byte_ratio(ops: Sequence[str] = DEFAULT_CHAIN, precision: str = "fp16", *,
                     count_masks: bool = True, skip_is_input: bool = False) -> float:
    """HBM bytes of the chain run one kernel per op over those of the chain fused into one
    kernel: the speedup of fusing it where every kernel is memory-bound. Per element, so
    independent of the tensor's size. ``count_masks=False`` leaves out the masks the ops write
    (dropout's 1-byte keep-mask): the count of a student who forgets them.
    ``skip_is_input=True`` takes the residual add's skip to be the chain's own input (a pre-LN
    block, where the skip is the LayerNorm's input), which the fused kernel has already read:
    fused, the skip costs no bytes of its own (19/5 = 3.8 for Lab 4's chain at fp16, against
    19/7 where the skip is another tensor)."""
    names = _ops(ops)
    count_masks = flag("count_masks", count_masks)
    skip_is_input = flag("skip_is_input", skip_is_input)
    element = _precision.bytes_per_element(precision, arg="precision")

    def _bytes(groups):
        kernels = formulas.elementwise_chain(1, ops, groups, precision).kernels_costs
        masks = 0.0 if count_masks else sum(k.detail.get("write masks", 0.0) for k in kernels)
        return sum(k.bytes for k in kernels) - masks

    fused = _bytes([list(range(len(names)))])
    if skip_is_input:
        fused -= element * names.count("residual_add")
    return _bytes(None) / fused


@finite_results
def launch_saving_speedup(n_elements, hw, groups_before, groups_after,
                          ops: Sequence[str] = DEFAULT_CHAIN, precision: str = "fp16", *,
                          launch_overhead_us: float = roofline.DEFAULT_LAUNCH_OVERHEAD_US) -> float:
    """The speedup of a student who believes fusion saves launches only: the chain's time
    before (``chain_timing``) over that time less one launch overhead per kernel removed.
    Right where every kernel is launch-bound (it equals :func:`fusion_speedup` there); about
    1 on a large tensor, where the bytes, which fusion also cuts, set the time."""
    n_ops = len(_ops(ops))
    groups_before = formulas.chain_groups(groups_before, n_ops, arg="groups_before")
    groups_after = formulas.chain_groups(groups_after, n_ops, arg="groups_after")
    before = chain_timing(n_elements, hw, groups_before, ops, precision,
                          launch_overhead_us=launch_overhead_us).seconds
    # each kernel takes at least one launch: what is left is positive
    saved = (len(groups_before) - len(groups_after)) * launch_overhead_us * 1e-6
    return before / (before - saved)


@finite_results
def chain_overhead_crossover(hw, groups=None, ops: Sequence[str] = DEFAULT_CHAIN,
                             precision: str = "fp16", *,
                             launch_overhead_us: float = roofline.DEFAULT_LAUNCH_OVERHEAD_US) -> float:
    """Elements below which the chain's *largest* kernel is launch-bound (so all are):
    n * bytes_per_element(kernel) / bandwidth = overhead."""
    hardware.get(hw, arg="hw")
    per_elem = max(k.bytes for k in formulas.elementwise_chain(1, ops, groups, precision).kernels_costs)
    return roofline.overhead_crossover_elements(per_elem, hw, launch_overhead_us=launch_overhead_us)


@finite_results
def unfused_score_bytes(batch, heads, seq_q, seq_kv, precision: str = "fp16") -> float:
    """Memory the unfused attention's score matrix occupies (it grows with S^2)."""
    return formulas.score_elements(batch, heads, seq_q, seq_kv) * _precision.bytes_per_element(precision, arg="precision")


# --- Lab 4 instruments: curves, verdicts, attention memory, flash on the two-level roofline ---

from labs.core.physics.validate import non_negative as _non_negative  # noqa: E402

#: Verdicts of :func:`fusion_benefit`: why (or whether) fusing a chain helps.
BENEFIT_LAUNCHES, BENEFIT_BYTES, BENEFIT_NONE = "launches", "bytes", "none"


def chain_time_curve(sizes, hw, groups=None, ops: Sequence[str] = DEFAULT_CHAIN,
                     precision: str = "fp16", *,
                     launch_overhead_us: float = roofline.DEFAULT_LAUNCH_OVERHEAD_US) -> _np.ndarray:
    """Lower-bound time (s) of the chain at every size in ``sizes`` (elements), vectorised.

    Each kernel's FLOPs and bytes are linear in the size, so per kernel
    t(n) = max(n f / peak, n b / bandwidth, overhead) with f, b per element; the chain's time
    is the sum over kernels. Equals ``chain_timing(n, ...).seconds`` at every n.
    """
    try:
        n = _np.asarray(sizes, dtype=float)
    except (TypeError, ValueError, OverflowError):
        n = _np.asarray([])
    if n.ndim != 1 or n.size == 0 or not _np.all(_np.isfinite(n)) or _np.any(n < 1):
        raise ValueError("sizes must be a non-empty 1-D list of element counts >= 1, got "
                         f"{shown(sizes)}")
    d = hardware.get(hw, arg="hw")
    ov = _non_negative("launch_overhead_us", launch_overhead_us) * 1e-6
    total = _np.zeros_like(n)
    for k in formulas.elementwise_chain(1, ops, groups, precision).kernels_costs:
        per = roofline.time_bounds(k.flops, k.bytes, d, k.compute)  # one element, no launch
        total += _np.maximum(_np.maximum(n * per.t_compute, n * per.t_memory), ov)
    return total


def kernel_tflops(timing: ChainTiming) -> tuple[float, ...]:
    """Throughput each kernel of a chain reaches at its lower-bound time (TFLOP/s):
    FLOPs / max(compute, memory, launch). Below the roof when launch overhead dominates."""
    instance("timing", timing, ChainTiming, "a fusion.ChainTiming (from chain_timing)")
    return tuple(k.flops / t.lower / 1e12
                 for k, t in zip(timing.chain.kernels_costs, timing.kernel_times))


@finite_results
def fusion_benefit(n_elements, hw, ops: Sequence[str] = DEFAULT_CHAIN, precision: str = "fp16",
                   *, launch_overhead_us: float = roofline.DEFAULT_LAUNCH_OVERHEAD_US,
                   threshold: float = 1.05) -> str:
    """Why fusing the whole chain into one kernel helps at this size.

    ``"launches"``: the unfused chain is overhead-bound, so fusion wins by cutting launches;
    ``"bytes"``: it is memory-bound, so fusion wins by cutting HBM traffic; ``"none"``: the
    speedup is below ``threshold`` (e.g. a compute-bound chain).
    """
    k = len(_ops(ops))
    unfused = [[i] for i in range(k)]
    fused = [list(range(k))]
    kw = dict(ops=ops, precision=precision, launch_overhead_us=launch_overhead_us)
    if fusion_speedup(n_elements, hw, unfused, fused, **kw) < positive("threshold", threshold):
        return BENEFIT_NONE
    regime = chain_timing(n_elements, hw, unfused, **kw).regime
    return {roofline.OVERHEAD: BENEFIT_LAUNCHES, roofline.MEMORY: BENEFIT_BYTES}.get(regime, BENEFIT_NONE)


@finite_results
def attention_memory_terms(batch, heads, seq_len, head_dim, precision: str = "fp16", *,
                           fused: bool, kv_heads: int | None = None) -> dict[str, float]:
    """Device memory (bytes) one attention call needs at once: Q, K, V, O, and for the unfused
    version the B x H x S x S score matrix (softmax assumed in place: one S-sized buffer).
    Fused (flash) attention keeps scores in on-chip tiles: no score-matrix term."""
    fused, seq_len = flag("fused", fused), positive_int("seq_len", seq_len)
    cost = formulas.attention(batch, heads, seq_len, seq_len, head_dim, precision, fused=True,
                       kv_heads=kv_heads)
    # the S^2 term first: a budget names the term whose addition crosses capacity, and at long
    # context that is the score matrix, not the linear Q, K, V, O
    terms = {}
    if not fused:
        terms["score matrix (B×H×S×S)"] = float(
            unfused_score_bytes(batch, heads, seq_len, seq_len, precision))
    terms["Q, K, V, O"] = float(sum(cost.detail.values()))
    return terms


@finite_results
def unfused_max_seq_len(hw, batch, heads, head_dim, precision: str = "fp16", *,
                        kv_heads: int | None = None, score_precision: str | None = None,
                        score_copies: int = 1) -> int:
    """Longest sequence whose unfused attention fits in device memory (``memory_bytes``):
    c B H S^2 b_s + B (2 H + 2 H_kv) S d b <= capacity, solved for S (the quadratic's root).

    ``score_copies`` (c) score-sized buffers of ``score_precision`` (b_s, default: the
    storage precision) are held at once: 1 with softmax in place (the lab's question), 2 where
    the scores and the probabilities both exist, as PyTorch's math path holds them."""
    d = hardware.get(hw, arg="hw")
    b = _precision.bytes_per_element(precision, arg="precision")
    b_s = b if score_precision is None else _precision.bytes_per_element(score_precision,
                                                                   arg="score_precision")
    copies = positive_int("score_copies", score_copies)
    bt, h = positive_int("batch", batch), positive_int("heads", heads)
    dh = positive_int("head_dim", head_dim)
    kvh = h if kv_heads is None else positive_int("kv_heads", kv_heads)
    qa, qb, cap = copies * bt * h * b_s, bt * (2 * h + 2 * kvh) * dh * b, d.memory_bytes
    s = int((-qb + math.sqrt(qb * qb + 4 * qa * cap)) / (2 * qa))
    # Guard the float root: step to the exact integer boundary.
    while s > 0 and qa * s * s + qb * s > cap:
        s -= 1
    while qa * (s + 1) ** 2 + qb * (s + 1) <= cap:
        s += 1
    return s


@finite_results
def kernel_crossovers(hw, groups=None, ops: Sequence[str] = DEFAULT_CHAIN,
                      precision: str = "fp16", *,
                      launch_overhead_us: float = roofline.DEFAULT_LAUNCH_OVERHEAD_US
                      ) -> tuple[float, ...]:
    """Per kernel of the chain: the size (elements) at which its compute-or-memory time equals
    one launch overhead, n = overhead / max(t_compute, t_memory per element). Below the
    smallest every kernel is launch-bound; above the largest none is. For memory-bound
    kernels the smallest equals :func:`chain_overhead_crossover`."""
    d = hardware.get(hw, arg="hw")
    ov = positive("launch_overhead_us", launch_overhead_us) * 1e-6
    out = []
    for k in formulas.elementwise_chain(1, ops, groups, precision).kernels_costs:
        per = roofline.time_bounds(k.flops, k.bytes, d, k.compute)
        out.append(ov / max(per.t_compute, per.t_memory))
    return tuple(out)
