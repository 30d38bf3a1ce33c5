"""The fresh-user environment every test session runs in; see tests/conftest.py.

A module of its own (not conftest.py) so tests can import it: ``from conftest import ...`` is
ambiguous while tests/browser/ has a conftest.py of its own.
"""

from __future__ import annotations

import os
import site
from pathlib import Path

#: Environment variables a test run keeps although they start with a cleared prefix.
KEEP = {"ROOFLINE_CHROMIUM"}
CLEARED_PREFIXES = ("MARIMO_", "ROOFLINE_")

#: The browsers the tests can drive, the lighter first: Debian's ``chromium-headless-shell``
#: (chromium's own engine without the desktop browser around it: about 8% fewer
#: CPU-seconds per page here) and ``chromium``. ``ROOFLINE_CHROMIUM`` names another.
CHROMIUM_CANDIDATES = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")
#: How the tests and the benchmarks start chromium.
CHROMIUM_FLAGS = ["--no-sandbox", "--headless", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync"]
#: The tests' chromium resolves no host name and uses no proxy: every page a test opens is
#: served on 127.0.0.1, so a request for a named host fails at once instead of depending on
#: the network (the offline export's test relies on it; it also records every request that
#: leaves the site's own address). The benchmarks keep the network, as a student's browser.
NO_NETWORK = ["--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1", "--no-proxy-server"]
#: The tests' pages of one site (every server here is 127.0.0.1, whatever its port) share one
#: renderer process, as a student's tabs of one site may: a page opened after another
#: finds marimo's frontend and plotly.js already compiled there instead of starting a
#: renderer of its own (about 1.5 CPU-seconds less per page opened; the browser tests took
#: 4-11% fewer CPU-seconds in two pairs of runs on 2026-11-28). The benchmarks, which time a
#: first open, leave chromium its default of a process per page.
ONE_RENDERER_PER_SITE = ["--process-per-site"]
CHROMIUM_ARGS = [*CHROMIUM_FLAGS, *NO_NETWORK, *ONE_RENDERER_PER_SITE]


def chromium_path(candidates: tuple[str, ...] = CHROMIUM_CANDIDATES) -> str:
    """``ROOFLINE_CHROMIUM`` if set, else the first of ``candidates`` installed (the last when
    none is: the skip message names it)."""
    chosen = os.environ.get("ROOFLINE_CHROMIUM")
    if chosen:
        return chosen
    return next((c for c in candidates if Path(c).exists()), candidates[-1])


def in_ci(environ=None) -> bool:
    """Whether this is a CI run: ``CI`` set to anything but empty, 0, false or no (CI
    services set ``CI=true``; so does ``.ci/run``)."""
    value = (os.environ if environ is None else environ).get("CI", "")
    return value.strip().lower() not in ("", "0", "false", "no")


def browser_required(chromium: str, environ=None) -> bool:
    """Whether a browser that cannot run fails the browser tests instead of skipping them: in
    CI, and wherever chromium is installed (a chromium that is there but does not start is a
    broken machine, never a reason to pass without the browser tests)."""
    return in_ci(environ) or Path(chromium).exists()


def isolated_environment(home: Path, environ: dict | None = None) -> dict:
    """``environ`` (default: this process's) as a user with nothing of their own at ``home``."""
    env = dict(os.environ if environ is None else environ)
    for name in list(env):
        if name.startswith(CLEARED_PREFIXES) and name not in KEEP:
            del env[name]
    # Keep packages installed with `pip install --user` importable in subprocesses, and uv's
    # download cache (a cache changes no result): both are found through HOME otherwise.
    env.setdefault("PYTHONUSERBASE", site.getuserbase())
    env.setdefault("UV_CACHE_DIR", str(Path(os.path.expanduser("~")) / ".cache" / "uv"))
    env.update(
        HOME=str(home), USERPROFILE=str(home),
        XDG_CONFIG_HOME=str(home / ".config"), XDG_DATA_HOME=str(home / ".local" / "share"),
        XDG_CACHE_HOME=str(home / ".cache"), XDG_STATE_HOME=str(home / ".local" / "state"),
        APPDATA=str(home / "AppData" / "Roaming"), LOCALAPPDATA=str(home / "AppData" / "Local"),
    )
    return env
