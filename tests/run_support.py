"""What the test processes of one run share: a result built once for all pytest-xdist workers,
and a machine to itself for a test that times wall-clock work.

Each worker is a process of its own, so a session fixture is still built once per worker (and a
module fixture once per stretch of its module's tests a worker runs). :func:`build_once` builds
in the run's shared temporary folder under a file lock: the first worker to ask builds, the
others wait and read the same result. :class:`TurnTaking` lets a test marked ``alone`` run while
no other test of the run does (tests/conftest.py).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
import time
from pathlib import Path
from typing import Any, Callable

try:
    import fcntl
except ImportError:  # Windows: no flock; each worker builds its own
    fcntl = None


@contextlib.contextmanager
def _exclusive(lock_file: Path):
    with open(lock_file, "a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_once(tmp_path_factory, name: str, build: Callable[[Path], Any]) -> Any:
    """``build(folder)``'s result (it must pickle), built once per test run in an empty
    ``folder`` that every worker of the run can read."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER") and fcntl is not None:
        base = base.parent  # the run's folder, above each worker's own
    folder, result_file = base / f"shared-{name}", base / f"shared-{name}.pickle"
    with _exclusive(base / f"shared-{name}.lock") if fcntl else contextlib.nullcontext():
        if result_file.exists():
            return pickle.loads(result_file.read_bytes())
        shutil.rmtree(folder, ignore_errors=True)  # a build that failed half-way
        folder.mkdir(parents=True)
        result = build(folder)
        result_file.write_bytes(pickle.dumps(result))
        return result


#: Where a worker of a parallel run finds the lock file of the run's :class:`TurnTaking`
#: (pytest-xdist's ``workerinput``; tests/conftest.py).
TURNS_KEY = "roofline_turns_lock"


class TurnTaking:
    """A readers-writer lock between the workers of one run, on a file every worker opens:
    :meth:`turn` holds it shared around each test and exclusive around a test that must run
    alone. A test waiting to run alone goes first: the workers start no new test once it
    waits (byte 0 of the file is the turnstile), and it starts when the tests under way have
    ended (byte 1 is the room). POSIX record locks (``lockf``) belong to the process, so each
    worker holds its own and the kernel drops them if a worker dies."""

    _TURNSTILE, _ROOM = 0, 1
    #: How long a test waiting to run alone waits for the tests under way (the longest takes
    #: about a minute here): a test hung elsewhere must not stop every worker for good.
    WAIT_S = 600.0

    def __init__(self, lock_file: Path):
        self._handle = open(lock_file, "a+b")  # noqa: SIM115  (held for the worker's life)

    def _lock(self, byte: int, mode: int) -> None:
        fcntl.lockf(self._handle, mode, 1, byte)

    def _wait_for_the_room(self) -> None:
        deadline = time.monotonic() + self.WAIT_S
        while True:
            try:
                return self._lock(self._ROOM, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"a test marked alone waited {self.WAIT_S:.0f} s for "
                                       "the tests under way to end") from None
                time.sleep(0.05)

    @contextlib.contextmanager
    def turn(self, alone: bool):
        mode = fcntl.LOCK_EX if alone else fcntl.LOCK_SH
        self._lock(self._TURNSTILE, mode)
        try:
            self._wait_for_the_room() if alone else self._lock(self._ROOM, mode)
        except BaseException:
            self._lock(self._TURNSTILE, fcntl.LOCK_UN)
            raise
        if not alone:  # the next test, alone or not, may come in at once
            self._lock(self._TURNSTILE, fcntl.LOCK_UN)
        try:
            yield
        finally:
            self._lock(self._ROOM, fcntl.LOCK_UN)
            if alone:
                self._lock(self._TURNSTILE, fcntl.LOCK_UN)

    def close(self) -> None:
        self._handle.close()
