"""Lab 6 in a real browser (``marimo run`` + Debian chromium), each step shot in light and dark
(the server's theme is "system", which follows the browser's colour scheme live):

1. fresh page: every instrument is behind a closed gate, no figure is drawn;
2. locking prediction 1 opens its gate and draws the all-reduce cost model;
3. the participants slider at both extremes (n = 2 and n = 8, one node) redraws the figure;
4. a reload keeps the lock (restored from the ledger);
5. the instructor copy (``--reveal``) draws every figure of the lab: each is screenshot on its
   own for a visual check (artifacts/browser/lab06-*.png).
"""

from __future__ import annotations

import json

import pytest
from browser_support import FIGURE, REPO, SCHEMES, KernelRuns, shoot_schemes, use_scheme
from test_labs_browser import (fill_first_prediction, figures, gate_count, gates_and_figures,
                               settle, show_drawn_figure, wait_until)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LAB = REPO / "labs" / "lab_06_many_chips.py"


def _page(browser, scheme: str = "light"):
    ctx = browser.new_context(viewport={"width": 1280, "height": 1500}, color_scheme=scheme)
    page = ctx.new_page()
    page.set_default_timeout(90_000)
    KernelRuns.watch(page)  # settle() ends once the kernel is done
    return ctx, page


def _titles(page) -> list[str]:
    out = []
    for raw in figures(page):
        try:
            out.append(json.loads(raw)["layout"]["title"]["text"])
        except (ValueError, KeyError, TypeError):
            out.append("")
    return out


def _slider_value_changes_title(page, slider, key: str, want: str) -> None:
    slider.scroll_into_view_if_needed()
    slider.focus()
    slider.press(key)
    wait_until(page, lambda: any(want in t for t in _titles(page)),
               f"a figure titled with {want!r} after {key}")


def test_lab06_gate_lock_slider_extremes_reload(browser, lab_servers, artifacts):
    # theme "system": marimo follows the browser's colour scheme
    with lab_servers.run(LAB) as server:
        url = server.url
        ctx, page = _page(browser)
        try:
            page.goto(url)
            page.get_by_role("button", name="Lock prediction").first.wait_for(state="visible")
            gates0, figs0 = settle(page, gates_and_figures)
            assert gates0 >= 5 and figs0 == 0, (gates0, figs0)  # nothing drawn before a lock
            shoot_schemes(page, lambda scheme: artifacts / f"lab06-locked-{scheme}.png")

            fill_first_prediction(page)
            wait_until(page, lambda: gate_count(page) < gates0, "the Part 1 gate to open")
            settle(page, gates_and_figures)
            assert any("Ring all-reduce, n = 8" in t for t in _titles(page))
            show_drawn_figure(page, 0)
            shoot_schemes(page, lambda scheme: artifacts / f"lab06-unlocked-{scheme}.png")

            slider = page.get_by_role("slider").first  # Part 1's participants n
            _slider_value_changes_title(page, slider, "Home", "n = 2")
            _slider_value_changes_title(page, slider, "End", "n = 8")
            _slider_value_changes_title(page, slider, "Home", "n = 2")
            show_drawn_figure(page, 0)
            shoot_schemes(page, lambda scheme: artifacts / f"lab06-slider-min-{scheme}.png")
            gates1 = gate_count(page)

            page.reload()
            page.get_by_text("Locked prediction").first.wait_for(state="visible")
            gates2, figs2 = settle(page, gates_and_figures)
            assert gates2 == gates1 and figs2 >= 1
        finally:
            ctx.close()


def test_lab06_instructor_copy_draws_every_figure(browser, lab_servers, artifacts):
    with lab_servers.run(LAB, "--reveal") as server:
        url = server.url
        ctx, page = _page(browser)
        try:
            page.goto(url)
            page.get_by_text("Key takeaways").first.wait_for(state="visible")
            _, n = settle(page, gates_and_figures)
            assert gate_count(page) == 0 and n >= 5
            assert page.get_by_text("That combination does not work").count() == 0
            # the review's corrections (F9-F13), where a student reads them
            assert any("One block of 2 matmuls per all-reduce" in t for t in _titles(page))
            titles = _titles(page)
            assert all(titles), f"a figure has no title: {titles}"
            for scheme in SCHEMES:
                use_scheme(page, scheme)
                for words, shot in (("NVLink SHARP sums the data inside the switch", "nvls"),
                                    ("beyond 8 GPUs the cards span two boxes", "p4-question"),
                                    ("30 steps at 16-way, 2 of them between boxes",
                                     "p4-reveal"),
                                    ("with NCCL's Ring algorithm (NCCL_ALGO=Ring)", "p5-question"),
                                    ("Only behind the backward pass", "p5-wait")):
                    where = page.get_by_text(words).first
                    where.scroll_into_view_if_needed()
                    where.screenshot(path=str(artifacts / f"lab06-{shot}-{scheme}.png"))
                for i in range(len(titles)):
                    show_drawn_figure(page, i)
                    page.locator(FIGURE).nth(i).screenshot(
                        path=str(artifacts / f"lab06-figure{i}-{scheme}.png"))
        finally:
            ctx.close()
