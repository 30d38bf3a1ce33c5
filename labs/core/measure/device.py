"""Device detection and memory safety: what will be measured, and whether a run fits.

``detect(device)`` finds the device (a CUDA GPU if torch sees one, else the CPU; never
raises: problems become ``kind="none"`` with a message saying why and what to do) and maps
a GPU's name to its registry entry. ``free_bytes``/``fits``/``check_fits`` refuse a run
before anything is allocated; ``guarded`` turns an out-of-memory into ``OutOfMemory`` after
freeing the cache. torch is imported lazily, once, by ``_torch()``; nothing runs at import.
"""

from __future__ import annotations

import gc
import os
import platform
import re
import sys
from dataclasses import asdict, dataclass
from typing import Callable

from labs.core.measure.errors import DoesNotFit, MeasureError, OutOfMemory
from labs.core.physics import hardware

__all__ = [
    "DeviceInfo", "MEMORY_HEADROOM", "check_fits", "cuda_info", "detect", "fits", "free_bytes",
    "free_cache", "gpu_clock_mhz", "guarded", "import_torch", "is_oom", "llc_bytes",
    "load_average", "machine_description", "machine_line", "ram_bytes", "registry_key_for",
    "torch_commands", "torch_install_advice"
]

#: Fraction of free memory a measurement may plan to use (the rest: allocator slack, other
#: processes on a shared machine, library workspaces).
MEMORY_HEADROOM = {"cuda": 0.9, "cpu": 0.6}

# --- device detection -----------------------------------------------------------------------

_TORCH = None
_TORCH_ERR = None


def import_torch():
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

    def spec(self) -> hardware.Device | None:
        """The registry entry with the spec sheet's peaks, when this device is known."""
        return hardware.get(self.registry_key) if self.registry_key else None

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


def torch_commands(python: str | None = None) -> dict[str, str]:
    """The commands that install PyTorch into ``python`` (default: this one), by what they
    fetch; the same as ``course.install.torch_commands`` (measure may not import course; a test
    checks that the two agree):

    * ``"cpu"``: PyTorch's CPU build (about 200 MB) from PyTorch's own package index, through
      uv (``--torch-backend=cpu``);
    * ``"index"``: ``pip install torch`` from the package index alone: the CPU build on macOS
      and Windows, the CUDA build on Linux (several GB with its NVIDIA libraries; it runs on a
      CPU too): the fallback where PyTorch's index cannot be reached;
    * ``"gpu"``: uv's ``--torch-backend=auto``, the CUDA build for the machine's driver from
      PyTorch's index (the package index's Windows build has no CUDA).
    """
    # Windows shells differ on a quoted program path (PowerShell refuses one): there the
    # activated environment's own `python`, as the install instructions have it.
    py = (python or "python") if os.name == "nt" else f'"{python or sys.executable}"'
    uv = f"{py} -m pip install uv && {py} -m uv pip install --python {py}"
    return {"cpu": f'{uv} --torch-backend=cpu "torch>=2.3"',
            "index": f'{py} -m pip install "torch>=2.3"',
            "gpu": f'{uv} --torch-backend=auto "torch>=2.3"'}


def torch_install_advice(platform: str | None = None, python: str | None = None,
                         code: str = "") -> str:
    """What to run to measure, for a student on ``platform`` (default: this one), in
    sentences; each command wrapped in ``code`` (a backtick for Markdown)."""
    platform = platform or sys.platform
    c = {k: f"{code}{v}{code}" for k, v in torch_commands(python).items()}
    if platform == "darwin":
        return (f"Install PyTorch into the Python that runs the labs: {c['index']} (on macOS "
                "the package index's build is the CPU one).")
    if platform.startswith(("win", "cygwin")):
        return (f"Install PyTorch into the Python that runs the labs: {c['index']} (on Windows "
                "the package index's build is the CPU one; with an NVIDIA GPU run "
                f"{c['gpu']} instead, which takes PyTorch's CUDA build for your driver from "
                "PyTorch's own index).")
    return (f"Install PyTorch's CPU build (about 200 MB, from PyTorch's own package index) into "
            f"the Python that runs the labs: {c['cpu']}. With an NVIDIA GPU, or if that command "
            "cannot reach PyTorch's index (a network that lets only the package index through), "
            f"install from the package index alone: {c['index']} (on Linux that is the CUDA "
            "build, several GB with its NVIDIA libraries, which also runs on a CPU).")


_NO_TORCH = ("torch is not installed, so this machine cannot be measured. "
             + torch_install_advice() + " Then restart: stop "
             "roofline-labs (Ctrl+C in its terminal) and run roofline-labs again (or stop and "
             "start marimo if you opened the lab with marimo); your locked predictions stay.")
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
    torch = import_torch()
    if torch is None:
        return _none(f"{_NO_TORCH} ({_TORCH_ERR})")
    want = (device or "").strip().lower()
    if want not in ("", "cpu") and not re.fullmatch(r"cuda(:\d+)?", want):
        return _none(f"device must be None, 'cpu', 'cuda' or 'cuda:N', got {device!r}", torch)
    cuda_ok = bool(torch.cuda.is_available())
    if want.startswith("cuda"):
        if not cuda_ok:
            return _none(_why_no_cuda(torch) + " Measure the CPU instead (device='cpu').", torch)
        return cuda_info(torch, want if ":" in want else "cuda:0")
    if want == "" and cuda_ok:
        return cuda_info(torch, "cuda:0")
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


def cuda_info(torch, dev: str) -> DeviceInfo:
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
    ram, llc = ram_bytes("MemTotal"), llc_bytes()
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


def ram_bytes(field_name: str) -> float | None:
    """A /proc/meminfo field in bytes (Linux), else None."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith(field_name + ":"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def llc_bytes() -> float | None:
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


#: CPU features that change what a GEMM can reach here (vector width, matrix units), as
#: /proc/cpuinfo spells them.
_CPU_FEATURES = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_int8")


def machine_description() -> dict:
    """This machine as detected now, for a benchmark's header (never typed in by hand): CPU
    model, logical CPUs this process may use, notable CPU features, caches, RAM, OS, Python,
    and whether it is a virtual machine. Reads /proc and sysfs; no torch; never raises."""
    flags: set[str] = set()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    break
    except OSError:
        pass
    hypervisor = "hypervisor" in flags
    ram = ram_bytes("MemTotal")
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    caches = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    for entry in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        try:
            with open(os.path.join(base, entry, "level")) as f:
                level = f.read().strip()
            with open(os.path.join(base, entry, "type")) as f:
                kind = f.read().strip()
            with open(os.path.join(base, entry, "size")) as f:
                size = f.read().strip()
        except OSError:
            continue
        if kind != "Instruction":
            caches[f"L{level}"] = size
    return {"cpu": _cpu_model(), "machine": platform.machine(), "logical_cpus": cpus,
            "features": [x for x in _CPU_FEATURES if x in flags] if flags else None,
            "caches": caches, "virtual_machine": hypervisor,
            "memory_gb": round(ram / 1e9, 1) if ram else None,
            "os": platform.platform(terse=True), "python": platform.python_version()}


def machine_line(desc: dict | None = None) -> str:
    """``machine_description()`` as one line for a table's caption."""
    d = desc or machine_description()
    bits = [f"{d['logical_cpus']} logical CPUs"]
    if d.get("features") is not None:
        feats = d["features"]
        bits.append(", ".join(feats) if feats else "no AVX2/AVX-512/AMX")
        if "avx512f" not in feats:
            bits.append("no AVX-512")
        if not any(x.startswith("amx") for x in feats):
            bits.append("no AMX")
    if d.get("caches"):
        bits.append(" ".join(f"{k} {v}" for k, v in d["caches"].items()))
    if d.get("virtual_machine"):
        bits.append("virtual machine")
    mem = f", {d['memory_gb']} GB RAM" if d.get("memory_gb") else ""
    return f"{d['cpu']} ({'; '.join(bits)}){mem}, {d['os']}, Python {d['python']}"


def load_average() -> float | None:
    """The 1-minute load average now (other jobs competing for the CPUs), or None."""
    try:
        return round(os.getloadavg()[0], 2)
    except (OSError, AttributeError):
        return None


def gpu_clock_mhz(info: DeviceInfo) -> float | None:
    """The SM clock right now (MHz, through NVML when torch can reach it), else None."""
    try:
        return float(import_torch().cuda.clock_rate(int(info.torch_device.split(":")[1])))
    except Exception:
        return None


# --- memory safety --------------------------------------------------------------------------

def free_bytes(device: str | DeviceInfo | None = None) -> float | None:
    """Free memory in bytes: GPU free + torch's reusable cache, or MemAvailable on the CPU."""
    info = detect(device)
    if info.kind == "cuda":
        torch = import_torch()
        idx = int(info.torch_device.split(":")[1])
        free, _total = torch.cuda.mem_get_info(idx)
        return float(free + torch.cuda.memory_reserved(idx) - torch.cuda.memory_allocated(idx))
    if info.kind == "cpu":
        return ram_bytes("MemAvailable")
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


def is_oom(e: BaseException) -> bool:
    s = str(e).lower()
    return type(e).__name__ == "OutOfMemoryError" or "out of memory" in s or (
        "can't allocate memory" in s) or isinstance(e, MemoryError)


def free_cache() -> None:
    gc.collect()
    torch = _TORCH
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def guarded(what: str, info: DeviceInfo, run: Callable[[], object]):
    """Run ``run`` (which allocates in its own frame); an out-of-memory becomes OutOfMemory
    after the tensors are released and the allocator's cache emptied."""
    oom = None
    try:
        return run()
    except MeasureError:
        raise
    except Exception as e:
        if not is_oom(e):
            raise
        oom = str(e).strip().splitlines()[0][:200]
    # outside the except block: the traceback (and the tensors its frames hold) is gone
    free_cache()
    raise OutOfMemory(f"{what} ran out of memory on {info.name} ({oom}); the memory was freed. "
                      "Try a smaller size.")

