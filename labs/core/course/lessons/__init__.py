"""Each lab's prose builders: the sentences, derivations, card lists and tables a lab's cells
show, written as functions of the values they state.

marimo's cvxpy signals example keeps its cells to flow and layout and its ``explainer.py`` and
``layout.py`` beside them; these modules play that part for the labs. The story stays in the
notebook: headings, questions, scenario cards and static prose are markdown cells there. What
lives here is text assembled from computed numbers and the pieces that show them, so that a cell
reads ``_cards = many_chips.datasheet_cards(device, link)`` instead of thirty lines of
f-strings. Physics stays in ``labs.core.physics`` (a derivation is a physics function returning
the value and the arithmetic that gives it); a component two labs use lives in ``ui``.

One module per lab that has such text (Lab 2, short enough, has none), named by its topic,
imported by its full name from the lab's setup cell
(``from labs.core.course.lessons import many_chips``):

* ``memory_wall`` (Lab 1), ``precision_rho`` (Lab 3), ``kernel_fusion`` (Lab 4),
  ``memory_hierarchy`` (Lab 5), ``many_chips`` (Lab 6), ``your_model`` (Lab 7).

Nothing here may reveal an answer by itself: a builder shows what its cell's gate already
allows, and the notebook keeps the gate (``INSTRUMENTS.gate``) in the cell that calls it.
"""

from __future__ import annotations

__all__: list[str] = []  # each lesson module is imported by its full name
