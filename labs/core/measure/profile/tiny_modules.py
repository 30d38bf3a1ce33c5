"""The built-in models Lab 7 profiles, as ordinary PyTorch modules with random weights (nothing
to download): a small Llama-style decoder (RMSNorm, rotary positions, grouped-query attention
with a KV cache, SwiGLU MLP, no biases) and its MLP and attention blocks alone.

Shapes come from ``labs.core.physics.tiny_models`` (Llama-3-8B's proportions, scaled down).
This module imports torch at the top: it is only imported when a model is built
(``labs.core.measure.profile.profiler.builtin_case`` imports it lazily), never by a notebook that has
not pressed a run button. Written the way reference implementations are, so what the profiler
shows is what a student's own model would show:

* "math" attention repeats K and V to every query head (Llama's ``repeat_kv``: a copy), then
  runs QK^T, a causal mask (prefill), softmax and PV as separate operators;
* "sdpa" attention calls ``torch.nn.functional.scaled_dot_product_attention`` with
  ``enable_gqa=True`` (no repeat, one fused operator where torch has a fused kernel).
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from labs.core.physics import tiny_models

__all__ = ["Attention", "Block", "MLP", "RMSNorm", "TinyDecoder", "build", "rotary_tables"]


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight, in the model's dtype (one operator per step)."""

    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotary_tables(head_dim: int, max_len: int, theta: float = 500000.0):
    """cos and sin tables [max_len, head_dim] of rotary positions (Llama 3's theta)."""
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    ang = torch.outer(torch.arange(max_len, dtype=torch.float32), inv)
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos(), ang.sin()


def _rotate(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


class Attention(nn.Module):
    """Grouped-query self-attention with an optional KV cache of ``cache_len`` positions."""

    def __init__(self, config=tiny_models.TINY_DECODER, *, attention: str = "math", batch: int = 1,
                 cache_len: int = 0, max_len: int = 1024):
        super().__init__()
        if attention not in tiny_models.ATTENTION:
            raise ValueError(f"attention must be one of {', '.join(tiny_models.ATTENTION)}, "
                             f"got {attention!r}")
        c = config
        self.heads, self.kv_heads, self.head_dim = c.heads, c.kv_heads, c.head_dim
        self.attention = attention
        self.wq = nn.Linear(c.d_model, c.heads * c.head_dim, bias=False)
        self.wk = nn.Linear(c.d_model, c.kv_heads * c.head_dim, bias=False)
        self.wv = nn.Linear(c.d_model, c.kv_heads * c.head_dim, bias=False)
        self.wo = nn.Linear(c.heads * c.head_dim, c.d_model, bias=False)
        cos, sin = rotary_tables(c.head_dim, max(max_len, cache_len, 1))
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        if cache_len:
            shape = (batch, c.kv_heads, cache_len, c.head_dim)
            self.register_buffer("cache_k", torch.zeros(shape), persistent=False)
            self.register_buffer("cache_v", torch.zeros(shape), persistent=False)
        else:
            self.cache_k = self.cache_v = None

    def forward(self, x, pos: int = 0):
        b, s, _ = x.shape
        q = self.wq(x).view(b, s, self.heads, self.head_dim).transpose(1, 2)
        k = self.wk(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.wv(x).view(b, s, self.kv_heads, self.head_dim).transpose(1, 2)
        cos, sin = self.cos[pos:pos + s], self.sin[pos:pos + s]
        q, k = _rotate(q, cos, sin), _rotate(k, cos, sin)
        if self.cache_k is not None:  # write the new positions, attend to everything so far
            self.cache_k[:, :, pos:pos + s] = k
            self.cache_v[:, :, pos:pos + s] = v
            k, v = self.cache_k[:, :, :pos + s], self.cache_v[:, :, :pos + s]
        if self.attention == "sdpa":
            o = F.scaled_dot_product_attention(q, k, v, is_causal=s > 1, enable_gqa=True)
        else:
            o = self._math(q, k, v, s)
        return self.wo(o.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))

    def _math(self, q, k, v, s):
        rep = self.heads // self.kv_heads
        b, _, t, d = k.shape
        k = k[:, :, None].expand(b, self.kv_heads, rep, t, d).reshape(b, self.heads, t, d)
        v = v[:, :, None].expand(b, self.kv_heads, rep, t, d).reshape(b, self.heads, t, d)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.head_dim)
        if s > 1:  # causal: query i sees keys up to its own position (t - s + i)
            mask = torch.full((s, t), float("-inf"), dtype=q.dtype, device=q.device)
            scores = scores + mask.triu(t - s + 1)
        return scores.softmax(dim=-1) @ v


class MLP(nn.Module):
    """SwiGLU: down(silu(gate(x)) * up(x))."""

    def __init__(self, config=tiny_models.TINY_DECODER):
        super().__init__()
        self.gate = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.up = nn.Linear(config.d_model, config.d_ff, bias=False)
        self.down = nn.Linear(config.d_ff, config.d_model, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


class Block(nn.Module):
    def __init__(self, config, **attn_kwargs):
        super().__init__()
        self.attn_norm = RMSNorm(config.d_model)
        self.attn = Attention(config, **attn_kwargs)
        self.mlp_norm = RMSNorm(config.d_model)
        self.mlp = MLP(config)

    def forward(self, x, pos: int = 0):
        x = x + self.attn(self.attn_norm(x), pos)
        return x + self.mlp(self.mlp_norm(x))


class TinyDecoder(nn.Module):
    """Embedding, ``layers`` blocks, final RMSNorm, LM head on the last position only (what a
    serving engine computes). ``forward(tokens, pos)``: tokens [batch, new tokens] written to
    the KV cache at ``pos`` (``cache_len=0``: no cache, positions from ``pos``); returns
    logits [batch, vocab]."""

    def __init__(self, config=tiny_models.TINY_DECODER, *, attention: str = "math", batch: int = 1,
                 cache_len: int = 1024, max_len: int | None = None):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab, config.d_model)
        self.layers = nn.ModuleList(
            Block(config, attention=attention, batch=batch, cache_len=cache_len,
                  max_len=max_len or cache_len) for _ in range(config.layers))
        self.norm = RMSNorm(config.d_model)
        self.lm_head = nn.Linear(config.d_model, config.vocab, bias=False)

    def forward(self, tokens, pos: int = 0):
        x = self.embed(tokens)
        for layer in self.layers:
            x = layer(x, pos)
        return self.lm_head(self.norm(x[:, -1]))


def _init(model: nn.Module, seed: int) -> nn.Module:
    """Random weights scaled like an initialised model (std 1/sqrt(fan-in)), reproducibly."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("weight") and p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=g) / math.sqrt(p.shape[-1]))
        for name, buf in model.named_buffers():
            if name.endswith(("cache_k", "cache_v")):  # a cache "already filled" by a prefill
                buf.copy_(torch.randn(buf.shape, generator=g))
    return model


def build(block: str = "decoder", *, phase: str = "decode", batch: int = 1, context: int = 1024,
          attention: str = "math", dtype=torch.float32, device="cpu", seed: int = 0,
          cache: bool = True, config=tiny_models.TINY_DECODER):
    """(model, example_inputs) for one built-in case, in ``dtype`` on ``device``, eval mode.

    decoder/decode: one new token per sequence attends to ``context`` cached positions (the
    cache holds random keys and values, as if a prefill had filled it); decoder/prefill:
    ``context`` tokens per sequence from position 0. mlp: the decoder's SwiGLU MLP over
    batch x (context if prefill else 1) tokens; attention: its attention block, no cache
    (self-attention over those tokens).
    """
    if block not in tiny_models.BLOCKS:
        raise ValueError(f"block must be one of {', '.join(tiny_models.BLOCKS)}, got {block!r}")
    tiny_models.memory_terms(config, phase=phase, batch=batch, context=context,
                     attention=attention)  # validates phase, batch, context, attention
    if not cache and phase != "prefill":
        raise ValueError("cache=False needs phase='prefill': a decode step reads its KV cache")
    g = torch.Generator().manual_seed(seed + 1)
    new = context if phase == "prefill" else 1
    cache_len = context if cache else 0
    x = torch.randn(batch, new, config.d_model, generator=g).to(device, dtype)
    if block == "decoder":
        model = TinyDecoder(config, attention=attention, batch=batch, cache_len=cache_len,
                            max_len=context)
        tokens = torch.randint(0, config.vocab, (batch, new), generator=g)
        inputs = (tokens.to(device), context - new)
    elif block == "mlp":
        model, inputs = MLP(config), (x,)
    else:
        model = Attention(config, attention=attention, batch=batch, cache_len=cache_len,
                          max_len=context)
        inputs = (x, context - new)
    model = _init(model, seed).to(device=device, dtype=dtype).eval()
    return model, inputs
