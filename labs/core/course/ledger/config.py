"""Where a student's ledger lives and who the student is: the config file, folders and ids.

The remembered settings (student id, ledger folder) are a small JSON file in the per-user config
folder; the default ledger folder is the per-user data folder (platformdirs-like, no deps).
Student ids are validated here because they become file names. Part of
:mod:`labs.core.course.ledger` (import it through that name).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import sys
from pathlib import Path
from typing import Any

__all__ = [
    "APP_DIR_NAME", "ENV_LEDGER_DIR", "ENV_STUDENT_ID", "FILE_PREFIX", "config_path",
    "default_ledger_dir", "lab_version", "ledger_filename", "load_config", "resolve_student_id",
    "save_config", "validate_student_id"
]

#: Environment variables: where the ledger lives, and who the student is.
ENV_LEDGER_DIR = "ROOFLINE_LEDGER_DIR"
ENV_STUDENT_ID = "ROOFLINE_STUDENT_ID"

APP_DIR_NAME = "roofline-labs"
FILE_PREFIX = "roofline-ledger-"

_STUDENT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}$")


def _platform_base(kind: str) -> Path:
    """Per-user base folder for ``kind`` in ("data", "config"), platformdirs-like, no deps."""
    home = Path.home()
    if sys.platform.startswith("win"):
        base = os.environ.get("APPDATA") or str(home / "AppData" / "Roaming")
        return Path(base)
    if sys.platform == "darwin":
        return home / "Library" / "Application Support"
    var = "XDG_DATA_HOME" if kind == "data" else "XDG_CONFIG_HOME"
    default = home / (".local/share" if kind == "data" else ".config")
    value = os.environ.get(var, "")
    # XDG says relative paths must be ignored.
    return Path(value) if value and os.path.isabs(value) else default


def config_path() -> Path:
    """Where the remembered student id and ledger folder are kept (a small JSON file)."""
    return _platform_base("config") / APP_DIR_NAME / "config.json"


def load_config() -> dict:
    """The remembered settings; an unreadable or malformed file counts as empty (it is kept)."""
    try:
        raw = config_path().read_bytes()
        if len(raw) > 64 * 1024:
            return {}
        data = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def save_config(**updates: Any) -> Path:
    """Merge ``updates`` into the config file atomically (temp file + fsync + rename)."""
    path = config_path()
    data = load_config()
    data.update(updates)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return path


def default_ledger_dir() -> Path:
    """``$ROOFLINE_LEDGER_DIR``, else the folder remembered from the lab UI, else per-user data.

    Linux ``~/.local/share/roofline-labs`` (``$XDG_DATA_HOME`` honoured), macOS
    ``~/Library/Application Support/roofline-labs``, Windows ``%APPDATA%\\roofline-labs``.
    """
    env = os.environ.get(ENV_LEDGER_DIR, "").strip()
    if env:
        return Path(env).expanduser()
    remembered = load_config().get("ledger_dir")
    if isinstance(remembered, str) and remembered.strip():
        return Path(remembered).expanduser()
    return _platform_base("data") / APP_DIR_NAME


def validate_student_id(student_id: Any) -> str:
    """A student id usable in a file name: 1-64 of letters, digits and ``._@+-``.

    Surrounding spaces are stripped; anything else raises ValueError naming ``student_id``.
    """
    if not isinstance(student_id, str):
        raise ValueError(f"student_id must be a string, got {type(student_id).__name__}")
    sid = student_id.strip()
    if not _STUDENT_ID_RE.match(sid):
        raise ValueError(
            f"student_id must be 1-64 characters of letters, digits and . _ @ + - "
            f"(starting with a letter or digit), got {student_id!r}"
        )
    return sid


def resolve_student_id() -> str | None:
    """``$ROOFLINE_STUDENT_ID``, else the remembered id, else None (the lab asks)."""
    for candidate in (os.environ.get(ENV_STUDENT_ID, ""), load_config().get("student_id")):
        if isinstance(candidate, str) and candidate.strip():
            try:
                return validate_student_id(candidate)
            except ValueError:
                continue
    return None


def ledger_filename(student_id: str) -> str:
    return f"{FILE_PREFIX}{validate_student_id(student_id)}.jsonl"


def lab_version(lab_file: str | os.PathLike | None) -> str:
    """``"sha256:<16 hex>"`` of the lab file with line endings normalised, or ``"unknown"``.

    The grader compares it with the versions of the released labs (``labs-grade --lab-version``
    prints it for a file). CRLF is normalised so a Windows checkout gives the same version.
    """
    if not lab_file:
        return "unknown"
    try:
        data = Path(lab_file).read_bytes()
    except OSError:
        return "unknown"
    return "sha256:" + hashlib.sha256(data.replace(b"\r\n", b"\n")).hexdigest()[:16]
