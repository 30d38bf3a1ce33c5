"""A test marked ``alone`` has the run to itself (tests/conftest.py, run_support.TurnTaking).

A test that times wall-clock work (a timer held against torch.utils.benchmark, operators that
sleep a known time) reads the other workers' load as its own result. In a parallel run it waits
until the tests under way have ended, and the workers start no other test until it has ended.
"""

from __future__ import annotations

import multiprocessing
import time

import pytest
from run_support import TURNS_KEY, TurnTaking, fcntl

pytestmark = pytest.mark.skipif(fcntl is None, reason="no file locks on this platform")


def _take_turn(lock_file, alone, stamps, name, hold_s, entered=None, release=None):
    """A worker: take a turn, stamp when it began and ended, hold it ``hold_s`` (or until
    ``release`` is set)."""
    turns = TurnTaking(lock_file)
    with turns.turn(alone=alone):
        stamps[f"{name} in"] = time.monotonic()
        if entered is not None:
            entered.set()
        if release is not None:
            release.wait(30)
        time.sleep(hold_s)
        stamps[f"{name} out"] = time.monotonic()
    turns.close()


def _can_share(lock_file, byte: int) -> bool:
    """Whether a process holding no lock on the file could share ``byte`` now: not while
    another holds it exclusively (byte 0: an alone test waits; byte 1: one runs)."""
    with open(lock_file, "a+b") as handle:  # this process holds no lock on the file
        try:
            fcntl.lockf(handle, fcntl.LOCK_SH | fcntl.LOCK_NB, 1, byte)
        except OSError:
            return False
        fcntl.lockf(handle, fcntl.LOCK_UN, 1, byte)
        return True


def _wait(condition, what: str, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.01)


def _context():
    """Processes started afresh (a forkserver where there is one), not forked from a worker
    whose other threads could hold a lock the child then waits on for ever."""
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


@pytest.fixture
def workers(tmp_path):
    context = _context()
    manager = context.Manager()
    started = []

    def start(name, alone, hold_s=0.0, entered=None, release=None):
        proc = context.Process(target=_take_turn, args=(
            tmp_path / "turns.lock", alone, stamps, name, hold_s, entered, release))
        proc.start()
        started.append(proc)
        return proc

    stamps = manager.dict()
    start.stamps, start.context, start.manager = stamps, context, manager
    start.lock_file = tmp_path / "turns.lock"
    start.lock_file.touch()
    yield start
    for proc in started:
        proc.join(30)
        if proc.is_alive():
            proc.kill()
    manager.shutdown()


def test_tests_beside_each_other_share_the_run(workers):
    entered, release = workers.manager.Event(), workers.manager.Event()
    first = workers("first", alone=False, entered=entered, release=release)
    assert entered.wait(30)
    second = workers("second", alone=False)
    second.join(30)
    assert "second out" in workers.stamps and "first out" not in workers.stamps
    release.set()
    first.join(30)


def test_an_alone_test_waits_for_the_tests_under_way_and_holds_off_new_ones(workers):
    entered, release = workers.manager.Event(), workers.manager.Event()
    workers("under way", alone=False, entered=entered, release=release)
    assert entered.wait(30)
    workers("alone", alone=True, hold_s=0.3)
    _wait(lambda: not _can_share(workers.lock_file, 0), "the alone test waits at the turnstile")
    later = workers("later", alone=False)
    time.sleep(0.3)  # the later test had time to start, were it let in
    assert "alone in" not in workers.stamps and "later in" not in workers.stamps
    release.set()
    later.join(30)
    s = workers.stamps
    assert s["under way out"] <= s["alone in"] < s["alone out"] <= s["later in"], dict(s)


@pytest.mark.alone
def test_in_a_parallel_run_an_alone_test_holds_the_run(request):
    """This test is marked ``alone``: while it runs, no other worker can hold a turn (byte 1,
    the room, cannot even be shared)."""
    if not hasattr(request.config, "workerinput"):
        pytest.skip("not a parallel run: no other worker to hold off")
    lock_file = request.config.workerinput.get(TURNS_KEY)
    assert lock_file, "the workers of this parallel run were handed no lock file"
    with _context().Pool(1) as pool:
        assert pool.apply_async(_can_share, (lock_file, 1)).get(timeout=60) is False
