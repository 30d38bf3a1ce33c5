"""No lab's source holds one of its graded answers as a literal: each is computed from core.

An explanation that states a graded answer is computed from labs.core at run time, like the
reveal explanations, so the source a student can open (``labs/lab_*.py``) never carries the
number, and a change in the physics cannot leave a stale answer in the text. The references
are read from each lab itself, in reveal mode (as ``tests/test_answer_leaks.py`` collects them),
never typed here.

What counts as a literal rendering (see :func:`literal_answers`, tested on made-up sources at
the end): any of the renderings the leak test searches (``leak_support.numeric_renderings``,
plus Python's ``36_380``) standing alone, after LaTeX's number spacing is undone
(``36{,}380``, ``36\\,380``); one with three or more significant digits counts anywhere, a
shorter one ("2.7" for 2.714) only next to the answer's unit ("2.7×", ``2.7\\times``) or after
"≈" / "about". A number followed by a unit of another dimension ("2.7 GB" for a ratio) does not
count. Choice answers are not searched: their option labels are in the source by necessity.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from labs.core import reveal
from leak_support import numeric_renderings
from notebook_support import load_app

ROOT = Path(__file__).resolve().parents[1]
LABS = sorted((ROOT / "labs").glob("lab_*.py"))



def collect_references(lab_file: Path, ledger_dir: Path) -> list[tuple[str, float, str]]:
    """``(item_id, value, units)`` of every numeric answer the lab reveals in reveal mode (its
    own ledger folder): what the grader compares with."""
    from labs.core import ledger

    seen: list[tuple[str, float, str]] = []
    original = reveal.reference

    def recording(*args, **kwargs):
        answer = original(*args, **kwargs)
        if (answer is not None and getattr(answer, "answer_type", "numeric") != "choice"
                and isinstance(answer.value, (int, float)) and not isinstance(answer.value, bool)):
            seen.append((answer.item_id, float(answer.value), getattr(answer, "units", "") or ""))
        return answer

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reveal, "reference", recording)
        mp.setenv("ROOFLINE_REVEAL", "1")
        mp.setenv(ledger.ENV_LEDGER_DIR, str(ledger_dir))
        load_app(lab_file, f"_{lab_file.stem}_sources").run()
    return seen


# --- the rule ---------------------------------------------------------------------------------

#: LaTeX and markup that print a number or a unit another way: undone before the search.
_SPELLINGS = ((r"{,}", ","), ("\\,", ""), ("\\!", ""), ("\\times", "×"), ("\\approx", "≈"),
              ("\\sim", "~"), ("\\%", "%"), ("&times;", "×"), ("&asymp;", "≈"))
#: How each answer unit may follow a number (after an optional space).
_UNITS = {"×": ("×", "x"), "%": ("%", "percent"), "ms": ("ms",), "µs": ("µs", "μs", "us"),
          "tokens": ("tokens", "token"), "elements": ("elements", "element"),
          "sequences": ("sequences", "sequence")}
_DIMENSIONS = {
    "time": re.compile(r"\s?(?:ns|µs|μs|us|ms|s|seconds?)(?![\w/])"),
    "size": re.compile(r"\s?(?:[kKMGTP]i?B|bytes?|B)(?:/s)?(?![\w/])"),
    "percent": re.compile(r"\s?%"),
}
_APPROX = re.compile(r"(?:≈|~|about|approx\.?|roughly)\s*$", re.IGNORECASE)


def _dimension(units: str) -> str | None:
    return next((d for d, p in _DIMENSIONS.items() if p.fullmatch(" " + units.strip())), None)


def normalised(source: str) -> str:
    for spelling, plain in _SPELLINGS:
        source = source.replace(spelling, plain)
    return source


def _significant(rendering: str) -> int:
    digits = re.sub(r"\D", "", rendering.split("e")[0].split("×")[0])
    return len(digits.lstrip("0").rstrip("0"))


def literal_answers(source: str, value: float, units: str = "") -> list[tuple[int, str]]:
    """Every place ``source`` states ``value`` (an answer in ``units``) as a literal: (line
    number, the line), by the rule in the module docstring."""
    text = normalised(source)
    renderings = set(numeric_renderings(value))
    if value == round(value) and abs(value) >= 1000:
        renderings.add(f"{round(value):_}")
    unit_words = _UNITS.get(units.strip(), ())
    mine = _dimension(units)
    hits: dict[int, str] = {}
    for r in sorted(renderings, key=len, reverse=True):
        for m in re.finditer(r"(?<![\w.])(?<!\d,)" + re.escape(r) + r"(?!\w)(?![.,_]\d)", text):
            after, before = text[m.end():m.end() + 16], text[max(0, m.start() - 12):m.start()]
            if any(p.match(after) for d, p in _DIMENSIONS.items() if d != mine and not (
                    d == "percent" and r.endswith("%"))):
                continue  # "2.7 GB" is not a ratio of 2.7, "57 ms" not 57 sequences
            with_unit = any(re.match(r"\s?" + re.escape(w) + r"(?![A-Za-z])", after)
                            for w in unit_words)
            if _significant(r) >= 3 or with_unit or _APPROX.search(before):
                line = text.count("\n", 0, m.start()) + 1
                hits[line] = text.splitlines()[line - 1].strip()
    return sorted(hits.items())


# --- the labs ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def references(tmp_path_factory) -> dict[str, list[tuple[str, float, str]]]:
    out = {}
    for lab_file in LABS:
        out[lab_file.stem] = collect_references(lab_file, tmp_path_factory.mktemp(lab_file.stem))
        assert out[lab_file.stem], f"{lab_file.name}: reveal mode produced no numeric answer"
    return out


def _literals(lab_file: Path, references) -> dict[str, list[tuple[int, str]]]:
    source = lab_file.read_text(encoding="utf-8")
    found = {}
    for item, value, units in references[lab_file.stem]:
        hits = literal_answers(source, value, units)
        if hits:
            found[item] = hits
    return found


@pytest.mark.parametrize("lab_file", LABS, ids=[p.stem for p in LABS])
def test_no_lab_source_states_a_graded_answer(lab_file, references):
    found = _literals(lab_file, references)
    assert not found, f"{lab_file.name} states graded answers as literals:\n" + "\n".join(
        f"  - {item}: line {n}: {line}" for item, hits in found.items() for n, line in hits)


# --- the rule itself, on made-up sources ------------------------------------------------------

@pytest.mark.parametrize("source, value, units", [
    (r"$$64 S^2 + 4 \cdot 32 \le 8.59\times10^{10} \Rightarrow S \le 36{,}380 .$$", 36380,
     "tokens"),
    (r"S \le 36\,380", 36380, "tokens"),
    ("MAX_S = 36_380", 36380, "tokens"),
    ('"fusing gives ≈ 2.7× for the chain"', 19 / 7, "×"),
    (r"\frac{19\,n}{7\,n} \approx 2.7\times$$", 19 / 7, "×"),
    ('"speedup 2.71"', 19 / 7, "×"),
    ('"about 890 elements"', 886, ""),
    ('"4.2 %"', 4.2, "%"),
])
def test_a_literal_answer_is_found(source, value, units):
    assert literal_answers(source, value, units)


@pytest.mark.parametrize("source, value, units", [
    ('"2.7 GB of traffic"', 19 / 7, "×"),  # another dimension
    ('"version 2.7"', 19 / 7, "×"),  # two digits, no unit, no "about"
    ('"12.714"', 19 / 7, "×"),  # inside another number
    ("x = 1_036_380", 36380, "tokens"),
    ('"57 ms"', 57, "sequences"),
    ("range(2, 7)", 19 / 7, "×"),
])
def test_other_numbers_are_not_an_answer(source, value, units):
    assert not literal_answers(source, value, units)
