"""The student's record in a real browser: what each action says.

- "Save" on an explain form says "Saved ✓ at <time>" at once, without a reload;
- a stale second tab that submits a different answer is told that the first answer stands.
Runs the tiny test lab (tests/_lock_lab.py) under ``marimo run`` with its own ledger folder and
a marimo config that follows the browser's colour scheme (live), and shoots each step in light
and dark (artifacts/browser/record-*.png).
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from browser_support import shoot_schemes

from labs.core import ledger

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LOCK_LAB = Path(__file__).resolve().parents[1] / "_lock_lab.py"


def _wait_for_explains(path: Path, n: int, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [e for e in ledger.read_ledger_file(path).events if e["kind"] == "explain"]
        if len(found) >= n:
            return found[n - 1]
        time.sleep(0.2)
    raise AssertionError(f"{n} explain events not written within {timeout:.0f} s")


def _lock(page, answer: str, reason: str) -> None:
    page.get_by_placeholder("1 to 10000").fill(answer)
    page.get_by_text("4", exact=True).first.click()
    page.get_by_placeholder("one line: why do you expect this?").first.fill(reason)
    page.get_by_role("button", name="Lock prediction").first.click()


def test_explain_save_says_saved_and_a_stale_tab_is_told(browser, lab_servers, artifacts):
    # theme "system": marimo follows the browser's colour scheme
    with lab_servers.run(LOCK_LAB) as server:
        url = server.url
        ledger_file = server.ledger / "roofline-ledger-browser-test.jsonl"
        ctx = browser.new_context(viewport={"width": 1100, "height": 1400}, color_scheme="light")
        try:
            tab_a, tab_b = ctx.new_page(), ctx.new_page()
            for tab in (tab_a, tab_b):
                tab.set_default_timeout(90_000)
                tab.goto(url)
                tab.get_by_role("button", name="Lock prediction").first.wait_for()
            _lock(tab_a, "500", "HBM is fast")
            tab_a.get_by_text("Instrument:").wait_for()

            # the explain form answers a save in place: no reload
            tab_a.get_by_label("What does the instrument show?").fill("2000 GB/s")
            tab_a.get_by_label("Why does it differ from your prediction?").fill(
                "the copy kernel only moves bytes")
            tab_a.get_by_role("button", name="Save").click()
            tab_a.get_by_text("Saved ✓ at").wait_for()
            shoot_schemes(tab_a, lambda scheme: artifacts / f"record-explain-saved-{scheme}.png",
                          full_page=True)
            # edited and saved again: the label moves to the new save's time
            tab_a.get_by_label("Why does it differ from your prediction?").fill(
                "the copy kernel only moves bytes: 2 x 8 bytes per element")
            tab_a.get_by_role("button", name="Save").click()
            second = _wait_for_explains(ledger_file, 2)
            tab_a.get_by_text(f"Saved ✓ at {second['ts'][11:19]} UTC").wait_for()

            # tab B was opened before the lock: its form is still open; its answer is refused
            _lock(tab_b, "2000", "peeked at the other tab")
            tab_b.get_by_text("The first answer stands").wait_for()
            tab_b.get_by_text("Instrument:").wait_for()
            tab_b.get_by_text("Locked prediction:").first.wait_for()
            shoot_schemes(tab_b, lambda scheme: artifacts / f"record-stale-tab-{scheme}.png",
                          full_page=True)
        finally:
            ctx.close()
    events = ledger.read_ledger_file(ledger_file).events
    bw = [e for e in events if e["item_id"] == "locklab.bandwidth"]
    assert [e["kind"] for e in bw if e["kind"] in ("predict", "revise")] == ["predict", "revise"]
    assert [e["payload"]["value"] for e in bw if e["kind"] == "predict"] == [500]
    assert [e["payload"]["text"] for e in bw if e["kind"] == "explain"] == [
        "the copy kernel only moves bytes",
        "the copy kernel only moves bytes: 2 x 8 bytes per element"]


def test_instructor_copy_shows_reference_cards_not_widgets(browser, lab_servers, artifacts):
    lab = Path(__file__).resolve().parents[2] / "labs" / "lab_01_memory_wall.py"
    with lab_servers.run(lab, "--reveal") as server:
        url = server.url
        ctx = browser.new_context(viewport={"width": 1100, "height": 1400}, color_scheme="light")
        try:
            page = ctx.new_page()
            page.set_default_timeout(90_000)
            page.goto(url)
            cards = page.get_by_text("Reference answer (instructor copy):")
            cards.nth(4).wait_for()  # one per prediction of the lab
            assert cards.count() == 5
            assert page.get_by_role("button", name="Lock prediction").count() == 0
            assert page.get_by_text("You predicted").count() == 0
            page.get_by_text(re.compile("Reference answer .*The instrument shows")).first.wait_for()
            # the crossover question (Lab 1's third), its card (answer + explanation) and the
            # comparison
            card = cards.nth(2)
            card.scroll_into_view_if_needed()
            page.wait_for_timeout(500)
            shoot_schemes(page, lambda scheme: artifacts / f"record-instructor-card-{scheme}.png")
            assert "886" in card.locator("xpath=..").inner_text()
        finally:
            ctx.close()
