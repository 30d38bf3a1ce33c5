import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", css_file="labs.css")


@app.cell
def _():
    import marimo as mo

    from labs.core import figures, hardware, style

    return figures, hardware, mo, style


@app.cell
def _(style):
    style.lab_header(
        "Style gallery",
        "Every component and figure of labs.core.ui.style and labs.core.ui.figures, for visual "
        "checks in the light and dark themes. Not a lab.",
        goals=["See each component once, with realistic content.",
               "Check legibility in both themes (View → theme, or ?theme=dark)."],
        minutes=5,
        reading=[("LABS_SPEC.md: Style", "../LABS_SPEC.md"),
                 ("Okabe & Ito, Color Universal Design", "https://jfly.uni-koeln.de/color/")],
    )
    return


@app.cell
def _(mo, style):
    _chips = "".join(
        f"{k}: {v}" + (" · " if i < len(style.COLORS) - 1 else "")
        for i, (k, v) in enumerate(style.COLORS.items()))
    mo.vstack([
        mo.md("## Tokens and small components"),
        mo.hstack([style.regime_badge("memory-bound"), style.regime_badge("compute-bound"),
                   style.regime_badge("overhead-bound")], justify="start"),
        mo.md(f"Semantic colours: `{_chips}`"),
        style.scenario_card(
            "Priya Raman", "kernel engineer",
            "Our 4096³ GEMM runs at 31% of the H100's peak. Is the GPU broken, or is this "
            "kernel just hitting a roof?\n\nStudent text is escaped: <b>not bold</b> & fine."),
        style.metric_cards([
            ("Arithmetic intensity", "1,365 FLOP/B", "2MNK / bytes moved"),
            style.Metric("Attainable", "989 TFLOP/s", "at the fp16 dense roof", "compute-bound"),
            style.Metric("Time bound", "139 µs", "max(compute, memory)", "memory"),
            ("MFU bound", "100%", "attainable / peak"),
        ]),
    ])
    return


@app.cell
def _(mo, style):
    mo.vstack([
        # made-up values, not any lab's graded case (a student can open the gallery)
        style.comparison_callout("N* = 2,400", "N* = 2,410", "right (within 0.5 %)", kind="ok"),
        style.comparison_callout("memory-bound", "compute-bound", "the other roof", kind="danger"),
        style.comparison_callout("40 GB", "52 GB", "off by 1.3x", kind="warn"),
        style.gate_notice("Lock your prediction to reveal the instrument."),
        style.error_callout("fp8 is not available on the NVIDIA A100 SXM 80GB "
                            "(it has: fp32, tf32, fp16, bf16, int8)."),
        style.ledger_status("ledger/lab01-student.jsonl", "s1234", 7),
        style.ledger_status(None, None, 0, warning="No student id: set ROOFLINE_STUDENT_ID or enter one."),
        style.math_peek("the roofline",
                        r"$$P = \min(\pi,\ \beta \cdot I), \qquad I^* = \pi / \beta$$"),
        style.takeaways(["A ridge point names its precision.",
                         "AI rises with reuse, not with clock speed."]),
    ])
    return


@app.cell
def _(mo, style):
    mo.vstack([
        mo.md("## Memory budget (component, HTML)"),
        # a made-up 3B-parameter model on a 24 GB card, not any lab's graded case
        style.memory_budget_bar({"weights": 6.4e9, "KV cache": 9.6e9, "activations": 0.8e9},
                                24e9),
        style.memory_budget_bar({"weights": 6.4e9, "KV cache": 19.2e9, "activations": 0.8e9},
                                24e9),
    ])
    return


@app.cell
def _(hardware, mo):
    device_picker = mo.ui.dropdown(hardware.picker_options(), value=next(
        k for k, v in hardware.picker_options().items() if v == "h100-sxm"), label="Device")
    device_picker
    return (device_picker,)


@app.cell
def _(device_picker, figures, hardware, mo):
    _dev = hardware.get(device_picker.value)
    # the main precision first: regimes are shaded and roof-placed points drawn for it
    _main = "fp16" if _dev.has("fp16") else _dev.precisions[0]
    _roofs = [(_dev, _main)] + [(_dev, p) for p in _dev.precisions if p != _main][:2]
    _points = [
        figures.Point("GEMV (decode)", 1.0, hover={"shape": "4096 x 4096 · 1"}),
        figures.Point("LayerNorm", 0.6),
        figures.Point("GEMM 512³", 170.7),
        figures.Point("GEMM 4096³", 1365.3),
        figures.Point("GEMM 4096³ (measured)", 1365.3, tflops=_dev.peak_tflops(
            _main) * 0.6, kind="measured"),
    ]
    mo.vstack([mo.md("## Roofline: one device, several precisions"),
               figures.roofline_figure(_roofs, _points)])
    return


@app.cell
def _(figures, mo):
    mo.vstack([
        mo.md("## Same kernel, other devices"),
        figures.roofline_figure(
            [("h100-sxm", "fp16"), ("jetson-orin-nx-16gb", "fp16"), ("tpu-v5e", "bf16"),
             ("rtx-5060-laptop", "fp16")],
            [figures.Point("GEMM 256³ (AI 85)", 85.3)],
            title="One GEMM, four devices"),
    ])
    return


@app.cell
def _(figures, mo):
    mo.vstack([
        mo.md("## Bars and memory budget (figures)"),
        figures.bar_figure(["weights", "KV cache", "activations"], [6.4, 9.6, 0.8],
                           colors=["memory", "compute", "ok"], title="Bytes moved per step",
                           yaxis_title="GB per decode step"),
        figures.memory_budget_figure({"weights": 6.4e9, "KV cache": 19.2e9,
                                      "activations": 0.8e9}, 24e9,
                                     title="A 3B model (made up), batch 24, 4k context, 24 GB"),
    ])
    return


if __name__ == "__main__":
    app.run()
