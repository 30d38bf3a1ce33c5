"""Each numeric prediction's band: the answer it is graded against, its own tolerance, and the
wrong models it must tell from the right one (LABS_SPEC §2, "Graded numbers discriminate").

A graded number teaches only if a student who holds the misconception it targets is graded
wrong. One tolerance for every item cannot do that: "forgot C's write" is exactly 1.5x off a
square GEMM's N*, so a global 1.5x band grades it right. Here each numeric item of each lab
names, computed by ``labs.core.physics``:

- ``reference``: the answer of the model the lab teaches, for the question's case;
- ``tolerance``: the factor within which a prediction is graded correct (the grader, the lab's
  comparison and the instructor copy all read it from here);
- ``wrong_models``: the plausible misconceptions, each with the answer it gives; every one must
  land outside the band, by :data:`WRONG_MARGIN` at least, so a student who rounds it is still
  graded wrong (a band of exact arithmetic whose answers all lie between 2 and 10 times a power
  of ten may state the smaller ``wrong_margin`` that two-figure rounding there needs,
  :data:`WRONG_MARGIN_FROM_2`);
- ``measured``: published measurements of the same case (with their source) that a student who
  reasons from real hardware would give; each must land inside the band. An item with none
  either asks for the model's own bound, and says so in its question (``asks_bound``: "at
  most", "the roofline's", "the ideal"), or is graded against the student's own measurement
  (``own_measurement``: the lab's instrument times it on their machine).

One module per lab (``lab01`` ...) holds that lab's bands: ``TOLERANCES`` (item id -> factor,
read without computing anything, as the grader needs it) and ``BANDS`` (item id -> a function
returning its :class:`Band`). ``tests/test_misconceptions.py`` walks every numeric item of
every lab, read from the labs themselves, and checks the three rules above; a new lab cannot
pass without its bands.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from typing import Callable

__all__ = ["DEFAULT_TOLERANCE", "WRONG_MARGIN", "WRONG_MARGIN_FROM_2", "Band", "Measured",
           "WrongModel", "band", "bands", "item_ids", "tolerance"]

#: The tolerance of a numeric item without a band of its own (a course's own lab).
DEFAULT_TOLERANCE = 1.5
#: A wrong model must be off the reference by at least ``tolerance * WRONG_MARGIN``: a student
#: who rounds its answer to two figures (591 -> 600) must still be graded wrong.
WRONG_MARGIN = 1.05
#: Rounding a value of 2 to 10 (times a power of ten) to two figures moves it by at most
#: 0.05 / 2.05 = 2.4%, so 1.025 is that rounding's margin. A band whose reference is exact
#: arithmetic and whose wrong answers all lie there may use it (``Band.wrong_margin``):
#: NVFP4's byte ratio (3.55) against MXFP4's (3.76) is 1.059x, inside any band of 1.01x or
#: more with the general margin. ``tests/test_misconceptions.py`` checks the range.
WRONG_MARGIN_FROM_2 = 1.025
#: The labs whose items have bands here, by lab id (the module of the same name).
LABS = ("lab01", "lab02", "lab03", "lab04", "lab05", "lab06", "lab07")


@dataclass(frozen=True)
class WrongModel:
    """A misconception a student plausibly holds, and the answer it gives for the question."""

    name: str  # the belief, in a phrase a student would recognise ("forgets C's write")
    value: float  # its answer, computed by labs.core.physics


@dataclass(frozen=True)
class Measured:
    """A published measurement of the question's case: what a student reasoning from real
    hardware would answer."""

    value: float
    source: str  # who measured it, where (a paper, a repository and its table)


@dataclass(frozen=True)
class Band:
    """One numeric item's band (see the module docstring)."""

    item_id: str
    reference: float
    tolerance: float
    wrong_models: tuple[WrongModel, ...]
    measured: tuple[Measured, ...] = ()
    asks_bound: bool = False
    own_measurement: bool = False
    units: str = ""
    why: str = ""  # one sentence: why the tolerance is what it is
    # how far outside the band each wrong model must land, as a factor on the tolerance
    wrong_margin: float = WRONG_MARGIN

    def ratio(self, value: float) -> float:
        """How many times ``value`` is off the reference (>= 1; inf where no ratio exists)."""
        v, r = float(value), float(self.reference)
        if not (math.isfinite(v) and math.isfinite(r)) or v == 0 or r == 0 or (v > 0) != (r > 0):
            return math.inf
        return max(v / r, r / v)


def _module(item_id: str):
    lab_id = item_id.split(".", 1)[0] if isinstance(item_id, str) else ""
    if lab_id not in LABS:
        return None
    return importlib.import_module(f"{__name__}.{lab_id}")


def tolerance(item_id: str) -> float:
    """The factor within which ``item_id``'s prediction is graded correct: the item's own,
    or :data:`DEFAULT_TOLERANCE` for an item without a band (computes nothing)."""
    module = _module(item_id)
    if module is None:
        return DEFAULT_TOLERANCE
    return float(module.TOLERANCES.get(item_id, DEFAULT_TOLERANCE))


def band(item_id: str) -> Band:
    """``item_id``'s :class:`Band`, computed now; KeyError naming it for an item without one."""
    module = _module(item_id)
    maker: Callable[[], Band] | None = module.BANDS.get(item_id) if module else None
    if maker is None:
        raise KeyError(f"item_id {item_id!r} has no band in labs.core.physics.misconceptions")
    return maker()


def item_ids() -> list[str]:
    """Every item with a band, lab by lab."""
    return [i for lab_id in LABS for i in _module(f"{lab_id}.").BANDS]


def bands() -> dict[str, Band]:
    """Every band, computed now."""
    return {i: band(i) for i in item_ids()}
