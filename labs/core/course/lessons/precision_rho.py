"""Lab 3 (Precision and ρ): the text its cells assemble from computed numbers.

Each function takes values the lab computed (a ``precision_study`` result, a device, rows of a
table) and returns what one cell shows: a reveal's explanation, a row of metric cards, the rows
of a table, a note. The story (headings, scenarios, questions) stays in the notebook; the
physics stays in ``labs.core.physics.precision_study``.
"""

from __future__ import annotations

from labs.core.physics import precision, precision_study, roofline, units
from labs.core.physics.units import format_value
from labs.core.ui import style

# Numbers are written by labs.core.physics.units, as the cards write them (LABS_SPEC §6). Kept
# inline: percentages (signed errors, measured / spec) and × factors with fixed decimals that
# the text compares ("×0.625, not 2", "3.56× fewer bytes, not 16 / 4 = 4×").

__all__ = [
    "decode_measured_note",
    "decode_table_rows",
    "device_spec_cards",
    "explorer_table_rows",
    "faster_than_bound_text",
    "l2_trap_text",
    "live_decode_rows",
    "live_peak_rows",
    "missing_rate_message",
    "naive_bandwidth_cards",
    "naive_explanation",
    "nvfp4_explanation",
    "rho_change_cards",
    "rho_change_explanation",
    "switch_cards",
    "switch_unavailable_note",
    "tf32_cards",
    "weight_only_cards",
    "weight_only_explanation",
]


def _bits(storage: str) -> str:
    """A format's bits per element, exact (int4 with a scale per 128 is 4.125 bits, not 4.12)."""
    return format_value(precision.bits(storage), significant=4)


def _percent(value) -> str:
    """A signed error in percent, or a dash where nothing was measured."""
    return "—" if value is None else f"{value:+.0f} %"


# --- Part 1 · the classic argument ------------------------------------------------------------


def rho_change_explanation(parts) -> str:
    """Prediction 1's reveal: AI rises by the byte ratio, the ridge by the peak ratio."""
    b, a = parts.before, parts.after
    return (f"FP16 halves the bytes, so AI rises {parts.ai_ratio:.1f}× ({format_value(b.ai)} "
            f"→ {format_value(a.ai)} FLOP/B); but the tensor cores raise the roof "
            f"{parts.ridge_ratio:.1f}× ({format_value(b.attainable_tflops)} → "
            f"{format_value(a.attainable_tflops)} TFLOP/s), so the ridge moves "
            f"{format_value(b.ridge)} → {format_value(a.ridge)} FLOP/B. ρ = AI / ridge goes "
            f"{format_value(b.rho)} → {format_value(a.rho)}: ×{parts.rho_ratio:.3f}, not 2.")


def rho_change_cards(parts) -> list[style.Metric]:
    """AI, ridge and ρ before and after an fp32 → fp16 switch, each with its factor."""
    b, a = parts.before, parts.after
    return [
        style.Metric("AI · fp32 → fp16", f"{format_value(b.ai)} → {format_value(a.ai)} FLOP/B",
                     f"×{format_value(parts.ai_ratio)}: half the bytes per element"),
        style.Metric("ridge (dense) · fp32 → fp16",
                     f"{format_value(b.ridge)} → {format_value(a.ridge)} FLOP/B",
                     f"×{format_value(parts.ridge_ratio)}: CUDA cores → tensor cores"),
        style.Metric("ρ = AI / ridge · fp32 → fp16",
                     f"{format_value(b.rho)} → {format_value(a.rho)}",
                     f"×{format_value(parts.rho_ratio)}: "
                     f"{precision_study.regime_change(b.regime, a.regime)}", kind=a.regime),
    ]


# --- Part 2 · storage vs compute precision ----------------------------------------------------


def weight_only_explanation(parts) -> str:
    """Prediction 2's reveal: the ridge stays (FP16 math), the bytes shrink, ρ rises."""
    b, a = parts.before, parts.after
    return (f"The math stays FP16, so the ridge stays {format_value(a.ridge)} FLOP/B. "
            f"INT4 weights cut the bytes moved from {units.format_bytes(b.bytes)} "
            f"to {units.format_bytes(a.bytes)} for the same FLOPs, so AI and ρ "
            f"change ×{parts.rho_ratio:.2f} ({format_value(b.rho)} → "
            f"{format_value(a.rho)}). Fewer bytes per FLOP at the same roof can only "
            "move a kernel towards the compute roof.")


def weight_only_cards(parts) -> list[style.Metric]:
    """AI, the unchanged fp16 ridge and ρ for fp16 → int4 weights."""
    b, a = parts.before, parts.after
    return [
        style.Metric("AI · fp16 → int4 weights", f"{format_value(b.ai)} → "
                     f"{format_value(a.ai)} FLOP/B", f"×{format_value(parts.ai_ratio)}"),
        style.Metric("ridge (fp16, dense)", f"{format_value(a.ridge)} FLOP/B",
                     f"×{format_value(parts.ridge_ratio)}: the math is still fp16"),
        style.Metric("ρ", f"{format_value(b.rho)} → {format_value(a.rho)}",
                     f"×{format_value(parts.rho_ratio)}", kind=a.regime)]


# --- Part 3 · decode: quantized weights, bytes and speed --------------------------------------


def nvfp4_explanation(fp16_row, nvfp4_row) -> str:
    """Prediction 3's reveal: NVFP4's block scales make the byte ratio less than 16 / 4."""
    return (f"FP16 weights: {format_value(fp16_row.bytes / 1e6)} MB; NVFP4: "
            f"{format_value(nvfp4_row.bytes / 1e6)} MB "
            f"({_bits('nvfp4')} bits a weight: 4-bit values plus an 8-bit "
            f"scale "
            f"per 16, where MXFP4 has one per 32, {_bits('mxfp4')} bits; "
            f"the "
            "FP16 input and output vectors stay), so "
            f"{nvfp4_row.byte_ratio:.2f}× fewer bytes, not 16 / 4 = 4×. The GEMV is "
            f"{fp16_row.regime}, so the speedup of the roofline bounds (the ideal) is "
            f"{nvfp4_row.speedup:.2f}×; a real kernel also dequantises every weight, and gets "
            "less.")


def device_spec_cards(device) -> list[tuple[str, str, str]]:
    """A device's spec sheet: its memory, then each precision's dense peak and ridge."""
    return ([(f"{device.name} · memory", f"{format_value(device.bandwidth_gbs)} GB/s",
              f"{device.memory_text} {device.memory_type}")]
            + [(f"{p} peak (dense)", f"{format_value(device.peak_tflops(p))} {units.rate_unit(p)}",
                f"ridge ({p}, dense) = {format_value(roofline.ridge_point(device, p))} "
                f"{units.intensity_unit(p)}")
               for p in device.precisions])


def decode_table_rows(quant_rows, quant_table) -> list[dict]:
    """The decode table: each format's bytes and roofline bounds, and what was measured."""
    return [{"format": q.storage, "bits/weight": _bits(q.storage),
             "math": q.compute, "bytes moved": f"{format_value(q.bytes / 1e6)} MB",
             "byte ratio": f"{format_value(q.byte_ratio)}×",
             "roofline time (at least)": units.format_seconds(q.seconds),
             "speedup of the roofline bounds (ideal)": f"{format_value(q.speedup)}×",
             "measured time": units.format_seconds(m["measured_s"]) if m["measured_s"] else "—",
             "measured speedup": (f"{format_value(m['measured_speedup'])}×"
                                  if m["measured_speedup"] else "—"),
             "error": _percent(m["error_pct"]), "regime": q.regime, "note": q.note}
            for q, m in zip(quant_rows, quant_table)]


def decode_measured_note(quant_table, measured_on: str | None) -> str:
    """Where the decode table's measured columns come from, or how to fill them."""
    return ("Measured columns: run Part 6 on a GPU from the registry and pick that device "
            "and matrix here." if not any(r["measured_s"] for r in quant_table) else
            f"Measured on {measured_on}.")


# --- Part 4 · the explorer --------------------------------------------------------------------


def missing_rate_message(device, missing_rows) -> str:
    """Why some picked formats cannot run on ``device`` (no rate for their math), and the way
    out."""
    lacks = ", ".join(dict.fromkeys(r.compute for r in missing_rows))
    return (f"{device.name} has no {lacks} rate in the registry, so these formats cannot run "
            "here: " + ", ".join(f"{r.storage} (math in {r.compute})" for r in missing_rows)
            + f". It has rates for: {', '.join(device.precisions)}. Deselect those formats, "
            "pick another compute precision for weight-only formats, or choose a device with "
            "that rate (FP4 needs e.g. a B200 or an RTX 5090).")


def explorer_table_rows(rows) -> list[dict]:
    """The explorer's table: one row per storage format on the chosen device."""
    return [{"format": r.storage, "bits/element": _bits(r.storage),
             "math (peak)": r.compute,
             "AI": f"{format_value(r.ai)} {units.intensity_unit(r.compute)}",
             "ridge (dense)": f"{format_value(r.ridge)} {units.intensity_unit(r.compute)}",
             "ρ": format_value(r.rho), "regime": r.regime,
             "time bound": units.format_seconds(r.seconds),
             "attainable": f"{format_value(r.attainable_tflops)} {units.rate_unit(r.compute)}",
             "I_bit": f"{format_value(r.i_bit)} op/bit", "how": r.reason} for r in rows]


def switch_cards(device, parts) -> list[style.Metric]:
    """Part 1's fp32 → fp16 switch on the device picked: ρ's factor and its two parts."""
    return [style.Metric(
        f"Part 1's switch (4096³ GEMM, fp32 → fp16) on {device.name}",
        f"ρ ×{format_value(parts.rho_ratio)}",
        f"AI ×{format_value(parts.ai_ratio)} ÷ ridge ×{format_value(parts.ridge_ratio)}")]


def switch_unavailable_note(device, error) -> str:
    """Why Part 1's switch does not exist on ``device`` (a rate it lacks), as an italic note."""
    lacks = [p for p in ("fp32", "fp16") if not device.has(p)]
    return (f"_{device.name} has no {' or '.join(lacks)} rate in the registry, so Part 1's "
            f"fp32 → fp16 switch does not exist there: pick a device with both in Part 3 "
            f"({style.devices_with('fp32', 'fp16')}) to see it._" if lacks else
            f"_{style.error_message(error)}_")


# --- Part 5 · what the naive measurement gets wrong -------------------------------------------


def naive_explanation(kai) -> str:
    """Prediction 4's reveal: the allocator peak counts each byte once, the GEMVs read it often."""
    fvt = kai.fvt
    return (f"The allocator peak is the footprint, {units.format_bytes(fvt.footprint_bytes)}"
            f", counted once; but {fvt.iterations} GEMVs read the weights "
            f"{fvt.iterations} times: {units.format_bytes(fvt.traffic_bytes)} of "
            f"traffic. Footprint ÷ time gives {format_value(kai.naive_gbs)} GB/s; traffic ÷ "
            f"time gives {format_value(kai.traffic_gbs)} GB/s, "
            f"{kai.traffic_gbs / kai.naive_gbs:.0f}× more: the memory is not slow, "
            "the metric counts each byte once.")


def naive_bandwidth_cards(naive, device) -> list[style.Metric]:
    """Footprint against traffic, the naive bandwidth against the one really used, and where
    the traffic came from (HBM, or L2 after the first iteration)."""
    hbm = format_value(device.bandwidth_gbs)
    # a working set that fits in L2 is read from L2 after the first iteration: its
    # traffic is real, but it is not HBM traffic (the second trap of this part)
    if not naive.fits_in_l2:
        where = "HBM"
        used = f"traffic ÷ time; {device.name} has {hbm} GB/s of HBM"
    elif naive.l2_gbs:
        where = "L2 after the 1st iteration"
        used = (f"traffic ÷ time: the 1st iteration from HBM ({hbm} GB/s), the others from L2 "
                f"at {format_value(naive.l2_gbs)} GB/s (measured)")
    else:
        where = "L2 after the 1st iteration"
        used = (f"traffic ÷ time, timed at the HBM's {hbm} GB/s: no "
                f"L2 bandwidth is published for the {device.name}, so the cache gives more")
    return [
        style.Metric("allocator peak (each tensor once)", units.format_bytes(
            naive.fvt.footprint_bytes), "what max_memory_allocated() shows, at most"),
        style.Metric(f"traffic from {where} (every read and write)", units.format_bytes(
            naive.fvt.traffic_bytes), f"{naive.fvt.iterations} iterations, compulsory"),
        style.Metric("naive 'bandwidth'", f"{format_value(naive.naive_gbs)} GB/s",
                     "allocator peak ÷ time", kind="danger"),
        style.Metric("bandwidth really used", f"{format_value(naive.traffic_gbs)} GB/s", used,
                     kind="warn" if naive.fits_in_l2 else "ok")]


def l2_trap_text(naive, device, kai_footprint_bytes: float) -> str:
    """The second trap, for a working set that fits in ``device``'s L2: repeating a small
    kernel times the cache, not HBM; compared with Kai's own footprint."""
    l2 = units.format_bytes(device.l2_bytes, binary=True)
    kai = units.format_bytes(kai_footprint_bytes)
    larger = (f"a working set larger than its {l2} L2 (on this device even Kai's {kai} fit)"
              if kai_footprint_bytes <= device.l2_bytes else
              f"a working set larger than its {l2} L2 (Kai's {kai} is)")
    exceeds = (f"here {format_value(naive.traffic_gbs)} GB/s, above the HBM's "
               f"{format_value(device.bandwidth_gbs)}" if naive.l2_gbs else
               "a cache's bandwidth, which can exceed the HBM's (no published L2 "
               "figure says by how much for this device)")
    return (f"**A second trap:** these {units.format_bytes(naive.fvt.footprint_bytes)} fit "
            f"in the {device.name}'s {l2} L2 cache, so after the first iteration every "
            f"read hits L2, not HBM. Repeating a small kernel measures the cache: traffic ÷ "
            f"time is {exceeds}. Time {larger}, or rotate through copies as Part 6 does.")


def tf32_cards(tf32) -> list[style.Metric]:
    """TF32 read right (32-bit storage) and wrong (19-bit storage), and its apparent speed."""
    return [
        style.Metric("AI, TF32 stored as 32-bit", f"{format_value(tf32.ai)} FLOP/B",
                     "right: tensors stay FP32 in memory", kind="ok"),
        style.Metric("AI if TF32 were 19-bit storage",
                     f"{format_value(tf32.ai_if_19_bit_storage)} FLOP/B",
                     f"wrong: ×{format_value(tf32.ai_overstatement)} too high", kind="danger"),
        style.Metric("TF32 attainable (4096³ GEMM)", f"{format_value(tf32.tf32_attainable)} "
                     f"{units.rate_unit('tf32')}",
                     f"= {format_value(tf32.apparent_fp32_fraction)}× the "
                     f"FP32 peak ({format_value(tf32.fp32_peak)})", kind="compute")]


# --- Part 6 · measure this machine ------------------------------------------------------------


def live_peak_rows(rows) -> list[dict]:
    """The measured peaks and bandwidth next to the spec sheet's."""
    return [{"what": r["what"],
             "measured": "—" if r["measured"] is None else format_value(r["measured"]),
             "spec (dense)": "—" if r["spec"] is None else format_value(r["spec"]),
             "measured / spec": "—" if r["ratio"] is None else f"{r['ratio']:.0%}",
             "detail": r["detail"]} for r in rows]


def live_decode_rows(live_decode) -> list[dict]:
    """The measured decode GEMVs next to their predicted time and speedup."""
    return [{"format": r["storage"], "math": r["compute"],
             "predicted": units.format_seconds(r["predicted_s"]),
             "measured": units.format_seconds(r["measured_s"]) if r["measured_s"] else "—",
             "error": _percent(r["error_pct"]),
             "speedup of the roofline bounds (ideal)": f"{format_value(r['predicted_speedup'])}×",
             "measured speedup": (f"{format_value(r['measured_speedup'])}×"
                                  if r["measured_speedup"] else "—"),
             "status": r["status"] + (" · faster than its own bound" if r["below_bound"] else "")}
            for r in live_decode]


def faster_than_bound_text(formats) -> str:
    """Why a measured GEMV below its own bound means the bound's inputs understate it."""
    return (f"**Faster than its own bound: {', '.join(formats)}.** A bound is a floor on time, "
            "so a measurement below it means the bound's inputs understate this case: the peak "
            "of its math precision was measured on square GEMMs (a GEMV may take a faster kernel "
            "path), the bandwidth by STREAM (the weights may partly stay in a cache). Read those "
            "rows' error and speedup with that in mind.")
