"""The machines of Lab 5's hierarchical roofline: memory levels, fastest first, and a machine's
compute roofs (the traffic model is the package doc's, :mod:`labs.core.physics.hierarchy`).

A registry GPU's levels (:func:`gpu_hierarchy`: L1 / shared memory, L2, HBM, each sourced), the
GEMM schedule its library runs (:data:`GEMM_SCHEDULES`), and machines built from measurements
(:func:`measured_hierarchy`, :func:`from_plateaus`, :func:`with_bandwidths`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from labs.core.physics import flash as _flash
from labs.core.physics import hardware
from labs.core.physics import precision as _precision
from labs.core.physics import roofline
from labs.core.physics.flash import L2_MEASURED_GBS
from labs.core.physics.validate import (
    close_matches,
    flag,
    instance,
    mapping,
    one_of,
    positive,
    positive_int,
    sequence,
    shown,
    text,
)

__all__ = [
    "GEMM_SCHEDULES", "GPU_ARCH", "GemmSchedule", "Hierarchy", "L1_SMEM", "L2_MEASURED_GBS",
    "Level", "MATRIX", "UNREPORTED_MEMORY_BYTES", "VECTOR", "from_plateaus", "gpu_hierarchy",
    "gpu_keys", "hierarchy", "measured_hierarchy", "measured_machine", "with_bandwidths",
]


#: What a kernel's FLOPs run on: tensor cores / matrix units (the precision's dense peak), or
#: the vector (CUDA-core) units that scalar code runs on (``Hierarchy.vector_tflops``).
MATRIX, VECTOR = "matrix", "vector"


#: The name of a GPU's first level: L1 and shared memory are one SRAM per SM (package doc).
L1_SMEM = "L1 / shared memory"


@dataclass(frozen=True)
class Level:
    """One memory level. Bytes, GB/s. ``bandwidth_gbs`` None: no public figure (not drawn)."""

    name: str
    capacity_bytes: float  # what the whole problem can be kept in: one SM's for a private
    # level (shared memory), the whole level for a shared one (L2, DRAM)
    tile_capacity_bytes: float  # what one core's or SM's tile may use of it
    bandwidth_gbs: float | None
    source: str  # where capacity and bandwidth come from
    estimate: bool = False  # the bandwidth is derived or measured, not a vendor figure
    note: str = ""
    scope: str = ""  # "per SM", "shared by 108 SMs", "one thread's view" ...
    sharers: int = 1  # SMs or cores whose tiles run from this level at once (a GPU's L2: SMs)
    scratchpad: bool = False  # software-managed (shared memory): a tile too big fails to launch
    measured: bool = False  # the bandwidth is a measurement: this machine's plateau, or a
    # published microbenchmark named in ``source`` (a registry GPU's L2)

    @property
    def bandwidth_basis(self) -> str:
        """How the bandwidth is known: "measured", "derived" (an estimate from a published
        per-clock figure) or "published" (a vendor figure); "" without a bandwidth."""
        if self.bandwidth_gbs is None:
            return ""
        return "measured" if self.measured else "derived" if self.estimate else "published"


@dataclass(frozen=True)
class Hierarchy:
    """A machine's levels (fastest first, main memory last) and its compute roof."""

    key: str
    name: str
    kind: str  # "gpu" or "cpu"
    levels: tuple[Level, ...]
    peak_tflops: float
    precision: str  # the precision the peak and the kernels' bytes are for
    source: str
    #: The vector (CUDA-core, non-tensor) ceiling that scalar kernels run under; None where
    #: the peak itself is a vector rate (a CPU's measured fp32 GEMM).
    vector_tflops: float | None = None
    #: One SM's register file in bytes (a CTA's fp32 accumulators must leave room in it);
    #: None where it is not modelled (a CPU).
    register_file_bytes: float | None = None
    #: The GPU architecture whose GEMM schedule a library uses here (:data:`GEMM_SCHEDULES`:
    #: "hopper", "ampere"); None for a CPU.
    arch: str | None = None

    def ceiling_tflops(self, compute: str) -> float:
        """The compute ceiling of a kernel that runs on ``compute`` ("matrix" or "vector")."""
        if one_of("compute", compute, (MATRIX, VECTOR)) == VECTOR and self.vector_tflops:
            return self.vector_tflops
        return self.peak_tflops

    def level(self, level: str) -> Level:
        """The level called ``level`` (case-insensitive); KeyError naming the known ones."""
        want = text("level", level).lower()
        for lv in self.levels:
            if lv.name.lower() == want:
                return lv
        names = [lv.name for lv in self.levels]
        raise KeyError(f"unknown level={shown(level)} in {self.name}." + close_matches(
            want, names, always_list=True))

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(lv.name for lv in self.levels)


def _check_levels(levels: Sequence[Level]) -> tuple[Level, ...]:
    lv = tuple(sequence("levels", levels))
    if len(lv) < 2 or not all(isinstance(x, Level) for x in lv):
        raise ValueError("levels must be at least two hierarchy.Level objects, fastest first, "
                         f"got {shown(levels)}")
    for x in lv:
        positive_int(f"sharers of {x.name}", x.sharers)
        positive(f"capacity_bytes of {x.name}", x.capacity_bytes)
        positive(f"tile_capacity_bytes of {x.name}", x.tile_capacity_bytes)
        if x.bandwidth_gbs is not None:
            positive(f"bandwidth_gbs of {x.name}", x.bandwidth_gbs)
    if len({x.name.lower() for x in lv}) != len(lv):
        raise ValueError("levels must have distinct names, got "
                         f"{', '.join(x.name for x in lv)}")
    return lv


def hierarchy(key: str, name: str, kind: str, levels: Sequence[Level], peak_tflops: float,
              precision: str, source: str, *, vector_tflops: float | None = None,
              register_file_bytes: float | None = None,
              arch: str | None = None) -> Hierarchy:
    """A validated Hierarchy (levels fastest first, capacities > 0, bandwidths > 0 or None;
    ``vector_tflops`` and ``register_file_bytes`` > 0 or None; ``arch`` one of
    :data:`GEMM_SCHEDULES` or None)."""
    return Hierarchy(text("key", key), text("name", name), one_of("kind", kind, ("gpu", "cpu")),
                     _check_levels(levels), positive("peak_tflops", peak_tflops),
                     _precision.get(precision, arg="precision").key, text("source", source),
                     None if vector_tflops is None else positive("vector_tflops", vector_tflops),
                     None if register_file_bytes is None
                     else positive("register_file_bytes", register_file_bytes),
                     None if arch is None else one_of("arch", arch, tuple(GEMM_SCHEDULES)))


# --- GPU levels from the registry -----------------------------------------------------------

_NO_L2_BW = ("no published measurement or vendor figure of this GPU's L2 bandwidth: the level "
             "is listed, its roof is not drawn, and a verdict that hangs on it is undetermined, "
             "never 'compute' (measure it: Part 1 on a GPU)")
_SMEM_NOTE = ("~ derived: SMs x 128 B/clock x boost clock (fusion.onchip); FlashAttention "
              "(Dao et al. 2022) quotes ~19 TB/s for the A100's on-chip SRAM. L1 and shared "
              "memory are the same SRAM: a cache for kernels that stage nothing, a scratchpad "
              "for those that stage tiles")


def gpu_hierarchy(hw, precision: str = "bf16") -> Hierarchy:
    """L1 / shared memory (per SM), L2 and HBM of a registry GPU with on-chip figures.

    Capacities: shared memory per block (what one tile may use: a scratchpad, so a bigger tile
    fails to launch) and per SM (what one SM can keep: it is private to the SM) from
    ``fusion.onchip``, L2 (``Device.l2_bytes``, shared by all SMs: a wave of one CTA per SM
    shares it, and one tile's share is L2 / SMs), HBM (``memory_bytes``). Bandwidths: shared
    memory ~ derived (estimate), L2 measured by a published microbenchmark
    (``L2_MEASURED_GBS``), else None; HBM from the datasheet. Compute: the dense ``precision``
    peak (tensor cores) and the vector (CUDA-core) ceiling ``roofline.peak_tflops(d,
    VECTOR)`` for kernels that cannot use tensor cores; the register file of one SM
    (``fusion.onchip``) for the accumulator check. KeyError when the registry lacks the
    on-chip figures or the L2 size."""
    d = hardware.get(hw, arg="hw")
    roofline.peak_tflops(d, precision)  # the precision is checked before anything is built
    oc = _flash.onchip(d)
    if d.l2_bytes is None:
        raise KeyError(f"The registry has no L2 size for the {d.name}, so its hierarchy cannot "
                       "be drawn.")
    l2_bw, l2_src, l2_note = None, d.source("l2_bytes"), _NO_L2_BW
    if d.key in L2_MEASURED_GBS:
        l2_bw, src = L2_MEASURED_GBS[d.key]
        l2_src = f"{d.source('l2_bytes')}; bandwidth {src}"
        l2_note = ("measured by a published microbenchmark (NVIDIA publishes no L2 bandwidth "
                   "in GB/s)")
    levels = (
        Level(L1_SMEM, oc.smem_per_sm_kb * 1024, oc.smem_per_block_bytes,
              oc.smem_bandwidth_gbs, f"{oc.sources['smem']}; {oc.sources['sms']}", True,
              _SMEM_NOTE, f"per SM ({oc.sms} SMs)", scratchpad=True),
        Level("L2", d.l2_bytes, d.l2_bytes / oc.sms, l2_bw, l2_src, l2_bw is not None, l2_note,
              f"shared by {oc.sms} SMs", sharers=oc.sms, measured=l2_bw is not None),
        Level("HBM", d.memory_bytes, d.memory_bytes, d.bandwidth_gbs,
              d.source("bandwidth_gbs"), False, d.memory_type, "device memory"),
    )
    vector = roofline.peak_tflops(d, roofline.VECTOR) if d.vector_tflops is not None else None
    return hierarchy(d.key, d.name, "gpu", levels, roofline.peak_tflops(d, precision), precision,
                     f"registry: {d.name}", vector_tflops=vector,
                     register_file_bytes=oc.register_bytes, arch=GPU_ARCH.get(d.key, "ampere"))


#: The architecture of each registry GPU with on-chip figures: which GEMM schedule its
#: library runs (:data:`GEMM_SCHEDULES`; Ada's kernels are Ampere-style, without clusters).
GPU_ARCH = {"h100-sxm": "hopper", "h100-pcie": "hopper", "h200-sxm": "hopper",
            "a100-sxm-80gb": "ampere", "l4": "ampere", "rtx-4090": "ampere"}


@dataclass(frozen=True)
class GemmSchedule:
    """How a GEMM library tiles a large GEMM on one architecture (stated, with its source):
    CTA tiles of ``tile_m`` x ``tile_n``, ``cluster`` CTAs along M sharing one B tile through
    TMA multicast (1: no clusters), ``register_tile`` x ``register_tile`` warp tiles."""

    tile_m: int
    tile_n: int
    cluster: int
    register_tile: int
    source: str


#: The tiles cuBLAS/CUTLASS run for a large bf16/fp16 GEMM (stated). Ampere:
#: ``ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x3`` (see GEMM_BK). Hopper: CTA
#: tiles of 128 x 256 in clusters of 2 CTAs, the operand the pair shares multicast by TMA, so
#: L2 serves it once per cluster (CUTLASS 3 sm90 warp-specialised kernels, cluster shape
#: 2x1x1; cuBLAS's sm90 ``..._128x256x64_cluster2x1x1_...``; hardware.md "Reality anchors":
#: without the multicast the L2 roof of an 8192^3 bf16 GEMM sits below cuBLAS's measured
#: 794.5 TFLOP/s on the H100).
GEMM_SCHEDULES = {
    "ampere": GemmSchedule(128, 128, 1, 64, "cuBLAS's Ampere kernel: 128 x 128 tiles, "
                                            "64 x 64 warp tiles, no clusters"),
    "hopper": GemmSchedule(128, 256, 2, 64, "cuBLAS/CUTLASS sm90: 128 x 256 tiles in "
                                            "2-CTA clusters, TMA multicast of the shared "
                                            "operand"),
}



def gpu_keys() -> list[str]:
    """Registry devices whose hierarchy can be built (on-chip figures and an L2 size)."""
    return [k for k in _flash.ONCHIP if hardware.get(k).l2_bytes is not None]



def with_bandwidths(hier: Hierarchy, measured: Mapping[str, float], *,
                    source: str = "measured on this machine") -> Hierarchy:
    """The same levels with the bandwidths in ``measured`` ({level name: GB/s}) replacing the
    registry's (a GPU's measured L2 and HBM plateaus); other levels keep theirs. A name may be
    one part of a level's " / " name ("shared memory" or "L1" for ``L1_SMEM``, as the
    driver's cache sizes name it)."""
    from dataclasses import replace

    hier = instance("hier", hier, Hierarchy, "a hierarchy.Hierarchy")
    measured = mapping("measured", measured)

    def _level_name(nm):
        for lv in hier.names:
            if nm == lv or (isinstance(nm, str) and nm in lv.split(" / ")):
                return lv
        raise KeyError(f"unknown level {shown(nm)} in measured: {hier.name} has "
                       f"{', '.join(hier.names)}")

    measured = {_level_name(nm): bw for nm, bw in measured.items()}
    source = text("source", source)
    levels = tuple(replace(lv, bandwidth_gbs=positive(f"measured[{lv.name!r}]",
                                                      measured[lv.name]),
                           estimate=True, source=source, note="measured plateau",
                           measured=True)
                   if lv.name in measured else lv for lv in hier.levels)
    return hierarchy("measured", f"{hier.name} (measured)", hier.kind, levels, hier.peak_tflops,
                     hier.precision, source, vector_tflops=hier.vector_tflops,
                     register_file_bytes=hier.register_file_bytes, arch=hier.arch)


def measured_hierarchy(name: str, levels: Mapping[str, tuple[float, float | None]],
                       peak_tflops: float, *, precision: str = "fp32",
                       source: str = "measured on this machine", key: str = "measured",
                       kind: str = "cpu") -> Hierarchy:
    """A hierarchy from measurements: ``levels`` maps a name ("L1", "L2", "L3", "DRAM") to
    (capacity bytes, measured GB/s or None), fastest first, main memory last. One thread's
    view (the lab's sweep runs one thread), so a tile may use all of a level, shared or not."""
    levels = mapping("levels", levels)
    if len(levels) < 2:
        raise ValueError(f"levels must map at least two level names to (bytes, GB/s), got "
                         f"{shown(levels)}")
    source = text("source", source)
    out = []
    for nm, pair in levels.items():
        if not isinstance(pair, (tuple, list)) or len(pair) != 2:
            raise ValueError(f"levels[{shown(nm)}] must be (capacity bytes, GB/s or None), "
                             f"got {shown(pair)}")
        cap, bw = pair
        out.append(Level(text(f"a name in levels ({shown(nm)})", nm),
                         positive(f"levels[{nm!r}] capacity", cap),
                         float(cap), None if bw is None else positive(f"levels[{nm!r}] GB/s", bw),
                         source, True, "measured plateau (median of its sizes)",
                         "one thread's view", measured=bw is not None))
    return hierarchy(key, name, kind, out, peak_tflops, precision, source)


def from_plateaus(name: str, caches: Mapping[str, float], plateaus: Sequence,
                  memory_bytes: float, peak_tflops: float, *, precision: str = "fp32",
                  source: str = "measured on this machine", key: str = "measured",
                  memory_name: str = "DRAM", kind: str = "cpu") -> Hierarchy:
    """A CPU hierarchy from measured plateaus (``staircase.name_plateaus``): one level per
    reported cache ({name: bytes}, fastest first) and main memory, each with the bandwidth of
    the plateau carrying its name, or None (no roof) when no plateau was found for it."""
    from labs.core.physics import staircase

    by = {p.name: p.bandwidth_gbs for p in staircase.check_plateaus(plateaus)}
    caches = staircase.check_caches(caches)
    if not caches:
        raise ValueError("caches must name at least one cache (the OS reported none: draw the "
                         "measured staircase without levels)")
    levels = {nm: (cap, by.get(nm)) for nm, cap in sorted(caches.items(), key=lambda kv: kv[1])}
    memory_name = text("memory_name", memory_name)
    if memory_name in levels:
        raise ValueError(f"memory_name={memory_name!r} is also a cache's name in caches")
    levels[memory_name] = (positive("memory_bytes", memory_bytes), by.get(memory_name))
    return measured_hierarchy(name, levels, peak_tflops, precision=precision, source=source,
                              key=key, kind=kind)


#: Main memory's size where the machine does not report it (``measured_machine``'s
#: ``memory_bytes=None``): a stated placeholder, not a measurement. Main memory is the last
#: level, which serves whatever the caches above it miss, so :func:`place` never asks whether
#: a problem fits in it: this size decides no placement and no time, it only names the level.
UNREPORTED_MEMORY_BYTES = 16e9


def measured_machine(device: str, caches: Mapping[str, float], plateaus: Sequence,
                     memory_bytes: float | None, peak_tflops: float, *, precision: str,
                     memory_name: str = "DRAM", gpu: bool = False,
                     registry_key: str | None = None) -> Hierarchy:
    """This machine's hierarchy from its measured staircase: a GPU the registry knows
    (``registry_key``) keeps the registry's levels with the measured plateaus' bandwidths
    (:func:`with_bandwidths`); any other machine is built from its reported ``caches`` and
    ``plateaus`` (:func:`from_plateaus`), named "This machine (``device``)", with main memory
    of ``memory_bytes`` (None where the machine does not report it:
    :data:`UNREPORTED_MEMORY_BYTES`)."""
    device = text("device", device)
    if registry_key is not None:
        registry_key = hardware.get(registry_key, arg="registry_key").key
    if flag("gpu", gpu) and registry_key:
        return with_bandwidths(gpu_hierarchy(registry_key, precision),
                               {p.name: p.bandwidth_gbs for p in plateaus})
    if memory_bytes is None:
        memory_bytes = UNREPORTED_MEMORY_BYTES
    return from_plateaus(f"This machine ({device})", caches, plateaus, memory_bytes,
                         peak_tflops, precision=precision, memory_name=memory_name,
                         kind="gpu" if gpu else "cpu")
