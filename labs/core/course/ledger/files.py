"""The ledger's file primitives: a portable inter-process lock, a durable append, a student's
files in a folder, and creating a whole file at once.

Appends happen under an exclusive lock on a side file, each line written with a single
``O_APPEND`` write and ``fsync``'d before returning, so two labs open at once never interleave
or lose events and a crash leaves at worst one torn last line; a write that fails is cut back,
so a full disk leaves no partial line either.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import sys
import time
from pathlib import Path
from typing import Iterator

from labs.core.course.ledger.config import FILE_PREFIX, ledger_filename

__all__ = [
    "append_bytes", "file_lock", "in_browser", "recovery_name", "student_files", "write_new_file"
]

_RECOVERY_RE = re.compile(r"\.recovery-(\d+)\.jsonl$")


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


def append_bytes(path: Path, data: bytes) -> None:
    """Append with one O_APPEND write (looping only on a short write), then fsync.

    Called with the ledger's lock held. If the write or the fsync fails (full disk, quota,
    I/O error), the file is cut back to its size before the call, so a partial line never
    stays behind to be glued to the next one; the caller keeps the event elsewhere (memory).
    """
    created = not path.exists()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0),
                 0o644)
    try:
        size = os.fstat(fd).st_size
        try:
            view = memoryview(data)
            while view:
                n = os.write(fd, view)
                view = view[n:]
            os.fsync(fd)
        except OSError:
            with contextlib.suppress(OSError):  # best effort: shrinking needs no free space
                os.ftruncate(fd, size)
                os.fsync(fd)
            raise
    finally:
        os.close(fd)
    if created:
        _fsync_dir(path.parent)


def student_files(directory: Path, student_id: str) -> list[Path]:
    """A student's ledger files in ``directory`` in reading order: the main file, then the
    continuation (``.recovery-<n>``) files by number. Reads the folder listing only."""
    main = directory / ledger_filename(student_id)
    found = [main] if main.exists() else []
    try:
        names = os.listdir(directory)
    except OSError:
        names = []
    stem = f"{FILE_PREFIX}{student_id}.recovery-"
    numbered = []
    for name in names:
        m = _RECOVERY_RE.search(name)
        if name.startswith(stem) and m and name == f"{stem}{m.group(1)}.jsonl":
            numbered.append((int(m.group(1)), directory / name))
    return found + [p for _, p in sorted(numbered)]


def recovery_name(student_id: str, n: int) -> str:
    return f"{FILE_PREFIX}{student_id}.recovery-{n}.jsonl"


def write_new_file(path: Path, data: bytes) -> None:
    """Create ``path`` holding ``data``, durably and all at once; FileExistsError if it exists.

    Written to a temporary name, fsync'd, then linked into place (``os.link`` never replaces an
    existing file), so a reader sees either no file or the whole file.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: check, then rename
            if path.exists():
                raise FileExistsError(f"{path} exists") from None
            os.replace(tmp, path)
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
    _fsync_dir(path.parent)


def in_browser() -> bool:
    """True in a browser-only (Pyodide/WASM) run, where files do not outlive the page."""
    return sys.platform == "emscripten"
