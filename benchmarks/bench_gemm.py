"""Time GEMMs per precision on this machine against the roofline and a reference timer.

    python benchmarks/bench_gemm.py [--device cpu|cuda] [--threads 1] [--attempts 2] [--out PATH]
    labs-bench-gemm ...            # the same, installed as a console script

Prints the README's block in Markdown (caption with the command, date, the machine as
detected and the load; the STREAM line; the GEMM table with each figure's range over the
attempts, the reference timer's figure and the timer check's verdict at 5%; the decode GEMV
table) and writes it all as JSON (default benchmarks/results/<host>-<date>.json). On an
H100/H200 it also checks that a bf16 8192^3 GEMM reaches 70% of the dense spec peak, and says
so when it does not. All of it lives in labs.core.measure.bench_gemm.main.
"""

import sys

from labs.core.measure.bench_gemm import main

if __name__ == "__main__":
    sys.exit(main())
