"""Time GEMMs per precision on this machine against the roofline and a reference timer.

    python benchmarks/bench_gemm.py [--device cpu|cuda] [--sizes 256,512] [--out PATH]
    labs-bench-gemm ...            # the same, installed as a console script

Prints a table (shape, precision, measured TFLOP/s, predicted bound, measured/predicted,
the reference timer's TFLOP/s and the two timers' difference), the STREAM bandwidth and a
decode GEMV table, and writes everything as JSON (default
benchmarks/results/<host>-<date>.json). On an H100/H200 it also checks that a bf16 8192^3
GEMM reaches 70% of the dense spec peak. All of it lives in labs.core.measure.cli.main.
"""

import sys

from labs.core.measure.cli import main

if __name__ == "__main__":
    sys.exit(main())
