"""Fixtures shared by the notebook tests."""

import pytest

from labs.core import ledger


@pytest.fixture
def env(tmp_path, monkeypatch):
    """A private ledger folder, config folder and student id; reveal mode off."""
    monkeypatch.setenv(ledger.ENV_LEDGER_DIR, str(tmp_path / "ledger"))
    monkeypatch.setenv(ledger.ENV_STUDENT_ID, "ada")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("ROOFLINE_REVEAL", raising=False)
    return tmp_path
