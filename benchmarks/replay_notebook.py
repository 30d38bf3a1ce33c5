"""A lab widget's output changes replayed alone: the floor of that one widget.

``bench_browser`` records, while it steps a lab's widget, every cell output the step changed
as marimo sent it over the websocket (figures, cards, callouts, status lines: the HTML the
page received). This notebook plays those states back: its one slider (a dropdown where the
lab's widget is one) walks the same sequence, and one cell shows the outputs of the current
state, stacked in the lab's order (one cell is cheaper than one per output, so the floor is
not flattered; ``bench_browser.page_notebook`` writes the variant laid out as the lab's page:
each output in its own cell among the lab's other cells as they stood, the slider where the
lab's widget is, which adds what marimo's messages cost per cell and the browser's cost of the
whole page). The kernel does no physics and builds no figure: it hands marimo the HTML it
was given. What a step costs here is marimo's round trip and output plus the browser
redrawing exactly the outputs the lab's step changed (plotly.js for its figures), so no lab
can step that widget faster on the same machine and load without showing less. NOT a lab.

    ROOFLINE_REPLAY=states.json marimo run benchmarks/replay_notebook.py   # then ?widget=N

``states.json``: ``{"widgets": [{"label": ..., "kind": "slider" or "dropdown", "states":
[[output, ...], ...], "page": [output, ...] or null}]}``, each output ``{"mimetype": ...,
"data": ...}`` as marimo sent it, or null where that cell had no output yet; ``page``: every
cell of the lab's page as it stood before the first step (read by ``page_notebook``'s cells).
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import html
    import json
    import os
    from pathlib import Path

    import marimo as mo

    _recorded = json.loads(Path(os.environ["ROOFLINE_REPLAY"]).read_text())["widgets"]
    replayed = _recorded[int(mo.query_params().get("widget") or 0)]
    states = replayed["states"]
    return html, json, mo, replayed, states


@app.cell
def _(html, json, mo):
    def as_sent(output: dict):
        """An output as the lab's page received it: HTML as HTML, an empty output as
        nothing; anything else (an error's list) as its text, which is cheaper to draw."""
        if output["mimetype"] == "text/html":
            return mo.Html(output["data"])
        data = output["data"]
        return mo.Html(f"<pre>{html.escape(data if isinstance(data, str) else json.dumps(data))}</pre>"
                       if data else "")
    return (as_sent,)


@app.cell
def _(mo, replayed, states):
    # stepped as the lab's widget was: a dropdown (a native select) where the lab's is one
    step = (mo.ui.dropdown({str(i): i for i in range(len(states))}, value="0",
                           label=f"replay: {replayed['label']}")
            if replayed.get("kind") == "dropdown" else
            mo.ui.slider(0, len(states) - 1, value=0, label=f"replay: {replayed['label']}"))
    step
    return (step,)


@app.cell
def _(as_sent, mo, states, step):
    mo.vstack([as_sent(output) for output in states[step.value] if output is not None])
    return


if __name__ == "__main__":
    app.run()
