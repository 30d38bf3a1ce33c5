"""What the test processes of one run share: a result built once for all pytest-xdist workers.

Each worker is a process of its own, so a session fixture is still built once per worker (and a
module fixture once per stretch of its module's tests a worker runs). :func:`build_once` builds
in the run's shared temporary folder under a file lock: the first worker to ask builds, the
others wait and read the same result.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import shutil
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
