"""physics.tiny_models' kernel count, the launch model's k (Lab 7, Predictions 3 to 5): one
kernel per non-view aten operator of the tiny decoder the lab profiles
(``labs.core.measure.profile.tiny_modules``). Derived by hand from the module (``step_kernel_list``'s
docstring) and held here against what the project's profiler records on the real module, for
decode and prefill, math and sdpa attention, batch 1 and more, a few contexts, bf16, and two
other shapes of the same module (no GQA; one head), so a change to the module or to the count
that makes them disagree fails here. Before, the launch model counted ``step_ops``' 61 fused
roofline ops for a step that runs 172 operators."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from labs.core import models, tiny_models

W, A, E = models.OP_GROUPS
LOOKUP = tiny_models.LOOKUP


# --- by hand ------------------------------------------------------------------------------------

def test_a_decode_step_s_kernels_by_hand():
    # per layer (tiny_modules.Block): RMSNorm 6 (pow, mean, + eps, rsqrt, x *, * weight);
    # Q, K, V projections 3 mm; rotary on Q and K 2 x 5 (neg, cat, * cos, * sin, add);
    # KV-cache writes 2 copy_; math attention 6 (2 K/V copies to the 8 query heads, QK^T bmm,
    # / sqrt(64) div, softmax, PV bmm); O projection 1 mm; residual add 1; RMSNorm 6;
    # gate, up 2 mm; silu, * up 2; down 1 mm; residual add 1
    per_layer = 6 + 3 + 10 + 2 + 6 + 1 + 1 + 6 + 2 + 2 + 1 + 1
    assert per_layer == 41
    # outside the layers: embedding 1, final RMSNorm 6, LM head 1
    assert tiny_models.step_kernels() == 4 * per_layer + 1 + 6 + 1 == 172
    # by group: weight GEMMs 4 x 7 + LM head; attention 4 x (10 + 2 + 6);
    # norms & elementwise 4 x (6 + 1 + 6 + 2 + 1) + final norm 6; the embedding lookup 1
    assert tiny_models.step_kernels_by_group() == {W: 4 * 7 + 1, A: 4 * 18, E: 4 * 16 + 6,
                                                   LOOKUP: 1} == {W: 29, A: 72, E: 70, LOOKUP: 1}
    # sdpa: the 6 math attention operators are one fused operator: 4 x (41 - 6 + 1) + 8
    assert tiny_models.step_kernels(attention="sdpa") == 4 * 36 + 8 == 152
    # a decode step's count depends on neither batch, context nor precision
    for kw in (dict(batch=64), dict(context=32768), dict(precision="bf16"),
               dict(precision="fp16", batch=3)):
        assert tiny_models.step_kernels(**kw) == 172, kw


def test_a_prefill_s_kernels_by_hand():
    # s > 1 new tokens: + causal mask 3 (full, triu, add) + the attention output copied to
    # [batch, s, 512] 1 per layer; at batch > 1 also Q copied for the bmm: + 1 per layer
    assert tiny_models.step_kernels(phase="prefill", context=256) == 4 * (41 + 4) + 8 == 188
    assert tiny_models.step_kernels(phase="prefill", context=256, batch=2) == \
        4 * (41 + 5) + 8 == 192
    assert tiny_models.step_kernels_by_group(phase="prefill", context=256)[A] == 4 * 22 == 88
    # sdpa runs the mask inside its one operator and reads Q as it is laid out
    assert tiny_models.step_kernels(phase="prefill", context=256, batch=2,
                                    attention="sdpa") == 152
    # a one-token prefill is a decode step's count
    assert tiny_models.step_kernels(phase="prefill", context=1) == 172


def test_the_list_names_every_kernel_and_adds_up():
    for case in (dict(), dict(attention="sdpa"), dict(phase="prefill", batch=2, context=8)):
        rows = tiny_models.step_kernel_list(**case)
        assert all(what and n > 0 for what, _g, n in rows)
        assert sum(n for *_x, n in rows) == tiny_models.step_kernels(**case)
        assert {g for _w, g, _n in rows} == {*models.OP_GROUPS, LOOKUP}
        assert sum(tiny_models.step_kernels_by_group(**case).values()) == \
            tiny_models.step_kernels(**case)


def test_the_launch_model_charges_the_count():
    # 172 kernels x 5 µs = 860 µs at batch 1, whatever the device; 152 x 2 µs with sdpa
    assert tiny_models.time_with_launches("h100-sxm")[tiny_models.LAUNCHES] == \
        pytest.approx(860e-6)
    assert tiny_models.time_with_launches("l4", attention="sdpa", launch_overhead_us=2)[
        tiny_models.LAUNCHES] == pytest.approx(152 * 2e-6)


def test_prediction_4_s_overhead_ratios_by_hand():
    """Lab 7 P4's scenario: a 256-token prefill at batch 1, fp32, math attention, H100.
    Weight GEMMs: every layer's projections are compute-bound at 256 tokens (AI 51 to 81
    FLOP/B against the fp32 ridge 67 / 3.35 = 20): 4 x 2 x 256 x (512 x 64 x 20 + 3 x 512 x
    1792) = 6,979,321,856 FLOPs / 67 TFLOP/s = 104.2 µs; the LM head on the last position
    reads (512 + 512 x 16384 + 16384) x 4 = 33,622,016 B / 3,350 GB/s = 10.0 µs (memory-bound);
    T = 114.2 µs, 29 kernels x 5 µs = 145 µs: (114.2 + 145) / 114.2 = 2.27. The norms and
    elementwise ops: 70 kernels, 350 µs over a bound of about 13 µs: 28x. The answer stays the
    weight GEMMs (the 61-op count gave 1.92 and 8.8)."""
    r = tiny_models.overhead_ratio_by_group("h100-sxm", phase="prefill", batch=1, context=256)
    gemm_s = 4 * 2 * 256 * (512 * 64 * 20 + 3 * 512 * 1792) / 67e12 \
        + (512 + 512 * 16384 + 16384) * 4 / 3350e9
    assert gemm_s == pytest.approx(114.2e-6, rel=1e-3)
    assert r[W] == pytest.approx((gemm_s + 29 * 5e-6) / gemm_s, rel=1e-3)
    assert r[W] == pytest.approx(2.27, abs=0.005)
    t = tiny_models.time_by_group("h100-sxm", phase="prefill", batch=1, context=256)
    assert r[E] == pytest.approx((t[E] + 70 * 5e-6) / t[E])
    assert r[A] == pytest.approx((t[A] + 88 * 5e-6) / t[A])
    assert tiny_models.best_predicted_group("h100-sxm", phase="prefill", batch=1,
                                            context=256) == W


# --- against the module the lab profiles ----------------------------------------------------------

CASES = [(phase, attention, batch, context)
         for phase in ("decode", "prefill") for attention in ("math", "sdpa")
         for batch, context in ((1, 24), (3, 17))] + [("decode", "math", 1, 1024)]


def _measured(model, inputs, precision=None) -> tuple[int, dict]:
    """(non-view operator calls, their count per profiler operator type) of one forward,
    traced by the project's profiler (a what-if roofline: nothing is timed)."""
    from labs.core import measure
    from labs.core.measure.profile import opcost

    prof = measure.profile_model(model, inputs, roofline="h100-sxm", precision=precision)
    types = Counter(r["op_type"] for r in prof.rows if r["op_type"] != opcost.VIEWS)
    return prof.kernel_calls, dict(types)


def _expected_types(**case) -> dict:
    from labs.core.measure.profile import opcost

    groups = tiny_models.step_kernels_by_group(**case)
    return {**{g: n for g, n in groups.items() if g != LOOKUP and n},
            opcost.DATA_MOVEMENT: groups[LOOKUP]}


@pytest.mark.torch
@pytest.mark.parametrize("phase,attention,batch,context", CASES)
def test_the_count_is_the_non_view_operators_the_profiler_records(phase, attention, batch,
                                                                  context):
    from labs.core import measure

    case = dict(phase=phase, batch=batch, context=context, attention=attention)
    model, inputs = measure.builtin_case("decoder", device="cpu", **case)
    calls, types = _measured(model, inputs)
    assert calls == tiny_models.step_kernels(**case)
    # and per group, as the profiler types them (the embedding is its "data movement")
    assert types == _expected_types(**case)


@pytest.mark.torch
@pytest.mark.parametrize("attention", ["math", "sdpa"])
def test_the_count_holds_in_bf16(attention):
    from labs.core import measure

    case = dict(phase="prefill", batch=2, context=12, attention=attention)
    model, inputs = measure.builtin_case("decoder", device="cpu", **case)
    calls, _types = _measured(model, inputs, precision="bf16")
    assert calls == tiny_models.step_kernels(precision="bf16", **case)


#: Other shapes of the same module: no GQA (no K/V copies), one head (nothing to copy for the
#: bmm or before the O projection), two layers.
OTHER_SHAPES = {
    "mha": dataclasses.replace(tiny_models.TINY_DECODER, kv_heads=8, layers=2),
    "one head": dataclasses.replace(tiny_models.TINY_DECODER, heads=1, kv_heads=1, layers=1,
                                    d_model=64, d_ff=128, vocab=256),
}


@pytest.mark.torch
@pytest.mark.parametrize("shape", list(OTHER_SHAPES))
@pytest.mark.parametrize("phase,batch", [("decode", 2), ("prefill", 1), ("prefill", 2)])
def test_the_count_follows_the_module_s_shape(shape, phase, batch):
    from labs.core.measure.profile import tiny_modules

    config = OTHER_SHAPES[shape]
    case = dict(phase=phase, batch=batch, context=9, attention="math")
    model, inputs = tiny_modules.build("decoder", config=config, **case)
    calls, types = _measured(model, inputs)
    assert calls == tiny_models.step_kernels(config, **case)
    assert types == _expected_types(config=config, **case)


def test_leading_group_is_the_group_with_the_most_time():
    times = {"weight GEMMs": 3e-6, "attention (KV cache)": 5e-6, "norms & elementwise": 1e-6}
    assert tiny_models.leading_group(times) == "attention (KV cache)"
    with pytest.raises(ValueError, match="times"):
        tiny_models.leading_group({})
