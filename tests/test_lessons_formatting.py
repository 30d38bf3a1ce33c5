"""The lesson modules write every number a student reads with labs.core.physics.units
(LABS_SPEC §6), so the same value reads the same way on a card, in a hover and in a sentence.

An inline format spec in a lesson's f-string (``{x:.0f}``, ``{x:,.3g}``) is allowed only where
the rule keeps one:
- a percentage: the spec ends in ``%`` (``{share:.1%}``), or the text right after it starts
  with ``%`` (``{100 * share:.1f}%``, ``{error:+.0f} %``): fixed decimals read apart;
- a ``×`` factor with fixed decimals that the text compares (``{speedup:.2f}×, not 4×``,
  ``×{ratio:.3f}, not 2``): the spec is ``.Nf`` and a ``×`` touches it on either side.
Everything else (AIs, ridges, rates, bandwidths, bytes, times, counts) goes through
``format_value`` (``significant=4`` in a derivation shown with its factors),
``format_bytes``, ``format_seconds``, ``format_flops`` or ``format_bandwidth``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

LESSONS = Path(__file__).resolve().parents[1] / "labs" / "core" / "course" / "lessons"
_FIXED_DECIMALS = re.compile(r"\.\d+f")


def _text(node) -> str:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _kept(spec: str, before: str, after: str) -> bool:
    """Whether an inline spec is one of the kept kinds (see the module docstring)."""
    if spec.endswith("%") or after.lstrip(" ").startswith("%"):
        return True
    return bool(_FIXED_DECIMALS.fullmatch(spec)) and (
        after.startswith("×") or before.endswith("×"))


def inline_specs(source: str) -> list[tuple[int, str, str]]:
    """(line, expression, spec) of every f-string field in ``source`` whose format spec is not
    a kept kind."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.JoinedStr):
            continue
        parts = node.values
        for i, part in enumerate(parts):
            if not isinstance(part, ast.FormattedValue) or part.format_spec is None:
                continue
            spec = "".join(_text(v) if isinstance(v, ast.Constant) else "{…}"
                           for v in part.format_spec.values)
            before = _text(parts[i - 1]) if i > 0 else ""
            after = _text(parts[i + 1]) if i + 1 < len(parts) else ""
            if not _kept(spec, before, after):
                found.append((part.value.lineno, ast.unparse(part.value), spec))
    return found


MODULES = sorted(p for p in LESSONS.glob("*.py") if p.name != "__init__.py")


def test_every_lesson_module_is_scanned():
    assert {p.stem for p in MODULES} == {"kernel_fusion", "many_chips", "memory_hierarchy",
                                         "memory_wall", "precision_rho", "your_model"}


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.stem)
def test_lesson_numbers_go_through_the_units_formatters(module):
    found = inline_specs(module.read_text(encoding="utf-8"))
    assert not found, (f"{module.name}: inline format specs; write these numbers with "
                       "labs.core.physics.units (LABS_SPEC §6): "
                       + "; ".join(f"line {n}: {{{expr}:{spec}}}" for n, expr, spec in found))


@pytest.mark.parametrize("line, flagged", [
    ('f"ridge of {ridge:.0f} FLOP/B"', True),           # a ridge: format_value
    ('f"{n:,} elements"', True),                         # a count: format_value
    ('f"{bw * 1e3:.3g} ms"', True),                      # a time: format_seconds
    ('f"{x:.2f} GB"', True),                             # bytes: format_bytes
    ('f"{speedup:.2g}×"', True),                         # a factor, not fixed decimals
    ('f"{share:.1%} of the bound"', False),              # a percentage
    ('f"{100 * share:.1f}% of the step"', False),        # a percentage, scaled by hand
    ('f"{error:+.0f} %"', False),                        # a signed percentage
    ('f"{speedup:.2f}×, not 4×."', False),               # a compared factor
    ('f"change ×{ratio:.3f}, not 2"', False),            # a compared factor, × before
    ('f"{units.format_value(ai)} FLOP/B"', False),       # no spec at all
])
def test_the_scan_flags_inline_specs_and_keeps_the_kept_kinds(line, flagged):
    assert bool(inline_specs(line)) is flagged


# --- the notebooks: held where they are today, so that no new inline format comes in ---------

LABS = sorted(LESSONS.parents[2].glob("lab_*.py"))
#: Inline format specs of each lab's own cells today (question texts among them: the
#: catalogue reads those from the source). Each may only fall; a lab that lowers its count
#: lowers it here. The lesson modules are at zero (above).
NOTEBOOK_SPECS_HELD = {"lab_01_memory_wall.py": 14, "lab_02_design_challenge.py": 50,
                       "lab_03_precision_rho.py": 15, "lab_04_fusion.py": 40,
                       "lab_05_memory_hierarchy.py": 15, "lab_06_many_chips.py": 17,
                       "lab_07_your_model.py": 8}


def test_every_lab_is_held():
    assert {p.name for p in LABS} == set(NOTEBOOK_SPECS_HELD)


@pytest.mark.parametrize("lab", LABS, ids=lambda p: p.stem)
def test_no_lab_adds_an_inline_number_format(lab):
    found = inline_specs(lab.read_text(encoding="utf-8"))
    held = NOTEBOOK_SPECS_HELD.get(lab.name, 0)
    assert len(found) <= held, (
        f"{lab.name}: {len(found)} inline format specs, {held} held: write new numbers with "
        "labs.core.physics.units (LABS_SPEC §6): "
        + "; ".join(f"line {n}: {{{expr}:{spec}}}" for n, expr, spec in found))
    assert len(found) == held, (f"{lab.name} is down to {len(found)} inline format specs: "
                                "lower NOTEBOOK_SPECS_HELD to match")
