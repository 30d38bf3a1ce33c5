"""Lab 4 physics of flash attention: the tile that fits on one SM, and the bytes each level
of memory serves.

- On-chip figures (SMs, shared memory per block, the register file) of the registry GPUs
  (:data:`ONCHIP`), and the L2 bandwidths published microbenchmarks measured
  (:data:`L2_MEASURED_GBS`; NVIDIA publishes none in GB/s).
- A tile's Q, K, V must fit in the shared memory one thread block may use AND its fp32
  accumulators in the register file: two separate pools with separate limits (:func:`flash_tile`).
- Every query tile re-reads all of K and V through shared memory: that is L2's traffic
  (:func:`flash_attention_l2_bytes`). L2 keeps the K and V of the heads a wave of CTAs works on,
  so HBM sees about the compulsory bytes (:func:`flash_attention_hbm_bytes`), and the L2 roof,
  set by the tile's edge, binds a large head: FlashAttention-3's measured 638 TFLOP/s on an
  H100 at S = 4k (:data:`FLASH_MEASURED`) sits under the bound. Bigger tiles re-read less, which
  is why on-chip capacity bounds what fusion can do (:func:`flash_roof_point`: a roofline of each
  level, "hierarchical").

``hierarchy`` places the same kernel on its levels (``hierarchy.flash_kernel``); ``fusion``
re-exports these names for Lab 4.
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
    one_of,
    positive,
    positive_int,
    sequence,
)

__all__ = [
    "FLASH_MEASURED", "FLASH_SCHEDULE", "FlashRoofPoint", "L2_MEASURED_GBS", "ONCHIP", "OnChip",
    "REGISTERS", "SMEM", "TileFit", "UNDETERMINED_L2", "flash_attention_hbm_bytes",
    "flash_attention_l2_bytes", "flash_kv_hbm_passes", "flash_onchip_bytes", "flash_roof_point",
    "flash_shared_cache_misses", "flash_tile", "hierarchical_attainable", "l2_bandwidth_gbs",
    "largest_square_tile", "onchip", "onchip_device_names", "onchip_roof_tflops"
]

#: L2 read bandwidth measured by published microbenchmarks (GB/s), with the source. NVIDIA
#: publishes no L2 bandwidth in GB/s; its per-clock figure for the A100 (5120 B/clk, A100
#: whitepaper p. 35) times the boost clock gives 7.2 TB/s, a peak 1.36x above what is measured,
#: so the labs use the measurements (hardware.md, "Reality anchors"; LABS_SPEC §5's 1.3x rule).
L2_MEASURED_GBS = {
    "a100-sxm-80gb": (5300.0, "measured: RRZE-HPC gpu-benches gpu-l2-cache, A100-80 5.2-5.5 "
                              "TB/s (5.3 used); NVIDIA's 5120 B/clk x 1.41 GHz boost = 7.2 "
                              "TB/s is a peak 1.36x above it"),
    "h100-sxm": (6650.0, "measured: openxla/xla GPU cost model, H100 (SXM) L2 6.65 TB/s"),
    "h100-pcie": (6900.0, "measured: RRZE-HPC gpu-benches gpu-l2-cache, H100 PCIe 6.9 TB/s"),
    "h200-sxm": (9780.0, "measured: RRZE-HPC gpu-benches gpu-l2-cache, H200 9.78 TB/s"),
}
# --- on-chip memory -------------------------------------------------------------------------

_S_CUDA = ("NVIDIA CUDA C++ Programming Guide, 'Technical Specifications per Compute Capability' "
           "(shared memory per SM / per block, 64K 32-bit registers per SM)")


@dataclass(frozen=True)
class OnChip:
    device_key: str
    sms: int
    smem_per_sm_kb: float  # KiB (1024 B), as the CUDA guide states them
    smem_per_block_kb: float  # the most shared memory one thread block may use
    registers_kb_per_sm: float  # register file per SM (64K 32-bit registers = 256 KiB)
    boost_ghz: float
    sources: dict
    notes: dict

    @property
    def smem_per_block_bytes(self) -> float:
        return self.smem_per_block_kb * 1024

    @property
    def register_bytes(self) -> float:
        """The register file of one SM; a block can use at most this (64K registers)."""
        return self.registers_kb_per_sm * 1024

    @property
    def smem_bandwidth_gbs(self) -> float:
        """~ derived: SMs x 128 B/clock (32 banks x 4 B) x boost clock. Rough teaching figure."""
        return self.sms * 128 * self.boost_ghz


def _oc(key, sms, smem_sm, smem_block, ghz, sm_src, clk_src):
    return OnChip(key, sms, smem_sm, smem_block, 256, ghz,
                  {"smem": _S_CUDA, "sms": sm_src, "boost_ghz": clk_src},
                  {"smem_bandwidth_gbs": "~ derived: SMs x 128 B/clk x boost clock; real "
                                         "kernels reach less (bank conflicts, occupancy)."})


_WP_H = "NVIDIA H100 Tensor Core GPU Architecture whitepaper"
_WP_A = "NVIDIA A100 Tensor Core GPU Architecture whitepaper"
_WP_ADA = "NVIDIA Ada GPU Architecture whitepaper"
ONCHIP: dict[str, OnChip] = {o.device_key: o for o in [
    _oc("h100-sxm", 132, 228, 227, 1.98, _WP_H, _WP_H + " (max boost, rough)"),
    _oc("h100-pcie", 114, 228, 227, 1.755, _WP_H, _WP_H + " (max boost, rough)"),
    _oc("h200-sxm", 132, 228, 227, 1.98, "H200 uses the H100 SXM GH100 configuration",
        "as H100 SXM (rough)"),
    _oc("a100-sxm-80gb", 108, 164, 163, 1.41, _WP_A, _WP_A),
    _oc("l4", 58, 100, 99, 2.04, "NVIDIA L4 datasheet", "NVIDIA L4 datasheet (boost)"),
    _oc("rtx-4090", 128, 100, 99, 2.52, _WP_ADA, _WP_ADA + " (boost)"),
]}


def onchip_device_names(last: str = "and") -> str:
    """The devices with on-chip figures, by name, as a sentence lists them ("NVIDIA H100 SXM5,
    ... and NVIDIA GeForce RTX 4090"; ``last="or"`` for a choice)."""
    last = one_of("last", last, ("and", "or"))
    names = [hardware.get(k).name for k in ONCHIP]
    return ", ".join(names[:-1]) + f" {last} " + names[-1]


def onchip(hw) -> OnChip:
    """On-chip figures (SMs, shared memory, registers) of a device; KeyError with a sentence a
    student can act on when the registry has none for it."""
    d = hardware.get(hw, arg="hw")
    if d.key not in ONCHIP:
        raise KeyError(f"The registry has no on-chip figures (shared memory per block, register "
                       f"file) for the {d.name}, so its flash-attention tiles cannot be sized. "
                       f"Pick one of: {onchip_device_names('or')}.")
    return ONCHIP[d.key]


# --- flash attention tiles ------------------------------------------------------------------

SMEM, REGISTERS = "shared memory", "registers"


@dataclass(frozen=True)
class TileFit:
    """One flash-attention tile against the two on-chip pools it needs: the Q, K, V tiles in
    shared memory (at most ``smem_capacity_bytes`` per block) and the fp32 S tile and O
    accumulator in registers (at most ``register_capacity_bytes``). Separate pools: a tile
    that overflows either does not fit, however much room the other has."""

    block_q: int
    block_kv: int
    head_dim: int
    smem_bytes: float  # Q, K, V tiles in the storage precision
    register_bytes: float  # S tile and O accumulator in fp32
    smem_capacity_bytes: float
    register_capacity_bytes: float

    @property
    def overflows(self) -> tuple[str, ...]:
        """The pools the tile overflows: (), ("shared memory",), ("registers",) or both."""
        return tuple(name for name, need, have in (
            (SMEM, self.smem_bytes, self.smem_capacity_bytes),
            (REGISTERS, self.register_bytes, self.register_capacity_bytes)) if need > have)

    @property
    def fits(self) -> bool:
        return not self.overflows

    def explain(self) -> str:
        kib = 1024
        head = (f"Tile {self.block_q}×{self.block_kv} at head_dim {self.head_dim}: Q, K, V tiles "
                f"need {self.smem_bytes / kib:.0f} KiB of the {self.smem_capacity_bytes / kib:.0f}"
                f" KiB of shared memory a block may use; the fp32 S and O accumulators need "
                f"{self.register_bytes / kib:.0f} KiB of the {self.register_capacity_bytes / kib:.0f}"
                " KiB register file.")
        if self.fits:
            return head + " It fits both."
        over = " and ".join(f"{name} (by {self._over(name) / kib:.0f} KiB)"
                            for name in self.overflows)
        return head + f" It does NOT fit: it overflows the {over}."

    def _over(self, pool: str) -> float:
        if pool == SMEM:
            return self.smem_bytes - self.smem_capacity_bytes
        return self.register_bytes - self.register_capacity_bytes


def flash_tile(block_q, block_kv, head_dim, hw, precision: str = "fp16") -> TileFit:
    """SIMPLIFIED working set of one flash-attention thread block: Q (Bq x d), K and V
    (Bkv x d each) tiles in shared memory, the score tile S (Bq x Bkv) and the output
    accumulator O (Bq x d) in fp32 registers. Real kernels also double-buffer K/V."""
    bq, bkv = positive_int("block_q", block_q), positive_int("block_kv", block_kv)
    d = positive_int("head_dim", head_dim)
    b = _precision.bytes_per_element(precision, arg="precision")
    oc = onchip(hw)
    return TileFit(bq, bkv, d, (bq * d + 2 * bkv * d) * b, (bq * bkv + bq * d) * 4,
                   oc.smem_per_block_bytes, oc.register_bytes)


@finite_results
def flash_attention_l2_bytes(batch, heads, seq_q, seq_kv, head_dim, block_q,
                             precision: str = "fp16", *, kv_heads: int | None = None) -> float:
    """Traffic of the level just below the on-chip tiles (a GPU's L2) for tiled fused
    attention: Q read and O written once; each of the ceil(Sq / Bq) query tiles streams all of
    K and V through shared memory. (The untiled minimum is one pass.)"""
    base = formulas.attention(batch, heads, seq_q, seq_kv, head_dim, precision, fused=True,
                       kv_heads=kv_heads)
    passes = math.ceil(positive_int("seq_q", seq_q) / positive_int("block_q", block_q))
    # With GQA, query heads sharing a KV head re-read it unless scheduled together: assume not.
    per_q_head_kv = (2 * batch * heads * seq_kv * head_dim
                     * _precision.bytes_per_element(precision, arg="precision"))
    return base.detail["Q"] + base.detail["O"] + passes * per_q_head_kv


#: The schedule the shared-cache model assumes (SIMPLIFIED, stated): one thread block (CTA) per
#: query tile, a wave of one CTA per SM at a time, in (batch, head, query tile) order, as
#: FlashAttention launches its grid. The CTAs of a wave start together and do the same work,
#: so they walk a head's K and V together (as hierarchy's GEMM waves walk their panels).
FLASH_SCHEDULE = ("one CTA per query tile, a wave of one CTA per SM, in (batch, head, query "
                  "tile) order; a wave's CTAs walk K and V together")


@finite_results
def flash_kv_hbm_passes(seq_q, seq_kv, head_dim, block_q, precision: str = "fp16", *,
                        sharers, cache_bytes) -> int:
    """How many times each head's K and V cross from HBM into a cache shared by ``sharers``
    SMs (a GPU's L2 of ``cache_bytes``) in tiled fused attention (:data:`FLASH_SCHEDULE`).

    A wave of ``sharers`` CTAs covers up to ceil(sharers / tiles) + 1 heads (tiles =
    ceil(Sq / Bq) query tiles per head; a batch with fewer heads leaves the cache more room,
    so the count does not depend on batch or heads). When the K and V of those heads fit the
    cache, it keeps each head's K and V while every query tile reads them: one pass, the
    compulsory traffic (FlashAttention-3 measures 638 TFLOP/s at S = 4k, hdim 128 on an H100,
    which an HBM re-read per query tile would cap near 416). Otherwise the wave's CTAs stream
    a head's K and V together, once per wave that runs its tiles: ceil(tiles / sharers)."""
    tiles = math.ceil(positive_int("seq_q", seq_q) / positive_int("block_q", block_q))
    sms = positive_int("sharers", sharers)
    kv_head = (2 * positive_int("seq_kv", seq_kv) * positive_int("head_dim", head_dim)
               * _precision.bytes_per_element(precision, arg="precision"))
    in_flight = math.ceil(sms / tiles) + 1
    if in_flight * kv_head <= positive("cache_bytes", cache_bytes):
        return 1
    return math.ceil(tiles / sms)


@finite_results
def flash_shared_cache_misses(batch, heads, seq_q, seq_kv, head_dim, block_q,
                              precision: str = "fp16", *, sharers, cache_bytes,
                              kv_heads: int | None = None) -> float:
    """Bytes the level below a cache shared by ``sharers`` SMs serves for tiled fused
    attention: Q read and O written once, K and V once per pass (:func:`flash_kv_hbm_passes`)."""
    base = formulas.attention(batch, heads, seq_q, seq_kv, head_dim, precision, fused=True,
                       kv_heads=kv_heads)
    passes = flash_kv_hbm_passes(seq_q, seq_kv, head_dim, block_q, precision,
                                 sharers=sharers, cache_bytes=cache_bytes)
    return base.detail["Q"] + base.detail["O"] + passes * (base.detail["K"] + base.detail["V"])


@finite_results
def flash_attention_hbm_bytes(batch, heads, seq_q, seq_kv, head_dim, block_q, hw,
                              precision: str = "fp16", *, kv_heads: int | None = None) -> float:
    """HBM traffic of tiled fused attention on ``hw``: the K and V re-reads of every query
    tile are served by L2 (:func:`flash_attention_l2_bytes`), and HBM sees what L2 misses
    (:func:`flash_shared_cache_misses`, with the device's SMs and L2 size). A device whose L2
    size the registry lacks gets no L2 reuse: every re-read counted from HBM (a pessimistic
    bound)."""
    d = hardware.get(hw, arg="hw")
    if d.l2_bytes is None:
        return flash_attention_l2_bytes(batch, heads, seq_q, seq_kv, head_dim, block_q,
                                        precision, kv_heads=kv_heads)
    return flash_shared_cache_misses(batch, heads, seq_q, seq_kv, head_dim, block_q, precision,
                                     sharers=onchip(d).sms, cache_bytes=d.l2_bytes,
                                     kv_heads=kv_heads)


#: Published measurements of tiled flash attention (forward, fp16, head dim 128, non-causal,
#: 16k tokens per batch): device -> {sequence length: (TFLOP/s, source)}. The kernel runs 128 x
#: 128 tiles (as Lab 4's largest square tile on the H100). Lab 4 quotes them beside its bound.
FLASH_MEASURED = {
    "h100-sxm": {
        4096: (638.0, "FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608, Fig. 5), H100 "
                      "SXM5, fp16 forward, head dim 128, non-causal: 638 TFLOP/s at 4k (cuDNN "
                      "609)"),
        16384: (648.0, "FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608, Fig. 5), H100 "
                       "SXM5, fp16 forward, head dim 128, non-causal: 648 TFLOP/s at 16k"),
    },
}


def l2_bandwidth_gbs(hw) -> float | None:
    """The L2 bandwidth the labs use for ``hw`` (``hierarchy.L2_MEASURED_GBS``: published
    microbenchmarks; NVIDIA publishes none in GB/s), or None where none is known."""
    known = L2_MEASURED_GBS.get(hardware.get(hw, arg="hw").key)
    return None if known is None else known[0]


@finite_results
def hierarchical_attainable(ai_hbm, ai_onchip, hw, precision: str) -> float:
    """Two-level roofline: min(peak, AI_HBM x HBM bandwidth, AI_onchip x on-chip bandwidth)."""
    d = hardware.get(hw, arg="hw")
    a1, a2 = positive("ai_hbm", ai_hbm), positive("ai_onchip", ai_onchip)
    return min(roofline.peak_tflops(d, precision), a1 * d.bandwidth_gbs / 1e3,
               a2 * onchip(d).smem_bandwidth_gbs / 1e3)


def onchip_roof_tflops(ai, hw, precision: str):
    """The on-chip roof: min(peak, AI_onchip x on-chip bandwidth) in TFLOP/s (array ok)."""
    d = hardware.get(hw, arg="hw")
    a = roofline.check_ai(ai)
    return _np.minimum(roofline.peak_tflops(d, precision), a * onchip(d).smem_bandwidth_gbs / 1e3)


@finite_results
def flash_onchip_bytes(batch, heads, seq_q, seq_kv, head_dim, block_q, block_kv,
                       precision: str = "fp16") -> float:
    """SIMPLIFIED shared-memory read traffic of tiled flash attention: for every (query tile,
    KV tile) pair the matmuls read the Q tile, the K tile and the V tile from shared memory,
    so each query row is read once per KV tile and each K/V row once per query tile:
    B H (ceil(Skv/Bkv) Sq + 2 ceil(Sq/Bq) Skv) d b. S and P stay in registers."""
    bt, h = positive_int("batch", batch), positive_int("heads", heads)
    sq, skv = positive_int("seq_q", seq_q), positive_int("seq_kv", seq_kv)
    dh = positive_int("head_dim", head_dim)
    bq, bkv = positive_int("block_q", block_q), positive_int("block_kv", block_kv)
    rows = math.ceil(skv / bkv) * sq + 2 * math.ceil(sq / bq) * skv
    return float(bt * h * rows * dh * _precision.bytes_per_element(precision, arg="precision"))


#: :attr:`FlashRoofPoint.limit` where the L2 roof could bind but has no bandwidth figure.
UNDETERMINED_L2 = "undetermined: no L2 bandwidth figure for this device"


@dataclass(frozen=True)
class FlashRoofPoint:
    """Tiled flash attention on the roofline of each level it uses: shared memory (on chip),
    L2 (the K and V re-reads of every query tile) and HBM (what L2 misses)."""

    flops: float
    hbm_bytes: float
    onchip_bytes: float
    peak_tflops: float
    hbm_tflops: float  # AI_HBM x HBM bandwidth
    onchip_tflops: float  # AI_onchip x on-chip bandwidth
    l2_bytes: float  # K and V once per query tile, Q and O once
    l2_tflops: float | None  # AI_L2 x L2 bandwidth; None: no L2 bandwidth figure
    l2_floor_tflops: float  # AI_L2 x HBM bandwidth: every HBM byte passes L2, so L2 is no slower

    @property
    def ai_hbm(self) -> float:
        return self.flops / self.hbm_bytes

    @property
    def ai_l2(self) -> float:
        return self.flops / self.l2_bytes

    @property
    def ai_onchip(self) -> float:
        return self.flops / self.onchip_bytes

    @property
    def attainable_tflops(self) -> float:
        """The lowest known roof; an upper bound only where the L2 roof is unknown and could
        be lower (``determined``)."""
        roofs = [self.peak_tflops, self.hbm_tflops, self.onchip_tflops]
        return min(roofs + ([self.l2_tflops] if self.l2_tflops is not None else []))

    @property
    def determined(self) -> bool:
        """Whether the known roofs decide what binds: the L2 roof is known, or even its floor
        (L2 at HBM's bandwidth) sits above the lowest known roof."""
        return self.l2_tflops is not None or self.l2_floor_tflops >= self.attainable_tflops

    @property
    def limit(self) -> str:
        """Which roof binds: "compute", "HBM bandwidth", "L2 bandwidth", "on-chip bandwidth",
        or :data:`UNDETERMINED_L2`."""
        if not self.determined:
            return UNDETERMINED_L2
        a = self.attainable_tflops
        if a == self.peak_tflops:
            return "compute"
        if a == self.hbm_tflops:
            return "HBM bandwidth"
        return "L2 bandwidth" if a == self.l2_tflops else "on-chip bandwidth"


@finite_results
def flash_roof_point(batch, heads, seq_len, head_dim, block_q, block_kv, hw,
                     precision: str = "fp16", *, kv_heads: int | None = None) -> FlashRoofPoint:
    """FLOPs and the bytes each level serves for tiled fused attention: on chip
    (``flash_onchip_bytes``), L2 (``flash_attention_l2_bytes``) and HBM
    (``flash_attention_hbm_bytes``), and the roof each meets: min of compute and each level's
    AI x bandwidth (L2's measured bandwidth, ``l2_bandwidth_gbs``, where one is published)."""
    d = hardware.get(hw, arg="hw")
    seq_len = positive_int("seq_len", seq_len)
    cost = formulas.attention(batch, heads, seq_len, seq_len, head_dim, precision, fused=True,
                       kv_heads=kv_heads)
    hbm = flash_attention_hbm_bytes(batch, heads, seq_len, seq_len, head_dim, block_q, d,
                                    precision, kv_heads=kv_heads)
    l2 = flash_attention_l2_bytes(batch, heads, seq_len, seq_len, head_dim, block_q, precision,
                                  kv_heads=kv_heads)
    chip = flash_onchip_bytes(batch, heads, seq_len, seq_len, head_dim, block_q, block_kv,
                              precision)
    oc = onchip(d)
    l2_bw = l2_bandwidth_gbs(d)
    return FlashRoofPoint(cost.flops, hbm, chip, roofline.peak_tflops(d, cost.compute),
                          cost.flops / hbm * d.bandwidth_gbs / 1e3,  # FLOP/B x GB/s = GFLOP/s
                          cost.flops / chip * oc.smem_bandwidth_gbs / 1e3, l2,
                          None if l2_bw is None else cost.flops / l2 * l2_bw / 1e3,
                          cost.flops / l2 * d.bandwidth_gbs / 1e3)


def largest_square_tile(head_dim, hw, precision: str = "fp16",
                        candidates: Sequence[int] = (16, 32, 64, 128, 256, 512)) -> int | None:
    """Largest B (from ``candidates``) whose B x B flash tile fits on chip, or None."""
    sizes = [positive_int("candidates", c) for c in sequence("candidates", candidates)]
    fitting = [c for c in sizes if flash_tile(c, c, head_dim, hw, precision).fits]
    return max(fitting) if fitting else None
