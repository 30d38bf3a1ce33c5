"""How numbers are shown: durations, FLOPs, bytes, error messages."""

import pytest

from labs.core import quiz, style, tokens, units


@pytest.mark.parametrize("seconds,text", [
    (567e-6, "567 µs"), (1.2e-3, "1.2 ms"), (2.5, "2.5 s"), (5e-9, "5 ns"), (1e-3, "1 ms"),
    (139.2e-6, "139 µs"),
])
def test_format_seconds_picks_the_unit(seconds, text):
    assert units.format_seconds(seconds) == text


def test_format_seconds_ranges():
    assert units.format_seconds(119e-6, 179e-6) == "119–179 µs"
    assert units.format_seconds(119e-6, 119.2e-6) == "119 µs"
    assert units.format_seconds(500e-6, 2e-3) == "500 µs – 2 ms"


@pytest.mark.parametrize("flops,text", [
    (2 * 4096**3, "137 GFLOP"), (70.4e12, "70.4 TFLOP"), (1.5e15, "1.5 PFLOP"), (12, "12 FLOP"),
])
def test_format_flops(flops, text):
    assert units.format_flops(flops) == text


def test_error_message_drops_keyerror_quotes():
    assert units.error_message(KeyError("no fp4 rate")) == "no fp4 rate"
    assert units.error_message(ValueError("m must be > 0")) == "m must be > 0"
    assert units.error_message(ValueError()) == ""


def test_one_implementation_reexported():
    assert quiz.format_value is units.format_value
    assert tokens.format_bytes is units.format_bytes is style.format_bytes
    assert style.format_seconds is units.format_seconds


def test_error_callout_takes_the_exception():
    out = style.error_callout(KeyError("fp8 is not available")).text
    assert "fp8 is not available" in out and "&#x27;fp8" not in out and "'fp8" not in out


def test_an_integer_ridge_is_in_operations_per_byte_next_to_tops():
    """Lab 3's device card read "int8 peak (dense) 1,979 TOPS, ridge 591 FLOP/B"."""
    assert units.intensity_unit("int8") == "OP/B"
    assert [units.intensity_unit(p) for p in ("fp32", "bf16", "fp8")] == ["FLOP/B"] * 3


def test_rate_unit_counts_integer_math_in_tops():
    assert units.rate_unit("int8") == "TOPS"
    assert [units.rate_unit(p) for p in ("fp32", "bf16", "fp8", "fp4")] == ["TFLOP/s"] * 4
