"""A lab widget's figure changes replayed alone: the floor of that one widget (issue 15).

``bench_browser`` records, while it steps a lab's widget, every figure the step changed as
marimo sent it (the ``data-figure`` JSON of its ``<marimo-plotly>`` element). This notebook
plays those states back: its one slider walks the same sequence, and one cell shows the
figures of the current state, stacked (one cell is cheaper than one per figure, so the floor
is not flattered). The kernel does no physics and builds no figure: it hands marimo the JSON
it was given. What a step costs here is marimo's round trip and output plus plotly.js
redrawing exactly the figures the lab's step redrew, so no lab can step that widget faster
on the same machine and load. NOT a lab.

    ROOFLINE_REPLAY=states.json marimo run benchmarks/replay_notebook.py   # then ?widget=N

``states.json``: ``{"widgets": [{"label": ..., "states": [[figure JSON, ...], ...]}]}``.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import json
    import os
    from pathlib import Path

    import marimo as mo
    from marimo._output.formatters.plotly_formatters import PlotlyFormatter

    _recorded = json.loads(Path(os.environ["ROOFLINE_REPLAY"]).read_text())["widgets"]
    replayed = _recorded[int(mo.query_params().get("widget") or 0)]
    states = replayed["states"]
    return PlotlyFormatter, mo, replayed, states


@app.cell
def _(mo, replayed, states):
    step = mo.ui.slider(0, len(states) - 1, value=0, label=f"replay: {replayed['label']}")
    step
    return (step,)


@app.cell
def _(PlotlyFormatter, mo, states, step):
    mo.vstack([PlotlyFormatter.render_plotly_dict(fig) for fig in states[step.value]])
    return


if __name__ == "__main__":
    app.run()
