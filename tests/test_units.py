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


def test_units_is_the_one_formatter():
    """Numbers are written by physics.units alone: no second formatter, no re-export."""
    from labs.core.ui.figures import base
    for module in (quiz, style, tokens):
        for name in ("format_value", "format_bytes", "format_seconds", "format_flops",
                     "rate_unit", "intensity_unit"):
            assert not hasattr(module, name), (module.__name__, name)
    assert not hasattr(base, "short_number")


def test_a_card_and_a_hover_show_a_value_the_same_way():
    """0.01234 was "0.0123" on a card and "0.012" in a hover (a second formatter)."""
    from labs.core import figures, hardware
    from labs.core.ui.figures import base, charts
    card = style.metric_cards([("AI", f"{units.format_value(0.01234)} FLOP/B", "")]).text
    assert "0.0123 FLOP/B" in card
    fig = figures.roofline_figure([(hardware.get("h100-sxm"), "fp16")],
                                  [figures.Point("tiny", 0.01234)])
    hovers = [t.hovertext for t in fig.data if t.hovertext is not None]
    assert any("AI = 0.0123 FLOP/B" in str(h) for h in hovers), hovers
    assert not any("0.012 " in str(h) for h in hovers)
    bars = charts.bar_figure(["a", "b"], [0.01234, -0.01234], yaxis_title="x")
    assert list(bars.data[0].text) == ["0.0123", "-0.0123"]
    # the bar's hover shows the value as its label does (not plotly's own %{y:.4g})
    assert list(bars.data[0].hovertext) == ["0.0123", "-0.0123"]
    assert "%{hovertext}" in bars.data[0].hovertemplate and "%{y" not in bars.data[0].hovertemplate
    assert base.ridge_label("fp16", 0.01234) == "ridge (fp16, dense) = 0.0123 FLOP/B"


@pytest.mark.parametrize("value,text", [
    (300000, "300,000"), (295.4, "295"), (0.01234, "0.0123"), (1.5, "1.5"), (12.0, "12"),
    (-0.01234, "-0.0123"), (2e10, "2e+10"), (1.234e-5, "1.23e-05"), (0, "0"),
])
def test_format_value_three_significant_figures(value, text):
    assert units.format_value(value) == text


def test_format_value_takes_numpy_numbers():
    np = pytest.importorskip("numpy")
    assert units.format_value(np.float32(0.5)) == "0.5"
    assert units.format_value(np.int64(1000)) == "1,000"


def test_format_value_more_significant_figures_on_request():
    assert units.format_value(0.795, significant=4) == "0.795"
    assert units.format_value(1234.5678, significant=6) == "1,234.57"
    assert units.format_value(1.23456e-5, significant=4) == "1.235e-05"
    with pytest.raises(ValueError, match="significant"):
        units.format_value(1.0, significant=0)


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


@pytest.mark.parametrize("gbs,text", [(605.4, "605 GB/s"), (3350, "3.35 TB/s"),
                                      (10_500, "10.5 TB/s"), (999.4, "999 GB/s"),
                                      (1000, "1 TB/s"), (12.0, "12 GB/s")])
def test_format_bandwidth_three_figures_and_tb_from_a_thousand(gbs, text):
    assert units.format_bandwidth(gbs) == text


def test_format_bandwidth_refuses_what_is_not_a_number():
    with pytest.raises(ValueError, match="gbs must be a number"):
        units.format_bandwidth("fast")
