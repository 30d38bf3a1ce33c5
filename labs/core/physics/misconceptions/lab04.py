"""Lab 4's graded numbers: each numeric item's band and the wrong models it must catch
(see labs.core.physics.misconceptions).

Both numeric questions ask for the model's number on the lab's opening device (the H100 SXM):
no published measurement times this chain or this attention's out-of-memory length, so each
question says it asks for the roofline's ideal speedup or the upper bound on S.
"""

from __future__ import annotations

from labs.core.physics import fusion
from labs.core.physics.misconceptions import Band, WrongModel

__all__ = [
    "BANDS", "OPENING_DEVICE", "PRECISION", "TOLERANCES", "fusion_speedup_band",
    "oom_seq_len_band",
]

#: The lab's opening device (its ``OPENING["device"]``): the instructor copy's answers are its.
OPENING_DEVICE = "h100-sxm"
#: The questions' storage precision (fp16 tensors; 2 bytes, as bf16).
PRECISION = "fp16"

#: item id -> the factor within which a prediction is graded correct
TOLERANCES: dict[str, float] = {
    # the closest wrong model (forgets the dropout mask byte: 3.0 against 19/7) is 1.105x off;
    # the skip read as the LayerNorm's input (19/5) 1.4x
    "lab04.fusion_speedup": 1.05,
    # S grows with the square root of memory: 1.25x on S is 1.56x on the bytes
    "lab04.oom_seq_len": 1.25,
}


def _fused():
    return [list(range(len(fusion.DEFAULT_CHAIN)))]


def fusion_speedup_band() -> Band:
    n, hw = fusion.QUESTION_CHAIN_ELEMENTS, OPENING_DEVICE
    return Band(
        item_id="lab04.fusion_speedup",
        reference=fusion.fusion_speedup(n, hw, None, _fused(), precision=PRECISION),
        tolerance=TOLERANCES["lab04.fusion_speedup"],
        wrong_models=(
            WrongModel("4 kernels fused into 1 is 4× faster (the launch count)",
                       fusion.fusion_speedup(fusion.QUESTION_TINY_ELEMENTS, hw, None, _fused(),
                                         precision=PRECISION)),
            WrongModel("fusion saves only the 3 launches removed (bytes unchanged)",
                       fusion.launch_saving_speedup(n, hw, None, _fused(), precision=PRECISION)),
            WrongModel("fusion halves the bytes (as it does for two one-input ops)",
                       fusion.chain_byte_ratio(("gelu", "relu"), PRECISION)),
            WrongModel("counts the bytes but forgets dropout's 1-byte mask",
                       fusion.chain_byte_ratio(fusion.DEFAULT_CHAIN, PRECISION, count_masks=False)),
            WrongModel("takes the skip for the LayerNorm's input (a pre-LN block), which the "
                       "fused kernel has already read, though the question says it is another "
                       "tensor",
                       fusion.chain_byte_ratio(fusion.DEFAULT_CHAIN, PRECISION, skip_is_input=True)),
        ),
        asks_bound=True,
        units="×",
        why="The question asks for the roofline's ideal speedup to two significant figures, "
            "an exact ratio of bytes (19/7 = 2.7 at fp16; the box also reads 19/7; the skip "
            "is a tensor of its own, which the fused kernel reads too); forgetting the mask's "
            "byte (18/6 = 3) is 1.105× off, so the band is 1.05× (2.6 to 2.8 grade right, 3 "
            "wrong): counting the bytes right is the point. Reading the skip as the "
            "LayerNorm's input (19/5 = 3.8) is 1.4× off.")


def oom_seq_len_band() -> Band:
    hw, h, d = OPENING_DEVICE, fusion.QUESTION_HEADS, fusion.QUESTION_HEAD_DIM
    return Band(
        item_id="lab04.oom_seq_len",
        reference=fusion.unfused_max_seq_len(hw, 1, h, d, PRECISION),
        tolerance=TOLERANCES["lab04.oom_seq_len"],
        wrong_models=(
            WrongModel("scores stored in fp32 (4 bytes each)",
                       fusion.unfused_max_seq_len(hw, 1, h, d, PRECISION, score_precision="fp32")),
            WrongModel("holds the scores and the softmax probabilities at once (two S×S "
                       "buffers), though the question has softmax in place",
                       fusion.unfused_max_seq_len(hw, 1, h, d, PRECISION, score_copies=2)),
            WrongModel("one head's score matrix (forgets ×H)",
                       fusion.unfused_max_seq_len(hw, 1, 1, d, PRECISION)),
        ),
        asks_bound=True,
        units="tokens",
        why="S is what the scenario asks and what the instrument marks (the out-of-memory "
            "line), so S is graded rather than the memory at some S; but S grows with the "
            "square root of memory, so a factor-2 slip in the bytes (fp32 scores, scores and "
            "probabilities at once) moves S by only √2 = 1.41×. The band on S is therefore "
            "1.25× (1.56× on memory): those slips grade wrong, while 80 GB for 80 GiB (1.03×) "
            "or dropping the small Q, K, V, O term (1.01×) grade right.")


#: item id -> a function returning its Band
BANDS: dict = {
    "lab04.fusion_speedup": fusion_speedup_band,
    "lab04.oom_seq_len": oom_seq_len_band,
}
