"""Lab 5 physics: a flash-attention tile's traffic below a GPU's shared L2 (SIMPLIFIED).

Tiled flash attention (FlashAttention, Dao et al. 2022; FA2, FA3) runs one CTA per query tile
of B_q rows of one head; each CTA streams all of that head's K and V through shared memory.
Below shared memory, L2 therefore serves K and V once per query tile
(``fusion.flash_attention_hbm_bytes``: Q read and O written once, K and V ceil(S / B_q) times).

HBM does not see that: L2 is shared by all SMs, and the CTAs running at once (a *wave* of one
CTA per SM, as :mod:`labs.core.physics.hierarchy` assumes for a GEMM) are consecutive query
tiles of the same few heads, because FlashAttention's grid puts the query-tile index first
(FA2/FA3: ``grid = (ceil(S / B_q), heads, batch)``). Those CTAs read the same K and V blocks at
about the same time, so L2 fetches each head's K and V from HBM once per wave that runs the
head's tiles, not once per tile: the argument the lab applies to a GEMM's wave (its A and B
panels). The stated assumptions:

* one CTA per SM (``ctas`` = the SMs sharing L2), query tiles scheduled head by head;
* the wave's CTAs advance through K and V together, so L2 must keep ``WAVE_SLABS`` K/V blocks
  (the one being read and the next) of every head the wave touches
  (:func:`wave_footprint_bytes`); where that does not fit, the model falls back to one read
  per query tile;
* a head whose query tiles need more than one wave (more tiles than SMs) is re-read from HBM
  by each wave.

With that, HBM serves about the compulsory bytes (Q, K, V, O once) for the sequence lengths
Lab 5 draws, and L2, serving K and V to every query tile, binds a long sequence on an H100:
an L2 intensity of about 2 B_q / b FLOP/B. Held against FlashAttention-3's measured forward
pass in tests/test_reality_anchors.py.
"""

from __future__ import annotations

import math

from labs.core.physics import formulas as F
from labs.core.physics import precision as _fmt
from labs.core.physics._validate import finite_results, positive, positive_int

__all__ = ["WAVE_SLABS", "wave_heads", "wave_footprint_bytes", "wave_hbm_bytes", "wave_misses"]

#: K/V blocks per head that L2 keeps for a wave at once (stated, as for a GEMM's wave in
#: ``hierarchy.WAVE_SLABS``): the block the wave's CTAs are reading and the next, which their
#: pipelines prefetch.
WAVE_SLABS = 2


def _tiles(seq_len, block_q) -> int:
    return math.ceil(positive_int("seq_len", seq_len) / positive_int("block_q", block_q))


@finite_results
def wave_heads(batch, heads, seq_len, block_q, ctas) -> int:
    """How many (batch, head) pairs a wave of ``ctas`` CTAs touches: its CTAs are consecutive
    query tiles, ceil(S / B_q) per head, so ceil(ctas / tiles) heads, plus one where the wave
    starts part-way through a head; at most B H. H100 (132 SMs), S = 2048, B_q = 128: 16 tiles
    a head, ceil(132 / 16) + 1 = 10 heads."""
    pairs = positive_int("batch", batch) * positive_int("heads", heads)
    tiles = _tiles(seq_len, block_q)
    return min(pairs, math.ceil(positive_int("ctas", ctas) / tiles) + 1)


@finite_results
def wave_footprint_bytes(batch, heads, seq_len, head_dim, block_q, block_kv, ctas,
                         precision: str = "bf16") -> float:
    """L2 a wave needs to share its heads' K and V: ``WAVE_SLABS`` blocks of K and of V
    (B_kv x d each) for every head it touches, WAVE_SLABS x heads x 2 B_kv d b. H100, S = 2048,
    128 x 128 tiles, bf16: 2 x 10 x 2 x 128 x 128 x 2 B = 1.25 MiB of its 50 MiB."""
    h = wave_heads(batch, heads, seq_len, block_q, ctas)
    d, bkv = positive_int("head_dim", head_dim), positive_int("block_kv", block_kv)
    b = _fmt.bytes_per_element(precision, arg="precision")
    return float(WAVE_SLABS * h * 2 * bkv * d * b)


@finite_results
def wave_hbm_bytes(batch, heads, seq_len, head_dim, block_q, ctas,
                   precision: str = "bf16") -> float:
    """HBM bytes when a wave's query tiles share each head's K and V in L2: Q read and O
    written once, and each head's K and V read once per wave that runs its tiles,
    ceil(ceil(S / B_q) / ctas) times (1 while a head has no more query tiles than SMs):

        B H S d b (2 + 2 ceil(ceil(S / B_q) / ctas)).

    H100, B = 1, H = 32, S = 8192, d = 128, B_q = 128, bf16: 64 tiles a head, one wave each,
    4 x 32 x 8192 x 128 x 2 B = 268 MB (the compulsory bytes), against 8.7 GB with K and V
    re-read by every query tile."""
    tiles = _tiles(seq_len, block_q)  # checked here, in this function's own names
    positive_int("batch", batch), positive_int("heads", heads)
    positive_int("head_dim", head_dim)
    base = F.attention(batch, heads, seq_len, seq_len, head_dim, precision, fused=True)
    passes = math.ceil(tiles / positive_int("ctas", ctas))
    return float(base.detail["Q"] + base.detail["O"]
                 + passes * (base.detail["K"] + base.detail["V"]))


@finite_results
def wave_misses(batch, heads, seq_len, head_dim, block_q, block_kv, ctas, capacity_bytes,
                precision: str = "bf16") -> float | None:
    """What a level shared by ``ctas`` SMs with ``capacity_bytes`` passes on for a flash tile
    (``hierarchy.KernelModel.attention`` holds its arguments): :func:`wave_hbm_bytes` where
    the wave's footprint fits, else None (the level keeps only one tile's share)."""
    cap = positive("capacity_bytes", capacity_bytes)
    if wave_footprint_bytes(batch, heads, seq_len, head_dim, block_q, block_kv, ctas,
                            precision) > cap:
        return None
    return wave_hbm_bytes(batch, heads, seq_len, head_dim, block_q, ctas, precision)
