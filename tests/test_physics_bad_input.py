"""Bad input to the physics API: every public function and method of the physics wing,
found by introspection (not a hand list), fed values of the wrong sign, type, size and
finiteness, raises ValueError or KeyError whose message names the argument, or (for a value
that is legitimately valid there, such as 0 flops or None for an optional argument) returns.
Nothing else: no OverflowError, TypeError, AttributeError, no silent acceptance of an empty
name, and no negative counts."""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import pkgutil
import re
import types
import typing

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from labs.core import physics
from labs.core import formulas
from labs.core import fusion
from labs.core import hardware, models
from labs.core import hierarchy
from labs.core import precision_study
from labs.core import roofline
from labs.core import staircase
from labs.core.physics import collectives
from labs.core.physics import misconceptions
from labs.core.physics import sharding
from labs.core.physics import tiny_models

# --- the public API, discovered -----------------------------------------------------------------

#: ``validate`` is the checking itself: its functions check ``value`` against the argument
#: ``name`` their caller passes (a literal in the code), and tests/test_physics_limits.py
#: tests them directly.
NOT_SWEPT = {"validate"}
MODULES = [importlib.import_module(f"labs.core.physics.{m.name}")
           for m in pkgutil.iter_modules(physics.__path__)
           if not m.name.startswith("_") and m.name not in NOT_SWEPT]


_HIER = hierarchy.gpu_hierarchy("h100-sxm", "bf16")  # Lab 5's levels (shared memory, L2, HBM)
_PLATEAUS = [staircase.Plateau(1e4, 1e5, 100.0, 0.05, 4, "L2"), staircase.Plateau(1e7, 1e8, 20.0, 0.05, 4, "DRAM")]


def _samples() -> dict:
    """One valid instance of every public class whose methods take arguments."""
    cost = formulas.gemm(64, 64, 64)
    return {
        formulas.Cost: cost, hardware.Device: hardware.get("h100-sxm"),
        misconceptions.Band: misconceptions.Band("lab99.sample", 2.0, 1.5, (misconceptions.WrongModel("a slip", 4.0),)),
        models.ModelConfig: models.get("llama-3-8b"),
        roofline.Derating: roofline.achievable("h100-sxm"),
        sharding.ShardedMatmul: sharding.sharded_matmul(16, 64, 64, 8),
        collectives.Path: collectives.collective_path("nvlink4", 16), collectives.SwitchAllReduce: collectives.NVLS_H100,
        hierarchy.Hierarchy: _HIER, hierarchy.HierarchyPoint: hierarchy.place(hierarchy.gemm_kernel(64, 64, 64, "bf16",
                                                                        tile=16), _HIER),
    }


def _defined_in(obj, mod) -> bool:
    """Whether ``mod`` defines ``obj``: in the module itself or, for a package face
    (``hierarchy``), in one of its private modules."""
    where = getattr(obj, "__module__", None) or ""
    return where == mod.__name__ or where.startswith(mod.__name__ + ".")


def _callables() -> list[tuple[str, object]]:
    out = []
    samples = _samples()
    for mod in MODULES:
        short = mod.__name__.rsplit(".", 1)[1]
        for name, obj in sorted(vars(mod).items()):
            if name.startswith("_"):
                continue
            if inspect.isfunction(obj) and _defined_in(obj, mod):
                out.append((f"{short}.{name}", obj))
            elif inspect.isclass(obj) and _defined_in(obj, mod):
                for mname, meth in sorted(vars(obj).items()):
                    if mname.startswith("_") or not inspect.isfunction(meth):
                        continue
                    if len(inspect.signature(meth).parameters) <= 1:
                        continue  # no argument to get wrong
                    inst = samples.get(obj)
                    assert inst is not None, f"add a sample {obj.__name__} to test its .{mname}"
                    out.append((f"{short}.{obj.__name__}.{mname}", getattr(inst, mname)))
    return out


CALLABLES = _callables()

# --- valid arguments: by parameter name, overridden per function where a name means more -------

_SHAPE = {"m": 64, "n": 64, "k": 64}
VALID = {
    "significant": 3,  # figures a number is written to (units.format_value)
    "m": 64, "n": 64, "k": 64, "tokens": 16, "in_features": 64, "out_features": 32,
    "batch": 2, "heads": 8, "seq_q": 16, "seq_kv": 32, "head_dim": 64, "kv_heads": 2,
    "d_model": 64, "d_ff": 128, "rows": 8, "cols": 16, "n_elements": 1024, "n_ops": 4,
    "n_kernels": 2, "block_q": 64, "block_kv": 64, "seq_len": 128, "tile": 16,
    "tile_m": 128, "tile_n": 128, "bk": 32, "stages": 3, "register_file_bytes": 262144.0,
    "precision": "bf16", "weight_precision": "bf16", "out_precision": "bf16",
    "kv_precision": "bf16", "act_precision": "bf16", "activation_precision": "bf16",
    "compute": "bf16", "storage": "bf16", "before": "fp32", "after": "fp16",
    "compute_for_weight_only": "bf16", "key": "h100-sxm", "hw": "h100-sxm",
    "arg": "precision", "compute_arg": "compute", "weight_arg": "weight_precision",
    "activation_arg": "activation_precision",
    "model": "llama-3-8b", "phase": "decode", "target": "datacenter", "op": "gemm",
    "op_name": "Q projection", "device_class": "datacenter", "what": "bandwidth_gbs",
    "name": "a name", "source": "a source", "memory_type": "HBM", "fused": False,
    "bias": False, "gated": False, "backward": False, "input_requires_grad": True,
    "causal": False, "repeat_kv": False, "fused_attention": True, "replace": False,
    "ai": 10.0, "ai_hbm": 10.0, "ai_onchip": 10.0, "flops": 1e9, "bytes_": 1e6,
    "launches": 1, "launch_overhead_us": 5.0, "bytes_per_element": 2.0, "weight_bytes": 1.0,
    "out_bytes": 2.0, "achieved_tflops": 10.0, "achieved_gbs": 100.0, "footprint_bytes": 1e6,
    "measured_bandwidth_gbs": 1000.0, "measured": 2.0, "predicted": 1.0, "times": 3,
    "usable_fraction": 0.9, "threshold": 1.05, "within_factor": 1.0, "merge_within": 0.05,
    "label_gap_decades": 0.3, "iterations": 10, "prefill_tokens": 64,
    "bandwidth_gbs": 100.0, "memory_gb": 16.0, "vector_tflops": 2.0, "peaks": {"fp32": 2.0},
    "measured_peaks": {"bf16": 500.0}, "measured_s": {"fp16": 1e-5},
    "shape": _SHAPE, "storages": ["fp16", "fp8"], "precisions": ["fp16", "bf16"],
    "ops": ["layernorm", "gelu", "dropout", "residual_add"], "groups": None, "groups_before": None,
    "hws": ["h100-sxm", "a100-sxm-80gb"],
    "groups_after": [[0, 1, 2, 3]], "count_masks": True, "skip_is_input": True,
    "score_precision": "fp32",
    "score_copies": 2, "item_id": "lab04.fusion_speedup", "sizes": [10.0, 1000.0], "candidates": [16, 32],
    "device_classes": ("datacenter",), "costs": [formulas.gemm(8, 8, 8)], "cost": formulas.gemm(8, 8, 8),
    "weights": None, "derating": roofline.SPEC, "value": 3.0, "fmt": None, "seconds": 1e-3,
    "upper": None, "exc": ValueError("x"), "timing": fusion.chain_timing(1000, "h100-sxm"),
    "levers": roofline.ai_levers(16, 8192, 8192, "h100-sxm", "bf16"),
    "device": hardware.custom("probe", bandwidth_gbs=10, peaks={"fp32": 1}, memory_gb=1),
    # Lab 5 (hierarchy, staircase, quantization)
    "kind": "gpu", "levels": _HIER.levels, "peak_tflops": 10.0, "hier": _HIER,
    "kernel": hierarchy.gemm_kernel(64, 64, 64, "bf16", tile=16), "level": _HIER.levels[-1],
    "register_tile": 4, "max_tile": 1024, "tiles": [16, 32], "memory_bytes": 1e9,
    "caches": {"L2": 2.0**20}, "plateaus": _PLATEAUS, "memory_name": "DRAM",
    "gbs": [50.0, 10.0], "spreads": [0.1, 0.1], "min_points": 3, "min_step": 0.15,
    "penalty": 2.0, "noise_floor": 0.03, "log_gbs": [1.0, 2.0, 2.1], "floor": 0.03,
    "lower": "DRAM", "units": 4, "n_from": 1408, "n_to": 1536, "throughputs": [5.0, 6.0],
    "per_tile": False, "simd_fp32_lanes": 8, "nbytes": 1e6, "overhead_s": 5e-6,
    "big_bytes": 2.0**20, "small_bytes": 2.0**10, "binary": False,
    "ctas": 108, "tile_from": 16, "tile_to": 32, "cluster": 2, "arch": "hopper",
    # Lab 6 (collectives, sharding)
    "link": "nvlink4", "algorithm": "ring", "link_gbs": 100.0, "latency_s": 1e-6,
    "one_way_gbs": 50.0, "latency_us": 1.0, "n_out": 64, "mm": sharding.sharded_matmul(16, 64, 64, 8),
    "model_or_params": "llama-3-8b", "tokens_per_chip": 1024, "grad_bytes": 2.0,
    "overlap": True, "degrees": [1, 2], "nics_per_node": 8, "nic": "ib-ndr",
    "achievable": False, "matmuls": 1,
    # Lab 1 (a profiler's reading), Lab 5 (the library's GEMM, this machine's hierarchy)
    "flop_util": 0.3, "bandwidth_util": 0.9, "ratio": 0.5, "multicast": True, "gpu": False,
    "registry_key": None, "array": True,
    # Lab 1 (the crossover's stated assumptions)
    "operands": 3, "flops_per_mac": 2, "sparse": False,
    # Lab 2 (serving)
    "capacity_bytes": 10e9, "fixed_bytes": 4e9, "per_sequence_bytes": 1e9,
    # Lab 4 (flash attention's K and V in a cache the SMs share)
    "sharers": 132, "cache_bytes": 50e6, "last": "and",
    # Lab 7 (tiny_models)
    "config": tiny_models.TINY_DECODER, "context": 64, "attention": "math", "block": "decoder",
    "change": "batch", "base": {"phase": "decode", "batch": 1, "context": 64,
                                "precision": "fp32", "attention": "math"},
}
OVERRIDES = {
    "deferred.is_ndarray": {"x": 1.0},  # any object: a float is not an array
    "precision_study.regime_change": {"before": "compute-bound", "after": "memory-bound"},
    "formulas.elementwise": {"op": "gelu"},
    # the formulas' activations default to fp16: a stated compute must follow from them
    "formulas.gemm": {"compute": "fp16"}, "formulas.gemv": {"compute": "fp16"},
    "formulas.linear": {"compute": "fp16"}, "formulas.mlp": {"compute": "fp16"},
    "formulas.attention": {"compute": "fp16"},
    "formulas.total": {"name": "total"},
    "precision.get": {"key": "fp16"}, "precision.bits": {"key": "fp16"},
    "precision.bytes_per_element": {"key": "fp16"},
    "precision.matmul_compute": {"weights": "int8", "activations": "bf16"},
    "precision.explain_compute": {"weights": "int8", "activations": "bf16", "compute": "bf16"},
    "models.get": {"key": "llama-3-8b"}, "precision.i_bit": {"compute": "fp16"},
    "weight_only.decode_quant_table": {"storages": ["fp16", "fp8"]},
    "weight_only.merge_measured": {
        "rows": precision_study.decode_quant_table(64, 64, "h100-sxm", ["fp16", "fp8"])},
    "precision_study.roof_precisions": {"rows": precision_study.study("gemm", _SHAPE, "h100-sxm", ["fp16"])},
    "precision_study.roofline_view": {"rows": precision_study.study("gemm", _SHAPE, "h100-sxm", ["fp16"])},
    "precision_study.row_label": {"row": precision_study.study("gemm", _SHAPE, "h100-sxm", ["fp16"])[0]},
    "precision_study.decode_gemv_shapes": {"model": "llama-3-8b"},
    "precision_study.study": {"weights": None},
    "hardware.register": {"device": hardware.custom("probe-reg", bandwidth_gbs=10,
                                                    peaks={"fp32": 1}, memory_gb=1),
                          "replace": True},
    "hardware.unregister": {"key": "probe-reg"},
    "hardware.Device.source": {"what": "bandwidth_gbs"},
    "hardware.Device.note": {"what": "fp32"},
    "models.dominant_group": {"phase": "decode"},
    "fusion.attention_memory_terms": {"fused": False},
    "flash.hierarchical_attainable": {"precision": "fp16"},
    "units.format_bytes": {"n": 1e6}, "units.rate_unit": {"precision": "int8"},
    "units.intensity_unit": {"precision": "int8"},
    "roofline.Derating.compute_for": {"precision": "bf16"},
    "hierarchy.Hierarchy.level": {"level": "L2"}, "hierarchy.HierarchyPoint.use": {"level": "L2"},
    "hierarchy.with_bandwidths": {"measured": {"L2": 5000.0}},
    "hierarchy.measured_hierarchy": {"levels": {"L2": (2.0**20, 100.0), "DRAM": (1e9, 20.0)},
                                     "kind": "cpu"},
    "hierarchy.from_plateaus": {"kind": "cpu"},
    "hierarchy.gemm_kernel": {"tile_n": 16, "cluster": 2},
    "quantization.fit_call_time": {"sizes": [256, 4096, 65536], "seconds": [2e-6, 2.1e-6, 3e-6]},
    "hierarchy.library_gemm_kernel": {"m": 512, "n": 512, "k": 512},
    "hierarchy.launch_failure_status": {"error": hierarchy.LaunchError("too big a tile")},
    "hierarchy.Hierarchy.ceiling_tflops": {"compute": "vector"},
    "staircase.plateau_ratio": {"upper": "L2"},
    "collectives.op_name": {"op": "all-reduce", "arg": "op"},
    "collectives.algorithm_name": {"op": "all-reduce"},
    "formulas.elementwise_op": {"op": "gelu"},
    "hierarchy.kernel_at_size": {"name": hierarchy.SIZED_KERNELS[0], "n": 64, "block": 64},
    "hierarchy.measured_machine": {"device": "this CPU", "memory_bytes": 1e9,
                                   "peak_tflops": 1.0, "memory_name": "DRAM"},
    "units.format_bandwidth": {"gbs": 605.0},
    "utilization.reading": {"device": "h100-sxm"},
    "tiny_models.leading_group": {"times": {"attention": 2e-6, "weight GEMMs": 5e-6}},
    "staircase.ratio_separation": {"upper": "L2", "tolerance": 1.5, "margin": 1.05},
    # a collective, not a kernel, is the op of Lab 6's functions
    **{f"collectives.{f}": {"op": "all-reduce"} for f in (
        "bus_factor", "bus_factor_derivation", "latency_steps", "bandwidth_factor", "collective_time", "link_time",
        "latency_bandwidth_split", "crossover_bytes", "busbw_gbs", "Path.latency",
        "Path.seconds_per_byte", "Path.time", "Path.bus_gbs", "Path.binding_level",
        "Path.bandwidth_time", "Path.crossover_bytes")},
    **{f"sharding.{f}": {"op": "all-reduce"} for f in (
        "sharded_matmul", "tp_critical_shard", "comm_bound_tokens")},
    "sharding.tp_diagnosis": {"rows": sharding.tp_scaling("llama-3-8b", "h100-sxm", "nvlink4", [1, 2],
                                                    batch=1, seq_len=64), "n": 2},
}
#: Keyword arguments a function needs but has no parameter for (``**kwargs`` passed through).
EXTRA = {"models.dominant_group": {"batch": 1, "seq_len": 64},
         **{f"sharding.{f}": {"batch": 1, "seq_len": 64} for f in (
             "tp_scaling", "best_tp_degree", "first_comm_bound_degree")}}

#: (function, parameter) pairs where any real number is valid input (formatters show it).
ANY_NUMBER = {("units.format_bytes", "n"), ("units.format_seconds", "seconds"),
              ("units.format_bandwidth", "gbs"),
              ("units.format_seconds", "upper"), ("units.format_flops", "flops")}
#: Parameters not fed here, and why.
SKIP = {("units.format_value", "value"),  # formats anything: Any is its contract
        ("units.error_message", "exc"),  # takes any exception object
        # how far any answer is off a band's reference: inf where no ratio exists is its
        # contract (a grader's comparison, like quiz.within_factor)
        ("misconceptions.Band.ratio", "value"),
        # any item id: one without a band (a course's own lab) is graded with the default
        ("misconceptions.tolerance", "item_id"),
        # a question about any object (is it a numpy array?) asked without importing numpy
        ("deferred.is_ndarray", "x")}


#: Parameters that take any non-empty text (labels, and the argument names messages use).
FREE_TEXT = ("name", "source", "memory_type", "arg", "compute_arg", "weight_arg",
             "activation_arg", ("hardware.custom", "key"), ("hardware.unregister", "key"),
             ("roofline.require_fits", "what"), "memory_name", ("hierarchy.hierarchy", "key"),
             ("hierarchy.measured_hierarchy", "key"), ("hierarchy.from_plateaus", "key"),
             ("hierarchy.measured_machine", "device"))
#: Parameters that take a list of numbers (vectorised), where [1] is valid.
LISTS_OF_NUMBERS = {("roofline.attainable_tflops", "ai"), ("roofline.rho", "ai"),
                    ("roofline.check_ai", "ai"),
                    ("flash.onchip_roof_tflops", "ai"), ("fusion.chain_time_curve", "sizes"),
                    ("flash.largest_square_tile", "candidates"),
                    ("hierarchy.level_roof_tflops", "ai"), ("hierarchy.tile_sweep", "tiles"),
                    ("hierarchy.launchable_tiles", "tiles"),
                    ("quantization.efficiency_curve", "sizes"), ("staircase.noise_level", "log_gbs"),
                    # tensor-parallel degrees: 1 is a valid degree (one GPU, no collective)
                    ("sharding.tp_scaling", "degrees"), ("sharding.best_tp_degree", "degrees"),
                    ("sharding.first_comm_bound_degree", "degrees")}
#: Mappings of free names to sizes, where any non-empty names with sizes > 0 are valid input,
#: and so is an empty one (the OS names its caches, or reports none).
FREE_SIZE_MAPPINGS = {("staircase.name_plateaus", "caches"), ("staircase.levels", "caches"),
                      ("hierarchy.from_plateaus", "caches"),
                      ("hierarchy.measured_machine", "caches"), ("staircase.check_caches", "caches"),
                      ("tiny_models.leading_group", "times")}
#: None is meaningful here (one kernel per op) although the argument has no default.
NONE_OK = {("fusion.fusion_speedup", "groups_after"),
           # a machine that does not report its memory (UNREPORTED_MEMORY_BYTES stands in)
           ("hierarchy.measured_machine", "memory_bytes"),
           ("fusion.launch_saving_speedup", "groups_after")}


@pytest.fixture(scope="module", autouse=True)
def _no_probe_left_registered():
    yield
    hardware.unregister("probe-reg")


def _valid(qual: str, param: str):
    o = OVERRIDES.get(qual, {})
    return o[param] if param in o else VALID[param]


def _params(fn) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(fn).parameters.values()
            if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]


def _call(qual, fn, **kw):
    if qual == "hardware.register":
        hardware.unregister("probe-reg")  # each call registers it afresh
    pos, kws = [], dict(EXTRA.get(qual, {}))
    for p in _params(fn):
        if p.name not in kw and p.default is not p.empty:
            continue
        v = kw[p.name] if p.name in kw else _valid(qual, p.name)
        if p.kind == p.KEYWORD_ONLY:
            kws[p.name] = v
        else:
            if len(pos) != _index(fn, p.name):  # an earlier optional one was skipped
                kws[p.name] = v
            else:
                pos.append(v)
    return fn(*pos, **kws)


def _index(fn, name):
    return [p.name for p in _params(fn)].index(name)


#: What the callables without a return annotation return: a float for one AI, an array for
#: an array of them (vectorised).
RETURNS = {q: float | np.ndarray for q in ("roofline.attainable_tflops", "roofline.rho",
                                          "roofline.check_ai",
                                          "flash.onchip_roof_tflops",
                                          "hierarchy.level_roof_tflops")}


def _return_hint(qual, fn):
    """The declared return type: the annotation, else RETURNS (a new public callable needs one)."""
    hint = typing.get_type_hints(fn).get("return", inspect.Signature.empty)
    if hint is inspect.Signature.empty:
        assert qual in RETURNS, f"{qual} has no return annotation: annotate it or add it to RETURNS"
        return RETURNS[qual]
    return hint


def _conforms(value, hint) -> bool:
    """Does ``value`` have the declared type ``hint`` (unions, list[X], tuple[X, ...],
    dict[K, V] checked element by element; an int where float is declared, PEP 484)? A float
    that is NaN conforms to nothing: a valid call must not return one."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is typing.Any:
        return True
    if hint is None or hint is type(None):
        return value is None
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, h) for h in args)
    if hint is float:
        return (isinstance(value, (int, float, np.integer, np.floating))
                and not isinstance(value, bool) and not math.isnan(value))
    if hint is int:
        return isinstance(value, (int, np.integer)) and not isinstance(value, bool)
    if origin is list:
        return isinstance(value, list) and all(_conforms(v, args[0]) for v in value)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return isinstance(value, tuple) and all(_conforms(v, args[0]) for v in value)
        return isinstance(value, tuple) and len(value) == len(args) and all(
            _conforms(v, h) for v, h in zip(value, args))
    if origin is dict:
        return isinstance(value, dict) and all(
            _conforms(k, args[0]) and _conforms(v, args[1]) for k, v in value.items())
    if hint is np.ndarray:
        return isinstance(value, np.ndarray) and not np.isnan(value).any()
    assert isinstance(hint, type), f"_conforms does not know the hint {hint!r}"
    return isinstance(value, hint)


# every callable runs with its valid arguments (else the bad-value test would prove nothing) and
# returns what it declares (this test passed unless an exception escaped)
@pytest.mark.parametrize("qual,fn", CALLABLES, ids=[q for q, _ in CALLABLES])
def test_every_public_callable_runs_with_valid_arguments(qual, fn):
    hint = _return_hint(qual, fn)
    got = _call(qual, fn)
    assert _conforms(got, hint), f"{qual} returned {got!r}, declared {hint}"
    for p in _params(fn):  # and with each optional argument given explicitly
        if (qual, p.name) not in SKIP:
            got = _call(qual, fn, **{p.name: _valid(qual, p.name)})
            assert _conforms(got, hint), f"{qual}({p.name}=...) returned {got!r}, declared {hint}"


def test_the_return_check_refuses_what_does_not_conform():
    """_conforms itself: a wrong type, a NaN, a wrong element or length, a None, are refused."""
    assert _conforms(3, float) and _conforms(np.float64(2.5), float | None)
    assert not _conforms(float("nan"), float) and not _conforms("3", float)
    assert not _conforms(True, int) and not _conforms(None, float)
    assert _conforms([1.0, 2], list[float]) and not _conforms([1.0, "x"], list[float])
    assert not _conforms((1.0,), tuple[float, float]) and _conforms((1.0, 2.0), tuple[float, ...])
    assert not _conforms({"a": "b"}, dict[str, float]) and _conforms(None, hardware.Device | None)
    assert not _conforms(np.array([1.0, np.nan]), float | np.ndarray)


# --- bad values --------------------------------------------------------------------------------

class _Thing:
    def __repr__(self):
        return "<thing>"


def _defined_names() -> frozenset:
    """Every string constant in the physics wing's source, lower case. Hypothesis draws text
    from a project's own constants (and shrinks 'mxfp4' to 'MXFP4'), so random text can be a
    name the wing defines and valid where it is fed ('ring' as an algorithm); unknown names are
    still fed ("zz-not-a-thing", random text)."""
    names = set()
    for mod in MODULES:
        for node in ast.walk(ast.parse(inspect.getsource(mod))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                names.add(node.value.strip().lower())
    return frozenset(names)


_DEFINED_NAMES = _defined_names()

BAD = st.one_of(
    st.integers(max_value=-1), st.floats(max_value=-1e-9, allow_nan=False),
    st.sampled_from([0, 0.0, float("nan"), float("inf"), -float("inf"), 10**400, -10**400,
                     1e308 * 10, "", " ", "zz-not-a-thing", None, True, _Thing(), [1], (),
                     {}, {"zz": 1}, [[5, 0]], ["zz"], b"fp16"]),
    st.text(max_size=6).filter(lambda s: s.strip().lower() not in _DEFINED_NAMES),
)

ARGS = [(q, fn, p.name) for q, fn in CALLABLES for p in _params(fn)
        if (q, p.name) not in SKIP]


def _names(msg: str, param: str) -> bool:
    return re.search(rf"(?<![\w]){re.escape(param)}(?![\w])", msg) is not None


def _same(a, b) -> bool:
    try:
        return type(a) is type(b) and bool(a == b)
    except Exception:  # noqa: BLE001  (numpy arrays and friends)
        return False


def _acceptable_success(qual, fn, param, value) -> bool:
    """May this value be accepted silently? Only where it is legitimately valid."""
    default = inspect.signature(fn).parameters[param].default
    if value is None:
        return default is None or (qual, param) in NONE_OK
    if (qual, param) == ("units.format_value", "fmt") and isinstance(value, str):
        return True  # "" and " " are valid format specs (str(), and a space for the sign)
    if (qual, param) in LISTS_OF_NUMBERS and isinstance(value, list):
        return all(isinstance(v, (int, float)) and v >= 1 for v in value)
    if (qual, param) in ANY_NUMBER:
        return isinstance(value, (int, float)) and not isinstance(value, bool) and (
            not isinstance(value, int) or abs(value) < 10**300)
    if isinstance(_valid(qual, param), bool) or isinstance(default, bool):
        return isinstance(value, (bool, int)) and not isinstance(value, float)  # flags: 0/1
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0:
        return True  # zero is valid for some quantities (0 flops, 0 launches): not judged
    if isinstance(value, str) and value and value.strip():
        valid = _valid(qual, param)
        # free text (labels, names, sources) takes any non-empty string
        return isinstance(valid, str) and (param in FREE_TEXT or (qual, param) in FREE_TEXT)
    if (qual, param) in FREE_SIZE_MAPPINGS and isinstance(value, dict):
        return all(isinstance(k, str) and k.strip() and isinstance(v, (int, float))
                   and not isinstance(v, bool) and 0 < v < math.inf for k, v in value.items())
    if param in ("rows", "measured_s", "precisions") and isinstance(
            value, (list, tuple, dict)) and not value:
        return True  # an empty table (nothing selected, nothing measured) is a valid table
    if param in ("device_classes",) and isinstance(value, (list, tuple)):
        return False
    return False


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arg=st.sampled_from(ARGS), value=BAD)
def test_bad_values_are_refused_with_a_message_naming_the_argument(arg, value):
    qual, fn, param = arg
    if _same(value, _valid(qual, param)):
        return
    try:
        result = _call(qual, fn, **{param: value})
    except (ValueError, KeyError) as exc:
        msg = str(exc.args[0]) if exc.args else str(exc)
        assert _names(msg, param), f"{qual}({param}={value!r}): {type(exc).__name__}: {msg}"
        return
    except Exception as exc:  # noqa: BLE001  (anything else is the bug this test is for)
        pytest.fail(f"{qual}({param}={value!r}) raised {type(exc).__name__}: {exc}")
    assert _acceptable_success(qual, fn, param, value), \
        f"{qual}({param}={value!r}) accepted it silently, returning {result!r:.200}"


# --- the cases the issue names -----------------------------------------------------------------

def test_the_named_cases():
    with pytest.raises(ValueError, match=r"\bbatch\b"):
        formulas.score_elements(-1, 1, 1, 1)
    for bad in (-1, float("nan"), float("inf")):
        with pytest.raises(ValueError, match=r"\btimes\b"):
            formulas.gemm(4, 4, 4).scaled(bad)
    with pytest.raises(KeyError, match=r"\bdevice_class\b"):
        hardware.by_class("x")
    with pytest.raises(ValueError, match=r"\btokens\b"):
        formulas.linear(0, 4, 4)
    with pytest.raises(ValueError, match=r"\bm\b"):
        formulas.gemm(10**400, 4, 4)
    with pytest.raises((ValueError, KeyError), match=r"\bweight_precision\b"):
        formulas.gemm(4, 4, 4, weight_precision="")
    with pytest.raises((ValueError, KeyError), match=r"\bkv_precision\b"):
        models.step_bound("llama-3-8b", "h100-sxm", "decode", batch=1, seq_len=8,
                          kv_precision="fp61")
    with pytest.raises(ValueError, match=r"\bhw\b"):
        roofline.ridge_point(None, "fp16")
    assert math.isfinite(formulas.gemm(4, 4, 4).scaled(2).flops)


def test_lab_6_and_7_cases_that_named_another_argument_or_passed_silently():
    from labs.core.physics import collectives
    with pytest.raises(ValueError, match=r"\bcontext\b"):  # said seq_len
        tiny_models.time_by_group("h100-sxm", context=0)
    with pytest.raises(KeyError, match=r"\bconfig\b"):  # said model
        tiny_models.step_ops("zz")
    with pytest.raises(ValueError, match=r"\bmodel_or_params\b"):  # said params
        sharding.dp_step(-1, 8, 1024, "h100-sxm", "bf16", "nvlink4")
    with pytest.raises(ValueError, match=r"\boverlap\b"):  # bool("no") was True
        sharding.dp_step("llama-3-8b", 8, 1024, "h100-sxm", "bf16", "nvlink4", overlap="no")
    with pytest.raises(ValueError, match=r"\bstorage\b"):  # "" fell back to precision
        sharding.tp_critical_shard("h100-sxm", "bf16", "nvlink4", 8, storage="")
    with pytest.raises(ValueError, match=r"\bsource\b"):  # None was stored as the source
        collectives.custom_link("mine", 10, 1, source=None)
    with pytest.raises(ValueError, match=r"\bop\b"):  # str(None) was looked up
        collectives.bus_factor(None, 8)
    with pytest.raises(KeyError, match=r"\bbase\b"):  # an unknown setting was carried along
        tiny_models.changed("batch", {"batchsize": 4})
    with pytest.raises(ValueError, match=r"\bbase\b.*\bbatch\b"):
        tiny_models.predicted_ratio("compile", "h100-sxm", {"batch": -1})
    assert tiny_models.predicted_ratio("compile", "h100-sxm", {"batch": 1}) is None  # valid: no answer


#: The same property over a fixed set of bad values for every argument (hypothesis samples;
#: this covers every (callable, argument) pair each run).
FIXED_BAD = [-1, -2.5, 0, float("nan"), float("inf"), -float("inf"), 10**400, -10**400, "", " ",
             "zz-not-a-thing", None, True, _Thing(), [1], (), {}, {"zz": 1}, [[5, 0]], ["zz"],
             b"fp16"]


def test_every_argument_refuses_every_kind_of_bad_value():
    failures = []
    for arg in ARGS:
        for value in FIXED_BAD:
            try:
                test_bad_values_are_refused_with_a_message_naming_the_argument.hypothesis \
                    .inner_test(arg=arg, value=value)
            except BaseException as exc:  # noqa: BLE001  (collect them all, report at once)
                failures.append(str(exc).splitlines()[0][:200])
    assert not failures, f"{len(failures)} bad calls:\n" + "\n".join(failures[:40])
