"""Design tokens and the plotly template "roofline" as a plain dict (no marimo, no plotly at
import: figures.py imports it).

Colours are Okabe-Ito based (Okabe & Ito, "Color Universal Design", 2008), the palette most
used for colour-vision-deficiency-safe figures. Orange, sky blue, yellow and reddish purple are
darkened (each RGB channel scaled, hue kept) so that every token has >= 3:1 contrast - the
WCAG 2.1 minimum for graphical objects - against BOTH marimo's light background (#ffffff) and
its dark background (#181c1a, from marimo's CSS variable --background in the dark theme).
Colour never carries meaning alone: figures also use line dash and marker symbol per
precision, and text labels; components always print the regime / state in words.
"""

from __future__ import annotations

import copy

__all__ = [
    "BACKGROUNDS", "COLORS", "DEVICE_COLORS", "FONT_FAMILY", "HOVER_BG", "HOVER_TEXT", "PLOT_GRID",
    "PLOT_TEXT", "PRECISION_COLORS", "PRECISION_DASH", "PRECISION_SYMBOL", "REGIME_COLOR_KEY",
    "TEMPLATE", "TEMPLATE_NAME", "TERM_COLORS", "build_template",
    "register_template", "template", "term_colors"
]

#: marimo's page backgrounds (CSS variable --background in light / dark theme, marimo 0.25).
BACKGROUNDS = {"light": "#ffffff", "dark": "#181c1a"}

# Okabe-Ito, adjusted for >= 3:1 against both backgrounds (see module docstring).
_BLUE = "#0072B2"
_VERMILLION = "#D55E00"
_GREEN = "#009E73"
_ORANGE = "#BF8400"  # Okabe-Ito #E69F00 x 0.83
_SKY = "#4897C4"  # Okabe-Ito #56B4E9 x 0.84
_PURPLE = "#C675A2"  # Okabe-Ito #CC79A7 x 0.97
_YELLOW = "#9A922A"  # Okabe-Ito #F0E442 x 0.64 (olive: pure yellow is invisible on white)
_GREY = "#7B8088"  # mid grey: ~4:1 on both backgrounds

#: Semantic colours. Pairs that appear together (memory/compute/overhead; ok/warn/danger)
#: stay distinguishable under simulated protanopia, deuteranopia and tritanopia (tested).
COLORS: dict[str, str] = {
    "memory": _BLUE,
    "compute": _ORANGE,
    "overhead": _PURPLE,
    "danger": _VERMILLION,
    "ok": _GREEN,
    "warn": _YELLOW,
    "muted": _GREY,
    "accent": _SKY,
}

#: One colour per hardware device class (labs.core.physics.hardware.DEVICE_CLASSES).
DEVICE_COLORS: dict[str, str] = {
    "datacenter": _BLUE,
    "desktop": _VERMILLION,
    "laptop": _PURPLE,
    "edge": _GREEN,
    "tpu": _ORANGE,
    "cpu": _SKY,
    "custom": _GREY,
}

#: One colour per compute precision (labs.core.physics.hardware.PRECISIONS).
PRECISION_COLORS: dict[str, str] = {
    "fp32": _GREY,
    "tf32": _YELLOW,  # not sky blue: next to fp16's blue it was hard to tell apart (dark theme)
    "fp16": _BLUE,
    "bf16": _GREEN,
    "fp8": _ORANGE,
    "int8": _PURPLE,
    "fp4": _VERMILLION,
}

#: Second, colour-free cue per precision: line dash of the roof and symbol of the ridge marker.
PRECISION_DASH: dict[str, str] = {
    "fp32": "dot", "tf32": "dashdot", "fp16": "solid", "bf16": "dash", "fp8": "longdash",
    "int8": "longdashdot", "fp4": "solid",
}
PRECISION_SYMBOL: dict[str, str] = {
    "fp32": "circle", "tf32": "square", "fp16": "diamond", "bf16": "triangle-up",
    "fp8": "triangle-down", "int8": "star", "fp4": "hexagon",
}

#: Regime name (labs.core.physics.roofline) -> semantic colour key.
REGIME_COLOR_KEY = {"memory-bound": "memory", "compute-bound": "compute",
                    "overhead-bound": "overhead",
                    "communication-bound": "overhead"}  # Lab 6's link roof: purple

#: Text colour inside plots. Plotly cannot read CSS variables, and marimo (0.25) passes the
#: figure's own colours through unchanged in both themes, so plot text is a mid grey that has
#: ~4:1 contrast on both backgrounds; backgrounds are transparent so the page shows through.
PLOT_TEXT = "#7B8088"
PLOT_GRID = "rgba(128, 128, 128, 0.28)"
#: Hover boxes have their own opaque background, so they can use full-contrast text.
HOVER_BG = "#1F2328"
HOVER_TEXT = "#F5F5F5"
FONT_FAMILY = ("Inter, ui-sans-serif, system-ui, -apple-system, 'Segoe UI', Roboto, "
               "'Helvetica Neue', Arial, sans-serif")


def _axis() -> dict:
    return dict(gridcolor=PLOT_GRID, linecolor=PLOT_GRID, zerolinecolor=PLOT_GRID,
                tickcolor=PLOT_GRID, ticks="outside", showline=True, mirror=False,
                title=dict(font=dict(size=13)), automargin=True)


#: The shared look as a plain dict (plotly's template JSON): transparent backgrounds,
#: mid-grey text, Okabe-Ito colourway. A dict, not a go.layout.Template: building and
#: registering a Template validates every property and loads plotly's validators (~50 ms of
#: every lab's cold start, 60-300 ms on a loaded machine). The figure builders pass a copy of
#: it to each figure (``template()``); the test suite checks that plotly accepts it unchanged.
TEMPLATE: dict = {"layout": dict(
    font=dict(family=FONT_FAMILY, size=12, color=PLOT_TEXT),
    title=dict(font=dict(size=15), x=0.0, xref="paper", xanchor="left"),
    paper_bgcolor="rgba(0,0,0,0)",
    plot_bgcolor="rgba(0,0,0,0)",
    colorway=[_BLUE, _ORANGE, _GREEN, _VERMILLION, _PURPLE, _SKY, _YELLOW, _GREY],
    xaxis=_axis(),
    yaxis=_axis(),
    legend=dict(bgcolor="rgba(0,0,0,0)", font=dict(size=11)),
    hoverlabel=dict(bgcolor=HOVER_BG, font=dict(color=HOVER_TEXT, size=12),
                    bordercolor=_GREY),
    margin=dict(l=64, r=24, t=48, b=56),
)}

TEMPLATE_NAME = "roofline"


def template() -> dict:
    """A fresh copy of the template dict, for one figure's ``layout.template`` (a copy, so a
    figure edited later cannot change the next one's look)."""
    return copy.deepcopy(TEMPLATE)


def build_template():
    """The template as a validated ``plotly.graph_objects.layout.Template`` (slow: for
    registering it with plotly and for tests)."""
    import plotly.graph_objects as go  # noqa: PLC0415  (only when a Template is wanted)

    return go.layout.Template(template())


def register_template(make_default: bool = True) -> str:
    """Register the template with plotly as "roofline" (idempotent) and make it plotly's
    default, for figures built with plain ``go.Figure()`` (the instructor dashboard's).
    Not done at import: the labs' figure builders pass the dict themselves and never need it."""
    import plotly.io as pio  # noqa: PLC0415

    if TEMPLATE_NAME not in pio.templates:
        pio.templates[TEMPLATE_NAME] = build_template()
    if make_default and pio.templates.default != TEMPLATE_NAME:
        pio.templates.default = TEMPLATE_NAME
    return TEMPLATE_NAME


#: Colours for stacked memory terms (weights, KV cache, activations, ...), in order. Vermillion
#: is left out: it means danger (the overflow region).
TERM_COLORS = (_BLUE, _ORANGE, _GREEN, _PURPLE, _SKY, _YELLOW, _GREY)


def term_colors(names: list[str]) -> list[str]:
    """One colour per stacked term, cycling if there are more terms than colours."""
    return [TERM_COLORS[i % len(TERM_COLORS)] for i in range(len(names))]


