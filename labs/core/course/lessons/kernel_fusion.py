"""Lab 4 (Fusion and Overhead): the text its cells assemble from computed numbers.

Each function takes values the lab computed (a ``fusion.ChainTiming``, an attention cost, a
flash tile) and returns what one cell shows: a reveal's explanation, a row of metric cards, a
note, a worked sentence of a math peek. The story (headings, scenarios, questions, the
equations) stays in the notebook; the physics stays in ``labs.core.physics.fusion``.
"""

from __future__ import annotations

from labs.core.physics import fusion, roofline, units
from labs.core.ui import style

# Numbers are written by labs.core.physics.units, as the cards write them (LABS_SPEC §6). Kept
# inline: speedups, × factors with fixed decimals that the text compares ("2.71×, not 4×").

__all__ = [
    "attention_cards",
    "chain_cards",
    "flash_tile_cards",
    "fusion_speedup_explanation",
    "largest_tile_explanation",
    "oom_explanation",
    "overhead_cards",
    "tile_fit_text",
    "tiny_tensor_explanation",
    "vector_ceiling_note",
]


# --- Part 1 · fusing an elementwise chain ---------------------------------------------------


def fusion_speedup_explanation(unfused, fused, n_elements: int, precision: str,
                               speedup: float) -> str:
    """Prediction 1's reveal: unfused and fused traffic and time; time follows the bytes."""
    return (f"Every kernel of the chain does a few FLOPs per byte: {unfused.regime}. "
            f"Unfused, each reads and writes the whole {units.format_value(n_elements / 1e6)} "
            f"M-element "
            f"{precision} tensor: {units.format_bytes(unfused.chain.total.bytes)} of HBM traffic "
            f"in "
            f"{units.format_seconds(unfused.seconds)}. Fused, the two inputs (LayerNorm's and "
            f"the skip, a tensor of its own), the output and the dropout mask cross HBM "
            f"once: {units.format_bytes(fused.chain.total.bytes)} in "
            f"{units.format_seconds(fused.seconds)}. Time follows bytes: "
            f"{speedup:.2f}×, not 4×.")


def tiny_tensor_explanation(unfused, fused, n_elements: int, precision: str) -> str:
    """Prediction 2's reveal: on a tiny tensor the launches, not the bytes, set the time."""
    first = unfused.kernel_times[0]
    return (f"On {units.format_value(n_elements)} {precision} elements the first kernel moves "
            f"{units.format_bytes(unfused.chain.kernels_costs[0].bytes)}: "
            f"{units.format_seconds(first.t_memory)} at full bandwidth, far less "
            f"than the {units.format_seconds(first.t_overhead)} launch overhead, so the chain is "
            f"{unfused.regime}: {len(unfused.kernel_times)} launches = "
            f"{units.format_seconds(unfused.seconds)}. Fused, one launch: "
            f"{units.format_seconds(fused.seconds)}, {unfused.seconds / fused.seconds:.1f}× "
            "faster, by cutting launches, not bytes.")


def chain_cards(timing, unfused, speedup: float, device) -> list:
    """The explorer's cards: the chain's traffic, intensity, time, speedup and regime under the
    chosen grouping, each beside the unfused chain's."""
    total, unfused_total = timing.chain.total, unfused.chain.total
    ceiling = timing.chain.kernels_costs[0].compute  # elementwise: the vector ceiling
    return [
        ("HBM traffic", units.format_bytes(total.bytes),
         f"unfused: {units.format_bytes(unfused_total.bytes)}"),
        ("Arithmetic intensity", f"{units.format_value(total.ai)} FLOP/B",
         f"ridge ({roofline.ceiling_label(ceiling)}) = "
         f"{units.format_value(roofline.ridge_point(device, ceiling))} FLOP/B"),
        ("Time (lower bound)", units.format_seconds(timing.seconds),
         f"{timing.chain.kernels} kernel(s); unfused "
         f"{units.format_seconds(unfused.seconds)}"),
        ("Speedup vs unfused", f"{speedup:.2f}×", "same chain, same size"),
        style.Metric("Regime", timing.regime, "where most of the time goes", timing.regime),
    ]


def vector_ceiling_note(device) -> str:
    """The note under the chain's roofline: elementwise kernels meet the vector ceiling, not
    the tensor-core roof (and what stands in where the registry has no vector rate)."""
    return (
        "**Two compute ceilings, not one.** Elementwise kernels run on the general-purpose "
        "vector units (CUDA cores; `exp` on the special-function units), so their roof is the "
        f"vector ceiling "
        f"({units.format_value(roofline.peak_tflops(device, roofline.VECTOR), significant=4)} "
        f"TFLOP/s here), "
        "far below the tensor-core roof that matrix multiplies reach. A real chip has several "
        "ceilings (per precision, per unit); which one applies depends on the operation. That "
        "is a lesson in itself: a roofline with one roof can hide the one that binds. The "
        "vector ceiling is the fp32 FMA rate; packed 16-bit arithmetic (two fp16 operations "
        "per instruction) reaches about twice it, which changes no verdict here: at about 1 "
        "FLOP/B these kernels sit far left of either ridge."
        + ("" if device.vector_tflops is not None else
           f" (The registry has no vector rate for the {device.name}: its matrix peak stands "
           "in, so times here are optimistic lower bounds.)"))


# --- Part 2 · the overhead regime -----------------------------------------------------------


def overhead_cards(unfused, fused, speedup: float, crossover: float, kernels: int) -> list:
    """The chain on 1,000 elements, unfused and fused, and the fused kernel's crossover."""
    return [
        ("1,000 elements, unfused", units.format_seconds(unfused.seconds),
         f"{kernels} launches"),
        ("1,000 elements, fused", units.format_seconds(fused.seconds), "1 launch"),
        ("Fusion speedup at 1,000", f"{speedup:.2f}×",
         f"{kernels} launches → 1 when overhead-bound"),
        style.Metric("Regime at 1,000 (unfused)", unfused.regime, "", unfused.regime),
        ("Crossover, fused kernel", f"{units.format_value(crossover)} elements",
         "below it, launches set the time"),
    ]


# --- Part 3 · attention: unfused vs fused ---------------------------------------------------


def oom_explanation(seq_len: int, terms: dict, device, math_path_seq_len: int) -> str:
    """Prediction 3's reveal: the score matrix's share of memory at the longest S, and the
    shorter S of a path that holds two S×S buffers."""
    scores = next(v for k, v in terms.items() if k.startswith("score"))
    total = sum(terms.values())
    return (f"The score matrix holds B×H×S² fp16 values: at S = {units.format_value(seq_len)} "
            f"that is "
            f"{units.format_bytes(scores)}, plus {units.format_bytes(total - scores)} "
            f"for Q, K, V, O: {units.format_bytes(total)} of the {device.name}'s "
            f"{device.memory_text}. It grows with S², so twice the context needs four "
            "times the memory; flash attention never stores it. This is the bound: "
            "PyTorch's unfused math path holds the scores and the probabilities at once "
            f"(two S×S buffers), which by the same count runs out near S = "
            f"{units.format_value(math_path_seq_len)}, a factor √2 shorter.")


def attention_cards(unfused, fused, times: dict) -> list:
    """Unfused against fused attention: traffic (the score matrix's share), AI and time."""
    scores = unfused.detail["scores (S write, S read, P write, P read)"]
    return [
        ("HBM traffic, unfused", units.format_bytes(unfused.bytes),
         f"of which score matrix: {units.format_bytes(scores)} (4 passes)"),
        ("HBM traffic, fused", units.format_bytes(fused.bytes), "Q, K, V, O once"),
        ("AI unfused → fused", f"{units.format_value(unfused.ai)} → "
                               f"{units.format_value(fused.ai)} FLOP/B",
         f"FLOPs the same: {units.format_flops(fused.flops)}"),
        ("Time bound unfused → fused",
         f"{units.format_seconds(times['unfused'])} → {units.format_seconds(times['fused'])}",
         "max(compute, memory), no launch overhead"),
    ]


# --- Part 4 · the limit: what fits on chip --------------------------------------------------


def largest_tile_explanation(tile: int, head_dim: int, fit, bigger) -> str:
    """Prediction 4's reveal: the largest square tile fits both pools, twice it does not."""
    return (f"A {tile}×{tile} tile at head_dim {head_dim}: the fp16 Q, K, V tiles "
            f"need {units.format_bytes(fit.smem_bytes, binary=True)} of the "
            f"{units.format_bytes(fit.smem_capacity_bytes, binary=True)} of shared memory a block "
            f"may "
            f"use, the fp32 S and O accumulators "
            f"{units.format_bytes(fit.register_bytes, binary=True)} of "
            f"the {units.format_bytes(fit.register_capacity_bytes, binary=True)} register file: "
            f"both fit. "
            f"{2 * tile}×{2 * tile} would need "
            f"{units.format_bytes(bigger.smem_bytes, binary=True)} and "
            f"{units.format_bytes(bigger.register_bytes, binary=True)} "
            f"({' and '.join(bigger.overflows)} too "
            "small): the S tile grows with the square of the block.")


def flash_tile_cards(point, device) -> list:
    """The tiled kernel's traffic and intensity on L2, HBM and chip, and what bounds it."""
    hbm_note = ("every re-read counted here: the registry has no L2 size for this device"
                if device.l2_bytes is None else "what L2 misses: Q, K, V and O about once")
    return [
        ("L2 traffic", units.format_bytes(point.l2_bytes), "K and V re-read once per query tile"),
        ("AI on L2", f"{units.format_value(point.ai_l2)} FLOP/B", "grows with Bq"),
        ("HBM traffic", units.format_bytes(point.hbm_bytes), hbm_note),
        ("AI on HBM", f"{units.format_value(point.ai_hbm)} FLOP/B", "grows with S"),
        ("AI on chip", f"{units.format_value(point.ai_onchip)} FLOP/B", "shared-memory reads"),
        ("Attainable", f"{units.format_value(point.attainable_tflops)} TFLOP/s",
         f"bound by the {point.limit} roof" if point.determined else
         "an upper bound: L2 has no bandwidth figure"),
    ]


def tile_fit_text(device, head_dim: int, tile: int) -> str:
    """The math peek's worked tile check (markdown with LaTeX): the ``tile``-square tile's two
    pools on ``device`` at fp16, both fitting, and which pool twice the tile overflows."""
    fit, bigger = (fusion.flash_tile(b, b, head_dim, device) for b in (tile, 2 * tile))

    def binary_size(value):
        return units.format_bytes(value, binary=True)

    pools = " and ".join(
        f"{binary_size(v)} of {pool} ({'too much' if pool in bigger.overflows else 'fits'})"
        for pool, v in (("shared memory", bigger.smem_bytes), ("registers", bigger.register_bytes)))
    return (f"{device.name}, $d = {head_dim}$, fp16 ({binary_size(fit.smem_capacity_bytes)} of "
            f"shared memory per block, a {binary_size(fit.register_capacity_bytes)} register "
            rf"file): ${tile}\times{tile}$ needs {binary_size(fit.smem_bytes)} and "
            rf"{binary_size(fit.register_bytes)}: both fit. ${2 * tile}\times{2 * tile}$ needs "
            f"{pools}, so it does not fit.")
