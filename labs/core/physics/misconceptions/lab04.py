"""Lab 4's graded numbers: each numeric item's band and the wrong models it must catch
(see labs.core.physics.misconceptions)."""

from __future__ import annotations

#: item id -> the factor within which a prediction is graded correct
TOLERANCES: dict[str, float] = {}
#: item id -> a function returning its Band
BANDS: dict = {}
