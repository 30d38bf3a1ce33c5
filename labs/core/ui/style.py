"""Look and feel of every lab: design tokens, the plotly template, and small components.

All lab HTML comes from here (labs never write inline HTML). Rules every component follows:

* Text arguments are HTML-escaped (student text appears in some of them). To pass formatted
  content on purpose, pass a marimo object (``mo.md(...)``, ``mo.Html(...)``): it is embedded
  as is.
* Colours come from :mod:`labs.core.ui.tokens` (Okabe-Ito based, >= 3:1 on marimo's light and
  dark backgrounds); page text uses marimo's CSS variables (``--foreground``,
  ``--muted-foreground``, ``--border``) so it follows the theme; every state is also written in
  words (colour is never the only carrier of meaning).
* Styles are inline and short: marimo's CSS reset (Tailwind preflight) strips list bullets and
  heading sizes from raw HTML, so the few that matter are set here; exports stay small.

Importing this module registers the plotly template "roofline" and makes it the default.
"""

from __future__ import annotations

import html
import json
import os
import re
from dataclasses import dataclass
from typing import Iterable, Sequence

import marimo as mo

from labs.core.ui.figures.charts import budget_summary  # noqa: F401  (re-exported)
from labs.core.ui.inputs import NumberBox, dropdown_on, input_messages  # noqa: F401  (re-exported)
from labs.core.ui.tokens import (  # noqa: F401  (re-exported: the style API)
    BACKGROUNDS,
    COLORS,
    DEVICE_COLORS,
    PRECISION_COLORS,
    PRECISION_DASH,
    PRECISION_SYMBOL,
    REGIME_COLOR_KEY,
    TEMPLATE_NAME,
    register_template,
    template,
    term_colors,
)
from labs.core.physics import units

__all__ = [
    "BACKGROUNDS", "BORDER", "CELL_CHARS", "COLORS", "DEVICE_COLORS", "FG", "MUTED_FG", "Metric",
    "NumberBox", "PRECISION_COLORS", "PRECISION_DASH", "PRECISION_SYMBOL", "PRELOAD_CLASS",
    "REGIME_COLOR_KEY", "TEMPLATE_NAME", "TEXT_CHARS", "budget_summary", "comparison_callout",
    "devices_with", "dropdown_on", "error_callout", "error_message", "figure_with_note",
    "gate_notice", "input_messages", "lab_header", "ledger_status", "math_peek",
    "memory_budget_bar", "metric_cards", "notice_list", "plotly_preload",
    "regime_badge", "register_template", "scenario_card", "takeaways", "takeaways_gate",
    "template", "term_colors", "text_block", "text_cell", "text_table", "value_table"
]

# marimo theme variables, with fallbacks for pages rendered outside marimo.
FG = "var(--foreground, currentColor)"
MUTED_FG = "var(--muted-foreground, #6b7280)"
BORDER = "var(--border, rgba(128,128,128,.35))"

_CALLOUT_KIND = {"ok": "success", "warn": "warn", "danger": "danger", "info": "info"}
_CALLOUT_WORD = {"ok": "✓", "warn": "≈", "danger": "✗", "info": "→"}


# --- helpers --------------------------------------------------------------------------------
def _t(value) -> str:
    """Escaped text, or the HTML of a marimo object passed on purpose."""
    if isinstance(value, mo.Html):
        return value.text
    if value is None:
        return ""
    return html.escape(str(value))


def _paras(text) -> str:
    """Escaped text split into paragraphs on blank lines (single newlines become <br>)."""
    if isinstance(text, mo.Html):
        return text.text
    blocks = [b.strip() for b in str(text).replace("\r\n", "\n").split("\n\n") if b.strip()]
    return "".join(
        f'<p style="margin:.35em 0">{html.escape(b).replace(chr(10), "<br>")}</p>'
        for b in blocks)


def _tint(hex_color: str, alpha: float) -> str:
    """``#RRGGBB`` + alpha as 8-digit hex: a translucent tint that works on both themes."""
    return f"{hex_color}{round(alpha * 255):02x}"


def _list(items: Iterable, ordered: bool = False) -> str:
    tag = "ol" if ordered else "ul"
    style = f'list-style:{"decimal" if ordered else "disc"};padding-left:1.4em;margin:.3em 0'
    return f'<{tag} style="{style}">' + "".join(
        f'<li style="margin:.15em 0">{_t(i)}</li>' for i in items) + f"</{tag}>"


def _str_list(name: str, items) -> list:
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise ValueError(f"{name} must be a list of strings, got {items!r}")
    return list(items)


def _safe_url(url: str) -> str:
    """Links may be http(s), mailto or relative; anything else (javascript: ...) is refused."""
    u = str(url).strip()
    scheme = u.split(":", 1)[0].lower() if ":" in u.split("/", 1)[0] else ""
    if scheme not in ("", "http", "https", "mailto"):
        raise ValueError(f"reading link {url!r} must be http(s), mailto or a relative path")
    return html.escape(u, quote=True)


def _small(text: str) -> str:
    return f'<div style="font-size:.78rem;color:{MUTED_FG};letter-spacing:.02em">{text}</div>'


# --- components -----------------------------------------------------------------------------
def lab_header(title: str, subtitle: str, goals: list[str], minutes: int,
               reading: list[tuple[str, str]]) -> mo.Html:
    """Title, one-line scenario, learning goals, time, recommended reading (title, url)."""
    goals = _str_list("goals", goals)
    reading = _str_list("reading", reading)
    if not isinstance(minutes, (int, float)) or isinstance(minutes, bool) or not (
            0 < minutes < 600):
        raise ValueError(f"minutes must be a positive number of minutes, got {minutes!r}")
    links = []
    for item in reading:
        if not (isinstance(item, (tuple, list)) and len(item) == 2):
            raise ValueError(f"reading items must be (title, url) pairs, got {item!r}")
        links.append(mo.Html(f'<a href="{_safe_url(item[1])}" target="_blank" '
                             f'rel="noopener">{_t(item[0])}</a>'))
    cols = [f"<div style=\"flex:1 1 280px\"><strong>Learning goals</strong>"
            f"{_list(goals, ordered=True)}</div>"]
    if links:
        cols.append(f"<div style=\"flex:1 1 220px\"><strong>Recommended reading</strong>"
                    f"{_list(links)}</div>")
    return mo.Html(
        plotly_preload()
        + f'<header style="border-bottom:1px solid {BORDER};padding-bottom:.8em;margin-bottom:.4em">'
        + _small(f"ROOFLINE LABS · about {round(minutes)} minutes")
        + f'<h1 style="font-size:1.9rem;font-weight:700;line-height:1.2;margin:.2em 0">'
          f"{_t(title)}</h1>"
        + f'<p style="font-size:1.05rem;color:{MUTED_FG};margin:.1em 0 .7em">{_t(subtitle)}</p>'
        + f'<div style="display:flex;flex-wrap:wrap;gap:.5em 2em">{"".join(cols)}</div></header>')


#: Class of the hidden figure in every lab's header (browser tests and benchmarks skip it).
PRELOAD_CLASS = "roofline-plotly-preload"


def plotly_preload() -> str:
    """A hidden, empty plotly element, so that marimo's frontend loads plotly.js with the lab's
    first output (the header) instead of with its first figure: a 4.6 MB module that takes
    ~2 s to load, parse and first draw on a 2-core machine, while the student reads and
    predicts. A student's first reveal then draws at once (Lab 1: 2.0-2.6 s -> 0.65-0.9 s from
    the lock to the figure; ``benchmarks/bench_first_reveal.py``). Written as marimo's own tag
    (no go.Figure: a headless run pays nothing); no axes and no numbers on the page. Left out
    of static exports (``ROOFLINE_STATIC_EXPORT``), whose pages may show no figure at all."""
    if "1" in (os.environ.get("ROOFLINE_STATIC_EXPORT"), os.environ.get("ROOFLINE_NO_PRELOAD")):
        return ""  # ROOFLINE_NO_PRELOAD: the benchmark's "before"
    # No axes and no size: not a tick label or a number on the page (text search, leak checks).
    hidden_axis = {"visible": False}
    figure = html.escape(json.dumps({"data": [], "layout": {
        "xaxis": hidden_axis, "yaxis": hidden_axis}}), quote=True)
    return (f'<div class="{PRELOAD_CLASS}" aria-hidden="true" style="display:none">'
            f"<marimo-plotly data-figure='{figure}' data-config='{{}}'></marimo-plotly></div>")


def scenario_card(sender: str, role: str, message: str) -> mo.Html:
    """An "incoming message" card that sets up a part's scenario."""
    c = COLORS["accent"]
    return mo.Html(
        f'<div style="border:1px solid {BORDER};border-left:4px solid {c};border-radius:8px;'
        f'padding:.6em .9em;background:{_tint(c, .07)}">'
        + _small("✉ INCOMING MESSAGE")
        + f'<div style="margin:.15em 0"><strong>{_t(sender)}</strong>'
          f'<span style="color:{MUTED_FG}"> · {_t(role)}</span></div>'
        + _paras(message) + "</div>")


@dataclass(frozen=True)
class Metric:
    """One metric card: ``value`` carries its unit ("295 FLOP/B"); ``kind`` (optional) is a
    COLORS key or a regime name and colours the card's edge (the value says it in words)."""

    label: str
    value: str
    caption: str = ""
    kind: str | None = None


def _kind_color(kind: str | None) -> str | None:
    if kind is None:
        return None
    key = REGIME_COLOR_KEY.get(kind, kind)
    if key not in COLORS:
        raise KeyError(f"unknown kind={kind!r}; use one of {', '.join(COLORS)} or a regime name")
    return COLORS[key]


def metric_cards(cards: Sequence[tuple[str, str, str]] | Sequence[Metric]) -> mo.Html:
    """A responsive row of cards: label, value (with unit), caption."""
    cards = _str_list("cards", cards)
    out = []
    for c in cards:
        m = c if isinstance(c, Metric) else Metric(*c) if isinstance(c, (tuple, list)) else None
        if m is None:
            raise ValueError(f"cards must hold (label, value, caption) tuples or Metric, got {c!r}")
        edge = _kind_color(m.kind) or BORDER
        out.append(
            f'<div style="border:1px solid {BORDER};border-top:3px solid {edge};border-radius:8px;'
            f'padding:.5em .75em">{_small(_t(m.label))}'
            f'<div style="font-size:1.35rem;font-weight:650;font-variant-numeric:tabular-nums;'
            f'margin:.1em 0">{_t(m.value)}</div>'
            + (f'<div style="font-size:.8rem;color:{MUTED_FG}">{_t(m.caption)}</div>'
               if m.caption else "") + "</div>")
    return mo.Html('<div style="display:grid;grid-template-columns:repeat(auto-fit,'
                   'minmax(150px,1fr));gap:.6em">' + "".join(out) + "</div>")


def comparison_callout(predicted: str, actual: str, verdict: str, kind: str = "info", *,
                       predicted_label: str = "You predicted"):
    """"You predicted X · The instrument shows Y · verdict"; kind in ok, warn, danger, info.
    ``predicted_label`` names whose answer X is (the instructor copy: "Reference answer")."""
    if kind not in _CALLOUT_KIND:
        raise ValueError(f"kind must be one of {', '.join(_CALLOUT_KIND)}, got {kind!r}")
    body = (f"<div>{_t(predicted_label)} <strong>{_t(predicted)}</strong> · The instrument shows "
            f"<strong>{_t(actual)}</strong></div>"
            f'<div style="margin-top:.25em">{_CALLOUT_WORD[kind]} {_t(verdict)}</div>')
    return mo.callout(mo.Html(body), kind=_CALLOUT_KIND[kind])


def math_peek(title: str, markdown: str):
    """The governing equations, folded in an accordion. ``markdown`` is author markdown
    (LaTeX allowed), rendered with ``mo.md``; the title is escaped."""
    body = markdown if isinstance(markdown, mo.Html) else mo.md(str(markdown))
    return mo.accordion({f"Math peek · {_t(title)}": body})


def _regime_key(regime: str) -> str:
    r = str(regime).strip().lower()
    r = r if r.endswith("-bound") else f"{r}-bound"
    if r not in REGIME_COLOR_KEY:
        raise ValueError(f"regime must be one of {', '.join(REGIME_COLOR_KEY)}, got {regime!r}")
    return r


def regime_badge(regime: str) -> mo.Html:
    """A pill that says the regime in words, coloured by it."""
    r = _regime_key(regime)
    c = COLORS[REGIME_COLOR_KEY[r]]
    return mo.Html(
        f'<span style="display:inline-flex;align-items:center;gap:.4em;padding:.1em .65em;'
        f'border-radius:999px;border:1.5px solid {c};background:{_tint(c, .14)};'
        f'font-weight:600;font-size:.85rem;white-space:nowrap">'
        f'<span style="width:.6em;height:.6em;border-radius:50%;background:{c}"></span>{r}</span>')


def memory_budget_bar(terms: dict[str, float], capacity_bytes: float, *,
                      usable: bool = False) -> mo.Html:
    """Stacked bar of memory terms against device capacity; OOM is also stated in words
    (which term crosses capacity and by how much the total is over). ``usable``: the capacity
    is the share of the device's memory a budget may use, and is called so."""
    s = budget_summary(terms, capacity_bytes)
    t = s["terms"]
    scale = max(s["total"], capacity_bytes)
    colors = term_colors(list(t))
    segs, legend = [], []
    for (k, v), c in zip(t.items(), colors):
        w = 100 * v / scale
        segs.append(f'<div title="{_t(k)}: {units.format_bytes(v)}" style="width:{w:.3f}%;'
                    f'background:{c};border-right:1px solid var(--background,#fff)"></div>')
        legend.append(f'<span style="white-space:nowrap"><span style="display:inline-block;'
                      f'width:.75em;height:.75em;border-radius:2px;background:{c};'
                      f'margin-right:.3em"></span>{_t(k)} {units.format_bytes(v)}</span>')
    cap = 100 * capacity_bytes / scale
    over = ""
    if not s["fits"]:  # hatched overflow region: a pattern, not only a colour
        over = (f'<div style="position:absolute;left:{cap:.3f}%;right:0;top:0;bottom:0;'
                f'background:repeating-linear-gradient(45deg,transparent 0 5px,'
                f'{_tint(COLORS["danger"], .85)} 5px 8px)"></div>')
    pct = f'{100 * s["fraction"]:.0f}%'
    has, cap_name = ("the usable memory is", "usable") if usable else ("the device has",
                                                                        "capacity")
    if s["fits"]:
        status = (f'<strong style="color:{COLORS["ok"]}">✓ Fits</strong>: '
                  f'{units.format_bytes(s["total"])} of {units.format_bytes(capacity_bytes)}'
                  f'{" usable" if usable else ""} ({pct}), '
                  f'{units.format_bytes(s["free"])} free')
    else:
        status = (f'<strong style="color:{COLORS["danger"]}">✗ Out of memory</strong>: needs '
                  f'{units.format_bytes(s["total"])}, {has} {units.format_bytes(capacity_bytes)}: '
                  f'{units.format_bytes(s["over"])} over ({pct}). '
                  f'<strong>{_t(s["crossing"])}</strong> is the term that crosses '
                  f'{"the usable memory" if usable else "capacity"}.')
    return mo.Html(
        f'<div role="img" aria-label="{"fits" if s["fits"] else "out of memory"}">'
        f'<div style="margin-bottom:.3em">{status}</div>'
        f'<div style="position:relative;height:1.5em;border:1px solid {BORDER};border-radius:4px;'
        f'overflow:hidden"><div style="display:flex;height:100%">{"".join(segs)}</div>{over}'
        f'<div style="position:absolute;left:calc({cap:.3f}% - 1px);top:0;bottom:0;'
        f'border-left:2px dashed {FG}"></div></div>'
        f'<div style="display:flex;flex-wrap:wrap;gap:.2em 1em;font-size:.82rem;margin-top:.3em">'
        + "".join(legend)
        + f'<span style="color:{MUTED_FG}">┆ {cap_name} {units.format_bytes(capacity_bytes)}</span>'
          f"</div></div>")


def ledger_status(path: str | None, student_id: str | None, events: int,
                  warning: str | None = None):
    """Where the ledger writes, for whom, how many events it held when the lab opened (each
    locked prediction confirms its own save); a warning turns it into a callout."""
    where = (f"writing to <code>{_t(path)}</code>" if path
             else "<strong>not saving</strong> (no ledger file)")
    who = f"student <code>{_t(student_id)}</code>" if student_id else "no student id set"
    n = int(events)
    line = (f"Ledger: {where} · {who} · {n} event{'s' if n != 1 else ''} in it when this lab "
            "opened (each locked prediction below confirms its own save)")
    if warning:
        return mo.callout(mo.Html(f"<div>{line}</div><div>⚠ {_t(warning)}</div>"), kind="warn")
    return mo.Html(f'<div style="font-size:.85rem;color:{MUTED_FG}">{line}</div>')


# ``precision='fp16'``: core names the argument for programmers; a student reads ``fp16``.
_ARGUMENT_VALUE = re.compile(r"\b[A-Za-z_][A-Za-z0-9_]*=(['\"])([^'\"\n]{1,80})\1")


def error_message(exc: BaseException | str) -> str:
    """What a core ValueError/KeyError says, in a student's words: KeyError's quotes dropped
    and argument names left out (core's "no rate for precision='fp16'" reads "no rate for
    fp16"). A lab adds the way out that fits its widgets."""
    text = units.error_message(exc) if isinstance(exc, BaseException) else str(exc)
    return _ARGUMENT_VALUE.sub(lambda m: m.group(2), text)


def devices_with(*precisions: str, limit: int = 3) -> str:
    """Devices of the registry that have a rate for every one of ``precisions``, named for a
    way-out sentence: "e.g. NVIDIA H100 SXM5, NVIDIA A100 SXM 80GB or NVIDIA L4"."""
    from labs.core.physics import hardware

    having = [hardware.get(k) for k in hardware.keys()
              if all(hardware.get(k).has(p) for p in precisions)]
    # one of each kind first (datacenter, desktop, laptop, edge ...), then the rest
    firsts = list({d.device_class: d for d in reversed(having)}.values())[::-1]
    ordered = sorted(firsts, key=having.index) + [d for d in having if d not in firsts]
    names = [d.name for d in ordered][:limit]
    if not names:
        return "none in the registry"
    return "e.g. " + (names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1])


def error_callout(message: str | BaseException, title: str = "That combination does not work."):
    """A student-facing error (bad slider combination, unknown precision ...), never a traceback.
    Pass the message, or the core ValueError/KeyError itself; ``title`` heads it."""
    message = error_message(message)
    return mo.callout(mo.Html(f"<strong>✗ {_t(title)}</strong>{_paras(message)}"),
                      kind="danger")


#: Longest text a list line shows, and a table cell; the whole text is in its tooltip.
TEXT_CHARS = 300
CELL_CHARS = 160
_WRAP = "overflow-wrap:anywhere;white-space:pre-wrap"


def _shown(text, limit: int = TEXT_CHARS) -> tuple[str, str]:
    """(escaped text cut at ``limit``, escaped full text for a tooltip or "")."""
    s = str(text)
    if len(s) <= limit:
        return html.escape(s), ""
    return (html.escape(s[:limit]) + f" … ({len(s):,} characters)",
            html.escape(s, quote=True))


def text_cell(value):
    """Text anyone may have written (a student id, a reason, a file name) as a table cell that
    shows it as typed: escaped, never made a link or an image (marimo's table does that to
    plain string cells that hold a URL), wrapped anywhere, and cut at CELL_CHARS with the full
    text in the tooltip. Non-text values pass through."""
    if not isinstance(value, str):
        return value
    shown, full = _shown(value, CELL_CHARS)
    tip = f' title="{full}"' if full else ""
    return mo.Html(f'<span style="{_WRAP}"{tip}>{shown}</span>')


def figure_with_note(figure, note: str | None = None) -> mo.Html:
    """``figure`` with an optional markdown ``note`` under it, always as two children.

    Why: marimo's frontend keeps a plotly figure and updates it in place (Plotly.react) only
    while its output keeps the same shape. A stack that goes from one child to two as a note
    appears or disappears mounts the figure anew, drawn from scratch: measured in chromium
    at 1.0 s against 0.12 s per slider step (``benchmarks/bench_browser.py``).
    An empty note keeps the second child, and shows nothing."""
    return mo.vstack([figure, mo.md(note or "")])


def text_block(text, limit: int = 2000):
    """A paragraph of text shown as typed (escaped, wrapped anywhere, cut at ``limit``)."""
    shown, full = _shown(text, limit)
    tip = f' title="{full}"' if full else ""
    return mo.Html(f'<div style="{_WRAP};margin:.2em 0"{tip}>{shown}</div>')


def text_table(rows: list[dict], *, page_size: int = 15, **kwargs):
    """``mo.ui.table`` (no selection) whose text columns go through :func:`text_cell`; the
    table still sorts, searches and downloads the values themselves."""
    columns = {k for r in rows for k, v in r.items() if isinstance(v, str)}
    return mo.ui.table(rows, page_size=page_size, selection=None,
                       format_mapping={c: text_cell for c in columns}, **kwargs)


#: A table cell that reads as a number ("1,365 FLOP/B", "-3 %", "0.5") or as no value ("—").
_NUMBER_CELL = re.compile(r"^[-+−]?[\d.,]|^—$")


def value_table(rows: Sequence[dict], *, caption: str | None = None):
    """A small table of values the lab computed (kernels, formats: a few rows), as static
    HTML in marimo's markdown table look, scrolling sideways when wide. Cells are escaped.

    For a table that a widget re-draws on every step: a ``mo.ui.table`` (sorting, paging,
    download) is a data-grid component that the browser rebuilds each time, which made a
    one-figure step of Lab 5 noticeably slower (README, Speed: ``bench_labs.py --browser``).
    Text anyone may have written goes in :func:`text_table` instead."""
    columns = list(dict.fromkeys(k for r in rows for k in r))
    if not columns:
        return mo.md("_(no rows)_")
    cells = [[str(r.get(c, "—")) for c in columns] for r in rows]
    # numbers line up on the right; words (and the first column, naming the row) on the left
    left = [i == 0 or not all(_NUMBER_CELL.match(row[i]) for row in cells)
            for i in range(len(columns))]
    align = [' style="text-align:left"' if x else "" for x in left]
    head = "".join(f"<th{a}>{html.escape(str(c))}</th>" for a, c in zip(align, columns))
    body = "".join("<tr>" + "".join(f"<td{a}>{html.escape(v)}</td>" for a, v in zip(align, row))
                   + "</tr>" for row in cells)
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return mo.Html('<div class="roofline-value-table" style="overflow-x:auto">'
                   '<span class="markdown prose dark:prose-invert contents">'
                   f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
                   "</span></div>")


def notice_list(title: str, items: Sequence, kind: str = "warn"):
    """A callout: a bold title, then one line per item, each shown as typed (escaped, cut at
    TEXT_CHARS): for flags and notes that carry student text. ``kind``: a marimo callout kind."""
    lines = []
    for item in _str_list("items", items):
        shown, full = _shown(item)
        tip = f' title="{full}"' if full else ""
        lines.append(f'<li style="margin:.15em 0;{_WRAP}"{tip}>{shown}</li>')
    return mo.callout(mo.Html(f"<strong>{_t(title)}</strong>"
                              f'<ul style="list-style:disc;padding-left:1.4em;margin:.3em 0">'
                              + "".join(lines) + "</ul>"), kind=kind)


def gate_notice(message: str):
    """What a closed prediction gate shows in place of the instrument."""
    return mo.callout(mo.Html(f"<strong>Instrument hidden.</strong> {_t(message)}"), kind="neutral")


def takeaways_gate(predictions: Sequence) -> mo.Html | None:
    """The notice a lab's takeaways cell stops on while any of ``predictions`` (the lab's
    prediction values, None until locked) is open, or None once all are locked. Takeaways
    state the answers, so they wait for every prediction::

        mo.stop(style.takeaways_gate(preds) is not None, style.takeaways_gate(preds))
    """
    total = len(predictions)
    open_ = sum(p is None for p in predictions)
    if not open_:
        return None
    return gate_notice(f"The key takeaways give the answers away: they appear once all {total} "
                       f"predictions of this lab are locked ({total - open_} so far).")


def takeaways(items: list[str]):
    """Key takeaways at the end of a lab."""
    return mo.callout(mo.Html("<strong>Key takeaways</strong>"
                              + _list(_str_list("items", items), ordered=True)), kind="success")
