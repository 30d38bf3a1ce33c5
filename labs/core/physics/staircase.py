"""Lab 5: find the plateaus of a bandwidth-vs-working-set curve, and name them.

Reading W bytes over and over runs at the bandwidth of the smallest memory level that holds W:
the curve is a staircase, one flat step (plateau) per level, with a short slope between steps
where W outgrows a level (caches are not perfectly LRU, prefetchers help, neighbours share).
:func:`find_plateaus` finds the steps from the data alone (no cache size is typed in):

1. work on log(bandwidth), so a 10% wobble weighs the same at 5 GB/s and at 500 GB/s;
2. estimate the noise from the data: the median absolute difference of neighbouring points
   (robust to the few large differences at the steps), floored at ``noise_floor``;
3. split the points into contiguous segments by dynamic programming, minimising the squared
   deviation from each segment's mean (in units of the noise) plus a penalty per segment
   (``penalty`` x log n: a BIC-like rule, so noise alone rarely opens a new segment);
4. merge neighbours whose medians differ by less than ``min_step``, and call segments of fewer
   than ``min_points`` points lying between their neighbours' levels transitions (slopes),
   not plateaus.

Each plateau reports its bytes range, its bandwidth (median of its points) and its spread
(p10-p90 of its points over the median, and the worst within-point spread when given).
:func:`name_plateaus` names each plateau by the reported cache nearest to where its bandwidth
drops (in order; main memory for the last one past every cache), merging neighbours that get
the same name. :func:`levels` does both, and makes main memory's plateau of sizes past the
largest reported cache only (never a working set a cache could hold).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from labs.core.physics.deferred import numpy as np

from labs.core.physics.validate import (
    instance,
    mapping,
    non_negative,
    number,
    positive,
    positive_int,
    sequence,
    shown,
    text,
)

__all__ = [
    "ONE_ROOF", "Plateau", "RatioSeparation", "check_caches", "check_plateaus", "find_plateaus",
    "levels", "name_plateaus", "noise_level", "plateau_ratio", "ratio_separation"
]


@dataclass(frozen=True)
class Plateau:
    """One step of the staircase. Bytes, GB/s; ``spread`` = (p90 - p10) / median."""

    lo_bytes: float
    hi_bytes: float
    bandwidth_gbs: float
    spread: float
    points: int
    name: str = ""  # "L1d", "L2", "L3", "DRAM" once named (name_plateaus)
    point_spread: float = 0.0  # largest within-point spread of its sizes (timer repetitions)

    @property
    def middle_bytes(self) -> float:
        return math.sqrt(self.lo_bytes * self.hi_bytes)


def _numbers(name: str, values, check=positive) -> np.ndarray:
    """A list of finite numbers (each through ``check``) as an array; ValueError naming it."""
    if isinstance(values, np.ndarray):
        values = values.tolist()
    return np.array([check(name, v) for v in sequence(name, values)], dtype=float)


def _check_curve(sizes, gbs, spreads):
    x, y = _numbers("sizes", sizes), _numbers("gbs", gbs)
    if x.size != y.size or x.size < 2:
        raise ValueError(f"sizes and gbs must have the same length, at least 2 points (got "
                         f"{x.size} sizes and {y.size} gbs)")
    if np.any(np.diff(x) <= 0):
        raise ValueError(f"sizes must be strictly increasing, got {shown(sizes)}")
    s = None if spreads is None else _numbers("spreads", spreads, non_negative)
    if s is not None and s.shape != x.shape:
        raise ValueError(f"spreads must give one value per size ({x.size}), got {s.size}")
    return x, y, s


def check_caches(caches) -> dict[str, float]:
    """{cache name: bytes}: any non-empty names (the OS names its caches), sizes > 0; may be
    empty (nothing reported)."""
    return {text("caches", k): positive(f"caches[{k!r}]", v)
            for k, v in mapping("caches", caches, allow_empty=True).items()}


def check_plateaus(plateaus) -> list[Plateau]:
    """``plateaus`` as a list of :class:`Plateau`; anything else is a clear ValueError."""
    return [instance("plateaus", p, Plateau, "a list of staircase.Plateau")
            for p in sequence("plateaus", plateaus)]


def noise_level(log_gbs, floor: float) -> float:
    """Robust noise of a log-bandwidth curve: median |difference of neighbours| / sqrt(2)
    x 1.4826 (the MAD of a normal), never below ``floor`` (> 0)."""
    floor = positive("floor", floor)
    d = np.abs(np.diff(_numbers("log_gbs", log_gbs, number)))
    est = 1.4826 * float(np.median(d)) / math.sqrt(2) if d.size else 0.0
    return max(est, floor)


def _segments(y: np.ndarray, sigma: float, penalty: float, min_len: int) -> list[tuple[int, int]]:
    """Optimal split of y into contiguous [i, j) segments (dynamic programming, O(n^2))."""
    n = y.size
    c1 = np.concatenate([[0.0], np.cumsum(y)])
    c2 = np.concatenate([[0.0], np.cumsum(y * y)])

    def cost(i, j):
        m = j - i
        s = c1[j] - c1[i]
        return (c2[j] - c2[i] - s * s / m) / (sigma * sigma)

    beta = penalty * math.log(max(n, 2))
    best = np.full(n + 1, np.inf)
    best[0] = 0.0
    prev = np.zeros(n + 1, dtype=int)
    for j in range(min_len, n + 1):
        for i in range(j - min_len + 1):
            if not np.isfinite(best[i]):
                continue
            v = best[i] + cost(i, j) + beta
            if v < best[j]:
                best[j], prev[j] = v, i
    if not np.isfinite(best[n]):  # fewer points than min_len: one segment
        return [(0, n)]
    out, j = [], n
    while j > 0:
        out.append((prev[j], j))
        j = prev[j]
    return out[::-1]


def _plateau(x, g, s, i, j) -> Plateau:
    pts = g[i:j]
    med = float(np.median(pts))
    p10, p90 = np.percentile(pts, [10, 90])
    within = float(np.max(s[i:j])) if s is not None else 0.0
    return Plateau(float(x[i]), float(x[j - 1]), med, float((p90 - p10) / med), int(j - i),
                   point_spread=within)


def find_plateaus(sizes: Sequence[float], gbs: Sequence[float],
                  spreads: Sequence[float] | None = None, *, min_points: int = 3,
                  min_step: float = 0.15, penalty: float = 2.0,
                  noise_floor: float = 0.03) -> list[Plateau]:
    """Plateaus of a bandwidth (GB/s) vs working-set (bytes) curve, smallest sizes first.

    ``spreads`` (optional): each point's own spread, reported with its plateau. A plateau has
    at least ``min_points`` points (the first and last may have 2: a curve that starts or
    ends on a level shows only its edge) and differs from its neighbours by at least
    ``min_step`` (0.15 = 15%). ValueError naming the argument on bad input."""
    x, y, s = _check_curve(sizes, gbs, spreads)
    min_points = positive_int("min_points", min_points)
    min_step = positive("min_step", min_step)
    ly = np.log(y)
    sigma = noise_level(ly, positive("noise_floor", noise_floor))
    segs = _segments(ly, sigma, positive("penalty", penalty), min(2, x.size))
    segs = _merge_close(segs, ly, math.log1p(min_step))
    keep = []
    for k, (i, j) in enumerate(segs):
        edge = k in (0, len(segs) - 1)
        if j - i >= min_points or (edge and j - i >= 2):
            keep.append((i, j))
    return [_plateau(x, y, s, i, j) for i, j in _merge_close(keep, ly, math.log1p(min_step))]


def _merge_close(segs, ly, threshold):
    """Merge neighbouring segments whose median log-levels differ by less than threshold."""
    out = [segs[0]] if segs else []
    for i, j in segs[1:]:
        a, b = out[-1]
        if abs(float(np.median(ly[a:b])) - float(np.median(ly[i:j]))) < threshold:
            out[-1] = (a, j)  # a transition dropped between them is absorbed: same level
        else:
            out.append((i, j))
    return out


def name_plateaus(plateaus: Sequence[Plateau], caches: Mapping[str, float], *,
                  memory_name: str = "DRAM") -> list[Plateau]:
    """Name the plateaus (smallest sizes first) by the caches ``{name: bytes}``.

    Each plateau but the last ends where the bandwidth drops; its *edge* is the geometric
    middle of its last size and the next plateau's first. A plateau takes the name of the
    cache, after the one its predecessor took, whose size is closest to its edge (log scale):
    OS-reported sizes are nominal, and a cache shared with other processes, or a victim cache,
    moves the drop. The last plateau is main memory (``memory_name``) when it reaches past the
    largest cache, else the next cache in order. Neighbours given the same name are merged
    (bytes joined, bandwidth the points-weighted mean). Without caches: "level 1", "level 2",
    ..., the last past every measured drop called ``memory_name``."""
    ps = check_plateaus(plateaus)
    order = sorted((v, k) for k, v in check_caches(caches).items())
    memory_name = text("memory_name", memory_name)
    names: list[str] = []
    nxt = 0  # index of the first cache still free
    for i, p in enumerate(ps):
        last = i == len(ps) - 1
        if last and (not order or p.hi_bytes > order[-1][0] or nxt >= len(order)):
            names.append(memory_name)
            continue
        if not order:
            names.append(f"level {i + 1}")
            continue
        if nxt >= len(order):  # more plateaus than caches: the extra one joins the last cache
            names.append(order[-1][1])
            continue
        edge = p.hi_bytes if last else math.sqrt(p.hi_bytes * ps[i + 1].lo_bytes)
        room = len(order) - (len(ps) - 1 - i) + (0 if last else 1)  # leave caches for the rest
        cands = order[nxt:max(room, nxt + 1)]
        j = min(range(len(cands)), key=lambda c: abs(math.log(cands[c][0] / edge)))
        names.append(cands[j][1])
        nxt += j + 1
    named: list[Plateau] = []
    for p, nm in zip(ps, names):
        if named and named[-1].name == nm:
            q = named[-1]
            bw = (q.bandwidth_gbs * q.points + p.bandwidth_gbs * p.points) / (q.points + p.points)
            named[-1] = replace(q, hi_bytes=p.hi_bytes, bandwidth_gbs=bw,
                                spread=max(q.spread, p.spread), points=q.points + p.points,
                                point_spread=max(q.point_spread, p.point_spread))
        else:
            named.append(replace(p, name=nm))
    return named


def levels(sizes: Sequence[float], gbs: Sequence[float], caches: Mapping[str, float],
           spreads: Sequence[float] | None = None, *, memory_name: str = "DRAM",
           **options) -> list[Plateau]:
    """The plateaus of a curve (:func:`find_plateaus`, ``options`` go there), named by the
    reported ``caches`` (:func:`name_plateaus`), with one rule more: main memory's plateau is
    made only of sizes past the largest reported cache. A working set that fits the last-level
    cache is never called main memory, whatever speed it ran at (a busy shared L3 can drop
    early): sizes at or below that cache which the finder put in main memory's plateau are the
    slope between levels, in no plateau, and main memory's bandwidth is the median of the
    sizes past it. Fewer than two sizes past it: no main-memory plateau (the sweep stopped too
    early to measure it). Without reported caches, :func:`name_plateaus` alone."""
    x, y, s = _check_curve(sizes, gbs, spreads)
    named = name_plateaus(find_plateaus(x.tolist(), y.tolist(),
                                        None if s is None else s.tolist(), **options),
                          caches, memory_name=memory_name)
    known = check_caches(caches)
    if not known or not named or named[-1].name != memory_name:
        return named
    llc, last = max(known.values()), named[-1]
    if last.lo_bytes > llc:
        return named
    past = [i for i, v in enumerate(x) if last.lo_bytes <= v <= last.hi_bytes and v > llc]
    if len(past) < 2:
        return named[:-1]
    return named[:-1] + [replace(_plateau(x, y, s, past[0], past[-1] + 1), name=memory_name)]


def plateau_ratio(plateaus: Sequence[Plateau], upper: str, lower: str) -> float:
    """Bandwidth of the plateau named ``upper`` over the one named ``lower`` (KeyError naming
    the missing level and those found)."""
    by = {p.name: p for p in check_plateaus(plateaus)}
    for arg, nm in (("upper", upper), ("lower", lower)):
        if text(arg, nm) not in by:
            raise KeyError(f"{arg}={nm!r}: no plateau of that name was found (found: "
                           f"{', '.join(by) or 'none'})")
    return by[upper].bandwidth_gbs / by[lower].bandwidth_gbs


@dataclass(frozen=True)
class RatioSeparation:
    """Whether a plateau ratio, graded within ``tolerance``, can tell the level it names from
    its neighbours on one machine (:func:`ratio_separation`)."""

    ratio: float  # upper / lower: the graded answer
    nearest: str  # the other plateau (or "one roof": the lower one itself) whose ratio is nearest
    nearest_ratio: float  # its plateau over the lower one
    factor: float  # how far apart the two ratios are (>= 1)
    needed: float  # tolerance x margin: how far apart they must be

    @property
    def separates(self) -> bool:
        return self.factor >= self.needed


#: The wrong model a ratio of 1 stands for: one memory roof, whatever the working set.
ONE_ROOF = "one roof"


def ratio_separation(plateaus: Sequence[Plateau], upper: str, lower: str, tolerance: float,
                     margin: float = 1.0) -> RatioSeparation:
    """How far the ``upper``/``lower`` plateau ratio lies from the ratio a student would give
    by taking a neighbouring plateau for ``upper`` (every other plateau over ``lower``) or
    one roof (a ratio of 1); it separates them when the nearest is at least ``tolerance`` x
    ``margin`` away, so a band of ``tolerance`` grades the neighbour's ratio wrong. One
    machine measured L1d 153.5, L2 110.8, L3 90.5 and DRAM 28.9 GB/s: L2/DRAM 3.83, L3/DRAM
    3.13, 1.22x apart, under 1.5 x 1.05: a 1.5x band cannot tell L2 from L3 there."""
    ratio = plateau_ratio(plateaus, upper, lower)
    tol = positive("tolerance", tolerance)
    need = tol * positive("margin", margin)
    if tol < 1:
        raise ValueError(f"tolerance must be a factor of at least 1, got {shown(tolerance)}")
    by = {p.name: p.bandwidth_gbs for p in check_plateaus(plateaus)}
    others = {nm: bw / by[lower] for nm, bw in by.items() if nm not in (upper, lower)}
    others[ONE_ROOF] = 1.0
    apart = {nm: max(r / ratio, ratio / r) for nm, r in others.items()}
    nearest = min(apart, key=apart.get)
    return RatioSeparation(ratio, nearest, others[nearest], apart[nearest], need)
