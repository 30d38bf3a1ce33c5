"""`marimo check` is clean on every notebook in labs/ and on the test lab the browser tests serve.

marimo 0.25's `marimo check labs/` also walks into the plain-Python package labs/core and
reports every module there as "not a valid notebook" (exit 1, even for modules that never import
marimo; there is no exclude option), so the project checks the notebooks themselves:
`marimo check labs/*.py`. This test also makes sure every notebook is a real marimo app.
The browser tests' ``marimo run`` servers skip marimo's own lint at start (``--no-check``,
tests/browser/browser_support.marimo_run_command): this test is where a finding fails.
"""

import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "labs", "*.py")))
NOTEBOOKS = [p for p in NOTEBOOKS if not p.endswith("__init__.py")]
#: the small lab the browser tests of the ledger and the explanation serve
NOTEBOOKS.append(os.path.join(ROOT, "tests", "_lock_lab.py"))


def test_there_are_notebooks():
    assert any(os.path.basename(p).startswith("lab_0") for p in NOTEBOOKS)


def test_marimo_check_is_clean_on_every_notebook():
    r = subprocess.run([sys.executable, "-m", "marimo", "check", *NOTEBOOKS],
                       capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "error" not in (r.stdout + r.stderr).lower(), r.stdout + r.stderr
