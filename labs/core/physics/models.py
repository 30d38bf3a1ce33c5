"""Transformer configs (sourced), their memory footprints, per-layer op costs and serving bounds.

KV cache (GQA): 2 (K and V) x layers x KV heads x head_dim x bytes/element x tokens x batch.
It uses the *KV* head count (8 for Llama-3), not the query heads (32/64): using query heads
overstates the Llama-3-8B cache 4x.
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.core.physics import formulas
from labs.core.physics import hardware
from labs.core.physics import precision as _precision
from labs.core.physics import roofline
from labs.core.physics.validate import (
    close_matches,
    finite_results,
    flag,
    fraction,
    one_of,
    optional,
    positive_int,
    shown,
    text,
)

__all__ = [
    "MODELS", "MemoryBudget", "ModelConfig", "OP_GROUPS", "StepBound", "dominant_group", "get",
    "max_batch", "memory_budget", "oom_batch", "op_group", "roofline_ops", "step_bound",
    "step_ops", "step_time_by_group"
]

_SRC = ("meta-llama/llama3 params.json (n_layers, dim, n_heads, n_kv_heads, vocab); FFN from "
        "Llama's multiple_of/ffn_dim_multiplier rule; reported parameter count from the model card")


@dataclass(frozen=True)
class ModelConfig:
    key: str
    name: str
    layers: int
    d_model: int
    heads: int
    kv_heads: int
    head_dim: int
    d_ff: int
    vocab: int
    params_reported: float
    source: str = _SRC
    tied_embeddings: bool = False
    #: Context window the model was trained for (Meta Llama 3 model card: 8K for both sizes).
    max_context: int = 8192

    # --- parameters and memory ------------------------------------------------------------
    @property
    def params_per_layer(self) -> int:
        attn = self.d_model * self.head_dim * (2 * self.heads + 2 * self.kv_heads)
        mlp = 3 * self.d_model * self.d_ff  # SwiGLU: gate, up, down
        return attn + mlp + 2 * self.d_model  # + two RMSNorm weights

    @property
    def params(self) -> int:
        """Parameter count derived from the config (checked against ``params_reported``)."""
        embed = self.vocab * self.d_model * (1 if self.tied_embeddings else 2)
        return self.layers * self.params_per_layer + embed + self.d_model

    @finite_results
    def weight_bytes(self, precision: str = "bf16") -> float:
        """Bytes every parameter takes in memory (the allocation, embedding table included)."""
        return self.params * _precision.bytes_per_element(precision, arg="precision")

    @finite_results
    def embedding_bytes(self, precision: str = "bf16", *, rows: int | None = None) -> float:
        """Bytes of the embedding table (``vocab`` rows of ``d_model``), or of ``rows`` of its
        rows (a decode step gathers one per token)."""
        n = self.vocab if rows is None else positive_int("rows", rows)
        return n * self.d_model * _precision.bytes_per_element(precision, arg="precision")

    @finite_results
    def weight_bytes_read(self, precision: str = "bf16", *, tokens: int = 1) -> float:
        """Weight bytes one forward step READS for ``tokens`` tokens (``batch`` in decode,
        ``batch x seq_len`` in prefill): every layer's weights, the final norm and the LM head
        whole, but of an untied embedding table only the rows the tokens gather (at most
        ``min(tokens, vocab)`` rows of ``d_model``). With a tied embedding the LM head reads
        that table whole, so every parameter is read. Less than :meth:`weight_bytes` (the
        allocation) by the table less its gathered rows when untied."""
        tokens = positive_int("tokens", tokens)
        b = _precision.bytes_per_element(precision, arg="precision")
        if self.tied_embeddings:
            return self.params * b
        table = self.vocab * self.d_model
        return (self.params - table + min(tokens, self.vocab) * self.d_model) * b

    @finite_results
    def kv_bytes_per_token(self, precision: str = "bf16") -> float:
        return 2 * self.layers * self.kv_heads * self.head_dim * _precision.bytes_per_element(precision, arg="precision")

    @finite_results
    def kv_cache_bytes(self, batch: int = 1, seq_len: int = 1, precision: str = "bf16") -> float:
        batch, seq_len = positive_int("batch", batch), positive_int("seq_len", seq_len)
        return self.kv_bytes_per_token(precision) * seq_len * batch

    @finite_results
    def activation_bytes(self, batch: int, seq_len: int, precision: str = "bf16", *,
                         prefill_tokens: int | None = None) -> float:
        """Peak transient activations while serving. STATED ASSUMPTION: layers run one at a time
        and sequences are prefilled one chunk at a time (``prefill_tokens``, default one whole
        sequence of ``seq_len``), so only one layer's tensors for that chunk are alive: the
        residual stream and its normed copy (2 x d_model) plus SwiGLU's gate and up outputs
        (2 x d_ff) per token; plus the decode logits of every sequence in the batch (vocab each,
        kept in fp32)."""
        batch, seq_len = positive_int("batch", batch), positive_int("seq_len", seq_len)
        chunk = seq_len if prefill_tokens is None else positive_int("prefill_tokens", prefill_tokens)
        per_token = (2 * self.d_model + 2 * self.d_ff) * _precision.bytes_per_element(precision, arg="precision")
        return chunk * per_token + batch * self.vocab * 4

    # --- per-layer operations --------------------------------------------------------------
    @finite_results
    def layer_ops(self, phase: str, batch: int, seq_len: int, precision: str = "bf16", *,
                  weight_precision: str | None = None, kv_precision: str | None = None,
                  fused_attention: bool = True, compute: str | None = None,
                  repeat_kv: bool = False) -> list[formulas.Cost]:
        """The operations of one transformer layer. ``precision`` is the activations' format.

        prefill: ``seq_len`` new tokens per sequence attend causally to themselves
        (seq_q = seq_kv): a fused kernel (``fused_attention``) computes about half the score
        matrix, the unfused math path all of it and masks afterwards (``formulas.attention``).
        decode: one new token per sequence attends to ``seq_len`` cached tokens. The projections run at
        ``precision.matmul_compute(weights, activations)`` (``compute``, if given, must agree),
        attention at ``matmul_compute(kv, activations)``, norms and adds on the vector units.
        ``repeat_kv`` (unfused only): the math path copies K and V to every query head first
        (``formulas.attention``), as Llama's reference code and Lab 7's tiny decoder do.
        """
        phase = one_of("phase", phase, ("prefill", "decode"))
        batch, seq_len = positive_int("batch", batch), positive_int("seq_len", seq_len)
        fused_attention = flag("fused_attention", fused_attention)
        precision = _precision.get(precision, arg="precision").key
        t = batch * (seq_len if phase == "prefill" else 1)
        sq = seq_len if phase == "prefill" else 1
        wp = precision if weight_precision is None else weight_precision
        kvp = precision if kv_precision is None else kv_precision
        kw = dict(weight_precision=wp, compute=compute)
        d, hd = self.d_model, self.head_dim
        return [
            formulas.rmsnorm(t, d, precision).renamed("RMSNorm (attention)"),
            formulas.linear(t, d, self.heads * hd, precision, name="Q projection", **kw),
            formulas.linear(t, d, 2 * self.kv_heads * hd, precision, name="K,V projections", **kw),
            formulas.attention(batch, self.heads, sq, seq_len, hd, precision, fused=fused_attention,
                        kv_heads=self.kv_heads, kv_precision=kvp, causal=True,
                        repeat_kv=repeat_kv),
            formulas.linear(t, self.heads * hd, d, precision, name="O projection", **kw),
            formulas.elementwise("residual_add", t * d, precision).renamed("residual add (attention)"),
            formulas.rmsnorm(t, d, precision).renamed("RMSNorm (MLP)"),
            formulas.linear(t, d, 2 * self.d_ff, precision, name="gate, up projections", **kw),
            formulas.elementwise("silu_mul", t * self.d_ff, precision).renamed("SiLU x up"),
            formulas.linear(t, self.d_ff, d, precision, name="down projection", **kw),
            formulas.elementwise("residual_add", t * d, precision).renamed("residual add (MLP)"),
        ]


MODELS: dict[str, ModelConfig] = {m.key: m for m in [
    ModelConfig("llama-3-8b", "Llama-3-8B", 32, 4096, 32, 8, 128, 14336, 128256, 8.03e9),
    ModelConfig("llama-3-70b", "Llama-3-70B", 80, 8192, 64, 8, 128, 28672, 128256, 70.6e9),
]}


def get(key: str | ModelConfig, *, arg: str = "key") -> ModelConfig:
    """A model by key (case-insensitive) or a ModelConfig passed through; ValueError for
    something that is not a key, KeyError listing the models for an unknown one. ``arg`` names
    the caller's argument in messages (``model`` in the functions below)."""
    arg = text("arg", arg)
    if isinstance(key, ModelConfig):
        return key
    if not isinstance(key, str) or not key.strip():
        raise ValueError(f"{arg} must be a model key such as 'llama-3-8b', got {shown(key)}")
    k = key.strip().lower()
    if k in MODELS:
        return MODELS[k]
    raise KeyError(f"unknown model {arg}={key!r}." + close_matches(k, MODELS, always_list=True))


# --- serving: memory budget and time bounds ---------------------------------------------------

@dataclass(frozen=True)
class MemoryBudget:
    capacity_bytes: float
    terms: dict  # name -> bytes: weights, KV cache, activations

    @property
    def used_bytes(self) -> float:
        return sum(self.terms.values())

    @property
    def fits(self) -> bool:
        return self.used_bytes <= self.capacity_bytes

    @property
    def overflow_bytes(self) -> float:
        return max(0.0, self.used_bytes - self.capacity_bytes)

    @property
    def largest_term(self) -> str:
        return max(self.terms, key=self.terms.get)

    def explain(self) -> str:
        """One sentence: fits with headroom, or which term overflowed and by how much."""
        gb = 1e9
        if self.fits:
            return (f"Fits: {self.used_bytes / gb:.1f} GB of {self.capacity_bytes / gb:.1f} GB "
                    f"({self.capacity_bytes and self.used_bytes / self.capacity_bytes:.0%}).")
        # The term that pushed it over: what remains for it after all the others.
        name = self.largest_term
        return (f"Out of memory by {self.overflow_bytes / gb:.1f} GB: needs "
                f"{self.used_bytes / gb:.1f} GB of {self.capacity_bytes / gb:.1f} GB. "
                f"The largest term is {name} at {self.terms[name] / gb:.1f} GB.")


@finite_results
def memory_budget(model, hw, *, batch: int, seq_len: int, weight_precision: str = "bf16",
                  kv_precision: str = "bf16", act_precision: str = "bf16",
                  usable_fraction: float = 0.9) -> MemoryBudget:
    """Weights + KV cache (GQA) + activations against ``usable_fraction`` of device memory
    (STATED ASSUMPTION: ~10% goes to the CUDA context, allocator fragmentation and workspace)."""
    m, d = get(model, arg="model"), hardware.get(hw, arg="hw")
    f = fraction("usable_fraction", usable_fraction)
    weight_precision = _precision.get(weight_precision, arg="weight_precision").key
    kv_precision = _precision.get(kv_precision, arg="kv_precision").key
    act_precision = _precision.get(act_precision, arg="act_precision").key
    # the KV cache last: it is what grows with batch x context, so a budget bar that names
    # "the term that crosses capacity" (adding terms in order) names it, not the activations
    return MemoryBudget(d.memory_bytes * f, {
        "weights": m.weight_bytes(weight_precision),
        "activations": m.activation_bytes(batch, seq_len, act_precision),
        "KV cache": m.kv_cache_bytes(batch, seq_len, kv_precision),
    })


@finite_results
def max_batch(model, hw, *, seq_len: int, weight_precision: str = "bf16",
              kv_precision: str = "bf16", act_precision: str = "bf16",
              usable_fraction: float = 0.9) -> int:
    """Largest batch whose budget fits (0 if not even batch 1 fits)."""
    kw = dict(seq_len=seq_len, weight_precision=weight_precision, kv_precision=kv_precision,
              act_precision=act_precision, usable_fraction=usable_fraction)
    if not memory_budget(model, hw, batch=1, **kw).fits:
        return 0
    lo, hi = 1, 2
    while memory_budget(model, hw, batch=hi, **kw).fits:
        lo, hi = hi, hi * 2
        if hi > 1 << 24:
            return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if memory_budget(model, hw, batch=mid, **kw).fits:
            lo = mid
        else:
            hi = mid
    return lo


@finite_results
def step_ops(model, phase: str, batch: int, seq_len: int, precision: str = "bf16", *,
             weight_precision: str | None = None, kv_precision: str | None = None,
             fused_attention: bool = True, compute: str | None = None,
             repeat_kv: bool = False) -> list[formulas.Cost]:
    """All ops of one forward step: every layer's ops x layers, plus the LM head (last position
    of each sequence). The embedding lookup gathers only one row per token (``batch`` rows of
    ``d_model`` in decode, a few KB) and is left out; with a tied embedding the LM head is
    that table and reads it whole, as it does here either way. So the weight bytes a step
    reads are :meth:`ModelConfig.weight_bytes_read`, not the allocation ``weight_bytes``."""
    m = get(model, arg="model")
    per_layer = m.layer_ops(phase, batch, seq_len, precision, weight_precision=weight_precision,
                            kv_precision=kv_precision, fused_attention=fused_attention,
                            compute=compute, repeat_kv=repeat_kv)
    ops = [c.scaled(m.layers) for c in per_layer]
    ops.append(formulas.linear(batch, m.d_model, m.vocab, precision, name="LM head",
                        weight_precision=precision if weight_precision is None
                        else weight_precision, compute=compute))
    return ops


@dataclass(frozen=True)
class StepBound:
    """Roofline time of one decode step or prefill. ``t_compute`` sums every op's FLOPs over
    its own ceiling (GEMMs at ``compute``, attention at its own, norms on the vector units),
    ``t_memory`` all bytes over the bandwidth, both scaled by ``derating``."""

    phase: str
    batch: int
    seq_len: int
    flops: float
    bytes: float
    t_compute: float
    t_memory: float
    compute: str = "bf16"  # precision the weight GEMMs run at
    derating: roofline.Derating = roofline.SPEC

    @property
    def seconds(self) -> float:
        """Lower bound (at these rates): a step takes at least max(compute, memory)."""
        return max(self.t_compute, self.t_memory)

    @property
    def tokens_per_s(self) -> float:
        """Decode: batch new tokens per step. Prefill: batch x seq_len tokens per step."""
        n = self.batch * (self.seq_len if self.phase == "prefill" else 1)
        return n / self.seconds

    @property
    def bound(self) -> str:
        # at the ridge (equal times, to rounding) compute-bound, as roofline.regime says
        return "memory" if roofline.below_ridge(self.t_compute / self.t_memory) else "compute"


@finite_results
def step_bound(model, hw, phase: str, *, batch: int, seq_len: int, precision: str = "bf16",
               weight_precision: str | None = None, kv_precision: str | None = None,
               compute: str | None = None, fused_attention: bool = True,
               derating: roofline.Derating | None = None) -> StepBound:
    """Roofline time of one decode step or one prefill: a lower bound at the spec rates
    (``derating`` None), or at the fractions of spec in ``derating`` (``roofline.achievable(hw)``).
    ``precision`` is the activations' format; the GEMMs' compute precision follows from
    weights and activations (``compute``, if given, must agree)."""
    d = hardware.get(hw, arg="hw")
    der = roofline.SPEC if derating is None else roofline.check_derating(derating)
    ops = step_ops(model, phase, batch, seq_len, precision, weight_precision=weight_precision,
                   kv_precision=kv_precision, fused_attention=fused_attention, compute=compute)
    comp = next(o.compute for o in ops if o.name == "LM head")
    t_c = sum(roofline.cost_time(o, d, derating=der).t_compute for o in ops)
    flops = sum(o.flops for o in ops)
    bytes_ = sum(o.bytes for o in ops)
    t_m = roofline.time_bounds(0, bytes_, d, comp, derating=der).t_memory
    return StepBound(phase, int(batch), int(seq_len), flops, bytes_, t_c, t_m, comp, der)


# --- Lab 2: where decode time goes, when the KV cache overflows -------------------------------

@finite_results
def oom_batch(model, hw, *, seq_len: int, weight_precision: str = "bf16",
              kv_precision: str = "bf16", act_precision: str = "bf16",
              usable_fraction: float = 0.9) -> int:
    """The first batch that does NOT fit: ``max_batch + 1``. With the weights fitting, the KV
    cache is what grows with batch, so this is where it overflows the device (1 means even a
    single sequence does not fit)."""
    return max_batch(model, hw, seq_len=seq_len, weight_precision=weight_precision,
                     kv_precision=kv_precision, act_precision=act_precision,
                     usable_fraction=usable_fraction) + 1


#: Groups of a step's operations, for "where does the time go": every op that streams a weight
#: matrix, attention over the KV cache, and the elementwise/row-wise ops.
OP_GROUPS = ("weight GEMMs", "attention (KV cache)", "norms & elementwise")


_OP_NAMES = {
    "Q projection": 0, "K,V projections": 0, "O projection": 0, "gate, up projections": 0,
    "down projection": 0, "LM head": 0, "attention (fused)": 1, "attention (unfused)": 1,
    "RMSNorm (attention)": 2, "RMSNorm (MLP)": 2, "residual add (attention)": 2,
    "residual add (MLP)": 2, "SiLU x up": 2}


def op_group(op_name: str) -> str:
    """Which of :data:`OP_GROUPS` an op of :func:`step_ops` belongs to (by its name); KeyError
    naming ``op_name`` for a name step_ops does not produce."""
    name = text("op_name", op_name)
    if name not in _OP_NAMES:
        raise KeyError(f"unknown op_name={op_name!r}; step_ops names its ops: "
                       f"{', '.join(_OP_NAMES)}")
    return OP_GROUPS[_OP_NAMES[name]]


@finite_results
def step_time_by_group(model, hw, phase: str, *, batch: int, seq_len: int,
                       precision: str = "bf16", weight_precision: str | None = None,
                       kv_precision: str | None = None, compute: str | None = None,
                       fused_attention: bool = True,
                       derating: roofline.Derating | None = None, repeat_kv: bool = False) -> dict:
    """Seconds per step spent in each of :data:`OP_GROUPS`: each op (x layers) at its own
    roofline bound max(FLOPs / its ceiling, bytes / bandwidth), summed per group. Kernels run
    one after another, so these add up to a little more than :func:`step_bound`'s whole-step
    bound."""
    d = hardware.get(hw, arg="hw")
    ops = step_ops(model, phase, batch, seq_len, precision, weight_precision=weight_precision,
                   kv_precision=kv_precision, fused_attention=fused_attention, compute=compute,
                   repeat_kv=repeat_kv)
    out = dict.fromkeys(OP_GROUPS, 0.0)
    for op in ops:
        out[op_group(op.name)] += roofline.cost_time(op, d, derating=derating).lower
    return out


def dominant_group(model, hw, phase: str = "decode", **kwargs) -> str:
    """The group of :data:`OP_GROUPS` that takes the most time in one step (see
    :func:`step_time_by_group`, which takes the same keyword arguments)."""
    shares = step_time_by_group(model, hw, phase, **kwargs)
    return max(shares, key=shares.get)


@finite_results
def roofline_ops(model, phase: str, *, batch: int, seq_len: int, precision: str = "bf16",
                 weight_precision: str | None = None, kv_precision: str | None = None,
                 compute: str | None = None) -> list[formulas.Cost]:
    """One layer's operations as points for a roofline: "QKV+O GEMMs" (the Q, K, V and O
    projections summed), "MLP GEMMs" (gate, up, down summed), attention fused (flash) AND
    unfused (QK^T -> softmax -> PV), the softmax over the unfused score matrix, and RMSNorm.
    Summed GEMMs share one AI because they see the same tokens (rows)."""
    m = get(model, arg="model")
    kw = dict(weight_precision=weight_precision, kv_precision=kv_precision, compute=compute)
    fused = {o.name: o for o in m.layer_ops(phase, batch, seq_len, precision,
                                            fused_attention=True, **kw)}
    unfused = m.layer_ops(phase, batch, seq_len, precision, fused_attention=False, **kw)
    sq = seq_len if phase == "prefill" else 1
    proj = formulas.total([fused["Q projection"], fused["K,V projections"], fused["O projection"]],
                   name="QKV+O GEMMs")
    mlp = formulas.total([fused["gate, up projections"], fused["down projection"]], name="MLP GEMMs")
    attn_unfused = next(o for o in unfused if o.name.startswith("attention"))
    # the softmax of the unfused path runs over every score QK^T computed: all Sq x Skv of
    # them (the causal mask is applied to the full matrix, not skipped)
    scores = formulas.elementwise("softmax", formulas.score_elements(batch, m.heads, sq, seq_len), precision)
    return [proj, mlp, fused["attention (fused)"], attn_unfused,
            scores.renamed("softmax (scores)"), fused["RMSNorm (attention)"].renamed("RMSNorm")]
