"""Weight-only quantisation as measured: a roofline of bytes charges no dequantisation.

A weight-only format (int8 or int4 weights with bf16 activations) cuts the bytes a decode step
reads, and the roofline's speedup is their ratio. Real kernels also unpack, scale and convert
every weight before its multiply, and small decode kernels miss peak bandwidth, so measured
speedups fall below that ratio (gpt-fast) or reach it only with hand-written kernels at small
batch (Marlin). Labs 2 and 3 show the byte ratio only as a ceiling and quote these figures
next to it; ``tests/test_precision_study.py`` holds the ceiling above them.
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.core.physics import hardware as _hw
from labs.core.physics import precision as _fmt

__all__ = ["GPT_FAST_SOURCE", "MARLIN_SOURCE", "MARLIN_NEAR_IDEAL_UP_TO_BATCH",
           "MeasuredWeightOnly", "WEIGHT_ONLY_MEASURED", "is_weight_only",
           "measured_for", "measured_weight_only_text"]

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
    compute = _fmt.matmul_compute(weight_precision, activation_precision,
                                  weight_arg="weight_precision",
                                  activation_arg="activation_precision")
    return _fmt.bits(_fmt.get(weight_precision, arg="weight_precision").key) < \
        _fmt.COMPUTE_BITS[compute]


def measured_for(weight_precision: str) -> MeasuredWeightOnly:
    """The published measurement of :data:`WEIGHT_ONLY_MEASURED` nearest in bits per weight to
    ``weight_precision`` (scales included): gpt-fast's int8 for 8-bit weights (int8, fp8),
    its int4 in groups of 32 (5 bits) for 4-bit ones (int4-g128, nvfp4, nf4). A design
    checker charges a weight-only decode at this share of its byte ratio
    (``serving.check_design``): only the format measured is measured; for the others the
    nearest one in bits is a stated assumption."""
    bits = _fmt.bits(_fmt.get(weight_precision, arg="weight_precision").key)
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
            f"{m.batch} on an {_hw.get(m.device).name}; Marlin's hand-written 4-bit kernels "
            "come close to the byte ratio on large layers up to batch "
            f"{MARLIN_NEAR_IDEAL_UP_TO_BATCH}, and gain less and less beyond")
