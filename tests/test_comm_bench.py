"""Lab 6 live collectives (labs.core.measure.comm.bench): the α-β fit on synthetic data, real
gloo runs between 2 worker processes on this machine, and that no worker outlives a run,
whatever ends it (success, a worker killed, an interrupt, the start-up limit)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import numpy as np
import pytest

from labs.core import collectives
from labs.core import comm_bench
from labs.core import measure
from labs.core.measure.comm import cli as comm_cli

# --- the α-β fit (pure numpy: no torch needed) ----------------------------------------------


@pytest.mark.parametrize("op,n,alpha,busbw", [
    ("all-reduce", 2, 60e-6, 3.0), ("all-gather", 4, 25e-6, 40.0),
    ("reduce-scatter", 8, 5e-6, 450.0), ("all-reduce", 16, 200e-6, 0.8),
])
def test_fit_recovers_alpha_and_beta_from_noisy_synthetic_data(op, n, alpha, busbw):
    rng = np.random.default_rng(7)
    sizes = np.array([4 ** i * 1024 for i in range(1, 10)], dtype=float)
    true = alpha + sizes * collectives.bus_factor(op, n) / (
        busbw * 1e9)
    noisy = true * rng.lognormal(0, 0.05, size=sizes.size)  # 5% multiplicative noise
    fit = comm_bench.fit_alpha_beta(sizes, noisy, op=op, n=n)
    assert fit.alpha_s == pytest.approx(alpha, rel=0.15)
    assert fit.busbw_gbs == pytest.approx(busbw, rel=0.1)
    assert 0.01 < fit.residual < 0.12
    # per ring step: the true α over the ring's steps, 2(n-1) for an all-reduce, n-1 otherwise
    steps = (2 if op == "all-reduce" else 1) * (n - 1)
    assert fit.alpha_step_s == pytest.approx(alpha / steps, rel=0.15)
    # the crossover of the TRUE curve: α = S x factor / β  ->  S* = α β / factor
    factor = (2 if op == "all-reduce" else 1) * (n - 1) / n
    assert fit.crossover_bytes == pytest.approx(alpha * busbw * 1e9 / factor, rel=0.25)
    # as a link: the true β one way and the true α per step (not the fit fed back through
    # the model it came from)
    link = fit.as_link()
    assert link.one_way_gbs == pytest.approx(busbw, rel=0.1)
    assert link.latency_s == pytest.approx(alpha / steps, rel=0.15)


def test_fit_is_exact_on_exact_data_and_keeps_alpha_non_negative():
    sizes = [1e3, 1e4, 1e5, 1e6]
    fit = comm_bench.fit_alpha_beta(sizes, [1e-5 + s / 1e9 for s in sizes], op="all-gather", n=2)
    assert fit.alpha_s == pytest.approx(1e-5) and fit.residual < 1e-9
    assert fit.busbw_gbs == pytest.approx(0.5)  # factor (n-1)/n = 1/2 over a 1e9 B/s slope
    pure = comm_bench.fit_alpha_beta(sizes, [s / 1e9 * 1.5 for s in sizes], op="all-gather", n=2)
    assert pure.alpha_s >= 0


@pytest.mark.parametrize("sizes,times,match", [
    ([1e3, 1e4], [1e-5, 2e-5], "at least 3"),
    ([1e3, 1e4, 1e5], [1e-5, 2e-5], "same length"),
    ([1e3, 1e4, 1e5], [1e-5, 0, 2e-5], "times"),
    ([1e3, -1, 1e5], [1e-5, 1e-5, 2e-5], "sizes"),
    ([1e3, 1e4, 1e5], [3e-5, 2e-5, 1e-5], "do not grow"),
])
def test_fit_rejects_bad_data_with_a_clear_message(sizes, times, match):
    with pytest.raises(ValueError, match=match):
        comm_bench.fit_alpha_beta(sizes, times)


# --- real worker processes ------------------------------------------------------------------

try:
    import torch
except ImportError:  # without the live extra: the tests marked torch are skipped (conftest.py)
    torch = None
SMALL = (4096, 65536, 1 << 20)


def _children() -> set[int]:
    """Live (not zombie) child processes of this test process."""
    try:
        import psutil

        return {p.pid for p in psutil.Process().children(recursive=True)
                if p.status() != psutil.STATUS_ZOMBIE}
    except ImportError:
        me, out = os.getpid(), set()
        for d in Path("/proc").iterdir():
            try:
                stat = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if stat[0] != "Z" and int(stat[1]) == me:
                out.add(int(d.name))
        return out


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    status = Path(f"/proc/{pid}/stat")
    return status.exists() and status.read_text().rsplit(")", 1)[1].split()[0] == "Z"


def _workers() -> list[int]:
    pids = []
    for pid in _children():
        try:
            if b"labs.core.measure.comm.worker" in Path(f"/proc/{pid}/cmdline").read_bytes():
                pids.append(pid)
        except OSError:
            continue
    return sorted(pids)


@pytest.fixture
def no_leftovers():
    before = _children()
    yield
    time.sleep(0.2)
    assert _children() - before == set(), "a worker process outlived the measurement"


@pytest.mark.parametrize("cpus, offered", [(1, 2), (2, 2), (6, 6), (64, 8)])
def test_the_workers_offered_are_this_machines_cpus_between_two_and_eight(monkeypatch, cpus,
                                                                         offered):
    """A slider that offers more workers than CPUs leads a student into a refusal (gloo runs one
    process per CPU): it offers what the machine can run, and needs no torch to say so."""
    from labs.core.measure import choices

    monkeypatch.setattr(choices, "usable_cpus", lambda: cpus)
    assert comm_bench.worker_limit() == offered


@pytest.mark.torch
def test_backend_status_says_why_on_a_machine_without_two_gpus():
    status = comm_bench.comm_backend()
    assert status.available and status.backend in ("gloo", "nccl")
    if status.backend == "gloo":
        assert "gloo" in status.message and "CPU" in status.message
        assert status.max_world == comm_bench.usable_cpus()
    gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if gpus < 2:
        refused = comm_bench.comm_backend("nccl")
        assert not refused.available and "two or more CUDA GPUs" in refused.message
        with pytest.raises(measure.Unavailable, match="two or more"):
            comm_bench.measure_collectives(2, SMALL, "nccl")
    if gpus == 1:
        assert "at least two" in status.message
    assert not comm_bench.comm_backend("mpi").available


@pytest.mark.torch
@pytest.mark.parametrize("gpus,want,backend,words", [
    (0, None, "gloo", "No CUDA GPU here"),
    (1, None, "gloo", "One CUDA GPU: a multi-GPU collective needs at least two"),
    (1, "nccl", None, "NCCL needs two or more CUDA GPUs"),
    (2, None, "nccl", "2 CUDA GPUs: NCCL"),
    (4, "gloo", "gloo", "gloo chosen"),
])
def test_backend_choice_for_each_gpu_count(monkeypatch, gpus, want, backend, words):
    """With one GPU or none the CPU path is kept and the message says why (simulated counts)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: gpus > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: gpus)
    monkeypatch.setattr(torch.distributed, "is_nccl_available", lambda: True)
    status = comm_bench.comm_backend(want)
    assert status.backend == backend and words in status.message and status.gpus == gpus
    assert status.max_world == (gpus if backend == "nccl" else comm_bench.usable_cpus() if backend else 0)


@pytest.mark.parametrize("kwargs,name", [
    (dict(world_size=1), "world_size"),
    pytest.param(dict(world_size=comm_bench.usable_cpus() + 1), "world_size",  # the backend says how many
                 marks=pytest.mark.torch),
    (dict(world_size=2, sizes=(0, 1024)), "sizes"),
    (dict(world_size=2, sizes=()), "sizes"),
    (dict(world_size=2, ops=("broadcast",)), "op"),
    (dict(world_size=2, budget_s=0), "budget_s"),
])
def test_bad_arguments_raise_before_any_process_starts(kwargs, name, no_leftovers):
    kwargs.setdefault("backend", "gloo")
    with pytest.raises(ValueError, match=name):
        comm_bench.measure_collectives(**kwargs)


@pytest.mark.torch
def test_a_real_two_process_gloo_run_finishes_and_leaves_no_process(no_leftovers):
    seen = []
    t0 = time.monotonic()
    run = comm_bench.measure_collectives(2, SMALL, "gloo", budget_s=3,
                                 progress=lambda d, t, label: seen.append((d, t, label)))
    assert time.monotonic() - t0 < 30 + comm_bench.STARTUP_S  # budget + start-up, with room for load
    assert run.backend == "gloo" and run.world_size == 2 and len(run.worker_pids) == 2
    assert all(_gone(pid) for pid in run.worker_pids)
    assert {(r["op"], r["bytes"]) for r in run.rows} == {(o, s) for o in collectives.OPS for s in SMALL}
    ok = [r for r in run.rows if r["status"] == "ok"]
    assert ok, run.rows
    for r in ok:
        assert r["median_s"] > 0 and r["p10_s"] <= r["median_s"] <= r["p90_s"]
        assert r["busbw_gbs"] == pytest.approx(collectives.busbw_gbs(r["op"], r["bytes"], 2,
                                                           r["median_s"]))
    assert seen[0][2] == "workers ready" and seen[-1][0] == seen[-1][1] == 1 + 3 * len(SMALL)
    assert set(run.fits) | set(run.fit_errors) == set(collectives.OPS)
    for fit in run.fits.values():
        assert fit.alpha_s >= 0 and fit.busbw_gbs > 0 and fit.n == 2
    json.dumps(run.as_dict())  # JSON-safe for the CLI and the ledger


@pytest.mark.torch
@pytest.mark.slow
def test_a_worker_killed_mid_run_stops_every_worker_with_a_message(no_leftovers):
    killed = []

    def kill_one(done, total, label):
        if done >= 2 and not killed:
            pids = _workers()
            if len(pids) == 2:
                os.kill(pids[1], signal.SIGKILL)
                killed.append(pids[1])

    with pytest.raises(measure.MeasureError, match="stopped") as e:
        comm_bench.measure_collectives(2, (4096,) * 1 + tuple(4 ** i * 4096 for i in range(1, 7)),
                               "gloo", budget_s=20, progress=kill_one)
    assert killed and "every worker was stopped" in str(e.value)


@pytest.mark.torch
@pytest.mark.slow
def test_an_interrupt_stops_every_worker(no_leftovers):
    def interrupt(done, total, label):
        if done >= 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        comm_bench.measure_collectives(2, SMALL, "gloo", budget_s=20, progress=interrupt)


@pytest.mark.torch
def test_workers_that_cannot_start_in_time_are_stopped(no_leftovers):
    with pytest.raises(measure.MeasureError, match="did not start within"):
        comm_bench.measure_collectives(2, SMALL, "gloo", budget_s=1, startup_s=0.3)


def test_a_worker_exits_by_itself_when_its_parent_is_gone(tmp_path):
    """The watchdog: a worker whose parent disappeared (or whose deadline passed) exits."""
    import subprocess
    import sys

    cfg = {"rank": 0, "world_size": 2, "backend": "gloo", "parent_pid": 1, "deadline":
           time.time() + 60, "op_timeout_s": 60, "ops": ["all-reduce"], "sizes": [4096],
           "budget_s": 1}
    env = comm_bench._worker_env(comm_bench.free_port())
    p = subprocess.Popen([sys.executable, "-m", "labs.core.measure.comm.worker",
                          json.dumps(cfg)], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        assert p.wait(timeout=30) == 70  # parent_pid 1 is not its parent: it leaves at once
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@pytest.mark.torch
def test_ctrl_c_in_the_cli_stops_every_worker_and_exits_with_a_message(monkeypatch, tmp_path,
                                                                     no_leftovers, capsys):
    """Ctrl+C during labs-bench-comm printed a raw KeyboardInterrupt traceback.
    Now the run stops its workers (no_leftovers checks), says so, writes nothing and exits 130
    (the shell's code for SIGINT)."""
    real = comm_bench.measure_collectives

    def interrupted(*args, **kwargs):
        def ctrl_c(done, total, label):
            if done >= 2:
                raise KeyboardInterrupt
        return real(*args, **{**kwargs, "progress": ctrl_c})

    monkeypatch.setattr(comm_cli, "measure_collectives", interrupted)
    out = tmp_path / "comm.json"
    assert comm_cli.main(["--sizes", "4k,64k", "--budget-s", "5", "--out", str(out)]) == 130
    printed = capsys.readouterr()
    assert "Interrupted" in printed.out and "every worker process was stopped" in printed.out
    assert "Traceback" not in printed.out + printed.err and not out.exists()


@pytest.mark.torch
def test_cli_writes_json(tmp_path, no_leftovers, capsys):
    out = tmp_path / "comm.json"
    assert comm_cli.main(["--sizes", "4k,64k,1m", "--budget-s", "2", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["world_size"] == 2 and data["rows"] and "load_average_1min_at_start" in data
    printed = capsys.readouterr().out
    assert "bus bandwidth" in printed or "no fit" in printed


def test_a_runs_ledger_payload_keeps_how_it_ran_and_each_fit_to_four_figures():
    # all-reduce, n = 2: 2 ring steps, bus factor 2(n-1)/n = 1; alpha 12.3456 µs, 1.23456 GB/s
    fit = comm_bench.AlphaBetaFit("all-reduce", 2, 12.3456e-6, 1.23456, 0.0123456,
                                  sizes=(1e3, 1e4, 1e5), times=(1e-5, 2e-5, 1e-4))
    run = comm_bench.CollectiveRun("gloo", 2, "cpu", "2.13.0", rows=[{"op": "all-reduce"}],
                                   fits={"all-reduce": fit},
                                   fit_errors={"all-gather": "too few sizes"},
                                   elapsed_s=3.0, budget_s=8.0)
    payload = run.ledger_payload()
    assert payload["backend"] == "gloo" and payload["world_size"] == 2
    assert payload["device"] == "cpu" and payload["torch"] == "2.13.0"
    assert payload["fit_errors"] == {"all-gather": "too few sizes"}
    (row,) = payload["fits"]
    assert row["op"] == "all-reduce" and row["n"] == 2 and row["points"] == 3
    assert row["alpha_us"] == 12.35 and row["alpha_step_us"] == 6.173
    assert row["busbw_gbs"] == 1.235 and row["residual_pct"] == 1.235
    # crossover = alpha / (1 / beta) = 12.3456e-6 s x 1.23456e9 B/s = 15,241 B
    assert row["crossover_bytes"] == 15240.0
    assert "rows" not in payload  # the rows stay in the download
