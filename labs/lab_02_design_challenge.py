import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", css_file="labs.css")

with app.setup:
    import marimo as mo

    from labs.core import (figures, hardware, models, precision, quiz, reveal, roofline,
                           serving, style)
    from labs.core import units
    from labs.core import precision_study

    LAB_ID = "lab02"

    # The reference case of the OOM prediction (Part 2): fixed, so the answer does not move when
    # the student changes the pickers after locking.
    OOM_REF = {"model": "llama-3-8b", "hw": "h100-sxm", "seq_len": 8192,
               "weight_precision": "bf16", "kv_precision": "bf16"}
    # The decode-dominance question (Part 1): Dana's Jetson prototype, bf16, batch 1, 4k context.
    DOMINANT_REF = {"model": "llama-3-8b", "hw": "jetson-agx-orin-64gb", "batch": 1,
                    "seq_len": 4096}
    # What each prediction's answer follows from, and what each instrument shows (LABS_SPEC §3):
    # an instrument opens once every prediction whose quantities it shows is locked. Each gate
    # is given just those predictions (INSTRUMENTS.answered_by), so that locking another one
    # re-runs none of its cells.
    INSTRUMENTS = quiz.Instruments(
        answers={
            # which operations take a decode step's time: the step's time split by group
            "lab02.decode_dominant": ["choice:decode_dominant", "time:decode", "share:decode"],
            # the batch that overflows: the memory held by weights, KV cache and activations,
            # and so the bytes a sequence's KV cache takes (per token or per sequence)
            "lab02.oom_batch": ["count:oom_batch", "bytes:memory", "bytes:kv_cache"],
        },
        instruments={
            # Part 1, Dana's decode step (fixed, as the question states it): the layer rooflines
            # (AI, ridges, regimes, the device's roofs), the step's time by group and its share,
            # the comparison, the reflection and the math peek. A memory-bound op's time is
            # its bytes over the bandwidth, and its FLOPs over its AI are its bytes too: the
            # attention bar and hover give the KV cache's bytes per token, Prediction 2's.
            "dana": ["choice:decode_dominant", "time:decode", "share:decode", "regime",
                     "intensity", "throughput", "bandwidth", "bytes:kv_cache"],
            # Part 2, Sam's case (fixed): its budget bar at the first batch that runs out (and
            # its share of the usable memory), the comparison, the reflection and the math peek
            # (the KV cache's bytes per token; query heads count it 4x too high; why decode
            # attention's AI stays a few FLOP/B, memory-bound)
            "sam": ["count:oom_batch", "bytes:memory", "bytes:kv_cache", "share:memory",
                    "ratio:query_heads", "intensity:attention", "regime:attention"],
            # Part 3, your design: decode and prefill bounds, the layer rooflines, the time by
            # group, the memory budget. A decode step reads the bytes the design holds, so its
            # bounds answer both predictions for any batch, not only the budget bar.
            "explorer": ["time", "share", "throughput", "bytes", "bandwidth", "intensity",
                         "regime", "count", "ratio:weight_only_measured"],
            # Part 4, the live check of a design against a target
            "challenge": ["time", "throughput", "bytes", "bandwidth", "count", "regime", "share",
                          "ratio:weight_only_measured"],
        })


@app.function
def op_roofline(ops, device, compute, title):
    """core's per-layer ops on the device's roofline, one point each (numbers in the
    hover), labelled on leader lines so that ops of similar AI stay legible. Two compute
    ceilings: the matmul roof of ``compute`` and the vector (non-tensor) ceiling that
    norms and softmax run at; each op sits on its own. The hover gives each op's bytes, the
    KV cache's among them: every chart drawn with it waits for Prediction 2."""
    points = [figures.Point(op.name, op.ai, tflops=float(
        roofline.attainable_tflops(op.ai, device, op.compute)), hover={
        "per layer": f"{op.flops:.3g} FLOP, {units.format_bytes(op.bytes)} moved",
        "runs on": ("vector units (non-tensor)" if op.compute == roofline.VECTOR
                    else f"{op.compute} matmul units"),
        "time bound per layer": units.format_seconds(roofline.cost_time(op, device).lower),
        "kernels": op.kernels}) for op in ops]
    return figures.roofline_figure([(device, compute), (device, roofline.VECTOR)], points,
                                   title=title, height=430, label_points="leaders")


@app.cell
def _():
    style.lab_header(
        "Design Challenge: serving an LLM without running out of memory",
        "An ML-infrastructure lead must serve Llama-3 on an edge device and on a datacenter "
        "GPU, within a memory budget and a latency/throughput target.",
        goals=[
            "Place a transformer layer's operations (GEMMs, attention fused and unfused, "
            "softmax, RMSNorm) on the roofline for prefill and for decode.",
            "Bound decode tokens/s and prefill time with the roofline: bytes or FLOPs, which "
            "one and when?",
            "Budget memory as weights + KV cache + activations, and find the batch at which "
            "the KV cache overflows the device.",
            "Commit a design that meets a stated target on an edge device and on a datacenter "
            "GPU at the rates real kernels reach, not only at the spec sheet's.",
        ],
        minutes=45,
        reading=[
            ("Kipply: Transformer inference arithmetic",
             "https://kipp.ly/transformer-inference-arithmetic/"),
            ("How to Scale Your Model: all about transformer inference",
             "https://jax-ml.github.io/scaling-book/inference/"),
            ("Kwon et al.: PagedAttention / vLLM (SOSP 2023)", "https://arxiv.org/abs/2309.06180"),
            ("Williams, Waterman, Patterson: Roofline (CACM 2009)",
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
    mo.md(r"""
    ## Part 1 · Where does a decode step's time go?
    """)
    return


@app.cell
def _():
    _hw = hardware.get(DOMINANT_REF["hw"])
    _step = models.step_bound(phase="decode", **DOMINANT_REF)
    _peak = _hw.peak_tflops("bf16")
    style.scenario_card(
        "Dana Okafor", "ML-infrastructure lead",
        "We have to serve our Llama-3-8B assistant in two places: on a Jetson in the field "
        "robot and on a GPU in our datacenter.\n\n"
        f"The Jetson prototype generates at most {1 / _step.seconds:.1f} tokens/s for one user "
        f"(bf16, {DOMINANT_REF['seq_len']:,}-token context). Its GPU does {_peak:g} TFLOP/s in "
        "bf16 (dense), and one token "
        f"needs only {_step.flops / 1e9:.0f} GFLOP, so on paper it could do "
        f"{_peak * 1e12 / _step.flops:,.0f} tokens/s. Before anyone tunes kernels: which "
        "operation is eating the decode step?")
    return


@app.cell
def _(lab):
    get_dominant, set_dominant = quiz.lock_state(lab, "lab02.decode_dominant")
    return get_dominant, set_dominant


@app.cell
def _(get_dominant, lab, set_dominant):
    DOMINANT_OPTIONS = {
        "the weight-reading GEMMs (Q, K, V, O projections, MLP, LM head)": models.OP_GROUPS[0],
        "attention over the KV cache": models.OP_GROUPS[1],
        "RMSNorm, SiLU and residual adds (elementwise ops)": models.OP_GROUPS[2],
    }
    dominant_form = quiz.choice_form(
        lab, "lab02.decode_dominant",
        question="**Prediction 1.** "
                 f"Dana's prototype: {models.get(DOMINANT_REF['model']).name} in bf16 on the "
                 f"{hardware.get(DOMINANT_REF['hw']).name}, **batch {DOMINANT_REF['batch']}**, "
                 f"**{DOMINANT_REF['seq_len']:,}-token context**. Which operation takes most "
                 "of each decode step's time?",
        options=DOMINANT_OPTIONS, locked=get_dominant(), on_lock=set_dominant)
    quiz.prediction_panel(dominant_form, get_dominant())
    return (DOMINANT_OPTIONS,)


@app.cell
def _(DOMINANT_OPTIONS, get_dominant, lab):
    # Reference answer (instructor copy only). This cell uses no widget, so moving a slider
    # does not re-run the cells that depend on the prediction (forms keep what was typed).
    _ref = models.dominant_group(phase="decode", **DOMINANT_REF)
    _t = models.step_time_by_group(DOMINANT_REF["model"], DOMINANT_REF["hw"], "decode",
                                   batch=DOMINANT_REF["batch"], seq_len=DOMINANT_REF["seq_len"])
    _hw = hardware.get(DOMINANT_REF["hw"])
    dominant_prediction = get_dominant() or reveal.reference(
        lab, "lab02.decode_dominant", _ref,
        label=next(k for k, v in DOMINANT_OPTIONS.items() if v == _ref),
        explanation=f"At batch {DOMINANT_REF['batch']} each decode step reads every weight once "
                    f"for about one multiply-add per weight: memory-bound. On the {_hw.name} "
                    f"({_hw.bandwidth_gbs:,.0f} GB/s) one step's time splits into "
                    + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in _t.items())
                    + f": {_ref} take {_t[_ref] / sum(_t.values()):.0%} of it. Attention grows "
                    "with the context and the batch; the weights are read once per step.")
    reveal.card(dominant_prediction)
    return (dominant_prediction,)


@app.cell
def _():
    mo.md(r"""
    ## Part 2 · How many conversations fit before the memory runs out?
    """)
    return


@app.cell
def _():
    _hw = hardware.get(OOM_REF["hw"])
    _m = models.get(OOM_REF["model"])
    style.scenario_card(
        "Sam Whitfield", "datacenter capacity planner",
        f"For the cloud side I'd put {_m.name} on one {_hw.name} with {_hw.memory_text} of "
        "memory and "
        f"pack in as many {OOM_REF['seq_len']:,}-token conversations as the memory takes: "
        f"the weights are only {_m.weight_bytes('bf16') / 1e9:.1f} GB in bf16. Each "
        f"conversation keeps its own KV cache. At what batch does it fall over: the first "
        f"batch that runs out of memory?")
    return


@app.cell
def _(lab):
    get_oom, set_oom = quiz.lock_state(lab, "lab02.oom_batch")
    return get_oom, set_oom


@app.cell
def _(get_oom, lab, set_oom):
    _hw = hardware.get(OOM_REF["hw"])
    _usable = models.memory_budget(batch=1, **OOM_REF).capacity_bytes / _hw.memory_bytes
    # the activation assumption the reference counts, from core: one prompt's prefill at a
    # time (one layer's tensors for its tokens) plus each sequence's fp32 logits
    _act = [models.get(OOM_REF["model"]).activation_bytes(b, OOM_REF["seq_len"])
            for b in (1, 2)]
    _logits = _act[1] - _act[0]
    _prefill = _act[0] - _logits
    oom_form = quiz.numeric_form(
        lab, "lab02.oom_batch",
        question="**Prediction 2.** "
                 f"{models.get(OOM_REF['model']).name}, bf16 weights and bf16 KV cache, "
                 f"**{OOM_REF['seq_len']:,}-token context**, on an **{_hw.name}** "
                 f"with {_hw.memory_text} of memory ({_usable:.0%} of it usable). Counting the "
                 "weights, the KV cache and the activations against the usable memory (the ideal "
                 "budget: nothing else allocated), with the activations of one prompt's prefill "
                 f"at a time (one layer's tensors for its tokens: {_prefill / 1e9:.2f} GB) plus "
                 f"each sequence's fp32 logits ({_logits / 1e6:.2f} MB), at what **batch** "
                 "(number of concurrent sequences) does it first run out of memory?",
        units="sequences", lo=1, hi=100000, integer=True, locked=get_oom(), on_lock=set_oom)
    quiz.prediction_panel(oom_form, get_oom())
    return


@app.cell
def _(get_oom, lab):
    _ref = models.oom_batch(**OOM_REF)
    _one, _two = (models.memory_budget(batch=b, **OOM_REF) for b in (1, 2))
    _per_seq = _two.used_bytes - _one.used_bytes
    # the activations less each sequence's logits (which grow with the batch)
    _prefill = 2 * _one.terms["activations"] - _two.terms["activations"]
    oom_prediction = get_oom() or reveal.reference(
        lab, "lab02.oom_batch", _ref, units="sequences",
        explanation=f"Usable memory: {_one.capacity_bytes / 1e9:.0f} GB of the "
                    f"{hardware.get(OOM_REF['hw']).memory_text}. The bf16 weights take "
                    f"{_one.terms['weights'] / 1e9:.1f} GB once, one prompt's prefill "
                    f"activations {_prefill / 1e9:.2f} GB; each sequence adds "
                    f"{_per_seq / 1e9:.2f} GB, almost all KV cache "
                    f"({_one.terms['KV cache'] / 1e9:.2f} GB at {OOM_REF['seq_len']:,} tokens). "
                    f"So {_ref - 1} sequences fit and batch {_ref} is the first that runs out.")
    reveal.card(oom_prediction)
    return (oom_prediction,)


@app.cell
def _():
    mo.md(r"""
    ## Parts 1 and 2 · Your predictions against the roofline

    Dana's decode step is on its two roofs below, then Sam's memory budget. Dana's
    charts open once both predictions are locked: a memory-bound step's time is its
    bytes over the bandwidth, so its attention bar would give away the KV cache Sam's
    question counts.
    """)
    return


@app.cell
def _(dominant_prediction, oom_prediction):
    # Dana's case, fixed as the question states it (no widget moves it): one layer of the decode
    # step and of a 4k prefill on the Jetson's two roofs, and the step's time by group.
    _wait = INSTRUMENTS.gate("dana", dominant_prediction, oom_prediction)
    mo.stop(_wait is not None, _wait)
    _case = {"batch": DOMINANT_REF["batch"], "seq_len": DOMINANT_REF["seq_len"]}
    _model, _hw = DOMINANT_REF["model"], DOMINANT_REF["hw"]
    dana_decode_roofline = op_roofline(
        models.roofline_ops(_model, "decode", **_case), _hw, "bf16",
        f"Dana's decode step · one layer · batch {_case['batch']}, {_case['seq_len']:,} cached "
        "tokens")
    dana_prefill_roofline = op_roofline(
        models.roofline_ops(_model, "prefill", **_case), _hw, "bf16",
        f"Dana's prefill · one layer · one {_case['seq_len']:,}-token prompt")
    _t = models.step_time_by_group(_model, _hw, "decode", **_case)
    dana_time_bars = figures.bar_figure(
        list(_t), [v * 1e3 for v in _t.values()], colors=["accent", "memory", "muted"],
        title=f"Dana's decode step, all layers · {hardware.get(_hw).name}, batch "
              f"{_case['batch']}, {_case['seq_len']:,}-token context",
        yaxis_title="ms per step (roofline bound)",
        annotations=[f"{units.format_seconds(v)} · {v / sum(_t.values()):.0%}"
                     for v in _t.values()])
    mo.vstack([
        mo.md(f"Two compute ceilings on both charts: the bf16 matmul roof (GEMMs, attention) and "
              "the lower vector ceiling of the general-purpose units "
              f"({roofline.peak_tflops(_hw, roofline.VECTOR):,.4g} TFLOP/s) that RMSNorm and the "
              "softmax run at. Prefill attention is causal: about half the score matrix."),
        dana_decode_roofline, dana_prefill_roofline, dana_time_bars])
    return


@app.cell
def _(DOMINANT_OPTIONS, dominant_prediction, lab, oom_prediction):
    # The question's case, fixed (not the pickers): the comparison stays valid whatever the
    # student explores afterwards.
    mo.stop(INSTRUMENTS.gate("dana", dominant_prediction, oom_prediction) is not None)
    _t = models.step_time_by_group(phase="decode", **DOMINANT_REF)
    dominant_actual = models.dominant_group(phase="decode", **DOMINANT_REF)
    _label = next(k for k, v in DOMINANT_OPTIONS.items() if v == dominant_actual)
    quiz.compare(dominant_prediction, dominant_actual, lab=lab,
                 actual_label=f"{_label}: {_t[dominant_actual] / sum(_t.values()):.0%} of "
                              f"the step at batch 1")
    return (dominant_actual,)


@app.cell
def _(dominant_actual, lab):
    dominant_explain = quiz.explain_form(
        lab, "lab02.decode_dominant",
        observe_label="Read Dana's decode roofline and time bars: where do the "
                      f"{dominant_actual} sit at batch 1, how far below the ridge, and what share "
                      "of the step do they take?",
        explain_label="Why is a decode step memory-bound at batch 1 although the device has "
                      "TFLOP/s to spare, and why does prefill land on the other roof?")
    dominant_explain
    return


@app.cell
def _(dominant_prediction, oom_prediction):
    # the title and equations give the answer away; the KV cache's bytes per token (and the
    # heads they count) are Prediction 2's, in Part 2's peek
    mo.stop(INSTRUMENTS.gate("dana", dominant_prediction, oom_prediction) is not None)
    _m = models.get("llama-3-8b")
    _crit = {k: serving.critical_decode_batch(_m, k) for k in ("jetson-agx-orin-64gb", "h100-sxm")}
    _crit_lines = "; ".join(
        f"{hardware.get(k).name}: ridge (bf16, dense) {roofline.ridge_point(k, 'bf16'):.0f} "
        f"FLOP/B, **B\\* = {b}**" for k, b in _crit.items())
    style.math_peek("decode is bounded by bytes, prefill by FLOPs", r"""
    One step runs every layer once. A roofline lower bound on its time, with $F$ FLOPs and
    $Q$ bytes moved, peak $\pi$ (FLOP/s, dense, at the compute precision) and bandwidth
    $\beta$ (B/s):

    $$t_{\text{step}} \;\ge\; \max\!\left(\frac{F}{\pi},\ \frac{Q}{\beta}\right)
    \qquad [\text{s}] = \left[\tfrac{\text{FLOP}}{\text{FLOP/s}}\right],\
    \left[\tfrac{\text{B}}{\text{B/s}}\right]$$

    (Norms, SiLU and residual adds run on the vector units, not the tensor cores: their FLOPs
    count against the vector ceiling, a second, lower compute roof on the chart.)

    **Decode** (batch $B$, one new token per sequence, $S$ cached tokens): every weight is
    read once per step and every sequence's KV cache once,

    $$Q_{\text{dec}} \approx P\,b_w + B\,S\,\kappa_{kv}$$

    ($P$ parameters, $b_w$ bytes per weight, $\kappa_{kv}$ bytes of KV cache per cached
    token: Part 2 counts them). A weight GEMM on $B$ tokens does
    $2B$ FLOPs per weight it reads: $\text{AI} \approx 2B/b_w$ FLOP/B, about $B$ at bf16,
    far below a ridge of hundreds. So

    $$\text{tokens/s per user} \le \frac{\beta}{Q_{\text{dec}}}, \qquad
    \text{tokens/s in total} \le \frac{B\,\beta}{Q_{\text{dec}}}.$$

    **The critical decode batch.** The weight GEMMs cross the ridge of their compute
    precision where $2B/b_w \approx \text{ridge}$:

    $$B^* \approx \frac{\text{ridge}_p \cdot b_w}{2}\quad[\text{sequences}]$$

    (exactly: the first batch whose GEMMs, activations included, reach the ridge). Llama-3-8B
    in bf16: """ + _crit_lines + r""". Below $B^*$ more users come almost free (the same weight
    read serves them all); above it the GEMMs turn compute-bound.

    **Attention never crosses.** Each sequence reads its *own* KV cache, so attention's bytes
    grow with $B$ exactly as its FLOPs do: its AI is a few FLOP/B at batch 1 or 1,000 (its
    point on the chart), memory-bound on every device here. Part 2's peek says why.

    **Prefill** ($T$ prompt tokens at once): the GEMMs see $T$ rows, AI $\approx 2T/b_w$ is far
    above the ridge, and attention is causal (token $i$ attends to tokens $\le i$: $T(T+1)/2$
    pairs, about half the score matrix), so

    $$t_{\text{prefill}} \ge \frac{F}{\pi} \approx \frac{2\,P\,T + 2\,L\,H\,d_h\,T(T+1)}{\pi}
    \ [\text{s}].$$

    Unfused attention also writes and reads the computed scores four times (S write, S read,
    P write, P read): that traffic keeps it memory-bound where the fused (flash) kernel is not.
    """)
    return


@app.cell
def _(oom_prediction):
    _wait = INSTRUMENTS.gate("sam", oom_prediction)
    mo.stop(_wait is not None, _wait)
    # The instrument opens on Sam's case (fixed, as the question states it), at the first
    # batch that runs out; the student's own design follows below with the pickers.
    _first = models.oom_batch(**OOM_REF)
    case_budget = models.memory_budget(batch=_first, **OOM_REF)
    _hw = hardware.get(OOM_REF["hw"])
    mo.vstack([
        mo.md(f"**Sam's case**: {models.get(OOM_REF['model']).name} in bf16 on the {_hw.name}, "
              f"{OOM_REF['seq_len']:,}-token conversations. Batch {_first - 1:,} fits; at "
              f"batch **{_first:,}**, the first that runs out:"),
        style.memory_budget_bar(case_budget.terms, case_budget.capacity_bytes, usable=True)])
    return


@app.cell
def _(lab, oom_prediction):
    mo.stop(INSTRUMENTS.gate("sam", oom_prediction) is not None)
    oom_actual = models.oom_batch(**OOM_REF)
    mo.vstack([mo.md("**Prediction vs reality** · Sam's case: the first batch that runs out "
                     "of memory"),
               quiz.compare(oom_prediction, oom_actual, units="sequences", lab=lab)])
    return (oom_actual,)


@app.cell
def _(lab, oom_actual):
    oom_explain = quiz.explain_form(
        lab, "lab02.oom_batch",
        observe_label=f"Sam's case runs out of memory at batch {oom_actual}. Read its budget "
                      "bar: how much do the weights take, which term grows with the batch, and "
                      "by how much per sequence?",
        explain_label="Why does a model whose weights fill a fifth of the device run out of "
                      "memory at a few dozen conversations? Which choices move the limit, and "
                      "which do not?")
    oom_explain
    return


@app.cell
def _(oom_prediction):
    mo.stop(INSTRUMENTS.gate("sam", oom_prediction) is not None)  # the formula for the answer
    _m = models.get(OOM_REF["model"])  # Sam's model, fixed
    _kv = _m.kv_bytes_per_token("bf16")
    _attn = serving.decode_attention_ai(_m, 1, 4096)
    style.math_peek("the memory budget and the batch that overflows", r"""
    Memory held while serving $B$ sequences of $S$ tokens, against a usable fraction $f$ of
    capacity $C$:

    $$M(B) = \underbrace{P\,b_w}_{\text{weights}} +
    \underbrace{B\,S\,\kappa_{kv}}_{\text{KV cache}} + \underbrace{A(B)}_{\text{activations}}
    \;\le\; f\,C \qquad [\text{B}]$$

    $$\kappa_{kv} = 2\,L\,H_{kv}\,d_h\,b_{kv}\ [\text{B/token}] \qquad
    B_{\max} = \left\lfloor \frac{f\,C - P\,b_w - A}{S\,\kappa_{kv}} \right\rfloor,
    \qquad B_{\text{OOM}} = B_{\max} + 1$$

    The factor 2 is K and V; $H_{kv}$ is the number of **KV** heads (grouped-query
    attention), not the query heads.
    """ + f"""
    For {_m.name} in bf16: $\\kappa_{{kv}}$ = 2 × {_m.layers} layers × {_m.kv_heads} KV heads ×
    {_m.head_dim} × 2 B = **{_kv:,.0f} B per token**; counting the {_m.heads} query heads
    instead would claim {_m.heads // _m.kv_heads}× too much. Weights grow with $b_w$ only;
    the KV cache grows with $B \\times S \\times b_{{kv}}$: batch, context and KV precision
    move the limit, the compute precision and the clock do not.
    """ + r"""
    **Why decode attention never crosses the ridge** (Part 1). Each sequence reads its *own*
    KV cache, so attention's bytes grow with $B$ exactly as its FLOPs do:

    $$\text{AI}_{\text{attn}} \approx \frac{4\,H\,S\,d_h}{2\,H_{kv}\,S\,d_h\,b_{kv}}
    = \frac{2\,(H/H_{kv})}{b_{kv}}\quad[\text{FLOP/B}]$$

    """ + f"""= {_attn:.1f} FLOP/B for {_m.name} in bf16 ({_m.heads} query heads share
    {_m.kv_heads} KV heads), at batch 1 or 1,000: memory-bound on every device here. Only
    fewer bytes per cached element (or more query heads per KV head) raise it.
    """)
    return


@app.function
def weight_only_note(design, charged=False):
    """What a weight-only design's decode bound leaves out (said wherever one is shown);
    ``charged``: the live check, which charges the measured share of the byte ratio."""
    head = (f"*{design['weight_precision']} weights with {design['activation_precision']} "
            "activations are weight-only: every weight is dequantised before its multiply. ")
    if charged:
        return (head + "The bounds count the bytes that saves, not that work, so the check "
                "at achievable rates charges the decode what real kernels measured: "
                f"{precision_study.measured_weight_only_text()}.*")
    return (head + "These bounds count the bytes that saves, not that work, so read the "
            f"decode speed as the ideal, not a forecast: {precision_study.measured_weight_only_text()}.*")


@app.cell
def _():
    MAX_CONTEXT = max(m.max_context for m in models.MODELS.values())
    mo.md(f"""
    ## Part 3 · Your deployment

    Now the design is yours. Pick the device and the model, and how the weights, the activations
    and the KV cache are **stored** (bytes moved and held). The **compute** precision (which
    dense peak applies) is not a separate choice: a matrix multiply runs at its widest operand.
    int8 math needs int8 activations as well as int8 (or 4-bit) weights (W8A8); weight-only
    formats such as INT4 are dequantised to the activations' precision. The batch is the number
    of sequences decoded together; the context is the number of tokens each one holds (Llama-3
    was trained for {MAX_CONTEXT:,}).

    Things to try: raise the batch and watch the weight GEMMs climb towards the ridge while
    attention stays put; raise the context and watch attention's share of the step grow; store
    the KV cache in 8 bits and see what the budget and the decode speed gain.
    """)
    return (MAX_CONTEXT,)


@app.cell
def _():
    # Shown with each instrument (``controls``), not on its own: closed, nothing here moves.
    device_picker = style.dropdown_on(hardware.picker_options(), "jetson-agx-orin-64gb",
                                      label="Device")
    return (device_picker,)


@app.cell
def _():
    def _formats(keys):
        return {precision.get(k).label: k for k in keys}

    model_picker = mo.ui.dropdown({m.name: m.key for m in models.MODELS.values()},
                                  value="Llama-3-8B", label="Model")
    weight_picker = mo.ui.dropdown(_formats(["bf16", "fp8", "int8", "int4-g128", "nvfp4"]),
                                   value="BF16", label="Weights stored as")
    kv_picker = mo.ui.dropdown(_formats(["bf16", "fp8", "int8", "nvfp4"]), value="BF16",
                               label="KV cache stored as")
    activation_picker = mo.ui.dropdown(_formats(["bf16", "fp16", "fp8", "int8", "nvfp4"]),
                                       value="BF16", label="Activations stored as")
    return activation_picker, kv_picker, model_picker, weight_picker


@app.cell
def _(MAX_CONTEXT):
    # The batch is typed and checked: a whole number of sequences from 1 to 512, else a
    # message and the last good batch (a slider's own box rounded 12.5 to 12 and clamped 0 or
    # 1e9 to 1 without a word).
    batch_box = style.NumberBox(1, lo=1, hi=512, integer=True, units="sequences",
                                label="Batch (sequences at once)")
    context_slider = mo.ui.slider(
        steps=[s for s in (512, 1024, 2048, 3072, 4096, 6144, 8192) if s <= MAX_CONTEXT],
        value=4096, show_value=True, label="Context (tokens per sequence)")
    return batch_box, context_slider


@app.cell
def _(
    activation_picker,
    batch_box,
    context_slider,
    device_picker,
    kv_picker,
    model_picker,
    weight_picker,
):
    # The design as core's check_design takes it (the device travels separately).
    device = device_picker.value
    design = {"model": model_picker.value, "batch": int(batch_box.value),
              "seq_len": int(context_slider.value), "weight_precision": weight_picker.value,
              "activation_precision": activation_picker.value,
              "kv_precision": kv_picker.value}
    return design, device


@app.cell
def _(design, device):
    # The compute precision follows from the operands (core decides; an impossible pair or a
    # rate the device lacks is a message naming the way out, never a traceback).
    try:
        design_compute = precision.matmul_compute(design["weight_precision"],
                                                  design["activation_precision"])
        hardware.get(device).peak_tflops(design_compute)
        compute_error = None
    except (KeyError, ValueError) as _exc:
        design_compute, compute_error = None, style.error_message(_exc)
    compute_note = (mo.md(f"**Math runs at {design_compute}** (dense peak): "
                          f"{design['weight_precision']} weights × "
                          f"{design['activation_precision']} activations.")
                    if compute_error is None else style.error_callout(
        f"{compute_error} Pick activations whose precision this device computes in (bf16 runs "
        "everywhere), or weights and activations that share one."))
    return compute_error, compute_note


@app.cell
def _(
    activation_picker,
    batch_box,
    compute_note,
    context_slider,
    device_picker,
    kv_picker,
    model_picker,
    weight_picker,
):
    # The widgets, shown inside each instrument (marimo keeps the copies in sync).
    controls = mo.vstack([
        mo.hstack([device_picker, model_picker], justify="start", wrap=True),
        mo.hstack([weight_picker, activation_picker, kv_picker], justify="start", wrap=True),
        compute_note,
        mo.hstack([batch_box, context_slider], justify="start", wrap=True),
        style.input_messages(batch_box)], gap=0.4)
    return (controls,)


@app.cell
def _(controls, dominant_prediction, oom_prediction):
    _wait = INSTRUMENTS.gate("explorer", dominant_prediction, oom_prediction)
    mo.stop(_wait is not None, _wait)
    explorer_open = True  # the explorer's other cells run only while it is open
    controls
    return (explorer_open,)


@app.cell
def _(compute_error, design, device, explorer_open):
    # (a device without the compute precision: the controls above say so and name the way out)
    mo.stop(not explorer_open or compute_error is not None)
    # core's step functions take the activations' format as ``precision``
    _kw = {"batch": design["batch"], "seq_len": design["seq_len"],
           "precision": design["activation_precision"],
           "weight_precision": design["weight_precision"], "kv_precision": design["kv_precision"]}
    try:
        _dec = models.step_bound(design["model"], device, "decode", **_kw)
        _pre = models.step_bound(design["model"], device, "prefill", **{**_kw, "batch": 1})
        step_error = None
    except (KeyError, ValueError) as _exc:
        step_error = style.error_message(_exc)
    mo.stop(step_error is not None, style.error_callout(
        f"{step_error} Pick a KV-cache or activation format this device computes in (bf16 "
        "runs everywhere)."))
    # defined only once the bounds exist: every cell below depends on them
    decode_step, prefill_step, step_kw = _dec, _pre, _kw
    return decode_step, prefill_step, step_kw


@app.cell
def _(decode_step, design, device, prefill_step):
    _hw = hardware.get(device)
    _fits = models.memory_budget(
        design["model"], device, batch=design["batch"], seq_len=design["seq_len"],
        weight_precision=design["weight_precision"], kv_precision=design["kv_precision"],
        act_precision=design["activation_precision"]).fits
    _cards = style.metric_cards([
        style.Metric("Decode, per user", f"{1 / decode_step.seconds:,.1f} tokens/s",
                     f"one step ≥ {units.format_seconds(decode_step.seconds)}: "
                     f"{decode_step.bytes / 1e9:.2f} GB at {_hw.bandwidth_gbs:g} GB/s",
                     f"{decode_step.bound}-bound"),
        style.Metric("Decode, all users", f"{decode_step.tokens_per_s:,.0f} tokens/s",
                     f"batch {design['batch']} × one token per step; "
                     f"{decode_step.bound}-bound"),
        style.Metric(f"Prefill, one {design['seq_len']:,}-token prompt",
                     units.format_seconds(prefill_step.seconds),
                     f"{prefill_step.flops:.3g} FLOP (causal attention) at "
                     f"{_hw.peak_tflops(prefill_step.compute):g} "
                     f"{units.rate_unit(prefill_step.compute)} ({prefill_step.compute}, dense); "
                     f"{prefill_step.bound}-bound",
                     f"{prefill_step.bound}-bound"),
    ])
    _parts = [_cards] if _fits else [style.error_callout(
        "This design does not fit in the device's memory (the budget below shows by how much): "
        "these bounds describe a machine you do not have. Lower the batch or the context, store "
        "the weights or the KV cache in fewer bits, or pick a device with more memory."), _cards]
    if precision_study.is_weight_only(design["weight_precision"], design["activation_precision"]):
        _parts.append(mo.md(weight_only_note(design)))
    mo.vstack(_parts)
    return


@app.cell
def _(decode_step, design, device, step_kw):
    decode_roofline = op_roofline(
        models.roofline_ops(design["model"], "decode", **step_kw), device, decode_step.compute,
        f"Decode · one layer · batch {design['batch']}, {design['seq_len']:,} cached tokens "
        "per sequence")
    decode_roofline
    return


@app.cell
def _(decode_step, design, device, step_kw):
    # one prompt, as the prefill card above and the target's time to first token
    prefill_roofline = op_roofline(
        models.roofline_ops(design["model"], "prefill", **{**step_kw, "batch": 1}), device,
        decode_step.compute, f"Prefill · one layer · one {design['seq_len']:,}-token prompt")
    prefill_roofline
    return


@app.cell
def _(decode_step, device):
    mo.md(
        f"Two compute ceilings on both charts: the {decode_step.compute} matmul roof (GEMMs, "
        "attention) and the lower vector ceiling of the general-purpose units "
        f"({roofline.peak_tflops(device, roofline.VECTOR):,.4g} TFLOP/s here) that RMSNorm "
        "and the softmax run at. Prefill attention is causal: about half the score matrix.")
    return


@app.cell
def _(design, device, step_kw):
    _t = models.step_time_by_group(design["model"], device, "decode", **step_kw)
    _total = sum(_t.values())
    decode_time_bars = figures.bar_figure(
        list(_t), [v * 1e3 for v in _t.values()], colors=["accent", "memory", "muted"],
        title=f"One decode step, all layers · batch {design['batch']}, "
              f"{design['seq_len']:,}-token context",
        yaxis_title="ms per step (roofline bound)",
        annotations=[f"{units.format_seconds(v)} · {v / _total:.0%}" for v in _t.values()])
    decode_time_bars
    return


@app.cell
def _(design, device, explorer_open):
    mo.stop(not explorer_open)
    _kw = {"batch": design["batch"], "seq_len": design["seq_len"],
           "weight_precision": design["weight_precision"],
           "kv_precision": design["kv_precision"], "act_precision": design["activation_precision"]}
    budget = models.memory_budget(design["model"], device, **_kw)
    largest_batch = models.max_batch(design["model"], device, seq_len=design["seq_len"],
                                     weight_precision=design["weight_precision"],
                                     kv_precision=design["kv_precision"],
                                     act_precision=design["activation_precision"])
    _parts = [mo.md("**Memory budget of your design**"),
              style.memory_budget_bar(budget.terms, budget.capacity_bytes)]
    if not budget.fits:  # the failure state: say which term overflowed, and how to back out
        _parts.append(style.error_callout(budget.explain() + (
            f" Back out: lower the batch (at most {largest_batch} fit) or the context, or "
            "store the KV cache or the weights in fewer bits." if largest_batch else
            " Not even one sequence fits: store the weights in fewer bits or pick a device "
            "with more memory.")))
    mo.vstack(_parts)
    return budget, largest_batch


@app.cell
def _(budget, design, device, largest_batch):
    _m, _hw = models.get(design["model"]), hardware.get(device)
    _S = design["seq_len"]
    _kv_tok = _m.kv_bytes_per_token(design["kv_precision"])
    _cards = style.metric_cards([
        style.Metric("Weights", units.format_bytes(budget.terms["weights"]),
                     f"{_m.params / 1e9:.2f} B parameters in {design['weight_precision']}"),
        style.Metric("KV cache per sequence", units.format_bytes(_kv_tok * _S),
                     f"{_kv_tok:,.0f} B/token × {_S:,} tokens ({_m.kv_heads} KV heads, "
                     f"not {_m.heads} query heads)"),
        style.Metric("Largest batch that fits", f"{largest_batch:,} sequences",
                     f"batch {largest_batch + 1:,} runs out of memory",
                     "ok" if largest_batch >= design["batch"] else "danger"),
        style.Metric("Usable memory", units.format_bytes(budget.capacity_bytes),
                     f"{budget.capacity_bytes / _hw.memory_bytes:.0%} of "
                     f"{_hw.memory_text} on the {_hw.name}"),
    ])
    _notes = mo.md(
        f"**Assumptions** (stated in `labs.core.physics.models`): "
        f"{budget.capacity_bytes / _hw.memory_bytes:.0%} of device memory is usable (the "
        "rest goes to the runtime context, allocator fragmentation and workspace). The KV cache "
        "is reserved for the full context of every sequence (no paging). Activations: layers "
        "run one at a time and a prompt is prefilled in one chunk, so only one layer's "
        "tensors for one prompt are alive (residual, normed copy, SwiGLU gate and up outputs, "
        "in the activations' format), plus fp32 logits for every sequence in the batch. "
        "Memory is counted in bytes: GB = 10⁹ B, GiB = 2³⁰ B; vendors' \"80 GB\" of HBM is "
        "80 GiB.")
    mo.vstack([_cards, _notes])
    return


@app.cell
def _():
    mo.md(r"""
    ## Part 4 · The design challenge
    """)
    return


@app.cell
def _():
    _e, _d = serving.SERVING_TARGETS["edge"], serving.SERVING_TARGETS["datacenter"]
    style.scenario_card(
        "Dana Okafor", "ML-infrastructure lead",
        "Here are the two targets. Find a configuration that meets each one with the pickers "
        "below (device, model, how weights, activations and KV cache are stored, batch, "
        "context), then commit it: the checker records your decision and tells us whether it "
        "holds at the rates real kernels reach, not just on the spec sheet.\n\n"
        f"{_e.label}: {_e.describe()}\n\n{_d.label}: {_d.describe()}\n\n"
        "Decode is judged at the full context (the slowest step of a conversation); the "
        "prefill time is one full-context prompt on its own.")
    return


@app.cell
def _():
    target_picker = mo.ui.radio({t.label: t.key for t in serving.SERVING_TARGETS.values()},
                                value=serving.SERVING_TARGETS["edge"].label, inline=True,
                                label="Target")
    commit_button = mo.ui.run_button(label="Commit this design", kind="success")
    # shown in the live check below, next to the design they commit
    return commit_button, target_picker


@app.cell
def _(device, lab):
    def _measured_derating(lab, device):
        """The fractions of spec this student's own Lab 3 measurement reached on this device
        (its last "lab03.live_peaks" result for the same registry entry), or None."""
        ledger = getattr(lab, "ledger", None)
        events = ledger.events() if ledger is not None else []
        for e in reversed(events):
            pay = e.get("payload") or {}
            if (e.get("item_id") != "lab03.live_peaks" or e.get("kind") != "result"
                    or pay.get("registry_key") != device):
                continue
            rows = [r for r in pay.get("rows", []) if r.get("measured")]
            bw = next((r["measured"] for r in rows if r["what"].startswith("memory")), None)
            peaks = {r["what"].split()[0]: r["measured"] for r in rows
                     if r["what"].endswith(")") and "peak" in r["what"]}
            if bw and peaks:
                return roofline.derating_from_measurement(
                    device, peaks, bw, source=f"your Lab 3 measurement of {pay.get('date', '?')}")
        return None

    # Achievable rates: the student's own measured roofs when Lab 3 measured this device,
    # else core's sourced default for the device.
    design_derating = _measured_derating(lab, device) or roofline.achievable(device)
    return (design_derating,)


@app.cell
def _(
    commit_button,
    controls,
    design,
    design_derating,
    device,
    dominant_prediction,
    oom_prediction,
    target_picker,
):
    _wait = INSTRUMENTS.gate("challenge", dominant_prediction, oom_prediction)
    mo.stop(_wait is not None, _wait)
    try:
        _verdict, live_error = serving.check_design(target_picker.value, device,
                                                   derating=design_derating, **design), None
    except (KeyError, ValueError) as _exc:
        _verdict, live_error = None, style.error_message(_exc)
    mo.stop(live_error is not None, mo.vstack([controls, style.error_callout(
        f"{live_error} Pick activations and a KV cache format this device computes in (bf16 "
        "runs everywhere).")]))
    live_verdict = _verdict
    _spec = ("✓ not ruled out at 100% of the spec sheet" if live_verdict.not_ruled_out else
             "✗ ruled out even at 100% of the spec sheet (" + ", ".join(live_verdict.spec_failed)
             + ")")
    _weight_only = precision_study.is_weight_only(design["weight_precision"], design["activation_precision"])
    mo.vstack([
        controls, mo.hstack([target_picker, commit_button], justify="start", align="end"),
        mo.md(f"**Live check against the {target_picker.value} target at achievable rates**: "
              f"{live_verdict.rates_text()}. Not recorded until you commit."),
        mo.accordion({"Where these fractions come from": mo.md(design_derating.source)}),
        style.metric_cards([style.Metric(c.name, ("✓ " if c.passed else "✗ ") + c.actual_text,
                                         c.requirement, "ok" if c.passed else "danger")
                            for c in live_verdict.checks]),
        mo.md(f"Spec-sheet roofline (an upper bound on speed): {_spec}.")]
        + ([mo.md(weight_only_note(design, charged=True))] if _weight_only else []))
    return (live_verdict,)


@app.cell
def _(commit_button, design, device, lab, live_verdict, target_picker):
    # A click records the design as a decision, then the checker's verdict as a result.
    last_commit = None
    if commit_button.value:
        _item = f"lab02.design_{target_picker.value}"
        lab.record("decision", _item, {"target": target_picker.value, "device": device,
                                       "compute": live_verdict.compute, **design})
        lab.record("result", _item, live_verdict.as_dict())
        last_commit = live_verdict
    (mo.callout(mo.md(f"**Committed.** {last_commit.summary()}"),
                kind="success" if last_commit.meets_target else
                "warn" if last_commit.not_ruled_out else "danger") if last_commit
     else mo.md("Each commit goes into your ledger: the design as a *decision*, the "
                "checker's verdict as a *result*. You may commit as often as you like."))
    return (last_commit,)


@app.cell
def _(lab, last_commit):
    # Refreshes after every commit (last_commit); reads the ledger so a reload keeps the status.
    _cards, _done = [], 0
    for _t in serving.SERVING_TARGETS.values():
        _results = lab.events(f"lab02.design_{_t.key}", "result")
        _decisions = lab.events(f"lab02.design_{_t.key}", "decision")
        _ok = any(e["payload"].get("meets_target") is True for e in _results)
        _done += _ok
        _last = _decisions[-1]["payload"] if _decisions else {}
        _dev = str(_last.get("device", "?"))
        _dev = hardware.get(_dev).name if _dev in hardware.keys() else _dev
        _cards.append(style.Metric(
            _t.label, "✓ met" if _ok else ("✗ not yet met" if _results else "not committed"),
            f"last commit: {_dev}, {_last.get('weight_precision', '?')} weights, "
            f"{_last.get('activation_precision', '?')} activations, "
            f"{_last.get('kv_precision', '?')} KV, {_last.get('compute', '?')} math, batch "
            f"{_last.get('batch', '?')}, {_last.get('seq_len', 0):,} tokens"
            if _last else "commit a design above", "ok" if _ok else "muted"))
    _head = mo.md("**Challenge status**, read from your ledger"
                  + (f" (just committed for the {last_commit.target} target)"
                     if last_commit is not None else ""))
    mo.vstack([_head, style.metric_cards(_cards)] + (
        [mo.callout(mo.md("**Challenge complete:** a design that meets its target at "
                          "achievable rates is committed for both targets."), kind="success")]
        if _done == len(_cards) else []))
    return


@app.cell
def _(dominant_prediction, lab, oom_prediction):
    mo.stop(INSTRUMENTS.gate("challenge", dominant_prediction, oom_prediction) is not None)
    design_explain = quiz.explain_form(
        lab, "lab02.design",
        observe_label="Your two designs: device, formats, batch, context, and which "
                      "requirement was hardest to meet on each.",
        explain_label="Using the roofline and the memory budget, explain why the edge design "
                      "and the datacenter design differ: which roof or which memory term "
                      "limited each one?")
    design_explain
    return


@app.cell
def _(dominant_prediction, oom_prediction):
    # answers Parts 1 and 2
    mo.stop(INSTRUMENTS.gate("challenge", dominant_prediction, oom_prediction) is not None)
    _int8 = precision_study.WEIGHT_ONLY_MEASURED[0]
    style.math_peek("latency versus throughput in decode", r"""
    With $W$ bytes of weights read per step and $\kappa_{kv}$ bytes of KV cache per token,
    a decode step over $B$ sequences of $S$ tokens is memory-bound and

    $$t_{\text{step}} \approx \frac{W + B\,S\,\kappa_{kv}}{\beta}, \qquad
    \underbrace{\frac{1}{t_{\text{step}}}}_{\text{tokens/s per user}} \downarrow \text{ in } B,
    \qquad
    \underbrace{\frac{B}{t_{\text{step}}}}_{\text{tokens/s in total}}
    \xrightarrow{B \to \infty} \frac{\beta}{S\,\kappa_{kv}}.$$

    Batching shares the weight read among $B$ users, so the total rises, until the KV cache
    dominates the bytes: then the total saturates at $\beta / (S\,\kappa_{kv})$ and only fewer
    bytes per cached token (a smaller $b_{kv}$), a shorter context or more bandwidth raise it.
    Memory caps the batch at $B_{\max} = \lfloor (fC - W - A) / (S\,\kappa_{kv}) \rfloor$.
    Prefill time $\approx F/\pi$ falls only with a higher peak (a lower compute precision,
    which needs lower-precision activations as well as weights, or a bigger chip), not with
    fewer bytes.

    **Spec sheet versus achievable.** $\pi$ and $\beta$ above are the spec sheet's: no real
    kernel reaches them. The checker divides by the fractions real kernels reach, $f_\pi$ of
    the dense peak (measured maximum achievable matmul throughput: about 0.8 on NVIDIA
    datacenter GPUs, 0.5 on an MI300X) and $f_\beta$ of the bandwidth (STREAM-like copies: about
    0.85, measured per device where published: the live check names the fractions it uses), or by
    your own Lab 3 measurement of this device:

    $$t \ge \max\!\left(\frac{F}{f_\pi\,\pi},\ \frac{Q}{f_\beta\,\beta}\right).$$

    A design that passes only at 100% of spec is *not ruled out*, not shown to work.

    **Weight-only formats** (int8 or int4 weights with bf16 activations) cut $W$, but every
    weight is dequantised before its multiply, work neither $t$ above charges: the byte ratio is
    the ideal decode speedup (the speedup of the two bounds), which only the best kernels come
    close to. So the checker charges a weight-only design, at achievable rates, what real
    kernels measured: its weights' bytes take $1/s$ as long, with $s$ the measured speedup
    over the byte ratio (""" + f"""gpt-fast: {_int8.speedup:.2f}× for {_int8.storage}'s
    {_int8.byte_ratio:.3g}× fewer bytes, $s$ = {_int8.share_of_byte_ratio:.2f}; the 4-bit
    figure for 4-bit formats). At 100% of spec it is judged by the bounds alone.
    """)
    return


@app.cell
def _(dominant_prediction, oom_prediction):
    _gate = style.takeaways_gate((dominant_prediction, oom_prediction))
    mo.stop(_gate is not None, _gate)
    style.takeaways([
        "Decode at small batch is memory-bound: every step streams all the weights (and the "
        "KV cache), so tokens/s per user ≤ bandwidth / bytes per step, whatever the TFLOP/s.",
        "Prefill is compute-bound: time ≈ FLOPs / dense peak of the compute precision.",
        "Weights fix a floor; the KV cache grows with batch × context × bytes per element, "
        "counted with the KV heads (GQA), and it is what overflows first when you batch.",
        "Batching raises total tokens/s until the KV cache dominates the bytes moved; per-user "
        "speed falls as the batch grows: a target names both.",
        "Storage precision (bytes held and moved) and compute precision (which peak) are "
        "different things, but the compute precision follows from the operands: weight and KV "
        "bits for memory and decode; a faster peak for prefill needs lower-precision "
        "activations too (W8A8), since a matmul runs at its widest operand.",
        "A design that passes at 100% of the spec sheet is only not ruled out: judge it at "
        "the rates real kernels reach (or that you measured).",
        "Weight-only quantisation saves bytes but adds dequantisation work that a roofline of "
        "bytes does not charge: the byte ratio is the ideal decode speedup (the speedup of the "
        "bounds), and measured whole-model decode falls well short of it, so judge such a "
        "design at the measured speedup.",
    ])
    return


if __name__ == "__main__":
    app.run()
