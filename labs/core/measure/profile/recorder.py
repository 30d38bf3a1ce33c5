"""The profiler's recorder: a TorchDispatchMode that sees every aten call of a model's pass,
times it where it runs and (on the trace pass) describes it, plus the pass itself (forward,
or forward + backward of the outputs' sum) and the checks around running it.

Part of :mod:`labs.core.measure.profile.profiler` (its method is described there); torch is imported
lazily, on first use.
"""

from __future__ import annotations

import time
from typing import Callable

from labs.core.measure import errors as _errors
from labs.core.measure.profile import opcost
from labs.core.measure.device import is_oom
from labs.core.measure.timer import gpu_spacer

__all__ = [
    "Clock", "Context", "OP_SPACER_US", "Phase", "again", "loss_of", "one_pass", "recorded",
    "recorder_type", "run_or_explain", "trial"
]

_RECORDER = None
#: Untimed GPU spin before each operator's start event (µs): it must outlast the host's work
#: per operator inside the recorder (dispatch, recording, event calls; ~90 µs measured on an
#: H200 host), or that work lands between the events and is timed. At the timer's 50 µs a view
#: (no kernel) read 39 µs and the MLP's operators summed to 2.0x the pass; at 1000 µs, 1.3 µs
#: and 1.01x (2026-11-26). Costs 1 ms of GPU idle per operator per profiled pass.
OP_SPACER_US = 1000.0


def loss_of(out):
    """A scalar to call backward on: the sum of every floating-point output."""
    import torch

    ts = [t for t in opcost.tensors_in(out) if t.is_floating_point() and t.requires_grad]
    if not ts:
        raise ValueError("backward=True needs an output that requires grad; this model's "
                         "outputs do not (are its parameters frozen?)")
    return torch.stack([t.float().sum() for t in ts]).sum()


class Context:
    """What the recorder needs to describe a call: module stack, parameter storages, phase."""

    def __init__(self, model, tf32: bool):
        import torch
        from torch.utils.flop_counter import flop_registry

        self.registry = flop_registry
        self.names = {id(m): name for name, m in model.named_modules()}
        self.names[id(model)] = f"({type(model).__name__})"  # the root module's own code
        self.params = {p.untyped_storage().data_ptr() for p in model.parameters()}
        self.stack: list = []
        self.phase = "forward"
        self.tf32 = tf32
        self.torch = torch

    def hooks(self):
        from torch.nn.modules import module as _module

        def pre(mod, _args):
            self.stack.append(mod)

        def post(mod, _args, _out):
            if self.stack and self.stack[-1] is mod:
                self.stack.pop()
        return [_module.register_module_forward_pre_hook(pre),
                _module.register_module_forward_hook(post, always_call=True)]

    def safe_describe(self, func, args, kwargs, out) -> dict:
        """:meth:`describe`, or a row saying it could not be described (an operator whose
        arguments the rules cannot read): the pass goes on, nothing is silently zero."""
        try:
            return self.describe(func, args, kwargs, out)
        except Exception as e:
            return {"phase": self.phase, "name": str(func._overloadpacket),
                    "op_type": opcost.OTHER, "module": "", "shapes": "", "dtype": "",
                    "precision": None, "ceiling": None, "flops": None,
                    "flops_source": opcost.UNKNOWN, "bytes": 0.0,
                    "note": f"could not read this operator's arguments ({type(e).__name__})"}

    def describe(self, func, args, kwargs, out) -> dict:
        ts = opcost.tensors_in((args, kwargs))
        uses_weights = False
        for t in ts:
            try:
                uses_weights |= t.untyped_storage().data_ptr() in self.params
            except Exception:  # a tensor without storage is no weight
                pass
        in_attn = any("attention" in type(m).__name__.lower() for m in self.stack)
        note = ""
        try:
            flops, source = opcost.flops(func, args, kwargs, out, self.registry)
        except Exception as e:  # a formula that cannot read these arguments: unknown, said so
            flops, source = None, opcost.UNKNOWN
            note = f"FLOP formula failed: {type(e).__name__}"
        counted = None
        if source == opcost.ESTIMATE:  # a causal fused kernel: keep what the counter says
            try:
                counted = opcost.counter_flops(func, args, kwargs, out, self.registry)
            except Exception:
                counted = None
        read, written = opcost.compulsory_bytes(func, args, kwargs, out)
        dtype = opcost.data_dtype(args, out)
        gemm_like = opcost.base_name(func) in opcost.GEMMS | opcost.CONVOLUTIONS
        module = self.names.get(id(self.stack[-1]), "") if self.stack else ""
        return {"phase": self.phase, "name": str(func._overloadpacket),
                "op_type": opcost.op_type(func, uses_weights=uses_weights,
                                          in_attention=in_attn and self.phase == "forward"),
                "module": module if self.phase == "forward" else f"({self.phase})",
                "shapes": opcost.shapes(args), "dtype": str(dtype).replace("torch.", ""),
                "precision": opcost.precision_of(dtype, tf32=self.tf32 and gemm_like),
                "ceiling": "vector" if opcost.on_vector_units(func) else None,
                "flops": flops, "flops_source": source, "bytes": float(read + written),
                "note": note, "counter_flops": counted}


def recorder_type():
    """The TorchDispatchMode subclass (built on first use: torch is imported lazily)."""
    global _RECORDER
    if _RECORDER is None:
        import torch
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils.flop_counter import flop_registry

        aten = torch.ops.aten
        passthrough = {aten.sym_size.default, aten.sym_stride.default, aten.size.default,
                       aten.stride.default, aten.dim.default, aten.numel.default,
                       aten.sym_numel.default, aten.is_contiguous.default,
                       aten.storage_offset.default, aten.sym_storage_offset.default,
                       torch.ops.prim.layout.default, torch.ops.prim.device.default}

        class Recorder(TorchDispatchMode):
            def __init__(self, clock, ctx: Context | None):
                super().__init__()
                self.clock, self.ctx, self.calls = clock, ctx, []

            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                if func in passthrough:
                    return func(*args, **kwargs)
                # as FlopCounterMode does: an op with no formula runs as its decomposition
                if func not in flop_registry:
                    with self:
                        r = func.decompose(*args, **kwargs)
                        if r is not NotImplemented:
                            return r
                handle = self.clock.start()
                out = func(*args, **kwargs)
                handle = self.clock.stop(handle)
                info = self.ctx.safe_describe(func, args, kwargs, out) if self.ctx else None
                self.calls.append((func, handle, info))
                return out

        _RECORDER = Recorder
    return _RECORDER


class Clock:
    """Per-operator time: perf_counter on a CPU; CUDA events after an untimed spin on a GPU."""

    def __init__(self, dev):
        self.dev = dev
        self.cuda = dev.cuda
        self.spacer = gpu_spacer(dev, OP_SPACER_US) if self.cuda else None

    def start(self):
        if not self.cuda:
            return time.perf_counter()
        if self.spacer is not None:
            self.spacer()
        e = self.dev.torch.cuda.Event(enable_timing=True)
        e.record()
        return e

    def stop(self, start):
        if not self.cuda:
            return time.perf_counter() - start
        e = self.dev.torch.cuda.Event(enable_timing=True)
        e.record()
        return start, e

    def seconds(self, handles) -> list[float]:
        if not self.cuda:
            return list(handles)
        self.dev.sync()
        return [s.elapsed_time(e) / 1e3 for s, e in handles]


class Phase:
    """Where a pass is (forward, loss, backward), for the recorder's rows."""

    def __init__(self):
        self.ctx = None

    def __call__(self, phase: str) -> None:
        if self.ctx is not None:
            self.ctx.phase = phase


def one_pass(model, args, kwargs, backward: bool, phase: Phase) -> Callable[[], object]:
    import torch

    if not backward:
        def forward():
            with torch.no_grad():
                return model(*args, **kwargs)
        return forward

    def forward_backward():
        model.zero_grad(set_to_none=True)
        with torch.enable_grad():
            phase("forward")
            out = model(*args, **kwargs)
            phase("loss")
            loss = loss_of(out)
            phase("backward")
            loss.backward()
        return out
    return forward_backward


_MODEL_ERRORS = (TypeError, RuntimeError, ValueError, IndexError, KeyError, AttributeError)


def run_or_explain(run, explain):
    """``run()``; a model's own error (not out of memory) becomes ``explain(e, first_line)``."""
    try:
        return run()
    except _errors.MeasureError:
        raise
    except _MODEL_ERRORS as e:
        if is_oom(e):
            raise
        first = (str(e).strip().splitlines() or [""])[0][:300].rstrip(".")
        raise explain(e, first) from e


def trial(run, info):
    """The first pass (``run()``, returned): inputs that do not fit the model become a
    ValueError naming them."""
    return run_or_explain(run, lambda e, first: ValueError(
        f"example_inputs do not fit the model: model(*example_inputs) failed on {info.name} "
        f"with {type(e).__name__}: {first}. Check their number, shapes, dtypes and order "
        "against the model's forward."))


def again(run):
    """A pass after the first: a model that fails now changed its own state in the first."""
    return run_or_explain(run, lambda e, first: _errors.Unsupported(
        "The model ran once but failed when run again with the same inputs "
        f"({type(e).__name__}: {first}). Profiling runs it several times; a model that "
        "changes its own state between calls (e.g. a KV cache written in place while "
        "backward=True) cannot be profiled as it is."))


def recorded(one_pass, clock, ctx: Context | None) -> list:
    """One pass under the recorder: [(func, time handle, description or None)]."""
    rec = recorder_type()(clock, ctx)
    handles = ctx.hooks() if ctx is not None else []
    if ctx is not None:
        ctx.stack.clear()
        ctx.phase = "forward"
    try:
        with rec:
            one_pass()
    finally:
        for h in handles:
            h.remove()
    return rec.calls
