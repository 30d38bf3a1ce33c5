"""Lab 7 physics: the built-in models' shapes, the memory a profile run of them needs, and what
the roofline predicts for them. Pure Python (the torch modules are in
``labs.core.measure.profile.tiny_modules``), so a lab can predict, and refuse a configuration that does
not fit, before torch is imported or anything is allocated.

The tiny decoder keeps Llama-3-8B's proportions (meta-llama params.json, see
``models.MODELS["llama-3-8b"]``: 4 query heads per KV head (32 / 8, GQA), FFN = 3.5 x d_model
(14336 / 4096), RMSNorm, SwiGLU, rotary positions, no biases) at a size a laptop profiles in
seconds: 4 layers, d_model 512, 8 heads of 64, 2 KV heads, FFN 1792, vocabulary 16384. Its
weights (30.4 M parameters, 122 MB in fp32, 61 MB in bf16) are larger than a laptop CPU's
last-level cache, so a decode step streams them from DRAM as a real model's would.
"""

from __future__ import annotations

import dataclasses

from labs.core.physics import formulas
from labs.core.physics import hardware
from labs.core.physics import models as _models
from labs.core.physics import precision as _precision
from labs.core.physics import roofline
from labs.core.physics.validate import (
    finite_results,
    mapping,
    non_negative,
    one_of,
    positive_int,
    shown,
    text,
)

__all__ = [
    "ATTENTION", "BLOCKS", "CHANGES", "LAUNCHES", "LOOKUP", "MODEL_PRECISIONS", "PHASES",
    "TINY_DECODER", "best_predicted_group", "changed", "dominant_group", "leading_group",
    "memory_bound_share",
    "memory_bound_share_with_launches", "memory_bytes", "memory_terms", "overhead_ratio_by_group",
    "predicted_ratio", "predicted_ratio_with_launches", "step_kernel_list", "step_kernels",
    "step_kernels_by_group", "step_ops", "step_seconds", "storage", "time_by_group",
    "time_with_launches"
]

PHASES = ("prefill", "decode")
#: "math": QK^T, softmax and PV as separate operators, KV heads repeated to the query heads
#: (Llama's reference code); "sdpa": torch's fused scaled_dot_product_attention (GQA native).
ATTENTION = ("math", "sdpa")
#: Precisions a whole model can be cast to (fp8/int8 need quantised kernels, not a cast).
MODEL_PRECISIONS = ("fp32", "tf32", "fp16", "bf16")

_base = _models.ModelConfig(
    "tiny-decoder", "Tiny Llama-style decoder", layers=4, d_model=512, heads=8, kv_heads=2,
    head_dim=64, d_ff=1792, vocab=16384, params_reported=0.0,
    source="Llama-3-8B's proportions (meta-llama params.json: 32 heads / 8 KV heads, FFN "
           "14336 / 4096 = 3.5 x d_model) scaled down; random weights, no model card",
    max_context=8192)
#: The built-in decoder. It has no model card, so ``params_reported`` is its derived count.
TINY_DECODER = dataclasses.replace(_base, params_reported=float(_base.params))

#: Sizes of the blocks profiled alone (the decoder's own MLP and attention shapes).
BLOCKS = ("decoder", "mlp", "attention")


def _model_precision(precision, arg: str = "precision") -> str:
    p = text(arg, precision).lower()
    if p not in MODEL_PRECISIONS:
        raise KeyError(f"{arg}={shown(precision)} cannot be a whole model's precision; choose "
                       f"one of {', '.join(MODEL_PRECISIONS)}")
    return p


def _check(phase: str, attention: str, precision: str) -> str:
    one_of("phase", phase, PHASES)
    one_of("attention", attention, ATTENTION)
    return _model_precision(precision)


def _case(config, phase, batch, context, precision, attention):
    """Every setting checked under its own name: (config, phase, batch, context, precision,
    attention), the names normalised (lower case)."""
    p = _check(phase, attention, precision)
    return (_models.get(config, arg="config"), phase.strip().lower(),
            positive_int("batch", batch), positive_int("context", context), p,
            attention.strip().lower())


def storage(precision: str) -> str:
    """The storage format of a model precision (tf32 is an fp32 compute mode)."""
    p = _model_precision(precision)
    return "fp32" if p == "tf32" else p


@finite_results
def memory_terms(config=TINY_DECODER, *, phase: str = "decode", batch: int = 1,
                 context: int = 1024, precision: str = "fp32", attention: str = "math",
                 block: str = "decoder") -> dict[str, float]:
    """Bytes a profile run allocates, by term, before anything is allocated.

    weights: every parameter (``block`` "mlp"/"attention": that block's only).
    KV cache: 2 x layers x KV heads x head_dim x context x batch elements (GQA: KV heads).
    activations: STATED ASSUMPTION, the peak of one layer at a time: the residual stream and
    its normed copy, Q, K, V and the attention output, SwiGLU's gate, up and product
    (per token), plus for "math" attention the K and V repeated to every query head and the
    score and probability matrices (batch x heads x query tokens x context; prefill also holds
    a context x context causal mask), plus the last position's logits. "sdpa" attention keeps
    scores on chip (no repeat, no score matrix).
    """
    c, phase, batch, context, p, attention = _case(config, phase, batch, context, precision,
                                                   attention)
    block = one_of("block", block, BLOCKS)
    b = _precision.bytes_per_element(storage(p))
    sq = context if phase == "prefill" else 1
    tokens = batch * sq
    d, hd, h, kvh = c.d_model, c.head_dim, c.heads, c.kv_heads
    layers = 1 if block != "decoder" else c.layers
    if block == "mlp":
        return {"weights": 3 * d * c.d_ff * b, "KV cache": 0.0,
                "activations": tokens * (d + 3 * c.d_ff + d) * b}
    attn_w = d * hd * (2 * h + 2 * kvh)
    weights = c.params * b if block == "decoder" else attn_w * b
    kv = 2 * layers * kvh * hd * context * batch * b
    per_token = 2 * d + (2 * h + 2 * kvh) * hd + (3 * c.d_ff if block == "decoder" else 0)
    act = tokens * per_token * b
    if attention == "math":
        act += 2 * batch * h * context * hd * b  # K, V repeated to the query heads
        act += 2 * batch * h * sq * context * b  # scores and probabilities
        act += (sq * context * b) if phase == "prefill" else 0  # causal mask
    if block == "decoder":
        act += batch * c.vocab * b
    return {"weights": float(weights), "KV cache": float(kv), "activations": float(act)}


@finite_results
def memory_bytes(config=TINY_DECODER, **kwargs) -> float:
    """Total of :func:`memory_terms` (same keyword arguments)."""
    return sum(memory_terms(config, **kwargs).values())


@finite_results
def step_ops(config=TINY_DECODER, *, phase: str = "decode", batch: int = 1,
             context: int = 1024, precision: str = "fp32",
             attention: str = "math") -> list[formulas.Cost]:
    """The roofline's view of one forward of the decoder (``models.step_ops``): per-layer ops x
    layers plus the LM head on the last position; "sdpa" is the fused attention, "math" the
    unfused one WITH the copy of K and V to every query head that the tiny decoder runs
    (``formulas.attention(repeat_kv=True)``: at batch 1 and context 1,024 in fp32 those copies
    are about a quarter of the step's bytes: 33.6 of 126.8 MB)."""
    c, phase, batch, context, p, attention = _case(config, phase, batch, context, precision,
                                                   attention)
    return _models.step_ops(c, phase, batch, context, p, fused_attention=attention == "sdpa",
                            repeat_kv=attention == "math")


@finite_results
def time_by_group(hw, config=TINY_DECODER, *, phase: str = "decode", batch: int = 1,
                  context: int = 1024, precision: str = "fp32",
                  attention: str = "math") -> dict[str, float]:
    """Predicted seconds per ``models.OP_GROUPS`` group: each op at its roofline bound."""
    d = hardware.get(hw, arg="hw")
    c, phase, batch, context, p, attention = _case(config, phase, batch, context, precision,
                                                   attention)
    return _models.step_time_by_group(c, d, phase, batch=batch, seq_len=context,
                                      precision=p, fused_attention=attention == "sdpa",
                                      repeat_kv=attention == "math")


def leading_group(times) -> str:
    """The group that takes the most time of ``times`` (seconds per group, as
    :func:`time_by_group` gives them)."""
    seconds = {name: non_negative(f"times[{name!r}]", v)
               for name, v in mapping("times", times).items()}
    return max(seconds, key=seconds.get)


def dominant_group(hw, config=TINY_DECODER, **kwargs) -> str:
    """The group of ``models.OP_GROUPS`` the roofline says takes the most time."""
    return leading_group(time_by_group(hw, config, **kwargs))


@finite_results
def memory_bound_share(hw, config=TINY_DECODER, *, phase: str = "decode", batch: int = 1,
                       context: int = 1024, precision: str = "fp32",
                       attention: str = "math") -> float:
    """Fraction (0-1) of the predicted step time spent in memory-bound ops: each op at its
    bound max(FLOPs / its ceiling, bytes / bandwidth) (``roofline.cost_time``: matmuls at the
    precision's peak, norms and adds at the vector rate), memory-bound where the bytes term is
    larger."""
    d = hardware.get(hw, arg="hw")
    p = _check(phase, attention, precision)
    total = mem = 0.0
    for op in step_ops(config, phase=phase, batch=batch, context=context, precision=p,
                       attention=attention):
        tb = roofline.cost_time(op, d)  # each op at its own ceiling (norms and adds: vector)
        total += tb.lower
        mem += tb.lower if tb.t_memory > tb.t_compute else 0.0
    return mem / total


#: The launch model's name for the time outside the operators (Lab 7, Predictions 3 and 5).
LAUNCHES = "launches (kernels x launch overhead)"
#: The one kernel of a step in none of ``models.OP_GROUPS``: the embedding lookup (the
#: profiler's "data movement"; the roofline leaves it out, ``models.step_ops``).
LOOKUP = "embedding lookup"


def step_kernel_list(config=TINY_DECODER, *, phase: str = "decode", batch: int = 1,
                     context: int = 1024, precision: str = "fp32",
                     attention: str = "math") -> list[tuple[str, str, int]]:
    """The kernels one eager forward of the tiny decoder launches, as the lab builds and
    profiles it (``labs.core.measure.profile.tiny_modules``, with its KV cache): a list of (what,
    group, kernels per step), group one of ``models.OP_GROUPS`` or :data:`LOOKUP`.

    A KERNEL here is one non-view aten operator, the operators the project's profiler records
    that are not views: a view (``view``, ``transpose``, ``expand``, a slice, ``t``,
    ``_unsafe_view`` ...) only changes a tensor's shape and strides and launches nothing on a
    GPU; every other operator moves data or computes and launches (at least) one kernel.
    This is the count of operators the profiler shows, not of device kernels: an operator
    may launch more than one kernel on some backend (a split-K GEMM), and on a GPU torch may
    run fp32 GQA ``scaled_dot_product_attention`` as its unfused math fallback (several
    kernels); the CPU runs it as one operator, which is what this counts.

    Read off the module line by line (``s`` = new tokens: ``context`` in prefill, 1 in
    decode; ``H`` heads, ``H_kv`` KV heads). Per layer (``Block.forward``):

    * RMSNorm before attention: ``x.pow(2)``, ``.mean``, ``+ eps``, ``rsqrt``, ``x *``,
      ``* weight``: 6 (norms & elementwise)
    * Q, K, V projections (``nn.Linear`` without bias: ``t`` is a view, one ``mm`` each): 3
      (weight GEMMs)
    * rotary positions on Q and on K (``_rotate``: ``neg``, ``cat``, ``* cos``, ``* sin``,
      ``add``; the half slices and the cos/sin rows are views): 2 x 5 = 10 (attention)
    * KV-cache writes of K and V (``cache[:, :, pos:pos + s] = k``: one ``copy_`` each): 2
      (attention)
    * "sdpa": ``scaled_dot_product_attention`` (one fused operator): 1 (attention)
    * "math": K and V repeated to the query heads (``expand`` + ``reshape`` copies when
      H > H_kv): 2; ``q @ k^T`` (``bmm``): 1; ``/ sqrt(d_h)`` (``div``): 1; softmax: 1;
      ``@ v`` (``bmm``): 1; where s > 1 also the causal mask (``full``, ``triu``, ``add``): 3,
      the attention output copied to [batch, s, H x d_h] before the O projection (its
      transposed layout does not flatten as a view when s > 1 and H > 1): 1, and at batch > 1
      Q copied for the ``bmm`` (the rotated Q keeps the projection's [batch, s, H, d_h]
      layout, which [batch x H, s, d_h] cannot view when batch > 1, s > 1, H > 1): 1
      (attention)
    * O projection: 1 (weight GEMMs); residual add: 1 (norms & elementwise)
    * RMSNorm before the MLP: 6; gate and up projections: 2 (weight GEMMs); ``silu``,
      ``* up``: 2; down projection: 1 (weight GEMMs); residual add: 1

    Outside the layers: the embedding lookup 1 (:data:`LOOKUP`), the final RMSNorm 6 (the
    last position is selected by a view), the LM head 1 (weight GEMMs).

    The tiny decoder's batch-1 decode step with math attention: per layer 6 + 3 + 10 + 2 +
    (2 + 1 + 1 + 1 + 1) + 1 + 1 + 6 + 2 + 2 + 1 + 1 = 41, so 4 x 41 + 1 + 6 + 1 = 172 kernels
    (the profiler's 398 aten calls less 226 views); with "sdpa" 4 x 36 + 8 = 152. A prefill
    (s > 1) with math attention adds 4 per layer at batch 1 (188) and 5 at batch > 1 (192);
    with "sdpa" it stays 152. Precision and context change none of these counts. By group,
    the math decode step: weight GEMMs 4 x 7 + 1 = 29, attention 4 x 18 = 72, norms &
    elementwise 4 x 16 + 6 = 70, the lookup 1. ``tests/test_tiny_models_kernels.py`` holds
    every case against the operators the profiler records on the real module.

    The roofline's ops (:func:`step_ops`) leave out the rotary, cache-write, mask and final-norm
    operators (a few KB each) and fuse K,V and gate,up into one GEMM each; they still launch,
    so the kernels are counted here, not from ``step_ops``."""
    c, phase, batch, context, p, attention = _case(config, phase, batch, context, precision,
                                                   attention)
    weights, attn, elementwise = _models.OP_GROUPS
    s = context if phase == "prefill" else 1
    norm = 6  # pow, mean, + eps, rsqrt, x *, * weight
    layer = [("RMSNorm before attention (pow, mean, + eps, rsqrt, x *, * weight)",
              elementwise, norm),
             ("Q, K, V projections (mm each)", weights, 3),
             ("rotary positions on Q and K (neg, cat, * cos, * sin, add each)", attn, 10),
             ("KV-cache writes of K and V (copy_ each)", attn, 2)]
    if attention == "sdpa":
        layer.append(("scaled_dot_product_attention", attn, 1))
    else:
        if c.heads > c.kv_heads:
            layer.append(("K, V repeated to the query heads (a copy each)", attn, 2))
        if s > 1 and batch > 1 and c.heads > 1:
            layer.append(("Q copied to [batch x heads, s, head_dim] for QK^T", attn, 1))
        layer += [("QK^T (bmm)", attn, 1), ("scale by 1/sqrt(head_dim) (div)", attn, 1)]
        if s > 1:
            layer.append(("causal mask (full, triu, add)", attn, 3))
        layer += [("softmax", attn, 1), ("PV (bmm)", attn, 1)]
        if s > 1 and c.heads > 1:
            layer.append(("attention output copied to [batch, s, heads x head_dim]", attn, 1))
    layer += [("O projection (mm)", weights, 1),
              ("residual add (attention)", elementwise, 1),
              ("RMSNorm before the MLP", elementwise, norm),
              ("gate, up projections (mm each)", weights, 2),
              ("SiLU, x up", elementwise, 2),
              ("down projection (mm)", weights, 1),
              ("residual add (MLP)", elementwise, 1)]
    return ([("embedding lookup", LOOKUP, 1)]
            + [(f"{what} x {c.layers} layers", g, n * c.layers) for what, g, n in layer]
            + [("final RMSNorm", elementwise, norm), ("LM head (mm)", weights, 1)])


def step_kernels_by_group(config=TINY_DECODER, **case) -> dict[str, int]:
    """Kernels per step by ``models.OP_GROUPS`` group, and :data:`LOOKUP` (the embedding's
    one): :func:`step_kernel_list` summed per group (same keyword arguments)."""
    out = dict.fromkeys((*_models.OP_GROUPS, LOOKUP), 0)
    for _what, group, n in step_kernel_list(config, **case):
        out[group] += n
    return out


def step_kernels(config=TINY_DECODER, **case) -> int:
    """Kernels (non-view operators) one eager step launches: :func:`step_kernel_list`'s total
    (same keyword arguments). The tiny decoder's batch-1 decode step, math attention: 172."""
    return sum(n for _what, _group, n in step_kernel_list(config, **case))


@finite_results
def time_with_launches(hw, config=TINY_DECODER, *,
                       launch_overhead_us: float = roofline.DEFAULT_LAUNCH_OVERHEAD_US,
                       phase: str = "decode", batch: int = 1, context: int = 1024,
                       precision: str = "fp32", attention: str = "math") -> dict[str, float]:
    """The roofline plus the lab's launch model: seconds per ``models.OP_GROUPS`` group (each
    op at its bound, :func:`time_by_group`) and :data:`LAUNCHES`, every kernel of the step
    (:func:`step_kernels`: every non-view operator the eager module runs) paying a fixed
    ``launch_overhead_us`` one after another (Lab 4's overhead regime,
    ``roofline.DEFAULT_LAUNCH_OVERHEAD_US``, the model of :func:`overhead_ratio_by_group`).

    Derivation, the tiny decoder's batch-1 fp32 decode step with math attention on the A100
    80GB: 172 kernels (:func:`step_kernel_list`), 172 x 5 us = 860 us, about 14x the 62 us
    bound: a step that small is overhead-bound on a GPU in eager mode. (``step_ops``' own
    ``kernels`` count its 61 roofline ops, K,V and gate,up fused and no rotary, cache-write,
    scale, final-norm or embedding operator: not what the profiled module launches.) The 5 us
    is a floor: an eager step on an H200 paid about 16 us per kernel
    (``roofline.EAGER_KERNEL_US``, ``tests/test_reality_anchors_profile.py``)."""
    c, phase, batch, context, p, attention = _case(config, phase, batch, context, precision,
                                                   attention)
    overhead_s = non_negative("launch_overhead_us", launch_overhead_us) * 1e-6
    out = time_by_group(hw, c, phase=phase, batch=batch, context=context, precision=p,
                        attention=attention)
    out[LAUNCHES] = step_kernels(c, phase=phase, batch=batch, context=context, precision=p,
                                 attention=attention) * overhead_s
    return out


@finite_results
def memory_bound_share_with_launches(hw, config=TINY_DECODER, *,
                                     launch_overhead_us: float = roofline.DEFAULT_LAUNCH_OVERHEAD_US,
                                     **case) -> float:
    """Fraction (0-1) of a step's time in memory-bound ops once every kernel pays a launch
    (:func:`time_with_launches`): sum of the memory-bound ops' bounds / (sum of all bounds +
    kernels x launch overhead). The roofline's own share (:func:`memory_bound_share`) has no
    overhead term, so it is 1 for any step whose ops all sit below the ridge."""
    t = time_with_launches(hw, config, launch_overhead_us=launch_overhead_us, **case)
    bound = sum(v for k, v in t.items() if k != LAUNCHES)
    return memory_bound_share(hw, config, **case) * bound / sum(t.values())


@finite_results
def predicted_ratio_with_launches(change: str, hw, base: dict, config=TINY_DECODER, *,
                                  launch_overhead_us: float = roofline.DEFAULT_LAUNCH_OVERHEAD_US
                                  ) -> float | None:
    """New / old step time for one change under the roofline plus the launch model
    (:func:`time_with_launches`): (sum of bounds + kernels x overhead) after / before; None
    for torch.compile (as :func:`predicted_ratio`). Halving the bytes (fp32 -> bf16) halves
    only the bounds, not the launches: for a batch-1 fp32 decode step on a GPU (bound T,
    172 kernels x 5 us = 860 us of launches) the ratio is (T/2 + 860 us) / (T + 860 us), where
    the pure roofline says 0.5."""
    new = changed(change, base)
    if one_of("change", change, CHANGES) == "compile":
        return None
    old_t = sum(time_with_launches(hw, config, launch_overhead_us=launch_overhead_us,
                                   **_base(base)).values())
    new_t = sum(time_with_launches(hw, config, launch_overhead_us=launch_overhead_us,
                                   **new).values())
    return new_t / old_t


@finite_results
def overhead_ratio_by_group(hw, config=TINY_DECODER, *,
                            launch_overhead_us: float = roofline.DEFAULT_LAUNCH_OVERHEAD_US,
                            phase: str = "prefill", batch: int = 1, context: int = 1024,
                            precision: str = "fp32", attention: str = "math") -> dict[str, float]:
    """Per ``models.OP_GROUPS`` group: (its ops' bounds + its kernels x launch overhead) /
    bounds. How far above its roofline bound a group would run if every kernel paid a fixed
    launch overhead (Lab 4's overhead regime, ``roofline.DEFAULT_LAUNCH_OVERHEAD_US``): near 1,
    the roofline predicts the group well; far above 1, overhead decides its time. A group's
    kernels are :func:`step_kernels_by_group`'s (the same count as :func:`time_with_launches`:
    the rotary and cache-write operators with attention, the final norm with the norms); the
    embedding lookup's one kernel is in no group."""
    d = hardware.get(hw, arg="hw")
    c, phase, batch, context, p, attention = _case(config, phase, batch, context, precision,
                                                   attention)
    overhead_s = non_negative("launch_overhead_us", launch_overhead_us) * 1e-6
    bound = dict.fromkeys(_models.OP_GROUPS, 0.0)
    for op in step_ops(c, phase=phase, batch=batch, context=context, precision=p,
                       attention=attention):
        bound[_models.op_group(op.name)] += roofline.cost_time(op, d).lower
    kernels = step_kernels_by_group(c, phase=phase, batch=batch, context=context, precision=p,
                                    attention=attention)
    return {g: (bound[g] + kernels[g] * overhead_s) / bound[g] for g in bound if bound[g] > 0}


def best_predicted_group(hw, config=TINY_DECODER, **kwargs) -> str:
    """The group :func:`overhead_ratio_by_group` puts closest to its bound."""
    r = overhead_ratio_by_group(hw, config, **kwargs)
    return min(r, key=r.get)


@finite_results
def step_seconds(hw, config=TINY_DECODER, **kwargs) -> float:
    """Predicted step time: the sum of every op's bound (ops run one after another)."""
    return sum(time_by_group(hw, config, **kwargs).values())


#: What Part 3 of Lab 7 can change, and the one setting that differs from the baseline.
CHANGES = {
    "batch": "batch 1 → 64",
    "precision": "fp32 → bf16",
    "sdpa": "math attention → scaled_dot_product_attention",
    "compile": "eager → torch.compile",
}


#: The settings a baseline of :func:`changed` may hold, and their defaults.
_BASE_DEFAULTS = {"phase": "decode", "batch": 1, "context": 1024, "precision": "fp32",
                  "attention": "math"}


def _base(base) -> dict:
    """``base`` checked: a dict of :data:`_BASE_DEFAULTS`' settings with valid values; errors
    name ``base`` (and the setting)."""
    mapping("base", base)
    unknown = [k for k in base if k not in _BASE_DEFAULTS]
    if unknown:
        raise KeyError(f"base has unknown settings {', '.join(map(shown, unknown))}; it may "
                       f"hold {', '.join(_BASE_DEFAULTS)}")
    try:
        _case(TINY_DECODER, **{**_BASE_DEFAULTS, **base})
    except (ValueError, KeyError) as exc:
        raise type(exc)(f"base: {exc.args[0] if exc.args else exc}") from None
    return dict(base)


def changed(change: str, base: dict) -> dict:
    """The baseline settings (phase, batch, context, precision, attention) with one change."""
    change = one_of("change", change, CHANGES)
    new = dict(_base(base))
    if change == "batch":
        new["batch"] = 64 if base.get("batch", 1) != 64 else 1
    elif change == "precision":
        new["precision"] = "bf16" if base.get("precision", "fp32") != "bf16" else "fp32"
    elif change == "sdpa":
        new["attention"] = "sdpa" if base.get("attention", "math") != "sdpa" else "math"
    return new


@finite_results
def predicted_ratio(change: str, hw, base: dict, config=TINY_DECODER) -> float | None:
    """Roofline's new / old step time for one change, or None where the roofline cannot say
    (torch.compile's fusion depends on what the compiler fuses). ``base``: keyword arguments
    of :func:`time_by_group` (phase, batch, context, precision, attention)."""
    new = changed(change, base)
    hardware.get(hw, arg="hw")
    _models.get(config, arg="config")
    if one_of("change", change, CHANGES) == "compile":
        return None
    return step_seconds(hw, config, **new) / step_seconds(hw, config, **base)
