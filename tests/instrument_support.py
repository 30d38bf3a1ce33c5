"""Read what a lab's instruments show, as quantities (quiz.Instruments, LABS_SPEC §3).

:func:`dimensions_shown` maps a cell's rendered text (``leak_support.rendered_text``: HTML,
widget values, figure text and hover) to the dimensions of ``quiz.DIMENSIONS`` it shows: a
number written with a unit of that dimension, or a regime's name. A view that shows a
dimension must declare a quantity of that dimension (``tests/test_instruments.py``); which case
of it (``time:allreduce`` or ``time:exposed``) is held by the answer walks, which search the
values themselves (``tests/test_answer_leaks.py``).

:func:`lab_gates` finds a lab's instruments in its source: every cell that calls
``INSTRUMENTS.gate("name", locked)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: A number as the labs print it (separators, decimals, an exponent), standing alone.
NUMBER = r"(?<![\w.,\-])[-−]?\d[\d,\u2009\u202f ]*(?:\.\d+)?(?:[eE][+-]?\d+)?"
_SPACE = r"[\s\u00a0\u2009\u202f]*"
#: How each dimension shows on a page. Units are written after the number (the labs' style).
DIMENSION_PATTERNS = {
    # integer math's intensity is in OP/B (as its rate is in TOPS)
    "intensity": re.compile(rf"{NUMBER}{_SPACE}(?:FLOP|OP){_SPACE}/{_SPACE}B(?:yte)?\b"),
    "regime": re.compile(r"\b(?:memory|compute|overhead|launch|link|latency|bandwidth|HBM|DRAM"
                         r"|L1|L2|L3|NIC|NVLink|PCIe)[- ]bound\b", re.I),
    "time": re.compile(rf"{NUMBER}{_SPACE}(?:ns|µs|μs|us|ms|s)\b(?!/)"),
    "ratio": re.compile(rf"{NUMBER}{_SPACE}×(?!{_SPACE}\d)"),
    # not a plotly template token ("171 %{hovertext}") or an iframe's width ("100%400px")
    "share": re.compile(rf"{NUMBER}{_SPACE}%(?![{{\w])"),
    "bandwidth": re.compile(rf"{NUMBER}{_SPACE}(?:[kKMGTP]i?B|B){_SPACE}/{_SPACE}s\b"),
    # a space before the unit, as the labs print sizes: "80GB" and "8B" are names (a device's
    # memory, a model's parameters), not a size the page computed
    "bytes": re.compile(rf"{NUMBER}[\s\u00a0\u2009\u202f]+(?:[kKMGTP]i?B|B)\b(?!{_SPACE}/)"),
    "throughput": re.compile(rf"{NUMBER}{_SPACE}(?:[GTP]FLOP/s|[GTP]FLOPS|TOPS)\b"),
}


#: A comparison's verdict (``quiz.ratio_verdict``): how far the student's own prediction is from
#: the number the comparison shows beside it, not a quantity of its own.
VERDICT = re.compile(r"right \(within [\d.]+\s*%\)|off by [\d.,]+\s*×(?: \(too (?:high|low)\))?"
                     r"(?:, within the [\d.,]+\s*× graded as correct)?"
                     r"|within the [\d.,]+\s*× graded as correct")


def dimensions_shown(text: str) -> dict[str, str]:
    """{dimension: the first text that shows it} for each dimension ``text`` shows (a
    comparison's verdict words aside)."""
    found = {}
    text = VERDICT.sub(" ", text)
    for dimension, pattern in DIMENSION_PATTERNS.items():
        m = pattern.search(text)
        if m:
            found[dimension] = m.group(0).strip()
    return found


_GATE_CALL = re.compile(r"INSTRUMENTS\.gate\(\s*[\"']([^\"']+)[\"']")


@dataclass(frozen=True)
class Gate:
    """A cell that opens on the rule: the instrument it opens, its cell id and position."""

    instrument: str
    cell_id: Any
    index: int


def lab_gates(app: Any) -> list[Gate]:
    """Every cell of ``app`` that stops on ``INSTRUMENTS.gate(name, ...)``, in notebook order."""
    out = []
    for i, data in enumerate(app._cell_manager.cell_data()):
        for name in _GATE_CALL.findall(data.code):
            out.append(Gate(name, data.cell_id, i))
    return out
