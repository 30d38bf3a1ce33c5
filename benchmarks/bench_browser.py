"""Browser mode of the speed benchmark: what a student feels in a real page.

    python benchmarks/bench_labs.py --browser              # every lab + reference + floor
    python benchmarks/bench_labs.py --browser --lab lab_04 --steps 8

Each notebook is served by ``marimo run <nb> --headless -- --reveal`` (gates open, with
``ROOFLINE_REVEAL=1`` as well) on a free 127.0.0.1 port and opened in Debian chromium through
the playwright Python package (as ``tests/browser``), one fresh browser context per notebook
(an empty cache: a first open). A script injected before the page's own (``add_init_script``)
records, with ``performance.now()`` (milliseconds since navigation started):

* every DOM mutation inside a ``<marimo-plotly>`` element, its shadow root included (a
  MutationObserver on the document and on every shadow root the page attaches);
* the moment each figure first holds a drawn plotly SVG (``.main-svg``) and the moment each
  ``<marimo-plotly>`` element appears (its data arrived from the kernel);
* every key press (capture phase, before marimo sees it) and every websocket message sent or
  received (the kernel's round trip).

Measures per notebook:

* **first figure**: navigation start to the first drawn figure; **all figures**: to the last
  figure element arriving (``all sent``) and to the last figure drawn (``all drawn``: each is
  scrolled into view once the page is quiet, as plotly draws only what is visible);
* **redraw** for every slider (``[role=slider]``) and dropdown (``select``) outside the
  prediction forms, once per marimo element (a widget that several cells show is one
  element, stepped at its first visible copy): ``--steps`` keyboard steps (arrow keys; back
  at the end of the range), each timed from the key press to the last DOM change inside any
  figure, waiting until the figures are quiet for ``QUIET_MS``. A step that changes no
  figure within ``NO_REDRAW_MS``, or within ``NO_REDRAW_AFTER_RUN_MS`` of the kernel finishing
  the run the step set off (marimo's ``completed-run`` message), is counted as "no redraw" and
  left out of the percentiles.
  Beside it, the split of each step:
  key press -> message sent (frontend), sent -> last message received (kernel + websocket),
  last message -> last figure change (marimo's output render + plotly);
* the **floor** notebook (``benchmarks/floor_notebook.py``): the same steps on a cell with no
  output (the websocket round trip), on a text-only output and on a two-point plotly figure.

The reference notebook is measured before every lab (interleaved), and a lab's ratio is to
the reference measured right before it. The load average is recorded before and after each
notebook.
"""

from __future__ import annotations

import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "browser"), str(REPO / "tests")]
from browser_support import (FIGURE, PRELOAD_CLASS, free_port, isolated_env,  # noqa: E402
                             serve, skip_reason)
from isolation_support import CHROMIUM_FLAGS, chromium_path  # noqa: E402

#: The desktop chromium a student opens (``ROOFLINE_CHROMIUM`` names another), not the
#: headless shell the tests prefer, with the network a student's browser has (the tests cut
#: it): the benchmark times what a student waits for.
CHROMIUM = chromium_path(("/usr/bin/chromium",))
CHROMIUM_ARGS = CHROMIUM_FLAGS

FLOOR_NOTEBOOK = REPO / "benchmarks" / "floor_notebook.py"
QUIET_MS = 700  # a figure is redrawn once nothing inside any figure changed for this long
NO_REDRAW_MS = 4000  # no figure change this long after a key press: the widget moves none
#: The kernel finished the step's run this long ago and no figure changed: none will.
NO_REDRAW_AFTER_RUN_MS = 1500
LOAD_TIMEOUT_MS = 120_000
VIEWPORT = {"width": 1280, "height": 1000}

INIT_JS = r"""
(() => {
  performance.setResourceTimingBufferSize(5000);
  const W = window.__bench = {plotMuts: 0, lastPlot: 0, lastText: 0, lastRecv: 0, lastRun: 0, keys: [], sent: [],
                              recv: [], hostsSeen: 0, lastHostSeen: 0, ids: 0, firstDrawn: 0,
                              drawn: 0, lastDrawn: 0, mark: 0, firstPlot: 0};
  // The hidden, empty figure in every lab's header (style.plotly_preload) only loads
  // plotly.js early: no student sees it, so it is not a figure here.
  const preload = (h) => !!(h.closest && h.closest('.__PRELOAD_CLASS__'));
  const plotHost = (node) => {
    for (let n = node; n; n = n.parentNode || n.host) {
      if (n.nodeName === 'MARIMO-PLOTLY') return preload(n) ? null : n;
    }
    return null;
  };
  const inText = (node) => {
    const el = node.nodeType === 1 ? node : node.parentElement;
    return !!(el && el.closest && el.closest('.bench-text'));
  };
  const newHost = (node) => {
    if (node.nodeType !== 1) return;
    const hosts = node.nodeName === 'MARIMO-PLOTLY' ? [node]
      : Array.from(node.querySelectorAll ? node.querySelectorAll('marimo-plotly') : []);
    for (const h of hosts) {
      if (preload(h)) continue;
      if (!h.__benchSeen) { h.__benchSeen = true; W.hostsSeen++; W.lastHostSeen = performance.now(); }
    }
  };
  const obs = new MutationObserver((records) => {
    const t = performance.now();
    for (const r of records) {
      for (const a of r.addedNodes || []) newHost(a);
      if (inText(r.target)) W.lastText = t;
      const host = plotHost(r.target);
      if (!host) continue;
      W.plotMuts++; W.lastPlot = t; host.__benchMuts = (host.__benchMuts || 0) + 1;
      if (W.mark && !W.firstPlot && t > W.mark) W.firstPlot = t;  // first change after a step
      if (!host.__benchDrawn) {
        const root = host.shadowRoot || host;
        if (root.querySelector('.main-svg')) {
          host.__benchDrawn = true; W.drawn++; W.lastDrawn = t;
          if (!W.firstDrawn) W.firstDrawn = t;
        }
      }
    }
  });
  const opts = {subtree: true, childList: true, attributes: true, characterData: true};
  obs.observe(document, opts);
  const attach = Element.prototype.attachShadow;
  Element.prototype.attachShadow = function (init) {
    const root = attach.call(this, init);
    obs.observe(root, opts);
    return root;
  };
  document.addEventListener('keydown', () => W.keys.push(performance.now()), true);
  document.addEventListener('change', () => W.keys.push(performance.now()), true);
  // The frontend sends a widget's value by HTTP (/api/kernel/...); outputs come back on the
  // websocket.
  const nativeFetch = window.fetch;
  window.fetch = function (input, init) {
    const url = typeof input === 'string' ? input : (input && input.url) || '';
    if (url.includes('/api/kernel/')) W.sent.push(performance.now());
    return nativeFetch.call(this, input, init);
  };
  // Every cell output the kernel sends, kept unparsed (a reference, no cost in the step) and
  // parsed by flushOutputs() after a step's timing: what replay_notebook.py plays back.
  W.outs = {}; W.pendingOut = [];
  W.flushOutputs = () => {
    const changed = new Set();
    for (const raw of W.pendingOut.splice(0)) {
      const m = JSON.parse(raw).data, o = m.output;
      if (!o || (o.channel !== 'output' && o.channel !== 'marimo-error')) continue;
      const old = W.outs[m.cell_id];
      if (!old || old.mimetype !== o.mimetype || JSON.stringify(old.data) !== JSON.stringify(o.data)) changed.add(m.cell_id);
      W.outs[m.cell_id] = {mimetype: o.mimetype, data: o.data};
    }
    return Array.from(changed);
  };
  const Native = window.WebSocket;
  class BenchSocket extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (e) => {
        const t = performance.now(); W.recv.push(t); W.lastRecv = t;
        if (typeof e.data === 'string' && e.data.includes('"op": "completed-run"')) W.lastRun = t;
        if (typeof e.data === 'string' && e.data.startsWith('{"op": "cell-op"') && e.data.includes('"output":{')) W.pendingOut.push(e.data);
      });
    }
  }
  window.WebSocket = BenchSocket;
})();
""".replace("__PRELOAD_CLASS__", PRELOAD_CLASS)

#: Sliders and dropdowns a student moves, outside the prediction forms (``<form>``), each
#: with the object-id of its ``<marimo-ui-element>`` (``oid``: copies of one element shown by
#: several cells share it) and ``hidden: true`` where it is not visible.
WIDGETS_JS = r"""
() => {
  const out = [];
  // The nearest text before an element in its tree, outside widgets: names a widget that has
  // no label (Lab 4's chain slots, an array shown by .hstack(), which drops the array's label).
  const textBefore = (start) => {
    const tw = document.createTreeWalker(start.getRootNode(), NodeFilter.SHOW_TEXT);
    tw.currentNode = start;
    while (tw.previousNode()) {
      const p = tw.currentNode.parentElement;
      if (p && p.closest('marimo-ui-element, select, script, style')) continue;
      const t = tw.currentNode.textContent.replace(/\s+/g, ' ').trim();
      if (t) return t;
    }
    return '';
  };
  const walk = (root) => {
    for (const el of root.querySelectorAll('*')) {
      if (el.shadowRoot) walk(el.shadowRoot);
      const isSlider = el.getAttribute('role') === 'slider';
      const isSelect = el.tagName === 'SELECT';
      // a searchable dropdown: a button that opens a list (cmdk) in a dialog
      const isSearch = el.tagName === 'BUTTON' && el.getAttribute('aria-haspopup') === 'dialog'
        && (el.getRootNode().host || {}).tagName === 'MARIMO-DROPDOWN';
      if (!isSlider && !isSelect && !isSearch) continue;
      let inForm = false, ui = null;
      for (let n = el; n; n = n.parentNode || n.host) {
        if (n.tagName === 'FORM' || n.tagName === 'MARIMO-FORM') { inForm = true; break; }
        if (!ui && n.tagName === 'MARIMO-UI-ELEMENT') ui = n;
      }
      if (inForm || el.disabled) continue;
      const id = 'bench-w' + out.length;
      el.setAttribute('data-bench-id', id);
      const kind = isSlider ? 'slider' : isSelect ? 'dropdown' : 'searchable dropdown';
      const oid = ui ? ui.getAttribute('object-id') : null;
      // marimo's widget element (<marimo-slider>, <marimo-dropdown>) carries its label
      let label = el.getAttribute('aria-label') || '';
      for (let n = el; n && !label; n = n.parentNode || n.host) {
        if (n.getAttribute && n.tagName.startsWith('MARIMO-') && n.getAttribute('data-label')) {
          const d = document.createElement('div');
          try { d.innerHTML = JSON.parse(n.getAttribute('data-label')); } catch (e) { d.innerHTML = n.getAttribute('data-label'); }
          label = d.textContent.trim();
        }
      }
      if (!label) {
        const before = textBefore(ui || el).slice(0, 30);
        label = before ? `${kind} after '${before}' (${oid})` : `(unlabelled ${kind}, ${oid})`;
      }
      const w = {id, kind, label: label.slice(0, 60), oid};
      if (!(el.checkVisibility ? el.checkVisibility() : el.getClientRects().length)) w.hidden = true;
      out.push(w);
    }
  };
  walk(document);
  return out;
}
"""


def distinct_widgets(widgets: list[dict]) -> list[tuple[int, dict]]:
    """(index on the page, widget) once per marimo element: a widget shown by several cells
    is one element (one object-id), stepped once, at its first visible copy; ``copies`` says
    in how many places it is shown. A widget without an object-id counts as its own."""
    groups: dict = {}
    for i, w in enumerate(widgets):
        groups.setdefault(w.get("oid") or ("no oid", i), []).append(i)
    out = []
    for group in groups.values():
        i = next((i for i in group if not widgets[i].get("hidden")), group[0])
        out.append((i, {**widgets[i], "copies": len(group)}))
    return out


def choose_widget(now: list[dict], index: int, w: dict) -> dict | None:
    """Widget ``w`` (found at ``index`` before) among the page's widgets ``now``: by its
    object-id (stable across a re-run of the cell that made it: cell id + counter), at its
    old place or its first visible copy; else by place, label and kind; else the first with
    its label and kind (a label shown twice may pick the wrong one); None when gone."""
    same_oid = [i for i, x in enumerate(now) if w.get("oid") and x.get("oid") == w["oid"]]
    if same_oid:
        i = index if index in same_oid else next(
            (i for i in same_oid if not now[i].get("hidden")), same_oid[0])
        return now[i]
    named = lambda x: (x["label"], x["kind"]) == (w["label"], w["kind"])  # noqa: E731
    if index < len(now) and named(now[index]):
        return now[index]
    return next((x for x in now if named(x)), None)


def wanted(notebook: str, label: str, only: tuple[str, ...]) -> bool:
    """Whether a widget is stepped under ``--widget``: no filter steps all; ``TEXT`` takes
    every widget whose label contains TEXT; ``LAB:TEXT`` only those in a notebook whose name
    contains LAB (``lab_04:Batch`` is Lab 4's Batch, not Lab 6's or Lab 7's)."""
    if not only:
        return True
    for o in only:
        lab, sep, text = o.partition(":")
        if not sep:
            lab, text = "", o
        if lab in notebook and text in label:
            return True
    return False


def cannot_run() -> bool:
    """True (said on stderr) when chromium or playwright is missing: a browser benchmark's
    command line stops there with exit code 1."""
    why = skip_reason(CHROMIUM, package="chromium")
    if why:
        print(f"cannot run: {why}", file=sys.stderr)
    return bool(why)


def command_line(script: str, argv) -> str:
    """The command as a reader would type it, for a table's caption."""
    args = list(argv) if argv is not None else sys.argv[1:]
    return f"python benchmarks/{script}" + "".join(f" {x}" for x in args)


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    xs = sorted(values)
    k = (len(xs) - 1) * q / 100
    lo, hi = int(k), min(int(k) + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def _state(page) -> dict:
    return page.evaluate("() => ({...window.__bench, keys: window.__bench.keys.length, "
                         "sent: window.__bench.sent.slice(-200), recv: window.__bench.recv.slice(-400)})")


def _wait_quiet(page, since: float, key: str, *, quiet_ms: int, none_ms: int) -> float | None:
    """Poll until ``key`` (lastPlot/lastText) moved past ``since`` and then stayed still for
    ``quiet_ms``; None when it never moved within ``none_ms``, or within
    ``NO_REDRAW_AFTER_RUN_MS`` of the kernel finishing a run after ``since``."""
    start = time.monotonic()
    while True:
        page.wait_for_timeout(60)
        now, last, run = page.evaluate(
            f"() => [performance.now(), window.__bench.{key}, window.__bench.lastRun]")
        if last > since and now - last >= quiet_ms:
            return last
        if last <= since and ((time.monotonic() - start) * 1000 > none_ms
                              or (run > since and now - run >= NO_REDRAW_AFTER_RUN_MS)):
            return None


def _split(state: dict, t_key: float, t_last: float | None) -> dict:
    sent = [t for t in state["sent"] if t >= t_key]
    recv = [t for t in state["recv"] if t >= t_key and (t_last is None or t <= t_last + 1)]
    out = {"send_ms": sent[0] - t_key if sent else None}
    if sent and recv:
        out["kernel_ms"] = recv[-1] - sent[0]
        if t_last is not None:
            out["render_ms"] = t_last - recv[-1]
    return out


def open_page(page, url: str) -> dict:
    """Open ``url`` and time the figures (ms from navigation start)."""
    page.goto(url, wait_until="commit")
    page.wait_for_function("() => window.__bench && window.__bench.firstDrawn > 0",
                           timeout=LOAD_TIMEOUT_MS, polling=100)
    # marimo streams outputs: wait until the kernel finished its first run (``completed-run``)
    # and no new figure element arrived for 1 s after it, or none for 3 s, then draw every
    # figure by scrolling it into view (plotly draws only visible ones).
    deadline = time.monotonic() + LOAD_TIMEOUT_MS / 1000
    while time.monotonic() < deadline:
        page.wait_for_timeout(250)
        now, last, run = page.evaluate(
            "() => [performance.now(), window.__bench.lastHostSeen, window.__bench.lastRun]")
        if now - last > 3000 or (run > 0 and now - max(last, run) > 1000):
            break
    hosts = page.locator(FIGURE)
    for i in range(hosts.count()):
        try:
            hosts.nth(i).scroll_into_view_if_needed(timeout=5000)
            hosts.nth(i).locator(".main-svg").first.wait_for(state="attached", timeout=15000)
        except Exception:  # a figure that never draws is reported by the counts below
            pass
    page.evaluate("() => window.scrollTo(0, 0)")
    s = _state(page)
    return {"first_figure_s": s["firstDrawn"] / 1000, "all_sent_s": s["lastHostSeen"] / 1000,
            "all_drawn_s": s["lastDrawn"] / 1000, "figures": s["hostsSeen"],
            "figures_drawn": s["drawn"]}


def _widget_key(page, w: dict, forward: bool) -> str:
    if w["kind"] == "slider":
        return "ArrowRight" if forward else "ArrowLeft"
    return "ArrowDown" if forward else "ArrowUp"


def _at_end(page, w: dict, forward: bool) -> bool:
    el = page.locator(f"[data-bench-id={w['id']}]")
    if w["kind"] == "slider":
        now, lo, hi = el.evaluate("e => [e.getAttribute('aria-valuenow'), "
                                  "e.getAttribute('aria-valuemin'), e.getAttribute('aria-valuemax')]")
        return float(now) >= float(hi) if forward else float(now) <= float(lo)
    idx, n = el.evaluate("e => [e.selectedIndex, e.options.length]")
    return idx >= n - 1 if forward else idx <= 0


#: (now, per figure element: [its id, DOM changes so far]); ids are given on first sight.
_SNAPSHOT_JS = """() => [performance.now(), Array.from(document.querySelectorAll('marimo-plotly'))
  .map(h => { if (!h.__benchId) h.__benchId = ++window.__bench.ids; return [h.__benchId, h.__benchMuts || 0]; })]"""


def _figure_changes(page, before) -> dict:
    """How many figures a step changed in place, and how many it mounted anew (a new
    ``<marimo-plotly>`` element: plotly draws it from scratch, ~1.7x the cost of an update)."""
    _now, after = page.evaluate(_SNAPSHOT_JS)
    old = dict(before)
    changed = [k for k, n in after if k in old and n > old[k]]
    mounted = [k for k, _n in after if k not in old]
    return {"figures_changed": len(changed), "figures_mounted": len(mounted)}


#: Start recording: the outputs so far taken in, each cell's output as it stands kept aside.
_RECORD_START_JS = """() => { const W = window.__bench; W.flushOutputs(); W.startOuts = {...W.outs}; }"""

#: After a step: [page order of the cell, its output] for every cell whose output changed.
#: ``cells`` given: those cells' outputs as they stood at the start of the recording.
_OUTPUTS_JS = """(cells) => { const W = window.__bench;
  const order = Array.from(document.querySelectorAll('.marimo-cell')).map(e => e.id.replace(/^cell-/, ''));
  const ids = cells === null ? W.flushOutputs() : cells.map(i => order[i]);
  const outs = cells === null ? W.outs : W.startOuts;
  return ids.filter(c => outs[c] && order.includes(c)).map(c => [order.indexOf(c), outs[c]]); }"""


#: The page as it stood when the recording started: every cell's output in page order (null
#: where it had none) and the page position of the cell that shows the stepped widget
#: (climbing out of its shadow roots), -1 where none holds it.
_PAGE_JS = """(el) => { const W = window.__bench;
  const order = Array.from(document.querySelectorAll('.marimo-cell')).map(e => e.id.replace(/^cell-/, ''));
  let n = el;
  while (n && !(n.classList && n.classList.contains('marimo-cell'))) n = n.parentNode || n.host;
  return [order.map(c => W.startOuts[c] || null), n ? order.indexOf(n.id.replace(/^cell-/, '')) : -1]; }"""


def replay_states(initial: dict, changes: list[dict]) -> list[list[dict | None]]:
    """The outputs a widget's steps changed, as they stood before the first step and after
    each: one slot per cell whose output changed, in the cells' order on the page (None
    where that cell had no output yet)."""
    ids = sorted({i for step in changes for i in step})
    now = {i: initial[i] for i in ids if i in initial}
    states = [[now.get(i) for i in ids]]
    for step in changes:
        now.update(step)
        states.append([now.get(i) for i in ids])
    return states


def _rediscover(page, index: int, w: dict) -> dict:
    """Widget ``w`` as the page holds it now: a change to another widget can re-run the cell
    that made it (a new element). Waits until the kernel is quiet for 1 s first."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        now, last = page.evaluate("() => [performance.now(), window.__bench.lastRecv]")
        if now - last > 1000:
            break
        page.wait_for_timeout(100)
    found = choose_widget(page.evaluate(WIDGETS_JS), index, w)
    if found is None:
        raise RuntimeError(f"widget {w['label']!r} is gone from the page")
    return {**found, "copies": w.get("copies", 1)}


_OPTIONS_JS = """() => { const o = Array.from(document.querySelectorAll('[role=option]'));
  return [o.findIndex(e => e.getAttribute('aria-selected') === 'true'),
          o.map(e => e.textContent.trim())]; }"""


def _open_searchable(page, el, forward: bool) -> bool:
    """Open a searchable dropdown (Enter) and move the highlight (arrow keys) to the option
    next to the chosen one; the Enter that selects it is the timed key press. The list opens
    highlighting its first option, so the chosen one is found by the button's text. Returns
    the direction taken."""
    chosen = (el.text_content() or "").strip()
    el.focus()
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelectorAll('[role=option]').length > 0",
                           timeout=10_000, polling=50)
    highlight, texts = page.evaluate(_OPTIONS_JS)
    now = texts.index(chosen) if chosen in texts else max(highlight, 0)
    if (forward and now >= len(texts) - 1) or (not forward and now <= 0):
        forward = not forward
    target = now + (1 if forward else -1)
    for _ in range(abs(target - highlight)):
        page.keyboard.press("ArrowDown" if target > highlight else "ArrowUp")
    page.wait_for_timeout(150)
    return forward


def step_widget(page, w: dict, steps: int, key: str = "lastPlot",
                record: list | None = None, whole: dict | None = None) -> list[dict]:
    """``steps`` keyboard steps on widget ``w``; one timing dict per step. ``record``: a list
    that receives the states for ``replay_states`` (read after each step's timing ends).
    ``whole``: a dict that receives the page those states sit in (``page_notebook``):
    ``cells``, every cell's output before the first step; ``slots``, the positions of the
    cells the steps changed; ``widget_cell``, the position of the cell showing ``w``."""
    el = page.locator(f"[data-bench-id={w['id']}]")
    if record is not None:
        page.evaluate(_RECORD_START_JS)
        changes = []
        if whole is not None:
            whole["cells"], whole["widget_cell"] = el.evaluate(_PAGE_JS)
    el.scroll_into_view_if_needed(timeout=10_000)
    el.focus()
    page.wait_for_timeout(300)
    search = w["kind"] == "searchable dropdown"
    forward = True if search else not _at_end(page, w, True)
    samples, net = [], 0
    for _ in range(steps):
        if search:
            forward = _open_searchable(page, el, forward)
        elif _at_end(page, w, forward):
            forward = not forward
        net += 1 if forward else -1
        t_before, seen = page.evaluate(_SNAPSHOT_JS)
        page.evaluate("t => { window.__bench.mark = t; window.__bench.firstPlot = 0; }", t_before)
        page.keyboard.press("Enter" if search else _widget_key(page, w, forward))
        keys = page.evaluate("() => window.__bench.keys")
        t_key = next((t for t in keys if t >= t_before), t_before)
        t_last = _wait_quiet(page, t_key, key, quiet_ms=QUIET_MS, none_ms=NO_REDRAW_MS)
        sample = {"redraw_ms": None if t_last is None else t_last - t_key}
        if t_last is not None and key == "lastPlot":  # the first figure the step changed
            first = page.evaluate("() => window.__bench.firstPlot")
            sample["first_ms"] = first - t_key if first >= t_key else None
        sample.update(_split(_state(page), t_key, t_last))
        sample.update(_figure_changes(page, seen))
        if record is not None:
            changes.append(dict(page.evaluate(_OUTPUTS_JS, None)))
        samples.append(sample)
        if t_last is None:
            page.wait_for_timeout(200)
    # Back to where it started, so the next widget is measured in the lab's initial state
    # (a precision left on one a device lacks would show an error instead of a figure).
    for _ in range(abs(net)):
        if search:
            _open_searchable(page, el, net < 0)
        t0 = page.evaluate("() => performance.now()")
        page.keyboard.press("Enter" if search else _widget_key(page, w, net < 0))
        _wait_quiet(page, t0, "lastRecv", quiet_ms=QUIET_MS, none_ms=NO_REDRAW_MS)
    if record is not None:
        cells = sorted({i for step in changes for i in step})
        record.extend(replay_states(dict(page.evaluate(_OUTPUTS_JS, cells)), changes))
        if whole is not None:
            whole["slots"] = cells
    return samples


def summarise(samples: list[dict]) -> dict:
    red = [s["redraw_ms"] for s in samples if s["redraw_ms"] is not None]
    out = {"steps": len(samples), "redraws": len(red), "p50_ms": pct(red, 50),
           "p95_ms": pct(red, 95)}
    for k in ("figures_changed", "figures_mounted"):
        out[k] = sum(s.get(k, 0) for s in samples)
    for k in ("send_ms", "kernel_ms", "render_ms", "first_ms"):
        vals = [s[k] for s in samples if s.get(k) is not None and s["redraw_ms"] is not None]
        out[f"{k[:-3]}_p50_ms"] = pct(vals, 50)
    return out


def _load():
    try:
        return round(float(Path("/proc/loadavg").read_text().split()[0]), 2)
    except (OSError, ValueError, IndexError):
        return None


REPLAY_NOTEBOOK = REPO / "benchmarks" / "replay_notebook.py"
#: replay_notebook.py's replay widget and its one cell that shows a state's outputs stacked
#: (``page_notebook`` puts the widget where the lab's is and the outputs each in its place
#: among the lab's other cells).
STEP_CELL = next(cell + "\n" for cell in REPLAY_NOTEBOOK.read_text(encoding="utf-8").split("\n\n\n")
                 if cell.startswith("@app.cell") and "    step = " in cell)
STACKED_CELL = """@app.cell
def _(as_sent, mo, states, step):
    mo.vstack([as_sent(output) for output in states[step.value] if output is not None])
    return
"""
SLOT_CELL = """@app.cell
def _(as_sent, states, step):
    _output = states[step.value][{slot}]
    None if _output is None else as_sent(_output)
    return
"""
STILL_CELL = """@app.cell
def _(as_sent, replayed):
    _output = replayed["page"][{cell}]
    None if _output is None else as_sent(_output)
    return
"""


def page_notebook(cells: list, slots: list[int], widget_cell: int) -> str:
    """replay_notebook.py laid out as the lab's page (``step_widget``'s ``whole``, so
    ``page_notebook(**whole)``): one cell per entry of ``cells``, in the lab's order, the
    ones at ``slots`` (page positions) replaying the outputs the steps changed, each other
    cell showing its output as it stood (``replayed["page"]``), and the replay widget in a
    cell of its own right before ``widget_cell`` (first where that is -1), so the step is
    taken where the lab's is and marimo pays its per-cell messages, and the browser the
    lab's whole page, as in the lab. It runs none of the lab's code: what the lab's step
    adds over this is what its own kernel does."""
    text = REPLAY_NOTEBOOK.read_text(encoding="utf-8")
    if STEP_CELL not in text or STACKED_CELL not in text:
        raise RuntimeError("replay_notebook.py no longer has the cells this expects")
    out = [STEP_CELL] if not 0 <= widget_cell < len(cells) else []
    for i in range(len(cells)):
        if i == widget_cell:
            out.append(STEP_CELL)
        out.append(SLOT_CELL.format(slot=slots.index(i)) if i in slots
                   else STILL_CELL.format(cell=i))
    return text.replace(STEP_CELL, "").replace(STACKED_CELL, "\n\n".join(out))


@contextlib.contextmanager
def _served(path: Path, tree: Path | None = None, marimo: tuple[str, ...] = ("-m", "marimo"),
            **env_extra: str):
    """``marimo run path`` in reveal mode on a free port, in a throwaway home; yields its URL.
    ``tree``: another checkout whose ``labs`` package the notebook imports (a baseline).
    ``marimo``: what follows the Python interpreter to reach marimo's CLI (a wrapper script
    that times the server, ``bench_server_split``)."""
    with tempfile.TemporaryDirectory(prefix="bench-browser-") as tmp:
        env = isolated_env(Path(tmp), ROOFLINE_REVEAL="1", ROOFLINE_STUDENT_ID="bench",
                           **env_extra)
        if tree is not None:  # its labs package, not this checkout's
            env["PYTHONPATH"] = str(tree) + os.pathsep + env.get("PYTHONPATH", "")
        port = free_port()
        cmd = [sys.executable, *marimo, "run", str(path.resolve()), "--headless", "--port",
               str(port), "--no-token", "--", "--reveal"]
        with serve(cmd, f"http://127.0.0.1:{port}/", env=env, cwd=Path(tmp)) as url:
            yield url


@contextlib.contextmanager
def _page(browser, url: str):
    """A fresh context (an empty cache: a first open) on ``url``, timed by ``open_page``."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        context.add_init_script(INIT_JS)
        page = context.new_page()
        page.set_default_timeout(LOAD_TIMEOUT_MS)
        yield page, open_page(page, url)
    finally:
        context.close()


def bench_notebook(browser, path: Path, *, steps: int, floor: bool = False,
                   only: tuple[str, ...] = (), tree: Path | None = None,
                   replay: bool = False) -> dict:
    """Serve ``path`` in reveal mode, open it in a fresh context, time load and every widget.
    ``tree``: another checkout whose ``labs`` package the notebook imports (a baseline).
    ``replay``: also time each widget's figure changes replayed alone (``bench_replays``)."""
    row: dict = {"notebook": path.name + (" (baseline)" if tree else ""), "load_before": _load()}
    recorded: dict[int, list] = {}
    try:
        with _served(path, tree) as url, _page(browser, url) as (page, opened):
            row.update(opened)
            row["widgets"], all_samples = [], []
            for i, w in distinct_widgets(page.evaluate(WIDGETS_JS)):
                if not wanted(path.name, w["label"], only):
                    continue
                key = "lastPlot"
                if floor and "text" in w["label"]:
                    key = "lastText"
                elif floor and "empty" in w["label"]:
                    key = "lastRecv"
                states = [] if replay else None
                whole: dict = {}
                try:
                    w = _rediscover(page, i, w)
                    samples = step_widget(page, w, steps, key, record=states, whole=whole)
                except Exception as exc:  # a widget that cannot be stepped: said, not hidden
                    row["widgets"].append({**w, "error": str(exc).splitlines()[0][:200]})
                    continue
                row["widgets"].append({**w, **summarise(samples), "samples": samples})
                # the floor of a widget whose steps redraw a figure (what the lab's is timed by)
                if states is not None and key == "lastPlot" and any(
                        s["redraw_ms"] is not None for s in samples):
                    recorded[len(row["widgets"]) - 1] = (states, whole)
                if not floor:
                    all_samples += samples
            row.update(summarise(all_samples))
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
    if recorded:  # after the lab's server is gone: the replay has the machine to itself
        for index, replayed in bench_replays(browser, [
                (row["widgets"][i]["label"], recorded[i][0]) for i in recorded], steps,
                kinds=[row["widgets"][i]["kind"] for i in recorded]).items():
            row["widgets"][list(recorded)[index]]["replay"] = replayed
        row["replay"] = summarise([x for w in row["widgets"]
                                   for x in w.get("replay", {}).get("samples", [])])
        # Where the lab missed and its stacked floor met, the same outputs on the lab's page:
        # what its cells and its page add, apart from the lab's own Python.
        again = [i for i in recorded if needs_page_floor(row["widgets"][i], *recorded[i])]
        for index, replayed in bench_replays(browser, [
                (row["widgets"][i]["label"], recorded[i][0]) for i in again], steps,
                pages=[recorded[i][1] for i in again],
                kinds=[row["widgets"][i]["kind"] for i in again]).items():
            row["widgets"][again[index]]["replay_page"] = replayed
    row["load_after"] = _load()
    return row


def write_states(path: Path, recorded: list[tuple[str, list]], *,
                 kinds: list[str] | None = None, pages: list[dict] | None = None) -> None:
    """The file ``replay_notebook.py`` reads (``ROOFLINE_REPLAY``): per widget its label,
    kind, recorded states and, for a page replay, the page they sit in."""
    path.write_text(json.dumps({"widgets": [
        {"label": label, "states": states, "kind": kinds[index] if kinds else "slider",
         "page": pages[index]["cells"] if pages else None}
        for index, (label, states) in enumerate(recorded)]}))


def replay_stepper(page) -> dict:
    """The replay notebook's own widget on its page (a page replay also shows the lab's)."""
    return next(w for w in page.evaluate(WIDGETS_JS) if w["label"].startswith("replay: "))


def needs_page_floor(widget: dict, states: list, whole: dict,
                     target: float | None = None) -> bool:
    """Whether a widget's floor is also replayed on the lab's page (``page_notebook``): its
    step missed the redraw target, its stacked floor met it, and the page was recorded."""
    target = TARGETS["redraw_p95_ms"] if target is None else target
    step, floor = widget.get("p95_ms"), widget.get("replay", {}).get("p95_ms")
    return (step is not None and step > target and floor is not None and floor <= target
            and bool(states) and bool(whole.get("cells")) and "slots" in whole)


def bench_replays(browser, recorded: list[tuple[str, list]], steps: int, *,
                  pages: list[dict] | None = None,
                  kinds: list[str] | None = None) -> dict[int, dict]:
    """Each widget's recorded output states played back in ``replay_notebook.py`` (a fresh
    page per widget), stepped as the lab's widget was: {index: summary}. ``kinds``: each
    widget's kind (a ``dropdown`` is replayed by a dropdown, else a slider). ``pages``: the page
    each widget's states sit in (``step_widget``'s ``whole``), replayed there
    (``page_notebook``, one server per widget); else stacked in one cell (one server)."""
    out = {}
    if not recorded:
        return out
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        states_file = Path(tmp) / "states.json"
        write_states(states_file, recorded, kinds=kinds, pages=pages)
        groups = [[i] for i in range(len(recorded))] if pages else [list(range(len(recorded)))]
        for indices in groups:
            notebook = REPLAY_NOTEBOOK
            if pages:
                notebook = Path(tmp) / f"replay_page_{indices[0]}.py"
                notebook.write_text(page_notebook(**pages[indices[0]]), encoding="utf-8")
            with _served(notebook, ROOFLINE_REPLAY=str(states_file)) as url:
                for index in indices:
                    states = recorded[index][1]
                    try:
                        with _page(browser, f"{url}?widget={index}") as (page, _opened):
                            samples = step_widget(page, replay_stepper(page), len(states) - 1)
                        out[index] = {**summarise(samples), "samples": samples,
                                      "outputs": max(sum(o is not None for o in state)
                                                     for state in states),
                                      "cells": len(states[0]) if pages else 1}
                        if pages:
                            out[index]["page_cells"] = len(pages[index]["cells"])
                    except Exception as exc:  # said in the widget's row, not hidden
                        out[index] = {"error": str(exc).splitlines()[0][:200]}
    return out


def run_browser(labs: list[Path], reference: Path, *, runs: int, steps: int,
                log=print, checkpoint=None, baseline: Path | None = None,
                replay: bool = False, only: tuple[str, ...] = ()) -> list[dict]:
    """Every run: the floor notebook, then the reference before each lab (interleaved), and
    right after a lab the same lab from the ``baseline`` checkout when it has one (against
    the same reference). ``only``: step just the lab widgets whose label contains one of
    these (the floor and reference notebooks are stepped whole). ``checkpoint(runs_so_far)``
    is called after every notebook, so a cut-off run keeps what it measured."""
    reason = skip_reason(CHROMIUM, package="chromium")
    if reason:
        raise SystemExit(f"browser mode cannot run: {reason}")
    from playwright.sync_api import sync_playwright

    out = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            for r in range(runs):
                rows = {"floor": None, "pairs": []}
                out.append(rows)
                log(f"browser run {r + 1} of {runs}: floor notebook ...")
                rows["floor"] = bench_notebook(browser, FLOOR_NOTEBOOK, steps=steps, floor=True)
                for lab in labs:
                    log(f"  reference, then {lab.name} ...")
                    ref = bench_notebook(browser, reference, steps=steps)
                    rows["pairs"].append((ref, bench_notebook(browser, lab, steps=steps,
                                                              replay=replay, only=only)))
                    old = baseline / "labs" / lab.name if baseline else None
                    if old is not None and old.exists():
                        log(f"  {lab.name} from the baseline ...")
                        rows["pairs"].append((ref, bench_notebook(browser, old, steps=steps,
                                                                  tree=baseline, only=only)))
                    if checkpoint:
                        checkpoint(out)
        finally:
            browser.close()
    return out


# --------------------------------------------------------------------------------------------
# Report


def _f(v, spec: str) -> str:
    return "n/a" if v is None else format(v, spec)


def _span(values, spec: str) -> str:
    vals = [v for v in values if v is not None]
    if not vals:
        return "n/a"
    lo, hi = format(min(vals), spec), format(max(vals), spec)
    return lo if lo == hi else f"{lo}–{hi}"


def _ratio(a, b):
    return None if a is None or not b else a / b


TARGETS = {"redraw_p95_ms": 100.0, "ratio_p95": 0.5, "first_figure_s": 5.0}


def _missed(values, target) -> str:
    vals = [v for v in values if v is not None]
    over = sum(v > target for v in vals)
    if not over:
        return ""
    return " **missed**" if over == len(vals) else f" **missed in {over} of {len(vals)}**"


#: What a widget's floor replays (``replay_notebook.py``): every cell output its steps changed
#: ("outputs", runs from 2026-11-25 04:00 UTC on) or, in the runs before, its figures alone
#: ("figures"); a results file says which in its settings (``replay_kind``).
REPLAY_KIND = "outputs"


def replayed_words(kind: str = REPLAY_KIND) -> str:
    return "same output changes" if kind == "outputs" else "same figure changes"


def table(runs: list[dict], replayed: str = REPLAY_KIND) -> str:
    """Markdown: one row per lab (min–max over runs), the reference measured before each lab,
    its ratio; then the floor rows."""
    t = TARGETS
    lines = [f"| notebook | first figure s (target ≤ {t['first_figure_s']:g}) | all figures "
             "sent / drawn s | figures | redraw p50 / p95 ms (target p95 ≤ "
             f"{t['redraw_p95_ms']:g}) | {replayed_words(replayed)} replayed alone p50 / p95 ms "
             "(the floor) | first figure changed p50 ms | × reference p50 / p95 "
             f"(target ≤ {t['ratio_p95']:g}) | reference p50 / p95 ms | split p50 ms: frontend / "
             "kernel+ws / render | load |",
             "|" + "---|" * 11]
    labs: dict[str, list] = {}
    for run in runs:
        for ref, lab in run["pairs"]:
            labs.setdefault(lab["notebook"], []).append((ref, lab))
    for name, pairs in labs.items():
        g = lambda key, which=1: [p[which].get(key) for p in pairs]  # noqa: E731
        r50 = [_ratio(lab.get("p50_ms"), ref.get("p50_ms")) for ref, lab in pairs]
        r95 = [_ratio(lab.get("p95_ms"), ref.get("p95_ms")) for ref, lab in pairs]
        loads = [p[1].get("load_before") for p in pairs] + [p[1].get("load_after") for p in pairs]
        err = "; ".join(p[1]["error"] for p in pairs if p[1].get("error"))
        lines.append(
            f"| {name}{' (' + err + ')' if err else ''} | "
            f"{_span(g('first_figure_s'), '.1f')}{_missed(g('first_figure_s'), t['first_figure_s'])}"
            f" | {_span(g('all_sent_s'), '.1f')} / {_span(g('all_drawn_s'), '.1f')} | "
            f"{_span(g('figures'), 'd')} | {_span(g('p50_ms'), '.0f')} / "
            f"{_span(g('p95_ms'), '.0f')}{_missed(g('p95_ms'), t['redraw_p95_ms'])} | "
            f"{_replayed(p[1] for p in pairs)} | {_span(g('first_p50_ms'), '.0f')} | {_span(r50, '.2f')} / {_span(r95, '.2f')}{_missed(r95, t['ratio_p95'])} | "
            f"{_span(g('p50_ms', 0), '.0f')} / {_span(g('p95_ms', 0), '.0f')} | "
            f"{_span(g('send_p50_ms'), '.0f')} / {_span(g('kernel_p50_ms'), '.0f')} / "
            f"{_span(g('render_p50_ms'), '.0f')} | {_span(loads, '.1f')} |")
    refs = [ref for run in runs for ref, _lab in run["pairs"]]
    if refs:
        lines.append(
            f"| reference_notebook.py (all its runs) | {_span([r.get('first_figure_s') for r in refs], '.1f')}"
            f" | {_span([r.get('all_sent_s') for r in refs], '.1f')} / "
            f"{_span([r.get('all_drawn_s') for r in refs], '.1f')} | "
            f"{_span([r.get('figures') for r in refs], 'd')} | "
            f"{_span([r.get('p50_ms') for r in refs], '.0f')} / "
            f"{_span([r.get('p95_ms') for r in refs], '.0f')} | | "
            f"{_span([r.get('first_p50_ms') for r in refs], '.0f')} | 1 | | "
            f"{_span([r.get('send_p50_ms') for r in refs], '.0f')} / "
            f"{_span([r.get('kernel_p50_ms') for r in refs], '.0f')} / "
            f"{_span([r.get('render_p50_ms') for r in refs], '.0f')} | "
            f"{_span([r.get('load_before') for r in refs], '.1f')} |")
    floors = [run["floor"] for run in runs if run.get("floor")]
    names = []
    for f in floors:
        for w in f.get("widgets", []):
            if w["label"] not in names:
                names.append(w["label"])
    for label in names:
        ws = [w for f in floors for w in f.get("widgets", []) if w["label"] == label]
        lines.append(
            f"| floor: {label} | | | | {_span([w.get('p50_ms') for w in ws], '.0f')} / "
            f"{_span([w.get('p95_ms') for w in ws], '.0f')} | | "
            f"{_span([w.get('first_p50_ms') for w in ws], '.0f')} | | | "
            f"{_span([w.get('send_p50_ms') for w in ws], '.0f')} / "
            f"{_span([w.get('kernel_p50_ms') for w in ws], '.0f')} / "
            f"{_span([w.get('render_p50_ms') for w in ws], '.0f')} | "
            f"{_span([f.get('load_before') for f in floors], '.1f')} |")
    return "\n".join(lines)


def _replayed(rows) -> str:
    """'p50 / p95' of the replays (min–max over ``rows``), or '' where none was replayed."""
    reps = [r["replay"] for r in rows if r.get("replay", {}).get("redraws")]
    if not reps:
        return ""
    return (f"{_span([r.get('p50_ms') for r in reps], '.0f')} / "
            f"{_span([r.get('p95_ms') for r in reps], '.0f')}")


def _shown(widgets) -> str:
    """' (shown in N places)' where the page shows one widget in several cells; '' else
    (and for rows saved before ``copies`` was kept)."""
    n = max((w.get("copies", 1) for w in widgets), default=1)
    return f" (shown in {n} places)" if n > 1 else ""


def _widget_rows(runs: list[dict]) -> dict[tuple, list[tuple[dict, dict]]]:
    """(notebook, label, n) -> [(widget, its reference), ...] over the runs, for every widget
    that redrew a figure; a label twice in a lab is kept apart by its order on the page."""
    rows: dict[tuple, list] = {}
    for run in runs:
        seen: dict[tuple, int] = {}
        for ref, lab in run["pairs"]:
            for w in lab.get("widgets", []):
                if not w.get("redraws"):
                    continue
                name = (lab["notebook"], w["label"])
                seen[name] = seen.get(name, 0) + 1
                rows.setdefault((*name, seen[name]), []).append((w, ref))
    return rows


#: Why a widget misses the redraw target, run by run (``verdict``).
MET, FLOOR, OWN = "met", "its floor misses too", "the lab's own cost"
PAGE = "on its page"  # the same outputs replayed on the lab's whole page miss too
REMOVED = "removed"  # a step whose only change inside a figure is a figure taken away


def verdict(pairs: list[tuple[dict, dict]], target: float | None = None) -> tuple[str, str]:
    """(kind, words) for one widget over the runs against redraw p95 <= target: MET where
    every run met it; FLOOR where every run that missed had its replayed floor (the outputs
    stacked in one cell) miss too: out of reach with these outputs in marimo and plotly;
    PAGE where every run that missed had that floor, or the same outputs replayed on the
    lab's page (``replay_page``: each in its own cell among the lab's other cells as they
    stood), miss: out of reach without showing less on the page or merging cells that show
    different things; else OWN (both floors met it while the lab's step did not, in at least
    one run: what the lab's own Python adds, its computing and its cells with no changed
    output)."""
    target = TARGETS["redraw_p95_ms"] if target is None else target
    if not any(w.get("figures_changed") or w.get("figures_mounted") for w, _ref in pairs):
        return REMOVED, "n/a: it draws no figure (a figure goes away)"
    runs = [(w.get("p95_ms"), w.get("replay", {}).get("p95_ms"),
             w.get("replay_page", {}).get("p95_ms")) for w, _ref in pairs]
    missed = [r for r in runs if r[0] is not None and r[0] > target]
    n = sum(r[0] is not None for r in runs)
    if not missed:
        return MET, "met" if n else "n/a"
    also = f" (met in {n - len(missed)} of {n})" if len(missed) < n else ""
    over = lambda v: v is not None and v > target  # noqa: E731
    if all(over(floor) for _, floor, _page in missed):
        return FLOOR, f"out of reach: {FLOOR}{also}"
    if all(over(floor) or over(page) for _, floor, page in missed):
        return PAGE, f"out of reach {PAGE}: the same outputs on the lab's page miss too{also}"
    own = sum(not over(floor) and not over(page) for _, floor, page in missed)
    return OWN, f"missed: {OWN} in {own} of {n}{also}"


def widget_table(runs: list[dict], replayed: str = REPLAY_KIND) -> str:
    """Markdown: every widget that redraws a figure, the lab's step against the same figure
    changes replayed alone (min–max over the runs): what the lab's own cells add, and why
    each misses the redraw target (``verdict``); the floor over the reference's p95 says
    whether the ratio target is within reach."""
    t = TARGETS["redraw_p95_ms"]
    lines = ["| notebook | widget | figures changed per step | step p50 / p95 ms | "
             f"{replayed_words(replayed)} replayed alone p50 / p95 ms (the floor) | "
             "step − replay, p50 ms | "
             f"redraw p95 ≤ {t:g} ms | floor p95 / reference p95 | the same outputs on the lab's "
             "page, p50 / p95 ms (where the lab missed and the floor met) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (notebook, label, _n), pairs in _widget_rows(runs).items():
        ws = [w for w, _ref in pairs]
        reps = [w.get("replay", {}) for w in ws]
        gap = [w["p50_ms"] - r["p50_ms"] for w, r in zip(ws, reps)
               if w.get("p50_ms") is not None and r.get("p50_ms") is not None]
        ratio = [_ratio(r.get("p95_ms"), ref.get("p95_ms")) for r, (_w, ref) in zip(reps, pairs)]
        lines.append(
            f"| {notebook} | {label}{_shown(ws)} | "
            f"{_span([w['figures_changed'] / w['steps'] for w in ws], '.1f')} | "
            f"{_span([w.get('p50_ms') for w in ws], '.0f')} / "
            f"{_span([w.get('p95_ms') for w in ws], '.0f')} | "
            + (f"{_span([r.get('p50_ms') for r in reps], '.0f')} / "
               f"{_span([r.get('p95_ms') for r in reps], '.0f')}"
               f"{_missed([r.get('p95_ms') for r in reps], t)}"
               if any(r.get("redraws") for r in reps) else "not replayed")
            + f" | {_span(gap, '+.0f')} | {verdict(pairs)[1]} | {_span(ratio, '.2f')} | "
            + _page_floor(ws) + " |")
    return "\n".join(lines)


def _page_floor(widgets) -> str:
    """'p50 / p95 (N cells)' of the replays on the lab's page (min–max over the runs that have
    one), or '' where none was needed."""
    reps = [w["replay_page"] for w in widgets if w.get("replay_page", {}).get("redraws")]
    if not reps:
        return ""
    t = TARGETS["redraw_p95_ms"]
    return (f"{_span([r.get('p50_ms') for r in reps], '.0f')} / "
            f"{_span([r.get('p95_ms') for r in reps], '.0f')}"
            f"{_missed([r.get('p95_ms') for r in reps], t)} "
            f"({_span([r.get('cells') for r in reps], 'd')} of "
            f"{_span([r.get('page_cells') for r in reps], 'd')} cells)")


def widget_summary(runs: list[dict]) -> str:
    """Markdown: per lab, how many widgets that redraw a figure meet the redraw target, how
    many cannot (their replayed floor misses too), and how many miss by the lab's own cost;
    and how many have a floor above half the reference (the ratio target out of reach)."""
    t, r = TARGETS["redraw_p95_ms"], TARGETS["ratio_p95"]
    counts: dict[str, dict[str, int]] = {}
    for (notebook, _label, _n), pairs in _widget_rows(runs).items():
        c = counts.setdefault(notebook, {MET: 0, FLOOR: 0, PAGE: 0, OWN: 0, "ratio": 0,
                                         "all": 0})
        kind = verdict(pairs)[0]
        if kind == REMOVED:
            continue
        c[kind] += 1
        c["all"] += 1
        ratios = [_ratio(w.get("replay", {}).get("p95_ms"), ref.get("p95_ms"))
                  for w, ref in pairs]
        c["ratio"] += bool(ratios) and all(x is not None and x > r for x in ratios)
    lines = [f"| notebook | widgets that redraw a figure | p95 ≤ {t:g} ms met | out of reach "
             f"({FLOOR}) | out of reach {PAGE} (the same outputs on the lab's page miss "
             f"too) | missed by {OWN} | floor > {r:g} × reference p95 in every run |",
             "|---|---|---|---|---|---|---|"]
    for notebook, c in counts.items():
        lines.append(f"| {notebook} | {c['all']} | {c[MET]} | {c[FLOOR]} | {c[PAGE]} | "
                     f"{c[OWN]} | {c['ratio']} |")
    return "\n".join(lines)


def widget_lines(runs: list[dict]) -> list[str]:
    """Per widget p50/p95 (last run), so a slow slider can be found."""
    out = []
    for ref, lab in runs[-1]["pairs"] if runs else []:
        for w in lab.get("widgets", []):
            what = w.get("error") or (f"p50 {_f(w.get('p50_ms'), '.0f')} / p95 "
                                      f"{_f(w.get('p95_ms'), '.0f')} ms (first figure "
                                      f"changed: p50 {_f(w.get('first_p50_ms'), '.0f')} ms) "
                                      f"over {w.get('redraws')}"
                                      f" of {w.get('steps')} steps; figures changed in "
                                      f"place {w.get('figures_changed', 0)}, mounted anew "
                                      f"{w.get('figures_mounted', 0)}"
                                      + (f"; replayed alone p50 "
                                         f"{_f(w['replay'].get('p50_ms'), '.0f')} / p95 "
                                         f"{_f(w['replay'].get('p95_ms'), '.0f')} ms"
                                         if w.get("replay") else "")
                                      + (f"; on the lab's page p50 "
                                         f"{_f(w['replay_page'].get('p50_ms'), '.0f')} / p95 "
                                         f"{_f(w['replay_page'].get('p95_ms'), '.0f')} ms"
                                         if w.get("replay_page") else ""))
            out.append(f"  {lab['notebook']} {w['kind']} '{w['label']}'{_shown([w])}: {what}")
    return out


def median(values):
    vals = [v for v in values if v is not None]
    return statistics.median(vals) if vals else None
