"""The ui wing: how the labs look.

Colour tokens and the plotly template (``tokens``), marimo components such as cards, callouts
and the lab header (``style``), and plotly figure builders such as the roofline (``figures``,
which re-exports the charts of ``charts`` and Lab 6's ``commcharts``).
No lab writes inline HTML or builds a roofline by hand; it calls these.

May import: ``labs.core.physics`` (marimo and plotly too).
"""

__all__ = []
