"""Lab 3's graded numbers: each numeric item's band and the wrong models it must catch
(see labs.core.physics.misconceptions)."""

from __future__ import annotations

from labs.core.physics import hardware, precision
from labs.core.physics import precision_study
from labs.core.physics.misconceptions import WRONG_MARGIN_FROM_2, Band, WrongModel

__all__ = [
    "BANDS", "DECODE_CASE", "RHO_CASE", "TOLERANCES", "nvfp4_byte_ratio_band", "rho_ratio_band",
]

#: Prediction 1's case (the lab's GEMM_4096 on SCENARIO_DEVICE): Priya's 4096³ GEMM on an
#: H100 SXM, FP32 on the CUDA cores against FP16 on the tensor cores.
RHO_CASE = {"op": "gemm", "shape": {"m": 4096, "n": 4096, "k": 4096}, "hw": "h100-sxm"}
#: Prediction 3's case (the lab's OPENING): Llama-3-8B's Q projection, a 4096 x 4096 batch-1
#: decode GEMV on the H100 SXM, FP16 weights against NVFP4 ones.
DECODE_CASE = {"n": 4096, "k": 4096, "hw": "h100-sxm"}

#: item id -> the factor within which a prediction is graded correct
TOLERANCES: dict[str, float] = {
    "lab03.rho_ratio": 1.5,
    # a byte ratio is exact arithmetic: 3.55, and 3.5 or 3.6 rounded, grade right; MXFP4's
    # block scales (3.76, 1.059x off) must not
    "lab03.nvfp4_byte_ratio": 1.025,
}


def _off(value: float, reference: float) -> float:
    return max(value / reference, reference / value)


def rho_ratio_band() -> Band:
    """rho(fp16) / rho(fp32) for the 4096³ GEMM: AI doubles, the ridge moves with the peak."""
    item = "lab03.rho_ratio"
    case = dict(RHO_CASE)
    parts = precision_study.rho_change_parts(case["op"], case["shape"], case["hw"], "fp32", "fp16")
    wrong = (
        WrongModel("bytes only: AI doubles and the ridge stays (Priya's argument)",
                   parts.ai_ratio),
        WrongModel("peak only: the ridge moves with the tensor cores, AI stays",
                   1 / parts.ridge_ratio),
        WrongModel("rho unchanged: the FP32 roof taken as TF32's tensor cores, so AI and "
                   "ridge both double", precision_study.rho_change(case["op"], case["shape"], case["hw"],
                                                      "tf32", "fp16")),
    )
    tolerance = TOLERANCES[item]
    nearest = min(wrong, key=lambda w: _off(w.value, parts.rho_ratio))
    device = hardware.get(case["hw"])
    return Band(
        item, parts.rho_ratio, tolerance, wrong, asks_bound=True, units="×",
        why=f"The nearest wrong model, {nearest.name}, is "
            f"{_off(nearest.value, parts.rho_ratio):.2g}x off; the {device.name}'s peaks "
            f"({device.peak_tflops('fp32'):g} TFLOP/s FP32, {device.peak_tflops('fp16'):g} "
            "FP16 dense) rounded to one or two figures move a right answer by a few "
            f"percent, so the band is {tolerance:g}x. ρ is the roofline's own quantity (spec "
            "peaks and bandwidth), which the question says: no measurement applies.")


def nvfp4_byte_ratio_band() -> Band:
    """How many times fewer bytes the decode GEMV reads with NVFP4 weights than FP16 ones."""
    item = "lab03.nvfp4_byte_ratio"
    n, k, hw = DECODE_CASE["n"], DECODE_CASE["k"], DECODE_CASE["hw"]

    def ratio(low: str) -> float:
        return precision_study.decode_quant_table(n, k, hw, ["fp16", low])[1].byte_ratio

    reference = ratio("nvfp4")
    mx = precision.get("mxfp4")
    wrong = (
        WrongModel("ignores NVFP4's block scales (16 / 4 bits)", ratio("fp4")),
        WrongModel("a 4-bit weight still takes a whole byte (16 / 8 bits)", ratio("int8")),
        WrongModel(f"MXFP4's block scales ({mx.block}-element blocks, E8M0 scale: "
                   f"{mx.bits:g} bits a weight), not NVFP4's", ratio("mxfp4")),
    )
    tolerance = TOLERANCES[item]
    nearest = min(wrong, key=lambda w: _off(w.value, reference))
    int4 = precision_study.WEIGHT_ONLY_MEASURED[-1]
    return Band(
        item, reference, tolerance, wrong, asks_bound=True, units="×",
        wrong_margin=WRONG_MARGIN_FROM_2,
        why=f"A byte ratio is exact arithmetic: {precision.bits('nvfp4'):g} bits a weight "
            "with the scales, the FP16 vectors counted or not, lands within 0.2% of "
            f"{reference:.3g}. The nearest wrong "
            f"model, {nearest.name}, is {_off(nearest.value, reference):.3g}x off, so the band "
            f"is {tolerance:g}x: a right answer rounded to two figures grades right, and "
            f"every wrong one, rounded the same way, wrong (all lie between 2 and 10, where "
            f"rounding moves a value by under {WRONG_MARGIN_FROM_2 - 1:.1%}). The question "
            "asks for the ideal traffic (every byte read once), which the model counts exactly; the speedup it bounds is not graded, "
            "because real kernels also dequantise every weight (gpt-fast: "
            f"{int4.speedup:.2f}x for {int4.storage} weights, {int4.byte_ratio:.3g}x fewer "
            f"bytes, at batch {int4.batch}).")


#: item id -> a function returning its Band
BANDS: dict = {"lab03.rho_ratio": rho_ratio_band,
               "lab03.nvfp4_byte_ratio": nvfp4_byte_ratio_band}
