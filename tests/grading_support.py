"""Ledgers for the grader's tests: honest sessions, lines hashed for any content, a class."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from labs.core import ledger

T0 = datetime(2025, 3, 1, 12, 0, tzinfo=timezone.utc)
X, R = "lab01.crossover_n", "lab01.which_roof"  # a numeric and a choice item of Lab 1


def _ts(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def honest_session(led: ledger.Ledger, *, x_value=300, start=0.0) -> None:
    """Two items of Lab 1, each predict -> unlock -> result -> observe -> explain."""
    t = start
    for item, value, kind in ((X, x_value, "numeric"), (R, "memory-bound", "choice")):
        for ev_kind, payload in (
                ("predict", {"value": value, "answer_type": kind, "confidence": 3,
                             "reason": "the ridge point", "units": ""}),
                ("unlock", {}), ("result", {"actual": 886 if kind == "numeric" else value}),
                ("observe", {"text": "the point sits under the slope"}),
                ("explain", {"text": "AI is below the ridge, so bandwidth sets the time"})):
            t += 1
            led.append(ev_kind, lab_id="lab01", item_id=item, payload=payload, ts=_ts(t),
                       lab_version="v1", session="s")


def hashed_line(seq: int, prev: str, **fields) -> tuple[bytes, str]:
    """A line whose hash is valid for whatever it holds (anyone can compute one)."""
    ev = {"schema": 1, "seq": seq, "ts": _ts(seq), "student_id": "zed", "lab_id": "lab01",
          "lab_version": "v1", "item_id": X, "kind": "predict",
          "payload": {"value": 1, "answer_type": "numeric", "confidence": 3, "reason": "r"},
          "session": "s", "prev_hash": prev}
    ev.update(fields)
    ev["hash"] = ledger.event_hash(ev)
    return ledger.event_line(ev), ev["hash"]


def write_class(folder: Path, work: Path, ids=("ada", "bob"), **session) -> Path:
    """One honest student per id, one sub-folder each, as an LMS download holds them."""
    for sid in ids:
        led = ledger.Ledger(sid, work / sid)
        honest_session(led, **session)
        (folder / sid).mkdir(parents=True, exist_ok=True)
        (folder / sid / led.path.name).write_bytes(led.path.read_bytes())
    return folder


def assert_flags_explained(book) -> None:
    """Every flag the grader raised has a meaning and a fix on the feedback pages."""
    from labs.core import grading

    flags = [f for fs in book.student_flags.values() for f in fs]
    flags += [f for g in book.grades.values() for f in g.flags]
    missing = sorted({f.split(" ", 1)[0] for f in flags} - set(grading.FLAG_HELP))
    assert not missing, f"flags without FLAG_HELP: {missing}"


def write_hostile_set(folder: Path) -> Path:
    """One of each file the grading reviews found hostile, each named for its own student."""
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    cases = {
        "bigint": {"payload": {"value": 10**400, "confidence": 3, "reason": "r"}},
        "surrogate": {"payload": {"value": 1, "confidence": 3, "reason": "\ud800"}},
        "tslow": {"ts": "0001-01-01T00:00:00+14:00"},
        "tshigh": {"ts": "9999-12-31T23:59:59-14:00"},
        "deep": {"payload": {"a": [[[[[[[[1]]]]]]]]}},
    }
    for sid, fields in cases.items():
        line, _ = hashed_line(1, ledger.GENESIS_HASH, student_id=sid, **fields)
        (folder / f"roofline-ledger-{sid}.jsonl").write_bytes(line)
    (folder / "roofline-ledger-lines.jsonl").write_bytes(b"x\n" * 9_500_000)  # 19 MB
    (folder / "roofline-ledger-binary.jsonl").write_bytes(bytes(range(256)) * 64)
    (folder / "roofline-ledger-empty.jsonl").write_bytes(b"")
    (folder / "roofline-ledger-utf16.jsonl").write_bytes("{}\n".encode("utf-16"))
    (folder / "roofline-ledger-nested.jsonl").write_bytes(b"[" * 100_000 + b"\n")
    (folder / ".roofline-ledger-lock.lock").write_bytes(b"")
    with zipfile.ZipFile(folder / "bomb.zip", "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("roofline-ledger-bomb.jsonl", b"\n" * 30_000_000)
    (folder / "broken.zip").write_bytes(b"PK\x03\x04 not a zip")
    return folder
