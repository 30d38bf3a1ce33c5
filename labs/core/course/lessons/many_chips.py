"""Lab 6 (many chips): the text its cells assemble from computed numbers. The datasheet and
ring cards, the reference answers' derivations (Predictions 1 to 5), the cards of the
three-roof, serving and training instruments and the notes under their comparisons.

Each function takes the case it states (a chip, a link, a reference case of the lab's setup
cell, or a result of :mod:`labs.core.physics.sharding`) and returns markdown text or a list
of :class:`labs.core.ui.style.Metric`; the notebook keeps the gates, the widgets and the
static story. Every number comes from :mod:`labs.core.physics`; nothing is modelled here.
"""

from __future__ import annotations

from fractions import Fraction

import marimo as mo

from labs.core.physics import collectives, hardware, models, sharding, units
from labs.core.physics.precision import bytes_per_element
from labs.core.ui import style

# Numbers are written by labs.core.physics.units, as the cards write them (LABS_SPEC §6); a
# derivation's terms (a product or difference shown with its factors) to 4 figures. Kept
# inline: percentages (link efficiency, compute fraction) and the overlap gain, a × factor
# with fixed decimals that the text compares ("1.42×, at most 1.50×").

__all__ = [
    "allreduce_derivation", "allreduce_model_note", "batch_range_text", "bus_bandwidth_text",
    "datasheet_cards",
    "fit_cards", "last_measurement_note", "measured_note", "native_link_note", "pair_error",
    "ring_cards", "serving_cards",
    "serving_comparison_label", "serving_links", "serving_warning", "tp_case_heading",
    "serving_derivation", "tp_block_cards", "tp_shard_derivation", "training_cards",
    "training_derivation", "training_wait_note",
]


# --- the cluster ------------------------------------------------------------------------------

def datasheet_cards(device, link, precision: str) -> list[style.Metric]:
    """The chip's peak and HBM bandwidth and the link's figure, as their datasheets quote
    them."""
    d, lk = hardware.get(device), collectives.get_link(link)
    return [
        style.Metric(f"Peak π ({precision}, dense)",
                     f"{units.format_value(d.peak_tflops(precision), significant=4)} TFLOP/s",
                     f"{d.name}"),
        style.Metric("HBM bandwidth", f"{units.format_value(d.bandwidth_gbs)} GB/s",
                     f"{d.memory_text} {d.memory_type}"),
        style.Metric("Link, as quoted", lk.quoted, f"{lk.short_name}: {lk.source}")]


def native_link_note(device) -> str:
    """Which chip-to-chip link the chip has, or that none is sourced."""
    d = hardware.get(device)
    own = collectives.device_link(d)
    return (f"The {d.name}'s own chip-to-chip link: **{own.name}**." if own else
            f"No chip-to-chip link is sourced for the {d.name}: pick a network link.")


def pair_error(device, link, error: BaseException, where: str = "above") -> str:
    """Why an instrument cannot run: the chip and the link that do not go together, and where
    to pick others, or else the model's own message for ``error``."""
    why = collectives.pair_problem(device, link)
    return (f"{why} Then pick a chip and a link that go together {where}." if why
            else style.error_message(error))


# --- Part 1: one all-reduce -------------------------------------------------------------------

def allreduce_derivation(case: dict) -> str:
    """Prediction 1's reference worked out: the ring's bandwidth and latency terms at the
    ideal one-way rate, then what a ring in NCCL and NVLink SHARP reach. ``case``: op, nbytes,
    n and link, as the lab's ``ALLREDUCE_REF``."""
    lk, n, nbytes = collectives.get_link(case["link"]), case["n"], case["nbytes"]
    lat, bw = collectives.latency_bandwidth_split("all-reduce", nbytes, n, lk.one_way_gbs,
                                                  lk.latency_s)
    return (f"A ring all-reduce sends 2(n-1)/n × S per GPU one way: "
            f"{lk.name}'s {lk.quoted} counts both directions, so B = "
            f"{units.format_value(lk.one_way_gbs)} GB/s. Bandwidth: "
            f"{collectives.bus_factor_derivation('all-reduce', n)} × "
            f"{units.format_value(nbytes / 1e9)} GB / {units.format_value(lk.one_way_gbs)} GB/s = "
            f"{units.format_seconds(bw)}; latency: "
            f"{collectives.latency_steps('all-reduce', n)} steps × α "
            f"({units.format_value(lk.latency_us)} µs, stated) = {units.format_seconds(lat)}. "
            f"Total "
            f"{units.format_seconds(lat + bw)} at the ideal one-way rate, not 1 GB / "
            f"{units.format_value(2 * lk.one_way_gbs)} GB/s. A ring in NCCL reaches about "
            f"{collectives.link_efficiency(lk).fraction:.0%} of it, about "
            f"{units.format_seconds(collectives.link_time(**case, achievable=True))}; "
            f"NCCL's default on an NVSwitch node, NVLink SHARP, reduces in the switch "
            f"and is faster than any ring: about "
            f"{units.format_seconds(collectives.NVLS_H100.time(nbytes))}.")


def ring_cards(link, n: int) -> list[style.Metric]:
    """One ring all-reduce of 1 GB over ``n`` chips on ``link``: the one-way rate, the time
    ideal and achievable, its latency and bandwidth terms and where they cross. Raises
    ValueError where the link cannot join ``n`` chips in one ring."""
    p = collectives.collective_path(link, n)
    lk = p.link
    lat, bw = p.latency("all-reduce"), p.bandwidth_time("all-reduce", 1e9)
    real = collectives.collective_path(link, n, achievable=True)
    eff = collectives.link_efficiency(lk)
    approx = "~" if lk.approximate else ""
    return [
        style.Metric("Link, one way", f"{approx}{units.format_value(lk.one_way_gbs)} GB/s",
                     lk.derivation),
        style.Metric(f"1 GB on {p.name}", units.format_seconds(lat + bw),
                     f"n = {n}, at the ideal one-way rate"),
        style.Metric("achievable, ring", units.format_seconds(real.time("all-reduce", 1e9)),
                     f"{approx}{units.format_value(real.node_gbs)} GB/s "
                     f"({eff.fraction:.0%}): " + (
                         "nccl-tests, NCCL_ALGO=Ring, 8xH100"
                         if lk.key == "nvlink4" else eff.source)),
        style.Metric("latency term", units.format_seconds(lat),
                     f"2(n-1) × α, α = {units.format_value(lk.latency_us)} µs per step "
                     "(stated)"),
        style.Metric("bandwidth term", units.format_seconds(bw),
                     f"{units.format_value(collectives.bus_factor('all-reduce', n))} × 1 GB / "
                     f"{units.format_value(p.node_gbs)} GB/s"),
        style.Metric("latency dominates below",
                     units.format_bytes(p.crossover_bytes("all-reduce")),
                     "where the two terms are equal"),
    ]


def measured_note(backend_message: str, run) -> str:
    """How a collectives run went: its backend's message, the seconds it took, the device and
    torch (``run``: a measured ``CollectiveRun``)."""
    return (f"{backend_message} Measured in {units.format_seconds(run.elapsed_s)} ({run.device}, "
            f"torch "
            f"{run.torch_version}).")


def last_measurement_note(run) -> str:
    """Under a refused or failed press: the last good run stays below, and which it was."""
    return (f"*Below: your last measurement ({run.backend}, {run.world_size} workers, "
            f"{run.device}).*")


def fit_cards(fits) -> list[style.Metric]:
    """One card per measured collective: its fitted α and bus bandwidth β, the residual, the
    size below which latency dominates and α per ring step. ``fits``: the comm benchmark's
    α-β fits (each with op, alpha_s, busbw_gbs, residual, crossover_bytes, alpha_step_s)."""
    return [style.Metric(
        f"{f.op}: α and β",
        f"{units.format_seconds(f.alpha_s)} · {units.format_value(f.busbw_gbs)} GB/s",
        f"residual {f.residual:.0%}; latency dominates below "
        f"{units.format_bytes(f.crossover_bytes)}; α per ring step "
        f"{units.format_seconds(f.alpha_step_s)}", "ok" if f.residual < 0.25 else "warn")
        for f in fits]


def _nvlink_ring_busbw() -> str:
    """The NVLink 4 ring measurement the achievable fraction comes from: "about 370 of 450
    GB/s"."""
    nvlink = collectives.get_link("nvlink4")
    reached = collectives.collective_path(nvlink, nvlink.domain, achievable=True).node_gbs
    return f"about {units.format_value(reached)} of {units.format_value(nvlink.one_way_gbs)} GB/s"


def bus_bandwidth_text() -> str:
    """The α-β math peek's paragraph on nccl-tests' bus bandwidth: what it is, what a ring
    reaches on 8 H100s and what NVLink SHARP reports (markdown)."""
    return (
        "**Bus bandwidth** (nccl-tests): the algorithm bandwidth $S/t$ times $2(n-1)/n$ "
        "(all-reduce) or $(n-1)/n$ (all-gather, reduce-scatter). A perfect ring's bus "
        "bandwidth equals $B$ whatever $n$, which is why nccl-tests reports it: compare it "
        "with the link's **one-way** figure, never with the \"both directions\" headline. "
        f"Measured with the ring algorithm, 8 H100s reach {_nvlink_ring_busbw()}: real "
        "links, like real matmuls, run below their datasheet. NCCL's default all-reduce on an "
        "NVSwitch H100 node, NVLink SHARP, is not a ring: the switch sums the data, each GPU "
        f"sends it about once, and nccl-tests reports about "
        f"{units.format_value(collectives.NVLS_H100.busbw_gbs)} GB/s \"bus bandwidth\", "
        "above the link's "
        "one-way figure.")


def allreduce_model_note(case: dict) -> str:
    """Under Prediction 1's comparison: the model's terms, what a ring in NCCL reaches, and
    why NCCL's default on an NVSwitch node (NVLink SHARP) is faster than any ring."""
    lk, n, nbytes = collectives.get_link(case["link"]), case["n"], case["nbytes"]
    real_ms = collectives.link_time(**case, achievable=True) * 1e3
    return (f"The model: {collectives.bus_factor_derivation('all-reduce', n)} × "
            f"{units.format_value(nbytes / 1e9)} GB / {units.format_value(lk.one_way_gbs)} GB/s "
            f"one way, plus "
            f"{collectives.latency_steps('all-reduce', n)} steps of α = "
            f"{units.format_value(lk.latency_us)} µs. In practice a ring in NCCL reaches about "
            f"{collectives.link_efficiency(lk).fraction:.0%} of that one-way rate "
            f"(nccl-tests with NCCL_ALGO=Ring on 8 H100s: {_nvlink_ring_busbw()} bus "
            f"bandwidth), so a ring all-reduce takes about {units.format_seconds(real_ms / 1e3)}. "
            f"On a real "
            f"NVSwitch node NCCL's **default** all-reduce is not a ring: NVLink SHARP sums "
            f"the data inside the switch, so each GPU sends its bytes about once instead of "
            f"2(n-1)/n times. nccl-tests then reports about "
            f"{units.format_value(collectives.NVLS_H100.busbw_gbs)} GB/s bus bandwidth (algbw "
            f"about "
            f"{units.format_value(collectives.NVLS_H100.algbw_gbs)} GB/s): about "
            f"{units.format_seconds(collectives.NVLS_H100.time(nbytes))}, faster "
            f"than the ring model even at the ideal one-way rate. Every other collective "
            f"runs at the ring's figure.")


# --- Part 2: tensor parallelism ---------------------------------------------------------------

def tp_shard_derivation(device, link, n: int, matmuls: int, precision: str) -> str:
    """Predictions 2 and 3's reference worked out: the block's link intensity (T and N
    cancel) set against the link ridge π / B gives the critical slice F/n."""
    k = sharding.tp_critical_shard(device, precision, link, n, matmuls=matmuls)
    lk = collectives.get_link(link)
    ridge = sharding.link_ridge(device, precision, lk, n)
    m, b = matmuls, bytes_per_element(precision, arg="precision")
    return (f"Per GPU the block does {m} × 2 T (F/n) N FLOPs ({m} matmuls) and "
            f"sends 2(n-1)/n × T N b bytes (one ring all-reduce of its partial "
            f"output), so its link intensity is {m} (F/n) / ((n-1)/n × b): T and N "
            f"cancel. It meets the link ridge π / B = {units.format_value(ridge)} FLOP/B "
            f"({precision}, dense, {hardware.get(device).name}; "
            f"{lk.short_name} {units.format_value(lk.one_way_gbs)} GB/s one way) at "
            f"F/n = {n - 1}/{n} × {units.format_value(b)} B × "
            f"{units.format_value(ridge, significant=4)} / {m} = {units.format_value(k)}. One "
            f"matmul per all-reduce would need {m}× that slice; a SwiGLU MLP "
            f"({sharding.SWIGLU_MLP} matmuls) needs {Fraction(m, sharding.SWIGLU_MLP)} of it; "
            "the headline (both directions) as B, half.")


def serving_derivation(case: dict) -> str:
    """Prediction 4's reference worked out: the matmuls' and collectives' times per degree,
    how the ring's latency steps cross between boxes, and the range of α over which the
    answer holds. ``case``: model, device, link, batch and seq_len, as ``SERVE_REF``."""
    kw = dict(batch=case["batch"], seq_len=case["seq_len"])
    rows = sharding.tp_scaling(case["model"], case["device"], case["link"], **kw)
    ref = sharding.first_comm_bound_degree(case["model"], case["device"], case["link"], **kw)
    steps = "; ".join(f"{r.n}-way: collectives {units.format_seconds(r.t_comm)} vs matmuls "
                      f"{units.format_seconds(r.t_matmuls)}" for r in rows if r.fits)
    lk = collectives.get_link(case["link"])
    nic = collectives.get_link(collectives.SCALE_OUT_LINK)
    fit = [r.n for r in rows if r.fits and r.n > 1]
    before = max((n for n in fit if n < ref), default=None) if ref else None
    top = max(fit) if fit else 2
    # the ring's steps that cross between boxes: 2(M-1) for M boxes (0 within one box)
    boxes = collectives.collective_path(lk, top).nodes
    between = collectives.latency_steps("all-reduce", boxes) if boxes > 1 else 0

    def alpha_us(n):
        a = sharding.alpha_where_collectives_equal_matmuls(case["model"], case["device"], lk,
                                                           n, **kw)
        return None if a is None else a * 1e6

    lo, hi = (alpha_us(ref), alpha_us(before)) if ref and before else (None, None)
    depends = (f" The answer rests on the stated α: it is {ref}-way for α between "
               f"{units.format_value(lo)} and {units.format_value(hi)} µs per PCIe step; above "
               f"about {units.format_value(hi)} µs it "
               f"would be {before}-way." if lo is not None and hi is not None else "")
    return (f"The matmuls read the weights (and KV cache) split n ways, so their time "
            f"falls as 1/n; each of the {rows[-1].collectives} collectives per step "
            f"pays latency steps that grow with n: 2(n-1) × {units.format_value(lk.latency_us)} "
            f"µs in "
            f"one box; across M boxes NCCL's Ring still takes 2(n-1) steps, the "
            f"2(M-1) that cross between boxes at {units.format_value(nic.latency_us)} µs "
            f"({collectives.latency_steps('all-reduce', top)} steps at {top}-way, "
            f"{between} of them "
            f"between boxes). Per step: {steps}.{depends}")


def tp_case_heading(device, link, n: int) -> str:
    """The heading of one of Predictions 2 and 3's comparisons: the chip, the link and n."""
    return (f"**{hardware.get(device).name} on {collectives.get_link(link).short_name}** "
            f"(n = {n}):")


def batch_range_text(tokens_range: tuple[float, float] | None) -> str:
    """The batches over which the link binds, from :func:`sharding.comm_bound_tokens`:
    "no batch", "every batch", "batches from 512 tokens up", ..."""
    if tokens_range is None:
        return "no batch"
    lo, hi = tokens_range
    if lo <= 1 and hi == float("inf"):
        return "every batch"
    if hi == float("inf"):
        return f"batches from {units.format_value(lo)} tokens up"
    if lo <= 1:
        return f"batches up to {units.format_value(hi)} tokens"
    return f"batches of {units.format_value(lo)} to {units.format_value(hi)} tokens"


def tp_block_cards(mm: sharding.ShardedMatmul, times: sharding.ShardTimes, device, link,
                   precision: str) -> list[style.Metric]:
    """The three-roof instrument's cards: each roof's time (the binding one marked), the link
    and HBM intensities, the link ridge and the critical slice with the batches where the
    link binds."""
    crit = sharding.tp_critical_shard(device, precision, link, mm.n, matmuls=mm.matmuls)
    where = batch_range_text(sharding.comm_bound_tokens(
        mm.k, mm.n_out, mm.n, device, link, precision, matmuls=mm.matmuls))
    ridge = sharding.link_ridge(device, precision, link, mm.n)
    return [
        style.Metric("compute", units.format_seconds(times.t_compute),
                     f"{units.format_flops(mm.flops)} per GPU / π",
                     "compute" if times.binding == "compute" else None),
        style.Metric("HBM", units.format_seconds(times.t_hbm),
                     f"{units.format_bytes(mm.hbm_bytes)} per GPU / HBM bandwidth",
                     "memory" if times.binding == "HBM" else None),
        style.Metric("link (all-reduce)", units.format_seconds(times.t_link),
                     f"{units.format_bytes(mm.link_bytes)} sent per GPU, plus "
                     "latency", "communication-bound" if times.binding == "link" else None),
        style.Metric("link intensity", f"{units.format_value(mm.ai_link)} FLOP/B",
                     f"HBM intensity {units.format_value(mm.ai_hbm)} FLOP/B"),
        style.Metric(f"Link ridge ({precision}, dense)", f"{units.format_value(ridge)} FLOP/B",
                     "π / B: FLOPs per byte sent"),
        style.Metric("critical F/n on this link", units.format_value(crit),
                     f"n = {mm.n}; the link binds for {where}"),
    ]


def serving_links(device, link) -> list[str]:
    """The links the serving instrument draws: the chosen one first, then for comparison the
    chip's own link and a network link (one GPU per machine), where they differ from it."""
    own = collectives.device_link(device)
    keys = [link] + [k for k in ((own.key if own else None), "ib-ndr") if k and k != link]
    return list(dict.fromkeys(keys))


def serving_warning(diagnosis: sharding.Diagnosis):
    """The callout under the memory bar for a failing serving design (out of memory, or more
    GPUs giving fewer tokens/s); None for a design that works."""
    if diagnosis.kind == "oom":
        return style.error_callout(diagnosis.message)
    if diagnosis.kind == "comm":
        return mo.callout(mo.md(f"**✗ More GPUs, fewer tokens/s.** {diagnosis.message}"),
                          kind="warn")
    return None


def serving_cards(step: sharding.TPServing) -> list[style.Metric]:
    """The serving instrument's cards for one degree: tokens/s, the matmuls' and the
    collectives' times per decode step, and which bounds it."""
    s = step
    return [
        style.Metric("Decode, tokens/s", units.format_value(s.tokens_per_s) + ("" if s.fits else
                                                                    " (does not fit)"),
                     f"batch {s.batch} / {units.format_seconds(s.t_step)} per decode step; "
                     f"{units.format_value(s.user_tokens_per_s)} per user",
                     "danger" if not s.fits else s.bound),
        style.Metric("matmuls (compute | HBM)", units.format_seconds(s.t_matmuls),
                     f"compute {units.format_seconds(s.t_compute)}, HBM "
                     f"{units.format_seconds(s.t_hbm)} "
                     f"({units.format_bytes(s.bytes)} per GPU per decode step)"),
        style.Metric("collectives", units.format_seconds(s.t_comm),
                     f"{s.collectives} per decode step over {s.link.name}; "
                     f"{units.format_bytes(s.comm_bytes)} sent per GPU",
                     "communication-bound" if s.bound == "communication-bound" else None),
        style.Metric("decode step is", s.bound, "collectives after matmuls: max(compute, "
                     "HBM) + communication"),
    ]


def serving_comparison_label(option: str, case: dict, degree: int) -> str:
    """Prediction 4's comparison label: the answer's option and, where a degree answers, its
    collectives against its matmuls per decode step on the question's chip and link."""
    if not degree:
        return option
    rows = {s.n: s for s in sharding.tp_scaling(case["model"], case["device"], case["link"],
                                                batch=case["batch"], seq_len=case["seq_len"])}
    s = rows[degree]
    return (option + f": collectives {units.format_seconds(s.t_comm)} vs matmuls "
            f"{units.format_seconds(s.t_matmuls)} "
            "per decode step (the time figure above, on the opening chip and link)")


# --- Part 3: data-parallel training -----------------------------------------------------------

def _training_path(case: dict, achievable: bool = False) -> collectives.Path:
    return collectives.collective_path(case["link"], case["n"], nic=case["nic"],
                                       nics_per_node=case["nics_per_node"],
                                       achievable=achievable)


def training_derivation(case: dict, step: sharding.DPStep) -> str:
    """Prediction 5's reference worked out: NCCL's flat Ring across nodes, its bus bandwidth
    set by the slower of the node's link and its NICs together, its latency steps, and what a
    hierarchical all-reduce and an achievable NIC would give. ``case``: as ``TRAIN_REF``;
    ``step``: its :func:`sharding.dp_step`, whose all-reduce (``t_comm``) is the time stated,
    the number the reference holds."""
    nbytes = sharding.gradient_bytes(case["model"], case["grad_bytes"])
    p = _training_path(case)
    hier = p.time("all-reduce", nbytes, "hierarchical")
    seq = p.time("all-reduce", nbytes, collectives.SEQUENTIAL)
    real = _training_path(case, achievable=True).time("all-reduce", nbytes)
    f = collectives.bus_factor("all-reduce", p.n)
    inter = collectives.latency_steps("all-reduce", p.nodes)
    steps = collectives.latency_steps("all-reduce", p.n)
    return (f"NCCL's Ring is flat: each of the {p.nics} rings runs through all "
            f"{p.n} GPUs, so every GPU's {p.link.short_name} and every NIC carries "
            f"2(n-1)/n = {units.format_value(f, significant=4)}× its ring's share. Inside a node "
            f"each GPU sends "
            f"{units.format_value(p.node_gbs)} GB/s one way; out of a node its {p.nics} NICs carry "
            f"{p.nics} × {units.format_value(p.nic.one_way_gbs)} = "
            f"{units.format_value(p.egress_gbs)} GB/s together "
            f"({p.nic.derivation.split(' (')[0]}). The slower, {units.format_value(p.bus_gbs())} "
            f"GB/s, "
            f"is the ring's bus bandwidth: {units.format_value(f, significant=4)} × "
            f"{units.format_value(nbytes / 1e9, significant=4)} GB / "
            f"{units.format_value(p.bus_gbs())} GB/s = "
            f"{units.format_value(p.bandwidth_time('all-reduce', nbytes) * 1e3, significant=4)}"
            f" ms, plus {steps} steps of latency, the {inter} between nodes at "
            f"{units.format_value(p.nic.latency_us)} µs and {steps - inter} at "
            f"{units.format_value(p.link.latency_us)} µs = "
            f"{units.format_seconds(p.latency('all-reduce'))}: "
            f"{units.format_seconds(step.t_comm)}. Not one ring through a single "
            f"{units.format_value(p.nic.one_way_gbs)} GB/s NIC, and not NVLink alone. A "
            f"hierarchical "
            f"all-reduce (its NICs carry only 2(M-1)/M of a 1/{p.g} share) would take "
            f"{units.format_seconds(hier)} with its two levels pipelined, "
            f"{units.format_seconds(seq)} run one level after the other; at what nccl-tests "
            "reaches per NIC "
            f"({collectives.link_efficiency(p.nic).fraction:.0%}) the Ring takes about "
            f"{units.format_seconds(real)}.")


def training_cards(step: sharding.DPStep, link, how: dict, critical: float) -> list[style.Metric]:
    """The training instrument's cards: compute, the gradient all-reduce and which level sets
    its bus bandwidth, the step, the wait, the critical batch and what overlap buys. ``how``:
    the all-reduce's nic, nics_per_node and algorithm (as :func:`sharding.dp_step` takes
    them) on ``link``."""
    s, a = step, how["algorithm"]
    p = collectives.collective_path(link, s.n, nic=how["nic"], nics_per_node=how["nics_per_node"])
    how = (f"{p.name}, {collectives.ALGORITHM_NAMES[a].split(' (')[0]}: bus "
           f"{units.format_value(p.bus_gbs('all-reduce', a))} GB/s, set by the "
           + ("node's link" if p.binding_level("all-reduce", a) == "link"
              else "NICs between nodes"))
    return [
        style.Metric("forward + backward", units.format_seconds(s.t_compute),
                     f"6 × {units.format_value(s.params / 1e9)} B params × "
                     f"{units.format_value(s.tokens_per_chip)} tokens / π; "
                     f"backward {units.format_seconds(s.t_bwd)}"),
        style.Metric("gradient all-reduce", units.format_seconds(s.t_comm),
                     f"{s.n} GPUs: {how}",
                     "communication-bound" if s.comm_bound else None),
        style.Metric("step", units.format_seconds(s.t_step),
                     ("overlapped: fwd + max(bwd, all-reduce)" if s.overlap
                      else "no overlap: the sum")
                     + f"; GPUs compute {s.compute_fraction:.0%} of the time",
                     "danger" if s.compute_fraction < 0.5 else "ok"),
        style.Metric("waiting for the all-reduce", units.format_seconds(s.t_exposed),
                     "per step: " + ("max(0, all-reduce − backward)" if s.overlap
                                     else "all of it (no overlap)"),
                     "communication-bound" if s.t_exposed > 0 else None),
        style.Metric("critical batch", f"{units.format_value(critical)} tokens",
                     "per GPU, where the backward pass = all-reduce (bandwidth term)"),
        style.Metric("overlap buys", f"{s.overlap_gain:.2f}×",
                     f"at most {sharding.MAX_OVERLAP_GAIN:.2f}× (when the all-reduce equals "
                     "the backward pass): the forward pass never hides it"),
    ]


def training_wait_note(step: sharding.DPStep, case: dict) -> str:
    """Under Prediction 5's comparison: what the backward pass can hide of the all-reduce
    (``step``, overlapped, on the question's case), and the hierarchical and achievable
    times beside it."""
    s = step
    nbytes = sharding.gradient_bytes(case["model"], case["grad_bytes"])
    path = dict(nic=case["nic"], nics_per_node=case["nics_per_node"])
    hier, seq = (collectives.link_time("all-reduce", nbytes, case["n"], case["link"], a, **path)
                 for a in ("hierarchical", collectives.SEQUENTIAL))
    real = collectives.link_time("all-reduce", nbytes, case["n"], case["link"],
                                 achievable=True, **path)
    return (f"**Can the GPUs hide it?** Only behind the backward pass: the gradients are "
            f"all-reduced in buckets as it produces them, and the forward pass needs the "
            f"updated weights. At {units.format_value(case['tokens_per_gpu'])} tokens per GPU the "
            f"backward pass takes 4 P T / π = {units.format_seconds(s.t_bwd)}, so with overlap "
            f"each "
            f"GPU still waits {units.format_value(s.t_comm * 1e3, significant=4)} − "
            f"{units.format_value(s.t_bwd * 1e3, significant=4)} = "
            f"**{units.format_value(s.t_exposed * 1e3, significant=4)} ms per step**; without "
            f"overlap, all "
            f"{units.format_seconds(s.t_comm)}. (Hiding it behind the whole step would leave "
            f"{units.format_value(s.t_exposed_behind_whole_step * 1e3)} ms.) A hierarchical "
            f"all-reduce would take "
            f"{units.format_seconds(hier)} with its two levels pipelined (tree-like algorithms "
            f"approach that at a few nodes), {units.format_seconds(seq)} run one level after the "
            f"other; at what nccl-tests reaches per NIC "
            f"({collectives.link_efficiency(case['nic']).fraction:.0%}) the Ring "
            f"takes about {units.format_seconds(real)}. "
            "The training instrument above opens on this case: turn overlap on.")
