"""Model configs, GQA KV cache, memory budgets and serving bounds, hand-derived."""

import pytest

from labs.core import formulas as F
from labs.core import hardware, models


def test_llama_3_8b_kv_cache_is_128_kib_per_token_in_bf16():
    m = models.get("llama-3-8b")
    # 2 (K,V) x 32 layers x 8 KV heads x 128 head_dim x 2 B = 131,072 B
    assert m.kv_cache_bytes(batch=1, seq_len=1, precision="bf16") == 131072
    assert m.kv_cache_bytes(batch=4, seq_len=8192, precision="bf16") == 131072 * 4 * 8192
    assert m.kv_cache_bytes(1, 1, "fp8") == 65536


def test_llama_3_70b_kv_cache_is_320_kib_per_token():
    assert models.get("llama-3-70b").kv_bytes_per_token("bf16") == 327680


def test_query_heads_would_overstate_the_cache_4x():
    m = models.get("llama-3-8b")
    wrong = 2 * m.layers * m.heads * m.head_dim * 2
    assert wrong / m.kv_bytes_per_token("bf16") == 4


@pytest.mark.parametrize("key", ["llama-3-8b", "llama-3-70b"])
def test_derived_params_match_the_model_card(key):
    m = models.get(key)
    assert m.params == pytest.approx(m.params_reported, rel=0.005)
    assert m.weight_bytes("bf16") == 2 * m.params
    assert "params.json" in m.source


def test_activation_assumption_is_stated_and_hand_checked():
    m = models.get("llama-3-8b")
    assert "ASSUMPTION" in models.ModelConfig.activation_bytes.__doc__
    assert m.activation_bytes(1, 1, "bf16") == (2 * 4096 + 2 * 14336) * 2 + 128256 * 4
    # one 8k-token prefill chunk is alive, not one per sequence; logits for every sequence
    assert m.activation_bytes(16, 8192, "bf16") == 8192 * 36864 * 2 + 16 * 128256 * 4
    assert m.activation_bytes(1, 8192, prefill_tokens=512) == 512 * 36864 * 2 + 128256 * 4


def test_memory_budget_names_the_overflowing_term():
    b = models.memory_budget("llama-3-70b", "h100-sxm", batch=1, seq_len=1024)
    assert not b.fits
    assert b.largest_term == "weights"
    assert b.overflow_bytes == pytest.approx(b.used_bytes - 72e9)
    assert "Out of memory by" in b.explain() and "weights" in b.explain()
    ok = models.memory_budget("llama-3-8b", "h100-sxm", batch=1, seq_len=1024)
    assert ok.fits and ok.explain().startswith("Fits")


def test_kv_cache_overflows_as_batch_grows():
    kw = dict(seq_len=8192)
    n = models.max_batch("llama-3-8b", "h100-sxm", **kw)
    assert models.memory_budget("llama-3-8b", "h100-sxm", batch=n, **kw).fits
    over = models.memory_budget("llama-3-8b", "h100-sxm", batch=n + 1, **kw)
    assert not over.fits and over.largest_term == "KV cache"
    # hand check: (72 GB usable - 16.06 GB weights - 0.60 GB prefill chunk) / 1.074 GB KV per
    # 8k sequence (+0.5 MB logits) = 51.5
    assert n == 51
    assert models.max_batch("llama-3-70b", "jetson-orin-nx-16gb", seq_len=1024) == 0
    assert models.max_batch("llama-3-8b", "h100-sxm", seq_len=8192, kv_precision="fp8") > n


def test_decode_at_batch_1_is_memory_bound_by_the_weights():
    s = models.step_bound("llama-3-8b", "h100-sxm", "decode", batch=1, seq_len=1024)
    assert s.bound == "memory"
    m = models.get("llama-3-8b")
    # every weight read once per step, except the embedding table (only 1 row is gathered),
    # plus the KV cache of 1024 tokens; activations are tiny at batch 1
    expected = m.weight_bytes("bf16") - m.vocab * m.d_model * 2 + m.kv_cache_bytes(1, 1024)
    assert s.bytes == pytest.approx(expected, rel=0.001)
    assert s.tokens_per_s == pytest.approx(3350e9 / s.bytes, rel=1e-6)  # ~213 tokens/s


def test_prefill_is_compute_bound():
    s = models.step_bound("llama-3-8b", "h100-sxm", "prefill", batch=1, seq_len=4096)
    assert s.bound == "compute"
    assert s.flops == pytest.approx(2 * 8.03e9 * 4096, rel=0.12)  # ~2 x params x tokens + attn


def test_layer_ops_decode_has_attention_reading_the_kv_cache():
    m = models.get("llama-3-8b")
    ops = {o.name: o for o in m.layer_ops("decode", batch=1, seq_len=1000)}
    attn = ops["attention (fused)"]
    assert attn.detail["K"] + attn.detail["V"] == m.kv_bytes_per_token("bf16") / m.layers * 1000
    assert ops["Q projection"].flops == 2 * 4096 * 4096
    with pytest.raises(ValueError, match="phase"):
        m.layer_ops("train", 1, 1)


def test_unknown_model_and_bad_args():
    with pytest.raises(KeyError, match="llama-3-8b"):
        models.get("llama-3-7b")
    with pytest.raises(ValueError, match="batch"):
        models.get("llama-3-8b").kv_cache_bytes(batch=0, seq_len=1)
    with pytest.raises(ValueError, match="usable_fraction"):
        models.memory_budget("llama-3-8b", "h100-sxm", batch=1, seq_len=1, usable_fraction=2)
