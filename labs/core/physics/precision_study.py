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

from labs.core.physics import formulas
from labs.core.physics import hardware
from labs.core.physics import precision
from labs.core.physics import roofline
from labs.core.physics.validate import (
    instance,
    mapping,
    one_of,
    optional,
    positive,
    positive_int,
    sequence,
    text,
)

# Weight quantisation in decode: the table per format, and what kernels measured (Labs 2 and 3
# read these as ``precision_study.*``).
from labs.core.physics.weight_only import (  # noqa: F401
    GPT_FAST_SOURCE,
    MARLIN_SOURCE,
    WEIGHT_ONLY_MEASURED,
    MeasuredWeightOnly,
    QuantRow,
    decode_quant_table,
    dequant_target,
    is_weight_only,
    measured_weight_only_text,
    merge_measured,
    percent_error,
)

__all__ = [
    "FootprintVsTraffic", "GPT_FAST_SOURCE", "MARLIN_SOURCE", "MeasuredWeightOnly",
    "NaiveBandwidth", "OPS", "PrecisionRow", "QuantRow", "RhoChangeParts", "RooflineView",
    "SHAPE_KEYS", "TF32Misreading", "TF32_MATH_BITS", "WEIGHT_ONLY_MEASURED", "decode_gemv_shapes",
    "decode_quant_table", "dequant_target", "distinct_roofs", "footprint_vs_traffic",
    "is_weight_only", "measured_weight_only_text", "merge_measured", "naive_bandwidth", "op_cost",
    "percent_error", "regime_change", "rho_change", "rho_change_parts", "roof_precisions", "roofline_view",
    "row_label", "study", "tensor_footprint", "tf32_misreading"
]

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
        return roofline.MEMORY if roofline.below_ridge(self.rho) else roofline.COMPUTE  # on the ridge: compute


#: The dimensions each operation's ``shape`` needs.
SHAPE_KEYS = {"gemm": ("m", "n", "k"), "gemv": ("n", "k"),
              "mlp_train": ("tokens", "d_model", "d_ff")}


def _op_shape(op, shape) -> tuple[str, dict]:
    """``op`` one of :data:`OPS` and its ``shape`` with every dimension a whole number >= 1
    (messages name ``op`` or ``shape[...]``)."""
    op = one_of("op", op, OPS)
    shape = mapping("shape", shape)
    missing = [k for k in SHAPE_KEYS[op] if k not in shape]
    if missing:
        raise KeyError(f"shape for op={op!r} needs {', '.join(SHAPE_KEYS[op])}; missing: "
                       f"{', '.join(missing)}")
    return op, {k: positive_int(f"shape[{k!r}]", shape[k]) for k in SHAPE_KEYS[op]}


def op_cost(op: str, shape: Mapping[str, int], storage: str, compute: str | None = None) -> formulas.Cost:
    """The Lab 3 operations under the convention above. Shapes:
    gemm {m, n, k}; gemv {n, k}; mlp_train {tokens, d_model, d_ff} (forward + backward)."""
    op, shape = _op_shape(op, shape)
    fmt = precision.get(storage, arg="storage")
    compute = optional(lambda n, v: precision.get(v, arg=n).key, "compute", compute)
    weight_only = fmt.native_compute is None
    act = (compute or "fp16") if weight_only else fmt.key
    w = fmt.key
    if op == "gemm":
        return formulas.gemm(shape["m"], shape["n"], shape["k"], act, weight_precision=w, compute=compute)
    if op == "gemv":
        return formulas.gemv(shape["n"], shape["k"], act, weight_precision=w, compute=compute)
    if op == "mlp_train":
        return formulas.mlp(shape["tokens"], shape["d_model"], shape["d_ff"], act, backward=True,
                     weight_precision=w, compute=compute)
    raise KeyError(f"unknown op={op!r}; known: {', '.join(OPS)}")


def study(op: str, shape: Mapping[str, int], hw, storages: Sequence[str], *,
          compute_for_weight_only: str = "fp16",
          weights: Mapping[str, float] | None = None) -> list[PrecisionRow]:
    """One row per storage format: AI, I_bit, ridge at its compute precision, rho, time bound.
    A format whose compute precision the device lacks gives an unsupported row saying so."""
    d = hardware.get(hw, arg="hw")
    op, shape = _op_shape(op, shape)
    compute_for_weight_only = precision.compute_precision(
        compute_for_weight_only, arg="compute_for_weight_only")
    if weights is not None:
        mapping("weights", weights)
    rows = []
    for s in sequence("storages", storages):
        fmt = precision.get(s, arg="storages")
        compute = fmt.native_compute or compute_for_weight_only
        how = (f"weights in {fmt.label}, activations and math in {compute}"
               if fmt.native_compute is None else f"all operands in {fmt.label}")
        if not d.has(compute):
            rows.append(PrecisionRow(fmt.key, compute, False,
                                     f"{d.name} has no {compute} rate in the registry"))
            continue
        c = op_cost(op, shape, fmt.key, None if fmt.native_compute else compute)
        tb = roofline.time_bounds(c.flops, c.bytes, d, compute)
        rows.append(PrecisionRow(
            fmt.key, compute, True, how, ai=c.ai, i_bit=precision.i_bit(c.flops, c.bytes, compute, weights),
            ridge=roofline.ridge_point(d, compute), rho=float(roofline.rho(c.ai, d, compute)),
            attainable_tflops=float(roofline.attainable_tflops(c.ai, d, compute)), seconds=tb.lower,
            bytes=c.bytes, flops=c.flops))
    return rows


def rho_change(op: str, shape: Mapping[str, int], hw, before: str, after: str) -> float:
    """rho(after) / rho(before): > 1 means the change made the workload more compute-bound."""
    before, after = precision.get(before, arg="before").key, precision.get(after, arg="after").key
    a, b = study(op, shape, hw, [before, after])
    for r in (a, b):
        if not r.supported:
            raise ValueError(r.reason)
    return b.rho / a.rho


# --- Lab 3 additions: how rho splits into its two factors, and the naive measurements ---------

@dataclass(frozen=True)
class RhoChangeParts:
    """rho(after)/rho(before) split into its two factors: rho = AI / ridge, so
    rho_ratio = ai_ratio / ridge_ratio. Fewer bytes raise AI; a faster peak moves the ridge."""

    before: PrecisionRow
    after: PrecisionRow
    ai_ratio: float  # AI(after) / AI(before)
    ridge_ratio: float  # ridge(after) / ridge(before) = peak(after) / peak(before)
    rho_ratio: float  # ai_ratio / ridge_ratio

    @property
    def direction(self) -> str:
        """'up' (more compute-bound), 'down' (more memory-bound) or 'unchanged'."""
        if abs(self.rho_ratio - 1) < 1e-9:
            return "unchanged"
        return "up" if self.rho_ratio > 1 else "down"


def rho_change_parts(op: str, shape: Mapping[str, int], hw, before: str, after: str, *,
                     compute_for_weight_only: str = "fp16") -> RhoChangeParts:
    """The rho change from ``before`` to ``after`` storage, with its AI and ridge factors.
    ValueError (saying why) if the device lacks either compute precision."""
    before, after = precision.get(before, arg="before").key, precision.get(after, arg="after").key
    a, b = study(op, shape, hw, [before, after], compute_for_weight_only=compute_for_weight_only)
    for r in (a, b):
        if not r.supported:
            raise ValueError(r.reason)
    return RhoChangeParts(a, b, b.ai / a.ai, b.ridge / a.ridge, b.rho / a.rho)


def _rows(rows, cls=None, arg: str = "rows") -> list:
    """A list of rows from :func:`study` (or ``cls``), ValueError naming ``arg`` otherwise."""
    cls = cls or PrecisionRow
    return [instance(arg, r, cls, f"a list of precision_study.{cls.__name__}")
            for r in sequence(arg, rows, allow_empty=True)]


def roof_precisions(rows: Sequence[PrecisionRow]) -> list[str]:
    """Distinct compute precisions of the supported rows, in first-seen order: one roof each."""
    return list(dict.fromkeys(r.compute for r in _rows(rows) if r.supported))


def tensor_footprint(op: str, shape: Mapping[str, int], storage: str,
                     compute: str | None = None) -> dict[str, float]:
    """Bytes of each distinct tensor the op touches, each counted ONCE (same storage
    convention as ``op_cost``). mlp_train (non-gated, as ``op_cost``) holds the input x, both
    weights, the saved pre-activation h and activation a, the output y, and in backward the
    gradients of y, a, h, x and of both weights (weight gradients in the activation format)."""
    op, shape = _op_shape(op, shape)
    cost = op_cost(op, shape, storage, compute)  # checks storage and compute by name
    fmt = precision.get(storage, arg="storage")
    act = (compute or "fp16") if fmt.native_compute is None else fmt.key
    a, w = precision.bytes_per_element(act), fmt.bytes_per_element
    if op in ("gemm", "gemv"):
        return dict(cost.detail)  # A, B, C once each
    if op == "mlp_train":
        t, d, f = shape["tokens"], shape["d_model"], shape["d_ff"]
        return {"x": t * d * a, "W_up": d * f * w, "h (pre-activation)": t * f * a,
                "a (activation)": t * f * a, "W_down": f * d * w, "y": t * d * a,
                "grad y": t * d * a, "grad a": t * f * a, "grad h": t * f * a,
                "grad x": t * d * a, "grad W_up": d * f * a, "grad W_down": f * d * a}
    raise KeyError(f"unknown op={op!r}; known: {', '.join(OPS)}")


@dataclass(frozen=True)
class FootprintVsTraffic:
    """What an allocator's peak shows (memory held) versus what HBM moved (traffic).

    ``footprint_bytes`` counts every distinct tensor once: the most that
    ``torch.cuda.max_memory_allocated()`` can show for them (less if some are freed early;
    allocator rounding and workspaces ignored). ``traffic_bytes`` counts every read and write
    of every kernel, over all iterations: the compulsory minimum (a tiled kernel that re-reads
    moves more)."""

    footprint_bytes: float
    traffic_bytes: float
    iterations: int
    tensors: Mapping[str, float]

    @property
    def ratio(self) -> float:
        """traffic / footprint: how many times too low 'peak memory / time' puts bandwidth."""
        return self.traffic_bytes / self.footprint_bytes


def footprint_vs_traffic(op: str, shape: Mapping[str, int], storage: str,
                         compute: str | None = None, *, iterations: int = 1
                         ) -> FootprintVsTraffic:
    """Allocator peak (distinct tensors once) vs compulsory HBM traffic of ``iterations`` runs."""
    n = positive_int("iterations", iterations)
    tensors = tensor_footprint(op, shape, storage, compute)
    traffic = op_cost(op, shape, storage, compute).bytes * n
    return FootprintVsTraffic(sum(tensors.values()), traffic, n, tensors)


#: Bits TF32 keeps in the tensor core's multiplier inputs: 1 sign + 8 exponent + 10 mantissa
#: (NVIDIA Ampere architecture whitepaper). Tensors stay stored as 32-bit FP32 in memory.
TF32_MATH_BITS = 19


@dataclass(frozen=True)
class TF32Misreading:
    """Two ways to misread TF32, against the right reading (32-bit storage, tf32 peak)."""

    ai: float  # FLOP/B with 32-bit storage (right)
    ai_if_19_bit_storage: float  # FLOP/B if TF32 were (wrongly) counted as 19-bit storage
    fp32_peak: float  # TFLOP/s, CUDA cores (dense)
    tf32_peak: float  # TFLOP/s, tensor cores (dense)
    tf32_attainable: float  # TFLOP/s the op can reach in TF32 mode

    @property
    def ai_overstatement(self) -> float:
        """ai_if_19_bit_storage / ai: how much the 19-bit misreading inflates AI."""
        return self.ai_if_19_bit_storage / self.ai

    @property
    def apparent_fp32_fraction(self) -> float:
        """tf32_attainable / fp32 peak: above 1 a 'fp32' measurement can only have run in TF32."""
        return self.tf32_attainable / self.fp32_peak


def tf32_misreading(op: str, shape: Mapping[str, int], hw) -> TF32Misreading:
    """TF32 is a compute mode: bytes are FP32's (32 bits per element), the peak is tf32's.
    KeyError (naming what the device has) if it lacks an fp32 or tf32 rate."""
    d = hardware.get(hw, arg="hw")
    op, shape = _op_shape(op, shape)
    fp32_peak, tf32_peak = d.peak_tflops("fp32"), d.peak_tflops("tf32")
    c = op_cost(op, shape, "tf32")
    bytes_19 = c.bytes * TF32_MATH_BITS / precision.bits("tf32")
    return TF32Misreading(c.ai, c.flops / bytes_19, fp32_peak, tf32_peak,
                          float(roofline.attainable_tflops(c.ai, d, "tf32")))


@dataclass(frozen=True)
class NaiveBandwidth:
    """'Peak memory / time' against 'traffic / time' for ``iterations`` runs on a device.
    The run is assumed to take its roofline lower bound (each iteration max(compute, memory)):
    the first from HBM; the later ones, when the working set fits in the L2, from the L2 at
    its published measured bandwidth (``l2_gbs``), or at HBM's where none is published (then
    ``traffic_gbs`` is a lower bound on what the cache gives)."""

    fvt: FootprintVsTraffic
    seconds: float  # all iterations
    l2_bytes: float | None = None  # the device's last-level cache, where the registry has it
    l2_gbs: float | None = None  # the L2 bandwidth the repeats were timed at (measured)
    l2_source: str = ""  # where l2_gbs comes from, or why there is none

    @property
    def fits_in_l2(self) -> bool | None:
        """Whether the whole working set (every tensor once) fits in the device's L2: then
        every iteration after the first reads it from L2, and traffic / time is not an HBM
        bandwidth either. None where the registry has no L2 size for the device."""
        return None if self.l2_bytes is None else self.fvt.footprint_bytes <= self.l2_bytes

    @property
    def naive_gbs(self) -> float:
        """allocator peak / time in GB/s: what the naive measurement reports."""
        return self.fvt.footprint_bytes / self.seconds / 1e9

    @property
    def traffic_gbs(self) -> float:
        """compulsory traffic / time in GB/s: the bandwidth the run actually used (at least)."""
        return self.fvt.traffic_bytes / self.seconds / 1e9

    @property
    def verdict(self) -> str:
        """The naive figure against the real one: 'too_low' (more than 2x low), 'too_high'
        (more than 2x high) or 'about_right'."""
        r = self.fvt.ratio  # = traffic_gbs / naive_gbs
        return "too_low" if r > 2 else "too_high" if r < 0.5 else "about_right"


def naive_bandwidth(op: str, shape: Mapping[str, int], storage: str, hw, *,
                    iterations: int = 100, compute: str | None = None) -> NaiveBandwidth:
    """What dividing the allocator's peak by the run time gives, vs the traffic it moved."""
    d = hardware.get(hw, arg="hw")
    fvt = footprint_vs_traffic(op, shape, storage, compute, iterations=iterations)
    c = op_cost(op, shape, storage, compute)
    tb = roofline.time_bounds(c.flops, c.bytes, d, c.compute)
    fits = d.l2_bytes is not None and fvt.footprint_bytes <= d.l2_bytes
    if not fits:
        return NaiveBandwidth(fvt, tb.lower * fvt.iterations, d.l2_bytes)
    from labs.core.physics.hierarchy import L2_MEASURED_GBS  # the measured L2 figures

    l2_gbs, l2_source = L2_MEASURED_GBS.get(d.key, (None, (
        f"no published L2 bandwidth for the {d.name}: the repeats are timed at its HBM "
        "bandwidth, so the traffic's bandwidth is at least what is shown")))
    if l2_gbs is None:
        return NaiveBandwidth(fvt, tb.lower * fvt.iterations, d.l2_bytes, None, l2_source)
    # the first iteration brings the working set in from HBM; the others read it from L2
    repeat = max(tb.t_compute, c.bytes / (l2_gbs * 1e9))
    return NaiveBandwidth(fvt, tb.lower + repeat * (fvt.iterations - 1), d.l2_bytes, l2_gbs,
                          l2_source)


def decode_gemv_shapes(model: str = "llama-3-8b") -> dict[str, tuple[int, int]]:
    """{label: (N, K)} of the weight matrices one decode token multiplies per layer
    (y[N] = W[N,K] x[K]): the projections of ``model`` (GQA: K and V use the KV heads)."""
    from labs.core.physics import models as _models

    m = _models.get(model, arg="model")
    q = m.heads * m.head_dim
    kv = m.kv_heads * m.head_dim
    return {f"Q projection {q}×{m.d_model}": (q, m.d_model),
            f"K or V projection {kv}×{m.d_model}": (kv, m.d_model),
            f"O projection {m.d_model}×{q}": (m.d_model, q),
            f"gate or up projection {m.d_ff}×{m.d_model}": (m.d_ff, m.d_model),
            f"down projection {m.d_model}×{m.d_ff}": (m.d_model, m.d_ff)}


def row_label(row: PrecisionRow) -> str:
    """A row's short name: the format, plus '→<math>' for weight-only (storage-only) formats."""
    instance("row", row, PrecisionRow, "a precision_study.PrecisionRow")
    return row.storage if precision.get(row.storage).native_compute else f"{row.storage}→{row.compute}"


@dataclass(frozen=True)
class RooflineView:
    """What to draw for a set of rows on one device without overlapping labels.

    ``roofs``: compute precisions to draw, one per distinct peak (first seen wins);
    ``same_roof``: {precision: drawn precision with the same peak} for the ones left out;
    ``points``: (text, ai, attainable TFLOP/s, rows). Rows closer than ``merge_within``
    (relative AI, same height) become one point. Points at the same height closer than
    ``label_gap_decades`` in AI would print their labels over each other, so the leftmost
    carries all their names, left to right, joined by " | ", and the others an empty text.
    Positions are never moved."""

    roofs: list[str]
    same_roof: dict[str, str]
    points: list[tuple[str, float, float, list[PrecisionRow]]]


def roofline_view(rows: Sequence[PrecisionRow], hw, *, merge_within: float = 0.05,
                  label_gap_decades: float = 0.3) -> RooflineView:
    import math

    rows = _rows(rows)
    merge_within = positive("merge_within", merge_within)
    label_gap_decades = positive("label_gap_decades", label_gap_decades)
    roofs, same = distinct_roofs(hw, roof_precisions(rows))
    groups: list[list[PrecisionRow]] = []
    for r in sorted((r for r in rows if r.supported), key=lambda r: r.ai):
        g = next((g for g in groups if abs(r.ai / g[0].ai - 1) <= merge_within
                  and abs(r.attainable_tflops / g[0].attainable_tflops - 1) <= 1e-9), None)
        if g is None:
            groups.append([r])
        else:
            g.append(r)
    names = [", ".join(row_label(r) for r in g) for g in groups]
    texts = list(names)
    for i, g in enumerate(groups):  # groups are in AI order: fold a label into its left twin
        for j in range(i - 1, -1, -1):
            h = groups[j]
            if (texts[j] and abs(h[0].attainable_tflops / g[0].attainable_tflops - 1) <= 1e-9
                    and math.log10(g[0].ai / h[0].ai) < label_gap_decades):
                texts[j], texts[i] = f"{texts[j]} | {names[i]}", ""
                break
    points = [(t, g[0].ai, g[0].attainable_tflops, g) for t, g in zip(texts, groups)]
    return RooflineView(roofs, same, points)


def distinct_roofs(hw, precisions: Sequence[str], *, within_factor: float = 1.0
                   ) -> tuple[list[str], dict[str, str]]:
    """Precisions whose roofs differ: one whose peak is within ``within_factor`` (>= 1, either
    way) of an earlier kept one's shares that roof (its ridge label would sit on top of it).
    Returns (kept, {left out: the kept precision it shares a roof with})."""
    d = hardware.get(hw, arg="hw")
    if positive("within_factor", within_factor) < 1:
        raise ValueError(f"within_factor must be >= 1, got {within_factor!r}")
    kept: list[str] = []
    same: dict[str, str] = {}
    for p in dict.fromkeys(d.peak_tflops(q, arg="precisions") and q.strip().lower()
                           for q in sequence("precisions", precisions, allow_empty=True)):
        twin = next((q for q in kept if max(d.peak_tflops(p) / d.peak_tflops(q),
                                            d.peak_tflops(q) / d.peak_tflops(p))
                     <= within_factor * (1 + 1e-12)), None)
        if twin is None:
            kept.append(p)
        else:
            same[p] = twin
    return kept, same


def regime_change(before: str, after: str) -> str:
    """How a kernel's regime moves with its precision, in words a card shows: "still
    compute-bound" where it stays, "compute-bound → memory-bound" where it changes."""
    regimes = (roofline.MEMORY, roofline.COMPUTE, roofline.OVERHEAD)
    before, after = one_of("before", before, regimes), one_of("after", after, regimes)
    return f"still {after}" if before == after else f"{before} → {after}"
