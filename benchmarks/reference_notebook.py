# /// script
# requires-python = ">=3.10"
# dependencies = ["marimo>=0.25,<0.26", "numpy", "plotly"]
# ///
"""A plain marimo roofline notebook, built the usual way, as the speed benchmark's yardstick.

It is what a roofline notebook typically looks like when written without thought for speed:
numbers typed into the notebook, the curve sampled densely with numpy, and the figure built
with plotly's validating ``go.Figure`` API step by step (``add_trace``, ``add_vline``,
``add_annotation``, ``update_layout``, ``update_xaxes``). The benchmark runs it in the same
process and run as the labs, so the labs' timings can be read as ratios against it.
It is NOT a lab: it has no prediction gate and no ledger.
"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium")


@app.cell
def _():
    import marimo as mo
    import numpy as np
    import plotly.graph_objects as go

    return go, mo, np


@app.cell
def _(mo):
    mo.md("""
    # Roofline explorer (reference notebook)

    Pick a GPU and a kernel's arithmetic intensity; the plot shows which roof it hits.
    """)
    return


@app.cell
def _():
    # Dense peaks (TFLOP/s) and bandwidth (GB/s), typed in as a typical notebook would.
    gpus = {
        "H100 SXM": {"bw": 3350.0, "fp32": 67.0, "fp16": 989.5, "fp8": 1979.0},
        "A100 SXM": {"bw": 2039.0, "fp32": 19.5, "fp16": 312.0, "fp8": 312.0},
        "L4": {"bw": 300.0, "fp32": 30.3, "fp16": 121.0, "fp8": 242.5},
        "RTX 4090": {"bw": 1008.0, "fp32": 82.6, "fp16": 165.2, "fp8": 330.3},
    }
    return (gpus,)


@app.cell
def _(gpus, mo):
    gpu = mo.ui.dropdown(options=list(gpus), value="H100 SXM", label="GPU")
    precision = mo.ui.radio(options=["fp32", "fp16", "fp8"], value="fp16", label="precision")
    intensity = mo.ui.slider(start=0, stop=4, step=0.05, value=1.5,
                             label="log10 arithmetic intensity (FLOP/B)")
    mo.hstack([gpu, precision, intensity])
    return gpu, intensity, precision


@app.cell
def _(gpu, gpus, intensity, precision):
    spec = gpus[gpu.value]
    ai = 10 ** intensity.value
    ridge = spec[precision.value] * 1e12 / (spec["bw"] * 1e9)
    attainable = min(spec[precision.value], spec["bw"] * ai / 1e3)
    bound = "memory-bound" if ai < ridge else "compute-bound"
    return ai, attainable, bound, ridge, spec


@app.cell
def _(ai, attainable, bound, go, gpu, np, precision, ridge, spec):
    xs = np.logspace(-1, 4, 2000)
    fig = go.Figure()
    for prec in ("fp32", "fp16", "fp8"):
        ys = np.minimum(spec[prec], spec["bw"] * xs / 1e3)
        fig.add_trace(go.Scatter(
            x=xs, y=ys, mode="lines", name=f"{gpu.value} {prec}",
            line=dict(width=3 if prec == precision.value else 1,
                      dash="solid" if prec == precision.value else "dot"),
            hovertemplate="AI %{x:.1f} FLOP/B<br>%{y:.1f} TFLOP/s<extra></extra>"))
    fig.add_trace(go.Scatter(x=[ai], y=[attainable], mode="markers+text",
                             marker=dict(size=14, color="crimson"), name="kernel",
                             text=[bound], textposition="top center"))
    fig.add_vline(x=ridge, line_dash="dash", line_color="gray")
    fig.add_annotation(x=np.log10(ridge), y=np.log10(spec[precision.value]),
                       text=f"ridge {ridge:.0f} FLOP/B", showarrow=True, arrowhead=2)
    fig.add_vrect(x0=0.1, x1=ridge, fillcolor="royalblue", opacity=0.06, line_width=0)
    fig.update_layout(title=f"Roofline: {gpu.value}, {precision.value}",
                      template="plotly_white", height=450, legend_title_text="roof",
                      margin=dict(l=60, r=20, t=60, b=50))
    fig.update_xaxes(type="log", title="Arithmetic intensity (FLOP/byte)")
    fig.update_yaxes(type="log", title="Attainable TFLOP/s")
    fig
    return


@app.cell
def _(ai, attainable, bound, mo, ridge):
    mo.md(f"""
    At **{ai:.1f} FLOP/B** the kernel reaches **{attainable:.1f} TFLOP/s**: it is
    **{bound}** (ridge point {ridge:.0f} FLOP/B).
    """)
    return


if __name__ == "__main__":
    app.run()
