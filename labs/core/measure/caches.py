"""What the operating system reports about this machine's caches: ``cache_sizes()``.

Never raises and never measures. Sources, in order: Linux sysfs
(``/sys/devices/system/cpu/cpu0/cache/index*/``: level, type, size, line size and
``shared_cpu_list``, so a per-core L2 and an L3 shared by every core are told apart), macOS
``sysctl`` (``hw.l1dcachesize``, ``hw.l2cachesize``, ``hw.l3cachesize``; Apple silicon's
performance cores under ``hw.perflevel0.*``), else "unknown" (Windows, a browser build).
For a CUDA GPU, :func:`gpu_cache_sizes` gives the L2 the driver reports and the registry's
shared memory per SM.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass, field

__all__ = ["CacheLevel", "CacheSizes", "SYSFS", "cache_sizes", "gpu_cache_sizes", "parse_size"]

SYSFS = "/sys/devices/system/cpu/cpu0/cache"


@dataclass(frozen=True)
class CacheLevel:
    """One cache as the OS reports it. ``shared_with``: logical CPUs sharing it (1 = private)."""

    name: str  # "L1d", "L2", "L3" (instruction caches are left out: data never lives there)
    level: int
    size_bytes: float
    shared_with: int | None = None
    line_bytes: int | None = None
    source: str = ""

    @property
    def scope(self) -> str:
        if self.shared_with is None:
            return "sharing not reported"
        return "per core" if self.shared_with <= 1 else f"shared by {self.shared_with} CPUs"


@dataclass(frozen=True)
class CacheSizes:
    """The caches found (fastest first), where they came from, and why when nothing was."""

    levels: tuple[CacheLevel, ...] = ()
    source: str = "unknown"
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def known(self) -> bool:
        return bool(self.levels)

    def as_mapping(self) -> dict[str, float]:
        """{name: bytes}, fastest first: what ``staircase.name_plateaus`` takes."""
        return {c.name: c.size_bytes for c in self.levels}

    def describe(self) -> str:
        if not self.known:
            return f"cache sizes unknown ({self.note or self.source})"
        return "; ".join(f"{c.name} {_kib(c.size_bytes)} ({c.scope})" for c in self.levels)


def _kib(x: float) -> str:
    from labs.core.physics.units import format_bytes

    return format_bytes(x, binary=True)


def parse_size(text: str) -> float | None:
    """'32K' -> 32768, '512K', '32768K', '1M', '123' (bytes); None when unreadable."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]?)i?B?\s*", str(text), re.IGNORECASE)
    if not m:
        return None
    mult = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30}[m.group(2).upper()]
    return float(m.group(1)) * mult


def _cpu_count(cpu_list: str) -> int | None:
    """'0-3,8' -> 5 logical CPUs."""
    n = 0
    try:
        for part in cpu_list.strip().split(","):
            if not part:
                continue
            a, _, b = part.partition("-")
            n += int(b or a) - int(a) + 1
    except ValueError:
        return None
    return n or None


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def _linux(base: str | None = None) -> CacheSizes | None:
    base = base or SYSFS
    try:
        entries = sorted(e for e in os.listdir(base) if e.startswith("index"))
    except OSError:
        return None
    found = []
    for e in entries:
        d = os.path.join(base, e)
        level, kind, size = _read(f"{d}/level"), _read(f"{d}/type"), _read(f"{d}/size")
        if not (level and kind and size) or kind.lower() == "instruction":
            continue
        nbytes = parse_size(size)
        if nbytes is None or not level.isdigit():
            continue
        line = _read(f"{d}/coherency_line_size")
        shared = _read(f"{d}/shared_cpu_list")
        name = f"L{level}d" if kind.lower() == "data" else f"L{level}"
        found.append(CacheLevel(name, int(level), nbytes, _cpu_count(shared) if shared else None,
                                int(line) if line and line.isdigit() else None, f"{d}/size"))
    if not found:
        return None
    found.sort(key=lambda c: (c.level, c.size_bytes))
    return CacheSizes(tuple(found), f"Linux sysfs ({base})")


def _sysctl(name: str) -> float | None:
    try:
        out = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True,
                             timeout=2, check=False).stdout.strip()
        return float(out) if out and float(out) > 0 else None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def _macos() -> CacheSizes | None:
    found = []
    for lvl, name in ((1, "L1d"), (2, "L2"), (3, "L3")):
        key = {1: "l1dcachesize"}.get(lvl, f"l{lvl}cachesize")
        # Apple silicon: the performance cores' caches (perflevel0) when reported
        size = _sysctl(f"hw.perflevel0.{key}") or _sysctl(f"hw.{key}")
        if size:
            found.append(CacheLevel(name, lvl, size, None, None, f"sysctl hw.{key}"))
    return CacheSizes(tuple(found), "macOS sysctl hw.*cachesize") if found else None


def cache_sizes() -> CacheSizes:
    """The CPU caches the OS reports (see the module doc). Never raises."""
    try:
        if sys.platform == "emscripten":
            return CacheSizes(note="a browser (WebAssembly) build cannot see the machine's "
                                   "caches")
        if sys.platform.startswith("linux"):
            return _linux() or CacheSizes(note=f"{SYSFS} lists no cache sizes (a container "
                                               "or virtual machine may hide them)")
        if sys.platform == "darwin":
            return _macos() or CacheSizes(note="sysctl reported no cache sizes")
        return CacheSizes(note=f"no cache-size source for {sys.platform}")
    except Exception as e:  # a lab must get a sentence, never a traceback
        return CacheSizes(note=f"reading cache sizes failed ({type(e).__name__}: {e})")


def gpu_cache_sizes(info) -> CacheSizes:
    """A CUDA device's L2 (driver-reported, ``DeviceInfo.cache_mb``) and, when the registry
    knows the GPU, its shared memory per SM (``fusion.onchip``). Never raises."""
    from labs.core.physics import fusion

    levels = []
    try:
        if info.registry_key:
            oc = fusion.onchip(info.registry_key)
            levels.append(CacheLevel("shared memory", 1, oc.smem_per_sm_kb * 1024, 1, None,
                                     f"registry: {oc.sources['smem']}"))
    except KeyError:
        pass
    if getattr(info, "cache_mb", None):
        levels.append(CacheLevel("L2", 2, info.cache_mb * 2**20, info.sm_count, None,
                                 "driver (torch.cuda.get_device_properties().L2_cache_size)"))
    if not levels:
        return CacheSizes(note="the driver reported no L2 size for this GPU")
    return CacheSizes(tuple(levels), "CUDA driver and registry")
