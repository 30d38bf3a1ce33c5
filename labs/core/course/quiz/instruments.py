"""Instruments open on what they reveal: the one gating rule of every lab (LABS_SPEC §3).

An *instrument* is any view that computes from inputs the student chooses (an explorer, a
figure a slider moves, a measure button, a download of results). Gating it setting by setting
("close the explorer on the question's shape, and its transpose, and fp16 ...") never ends: a
general explorer of AI, ridge and regime answers every later question about AI, ridge and
regime. So a lab declares, once, in its constants cell:

- what each prediction's answer follows from (``answers``: item id -> quantities), and
- what each instrument shows (``instruments``: name -> quantities),

and an instrument is open only when every prediction whose quantities it shows is locked,
whatever order the student locks them in::

    INSTRUMENTS = quiz.Instruments(
        answers={"lab01.which_roof": ["regime:gemm"], "lab01.crossover_n": ["count:crossover",
                 "regime:gemm"]},
        instruments={"explorer": ["intensity", "regime:gemm"]})
    ...
    ...
    _wait = INSTRUMENTS.gate("explorer", which_roof_prediction, crossover_prediction)
    mo.stop(_wait is not None, _wait)                                          # the instrument

The gate is given the prediction variables of the predictions the instrument waits for
(:meth:`Instruments.answered_by`), and only those, so that its cell re-runs when one of them
is locked and never when another is: a measure button below it keeps its result while the
student locks later predictions. A prediction the lab forgets to pass keeps the instrument
closed (it never counts as locked), and ``tests/test_instruments.py`` says which one.

A quantity is ``"dimension:case"`` (``"time:allreduce"``, ``"regime:gemm"``) or a bare
dimension (``"time"``: any duration). Two quantities meet when they are equal, or when they
share a dimension and one of them is bare. The dimensions are :data:`DIMENSIONS`; a test reads
what each instrument renders, maps the numbers and verdicts it shows to dimensions and checks
that the instrument declares them (``tests/test_instruments.py``). The notice names the
predictions to lock, never a setting that would get around the gate. No marimo is needed
except by :meth:`Instruments.gate`, which returns the notice as a marimo output.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

__all__ = ["DIMENSIONS", "Instruments", "locked_items", "meets"]

#: What a quantity can be, by how a student reads it on the page.
DIMENSIONS = {
    "intensity": "an arithmetic intensity or a ridge point (FLOP/B)",
    "regime": "which roof or level binds (memory-, compute-, overhead-, link-bound ...)",
    "time": "a duration (ns, µs, ms, s)",
    "ratio": "a speedup, a byte ratio, ρ or another ratio (×)",
    "share": "a share of a whole (%)",
    "bytes": "a size in bytes (memory, traffic, a budget)",
    "bandwidth": "bytes per second (GB/s)",
    "throughput": "operations per second (TFLOP/s, TOPS)",
    "count": "a count where something changes: N*, a batch, a sequence length, a tile",
    "choice": "which option of a multiple-choice question holds (a device, a level, a type)",
}


def _split(quantity: str) -> tuple[str, str | None]:
    dimension, _, case = quantity.partition(":")
    return dimension, (case or None)


def _quantity(quantity: Any, where: str) -> str:
    if not isinstance(quantity, str) or not quantity.strip():
        raise ValueError(f"{where}: a quantity is a text such as 'time:allreduce', got "
                         f"{quantity!r}")
    dimension, case = _split(quantity.strip())
    if dimension not in DIMENSIONS:
        raise ValueError(f"{where}: {quantity!r} has no known dimension (one of "
                         f"{', '.join(sorted(DIMENSIONS))}, optionally ':case')")
    return dimension if case is None else f"{dimension}:{case}"


def meets(a: str, b: str) -> bool:
    """Whether quantities ``a`` and ``b`` are the same thing: equal, or the same dimension
    with one of them bare (``"time"`` meets ``"time:allreduce"``)."""
    (da, ca), (db, cb) = _split(a), _split(b)
    return da == db and (ca is None or cb is None or ca == cb)


def locked_items(*predictions: Any) -> frozenset[str]:
    """The item ids of the locked ones among ``predictions`` (a lab's prediction variables,
    None while open; the instructor copy's reference answers count as locked)."""
    return frozenset(p.item_id for p in predictions
                     if p is not None and isinstance(getattr(p, "item_id", None), str))


class Instruments:
    """A lab's declarations and the rule that opens its instruments (module docstring)."""

    def __init__(self, answers: Mapping[str, Iterable[str]],
                 instruments: Mapping[str, Iterable[str]]):
        if not isinstance(answers, Mapping) or not answers:
            raise ValueError("answers must map each prediction's item id to its quantities")
        if not isinstance(instruments, Mapping):
            raise ValueError("instruments must map each instrument's name to its quantities")
        self.answers = {item: frozenset(_quantity(q, item) for q in _listed(qs, item))
                        for item, qs in answers.items()}
        self.instruments = {name: frozenset(_quantity(q, name) for q in _listed(qs, name))
                            for name, qs in instruments.items()}
        #: the predictions in the lab's order (as ``answers`` lists them)
        self.order = tuple(self.answers)

    def answered_by(self, instrument: str) -> list[str]:
        """The predictions whose quantities ``instrument`` shows, in the lab's order."""
        shows = self._shows(instrument)
        return [item for item in self.order
                if any(meets(a, s) for a in self.answers[item] for s in shows)]

    def waiting(self, instrument: str, locked: Iterable[str]) -> list[str]:
        """The predictions ``instrument`` still waits for, given the ``locked`` item ids."""
        done = set(locked)
        return [item for item in self.answered_by(instrument) if item not in done]

    def is_open(self, instrument: str, locked: Iterable[str]) -> bool:
        return not self.waiting(instrument, locked)

    def notice_text(self, instrument: str, locked: Iterable[str]) -> str | None:
        """What the closed instrument says (None when open): which predictions to lock."""
        waiting = self.waiting(instrument, locked)
        if not waiting:
            return None
        numbers = [str(self.order.index(item) + 1) for item in waiting]
        if len(numbers) == 1:
            return (f"Lock Prediction {numbers[0]} first: this shows what it asks. It opens as "
                    "soon as that prediction is locked.")
        listed = ", ".join(numbers[:-1]) + " and " + numbers[-1]
        return (f"Lock Predictions {listed} first: this shows what they ask. It opens as soon "
                "as those predictions are locked.")

    def gate(self, instrument: str, *predictions: Any):
        """The closed instrument's notice (a marimo output), or None when it is open: an
        instrument cell starts ``_wait = INSTRUMENTS.gate(name, <the prediction variables it
        waits for>); mo.stop(_wait is not None, _wait)``. Each argument is a prediction
        variable (a ``quiz.Prediction``, or None while open) or a set of locked item ids."""
        locked: set[str] = set()
        for p in predictions:
            if isinstance(p, (set, frozenset)):
                locked |= p
            else:
                locked |= locked_items(p)
        text = self.notice_text(instrument, locked)
        if text is None:
            return None
        from labs.core.ui import style

        return style.gate_notice(text)

    def _shows(self, instrument: str) -> frozenset[str]:
        try:
            return self.instruments[instrument]
        except KeyError:
            raise KeyError(f"instrument {instrument!r} is not declared (declared: "
                           f"{', '.join(self.instruments) or 'none'})") from None

    def __repr__(self) -> str:
        return f"Instruments({len(self.answers)} predictions, {sorted(self.instruments)})"


def _listed(quantities: Any, where: str) -> list:
    if isinstance(quantities, str) or not isinstance(quantities, Iterable):
        raise ValueError(f"{where}: give its quantities as a list, got {quantities!r}")
    return list(quantities)
