"""Where Lab 5's kernels land on a machine: the bytes every level serves, the AI and roof per
level, what binds (a level without a bandwidth figure is unknown, never unlimited), whether a
tile launches at all, and what the lab says of a tile (the traffic model is the package doc's,
:mod:`labs.core.physics.hierarchy`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from labs.core.physics import flash as _flash
from labs.core.physics import roofline
from labs.core.physics import units as _units
from labs.core.physics.validate import (
    instance,
    positive,
    positive_int,
    sequence,
)
from labs.core.physics.hierarchy._kernels import (
    KernelModel,
    gemm_kernel,
    wave_footprint_bytes,
    wave_gemm_bytes,
)
from labs.core.physics.hierarchy._levels import GEMM_SCHEDULES, VECTOR, Hierarchy, Level

__all__ = [
    "BLOCK_REUSE", "COMPUTE", "FLOOR_RULE", "HierarchyPoint", "LaunchError", "LevelUse",
    "SMEM_NO_OPT_IN_BYTES", "TileStatus", "UNDETERMINED", "UnknownRoof", "launch_failure_status",
    "launch_problem", "launchable_tiles", "level_roof_tflops", "place", "tile_sweep",
    "tile_traffic_ratio",
]


def _fmt_bytes(x: float) -> str:
    return _units.format_bytes(x, binary=True)


#: Shared memory a block gets without the per-kernel opt-in: above 48 KB a kernel must use
#: dynamic shared memory and call cudaFuncSetAttribute(..,
#: cudaFuncAttributeMaxDynamicSharedMemorySize, ..) (CUDA C++ Programming Guide, compute
#: capability 7.x-9.x, "Shared Memory"); without it the launch fails at 48 KB.
SMEM_NO_OPT_IN_BYTES = 48 * 1024


class LaunchError(ValueError):
    """A kernel that cannot run: its tile asks a scratchpad (shared memory) for more than the
    per-block limit, or its fp32 accumulators fill the register file, so the launch fails (a
    scratchpad does not spill (registers do) or thrash (caches do))."""


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
        tflops = _units.format_value(self.target_tflops,
                                     ",.1f" if self.target_tflops >= 100 else None)
        if not self.could_bind:
            return (f"{self.level.name} has no published or measured bandwidth, but the "
                    f"{tflops} TFLOP/s bound needs only "
                    f"{_units.format_bandwidth(self.needs_gbs)} of it, no more than the "
                    f"{_units.format_bandwidth(self.floor_gbs)} of {self.floor_level} that "
                    "crosses it: it cannot bind")
        floor = ("" if self.floor_gbs is None else
                 f" (all that is known: it carries {self.floor_level}'s "
                 f"{_units.format_bandwidth(self.floor_gbs)})")
        return (f"{self.level.name} has no published or measured bandwidth; to reach "
                f"{tflops} TFLOP/s it needs ≥ "
                f"{_units.format_bandwidth(self.needs_gbs)}{floor}")


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
    """Bytes every level serves for ``kernel`` (package doc's model) and its per-level AI.
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
            holds, miss = BLOCK_REUSE, kernel.l1_bytes  # the GPU's L1 (package doc)
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
    return np.minimum(positive("peak_tflops", peak_tflops), roofline.check_ai(ai) * level.bandwidth_gbs / 1e3)


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
    traffic falls by less (1.8x there): L2 serves a whole wave of tiles (package doc)."""
    tile_from, tile_to = positive_int("tile_from", tile_from), positive_int("tile_to", tile_to)
    a, b = tile_sweep(n, precision, [tile_from, tile_to], hier, register_tile=register_tile)
    i = hier.names.index(a.home) + 1
    if i >= len(hier.levels):
        raise ValueError(f"the {tile_from} x {tile_from} tile fits no level of {hier.name}, "
                         "so no level keeps it")
    return a.uses[i].bytes / b.uses[i].bytes
