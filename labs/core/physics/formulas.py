"""FLOPs, compulsory HBM bytes and arithmetic intensity (AI, FLOP/byte) of common operations.

Counting conventions (Williams, Waterman & Patterson, "Roofline", CACM 2009, for traffic;
PyTorch's ``torch.utils.flop_counter`` for FLOPs):
- A multiply-add is 2 FLOPs. Matmul FLOPs are 2*M*N*K; this is what
  ``torch.utils.flop_counter.FlopCounterMode`` counts, and it counts no elementwise work, so
  matmul-bearing ops here (linear, attention, MLP) count only their matmuls too. Elementwise
  ops (norms, softmax, activations) carry their own small per-element FLOP conventions below.
- Bytes are *compulsory* traffic: every input read once and every output written once from/to
  main memory (HBM/DRAM) by each kernel. Real kernels move at least this much.
- ``precision`` is the *storage* format of the activations (bytes moved); weights and the KV
  cache may be stored differently (``weight_precision``, ``kv_precision``). The *compute*
  precision (which peak applies) follows from the operands: a matmul runs at its widest
  operand (``precision.matmul_compute``); ``compute=`` may be given only to state it, and is
  refused when the operands do not give it. Elementwise ops run on the non-tensor vector
  units: their Cost's ``compute`` is ``VECTOR`` (the device's vector ceiling).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from labs.core.physics import precision as _precision
from labs.core.physics.validate import (
    at_most,
    close_matches,
    finite_results,
    flag,
    instance,
    optional,
    positive_int,
    sequence,
    shown,
    text,
)
from labs.core.physics.hardware import VECTOR

__all__ = [
    "ChainCost", "Cost", "ELEMENTWISE", "Elementwise", "attention", "causal_pairs", "chain_groups",
    "contiguous_groups", "elementwise", "elementwise_chain", "elementwise_op", "gemm", "gemv",
    "layernorm", "linear", "mlp", "rmsnorm", "score_elements", "softmax", "total"
]


@dataclass(frozen=True)
class Cost:
    """FLOPs and compulsory bytes of one operation (or a sum of them)."""

    name: str
    flops: float
    bytes: float
    compute: str  # compute precision whose peak applies ("mixed" for sums across precisions)
    kernels: int = 1
    detail: Mapping[str, float] = field(default_factory=dict)  # named byte terms

    @property
    def ai(self) -> float:
        """Arithmetic intensity in FLOP per byte."""
        return self.flops / self.bytes

    def __add__(self, other: "Cost") -> "Cost":
        compute = self.compute if self.compute == other.compute else "mixed"
        return Cost(f"{self.name} + {other.name}", self.flops + other.flops,
                    self.bytes + other.bytes, compute, self.kernels + other.kernels)

    def renamed(self, name: str) -> "Cost":
        return Cost(text("name", name), self.flops, self.bytes, self.compute, self.kernels,
                    self.detail)

    @finite_results
    def scaled(self, times: int, name: str | None = None) -> "Cost":
        """The same op repeated ``times`` (a whole number >= 1: per layer x layers)."""
        times = positive_int("times", times)
        name = self.name if name is None else text("name", name)
        return Cost(name, self.flops * times, self.bytes * times, self.compute,
                    self.kernels * times, {k: v * times for k, v in self.detail.items()})


@finite_results
def total(costs: Sequence[Cost], name: str = "total") -> Cost:
    """The sum of several Costs ("mixed" compute when they differ)."""
    costs = [instance("costs[]", c, Cost, "a formulas.Cost") for c in sequence("costs", costs)]
    name = text("name", name)
    computes = {c.compute for c in costs}
    return Cost(name, sum(c.flops for c in costs), sum(c.bytes for c in costs),
                computes.pop() if len(computes) == 1 else "mixed", sum(c.kernels for c in costs))


def _b(fmt: str, arg: str = "precision") -> float:
    return _precision.bytes_per_element(fmt, arg=arg)


def _fmt_or(value, arg: str, default: str) -> str:
    """An optional format argument: None means ``default``; anything else must name a format
    (an empty string is refused, never taken as the default)."""
    return default if value is None else _precision.get(value, arg=arg).key


def _compute(act: str, compute: str | None, weights: str, *, weight_arg: str = "weight_precision",
             activation_arg: str = "precision") -> str:
    """The precision a matmul of ``weights`` x ``act`` runs at; an explicit ``compute`` must
    agree (ValueError naming the way out otherwise)."""
    if compute is None:
        return _precision.matmul_compute(weights, act, weight_arg=weight_arg,
                                   activation_arg=activation_arg)
    return _precision.explain_compute(weights, act, compute, weight_arg=weight_arg,
                                activation_arg=activation_arg)


# --- matrix products ------------------------------------------------------------------------

@finite_results
def gemm(m, n, k, precision: str = "fp16", *, weight_precision: str | None = None,
         out_precision: str | None = None, compute: str | None = None,
         name: str = "GEMM") -> Cost:
    """C[M,N] = A[M,K] @ B[K,N]. FLOPs 2MNK; bytes MK*a + KN*w + MN*out."""
    m, n, k = positive_int("m", m), positive_int("n", n), positive_int("k", k)
    a = _precision.get(precision, arg="precision").key
    w = _fmt_or(weight_precision, "weight_precision", a)
    o = _fmt_or(out_precision, "out_precision", a)
    c = _compute(a, compute, w)
    detail = {"A": m * k * _b(a), "B": k * n * _b(w), "C": m * n * _b(o)}
    return Cost(text("name", name), 2.0 * m * n * k, sum(detail.values()), c, 1, detail)


@finite_results
def gemv(n, k, precision: str = "fp16", *, weight_precision: str | None = None,
         compute: str | None = None, name: str = "GEMV") -> Cost:
    """y[N] = W[N,K] @ x[K]. FLOPs 2NK; bytes K*a + NK*w + N*a. AI ~ 1 FLOP/B at fp16."""
    n, k = positive_int("n", n), positive_int("k", k)
    a = _precision.get(precision, arg="precision").key
    w = _fmt_or(weight_precision, "weight_precision", a)
    c = _compute(a, compute, w)
    detail = {"x": k * _b(a), "W": n * k * _b(w), "y": n * _b(a)}
    return Cost(text("name", name), 2.0 * n * k, sum(detail.values()), c, 1, detail)


@finite_results
def linear(tokens, in_features, out_features, precision: str = "fp16", *, bias: bool = False,
           weight_precision: str | None = None, compute: str | None = None,
           name: str = "linear") -> Cost:
    """y = x W^T (+ b) over ``tokens`` rows. Matmul FLOPs only (bias add not counted, as in
    FlopCounterMode); the bias vector's bytes are counted."""
    tokens = positive_int("tokens", tokens)
    in_features = positive_int("in_features", in_features)
    out_features = positive_int("out_features", out_features)
    g = gemm(tokens, out_features, in_features, precision, weight_precision=weight_precision,
             compute=compute, name=name)
    if not flag("bias", bias):
        return g
    detail = dict(g.detail, bias=out_features * _b(_fmt_or(weight_precision, "weight_precision",
                                                          precision)))
    return Cost(name, g.flops, sum(detail.values()), g.compute, 1, detail)


# --- attention ------------------------------------------------------------------------------

@finite_results
def attention(batch, heads, seq_q, seq_kv, head_dim, precision: str = "fp16", fused: bool = False,
              *, kv_heads: int | None = None, kv_precision: str | None = None,
              compute: str | None = None, causal: bool = False, repeat_kv: bool = False,
              name: str | None = None) -> Cost:
    """softmax(Q K^T) V for ``heads`` query heads, batched; ``causal`` masks future keys.

    ``fused`` says which kernel runs, and with a causal mask it decides the work:

    * unfused ("math": QK^T -> mask + softmax -> PV, three kernels; ``fused=False``, the
      default): QK^T computes EVERY one of the Sq*Skv scores and the mask is applied to
      them afterwards, so ``causal`` changes neither the FLOPs nor the score traffic. This is
      what ``FlopCounterMode`` counts for the math path (two full matmuls).
    * fused (flash; ``fused=True``): a causal-aware kernel skips the key blocks that are
      entirely masked, so only the unmasked pairs are computed (:func:`causal_pairs`:
      S(S+1)/2 for Sq = Skv = S, about half): a lower bound on what FlashAttention and
      torch's CPU flash kernel do (they compute whole blocks on the diagonal). FlopCounterMode
      does NOT apply the mask here either: for ``scaled_dot_product_attention(...,
      is_causal=True)`` its ``sdpa_flop`` counts the full 4*B*H*Sq*Skv*dh ("we aren't
      accounting for causal attention here"), this function's ``causal=False`` count; the
      causal fused count is it times ``causal_pairs(Sq, Skv) / (Sq * Skv)``.

    FLOPs: QK^T 2*d and PV 2*d per (query, key) pair computed, per head (softmax's
    ~5 FLOP/score not counted, matching FlopCounterMode; <1% at dh >= 128).
    Bytes: Q and O (B*H*Sq*dh each) and K, V (B*Hkv*Skv*dh each, GQA: KV heads, not query heads).
    Unfused also writes the score matrix S, the softmax reads S and writes P, and PV reads P:
    4 passes over all B*H*Sq*Skv scores (the mask, fused into the softmax at best, adds no
    compulsory pass). Fused keeps scores on chip: no score traffic, one kernel.
    ``repeat_kv`` (unfused only; Llama's reference ``repeat_kv`` and Lab 7's tiny decoder):
    before QK^T the math path copies K and V from the ``kv_heads`` to all ``heads`` query heads
    (expand + reshape materialises them), two more kernels that read the cache once (counted in
    K and V above) and WRITE 2*B*H*Skv*dh elements, which QK^T and PV then READ again instead of
    the cache: 4*B*H*Skv*dh elements more in all (nothing when kv_heads == heads).
    Compute: QK^T and PV multiply activations (Q, P) by the KV cache, so the math runs at
    ``precision.matmul_compute(kv_precision, precision)``.
    """
    batch, heads = positive_int("batch", batch), positive_int("heads", heads)
    seq_q, seq_kv = positive_int("seq_q", seq_q), positive_int("seq_kv", seq_kv)
    head_dim = positive_int("head_dim", head_dim)
    kvh = heads if kv_heads is None else positive_int("kv_heads", kv_heads)
    if heads % kvh:
        raise ValueError(f"heads={heads} must be a multiple of kv_heads={kvh} (GQA groups)")
    fused, causal = flag("fused", fused), flag("causal", causal)
    repeat_kv = flag("repeat_kv", repeat_kv)
    if repeat_kv and fused:
        raise ValueError("repeat_kv=True describes the unfused math path; a fused kernel reads "
                         "the KV heads directly (use fused=False)")
    name = optional(text, "name", name)
    precision = _precision.get(precision, arg="precision").key
    kvp = _fmt_or(kv_precision, "kv_precision", precision)
    c = _compute(precision, compute, kvp, weight_arg="kv_precision")
    a = _b(precision)
    detail = {
        "Q": batch * heads * seq_q * head_dim * a,
        "K": batch * kvh * seq_kv * head_dim * _b(kvp, "kv_precision"),
        "V": batch * kvh * seq_kv * head_dim * _b(kvp, "kv_precision"),
        "O": batch * heads * seq_q * head_dim * a,
    }
    # only a fused (causal-aware) kernel skips masked pairs; the math path computes them all
    pairs = causal_pairs(seq_q, seq_kv) if (causal and fused) else seq_q * seq_kv
    if causal and not fused:
        causal_pairs(seq_q, seq_kv)  # the same check of seq_q <= seq_kv either way
    if not fused:
        detail["scores (S write, S read, P write, P read)"] = 4.0 * batch * heads * pairs * a
    copies = repeat_kv and kvh < heads
    if copies:
        detail["K, V repeated to the query heads (write + read)"] = (
            4.0 * batch * heads * seq_kv * head_dim * _b(kvp, "kv_precision"))
    flops = 4.0 * batch * heads * pairs * head_dim
    label = name or ("attention (fused)" if fused else "attention (unfused)")
    return Cost(label, flops, sum(detail.values()), c,
                1 if fused else 3 + (2 if copies else 0), detail)


def causal_pairs(seq_q, seq_kv) -> int:
    """(query, key) pairs a causal mask keeps, queries aligned to the END of the keys (query
    i of Sq sees keys j <= i + Skv - Sq, as in prefill after Skv - Sq cached tokens):
    Sq (Skv - Sq) + Sq (Sq + 1) / 2. Sq = Skv = S gives S(S+1)/2; one query sees all Skv."""
    sq, skv = positive_int("seq_q", seq_q), positive_int("seq_kv", seq_kv)
    if sq > skv:
        raise ValueError(f"seq_q={sq} must be <= seq_kv={skv} for causal attention (queries "
                         "are the last seq_q of the keys)")
    return sq * (skv - sq) + sq * (sq + 1) // 2


def score_elements(batch, heads, seq_q, seq_kv) -> int:
    """Elements of the B x H x Sq x Skv score matrix an unfused attention materialises."""
    return (positive_int("batch", batch) * positive_int("heads", heads)
            * positive_int("seq_q", seq_q) * positive_int("seq_kv", seq_kv))


# --- elementwise and row-wise ops -----------------------------------------------------------

@dataclass(frozen=True)
class Elementwise:
    """Per-element cost of an elementwise/row-wise op, for chains and fusion.

    extra_inputs: additional full-size tensors read (a residual add reads a second one).
    extra_output_bytes: bytes per element written besides the output (dropout's bool mask).
    """

    key: str
    label: str
    flops_per_element: float
    extra_inputs: int = 0
    extra_output_bytes: float = 0.0
    why: str = ""


ELEMENTWISE: dict[str, Elementwise] = {e.key: e for e in [
    Elementwise("layernorm", "LayerNorm", 8,
                why="mean 1 + variance 3 + normalise 2 + scale/shift 2 FLOPs per element"),
    Elementwise("rmsnorm", "RMSNorm", 4, why="square 1 + sum 1 + scale 1 + weight 1"),
    Elementwise("gelu", "GELU (tanh approx.)", 8, why="~8 FLOPs incl. tanh, a convention"),
    Elementwise("silu_mul", "SiLU(gate) * up", 5, extra_inputs=1,
                why="sigmoid ~3, two multiplies; reads gate and up"),
    Elementwise("dropout", "Dropout (training)", 2, extra_output_bytes=1.0,
                why="compare + scale; writes a 1-byte keep-mask for backward"),
    Elementwise("residual_add", "Residual add", 1, extra_inputs=1, why="one add; reads x and skip"),
    Elementwise("softmax", "Softmax", 5, why="max, subtract, exp, sum, divide"),
    Elementwise("scale", "Scale", 1),
    Elementwise("relu", "ReLU", 1),
]}


def elementwise_op(op: str, arg: str = "op") -> Elementwise:
    """The :data:`ELEMENTWISE` op named ``op`` (any case); an unknown name is a KeyError that
    lists the known ones. Messages name ``arg``."""
    k = text(text("arg", arg), op).lower()
    if k not in ELEMENTWISE:
        raise KeyError(f"unknown elementwise op {arg}={op!r}." + close_matches(
            k, ELEMENTWISE, always_list=True))
    return ELEMENTWISE[k]


@finite_results
def elementwise(op: str, n_elements, precision: str = "fp16") -> Cost:
    """One elementwise op as its own kernel: read inputs, write output (+ mask)."""
    elementwise_op(op)  # named "op" in any message
    return elementwise_chain(n_elements, [op], precision=precision).kernels_costs[0]


@finite_results
def layernorm(tokens, d_model, precision: str = "fp16") -> Cost:
    """LayerNorm over ``tokens`` rows of ``d_model``: 8 FLOP/element; reads x, writes y,
    reads gamma and beta (2*d_model)."""
    tokens, d_model = positive_int("tokens", tokens), positive_int("d_model", d_model)
    base = elementwise("layernorm", tokens * d_model, precision)
    detail = dict(base.detail, **{"gamma, beta": 2 * d_model * _b(precision)})
    return Cost("LayerNorm", base.flops, sum(detail.values()), base.compute, 1, detail)


@finite_results
def rmsnorm(tokens, d_model, precision: str = "fp16") -> Cost:
    tokens, d_model = positive_int("tokens", tokens), positive_int("d_model", d_model)
    base = elementwise("rmsnorm", tokens * d_model, precision)
    detail = dict(base.detail, weight=d_model * _b(precision))
    return Cost("RMSNorm", base.flops, sum(detail.values()), base.compute, 1, detail)


@finite_results
def softmax(rows, cols, precision: str = "fp16") -> Cost:
    rows, cols = positive_int("rows", rows), positive_int("cols", cols)
    return elementwise("softmax", rows * cols, precision).renamed("softmax")


@dataclass(frozen=True)
class ChainCost:
    """An elementwise chain under one fusion grouping: one Cost per kernel plus the total."""

    ops: tuple[str, ...]
    groups: tuple[tuple[int, ...], ...]
    kernels_costs: tuple[Cost, ...]

    @property
    def total(self) -> Cost:
        return total(list(self.kernels_costs), name=f"chain in {len(self.groups)} kernel(s)")

    @property
    def kernels(self) -> int:
        return len(self.groups)


def contiguous_groups(n_ops: int, n_kernels: int) -> list[list[int]]:
    """Split ``n_ops`` ops into ``n_kernels`` contiguous groups as evenly as possible."""
    n_ops, n_kernels = positive_int("n_ops", n_ops), positive_int("n_kernels", n_kernels)
    at_most("n_ops", n_ops, what="ops in a chain")
    if n_kernels > n_ops:
        raise ValueError(f"n_kernels={n_kernels} cannot exceed the number of ops ({n_ops})")
    sizes = [n_ops // n_kernels + (1 if i < n_ops % n_kernels else 0) for i in range(n_kernels)]
    out, start = [], 0
    for s in sizes:
        out.append(list(range(start, start + s)))
        start += s
    return out


def chain_groups(groups, n_ops: int, *, arg: str = "groups") -> list[list[int]]:
    """``groups`` checked against a chain of ``n_ops`` ops (None: one kernel per op): lists of
    op indices, contiguous, in order, none empty, covering every op. ValueError naming ``arg``
    otherwise."""
    n_ops = at_most("n_ops", positive_int("n_ops", n_ops), what="ops in a chain")
    arg = text("arg", arg)
    if groups is None:
        return [[i] for i in range(n_ops)]
    ok = isinstance(groups, (list, tuple)) and all(
        isinstance(g, (list, tuple)) and g and all(
            isinstance(i, int) and not isinstance(i, bool) for i in g) for g in groups)
    if not ok or [i for g in groups for i in g] != list(range(n_ops)):
        raise ValueError(
            f"{arg}={shown(groups)} must split ops 0..{n_ops - 1} into contiguous, ordered, "
            "non-empty kernels, e.g. [[0, 1], [2, 3]]")
    return [list(g) for g in groups]


@finite_results
def elementwise_chain(n_elements, ops: Sequence[str], groups: Sequence[Sequence[int]] | None = None,
                      precision: str = "fp16") -> ChainCost:
    """A chain of elementwise ops over a tensor of ``n_elements``, fused per ``groups``.
    Elementwise work runs on the non-tensor vector units (compute ``VECTOR``), not the
    tensor cores: its ceiling is the device's vector rate (``roofline.peak_tflops``).

    ``groups`` lists the ops each kernel runs, contiguous and in order, e.g. for 4 ops
    ``[[0], [1], [2], [3]]`` (unfused, the default), ``[[0, 1], [2, 3]]`` or ``[[0, 1, 2, 3]]``.
    Each kernel reads its input and every extra input of its ops once from memory and writes its
    output (and any mask) once; intermediates inside a kernel stay in registers.
    """
    n = positive_int("n_elements", n_elements)
    if isinstance(ops, (list, tuple)) and not ops:
        raise ValueError("ops must name at least one elementwise op")
    specs = [elementwise_op(o, "ops") for o in sequence("ops", ops)]
    groups = chain_groups(groups, len(specs))
    a = _b(precision)
    kernels = []
    for g in groups:
        members = [specs[i] for i in g]
        detail = {
            "read input": n * a,
            "read extra inputs": n * a * sum(e.extra_inputs for e in members),
            "write output": n * a,
            "write masks": n * sum(e.extra_output_bytes for e in members),
        }
        detail = {k: v for k, v in detail.items() if v}
        name = " + ".join(e.label for e in members)
        kernels.append(Cost(name, n * sum(e.flops_per_element for e in members),
                            sum(detail.values()), VECTOR, 1, detail))
    return ChainCost(tuple(e.key for e in specs), tuple(tuple(g) for g in groups), tuple(kernels))


# --- MLP ------------------------------------------------------------------------------------

@finite_results
def mlp(tokens, d_model, d_ff, precision: str = "fp16", *, gated: bool = False,
        backward: bool = False, input_requires_grad: bool = True,
        weight_precision: str | None = None, compute: str | None = None) -> Cost:
    """Two-layer MLP (d -> d_ff -> d), or gated SwiGLU (gate, up: d -> d_ff; down: d_ff -> d).

    FLOPs count matmuls only (as FlopCounterMode). Forward per matmul 2*T*in*out. Backward per
    matmul: grad-input (2*T*in*out) and grad-weight (2*T*in*out); the first layer's grad-input
    is skipped when the input does not require grad. So fwd+bwd = 3x forward with grad input.
    Bytes: each matmul's operands and result once (composed from ``gemm``) plus the activation.
    """
    tokens = positive_int("tokens", tokens)
    d_model, d_ff = positive_int("d_model", d_model), positive_int("d_ff", d_ff)
    gated, backward = flag("gated", gated), flag("backward", backward)
    input_requires_grad = flag("input_requires_grad", input_requires_grad)
    precision = _precision.get(precision, arg="precision").key
    wp = _fmt_or(weight_precision, "weight_precision", precision)
    first = ["gate", "up"] if gated else ["up"]
    parts = [linear(tokens, d_model, d_ff, precision, weight_precision=wp, compute=compute,
                    name=f"{p}_proj") for p in first]
    act = elementwise("silu_mul" if gated else "gelu", tokens * d_ff, precision)
    parts += [act.renamed(act.name + " (not in FLOP total)"),
              linear(tokens, d_ff, d_model, precision, weight_precision=wp, compute=compute,
                     name="down_proj")]
    if backward:
        for inp, out, nm, is_first in [(d_model, d_ff, p, True) for p in first] + [
                (d_ff, d_model, "down", False)]:
            # grad_W[out,in] = grad_y^T[out,T] @ x[T,in]
            parts.append(gemm(out, inp, tokens, precision, compute=compute, name=f"{nm} dW"))
            if not is_first or input_requires_grad:
                # grad_x[T,in] = grad_y[T,out] @ W[out,in]
                parts.append(gemm(tokens, inp, out, precision, weight_precision=wp,
                                  compute=compute, name=f"{nm} dX"))
        parts.append(elementwise("silu_mul" if gated else "gelu", tokens * d_ff, precision)
                     .renamed("activation backward (not in FLOP total)"))
    matmul_flops = sum(p.flops for p in parts if "not in FLOP total" not in p.name)
    bytes_ = sum(p.bytes for p in parts)
    name = f"{'SwiGLU ' if gated else ''}MLP {'fwd+bwd' if backward else 'forward'}"
    return Cost(name, matmul_flops, bytes_, parts[0].compute, len(parts),
                {p.name: p.bytes for p in parts})
