"""What the labs offer to measure: the precisions per operation and Lab 1's square sizes.

Kept apart from the measuring code so that a lab with its run button not yet pressed can
build its pickers (precision dropdown, size list) without loading any of it.
"""

from __future__ import annotations

GEMM_PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8")
GEMV_PRECISIONS = ("fp32", "fp16", "bf16", "fp8", "int8")
#: Square sizes Lab 1 sweeps (the budget and memory decide how far a machine gets).
SQUARE_SIZES = (128, 256, 512, 1024, 2048, 4096, 8192)
