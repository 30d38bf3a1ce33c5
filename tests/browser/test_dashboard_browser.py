"""The instructor dashboard in Chromium: a 500-student synthetic class plus the hostile ledgers
(classroom.write_hostile_ledgers), opened on a choice item with long labels and on the tampered
student whose flags name item ids full of backticks, HTML, markdown and links.

Checked: no element is made from student text (no link, image, bold, script, event handler; no
dialog opens), the text is visible as typed, plotly's toolbar never covers a figure's title, long
choice labels leave the bars their room and the title whole, and the page does not scroll
sideways. The server's theme is "system", which follows the browser's colour scheme live: the
page is then switched to dark, checked for elements made from student text again, and every
cell is shot in both schemes: artifacts/browser/dashboard-<scheme>-*.png.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import REPO, SCHEMES, isolated_env, marimo_run, use_scheme

from labs.core import classroom
from labs.core.course import catalogue

pytestmark = [pytest.mark.browser, pytest.mark.slow]

DASHBOARD = REPO / "labs" / "instructor_dashboard.py"

# Walks the page and every open shadow root; returns what student text must never make.
FIND_MADE_FROM_TEXT = """() => {
  const bad = [];
  const visit = (root) => {
    for (const el of root.querySelectorAll('*')) {
      const tag = el.tagName.toLowerCase();
      const text = (el.textContent || '').trim();
      for (const a of el.getAttributeNames()) {
        if (a.startsWith('on')) bad.push(`<${tag} ${a}>`);
        if (/(^|:)href$|^src$/.test(a) && (el.getAttribute(a) || '').includes('evil.example'))
          bad.push(`<${tag} ${a}=${el.getAttribute(a)}>`);
      }
      if (tag === 'img' || tag === 'iframe' || tag === 'object' || tag === 'embed')
        bad.push(`<${tag} src=${el.getAttribute('src')}>`);
      if (tag === 'b' && (text === 'bold' || text === 'x')) bad.push('<b>' + text);
      if (/^h[1-6]$/.test(tag) && text === 'heading') bad.push('<' + tag + '>heading');
      if (tag === 'a' && el.closest('.js-plotly-plot')) bad.push('<a> in a figure');
      if (el.shadowRoot) visit(el.shadowRoot);
    }
  };
  visit(document);
  return bad;
}"""


def _boxes_overlap(a: dict, b: dict) -> bool:
    return not (a["x"] + a["width"] <= b["x"] or b["x"] + b["width"] <= a["x"]
                or a["y"] + a["height"] <= b["y"] or b["y"] + b["height"] <= a["y"])


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    folder = tmp_path_factory.mktemp("class")
    classroom.write_synthetic_class(folder, 500, seed=11)
    classroom.write_hostile_ledgers(folder)
    # the choice item whose longest option label is longest: the hardest to lay out
    item = max((i for i in catalogue.items() if i.kind == "choice"),
               key=lambda i: max(len(label) for label, _ in i.options))
    tmp = tmp_path_factory.mktemp("dashboard-env")
    cfg = tmp / "config" / "marimo"
    cfg.mkdir(parents=True)
    (cfg / "marimo.toml").write_text('[display]\ntheme = "system"\n')
    with marimo_run(DASHBOARD, isolated_env(tmp), "--ledgers", str(folder), "--item",
                    item.item_id, "--student", "tamper01") as url:
        yield url, item


def test_dashboard_in_chromium(browser, dashboard, artifacts):
    url, item = dashboard
    ctx = browser.new_context(viewport={"width": 1280, "height": 1000}, color_scheme="light")
    page = ctx.new_page()
    page.set_default_timeout(180_000)
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    try:
        page.goto(url)
        figs = page.locator("marimo-plotly")
        page.locator(".gtitle", has_text="Timeline of tamper01").wait_for()
        page.get_by_text("impossible_order").first.wait_for()
        assert figs.count() == 4
        for i in range(figs.count()):
            figs.nth(i).locator(".main-svg").first.wait_for(state="visible")

        # student text is there, as typed ...
        page.get_by_text("<img src=x onerror=alert(1)>", exact=False).first.wait_for()
        page.get_by_text("[mallory](http://evil.example/m)").first.wait_for()
        # ... and makes nothing
        made = page.evaluate(FIND_MADE_FROM_TEXT)
        assert made == [], f"elements made from student text: {made[:8]}"
        assert dialogs == []

        for i in range(figs.count()):
            fig = figs.nth(i)
            fig.scroll_into_view_if_needed()
            fig.locator(".nsewdrag").first.hover()
            bar = fig.locator(".modebar").first
            bar.wait_for(state="visible")
            title = fig.locator(".gtitle").first.bounding_box()
            svg = fig.locator(".main-svg").first.bounding_box()
            assert not _boxes_overlap(bar.bounding_box(), title), (i, bar.bounding_box(), title, svg)
            assert svg["x"] <= title["x"] and title["x"] + title["width"] <= svg["x"] + svg[
                "width"] + 1, f"figure {i}: title cut"
        # the choice item's bars keep their room beside long labels
        dist = figs.first
        plot = dist.locator(".nsewdrag").first.bounding_box()
        whole = dist.locator(".main-svg").first.bounding_box()
        assert plot["width"] >= 0.45 * whole["width"], (plot, whole)
        assert page.evaluate(
            "document.documentElement.scrollWidth <= window.innerWidth + 1"), "sideways scroll"

        cells = page.locator(".output-area")
        for scheme in SCHEMES:
            use_scheme(page, scheme)
            made = page.evaluate(FIND_MADE_FROM_TEXT)
            assert made == [], f"{scheme}: elements made from student text: {made[:8]}"
            for i in range(cells.count()):
                cell = cells.nth(i)
                box = cell.bounding_box()
                if box and box["height"] > 5:
                    cell.scroll_into_view_if_needed()
                    cell.screenshot(path=str(Path(artifacts) / f"dashboard-{scheme}-{i:02d}.png"))
    finally:
        ctx.close()


def test_dashboard_opens_on_a_student_id_with_a_leading_zero(browser, tmp_path):
    """Marimo reads ``--student 02310259`` as the number 2310259; the dashboard
    still opens on that student (ids are text)."""
    from labs.core.course.classroom.canvas_class import write_canvas_class

    cls = write_canvas_class(tmp_path / "c", 16, seed=9)
    victim = cls.situation["victim"]
    last = victim.name.split()[1]
    with marimo_run(DASHBOARD, isolated_env(tmp_path), "--ledgers", str(cls.submissions),
                    "--config", str(cls.config), "--student", victim.sis_id) as url:
        page = browser.new_page(viewport={"width": 1280, "height": 1000})
        page.set_default_timeout(180_000)
        try:
            page.goto(url)
            page.locator(".gtitle", has_text=f"Timeline of {victim.sis_id}").wait_for()
            page.get_by_text(f"{victim.sis_id} · {last}").first.wait_for()
        finally:
            page.close()
