"""The design ledger: an append-only, hash-chained JSON Lines record of what a student did.

One file per student (``roofline-ledger-<student_id>.jsonl``) holds the events of every lab,
so there is one thing to hand in. Each line is one event::

    {"schema": 1, "seq": 3, "ts": "2025-03-01T12:00:00.123456Z", "student_id": "ada",
     "lab_id": "lab01", "lab_version": "sha256:0123456789abcdef",
     "item_id": "lab01.crossover_n", "kind": "predict", "payload": {...},
     "session": "9f2c...", "prev_hash": "<hash of the previous line>", "hash": "<sha256>"}

Why JSON Lines (not SQLite): an append is one ``write`` of one line, so a crash can at worst
leave one torn last line and every earlier line stays readable; the file is plain text a
student, an instructor or a grader can inspect and merge; there are no side files (``-wal``,
``-journal``) to forget when handing it in; it works the same in a browser-only (WASM) run
where it is downloaded and uploaded as bytes.

Durability rules this module implements:

- Appends happen under an exclusive lock on a side file (``fcntl.lockf`` on POSIX,
  ``msvcrt.locking`` on Windows), so two labs open at once never interleave or lose events;
  each line is written with a single ``O_APPEND`` write and ``fsync``'d before returning.
- A ledger that is not clean (a line that is not a valid event, a broken hash chain, a torn
  last line, unreadable bytes) is **never** rewritten or reset: it is left untouched and new
  events go to a recovery file ``roofline-ledger-<id>.recovery-<n>.jsonl`` that the grader
  merges. The student sees a message saying so.
- A directory that cannot be created or written (read-only, missing, or a browser-only run)
  keeps the events in memory; :meth:`Ledger.export_files` gives the bytes to download.

The hash chain lets a grader who kept a later hash (a "receipt") detect edits, deletions,
insertions and reordering before it. It does not stop a student who rewrites the whole chain:
there is no secret key. Nothing here is a security boundary.

This module is the ledger's public face (``from labs.core import ledger``); the work is done in
``ledger.config`` (folders, config file, student ids), ``ledger.events`` (the line format,
hashing, reading), ``ledger.files`` (the lock and the durable append) and ``ledger.store``
(the :class:`Ledger`). None of them imports marimo; :mod:`labs.core.course.quiz` builds the
notebook UI on top.
"""

from __future__ import annotations

from labs.core.course.ledger.config import (  # noqa: F401  (the public API, re-exported)
    APP_DIR_NAME,
    ENV_LEDGER_DIR,
    ENV_STUDENT_ID,
    FILE_PREFIX,
    config_path,
    default_ledger_dir,
    lab_version,
    ledger_filename,
    load_config,
    resolve_student_id,
    save_config,
    validate_student_id,
)
from labs.core.course.ledger.events import (  # noqa: F401
    GENESIS_HASH,
    KINDS,
    MAX_ID_CHARS,
    MAX_LINE_BYTES,
    MAX_PAYLOAD_DEPTH,
    MAX_READ_BYTES,
    SCHEMA_VERSION,
    Problem,
    ReadResult,
    canonical_bytes,
    check_event,
    event_hash,
    event_line,
    parse_line,
    parse_ts,
    read_ledger,
    read_ledger_file,
    utc_now,
)
from labs.core.course.ledger.files import file_lock, in_browser, student_files  # noqa: F401
from labs.core.course.ledger.store import Ledger, first_predictions  # noqa: F401

__all__ = [
    "APP_DIR_NAME", "ENV_LEDGER_DIR", "ENV_STUDENT_ID", "FILE_PREFIX", "GENESIS_HASH", "KINDS",
    "Ledger", "MAX_ID_CHARS", "MAX_LINE_BYTES", "MAX_PAYLOAD_DEPTH", "MAX_READ_BYTES", "Problem",
    "ReadResult", "SCHEMA_VERSION", "canonical_bytes", "check_event", "config_path",
    "default_ledger_dir", "event_hash", "event_line", "file_lock", "first_predictions",
    "in_browser", "lab_version", "ledger_filename", "load_config", "parse_line", "parse_ts",
    "read_ledger", "read_ledger_file", "resolve_student_id", "save_config", "student_files",
    "utc_now", "validate_student_id"
]
