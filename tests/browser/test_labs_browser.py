"""Each lab in a real browser (``marimo run`` + Debian chromium): gate, lock, slider, reload.

One flow per lab, generic enough for any lab that follows LABS_SPEC §4:
1. the fresh page shows at least one closed gate (gate notice) and a "Lock prediction" form;
2. filling the first form (an option or a number inside the printed bounds, a confidence, a
   reason) and pressing "Lock prediction" opens a gate: one notice fewer, more figures (where
   the first instrument waits for a "predict first" block, after the block's other forms);
3. moving a slider outside the prediction forms changes a figure's data;
4. reloading the page keeps the lock (restored from the ledger): same gates open, the locked card
   shown;
5. where the first instrument has no such slider (a fixed scenario), the student locks the next
   predictions until an instrument with one opens, and moves it (step 3); a lab none of whose
   instruments has one fails.
Throughout, the page makes no request off the machine (marimo's frontend asks a CDN for
MathJax whenever it draws a figure; the servers answer it locally: export.offline.serve_marimo).
Screenshots go to artifacts/browser/<lab>-{locked,unlocked,reloaded,slider}.png.
"""

from __future__ import annotations

import re
import time

import pytest
from browser_support import FIGURE, LABS, SLOW_MS, KernelRuns, requests_off_the_machine

pytestmark = [pytest.mark.browser, pytest.mark.slow]

LOCK = "Lock prediction"
GATE_MARK = "Instrument hidden."  # how style.gate_notice begins (export.GATE_TEXT)
# Figures as marimo sent them (the ``data-figure`` JSON of each <marimo-plotly>): present even
# for figures scrolled out of view, which plotly only draws once they are visible.
_FIG_JS = "els => els.map(e => e.getAttribute('data-figure') || '')"


def gate_count(page) -> int:
    return page.get_by_text(GATE_MARK, exact=True).count()


def lock_count(page) -> int:
    """The prediction forms still open (each has a "Lock prediction" button)."""
    return page.get_by_role("button", name=LOCK).count()


def figures(page) -> list[str]:
    return page.locator(FIGURE).evaluate_all(_FIG_JS)


def gates_and_figures(page) -> tuple[int, int]:
    """The closed gates and the figures on the page: what a lock or a reload changes, the
    probe :func:`settle` waits on."""
    return gate_count(page), page.locator(FIGURE).count()


def show_drawn_figure(page, index: int = 0):
    """Scroll figure ``index`` into view and wait until plotly has drawn it (an SVG)."""
    fig = page.locator(FIGURE).nth(index)
    fig.scroll_into_view_if_needed()
    fig.locator(".main-svg").first.wait_for(state="visible")


#: Resolves once the page's main thread has had nothing to do twice in a row: every message
#: received and every render it set off (React's, marimo's) has run. A starved renderer on a
#: busy machine can lag the kernel by seconds; then a quiet moment means nothing. (At most
#: 10 s for each: a page that is never idle is settled anyway.)
_FRONTEND_IDLE_JS = """() => new Promise(r => requestIdleCallback(
    () => requestIdleCallback(r, {timeout: 10000}), {timeout: 10000}))"""


def settle(page, probe, *, quiet_ms: int = 1500, timeout_ms: int = SLOW_MS):
    """Wait until ``probe(page)`` stops changing for ``quiet_ms`` (marimo streams outputs) and
    the page has drawn all it received (``_FRONTEND_IDLE_JS``; the probe is then read again).
    A page watched by :class:`KernelRuns` is settled sooner: once its kernel has finished
    every run (none queued or running, no message for half a second) and ``probe`` has not
    changed for half a second; and never while its kernel is running cells."""
    runs = KernelRuns.of(page)
    deadline = time.monotonic() + timeout_ms / 1000
    last, since = probe(page), time.monotonic()
    while time.monotonic() < deadline:
        page.wait_for_timeout(250)
        now = probe(page)
        if now != last:
            last, since = now, time.monotonic()
            continue
        if runs is not None and runs.busy and time.monotonic() - runs.last_frame < 10:
            continue  # what the running cells draw is still to come (unless it went silent)
        still = time.monotonic() - since
        if still * 1000 >= quiet_ms or (runs is not None and still >= 0.5
                                         and runs.quiet_for(0.5)):
            page.evaluate(_FRONTEND_IDLE_JS)
            now = probe(page)
            if now == last:
                return now
            last, since = now, time.monotonic()
    return last


def wait_until(page, cond, what: str, timeout_ms: int = SLOW_MS):
    deadline = time.monotonic() + timeout_ms / 1000
    while time.monotonic() < deadline:
        if cond():
            return
        page.wait_for_timeout(250)
    raise AssertionError(f"timed out waiting for {what}")


def open_lab(page, url):
    page.goto(url)
    page.get_by_role("button", name=LOCK).first.wait_for(state="visible")
    return settle(page, gates_and_figures)


def numeric_answer(placeholder: str) -> str | None:
    """A number strictly inside the bounds a numeric form prints ("1 to 1e+06")."""
    from labs.core.course.quiz import parse_number

    parts = re.split(r"\s+to\s+", placeholder or "")
    if len(parts) != 2:
        return None
    lo, hi = parse_number(parts[0]), parse_number(parts[1])
    if lo is None or hi is None:
        return None
    middle = (lo * hi) ** 0.5 if lo > 0 and hi > 0 else (lo + hi) / 2
    # a whole number where one fits: some forms count things (sequences, tokens)
    return str(round(middle)) if hi - lo >= 2 and lo <= round(middle) <= hi else f"{middle:.4g}"


def fill_first_prediction(page):
    form = page.locator("form").filter(has=page.get_by_role("button", name=LOCK)).first
    form.scroll_into_view_if_needed()
    for group in form.get_by_role("radiogroup").all():  # the answer (choice) and the confidence
        group.get_by_role("radio").nth(1 if group.get_by_role("radio").count() > 1 else 0).click()
    for box in form.get_by_role("textbox").all():
        placeholder = box.get_attribute("placeholder") or ""
        number = numeric_answer(placeholder)
        box.fill(number if number is not None else "browser test: my reason")
    locked = page.get_by_text("Locked prediction:").count()  # cards restored or locked before
    form.get_by_role("button", name=LOCK).click()
    # an untouched slider (or a number read differently from how it was typed) asks once
    # before it locks: the second press is the deliberate choice. On a busy
    # machine the question can take seconds to come back.
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        page.wait_for_timeout(250)
        if (page.get_by_text("The slider is still where it started").count()
                or page.get_by_text("You are locking").count()):
            form.get_by_role("button", name=LOCK).click()
            break
        if page.get_by_text("Locked prediction:").count() > locked:
            break
    return form


def move_sliders_until_a_figure_changes(page, limit: int = 4, above_next_form: bool = False,
                                        runs: KernelRuns | None = None) -> str | None:
    """Press keys on sliders outside the prediction forms; the first that changes a figure.

    ``above_next_form``: only sliders placed above the next unlocked prediction form (the
    widgets of the parts already unlocked; the others only feed closed gates).
    ``runs``: the page's :class:`KernelRuns`; a slider whose press the kernel has finished
    running without changing a figure is left at once (without it, after a few seconds).
    """
    sliders = [s for s in page.get_by_role("slider").all()
               if s.evaluate("e => !e.closest('form') && !e.closest('[aria-disabled=true]')")]
    if above_next_form:
        nxt = page.get_by_role("button", name=LOCK)
        limit_y = nxt.first.bounding_box()["y"] if nxt.count() else float("inf")
        sliders = [s for s in sliders if (s.bounding_box() or {"y": limit_y})["y"] < limit_y]
    for slider in sliders[:limit]:
        before = figures(page)
        slider.scroll_into_view_if_needed()
        slider.focus()
        # the first value may have been the top: then Home is what moves it
        for keys, wait_s in ((("ArrowRight",) * 3, 5), (("Home",), 4)):
            since = runs.completed if runs else 0
            for key in keys:
                slider.press(key)
            if runs is not None:
                ran = runs.wait_after(since, timeout_ms=wait_s * 1000)
                # the page draws what the kernel sent: a moment for a busy browser to catch up
                for _ in range(5 if ran else 1):
                    if figures(page) != before:
                        return slider.get_attribute("aria-valuenow") or "moved"
                    page.wait_for_timeout(200)
                if ran:  # the kernel ran this value and no figure changed: not this slider
                    break
                continue
            deadline = time.monotonic() + wait_s
            while time.monotonic() < deadline:
                page.wait_for_timeout(250)
                if figures(page) != before:
                    return slider.get_attribute("aria-valuenow") or "moved"
    return None


def shoot(page, artifacts, name: str):
    page.screenshot(path=str(artifacts / f"{name}.png"))


@pytest.mark.skipif(not LABS, reason="no labs/lab_*.py yet")
@pytest.mark.parametrize("lab", LABS, ids=[p.stem for p in LABS])
def test_gate_lock_slider_reload(lab, page, artifacts, lab_servers):
    runs = KernelRuns.watch(page)
    leaving = requests_off_the_machine(page)
    with lab_servers.run(lab) as server:
        url = server.url
        gates0, figs0 = open_lab(page, url)
        assert gates0 >= 1, f"{lab.name}: the fresh page shows no closed gate (gate notice)"
        page.evaluate("window.scrollTo(0, 0)")
        shoot(page, artifacts, f"{lab.stem}-locked")

        fill_first_prediction(page)
        # A "predict first" block asks the predictions its instrument answers together: lock
        # them all, as the student does, before the instrument opens (LABS_SPEC §3).
        while (forms := lock_count(page)) and settle(page, gates_and_figures)[0] >= gates0:
            fill_first_prediction(page)
            wait_until(page, lambda: lock_count(page) < forms,
                       f"{lab.name}: the next prediction of a predict-first block to lock")
        wait_until(page, lambda: gate_count(page) < gates0,
                   f"{lab.name}: a gate to open after '{LOCK}'")
        gates1, figs1 = settle(page, gates_and_figures)
        assert figs1 > figs0, (f"{lab.name}: locking the first prediction rendered no new "
                               f"figure ({figs0} before, {figs1} after)")
        show_drawn_figure(page, figs0)  # the first figure the lock revealed
        shoot(page, artifacts, f"{lab.stem}-unlocked")
        assert list(server.ledger.glob("roofline-ledger-browser-test*.jsonl")), \
            f"{lab.name}: the lock wrote no ledger"

        moved = move_sliders_until_a_figure_changes(page, above_next_form=True, runs=runs)

        page.reload()
        page.get_by_text("Locked prediction").first.wait_for(state="visible")
        gates2, figs2 = settle(page, gates_and_figures)
        assert gates2 == gates1, (f"{lab.name}: after a reload {gates2} gates are closed, "
                                  f"{gates1} were before (the lock was not restored)")
        assert figs2 >= figs1 > 0
        show_drawn_figure(page, figs0)
        shoot(page, artifacts, f"{lab.stem}-reloaded")

        # The first instrument has no slider of its own (a fixed scenario): lock the next
        # predictions, as the student goes on, until an instrument they open has one.
        # Each time, every slider above the next form again: one tried before may feed a
        # figure only the new lock has opened.
        while moved is None and (forms := lock_count(page)):
            fill_first_prediction(page)
            wait_until(page, lambda: lock_count(page) < forms,
                       f"{lab.name}: the next prediction to lock")
            settle(page, gates_and_figures)
            moved = move_sliders_until_a_figure_changes(page, limit=8, above_next_form=True,
                                                        runs=runs)
        if moved is not None:
            shoot(page, artifacts, f"{lab.stem}-slider")
    assert moved is not None, (f"{lab.name}: with every prediction locked, no slider outside "
                               "the forms changed a figure in the student's copy")
    # every figure drawn, the page asked nothing off the machine (MathJax included)
    assert leaving == [], f"{lab.name}: requests that leave the machine: {leaving[:5]}"
