"""A saved explanation does not look unsaved.

marimo draws a form amber ("not submitted") until it is submitted on the current page, so a
pre-filled explain form read "Saved ✓ at ..." inside an amber frame after a reload. The tiny
test lab (tests/_lock_lab.py) runs under ``marimo run``; the test locks, saves an explanation,
reloads, and checks that the saved form carries no amber frame while a form still to fill
keeps it, in light and in dark (the server's theme is "system", which follows the browser's
colour scheme live). Screenshots: artifacts/browser/explain-reload-*.png.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import SCHEMES, use_scheme

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LOCK_LAB = Path(__file__).resolve().parents[1] / "_lock_lab.py"
#: marimo 0.25's class for a form that was not submitted on this page.
AMBER = "[class*='amber-1']"


def test_a_saved_explanation_is_not_framed_as_unsaved_after_reload(browser, lab_servers,
                                                                      artifacts):
    # theme "system": marimo follows the browser's colour scheme
    with lab_servers.run(LOCK_LAB) as server:
        url = server.url
        ctx = browser.new_context(viewport={"width": 1100, "height": 1400}, color_scheme="light")
        try:
            page = ctx.new_page()
            page.set_default_timeout(90_000)
            page.goto(url)
            page.get_by_placeholder("1 to 10000").fill("500")
            page.get_by_text("4", exact=True).first.click()
            page.get_by_placeholder("one line: why do you expect this?").first.fill("HBM")
            page.get_by_role("button", name="Lock prediction").first.click()
            page.get_by_text("Instrument:").wait_for()
            # before any save: the explain form and the second prediction are both to do
            page.wait_for_timeout(1000)
            assert page.locator(AMBER).count() == 2
            page.get_by_label("What does the instrument show?").fill("2000 GB/s")
            page.get_by_label("Why does it differ from your prediction?").fill("only bytes")
            page.get_by_role("button", name="Save").click()
            page.get_by_text("Saved ✓ at").wait_for()
            page.wait_for_timeout(1000)
            assert page.locator(AMBER).count() == 1  # only the prediction still to lock

            page.reload()
            page.get_by_text("Saved ✓ at").wait_for()
            page.wait_for_timeout(1500)
            assert page.get_by_label("What does the instrument show?").input_value() == \
                "2000 GB/s"
            for scheme in SCHEMES:
                use_scheme(page, scheme)
                # the saved form is not framed as unsaved
                assert page.locator(AMBER).count() == 1, scheme
                page.screenshot(path=str(artifacts / f"explain-reload-{scheme}.png"),
                                full_page=True)
        finally:
            ctx.close()
