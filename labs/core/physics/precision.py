"""Number formats: bits per element (block-scale overhead included) and which peak applies.

Storage format (how many bytes move) and compute precision (which hardware peak runs the
math) are separate choices: weight-only int4 with fp16 compute moves ~4.1 bits per weight but
runs at the fp16 peak. Sources of the bit counts (each format names its own): the OCP
Microscaling Formats (MX) Specification v1.0 (Open Compute Project, 2023), NVIDIA's NVFP4
description ("Introducing NVFP4 for Efficient and Accurate Low-Precision Inference", NVIDIA
technical blog, 2025), QLoRA (Dettmers et al., arXiv:2305.14314, 2023) and GPTQ/AWQ group
quantization (Frantar et al. 2022; Lin et al. 2023).

Which precision a matmul *computes* in follows from its operands (:func:`matmul_compute`):
a tensor-core instruction takes both operands in one type, so the narrower operand is
converted to the wider one. W8A8 int8 math needs int8 activations; weight-only formats
(int4-g128, NF4, or fp8/int8 weights with bf16 activations) are dequantised to the
activation precision, and the math runs there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from labs.core.physics import hardware
from labs.core.physics.validate import (close_matches, mapping, non_negative, one_of, positive,
                                         shown, text)

__all__ = [
    "ALIASES", "CIRCUIT_WEIGHTS", "COMPUTE_BITS", "FORMATS", "Format", "LAB_FORMATS", "bits",
    "bytes_per_element", "compute_precision", "explain_compute", "get", "i_bit", "matmul_compute"
]


@dataclass(frozen=True)
class Format:
    key: str
    label: str
    bits: float  # bits per element, scale overhead included
    native_compute: str | None  # compute precision whose peak applies; None = storage only
    block: int | None  # elements sharing one scale, None if per-tensor / none
    source: str
    note: str = ""

    @property
    def bytes_per_element(self) -> float:
        return self.bits / 8


_MX = "OCP Microscaling (MX) spec v1.0: blocks of 32 share one E8M0 (8-bit) scale"
_PLAIN = "IEEE/vendor format definition"

FORMATS: dict[str, Format] = {f.key: f for f in [
    Format("fp32", "FP32", 32, "fp32", None, _PLAIN),
    Format("tf32", "TF32", 32, "tf32", None, "NVIDIA Ampere architecture whitepaper",
           "TF32 is a tensor-core compute mode; tensors are stored as 32-bit FP32."),
    Format("fp16", "FP16", 16, "fp16", None, _PLAIN),
    Format("bf16", "BF16", 16, "bf16", None, _PLAIN),
    Format("fp8", "FP8 (E4M3/E5M2)", 8, "fp8", None, "OCP FP8 spec; per-tensor scale"),
    Format("int8", "INT8", 8, "int8", None, "per-tensor scale"),
    Format("fp4", "FP4 (E2M1), unscaled", 4, "fp4", None, "OCP MX spec element type",
           "Raw E2M1 without block scales; real kernels use mxfp4 or nvfp4."),
    Format("mxfp8", "MXFP8", 8.25, "fp8", 32, _MX, "8 + 8/32 bits."),
    Format("mxfp6", "MXFP6", 6.25, "fp8", 32, _MX,
           "6 + 8/32 bits; assumed to run at the fp8 rate."),
    Format("mxfp4", "MXFP4 (E2M1)", 4.25, "fp4", 32, _MX, "4 + 8/32 bits."),
    Format("nvfp4", "NVFP4 (E2M1)", 4.5, "fp4", 16,
           "NVIDIA NVFP4: blocks of 16 with an FP8 E4M3 scale plus one FP32 per-tensor scale",
           "4 + 8/16 bits; the per-tensor FP32 scale is negligible."),
    Format("nf4", "NF4 (QLoRA)", 4.5, None, 64, "QLoRA (Dettmers et al. 2023)",
           "4 + 32/64 bits (FP32 absmax per 64). Storage only: dequantised to bf16 to compute."),
    Format("nf4-dq", "NF4 + double quant", 4.127, None, 64, "QLoRA double quantization",
           "4 + 8/64 + 32/(64*256) bits. Storage only."),
    Format("int4-g128", "INT4, group 128, FP16 scale", 4.125, None, 128,
           "GPTQ/AWQ-style group quantization", "4 + 16/128 bits. Storage only (weight-only)."),
    Format("int4-g128-zp", "INT4, group 128, FP16 scale + zero", 4.25, None, 128,
           "GPTQ/AWQ-style group quantization", "4 + 32/128 bits. Storage only."),
    Format("int4-g32", "INT4, group 32, FP16 scale", 4.5, None, 32,
           "GPTQ/AWQ-style group quantization", "4 + 16/32 bits. Storage only."),
]}

#: Short alias: "int4" means the common group-128 FP16-scale format.
ALIASES = {"int4": "int4-g128", "e4m3": "fp8", "e5m2": "fp8", "e2m1": "fp4",
           "float32": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16"}


def get(key: str | Format, *, arg: str = "key") -> Format:
    """Look a format up by key (case-insensitive, aliases allowed). ValueError for something
    that is not a name, KeyError listing close matches for an unknown one; ``arg`` names the
    caller's argument in messages."""
    return _checked(key, text("arg", arg))


def bits(key: str) -> float:
    return _checked(key, "key").bits


def bytes_per_element(key: str, *, arg: str = "key") -> float:
    return _checked(key, text("arg", arg)).bytes_per_element


def compute_precision(storage: str, compute: str | None = None, *, arg: str = "storage",
                      compute_arg: str = "compute") -> str:
    """The compute precision whose peak applies to data stored as ``storage``: its own, or
    ``compute`` when given. Storage-only formats need ``compute``. ``arg``/``compute_arg``
    name the caller's arguments in messages."""
    arg, compute_arg = text("arg", arg), text("compute_arg", compute_arg)
    fmt = _checked(storage, arg)
    if compute is not None:
        c = _checked(compute, compute_arg)
        if c.native_compute is None:
            raise ValueError(f"{compute_arg}={compute!r} is a storage-only format with no "
                             "compute rate; choose a compute precision such as 'bf16'")
        return c.native_compute
    if fmt.native_compute is None:
        raise ValueError(
            f"{arg}={storage!r} ({fmt.label}) is a storage format with no compute rate of its "
            f"own: pass {compute_arg}= (e.g. {compute_arg}='fp16' for weight-only quantization "
            "that dequantises to FP16).")
    return fmt.native_compute


#: Width in bits of each compute precision's operands (TF32 is a mode on 32-bit storage).
COMPUTE_BITS = {"fp32": 32, "tf32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "fp4": 4}


def matmul_compute(weights: str, activations: str, *, weight_arg: str = "weights",
                   activation_arg: str = "activations") -> str:
    """The precision a matmul of ``weights`` x ``activations`` runs at (whose peak applies).

    A tensor-core instruction takes both operands in one type, so one is converted first and
    the matmul runs at the rate of its widest operand:
    - weights narrower than the activations, or storage-only (int4 group-scaled, NF4), or of
      another type of the same width (int8 weights, fp8 activations): the weights are
      dequantised to the activations' precision (weight-only quantization);
    - activations narrower than the weights: they are converted up to the weights' precision.
    So int8 math needs int8 activations (W8A8). Activations must be stored in a format the
    hardware computes in (ValueError naming ``activation_arg`` otherwise).
    """
    weight_arg, activation_arg = text("weight_arg", weight_arg), text("activation_arg",
                                                                       activation_arg)
    wf = _checked(weights, weight_arg)
    af = _checked(activations, activation_arg)
    if af.native_compute is None:
        raise ValueError(
            f"{activation_arg}={activations!r} is a weight-only storage format "
            f"({af.label}): activations must be stored in a format the hardware multiplies "
            f"in, e.g. 'bf16', 'fp8' or 'int8'. Store the weights as {af.key!r} "
            f"({weight_arg}={af.key!r}) and keep the activations in bf16.")
    ca = af.native_compute
    cw = wf.native_compute
    if cw is None or cw == ca:
        return ca
    if {cw, ca} == {"fp32", "tf32"}:
        return "tf32"  # TF32 is a mode on fp32 storage: either side asking for it gets it
    return cw if COMPUTE_BITS[cw] > COMPUTE_BITS[ca] else ca


def explain_compute(weights: str, activations: str, compute: str, *,
                    weight_arg: str = "weights", activation_arg: str = "activations",
                    compute_arg: str = "compute") -> str:
    """Check that ``compute`` is what ``weights`` x ``activations`` run at; return it, or raise
    ValueError saying what the operands give and which activations the wanted math needs."""
    derived = matmul_compute(weights, activations, weight_arg=weight_arg,
                             activation_arg=activation_arg)
    compute_arg = text("compute_arg", compute_arg)
    want = compute_precision(_checked(compute, compute_arg).key, None, arg=compute_arg)
    if want == derived:
        return derived
    a = get(activations)
    need = next((k for k in ("int8", "fp8", "fp4", "fp16", "bf16", "fp32", "tf32")
                 if FORMATS[k].native_compute == want), want)
    raise ValueError(
        f"{compute_arg}={compute!r} does not follow from the operands: "
        f"{weight_arg}={weights!r} with {activation_arg}={activations!r} ({a.label}) runs at "
        f"{derived}, because a matmul runs at its widest operand and weight-only formats are "
        f"dequantised to the activations. {want} math needs {want} activations as well: set "
        f"{activation_arg}={need!r} (e.g. W8A8), or leave {compute_arg} out and the math runs "
        f"at {derived}.")


def _checked(key, arg: str) -> Format:
    """A format by key, with errors that name the caller's argument ``arg``."""
    if isinstance(key, Format):
        return key
    if not isinstance(key, str) or not key.strip():
        raise ValueError(f"{arg} must be a format name such as 'bf16', got {shown(key)}")
    k = key.strip().lower()
    k = ALIASES.get(k, k)
    if k in FORMATS:
        return FORMATS[k]
    raise KeyError(f"unknown format {arg}={key!r}." + close_matches(k, FORMATS,
                                                                   always_list=True))


#: Formats the precision lab lists, in order of bits.
LAB_FORMATS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "mxfp8", "mxfp4", "nvfp4", "nf4",
               "nf4-dq", "int4-g128", "int4-g32")


# --- bit-level intensity --------------------------------------------------------------------

#: ROUGH, editable estimates of the circuit cost of one multiply-add in each compute precision,
#: relative to FP16 = 1. Multiplier area/energy grows ~ with the square of the significand width
#: (24 bits FP32, 11 TF32/FP16, 8 BF16, 4 FP8-E4M3, 2 FP4-E2M1; INT8 8x8). These are teaching
#: estimates, not measurements: real units share logic across precisions.
CIRCUIT_WEIGHTS: Mapping[str, float] = {
    "fp32": 24**2 / 11**2, "tf32": 1.0, "fp16": 1.0, "bf16": 8**2 / 11**2,
    "fp8": 4**2 / 11**2, "int8": 8**2 / 11**2, "fp4": 2**2 / 11**2,
}


def i_bit(flops, bytes_, compute: str, weights: Mapping[str, float] | None = None) -> float:
    """Bit-level intensity: circuit-weighted operations per *bit* moved,
    I_bit = FLOPs x w(compute) / (8 x bytes). Lower precision shrinks both numerator (cheaper
    ops) and denominator (fewer bits), so I_bit shows whether the silicon or the wires gain."""
    w = dict(CIRCUIT_WEIGHTS if weights is None else mapping("weights", weights))
    compute = one_of("compute", compute, hardware.PRECISIONS)
    if compute not in w:
        raise KeyError(f"weights has no circuit weight for compute={compute!r}; have "
                       f"{', '.join(map(str, w))}")
    positive(f"weights[{compute!r}]", w[compute])
    return non_negative("flops", flops) * w[compute] / (8 * positive("bytes_", bytes_))
