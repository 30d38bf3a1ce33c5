"""Number formats: bits per element (block-scale overhead included) and which peak applies.

Storage format (how many bytes move) and compute precision (which hardware peak runs the
math) are separate choices: weight-only int4 with fp16 compute moves ~4.1 bits per weight but
runs at the fp16 peak. Source for all bit counts: ../shared/reference/models-and-formats.md,
which follows the OCP Microscaling (MX) v1.0 spec, NVIDIA's NVFP4 description and QLoRA.
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.core.physics._validate import close_matches


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


def get(key: str | Format) -> Format:
    """Look a format up by key (case-insensitive, aliases allowed); KeyError lists matches."""
    if isinstance(key, Format):
        return key
    if not isinstance(key, str):
        raise KeyError(f"precision must be a string such as 'fp16', got {key!r}")
    k = key.strip().lower()
    k = ALIASES.get(k, k)
    if k in FORMATS:
        return FORMATS[k]
    raise KeyError(f"unknown precision/format={key!r}." + close_matches(k, FORMATS, always_list=True))


def bits(key: str) -> float:
    return get(key).bits


def bytes_per_element(key: str) -> float:
    return get(key).bytes_per_element


def compute_precision(storage: str, compute: str | None = None) -> str:
    """The compute precision whose peak applies. Storage-only formats need ``compute`` given."""
    fmt = get(storage)
    if compute is not None:
        c = get(compute)
        if c.native_compute is None:
            raise ValueError(f"compute={compute!r} is a storage-only format; choose e.g. 'fp16'")
        return c.native_compute
    if fmt.native_compute is None:
        raise ValueError(
            f"{fmt.label} is a storage format with no compute rate of its own: pass compute= "
            "(e.g. compute='fp16' for weight-only quantization that dequantises to FP16)."
        )
    return fmt.native_compute


#: Formats the precision lab lists, in order of bits.
LAB_FORMATS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "mxfp8", "mxfp4", "nvfp4", "nf4",
               "nf4-dq", "int4-g128", "int4-g32")
