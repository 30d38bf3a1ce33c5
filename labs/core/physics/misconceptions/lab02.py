"""Lab 2's graded numbers: each numeric item's band and the wrong models it must catch
(see labs.core.physics.misconceptions)."""

from __future__ import annotations

import math

from labs.core.physics import models, serving
from labs.core.physics.misconceptions import Band, WrongModel

__all__ = [
    "BANDS", "OOM_CASE", "TOLERANCES", "USABLE_FRACTION", "oom_batch_band",
]

#: Prediction 2's case (the lab's OOM_REF): Sam's Llama-3-8B on one H100 SXM, 8,192-token
#: conversations, bf16 weights and KV cache, 90% of the memory usable (memory_budget's
#: default, stated in the question).
OOM_CASE = {"model": "llama-3-8b", "hw": "h100-sxm", "seq_len": 8192,
            "weight_precision": "bf16", "kv_precision": "bf16"}
USABLE_FRACTION = 0.9

#: item id -> the factor within which a prediction is graded correct
TOLERANCES: dict[str, float] = {"lab02.oom_batch": 1.04}


def oom_batch_band() -> Band:
    """The first batch that runs out of memory. A batch is a count and the wrong models sit
    close to it, so the band is narrow. Each wrong model is the lab's own division
    (``serving.first_batch_over`` over ``models.memory_budget``'s terms, or
    ``models.oom_batch`` itself) with the one input the misconception changes."""
    item = "lab02.oom_batch"
    model = models.get(OOM_CASE["model"])
    one, two = (models.memory_budget(**OOM_CASE, batch=b) for b in (1, 2))
    per_sequence = two.used_bytes - one.used_bytes  # its KV cache and its logits
    fixed = one.used_bytes - per_sequence  # the weights and one prompt's activations
    kv = one.terms["KV cache"]
    reference = models.oom_batch(**OOM_CASE)
    wrong = (
        WrongModel("ignores the weights (only the KV cache fills the memory)",
                   serving.first_batch_over(one.capacity_bytes, fixed - one.terms["weights"],
                                            per_sequence)),
        WrongModel("uses all of the memory (drops the 10% reserve)",
                   models.oom_batch(**OOM_CASE, usable_fraction=1.0)),
        WrongModel("reads 80 GiB as 80 GB (10^9 B)",
                   models.oom_batch(**OOM_CASE, usable_fraction=USABLE_FRACTION * 1e9 / 2**30)),
        WrongModel(f"counts the {model.heads} query heads in the KV cache, not the "
                   f"{model.kv_heads} KV heads",
                   serving.first_batch_over(one.capacity_bytes, fixed, per_sequence
                                            + kv * (model.heads / model.kv_heads - 1))),
    )
    tolerance = TOLERANCES[item]
    # what a right hand computation answers: the largest batch that fits (one below), or the
    # weights and KV cache alone, without the activations' 0.6 GB
    right = sorted({reference - 1, serving.first_batch_over(
        one.capacity_bytes, one.terms["weights"], kv)} | {reference})
    nearest = sorted(wrong, key=lambda w: abs(w.value - reference))[:2]
    off = {w.name: max(w.value / reference, reference / w.value) for w in nearest}
    return Band(
        item, reference, tolerance, wrong, asks_bound=True, units="sequences",
        why="A batch is a count and the wrong models sit close to it: "
            + " and ".join(f"{w.name} gives {w.value} ({off[w.name]:.2f}x)" for w in nearest)
            + f". A right hand computation lands on {right[0]} to {right[-1]} (the largest "
            "batch that fits or the first that does not, with or without the activations), "
            f"so the band is {tolerance:g}x: {math.ceil(reference / tolerance)} to "
            f"{math.floor(reference * tolerance)} sequences grade right. The question asks for "
            "the ideal "
            "budget's answer (nothing allocated beyond weights, KV cache and activations in "
            "the usable memory); no published run measures this case.")


#: item id -> a function returning its Band
BANDS: dict = {"lab02.oom_batch": oom_batch_band}
