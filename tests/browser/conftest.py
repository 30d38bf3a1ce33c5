"""Real-browser fixtures: Debian's chromium driven by the ``playwright`` Python package.

Never ``playwright install``: the browser is Debian's ``chromium-headless-shell``, else
``chromium`` (``apt-get install chromium-headless-shell``; isolation_support.chromium_path).
Every test here is marked ``browser`` and skips cleanly when chromium or playwright is missing.
Servers (``marimo run``, ``python -m http.server``) listen on 127.0.0.1 at a free port and get
their own ledger folder, so tests never touch a real ledger and can run beside other users.
``lab_servers`` shares one ``marimo run`` server of every lab per argument list and theme among
the tests of a test process (an xdist worker), each test starting as a fresh student, and
``browser`` keeps one chromium profile per test process, so the cache of marimo's frontend
outlives a test while cookies and stored data do not.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import (ARTIFACTS, SLOW_MS, CachedBrowser, KernelRuns, LabServers,
                             skip_reason)


# Module scope, not session: a sync Playwright left open would make every later
# ``sync_playwright()`` in the run (other test files drive chromium too) fail with
# "using Playwright Sync API inside the asyncio loop".
@pytest.fixture(scope="module")
def playwright_driver():
    reason = skip_reason()
    if reason:
        pytest.skip(reason)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        yield pw


@pytest.fixture(scope="session")
def chromium_profile(tmp_path_factory) -> Path:
    """The profile folder of this test process's chromium (each xdist worker has its own):
    the modules of a process open it one after another and find the cache of the last."""
    return tmp_path_factory.mktemp("chromium-profile")


@pytest.fixture(scope="module")
def browser(playwright_driver, chromium_profile):
    """Chromium whose cache outlives a test, as a student's does (browser_support.CachedBrowser);
    each context it opens starts with no cookies and no stored data."""
    try:
        b = CachedBrowser(playwright_driver, chromium_profile)
    except Exception as exc:  # a chromium that cannot start here is an environment issue
        pytest.skip(f"chromium did not start: {exc}")
    yield b
    b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    pg = context.new_page()
    pg.set_default_timeout(SLOW_MS)
    KernelRuns.watch(pg)  # settle() ends once the kernel is done
    yield pg
    context.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    return ARTIFACTS



@pytest.fixture(scope="session")
def lab_servers(tmp_path_factory):
    """``lab_servers.run(lab, *args, theme=...)``: a shared ``marimo run`` server whose ledger
    is empty (browser_support.LabServers)."""
    servers = LabServers(tmp_path_factory.mktemp("lab-servers"))
    yield servers
    servers.close()
