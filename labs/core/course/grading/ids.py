"""Student ids for ``labs-grade``: how two ids compare, the id a file name carries, close matches.

**The rule, applied everywhere** (ledger events, file names, the roster, receipts, overrides,
extensions): two ids are the same student when they are equal after Unicode NFKC
normalisation, stripping surrounding whitespace and case-folding. ``" Ada "``, ``"ada"`` and
``"ADA"`` are one student; ``"ada1"`` is another. The gradebook shows an id as the roster
spells it, else as the student's first event wrote it. Part of :mod:`labs.core.course.grading`
(import it through that name).
"""

from __future__ import annotations

import difflib
import functools
import re
import unicodedata
from pathlib import PurePosixPath
from typing import Iterable

from labs.core.course import ledger as _ledger

__all__ = [
    "blackboard_submission", "close_ids", "close_matches", "closest", "folder_of", "id_from_name",
    "lms_submission", "name_owner", "norm_id", "same_digits", "same_owner"
]

#: ``roofline-ledger-<id>.jsonl`` as the lab names it, also with a recovery suffix, a browser's
#: `` (1)`` copy suffix or an LMS prefix (Canvas: ``name_12345_67890_roofline-ledger-ada.jsonl``).
_NAME_RE = re.compile(
    re.escape(_ledger.FILE_PREFIX)
    + r"(?P<id>[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}?)"
    r"(?:\.recovery-\d+)?(?: ?\(\d+\))?\.jsonl$", re.IGNORECASE)
_LMS_COPY = re.compile(r"-\d{1,3}$")  # Canvas renames a resubmitted file to name-1.jsonl
#: Canvas's "Download Submissions" name: ``<lastfirst>[_LATE]_<user id>_<submission id>_<file>``
_CANVAS_RE = re.compile(
    r"^[^_]*?(?P<late>_LATE)?_(?P<uid>\d{1,20})_(?P<sub>\d{1,20})_(?P<file>.+)$")


#: Blackboard's "Download Assignment" names: ``<assignment>_<username>_attempt_<date>[_<file>]``
#: (the bare ``....txt`` is Blackboard's receipt of the attempt)
_BLACKBOARD_RE = re.compile(
    r"^.+?_(?P<user>[^_]+)_attempt_\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}(?P<rest>_.+|\.txt)$")


def blackboard_submission(source: str) -> tuple[str, bool]:
    """(the username a Blackboard download name carries, whether the file is Blackboard's
    receipt of the attempt rather than a file the student uploaded), or ``("", False)``."""
    name = PurePosixPath(str(source).split("!")[-1].replace("\\", "/")).name
    m = _BLACKBOARD_RE.match(name)
    if not m:
        return "", False
    return m.group("user"), m.group("rest") == ".txt"


def folder_of(source: str) -> str:
    """Who a download's layout says handed a file in, where the file's own name does not:
    Blackboard's username in its download name, else the folder the file sits in (inside a
    zip too; a download that files each student's work under their id)."""
    user = blackboard_submission(source)[0]
    if user:
        return user
    parts = str(source).replace("\\", "/").split("!")[-1].split("/")
    return parts[-2] if len(parts) > 1 else ""


@functools.lru_cache(maxsize=65_536)  # called for every event and file: ids repeat
def norm_id(student_id: str) -> str:
    """The comparison key of a student id (see the module doc)."""
    return unicodedata.normalize("NFKC", str(student_id)).strip().casefold()


def id_from_name(source: str) -> str:
    """The student id a ledger's file name carries (``""`` if the name carries none).

    ``source`` may be a path or ``archive.zip!folder/name`` (a zip member).
    """
    name = PurePosixPath(str(source).split("!")[-1].replace("\\", "/")).name
    m = _NAME_RE.search(name)
    return m.group("id") if m else ""


def lms_submission(source: str) -> tuple[str, bool]:
    """(the submitter's Canvas user id, whether Canvas marked the upload LATE) that a Canvas
    bulk-download file name carries, or ``("", False)`` for any other name.

    ``lindqvisthal_LATE_104125_5003809_roofline-ledger-02310296.jsonl`` -> ``("104125", True)``:
    the user id is the roster's ``ID`` column, whoever's id the file's own name or events carry.
    """
    for part in reversed(str(source).split("!")):  # a zip a student uploaded: its name counts
        m = _CANVAS_RE.match(PurePosixPath(part.replace("\\", "/")).name)
        if m:
            return m.group("uid"), bool(m.group("late"))
    return "", False


def same_owner(name_id: str, event_id: str) -> bool:
    """Whether a file named for ``name_id`` may hold ``event_id``'s events (an LMS copy
    suffix such as ``ada-1`` for ``ada`` is allowed)."""
    a, b = norm_id(name_id), norm_id(event_id)
    return a == b or _LMS_COPY.sub("", a) == b


def name_owner(name_id: str, known, roster=None) -> str:
    """The key of the student a file's name stands for, given the ``known`` keys: the id itself,
    or, when only that one is known, the id without an LMS copy suffix (``ada-1`` -> ``ada``);
    else, with a ``roster``, the student any of whose identity columns it is (a name typed as
    the SIS Login ID, the integration id, the id without its leading zeros: ``tlogin`` -> that
    student's id); else the id itself."""
    key = norm_id(name_id)
    if key in known:
        return key
    stripped = _LMS_COPY.sub("", key)
    if stripped in known:
        return stripped
    for typed in dict.fromkeys((key, stripped)) if roster is not None else ():
        hit = roster.resolve(typed)
        if hit:
            return norm_id(hit[0].student_id)
    return key


def closest(student_id: str, candidates: Iterable[str], n: int = 1) -> list[str]:
    """The candidates most like ``student_id`` (by the comparison key), best first."""
    by_key = {norm_id(c): c for c in candidates}
    hits = difflib.get_close_matches(norm_id(student_id), list(by_key), n=n, cutoff=0.6)
    return [by_key[h] for h in hits]


def same_digits(a: str, b: str) -> bool:
    """Whether two ids are the same digits, one with leading zeros the other lost
    (``"2310222"`` and ``"02310222"``: a spreadsheet drops them)."""
    a, b = norm_id(a), norm_id(b)
    return a != b and a.isdigit() and b.isdigit() and a.lstrip("0") == b.lstrip("0") != ""


def close_ids(student_id: str, candidates: Iterable[str]) -> str:
    """:func:`close_matches` for a student id: the same digits with or without leading zeros
    first, then the ids spelt most alike."""
    candidates = list(candidates)
    zeros = [c for c in candidates if same_digits(student_id, c)]
    alike = [c for c in closest(student_id, candidates, n=2) if c not in zeros]
    hits = (zeros + alike)[:3]
    return f" (did you mean {' or '.join(repr(h) for h in hits)}?)" if hits else ""


def close_matches(word: str, choices: Iterable[str]) -> str:
    """``" (did you mean 'x'?)"`` for a misspelt key, or ``""``."""
    hits = difflib.get_close_matches(str(word), [str(c) for c in choices], n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(h) for h in hits)}?)" if hits else ""
