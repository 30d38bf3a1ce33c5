"""Lab 5 "The Memory Hierarchy": the sentences, cards and tables its cells show, written as
functions of the values they state.

The lab computes (``hierarchy``, ``staircase``, ``quantization``, ``reference_machine``) and
gates; these builders only say what the numbers are. Each reference explanation is the text
under a prediction's reference answer; the rest are the instruments' cards, tables and notes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import marimo as mo

from labs.core.physics import (hardware, hierarchy, reference_machine,
                                staircase, units)
from labs.core.ui import style

# Numbers are written by labs.core.physics.units, as the cards write them (LABS_SPEC §6). Kept
# inline: percentages (busy fractions, spreads, share of peak) and × factors with fixed
# decimals that the text compares (plateau ratios, "1.98× less (not 4×)").

__all__ = [
    "binding_explanation", "cache_cards", "kernel_rows", "level_cards", "library_gemm_note",
    "missing_cache_sizes", "other_machine_binding", "plateau_rows", "sawtooth_caption",
    "shrink_explanation", "staircase_curves", "staircase_explanation",
    "staircase_grading", "sweep_summary", "tile_explanation", "tile_problem",
    "tile_status_callout", "unmeasured_heading", "wave_explanation",
]


def _binary(n_bytes: float) -> str:
    return units.format_bytes(n_bytes, binary=True)


# --- Part 1: the staircase ------------------------------------------------------------------

def staircase_explanation(upper: staircase.Plateau, lower: staircase.Plateau,
                          ratio: float) -> str:
    """Prediction 1's reference answer in words: the reference machine's L2 and DRAM plateaus
    (``upper``, ``lower``), their ``ratio``, and whose staircase grades a student."""
    return (f"On the course's reference machine ({reference_machine.MACHINE}, recorded "
            f"{reference_machine.DATE}, one thread) the L2 plateau reads "
            f"{units.format_value(upper.bandwidth_gbs)} GB/s and the DRAM plateau "
            f"{units.format_value(lower.bandwidth_gbs)} GB/s: {ratio:.1f}×. A cache sits next to "
            f"the "
            "core and answers in a few cycles; DRAM is off chip and shared. Every "
            "student's machine differs: a student is graded against their own "
            "measurement (the result their lab records from their staircase) where its "
            "other plateaus sit far enough from L2's for the band to tell them apart, "
            "or against this reference machine where they do not or theirs cannot be "
            "measured.")


def cache_cards(levels: Sequence) -> list[tuple[str, str, str]]:
    """One card per cache level the OS reports (name, size, scope · source)."""
    return [(c.name, _binary(c.size_bytes), f"{c.scope} · {c.source}") for c in levels]


def staircase_curves(sweep=None) -> tuple[list[tuple], list[tuple[str, float]]]:
    """The staircase figure's curves and cache marks: the reference machine's recorded run and
    its cache sizes; with ``sweep`` (a measured working-set sweep), this machine's run first
    and its cache sizes instead, named by who reported them (your OS, or a GPU's driver and
    the registry)."""
    ref = reference_machine.SWEEP
    series = [(f"reference machine ({reference_machine.MACHINE}, recorded "
               f"{reference_machine.DATE})", [p[0] for p in ref], [p[1] for p in ref],
               "recorded")]
    if sweep is None:
        return series, [(f"{k} (reference)", v) for k, v in reference_machine.CACHES.items()]
    who = {"cpu": "your OS"}.get(sweep.kind)  # a GPU's come from the driver and registry
    mine = (f"this machine ({sweep.device})", [p.bytes for p in sweep.measured],
            [p.gbs for p in sweep.measured], "measured")
    return [mine, *series], [(f"{c.name} ({who or c.source.split(':')[0].split(' (')[0]})",
                              c.size_bytes) for c in sweep.caches.levels]


def sweep_summary(measured: int, sizes: int, skipped: int, seconds: float, device: str,
                  load_average) -> str:
    """What a staircase measurement did: sizes measured of ``sizes``, how long, on what, under
    what load, and how many sizes were skipped for time."""
    return (f"Measured {measured} of {sizes} sizes in {units.format_seconds(seconds)} on "
            f"**{device}** (load average {load_average or 'unknown'}: other programs slow a "
            "shared machine down)." + (f" Skipped for time: {skipped}." if skipped else ""))


def plateau_rows(plateaus: Sequence[staircase.Plateau]) -> list[dict]:
    """The table of plateaus found in a staircase: level, working sets, bandwidth, spread."""
    return [{"level": p.name,
             "working sets": f"{_binary(p.lo_bytes)} – {_binary(p.hi_bytes)}",
             "bandwidth (GB/s)": units.format_value(p.bandwidth_gbs),
             "spread of its sizes": f"{p.spread:.0%}", "sizes": p.points} for p in plateaus]


def staircase_grading(separation: staircase.RatioSeparation, memory: str,
                      tolerance: float) -> str:
    """The heading of Prediction 1's measured comparison: graded against this machine's ratio
    where its L2 plateau stands clear of its neighbours; else why the reference machine
    grades it (the ratio, the neighbour, and the band that cannot tell them apart)."""
    if separation.separates:
        return (f"**Prediction vs reality** · your machine's L2 plateau over its {memory} "
                "plateau (graded):")
    near = ("one memory roof (a ratio of 1)" if separation.nearest == staircase.ONE_ROOF
            else f"its {separation.nearest} plateau ({separation.nearest_ratio:.1f}× "
                 f"{memory}'s)")
    return (f"**Prediction vs the reference machine** (graded). Your machine's L2 plateau is "
            f"{separation.ratio:.1f}× its {memory} plateau, but {near} sits only "
            f"{separation.factor:.2f}× from that: a {units.format_value(tolerance)}× band cannot "
            f"tell L2 from its "
            "neighbour on this machine, so your prediction is graded against the reference "
            "machine's ratio:")


def unmeasured_heading(graded: bool, measurement: str) -> str:
    """The line above a measured prediction's comparison with the reference machine while this
    machine's own reading is missing: graded (this machine cannot be measured) or not yet,
    asking for a press (``measurement`` names what grades it: "staircase", "measurement")."""
    if graded:
        return ("**Prediction vs the reference machine** (graded: this machine cannot be "
                "measured here):")
    return ("**Prediction vs the reference machine** (not graded yet: your grade uses your "
            f"own {measurement}, so press the button above):")


# --- Part 2: one roof per level -------------------------------------------------------------

def binding_explanation(point: hierarchy.HierarchyPoint) -> str:
    """Prediction 2's reference answer in words: the naive GEMM's bytes, AI and roof at L1,
    L2 and HBM on a GPU, what binds, and why its ceiling is the vector rate."""
    h = point.hierarchy
    l1, l2, hbm = point.use(hierarchy.L1_SMEM), point.use("L2"), point.use("HBM")
    return (f"Without tiles every multiply-add loads both operands: the SMs' loads, "
            f"{units.format_bytes(l1.bytes)} for {units.format_flops(point.kernel.flops)}, "
            f"go through L1 at an AI of {units.format_value(l1.ai)} FLOP/B, so its roof is at most "
            f"{units.format_value(l1.roof_tflops())} TFLOP/s (an upper bound: L1's bandwidth is "
            f"the SMs' "
            "128 B per clock at the boost clock, a peak that a kernel's loads do not "
            "reach). L1 keeps what a block's warps share (a warp's A load is one broadcast; "
            "the row of B it loads is re-read by the block's other 31 warps): L2 serves only "
            f"{units.format_bytes(l2.bytes)} (AI {units.format_value(l2.ai)}, roof "
            f"{units.format_value(l2.roof_tflops())} TFLOP/s at its measured "
            f"{units.format_bandwidth(l2.level.bandwidth_gbs)}), HBM the compulsory "
            f"{units.format_bytes(hbm.bytes)} (AI {units.format_value(hbm.ai)}, roof "
            f"{units.format_value(hbm.roof_tflops())} TFLOP/s). The lowest roof binds: "
            f"{point.binding}, at most {units.format_value(point.attainable_tflops)} TFLOP/s, "
            f"{point.attainable_tflops / h.peak_tflops:.0%} of the tensor-core peak: a "
            "profiler (Nsight Compute) reports such a kernel L1/load-store-bound. A "
            "scalar GEMM cannot use tensor cores, so its ceiling is the "
            f"{point.ceiling_name} ({units.format_value(point.ceiling_tflops, significant=4)} "
            f"TFLOP/s), not the "
            f"{units.format_value(h.peak_tflops, significant=4)} TFLOP/s tensor-core peak; L1's "
            f"roof is lower still.")


def missing_cache_sizes(device: hardware.Device, *, limit: int = 3) -> str:
    """Why a registry device's hierarchy cannot be drawn (which figures it lacks), and the way
    out: up to ``limit`` registry GPUs whose hierarchy can be, the reference machine, or a
    measurement."""
    drawable = []
    for key in hardware.keys():
        try:
            hierarchy.gpu_hierarchy(key, "bf16")
        except (KeyError, ValueError):
            continue
        drawable.append(hardware.get(key).name)
    missing = ("its L2 size and its on-chip figures (shared memory or LDS per SM or CU, "
               "register file)" if device.l2_bytes is None else
               "its on-chip figures (shared memory or LDS per SM or CU, register file; its L2 "
               "size is known)")
    return (f"The registry has no cache sizes for the {device.name}: it lacks {missing}, so "
            "its hierarchy cannot be drawn.\n\nPick a machine whose cache sizes it has "
            f"({', '.join(drawable[:limit])}, or the reference machine), or measure this one "
            "in Part 1.")


def _roof_text(use: hierarchy.LevelUse, point: hierarchy.HierarchyPoint) -> str:
    """A level's roof, or for a level without a bandwidth what it would need."""
    if use.roof_tflops() is not None:
        # a derived per-clock peak (L1 / shared memory) is an upper bound
        most = "at most " if use.level.bandwidth_basis == "derived" else ""
        return f"roof {most}{units.format_value(use.roof_tflops())} TFLOP/s"
    unknown = next((r for r in point.unknown_roofs if r.level.name == use.level.name), None)
    if unknown is None:
        return "no bandwidth figure"
    return (f"no bandwidth figure: needs ≥ {units.format_value(unknown.needs_gbs / 1e3)} "
            f"TB/s for {units.format_value(unknown.target_tflops)} TFLOP/s"
            + ("" if unknown.could_bind else f" (it carries {unknown.floor_level}'s "
               f"{units.format_value(unknown.floor_gbs / 1e3)} TB/s: cannot bind)"))


def level_cards(point: hierarchy.HierarchyPoint) -> list[style.Metric]:
    """One card per level (AI, bytes, roof, what it holds; the binding level red, a level that
    could bind without a figure amber), and a last card saying what binds or why that is
    undetermined."""
    undetermined = {r.level.name for r in point.undetermined_by}
    cards = [style.Metric(
        u.level.name, f"AI {units.format_value(u.ai)} FLOP/B" if u.ai else "serves nothing",
        f"{units.format_bytes(u.bytes)} · {_roof_text(u, point)} · holds: {u.holds}",
        "danger" if u.level.name == point.binding else "warn" if u.level.name in undetermined
        else None) for u in point.uses]
    rate = units.format_value(point.attainable_tflops)
    if point.determined:
        cards.append(style.Metric(
            "Binds", point.binding,
            "attainable " + ("at most " if point.binds_at_derived_peak else "")
            + f"{rate} TFLOP/s under the {point.ceiling_name} of "
            f"{units.format_value(point.ceiling_tflops)}", "danger"))
    else:
        cards.append(style.Metric(
            "Binds", "? undetermined",
            "; ".join(r.describe() for r in point.undetermined_by)
            + f". The known roofs allow at most {rate} TFLOP/s (the {point.known_binding} "
            "roof); the level without a figure can only lower that.", "warn"))
    return cards


def kernel_rows(points: Mapping[str, hierarchy.HierarchyPoint | Exception]) -> list[dict]:
    """The table of every kernel at one size: what binds, the attainable rate (≤ where it is
    an upper bound) and the AI at each level; a kernel that cannot be placed says why."""
    rows = []
    for name, p in points.items():
        if isinstance(p, Exception):
            rows.append({"kernel": name, "binds": "—", "note": style.error_message(p)})
            continue
        rate = units.format_value(p.attainable_tflops)
        rows.append({"kernel": name,
                     "binds": p.binding if p.determined else
                     "? undetermined (" + ", ".join(r.level.name for r in p.undetermined_by)
                     + " has no bandwidth figure)",
                     "attainable (TFLOP/s)": f"≤ {rate}"
                     if p.binds_at_derived_peak or not p.determined else rate,
                     **{f"AI at {u.level.name}": units.format_value(u.ai) if u.ai else "—"
                        for u in p.uses}})
    return rows


def other_machine_binding(point: hierarchy.HierarchyPoint, label: str) -> str:
    """Prediction 2's kernel on the machine the student picked (not graded): what binds it,
    said as ``label`` (an option's words, or the verdict), and at what rate."""
    name, rate = point.hierarchy.name, units.format_value(point.attainable_tflops)
    if point.determined:
        return (f"On **{name}** (your pick, not graded) the same kernel binds at: {label} "
                f"({'at most ' if point.binds_at_derived_peak else ''}{rate} TFLOP/s).")
    return (f"On **{name}** (your pick, not graded) what binds the same kernel is {label} "
            f"(at most {rate} TFLOP/s).")


# --- Part 3: tiling -------------------------------------------------------------------------

def tile_explanation(small: hierarchy.HierarchyPoint, large: hierarchy.HierarchyPoint,
                     bigger: hierarchy.KernelModel, ratio: float, *, tiles: Sequence[int]
                     ) -> str:
    """Prediction 3's reference answer in words: the traffic L2 and HBM serve at the two cache
    tiles ``tiles`` (``small``, ``large``), their ``ratio``, the roofs, and why the next tile
    up (``bigger``, twice the larger edge) cannot launch."""
    h = small.hierarchy
    t_from, t_to, t_next = tiles[0], tiles[1], 2 * tiles[1]
    smem, l2 = h.level(hierarchy.L1_SMEM), h.level("L2")
    return (f"Each of A and B is re-read once per tile column or row, so the traffic "
            f"the tile passes on to L2 ∝ 1/T. At T = {t_from}: "
            f"{units.format_bytes(small.use('L2').bytes)}; at T = {t_to}: "
            f"{units.format_bytes(large.use('L2').bytes)}, {ratio:.2f}× less (not 4×: "
            f"the tile's area grows 4×, its edge 2×). HBM traffic is smaller still "
            f"({units.format_bytes(small.use('HBM').bytes)} → "
            f"{units.format_bytes(large.use('HBM').bytes)}): L2 is shared by all "
            f"{l2.sharers} SMs, and the tiles running at once (a wave) share the A "
            f"and B panels they read there. The kernel moves from the "
            f"{small.binding} roof ({units.format_value(small.attainable_tflops)} TFLOP/s) to the "
            f"{large.binding} roof ({units.format_value(large.attainable_tflops)} TFLOP/s; L2's "
            f"roof uses its "
            f"measured {units.format_bandwidth(l2.bandwidth_gbs)}: NVIDIA's bytes per clock "
            "give a peak a third higher that microbenchmarks do not reach). The kernel "
            "stages thin K-slabs in shared memory, "
            f"{hierarchy.GEMM_STAGES} stages × (T + T) × {hierarchy.GEMM_BK} × 2 B "
            f"(CUTLASS's defaults): {_binary(large.kernel.staged_bytes)} at "
            f"{t_to} × {t_to}, within the {_binary(smem.tile_capacity_bytes)} a block may "
            "use (above 48 KB only with the kernel's opt-in, "
            "cudaFuncAttributeMaxDynamicSharedMemorySize); C stays in registers as "
            f"fp32 accumulators, {_binary(large.kernel.accumulator_bytes)} per block. At "
            f"{t_next} × {t_next} the slabs would still fit ({_binary(bigger.staged_bytes)}), "
            f"but the {units.format_value(t_next * t_next)} accumulators "
            f"({_binary(bigger.accumulator_bytes)}) "
            f"fill the SM's whole register file ({_binary(h.register_file_bytes)}): that tile "
            "cannot launch (CUTLASS's largest is 256 × 128). Shared memory is a "
            "scratchpad, not a cache: a tile too big for it fails to launch rather "
            "than spill.")


def tile_status_callout(tile: int, point: hierarchy.HierarchyPoint | None,
                        error: Exception | None):
    """What the tile panel says of the ``tile`` x ``tile`` GEMM (core's words): a bad
    combination's ``error``, a tile that fails to launch, one that thrashes a cache, or the
    roof that binds ``point``."""
    if error is not None and not isinstance(error, hierarchy.LaunchError):
        return style.error_callout(error)
    said = (hierarchy.launch_failure_status(tile, error) if error is not None
            else point.tile_status(tile))
    if said.kind == "danger":
        return style.error_callout(said.text, title=said.title)
    return mo.callout(mo.md(said.text), kind=said.kind)


def tile_problem(n: int, tile: int, r: int, size: str = "N") -> str | None:
    """Why a tiled GEMM of side ``n`` cannot use cache tile ``tile`` and register tile ``r``
    (core's check, :func:`hierarchy.gemm_tile_problems`), with the way out in the sliders'
    words (None when it can)."""
    problems = hierarchy.gemm_tile_problems(n, n, tile, r)
    if hierarchy.REGISTER_TILE_LARGER_THAN_TILE in problems:
        return (f"The register tile r ({r}) is larger than the cache tile T ({tile}): a "
                f"cache tile holds whole register tiles. Raise T to {r} or more, or pick "
                "a smaller register tile r.")
    if hierarchy.TILE_LARGER_THAN_MATRIX in problems:
        return (f"The cache tile T ({tile}) is larger than the matrix ({size} = {n}): "
                f"move T down to {n} or less, or raise {size}.")
    return None


def library_gemm_note(library: hierarchy.HierarchyPoint,
                      unshared: hierarchy.HierarchyPoint | None = None) -> str:
    """What the GEMM library runs on a machine: its tile, what the level below the tile serves
    and what binds; with ``unshared`` (the same tiles without the cluster's multicast), what
    the cluster's shared B tile saves."""
    kernel, miss = library.kernel, library.tile_misses
    verdict = (f"the {library.binding} roof binds at "
               f"{units.format_value(library.attainable_tflops)} TFLOP/s" if library.determined
               else f"what binds is undetermined ({library.verdict})")
    text = (f"**What the library runs here** · {kernel.name}: {kernel.what}. "
            + (f"{miss.level.name} serves {units.format_bytes(miss.bytes)} (AI "
               f"{units.format_value(miss.ai)} FLOP/B); " if miss is not None and miss.ai
               else "") + verdict + ".")
    if unshared is not None:
        text += (f" The cluster's {kernel.gemm[6]} CTAs share their B tile, which TMA "
                 "multicasts: L2 serves it once per cluster. Without that, the same tiles "
                 f"would be {unshared.binding}-bound at "
                 f"{units.format_value(unshared.attainable_tflops)} TFLOP/s.")
    return text


# --- Part 4: a fixed cost per call, tiles and waves -----------------------------------------

def shrink_explanation(big_bytes: int, small_bytes: int, big_s: float, small_s: float) -> str:
    """Prediction 4's reference answer in words: the reference machine's time per call at the
    two sizes, their ratio against the ratio of bytes, and the fixed cost that sets it."""
    return (f"On the reference machine ({reference_machine.MACHINE}, recorded) a call "
            f"reading {_binary(big_bytes)} took {units.format_seconds(big_s)} and one reading "
            f"{_binary(small_bytes)} {units.format_seconds(small_s)}: {big_s / small_s:.1f}×, not "
            f"{units.format_value(big_bytes // small_bytes)}×. Every call pays a fixed "
            f"~{units.format_seconds(reference_machine.CALL_OVERHEAD_S)} (Python, torch's "
            "dispatch) before a byte moves; below a few tens of KiB that cost is "
            "the whole time. A student is graded against their own machine's "
            "measurement (the result their lab records), or this one where theirs "
            "cannot be measured.")


def wave_explanation(sizes: Sequence[int], before, after, sms: int, fraction: float) -> str:
    """Prediction 5's reference answer in words: tiles, waves and busy fraction at the two
    sizes (``before``, ``after``: ``quantization.quantization`` results) on ``sms`` SMs."""
    n_from, n_to = sizes
    return (f"N = {units.format_value(n_from)}: {before.tiles} tiles in {before.waves} wave on "
            f"{sms} "
            f"SMs ({before.wave_efficiency:.0%} busy). N = {units.format_value(n_to)}: "
            f"{after.tiles} "
            f"tiles need {after.waves} waves, the second with {after.tiles - sms} tiles on "
            f"{sms} SMs: {after.wave_efficiency:.0%} busy over the run. Throughput "
            f"follows the busy fraction: {units.format_value(fraction)} of N = "
            f"{units.format_value(n_from)}'s, for "
            "an AI that went up. Libraries avoid much of this with other tile shapes "
            "and stream-K or split-K schedules, and a GEMM this small is dominated by "
            "launch and ramp-up: a measured dip is shallower.")


def sawtooth_caption(run, per_tile: bool) -> str:
    """The line under the sawtooth figure: what was assumed (``run``'s tile note, or the
    reference machine's recorded run's without one), and with ``per_tile`` (each N against
    the tile multiple at or below it) why that comparison."""
    note = (run.tile_note if run is not None else
            f"assumed micro-kernel width {reference_machine.SAWTOOTH_TILE}; one thread")
    note = note[:1].upper() + note[1:]
    if not per_tile:
        return f"*{note}.*"
    return (f"*{note}. Each N is compared with the largest multiple of the tile at or below "
            "it, measured and modelled alike (that takes out the slow rise of small GEMMs, a "
            "fixed cost per call).*")
