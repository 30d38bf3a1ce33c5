"""The profiler's guards around running a model: meta tensors refused before anything runs, the
first pass's errors said as what happened (and where), and the profiler's own cost per timed
call calibrated on this machine. Part of :mod:`labs.core.measure.profile.profiler`; torch is imported
lazily.
"""

from __future__ import annotations

import statistics
import time

from labs.core.measure.profile import recorder

__all__ = [
    "call_cost", "first_pass", "host_memory_bytes", "measurement_unavailable", "refuse_meta",
    "where"
]


def refuse_meta(model, args, kwargs) -> None:
    """ValueError naming what is on the meta device (shapes without data: a model built under
    ``torch.device("meta")`` or with empty weights), with the way out, before anything runs."""
    import torch

    meta = [f"parameter {n!r}" for n, t in model.named_parameters() if t.is_meta]
    meta += [f"buffer {n!r}" for n, t in model.named_buffers() if t.is_meta]
    where = "the model"
    if not meta:
        from torch.utils._pytree import tree_flatten

        meta = [f"input {i}" for i, t in enumerate(tree_flatten((args, kwargs))[0])
                if isinstance(t, torch.Tensor) and t.is_meta]
        where = "example_inputs"
    if meta:
        way_out = ("Give them real storage first, e.g. model.to_empty(device='cpu') and then "
                   "model.load_state_dict(...) (or build the model without "
                   "torch.device('meta') / init_empty_weights), then profile it."
                   if where == "the model" else
                   "Pass real tensors of the same shapes instead, e.g. "
                   "torch.randn(*shape, device='cpu') (torch.randint(...) for token ids), "
                   "built outside any torch.device('meta') block.")
        raise ValueError(
            f"{where} has {len(meta)} tensor(s) on the meta device ({', '.join(meta[:3])}"
            f"{', ...' if len(meta) > 3 else ''}): they have shapes but no data, so nothing can "
            f"run or be timed. {way_out}")


def where(exc) -> str:
    """'file.py:12 in forward': the innermost frame of the traceback outside torch itself."""
    import os
    import traceback

    import torch

    torch_dir = os.path.dirname(torch.__file__)
    frames = [f for f in traceback.extract_tb(exc.__traceback__)
              if not f.filename.startswith(torch_dir) and "labs/core/measure" not in
              f.filename.replace("\\", "/")]
    if not frames:
        return ""
    f = frames[-1]
    return f" at {os.path.basename(f.filename)}:{f.lineno} in {f.name}"


def first_pass(run, info, model, args, kwargs):
    """The first pass (``run()``, returned). Inputs that cannot be passed to ``forward`` at all
    (wrong number or names) are named as such; an error raised inside the forward says where
    it was raised and that it may be the model's own code, not the inputs."""
    import inspect

    try:
        inspect.signature(model.forward).bind(*args, **kwargs)
    except TypeError as e:
        raise ValueError(f"example_inputs do not fit the model: "
                         f"{type(model).__name__}.forward{inspect.signature(model.forward)}: "
                         f"{e}. Pass a tuple of its positional arguments or a dict of its "
                         "keyword arguments.") from None
    except ValueError:  # a forward without a readable signature: let it run and tell
        pass

    def explain(e, first):
        return ValueError(
            f"The model's forward, model(*example_inputs), raised {type(e).__name__}"
            f"{where(e)} on {info.name}: {first}. "
            "The inputs match forward's signature, so either example_inputs do not fit the "
            "model (their shapes or dtypes are not what it expects) or the model's own code "
            "fails there: call model(*example_inputs) without the profiler to see the whole "
            "traceback.")
    return recorder.run_or_explain(run, explain)


def call_cost(dev, *, calls: int = 100, rounds: int = 5) -> float:
    """Seconds the profiler adds to each call it times, calibrated here: the median time the
    recorder gives a 1-element ``add`` minus the best per-call time of the same ``a + b``
    called directly (a loop of ``calls``, best of ``rounds``); 0 where it comes out negative.
    On a GPU the events time the kernels, not the host's call: 0."""
    if dev.cuda:
        return 0.0
    import torch

    a, b = torch.ones(1), torch.ones(1)

    def loop():
        for _ in range(calls):
            a + b
    timed = []
    for _ in range(rounds):
        timed += [c[1] for c in recorder.recorded(loop, recorder.Clock(dev), None)]
    direct = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        loop()
        direct.append((time.perf_counter() - t0) / calls)
    return max(statistics.median(timed) - min(direct), 0.0)


# --- before a button is pressed (no torch import) ---------------------------------------------

#: The command the no-torch notices give (one command for every notice: measure.device's).
def _install_torch() -> str:
    from labs.core.measure.device import torch_install_advice

    return torch_install_advice(code="`")


def measurement_unavailable(what: str = "This comparison") -> str | None:
    """None when this machine can be measured as far as can be told without importing torch
    (torch is installed, not a browser build); else a sentence for a student: why nothing can
    be measured, the exact command to install torch, and that the labs must be restarted."""
    import importlib.util
    import sys

    if sys.platform == "emscripten":
        return (f"{what} needs a measurement of this machine, and this notebook runs in the "
                "browser (WebAssembly), where torch cannot run. Run the lab locally to "
                "measure on your own machine with roofline-labs.")
    try:
        missing = importlib.util.find_spec("torch") is None
    except (ImportError, ValueError):
        missing = True
    if missing:
        return (f"{what} needs a measurement of this machine, and torch is not installed, so "
                f"nothing can be measured. {_install_torch()} Then stop roofline-labs (Ctrl+C) "
                "and start it again.")
    return None


def host_memory_bytes() -> float | None:
    """This machine's available RAM in bytes (Linux ``MemAvailable``, else total physical
    memory from ``os.sysconf``), read without torch; None where neither can be read."""
    import os

    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return float(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return float(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return None
