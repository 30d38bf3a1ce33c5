"""The kernels of Lab 5's hierarchical roofline: the bytes each memory level serves them
(SIMPLIFIED: the traffic model and its stated assumptions are the package doc's,
:mod:`labs.core.physics.hierarchy`).

A tiled or naive GEMM (:func:`gemm_kernel`, and as a library tiles it,
:func:`library_gemm_kernel`), a stencil, a reduction and Lab 4's flash-attention tile, each a
:class:`KernelModel`; the shared-memory staging of a tiled GEMM; and the wave of tiles that
share a GPU's L2 (:func:`wave_shape`, :func:`wave_gemm_bytes`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from labs.core.physics import flash as _flash
from labs.core.physics import formulas
from labs.core.physics import precision as _precision
from labs.core.physics import roofline
from labs.core.physics import units as _units
from labs.core.physics.validate import (
    flag,
    instance,
    positive,
    positive_int,
    text,
)
from labs.core.physics.hierarchy._levels import (
    GEMM_SCHEDULES,
    MATRIX,
    VECTOR,
    Hierarchy,
    Level,
)

__all__ = [
    "DEFAULT_REGISTER_TILE", "GEMM_BK", "GEMM_STAGES", "KernelModel", "NAIVE_BLOCK",
    "REGISTER_TILE_LARGER_THAN_TILE", "SIZED_KERNELS", "TILE_LARGER_THAN_MATRIX", "WAVE_SLABS",
    "flash_kernel", "gemm_kernel", "gemm_tile_problems", "kernel_at_size",
    "largest_fitting_tile", "library_gemm_kernel", "reduction_kernel", "staged_gemm_bytes",
    "stencil_kernel", "tile_misses_bytes",
    "wave_footprint_bytes", "wave_gemm_bytes", "wave_shape",
]


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

#: Stated, editable register-tile defaults (the reuse of every element level 0 hands to the
#: core): a CPU BLAS micro-kernel of 6 x 16 fp32 reuses each loaded element about
#: 2 x 6 x 16 / (6 + 16) ~ 9 times (so 8); a GPU tensor-core GEMM's 64 x 64 warp tile (CUTLASS's
#: default warp shape under 128 x 128 blocks) 64 times.
DEFAULT_REGISTER_TILE = {"cpu": 8, "gpu": 64}


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


#: What :func:`gemm_tile_problems` names: a cache tile larger than the output matrix, and a
#: register tile larger than the cache tile that holds it.
TILE_LARGER_THAN_MATRIX = "cache tile larger than the matrix"
REGISTER_TILE_LARGER_THAN_TILE = "register tile larger than the cache tile"


def gemm_tile_problems(m, n, tile: int, register_tile: int = 1, *,
                       tile_n: int | None = None) -> tuple[str, ...]:
    """Why an M x N output cannot be tiled with ``tile`` (x ``tile_n``) cache tiles and
    ``register_tile`` register tiles: :data:`TILE_LARGER_THAN_MATRIX` where a cache tile
    exceeds both sides, :data:`REGISTER_TILE_LARGER_THAN_TILE` where the register tile exceeds
    the cache tile's shorter side (a cache tile holds whole register tiles); () when it can."""
    m, n = positive_int("m", m), positive_int("n", n)
    t, r = positive_int("tile", tile), positive_int("register_tile", register_tile)
    tn = t if tile_n is None else positive_int("tile_n", tile_n)
    return tuple(problem for problem, found in (
        (TILE_LARGER_THAN_MATRIX, max(t, tn) > max(m, n)),
        (REGISTER_TILE_LARGER_THAN_TILE, r > min(t, tn))) if found)


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
    ``tiled_gemm_bytes(.., NAIVE_BLOCK, ..)`` (``l1_bytes``, package doc).

    A tiled kernel (T > 1) runs on the tensor cores and stages K-slabs in shared memory,
    :func:`staged_gemm_bytes` (``staged_bytes``), with its C tile in registers as fp32
    accumulators, T_m T_n x 4 B (``accumulator_bytes``). ValueError when a tile is larger
    than the matrix or the register tile is larger than the cache tile."""
    m, n, k = positive_int("m", m), positive_int("n", n), positive_int("k", k)
    t, r = positive_int("tile", tile), positive_int("register_tile", register_tile)
    tn = t if tile_n is None else positive_int("tile_n", tile_n)
    c = positive_int("cluster", cluster)
    problems = gemm_tile_problems(m, n, t, r, tile_n=tn)
    if TILE_LARGER_THAN_MATRIX in problems:
        raise ValueError(f"tile={max(t, tn)} is larger than the matrix (M={m}, N={n})")
    if REGISTER_TILE_LARGER_THAN_TILE in problems:
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
                       f"{n:,} elements ({_units.format_bytes(size, binary=True)}), {precision}", VECTOR)


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


#: The kernels with no cache tile, or a fixed one, that one size N describes
#: (:func:`kernel_at_size`): Lab 5's Part 2 compares them.
SIZED_KERNELS = ("naive GEMM", "5-point stencil", "sum reduction (re-read)",
                 "flash-attention tile (Lab 4)")


def kernel_at_size(name: str, n, precision: str, *, batch=1, heads=32, head_dim=128,
                   block=128) -> KernelModel:
    """The kernel of :data:`SIZED_KERNELS` called ``name`` at size ``n``: a naive n x n x n
    GEMM (``gemm_kernel(tile=1)``), a 5-point stencil on an n x n grid, a sum re-reading n^2
    elements, or a flash-attention tile over sequence length n (``batch``, ``heads``,
    ``head_dim``) in ``block`` x ``block`` tiles, capped by n. KeyError for another name."""
    if text("name", name) not in SIZED_KERNELS:
        raise KeyError(f"unknown kernel name={name!r}: one of {', '.join(SIZED_KERNELS)}")
    n, block = positive_int("n", n), positive_int("block", block)
    batch, heads = positive_int("batch", batch), positive_int("heads", heads)
    head_dim = positive_int("head_dim", head_dim)
    if name == SIZED_KERNELS[0]:
        return gemm_kernel(n, n, n, precision, tile=1)
    if name == SIZED_KERNELS[1]:
        return stencil_kernel(n, precision)
    if name == SIZED_KERNELS[2]:
        return reduction_kernel(n * n, precision)
    tile = min(block, n)
    return flash_kernel(batch, heads, n, head_dim, tile, tile, precision)


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


def library_gemm_kernel(hier: Hierarchy, m, n, k, *, multicast: bool = True) -> KernelModel:
    """The GEMM as a library tiles it on ``hier`` (the hierarchy's precision): on a GPU its
    architecture's :data:`GEMM_SCHEDULES` entry (Hopper: 128 x 256 tiles in 2-CTA clusters
    with multicast; Ampere: 128 x 128); on a CPU (stated) the largest power-of-two square
    tile whose working set fits the first level, with ``DEFAULT_REGISTER_TILE`` register
    tiles, as a BLAS keeps its micro-panels in L1. Tiles are capped by the matrix.
    ``multicast=False``: the same tiles without clusters (each CTA reads its own B tile from
    L2), what the cluster's shared tile saves."""
    hier = instance("hier", hier, Hierarchy, "a hierarchy.Hierarchy")
    m, n, k = positive_int("m", m), positive_int("n", n), positive_int("k", k)
    multicast = flag("multicast", multicast)
    if hier.kind == "gpu":
        sch = GEMM_SCHEDULES[hier.arch or "ampere"]
        tm, tn, r = sch.tile_m, sch.tile_n, sch.register_tile
        cluster = sch.cluster if multicast else 1
    else:
        tm = tn = max(largest_fitting_tile(hier.levels[0], hier.precision), 1)
        cluster, r = 1, DEFAULT_REGISTER_TILE["cpu"]
    tm, tn = min(tm, max(m, n)), min(tn, max(m, n))
    return gemm_kernel(m, n, k, hier.precision, tile=tm, tile_n=tn, cluster=cluster,
                       register_tile=min(r, tm, tn))
