"""labs.core.measure.comm: collectives between worker processes on this machine (Lab 6).

Each module one job; import them by name (``from labs.core.measure.comm import bench``, or the
short name ``from labs.core import comm_bench``):

    bench   backend choice, the timed run and its cleanup, the α-β fit (measure_collectives)
    worker  the worker process (``python -m labs.core.measure.comm.worker``)
    cli     labs-bench-comm

torch is imported lazily, inside the run.
"""

__all__ = []
