"""Nothing on a student's path sends them to a tool or a page that answers an open prediction.

A student can always compute with the library; the rule is about where the course sends them.
The student's path is the README and docs/students (the labs and their notices are checked by
the labs' own tests). The tools whose output answers a lab's predictions are not named there;
each says in its ``--help`` and on its docs page which predictions it answers and to lock them
first; and no page points to the recorded run that holds Lab 5's reference answers.
"""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"

#: Each tool whose output answers lab predictions: (lab, predictions it answers or shows).
ANSWERING_TOOLS = {
    "labs-profile": (7, (1, 2, 5)),
    "bench_hierarchy.py": (5, (1, 4)),
    "bench_profile.py": (7, (1, 3, 4)),
}
#: Files that hold a lab's reference answers (the recorded run Lab 5's instructor copy uses).
ANSWER_FILES = re.compile(r"reference_machine(\.py)?\b|hierarchy-[\w.-]*\.json")


def student_path() -> dict[str, str]:
    files = [ROOT / "README.md", *sorted((DOCS / "students").glob("*.md"))]
    return {str(f.relative_to(ROOT)): f.read_text(encoding="utf-8") for f in files}


def _numbers(predictions) -> str:
    """(1, 2, 5) -> "1, 2 and 5", as the pages write them."""
    *head, last = [str(n) for n in predictions]
    return f"{', '.join(head)} and {last}" if head else last


def says_which_predictions(text: str, lab: int, predictions) -> bool:
    flat = re.sub(r"\s+", " ", text)
    return (f"Lab {lab}'s Predictions {_numbers(predictions)}" in flat
            and re.search(r"\block\b", flat, re.I) is not None)


def tool_help(name: str) -> str:
    if name == "labs-profile":
        from labs.core.measure.profile import cli as profile_cli

        out = io.StringIO()
        with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
            profile_cli.main(["--help"])
        return out.getvalue()
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / name), "--help"],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_student_path_names_no_tool_that_answers_a_prediction():
    named = [f"{path} names {tool}" for path, text in student_path().items()
             for tool in ANSWERING_TOOLS if tool in text]
    named += [f"{path} points to {m.group(0)}" for path, text in student_path().items()
              for m in ANSWER_FILES.finditer(text)]
    assert not named, "\n".join(named)


@pytest.mark.parametrize("tool", sorted(ANSWERING_TOOLS))
def test_each_answering_tool_says_which_predictions_and_to_lock_them_first(tool):
    lab, predictions = ANSWERING_TOOLS[tool]
    text = tool_help(tool)
    assert says_which_predictions(text, lab, predictions), text[-800:]


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end > 0 else None]


def test_each_answering_tools_docs_page_says_it_too():
    live = (DOCS / "measurement" / "live.md").read_text(encoding="utf-8")
    instruments = (DOCS / "measurement" / "instruments.md").read_text(encoding="utf-8")
    pages = {
        "labs-profile": _section(live, "## Your model on the roofline (`labs-profile`)"),
        "bench_hierarchy.py": _section(instruments, "## The memory hierarchy"),
        "bench_profile.py": _section(instruments, "## Lab 7's default profile"),
    }
    for tool, section in pages.items():
        lab, predictions = ANSWERING_TOOLS[tool]
        assert says_which_predictions(section, lab, predictions), tool


def test_the_api_reference_says_which_functions_answer_which_predictions():
    text = (DOCS / "reference" / "index.md").read_text(encoding="utf-8")
    warning = text[:text.index("## A tour")]
    for function, lab, predictions in (("collectives.collective_time", 6, (1,)),
                                       ("sharding.tp_critical_shard", 6, (2, 3)),
                                       ("sharding.dp_step", 6, (5,)),
                                       ("quantization.relative_throughput", 5, (5,))):
        said = re.sub(r"\s+", " ", warning)
        word = "Prediction" if len(predictions) == 1 else "Predictions"
        assert re.search(rf"`{re.escape(function)}`[^`]*Lab {lab}'s {word} "
                         rf"{re.escape(_numbers(predictions))}", said), function
    assert re.search(r"\block\b", warning)


def test_no_docs_page_points_to_the_recorded_run_that_holds_lab_5s_answers():
    pages = {str(p.relative_to(ROOT)): p.read_text(encoding="utf-8")
             for p in sorted(DOCS.rglob("*.md"))}
    found = [f"{path}: {m.group(0)}" for path, text in pages.items()
             for m in ANSWER_FILES.finditer(text)]
    assert not found, "\n".join(found)


def test_the_checks_can_fail():
    assert says_which_predictions("answers Lab 7's Predictions 1, 2 and 5: lock them", 7, (1, 2, 5))
    assert not says_which_predictions("answers Lab 7's Predictions 1 and 2: lock them",
                                      7, (1, 2, 5))
    assert not says_which_predictions("answers Lab 5's Predictions 1 and 4", 5, (1, 4))
    assert ANSWER_FILES.search("see benchmarks/results/hierarchy-vm-2026-11-23.json")
    assert ANSWER_FILES.search("rewrites labs/core/physics/reference_machine.py")
