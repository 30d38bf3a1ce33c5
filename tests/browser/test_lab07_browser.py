"""Lab 7 in a real browser: lock Part 1's four predictions (its views wait for all four),
see the roofline's answer, press the run button and get the measured step; lock prediction 5
and get every operator of that real decode step against its bound on this machine's roofline
(hover: name, shapes, FLOPs, bytes, time). The measured page
is shot in light and dark (artifacts/browser/lab07-*.png): the server's theme is "system",
which follows the browser's colour scheme live, so one profiled run is looked at in both.

The generic flow (gate, lock, slider, reload) covers Lab 7 in test_labs_browser.py; this one
adds what only Lab 7 has: a measurement started from the page, with torch, on this CPU.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from browser_support import FIGURE, shoot_schemes

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LAB = Path(__file__).resolve().parents[2] / "labs" / "lab_07_your_model.py"
MEASURE_MS = 600_000  # a busy 2-core machine can take minutes to profile the decode steps


def _operator_figure(page) -> dict:
    for raw in page.locator(FIGURE).evaluate_all(
            "els => els.map(e => e.getAttribute('data-figure') || '')"):
        if "Every operator of a batch-1 decode step" in raw:
            return json.loads(raw)
    raise AssertionError("no operator roofline on the page")


def _lock_next(page, answer: str | None, number: str | None = None) -> None:
    """Lock the first open prediction form: a choice by its text, or a typed number."""
    form = page.locator("form").filter(
        has=page.get_by_role("button", name="Lock prediction")).first
    form.scroll_into_view_if_needed()
    if answer:
        form.get_by_text(answer, exact=False).first.click()
    else:
        form.locator("input[placeholder*=' to ']").first.fill(number)  # "lo to hi"
    form.get_by_text("3", exact=True).first.click()
    form.get_by_placeholder("one line: why do you expect this?").fill("a reason")
    form.get_by_role("button", name="Lock prediction").click()
    page.wait_for_timeout(2000)


def _figures(page) -> list[str]:
    return page.locator(FIGURE).evaluate_all(
        "els => els.map(e => e.getAttribute('data-figure') || '')")


def test_lock_then_profile_a_decode_step_in_the_browser(browser, lab_servers, artifacts):
    pytest.importorskip("torch")
    with lab_servers.run(LAB) as server:  # marimo follows the browser's scheme
        url = server.url
        ctx = browser.new_context(viewport={"width": 1280, "height": 1400}, color_scheme="light")
        try:
            page = ctx.new_page()
            page.set_default_timeout(90_000)
            page.goto(url)
            # Part 1 asks its four predictions first: its views wait for all four
            _lock_next(page, "Weight GEMMs")
            _lock_next(page, "Attention over the KV cache")
            _lock_next(page, None, "90")
            assert page.get_by_text("The roofline's answer: one decode step").count() == 0
            assert page.get_by_text("Lock Predictions").count() + \
                page.get_by_text("Lock Prediction 4 first").count() > 0
            _lock_next(page, None, "0.6")
            page.get_by_text("The roofline's answer: one decode step at batch 1").first.wait_for()
            button = page.get_by_role("button", name="Profile decode steps on this machine")
            button.scroll_into_view_if_needed()
            button.click()
            page.get_by_text("Measured step").first.wait_for(timeout=MEASURE_MS)
            # each operator against its own bound is Prediction 5's question: not before it
            assert not [raw for raw in _figures(page)
                        if "Every operator of a batch-1 decode step" in raw]
            page.get_by_text("Measured step").first.scroll_into_view_if_needed()
            page.wait_for_timeout(1500)
            shoot_schemes(page, lambda scheme: artifacts / f"lab07-measured-{scheme}.png")
            _lock_next(page, "The large weight GEMMs")
            page.get_by_text("Every operator of a batch-1 decode step").first.wait_for()
            fig = _operator_figure(page)
            points = [t for t in fig["data"] if t.get("mode") == "markers"]
            assert points and all(t["name"].startswith(("memory-bound", "compute-bound"))
                                  for t in points)
            hover = " ".join(h for t in points for h in t["hovertext"])
            for word in ("aten.mm", "shapes", "FLOPs", "bytes", "measured", "roofline bound"):
                assert word in hover, word
            page.get_by_text("Every operator of a batch-1 decode step").first \
                .scroll_into_view_if_needed()
            page.wait_for_timeout(1500)
            shoot_schemes(page, lambda scheme: artifacts / f"lab07-operators-{scheme}.png")
            assert page.get_by_text("Traceback").count() == 0
        finally:
            ctx.close()
