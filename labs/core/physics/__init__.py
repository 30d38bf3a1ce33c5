"""The physics wing: what a kernel costs and what a device can do, as pure numbers.

Devices with sourced dense peaks per precision (``hardware``), storage formats (``precision``),
FLOP and compulsory-byte formulas (``formulas``), roofline maths (``roofline``), transformer
models and serving budgets (``models``; Lab 2's design checker in ``serving``, re-exported by
models), the lab-specific physics of precision (``precision_study``) and fusion
(``fusion``; flash attention's tiles and the bytes each memory level serves in ``flash``),
and many chips (Lab 6): links and collective costs (``collectives``), sharded
matmuls, tensor-parallel serving and data-parallel training (``sharding``); ``units`` formats
numbers for people and ``validate`` checks arguments (measure uses it too).

May import: nothing else of ``labs.core`` (and never marimo or plotly; numpy only). Everything
here is unit-tested against hand-derived values.
"""

__all__ = []
