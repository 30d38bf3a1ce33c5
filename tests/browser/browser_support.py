"""Helpers for the real-browser tests: chromium location and flags, servers on free ports."""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from labs.core.ui.style import PRELOAD_CLASS

REPO = Path(__file__).resolve().parents[2]
LABS = sorted((REPO / "labs").glob("lab_*.py"))
ARTIFACTS = REPO / "artifacts" / "browser"
CHROMIUM = os.environ.get("ROOFLINE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
#: A figure a student sees: every <marimo-plotly> but the hidden one in each lab's header
#: (labs.core.ui.style.plotly_preload, which only loads plotly.js early).
FIGURE = f"marimo-plotly:not(.{PRELOAD_CLASS} marimo-plotly)"
#: Generous: on a busy 2-core machine a lab's first render can take ~20 s. Only reached on failure.
SLOW_MS = 90_000


def skip_reason() -> str | None:
    """Why browser tests cannot run here, or None."""
    if not Path(CHROMIUM).exists():
        return f"no chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.25)
    raise RuntimeError(f"no answer from {url} within {timeout:.0f} s")


@contextlib.contextmanager
def serve(cmd: list[str], url: str, *, env: dict | None = None, cwd: Path | None = None):
    """Run a server process until the block ends; stop only that process."""
    log = open(os.devnull, "w")
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_http(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def isolated_env(tmp: Path, **extra: str) -> dict:
    """A lab environment with its own ledger folder and no remembered settings."""
    env = dict(os.environ)
    env.pop("ROOFLINE_REVEAL", None)
    env.update(ROOFLINE_LEDGER_DIR=str(tmp / "ledger"), ROOFLINE_STUDENT_ID="browser-test",
               XDG_CONFIG_HOME=str(tmp / "config"), XDG_DATA_HOME=str(tmp / "data"))
    env.update(extra)
    return env


@contextlib.contextmanager
def marimo_run(lab: Path, env: dict, *args: str):
    port = free_port()
    cmd = [sys.executable, "-m", "marimo", "run", str(lab), "--headless", "--port", str(port),
           "--no-token"]
    if args:
        cmd += ["--", *args]
    # The working directory is the test session's neutral one (tests/conftest.py), not the
    # repository: marimo reads a `.marimo.toml` found by walking up from it.
    with serve(cmd, f"http://127.0.0.1:{port}/", env=env) as url:
        yield url
