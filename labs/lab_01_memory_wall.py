import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", css_file="labs.css")

with app.setup:
    import marimo as mo

    from labs.core import (figures, formulas, hardware, live, measure, quiz, reveal, roofline,
                           style)
    from labs.core import units, utilization
    from labs.core.course.lessons import memory_wall

    LAB_ID = "lab01"
    # The engineer's kernel in Parts 1 and 2: one decode step of a 16-request batch through an
    # 8192 x 8192 weight matrix, stored and computed in bf16 (every device in the registry has
    # a bf16 rate, so the scenario reads the same whichever device is picked).
    SCENARIO = {"m": 16, "n": 8192, "k": 8192, "precision": "bf16"}
    # Part 4 compares one GEMM across two fixed devices: a 256-token prefill chunk through an
    # 8192 x 8192 weight (34 GFLOP, 128 output tiles of 128 x 128 for 132 SMs), big enough
    # that the roofline, not launch overhead or idle SMs, sets its time on both devices (a
    # 512^3 GEMM is ~0.5 us of work in 16 tiles: overhead-bound). Part 5 quotes a profiler.
    OVERLAY_SCENARIO = {"m": 256, "n": 8192, "k": 8192, "precision": "bf16",
                        "edge": "jetson-orin-nx-16gb", "datacenter": "h100-sxm"}
    PROFILER = {"flop_util": 0.03, "bandwidth": 0.90}
    LEVER_TILE = 64  # Priya's tiles today (Part 2)
    # The choices of Predictions 1, 2 and 5: the label a student reads -> the value recorded.
    WHICH_ROOF_OPTIONS = {
        "The memory roof: it waits for bytes from memory": roofline.MEMORY,
        "The compute roof: the tensor cores are saturated": roofline.COMPUTE,
        "Neither: a good kernel reaches peak, this one is badly written": "broken",
    }
    # Prediction 2's values are core's lever names (in ai_levers' order, after the baseline).
    LEVER_OPTIONS = dict(zip(
        [f"{roofline.LEVER_TILE_FACTOR}x larger tiles (more reuse per byte)",
         f"{roofline.LEVER_BATCH_FACTOR}x batch: more requests share each weight read",
         "fp8 weights: half the weight bytes, same bf16 math",
         f"+{roofline.LEVER_CLOCK_FACTOR - 1:.0%} core clock",
         f"{roofline.LEVER_CAPACITY_FACTOR}x memory capacity"],
        [lv.name for lv in roofline.ai_levers(1, 1, 1, "h100-sxm", "bf16")[1:]]))
    YARDSTICK_OPTIONS = {
        f"FLOP utilisation ({PROFILER['flop_util']:.0%} of peak FLOP/s): there is "
        f"~{1 / PROFILER['flop_util']:.0f}x headroom": "flop_util",
        f"Bandwidth utilisation ({PROFILER['bandwidth']:.0%}): the kernel is close to its "
        "roof": "bandwidth",
        "Both equally: average the two": "both",
    }
    # The device and precision every question names, and the pickers' opening values: the
    # instructor copy's reveal answers are computed for these (LABS_SPEC §4.2b).
    OPENING = {"device": "h100-sxm", "precision": "bf16"}
    POW2 = [2**i for i in range(19)]  # 1 ... 262144: the GEMM size sliders
    # The ways out of the failure states, said the same way wherever they occur.
    PICK_PRECISION = ("Pick a compute precision this device has (the picker at the top of the "
                      "lab), or another device, and the instrument comes back.")
    SHRINK_GEMM = ("Move M, N or K back down (or pick a device with more memory) and the "
                   "instrument comes back.")
    # What each answer follows from, and what each instrument shows (LABS_SPEC §3): an
    # instrument opens once every prediction whose quantities it shows is locked. Cases:
    # "decode" is Priya's 16-token GEMM, "levers" its changed versions, "square" an N^3 GEMM,
    # "prefill" Part 4's 256-token chunk, "profiled" Part 5's kernel, "ridge" a chip's pi/beta
    # (an input every question gives through the chip's specs, never an answer).
    INSTRUMENTS = quiz.Instruments(
        answers={
            "lab01.which_roof": ["regime:decode", "intensity:decode"],
            "lab01.levers": ["choice:levers", "intensity:levers"],
            "lab01.crossover_n": ["count:crossover", "intensity:square", "regime:square"],
            "lab01.other_device": ["regime:prefill", "intensity:prefill"],
            "lab01.yardstick": ["choice:yardstick", "intensity:profiled", "regime:profiled"],
        },
        instruments={
            # the picked chip's spec sheet: memory, bandwidth, peak and their ridge
            "device": ["bytes:capacity", "bandwidth:spec", "throughput:peak", "intensity:ridge"],
            # Priya's GEMM and its decode GEMV, both fixed, on the picked device's roofline;
            # Prediction 1's comparison, reflection and math peek (her GEMM's AI and ridge)
            "priya_gemm": ["intensity:decode", "intensity:gemv", "intensity:ridge",
                           "regime:decode", "regime:gemv", "throughput:attainable",
                           "time:decode", "share:flop_util_bound", "bytes:decode",
                           "bandwidth:spec"],
            # Priya's GEMM today (the tiled baseline) and each lever alone ("+20% clock");
            # Prediction 2's comparison and peek quote her GEMM's AI, which answers
            # Prediction 1 against the ridge on the spec sheet
            "levers": ["intensity:decode", "intensity:levers", "intensity:ridge",
                       "regime:decode", "regime:levers", "ratio:levers", "share:clock"],
            # square GEMMs on the picked device's roofline, and their N*; Prediction 3's
            # reflection and peek (the ridge, N* in other precisions)
            "crossover": ["count:crossover", "intensity:square", "intensity:ridge",
                          "regime:square", "throughput:roof", "bandwidth:spec",
                          "bytes:capacity", "share:axis"],
            # M x 8192 x 8192 for M from 16 (Priya's) to 16,384 (8192^3 is square) in any
            # precision, on several chips: every GEMM case of the lab but the profiled kernel.
            # Prediction 4's comparison, reflection and peek go with it: the prefill chunk's AI
            # and "AI ~ 2M/b" give Priya's decode GEMM (Predictions 1, 2) in one step
            "overlay": ["intensity:decode", "intensity:levers", "intensity:square",
                        "intensity:prefill", "intensity:ridge", "regime:decode",
                        "regime:levers", "regime:square", "regime:prefill",
                        "throughput:roof", "bandwidth:spec", "bytes:capacity", "share:axis"],
            # the kernel the profiler's two numbers place: their ratio sets any AI against
            # any chip's ridge (3% at 1% is 3 x ridge, bf16's N* on every chip), so it
            # answers every question about AI and regime. Prediction 5's comparison,
            # reflection and peek (AI = ridge x FU / BWU, rho) go with it
            "yardstick": ["intensity", "regime", "share:utilisation", "throughput:profiled",
                          "bandwidth:profiled", "bytes:capacity", "ratio:rho"],
            # any GEMM, device and precision: it answers every question about AI and regime
            "explorer": ["intensity", "regime", "throughput", "time", "share", "bytes",
                         "bandwidth"],
            # square GEMMs timed on this machine against its roofline
            "measure": ["intensity:square", "regime:square", "throughput:measured",
                        "time:measured", "ratio:measured", "bandwidth:measured",
                        "bytes:measured", "share:axis"],
        })


@app.cell
def _():
    style.lab_header(
        "Lab 1 · The Memory Wall",
        "A kernel engineer's GEMM runs at a small fraction of peak. Find the roof it hits, "
        "and what would move it.",
        goals=[
            "Compute a kernel's arithmetic intensity (AI) from its shape and precision and "
            "place it on a roofline.",
            "Decide memory-bound vs compute-bound by comparing AI with the ridge point of one "
            "precision (dense peak).",
            "Tell which changes raise AI and which do not (tiles, batching, bytes per element, "
            "clock, capacity).",
            "Predict the square-GEMM size N* where a GEMM crosses the ridge, and whether a "
            "kernel keeps its regime when it moves to another chip.",
            "Pick the profiler number that says how much faster a kernel can still get, and "
            "say why that one.",
        ],
        minutes=40,
        reading=[
            ("Williams, Waterman, Patterson: Roofline (CACM 2009)",
             "https://doi.org/10.1145/1498765.1498785"),
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
    device_picker = style.dropdown_on(hardware.picker_options(), OPENING["device"],
                                      label="Device", searchable=True)
    device_picker
    return (device_picker,)


@app.cell
def _():
    precision_picker = mo.ui.dropdown(
        options=list(hardware.PRECISIONS), value=OPENING["precision"],
        label="Compute precision (also the storage format)")
    precision_picker
    return (precision_picker,)


@app.cell
def _(device_picker, precision_picker):
    # The chip's spec sheet answers no question by itself: it opens with the lab.
    _wait = INSTRUMENTS.gate("device")
    mo.stop(_wait is not None, _wait)
    _d = hardware.get(device_picker.value)
    try:
        _cards = style.metric_cards(memory_wall.device_cards(_d, precision_picker.value))
    except KeyError as _exc:
        _cards = style.error_callout(
            style.error_message(_exc) + "\n\nThe instruments below need a precision this device has: "
            "pick another precision or device.")
    mo.vstack([mo.md(f"**{_d.name}** · {_d.device_class}"), _cards])
    return


@app.cell
def _():
    mo.md("""
    ## Part 1 · Which roof does the GEMM hit?
    """)
    return


@app.cell
def _():
    _d = hardware.get(OPENING["device"])
    _g = formulas.gemm(SCENARIO["m"], SCENARIO["n"], SCENARIO["k"], SCENARIO["precision"])
    # What the engineer measured: 90% of the best this shape can do (a stated assumption).
    _measured = 0.9 * utilization.flop_utilization_bound(_g.ai, _d, SCENARIO["precision"])
    style.scenario_card(
        "Priya Raman", "kernel engineer",
        f"Our decode-step GEMM (M = {SCENARIO['m']} tokens, N = K = {SCENARIO['n']}, "
        f"{SCENARIO['precision']}) runs at {units.format_value(100 * _measured)}% of the "
        f"{_d.name}'s {SCENARIO['precision']} peak. I have tried three tiling schemes and "
        "nothing moves it. Is the GPU throttling, or is the kernel hitting some roof?")
    return


@app.cell
def _(lab):
    get_which_roof, set_which_roof = quiz.lock_state(lab, "lab01.which_roof")
    return get_which_roof, set_which_roof


@app.cell
def _(get_which_roof, lab, set_which_roof):
    which_roof_form = quiz.choice_form(
        lab, "lab01.which_roof",
        question=f"**Prediction 1.** Which roof limits Priya's GEMM on the "
                 f"{hardware.get(OPENING['device']).name}?",
        options=WHICH_ROOF_OPTIONS, locked=get_which_roof(), on_lock=set_which_roof)
    quiz.prediction_panel(which_roof_form, get_which_roof())
    return


@app.cell
def _(get_which_roof, lab):
    _d, _p = hardware.get(OPENING["device"]), SCENARIO["precision"]
    _ai = formulas.gemm(SCENARIO["m"], SCENARIO["n"], SCENARIO["k"], _p).ai
    _ref = roofline.regime(_ai, _d, _p)
    _label = next(k for k, v in WHICH_ROOF_OPTIONS.items() if v == _ref)
    which_roof_prediction = get_which_roof() or reveal.reference(
        lab, "lab01.which_roof", _ref, label=_label,
        explanation=memory_wall.which_roof_explanation(SCENARIO["m"], _ai, _d, _p))
    reveal.card(which_roof_prediction)
    return (which_roof_prediction,)


@app.cell
def _(device_picker, which_roof_prediction):
    _wait = INSTRUMENTS.gate("priya_gemm", which_roof_prediction)
    mo.stop(_wait is not None, _wait)
    # Priya's GEMM as she runs it (its shape and bf16 stay fixed: only the device moves) and
    # the decode GEMV of the same weights, one token at a time.
    _p = SCENARIO["precision"]
    scenario_cost = formulas.gemm(SCENARIO["m"], SCENARIO["n"], SCENARIO["k"], _p)
    scenario_bounds = roofline.time_bounds(scenario_cost.flops, scenario_cost.bytes,
                                           device_picker.value, _p)
    gemv_cost = formulas.gemv(SCENARIO["n"], SCENARIO["k"], _p, name="GEMV (decode, 1 token)")
    gemv_bounds = roofline.time_bounds(gemv_cost.flops, gemv_cost.bytes, device_picker.value,
                                       _p)
    return gemv_bounds, gemv_cost, scenario_bounds, scenario_cost


@app.cell
def _(device_picker, gemv_cost, scenario_bounds, scenario_cost):
    _hover = memory_wall.gemm_hover(scenario_cost, scenario_bounds)
    scenario_figure = figures.roofline_figure(
        [(device_picker.value, SCENARIO["precision"])],
        [figures.Point("Priya's GEMM", scenario_cost.ai, hover=_hover),
         figures.Point("GEMV (decode)", gemv_cost.ai)],
        title=f"Priya's {SCENARIO['precision']} GEMM and its decode GEMV on the "
              f"{hardware.get(device_picker.value).name}")
    scenario_figure
    return


@app.cell
def _(device_picker, scenario_bounds, scenario_cost):
    _d, _p = device_picker.value, SCENARIO["precision"]
    scenario_regime = roofline.regime(scenario_cost.ai, _d, _p)
    scenario_metrics = memory_wall.gemm_numbers(scenario_cost, scenario_bounds, _d, _p)
    memory_wall.regime_verdict("Priya's GEMM", scenario_regime, memory_wall.gemm_cards(
        scenario_metrics, scenario_cost, scenario_bounds, _d, _p, scenario_regime,
        footprint_of="A, B and C: "))
    return


@app.cell
def _(device_picker, gemv_bounds, gemv_cost):
    _d, _p = device_picker.value, SCENARIO["precision"]
    mo.vstack([
        mo.md(f"**Decode case.** Generating one token multiplies the same N × K weights by one "
              f"vector: a GEMV. Every weight is read once and used for one multiply-add."),
        style.metric_cards(memory_wall.gemv_cards(gemv_cost, gemv_bounds, _d, _p))])
    return


@app.cell
def _(lab, which_roof_prediction):
    mo.stop(INSTRUMENTS.gate("priya_gemm", which_roof_prediction) is not None)
    _d, _p = hardware.get(OPENING["device"]), SCENARIO["precision"]
    _g = formulas.gemm(SCENARIO["m"], SCENARIO["n"], SCENARIO["k"], _p)
    _actual = roofline.regime(_g.ai, _d, _p)
    _label = next(k for k, v in WHICH_ROOF_OPTIONS.items() if v == _actual)
    quiz.compare(which_roof_prediction, _actual, lab=lab,
                 actual_label=memory_wall.which_roof_actual(_label, _g.ai, _d, _p))
    return


@app.cell
def _(lab, which_roof_prediction):
    mo.stop(INSTRUMENTS.gate("priya_gemm", which_roof_prediction) is not None)
    quiz.explain_form(
        lab, "lab01.which_roof",
        observe_label="What do the cards show for Priya's GEMM on the "
                      f"{hardware.get(OPENING['device']).name}: its AI, the ridge, the "
                      "FLOP-utilisation bound? Where does the decode GEMV sit?",
        explain_label="Why can no tiling scheme fix this kernel? Is the GPU throttling?")
    return


@app.cell
def _(which_roof_prediction):
    mo.stop(INSTRUMENTS.gate("priya_gemm", which_roof_prediction) is not None)
    _g = formulas.gemm(SCENARIO["m"], SCENARIO["n"], SCENARIO["k"], SCENARIO["precision"])
    _v = formulas.gemv(SCENARIO["n"], SCENARIO["k"], SCENARIO["precision"])
    style.math_peek("AI, the two roofs and the time bounds", r"""
    A GEMM $C_{M\times N} = A_{M\times K}B_{K\times N}$ does $2MNK$ FLOPs (one multiply-add = 2
    FLOPs) and must move at least every operand once, $b$ bytes per element:

    $$\text{AI} = \frac{2MNK\ \text{[FLOP]}}{(MK + KN + MN)\,b\ \text{[B]}}\quad
    \text{[FLOP/B]}$$

    With a dense peak $\pi_p$ for precision $p$ [FLOP/s] and bandwidth $\beta$ [B/s]:

    $$T_c = \frac{2MNK}{\pi_p}\ \text{[s]},\qquad T_m = \frac{\text{bytes}}{\beta}\
    \text{[s]},\qquad T \ge \max(T_c, T_m)$$

    $T_c + T_m$ (no overlap at all) is only an estimate, not a bound: a small kernel that
    leaves SMs idle or waits on memory latency can take longer than both together.

    $$P_{\text{attainable}} = \min(\pi_p,\ \text{AI}\cdot\beta)\ \text{[FLOP/s]},\qquad
    \text{ridge}_p = \frac{\pi_p}{\beta}\ \text{[FLOP/B]},\qquad
    \text{FLOP-utilisation bound} = \min\!\left(1, \frac{\text{AI}}{\text{ridge}_p}\right)$$

    The GEMV ($M = 1$) has $\text{AI} = \frac{2NK}{(K + NK + N)b} \approx \frac{2}{b}$.
    """ + memory_wall.decode_ai_note(SCENARIO, _g.ai, _v.ai))
    return


@app.cell
def _():
    mo.md("""
    ## Part 2 · What actually raises AI?
    """)
    return


@app.cell
def _():
    style.scenario_card(
        "Priya Raman", "kernel engineer",
        "Five proposals are on my desk for the decode GEMM (M = "
        f"{SCENARIO['m']}, N = K = {SCENARIO['n']}, {LEVER_TILE} × {LEVER_TILE} tiles today): "
        f"bigger tiles, batching {roofline.LEVER_BATCH_FACTOR}x more requests together, fp8 "
        "weights (half the weight bytes, dequantised to the same bf16 math), the SKU with a "
        f"{roofline.LEVER_CLOCK_FACTOR - 1:.0%} higher core clock, and the part with "
        f"{roofline.LEVER_CAPACITY_FACTOR}x the memory. Which one raises the arithmetic "
        "intensity the most?")
    return


@app.cell
def _(lab):
    get_levers, set_levers = quiz.lock_state(lab, "lab01.levers")
    return get_levers, set_levers


@app.cell
def _(get_levers, lab, set_levers):
    levers_form = quiz.choice_form(
        lab, "lab01.levers",
        question="**Prediction 2.** Which single change raises the AI of Priya's GEMM the most?",
        options=LEVER_OPTIONS, locked=get_levers(), on_lock=set_levers)
    quiz.prediction_panel(levers_form, get_levers())
    return


@app.cell
def _(get_levers, lab):
    _levers = roofline.ai_levers(SCENARIO["m"], SCENARIO["n"], SCENARIO["k"], OPENING["device"],
                                 SCENARIO["precision"], tile=LEVER_TILE)
    _best = roofline.best_lever(_levers).name
    levers_prediction = get_levers() or reveal.reference(
        lab, "lab01.levers", _best, label=next(k for k, v in LEVER_OPTIONS.items() if v == _best),
        explanation=memory_wall.levers_explanation(_levers))
    reveal.card(levers_prediction)
    return (levers_prediction,)


@app.cell
def _():
    tile_slider = mo.ui.slider(steps=[8, 16, 32, 64, 128, 256], value=LEVER_TILE,
                               label="Output tile edge T of Priya's kernel today",
                               show_value=True, full_width=True)
    tile_slider
    return (tile_slider,)


@app.cell
def _(device_picker, levers_prediction, tile_slider, which_roof_prediction):
    _wait = INSTRUMENTS.gate("levers", which_roof_prediction, levers_prediction)
    mo.stop(_wait is not None, _wait)
    # Priya's GEMM (her shape, bf16) with each lever alone, on the picked device's ridge
    levers = roofline.ai_levers(SCENARIO["m"], SCENARIO["n"], SCENARIO["k"],
                                device_picker.value, SCENARIO["precision"],
                                tile=tile_slider.value)
    return (levers,)


@app.cell
def _(levers, tile_slider):
    _best = roofline.best_lever(levers)
    _t = tile_slider.value
    _ideal = formulas.gemm(SCENARIO["m"], SCENARIO["n"], SCENARIO["k"], SCENARIO["precision"]).ai
    levers_figure = figures.bar_figure(
        [lv.name for lv in levers], [lv.rho for lv in levers],
        colors=["memory" if lv.rho < 1 else "compute" for lv in levers],
        annotations=[f"AI {units.format_value(lv.ai)} · ridge {units.format_value(lv.ridge)}"
                     for lv in levers],
        yaxis_title="ρ = AI / ridge",
        title=f"Priya's GEMM {SCENARIO['m']} × {SCENARIO['n']:,} × {SCENARIO['k']:,} "
              f"({SCENARIO['precision']}, dense ridge), {_t} × {_t} tiles: each lever alone",
        note=memory_wall.levers_note(_t, levers[0].ai, _ideal))
    mo.vstack([levers_figure, mo.md(
        f"Most AI for Priya's GEMM: **{_best.name}**. "
        "ρ = AI / ridge: below 1 (blue bars) memory-bound, 1 or more (orange) compute-bound.")])
    return


@app.cell
def _(levers):
    style.metric_cards(memory_wall.lever_cards(levers))
    return


@app.cell
def _(lab, levers_prediction, which_roof_prediction):
    mo.stop(INSTRUMENTS.gate("levers", which_roof_prediction, levers_prediction) is not None)
    _levers = roofline.ai_levers(SCENARIO["m"], SCENARIO["n"], SCENARIO["k"], OPENING["device"],
                                 SCENARIO["precision"], tile=LEVER_TILE)
    _best = roofline.best_lever(_levers).name
    _label = next(k for k, v in LEVER_OPTIONS.items() if v == _best)
    quiz.compare(levers_prediction, _best, lab=lab,
                 actual_label=memory_wall.levers_actual(_label, _levers, SCENARIO, LEVER_TILE))
    return


@app.cell
def _(lab, levers_prediction, which_roof_prediction):
    mo.stop(INSTRUMENTS.gate("levers", which_roof_prediction, levers_prediction) is not None)
    quiz.explain_form(
        lab, "lab01.levers",
        observe_label="Which levers change AI, which change only the ridge, which change "
                      "nothing? Move the tile edge: does a bigger tile help Priya's GEMM?",
        explain_label="Why do clock speed and memory capacity leave AI where it is? Why does "
                      "a bigger tile do so little while M is smaller than the tile?")
    return


@app.cell
def _(levers_prediction, which_roof_prediction):
    mo.stop(INSTRUMENTS.gate("levers", which_roof_prediction, levers_prediction) is not None)
    style.math_peek("bytes of a tiled GEMM", r"""
    A kernel computing $T\times T$ output tiles reads a $T\times K$ strip of A and a $K\times T$
    strip of B per tile; with nothing kept on chip between tiles, A is re-read once per tile
    column and B once per tile row:

    $$\text{bytes}(T) = b_a MK\left\lceil\tfrac{N}{T}\right\rceil + b_w KN\left\lceil\tfrac{M}{T}
    \right\rceil + b_a MN\ \text{[B]},\qquad \text{AI}(T) = \frac{2MNK}{\text{bytes}(T)}$$

    ($b_a$ bytes per activation and output element, $b_w$ per weight.) This is why the chart
    reads a lower AI than Part 1, which counts each matrix once. For $M \le T$ (decode
    batches), B is read once and $\text{AI} \approx 2M/b$ — batching sets it.

    This count assumes **no cache** between the kernel and memory: every re-read goes to HBM.
    For large $M$ and $N$ it would give $\text{AI} \approx T/b$, far too low: on a GPU the L2
    cache keeps the strips of A and B that a wave of tiles (one per SM) shares, so a large
    GEMM's HBM traffic is set by what fits in L2 (the wave's footprint), not by one tile's
    edge, and comes close to Part 1's each-matrix-once count (Lab 5 models and measures the
    levels). Here, with B read once, there is little for a cache to save.

    fp8 weights halve only $b_w$: the re-read activations and the output keep their bf16
    bytes, so AI rises by less than 2×. A faster clock raises $\pi_p$, so the ridge
    $\pi_p/\beta$ moves right and $\rho = \text{AI}/\text{ridge}$ falls. Capacity appears in
    neither formula.
    """)
    return


@app.cell
def _():
    mo.md("""
    ## Part 3 · The crossover size N*
    """)
    return


@app.cell
def _():
    style.scenario_card(
        "Priya Raman", "kernel engineer",
        "Next, our prefill GEMMs: they are big and "
        f"square. How large must a square N × N × N GEMM be, in {OPENING['precision']} on "
        f"the {hardware.get(OPENING['device']).name}, before the compute roof is the "
        "limit? I want one number to decide which layers are worth tuning for FLOPs.")
    return


@app.cell
def _(lab):
    get_crossover, set_crossover = quiz.lock_state(lab, "lab01.crossover_n")
    return get_crossover, set_crossover


@app.cell
def _(get_crossover, lab, set_crossover):
    # 10 to 10,000 covers every device's N* in the registry. A text box, not a log slider: a
    # slider's round steps (500, 700, 1,000 ...) cannot take a wrong model's own answer (591,
    # forgetting C's write), and its nearest step can land inside the graded band.
    crossover_form = quiz.numeric_form(
        lab, "lab01.crossover_n",
        question=f"**Prediction 3.** By the roofline, above which N is a square N × N × N "
                 f"{OPENING['precision']} GEMM compute-bound on the "
                 f"{hardware.get(OPENING['device']).name}? (the roofline's N*: the matrix "
                 "side where AI meets the ridge)",
        units="", lo=10, hi=10_000, integer=True,
        locked=get_crossover(), on_lock=set_crossover)
    quiz.prediction_panel(crossover_form, get_crossover())
    return


@app.cell
def _(get_crossover, lab):
    _ref = roofline.gemm_crossover_n(OPENING["device"], OPENING["precision"])
    crossover_prediction = get_crossover() or reveal.reference(
        lab, "lab01.crossover_n", round(_ref),
        explanation=memory_wall.crossover_explanation(OPENING["device"], OPENING["precision"]))
    reveal.card(crossover_prediction)
    return (crossover_prediction,)


@app.cell
def _(crossover_prediction, device_picker, precision_picker):
    _wait = INSTRUMENTS.gate("crossover", crossover_prediction)
    mo.stop(_wait is not None, _wait)
    try:
        crossover_n = roofline.gemm_crossover_n(device_picker.value, precision_picker.value)
        crossover_error = None
    except KeyError as _exc:
        crossover_n = None
        crossover_error = style.error_message(_exc) + "\n\n" + PICK_PRECISION
    return crossover_error, crossover_n


@app.cell
def _(crossover_error, crossover_n, device_picker, precision_picker):
    mo.stop(crossover_error is not None, style.error_callout(crossover_error))
    _p = precision_picker.value
    _pts = [figures.Point(f"N={_n}", formulas.gemm(_n, _n, _n, _p).ai)
            for _n in (128, 512, 2048, 8192)]
    crossover_figure = figures.roofline_figure(
        [(device_picker.value, _p)], _pts, label_points=True,
        title=f"Square GEMMs in {_p}: AI = 2N / (3b) grows with N; N* = "
              f"{round(crossover_n):,} sits at the ridge")
    crossover_figure
    return


@app.cell
def _(
    crossover_error,
    crossover_n,
    crossover_prediction,
    device_picker,
    precision_picker,
):
    mo.stop(crossover_error is not None)
    # the student's own N*, on the instrument's roof
    _guess = (None if crossover_prediction is None
              else max(1, round(float(crossover_prediction.value))))
    style.metric_cards(memory_wall.crossover_cards(
        crossover_n, device_picker.value, precision_picker.value, guess=_guess))
    return


@app.cell
def _(crossover_prediction, lab):
    mo.stop(crossover_prediction is None)
    quiz.compare(crossover_prediction,
                 round(roofline.gemm_crossover_n(OPENING["device"], OPENING["precision"])),
                 lab=lab, actual_label=f"the roofline's N* in {OPENING['precision']} on the "
                                       f"{hardware.get(OPENING['device']).name}")
    return


@app.cell
def _(crossover_prediction, lab):
    mo.stop(INSTRUMENTS.gate("crossover", crossover_prediction) is not None)
    quiz.explain_form(
        lab, "lab01.crossover_n",
        observe_label="What N* does the instrument show in bf16? Switch the precision to fp8, "
                      "then to fp32: which one moves N*, and which leaves it where it is?",
        explain_label="fp8 doubles the peak: why does its N* stay where bf16's is? What "
                      "moves N* in fp32 (CUDA cores, 4-byte elements)?")
    return


@app.cell
def _(crossover_prediction):
    mo.stop(INSTRUMENTS.gate("crossover", crossover_prediction) is not None)
    style.math_peek("the crossover N*", r"""
    A square GEMM ($M = N = K$) does $2N^3$ FLOPs and moves $3N^2 b$ bytes (A, B, C):

    $$\text{AI}(N) = \frac{2N^3\ \text{[FLOP]}}{3N^2 b\ \text{[B]}} = \frac{2N}{3b}\
    \text{[FLOP/B]}$$

    It meets the ridge $\pi_p / \beta$ [FLOP/B] where

    $$\frac{2N^*}{3b} = \frac{\pi_p}{\beta}\quad\Longrightarrow\quad
    N^* = \frac{3}{2}\, b\, \frac{\pi_p}{\beta}$$

    Units: $b$ [B/element] × ridge [FLOP/B] = FLOP per element; dividing by the $2/3$ FLOP per
    element of side that $2N^3 / 3N^2$ gives leaves $N^*$, a count of elements along one side.
    """ + memory_wall.crossover_examples("h100-sxm"))
    return


@app.cell
def _():
    mo.md("""
    ## Part 4 · Same kernel, other devices
    """)
    return


@app.cell
def _():
    _edge = hardware.get(OVERLAY_SCENARIO["edge"]).name
    _dc = hardware.get(OVERLAY_SCENARIO["datacenter"]).name
    _o = OVERLAY_SCENARIO
    style.scenario_card(
        "Sam Okafor", "ML platform lead",
        f"The robotics team profiled our prefill GEMM on the {_edge}: a chunk of {_o['m']} "
        f"tokens through an {_o['n']:,} × {_o['k']:,} weight (M = {_o['m']}, N = K = "
        f"{_o['n']:,}, {_o['precision']}): compute-bound, tensor cores busy. We are moving the "
        f"same model to the {_dc} in the datacenter. Same kernel, same shape: it stays "
        "compute-bound there, right?")
    return


@app.cell
def _(lab):
    get_other_device, set_other_device = quiz.lock_state(lab, "lab01.other_device")
    return get_other_device, set_other_device


@app.cell
def _(get_other_device, lab, set_other_device):
    _o = OVERLAY_SCENARIO
    other_device_form = quiz.choice_form(
        lab, "lab01.other_device",
        question=f"**Prediction 4.** On the {hardware.get(_o['datacenter']).name}, the same "
                 f"{_o['m']} × {_o['n']:,} × {_o['k']:,} {_o['precision']} GEMM is ...",
        options={"compute-bound, like on the edge device": "compute-bound",
                 "memory-bound": "memory-bound"},
        locked=get_other_device(), on_lock=set_other_device)
    quiz.prediction_panel(other_device_form, get_other_device())
    return


@app.cell
def _(get_other_device, lab):
    _o = OVERLAY_SCENARIO
    _p = _o["precision"]
    _ai = formulas.gemm(_o["m"], _o["n"], _o["k"], _p).ai
    _ref = roofline.regime(_ai, _o["datacenter"], _p)
    other_device_prediction = get_other_device() or reveal.reference(
        lab, "lab01.other_device", _ref,
        label="memory-bound" if _ref == "memory-bound" else "compute-bound, like on the edge device",
        explanation=memory_wall.other_device_explanation(_ai, _o["edge"], _o["datacenter"], _p))
    reveal.card(other_device_prediction)
    return (other_device_prediction,)


@app.cell
def _(
    crossover_prediction,
    levers_prediction,
    other_device_prediction,
    which_roof_prediction,
):
    # shown with the instrument they drive: controls above a closed gate would drive nothing
    _wait = INSTRUMENTS.gate("overlay", which_roof_prediction, levers_prediction,
                             crossover_prediction, other_device_prediction)
    mo.stop(_wait is not None, _wait)
    _labels = {v: k for k, v in hardware.picker_options().items()}
    overlay_devices = mo.ui.multiselect(
        options=hardware.picker_options(),
        value=[_labels[OVERLAY_SCENARIO["edge"]], _labels[OVERLAY_SCENARIO["datacenter"]]],
        label="Devices to overlay (plus the one picked at the top)", max_selections=4)
    overlay_m = mo.ui.slider(steps=[2**i for i in range(4, 15)], value=OVERLAY_SCENARIO["m"],
                             label=f"M (tokens in the chunk; N = K = {OVERLAY_SCENARIO['n']:,})",
                             show_value=True, full_width=True)
    mo.vstack([overlay_devices, overlay_m])
    return overlay_devices, overlay_m


@app.cell
def _(device_picker, overlay_devices, overlay_m, precision_picker):
    # behind the overlay's gate: it reads the controls that open with it
    _p = precision_picker.value
    _keys = list(dict.fromkeys([device_picker.value, *overlay_devices.value]))
    overlay_keys = [k for k in _keys if hardware.get(k).has(_p)]
    overlay_skipped = [hardware.get(k).name for k in _keys if not hardware.get(k).has(_p)]
    overlay_cost = formulas.gemm(overlay_m.value, OVERLAY_SCENARIO["n"], OVERLAY_SCENARIO["k"], _p)
    return overlay_cost, overlay_keys, overlay_skipped


@app.cell
def _(
    overlay_cost,
    overlay_keys,
    overlay_m,
    overlay_skipped,
    precision_picker,
):
    _p = precision_picker.value
    mo.stop(not overlay_keys,
            style.error_callout(memory_wall.no_rate_message(_p, overlay_skipped)))
    overlay_figure = figures.roofline_figure(
        [(k, _p) for k in overlay_keys],
        [figures.Point(f"M = {overlay_m.value:,}", overlay_cost.ai)],
        title=memory_wall.overlay_title(overlay_m.value, OVERLAY_SCENARIO, _p, overlay_cost.ai))
    style.figure_with_note(overlay_figure, memory_wall.not_drawn_note(_p, overlay_skipped))
    return


@app.cell
def _(overlay_cost, overlay_keys, precision_picker):
    mo.stop(not overlay_keys)
    style.metric_cards(memory_wall.overlay_cards(overlay_cost.ai, overlay_keys,
                                                 precision_picker.value))
    return


@app.cell
def _(
    crossover_prediction,
    lab,
    levers_prediction,
    other_device_prediction,
    which_roof_prediction,
):
    mo.stop(INSTRUMENTS.gate("overlay", which_roof_prediction, levers_prediction,
                             crossover_prediction, other_device_prediction) is not None)
    _o = OVERLAY_SCENARIO
    _p, _dc = _o["precision"], _o["datacenter"]
    _ai = formulas.gemm(_o["m"], _o["n"], _o["k"], _p).ai
    _actual = roofline.regime(_ai, _dc, _p)
    quiz.compare(other_device_prediction, _actual, lab=lab,
                 actual_label=memory_wall.regime_against_ridge(_actual, _ai, _dc, _p))
    return


@app.cell
def _(
    crossover_prediction,
    lab,
    levers_prediction,
    other_device_prediction,
    which_roof_prediction,
):
    mo.stop(INSTRUMENTS.gate("overlay", which_roof_prediction, levers_prediction,
                             crossover_prediction, other_device_prediction) is not None)
    quiz.explain_form(
        lab, "lab01.other_device",
        observe_label=f"At M = {OVERLAY_SCENARIO['m']}, which devices are memory-bound and "
                      "which compute-bound? Move M: at which M does each one switch?",
        explain_label="The kernel did not change. What did, between the two chips?")
    return


@app.cell
def _(
    crossover_prediction,
    levers_prediction,
    other_device_prediction,
    which_roof_prediction,
):
    mo.stop(INSTRUMENTS.gate("overlay", which_roof_prediction, levers_prediction,
                             crossover_prediction, other_device_prediction) is not None)
    style.math_peek("one AI, many ridges", r"""
    AI depends only on the operation: for $C_{M\times N} = A_{M\times K}B_{K\times N}$,
    $\text{AI} = \frac{2MNK}{(MK + KN + MN)\,b}$, the same on every chip ($\approx 2M/b$ while
    $M \ll N = K$: the weight matrix dominates the bytes). The regime depends on the chip
    through its ridge:

    $$\text{memory-bound} \iff \text{AI} < \text{ridge}_p = \frac{\pi_p\ \text{[FLOP/s]}}
    {\beta\ \text{[B/s]}}$$

    A chip whose peak grew faster than its bandwidth has its ridge further right.
    """ + memory_wall.ridges_example(OVERLAY_SCENARIO))
    return


@app.cell
def _():
    mo.md("""
    ## Part 5 · Which yardstick?
    """)
    return


@app.cell
def _():
    style.scenario_card(
        "Dana Weiss", "engineering manager",
        f"The profiler says our decode kernel on the {hardware.get(OPENING['device']).name} "
        f"runs at {PROFILER['flop_util']:.0%} of peak FLOP/s. It also reports "
        f"{PROFILER['bandwidth']:.0%} of peak memory bandwidth. I am about to put two engineers "
        f"on it for a quarter: {PROFILER['flop_util']:.0%} means we are wasting "
        f"{1 - PROFILER['flop_util']:.0%} of a very expensive chip, doesn't it?")
    return


@app.cell
def _(lab):
    get_yardstick, set_yardstick = quiz.lock_state(lab, "lab01.yardstick")
    return get_yardstick, set_yardstick


@app.cell
def _(get_yardstick, lab, set_yardstick):
    yardstick_form = quiz.choice_form(
        lab, "lab01.yardstick",
        question="**Prediction 5.** Which number tells Dana how much faster this kernel can get?",
        options=YARDSTICK_OPTIONS, locked=get_yardstick(), on_lock=set_yardstick)
    quiz.prediction_panel(yardstick_form, get_yardstick())
    return


@app.cell
def _(get_yardstick, lab):
    _d, _p = OPENING["device"], SCENARIO["precision"]
    _read = utilization.reading(PROFILER["flop_util"], PROFILER["bandwidth"], _d, _p)
    _ref = "bandwidth" if _read["regime"] == roofline.MEMORY else "flop_util"
    yardstick_prediction = get_yardstick() or reveal.reference(
        lab, "lab01.yardstick", _ref,
        label=next(k for k, v in YARDSTICK_OPTIONS.items() if v == _ref),
        explanation=memory_wall.yardstick_explanation(_read, PROFILER["flop_util"], _d, _p))
    reveal.card(yardstick_prediction)
    return (yardstick_prediction,)


@app.cell
def _():
    flop_util_slider = mo.ui.slider(0.5, 100, step=0.5, value=100 * PROFILER["flop_util"],
                                    label="Achieved % of peak FLOP/s (FLOP utilisation)",
                                    show_value=True, full_width=True)
    bw_slider = mo.ui.slider(1, 100, step=1, value=100 * PROFILER["bandwidth"],
                             label="Achieved % of peak bandwidth", show_value=True,
                             full_width=True)
    mo.vstack([mo.md("**The profiler's two numbers** (move them)"), flop_util_slider, bw_slider])
    return bw_slider, flop_util_slider


@app.cell
def _(
    bw_slider,
    crossover_prediction,
    device_picker,
    flop_util_slider,
    levers_prediction,
    other_device_prediction,
    precision_picker,
    which_roof_prediction,
    yardstick_prediction,
):
    _wait = INSTRUMENTS.gate("yardstick", which_roof_prediction, levers_prediction,
                             crossover_prediction, other_device_prediction, yardstick_prediction)
    mo.stop(_wait is not None, _wait)
    try:
        yardstick = utilization.reading(flop_util_slider.value / 100,
                                                 bw_slider.value / 100, device_picker.value,
                                                 precision_picker.value)
        yardstick_error = None
    except (KeyError, ValueError) as _exc:
        yardstick = None
        yardstick_error = style.error_message(_exc) + "\n\n" + PICK_PRECISION
    return yardstick, yardstick_error


@app.cell
def _(device_picker, precision_picker, yardstick, yardstick_error):
    mo.stop(yardstick_error is not None, style.error_callout(yardstick_error))
    yardstick_figure = figures.roofline_figure(
        [(device_picker.value, precision_picker.value)], [memory_wall.profiled_point(yardstick)],
        title="Where the profiler's numbers put the kernel")
    yardstick_figure
    return


@app.cell
def _(precision_picker, yardstick, yardstick_error):
    mo.stop(yardstick_error is not None)
    memory_wall.regime_verdict("The kernel", yardstick["regime"],
                               memory_wall.yardstick_cards(yardstick, precision_picker.value))
    return


@app.cell
def _(
    crossover_prediction,
    lab,
    levers_prediction,
    other_device_prediction,
    which_roof_prediction,
    yardstick_prediction,
):
    mo.stop(INSTRUMENTS.gate("yardstick", which_roof_prediction, levers_prediction,
                             crossover_prediction, other_device_prediction,
                             yardstick_prediction) is not None)
    _p = SCENARIO["precision"]
    _read = utilization.reading(PROFILER["flop_util"], PROFILER["bandwidth"],
                                         OPENING["device"], _p)
    _actual = "bandwidth" if _read["regime"] == roofline.MEMORY else "flop_util"
    _label = next(k for k, v in YARDSTICK_OPTIONS.items() if v == _actual)
    quiz.compare(yardstick_prediction, _actual, lab=lab,
                 actual_label=memory_wall.yardstick_actual(_label, _read, _p))
    return


@app.cell
def _(
    crossover_prediction,
    lab,
    levers_prediction,
    other_device_prediction,
    which_roof_prediction,
    yardstick_prediction,
):
    mo.stop(INSTRUMENTS.gate("yardstick", which_roof_prediction, levers_prediction,
                             crossover_prediction, other_device_prediction,
                             yardstick_prediction) is not None)
    quiz.explain_form(
        lab, "lab01.yardstick",
        observe_label=f"Set FLOP utilisation {PROFILER['flop_util']:.0%} and bandwidth "
                      f"{PROFILER['bandwidth']:.0%}: what fraction of its roof does the kernel "
                      "reach, and what is its FLOP-utilisation bound?",
        explain_label="What should Dana's engineers do instead of tuning FLOPs? When would "
                      "FLOP utilisation be the right yardstick?")
    return


@app.cell
def _(
    crossover_prediction,
    levers_prediction,
    other_device_prediction,
    which_roof_prediction,
    yardstick_prediction,
):
    mo.stop(INSTRUMENTS.gate("yardstick", which_roof_prediction, levers_prediction,
                             crossover_prediction, other_device_prediction,
                             yardstick_prediction) is not None)
    _d, _p = OPENING["device"], SCENARIO["precision"]
    _read = utilization.reading(PROFILER["flop_util"], PROFILER["bandwidth"], _d, _p)
    style.math_peek("two yardsticks and the roof", r"""
    From the profiler: achieved $P$ [FLOP/s] and achieved $B$ [B/s]. Then

    $$\text{FU} = \frac{P}{\pi_p},\qquad \text{BWU} = \frac{B}{\beta},\qquad
    \text{AI} = \frac{P}{B}\ \text{[FLOP/B]} = \text{ridge}_p\cdot\frac{\text{FU}}
    {\text{BWU}}$$

    The headroom is measured against the roof *at this AI*:

    $$\frac{P}{\min(\pi_p,\ \text{AI}\cdot\beta)} = \max(\text{FU},\ \text{BWU})$$

    FU is the kernel's FLOP utilisation. MFU (model FLOP utilisation) is the same ratio for a
    whole model's step, counting the model's FLOPs: keep that name for models.
    """ + memory_wall.yardstick_worked_example(_read, PROFILER["flop_util"],
                                               PROFILER["bandwidth"], _d, _p))
    return


@app.cell
def _():
    mo.md("""
    ## Part 6 · Explore any GEMM

    Once every question of this lab is locked, this explorer shows the AI, ridge and regime
    of any GEMM you set, on the device and precision picked at the top. Try Priya's decode GEMM
    with a bigger batch, the prefill chunk on each chip, square GEMMs either side of N*.
    """)
    return


@app.cell
def _():
    m_slider = mo.ui.slider(steps=POW2, value=SCENARIO["m"], label="M (rows: tokens)",
                            show_value=True, full_width=True)
    n_slider = mo.ui.slider(steps=POW2, value=SCENARIO["n"], label="N (output features)",
                            show_value=True, full_width=True)
    k_slider = mo.ui.slider(steps=POW2, value=SCENARIO["k"], label="K (input features)",
                            show_value=True, full_width=True)
    mo.vstack([mo.md("**Your GEMM** C[M,N] = A[M,K] · B[K,N] (precision and device: "
                     "pickers at the top)"), m_slider, n_slider, k_slider])
    return k_slider, m_slider, n_slider


@app.cell
def _(
    crossover_prediction,
    device_picker,
    k_slider,
    levers_prediction,
    m_slider,
    n_slider,
    other_device_prediction,
    precision_picker,
    which_roof_prediction,
    yardstick_prediction,
):
    _wait = INSTRUMENTS.gate("explorer", which_roof_prediction, levers_prediction,
                             crossover_prediction, other_device_prediction, yardstick_prediction)
    mo.stop(_wait is not None, _wait)
    _m, _n, _k, _p = m_slider.value, n_slider.value, k_slider.value, precision_picker.value
    try:
        gemm_cost = formulas.gemm(_m, _n, _k, _p)
        # a GEMM that does not fit in the device's memory is the explorer's failure state
        roofline.require_fits(gemm_cost.bytes, device_picker.value,
                              what=f"This GEMM ({_m:,} x {_n:,} x {_k:,}, {_p}: A + B + C)")
        gemm_bounds = roofline.time_bounds(gemm_cost.flops, gemm_cost.bytes,
                                           device_picker.value, _p)
        gemm_error = None
    except (KeyError, ValueError) as _exc:
        gemm_cost = gemm_bounds = None
        # a ValueError here is "does not fit in memory"; a KeyError, a rate the device lacks
        gemm_error = style.error_message(_exc) + "\n\n" + (
            SHRINK_GEMM if isinstance(_exc, ValueError) else PICK_PRECISION)
    return gemm_bounds, gemm_cost, gemm_error


@app.cell
def _(device_picker, gemm_bounds, gemm_cost, gemm_error, precision_picker):
    mo.stop(gemm_error is not None, style.error_callout(gemm_error))
    gemm_figure = figures.roofline_figure(
        [(device_picker.value, precision_picker.value)],
        [figures.Point("your GEMM", gemm_cost.ai,
                       hover=memory_wall.gemm_hover(gemm_cost, gemm_bounds))],
        title=f"Your GEMM on the {hardware.get(device_picker.value).name}")
    gemm_figure
    return


@app.cell
def _(device_picker, gemm_bounds, gemm_cost, gemm_error, precision_picker):
    mo.stop(gemm_error is not None)
    _d, _p = device_picker.value, precision_picker.value
    gemm_regime = roofline.regime(gemm_cost.ai, _d, _p)
    gemm_metrics = memory_wall.gemm_numbers(gemm_cost, gemm_bounds, _d, _p)
    memory_wall.regime_verdict("Your GEMM", gemm_regime, memory_wall.gemm_cards(
        gemm_metrics, gemm_cost, gemm_bounds, _d, _p, gemm_regime))
    return


@app.cell
def _(gemm_error):
    mo.stop(gemm_error is not None)
    mo.md("""
    **Try the failure state.** Push M, N and K towards 262,144 (or pick fp32, or a small edge
    device): at some point the three matrices no longer fit in the device's memory and the
    explorer says by how much. Move a slider back and it recovers.
    """)
    return


@app.cell
def _():
    mo.md("""
    ## Part 7 · Measure it on this machine

    Everything so far came from spec sheets. Here you time real square GEMMs (N = 128 … 8192,
    as far as the time budget and memory allow) on this machine: a CUDA GPU if torch sees one,
    else the CPU. The prediction is this machine's roofline: its registry entry when the device
    is known (e.g. an H200 maps to `h200-sxm`), otherwise a roofline measured first (STREAM
    bandwidth and the best GEMM rate). Nothing runs until you press the button, never when the
    notebook opens or is exported.
    """)
    return


@app.cell
def _():
    LIVE_SIZES = measure.SQUARE_SIZES  # N = 128 ... 8192; the sweep skips what will not fit
    LIVE_STREAM_MB = None  # None: measure sizes the bandwidth test well past the caches
    return LIVE_SIZES, LIVE_STREAM_MB


@app.cell
def _():
    live_precision = mo.ui.dropdown(
        options={"auto: bf16 on a GPU, fp32 on a CPU": "auto",
                 **{p: p for p in measure.GEMM_PRECISIONS}},
        value="auto: bf16 on a GPU, fp32 on a CPU", label="Precision to measure")
    live_budget = mo.ui.slider(5, 120, step=5, value=20, label="Time budget (s)",
                               show_value=True)
    # read at the press, so a settings step re-runs no measurement cell
    live_settings = live.read_at_press(precision=live_precision, budget=live_budget)
    mo.hstack([live_precision, live_budget], justify="start", gap=2)
    return (live_settings,)


@app.cell
def _():
    live_button = live.run_button("Measure square GEMMs on this machine")
    live_button
    return (live_button,)


@app.cell
def _(
    LIVE_SIZES,
    LIVE_STREAM_MB,
    crossover_prediction,
    lab,
    live_button,
    live_settings,
):
    # Square GEMMs timed against this machine's roofline bracket N* on a GPU: they wait for
    # the prediction that asks it, and nothing is recorded before.
    _wait = INSTRUMENTS.gate("measure", crossover_prediction)
    mo.stop(_wait is not None, _wait)
    mo.stop(not live_button.value, mo.callout(mo.md(live.IDLE_MESSAGE), kind="neutral"))
    live_info = measure.detect()  # imports torch: only after the button is pressed
    _settings = live_settings()
    live_p = _settings.precision if _settings.precision != "auto" else (
        "bf16" if live_info.kind == "cuda" else "fp32")
    _empirical = live_info.available and live_info.spec() is None  # predict from a measured roof
    _total = len(LIVE_SIZES) + (2 if _empirical else 0)

    # an integer rate is no floating-point ceiling: a measured roof for int8 also measures
    # fp32, which gives the machine's vector ceiling (a CPU has no other)
    _roof_precisions = [live_p] + (["fp32"] if live_p.startswith("int") else [])

    def _job(progress):
        ref, start = None, 0
        if _empirical:
            ref = measure.empirical_roofline(
                live_info, precisions=_roof_precisions, budget_s=_settings.budget / 3,
                stream_mb=LIVE_STREAM_MB,
                progress=lambda d, t, label: progress(d, _total, f"this machine's roof: {label}"))
            start = 2
        rows = measure.sweep_square_gemm(
            LIVE_SIZES, live_p, device=live_info, reference=ref,
            budget_s=_settings.budget * (2 / 3 if _empirical else 1),
            progress=lambda d, t, label: progress(start + d, _total, label))
        return ref, rows

    live_reference, live_rows = live.gated_run(live_button, _job, total=_total, info=live_info,
                                               title=f"Timing {live_p} GEMMs")
    lab.record("result", "lab01.measured_sweep", measure.ledger_payload(
        live_info, live_rows, precision=live_p,
        roof="measured roofline" if live_reference is not None else "spec sheet"))
    live.device_card(live_info)
    return live_info, live_p, live_reference, live_rows


@app.cell
def _(live_info, live_p, live_reference, live_rows):
    # What the sweep found, said in the figure's note and the questions below: where the roof
    # came from, which sizes' A, B and C fit in the last-level cache, which points sit above
    # the roof (a roofline is an upper bound: such a point broke one of its assumptions).
    live_ok = [r for r in live_rows if r["status"] == "ok" and r["measured_tflops"]]
    _cache = live_info.cache_mb * 2**20 if live_info.cache_mb else None
    live_fits = {r["n"]: _cache is not None and formulas.gemm(r["n"], r["n"], r["n"], live_p).bytes
                 <= _cache for r in live_ok}
    live_above = [r for r in live_ok if r["ratio"] is not None and r["ratio"] > 1]
    _measured = live_reference is not None
    live_note = memory_wall.sweep_note(
        live_p, measured_gbs=live_reference.bandwidth_gbs if _measured else None,
        spec_name=None if _measured else live_info.spec().name, cache_bytes=_cache,
        largest_fit=max((n for n, fits in live_fits.items() if fits), default=None),
        roof_run_slowed=_measured and any(r["bound"] == "compute" for r in live_above))
    return live_above, live_fits, live_note, live_ok


@app.cell
def _(
    live_fits,
    live_info,
    live_note,
    live_ok,
    live_p,
    live_reference,
    live_rows,
):
    mo.stop(not live_ok, style.error_callout(memory_wall.nothing_measured_message(live_rows)))
    _roof = live_reference.as_device() if live_reference is not None else live_info.spec()
    try:
        live_figure = figures.roofline_figure(
            [(_roof, live_p)], memory_wall.measured_points(live_ok, live_p, live_fits),
            title=f"Measured {live_p} square GEMMs against the predicted roofline of this machine")
        live_view = style.figure_with_note(live_figure, live_note)
    except (KeyError, ValueError) as _exc:
        live_view = style.error_callout(style.error_message(_exc))
    live_view
    return


@app.cell
def _(live_reference, live_rows):
    # the status last: a skipped size's reason is the long entry, and it must not push the
    # timing columns off the page
    _table = live.results_table(
        live_rows, filename="lab01_gemm_sweep.csv",
        columns=["n", "ai", "measured_tflops", "predicted_tflops", "ratio", "bound",
                 "median_ms", "status"])
    mo.vstack([_table] + ([mo.md(
        "*The first third of the time budget measured this machine's roofline; the sweep had "
        "the other two thirds, the budget a skipped size's status names.*")]
        if live_reference is not None else []))
    return


@app.cell
def _(lab, live_above, live_ok):
    mo.stop(not live_ok)
    # The questions follow what this machine measured: a point above the roof is asked about
    # as such, never as one that "falls below" it.
    quiz.explain_form(
        lab, "lab01.measured_sweep",
        observe_label="How close do the measured points come to the predicted roof "
                      "(measured / predicted)? Which N sit above it, and at which N is the "
                      "gap below it largest?",
        explain_label=memory_wall.sweep_question(live_ok, live_above))
    return


@app.cell
def _(
    crossover_prediction,
    levers_prediction,
    other_device_prediction,
    which_roof_prediction,
    yardstick_prediction,
):
    _gate = style.takeaways_gate((which_roof_prediction, levers_prediction,
                                  crossover_prediction, other_device_prediction,
                                  yardstick_prediction))
    mo.stop(_gate is not None, _gate)
    _h = hardware.get("h100-sxm")
    style.takeaways([
        "Arithmetic intensity (FLOP per byte moved) is a property of the operation and its "
        "data layout; the ridge point π/β is a property of the chip and one precision (dense).",
        "Below the ridge a kernel is memory-bound: its ceiling is AI × bandwidth, and no amount "
        "of FLOP tuning lifts it. A decode GEMV sits at AI ≈ 2 / (bytes per element): "
        f"{units.format_value(formulas.gemv(8192, 8192, 'bf16').ai)} FLOP/B in bf16.",
        "AI rises with reuse (tiling), batching and fewer bytes per element; clock speed and "
        "memory capacity do not raise it.",
        "A square GEMM crosses the ridge at N* = 1.5 · b · ridge: about "
        f"{units.format_value(round(roofline.gemm_crossover_n(_h, 'bf16')))} in bf16 on the "
        f"{_h.name}. A chip whose peak grew faster than its bandwidth pushes N* up; a "
        "precision whose peak and bytes scale together (fp8 against bf16) leaves it in place.",
        "The same kernel can be compute-bound on an edge device and memory-bound on a "
        "datacenter GPU: the ridge moved, not the kernel.",
        "Judge a memory-bound kernel by bandwidth utilisation (or fraction of its roof), not "
        f"FLOP utilisation: {PROFILER['flop_util']:.0%} of peak FLOP/s can be {PROFILER['bandwidth']:.0%} of what "
        "is possible.",
    ])
    return


if __name__ == "__main__":
    app.run()
