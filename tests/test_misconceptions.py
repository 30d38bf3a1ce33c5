"""Graded numbers discriminate (LABS_SPEC §2): every numeric prediction of every lab, read from
the labs themselves, has a band in ``labs.core.physics.misconceptions`` in which

- the lab's own reference answer (its instructor copy) is graded right;
- every named wrong model is graded wrong, by a margin (a student who rounds it stays wrong);
- every published measurement of the same case is graded right, or the question says it asks
  for the model's bound, or the item is graded against the student's own measurement;

and the lab's comparison and the grader use that band's tolerance. A new lab cannot pass
without its bands: the items come from the catalogue, not from a list here.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from labs.core import catalogue, quiz
from labs.core.physics import misconceptions
from leak_support import collect_references, lab_files

ROOT = Path(__file__).resolve().parents[1]
NUMERIC = [item for entry in catalogue.catalogue() for item in entry.items
           if item.kind == "numeric"]
#: How a question says it asks for the model's bound rather than what hardware measures.
ASKS_BOUND = re.compile(r"\bat (?:most|least)\b|\bthe roofline'?s?\b|\bideal\b|\bthe model'?s\b"
                        r"|\bupper bound\b|\blower bound\b|\bby the roofline\b", re.I)


def _ids(items):
    return [i.item_id for i in items]


@pytest.fixture(scope="module")
def lab_references(tmp_path_factory) -> dict:
    """{item id: the numeric reference the lab's instructor copy shows}."""
    out = {}
    for lab_file in lab_files(ROOT):
        for ref in collect_references(lab_file, tmp_path_factory.mktemp(lab_file.stem)):
            if ref.label is None:
                out[ref.item_id] = ref.value
    return out


def test_every_lab_has_numeric_items_to_check():
    assert len({i.lab_id for i in NUMERIC}) >= 7, _ids(NUMERIC)


@pytest.mark.parametrize("item", NUMERIC, ids=_ids(NUMERIC))
def test_each_named_wrong_model_is_graded_wrong(item):
    band = misconceptions.band(item.item_id)
    assert band.wrong_models, f"{item.item_id}: name the misconceptions this item catches"
    assert band.tolerance > 1
    assert quiz.within_factor(band.reference, band.reference, band.tolerance)
    assert band.wrong_margin in (misconceptions.WRONG_MARGIN, misconceptions.WRONG_MARGIN_FROM_2)
    if band.wrong_margin != misconceptions.WRONG_MARGIN:
        # the smaller margin covers two-figure rounding only of values from 2 to 10 (x 10^k)
        for value in (band.reference, *(w.value for w in band.wrong_models)):
            assert 2 <= value / 10 ** math.floor(math.log10(value)) < 10, (item.item_id, value)
    for wrong in band.wrong_models:
        assert not quiz.within_factor(wrong.value, band.reference,
                                      band.tolerance * band.wrong_margin), (
            f"{item.item_id}: the wrong model {wrong.name!r} answers {wrong.value:g}, "
            f"{band.ratio(wrong.value):.3f}x off the reference {band.reference:g}: inside the "
            f"band of {band.tolerance:g}x (with the {band.wrong_margin:g} margin)")


@pytest.mark.parametrize("item", NUMERIC, ids=_ids(NUMERIC))
def test_a_student_reasoning_from_measurement_is_graded_right(item):
    band = misconceptions.band(item.item_id)
    for m in band.measured:
        assert quiz.within_factor(m.value, band.reference, band.tolerance), (
            f"{item.item_id}: the measurement {m.value:g} ({m.source}) is "
            f"{band.ratio(m.value):.3f}x off the reference, outside {band.tolerance:g}x")
    if band.asks_bound:
        assert ASKS_BOUND.search(item.text), (
            f"{item.item_id} asks for the model's bound: its question must say so "
            f"(\"at most\", \"the roofline's\", \"the ideal\"): {item.text!r}")
    assert band.measured or band.asks_bound or band.own_measurement, (
        f"{item.item_id}: give a published measurement of its case, or ask for the model's "
        "bound in the question, or grade it against the student's own measurement")


@pytest.mark.parametrize("item", NUMERIC, ids=_ids(NUMERIC))
def test_the_band_is_of_the_answer_the_lab_grades(item, lab_references):
    band = misconceptions.band(item.item_id)
    shown = lab_references.get(item.item_id)
    assert shown is not None, f"{item.item_id}: its instructor copy shows no reference"
    assert band.ratio(shown) < 1.005, (
        f"{item.item_id}: the lab's reference {shown:g} is not the band's {band.reference:g}")
    assert misconceptions.tolerance(item.item_id) == band.tolerance
    assert band.units == item.units, f"{item.item_id}: units {band.units!r} vs {item.units!r}"


def test_an_item_without_a_band_keeps_the_default_and_says_so():
    assert misconceptions.tolerance("lab99.unknown") == misconceptions.DEFAULT_TOLERANCE
    with pytest.raises(KeyError, match="lab99.unknown"):
        misconceptions.band("lab99.unknown")


def test_every_band_belongs_to_an_item_a_lab_asks():
    asked = {i.item_id for i in NUMERIC}
    assert set(misconceptions.item_ids()) <= asked, set(misconceptions.item_ids()) - asked


# --- the bands after the physics review: each case re-derived by hand ---------------------------

def _question(item_id: str) -> str:
    return next(i.text for i in NUMERIC if i.item_id == item_id)


def _named(band, words: str):
    found = [w for w in band.wrong_models if words in w.name]
    assert len(found) == 1, (band.item_id, words, [w.name for w in band.wrong_models])
    return found[0]


def test_nvfp4_byte_ratio_is_exact_and_tells_mxfp4s_scales_apart():
    band = misconceptions.band("lab03.nvfp4_byte_ratio")
    n = k = 4096
    vectors = (n + k) * 2  # FP16 input and output, read and written once

    def ratio(bits):
        return (n * k * 2 + vectors) / (n * k * bits / 8 + vectors)

    # NVFP4: 4 bits + an 8-bit E4M3 scale per 16 = 4.5; MXFP4 (OCP MX v1.0): 4 + 8/32 = 4.25
    assert band.reference == pytest.approx(ratio(4.5), rel=1e-9)  # 3.551
    mx = _named(band, "MXFP4")
    assert "32-element blocks" in mx.name and "E8M0" in mx.name
    assert mx.value == pytest.approx(ratio(4.25), rel=1e-9)  # 3.760, 1.059x off
    assert band.tolerance <= 1.03  # a byte ratio is exact arithmetic
    for right in (band.reference, 16 / 4.5, 3.5, 3.6):  # rounded right answers
        assert quiz.within_factor(right, band.reference, band.tolerance), right
    for wrong in (mx.value, 3.8, 3.7, 4.0):  # MXFP4's answer, rounded, and unscaled FP4
        assert not quiz.within_factor(wrong, band.reference, band.tolerance), wrong


def test_fusion_question_says_the_skip_is_its_own_tensor_and_the_pre_ln_reading_is_wrong():
    text = _question("lab04.fusion_speedup")
    assert "a tensor of its own, not the LayerNorm's input" in text
    band = misconceptions.band("lab04.fusion_speedup")
    # per element at fp16: unfused 4 + 4 + 5 + 6 = 19 B; fused x, skip, out (2 B each) + the
    # 1-byte mask = 7 B; were the skip the LayerNorm's input (pre-LN), fused 5 B: 19/5 = 3.8
    assert band.reference == pytest.approx(19 / 7, rel=0.01)
    pre_ln = _named(band, "LayerNorm's input")
    assert pre_ln.value == pytest.approx(19 / 5)
    assert not quiz.within_factor(3.8, band.reference, band.tolerance)


def test_oom_seq_len_names_the_two_buffer_slip_as_the_belief_it_is():
    band = misconceptions.band("lab04.oom_seq_len")
    two = _named(band, "two S×S buffers")
    assert two.name.startswith("holds the scores and the softmax probabilities at once")
    assert "softmax in place" in _question("lab04.oom_seq_len")


def test_tile_traffic_band_catches_one_operands_reuse_with_the_margin():
    band = misconceptions.band("lab05.tile_traffic")
    # N = 8192, T 64 -> 128: (2 x 128 + 1) / (2 x 64 + 1) = 257/129; only one operand's
    # re-reads falling: (128 + 128 + 1) / (128 + 64 + 1) = 257/193, 1.496x off
    assert band.reference == pytest.approx(257 / 129)
    one = _named(band, "one operand")
    assert one.value == pytest.approx(257 / 193)
    assert band.tolerance == 1.4
    assert not quiz.within_factor(257 / 193, 257 / 129, band.tolerance * 1.05)
    assert quiz.within_factor(2, 257 / 129, band.tolerance)


def test_oom_batch_question_states_the_activations_the_reference_counts():
    text = _question("lab02.oom_batch")
    # Llama-3-8B: one 8,192-token prefill, one layer's residual, normed copy, gate and up:
    # 8192 x (2 x 4096 + 2 x 14336) x 2 B = 603,979,776 B; logits 128,256 x 4 B = 513,024 B
    assert "one prompt's prefill at a time" in text
    assert f"{603_979_776 / 1e9:.2f} GB" in text and f"{513_024 / 1e6:.2f} MB" in text


@pytest.mark.parametrize("item_id,rate", [
    ("lab06.allreduce_ms", "450 GB/s per GPU in each direction"),  # NVLink 4: 900 total
    ("lab06.tp_shard_pcie", "63 GB/s per GPU in each direction"),  # 32 GT/s x 16 x 128/130 / 8
    ("lab06.tp_shard_nvlink", "450 GB/s per GPU in each direction"),
    ("lab06.dp_allreduce_ms", "300 GB/s per GPU each way"),  # NVLink 3: 600 total
])
def test_lab06_questions_name_the_one_way_rate_with_its_number(item_id, rate):
    text = _question(item_id)
    assert rate in text, text
    assert "datasheet bandwidth" not in text and "the datasheet states" not in text
    band = misconceptions.band(item_id)
    if item_id != "lab06.dp_allreduce_ms":  # the headline read as one way: a named slip
        assert any("both-directions headline" in w.name for w in band.wrong_models)


def test_lab06_states_one_infiniband_nic_fraction_everywhere():
    """The NIC's achievable fraction is core's (47 of 50 GB/s, nccl-tests over NDR): no text
    of the lab, its bands or the docs gives the NIC another per-NIC figure."""
    from labs.core.physics import collectives

    assert collectives.NIC_ACHIEVABLE.fraction == pytest.approx(47 / 50)
    band = misconceptions.band("lab06.dp_allreduce_ms")
    texts = [band.why, *(m.source for m in band.measured),
             (ROOT / "labs" / "lab_06_many_chips.py").read_text(encoding="utf-8"),
             (ROOT / "labs/core/course/lessons/many_chips.py").read_text(encoding="utf-8"),
             (ROOT / "labs/core/physics/misconceptions/lab06.py").read_text(encoding="utf-8"),
             (ROOT / "LABS_SPEC.md").read_text(encoding="utf-8"),
             *(p.read_text(encoding="utf-8") for p in (ROOT / "docs").rglob("*.md"))]
    per_nic = re.compile(r"(\d+) of (\d+) GB/s per (?:InfiniBand )?(?:NDR |HDR )?NIC")
    for text in texts:
        for got, of in per_nic.findall(text):
            assert int(got) / int(of) == pytest.approx(collectives.NIC_ACHIEVABLE.fraction), (got, of)
    assert f"{collectives.NIC_ACHIEVABLE.fraction:.0%}" in band.why
