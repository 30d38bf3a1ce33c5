"""Profile a PyTorch model operator by operator on the roofline: every aten call's FLOPs,
compulsory bytes, measured time, and its bound max(FLOPs / peak, bytes / bandwidth).

    from labs.core.measure.profile import profiler
    model, inputs = profiler.builtin_case("decoder", phase="decode", batch=1, context=1024)
    prof = profiler.profile_model(model, inputs)          # this machine's measured roofline
    prof.by_op_type(); prof.by_regime(); prof.lost_time(10); prof.summary()
    profiler.profile_model(model, inputs, roofline="h100-sxm")   # what if: predicted only

How it measures (the honest parts):

* The operators are the aten calls a ``TorchDispatchMode`` sees, after autograd and
  composite operators are decomposed (``torch.no_grad()``, not ``inference_mode``, so a
  ``linear`` shows as the ``t`` + ``addmm`` that actually run). Ops without a FLOP formula
  that have a decomposition are decomposed as ``FlopCounterMode`` does, so the counted FLOPs
  equal its total. FLOPs and bytes per call: :mod:`labs.core.measure.profile.opcost`.
* Each operator is timed where it runs, inside real forward passes (cache state as in the
  model), over several passes; its time is the median. CPU: ``time.perf_counter`` around the
  call (CPU operators return when done), torch's thread count recorded. GPU: a CUDA event
  pair around the call with an untimed GPU spin queued first (the measure wing's spacer), so
  the events time the kernels, not the host's launch gap.
* The whole pass is timed separately, without the profiler, with the measure wing's timer
  (warm-up, repetitions, median). The difference to the sum of the operators' medians is the
  overhead row (Python, dispatch, allocation, launch gaps): shown, never hidden.
* The profiler's own cost is taken out, so the operators never add up to more than the pass
  they came from: on a CPU each timed call carries the cost of being called from the
  profiler (about a microsecond, :func:`call_cost`, calibrated on this machine by timing a
  1-element add under the profiler and called directly), which is subtracted from every call;
  the first profiled pass after the trace is a warm-up and is not kept. If the operators'
  medians still add up to more than the pass (a model of a few tiny operators, a busy
  machine), they are scaled down to fit it (``Profile.op_scale`` < 1), the overhead row is 0
  because it cannot be told apart, and ``Profile.op_time_caveat`` says the per-operator times
  cannot be trusted one by one. A profile never shows a share above 100% or a negative
  overhead.
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

from labs.core import measure
from labs.core.measure.profile import opcost, guard as profile_guard, recorder
from labs.core.measure.cases import (
    matmul_mode,  # the wing's TF32 flags, threads and OOM
)
from labs.core.measure.device import guarded
from labs.core.measure.profile.guard import call_cost  # noqa: F401  (profiler.call_cost)
from labs.core.measure.profile.report import COLUMNS, UNKNOWN_REGIME, Profile, fit_to_pass
from labs.core.measure.timer import resolve_device, sample_stats, torch_threads
from labs.core.physics import hardware
from labs.core.physics import roofline as _roofline
from labs.core.physics import tiny_models
from labs.core.physics.validate import positive

__all__ = [
    "MAX_PASSES", "MIN_PASSES", "THIS_MACHINE", "builtin_case", "call_cost",
    "clear_roofline_cache", "compile_unavailable", "machine_roofline", "profile_model",
    "time_compiled"
]

#: A machine's measured roofline per device, measured once per session (``machine_roofline``).
_ROOFLINES: dict = {}
THIS_MACHINE = "this machine"
#: Passes the per-operator medians need at least / use at most.
MIN_PASSES, MAX_PASSES = 3, 30


# --- the roofline ------------------------------------------------------------------------------

def machine_roofline(device=None, precisions=("fp32",), *, budget_s: float = 3.0,
                     refresh: bool = False, progress=None):
    """This machine's measured roofline (``measure.EmpiricalRoofline``) with at least these
    precisions, measured on first use and cached for the session (``refresh`` re-measures)."""
    info = measure.detect(device)
    if not info.available:
        raise measure.Unavailable(info.message)
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
    emp = measure.empirical_roofline(info, precisions=missing, budget_s=budget_s, progress=progress)
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
    if isinstance(roofline, measure.EmpiricalRoofline):
        return roofline.as_device(), f"measured on this machine ({roofline.date})", False
    if isinstance(roofline, (str, hardware.Device)):
        d = hardware.get(roofline)
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
    if p not in tiny_models.MODEL_PRECISIONS:
        raise KeyError(f"precision={precision!r} cannot be a whole model's precision (a cast of "
                       f"its floating-point weights and inputs); choose one of "
                       f"{', '.join(tiny_models.MODEL_PRECISIONS)}")
    why = measure.supported_precisions(info).get(p)
    if why:
        raise measure.Unsupported(f"precision={p!r} is not available on {info.name}: {why}")
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
        measure.check_fits(nbytes, info)
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


# --- the recorder ------------------------------------------------------------------------------

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
    load0 = _loadavg()
    budget_s = positive("budget_s", budget_s)
    info = measure.detect(device)
    if not info.available:
        raise measure.Unavailable(info.message)
    import torch

    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    args, kwargs = _split_inputs(example_inputs)
    profile_guard.refuse_meta(model, args, kwargs)
    p = _model_precision(precision, info)
    dev = resolve_device(info)
    say = progress or (lambda *a: None)
    total = 3 + MIN_PASSES  # grows once the passes' cost is known

    def run():
        nonlocal model, args, kwargs
        model, args, kwargs = _prepare(model, args, kwargs, p, info)
        mode = p or "none"
        with torch_threads(torch, threads), _flags(torch, mode, info.kind):
            tf32 = info.kind == "cuda" and _tf32_on(torch)
            phase = recorder.Phase()
            one_pass = recorder.one_pass(model, args, kwargs, backward, phase)
            ctx = recorder.Context(model, tf32)
            t0 = time.perf_counter()
            phase.ctx = ctx  # the first pass traces every operator (and checks the inputs)
            trace = profile_guard.first_pass(
                lambda: recorder.recorded(one_pass, recorder.Clock(dev), ctx), info, model,
                args, kwargs)
            phase.ctx = None
            t_trace = time.perf_counter() - t0
            say(1, total, "traced every operator (the inputs fit the model)")
            precisions = sorted({r["precision"] for *_x, r in trace if r["precision"]}
                                & set(measure.GEMM_PRECISIONS)) or ["fp32"]
            say(2, total, "the roofline")
            roof, source, predicted = _resolve_roofline(
                roofline, info, precisions, roofline_budget_s,
                lambda d, t, lbl: say(2, total, f"this machine's roofline: {lbl}"))
            say(3, total, f"roofline: {roof.name}")
            if predicted:
                return _build(trace, None, None, roof, source, True, info, p, backward, label,
                              0, t_start, load0)
            samples, passes, n = _timed_passes(
                dev, one_pass, trace, budget_s, t_trace,
                lambda i, k: say(3 + i, 3 + k, f"profiled pass {i} of {k}"))
            return _build(trace, passes, samples, roof, source, False, info, p, backward, label,
                          n, t_start, load0, cost=call_cost(dev))

    return guarded(f"Profiling {label or type(model).__name__}", info, run)


def _timed_passes(dev, one_pass, trace, budget_s: float, t_trace: float, say):
    """Profiled passes around one block of plain passes timed by ``measure.time_callable``
    (its warm-up, repetitions decided in advance, CUDA events / perf_counter), so both kinds
    see the same load on a shared machine. One profiled pass first is a warm-up (caches and
    allocator as in a steady run; its time sets how many passes fit the budget) and is not
    kept. Returns (plain pass times, per-operator times of each profiled pass that ran the
    same operators as the trace, profiled passes run)."""
    t0 = time.perf_counter()
    recorder.again(lambda: recorder.recorded(one_pass, recorder.Clock(dev), None))
    t_pass = min(time.perf_counter() - t0, t_trace)
    n = int(min(max(budget_s / 2 / max(t_pass, 1e-6), MIN_PASSES), MAX_PASSES))
    passes, done = [], 0

    def profiled(k):
        nonlocal done
        for _ in range(k):
            calls = recorder.again(lambda: recorder.recorded(one_pass, recorder.Clock(dev), None))
            if [c[0] for c in calls] == [c[0] for c in trace]:
                passes.append(recorder.Clock(dev).seconds([c[1] for c in calls]))
            done += 1
            say(done, n)

    profiled(n // 2)
    plain = recorder.again(lambda: measure.time_callable(
        one_pass, device=dev.info, budget_s=budget_s / 2, warmup_s=0.0, min_reps=MIN_PASSES,
        max_reps=2 * MAX_PASSES, op="model pass"))
    profiled(n - n // 2)
    return list(plain.samples_s), passes, n


def _flags(torch, mode: str, kind: str):
    """fp32 = TF32 off, tf32 = on (the measure wing's flags, restored after); else unchanged."""
    if mode in ("fp32", "tf32"):
        return matmul_mode(torch, mode, kind)
    return contextlib.nullcontext()


def _tf32_on(torch) -> bool:
    mm = torch.backends.cuda.matmul
    if hasattr(mm, "fp32_precision"):
        return mm.fp32_precision == "tf32"
    return bool(mm.allow_tf32)


def _bound(row: dict, roof: hardware.Device) -> dict:
    """bound_s, t_compute_s, t_memory_s, ai, regime, ceiling (and a note) for one row: the
    op's FLOPs at its ceiling (its precision's peak, or the vector rate for elementwise ops)."""
    f, b, p = row["flops"], row["bytes"], row["precision"]
    t_mem = b / (roof.bandwidth_gbs * 1e9)
    note = row.get("note", "")
    ceiling = row.get("ceiling") or p
    peak = None
    if ceiling == _roofline.VECTOR:
        peak = _roofline.peak_tflops(roof, _roofline.VECTOR)
    elif p and roof.has(p):
        peak = roof.peak_tflops(p)
    if f is None:
        t_comp, bound, regime = None, t_mem, UNKNOWN_REGIME
        note = note or "FLOPs unknown: bound is the memory term only (a lower bound)"
    elif f == 0 and b == 0:
        t_comp, bound, regime = 0.0, 0.0, _roofline.OVERHEAD
    elif f > 0 and peak is None:
        t_comp, bound, regime = None, t_mem, _roofline.MEMORY
        note = note or f"no {p or row['dtype']} compute peak on this roofline: memory term only"
    else:
        t_comp = f / (peak * 1e12) if f else 0.0
        bound = max(t_comp, t_mem)
        regime = _roofline.COMPUTE if t_comp >= t_mem and f else _roofline.MEMORY
    ai = (f / b) if (f is not None and b) else None
    return {"ai": ai, "bound_s": bound, "t_compute_s": t_comp, "t_memory_s": t_mem,
            "regime": regime, "note": note, "ceiling": ceiling}


def _loadavg() -> float | None:
    """The 1-minute load average (None where the OS does not report one, e.g. Windows)."""
    import os

    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return None


def _build(trace, passes, samples, roof, source, predicted, info, p, backward, label, reps,
           t_start, load0, cost: float = 0.0) -> Profile:
    import torch

    forward = p10 = p90 = None
    if samples:
        stats = sample_stats(samples)
        forward, p10, p90 = stats["median_s"], stats["p10_s"], stats["p90_s"]
    raw = [statistics.median(ps[i] for ps in passes) if passes else None
           for i in range(len(trace))]
    raw_sum = sum(t or 0.0 for t in raw)
    times, scale = fit_to_pass(raw, forward, cost)
    rows = []
    for i, (_func, _h, desc) in enumerate(trace):
        row = {"index": i, **desc}
        row.update(_bound(row, roof))
        m = times[i]
        bound = row["bound_s"]
        row.update(measured_s=m,
                   ratio=m / bound if (m is not None and bound) else None,
                   error_pct=(m - bound) / bound * 100 if (m is not None and bound) else None,
                   lost_s=m - bound if m is not None else None)
        rows.append({k: row.get(k) for k in COLUMNS})
    overhead = None
    notes = []
    if samples:
        gap = max(forward - sum(r["measured_s"] or 0.0 for r in rows), 0.0)
        note = ("the whole pass (measured without the profiler) minus the sum of the "
                "operators' times: Python, dispatch, allocation, launch gaps")
        if scale < 1.0:
            note += ("; 0 here because it cannot be told apart: the operators' profiled "
                     "times were scaled down to fit the pass")
        overhead = {"index": len(rows), "phase": "forward" if not backward else "forward+backward",
                    "name": opcost.OVERHEAD, "op_type": opcost.OVERHEAD, "module": "",
                    "shapes": "", "dtype": "", "precision": "", "flops": 0.0,
                    "flops_source": opcost.NONE, "bytes": 0.0, "ai": None, "measured_s": gap,
                    "bound_s": 0.0, "t_compute_s": 0.0, "t_memory_s": 0.0,
                    "regime": _roofline.OVERHEAD, "ratio": None, "error_pct": None,
                    "lost_s": gap, "note": note}
        if cost > 0:
            notes.append(f"Each operator's time excludes the profiler's own cost per call "
                         f"({cost * 1e6:.2g} µs, calibrated on this machine).")
    if passes is not None and len(passes) < reps:
        notes.append(f"{reps - len(passes)} of {reps} passes ran other operators than the "
                     "first (data-dependent control flow) and were left out")
    load = tuple(x for x in (load0, _loadavg()) if x is not None) or None
    if load and info.cores and max(load) > 0.5 * info.cores and samples:
        notes.append(f"This machine was busy (load average {max(load):.1f} on {info.cores} "
                     "CPUs): whole-pass times include time other processes had the CPU, which "
                     "the per-operator medians mostly skip" + (
                         ", so the overhead row reads high." if scale >= 1 else
                         " (here the noise exceeded the overhead: see the note on scaling)."))
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
        roof=roof, load=load, cores=info.cores, call_cost_s=cost, op_scale=scale,
        profiled_sum_s=raw_sum if passes else None)


# --- built-in models ---------------------------------------------------------------------------

def builtin_case(block: str = "decoder", *, phase: str = "decode", batch: int = 1,
                 context: int = 1024, precision: str = "fp32", attention: str = "math",
                 cache: bool = True, device=None, seed: int = 0):
    """(model, example_inputs) of a built-in model (``labs.core.measure.profile.tiny_modules``), after
    checking, BEFORE anything is allocated, that it fits in this machine's free memory
    (``measure.check_fits`` on ``physics.tiny_models.memory_terms``): a configuration that does
    not fit raises ``measure.DoesNotFit`` with the numbers (weights, KV cache, activations)."""
    info = measure.detect(device)
    if not info.available:
        raise measure.Unavailable(info.message)
    p = _model_precision(precision, info)
    terms = tiny_models.memory_terms(phase=phase, batch=batch, context=context, precision=p,
                               attention=attention, block=block)
    if not cache:
        terms["KV cache"] = 0.0
    ok, why = measure.fits(sum(terms.values()), info)
    if not ok:
        parts = ", ".join(f"{k} {v / 1e9:.2f} GB" for k, v in terms.items())
        raise measure.DoesNotFit(f"The {block} at batch {batch}, context {context:,} ({phase}, {p}, "
                            f"{attention} attention) {why}. It needs {parts}.")
    import torch

    from labs.core.measure.profile import tiny_modules

    dtype = getattr(torch, _TORCH_DTYPES[p])
    return guarded(f"Building the {block}", info, lambda: tiny_modules.build(
        block, phase=phase, batch=batch, context=context, attention=attention, dtype=dtype,
        device=info.torch_device, seed=seed, cache=cache))


# --- torch.compile -----------------------------------------------------------------------------

def compile_unavailable(device=None) -> str | None:
    """None when ``torch.compile`` (inductor) can run here, else a sentence saying why not:
    no torch, a torch without it, no C++ compiler for CPU code, no triton for GPU kernels."""
    info = measure.detect(device)
    if not info.available:
        return info.message
    import importlib.util
    import os
    import shutil

    import torch

    if not hasattr(torch, "compile"):
        return f"torch {torch.__version__} has no torch.compile (it arrived in torch 2.0)."
    if info.kind == "cuda" and importlib.util.find_spec("triton") is None:
        return ("torch.compile makes GPU kernels with triton, which is not installed here; "
                "the eager model is all there is to measure.")
    if info.kind == "cpu":
        compilers = [os.environ.get("CXX", ""), "g++", "c++", "clang++", "cl"]
        if not any(c and shutil.which(c) for c in compilers):
            return ("torch.compile makes CPU code with a C++ compiler and none was found "
                    "(g++, clang++ or MSVC's cl); the eager model is all there is to measure.")
    return None


def time_compiled(model, example_inputs, *, device=None, budget_s: float = 4.0,
                  threads: int | None = None) -> dict:
    """Whole-pass times of ``model`` eager and under ``torch.compile`` (per-operator rows are
    not visible inside compiled code): {eager_s, compiled_s, ratio (compiled / eager),
    compile_s (the first call, which compiles), eager, compiled (the Measurements)}.
    Raises ``measure.Unsupported`` with :func:`compile_unavailable`'s sentence when it can't."""
    why = compile_unavailable(device)
    if why:
        raise measure.Unsupported(why)
    info = measure.detect(device)
    import torch

    if not isinstance(model, torch.nn.Module):
        raise ValueError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    args, kwargs = _split_inputs(example_inputs)

    def run():
        with torch_threads(torch, threads):
            compiled = torch.compile(model)
            t0 = time.perf_counter()
            with torch.no_grad():
                compiled(*args, **kwargs)
            compile_s = time.perf_counter() - t0
            timed = {}
            for name, m in (("eager", model), ("compiled", compiled)):
                timed[name] = measure.time_callable(lambda m=m: m(*args, **kwargs), device=info,
                                               budget_s=budget_s / 2, warmup_s=0.05,
                                               min_reps=MIN_PASSES, op=f"{name} pass")
        return {"eager_s": timed["eager"].median_s, "compiled_s": timed["compiled"].median_s,
                "ratio": timed["compiled"].median_s / timed["eager"].median_s,
                "compile_s": compile_s, **timed}

    return guarded("torch.compile", info, run)
