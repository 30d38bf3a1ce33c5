"""Lab 5 physics: the memory hierarchy and the hierarchical roofline.

A machine is a list of memory **levels**, fastest first (L1 / shared memory, L2, ...,
DRAM/HBM last), each with a capacity and, where a source or a measurement gives one, a
bandwidth. A kernel has **one arithmetic intensity per level**: its FLOPs over the bytes that
level serves. Drawn with one point per level, that is the *hierarchical* roofline (Yang,
Kurth, Williams, "Hierarchical Roofline Analysis for GPUs", 2020). The *cache-aware* roofline
(Ilic, Pratas, Sousa, IEEE CAL 2014) is a different plot: one core-side intensity (FLOPs per
byte the core loads) under one roof per level. Both use the same roofs: the level whose roof,
AI_l x bandwidth_l, is lowest binds; a level that holds a kernel's reuse structure (its tile)
sends fewer bytes to the levels below it.

Traffic model (SIMPLIFIED, stated in every docstring it touches). Level 0 serves the core's
loads. Each later level serves the misses of the level above it, and a level's misses are:

* the kernel's **compulsory** bytes, when the whole problem fits in the level (its total
  capacity: every core or SM works on the same matrices);
* for a tiled GEMM in a level **shared by several SMs** (a GPU's L2): the **wave's** bytes,
  when the wave's footprint fits (:func:`wave_shape`, :func:`wave_footprint_bytes`). L2 is
  shared by all SMs; the CTAs resident at once (a wave) share the A and B panels they read,
  so HBM traffic is set by the wave's footprint in L2, not by one tile's reuse alone
  (CUTLASS's threadblock swizzle and cuBLAS's rasterisation arrange the wave so; the JAX
  scaling book's GPU chapter describes the same L2 reuse). This is what puts large bf16
  GEMMs under the compute roof, as cuBLAS measures (tests/test_reality_anchors.py). A
  flash-attention tile's wave keeps the K and V of its heads in L2 the same way (:mod:`flash`);
* the kernel's **reuse** bytes, when its tile (working set) fits in the share of the level one
  core or SM can use (``Level.tile_capacity_bytes``);
* otherwise its **streaming** bytes: the tile does not fit, the cache thrashes, and the level
  passes on (nearly) everything it was asked for.

On NVIDIA GPUs since Volta, L1 and shared memory are **one on-chip SRAM per SM**, split by a
carveout (NVIDIA CUDA C++ Programming Guide, "Shared Memory" of compute capability 8.x/9.x:
"the L1 cache and shared memory ... unified data cache"), so the GPU's first level is called
``L1_SMEM`` ("L1 / shared memory") and has one bandwidth. It plays two roles:

* a **cache (L1)** for a kernel that stages nothing (a naive GEMM, a stencil): the loads of a
  thread block's warps that hit the same sectors are served once from L2. A naive GEMM with
  one thread per C element in ``NAIVE_BLOCK`` x ``NAIVE_BLOCK`` blocks (each warp one row of
  the block, so its B loads are coalesced and its A load is one broadcast; the block's warps
  re-read the same B row segment) makes L2 see the block's traffic,
  ``roofline.tiled_gemm_bytes(.., NAIVE_BLOCK, ..)``, not every load (``KernelModel.l1_bytes``).
  Nsight Compute reports such kernels L1/TEX- or LSU-throughput-bound, not L2-bound; a
  published measurement sits under this bound (tests/test_reality_anchors.py: S. Boehm's
  naive and coalesced SGEMMs on an RTX A6000);
* a software-managed **scratchpad** (shared memory, ``Level.scratchpad``) for a kernel that
  stages its tiles there (a tiled GEMM, a flash-attention tile). Asking for more than the
  per-block limit **fails to launch** (:class:`LaunchError`); it never "spills" to the next
  level. Only registers spill, and caches thrash. A tiled GEMM stages thin K-slabs,
  ``GEMM_STAGES`` x (T_m + T_n) x ``GEMM_BK`` x b (:func:`staged_gemm_bytes`), and keeps its
  C tile in registers as fp32 accumulators, T_m T_n x 4 B per CTA, which must leave room in
  the SM's register file (64K 32-bit registers = 256 KiB on A100/H100, at most 255 per
  thread; :func:`launch_problem`).

A level never sends more than it was asked for. Registers are not a level here (no sourced
bandwidth); the register tile decides how many bytes level 0 serves. Kernels that cannot use
tensor cores (a naive scalar GEMM, a stencil, a reduction) sit under the vector (CUDA-core)
ceiling, ``Hierarchy.vector_tflops``, not the tensor-core peak. Measured levels (this
machine's plateaus, Part 1) and registry levels (sourced sizes; bandwidths only where a public
figure exists, marked as derived or measured) use the same maths.

NVIDIA publishes no L2 bandwidth in GB/s; the registry GPUs' L2 roofs are published
microbenchmark measurements (:data:`L2_MEASURED_GBS`, marked measured). A GPU's tiled GEMM is
modelled as its library runs it (:func:`library_gemm_kernel`): on Hopper, 128 x 256 tiles in
2-CTA clusters whose shared operand TMA multicasts, so L2 serves it once per cluster
(``gemm_kernel(.., cluster=2)``); without that, the H100's L2 roof for an 8192^3 bf16 GEMM
would sit below what cuBLAS measures (tests/test_reality_anchors.py).

A level without a bandwidth figure (a level of a measured machine whose plateau was not found,
a GPU without a published measurement) is **unknown, not unlimited**. The known roofs give an
upper bound; the unknown level would need AI_l x bandwidth_l >= that bound, i.e.
``bandwidth_l >= bound / AI_l`` (:class:`UnknownRoof`). It cannot bind when that need is at most the bandwidth of a slower
level below it (stated assumption, :data:`FLOOR_RULE`: every byte a slower level delivers
crosses it, so it sustains at least that rate); otherwise the binding roof is
:data:`UNDETERMINED`, and the model says how fast the level would have to be.

This module is one piece, although long: the levels, the kernels' bytes per level and the
placement are one traffic model whose stated assumptions (the wave, the staging, the L1 of an
unstaged kernel) each touch all three; split apart, every part would restate them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from labs.core.physics import formulas
from labs.core.physics import flash as _flash
from labs.core.physics.flash import L2_MEASURED_GBS  # noqa: F401  (re-exported)
from labs.core.physics import hardware
from labs.core.physics import precision as _precision
from labs.core.physics import roofline
from labs.core.physics import units as _units
from labs.core.physics._validate import (
    close_matches,
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
    "BLOCK_REUSE", "COMPUTE", "DEFAULT_REGISTER_TILE", "FLOOR_RULE", "GEMM_BK", "GEMM_SCHEDULES",
    "GEMM_STAGES", "GPU_ARCH", "GemmSchedule", "Hierarchy", "HierarchyPoint", "KernelModel",
    "L1_SMEM", "L2_MEASURED_GBS", "LaunchError", "Level", "LevelUse", "MATRIX", "NAIVE_BLOCK",
    "SMEM_NO_OPT_IN_BYTES", "TileStatus", "UNDETERMINED", "UnknownRoof", "VECTOR", "WAVE_SLABS", "flash_kernel",
    "from_plateaus", "gemm_kernel", "gpu_hierarchy", "gpu_keys", "hierarchy",
    "largest_fitting_tile", "launch_failure_status", "launch_problem", "launchable_tiles", "level_roof_tflops",
    "library_gemm_kernel", "measured_hierarchy", "place", "reduction_kernel", "staged_gemm_bytes",
    "stencil_kernel", "tile_misses_bytes", "tile_sweep", "tile_traffic_ratio",
    "wave_footprint_bytes", "wave_gemm_bytes", "wave_shape", "with_bandwidths"
]


#: What a kernel's FLOPs run on: tensor cores / matrix units (the precision's dense peak), or
#: the vector (CUDA-core) units that scalar code runs on (``Hierarchy.vector_tflops``).
MATRIX, VECTOR = "matrix", "vector"


#: The name of a GPU's first level: L1 and shared memory are one SRAM per SM (module doc).
L1_SMEM = "L1 / shared memory"

#: A naive GEMM's thread block edge (stated assumption): 32 x 32 threads, one per element of
#: C, each warp one row of the block (the common naive launch, e.g. S. Boehm, "How to Optimize
#: a CUDA Matmul Kernel", kernels 1-2). L1 keeps what the block's warps share.
NAIVE_BLOCK = 32

#: Shared-memory staging of a tiled GEMM (stated, CUTLASS/cuBLAS Ampere defaults): K-slabs of
#: depth BK = 32 in a 3-stage pipeline, as the kernel names say (CUTLASS profiler
#: ``cutlass_tensorop_bf16_s16816gemm_bf16_128x128_32x3_*``; cuBLAS
#: ``ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x3_*``: tile 128 x 128, BK 32, 3
#: stages). 128 x 128 bf16: 3 x 256 x 32 x 2 B = 48 KiB.
GEMM_BK, GEMM_STAGES = 32, 3

#: Shared memory a block gets without the per-kernel opt-in: above 48 KB a kernel must use
#: dynamic shared memory and call cudaFuncSetAttribute(..,
#: cudaFuncAttributeMaxDynamicSharedMemorySize, ..) (CUDA C++ Programming Guide, compute
#: capability 7.x-9.x, "Shared Memory"); without it the launch fails at 48 KB.
SMEM_NO_OPT_IN_BYTES = 48 * 1024


class LaunchError(ValueError):
    """A kernel that cannot run: its tile asks a scratchpad (shared memory) for more than the
    per-block limit, or its fp32 accumulators fill the register file, so the launch fails (a
    scratchpad does not spill (registers do) or thrash (caches do))."""


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


def library_gemm_kernel(hier: Hierarchy, m, n, k) -> KernelModel:
    """The GEMM as a library tiles it on ``hier`` (the hierarchy's precision): on a GPU its
    architecture's :data:`GEMM_SCHEDULES` entry (Hopper: 128 x 256 tiles in 2-CTA clusters
    with multicast; Ampere: 128 x 128); on a CPU (stated) the largest power-of-two square
    tile whose working set fits the first level, with ``DEFAULT_REGISTER_TILE`` register
    tiles, as a BLAS keeps its micro-panels in L1. Tiles are capped by the matrix."""
    hier = instance("hier", hier, Hierarchy, "a hierarchy.Hierarchy")
    m, n, k = positive_int("m", m), positive_int("n", n), positive_int("k", k)
    if hier.kind == "gpu":
        sch = GEMM_SCHEDULES[hier.arch or "ampere"]
        tm, tn, cluster, r = sch.tile_m, sch.tile_n, sch.cluster, sch.register_tile
    else:
        tm = tn = max(largest_fitting_tile(hier.levels[0], hier.precision), 1)
        cluster, r = 1, DEFAULT_REGISTER_TILE["cpu"]
    tm, tn = min(tm, max(m, n)), min(tn, max(m, n))
    return gemm_kernel(m, n, k, hier.precision, tile=tm, tile_n=tn, cluster=cluster,
                       register_tile=min(r, tm, tn))


def gpu_keys() -> list[str]:
    """Registry devices whose hierarchy can be built (on-chip figures and an L2 size)."""
    return [k for k in _flash.ONCHIP if hardware.get(k).l2_bytes is not None]


#: Stated, editable register-tile defaults (the reuse of every element level 0 hands to the
#: core): a CPU BLAS micro-kernel of 6 x 16 fp32 reuses each loaded element about
#: 2 x 6 x 16 / (6 + 16) ~ 9 times (so 8); a GPU tensor-core GEMM's 64 x 64 warp tile (CUTLASS's
#: default warp shape under 128 x 128 blocks) 64 times.
DEFAULT_REGISTER_TILE = {"cpu": 8, "gpu": 64}


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

    by = {p.name: p.bandwidth_gbs for p in staircase._check_plateaus(plateaus)}
    caches = staircase._check_caches(caches)
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


# --- kernels: bytes per level ---------------------------------------------------------------

@dataclass(frozen=True)
class KernelModel:
    """What the traffic model needs to know about one kernel (bytes, FLOPs)."""

    name: str
    flops: float
    core_bytes: float  # what level 0 serves (the core's loads, after register reuse)
    reuse_bytes: float  # misses of a level that holds the tile
    stream_bytes: float  # misses of a level that holds neither tile nor problem
    compulsory_bytes: float  # misses of a level that holds the whole problem
    working_set: float  # bytes the tile needs in a level
    footprint: float  # bytes of the whole problem
    what: str = ""  # one line: shape, tiles, precision
    compute: str = MATRIX  # MATRIX (tensor cores) or VECTOR (scalar code: CUDA cores)
    staged: bool = False  # the kernel stages its tile in a scratchpad (shared memory)
    gemm: tuple | None = None  # (m, n, k, tile_m, bytes per element, tile_n, cluster) of a
    # tiled GEMM: its waves
    staged_bytes: float = 0.0  # what a staged kernel asks of a scratchpad per block
    accumulator_bytes: float = 0.0  # registers a CTA's fp32 accumulators take (0: not modelled)
    l1_bytes: float | None = None  # misses of a GPU's L1 for a kernel that stages nothing (the
    # thread block's shared loads); None: L1 is not modelled for it (it is a cache level like
    # any other)
    flash: tuple | None = None  # (batch, heads, seq, head_dim, block_q, precision) of a
    # flash-attention kernel: a level shared by the SMs keeps the K and V of the heads in flight
    # (fusion.flash_shared_cache_misses)


def staged_gemm_bytes(tile_m, tile_n, k, bytes_per_element, *, bk: int = GEMM_BK,
                      stages: int = GEMM_STAGES) -> float:
    """Shared memory a tiled GEMM's block stages: ``stages`` K-slabs of A (T_m x BK) and B
    (BK x T_n), stages (T_m + T_n) min(BK, K) b; C stays in registers. A100/H100, 128 x 128 x
    32, 3 stages, bf16: 3 x 256 x 32 x 2 B = 48 KiB (CUTLASS's 256 x 128 x 64 x 3: 144 KiB)."""
    tm, tn = positive_int("tile_m", tile_m), positive_int("tile_n", tile_n)
    depth = min(positive_int("bk", bk), positive_int("k", k))
    return float(positive_int("stages", stages) * (tm + tn) * depth
                 * positive("bytes_per_element", bytes_per_element))


def gemm_kernel(m, n, k, precision: str, *, tile: int, register_tile: int = 1,
                tile_n: int | None = None, cluster: int = 1) -> KernelModel:
    """C[M,N] = A[M,K] B[K,N] with T x T cache tiles and r x r register tiles (SIMPLIFIED).

    Level 0 serves ``roofline.tiled_gemm_bytes(.., r, ..)`` (each r x r block of C in
    registers reads r elements of A and of B per step of K); a cache holding the T-tile's
    working set, 3 T^2 b (the C tile and the A and B blocks it multiplies: a cache's model),
    passes on ``tiled_gemm_bytes(.., T, ..)``; one holding A, B and C passes on the compulsory
    bytes; a level shared by a wave of tiles (a GPU's L2) passes on the wave's bytes
    (:func:`wave_gemm_bytes`).

    ``tile_n`` (default ``tile``): a T_m x T_n tile (``tile`` = T_m); A is then re-read once
    per tile column, ceil(N / T_n) times, B once per tile row. ``cluster`` (Hopper): CTAs of
    a cluster stacked along M share their B tile, which TMA multicasts to all of them, so the
    level below the tile serves B once per cluster, ceil(M / (c T_m)) times:

        b (M K ceil(N / T_n) + K N ceil(M / (c T_m)) + M N)   (:func:`tile_misses_bytes`).

    ``tile=1, register_tile=1`` is the naive kernel: scalar code (no tensor cores: it runs
    under the vector ceiling) that stages nothing, one thread per C element in NAIVE_BLOCK x
    NAIVE_BLOCK blocks; a GPU's L1 keeps what the block's warps share and passes on
    ``tiled_gemm_bytes(.., NAIVE_BLOCK, ..)`` (``l1_bytes``, module doc).

    A tiled kernel (T > 1) runs on the tensor cores and stages K-slabs in shared memory,
    :func:`staged_gemm_bytes` (``staged_bytes``), with its C tile in registers as fp32
    accumulators, T_m T_n x 4 B (``accumulator_bytes``). ValueError when a tile is larger
    than the matrix or the register tile is larger than the cache tile."""
    m, n, k = positive_int("m", m), positive_int("n", n), positive_int("k", k)
    t, r = positive_int("tile", tile), positive_int("register_tile", register_tile)
    tn = t if tile_n is None else positive_int("tile_n", tile_n)
    c = positive_int("cluster", cluster)
    if max(t, tn) > max(m, n):
        raise ValueError(f"tile={max(t, tn)} is larger than the matrix (M={m}, N={n})")
    if r > min(t, tn):
        raise ValueError(f"register_tile={r} is larger than the cache tile (tile="
                         f"{min(t, tn)})")
    naive = t == 1 and tn == 1
    if naive and c > 1:
        raise ValueError(f"cluster={c}: the naive kernel (tile=1) stages nothing to share")
    b = _precision.bytes_per_element(precision, arg="precision")
    core = roofline.tiled_gemm_bytes(m, n, k, r, b)
    foot = float(b * (m * k + k * n + m * n))
    shape = f"{t}×{tn}" if tn != t else f"{t}×{t}"
    label = "naive GEMM" if naive else f"tiled GEMM ({shape} tile" + (
        f", {c}-CTA clusters)" if c > 1 else ")")
    what = (f"{m}×{k} · {k}×{n}, {precision}, no tiles (scalar code)" if naive else
            f"{m}×{k} · {k}×{n}, {precision}, tile {shape}, register tile {r}"
            + (f", clusters of {c} sharing B by multicast" if c > 1 else ""))
    block = min(NAIVE_BLOCK, m, n)
    return KernelModel(label, 2.0 * m * n * k, core, tile_misses_bytes(m, n, k, t, tn, c, b),
                       core, foot, float(b * (t * tn + (t + tn) * min(t, tn))), foot, what,
                       VECTOR if naive else MATRIX, not naive,
                       None if naive else (m, n, k, t, b, tn, c),
                       0.0 if naive else staged_gemm_bytes(t, tn, k, b),
                       0.0 if naive else 4.0 * t * tn,
                       roofline.tiled_gemm_bytes(m, n, k, block, b) if naive else None)


def tile_misses_bytes(m, n, k, tile_m, tile_n, cluster, bytes_per_element) -> float:
    """Bytes the level below a GEMM's T_m x T_n tile serves (its misses), with ``cluster``
    CTAs along M sharing each B tile by multicast: b (M K ceil(N / T_n) + K N ceil(M / (c
    T_m)) + M N). Square, no cluster: ``roofline.tiled_gemm_bytes``. H100, 8192^3 bf16,
    128 x 256 in pairs: 2 B x 8192^2 x (32 + 32 + 1) = 8.72 GB."""
    m, n, k = positive_int("m", m), positive_int("n", n), positive_int("k", k)
    tm, tn = positive_int("tile_m", tile_m), positive_int("tile_n", tile_n)
    c = positive_int("cluster", cluster)
    b = positive("bytes_per_element", bytes_per_element)
    return b * (m * k * -(-n // tn) + k * n * -(-m // (c * tm)) + m * n)


def stencil_kernel(n, precision: str) -> KernelModel:
    """One sweep of a 2-D 5-point stencil on an n x n grid (out = 0.2 x (centre + 4
    neighbours): 5 FLOPs per point), SIMPLIFIED: level 0 serves 5 reads + 1 write per
    point; a level holding three input rows and the output row passes on one read and one
    write per point; one holding less re-reads each input row three times (4 per point).
    Scalar code: it runs under the vector ceiling, through the caches (it stages nothing)."""
    n = positive_int("n", n)
    if n < 3:
        raise ValueError(f"n must be >= 3 for a 5-point stencil, got {n}")
    b = _precision.bytes_per_element(precision, arg="precision")
    pts = float(n) * n
    return KernelModel("5-point stencil", 5 * pts, 6 * b * pts, 2 * b * pts, 4 * b * pts,
                       2 * b * pts, 4.0 * n * b, 2.0 * b * pts, f"{n}×{n} grid, {precision}",
                       VECTOR)


def reduction_kernel(n_elements, precision: str) -> KernelModel:
    """A sum over n elements, repeated (as Part 1's sweep reads): 1 FLOP and b bytes per
    element at level 0; a level holding the whole array serves its repeats, so the levels
    below it see nothing (steady state, after the first pass). Scalar code (vector ceiling)."""
    n = positive_int("n_elements", n_elements)
    b = _precision.bytes_per_element(precision, arg="precision")
    size = float(n) * b
    return KernelModel("sum reduction (re-read)", float(n), size, size, size, 0.0, size, size,
                       f"{n:,} elements ({_fmt_bytes(size)}), {precision}", VECTOR)


def flash_kernel(batch, heads, seq_len, head_dim, block_q, block_kv,
                 precision: str = "bf16") -> KernelModel:
    """Lab 4's flash-attention tile: level 0 serves ``fusion.flash_onchip_bytes``; a level
    holding the Q, K, V tiles ((Bq d + 2 Bkv d) b) passes on ``flash_attention_l2_bytes`` (K
    and V re-read once per query tile); a level shared by the SMs (a GPU's L2) keeps the K and
    V of the heads in flight and passes on ``flash_shared_cache_misses`` (about the compulsory
    traffic), as Lab 4's ``flash_attention_hbm_bytes``. The fp32 accumulators stay in registers.
    The tiles are staged in shared memory (a bigger tile fails to launch); the matmuls use
    tensor cores."""
    bq, bkv = positive_int("block_q", block_q), positive_int("block_kv", block_kv)
    s, d = positive_int("seq_len", seq_len), positive_int("head_dim", head_dim)
    if bq > s or bkv > s:
        raise ValueError(f"block_q={bq} and block_kv={bkv} must not exceed seq_len={s}")
    cost = formulas.attention(batch, heads, s, s, d, precision, fused=True)
    chip = _flash.flash_onchip_bytes(batch, heads, s, s, d, bq, bkv, precision)
    reuse = _flash.flash_attention_l2_bytes(batch, heads, s, s, d, bq, precision)
    b = _precision.bytes_per_element(precision, arg="precision")
    return KernelModel("flash-attention tile (Lab 4)", cost.flops, chip, reuse, chip, cost.bytes,
                       (bq * d + 2 * bkv * d) * b, cost.bytes,
                       f"B={batch}, H={heads}, S={s}, d={d}, tile {bq}×{bkv}, {precision}",
                       MATRIX, True, staged_bytes=(bq * d + 2 * bkv * d) * b,
                       flash=(batch, heads, s, d, bq, precision))


def _fmt_bytes(x: float) -> str:
    return _units.format_bytes(x, binary=True)


# --- a wave of tiles sharing L2 ---------------------------------------------------------------

#: K-steps of the wave's A and B slabs that L2 must keep at once (stated assumption): the
#: CTAs of a wave start together and do the same work, so they advance through K together;
#: L2 keeps the slab (depth T) they are reading and the next one, which their pipelines
#: prefetch (CUTLASS's multistage mainloop). Swizzle/rasterisation keeps the wave's output
#: tiles in a compact block, so they share panels (hardware.md "On-chip memory facts").
WAVE_SLABS = 2


def wave_shape(m, n, tile, ctas, *, tile_n=None) -> tuple[int, int]:
    """(rows, columns) of output tiles a wave of ``ctas`` concurrent CTAs covers: the most
    nearly square block of the M/T_m x N/T_n tile grid (rasterised, as a swizzle does; square
    in elements), rows = ceil(sqrt(wave T_n / T_m)), columns = ceil(wave / rows), each capped
    by the grid. A100 (108 SMs), 8192² with T = 128: ten columns, and rows = ceil(108 / 10) =
    one more. ``tile_n`` defaults to ``tile`` (= T_m)."""
    m, n, t = positive_int("m", m), positive_int("n", n), positive_int("tile", tile)
    tn = t if tile_n is None else positive_int("tile_n", tile_n)
    ctas = positive_int("ctas", ctas)
    gm, gn = -(-m // t), -(-n // tn)
    wave = min(ctas, gm * gn)
    rows = min(gm, max(1, math.ceil(math.sqrt(wave * tn / t) - 1e-9)))
    cols = min(gn, -(-wave // rows))
    rows = min(gm, -(-wave // cols))
    return rows, cols


def wave_footprint_bytes(m, n, tile, ctas, bytes_per_element, *, tile_n=None) -> float:
    """Bytes of L2 a wave needs to share its panels: the A slabs of its tile rows and the B
    slabs of its tile columns, ``WAVE_SLABS`` K-steps of depth min(T_m, T_n): WAVE_SLABS
    (rows T_m + cols T_n) min(T_m, T_n) b (stated assumption, see ``WAVE_SLABS``). A100, T =
    128, bf16: 2 x 21 x 128² x 2 B = 1.3 MiB of its 40 MiB."""
    rows, cols = wave_shape(m, n, tile, ctas, tile_n=tile_n)
    t = positive_int("tile", tile)
    tn = t if tile_n is None else positive_int("tile_n", tile_n)
    return float(WAVE_SLABS * (rows * t + cols * tn) * min(t, tn)
                 * positive("bytes_per_element", bytes_per_element))


def wave_gemm_bytes(m, n, k, tile, ctas, bytes_per_element, *, tile_n=None) -> float:
    """Bytes a level shared by a wave of ``ctas`` tiles passes on for a tiled GEMM (SIMPLIFIED):
    the wave reads each A and B panel once for all its tiles, so it acts as one tile of
    (rows T_m) x (cols T_n) (:func:`wave_shape`): A is read once per wave column, B once per
    wave row, C written once,

        b (M K ceil(N / (cols T_n)) + K N ceil(M / (rows T_m)) + M N).

    A100, 8192³ bf16, T = 128 (a wave of ten tile columns and one row more): 2 B x 8192² x
    (7 + 6 + 1) = 1.88 GB, against 17.3 GB for tiles that share nothing
    (``roofline.tiled_gemm_bytes``)."""
    rows, cols = wave_shape(m, n, tile, ctas, tile_n=tile_n)
    b = positive("bytes_per_element", bytes_per_element)
    m, n, k, t = (positive_int(a, v) for a, v in (("m", m), ("n", n), ("k", k), ("tile", tile)))
    tn = t if tile_n is None else positive_int("tile_n", tile_n)
    return b * (m * k * -(-n // (cols * tn)) + k * n * -(-m // (rows * t)) + m * n)


# --- per-level AI, roofs, the binding level -------------------------------------------------

COMPUTE = "compute"

#: ``HierarchyPoint.binding`` when a level the kernel uses has no bandwidth figure and could be
#: the one that binds: its bandwidth is unknown, not unlimited (:class:`UnknownRoof`).
UNDETERMINED = "undetermined"

#: The lower bound a level without a bandwidth figure is given (stated assumption): it is at
#: least as fast as the fastest slower level below it that has one, because every byte those
#: levels deliver to the cores crosses it. On NVIDIA GPUs every device-memory access goes
#: through L2 (NVIDIA Nsight Visual Studio Edition, "Memory Statistics - Global": global memory
#: traffic "is routed through the data caches (L1 cache and/or L2 cache)"; each HBM read is an
#: L2 fill), so L2 sustains at least HBM's rate. The bound only clears a level (a need at or
#: below it); it is never drawn as a roof and never lowers a kernel's bound.
FLOOR_RULE = ("at least as fast as the slower level below it, whose every byte crosses it "
              "(on NVIDIA GPUs every device-memory access goes through L2)")


@dataclass(frozen=True)
class LevelUse:
    """One level as one kernel uses it."""

    level: Level
    bytes: float  # bytes this level serves
    holds: str  # "problem", "wave", "tile", BLOCK_REUSE or "nothing": what the level keeps

    @property
    def ai(self) -> float | None:
        """FLOP per byte this level serves; None when it serves nothing."""
        return None if self.bytes <= 0 else self._flops / self.bytes

    _flops: float = field(default=0.0, repr=False)

    def roof_tflops(self) -> float | None:
        """AI_l x bandwidth_l in TFLOP/s; None without bytes or a known bandwidth."""
        if self.ai is None or self.level.bandwidth_gbs is None:
            return None
        return self.ai * self.level.bandwidth_gbs / 1e3


@dataclass(frozen=True)
class UnknownRoof:
    """A level the kernel uses (it serves bytes) that has no bandwidth figure: unknown, not
    unlimited. ``target_tflops`` is the kernel's bound from the known roofs
    (``HierarchyPoint.attainable_tflops``); to let the kernel reach it the level must serve
    its bytes at ``needs_gbs`` = target / AI or more. ``floor_gbs`` is the bandwidth of the
    fastest slower level below it (:data:`FLOOR_RULE`: the level is at least that fast), None
    when no level below has a figure. It could bind (``could_bind``) unless the need is at or
    below the floor."""

    level: Level
    ai: float  # FLOP per byte the level serves
    target_tflops: float  # the bound the known roofs set
    floor_gbs: float | None  # a lower bound on its bandwidth (FLOOR_RULE), None if none
    floor_level: str = ""  # the level the floor comes from

    @property
    def needs_gbs(self) -> float:
        """The bandwidth (GB/s) the level needs for the kernel to reach ``target_tflops``:
        target x 1e12 FLOP/s / AI FLOP/B = target / AI x 1e3 GB/s."""
        return self.target_tflops * 1e3 / self.ai

    @property
    def could_bind(self) -> bool:
        """True unless the floor already covers the need (then the level cannot bind)."""
        return self.floor_gbs is None or self.needs_gbs > self.floor_gbs * (1 + 1e-9)

    def describe(self) -> str:
        """One sentence: what the level would need, and what is known of it."""
        if not self.could_bind:
            return (f"{self.level.name} has no published or measured bandwidth, but the "
                    f"{_fmt_tflops(self.target_tflops)} TFLOP/s bound needs only "
                    f"{_fmt_gbs(self.needs_gbs)} of it, no more than the "
                    f"{_fmt_gbs(self.floor_gbs)} of {self.floor_level} that crosses it: it "
                    "cannot bind")
        floor = ("" if self.floor_gbs is None else
                 f" (all that is known: it carries {self.floor_level}'s "
                 f"{_fmt_gbs(self.floor_gbs)})")
        return (f"{self.level.name} has no published or measured bandwidth; to reach "
                f"{_fmt_tflops(self.target_tflops)} TFLOP/s it needs ≥ "
                f"{_fmt_gbs(self.needs_gbs)}{floor}")


def _fmt_gbs(gbs: float) -> str:
    """1.05e4 GB/s -> '10.5 TB/s'; 605 -> '605 GB/s' (3 significant figures)."""
    return f"{gbs / 1e3:.3g} TB/s" if gbs >= 1e3 else f"{gbs:.3g} GB/s"


def _fmt_tflops(tflops: float) -> str:
    return f"{tflops:,.1f}" if tflops >= 100 else f"{tflops:.3g}"


@dataclass(frozen=True)
class HierarchyPoint:
    """A kernel on a hierarchical roofline: its AI and roof at every level, what binds."""

    kernel: KernelModel
    hierarchy: Hierarchy
    uses: tuple[LevelUse, ...]

    @property
    def ceiling_tflops(self) -> float:
        """The kernel's compute ceiling: the dense peak for tensor-core code, the vector
        (CUDA-core) rate for scalar code (``Hierarchy.ceiling_tflops``)."""
        return self.hierarchy.ceiling_tflops(self.kernel.compute)

    @property
    def ceiling_name(self) -> str:
        """'bf16 tensor-core peak' or 'vector (CUDA-core, fp32 FMA) ceiling' (a CPU: 'fp32
        peak'). The vector rate is the fp32 FMA rate (A100: 19.5 TFLOP/s); packed bf16x2 FMAs
        with bf16 accumulation would reach about twice it, which a GEMM accumulating in fp32
        does not use."""
        h = self.hierarchy
        if self.kernel.compute == VECTOR and h.vector_tflops:
            return "vector (CUDA-core, fp32 FMA) ceiling"
        return f"{h.precision} tensor-core peak" if h.kind == "gpu" else f"{h.precision} peak"

    @property
    def attainable_tflops(self) -> float:
        """The lowest known roof: min(ceiling, AI_l x bandwidth_l over the levels with a
        bandwidth). When ``determined`` it is the kernel's attainable rate; otherwise an upper
        bound only (a level without a figure can lower it, never raise it)."""
        roofs = [u.roof_tflops() for u in self.uses if u.roof_tflops() is not None]
        return min([self.ceiling_tflops] + roofs)

    @property
    def known_binding(self) -> str:
        """The lowest of the known roofs: a level's name, or "compute" when the compute
        ceiling is. Only the binding roof when ``determined``."""
        best, name = self.ceiling_tflops, COMPUTE
        for u in self.uses:
            roof = u.roof_tflops()
            if roof is not None and roof < best:
                best, name = roof, u.level.name
        return name

    @property
    def unknown_roofs(self) -> tuple[UnknownRoof, ...]:
        """Every level that serves the kernel bytes but has no bandwidth figure, with the
        bandwidth it would need for the known bound (``UnknownRoof``), fastest first."""
        out, target = [], self.attainable_tflops
        levels = self.hierarchy.levels
        for i, u in enumerate(self.uses):
            if u.ai is None or u.level.bandwidth_gbs is not None:
                continue
            below = [lv for lv in levels[i + 1:] if lv.bandwidth_gbs is not None]
            floor = max(below, key=lambda lv: lv.bandwidth_gbs, default=None)
            out.append(UnknownRoof(u.level, u.ai, target,
                                   None if floor is None else floor.bandwidth_gbs,
                                   "" if floor is None else floor.name))
        return tuple(out)

    @property
    def undetermined_by(self) -> tuple[UnknownRoof, ...]:
        """The levels without a figure that could bind (``UnknownRoof.could_bind``)."""
        return tuple(r for r in self.unknown_roofs if r.could_bind)

    @property
    def determined(self) -> bool:
        """Whether the known roofs decide what binds (no level without a figure could)."""
        return not self.undetermined_by

    @property
    def binding(self) -> str:
        """The level whose roof is lowest, "compute" when the compute ceiling is, or
        :data:`UNDETERMINED` when a level without a bandwidth figure could bind: a missing
        figure is unknown, never "no limit" (``undetermined_by`` says what it would need)."""
        return self.known_binding if self.determined else UNDETERMINED

    @property
    def binds_at_derived_peak(self) -> bool:
        """Whether the binding roof is a level's derived per-clock peak (``Level.estimate``,
        e.g. a GPU's L1 / shared memory: SMs x 128 B per clock x boost clock), which kernels
        do not reach: its attainable figure is then an upper bound to say as "at most"."""
        if not self.determined or self.binding not in self.hierarchy.names:
            return False
        return self.use(self.binding).level.bandwidth_basis == "derived"

    @property
    def verdict(self) -> str:
        """The binding roof in words: ``binding`` when determined, else "undetermined: L2 has
        no published or measured bandwidth; to reach X TFLOP/s it needs ≥ Y TB/s (...)"."""
        if self.determined:
            return self.binding
        return f"{UNDETERMINED}: " + "; ".join(r.describe() for r in self.undetermined_by)

    def use(self, level: str) -> LevelUse:
        """How the kernel uses the level called ``level`` (KeyError naming the known ones)."""
        lv = self.hierarchy.level(level)
        return next(u for u in self.uses if u.level is lv)

    @property
    def thrashes(self) -> tuple[str, ...]:
        """Cache levels before the tile's home that it is too big for (empty when level 0
        holds it): the failure state, where those caches thrash and serve the streaming
        bytes. (A scratchpad never appears here: a tile too big for it fails to launch.)"""
        home = self.hierarchy.names.index(self.home)
        return self.hierarchy.names[:home]

    @property
    def tile_bytes(self) -> float:
        """What the tile asks of its home: the staged slabs in a scratchpad
        (``KernelModel.staged_bytes``), else the cache working set."""
        return _fit_bytes(self.kernel, self.hierarchy.level(self.home))

    @property
    def home(self) -> str:
        """The first level that holds the tile or the whole problem (main memory if none)."""
        return next((u.level.name for u in self.uses[:-1] if u.holds != "nothing"),
                    self.uses[-1].level.name)

    @property
    def tile_misses(self) -> LevelUse | None:
        """The level right below the tile's home: it serves the traffic the tile level passes
        on (what falls with the tile's edge). None when the home is main memory."""
        i = self.hierarchy.names.index(self.home)
        return self.uses[i + 1] if i + 1 < len(self.uses) else None

    def tile_status(self, tile: int) -> TileStatus:
        """What Lab 5 says under its tile panel for this tiled GEMM of ``tile`` x ``tile``
        (the edge the student chose): the tile thrashes a cache ("danger"), or lives in a
        level and a roof binds ("success"), or what binds is undetermined ("warn"). A tile
        that fails to launch has no point: :func:`launch_failure_status`."""
        t = positive_int("tile", tile)
        if self.thrashes:
            return TileStatus("danger", _thrash_text(self, t),
                              "The tile no longer fits its cache: the cache thrashes.")
        miss = self.tile_misses
        fits = (f"✓ The tile ({_fmt_bytes(self.tile_bytes)}) lives in **{self.home}**"
                + (f"; {miss.level.name} serves its misses, "
                   f"{_units.format_bytes(miss.bytes)}" if miss is not None else "")
                + f". Main memory serves {_units.format_bytes(self.uses[-1].bytes)}; ")
        rate = _units.format_value(self.attainable_tflops)
        if self.determined:
            return TileStatus("success", fits + f"the {self.binding} roof binds at {rate} "
                              "TFLOP/s." + _library_note(self.hierarchy))
        return TileStatus(
            "warn", fits + "**what binds is undetermined**: "
            + "; ".join(r.describe() for r in self.undetermined_by)
            + f". The known roofs allow at most {rate} TFLOP/s (the {self.known_binding} "
            "roof); a missing figure is unknown, not unlimited. Pick a machine whose every "
            "level has a figure (a registry GPU or the reference machine), or measure yours "
            "again in Part 1 with a longer budget, to see which roof binds.")


@dataclass(frozen=True)
class TileStatus:
    """What Lab 5 shows under its tile panel: ``kind`` is "danger" (the tile fails to launch
    or thrashes a cache; ``title`` heads it), "success" (a roof binds) or "warn" (what binds
    is undetermined); ``text`` is markdown."""

    kind: str
    text: str
    title: str = ""


def launch_failure_status(tile: int, error: LaunchError) -> TileStatus:
    """What Lab 5 says when its ``tile`` x ``tile`` GEMM fails to launch (``error`` says why:
    shared memory or registers), with the way back."""
    t = positive_int("tile", tile)
    error = instance("error", error, LaunchError, "a hierarchy.LaunchError")
    return TileStatus("danger", f"{error}\n\nShrink the tile to back out.",
                      f"The {t} × {t} tile does not fit on an SM (shared memory or registers): "
                      "the kernel fails to launch.")


def _thrash_text(point: HierarchyPoint, tile: int) -> str:
    """The thrashing tile: its working set, the caches it overflows and the roof it falls to."""
    over = ", ".join(point.thrashes)
    room = ", ".join(f"{u.level.name} {_fmt_bytes(u.level.tile_capacity_bytes)}"
                     for u in point.uses if u.level.name in point.thrashes)
    rate = _units.format_value(point.attainable_tflops)
    falls = (f"the {point.binding} roof at {rate} TFLOP/s" if point.determined else
             f"at most {rate} TFLOP/s (what binds is {point.verdict})")
    verb = "passes" if len(point.thrashes) == 1 else "pass"
    return (f"The {tile} × {tile} tile's working set ({_fmt_bytes(point.kernel.working_set)}) "
            f"does not fit in {over} (room for one tile: {room}). The cache thrashes: {over} "
            f"now {verb} on everything the register tiles ask for, and the kernel falls to "
            f"{falls}.\n\nShrink the tile to back out.")


def _library_note(hier: Hierarchy) -> str:
    """On a GPU whose library runs clustered tiles (Hopper), how that differs from Part 3's
    one CTA per tile; "" elsewhere."""
    lib = GEMM_SCHEDULES.get(hier.arch)
    if lib is None or lib.cluster == 1:
        return ""
    return (f" (One CTA per T × T tile, no clusters. cuBLAS on this GPU runs {lib.tile_m} × "
            f"{lib.tile_n} tiles in clusters of {lib.cluster} that share one operand through "
            "TMA multicast, reading it from L2 once per cluster: Part 2's tiled GEMM.)")


#: What a GPU's L1 keeps of a kernel that stages nothing (``KernelModel.l1_bytes``).
BLOCK_REUSE = "block's shared loads (L1 cache)"


def _fit_bytes(kernel: KernelModel, lv: Level) -> float:
    """Bytes the kernel's tile needs in ``lv``: its staged slabs in a scratchpad, else its
    cache working set."""
    return kernel.staged_bytes if lv.scratchpad and kernel.staged else kernel.working_set


def launch_problem(kernel: KernelModel, hier: Hierarchy) -> str | None:
    """Why ``kernel`` cannot launch on ``hier``, in words; None when it can. Two limits:

    * its staged slabs (``staged_bytes``) exceed a scratchpad's per-block limit (A100: 163
      KiB, with the > 48 KB opt-in, ``SMEM_NO_OPT_IN_BYTES``);
    * its fp32 accumulators (``accumulator_bytes``, T^2 x 4 B) take the whole register file of
      an SM or more (A100/H100: 64K 32-bit registers = 256 KiB; a thread at most 255): no room
      for addresses and operand fragments. 256 x 256 is ruled out so (65,536 accumulators =
      256 KiB); 256 x 128 (128 KiB) is what CUTLASS runs."""
    kernel = instance("kernel", kernel, KernelModel, "a hierarchy.KernelModel")
    hier = instance("hier", hier, Hierarchy, "a hierarchy.Hierarchy")
    if not kernel.staged:
        return None
    for lv in hier.levels:
        if lv.scratchpad and kernel.staged_bytes > lv.tile_capacity_bytes:
            return (f"The tile stages {_fmt_bytes(kernel.staged_bytes)} of shared memory per "
                    f"block; the {hier.name} allows at most "
                    f"{_fmt_bytes(lv.tile_capacity_bytes)} (and only "
                    f"{_fmt_bytes(SMEM_NO_OPT_IN_BYTES)} without the kernel's opt-in). Shared "
                    "memory is a scratchpad the kernel manages itself, not a cache: the kernel "
                    "fails to launch. It does not spill (registers do) or thrash (caches do).")
    rf = hier.register_file_bytes
    if rf is not None and kernel.accumulator_bytes >= rf:
        return (f"The tile's fp32 accumulators take {_fmt_bytes(kernel.accumulator_bytes)} of "
                f"registers per block; an SM of the {hier.name} has {_fmt_bytes(rf)} of "
                "registers in all (a thread at most 255), so nothing is left for addresses "
                "and operands: the launch fails (too many resources requested), or, capped "
                "at 255 registers a thread, the accumulators spill to local memory and the "
                "tile's reuse is lost.")
    return None


def place(kernel: KernelModel, hier: Hierarchy) -> HierarchyPoint:
    """Bytes every level serves for ``kernel`` (module doc's model) and its per-level AI.
    LaunchError (a ValueError) when the kernel's staged tile does not fit a scratchpad."""
    kernel = instance("kernel", kernel, KernelModel, "a hierarchy.KernelModel")
    hier = instance("hier", hier, Hierarchy, "a hierarchy.Hierarchy")
    problem = launch_problem(kernel, hier)
    if problem:
        raise LaunchError(problem)
    uses, served = [], kernel.core_bytes
    for i, lv in enumerate(hier.levels):
        last = i == len(hier.levels) - 1
        wave = None
        if kernel.gemm is not None and lv.sharers > 1 and not last:
            m, n, k, t, b, tn, _cluster = kernel.gemm
            if wave_footprint_bytes(m, n, t, lv.sharers, b, tile_n=tn) <= lv.capacity_bytes:
                wave = wave_gemm_bytes(m, n, k, t, lv.sharers, b, tile_n=tn)
        if kernel.footprint <= lv.capacity_bytes and not last:
            holds, miss = "problem", kernel.compulsory_bytes
        elif wave is not None:
            holds, miss = "wave", min(wave, kernel.reuse_bytes)
        elif kernel.flash is not None and lv.sharers > 1 and not last:
            fb, fh, fs, fd, fbq, fp = kernel.flash
            holds = ("K, V of the heads in flight" if _flash.flash_kv_hbm_passes(
                fs, fs, fd, fbq, fp, sharers=lv.sharers,
                cache_bytes=lv.capacity_bytes) == 1 else "wave")
            miss = min(kernel.reuse_bytes, _flash.flash_shared_cache_misses(
                fb, fh, fs, fs, fd, fbq, fp, sharers=lv.sharers, cache_bytes=lv.capacity_bytes))
        elif lv.scratchpad and not kernel.staged and kernel.l1_bytes is not None and not last:
            holds, miss = BLOCK_REUSE, kernel.l1_bytes  # the GPU's L1 (module doc)
        elif _fit_bytes(kernel, lv) <= lv.tile_capacity_bytes and not last:
            # an unstaged kernel's reuse in a GPU's L1 / shared memory is cached, not staged
            holds = "reuse (L1 cache)" if lv.scratchpad and not kernel.staged else "tile"
            miss = kernel.reuse_bytes
        else:
            holds, miss = "nothing", kernel.stream_bytes
        uses.append(LevelUse(lv, served, holds, kernel.flops))
        served = min(miss, served)
    return HierarchyPoint(kernel, hier, tuple(uses))


def level_roof_tflops(ai, level: Level, peak_tflops: float):
    """A level's roof: min(peak, AI x bandwidth) in TFLOP/s (``ai`` may be an array);
    ValueError for a level without a bandwidth."""
    import numpy as np

    level = instance("level", level, Level, "a hierarchy.Level")
    if level.bandwidth_gbs is None:
        raise ValueError(f"level {level.name!r} has no bandwidth figure, so it has no roof")
    return np.minimum(positive("peak_tflops", peak_tflops), roofline._ai(ai) * level.bandwidth_gbs / 1e3)


def largest_fitting_tile(level: Level, precision: str, *, max_tile: int = 1 << 16) -> int:
    """Largest power-of-two GEMM tile T whose cache working set 3 T^2 b fits ``level``'s tile
    capacity (0 if not even T = 1 fits). A cache's model: whether a GPU's tiled GEMM launches
    is :func:`launch_problem`'s (staged K-slabs in shared memory, accumulators in registers)."""
    level = instance("level", level, Level, "a hierarchy.Level")
    b = _precision.bytes_per_element(precision, arg="precision")
    max_tile = positive_int("max_tile", max_tile)
    t = 0
    while (2 * t if t else 1) <= max_tile and 3 * (2 * t if t else 1) ** 2 * b \
            <= level.tile_capacity_bytes:
        t = 2 * t if t else 1
    return t


def tile_sweep(n, precision: str, tiles: Sequence[int], hier: Hierarchy, *,
               register_tile: int = 1) -> list[HierarchyPoint]:
    """An N x N x N GEMM placed on ``hier`` for every cache tile T in ``tiles`` (register tile
    min(r, T)): how the bytes each level serves, and the binding level, move with T.
    LaunchError for a tile that does not fit a scratchpad (see :func:`launchable_tiles`)."""
    n, r = positive_int("n", n), positive_int("register_tile", register_tile)
    hier = instance("hier", hier, Hierarchy, "a hierarchy.Hierarchy")
    tiles = [positive_int("tiles", t) for t in sequence("tiles", tiles)]
    return [place(gemm_kernel(n, n, n, precision, tile=t, register_tile=min(r, t)), hier)
            for t in tiles]


def launchable_tiles(n, precision: str, tiles: Sequence[int], hier: Hierarchy, *,
                     register_tile: int = 1) -> tuple[list[int], list[int]]:
    """(tiles that launch, tiles that fail to launch) of an N x N x N GEMM on ``hier``."""
    n, r = positive_int("n", n), positive_int("register_tile", register_tile)
    hier = instance("hier", hier, Hierarchy, "a hierarchy.Hierarchy")
    ok, failed = [], []
    for t in (positive_int("tiles", t) for t in sequence("tiles", tiles)):
        kernel = gemm_kernel(n, n, n, precision, tile=t, register_tile=min(r, t))
        (failed if launch_problem(kernel, hier) else ok).append(t)
    return ok, failed


def tile_traffic_ratio(n, precision: str, tile_from: int, tile_to: int, hier: Hierarchy, *,
                       register_tile: int = 1) -> float:
    """By what factor the traffic the tile level passes on falls when an N x N x N GEMM's
    cache tile grows from ``tile_from`` to ``tile_to`` (Lab 5, Prediction 3's reference).

    The traffic is the bytes served by the level right below the ``tile_from`` tile's home
    (``HierarchyPoint.tile_misses``): what the tile level does not keep. On a GPU the tile
    lives in shared memory and L2 serves its misses, ``roofline.tiled_gemm_bytes``:

        Q(T) = b (M K ceil(N/T) + K N ceil(M/T) + M N)  ->  Q(T1) / Q(T2)
             = (2 ceil(N/T1) + 1) / (2 ceil(N/T2) + 1)  for M = N = K.

    Derivation for the graded case (A100, N = 8192, bf16, r = 64, T 64 -> 128): ceil(8192/64)
    = 128 and ceil(8192/128) = 64, so (2 x 128 + 1) / (2 x 64 + 1) = 257 / 129 = 1.992: the
    edge doubles, the traffic halves (not 4x: the area grows 4x, the reuse only 2x). HBM
    traffic falls by less (1.8x there): L2 serves a whole wave of tiles (module doc)."""
    tile_from, tile_to = positive_int("tile_from", tile_from), positive_int("tile_to", tile_to)
    a, b = tile_sweep(n, precision, [tile_from, tile_to], hier, register_tile=register_tile)
    i = hier.names.index(a.home) + 1
    if i >= len(hier.levels):
        raise ValueError(f"the {tile_from} x {tile_from} tile fits no level of {hier.name}, "
                         "so no level keeps it")
    return a.uses[i].bytes / b.uses[i].bytes
