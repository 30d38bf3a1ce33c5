"""Messages written for students: every failure state a lab's widgets can reach
names the cause and the way out, in plain words.

Each lab's dropdowns, multiselects and sliders are driven headless one at a time
(tests/widget_sweep.py) and every failure callout is checked against the rule:
- no programmer's words: no exception names, no tracebacks, no ``argument=value`` spelling;
- a way out: an instruction the student can follow (pick, move, lower, deselect, set ...).
New labs (``labs/lab_*.py``) are covered without editing this file.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labs.core import style
from widget_sweep import MALFORMED, failure_messages

LABS = sorted((Path(__file__).resolve().parents[1] / "labs").glob("lab_*.py"))

#: Verbs that begin an instruction to the student.
_VERBS = ("pick|choose|select|deselect|move|lower|raise|set|enter|type|use|store|make|try|fill|"
          "press|add|drop|switch|shorten|lengthen|reduce|increase|shard|back out|go back|turn|"
          "time|rotate|measure|lock|save|open|run|install|keep|give|wait|shrink|grow|halve|"
          "double|remove|clear|download|reload")
#: A way out is an instruction: one of those verbs opening the message, a sentence or a clause
#: (after ``:``, ``;``, a dash, ``⚠``/``✗`` or "or"/"then"). A verb inside a sentence does not
#: count ("a working set of 117 MB" is no instruction), nor does a way out core wrote for every
#: caller, since core cannot know the lab's widgets: the lab must say which picker to move.
WAY_OUT = re.compile(rf"(?:^|[.:;!?—(⚠✗]\s*|\b(?:or|then)\s+)(?:{_VERBS})\b", re.IGNORECASE)
PROGRAMMER = re.compile(r"Traceback|\b\w*Error\b|\bexc\b|\b[a-z_]+=(['\"]|\d)|\bNone\b(?! of)|"
                        r"\bnan\b|\binf\b")


#: Two numbers compared in a message ("4 GPUs give fewer tokens/s than 2 (35 vs 35)") that
#: print the same: the comparison the message makes cannot be read from it.
SAME_NUMBERS = re.compile(r"(?<![\d.,])(\d[\d,.]*) vs \1(?![\d.,]*\d)")


def problems(message: str) -> list[str]:
    found = []
    if SAME_NUMBERS.search(message):
        found.append(f"a comparison printed as equal ({SAME_NUMBERS.search(message).group(0)!r})")
    if PROGRAMMER.search(message):
        found.append(f"programmer's words ({PROGRAMMER.search(message).group(0)!r})")
    if not WAY_OUT.search(message):
        found.append("no way out")
    return found


@pytest.mark.parametrize("message, ok", [
    ("✗ That combination does not work. TPU v5e has no fp16 rate (it has: bf16). Pick bf16.",
     True),
    ("✗ That combination does not work. n_kernels=6 cannot exceed the number of ops (4)", False),
    ("✗ That combination does not work. TPU v5e has no rate for precision='fp16'.", False),
    ("KeyError: 'fp16'", False),
    ("The chain is empty.", False),
    ("The chain is empty: pick at least one op.", True),
    ("Out of memory. Lower the batch, or store the weights in fewer bits.", True),
    ("These 117 MB are a working set that fits in L2.", False),  # 'set' is no instruction
    ("Google TPU v5e has no fp32 rate (it has: bf16, int8).", False),
    ("4 GPUs give fewer tokens/s than 2 (35 vs 35). Back out: use fewer GPUs.", False),
    ("4 GPUs give fewer tokens/s than 2 (35.2 vs 35.4). Back out: use fewer GPUs.", True),
    ("16 GPUs give fewer tokens/s than 8 (37 vs 132). Back out: use fewer GPUs.", True),
])
def test_the_rule_itself(message, ok):
    assert (problems(message) == []) == ok


def test_core_argument_names_are_left_out_for_students():
    from labs.core import hardware

    with pytest.raises(KeyError) as info:
        hardware.get("tpu-v5e").peak_tflops("fp16")
    text = style.error_message(info.value)
    assert "precision=" not in text and "fp16" in text
    assert problems(text) == ["no way out"]  # core names the cause; the lab adds the way out
    assert style.error_message(ValueError("kv_precision='nvfp4' is not a storage format")) \
        == "nvfp4 is not a storage format"


@pytest.mark.slow
@pytest.mark.parametrize("lab_file", LABS, ids=[p.stem for p in LABS])
def test_every_failure_state_names_cause_and_way_out(lab_file, env, monkeypatch):
    monkeypatch.setenv("ROOFLINE_REVEAL", "1")
    shown: dict = {}
    messages = failure_messages(lab_file, shown)
    assert messages, f"{lab_file.name}: no failure state reachable with its widgets (§3.5)"
    bad = {m: (how, problems(m)) for m, how in messages.items() if problems(m)}
    assert not bad, f"{lab_file.name}: " + "\n".join(
        f"\n  [{how}] {', '.join(why)}:\n    {m[:400]}" for m, (how, why) in bad.items())
    # a mistyped entry in a number box ("1,000", "7M") is refused where the box is shown
    for how, (values, said) in shown.items():
        for value in values.values():
            typed = list(value.values()) if isinstance(value, dict) else [value]
            if all(isinstance(t, str) and t in MALFORMED for t in typed):
                assert any(t in m for t in typed for m in said), (
                    f"{lab_file.name}: [{how}] was taken without a message")
