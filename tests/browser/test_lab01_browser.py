"""Lab 1 in a real browser (``marimo run --reveal`` + Debian chromium): the lever chart draws
the sentence that says why its AI is not Part 1's inside the figure, and a step of Part 6's
explorer moves only the explorer (Parts 1 and 2 show Priya's own GEMM whatever its sliders).
"""

from __future__ import annotations

import json

import pytest
from browser_support import FIGURE, REPO
from test_labs_browser import figures, settle, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LAB = REPO / "labs" / "lab_01_memory_wall.py"


def _titles(page) -> list[str]:
    out = []
    for raw in figures(page):
        try:
            out.append(json.loads(raw)["layout"]["title"]["text"])
        except (ValueError, KeyError, TypeError):
            out.append("")
    return out


def _explorer_title(page) -> str:
    return next((t for t in _titles(page) if t.startswith("Your GEMM on the")), "")


def _explorer_ai(page) -> str:
    for raw in figures(page):
        fig = json.loads(raw)
        if fig["layout"]["title"]["text"].startswith("Your GEMM on the"):
            return json.dumps([t.get("x") for t in fig["data"] if t.get("name", "").startswith(
                "predicted")])
    return ""


def test_lever_note_is_drawn_and_the_explorer_moves_alone(browser, lab_servers):
    with lab_servers.run(LAB, "--reveal") as server:
        page = browser.new_page(viewport={"width": 1280, "height": 1500})
        page.set_default_timeout(90_000)
        try:
            page.goto(server.url)
            page.get_by_text("Reference answer (instructor copy):").first.wait_for()
            settle(page, lambda p: len(figures(p)))
            # the lever chart's note is drawn in the figure, inside its frame
            levers = page.locator(FIGURE).filter(has_text="each lever alone").first
            levers.scroll_into_view_if_needed()
            note = levers.locator("text.annotation-text", has_text="counts the bytes").first
            note.wait_for(state="visible")
            box, frame = note.bounding_box(), levers.bounding_box()
            assert box["x"] >= frame["x"] and box["x"] + box["width"] <= frame["x"] + \
                frame["width"], "the lever chart's note runs out of its figure"
            drawn = " ".join(levers.locator("text.annotation-text").all_text_contents())
            assert "Part 1's" in drawn and "FLOP/B today" in drawn

            def others(p):  # every figure but the explorer's, as marimo sent it
                return [f for f, t in zip(figures(p), _titles(p))
                        if not t.startswith("Your GEMM on the")]

            still = others(page)
            before = _explorer_ai(page)
            m = page.locator("marimo-ui-element", has_text="M (rows: tokens)").get_by_role(
                "slider").first
            m.scroll_into_view_if_needed()
            m.focus()
            m.press("ArrowRight")
            wait_until(page, lambda: _explorer_ai(page) != before,
                       "the explorer following its M slider")
            settle(page, _explorer_ai)
            assert others(page) == still, "an explorer step moved another part's figure"
        finally:
            page.close()
