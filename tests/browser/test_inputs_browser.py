"""Typed numbers in a real browser: Lab 3's circuit-weight boxes
refuse 0, -5 and 1e9 with a message and keep the last good weight; Lab 2's batch refuses 12.5
(and 0) with a message, and its instrument keeps the last good batch. Lab 4's
first prediction refuses "3.9 ms" (its box is in ×), reads "5,5" as 5.5 and says "You are
locking 5.5 ×" before a second press locks it; Lab 3's untouched slider asks for a second press.
Each message is shot in light and dark (the servers' theme is "system", which follows the
browser's colour scheme live): artifacts/browser/inputs-{lab03,lab02,lab04-lock,lab03-slider}-
<theme>.png.
"""

from __future__ import annotations


import pytest
from browser_support import REPO, contrast_in_schemes, shoot_schemes, text_contrast
from test_labs_browser import LOCK, fill_first_prediction, figures, wait_until

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LAB2 = REPO / "labs" / "lab_02_design_challenge.py"
LAB3 = REPO / "labs" / "lab_03_precision_rho.py"
LAB4 = REPO / "labs" / "lab_04_fusion.py"


def _type(page, box, text: str) -> None:
    box.fill(text)
    box.press("Enter")
    box.blur()


def _shows(page, text: str) -> bool:
    """Whether ``text`` is on the page (get_by_text reads inside marimo's shadow roots, where
    callouts render; innerText does not)."""
    return page.get_by_text(text).count() > 0


def test_circuit_weights_refuse_out_of_range_and_keep_the_last_good(page, artifacts,
                                                                    lab_servers):
    with lab_servers.run(LAB3) as server:
        page.goto(server.url)
        # the boxes belong to Part 4's explorer, which opens once Predictions 1 to 3 are locked
        for k in range(1, 4):
            page.get_by_role("button", name=LOCK).first.wait_for(state="visible")
            fill_first_prediction(page)
            # the locked card replaces the form before the next one is filled
            wait_until(page, lambda: page.get_by_text("Locked prediction:").count() >= k,
                       f"Prediction {k} locked")
        box = page.get_by_role("textbox", name="fp16", exact=True)
        box.wait_for(state="visible")
        for typed in ("0", "-5", "1e9"):
            _type(page, box, typed)
            wait_until(page, lambda: _shows(page, f"{typed} is out of range: enter a value from "
                                                  "0.001 to 100"), f"the message for {typed}")
            assert _shows(page, "keeps the last accepted value, 1.")
        page.get_by_text("keeps the last accepted value").first.scroll_into_view_if_needed()
        shoot_schemes(page, lambda theme: artifacts / f"inputs-lab03-{theme}.png")
        _type(page, box, "2")
        wait_until(page, lambda: not _shows(page, "is out of range"), "the message to go")


def test_batch_takes_whole_numbers_and_the_instrument_keeps_the_last_good(page, artifacts,
                                                                          lab_servers):
    with lab_servers.run(LAB2) as server:
        page.goto(server.url)
        page.get_by_role("button", name=LOCK).first.wait_for(state="visible")
        # Part 3 (your design, whose figures name the batch) opens once both predictions are
        # locked
        fill_first_prediction(page)
        page.get_by_role("button", name=LOCK).first.wait_for(state="visible")
        fill_first_prediction(page)
        wait_until(page, lambda: any("Decode · one layer · batch 1," in f
                                     for f in figures(page)), "Part 3's figures")
        box = page.get_by_role("textbox", name="Batch (sequences at once)").first
        _type(page, box, "7")
        wait_until(page, lambda: any("batch 7," in f for f in figures(page)), "batch 7")
        for typed, says in (("12.5", "12.5 is not a whole number of sequences"),
                            ("0", "0 sequences is out of range")):
            _type(page, box, typed)
            wait_until(page, lambda: _shows(page, says), f"the message for {typed}")
            assert _shows(page, "keeps the last accepted value, 7.")
            assert any("batch 7," in f for f in figures(page))  # nothing downstream changed
            assert not any(f"batch {typed}," in f for f in figures(page))
        page.get_by_text("keeps the last accepted value").first.scroll_into_view_if_needed()
        shoot_schemes(page, lambda theme: artifacts / f"inputs-lab02-{theme}.png")


def _assert_readable(page, text: str) -> None:
    """The form's message that guards a lock reads at 4.5:1 or more in both schemes (marimo's
    own colour for it is about 1.9:1 in the dark theme: labs/labs.css)."""
    ratios = contrast_in_schemes(page, page.get_by_text(text).first)
    assert min(ratios.values()) >= 4.5, f"{text!r} is hard to read: contrast {ratios}"


def _first_form(page):
    form = page.locator("form").filter(has=page.get_by_role("button", name=LOCK)).first
    form.wait_for(state="visible")
    form.scroll_into_view_if_needed()
    form.get_by_text("3", exact=True).first.click()
    form.get_by_placeholder("one line: why do you expect this?").fill("fewer passes over HBM")
    return form


def test_a_decimal_comma_is_shown_as_stored_before_it_locks(page, artifacts, lab_servers):
    with lab_servers.run(LAB4) as server:
        page.goto(server.url)
        form = _first_form(page)
        box = form.get_by_role("textbox").first
        box.fill("3.9 ms")
        form.get_by_role("button", name=LOCK).click()
        wait_until(page, lambda: _shows(page, "this box is in ×"), "the unit message")
        box.fill("5,5")
        form.get_by_role("button", name=LOCK).click()
        wait_until(page, lambda: _shows(page, "You are locking 5.5 ×"), "the preview")
        assert not _shows(page, "Locked prediction:")
        _assert_readable(page, "You are locking 5.5 ×")
        shoot_schemes(page, lambda theme: artifacts / f"inputs-lab04-lock-{theme}.png")
        form.get_by_role("button", name=LOCK).click()
        wait_until(page, lambda: _shows(page, "Locked prediction:"), "the lock")
        assert page.get_by_text("5.5 ×").count() > 0 and not _shows(page, "55 ×")


def test_an_untouched_slider_needs_a_deliberate_second_press(page, artifacts, lab_servers):
    with lab_servers.run(LAB3) as server:
        page.goto(server.url)
        form = _first_form(page)
        form.get_by_role("button", name=LOCK).click()
        wait_until(page, lambda: _shows(page, "The slider is still where it started"),
                   "the question")
        assert not _shows(page, "Locked prediction:")
        _assert_readable(page, "The slider is still where it started")
        shoot_schemes(page, lambda theme: artifacts / f"inputs-lab03-slider-{theme}.png")
        form.get_by_role("button", name=LOCK).click()
        wait_until(page, lambda: _shows(page, "Locked prediction:"), "the lock")


_KNOWN_PAIRS = """<body style="background:#fff">
<p id=black style="color:#000">black on white</p>
<div style="background:#191111"><p id=marimo-dark style="color:#72232d">marimo's dark red</p></div>
<div style="background:rgba(0,0,0,0.5)"><p id=veiled style="color:#fff">over 50% black</p></div>
<p id=faded style="color:#000; opacity:0.5">black at half opacity</p>
<div id=host></div>
<script>document.getElementById('host').attachShadow({mode: 'open'}).innerHTML =
  '<div style="background:#191111"><span id=shadowed style="color:#ff9592">red-11</span></div>';
</script></body>"""


def test_the_contrast_reader_agrees_with_hand_computed_ratios(browser):
    # WCAG 2 ratios worked by hand: 21:1; #72232d on #191111 1.77:1; white on the 50% grey that
    # black at half alpha makes of white, and black at half opacity on white, both 3.98:1;
    # #ff9592 on #191111 inside a shadow root 8.82:1
    page = browser.new_page()
    try:
        page.set_content(_KNOWN_PAIRS)
        ratios = {name: round(text_contrast(page.locator(f"#{name}")), 2)
                  for name in ("black", "marimo-dark", "veiled", "faded")}
        ratios["shadowed"] = round(text_contrast(page.locator("#host #shadowed")), 2)
    finally:
        page.close()
    assert ratios == pytest.approx({"black": 21.0, "marimo-dark": 1.77, "veiled": 3.98,
                                    "faded": 3.98, "shadowed": 8.82}, abs=0.05), ratios
