"""The floor of a widget update in the browser (benchmarks/bench_browser.py, issue 15).

Three sliders, each read by one cell: one with no output (the websocket round trip through
marimo's kernel), one with a text-only output (marimo's output replacement), one with a
two-point plotly figure (marimo's plotly element and plotly.js at trivial size). No lab can
update faster than these on the same machine and load. NOT a lab.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo
    import plotly.graph_objects as go

    return go, mo


@app.cell
def _(mo):
    empty = mo.ui.slider(0, 50, value=0, label="empty cell")
    text = mo.ui.slider(0, 50, value=0, label="text output")
    plot = mo.ui.slider(0, 50, value=0, label="plot, 2 points")
    mo.vstack([empty, text, plot])
    return empty, plot, text


@app.cell
def _(empty):
    _unused = empty.value
    return


@app.cell
def _(mo, text):
    mo.Html(f"<span class='bench-text'>value {text.value}</span>")
    return


@app.cell
def _(go, plot):
    go.Figure(go.Scatter(x=[0, 1], y=[0, plot.value]),
              layout=dict(height=300, margin=dict(l=40, r=10, t=10, b=30)))
    return


if __name__ == "__main__":
    app.run()
