import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", css_file="labs.css")

with app.setup:
    import marimo as mo

    from labs.core import (collectives, figures, hardware, live, measure, models, quiz, reveal,
                           sharding, style)
    from labs.core import units
    from labs.core import deferred
    from labs.core.course.lessons import many_chips

    np = deferred.numpy  # numpy is loaded on first use, past a prediction gate
    LAB_ID = "lab06"
    # The pickers' opening values: reveal answers use them, never later picks (LABS_SPEC §4.2b).
    OPENING = {"device": "h100-sxm", "link": "nvlink4"}
    PRECISION = "bf16"  # storage and compute precision throughout the lab (dense peak)
    # Part 1: one node's gradient all-reduce, the case the student predicts.
    ALLREDUCE_REF = {"op": "all-reduce", "nbytes": 1e9, "n": 8, "link": "nvlink4"}
    # Part 2: a GeLU MLP block (up column-parallel, down row-parallel: two matmuls, one
    # all-reduce per block) over 8 GPUs at large batch; the slow servers are H100 PCIe cards
    # on PCIe Gen5, the fast ones H100 SXM on NVLink 4 (real products). Two matmuls, not
    # SwiGLU's three: the graded band (labs.core.physics.misconceptions.lab06) tells them apart.
    SHARD_REF = {"n": 8, "n_out": 8192, "matmuls": sharding.MEGATRON_PAIR,
                 "slow": ("h100-pcie", "pcie5-x16"), "fast": ("h100-sxm", "nvlink4")}
    # the instrument's blocks: matmuls per all-reduce
    SHARD_BLOCKS = {"GeLU MLP: up, down (2 matmuls)": sharding.MEGATRON_PAIR,
                    "SwiGLU MLP: gate, up, down (3 matmuls)": sharding.SWIGLU_MLP,
                    "one row-parallel matmul": 1}
    # Part 2, serving: Llama-3-70B decode, bf16, one user, full 8k context, H100 PCIe cards
    # on PCIe Gen5.
    SERVE_REF = {"model": "llama-3-70b", "device": "h100-pcie", "link": "pcie5-x16",
                 "batch": 1, "seq_len": 8192}
    # Prediction 4's choices: tensor-parallel degrees, 0 for none of them
    SERVE_OPTIONS = {
        "2-way": 2,
        "4-way": 4,
        "8-way": 8,
        "16-way": 16,
        "none of these: the collectives never take longer than the matmuls": 0,
    }
    # Part 3: data-parallel training on 4 DGX A100 nodes: NVLink 3 inside each node, 8
    # InfiniBand HDR NICs per node (one per GPU, as in NVIDIA/nccl issue 812's measured
    # cluster), bf16 gradients, NCCL's Ring. With 8 NICs the node's egress sits near NVLink
    # 3's bandwidth, so a hierarchical all-reduce lands on either side of the Ring
    # (pipelined faster, one level after the other slower) and the graded band tells both
    # apart (labs.core.physics.misconceptions.lab06).
    # Prediction 5 asks how long the gradient all-reduce takes (a time, not a difference of
    # two bounds, which would double any error in either); the wait it leaves after the
    # backward pass is shown once it is locked.
    TRAIN_REF = {"model": "llama-3-8b", "device": "a100-sxm-80gb", "n": 32, "link": "nvlink3",
                 "nic": "ib-hdr", "nics_per_node": 8, "grad_bytes": 2, "tokens_per_gpu": 1024,
                 "algorithm": "ring"}
    # What each prediction's answer follows from, and what each instrument shows: an
    # instrument opens once every prediction whose quantities it shows is locked (LABS_SPEC §3)
    INSTRUMENTS = quiz.Instruments(
        answers={
            "lab06.allreduce_ms": ["time:allreduce", "bandwidth:link"],
            "lab06.tp_shard_pcie": ["count:critical", "intensity:link", "regime:tp"],
            "lab06.tp_shard_nvlink": ["count:critical", "intensity:link", "regime:tp"],
            "lab06.tp_comm_degree": ["choice:tp-degree", "regime:tp", "time:tp-decode"],
            "lab06.dp_allreduce_ms": ["time:allreduce-nodes", "bandwidth:nodes"],
        },
        instruments={
            # the chip's and the link's figures as their datasheets quote them
            "datasheet": ["throughput:peak", "bandwidth:datasheet", "bytes:memory"],
            # one ring on one link (2 to 8 chips): its time, one-way bandwidth, crossover
            "allreduce": ["time:allreduce", "bandwidth:link", "bytes:crossover",
                          "share:efficiency"],
            # this machine's collectives, drawn next to the ring model on NVLink and PCIe
            "measure": ["time:allreduce", "time:measured", "bandwidth:measured",
                        "bytes:crossover", "share:residual"],
            # a sharded block under three roofs, at any slice, batch, chip and link
            "tp_block": ["time:allreduce", "bandwidth:link", "intensity:link",
                         "intensity:hbm", "count:critical", "regime:tp", "time:tp-block",
                         "bytes:tp-block", "throughput:attained"],
            # a decode step of a model sharded n ways
            "serving": ["time:allreduce", "time:tp-decode", "regime:tp", "choice:tp-degree",
                        "bytes:memory"],
            # a data-parallel step: the gradient all-reduce on any cluster, the critical batch
            # (the same formula as the critical slice), the wait and what overlap buys
            "training": ["time:allreduce", "time:allreduce-nodes", "bandwidth:nodes",
                         "count:critical", "time:step", "regime:dp", "ratio:overlap",
                         "share:compute", "bytes:gradients"],
        })


@app.cell
def _():
    style.lab_header(
        "Lab 6 · Many Chips: the communication roofline",
        "Llama-3-70B does not fit on one GPU, so it is sharded, and now every layer waits for "
        "an all-reduce. Find when the link, not the chip, sets the pace.",
        goals=[
            "Predict a collective's time from a datasheet, then measure its latency α and "
            "bandwidth β on your own machine.",
            "Turn a link's datasheet figure into what a collective actually sees, and read "
            "nccl-tests' bus bandwidth against it.",
            "Place a sharded matmul under three roofs (compute, HBM, link) and find the "
            "per-chip slice below which it is communication-bound.",
            "Shard Llama-3-70B for serving: back out of running out of memory with too few "
            "GPUs, and of a slow link that makes more GPUs slower.",
            "Time a gradient all-reduce across nodes, then find the per-chip batch below "
            "which data-parallel training waits for it, and what overlapping them can buy.",
        ],
        minutes=45,
        reading=[
            ("How to Scale Your Model: sharded matmuls (ch. 3)",
             "https://jax-ml.github.io/scaling-book/sharding/"),
            ("How to Scale Your Model: training parallelism (ch. 5)",
             "https://jax-ml.github.io/scaling-book/training/"),
            ("NVIDIA nccl-tests: PERFORMANCE.md (algorithm and bus bandwidth)",
             "https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md"),
            ("Thakur, Rabenseifner, Gropp: collective operations in MPICH (IJHPCA 2005)",
             "https://doi.org/10.1177/1094342005051521"),
            ("Shoeybi et al.: Megatron-LM (2019)", "https://arxiv.org/abs/1909.08053"),
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
    ## Your cluster

    Pick the chip and the link that joins the chips. Everything below is in {PRECISION}
    (storage and math, dense peak).
    """)
    return


@app.cell
def _():
    device_picker = style.dropdown_on(hardware.picker_options(), OPENING["device"],
                                      label="Chip", searchable=True)
    link_picker = style.dropdown_on(collectives.link_options(), OPENING["link"],
                                    label="Link between chips", searchable=True)
    # Shown here and again next to each instrument (marimo keeps the copies in sync). Laid
    # out where the pickers are made, so a Chip or Link step does not re-run the cells that
    # only show them.
    context_controls = mo.hstack([device_picker, link_picker], justify="start", wrap=True)
    context_controls
    return context_controls, device_picker, link_picker


@app.cell
def _(device_picker, link_picker):
    _wait = INSTRUMENTS.gate("datasheet")
    mo.stop(_wait is not None, _wait)
    _problem = collectives.pair_problem(device_picker.value, link_picker.value)
    _cards = many_chips.datasheet_cards(device_picker.value, link_picker.value, PRECISION)
    mo.vstack([style.metric_cards(_cards), mo.md(many_chips.native_link_note(device_picker.value))]
              + ([style.error_callout(_problem, title="This chip and this link do not go together.")]
                 if _problem else []))
    return


@app.cell
def _():
    mo.md(r"""
    ## Part 1 · What does one all-reduce cost?
    """)
    return


@app.cell
def _():
    _lk = collectives.get_link(ALLREDUCE_REF["link"])
    style.scenario_card(
        "Mei Tan", "training-infrastructure engineer",
        f"Every training step we all-reduce {ALLREDUCE_REF['nbytes'] / 1e9:g} GB of bf16 "
        f"gradients across the {ALLREDUCE_REF['n']} GPUs of one node. They are joined by "
        f"{_lk.short_name}, and the datasheet says {_lk.quoted}. How long does that "
        "all-reduce take? I need the number to size our overlap buckets.")
    return


@app.cell
def _(lab):
    get_allreduce, set_allreduce = quiz.lock_state(lab, "lab06.allreduce_ms")
    return get_allreduce, set_allreduce


@app.cell
def _(get_allreduce, lab, set_allreduce):
    allreduce_form = quiz.numeric_form(
        lab, "lab06.allreduce_ms",
        question=f"**Prediction 1.** A ring all-reduce of **{ALLREDUCE_REF['nbytes'] / 1e9:g} GB** "
                 f"across **{ALLREDUCE_REF['n']} GPUs** joined by "
                 f"{collectives.get_link(ALLREDUCE_REF['link']).name}, at the link's ideal "
                 f"rate, **{collectives.get_link(ALLREDUCE_REF['link']).one_way_text} per GPU "
                 "in each direction** (one way, the datasheet's rate with nothing lost): how "
                 "many **milliseconds** does it take?",
        units="ms", lo=0.001, hi=10000, locked=get_allreduce(), on_lock=set_allreduce)
    quiz.prediction_panel(allreduce_form, get_allreduce())
    return


@app.cell
def _(get_allreduce, lab):
    _ideal_s = collectives.link_time(**ALLREDUCE_REF)  # the ring at the ideal one-way rate
    allreduce_prediction = get_allreduce() or reveal.reference(
        lab, "lab06.allreduce_ms", quiz.reference_value(_ideal_s * 1e3), units="ms",
        explanation=many_chips.allreduce_derivation(ALLREDUCE_REF))
    reveal.card(allreduce_prediction)
    return (allreduce_prediction,)


@app.cell
def _():
    # one ring of 2 to 8 chips: a link's own domain (what happens across nodes is Part 3's)
    workers_slider = mo.ui.slider(steps=[2, 4, 8], value=8, show_value=True,
                                  label="Participants n")
    # Laid out here: the panel below names no widget, so an n step does not re-run it.
    workers_controls = mo.hstack([workers_slider], justify="start")
    return workers_controls, workers_slider


@app.cell
def _(allreduce_prediction, link_picker, workers_controls):
    _wait = INSTRUMENTS.gate("allreduce", allreduce_prediction)
    mo.stop(_wait is not None, _wait)
    allreduce_open = True  # the cells below open with this one (one notice while closed)
    mo.hstack([link_picker, workers_controls], justify="start", wrap=True)
    return (allreduce_open,)


@app.cell
def _(allreduce_open, allreduce_prediction, link_picker, workers_slider):
    mo.stop(not allreduce_open)
    _n = int(workers_slider.value)
    # the prediction, at the question's size (it was asked for n = 8 on NVLink 4)
    _mark = (f"your prediction (n = {ALLREDUCE_REF['n']}, "
             f"{collectives.get_link(ALLREDUCE_REF['link']).short_name})",
             ALLREDUCE_REF["nbytes"], allreduce_prediction.value / 1e3, "danger")
    _sizes = np.geomspace(1e3, 1e10, 57)
    _keys = list(dict.fromkeys([link_picker.value, "nvlink4", "pcie5-x16", "ib-ndr"]))
    try:
        allreduce_figure = figures.ring_allreduce_figure(
            _keys, _n, _sizes, achievable_link=link_picker.value, marks=[_mark])
    except (KeyError, ValueError) as _exc:
        allreduce_figure = style.error_callout(_exc)
    allreduce_figure  # the figure alone: a stack would serialise it on every update (slow)
    return


@app.cell
def _(allreduce_open, link_picker, workers_slider):
    mo.stop(not allreduce_open)
    try:
        _cards = many_chips.ring_cards(link_picker.value, int(workers_slider.value))
    except ValueError as _exc:
        mo.stop(True, style.error_callout(_exc))
    style.metric_cards(_cards)
    return


@app.cell
def _(allreduce_prediction, lab):
    # the ring's time and what NCCL reaches: what the all-reduce instrument shows
    mo.stop(INSTRUMENTS.gate("allreduce", allreduce_prediction) is not None)
    allreduce_actual_ms = collectives.link_time(**ALLREDUCE_REF) * 1e3
    _lk, _n = collectives.get_link(ALLREDUCE_REF["link"]), ALLREDUCE_REF["n"]
    mo.vstack([
        quiz.compare(allreduce_prediction, quiz.reference_value(allreduce_actual_ms), units="ms",
                     lab=lab, actual_label=f"the question's ring: n = {_n} on "
                                           f"{_lk.short_name}, at the ideal one-way rate"),
        mo.md(many_chips.allreduce_model_note(ALLREDUCE_REF))])
    return (allreduce_actual_ms,)


@app.cell
def _(allreduce_actual_ms, lab):
    quiz.explain_form(
        lab, "lab06.allreduce_ms",
        observe_label=f"The model gives {allreduce_actual_ms:.3g} ms. Which of the datasheet's "
                      "numbers did you use, and which factor did you miss or add?",
        explain_label="Why does a ring all-reduce send about twice S per GPU whatever n, "
                      "and why is the right bandwidth the one-way figure?")
    return


@app.cell
def _(allreduce_prediction):
    # the ring's equations and its measured bus bandwidth: what the all-reduce instrument shows
    mo.stop(INSTRUMENTS.gate("allreduce", allreduce_prediction) is not None)
    style.math_peek("the α-β model of a ring collective", r"""
    A ring of $n$ participants cuts the message of $S$ bytes into $n$ chunks. A
    **reduce-scatter** passes chunks around the ring $n-1$ times, each step sending $S/n$
    bytes one way on every link at once; an **all-gather** does the same; an **all-reduce** is
    one of each. With per-step latency $\alpha$ and one-way bandwidth $B$:

    $$t_{\text{AR}} = 2(n-1)\,\alpha + \frac{2(n-1)}{n}\,\frac{S}{B}, \qquad
    t_{\text{RS}} = t_{\text{AG}} = (n-1)\,\alpha + \frac{n-1}{n}\,\frac{S}{B}.$$

    Latency dominates below $S^* = n\,\alpha B$ (all-reduce) and bandwidth above it. A tree
    all-reduce pays $2\lceil\log_2 n\rceil\,\alpha$ for about $2S/B$: fewer steps, so NCCL
    prefers trees for small messages on many GPUs.

    """ + many_chips.bus_bandwidth_text() + """

    Across nodes, where a second kind of link joins the nodes, the algorithm matters again:
    Part 3.
    """)
    return


@app.cell
def _():
    mo.md(r"""
    ### Measure α and β on this machine

    The button below starts worker processes that talk through `torch.distributed`: on
    several CUDA GPUs, one process per GPU over NCCL; otherwise CPU processes over gloo on
    the loopback interface. They time all-reduce, all-gather and reduce-scatter from 4 KiB to
    64 MiB (as far as the time budget allows), and the lab fits α and β to what they measure.
    Nothing runs until you press the button; the workers are stopped when the run ends,
    fails, runs out of time, or you stop the cell.
    """)
    return


@app.cell
def _():
    # as many workers as this machine can run (gloo: one process per CPU), so the slider
    # offers no setting that a press would refuse
    comm_workers = mo.ui.slider(steps=list(range(2, measure.worker_limit() + 1)), value=2,
                                show_value=True, label="Worker processes")
    comm_budget = mo.ui.slider(4, 30, value=8, show_value=True,
                               label="Time budget (s, after the workers start)")
    comm_backend_choice = mo.ui.dropdown(
        {"auto: NCCL with 2+ GPUs, else gloo": "auto", "gloo (CPU processes)": "gloo",
         "nccl (one process per GPU)": "nccl"},
        value="auto: NCCL with 2+ GPUs, else gloo", label="Backend")
    # read at the press, so a settings step re-runs no cell
    comm_settings = live.read_at_press(workers=comm_workers, budget=comm_budget,
                                       backend=comm_backend_choice)
    mo.hstack([comm_workers, comm_budget, comm_backend_choice], justify="start", wrap=True)
    return (comm_settings,)


@app.cell
def _():
    comm_button = live.run_button("Measure collectives on this machine")
    comm_button
    return (comm_button,)


@app.cell
def _():
    # The last measurement that succeeded: a press that is refused or fails says why above
    # it, and leaves it on the page.
    get_comm_last, set_comm_last = mo.state(None)
    return get_comm_last, set_comm_last


@app.cell
def _(
    allreduce_prediction,
    comm_button,
    comm_settings,
    get_comm_last,
    lab,
    set_comm_last,
):
    _wait = INSTRUMENTS.gate("measure", allreduce_prediction)
    mo.stop(_wait is not None, _wait)
    mo.stop(not comm_button.value, mo.callout(mo.md(live.IDLE_MESSAGE), kind="neutral"))
    from labs.core import comm_bench as _comm_bench  # once pressed: a closed gate need not load it

    _s = comm_settings()  # workers, budget, backend
    comm_status = _comm_bench.comm_backend(_s.backend)  # imports torch: now
    if comm_status.available:
        _run, _problem = live.run_if_pressed(
            comm_button, lambda progress: _comm_bench.measure_collectives(
                _s.workers, _comm_bench.COMM_SIZES, _s.backend, budget_s=_s.budget,
                progress=progress),
            total=1 + 3 * len(_comm_bench.COMM_SIZES),
            title=f"Timing collectives across {_s.workers} workers")
    else:
        _run, _problem = None, mo.callout(
            mo.md(f"**No collective can run here.** {comm_status.message}"), kind="warn")
    if _run is not None:
        set_comm_last(_run)
        lab.record("result", "lab06.measured_collectives", _run.ledger_payload())
        _note = mo.callout(mo.md(many_chips.measured_note(comm_status.message, _run)),
                           kind="info")
    else:
        _run = get_comm_last()  # the last good measurement, if any, stays below
        mo.stop(_run is None, _problem)
        _note = mo.vstack([_problem, mo.md(many_chips.last_measurement_note(_run))])
    comm_run = _run
    _note
    return (comm_run,)


@app.cell
def _(comm_run):
    _ok = [r for r in comm_run.rows if r["status"] == "ok"]
    mo.stop(not _ok, style.error_callout("No message size could be measured within the "
                                         "budget: raise the time budget and measure again."))
    comm_figure = figures.measured_collectives_figure(
        _ok, comm_run.fits.values(), backend=comm_run.backend, n=comm_run.world_size)
    comm_figure
    return


@app.cell
def _(comm_run):
    _cards = many_chips.fit_cards(comm_run.fits.values())
    _why = [mo.md(f"**{op}:** no fit ({why}).") for op, why in comm_run.fit_errors.items()]
    mo.vstack(([style.metric_cards(_cards)] if _cards else []) + _why)
    return


@app.cell
def _(comm_run):
    live.results_table(comm_run.rows, filename="lab06_collectives.csv",
                       columns=["op", "bytes", "n", "backend", "status", "reps", "median_s",
                                "p10_s", "p90_s", "busbw_gbs"])
    return


@app.cell
def _(comm_run, lab):
    mo.stop(not comm_run.rows)
    quiz.explain_form(
        lab, "lab06.measured_collectives",
        observe_label="Your machine's α and β for each collective, and the size below which "
                      "latency dominates. How far are they from NVLink's?",
        explain_label="What sets α and β between processes on one machine (no link at all), "
                      "and why do small messages stay near α whatever the bandwidth?")
    return


@app.cell
def _():
    mo.md(r"""
    ## Part 2 · Tensor parallelism: three questions first

    Two engineers shard a model's matmuls across GPUs. Their three questions come first,
    together: the instruments that follow (a sharded block under three roofs, and a decode
    step sharded n ways) answer all three, and time an all-reduce as Prediction 1 asks, so
    they open once Predictions 1 to 4 are locked.
    """)
    return


@app.cell
def _():
    _slow, _fast = SHARD_REF["slow"], SHARD_REF["fast"]
    style.scenario_card(
        "Ravi Iyer", "inference engineer",
        f"Our model's MLP blocks are GeLU MLPs, as in GPT-3 and the Megatron-LM paper: an up "
        "projection, a GeLU, a down projection. We split every block "
        f"{SHARD_REF['n']} ways, Megatron style: the up projection is column-parallel (each "
        "GPU computes its slice F/n of the hidden dimension, no communication), the down "
        "projection is row-parallel (each GPU multiplies its F/n slice), and one all-reduce "
        "sums the partial outputs, "
        f"{SHARD_REF['n_out']:,} wide. The old servers are {hardware.get(_slow[0]).name} "
        f"cards joined by {collectives.get_link(_slow[1]).name}; the new ones "
        f"{hardware.get(_fast[0]).name} GPUs joined by {collectives.get_link(_fast[1]).name}. "
        "With a big batch, how thick must each GPU's slice F/n be before the all-reduce stops "
        "being the bottleneck?")
    return


@app.cell
def _(lab):
    get_shard_slow, set_shard_slow = quiz.lock_state(lab, "lab06.tp_shard_pcie")
    get_shard_fast, set_shard_fast = quiz.lock_state(lab, "lab06.tp_shard_nvlink")
    return get_shard_fast, get_shard_slow, set_shard_fast, set_shard_slow


@app.cell
def _(get_shard_fast, get_shard_slow, lab, set_shard_fast, set_shard_slow):
    # the rate the roofline uses is named with its number: one way, per direction
    _block = (": one GeLU MLP block, 2 matmuls and one ring all-reduce (NCCL_ALGO=Ring), "
              "at large batch. By the roofline (compute at the dense peak, the link at its "
              "ideal rate, ")
    _ask = (" per GPU in each direction), below what per-GPU slice **F/n** (elements of the "
            "hidden dimension) is the block communication-bound?")

    shard_slow_form = quiz.numeric_form(
        lab, "lab06.tp_shard_pcie",
        question=f"**Prediction 2.** {SHARD_REF['n']} "
                 f"**{hardware.get(SHARD_REF['slow'][0]).name}** GPUs ({PRECISION}, dense) "
                 f"joined by **{collectives.get_link(SHARD_REF['slow'][1]).name}**{_block}"
                 f"{collectives.get_link(SHARD_REF['slow'][1]).one_way_text}{_ask}",
        units="elements", integer=True, lo=1, hi=1e7, locked=get_shard_slow(),
        on_lock=set_shard_slow)
    shard_fast_form = quiz.numeric_form(
        lab, "lab06.tp_shard_nvlink",
        question=f"**Prediction 3.** {SHARD_REF['n']} "
                 f"**{hardware.get(SHARD_REF['fast'][0]).name}** GPUs ({PRECISION}, dense) "
                 f"joined by **{collectives.get_link(SHARD_REF['fast'][1]).name}**{_block}"
                 f"{collectives.get_link(SHARD_REF['fast'][1]).one_way_text}{_ask}",
        units="elements", integer=True, lo=1, hi=1e7, locked=get_shard_fast(),
        on_lock=set_shard_fast)
    mo.vstack([quiz.prediction_panel(shard_slow_form, get_shard_slow()),
               quiz.prediction_panel(shard_fast_form, get_shard_fast())])
    return


@app.cell
def _(get_shard_fast, get_shard_slow, lab):
    def _reference(item, key):
        _dev, _link = SHARD_REF[key]
        _m, _n = SHARD_REF["matmuls"], SHARD_REF["n"]
        _k = sharding.tp_critical_shard(_dev, PRECISION, _link, _n, matmuls=_m)
        return reveal.reference(
            lab, item, round(_k), units="elements",
            explanation=many_chips.tp_shard_derivation(_dev, _link, _n, _m, PRECISION))

    shard_slow_prediction = get_shard_slow() or _reference("lab06.tp_shard_pcie", "slow")
    shard_fast_prediction = get_shard_fast() or _reference("lab06.tp_shard_nvlink", "fast")
    mo.vstack([c for c in (reveal.card(shard_slow_prediction),
                           reveal.card(shard_fast_prediction)) if c is not None])
    return shard_fast_prediction, shard_slow_prediction


@app.cell
def _():
    _m, _d = models.get(SERVE_REF["model"]), hardware.get(SERVE_REF["device"])
    style.scenario_card(
        "Dana Okafor", "ML-infrastructure lead",
        f"{_m.name} in bf16 is {_m.weight_bytes('bf16') / 1e9:.0f} GB of weights: it does not "
        f"fit on one {_d.name}, which holds {_d.memory_text}, so we shard it with tensor "
        "parallelism. "
        f"Our inference boxes are {_d.name} cards joined by "
        f"{collectives.get_link(SERVE_REF['link']).name}. Every layer now ends in two "
        "all-reduces. I want one user at the full "
        f"{SERVE_REF['seq_len']:,}-token context to get as many tokens/s as possible: do we "
        "just keep adding GPUs?")
    return


@app.cell
def _(lab):
    get_serve, set_serve = quiz.lock_state(lab, "lab06.tp_comm_degree")
    return get_serve, set_serve


@app.cell
def _(get_serve, lab, set_serve):
    _lk = collectives.get_link(SERVE_REF["link"])
    _nic = collectives.get_link(collectives.SCALE_OUT_LINK)
    serve_form = quiz.choice_form(
        lab, "lab06.tp_comm_degree",
        question=f"**Prediction 4.** {models.get(SERVE_REF['model']).name}, bf16, one "
                 f"sequence at {SERVE_REF['seq_len']:,} tokens, on "
                 f"**{hardware.get(SERVE_REF['device']).name}** GPUs joined by "
                 f"**{_lk.name}**, {_lk.domain} cards per box; beyond {_lk.domain} GPUs the "
                 f"cards span two boxes, joined by **one {_nic.short_name} NIC per "
                 "GPU**. The collectives run NCCL's Ring (one ring through every GPU); each "
                 f"ring step costs **α = {_lk.latency_us:g} µs** on PCIe and "
                 f"**{_nic.latency_us:g} µs** when it crosses between boxes (stated), links "
                 f"at their ideal rates per direction ({_lk.short_name} {_lk.one_way_text} per "
                 f"GPU each way, each NIC {_nic.one_way_text} each way). Sharding it more and "
                 "more ways, at which "
                 "tensor-parallel degree (the first that fits in memory or later) does a "
                 "decode step first spend **more time in its collectives than in its "
                 "matmuls**?",
        options=SERVE_OPTIONS, locked=get_serve(), on_lock=set_serve)
    quiz.prediction_panel(serve_form, get_serve())
    return


@app.cell
def _(get_serve, lab):
    _ref = sharding.first_comm_bound_degree(SERVE_REF["model"], SERVE_REF["device"],
                                            SERVE_REF["link"], batch=SERVE_REF["batch"],
                                            seq_len=SERVE_REF["seq_len"])
    serve_prediction = get_serve() or reveal.reference(
        lab, "lab06.tp_comm_degree", _ref,
        label=next(k for k, v in SERVE_OPTIONS.items() if v == _ref),
        explanation=many_chips.serving_derivation(SERVE_REF))
    reveal.card(serve_prediction)
    return (serve_prediction,)


@app.cell
def _(
    allreduce_prediction,
    serve_prediction,
    shard_fast_prediction,
    shard_slow_prediction,
):
    # what Part 2's instruments wait for: Predictions 1 to 4, in the order asked
    tp_predictions = (allreduce_prediction, shard_slow_prediction, shard_fast_prediction,
                      serve_prediction)
    return (tp_predictions,)


@app.cell
def _():
    mo.md(r"""
    ### The third roof: the link

    A sharded block has three resources: the chip's compute, its HBM, and the link its
    all-reduce crosses. Move the slice F/n, the batch and the link, and watch which roof binds.
    """)
    return


@app.cell
def _():
    _pow2 = [2 ** i for i in range(7, 18)]  # 128 ... 131072
    shard_k_slider = mo.ui.slider(steps=_pow2, value=1024, show_value=True,
                                  label="F/n: per-GPU slice of the hidden dimension")
    # tensor parallelism inside one node: the link's own ring
    shard_n_slider = mo.ui.slider(steps=[2, 4, 8], value=8, show_value=True,
                                  label="GPUs n")
    shard_tokens_slider = mo.ui.slider(steps=[2 ** i for i in range(0, 17)], value=4096,
                                       show_value=True, label="Batch T (tokens)")
    # matmuls per all-reduce; opens on the question's GeLU block
    shard_block = mo.ui.dropdown(SHARD_BLOCKS, value=next(
        k for k, v in SHARD_BLOCKS.items() if v == SHARD_REF["matmuls"]), label="Block")
    # Laid out here, where the sliders are made: the panel that shows this names none, so a
    # step re-runs only the cells that read a value.
    shard_controls = mo.hstack([shard_block, shard_k_slider, shard_n_slider,
                                shard_tokens_slider], wrap=True)
    return (
        shard_block,
        shard_controls,
        shard_k_slider,
        shard_n_slider,
        shard_tokens_slider,
    )


@app.cell
def _(
    device_picker,
    link_picker,
    shard_block,
    shard_k_slider,
    shard_n_slider,
    shard_tokens_slider,
    tp_predictions,
):
    _wait = INSTRUMENTS.gate("tp_block", *tp_predictions)
    mo.stop(_wait is not None, _wait)
    tp_block_open = True  # the panel below opens with this cell (one notice while closed)
    _n = int(shard_n_slider.value)
    try:
        shard_mm = sharding.sharded_matmul(int(shard_tokens_slider.value),
                                           int(shard_k_slider.value) * _n, SHARD_REF["n_out"],
                                           _n, PRECISION, matmuls=int(shard_block.value))
        shard_now = sharding.shard_times(shard_mm, device_picker.value, link_picker.value)
        shard_error = None
    except (KeyError, ValueError) as _exc:
        shard_mm = shard_now = None
        shard_error = many_chips.pair_error(device_picker.value, link_picker.value, _exc)
    return shard_error, shard_mm, shard_now, tp_block_open


@app.cell
def _(context_controls, shard_controls, tp_block_open):
    # opens with the instrument's cell above, and stays to back out with when it fails
    mo.stop(not tp_block_open)
    mo.vstack([context_controls, shard_controls])
    return


@app.cell
def _(device_picker, link_picker, shard_error, shard_mm, shard_now):
    mo.stop(shard_error is not None, style.error_callout(shard_error))
    # the link's roof, and other links this chip can really be joined by for comparison
    three_roofs = figures.block_roofs_figure(device_picker.value, PRECISION, link_picker.value,
                                             shard_mm, shard_now)
    three_roofs  # the figure alone: a stack would serialise it on every update (slow)
    return


@app.cell
def _(device_picker, link_picker, shard_error, shard_mm, shard_now):
    mo.stop(shard_error is not None)
    mo.vstack([
        mo.hstack([mo.md("**This block is**"), style.regime_badge(shard_now.regime),
                   mo.md(f"(the {shard_now.binding} roof binds)")], justify="start"),
        style.metric_cards(many_chips.tp_block_cards(shard_mm, shard_now, device_picker.value,
                                                     link_picker.value, PRECISION))])
    return


@app.cell
def _(device_picker, link_picker, shard_error, shard_mm):
    mo.stop(shard_error is not None)
    _ts = np.unique(np.geomspace(1, 1 << 20, 41).round().astype(int))
    _times = [sharding.shard_times(shard_mm.at_tokens(int(t)), device_picker.value,
                                   link_picker.value) for t in _ts]
    shard_time_figure = figures.block_batch_figure(_ts, _times, k_shard=shard_mm.k_shard,
                                                   your_batch=shard_mm.tokens)
    shard_time_figure
    return


@app.cell
def _(lab, shard_fast_prediction, shard_slow_prediction, tp_block_open):
    # below the instrument it compares with, and open with it
    mo.stop(shard_slow_prediction is None or shard_fast_prediction is None
            or not tp_block_open)
    shard_actual = {key: sharding.tp_critical_shard(SHARD_REF[key][0], PRECISION,
                                                    SHARD_REF[key][1], SHARD_REF["n"],
                                                    matmuls=SHARD_REF["matmuls"])
                    for key in ("slow", "fast")}
    mo.vstack([mo.vstack([
        mo.md(many_chips.tp_case_heading(*SHARD_REF[_key], SHARD_REF["n"])),
        quiz.compare(_p, round(shard_actual[_key]), units="elements", lab=lab,
                     actual_label="the question's GeLU block, by the roofline")])
        for _p, _key in ((shard_slow_prediction, "slow"), (shard_fast_prediction, "fast"))])
    return (shard_actual,)


@app.cell
def _(lab, shard_actual):
    _ratio = shard_actual["slow"] / shard_actual["fast"]
    mo.vstack([
        quiz.explain_form(
            lab, "lab06.tp_shard_pcie",
            observe_label="Pick the H100 PCIe and PCIe Gen5, then set F/n just below and just "
                          "above the critical slice. Which roof binds on each side, and does "
                          "the batch change it?",
            explain_label="Why does the batch T cancel from the link intensity, and what is "
                          "left that a designer can change?"),
        quiz.explain_form(
            lab, "lab06.tp_shard_nvlink",
            observe_label=f"The two critical slices differ by {_ratio:.3g}×. Which two ratios "
                          "of the hardware make it up? At a small batch, which roof binds "
                          "instead?",
            explain_label="Why is a block with a thin slice communication-bound on any link "
                          "at large batch, why does pairing matmuls per all-reduce help, and "
                          "why does latency matter at small batch?"),
    ])
    return


@app.cell
def _(tp_predictions):
    # the block's equations: its link intensity, critical slice, regimes and the ring
    # all-reduce's bytes (Prediction 1's method), as the three-roof instrument shows them
    mo.stop(INSTRUMENTS.gate("tp_block", *tp_predictions) is not None)
    style.math_peek("the link roof of a Megatron MLP block", r"""
    A GeLU MLP $y = \text{gelu}(xW_u)\,W_d$ with $x: T \times N$, hidden size $F$, split over
    $n$ chips: $W_u$ by columns (each chip its $F/n$ slice, no communication), $W_d$ by rows
    (each chip multiplies its $F/n$ slice), then **one** all-reduce of the $T \times N$
    partial output. With $m = 2$ matmuls per all-reduce ($m = 3$ for Llama's SwiGLU MLP
    $\big(\text{silu}(xW_g) \odot xW_u\big) W_d$; $m = 1$ for a lone row-parallel matmul),
    per chip:

    $$F_{\text{FLOP}} = m\,\frac{2\,T F N}{n}, \qquad
    Q_{\text{link}} = \frac{2(n-1)}{n}\; T N b\ [\text{B, ring all-reduce}].$$

    The **link intensity** $F_{\text{FLOP}} / Q_{\text{link}} = \dfrac{m\,F/n}{(n-1)/n \cdot b}$
    does not depend on $T$ or $N$. The link roof caps throughput at
    $\min(\pi,\ I_{\text{link}} B)$; its ridge is $\pi / B$. The block is communication-bound
    below

    $$\left(\frac{F}{n}\right)^{\!*} = \frac{n-1}{n}\; \frac{b}{m}\; \frac{\pi}{B}
    \qquad\text{(a reduce-scatter sends half: half this).}$$

    At small $T$ the block is HBM-bound (it reads its $m F N/n$ weights whatever $T$)
    or latency-bound (the all-reduce pays $2(n-1)\alpha$ whatever its size): all three
    times are linear in $T$, so the link binds on one interval of batch sizes.
    """)
    return


@app.cell
def _():
    mo.md(r"""
    ### Sharding Llama-3-70B for serving
    """)
    return


@app.cell
def _():
    # the serving cluster's own chip and link, opening on the question's case
    serve_device = style.dropdown_on(hardware.picker_options(), SERVE_REF["device"],
                                     label="Serving chip", searchable=True)
    serve_link = style.dropdown_on(collectives.link_options(), SERVE_REF["link"],
                                   label="Link between the serving GPUs", searchable=True)
    serve_model = mo.ui.dropdown({m.name: m.key for m in models.MODELS.values()},
                                 value="Llama-3-70B", label="Model")
    serve_weights = mo.ui.dropdown({"bf16": "bf16", "fp8": "fp8", "int8": "int8",
                                    "int4 (g128)": "int4-g128"}, value="bf16",
                                   label="Weights stored as")
    serve_tp = mo.ui.slider(steps=list(sharding.TP_DEGREES), value=4, show_value=True,
                            label="Tensor-parallel degree (GPUs)")
    serve_batch = mo.ui.slider(steps=[2 ** i for i in range(0, 9)], value=1, show_value=True,
                               label="Batch (sequences)")
    serve_context = mo.ui.slider(steps=[1024, 2048, 4096, 8192], value=8192, show_value=True,
                                 label="Context (tokens)")
    # laid out where made, as Part 2's sliders are
    serve_controls = mo.vstack([
        mo.hstack([serve_device, serve_link], justify="start", wrap=True),
        mo.hstack([serve_model, serve_weights, serve_tp], justify="start", wrap=True),
        mo.hstack([serve_batch, serve_context], justify="start", wrap=True)])
    return (
        serve_batch,
        serve_context,
        serve_controls,
        serve_device,
        serve_link,
        serve_model,
        serve_tp,
        serve_weights,
    )


@app.cell
def _(
    serve_batch,
    serve_context,
    serve_device,
    serve_link,
    serve_model,
    serve_weights,
    tp_predictions,
):
    _wait = INSTRUMENTS.gate("serving", *tp_predictions)
    mo.stop(_wait is not None, _wait)
    serving_open = True  # the panel below opens with this cell (one notice while closed)
    _kw = dict(batch=int(serve_batch.value), seq_len=int(serve_context.value),
               weight_precision=serve_weights.value, compute=PRECISION)
    try:
        # the chosen link, and for comparison the chip's own link and a network link
        serve_rows = {k: sharding.tp_scaling(serve_model.value, serve_device.value, k, **_kw)
                      for k in many_chips.serving_links(serve_device.value, serve_link.value)}
        serve_error = None
    except (KeyError, ValueError) as _exc:
        serve_rows = None
        serve_error = many_chips.pair_error(serve_device.value, serve_link.value, _exc,
                                            "in the serving pickers above")
    return serve_error, serve_rows, serving_open


@app.cell
def _(serve_controls, serving_open):
    # opens with the instrument's cell above, and stays to back out with when it fails
    mo.stop(not serving_open)
    serve_controls
    return


@app.cell
def _(serve_error, serve_link, serve_rows, serve_tp):
    mo.stop(serve_error is not None, style.error_callout(serve_error))
    serve_now = next(s for s in serve_rows[serve_link.value] if s.n == serve_tp.value)
    serve_diagnosis = sharding.tp_diagnosis(serve_rows[serve_link.value], serve_now.n)
    _warning = many_chips.serving_warning(serve_diagnosis)
    mo.vstack([mo.md(f"**Memory per GPU** at {serve_now.n}-way:"),
               style.memory_budget_bar(serve_now.budget.terms, serve_now.budget.capacity_bytes)]
              + ([_warning] if _warning is not None else []))
    return (serve_now,)


@app.cell
def _(serve_error, serve_now):
    mo.stop(serve_error is not None)
    style.metric_cards(many_chips.serving_cards(serve_now))
    return


@app.cell
def _(serve_error, serve_link, serve_now, serve_rows):
    mo.stop(serve_error is not None)
    # where the step's time goes on the chosen chip and link: the two times Prediction 4 compares
    serve_time_figure = figures.decode_time_figure(serve_rows[serve_link.value], serve_link.value)
    serve_figure = figures.decode_throughput_figure(serve_rows, serve_link.value, serve_now)
    mo.vstack([serve_time_figure, serve_figure])
    return


@app.cell
def _(lab, serve_prediction, serving_open):
    # below the instrument it compares with, and open with it
    mo.stop(serve_prediction is None or not serving_open)
    serve_actual = sharding.first_comm_bound_degree(SERVE_REF["model"], SERVE_REF["device"],
                                                    SERVE_REF["link"], batch=SERVE_REF["batch"],
                                                    seq_len=SERVE_REF["seq_len"])
    _label = next(k for k, v in SERVE_OPTIONS.items() if v == serve_actual)
    quiz.compare(serve_prediction, serve_actual, lab=lab,
                 actual_label=many_chips.serving_comparison_label(_label, SERVE_REF,
                                                                  serve_actual))
    return (serve_actual,)


@app.cell
def _(lab, serve_actual):
    mo.stop(serve_actual is None)
    quiz.explain_form(
        lab, "lab06.tp_comm_degree",
        observe_label="Walk the degree up on PCIe, on NVLink (pick the H100 SXM) and with one "
                      "GPU per machine (InfiniBand): where does each run out of memory, where "
                      "do tokens/s peak, and where do they fall?",
        explain_label="Why do the matmuls' times fall as 1/n while the collectives' times "
                      "grow with n? What backs you out of each failure state?")
    return


@app.cell
def _(tp_predictions):
    # the decode step's equations, the ring all-reduce's time among them (Prediction 1's
    # method), as the serving instrument shows them
    mo.stop(INSTRUMENTS.gate("serving", *tp_predictions) is not None)
    style.math_peek("a decode step sharded n ways", r"""
    Per GPU, with weights $W$, KV cache $K_v$ and $H_{kv}$ KV heads:

    $$M = \frac{W}{n} + \frac{K_v}{\min(n, H_{kv})} + A \ \le\ f\,C, \qquad
    t_{\text{step}} = \max\!\left(\frac{F/n}{\pi},\ \frac{Q/n}{\beta}\right) +
    (2L+1)\,t_{\text{AR}}(B\,d\,b) + t_{\text{AG}}(B\,V\,b).$$

    Two all-reduces per layer (after the attention output and the MLP down projection,
    Megatron-LM), one for the vocab-parallel embedding, one all-gather of the logits. The
    collectives cannot hide behind the matmuls: the next layer needs their result. The
    matmul term falls as $1/n$. **Within one node** each all-reduce costs
    $2(n-1)\alpha + 2\frac{n-1}{n}\frac{S}{B}$, which grows with $n$; if one ring could grow
    without limit, past $n \approx \sqrt{W / (2(2L+1)\,\alpha\,\beta)}$ more GPUs would make
    each token slower. **Past one node** ($n = gM$: $M$ nodes of $g$ GPUs) NCCL's Ring still
    takes $2(n-1)$ steps, and the $2(M-1)$ that cross between nodes pay the NIC's
    $\alpha_{\text{NIC}}$: $(2(n-1) - 2(M-1))\,\alpha + 2(M-1)\,\alpha_{\text{NIC}}$ (NCCL's
    own latency model). The collectives' time jumps at the second node, yet more GPUs can
    still buy tokens/s while the matmuls keep shrinking. Whether they do depends on $\alpha$:
    read it off the figure.
    """)
    return


@app.cell
def _():
    mo.md(r"""
    ## Part 3 · Data-parallel training across nodes: when do gradients dominate?
    """)
    return


@app.cell
def _():
    _m, _d = models.get(TRAIN_REF["model"]), hardware.get(TRAIN_REF["device"])
    _lk, _nic = collectives.get_link(TRAIN_REF["link"]), collectives.get_link(TRAIN_REF["nic"])
    _adam = sharding.ADAM_MIXED_PRECISION_BYTES_PER_PARAM
    style.scenario_card(
        "Mei Tan", "training-infrastructure engineer",
        f"Next we pre-train {_m.name} data-parallel on our older cluster: {TRAIN_REF['n']} "
        f"{_d.name} GPUs in {TRAIN_REF['n'] // _lk.domain} DGX A100 nodes of {_lk.domain}, "
        f"{_lk.short_name} inside each node and {TRAIN_REF['nics_per_node']} "
        f"{_nic.short_name} NICs per node between them ("
        + ("one per GPU" if _lk.domain == TRAIN_REF["nics_per_node"] else
           f"one per {_lk.domain // TRAIN_REF['nics_per_node']} GPUs")
        + "). Each GPU has its own "
        "copy of the model and its own share of the batch, and every step all-reduces the "
        f"bf16 gradients ({sharding.gradient_bytes(_m, TRAIN_REF['grad_bytes']) / 1e9:.2f} GB). "
        "Adam's fp32 states are sharded across the GPUs (ZeRO-1): bf16 weights and gradients "
        f"plus fp32 master weights and two moments, {_adam:g} bytes a parameter, would be "
        f"{_m.params * _adam / 1e9:.0f} GB on each GPU, more than its {_d.memory_text}. The "
        "sharded update turns the all-reduce into a reduce-scatter and an all-gather that "
        "move the same bytes (ZeRO, Rajbhandari et al. 2020); the model below charges them "
        "as one all-reduce. For a message this large NCCL runs its Ring algorithm. Finance "
        f"wants a small batch, {TRAIN_REF['tokens_per_gpu']:,} tokens per GPU per step, to "
        "save memory. How long does each step's all-reduce take, and can the GPUs hide it?")
    return


@app.cell
def _(lab):
    get_train, set_train = quiz.lock_state(lab, "lab06.dp_allreduce_ms")
    return get_train, set_train


@app.cell
def _(get_train, lab, set_train):
    _m = models.get(TRAIN_REF["model"])
    _lk, _nic = collectives.get_link(TRAIN_REF["link"]), collectives.get_link(TRAIN_REF["nic"])
    _rails = TRAIN_REF["nics_per_node"]
    _per = _lk.domain // _rails
    # The node's hardware and the algorithm's name only: how NCCL's Ring uses the NICs is
    # the question's crux, told by the reveal and the explanation.
    train_form = quiz.numeric_form(
        lab, "lab06.dp_allreduce_ms",
        question=f"**Prediction 5.** {_m.name} ({_m.params / 1e9:.2f} B parameters), "
                 f"{TRAIN_REF['n']} {hardware.get(TRAIN_REF['device']).name} GPUs in nodes "
                 f"of {_lk.domain}: **{_lk.short_name}** inside a node; between nodes "
                 f"**{_rails} {_nic.short_name} NICs per node** ("
                 + ("one per GPU" if _per == 1 else f"one per {_per} GPUs")
                 + f", {_nic.quoted}). Each step all-reduces the **bf16 gradients** "
                 f"({sharding.gradient_bytes(_m, TRAIN_REF['grad_bytes']) / 1e9:.2f} GB) "
                 "with **NCCL's Ring algorithm** (NCCL_ALGO=Ring). Links at their ideal rates, "
                 f"per direction: {_lk.short_name} {_lk.one_way_text} per GPU each way, each "
                 f"NIC {_nic.one_way_text} each way. How many **milliseconds** does that "
                 "all-reduce take?",
        units="ms", lo=0.01, hi=1e6, locked=get_train(), on_lock=set_train)
    quiz.prediction_panel(train_form, get_train())
    return


@app.function
def training_step():
    """Prediction 5's case as the training instrument opens on it: the question's
    data-parallel step, overlapped. Its all-reduce, ``t_comm`` in ms to 3 significant
    digits, is the answer the reference reveals and the comparison shows."""
    return sharding.dp_step(
        TRAIN_REF["model"], TRAIN_REF["n"], TRAIN_REF["tokens_per_gpu"], TRAIN_REF["device"],
        PRECISION, TRAIN_REF["link"], overlap=True, grad_bytes=TRAIN_REF["grad_bytes"],
        nic=TRAIN_REF["nic"], nics_per_node=TRAIN_REF["nics_per_node"],
        algorithm=TRAIN_REF["algorithm"])


@app.cell
def _(get_train, lab):
    train_prediction = get_train() or reveal.reference(
        lab, "lab06.dp_allreduce_ms", quiz.reference_value(training_step().t_comm * 1e3),
        units="ms", explanation=many_chips.training_derivation(TRAIN_REF, training_step()))
    reveal.card(train_prediction)
    return (train_prediction,)


@app.cell
def _(
    allreduce_prediction,
    shard_fast_prediction,
    shard_slow_prediction,
    train_prediction,
):
    # what Part 3's instruments wait for: Predictions 1 to 3 and 5, in the order asked
    dp_predictions = (allreduce_prediction, shard_slow_prediction, shard_fast_prediction,
                      train_prediction)
    return (dp_predictions,)


@app.cell
def _():
    # the training cluster's own chip, links and algorithm, opening on the question's case
    train_device = style.dropdown_on(hardware.picker_options(), TRAIN_REF["device"],
                                     label="Training chip", searchable=True)
    train_link = style.dropdown_on(collectives.link_options(), TRAIN_REF["link"],
                                   label="Link inside a node", searchable=True)
    train_nic = style.dropdown_on({lk.name: k for k, lk in collectives.LINKS.items()
                                   if lk.kind == "scale-out"}, TRAIN_REF["nic"],
                                  label="NIC between nodes")
    train_algorithm = style.dropdown_on(
        {"NCCL's Ring (flat)": "ring", "hierarchical, levels pipelined": "hierarchical",
         "hierarchical, one level after the other": collectives.SEQUENTIAL},
        TRAIN_REF["algorithm"], label="All-reduce algorithm")
    train_model = mo.ui.dropdown({m.name: m.key for m in models.MODELS.values()},
                                 value=models.get(TRAIN_REF["model"]).name, label="Model")
    train_n = mo.ui.slider(steps=[2 ** i for i in range(1, 11)], value=TRAIN_REF["n"],
                           show_value=True, label="GPUs (data-parallel)")
    train_tokens = mo.ui.slider(steps=[2 ** i for i in range(8, 18)],
                                value=TRAIN_REF["tokens_per_gpu"], show_value=True,
                                label="Tokens per GPU per step")
    train_overlap = mo.ui.switch(value=False, label="Overlap the all-reduce with the backward "
                                                    "pass")
    train_nics = mo.ui.slider(steps=[1, 2, 4, 8], value=TRAIN_REF["nics_per_node"],
                              show_value=True, label="NICs per node (rails)")
    # laid out where made, as Part 2's sliders are
    train_controls = mo.vstack([
        mo.hstack([train_device, train_link, train_nic, train_algorithm], justify="start",
                  wrap=True),
        mo.hstack([train_model, train_n, train_tokens, train_nics, train_overlap],
                  justify="start", wrap=True)])
    return (
        train_algorithm,
        train_controls,
        train_device,
        train_link,
        train_model,
        train_n,
        train_nic,
        train_nics,
        train_overlap,
        train_tokens,
    )


@app.cell
def _(
    dp_predictions,
    train_algorithm,
    train_device,
    train_link,
    train_model,
    train_n,
    train_nic,
    train_nics,
    train_tokens,
):
    _wait = INSTRUMENTS.gate("training", *dp_predictions)
    mo.stop(_wait is not None, _wait)
    training_open = True  # the panel below opens with this cell (one notice while closed)
    # The step both ways ({overlap: step}): the overlap switch is read only by the cards
    # below, and the figure draws both, so a flip of the switch need not redraw it.
    _on = (train_device.value, PRECISION, train_link.value)
    train_how = dict(grad_bytes=TRAIN_REF["grad_bytes"], nics_per_node=int(train_nics.value),
                     nic=train_nic.value, algorithm=train_algorithm.value)
    try:
        train_steps = {_ov: sharding.dp_step(train_model.value, int(train_n.value),
                                             int(train_tokens.value), *_on, overlap=_ov,
                                             **train_how)
                       for _ov in (False, True)}
        train_critical = sharding.dp_critical_batch(*_on, int(train_n.value), **train_how)
        train_error = None
    except (KeyError, ValueError) as _exc:
        train_steps = train_critical = None
        train_error = many_chips.pair_error(train_device.value, train_link.value, _exc,
                                            "in the training pickers above")
    return train_critical, train_error, train_how, train_steps, training_open


@app.cell
def _(train_controls, training_open):
    # opens with the instrument's cell above, and stays to back out with when it fails
    mo.stop(not training_open)
    train_controls
    return


@app.cell
def _(
    train_critical,
    train_device,
    train_error,
    train_how,
    train_link,
    train_model,
    train_steps,
):
    mo.stop(train_error is not None, style.error_callout(train_error))
    _now = train_steps[False]  # n and the batch per GPU, the same both ways
    _ts = [2 ** i for i in range(6, 21)]
    _steps = [sharding.dp_step(train_model.value, _now.n, t, train_device.value, PRECISION,
                               train_link.value, **train_how)
              for t in _ts]
    train_figure = figures.dp_step_figure(_ts, _steps, critical=train_critical,
                                          your_batch=_now.tokens_per_chip)
    train_figure  # the figure alone: a stack would serialise it on every update (slow)
    return


@app.cell
def _(
    train_critical,
    train_error,
    train_how,
    train_link,
    train_overlap,
    train_steps,
):
    mo.stop(train_error is not None)
    train_now = train_steps[train_overlap.value]
    style.metric_cards(many_chips.training_cards(train_now, train_link.value, train_how,
                                                 train_critical))
    return


@app.cell
def _(lab, train_prediction, training_open):
    # below the instrument it compares with, and open with it
    mo.stop(train_prediction is None or not training_open)
    _s = training_step()
    train_actual_ms = quiz.reference_value(_s.t_comm * 1e3)
    mo.vstack([
        quiz.compare(train_prediction, train_actual_ms, units="ms", lab=lab,
                     actual_label=f"the question's case: NCCL's Ring over {TRAIN_REF['n']} "
                                  "GPUs, links at their ideal one-way rates"),
        mo.md(many_chips.training_wait_note(_s, TRAIN_REF))])
    return (train_actual_ms,)


@app.cell
def _(lab, train_actual_ms):
    mo.stop(train_actual_ms is None)
    quiz.explain_form(
        lab, "lab06.dp_allreduce_ms",
        observe_label="Switch the algorithm between NCCL's Ring and hierarchical, and change "
                      "the NICs per node and the GPUs: which link sets the all-reduce's time "
                      "in each? Then turn overlap on and move the batch per GPU: where does "
                      "the wait reach zero?",
        explain_label="Why does the Ring's time barely change with the number of nodes, why "
                      "does the parameter count cancel from the critical batch, and which "
                      "numbers of the hardware set it?")
    return


@app.cell
def _(dp_predictions):
    # the Ring's seconds per byte across nodes, the critical batch and the overlap: what the
    # training instrument shows
    mo.stop(INSTRUMENTS.gate("training", *dp_predictions) is not None)
    style.math_peek("data parallelism across nodes: the all-reduce against the backward pass",
                    r"""
    Each of $n$ chips runs forward ($2PT$ FLOPs for $P$ parameters and $T$ tokens) and backward
    ($4PT$, Kaplan et al. 2020), and all-reduces $P$ gradients of $g$ bytes:
    $t_{\text{comm}} \approx P g\, c$, with $c$ the all-reduce's seconds per byte.

    **NCCL's Ring across nodes** ($M$ nodes of $g_n$ GPUs, $r$ NICs of $B_{\text{NIC}}$ each,
    link $B$ inside): one ring per NIC, each through all $n$ GPUs, so every GPU's link and
    every NIC carries $2(n-1)/n$ of its ring's share:

    $$c_{\text{Ring}} = \frac{2(n-1)}{n} \Big/ \min\!\left(B,\ r\,B_{\text{NIC}}\right),$$

    whatever $M$: the node's NICs together cap the bus bandwidth (nccl-tests: 192 GB/s on two
    DGX A100 with 8 HDR NICs, 96 GB/s on A100 nodes with 4). A **hierarchical** all-reduce (reduce-scatter in the node, an
    all-reduce of each GPU's $1/g_n$ share over its own NIC, all-gather in the node) sends only
    $2(M-1)/M$ of that share through the NICs. With its two levels **pipelined** (chunks flow
    through both at once) it takes the slower of $2(g_n-1)/g_n / B$ and
    $2(M-1)/M \cdot 1/(r B_{\text{NIC}})$, faster than the Ring at a few nodes; run **one
    level after the other**, the two add, and with the NICs close to $B$ that is slower than
    the Ring.

    Gradients are all-reduced in buckets as the backward pass produces them, so **only the
    backward pass** can hide the all-reduce; the forward pass needs the updated weights:

    $$t_{\text{wait}} = \max(0,\ t_{\text{comm}} - t_{\text{bwd}}), \qquad
    t_{\text{step}} = t_{\text{fwd}} + \max(t_{\text{bwd}},\ t_{\text{comm}}), \qquad
    t_{\text{bwd}} = \frac{4PT}{\pi}.$$

    Setting $t_{\text{bwd}} = t_{\text{comm}}$ gives the **critical batch per chip**
    $T^* = g\,c\,\pi / 4$: $P$ cancels. Across many H100 nodes with the Ring it is about
    $\pi / 400$ GB/s (bf16), the scaling book's 2,475 tokens. Below $T^*$ the chips wait for
    the network even with perfect overlap. Overlap turns
    $t_{\text{fwd}} + t_{\text{bwd}} + t_{\text{comm}}$ into
    $t_{\text{fwd}} + \max(t_{\text{bwd}}, t_{\text{comm}})$: at most $10/6 \approx 1.67\times$
    (when $t_{\text{comm}} = t_{\text{bwd}}$), $1.5\times$ when the all-reduce equals the whole
    compute, never $2\times$.
    """)
    return


@app.cell
def _(tp_predictions, train_prediction):
    _gate = style.takeaways_gate((*tp_predictions, train_prediction))
    mo.stop(_gate is not None, _gate)
    style.takeaways([
        "A ring collective costs steps × α plus bytes over the one-way bandwidth: an "
        "all-reduce moves about 2 × S per chip whatever n. Small messages pay α, large ones "
        "pay bandwidth; nccl-tests' bus bandwidth compares with the link's one-way figure, and "
        f"a ring reaches about {collectives.NVLINK_ACHIEVABLE.fraction:.0%} of it on 8 H100s. "
        "NCCL's default all-reduce on an NVSwitch node (NVLink SHARP) is not a ring: the "
        f"switch sums the data, ~{collectives.NVLS_H100.busbw_gbs:g} GB/s bus bandwidth.",
        "Datasheets quote NVLink and PCIe in both directions: halve them for a ring step.",
        "A chip that exchanges data has a third roof: link intensity (FLOPs per byte sent) "
        "against the link ridge π / B. A Megatron block's link intensity depends on its "
        "per-chip slice F/n and on how many matmuls share its one all-reduce, not on the "
        "batch: thin slices are communication-bound.",
        "Tensor parallelism trades memory for communication: too few GPUs run out of memory, "
        "too many over a slow link spend each step in collectives, and tokens/s fall as GPUs "
        "are added.",
        "Across nodes, say which algorithm: NCCL's Ring runs one ring per NIC through every "
        "GPU, so the node's NICs together (not one NIC, not NVLink) set its bus bandwidth, "
        "whatever the node count; a hierarchical all-reduce sends less through the NICs and, "
        "with its two levels pipelined, can beat it at a few nodes (run one level after the "
        "other, it can be slower).",
        "Data parallelism is communication-bound below a critical batch per chip set by π and "
        "the all-reduce's bandwidth alone; overlap hides the all-reduce only behind the "
        "backward pass, so below it each GPU waits t_comm − t_bwd per step, and overlap buys "
        "at most 1.67×.",
    ])
    return


if __name__ == "__main__":
    app.run()
