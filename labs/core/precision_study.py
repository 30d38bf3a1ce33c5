"""Lab 3 physics: how AI, I_bit, the ridge and rho move when precision changes.

STATED CONVENTION for which tensors take the chosen storage format:
- formats with a native compute rate (fp32 ... fp8, int8, mxfp8, mxfp4, nvfp4): every operand
  and the output are stored in it, and the math runs at that format's peak;
- storage-only formats (nf4, int4 group-scaled): *weights only* (the B / W operand); activations
  and outputs stay in the compute precision (default fp16), which is also the peak that applies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from labs.core import formulas as F
from labs.core import hardware as _hw
from labs.core import precision as _fmt
from labs.core import roofline as R

OPS = ("gemm", "gemv", "mlp_train")


@dataclass(frozen=True)
class PrecisionRow:
    storage: str
    compute: str
    supported: bool
    reason: str  # why unsupported, or how the format is applied
    ai: float = float("nan")  # FLOP/B (nan only when unsupported)
    i_bit: float = float("nan")
    ridge: float = float("nan")
    rho: float = float("nan")
    attainable_tflops: float = float("nan")
    seconds: float = float("nan")
    bytes: float = float("nan")
    flops: float = float("nan")

    @property
    def regime(self) -> str:
        return R.MEMORY if self.rho < 1 else R.COMPUTE


def op_cost(op: str, shape: Mapping[str, int], storage: str, compute: str | None = None) -> F.Cost:
    """The Lab 3 operations under the convention above. Shapes:
    gemm {m, n, k}; gemv {n, k}; mlp_train {tokens, d_model, d_ff} (forward + backward)."""
    fmt = _fmt.get(storage)
    weight_only = fmt.native_compute is None
    act = (compute or "fp16") if weight_only else storage
    w = storage
    if op == "gemm":
        return F.gemm(shape["m"], shape["n"], shape["k"], act, weight_precision=w, compute=compute)
    if op == "gemv":
        return F.gemv(shape["n"], shape["k"], act, weight_precision=w, compute=compute)
    if op == "mlp_train":
        return F.mlp(shape["tokens"], shape["d_model"], shape["d_ff"], act, backward=True,
                     weight_precision=w, compute=compute)
    raise KeyError(f"unknown op={op!r}; known: {', '.join(OPS)}")


def study(op: str, shape: Mapping[str, int], hw, storages: Sequence[str], *,
          compute_for_weight_only: str = "fp16",
          weights: Mapping[str, float] | None = None) -> list[PrecisionRow]:
    """One row per storage format: AI, I_bit, ridge at its compute precision, rho, time bound.
    A format whose compute precision the device lacks gives an unsupported row saying so."""
    d = _hw.get(hw)
    rows = []
    for s in storages:
        fmt = _fmt.get(s)
        compute = fmt.native_compute or compute_for_weight_only
        how = (f"weights in {fmt.label}, activations and math in {compute}"
               if fmt.native_compute is None else f"all operands in {fmt.label}")
        if not d.has(compute):
            rows.append(PrecisionRow(fmt.key, compute, False,
                                     f"{d.name} has no {compute} rate in the registry"))
            continue
        c = op_cost(op, shape, fmt.key, None if fmt.native_compute else compute)
        tb = R.time_bounds(c.flops, c.bytes, d, compute)
        rows.append(PrecisionRow(
            fmt.key, compute, True, how, ai=c.ai, i_bit=R.i_bit(c.flops, c.bytes, compute, weights),
            ridge=R.ridge_point(d, compute), rho=float(R.rho(c.ai, d, compute)),
            attainable_tflops=float(R.attainable_tflops(c.ai, d, compute)), seconds=tb.lower,
            bytes=c.bytes, flops=c.flops))
    return rows


def rho_change(op: str, shape: Mapping[str, int], hw, before: str, after: str) -> float:
    """rho(after) / rho(before): > 1 means the change made the workload more compute-bound."""
    a, b = study(op, shape, hw, [before, after])
    for r in (a, b):
        if not r.supported:
            raise ValueError(r.reason)
    return b.rho / a.rho


@dataclass(frozen=True)
class QuantRow:
    storage: str
    compute: str
    bytes: float
    seconds: float
    speedup: float  # vs the baseline (first) row
    byte_ratio: float  # baseline bytes / these bytes
    regime: str
    note: str


def _dequant_target(d: _hw.Device) -> str:
    """Where weight-only formats dequantise to: fp16, else bf16 (TPUs), else fp32."""
    for p in ("fp16", "bf16", "fp32"):
        if d.has(p):
            return p
    raise KeyError(f"{d.name} has no fp16, bf16 or fp32 rate to dequantise weights to")


def decode_quant_table(n: int, k: int, hw, storages: Sequence[str] = (
        "fp16", "fp8", "int8", "nvfp4", "int4-g128"), *, batch: int = 1) -> list[QuantRow]:
    """Decode (batch-1 GEMV-like) weight quantization: predicted time per format, speedup vs the
    first row. Weights in the format, activations fp16; the math runs in the format's own
    precision when the device has it, else dequantised to fp16 (weight-only). Memory-bound, so
    speedup ~ byte ratio."""
    d = _hw.get(hw)
    rows = []
    for s in storages:
        fmt = _fmt.get(s)
        native = fmt.native_compute
        compute = native if native and d.has(native) else _dequant_target(d)
        note = "native" if compute == native else f"weight-only, dequantised to {compute}"
        c = F.gemm(batch, n, k, "fp16", weight_precision=fmt.key, compute=compute)
        tb = R.time_bounds(c.flops, c.bytes, d, compute)
        rows.append((fmt.key, compute, c.bytes, tb.lower, tb.regime, note))
    base_bytes, base_t = rows[0][2], rows[0][3]
    return [QuantRow(s, c, b, t, base_t / t, base_bytes / b, reg, note)
            for s, c, b, t, reg, note in rows]
