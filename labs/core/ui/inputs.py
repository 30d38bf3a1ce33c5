"""Number boxes for the labs: ``mo.ui.number`` clamps what a student types into its
range in the browser, without a word (0, -5 and 1e9 all became 0.001). :class:`NumberBox` reads
the text with the course's one rule (:mod:`labs.core.ui.numbers`): a refused entry shows a
message (:func:`input_messages`) and the box keeps its last good value.
"""

from __future__ import annotations

from typing import Any

import marimo as mo

from labs.core.physics.units import format_value
from labs.core.ui.numbers import check_number, parse_number, plain  # noqa: F401  (re-exported)

__all__ = ["NumberBox", "check_number", "dropdown_on", "input_messages", "parse_number", "plain"]

class NumberBox(mo.ui.text):
    """A text box for one bounded number (``mo.ui.number`` clamps out-of-range input in the
    browser without a word). ``.value`` is the last accepted number, so a refused entry
    changes nothing downstream; ``.message`` says why it was refused (None when accepted).
    Show the messages with :func:`input_messages`.

    The value is used as soon as it is typed, with no "You are locking …" preview, so an entry
    that could be read two ways ("1,000": one thousand, or 1 with a decimal comma) is refused
    with a message naming both readings, never read the one way that fits the range.
    """

    def __init__(self, value: float, *, lo: float, hi: float, label: str, integer: bool = False,
                 units: str = ""):
        good, error = check_number(value, lo=lo, hi=hi, integer=integer, units=units)
        if error:
            raise ValueError(f"value: {error}")
        self.lo, self.hi, self.integer, self.units = lo, hi, integer, units
        self.last_good, self.message, self.label_text = good, None, label
        super().__init__(value=plain(good), label=label,
                         placeholder=f"{plain(lo)} to {plain(hi)}")

    def _convert_value(self, value: str) -> float | int:
        good, error = check_number(value, lo=self.lo, hi=self.hi, integer=self.integer,
                                   units=self.units, previewed=False)  # no preview: ask
        self.message = error
        if error is None:
            self.last_good = good
        return self.last_good


def input_messages(*widgets: Any) -> mo.Html:
    """A callout naming each refused entry and the value still in use; an empty element when
    all are accepted (safe inside ``mo.vstack``, where None would print "None").

    ``widgets``: NumberBoxes, ``mo.ui.dictionary``/``mo.ui.array`` of them, or lists of them;
    anything else (a test's stand-in) has nothing to report.
    """
    boxes: list[Any] = []
    for w in widgets:
        elements = getattr(w, "elements", None)
        if isinstance(elements, dict):
            boxes += list(elements.values())
        elif isinstance(elements, (list, tuple)):
            boxes += list(elements)
        elif isinstance(w, (list, tuple)):
            boxes += list(w)
        else:
            boxes.append(w)
    lines = [f"**{getattr(b, 'label_text', '')}**: {b.message} The lab keeps the last "
             f"accepted value, {format_value(b.last_good)}."
             for b in boxes if isinstance(getattr(b, "message", None), str)]
    if not lines:
        return mo.Html("")
    return mo.callout(mo.md("\n\n".join(lines)), kind="warn")


def dropdown_on(options: dict[str, Any], key: Any, **kwargs: Any) -> mo.ui.dropdown:
    """A dropdown over ``{label: key}`` options that opens on ``key`` (a lab's ``OPENING``
    entry), not on a label typed into the notebook; an unknown key is a ValueError naming it."""
    label = next((k for k, v in options.items() if v == key), None)
    if label is None:
        raise ValueError(f"key={key!r} is not among the dropdown's options")
    return mo.ui.dropdown(options, value=label, **kwargs)
