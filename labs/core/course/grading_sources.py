"""Finding submissions for ``labs-grade``: every candidate ledger in files, folders and zips.

What an LMS download holds: files, folders (searched recursively, symbolic links not followed)
and zips nested up to a limit, read in memory (nothing is extracted to disk). Sizes, member
counts and nesting are bounded by :class:`Limits`; a file that cannot be taken in becomes a
:class:`FileReport` with its reason. Side files are not inputs: the lab's ``.lock`` files, a
Mac zip's ``__MACOSX/`` and ``._*`` resource forks, ``.DS_Store``. Part of
:mod:`labs.core.course.grading` (import it through that name).
"""

from __future__ import annotations

import io
import os
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from labs.core.course.grading_ids import id_from_name, lms_submission

LEDGER_SUFFIXES = (".jsonl", ".ndjson", ".json", ".txt", ".log")


@dataclass
class Limits:
    """Bounds that keep a hostile submission from exhausting the grader.

    Per file: bytes (``max_file_bytes``), lines read (``max_lines``) and problems recorded
    (``max_problems``); past either of the last two the file is reported ``file_too_damaged``
    and reading stops (what was read before counts).
    """

    max_file_bytes: int = 20 * 1024 * 1024
    max_zip_members: int = 10_000
    max_zip_total_bytes: int = 512 * 1024 * 1024
    max_zip_depth: int = 3
    max_files: int = 100_000
    max_lines: int = 200_000
    max_problems: int = 1_000


@dataclass
class FileReport:
    """One input file: what it held and what was wrong with it (problems: ``code@line`` text).

    ``name_id`` is the student id the file's name carries (``roofline-ledger-<id>.jsonl``);
    ``notes`` are facts that are not problems (e.g. "read as UTF-16").
    """

    source: str
    student_ids: list[str] = field(default_factory=list)
    events: int = 0
    problems: list[str] = field(default_factory=list)
    skipped: str = ""
    head_hash: str = ""
    recovery: bool = False
    name_id: str = ""
    notes: list[str] = field(default_factory=list)
    edited: int = 0  # well-formed lines whose hash does not match (listed, never graded)
    #: (student key, item id) -> (hash, value) of the file's first valid predict of the item
    first_predicts: dict = field(default_factory=dict, repr=False)
    written_ids: list[str] = field(default_factory=list)  # the ids its events carry
    #: the submitter's LMS user id from the file's name (Canvas bulk download), and whether
    #: the LMS marked the upload late
    lms_id: str = ""
    lms_late: bool = False
    submitter: str = ""  # the roster student the LMS id names (set when graded with a roster)

    def __post_init__(self):
        if not self.name_id:
            self.name_id = id_from_name(self.source)
        if not self.lms_id:
            self.lms_id, self.lms_late = lms_submission(self.source)

    @property
    def unreadable(self) -> bool:
        """A ledger file that gave nothing to grade because of a problem (not a skipped one)."""
        return not self.skipped and self.events == 0 and self.edited == 0 and bool(self.problems)

    @property
    def reason(self) -> str:
        """Why the file could not be graded (or its first problem), in words."""
        return describe(self.problems[-1] if self.unreadable else self.problems[0]) \
            if self.problems else self.skipped


_WORDS = {
    "file_empty": "empty file",
    "file_too_large": "too large",
    "file_unreadable": "could not be read",
    "file_too_damaged": "too damaged to grade",
    "not_a_ledger": "not a ledger",
    "wrong_encoding": "wrong encoding",
}


def describe(problem: str) -> str:
    """A problem code with its detail, in words: ``file_empty`` -> ``empty file``."""
    code, _, rest = problem.partition(" ")
    words = _WORDS.get(code.split("@")[0], code.replace("_", " "))
    return f"{words} {rest}".strip()


def _ignored(name: str) -> bool:
    return name.endswith(".lock") or name.startswith("._") or name in (".DS_Store",
                                                                       "Thumbs.db")


def iter_sources(inputs: Iterable[str | os.PathLike], limits: Limits,
                  files: list[FileReport]) -> Iterator[tuple[str, bytes]]:
    """(display name, bytes) of every candidate ledger; problems go into ``files``."""
    count = 0
    for item in inputs:
        path = Path(item)
        if path.is_dir():
            for root, dirs, names in os.walk(path, followlinks=False):
                dirs.sort()
                if "__MACOSX" in dirs:  # a Mac zip's resource forks, never a ledger
                    dirs.remove("__MACOSX")
                for name in sorted(names):
                    if _ignored(name):
                        continue
                    count += 1
                    if count > limits.max_files:
                        files.append(FileReport(str(path), skipped="too many files"))
                        return
                    yield from _from_path(Path(root) / name, limits, files)
        else:
            yield from _from_path(path, limits, files)


def _from_path(path: Path, limits: Limits, files: list[FileReport]):
    name = str(path)
    if _ignored(path.name):
        return
    if path.is_symlink() or not path.is_file():
        files.append(FileReport(name, skipped="not a regular file"))
        return
    try:
        size = path.stat().st_size
        if name.lower().endswith(".zip") and not zipfile.is_zipfile(path):
            files.append(FileReport(name, problems=["file_unreadable (not a valid zip)"]))
            return
        if zipfile.is_zipfile(path):
            with open(path, "rb") as f:
                yield from _from_zip(name, f, limits, files, depth=1)
            return
        if not name.lower().endswith(LEDGER_SUFFIXES):
            files.append(FileReport(name, skipped="not a ledger file (by its name)"))
            return
        if size > limits.max_file_bytes:
            files.append(FileReport(name, problems=[f"file_too_large ({size} bytes)"]))
            return
        with open(path, "rb") as f:
            yield name, f.read(limits.max_file_bytes + 1)
    except (OSError, zipfile.BadZipFile) as exc:
        files.append(FileReport(name, problems=[f"file_unreadable ({type(exc).__name__})"]))


def _from_zip(name: str, fileobj, limits: Limits, files: list[FileReport], depth: int):
    if depth > limits.max_zip_depth:
        files.append(FileReport(name, skipped="zip nested too deeply"))
        return
    try:
        archive = zipfile.ZipFile(fileobj)
        members = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError) as exc:
        files.append(FileReport(name, problems=[f"file_unreadable (zip: {type(exc).__name__})"]))
        return
    if len(members) > limits.max_zip_members:
        files.append(FileReport(name, problems=[f"file_too_large ({len(members)} zip members)"]))
        return
    total = 0
    for info in members:
        member = f"{name}!{info.filename}"
        if info.is_dir() or any(_ignored(p) for p in info.filename.split("/")):
            continue
        lower = info.filename.lower()
        is_zip = lower.endswith(".zip")
        if not (is_zip or lower.endswith(LEDGER_SUFFIXES)):
            files.append(FileReport(member, skipped="not a ledger file (by its name)"))
            continue
        limit = limits.max_zip_total_bytes if is_zip else limits.max_file_bytes
        if info.file_size > limit:
            files.append(FileReport(member, problems=[f"file_too_large ({info.file_size} bytes)"]))
            continue
        try:
            with archive.open(info) as f:
                data = f.read(limit + 1)  # the header may lie: read at most limit + 1
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError,
                EOFError) as exc:
            files.append(FileReport(member, problems=[f"file_unreadable ({type(exc).__name__})"]))
            continue
        if len(data) > limit:
            files.append(FileReport(member, problems=["file_too_large (more than declared)"]))
            continue
        total += len(data)
        if total > limits.max_zip_total_bytes:
            files.append(FileReport(member, skipped="zip larger than the total limit"))
            return
        if is_zip:
            yield from _from_zip(member, io.BytesIO(data), limits, files, depth + 1)
        else:
            yield member, data
