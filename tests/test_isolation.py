"""The test suite does not depend on the user running it.

A student who switched marimo to the dark theme got ``output_max_bytes = 8000000`` written to
``~/.config/marimo/marimo.toml`` and a red test run. ``tests/conftest.py`` runs every session
as a fresh user; these tests check that it does, and run part of the suite in a subprocess
under a hostile user configuration, the way the student types the README's command.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from isolation_support import CLEARED_PREFIXES, KEEP

ROOT = Path(__file__).resolve().parents[1]

HOSTILE_MARIMO_TOML = """\
[runtime]
output_max_bytes = 3000
std_stream_max_bytes = 1000
auto_instantiate = false
on_cell_change = "lazy"
auto_reload = "autorun"

[display]
theme = "dark"
cell_output = "below"
default_width = "full"
code_editor_font_size = 20

[save]
autosave = "off"
format_on_save = true
"""

#: The test the issue reported, an instructor copy (reveal off/on), a lab run headless, the
#: answer-leak check, and a real browser walk through a lab (skips without chromium).
UNDER_HOSTILE_CONFIG = [
    "tests/test_export.py::test_broken_lab_fails_loudly_naming_lab_and_cells",
    "tests/test_export.py::test_instructor_copy_opens_gates_via_cli_args",
    "tests/test_lab_01.py::test_locked_run_hides_every_instrument",
    "tests/test_answer_leaks.py::test_closed_lab_shows_no_reference_answer[lab_01_memory_wall]",
    "tests/browser/test_labs_browser.py::test_gate_lock_slider_reload[lab_01_memory_wall]",
]


def test_session_runs_as_a_fresh_user(isolated_user):
    home = Path(os.environ["HOME"])
    assert home == isolated_user and not (home / ".marimo.toml").exists()
    assert Path(os.environ["XDG_CONFIG_HOME"]).is_relative_to(home)
    leftovers = [n for n in os.environ if n.startswith(CLEARED_PREFIXES) and n not in KEEP]
    assert leftovers == []
    # No .marimo.toml on the way up from the working directory either.
    cwd = Path.cwd()
    assert not any((d / ".marimo.toml").exists() for d in (cwd, *cwd.parents))


def test_marimo_sees_only_its_defaults():
    from marimo._config.config import DEFAULT_CONFIG
    from marimo._config.manager import get_default_config_manager

    config = get_default_config_manager(current_path=None).get_config()
    for section, key in (("runtime", "output_max_bytes"), ("display", "theme"),
                         ("display", "cell_output")):
        assert config[section][key] == DEFAULT_CONFIG[section][key], (section, key)


@pytest.mark.slow
@pytest.mark.browser  # its walk drives chromium: part of the whole suite, not the fast loop
def test_suite_passes_with_a_hostile_user_config(tmp_path):
    home = tmp_path / "student-home"
    (home / ".config" / "marimo").mkdir(parents=True)
    for path in (home / ".config" / "marimo" / "marimo.toml", home / ".marimo.toml"):
        path.write_text(HOSTILE_MARIMO_TOML, encoding="utf-8")
    real_ledger = home / "my-real-ledger"
    env = dict(os.environ)
    # not a worker of this run: its temporary folders and locks are its own (tests/run_support.py)
    for name in ("XDG_DATA_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME", *[
            n for n in env if n.startswith("PYTEST_XDIST_")]):
        env.pop(name, None)
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               MARIMO_OUTPUT_MAX_BYTES="100", ROOFLINE_REVEAL="1",
               ROOFLINE_LEDGER_DIR=str(real_ledger), ROOFLINE_STUDENT_ID="the-student")
    proc = subprocess.run(
        # -n 0: in this process, not in parallel workers (five tests; this one already runs
        # beside the rest of the suite)
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--numprocesses=0",
         *UNDER_HOSTILE_CONFIG],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    summary = proc.stdout.strip().splitlines()[-1] if proc.stdout.strip() else proc.stderr
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert "failed" not in summary and "error" not in summary, summary
    assert not real_ledger.exists(), "a test wrote into the student's own ledger folder"
    assert not (home / ".config" / "roofline-labs").exists(), "a test remembered settings"
    for path in (home / ".config" / "marimo" / "marimo.toml", home / ".marimo.toml"):
        assert path.read_text(encoding="utf-8") == HOSTILE_MARIMO_TOML
