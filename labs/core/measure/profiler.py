"""Profile a PyTorch model operator by operator on the roofline: every aten call's FLOPs,
compulsory bytes, measured time, and its bound max(FLOPs / peak, bytes / bandwidth).

    from labs.core.measure import profiler
    model, inputs = profiler.builtin_case("decoder", phase="decode", batch=1, context=1024)
    prof = profiler.profile_model(model, inputs)          # this machine's measured roofline
    prof.by_op_type(); prof.by_regime(); prof.lost_time(10); prof.summary()
    profiler.profile_model(model, inputs, roofline="h100-sxm")   # what if: predicted only

How it measures (the honest parts):

* The operators are the aten calls a ``TorchDispatchMode`` sees, after autograd and
  composite operators are decomposed (``torch.no_grad()``, not ``inference_mode``, so a
  ``linear`` shows as the ``t`` + ``addmm`` that actually run). Ops without a FLOP formula
  that have a decomposition are decomposed as ``FlopCounterMode`` does, so the counted FLOPs
  equal its total. FLOPs and bytes per call: :mod:`labs.core.measure.opcost`.
* Each operator is timed where it runs, inside real forward passes (cache state as in the
  model), over several passes; its time is the median. CPU: ``time.perf_counter`` around the
  call (CPU operators return when done), torch's thread count recorded. GPU: a CUDA event
  pair around the call with an untimed GPU spin queued first (the measure wing's spacer), so
  the events time the kernels, not the host's launch gap.
* The whole pass is timed separately, without the profiler, with the measure wing's timer
  (warm-up, repetitions, median). The difference to the sum of the operators' medians is the
  overhead row (Python, dispatch, allocation, launch gaps): shown, never hidden.
* The roofline is this machine's measured one (``measure.empirical_roofline`` for the
  precisions the model uses, measured once per session and cached) or, for "what if it ran on
  an H100", a registry device: then nothing is timed and every row is a prediction, labelled so.

Failure modes: not a Module, inputs that do not match it, a precision the device lacks, a
configuration that does not fit: a ``ValueError``/``KeyError`` naming the argument or a
``measure.MeasureError`` sentence; never a half-finished profile.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import statistics
import time
from typing import Callable

from labs.core import measure as _m
from labs.core.measure import opcost
from labs.core.measure.profile_report import COLUMNS, UNKNOWN_REGIME, Profile
from labs.core.physics import hardware as _hw
from labs.core.physics import roofline as _roofline
from labs.core.physics import tiny_models as _tiny
from labs.core.physics._validate import positive

#: A machine's measured roofline per device, measured once per session (``machine_roofline``).
_ROOFLINES: dict = {}
_RECORDER = None
THIS_MACHINE = "this machine"
#: Passes the per-operator medians need at least / use at most.
MIN_PASSES, MAX_PASSES = 3, 30


# --- the roofline ------------------------------------------------------------------------------

def machine_roofline(device=None, precisions=("fp32",), *, budget_s: float = 3.0,
                     refresh: bool = False, progress=None):
    """This machine's measured roofline (``measure.EmpiricalRoofline``) with at least these
    precisions, measured on first use and cached for the session (``refresh`` re-measures)."""
    info = _m.detect(device)
    if not info.available:
        raise _m.Unavailable(info.message)
    import torch

    # a CPU's roofline depends on the thread count it was measured with
    key = (info.kind, info.name, info.torch_device,
           torch.get_num_threads() if info.kind == "cpu" else None)
    have = None if refresh else _ROOFLINES.get(key)
    want = sorted(set(precisions))
    missing = [p for p in want if have is None or (p not in have.peaks
                                                   and p not in have.unsupported)]
    if not missing:
        return have
    emp = _m.empirical_roofline(info, precisions=missing, budget_s=budget_s, progress=progress)
    if have is not None:  # keep the first bandwidth measurement; add the new peaks
        emp = dataclasses.replace(
            have, peaks={**have.peaks, **emp.peaks},
            peak_measurements={**have.peak_measurements, **emp.peak_measurements},
            unsupported={**have.unsupported, **emp.unsupported})
    _ROOFLINES[key] = emp
    return emp


def clear_roofline_cache() -> None:
    _ROOFLINES.clear()


def _resolve_roofline(roofline, info, precisions, budget_s, progress):
    """(Device to bound against, where it comes from, predicted_only)."""
    if roofline is None or roofline == THIS_MACHINE:
        emp = machine_roofline(info, precisions, budget_s=budget_s, progress=progress)
        return emp.as_device(), f"measured on this machine ({emp.date})", False
    if isinstance(roofline, _m.EmpiricalRoofline):
        return roofline.as_device(), f"measured on this machine ({roofline.date})", False
    if isinstance(roofline, (str, _hw.Device)):
        d = _hw.get(roofline)
        here = info.registry_key == d.key
        return d, (f"spec sheet: {d.key}" + ("" if here else
                   f": predicted only, this machine ({info.name}) is not a {d.name}")), not here
    raise ValueError("roofline must be None (this machine, measured), a registry key such as "
                     f"'h100-sxm', a hardware.Device or an EmpiricalRoofline, got {roofline!r}")


# --- inputs, model, precision ------------------------------------------------------------------

def _split_inputs(example_inputs) -> tuple[tuple, dict]:
    import torch

    if isinstance(example_inputs, torch.Tensor):
        return (example_inputs,), {}
    if isinstance(example_inputs, dict):
        return (), dict(example_inputs)
    if isinstance(example_inputs, (tuple, list)):
        return tuple(example_inputs), {}
    raise ValueError("example_inputs must be a tensor, a tuple/list of positional arguments or "
                     f"a dict of keyword arguments, got {type(example_inputs).__name__}")


def _model_precision(precision, info) -> str | None:
    if precision is None:
        return None
    p = str(precision).strip().lower()
    if p not in _tiny.MODEL_PRECISIONS:
        raise KeyError(f"precision={precision!r} cannot be a whole model's precision (a cast of "
                       f"its floating-point weights and inputs); choose one of "
                       f"{', '.join(_tiny.MODEL_PRECISIONS)}")
    why = _m.supported_precisions(info).get(p)
    if why:
        raise _m.Unsupported(f"precision={p!r} is not available on {info.name}: {why}")
    return p


_TORCH_DTYPES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def _prepare(model, args, kwargs, p, info):
    """The model and inputs on the device in the precision; the model is copied when it must
    move or be cast (yours is left as it was), after a fit check for the copy."""
    import torch

    dtype = getattr(torch, _TORCH_DTYPES[p]) if p else None
    target = torch.device(info.torch_device)
    tensors = list(model.parameters()) + list(model.buffers())
    here = {t.device for t in tensors}
    floats = [t for t in tensors if t.is_floating_point()]
    if here - {target} or (dtype is not None and any(t.dtype != dtype for t in floats)):
        size = dtype.itemsize if dtype is not None else None
        nbytes = sum(t.numel() * (size if (size and t.is_floating_point()) else t.element_size())
                     for t in tensors)
        _m.check_fits(nbytes, info)
        model = copy.deepcopy(model).to(device=target, dtype=dtype) if dtype is not None else \
            copy.deepcopy(model).to(device=target)

    def move(v):
        if isinstance(v, torch.Tensor):
            v = v.to(target)
            return v.to(dtype) if dtype is not None and v.is_floating_point() else v
        if isinstance(v, (tuple, list)):
            return type(v)(move(x) for x in v)
        if isinstance(v, dict):
            return {k: move(x) for k, x in v.items()}
        return v
    return model, tuple(move(a) for a in args), {k: move(v) for k, v in kwargs.items()}


def _loss(out):
    """A scalar to call backward on: the sum of every floating-point output."""
    import torch

    ts = [t for t in opcost._tensors(out) if t.is_floating_point() and t.requires_grad]
    if not ts:
        raise ValueError("backward=True needs an output that requires grad; this model's "
                         "outputs do not (are its parameters frozen?)")
    return torch.stack([t.float().sum() for t in ts]).sum()


# --- the recorder ------------------------------------------------------------------------------

class _Context:
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
        from torch.nn.modules import module as mm

        def pre(mod, _args):
            self.stack.append(mod)

        def post(mod, _args, _out):
            if self.stack and self.stack[-1] is mod:
                self.stack.pop()
        return [mm.register_module_forward_pre_hook(pre),
                mm.register_module_forward_hook(post, always_call=True)]

    def describe(self, func, args, kwargs, out) -> dict:
        ts = opcost._tensors((args, kwargs))
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
                "flops": flops, "flops_source": source, "bytes": float(read + written),
                "note": note}


def _recorder_type():
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
            def __init__(self, clock, ctx: _Context | None):
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
                info = self.ctx.describe(func, args, kwargs, out) if self.ctx else None
                self.calls.append((func, handle, info))
                return out

        _RECORDER = Recorder
    return _RECORDER


class _Clock:
    """Per-operator time: perf_counter on a CPU; CUDA events after an untimed spin on a GPU."""

    def __init__(self, dev):
        self.dev = dev
        self.cuda = dev.cuda
        self.spacer = _m._gpu_spacer(dev) if self.cuda else None

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


# --- profile_model -----------------------------------------------------------------------------

def profile_model(model, example_inputs, *, device=None, precision: str | None = None,
                  backward: bool = False, roofline=None, budget_s: float = 4.0,
                  roofline_budget_s: float = 3.0, threads: int | None = None,
                  label: str | None = None, progress=None) -> Profile:
    """Profile ``model(*example_inputs)`` (a dict: keyword arguments; a tensor: the one
    argument), forward and, with ``backward=True``, backward of the sum of its outputs.

    ``device``: None (a CUDA GPU if torch sees one, else the CPU), "cpu", "cuda", "cuda:N".
    ``precision``: None keeps the model as it is; "fp32" (TF32 off), "tf32", "fp16", "bf16"
    cast a copy of it and its floating-point inputs. ``roofline``: None = this machine's
    measured roofline; a registry key ("h100-sxm") or hardware.Device = what if (predicted
    only, unless this machine is that device). ``budget_s``: time for the timed passes (at
    least 3 of each kind run, so a slow model can take longer). ``progress(done, total,
    label)`` is called as it goes.
    """
    t_start = time.perf_counter()
    budget_s = positive("budget_s", budget_s)
    info = _m.detect(device)
    if not info.available:
        raise _m.Unavailable(info.message)
    import torch

    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    args, kwargs = _split_inputs(example_inputs)
    p = _model_precision(precision, info)
    dev = _m._resolve(info)
    say = progress or (lambda *a: None)
    total = 3 + MIN_PASSES  # grows once the passes' cost is known

    def run():
        nonlocal model, args, kwargs
        model, args, kwargs = _prepare(model, args, kwargs, p, info)
        mode = p or "none"
        with _m._threads(torch, threads), _flags(torch, mode, info.kind):
            tf32 = info.kind == "cuda" and _tf32_on(torch)
            phase = _Phase()
            one_pass = _one_pass(model, args, kwargs, backward, phase)
            _trial(one_pass, info)
            say(1, total, "ran the model once (inputs match)")
            ctx = _Context(model, tf32)
            t0 = time.perf_counter()
            phase.ctx = ctx
            trace = _again(lambda: _recorded(one_pass, _Clock(dev), ctx))
            phase.ctx = None
            t_trace = time.perf_counter() - t0
            precisions = sorted({r["precision"] for *_x, r in trace if r["precision"]}
                                & set(_m.GEMM_PRECISIONS)) or ["fp32"]
            say(2, total, "traced every operator")
            roof, source, predicted = _resolve_roofline(
                roofline, info, precisions, roofline_budget_s,
                lambda d, t, lbl: say(2, total, f"this machine's roofline: {lbl}"))
            say(3, total, f"roofline: {roof.name}")
            if predicted:
                return _build(trace, None, None, roof, source, True, info, p, backward, label,
                              0, t_start)
            n_est = int(min(max(budget_s / (2 * max(t_trace, 1e-6)), MIN_PASSES), MAX_PASSES))
            samples, passes, n = _timed_passes(
                dev, one_pass, trace, budget_s, t_trace,
                lambda i: say(3 + min(i, n_est), 3 + n_est, f"timed pass {i} (plain + profiled)"))
            return _build(trace, passes, samples, roof, source, False, info, p, backward, label,
                          n, t_start)

    return _m._guarded(f"Profiling {label or type(model).__name__}", info, run)


def _timed_passes(dev, one_pass, trace, budget_s: float, t_trace: float, say):
    """Alternate a plain pass (the measure wing's timer, one repetition at a time: the model
    is warm already) with a profiled pass, so both see the same load on a shared machine.
    Returns (plain pass times, per-operator times of each profiled pass that ran the same
    operators as the trace, passes run). Stops when ``budget_s`` is spent (>= MIN_PASSES)."""
    samples, passes, t0, n = [], [], time.perf_counter(), 0
    estimate = max(t_trace, 1e-6)  # a profiled pass costs at most what the trace did
    while n < MAX_PASSES and (n < MIN_PASSES or time.perf_counter() - t0 + estimate < budget_s):
        samples += _again(lambda: _m._timed_reps(dev, one_pass, 1, None))
        calls = _again(lambda: _recorded(one_pass, _Clock(dev), None))
        if [c[0] for c in calls] == [c[0] for c in trace]:
            passes.append(_Clock(dev).seconds([c[1] for c in calls]))
        n += 1
        say(n)
    return samples, passes, n


def _flags(torch, mode: str, kind: str):
    """fp32 = TF32 off, tf32 = on (the measure wing's flags, restored after); else unchanged."""
    if mode in ("fp32", "tf32"):
        return _m._matmul_mode(torch, mode, kind)
    return contextlib.nullcontext()


def _tf32_on(torch) -> bool:
    mm = torch.backends.cuda.matmul
    if hasattr(mm, "fp32_precision"):
        return mm.fp32_precision == "tf32"
    return bool(mm.allow_tf32)


class _Phase:
    """Where a pass is (forward, loss, backward), for the recorder's rows."""

    def __init__(self):
        self.ctx = None

    def __call__(self, phase: str) -> None:
        if self.ctx is not None:
            self.ctx.phase = phase


def _one_pass(model, args, kwargs, backward: bool, phase: _Phase) -> Callable[[], object]:
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
            loss = _loss(out)
            phase("backward")
            loss.backward()
        return out
    return forward_backward


def _trial(one_pass, info) -> None:
    """Run once: inputs that do not fit the model become a ValueError naming them."""
    try:
        one_pass()
    except _m.MeasureError:
        raise
    except (TypeError, RuntimeError, ValueError, IndexError, KeyError, AttributeError) as e:
        if _m._is_oom(e):
            raise
        first = (str(e).strip().splitlines() or [""])[0][:300]
        raise ValueError(f"example_inputs do not fit the model: model(*example_inputs) failed on "
                         f"{info.name} with {type(e).__name__}: {first}. Check their number, "
                         "shapes, dtypes and order against the model's forward.") from e


def _again(run):
    """A pass after the first: a model that fails now changed its own state in the first."""
    try:
        return run()
    except _m.MeasureError:
        raise
    except (TypeError, RuntimeError, ValueError, IndexError, KeyError, AttributeError) as e:
        if _m._is_oom(e):
            raise
        first = (str(e).strip().splitlines() or [""])[0][:300]
        raise _m.Unsupported(
            f"The model ran once but failed when run again with the same inputs ({type(e).__name__}:"
            f" {first}). Profiling runs it several times; a model that changes its own state "
            "between calls (e.g. a KV cache written in place while backward=True) cannot be "
            "profiled as it is.") from e


def _recorded(one_pass, clock, ctx: _Context | None) -> list:
    """One pass under the recorder: [(func, time handle, description or None)]."""
    rec = _recorder_type()(clock, ctx)
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


def _bound(row: dict, roof: _hw.Device) -> dict:
    """bound_s, t_compute_s, t_memory_s, ai, regime (and a note) for one operator row."""
    f, b, p = row["flops"], row["bytes"], row["precision"]
    t_mem = b / (roof.bandwidth_gbs * 1e9)
    note = row.get("note", "")
    if f is None:
        t_comp, bound, regime = None, t_mem, UNKNOWN_REGIME
        note = note or "FLOPs unknown: bound is the memory term only (a lower bound)"
    elif f == 0 and b == 0:
        t_comp, bound, regime = 0.0, 0.0, _roofline.OVERHEAD
    elif f > 0 and not (p and roof.has(p)):
        t_comp, bound, regime = None, t_mem, _roofline.MEMORY
        note = note or f"no {p or row['dtype']} compute peak on this roofline: memory term only"
    else:
        t_comp = f / (roof.peak_tflops(p) * 1e12) if f else 0.0
        bound = max(t_comp, t_mem)
        regime = _roofline.COMPUTE if t_comp >= t_mem and f else _roofline.MEMORY
    ai = (f / b) if (f is not None and b) else None
    return {"ai": ai, "bound_s": bound, "t_compute_s": t_comp, "t_memory_s": t_mem,
            "regime": regime, "note": note}


def _build(trace, passes, samples, roof, source, predicted, info, p, backward, label, reps,
           t_start) -> Profile:
    import torch

    rows = []
    for i, (_func, _h, desc) in enumerate(trace):
        row = {"index": i, **desc}
        row.update(_bound(row, roof))
        m = statistics.median(ps[i] for ps in passes) if passes else None
        bound = row["bound_s"]
        row.update(measured_s=m,
                   ratio=m / bound if (m is not None and bound) else None,
                   error_pct=(m - bound) / bound * 100 if (m is not None and bound) else None,
                   lost_s=m - bound if m is not None else None)
        rows.append({k: row.get(k) for k in COLUMNS})
    overhead = forward = p10 = p90 = None
    notes = []
    if samples:
        stats = _m._stats(samples)
        forward, p10, p90 = stats["median_s"], stats["p10_s"], stats["p90_s"]
        gap = forward - sum(r["measured_s"] or 0.0 for r in rows)
        note = ("the whole pass (measured without the profiler) minus the sum of the "
                "operators' times: Python, dispatch, allocation, launch gaps")
        if gap < 0:
            note += ("; negative: the operators' medians add up to more than the pass's "
                     "median (noise from other work on this machine)")
        overhead = {"index": len(rows), "phase": "forward" if not backward else "forward+backward",
                    "name": opcost.OVERHEAD, "op_type": opcost.OVERHEAD, "module": "",
                    "shapes": "", "dtype": "", "precision": "", "flops": 0.0,
                    "flops_source": opcost.NONE, "bytes": 0.0, "ai": None, "measured_s": gap,
                    "bound_s": 0.0, "t_compute_s": 0.0, "t_memory_s": 0.0,
                    "regime": _roofline.OVERHEAD, "ratio": None, "error_pct": None,
                    "lost_s": gap, "note": note}
    if passes is not None and len(passes) < reps:
        notes.append(f"{reps - len(passes)} of {reps} passes ran other operators than the "
                     "first (data-dependent control flow) and were left out")
    unknown = sum(1 for r in rows if r["flops"] is None)
    if unknown:
        notes.append(f"{unknown} operator call(s) with FLOPs unknown to torch.utils.flop_counter "
                     "and to this profiler: marked 'FLOPs unknown', bounded by memory only")
    return Profile(
        label=label or "model", rows=tuple(rows), overhead=overhead, forward_s=forward,
        forward_p10_s=p10, forward_p90_s=p90, reps=len(passes or ()), device=info.name,
        kind=info.kind, threads=torch.get_num_threads() if info.kind == "cpu" else None,
        timer="cuda events" if info.kind == "cuda" else "time.perf_counter",
        roofline=roof.name, roofline_source=source, predicted_only=predicted,
        bandwidth_gbs=roof.bandwidth_gbs, peaks=dict(roof.peaks), precision=p or "as given",
        backward=backward, elapsed_s=time.perf_counter() - t_start, notes=tuple(notes),
        roof=roof)


# --- built-in models ---------------------------------------------------------------------------

def builtin_case(block: str = "decoder", *, phase: str = "decode", batch: int = 1,
                 context: int = 1024, precision: str = "fp32", attention: str = "math",
                 cache: bool = True, device=None, seed: int = 0):
    """(model, example_inputs) of a built-in model (``labs.core.measure.tiny_modules``), after
    checking, BEFORE anything is allocated, that it fits in this machine's free memory
    (``measure.check_fits`` on ``physics.tiny_models.memory_terms``): a configuration that does
    not fit raises ``measure.DoesNotFit`` with the numbers (weights, KV cache, activations)."""
    info = _m.detect(device)
    if not info.available:
        raise _m.Unavailable(info.message)
    p = _model_precision(precision, info)
    terms = _tiny.memory_terms(phase=phase, batch=batch, context=context, precision=p,
                               attention=attention, block=block)
    if not cache:
        terms["KV cache"] = 0.0
    ok, why = _m.fits(sum(terms.values()), info)
    if not ok:
        parts = ", ".join(f"{k} {v / 1e9:.2f} GB" for k, v in terms.items())
        raise _m.DoesNotFit(f"The {block} at batch {batch}, context {context:,} ({phase}, {p}, "
                            f"{attention} attention) {why}. It needs {parts}.")
    import torch

    from labs.core.measure import tiny_modules

    dtype = getattr(torch, _TORCH_DTYPES[p])
    return _m._guarded(f"Building the {block}", info, lambda: tiny_modules.build(
        block, phase=phase, batch=batch, context=context, attention=attention, dtype=dtype,
        device=info.torch_device, seed=seed, cache=cache))
