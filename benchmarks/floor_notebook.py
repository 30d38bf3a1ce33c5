"""The floor of a widget update in the browser (benchmarks/bench_browser.py).

Five sliders: one read by a cell with no output (the websocket round trip through marimo's
kernel), one by a cell with a text-only output (marimo's output replacement), one by a cell
with a two-point plotly figure (marimo's plotly element and plotly.js at trivial size), and two
that move four such figures at once, in four cells or stacked in one cell (what a widget that
changes several figures per step costs at the least). No lab can update faster than the row
with as many figures on the same machine and load. NOT a lab.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo
    import plotly.graph_objects as go

    def two_points(value, offset=0):
        return go.Figure(go.Scatter(x=[0, 1], y=[offset, value]),
                         layout=dict(height=300, margin=dict(l=40, r=10, t=10, b=30)))

    return mo, two_points


@app.cell
def _(mo):
    empty = mo.ui.slider(0, 50, value=0, label="empty cell")
    text = mo.ui.slider(0, 50, value=0, label="text output")
    plot = mo.ui.slider(0, 50, value=0, label="plot, 2 points")
    four_cells = mo.ui.slider(0, 50, value=0, label="4 plots in 4 cells")
    four_stacked = mo.ui.slider(0, 50, value=0, label="4 plots in 1 cell")
    mo.vstack([empty, text, plot, four_cells, four_stacked])
    return empty, four_cells, four_stacked, plot, text


@app.cell
def _(empty):
    _unused = empty.value
    return


@app.cell
def _(mo, text):
    mo.Html(f"<span class='bench-text'>value {text.value}</span>")
    return


@app.cell
def _(plot, two_points):
    two_points(plot.value)
    return


@app.cell
def _(four_cells, two_points):
    two_points(four_cells.value, 1)
    return


@app.cell
def _(four_cells, two_points):
    two_points(four_cells.value, 2)
    return


@app.cell
def _(four_cells, two_points):
    two_points(four_cells.value, 3)
    return


@app.cell
def _(four_cells, two_points):
    two_points(four_cells.value, 4)
    return


@app.cell
def _(four_stacked, mo, two_points):
    mo.vstack([two_points(four_stacked.value, i) for i in range(1, 5)])
    return


if __name__ == "__main__":
    app.run()
