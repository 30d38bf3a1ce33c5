import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", css_file="labs.css")

with app.setup:
    import time

    import marimo as mo

    from labs.core import (figures, formulas, fusion, hardware, hierarchy, live, measure,
                           quantization, quiz, reference_machine, reveal, roofline, staircase,
                           style, units)
    from labs.core.course.lessons import memory_hierarchy
    from labs.core.physics import misconceptions

    LAB_ID = "lab05"

    # Wiring constants (no physics). The machine picker opens on OPENING["hierarchy"]: the
    # instructor copy's answers are computed for it (LABS_SPEC §4.2b).
    OPENING = {"hierarchy": "a100-sxm-80gb", "precision": "bf16"}
    REFERENCE, MEASURED = "reference", "measured"  # picker values of the two CPU hierarchies
    STAIRCASE_Q = {"upper": "L2", "lower": "DRAM"}
    NAIVE_Q = {"n": 1024}
    TILE_Q = {"n": 8192, "register_tile": 64, "from": 64, "to": 128}
    SHRINK_Q = {"big": 2**20, "small": 2**10}
    WAVE_Q = {"device": "h100-sxm", "tile": quantization.GPU_GEMM_TILE, "from": 1280,
              "to": 1536}
    # The machines the questions name: Predictions 2 and 3 are graded on the opening GPU,
    # whatever the picker shows; Prediction 5's device runs one tile per SM at a time.
    QUESTION_MACHINE = hierarchy.gpu_hierarchy(OPENING["hierarchy"], OPENING["precision"])
    WAVE_SMS = fusion.onchip(WAVE_Q["device"]).sms
    BINDING_OPTIONS = {"The compute roof": "compute", "The HBM roof": "HBM",
                       "The L2 roof": "L2", "The L1 / shared-memory roof": "L1 / shared memory"}
    # Part 2's kernels: no cache tile, or a fixed one (a flash-attention tile of
    # FLASH["block"]); a GEMM's cache tile, and the library's, are Part 3's.
    KERNELS = hierarchy.SIZED_KERNELS
    SIZE_STEPS = [2**k for k in range(6, 15)]  # N = 64 ... 16,384
    TILE_STEPS = [2**k for k in range(0, 11)]  # 1 ... 1,024
    FLASH = {"batch": 1, "heads": 32, "head_dim": 128, "block": 128}
    # What each prediction's answer follows from, and what each instrument shows: an
    # instrument opens once every prediction whose quantities it shows is locked (LABS_SPEC §3).
    INSTRUMENTS = quiz.Instruments(
        answers={
            "lab05.staircase_ratio": ["ratio:staircase", "bandwidth:memory_levels"],
            "lab05.binding_level": ["choice:binding_level", "regime:naive_gemm"],
            "lab05.tile_traffic": ["ratio:tile_traffic", "bytes:tile_traffic"],
            "lab05.shrink_speedup": ["ratio:call_time", "time:call"],
            "lab05.wave_fraction": ["ratio:wave", "share:wave"],
        },
        instruments={
            # Part 1: the OS's cache sizes, the sweep, its staircase, plateaus and comparison,
            # and the peek at how plateaus are found (a merge threshold, bytes per call)
            "staircase": ["bandwidth:memory_levels", "ratio:staircase", "bytes:working_set",
                          "share:spread", "time:sweep"],
            # Part 2: every level's bytes, AI, roof and the binding level, for fixed tiles, and
            # the peek at one AI per level (the GPUs' L2 bandwidths, the vector ceiling)
            "roofline": ["intensity", "throughput", "regime", "choice:binding_level",
                         "bytes:level_traffic", "bandwidth:memory_levels"],
            # Part 3: the tiled GEMM at any tile (T = 1 is the naive kernel), its comparison,
            # and the peek at tiles, waves and the fit (cuBLAS's share of the peak)
            "tiling": ["bytes:tile_traffic", "ratio:tile_traffic", "intensity", "throughput",
                       "regime", "bandwidth:memory_levels", "share:library_peak"],
            # Part 4: time per call vs bytes, the fitted line, its overhead-bound band, and
            # the peek at the fixed cost
            "call_overhead": ["time:call", "ratio:call_time", "bytes:call", "bandwidth:call",
                              "regime:call"],
            # Part 4: the quantisation model on the question's case, square GEMMs measured
            # across tile boundaries beside it (about 12 s), and the peek at tiles and waves
            "sawtooth": ["ratio:wave", "share:wave", "throughput:sawtooth", "time:measurement"],
        })


@app.cell
def _():
    style.lab_header(
        "Lab 5 · The Memory Hierarchy",
        "Your kernel beats the DRAM roof one day and falls off a cliff the next. Measure your "
        "own machine's memory levels, then predict with one roof per level.",
        goals=[
            "Measure how bandwidth depends on the working set on your own machine, and find its "
            "memory levels from the data.",
            "Compute a kernel's arithmetic intensity at each level of the hierarchy and find the "
            "level whose roof binds.",
            "Change a kernel's tile and see which level it moves the traffic to, and what "
            "happens when the tile no longer fits (shared memory refuses it; a cache thrashes).",
            "Measure two effects a single roofline cannot show: the fixed cost of a call, and "
            "the quantisation of tiles and waves.",
        ],
        minutes=45,
        reading=[
            ("A. Ilic, F. Pratas, L. Sousa: Cache-aware Roofline Model, Upgrading the Loft "
             "(IEEE CAL 2014)", "https://doi.org/10.1109/L-CA.2013.6"),
            ("G. Ofenbeck et al.: Applying the Roofline Model (ISPASS 2014)",
             "https://spiral.ece.cmu.edu/pub-spiral/abstract.jsp?id=177"),
            ("C. Yang, T. Kurth, S. Williams: Hierarchical Roofline Analysis for GPUs (2020)",
             "https://arxiv.org/abs/2009.02449"),
            ("U. Drepper: What Every Programmer Should Know About Memory (2007)",
             "https://people.freebsd.org/~lstewart/articles/cpumemory.pdf"),
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
    ## Choose a machine
    Part 1 measures **your** machine. Parts 2 and 3 draw the memory levels of the machine you
    pick here: a GPU from the registry (sizes from NVIDIA's documents; NVIDIA publishes no L2
    bandwidth, so the L2 roofs are published microbenchmark measurements, marked *measured*),
    the course's reference machine (a recorded CPU run), or your own machine once Part 1 has
    measured it. A level with no figure at all is listed but not drawn, and where it could be
    the one that binds, the lab says the verdict is *undetermined* and how fast that level
    would have to be.
    """)
    return


@app.cell
def _():
    _options = {f"Reference machine: {reference_machine.MACHINE} (recorded CPU run)": REFERENCE,
                "This machine (your Part 1 measurement)": MEASURED,
                **hardware.picker_options()}
    machine_picker = style.dropdown_on(_options, OPENING["hierarchy"],
                                       label="Machine (Parts 2 and 3)", searchable=True)
    machine_picker
    return (machine_picker,)


@app.cell
def _():
    mo.vstack([
        mo.md("## Part 1 · The staircase, measured on your machine"),
        style.scenario_card(
            "Priya Raman", "performance engineer",
            "The same summation kernel runs at very different speeds depending on how big its "
            "array is. Our roofline has one memory roof, DRAM, so it predicts one speed. "
            "Before we tune anything: how much faster does this machine read an array that "
            "fits in a cache than one that lives in DRAM?"),
    ])
    return


@app.cell
def _(lab):
    get_staircase, set_staircase = quiz.lock_state(lab, "lab05.staircase_ratio")
    return get_staircase, set_staircase


@app.cell
def _(get_staircase, lab, set_staircase):
    staircase_form = quiz.numeric_form(
        lab, "lab05.staircase_ratio",
        question="**Prediction 1.** Reading an array of W bytes over and over (one thread): "
                 "while W fits in the L2 cache the reads run at L2's bandwidth, and far past the "
                 "last-level cache at DRAM's. On this machine (you measure it below), how many "
                 "times higher is the L2 plateau than the DRAM plateau? Graded against your "
                 "own staircase where its cache plateaus sit far enough apart to tell L2's "
                 "from its neighbours'; where they do not, or where nothing can be measured, "
                 "against the course's reference machine.",
        units="×", lo=1, hi=1000, locked=get_staircase(), on_lock=set_staircase)
    quiz.prediction_panel(staircase_form, get_staircase())
    return


@app.cell
def _(get_staircase, lab):
    _levels = {p.name: p for p in reference_machine.plateaus()}
    _up, _low = _levels[STAIRCASE_Q["upper"]], _levels[STAIRCASE_Q["lower"]]
    _ratio = staircase.plateau_ratio(reference_machine.plateaus(), STAIRCASE_Q["upper"],
                                     STAIRCASE_Q["lower"])
    staircase_prediction = get_staircase() or reveal.reference(
        lab, "lab05.staircase_ratio", round(_ratio, 2), "×",
        explanation=memory_hierarchy.staircase_explanation(_up, _low, _ratio))
    reveal.card(staircase_prediction)
    return (staircase_prediction,)


@app.cell
def _():
    sweep_budget = mo.ui.slider(10, 60, step=5, value=25, show_value=True,
                                label="Time budget for the whole measurement (s)")
    sweep_button = live.run_button("Measure the staircase on this machine")
    # Laid out here, where the widgets are made, and the budget read at the press through
    # sweep_settings(): a budget step re-runs no cell.
    sweep_controls = mo.hstack([sweep_button, sweep_budget], justify="start", gap=2)
    sweep_settings = live.read_at_press(budget=sweep_budget)
    return sweep_button, sweep_controls, sweep_settings


@app.cell
def _(staircase_prediction, sweep_controls):
    _wait = INSTRUMENTS.gate("staircase", staircase_prediction)
    mo.stop(_wait is not None, _wait)
    staircase_open = True  # the cells below that read it open with this one
    _c = measure.cache_sizes()  # what the OS reports; never raises, measures nothing
    _cards = memory_hierarchy.cache_cards(_c.levels)
    mo.vstack([
        mo.md(f"**What your OS reports** ({_c.source}):" if _c.known else
              f"**Your OS reports no cache sizes** ({_c.note})."),
        style.metric_cards(_cards) if _cards else mo.md(""),
        mo.md("The figure below starts with the course's reference machine (a recorded run). "
              "Press the button to add yours: 16 KiB to 8 times your last-level cache, one "
              "thread, each size timed in two rounds; nothing runs until you press it. Your "
              "Prediction 1 is graded against your own staircase where its cache plateaus "
              "sit far enough apart to tell L2's from its neighbours' (the comparison below "
              "says which)."),
        sweep_controls,
    ])
    return (staircase_open,)


@app.cell
def _(staircase_prediction, sweep_button, sweep_settings):
    # The measurement: only after a press (never on open or export), and only while the
    # staircase instrument is open. It reads only the predictions that instrument waits for,
    # so locking a later one does not re-run it and throw the measurement away. Not stopped
    # when idle, so the figure of the recorded run below stays on screen.
    def _job(progress):
        _t0 = time.perf_counter()
        _info = measure.detect()
        _left = max(sweep_settings().budget - (time.perf_counter() - _t0) - 2.0, 5.0)
        _sweep = measure.working_set_sweep(_info, budget_s=_left, progress=progress)
        _levels = measure.hierarchy_levels(_sweep) if len(_sweep.measured) > 1 else []
        _prec = "bf16" if _info.kind == "cuda" else "fp32"
        _gemm = measure.time_gemm(512, 512, 512, _prec, device=_info, budget_s=1.0,
                                  threads=1 if _info.kind == "cpu" else None)
        return {"info": _info, "sweep": _sweep, "levels": _levels, "precision": _prec,
                "peak_tflops": _gemm.flops / _gemm.min_s / 1e12,
                "seconds": time.perf_counter() - _t0}

    hierarchy_run, _message, hierarchy_unavailable = None, None, None
    if INSTRUMENTS.is_open("staircase", quiz.locked_items(staircase_prediction)):
        hierarchy_run, _message = live.run_if_pressed(
            sweep_button, _job, total=100, title="Reading working sets (bytes read over and over)")
        if hierarchy_run is None and sweep_button.value:  # pressed: can this machine measure?
            _info = measure.detect()
            hierarchy_unavailable = None if _info.available else _info.message
    _message
    return hierarchy_run, hierarchy_unavailable


@app.cell
def _(hierarchy_run, lab, staircase_open):
    mo.stop(not staircase_open)
    mo.stop(hierarchy_run is None)
    _s, _levels = hierarchy_run["sweep"], hierarchy_run["levels"]
    lab.record("result", "lab05.measured_sweep", measure.ledger_payload(
        hierarchy_run["info"], _s.rows(), caches=_s.caches.as_mapping(),
        plateaus=[{"name": p.name, "lo_bytes": p.lo_bytes, "hi_bytes": p.hi_bytes,
                   "gbs": p.bandwidth_gbs, "spread": p.spread} for p in _levels],
        load_average=_s.load_average))
    mo.md(memory_hierarchy.sweep_summary(len(_s.measured), len(_s.points), len(_s.skipped),
                                         hierarchy_run["seconds"], _s.device,
                                         _s.load_average))
    return


@app.cell
def _(hierarchy_run, staircase_open):
    mo.stop(not staircase_open)
    _mine = hierarchy_run is not None and bool(hierarchy_run["sweep"].measured)
    _series, _caches = memory_hierarchy.staircase_curves(
        hierarchy_run["sweep"] if _mine else None)
    staircase_figure = figures.working_set_figure(
        _series, caches=_caches,
        plateaus=hierarchy_run["levels"] if _mine else reference_machine.plateaus(),
        title="Bandwidth of re-reading W bytes (best of each size's repetitions)")
    staircase_figure
    return


@app.cell
def _(hierarchy_run, staircase_open):
    mo.stop(not staircase_open)
    _mine = hierarchy_run is not None and bool(hierarchy_run["levels"])
    _levels = hierarchy_run["levels"] if _mine else reference_machine.plateaus()
    _rows = memory_hierarchy.plateau_rows(_levels)
    mo.vstack([mo.md("**Plateaus found from the data** (" + (
        "your measurement" if _mine else "the reference machine: press the button for yours")
        + "), named by the nearest reported cache size; main memory's only from sizes past "
          "the largest cache:"),
        style.text_table(_rows)])
    return


@app.function
def reference_comparison(lab, prediction, reference, *, unavailable, measurement):
    """A measured prediction's comparison while this machine's reading is missing: graded
    against the reference machine where this machine cannot be measured; the reading in the
    ledger where a page was reloaded; else the reference, not graded until a press."""
    if not unavailable and quiz.graded_reading(lab, prediction.item_id) is not None:
        return quiz.recorded_comparison(lab, prediction, units="×", fmt=".1f")
    return mo.vstack([mo.md(memory_hierarchy.unmeasured_heading(unavailable, measurement)),
                      quiz.compare(prediction, reference, units="×", fmt=".1f",
                                   lab=lab if unavailable else None)])


@app.cell
def _(
    hierarchy_run,
    hierarchy_unavailable,
    lab,
    staircase_open,
    staircase_prediction,
):
    # Graded against the student's own staircase (the result recorded here) where its other
    # plateaus sit far enough from L2's for the band to tell them apart; where they do not,
    # or this machine cannot be measured (no torch, a browser build), against the reference
    # machine: the band must never reward a neighbouring cache's plateau.
    mo.stop(not staircase_open)
    _args = (STAIRCASE_Q["upper"], STAIRCASE_Q["lower"])
    _reference = staircase.plateau_ratio(reference_machine.plateaus(), *_args)
    _tol = misconceptions.tolerance("lab05.staircase_ratio")
    if hierarchy_run is not None and hierarchy_run["levels"]:
        _mem = hierarchy_run["sweep"].memory_name  # main memory: DRAM, or HBM on a GPU
        try:
            _sep = staircase.ratio_separation(hierarchy_run["levels"], _args[0], _mem, _tol,
                                              misconceptions.WRONG_MARGIN)
        except KeyError as _e:
            _out = style.error_callout(
                f"{_e}\n\nRaise the time budget and measure again: the sweep needs several "
                "sizes inside L2 and several past your last-level cache.",
                title="Your sweep did not find both plateaus.")
        else:
            _out = mo.vstack([mo.md(memory_hierarchy.staircase_grading(_sep, _mem, _tol)),
                              quiz.compare(staircase_prediction,
                                           _sep.ratio if _sep.separates else _reference,
                                           units="×", fmt=".1f", lab=lab)])
    else:  # not measured here: the reference machine, graded where this one cannot be
        _out = reference_comparison(
            lab, staircase_prediction, _reference,
            unavailable=hierarchy_unavailable is not None, measurement="staircase")
    _out
    return


@app.cell
def _(lab, staircase_prediction):
    mo.stop(staircase_prediction is None)
    staircase_explain = quiz.explain_form(
        lab, "lab05.staircase_ratio",
        observe_label="Where did the bandwidth drop, and by how much at each step?",
        explain_label="Why do the drops sit near (not exactly at) the cache sizes your OS "
                      "reports?")
    staircase_explain
    return


@app.cell
def _(staircase_prediction):
    # how plateaus are found (a merge threshold, the bytes per call): the staircase's method
    mo.stop(INSTRUMENTS.gate("staircase", staircase_prediction) is not None)
    style.math_peek("the staircase", r"""
    One timed call reads $B$ bytes (about 4 MiB: a small working set $W$ is read $B/W$ times,
    a large one chunk by chunk) in $t$ seconds: bandwidth $= B / t$. Once the first pass has
    loaded it, a working set that fits in level $\ell$ is served by $\ell$:

    $$\beta(W) \approx \beta_\ell \quad\text{for the smallest level } \ell
    \text{ with } W \le C_\ell .$$

    So the curve is a **staircase**: one plateau per level, a drop near each capacity
    $C_\ell$. The drops are soft and sit early: caches are set-associative and not perfectly
    LRU, the page tables and the code need room too, a shared last-level cache is shared with
    other programs, and hardware prefetchers hide part of the next level's latency.

    **Finding the plateaus from the data:** split $\log\beta$ into contiguous segments that
    minimise the squared deviation from each segment's mean (in units of the measured noise)
    plus a penalty per segment, merge neighbours closer than 15%, then name each plateau by
    the reported cache nearest to where it drops. Main memory's plateau is made only of the
    sizes past the largest reported cache (the sweep reaches 8 times past it): a working set
    the last cache could hold is never called DRAM, whatever speed it ran at. A single
    roofline keeps only the last step, $\beta_\text{DRAM}$.
    """)
    return


@app.cell
def _():
    mo.vstack([
        mo.md("## Part 2 · One roof per level"),
        style.scenario_card(
            "Tomás Ortega", "GPU kernel engineer",
            "A colleague's naive matrix multiply has operands that fit in L2. Counting only the "
            "bytes it moves from HBM, its arithmetic intensity is far past the ridge, so the "
            "roofline says it is compute-bound. The profiler says it runs at a few percent of "
            "peak. Which roof is it actually under?"),
    ])
    return


@app.cell
def _(lab):
    get_binding, set_binding = quiz.lock_state(lab, "lab05.binding_level")
    return get_binding, set_binding


@app.cell
def _(get_binding, lab, set_binding):
    _gemm = formulas.gemm(NAIVE_Q["n"], NAIVE_Q["n"], NAIVE_Q["n"], OPENING["precision"])
    binding_form = quiz.choice_form(
        lab, "lab05.binding_level",
        question=f"**Prediction 2.** A naive (untiled) {OPENING['precision']} GEMM, "
                 f"N = {NAIVE_Q['n']:,}, on the "
                 f"{hardware.get(OPENING['hierarchy']).name} (the machine picker's opening "
                 "choice): one thread per element of C, in 32 × 32-thread blocks (each warp "
                 "one row of the block), no shared memory. L1 and shared memory are one "
                 f"on-chip SRAM per SM. Its A, B and C ("
                 f"{units.format_bytes(_gemm.bytes, binary=True)}) fit in the "
                 f"L2 cache, and counted by HBM traffic alone its AI is {_gemm.ai:.0f}"
                 f" FLOP/B, past the dense {OPENING['precision']} ridge of "
                 f"{roofline.ridge_point(OPENING['hierarchy'], OPENING['precision']):.0f} FLOP/B. "
                 "Which level's roof binds it?",
        options=BINDING_OPTIONS, locked=get_binding(), on_lock=set_binding)
    quiz.prediction_panel(binding_form, get_binding())
    return


@app.cell
def _(get_binding, lab):
    _p, _label = naive_gemm_on(QUESTION_MACHINE)
    binding_prediction = get_binding() or reveal.reference(
        lab, "lab05.binding_level", _p.binding, label=_label,
        explanation=memory_hierarchy.binding_explanation(_p))
    reveal.card(binding_prediction)
    return (binding_prediction,)


@app.cell
def _():
    kernel_picker = mo.ui.dropdown(list(KERNELS), value=KERNELS[0], label="Kernel")
    size_slider = mo.ui.slider(steps=SIZE_STEPS, value=1024, show_value=True,
                               label="Size N (matrix side; stencil grid side; sequence length; "
                                     "N² elements to sum)")

    def lay_out_kernel_controls(machine_control):
        """Part 2's panel. Laid out here, where its widgets are made, so the cell that shows
        it names none of them and a step re-runs only the cells that read a value."""
        return mo.vstack([mo.hstack([machine_control, kernel_picker], justify="start"),
                          size_slider,
                          mo.md("*The flash-attention tile runs in 128 × 128 blocks. A GEMM "
                                "with a cache tile, and the tile its library runs, are Part "
                                "3's.*")])

    return kernel_picker, lay_out_kernel_controls, size_slider


@app.cell
def _(machine):
    def register_tile_picker():
        """Part 3's register-tile picker, re-made at the machine's default for each machine."""
        _default = hierarchy.DEFAULT_REGISTER_TILE[machine.kind] if machine is not None else 8
        return mo.ui.dropdown({str(2**k): 2**k for k in range(7)}, value=str(_default),
                              label="Register tile r (r × r)")

    return (register_tile_picker,)


@app.cell
def _(lay_out_kernel_controls, machine_picker):
    kernel_controls = lay_out_kernel_controls(machine_picker)
    return (kernel_controls,)


@app.cell
def _(hierarchy_run, machine_picker):
    # The levels Parts 2 and 3 draw: the recorded CPU, this machine's plateaus, or a registry GPU.
    def _machine(choice):
        if choice == REFERENCE:
            return reference_machine.as_hierarchy()
        if choice == MEASURED:
            if hierarchy_run is None or not hierarchy_run["levels"]:
                raise ValueError("This machine has not been measured yet: press the button in "
                                 "Part 1 (it needs torch), or pick another machine.")
            _r, _s, _gb = hierarchy_run, hierarchy_run["sweep"], hierarchy_run["info"].memory_gb
            return hierarchy.measured_machine(
                _s.device, _s.caches.as_mapping(), _r["levels"], _gb * 1e9 if _gb else None,
                _r["peak_tflops"], precision=_r["precision"],
                memory_name=_s.memory_name, gpu=_r["info"].kind == "cuda",
                registry_key=_r["info"].registry_key)
        return hierarchy.gpu_hierarchy(choice, "bf16")

    try:
        machine, machine_error = _machine(machine_picker.value), None
    except KeyError:  # the registry lacks this device's L2 size or on-chip figures
        machine, machine_error = None, style.error_callout(
            memory_hierarchy.missing_cache_sizes(hardware.get(machine_picker.value)),
            title="No cache sizes for this machine.")
    except ValueError as _e:  # "This machine" before Part 1 has measured it
        machine, machine_error = None, mo.callout(mo.md(
            f"**Nothing measured yet.** {_e}"), kind="warn")
    return machine, machine_error


@app.cell
def _(machine, size_slider):
    def _placed(name):
        """A Part 2 kernel at the slider's size on the current machine, or why it cannot be."""
        try:
            return hierarchy.place(hierarchy.kernel_at_size(
                name, size_slider.value, machine.precision, **FLASH), machine)
        except (KeyError, ValueError) as _e:
            return _e

    all_points = {k: _placed(k) for k in KERNELS} if machine is not None else {}
    return (all_points,)


@app.cell
def _(binding_prediction, kernel_controls, staircase_prediction):
    _wait = INSTRUMENTS.gate("roofline", staircase_prediction, binding_prediction)
    mo.stop(_wait is not None, _wait)
    roofline_open = True  # the cells below that read it open with this one
    kernel_controls
    return (roofline_open,)


@app.cell
def _(all_points, kernel_picker, machine, machine_error, roofline_open):
    mo.stop(not roofline_open)
    if machine is None:
        level_cards = machine_error
    elif isinstance(all_points[kernel_picker.value], Exception):
        level_cards = style.error_callout(
            f"{style.error_message(all_points[kernel_picker.value])}\n\nMove the size N up, "
            "or pick another kernel.")
    else:
        _p = all_points[kernel_picker.value]
        level_cards = mo.vstack([mo.md(f"**{_p.kernel.name}** · {_p.kernel.what} · on "
                                       f"{machine.name}"),
                                 style.metric_cards(memory_hierarchy.level_cards(_p))])
    level_cards
    return


@app.cell
def _(all_points, kernel_picker, machine, roofline_open):
    mo.stop(not roofline_open)
    mo.stop(machine is None or isinstance(all_points.get(kernel_picker.value), Exception))
    hierarchical_roofline = figures.per_level_roofline_figure(
        machine, [all_points[kernel_picker.value]],
        title=f"Hierarchical roofline (one AI per level) of {machine.name}: "
              f"{all_points[kernel_picker.value].kernel.name}")
    hierarchical_roofline
    return


@app.cell
def _(all_points, machine, roofline_open):
    mo.stop(not roofline_open)
    mo.stop(machine is None)
    _rows = memory_hierarchy.kernel_rows(all_points)
    mo.vstack([mo.md("**Every kernel at this size** (AI in FLOP per byte each level serves):"),
               style.value_table(_rows)])
    return


@app.function
def naive_gemm_on(hier):
    """Prediction 2's kernel on ``hier``: (its placement, the option or words naming what
    binds it)."""
    _n = NAIVE_Q["n"]
    _p = hierarchy.place(hierarchy.gemm_kernel(_n, _n, _n, hier.precision, tile=1), hier)
    return _p, next((k for k, v in BINDING_OPTIONS.items() if v == _p.binding),
                    f"the {_p.binding} roof" if _p.determined else _p.verdict)


@app.cell
def _(binding_prediction, lab):
    # Graded on the machine the question names, whatever the picker shows.
    mo.stop(binding_prediction is None)
    _h = QUESTION_MACHINE
    _p, _label = naive_gemm_on(_h)
    mo.vstack([mo.md(f"**Prediction vs reality** · naive {_h.precision} GEMM, "
                     f"N = {NAIVE_Q['n']:,}, on the {_h.name} (the question's machine):"),
               quiz.compare(binding_prediction, _p.binding, actual_label=_label, lab=lab)])
    return


@app.cell
def _(machine, roofline_open):
    # Another machine's answer, shown beside the graded one, never recorded.
    mo.stop(not roofline_open)
    mo.stop(machine is None or machine.key == OPENING["hierarchy"])
    _q, _other = naive_gemm_on(machine)
    mo.md(memory_hierarchy.other_machine_binding(_q, _other))
    return


@app.cell
def _(binding_prediction, lab):
    mo.stop(binding_prediction is None)
    binding_explain = quiz.explain_form(
        lab, "lab05.binding_level",
        observe_label="Which level binds the naive GEMM, and at what AI there?",
        explain_label="Why can a kernel whose operands fit in a cache still be far below the "
                      "compute roof?")
    binding_explain
    return


@app.cell
def _(binding_prediction, staircase_prediction):
    # one AI and one roof per level, with the GPUs' L2 bandwidths: what the explorer shows
    mo.stop(INSTRUMENTS.gate("roofline", staircase_prediction, binding_prediction) is not None)
    style.math_peek("one arithmetic intensity per level", r"""
    A kernel does $F$ FLOPs. Level $\ell$ (L1 / shared memory, L2, ..., DRAM/HBM) serves
    $Q_\ell$ bytes: the core's loads at the first level, the misses of the level above at
    every other. Each level has its own intensity and its own roof:

    $$AI_\ell = \frac{F}{Q_\ell}, \qquad
    P \le \min\Big(P_\text{peak},\ \min_\ell AI_\ell\,\beta_\ell\Big).$$

    The level with the lowest $AI_\ell\,\beta_\ell$ binds. NVIDIA publishes no L2 bandwidth;
    the lab's L2 roofs are microbenchmark measurements (A100 5.3, H100 6.65, H200 9.78 TB/s),
    not the per-clock peak. A level with no figure at all has an unknown roof, not an infinite
    one: the known roofs give an upper bound $\hat P$, and that level would need
    $\beta_\ell \ge \hat P / AI_\ell$. Unless a slower level whose bytes cross it (HBM, for
    L2) already runs that fast, the verdict is **undetermined**. Drawn with one point per level
    at its own $AI_\ell$, this is the **hierarchical roofline** (Yang, Kurth, Williams 2020);
    Ilic et al.'s **cache-aware roofline** (2014) draws the same roofs against one
    core-side intensity instead. **Naive GEMM** ($C = AB$, $N^3$ multiply-adds,
    $b$ bytes per element): every multiply-add loads an element of $A$ and one of $B$, so
    the first level, L1, serves $Q_0 \approx 2N^3 b$ and $AI_0 = 1/b$. L1 is a cache: the
    $32 \times 32$ threads of a block share what they load (a warp's $A$ element is one
    broadcast, the row of $B$ it loads is re-read by the block's other warps), so L2 sees
    far fewer bytes than the SMs load. A level that holds all of $A$, $B$, $C$ passes on only
    the compulsory $3N^2 b$: $AI = 2N/(3b)$ below it.
    Scalar code cannot use tensor cores: its ceiling is the vector (CUDA-core) rate (A100:
    19.5 TFLOP/s with fp32 FMAs; packed bf16x2 FMAs would give ~39), not the tensor-core
    peak.

    **Model (simplified):** a level holding the kernel's tile (its working set) passes on the
    tiled traffic; one holding the whole problem passes on the compulsory bytes; otherwise it
    passes on what it was asked for. On NVIDIA GPUs L1 and shared memory are one SRAM per
    SM: a cache for kernels that stage nothing, a scratchpad for those that stage tiles (a
    tile too big fails to launch); L2 is shared by all SMs, so the tiles running at once (a
    wave) share what they read from it (Part 3).
    """)
    return


@app.cell
def _():
    mo.vstack([
        mo.md("## Part 3 · Tiling moves you between roofs"),
        style.scenario_card(
            "Tomás Ortega", "GPU kernel engineer",
            "Now the real kernel: 8,192-sized bf16 matrices, 64 × 64 register tiles per warp, "
            "and a cache tile in shared memory we can choose. Whatever the tile does not keep, "
            "it reads again from L2. Bigger tiles reuse every byte more, so they should cut "
            "that traffic. I want the biggest tile we can get. How much does doubling it "
            "buy, and is there a catch?"),
    ])
    return


@app.cell
def _(lab):
    get_tile, set_tile = quiz.lock_state(lab, "lab05.tile_traffic")
    return get_tile, set_tile


@app.cell
def _(get_tile, lab, set_tile):
    tile_form = quiz.numeric_form(
        lab, "lab05.tile_traffic",
        question=f"**Prediction 3.** A tiled {OPENING['precision']} GEMM, "
                 f"N = {TILE_Q['n']:,}, with "
                 f"{TILE_Q['register_tile']} × {TILE_Q['register_tile']} register tiles, on the "
                 f"{hardware.get(OPENING['hierarchy']).name} (the machine picker's opening "
                 "choice). Its cache tile lives in shared memory; what the tile does not keep "
                 "is read again from L2. The cache tile grows from "
                 f"{TILE_Q['from']} × {TILE_Q['from']} to {TILE_Q['to']} × {TILE_Q['to']}. "
                 "In the ideal tile model (each tile reads its rows of A and its columns of B "
                 "once), by what factor does the traffic L2 serves fall?",
        units="×", lo=0.1, hi=100, locked=get_tile(), on_lock=set_tile)
    quiz.prediction_panel(tile_form, get_tile())
    return


@app.cell
def _(get_tile, lab):
    _a, _b = hierarchy.tile_sweep(TILE_Q["n"], OPENING["precision"],
                                  [TILE_Q["from"], TILE_Q["to"]], QUESTION_MACHINE,
                                  register_tile=TILE_Q["register_tile"])
    _ratio = tile_ratio_on(QUESTION_MACHINE)
    _big = hierarchy.gemm_kernel(TILE_Q["n"], TILE_Q["n"], TILE_Q["n"], OPENING["precision"],
                                 tile=2 * TILE_Q["to"], register_tile=TILE_Q["register_tile"])
    tile_prediction = get_tile() or reveal.reference(
        lab, "lab05.tile_traffic", round(_ratio, 2), "×",
        explanation=memory_hierarchy.tile_explanation(
            _a, _b, _big, _ratio, tiles=(TILE_Q["from"], TILE_Q["to"])))
    reveal.card(tile_prediction)
    return (tile_prediction,)


@app.cell
def _():
    gemm_n_slider = mo.ui.slider(steps=SIZE_STEPS, value=TILE_Q["n"], show_value=True,
                                 label="GEMM size N (N × N × N)")
    gemm_tile_slider = mo.ui.slider(steps=TILE_STEPS, value=TILE_Q["from"], show_value=True,
                                    label="Cache tile T (T × T)")

    def lay_out_tile_controls(machine_control, register_control):
        """Part 3's panel, laid out where its widgets are made (as Part 2's: a step re-runs only the cells that read a value)."""
        return mo.vstack([machine_control, mo.hstack([gemm_n_slider, gemm_tile_slider,
                                                      register_control], justify="start")])

    return gemm_n_slider, gemm_tile_slider, lay_out_tile_controls


@app.cell
def _(lay_out_tile_controls, machine_picker, register_tile_picker):
    gemm_register_picker = register_tile_picker()  # re-made, at its default, for each machine
    tile_controls = lay_out_tile_controls(machine_picker, gemm_register_picker)
    return gemm_register_picker, tile_controls


@app.cell
def _(gemm_n_slider, gemm_register_picker, gemm_tile_slider, machine):
    # The tiled GEMM at the chosen N, T, r (Part 3 always draws the tiled kernel); the curve
    # runs over every cache tile from the register tile up to N that launches, and names the
    # ones too big for shared memory (they fail to launch: no traffic to draw).
    tile_point = tile_curve = tile_error = None
    tiles_failed = []
    if machine is not None:
        _n, _t, _r = gemm_n_slider.value, gemm_tile_slider.value, gemm_register_picker.value
        try:
            if memory_hierarchy.tile_problem(_n, _t, _r):
                raise ValueError(memory_hierarchy.tile_problem(_n, _t, _r))
            _ok, tiles_failed = hierarchy.launchable_tiles(
                _n, machine.precision, [t for t in TILE_STEPS if _r <= t <= _n], machine,
                register_tile=_r)
            tile_curve = list(zip(_ok, hierarchy.tile_sweep(
                _n, machine.precision, _ok, machine, register_tile=_r))) or None
            tile_point = hierarchy.place(hierarchy.gemm_kernel(
                _n, _n, _n, machine.precision, tile=_t, register_tile=_r), machine)
        except ValueError as _e:  # a bad combination, or a tile that fails to launch
            tile_error = _e
    return tile_curve, tile_error, tile_point, tiles_failed


@app.cell
def _(
    binding_prediction,
    staircase_prediction,
    tile_controls,
    tile_prediction,
):
    _wait = INSTRUMENTS.gate("tiling", staircase_prediction, binding_prediction, tile_prediction)
    mo.stop(_wait is not None, _wait)
    tiling_open = True  # the cells below that read it open with this one
    tile_controls
    return (tiling_open,)


@app.cell
def _(
    gemm_n_slider,
    gemm_register_picker,
    gemm_tile_slider,
    machine,
    machine_error,
    tile_curve,
    tile_error,
    tile_point,
    tiles_failed,
    tiling_open,
):
    # The status of the tile under the panel above, and the traffic figure under it: one cell,
    # so a step of N, T or r costs the browser one output update, not two.
    mo.stop(not tiling_open)
    _t = gemm_tile_slider.value
    _status = (machine_error if machine is None else
               memory_hierarchy.tile_status_callout(_t, tile_point, tile_error))
    tile_figure = figures.tile_traffic_figure(
        machine, tile_curve, current=_t, failed=tiles_failed,
        title=f"Bytes each level serves vs the cache tile, N = {gemm_n_slider.value:,}, "
              f"register tile {gemm_register_picker.value}, on {machine.name}") if tile_curve else None
    # two children always, so the figure is updated in place, never mounted anew
    mo.vstack([_status, tile_figure if tile_figure is not None else mo.md("")])
    return


@app.cell
def _(gemm_n_slider, machine, tiling_open):
    # The GEMM as its library tiles it on the picked machine, at Part 3's N: the tile a real
    # kernel runs, beside the T x T tile above (on Hopper: 128 x 256 in clusters of two).
    mo.stop(not tiling_open)
    mo.stop(machine is None)
    _n = gemm_n_slider.value
    try:
        _lib = hierarchy.library_gemm_kernel(machine, _n, _n, _n)
        _p = hierarchy.place(_lib, machine)
    except ValueError as _e:
        _out = style.error_callout(f"{style.error_message(_e)}\n\nMove N up.")
    else:
        _unshared = None if _lib.gemm[6] == 1 else hierarchy.place(  # without the multicast
            hierarchy.library_gemm_kernel(machine, _n, _n, _n, multicast=False), machine)
        _text = memory_hierarchy.library_gemm_note(_p, _unshared)
        _out = mo.callout(mo.md(_text), kind="info")
    _out
    return


@app.function
def tile_ratio_on(hier):
    """Prediction 3's factor on ``hier``: the traffic the level below the tile's home
    serves, T_from over T_to."""
    return hierarchy.tile_traffic_ratio(TILE_Q["n"], hier.precision, TILE_Q["from"],
                                        TILE_Q["to"], hier,
                                        register_tile=TILE_Q["register_tile"])


@app.cell
def _(binding_prediction, lab, staircase_prediction, tile_prediction):
    # Graded on the machine the question names, whatever the picker shows; the factor is what
    # the tiling instrument shows, so it opens with it.
    mo.stop(INSTRUMENTS.gate("tiling", staircase_prediction, binding_prediction,
                             tile_prediction) is not None)
    mo.vstack([mo.md(f"**Prediction vs reality** · N = {TILE_Q['n']:,}, register tile "
                     f"{TILE_Q['register_tile']}, T {TILE_Q['from']} → {TILE_Q['to']}, on the "
                     f"{QUESTION_MACHINE.name} (the question's machine): the traffic L2 "
                     "serves falls by"),
               quiz.compare(tile_prediction, tile_ratio_on(QUESTION_MACHINE), units="×",
                            fmt=".2f", lab=lab)])
    return


@app.cell
def _(machine, tiling_open):
    # The picked machine's factor, beside the graded one, never recorded.
    mo.stop(not tiling_open)
    mo.stop(machine is None or machine.key == OPENING["hierarchy"])
    try:
        _out = mo.md(f"On **{machine.name}** (your pick, not graded) the traffic the level "
                     f"below the tile's home serves falls by {tile_ratio_on(machine):.2f}×.")
    except ValueError as _e:
        _out = mo.md(f"On **{machine.name}** (your pick): {_e}")
    _out
    return


@app.cell
def _(lab, tile_prediction):
    mo.stop(tile_prediction is None)
    tile_explain = quiz.explain_form(
        lab, "lab05.tile_traffic",
        observe_label="How does the traffic L2 serves change as T doubles, how does HBM's, and "
                      "what happened at the tile that did not fit?",
        explain_label="Why does the tile's traffic fall with its edge, not its area, and why "
                      "does a tile too big for shared memory fail instead of just helping less?")
    tile_explain
    return


@app.cell
def _(binding_prediction, staircase_prediction, tile_prediction):
    # tiles, waves, regimes and the fit: what the tiling instrument shows
    mo.stop(INSTRUMENTS.gate("tiling", staircase_prediction, binding_prediction,
                             tile_prediction) is not None)
    style.math_peek("tiles, traffic and the fit", r"""
    $C = AB$ in $T \times T$ output tiles, each kept while its row panel of $A$ and column
    panel of $B$ stream past (``roofline.tiled_gemm_bytes``): $A$ is re-read once per tile
    column, $B$ once per tile row. What the tile level passes on (L2 serves it on a GPU) is

    $$Q(T) = b\,\Big(MK\,\Big\lceil \tfrac{N}{T} \Big\rceil + KN\,\Big\lceil \tfrac{M}{T}
    \Big\rceil + MN\Big) \approx \frac{2N^3 b}{T}\quad(M = N = K).$$

    Doubling the tile's **edge** halves that traffic (its area quadruples, the reuse only
    doubles).

    **L2 is shared.** All SMs run a tile at once (a wave of $S$ tiles, rasterised into a block
    of $r_w \times c_w$ tiles): they read the same panels of $A$ and $B$ at the same time, so
    L2 fetches each panel from HBM once per wave, as if the wave were one
    $r_w T \times c_w T$ tile:
    $Q_\text{HBM} = b\,(MK\lceil N/(c_w T)\rceil + KN\lceil M/(r_w T)\rceil + MN)$. That is why
    large tiled GEMMs are compute-bound on a GPU (cuBLAS reaches ~87% of the A100's peak).

    **Clusters (Hopper).** cuBLAS on the H100 and H200 runs $128 \times 256$ tiles in clusters
    of $c = 2$ CTAs stacked along $M$; TMA multicasts their shared $B$ tile to both, so L2
    serves it once per cluster: $Q = b\,(MK\lceil N/T_n\rceil + KN\lceil M/(c\,T_m)\rceil +
    MN)$, for $8192^3$ bf16 an L2 intensity of $8192/65 = 126$ FLOP/B (against $8192/129$
    for $128 \times 128$ tiles without clusters, whose L2 roof would sit below what cuBLAS
    measures).

    **The fit.** On a GPU the tile is staged in shared memory as thin K-slabs of $A$ and
    $B$, $s$ pipeline stages of depth $B_K$ (CUTLASS's defaults: $s = 3$, $B_K = 32$), and
    the $C$ tile stays in registers as fp32 accumulators:

    $$S(T) = s\,(T_m + T_n)\,B_K\,b \;\le\; C_\text{smem}, \qquad
    4\,T_m T_n < \text{register file}$$

    (bf16, $128 \times 128$: 48 KiB of shared memory, 64 KiB of accumulators; A100/H100: 64K
    registers = 256 KiB per SM, at most 255 per thread). More than 48 KB of shared memory
    needs the kernel's opt-in (``cudaFuncAttributeMaxDynamicSharedMemorySize``). Shared
    memory is a **scratchpad** the kernel allocates itself: a tile over the per-block limit
    **fails to launch**; it does not spill. A cache tile's working set is modelled as the $C$
    tile and the blocks of $A$ and $B$ it multiplies, $W(T) = 3\,T^2 b$. A **cache** (a
    CPU's L1 or L2) that is too small **thrashes**: it passes on everything the register tiles
    ask for, $Q_0 \approx 2N^3 b / r$, and the level below binds at $AI = r/b$. Only registers spill.
    Bigger is better only up to the largest tile that fits.
    """)
    return


@app.cell
def _():
    mo.vstack([
        mo.md("## Part 4 · What one roof can't tell you"),
        mo.md("Two effects the roofline's smooth curve does not have, measured on your "
              "machine. First, calls that read very little."),
        style.scenario_card(
            "Priya Raman", "performance engineer",
            "Our post-processing calls a library sum on small arrays from Python, thousands of "
            "times per request. We could shrink each array a thousandfold by keeping only what "
            "changed. How much faster would each call be?"),
    ])
    return


@app.cell
def _(lab):
    get_shrink, set_shrink = quiz.lock_state(lab, "lab05.shrink_speedup")
    return get_shrink, set_shrink


@app.cell
def _(get_shrink, lab, set_shrink):
    shrink_form = quiz.numeric_form(
        lab, "lab05.shrink_speedup",
        question=f"**Prediction 4.** One call from Python reads an array once (torch.sum, "
                 "one thread) on this machine (you measure it below; where it cannot be "
                 "measured, the course's reference machine). Shrink the "
                 f"array from {units.format_bytes(SHRINK_Q['big'], binary=True)} to "
                 f"{units.format_bytes(SHRINK_Q['small'], binary=True)} "
                 f"({SHRINK_Q['big'] // SHRINK_Q['small']:,}× fewer bytes): how many times "
                 "shorter does one call get?",
        units="×", lo=1, hi=10000, locked=get_shrink(), on_lock=set_shrink)
    quiz.prediction_panel(shrink_form, get_shrink())
    return


@app.cell
def _(get_shrink, lab):
    _t = dict(reference_machine.OVERHEAD_ROWS)
    _big, _small = _t[SHRINK_Q["big"]], _t[SHRINK_Q["small"]]
    shrink_prediction = get_shrink() or reveal.reference(
        lab, "lab05.shrink_speedup",
        round(reference_machine.call_time_ratio(SHRINK_Q["big"], SHRINK_Q["small"]), 2), "×",
        explanation=memory_hierarchy.shrink_explanation(SHRINK_Q["big"], SHRINK_Q["small"],
                                                        _big, _small))
    reveal.card(shrink_prediction)
    return (shrink_prediction,)


@app.cell
def _():
    overhead_button = live.run_button("Measure the cost of a call on this machine")
    return (overhead_button,)


@app.cell
def _(overhead_button, shrink_prediction):
    _wait = INSTRUMENTS.gate("call_overhead", shrink_prediction)
    mo.stop(_wait is not None, _wait)
    call_overhead_open = True  # the cells below that read it open with this one
    mo.vstack([mo.md("The figure starts with the reference machine's recorded run; the button "
                     "times yours (about 5 s, one thread, 256 B to 4 MiB per call). Your "
                     "Prediction 4 is graded against your own measurement."),
               overhead_button])
    return (call_overhead_open,)


@app.cell
def _(overhead_button, shrink_prediction):
    # Only while the per-call instrument is open; it reads only the predictions that
    # instrument waits for, so a later lock does not re-run it and lose the measurement.
    overhead_run, _message, overhead_unavailable = None, None, None
    if INSTRUMENTS.is_open("call_overhead", quiz.locked_items(shrink_prediction)):
        overhead_run, _message = live.run_if_pressed(
            overhead_button, lambda progress: measure.call_overhead_sweep(
                budget_s=4.0, progress=progress),
            total=15, title="Timing one read per call",
            idle_message="Nothing has been measured yet: press “Measure the cost of a call on "
                         "this machine” to time calls here (about 5 s).")
        if overhead_run is None and overhead_button.value:  # pressed: can it measure here?
            _info = measure.detect()
            overhead_unavailable = None if _info.available else _info.message
    _message
    return overhead_run, overhead_unavailable


@app.cell
def _(call_overhead_open, overhead_run):
    mo.stop(not call_overhead_open)
    _mine, _fit = None, (reference_machine.CALL_OVERHEAD_S,
                         reference_machine.OVERHEAD_BANDWIDTH_GBS)
    if overhead_run is not None:  # this machine's run, and the model fitted to it
        _mine = [(r["bytes"], r["median_s"]) for r in overhead_run.rows]
        _fit = (overhead_run.overhead_s, overhead_run.bandwidth_gbs)
    overhead_figure = figures.call_time_figure(reference_machine.OVERHEAD_ROWS, _mine, *_fit)
    overhead_figure
    return


@app.cell
def _(
    call_overhead_open,
    lab,
    overhead_run,
    overhead_unavailable,
    shrink_prediction,
):
    # Graded against the student's own sweep (the result recorded here); where this machine
    # cannot be measured (no torch, a browser build), against the reference machine.
    mo.stop(not call_overhead_open)
    _ref_ratio = reference_machine.call_time_ratio(SHRINK_Q["big"], SHRINK_Q["small"])
    if overhead_run is not None:
        _t = {r["bytes"]: r["median_s"] for r in overhead_run.rows}
        _out = mo.vstack([mo.md("**Prediction vs reality** · your machine, median time per "
                                "call (graded):"),
                          quiz.compare(shrink_prediction, _t[SHRINK_Q["big"]]
                                       / _t[SHRINK_Q["small"]], units="×", fmt=".1f",
                                       lab=lab)])
    else:  # not measured here: the reference machine, graded where this one cannot be
        _out = reference_comparison(
            lab, shrink_prediction, _ref_ratio,
            unavailable=overhead_unavailable is not None, measurement="measurement")
    _out
    return


@app.cell
def _(lab, shrink_prediction):
    mo.stop(shrink_prediction is None)
    shrink_explain = quiz.explain_form(
        lab, "lab05.shrink_speedup",
        observe_label="Below which size did the time per call stop shrinking?",
        explain_label="What sets the time of a call there, if not any memory level's "
                      "bandwidth?")
    shrink_explain
    return


@app.cell
def _(shrink_prediction):
    # the fixed cost's equation and its overhead-bound range: what the per-call figure shows
    mo.stop(INSTRUMENTS.gate("call_overhead", shrink_prediction) is not None)
    style.math_peek("a fixed cost per call", r"""
    A call that reads $W$ bytes once takes $t(W) = t_0 + W/\beta$ (the fixed cost $t_0$,
    Python and the library's dispatch, or a kernel launch, comes first: the two add). Below
    $W^* = t_0\,\beta$ the call is overhead-bound: shrinking $W$ by $1000\times$ saves at most
    $W/\beta$, not $t_0$.
    """)
    return


@app.cell
def _():
    mo.vstack([
        mo.md("Second, sizes that do not divide evenly."),
        style.scenario_card(
            "Tomás Ortega", "GPU kernel engineer",
            "Our GEMM's throughput jumps around as the batch grows, although the arithmetic "
            "intensity rises smoothly. The library cuts the output into 128 × 128 tiles and "
            "runs one tile per SM at a time. What happens when N grows a little?"),
    ])
    return


@app.cell
def _(lab):
    get_wave, set_wave = quiz.lock_state(lab, "lab05.wave_fraction")
    return get_wave, set_wave


@app.cell
def _(get_wave, lab, set_wave):
    wave_form = quiz.numeric_form(
        lab, "lab05.wave_fraction",
        question=f"**Prediction 5.** A {OPENING['precision']} GEMM cut into "
                 f"{WAVE_Q['tile']} × {WAVE_Q['tile']} "
                 f"output tiles on the {hardware.get(WAVE_Q['device']).name} "
                 f"({WAVE_SMS} SMs, one tile per SM at a time). N = {WAVE_Q['from']:,} makes "
                 f"{quantization.quantization(WAVE_Q['from'], WAVE_Q['from'], WAVE_Q['tile'], WAVE_SMS).tiles}"
                 f" tiles. At N = {WAVE_Q['to']:,}, by the model's count of tiles and waves, "
                 f"what fraction of N = {WAVE_Q['from']:,}'s throughput does the GEMM reach "
                 "(1 = the same)?",
        units="", lo=0.01, hi=2, locked=get_wave(), on_lock=set_wave)
    quiz.prediction_panel(wave_form, get_wave())
    return


@app.cell
def _(get_wave, lab):
    _a, _b = (quantization.quantization(n, n, WAVE_Q["tile"], WAVE_SMS)
              for n in (WAVE_Q["from"], WAVE_Q["to"]))
    _frac = quantization.relative_throughput(WAVE_Q["from"], WAVE_Q["to"], WAVE_Q["tile"],
                                             WAVE_SMS)
    wave_prediction = get_wave() or reveal.reference(
        lab, "lab05.wave_fraction", round(_frac, 3),
        explanation=memory_hierarchy.wave_explanation((WAVE_Q["from"], WAVE_Q["to"]), _a, _b,
                                                      WAVE_SMS, _frac))
    reveal.card(wave_prediction)
    return (wave_prediction,)


@app.cell
def _(wave_prediction):
    # The model's curve for the question's own case: no widget moves it; the sawtooth
    # instrument's first view (its notice; the views below stop silently).
    _wait = INSTRUMENTS.gate("sawtooth", wave_prediction)
    mo.stop(_wait is not None, _wait)
    _ns = list(range(512, 4097, 32))
    wave_figure = figures.sawtooth_figure(
        _ns, quantization.efficiency_curve(_ns, WAVE_Q["tile"], WAVE_SMS), tile=WAVE_Q["tile"],
        y_title="Fraction of the peak the tiles can use",
        predicted_label="tile × wave quantisation (model)",
        marks=[(WAVE_Q["from"], f"N = {WAVE_Q['from']:,}"), (WAVE_Q["to"], f"N = {WAVE_Q['to']:,}")],
        title=f"Quantisation model: {WAVE_Q['tile']} × {WAVE_Q['tile']} tiles in waves of "
              f"{WAVE_SMS} on the {hardware.get(WAVE_Q['device']).name}")
    wave_figure
    return


@app.cell
def _():
    sawtooth_button = live.run_button("Measure the GEMM sawtooth on this machine")
    return (sawtooth_button,)


@app.cell
def _(sawtooth_button, wave_prediction):
    mo.stop(INSTRUMENTS.gate("sawtooth", wave_prediction) is not None)  # one notice, above
    sawtooth_open = True  # the cells below that read it open with this one
    mo.vstack([mo.md("On your machine: the button times square GEMMs whose N crosses tile "
                     "boundaries (a GPU: bf16, waves of tiles; a CPU: fp32 on one core, the "
                     "BLAS micro-kernel's tiles; about 12 s). Until then, the reference "
                     "machine's recorded run is shown."),
               sawtooth_button])
    return (sawtooth_open,)


@app.cell
def _(sawtooth_button, wave_prediction):
    # Only while the sawtooth instrument is open; it reads only the predictions that
    # instrument waits for, so a later lock does not re-run it and lose the measurement.
    sawtooth_run, _message = None, None
    if INSTRUMENTS.is_open("sawtooth", quiz.locked_items(wave_prediction)):
        sawtooth_run, _message = live.run_if_pressed(
            sawtooth_button, lambda progress: measure.gemm_sawtooth(
                budget_s=10.0, progress=progress),
            total=25, title="Timing square GEMMs across tile boundaries",
            idle_message="Nothing has been measured yet: press “Measure the GEMM sawtooth on "
                         "this machine” to time the GEMMs here (about 12 s).")
    _message
    return (sawtooth_run,)


@app.cell
def _(sawtooth_open, sawtooth_run):
    mo.stop(not sawtooth_open)
    _run = sawtooth_run if sawtooth_run is not None and sawtooth_run.measured else None
    _per_tile = sawtooth_run is None or sawtooth_run.kind != "cuda"
    sawtooth_figure = figures.gemm_sawtooth_figure(_run, per_tile=_per_tile)
    mo.vstack([sawtooth_figure, mo.md(memory_hierarchy.sawtooth_caption(_run, _per_tile))])
    return


@app.cell
def _(lab, wave_prediction):
    mo.stop(wave_prediction is None)
    mo.vstack([mo.md(f"**Prediction vs the quantisation model** (graded) · {WAVE_Q['tile']} × "
                     f"{WAVE_Q['tile']} tiles, {WAVE_SMS} SMs, N {WAVE_Q['from']:,} → "
                     f"{WAVE_Q['to']:,}:"),
               quiz.compare(wave_prediction, quantization.relative_throughput(
                   WAVE_Q["from"], WAVE_Q["to"], WAVE_Q["tile"], WAVE_SMS), fmt=".2f", lab=lab)])
    return


@app.cell
def _(lab, wave_prediction):
    mo.stop(wave_prediction is None)
    wave_explain = quiz.explain_form(
        lab, "lab05.wave_fraction",
        observe_label="Where are the model's steps, and how deep? Does the curve measured on "
                      "your machine show them, or is it flat?",
        explain_label="Why can a larger N, with a higher arithmetic intensity, run slower, "
                      "and why might a library's measured curve not dip where the model "
                      "does?")
    wave_explain
    return


@app.cell
def _(wave_prediction):
    # tiles and waves, the model's sawtooth: what the sawtooth instrument shows
    mo.stop(INSTRUMENTS.gate("sawtooth", wave_prediction) is not None)
    style.math_peek("tiles and waves", r"""
    **Tiles.** An $N \times N$ output cut into $T \times T$ tiles pays for
    $\lceil N/T \rceil^2$ whole tiles: tile efficiency $N^2 / (T\lceil N/T \rceil)^2$.
    **Waves.** With one tile per SM at a time on $S$ SMs the tiles run in
    $w = \lceil \text{tiles}/S \rceil$ waves, and the last wave may be nearly empty: wave
    efficiency $\text{tiles} / (w S)$. The fraction of the peak the GEMM can reach is their
    product, a sawtooth in $N$ that the roofline (a function of AI only) does not have:

    $$\eta(N) = \frac{N^2}{T^2\lceil N/T \rceil^2} \cdot
    \frac{\lceil N/T \rceil^2}{S\,\lceil \lceil N/T \rceil^2 / S \rceil}.$$

    On one CPU core $S = 1$ and the tile is the BLAS micro-kernel's block; libraries run the
    ragged edge with narrower kernels, so measured dips are shallower than this model.
    """)
    return


@app.cell
def _(
    binding_prediction,
    shrink_prediction,
    staircase_prediction,
    tile_prediction,
    wave_prediction,
):
    _gate = style.takeaways_gate((staircase_prediction, binding_prediction, tile_prediction,
                                  shrink_prediction, wave_prediction))
    mo.stop(_gate is not None, _gate)
    style.takeaways([
        "Bandwidth depends on the working set: re-reading an array that fits in a cache runs at "
        "that cache's bandwidth, several times DRAM's. The curve is a staircase with one "
        "plateau per level, and you can find the levels from the data.",
        "A kernel has one arithmetic intensity per level: FLOPs over the bytes that level "
        "serves. The lowest of AI × bandwidth over the levels binds, and it is not always "
        "DRAM: a naive GEMM whose operands fit in L2 is bound by the SMs' own load path "
        "(L1 / shared memory, at an AI of 1/b), far below the compute roof that its DRAM "
        "intensity suggests; what L1 keeps for a thread block spares L2.",
        "Tiling moves traffic off the slow levels: the traffic the tile level passes on (to L2, "
        "on a GPU) falls with the tile's edge, not its area. HBM sees less still, because the "
        "tiles of a wave share L2: large tiled GEMMs are compute-bound, as cuBLAS measures. A "
        "tile must fit where it is kept: its staged K-slabs in shared memory and its "
        "accumulators in registers, or the kernel fails to launch; too big for a cache, the "
        "cache thrashes and the kernel drops onto a lower roof.",
        "Two things one roofline cannot show: a fixed cost per call makes small kernels "
        "overhead-bound, and tiles and waves quantise throughput into a sawtooth in N.",
    ])
    return


if __name__ == "__main__":
    app.run()
