"""The ledger's event format: canonical bytes, hashing, timestamps, validation and reading.

One line of a ledger file is one event (see :mod:`labs.core.course.ledger` for the fields and
why JSON Lines). Everything here is pure: bytes in, events and problems out, never raising on
bad input, so the lab and the grader read hostile files the same way.
"""

from __future__ import annotations

import codecs
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

__all__ = [
    "Decoded", "GENESIS_HASH", "KINDS", "MAX_ID_CHARS", "MAX_LINE_BYTES", "MAX_PAYLOAD_DEPTH",
    "MAX_READ_BYTES", "Problem", "ReadResult", "SCHEMA_VERSION", "canonical_bytes", "check_event",
    "decode_ledger_bytes", "event_hash", "event_line", "finite_json", "parse_line", "parse_ts",
    "read_ledger", "read_ledger_file", "utc_now"
]

SCHEMA_VERSION = 1

#: Event kinds. ``predict`` is the first commit of an item; a later different answer is a
#: ``revise`` event and never replaces it.
KINDS = ("predict", "unlock", "observe", "explain", "decision", "result", "revise")

GENESIS_HASH = "0" * 64

# Limits that keep a hostile or broken file from hurting the reader.
MAX_LINE_BYTES = 64 * 1024  # one event; a reason or an explanation is far shorter
MAX_PAYLOAD_DEPTH = 6
MAX_ID_CHARS = 200
#: The one size limit of a ledger file, for the lab and the grader alike: the lab starts a
#: continuation file before a file would pass it (an event is at most MAX_LINE_BYTES, so no
#: explanation can push a file past it), and the grader refuses a larger file by default.
MAX_READ_BYTES = 20 * 1024 * 1024

_REQUIRED = {
    "schema": int, "seq": int, "ts": str, "student_id": str, "lab_id": str,
    "lab_version": str, "item_id": str, "kind": str, "payload": dict, "session": str,
    "prev_hash": str, "hash": str,
}
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def utc_now() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_ts(ts: Any) -> datetime | None:
    """An event timestamp as an aware UTC datetime, or None if it is not one.

    None also for a time that cannot be expressed in UTC within years 1-9999 (for example
    ``0001-01-01T00:00:00+14:00``): such a line is malformed, never a crash.
    """
    if not isinstance(ts, str) or len(ts) > 40:
        return None
    try:
        dt = datetime.fromisoformat(ts[:-1] + "+00:00" if ts.endswith("Z") else ts)
        if dt.tzinfo is None:
            return None
        if dt.tzinfo is timezone.utc:  # the lab's own "...Z": already UTC
            return dt
        return dt.astimezone(timezone.utc)
    except (ValueError, OverflowError):
        return None


#: The canonical encoding (what ``json.dumps`` with these arguments builds on every call).
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                              allow_nan=False)


def canonical_bytes(event: dict) -> bytes:
    """The bytes an event's hash covers: sorted keys, no spaces, ASCII, without ``hash``."""
    body = {k: v for k, v in event.items() if k != "hash"}
    return _CANONICAL.encode(body).encode("ascii")


def event_hash(event: dict) -> str:
    return hashlib.sha256(canonical_bytes(event)).hexdigest()


def event_line(event: dict) -> bytes:
    """One ledger line (canonical JSON including the hash, newline-terminated)."""
    return json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False).encode("ascii") + b"\n"


def _depth(value: Any, limit: int, level: int = 0) -> int:
    """Nesting depth of a JSON value, stopping early once past ``limit``."""
    if level > limit:
        return level
    if isinstance(value, dict):
        return max((_depth(v, limit, level + 1) for v in value.values()), default=level + 1)
    if isinstance(value, list):
        return max((_depth(v, limit, level + 1) for v in value), default=level + 1)
    return level


def finite_json(value: Any, limit: int = MAX_PAYLOAD_DEPTH) -> bool:
    """True if ``value`` is plain JSON (str/int/float/bool/None/list/dict[str]) without NaN/inf."""
    if type(value) is dict and limit >= 1:  # a flat payload, the usual one: a single pass
        for k, v in value.items():
            t = type(v)
            if type(k) is not str:
                break
            if t is str or t is int or t is bool or v is None or (t is float and v - v == 0.0):
                continue  # (v - v is 0 for a finite float, nan for inf and nan)
            break  # nested, non-finite or odd: the general walk decides
        else:
            return True
    stack = [(value, 0)]
    while stack:
        v, level = stack.pop()
        if level > limit:
            return False
        if isinstance(v, float):
            if not math.isfinite(v):
                return False
        elif isinstance(v, dict):
            if not all(isinstance(k, str) for k in v):
                return False
            stack.extend((x, level + 1) for x in v.values())
        elif isinstance(v, list):
            stack.extend((x, level + 1) for x in v)
        elif not (v is None or isinstance(v, (str, int, bool))):
            return False
    return True


#: How a line the lab wrote begins: its hash first (keys sorted), then the bytes it covers.
_HASH_HEAD, _HASH_END = b'{"hash":"', 9 + 64


def _hashes_own_bytes(raw: bytes, claimed: str) -> bool:
    """Whether the line ``raw`` is ``{"hash":"<claimed>",`` followed by exactly the bytes
    ``claimed`` is the SHA-256 of (less the hash member): how :func:`event_line` writes a line.
    Then it need not be re-encoded to be checked."""
    return (raw.startswith(_HASH_HEAD) and raw[_HASH_END:_HASH_END + 2] == b'",'
            and raw[9:_HASH_END] == claimed.encode("ascii")
            and hashlib.sha256(b"{" + raw[_HASH_END + 2:]).hexdigest() == claimed)


def check_event(obj: Any, raw: bytes | None = None) -> str | None:
    """Why ``obj`` is not a well-formed event (a short reason), or None if it is one.

    Checks fields and their types, the kind, the timestamp, id lengths, payload depth and the
    event's own hash. It does not check the link to the previous event (see :func:`read_ledger`).
    ``raw``: the line ``obj`` was read from; when its bytes after the hash are what the hash
    covers (as the lab writes it), the hash is checked on them, without encoding ``obj`` again.
    """
    if not isinstance(obj, dict):
        return "not a JSON object"
    for name, typ in _REQUIRED.items():
        if name not in obj:
            return f"missing field {name!r}"
        value = obj[name]
        if not isinstance(value, typ) or (typ is int and isinstance(value, bool)):
            return f"field {name!r} has type {type(value).__name__}, expected {typ.__name__}"
    if obj["kind"] not in KINDS:
        return f"unknown kind {obj['kind'][:40]!r}"
    if obj["seq"] < 1:
        return "seq must be >= 1"
    for name in ("student_id", "lab_id", "lab_version", "item_id", "session"):
        if len(obj[name]) > MAX_ID_CHARS:
            return f"field {name!r} is too long"
    if parse_ts(obj["ts"]) is None:
        return "timestamp is not an ISO 8601 UTC time"
    if not (_HEX64.match(obj["hash"]) and _HEX64.match(obj["prev_hash"])):
        return "hash or prev_hash is not 64 hex digits"
    if not finite_json(obj["payload"]):
        return "payload is not plain JSON (too deep, NaN/inf or odd types)"
    if raw is not None and _hashes_own_bytes(raw, obj["hash"]):
        return None
    try:
        if event_hash(obj) != obj["hash"]:
            return "hash does not match the event's content (edited after it was written)"
    except (ValueError, TypeError):
        return "event cannot be hashed"
    return None


def _reject_constant(name: str):
    raise ValueError(f"non-finite number {name}")


def parse_line(raw: bytes) -> tuple[dict | None, str | None]:
    """Parse one ledger line: (event, None) or (None, reason). Never raises."""
    if len(raw) > MAX_LINE_BYTES:
        return None, f"line longer than {MAX_LINE_BYTES} bytes"
    try:
        obj = json.loads(raw.decode("utf-8"), parse_constant=_reject_constant)
    except RecursionError:
        return None, "nested too deeply"
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"not valid JSON ({type(exc).__name__})"
    problem = check_event(obj, raw)
    return (None, problem) if problem else (obj, None)


@dataclass
class Problem:
    """Something wrong in a ledger file, at a 1-based line number (0: the whole file)."""

    line: int
    code: str  # malformed | hash_mismatch | chain_break | seq_order | torn_tail | unreadable |
    #            too_large | wrong_encoding | re_encoded
    detail: str

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.detail}"


@dataclass
class ReadResult:
    """What :func:`read_ledger` found: the valid events (with their line numbers) and problems."""

    events: list[dict] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    #: lines that are not valid events: (line number, parsed object or None, raw text prefix),
    #: so a grader can show what a tampered or broken line claimed without trusting it
    rejected: list[tuple[int, Any, str]] = field(default_factory=list)
    head_hash: str = GENESIS_HASH
    last_seq: int = 0
    size: int = 0  # bytes consumed (up to the last newline)

    @property
    def clean(self) -> bool:
        """True when every line is a valid event in an unbroken chain (safe to append to)."""
        return not self.problems


def read_ledger(data: bytes, *, start_hash: str = GENESIS_HASH, start_seq: int = 0,
                first_line: int = 1, final: bool = True) -> ReadResult:
    """Parse ledger bytes into valid events and problems, never raising.

    Every line that is a well-formed event is kept (even after a break, so a tampered file still
    shows what it contains); problems say where the chain or the format broke. ``final=False``
    treats an unterminated last line as a write still in progress (not consumed) instead of a
    torn tail.
    """
    result = ReadResult(head_hash=start_hash, last_seq=start_seq)
    body, sep, tail = data.rpartition(b"\n")
    complete = body + sep if sep else b""
    if not sep:
        tail = data
    prev_hash, last_seq = start_hash, start_seq
    line_no = first_line - 1
    for raw in complete.split(b"\n")[:-1] if complete else []:
        line_no += 1
        if not raw.strip():
            continue
        event, why = parse_line(raw.strip())
        if event is None:
            code = "hash_mismatch" if why and why.startswith("hash does not") else "malformed"
            result.problems.append(Problem(line_no, code, why or "invalid"))
            claimed = None
            if code == "hash_mismatch":  # well-formed but edited: keep what it claims
                claimed = json.loads(raw.decode("utf-8"))
                prev_hash, last_seq = claimed["hash"], max(last_seq, claimed["seq"])
            result.rejected.append((line_no, claimed,
                                    raw[:200].decode("utf-8", errors="replace")))
            continue
        if event["prev_hash"] != prev_hash:
            result.problems.append(Problem(
                line_no, "chain_break",
                "does not follow the previous event (lines removed, inserted or reordered)"))
        if event["seq"] <= last_seq:
            result.problems.append(Problem(line_no, "seq_order",
                                           f"sequence number {event['seq']} after {last_seq}"))
        prev_hash, last_seq = event["hash"], max(last_seq, event["seq"])
        result.events.append(event)
        result.lines.append(line_no)
    result.size = len(complete)
    if tail.strip():
        if final:
            result.problems.append(Problem(line_no + 1, "torn_tail",
                                           "the last line was cut off (an interrupted write)"))
            result.size = len(data)
    result.head_hash, result.last_seq = prev_hash, last_seq
    return result


@dataclass
class Decoded:
    """Ledger bytes as UTF-8 (``data``; None if they cannot be), how they were stored
    (``"utf-8"``, ``"utf-8-bom"``, ``"utf-16"``) and how many leading bytes were a
    byte-order mark (``skipped``)."""

    data: bytes | None
    encoding: str = "utf-8"
    skipped: int = 0

    @property
    def note(self) -> str:
        return {"utf-8-bom": "read as UTF-8 with a byte-order mark",
                "utf-16": "read as UTF-16 (the lab writes UTF-8: hand in the file as saved)"
                }.get(self.encoding, "")


def decode_ledger_bytes(data: bytes) -> Decoded:
    """The one reading of a ledger's bytes, for the lab and the grader: UTF-8 as written; a
    file an editor re-saved with a UTF-8 byte-order mark or as UTF-16 (with or without a mark)
    is read the same; UTF-16 that does not decode gives ``data=None``."""
    if data.startswith(codecs.BOM_UTF8):
        return Decoded(data[len(codecs.BOM_UTF8):], "utf-8-bom", len(codecs.BOM_UTF8))
    bom = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))
    if bom or data[:2] in (b"{\x00", b"\x00{"):
        encoding = "utf-16" if bom else ("utf-16-le" if data[:1] == b"{" else "utf-16-be")
        try:
            return Decoded(data.decode(encoding).encode("utf-8"), "utf-16")
        except UnicodeDecodeError:
            return Decoded(None, "utf-16")
    return Decoded(data)


def read_ledger_file(path: str | os.PathLike, *, max_bytes: int | None = None) -> ReadResult:
    """:func:`read_ledger` on a file; never raises.

    An unreadable file is one ``unreadable`` problem. A file larger than ``max_bytes`` (default
    :data:`MAX_READ_BYTES`) is read up to that size: the events in that readable prefix are
    kept (they restore the locks), and a ``too_large`` problem says the rest was not read, so
    the file counts as not clean and is never appended to.
    """
    limit = MAX_READ_BYTES if max_bytes is None else max_bytes
    try:
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        return ReadResult(problems=[Problem(0, "unreadable", f"cannot read the file ({exc})")])
    decoded = decode_ledger_bytes(data[:limit])
    if decoded.data is None:
        return ReadResult(problems=[Problem(0, "wrong_encoding", "UTF-16 that does not decode")])
    if size <= limit and len(data) <= limit:
        result = read_ledger(decoded.data)
        if decoded.encoding == "utf-16":  # read, but never appended to: it is not UTF-8
            result.problems.insert(0, Problem(0, "re_encoded", "an editor re-saved it as "
                                              "UTF-16; its records are read"))
        result.size += decoded.skipped  # the file's own offsets (a BOM is 3 bytes)
        return result
    result = read_ledger(decoded.data, final=False)  # the cut line is not a torn write
    result.problems.insert(0, Problem(0, "too_large", f"file is {size} bytes (limit {limit}); "
                                                      f"only the first {result.size} were read"))
    return result
