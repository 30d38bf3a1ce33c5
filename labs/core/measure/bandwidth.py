"""Memory bandwidth: STREAM's copy and triad on the device, the memory roof of the roofline.

Bytes follow the STREAM convention (what the kernel reads and writes: copy 2N, triad 3N
elements), so the figure is what a kernel can *use*; the arrays are sized well past the
caches. Timed by :func:`labs.core.measure.timer.time_callable`'s machinery like everything
else here.
"""

from __future__ import annotations

from dataclasses import dataclass

from labs.core.measure.cases import (DTYPES, ELEMENT_BYTES, Case, measure_case, checked_precision,
                                     estimate_bytes)
from labs.core.measure.device import DeviceInfo, llc_bytes, check_fits
from labs.core.measure.timer import Measurement, resolve_device
from labs.core.physics.validate import positive

__all__ = ["Bandwidth", "stream_bandwidth"]


@dataclass(frozen=True)
class Bandwidth:
    """STREAM-like copy (b = a: 2 arrays moved) and triad (a = b + s*c: 3 arrays moved)."""

    copy: Measurement
    triad: Measurement

    @property
    def gbs(self) -> float:
        """The better of copy and triad, GB/s: the achievable memory roof."""
        return max(self.copy.effective_gbs, self.triad.effective_gbs)


def _default_stream_bytes(info: DeviceInfo) -> int:
    """Bytes per array: well past the caches (GPU: 8x L2, >= 256 MiB; CPU: 2x LLC capped at
    256 MiB, since RAM on a laptop or shared machine is precious and three arrays of it, 768 MiB,
    are far past any laptop's last-level cache)."""
    if info.kind == "cuda":
        return int(max(8 * (info.cache_mb or 64) * 2**20, 256 * 2**20))
    llc = llc_bytes() or 32 * 2**20
    return int(min(max(2 * llc, 64 * 2**20), 256 * 2**20))


def stream_bandwidth(device: str | DeviceInfo | None = None, *, size_mb: float | None = None,
                     precision: str = "fp32", budget_s: float = 1.0, warmup_s: float = 0.1,
                     reps: int | None = None, threads: int | None = None) -> Bandwidth:
    """Measure memory bandwidth with STREAM's copy and triad on the device.

    Bytes follow the STREAM convention (what the kernel reads and writes: copy 2N, triad 3N
    elements); caches that read a line before writing it move more, so this is what a kernel
    can *use*. ``size_mb`` is per array (three are allocated).
    """
    p = checked_precision(precision, ("fp32", "fp16", "bf16"))
    dev = resolve_device(device)
    torch = dev.torch
    el = ELEMENT_BYTES[p]
    per_array = (positive("size_mb", size_mb) * 2**20 if size_mb is not None
                 else _default_stream_bytes(dev.info))
    elements = max(int(per_array // el), 1024)
    check_fits(estimate_bytes("stream", (elements,), p, kind=dev.info.kind), dev.info)
    dt = getattr(torch, DTYPES[p])
    out = {}
    for op, arrays, flops in (("copy", 2, 0.0), ("triad", 3, 2.0 * elements)):
        def build(op=op, arrays=arrays, flops=flops):
            # Constant fills, not randn: bandwidth does not depend on the values, and drawing
            # hundreds of MB of normal samples took longer than the measurement's budget.
            a = torch.full((elements,), 1.0, device=dev.device, dtype=dt)
            b = torch.full((elements,), 2.0, device=dev.device, dtype=dt)
            if op == "copy":
                return Case(lambda: b.copy_(a), 0.0, arrays * elements * el, "b.copy_(a)")
            c = torch.full((elements,), 0.5, device=dev.device, dtype=dt)
            return Case(lambda: torch.add(b, c, alpha=3.0, out=a), flops,
                         arrays * elements * el, "torch.add(b, c, alpha=3, out=a)")
        out[op] = measure_case(dev, op, (elements,), p, build, budget_s=budget_s / 2,
                           warmup_s=warmup_s, reps=reps, min_reps=5, max_reps=1000,
                           flush_l2=False, threads=threads)
    return Bandwidth(out["copy"], out["triad"])


