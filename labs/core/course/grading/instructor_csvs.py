"""The instructor's CSVs for ``labs-grade``: the roster, manual overrides and receipts.

- **Roster** (``--roster`` or ``[course] roster``): one row per student with a header row. The
  id column is the course's ``id_column`` whenever the CSV has it filled in for anyone (a row
  where it is blank is left out and reported in :attr:`Roster.left_out`, never keyed by
  another column); only when it is absent or blank on every row (a Canvas course without SIS
  ids) is it the first of ``SID``, ``SIS User ID``, ``SIS Login ID``, ``Student ID``, ``ID``,
  ``id`` that every student has (said in :attr:`Roster.notes`). Canvas's test student
  (``Student, Test``) is always left out and reported. Names come from ``Name``,
  ``Student`` or ``Full Name`` (or ``First Name`` + ``Last Name``, ``FirstName`` +
  ``LastName``), e-mails from ``Email``. A
  Canvas gradebook export or a Gradescope roster export works as it is; every other column
  is kept for the Canvas file. Every identity column (SIS User ID, SIS Login ID, e-mail,
  Canvas ``ID``) maps to the one student (:meth:`Roster.resolve`).
- **Overrides** (``--overrides`` or ``[course] overrides``): ``student,item,points,comment``;
  ``item`` is a prediction item id (the points replace what the rubric gave that item) or a lab
  id (the points replace the whole lab's). Checked against the class when grading.
- **Receipts** (``--receipts``): ``student,hash`` (a hash prefix of at least 12 hex digits).

Every problem raises :class:`ConfigError` naming the file, the row and the column. Ids compare
by :func:`~labs.core.course.grading.ids.norm_id`. Part of :mod:`labs.core.course.grading`
(import it through that name).
"""

from __future__ import annotations

import csv
import math
import os
import re
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

from labs.core.course.grading.ids import norm_id

__all__ = [
    "ALIAS_COLUMNS", "ConfigError", "LMS_ID_COLUMN", "MAX_ROWS", "Override", "Roster",
    "RosterEntry", "TEST_STUDENT_NAMES", "load_overrides", "load_roster", "parse_duration",
    "read_receipts", "roster_path"
]

MAX_ROWS = 1_000_000  # a course of a few hundred thousand students, with room
_ID_COLUMNS = ("SID", "SIS User ID", "SIS Login ID", "Student ID", "ID", "id", "student_id",
               "student")


class ConfigError(ValueError):
    """A problem in the course TOML or an instructor's CSV, naming what caused it."""


@dataclass
class RosterEntry:
    student_id: str
    name: str = ""
    email: str = ""
    extra: dict[str, str] = field(default_factory=dict)  # every column of the row


#: Identity columns a student may have typed instead of the id column, in the order they are
#: tried (an LMS export has several; each maps to the one student). Canvas's ``ID`` is its
#: user id, the number in a bulk download's file names.
ALIAS_COLUMNS = ("SIS User ID", "SIS Login ID", "Email", "E-mail", "Email Address",
                 "Integration ID", "SID", "Student ID", "ID", "Login ID")
LMS_ID_COLUMN = "ID"


@dataclass
class Roster:
    """Students in roster order, looked up by ``norm_id`` of the id column, or of any identity
    column (:meth:`resolve`)."""

    entries: list[RosterEntry] = field(default_factory=list)
    id_column: str = ""
    columns: list[str] = field(default_factory=list)
    #: rows that are no student of the class: (CSV row, name, why), e.g. Canvas's test
    #: student, or a row whose id column is blank; reported, never graded
    left_out: list[tuple[int, str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. which column the ids came from
    #: the LMS user ids (Canvas's ``ID``) of the test student's rows: their files are no
    #: student's
    test_student_lms_ids: set[str] = field(default_factory=set)
    #: LMS user id -> (CSV row, name) of a row left out for having no id (an auditor)
    left_out_lms: dict[str, tuple[int, str]] = field(default_factory=dict)

    @property
    def rows_without_id(self) -> list[tuple[int, str, str]]:
        """Left-out rows of people (not the test student) whom the roster gives no id."""
        return [x for x in self.left_out if x[2] != "Canvas's test student"]

    def report(self, limit: int = 10) -> list[str]:
        """What the instructor should know about how the roster was read, one line each: the
        column the ids came from when it is not the configured one, and the rows left out."""
        out = [f"Roster: {n}." for n in self.notes]
        if self.left_out:
            shown = "; ".join(f"row {n} {name} ({why})" for n, name, why in self.left_out[:limit])
            more = f" ... and {len(self.left_out) - limit} more" \
                if len(self.left_out) > limit else ""
            out.append(f"Roster: {len(self.left_out)} row(s) left out, not graded and never in "
                       f"canvas.csv: {shown}{more}.")
        return out

    def get(self, student_id: str) -> RosterEntry | None:
        by_key = self.__dict__.setdefault(
            "_by_key", {norm_id(e.student_id): e for e in self.entries})
        return by_key.get(norm_id(student_id))

    def _aliases(self) -> dict[str, tuple[RosterEntry, str]]:
        """norm key -> (entry, how it matched), built once; a value two students share is no
        alias of either (it could be both)."""
        if "_alias_map" in self.__dict__:
            return self.__dict__["_alias_map"]
        found: dict[str, list[tuple[RosterEntry, str]]] = {}
        columns = [c for c in ALIAS_COLUMNS if c in self.columns and c != self.id_column]
        for e in self.entries:
            for col in columns:
                value = e.extra.get(col, "").strip()
                if value:
                    found.setdefault(norm_id(value), []).append((e, col))
            for col in [self.id_column] + columns:  # an id a spreadsheet stripped of zeros
                value = e.extra.get(col, "").strip()
                if value.isdigit() and value.startswith("0") and value.lstrip("0"):
                    found.setdefault(norm_id(value.lstrip("0")), []).append(
                        (e, f"{col} without its leading zeros"))
        out = {}
        for key, hits in found.items():
            if len({id(e) for e, _ in hits}) == 1 and self.get(key) is None:
                out[key] = hits[0]
        self.__dict__["_alias_map"] = out
        return out

    def resolve(self, typed: str) -> tuple[RosterEntry, str] | None:
        """(the student, the column it matched) for an id as typed: the id column itself
        (``""``), else any identity column the roster has (SIS User ID, SIS Login ID, e-mail,
        LMS ``ID``, the same digits without leading zeros); None if no one's."""
        entry = self.get(typed)
        if entry is not None:
            return entry, ""
        return self._aliases().get(norm_id(typed))

    def by_lms_id(self, lms_id: str) -> RosterEntry | None:
        """The student whose LMS user id (Canvas's ``ID`` column) is ``lms_id``."""
        if LMS_ID_COLUMN not in self.columns or not lms_id:
            return None
        by_lms = self.__dict__.setdefault("_by_lms", {
            norm_id(e.extra.get(LMS_ID_COLUMN, "")): e for e in self.entries
            if e.extra.get(LMS_ID_COLUMN, "").strip()})
        return by_lms.get(norm_id(lms_id))

    @property
    def ids(self) -> list[str]:
        return [e.student_id for e in self.entries]

    @property
    def has_names(self) -> bool:
        return any(e.name for e in self.entries)

    @property
    def has_emails(self) -> bool:
        return any(e.email for e in self.entries)


def _read_csv(path: str | os.PathLike, what: str) -> tuple[list[str], list[list[str]]]:
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            rows = []
            for row in csv.reader(f):
                rows.append([c.strip() for c in row])
                if len(rows) > MAX_ROWS:
                    raise ConfigError(f"{what} {path}: more than {MAX_ROWS} rows")
    except OSError as exc:
        raise ConfigError(f"cannot read the {what} {path}: {exc}") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ConfigError(f"{what} {path} is not a UTF-8 CSV file ({exc}); save it as "
                          "CSV UTF-8") from None
    rows = [r for r in rows if any(r)]
    if not rows:
        raise ConfigError(f"{what} {path} is empty")
    return rows[0], rows[1:]


def _column(header: list[str], names) -> int | None:
    folded = [h.casefold() for h in header]
    for name in names:
        if name.casefold() in folded:
            return folded.index(name.casefold())
    return None


#: How Canvas's gradebook export names its "Student View" test student (last, first).
TEST_STUDENT_NAMES = ("student, test", "test student")


def _is_test_student(name: str) -> bool:
    return " ".join(name.split()).casefold() in TEST_STUDENT_NAMES


def load_roster(path: str | os.PathLike, id_column: str = "") -> Roster:
    """Read a roster CSV (see the module doc)."""
    header, rows = _read_csv(path, "roster")
    name_c = _column(header, ("Name", "Student", "Full Name", "Student Name"))
    first_c = _column(header, ("First Name", "FirstName"))
    last_c = _column(header, ("Last Name", "LastName"))
    email_c = _column(header, ("Email", "E-mail", "Email Address"))
    rows = [(n, r + [""] * (len(header) - len(r))) for n, r in enumerate(rows, start=2)
            if not (r and "Points Possible" in r[0])]  # a Canvas export's second row

    def name_of(row: list[str]) -> str:
        return row[name_c] if name_c is not None else " ".join(
            row[c] for c in (first_c, last_c) if c is not None and row[c])

    students = [r for _, r in rows if not _is_test_student(name_of(r))]
    candidates = ([id_column] if id_column else []) + list(_ID_COLUMNS)
    idc = _column(header, (id_column,)) if id_column else None
    # the configured column, whenever the CSV has it filled in for anyone: a row where it is
    # blank (an auditor, a student added by hand) is left out and reported, never re-keyed
    # by another column; only a column blank on every row (Canvas exports "SIS User ID" empty
    # in a course without SIS ids) hands over to the next identity column every student has
    if idc is None or not any(r[idc] for r in students):
        idc = next((c for c in (_column(header, (n,)) for n in candidates)
                    if c is not None and students and all(r[c] for r in students)), None)
        if idc is None:
            idc = next((c for c in (_column(header, (n,)) for n in candidates)
                        if c is not None and any(r[c] for r in students)),
                       _column(header, candidates))
    if idc is None:
        raise ConfigError(f"roster {path}: no id column; name one of "
                          f"{', '.join(([id_column] if id_column else []) + list(_ID_COLUMNS[:5]))}"
                          f" (the header has {', '.join(header)})")
    roster = Roster(id_column=header[idc], columns=header)
    if id_column and header[idc].casefold() != id_column.casefold():
        why = "is blank on every row" if _column(header, (id_column,)) is not None \
            else "is not in its header"
        roster.notes.append(f"the roster's {id_column} column {why}: its ids are its "
                            f"{header[idc]} column")
    seen: dict[str, int] = {}
    for n, row in rows:
        sid, name = row[idc], name_of(row)
        if _is_test_student(name):
            roster.left_out.append((n, name, "Canvas's test student"))
            lms = row[header.index(LMS_ID_COLUMN)].strip() if LMS_ID_COLUMN in header else ""
            if lms:
                roster.test_student_lms_ids.add(lms)
            continue
        if not sid:
            if any(row):
                roster.left_out.append((n, name or "(no name)", f"no {header[idc]}"))
                lms = row[header.index(LMS_ID_COLUMN)].strip() \
                    if LMS_ID_COLUMN in header and header.index(LMS_ID_COLUMN) != idc else ""
                if lms:
                    roster.left_out_lms[lms] = (n, name or "(no name)")
            continue
        if norm_id(sid) in seen:
            raise ConfigError(f"roster {path}: row {n}: id {sid!r} is also on row "
                              f"{seen[norm_id(sid)]} (ids compare ignoring case and spaces)")
        seen[norm_id(sid)] = n
        roster.entries.append(RosterEntry(sid, name, row[email_c] if email_c is not None
                                          else "", dict(zip(header, row))))
    return roster


@dataclass
class Override:
    student_id: str
    item: str  # an item id, or a lab id for the whole lab
    points: float
    comment: str
    row: int
    source: str


def load_overrides(path: str | os.PathLike) -> list[Override]:
    """Read ``student,item,points,comment`` rows (header required; comment optional)."""
    header, rows = _read_csv(path, "overrides")
    cols = [_column(header, (name,)) for name in ("student", "item", "points", "comment")]
    missing = [n for n, c in zip(("student", "item", "points"), cols) if c is None]
    if missing:
        raise ConfigError(f"overrides {path}: the header must name the columns student, "
                          f"item, points (and comment); missing {', '.join(missing)}")
    out: list[Override] = []
    for n, row in enumerate(rows, start=2):
        row = row + [""] * (len(header) - len(row))
        sid, item, raw = row[cols[0]], row[cols[1]], row[cols[2]]
        where = f"overrides {path}: row {n}"
        try:
            points = float(raw)
        except ValueError:
            raise ConfigError(f"{where}: points must be a number, got {raw!r}") from None
        if not math.isfinite(points) or points < 0:
            raise ConfigError(f"{where}: points must be a number >= 0, got {raw!r}")
        if not sid or not item:
            raise ConfigError(f"{where}: student and item are required")
        comment = row[cols[3]] if cols[3] is not None else ""
        out.append(Override(sid, item, points, comment, n, str(path)))
    return out


def read_receipts(path: str | os.PathLike) -> dict[str, list[str]]:
    """A CSV of (student id, hash or hash prefix >= 12 hex), header optional; keys by norm_id."""
    out: dict[str, list[str]] = {}
    with open(path, newline="", encoding="utf-8-sig") as f:
        for row in csv.reader(f):
            if len(row) < 2:
                continue
            sid, h = row[0].strip(), row[1].strip().lower()
            if re.fullmatch(r"[0-9a-f]{12,64}", h):
                out.setdefault(norm_id(sid), []).append(h)
    return out


_DURATION = re.compile(r"^\s*(?:(\d+(?:\.\d+)?)\s*d)?\s*(?:(\d+(?:\.\d+)?)\s*h)?\s*"
                       r"(?:(\d+(?:\.\d+)?)\s*m)?\s*$")


def parse_duration(text: str, where: str) -> timedelta:
    """``"2d"``, ``"48h"``, ``"1d12h"``, ``"90m"`` -> timedelta; ConfigError naming ``where``."""
    m = _DURATION.match(text) if isinstance(text, str) else None
    if not m or not any(m.groups()):
        raise ConfigError(f"{where}: an extension is a new deadline (a date-time with a UTC "
                          f"offset) or extra time such as \"2d\", \"48h\" or \"1d12h\"; got "
                          f"{text!r}")
    d, h, mins = (float(g) if g else 0.0 for g in m.groups())
    return timedelta(days=d, hours=h, minutes=mins)


def roster_path(value, config_path: Path, where: str) -> Path:
    """A CSV path from the course TOML, relative to the TOML's folder."""
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{where} must be a path to a CSV file")
    p = Path(value).expanduser()
    return p if p.is_absolute() else config_path.parent / p
