"""Weight quantisation in decode: the roofline's table per format, and what kernels measured.

A weight format cuts the bytes a decode step reads, and the speedup of the roofline bounds is
their ratio (:func:`decode_quant_table`, the measured times beside it :func:`merge_measured`).
A weight-only format (int8 or int4 weights with bf16 activations) also has every weight
unpacked, scaled and converted before its multiply, and small decode kernels miss peak
bandwidth, so measured speedups fall below that ratio (gpt-fast) or reach it only with
hand-written kernels at small batch (Marlin). Labs 2 and 3 show the byte ratio only as the
ideal and quote these figures next to it (Lab 2's design checker charges them:
``serving.check_design``); ``tests/test_precision_study.py`` holds the ideal above them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from labs.core.physics import formulas
from labs.core.physics import hardware
from labs.core.physics import precision
from labs.core.physics import roofline
from labs.core.physics.validate import instance, mapping, positive, positive_int, sequence

__all__ = ["GPT_FAST_SOURCE", "MARLIN_SOURCE", "MARLIN_NEAR_IDEAL_UP_TO_BATCH",
           "MeasuredWeightOnly", "QuantRow", "WEIGHT_ONLY_MEASURED", "decode_quant_table",
           "dequant_target", "is_weight_only", "measured_for", "measured_weight_only_text",
           "merge_measured", "percent_error"]

#: pytorch-labs/gpt-fast README, "Benchmarks" (Llama-2-7B, batch 1, torch.compile, an A100
#: 80GB power-limited to 330 W): 104.9 tokens/s with bf16 weights, 155.58 with int8
#: weight-only, 196.80 with int4 weight-only in groups of 32. Its quantize.py stores int8 with
#: one bf16 scale per output channel (8 bits a weight) and int4 with a bf16 scale and a bf16
#: zero point per group of 32 (4 + 32/32 = 5 bits a weight).
GPT_FAST_SOURCE = ("pytorch-labs/gpt-fast README, Benchmarks: Llama-2-7B, batch 1, A100 80GB "
                   "(330 W); bf16 104.9 tokens/s, int8 weight-only 155.58, int4 weight-only "
                   "(group 32) 196.80")
_GPT_FAST_TOKENS_PER_S = {"bf16": 104.9, "int8": 155.58, "int4 (group 32)": 196.80}
_GPT_FAST_BITS = {"int8": 8.0, "int4 (group 32)": 4.0 + 2 * 16 / 32}


@dataclass(frozen=True)
class MeasuredWeightOnly:
    """A published batch-1 decode speedup of weight-only quantised weights over 16-bit ones,
    next to how many times fewer bytes a weight takes: the speedup a roofline of bytes alone
    would predict, and does not get. The kernel dequantises every weight before the multiply,
    work no roofline here charges, and a small decode kernel does not reach peak bandwidth."""

    storage: str  # the format as the source names it
    bits_per_weight: float  # scales and zero points included
    speedup: float  # measured tokens/s over the 16-bit baseline
    device: str  # registry key of the device measured
    batch: int
    source: str

    @property
    def byte_ratio(self) -> float:
        """How many times fewer bytes a weight takes than in 16 bits."""
        return 16 / self.bits_per_weight

    @property
    def share_of_byte_ratio(self) -> float:
        """The measured speedup as a share of the byte ratio (1 would be the roofline's)."""
        return self.speedup / self.byte_ratio


#: Weight-only decode speedups measured on real kernels (each below its byte ratio).
WEIGHT_ONLY_MEASURED = tuple(
    MeasuredWeightOnly(s, _GPT_FAST_BITS[s], tps / _GPT_FAST_TOKENS_PER_S["bf16"],
                       "a100-sxm-80gb", 1, GPT_FAST_SOURCE)
    for s, tps in _GPT_FAST_TOKENS_PER_S.items() if s != "bf16")


def is_weight_only(weight_precision: str, activation_precision: str) -> bool:
    """Whether weights stored as ``weight_precision`` are dequantised before the multiply
    (weight-only quantisation): they are narrower than the precision the matmul runs at
    (``precision.matmul_compute``), as int8 or int4 weights with bf16 activations are; W8A8
    int8, fp8 and FP4 formats with a rate of their own are not."""
    compute = precision.matmul_compute(weight_precision, activation_precision,
                                  weight_arg="weight_precision",
                                  activation_arg="activation_precision")
    return precision.bits(precision.get(weight_precision, arg="weight_precision").key) < \
        precision.COMPUTE_BITS[compute]


def measured_for(weight_precision: str) -> MeasuredWeightOnly:
    """The published measurement of :data:`WEIGHT_ONLY_MEASURED` nearest in bits per weight to
    ``weight_precision`` (scales included): gpt-fast's int8 for 8-bit weights (int8, fp8),
    its int4 in groups of 32 (5 bits) for 4-bit ones (int4-g128, nvfp4, nf4). A design
    checker charges a weight-only decode at this share of its byte ratio
    (``serving.check_design``): only the format measured is measured; for the others the
    nearest one in bits is a stated assumption."""
    bits = precision.bits(precision.get(weight_precision, arg="weight_precision").key)
    return min(WEIGHT_ONLY_MEASURED, key=lambda m: abs(m.bits_per_weight - bits))


#: Marlin (Frantar, Castro, Chen, Hoefler, Alistarh: "MARLIN: Mixed-Precision
#: Auto-Regressive Parallel Inference on Large Language Models", PPoPP 2025, arXiv:2408.11743,
#: abstract): hand-written FP16 x INT4 kernels reach close to the 4x of 4-bit weights on
#: large layers up to batch 16-32, with gradually decreasing gains at 64-128 (beyond that the
#: GEMMs are compute-bound and fewer weight bytes buy nothing).
MARLIN_SOURCE = ("Frantar et al., MARLIN (PPoPP 2025, arXiv:2408.11743): close to 4x for "
                 "4-bit weights up to batch 16-32 on large layers, decreasing at 64-128")
MARLIN_NEAR_IDEAL_UP_TO_BATCH = 32


def measured_weight_only_text() -> str:
    """One sentence quoting :data:`WEIGHT_ONLY_MEASURED` and Marlin for a lab that shows a
    weight-only speedup: what real kernels gained, for how many times fewer bytes."""
    parts = [f"{m.speedup:.2f}× with {m.storage} weights ({m.byte_ratio:.3g}× fewer bytes)"
             for m in WEIGHT_ONLY_MEASURED]
    m = WEIGHT_ONLY_MEASURED[0]
    return (f"gpt-fast measures {' and '.join(parts)} over bf16 for a whole model at batch "
            f"{m.batch} on an {hardware.get(m.device).name}; Marlin's hand-written 4-bit kernels "
            "come close to the byte ratio on large layers up to batch "
            f"{MARLIN_NEAR_IDEAL_UP_TO_BATCH}, and gain less and less beyond")


# --- the decode table: the roofline's bounds per weight format -------------------------------

@dataclass(frozen=True)
class QuantRow:
    storage: str
    compute: str
    bytes: float
    seconds: float
    # vs the baseline (first) row: the speedup of the two roofline bounds, the ideal; it charges
    # the bytes and not the dequantisation a weight-only kernel also does (WEIGHT_ONLY_MEASURED)
    speedup: float
    byte_ratio: float  # baseline bytes / these bytes
    regime: str
    note: str


def dequant_target(hw) -> str:
    """The precision weight-only formats dequantise to on ``hw``, and the decode table's
    baseline: the fastest of fp16, bf16 and fp32 that the device has (ties in that order).
    fp16 on every registry GPU; bf16 on a TPU; on a CPU measured by Lab 3 whichever it really
    runs fast: torch's CPU fp16 matmul is emulated (0.4-2 GFLOP/s against ~100 for bf16 on a
    2-core AMD EPYC), so an fp16 baseline would time the emulation, not the memory."""
    d = hardware.get(hw, arg="hw")
    have = [p for p in ("fp16", "bf16", "fp32") if d.has(p)]
    if not have:
        raise KeyError(f"{d.name} has no fp16, bf16 or fp32 rate to dequantise weights to")
    return max(have, key=d.peak_tflops)  # the first of the fastest


def decode_quant_table(n: int, k: int, hw, storages: Sequence[str] | None = None, *,
                       batch: int = 1) -> list[QuantRow]:
    """Decode (batch-1 GEMV-like) weight quantization: predicted time per format, speedup vs the
    first row. A format with its own compute rate that the device has runs W=A in it (e.g. W8A8:
    the activation vector is quantised too, so the math runs at that rate); any other format is
    weight-only: activations are in :func:`dequant_target` (fp16 on a GPU) and the weights are
    dequantised to them. ``storages`` default: that precision (the baseline), fp8, int8, nvfp4
    and int4-g128. Memory-bound, so the speedup of the roofline bounds is about the byte
    ratio: the ideal, which measured kernels fall short of (:data:`WEIGHT_ONLY_MEASURED`)."""
    d = hardware.get(hw, arg="hw")
    n, k, batch = positive_int("n", n), positive_int("k", k), positive_int("batch", batch)
    target = dequant_target(d)
    if storages is None:
        storages = (target, "fp8", "int8", "nvfp4", "int4-g128")
    rows = []
    for s in sequence("storages", storages):
        fmt = precision.get(s, arg="storages")
        native = fmt.native_compute
        if native and d.has(native):
            act, note = fmt.key, f"W and A in {fmt.label}: {native} math"
        else:
            act = target
            note = f"weight-only: dequantised to {act} (activations {act})"
        c = formulas.gemm(batch, n, k, act, weight_precision=fmt.key)
        tb = roofline.time_bounds(c.flops, c.bytes, d, c.compute)
        rows.append((fmt.key, c.compute, c.bytes, tb.lower, tb.regime, note))
    base_bytes, base_t = rows[0][2], rows[0][3]
    return [QuantRow(s, c, b, t, base_t / t, base_bytes / b, reg, note)
            for s, c, b, t, reg, note in rows]


def percent_error(measured: float, predicted: float) -> float:
    """(measured - predicted) / predicted x 100, in %. For times: positive = slower than
    predicted; for throughputs: positive = faster."""
    return (positive("measured", measured) - positive("predicted", predicted)) / predicted * 100


def merge_measured(rows: Sequence[QuantRow], measured_s: Mapping[str, float]) -> list[dict]:
    """The decode quantization table with measured times beside the predicted ones.

    ``measured_s``: {storage: median seconds} for the formats that were timed. Each output row:
    storage, compute, predicted_s, predicted_speedup, measured_s, measured_speedup (vs the
    first row's measured time, when it was timed), error_pct = (measured - predicted) /
    predicted x 100 (None where not measured) and below_bound: the measurement is faster than
    its own roofline lower bound, which a lab must flag (the bound's peak or bandwidth
    understates this case: a measured peak from another kernel, a cache that held the
    weights), never plot as if it were the roofline's."""
    rows = [instance("rows", r, QuantRow, "a list of weight_only.QuantRow")
            for r in sequence("rows", rows, allow_empty=True)]
    measured_s = mapping("measured_s", measured_s, allow_empty=True)
    unknown = [k for k in measured_s if k not in {r.storage for r in rows}]
    if unknown:
        raise KeyError(f"measured_s has times for formats not in rows: {unknown!r}; rows "
                       f"has {', '.join(r.storage for r in rows) or 'none'}")
    base = measured_s.get(rows[0].storage) if rows else None
    out = []
    for r in rows:
        m = measured_s.get(r.storage)
        if m is not None:
            positive(f"measured_s[{r.storage!r}]", m)
        out.append({"storage": r.storage, "compute": r.compute, "predicted_s": r.seconds,
                    "predicted_speedup": r.speedup, "measured_s": m,
                    "measured_speedup": base / m if (m is not None and base is not None) else None,
                    "error_pct": percent_error(m, r.seconds) if m is not None else None,
                    "below_bound": m is not None and m < r.seconds})
    return out
