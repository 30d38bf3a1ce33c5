import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", css_file="labs.css")

with app.setup:
    import marimo as mo

    from labs.core import figures, hardware, hierarchy, quiz, reveal, style
    from labs.core import units
    from labs.core import deferred
    from labs.core import formulas
    from labs.core import fusion
    from labs.core import roofline
    from labs.core.course.lessons import kernel_fusion

    np = deferred.numpy  # numpy is loaded on first use, past a prediction gate
    LAB_ID = "lab04"

    # Wiring constants: the questions' cases (from core, where the graded bands read them) and
    # the widget steps. The pickers' opening values: the instructor copy's reveal answers are
    # computed for these, so prediction cells never depend on later picks (LABS_SPEC §4.2b).
    OPENING = {"device": "h100-sxm"}
    LARGE_N = fusion.QUESTION_CHAIN_ELEMENTS  # "a large tensor": 100 M elements, 200 MB at fp16
    TINY_N = fusion.QUESTION_TINY_ELEMENTS  # one token's hidden state of a small model
    SIZE_STEPS = quiz.log_steps(1e2, 1e9)
    STORAGE_PRECISIONS = ("fp16", "bf16", "fp32")
    SEQ_STEPS = [2**k for k in range(9, 19)]  # 512 ... 262,144 tokens
    TILE_STEPS = [8, 16, 32, 64, 128, 256, 512]
    QUESTION_HEADS, QUESTION_HEAD_DIM = fusion.QUESTION_HEADS, fusion.QUESTION_HEAD_DIM
    NO_OP = "— (empty)"
    OP_OPTIONS = {NO_OP: ""} | {e.label: k for k, e in formulas.ELEMENTWISE.items()}
    TINY_OPTIONS = {
        "No effect: it is memory-bound anyway": "none",
        "Helps: it cuts kernel launches (overhead-bound)": "launches",
        "Helps: it cuts HBM bytes (memory-bound)": "bytes",
        "Hurts: one big fused kernel is slower": "hurts",
    }
    TILE_OPTIONS = {f"{b} × {b}": b for b in (16, 32, 64, 128, 256, 512)}
    # What each prediction's answer follows from, and what each instrument shows: an
    # instrument opens once every prediction whose quantities it shows is locked (LABS_SPEC §3).
    # Part 1's explorer shows a chain's bytes, time, speedup and regime at any size, so it
    # answers Predictions 1 and 2 both: they are asked together before it.
    INSTRUMENTS = quiz.Instruments(
        answers={
            "lab04.fusion_speedup": ["ratio:fusion", "bytes:chain", "time:chain",
                                     "regime:chain"],
            "lab04.tiny_tensor": ["regime:chain", "ratio:fusion", "time:chain",
                                  "count:overhead_crossover"],
            "lab04.oom_seq_len": ["count:seq_len", "bytes:attention"],
            "lab04.largest_tile": ["choice:tile", "bytes:tile"],
        },
        instruments={
            # the device's own figures: inputs of every question, the answer of none
            "device": ["bandwidth:device", "bytes:device"],
            # Part 1's explorer; Prediction 1's reflection and peek (the bytes per element and
            # their ratio) go with it
            "fusion_explorer": ["bytes:chain", "intensity:chain", "time:chain",
                                "ratio:fusion", "regime:chain", "throughput:chain",
                                "bandwidth:device"],
            "speedup_check": ["ratio:fusion"],
            # Part 2's curves and metrics; Prediction 2's reflection and peek (the crossover
            # worked on the device's bandwidth)
            "overhead": ["time:chain", "ratio:fusion", "regime:chain",
                         "count:overhead_crossover", "bandwidth:device"],
            "tiny_check": ["regime:chain", "time:launch"],
            # Part 3's traffic and memory at any shape; Prediction 3's reflection and peek
            "attention": ["bytes:attention", "intensity:attention", "time:attention",
                          "count:seq_len", "share:attention"],
            "oom_check": ["count:seq_len"],
            # Part 4's tile check and the flash kernel on the roofline of each level (on chip,
            # L2, HBM); Prediction 4's reflection and peek
            "tiles": ["choice:tile", "bytes:tile", "bytes:flash", "intensity:flash",
                      "intensity:attention", "throughput:flash", "bandwidth:onchip",
                      "bandwidth:l2", "bandwidth:device", "regime:flash", "ratio:bandwidths"],
            "tile_check": ["choice:tile"],
        })


@app.cell
def _():
    style.lab_header(
        "Lab 4 · Fusion and Overhead",
        "Three regimes (compute, memory, overhead): what fusing kernels buys, and where it stops.",
        goals=[
            "Count the HBM bytes an elementwise chain moves per fusion grouping, and predict the "
            "speedup of fusing it.",
            "Find what sets a chain's time at every tensor size, from one token's hidden state "
            "to a full activation, and what fusing it saves at each.",
            "See why unfused attention's score matrix (∝ S²) costs traffic and memory, and what "
            "flash attention keeps on chip instead.",
            "Use a two-level (HBM + on-chip) roofline to explain why tiles help, and why on-chip "
            "capacity bounds them.",
        ],
        minutes=40,
        reading=[
            ("H. He, Making Deep Learning Go Brrrr From First Principles (2022)",
             "https://horace.io/brrr_intro.html"),
            ("T. Dao et al., FlashAttention (2022)", "https://arxiv.org/abs/2205.14135"),
            ("C. Yang et al., Hierarchical Roofline Analysis for GPUs (2020)",
             "https://arxiv.org/abs/2009.02449"),
            ("S. Williams et al., Roofline (CACM 2009)",
             "https://doi.org/10.1145/1498765.1498785"),
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
    mo.md(f"""
    ## Choose a device
    Every number below is for this device. Part 4 sizes flash-attention tiles from on-chip
    figures (shared memory per block, register file), which the registry has for the
    {fusion.onchip_device_names()}. Any other device works for Parts 1-3; Part 4 says so instead
    of drawing.
    """)
    return


@app.cell
def _():
    device_picker = style.dropdown_on(hardware.picker_options(), OPENING["device"],
                                      label="Device")
    device_picker
    return (device_picker,)


@app.cell
def _():
    precision_picker = mo.ui.dropdown(list(STORAGE_PRECISIONS), value="fp16",
                                      label="Storage precision of the tensors")
    precision_picker
    return (precision_picker,)


@app.cell
def _(device_picker):
    device = hardware.get(device_picker.value)
    return (device,)


@app.cell
def _(device):
    _wait = INSTRUMENTS.gate("device")  # the device's own figures: open from the start
    mo.stop(_wait is not None, _wait)
    try:
        _oc = fusion.onchip(device)
        _chip = (f"{_oc.sms} SMs", f"{_oc.smem_per_block_kb:.0f} KiB shared memory per block; "
                 f"a separate {_oc.registers_kb_per_sm:.0f} KiB register file per SM")
    except KeyError:
        _chip = ("not in the registry", "Part 4 needs them")
    style.metric_cards([
        ("HBM / DRAM bandwidth", f"{device.bandwidth_gbs:,.0f} GB/s", device.memory_type),
        ("Device memory", device.memory_text, "what a score matrix must fit in"),
        ("Compute precisions", ", ".join(device.precisions), "dense peaks in the registry"),
        ("On-chip", *_chip),
    ])
    return


@app.function
def student_error(exc):
    """A core error as the student reads it: the cause, then the way out. A KeyError here
    is a rate the device lacks for the storage precision picked at the top."""
    if isinstance(exc, KeyError):
        return (style.error_message(exc) + "\n\nSet the storage precision of the tensors "
                "(top of the lab) to one of those, or pick another device.")
    return style.error_message(exc)


@app.function
def lab_references(device):
    """Reference answers from labs.core for ``device``: the questions use 2-byte tensors
    (fp16, or bf16 on devices without an fp16 rate, e.g. TPUs); None where the device
    lacks what a question needs."""
    precision = "fp16" if device.has("fp16") else "bf16"

    def _answer(compute):
        try:
            return compute()
        except (KeyError, ValueError):
            return None

    return precision, {
        "fusion_speedup": _answer(lambda: fusion.fusion_speedup(
            LARGE_N, device, None, [list(range(len(fusion.DEFAULT_CHAIN)))],
            precision=precision)),
        "tiny_tensor": _answer(lambda: fusion.fusion_benefit(TINY_N, device, precision=precision)),
        "oom_seq_len": _answer(lambda: fusion.unfused_max_seq_len(
            device, 1, QUESTION_HEADS, QUESTION_HEAD_DIM, "fp16")),
        "largest_tile": _answer(lambda: fusion.largest_square_tile(QUESTION_HEAD_DIM, device)),
    }


@app.cell
def _(device):
    # What the instruments show for the chosen device (the prediction-vs-reality comparisons).
    reference_precision, references = lab_references(device)
    return reference_precision, references


@app.cell
def _():
    # The instructor copy's filled-in answers: for the device the lab opens with.
    reveal_precision, reveal_references = lab_references(hardware.get(OPENING["device"]))
    return reveal_precision, reveal_references


@app.cell
def _():
    mo.vstack([
        mo.md("## Part 1 · Fusing an elementwise chain\n\n"
              "Two predictions about one chain of kernels, at two tensor sizes, open this "
              "part. The explorer below them answers both, so it opens once both are locked."),
        style.scenario_card(
            "Mei Tanaka", "performance engineer, training team",
            "The profiler shows our block epilogue as four kernels back to back: LayerNorm → "
            "GELU → dropout → residual add, on a 100 M-element activation. None of them does "
            "real math, and together they take longer than I expected. A compiler can fuse all "
            "four into one kernel. Before we spend a sprint on it: how much faster would the "
            "fused kernel be?"),
    ])
    return


@app.cell
def _(lab):
    get_speedup, set_speedup = quiz.lock_state(lab, "lab04.fusion_speedup")
    return get_speedup, set_speedup


@app.cell
def _(get_speedup, lab, set_speedup):
    speedup_form = quiz.numeric_form(
        lab, "lab04.fusion_speedup",
        question="**Prediction 1.** LayerNorm → GELU → dropout → residual add runs as 4 "
                 "kernels on a 100 M-element fp16 tensor (bf16 on devices without an fp16 "
                 "rate) on your device. Dropout also writes a 1-byte mask per element: the "
                 "one tensor kept for the backward pass, which recomputes everything else. "
                 "The residual add also reads the skip (residual) tensor, of the same size: "
                 "a tensor of its own, not the LayerNorm's input. By the roofline (each kernel "
                 "at its roofline time, 5 µs launch overhead), what is the ideal speedup of "
                 "fusing all four into ONE kernel? Give it to two significant figures (a "
                 "fraction such as 5/3 is read too).",
        units="×", lo=0.1, hi=100, locked=get_speedup(), on_lock=set_speedup)
    quiz.prediction_panel(speedup_form, get_speedup())
    return


@app.cell
def _(get_speedup, lab, reveal_precision, reveal_references):
    _p = reveal_precision
    _before, _after = (fusion.chain_timing(LARGE_N, OPENING["device"], g, precision=_p)
                       for g in (None, [list(range(len(fusion.DEFAULT_CHAIN)))]))
    speedup_prediction = get_speedup() or (reveal.reference(
        lab, "lab04.fusion_speedup", reveal_references["fusion_speedup"], "×",
        explanation=kernel_fusion.fusion_speedup_explanation(
            _before, _after, LARGE_N, _p, reveal_references["fusion_speedup"]))
        if reveal_references["fusion_speedup"] is not None else None)
    reveal.card(speedup_prediction)
    return (speedup_prediction,)


@app.cell
def _():
    mo.vstack([
        mo.md("### The same chain on a tiny tensor"),
        style.scenario_card(
            "Mei Tanaka", "performance engineer, inference team",
            "Same epilogue, different job: at decode, batch 1, a small model runs it on one "
            "token's hidden state, about 1,000 elements. The kernels look instant in the "
            "profiler. Would fusing the four kernels help here too?"),
    ])
    return


@app.cell
def _(lab):
    get_tiny, set_tiny = quiz.lock_state(lab, "lab04.tiny_tensor")
    return get_tiny, set_tiny


@app.cell
def _(get_tiny, lab, set_tiny):
    tiny_form = quiz.choice_form(
        lab, "lab04.tiny_tensor",
        question="**Prediction 2.** "
                 "The same 4-op chain on a 1,000-element fp16 tensor, with a launch overhead of "
                 "5 µs per kernel: does fusing it into one kernel help, and why?",
        options=TINY_OPTIONS, locked=get_tiny(), on_lock=set_tiny)
    quiz.prediction_panel(tiny_form, get_tiny())
    return


@app.cell
def _(get_tiny, lab, reveal_precision, reveal_references):
    _label = next((k for k, v in TINY_OPTIONS.items() if v == reveal_references["tiny_tensor"]),
                  None)
    _p = reveal_precision
    _before, _after = (fusion.chain_timing(TINY_N, OPENING["device"], g, precision=_p)
                       for g in (None, [list(range(len(fusion.DEFAULT_CHAIN)))]))
    tiny_prediction = get_tiny() or (reveal.reference(
        lab, "lab04.tiny_tensor", reveal_references["tiny_tensor"], label=_label,
        explanation=kernel_fusion.tiny_tensor_explanation(_before, _after, TINY_N, _p))
        if _label is not None else None)
    reveal.card(tiny_prediction)
    return (tiny_prediction,)


@app.cell
def _():
    _defaults = [formulas.ELEMENTWISE[k].label for k in fusion.DEFAULT_CHAIN]
    _chain_label = "Chain, in order (pick — to leave a slot empty)"
    chain_slots = mo.ui.array(
        [mo.ui.dropdown(OP_OPTIONS, value=(_defaults + [NO_OP] * 6)[i]) for i in range(6)],
        label=_chain_label)
    kernels_slider = mo.ui.slider(1, 6, value=4, show_value=True,
                                  label="Kernels (ops split into contiguous groups)")
    size_slider = mo.ui.slider(steps=SIZE_STEPS, value=100_000_000, show_value=True,
                               label="Tensor size (elements, log steps)")
    # A text box: a value out of range is refused with a message, never clamped in silence.
    overhead_us = style.NumberBox(roofline.DEFAULT_LAUNCH_OVERHEAD_US, lo=0.5, hi=100, units="µs",
                                  label="Launch overhead per kernel (µs)")
    # Laid out here, where the widgets are made: the panel that shows these names none of
    # them but the overhead box, so a step re-runs only the cells that read a value.
    # .hstack() shows the slots without the array's label: the label goes above them
    chain_controls = mo.vstack([mo.md(_chain_label), chain_slots.hstack(),
                                mo.hstack([kernels_slider, overhead_us], justify="start")])
    size_control = mo.vstack([size_slider])
    return (
        chain_controls,
        chain_slots,
        kernels_slider,
        overhead_us,
        size_control,
        size_slider,
    )


@app.cell
def _(chain_slots):
    chain_ops = tuple(op for op in chain_slots.value if op)
    return (chain_ops,)


@app.cell
def _(
    chain_controls,
    overhead_us,
    size_control,
    speedup_prediction,
    tiny_prediction,
):
    # The explorer's controls, shown with it (the notice is the instrument's, in the cell below).
    mo.stop(INSTRUMENTS.gate("fusion_explorer", speedup_prediction, tiny_prediction) is not None)
    mo.vstack([chain_controls, style.input_messages(overhead_us), size_control])
    return


@app.cell
def _(
    chain_ops,
    device,
    kernels_slider,
    overhead_us,
    precision_picker,
    size_slider,
    speedup_prediction,
    tiny_prediction,
):
    _wait = INSTRUMENTS.gate("fusion_explorer", speedup_prediction, tiny_prediction)
    mo.stop(_wait is not None, _wait)
    # The chain under the chosen grouping and, for comparison, one kernel per op.
    try:
        _n = len(chain_ops)
        if not _n or kernels_slider.value > _n:  # say it in the chain's words, not core's
            raise ValueError(
                "The chain is empty: pick at least one op in the slots above (— leaves a "
                "slot empty)." if not _n else
                f"The chain has {_n} op{'s' if _n > 1 else ''}, so it runs as at most {_n} "
                f"kernel{'s' if _n > 1 else ''}, not {kernels_slider.value}: move Kernels "
                f"down to {_n} or fill more slots of the chain.")
        _kw = dict(ops=chain_ops, precision=precision_picker.value,
                   launch_overhead_us=overhead_us.value)
        # unfused first: its message names an empty chain or an unknown op
        chain_unfused = fusion.chain_timing(size_slider.value, device, None, **_kw)
        chain_groups = formulas.contiguous_groups(len(chain_ops), kernels_slider.value)
        chain_now = fusion.chain_timing(size_slider.value, device, chain_groups, **_kw)
        chain_speedup = fusion.fusion_speedup(size_slider.value, device, None, chain_groups, **_kw)
        chain_error = None
    except (KeyError, ValueError) as _e:
        chain_groups = chain_now = chain_unfused = chain_speedup = None
        chain_error = student_error(_e)
    return chain_error, chain_groups, chain_now, chain_speedup, chain_unfused


@app.cell
def _(chain_error, chain_now, chain_speedup, chain_unfused, device):
    if chain_error is not None:
        fusion_metrics = style.error_callout(chain_error)
    else:
        fusion_metrics = style.metric_cards(
            kernel_fusion.chain_cards(chain_now, chain_unfused, chain_speedup, device))
    fusion_metrics
    return


@app.cell
def _(chain_now, device, precision_picker):
    mo.stop(chain_now is None)
    # Kernels at the same (AI, throughput) share one labelled point ("K1, K2").
    _spots = {}
    for _i, (_c, _t, _tf) in enumerate(zip(chain_now.chain.kernels_costs, chain_now.kernel_times,
                                           fusion.kernel_tflops(chain_now))):
        _spots.setdefault((round(_c.ai, 9), round(_tf, 9)), []).append((f"K{_i + 1}", _c, _t))
    # Two compute ceilings: elementwise kernels run on the vector units (their own, lower
    # ceiling); the tensor-core roof of the storage precision is drawn for comparison.
    _roofs = [(device, roofline.VECTOR)] + ([(device, precision_picker.value)]
                                     if device.has(precision_picker.value) else [])
    fusion_roofline = figures.roofline_figure(
        _roofs,
        [figures.Point(", ".join(k for k, _, _ in ks), ai, tflops=tf, hover={
            k: f"{c.name} · {units.format_seconds(t.lower)} · {t.regime}"
            for k, c, t in ks}) for (ai, tf), ks in _spots.items()],
        ai_range=(0.01, 1e4), height=400,
        title=f"Each kernel of the chain on the {device.name} roofline "
              "(launch-bound kernels sit below the roof)")
    fusion_roofline  # the figure alone: wrapping it in a stack would serialise it here (slow)
    return


@app.cell
def _(chain_now, device):
    # the note under the roofline: closed with it
    mo.stop(chain_now is None)
    mo.md(kernel_fusion.vector_ceiling_note(device))
    return


@app.cell
def _(chain_now):
    mo.stop(chain_now is None)
    _ops = [c.name for c in chain_now.chain.kernels_costs]
    fusion_bars = figures.bar_figure(
        [f"K{i + 1}" for i in range(len(_ops))],
        [t.lower * 1e6 for t in chain_now.kernel_times],
        colors=[t.regime for t in chain_now.kernel_times],
        annotations=[f"{units.format_value(t.lower * 1e6)} µs · {t.regime}"
                     for t in chain_now.kernel_times],
        title="Time per kernel: " + " | ".join(f"K{i + 1} = {o}" for i, o in enumerate(_ops)),
        yaxis_title="time per kernel, lower bound (µs)")
    fusion_bars
    return


@app.cell
def _(
    lab,
    reference_precision,
    references,
    speedup_prediction,
    tiny_prediction,
):
    _wait = INSTRUMENTS.gate("speedup_check", speedup_prediction, tiny_prediction)
    mo.stop(_wait is not None, _wait)
    if references["fusion_speedup"] is None:
        _out = mo.callout(mo.md("This device has neither an fp16 nor a bf16 rate, so the "
                                "question's chain cannot be timed on it: pick another device."),
                          kind="warn")
    else:
        _out = mo.vstack([
            mo.md(f"**Prediction vs reality** · the default 4-op chain, 100 M elements, "
                  f"{reference_precision}, 4 kernels → 1: the roofline's ideal speedup"),
            quiz.compare(speedup_prediction, references["fusion_speedup"], units="×",
                         fmt=".2f", lab=lab)])
    _out
    return


@app.cell
def _(lab, speedup_prediction, tiny_prediction):
    mo.stop(INSTRUMENTS.gate("fusion_explorer", speedup_prediction, tiny_prediction) is not None)
    speedup_explain = quiz.explain_form(
        lab, "lab04.fusion_speedup",
        observe_label="What did the instrument show? (bytes per element before and after, "
                      "the speedup)",
        explain_label="Why is the speedup the ratio of bytes, not the number of kernels (4×)?")
    speedup_explain
    return


@app.cell
def _(speedup_prediction, tiny_prediction):
    # the equations answer both predictions: the explorer's rule
    mo.stop(INSTRUMENTS.gate("fusion_explorer", speedup_prediction, tiny_prediction) is not None)
    # Bytes per element of the default chain at fp16, from core: their ratio is Prediction 1's
    # answer, so it is computed here, never typed.
    _k = [c.bytes for c in
          formulas.elementwise_chain(1, fusion.DEFAULT_CHAIN, None, "fp16").kernels_costs]
    _fused = formulas.elementwise_chain(1, fusion.DEFAULT_CHAIN,
                                        [list(range(len(fusion.DEFAULT_CHAIN)))],
                                        "fp16").total.bytes
    _frac = rf"\frac{{{sum(_k):g}\,n\ \text{{B}}}}{{{_fused:g}\,n\ \text{{B}}}}"
    _ratio = sum(_k) / _fused
    style.math_peek("fusing a memory-bound chain", rf"""
    Each kernel reads its inputs from HBM and writes its outputs back. For a tensor of $n$
    elements of $b$ bytes, the default chain moves per element (fp16, $b = 2$ B):

    | kernel | reads | writes | bytes / element |
    |---|---|---|---|
    | LayerNorm | $x$ | $y$ | $2b = {_k[0]:g}$ |
    | GELU | $y$ | $z$ | $2b = {_k[1]:g}$ |
    | dropout | $z$ | $d$ + 1-byte mask | $2b + 1 = {_k[2]:g}$ |
    | residual add | $d$, skip | out | $3b = {_k[3]:g}$ |
    | **all four, fused** | $x$, skip (not $x$) | out + mask | $3b + 1 = {_fused:g}$ |

    Each kernel's time is
    $t_k = \max\left(\frac{{F_k}}{{P}},\ \frac{{B_k}}{{\beta}},\ t_\text{{launch}}\right)$
    (FLOPs over the dense peak in FLOP/s, bytes over bandwidth in B/s, one launch in s). On a
    large tensor the byte term wins for every kernel (AI ≈ 1 FLOP/B ≪ ridge), so

    $$\text{{speedup}} = \frac{{\sum_k B_k/\beta}}{{B_\text{{fused}}/\beta}} = {_frac}
    \approx {_ratio:.2g}\times$$

    not 4×: fusion removes the *intermediate* round trips, but the fused kernel still reads its
    inputs and writes its outputs once. Intermediates stay in registers.
    """)
    return


@app.cell
def _():
    mo.md("""
    ## Part 2 · The overhead regime
    Prediction 2's chain ran on one token's hidden state. Below, the same chain (Part 1's
    slots, precision and launch overhead) at every tensor size, unfused and fused.
    """)
    return


@app.cell
def _(
    chain_ops,
    device,
    overhead_us,
    precision_picker,
    speedup_prediction,
    tiny_prediction,
):
    _wait = INSTRUMENTS.gate("overhead", speedup_prediction, tiny_prediction)
    mo.stop(_wait is not None, _wait)
    # Overhead regime of the chain of Part 1, unfused and fused. Part 1's grouping is added by
    # the figure alone, so a Kernels step does not re-run the metrics.
    try:
        _kw = dict(ops=chain_ops, precision=precision_picker.value,
                   launch_overhead_us=overhead_us.value)
        _n = len(chain_ops)
        overhead_groupings = {f"unfused ({_n} kernels)": None,
                              "fused (1 kernel)": [list(range(_n))]}
        overhead_crossovers = {k: fusion.chain_overhead_crossover(device, g, **_kw)
                               for k, g in overhead_groupings.items()}
        overhead_kernel_crossovers = [x for g in overhead_groupings.values()
                                      for x in fusion.kernel_crossovers(device, g, **_kw)]
        overhead_error = None
    except (KeyError, ValueError) as _e:
        overhead_groupings = overhead_crossovers = overhead_kernel_crossovers = None
        overhead_error = student_error(_e)
    return (
        overhead_crossovers,
        overhead_error,
        overhead_groupings,
        overhead_kernel_crossovers,
    )


@app.cell
def _(
    chain_ops,
    device,
    overhead_crossovers,
    overhead_error,
    overhead_us,
    precision_picker,
):
    if overhead_error is not None:
        overhead_metrics = style.error_callout(overhead_error)
    else:
        _kw = dict(ops=chain_ops, precision=precision_picker.value,
                   launch_overhead_us=overhead_us.value)
        _un = fusion.chain_timing(TINY_N, device, None, **_kw)
        _fu = fusion.chain_timing(TINY_N, device, [list(range(len(chain_ops)))], **_kw)
        _speedup = fusion.fusion_speedup(TINY_N, device, None, [list(range(len(chain_ops)))],
                                         **_kw)
        overhead_metrics = style.metric_cards(kernel_fusion.overhead_cards(
            _un, _fu, _speedup, overhead_crossovers["fused (1 kernel)"], len(chain_ops)))
    mo.vstack([mo.hstack([overhead_us, mo.md(
        f"{roofline.DEFAULT_LAUNCH_OVERHEAD_US:g} µs per kernel is a model's choice (a bare "
        "back-to-back CUDA launch measures less, an op in eager PyTorch more): type another "
        "value to see what it changes.")], justify="start"),
        style.input_messages(overhead_us), overhead_metrics])
    return


@app.cell
def _(
    chain_groups,
    chain_ops,
    device,
    overhead_crossovers,
    overhead_error,
    overhead_groupings,
    overhead_kernel_crossovers,
    overhead_us,
    precision_picker,
    size_slider,
):
    mo.stop(overhead_error is not None)
    _kw = dict(ops=chain_ops, precision=precision_picker.value,
               launch_overhead_us=overhead_us.value)
    _groups, _crossovers = dict(overhead_groupings), dict(overhead_crossovers)
    _kernel_crossovers = list(overhead_kernel_crossovers)
    if chain_groups is not None and 1 < len(chain_groups) < len(chain_ops):  # Part 1's grouping
        _yours = f"your grouping ({len(chain_groups)} kernels)"
        _groups[_yours] = chain_groups
        _crossovers[_yours] = fusion.chain_overhead_crossover(device, chain_groups, **_kw)
        _kernel_crossovers += fusion.kernel_crossovers(device, chain_groups, **_kw)
    _sizes = np.geomspace(1e2, 1e9, 71)
    _colors = [style.COLORS["memory"], style.COLORS["ok"], style.COLORS["compute"]]
    _dashes = ["solid", "dash", "dot"]
    _series, _markers = [], []
    for (_name, _g), _c, _d in zip(_groups.items(), _colors, _dashes):
        _series.append((_name, _sizes, fusion.chain_time_curve(_sizes, device, _g, **_kw) * 1e6,
                        _c, _d))
    for _n, _tag in ((TINY_N, "1,000"), (size_slider.value, "your size")):
        _t = fusion.chain_time_curve([_n], device, None, **_kw)[0] * 1e6
        _markers.append((f"{_tag}, unfused", _n, _t, _colors[0]))
    _lo, _hi = min(_kernel_crossovers), max(_kernel_crossovers)
    _big = fusion.chain_timing(10**9, device, None, **_kw).regime
    overhead_figure = figures.loglog_lines_figure(
        _series, markers=_markers,
        title=f"Chain time vs tensor size on the {device.name} "
              f"(launch overhead {overhead_us.value:g} µs per kernel)",
        x_title="Tensor size (elements)", y_title="Chain time, lower bound (µs)",
        vlines=[(x, f"{k.split(' (')[0]}: {units.format_value(x)}", c)
                for (k, x), c in zip(_crossovers.items(), _colors)],
        bands=[(1e2, _lo, "overhead-bound", style.COLORS["overhead"]),
               (_hi, 1e9, _big, style.COLORS["memory" if _big == "memory-bound" else "compute"])])
    overhead_figure
    return


@app.cell
def _(lab, references, speedup_prediction, tiny_prediction):
    _wait = INSTRUMENTS.gate("tiny_check", speedup_prediction, tiny_prediction)
    mo.stop(_wait is not None, _wait)
    _label = next((k for k, v in TINY_OPTIONS.items() if v == references["tiny_tensor"]),
                  "the device cannot run the chain at fp16/bf16")
    mo.vstack([mo.md("**Prediction vs reality** · the default 4-op chain, 1,000 elements, "
                     "5 µs per launch:"),
               quiz.compare(tiny_prediction, references["tiny_tensor"], actual_label=_label,
                            lab=lab)])
    return


@app.cell
def _(lab, speedup_prediction, tiny_prediction):
    mo.stop(INSTRUMENTS.gate("overhead", speedup_prediction, tiny_prediction) is not None)
    tiny_explain = quiz.explain_form(
        lab, "lab04.tiny_tensor",
        observe_label="What sets the time at 1,000 elements, and where is the crossover?",
        explain_label="Why does fusion help there even though bytes hardly matter?")
    tiny_explain
    return


@app.cell
def _(speedup_prediction, tiny_prediction):
    # the equations answer both predictions: the overhead instrument's rule
    mo.stop(INSTRUMENTS.gate("overhead", speedup_prediction, tiny_prediction) is not None)
    # The worked crossover on the opening device, from core (never typed).
    _hw, _ov = hardware.get(OPENING["device"]), roofline.DEFAULT_LAUNCH_OVERHEAD_US
    _fused = [list(range(len(fusion.DEFAULT_CHAIN)))]
    _b = formulas.elementwise_chain(1, fusion.DEFAULT_CHAIN, _fused, "fp16").total.bytes
    _x = fusion.chain_overhead_crossover(_hw, _fused, launch_overhead_us=_ov)
    style.math_peek("the overhead crossover", rf"""
    A launch costs $t_\text{{launch}}$ however little the kernel does (a stated, editable figure,
    here ${_ov:g}\ \mu s$: a bare back-to-back CUDA launch measures less, an op in eager PyTorch
    more). A memory-bound kernel moving $b_k$ bytes per element takes $n\,b_k/\beta$. It is
    **overhead-bound** while

    $$\frac{{n\,b_k}}{{\beta}} < t_\text{{launch}} \iff n < n^* =
    \frac{{t_\text{{launch}}\,\beta}}{{b_k}}$$

    (s · B/s ÷ B/element = elements). On an {_hw.name} ($\beta$ = {_hw.bandwidth_gbs:,.0f} GB/s)
    the fused kernel ($b$ = {_b:g} B/element at fp16) crosses at
    $n^* = {_ov:g}\ \mu s \times {_hw.bandwidth_gbs:,.0f}\ \text{{GB/s}} / {_b:g}\ \text{{B}}
    \approx {_x / 1e6:.1f}$ M elements.

    Below $n^*$ a chain of $k$ kernels takes $\approx k\,t_\text{{launch}}$, so fusing $k \to 1$
    gives $\approx k\times$: fusion helps by cutting **launches**, not bytes. (CUDA graphs and
    persistent kernels attack the same term.) Above $n^*$ it gives the byte ratio of Part 1.
    """)
    return


@app.cell
def _():
    mo.vstack([
        mo.md("## Part 3 · Attention: unfused vs fused"),
        style.scenario_card(
            "Omar Haddad", "ML engineer, long-context team",
            "Our reference attention is three kernels: S = QKᵀ, softmax, then P·V. It works at "
            "4k context. At long context it runs out of memory, one head group at a time is "
            "slow, and someone says 'use flash attention'. How long can the sequence get "
            "before the unfused version stops fitting at all?"),
    ])
    return


@app.cell
def _(lab):
    get_oom, set_oom = quiz.lock_state(lab, "lab04.oom_seq_len")
    return get_oom, set_oom


@app.cell
def _(get_oom, lab, set_oom):
    oom_form = quiz.numeric_form(
        lab, "lab04.oom_seq_len",
        question="**Prediction 3.** "
                 "Unfused attention, batch 1, 32 heads, head_dim 128, fp16, on your device. "
                 "Counting one fp16 score matrix (B×H×S×S, softmax in place) plus Q, K, V and "
                 "O, and nothing else: at most how long can the sequence S be and still fit in "
                 "device memory?",
        units="tokens", lo=128, hi=10_000_000, integer=True, locked=get_oom(), on_lock=set_oom)
    quiz.prediction_panel(oom_form, get_oom())
    return


@app.cell
def _(get_oom, lab, reveal_references):
    _s = reveal_references["oom_seq_len"]
    _terms = fusion.attention_memory_terms(1, QUESTION_HEADS, _s or 1, QUESTION_HEAD_DIM, "fp16",
                                       fused=False)
    _hw = hardware.get(OPENING["device"])
    # PyTorch's math path holds the scores and the probabilities at once: 2 S×S buffers
    _math_path = fusion.unfused_max_seq_len(_hw, 1, QUESTION_HEADS, QUESTION_HEAD_DIM, "fp16",
                                        score_copies=2)
    oom_prediction = get_oom() or (reveal.reference(
        lab, "lab04.oom_seq_len", _s, "tokens",
        explanation=kernel_fusion.oom_explanation(_s, _terms, _hw, _math_path))
        if _s is not None else None)
    reveal.card(oom_prediction)
    return (oom_prediction,)


@app.cell
def _():
    seq_slider = mo.ui.slider(steps=SEQ_STEPS, value=4096, show_value=True,
                              label="Sequence length S (tokens)")
    attn_batch = mo.ui.slider(steps=[1, 2, 4, 8, 16, 32], value=1, show_value=True,
                              label="Batch")
    attn_heads = mo.ui.dropdown({"8": 8, "16": 16, "32": 32, "64": 64}, value="32",
                                label="Heads")
    head_dim_picker = mo.ui.dropdown({"64": 64, "128": 128, "256": 256}, value="128",
                                     label="Head dim")
    # Laid out here, where the widgets are made: the panel that shows this names no widget,
    # so a step re-runs only the cells that read a value.
    attention_controls = mo.vstack([seq_slider, mo.hstack([attn_batch, attn_heads,
                                                           head_dim_picker], justify="start")])
    return (
        attention_controls,
        attn_batch,
        attn_heads,
        head_dim_picker,
        seq_slider,
    )


@app.cell
def _(attention_controls, oom_prediction):
    # the instrument's controls, shown with it (the notice is the instrument's, below)
    mo.stop(INSTRUMENTS.gate("attention", oom_prediction) is not None)
    attention_controls
    return


@app.cell
def _(
    attn_batch,
    attn_heads,
    device,
    head_dim_picker,
    oom_prediction,
    precision_picker,
    seq_slider,
):
    _wait = INSTRUMENTS.gate("attention", oom_prediction)
    mo.stop(_wait is not None, _wait)
    # Unfused and fused attention at the chosen shape (self-attention, MHA: KV heads = heads),
    # computed where its cards are shown: a Batch or Heads step re-runs one cell fewer.
    try:
        _args = (attn_batch.value, attn_heads.value, seq_slider.value, seq_slider.value,
                 head_dim_picker.value, precision_picker.value)
        attn_unfused = formulas.attention(*_args, fused=False)
        attn_fused = formulas.attention(*_args, fused=True)
        attn_times = {k: roofline.cost_time(c, device).lower
                      for k, c in (("unfused", attn_unfused), ("fused", attn_fused))}
        attn_error = None
    except (KeyError, ValueError) as _e:
        attn_unfused = attn_fused = attn_times = None
        attn_error = student_error(_e)
    if attn_error is not None:
        attention_metrics = style.error_callout(attn_error)
    else:
        attention_metrics = style.metric_cards(
            kernel_fusion.attention_cards(attn_unfused, attn_fused, attn_times))
    attention_metrics
    return (attn_error,)


@app.cell
def _(
    attn_batch,
    attn_error,
    attn_heads,
    device,
    head_dim_picker,
    precision_picker,
    seq_slider,
):
    mo.stop(attn_error is not None)
    _args = (attn_batch.value, attn_heads.value)
    _traffic = {f: [formulas.attention(*_args, s, s, head_dim_picker.value, precision_picker.value,
                                fused=f).bytes / 1e9 for s in SEQ_STEPS] for f in (False, True)}
    _now = seq_slider.value
    _i = SEQ_STEPS.index(_now)
    _max = fusion.unfused_max_seq_len(device, *_args, head_dim_picker.value, precision_picker.value)
    attention_figure = figures.loglog_lines_figure(
        [("unfused: Q, K, V, O + 4 passes over the S×S scores", SEQ_STEPS, _traffic[False],
          style.COLORS["danger"], "solid"),
         ("fused (flash): Q, K, V, O once", SEQ_STEPS, _traffic[True],
          style.COLORS["memory"], "dash")],
        markers=[(f"S = {_now:,}", _now, _traffic[False][_i], style.COLORS["danger"])],
        vlines=[(_max, f"unfused out of memory beyond S = {_max:,}", style.COLORS["danger"])],
        title=f"Attention HBM traffic vs sequence length ({device.name}: "
              f"{device.memory_text} of memory)",
        x_title="Sequence length S (tokens)", y_title="HBM traffic per call (GB)",
        x_ticks=(SEQ_STEPS, [f"{s // 1024}k" if s >= 1024 else str(s) for s in SEQ_STEPS]))
    attention_figure
    return


@app.cell
def _(
    attn_batch,
    attn_error,
    attn_heads,
    device,
    head_dim_picker,
    precision_picker,
    seq_slider,
):
    mo.stop(attn_error is not None)
    _args = (attn_batch.value, attn_heads.value, seq_slider.value, head_dim_picker.value,
             precision_picker.value)
    _cap = device.memory_bytes
    _max = fusion.unfused_max_seq_len(device, attn_batch.value, attn_heads.value,
                                  head_dim_picker.value, precision_picker.value)
    attention_memory = mo.vstack([
        mo.md(f"**Device memory for one attention call** (the model's weights not counted). "
              f"Unfused fits up to S = {_max:,} tokens here; move S past it to see the "
              f"out-of-memory state, and back to recover."),
        mo.md("*Unfused (the B×H×S×S score matrix is materialised):*"),
        style.memory_budget_bar(fusion.attention_memory_terms(*_args, fused=False), _cap),
        mo.md("*Fused (flash: scores live in on-chip tiles):*"),
        style.memory_budget_bar(fusion.attention_memory_terms(*_args, fused=True), _cap),
    ])
    attention_memory
    return


@app.cell
def _(lab, oom_prediction, references):
    _wait = INSTRUMENTS.gate("oom_check", oom_prediction)
    mo.stop(_wait is not None, _wait)
    mo.vstack([mo.md("**Prediction vs reality** · batch 1, 32 heads, head_dim 128, fp16:"),
               quiz.compare(oom_prediction, references["oom_seq_len"], units="tokens",
                            lab=lab)])
    return


@app.cell
def _(lab, oom_prediction):
    mo.stop(INSTRUMENTS.gate("attention", oom_prediction) is not None)
    oom_explain = quiz.explain_form(
        lab, "lab04.oom_seq_len",
        observe_label="How do the traffic and the memory of the unfused version grow with S?",
        explain_label="Why does the fused version avoid both?")
    oom_explain
    return


@app.cell
def _(oom_prediction, reveal_references):
    mo.stop(INSTRUMENTS.gate("attention", oom_prediction) is not None)  # the answer, worked
    # The question's case on the opening device: the bound on S is Prediction 3's answer, the
    # instructor copy's reference (never typed); b from core's fp16 score bytes.
    _hw, _h, _d = hardware.get(OPENING["device"]), QUESTION_HEADS, QUESTION_HEAD_DIM
    _b = fusion.unfused_score_bytes(1, 1, 1, 1, "fp16")
    _s = reveal_references["oom_seq_len"]
    _mant, _exp = f"{_hw.memory_bytes:.2e}".split("e")
    _cap = rf"{_mant}\times10^{{{int(_exp)}}}"
    _gib, _stex = _hw.memory_bytes / 2**30, f"{_s:,}".replace(",", "{,}")
    style.math_peek("attention's S² term", rf"""
    Per head, $S = QK^\top$ ($S_q \times S_{{kv}}$), $P = \text{{softmax}}(S)$, $O = PV$.
    FLOPs $= 4\,B\,H\,S_q\,S_{{kv}}\,d$ for both versions (two matmuls, 2 FLOP per multiply-add).

    **Unfused** (3 kernels) writes $S$, reads it, writes $P$, reads it: 4 passes of
    $B H S_q S_{{kv}}$ elements of $b$ bytes on top of $Q, K, V, O$ ($B H S d\,b$ each):

    $$\text{{bytes}}_\text{{unfused}} = 4 B H S d\,b + 4 B H S^2 b \qquad
    \text{{bytes}}_\text{{fused}} = 4 B H S d\,b$$

    The score term grows with $S^2$, so at long context it dominates both traffic and memory.
    The score matrix must also exist at once in device memory, $B H S^2 b$ bytes: with {_h} heads
    at fp16 that is ${_h * _b:g}\,S^2$ B, so on the {_hw.name}'s {_gib:g} GiB
    (${_gib:g} \cdot 2^{{30}} = {_cap}$ B)
    $${_h * _b:g} S^2 + 4 \cdot {_h} \cdot {_d} \cdot {_b:g}\,S \le {_cap} \Rightarrow S \le {_stex} .$$
    That is a bound: a second S×S buffer (PyTorch's math path holds the scores and the
    probabilities at once) or fp32 scores double the $S^2$ term, and since $S$ goes with the
    square root of memory, each moves the longest $S$ down by $\sqrt{{2}} \approx 1.41\times$.

    **Fused** (flash) attention computes $S$ tile by tile on chip with an online softmax and
    never writes it: traffic and memory are linear in $S$, FLOPs unchanged, so AI grows with $S$.
    """)
    return


@app.cell
def _():
    mo.vstack([
        mo.md("## Part 4 · The limit: what fits on chip"),
        style.scenario_card(
            "Lena Fischer", "kernel engineer",
            "Our flash kernel streams all of K and V through shared memory once per query "
            "tile. L2 serves most of those re-reads, but L2 has a bandwidth roof too: a bigger "
            "tile means fewer re-reads and a higher arithmetic intensity. But a tile lives on one "
            "SM: its Q, K and V in the shared memory one thread block may use, its fp32 score "
            "and output accumulators in the register file, and the compiler refuses a tile "
            "that overflows either. What is the largest square tile that fits, and what does "
            "it cost us?"),
    ])
    return


@app.cell
def _(lab):
    get_tile, set_tile = quiz.lock_state(lab, "lab04.largest_tile")
    return get_tile, set_tile


@app.cell
def _(get_tile, lab, set_tile):
    tile_form = quiz.choice_form(
        lab, "lab04.largest_tile",
        question="**Prediction 4.** "
                 "Flash attention at head_dim 128, fp16, on your device: the largest square "
                 "tile (query block = KV block) whose Q, K, V tiles (shared memory) and fp32 "
                 "score and output accumulators (registers) fit on one SM?",
        options=TILE_OPTIONS, locked=get_tile(), on_lock=set_tile)
    quiz.prediction_panel(tile_form, get_tile())
    return


@app.cell
def _(get_tile, lab, reveal_references):
    _b = reveal_references["largest_tile"]
    _label = next((k for k, v in TILE_OPTIONS.items() if v == _b), None)
    _fit, _big = (fusion.flash_tile(t, t, QUESTION_HEAD_DIM, OPENING["device"])
                  for t in (_b, 2 * _b))
    tile_prediction = get_tile() or (reveal.reference(
        lab, "lab04.largest_tile", _b, label=_label,
        explanation=kernel_fusion.largest_tile_explanation(_b, QUESTION_HEAD_DIM, _fit, _big))
        if _label is not None else None)
    reveal.card(tile_prediction)
    return (tile_prediction,)


@app.cell
def _():
    block_q_slider = mo.ui.slider(steps=TILE_STEPS, value=128, show_value=True,
                                  label="Query tile Bq (rows)")
    block_kv_slider = mo.ui.slider(steps=TILE_STEPS, value=128, show_value=True,
                                   label="KV tile Bkv (rows)")
    # Laid out here, where the sliders are made: the panel that shows this names neither, so
    # a step re-runs only the cells that read a value.
    tile_controls = mo.hstack([block_q_slider, block_kv_slider], justify="start")
    return block_kv_slider, block_q_slider, tile_controls


@app.cell
def _(
    block_kv_slider,
    block_q_slider,
    device,
    head_dim_picker,
    precision_picker,
    seq_slider,
    tile_prediction,
):
    _wait = INSTRUMENTS.gate("tiles", tile_prediction)
    mo.stop(_wait is not None, _wait)
    # The tile's on-chip working set, and one head of one sequence on the roofline of each
    # level (shared memory, L2, HBM), placed by hierarchy as Lab 5 places it: every level's
    # FLOPs and bytes grow with batch × heads, so its intensities and the attainable rate do
    # not, and a Batch or Heads step leaves the figure alone. None where the
    # registry lacks the levels (no L2 size).
    _s, _d, _p = seq_slider.value, head_dim_picker.value, precision_picker.value
    _bq, _bkv = block_q_slider.value, block_kv_slider.value
    flash_one_head = None
    try:
        tile_fit = fusion.flash_tile(_bq, _bkv, _d, device, _p)
        if tile_fit.fits and device.key in hierarchy.gpu_keys():
            _h = hierarchy.gpu_hierarchy(device, _p)
            flash_one_head = hierarchy.place(
                hierarchy.flash_kernel(1, 1, _s, _d, _bq, _bkv, _p), _h)
        tile_error = None
    except (KeyError, ValueError) as _e:
        tile_fit = None
        tile_error = style.error_message(_e)
    return flash_one_head, tile_error, tile_fit


@app.cell
def _(
    head_dim_picker,
    oom_prediction,
    seq_slider,
    tile_controls,
    tile_prediction,
):
    # the instrument's controls, shown with it (the notice is the instrument's, above)
    mo.stop(INSTRUMENTS.gate("tiles", tile_prediction) is not None)
    # Part 3's controls set the shape; while Prediction 3 is open they are closed, so say so
    _where = ("change them there" if INSTRUMENTS.is_open("attention",
                                                         quiz.locked_items(oom_prediction))
              else "Part 3's controls change them once Prediction 3 is locked")
    mo.vstack([tile_controls,
               mo.md(f"Shape from Part 3: S = {seq_slider.value:,}, head_dim "
                     f"{head_dim_picker.value} ({_where}).")])
    return


@app.cell
def _(
    attn_batch,
    attn_heads,
    block_kv_slider,
    block_q_slider,
    device,
    head_dim_picker,
    precision_picker,
    seq_slider,
    tile_error,
    tile_fit,
):
    # The tiled kernel at Part 3's whole shape: its traffic grows with batch × heads.
    flash_point = None if tile_error is not None else fusion.flash_roof_point(
        attn_batch.value, attn_heads.value, seq_slider.value, head_dim_picker.value,
        block_q_slider.value, block_kv_slider.value, device, precision_picker.value)
    if tile_error is not None:
        tile_status = style.error_callout(tile_error)
    elif not tile_fit.fits:
        tile_status = style.error_callout(
            tile_fit.explain() + "\n\nThe kernel cannot launch with this tile. Make Bq or Bkv "
            "smaller (or head_dim) to back out.")
    else:
        tile_status = mo.vstack([
            mo.callout(mo.md(f"✓ {tile_fit.explain()}"), kind="success"),
            style.metric_cards(kernel_fusion.flash_tile_cards(flash_point, device))])
    tile_status
    return


@app.cell
def _(device, flash_one_head, tile_fit):
    mo.stop(tile_fit is None or not tile_fit.fits)
    if flash_one_head is not None:
        hierarchy_figure = figures.per_level_roofline_figure(
            flash_one_head.hierarchy, [flash_one_head], ai_range=(1, 1e5), height=440,
            title=f"Flash attention on the roofline of each level of the {device.name}")
    else:
        hierarchy_figure = mo.callout(mo.md(
            f"The registry has no L2 size for the {device.name}, so the roofline of each level "
            "is not drawn; the cards above count every K and V re-read from HBM."),
            kind="neutral")
    hierarchy_figure
    return


@app.cell
def _(lab, references, tile_prediction):
    _wait = INSTRUMENTS.gate("tile_check", tile_prediction)
    mo.stop(_wait is not None, _wait)
    if references["largest_tile"] is None:
        _out = mo.callout(mo.md("This device has no on-chip figures in the registry, so the "
                                "question has no reference answer here: pick the "
                                f"{fusion.onchip_device_names('or')}."), kind="warn")
    else:
        _label = next(k for k, v in TILE_OPTIONS.items() if v == references["largest_tile"])
        _out = mo.vstack([mo.md("**Prediction vs reality** · head_dim 128, fp16:"),
                          quiz.compare(tile_prediction, references["largest_tile"],
                                       actual_label=_label, lab=lab)])
    _out
    return


@app.cell
def _(lab, tile_prediction):
    mo.stop(INSTRUMENTS.gate("tiles", tile_prediction) is not None)
    tile_explain = quiz.explain_form(
        lab, "lab04.largest_tile",
        observe_label="What happens to the AI on L2 and on HBM as Bq grows, which roof "
                      "binds, and where does the tile stop fitting?",
        explain_label="Why does on-chip capacity, not on-chip bandwidth, limit the kernel?")
    tile_explain
    return


@app.cell
def _(reveal_references, tile_prediction):
    mo.stop(INSTRUMENTS.gate("tiles", tile_prediction) is not None)  # the answer, worked
    # The question's tiles on the opening device: the largest one that fits is Prediction 4's
    # answer, the instructor copy's reference (never typed).
    _hw, _d = hardware.get(OPENING["device"]), QUESTION_HEAD_DIM
    _t = reveal_references["largest_tile"]
    # the question's tile at Part 3's opening shape, against the published measurement
    _s, _heads = 4096, fusion.QUESTION_HEADS
    _pt = fusion.flash_roof_point(1, _heads, _s, _d, _t, _t, _hw)
    _measured = fusion.FLASH_MEASURED[_hw.key][_s][0]
    _l2, _chip = fusion.l2_bandwidth_gbs(_hw), fusion.onchip(_hw).smem_bandwidth_gbs
    _kv_head = 2 * _s * _d * 2  # K and V of one head, fp16
    style.math_peek("tiles and the roofline of each level", rf"""
    **Working set of one thread block** (simplified: no double buffering), storage $b$ bytes,
    accumulators fp32, in two separate pools, each with its own limit:

    $$\underbrace{{(B_q d + 2 B_{{kv}} d)\,b}}_{{\text{{Q, K, V tiles}}}} \le
    \text{{shared memory per block}},\qquad
    \underbrace{{(B_q B_{{kv}} + B_q d)\cdot 4}}_{{\text{{S tile, O accumulator}}}} \le
    \text{{register file}}$$

    {kernel_fusion.tile_fit_text(_hw, _d, _t)} Room left in one pool does not help the other.

    **L2 and HBM traffic**: every one of the $\lceil S/B_q\rceil$ query tiles streams all of K
    and V through shared memory:
    $\text{{bytes}}_\text{{L2}} = 2BHSd\,b + \lceil S/B_q\rceil\, 2BHSd\,b$, so
    $AI_\text{{L2}} = 4BHS^2d / \text{{bytes}}_\text{{L2}} \approx B_q$ FLOP/B at fp16. Those
    re-reads hit L2: one CTA per query tile, one per SM at a time, so a wave works on a few
    heads, whose K and V ({units.format_bytes(_kv_head, binary=True)} per head at $S$ = {_s:,})
    L2 keeps. HBM sees Q, K, V and O about once: $\text{{bytes}}_\text{{HBM}} \approx 4BHSd\,b$,
    $AI_\text{{HBM}} \approx S/2$. The re-reads cost L2 bandwidth, not HBM's.

    **On-chip traffic**: per (query tile, KV tile) pair the matmuls read Q, K, V tiles from shared
    memory, $AI_\text{{chip}} \approx 4 B_q B_{{kv}} / ((B_q + 2B_{{kv}})\,b)$.

    **Roofline of each level**: attainable $= \min(P,\ AI_\text{{HBM}}\,\beta_\text{{HBM}},\
    AI_\text{{L2}}\,\beta_\text{{L2}},\ AI_\text{{chip}}\,\beta_\text{{chip}})$, with
    $\beta_\text{{L2}}$ measured ({_l2 / 1e3:.3g} TB/s on the {_hw.name},
    {_l2 / _hw.bandwidth_gbs:.1f}× HBM) and $\beta_\text{{chip}} \approx$ SMs × 128 B/clock ×
    clock ({_chip / 1e3:.0f} TB/s, {_chip / _hw.bandwidth_gbs:.0f}× HBM). At $S$ = {_s:,},
    {_heads} heads, ${_t}\times{_t}$ tiles: $AI_\text{{L2}}$ = {_pt.ai_l2:.0f} FLOP/B, bound by
    the {_pt.limit} roof at {_pt.attainable_tflops:.0f} TFLOP/s; FlashAttention-3 measures
    {_measured:.0f} TFLOP/s for this case (the bound is {_pt.attainable_tflops / _measured:.2f}×
    that). Without L2 the HBM roof would cap it near
    {_pt.ai_l2 * _hw.bandwidth_gbs / 1e3:.0f} TFLOP/s, below what is measured. The bigger the
    tile, the higher $AI_\text{{L2}}$, until the tile no longer fits: capacity, not on-chip
    bandwidth, is the wall.
    """)
    return


@app.cell
def _(oom_prediction, speedup_prediction, tile_prediction, tiny_prediction):
    _gate = style.takeaways_gate((speedup_prediction, tiny_prediction, oom_prediction,
                                  tile_prediction))
    mo.stop(_gate is not None, _gate)
    # the byte ratio of the default chain at fp16 (Prediction 1's answer): from core
    _ratio = fusion.chain_byte_ratio(fusion.DEFAULT_CHAIN, "fp16")
    style.takeaways([
        "An elementwise kernel's time is max(compute, memory, launch). At AI ≈ 1 FLOP/B it is "
        "memory-bound on any modern device, or overhead-bound when the tensor is small.",
        f"Fusing a memory-bound chain speeds it up by the ratio of HBM bytes (≈ {_ratio:.2g}× "
        "for LayerNorm → GELU → dropout → residual add), not by the number of kernels.",
        "Below the crossover n* = launch overhead × bandwidth / bytes per element, launches "
        "set the time: fusion (or CUDA graphs) helps by cutting launches, not bytes.",
        "Unfused attention materialises a B×H×S×S score matrix: traffic and memory grow with "
        "S² until it no longer fits. Flash attention keeps scores on chip: linear in S.",
        "On-chip memory has ~10× HBM's bandwidth but kilobytes of capacity per SM: bigger "
        "tiles raise the intensity on L2, which serves flash attention's K and V re-reads, "
        "only until they stop fitting.",
    ])
    return


if __name__ == "__main__":
    app.run()
