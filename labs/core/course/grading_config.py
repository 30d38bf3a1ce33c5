"""The course configuration for ``labs-grade``: the TOML file, its rubric and its checks.

:func:`load_config` turns the course TOML (see :data:`EXAMPLE_CONFIG`) into a
:class:`CourseConfig` of :class:`LabConfig` with a :class:`Rubric` each, and raises
:class:`ConfigError` naming the offending key. Part of :mod:`labs.core.course.grading`
(import it through that name).
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from labs.core.course import ledger as _ledger

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

_LAB_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


@dataclass
class Rubric:
    """Points per prediction item; correctness earns nothing unless ``correct`` > 0."""

    commit: float = 1.0  # predicted before the item was unlocked / observed / explained
    reason: float = 0.5  # the prediction has a confidence 1-5 and a one-line reason
    explain: float = 1.0  # observed and explained (>= min_explain_chars) after predicting
    correct: float = 0.0  # prediction within `tolerance` of the instrument (or the right choice)
    min_explain_chars: int = 15
    tolerance: float = 1.5  # numeric: correct if off by at most this factor

    @property
    def per_item(self) -> float:
        return self.commit + self.reason + self.explain + self.correct


@dataclass
class LabConfig:
    lab_id: str
    title: str
    deadline: datetime | None = None
    items: list[str] = field(default_factory=list)  # empty: inferred from the submissions
    versions: set[str] = field(default_factory=set)  # empty: not checked
    answers: dict[str, Any] = field(default_factory=dict)  # item -> right value (optional)
    rubric: Rubric = field(default_factory=Rubric)


@dataclass
class CourseConfig:
    name: str = ""
    id_column: str = "SIS User ID"
    late_policy: str = "report"  # "report": all events count; "deadline": only those before it
    late_penalty_per_day: float = 0.0  # fraction of the lab's points per started day late
    labs: dict[str, LabConfig] = field(default_factory=dict)
    students: list[str] = field(default_factory=list)  # roster: listed even with no ledger
    configured: bool = False  # False: labs are inferred from the submissions


EXAMPLE_CONFIG = """\
[course]
name = "Roofline Labs, spring term"
id_column = "SIS User ID"          # Canvas; Gradescope uses "SID"
late_policy = "report"             # or "deadline": events after the deadline earn nothing
late_penalty_per_day = 0.0         # fraction of the lab's points per started day late
# students = ["ada", "bob"]        # optional roster: listed as Missing when nothing came in

[labs.lab01]
title = "Lab 1: The memory wall"
deadline = 2025-03-07T23:59:00-05:00
file = "labs/lab_01_memory_wall.py"   # released version: its hash is accepted
# versions = ["sha256:0123456789abcdef"]
# items = ["lab01.crossover_n", "lab01.regime"]   # default: every item seen in submissions
# answers = { "lab01.regime" = "memory" }         # default: the lab's recorded result events

[labs.lab01.rubric]
commit = 1.0
reason = 0.5
explain = 1.0
correct = 0.0
min_explain_chars = 15
tolerance = 1.5
"""


class ConfigError(ValueError):
    """A problem in the course TOML, with the key that caused it."""


def _deadline(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(f"{where}: deadline {value!r} is not an ISO date-time") from None
    if isinstance(value, date) and not isinstance(value, datetime):
        raise ConfigError(f"{where}: deadline needs a time and a UTC offset, e.g. "
                          f"{value.isoformat()}T23:59:00-05:00")
    if not isinstance(value, datetime):
        raise ConfigError(f"{where}: deadline must be a date-time, got {value!r}")
    if value.tzinfo is None:
        raise ConfigError(f"{where}: deadline {value.isoformat()} has no UTC offset; write "
                          f"e.g. {value.isoformat()}-05:00 or {value.isoformat()}Z")
    return value.astimezone(timezone.utc)


def _number(table: dict, key: str, default: float, where: str, *, lo: float = 0.0) -> float:
    v = table.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < lo:
        raise ConfigError(f"{where}.{key} must be a number >= {lo}, got {v!r}")
    return float(v)


def load_config(path: str | os.PathLike | None) -> CourseConfig:
    """Read the course TOML (see :data:`EXAMPLE_CONFIG`); None gives an empty config.

    Raises :class:`ConfigError` naming the offending key.
    """
    if path is None:
        return CourseConfig()
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"cannot read the course config {path}: {exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    course = data.get("course", {})
    if not isinstance(course, dict):
        raise ConfigError("[course] must be a table")
    cfg = CourseConfig(
        name=str(course.get("name", "")), id_column=str(course.get("id_column", "SIS User ID")),
        late_policy=str(course.get("late_policy", "report")),
        late_penalty_per_day=_number(course, "late_penalty_per_day", 0.0, "course"),
        configured=True)
    if cfg.late_policy not in ("report", "deadline"):
        raise ConfigError(f"course.late_policy must be 'report' or 'deadline', "
                          f"got {cfg.late_policy!r}")
    students = course.get("students", [])
    if not isinstance(students, list) or not all(isinstance(s, str) for s in students):
        raise ConfigError("course.students must be a list of student ids")
    cfg.students = students
    labs = data.get("labs", {})
    if not isinstance(labs, dict):
        raise ConfigError("[labs] must be a table of [labs.<lab_id>] tables")
    for lab_id, table in labs.items():
        where = f"labs.{lab_id}"
        if not _LAB_ID_RE.match(lab_id) or not isinstance(table, dict):
            raise ConfigError(f"{where}: lab ids are letters, digits, _ and -; got {lab_id!r}")
        lab = LabConfig(lab_id, str(table.get("title", lab_id)),
                        _deadline(table.get("deadline"), where))
        items = table.get("items", [])
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise ConfigError(f"{where}.items must be a list of item ids")
        lab.items = items
        versions = table.get("versions", [])
        if not isinstance(versions, list) or not all(isinstance(v, str) for v in versions):
            raise ConfigError(f"{where}.versions must be a list of strings")
        lab.versions = set(versions)
        if "file" in table:
            f = Path(str(table["file"]))
            f = f if f.is_absolute() else path.parent / f
            v = _ledger.lab_version(f)
            if v == "unknown":
                raise ConfigError(f"{where}.file: cannot read {f}")
            lab.versions.add(v)
        answers = table.get("answers", {})
        if not isinstance(answers, dict):
            raise ConfigError(f"{where}.answers must be a table of item = value")
        lab.answers = dict(answers)
        r = table.get("rubric", {})
        if not isinstance(r, dict):
            raise ConfigError(f"{where}.rubric must be a table")
        w = f"{where}.rubric"
        lab.rubric = Rubric(
            commit=_number(r, "commit", 1.0, w), reason=_number(r, "reason", 0.5, w),
            explain=_number(r, "explain", 1.0, w), correct=_number(r, "correct", 0.0, w),
            min_explain_chars=int(_number(r, "min_explain_chars", 15, w)),
            tolerance=_number(r, "tolerance", 1.5, w, lo=1.0))
        cfg.labs[lab_id] = lab
    return cfg

