"""One worker process of a live collective measurement (started by
:func:`labs.core.measure.comm.bench.measure_collectives`; never imported by a notebook).

It lives in the package, not in a notebook cell, because a spawned process can only run code
it can import. Run as ``python -m labs.core.measure.comm.worker '<json config>'``; the parent
sets MASTER_ADDR=127.0.0.1 and a free MASTER_PORT chosen at run time.

What it does: joins the process group (``torch.distributed``, env:// rendezvous), then for
each (op, size) times one call, and then ``reps`` repetitions of ``inner`` back-to-back calls
with the measure wing's timer (``timer.time_callable``: CUDA events on a GPU, perf_counter on
a CPU), each repetition after an untimed barrier; rank 0 decides ``reps`` and ``inner`` from
the time budget and broadcasts them, so every rank runs the same collectives.
Per repetition the slowest rank's time counts (a collective ends when its last rank does):
the times are all-reduced with MAX. Rank 0 writes one JSON line per event to stdout.

It never outlives its parent or its deadline: a watchdog thread exits the process when the
parent process is gone or the deadline has passed (the parent also stops it on every path).
"""

from __future__ import annotations

import json
import math
import os
import sys
import threading
import time

__all__ = ["ELEMENT_BYTES", "MAX_INNER", "MAX_REPS", "MIN_REPS", "MIN_REP_S", "main", "run"]

#: A repetition lasts at least this long (short collectives are repeated back to back inside
#: it, so that the barrier's skew between ranks is a small part of what is timed).
MIN_REP_S = 1e-3
MIN_REPS, MAX_REPS, MAX_INNER = 3, 20, 200
ELEMENT_BYTES = 4  # float32 buffers


def _emit(rank: int, **event) -> None:
    if rank == 0:
        sys.stdout.write(json.dumps(event) + "\n")
        sys.stdout.flush()


def _watchdog(parent_pid: int, deadline: float) -> None:
    """Exit this process as soon as its parent is gone or the deadline (time.time()) passed."""
    def watch():
        while True:
            if os.getppid() != parent_pid or time.time() > deadline:
                os._exit(70)
            time.sleep(0.2)
    threading.Thread(target=watch, name="comm-watchdog", daemon=True).start()


def _collective(torch, dist, op: str, nbytes: int, world: int, device):
    """(callable running one collective, bytes it actually moves in nccl-tests' convention)."""
    per = max(1, int(nbytes) // ELEMENT_BYTES // world)  # elements per rank's shard
    if op == "all-reduce":
        x = torch.full((per * world,), 1.0 / world, device=device)  # the sum stays 1.0
        return (lambda: dist.all_reduce(x)), per * world * ELEMENT_BYTES
    if op == "all-gather":
        shard = torch.full((per,), 1.0, device=device)
        out = torch.empty(per * world, device=device)
        return (lambda: dist.all_gather_into_tensor(out, shard)), per * world * ELEMENT_BYTES
    if op == "reduce-scatter":
        full = torch.full((per * world,), 1.0, device=device)
        out = torch.empty(per, device=device)
        return (lambda: dist.reduce_scatter_tensor(out, full)), per * world * ELEMENT_BYTES
    raise ValueError(f"op must be all-reduce, all-gather or reduce-scatter, got {op!r}")


def _plan(est_s: float, remaining_s: float, pairs_left: int) -> tuple[int, int, int]:
    """(reps, inner, skip) for one (op, size) from one call's time and the budget left."""
    inner = min(MAX_INNER, max(1, math.ceil(MIN_REP_S / max(est_s, 1e-9))))
    one = est_s * inner
    if remaining_s < one * MIN_REPS:
        return 0, inner, 1
    share = remaining_s / max(pairs_left, 1)
    return int(min(MAX_REPS, max(MIN_REPS, share // one))), inner, 0


def run(cfg: dict) -> int:
    """The worker's whole life; returns the exit status."""
    rank, world = int(cfg["rank"]), int(cfg["world_size"])
    _watchdog(int(cfg["parent_pid"]), float(cfg["deadline"]))
    import datetime

    import torch
    import torch.distributed as dist

    from labs.core.measure.timer import time_callable  # the package's one timer

    torch.set_num_threads(1)
    nccl = cfg["backend"] == "nccl"
    device = torch.device(f"cuda:{rank}" if nccl else "cpu")
    if nccl:
        torch.cuda.set_device(device)
    dist.init_process_group(cfg["backend"], init_method="env://", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=float(cfg["op_timeout_s"])))
    _emit(rank, event="ready")

    def slowest(samples):  # a collective ends when its last rank does: max over ranks
        t = torch.tensor(samples, dtype=torch.float64, device=device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        return t.tolist()

    def timed(fn, reps):
        # warmup_s=0: exactly three untimed calls on every rank (the timer's minimum), then
        # ``reps`` timed ones, each after an untimed barrier (the timer's ``flush`` slot)
        return time_callable(fn, device=str(device), warmup_s=0, reps=reps,
                             flush=dist.barrier).samples_s

    # size by size, every op at each size: when the budget runs out, the largest messages of
    # every op are the ones skipped
    pairs = [(op, int(s)) for s in cfg["sizes"] for op in cfg["ops"]]
    budget_end = time.perf_counter() + float(cfg["budget_s"])
    for i, (op, nbytes) in enumerate(pairs):
        fn, actual = _collective(torch, dist, op, nbytes, world, device)
        (est,) = slowest(timed(fn, 1))
        plan = torch.tensor(_plan(est, budget_end - time.perf_counter(), len(pairs) - i),
                            dtype=torch.float64, device=device)
        dist.broadcast(plan, src=0)  # rank 0's plan: every rank runs the same collectives
        reps, inner, skip = (int(v) for v in plan.tolist())
        times = []
        if not skip:
            def batch(fn=fn, inner=inner):  # short collectives back to back, timed together
                for _ in range(inner):
                    fn()
            times = [t / inner for t in slowest(timed(batch, reps))]
        _emit(rank, event="row", op=op, bytes=actual, requested=nbytes, reps=len(times),
              inner=inner, times=times,
              status="skipped: the time budget ran out" if skip else "ok")
        _emit(rank, event="progress", done=i + 1, total=len(pairs),
              label=f"{op}, {actual:,} bytes")
    dist.barrier()
    dist.destroy_process_group()
    _emit(rank, event="done")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        sys.stderr.write("usage: python -m labs.core.measure.comm.worker '<json config>'\n")
        return 2
    return run(json.loads(args[0]))


if __name__ == "__main__":  # pragma: no cover  (runs in the spawned process)
    sys.exit(main())
