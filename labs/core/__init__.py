"""labs.core: the one package every Roofline Lab imports, in four wings.

======================  ==============================================================  =====================
wing                    what lives there                                                 may import
======================  ==============================================================  =====================
``labs.core.physics``   devices, formats, FLOP/byte formulas, roofline maths, models     nothing of the others
``labs.core.ui``        the look: colour tokens, marimo components, plotly figures       physics
``labs.core.measure``   live timing on this machine (torch imported lazily)              physics; ui in ``live``
``labs.core.course``    the course record: ledger, prediction lock, reveal, catalogue,   physics, ui
                        grading, class dashboard, export
======================  ==============================================================  =====================

Notebooks and users import modules by their short names, ``from labs.core import hardware,
quiz, style``: this file is the one place that maps a short name to its wing (``SHORT_NAMES``).
Nothing is imported until it is first used, so a lab that never presses a run button never
loads the measurement code, and the physics works without marimo or plotly installed.
``tests/test_layout.py`` enforces the import directions above by reading the source.
"""

from __future__ import annotations

import importlib

#: Short name -> module. The single map from what notebooks write to where the code lives.
SHORT_NAMES = {
    # physics
    "units": "labs.core.physics.units",
    "hardware": "labs.core.physics.hardware",
    "precision": "labs.core.physics.precision",
    "formulas": "labs.core.physics.formulas",
    "roofline": "labs.core.physics.roofline",
    "models": "labs.core.physics.models",
    "serving": "labs.core.physics.serving",
    "fusion": "labs.core.physics.fusion",
    "precision_study": "labs.core.physics.precision_study",
    "collectives": "labs.core.physics.collectives",
    "sharding": "labs.core.physics.sharding",
    "tiny_models": "labs.core.physics.tiny_models",
    "hierarchy": "labs.core.physics.hierarchy",
    "staircase": "labs.core.physics.staircase",
    "quantization": "labs.core.physics.quantization",
    "reference_machine": "labs.core.physics.reference_machine",
    "deferred": "labs.core.physics.deferred",
    "utilization": "labs.core.physics.utilization",
    # ui
    "tokens": "labs.core.ui.tokens",
    "style": "labs.core.ui.style",
    "figures": "labs.core.ui.figures",
    # measure
    "measure": "labs.core.measure",
    "live": "labs.core.measure.live",
    "comm_bench": "labs.core.measure.comm.bench",
    # course
    "ledger": "labs.core.course.ledger",
    "quiz": "labs.core.course.quiz",
    "reveal": "labs.core.course.quiz.reveal",
    "grading": "labs.core.course.grading",
    "catalogue": "labs.core.course.catalogue",
    "classroom": "labs.core.course.classroom",
    "export": "labs.core.course.export",
}

__all__ = sorted(SHORT_NAMES)


def __getattr__(name: str):
    """Import ``labs.core.<short name>`` on first use (PEP 562)."""
    try:
        target = SHORT_NAMES[name]
    except KeyError:
        raise AttributeError(f"module 'labs.core' has no attribute {name!r}") from None
    module = importlib.import_module(target)
    globals()[name] = module
    return module


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(SHORT_NAMES))
