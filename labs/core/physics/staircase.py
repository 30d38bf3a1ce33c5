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
the same name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Mapping, Sequence

import numpy as np

from labs.core.physics._validate import positive, positive_int


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


def _check_curve(sizes, gbs, spreads):
    x = np.asarray(sizes, dtype=float)
    y = np.asarray(gbs, dtype=float)
    if x.ndim != 1 or x.size != y.size or x.size < 2:
        raise ValueError("sizes and gbs must be 1-D and the same length (at least 2 points)")
    if not (np.all(np.isfinite(x)) and np.all(x > 0)):
        raise ValueError("sizes must be finite byte counts > 0")
    if not (np.all(np.isfinite(y)) and np.all(y > 0)):
        raise ValueError("gbs must be finite bandwidths > 0 (GB/s)")
    if np.any(np.diff(x) <= 0):
        raise ValueError("sizes must be strictly increasing")
    s = None if spreads is None else np.asarray(spreads, dtype=float)
    if s is not None and (s.shape != x.shape or not np.all(np.isfinite(s)) or np.any(s < 0)):
        raise ValueError("spreads must be finite, >= 0 and one per size")
    return x, y, s


def noise_level(log_gbs: np.ndarray, floor: float) -> float:
    """Robust noise of a log-bandwidth curve: median |difference of neighbours| / sqrt(2)
    x 1.4826 (the MAD of a normal), never below ``floor``."""
    d = np.abs(np.diff(log_gbs))
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
        for i in range(0, j - min_len + 1):
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
    if not isinstance(caches, Mapping):
        raise ValueError("caches must map a cache name to its size in bytes")
    order = sorted(((positive(f"caches[{k!r}]", v), str(k)) for k, v in caches.items()))
    ps = list(plateaus)
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


def plateau_ratio(plateaus: Sequence[Plateau], upper: str, lower: str) -> float:
    """Bandwidth of the plateau named ``upper`` over the one named ``lower`` (KeyError naming
    the missing level and those found)."""
    by = {p.name: p for p in plateaus}
    for nm in (upper, lower):
        if nm not in by:
            raise KeyError(f"no plateau named {nm!r} was found (found: "
                           f"{', '.join(by) or 'none'})")
    return by[upper].bandwidth_gbs / by[lower].bandwidth_gbs
