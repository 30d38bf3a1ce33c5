"""Time collectives between worker processes on this machine and fit the α-β model.

    python benchmarks/bench_comm.py [--world-size 2] [--backend auto|gloo|nccl]
                                    [--sizes 4k,64k,1m] [--budget-s 8] [--out PATH]
    labs-bench-comm ...            # the same, installed as a console script

Prints the measured table (median, p10-p90, bus bandwidth per collective and size) and the fit
per collective (α, β, residual, the size below which latency dominates), and writes JSON
(default benchmarks/results/comm-<host>-<date>.json). All of it lives in
labs.core.measure.comm.cli.main.
"""

import sys

from labs.core.measure.comm.cli import main

if __name__ == "__main__":
    sys.exit(main())
