"""Live measurement: time real GEMMs, GEMVs and memory bandwidth on this machine.

torch is optional (the ``live`` extra) and imported lazily, so ``import labs.core.measure``
works without torch and in a browser (WASM) run. Nothing runs at import; labs call these
functions only behind a run button (see :mod:`labs.core.measure.live`). Never imports marimo.

API (units: seconds, TFLOP/s = 1e12/s (TOPS for int8), GB/s = 1e9 B/s, bytes)::

    info = detect(device=None)          # DeviceInfo; never raises. info.available, info.message,
                                        # info.kind "cuda"|"cpu"|"none", info.registry_key
                                        # ("NVIDIA H200" -> "h200-sxm"), info.spec() -> Device|None
    supported_precisions(device=None, op="gemm")   # {precision: None if it runs, else why not}
    m = time_gemm(m, n, k, "bf16", device=None, budget_s=0.5, warmup_s=0.1, reps=None,
                  flush_l2=False, threads=None)     # Measurement: median_s, p10_s, p90_s,
                                                   # achieved_tflops, effective_gbs, reps, ...
    time_gemv(n, k, "fp16", ...)        # y[N] = W[N,K] x[K]; cache-cold (rotates W copies)
    stream_bandwidth(device=None, size_mb=None)    # Bandwidth: .copy, .triad, .gbs (best)
    emp = empirical_roofline(device=None, precisions=None, budget_s=30)
    emp.as_device()                     # a hardware.custom Device: overlay it on a figure
    sweep_square_gemm(sizes, "fp32", budget_s=30, reference=None, progress=None)  # rows
    sweep_gemv(shapes, precisions, budget_s=30, reference=None, progress=None)     # rows
    estimate_bytes("gemm", (m, n, k), "bf16"); check_fits(nbytes, device)
    compare_with_reference(m, n, k, "fp32")  # this timer vs torch.utils.benchmark / do_bench
    to_csv(rows); ledger_payload(info, rows)

Precision modes are explicit: ``fp32`` runs with TF32 *off* (IEEE fp32), ``tf32`` with it on
(GPU, compute capability >= 8.0), ``fp16``/``bf16`` as those dtypes, ``fp8`` (e4m3 through
``torch._scaled_mm``, bf16 output; GPUs with compute capability >= 8.9) and ``int8``
(``torch._int_mm``, int32 output). Global torch flags are restored after each measurement.

Method (after /work/.library METHOD.md and common practice): random inputs (never zeros),
warm-up for a time budget, then timed repetitions; CUDA events around each repetition on a
GPU, ``time.perf_counter`` on a CPU (with torch's thread count recorded); median and
percentiles over repetitions. GEMMs can flush the cache between repetitions (``flush_l2``:
an untimed buffer write, as triton.testing.do_bench does); GEMVs are timed cache-cold by
rotating through copies of the weights that together exceed twice the last-level cache.

Failure modes are exceptions the labs can show as a message: ``Unavailable`` (no torch, no
GPU, WASM), ``Unsupported`` (precision/shape the hardware or torch cannot run),
``DoesNotFit`` (refused before allocating), ``OutOfMemory`` (caught, cache freed); all derive
from ``MeasureError``. Bad arguments raise ``ValueError``/``KeyError`` naming the argument.
"""

from __future__ import annotations

import csv
import datetime as _dt
import gc
import io
import math
import os
import platform
import re
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Callable, Iterable, Mapping, Sequence

from labs.core.physics import formulas as _formulas
from labs.core.physics import hardware as _hw
from labs.core.physics import roofline as _roofline
from labs.core.physics import units as _units
from labs.core.physics._validate import positive, positive_int

GEMM_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
GEMV_PRECISIONS = ("fp32", "fp16", "bf16", "fp8", "int8")
#: Square sizes Lab 1 sweeps (the budget and memory decide how far a machine gets).
SQUARE_SIZES = (128, 256, 512, 1024, 2048, 4096, 8192)

#: Fraction of free memory a measurement may plan to use (the rest: allocator slack, other
#: processes on a shared machine, library workspaces).
MEMORY_HEADROOM = {"cuda": 0.9, "cpu": 0.6}
#: Allowance for library workspaces (cuBLAS/cuBLASLt keep tens of MB per handle).
_WORKSPACE_BYTES = {"cuda": 256 * 2**20, "cpu": 16 * 2**20}
#: Bytes written to evict the GPU L2 between repetitions (as triton.testing.do_bench does).
_GPU_FLUSH_BYTES = 256 * 2**20

Progress = Callable[[int, int, str], None]  # (done, total, label)


# --- errors ---------------------------------------------------------------------------------

class MeasureError(RuntimeError):
    """Base of every measurement failure; ``str(err)`` is a sentence for the student."""


class Unavailable(MeasureError):
    """Nothing can be measured here (no torch, no such device, browser/WASM run)."""


class Unsupported(MeasureError):
    """The hardware or torch cannot run this precision or shape."""


class DoesNotFit(MeasureError):
    """Refused before allocating: the tensors would not fit in free memory."""


class OutOfMemory(MeasureError):
    """The device ran out of memory anyway; the cache was freed and the run abandoned."""


# --- device detection -----------------------------------------------------------------------

_TORCH = None
_TORCH_ERR = None


def _torch():
    """torch, or None (the import error kept for the message). Imported once, lazily."""
    global _TORCH, _TORCH_ERR
    if _TORCH is None and _TORCH_ERR is None:
        try:
            import torch  # noqa: PLC0415  (lazy on purpose: torch is optional)

            _TORCH = torch
        except Exception as e:  # ImportError, or a broken install
            _TORCH_ERR = f"{type(e).__name__}: {e}"
    return _TORCH


#: GPU name (as torch reports it, lower-cased) -> registry key. First match wins. Variants with
#: other memory, bandwidth or clocks (PCIe vs SXM, 40 GB, NVL, laptop, 'D') must NOT match:
#: their spec peaks differ, so they get no registry entry rather than a wrong one.
_REGISTRY_PATTERNS = (
    (r"\bh200\b(?!.*\bnvl\b)", "h200-sxm"),
    (r"\bh100\b(?!.*\b(nvl|pcie)\b).*\b(sxm\d?|hbm3)\b", "h100-sxm"),
    (r"\bh100\b.*\bpcie\b", "h100-pcie"),
    (r"\bb200\b", "b200"),
    (r"\ba100\b.*\bsxm\d?\b.*\b80\s?gb\b", "a100-sxm-80gb"),
    (r"\bgb10\b", "gb10"),
    (r"\brtx 5090\b(?!.*\blaptop\b)(?! d\b)", "rtx-5090"),
    (r"\brtx 5060 laptop\b", "rtx-5060-laptop"),
    (r"\brtx 5060\b(?! ti\b)(?!.*\blaptop\b)", "rtx-5060"),
    (r"\brtx 4090\b(?!.*\blaptop\b)(?! d\b)", "rtx-4090"),
    (r"^(nvidia )?l4$", "l4"),
    (r"\bmi300x\b", "mi300x"),
)


def registry_key_for(name: str) -> str | None:
    """Registry key for a device name as torch/nvidia-smi prints it, or None when unknown.

    >>> registry_key_for("NVIDIA H200"), registry_key_for("NVIDIA H100 80GB HBM3")
    ('h200-sxm', 'h100-sxm')
    """
    n = " ".join(str(name).lower().replace("-", " ").split())
    for pattern, key in _REGISTRY_PATTERNS:
        if re.search(pattern, n):
            return key
    return None


@dataclass(frozen=True)
class DeviceInfo:
    """What ``detect`` found. ``message`` is one sentence a notebook can show as is."""

    kind: str  # "cuda" (also ROCm, which torch drives through the cuda API), "cpu" or "none"
    name: str
    message: str
    torch_device: str | None = None  # "cuda:0" or "cpu"; None when nothing can be measured
    registry_key: str | None = None
    memory_gb: float | None = None  # GPU memory, or the machine's RAM for the CPU
    sm_count: int | None = None
    compute_capability: str | None = None
    sm_clock_mhz: float | None = None  # max SM clock the driver reports
    memory_clock_mhz: float | None = None
    memory_bus_bits: int | None = None
    cache_mb: float | None = None  # GPU L2, or the CPU's last-level cache
    cores: int | None = None  # logical CPUs this process may use (CPU)
    threads: int | None = None  # torch intra-op threads (CPU); what a CPU timing runs with
    torch_version: str | None = None
    backend: str | None = None  # "CUDA 13.0", "ROCm 6.2", "CPU (MKL)"...

    @property
    def available(self) -> bool:
        return self.kind != "none"

    def spec(self) -> _hw.Device | None:
        """The registry entry with the spec sheet's peaks, when this device is known."""
        return _hw.get(self.registry_key) if self.registry_key else None

    def as_dict(self) -> dict:
        return asdict(self)

    def summary(self) -> str:
        """One line: name, memory, SMs or threads, registry entry."""
        if not self.available:
            return self.message
        bits = [self.name]
        if self.memory_gb:
            bits.append(f"{self.memory_gb:.1f} GB")
        if self.kind == "cuda":
            if self.sm_count:
                bits.append(f"{self.sm_count} SMs")
            if self.compute_capability:
                bits.append(f"compute capability {self.compute_capability}")
        else:
            bits.append(f"{self.threads} torch threads on {self.cores} logical CPUs")
        bits.append(f"registry: {self.registry_key}" if self.registry_key
                    else "not in the registry")
        return " · ".join(bits)


_NO_TORCH = ("torch is not installed, so this machine cannot be measured. Install it with "
             "pip install -e '.[live]' (on a CPU-only machine install the CPU build of torch "
             "first) and restart the notebook.")
_WASM = ("This notebook runs in the browser (WebAssembly), where torch cannot run, so nothing "
         "can be measured. Run the lab locally (pip install -e '.[live]', then marimo edit) to "
         "measure your own machine.")


def _none(message: str, torch=None) -> DeviceInfo:
    return DeviceInfo("none", "no device", message,
                      torch_version=getattr(torch, "__version__", None))


def detect(device: str | DeviceInfo | None = None) -> DeviceInfo:
    """Find the device to measure: ``None`` = a CUDA GPU if torch sees one, else the CPU;
    ``"cuda"``, ``"cuda:1"`` or ``"cpu"`` to choose. Never raises: problems become
    ``kind="none"`` with ``message`` saying why and what to do."""
    if isinstance(device, DeviceInfo):
        return device
    try:
        return _detect(device)
    except Exception as e:  # a notebook must get a message, never a traceback
        return _none(f"Device detection failed ({type(e).__name__}: {e}); nothing will be "
                     "measured.")


def _detect(device) -> DeviceInfo:
    if sys.platform == "emscripten":
        return _none(_WASM)
    if device is not None and not isinstance(device, str):
        return _none(f"device must be None, 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    torch = _torch()
    if torch is None:
        return _none(f"{_NO_TORCH} ({_TORCH_ERR})")
    want = (device or "").strip().lower()
    if want not in ("", "cpu") and not re.fullmatch(r"cuda(:\d+)?", want):
        return _none(f"device must be None, 'cpu', 'cuda' or 'cuda:N', got {device!r}", torch)
    cuda_ok = bool(torch.cuda.is_available())
    if want.startswith("cuda"):
        if not cuda_ok:
            return _none(_why_no_cuda(torch) + " Measure the CPU instead (device='cpu').", torch)
        return _cuda_info(torch, want if ":" in want else "cuda:0")
    if want == "" and cuda_ok:
        return _cuda_info(torch, "cuda:0")
    info = _cpu_info(torch)
    if want == "":
        note = _why_no_cuda(torch)
        return DeviceInfo(**{**asdict(info), "message": f"{note} Measuring the CPU instead: "
                                                        f"{_cpu_desc(info)}"})
    return info


def _why_no_cuda(torch) -> str:
    if getattr(torch.version, "cuda", None) is None and getattr(torch.version, "hip", None) is None:
        why = f"No CUDA GPU: torch {torch.__version__} is a CPU-only build."
    else:
        why = f"No CUDA GPU visible to torch {torch.__version__} (no GPU or no driver)."
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    if mps is not None and getattr(mps, "is_available", lambda: False)():
        why += " (Apple GPUs (MPS) are not measured by these labs yet.)"
    return why


def _cuda_info(torch, dev: str) -> DeviceInfo:
    idx = int(dev.split(":")[1])
    if idx >= torch.cuda.device_count():
        return _none(f"{dev} does not exist: torch sees {torch.cuda.device_count()} GPU(s).", torch)
    p = torch.cuda.get_device_properties(idx)
    name = str(p.name)
    key = registry_key_for(name)
    khz = getattr(p, "clock_rate", None)  # cudaDeviceProp reports kHz
    mem_khz = getattr(p, "memory_clock_rate", None)
    l2 = getattr(p, "L2_cache_size", None)
    hip = getattr(torch.version, "hip", None)
    backend = f"ROCm {hip}" if hip else f"CUDA {torch.version.cuda}"
    if key:
        msg = f"Measuring {name} (spec peaks from the registry entry {key!r})."
    else:
        msg = (f"Measuring {name}; it is not in the registry, so compare with the empirical "
               "roofline measured here rather than a spec sheet.")
    return DeviceInfo(
        "cuda", name, msg, dev, key, p.total_memory / 1e9, int(p.multi_processor_count),
        f"{p.major}.{p.minor}", khz / 1e3 if khz else None, mem_khz / 1e3 if mem_khz else None,
        getattr(p, "memory_bus_width", None) or None, l2 / 2**20 if l2 else None, None, None,
        torch.__version__, backend)


def _cpu_desc(info: DeviceInfo) -> str:
    return (f"{info.name} with {info.threads} torch thread(s) on {info.cores} logical CPU(s). "
            "CPUs are not in the registry: compare with the empirical roofline.")


def _cpu_info(torch) -> DeviceInfo:
    name = _cpu_model()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    blas = "MKL" if torch.backends.mkl.is_available() else "no MKL"
    ram, llc = _ram_bytes("MemTotal"), _llc_bytes()
    info = DeviceInfo("cpu", name, "", "cpu", None, ram / 1e9 if ram else None, None, None,
                      None, None, None, llc / 2**20 if llc else None, cores,
                      torch.get_num_threads(), torch.__version__, f"CPU ({blas})")
    return DeviceInfo(**{**asdict(info), "message": f"Measuring the CPU: {_cpu_desc(info)}"})


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "CPU"


def _ram_bytes(field_name: str) -> float | None:
    """A /proc/meminfo field in bytes (Linux), else None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(field_name + ":"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _llc_bytes() -> float | None:
    """Largest CPU cache size from sysfs (the last-level cache), else None."""
    best = None
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        for entry in os.listdir(base):
            try:
                with open(os.path.join(base, entry, "size")) as f:
                    s = f.read().strip().upper()
            except OSError:
                continue
            mult = {"K": 2**10, "M": 2**20, "G": 2**30}.get(s[-1:], 1)
            v = float(s.rstrip("KMG")) * mult
            best = v if best is None else max(best, v)
    except (OSError, ValueError):
        return None
    return best


# --- memory safety --------------------------------------------------------------------------

_ELEMENT_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
_OUT_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 2, "int8": 4}  # fp8->bf16, int8->int32
_OUT_FORMAT = {"fp8": "bf16", "int8": "fp32"}  # formulas' name for the output's storage bytes
#: Rows the fp8/int8 kernels need at least: torch._scaled_mm wants multiples of 16,
#: torch._int_mm more than 16 (and multiples of 8). A GEMV in those precisions is timed with
#: this many activation rows; the weight matrix still dominates the bytes moved.
_MIN_ROWS = {"fp8": 16, "int8": 24}


def _precision(precision, allowed: Sequence[str], name: str = "precision") -> str:
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
        b = 3 * e * _ELEMENT_BYTES[_precision(precision, ("fp32", "fp16", "bf16"))]
    elif op in ("gemm", "gemv"):
        p = _precision(precision, GEMM_PRECISIONS)
        if op == "gemm":
            m, n, k = (positive_int(a, v) for a, v in zip("mnk", shape))
        else:
            n, k = (positive_int(a, v) for a, v in zip("nk", shape))
            m = _MIN_ROWS.get(p, 1)
        el = _ELEMENT_BYTES[p]
        b = (m * k + k * n) * el + m * n * _OUT_BYTES[p]
        if p in ("fp8", "int8"):  # random fp32 staging tensor of the larger operand
            b += max(m * k, k * n) * 4
    else:
        raise ValueError(f"op must be 'gemm', 'gemv' or 'stream', got {op!r}")
    if flush_l2:
        b += _flush_bytes(kind)
    return int(b + _WORKSPACE_BYTES.get(kind, 0))


def _flush_bytes(kind: str) -> int:
    if kind == "cuda":
        return _GPU_FLUSH_BYTES
    llc = _llc_bytes() or 32 * 2**20
    return int(min(max(2 * llc, 64 * 2**20), 1 << 30))


def free_bytes(device: str | DeviceInfo | None = None) -> float | None:
    """Free memory in bytes: GPU free + torch's reusable cache, or MemAvailable on the CPU."""
    info = detect(device)
    if info.kind == "cuda":
        torch = _torch()
        idx = int(info.torch_device.split(":")[1])
        free, _total = torch.cuda.mem_get_info(idx)
        return float(free + torch.cuda.memory_reserved(idx) - torch.cuda.memory_allocated(idx))
    if info.kind == "cpu":
        return _ram_bytes("MemAvailable")
    return None


def fits(nbytes: float, device: str | DeviceInfo | None = None) -> tuple[bool, str]:
    """(ok, sentence): whether ``nbytes`` fits in the free memory (with headroom)."""
    info = detect(device)
    if not info.available:
        return False, info.message
    free = free_bytes(info)
    if free is None:
        return True, "free memory unknown on this system: not checked"
    limit = free * MEMORY_HEADROOM[info.kind]
    if nbytes > limit:
        return False, (f"needs {nbytes / 1e9:.2f} GB but only {free / 1e9:.2f} GB is free on "
                       f"{info.name} (this tool uses at most {MEMORY_HEADROOM[info.kind]:.0%} of "
                       "it): refused before allocating")
    return True, f"needs {nbytes / 1e9:.2f} GB of {free / 1e9:.2f} GB free"


def check_fits(nbytes: float, device: str | DeviceInfo | None = None) -> None:
    """Raise ``DoesNotFit`` with a clear sentence if ``nbytes`` will not fit."""
    ok, why = fits(nbytes, device)
    if not ok:
        raise DoesNotFit(why)


def _is_oom(e: BaseException) -> bool:
    s = str(e).lower()
    return type(e).__name__ == "OutOfMemoryError" or "out of memory" in s or (
        "can't allocate memory" in s) or isinstance(e, MemoryError)


def _free_cache() -> None:
    gc.collect()
    torch = _TORCH
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def _guarded(what: str, info: DeviceInfo, run: Callable[[], object]):
    """Run ``run`` (which allocates in its own frame); an out-of-memory becomes OutOfMemory
    after the tensors are released and the allocator's cache emptied."""
    oom = None
    try:
        return run()
    except MeasureError:
        raise
    except Exception as e:
        if not _is_oom(e):
            raise
        oom = str(e).strip().splitlines()[0][:200]
    # outside the except block: the traceback (and the tensors its frames hold) is gone
    _free_cache()
    raise OutOfMemory(f"{what} ran out of memory on {info.name} ({oom}); the memory was freed. "
                      "Try a smaller size.")


# --- flags, threads, timing -----------------------------------------------------------------

@contextmanager
def _matmul_mode(torch, precision: str, kind: str):
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


@contextmanager
def _threads(torch, threads: int | None):
    if threads is None:
        yield
        return
    saved = torch.get_num_threads()
    torch.set_num_threads(positive_int("threads", threads))
    try:
        yield
    finally:
        torch.set_num_threads(saved)


@dataclass(frozen=True)
class Measurement:
    """One timed operation. Times in seconds over ``reps`` repetitions (after warm-up)."""

    op: str  # "gemm", "gemv", "copy", "triad"
    shape: tuple[int, ...]
    precision: str
    device: str  # device name
    kind: str  # "cuda" or "cpu"
    timer: str  # "cuda events" or "time.perf_counter"
    threads: int | None  # torch threads (CPU timings); None on a GPU
    reps: int
    median_s: float
    p10_s: float
    p90_s: float
    q25_s: float
    q75_s: float
    min_s: float
    flops: float  # useful FLOPs per repetition (2MNK; 2NK for a GEMV)
    bytes: float  # compulsory bytes per repetition (labs.core.physics.formulas; STREAM convention)
    flush_l2: bool
    note: str = ""
    samples_s: tuple[float, ...] = field(default=(), repr=False)

    @property
    def achieved_tflops(self) -> float:
        """FLOP/s / 1e12 at the median (TOPS for int8)."""
        return self.flops / self.median_s / 1e12

    @property
    def effective_gbs(self) -> float:
        """Compulsory bytes / median time, GB/s."""
        return self.bytes / self.median_s / 1e9

    @property
    def spread(self) -> float:
        """(p90 - p10) / median: how noisy the repetitions were."""
        return (self.p90_s - self.p10_s) / self.median_s

    @property
    def shape_label(self) -> str:
        return "×".join(str(s) for s in self.shape)

    def as_row(self) -> dict:
        """Flat dict for tables, CSV and the ledger (times in ms)."""
        return {"op": self.op, "shape": self.shape_label, "precision": self.precision,
                "device": self.device, "timer": self.timer, "threads": self.threads,
                "reps": self.reps, "median_ms": self.median_s * 1e3, "p10_ms": self.p10_s * 1e3,
                "p90_ms": self.p90_s * 1e3, "achieved_tflops": self.achieved_tflops,
                "effective_gbs": self.effective_gbs, "flush_l2": self.flush_l2,
                "note": self.note}


@dataclass
class _Dev:
    """What the timing loop needs to know about the device it runs on."""

    info: DeviceInfo
    torch: object
    device: object  # torch.device

    @property
    def cuda(self) -> bool:
        return self.info.kind == "cuda"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.device)

    def generator(self, seed: int):
        g = self.torch.Generator(device=self.device)
        g.manual_seed(seed)
        return g


def _resolve(device) -> _Dev:
    info = detect(device)
    if not info.available:
        raise Unavailable(info.message)
    torch = _torch()
    return _Dev(info, torch, torch.device(info.torch_device))


def _stats(samples: Sequence[float]) -> dict:
    import numpy as np

    a = np.asarray(samples, dtype=float)
    q = np.percentile(a, [10, 25, 50, 75, 90])
    return {"p10_s": float(q[0]), "q25_s": float(q[1]), "median_s": float(q[2]),
            "q75_s": float(q[3]), "p90_s": float(q[4]), "min_s": float(a.min())}


def _warm_up(dev: _Dev, fn: Callable[[], object], warmup_s: float,
             flush: Callable[[], object] | None) -> float:
    """At least two calls (the first pays for library handles, kernel selection, page
    faults), then more until ``warmup_s`` has passed. Returns one more call's time, alone."""
    t0 = time.perf_counter()
    calls = 0
    while calls < 2 or (time.perf_counter() - t0 < warmup_s and calls < 10_000):
        fn()
        calls += 1
        dev.sync()
    if flush is not None:
        flush()
        dev.sync()
    t1 = time.perf_counter()
    fn()
    dev.sync()
    return max(time.perf_counter() - t1, 1e-7)


def _timed_reps(dev: _Dev, fn: Callable[[], object], n: int,
                flush: Callable[[], object] | None) -> list[float]:
    """``n`` timed calls of ``fn`` (seconds each). GPU: a CUDA event pair around each call,
    one sync at the end (the flush, when asked, is queued before the start event, so it is
    not timed). CPU: time.perf_counter around each call (CPU ops return when done)."""
    if dev.cuda:
        torch = dev.torch
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        # Keep the GPU busy (untimed) while the host queues start event, kernel, end event:
        # otherwise a short kernel's launch gap lands between the events and is timed.
        spacer = flush if flush is not None else _gpu_spacer(dev)
        for i in range(n):
            if spacer is not None:
                spacer()
            starts[i].record()
            fn()
            ends[i].record()
        dev.sync()
        return [s.elapsed_time(e) / 1e3 for s, e in zip(starts, ends)]
    out = []
    clock = time.perf_counter
    for _ in range(n):
        if flush is not None:
            flush()
        t = clock()
        fn()
        out.append(clock() - t)
    return out


def _gpu_spacer(dev: _Dev, microseconds: float = 50.0):
    """An untimed ~50 µs GPU spin (torch.cuda._sleep) queued before each start event."""
    sleep = getattr(dev.torch.cuda, "_sleep", None)
    if sleep is None:
        return None
    cycles = int(microseconds * (dev.info.sm_clock_mhz or 2000.0))
    return lambda: sleep(cycles)


def _gpu_clock_mhz(info: DeviceInfo) -> float | None:
    """The SM clock right now (MHz, through NVML when torch can reach it), else None."""
    try:
        return float(_torch().cuda.clock_rate(int(info.torch_device.split(":")[1])))
    except Exception:
        return None


def _time_fn(dev: _Dev, fn: Callable[[], object], *, budget_s: float, warmup_s: float,
             reps: int | None, min_reps: int, max_reps: int,
             flush: Callable[[], object] | None) -> list[float]:
    """Per-repetition times of ``fn`` in seconds: warm up, then as many repetitions as fit in
    ``budget_s`` by the last warm-up call's time (clamped to [min_reps, max_reps]), or
    ``reps`` if given."""
    one = _warm_up(dev, fn, warmup_s, flush)
    n = reps if reps is not None else int(min(max(budget_s / one, min_reps), max_reps))
    return _timed_reps(dev, fn, positive_int("reps", n), flush)


def _flusher(dev: _Dev, enabled: bool):
    if not enabled:
        return None
    buf = dev.torch.empty(_flush_bytes(dev.info.kind) // 4, dtype=dev.torch.float32,
                          device=dev.device)
    return buf.zero_


@dataclass
class _Case:
    """A ready-to-time operation: the callable, its cost and what to say about it."""

    fn: Callable[[], object]
    flops: float
    bytes: float
    note: str
    #: Poison the output, run once, return ||out - ref|| / ||ref|| against float64 (tests).
    verify: Callable[[], float] | None = None


def _verifier(dev: _Dev, out, run: Callable[[], object], reference: Callable[[], object]):
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


_DTYPES = {"fp32": "float32", "tf32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def _check_precision_supported(dev: _Dev, precision: str, op: str) -> None:
    why = _support_reason(dev, precision, op)
    if why:
        raise Unsupported(why)


def _support_reason(dev: _Dev, precision: str, op: str = "gemm") -> str | None:
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


def _probe(dev: _Dev, precision: str) -> str | None:
    """Run a tiny fp8/int8 matmul once per device to learn whether this torch build can."""
    key = (dev.info.torch_device, dev.info.name, precision)
    if key not in _PROBES:
        try:
            case = _gemm_case(dev, 32, 32, 32, precision)
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


def _gemm_case(dev: _Dev, m: int, n: int, k: int, precision: str, seed: int = 0,
               gemv: bool = False, copies: int = 1) -> _Case:
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

    if precision in _DTYPES:
        dt = getattr(torch, _DTYPES[precision])
        if gemv:  # y = W x, W in the (out, in) layout of a linear layer
            ws = weights(lambda: torch.randn(n, k, generator=g, device=d, dtype=dt))
            x = torch.randn(k, generator=g, device=d, dtype=dt)
            y = torch.empty(n, device=d, dtype=dt)
            fn = _rotate([lambda w=w: torch.mv(w, x, out=y) for w in ws])
            return _Case(fn, 0.0, 0.0, "torch.mv", _verifier(
                dev, y, fn, lambda: ws[0].double() @ x.double()))
        a = torch.randn(m, k, generator=g, device=d, dtype=dt)
        bs = weights(lambda: torch.randn(k, n, generator=g, device=d, dtype=dt))
        c = torch.empty(m, n, device=d, dtype=dt)
        fn = _rotate([lambda b=b: torch.mm(a, b, out=c) for b in bs])
        return _Case(fn, 0.0, 0.0, "torch.mm", _verifier(
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
        return _Case(fn, 0.0, 0.0, "torch._scaled_mm e4m3, unit scales, bf16 output",
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
        return _Case(fn, 0.0, 0.0, "torch._int_mm, int32 output",
                     _verifier(dev, c, fn, lambda: a.double() @ bts[0].double().t()))
    raise KeyError(f"precision={precision!r} is not a measurable precision")


def _cold_copies(info: DeviceInfo, weight_bytes: float) -> int:
    """Weight copies whose total is >= 2x the last-level cache (GPU L2 / CPU LLC), so a
    rotation through them always reads from memory; at most 64."""
    cache = (info.cache_mb * 2**20) if info.cache_mb else (_llc_bytes() or 64 * 2**20)
    return int(min(max(math.ceil(2 * cache / weight_bytes), 1), 64))


def _measure(dev: _Dev, op: str, shape: tuple, precision: str, build: Callable[[], _Case], *,
             budget_s, warmup_s, reps, min_reps, max_reps, flush_l2, threads) -> Measurement:
    positive("budget_s", budget_s)
    if warmup_s < 0:
        raise ValueError(f"warmup_s must be >= 0, got {warmup_s!r}")
    positive_int("min_reps", min_reps)
    positive_int("max_reps", max_reps)
    torch = dev.torch

    def run():
        # everything that holds tensors lives in this frame, gone when it returns
        with torch.no_grad(), _threads(torch, threads), _matmul_mode(torch, precision,
                                                                     dev.info.kind):
            case = build()
            flush = _flusher(dev, flush_l2)
            samples = _time_fn(dev, case.fn, budget_s=budget_s, warmup_s=warmup_s, reps=reps,
                               min_reps=min_reps, max_reps=max_reps, flush=flush)
            nthreads = torch.get_num_threads() if not dev.cuda else None
        return case.flops, case.bytes, case.note, samples, nthreads

    flops, nbytes, note, samples, nthreads = _guarded(
        f"{op} {'x'.join(map(str, shape))} {precision}", dev.info, run)
    if dev.cuda:
        _free_cache()  # give the memory back between sizes of a sweep
    return Measurement(op, tuple(shape), precision, dev.info.name, dev.info.kind,
                       "cuda events" if dev.cuda else "time.perf_counter", nthreads,
                       len(samples), flops=flops, bytes=nbytes, flush_l2=flush_l2, note=note,
                       samples_s=tuple(samples), **_stats(samples))


def gemm_cost(m, n, k, precision: str) -> _formulas.Cost:
    """Compulsory FLOPs and bytes of the GEMM as this module runs it (fp8 writes bf16, int8
    writes int32 = 4 bytes, tf32 stores fp32)."""
    p = _precision(precision, GEMM_PRECISIONS)
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
    p = _precision(precision, GEMM_PRECISIONS)
    dev = _resolve(device)
    _check_precision_supported(dev, p, "gemm")
    check_fits(estimate_bytes("gemm", (m, n, k), p, flush_l2=flush_l2, kind=dev.info.kind),
               dev.info)
    cost = gemm_cost(m, n, k, p)

    def build():
        case = _gemm_case(dev, m, n, k, p, seed)
        return _Case(case.fn, cost.flops, cost.bytes, case.note)

    return _measure(dev, "gemm", (m, n, k), p, build, budget_s=budget_s, warmup_s=warmup_s,
                    reps=reps, min_reps=min_reps, max_reps=max_reps, flush_l2=flush_l2,
                    threads=threads)


def gemv_cost(n, k, precision: str) -> _formulas.Cost:
    """Compulsory FLOPs and bytes of y[N] = W[N,K] x[K] (labs.core.physics.formulas.gemv)."""
    p = _precision(precision, GEMM_PRECISIONS)
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
    p = _precision(precision, GEMM_PRECISIONS)
    dev = _resolve(device)
    _check_precision_supported(dev, p, "gemv")
    weight_bytes = n * k * _ELEMENT_BYTES[p]
    copies = _cold_copies(dev.info, weight_bytes) if cold_cache else 1
    check_fits(estimate_bytes("gemv", (n, k), p, kind=dev.info.kind)
               + (copies - 1) * weight_bytes, dev.info)
    cost = gemv_cost(n, k, p)
    rows = _MIN_ROWS.get(p)

    def build():
        if rows:
            case = _gemm_case(dev, rows, n, k, p, seed, copies=copies)
            note = f"{case.note}; timed with {rows} activation rows (kernel minimum)"
        else:
            case = _gemm_case(dev, 1, n, k, p, seed, gemv=True, copies=copies)
            note = case.note
        if copies > 1:
            note += f"; {copies} weight copies in turn (cache-cold)"
        return _Case(case.fn, cost.flops, cost.bytes, note)

    return _measure(dev, "gemv", (n, k), p, build, budget_s=budget_s, warmup_s=warmup_s,
                    reps=reps, min_reps=min_reps, max_reps=max_reps, flush_l2=False,
                    threads=threads)


# --- memory bandwidth -----------------------------------------------------------------------

@dataclass(frozen=True)
class Bandwidth:
    """STREAM-like copy (b = a: 2 arrays moved) and triad (a = b + s*c: 3 arrays moved)."""

    copy: Measurement
    triad: Measurement

    @property
    def gbs(self) -> float:
        """The better of copy and triad, GB/s: the achievable memory roof."""
        return max(self.copy.effective_gbs, self.triad.effective_gbs)


def _default_stream_bytes(info: DeviceInfo) -> int:
    """Bytes per array: well past the caches (GPU: 8x L2, >= 256 MiB; CPU: 2x LLC capped at
    256 MiB, since RAM on a laptop or shared machine is precious and three arrays of it, 768 MiB,
    are far past any laptop's last-level cache)."""
    if info.kind == "cuda":
        return int(max(8 * (info.cache_mb or 64) * 2**20, 256 * 2**20))
    llc = _llc_bytes() or 32 * 2**20
    return int(min(max(2 * llc, 64 * 2**20), 256 * 2**20))


def stream_bandwidth(device: str | DeviceInfo | None = None, *, size_mb: float | None = None,
                     precision: str = "fp32", budget_s: float = 1.0, warmup_s: float = 0.1,
                     reps: int | None = None, threads: int | None = None) -> Bandwidth:
    """Measure memory bandwidth with STREAM's copy and triad on the device.

    Bytes follow the STREAM convention (what the kernel reads and writes: copy 2N, triad 3N
    elements); caches that read a line before writing it move more, so this is what a kernel
    can *use*. ``size_mb`` is per array (three are allocated).
    """
    p = _precision(precision, ("fp32", "fp16", "bf16"))
    dev = _resolve(device)
    torch = dev.torch
    el = _ELEMENT_BYTES[p]
    per_array = (positive("size_mb", size_mb) * 2**20 if size_mb is not None
                 else _default_stream_bytes(dev.info))
    elements = max(int(per_array // el), 1024)
    check_fits(estimate_bytes("stream", (elements,), p, kind=dev.info.kind), dev.info)
    dt = getattr(torch, _DTYPES[p])
    out = {}
    for op, arrays, flops in (("copy", 2, 0.0), ("triad", 3, 2.0 * elements)):
        def build(op=op, arrays=arrays, flops=flops):
            # Constant fills, not randn: bandwidth does not depend on the values, and drawing
            # hundreds of MB of normal samples took longer than the measurement's budget.
            a = torch.full((elements,), 1.0, device=dev.device, dtype=dt)
            b = torch.full((elements,), 2.0, device=dev.device, dtype=dt)
            if op == "copy":
                return _Case(lambda: b.copy_(a), 0.0, arrays * elements * el, "b.copy_(a)")
            c = torch.full((elements,), 0.5, device=dev.device, dtype=dt)
            return _Case(lambda: torch.add(b, c, alpha=3.0, out=a), flops,
                         arrays * elements * el, "torch.add(b, c, alpha=3, out=a)")
        out[op] = _measure(dev, op, (elements,), p, build, budget_s=budget_s / 2,
                           warmup_s=warmup_s, reps=reps, min_reps=5, max_reps=1000,
                           flush_l2=False, threads=threads)
    return Bandwidth(out["copy"], out["triad"])


# --- predictions ----------------------------------------------------------------------------

def _reference_device(reference, info: DeviceInfo) -> tuple[_hw.Device | None, str]:
    """(Device with the roofs to predict from, a label saying where they come from)."""
    if reference is None:
        spec = info.spec()
        if spec is None:
            return None, "no spec (not in the registry): pass reference=empirical_roofline()"
        return spec, f"spec sheet: {spec.key}"
    if isinstance(reference, EmpiricalRoofline):
        return reference.as_device(), "measured roofline of this machine"
    if isinstance(reference, _hw.Device):
        return reference, f"{reference.key}"
    if isinstance(reference, str):
        d = _hw.get(reference)
        return d, f"spec sheet: {d.key}"
    raise ValueError("reference must be None, a registry key, a hardware.Device or an "
                     f"EmpiricalRoofline, got {type(reference).__name__}")


def _predict(cost: _formulas.Cost, ref: _hw.Device | None, precision: str) -> dict:
    """Predicted roofline bound for a cost on ``ref``: TFLOP/s, time and which roof."""
    if ref is None:
        return {"predicted_tflops": None, "predicted_ms": None, "bound": None}
    t_mem = cost.bytes / (ref.bandwidth_gbs * 1e9)
    t_comp = cost.flops / (ref.peak_tflops(precision) * 1e12) if ref.has(precision) else None
    if t_comp is None:
        t = t_mem
        bound = "memory (no compute peak for this precision)"
    else:
        t = max(t_mem, t_comp)
        bound = "compute" if t_comp >= t_mem else "memory"
    return {"predicted_tflops": cost.flops / t / 1e12, "predicted_ms": t * 1e3, "bound": bound}


# --- sweeps ---------------------------------------------------------------------------------

def _call_progress(progress, done, total, label):
    if progress is not None:
        progress(done, total, label)


def sweep_square_gemm(sizes: Iterable[int] = SQUARE_SIZES, precision: str = "fp32", *,
                      device: str | DeviceInfo | None = None, budget_s: float = 30.0,
                      reference=None, flush_l2: bool = False, min_reps: int = 3,
                      progress: Progress | None = None) -> list[dict]:
    """Time N×N×N GEMMs for each N (ascending) within ``budget_s`` seconds in all.

    Each row: n, shape, precision, status ("ok" or why skipped), measured_tflops,
    predicted_tflops and bound (from ``reference``: None = the registry entry of this device,
    or a registry key, a hardware.Device, an EmpiricalRoofline), ratio = measured/predicted,
    ai (FLOP/B), median_ms, p10_ms, p90_ms, reps, threads, roof (where the prediction comes
    from), device. Sizes that would not fit in memory, or not finish in the budget left, are
    skipped with the reason; an out-of-memory is recovered and larger sizes skipped.
    ``progress(done, total, label)`` is called after each size.
    """
    return [row for row, _m in _sweep_square(sizes, precision, device=device, budget_s=budget_s,
                                             reference=reference, flush_l2=flush_l2,
                                             min_reps=min_reps, progress=progress)]


def _sweep_square(sizes, precision, *, device, budget_s, reference, flush_l2, min_reps,
                  progress) -> list[tuple[dict, Measurement | None]]:
    p = _precision(precision, GEMM_PRECISIONS)
    budget_s = positive("budget_s", budget_s)
    ns = sorted({positive_int("sizes", s) for s in sizes})
    if not ns:
        raise ValueError("sizes must name at least one N, e.g. [256, 512, 1024]")
    dev = _resolve(device)
    _check_precision_supported(dev, p, "gemm")
    ref, roof = _reference_device(reference, dev.info)
    fitting = {n for n in ns if fits(estimate_bytes("gemm", (n, n, n), p, flush_l2=flush_l2,
                                                    kind=dev.info.kind), dev.info)[0]}
    out, t0, rate, stop = [], time.perf_counter(), None, None
    for i, n in enumerate(ns):
        cost = gemm_cost(n, n, n, p)
        row = {"n": n, "shape": f"{n}×{n}×{n}", "precision": p, "status": "ok",
               "measured_tflops": None, **_predict(cost, ref, p), "ratio": None,
               "ai": cost.ai, "median_ms": None, "p10_ms": None, "p90_ms": None, "reps": None,
               "threads": None, "roof": roof, "device": dev.info.name}
        m = None
        left = budget_s - (time.perf_counter() - t0)
        need = cost.flops / rate * (min_reps + 3) if rate else None  # rate rises with N: safe
        ok, why = fits(estimate_bytes("gemm", (n, n, n), p, flush_l2=flush_l2,
                                      kind=dev.info.kind), dev.info)
        if stop:
            row["status"] = stop
        elif not ok:
            row["status"] = f"skipped: {why}"
        elif left <= 0:
            row["status"] = f"skipped: time budget spent ({budget_s:g} s)"
        elif need is not None and need > left:
            row["status"] = (f"skipped: needs ~{need:.1f} s, {left:.1f} s of the "
                             f"{budget_s:g} s budget left")
        else:
            share = left / sum(1 for later in ns[i:] if later in fitting)
            try:  # 200 repetitions pin a median; more would starve the larger sizes
                m = time_gemm(n, n, n, p, device=dev.info, budget_s=0.8 * share,
                              warmup_s=min(0.1, 0.2 * share), min_reps=min_reps,
                              max_reps=200, flush_l2=flush_l2)
            except (OutOfMemory, DoesNotFit) as e:
                row["status"] = f"skipped: {e}"
                stop = "skipped: a smaller size already ran out of memory"
        if m is not None:
            rate = m.flops / m.median_s
            row.update(measured_tflops=m.achieved_tflops, median_ms=m.median_s * 1e3,
                       p10_ms=m.p10_s * 1e3, p90_ms=m.p90_s * 1e3, reps=m.reps,
                       threads=m.threads)
            if row["predicted_tflops"]:
                row["ratio"] = m.achieved_tflops / row["predicted_tflops"]
        out.append((row, m))
        _call_progress(progress, i + 1, len(ns), f"N = {n}: {row['status']}")
    return out


def sweep_gemv(shapes, precisions: Sequence[str] = ("fp16", "bf16", "fp8", "int8"), *,
               device: str | DeviceInfo | None = None, budget_s: float = 30.0, reference=None,
               cold_cache: bool = True, min_reps: int = 5,
               progress: Progress | None = None) -> list[dict]:
    """The decode GEMV table: time y = W x for each shape and precision within ``budget_s``.

    ``shapes``: {label: (n, k)} or a list of (n, k). Each row: name, n, k, precision, status,
    measured_us, predicted_us (roofline lower bound on ``reference``: GEMVs are memory-bound,
    so the bandwidth decides), error_pct = (measured - predicted) / predicted x 100,
    measured_gbs (compulsory bytes / time), bytes, p10_us, p90_us, reps, roof, device.
    Unsupported precisions give one row each with the reason instead of a number.
    ``cold_cache`` as in ``time_gemv``; ``progress(done, total, label)`` after each row.
    """
    items = list(shapes.items()) if isinstance(shapes, Mapping) else [
        (f"{n}×{k}", (n, k)) for n, k in shapes]
    if not items:
        raise ValueError("shapes must name at least one (n, k)")
    ps = [_precision(p, GEMM_PRECISIONS, "precisions") for p in precisions]
    budget_s = positive("budget_s", budget_s)
    dev = _resolve(device)
    ref, roof = _reference_device(reference, dev.info)
    total = len(items) * len(ps)
    rows, t0, done = [], time.perf_counter(), 0
    for name, (n, k) in items:
        for p in ps:
            cost = gemv_cost(n, k, p)
            pred = _predict(cost, ref, p)
            row = {"name": name, "n": int(n), "k": int(k), "precision": p, "status": "ok",
                   "measured_us": None,
                   "predicted_us": pred["predicted_ms"] * 1e3 if pred["predicted_ms"] else None,
                   "error_pct": None, "measured_gbs": None, "bytes": cost.bytes,
                   "p10_us": None, "p90_us": None, "reps": None, "roof": roof,
                   "device": dev.info.name}
            left = budget_s - (time.perf_counter() - t0)
            why = _support_reason(dev, p, "gemv")
            if why:
                row["status"] = f"unsupported: {why}"
            elif left <= 0:
                row["status"] = f"skipped: time budget spent ({budget_s:g} s)"
            else:
                try:
                    m = time_gemv(n, k, p, device=dev.info, budget_s=0.8 * left / (total - done),
                                  warmup_s=0.05, min_reps=min_reps, max_reps=200,
                                  cold_cache=cold_cache)
                    row.update(measured_us=m.median_s * 1e6, measured_gbs=m.effective_gbs,
                               p10_us=m.p10_s * 1e6, p90_us=m.p90_s * 1e6, reps=m.reps)
                    if row["predicted_us"]:
                        row["error_pct"] = (row["measured_us"] - row["predicted_us"]) / (
                            row["predicted_us"]) * 100
                except MeasureError as e:
                    row["status"] = f"skipped: {e}"
            rows.append(row)
            done += 1
            _call_progress(progress, done, total, f"{name} {p}: {row['status']}")
    return rows


# --- the empirical roofline -----------------------------------------------------------------

@dataclass(frozen=True)
class EmpiricalRoofline:
    """This machine's measured roofs: memory bandwidth and the achievable peak per precision.

    ``peaks`` (TFLOP/s, TOPS for int8) is the best median over the square GEMM sizes tried;
    ``unsupported`` says why a precision has no peak. ``as_device()`` makes a hardware.Device
    so the figures can draw it next to the spec roofline.
    """

    info: DeviceInfo
    bandwidth: Bandwidth
    peaks: Mapping[str, float]
    peak_measurements: Mapping[str, Measurement]
    unsupported: Mapping[str, str]
    date: str

    @property
    def bandwidth_gbs(self) -> float:
        return self.bandwidth.gbs

    def as_device(self, key: str | None = None) -> _hw.Device:
        if not self.peaks:
            raise ValueError("no precision could be measured, so there is no compute roof")
        slug = re.sub(r"[^a-z0-9]+", "-", self.info.name.lower()).strip("-")
        return _hw.custom(f"{self.info.name} (measured {self.date})",
                          bandwidth_gbs=self.bandwidth_gbs, peaks=dict(self.peaks),
                          memory_gb=self.info.memory_gb or 1.0, key=key or f"measured-{slug}",
                          memory_type="measured",
                          source=f"measured on this machine on {self.date} with "
                                 "labs.core.measure (STREAM copy/triad; square GEMMs, median)")

    def rows(self) -> list[dict]:
        """One row per precision: measured peak, spec peak (registry), measured/spec."""
        spec = self.info.spec()
        out = [{"what": "memory bandwidth (GB/s)", "measured": self.bandwidth_gbs,
                "spec": spec.bandwidth_gbs if spec else None,
                "ratio": self.bandwidth_gbs / spec.bandwidth_gbs if spec else None,
                "detail": f"copy {self.bandwidth.copy.effective_gbs:.1f}, triad "
                          f"{self.bandwidth.triad.effective_gbs:.1f} GB/s"}]
        for p in GEMM_PRECISIONS:
            s = spec.peaks.get(p) if spec else None
            if p in self.peaks:
                m = self.peak_measurements[p]
                out.append({"what": f"{p} peak ({_units.rate_unit(p)})",
                            "measured": self.peaks[p], "spec": s,
                            "ratio": self.peaks[p] / s if s else None,
                            "detail": f"best at {m.shape_label}, {m.reps} reps"})
            elif p in self.unsupported:
                out.append({"what": f"{p} peak", "measured": None, "spec": s, "ratio": None,
                            "detail": self.unsupported[p]})
        return out


def _peak_sizes(info: DeviceInfo) -> tuple[int, ...]:
    return (4096, 8192) if info.kind == "cuda" else (512, 1024, 2048)


def empirical_roofline(device: str | DeviceInfo | None = None, *,
                       precisions: Sequence[str] | None = None,
                       sizes: Sequence[int] | None = None, budget_s: float = 30.0,
                       stream_mb: float | None = None,
                       progress: Progress | None = None) -> EmpiricalRoofline:
    """Measure bandwidth (STREAM) and the achievable GEMM peak per precision.

    ``precisions`` defaults to every GEMM precision; the ones this device/torch cannot run go
    to ``unsupported`` with the reason. ``sizes`` (square N) default to (4096, 8192) on a GPU
    and (512, 1024, 2048) on a CPU; the peak is the best of them. A quarter of ``budget_s``
    goes to bandwidth, the rest is shared by the precisions.
    """
    budget_s = positive("budget_s", budget_s)
    dev = _resolve(device)
    ps = [_precision(p, GEMM_PRECISIONS, "precisions") for p in (precisions or GEMM_PRECISIONS)]
    ns = tuple(sizes) if sizes else _peak_sizes(dev.info)
    total = len(ps) + 1
    bw = stream_bandwidth(dev.info, size_mb=stream_mb, budget_s=budget_s / 4)
    _call_progress(progress, 1, total, f"bandwidth: {bw.gbs:.1f} GB/s")
    peaks, best, unsupported = {}, {}, {}
    runnable = []
    for p in ps:
        why = _support_reason(dev, p)
        if why:
            unsupported[p] = why
        else:
            runnable.append(p)
    t0, done = time.perf_counter(), 1
    for p in ps:
        if p in runnable:
            left = 0.75 * budget_s - (time.perf_counter() - t0)
            share = left / (len(runnable) - runnable.index(p))
            pairs = []
            if share <= 0:
                unsupported[p] = "skipped: time budget spent"
            else:
                try:
                    pairs = _sweep_square(ns, p, device=dev.info, budget_s=share,
                                          reference=None, flush_l2=False, min_reps=3,
                                          progress=None)
                except MeasureError as e:
                    unsupported[p] = str(e)
            timed = [m for _row, m in pairs if m is not None]
            if timed:
                best[p] = max(timed, key=lambda m: m.achieved_tflops)
                peaks[p] = best[p].achieved_tflops
            elif p not in unsupported:
                unsupported[p] = "; ".join(r["status"] for r, _m in pairs) or "not measured"
        done += 1
        _call_progress(progress, done, total,
                       f"{p}: {peaks[p]:.3g} TFLOP/s" if p in peaks else f"{p}: {unsupported[p]}")
    return EmpiricalRoofline(dev.info, bw, peaks, best, unsupported,
                             _dt.date.today().isoformat())


def supported_precisions(device: str | DeviceInfo | None = None, op: str = "gemm") -> dict:
    """{precision: None if this device and torch can run it, else a sentence why not}."""
    if op not in ("gemm", "gemv"):
        raise ValueError(f"op must be 'gemm' or 'gemv', got {op!r}")
    info = detect(device)
    names = GEMM_PRECISIONS if op == "gemm" else GEMV_PRECISIONS
    if not info.available:
        return {p: info.message for p in names}
    dev = _resolve(info)
    return {p: _support_reason(dev, p, op) for p in names}


# --- checking the timer against a reference -------------------------------------------------

@dataclass(frozen=True)
class TimerCheck:
    """This module's median vs a reference timer's, measured interleaved in the same run."""

    measurement: Measurement  # ours: every sample of the attempt returned
    ours_s: float  # our median
    reference_s: float  # the reference timer's median
    reference: str  # which reference timer, and how it was interleaved
    samples: int  # interleaved pairs (per-call mode) or rounds (per-round mode)
    attempts: int
    resolution: float  # 95% bootstrap half-width of ours/reference: what the noise allows

    @property
    def rel_diff(self) -> float:
        """ours / reference - 1."""
        return self.ours_s / self.reference_s - 1

    @property
    def reference_tflops(self) -> float:
        return self.measurement.flops / self.reference_s / 1e12


def _has_triton() -> bool:
    try:
        import triton.testing  # noqa: F401, PLC0415

        return True
    except Exception:
        return False


def _reference_round(dev: _Dev, fn: Callable[[], object],
                     budget_s: float) -> tuple[list[float], str, int]:
    """Seconds per call of ``fn`` by an independent timer over about ``budget_s``: its
    samples, its name, and how many calls each sample averages (do_bench: 1;
    blocked_autorange: its block size)."""
    torch = dev.torch
    if dev.cuda and _has_triton():
        from triton.testing import do_bench  # noqa: PLC0415

        rep = max(int(budget_s * 1e3), 50)
        try:
            ms = list(do_bench(fn, warmup=25, rep=rep, return_mode="all"))
        except (TypeError, ValueError):  # older triton: no "all"
            ms = [do_bench(fn, warmup=25, rep=rep, return_mode="median")]
        return [x / 1e3 for x in ms], "triton.testing.do_bench (L2 flushed)", 1
    from torch.utils import benchmark  # noqa: PLC0415

    t = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    r = t.blocked_autorange(min_run_time=budget_s)
    sync = ", CUDA synchronized" if dev.cuda else f", {torch.get_num_threads()} threads"
    return (list(r.times), f"torch.utils.benchmark.Timer.blocked_autorange ({sync[2:]})",
            int(r.number_per_run))


def _block_means(samples: Sequence[float], number: int) -> list[float]:
    """Per-call samples averaged in consecutive blocks of ``number`` calls, as
    blocked_autorange reports them (a mean of a block is not a median of calls: on a loaded
    machine a few preempted calls pull a block's mean up)."""
    if number <= 1:
        return list(samples)
    full = len(samples) // number
    if full == 0:
        return [sum(samples) / len(samples)]
    return [sum(samples[i * number:(i + 1) * number]) / number for i in range(full)]


#: On a CPU, calls at least this long are compared call by call (see compare_with_reference):
#: Timer.timeit(1)'s own overhead (~1 µs) is then under 1%.
_PER_CALL_MIN_S = 1e-4


def compare_with_reference(m, n, k, precision: str = "fp32", *,
                           device: str | DeviceInfo | None = None, rounds: int = 9,
                           budget_s: float = 0.1, tolerance: float = 0.05, retries: int = 1,
                           threads: int | None = None) -> TimerCheck:
    """Time the same GEMM (same tensors) with this module's timer and a reference timer in
    the same run, interleaved, and compare the two medians.

    CPU: the reference is torch.utils.benchmark.Timer with the same thread count (``threads``,
    default torch's current). For calls of 0.1 ms or more the two timers alternate call by
    call (Timer.timeit(1), which is what blocked_autorange samples at number=1, then ours,
    order swapped each pair, each timed call after two untimed ones as timeit does) for about ``2 x rounds x budget_s`` seconds: on a shared machine
    both see the same load. Shorter calls: ``rounds`` rounds of blocked_autorange and ours
    (``budget_s`` each, alternating which goes first), ours averaged in blocks of the size
    blocked_autorange chose (its samples are block means); medians of the pooled samples.
    GPU: rounds of triton.testing.do_bench (ours then flushes L2 as do_bench does) when triton
    imports, else of torch.utils.benchmark.Timer (which synchronizes the GPU).
    If the medians differ by more than ``tolerance`` the comparison is repeated (up to
    ``retries`` times) and the closest attempt returned (``attempts`` says how many ran).
    ``resolution`` is the 95% bootstrap half-width of the ratio: the noise floor of this run.
    """
    m, n, k = positive_int("m", m), positive_int("n", n), positive_int("k", k)
    p = _precision(precision, GEMM_PRECISIONS)
    rounds = positive_int("rounds", rounds)
    positive("budget_s", budget_s)
    dev = _resolve(device)
    _check_precision_supported(dev, p, "gemm")
    flush_l2 = dev.cuda and _has_triton()
    check_fits(estimate_bytes("gemm", (m, n, k), p, flush_l2=flush_l2, kind=dev.info.kind),
               dev.info)
    cost = gemm_cost(m, n, k, p)
    torch = dev.torch
    import numpy as np

    def per_call(fn):
        from torch.utils import benchmark  # noqa: PLC0415

        nthreads = torch.get_num_threads()
        timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=nthreads)
        def ours_once():
            # Timer.timeit(1) runs two untimed calls before its timed one; so do we, so that
            # both timed calls start equally hot (worker threads awake, caches warm), as our
            # back-to-back repetitions do in time_gemm.
            fn()
            fn()
            return _timed_reps(dev, fn, 1, None)

        ours, refs = [], []
        deadline = time.perf_counter() + 2 * rounds * budget_s
        while len(ours) < 15 or (time.perf_counter() < deadline and len(ours) < 400):
            if len(ours) % 2:
                refs.append(timer.timeit(1).median)
                ours += ours_once()
            else:
                ours += ours_once()
                refs.append(timer.timeit(1).median)
        name = (f"torch.utils.benchmark.Timer ({nthreads} threads), one call per sample as its "
                f"blocked_autorange takes at this size; {len(ours)} pairs alternating with ours")
        return float(np.median(ours)), float(np.median(refs)), name, ours, len(ours), refs

    def per_round(fn, flush):
        ours, refs, name, number = [], [], "", 1
        for r in range(rounds):
            if r % 2 == 0:  # alternate the order so neither timer always goes first
                s = _time_fn(dev, fn, budget_s=budget_s, warmup_s=0.02, reps=None,
                             min_reps=5, max_reps=5000, flush=flush)
                ref, name, number = _reference_round(dev, fn, budget_s)
            else:
                ref, name, number = _reference_round(dev, fn, budget_s)
                s = _time_fn(dev, fn, budget_s=budget_s, warmup_s=0.02, reps=None,
                             min_reps=5, max_reps=5000, flush=flush)
            ours += _block_means(s, number)  # like for like with the reference's samples
            refs += ref
        blocks = f", ours averaged in blocks of {number} calls as it does" if number > 1 else ""
        return (float(np.median(ours)), float(np.median(refs)),
                f"{name}; {rounds} rounds alternating with ours{blocks}", ours, rounds, refs)

    def run():
        best, made = None, 0
        with torch.no_grad(), _threads(torch, threads), _matmul_mode(torch, p, dev.info.kind):
            case = _gemm_case(dev, m, n, k, p)
            flush = _flusher(dev, flush_l2)
            one = _warm_up(dev, case.fn, 0.05, flush)
            for _attempt in range(retries + 1):
                made += 1
                if not dev.cuda and one >= _PER_CALL_MIN_S:
                    check = per_call(case.fn)
                else:
                    check = per_round(case.fn, flush)
                if best is None or abs(check[0] / check[1] - 1) < abs(best[0] / best[1] - 1):
                    best = check
                if abs(best[0] / best[1] - 1) <= tolerance:
                    break
            nthreads = torch.get_num_threads() if not dev.cuda else None
        return best, made, nthreads

    (ours_s, ref_s, name, samples, count, refs), attempts, nthreads = _guarded(
        f"GEMM {m}x{n}x{k} {p}", dev.info, run)
    meas = Measurement("gemm", (m, n, k), p, dev.info.name, dev.info.kind,
                       "cuda events" if dev.cuda else "time.perf_counter", nthreads,
                       len(samples), flops=cost.flops, bytes=cost.bytes, flush_l2=flush_l2,
                       note="timer check", samples_s=tuple(samples), **_stats(samples))
    return TimerCheck(meas, ours_s, ref_s, name, count, attempts,
                      _ratio_resolution(samples, refs))


def _ratio_resolution(ours: Sequence[float], refs: Sequence[float], draws: int = 400) -> float:
    """95% bootstrap half-width of median(ours) / median(refs): how finely this run's noise
    lets the two timers be compared (seeded, so the same samples give the same answer)."""
    import numpy as np

    o, r = np.asarray(ours, dtype=float), np.asarray(refs, dtype=float)
    if o.size < 3 or r.size < 3:
        return math.inf  # too few samples to say anything
    rng = np.random.default_rng(0)
    ratios = (np.median(rng.choice(o, (draws, o.size)), axis=1)
              / np.median(rng.choice(r, (draws, r.size)), axis=1))
    lo, hi = np.percentile(ratios, [2.5, 97.5])
    return float((hi - lo) / 2)


# --- tables, CSV, ledger --------------------------------------------------------------------

def to_csv(rows: Sequence[Mapping]) -> str:
    """Rows (dicts) as CSV text; columns in order of first appearance, floats to 6 digits."""
    cols: list[str] = []
    for r in rows:
        cols += [c for c in r if c not in cols]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: (f"{v:.6g}" if isinstance(v, float) else v) for c, v in r.items()})
    return buf.getvalue()


def ledger_payload(info: DeviceInfo, rows: Sequence[Mapping], **extra) -> dict:
    """A compact, JSON-safe dict for ``lab.record("result", item_id, ...)``: the device and
    the measured figures (rounded), plus anything in ``extra``."""
    def clean(v):
        if isinstance(v, float):
            return None if not math.isfinite(v) else float(f"{v:.5g}")
        return v

    return {"device": info.name, "kind": info.kind, "registry_key": info.registry_key,
            "threads": info.threads, "torch": info.torch_version,
            "date": _dt.datetime.now().isoformat(timespec="seconds"),
            "rows": [{k: clean(v) for k, v in r.items()} for r in rows], **extra}


# --- command line: labs-bench-gemm ----------------------------------------------------------

def _fmt(v, spec=".3g", none="—"):
    return none if v is None else format(v, spec)


def _fmt_res(pct: float | None) -> str:
    return "?" if pct is None else f"{pct:.1f}" if pct <= 100 else ">100"


def _table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    cells = [[str(c) for c in r] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) if cells else len(h)
              for i, h in enumerate(headers)]
    line = lambda r: "  ".join(c.rjust(w) for c, w in zip(r, widths))  # noqa: E731
    return "\n".join([line(headers), line(["-" * w for w in widths]), *map(line, cells)])


def main(argv: Sequence[str] | None = None) -> int:
    """labs-bench-gemm: time GEMMs per precision against the roofline and a reference timer,
    print a table and write JSON."""
    import argparse

    ap = argparse.ArgumentParser(prog="labs-bench-gemm", description=main.__doc__)
    ap.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: GPU if any)")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch CPU threads for the whole run (default: torch's choice)")
    ap.add_argument("--precisions", default=None, help="comma list (default: all supported)")
    ap.add_argument("--sizes", default=None, help="square N, comma list "
                    "(default: 256,512,1024,2048 on CPU; 1024,2048,4096,8192 on GPU)")
    ap.add_argument("--rounds", type=int, default=3, help="interleaved timer rounds per row")
    ap.add_argument("--budget-s", type=float, default=0.2, help="timed seconds per timer round")
    ap.add_argument("--gemv", default="4096x4096,14336x4096", help="decode GEMV shapes NxK "
                    "('' for none)")
    ap.add_argument("--stream-mb", type=float, default=None, help="MiB per STREAM array")
    ap.add_argument("--gemv-budget-s", type=float, default=4.0, help="seconds for the GEMV table")
    ap.add_argument("--out", default=None, help="JSON path (default benchmarks/results/"
                    "<host>-<date>.json)")
    a = ap.parse_args(argv)
    torch = _torch()
    if a.threads is not None and torch is not None:
        saved_threads = torch.get_num_threads()
        torch.set_num_threads(positive_int("--threads", a.threads))
        try:
            return _bench(a)
        finally:
            torch.set_num_threads(saved_threads)
    return _bench(a)


def _bench(a) -> int:
    import json
    import socket

    info = detect(a.device)
    print(info.summary())
    if not info.available:
        return 2
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    print(f"torch {info.torch_version}, {info.backend}; timer: "
          f"{'CUDA events' if info.kind == 'cuda' else 'time.perf_counter'}"
          + (f"; load average {load[0]:.1f} on {os.cpu_count()} CPUs" if load else ""))
    support = supported_precisions(info)
    ps = a.precisions.split(",") if a.precisions else [p for p, why in support.items()
                                                       if why is None]
    for p, why in support.items():
        if why and (a.precisions is None or p in ps):
            print(f"  {p}: unsupported: {why}")
    ps = [p for p in ps if support.get(p) is None]
    sizes = [int(s) for s in a.sizes.split(",")] if a.sizes else (
        [1024, 2048, 4096, 8192] if info.kind == "cuda" else [256, 512, 1024, 2048])

    bw = stream_bandwidth(info, size_mb=a.stream_mb, budget_s=1.0)
    print(f"STREAM: copy {bw.copy.effective_gbs:.1f} GB/s, triad "
          f"{bw.triad.effective_gbs:.1f} GB/s ({bw.copy.shape[0] * 4 / 2**20:.0f} MiB arrays)")

    checks: dict[tuple[str, int], TimerCheck] = {}
    for p in ps:
        for n in sizes:
            try:
                checks[(p, n)] = compare_with_reference(n, n, n, p, device=info,
                                                        rounds=a.rounds, budget_s=a.budget_s)
            except MeasureError as e:
                print(f"  {p} N={n}: {e}")
    spec = info.spec()
    measured_peaks = {p: max(c.measurement.flops / c.ours_s / 1e12
                             for (q, _n), c in checks.items() if q == p)
                      for p in ps if any(q == p for q, _n in checks)}
    emp = _hw.custom(f"{info.name} (measured)", bandwidth_gbs=bw.gbs, peaks=measured_peaks,
                     memory_gb=info.memory_gb or 1.0) if measured_peaks else None
    ref, roof = (spec, f"spec {spec.key}") if spec else (emp, "measured roof (this run)")

    rows = []
    for (p, n), c in checks.items():
        cost = gemm_cost(n, n, n, p)
        pred = _predict(cost, ref if ref is not None and ref.has(p) else emp, p)
        ours = cost.flops / c.ours_s / 1e12
        rows.append({"shape": f"{n}x{n}x{n}", "precision": p, "measured_tflops": ours,
                     "median_ms": c.ours_s * 1e3, "spread": c.measurement.spread,
                     "predicted_tflops": pred["predicted_tflops"], "bound": pred["bound"],
                     "ratio": ours / pred["predicted_tflops"] if pred["predicted_tflops"]
                     else None, "roof": roof if ref is not None and ref.has(p)
                     else "measured roof (this run)",
                     "reference_tflops": c.reference_tflops, "reference_timer": c.reference,
                     "timer_diff_pct": c.rel_diff * 100,
                     "timer_resolution_pct": (c.resolution * 100 if math.isfinite(c.resolution)
                                              else None),
                     "threads": c.measurement.threads})
    print()
    print(_table(["shape", "precision", "measured TFLOP/s", "predicted bound", "meas/pred",
                  "reference TFLOP/s", "timer diff"],
                 [[r["shape"], r["precision"], _fmt(r["measured_tflops"], ".4g"),
                   f"{_fmt(r['predicted_tflops'], '.4g')} ({(r['bound'] or '?').split()[0]})",
                   _fmt(r["ratio"], ".2f"), _fmt(r["reference_tflops"], ".4g"),
                   f"{r['timer_diff_pct']:+.1f}% ±{_fmt_res(r['timer_resolution_pct'])}"]
                  for r in rows]))
    print(f"predicted bound from: {roof}; reference timer: "
          f"{next(iter(checks.values())).reference if checks else '-'}")
    worst = max((abs(r["timer_diff_pct"]) for r in rows), default=float("nan"))
    print(f"timer agreement: worst |diff| {worst:.1f}% (criterion: 5%; ± = 95% bootstrap "
          "half-width of the ratio, i.e. what this run's noise can resolve)")

    verdict = None
    if spec and spec.key in ("h100-sxm", "h200-sxm") and ("bf16", 8192) in checks:
        frac = checks[("bf16", 8192)].measurement.flops / checks[("bf16", 8192)].ours_s / 1e12 / (
            spec.peak_tflops("bf16"))
        verdict = {"bf16_8192_fraction_of_dense_peak": frac, "pass": frac >= 0.70}
        clock = _gpu_clock_mhz(info)
        verdict["sm_clock_mhz_after"] = clock
        print(f"bf16 8192^3: {frac:.0%} of the dense spec peak (criterion >= 70%): "
              f"{'PASS' if frac >= 0.7 else 'FAIL - check clocks, TF32 flags, timing'}; "
              f"SM clock now {_fmt(clock, '.0f')} MHz (max {_fmt(info.sm_clock_mhz, '.0f')})")

    gemv_rows = []
    if a.gemv:
        shapes = [tuple(int(x) for x in s.lower().split("x")) for s in a.gemv.split(",")]
        gemv_rows = sweep_gemv(shapes, [p for p in GEMV_PRECISIONS if p in ps or support.get(p)],
                               device=info, budget_s=a.gemv_budget_s,
                               reference=spec if spec else emp)
        print()
        print(_table(["GEMV NxK", "precision", "measured µs", "predicted µs", "error %",
                      "GB/s", "status"],
                     [[r["name"], r["precision"], _fmt(r["measured_us"], ".4g"),
                      _fmt(r["predicted_us"], ".4g"), _fmt(r["error_pct"], "+.0f"),
                      _fmt(r["measured_gbs"], ".4g"), r["status"][:60]] for r in gemv_rows]))

    now = _dt.datetime.now()
    out = a.out or os.path.join("benchmarks", "results",
                                f"{socket.gethostname()}-{now.date().isoformat()}.json")
    os.makedirs(os.path.dirname(out) or ".", exist_ok=True)
    with open(out, "w") as f:
        json.dump({"date": now.isoformat(timespec="seconds"), "host": socket.gethostname(),
                   "device": info.as_dict(), "cpu_model": _cpu_model(),
                   "load_average_1min_at_start": load[0] if load else None,
                   "bandwidth": {"copy_gbs": bw.copy.effective_gbs,
                                 "triad_gbs": bw.triad.effective_gbs,
                                 "array_bytes": bw.copy.bytes / 2},
                   "gemm": rows, "gemv": gemv_rows, "check_70pct": verdict}, f, indent=1)
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
