import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", css_file="labs.css")

with app.setup:
    import marimo as mo

    from labs.core import (figures, hardware, live, measure, quiz, reveal, roofline, style,
                           tiny_models)
    from labs.core import units
    from labs.core.course.lessons import your_model
    from labs.core.physics import misconceptions

    LAB_ID = "lab07"
    # The model every part profiles: the built-in tiny Llama-style decoder in fp32 with
    # unfused ("math") attention, decoding with a 1,024-token context (Part 1: batch 1 and 64).
    SCENARIO = {"context": 1024, "precision": "fp32", "attention": "math",
                "small_batch": 1, "large_batch": 64, "prefill_context": 256}
    # The context picker's opening value (LABS_SPEC §4.2b): the roofline the predictions are
    # checked against before anything is measured; the instructor copy's answers use it.
    OPENING = {"device": "h100-sxm"}
    # Prediction 1 and 2 options: the operator types the roofline adds time up by (the values
    # are the profiler's type names, labs.core.measure.profile.opcost). The questions ask for the
    # roofline's answer, which has no overhead term, so overhead is not an option there; the
    # measured comparison names it when it leads.
    TYPE_OPTIONS = {
        "Weight GEMMs: the projections and the LM head, which read their weight matrices":
            "weight GEMMs",
        "Attention over the KV cache: QKᵀ, softmax, PV": "attention (KV cache)",
        "Norms and elementwise ops: RMSNorm, SiLU, residual adds": "norms & elementwise",
    }
    # The measured comparisons' names for the profiler's types (overhead included).
    TYPE_NAMES = {**{v: k.split(":")[0] for k, v in TYPE_OPTIONS.items()},
                  "overhead (outside operators)": "Overhead outside the operators"}
    # Prediction 4 options: which operator group the roofline predicts best.
    BEST_OPTIONS = {
        "The large weight GEMMs": "weight GEMMs",
        "Attention over the KV cache": "attention (KV cache)",
        "The small norms and elementwise ops": "norms & elementwise",
    }
    # What each prediction's answer follows from, and what each instrument shows (LABS_SPEC
    # §3): an instrument opens once every prediction whose quantities it shows is locked.
    INSTRUMENTS = quiz.Instruments(
        answers={
            "lab07.dominant_b1": ["choice:dominant-b1", "share:decode-b1-by-type"],
            "lab07.dominant_b64": ["choice:dominant-b64", "share:decode-b64-by-type",
                                   "bytes:kv-cache-b64"],
            "lab07.memory_share": ["share:memory-bound-b1", "time:decode-b1"],
            # the launch model's bf16 ratio is 1 - share / 2: the share answers it in a step
            "lab07.bf16_ratio": ["ratio:bf16-step", "share:memory-bound-b1",
                                 "ratio:overhead-per-type"],
            "lab07.best_predicted": ["choice:best-predicted", "ratio:measured-over-bound",
                                     "ratio:overhead-per-type"],
        },
        instruments={
            # the model card: the picked device's ridge
            "model card": ["intensity:ridge"],
            # Part 1: the roofline's time per operator type at batch 1 and 64
            # (its notes and peeks: the regimes, the AI of a batch-1 GEMM, the KV copies' 4x)
            "decode roofline": ["time:decode-b1", "time:decode-b64", "share", "bytes",
                                "choice:dominant-b1", "choice:dominant-b64", "regime",
                                "intensity", "ratio:kv-copies"],
            # Part 1: the memory-bound share, alone and with launches
            "memory share": ["share:memory-bound-b1", "time:decode-b1"],
            # Part 1: both decode steps profiled on this machine
            "decode profile": ["time", "share", "bytes", "intensity", "choice:dominant-b1",
                               "choice:dominant-b64"],
            # Part 2: any model, batch and context; the overhead model; the measured table
            "operators": ["time", "share", "bytes", "intensity", "regime",
                          "ratio:measured-over-bound", "ratio:overhead-per-type",
                          "choice:best-predicted"],
            # Part 3: what each change does, predicted and measured
            "change": ["ratio", "time", "bytes", "share", "regime"],
        })
    # Prediction 5's case as the Part 2 run labels it: only that profile is graded
    QUESTION_CASE_LABEL = (f"decoder prefill, batch {SCENARIO['small_batch']}, context "
                           f"{SCENARIO['prefill_context']}, {SCENARIO['attention']} attention")
    # Part 2's cases: (block, phase) of the built-in models.
    CASES = {"decoder, prefill": ("decoder", "prefill"), "decoder, decode step": ("decoder", "decode"),
             "MLP block alone, prefill": ("mlp", "prefill"),
             "attention block alone, prefill": ("attention", "prefill")}


@app.cell
def _():
    style.lab_header(
        "Lab 7 · Your model on the roofline",
        "Every operator of a real PyTorch forward pass, placed on the roofline, predicted "
        "and then measured on this machine.",
        goals=[
            "Place every operator of a model's forward pass on a roofline from its FLOPs and "
            "compulsory bytes, and read its regime.",
            "Predict where a decode step's time goes at batch 1 and batch 64, then measure it "
            "operator by operator.",
            "Fill in the predicted-vs-measured table operator by operator and explain where "
            "the roofline's prediction holds and where something else decides the time.",
            "Predict what one change (batch, precision, fused attention, torch.compile) does to "
            "a step, then measure it.",
            "Profile your own model with the same call: profile_model or labs-profile (it "
            "answers this lab's questions: use it once they are locked).",
        ],
        minutes=45,
        reading=[
            ("PyTorch: torch.utils.flop_counter (FlopCounterMode)",
             "https://pytorch.org/docs/stable/generated/torch.utils.flop_counter.FlopCounterMode.html"),
            ("H. He: Making Deep Learning Go Brrrr From First Principles",
             "https://horace.io/brrr_intro.html"),
            ("How to Scale Your Model: All About Rooflines",
             "https://jax-ml.github.io/scaling-book/roofline/"),
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
    device_picker = style.dropdown_on(
        hardware.picker_options(), OPENING["device"],
        label="Roofline to predict with (spec sheet)", searchable=True)
    device_picker
    return (device_picker,)


@app.function
def decode_case(batch):
    """The decode step the lab asks about, at ``batch`` sequences: ``tiny_models``' keyword
    arguments (the scenario's context, precision and attention)."""
    return dict(phase="decode", batch=batch, context=SCENARIO["context"],
                precision=SCENARIO["precision"], attention=SCENARIO["attention"])


@app.function
def device_error(exc):
    """A core error as the student reads it, then the way out: the model runs in one
    precision on every device, so a KeyError is a device without a rate for it."""
    _p = SCENARIO["precision"]
    return (style.error_message(exc) + f"\n\nThe model runs in {_p}, so the predictions "
            f"need a device with an {_p} rate: pick one in the picker at the top "
            f"({style.devices_with(_p)}).")


@app.cell
def _(device_picker):
    _wait = INSTRUMENTS.gate("model card")
    mo.stop(_wait is not None, _wait)
    _d, _p = hardware.get(device_picker.value), SCENARIO["precision"]
    try:
        _ridge = f"{units.format_value(roofline.ridge_point(_d, _p))} FLOP/B"
        _note = None
    except KeyError as _exc:
        _ridge, _note = "—", style.error_callout(device_error(_exc))
    mo.vstack([mo.md(your_model.model_card(tiny_models.TINY_DECODER, _d.name, _p, _ridge)),
               *([_note] if _note else [])])
    return


@app.cell
def _():
    run_threads = mo.ui.dropdown(
        options={"1 thread (steady timings on a shared or busy machine)": 1,
                 "torch's default thread count": 0},
        value="1 thread (steady timings on a shared or busy machine)", label="CPU threads")
    run_budget = mo.ui.slider(steps=[1, 2, 4, 8, 16], value=2, show_value=True,
                              label="Timing budget per profile (s)")
    # read at each press, so a settings step re-runs no measurement cell
    run_settings = live.read_at_press(budget=run_budget, threads=run_threads)
    # the cell's last expression is what it shows (an assignment last would show nothing)
    mo.vstack([mo.md("**Measuring on this machine** (each run button below; nothing runs "
                     "until you press one)"), mo.hstack([run_threads, run_budget],
                                                        justify="start", gap=2)])
    return (run_settings,)


@app.cell
def _():
    # What the run buttons profile; tests shrink the context to run in seconds.
    LIVE = {"context": SCENARIO["context"], "roofline_budget_s": 3.0}
    return (LIVE,)


@app.function
def measured_on(info, threads, more=""):
    """The device card as the run used it (its thread count, not torch's default) and one
    sentence saying where that setting is."""
    import dataclasses

    if info.kind == "cpu" and threads:
        info = dataclasses.replace(info, threads=threads, message=info.message.replace(
            f"{info.threads} torch thread(s)", f"{threads} torch thread(s)"))
        said = (f"Profiled with {threads} torch thread{'s' if threads > 1 else ''} on "
                f"this machine's {info.cores} logical CPUs (the **CPU threads** setting "
                "under *Measuring on this machine*, at the top of the lab).")
    else:
        said = "Profiled on the GPU (the CPU threads setting does not apply)."
    return mo.vstack([live.device_card(info), mo.md(f"{said} {more}".strip())])


@app.cell
def _():
    mo.md("""
    ## Part 1 · Where does a decode step's time go?
    """)
    return


@app.cell
def _():
    style.scenario_card(
        "Ravi Menon", "inference engineer",
        f"We serve this small decoder with {SCENARIO['context']:,}-token contexts, one user per "
        f"decode step. Next week we batch {SCENARIO['large_batch']} users into every step. "
        "Before anyone optimises anything: where does a step's time go today, where will it go "
        "then, and how much of it is waiting on memory? And if we store the model in bf16, how "
        "much faster is a step on this machine?")
    return


@app.cell
def _():
    mo.md("""
    **Predict first.** Ravi asks four things about the same step, and the views below answer
    them together: lock all four predictions. Each view opens once every prediction it would
    answer is locked.
    """)
    return


@app.cell
def _(lab):
    get_dominant_small, set_dominant_small = quiz.lock_state(lab, "lab07.dominant_b1")
    return get_dominant_small, set_dominant_small


@app.cell
def _(get_dominant_small, lab, set_dominant_small):
    dominant_small_form = quiz.choice_form(
        lab, "lab07.dominant_b1",
        question=f"**Prediction 1.** On the roofline picked at the top (each operator at its "
                 "bound, no overhead term), which operator type takes the most time in one "
                 f"decode step at batch {SCENARIO['small_batch']} (context "
                 f"{SCENARIO['context']})?",
        options=TYPE_OPTIONS, locked=get_dominant_small(), on_lock=set_dominant_small)
    quiz.prediction_panel(dominant_small_form, get_dominant_small())
    return


@app.cell
def _(get_dominant_small, lab):
    _case = decode_case(SCENARIO["small_batch"])
    _ref = tiny_models.dominant_group(OPENING["device"], **_case)
    dominant_small_prediction = get_dominant_small() or reveal.reference(
        lab, "lab07.dominant_b1", _ref, label=your_model.option_label(TYPE_OPTIONS, _ref),
        explanation=your_model.dominant_small_explanation(OPENING["device"], _case))
    reveal.card(dominant_small_prediction)
    return (dominant_small_prediction,)


@app.cell
def _(lab):
    get_dominant_large, set_dominant_large = quiz.lock_state(lab, "lab07.dominant_b64")
    return get_dominant_large, set_dominant_large


@app.cell
def _(get_dominant_large, lab, set_dominant_large):
    dominant_large_form = quiz.choice_form(
        lab, "lab07.dominant_b64",
        question=f"**Prediction 2.** And at batch {SCENARIO['large_batch']} (same context, "
                 "same roofline, no overhead term): which operator type takes the most time?",
        options=TYPE_OPTIONS, locked=get_dominant_large(), on_lock=set_dominant_large)
    quiz.prediction_panel(dominant_large_form, get_dominant_large())
    return


@app.cell
def _(get_dominant_large, lab):
    _case = decode_case(SCENARIO["large_batch"])
    _ref = tiny_models.dominant_group(OPENING["device"], **_case)
    dominant_large_prediction = get_dominant_large() or reveal.reference(
        lab, "lab07.dominant_b64", _ref, label=your_model.option_label(TYPE_OPTIONS, _ref),
        explanation=your_model.dominant_large_explanation(OPENING["device"], _case))
    reveal.card(dominant_large_prediction)
    return (dominant_large_prediction,)


@app.cell
def _(lab):
    get_memory_share, set_memory_share = quiz.lock_state(lab, "lab07.memory_share")
    return get_memory_share, set_memory_share


@app.cell
def _(get_memory_share, lab, set_memory_share):
    _launch_us = units.format_value(roofline.DEFAULT_LAUNCH_OVERHEAD_US)
    # the step's kernels (one per operator that is not a view) and its roofline bound on the
    # question's device: what the question gives (a literal case: the catalogue reads the
    # question from the source)
    _case = dict(phase="decode", batch=SCENARIO["small_batch"], context=SCENARIO["context"],
                 precision=SCENARIO["precision"], attention=SCENARIO["attention"])
    _kernels = tiny_models.step_kernels(**_case)
    _bound_us = sum(tiny_models.time_by_group(OPENING["device"], **_case).values()) * 1e6
    memory_share_form = quiz.numeric_form(
        lab, "lab07.memory_share",
        question=f"**Prediction 3.** Now add the lab's launch model: every kernel pays a fixed "
                 f"{_launch_us} µs, a model's figure between a bare "
                 f"CUDA launch (about {roofline.LAUNCH_BACK_TO_BACK_US:g} µs measured) and a "
                 "kernel of eager PyTorch with its host dispatch (about "
                 f"{roofline.EAGER_KERNEL_US:.0f} µs measured). A "
                 f"batch-{SCENARIO['small_batch']} decode step launches {_kernels} kernels, one "
                 "per operator that is not a view (a view only relabels a tensor's shape: it "
                 "launches nothing). On the "
                 f"{hardware.get(OPENING['device']).name} the step's operators take "
                 f"{_bound_us:.1f} µs at their roofline bounds (the math attention's copies of K "
                 "and V to every query head included). In the model's terms (the step = every "
                 f"operator at its bound, plus kernels × {_launch_us} "
                 "µs of launches added outside every operator, as the profiler's overhead row), "
                 "what share of the step's time is spent in memory-bound operators?",
        units="%", lo=0, hi=100, locked=get_memory_share(), on_lock=set_memory_share)
    quiz.prediction_panel(memory_share_form, get_memory_share())
    return


@app.function
def memory_share_answer():
    """Prediction 3's answer, as the reference reveals it and the comparison shows it: the
    question's step's memory-bound share on its device, roofline plus launches (%, 0.1)."""
    _share = tiny_models.memory_bound_share_with_launches(
        OPENING["device"], **decode_case(SCENARIO["small_batch"]))
    return round(100 * _share, 1)


@app.cell
def _(get_memory_share, lab):
    _case = decode_case(SCENARIO["small_batch"])
    memory_share_prediction = get_memory_share() or reveal.reference(
        lab, "lab07.memory_share", memory_share_answer(), units="%",
        explanation=your_model.memory_share_explanation(OPENING["device"], _case))
    reveal.card(memory_share_prediction)
    return (memory_share_prediction,)


@app.cell
def _(lab):
    get_bf16_ratio, set_bf16_ratio = quiz.lock_state(lab, "lab07.bf16_ratio")
    return get_bf16_ratio, set_bf16_ratio


@app.cell
def _(get_bf16_ratio, lab, set_bf16_ratio):
    bf16_ratio_form = quiz.numeric_form(
        lab, "lab07.bf16_ratio",
        question="**Prediction 4.** The same batch-1 decode step with the whole model in "
                 "bf16 instead of fp32: new step time ÷ old step time, measured on this machine "
                 "(overhead included; Part 3 measures it)?",
        # a box to type the ratio in; up to 50x: a CPU without bf16 instructions can run bf16
        # that much slower
        units="×", lo=0.002, hi=50, locked=get_bf16_ratio(),
        on_lock=set_bf16_ratio)
    quiz.prediction_panel(bf16_ratio_form, get_bf16_ratio())
    return


@app.cell
def _(get_bf16_ratio, lab):
    _base = decode_case(SCENARIO["small_batch"])
    # graded against the measurement: the reference is the roofline plus the launch model
    # (the pure roofline's 0.5 holds only where the bytes set the step's time)
    _ratio = tiny_models.predicted_ratio_with_launches("precision", OPENING["device"], _base)
    bf16_ratio_prediction = get_bf16_ratio() or reveal.reference(
        lab, "lab07.bf16_ratio", round(_ratio, 3), units="×",
        explanation=your_model.bf16_ratio_explanation(OPENING["device"], _base))
    reveal.card(bf16_ratio_prediction)
    return (bf16_ratio_prediction,)


@app.cell
def _(
    bf16_ratio_prediction,
    dominant_large_prediction,
    dominant_small_prediction,
    memory_share_prediction,
):
    # Part 1's four predictions, in the order asked: what the decode step's views wait for
    decode_predictions = (dominant_small_prediction, dominant_large_prediction,
                          memory_share_prediction, bf16_ratio_prediction)
    return (decode_predictions,)


@app.cell
def _(device_picker):
    # The roofline's answer for both batches on the picked device (no torch: physics only).
    _small = decode_case(SCENARIO["small_batch"])
    try:
        decode_predicted = {b: tiny_models.time_by_group(device_picker.value, **decode_case(b))
                            for b in (SCENARIO["small_batch"], SCENARIO["large_batch"])}
        decode_memory_share = tiny_models.memory_bound_share(device_picker.value, **_small)
        # Prediction 3 is graded against the roofline plus the launch model
        decode_launch_share = tiny_models.memory_bound_share_with_launches(device_picker.value,
                                                                           **_small)
        # the same share at the measured per-kernel costs the launch model stands between
        decode_measured_launch_shares = [
            (_what.split(",")[0], _us, tiny_models.memory_bound_share_with_launches(
                device_picker.value, launch_overhead_us=_us, **_small))
            for _what, _us, _src in roofline.MEASURED_KERNEL_COSTS_US
            if _us in (roofline.LAUNCH_BACK_TO_BACK_US, roofline.EAGER_KERNEL_US)]
        decode_error = None
    except KeyError as _exc:
        decode_predicted = decode_memory_share = decode_launch_share = None
        decode_measured_launch_shares = None
        decode_error = device_error(_exc)
    return (
        decode_error,
        decode_launch_share,
        decode_measured_launch_shares,
        decode_memory_share,
        decode_predicted,
    )


@app.cell
def _(decode_error, decode_predicted, decode_predictions, device_picker):
    _wait = INSTRUMENTS.gate("decode roofline", *decode_predictions)
    mo.stop(_wait is not None, _wait)
    mo.stop(decode_error is not None, style.error_callout(decode_error))
    predicted_small_figure = figures.step_bound_figure(
        decode_predicted[SCENARIO["small_batch"]],
        title=f"The roofline's answer: one decode step at batch {SCENARIO['small_batch']} on the "
              f"{hardware.get(device_picker.value).name}")
    mo.vstack([predicted_small_figure, mo.md(
        "Each operator at its bound max(FLOPs / peak, bytes / bandwidth), summed per type "
        "(`tiny_models.time_by_group`, spec sheet). No overhead: the roofline has no term "
        "for it, though on a GPU in eager mode every kernel also pays a launch of a few µs. "
        "Now measure the real thing.")])
    return


@app.cell
def _(decode_predictions):
    _wait = INSTRUMENTS.gate("decode profile", *decode_predictions)
    mo.stop(_wait is not None, _wait)
    decode_button = live.run_button("Profile decode steps on this machine (batch 1 and 64)")
    _why = measure.measurement_unavailable("The measured side of Predictions 1 to 3")
    mo.vstack([decode_button, *([mo.callout(mo.md(_why), kind="warn")] if _why else [])])
    return (decode_button,)


@app.cell
def _(LIVE, decode_button, lab, run_settings):
    mo.stop(not decode_button.value, mo.callout(mo.md(live.IDLE_MESSAGE), kind="neutral"))
    live_info = measure.detect()  # imports torch: only after the button is pressed
    _settings = run_settings()
    _batches = (SCENARIO["small_batch"], SCENARIO["large_batch"])

    def _job(progress):
        out = {}
        for i, b in enumerate(_batches):
            try:
                model, inputs = measure.builtin_case(
                    "decoder", phase="decode", batch=b, context=LIVE["context"],
                    precision=SCENARIO["precision"], attention=SCENARIO["attention"],
                    device=live_info)
            except measure.DoesNotFit as _e:
                raise measure.DoesNotFit(f"{_e} Use Part 2 below instead: pick a smaller "
                                         "batch or context there and profile that.") from None
            out[b] = measure.profile_model(
                model, inputs, device=live_info, budget_s=_settings.budget,
                roofline_budget_s=LIVE["roofline_budget_s"],
                threads=_settings.threads or None,
                label=f"decode, batch {b}",
                progress=lambda d, t, label, i=i: progress(i * 10 + min(d, 9), 20, label))
            del model, inputs
        return out

    decode_profiles = live.gated_run(decode_button, _job, total=20, info=live_info,
                                     title="Profiling decode steps")
    lab.record("result", "lab07.measured_decode", {
        "device": live_info.name, "profiles": [p.summary() for p in decode_profiles.values()]})
    _first = next(iter(decode_profiles.values()))
    measured_on(live_info, _first.threads, " ".join(_first.notes))
    return (decode_profiles,)


@app.cell
def _(decode_predictions, decode_profiles):
    mo.stop(INSTRUMENTS.gate("decode profile", *decode_predictions) is not None)
    _p = decode_profiles[SCENARIO["small_batch"]]
    _caveat = _p.op_time_caveat
    mo.vstack([
        style.metric_cards(your_model.decode_step_cards(_p)),
        *([mo.callout(mo.md(_caveat), kind="warn")] if _caveat else []),
        figures.time_by_type_figure(_p.by_op_type(), title=f"Measured time per operator "
                                    f"type, batch {SCENARIO['small_batch']}"),
        mo.md("Where each operator sits against its own bound comes in Part 2.")])
    return


@app.cell
def _(
    decode_predicted,
    decode_predictions,
    device_picker,
    dominant_small_prediction,
    lab,
):
    mo.stop(INSTRUMENTS.gate("decode roofline", *decode_predictions) is not None)
    mo.stop(decode_predicted is None)
    _t = decode_predicted[SCENARIO["small_batch"]]
    _leader = tiny_models.dominant_group(device_picker.value,
                                         **decode_case(SCENARIO["small_batch"]))
    quiz.compare(dominant_small_prediction, _leader, lab=lab,
                 actual_label=your_model.roofline_leader_label(_t, TYPE_NAMES))
    return


@app.cell
def _(decode_predictions, decode_profiles):
    mo.stop(INSTRUMENTS.gate("decode profile", *decode_predictions) is not None)
    _p = decode_profiles[SCENARIO["small_batch"]]
    mo.callout(mo.md(your_model.measured_leader_note(_p, TYPE_NAMES, TYPE_OPTIONS.values())),
               kind="neutral")
    return


@app.cell
def _(decode_predictions, lab):
    mo.stop(INSTRUMENTS.gate("decode roofline", *decode_predictions) is not None)
    quiz.explain_form(
        lab, "lab07.dominant_b1",
        observe_label="Which operator types sit highest on the measured time bars, and on the "
                      "roofline's answer? How big is the overhead row?",
        explain_label="Why does that type dominate at batch 1? Use bytes: what must every "
                      "decode step read, whatever the batch?")
    return


@app.cell
def _(decode_predictions):
    mo.stop(INSTRUMENTS.gate("decode roofline", *decode_predictions) is not None)
    style.math_peek("one operator on the roofline, and what a step reads", r"""
    Every aten call the forward pass makes is one row. Its FLOPs come from
    `torch.utils.flop_counter` (what `FlopCounterMode` counts: $2MNK$ for a GEMM) and its
    **compulsory bytes** from its tensors: every input read once, every output written once,
    $b$ bytes per element. A lower bound: caches, re-reads and temporaries are not in it.

    $$\text{AI} = \frac{\text{FLOPs}}{\text{bytes}}\ \text{[FLOP/B]},\qquad
    T_\text{bound} = \max\!\left(\frac{\text{FLOPs}}{\pi_p},\ \frac{\text{bytes}}{\beta}\right)
    \ \text{[s]}$$

    A decode step's linear layer with $B$ tokens, $K$ inputs, $N$ outputs:
    $\text{FLOPs} = 2BNK$, $\text{bytes} = (BK + KN + BN)\,b$: its weight matrix ($KN$)
    is read whole whatever $B$.
    """ + your_model.weights_read_text(tiny_models.TINY_DECODER, SCENARIO["precision"],
                                       SCENARIO["small_batch"]))
    return


@app.cell
def _(decode_error, decode_predicted, decode_predictions, device_picker):
    mo.stop(INSTRUMENTS.gate("decode roofline", *decode_predictions) is not None)
    mo.stop(decode_error is not None, style.error_callout(decode_error))
    predicted_large_figure = figures.step_bound_figure(
        decode_predicted[SCENARIO["large_batch"]],
        title=f"The roofline's answer: one decode step at batch {SCENARIO['large_batch']} on the "
              f"{hardware.get(device_picker.value).name}")
    predicted_large_figure
    return


@app.cell
def _(decode_predictions, decode_profiles):
    mo.stop(INSTRUMENTS.gate("decode profile", *decode_predictions) is not None)
    _p = decode_profiles[SCENARIO["large_batch"]]
    mo.vstack([*([mo.callout(mo.md(_p.op_time_caveat), kind="warn")] if _p.op_time_caveat
                 else []),
               figures.time_by_type_figure(_p.by_op_type(), title=f"Measured time per operator "
                                           f"type, batch {SCENARIO['large_batch']}")])
    return


@app.cell
def _(
    decode_predicted,
    decode_predictions,
    device_picker,
    dominant_large_prediction,
    lab,
):
    mo.stop(INSTRUMENTS.gate("decode roofline", *decode_predictions) is not None)
    mo.stop(decode_predicted is None)
    _t = decode_predicted[SCENARIO["large_batch"]]
    _leader = tiny_models.dominant_group(device_picker.value,
                                         **decode_case(SCENARIO["large_batch"]))
    quiz.compare(dominant_large_prediction, _leader, lab=lab,
                 actual_label=your_model.roofline_leader_label(_t, TYPE_NAMES))
    return


@app.cell
def _(decode_predictions, decode_profiles):
    mo.stop(INSTRUMENTS.gate("decode profile", *decode_predictions) is not None)
    _p = decode_profiles[SCENARIO["large_batch"]]
    mo.callout(mo.md(your_model.measured_leader_note(_p, TYPE_NAMES, TYPE_OPTIONS.values())),
               kind="neutral")
    return


@app.cell
def _(decode_predictions, lab):
    mo.stop(INSTRUMENTS.gate("decode roofline", *decode_predictions) is not None)
    quiz.explain_form(
        lab, "lab07.dominant_b64",
        observe_label="How did the weight GEMMs' time change from batch 1 to 64, and the "
                      "attention's? Which type now leads the measured bars?",
        explain_label="Which bytes grow with the batch and which do not? Why does grouped-query "
                      "attention (2 KV heads for 8 query heads) matter here?")
    return


@app.cell
def _(decode_predictions):
    mo.stop(INSTRUMENTS.gate("decode roofline", *decode_predictions) is not None)
    style.math_peek("what grows with the batch", r"""
    Per decode step, the weights are read once whatever the batch $B$ ($P_\text{read}$: every
    layer's and the LM head's, and one embedding row per token); the KV cache is read once per
    sequence:

    $$\text{bytes}_\text{weights} \approx P_\text{read}\,b,\qquad
    \text{bytes}_\text{KV} = 2\,L\,H_\text{kv}\,d_h\,S\,B\,b$$

    ($L$ layers, $H$ query heads, $H_\text{kv}$ KV heads, $d_h$ head size, $S$ context). The
    weight GEMMs' AI grows with $B$ (about $2B/b$). Attention's does not: per sequence and
    layer it does $4\,H\,S\,d_h$ FLOPs ($QK^\top$ and $PV$) over the $2\,H_\text{kv}\,S\,d_h$
    K and V elements it reads, about $2H/H_\text{kv}$ FLOP per element ($2H/(H_\text{kv}\,b)$
    FLOP/B) whatever $B$, because every sequence has its own cache.
    """ + your_model.batch_growth_text(tiny_models.TINY_DECODER, SCENARIO["large_batch"],
                                       SCENARIO["context"]))
    return


@app.cell
def _(
    bf16_ratio_prediction,
    decode_error,
    decode_launch_share,
    decode_measured_launch_shares,
    decode_memory_share,
    memory_share_prediction,
):
    _wait = INSTRUMENTS.gate("memory share", memory_share_prediction, bf16_ratio_prediction)
    mo.stop(_wait is not None, _wait)
    mo.stop(decode_error is not None, style.error_callout(decode_error))
    style.metric_cards(your_model.memory_share_cards(
        decode_memory_share, decode_launch_share, decode_measured_launch_shares,
        SCENARIO["small_batch"]))
    return


@app.cell
def _(decode_predictions, decode_profiles):
    mo.stop(INSTRUMENTS.gate("decode profile", *decode_predictions) is not None)
    _p = decode_profiles[SCENARIO["small_batch"]]
    regime_figure = figures.time_by_type_figure(
        _p.by_regime(), key="regime",
        title=f"Measured time by regime, batch-{SCENARIO['small_batch']} decode step")
    mo.vstack([regime_figure, mo.md(
        "Overhead-bound: the overhead row plus views (no bytes, no FLOPs: their time is all "
        "dispatch). FLOPs unknown: operators no formula covers (none in this model).")])
    return


@app.cell
def _(bf16_ratio_prediction, lab, memory_share_prediction):
    _launch_us = units.format_value(roofline.DEFAULT_LAUNCH_OVERHEAD_US)
    mo.stop(INSTRUMENTS.gate("memory share", memory_share_prediction,
                             bf16_ratio_prediction) is not None)
    # graded on the question's own case (its device), whatever the picker shows above
    mo.vstack([mo.md(f"**Against the roofline plus {_launch_us} µs per kernel** on the "
                     f"question's {hardware.get(OPENING['device']).name}:"),
               quiz.compare(memory_share_prediction, memory_share_answer(), units="%",
                            lab=lab)])
    return


@app.cell
def _(decode_predictions, decode_profiles):
    mo.stop(INSTRUMENTS.gate("decode profile", *decode_predictions) is not None)
    _p = decode_profiles[SCENARIO["small_batch"]]
    mo.callout(mo.md(your_model.measured_memory_share_note(_p)), kind="neutral")
    return


@app.cell
def _(decode_predictions, lab):
    _launch_us = units.format_value(roofline.DEFAULT_LAUNCH_OVERHEAD_US)
    mo.stop(INSTRUMENTS.gate("decode roofline", *decode_predictions) is not None)
    quiz.explain_form(
        lab, "lab07.memory_share",
        observe_label=f"What share does the roofline alone give, what share with {_launch_us} "
                      "µs per kernel, and what share did you measure? Where does the rest go?",
        explain_label="Why can no operator of a batch-1 decode step be compute-bound? What "
                      "would it take to move time into compute-bound operators?")
    return


@app.cell
def _(decode_predictions):
    _launch_us = units.format_value(roofline.DEFAULT_LAUNCH_OVERHEAD_US)
    mo.stop(INSTRUMENTS.gate("decode roofline", *decode_predictions) is not None)
    style.math_peek("the shares", r"""
    With $T_i$ the measured time of operator $i$ and $T$ the whole step (measured without the
    profiler):

    $$\text{share}_\text{memory} = \frac{\sum_{i\,\in\,\text{memory-bound}} T_i}{T},\qquad
    T_\text{overhead} = T - \sum_i T_i$$

    An operator is memory-bound when $\text{bytes}/\beta > \text{FLOPs}/\pi_p$, i.e.
    $\text{AI} < \text{ridge}_p = \pi_p/\beta$. The roofline's own share divides bounds
    $\hat T_i$, not measured times, and has no overhead term: for a step whose operators all
    sit below the ridge it is 100% by construction. The launch model adds one: with $k$
    kernels at $c$ = """ + _launch_us + r""" µs each,

    $$\text{share}_\text{memory} \approx
    \frac{\sum_{i\,\in\,\text{memory-bound}} \hat T_i}{\sum_i \hat T_i + k\,c}$$

    A batch-1 decode step's weight GEMM: $\text{AI} = 2NK / ((K + NK + N)b) \approx 2/b$,
    0.5 FLOP/B in fp32, far below any device's fp32 ridge.

    The per-operator times $T_i$ are measured under the profiler, which adds its own cost to
    every call; that cost (calibrated on this machine) is taken out, and where the operators
    still add up to more than the step they are scaled to fit it, so no share passes 100%.
    """)
    return


@app.cell
def _():
    mo.md("""
    ## Part 2 · Predicted vs measured, operator by operator
    """)
    return


@app.cell
def _():
    style.scenario_card(
        "Mei Lin", "performance lead",
        "Every roofline guide I find ends with a predicted-vs-measured table full of 'TBD'. "
        "Fill ours in: for every operator, the roofline's time and the measured one, with the "
        "error. Then tell me where I can trust the roofline's number and where I can't.")
    return


@app.cell
def _(lab):
    get_best_predicted, set_best_predicted = quiz.lock_state(lab, "lab07.best_predicted")
    return get_best_predicted, set_best_predicted


@app.cell
def _(get_best_predicted, lab, set_best_predicted):
    best_predicted_form = quiz.choice_form(
        lab, "lab07.best_predicted",
        question=f"**Prediction 5.** Profiling a {SCENARIO['prefill_context']}-token prefill, "
                 "which operators' measured times will come closest to their roofline bounds?",
        options=BEST_OPTIONS, locked=get_best_predicted(), on_lock=set_best_predicted)
    quiz.prediction_panel(best_predicted_form, get_best_predicted())
    return


@app.cell
def _(get_best_predicted, lab):
    _case = dict(phase="prefill", batch=SCENARIO["small_batch"],
                 context=SCENARIO["prefill_context"], precision=SCENARIO["precision"],
                 attention=SCENARIO["attention"])
    _r = tiny_models.overhead_ratio_by_group(OPENING["device"], **_case)
    _ref = tiny_models.best_predicted_group(OPENING["device"], **_case)
    best_predicted_prediction = get_best_predicted() or reveal.reference(
        lab, "lab07.best_predicted", _ref, label=your_model.option_label(BEST_OPTIONS, _ref),
        explanation=your_model.best_predicted_explanation(_r, SCENARIO["prefill_context"]))
    reveal.card(best_predicted_prediction)
    return (best_predicted_prediction,)


@app.cell
def _(best_predicted_prediction, decode_predictions):
    # every prediction of the lab: what Parts 2 and 3 and the takeaways wait for
    all_predictions = (*decode_predictions, best_predicted_prediction)
    return (all_predictions,)


@app.cell
def _(all_predictions):
    _wait = INSTRUMENTS.gate("operators", *all_predictions)
    mo.stop(_wait is not None, _wait)
    case_picker = mo.ui.dropdown(options=CASES, value="decoder, prefill", label="Model")
    case_batch = mo.ui.slider(steps=[1, 2, 4, 8, 16, 32, 64, 128, 256], value=1,
                              label="Batch", show_value=True, full_width=True)
    case_context = mo.ui.slider(steps=[64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768],
                                value=SCENARIO["prefill_context"], label="Context (tokens)",
                                show_value=True,
                                full_width=True)
    case_attention = mo.ui.dropdown(options={"math (QKᵀ, softmax, PV)": "math",
                                             "scaled_dot_product_attention": "sdpa"},
                                    value="math (QKᵀ, softmax, PV)", label="Attention")
    # The profile reads the case at the press: a step here redraws the memory figure (and,
    # but for Model, the overhead one) and keeps the last profile, labelled with its case,
    # until the next press.
    case_settings = live.read_at_press(model=case_picker, batch=case_batch, context=case_context,
                                       attention=case_attention)
    mo.vstack([mo.hstack([case_picker, case_attention], justify="start", gap=2), case_batch,
               case_context])
    return case_attention, case_batch, case_context, case_picker, case_settings


@app.cell
def _(case_attention, case_batch, case_context, case_picker):
    _block, _phase = case_picker.value  # made behind the "operators" gate
    case_terms = tiny_models.memory_terms(
        phase=_phase, batch=case_batch.value, context=case_context.value,
        precision=SCENARIO["precision"], attention=case_attention.value, block=_block)
    _free = measure.host_memory_bytes()  # this machine's RAM, read without torch
    _need = (f"**Memory this run needs**, before anything is allocated: "
             f"{units.format_bytes(sum(case_terms.values()))} (weights, KV cache, activations). "
             "The run button checks it against the free memory of the device it runs on (the "
             "GPU's, if torch sees one) and refuses what does not fit.")
    mo.vstack([mo.md(_need), figures.memory_budget_figure(
        case_terms, _free, title="Against this machine's free memory (RAM)")]
        if _free else [mo.md(_need + " This machine's free memory cannot be read here.")])
    return


@app.cell
def _(
    all_predictions,
    case_attention,
    case_batch,
    case_context,
    device_picker,
):
    _launch_us = units.format_value(roofline.DEFAULT_LAUNCH_OVERHEAD_US)
    mo.stop(INSTRUMENTS.gate("operators", *all_predictions) is not None)
    # Both phases side by side, whatever model is picked: the contrast is the lesson, and a
    # Model step then redraws only the memory figure above.
    try:
        _r = {_name: tiny_models.overhead_ratio_by_group(
            device_picker.value, phase=_phase, batch=case_batch.value,
            context=case_context.value, precision=SCENARIO["precision"],
            attention=case_attention.value)
              for _name, _phase in (("prefill", "prefill"), ("decode step", "decode"))}
        overhead_figure = figures.grouped_bar_figure(
            list(_r["prefill"]), {_k: list(_g.values()) for _k, _g in _r.items()}, log="auto",
            yaxis_title=f"(bound + launches × {_launch_us} µs) / bound",
            title=f"If every kernel paid a {_launch_us} µs launch: the decoder at batch "
                  f"{case_batch.value}, context {case_context.value:,}, "
                  f"{hardware.get(device_picker.value).name}")
        _out = mo.vstack([overhead_figure, mo.md(
            f"The launch model on the roofline's numbers (each kernel's bound plus {_launch_us} "
            "µs, added), "
            "for the whole decoder's ops in both phases (whatever model is picked): near 1, the bound is the time; far above, "
            "the launch decides it. Now measure the real table on this machine.")])
    except KeyError as _exc:
        _out = style.error_callout(device_error(_exc))
    _out
    return


@app.cell
def _(all_predictions):
    mo.stop(INSTRUMENTS.gate("operators", *all_predictions) is not None)
    case_button = live.run_button("Profile this model on this machine")
    _why = measure.measurement_unavailable("The comparison of Prediction 4")
    mo.vstack([case_button, *([mo.callout(mo.md(_why), kind="warn")] if _why else [])])
    return (case_button,)


@app.cell
def _(LIVE, case_button, case_settings, lab, run_settings):
    mo.stop(not case_button.value, mo.callout(mo.md(live.IDLE_MESSAGE), kind="neutral"))
    case_info = measure.detect()
    _settings, _case = run_settings(), case_settings()
    _block, _phase = _case.model

    def _job(progress):
        try:  # refused before allocating: core gives the numbers, the lab the way out
            model, inputs = measure.builtin_case(
                _block, phase=_phase, batch=_case.batch, context=_case.context,
                precision=SCENARIO["precision"], attention=_case.attention, device=case_info)
        except measure.DoesNotFit as _e:
            raise measure.DoesNotFit(f"{_e} Lower the batch or the context above and press "
                                     "the button again.") from None
        return measure.profile_model(
            model, inputs, device=case_info, budget_s=_settings.budget,
            roofline_budget_s=LIVE["roofline_budget_s"],
            threads=_settings.threads or None,
            label=f"{_block} {_phase}, batch {_case.batch}, context {_case.context}, "
                  f"{_case.attention} attention",
            progress=progress)

    case_profile = live.gated_run(case_button, _job, total=10, info=case_info,
                                  title="Profiling every operator")
    lab.record("result", "lab07.measured_table", case_profile.summary())
    measured_on(case_info, case_profile.threads, (
        f"This is **{case_profile.label}**. It stays until "
        "the next press: change the model, batch or context above and press again to compare."))
    return (case_profile,)


@app.cell
def _(all_predictions, case_profile):
    mo.stop(INSTRUMENTS.gate("operators", *all_predictions) is not None)
    _show = your_model.operator_table_rows(case_profile.lost_time(25))
    case_table = mo.ui.table(_show, selection=None, show_download=False,
                             label="The 25 operators that lose the most time (measured − bound)")
    mo.vstack([case_table, live.csv_download(case_profile.all_rows(), "lab07_operators.csv"),
               mo.md(f"All {len(case_profile.rows)} operators and the overhead row are in the "
                     "CSV. " + " ".join(case_profile.notes))])
    return


@app.cell
def _(all_predictions, case_profile):
    mo.stop(INSTRUMENTS.gate("operators", *all_predictions) is not None)
    case_figure = figures.operator_roofline_figure(
        case_profile.rows, case_profile.roof, case_profile.main_precision,
        title=f"{case_profile.label}: every operator, measured")
    _types = [g for g in case_profile.error_by_type()
              if g["op_type"] in BEST_OPTIONS.values()]
    mo.vstack([case_figure, figures.bar_figure(
        [g["op_type"] for g in _types], [g["median_factor_off"] for g in _types], log="auto",
        yaxis_title="median factor off the bound, either way",
        title="How far each of the question's types runs from its bound (1 = exact), median "
              "over its operators") if _types else mo.md(
        "No operator has both a bound and a measured time, so there is no measured / bound "
        "to show.")])
    return


@app.cell
def _(all_predictions, decode_profiles):
    mo.stop(INSTRUMENTS.gate("operators", *all_predictions) is not None)
    _p = decode_profiles[SCENARIO["small_batch"]]
    decode_small_figure, decode_large_figure = (figures.operator_roofline_figure(
        decode_profiles[_b].rows, decode_profiles[_b].roof, decode_profiles[_b].main_precision,
        title=f"Every operator of a batch-{_b} decode step, measured on {_p.device}")
        for _b in (SCENARIO["small_batch"], SCENARIO["large_batch"]))
    _drawn, _left = figures.plottable(_p.rows)
    mo.vstack([mo.md("**The decode steps you profiled in Part 1**, every operator against "
                     "its own bound:"), decode_small_figure,
        mo.md(f"{len(_drawn)} operators drawn (hover for name, shapes, FLOPs, bytes, time); "
              f"{len(_left)} more move data without arithmetic (AI 0) or are views: they "
              "are in the time totals, not on the log axis. The same step at batch "
              f"{SCENARIO['large_batch']}: where did the weight GEMMs move?"),
        decode_large_figure])
    return


@app.cell
def _(all_predictions, best_predicted_prediction, case_profile, lab):
    mo.stop(INSTRUMENTS.gate("operators", *all_predictions) is not None)
    _errors = [g for g in case_profile.error_by_type() if g["op_type"] in BEST_OPTIONS.values()]
    mo.stop(not _errors)
    _best = _errors[0]
    # graded on the question's own case only, and only where the bounds can rank operators
    _why_not = case_profile.roof_too_low() or (
        None if case_profile.label == QUESTION_CASE_LABEL else
        f"this profile is {case_profile.label}, not the question's case "
        f"({QUESTION_CASE_LABEL}): pick that case and press the button to be graded on it.")
    mo.vstack([quiz.compare(best_predicted_prediction, _best["op_type"],
                            lab=None if _why_not else lab, actual_label=(
        f"{your_model.option_label(BEST_OPTIONS, _best['op_type'])}: a median "
        f"{_best['median_factor_off']:.2g}× off the bound ({case_profile.label})")),
        *([mo.callout(mo.md(f"Not recorded for grading: {_why_not}"), kind="warn")]
          if _why_not else [])])
    return


@app.cell
def _(all_predictions, lab):
    mo.stop(INSTRUMENTS.gate("operators", *all_predictions) is not None)
    quiz.explain_form(
        lab, "lab07.best_predicted",
        observe_label="Which operators have error % near 0, which in the hundreds or more? "
                      "Try the decode step too: how do the errors change?",
        explain_label="Why does the roofline predict large GEMMs well and tiny elementwise "
                      "operators badly? What is in their measured time that the bound leaves out?")
    return


@app.cell
def _(all_predictions):
    mo.stop(INSTRUMENTS.gate("operators", *all_predictions) is not None)
    style.math_peek("error % and lost time", r"""
    For each operator $i$, with its roofline bound $\hat T_i$ and measured median $T_i$:

    $$\text{error}_i = \frac{T_i - \hat T_i}{\hat T_i}\times 100\,\%,\qquad
    \text{lost}_i = T_i - \hat T_i\ \text{[s]}$$

    Sort by lost time to know what to optimise first: an operator 50× over a 1 µs bound loses
    less than one 2× over a 10 ms bound. A fixed minimum $c$ per operator (a GPU kernel's
    few µs) gives $T_i \approx \hat T_i + c$, so $\text{error}_i \approx c / \hat T_i$: huge
    for small operators, negligible for large ones. On a CPU a small operator's operands can
    still sit in cache, so it may beat its DRAM bound (negative error). Launch and dispatch
    are measured in the overhead row, not in $T_i$.
    """)
    return


@app.cell
def _(all_predictions):
    mo.stop(INSTRUMENTS.gate("operators", *all_predictions) is not None)
    mo.md("""
    **Try the failure state.** Pick the decoder's decode step, batch 256 and context 32,768,
    and press the button: the KV cache alone needs tens of GB. The profiler refuses before
    allocating anything and says by how much; lower the batch or the context and press again.
    """)
    return


@app.cell
def _():
    mo.md("""
    ## Part 3 · Change one thing
    """)
    return


@app.cell
def _():
    style.scenario_card(
        "Ravi Menon", "inference engineer",
        "Four proposals for the batch-1 decode step: batch more users, store the model in "
        "bf16, swap our attention for PyTorch's fused scaled_dot_product_attention, or run it "
        "through torch.compile. Part 1 asked what bf16 does: measure it, then the others.")
    return


@app.cell
def _(all_predictions):
    # shown with the instrument it drives: a picker above a closed gate would drive nothing
    mo.stop(INSTRUMENTS.gate("change", *all_predictions) is not None)
    change_picker = mo.ui.dropdown(
        options={v: k for k, v in tiny_models.CHANGES.items()}, value="fp32 → bf16",
        label="Change to measure (from the batch-1 fp32 decode step)")
    change_picker
    return (change_picker,)


@app.cell
def _(all_predictions, device_picker):
    _launch_us = units.format_value(roofline.DEFAULT_LAUNCH_OVERHEAD_US)
    _wait = INSTRUMENTS.gate("change", *all_predictions)
    mo.stop(_wait is not None, _wait)
    _base = decode_case(SCENARIO["small_batch"])
    try:
        change_predicted = {c: tiny_models.predicted_ratio(c, device_picker.value, _base)
                            for c in tiny_models.CHANGES}
        change_with_launches = {
            c: tiny_models.predicted_ratio_with_launches(c, device_picker.value, _base)
            for c in tiny_models.CHANGES}
        _shown = [c for c, r in change_predicted.items() if r is not None]
        _out = mo.vstack([figures.grouped_bar_figure(
            [tiny_models.CHANGES[c] for c in _shown],
            {"roofline alone": [change_predicted[c] for c in _shown],
             f"roofline + {_launch_us} µs per kernel": [change_with_launches[c] for c in _shown]},
            yaxis_title="new step time / old (predicted)", log="auto",
            title=f"The roofline's answer for each change, {hardware.get(device_picker.value).name}"),
            mo.md("torch.compile is not on the chart: what it saves depends on what the "
                  "compiler fuses, which the roofline does not know. Measure it.")])
    except KeyError as _exc:
        change_predicted = change_with_launches = None
        _out = style.error_callout(device_error(_exc))
    _out
    return change_predicted, change_with_launches


@app.cell
def _(all_predictions):
    mo.stop(INSTRUMENTS.gate("change", *all_predictions) is not None)
    change_button = live.run_button("Measure the change on this machine")
    _why = measure.measurement_unavailable("The comparison of Prediction 5")
    mo.vstack([change_button, *([mo.callout(mo.md(_why), kind="warn")] if _why else [])])
    return (change_button,)


@app.cell
def _(LIVE, change_button, change_picker, lab, run_settings):
    mo.stop(not change_button.value, mo.callout(mo.md(live.IDLE_MESSAGE), kind="neutral"))
    change_info = measure.detect()
    _base = dict(phase="decode", batch=SCENARIO["small_batch"], context=LIVE["context"],
                 precision=SCENARIO["precision"], attention=SCENARIO["attention"])
    _change = change_picker.value
    _settings = run_settings()
    _threads = _settings.threads or None

    def _profile(case, progress, offset):
        model, inputs = measure.builtin_case("decoder", device=change_info, **case)
        prof = measure.profile_model(
            model, inputs, device=change_info, budget_s=_settings.budget / 2, threads=_threads,
            roofline_budget_s=LIVE["roofline_budget_s"], progress=lambda d, t, label:
            progress(offset + min(d, 7), 20, label),
            label=f"{case['precision']}, batch {case['batch']}, {case['attention']} attention")
        return prof, (lambda: model(*inputs))

    def _job(progress):
        if _change == "compile":
            _why = measure.compile_unavailable(change_info)
            if _why:  # say it before building anything, with the way out
                raise measure.Unsupported(f"{_why} Pick another change above (batch, bf16 or "
                                          "scaled_dot_product_attention) to measure it.")
            model, inputs = measure.builtin_case("decoder", device=change_info, **_base)
            progress(1, 20, "compiling (the first call; a minute or more)")
            timed = measure.time_compiled(model, inputs, device=change_info,
                                          budget_s=_settings.budget, threads=_threads)
            return {"change": _change, "ratio": timed["ratio"], "compile_s": timed["compile_s"],
                    "old_s": timed["eager_s"], "new_s": timed["compiled_s"], "profiles": None,
                    "threads": timed["eager"].threads}
        old, run_old = _profile(_base, progress, 0)
        new, run_new = _profile(tiny_models.changed(_change, _base), progress, 8)
        # the ratio from whole passes timed in alternation: one profile a minute after the
        # other lets a busy machine's load land on one side only
        progress(17, 20, "timing both steps in alternation")
        pair = measure.time_ratio(run_old, run_new, device=change_info,
                                  budget_s=_settings.budget, threads=_threads, op="step")
        return {"change": _change, "ratio": pair.ratio, "ratios": pair.ratios,
                "spread": pair.spread,
                "old_s": pair.old.median_s, "new_s": pair.new.median_s,
                "profiles": (old, new), "threads": old.threads}

    change_result = live.gated_run(change_button, _job, total=20, info=change_info,
                                   title=f"Measuring: {tiny_models.CHANGES[_change]}")
    lab.record("result", "lab07.measured_change", {
        "device": change_info.name, "change": _change, "ratio": change_result["ratio"],
        "old_s": change_result["old_s"], "new_s": change_result["new_s"]})
    measured_on(change_info, change_result["threads"])
    return (change_result,)


@app.cell
def _(all_predictions, change_predicted, change_result, change_with_launches):
    mo.stop(INSTRUMENTS.gate("change", *all_predictions) is not None)
    _c = change_result["change"]
    _cards = style.metric_cards(your_model.change_cards(
        change_result, tiny_models.CHANGES[_c], (change_predicted or {}).get(_c),
        (change_with_launches or {}).get(_c)))
    _figs = []
    if change_result["profiles"]:
        _old, _new = change_result["profiles"]
        _figs = [figures.before_after_figure(
            _old.by_op_type(), _new.by_op_type(), labels=(f"before: {_old.label}",
                                                          f"after: {_new.label}"),
            title=f"Measured time per operator type: {tiny_models.CHANGES[_c]}")]
    mo.vstack([_cards, *_figs])
    return


@app.cell
def _(all_predictions, bf16_ratio_prediction, change_result, lab):
    mo.stop(INSTRUMENTS.gate("change", *all_predictions) is not None)
    mo.stop(change_result["change"] != "precision", mo.md(
        "Your prediction was for fp32 → bf16: pick that change and measure to compare."))
    # recorded for grading only when the rounds agree within the item's band
    _steady = change_result.get("spread", 1.0) <= misconceptions.tolerance("lab07.bf16_ratio")
    mo.vstack([mo.md("**Against the measurement** on this machine (the roofline's ratio is in "
                     "the cards above):"),
               quiz.compare(bf16_ratio_prediction, round(change_result["ratio"], 3), units="×",
                            lab=lab if _steady else None),
               *([] if _steady else [mo.callout(mo.md(
                   f"Not recorded for grading: the rounds of this measurement disagree by "
                   f"{change_result['spread']:.2f}× (the machine is busy). Measure again when "
                   "it is quieter: the ratio is recorded once its rounds agree."),
                   kind="warn")])])
    return


@app.cell
def _(all_predictions, lab):
    mo.stop(INSTRUMENTS.gate("change", *all_predictions) is not None)
    quiz.explain_form(
        lab, "lab07.bf16_ratio",
        observe_label="What did bf16 do to the weight GEMMs and to the elementwise ops? Try "
                      "the other changes: which one moved the step most, and which types moved?",
        explain_label="Why does halving the bytes not always halve the time? (Think: does this "
                      "machine compute in bf16 natively, and what else is in the step?)")
    return


@app.cell
def _(all_predictions):
    _launch_us = units.format_value(roofline.DEFAULT_LAUNCH_OVERHEAD_US)
    mo.stop(INSTRUMENTS.gate("change", *all_predictions) is not None)
    style.math_peek("the roofline's ratio for one change", r"""
    The roofline predicts a step as the sum of its operators' bounds,
    $\hat T = \sum_i \max(F_i/\pi_p,\ B_i/\beta)$. A change moves $F_i$, $B_i$ or $\pi_p$:

    - **bf16**: $b$ halves ($B_i \to B_i/2$) and $\pi_p$ becomes the bf16 peak; a
      memory-bound step gives $\hat T_\text{new}/\hat T_\text{old} \approx 1/2$.
    - **batch** $1 \to 64$: the weights' bytes stay, the KV cache's grow $64\times$, FLOPs
      grow $64\times$.
    - **fused attention**: the copies of K and V to every query head ($2\,B\,H\,S_\text{kv}\,d_h$
      elements written, then read again by $QK^\top$ and $PV$: at batch 1 about a quarter of
      the step's bytes) and the score matrix ($B\,H\,S_q\,S_\text{kv}$ elements, written and
      read twice; at one query token it is tiny) leave the bytes: the fused kernel reads the
      $H_\text{kv}$ heads of the cache directly.
    - **torch.compile**: fuses chains of small operators into fewer kernels (fewer bytes
      between them, fewer dispatches): outside the roofline's terms, so measured only.

    The measured ratio adds what the bound leaves out: a CPU without native bf16 math converts
    every element, and the overhead per operator does not shrink with the bytes. With $k$
    kernels at $c$ = """ + _launch_us + r""" µs each,
    $(\hat T_\text{new} + k\,c) / (\hat T_\text{old} + k\,c)$:
    close to 1 when $k\,c \gg \hat T$, as for a batch-1 step on a GPU in eager mode. A CPU
    pays no kernel launch: where its step streams the weights from DRAM and it computes bf16
    natively, the bytes set the time and the ratio moves toward 1/2.
    """)
    return


@app.cell
def _(all_predictions):
    _gate = style.takeaways_gate(all_predictions)
    mo.stop(_gate is not None, _gate)
    _c = tiny_models.TINY_DECODER
    style.takeaways([
        "Every operator of a forward pass has FLOPs and compulsory bytes, so it has an AI and a "
        "place on the roofline: profile_model (or labs-profile) puts all of them there, with "
        "FLOPs from torch's own counter and the time measured where each one runs.",
        "At batch 1, a decode step reads every layer's weights and the LM head once to "
        "produce one token per sequence: weight GEMMs at about 2/b FLOP/B "
        f"({_c.weight_bytes_read('fp32') / 1e6:.0f} MB read per step of the "
        f"{_c.weight_bytes('fp32') / 1e6:.0f} MB allocated for this model in fp32: of the "
        "embedding table only the tokens' rows, unless it is tied to the LM head), "
        "memory-bound on every device.",
        "Batching raises the weight GEMMs' AI but not attention's: every sequence reads its "
        "own KV cache, so at large batch the KV cache, not the weights, fills the step.",
        "The roofline predicts large operators well and small ones badly, in both directions "
        "(cache on a CPU, a minimum kernel time on a GPU). Launch and dispatch cost is outside "
        "its terms: the overhead row is that time, most of a batch-1 decode step on a GPU in "
        "eager mode, and real time to win back (fusion, CUDA graphs, compilation).",
        "Sort by lost time (measured − bound), not by error %: what to optimise first is "
        "where the most seconds are above their roof.",
        "A change that halves the bytes halves the time only where the bytes set the time and "
        "the hardware computes natively in the new format: on a GPU in eager mode a batch-1 "
        "step's launches do not shrink, so bf16 moves it little; a CPU streaming its weights "
        "from DRAM can come close to half. Measure before you believe it.",
    ])
    return


if __name__ == "__main__":
    app.run()
