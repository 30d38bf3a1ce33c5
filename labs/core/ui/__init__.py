"""The ui wing: how the labs look.

Colour tokens and the plotly template (``tokens``), marimo components such as cards, callouts
and the lab header (``style``), the number boxes (``inputs``, read by the one rule in
``numbers``), and the plotly figure builders in one room, ``figures/`` (a module per thing
drawn: ``roofline``, ``charts``, ``collectives``, ``hierarchy``, ``profile``; its face
exports every builder, so labs call ``figures.<builder>``).
No lab writes inline HTML or builds a roofline by hand; it calls these.

May import: ``labs.core.physics`` (marimo and plotly too).
"""

__all__ = []
