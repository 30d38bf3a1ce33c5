"""The result of profiling a model: one row per aten operator call, the overhead row, and the
aggregations a student reads (time by regime, by operator type, lost time). No torch, no marimo.

Row fields (times in seconds, bytes in bytes, FLOPs in FLOPs):
``index, phase, name, op_type, module, shapes, dtype, precision, ceiling, flops, flops_source,
bytes, ai, measured_s, bound_s, t_compute_s, t_memory_s, regime, ratio, error_pct, lost_s,
note, counter_flops`` (``counter_flops``: what FlopCounterMode counts, set only where the row's
FLOPs differ from it: a causal fused attention kernel on CUDA). ``ceiling`` is the compute roof the op runs under: its precision's peak, or "vector"
(elementwise ops, norms, reductions: the non-tensor rate, ``roofline.peak_tflops(hw,
roofline.VECTOR)``). ``bound_s`` = max(FLOPs / ceiling, bytes / bandwidth) on the profile's
roofline; ``ratio`` =
measured / bound; ``error_pct`` = (measured - bound) / bound x 100, the roofline's error as a
prediction; ``lost_s`` = measured - bound. The overhead row (``op_type`` "overhead (outside
operators)") holds the forward's wall time minus the sum of the operators' times, never
negative: ``measured_s`` is the profiler's median with its own cost per call taken out and,
where those still add up to more than the pass, scaled to fit it (``Profile.op_scale``,
``Profile.op_time_caveat``), so no share is above 100%.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from labs.core.measure.profile import opcost
from labs.core.physics import roofline as _roofline
from labs.core.physics import units as _units

__all__ = ["COLUMNS", "Profile", "REGIMES", "UNKNOWN_REGIME", "fit_to_pass", "markdown_summary"]

UNKNOWN_REGIME = "FLOPs unknown"
REGIMES = (_roofline.MEMORY, _roofline.COMPUTE, _roofline.OVERHEAD, UNKNOWN_REGIME)
COLUMNS = ("index", "phase", "name", "op_type", "module", "shapes", "dtype", "precision",
           "ceiling", "flops", "flops_source", "bytes", "ai", "measured_s", "bound_s", "t_compute_s",
           "t_memory_s", "regime", "ratio", "error_pct", "lost_s", "note", "counter_flops")


@dataclass(frozen=True)
class Profile:
    """Every operator of one forward (and backward) pass of a model, on one roofline."""

    label: str
    rows: tuple[Mapping, ...]
    overhead: Mapping | None  # the gap row; None when nothing was measured
    forward_s: float | None  # median wall time of the whole pass, measured without the profiler
    forward_p10_s: float | None
    forward_p90_s: float | None
    reps: int  # profiled passes (per-operator times are medians over them)
    device: str
    kind: str  # "cpu" or "cuda"
    threads: int | None  # torch threads of a CPU run
    timer: str
    roofline: str  # the roofline's name
    roofline_source: str  # "measured on this machine ..." or "spec sheet: <key> ..."
    predicted_only: bool  # a what-if roofline: bounds only, nothing measured against it
    bandwidth_gbs: float
    peaks: Mapping[str, float]
    precision: str
    backward: bool = False
    elapsed_s: float = 0.0  # wall time the profile itself took (roofline measurement included)
    notes: tuple[str, ...] = field(default_factory=tuple)
    roof: object = None  # the hardware.Device the bounds were computed on (for figures)
    load: tuple[float, ...] | None = None  # 1-min load average before and after (os.getloadavg)
    cores: int | None = None  # logical CPUs this process may use
    #: Seconds the profiler adds to each timed call (calibrated; subtracted from every row).
    call_cost_s: float = 0.0
    #: Factor the per-operator times were scaled by so they fit the pass (1.0: not scaled).
    op_scale: float = 1.0
    #: Sum of the operators' medians before that scaling (after the call cost), or None.
    profiled_sum_s: float | None = None

    @property
    def op_time_caveat(self) -> str | None:
        """None when the per-operator times can be read one by one; else what their scaling
        to fit the pass means: where the profiler's cost per call x calls covers the excess,
        that cost is most of what the operators take and their times cannot be trusted one by
        one; where it does not, the excess is run-to-run noise and only the overhead is lost."""
        if self.predicted_only or self.op_scale >= 1.0 or self.forward_s is None:
            return None
        excess = (self.profiled_sum_s or 0.0) - self.forward_s
        profiler_cost = len(self.rows) * self.call_cost_s
        if profiler_cost < excess:  # the profiler's cost cannot explain the gap: noise can
            return (f"The operators' times measured under the profiler add up to "
                    f"{_units.format_seconds(self.profiled_sum_s or 0.0)}, a little more than "
                    f"the whole pass ({_units.format_seconds(self.forward_s)}) timed without "
                    f"it, by more than the profiler's own cost explains ({len(self.rows)} calls "
                    f"x {_units.format_seconds(self.call_cost_s)} = "
                    f"{_units.format_seconds(profiler_cost)}): run-to-run noise (other work on "
                    "this machine) is larger than the time outside the operators here. They "
                    f"were scaled by {self.op_scale:.3f} to fit the pass, so the shares add up "
                    "to 100%; the operators' times hold as measured to within that noise, but "
                    "the overhead outside them cannot be told apart (shown as 0). Profile again "
                    "on a quieter machine, or with a larger timing budget, to see it.")
        return (f"The operators' times measured under the profiler add up to "
                f"{_units.format_seconds(self.profiled_sum_s or 0.0)}, more than the whole "
                f"pass ({_units.format_seconds(self.forward_s)}) timed without it, even with "
                f"the profiler's own cost per call taken out: its cost is most of what these "
                f"operators take. They were scaled by {self.op_scale:.2f} to fit the pass, so "
                "the shares add up to 100%, but the per-operator times cannot be trusted one by "
                "one here, and the overhead outside the operators cannot be told apart (shown "
                "as 0). "
                "Profile a larger model or batch for per-operator times.")

    @property
    def busy(self) -> bool:
        """Other work competed for the CPUs while this ran (load average above half the
        cores): whole-pass times then include time the OS gave to other processes, which the
        per-operator medians mostly skip, so the overhead row reads high."""
        return bool(self.load and self.cores and max(self.load) > 0.5 * self.cores)

    @property
    def main_precision(self) -> str:
        """The precision that carries the most FLOPs (the roof to draw)."""
        weight: dict[str, float] = {}
        for r in self.rows:
            if r["precision"] and r["flops"]:
                weight[r["precision"]] = weight.get(r["precision"], 0.0) + r["flops"]
        return max(weight, key=weight.get) if weight else "fp32"

    # --- totals ------------------------------------------------------------------------------
    @property
    def time_key(self) -> str:
        """"measured_s", or "bound_s" for a predicted-only profile."""
        return "bound_s" if self.predicted_only else "measured_s"

    def all_rows(self) -> list[Mapping]:
        """Operator rows, then the overhead row (when measured)."""
        return list(self.rows) + ([self.overhead] if self.overhead else [])

    @property
    def op_sum_s(self) -> float:
        """Sum of the operators' times (measured, or bounds when predicted only)."""
        return sum(r[self.time_key] or 0.0 for r in self.rows)

    @property
    def kernel_calls(self) -> int:
        """Operator calls that are not views: what a GPU launches a kernel for (a view only
        relabels a tensor's shape and strides). For the built-in decoder it equals
        ``physics.tiny_models.step_kernels``, the launch model's count."""
        return sum(1 for r in self.rows if r["op_type"] != opcost.VIEWS)

    @property
    def total_s(self) -> float:
        """What the shares divide by: the measured pass, or the sum of bounds."""
        return self.forward_s if self.forward_s and not self.predicted_only else self.op_sum_s

    @property
    def overhead_s(self) -> float | None:
        return self.overhead["measured_s"] if self.overhead else None

    @property
    def counted_flops(self) -> float:
        """FLOPs of the rows counted by torch.utils.flop_counter: FlopCounterMode's total (a
        causal fused attention row adds the counter's number, ``counter_flops``, not the
        computed share it shows)."""
        return sum(r["flops"] if r["flops_source"] == opcost.FLOP_COUNTER
                   else (r.get("counter_flops") or 0.0) for r in self.rows)

    @property
    def flops(self) -> float:
        """Every known FLOP, estimates included (rows with unknown FLOPs add nothing)."""
        return sum(r["flops"] or 0.0 for r in self.rows)

    @property
    def bytes(self) -> float:
        return sum(r["bytes"] for r in self.rows)

    @property
    def bound_s(self) -> float:
        return sum(r["bound_s"] or 0.0 for r in self.rows)

    def unknown_rows(self) -> list[Mapping]:
        return [r for r in self.rows if r["flops"] is None]

    # --- aggregations ------------------------------------------------------------------------
    def _grouped(self, key: str, order: Sequence[str]) -> list[dict]:
        total = self.total_s or 1.0
        groups: dict[str, dict] = {}
        for r in self.all_rows():
            g = groups.setdefault(r[key], {key: r[key], "calls": 0, "time_s": 0.0,
                                           "bound_s": 0.0, "flops": 0.0, "bytes": 0.0})
            g["calls"] += 0 if r is self.overhead else 1
            g["time_s"] += r[self.time_key] or 0.0
            g["bound_s"] += r["bound_s"] or 0.0
            g["flops"] += r["flops"] or 0.0
            g["bytes"] += r["bytes"] or 0.0
        for g in groups.values():
            g["share"] = g["time_s"] / total
        rank = {name: i for i, name in enumerate(order)}
        return sorted(groups.values(), key=lambda g: (-g["time_s"], rank.get(g[key], 99)))

    def by_regime(self) -> list[dict]:
        """[{regime, calls, time_s, bound_s, flops, bytes, share}] by time, largest first.
        The overhead row and views count as overhead-bound."""
        return self._grouped("regime", REGIMES)

    def by_op_type(self) -> list[dict]:
        """[{op_type, calls, time_s, bound_s, flops, bytes, share}] by time, largest first."""
        return self._grouped("op_type", opcost.OP_TYPES)

    def share(self, regime: str = _roofline.MEMORY) -> float:
        """Fraction (0-1) of the pass's time spent in operators of one regime."""
        return next((g["share"] for g in self.by_regime() if g["regime"] == regime), 0.0)

    def error_by_type(self) -> list[dict]:
        """How well the roofline predicted each operator type: [{op_type, calls,
        median_ratio (measured / bound), median_log_error (|log10 ratio|: 0 = exact, 1 = a
        factor of 10 either way), median_factor_off (10 ** median_log_error: 1 = exact, 3 =
        three times off either way)}], best predicted first, by ``median_log_error``: a figure
        of this ranking plots ``median_factor_off`` (the median ratio can sit at 1 while the
        type is off both ways). Rows with no bound (views, the overhead row) are left out;
        nothing for a predicted-only profile."""
        import math
        import statistics

        groups: dict[str, list[float]] = {}
        for r in self.rows:
            if r["ratio"] and r["ratio"] > 0:
                groups.setdefault(r["op_type"], []).append(r["ratio"])
        out = []
        for t, v in groups.items():
            log_error = statistics.median(abs(math.log10(x)) for x in v)
            out.append({"op_type": t, "calls": len(v), "median_ratio": statistics.median(v),
                        "median_log_error": log_error, "median_factor_off": 10 ** log_error})
        return sorted(out, key=lambda g: g["median_log_error"])

    def roof_too_low(self, tolerance: float = 1.3) -> str | None:
        """Why this profile's bounds cannot be trusted, or None: some operator ran more than
        ``tolerance`` times faster than its compute roof allows (its FLOPs over its measured time
        beat the roofline's peak for its ceiling), so the peak the roofline holds is too low; a
        measured roofline's short runs are slowed on a busy machine. Nothing for a
        predicted-only profile."""
        if self.predicted_only:
            return None
        worst, name = 1.0, ""
        for r in self.rows:
            peak = self.peaks.get(r.get("ceiling") or "", 0.0)
            if r.get("flops") and r.get("measured_s") and peak:
                above = r["flops"] / r["measured_s"] / 1e12 / peak
                if above > worst:
                    worst, name = above, r["name"]
        if worst <= tolerance:
            return None
        return (f"{name} ran {worst:.1f}× faster than the roofline's compute peak allows: the "
                "peak measured for this machine this session is too low (a busy machine slows "
                "the short run that measures it), so these bounds cannot rank the operators.")

    def dominant_type(self) -> str:
        """The operator type (or the overhead) that takes the most time."""
        return self.by_op_type()[0]["op_type"]

    def lost_time(self, limit: int | None = None) -> list[Mapping]:
        """Rows by measured - bound, largest first: what to optimise first (overhead row
        included; nothing for a predicted-only profile)."""
        if self.predicted_only:
            return []
        rows = sorted((r for r in self.all_rows() if r["lost_s"] is not None),
                      key=lambda r: -r["lost_s"])
        return rows[:limit] if limit else rows

    # --- tables ------------------------------------------------------------------------------
    def summary(self) -> dict:
        """One line for tables, the README and the ledger."""
        top = self.lost_time(1)
        return {
            "case": self.label, "device": self.device, "threads": self.threads,
            "roofline": self.roofline, "predicted_only": self.predicted_only,
            "operators": len(self.rows), "forward_s": self.forward_s,
            "op_sum_s": self.op_sum_s, "overhead_s": self.overhead_s,
            "bound_s": self.bound_s, "counted_flops": self.counted_flops,
            "bytes": self.bytes, "memory_bound_share": self.share(_roofline.MEMORY),
            "compute_bound_share": self.share(_roofline.COMPUTE),
            "overhead_share": self.share(_roofline.OVERHEAD),
            "dominant_type": self.dominant_type(), "flops_unknown": len(self.unknown_rows()),
            "top_lost": (top[0]["name"] + (f" ({top[0]['module']})" if top[0]["module"] else "")
                         if top else None),
            "reps": self.reps, "elapsed_s": self.elapsed_s,
            "load": list(self.load) if self.load else None, "cores": self.cores,
            "call_cost_s": self.call_cost_s, "op_scale": self.op_scale,
        }


def _ms(s) -> str:
    return "—" if s is None else _units.format_seconds(s)


def markdown_summary(profiles: Sequence[Profile]) -> str:
    """The README table: one line per profile (times as measured, shares of the pass)."""
    head = ("| case | operators | forward (measured) | sum of operators | overhead | "
            "roofline bound | memory-bound | compute-bound | overhead-bound | "
            "largest type | most lost time |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for p in profiles:
        s = p.summary()
        lines.append(
            f"| {s['case']} | {s['operators']} | {_ms(s['forward_s'])} | {_ms(s['op_sum_s'])} | "
            f"{_ms(s['overhead_s'])} | {_ms(s['bound_s'])} | "
            f"{s['memory_bound_share']:.0%} | {s['compute_bound_share']:.0%} | "
            f"{s['overhead_share']:.0%} | {s['dominant_type']} | {s['top_lost'] or '—'} |")
    return "\n".join(lines)


def fit_to_pass(times: list, forward_s: float | None, cost_s: float = 0.0):
    """The per-operator times of one profile, made honest: each call's ``cost_s`` (the
    profiler's own, :func:`call_cost`) taken out (never below 0), then, if they still add up
    to more than the pass they came from (``forward_s``, timed without the profiler), scaled
    down to fit it. Returns (times, scale): scale 1.0 when nothing had to be scaled. None
    entries (no measurement) stay None."""
    out = [None if t is None else max(t - cost_s, 0.0) for t in times]
    total = sum(t for t in out if t is not None)
    if forward_s is None or total <= forward_s or total <= 0:
        return out, 1.0
    scale = forward_s / total
    return [None if t is None else t * scale for t in out], scale
