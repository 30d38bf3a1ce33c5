"""The benchmark commands' Markdown tables (``measure.tables``): dashes, ranges, signs."""

from __future__ import annotations

from labs.core.measure import tables


def test_a_figure_not_measured_is_a_dash_else_its_spec():
    assert tables.format_or_dash(None) == "—"
    assert tables.format_or_dash(None, ".1f", none="?") == "?"
    assert tables.format_or_dash(0.012345) == "0.0123"
    assert tables.format_or_dash(2.0, ".2f") == "2.00"


def test_a_range_collapses_when_attempts_agree_to_the_digits_shown():
    assert tables.value_range([1.001, 1.002], ".3g") == "1"
    assert tables.value_range([1.0, 2.5, None, float("nan")], ".3g") == "1–2.5"
    assert tables.value_range([None], ".3g") == "—"
    # a failed attempt (NaN, inf) is no figure, wherever it comes in the attempts
    assert tables.value_range([float("nan"), 1.0, 2.5], ".3g") == "1–2.5"
    assert tables.value_range([float("inf"), float("nan")], ".3g") == "—"


def test_table_numbers_keep_four_figures_and_separate_thousands():
    assert tables.table_number(12.3456) == "12.35"
    assert tables.table_number(123456.7) == "123,457"
    assert tables.table_number(None) == "—"
    assert tables.with_range(10.0, [9.0, 11.0]) == "10 (9–11)"
    assert tables.with_range(10.0, [10.0, None]) == "10 (10)"
    assert tables.with_range(None, [1.0]) == "—"


def test_signed_percent_writes_a_true_minus():
    assert tables.signed_percent(0.0123) == "+1.2%"
    assert tables.signed_percent(-0.05) == "−5.0%"


def test_md_table_has_a_header_a_rule_and_a_line_per_row():
    assert tables.md_table(["a", "b"], [[1, "x"], [2, "y"]]).splitlines() == [
        "| a | b |", "|---|---|", "| 1 | x |", "| 2 | y |"]
