"""Live collectives: time all-reduce, all-gather and reduce-scatter between worker processes on
this machine, and fit the α-β model to them (Lab 6, ``labs-bench-comm``).

torch is imported lazily (through :mod:`labs.core.measure`), so this module imports without it
and in a browser (WASM) build; nothing runs at import. API::

    status = comm_backend(backend=None)   # CommBackend: .backend "gloo"|"nccl"|None, .message,
                                          # .max_world (CPUs for gloo, GPUs for nccl)
    worker_limit()                        # the most workers to offer (CPUs, 2..8; no torch)
    run = measure_collectives(world_size=2, sizes=COMM_SIZES, backend=None, budget_s=10)
    run.rows                              # one dict per (op, size): median_s, busbw_gbs, ...
    run.fits["all-reduce"]                # AlphaBetaFit: alpha_s, busbw_gbs, residual, ...
    fit_alpha_beta(sizes, times, op="all-reduce", n=2)

The command line (``labs-bench-comm``) is :mod:`labs.core.measure.comm.cli`.

Backends: ``gloo`` (CPU processes over loopback, always there with torch) or ``nccl`` (one
process per CUDA GPU, needs at least two GPUs). With one GPU or none the CPU path runs and
``comm_backend`` says why.

Processes: ``world_size`` workers (:mod:`labs.core.measure.comm.worker`, started with
``subprocess`` as ``python -m ...``: a function defined in a notebook could not be imported by
them), MASTER_ADDR 127.0.0.1 and a free port chosen at run time (a second try with a new port if
another program took it first). They are stopped on every path: success, an exception, an
interrupt (KeyboardInterrupt or marimo's stop), a worker dying, the time limit. Workers also
exit on their own when this process disappears. Limits: ``startup_s`` for the workers to import
torch and join, then ``budget_s`` of measuring, plus a few seconds' grace.

Timing: the measure wing's one timer (``timer.time_callable``: CUDA events on a GPU,
``time.perf_counter`` on a CPU) in each worker, an untimed barrier before each repetition of
``inner`` back-to-back collectives; the slowest rank's time counts. Repetitions are summarised
with the same timer's statistics (median, p10, p90).
"""

from __future__ import annotations

import json
import os
import queue
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

import labs
from labs.core.measure.choices import MAX_WORKERS, usable_cpus, worker_limit  # noqa: F401  (the lab's face)
from labs.core.measure.device import detect
from labs.core.measure.errors import MeasureError, Unavailable
from labs.core.measure.timer import sample_stats
from labs.core.physics import collectives
from labs.core.physics.validate import positive, positive_int

__all__ = [
    "AlphaBetaFit", "COMM_SIZES", "CollectiveRun", "CommBackend", "DEFAULT_BUDGET_S", "GRACE_S",
    "MAX_WORKERS", "Progress", "STARTUP_S", "comm_backend", "fit_alpha_beta", "free_port",
    "measure_collectives", "usable_cpus", "worker_limit"
]

#: Message sizes Lab 6 measures: 4 KiB ... 64 MiB, x4 apart (the budget decides how far a run gets).
COMM_SIZES = tuple(4 ** i * 1024 for i in range(1, 9))
DEFAULT_BUDGET_S = 8.0
#: Seconds the workers may take to import torch and join the group (several on a busy laptop).
STARTUP_S = 40.0
GRACE_S = 5.0
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class CommBackend:
    """Which collective backend can run here, and the sentence that says so."""

    backend: str | None  # "gloo", "nccl" or None (nothing can run)
    max_world: int  # most workers: logical CPUs (gloo) or CUDA GPUs (nccl)
    message: str
    gpus: int = 0

    @property
    def available(self) -> bool:
        return self.backend is not None


def comm_backend(backend: str | None = None) -> CommBackend:
    """What a collective measurement can use here; never raises. ``backend``: None or "auto"
    (nccl with two or more CUDA GPUs, else gloo), "gloo" or "nccl"."""
    want = (backend or "auto").strip().lower()
    if want not in ("auto", "gloo", "nccl"):
        return CommBackend(None, 0, f"backend must be 'auto', 'gloo' or 'nccl', got {backend!r}")
    info = detect("cpu")  # imports torch lazily; says why not (no torch, WASM)
    if not info.available:
        return CommBackend(None, 0, info.message)
    import torch  # noqa: PLC0415  (detect succeeded: torch is there)

    dist = getattr(torch, "distributed", None)
    if dist is None or not dist.is_available():
        return CommBackend(None, 0, f"torch {torch.__version__} was built without "
                                    "torch.distributed, so no collective can run here.")
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    nccl_ok = gpus >= 2 and dist.is_nccl_available()
    if want == "nccl" and not nccl_ok:
        why = (f"only {gpus} CUDA GPU{'s' if gpus != 1 else ''} here" if gpus < 2
               else "this torch build has no NCCL")
        return CommBackend(None, 0, f"NCCL needs two or more CUDA GPUs (one process per GPU): "
                                    f"{why}. Choose gloo to measure the CPU path.", gpus)
    if want == "nccl" or (want == "auto" and nccl_ok):
        return CommBackend("nccl", gpus, f"{gpus} CUDA GPUs: NCCL between one process per "
                                         "GPU, over whatever links join them here.", gpus)
    cpus = usable_cpus()
    if gpus == 1:
        why = ("One CUDA GPU: a multi-GPU collective needs at least two (NCCL runs one process "
               "per GPU), so this measures the CPU path instead: ")
    elif gpus == 0:
        why = "No CUDA GPU here, so this measures the CPU path: "
    else:
        why = "gloo chosen: "
    return CommBackend("gloo", cpus, why + f"gloo between worker processes on this machine's "
                       f"{cpus} logical CPUs, over loopback (127.0.0.1). What it shows is this "
                       "machine's memory and network stack, not NVLink or PCIe.", gpus)


# --- the α-β fit ----------------------------------------------------------------------------

@dataclass(frozen=True)
class AlphaBetaFit:
    """t(S) = α + S × factor / β fitted to measured times: α the latency of the whole
    collective (seconds), β its bus bandwidth (GB/s, nccl-tests convention: comparable with a
    link's one-way bandwidth), ``residual`` the RMS relative misfit (0.05 = 5%)."""

    op: str
    n: int
    alpha_s: float
    busbw_gbs: float
    residual: float
    sizes: tuple = field(repr=False)
    times: tuple = field(repr=False)

    @property
    def alpha_step_s(self) -> float:
        """α per ring step: the collective's latency / its 2(n-1) or (n-1) steps."""
        return self.alpha_s / collectives.latency_steps(self.op, self.n)

    @property
    def slope_s_per_byte(self) -> float:
        return collectives.bus_factor(self.op, self.n) / (self.busbw_gbs * 1e9)

    @property
    def crossover_bytes(self) -> float:
        """The size where the bandwidth term equals α: latency dominates below it."""
        return self.alpha_s / self.slope_s_per_byte

    def predict(self, nbytes) -> float:
        return self.alpha_s + positive("nbytes", nbytes) * self.slope_s_per_byte

    def as_link(self, name: str = "this machine (measured)") -> collectives.Link:
        """The fit as a link: one-way bandwidth β and per-step latency, for collective_time."""
        return collectives.custom_link(name, self.busbw_gbs, self.alpha_step_s * 1e6)

    def as_row(self) -> dict:
        return {"op": self.op, "n": self.n, "alpha_us": self.alpha_s * 1e6,
                "alpha_step_us": self.alpha_step_s * 1e6, "busbw_gbs": self.busbw_gbs,
                "crossover_bytes": self.crossover_bytes, "residual_pct": self.residual * 100,
                "points": len(self.sizes)}


def fit_alpha_beta(sizes: Sequence[float], times: Sequence[float], *, op: str = "all-reduce",
                   n: int = 2) -> AlphaBetaFit:
    """Least squares on *relative* errors (times span decades: a plain fit would ignore the
    small messages that carry α). α is kept >= 0 (refit through the origin if it comes out
    negative); a fit whose time does not grow with size raises ValueError."""
    import numpy as np

    o, nn = collectives.op_name(op), collectives.participant_count(n)
    try:
        s = np.asarray(sizes, dtype=float)
        t = np.asarray(times, dtype=float)
    except (TypeError, ValueError):
        raise ValueError("sizes and times must be sequences of numbers") from None
    if s.ndim != 1 or s.shape != t.shape:
        raise ValueError(f"sizes and times must be 1-D and the same length, got {s.shape} "
                         f"and {t.shape}")
    if len(np.unique(s)) < 3:
        raise ValueError(f"sizes must hold at least 3 different message sizes, got {len(s)}")
    for name, a in (("sizes", s), ("times", t)):
        if not np.all(np.isfinite(a)) or np.any(a <= 0):
            raise ValueError(f"{name} must be finite and > 0")
    w = 1.0 / t
    (alpha, slope), *_ = np.linalg.lstsq(np.column_stack([w, s * w]), np.ones_like(t),
                                         rcond=None)
    if alpha < 0:
        x = s * w
        alpha, slope = 0.0, float(x.sum() / (x * x).sum())
    if not slope > 0:
        raise ValueError("the times do not grow with the message size: measure larger "
                         "messages to see the bandwidth")
    residual = float(np.sqrt(np.mean(((alpha + slope * s) / t - 1.0) ** 2)))
    return AlphaBetaFit(o, nn, float(alpha), collectives.bus_factor(o, nn) / slope / 1e9, residual,
                        tuple(s.tolist()), tuple(t.tolist()))


# --- running the workers ------------------------------------------------------------------------

@dataclass(frozen=True)
class CollectiveRun:
    """One measurement: rows per (op, size), a fit per op, and how it ran."""

    backend: str
    world_size: int
    device: str
    torch_version: str | None
    rows: list
    fits: dict  # op -> AlphaBetaFit (ops with too few measured sizes are missing)
    fit_errors: dict  # op -> why it could not be fitted
    elapsed_s: float
    budget_s: float
    worker_pids: tuple = ()
    message: str = ""

    def fit_rows(self) -> list[dict]:
        return [f.as_row() for f in self.fits.values()]

    def ledger_payload(self) -> dict:
        """What the ledger keeps of a run: how it ran and each fit, floats to 4 significant
        figures (the rows stay in the download)."""
        return {"backend": self.backend, "world_size": self.world_size, "device": self.device,
                "torch": self.torch_version,
                "fits": [{k: float(f"{v:.4g}") if isinstance(v, float) else v
                          for k, v in r.items()} for r in self.fit_rows()],
                "fit_errors": self.fit_errors}

    def as_dict(self) -> dict:
        return {"backend": self.backend, "world_size": self.world_size, "device": self.device,
                "torch": self.torch_version, "elapsed_s": self.elapsed_s,
                "budget_s": self.budget_s, "rows": self.rows, "fits": self.fit_rows(),
                "fit_errors": self.fit_errors, "message": self.message}


class _PortTaken(Exception):
    pass


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _check_world(world_size, status: CommBackend) -> int:
    ws = positive_int("world_size", world_size)
    if ws < 2:
        raise ValueError(f"world_size must be >= 2 workers for a collective, got {world_size!r}")
    if status.available and ws > status.max_world:
        what = "CUDA GPUs" if status.backend == "nccl" else "logical CPUs"
        raise ValueError(f"world_size={ws} is more than the {status.max_world} {what} here: "
                         f"each worker needs its own, so use at most {status.max_world}")
    return ws


def _check_sizes(sizes) -> tuple[int, ...]:
    try:
        out = tuple(positive_int("sizes", s) for s in sizes)
    except TypeError:
        raise ValueError(f"sizes must be a sequence of byte counts, got {sizes!r}") from None
    if not out:
        raise ValueError("sizes must hold at least one message size (bytes)")
    return tuple(sorted(set(out)))


def _worker_env(port: int) -> dict:
    env = dict(os.environ)
    root = str(Path(labs.__file__).resolve().parents[1])  # so workers import this labs package
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), OMP_NUM_THREADS="1")
    if sys.platform.startswith("linux"):
        env.setdefault("GLOO_SOCKET_IFNAME", "lo")  # keep gloo on loopback
    elif sys.platform == "darwin":
        env.setdefault("GLOO_SOCKET_IFNAME", "lo0")
    return env


def _stop(procs: list) -> None:
    """Stop every worker started (terminate, then kill what is left) and reap it."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    end = time.monotonic() + 3
    for p in procs:
        try:
            p.wait(timeout=max(0.1, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def _tail(log) -> str:
    try:
        log.seek(0)
        text = log.read().decode("utf-8", "replace").strip().splitlines()
    except (OSError, ValueError):
        return ""
    useful = [ln for ln in text if ln.strip() and "Warning" not in ln][-4:]
    return " | ".join(useful)[-600:]


def _reader(stream, out: queue.Queue) -> None:
    for line in iter(stream.readline, b""):
        try:
            out.put(json.loads(line))
        except ValueError:
            continue
    out.put({"event": "eof"})


def _summarise(event: dict, n: int, backend: str) -> dict:
    row = {"op": event["op"], "bytes": event["bytes"], "n": n, "backend": backend,
           "status": event["status"], "reps": event["reps"], "inner": event["inner"]}
    if event["times"]:
        st = sample_stats(event["times"])  # the GEMM timer's summary statistics
        row.update(median_s=st["median_s"], p10_s=st["p10_s"], p90_s=st["p90_s"],
                   algbw_gbs=collectives.algbw_gbs(event["bytes"], st["median_s"]),
                   busbw_gbs=collectives.busbw_gbs(event["op"], event["bytes"], n, st["median_s"]))
    return row


def _run_once(cfg: dict, world: int, startup_s: float, progress: Progress | None,
              total: int) -> tuple[list, tuple]:
    port = free_port()
    procs, logs, rows, events = [], [], [], queue.Queue()
    start = time.monotonic()
    hard = start + startup_s + cfg["budget_s"] + GRACE_S
    cfg = dict(cfg, deadline=time.time() + (hard - start) + 1)
    ready = done = False
    try:
        env = _worker_env(port)
        for rank in range(world):
            log = tempfile.TemporaryFile()
            logs.append(log)
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "labs.core.measure.comm.worker",
                 json.dumps(dict(cfg, rank=rank))],
                stdout=subprocess.PIPE if rank == 0 else subprocess.DEVNULL, stderr=log,
                stdin=subprocess.DEVNULL, env=env))
        threading.Thread(target=_reader, args=(procs[0].stdout, events), daemon=True).start()
        while not (done and all(p.poll() is not None for p in procs)):
            try:
                ev = events.get(timeout=0.1)
            except queue.Empty:
                ev = {}
            kind = ev.get("event")
            if kind == "ready":
                ready = True
                _call(progress, 1, total, "workers ready")
            elif kind == "row":
                rows.append(_summarise(ev, world, cfg["backend"]))
            elif kind == "progress":
                _call(progress, 1 + ev["done"], total, ev["label"])
            elif kind == "done":
                done = True
            for rank, p in enumerate(procs):
                if p.poll() not in (None, 0):
                    tail = _tail(logs[rank])
                    if not ready and "address already in use" in tail.lower():
                        raise _PortTaken()
                    raise MeasureError(
                        f"Worker {rank} stopped (exit status {p.returncode}) before the "
                        f"measurement finished; every worker was stopped. {tail}".strip())
            if kind == "eof" and not done and all(p.poll() == 0 for p in procs):
                raise MeasureError("The workers ended without finishing the measurement.")
            now = time.monotonic()
            if not ready and now > start + startup_s:
                raise MeasureError(
                    f"The {world} workers did not start within {startup_s:.0f} s (importing "
                    "torch can take long on a busy machine); every worker was stopped.")
            if now > hard:
                raise MeasureError(
                    f"The measurement ran past its time limit ({hard - start:.0f} s); every "
                    "worker was stopped.")
        return rows, tuple(p.pid for p in procs)
    finally:
        _stop(procs)
        for log in logs:
            log.close()
        for p in procs:
            if p.stdout is not None:
                p.stdout.close()


def _call(progress, done, total, label):
    if progress is not None:
        progress(int(done), int(total), str(label))


def measure_collectives(world_size: int = 2, sizes: Sequence[int] = COMM_SIZES,
                        backend: str | None = None, *, ops: Sequence[str] = collectives.OPS,
                        budget_s: float = DEFAULT_BUDGET_S, startup_s: float = STARTUP_S,
                        progress: Progress | None = None) -> CollectiveRun:
    """Time ``ops`` at each of ``sizes`` (bytes, nccl-tests convention) across
    ``world_size`` worker processes and fit α and β per op. Raises ``Unavailable`` when no
    backend can run (the message says why), ``MeasureError`` when the workers fail or run out
    of time (all of them stopped first), ``ValueError`` naming a bad argument."""
    status = comm_backend(backend)
    ws = _check_world(world_size, status)
    szs = _check_sizes(sizes)
    op_list = tuple(dict.fromkeys(collectives.op_name(o) for o in ops))
    if not op_list:
        raise ValueError("ops must name at least one collective")
    budget = positive("budget_s", budget_s)
    start_limit = positive("startup_s", startup_s)
    if not status.available:
        raise Unavailable(status.message)
    cfg = {"world_size": ws, "backend": status.backend, "ops": list(op_list),
           "sizes": list(szs), "budget_s": budget, "parent_pid": os.getpid(),
           "op_timeout_s": start_limit + budget + GRACE_S}
    total = 1 + len(op_list) * len(szs)
    t0 = time.monotonic()
    try:
        rows, pids = _run_once(cfg, ws, start_limit, progress, total)
    except _PortTaken:  # another program took the free port between our check and the bind
        rows, pids = _run_once(cfg, ws, start_limit, progress, total)
    rows.sort(key=lambda r: (op_list.index(r["op"]), r["bytes"]))
    fits, errors = {}, {}
    for o in op_list:
        ok = [r for r in rows if r["op"] == o and r["status"] == "ok"]
        try:
            fits[o] = fit_alpha_beta([r["bytes"] for r in ok], [r["median_s"] for r in ok],
                                     op=o, n=ws)
        except ValueError as e:
            errors[o] = str(e)
    import torch  # noqa: PLC0415  (comm_backend found it)

    device = (torch.cuda.get_device_name(0) if status.backend == "nccl"
              else detect("cpu").name)
    return CollectiveRun(status.backend, ws, device, torch.__version__, rows, fits, errors,
                         time.monotonic() - t0, budget, pids, status.message)
