"""Sharded work and its communication: tensor-parallel matmuls and serving, data-parallel
training (Lab 6). Collective costs come from :mod:`labs.core.physics.collectives`; model
configs, memory budgets and per-op costs from :mod:`labs.core.physics.models`.

**The third roof.** A chip that must exchange bytes over a link has three resources: its
compute peak π (FLOP/s, dense, per precision), its HBM bandwidth and the link's one-way
bandwidth B. Like HBM intensity, the *link intensity* of an operation is its FLOPs per byte
sent over the link, and the link's ridge is π / B: an operation whose link intensity is below
that ridge is communication-bound. References: jax-ml/scaling-book chapters 3 (sharded
matmuls) and 5 (training parallelism); Shoeybi et al., "Megatron-LM" (2019) for the
row-parallel linear and its all-reduce.

The module is kept as one piece (past 500 lines): tensor-parallel matmuls, serving and
data-parallel training are the same argument (work per chip against the bytes its collective
sends on :func:`collectives.collective_path`), and Lab 6 walks them in that order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from dataclasses import replace as _replace

from labs.core.physics import collectives as _collectives
from labs.core.physics import hardware
from labs.core.physics import models as _models
from labs.core.physics import precision as _precision
from labs.core.physics.validate import flag, instance, positive, positive_int, sequence

__all__ = [
    "ADAM_MIXED_PRECISION_BYTES_PER_PARAM", "BACKWARD_FLOPS_PER_PARAM_TOKEN", "COMMUNICATION", "DPStep", "Diagnosis",
    "FORWARD_FLOPS_PER_PARAM_TOKEN", "MAX_OVERLAP_GAIN", "MEGATRON_PAIR", "RESOURCES",
    "SWIGLU_MLP", "ShardTimes", "ShardedMatmul", "TPServing", "TP_DEGREES",
    "TRAIN_FLOPS_PER_PARAM_TOKEN", "alpha_where_collectives_equal_matmuls", "best_tp_degree",
    "comm_bound_tokens", "dp_critical_batch", "dp_step", "first_comm_bound_degree",
    "gradient_bytes", "link_ridge",
    "shard_times", "sharded_matmul", "tp_critical_shard", "tp_diagnosis", "tp_scaling",
    "tp_serving"
]

COMMUNICATION = "communication-bound"
RESOURCES = ("compute", "HBM", "link")
#: Tensor-parallel degrees the serving instrument offers.
TP_DEGREES = (1, 2, 4, 8, 16)
#: Training FLOPs per parameter per token: 2 forward + 4 backward (Kaplan et al., "Scaling
#: Laws for Neural Language Models", 2020; jax-ml/scaling-book chapter 5).
TRAIN_FLOPS_PER_PARAM_TOKEN = 6
FORWARD_FLOPS_PER_PARAM_TOKEN = 2
BACKWARD_FLOPS_PER_PARAM_TOKEN = 4  # the only pass a gradient all-reduce can hide behind
#: Bytes per parameter of mixed-precision training with Adam, unsharded: bf16 weights (2) and
#: gradients (2), fp32 master weights (4) and Adam's two fp32 moments (4 + 4): "2Ψ + 2Ψ + KΨ"
#: with K = 12 (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion
#: Parameter Models", SC 2020, section 3.1).
ADAM_MIXED_PRECISION_BYTES_PER_PARAM = 16
#: Matmuls per all-reduce in a Megatron block: a column-parallel matmul feeds a row-parallel
#: one, and only the second's partial outputs are summed (Shoeybi et al. 2019). A GeLU MLP or
#: attention's QKV (fused) and O projections: 2; Llama's SwiGLU MLP (gate, up; down): 3.
MEGATRON_PAIR = 2
SWIGLU_MLP = 3


def _peak(hw, precision: str, arg: str = "precision") -> float:
    """Dense peak in FLOP/s; errors name ``hw`` and the caller's precision argument."""
    return hardware.get(hw, arg="hw").peak_tflops(precision, arg=arg) * 1e12


def link_ridge(hw, precision: str, link, n: int = 2, *,
               nics_per_node: int | None = None) -> float:
    """FLOP per link byte where the link roof meets the compute roof: π / B (dense peak of
    ``precision``; B the one-way bandwidth of the link within a node, or beyond one the
    all-reduce bus bandwidth of NCCL's flat Ring on :func:`collectives.collective_path`).
    A chip and a link that cannot be paired raise ValueError (:func:`collectives.check_pair`)."""
    _collectives.check_pair(hardware.get(hw, arg="hw"), link)
    path = _collectives.collective_path(link, n, nics_per_node=nics_per_node)
    return _peak(hw, precision) / (path.bus_gbs("all-reduce") * 1e9)


# --- a tensor-parallel (row-parallel) matmul ----------------------------------------------------

@dataclass(frozen=True)
class ShardedMatmul:
    """y[T, N] = x[T, K] · W[K, N] with W split along K over ``n`` chips (Megatron's
    row-parallel linear): each chip multiplies its K/n slice, then the partial outputs are
    summed by an all-reduce (or a reduce-scatter that leaves each chip N/n columns).
    FLOPs and bytes are per chip.

    ``matmuls`` > 1: a Megatron block, ``matmuls - 1`` column-parallel matmuls x[T, N] ·
    W[N, K/n] (each chip its K/n columns, no communication) feeding the row-parallel one,
    with ONE all-reduce for the block: 2 for a GeLU MLP or attention (QKV, O), 3 for Llama's
    SwiGLU MLP (gate and up, then down). K is then the hidden size F, N the model width."""

    tokens: int
    k: int
    n_out: int
    n: int
    storage: str  # format of x, W and y (bytes moved)
    compute: str  # precision whose peak applies
    op: str  # the collective: "all-reduce" or "reduce-scatter"
    matmuls: int = 1  # matmuls per collective (1: one row-parallel matmul; see the docstring)

    def at_tokens(self, tokens) -> "ShardedMatmul":
        """The same sharded block at another batch of ``tokens`` (a batch sweep)."""
        return _replace(self, tokens=positive_int("tokens", tokens))

    @property
    def bytes_per_element(self) -> float:
        return _precision.bytes_per_element(self.storage)

    @property
    def k_shard(self) -> float:
        return self.k / self.n

    @property
    def flops(self) -> float:
        return self.matmuls * 2.0 * self.tokens * self.k * self.n_out / self.n

    @property
    def hbm_bytes(self) -> float:
        """Compulsory traffic. One matmul: x slice read, W slice read, the partial y written.
        A block: x[T, N] read, every weight slice read, each column-parallel output [T, K/n]
        written once and read once (the activation fused into its neighbours), y written."""
        b, t, ks = self.bytes_per_element, self.tokens, self.k / self.n
        if self.matmuls == 1:
            return b * (t * ks + self.k * self.n_out / self.n + t * self.n_out)
        return b * (t * self.n_out + self.matmuls * ks * self.n_out
                    + 2 * (self.matmuls - 1) * t * ks + t * self.n_out)

    @property
    def message_bytes(self) -> float:
        """The collective's nbytes (nccl-tests convention): the T × N partial output."""
        return self.tokens * self.n_out * self.bytes_per_element

    @property
    def link_bytes(self) -> float:
        """Bytes each chip sends over the link in a ring: bus factor × message."""
        return _collectives.bus_factor(self.op, self.n) * self.message_bytes

    @property
    def ai_hbm(self) -> float:
        return self.flops / self.hbm_bytes

    @property
    def ai_link(self) -> float:
        """FLOPs per byte sent over the link: m × 2K / (n × factor × b), whatever T and N."""
        return self.flops / self.link_bytes


def _matmuls(matmuls) -> int:
    m = positive_int("matmuls", matmuls)
    if m > 3:
        raise ValueError(f"matmuls must be 1 (one row-parallel matmul), 2 (a Megatron "
                         f"column + row pair) or 3 (a SwiGLU MLP), got {matmuls!r}")
    return m


def sharded_matmul(tokens, k, n_out, n, storage: str = "bf16", *, op: str = "all-reduce",
                   compute: str | None = None, matmuls: int = 1) -> ShardedMatmul:
    """A row-parallel matmul over ``n`` >= 2 chips, or with ``matmuls`` = 2 or 3 the Megatron
    block that ends in it (see :class:`ShardedMatmul`)."""
    o = _collectives.op_name(op)
    if o == "all-gather":
        raise ValueError("op must be 'all-reduce' or 'reduce-scatter' for a row-parallel "
                         "matmul (its partial outputs are summed), got 'all-gather'")
    nn = _collectives.participant_count(n)
    k, n_out = positive_int("k", k), positive_int("n_out", n_out)
    if k % nn:
        raise ValueError(f"k={k} does not split evenly over n={nn} chips")
    return ShardedMatmul(positive_int("tokens", tokens), k, n_out, nn,
                         _precision.get(storage, arg="storage").key,
                         _precision.compute_precision(storage, compute), o, _matmuls(matmuls))


@dataclass(frozen=True)
class ShardTimes:
    """Seconds per chip on each resource; the binding one is the largest."""

    t_compute: float
    t_hbm: float
    t_link: float  # the collective, latency included

    @property
    def times(self) -> dict:
        return dict(zip(RESOURCES, (self.t_compute, self.t_hbm, self.t_link)))

    @property
    def binding(self) -> str:
        """"compute", "HBM" or "link": the roof this layer sits under."""
        t = self.times
        return max(t, key=t.get)

    @property
    def regime(self) -> str:
        return {"compute": "compute-bound", "HBM": "memory-bound",
                "link": COMMUNICATION}[self.binding]

    @property
    def lower(self) -> float:
        """Perfect overlap of all three (the roofline bound)."""
        return max(self.t_compute, self.t_hbm, self.t_link)

    @property
    def serial(self) -> float:
        """The collective after the matmul (it needs the matmul's output)."""
        return max(self.t_compute, self.t_hbm) + self.t_link


def shard_times(mm: ShardedMatmul, hw, link, algorithm: str = "ring") -> ShardTimes:
    """Per-chip seconds of a :class:`ShardedMatmul` on a device and a link."""
    mm = instance("mm", mm, ShardedMatmul, "a ShardedMatmul (sharding.sharded_matmul)")
    d = hardware.get(hw, arg="hw")
    _collectives.check_pair(d, link)
    return ShardTimes(mm.flops / _peak(d, mm.compute), mm.hbm_bytes / (d.bandwidth_gbs * 1e9),
                      _collectives.link_time(mm.op, mm.message_bytes, mm.n, link, algorithm))


def tp_critical_shard(hw, precision: str, link, n, *, op: str = "all-reduce",
                      storage: str | None = None, matmuls: int = 1) -> float:
    """The per-chip slice K/n of the contracted dimension at which the layer's link intensity
    equals the link ridge. Below it the layer is communication-bound however large the batch
    (T cancels): K/n* = factor × b × π / (2 m B), i.e. (n-1)/n × b × π / (m B) for an
    all-reduce in one node, with m = ``matmuls`` per collective (1: one row-parallel matmul;
    2: a Megatron column + row pair; 3: a SwiGLU MLP, where K/n is the hidden slice F/n).
    Beyond a node, factor / B is NCCL's flat Ring's time per byte on the path."""
    nn = _collectives.participant_count(n)
    m = _matmuls(matmuls)
    b = (_precision.bytes_per_element(precision, arg="precision") if storage is None
         else _precision.bytes_per_element(storage, arg="storage"))
    _collectives.check_pair(hardware.get(hw, arg="hw"), link)
    spb = _collectives.collective_path(link, nn).seconds_per_byte(op)
    return spb * _peak(hw, precision) * b / (2 * m)


def comm_bound_tokens(k, n_out, n, hw, link, storage: str = "bf16", *, op: str = "all-reduce",
                      compute: str | None = None, algorithm: str = "ring",
                      matmuls: int = 1) -> tuple[float, float] | None:
    """The range of batch sizes T (tokens, >= 1) over which the link is the binding resource,
    as (lo, hi) with hi = inf when it stays binding; None when it never binds.

    Every per-chip time is linear in T: compute f·T, HBM h0 + h1·T (the weight slice is read
    once), link L + c·T (L = the collective's latency term), so the link binds on an interval.
    """
    probe = sharded_matmul(1, k, n_out, n, storage, op=op, compute=compute, matmuls=matmuls)
    two = sharded_matmul(2, k, n_out, n, storage, op=op, compute=compute, matmuls=matmuls)
    d = hardware.get(hw, arg="hw")
    _collectives.check_pair(d, link)
    _collectives.algorithm_name(probe.op, algorithm)
    path = _collectives.collective_path(link, probe.n)
    bw = d.bandwidth_gbs * 1e9
    f = probe.flops / _peak(d, probe.compute)
    h1 = (two.hbm_bytes - probe.hbm_bytes) / bw
    h0 = probe.hbm_bytes / bw - h1
    big_l = path.latency(probe.op, algorithm)
    c = path.seconds_per_byte(probe.op, algorithm) * probe.message_bytes
    lo, hi = 1.0, math.inf
    for slope, const in ((c - f, big_l), (c - h1, big_l - h0)):  # link > other: slope·T > -const
        if slope > 0:
            lo = max(lo, -const / slope)
        elif slope < 0:
            hi = min(hi, -const / slope)
        elif const <= 0:
            return None
    return (lo, hi) if lo < hi else None


# --- serving a model with tensor parallelism ----------------------------------------------------

@dataclass(frozen=True)
class TPServing:
    """One decode step of a model sharded ``n`` ways (tensor parallel), per GPU."""

    model: str
    device: str
    link: _collectives.Link  # the link the collectives run at (collectives.ring_link: NCCL's Ring past a node)
    n: int
    batch: int
    seq_len: int
    budget: _models.MemoryBudget  # per GPU
    flops: float  # per GPU per step
    bytes: float  # HBM bytes per GPU per step
    collectives: int  # collectives per step
    comm_bytes: float  # bytes each GPU sends per step
    t_compute: float
    t_hbm: float
    t_comm: float

    @property
    def fits(self) -> bool:
        return self.budget.fits

    @property
    def t_matmuls(self) -> float:
        """The matmuls' time per decode step: their roofline bound, max(compute, HBM)."""
        return max(self.t_compute, self.t_hbm)

    @property
    def t_step(self) -> float:
        """Matmuls, then their all-reduce: the next layer needs its result, so a decode step
        cannot hide the communication (max of compute and HBM, plus communication)."""
        return self.t_matmuls + self.t_comm

    @property
    def tokens_per_s(self) -> float:
        return self.batch / self.t_step

    @property
    def user_tokens_per_s(self) -> float:
        return 1.0 / self.t_step

    @property
    def bound(self) -> str:
        if self.t_comm > self.t_matmuls:
            return COMMUNICATION
        return "compute-bound" if self.t_compute >= self.t_hbm else "memory-bound"


def tp_serving(model, hw, link, n, *, batch, seq_len, weight_precision: str = "bf16",
               kv_precision: str = "bf16", compute: str = "bf16", act_precision: str = "bf16",
               algorithm: str = "ring") -> TPServing:
    """Decode with the model split ``n`` ways (Megatron-style tensor parallelism).

    Per GPU: weights / n; the KV cache / min(n, KV heads) (beyond that, KV heads are
    replicated); activations whole (STATED: the residual stream is replicated, the budget of
    :func:`models.memory_budget` kept as is). Per step: weight GEMMs' FLOPs and bytes / n,
    attention's FLOPs / min(n, heads) and bytes / min(n, KV heads), norms and elementwise ops
    replicated. Communication: 2 all-reduces per layer (after the O and down projections)
    plus one for the vocab-parallel embedding, each of batch × d_model activations, and one
    all-gather of batch × vocab logits."""
    m, d = _models.get(model, arg="model"), hardware.get(hw, arg="hw")
    n = positive_int("n", n)
    batch, seq_len = positive_int("batch", batch), positive_int("seq_len", seq_len)
    _collectives.algorithm_name("all-reduce", algorithm)  # checked even where n = 1 sends nothing
    _collectives.check_pair(d, link)
    lk = _collectives.ring_link(link, max(n, 2))
    full = _models.memory_budget(m, d, batch=batch, seq_len=seq_len,
                                 weight_precision=weight_precision, kv_precision=kv_precision,
                                 act_precision=act_precision)
    kv_split = min(n, m.kv_heads)
    budget = _models.MemoryBudget(full.capacity_bytes, {
        "weights": full.terms["weights"] / n, "KV cache": full.terms["KV cache"] / kv_split,
        "activations": full.terms["activations"]})
    split = {_models.OP_GROUPS[0]: (n, n), _models.OP_GROUPS[1]: (min(n, m.heads), kv_split)}
    flops = bytes_ = 0.0
    for op in _models.step_ops(m, "decode", batch, seq_len, act_precision,
                               weight_precision=weight_precision, kv_precision=kv_precision,
                               compute=compute):
        f_div, b_div = split.get(_models.op_group(op.name), (1, 1))
        flops += op.flops / f_div
        bytes_ += op.bytes / b_div
    act = _precision.bytes_per_element(act_precision, arg="act_precision")
    n_ar, ar_bytes, ag_bytes = 2 * m.layers + 1, batch * m.d_model * act, batch * m.vocab * act
    if n == 1:
        t_comm = comm = 0.0
        count = 0
    else:
        t_comm = (n_ar * _collectives.link_time("all-reduce", ar_bytes, n, link, algorithm)
                  + _collectives.link_time("all-gather", ag_bytes, n, link))
        comm = (n_ar * _collectives.bus_factor("all-reduce", n) * ar_bytes
                + _collectives.bus_factor("all-gather", n) * ag_bytes)
        count = n_ar + 1
    return TPServing(m.key, d.key, lk, n, batch, seq_len, budget, flops, bytes_, count, comm,
                     flops / _peak(d, compute, "compute"), bytes_ / (d.bandwidth_gbs * 1e9),
                     t_comm)


def tp_scaling(model, hw, link, degrees=TP_DEGREES, **kwargs) -> list[TPServing]:
    """:func:`tp_serving` at each degree (same keyword arguments)."""
    degrees = [positive_int(f"degrees[{i}]", d)
               for i, d in enumerate(sequence("degrees", degrees))]
    return [tp_serving(model, hw, link, n, **kwargs) for n in degrees]


def best_tp_degree(model, hw, link, degrees=TP_DEGREES, **kwargs) -> int | None:
    """The degree with the most tokens/s among those whose per-GPU budget fits (the smallest
    on a tie); None when none fits."""
    ok = [s for s in tp_scaling(model, hw, link, degrees, **kwargs) if s.fits]
    return max(ok, key=lambda s: (s.tokens_per_s, -s.n)).n if ok else None


def alpha_where_collectives_equal_matmuls(model, hw, link, n, *, batch, seq_len,
                                          **kwargs) -> float | None:
    """The per-step latency α (seconds) of ``link`` at which a decode step sharded ``n`` ways
    spends as long in its collectives as in its matmuls (keyword arguments of
    :func:`tp_serving`); the scale-out NIC's α is kept. The collectives' time is linear in α
    (α x the steps of the node level, summed over the step's collectives, plus the rest), so
    α* = (max(compute, HBM) - t_comm at α = 0) / (steps per step). None where the
    collectives outlast the matmuls even at α = 0, or where ``n`` < 2 sends nothing. Used to
    say how far Prediction 4's answer rests on the stated α."""
    lk = _collectives.get_link(link)
    if positive_int("n", n) < 2:
        return None
    kwargs.update(batch=batch, seq_len=seq_len)
    zero = tp_serving(model, hw, _replace(lk, latency_us=0.0), n, **kwargs)
    one = tp_serving(model, hw, _replace(lk, latency_us=1.0), n, **kwargs)
    per_s = (one.t_comm - zero.t_comm) / 1e-6  # collectives' seconds per second of α
    room = max(zero.t_compute, zero.t_hbm) - zero.t_comm
    return room / per_s if room > 0 and per_s > 0 else None


def first_comm_bound_degree(model, hw, link, degrees=TP_DEGREES, **kwargs) -> int:
    """The smallest degree whose per-GPU budget fits and whose decode step is
    communication-bound (its collectives take longer than its compute and HBM time); 0 when
    none of ``degrees`` is."""
    return next((s.n for s in tp_scaling(model, hw, link, degrees, **kwargs)
                 if s.fits and s.bound == COMMUNICATION), 0)


@dataclass(frozen=True)
class Diagnosis:
    """What is wrong with a serving design, for the failure states: ``kind`` is "oom",
    "comm" (adding GPUs made it slower) or "ok"; ``message`` says how to back out."""

    kind: str
    message: str


def tp_diagnosis(rows: list[TPServing], n: int) -> Diagnosis:
    """The design at degree ``n`` among ``rows`` (one :func:`tp_scaling`): out of memory, or
    communication-bound and slower than the largest smaller degree that fits, or fine."""
    rows = sequence("rows", rows)
    for i, r in enumerate(rows):
        instance(f"rows[{i}]", r, TPServing, "a TPServing (one row of sharding.tp_scaling)")
    n = positive_int("n", n)
    by_n = {s.n: s for s in rows}
    if n not in by_n:
        raise ValueError(f"n={n} is not among the degrees of rows ({sorted(by_n)})")
    s = by_n[n]
    fitting = [r.n for r in rows if r.fits]
    if not s.fits:
        more = min((k for k in fitting if k > n), default=None)
        return Diagnosis("oom", f"Out of memory: each GPU needs {s.budget.used_bytes / 1e9:.1f} "
                         f"GB of {s.budget.capacity_bytes / 1e9:.1f} GB usable. " + (
                             f"Back out: shard over more GPUs (n = {more} fits)."
                             if more else "No degree offered fits: shorten the context, "
                             "lower the batch or store the weights in fewer bits."))
    smaller = [r for r in rows if r.fits and r.n < n]
    prev = max(smaller, key=lambda r: r.n) if smaller else None
    if s.bound == COMMUNICATION and prev is not None and prev.tokens_per_s > s.tokens_per_s:
        return Diagnosis("comm", f"Communication dominates: {s.t_comm * 1e3:.2f} ms of each "
                         f"{s.t_step * 1e3:.2f} ms step is spent in {s.collectives} "
                         f"collectives, and {s.n} GPUs give fewer tokens/s than {prev.n} "
                         f"({_two_rates(s.tokens_per_s, prev.tokens_per_s)}). Back out: "
                         "use fewer GPUs or a faster link.")
    return Diagnosis("ok", f"{s.tokens_per_s:,.0f} tokens/s ({s.bound}).")


# --- data-parallel training -------------------------------------------------------------------

@dataclass(frozen=True)
class DPStep:
    """One data-parallel training step per chip: forward, backward, and the gradient
    all-reduce, which can overlap only the backward pass (buckets of gradients are all-reduced
    as the backward pass produces them; the forward pass needs the updated weights first:
    jax-ml/scaling-book ch. 5, 'How to Think About GPUs')."""

    params: float
    n: int
    tokens_per_chip: int
    t_fwd: float  # 2 P T / π: the roofline bound at the dense peak
    t_bwd: float  # 4 P T / π
    t_comm: float  # all-reduce of P gradients
    overlap: bool

    @property
    def t_compute(self) -> float:
        """Forward and backward: 6 P T / π."""
        return self.t_fwd + self.t_bwd

    @property
    def t_step(self) -> float:
        """With overlap: t_fwd + max(t_bwd, t_comm); without: the sum of all three."""
        if self.overlap:
            return self.t_fwd + max(self.t_bwd, self.t_comm)
        return self.t_fwd + self.t_bwd + self.t_comm

    @property
    def overlap_gain(self) -> float:
        """Step without overlap / step with it: at most (t_fwd + 2 t_bwd) / (t_fwd + t_bwd) =
        5/3 (when t_comm = t_bwd), 1.5 when t_comm equals the whole compute."""
        return ((self.t_fwd + self.t_bwd + self.t_comm)
                / (self.t_fwd + max(self.t_bwd, self.t_comm)))

    @property
    def t_exposed(self) -> float:
        """Seconds per step the chip waits for the all-reduce (no computation hides them):
        overlapped, max(0, t_comm - t_bwd), since the forward pass cannot hide it (it needs the
        updated weights); without overlap, all of t_comm. A model that hides the all-reduce
        behind the whole step would say max(0, t_comm - t_fwd - t_bwd): too little."""
        return self.t_step - self.t_compute

    @property
    def t_exposed_behind_whole_step(self) -> float:
        """The wait a model that hides the all-reduce behind the whole step (forward and
        backward) would say: max(0, t_comm - t_fwd - t_bwd). Too little (the forward pass needs
        the updated weights); a lesson sets it beside :attr:`t_exposed`."""
        return max(0.0, self.t_comm - self.t_compute)

    @property
    def comm_bound(self) -> bool:
        """The all-reduce outlasts the backward pass: even overlapped, the chip waits."""
        return self.t_comm > self.t_bwd

    @property
    def compute_fraction(self) -> float:
        """Share of the step the chip spends computing (1 = never waits for the link)."""
        return self.t_compute / self.t_step


#: The most overlapping the all-reduce with the backward pass can buy: (2 + 4 + 4) / (2 + 4).
MAX_OVERLAP_GAIN = (FORWARD_FLOPS_PER_PARAM_TOKEN + 2 * BACKWARD_FLOPS_PER_PARAM_TOKEN) / (
    FORWARD_FLOPS_PER_PARAM_TOKEN + BACKWARD_FLOPS_PER_PARAM_TOKEN)


def _params(model_or_params) -> float:
    if isinstance(model_or_params, (str, _models.ModelConfig)):
        return float(_models.get(model_or_params, arg="model_or_params").params)
    return positive("model_or_params", model_or_params)


def gradient_bytes(model_or_params, grad_bytes: float = 2) -> float:
    """Bytes of a model's gradients (a key of models.MODELS, a config or a parameter count),
    ``grad_bytes`` bytes per parameter (2: bf16): what a data-parallel step all-reduces."""
    return _params(model_or_params) * positive("grad_bytes", grad_bytes)


def dp_step(model_or_params, n, tokens_per_chip, hw, precision: str, link, *,
            grad_bytes: float = 2, overlap: bool = True, algorithm: str = "ring",
            nics_per_node: int | None = None, nic=None) -> DPStep:
    """A data-parallel step of a model (a key of models.MODELS or a parameter count) on ``n``
    chips, each with ``tokens_per_chip`` tokens: gradients of ``grad_bytes`` bytes per
    parameter (2: bf16) all-reduced on the :func:`collectives.collective_path` of ``n`` chips
    with ``algorithm`` (beyond a node NCCL's flat Ring by default, or ``"hierarchical"``;
    ``nics_per_node`` NICs of ``nic`` per node, default one InfiniBand NDR NIC per chip)."""
    p = _params(model_or_params)
    nn = _collectives.participant_count(n)
    t = positive_int("tokens_per_chip", tokens_per_chip)
    nbytes = gradient_bytes(p, grad_bytes)
    ov = flag("overlap", overlap)
    _collectives.check_pair(hardware.get(hw, arg="hw"), link)
    peak = _peak(hw, precision)
    return DPStep(p, nn, t, FORWARD_FLOPS_PER_PARAM_TOKEN * p * t / peak,
                  BACKWARD_FLOPS_PER_PARAM_TOKEN * p * t / peak,
                  _collectives.link_time("all-reduce", nbytes, nn, link, algorithm,
                              nics_per_node=nics_per_node, nic=nic), ov)


def dp_critical_batch(hw, precision: str, link, n, *, grad_bytes: float = 2,
                      nics_per_node: int | None = None, nic=None,
                      algorithm: str = "ring") -> float:
    """Tokens per chip at which the backward pass (the only part the gradient all-reduce can
    hide behind) takes as long as the all-reduce's bandwidth term: 4 P T / π = P g × c, with c
    the path's seconds per byte (2(n-1)/n / B in one ring; across nodes with NCCL's flat Ring,
    2(n-1)/n over the slower of the node's link and its NICs together), so T* = g × c × π / 4,
    i.e. (n-1)/n × g/2 × π/B in a node. P cancels; below T* the step waits for the gradients
    even with perfect overlap (jax-ml/scaling-book ch. 5 and 'How to Think About GPUs':
    per-GPU batch > C / W_collective, ~2,475 tokens across H100 nodes)."""
    nn = _collectives.participant_count(n)
    g = positive("grad_bytes", grad_bytes)
    _collectives.check_pair(hardware.get(hw, arg="hw"), link)
    spb = _collectives.collective_path(link, nn, nics_per_node=nics_per_node, nic=nic).seconds_per_byte(
        "all-reduce", algorithm)
    return g * spb * _peak(hw, precision) / BACKWARD_FLOPS_PER_PARAM_TOKEN


def _two_rates(a: float, b: float) -> str:
    """"35.2 vs 35.4": two rates with as many decimals as it takes to show they differ
    (whole numbers would print "35 vs 35" for a loss the sentence just named)."""
    for decimals in range(4):
        left, right = f"{a:,.{decimals}f}", f"{b:,.{decimals}f}"
        if left != right:
            break
    return f"{left} vs {right}"
