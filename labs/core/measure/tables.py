"""The Markdown tables the benchmark commands print (``labs-bench-gemm``, ``labs-bench-comm``
and ``benchmarks/``), pasted as they are into the README and the measurement pages.

Every number goes through ``units.format_value`` with the table's format spec, so a benchmark
table and a lab write a number with the same code; what is added here is only the table's own
conventions: a dash for a figure not measured, a min-max range over attempts, a signed percent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from labs.core.physics import units

__all__ = ["format_or_dash", "md_table", "signed_percent", "table_number", "value_range",
           "with_range"]


def format_or_dash(v, spec: str = ".3g", none: str = "—") -> str:
    """``v`` with the format spec, or ``none`` for a figure that was not measured."""
    return none if v is None else units.format_value(v, spec)


def value_range(values: Sequence[float], spec: str) -> str:
    """'lo–hi' over attempts ('x' when they agree to the digits shown)."""
    vals = [v for v in values if v is not None and math.isfinite(v)]
    if not vals:
        return "—"
    lo, hi = units.format_value(min(vals), spec), units.format_value(max(vals), spec)
    return lo if lo == hi else f"{lo}–{hi}"


def table_number(v) -> str:
    """A time or rate for the table: 4 significant digits, thousands with separators."""
    if v is None:
        return "—"
    return units.format_value(v, ",.0f" if abs(v) >= 1000 else ".4g")


def with_range(v, per_attempt) -> str:
    """'median (lo–hi)' over the attempts that measured something, else '—'."""
    vals = [x for x in per_attempt if x is not None]
    if v is None or not vals:
        return "—"
    lo, hi = table_number(min(vals)), table_number(max(vals))
    return f"{table_number(v)} ({lo if lo == hi else f'{lo}–{hi}'})"


def signed_percent(fraction: float) -> str:
    """0.0123 -> '+1.2%', -0.05 -> '−5.0%' (a true minus sign, as the pages write it)."""
    return units.format_value(fraction * 100, "+.1f").replace("-", "−") + "%"


def md_table(headers: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A Markdown table: a header row, its rule, then one line per row (cells as str)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)
