"""No answer before its prediction (issue 16.1): every lab, run with its gates closed, shows none
of the reference answers its instructor copy reveals.

The rule (what counts as a rendering of an answer, which numbers are too common to be evidence,
how choice labels are matched) is in ``tests/leak_support.py`` and tested on its own below, so
the lab test does not depend on today's wording. New labs (``labs/lab_*.py``) are covered
without editing this file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from labs.core import reveal
from leak_support import (Cell, Reference, find_leaks, flatten, key_phrase, lab_files,
                          numeric_renderings, rendered_cells, run_with_outputs)
from notebook_support import load_app

ROOT = Path(__file__).resolve().parents[1]
LABS = lab_files(ROOT)


def collect_references(lab_file: Path, ledger_dir: Path) -> list[Reference]:
    """Run the lab in reveal mode (its own ledger folder) and record every answer
    ``reveal.reference`` returns."""
    from labs.core import ledger

    seen: list[Reference] = []
    original = reveal.reference

    def recording(*args, **kwargs):
        answer = original(*args, **kwargs)
        if answer is not None:
            is_choice = getattr(answer, "answer_type", "numeric") == "choice"
            seen.append(Reference(answer.item_id, answer.value,
                                  getattr(answer, "label", None) if is_choice else None))
        return answer

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(reveal, "reference", recording)
        mp.setenv("ROOFLINE_REVEAL", "1")
        mp.setenv(ledger.ENV_LEDGER_DIR, str(ledger_dir))
        outputs, _ = load_app(lab_file, f"_{lab_file.stem}_revealed").run()
    shown = " ".join(getattr(o, "text", "") for o in outputs if o is not None)
    # gating must not hide them for good: the instructor copy (every answer in) shows them
    assert "Key takeaways" in shown, f"{lab_file.name}: reveal mode shows no takeaways"
    return seen


@pytest.mark.parametrize("lab_file", LABS, ids=[p.stem for p in LABS])
def test_closed_lab_shows_no_reference_answer(lab_file, env):
    references = collect_references(lab_file, env / "reveal-ledger")
    assert references, f"{lab_file.name}: reveal mode produced no reference answer"
    items = {r.item_id for r in references}

    app = load_app(lab_file, f"_{lab_file.stem}_closed")
    outputs, defs = run_with_outputs(app)
    assert defs["lab"].events() == [], "the closed run must start from an empty ledger"
    cells = rendered_cells(app, outputs, scrub=[str(env), "ada"])
    leaks = find_leaks(cells, references)
    assert not leaks, (f"{lab_file.name}: {len(leaks)} answer(s) visible before their "
                       f"prediction ({len(items)} items checked):\n"
                       + "\n".join(f"  - {leak}" for leak in leaks))


# --- the rule itself, on made-up outputs ------------------------------------------------------


def _cell(html_text: str, index: int = 7) -> Cell:
    text, options = flatten(html_text)
    return Cell(index, "style.takeaways([...])", text, tuple(tuple(o) for o in options))


def test_renderings_cover_the_usual_ways_a_number_is_printed():
    r = numeric_renderings(886.27)
    assert {"886", "890", "8.86e+02", "8.9e+02"} <= r
    r = numeric_renderings(35112)
    assert {"35,112", "35112", "35,100", "35100", "35,000", "3.51e+04"} <= r
    assert {"0.135", "0.14", "13.5%"} <= numeric_renderings(0.13542)
    assert "2.71" in numeric_renderings(2.714) and "2.7" in numeric_renderings(2.714)


@pytest.mark.parametrize("value", [1, 2, 0.5, 100, 3000, 4096, 128, 1.0001, 0.999])
def test_trivially_common_numbers_are_not_searched(value):
    assert all(len(x.replace(",", "").replace(".", "").strip("0")) >= 2
               for x in numeric_renderings(value))
    assert not ({"1", "2", "0.5", "100", "3,000", "4096", "4,096", "128", "1.0"}
                & numeric_renderings(value))


@pytest.mark.parametrize("shown", [
    "<p>N* is about 886 in bf16</p>",
    "<p>N* is about 886.</p>",
    "<p>N* ≈ 8.86e+02</p>",
    "<span>$S \\le 35{,}100$</span>",
    "<marimo-callout-output data-html='&quot;&#92;u003cli&#92;u003eabout 886&#92;u003c/li&#92;u003e&quot;'>"
    "</marimo-callout-output>",
])
def test_numbers_are_found_in_text_latex_and_nested_attributes(shown):
    refs = [Reference("lab01.n", 886.3), Reference("lab04.s", 35112)]
    assert find_leaks([_cell(shown)], refs)


def test_numbers_are_found_in_figure_hover_text():
    figure = json.dumps({"data": [{"x": [1, 2], "hovertext": ["N* = 886"]}], "layout": {}})
    shown = f"<marimo-plotly data-figure='{figure}'></marimo-plotly>"
    (leak,) = find_leaks([_cell(shown)], [Reference("lab01.n", 886.3)])
    assert "cell 7" in str(leak) and "lab01.n" in str(leak) and "886" in str(leak)


@pytest.mark.parametrize("shown", [
    "<p>M = 1886 and 8860 and 886.4 and 1,886 and v886 and sha256:886a</p>",
    "<marimo-slider data-steps='[10, 886, 1000]' data-initial-value='2'></marimo-slider>",
])
def test_numbers_inside_other_numbers_or_widget_ranges_are_not_leaks(shown):
    assert not find_leaks([_cell(shown)], [Reference("lab01.n", 886.0)])


def test_a_slider_defaulting_to_the_answer_is_a_leak():
    shown = "<marimo-slider data-steps='[10, 886, 1000]' data-initial-value='1'></marimo-slider>"
    assert find_leaks([_cell(shown)], [Reference("lab01.n", 886.0)])


RADIO = ("<marimo-radio data-options='[&quot;The memory roof: it waits&quot;,"
         "&quot;The compute roof: saturated&quot;,&quot;Neither: badly written&quot;]'>"
         "</marimo-radio>")


def test_choice_labels_are_found_by_key_phrase_but_not_in_the_form():
    ref = [Reference("lab01.which_roof", "memory-bound", "The memory roof: it waits")]
    form = _cell(RADIO, index=3)
    assert not find_leaks([form], ref)
    leak_cell = _cell("<p>Small batches are stuck on THE MEMORY   roof.</p>")
    (leak,) = find_leaks([form, leak_cell], ref)
    assert leak.cell.index == 7 and leak.rendering == "the memory roof"


def test_a_sentence_naming_every_option_is_not_evidence():
    radio = ("<marimo-radio data-options='[&quot;compute-bound, like on the edge&quot;,"
             "&quot;memory-bound&quot;]'></marimo-radio>")
    ref = [Reference("lab01.other_device", "memory-bound", "memory-bound")]
    neutral = _cell(radio + "<p>Decide memory-bound vs compute-bound by comparing AI.</p>")
    assert not find_leaks([neutral], ref)
    assert find_leaks([_cell(radio + "<p>On the datacenter GPU it is memory-bound.</p>")], ref)


def test_key_phrase_falls_back_to_the_whole_label_when_shared():
    labels = ["Helps: it cuts kernel launches", "Helps: it cuts HBM bytes", "Hurts: slower"]
    assert key_phrase(labels[0], labels) == labels[0]
    assert key_phrase(labels[2], labels) == "Hurts"
    assert key_phrase("4x larger tiles (more reuse)", []) == "4x larger tiles"
