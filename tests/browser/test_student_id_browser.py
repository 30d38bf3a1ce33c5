"""The student-id form a first visit shows, in Debian chromium: its placeholder is read whole.

Runs the tiny test lab (tests/_lock_lab.py) as a student with no id yet (no
``ROOFLINE_STUDENT_ID``), theme "system", at a laptop's and a desktop's width, light and dark
(artifacts/browser/student-id-<width>-<theme>.png). At marimo's default width the box showed
"e.g. your university l" and its 0/64 counter on top of the rest.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import (SLOW_MS, isolated_env, marimo_run, shoot_schemes, theme_config)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LOCK_LAB = Path(__file__).resolve().parents[1] / "_lock_lab.py"
PLACEHOLDER = "e.g. your university login"

#: The placeholder's width as drawn in the box's font, and the room the box leaves for text
#: (its width less its padding; the right padding holds the character counter).
_ROOM = """el => {
  const style = getComputedStyle(el);
  const ctx = document.createElement('canvas').getContext('2d');
  ctx.font = style.font;
  return [ctx.measureText(el.placeholder).width,
          el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight)];
}"""


def test_the_student_id_placeholder_is_not_cut_off(browser, artifacts, tmp_path):
    env = isolated_env(tmp_path)
    env.pop("ROOFLINE_STUDENT_ID")  # a first visit: the lab asks for the id
    theme_config(tmp_path, "system")
    with marimo_run(LOCK_LAB, env) as url:
        for width in (900, 1280):
            context = browser.new_context(viewport={"width": width, "height": 900},
                                          color_scheme="light")
            page = context.new_page()
            page.set_default_timeout(SLOW_MS)
            try:
                page.goto(url)
                box = page.get_by_placeholder(PLACEHOLDER)
                box.wait_for(state="visible")
                text, room = box.evaluate(_ROOM)
                assert text <= room, (f"at {width} px the placeholder needs {text:.0f} px and "
                                      f"the box leaves {room:.0f}")
                around = box.bounding_box()
                clip = {"x": 0, "y": max(0, around["y"] - 80), "width": width, "height": 220}
                shoot_schemes(page, lambda theme: artifacts / f"student-id-{width}-{theme}.png",
                              clip=clip)
            finally:
                context.close()
