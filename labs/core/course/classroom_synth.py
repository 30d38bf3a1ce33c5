"""A synthetic class: realistic hash-chained ledgers for tests, benchmarks and demos.

:func:`write_synthetic_class` writes one ledger per student with ``ledger``'s own hashing, and
with the anomalies a grader must flag (a lab skipped or stopped part-way, a peek before
predicting, a revised prediction, a missing explanation, an edited line). Deterministic for a
seed. The item ids are the labs'; the values are plausible, not authoritative.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from labs.core.course import ledger as _ledger
from labs.core.course.classroom_data import _ratio


@dataclass(frozen=True)
class SynthItem:
    item_id: str
    kind: str  # "numeric" | "choice"
    actual: Any  # numeric: the reference value; choice: the right option's value
    units: str = ""
    options: tuple[tuple[str, Any], ...] = ()  # choice: (label, value)


#: Items of the four labs (ids as the labs use them; values plausible, not authoritative).
SYNTH_COURSE: dict[str, tuple[SynthItem, ...]] = {
    "lab01": (
        SynthItem("lab01.which_roof", "choice", "memory",
                  options=(("The memory roof", "memory"), ("The compute roof", "compute"),
                           ("Neither: badly written", "neither"))),
        SynthItem("lab01.crossover_n", "numeric", 443.0, ""),
        SynthItem("lab01.yardstick", "choice", "bandwidth",
                  options=(("Bandwidth utilisation", "bandwidth"), ("MFU", "mfu"))),
    ),
    "lab02": (
        SynthItem("lab02.decode_dominant", "choice", "weights",
                  options=(("Weights", "weights"), ("KV cache", "kv"),
                           ("Activations", "act"))),
        SynthItem("lab02.oom_batch", "numeric", 54.0, "sequences"),
    ),
    "lab03": (
        SynthItem("lab03.rho_ratio", "numeric", 7.5, "×"),
        SynthItem("lab03.nvfp4_speedup", "numeric", 3.6, "×"),
    ),
    "lab04": (
        SynthItem("lab04.fusion_speedup", "numeric", 3.0, "×"),
        SynthItem("lab04.oom_seq_len", "numeric", 46000.0, "tokens"),
        SynthItem("lab04.tiny_tensor", "choice", "overhead",
                  options=(("Overhead", "overhead"), ("Memory", "memory"),
                           ("Compute", "compute"))),
    ),
}


class _Writer:
    """Builds one hash-chained ledger in memory with ledger.py's own hashing."""

    def __init__(self, student_id: str, start: datetime, rng: random.Random):
        self.student_id, self.t, self.rng = student_id, start, rng
        self.seq, self.prev = 0, _ledger.GENESIS_HASH
        self.lines: list[bytes] = []
        self.session = "%032x" % rng.getrandbits(128)

    def add(self, kind: str, lab_id: str, item_id: str, payload: dict,
            minutes: float = 1.0) -> dict:
        self.t += timedelta(minutes=minutes * (0.5 + self.rng.random()))
        self.seq += 1
        event = {"schema": _ledger.SCHEMA_VERSION, "seq": self.seq,
                 "ts": self.t.strftime("%Y-%m-%dT%H:%M:%S.%fZ"), "student_id": self.student_id,
                 "lab_id": lab_id, "lab_version": "synthetic", "item_id": item_id, "kind": kind,
                 "payload": payload, "session": self.session, "prev_hash": self.prev}
        event["hash"] = _ledger.event_hash(event)
        self.prev = event["hash"]
        self.lines.append(_ledger.event_line(event))
        return event


def _synth_student(sid: str, rng: random.Random, start: datetime,
                   course: dict[str, tuple[SynthItem, ...]]) -> list[bytes]:
    w = _Writer(sid, start, rng)
    skill = rng.gauss(0, 1)  # better students predict closer and are better calibrated
    for lab_id, items in course.items():
        if rng.random() < 0.06:  # lab not started
            continue
        w.t += timedelta(days=rng.randint(1, 6), minutes=rng.randint(0, 600))
        stop_at = len(items) if rng.random() > 0.1 else rng.randint(0, len(items) - 1)
        for n, it in enumerate(items):
            if n >= stop_at:
                break
            cheat = rng.random() < 0.03  # looked first: observe before predicting
            if cheat:
                w.add("observe", lab_id, it.item_id, {"text": "looked at the plot first"})
            if it.kind == "numeric":
                spread = max(0.1, 0.6 - 0.15 * skill)
                value = float(f"{it.actual * 10 ** rng.gauss(0, spread):.3g}")
                off = max(value / it.actual, it.actual / value)
                conf = max(1, min(5, round(3 + skill + rng.gauss(0, 1) - (off > 3))))
                payload = {"value": value, "answer_type": "numeric", "units": it.units,
                           "confidence": conf, "reason": "scaled from the ridge point"}
            else:
                p_right = min(0.95, max(0.15, 0.55 + 0.15 * skill))
                right = rng.random() < p_right
                label, value = (next(o for o in it.options if o[1] == it.actual) if right
                                else rng.choice([o for o in it.options if o[1] != it.actual]))
                conf = max(1, min(5, round(3 + skill + rng.gauss(0, 1) + (0.5 if right else -0.5))))
                payload = {"value": value, "answer_type": "choice", "units": "",
                           "confidence": conf, "reason": "bytes per FLOP", "label": label}
            if rng.random() < 0.04:
                payload["reason"] = ""  # no reason given
            ev = w.add("predict", lab_id, it.item_id, payload, minutes=3)
            w.add("unlock", lab_id, it.item_id, {"after_seq": ev["seq"]}, minutes=0.05)
            result = ({"actual": it.actual, "units": it.units,
                       "ratio": _ratio(payload["value"], it.actual)} if it.kind == "numeric"
                      else {"actual": it.actual, "correct": payload["value"] == it.actual})
            w.add("result", lab_id, it.item_id, result, minutes=0.1)
            if rng.random() < 0.03:  # changed their mind after seeing it
                w.add("revise", lab_id, it.item_id, {**payload, "value": it.actual})
            if rng.random() < 0.85 and not cheat:
                w.add("observe", lab_id, it.item_id, {"text": "the point sits under the slope"})
            if rng.random() < 0.8:
                w.add("explain", lab_id, it.item_id,
                      {"text": "AI is below the ridge, so bandwidth sets the time"}, minutes=4)
    if rng.random() < 0.01 and len(w.lines) > 3:  # an edited line: its hash no longer matches
        w.lines[2] = w.lines[2].replace(b'"confidence":', b'"confidence":5,"x":', 1)
    return w.lines


def write_synthetic_class(folder: str | os.PathLike, n_students: int = 500, *, seed: int = 0,
                          course: dict[str, tuple[SynthItem, ...]] | None = None,
                          start: datetime | None = None) -> list[Path]:
    """Write ``n_students`` ledgers ``roofline-ledger-s0001.jsonl`` ... into ``folder``.

    Deterministic for a seed. About 6 % skip a lab, 10 % stop part-way, 3 % observe before
    predicting, 3 % revise, ~20 % do not explain, 1 % have an edited line.
    """
    if not isinstance(n_students, int) or n_students < 1:
        raise ValueError(f"n_students must be a positive integer, got {n_students!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    start = start or datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)
    paths = []
    for i in range(1, n_students + 1):
        sid = f"s{i:04d}"
        lines = _synth_student(sid, random.Random(rng.getrandbits(64)), start,
                               course or SYNTH_COURSE)
        path = folder / _ledger.ledger_filename(sid)
        path.write_bytes(b"".join(lines))
        paths.append(path)
    return paths
