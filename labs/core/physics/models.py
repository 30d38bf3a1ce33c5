"""Transformer configs (sourced), their memory footprints, per-layer op costs and serving bounds.

KV cache (GQA): 2 (K and V) x layers x KV heads x head_dim x bytes/element x tokens x batch.
It uses the *KV* head count (8 for Llama-3), not the query heads (32/64): using query heads
overstates the Llama-3-8B cache 4x.
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.core.physics import formulas as F
from labs.core.physics import hardware as _hw
from labs.core.physics import precision as _fmt
from labs.core.physics import roofline as R
from labs.core.physics._validate import close_matches, positive, positive_int

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

    def weight_bytes(self, precision: str = "bf16") -> float:
        return self.params * _fmt.bytes_per_element(precision)

    def kv_bytes_per_token(self, precision: str = "bf16") -> float:
        return 2 * self.layers * self.kv_heads * self.head_dim * _fmt.bytes_per_element(precision)

    def kv_cache_bytes(self, batch: int = 1, seq_len: int = 1, precision: str = "bf16") -> float:
        batch, seq_len = positive_int("batch", batch), positive_int("seq_len", seq_len)
        return self.kv_bytes_per_token(precision) * seq_len * batch

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
        per_token = (2 * self.d_model + 2 * self.d_ff) * _fmt.bytes_per_element(precision)
        return chunk * per_token + batch * self.vocab * 4

    # --- per-layer operations --------------------------------------------------------------
    def layer_ops(self, phase: str, batch: int, seq_len: int, precision: str = "bf16", *,
                  weight_precision: str | None = None, kv_precision: str | None = None,
                  fused_attention: bool = True, compute: str | None = None) -> list[F.Cost]:
        """The operations of one transformer layer.

        prefill: ``seq_len`` new tokens per sequence attend to themselves (seq_q = seq_kv).
        decode: one new token per sequence attends to ``seq_len`` cached tokens.
        """
        if phase not in ("prefill", "decode"):
            raise ValueError(f"phase must be 'prefill' or 'decode', got {phase!r}")
        batch, seq_len = positive_int("batch", batch), positive_int("seq_len", seq_len)
        t = batch * (seq_len if phase == "prefill" else 1)
        sq = seq_len if phase == "prefill" else 1
        wp = weight_precision or precision
        kw = dict(weight_precision=wp, compute=compute)
        d, hd = self.d_model, self.head_dim
        return [
            F.rmsnorm(t, d, precision).renamed("RMSNorm (attention)"),
            F.linear(t, d, self.heads * hd, precision, name="Q projection", **kw),
            F.linear(t, d, 2 * self.kv_heads * hd, precision, name="K,V projections", **kw),
            F.attention(batch, self.heads, sq, seq_len, hd, precision, fused=fused_attention,
                        kv_heads=self.kv_heads, kv_precision=kv_precision or precision,
                        compute=compute),
            F.linear(t, self.heads * hd, d, precision, name="O projection", **kw),
            F.elementwise("residual_add", t * d, precision).renamed("residual add (attention)"),
            F.rmsnorm(t, d, precision).renamed("RMSNorm (MLP)"),
            F.linear(t, d, 2 * self.d_ff, precision, name="gate, up projections", **kw),
            F.elementwise("silu_mul", t * self.d_ff, precision).renamed("SiLU x up"),
            F.linear(t, self.d_ff, d, precision, name="down projection", **kw),
            F.elementwise("residual_add", t * d, precision).renamed("residual add (MLP)"),
        ]


MODELS: dict[str, ModelConfig] = {m.key: m for m in [
    ModelConfig("llama-3-8b", "Llama-3-8B", 32, 4096, 32, 8, 128, 14336, 128256, 8.03e9),
    ModelConfig("llama-3-70b", "Llama-3-70B", 80, 8192, 64, 8, 128, 28672, 128256, 70.6e9),
]}


def get(key: str | ModelConfig) -> ModelConfig:
    if isinstance(key, ModelConfig):
        return key
    k = str(key).strip().lower()
    if k in MODELS:
        return MODELS[k]
    raise KeyError(f"unknown model={key!r}." + close_matches(k, MODELS, always_list=True))


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


def memory_budget(model, hw, *, batch: int, seq_len: int, weight_precision: str = "bf16",
                  kv_precision: str = "bf16", act_precision: str = "bf16",
                  usable_fraction: float = 0.9) -> MemoryBudget:
    """Weights + KV cache (GQA) + activations against ``usable_fraction`` of device memory
    (STATED ASSUMPTION: ~10% goes to the CUDA context, allocator fragmentation and workspace)."""
    m, d = get(model), _hw.get(hw)
    f = positive("usable_fraction", usable_fraction)
    if f > 1:
        raise ValueError(f"usable_fraction must be <= 1, got {usable_fraction!r}")
    return MemoryBudget(d.memory_gb * 1e9 * f, {
        "weights": m.weight_bytes(weight_precision),
        "KV cache": m.kv_cache_bytes(batch, seq_len, kv_precision),
        "activations": m.activation_bytes(batch, seq_len, act_precision),
    })


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


def step_ops(model, phase: str, batch: int, seq_len: int, precision: str = "bf16", *,
             weight_precision: str | None = None, kv_precision: str | None = None,
             fused_attention: bool = True, compute: str | None = None) -> list[F.Cost]:
    """All ops of one forward step: every layer's ops x layers, plus the LM head (last position
    of each sequence; the embedding lookup moves only the rows it needs and is ignored)."""
    m = get(model)
    per_layer = m.layer_ops(phase, batch, seq_len, precision, weight_precision=weight_precision,
                            kv_precision=kv_precision, fused_attention=fused_attention,
                            compute=compute)
    ops = [c.scaled(m.layers) for c in per_layer]
    ops.append(F.linear(batch, m.d_model, m.vocab, precision, name="LM head",
                        weight_precision=weight_precision, compute=compute))
    return ops


@dataclass(frozen=True)
class StepBound:
    phase: str
    batch: int
    seq_len: int
    flops: float
    bytes: float
    t_compute: float
    t_memory: float

    @property
    def seconds(self) -> float:
        """Lower bound: a step takes at least max(FLOPs/peak, bytes/bandwidth)."""
        return max(self.t_compute, self.t_memory)

    @property
    def tokens_per_s(self) -> float:
        """Decode: batch new tokens per step. Prefill: batch x seq_len tokens per step."""
        n = self.batch * (self.seq_len if self.phase == "prefill" else 1)
        return n / self.seconds

    @property
    def bound(self) -> str:
        return "compute" if self.t_compute >= self.t_memory else "memory"


def step_bound(model, hw, phase: str, *, batch: int, seq_len: int, precision: str = "bf16",
               weight_precision: str | None = None, kv_precision: str | None = None,
               compute: str | None = None, fused_attention: bool = True) -> StepBound:
    """Roofline lower bound of one decode step or one prefill, at one compute precision."""
    d = _hw.get(hw)
    ops = step_ops(model, phase, batch, seq_len, precision, weight_precision=weight_precision,
                   kv_precision=kv_precision, fused_attention=fused_attention, compute=compute)
    comp = compute or _fmt.compute_precision(precision)
    flops = sum(o.flops for o in ops)
    bytes_ = sum(o.bytes for o in ops)
    tb = R.time_bounds(flops, bytes_, d, comp)
    return StepBound(phase, int(batch), int(seq_len), flops, bytes_, tb.t_compute, tb.t_memory)


# --- Lab 2: where decode time goes, when the KV cache overflows, is a design feasible ---------

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


def op_group(op_name: str) -> str:
    """Which of :data:`OP_GROUPS` an op of :func:`step_ops` belongs to (by its name)."""
    name = str(op_name)
    if name.startswith("attention"):
        return OP_GROUPS[1]
    if "projection" in name or name == "LM head":
        return OP_GROUPS[0]
    return OP_GROUPS[2]


def step_time_by_group(model, hw, phase: str, *, batch: int, seq_len: int,
                       precision: str = "bf16", weight_precision: str | None = None,
                       kv_precision: str | None = None, compute: str | None = None,
                       fused_attention: bool = True) -> dict:
    """Seconds per step spent in each of :data:`OP_GROUPS`: each op (x layers) at its own
    roofline bound max(FLOPs / peak, bytes / bandwidth), summed per group. Kernels run one after
    another, so these add up to a little more than :func:`step_bound`'s whole-step bound."""
    d = _hw.get(hw)
    ops = step_ops(model, phase, batch, seq_len, precision, weight_precision=weight_precision,
                   kv_precision=kv_precision, fused_attention=fused_attention, compute=compute)
    comp = compute or _fmt.compute_precision(precision)
    out = dict.fromkeys(OP_GROUPS, 0.0)
    for op in ops:
        out[op_group(op.name)] += R.time_bounds(op.flops, op.bytes, d, comp).lower
    return out


def dominant_group(model, hw, phase: str = "decode", **kwargs) -> str:
    """The group of :data:`OP_GROUPS` that takes the most time in one step (see
    :func:`step_time_by_group`, which takes the same keyword arguments)."""
    shares = step_time_by_group(model, hw, phase, **kwargs)
    return max(shares, key=shares.get)


def roofline_ops(model, phase: str, *, batch: int, seq_len: int, precision: str = "bf16",
                 weight_precision: str | None = None, kv_precision: str | None = None,
                 compute: str | None = None) -> list[F.Cost]:
    """One layer's operations as points for a roofline: "QKV+O GEMMs" (the Q, K, V and O
    projections summed), "MLP GEMMs" (gate, up, down summed), attention fused (flash) AND
    unfused (QK^T -> softmax -> PV), the softmax over the unfused score matrix, and RMSNorm.
    Summed GEMMs share one AI because they see the same tokens (rows)."""
    m = get(model)
    kw = dict(weight_precision=weight_precision, kv_precision=kv_precision, compute=compute)
    fused = {o.name: o for o in m.layer_ops(phase, batch, seq_len, precision,
                                            fused_attention=True, **kw)}
    unfused = m.layer_ops(phase, batch, seq_len, precision, fused_attention=False, **kw)
    sq = seq_len if phase == "prefill" else 1
    proj = F.total([fused["Q projection"], fused["K,V projections"], fused["O projection"]],
                   name="QKV+O GEMMs")
    mlp = F.total([fused["gate, up projections"], fused["down projection"]], name="MLP GEMMs")
    attn_unfused = next(o for o in unfused if o.name.startswith("attention"))
    scores = F.softmax(int(batch) * m.heads * sq, int(seq_len), precision)
    return [proj, mlp, fused["attention (fused)"], attn_unfused,
            scores.renamed("softmax (scores)"), fused["RMSNorm (attention)"].renamed("RMSNorm")]


@dataclass(frozen=True)
class ServingTarget:
    """What a deployment must achieve. Decode is judged at the full context (the slowest step
    of a sequence: its KV cache is longest); prefill is one prompt of the whole context at
    batch 1 (time to first token); memory must fit in ``memory_fraction`` of the device."""

    key: str
    label: str
    model: str
    device_class: str
    context: int  # tokens per sequence the design must hold
    min_users: int  # concurrent sequences (the batch)
    min_user_tokens_per_s: float  # decode speed each user sees
    min_total_tokens_per_s: float  # aggregate decode throughput (0: no requirement)
    max_prefill_s: float  # time to first token for a full-context prompt
    memory_fraction: float  # share of device memory the design may use

    def describe(self) -> str:
        article = "an" if self.device_class[:1] in "aeiou" else "a"
        parts = [f"{get(self.model).name} on {article} {self.device_class} device",
                 f"{self.context:,}-token context", f"at least {self.min_users} concurrent "
                 f"user{'s' if self.min_users != 1 else ''}",
                 f"≥ {self.min_user_tokens_per_s:g} tokens/s per user"]
        if self.min_total_tokens_per_s:
            parts.append(f"≥ {self.min_total_tokens_per_s:,.0f} tokens/s in total")
        parts += [f"first token of a full-context prompt within {self.max_prefill_s:g} s",
                  f"memory within {self.memory_fraction:.0%} of the device"]
        return "; ".join(parts) + "."


#: The two targets of Lab 2 (edge and datacenter), checked achievable-but-not-trivially in
#: tests/test_models.py: bf16 everything at batch 1 fails both.
SERVING_TARGETS: dict[str, ServingTarget] = {t.key: t for t in [
    ServingTarget("edge", "Edge: on-device assistant", "llama-3-8b", "edge", 4096, 1, 20.0, 0.0,
                  2.5, 0.9),
    ServingTarget("datacenter", "Datacenter: chat service", "llama-3-8b", "datacenter", 8192, 1,
                  50.0, 4000.0, 0.5, 0.8),
]}


@dataclass(frozen=True)
class DesignCheck:
    """One requirement of a target: did the design meet it, and the numbers behind it."""

    name: str
    passed: bool
    actual: float | str
    required: float | str
    unit: str
    message: str
    relation: str = ">="  # how actual must compare with required: ">=", "<=" or "=="

    def _fmt(self, v) -> str:
        if isinstance(v, str):
            return v
        text = f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"
        unit = self.unit[:-1] if v == 1 and self.unit in ("sequences", "tokens") else self.unit
        return f"{text} {unit}".strip()

    @property
    def actual_text(self) -> str:
        return self._fmt(self.actual)

    @property
    def requirement(self) -> str:
        """e.g. 'needs >= 20 tokens/s', 'needs <= 64.0 GB', 'needs Llama-3-8B'."""
        rel = {">=": "≥ ", "<=": "≤ ", "==": ""}[self.relation]
        return f"needs {rel}{self._fmt(self.required)}"


@dataclass(frozen=True)
class DesignVerdict:
    target: str
    checks: tuple[DesignCheck, ...]

    @property
    def feasible(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def failed(self) -> list[str]:
        return [c.name for c in self.checks if not c.passed]

    def summary(self) -> str:
        if self.feasible:
            return f"Feasible: the design meets every requirement of the {self.target} target."
        return (f"Not feasible for the {self.target} target: fails "
                + ", ".join(self.failed) + ".")

    def as_dict(self) -> dict:
        """Plain JSON for the ledger."""
        return {"target": self.target, "feasible": self.feasible, "checks": [
            {"name": c.name, "passed": c.passed, "actual": c.actual, "required": c.required,
             "relation": c.relation, "unit": c.unit} for c in self.checks]}


def check_design(target, hw, *, model, batch: int, seq_len: int,
                 weight_precision: str = "bf16", kv_precision: str = "bf16",
                 compute: str = "bf16") -> DesignVerdict:
    """Is this serving design feasible for ``target`` (a key of :data:`SERVING_TARGETS` or a
    :class:`ServingTarget`)? Checks model, device class, context, users, memory (at the
    target's memory fraction), per-user and total decode tokens/s at the full context, and the
    prefill time of one full-context prompt. Activations are bf16; ``compute`` picks the peak."""
    t = SERVING_TARGETS.get(str(target).strip().lower()) if isinstance(target, str) else target
    if not isinstance(t, ServingTarget):
        raise KeyError(f"unknown target={target!r}; known: {', '.join(SERVING_TARGETS)}")
    d, m = _hw.get(hw), get(model)
    batch, seq_len = positive_int("batch", batch), positive_int("seq_len", seq_len)
    kw = dict(weight_precision=weight_precision, kv_precision=kv_precision)
    budget = memory_budget(m, d, batch=batch, seq_len=seq_len,
                           usable_fraction=t.memory_fraction, **kw)
    dec = step_bound(m, d, "decode", batch=batch, seq_len=seq_len, compute=compute, **kw)
    pre = step_bound(m, d, "prefill", batch=1, seq_len=seq_len, compute=compute, **kw)
    want_model = get(t.model)
    checks = [
        DesignCheck("model", m.key == want_model.key, m.name, want_model.name, "",
                    f"serves {m.name} (the target is {want_model.name})", "=="),
        DesignCheck("device class", d.device_class == t.device_class, d.device_class,
                    t.device_class, "", f"{d.name} is a {d.device_class} device", "=="),
        DesignCheck("context", seq_len >= t.context, seq_len, t.context, "tokens",
                    f"holds {seq_len:,} tokens per sequence (needs {t.context:,})"),
        DesignCheck("users", batch >= t.min_users, batch, t.min_users, "sequences",
                    f"serves {batch} sequence(s) at once (needs {t.min_users})"),
        DesignCheck("memory", budget.fits, budget.used_bytes / 1e9,
                    budget.capacity_bytes / 1e9, "GB", budget.explain(), "<="),
        DesignCheck("tokens/s per user", 1 / dec.seconds >= t.min_user_tokens_per_s,
                    1 / dec.seconds, t.min_user_tokens_per_s, "tokens/s",
                    f"each user gets at most {1 / dec.seconds:.1f} tokens/s "
                    f"({dec.bound}-bound decode step)"),
    ]
    if t.min_total_tokens_per_s:
        checks.append(DesignCheck(
            "total tokens/s", dec.tokens_per_s >= t.min_total_tokens_per_s, dec.tokens_per_s,
            t.min_total_tokens_per_s, "tokens/s",
            f"all users together get at most {dec.tokens_per_s:,.0f} tokens/s"))
    checks.append(DesignCheck(
        "prefill time", pre.seconds <= t.max_prefill_s, pre.seconds, t.max_prefill_s, "s",
        f"a {seq_len:,}-token prompt takes at least {pre.seconds:.2f} s to prefill "
        f"({pre.bound}-bound)", "<="))
    return DesignVerdict(t.key, tuple(checks))
