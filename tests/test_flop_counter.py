"""FLOP formulas equal what torch.utils.flop_counter.FlopCounterMode counts."""

import pytest

from labs.core import formulas

try:
    import torch
    from torch.utils.flop_counter import FlopCounterMode
except ImportError:  # without the live extra: every test here is skipped (conftest.py)
    torch = None

#: Every test here counts with torch's FlopCounterMode: skipped, saying so, without torch.
pytestmark = pytest.mark.torch


def _count(fn):
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


@pytest.mark.parametrize("m,n,k", [(64, 32, 16), (1, 256, 128), (7, 5, 3)])
def test_matmul(m, n, k):
    a, b = torch.randn(m, k), torch.randn(k, n)
    assert _count(lambda: a @ b) == formulas.gemm(m, n, k).flops


def test_gemv():
    # FlopCounterMode registers no formula for aten.mv (it counts 0), so count the same
    # product as a one-row matmul, which it does count.
    w, x = torch.randn(96, 64), torch.randn(64)
    assert _count(lambda: x[None, :] @ w.T) == formulas.gemv(96, 64).flops


@pytest.mark.parametrize("bias", [False, True])
def test_linear(bias):
    lin = torch.nn.Linear(48, 80, bias=bias)
    x = torch.randn(12, 48)
    assert _count(lambda: lin(x)) == formulas.linear(12, 48, 80, bias=bias).flops


@pytest.mark.parametrize("sq,skv", [(16, 16), (1, 40)])
def test_attention_sdpa_and_explicit(sq, skv):
    b, h, dh = 2, 4, 32
    q, k, v = (torch.randn(b, h, s, dh) for s in (sq, skv, skv))
    want = formulas.attention(b, h, sq, skv, dh).flops
    assert _count(lambda: torch.softmax(q @ k.transpose(-1, -2), -1) @ v) == want
    # The fused kernels (flash/efficient/cuDNN SDPA) are counted with sdpa_flop_count; on CPU
    # SDPA dispatches to a kernel the counter does not register, so call that formula directly.
    from torch.utils.flop_counter import sdpa_flop_count
    assert sdpa_flop_count(q.shape, k.shape, v.shape) == want
    assert formulas.attention(b, h, sq, skv, dh, fused=True).flops == want


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("input_requires_grad", [False, True])
def test_mlp_forward_and_backward(gated, input_requires_grad):
    t, d, f = 8, 32, 64
    up = torch.nn.Linear(d, f, bias=False)
    gate = torch.nn.Linear(d, f, bias=False)
    down = torch.nn.Linear(f, d, bias=False)
    x = torch.randn(t, d, requires_grad=input_requires_grad)

    def forward():
        h = torch.nn.functional.silu(gate(x)) * up(x) if gated else torch.nn.functional.gelu(up(x))
        return down(h)

    assert _count(forward) == formulas.mlp(t, d, f, gated=gated).flops
    assert _count(lambda: forward().sum().backward()) == formulas.mlp(
        t, d, f, gated=gated, backward=True, input_requires_grad=input_requires_grad).flops
