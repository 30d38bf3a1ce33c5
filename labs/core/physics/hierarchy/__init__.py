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

The traffic model is stated once, here; three modules hold it, each importable through this
one name (``from labs.core import hierarchy``):

* ``_levels``: the machines (:class:`Level`, :class:`Hierarchy`, :func:`gpu_hierarchy`, the
  GEMM schedules, measured machines);
* ``_kernels``: the kernels and the bytes each level serves them (:class:`KernelModel`,
  :func:`gemm_kernel`, the wave of tiles sharing L2);
* ``_placement``: a kernel placed on a machine (:func:`place`, :class:`HierarchyPoint`: the
  roofs, what binds, whether the tile launches, and what Lab 5 says of it).
"""

from __future__ import annotations

from labs.core.physics.hierarchy._kernels import (
    DEFAULT_REGISTER_TILE,
    GEMM_BK,
    GEMM_STAGES,
    NAIVE_BLOCK,
    REGISTER_TILE_LARGER_THAN_TILE,
    SIZED_KERNELS,
    TILE_LARGER_THAN_MATRIX,
    WAVE_SLABS,
    KernelModel,
    flash_kernel,
    gemm_kernel,
    gemm_tile_problems,
    kernel_at_size,
    largest_fitting_tile,
    library_gemm_kernel,
    reduction_kernel,
    staged_gemm_bytes,
    stencil_kernel,
    tile_misses_bytes,
    wave_footprint_bytes,
    wave_gemm_bytes,
    wave_shape,
)
from labs.core.physics.hierarchy._levels import (
    GEMM_SCHEDULES,
    GPU_ARCH,
    L1_SMEM,
    L2_MEASURED_GBS,
    MATRIX,
    UNREPORTED_MEMORY_BYTES,
    VECTOR,
    GemmSchedule,
    Hierarchy,
    Level,
    from_plateaus,
    gpu_hierarchy,
    gpu_keys,
    hierarchy,
    measured_hierarchy,
    measured_machine,
    with_bandwidths,
)
from labs.core.physics.hierarchy._placement import (
    BLOCK_REUSE,
    COMPUTE,
    FLOOR_RULE,
    SMEM_NO_OPT_IN_BYTES,
    UNDETERMINED,
    HierarchyPoint,
    LaunchError,
    LevelUse,
    TileStatus,
    UnknownRoof,
    launch_failure_status,
    launch_problem,
    launchable_tiles,
    level_roof_tflops,
    place,
    tile_sweep,
    tile_traffic_ratio,
)

__all__ = [
    "BLOCK_REUSE", "COMPUTE", "DEFAULT_REGISTER_TILE", "FLOOR_RULE", "GEMM_BK", "GEMM_SCHEDULES",
    "GEMM_STAGES", "GPU_ARCH", "GemmSchedule", "Hierarchy", "HierarchyPoint", "KernelModel",
    "L1_SMEM", "L2_MEASURED_GBS", "LaunchError", "Level", "LevelUse", "MATRIX", "NAIVE_BLOCK",
    "REGISTER_TILE_LARGER_THAN_TILE", "SIZED_KERNELS", "SMEM_NO_OPT_IN_BYTES",
    "TILE_LARGER_THAN_MATRIX", "TileStatus", "UNDETERMINED", "UNREPORTED_MEMORY_BYTES",
    "UnknownRoof", "VECTOR",
    "WAVE_SLABS", "flash_kernel", "from_plateaus", "gemm_kernel", "gemm_tile_problems",
    "gpu_hierarchy", "gpu_keys",
    "hierarchy", "kernel_at_size", "largest_fitting_tile", "launch_failure_status",
    "launch_problem", "launchable_tiles", "level_roof_tflops", "library_gemm_kernel",
    "measured_hierarchy", "measured_machine", "place", "reduction_kernel", "staged_gemm_bytes",
    "stencil_kernel", "tile_misses_bytes", "tile_sweep", "tile_traffic_ratio",
    "wave_footprint_bytes", "wave_gemm_bytes", "wave_shape", "with_bandwidths",
]
