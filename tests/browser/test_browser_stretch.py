"""The browser tests' chromium is shared by a stretch of tests and started anew only when it must
be (browser_support.BrowserStretch), checked with stand-ins for the driver and chromium: no
browser is needed, so these are not ``browser`` tests."""

from __future__ import annotations

import pytest
from browser_support import BrowserStretch


class Driver:
    def __init__(self, log: list):
        self.log = log

    def stop(self):
        self.log.append("driver stopped")


class Chromium:
    """A stand-in for CachedBrowser: ``alive``, ``origins``, ``closed``, ``close``."""

    def __init__(self, driver, profile, *, log: list, dies_on_close: bool = False):
        self.log, self.dies_on_close = log, dies_on_close
        self.origins: set[str] = set()
        self.closed = False
        self.dead = False
        log.append("chromium started")

    def alive(self):
        return not (self.closed or self.dead)

    def close(self):
        if self.dead or self.dies_on_close:
            raise RuntimeError("Target page, context or browser has been closed")
        self.closed = True
        self.log.append("chromium closed")


def stretch(log: list, *, unavailable=lambda: None, fails: bool = False, **chromium):
    def open_browser(driver, profile):
        if fails:
            log.append("chromium failed")
            raise RuntimeError("no usable sandbox")
        return Chromium(driver, profile, log=log, **chromium)

    def start_driver():
        log.append("driver started")
        return Driver(log)

    return BrowserStretch("profile", start_driver=start_driver, open_browser=open_browser,
                          unavailable=unavailable)


def test_a_stretch_shares_one_chromium_and_the_next_one_starts_its_own():
    log: list = []
    s = stretch(log)
    first = s.get()
    assert s.get() is first and log == ["driver started", "chromium started"]
    s.close()
    assert log[2:] == ["chromium closed", "driver stopped"]
    assert s.get() is not first and log[4:] == ["driver started", "chromium started"]


def test_a_chromium_that_died_is_replaced_and_what_it_stored_is_cleared_next():
    log: list = []
    s = stretch(log)
    dead = s.get()
    dead.origins.add("http://127.0.0.1:4000")
    dead.dead = True
    fresh = s.get()  # the dead one's close error is not the next test's failure
    assert fresh is not dead and fresh.alive()
    assert fresh.origins == {"http://127.0.0.1:4000"}
    assert log == ["driver started", "chromium started", "driver stopped", "driver started",
                   "chromium started"]


def test_a_chromium_that_cannot_start_skips_every_later_test_without_trying_again():
    log: list = []
    s = stretch(log, fails=True)
    for _ in range(3):
        with pytest.raises(pytest.skip.Exception, match="chromium did not start: no usable"):
            s.get()
    assert log == ["driver started", "chromium failed", "driver stopped"]


def test_no_chromium_installed_skips_with_its_reason_and_starts_nothing():
    log: list = []
    s = stretch(log, unavailable=lambda: "chromium is not installed")
    for _ in range(2):
        with pytest.raises(pytest.skip.Exception, match="chromium is not installed"):
            s.get()
    assert log == []


def test_closing_stops_the_driver_even_when_chromium_fails_to_close():
    log: list = []
    s = stretch(log, dies_on_close=True)
    s.get()
    with pytest.raises(RuntimeError, match="has been closed"):
        s.close()
    assert log[-1] == "driver stopped"
    s.close()  # nothing left to close
    assert log.count("driver stopped") == 1
