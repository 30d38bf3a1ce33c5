"""A synthetic class: realistic hash-chained ledgers for tests, benchmarks and demos.

:func:`write_synthetic_class` writes one ledger per student with ``ledger``'s own hashing, and
with the anomalies a grader must flag (a lab skipped or stopped part-way, a peek before
predicting, a revised prediction, a missing explanation, an edited line). Deterministic for a
seed. The item ids are the labs'; the values are plausible, not authoritative.
"""

from __future__ import annotations

import math
import os
import random
import zlib
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from labs.core.course import ledger as _ledger
from labs.core.course.answers import ratio_off

__all__ = [
    "HOSTILE_IDS", "HOSTILE_TEXTS", "LedgerWriter", "SYNTH_COURSE", "SynthItem", "catalogue_course",
    "synth_student", "write_hostile_ledgers", "write_synthetic_class"
]


@dataclass(frozen=True)
class SynthItem:
    item_id: str
    kind: str  # "numeric" | "choice"
    actual: Any  # numeric: the reference value; choice: the right option's value
    units: str = ""
    options: tuple[tuple[str, Any], ...] = ()  # choice: (label, value)


#: Items of the first four labs with plausible true values (not authoritative): the fallback
#: when the catalogue finds no labs, and the values :func:`catalogue_course` reuses.
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



def catalogue_course(folder: str | os.PathLike | None = None) -> dict[str, tuple[SynthItem, ...]]:
    """The labs' own prediction items (:mod:`labs.core.course.catalogue`) as a synthetic course.

    Choice items keep their option labels and values; the "true" option is picked by the item
    id (stable). Numeric items take their true value from :data:`SYNTH_COURSE` when it has the
    item, else the geometric middle of the form's bounds. Plausible, not the labs' answers.
    """
    from labs.core.course import catalogue

    known = {it.item_id: it for items in SYNTH_COURSE.values() for it in items}
    course: dict[str, tuple[SynthItem, ...]] = {}
    for entry in catalogue.catalogue(folder):
        items = []
        for it in entry.items:
            if it.kind == "choice" and it.options:
                pick = zlib.crc32(it.item_id.encode()) % len(it.options)
                items.append(SynthItem(it.item_id, "choice", it.options[pick][1],
                                       options=tuple(it.options)))
            elif it.kind == "numeric":
                lo, hi = it.lo or 1.0, it.hi or 100.0
                middle = math.sqrt(lo * hi) if lo > 0 and hi > 0 else (lo + hi) / 2 or 1.0
                actual = known[it.item_id].actual if it.item_id in known else float(
                    f"{middle:.2g}")
                items.append(SynthItem(it.item_id, "numeric", actual, it.units))
        if items:
            course[entry.lab_id] = tuple(items)
    return course


class LedgerWriter:
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


def synth_student(sid: str, rng: random.Random, start: datetime,
                   course: dict[str, tuple[SynthItem, ...]]) -> list[bytes]:
    """One synthetic student's ledger lines for ``course``, drawn from ``rng`` (seeded, so a
    class is the same each run)."""
    w = LedgerWriter(sid, start, rng)
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
            # one click in the lab locks, unlocks and shows the result: the same second
            w.add("unlock", lab_id, it.item_id, {"after_seq": ev["seq"]}, minutes=0)
            result = ({"actual": it.actual, "units": it.units,
                       "ratio": ratio_off(payload["value"], it.actual)} if it.kind == "numeric"
                      else {"actual": it.actual, "correct": payload["value"] == it.actual})
            w.add("result", lab_id, it.item_id, result, minutes=0.005)
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

    The items are the labs' own (:func:`catalogue_course`, so new labs are picked up), or
    ``course``. Deterministic for a seed and a set of labs. About 6 % skip a lab, 10 % stop
    part-way, 3 % observe before predicting, 3 % revise, ~20 % do not explain, 1 % have an
    edited line.
    """
    if not isinstance(n_students, int) or n_students < 1:
        raise ValueError(f"n_students must be a positive integer, got {n_students!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    start = start or datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)
    course = course or catalogue_course() or SYNTH_COURSE
    paths = []
    for i in range(1, n_students + 1):
        sid = f"s{i:04d}"
        lines = synth_student(sid, random.Random(rng.getrandbits(64)), start, course)
        path = folder / _ledger.ledger_filename(sid)
        path.write_bytes(b"".join(lines))
        paths.append(path)
    return paths


#: Text a student (or a hand-edited file) may put anywhere: markup, links, formulas, maths,
#: code fences, control characters, and very long strings. The dashboard must show it as text.
HOSTILE_TEXTS = (
    "<img src=x onerror=alert(1)>",
    "`code` <b>bold</b> **strong** [a link](http://evil.example/x) http://evil.example/y",
    "<script>alert(1)</script>",
    "<a href='http://evil.example/z'>click me</a>",
    '=HYPERLINK("http://evil.example/h","x")',
    "$\\alpha^2$",
    "```\nfenced\n```\n# heading\n- item",
    "tab\there & ampersand &amp; entity",
    "w" * 3000,
)

#: Student ids a hand-edited file may carry (the labs only write letters, digits and ._@+-).
HOSTILE_IDS = (
    "=cmd|' /C calc'!A0",
    "<img src=x onerror=alert(2)>",
    "eve`<b>x</b>`",
    "http://evil.example/id",
    "[mallory](http://evil.example/m)",
    "+sum(1)",
    "z" * 200,
)


def write_hostile_ledgers(folder: str | os.PathLike,
                          course: dict[str, tuple[SynthItem, ...]] | None = None, *,
                          start: datetime | None = None) -> list[Path]:
    """Correctly hash-chained ledgers full of hostile text, for tests and for looking at the
    dashboard: one per :data:`HOSTILE_IDS` student id (reasons, labels, explanations, results
    and an item id from :data:`HOSTILE_TEXTS`), plus one ordinary id whose item ids carry the
    hostile texts (with an explain before the predict and a revise, so the grader's flags name
    them). Files are ``hostile-NN.jsonl``; returns their paths.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    course = course or catalogue_course() or SYNTH_COURSE
    lab_id, items = next(iter(course.items()))
    start = start or datetime(2025, 3, 2, 9, 0, tzinfo=timezone.utc)
    rng = random.Random(17)
    files: list[list[bytes]] = []
    for n, sid in enumerate(HOSTILE_IDS):
        w = LedgerWriter(sid, start, rng)
        for k, it in enumerate(items):
            text = HOSTILE_TEXTS[(n + k) % len(HOSTILE_TEXTS)]
            payload = {"value": it.actual if it.kind == "numeric" else it.options[-1][1],
                       "answer_type": it.kind, "units": text if it.kind == "numeric" else "",
                       "confidence": 1 + k % 5, "reason": text}
            if it.kind == "choice":
                payload["label"] = text
            w.add("predict", lab_id, it.item_id, payload, minutes=1)
            w.add("unlock", lab_id, it.item_id, {"after_seq": w.seq}, minutes=0)
            w.add("result", lab_id, it.item_id, {"actual": text, "units": text}, minutes=0)
            w.add("explain", lab_id, it.item_id, {"text": text}, minutes=1)
        files.append(w.lines)
    w = LedgerWriter("tamper01", start, rng)
    for k, text in enumerate(HOSTILE_TEXTS):
        item_id = f"{lab_id}.x{k}`{text[:60]}`"
        w.add("explain", lab_id, item_id, {"text": text}, minutes=0)  # before the predict
        w.add("predict", lab_id, item_id, {"value": 1.0, "answer_type": "numeric",
                                            "units": "", "confidence": 3, "reason": text})
        w.add("revise", lab_id, item_id, {"value": 2.0, "answer_type": "numeric",
                                           "units": "", "confidence": 3, "reason": text})
    files.append(w.lines)
    paths = []
    for n, lines in enumerate(files):
        path = folder / f"hostile-{n:02d}.jsonl"
        path.write_bytes(b"".join(lines))
        paths.append(path)
    return paths
