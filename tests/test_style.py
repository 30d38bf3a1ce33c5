"""Style system: palette sanity (contrast, colour-vision deficiency), escaping, components."""

from __future__ import annotations

import itertools
import subprocess
import sys

import marimo as mo
import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from labs.core import hardware, style, tokens, units

XSS = '<script>alert("x")</script> & <b>bold</b>'


# --- colour science helpers (sRGB -> relative luminance, CIELAB, CVD simulation) ------------
def _rgb(hex_color: str) -> np.ndarray:
    h = hex_color.lstrip("#")
    return np.array([int(h[i:i + 2], 16) / 255 for i in (0, 2, 4)])


def _linear(c: np.ndarray) -> np.ndarray:
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def _luminance(hex_color: str) -> float:
    return float(_linear(_rgb(hex_color)) @ [0.2126, 0.7152, 0.0722])


def contrast(a: str, b: str) -> float:
    """WCAG 2.1 contrast ratio."""
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _lab(lin_rgb: np.ndarray) -> np.ndarray:
    m = np.array([[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]])
    xyz = m @ np.clip(lin_rgb, 0, 1) / np.array([0.95047, 1.0, 1.08883])
    f = np.where(xyz > (6 / 29) ** 3, np.cbrt(xyz), xyz / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


# Machado, Oliveira & Fernandes (2009) dichromacy simulation matrices (severity 1.0),
# applied to linear RGB.
_CVD = {
    "normal": np.eye(3),
    "protan": np.array([[0.152286, 1.052583, -0.204868], [0.114503, 0.786281, 0.099216],
                        [-0.003882, -0.048116, 1.051998]]),
    "deutan": np.array([[0.367322, 0.860646, -0.227968], [0.280085, 0.672501, 0.047413],
                        [-0.011820, 0.042940, 0.968881]]),
    "tritan": np.array([[1.255528, -0.076749, -0.178779], [-0.078411, 0.930809, 0.147602],
                        [0.004733, 0.691367, 0.303900]]),
}


def delta_e(a: str, b: str, vision: str = "normal") -> float:
    m = _CVD[vision]
    return float(np.linalg.norm(_lab(m @ _linear(_rgb(a))) - _lab(m @ _linear(_rgb(b)))))


# --- palette --------------------------------------------------------------------------------
def test_palettes_cover_every_semantic_key_device_class_and_precision():
    assert set(style.COLORS) >= {"memory", "compute", "overhead", "danger", "ok", "warn",
                                 "muted", "accent"}
    assert set(style.DEVICE_COLORS) == set(hardware.DEVICE_CLASSES)
    assert set(style.PRECISION_COLORS) == set(hardware.PRECISIONS)
    assert set(style.PRECISION_DASH) == set(hardware.PRECISIONS)
    assert set(style.PRECISION_SYMBOL) == set(hardware.PRECISIONS)
    # every registered device's class has a colour
    assert {d.device_class for d in hardware.all_devices()} <= set(style.DEVICE_COLORS)


ALL_COLORS = sorted({*tokens.COLORS.values(), *tokens.DEVICE_COLORS.values(),
                     *tokens.PRECISION_COLORS.values(), *tokens.TERM_COLORS})


@pytest.mark.parametrize("color", ALL_COLORS)
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_every_colour_has_graphics_contrast_on_both_marimo_themes(color, theme):
    # WCAG 2.1 SC 1.4.11: graphical objects need >= 3:1 against adjacent colour.
    assert contrast(color, tokens.BACKGROUNDS[theme]) >= 3.0


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_plot_text_is_readable_on_both_themes(theme):
    assert contrast(tokens.PLOT_TEXT, tokens.BACKGROUNDS[theme]) >= 3.9
    assert contrast(tokens.HOVER_TEXT, tokens.HOVER_BG) >= 7


def test_contrast_helper_matches_known_wcag_values():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


# Colours that appear next to each other and must never be confused.
_GROUPS = {
    "regimes": ["memory", "compute", "overhead"],
    "status": ["ok", "warn", "danger"],
}


@pytest.mark.parametrize("vision", list(_CVD))
@pytest.mark.parametrize("group", list(_GROUPS))
def test_semantic_groups_distinguishable_under_colour_vision_deficiency(group, vision):
    # Mid-luminance colours (>= 3:1 on white AND on marimo's dark background) leave little
    # lightness range, which is what dichromats rely on; ~15 is the best reachable minimum for
    # these trios, so 10 (over 4 just-noticeable differences) is required under simulated
    # dichromacy and 20 for normal vision. Words/glyphs accompany these colours everywhere.
    need = 20 if vision == "normal" else 10
    for a, b in itertools.combinations(_GROUPS[group], 2):
        de = delta_e(style.COLORS[a], style.COLORS[b], vision)
        assert de >= need, f"{a} vs {b} under {vision}: ΔE={de:.1f}"


@pytest.mark.parametrize("palette", ["COLORS", "DEVICE_COLORS", "PRECISION_COLORS"])
def test_palette_entries_distinct_for_normal_vision(palette):
    colors = getattr(tokens, palette)
    # grey may legitimately repeat for "muted"-like entries; everything else differs
    for (ka, a), (kb, b) in itertools.combinations(colors.items(), 2):
        assert delta_e(a, b) >= 15, f"{palette}: {ka} vs {kb}"


def test_precisions_have_a_colour_free_cue():
    # dash + symbol together tell every precision apart without colour
    pairs = {(tokens.PRECISION_DASH[p], tokens.PRECISION_SYMBOL[p]) for p in hardware.PRECISIONS}
    assert len(pairs) == len(hardware.PRECISIONS)


def test_cvd_simulation_is_not_identity():
    # red/green pair collapses under deuteranopia: the test helper really simulates
    assert delta_e("#ff0000", "#00a000") > 50
    assert delta_e("#ff0000", "#00a000", "deutan") < delta_e("#ff0000", "#00a000") / 2


def test_template_is_a_plain_dict_plotly_accepts_unchanged():
    """The labs' figures carry tokens.TEMPLATE as a dict (no Template built at import): plotly's
    validation must accept it and give back exactly the same JSON."""
    validated = go.layout.Template(tokens.template()).to_plotly_json()
    assert validated == tokens.TEMPLATE
    assert tokens.template() == tokens.TEMPLATE and tokens.template() is not tokens.TEMPLATE
    lay = tokens.TEMPLATE["layout"]
    assert lay["paper_bgcolor"] == lay["plot_bgcolor"] == "rgba(0,0,0,0)"


def test_importing_the_ui_builds_no_plotly_template():
    code = ("import sys, plotly.io as pio\n"
            "from labs.core import figures, style, tokens\n"
            "assert 'roofline' not in pio.templates, 'registered at import'\n"
            "assert 'plotly.validator_cache' not in sys.modules, 'validators loaded'\n"
            "fig = figures.roofline_figure([(__import__('labs.core.physics.hardware', "
            "fromlist=['x']).get('h100-sxm'), 'bf16')])\n"
            "assert fig.to_plotly_json()['layout']['template'] == tokens.TEMPLATE\n"
            "print('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_template_registered_and_default_and_transparent():
    tokens.register_template()
    assert "roofline" in pio.templates
    assert pio.templates.default == "roofline"
    lay = pio.templates["roofline"].layout
    assert lay.paper_bgcolor == "rgba(0,0,0,0)" and lay.plot_bgcolor == "rgba(0,0,0,0)"
    assert lay.font.color == tokens.PLOT_TEXT


def test_format_bytes_uses_decimal_units():
    assert units.format_bytes(80e9) == "80.0 GB"
    assert units.format_bytes(512e6) == "512 MB"
    assert units.format_bytes(0) == "0 B"
    assert units.format_bytes(1.5e12) == "1.5 TB"


# --- components: escaping -------------------------------------------------------------------
def _html(obj) -> str:
    return obj.text


COMPONENTS = {
    "lab_header": lambda s: style.lab_header(s, s, [s], 40, [(s, "https://example.org/?a=1&b=2")]),
    "scenario_card": lambda s: style.scenario_card(s, s, s),
    "metric_cards": lambda s: style.metric_cards([(s, s, s), style.Metric(s, s, s, "memory")]),
    "comparison_callout": lambda s: style.comparison_callout(s, s, s, kind="warn"),
    "math_peek": lambda s: style.math_peek(s, "$x$"),
    "memory_budget_bar": lambda s: style.memory_budget_bar({s: 1e9, "kv": 2e9}, 2.5e9),
    "ledger_status": lambda s: style.ledger_status(s, s, 3),
    "ledger_status_warn": lambda s: style.ledger_status(s, s, 3, warning=s),
    "error_callout": lambda s: style.error_callout(s),
    "gate_notice": lambda s: style.gate_notice(s),
    "takeaways": lambda s: style.takeaways([s, s]),
}


@pytest.mark.parametrize("name", list(COMPONENTS))
def test_components_escape_text(name):
    out = COMPONENTS[name](XSS)
    assert isinstance(out, mo.Html)
    text = _html(out)
    # callouts/accordions JSON-encode their body into an attribute: decode for the check
    decoded = text.replace("&#92;u003c", "<").replace("&#92;u003e", ">").replace("&quot;", '"')
    assert "<script>" not in text and "<script>" not in decoded
    assert "<b>bold</b>" not in decoded


def test_marimo_objects_pass_through_unescaped_on_purpose():
    out = style.scenario_card("A", "B", mo.md("**bold**")).text
    assert "<strong>bold</strong>" in out or "<b>bold</b>" in out


@pytest.mark.parametrize("n", [1, 2, 5])
def test_takeaways_wait_for_every_prediction(n):
    from labs.core import export

    for locked in range(n):
        notice = style.takeaways_gate([object()] * locked + [None] * (n - locked))
        assert export.GATE_TEXT in notice.text  # a closed gate for labs-export too
        assert f"all {n} predictions" in notice.text and f"({locked} so far)" in notice.text
    assert style.takeaways_gate([object()] * n) is None
    assert style.takeaways_gate([0, "", False]) is None  # locked values that are falsy


def test_reading_links_refuse_javascript_urls():
    with pytest.raises(ValueError, match="reading"):
        style.lab_header("t", "s", ["g"], 40, [("x", "javascript:alert(1)")])
    out = style.lab_header("t", "s", ["g"], 40, [("x", "https://a.org/?q=1&r=2")]).text
    assert 'href="https://a.org/?q=1&amp;r=2"' in out


def test_header_carries_goals_time_and_reading():
    out = style.lab_header("The Memory Wall", "Find the roof.", ["goal one", "goal two"], 40,
                           [("Williams et al. 2009", "https://example.org")]).text
    for s in ("The Memory Wall", "Find the roof.", "goal one", "goal two", "40 minutes",
              "Williams et al. 2009", "Learning goals", "Recommended reading"):
        assert s in out


@pytest.mark.parametrize("bad", [dict(goals="one string"), dict(minutes=0),
                                 dict(reading=[("only title",)])])
def test_header_rejects_bad_arguments_by_name(bad):
    args = dict(title="t", subtitle="s", goals=["g"], minutes=40, reading=[])
    args.update(bad)
    with pytest.raises(ValueError, match=list(bad)[0]):
        style.lab_header(**args)


# --- components: meaning in words -----------------------------------------------------------
@pytest.mark.parametrize("regime,key", [("memory-bound", "memory"), ("compute", "compute"),
                                        ("Overhead-bound", "overhead")])
def test_regime_badge_says_the_regime_in_words_and_colour(regime, key):
    out = style.regime_badge(regime).text
    assert f"{key}-bound" in out and style.COLORS[key] in out


def test_regime_badge_rejects_unknown():
    with pytest.raises(ValueError, match="regime"):
        style.regime_badge("latency-bound")


def test_comparison_callout_kinds():
    assert "success" in style.comparison_callout("1", "2", "close", kind="ok").text
    with pytest.raises(ValueError, match="kind"):
        style.comparison_callout("1", "2", "x", kind="green")
    out = style.comparison_callout("N = 500", "N = 886", "off by 1.8x").text
    for s in ("You predicted", "N = 500", "N = 886", "off by 1.8x"):
        assert s in out


def test_memory_budget_bar_fits_and_oom_in_words():
    fits = style.memory_budget_bar({"weights": 16e9, "KV cache": 8e9}, 80e9).text
    assert "Fits" in fits and "24.0 GB of 80.0 GB" in fits and "56.0 GB free" in fits
    oom = style.memory_budget_bar({"weights": 16e9, "KV cache": 70e9, "act": 1e9}, 80e9).text
    assert "Out of memory" in oom and "7.0 GB over" in oom
    assert "KV cache</strong> is the term that crosses capacity" in oom
    assert "repeating-linear-gradient" in oom  # overflow hatched, not only coloured


def test_a_usable_budget_is_called_usable_not_the_device_s_memory():
    """A budget against 90% of the device read "the device has 77.3 GB" (the device has 85.9)."""
    oom = style.memory_budget_bar({"weights": 16e9, "KV cache": 70e9}, 77.3e9, usable=True).text
    assert "needs 86.0 GB, the usable memory is 77.3 GB" in oom and "the device has" not in oom
    assert "crosses the usable memory" in oom and "usable 77.3 GB" in oom
    fits = style.memory_budget_bar({"weights": 16e9}, 77.3e9, usable=True).text
    assert "16.0 GB of 77.3 GB usable" in fits


def test_budget_summary_names_the_crossing_term():
    s = style.budget_summary({"weights": 60e9, "KV cache": 30e9, "act": 5e9}, 80e9)
    assert s["crossing"] == "KV cache" and s["over"] == pytest.approx(15e9)
    assert not s["fits"] and s["fraction"] == pytest.approx(95 / 80)
    s2 = style.budget_summary({"weights": 60e9}, 80e9)
    assert s2["fits"] and s2["crossing"] is None and s2["free"] == pytest.approx(20e9)


@pytest.mark.parametrize("terms,cap,arg", [({}, 1e9, "terms"), ({"w": -1}, 1e9, "terms"),
                                           ({"w": 1}, 0, "capacity_bytes"),
                                           ({"w": float("nan")}, 1e9, "terms")])
def test_memory_budget_bar_rejects_bad_input(terms, cap, arg):
    with pytest.raises(ValueError, match=arg):
        style.memory_budget_bar(terms, cap)


def test_metric_cards_accept_tuples_and_metrics():
    out = style.metric_cards([("AI", "295 FLOP/B", "ridge"),
                              style.Metric("Regime", "compute-bound", "", "compute-bound")]).text
    assert "295 FLOP/B" in out and style.COLORS["compute"] in out
    with pytest.raises(KeyError, match="kind"):
        style.metric_cards([style.Metric("x", "1", "", "purple")])
    with pytest.raises(ValueError, match="cards"):
        style.metric_cards("AI")


def test_ledger_status_states_where_who_and_count():
    out = style.ledger_status("ledger/x.jsonl", "s1", 1).text
    assert "ledger/x.jsonl" in out and "s1" in out and "1 event in it when this lab opened" in out
    off = style.ledger_status(None, None, 0).text
    assert "not saving" in off and "no student id" in off and "0 events" in off
    warn = style.ledger_status("p", "s", 2, warning="disk full").text
    assert "warn" in warn and "disk full" in warn


def test_component_html_stays_small():
    big = [COMPONENTS[n]("text") for n in COMPONENTS]
    assert all(len(b.text) < 4000 for b in big)


def _top_children(html_text: str) -> int:
    """Direct children of the outermost element of marimo's stack markup."""
    from html.parser import HTMLParser

    class P(HTMLParser):
        depth, count = 0, 0
        VOID = {"br", "img", "hr", "input", "meta", "link"}

        def handle_starttag(self, tag, attrs):
            if self.depth == 1:
                self.count += 1
            if tag not in self.VOID:
                self.depth += 1

        def handle_endtag(self, tag):
            self.depth -= 1

    p = P()
    p.feed(html_text)
    return p.count


@pytest.mark.parametrize("note", [None, "", "_Roofs not drawn: fp16._", "**two** lines\n\nof it"])
def test_figure_with_note_keeps_one_shape_with_or_without_a_note(note):
    """marimo mounts a figure anew (drawn from scratch) when its output changes shape, e.g.
    from one child to two as a note appears: the stack has two children always."""
    fig = go.Figure(go.Scatter(x=[1, 2], y=[3, 4]))
    out = style.figure_with_note(fig, note)
    assert _top_children(out.text) == 2
    assert _top_children(out.text) == _top_children(style.figure_with_note(fig, "x").text)
    if note:
        assert "Roofs not drawn" in out.text or "two" in out.text


def test_dropdown_on_opens_on_the_key_and_names_an_unknown_one():
    options = hardware.picker_options()
    for key in ("h100-sxm", next(iter(options.values()))):
        picker = style.dropdown_on(options, key, label="Device")
        assert picker.value == key  # the dropdown's value is the key behind the chosen label
    with pytest.raises(ValueError, match="key='no-such-device'"):
        style.dropdown_on(options, "no-such-device", label="Device")


def test_lab_header_carries_a_hidden_textless_plotly_preload(monkeypatch):
    """Every lab's first output loads plotly.js early (a student's first reveal draws at once),
    but shows nothing, says nothing to a page's text search, and stays out of static exports."""
    import html as _html
    import json as _json
    import re as _re

    monkeypatch.delenv("ROOFLINE_STATIC_EXPORT", raising=False)
    monkeypatch.delenv("ROOFLINE_NO_PRELOAD", raising=False)
    head = style.lab_header("T", "s", ["g"], 30, []).text
    assert head.startswith(f'<div class="{style.PRELOAD_CLASS}" aria-hidden="true" '
                           'style="display:none"><marimo-plotly ')
    figure = _json.loads(_html.unescape(_re.search(r"data-figure='([^']*)'", head).group(1)))
    assert figure["data"] == [] and figure["layout"]["xaxis"] == {"visible": False}
    assert figure["layout"]["yaxis"] == {"visible": False}
    assert not _re.search(r"\d", style.plotly_preload())  # no number a leak check could match
    for env in ("ROOFLINE_STATIC_EXPORT", "ROOFLINE_NO_PRELOAD"):
        monkeypatch.setenv(env, "1")
        assert "marimo-plotly" not in style.lab_header("T", "s", ["g"], 30, []).text
        monkeypatch.delenv(env)


def test_value_table_is_static_escaped_html_in_the_markdown_look():
    t = style.value_table([{"kernel": "<b>naive</b>", "AI": 0.25},
                        {"kernel": "tiled", "note": "T > N"}], caption="every kernel")
    text = t.text
    assert "<table>" in text and "marimo-table" not in text  # no data-grid component
    assert "<caption>every kernel</caption>" in text
    # columns in first-seen order; the first one (naming the row) and words read from the
    # left, numbers from the right
    assert ('<th style="text-align:left">kernel</th><th>AI</th>'
            '<th style="text-align:left">note</th>') in text
    assert "&lt;b&gt;naive&lt;/b&gt;" in text and "<b>naive</b>" not in text
    assert '<td style="text-align:left">T &gt; N</td>' in text
    assert '<td>0.25</td><td style="text-align:left">—</td>' in text  # a missing cell
    assert "overflow-x:auto" in text  # a wide table scrolls sideways
    assert "no rows" in style.value_table([]).text


def test_loglog_vline_labels_read_on_both_themes():
    """A vertical line's label (Lab 5/7's "HBM" marker) was drawn in the line's own
    colour, dark blue on the dark theme (3.4:1). The line keeps its colour; its label is text and
    uses the plot's text colour, readable on both backgrounds."""
    from labs.core.ui.figures import charts
    from labs.core.ui.tokens import BACKGROUNDS, COLORS

    fig = charts.loglog_lines_figure(
        [("a", [1, 10], [1, 10], COLORS["memory"], "solid")], title="t", x_title="x",
        y_title="y", vlines=[(3.0, "HBM", COLORS["memory"]), (5.0, "L2", COLORS["accent"])])
    labels = [a for a in fig.layout.annotations if a.text in ("HBM", "L2")]
    assert len(labels) == 2
    for a in labels:
        # as readable as the plots' other text (PLOT_TEXT: 3.97 on white, 4.33 on dark)
        assert all(contrast(a.font.color, bg) >= 3.9 for bg in BACKGROUNDS.values()), a.font.color
