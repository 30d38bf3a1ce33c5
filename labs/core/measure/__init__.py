"""labs.core.measure: live measurement of GEMMs, GEMVs and memory bandwidth on this machine.

What lives here (each module one job; this file is only the public face)::

    choices    what can be measured: GEMM_PRECISIONS, GEMV_PRECISIONS, SQUARE_SIZES,
               worker_limit (no measuring code: a closed gate builds its pickers from these)
    errors     MeasureError and its kinds: Unavailable, Unsupported, DoesNotFit, OutOfMemory
    device     detect() and DeviceInfo (what will be measured, registry entry); free memory,
               fits/check_fits (refuse before allocating), out-of-memory recovery
    timer      time_callable(): the one timing function (warm-up, repetitions fixed in
               advance, CUDA events / perf_counter, every sample kept) and Measurement
    cases      the GEMM/GEMV cases per precision: time_gemm, time_gemv, costs, allocations,
               supported_precisions
    bandwidth  STREAM copy/triad: stream_bandwidth, Bandwidth
    sweeps     sweep_square_gemm, sweep_gemv, empirical_roofline: rows with roofline
               predictions; to_csv, ledger_payload
    reference  compare_with_reference: this timer against an independent one, same run
    caches     cache_sizes(): what the OS reports per cache level (sysfs, sysctl); never raises
    working_set  working_set_sweep (bandwidth vs working set), hierarchy_levels (plateaus)
    effects    call_overhead_sweep (fixed cost per call), gemm_sawtooth (quantisation)
    bench_gemm labs-bench-gemm (``main``): the benchmark tables the README quotes
    tables     the Markdown tables the benchmark commands print (``md_table``, ``value_range``)

Two rooms, each a folder whose ``__init__`` maps it::

    comm/      collectives between worker processes (Lab 6): ``bench`` (backend choice, the
               run and its cleanup, the α-β fit; short name ``comm_bench``), ``worker`` (the
               worker process), ``cli`` (labs-bench-comm); imported by their own names
    profile/   ``profiler``: profile_model(), every aten operator of a model's pass on the
               roofline (Lab 7); builtin_case() builds the built-in models (``tiny_modules``)
               after a fit check; ``opcost`` (FLOPs, bytes, operator type per call),
               ``recorder`` (every aten call of a pass, timed), ``report`` (Profile, aggregations),
               ``guard`` (checks around a run, the profiler's own cost), ``cli`` (labs-profile; also
               imports labs.core.ui)

And the notebook face::

    live       the marimo face (device card, run-button-gated runs, tables): the only module
               here that imports marimo (and labs.core.ui)

It may import labs.core.physics (``live`` also labs.core.ui), never labs.core.course. torch is
optional (the ``live`` extra) and imported lazily, so ``import labs.core.measure`` works
without torch and in a browser (WASM) run. Nothing runs at import, and the submodules load on
first use of a name (so a lab that never presses a run button loads almost nothing); labs call
these functions only behind a run button (see :mod:`labs.core.measure.live`).

API (units: seconds, TFLOP/s = 1e12/s (TOPS for int8), GB/s = 1e9 B/s, bytes)::

    info = detect(device=None)          # DeviceInfo; never raises. info.available, info.message,
                                        # info.kind "cuda"|"cpu"|"none", info.registry_key
                                        # ("NVIDIA H200" -> "h200-sxm"), info.spec() -> Device|None
    supported_precisions(device=None, op="gemm")   # {precision: None if it runs, else why not}
    m = time_gemm(m, n, k, "bf16", device=None, budget_s=0.5, warmup_s=0.1, reps=None,
                  flush_l2=False, threads=None)     # Measurement: median_s, p10_s, p90_s,
                                                   # achieved_tflops, effective_gbs, reps, ...
    time_gemv(n, k, "fp16", ...)        # y[N] = W[N,K] x[K]; cache-cold (rotates W copies)
    time_callable(fn, device=None, budget_s=0.5, flops=0, nbytes=0, ...)  # any callable
    stream_bandwidth(device=None, size_mb=None)    # Bandwidth: .copy, .triad, .gbs (best)
    emp = empirical_roofline(device=None, precisions=None, budget_s=30)
    emp.as_device()                     # a hardware.custom Device: overlay it on a figure
    sweep_square_gemm(sizes, "fp32", budget_s=30, reference=None, progress=None)  # rows
    sweep_gemv(shapes, precisions, budget_s=30, reference=None, progress=None)     # rows
    estimate_bytes("gemm", (m, n, k), "bf16"); check_fits(nbytes, device)
    compare_with_reference(m, n, k, "fp32")  # this timer vs torch.utils.benchmark / do_bench
    model, inputs = builtin_case("decoder", phase="decode", batch=1, context=1024)
    prof = profile_model(model, inputs)  # Profile: rows, by_regime(), by_op_type(), lost_time()
    cache_sizes()                       # CacheSizes: L1d/L2/L3 bytes, shared or per core, source
    sweep = working_set_sweep(device=None, sizes=None, budget_s=20)  # bandwidth vs W, spread
    hierarchy_levels(sweep)             # plateaus found from the data, named by the caches
    call_overhead_sweep(); gemm_sawtooth()   # Lab 5 Part 4: fixed cost per call, quantisation
    to_csv(rows); ledger_payload(info, rows)

Failure modes are exceptions the labs can show as a message (all ``MeasureError``); bad
arguments raise ``ValueError``/``KeyError`` naming the argument.
"""

from __future__ import annotations

import importlib

#: Public name -> the submodule that owns it (the one map; nothing is imported until used).
_OWNERS = {
    "errors": ("MeasureError", "Unavailable", "Unsupported", "DoesNotFit", "OutOfMemory"),
    "device": ("DeviceInfo", "detect", "registry_key_for", "free_bytes", "fits", "check_fits",
               "machine_description", "machine_line", "load_average",
               "MEMORY_HEADROOM"),
    "timer": ("Measurement", "PairedRatio", "time_callable", "time_ratio"),
    "choices": ("GEMM_PRECISIONS", "GEMV_PRECISIONS", "SQUARE_SIZES", "worker_limit"),
    "cases": ("estimate_bytes", "gemm_cost", "gemv_cost", "time_gemm", "time_gemv",
              "supported_precisions"),
    "bandwidth": ("Bandwidth", "stream_bandwidth"),
    "sweeps": ("Progress", "sweep_square_gemm", "sweep_gemv",
               "EmpiricalRoofline", "empirical_roofline", "to_csv", "ledger_payload"),
    "reference": ("TimerCheck", "TimerAttempt", "compare_with_reference"),
    "profile.profiler": ("profile_model", "builtin_case", "machine_roofline", "clear_roofline_cache",
                 "compile_unavailable", "time_compiled"),
    "profile.report": ("Profile", "markdown_summary"),
    "profile.guard": ("measurement_unavailable", "host_memory_bytes"),
    "caches": ("CacheLevel", "CacheSizes", "cache_sizes", "gpu_cache_sizes"),
    "working_set": ("SweepPoint", "WorkingSetSweep", "working_set_sweep", "hierarchy_levels",
                    "default_sizes"),
    "effects": ("OverheadSweep", "call_overhead_sweep", "Sawtooth", "gemm_sawtooth"),
}
_EXPORTS = {name: module for module, names in _OWNERS.items() for name in names}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    """Load the submodule that owns ``name`` on first use (PEP 562)."""
    try:
        module = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'labs.core.measure' has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
