"""Finding submissions for ``labs-grade``: every candidate ledger in files, folders and zips.

What an LMS download holds: files, folders (searched recursively, symbolic links not followed)
and zips nested up to a limit, read in memory (nothing is extracted to disk). Every path under a
submission root is either read or reported (a link, a FIFO, a device, a folder that cannot be
read, an empty folder), with its student when its name names one; only regular files are
opened (non-blocking, so a FIFO never stalls the grader). Sizes, member
counts and nesting are bounded by :class:`Limits`; a file that cannot be taken in becomes a
:class:`FileReport` with its reason. Side files are not inputs: the lab's ``.lock`` files, a
Mac zip's ``__MACOSX/`` and ``._*`` resource forks, ``.DS_Store``; but one under an LMS
download's name (someone handed it in) is reported, skipped, with its submitter
(:data:`SIDE_FILE`). Part of
:mod:`labs.core.course.grading` (import it through that name).
"""

from __future__ import annotations

import io
import os
import stat
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from labs.core.course.ledger.events import MAX_READ_BYTES
from labs.core.course.grading.ids import (blackboard_submission, folder_of, id_from_name,
                                          lms_submission)

__all__ = [
    "FileReport", "LEDGER_SUFFIXES", "LazyFile", "Limits", "RECEIPT_FILE", "SIDE_FILE",
    "blackboard_receipt", "describe", "iter_sources", "too_large"
]

LEDGER_SUFFIXES = (".jsonl", ".ndjson", ".json", ".txt", ".log")


@dataclass
class Limits:
    """Bounds that keep a hostile submission from exhausting the grader.

    Per file: bytes (``max_file_bytes``), lines read (``max_lines``) and problems recorded
    (``max_problems``); past either of the last two the file is reported ``file_too_damaged``
    and reading stops (what was read before counts).
    """

    max_file_bytes: int = MAX_READ_BYTES  # the lab's own limit: one limit for both
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
    #: holding a value (set when its events are merged: load.merge_events)
    first_predicts: dict = field(default_factory=dict, repr=False)
    written_ids: list[str] = field(default_factory=list)  # the ids its events carry
    #: the submitter's LMS user id from the file's name (Canvas bulk download), and whether
    #: the LMS marked the upload late
    lms_id: str = ""
    lms_late: bool = False
    submitter: str = ""  # the roster student the LMS id names (set when graded with a roster)
    #: per id its events carry: what the class-wide plan needs (load.summarise_file)
    by_written: dict = field(default_factory=dict, repr=False)
    #: id its events carry -> the student they belong to, as spelt (set when graded)
    owners: dict = field(default_factory=dict, repr=False)
    digest: str = ""  # of the file's bytes: two copies of one file have the same
    spill: tuple | None = field(default=None, repr=False)  # where a parallel run keeps events
    #: who the download's layout says handed it in (Blackboard's username, else its folder):
    #: its student when the file's name names none and the id is one the class knows
    folder_id: str = ""
    name_owner: str = ""  # the student (norm id) its name stands for (set when graded)

    def __post_init__(self):
        if not self.name_id:
            self.name_id = id_from_name(self.source)
        if not self.lms_id:
            self.lms_id, self.lms_late = lms_submission(self.source)
        if not self.folder_id:
            self.folder_id = folder_of(self.source)

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


def too_large(size: int | str, limit: int) -> str:
    """The problem of a ledger file over the size limit, naming the option that raises it."""
    what = f"{size} bytes" if isinstance(size, int) else size
    return (f"file_too_large ({what}, over the {limit / 2**20:g} MiB limit: "
            "labs-grade --max-file-mb raises it)")


def describe(problem: str) -> str:
    """A problem code with its detail, in words: ``file_empty`` -> ``empty file``."""
    code, _, rest = problem.partition(" ")
    words = _WORDS.get(code.split("@")[0], code.replace("_", " "))
    return f"{words} {rest}".strip()


def _side_file(name: str) -> bool:
    return name.endswith(".lock") or name.startswith("._") or name in (".DS_Store",
                                                                       "Thumbs.db")


#: Why Blackboard's receipt of a submission is not graded (files.csv).
RECEIPT_FILE = "Blackboard's receipt of a submission, not a ledger"


def blackboard_receipt(name: str, head: bytes = b"") -> bool:
    """Whether a file is Blackboard's receipt of an attempt: by its download name, or by its
    text (``Name: ... Assignment: ... Date Submitted: ...``)."""
    if blackboard_submission(name)[1]:
        return True
    text = head.lstrip(b"\xef\xbb\xbf").lstrip()
    return text.startswith(b"Name:") and b"Date Submitted:" in text[:4096]


#: Why a side file someone handed in through the LMS was not graded (files.csv, the console).
SIDE_FILE = "a side file (the lab's lock file), not the ledger: hand in roofline-ledger-<id>.jsonl"


def _ignored(name: str) -> bool:
    """A side file that is skipped without a trace: one that sits next to a ledger in a
    student's folder. The same file under an LMS download's name (Canvas:
    ``name_123_456_.roofline-ledger-ada.lock``) was handed in by someone: it is reported."""
    return _side_file(name) and not lms_submission(name)[0]


def _handed_in_side_file(name: str) -> bool:
    return _side_file(name) and bool(lms_submission(name)[0])


def _names_student(name: str) -> bool:
    """Whether a path's name names a student (a ledger's name, or an LMS download's)."""
    probe = FileReport(name)
    return bool(probe.name_id or probe.lms_id)


def _not_graded(path: str, why: str) -> FileReport:
    """A path that gives nothing to grade: a problem on its student's row when its name names
    one ("Unreadable submission", never "Missing"), else a line in files.csv."""
    if _names_student(path):
        return FileReport(path, problems=[f"file_unreadable ({why})"])
    return FileReport(path, skipped=why)


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe), not a file"),
          (stat.S_ISCHR, "a device, not a file"), (stat.S_ISBLK, "a device, not a file"),
          (stat.S_ISSOCK, "a socket, not a file"))


def _walk(folder: Path, files: list[FileReport]) -> Iterator[Path]:
    """Every regular file under ``folder`` (sorted; links never followed); every other path
    (a link, a FIFO, a folder that cannot be read, an empty folder) becomes a FileReport."""
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        files.append(_not_graded(str(folder), f"a folder that could not be read: "
                                              f"{type(exc).__name__}"))
        return
    if not entries:
        files.append(_not_graded(str(folder), "an empty folder"))
        return
    for entry in entries:
        path = Path(entry.path)
        if entry.name == "__MACOSX" or _ignored(entry.name):
            continue  # a Mac zip's resource forks, the lab's lock files: never a ledger
        try:
            if entry.is_symlink():
                target = "a folder" if path.is_dir() else "a file" if path.is_file() \
                    else "nothing readable"
                files.append(_not_graded(str(path), f"a symbolic link to {target}, not "
                                                    "followed: hand in the file itself"))
                continue
            mode = entry.stat(follow_symlinks=False).st_mode
        except OSError as exc:
            files.append(_not_graded(str(path), f"could not be examined: "
                                                f"{type(exc).__name__}"))
            continue
        if stat.S_ISDIR(mode):
            yield from _walk(path, files)
        elif stat.S_ISREG(mode):
            yield path
        else:
            why = next((w for test, w in _KINDS if test(mode)), "not a regular file")
            files.append(_not_graded(str(path), why))


@dataclass(frozen=True)
class LazyFile:
    """A regular file to read where it is parsed (a worker process): ``read()`` gives at most
    ``limit`` + 1 bytes, as :func:`iter_sources` would have."""

    path: str
    limit: int

    def read(self) -> bytes:
        return _read_regular(Path(self.path), self.limit + 1)


def iter_sources(inputs: Iterable[str | os.PathLike], limits: Limits,
                 files: list[FileReport], *, lazy: bool = False
                 ) -> Iterator[tuple[str, bytes | LazyFile]]:
    """(display name, bytes) of every candidate ledger; every other path under the inputs
    (links, FIFOs, devices, unreadable or empty folders, too many files) goes into ``files``,
    with its student when its name names one. Nothing but a regular file is ever opened.
    ``lazy``: a regular file (not a zip member) comes as a :class:`LazyFile`, read later."""
    count = 0
    for item in inputs:
        path = Path(item)
        if path.is_dir() and not path.is_symlink():
            paths: Iterable[Path] = _walk(path, files)
        else:
            paths = [path]
        for p in paths:
            count += 1
            if count > limits.max_files:
                files.append(FileReport(str(path), skipped="too many files"))
                return
            yield from _from_path(p, limits, files, lazy)


def _read_regular(path: Path, limit: int) -> bytes:
    """At most ``limit`` bytes of a regular file; OSError for anything else (a FIFO is never
    waited on, a device never read: opened non-blocking, checked, then read)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IsADirectoryError("not a regular file")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit)
    finally:
        os.close(fd)


def _from_path(path: Path, limits: Limits, files: list[FileReport], lazy: bool = False):
    name = str(path)
    if _ignored(path.name):
        return
    if _handed_in_side_file(path.name):
        files.append(FileReport(name, skipped=SIDE_FILE))
        return
    if blackboard_receipt(path.name):
        files.append(FileReport(name, skipped=RECEIPT_FILE))
        return
    try:
        st = path.stat()  # an input named on the command line: its link is followed
    except OSError as exc:
        files.append(_not_graded(name, f"could not be examined: {type(exc).__name__}"))
        return
    if not stat.S_ISREG(st.st_mode):
        why = next((w for test, w in _KINDS if test(st.st_mode)), "not a regular file")
        files.append(_not_graded(name, why))
        return
    try:
        size = st.st_size
        is_zip = name.lower().endswith(".zip")
        if not is_zip and not name.lower().endswith(LEDGER_SUFFIXES):
            with open(path, "rb") as f:
                is_zip = f.read(4) == b"PK\x03\x04" and zipfile.is_zipfile(path)
        if is_zip:
            if size > limits.max_zip_total_bytes:
                files.append(FileReport(name, problems=[f"file_too_large ({size} bytes)"]))
                return
            data = _read_regular(path, limits.max_zip_total_bytes + 1)
            if not zipfile.is_zipfile(io.BytesIO(data)):
                files.append(FileReport(name, problems=["file_unreadable (not a valid zip)"]))
                return
            yield from _from_zip(name, io.BytesIO(data), limits, files, depth=1)
            return
        if not name.lower().endswith(LEDGER_SUFFIXES):
            files.append(FileReport(name, skipped="not a ledger file (by its name)"))
            return
        if size > limits.max_file_bytes:
            files.append(FileReport(name, problems=[too_large(size, limits.max_file_bytes)]))
            return
        yield name, (LazyFile(str(path), limits.max_file_bytes) if lazy
                     else _read_regular(path, limits.max_file_bytes + 1))
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
        if _handed_in_side_file(info.filename.split("/")[-1]):
            files.append(FileReport(member, skipped=SIDE_FILE))
            continue
        if blackboard_receipt(info.filename):
            files.append(FileReport(member, skipped=RECEIPT_FILE))
            continue
        lower = info.filename.lower()
        is_zip = lower.endswith(".zip")
        if not (is_zip or lower.endswith(LEDGER_SUFFIXES)):
            files.append(FileReport(member, skipped="not a ledger file (by its name)"))
            continue
        limit = limits.max_zip_total_bytes if is_zip else limits.max_file_bytes
        if info.file_size > limit:
            files.append(FileReport(member, problems=[
                too_large(info.file_size, limit) if not is_zip
                else f"file_too_large ({info.file_size} bytes)"]))
            continue
        try:
            with archive.open(info) as f:
                data = f.read(limit + 1)  # the header may lie: read at most limit + 1
        except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, RuntimeError,
                EOFError) as exc:
            files.append(FileReport(member, problems=[f"file_unreadable ({type(exc).__name__})"]))
            continue
        if len(data) > limit:
            files.append(FileReport(member, problems=[
                too_large("more than declared", limit) if not is_zip
                else "file_too_large (more than declared)"]))
            continue
        total += len(data)
        if total > limits.max_zip_total_bytes:
            files.append(FileReport(member, skipped="zip larger than the total limit"))
            return
        if is_zip:
            yield from _from_zip(member, io.BytesIO(data), limits, files, depth + 1)
        else:
            yield member, data
