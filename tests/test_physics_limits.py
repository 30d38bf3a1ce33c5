"""Huge but finite inputs: every physics result is a finite number, or the
call is refused with a ValueError naming the argument that took it out of range, never an
inf, a NaN, a MemoryError or an OverflowError."""

from __future__ import annotations

import math

import pytest

from labs.core import formulas
from labs.core import hardware, models, roofline, tiny_models
from labs.core.physics import fusion, serving
from labs.core.physics.validate import culprit


def _numbers(value, depth=0):
    """Every float in a result (numbers, mappings, sequences, dataclasses), for the check."""
    import dataclasses

    if depth > 4 or isinstance(value, (bool, str)) or value is None:
        return []
    if isinstance(value, (int, float)):
        return [value]
    if isinstance(value, dict):
        return [x for v in value.values() for x in _numbers(v, depth + 1)]
    if isinstance(value, (list, tuple)):
        return [x for v in value for x in _numbers(v, depth + 1)]
    if dataclasses.is_dataclass(value):
        return [x for f in dataclasses.fields(value)
                for x in _numbers(getattr(value, f.name), depth + 1)]
    return []


# --- the three examples -----------------------------------------------------------------

def test_custom_device_with_1e300_gb_of_memory_is_refused_naming_memory_gb():
    with pytest.raises(ValueError, match=r"memory_gb=1e\+300 is out of range"):
        hardware.custom("huge", bandwidth_gbs=100, peaks={"fp32": 1}, memory_gb=1e300)
    # a peak whose FLOP/s or ridge overflow, named the same way
    with pytest.raises(ValueError, match=r"peaks\['fp32'\]=1e\+300 is out of range"):
        hardware.custom("fast", bandwidth_gbs=100, peaks={"fp32": 1e300}, memory_gb=16)


def test_tiled_gemm_bytes_with_1e300_bytes_per_element_is_refused():
    with pytest.raises(ValueError, match=r"bytes_per_element=1e\+300 is out of range"):
        roofline.tiled_gemm_bytes(8192, 8192, 8192, 128, 1e300)


def test_contiguous_groups_of_1e15_ops_is_refused_not_a_memory_error():
    with pytest.raises(ValueError, match=r"n_ops=1000000000000000 is too many ops"):
        formulas.contiguous_groups(10**15, 2)
    with pytest.raises(ValueError, match="n_ops"):
        formulas.chain_groups(None, 10**15)


# --- the general rule, over the physics this lab owns ------------------------------------------

LLAMA = "llama-3-8b"
CASES = [
    ("gemm", lambda v: formulas.gemm(v, 4096, 4096), "m"),
    ("gemv", lambda v: formulas.gemv(4096, v), "k"),
    ("linear", lambda v: formulas.linear(v, 4096, 4096), "tokens"),
    ("attention", lambda v: formulas.attention(1, 32, 1, v, 128, fused=True), "seq_kv"),
    ("elementwise_chain", lambda v: formulas.elementwise_chain(v, ["gelu", "dropout"]), "n_elements"),
    ("mlp", lambda v: formulas.mlp(v, 4096, 14336, gated=True, backward=True), "tokens"),
    ("scaled", lambda v: formulas.gemm(4096, 4096, 4096).scaled(v), "times"),
    ("kv_cache_bytes", lambda v: models.get(LLAMA).kv_cache_bytes(batch=v, seq_len=v), "batch"),
    ("weight_bytes_read", lambda v: models.get(LLAMA).weight_bytes_read(tokens=v), "tokens"),
    ("step_bound", lambda v: models.step_bound(LLAMA, "h100-sxm", "decode", batch=v,
                                               seq_len=v), "batch"),
    ("step_time_by_group", lambda v: models.step_time_by_group(
        LLAMA, "h100-sxm", "decode", batch=v, seq_len=4096), "batch"),
    ("memory_budget", lambda v: models.memory_budget(LLAMA, "h100-sxm", batch=v, seq_len=v),
     "batch"),
    ("decode_attention_ai", lambda v: serving.decode_attention_ai(LLAMA, v, v), "batch"),
    ("tiny memory_terms", lambda v: tiny_models.memory_terms(batch=v, context=v), "batch"),
    ("tiny time_by_group", lambda v: tiny_models.time_by_group("h100-sxm", batch=v, context=v),
     "batch"),
    ("unfused_score_bytes", lambda v: fusion.unfused_score_bytes(v, 32, v, v), "batch"),
    ("flash_attention_hbm_bytes", lambda v: fusion.flash_attention_hbm_bytes(
        v, 32, v, v, 128, 64, "h100-sxm"), "batch"),
    ("flash_attention_l2_bytes", lambda v: fusion.flash_attention_l2_bytes(
        v, 32, v, v, 128, 64), "batch"),
    ("tiled_gemm_bytes", lambda v: roofline.tiled_gemm_bytes(v, v, v, 1, 2), "m"),
]


@pytest.mark.parametrize("name,call,arg", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("huge", [1e300, 10**200, 1e150])
def test_a_result_is_finite_or_refused_naming_the_argument(name, call, arg, huge):
    try:
        out = call(huge)
    except ValueError as e:
        msg = str(e)
        assert "out of range" in msg or "too many" in msg or "must be" in msg, msg
        assert arg in msg or any(a in msg for a in ("seq_len", "context", "k=", "n=", "m=",
                                                    "seq_q", "seq_kv", "tokens", "batch")), msg
        return
    assert all(math.isfinite(x) for x in _numbers(out)), (name, out)


def test_the_culprit_is_the_argument_furthest_from_one():
    assert culprit({"batch": 1, "seq_len": 1e300, "peaks": {"fp32": 2}}) == \
        "seq_len=1e+300"
    assert culprit({"bandwidth_gbs": 1e-300, "memory_gb": 80}) == \
        "bandwidth_gbs=1e-300"


def test_an_argument_that_is_itself_infinite_keeps_its_own_message():
    with pytest.raises(ValueError, match="m must be finite, got inf"):
        formulas.gemm(math.inf, 1, 1)
