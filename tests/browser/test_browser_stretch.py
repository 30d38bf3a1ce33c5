"""The browser tests' chromium is shared by a stretch of tests and started anew only when it must
be (browser_support.BrowserStretch), checked with stand-ins for the driver and chromium: no
browser is needed, so these are not ``browser`` tests."""

from __future__ import annotations

import os
import subprocess
import sys
from xml.etree import ElementTree

import pytest
from browser_support import REPO, BrowserStretch, browser_required


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


def stretch(log: list, *, unavailable=lambda: None, fails: bool = False, required=lambda: False,
            **chromium):
    def open_browser(driver, profile):
        if fails:
            log.append("chromium failed")
            raise RuntimeError("no usable sandbox")
        return Chromium(driver, profile, log=log, **chromium)

    def start_driver():
        log.append("driver started")
        return Driver(log)

    return BrowserStretch("profile", start_driver=start_driver, open_browser=open_browser,
                          unavailable=unavailable, required=required)


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


def test_a_chromium_that_cannot_start_fails_every_later_test_with_its_error_once_tried():
    """Installed but not starting is a broken machine: a failure naming chromium's error (in
    CI or not), never a skip that lets the run pass without its browser tests."""
    log: list = []
    s = stretch(log, fails=True)
    for _ in range(3):
        with pytest.raises(pytest.fail.Exception, match="chromium did not start: no usable"):
            s.get()
    assert log == ["driver started", "chromium failed", "driver stopped"]


def test_no_chromium_installed_skips_with_its_reason_and_starts_nothing():
    log: list = []
    s = stretch(log, unavailable=lambda: "chromium is not installed")
    for _ in range(2):
        with pytest.raises(pytest.skip.Exception, match="chromium is not installed"):
            s.get()
    assert log == []


def test_in_ci_no_chromium_installed_fails_with_its_reason():
    log: list = []
    s = stretch(log, unavailable=lambda: "chromium is not installed", required=lambda: True)
    for _ in range(2):
        with pytest.raises(pytest.fail.Exception, match="chromium is not installed"):
            s.get()
    assert log == []


@pytest.mark.parametrize("ci, installed, required", [
    ("true", False, True), ("1", False, True), ("", False, False), ("false", False, False),
    ("0", True, True), (None, True, True)])
def test_a_browser_is_required_in_ci_or_where_chromium_is_installed(tmp_path, ci, installed,
                                                                     required):
    chromium = tmp_path / "chromium"
    if installed:
        chromium.write_text("")
    environ = {} if ci is None else {"CI": ci}
    assert browser_required(str(chromium), environ) is required


@pytest.mark.slow
@pytest.mark.browser  # three pytest runs of a browser test: the whole suite's, not the fast loop's
def test_a_broken_chromium_fails_a_real_browser_test_in_a_pytest_run(tmp_path):
    """End to end, as CI runs it: ROOFLINE_CHROMIUM names a program that exists but is no
    browser; a browser test of that run fails, saying chromium did not start (and outside CI
    too, since it is installed). A chromium that is not there skips outside CI and fails in
    it."""
    broken = tmp_path / "chromium"
    broken.write_text("#!/bin/sh\necho 'not a browser' >&2\nexit 1\n")
    broken.chmod(0o755)
    test = "tests/browser/test_inputs_browser.py::test_the_contrast_reader_agrees_with_hand_computed_ratios"

    def run(chromium, ci):
        env = {k: v for k, v in os.environ.items()
               if k not in ("CI", "PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT")
               and not k.startswith("PYTEST_")}
        env.update(ROOFLINE_CHROMIUM=str(chromium), **({"CI": ci} if ci else {}))
        report = tmp_path / f"report-{len(list(tmp_path.iterdir()))}.xml"
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p",
                        "no:cacheprovider", "-o", "addopts=", "--junitxml", str(report), test],
                       cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        case = ElementTree.parse(report).getroot().find(".//testcase")
        outcome = next((child for child in case if child.tag in ("failure", "error", "skipped")),
                       None)
        # a fixture's failure is reported as an error: either fails the run
        tag = "failed" if outcome is not None and outcome.tag in ("failure", "error") else (
            "skipped" if outcome is not None else "passed")
        return tag, (outcome.get("message", "") if outcome is not None else ""), done.returncode

    outcome, message, rc = run(broken, ci=None)
    assert (outcome, rc) == ("failed", 1) and "chromium did not start" in message, message
    outcome, message, rc = run(tmp_path / "absent", ci=None)
    assert (outcome, rc) == ("skipped", 0) and "no chromium at" in message, message
    outcome, message, rc = run(tmp_path / "absent", ci="true")
    assert (outcome, rc) == ("failed", 1) and "no chromium at" in message, message


def test_closing_stops_the_driver_even_when_chromium_fails_to_close():
    log: list = []
    s = stretch(log, dies_on_close=True)
    s.get()
    with pytest.raises(RuntimeError, match="has been closed"):
        s.close()
    assert log[-1] == "driver stopped"
    s.close()  # nothing left to close
    assert log.count("driver stopped") == 1


def test_ci_runs_the_suite_as_ci():
    """.ci/run exports CI=true before the README's test command, so a browser that cannot run
    fails CI instead of skipping there."""
    script = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "export CI=true" in script
    assert script.index("export CI=true") < script.index("python -m pytest -q")
