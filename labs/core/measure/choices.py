"""What the labs offer to measure: the precisions per operation and Lab 1's square sizes.

Kept apart from the measuring code so that a lab with its run button not yet pressed can
build its pickers (precision dropdown, size list) without loading any of it.
"""

from __future__ import annotations

import os

__all__ = [
    "GEMM_PRECISIONS", "GEMV_PRECISIONS", "MAX_WORKERS", "SQUARE_SIZES", "usable_cpus",
    "worker_limit"
]

GEMM_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
GEMV_PRECISIONS = ("fp32", "fp16", "bf16", "fp8", "int8")
#: Square sizes Lab 1 sweeps (the budget and memory decide how far a machine gets).
SQUARE_SIZES = (128, 256, 512, 1024, 2048, 4096, 8192)


def usable_cpus() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (
        os.cpu_count() or 1)


#: The most worker processes a lab offers (Lab 6's slider: one node's ring, 2 to 8).
MAX_WORKERS = 8


def worker_limit() -> int:
    """The most workers to offer here without importing torch: this machine's logical CPUs
    (gloo runs one process per CPU; ``comm_backend().max_world`` says the same once torch is
    loaded), between 2 (a collective needs two) and :data:`MAX_WORKERS`. With NCCL the GPU
    count is checked when the run starts (``world_size`` more than the GPUs is refused)."""
    return max(2, min(MAX_WORKERS, usable_cpus()))
