"""Lab 3 physics: rho per precision and the decode quantization table, hand-derived."""

import math

import pytest

from labs.core import precision_study as P
from labs.core import roofline as R

SQUARE = {"m": 4096, "n": 4096, "k": 4096}


def test_fp32_to_fp16_tensor_cores_lowers_rho_on_h100():
    r32, r16 = P.study("gemm", SQUARE, "h100-sxm", ["fp32", "fp16"])
    assert r16.ai == pytest.approx(2 * r32.ai)  # bytes halve: AI doubles ...
    assert r16.ridge / r32.ridge == pytest.approx(989.5 / 67)  # ... the ridge moves ~14.8x
    # rho(fp32) = 682.7 / 20.0 = 34.1; rho(fp16) = 1365.3 / 295.4 = 4.62: falls 7.4x
    assert r32.rho == pytest.approx(682.67 / (67e12 / 3350e9), rel=1e-3)
    assert P.rho_change("gemm", SQUARE, "h100-sxm", "fp32", "fp16") == pytest.approx(2 * 67 / 989.5)


def test_gemv_stays_memory_bound_at_every_precision():
    rows = P.study("gemv", {"n": 4096, "k": 4096}, "h100-sxm",
                   ["fp32", "fp16", "fp8", "int8", "int4-g128"])
    assert all(r.supported and r.rho < 1 for r in rows)
    assert all(r.regime == R.MEMORY for r in rows)


def test_weight_only_formats_run_at_the_fp16_peak():
    (row,) = P.study("gemv", {"n": 4096, "k": 4096}, "h100-sxm", ["int4-g128"])
    assert row.compute == "fp16" and "weights in" in row.reason
    # bytes: x and y in fp16, W at 4.125 bits
    assert row.bytes == pytest.approx(4096 * 2 + 4096 * 4096 * 4.125 / 8 + 4096 * 2)


def test_unsupported_precision_is_a_row_that_says_why():
    (row,) = P.study("gemm", SQUARE, "h100-sxm", ["nvfp4"])  # H100 has no FP4 tensor rate
    assert not row.supported and "no fp4 rate" in row.reason and math.isnan(row.rho)
    (ok,) = P.study("gemm", SQUARE, "b200", ["nvfp4"])
    assert ok.supported and ok.compute == "fp4"


def test_i_bit_uses_circuit_weights():
    r16, r8 = P.study("gemm", SQUARE, "h100-sxm", ["fp16", "fp8"])
    assert r16.i_bit == pytest.approx(r16.ai / 8)
    assert r8.i_bit == pytest.approx(r8.ai * (16 / 121) / 8)


def test_mlp_train_study():
    rows = P.study("mlp_train", {"tokens": 2048, "d_model": 4096, "d_ff": 14336}, "h100-sxm",
                   ["fp32", "bf16"])
    assert rows[1].ai == pytest.approx(2 * rows[0].ai, rel=1e-6)


def test_decode_quant_table_speedup_is_the_byte_ratio():
    rows = P.decode_quant_table(4096, 4096, "h100-sxm")
    by = {r.storage: r for r in rows}
    assert by["fp16"].speedup == 1.0
    for r in rows:
        assert r.regime == R.MEMORY
        assert r.speedup == pytest.approx(r.byte_ratio, rel=1e-9)
    # W dominates: 16 bits -> 4.5 bits is ~3.5x (activations in fp16 shave a little)
    assert by["nvfp4"].speedup == pytest.approx(16 / 4.5, rel=0.01)
    assert by["nvfp4"].compute == "fp16" and "weight-only" in by["nvfp4"].note  # H100: no fp4
    assert P.decode_quant_table(4096, 4096, "b200")[3].compute == "fp4"
    assert P.decode_quant_table(4096, 4096, "tpu-v5e")[0].compute == "bf16"


def test_unknown_op():
    with pytest.raises(KeyError, match="gemm"):
        P.op_cost("conv", SQUARE, "fp16")
