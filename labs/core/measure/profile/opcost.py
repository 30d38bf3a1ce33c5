"""What one aten operator call costs on the roofline: its FLOPs, its compulsory bytes and the
operator type it belongs to. Used by :mod:`labs.core.measure.profile.profiler` on every call it sees.

torch is imported lazily (only the profiler calls these, with torch objects in hand).

FLOPs, in order of preference (``flops_source`` says which applied):

* ``"flop_counter"``: the formula ``torch.utils.flop_counter`` registers for the operator
  (matmuls, attention kernels, convolutions): exactly what ``FlopCounterMode`` reports.
  Only these rows add up to FlopCounterMode's total (``Profile.counted_flops``).
* ``"estimate"``: FlopCounterMode counts no elementwise work. So the roofline can place
  norms, activations and adds, they get the per-element conventions of
  ``labs.core.physics.formulas`` (RMSNorm 4, LayerNorm 8, GELU 8, softmax 5, SiLU 4 = the
  SiLU·up convention 5 less its multiply, everything else 1 FLOP per element; reductions per
  input element), and torch's CPU attention kernel, which the counter does not register, gets
  the counter's own SDPA formula (``sdpa_flop_count``) times the share of (query, key) pairs
  a causal mask keeps when ``is_causal=True`` (:func:`causal_fraction`: that kernel skips the
  masked key blocks). The CUDA SDPA kernels (flash, memory-efficient, cuDNN) ARE registered,
  but the counter's formula ignores ``is_causal``: called causal, their rows get the same
  causal share of its count, labelled an estimate (the counter's own number stays in the
  row's ``counter_flops`` and in ``Profile.counted_flops``), and matrix-vector products
  (``mv``, ``addmv``, ``dot``), which it does not register either, get 2 FLOPs per matrix
  element. Labelled, never added to the counter's total.
* ``"none"``: operators that only move or select data (copies, concatenation, indexing,
  embedding lookups, fills, views): 0 FLOPs, stated.
* ``"unknown"``: anything else. ``flops`` is None and the row says "FLOPs unknown": never a
  silent zero, never a crash.

Compulsory bytes are a LOWER BOUND on the data the operator must touch: every distinct input
tensor read once and every output written once (element count x element size; an expanded
input, stride 0, is read once per distinct element, at most its storage's size). It ignores
re-reads (tiling, cache misses), temporaries inside the operator, padding and alignment, and
it does not know which memory level serves the bytes: an operand still in a cache from the
previous operator costs less than bytes / DRAM bandwidth, so a small operator can beat the
memory roof. Special cases, so the bound stays a lower bound: views (and ``_unsafe_view``,
``detach``, ``alias``) move nothing; ``copy_``, ``fill_``, ``zero_`` and ``out=`` arguments are
written, not read; lookups (``embedding``, ``index_select``, ``index``, ``gather``) read only
the gathered rows (the output's size) of their source; in-place scatters (``index_put_``,
``index_copy_``, ``scatter_`` ...) touch only the positions written (the source's size).
"""

from __future__ import annotations

from labs.core.physics import models as _models

__all__ = [
    "ATTENTION", "CONVOLUTION", "CONVOLUTIONS", "DATA_MOVEMENT", "ELEMENTWISE", "ESTIMATE",
    "FLOP_COUNTER", "FUSED_ATTENTION", "GEMMS", "NONE", "OP_TYPES", "OTHER", "OTHER_GEMMS",
    "OVERHEAD", "UNKNOWN", "VIEWS", "VIEW_LIKE", "WEIGHT_GEMMS", "base_name", "causal_fraction",
    "compulsory_bytes", "counter_flops", "data_dtype", "flops", "is_view", "on_vector_units",
    "op_type", "precision_of", "shapes", "tensors_in"
]

#: Operator types a profile aggregates by. The first three are ``models.OP_GROUPS``, so the
#: roofline's prediction (physics) and the measurement use the same words.
WEIGHT_GEMMS, ATTENTION, ELEMENTWISE = _models.OP_GROUPS
DATA_MOVEMENT = "data movement"
VIEWS = "views (no data moved)"
CONVOLUTION = "convolution"
OTHER_GEMMS = "other GEMMs"
OTHER = "other"
OVERHEAD = "overhead (outside operators)"
OP_TYPES = (WEIGHT_GEMMS, ATTENTION, ELEMENTWISE, DATA_MOVEMENT, CONVOLUTION, OTHER_GEMMS,
            VIEWS, OTHER, OVERHEAD)

FLOP_COUNTER, ESTIMATE, NONE, UNKNOWN = "flop_counter", "estimate", "none", "unknown"

GEMMS = frozenset({"mm", "addmm", "bmm", "baddbmm", "addbmm", "matmul", "linear", "mv", "addmv",
                   "dot", "vdot", "_scaled_mm", "_int_mm", "einsum"})
CONVOLUTIONS = frozenset({"convolution", "_convolution", "convolution_overrideable",
                          "cudnn_convolution", "_slow_conv2d_forward", "convolution_backward",
                          "mkldnn_convolution", "conv1d", "conv2d", "conv3d"})
FUSED_ATTENTION = frozenset({
    "scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "_flash_attention_forward",
    "_efficient_attention_forward", "_scaled_dot_product_attention_math",
    "_scaled_dot_product_flash_attention_for_cpu_backward",
    "_scaled_dot_product_flash_attention_backward",
    "_scaled_dot_product_efficient_attention_backward"})
VIEW_LIKE = frozenset({"_unsafe_view", "detach", "detach_", "alias", "lift_fresh",
                       "_reshape_alias", "view", "_local_scalar_dense"})

#: FLOPs per element (of the output; reductions: of the input) for ops FlopCounterMode skips.
_PER_ELEMENT = {"native_layer_norm": 8, "layer_norm": 8, "_fused_rms_norm": 4, "rms_norm": 4,
                "gelu": 8, "_softmax": 5, "softmax": 5, "_log_softmax": 5, "log_softmax": 5,
                "silu": 4, "sigmoid": 3, "_safe_softmax": 5}
_ONE_PER_ELEMENT = frozenset({
    "add", "add_", "sub", "sub_", "mul", "mul_", "div", "div_", "neg", "rsub", "abs", "relu",
    "relu_", "maximum", "minimum", "clamp", "clamp_min", "clamp_max", "exp", "exp_", "log",
    "rsqrt", "sqrt", "pow", "reciprocal", "sin", "cos", "tanh", "erf", "addcmul", "addcdiv",
    "lerp", "threshold", "eq", "ne", "lt", "le", "gt", "ge", "sign", "square", "hardtanh",
    "leaky_relu", "silu_", "gelu_", "sigmoid_", "elu", "softplus", "mish", "floor", "ceil",
    "round", "fmod", "remainder", "logical_not", "bitwise_not"})
_REDUCTIONS = frozenset({"mean", "sum", "amax", "amin", "max", "min", "var", "std", "prod",
                         "norm", "linalg_vector_norm", "var_mean", "std_mean", "logsumexp",
                         "argmax", "argmin", "any", "all"})
_DATA_MOVEMENT = frozenset({
    "clone", "copy_", "_to_copy", "to", "contiguous", "cat", "stack", "index", "index_select",
    "embedding", "gather", "take", "scatter", "scatter_", "index_put", "index_put_",
    "index_copy", "index_copy_", "index_fill", "index_fill_", "masked_fill", "masked_fill_",
    "where", "fill", "fill_", "zero_", "zeros", "zeros_like", "ones", "ones_like", "empty",
    "empty_like", "empty_strided", "full", "full_like", "new_zeros", "new_empty", "new_full",
    "new_ones", "arange", "triu", "tril", "constant_pad_nd", "slice_scatter", "select_scatter",
    "repeat", "repeat_interleave", "flip", "roll", "expand_copy", "split_with_sizes_copy",
    "_copy_from", "_copy_from_and_resize", "randn", "rand", "randint", "normal_", "uniform_",
    "bernoulli_", "masked_scatter_", "embedding_dense_backward", "scalar_tensor", "lift_fresh_copy",
    "permute_copy", "transpose_copy", "view_copy", "unsqueeze_copy", "_unsafe_index"})
#: Arguments an operator only writes (never reads), by operator name.
_WRITE_ONLY = {"copy_": ("self",), "fill_": ("self",), "zero_": ("self",),
               "normal_": ("self",), "uniform_": ("self",), "random_": ("self",),
               "bernoulli_": ("self",), "_copy_from": ("dst",)}
#: Lookups: the source argument read only where the output gathers from it.
_GATHERS = {"embedding": "weight", "index_select": "self", "index": "self", "gather": "self",
            "take": "self", "_unsafe_index": "self"}
#: In-place scatters: only the source's size of ``self`` is touched.
_SCATTERS = {"index_put_": "values", "index_copy_": "source", "index_add_": "source",
             "scatter_": "src", "scatter_add_": "src", "scatter_reduce_": "src",
             "masked_scatter_": "source", "index_fill_": "index"}


def base_name(func) -> str:
    """'aten.addmm.default' -> 'addmm'."""
    return str(func._overloadpacket).split(".")[-1]


def tensors_in(obj) -> list:
    """Every torch tensor inside ``obj`` (nested tuples, lists and dicts flattened)."""
    import torch
    from torch.utils._pytree import tree_flatten

    return [t for t in tree_flatten(obj)[0] if isinstance(t, torch.Tensor)]


def _nbytes(t) -> int:
    return t.numel() * t.element_size()


def _read_nbytes(t) -> int:
    """Bytes a read of ``t`` reaches: the elements of its non-broadcast dimensions (an
    expanded view, stride 0, repeats the same elements: they are read once), capped at its
    storage's size. ``x[:, None].expand(...)`` of a 512 KB cache slice reads 512 KB, not the
    expanded numel x element size."""
    try:
        n = 1
        for size, stride in zip(t.shape, t.stride()):
            if size == 0:
                return 0
            if stride != 0:
                n *= size
        reached = n * t.element_size()
    except Exception:  # no strides (sparse, nested, some subclasses): the plain count
        return _nbytes(t)
    try:
        return min(reached, t.untyped_storage().nbytes())
    except Exception:  # tensors without storage (meta, some subclasses): no cap
        return reached


def _key(t):
    try:
        ptr = t.untyped_storage().data_ptr()
    except Exception:  # tensors without storage (meta, some subclasses): compare by identity
        ptr = id(t)
    return (ptr, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.dtype)


def _arguments(func, args, kwargs) -> list[tuple]:
    """[(schema argument, value)] for the values given, positional then by name."""
    schema = func._schema.arguments
    out = list(zip(schema, args))
    named = {a.name: a for a in schema}
    out += [(named[k], v) for k, v in kwargs.items() if k in named]
    return out


def is_view(func) -> bool:
    return bool(getattr(func, "is_view", False)) or base_name(func) in VIEW_LIKE


def compulsory_bytes(func, args, kwargs, out) -> tuple[int, int]:
    """(bytes read, bytes written) of one call: the module docstring's lower bound."""
    name = base_name(func)
    if is_view(func):
        return 0, 0
    reads, writes = {}, {}
    out_elems = tensors_in(out)
    gathered = sum(_nbytes(t) for t in out_elems)
    write_only = _WRITE_ONLY.get(name, ())
    for arg, value in _arguments(func, args, kwargs):
        ts = tensors_in(value)
        if not ts:
            continue
        alias = arg.alias_info
        mutated = alias is not None and alias.is_write
        is_out = mutated and arg.kwarg_only and arg.name.startswith("out")
        if name in _SCATTERS and mutated:
            src = dict((a.name, v) for a, v in _arguments(func, args, kwargs)).get(_SCATTERS[name])
            size = sum(_nbytes(t) for t in tensors_in(src)) if src is not None else 0
            writes[("scatter", id(value))] = size
            continue
        for t in ts:
            if mutated:
                writes[_key(t)] = _nbytes(t)
            if is_out or arg.name in write_only:
                continue
            if _GATHERS.get(name) == arg.name:
                reads[("gathered", _key(t))] = min(_read_nbytes(t), gathered)
            else:
                reads[_key(t)] = _read_nbytes(t)
    returns = func._schema.returns
    fresh = out if isinstance(out, (tuple, list)) else (out,)
    for i, value in enumerate(fresh):
        aliased = i < len(returns) and returns[i].alias_info is not None
        if aliased:
            continue  # in-place / out= result: already counted as the mutated argument
        for t in tensors_in(value):
            writes.setdefault(_key(t), _nbytes(t))
    return sum(reads.values()), sum(writes.values())


def flops(func, args, kwargs, out, registry) -> tuple[float | None, str]:
    """(FLOPs, source) of one call; source one of flop_counter, estimate, none, unknown."""
    name = base_name(func)
    packet = func._overloadpacket
    if packet in registry:
        counted = float(registry[packet](*args, **kwargs, out_val=out))
        if _causal_fused(func, args, kwargs):
            # the counter's sdpa formulas ignore is_causal ("we aren't accounting for causal
            # attention here"); the CUDA kernels skip the masked key blocks, as the CPU one
            q, k = _query_key(name, args)
            return counted * causal_fraction(q[-2], k[-2]), ESTIMATE
        return counted, FLOP_COUNTER
    if name in FUSED_ATTENTION and len(args) >= 3:
        from torch.utils.flop_counter import sdpa_flop_count

        try:
            q, k, v = (tuple(a.shape) for a in args[:3])
            full = float(sdpa_flop_count(q, k, v))
        except (AssertionError, AttributeError, ValueError):
            return None, UNKNOWN
        if name != "_scaled_dot_product_attention_math" and _is_causal(func, args, kwargs):
            # a fused kernel skips fully masked key blocks (the math path computes them all)
            qs, ks = _query_key(name, args)
            return full * causal_fraction(qs[-2], ks[-2]), ESTIMATE
        return full, ESTIMATE
    if name in ("mv", "addmv", "dot", "vdot"):  # the counter registers no formula for these
        mats = [t for t in tensors_in(args) if t.dim() >= 1]
        big = max(mats, key=lambda t: t.numel()) if mats else None
        return (float(2 * big.numel()), ESTIMATE) if big is not None else (None, UNKNOWN)
    if name in _PER_ELEMENT or name in _ONE_PER_ELEMENT:
        outs = tensors_in(out)
        n = outs[0].numel() if outs else 0
        return float(_PER_ELEMENT.get(name, 1) * n), ESTIMATE
    if name in _REDUCTIONS:
        ins = tensors_in(args[:1])
        return float(ins[0].numel() if ins else 0), ESTIMATE
    if is_view(func) or name in _DATA_MOVEMENT:
        return 0.0, NONE
    return None, UNKNOWN


def counter_flops(func, args, kwargs, out, registry) -> float | None:
    """What FlopCounterMode counts for one call (None where it registers no formula). It
    differs from :func:`flops` only for a causal fused attention kernel, whose row holds the
    computed share; ``Profile.counted_flops`` adds this number so it stays the counter's
    total."""
    packet = func._overloadpacket
    if packet not in registry:
        return None
    return float(registry[packet](*args, **kwargs, out_val=out))


def _query_key(name: str, args) -> tuple:
    """Query and key shapes of an SDPA call: a backward kernel takes the output's gradient
    first (grad_out, query, key, value, ...)."""
    first = 1 if name.endswith("_backward") else 0
    return tuple(args[first].shape), tuple(args[first + 1].shape)


def _causal_fused(func, args, kwargs) -> bool:
    """A torch SDPA kernel other than the math one (query, key, value laid out B x H x S x d),
    called with ``is_causal=True``: it skips the masked key blocks."""
    name = base_name(func)
    return (name.startswith("_scaled_dot_product_") and name in FUSED_ATTENTION
            and name != "_scaled_dot_product_attention_math" and len(args) >= 3
            and _is_causal(func, args, kwargs))


def _is_causal(func, args, kwargs) -> bool:
    """The call's ``is_causal`` argument (False where the schema has none)."""
    try:
        named = {a.name: v for a, v in _arguments(func, args, kwargs)}
    except Exception:  # no schema to read: no mask assumed, the full (upper) count
        return False
    return bool(named.get("is_causal", False))


def causal_fraction(seq_q: int, seq_kv: int) -> float:
    """Fraction of the Sq x Skv (query, key) pairs that ``is_causal=True`` keeps in torch's
    SDPA: the mask is aligned to the top left (``torch.ones(Sq, Skv).tril()``: query i sees
    keys 0..i), so the kept pairs are sum over i < Sq of min(i + 1, Skv). torch's CPU flash
    kernel (``_scaled_dot_product_flash_attention_for_cpu``) stops each query block at its
    last unmasked key (FlashAttentionKernel.cpp, ``num_keys = min(m + qBlockSize, kvSize)``),
    so the masked blocks are never computed; the count is the exact triangle, a lower bound
    (the blocks on the diagonal are computed whole)."""
    sq, skv = int(seq_q), int(seq_kv)
    if sq <= 0 or skv <= 0:
        return 1.0
    n = min(sq, skv)
    kept = n * (n + 1) // 2 + (sq - n) * skv
    return kept / (sq * skv)


def on_vector_units(func) -> bool:
    """An elementwise op, norm or reduction: it runs at the device's vector (non-tensor)
    ceiling, ``roofline.peak_tflops(hw, roofline.VECTOR)`` (LABS_SPEC §2), not a matmul peak."""
    name = base_name(func)
    return name in _PER_ELEMENT or name in _ONE_PER_ELEMENT or name in _REDUCTIONS


def op_type(func, *, uses_weights: bool, in_attention: bool) -> str:
    """Which of :data:`OP_TYPES` one call belongs to. ``uses_weights``: an operand shares
    storage with a parameter of the model; ``in_attention``: the call runs inside a module
    whose class name contains "attention" (Llama's, GPT-2's, nn.MultiheadAttention ...)."""
    name = base_name(func)
    if is_view(func):
        return VIEWS
    if name in GEMMS and uses_weights:
        return WEIGHT_GEMMS
    if name in FUSED_ATTENTION or in_attention:
        return ATTENTION
    if name in GEMMS:
        return OTHER_GEMMS
    if name in CONVOLUTIONS:
        return CONVOLUTION
    if name in _PER_ELEMENT or name in _ONE_PER_ELEMENT or name in _REDUCTIONS:
        return ELEMENTWISE
    if name in _DATA_MOVEMENT:
        return DATA_MOVEMENT
    return OTHER


_DTYPE_PRECISION = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16",
                    "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "float8_e4m3fnuz": "fp8",
                    "float8_e5m2fnuz": "fp8", "int8": "int8"}


def data_dtype(args, out):
    """The dtype the operator computes in: its first floating-point input, else its output's."""
    ts = tensors_in(args) + tensors_in(out)
    for t in ts:
        if t.is_floating_point():
            return t.dtype
    return ts[0].dtype if ts else None


def precision_of(dtype, *, tf32: bool = False) -> str | None:
    """Roofline precision key of a dtype (None for integer/bool work: no compute roof)."""
    if dtype is None:
        return None
    p = _DTYPE_PRECISION.get(str(dtype).replace("torch.", ""))
    return "tf32" if p == "fp32" and tf32 else p


def shapes(args) -> str:
    """'1×512, 512×1792': the shapes of the tensor arguments, in order."""
    return ", ".join("×".join(str(s) for s in t.shape) or "scalar" for t in tensors_in(args))
