"""Lab 7 "Your model on the roofline": the sentences, cards and table rows its cells show,
written as functions of the values they state.

Each function takes what the lab computed or measured (a device's registry key and the decode
step's case, the roofline's times per operator type, a profile the cell passes in) and returns
what one cell shows: a reveal's explanation, a row of metric cards, a note, the rows of a
table. The course wing does not import the measure wing: a profile arrives as the object the
cell holds and is read through its public attributes (``device``, ``rows``, ``by_op_type()``,
``share()``, ...). The story (headings, scenarios, questions) stays in the notebook; the
physics stays in ``labs.core.physics.tiny_models``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping

from labs.core.physics import hardware, roofline, tiny_models, units
from labs.core.ui import style

# Numbers are written by labs.core.physics.units, as the cards write them (LABS_SPEC §6). Kept
# inline: percentages and shares with fixed decimals ("91.3%") and × factors with fixed
# decimals that the text compares ("0.50×", "1.035×").

__all__ = [
    "batch_growth_text",
    "best_predicted_explanation",
    "bf16_ratio_explanation",
    "change_cards",
    "decode_step_cards",
    "dominant_large_explanation",
    "dominant_small_explanation",
    "measured_leader_note",
    "measured_memory_share_note",
    "memory_share_cards",
    "memory_share_explanation",
    "model_card",
    "operator_table_rows",
    "option_label",
    "roofline_leader_label",
    "weights_read_text",
]


def option_label(options: Mapping[str, str], value: str) -> str:
    """The label a prediction's choice options show for ``value``."""
    return next(label for label, v in options.items() if v == value)


# --- the model card -------------------------------------------------------------------------


def model_card(config, device_name: str, precision: str, ridge: str) -> str:
    """The model's shape and size, the device the predictions use and its ridge (``ridge``:
    written, or a dash where the device has no rate in ``precision``)."""
    c = config
    return (
        f"**The model.** {c.name}: {c.layers} layers, d_model {c.d_model}, {c.heads} "
        f"query heads sharing {c.kv_heads} KV heads of {c.head_dim}, SwiGLU MLP of "
        f"{c.d_ff}, vocabulary {units.format_value(c.vocab)}; "
        f"{units.format_value(c.params / 1e6)} M parameters with random "
        f"weights (Llama-3-8B's proportions, scaled down; nothing to download). It runs in "
        f"{precision}. **Predictions** use the {device_name} spec sheet (ridge ({precision}, "
        f"dense) = {ridge}); "
        "**measurements** run on this machine, against its own roofline measured once per "
        "session (memory bandwidth and the best GEMM rate).")


# --- Part 1 · where a decode step's time goes -----------------------------------------------


def dominant_small_explanation(device: str, case: Mapping) -> str:
    """Prediction 1's reveal: a small-batch decode step reads every weight once for one token,
    and little KV cache, so the weight GEMMs lead the roofline's step (``case``:
    ``tiny_models``' keyword arguments of a decode step)."""
    t = tiny_models.time_by_group(device, **case)
    ref = tiny_models.leading_group(t)
    kv = tiny_models.memory_terms(**case)["KV cache"]
    read = tiny_models.TINY_DECODER.weight_bytes_read(case["precision"], tokens=case["batch"])
    return (f"A batch-{case['batch']} decode step reads every layer's weights "
            f"and the LM head once ({units.format_bytes(read)} in {case['precision']}; of "
            "the embedding table only the token's row) to make one "
            f"token, but only {units.format_bytes(kv)} of KV cache: on the "
            f"{hardware.get(device).name} the {ref} take "
            f"{units.format_seconds(t[ref])} of the {units.format_seconds(sum(t.values()))} bound "
            f"({t[ref] / sum(t.values()):.1%}). That is the roofline's answer, not "
            "a GPU's: in eager mode every kernel of the step also pays a launch of a "
            "few µs, which the roofline has no term for and which does not shrink with "
            "the bytes. Prediction 3 asks what that does to the step; the profile "
            "below shows what this machine adds.")


def dominant_large_explanation(device: str, case: Mapping) -> str:
    """Prediction 2's reveal: at a large batch every sequence reads its own KV cache (and the
    math attention copies it to every query head), while the weights are read once."""
    t = tiny_models.time_by_group(device, **case)
    ref = tiny_models.leading_group(t)
    kv = tiny_models.memory_terms(**case)["KV cache"]
    read = tiny_models.TINY_DECODER.weight_bytes_read(case["precision"], tokens=case["batch"])
    copies = sum(o.detail.get("K, V repeated to the query heads (write + read)", 0.0)
                 for o in tiny_models.step_ops(**case))
    return (f"The weights are still read once per step ({units.format_bytes(read)}), but "
            f"every one of the {case['batch']} sequences reads its own "
            f"KV cache: {units.format_bytes(kv)} in all, and the math "
            "attention copies it to every query head before QKᵀ and PV "
            f"({units.format_bytes(copies)} written and read again). On the "
            f"{hardware.get(device).name} the {ref} take "
            f"{t[ref] / sum(t.values()):.1%} of the step's bound.")


def memory_share_explanation(device: str, case: Mapping) -> str:
    """Prediction 3's reveal: the roofline alone says 100% memory-bound; the launch model's
    kernels x 5 µs outside every operator bring the share down, and the share at the measured
    per-kernel costs the 5 µs stands between."""
    launch_us = units.format_value(roofline.DEFAULT_LAUNCH_OVERHEAD_US)
    share = tiny_models.memory_bound_share_with_launches(device, **case)
    t = tiny_models.time_with_launches(device, **case)
    launch = t.pop(tiny_models.LAUNCHES)
    kernels = tiny_models.step_kernels(**case)
    ai = max(o.ai for o in tiny_models.step_ops(**case))
    d = hardware.get(device)

    def at(us):
        return tiny_models.memory_bound_share_with_launches(device, launch_overhead_us=us,
                                                            **case)
    return (f"No operator of a batch-{case['batch']} decode step reaches the "
            f"ridge (highest AI {units.format_value(ai)} FLOP/B against the {d.name}'s "
            f"{case['precision']} "
            f"ridge of {units.format_value(roofline.ridge_point(d, case['precision']))} FLOP/B), "
            f"so all "
            f"{units.format_seconds(sum(t.values()))} of the bound are memory-bound: the "
            "roofline alone says 100%. But the step's "
            f"{kernels} kernels × {launch_us} µs = "
            f"{units.format_value(launch * 1e6, significant=4)} µs of launches are "
            "in no operator: memory-bound time is "
            f"{units.format_value(sum(t.values()) * 1e6, significant=4)} / "
            f"{units.format_value((sum(t.values()) + launch) * 1e6, significant=4)} µs"
            f" = {100 * share:.1f}% of the step. That is the model's number: the "
            f"{launch_us} µs is a chosen figure, not what a GPU does. A bare "
            f"launch costs about "
            f"{units.format_value(roofline.LAUNCH_BACK_TO_BACK_US)} µs (share "
            f"{100 * at(roofline.LAUNCH_BACK_TO_BACK_US):.1f}%) and a kernel of eager "
            f"PyTorch about {units.format_value(roofline.EAGER_KERNEL_US)} µs (share "
            f"{100 * at(roofline.EAGER_KERNEL_US):.1f}%, what an eager step on a GPU "
            "measures).")


def bf16_ratio_explanation(device: str, case: Mapping) -> str:
    """Prediction 4's reveal: the roofline halves a memory-bound step, the launches do not
    shrink, so (bound/2 + launches) / (bound + launches), and where halving can hold."""
    launch_us = units.format_value(roofline.DEFAULT_LAUNCH_OVERHEAD_US)
    roof = tiny_models.predicted_ratio("precision", device, case)
    ratio = tiny_models.predicted_ratio_with_launches("precision", device, case)
    old = tiny_models.time_with_launches(device, **case)
    launch = old.pop(tiny_models.LAUNCHES)
    return (f"The roofline alone says {roof:.2f}×: every operator is memory-bound, "
            "and bf16 halves every byte. But the step's bound is "
            f"{units.format_value(sum(old.values()) * 1e6, significant=4)} µs and its kernels' "
            f"launches "
            f"({launch_us} µs each) "
            f"{units.format_value(launch * 1e6, significant=4)} µs, which do not shrink with the "
            f"bytes: "
            f"(bound/2 + launches) / (bound + launches) = {ratio:.3f}×, on a GPU in "
            "eager mode (measured on an NVIDIA H200, torch 2.11, 2026-11-26: 1.035×). "
            "Halving the bytes halves a step only where the bytes set its time: a GPU "
            "at large batch, under CUDA graphs or compiled, or a CPU whose step streams "
            "its weights from DRAM and computes bf16 natively (there it can come close "
            "to 0.5); a CPU without native bf16 math may get slower. The student's "
            "prediction is graded against their own measurement.")


def roofline_leader_label(times: Mapping[str, float], names: Mapping[str, str]) -> str:
    """What the roofline's step says leads, for a comparison: the type (``names``: its words)
    and its share of the bound."""
    ref = tiny_models.leading_group(times)
    return (f"the roofline (spec sheet) says {names[ref]} "
            f"({times[ref] / sum(times.values()):.1%} of the bound)")


def measured_leader_note(profile, names: Mapping[str, str], options: Iterable[str]) -> str:
    """The measured step's leader among the question's ``options`` (operator types; the
    overhead row is none of them), not graded: the question asks for the roofline's answer."""
    options = set(options)
    top = next(g for g in profile.by_op_type() if g["op_type"] in options)
    return (f"**Measured on {profile.device}** (not graded: the question asks for the "
            f"roofline's answer): of the three types, "
            f"**{names[top['op_type']]}** take the most time, "
            f"{top['share']:.0%} of the step.")


def decode_step_cards(profile) -> list:
    """A measured step in four cards: the whole pass, its operators, the overhead between
    them (or that it cannot be told apart) and the roofline's bound."""
    p = profile
    return [
        ("Measured step", units.format_seconds(p.forward_s),
         f"median of the whole pass ({p.threads} CPU thread(s))" if p.threads else
         "median of the whole pass (GPU)"),
        ("Sum of operators", units.format_seconds(p.op_sum_s),
         f"{len(p.rows)} aten calls ({p.kernel_calls} not views), median of "
         f"{p.reps} profiled passes"),
        style.Metric("Overhead", units.format_seconds(p.overhead_s),
                     "cannot be told apart from the operators here (see the note)"
                     if p.op_time_caveat else "the step minus its operators: Python, dispatch",
                     "overhead-bound"),
        ("Roofline bound", units.format_seconds(p.bound_s),
         f"sum of max(FLOPs/peak, bytes/BW) on {p.roofline}"),
    ]


def weights_read_text(config, precision: str, tokens: int) -> str:
    """What one decode step reads of the weights: every layer's and the LM head whole, of the
    (untied) embedding table only each token's row (markdown, a math peek's last paragraph)."""
    c = config
    table = c.embedding_bytes(precision)  # the (untied) embedding table
    row = c.embedding_bytes(precision, rows=1)  # what each token gathers of it
    params = units.format_value(c.params / 1e6)
    return textwrap.dedent(f"""
    **What one decode step reads.** The model allocates {params} M parameters =
    {units.format_bytes(c.weight_bytes(precision))} in {precision}, but a step reads
    {units.format_bytes(c.weight_bytes_read(precision, tokens=tokens))} of them: every
    layer's weights and the LM head whole, and of the {units.format_bytes(table)} embedding table
    only the row of each token ({units.format_bytes(row)}). A model with a *tied*
    embedding (the LM head is the embedding table, as in GPT-2) reads that table whole in the
    LM head, so there a step reads every parameter.
    """)


def batch_growth_text(config, batch: int, context: int) -> str:
    """The weights read per step against the KV cache at ``batch`` and ``context`` (fp32),
    and the math attention's copies of K and V to every query head."""
    c = config
    kv = tiny_models.memory_terms(phase="decode", batch=batch, context=context)["KV cache"]
    return textwrap.dedent(f"""
    Here: weights read {units.format_bytes(c.weight_bytes_read("fp32", tokens=batch))}
    per step (of {units.format_bytes(c.weight_bytes("fp32"))} allocated), KV cache at batch
    {batch} and context {units.format_value(context)}: {units.format_bytes(kv)} (fp32,
    {c.kv_heads} KV heads). The "math" attention also copies K and V to all {c.heads} query
    heads before QKᵀ (Llama's `repeat_kv`): {c.heads // c.kv_heads}× more bytes written and read.
    """)


def memory_share_cards(roofline_share: float, launch_share: float,
                       measured_cost_shares: Iterable, batch: int) -> list[style.Metric]:
    """The memory-bound share of a decode step: the roofline alone, with 5 µs per kernel (the
    answer graded), and at each measured per-kernel cost ``(what, µs, share)``."""
    launch_us = units.format_value(roofline.DEFAULT_LAUNCH_OVERHEAD_US)
    return [
        style.Metric("The roofline alone", f"{100 * roofline_share:.1f}%",
                     f"of the bound of a batch-{batch} decode step (no "
                     "overhead term)", "memory-bound"),
        style.Metric(f"Roofline + {launch_us} µs per kernel",
                     f"{100 * launch_share:.1f}%",
                     "of the step once every kernel pays a launch (the answer graded)",
                     "memory-bound")] + [
        style.Metric(f"At {units.format_value(us)} µs per kernel", f"{100 * share:.1f}%", what,
                     "memory-bound")
        for what, us, share in measured_cost_shares]


def measured_memory_share_note(profile) -> str:
    """The measured step's memory-bound share, not graded (the question asks for the model's)."""
    return (f"**Measured on {profile.device}** (not graded: the question asks for the "
            f"model's share): {100 * profile.share('memory-bound'):.1f}% of the measured "
            "step is in memory-bound operators. The rest is the overhead row (launch "
            "and dispatch on the host) and operators too small to reach any roof.")


# --- Part 2 · predicted vs measured, operator by operator -----------------------------------


def best_predicted_explanation(ratios: Mapping[str, float], context: int) -> str:
    """Prediction 5's reveal: a fixed cost per kernel is small next to a large operator's
    bound; ``ratios``: (bound + launches) / bound per type of a ``context``-token prefill."""
    launch_us = units.format_value(roofline.DEFAULT_LAUNCH_OVERHEAD_US)
    ref = min(ratios, key=ratios.get)
    return ("A large operator's bound is long next to anything fixed per kernel; a "
            "small one's is not, and small operators miss it in both directions: on a "
            "CPU their operands still sit in cache, so they can run below the DRAM "
            "bound; on a GPU no kernel takes less than a few µs. (Launch and dispatch "
            "themselves land in the overhead row, not in the operators' times.) If every "
            f"kernel paid {launch_us} µs, a {context}-token prefill's {ref} "
            f"would run {ratios[ref]:.2f}× their bound, its norms and elementwise ops "
            f"{ratios['norms & elementwise']:.1f}×.")


def operator_table_rows(rows: Iterable[Mapping]) -> list[dict]:
    """The measured table's rows: each operator's bound, measured time, error and lost time
    (a dash where it has no bound)."""
    return [{"operator": r["name"], "module": r["module"], "shapes": r["shapes"],
             "predicted (bound)": units.format_seconds(r["bound_s"]) if r["bound_s"] else "—",
             "measured": units.format_seconds(r["measured_s"]),
             "error %": round(r["error_pct"]) if r["error_pct"] is not None else "—",
             "lost": units.format_seconds(r["lost_s"]), "regime": r["regime"]}
            for r in rows]


# --- Part 3 · change one thing --------------------------------------------------------------


def change_cards(result: Mapping, change_name: str, predicted: float | None,
                 with_launches: float | None) -> list[tuple[str, str, str]]:
    """A measured change against the roofline's ratio and the launch model's: before, after,
    the measured ratio (with how far its rounds agree) and, for torch.compile, its compile
    time. ``predicted`` / ``with_launches``: None where not modelled."""
    launch_us = units.format_value(roofline.DEFAULT_LAUNCH_OVERHEAD_US)
    return [
        ("Before", units.format_seconds(result["old_s"]),
         f"measured step, {result['threads'] or 'all'} CPU thread(s)"),
        ("After", units.format_seconds(result["new_s"]), change_name),
        ("Measured new / old", f"{units.format_value(result['ratio'])}×",
         "this machine, both steps timed in alternation" + (
             f"; rounds agree within {units.format_value(result['spread'])}×"
             if "spread" in result else "")),
        ("Roofline's new / old",
         f"{units.format_value(predicted)}×" if predicted else "not modelled",
         "spec sheet picked above"),
        ("Roofline + launches",
         f"{units.format_value(with_launches)}×" if with_launches else "not modelled",
         f"{launch_us} µs per kernel added"),
    ] + ([("Compile time", units.format_seconds(result["compile_s"]), "first call")]
         if result["change"] == "compile" else [])
