"""The mutation run (tests/mutation/run_mutations.py) on a toy repository: it tells a caught
mistake from one the tests miss, names stale and invalid mutations, and never writes the tree
it reads, even when interrupted. The hand-written lists load, with at least 15 per area."""

from __future__ import annotations

import importlib.util
import sys
import tempfile
from pathlib import Path

import pytest

MUTATION_DIR = Path(__file__).resolve().parent / "mutation"


def _runner():
    if "run_mutations" not in sys.modules:
        spec = importlib.util.spec_from_file_location("run_mutations",
                                                      MUTATION_DIR / "run_mutations.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["run_mutations"] = module  # the lists import Mutation from it
        spec.loader.exec_module(module)
    return sys.modules["run_mutations"]


RM = _runner()
CALC = "def double(x):\n    return 2 * x\n\n\ndef half(x):\n    return x / 2\n"


@pytest.fixture
def toy(tmp_path):
    root = tmp_path / "toy"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "calc.py").write_text(CALC)
    (root / "tests" / "test_calc.py").write_text(
        "from pkg.calc import double\n\n\ndef test_double():\n    assert double(3) == 6\n")
    return root


def _mutations():
    tests = "tests/test_calc.py"
    return [
        RM.Mutation("physics.caught", "pkg/calc.py", "return 2 * x", "return 3 * x", tests,
                    "3 for 2"),
        RM.Mutation("physics.missed", "pkg/calc.py", "return x / 2", "return x / 3", tests,
                    "half() is not tested"),
        RM.Mutation("physics.moved-on", "pkg/calc.py", "return 4 * x", "return 5 * x", tests,
                    "a snippet the code no longer has"),
        RM.Mutation("physics.no-such-tests", "pkg/calc.py", "return 2 * x", "return 3 * x",
                    "tests/test_missing.py", "a selection that runs nothing"),
    ]


def _snapshot(root: Path) -> dict:
    return {p.relative_to(root): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def _watch_temp(monkeypatch) -> list[Path]:
    made: list[Path] = []
    real = tempfile.mkdtemp

    def mkdtemp(*args, **kwargs):
        made.append(Path(real(*args, **kwargs)))
        return str(made[-1])

    monkeypatch.setattr(RM.tempfile, "mkdtemp", mkdtemp)
    return made


@pytest.mark.slow
def test_the_run_tells_caught_missed_stale_and_invalid_mutations_apart(toy, monkeypatch):
    before = _snapshot(toy)
    made = _watch_temp(monkeypatch)
    results = RM.run(_mutations(), root=toy, timeout=120, log=lambda s: None)
    assert [(r.id, r.status) for r in results] == [
        ("physics.caught", "killed"), ("physics.missed", "survived"),
        ("physics.moved-on", "stale"), ("physics.no-such-tests", "invalid")]
    assert _snapshot(toy) == before  # the tree it read is as it was
    assert made and not made[0].exists()  # the copy is gone
    text = RM.table(results)
    assert "| physics | 4 | 1 | 1 | 1 | 1 | 50% |" in text
    assert "physics.missed: half() is not tested" in text
    assert "physics.moved-on: the snippet occurs 0 times in pkg/calc.py" in text


def test_an_interrupted_run_leaves_the_tree_and_no_copy(toy, monkeypatch):
    before = _snapshot(toy)
    made = _watch_temp(monkeypatch)

    def interrupted(copy, args, timeout):
        assert "3 * x" in (copy / "pkg" / "calc.py").read_text()  # the copy holds the mistake
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        RM.run(_mutations()[:1], root=toy, baseline=False, runner=interrupted,
               log=lambda s: None)
    assert _snapshot(toy) == before and made and not made[0].exists()


def test_the_hand_written_lists_cover_every_area_with_at_least_15_mutations():
    every = RM.load()
    for area in RM.AREAS:
        mine = [m for m in every if m.area == area]
        assert len(mine) >= 15, f"{area}: {len(mine)} mutations"
    for m in every:
        assert (RM.REPO / m.file).is_file(), m.id
        assert m.mistake and m.test_args and m.original != m.mutated, m.id
        for arg in m.test_args:
            if arg.startswith("tests/"):
                assert (RM.REPO / arg.split("::")[0]).is_file(), f"{m.id}: {arg}"
