"""Helpers for the real-browser tests: chromium location and flags, servers on free ports."""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field, replace
from pathlib import Path

from isolation_support import CHROMIUM_ARGS, browser_required, chromium_path, in_ci  # noqa: F401

from labs.core.course.export.offline import SERVE_MARIMO
from labs.core.ui.style import PRELOAD_CLASS

REPO = Path(__file__).resolve().parents[2]
LABS = sorted((REPO / "labs").glob("lab_*.py"))
ARTIFACTS = REPO / "artifacts" / "browser"
CHROMIUM = chromium_path()
#: A figure a student sees: every <marimo-plotly> but the hidden one in each lab's header
#: (labs.core.ui.style.plotly_preload, which only loads plotly.js early).
FIGURE = f"marimo-plotly:not(.{PRELOAD_CLASS} marimo-plotly)"
#: Generous: on a busy 2-core machine a lab's first render can take ~20 s. Only reached on failure.
SLOW_MS = 90_000


def skip_reason(chromium: str = CHROMIUM,
                package: str = "chromium-headless-shell or chromium") -> str | None:
    """Why browser tests (or a benchmark driving ``chromium``) cannot run here, or None."""
    if not Path(chromium).exists():
        return f"no chromium at {chromium} (apt-get install {package})"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright Python package is not installed"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: Where a page's requests may go: this machine's loopback servers, its files, inline data.
ON_THE_MACHINE = ("http://127.0.0.1:", "http://localhost:", "file://", "data:", "blob:")


def requests_off_the_machine(page) -> list[str]:
    """Record every request ``page`` makes from now on that would leave this machine (the
    list fills as the page runs). The labs, served live or exported, make none: not even
    marimo's frontend asking a CDN for MathJax when it draws a figure, which the tests'
    chromium could not reach anyway (isolation_support.NO_NETWORK) but a student's offline
    browser would report as an error."""
    leaving: list[str] = []
    page.on("request", lambda req: req.url.startswith(ON_THE_MACHINE) or leaving.append(req.url))
    return leaving


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode} before answering {url}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.25)
    raise RuntimeError(f"no answer from {url} within {timeout:.0f} s")


@contextlib.contextmanager
def serve_process(cmd: list[str], url: str, *, env: dict | None = None,
                  cwd: Path | None = None):
    """Run a server process until the block ends (yields the process); stop only it."""
    proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        wait_http(url, proc)
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextlib.contextmanager
def serve(cmd: list[str], url: str, *, env: dict | None = None, cwd: Path | None = None):
    """Run a server process until the block ends (yields ``url``); stop only that process."""
    with serve_process(cmd, url, env=env, cwd=cwd):
        yield url


def isolated_env(tmp: Path, **extra: str) -> dict:
    """A lab environment with its own ledger folder and no remembered settings."""
    env = dict(os.environ)
    env.pop("ROOFLINE_REVEAL", None)
    env.update(ROOFLINE_LEDGER_DIR=str(tmp / "ledger"), ROOFLINE_STUDENT_ID="browser-test",
               XDG_CONFIG_HOME=str(tmp / "config"), XDG_DATA_HOME=str(tmp / "data"))
    env.update(extra)
    return env


def marimo_run_command(lab: Path | tuple[Path, ...], *args: str) -> tuple[list[str], str]:
    """The command of a headless ``marimo run`` of ``lab`` (or of several notebooks, each
    then at ``URL?file=<its path>``) on a free port, and its URL."""
    port = free_port()
    notebooks = [str(p) for p in (lab if isinstance(lab, tuple) else (lab,))]
    # --no-check: marimo's linter, which `marimo run` runs on every notebook before it serves
    # (about 1.5 CPU-seconds for the seven labs), runs once per test run instead, where an
    # error fails (tests/test_marimo_check.py); a notebook that does not parse, or is not a
    # marimo app, still stops the server.
    # marimo's command line as roofline-labs runs it (launcher.serve_marimo): the frontend's
    # MathJax request is answered by the server, so a page makes no request off the machine.
    cmd = [sys.executable, "-c", SERVE_MARIMO, "run", *notebooks, "--headless", "--port",
           str(port), "--no-token", "--no-check"]
    if args:
        cmd += ["--", *args]
    return cmd, f"http://127.0.0.1:{port}/"


@contextlib.contextmanager
def marimo_run(lab: Path, env: dict, *args: str):
    """A ``marimo run`` server of its own for the block (yields its URL). Tests that only need
    a fresh student use the shared servers of the ``lab_servers`` fixture instead."""
    cmd, url = marimo_run_command(lab, *args)
    # The working directory is the test session's neutral one (tests/conftest.py), not the
    # repository: marimo reads a `.marimo.toml` found by walking up from it.
    with serve(cmd, url, env=env):
        yield url


@dataclass
class LabServer:
    """A notebook's page on a ``marimo run`` server shared by the tests of one test process.

    The server's files live under ``root``: ``ledger/`` (``ROOFLINE_LEDGER_DIR``), ``config/``
    (``XDG_CONFIG_HOME``, with the marimo config that sets its theme) and ``data/``.
    """

    url: str
    root: Path
    proc: subprocess.Popen = field(repr=False)
    stop: contextlib.ExitStack = field(repr=False)

    @property
    def ledger(self) -> Path:
        return self.root / "ledger"

    def forget_students(self) -> None:
        """Remove every file a student's session left (ledger, data, remembered settings):
        the next page opened on this server is a fresh student's first visit. Each page of a
        ``marimo run`` server runs a kernel of its own, which reads the ledger when it starts."""
        shutil.rmtree(self.ledger, ignore_errors=True)
        shutil.rmtree(self.root / "data", ignore_errors=True)
        for entry in (self.root / "config").glob("*"):
            if entry.name == "marimo":
                continue
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink()


def theme_config(root: Path, theme: str | None) -> None:
    """Write the marimo user config of the isolated environment at ``root`` (see
    :func:`isolated_env`) naming ``theme`` ("light", "dark", or "system": follow the browser's
    colour scheme); None writes nothing (marimo's default)."""
    if theme is None:
        return
    config = root / "config" / "marimo" / "marimo.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[display]\ntheme = "{theme}"\n', encoding="utf-8")


class LabServers:
    """One ``marimo run`` server of all seven labs per (arguments, theme) and test process
    (each pytest-xdist worker has its own), started when a test first asks for it and stopped
    when the session ends; a notebook that is not a lab gets a server of its own. Starting
    marimo and importing a lab's packages costs seconds on a busy machine, and a test only
    needs a fresh student: :meth:`run` wipes the server's ledger first
    (:meth:`LabServer.forget_students`). One server for every lab also gives every lab the
    same address for marimo's frontend, which the browser then loads from its cache
    (:class:`CachedBrowser`)."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self._servers: dict[tuple, LabServer] = {}
        self._count = 0

    @contextlib.contextmanager
    def run(self, lab: Path, *args: str, theme: str | None = "system"):
        """The page of ``lab`` on the server with ``args`` (after ``--``) and ``theme`` (see
        :func:`theme_config`) as a fresh student finds it. Yields the :class:`LabServer`.
        The default theme, "system", follows the browser's colour scheme, so one server serves
        the light and the dark pages (:func:`use_scheme`) of every test of that notebook."""
        lab = Path(lab).resolve()
        notebooks = tuple(LABS) if lab in LABS else (lab,)
        key = (notebooks, args, theme)
        server = self._servers.get(key)
        if server is not None and server.proc.poll() is not None:  # it died: start anew
            server.stop.close()
            server = None
        if server is None:
            server = self._servers[key] = self._start(notebooks, args, theme)
        server.forget_students()
        yield replace(server, url=f"{server.url}?file={urllib.parse.quote(str(lab))}")

    def _start(self, notebooks: tuple, args: tuple, theme: str | None) -> LabServer:
        self._count += 1
        root = self.root / f"{self._count}-{notebooks[0].stem if len(notebooks) == 1 else 'labs'}"
        root.mkdir(parents=True)
        theme_config(root, theme)
        cmd, url = marimo_run_command(notebooks, *args)
        stop = contextlib.ExitStack()
        proc = stop.enter_context(serve_process(cmd, url, env=isolated_env(root)))
        return LabServer(url=url, root=root, proc=proc, stop=stop)

    def close(self) -> None:
        for server in self._servers.values():
            server.stop.close()
        self._servers.clear()


#: The two colour schemes every page is looked at in.
SCHEMES = ("light", "dark")


def use_scheme(page, scheme: str, *, marimo: bool = True) -> None:
    """Switch the page to ``scheme`` ("light" or "dark") and wait until marimo has applied it
    (``marimo=False``: a plain page, styled by its own CSS media queries).
    A server whose theme is "system" (:func:`theme_config`) follows the browser's colour
    scheme live, so one page, one flow, can be looked at in both themes without reloading:
    the kernel's outputs do not depend on the theme, only their colours do."""
    page.emulate_media(color_scheme=scheme)
    if marimo:
        page.wait_for_function("s => document.body.classList.contains(s)", arg=scheme)
    # two frames: the restyle is painted before a screenshot
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")


def scheme_of(page) -> str:
    """The colour scheme ``page`` shows now, as its CSS media queries see it."""
    return "dark" if page.evaluate(
        "() => matchMedia('(prefers-color-scheme: dark)').matches") else "light"


def in_each_scheme(page, *, marimo: bool = True):
    """Yield each of :data:`SCHEMES` with the page switched to it (:func:`use_scheme`), the
    page's own scheme first, and leave the page in the other: one switch per call, not a third
    one back (a switch restyles every cell and redraws every figure, seconds of CPU on marimo's
    editor page). What a test checks afterwards does not depend on the scheme."""
    first = scheme_of(page)
    for scheme in sorted(SCHEMES, key=lambda s: s != first):
        use_scheme(page, scheme, marimo=marimo)
        yield scheme


def shoot_schemes(page, path_for, target=None, *, marimo: bool = True,
                  **screenshot_args) -> None:
    """Screenshot ``target`` (a locator; the page when None) in the light and the dark scheme,
    to ``path_for(scheme)`` (the page is left in the second: :func:`in_each_scheme`).
    ``marimo``: see :func:`use_scheme`."""
    for scheme in in_each_scheme(page, marimo=marimo):
        (target or page).screenshot(path=str(path_for(scheme)), **screenshot_args)


#: A cell-op message that puts a cell in the queue or running (marimo writes the message's
#: data without spaces: ``"status":"queued"``).
_RUNNING = re.compile(r'"status":\s*"(?:queued|running)"')


class KernelRuns:
    """Counts the runs the page's kernel has finished: marimo sends ``completed-run`` on the
    websocket when every cell a change set off has run; :attr:`busy` while cells are queued or
    running. Attach before ``page.goto`` (:meth:`watch` also keeps it on the page, for
    ``settle``)."""

    def __init__(self, page):
        self.page = page
        self.completed = 0
        self.busy = False
        self.last_frame = time.monotonic()
        page.on("websocket", lambda ws: ws.on("framereceived", self._frame))

    @classmethod
    def watch(cls, page) -> "KernelRuns":
        page.roofline_kernel_runs = cls(page)
        return page.roofline_kernel_runs

    @staticmethod
    def of(page) -> "KernelRuns | None":
        return getattr(page, "roofline_kernel_runs", None)

    def _frame(self, payload) -> None:
        if not isinstance(payload, str):
            return
        self.last_frame = time.monotonic()
        if '"completed-run"' in payload:
            self.completed += 1
            self.busy = False
        elif _RUNNING.search(payload):
            self.busy = True

    def quiet_for(self, seconds: float) -> bool:
        """A run has finished, none is under way and no message came for ``seconds``."""
        return (self.completed > 0 and not self.busy
                and time.monotonic() - self.last_frame >= seconds)

    def wait_after(self, since: int, *, timeout_ms: int = 5000, quiet_ms: int = 400) -> bool:
        """After an action taken when :attr:`completed` was ``since``: wait until a run has
        completed and no other for ``quiet_ms`` (True), or none within ``timeout_ms`` (False:
        the action changed no value, so the kernel ran nothing)."""
        deadline = time.monotonic() + timeout_ms / 1000
        seen, quiet_since = self.completed, time.monotonic()
        while True:
            self.page.wait_for_timeout(100)
            now = time.monotonic()
            if self.completed != seen:
                seen, quiet_since = self.completed, now
            if seen > since and (now - quiet_since) * 1000 >= quiet_ms:
                return True
            if seen == since and now > deadline:
                return False


#: What a page opens at unless its test asks for another size.
VIEWPORT = {"width": 1280, "height": 1600}
#: Everything an origin keeps for a student but the HTTP cache (Chrome DevTools Protocol's
#: Storage.clearDataForOrigin types): what one test's pages leave must not reach the next.
_ORIGIN_STORAGE = ("cookies,file_systems,indexeddb,local_storage,websql,service_workers,"
                   "cache_storage,shader_cache")


class CachedBrowser:
    """Chromium with one profile on disk per test process, so its HTTP cache and the compiled
    code of marimo's frontend and plotly.js are kept from one page load to the next, as in a
    student's own browser: a load costs about 2 CPU-seconds less than in an empty context.

    :meth:`new_context` and :meth:`new_page` take the arguments of Playwright's
    ``Browser.new_context`` that the tests use (``viewport``, ``color_scheme``), and each
    context starts as a student's first visit: the cookies and the storage of every origin an
    earlier context opened are cleared first (the cache stays). Pages that intercept requests
    (``page.route``) bypass the cache, as Playwright turns it off for them. The benchmarks,
    which time a first open, launch a plain chromium of their own instead."""

    def __init__(self, playwright, profile: Path):
        self._context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, args=CHROMIUM_ARGS, viewport=VIEWPORT)
        #: chromium has gone (closed, or it died)
        self.closed = False
        self._context.on("close", lambda _context: setattr(self, "closed", True))
        # a persistent context opens with a blank page; it stays, for the DevTools session
        self._blank = (self._context.pages or [self._context.new_page()])[0]
        #: the origins whose stored data the next context clears first
        self.origins: set[str] = set()

    def alive(self) -> bool:
        """Chromium and the driver still answer (a dead driver never reports the close)."""
        if self.closed:
            return False
        try:
            self._blank.evaluate("0")
        except Exception:
            return False
        return True

    def new_context(self, *, viewport: dict | None = None,
                    color_scheme: str | None = None) -> "CachedContext":
        self._forget_origins()
        return CachedContext(self, viewport or VIEWPORT, color_scheme)

    def new_page(self, *, viewport: dict | None = None, color_scheme: str | None = None):
        """A page of a context of its own (as ``Browser.new_page``): closing it ends both."""
        context = self.new_context(viewport=viewport, color_scheme=color_scheme)
        page = context.new_page()
        page.on("close", lambda _page: context.forget_page(page))
        return page

    def _open(self, viewport: dict, color_scheme: str | None, scripts: list[str]):
        page = self._context.new_page()
        page.set_viewport_size(viewport)
        if color_scheme:
            page.emulate_media(color_scheme=color_scheme)
        for script in scripts:
            page.add_init_script(script)
        page.on("framenavigated", lambda frame: self._saw(frame.url))
        return page

    def _saw(self, url: str) -> None:
        match = re.match(r"(https?://[^/]+)", url)
        if match:
            self.origins.add(match.group(1))

    def _forget_origins(self) -> None:
        self._context.clear_cookies()
        if not self.origins:
            return
        session = self._context.new_cdp_session(self._blank)
        try:
            for origin in sorted(self.origins):
                session.send("Storage.clearDataForOrigin",
                             {"origin": origin, "storageTypes": _ORIGIN_STORAGE})
        finally:
            session.detach()
        self.origins.clear()

    def close(self) -> None:
        # the profile outlives this browser (the next one opens it): leave no stored data
        self._forget_origins()
        self._context.close()
        self.closed = True


class BrowserStretch:
    """One Playwright driver and one chromium (:class:`CachedBrowser`) for each stretch of
    consecutive tests of a test process that use the ``browser`` fixture (directly or through
    ``page``): started by the first test of a stretch, closed after the last (the
    ``pytest_runtest_teardown`` of tests/browser/conftest.py). Not kept open for the whole
    session: an open sync Playwright leaves an asyncio loop running on this thread, so a
    later ``sync_playwright()`` (tests/test_quiz.py) would fail ("using Playwright Sync API
    inside the asyncio loop"), as would an ``asyncio.run``. Tests are ordered so that each
    process runs its browser tests together (tests/conftest.py), so most processes start one
    chromium, not one a module.
    Where no browser can run (no chromium or no playwright) every browser test of the process
    skips with the reason, outside CI only: in CI (``CI=true``) that is a failure. A chromium
    that is installed but cannot start fails every later browser test of the process at once,
    each with chromium's error, in CI or not (``browser_required``). One that died is started
    anew, and the stored data of the origins it opened is cleared."""

    def __init__(self, profile: Path, *, start_driver=None, open_browser=None,
                 unavailable=None, required=None):
        self.profile = profile
        # what starts a driver, opens a chromium on it, says why none can run here, and
        # whether a browser that cannot run is a failure (else a skip)
        self._start_driver = start_driver or _start_sync_playwright
        self._open_browser = open_browser or CachedBrowser
        self._unavailable = unavailable or skip_reason
        self._required = required or (lambda: browser_required(CHROMIUM))
        self._playwright = None
        self._browser: CachedBrowser | None = None
        self._failed: str | None = None
        self._fails = False  # whether self._failed fails the tests (else skips them)

    def _give_up(self, reason: str, *, fails: bool):
        import pytest

        self._failed, self._fails = reason, fails
        if fails:
            pytest.fail(f"the browser tests cannot run: {reason}", pytrace=False)
        pytest.skip(reason)

    def get(self) -> CachedBrowser:
        """The stretch's chromium, started if there is none or the last one died. Where
        chromium cannot run, skips the test (pytest), or fails it in CI; a chromium that is
        installed and does not start fails it, with chromium's error."""
        if self._failed:
            self._give_up(self._failed, fails=self._fails)
        origins: set[str] = set()
        if self._browser is not None and not self._browser.alive():  # it died: start anew
            origins = set(self._browser.origins)
            self.close(quiet=True)
        if self._browser is None:
            reason = self._unavailable()
            if reason:
                self._give_up(reason, fails=self._required())
            try:
                self._playwright = self._start_driver()
                self._browser = self._open_browser(self._playwright, self.profile)
            except Exception as exc:  # installed, yet it does not start: a broken machine
                self.close(quiet=True)
                self._give_up(f"chromium did not start: {exc}", fails=True)
            self._browser.origins |= origins  # what the dead one left: cleared before a test
        return self._browser

    def close(self, *, quiet: bool = False) -> None:
        """Close chromium, then stop the driver (``quiet``: ignoring what a dead one raises)."""
        browser, driver = self._browser, self._playwright
        self._browser = self._playwright = None
        try:
            if browser is not None and not browser.closed:
                browser.close()
        except Exception:
            if not quiet:
                raise
        finally:
            if driver is not None:
                try:
                    driver.stop()
                except Exception:
                    if not quiet:
                        raise


def _start_sync_playwright():
    from playwright.sync_api import sync_playwright

    return sync_playwright().start()


class CachedContext:
    """The pages of one test in a :class:`CachedBrowser`: ``new_page``, ``add_init_script``
    (for the pages opened after it) and ``close`` (closes them), as a Playwright context."""

    def __init__(self, browser: CachedBrowser, viewport: dict, color_scheme: str | None):
        self._browser, self._viewport, self._scheme = browser, viewport, color_scheme
        self._scripts: list[str] = []
        self.pages: list = []

    def add_init_script(self, script: str) -> None:
        self._scripts.append(script)

    def new_page(self):
        page = self._browser._open(self._viewport, self._scheme, self._scripts)
        self.pages.append(page)
        return page

    def forget_page(self, page) -> None:
        if page in self.pages:
            self.pages.remove(page)

    def close(self) -> None:
        for page in list(self.pages):
            if not page.is_closed():
                page.close()
        self.pages.clear()


#: WCAG 2 contrast ratio of an element's text against what is painted behind it: every
#: background up to the first opaque one (through shadow roots; the page's, else white) blended
#: in order, and the text's colour at its own and its ancestors' opacity over that. Colours go
#: through a canvas, so any CSS colour (rgb, color(srgb/display-p3 ...), oklch, a name) is read
#: as the screen shows it; one the canvas cannot read is an error, never a guess.
_CONTRAST_JS = """e => {
  const g = document.createElement('canvas').getContext('2d', {willReadFrequently: true});
  g.canvas.width = g.canvas.height = 1;
  const rgba = css => {
    g.fillStyle = '#010203'; g.fillStyle = css;
    if (g.fillStyle === '#010203' && !/^#010203$/i.test(css)) throw new Error('colour ' + css);
    g.clearRect(0, 0, 1, 1); g.fillRect(0, 0, 1, 1);
    const d = g.getImageData(0, 0, 1, 1).data;
    return [d[0] / 255, d[1] / 255, d[2] / 255, d[3] / 255];
  };
  const over = (top, under, alpha) => under.map((u, i) => i < 3 ? top[i] * alpha + u * (1 - alpha) : 1);
  const up = n => n.parentElement || (n.getRootNode() instanceof ShadowRoot ? n.getRootNode().host : null);
  const layers = [];
  let opacity = 1;
  for (let n = e; n; n = up(n)) {
    const cs = getComputedStyle(n);
    opacity *= Number(cs.opacity);
    const c = rgba(cs.backgroundColor);
    if (c[3] > 0) layers.push(c);
    if (c[3] >= 0.999) break;
  }
  let bg = [1, 1, 1, 1];
  if (!layers.length || layers[layers.length - 1][3] < 0.999) {
    const page = rgba(getComputedStyle(document.documentElement).backgroundColor);
    const body = rgba(getComputedStyle(document.body).backgroundColor);
    bg = over(body, over(page, bg, page[3]), body[3]);
  }
  for (const c of layers.reverse()) bg = over(c, bg, c[3]);
  const text = rgba(getComputedStyle(e).color);
  const fg = over(text, bg, text[3] * opacity);
  const lum = c => { const f = v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
                     return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]); };
  const [hi, lo] = [lum(fg), lum(bg)].sort((a, b) => b - a);
  return (hi + 0.05) / (lo + 0.05);
}"""


def text_contrast(locator) -> float:
    """The contrast ratio (1 to 21) of ``locator``'s text with the background it sits on."""
    return locator.evaluate(_CONTRAST_JS)


def contrast_in_schemes(page, locator, *, marimo: bool = True) -> dict[str, float]:
    """:func:`text_contrast` of ``locator`` in the light and the dark scheme (the page is left
    in the second: :func:`in_each_scheme`)."""
    return {scheme: round(text_contrast(locator), 2)
            for scheme in in_each_scheme(page, marimo=marimo)}
