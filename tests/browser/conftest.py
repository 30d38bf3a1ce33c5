"""Real-browser fixtures: Debian's chromium driven by the ``playwright`` Python package.

Never ``playwright install``: the browser is Debian's ``chromium-headless-shell``, else
``chromium`` (``apt-get install chromium-headless-shell``; isolation_support.chromium_path).
Every test here is marked ``browser``. Where chromium or playwright is missing it skips with
the reason, except in CI (``CI=true``), where that fails; a chromium that is installed but does
not start fails it, with chromium's error (browser_support.browser_required).
Servers (``marimo run``, ``python -m http.server``) listen on 127.0.0.1 at a free port and get
their own ledger folder, so tests never touch a real ledger and can run beside other users.
``lab_servers`` shares one ``marimo run`` server of every lab per argument list and theme among
the tests of a test process (an xdist worker), each test starting as a fresh student, and
``browser`` keeps one chromium profile per test process, so the cache of marimo's frontend
outlives a test while cookies and stored data do not; one chromium serves each stretch of
consecutive browser tests (``BrowserStretch``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import (ARTIFACTS, SLOW_MS, BrowserStretch, CachedBrowser, KernelRuns,
                             LabServers)


_STRETCH: BrowserStretch | None = None


@pytest.fixture(scope="session")
def chromium_profile(tmp_path_factory) -> Path:
    """The profile folder of this test process's chromium (each xdist worker has its own):
    each stretch's chromium opens it in turn and finds the cache of the last."""
    return tmp_path_factory.mktemp("chromium-profile")


@pytest.fixture(scope="session")
def browser_stretch(chromium_profile):
    global _STRETCH
    _STRETCH = BrowserStretch(chromium_profile)
    try:
        yield _STRETCH
    finally:
        _STRETCH.close()
        _STRETCH = None


@pytest.fixture
def browser(browser_stretch) -> CachedBrowser:
    """Chromium whose cache outlives a test, as a student's does (browser_support.CachedBrowser);
    each context it opens starts with no cookies and no stored data."""
    return browser_stretch.get()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item, nextitem):
    """After a test's own fixtures are gone: close the stretch's chromium and driver unless
    the next test of this process drives them too."""
    try:
        result = yield
    except BaseException:
        _end_stretch_before(nextitem, quiet=True)  # the test's own error is the one to see
        raise
    _end_stretch_before(nextitem)
    return result


def _end_stretch_before(nextitem, *, quiet: bool = False) -> None:
    if _STRETCH is not None and "browser" not in getattr(nextitem, "fixturenames", ()):
        _STRETCH.close(quiet=quiet)


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
