"""Fixtures shared by the tests.

Every test session runs as a user with nothing of their own: a fresh HOME and XDG
folders, no ``MARIMO_*`` or ``ROOFLINE_*`` variables (except ``ROOFLINE_CHROMIUM``, which only
says where the test browser is), and a neutral working directory. So a student's marimo
settings (``~/.config/marimo/marimo.toml``, ``~/.marimo.toml``: theme, output limits, lazy
runtime), remembered student id and real ledger folder can neither change a result nor be
written to. Subprocesses inherit the same environment. ``tests/test_isolation.py`` runs part
of the suite under a deliberately hostile user configuration to prove it.

The suite runs in parallel (pytest-xdist, see pyproject's addopts): each worker is a process of
its own with its own fresh user, temporary folders and servers (tests/browser/conftest.py).
There is one worker more than pytest-xdist would start (one per physical core), as the browser
tests spend much of their time waiting for a page, and a test marked ``alone`` (it times
wall-clock work) runs while no other test of the run does.
"""

from __future__ import annotations

import copy
import functools
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from isolation_support import isolated_environment
from run_support import TURNS_KEY, TurnTaking, fcntl

from labs.core import ledger


def _memoize_marimo_markdown() -> None:
    """Notebook runs in this process convert each ``mo.md`` text once, not once per run.

    marimo turns markdown into HTML with a fixed set of extensions, reset before every text, so
    the HTML is a function of the text alone; the leak walks and lab tests re-run each lab
    hundreds of times with the same texts, and the conversion was about a quarter of a run.
    Another marimo layout (no ``_render_markdown``) is left as it is: slower, not wrong."""
    try:
        import marimo._output.md as marimo_md
    except ImportError:
        return
    render = getattr(marimo_md, "_render_markdown", None)
    if render is not None and not hasattr(render, "cache_info"):
        marimo_md._render_markdown = functools.lru_cache(maxsize=16_384)(render)


_memoize_marimo_markdown()


def _memoize_plotly_js_hash() -> None:
    """A figure shown by a notebook run in this process reads plotly.js and hashes it once.

    Outside marimo's kernel (``app.run``) a figure is shown through its ``_repr_html_``, and
    plotly's ``to_html`` then reads its 3.5 MB plotly.js bundle and computes the bundle's
    SHA-256 (the script tag's integrity hash) for every figure: about a third of a leak walk.
    The bundle is a file of the installed plotly, so the text and its hash are the same for
    the whole run. Another plotly layout is left as it is."""
    try:
        from plotly.io import _html
    except ImportError:
        return
    read, digest = (getattr(_html, name, None) for name in ("get_plotlyjs", "_generate_sri_hash"))
    if read is None or digest is None or hasattr(read, "cache_info"):
        return
    _html.get_plotlyjs = functools.cache(read)  # one string object: its hash is kept
    _html._generate_sri_hash = functools.lru_cache(maxsize=4)(digest)


_memoize_plotly_js_hash()


def _memoize_marimo_run_setup() -> None:
    """A notebook run in this process (``App.run``) looks up marimo's plugins and reads its
    configuration files once, not on every run.

    Every ``App.run`` lists the entry points of every installed package (to find a cell
    executor plugin) and parses the notebook's script header and the nearest pyproject.toml:
    about 15 ms a run, over thousands of runs. The installed packages do not change during a
    test run; a file is parsed again when its modification time or size changes, and each
    caller gets its own copy of what was parsed. Another marimo layout is left as it is."""
    try:
        import marimo._entrypoints.registry as registry
        import marimo._environments.script_metadata as script_metadata
        from marimo._utils.toml import toml_reader
    except ImportError:
        return
    if not hasattr(registry.get_entry_points, "cache_info"):
        registry.get_entry_points = functools.lru_cache(maxsize=64)(registry.get_entry_points)
    if not hasattr(script_metadata.loads, "cache_info"):
        parse_header = functools.lru_cache(maxsize=64)(script_metadata.loads)
        loads = functools.wraps(script_metadata.loads)(
            lambda script: copy.deepcopy(parse_header(script)))
        loads.cache_info = parse_header.cache_info
        script_metadata.loads = loads
    read = getattr(toml_reader, "read", None)
    if read is not None and not hasattr(read, "cache_info"):
        parse_file = functools.lru_cache(maxsize=64)(
            lambda path, _mtime_ns, _size: read(path))

        def cached_read(file_path):
            stat = os.stat(file_path)
            return copy.deepcopy(parse_file(str(file_path), stat.st_mtime_ns, stat.st_size))

        cached_read.cache_info = parse_file.cache_info
        toml_reader.read = cached_read


_memoize_marimo_run_setup()


def pytest_addoption(parser, pluginmanager):
    """``--cpu-report`` (tests/cpu_report.py): CPU-seconds per module and test at the end (in
    one process: ``--numprocesses=0``). Without pytest-xdist (installed by the ``test`` extra;
    ``-p no:xdist`` turns it off) the ``--numprocesses``, ``--maxprocesses`` and ``--dist`` of
    pyproject's addopts are accepted and ignored: the suite runs in one process instead of
    stopping at an unknown option."""
    parser.addoption("--cpu-report", action="store_true", default=False,
                     help="list the CPU-seconds of each test module and the costliest tests "
                          "(run in one process: --numprocesses=0)")
    if pluginmanager.has_plugin("xdist") or pluginmanager.has_plugin("xdist.plugin"):
        return
    group = parser.getgroup("xdist", "parallel runs (pytest-xdist is not installed)")
    group.addoption("--numprocesses", dest="numprocesses", default=None,
                    help="ignored: pytest-xdist is not installed")
    group.addoption("--maxprocesses", dest="maxprocesses", default=None,
                    help="ignored: pytest-xdist is not installed")
    group.addoption("--dist", dest="dist", default="no",
                    help="ignored: pytest-xdist is not installed")


def _runs_browser_tests(config) -> bool:
    """False where ``-m`` leaves the browser tests out (the fast loop, ``-m "not browser"``)."""
    expr = (config.getoption("markexpr", "") or "").replace(" ", "")
    return "notbrowser" not in expr


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config):
    """``--numprocesses=auto``: pytest-xdist's count (the physical cores) plus one. The browser
    tests spend much of their time waiting for a page to draw or to settle; the extra worker
    keeps the cores busy meanwhile (docs/authors/testing.md has the timings). Without them
    (``-m "not browser"``) the cores alone: an extra worker would only add its start-up
    (about 12 CPU-seconds). ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still decides where it is set."""
    from xdist.plugin import pytest_xdist_auto_num_workers as xdist_count

    if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS"):
        return None  # pytest-xdist reads it
    return xdist_count(config) + (1 if _runs_browser_tests(config) else 0)


#: The run's lock folder (in the controlling process) and this worker's TurnTaking (None when
#: the run is not parallel or the platform has no file locks).
_TURNS_FOLDER = pytest.StashKey[Path]()
_TURNS = pytest.StashKey["TurnTaking | None"]()


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):
    """In the controlling process of a parallel run: one lock file for the run's
    :class:`run_support.TurnTaking`, handed to every worker."""
    if fcntl is None:
        return
    stash = node.config.stash
    if _TURNS_FOLDER not in stash:
        stash[_TURNS_FOLDER] = Path(tempfile.mkdtemp(prefix="pytest-turns-"))
    node.workerinput[TURNS_KEY] = str(stash[_TURNS_FOLDER] / "turns.lock")


def pytest_configure(config):
    if config.getoption("--cpu-report", default=False):
        from cpu_report import CpuReport

        config.pluginmanager.register(CpuReport(), "cpu_report")
    lock_file = getattr(config, "workerinput", {}).get(TURNS_KEY)
    config.stash[_TURNS] = TurnTaking(Path(lock_file)) if lock_file else None


def pytest_unconfigure(config):
    turns = config.stash.get(_TURNS, None)
    if turns is not None:
        turns.close()
    folder = config.stash.get(_TURNS_FOLDER, None)
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """In a parallel run, a test marked ``alone`` waits until the tests under way have ended
    and runs while the other workers wait; every other test runs beside the others."""
    turns = item.config.stash[_TURNS]
    if turns is None:
        yield
        return
    # a test skipped for want of torch or a GPU times nothing: it need not hold the others off
    alone = item.get_closest_marker("alone") is not None and not _missing_requirement(item)
    with turns.turn(alone=alone):
        yield


@pytest.fixture(scope="session", autouse=True)
def isolated_user(tmp_path_factory):
    """The whole session (and every subprocess it starts) as a fresh user; see the module
    docstring. The working directory is an empty folder, because marimo also reads a
    ``.marimo.toml`` found by walking up from the working directory."""
    home = tmp_path_factory.mktemp("home")
    workdir = tmp_path_factory.mktemp("cwd")
    target = isolated_environment(home)
    mp = pytest.MonkeyPatch()
    for name in set(os.environ) - set(target):
        mp.delenv(name)
    for name, value in target.items():
        if os.environ.get(name) != value:
            mp.setenv(name, value)
    mp.chdir(workdir)
    _forget_marimo_config_path()
    yield home
    mp.undo()
    _forget_marimo_config_path()


def _forget_marimo_config_path() -> None:
    """marimo caches where it found the user config (per process): look again."""
    try:
        from marimo._config.utils import get_user_config_path
    except ImportError:  # another marimo layout: nothing cached that we know of
        return
    get_user_config_path.cache_clear()


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A private ledger folder, config folder and student id; reveal mode off."""
    monkeypatch.setenv(ledger.ENV_LEDGER_DIR, str(tmp_path / "ledger"))
    monkeypatch.setenv(ledger.ENV_STUDENT_ID, "ada")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("ROOFLINE_REVEAL", raising=False)
    return tmp_path


def _missing_requirement(item) -> str | None:
    """Why ``item`` is skipped for want of torch or a GPU (see pytest_runtest_setup), or None."""
    needs_gpu = item.get_closest_marker("gpu") is not None
    if (needs_gpu or item.get_closest_marker("torch") is not None) and (
            importlib.util.find_spec("torch") is None):
        return "needs torch (pip install -e '.[live]')"
    if needs_gpu:
        import torch

        if not torch.cuda.is_available():
            return "needs a CUDA GPU"
    return None


def pytest_runtest_setup(item):
    """``@pytest.mark.torch``: the test needs torch (the ``live`` extra, which the plain
    install leaves out), so it is skipped, saying so, where torch is not installed; every
    other test in the same file still runs (no module-level skip).
    ``@pytest.mark.gpu``: the test needs a CUDA GPU (and torch); ``python -m pytest -m gpu``
    runs exactly these. torch is imported only for a gpu test (it costs seconds)."""
    reason = _missing_requirement(item)
    if reason:
        pytest.skip(reason)


@pytest.hookimpl(trylast=True)  # after -m, -k and --deselect have taken their tests out
def pytest_collection_modifyitems(session, config, items):
    """Order the tests for pytest-xdist's worksteal, which gives each of the n workers one of n
    contiguous, equal shares of this list and, when a worker runs out, moves to it half of the
    longest queue left (from its end). So each share begins with long tests and ends with
    short ones: first its part of the modules that drive a browser (they mostly wait for
    pages; begun first, they do not end the run alone), then of the modules with a ``slow``
    test, then the other modules in file order, and last the modules with a test that runs
    ``alone`` (reached when the tests under way are short, so it waits little for them).
    A module's tests stay together and in order (its module-scoped fixtures are made once;
    only where one share ends and the next begins may a module of the rest be cut), and each
    long module goes to the share with the fewest long tests yet."""
    workers = int(getattr(config, "workerinput", {}).get("workercount", 1))
    modules: dict = {}
    for item in items:
        modules.setdefault(item.path, []).append(item)

    def count(tests, marker):
        return sum(t.get_closest_marker(marker) is not None for t in tests)

    def deal(group, marker, load):
        """The modules of ``group``, the most ``marker`` tests first, each to the share whose
        ``load`` (long tests so far) is least."""
        shares = [[] for _ in range(workers)]
        for tests in sorted(group, key=lambda t: -count(t, marker)):
            k = load.index(min(load))
            shares[k] += tests
            load[k] += count(tests, marker)
        return shares

    groups: dict = {"browser": [], "alone": [], "slow": [], "rest": []}
    for tests in modules.values():
        kind = next((m for m in ("browser", "alone", "slow") if count(tests, m)), "rest")
        groups[kind].append(tests)
    long_tests = [0] * workers  # the slow modules are dealt on top of the browser ones
    heads = [b + s for b, s in zip(deal(groups["browser"], "browser", long_tests),
                                   deal(groups["slow"], "slow", long_tests))]
    tails = deal(groups["alone"], "alone", [0] * workers)
    rest = [item for tests in groups["rest"] for item in tests]
    order, left, used = [], len(items), 0
    for k in range(workers):
        size = left // (workers - k)  # how pytest-xdist cuts the list into shares
        left -= size
        fill = max(0, size - len(heads[k]) - len(tails[k]))
        order += heads[k] + rest[used:used + fill] + tails[k]
        used += fill
    items[:] = order + rest[used:]
