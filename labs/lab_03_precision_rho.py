# /// script
# requires-python = ">=3.10"
# dependencies = ["marimo>=0.25,<0.26", "numpy", "plotly"]
# ///
"""Lab 3 · Precision and ρ: does lower precision make a workload more compute-bound?"""

import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", css_file="labs.css")

with app.setup:
    import marimo as mo

    from labs.core import figures, hardware, live, measure, quiz, reveal, roofline, style
    from labs.core import units
    from labs.core import precision
    from labs.core import precision_study
    from labs.core.course.lessons import precision_rho

    LAB_ID = "lab03"

    # The scenarios' fixed cases (the questions name them); the instruments below use your picks.
    GEMM_4096 = {"m": 4096, "n": 4096, "k": 4096}
    GEMV_4096 = {"n": 4096, "k": 4096}
    # Kai's GEMV (Part 5): Llama-3-8B's gate projection, 117 MB of fp16 weights, more than an
    # H100's 50 MB L2, so repeated iterations really stream the weights from HBM.
    GEMV_KAI = {"n": 14336, "k": 4096}
    SCENARIO_DEVICE = "h100-sxm"
    # The pickers' opening values: the instructor copy's reveal answers are computed for these,
    # so prediction cells never depend on later picks (LABS_SPEC §4.2b).
    OPENING = {"device": "h100-sxm", "decode_matrix": "Q projection 4096×4096"}
    DIRECTION_OPTIONS = {"ρ goes up (more compute-bound)": "up",
                         "ρ goes down (more memory-bound)": "down",
                         "ρ stays the same": "unchanged"}
    OP_NAMES = {"gemm": "GEMM", "gemv": "GEMV", "mlp_train": "MLP fwd+bwd"}
    NAIVE_OPTIONS = {"about right (within 2×)": "about_right",
                     "far too low": "too_low", "far too high": "too_high"}
    M_STEPS = [2**i for i in range(0, 15)]  # the explorer's M (rows / tokens) slider
    # What each prediction's answer follows from, and what each instrument shows (LABS_SPEC §3):
    # an instrument opens once every prediction whose quantities it shows is locked. Each gate
    # is given just those predictions (INSTRUMENTS.answered_by), so that locking another one
    # re-runs none of its cells (a measurement and its button stay as they are).
    INSTRUMENTS = quiz.Instruments(
        answers={
            # ρ's change follows from AI and the ridge, the ridge from each precision's peak
            "lab03.rho_ratio": ["ratio:rho_fp32_fp16", "throughput", "intensity:ridge"],
            # the direction ρ moves when only the weights shrink: same peak, fewer bytes
            "lab03.weight_only_rho": ["ratio:rho_weight_only", "choice:rho_direction"],
            # the decode GEMV's bytes (a format's bits per weight, its block scales included),
            # and so its AI and its memory-bound time
            "lab03.nvfp4_byte_ratio": ["ratio:decode_bytes", "bytes:gemv", "bytes:format_bits",
                                       "time:gemv", "intensity:gemv"],
            # footprint against traffic, and the bandwidth each gives
            "lab03.naive_bandwidth": ["bandwidth:naive", "bytes:footprint", "ratio:footprint"],
        },
        instruments={
            # Part 1, Priya's GEMM (fixed): AI, ridges and ρ before and after, its roofline, the
            # comparison, the reflection and the math peek (4 -> 2 bytes per element)
            "classic": ["ratio:rho_fp32_fp16", "intensity:gemm", "intensity:ridge",
                        "regime:gemm", "throughput", "bandwidth:hbm", "bytes:element"],
            # Part 2, Sam's GEMM (fixed): AI, the fp16 ridge and ρ with int4 weights, the
            # comparison, the rule it shows (storage vs compute), the reflection and the peek
            "weight only": ["ratio:rho_weight_only", "choice:rho_direction", "intensity:gemm",
                            "intensity:ridge", "regime:gemm"],
            # any device's peaks, ridges, bandwidth and memory (a spec sheet per precision)
            "device": ["throughput", "intensity:ridge", "bandwidth:hbm", "bytes:capacity"],
            # Part 3: the decode GEMV per format on the device picked (bits, bytes, the math
            # precision: a weight-only format keeps the fp16 peak with fewer bytes), measured
            # where Part 6 ran; its reflection and math peek
            "decode": ["bytes:gemv", "bytes:format_bits", "time:gemv", "ratio:decode_bytes",
                       "regime:gemv", "intensity:gemv", "choice:rho_direction", "share:error",
                       "ratio:weight_only_measured"],
            # Part 3: Lee's case (fixed), the byte ratio against the prediction
            "lee": ["ratio:decode_bytes"],
            # Part 4: AI, ridge, ρ, time and I_bit of any op, shape, format (bits per element)
            # and device
            "explorer": ["intensity", "ratio:rho_fp32_fp16", "ratio:rho_weight_only", "time",
                         "regime", "throughput", "bandwidth:hbm", "bytes:format_bits"],
            # Part 5: Kai's benchmark on any op and device (footprint, traffic, bandwidth from
            # HBM or L2) and his TF32 claim
            "kai": ["bytes:footprint", "bytes:traffic", "bandwidth", "ratio:footprint",
                    "intensity:tf32", "throughput", "ratio:tf32"],
            # Part 5: Kai's own run (fixed), against the prediction, and the math peek
            "kai run": ["bandwidth:naive", "bandwidth:traffic", "ratio:footprint",
                          "bytes:footprint", "bytes:traffic", "bytes:l2"],
            # Part 6: this machine's peaks, bandwidth and decode GEMVs (their math precision
            # too), measured
            "measure": ["throughput", "bandwidth:measured", "time:gemv", "ratio:decode_bytes",
                        "share:measured", "choice:rho_direction"],
        })


@app.cell
def _():
    style.lab_header(
        "Lab 3 · Precision and ρ",
        "Does lower precision make a workload more compute-bound? Fewer bytes per element "
        "raise the arithmetic intensity, and every precision has its own peak and ridge.",
        goals=[
            "Compute ρ = AI / ridge for one operation at several precisions and explain which "
            "way FP32 → FP16 tensor cores moves a GEMM, and why.",
            "Tell storage precision from compute precision, and what weight-only INT4 with "
            "FP16 math does to ρ.",
            "Count the bytes a quantized weight format saves in decode, the ideal speedup of "
            "the roofline bounds for them, and why measured kernels gain less.",
            "Spot two errors in a first benchmark: what was divided by the time, and what TF32 "
            "really measures.",
        ],
        minutes=40,
        reading=[
            ("Williams, Waterman, Patterson: Roofline (CACM 2009)",
             "https://doi.org/10.1145/1498765.1498785"),
            ("H. He: Making Deep Learning Go Brrrr From First Principles",
             "https://horace.io/brrr_intro.html"),
            ("OCP Microscaling (MX) Formats v1.0",
             "https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf"),
            ("Dettmers et al.: QLoRA (NF4), 2023", "https://arxiv.org/abs/2305.14314"),
            ("Frantar et al.: MARLIN, mixed-precision inference kernels (PPoPP 2025)",
             "https://arxiv.org/abs/2408.11743"),
        ],
    )
    return


@app.cell
def _():
    get_ledger_settings, set_ledger_settings = quiz.ledger_settings()
    return get_ledger_settings, set_ledger_settings


@app.cell
def _(get_ledger_settings, set_ledger_settings):
    lab = quiz.LabSession(LAB_ID, __file__, settings=get_ledger_settings(),
                          on_settings=set_ledger_settings)
    lab.status()
    return (lab,)


@app.cell
def _():
    mo.md("""
    ## Part 1 · The classic argument

    One device has **one ridge point per compute precision**: ridge = peak / bandwidth. The
    workload's position relative to the ridge is ρ = AI / ridge (ρ < 1 memory-bound, ρ > 1
    compute-bound).
    """)
    return


@app.cell
def _():
    _hw = hardware.get(SCENARIO_DEVICE)
    style.scenario_card(
        "Priya", "ML engineer",
        "Our 4096×4096×4096 GEMM runs in FP32 on an H100 SXM: "
        f"{units.format_value(_hw.peak_tflops('fp32'))} TFLOP/s on the CUDA cores, "
        f"{units.format_value(_hw.bandwidth_gbs)} GB/s of HBM. If we switch to FP16 on the tensor "
        f"cores ({units.format_value(_hw.peak_tflops('fp16'))} TFLOP/s, dense), every element is "
        "half the bytes, so the arithmetic intensity doubles and the GEMM becomes twice as "
        "compute-bound. Right?")
    return


@app.cell
def _(lab):
    get_rho_ratio, set_rho_ratio = quiz.lock_state(lab, "lab03.rho_ratio")
    return get_rho_ratio, set_rho_ratio


@app.cell
def _(get_rho_ratio, lab, set_rho_ratio):
    rho_ratio_form = quiz.numeric_form(
        lab, "lab03.rho_ratio",
        question="**Prediction 1.** "
                 "H100 SXM, 4096³ GEMM, FP32 (CUDA cores) → FP16 (tensor cores). By the "
                 "roofline (dense spec peaks and bandwidth), what is ρ(fp16) / ρ(fp32)? Above 1 "
                 "means more compute-bound, below 1 more memory-bound (Priya says 2).",
        units="×", lo=0.01, hi=100, log_scale=True, locked=get_rho_ratio(),
        on_lock=set_rho_ratio)
    quiz.prediction_panel(rho_ratio_form, get_rho_ratio())
    return


@app.cell
def _(get_rho_ratio, lab):
    _c = precision_study.rho_change_parts("gemm", GEMM_4096, SCENARIO_DEVICE, "fp32", "fp16")
    rho_ratio_prediction = get_rho_ratio() or reveal.reference(
        lab, "lab03.rho_ratio",
        precision_study.rho_change("gemm", GEMM_4096, SCENARIO_DEVICE, "fp32", "fp16"), "×",
        explanation=precision_rho.rho_change_explanation(_c))
    reveal.card(rho_ratio_prediction)
    return (rho_ratio_prediction,)


@app.cell
def _(rho_ratio_prediction):
    _wait = INSTRUMENTS.gate("classic", rho_ratio_prediction)
    mo.stop(_wait is not None, _wait)
    classic = precision_study.rho_change_parts("gemm", GEMM_4096, SCENARIO_DEVICE, "fp32", "fp16")
    style.metric_cards(precision_rho.rho_change_cards(classic))
    return (classic,)


@app.cell
def _(classic):
    classic_figure = figures.roofline_figure(
        [(SCENARIO_DEVICE, "fp16"), (SCENARIO_DEVICE, "fp32")],
        [figures.Point(f"{GEMM_4096['m']}³ GEMM in {r.storage}", r.ai, r.attainable_tflops,
                       hover={"ρ": f"{r.rho:.3g}"}) for r in (classic.before, classic.after)],
        title="H100 SXM · one GEMM, two precisions, two ridges")
    classic_figure
    return


@app.cell
def _(classic, lab, rho_ratio_prediction):
    quiz.compare(rho_ratio_prediction, classic.rho_ratio, units="×", lab=lab)
    return


@app.cell
def _(classic, lab):
    rho_ratio_explain = quiz.explain_form(
        lab, "lab03.rho_ratio",
        observe_label="What does the instrument show? (ρ falls "
                      f"×{units.format_value(classic.rho_ratio)}: which factor wins, AI or "
                      "ridge?)",
        explain_label="Why was Priya's argument wrong (or right), in your own words?")
    rho_ratio_explain
    return


@app.cell
def _(classic):
    _m = GEMM_4096["m"]
    style.math_peek("ρ under a precision change", rf"""
    With $F$ FLOPs, $B$ compulsory bytes, peak $P_p$ (FLOP/s, dense, precision $p$) and
    bandwidth $BW$ (B/s):

    $$AI = \frac{{F}}{{B}}\ [\mathrm{{FLOP/B}}],\qquad
    \mathrm{{ridge}}_p = \frac{{P_p}}{{BW}}\ [\mathrm{{FLOP/B}}],\qquad
    \rho_p = \frac{{AI}}{{\mathrm{{ridge}}_p}}\ [\text{{dimensionless}}]$$

    For an $M{{\times}}N{{\times}}K$ GEMM, $F = 2MNK$ and $B = (MK + KN + MN)\,b$ with $b$
    bytes per element: $F$ = {units.format_value(classic.after.flops)} FLOP for
    $M=N=K={_m}$. Going fp32 → fp16 changes $b$ (4 → 2 B) *and* $P_p$; $BW$ is the same memory:

    $$\frac{{\rho_{{16}}}}{{\rho_{{32}}}} = \frac{{AI_{{16}}/AI_{{32}}}}{{P_{{16}}/P_{{32}}}}
    = \frac{{{units.format_value(classic.ai_ratio)}}}{{{units.format_value(classic.ridge_ratio)}}}
    = {units.format_value(classic.rho_ratio)}$$

    AI doubles, but the ridge moves ×{units.format_value(classic.ridge_ratio)} (CUDA cores →
    tensor cores), so the GEMM ends up *closer* to the memory roof. It is still compute-bound
    here (ρ = {units.format_value(classic.after.rho)}), but a smaller GEMM that was comfortably
    compute-bound in fp32 can become memory-bound in fp16.
    """)
    return


@app.cell
def _():
    mo.md("""
    ## Part 2 · Storage precision vs compute precision

    Part 1's switch changed every operand's format and the peak the math runs at, both at
    once. Quantizing only the weights is another kind of change.
    """)
    return


@app.cell
def _():
    style.scenario_card(
        "Sam", "inference lead",
        "We quantized the weights of our 4096³ projection GEMM to INT4 (group 128, FP16 "
        "scales) but kept FP16 activations and FP16 tensor-core math on the H100. "
        "Did that make it more compute-bound, less, or neither?")
    return


@app.cell
def _(lab):
    get_weight_only, set_weight_only = quiz.lock_state(lab, "lab03.weight_only_rho")
    return get_weight_only, set_weight_only


@app.cell
def _(get_weight_only, lab, set_weight_only):
    weight_only_form = quiz.choice_form(
        lab, "lab03.weight_only_rho",
        question="**Prediction 2.** "
                 "H100 SXM, 4096³ GEMM: weights INT4 (group 128) with FP16 math, "
                 "versus everything in FP16. What happens to ρ?",
        options=DIRECTION_OPTIONS, locked=get_weight_only(), on_lock=set_weight_only)
    quiz.prediction_panel(weight_only_form, get_weight_only())
    return


@app.cell
def _(get_weight_only, lab):
    _parts = precision_study.rho_change_parts("gemm", GEMM_4096, SCENARIO_DEVICE, "fp16",
                                              "int4-g128")
    weight_only_prediction = get_weight_only() or reveal.reference(
        lab, "lab03.weight_only_rho", _parts.direction,
        label=next(k for k, v in DIRECTION_OPTIONS.items() if v == _parts.direction),
        explanation=precision_rho.weight_only_explanation(_parts))
    reveal.card(weight_only_prediction)
    return (weight_only_prediction,)


@app.cell
def _(lab, rho_ratio_prediction, weight_only_prediction):
    _wait = INSTRUMENTS.gate("weight only", rho_ratio_prediction, weight_only_prediction)
    mo.stop(_wait is not None, _wait)
    weight_only = precision_study.rho_change_parts("gemm", GEMM_4096, SCENARIO_DEVICE, "fp16",
                                                   "int4-g128")
    mo.vstack([
        mo.md("A *storage* format decides the bytes moved; a *compute* precision decides which "
              "peak applies. Formats with their own tensor-core rate (fp8, int8, mxfp8, nvfp4, "
              "...) store all operands in that format and run at its peak. Storage-only formats "
              "(nf4, int4 group-scaled) hold only the weights; activations and math stay in a "
              "compute precision such as FP16 (weight-only quantization: the weights are "
              "dequantized on the fly)."),
        style.metric_cards(precision_rho.weight_only_cards(weight_only)),
        quiz.compare(weight_only_prediction, weight_only.direction, lab=lab,
                     actual_label=next(k for k, v in DIRECTION_OPTIONS.items()
                                       if v == weight_only.direction)),
    ])
    return (weight_only,)


@app.cell
def _(lab, weight_only):
    weight_only_explain = quiz.explain_form(
        lab, "lab03.weight_only_rho",
        observe_label=f"What does the instrument show? (ρ ×{weight_only.rho_ratio:.3g}: which "
                      "factor moved, AI or the ridge?)",
        explain_label="Why does weight-only INT4 move ρ the other way from FP32 → FP16?")
    weight_only_explain
    return


@app.cell
def _(weight_only):
    style.math_peek("storage vs compute", rf"""
    Bytes follow the **storage** format, the peak follows the **compute** precision:

    $$B = \sum_{{\text{{tensors}}}} n_t\,\frac{{\text{{bits}}_t}}{{8}}\ [\mathrm{{B}}],\qquad
    \rho = \frac{{F/B}}{{P_{{\text{{compute}}}}/BW}}$$

    Weight-only INT4 (group 128, its scales counted in its bits) with FP16 math lowers $B$ but
    keeps $P_{{\text{{fp16}}}}$, so the ridge stays put and ρ rises
    ×{weight_only.rho_ratio:.3g} for the 4096³ GEMM.
    """)
    return


@app.cell
def _():
    mo.md("""
    ## Part 3 · Decode: quantized weights, bytes and speed

    At batch 1 every decode step multiplies one token by each weight matrix: a GEMV. It reads
    each weight once and does one multiply-add with it.
    """)
    return


@app.cell
def _():
    style.scenario_card(
        "Lee", "serving engineer",
        "Batch-1 decode is all GEMVs. If we store the weights in NVFP4 instead of FP16, how "
        "many times fewer bytes does one GEMV read, and how much faster can it get on our "
        "H100?")
    return


@app.cell
def _(lab):
    get_nvfp4, set_nvfp4 = quiz.lock_state(lab, "lab03.nvfp4_byte_ratio")
    return get_nvfp4, set_nvfp4


@app.cell
def _(get_nvfp4, lab, set_nvfp4):
    # NVIDIA's own description of NVFP4's block scales (not a page that states the ratio)
    _spec = ("https://docs.nvidia.com/cuda/nvmath-python/latest/host-apis/linalg/generated/"
                  "nvmath.linalg.advanced.helpers.matmul.to_block_scale.html")
    nvfp4_form = quiz.numeric_form(
        lab, "lab03.nvfp4_byte_ratio",
        question="**Prediction 3.** "
                 "Llama-3-8B's Q projection (4096×4096) as a batch-1 decode GEMV on the H100 "
                 "SXM, FP16 activations. Storing its weights in NVFP4, as NVIDIA specifies it "
                 f"([how NVFP4 stores a block of weights]({_spec})), instead of FP16: how "
                 "many times fewer bytes does the GEMV read, at the ideal traffic (every weight "
                 "and vector element read once)?",
        units="×", lo=0.1, hi=100, locked=get_nvfp4(), on_lock=set_nvfp4)
    quiz.prediction_panel(nvfp4_form, get_nvfp4())
    return


@app.cell
def _(get_nvfp4, lab):
    _rows = precision_study.decode_quant_table(
        *precision_study.decode_gemv_shapes("llama-3-8b")[OPENING["decode_matrix"]],
        OPENING["device"])
    _fp16, _fp4 = (next(r for r in _rows if r.storage == s) for s in ("fp16", "nvfp4"))
    nvfp4_prediction = get_nvfp4() or reveal.reference(
        lab, "lab03.nvfp4_byte_ratio", _fp4.byte_ratio, "×",
        explanation=precision_rho.nvfp4_explanation(_fp16, _fp4))
    reveal.card(nvfp4_prediction)
    return (nvfp4_prediction,)


@app.cell
def _():
    device_picker = style.dropdown_on(hardware.picker_options(), OPENING["device"],
                                      label="Device (used by Parts 3 to 5)", searchable=True)
    device_picker
    return (device_picker,)


@app.cell
def _(device_picker):
    device = hardware.get(device_picker.value)
    return (device,)


@app.cell
def _(device, rho_ratio_prediction):
    _wait = INSTRUMENTS.gate("device", rho_ratio_prediction)
    mo.stop(_wait is not None, _wait)
    device_card = style.metric_cards(precision_rho.device_spec_cards(device))
    device_card
    return


@app.cell
def _():
    # Shown with the decode table (the cell below), not on its own: closed, nothing here moves.
    decode_matrix = mo.ui.dropdown(precision_study.decode_gemv_shapes("llama-3-8b"),
                                   value=OPENING["decode_matrix"],
                                   label="Llama-3-8B weight matrix (N×K) for the decode GEMV")
    return (decode_matrix,)


@app.cell
def _(
    decode_matrix,
    device_picker,
    live_results,
    nvfp4_prediction,
    weight_only_prediction,
):
    _wait = INSTRUMENTS.gate("decode", weight_only_prediction, nvfp4_prediction)
    mo.stop(_wait is not None, _wait)
    quant_rows = precision_study.decode_quant_table(*decode_matrix.value, device_picker.value)
    # Measured columns only when the live run measured this device and this matrix.
    _live = live_results or {}
    _same = (_live.get("registry_key") == device_picker.value
             and _live.get("shape") == tuple(decode_matrix.value))
    quant_table = precision_study.merge_measured(quant_rows,
                                                 _live.get("measured_s", {}) if _same else {})
    decode_matrix
    return quant_rows, quant_table


@app.cell
def _(device, live_results, quant_rows, quant_table):
    _note = precision_rho.decode_measured_note(quant_table,
                                               live_results and live_results["device"])
    mo.vstack([style.value_table(
        precision_rho.decode_table_rows(quant_rows, quant_table),
        caption=f"Decode GEMV on {device.name}: the roofline's bounds and what was measured"),
        mo.md(f"_{_note}_"),
        mo.md("**The speedup of the roofline bounds is the ideal, not a forecast.** It is the "
              "ratio of two lower bounds on time: bytes over the bandwidth, nothing else "
              "charged, while a weight-only kernel dequantises every weight before its "
              "multiply, and a kernel this small rarely reaches peak bandwidth. Measured: "
              f"{precision_study.measured_weight_only_text()}.")])
    return


@app.cell
def _(device, quant_rows):
    _base = quant_rows[0].storage  # the baseline: fp16, or what the device computes in
    quant_figure = figures.bar_figure(
        [q.storage for q in quant_rows], [q.speedup for q in quant_rows],
        colors=[q.regime for q in quant_rows],
        annotations=[f"ideal {units.format_value(q.speedup)}× "
                     f"(bytes ÷{units.format_value(q.byte_ratio)})" for q in quant_rows],
        title=f"Decode GEMV on {device.name}: the speedup of the roofline bounds over {_base} "
              "(ideal)",
        yaxis_title=f"speedup over {_base}, ideal (×)")
    quant_figure
    return


@app.cell
def _(lab, nvfp4_prediction):
    # The question's case, fixed (the H100 and the Q projection), whatever is picked above.
    _wait = INSTRUMENTS.gate("lee", nvfp4_prediction)
    mo.stop(_wait is not None, _wait)
    _rows = precision_study.decode_quant_table(
        *precision_study.decode_gemv_shapes("llama-3-8b")[OPENING["decode_matrix"]],
        OPENING["device"])
    nvfp4_row = next(q for q in _rows if q.storage == "nvfp4")
    mo.vstack([mo.md("**Prediction vs reality** · Lee's case: the Q projection on the H100 SXM"),
               quiz.compare(nvfp4_prediction, nvfp4_row.byte_ratio, units="×", lab=lab)])
    return


@app.cell
def _(lab, nvfp4_prediction, weight_only_prediction):
    # The labels stay fixed: a form rebuilt on every device change would drop typed text. Its
    # question names the answer's reason (the scales) and asks about the table, so it opens
    # with the table.
    mo.stop(INSTRUMENTS.gate("decode", weight_only_prediction, nvfp4_prediction) is not None)
    nvfp4_explain = quiz.explain_form(
        lab, "lab03.nvfp4_byte_ratio",
        observe_label="What does the table show for NVFP4: its bytes, its byte ratio, the "
                      "roofline's speedup, and the precision the math runs in on your device?",
        explain_label="Why is the byte ratio not 16/4 = 4×, and why will a real kernel gain "
                      "less than the roofline's speedup? Does the device's FP4 rate matter here?")
    nvfp4_explain
    return


@app.cell
def _(nvfp4_prediction, weight_only_prediction):
    # the formula for the answer, and the math precision weight-only formats keep (Part 2's)
    mo.stop(INSTRUMENTS.gate("decode", weight_only_prediction, nvfp4_prediction) is not None)
    _n, _k = precision_study.decode_gemv_shapes("llama-3-8b")[OPENING["decode_matrix"]]
    _rows = {q.storage: q for q in precision_study.decode_quant_table(_n, _k, OPENING["device"])}
    style.math_peek("decode GEMV bytes, time and speedup", rf"""
    $y[N] = W[N,K]\,x[K]$ with $N$ = {_n}, $K$ = {_k}: $F = 2NK$ FLOPs and
    $B = NK\,\frac{{\text{{bits}}_W}}{{8}} + (K + N)\,b_a$ bytes, with $b_a$ = 2 B (fp16
    activations; the weights are dequantised to them) unless the device computes in the
    format itself, when the activation vector is quantised too (W8A8): the vector is tiny either
    way. Block formats pay for their scales: MXFP4 = 4 + 8/32 = {precision.bits("mxfp4"):g} bits,
    NVFP4 = 4 + 8/16 = {precision.bits("nvfp4"):g} bits, NF4 = 4 + 32/64 =
    {precision.bits("nf4"):g} bits. So

    $$\frac{{B_{{16}}}}{{B_q}} \approx \frac{{16}}{{\text{{bits}}_q}}
    = \frac{{16}}{{{precision.bits("nvfp4"):g}}}
    = {units.format_value(_rows["nvfp4"].byte_ratio)} \ \text{{for NVFP4, not 4}}.$$

    $AI \approx 2 \cdot 8 / \text{{bits}}_W$ FLOP/B (1 at fp16): far below any ridge, so the
    roofline bounds the time by the bytes and the speedup by their ratio:

    $$t \ge \frac{{B}}{{BW}}\ [\mathrm{{s}}],\qquad
    \frac{{B_{{16}}/BW}}{{B_q/BW}} = \frac{{B_{{16}}}}{{B_q}}\ \text{{(the speedup of the two
    bounds)}}.$$

    That is the ideal: a ratio of two lower bounds, not a bound on what a kernel measures. A
    weight-only kernel also dequantises every weight (unpack, scale,
    convert) before its multiply, work this bound does not charge, and a
    {units.format_value(_rows["fp16"].bytes / 1e6)} MB GEMV is small enough to miss peak
    bandwidth. Measured: {precision_study.measured_weight_only_text()}. The device's FP4 rate
    changes the ridge, not this time.
    """)
    return


@app.cell
def _():
    mo.md("""
    ## Part 4 · Explore: any operation, any format, any device

    Once Predictions 1 to 3 are locked, the explorer computes AI, the ridge of the math
    precision, ρ, the time bound and the bit-level intensity for any operation and shape, on
    the device picked in Part 3. Things to try: the same FP32 → FP16 switch on another device;
    weight-only formats on the GEMV and on the MLP; how small M must get before a GEMM behaves
    like a decode GEMV.
    """)
    return


@app.cell
def _(nvfp4_prediction, rho_ratio_prediction, weight_only_prediction):
    _wait = INSTRUMENTS.gate("explorer", rho_ratio_prediction, weight_only_prediction,
                             nvfp4_prediction)
    mo.stop(_wait is not None, _wait)
    explorer_open = True  # the explorer's cells below run only while it is open
    return (explorer_open,)


@app.cell
def _(explorer_open):
    mo.stop(not explorer_open)  # the explorer's widgets show with it
    op_picker = mo.ui.dropdown(
        {"GEMM · C[M,N] = A[M,K] · B[K,N]": "gemm",
         "GEMV (decode) · y[N] = W[N,K] · x[K]": "gemv",
         "MLP forward + backward · M tokens, K = d_model, N = d_ff": "mlp_train"},
        value="GEMM · C[M,N] = A[M,K] · B[K,N]", label="Operation")
    op_picker
    return (op_picker,)


@app.cell
def _(explorer_open):
    mo.stop(not explorer_open)
    size_m = mo.ui.slider(steps=M_STEPS, value=4096, show_value=True,
                          label="M · rows / tokens (a GEMV has M = 1)")
    size_m
    return (size_m,)


@app.cell
def _(explorer_open):
    mo.stop(not explorer_open)
    size_n = mo.ui.slider(steps=[2**i for i in range(6, 16)], value=4096, show_value=True,
                          label="N · output features (d_ff for the MLP)")
    size_n
    return (size_n,)


@app.cell
def _(explorer_open):
    mo.stop(not explorer_open)
    size_k = mo.ui.slider(steps=[2**i for i in range(6, 16)], value=4096, show_value=True,
                          label="K · reduction (d_model for the MLP)")
    size_k
    return (size_k,)


@app.cell
def _(explorer_open):
    # its labels give each format's bits, block scales included: Prediction 3's, so it shows
    # only with the explorer
    mo.stop(not explorer_open)
    _keys = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "mxfp8", "mxfp4", "nvfp4", "nf4",
             "int4-g128", "int4-g32")
    _options = {f"{precision.get(k).label} · {precision.bits(k):g} bits": k for k in _keys}
    format_picker = mo.ui.multiselect(
        _options, value=[l for l, k in _options.items() if k not in ("mxfp4", "nvfp4", "int4-g32")],
        label="Storage formats to compare (bits per element include block scales)")
    format_picker
    return (format_picker,)


@app.cell
def _(explorer_open):
    mo.stop(not explorer_open)
    weight_only_compute = mo.ui.dropdown(
        ["fp16", "bf16", "fp8", "fp32"], value="fp16",
        label="Compute precision for weight-only formats (nf4, int4): activations and math")
    weight_only_compute
    return (weight_only_compute,)


@app.cell
def _(explorer_open):
    mo.stop(not explorer_open)
    # Text boxes, not mo.ui.number: a weight out of range is refused with a message (next
    # cell) and the last good one kept, instead of being clamped in the browser.
    circuit_weights = mo.ui.dictionary(
        {p: style.NumberBox(round(w, 3), lo=0.001, hi=100.0, label=p)
         for p, w in precision.CIRCUIT_WEIGHTS.items()})
    mo.vstack([mo.md("**Circuit weight of one multiply-add per math precision** (FP16 = 1, "
                     "each from 0.001 to 100), used by I_bit. These are *rough, editable "
                     "teaching estimates* (multiplier cost grows about with the square of the "
                     "significand bits), not measurements: change them and watch I_bit move."),
               circuit_weights.hstack(wrap=True, justify="start")])
    return (circuit_weights,)


@app.cell
def _(circuit_weights):
    style.input_messages(circuit_weights)
    return


@app.cell
def _(
    circuit_weights,
    device_picker,
    explorer_open,
    format_picker,
    op_picker,
    size_k,
    size_m,
    size_n,
    weight_only_compute,
):
    mo.stop(not explorer_open)
    explorer_shape = {
        "gemm": {"m": size_m.value, "n": size_n.value, "k": size_k.value},
        "gemv": {"n": size_n.value, "k": size_k.value},
        "mlp_train": {"tokens": size_m.value, "d_model": size_k.value, "d_ff": size_n.value},
    }[op_picker.value]
    try:
        if not format_picker.value:  # the study refuses an empty list: say it as a way out
            raise ValueError("No storage format is picked: pick at least one in the list "
                             "above and the explorer comes back.")
        explorer_rows = precision_study.study(op_picker.value, explorer_shape, device_picker.value,
                                 format_picker.value,
                                 compute_for_weight_only=weight_only_compute.value,
                                 weights=circuit_weights.value)
        explorer_error = None
    except (KeyError, ValueError) as _err:
        explorer_rows, explorer_error = [], style.error_message(_err)
    explorer_ok = [r for r in explorer_rows if r.supported]
    return explorer_error, explorer_ok, explorer_rows, explorer_shape


@app.cell
def _(device, explorer_error, explorer_rows):
    # The failure state: a precision the device has no rate for says so and names the way out.
    _missing = [r for r in explorer_rows if not r.supported]
    _msgs = [explorer_error] if explorer_error else []
    if _missing:
        _msgs.append(precision_rho.missing_rate_message(device, _missing))
    style.error_callout("\n\n".join(_msgs)) if _msgs else None
    return


@app.cell
def _(explorer_ok):
    style.value_table(precision_rho.explorer_table_rows(explorer_ok),
                      caption="One row per storage format on the chosen device"
                      ) if explorer_ok else None
    return


@app.cell
def _(explorer_ok):
    explorer_labels = [precision_study.row_label(r) for r in explorer_ok]
    # the bars' colour is the math precision; the legend says which is which
    explorer_colors = [style.PRECISION_COLORS[r.compute] for r in explorer_ok]
    math_legend = {f"math in {r.compute}": style.PRECISION_COLORS[r.compute]
                   for r in explorer_ok}
    return explorer_colors, explorer_labels, math_legend


@app.cell
def _(explorer_colors, explorer_labels, explorer_ok, math_legend):
    ai_bars = figures.bar_figure(
        explorer_labels, [r.ai for r in explorer_ok], colors=explorer_colors,
        legend=math_legend, title="AI_std: FLOPs per byte moved",
        yaxis_title="AI (FLOP/byte)"
    ) if explorer_ok else None
    return (ai_bars,)


@app.cell
def _(explorer_colors, explorer_labels, explorer_ok, math_legend):
    ibit_bars = figures.bar_figure(
        explorer_labels, [r.i_bit for r in explorer_ok], colors=explorer_colors,
        legend=math_legend,
        title="I_bit: circuit-weighted ops per bit moved (rough weights)",
        yaxis_title="I_bit (weighted op/bit)") if explorer_ok else None
    return (ibit_bars,)


@app.cell
def _(explorer_colors, explorer_labels, explorer_ok, math_legend):
    ridge_bars = figures.bar_figure(
        explorer_labels, [r.ridge for r in explorer_ok], colors=explorer_colors,
        legend=math_legend,
        title="Ridge point of the math precision (dense)",
        yaxis_title="ridge (FLOP/byte)") if explorer_ok else None
    return (ridge_bars,)


@app.cell
def _(explorer_labels, explorer_ok):
    rho_bars = figures.bar_figure(
        explorer_labels, [r.rho for r in explorer_ok],
        colors=[r.regime for r in explorer_ok],
        legend={"memory-bound (ρ < 1)": "memory-bound", "compute-bound (ρ > 1)": "compute-bound"},
        title="ρ = AI / ridge (< 1 memory-, > 1 compute-bound)",
        yaxis_title="ρ (dimensionless)") if explorer_ok else None
    return (rho_bars,)


@app.cell
def _(ai_bars, ibit_bars, rho_bars, ridge_bars):
    mo.vstack([mo.hstack([rho_bars, ai_bars], widths="equal"),
               mo.hstack([ridge_bars, ibit_bars], widths="equal")]) if rho_bars else None
    return


@app.cell
def _(device, explorer_rows, explorer_shape, op_picker):
    _view = precision_study.roofline_view(explorer_rows, device)
    explorer_roofline = figures.roofline_figure(
        [(device, p) for p in _view.roofs],
        [figures.Point(label, ai, tflops, hover={
            precision_study.row_label(r): f"ρ {units.format_value(r.rho)}, math {r.compute}"
            for r in rows})
         for label, ai, tflops, rows in _view.points],
        title=f"{OP_NAMES[op_picker.value]} "
              f"{'×'.join(str(v) for v in explorer_shape.values())} on {device.name}: "
              "one roof per math precision",
        height=480, label_points=True) if _view.points else None
    _twins = ", ".join(f"{p} has the same peak as {q} (same roof)"
                       for p, q in _view.same_roof.items())
    # (a None inside a stack would print "None" under the figure)
    style.figure_with_note(explorer_roofline, f"_{_twins}._" if _twins else None
                           ) if explorer_roofline else None
    return


@app.cell
def _(device, explorer_open):
    # Part 1's switch on the device picked (a TPU has no fp32 rate: a message, not a crash).
    mo.stop(not explorer_open)
    try:
        _mine = precision_study.rho_change_parts("gemm", GEMM_4096, device, "fp32", "fp16")
        _on_mine = style.metric_cards(precision_rho.switch_cards(device, _mine))
    except (KeyError, ValueError) as _err:
        _on_mine = mo.md(precision_rho.switch_unavailable_note(device, _err))
    _on_mine
    return


@app.cell
def _(circuit_weights, explorer_open):
    mo.stop(not explorer_open)
    _w = circuit_weights.value
    style.math_peek("bit-level intensity, I_bit", rf"""
    **Bit-level intensity** weighs each FLOP by the rough circuit cost $w_p$ of its
    multiply-add (FP16 = 1) and counts bits instead of bytes:

    $$I_{{\text{{bit}}}} = \frac{{F \cdot w_p}}{{8B}}\ [\text{{weighted op / bit}}]$$

    Your weights now: fp32 {_w["fp32"]:g}, fp16 {_w["fp16"]:g}, bf16 {_w["bf16"]:g},
    fp8 {_w["fp8"]:g}, int8 {_w["int8"]:g}, fp4 {_w["fp4"]:g}. The default ones scale with
    the square of the significand width (24, 11, 8, 4, 2 bits): a teaching estimate,
    not a measurement. If $I_{{\text{{bit}}}}$ falls as precision drops, the wires (bits
    moved) shrink less than the arithmetic does.
    """)
    return


@app.cell
def _():
    mo.md("""
    ## Part 5 · What the naive measurement gets wrong
    """)
    return


@app.cell
def _():
    style.scenario_card(
        "Kai", "student, first benchmark",
        "I ran a 14336×4096 FP16 GEMV (Llama-3-8B's gate projection, 117 MB of weights) 100 "
        "times on an H100, took torch.cuda.max_memory_allocated() as the bytes and divided by "
        "the total time. Memory on this GPU is slow! Also, my FP32 matmul reached 400 TFLOP/s, "
        "six times the FP32 peak. Who needs tensor cores?")
    return


@app.cell
def _(lab):
    get_naive, set_naive = quiz.lock_state(lab, "lab03.naive_bandwidth")
    return get_naive, set_naive


@app.cell
def _(get_naive, lab, set_naive):
    naive_form = quiz.choice_form(
        lab, "lab03.naive_bandwidth",
        question="**Prediction 4.** "
                 "Kai's bandwidth figure (allocator peak ÷ time for 100 "
                 "iterations), compared with the bandwidth the GEMVs really used, is ...",
        options=NAIVE_OPTIONS, locked=get_naive(), on_lock=set_naive)
    quiz.prediction_panel(naive_form, get_naive())
    return


@app.cell
def _(get_naive, lab):
    _kai = precision_study.naive_bandwidth("gemv", GEMV_KAI, "fp16", SCENARIO_DEVICE,
                                           iterations=100)
    naive_prediction = get_naive() or reveal.reference(
        lab, "lab03.naive_bandwidth", _kai.verdict,
        label=next(k for k, v in NAIVE_OPTIONS.items() if v == _kai.verdict),
        explanation=precision_rho.naive_explanation(_kai))
    reveal.card(naive_prediction)
    return (naive_prediction,)


@app.cell
def _(naive_prediction, rho_ratio_prediction):
    _wait = INSTRUMENTS.gate("kai", rho_ratio_prediction, naive_prediction)
    mo.stop(_wait is not None, _wait)
    kai_open = True  # the benchmark's cells below run only while it is open
    return (kai_open,)


@app.cell
def _():
    naive_op = mo.ui.dropdown(
        {"GEMV 14336×4096 (fp16, Kai's: 117 MB, larger than an H100's 50 MiB L2)":
             ("gemv", GEMV_KAI),
         "GEMV 4096×4096 (fp16, 34 MB: fits an H100's 50 MiB L2)": ("gemv", GEMV_4096),
         "GEMM 4096³ (fp16)": ("gemm", GEMM_4096),
         "MLP fwd+bwd, 2048 tokens, 4096 → 14336 (fp16)":
             ("mlp_train", {"tokens": 2048, "d_model": 4096, "d_ff": 14336})},
        value="GEMV 14336×4096 (fp16, Kai's: 117 MB, larger than an H100's 50 MiB L2)",
        label="What Kai timed")
    naive_op
    return (naive_op,)


@app.cell
def _():
    naive_iterations = mo.ui.slider(steps=[1, 2, 5, 10, 20, 50, 100, 200, 500, 1000], value=100,
                                    show_value=True, label="Iterations timed")
    naive_iterations
    return (naive_iterations,)


@app.cell
def _(device, kai_open, naive_iterations, naive_op):
    mo.stop(not kai_open)
    try:
        naive = precision_study.naive_bandwidth(*naive_op.value, "fp16", device,
                                   iterations=naive_iterations.value)
        _out = style.metric_cards(precision_rho.naive_bandwidth_cards(naive, device))
        if naive.fits_in_l2:
            _kai = precision_study.footprint_vs_traffic("gemv", GEMV_KAI, "fp16").footprint_bytes
            _out = mo.vstack([_out, mo.callout(
                mo.md(precision_rho.l2_trap_text(naive, device, _kai)), kind="warn")])
    except (KeyError, ValueError) as _err:
        naive, _out = None, style.error_callout(
            f"{device.name} has no fp16 rate in the registry, and what Kai timed is fp16: pick "
            f"a device with one in Part 3 ({style.devices_with('fp16')})." if not device.has(
                "fp16") else _err)
    _out
    return (naive,)


@app.cell
def _(naive):
    naive_figure = figures.bar_figure(
        ["allocator peak", "L2 traffic" if naive and naive.fits_in_l2 else "HBM traffic"],
        [naive.fvt.footprint_bytes / 1e9, naive.fvt.traffic_bytes / 1e9], log=True,
        colors=["danger", "memory"], title="Memory held is not memory moved",
        yaxis_title="GB (1e9 bytes, log)") if naive else None
    naive_figure
    return


@app.cell
def _(lab, naive_prediction):
    _wait = INSTRUMENTS.gate("kai run", naive_prediction)
    mo.stop(_wait is not None, _wait)
    kai = precision_study.naive_bandwidth("gemv", GEMV_KAI, "fp16", SCENARIO_DEVICE, iterations=100)
    _label = next(k for k, v in NAIVE_OPTIONS.items() if v == kai.verdict)
    quiz.compare(naive_prediction, kai.verdict, lab=lab,
                 actual_label=f"{_label}: Kai's {units.format_value(kai.naive_gbs)} GB/s "
                              f"against {units.format_value(kai.traffic_gbs)} GB/s really used "
                              f"(×{units.format_value(kai.fvt.ratio)})")
    return (kai,)


@app.cell
def _(device, kai_open):
    mo.stop(not kai_open)
    try:
        tf32 = precision_study.tf32_misreading("gemm", GEMM_4096, device)
        _out = style.metric_cards(precision_rho.tf32_cards(tf32))
    except (KeyError, ValueError) as _err:
        _lacks = [p for p in ("tf32", "fp32") if not device.has(p)]
        tf32, _out = None, style.error_callout(
            f"{device.name} has no {' or '.join(_lacks)} rate in the registry: TF32 is a "
            "tensor-core mode only some GPUs have. Pick one that has it in Part 3 "
            f"({style.devices_with('tf32', 'fp32')})." if _lacks else _err)
    mo.vstack([mo.md(f"**TF32 on {device.name}: a compute mode, not a storage format** "
                     "(4096³ GEMM)"), _out])
    return


@app.cell
def _(kai_open, lab):
    # Fixed labels: moving the sliders above must not drop what the student typed. It asks
    # about the benchmark's cards, so it opens with them.
    mo.stop(not kai_open)
    naive_explain = quiz.explain_form(
        lab, "lab03.naive_bandwidth",
        observe_label="What do the instruments show? (allocator peak against traffic, as a "
                      "ratio; and the TF32 cards)",
        explain_label="What should Kai divide by the time instead, and what was his "
                      "'400 TFLOP/s FP32' really measuring?")
    naive_explain
    return


@app.cell
def _(kai):
    _kai_l2 = hardware.get(SCENARIO_DEVICE).l2_bytes
    style.math_peek("memory held vs memory moved; TF32", rf"""
    An allocator's peak counts each tensor **once** while it is alive; HBM traffic counts
    every read and write of every kernel, every iteration:

    $$\text{{footprint}} = \sum_{{\text{{tensors}}}} n_t b_t\ [\mathrm{{B}}],\qquad
    \text{{traffic}} = I \sum_{{\text{{kernels}}}} (\text{{bytes read}} +
    \text{{bytes written}})\ [\mathrm{{B}}]$$

    Kai's run: footprint {units.format_bytes(kai.fvt.footprint_bytes)}, traffic
    {units.format_bytes(kai.fvt.traffic_bytes)} over $I$ = {kai.fvt.iterations} iterations,
    so footprint ÷ time = {units.format_value(kai.naive_gbs)} GB/s while traffic ÷ time =
    {units.format_value(kai.traffic_gbs)} GB/s. Even for one iteration the footprint is only a
    lower bound on traffic: a tiled kernel re-reads its inputs, and training re-reads weights and
    activations in the backward pass (try the MLP).

    **Where the traffic comes from.** Repeating a kernel whose working set fits in the L2
    cache ({units.format_bytes(_kai_l2, binary=True)} on an H100) reads it from L2 after the
    first iteration: a 4096×4096 fp16 GEMV (34 MB) would time the cache, not HBM. Kai's
    {units.format_bytes(kai.fvt.footprint_bytes)} do not fit, so his iterations do stream
    from HBM; a benchmark of a small kernel must rotate through copies larger than the cache.

    **TF32** rounds FP32 inputs to 1 + 8 + 10 = {precision_study.TF32_MATH_BITS} bits *inside*
    the tensor core; tensors are stored as 32-bit FP32, so $b$ = 4 B and the AI is FP32's. The
    peak is TF32's, which is why a "FP32" matmul with TF32 allowed can run several times above
    the FP32 (CUDA-core) peak.
    In PyTorch set `torch.backends.cuda.matmul.allow_tf32` (or
    `torch.set_float32_matmul_precision`) explicitly and say which roof you compare against.
    """)
    return


@app.cell
def _():
    mo.md("""
    ## Part 6 · Measure this machine (optional, needs torch)

    The measurement runs only when you press the button (never on open or export). It uses
    `labs.core.measure`: explicit precision modes (fp32 with TF32 **off**, tf32 on), random
    inputs, warm-up for a time budget, CUDA events on a GPU (a monotonic clock on a CPU, with
    the thread count recorded), the **median** over repetitions, and cache-cold GEMV weights:
    the repetitions rotate through copies of the weight matrix that together fill twice the
    last-level cache, so each repetition reads its weights from memory, as in a real decode
    step (and not from the L2 cache, Part 5's second trap).
    """)
    return


@app.cell
def _():
    live_matrix = mo.ui.dropdown(
        precision_study.decode_gemv_shapes("llama-3-8b"), value="Q projection 4096×4096",
        label="Decode GEMV to time (Llama-3-8B matrix)")
    live_budget = mo.ui.slider(steps=[5, 10, 20, 30, 60, 120], value=30, show_value=True,
                               label="Time budget for the whole measurement (s)")
    # read at the press, so a settings step re-runs no measurement cell
    live_settings = live.read_at_press(matrix=live_matrix, budget=live_budget)
    mo.vstack([live_matrix, live_budget])
    return (live_settings,)


@app.cell
def _():
    # Shown by the measurement's gate (the cell below): pressed only once it is open.
    live_run = live.run_button("Measure this machine")
    return (live_run,)


@app.cell
def _(
    live_run,
    nvfp4_prediction,
    rho_ratio_prediction,
    weight_only_prediction,
):
    _wait = INSTRUMENTS.gate("measure", rho_ratio_prediction, weight_only_prediction,
                             nvfp4_prediction)
    mo.stop(_wait is not None, _wait)
    measure_open = True  # the measurement's results run only while it is open
    live_run
    return (measure_open,)


@app.cell
def _():
    # What Part 6 measures. None = labs.core.measure's defaults (bandwidth arrays sized past the
    # caches, square GEMMs of 4096 and 8192 on a GPU); tests shrink them to run in seconds.
    LIVE_PEAK_SIZES = None
    LIVE_PEAK_PRECISIONS = None
    LIVE_STREAM_MB = None
    return LIVE_PEAK_PRECISIONS, LIVE_PEAK_SIZES, LIVE_STREAM_MB


@app.cell
def _(
    LIVE_PEAK_PRECISIONS,
    LIVE_PEAK_SIZES,
    LIVE_STREAM_MB,
    live_run,
    live_settings,
):
    live_results = None  # always defined, so Part 3's table does not wait for a measurement
    if live_run.value:
        _info = measure.detect()  # imports torch: only after the button is pressed
        _settings = live_settings()
        live_results = {"info": _info, "device": _info.name, "registry_key": _info.registry_key,
                        "shape": tuple(_settings.matrix),
                        "error": None if _info.available else _info.message}
        _total = len(LIVE_PEAK_PRECISIONS or measure.GEMM_PRECISIONS) + 1 + 3  # bandwidth, GEMVs
        _budget = float(_settings.budget)

        def _tick(done, total, label):  # measure reports once per finished step
            _bar.update(increment=1, subtitle=label[:120])

        if _info.available:
            with mo.status.progress_bar(total=_total, title="Measuring this machine",
                                        remove_on_exit=True) as _bar:
                try:
                    _emp = measure.empirical_roofline(
                        _info, precisions=LIVE_PEAK_PRECISIONS, sizes=LIVE_PEAK_SIZES,
                        stream_mb=LIVE_STREAM_MB, budget_s=0.6 * _budget, progress=_tick)
                    _ref = _info.spec() or _emp.as_device()
                    # the baseline is what weight-only formats dequantise to here: fp16 on a
                    # GPU, bf16 or fp32 on a CPU (whose fp16 matmul torch emulates)
                    _gemv = measure.sweep_gemv(
                        {"decode": _settings.matrix},
                        (precision_study.dequant_target(_ref), "fp8", "int8"),
                        device=_info,
                        budget_s=0.4 * _budget, reference=_ref, progress=_tick)
                    live_results.update(emp=_emp, reference=_ref, gemv=_gemv, measured_s={
                        r["precision"]: r["measured_us"] * 1e-6 for r in _gemv
                        if r["measured_us"]})
                except (measure.MeasureError, ValueError, KeyError) as _err:
                    live_results["error"] = style.error_message(_err)
    return (live_results,)


@app.cell
def _(live_results, measure_open):
    mo.stop(not measure_open)
    if live_results is None:
        _out = mo.callout(mo.md(live.IDLE_MESSAGE), kind="neutral")
    elif not live_results["info"].available:
        _out = live.device_card(live_results["info"])
    elif live_results["error"]:
        _out = style.error_callout(f"No measurement: {live_results['error']}")
    else:
        _out = mo.vstack([live.device_card(live_results["info"]),
                          mo.md(f"Predictions below use **{live_results['reference'].name}**.")])
    _out
    return


@app.cell
def _(live_results, measure_open):
    mo.stop(not measure_open or not live_results or bool(live_results["error"]))
    live_peak_rows = live_results["emp"].rows()
    mo.ui.table(
        precision_rho.live_peak_rows(live_peak_rows),
        selection=None, pagination=False, show_column_summaries=False,
        label="Achievable peak per precision and memory bandwidth on this machine")
    return (live_peak_rows,)


@app.cell
def _(live_results, measure_open):
    mo.stop(not measure_open or not live_results or bool(live_results["error"]))
    _n, _k = live_results["shape"]
    live_quant = precision_study.decode_quant_table(_n, _k, live_results["reference"])
    live_decode = precision_study.merge_measured(live_quant, live_results["measured_s"])
    _status = {r["precision"]: r["status"] for r in live_results["gemv"]}
    for _row in live_decode:
        _row["status"] = _status.get(_row["storage"], "not timed: torch has no kernel for it")
    return (live_decode,)


@app.cell
def _(live_decode, live_results):
    _table = mo.ui.table(
        precision_rho.live_decode_rows(live_decode),
        selection=None, pagination=False, show_column_summaries=False,
        label=f"Decode GEMV {live_results['shape'][0]}×{live_results['shape'][1]} on "
              f"{live_results['device']}: measured next to predicted")
    _fast = [r["storage"] for r in live_decode if r["below_bound"]]
    mo.vstack([_table] + ([mo.callout(mo.md(precision_rho.faster_than_bound_text(_fast)),
                                      kind="warn")] if _fast else []))
    return


@app.cell
def _(live_results, measure_open):
    mo.stop(not measure_open or not live_results or bool(live_results["error"]))
    _dev = live_results["emp"].as_device()
    _timed = [r for r in live_results["gemv"] if r["measured_us"]]
    _costs = [measure.gemv_cost(r["n"], r["k"], r["precision"]) for r in _timed]
    # roofs of the timed GEMVs' precisions first; peaks within 1.5x share a roof (labels)
    _roofs, _same = precision_study.distinct_roofs(
        _dev, [r["precision"] for r in _timed if _dev.has(r["precision"])] + list(_dev.precisions),
        within_factor=1.5)
    live_figure = figures.roofline_figure(
        [(_dev, p) for p in _roofs],
        [figures.Point(f"GEMV {r['precision']}", c.ai, c.flops / (r["measured_us"] * 1e-6) / 1e12,
                       kind="measured") for r, c in zip(_timed, _costs)],
        title="Measured roofline of this machine (achievable peaks, STREAM bandwidth)")
    _note = ", ".join(f"{p} (within 1.5× of {q})" for p, q in _same.items())
    # a point above its own roof beat its bound: say so rather than let it read as the roof's
    _above = [f"GEMV {r['precision']}" for r, c in zip(_timed, _costs)
              if _dev.has(r["precision"]) and c.flops / (r["measured_us"] * 1e-6) / 1e12
              > float(roofline.attainable_tflops(c.ai, _dev, r["precision"]))]
    _notes = ([f"Roofs not drawn, peaks close to a drawn one: {_note}."] if _note else []) + (
        [f"Above its own roof: {', '.join(_above)}: faster than the bound of its precision "
         "(see the table above), so that roof understates it here."] if _above else [])
    style.figure_with_note(live_figure, f"_{' '.join(_notes)}_" if _notes else None)
    return


@app.cell
def _(lab, live_decode, live_peak_rows, live_results):
    _info = live_results["info"]
    lab.record("result", "lab03.live_peaks", measure.ledger_payload(_info, live_peak_rows))
    lab.record("result", "lab03.live_gemv", measure.ledger_payload(_info, live_decode))
    live.csv_download([{"table": "peaks", **r} for r in live_peak_rows]
                      + [{"table": "decode_gemv", **r} for r in live_decode],
                      filename="lab03_measurements.csv")
    return


@app.cell
def _(
    naive_prediction,
    nvfp4_prediction,
    rho_ratio_prediction,
    weight_only_prediction,
):
    _gate = style.takeaways_gate((rho_ratio_prediction, weight_only_prediction,
                                  nvfp4_prediction, naive_prediction))
    mo.stop(_gate is not None, _gate)
    _c = precision_study.rho_change_parts("gemm", GEMM_4096, SCENARIO_DEVICE, "fp32", "fp16")
    _q = {q.storage: q for q in precision_study.decode_quant_table(
        GEMV_4096["n"], GEMV_4096["k"], SCENARIO_DEVICE)}
    style.takeaways([
        "ρ = AI / ridge, and the ridge belongs to a precision: lowering precision raises AI "
        "by the byte ratio but moves the ridge by the peak ratio.",
        f"FP32 → FP16 tensor cores on an H100: AI ×{units.format_value(_c.ai_ratio)}, ridge "
        f"×{units.format_value(_c.ridge_ratio)}, so ρ changes "
        f"×{units.format_value(_c.rho_ratio)}. Lower precision often makes a workload more "
        "memory-bound.",
        "Storage and compute are separate choices: weight-only INT4 with FP16 math moves "
        "fewer bytes at the same peak, so ρ rises.",
        "Decode GEMVs are memory-bound at every precision: the speedup of the roofline bounds "
        "for a weight format is its byte ratio, the ideal (NVFP4, "
        f"{precision.bits('nvfp4'):g} bits with its block scales: "
        f"{units.format_value(_q['nvfp4'].byte_ratio)}× fewer bytes than FP16, not 4×). Real "
        "kernels gain less: a weight-only kernel also dequantises every weight, which the "
        "roofline does not charge.",
        "Measure traffic, not footprint: allocator peak ÷ time is not bandwidth. TF32 is a "
        "compute mode; its tensors are 32-bit in memory.",
    ])
    return


if __name__ == "__main__":
    app.run()
