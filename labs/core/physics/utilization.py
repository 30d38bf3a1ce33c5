"""What a profiler's utilisations say about a kernel: FLOP and bandwidth utilisation, MFU,
the AI they imply, and how far the kernel sits below its own roof (Lab 1's yardstick).

FLOP utilisation alone misleads for a memory-bound kernel: at its AI the roof allows only a
fraction of peak, so the yardstick is the fraction of the roof at that AI
(:func:`fraction_of_roof`), which equals bandwidth utilisation below the ridge. Units as in
``roofline``: TFLOP/s, GB/s, FLOP/byte.
"""

from __future__ import annotations

from labs.core.physics import hardware, roofline
from labs.core.physics.validate import non_negative, positive

__all__ = ["bandwidth_utilization", "flop_utilization", "flop_utilization_bound",
           "fraction_of_roof", "implied_ai", "mfu", "reading"]


def flop_utilization(achieved_tflops, hw, precision: str) -> float:
    """FLOP utilisation of one kernel: achieved / dense peak for that precision. (For a whole
    model's training or serving step the same ratio of *model* FLOPs is MFU: :func:`mfu`.)"""
    return non_negative("achieved_tflops", achieved_tflops) / roofline.peak_tflops(hw, precision)


def mfu(achieved_tflops, hw, precision: str) -> float:
    """Model FLOP utilisation of a whole model's step: the model's FLOPs per second achieved
    / the dense peak. Reserve the name for models; for one kernel use
    :func:`flop_utilization` (the same ratio, not the same claim)."""
    return flop_utilization(achieved_tflops, hw, precision)


def bandwidth_utilization(achieved_gbs, hw) -> float:
    """Achieved bandwidth / the device's spec bandwidth."""
    return non_negative("achieved_gbs", achieved_gbs) / hardware.get(hw, arg="hw").bandwidth_gbs


def flop_utilization_bound(ai, hw, precision: str) -> float:
    """Best FLOP utilisation a kernel of this AI can reach: attainable / peak."""
    attainable = float(roofline.attainable_tflops(positive("ai", ai), hw, precision))
    return attainable / roofline.peak_tflops(hw, precision)


def implied_ai(achieved_tflops, achieved_gbs) -> float:
    """AI a kernel must have to run at ``achieved_tflops`` while moving ``achieved_gbs``:
    FLOP/s / (B/s) = TFLOP/s x 1e12 / (GB/s x 1e9), in FLOP/byte."""
    return positive("achieved_tflops", achieved_tflops) * 1e3 / positive("achieved_gbs",
                                                                         achieved_gbs)


def fraction_of_roof(achieved_tflops, ai, hw, precision: str) -> float:
    """The right yardstick: achieved / attainable at the kernel's own AI (1 = on the roof).
    For a memory-bound kernel this equals bandwidth utilisation; for a compute-bound one,
    FLOP utilisation."""
    return non_negative("achieved_tflops", achieved_tflops) / float(
        roofline.attainable_tflops(positive("ai", ai), hw, precision))


def reading(flop_util: float, bandwidth_util: float, device, precision: str) -> dict:
    """What a profiler's two utilisations (fractions of dense peak and of bandwidth) imply on
    a chip: achieved rates, implied AI = FLOP/s ÷ B/s, regime, both utilisations, fraction
    of the roof at that AI, and the FLOP-utilisation bound."""
    d = hardware.get(device, arg="device")
    tflops = positive("flop_util", flop_util) * d.peak_tflops(precision)
    gbs = positive("bandwidth_util", bandwidth_util) * d.bandwidth_gbs
    ai = implied_ai(tflops, gbs)
    return {"tflops": tflops, "gbs": gbs, "ai": ai,
            "regime": roofline.regime(ai, d, precision),
            "flop_util": flop_utilization(tflops, d, precision),
            "bw_util": bandwidth_utilization(gbs, d),
            "of_roof": fraction_of_roof(tflops, ai, d, precision),
            "flop_util_bound": flop_utilization_bound(ai, d, precision)}
