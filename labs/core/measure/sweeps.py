"""Sweeps and what they yield: roofline predictions, rows, the empirical roofline, CSV, ledger.

``sweep_square_gemm`` (Lab 1) and ``sweep_gemv`` (Lab 3) time a list of shapes within a time
budget and return one row (a dict) per shape with the measured figure next to the roofline's
prediction (from the registry entry, a Device, or this machine's ``empirical_roofline``);
shapes that would not fit or finish in time are skipped with the reason. ``to_csv`` and
``ledger_payload`` turn rows into a download and a ledger record.
"""

from __future__ import annotations

import csv
import datetime
import io
import math
import re
import time
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

from labs.core.measure import cases
from labs.core.measure.bandwidth import Bandwidth, stream_bandwidth
from labs.core.measure.cases import (check_precision_supported, checked_precision, support_reason,
                                     estimate_bytes, gemm_cost, gemv_cost)
from labs.core.measure.choices import GEMM_PRECISIONS, SQUARE_SIZES
from labs.core.measure.device import DeviceInfo, fits
from labs.core.measure.errors import DoesNotFit, MeasureError, OutOfMemory
from labs.core.measure.timer import Measurement, resolve_device
from labs.core.physics import formulas as _formulas
from labs.core.physics import hardware
from labs.core.physics import units as _units
from labs.core.physics.validate import positive, positive_int

__all__ = [
    "EmpiricalRoofline", "Progress", "empirical_roofline", "ledger_payload", "predict_bound",
    "size_share", "sweep_gemv", "sweep_square_gemm", "to_csv"
]

Progress = Callable[[int, int, str], None]  # (done, total, label)


# --- predictions ----------------------------------------------------------------------------

def _reference_device(reference, info: DeviceInfo) -> tuple[hardware.Device | None, str]:
    """(Device with the roofs to predict from, a label saying where they come from)."""
    if reference is None:
        spec = info.spec()
        if spec is None:
            return None, "no spec (not in the registry): pass reference=empirical_roofline()"
        return spec, f"spec sheet: {spec.key}"
    if isinstance(reference, EmpiricalRoofline):
        return reference.as_device(), "measured roofline of this machine"
    if isinstance(reference, hardware.Device):
        return reference, f"{reference.key}"
    if isinstance(reference, str):
        d = hardware.get(reference)
        return d, f"spec sheet: {d.key}"
    raise ValueError("reference must be None, a registry key, a hardware.Device or an "
                     f"EmpiricalRoofline, got {type(reference).__name__}")


def predict_bound(cost: _formulas.Cost, ref: hardware.Device | None, precision: str) -> dict:
    """Predicted roofline bound for a cost on ``ref``: TFLOP/s, time and which roof."""
    if ref is None:
        return {"predicted_tflops": None, "predicted_ms": None, "bound": None}
    t_mem = cost.bytes / (ref.bandwidth_gbs * 1e9)
    t_comp = cost.flops / (ref.peak_tflops(precision) * 1e12) if ref.has(precision) else None
    if t_comp is None:
        t = t_mem
        bound = "memory (no compute peak for this precision)"
    else:
        t = max(t_mem, t_comp)
        bound = "compute" if t_comp >= t_mem else "memory"
    return {"predicted_tflops": cost.flops / t / 1e12, "predicted_ms": t * 1e3, "bound": bound}


# --- sweeps ---------------------------------------------------------------------------------

def _seconds(s: float) -> str:
    """A budget as a status line says it: 3 significant figures ("13.3 s", never the
    "13.3333 s" of a budget split in thirds)."""
    return f"{s:.3g} s"


def _call_progress(progress, done, total, label):
    if progress is not None:
        progress(done, total, label)


def sweep_square_gemm(sizes: Iterable[int] = SQUARE_SIZES, precision: str = "fp32", *,
                      device: str | DeviceInfo | None = None, budget_s: float = 30.0,
                      reference=None, flush_l2: bool = False, min_reps: int = 3,
                      progress: Progress | None = None) -> list[dict]:
    """Time N×N×N GEMMs for each N (ascending) within ``budget_s`` seconds in all.

    Each row: n, shape, precision, status ("ok" or why skipped), measured_tflops,
    predicted_tflops and bound (from ``reference``: None = the registry entry of this device,
    or a registry key, a hardware.Device, an EmpiricalRoofline), ratio = measured/predicted,
    ai (FLOP/B), median_ms, p10_ms, p90_ms, reps, threads, roof (where the prediction comes
    from), device. Sizes that would not fit in memory, or not finish in the budget left, are
    skipped with the reason; an out-of-memory is recovered and larger sizes skipped.
    ``progress(done, total, label)`` is called after each size.
    """
    return [row for row, _m in _sweep_square(sizes, precision, device=device, budget_s=budget_s,
                                             reference=reference, flush_l2=flush_l2,
                                             min_reps=min_reps, progress=progress)]


def size_share(n: int, still_to_time: Sequence[int]) -> float:
    """The share of the budget left that size ``n`` may spend, of the sizes ``still_to_time``
    (``n`` first): in proportion to N², so the larger sizes, where a GEMM reaches its peak,
    keep most of it (an equal split let 512³ spend a third of a CPU's budget and left too
    little to time 1024³: the "peak" was 512³'s 8 GFLOP/s against 50 at 1024³)."""
    return n * n / sum(m * m for m in still_to_time)


def _sweep_square(sizes, precision, *, device, budget_s, reference, flush_l2, min_reps,
                  progress) -> list[tuple[dict, Measurement | None]]:
    p = checked_precision(precision, GEMM_PRECISIONS)
    budget_s = positive("budget_s", budget_s)
    ns = sorted({positive_int("sizes", s) for s in sizes})
    if not ns:
        raise ValueError("sizes must name at least one N, e.g. [256, 512, 1024]")
    dev = resolve_device(device)
    check_precision_supported(dev, p, "gemm")
    ref, roof = _reference_device(reference, dev.info)
    fitting = {n for n in ns if fits(estimate_bytes("gemm", (n, n, n), p, flush_l2=flush_l2,
                                                    kind=dev.info.kind), dev.info)[0]}
    out, t0, rate, stop = [], time.perf_counter(), None, None
    for i, n in enumerate(ns):
        cost = gemm_cost(n, n, n, p)
        row = {"n": n, "shape": f"{n}×{n}×{n}", "precision": p, "status": "ok",
               "measured_tflops": None, **predict_bound(cost, ref, p), "ratio": None,
               "ai": cost.ai, "median_ms": None, "p10_ms": None, "p90_ms": None, "reps": None,
               "threads": None, "roof": roof, "device": dev.info.name}
        m = None
        left = budget_s - (time.perf_counter() - t0)
        # the timer's 3 warm-up calls and min_reps timed ones at the rate the last size reached
        # at its fastest (the rate rises with N, so this overestimates: safe)
        need = cost.flops / rate * (min_reps + 3) if rate else None
        ok, why = fits(estimate_bytes("gemm", (n, n, n), p, flush_l2=flush_l2,
                                      kind=dev.info.kind), dev.info)
        if stop:
            row["status"] = stop
        elif not ok:
            row["status"] = f"skipped: {why}"
        elif left <= 0:
            row["status"] = f"skipped: time budget spent ({_seconds(budget_s)})"
        elif need is not None and need > left:
            row["status"] = (f"skipped: needs ~{need:.1f} s, {left:.1f} s of the "
                             f"{_seconds(budget_s)} budget left")
        else:
            share = left * size_share(n, [later for later in ns[i:] if later in fitting])
            try:  # 200 repetitions pin a median; more would starve the larger sizes
                m = cases.time_gemm(n, n, n, p, device=dev.info, budget_s=0.8 * share,
                                    warmup_s=min(0.1, 0.2 * share), min_reps=min_reps,
                                    max_reps=200, flush_l2=flush_l2)
            except (OutOfMemory, DoesNotFit) as e:
                row["status"] = f"skipped: {e}"
                stop = "skipped: a smaller size already ran out of memory"
        if m is not None:
            rate = m.flops / m.min_s
            row.update(measured_tflops=m.achieved_tflops, median_ms=m.median_s * 1e3,
                       p10_ms=m.p10_s * 1e3, p90_ms=m.p90_s * 1e3, reps=m.reps,
                       threads=m.threads)
            if row["predicted_tflops"]:
                row["ratio"] = m.achieved_tflops / row["predicted_tflops"]
        out.append((row, m))
        _call_progress(progress, i + 1, len(ns), f"N = {n}: {row['status']}")
    return out


def sweep_gemv(shapes, precisions: Sequence[str] = ("fp16", "bf16", "fp8", "int8"), *,
               device: str | DeviceInfo | None = None, budget_s: float = 30.0, reference=None,
               cold_cache: bool = True, min_reps: int = 5,
               progress: Progress | None = None) -> list[dict]:
    """The decode GEMV table: time y = W x for each shape and precision within ``budget_s``.

    ``shapes``: {label: (n, k)} or a list of (n, k). Each row: name, n, k, precision, status,
    measured_us, predicted_us (roofline lower bound on ``reference``: GEMVs are memory-bound,
    so the bandwidth decides), error_pct = (measured - predicted) / predicted x 100,
    measured_gbs (compulsory bytes / time), bytes, p10_us, p90_us, reps, roof, device.
    Unsupported precisions give one row each with the reason instead of a number.
    ``cold_cache`` as in ``time_gemv``; ``progress(done, total, label)`` after each row.
    """
    items = list(shapes.items()) if isinstance(shapes, Mapping) else [
        (f"{n}×{k}", (n, k)) for n, k in shapes]
    if not items:
        raise ValueError("shapes must name at least one (n, k)")
    ps = [checked_precision(p, GEMM_PRECISIONS, "precisions") for p in precisions]
    budget_s = positive("budget_s", budget_s)
    dev = resolve_device(device)
    ref, roof = _reference_device(reference, dev.info)
    total = len(items) * len(ps)
    rows, t0, done = [], time.perf_counter(), 0
    for name, (n, k) in items:
        for p in ps:
            cost = gemv_cost(n, k, p)
            pred = predict_bound(cost, ref, p)
            row = {"name": name, "n": int(n), "k": int(k), "precision": p, "status": "ok",
                   "measured_us": None,
                   "predicted_us": pred["predicted_ms"] * 1e3 if pred["predicted_ms"] else None,
                   "error_pct": None, "measured_gbs": None, "bytes": cost.bytes,
                   "p10_us": None, "p90_us": None, "reps": None, "roof": roof,
                   "device": dev.info.name}
            left = budget_s - (time.perf_counter() - t0)
            why = support_reason(dev, p, "gemv")
            if why:
                row["status"] = f"unsupported: {why}"
            elif left <= 0:
                row["status"] = f"skipped: time budget spent ({_seconds(budget_s)})"
            else:
                try:
                    m = cases.time_gemv(n, k, p, device=dev.info,
                                        budget_s=0.8 * left / (total - done), warmup_s=0.05,
                                        min_reps=min_reps, max_reps=200, cold_cache=cold_cache)
                    row.update(measured_us=m.median_s * 1e6, measured_gbs=m.effective_gbs,
                               p10_us=m.p10_s * 1e6, p90_us=m.p90_s * 1e6, reps=m.reps)
                    if row["predicted_us"]:
                        row["error_pct"] = (row["measured_us"] - row["predicted_us"]) / (
                            row["predicted_us"]) * 100
                except MeasureError as e:
                    row["status"] = f"skipped: {e}"
            rows.append(row)
            done += 1
            _call_progress(progress, done, total, f"{name} {p}: {row['status']}")
    return rows


# --- the empirical roofline -----------------------------------------------------------------

@dataclass(frozen=True)
class EmpiricalRoofline:
    """This machine's measured roofs: memory bandwidth and the achievable peak per precision.

    ``peaks`` (TFLOP/s, TOPS for int8) is the best median over the square GEMM sizes tried;
    ``unsupported`` says why a precision has no peak. ``as_device()`` makes a hardware.Device
    so the figures can draw it next to the spec roofline.
    """

    info: DeviceInfo
    bandwidth: Bandwidth
    peaks: Mapping[str, float]
    peak_measurements: Mapping[str, Measurement]
    unsupported: Mapping[str, str]
    date: str

    @property
    def bandwidth_gbs(self) -> float:
        return self.bandwidth.gbs

    def vector_ceiling(self) -> tuple[float, str]:
        """(TFLOP/s, where it comes from) of this machine's vector (non-tensor) ceiling, the
        rate scalar kernels and elementwise ops run at: the measured fp32 GEMM (torch runs fp32
        matmuls on the CUDA cores, TF32 off by default), else the registry's vector rate for
        this GPU, else (a CPU: no tensor units) the best measured floating-point peak. Never a
        GPU's tensor-core peak. ValueError for a GPU with neither."""
        if "fp32" in self.peaks:
            return self.peaks["fp32"], "measured fp32 GEMM"
        spec = self.info.spec()
        if spec is not None and spec.vector_tflops is not None:
            return spec.vector_tflops, f"registry: {spec.source('vector_tflops')}"
        floats = [v for p, v in self.peaks.items() if not p.startswith("int")]
        if self.info.kind != "cuda" and floats:
            return max(floats), "best measured peak (a CPU has no tensor units)"
        raise ValueError(
            f"no vector (CUDA-core) rate for {self.info.name}: the measured peaks "
            f"({', '.join(self.peaks) or 'none'}) are tensor-core rates and the registry does "
            "not know this GPU. Measure fp32 too: empirical_roofline(precisions=[..., 'fp32'])")

    def as_device(self, key: str | None = None) -> hardware.Device:
        """This machine as a hardware.Device (``hardware.custom``): the measured bandwidth and
        peaks, and the vector ceiling of :meth:`vector_ceiling`."""
        if not self.peaks:
            raise ValueError("no precision could be measured, so there is no compute roof")
        vector, vector_source = self.vector_ceiling()
        slug = re.sub(r"[^a-z0-9]+", "-", self.info.name.lower()).strip("-")
        return hardware.custom(f"{self.info.name} (measured {self.date})",
                          bandwidth_gbs=self.bandwidth_gbs, peaks=dict(self.peaks),
                          memory_gb=self.info.memory_gb or 1.0, key=key or f"measured-{slug}",
                          memory_type="measured", vector_tflops=vector,
                          source=f"measured on this machine on {self.date} with "
                                 "labs.core.measure (STREAM copy/triad; square GEMMs, median); "
                                 f"vector ceiling: {vector_source}")

    def rows(self) -> list[dict]:
        """One row per precision: measured peak, spec peak (registry), measured/spec."""
        spec = self.info.spec()
        out = [{"what": "memory bandwidth (GB/s)", "measured": self.bandwidth_gbs,
                "spec": spec.bandwidth_gbs if spec else None,
                "ratio": self.bandwidth_gbs / spec.bandwidth_gbs if spec else None,
                "detail": f"copy {self.bandwidth.copy.effective_gbs:.1f}, triad "
                          f"{self.bandwidth.triad.effective_gbs:.1f} GB/s"}]
        for p in GEMM_PRECISIONS:
            s = spec.peaks.get(p) if spec else None
            if p in self.peaks:
                m = self.peak_measurements[p]
                out.append({"what": f"{p} peak ({_units.rate_unit(p)})",
                            "measured": self.peaks[p], "spec": s,
                            "ratio": self.peaks[p] / s if s else None,
                            "detail": f"best at {m.shape_label}, {m.reps} reps"})
            elif p in self.unsupported:
                out.append({"what": f"{p} peak", "measured": None, "spec": s, "ratio": None,
                            "detail": self.unsupported[p]})
        return out


def _peak_sizes(info: DeviceInfo) -> tuple[int, ...]:
    return (4096, 8192) if info.kind == "cuda" else (512, 1024, 2048)


def empirical_roofline(device: str | DeviceInfo | None = None, *,
                       precisions: Sequence[str] | None = None,
                       sizes: Sequence[int] | None = None, budget_s: float = 30.0,
                       stream_mb: float | None = None,
                       progress: Progress | None = None) -> EmpiricalRoofline:
    """Measure bandwidth (STREAM) and the achievable GEMM peak per precision.

    ``precisions`` defaults to every GEMM precision; the ones this device/torch cannot run go
    to ``unsupported`` with the reason. On a GPU the registry does not know, fp32 is measured
    too: it is the vector (CUDA-core) ceiling ``as_device`` needs. ``sizes`` (square N) default to (4096, 8192) on a GPU
    and (512, 1024, 2048) on a CPU; the peak is the best of them. A quarter of ``budget_s``
    goes to bandwidth, the rest is shared by the precisions.
    """
    budget_s = positive("budget_s", budget_s)
    dev = resolve_device(device)
    ps = [checked_precision(p, GEMM_PRECISIONS, "precisions") for p in (precisions or GEMM_PRECISIONS)]
    if dev.info.kind == "cuda" and dev.info.spec() is None and "fp32" not in ps:
        ps.append("fp32")  # the vector (CUDA-core) ceiling of an unknown GPU (as_device)
    ns = tuple(sizes) if sizes else _peak_sizes(dev.info)
    total = len(ps) + 1
    bw = stream_bandwidth(dev.info, size_mb=stream_mb, budget_s=budget_s / 4)
    _call_progress(progress, 1, total, f"bandwidth: {bw.gbs:.1f} GB/s")
    peaks, best, unsupported = {}, {}, {}
    runnable = []
    for p in ps:
        why = support_reason(dev, p)
        if why:
            unsupported[p] = why
        else:
            runnable.append(p)
    t0, done = time.perf_counter(), 1
    for p in ps:
        if p in runnable:
            left = 0.75 * budget_s - (time.perf_counter() - t0)
            share = left / (len(runnable) - runnable.index(p))
            pairs = []
            if share <= 0:
                unsupported[p] = "skipped: time budget spent"
            else:
                try:
                    pairs = _sweep_square(ns, p, device=dev.info, budget_s=share,
                                          reference=None, flush_l2=False, min_reps=3,
                                          progress=None)
                except MeasureError as e:
                    unsupported[p] = str(e)
            timed = [m for _row, m in pairs if m is not None]
            if timed:
                best[p] = max(timed, key=lambda m: m.achieved_tflops)
                peaks[p] = best[p].achieved_tflops
            elif p not in unsupported:
                unsupported[p] = "; ".join(r["status"] for r, _m in pairs) or "not measured"
        done += 1
        _call_progress(progress, done, total,
                       f"{p}: {peaks[p]:.3g} TFLOP/s" if p in peaks else f"{p}: {unsupported[p]}")
    return EmpiricalRoofline(dev.info, bw, peaks, best, unsupported,
                             datetime.date.today().isoformat())


# --- tables, CSV, ledger --------------------------------------------------------------------

def to_csv(rows: Sequence[Mapping]) -> str:
    """Rows (dicts) as CSV text; columns in order of first appearance, floats to 6 digits."""
    cols: list[str] = []
    for r in rows:
        cols += [c for c in r if c not in cols]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({c: (f"{v:.6g}" if isinstance(v, float) else v) for c, v in r.items()})
    return buf.getvalue()


def ledger_payload(info: DeviceInfo, rows: Sequence[Mapping], **extra) -> dict:
    """A compact, JSON-safe dict for ``lab.record("result", item_id, ...)``: the device and
    the measured figures (rounded), plus anything in ``extra``."""
    def clean(v):
        if isinstance(v, float):
            return None if not math.isfinite(v) else float(f"{v:.5g}")
        return v

    return {"device": info.name, "kind": info.kind, "registry_key": info.registry_key,
            "threads": info.threads, "torch": info.torch_version,
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "rows": [{k: clean(v) for k, v in r.items()} for r in rows], **extra}


