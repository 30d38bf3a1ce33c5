"""labs.core.measure.profile: a model's pass, operator by operator, on the roofline (Lab 7).

Each module one job; import them by name (``from labs.core.measure.profile import profiler``):

    profiler      profile_model(), builtin_case(), the machine's roofline: the room's entry
    recorder      a TorchDispatchMode that times every aten call of a pass where it runs
    opcost        FLOPs, bytes and operator type of one call
    report        Profile (rows, by_regime, by_op_type, lost_time) and markdown_summary
    guard         the checks around running a model and the profiler's own cost per call
    tiny_modules  the built-in models as PyTorch modules (random weights, nothing to download)
    cli           labs-profile (the one module here that also imports labs.core.ui)

torch is imported lazily, so nothing here costs a lab that never presses a run button.
"""

__all__ = []
