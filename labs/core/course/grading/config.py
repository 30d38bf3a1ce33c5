"""The course configuration for ``labs-grade``: the TOML file, checked against the labs.

:func:`load_config` turns the course TOML (see :func:`example_config`, generated from the lab
catalogue so it is never out of date) into a :class:`CourseConfig` of :class:`LabConfig` with a
:class:`Rubric` each. It cannot silently misgrade: an unknown key (``rubrik``), a lab id that
is not a lab, an item the lab does not ask, a lab with no items, a malformed deadline or
extension, an ``answers`` value that is not one of the item's options (a choice; the option's
label is taken and mapped to its value) or not a finite, non-zero number (a numeric item; a
number in quotes is taken) all raise :class:`ConfigError` naming the key, the allowed values
and the close matches. A lab's items
default to every prediction item the lab asks (from :mod:`labs.core.course.catalogue`). Part
of :mod:`labs.core.course.grading` (import it through that name).
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta, timezone, tzinfo
from pathlib import Path
from typing import Any

from labs.core.course import catalogue as _catalogue
from labs.core.course import ledger as _ledger
from labs.core.course.grading.ids import close_matches, norm_id
from labs.core.course.grading.instructor_csvs import (ConfigError, Roster, load_roster,
                                                      parse_duration, roster_path)
from labs.core.physics import misconceptions

__all__ = [
    "CourseConfig", "KEYS", "LAB_ID_RE", "LabConfig", "Rubric", "example_config", "load_config",
    "time_zone"
]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

LAB_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,40}$")
KEYS = {
    "": ("course", "labs"),
    "course": ("name", "id_column", "late_policy", "late_penalty_per_day", "students",
               "roster", "overrides", "extensions", "timezone"),
    "lab": ("title", "deadline", "file", "versions", "items", "answers", "rubric",
            "extensions", "canvas_assignment_id", "tolerances"),
    "rubric": ("commit", "reason", "explain", "correct", "min_explain_chars", "tolerance"),
}


@dataclass
class Rubric:
    """Points per prediction item; correctness earns nothing unless ``correct`` > 0."""

    commit: float = 1.0  # predicted before the item was unlocked / observed / explained
    reason: float = 0.5  # the prediction has a confidence 1-5 and a one-line reason
    explain: float = 1.0  # observed and explained (>= min_explain_chars) after predicting
    correct: float = 0.0  # prediction within its tolerance of the instrument (or the right choice)
    #: an explanation's length counts its characters that are not whitespace
    min_explain_chars: int = 15
    #: numeric: correct if off by at most this factor (answers.within_factor: exact, the
    #: boundary inside); None: each item's own (labs.core.physics.misconceptions.tolerance)
    tolerance: float | None = None

    @property
    def per_item(self) -> float:
        return self.commit + self.reason + self.explain + self.correct


@dataclass
class LabConfig:
    lab_id: str
    title: str
    deadline: datetime | None = None
    items: list[str] = field(default_factory=list)  # empty: the catalogue's (or as seen)
    versions: set[str] = field(default_factory=set)  # empty: not checked
    answers: dict[str, Any] = field(default_factory=dict)  # item -> right value (optional)
    rubric: Rubric = field(default_factory=Rubric)
    extensions: dict[str, Any] = field(default_factory=dict)  # student -> datetime|timedelta
    #: the Canvas assignment this lab's scores go to (its id is in the assignment's address:
    #: .../assignments/<id>); canvas.csv heads the column ``Title (id)``
    canvas_assignment_id: str = ""
    #: item -> the course file's tolerance for that item (``[labs.<id>.tolerances]``)
    tolerances: dict[str, float] = field(default_factory=dict)

    def tolerance_for(self, item_id: str) -> tuple[float, str]:
        """(the factor ``item_id`` is graded within, where it comes from): the course file's
        ``[labs.<lab>.tolerances]`` entry for the item, else the lab's ``rubric.tolerance``,
        else the item's own (:func:`labs.core.physics.misconceptions.tolerance`, ``""``)."""
        if item_id in self.tolerances:
            return self.tolerances[item_id], f"labs.{self.lab_id}.tolerances"
        if self.rubric.tolerance is not None:
            return self.rubric.tolerance, f"labs.{self.lab_id}.rubric.tolerance"
        own = self.__dict__.setdefault("_own_tolerances", {})  # asked per student: look once
        if item_id not in own:
            own[item_id] = misconceptions.tolerance(item_id)
        return own[item_id], ""

    def tolerance_overrides(self) -> list[str]:
        """One line per item whose tolerance the course file sets to something other than the
        item's own: what the gradebook and the console say."""
        out = []
        for item in self.items:
            value, source = self.tolerance_for(item)
            own = misconceptions.tolerance(item)
            if source and value != own:
                out.append(f"{item} is graded within {value:g}x ({source} in the course "
                           f"file), not its own {own:g}x")
        return out

    def deadline_for(self, student_id: str, course: CourseConfig | None = None):
        """The deadline that applies to one student (an extension moves it); None if none."""
        if self.deadline is None:
            return None
        ext = self.extensions.get(norm_id(student_id))
        if ext is None and course is not None:
            ext = course.extensions.get(norm_id(student_id))
        if isinstance(ext, datetime):
            return max(ext, self.deadline)
        return self.deadline + ext if isinstance(ext, timedelta) else self.deadline


@dataclass
class CourseConfig:
    name: str = ""
    id_column: str = "SIS User ID"
    late_policy: str = "report"  # "report": all events count; "deadline": only those before it
    #: each part done late keeps 1 - this x started days late of its points (at least 0)
    late_penalty_per_day: float = 0.0
    labs: dict[str, LabConfig] = field(default_factory=dict)
    students: list[str] = field(default_factory=list)  # roster ids: listed even with no ledger
    configured: bool = False  # False: labs are inferred from the submissions
    roster: Roster | None = None  # names and e-mails (``roster`` CSV)
    overrides_path: Path | None = None
    extensions: dict[str, timedelta] = field(default_factory=dict)  # every lab, by norm_id
    extension_ids: dict[str, str] = field(default_factory=dict)  # norm_id -> as written
    #: the zone of deadlines written without one (``[course] timezone``, e.g.
    #: America/New_York: daylight saving applied by date); times are shown in UTC
    timezone: tzinfo | None = None

    def roster_ids(self) -> list[str]:
        """Every id the course lists (roster CSV first, then ``students``), once each."""
        out, seen = [], set()
        for sid in (self.roster.ids if self.roster else []) + list(self.students):
            if norm_id(sid) not in seen:
                seen.add(norm_id(sid))
                out.append(sid.strip())
        return out


def _check_keys(table: dict, allowed: tuple[str, ...], where: str) -> None:
    for key in table:
        if key not in allowed:
            name = f"{where}.{key}" if where else key
            raise ConfigError(f"{name}: unknown key{close_matches(key, allowed)}; allowed: "
                              f"{', '.join(allowed)}")


def time_zone(name: Any, where: str) -> tzinfo:
    """A named time zone (``"America/New_York"``: the IANA database, through ``zoneinfo``, so
    daylight saving time is applied on the right dates); ConfigError naming close matches."""
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError, available_timezones

    if not isinstance(name, str) or not name.strip():
        raise ConfigError(f"{where}: a time zone is a name such as \"America/New_York\", got "
                          f"{name!r}")
    try:
        return ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError):
        try:
            known = available_timezones()
        except Exception:  # noqa: BLE001 - no database at all: say so below
            known = set()
        hint = close_matches(name.strip(), known) if known else (
            " (this Python has no time-zone database: pip install tzdata)")
        raise ConfigError(f"{where}: {name!r} is not a time zone{hint}; write an IANA name "
                          "such as \"America/New_York\" or \"Europe/London\"") from None


#: ``2025-03-07T23:59 America/New_York``: a date-time and a named zone, in one string
_ZONED = re.compile(r"^\s*(?P<when>\d{4}-\d{2}-\d{2}"
                    r"(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?)\s+"
                    r"(?P<zone>[A-Za-z][A-Za-z0-9_+\-]*(?:/[A-Za-z0-9_+\-]+)*)\s*$")


def _deadline(value: Any, where: str, zone: tzinfo | None = None) -> datetime | None:
    """A deadline as an aware UTC time: a TOML date-time with a UTC offset, one without
    (in the course's ``timezone``), or a string with a named zone
    (``"2025-03-07T23:59 America/New_York"``)."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value
        named = _ZONED.match(text)
        if named and not named.group("zone").upper() == "Z":
            text, zone = named.group("when").replace(" ", "T"), time_zone(
                named.group("zone"), where)
        try:
            value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        except ValueError:
            raise ConfigError(f"{where}: deadline {value!r} is not an ISO date-time (e.g. "
                              "2025-03-07T23:59:00, with the course's timezone, or "
                              "\"2025-03-07T23:59 America/New_York\")") from None
    if isinstance(value, date) and not isinstance(value, datetime):
        raise ConfigError(f"{where}: deadline needs a time, e.g. {value.isoformat()}T23:59:00 "
                          "(with [course] timezone = \"America/New_York\") or "
                          f"{value.isoformat()}T23:59:00-05:00")
    if not isinstance(value, datetime):
        raise ConfigError(f"{where}: deadline must be a date-time, got {value!r}")
    if value.tzinfo is None:
        if zone is None:
            raise ConfigError(f"{where}: deadline {value.isoformat()} has no time zone; set "
                              "[course] timezone = \"America/New_York\" (your zone's name), or "
                              f"write {value.isoformat()}-05:00 or {value.isoformat()}Z")
        value = value.replace(tzinfo=zone)
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:
        raise ConfigError(f"{where}: deadline {value.isoformat()} is out of range") from None


def _number(table: dict, key: str, default: float, where: str, *, lo: float = 0.0) -> float:
    v = table.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < lo:
        raise ConfigError(f"{where}.{key} must be a number >= {lo}, got {v!r}")
    return float(v)


def _extensions(table: Any, where: str, *, dates: bool,
                zone: tzinfo | None = None) -> tuple[dict, dict]:
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table of student = extension")
    out, ids = {}, {}
    for sid, value in table.items():
        w = f"{where}.{sid.strip()}"
        if isinstance(value, (datetime, date)) or (isinstance(value, str) and dates and
                                                   _ZONED.match(value)):
            if not dates:
                raise ConfigError(f"{w}: a course-wide extension is extra time such as \"2d\"")
            value = _deadline(value, w, zone)
        else:
            value = parse_duration(value, w)
        if norm_id(sid) in out:
            raise ConfigError(f"{w}: the student has two extensions (ids ignore case and "
                              "spaces)")
        out[norm_id(sid)], ids[norm_id(sid)] = value, sid.strip()
    return out, ids


def _items(table: dict, where: str, entry: _catalogue.LabEntry) -> list[str]:
    known = entry.item_ids
    if "items" not in table:
        if not known:
            raise ConfigError(f"{where}: the lab has no prediction items ({entry.file}: "
                              f"{'; '.join(entry.problems) or 'no numeric_form/choice_form'})")
        return known
    items = table["items"]
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise ConfigError(f"{where}.items must be a list of item ids")
    if not items:
        raise ConfigError(f"{where}.items: no items (a lab graded on nothing); leave the key "
                          f"out for all of the lab's items: {', '.join(known)}")
    for i in items:
        if i not in known:
            raise ConfigError(f"{where}.items: {i!r} is not a prediction item of "
                              f"{entry.lab_id}{close_matches(i, known)}; its items: "
                              f"{', '.join(known)}")
    if len(set(items)) != len(items):
        raise ConfigError(f"{where}.items lists an item twice")
    return items


def _toml_value(value: Any) -> str:
    return _toml_str(value) if isinstance(value, str) else repr(value)


def _answer(item: _catalogue.CatalogueItem, value: Any, where: str) -> Any:
    """An instructor's reference answer, checked against the lab's item and returned as the
    ledger records it. A choice: one of the item's option values, or the label the student
    sees (mapped to its value; for a number-valued option its digits in quotes too). A number:
    a finite, non-zero number, quoted or not. ConfigError naming the allowed values otherwise
    (a value no student's ledger can ever equal would silently mark everyone wrong)."""
    if item.kind == "choice":
        if not item.options:  # the catalogue could not read them: nothing to check against
            return value
        values = [v for _, v in item.options]
        if not isinstance(value, bool) and isinstance(value, (str, int, float)):
            for v in values:  # the value itself (a number-valued option: 64 or 64.0)
                if type(v) is not bool and v == value and (
                        isinstance(v, str) == isinstance(value, str)):
                    return v
            if isinstance(value, str):
                text = " ".join(value.split()).casefold()
                for label, v in item.options:  # the label the student sees
                    if " ".join(label.split()).casefold() == text:
                        return v
                for v in values:  # a number-valued option in quotes: "64"
                    if not isinstance(v, str) and str(v) == value.strip():
                        return v
        shown = ", ".join(f"{_toml_value(v)} ({label})" if label != v else _toml_value(v)
                          for label, v in item.options)
        words = [str(v) for v in values] + [label for label, _ in item.options]
        raise ConfigError(f"{where}: {value!r} is not an option of {item.item_id}"
                          f"{close_matches(str(value), words)}; write one of its values: "
                          f"{shown}")
    number = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, (int, float)) \
            or not math.isfinite(number) or number == 0:
        units = f" in {item.units}" if item.units else ""
        raise ConfigError(f"{where}: {item.item_id} asks for a number{units}; its answer must "
                          f"be a finite number other than 0 (e.g. 12.5, no units), got "
                          f"{value!r}")
    return float(number)


def _lab(lab_id: str, table: Any, path: Path, entries: dict,
         zone: tzinfo | None = None) -> LabConfig:
    where = f"labs.{lab_id}"
    if not LAB_ID_RE.match(lab_id) or not isinstance(table, dict):
        raise ConfigError(f"{where}: lab ids are letters, digits, _ and -; got {lab_id!r}")
    if lab_id not in entries:
        raise ConfigError(f"{where}: {lab_id!r} is not a lab{close_matches(lab_id, entries)}; "
                          f"the labs are {', '.join(entries)}")
    _check_keys(table, KEYS["lab"], where)
    entry = entries[lab_id]
    lab = LabConfig(lab_id, str(table.get("title", entry.title)),
                    _deadline(table.get("deadline"), where, zone), _items(table, where, entry))
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
    items = {i.item_id: i for i in entry.items}
    for item, value in answers.items():
        if item not in items:
            raise ConfigError(f"{where}.answers: {item!r} is not a prediction item of "
                              f"{lab_id}{close_matches(item, entry.item_ids)}")
        lab.answers[item] = _answer(items[item], value, f"{where}.answers.{_toml_str(item)}")
    r = table.get("rubric", {})
    if not isinstance(r, dict):
        raise ConfigError(f"{where}.rubric must be a table")
    w = f"{where}.rubric"
    _check_keys(r, KEYS["rubric"], w)
    lab.rubric = Rubric(
        commit=_number(r, "commit", 1.0, w), reason=_number(r, "reason", 0.5, w),
        explain=_number(r, "explain", 1.0, w), correct=_number(r, "correct", 0.0, w),
        min_explain_chars=int(_number(r, "min_explain_chars", 15, w)),
        tolerance=_number(r, "tolerance", None, w, lo=1.0) if "tolerance" in r else None)
    tolerances = table.get("tolerances", {})
    if not isinstance(tolerances, dict):
        raise ConfigError(f"{where}.tolerances must be a table of item = factor (>= 1)")
    numeric = [i.item_id for i in entry.items if i.kind == "numeric"]
    for key in tolerances:
        item = key if key in numeric or "." in key else f"{lab_id}.{key}"  # "crossover_n"
        if item not in numeric:
            raise ConfigError(f"{where}.tolerances: {key!r} is not a numeric prediction item "
                              f"of {lab_id}{close_matches(item, numeric)}; its numeric items: "
                              f"{', '.join(numeric) or '(none)'}")
        lab.tolerances[item] = _number(tolerances, key, None, f"{where}.tolerances", lo=1.0)
    lab.extensions, _ = _extensions(table.get("extensions", {}), f"{where}.extensions",
                                    dates=True, zone=zone)
    cid = table.get("canvas_assignment_id", "")
    if isinstance(cid, bool) or not (isinstance(cid, int) and cid > 0 or isinstance(cid, str)
                                     and re.fullmatch(r"\d{0,20}", cid.strip())):
        raise ConfigError(f"{where}.canvas_assignment_id must be the number at the end of the "
                          f"assignment's Canvas address (.../assignments/123456), got {cid!r}")
    lab.canvas_assignment_id = str(cid).strip()
    return lab


def load_config(path: str | os.PathLike | None, *,
                labs_dir: str | os.PathLike | None = None) -> CourseConfig:
    """Read the course TOML (see :func:`example_config`); None gives an empty config.

    ``labs_dir``: where the lab notebooks are (default: the installed labs). Raises
    :class:`ConfigError` naming the offending key and close matches.
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
    _check_keys(data, KEYS[""], "")
    course = data.get("course", {})
    if not isinstance(course, dict):
        raise ConfigError("[course] must be a table")
    _check_keys(course, KEYS["course"], "course")
    cfg = CourseConfig(
        name=str(course.get("name", "")), id_column=str(course.get("id_column", "SIS User ID")),
        late_policy=str(course.get("late_policy", "report")),
        late_penalty_per_day=_number(course, "late_penalty_per_day", 0.0, "course"),
        configured=True)
    if "timezone" in course:
        cfg.timezone = time_zone(course["timezone"], "course.timezone")
    if cfg.late_policy not in ("report", "deadline"):
        raise ConfigError(f"course.late_policy must be 'report' or 'deadline', "
                          f"got {cfg.late_policy!r}")
    students = course.get("students", [])
    if not isinstance(students, list) or not all(isinstance(s, str) for s in students):
        raise ConfigError("course.students must be a list of student ids")
    cfg.students = students
    if "roster" in course:
        cfg.roster = load_roster(roster_path(course["roster"], path, "course.roster"),
                                 cfg.id_column)
    if "overrides" in course:
        cfg.overrides_path = roster_path(course["overrides"], path, "course.overrides")
    cfg.extensions, cfg.extension_ids = _extensions(course.get("extensions", {}),
                                                    "course.extensions", dates=False)
    labs = data.get("labs", {})
    if not isinstance(labs, dict):
        raise ConfigError("[labs] must be a table of [labs.<lab_id>] tables")
    entries = {e.lab_id: e for e in _catalogue.catalogue(labs_dir)}
    for lab_id, table in labs.items():
        cfg.labs[lab_id] = _lab(lab_id, table, path, entries, cfg.timezone)
    return cfg


def example_config(labs_dir: str | os.PathLike | None = None) -> str:
    """A course TOML listing every lab with its prediction items, read from the labs."""
    out = ["# labs-grade course config, generated from the labs (labs-grade --example-config).",
           "[course]", 'name = "Roofline Labs, spring term"',
           'timezone = "America/New_York"      # deadlines below are this zone\'s local time '
           "(daylight saving included)",
           'id_column = "SIS User ID"          # the gradebook\'s id column; Gradescope: "SID"',
           'late_policy = "report"             # or "deadline": later events earn nothing',
           "late_penalty_per_day = 0.0         # per started day late, off each late part's points",
           '# roster = "roster.csv"            # ids, names, e-mails (a Canvas/Gradescope export)',
           '# overrides = "overrides.csv"      # student,item,points,comment: merged in',
           '# students = ["ada", "bob"]        # or a roster without names',
           "", "# [course.extensions]             # extra time on every lab, per student",
           '# ada = "2d"', ""]
    start = datetime(2025, 3, 7, 23, 59)
    for n, entry in enumerate(_catalogue.catalogue(labs_dir)):
        deadline = (start + timedelta(weeks=n)).strftime("%Y-%m-%dT%H:%M:00")
        out += [f"[labs.{entry.lab_id}]", f"title = {_toml_str(entry.title)}",
                f"deadline = {deadline}",
                "# canvas_assignment_id = 123456   # from the assignment's Canvas address",
                f'file = "labs/{entry.file}"   # the released version: its hash is accepted',
                "items = [                        # default: all of them, in this order"]
        for i in entry.items:
            text = re.sub(r"\s+", " ", i.text)
            out.append(f"    {_toml_str(i.item_id)},  # {i.kind}: {text[:70]}"
                       f"{'…' if len(text) > 70 else ''}")
            if i.kind == "choice" and i.options:
                out.append("    #   values: " + " | ".join(_toml_value(v) for _, v in i.options))
            elif i.kind == "numeric" and i.units:
                out.append(f"    #   a number in {i.units}")
        out += ["]", f"# answers = {{ {_toml_str(entry.items[0].item_id) if entry.items else ''}"
                     " = ... }  # default: what each student's instrument showed",
                "#   a choice: one of its values above (its label also works); a number: a "
                "number, no units",
                f"# [labs.{entry.lab_id}.extensions]",
                "# ada = 2025-03-21T23:59:00   # a new deadline (never earlier than the lab's), "
                "or \"48h\" more", ""]
        if n == 0:
            out += [f"[labs.{entry.lab_id}.rubric]          # the default; each lab may have one",
                    "commit = 1.0", "reason = 0.5", "explain = 1.0", "correct = 0.0",
                    "min_explain_chars = 15          # characters that are not whitespace",
                    "# tolerance = 1.5   # default: each numeric item's own (the instructor "
                    "copy shows it);",
                    "#                   # a factor here replaces it for every numeric item of "
                    "the lab", "",
                    f"# [labs.{entry.lab_id}.tolerances]   # or one item's own factor, by item",
                    f"# {_first_numeric(entry)} = 1.3",
                    ""]
    return "\n".join(out)


def _first_numeric(entry) -> str:
    """A lab's first numeric item, by its short name (``crossover_n``), for an example."""
    return next((i.item_id.split(".", 1)[-1] for i in entry.items if i.kind == "numeric"),
                "item")


def _toml_str(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
