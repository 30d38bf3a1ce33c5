"""The GEMM and GEMV cases: what is timed in each precision, what it costs and allocates.

``time_gemm(m, n, k, precision)`` times C[M,N] = A[M,K] @ B[K,N]; ``time_gemv(n, k,
precision)`` the decode GEMV y[N] = W[N,K] x[K], cache-cold (it rotates through copies of W
that together exceed twice the last-level cache). ``gemm_cost``/``gemv_cost`` are their
compulsory FLOPs and bytes (from labs.core.physics.formulas), ``estimate_bytes`` what a run
allocates (checked against free memory before anything is allocated),
``supported_precisions`` which precisions this device and torch can run, and why not.

Precision modes are explicit: ``fp32`` runs with TF32 *off* (IEEE fp32), ``tf32`` with it on
(GPU, compute capability >= 8.0), ``fp16``/``bf16`` as those dtypes, ``fp8`` (e4m3 through
``torch._scaled_mm``, bf16 output; GPUs with compute capability >= 8.9) and ``int8``
(``torch._int_mm``, int32 output). Global torch flags are restored after each measurement.
Inputs are random (never zeros); every case can check its own output against float64
(``Case.verify``, used by the tests). Timing itself is :mod:`labs.core.measure.timer`'s.
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Sequence

from labs.core.measure.choices import GEMM_PRECISIONS, GEMV_PRECISIONS
from labs.core.measure.device import (DeviceInfo, free_cache, guarded, llc_bytes,
                                      check_fits, detect)
from labs.core.measure.errors import Unsupported
from labs.core.measure.timer import (Measurement, check_timing_args, TimingDevice, flush_bytes,
                                     l2_flusher, resolve_device, torch_threads, timed_measurement)
from labs.core.physics import formulas as _formulas
from labs.core.physics.validate import positive_int

__all__ = [
    "Case", "DTYPES", "ELEMENT_BYTES", "check_precision_supported", "checked_precision",
    "estimate_bytes", "gemm_case", "gemm_cost", "gemv_cost", "matmul_mode", "measure_case",
    "support_reason", "supported_precisions", "time_gemm", "time_gemv"
]

#: Allowance for library workspaces (cuBLAS/cuBLASLt keep tens of MB per handle).
_WORKSPACE_BYTES = {"cuda": 256 * 2**20, "cpu": 16 * 2**20}
ELEMENT_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
_OUT_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 2, "int8": 4}  # fp8->bf16, int8->int32
_OUT_FORMAT = {"fp8": "bf16", "int8": "fp32"}  # formulas' name for the output's storage bytes
#: Rows the fp8/int8 kernels need at least: torch._scaled_mm wants multiples of 16,
#: torch._int_mm more than 16 (and multiples of 8). A GEMV in those precisions is timed with
#: this many activation rows; the weight matrix still dominates the bytes moved.
_MIN_ROWS = {"fp8": 16, "int8": 24}


def checked_precision(precision, allowed: Sequence[str], name: str = "precision") -> str:
    if not isinstance(precision, str) or precision.strip().lower() not in allowed:
        raise KeyError(f"{name}={precision!r} is not a measurable precision; choose one of "
                       f"{', '.join(allowed)}")
    return precision.strip().lower()


def estimate_bytes(op: str, shape: Sequence[int], precision: str, *,
                   flush_l2: bool = False, kind: str = "cuda") -> int:
    """Bytes a measurement allocates: operands, output, a staging copy for fp8/int8 inputs,
    the cache-flush buffer when asked, and a library-workspace allowance.

    op "gemm": shape (m, n, k); "gemv": (n, k); "stream": (elements,) for copy/triad (3 arrays).
    """
    if op == "stream":
        (elements,) = shape
        e = positive_int("elements", elements)
        b = 3 * e * ELEMENT_BYTES[checked_precision(precision, ("fp32", "fp16", "bf16"))]
    elif op in ("gemm", "gemv"):
        p = checked_precision(precision, GEMM_PRECISIONS)
        if op == "gemm":
            m, n, k = (positive_int(a, v) for a, v in zip("mnk", shape))
        else:
            n, k = (positive_int(a, v) for a, v in zip("nk", shape))
            m = _MIN_ROWS.get(p, 1)
        el = ELEMENT_BYTES[p]
        b = (m * k + k * n) * el + m * n * _OUT_BYTES[p]
        if p in ("fp8", "int8"):  # random fp32 staging tensor of the larger operand
            b += max(m * k, k * n) * 4
    else:
        raise ValueError(f"op must be 'gemm', 'gemv' or 'stream', got {op!r}")
    if flush_l2:
        b += flush_bytes(kind)
    return int(b + _WORKSPACE_BYTES.get(kind, 0))


@contextmanager
def matmul_mode(torch, precision: str, kind: str):
    """fp32 = IEEE fp32 (TF32 and oneDNN reduced precision off); tf32 = TF32 on. Restores the
    global flags afterwards. Uses torch's per-backend ``fp32_precision`` API when it exists
    (mixing it with the legacy ``allow_tf32`` flag raises in recent torch), else the legacy one."""
    if precision not in ("fp32", "tf32"):
        yield
        return
    cuda_mm = torch.backends.cuda.matmul
    mkl_mm = getattr(getattr(torch.backends, "mkldnn", None), "matmul", None)
    if hasattr(cuda_mm, "fp32_precision"):
        targets = [(cuda_mm, "tf32" if precision == "tf32" else "ieee")]
        if mkl_mm is not None and hasattr(mkl_mm, "fp32_precision") and precision == "fp32":
            targets.append((mkl_mm, "ieee"))
        saved = [(obj, obj.fp32_precision) for obj, _ in targets]
        try:
            for obj, value in targets:
                obj.fp32_precision = value
            yield
        finally:
            for obj, value in saved:
                obj.fp32_precision = value
    else:  # torch before the fp32_precision API
        saved_flag = cuda_mm.allow_tf32
        saved_prec = torch.get_float32_matmul_precision()
        try:
            torch.set_float32_matmul_precision("high" if precision == "tf32" else "highest")
            cuda_mm.allow_tf32 = precision == "tf32"
            yield
        finally:
            torch.set_float32_matmul_precision(saved_prec)
            cuda_mm.allow_tf32 = saved_flag


@dataclass
class Case:
    """A ready-to-time operation: the callable, its cost and what to say about it."""

    fn: Callable[[], object]
    flops: float
    bytes: float
    note: str
    #: Poison the output, run once, return ||out - ref|| / ||ref|| against float64 (tests).
    verify: Callable[[], float] | None = None


def _verifier(dev: TimingDevice, out, run: Callable[[], object], reference: Callable[[], object]):
    """A check that every output element is written and right: NaN (or INT_MIN for int32)
    goes in first; the relative error against a float64 reference comes out."""
    torch = dev.torch

    def verify() -> float:
        out.fill_(float("nan") if out.is_floating_point() else -(2**31))
        run()
        dev.sync()
        got, ref = out.double(), reference().double()
        err = float(torch.linalg.vector_norm(got - ref) / torch.linalg.vector_norm(ref))
        return err if math.isfinite(err) else math.inf
    return verify


DTYPES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def check_precision_supported(dev: TimingDevice, precision: str, op: str) -> None:
    why = support_reason(dev, precision, op)
    if why:
        raise Unsupported(why)


def support_reason(dev: TimingDevice, precision: str, op: str = "gemm") -> str | None:
    """None when ``precision`` runs on this device with this torch; else a sentence why not."""
    torch, info = dev.torch, dev.info
    if info.kind == "cpu":
        if precision == "tf32":
            return ("TF32 is a tensor-core mode of NVIDIA GPUs (Ampere and newer); a CPU has "
                    "none. Measure fp32 instead.")
        if precision == "fp8":
            return ("CPUs have no FP8 matrix units: torch would emulate FP8, which says nothing "
                    "about the hardware. FP8 is measured on GPUs with compute capability 8.9+.")
    if info.kind == "cuda":
        cc = tuple(int(x) for x in (info.compute_capability or "0.0").split("."))
        is_hip = info.backend is not None and info.backend.startswith("ROCm")
        if precision in ("tf32", "bf16") and cc < (8, 0) and not is_hip:
            return (f"{precision} needs an Ampere-or-newer GPU (compute capability 8.0); "
                    f"{info.name} is {info.compute_capability}.")
        if precision == "fp8" and cc < (8, 9) and not is_hip:
            return (f"fp8 needs compute capability 8.9+ (Ada, Hopper, Blackwell); {info.name} "
                    f"is {info.compute_capability}.")
    if precision == "fp8" and not (hasattr(torch, "float8_e4m3fn") and hasattr(torch, "_scaled_mm")):
        return f"torch {torch.__version__} has no fp8 matmul (torch._scaled_mm)."
    if precision == "int8" and not hasattr(torch, "_int_mm"):
        return f"torch {torch.__version__} has no int8 matmul (torch._int_mm)."
    if precision in ("fp8", "int8"):
        return _probe(dev, precision)
    return None


_PROBES: dict = {}


def _probe(dev: TimingDevice, precision: str) -> str | None:
    """Run a tiny fp8/int8 matmul once per device to learn whether this torch build can."""
    key = (dev.info.torch_device, dev.info.name, precision)
    if key not in _PROBES:
        try:
            case = gemm_case(dev, 32, 32, 32, precision)
            case.fn()
            dev.sync()
            _PROBES[key] = None
        except Exception as e:
            _PROBES[key] = (f"torch {dev.torch.__version__} cannot run a {precision} matmul on "
                            f"{dev.info.name}: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    return _PROBES[key]


def _rotate(fns: list) -> Callable[[], object]:
    """One callable that runs ``fns`` in turn (weight copies for a cache-cold GEMV)."""
    if len(fns) == 1:
        return fns[0]
    state = {"i": 0}

    def fn():
        i = state["i"]
        state["i"] = i + 1 if i + 1 < len(fns) else 0
        return fns[i]()
    return fn


def gemm_case(dev: TimingDevice, m: int, n: int, k: int, precision: str, seed: int = 0,
               gemv: bool = False, copies: int = 1) -> Case:
    """Allocate random operands and return the matmul to time.

    Floats: C = A @ B into a preallocated C (no allocation inside the timed call); a GEMV is
    torch.mv(W, x) with W (n, k). fp8: torch._scaled_mm(A_e4m3, B_e4m3 (column-major), unit
    scales) -> bf16. int8: torch._int_mm(A, B (column-major)) -> int32. For fp8/int8, B is
    stored as an (n, k) weight matrix and transposed, the nn.Linear layout these kernels want.
    ``copies`` > 1 keeps that many copies of B/W and uses them in turn, so each call reads
    weights that are not in cache (a cache-cold GEMV without a flush).
    """
    torch = dev.torch
    g = dev.generator(seed)
    d = dev.device

    def weights(make):
        first = make()
        if copies == 1:
            return [first]
        # one allocation holding every copy (cheaper than many clones), used as views
        stack = first.unsqueeze(0).expand(copies, *first.shape).contiguous()
        return list(stack.unbind(0))

    if precision in DTYPES:
        dt = getattr(torch, DTYPES[precision])
        if gemv:  # y = W x, W in the (out, in) layout of a linear layer
            ws = weights(lambda: torch.randn(n, k, generator=g, device=d, dtype=dt))
            x = torch.randn(k, generator=g, device=d, dtype=dt)
            y = torch.empty(n, device=d, dtype=dt)
            fn = _rotate([lambda w=w: torch.mv(w, x, out=y) for w in ws])
            return Case(fn, 0.0, 0.0, "torch.mv", _verifier(
                dev, y, fn, lambda: ws[0].double() @ x.double()))
        a = torch.randn(m, k, generator=g, device=d, dtype=dt)
        bs = weights(lambda: torch.randn(k, n, generator=g, device=d, dtype=dt))
        c = torch.empty(m, n, device=d, dtype=dt)
        fn = _rotate([lambda b=b: torch.mm(a, b, out=c) for b in bs])
        return Case(fn, 0.0, 0.0, "torch.mm", _verifier(
            dev, c, fn, lambda: a.double() @ bs[0].double()))
    if precision == "fp8":
        for name, v in (("m", m), ("n", n), ("k", k)):
            if v % 16:
                raise Unsupported(f"fp8 matmul (torch._scaled_mm) needs {name} to be a multiple "
                                  f"of 16; got {name}={v}.")
        a = torch.randn(m, k, generator=g, device=d).to(torch.float8_e4m3fn)
        bts = weights(lambda: torch.randn(n, k, generator=g, device=d).to(torch.float8_e4m3fn))
        one = torch.ones((), device=d, dtype=torch.float32)
        c = torch.empty(m, n, device=d, dtype=torch.bfloat16)
        fn = _rotate([lambda bt=bt: torch._scaled_mm(a, bt.t(), one, one,
                                                     out_dtype=torch.bfloat16, out=c)
                      for bt in bts])
        return Case(fn, 0.0, 0.0, "torch._scaled_mm e4m3, unit scales, bf16 output",
                     _verifier(dev, c, fn, lambda: a.double() @ bts[0].double().t()))
    if precision == "int8":
        if m <= 16 or k % 8 or n % 8:
            raise Unsupported(f"int8 matmul (torch._int_mm) needs m > 16 and k, n multiples of "
                              f"8; got m={m}, n={n}, k={k}.")
        a = torch.randint(-128, 128, (m, k), generator=g, device=d, dtype=torch.int8)
        bts = weights(lambda: torch.randint(-128, 128, (n, k), generator=g, device=d,
                                            dtype=torch.int8))
        c = torch.empty(m, n, device=d, dtype=torch.int32)
        fn = _rotate([lambda bt=bt: torch._int_mm(a, bt.t(), out=c) for bt in bts])
        return Case(fn, 0.0, 0.0, "torch._int_mm, int32 output",
                     _verifier(dev, c, fn, lambda: a.double() @ bts[0].double().t()))
    raise KeyError(f"precision={precision!r} is not a measurable precision")


def _cold_copies(info: DeviceInfo, weight_bytes: float) -> int:
    """Weight copies whose total is >= 2x the last-level cache (GPU L2 / CPU LLC), so a
    rotation through them always reads from memory; at most 64."""
    cache = (info.cache_mb * 2**20) if info.cache_mb else (llc_bytes() or 64 * 2**20)
    return int(min(max(math.ceil(2 * cache / weight_bytes), 1), 64))


def measure_case(dev: TimingDevice, op: str, shape: tuple, precision: str, build: Callable[[], Case], *,
             budget_s, warmup_s, reps, min_reps, max_reps, flush_l2, threads) -> Measurement:
    """Build the case (allocating) and time it with the timer, in ``precision``'s matmul mode;
    an out-of-memory anywhere in it becomes OutOfMemory with the tensors released."""
    check_timing_args(budget_s, warmup_s, min_reps, max_reps)
    torch = dev.torch

    def run():
        # everything that holds tensors lives in this frame, gone when it returns
        with torch.no_grad(), torch_threads(torch, threads), matmul_mode(torch, precision,
                                                                     dev.info.kind):
            case = build()
            return timed_measurement(
                dev, case.fn, budget_s=budget_s, warmup_s=warmup_s, reps=reps,
                min_reps=min_reps, max_reps=max_reps, flush=l2_flusher(dev, flush_l2), op=op,
                shape=shape, precision=precision, flops=case.flops, nbytes=case.bytes,
                note=case.note)

    m = guarded(f"{op} {'x'.join(map(str, shape))} {precision}", dev.info, run)
    if dev.cuda:
        free_cache()  # give the memory back between sizes of a sweep
    return m


def gemm_cost(m, n, k, precision: str) -> _formulas.Cost:
    """Compulsory FLOPs and bytes of the GEMM as this module runs it (fp8 writes bf16, int8
    writes int32 = 4 bytes, tf32 stores fp32)."""
    p = checked_precision(precision, GEMM_PRECISIONS)
    return _formulas.gemm(m, n, k, p, out_precision=_OUT_FORMAT.get(p))


def time_gemm(m, n, k, precision: str = "fp32", *, device: str | DeviceInfo | None = None,
              budget_s: float = 0.5, warmup_s: float = 0.1, reps: int | None = None,
              min_reps: int = 5, max_reps: int = 1000, flush_l2: bool = False,
              threads: int | None = None, seed: int = 0) -> Measurement:
    """Time C[M,N] = A[M,K] @ B[K,N] in ``precision`` on ``device``.

    ``budget_s`` bounds the timed repetitions (warm-up is ``warmup_s`` more); ``reps`` fixes
    their number instead. ``threads`` sets torch's CPU threads for this call only.
    Raises Unsupported, DoesNotFit (before allocating), OutOfMemory, Unavailable.
    """
    m, n, k = positive_int("m", m), positive_int("n", n), positive_int("k", k)
    p = checked_precision(precision, GEMM_PRECISIONS)
    dev = resolve_device(device)
    check_precision_supported(dev, p, "gemm")
    check_fits(estimate_bytes("gemm", (m, n, k), p, flush_l2=flush_l2, kind=dev.info.kind),
               dev.info)
    cost = gemm_cost(m, n, k, p)

    def build():
        case = gemm_case(dev, m, n, k, p, seed)
        return Case(case.fn, cost.flops, cost.bytes, case.note)

    return measure_case(dev, "gemm", (m, n, k), p, build, budget_s=budget_s, warmup_s=warmup_s,
                    reps=reps, min_reps=min_reps, max_reps=max_reps, flush_l2=flush_l2,
                    threads=threads)


def gemv_cost(n, k, precision: str) -> _formulas.Cost:
    """Compulsory FLOPs and bytes of y[N] = W[N,K] x[K] (labs.core.physics.formulas.gemv)."""
    p = checked_precision(precision, GEMM_PRECISIONS)
    return _formulas.gemv(n, k, p)


def time_gemv(n, k, precision: str = "fp16", *, device: str | DeviceInfo | None = None,
              budget_s: float = 0.5, warmup_s: float = 0.1, reps: int | None = None,
              min_reps: int = 5, max_reps: int = 2000, cold_cache: bool = True,
              threads: int | None = None, seed: int = 0) -> Measurement:
    """Time the decode GEMV y[N] = W[N,K] x[K] (one token through a linear layer).

    ``cold_cache`` (default True): in a real model each layer's weights come from memory,
    while one small W timed in a loop would sit in L2/LLC and measure the cache. So W is
    copied until the copies fill twice the last-level cache and the calls rotate through them
    (no flush is timed; memory use grows accordingly and is checked first).
    fp8 and int8 kernels need several activation rows (fp8: 16, int8: 24); they are timed with
    that many rows, while the FLOPs and bytes counted are the GEMV's (the weights dominate).
    """
    n, k = positive_int("n", n), positive_int("k", k)
    p = checked_precision(precision, GEMM_PRECISIONS)
    dev = resolve_device(device)
    check_precision_supported(dev, p, "gemv")
    weight_bytes = n * k * ELEMENT_BYTES[p]
    copies = _cold_copies(dev.info, weight_bytes) if cold_cache else 1
    check_fits(estimate_bytes("gemv", (n, k), p, kind=dev.info.kind)
               + (copies - 1) * weight_bytes, dev.info)
    cost = gemv_cost(n, k, p)
    rows = _MIN_ROWS.get(p)

    def build():
        if rows:
            case = gemm_case(dev, rows, n, k, p, seed, copies=copies)
            note = f"{case.note}; timed with {rows} activation rows (kernel minimum)"
        else:
            case = gemm_case(dev, 1, n, k, p, seed, gemv=True, copies=copies)
            note = case.note
        if copies > 1:
            note += f"; {copies} weight copies in turn (cache-cold)"
        return Case(case.fn, cost.flops, cost.bytes, note)

    return measure_case(dev, "gemv", (n, k), p, build, budget_s=budget_s, warmup_s=warmup_s,
                    reps=reps, min_reps=min_reps, max_reps=max_reps, flush_l2=False,
                    threads=threads)


def supported_precisions(device: str | DeviceInfo | None = None, op: str = "gemm") -> dict:
    """{precision: None if this device and torch can run it, else a sentence why not}."""
    if op not in ("gemm", "gemv"):
        raise ValueError(f"op must be 'gemm' or 'gemv', got {op!r}")
    info = detect(device)
    names = GEMM_PRECISIONS if op == "gemm" else GEMV_PRECISIONS
    if not info.available:
        return {p: info.message for p in names}
    dev = resolve_device(info)
    return {p: support_reason(dev, p, op) for p in names}


