"""Operation costs against hand-derived values, and their error handling."""

import math

import pytest

from labs.core import formulas


def test_gemm_4096_cubed_fp16_and_fp32():
    g = formulas.gemm(4096, 4096, 4096, "fp16")
    assert g.flops == 2 * 4096**3  # 137.4 GFLOP
    assert g.bytes == 3 * 4096**2 * 2  # A, B, C once: 100.7 MB
    assert g.ai == pytest.approx(4096 / 3)  # 1365.3 FLOP/B
    assert formulas.gemm(4096, 4096, 4096, "fp32").ai == pytest.approx(4096 / 6)  # 682.7
    assert g.compute == "fp16"


def test_gemm_rectangular_terms():
    g = formulas.gemm(8, 1024, 4096, "bf16")
    assert g.detail == {"A": 8 * 4096 * 2, "B": 4096 * 1024 * 2, "C": 8 * 1024 * 2}
    assert g.flops == 2 * 8 * 1024 * 4096


def test_gemm_weight_only_quantisation_moves_fewer_bytes_at_fp16_compute():
    g = formulas.gemm(1, 4096, 4096, "fp16", weight_precision="int4-g128")
    assert g.compute == "fp16"
    assert g.detail["B"] == 4096 * 4096 * 4.125 / 8


def test_gemv_ai_is_about_one_at_fp16():
    v = formulas.gemv(4096, 4096, "fp16")
    assert v.flops == 2 * 4096 * 4096
    assert v.bytes == (4096 + 4096 * 4096 + 4096) * 2
    assert v.ai == pytest.approx(1.0, rel=1e-3)
    assert formulas.gemv(4096, 4096, "nvfp4").ai == pytest.approx(16 / 4.5, rel=1e-3)


@pytest.mark.parametrize("n, k", [(1024, 4096), (4096, 1024), (3, 7)])
def test_gemv_sizes_its_output_by_n_and_its_input_by_k(n, k):
    """y[N] = W[N,K] x[K]: the input vector has K elements, the output N (a GEMV whose output
    were sized K would pass every square case)."""
    v = formulas.gemv(n, k, "fp16")
    assert v.detail == {"x": k * 2, "W": n * k * 2, "y": n * 2}
    assert v.flops == 2 * n * k


def test_gemv_non_square_hand_values():
    # a 4096 -> 1024 projection in fp16: x 8,192 B, W 8,388,608 B, y 2,048 B
    v = formulas.gemv(1024, 4096, "fp16")
    assert v.bytes == 8_398_848 and v.flops == 8_388_608
    # int8 weights, bf16 activations: W at 1 byte, x and y at 2; the math runs in bf16
    w = formulas.gemv(1024, 4096, "bf16", weight_precision="int8")
    assert w.detail == {"x": 8192, "W": 4_194_304, "y": 2048} and w.compute == "bf16"


def test_gemm_output_precision_sets_only_c_bytes():
    """A GEMM writes C in its output precision (fp8 kernels write bf16, int8 kernels int32 =
    4 bytes): A and B keep theirs."""
    g = formulas.gemm(64, 32, 128, "fp8", out_precision="bf16")
    assert g.detail == {"A": 64 * 128, "B": 128 * 32, "C": 64 * 32 * 2}
    assert g.compute == "fp8"
    assert formulas.gemm(64, 32, 128, "int8", out_precision="fp32").detail == {
        "A": 8192, "B": 4096, "C": 8192}
    assert formulas.gemm(64, 32, 128, "bf16").detail["C"] == 64 * 32 * 2  # default: as the inputs


def test_linear_matches_gemm_and_counts_bias_bytes_only():
    lin = formulas.linear(16, 4096, 1024, "fp16", bias=True)
    assert lin.flops == 2 * 16 * 4096 * 1024
    assert lin.bytes == (16 * 4096 + 4096 * 1024 + 16 * 1024 + 1024) * 2


def test_attention_unfused_vs_fused_hand_derived():
    b, h, s, dh = 2, 32, 1024, 128
    un = formulas.attention(b, h, s, s, dh, "fp16", fused=False)
    fu = formulas.attention(b, h, s, s, dh, "fp16", fused=True)
    assert un.flops == fu.flops == 4 * b * h * s * s * dh
    qkvo = 4 * b * h * s * dh * 2
    assert fu.bytes == qkvo
    assert un.bytes == qkvo + 4 * b * h * s * s * 2  # S write, S read, P write, P read
    assert un.kernels == 3 and fu.kernels == 1
    assert fu.ai > un.ai


def test_attention_gqa_reads_kv_heads_not_query_heads():
    gqa = formulas.attention(1, 32, 1, 8192, 128, "bf16", fused=True, kv_heads=8)
    mha = formulas.attention(1, 32, 1, 8192, 128, "bf16", fused=True)
    assert gqa.detail["K"] == 8 * 8192 * 128 * 2
    assert mha.detail["K"] == 4 * gqa.detail["K"]
    with pytest.raises(ValueError, match="multiple of kv_heads"):
        formulas.attention(1, 32, 1, 8, 128, kv_heads=5)


def test_math_attention_with_repeat_kv_writes_and_reads_the_copies():
    """Lab 7: Llama's math path copies K and V from the KV heads to every query head
    (expand + reshape) before QK^T. B 1, H 8, Hkv 2, Sq 1, Skv 1024, dh 64, fp32: Q = O =
    8 x 64 x 4 = 2,048 B; K = V = 2 x 1024 x 64 x 4 = 524,288 B read once; scores 4 passes x
    8 x 1024 x 4 = 131,072 B; the copies written then read: 2 x 2 x 8 x 1024 x 64 x 4 =
    8,388,608 B. Two more kernels (the copies)."""
    plain = formulas.attention(1, 8, 1, 1024, 64, "fp32", kv_heads=2)
    rep = formulas.attention(1, 8, 1, 1024, 64, "fp32", kv_heads=2, repeat_kv=True)
    assert plain.bytes == 2_048 * 2 + 524_288 * 2 + 131_072
    assert rep.bytes == plain.bytes + 8_388_608 == 9_572_352
    assert rep.flops == plain.flops and (plain.kernels, rep.kernels) == (3, 5)
    # no GQA, nothing copied; a fused kernel reads the KV heads directly
    assert formulas.attention(1, 8, 1, 1024, 64, "fp32", repeat_kv=True).bytes == \
        formulas.attention(1, 8, 1, 1024, 64, "fp32").bytes
    with pytest.raises(ValueError, match="repeat_kv"):
        formulas.attention(1, 8, 1, 1024, 64, "fp32", kv_heads=2, fused=True, repeat_kv=True)


def test_layernorm_and_softmax():
    ln = formulas.layernorm(4, 4096, "fp16")
    assert ln.flops == 8 * 4 * 4096
    assert ln.bytes == (2 * 4 * 4096 + 2 * 4096) * 2
    sm = formulas.softmax(32, 1024, "fp32")
    assert sm.flops == 5 * 32 * 1024 and sm.bytes == 2 * 32 * 1024 * 4


CHAIN = ["layernorm", "gelu", "dropout", "residual_add"]


def test_elementwise_chain_unfused_vs_fused_bytes():
    n = 1 << 24
    un = formulas.elementwise_chain(n, CHAIN, precision="fp16")
    fu = formulas.elementwise_chain(n, CHAIN, [[0, 1, 2, 3]], precision="fp16")
    # unfused: each of 4 kernels reads and writes n x 2 B; residual reads a 2nd input; mask 1 B.
    assert un.total.bytes == (4 * 2 * 2 + 2) * n + n
    # fused: read x and the residual input, write y and the mask.
    assert fu.total.bytes == (2 + 2 + 2) * n + n
    assert un.total.flops == fu.total.flops == (8 + 8 + 2 + 1) * n
    assert un.kernels == 4 and fu.kernels == 1
    assert un.total.bytes / fu.total.bytes == pytest.approx(19 / 7)


def test_chain_groups_must_be_contiguous_and_complete():
    with pytest.raises(ValueError, match="contiguous"):
        formulas.elementwise_chain(10, CHAIN, [[0, 2], [1, 3]])
    with pytest.raises(ValueError, match="contiguous"):
        formulas.elementwise_chain(10, CHAIN, [[0, 1]])
    with pytest.raises(KeyError, match="gelu"):
        formulas.elementwise_chain(10, ["gelux"])
    assert formulas.contiguous_groups(4, 2) == [[0, 1], [2, 3]]
    assert formulas.contiguous_groups(4, 3) == [[0, 1], [2], [3]]
    with pytest.raises(ValueError, match="n_kernels"):
        formulas.contiguous_groups(2, 3)


def test_mlp_flops_forward_and_backward():
    t, d, f = 64, 512, 2048
    assert formulas.mlp(t, d, f).flops == 2 * (2 * t * d * f)
    assert formulas.mlp(t, d, f, gated=True).flops == 3 * (2 * t * d * f)
    assert formulas.mlp(t, d, f, backward=True).flops == 3 * 2 * (2 * t * d * f)
    no_dx = formulas.mlp(t, d, f, backward=True, input_requires_grad=False)
    assert no_dx.flops == 3 * 2 * (2 * t * d * f) - 2 * t * d * f


def test_cost_sum_and_scaling():
    a, b = formulas.gemm(2, 2, 2), formulas.gemv(2, 2)
    s = a + b
    assert s.flops == a.flops + b.flops and s.bytes == a.bytes + b.bytes and s.kernels == 2
    assert (a + formulas.gemm(2, 2, 2, "fp32")).compute == "mixed"
    assert a.scaled(32).flops == 32 * a.flops
    assert formulas.total([a, b]).bytes == s.bytes


@pytest.mark.parametrize("bad", [0, -1, 1.5, float("nan"), float("inf"), "64", None, True])
def test_bad_sizes_raise_naming_the_argument(bad):
    with pytest.raises(ValueError, match=r"\bm\b"):
        formulas.gemm(bad, 4, 4)
    with pytest.raises(ValueError, match="seq_kv"):
        formulas.attention(1, 1, 1, bad, 64)
    with pytest.raises(ValueError, match="n_elements"):
        formulas.elementwise_chain(bad, CHAIN)


def test_unknown_precision_raises_with_matches():
    with pytest.raises(KeyError, match="fp16"):
        formulas.gemm(4, 4, 4, "fp61")
    with pytest.raises(ValueError, match="weight-only storage format"):
        formulas.gemm(4, 4, 4, "nf4")  # activations cannot be stored in a weight-only format
    with pytest.raises(ValueError, match="weight-only storage format"):
        formulas.gemm(4, 4, 4, "nf4", compute="bf16")
    assert formulas.gemm(4, 4, 4, "bf16", weight_precision="nf4").compute == "bf16"


def test_nothing_returns_nan():
    for c in [formulas.gemm(1, 1, 1), formulas.gemv(1, 1), formulas.attention(1, 1, 1, 1, 1), formulas.layernorm(1, 1)]:
        assert math.isfinite(c.ai) and c.ai > 0


# --- moved from tests/test_physics_review.py (filed by the module they test) ---------
def test_gemm_refuses_an_explicit_compute_that_contradicts_its_operands():
    """(The physics review: compute precision follows from weights and
    activations.)"""
    with pytest.raises(ValueError, match="activation"):
        formulas.gemm(16, 4096, 4096, "bf16", weight_precision="int8", compute="int8")
    assert formulas.gemm(16, 4096, 4096, "int8", weight_precision="int8").compute == "int8"
    assert formulas.gemm(16, 4096, 4096, "bf16", weight_precision="int8").compute == "bf16"


@pytest.mark.parametrize("sq,skv", [(1, 1), (1, 40), (16, 16), (7, 20), (4096, 4096)])
def test_causal_pairs(sq, skv):
    # bottom-right aligned (query i sees keys j <= i + skv - sq), brute force
    """(The physics review: causal prefill attention.)"""
    want = sum(min(skv, i + skv - sq + 1) for i in range(sq)) if sq <= 64 else \
        sq * (skv - sq) + sq * (sq + 1) // 2
    assert formulas.causal_pairs(sq, skv) == want


def test_causal_attention_flops_and_unfused_score_traffic():
    """(The physics review: causal prefill attention: only a
    fused (causal-aware) kernel skips the masked pairs; the unfused math path computes every
    score and masks afterwards, as FlopCounterMode counts.)"""
    full = formulas.attention(2, 8, 1024, 1024, 128, "bf16")
    causal = formulas.attention(2, 8, 1024, 1024, 128, "bf16", causal=True)
    pairs = 1024 * 1025 // 2
    assert causal.flops == full.flops == 4 * 2 * 8 * 1024**2 * 128
    key = "scores (S write, S read, P write, P read)"
    assert causal.detail[key] == pytest.approx(4 * 2 * 8 * 1024**2 * 2)
    fused = formulas.attention(2, 8, 1024, 1024, 128, "bf16", fused=True, causal=True)
    assert key not in fused.detail
    assert fused.flops == pytest.approx(4 * 2 * 8 * pairs * 128)
    assert fused.flops / full.flops == pytest.approx(pairs / 1024**2)
    # decode (one query over the whole cache): causal changes nothing
    assert formulas.attention(4, 8, 1, 777, 64, causal=True).flops == formulas.attention(4, 8, 1, 777, 64).flops


# --- the causal halving belongs to fused kernels only ------------------------

def test_causal_unfused_attention_computes_every_score():
    """The math path computes all Sq x Skv scores and masks afterwards: causal changes neither
    its FLOPs nor its score traffic. Only a fused (causal-aware) kernel skips masked pairs."""
    b, h, s, dh = 2, 8, 1024, 128
    unfused = formulas.attention(b, h, s, s, dh, "bf16", fused=False, causal=True)
    assert unfused.flops == 4 * b * h * s * s * dh  # QK^T 2*s*s*dh + PV 2*s*s*dh, per head
    assert unfused.detail["scores (S write, S read, P write, P read)"] == 4 * b * h * s * s * 2
    fused = formulas.attention(b, h, s, s, dh, "bf16", fused=True, causal=True)
    assert fused.flops == 4 * b * h * (s * (s + 1) // 2) * dh  # the lower triangle, diagonal in
    with pytest.raises(ValueError, match="seq_q"):  # the causal check holds either way
        formulas.attention(1, 1, 8, 4, 16, fused=False, causal=True)


@pytest.mark.parametrize("sq,skv", [(16, 16), (1, 40), (24, 24)])
def test_causal_math_attention_flops_equal_flop_counter_mode(sq, skv):
    """FlopCounterMode (torch's own counter, the world's truth for matmul FLOPs) on the math
    path with a causal mask: the same count as formulas.attention(causal=True, fused=False)."""
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    b, h, dh = 2, 4, 32
    q, k, v = (torch.randn(b, h, n, dh) for n in (sq, skv, skv))
    mask = torch.full((sq, skv), float("-inf")).triu(skv - sq + 1)
    with FlopCounterMode(display=False) as counter:
        ((q @ k.transpose(-1, -2) + mask).softmax(-1) @ v)
    assert counter.get_total_flops() == 4 * b * h * sq * skv * dh
    assert formulas.attention(b, h, sq, skv, dh, "fp32", fused=False, causal=True).flops == \
        counter.get_total_flops()
