"""Number formats: bits per element including block-scale overhead (reference table)."""

import pytest

from labs.core import precision

BITS = {  # ../shared/reference/models-and-formats.md
    "fp32": 32, "tf32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8,
    "mxfp8": 8.25, "mxfp6": 6.25, "mxfp4": 4.25, "nvfp4": 4.5, "nf4": 4.5, "nf4-dq": 4.127,
    "int4-g128": 4.125, "int4-g128-zp": 4.25, "int4-g32": 4.5,
}


@pytest.mark.parametrize("key,bits", sorted(BITS.items()))
def test_bits_per_element(key, bits):
    assert precision.bits(key) == pytest.approx(bits, abs=1e-3)
    assert precision.bytes_per_element(key) == pytest.approx(bits / 8, abs=1e-3)


def test_block_overheads_derive_from_block_and_scale_width():
    assert precision.bits("mxfp4") == 4 + 8 / 32
    assert precision.bits("nvfp4") == 4 + 8 / 16
    assert precision.bits("nf4") == 4 + 32 / 64
    assert precision.bits("int4") == 4 + 16 / 128  # alias


def test_tf32_is_a_compute_mode_with_32_bit_storage():
    assert precision.get("tf32").bits == 32
    assert "compute mode" in precision.get("tf32").note


def test_storage_and_compute_are_separate_choices():
    assert precision.compute_precision("nvfp4") == "fp4"
    assert precision.compute_precision("mxfp8") == "fp8"
    assert precision.compute_precision("int4-g128", "fp16") == "fp16"
    with pytest.raises(ValueError, match="storage format"):
        precision.compute_precision("int4-g128")
    with pytest.raises(ValueError, match="storage-only"):
        precision.compute_precision("fp16", "nf4")


def test_unknown_format_lists_matches():
    with pytest.raises(KeyError, match="nvfp4"):
        precision.get("nvfp5")


# --- moved from tests/test_physics_review.py (filed by the module they test) ---------
import itertools  # noqa: E402

from labs.core import precision  # noqa: E402

_WIDTH = {"fp32": 32, "tf32": 32, "fp16": 16, "bf16": 16, "fp8": 8, "int8": 8, "fp4": 4}
_ACTS = [k for k, f in precision.FORMATS.items() if f.native_compute]


@pytest.mark.parametrize("w,a", list(itertools.product(precision.FORMATS, _ACTS)))
def test_matmul_runs_at_its_widest_operand_or_is_refused(w, a):
    """A matmul runs at the rate of its widest operand; storage-only weights, narrower weights
    and weights of another type of the same width are dequantised to the activations.

    (The physics review: compute precision follows from weights and
    activations.)"""
    wf, af = precision.get(w), precision.get(a)
    cw, ca = wf.native_compute, af.native_compute
    if cw is None:  # weight-only format: dequantised to the activations' precision
        assert precision.matmul_compute(w, a) == ca
        return
    if {cw, ca} == {"fp32", "tf32"}:
        assert precision.matmul_compute(w, a) == "tf32"
        return
    want = cw if _WIDTH[cw] > _WIDTH[ca] else ca
    assert precision.matmul_compute(w, a) == want


@pytest.mark.parametrize("a", [k for k, f in precision.FORMATS.items() if f.native_compute is None])
def test_activations_cannot_be_stored_in_a_weight_only_format(a):
    """(The physics review: compute precision follows from weights and
    activations.)"""
    with pytest.raises(ValueError, match=r"\bactivations\b"):
        precision.matmul_compute("bf16", a)
