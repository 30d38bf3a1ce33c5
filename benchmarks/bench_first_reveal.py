"""A student's first reveal, timed in chromium: from pressing "Lock prediction" on Lab 1's
first question to its first figure drawn, with and without the hidden plotly preload in the
lab's header (``labs.core.ui.style.plotly_preload``), interleaved.

    python benchmarks/bench_first_reveal.py [--rounds 3] [--lab lab_01]

Per round and variant: ``marimo run`` serves the lab as a student opens it (gates closed, a
throwaway ledger); a fresh chromium context opens it, waits for the prediction form, stays idle
6 s (the student reading and choosing), picks the first option, confidence 4 and a reason,
then presses Lock and times, with ``performance.now()``, until the first visible figure holds a
drawn plotly SVG. "without" sets ``ROOFLINE_NO_PRELOAD=1``. Prints every round (nothing is
retried) and the medians, with the date, the machine as detected and the load average.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
import bench_browser
from browser_support import serve  # bench_browser put tests/browser on the path

#: The first visible figure's arrival and its first drawn SVG (hidden elements are skipped).
FIRST_VISIBLE_JS = r"""
(() => { const E = window.__reveal = {drawn: 0};
  const check = () => {
    for (const h of document.querySelectorAll('marimo-plotly')) {
      if (!h.offsetWidth) continue;
      const root = h.shadowRoot || h;
      if (!E.drawn && root.querySelector('.main-svg')) E.drawn = performance.now(); } };
  const opts = {subtree: true, childList: true, attributes: true};
  const obs = new MutationObserver(check); obs.observe(document, opts);
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    const r = attach.call(this, init); obs.observe(r, opts); return r; };
})();"""


def one_reveal(browser, lab: Path, *, preload: bool) -> float:
    """Milliseconds from pressing Lock to the first figure drawn."""
    from playwright.sync_api import Error as PlaywrightError

    with tempfile.TemporaryDirectory(prefix="bench-reveal-") as tmp:
        env = bench_browser.isolated_env(Path(tmp), ROOFLINE_STUDENT_ID="bench")
        if not preload:
            env["ROOFLINE_NO_PRELOAD"] = "1"
        port = bench_browser.free_port()
        cmd = [sys.executable, "-m", "marimo", "run", str(lab), "--headless", "--port",
               str(port), "--no-token"]
        with serve(cmd, f"http://127.0.0.1:{port}/", env=env, cwd=Path(tmp)) as url:
            context = browser.new_context(viewport=bench_browser.VIEWPORT)
            try:
                context.add_init_script(FIRST_VISIBLE_JS)
                page = context.new_page()
                page.set_default_timeout(bench_browser.LOAD_TIMEOUT_MS)
                page.goto(url, wait_until="commit")
                lock = page.get_by_role("button", name="Lock prediction").first
                lock.wait_for()
                page.wait_for_timeout(6000)
                if page.evaluate("() => window.__reveal.drawn"):
                    raise RuntimeError(f"{lab.name} shows a figure before the first prediction")
                page.get_by_role("radio").first.check()
                page.get_by_text("4", exact=True).first.click()
                page.get_by_placeholder("one line: why do you expect this?").first.fill("bench")
                page.wait_for_timeout(500)
                t0 = page.evaluate("() => performance.now()")
                lock.click()
                page.wait_for_function("() => window.__reveal.drawn > 0", polling=20)
                return page.evaluate("() => window.__reveal.drawn") - t0
            except PlaywrightError as exc:
                raise RuntimeError(f"{lab.name}: {str(exc).splitlines()[0]}") from None
            finally:
                context.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds, fixed in advance")
    ap.add_argument("--lab", default="lab_01", help="a lab whose first question is a choice")
    a = ap.parse_args(argv)
    if a.rounds < 1:
        ap.error("--rounds must be at least 1")
    if bench_browser.cannot_run():
        return 1
    labs = [p for p in bench_browser.REPO.joinpath("labs").glob("lab_*.py") if a.lab in p.stem]
    if len(labs) != 1:
        ap.error(f"--lab {a.lab!r} names {len(labs)} labs; name one")
    from playwright.sync_api import sync_playwright

    from labs.core.measure.device import load_average, machine_line

    started, before = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M"), load_average()
    times: dict[str, list[float]] = {"without": [], "with": []}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=bench_browser.CHROMIUM, args=bench_browser.CHROMIUM_ARGS)
        try:
            for i in range(a.rounds):
                for name in ("without", "with"):
                    ms = one_reveal(browser, labs[0], preload=name == "with")
                    times[name].append(ms)
                    print(f"round {i + 1}: {name} preload: {ms:.0f} ms", file=sys.stderr,
                          flush=True)
        finally:
            browser.close()
    cmd = bench_browser.command_line("bench_first_reveal.py", argv)
    print(f"**`{cmd}`, {started} UTC** on {machine_line()}; Debian chromium headless; load "
          f"average {before} → {load_average()}; {a.rounds} round(s) fixed in advance, the two "
          f"variants interleaved.\n\n| {labs[0].name}: Lock → first figure drawn | median ms | "
          f"every round, ms |\n|---|---|---|")
    for name, vals in times.items():
        print(f"| {name} the preload | {statistics.median(vals):.0f} | "
              f"{', '.join(f'{v:.0f}' for v in vals)} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
