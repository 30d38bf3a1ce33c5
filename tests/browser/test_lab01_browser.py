"""Lab 1 in a real browser (``marimo run --reveal`` + Debian chromium): Part 5's levers follow
the Part 1 sliders only while "your GEMM from the Part 1 sliders" is picked.

Part 5 reads its GEMM through ``mo.state``, set only when the GEMM changes (issue 15: a Part 1
step re-runs no Part 5 cell while Part 5 shows Priya's GEMM). State updates run only in a live
kernel, not in ``app.run``, so this is checked here.
"""

from __future__ import annotations

import json
import re

import pytest
from browser_support import REPO
from test_labs_browser import figures, settle, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LAB = REPO / "labs" / "lab_01_memory_wall.py"


def _levers_title(page) -> str:
    for raw in figures(page):
        try:
            title = json.loads(raw)["layout"]["title"]["text"]
        except (ValueError, KeyError, TypeError):
            continue
        if "each lever alone" in title:
            return title
    return ""


def _step_m(page, key: str) -> None:
    slider = page.get_by_role("slider").first  # Part 1's M (rows: tokens)
    slider.scroll_into_view_if_needed()
    slider.focus()
    slider.press(key)


def test_levers_follow_the_part1_gemm_only_when_picked(browser, lab_servers):
    with lab_servers.run(LAB, "--reveal") as server:
        url = server.url
        page = browser.new_page(viewport={"width": 1280, "height": 1500})
        page.set_default_timeout(90_000)
        try:
            page.goto(url)
            page.get_by_text("Reference answer (instructor copy):").first.wait_for()
            settle(page, lambda p: len(figures(p)))
            assert _levers_title(page).startswith("GEMM 16 × 8,192 × 8,192 (bf16")

            _step_m(page, "ArrowRight")  # Priya's GEMM shown: Part 5 stays as it was
            settle(page, _levers_title)
            assert _levers_title(page).startswith("GEMM 16 × 8,192 × 8,192 (bf16")

            page.get_by_role("radio", name="your GEMM from the Part 1 sliders").check()
            wait_until(page, lambda: _levers_title(page).startswith("GEMM 32 × 8,192"),
                       "the levers on the Part 1 GEMM (M = 32)")
            _step_m(page, "ArrowRight")
            wait_until(page, lambda: _levers_title(page).startswith("GEMM 64 × 8,192"),
                       "the levers following a Part 1 step (M = 64)")

            page.get_by_role("radio", name=re.compile("^Priya's GEMM")).check()
            wait_until(page, lambda: _levers_title(page).startswith("GEMM 16 × 8,192"),
                       "the levers back on Priya's GEMM")
        finally:
            page.close()
