"""The ledger's file primitives: a portable inter-process lock and a durable append.

Appends happen under an exclusive lock on a side file, each line written with a single
``O_APPEND`` write and ``fsync``'d before returning, so two labs open at once never interleave
or lose events and a crash leaves at worst one torn last line.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def file_lock(lock_path: Path, timeout: float = 30.0) -> Iterator[None]:
    """Exclusive inter-process lock on ``lock_path`` (created if needed); released on exit.

    POSIX: ``fcntl.lockf`` (also works on NFS home directories). Windows: ``msvcrt.locking`` on
    the first byte. The OS releases both if the process dies, so a killed lab never leaves a
    stale lock.
    """
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_BINARY", 0), 0o644)
    try:
        if os.name == "nt":  # pragma: no cover - exercised on Windows only
            import msvcrt

            deadline = time.monotonic() + timeout
            while True:
                try:
                    os.lseek(fd, 0, os.SEEK_SET)
                    msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"could not lock {lock_path} within {timeout} s")
                    time.sleep(0.01)
            try:
                yield
            finally:
                os.lseek(fd, 0, os.SEEK_SET)
                msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.lockf(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.lockf(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _fsync_dir(directory: Path) -> None:
    """Persist a new directory entry (POSIX); a no-op where directories cannot be opened."""
    if os.name == "nt":  # pragma: no cover
        return
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _append_bytes(path: Path, data: bytes) -> None:
    """Append with one O_APPEND write (looping only on a short write), then fsync."""
    created = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0),
                 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    if created:
        _fsync_dir(path.parent)


def in_browser() -> bool:
    """True in a browser-only (Pyodide/WASM) run, where files do not outlive the page."""
    return sys.platform == "emscripten"
