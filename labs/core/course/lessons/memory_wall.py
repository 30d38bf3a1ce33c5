"""Lab 1 "The Memory Wall": the cards, sentences and notes its cells assemble from numbers.

Each function states one piece of the lab (a spec sheet's cards, a reference answer's
explanation, a math peek's worked example) from the values it is given; the lab keeps the
story, the widgets and the gates. Devices are registry keys or ``hardware.Device``; "precision"
is the compute precision of the ridge, as the lab's pickers name it.
"""

from __future__ import annotations

import marimo as mo

from labs.core.physics import formulas, hardware, roofline, units, utilization
from labs.core.ui import figures, style

# Numbers are written by labs.core.physics.units, as the cards write them (LABS_SPEC §6). Kept
# inline: percentages with fixed decimals (utilisations, the FLOP-utilisation bound).

__all__ = [
    "crossover_cards", "crossover_examples", "crossover_explanation", "decode_ai_note",
    "device_cards", "gemm_cards", "gemm_hover", "gemm_numbers", "gemv_cards", "lever_cards",
    "levers_actual", "levers_explanation", "levers_note", "measured_points", "no_rate_message",
    "nothing_measured_message",
    "not_drawn_note", "other_device_explanation", "overlay_cards", "overlay_title",
    "profiled_point", "regime_against_ridge", "regime_verdict",
    "ridges_example", "sweep_note", "sweep_question", "which_roof_actual",
    "which_roof_explanation", "yardstick_actual", "yardstick_cards", "yardstick_explanation",
    "yardstick_worked_example",
]


def _percent(fraction: float) -> str:
    return f"{units.format_value(100 * fraction)}%"


def _peek_tail(text: str) -> str:
    """A math peek's worked example, as its own paragraphs after the peek's equations."""
    return "\n" + text + "\n"


def regime_verdict(subject: str, regime: str, cards) -> mo.Html:
    """"**<subject> is** [regime badge]" above a row of metric cards."""
    return mo.vstack([mo.hstack([mo.md(f"**{subject} is**"), style.regime_badge(regime)],
                                justify="start"),
                      style.metric_cards(cards)])


# --- the spec sheet ------------------------------------------------------------------------

def device_cards(device, precision: str) -> list[style.Metric]:
    """A chip's spec sheet: memory, bandwidth β, dense peak π and ridge π / β in one
    precision (KeyError where the device has no rate for it)."""
    d = hardware.get(device)
    return [
        style.Metric("Memory", d.memory_text, d.memory_type),
        style.Metric("Bandwidth β", f"{units.format_value(d.bandwidth_gbs)} GB/s",
                     "to main memory"),
        style.Metric(f"Peak π ({precision}, dense)",
                     f"{units.format_value(d.peak_tflops(precision), significant=4)} "
                     f"{units.rate_unit(precision)}",
                     d.note(precision) or "no 2:4 sparsity"),
        style.Metric(f"Ridge ({precision}, dense)",
                     f"{units.format_value(roofline.ridge_point(d, precision))} "
                     f"{units.intensity_unit(precision)}", "π / β"),
    ]


# --- Part 1: which roof ----------------------------------------------------------------------

def which_roof_explanation(m: int, ai: float, device, precision: str) -> str:
    """Why a GEMM of ``m`` rows and this AI sits under the roof it does (the reference
    answer's explanation)."""
    d = hardware.get(device)
    regime = roofline.regime(ai, d, precision)
    return (f"With M = {m} rows, every weight byte read serves only {m} rows: AI = "
            f"{units.format_value(ai)} "
            f"FLOP/B against the {d.name}'s {precision} ridge of "
            f"{units.format_value(roofline.ridge_point(d, precision))} FLOP/B, so it is {regime}. "
            f"The roofline "
            f"caps it at {utilization.flop_utilization_bound(ai, d, precision):.1%} of peak "
            "whatever the tiling"
            + (": the GPU is not throttling, it waits for bytes." if regime == roofline.MEMORY
               else "."))


def which_roof_actual(label: str, ai: float, device, precision: str) -> str:
    """What the instrument shows for Prediction 1: the regime's option, Priya's AI and the
    ridge it is held against."""
    d = hardware.get(device)
    return (f"{label} (Priya's GEMM on the {d.name}: AI = {units.format_value(ai)} FLOP/B, "
            f"ridge ({precision}, dense) = {units.format_value(roofline.ridge_point(d, precision))}"
            " FLOP/B)")


def gemm_numbers(cost, bounds, device, precision: str) -> dict[str, float]:
    """The roofline numbers a GEMM's cards state: AI, ridge, attainable rate, the two time
    figures and the FLOP-utilisation bound (``cost`` from formulas.gemm, ``bounds`` from
    roofline.time_bounds)."""
    return {
        "ai": cost.ai, "ridge": roofline.ridge_point(device, precision),
        "attainable": float(roofline.attainable_tflops(cost.ai, device, precision)),
        "lower": bounds.lower, "no_overlap": bounds.no_overlap,
        "flop_util_bound": utilization.flop_utilization_bound(cost.ai, device, precision)}


def gemm_hover(cost, bounds) -> dict[str, str]:
    """A GEMM point's hover on the roofline: its time bound, no-overlap estimate, FLOPs and
    bytes."""
    return {"time, lower bound": units.format_seconds(bounds.lower),
            "no-overlap estimate": units.format_seconds(bounds.no_overlap),
            "FLOPs": units.format_value(cost.flops), "bytes": units.format_value(cost.bytes)}


def gemm_cards(numbers: dict, cost, bounds, device, precision: str, regime: str, *,
               footprint_of: str = "") -> list[style.Metric]:
    """A GEMM on the roofline, in six cards: AI, ridge, attainable rate (coloured by
    ``regime``), time bound with both roofs' times, FLOP-utilisation bound, and the memory
    footprint as a share of the device's (``footprint_of`` names what it counts)."""
    unit = units.intensity_unit(precision)
    share = cost.bytes / hardware.get(device).memory_bytes
    return [
        style.Metric("Arithmetic intensity", f"{units.format_value(numbers['ai'])} {unit}",
                     "2MNK / bytes of A, B, C"),
        style.Metric(f"Ridge ({precision}, dense)",
                     f"{units.format_value(numbers['ridge'])} {unit}", "π / β"),
        style.Metric("Attainable", f"{units.format_value(numbers['attainable'])} "
                     f"{units.rate_unit(precision)}", "min(π, AI · β)", regime),
        style.Metric("Time, lower bound", units.format_seconds(bounds.lower),
                     f"max(Tc, Tm); Tc = {units.format_seconds(bounds.t_compute)}, "
                     f"Tm = {units.format_seconds(bounds.t_memory)}; no-overlap estimate "
                     f"Tc + Tm = {units.format_seconds(bounds.no_overlap)}"),
        style.Metric("FLOP-utilisation bound", _percent(numbers["flop_util_bound"]),
                     "the best fraction of peak this shape can reach", regime),
        style.Metric("Memory footprint", units.format_bytes(cost.bytes),
                     f"{footprint_of}{units.format_value(100 * share)}% of the device"),
    ]


def gemv_cards(cost, bounds, device, precision: str) -> list[style.Metric]:
    """The decode GEMV in four cards: its AI, attainable rate, time bound and
    FLOP-utilisation bound."""
    attainable = float(roofline.attainable_tflops(cost.ai, device, precision))
    return [
        style.Metric("GEMV AI", f"{units.format_value(cost.ai)} FLOP/B",
                     "2NK / (x + W + y bytes)"),
        style.Metric("GEMV attainable",
                     f"{units.format_value(attainable)} {units.rate_unit(precision)}",
                     "AI · β", roofline.regime(cost.ai, device, precision)),
        style.Metric("GEMV time bound", units.format_seconds(bounds.lower),
                     "≈ weight bytes / β"),
        style.Metric("GEMV FLOP-utilisation bound",
                     _percent(utilization.flop_utilization_bound(cost.ai, device, precision)),
                     "no kernel trick changes this"),
    ]


def decode_ai_note(scenario: dict, gemm_ai: float, gemv_ai: float) -> str:
    """The first math peek's worked example: the AI of Priya's GEMM (``scenario``: m, n, k,
    precision) and of its decode GEMV."""
    return _peek_tail(
        f"Priya's GEMM (M = {scenario['m']}, N = K = {scenario['n']}, "
        f"{scenario['precision']}):\n"
        f"AI = {units.format_value(gemm_ai)} FLOP/B; its decode GEMV: AI = "
        f"{units.format_value(gemv_ai)} FLOP/B.\n"
        "These count each matrix moved once, the least any kernel moves: a real tiled kernel\n"
        "re-reads some of it (Part 2 counts those bytes).")


# --- Part 2: what raises AI ----------------------------------------------------------------

def levers_explanation(levers: list[roofline.Lever]) -> str:
    """Each lever's AI from the baseline (``roofline.ai_levers``), and why the best one
    wins: the reference answer's explanation."""
    base, top = levers[0], roofline.best_lever(levers)
    return (f"From AI {units.format_value(base.ai)} FLOP/B ({base.why}): "
            + "; ".join(f"{lv.name} → {units.format_value(lv.ai)}" for lv in levers[1:])
            + f" FLOP/B. {top.name} wins: {top.why}. A faster clock raises the ridge, not "
            "the AI, and capacity does not change bytes per FLOP.")


def levers_note(tile: int, tiled_ai: float, ideal_ai: float) -> str:
    """The note under the levers chart: which bytes its AI counts (a ``tile``-tiled kernel's,
    ``tiled_ai``) against Part 1's each-matrix-once count (``ideal_ai``)."""
    a_tile = f"{'an' if str(tile).startswith('8') else 'a'} {tile} × {tile}-tiled"  # an 8 × 8
    return (f"AI here counts the bytes {a_tile} kernel moves (A re-read once per "
            f"tile column, B once per tile row): {units.format_value(tiled_ai)} FLOP/B "
            f"today. Part 1's {units.format_value(ideal_ai)} FLOP/B counts each matrix moved "
            "once, the least any kernel can move.")


def lever_cards(levers: list[roofline.Lever]) -> list[style.Metric]:
    """One card per lever: its AI and ρ as multiples of the baseline's, and why."""
    base = levers[0]
    return [style.Metric(lv.name, f"AI × {units.format_value(lv.ai / base.ai)}",
                         f"ρ × {units.format_value(lv.rho / base.rho)} · {lv.why}")
            for lv in levers[1:]]


def levers_actual(label: str, levers: list[roofline.Lever], scenario: dict, tile: int) -> str:
    """What the instrument shows for Prediction 2: the best lever's option and the AI it
    moves Priya's GEMM (``scenario``: m, n, k) from and to."""
    best = roofline.best_lever(levers)
    return (f"{label}: AI {units.format_value(levers[0].ai)} → {units.format_value(best.ai)} "
            f"FLOP/B for Priya's GEMM ({scenario['m']} × {units.format_value(scenario['n'])} × "
            f"{units.format_value(scenario['k'])}) with {tile} × {tile} tiles: the case the chart "
            f"opens on")


# --- Part 3: the crossover N* ----------------------------------------------------------------

def crossover_explanation(device, precision: str) -> str:
    """How a square GEMM's AI = N / (1.5 b) meets the ridge at N*: the reference answer's
    explanation."""
    d = hardware.get(device)
    n_star = roofline.gemm_crossover_n(d, precision)
    ridge = roofline.ridge_point(d, precision)
    return (f"A square N³ GEMM does 2N³ FLOPs on 3N² elements, so its AI grows with "
            f"N: AI = N / {units.format_value(n_star / ridge)} FLOP/B in {precision}. It meets "
            f"the {d.name}'s ridge of {units.format_value(ridge)} FLOP/B "
            f"at N* = {units.format_value(n_star / ridge)} × "
            f"{units.format_value(ridge, significant=4)} "
            f"≈ {units.format_value(round(n_star))}; smaller squares "
            "are memory-bound. This is the roofline's N*: measured cuBLAS throughput "
            "levels off around it, blurred by tile shapes, launch overhead and L2 "
            "reuse.")


def crossover_cards(n_star: float, device, precision: str,
                    guess: int | None = None) -> list[style.Metric]:
    """N*, the ridge it comes from, the square GEMM's AI formula and, given the student's
    own N* (``guess``), where that square GEMM sits on this device."""
    unit = units.intensity_unit(precision)
    cards = [
        style.Metric(f"N* ({precision}, dense)", f"{units.format_value(round(n_star))}",
                     "square GEMMs above this are compute-bound", "compute-bound"),
        style.Metric(f"Ridge ({precision}, dense)",
                     f"{units.format_value(roofline.ridge_point(device, precision))} {unit}",
                     "AI a GEMM must reach"),
        style.Metric("AI of a square GEMM", f"2N / (3b) {unit}",
                     "grows linearly with N: bigger matrices reuse each byte more")]
    if guess is not None:
        ai = formulas.gemm(guess, guess, guess, precision).ai
        regime = roofline.regime(ai, device, precision)
        cards.append(style.Metric(f"At your N* = {units.format_value(guess)}",
                                  f"AI {units.format_value(ai)} {unit}",
                                  f"{regime} on this device", regime))
    return cards


def crossover_examples(device) -> str:
    """The N* math peek's worked example on one chip: bf16, fp8 and fp32, then the usual
    slips (C's write forgotten; the sparse peak, or MACs counted as FLOPs)."""
    d = hardware.get(device)

    def n_star(precision, **slip):
        return units.format_value(round(roofline.gemm_crossover_n(d, precision, **slip)))

    return _peek_tail(
        f"Example, {d.name}: bf16 dense π = "
        f"{units.format_value(d.peak_tflops('bf16'), significant=4)} TFLOP/s, β =\n"
        f"{units.format_value(d.bandwidth_gbs)} GB/s, ridge = "
        f"{units.format_value(roofline.ridge_point(d, 'bf16'))}\n"
        f"FLOP/B, N* = {n_star('bf16')}. In fp8 the\n"
        f"peak doubles and b halves: N* = {n_star('fp8')}.\n"
        f"In fp32 (CUDA cores, ridge {units.format_value(roofline.ridge_point(d, 'fp32'))} "
        "FLOP/B, b = 4):\n"
        f"N* = {n_star('fp32')}.\n\n"
        "The usual slips, each a factor off: forgetting C's write (AI = N / b) gives\n"
        f"N* = {n_star('bf16', operands=2)}; the\n"
        "2:4-sparse headline peak, or one FLOP per multiply-add, gives\n"
        f"{n_star('bf16', sparse=True)}.")


# --- Part 4: one kernel, other devices -------------------------------------------------------

def other_device_explanation(ai: float, edge, datacenter, precision: str) -> str:
    """One GEMM's AI against the edge chip's ridge and the datacenter chip's: the reference
    answer's explanation."""
    e, dc = hardware.get(edge), hardware.get(datacenter)
    return (f"The GEMM's AI is {units.format_value(ai)} FLOP/B on any device. The {e.name}'s "
            f"{precision} "
            f"ridge is {units.format_value(roofline.ridge_point(e, precision))} FLOP/B "
            f"({roofline.regime(ai, e, precision)} there); the {dc.name}'s is "
            f"{units.format_value(roofline.ridge_point(dc, precision))} FLOP/B: "
            f"{roofline.regime(ai, dc, precision)}. A faster chip needs "
            "more reuse per byte to stay busy.")


def overlay_cards(ai: float, devices, precision: str) -> list[style.Metric]:
    """One card per chip: the regime of a GEMM of this AI there, against that chip's ridge."""
    unit = units.intensity_unit(precision)
    return [style.Metric(
        figures.short_name(hardware.get(k)), roofline.regime(ai, k, precision),
        f"ridge ({precision}, dense) = {units.format_value(roofline.ridge_point(k, precision))}"
        f" {unit} · this GEMM: AI {units.format_value(ai)} {unit}",
        roofline.regime(ai, k, precision)) for k in devices]


def no_rate_message(precision: str, skipped: list[str]) -> str:
    """Why the overlay is empty: none of the chosen chips (``skipped``, by name) has a rate
    in this precision, and the way out."""
    article = "an" if precision[0] in "fi" else "a"
    return (f"None of the chosen devices has {article} {precision} rate in the registry "
            f"({', '.join(skipped)}). Pick another precision.")


def not_drawn_note(precision: str, skipped: list[str]) -> str | None:
    """The note under the overlay naming the chips left out (no rate in this precision)."""
    return f"Not drawn (no {precision} rate): {', '.join(skipped)}." if skipped else None


def overlay_title(m: int, scenario: dict, precision: str, ai: float) -> str:
    """The overlay's title: an M x N x K GEMM (N, K from ``scenario``) and its AI."""
    return (f"One {units.format_value(m)} × {units.format_value(scenario['n'])} × "
            f"{units.format_value(scenario['k'])} {precision} GEMM "
            f"(AI {units.format_value(ai)} {units.intensity_unit(precision)}) against several "
            f"roofs")


def regime_against_ridge(regime: str, ai: float, device, precision: str) -> str:
    """"<regime>: AI x FLOP/B vs ridge (p, dense) = y FLOP/B" on one chip."""
    return (f"{regime}: AI {units.format_value(ai)} FLOP/B vs ridge ({precision}, dense) = "
            f"{units.format_value(roofline.ridge_point(device, precision))} FLOP/B")


def ridges_example(scenario: dict) -> str:
    """The "one AI, many ridges" peek's worked example: the datacenter and edge chips'
    peaks, bandwidths and ridges (``scenario``: m, n, k, precision, edge, datacenter), and
    the prefill GEMM's AI between them."""
    p = scenario["precision"]
    rows = []
    for k in (scenario["datacenter"], scenario["edge"]):
        d = hardware.get(k)
        rows.append(f"- {d.name}: {p} dense {units.format_value(d.peak_tflops(p), significant=4)} "
                    f"TFLOP/s, "
                    f"{units.format_value(d.bandwidth_gbs)} GB/s, ridge "
                    f"{units.format_value(roofline.ridge_point(k, p))} FLOP/B")
    ai = formulas.gemm(scenario["m"], scenario["n"], scenario["k"], p).ai
    return _peek_tail(
        "\n\n".join(rows) + "\n\n"
        f"The {scenario['m']} × {units.format_value(scenario['n'])} × "
        f"{units.format_value(scenario['k'])} {p} GEMM has AI =\n"
        f"{units.format_value(ai)} FLOP/B: between the\n"
        "two ridges. It is also big enough for the roofline to be the right model on both: 34 "
        "GFLOP\nin 128 output tiles of 128 × 128, about one per SM of an H100 and tens of "
        "microseconds of\nwork. (A 512³ GEMM would be 16 tiles and half a microsecond: launch "
        "overhead and idle SMs,\nnot either roof, would set its time.)")


# --- Part 5: which yardstick -----------------------------------------------------------------

def yardstick_explanation(reading: dict, flop_util: float, device, precision: str) -> str:
    """Why the bandwidth figure (or FLOP utilisation, above the ridge) measures the distance
    to the roof, from a ``utilization.reading`` of ``flop_util``: the reference answer's
    explanation."""
    d = hardware.get(device)
    cap = reading["flop_util_bound"]
    side = "below" if reading["regime"] == roofline.MEMORY else "above"
    return (f"Achieved FLOP/s ÷ achieved bytes/s gives the kernel's AI: "
            f"{units.format_value(reading['ai'])} "
            f"FLOP/B, {side} the {precision} ridge of "
            f"{units.format_value(roofline.ridge_point(d, precision))}: "
            f"{reading['regime']}. At that AI the roof allows only "
            f"{cap:.1%} of peak FLOP/s, so {flop_util:.0%} FLOP utilisation "
            f"is already {flop_util / cap:.0%} of what is possible; the "
            "bandwidth figure is the one that measures the distance to the roof.")


def profiled_point(reading: dict) -> figures.Point:
    """The profiled kernel on the roofline, where a ``utilization.reading`` puts it, with both
    utilisations in its hover."""
    return figures.Point("the profiled kernel", reading["ai"], reading["tflops"],
                         kind="measured",
                         hover={"FLOP utilisation": _percent(reading["flop_util"]),
                                "bandwidth": _percent(reading["bw_util"])})


def yardstick_cards(reading: dict, precision: str) -> list[style.Metric]:
    """A ``utilization.reading`` in five cards: implied AI, both utilisations, the fraction of
    its roof (the headroom left, coloured by regime) and the FLOP-utilisation bound."""
    return [
        style.Metric("Implied AI", f"{units.format_value(reading['ai'])} "
                     f"{units.intensity_unit(precision)}", "achieved FLOP/s ÷ achieved B/s"),
        style.Metric("FLOP utilisation", _percent(reading["flop_util"]),
                     "achieved / peak FLOP/s"),
        style.Metric("Bandwidth utilisation", _percent(reading["bw_util"]),
                     "achieved / peak B/s"),
        style.Metric("Fraction of its roof", _percent(reading["of_roof"]),
                     "achieved / attainable at this AI: the headroom left", reading["regime"]),
        style.Metric("FLOP-utilisation bound", _percent(reading["flop_util_bound"]),
                     "the best FLOP utilisation this AI allows"),
    ]


def yardstick_actual(label: str, reading: dict, precision: str) -> str:
    """What the instrument shows for Prediction 5: the right yardstick's option and how
    close the profiled kernel is to its roof."""
    return (f"{label}: at {units.format_value(reading['ai'])} FLOP/B ({precision}) the kernel "
            f"reaches {_percent(reading['of_roof'])} of its roof")


def yardstick_worked_example(reading: dict, flop_util: float, bandwidth_util: float, device,
                             precision: str) -> str:
    """The yardstick math peek's worked example: the profiler's two numbers on one chip, the
    AI and ρ they imply, the fraction of the roof and the FLOP-utilisation bound."""
    d = hardware.get(device)
    ai = reading["ai"]
    return _peek_tail(
        f"On the {d.name} ({precision}): {flop_util:.0%} FLOP utilisation at "
        f"{bandwidth_util:.0%} bandwidth\n"
        f"puts AI at {units.format_value(ai)} FLOP/B, "
        f"{units.format_value(float(roofline.rho(ai, d, precision)))}\n"
        f"× the ridge: {reading['regime']}, at\n"
        f"{_percent(reading['of_roof'])}\n"
        f"of its roof, with a FLOP-utilisation bound of "
        f"{_percent(reading['flop_util_bound'])}.\n"
        "Only raising AI (Part 2) lifts that bound.")


# --- Part 7: measured on this machine ------------------------------------------------------

def sweep_note(precision: str, *, measured_gbs: float | None, spec_name: str | None,
               cache_bytes: float | None, largest_fit: int | None,
               roof_run_slowed: bool) -> str:
    """The note under the measured sweep: where the roof came from (this machine's measured
    bandwidth ``measured_gbs``, else the spec sheet of ``spec_name``), up to which N the
    operands fit in the last-level cache, and whether points above a measured compute roof
    say the run that measured it was slowed."""
    if measured_gbs is not None:
        roof = (f"this machine's measured roofline: {units.format_value(measured_gbs)}"
                f" GB/s of bandwidth (STREAM, past the caches) and the best {precision} GEMM "
                "rate of a short run before the sweep")
    else:
        roof = f"the spec sheet of the {spec_name}"
    return f"The roof is {roof}." + (
        f" A, B and C fit in this machine's {units.format_bytes(cache_bytes, binary=True)} "
        f"last-level cache for N ≤ {units.format_value(largest_fit)} ({precision}): those GEMMs "
        f"re-read their "
        "operands from cache, not from memory, so the memory roof drawn from its bandwidth "
        "does not bind them (Lab 5 measures each level)." if largest_fit is not None else "") + (
        " A point above the flat compute roof says the short run that measured the roof was "
        "slowed (other programs, clocks): a measured roof is only as good as its run."
        if roof_run_slowed else "")


def measured_points(rows: list[dict], precision: str,
                    fits_in_cache: dict[int, bool]) -> list[figures.Point]:
    """The measured square GEMMs (rows with ``n``, ``ai``, ``measured_tflops``, ``ratio``,
    ``median_ms``) as points, each hover saying measured / predicted, the median time and
    whether A + B + C fit in the last-level cache."""
    points = []
    for r in rows:
        footprint = units.format_bytes(formulas.gemm(r["n"], r["n"], r["n"], precision).bytes,
                                       binary=True)
        points.append(figures.Point(
            f"N={r['n']}", r["ai"], r["measured_tflops"], kind="measured",
            hover={"measured / predicted": units.format_value(r["ratio"]),
                   "median time": f"{units.format_value(r['median_ms'])} ms",
                   "A + B + C": footprint + (" (fits in the last-level cache)"
                                             if fits_in_cache[r["n"]] else "")}))
    return points


def nothing_measured_message(rows: list[dict]) -> str:
    """Why the sweep drew nothing: the first sizes' statuses, and the way out."""
    return ("No size could be measured: " + "; ".join(
        f"N={r['n']}: {r['status']}" for r in rows[:3]) + ".\n\nPick another precision "
        "to measure, or a longer time budget, and press the button again.")


def sweep_question(measured: list[dict], above_roof: list[dict]) -> str:
    """The "explain" question after the sweep, following what was measured (rows with ``n``
    and ``ratio`` = measured / predicted): a point above the roof is asked about as such,
    never as one that "falls below" it."""
    worst = min(measured, key=lambda r: r["ratio"] or float("inf"))
    if above_roof:
        sizes = ", ".join(units.format_value(r['n']) for r in above_roof)
        return (f"N = {sizes} ran above the predicted roof "
                f"(up to {units.format_value(max(r['ratio'] for r in above_roof))}×), yet a "
                "roofline is an upper bound. Which of its assumptions did they break? (Read "
                "the note under the figure: where do their A, B and C live, and how was the "
                "roof itself measured?)")
    if worst is measured[0]:
        return ("Why do small GEMMs fall furthest below the roof, even where the roof "
                "itself is low? (Think: launch and loop overhead, caches, tiles.)")
    return (f"Why is the gap below the roof largest at N = {units.format_value(worst['n'])}? "
            f"(Think: "
            "launch and loop overhead, caches, tiles, what else ran on this machine.)")
