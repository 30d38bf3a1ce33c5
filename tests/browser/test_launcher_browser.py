"""What a student sees after ``roofline-labs``, in Debian chromium.

The launcher runs as a student whose own marimo config is hostile to the labs (cells not run on
open, lazy re-runs, a tiny output limit, and marimo's default light theme, which ignores a dark
system setting): its workspace settings must win. The first page lists
only the labs and says where the ledger lives; a lab opens in app view (no code, no "Ancestor
stopped" notices); locking a prediction opens its instrument and draws a figure; the code view
(Ctrl + .) shows code and still no "Ancestor stopped" notice. The workspace's theme is
"system" whatever the student's own, so the labs follow the browser's colour scheme live: each
step is shot in light and dark,
artifacts/browser/launcher-{index,lab,unlocked,code}-<theme>.png.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from browser_support import (FIGURE, SLOW_MS, contrast_in_schemes, isolated_env,
                             requests_off_the_machine, shoot_schemes)
from test_labs_browser import (LOCK, fill_first_prediction, figures, gate_count, lock_count,
                               settle, wait_until)

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from test_launcher import start_launcher, stop  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.slow]

HOSTILE = """\
[runtime]
auto_instantiate = false
on_cell_change = "lazy"
output_max_bytes = 3000

[display]
theme = "light"
"""

_VISIBLE_NOTICES = """() => [...document.querySelectorAll('*')].filter(e =>
    e.childElementCount === 0 && /Ancestor stopped|wasn't run because an ancestor/.test(
    e.textContent) && e.offsetParent !== null).length"""
_VISIBLE_CODE = "() => [...document.querySelectorAll('.cm-editor')].filter(e => e.offsetParent !== null).length"


#: A message line as marimo's form draws one (class ``text-error``), put in the shadow root of
#: the first prediction form's widget, outside the tree React draws (so the form is untouched).
_FORM_MESSAGE_PROBE = """() => {
  const host = [...document.querySelectorAll('*')].find(
      e => e.shadowRoot && e.shadowRoot.querySelector('form'));
  const probe = document.createElement('div');
  probe.id = 'css-probe'; probe.className = 'text-sm p-2 text-error'; probe.textContent = 'probe';
  host.shadowRoot.appendChild(probe);
}"""


def test_student_first_view_is_the_lab(browser, artifacts, tmp_path):
    env = isolated_env(tmp_path)
    config = Path(env["XDG_CONFIG_HOME"]) / "marimo" / "marimo.toml"
    config.parent.mkdir(parents=True)
    config.write_text(HOSTILE, encoding="utf-8")
    proc, links, index = start_launcher(tmp_path / "ws", env)
    context = browser.new_context(viewport={"width": 1280, "height": 1400}, color_scheme="light")
    page = context.new_page()
    page.set_default_timeout(SLOW_MS)
    leaving = requests_off_the_machine(page)
    try:
        page.goto(index.as_uri())
        labs = page.locator("li.lab a")
        assert labs.count() == len(links) and labs.count() >= 4
        titles = labs.all_inner_texts()
        assert all(re.match(r"Lab \d+ · ", t) for t in titles), titles
        body = page.inner_text("body")
        assert "gallery" not in body.lower() and "dashboard" not in body.lower()
        assert "roofline-ledger-browser-test.jsonl" in body
        shoot_schemes(page, lambda theme: artifacts / f"launcher-index-{theme}.png",
                      marimo=False, full_page=True)

        labs.first.click()
        page.get_by_role("button", name=LOCK).first.wait_for(state="visible")  # ran on open
        # 4 s of quiet, not the kernel's completed run: in marimo's editor a busy machine can
        # draw the forms more than half a second after the run (the form count then came short)
        gates, forms = settle(page, lambda p: (gate_count(p), lock_count(p)), quiet_ms=4000)
        assert gates >= 1 and forms >= 1
        assert page.evaluate(_VISIBLE_CODE) == 0, "the app view shows code"
        assert page.evaluate(_VISIBLE_NOTICES) == 0, "marimo's Ancestor-stopped notices show"
        shoot_schemes(page, lambda theme: artifacts / f"launcher-lab-{theme}.png")
        # the labs' style sheet reaches the forms' shadow roots in marimo's editor too (the
        # workspace's own sheet does not): a form message's colour, on a probe in the form
        page.evaluate(_FORM_MESSAGE_PROBE)
        ratios = contrast_in_schemes(page, page.locator("#css-probe"))
        assert min(ratios.values()) >= 4.5, f"a form message is hard to read here: {ratios}"
        page.locator("#css-probe").evaluate("e => e.remove()")

        before = len(figures(page))
        fill_first_prediction(page)
        wait_until(page, lambda: len(figures(page)) > before and lock_count(page) == forms - 1,
                   "the first instrument after locking its prediction")
        assert "too large" not in page.inner_text("body").lower()
        page.locator(FIGURE).first.scroll_into_view_if_needed()
        page.locator(f"{FIGURE} .main-svg").first.wait_for(state="visible")
        shoot_schemes(page, lambda theme: artifacts / f"launcher-unlocked-{theme}.png")

        page.keyboard.press("Control+Period")  # the code, for the curious
        page.locator(".cm-editor").first.wait_for(state="visible")
        page.wait_for_timeout(1000)
        assert page.evaluate(_VISIBLE_NOTICES) == 0, "Ancestor-stopped notices in the code view"
        shoot_schemes(page, lambda theme: artifacts / f"launcher-code-{theme}.png")
        # figures drawn in marimo's editor: still no request off the machine (MathJax included)
        assert leaving == [], f"requests that leave the machine: {leaving[:5]}"
    finally:
        context.close()
        stop(proc)
