"""Locks and records: no path releases a lock the lab has shown or loses a record.

Each test here failed before the fix it names: a folder change carrying the locks over, the
first commit decided under the ledger's lock (real processes), ``ts`` stamped under the lock,
memory mode surviving session re-creation with a clean download after a short write, rotation
before the read limit with the readable prefix kept, and out-of-range timestamps.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labs.core import ledger
from labs.core import quiz
from labs.core.course.ledger import events as ledger_events
from labs.core.course.ledger import files as ledger_files
from labs.core.course.ledger import store as ledger_store

FIXTURES = Path(__file__).parent / "ledger_fixtures"


@pytest.fixture
def student(tmp_path, monkeypatch):
    """A private config folder, no ledger folder or id from the environment, no kept memory."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv(ledger.ENV_LEDGER_DIR, raising=False)
    monkeypatch.delenv(ledger.ENV_STUDENT_ID, raising=False)
    quiz.MEMORY_LEDGERS.clear()
    yield tmp_path
    quiz.MEMORY_LEDGERS.clear()


def _session(folder: Path, sid: str = "ada", seen: list | None = None) -> quiz.LabSession:
    settings = {"student_id": sid, "ledger_dir": str(folder)}
    return quiz.LabSession("lab01", None, settings=settings,
                           on_settings=seen.append if seen is not None else None)


def _pred(item: str, value, reason: str = "r") -> quiz.Prediction:
    return quiz.Prediction(f"lab01.{item}", value, confidence=3, reason=reason)


def _file_events(folder: Path, sid: str = "ada") -> list[dict]:
    out = []
    for path in sorted(folder.glob(f"roofline-ledger-{sid}*.jsonl")):
        out += ledger.read_ledger_file(path).events
    return out


# --- changing the ledger folder ------------------------------------------------------------

def test_a_folder_change_carries_the_shown_locks_to_an_empty_folder(student):
    seen: list = []
    lab = _session(student / "a", seen=seen)
    lab.commit(_pred("x", 7))
    lab.record("explain", "lab01.x", {"text": "because"})
    assert lab.set_ledger_dir(str(student / "b")) is None
    again = quiz.LabSession("lab01", None, settings=seen[-1])  # the cells re-run
    assert again.ledger_dir == student / "b"
    # the new folder alone restores the lock: a different answer there is only a revision
    assert again.first_prediction("lab01.x").value == 7
    assert again.commit(_pred("x", 9)).value == 7
    result = ledger.read_ledger_file(student / "b" / "roofline-ledger-ada.jsonl")
    assert result.clean
    assert [e["kind"] for e in result.events] == ["predict", "unlock", "explain", "revise"]
    # the old file is kept as it was, and the student is told where everything is
    assert len(ledger.read_ledger_file(student / "a" / "roofline-ledger-ada.jsonl").events) == 3
    assert any("copied" in n for n in again.warnings)


def test_a_folder_holding_other_first_answers_is_refused_with_a_message(student):
    other = ledger.Ledger("ada", student / "c")  # e.g. a file the student made elsewhere
    other.append("predict", lab_id="lab01", item_id="lab01.x",
                 payload=_pred("x", 1).payload())
    other.append("predict", lab_id="lab01", item_id="lab01.y",
                 payload=_pred("y", 5).payload())
    before = (student / "c" / "roofline-ledger-ada.jsonl").read_bytes()
    seen: list = []
    lab = _session(student / "a", seen=seen)
    lab.commit(_pred("x", 7))
    message = lab.set_ledger_dir(str(student / "c"))
    assert message and "lab01.x" in message and "7" in message and "1" in message
    assert seen == [] and lab.ledger_dir == student / "a"  # nothing re-created or moved
    assert lab.first_prediction("lab01.x").value == 7
    assert (student / "c" / "roofline-ledger-ada.jsonl").read_bytes() == before
    assert ledger.load_config().get("ledger_dir") != str(student / "c")


def test_the_folder_form_refuses_before_anything_changes(student):
    other = ledger.Ledger("ada", student / "c")
    other.append("predict", lab_id="lab01", item_id="lab01.x", payload=_pred("x", 1).payload())
    lab = _session(student / "a")
    lab.commit(_pred("x", 7))
    lab.status()
    [folder_form] = [w for w in lab.widgets if "folder" in getattr(w, "element", {}).value]
    message = folder_form.validate({"folder": str(student / "c")})
    assert message and "lab01.x: 7 here, 1 there" in message
    assert folder_form.validate({"folder": str(student / "empty")}) is None
    assert folder_form.validate({"folder": "relative/path"}) is not None


def test_a_folder_missing_a_shown_lock_is_refused(student):
    other = ledger.Ledger("ada", student / "d")
    other.append("result", lab_id="lab02", item_id="lab02.z", payload={"actual": 1})
    lab = _session(student / "a")
    lab.commit(_pred("x", 7))
    assert "lab01.x" in (lab.set_ledger_dir(str(student / "d")) or "")
    assert lab.ledger_dir == student / "a"


def test_a_folder_with_the_same_first_answers_is_accepted(student):
    seen: list = []
    lab = _session(student / "a", seen=seen)
    lab.commit(_pred("x", 7))
    assert lab.set_ledger_dir(str(student / "b")) is None  # copied there
    back = quiz.LabSession("lab01", None, settings=seen[-1])
    assert back.set_ledger_dir(str(student / "a")) is None  # same locks: fine to go back
    assert quiz.LabSession("lab01", None, settings=seen[-1]).first_prediction(
        "lab01.x").value == 7


def test_leaving_memory_mode_for_a_writable_folder_saves_the_records(student, monkeypatch):
    monkeypatch.setattr(sys, "platform", "emscripten")  # nothing can be written
    seen: list = []
    lab = _session(student / "a", seen=seen)
    lab.commit(_pred("x", 7))
    monkeypatch.setattr(sys, "platform", "linux")
    assert lab.set_ledger_dir(str(student / "b")) is None
    again = quiz.LabSession("lab01", None, settings=seen[-1])
    assert again.ledger.mode == "file" and again.first_prediction("lab01.x").value == 7
    assert [e["kind"] for e in _file_events(student / "b")] == ["predict", "unlock"]


# --- the first commit is decided under the lock ---------------------------------------------

def _committers(folder: Path, go: Path, n: int, answers=(111, 222)):
    return [subprocess.Popen([sys.executable, str(FIXTURES / "committer.py"), str(folder),
                              "ada", str(n), str(a), str(go)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True) for a in answers]


@pytest.mark.slow
def test_two_windows_committing_at_once_leave_one_predict_per_item(tmp_path):
    n = 20
    go = tmp_path / "go"
    procs = _committers(tmp_path, go, n)
    time.sleep(2.0)  # both imported marimo and opened the ledger
    go.touch()
    shown = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        shown.append(dict(line.split() for line in out.splitlines()))
    result = ledger.read_ledger_file(tmp_path / "roofline-ledger-ada.jsonl")
    assert result.clean
    for i in range(n):
        item = f"race.item{i}"
        evs = [e for e in result.events if e["item_id"] == item]
        predicts = [e for e in evs if e["kind"] == "predict"]
        assert len(predicts) == 1, (item, [e["kind"] for e in evs])
        first = predicts[0]["payload"]["value"]
        # the other window's answer is a revision, and both windows show the first answer
        assert [e["payload"]["value"] for e in evs if e["kind"] == "revise"] == [
            a for a in (111, 222) if a != first]
        assert evs.index(predicts[0]) == 0
        assert shown[0][item] == shown[1][item] == str(first)


def test_commit_rereads_the_ledger_under_the_lock(student):
    """Deterministic twin of the race: another window's predict lands after this session last
    read the file; the commit must see it, not append a second predict."""
    a, b = _session(student / "l"), _session(student / "l")
    assert a.first_prediction("lab01.x") is None and b.first_prediction("lab01.x") is None
    a.ledger.refresh = b.ledger.refresh = lambda: None  # neither looks again unless locked
    assert a.commit(_pred("x", 1)).value == 1
    assert b.commit(_pred("x", 2)).value == 1
    kinds = [e["kind"] for e in _file_events(student / "l")]
    assert kinds == ["predict", "unlock", "revise"]


# --- timestamps are stamped under the lock --------------------------------------------------

@pytest.mark.slow
def test_concurrent_writers_never_write_a_timestamp_backwards(tmp_path):
    go = tmp_path / "go"
    procs = [subprocess.Popen([sys.executable, str(FIXTURES / "writer.py"), str(tmp_path),
                               "ada", "400", s, "--wait-for", str(go)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for s in ("A", "B")]
    time.sleep(0.3)
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    events = ledger.read_ledger_file(tmp_path / "roofline-ledger-ada.jsonl").events
    assert len(events) == 800
    times = [ledger.parse_ts(e["ts"]) for e in events]
    backwards = sum(1 for t0, t1 in zip(times, times[1:]) if t1 < t0)
    assert backwards == 0


def test_the_timestamp_is_taken_after_the_lock_is_held(tmp_path, monkeypatch):
    led = ledger.Ledger("ada", tmp_path)
    order = []
    real_lock = ledger_files.file_lock

    def spying_lock(*a, **k):
        order.append("lock")
        return real_lock(*a, **k)

    real_now = ledger_events.utc_now

    def spying_now():
        order.append("now")
        return real_now()

    monkeypatch.setattr(ledger_store, "file_lock", spying_lock)
    monkeypatch.setattr(ledger_store, "utc_now", spying_now)
    led.append("result", lab_id="lab01", item_id="lab01.x", payload={})
    assert order == ["lock", "now"]


# --- a write that fails mid-session ---------------------------------------------------------

def _fail_ledger_writes(m: pytest.MonkeyPatch, partial: bool) -> None:
    """Writes to ledger files fail from now on like a full disk; ``partial``: after half."""
    if not Path("/proc/self/fd").is_dir():
        pytest.skip("needs /proc to tell ledger writes from others")
    real_write = os.write

    def write(fd, data):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            target = ""
        if not target.endswith(".jsonl"):
            return real_write(fd, data)
        if partial:
            real_write(fd, bytes(data[: len(data) // 2]))
        raise OSError(errno.ENOSPC, "No space left on device")

    m.setattr(ledger_files.os, "write", write)


@pytest.mark.parametrize("partial", [False, True])
def test_memory_mode_after_a_failed_write_survives_session_recreation(student, monkeypatch,
                                                                      partial):
    seen: list = []
    lab = _session(student / "l", seen=seen)
    lab.commit(_pred("x", 1))
    with monkeypatch.context() as m:
        _fail_ledger_writes(m, partial)
        lab.commit(_pred("y", 2))
        lab.record("explain", "lab01.y", {"text": "kept in memory"})
    assert lab.ledger.mode == "memory"
    # entering an id / uploading re-creates the session: the records are still there
    lab.set_student_id("ada")
    again = quiz.LabSession("lab01", None, settings=seen[-1])
    assert again.first_prediction("lab01.y").value == 2
    assert again.last_text("lab01.y", "explain") == "kept in memory"
    assert any("memory" in w for w in again.warnings)
    # the download is one clean chain holding everything, never the half line glued on
    [(name, data)] = again.ledger.export_files()
    result = ledger.read_ledger(data)
    assert name == "roofline-ledger-ada.jsonl" and result.clean, result.problems
    assert [e["kind"] for e in result.events] == ["predict", "unlock", "predict", "unlock",
                                                  "explain"]
    # the torn half line was taken back under the lock: the file on disk is clean too
    assert ledger.read_ledger_file(student / "l" / "roofline-ledger-ada.jsonl").clean


def test_a_download_stays_one_chain_when_another_window_writes_after_the_fork(student,
                                                                             monkeypatch):
    lab = _session(student / "l")
    lab.commit(_pred("x", 1))
    with monkeypatch.context() as m:
        _fail_ledger_writes(m, partial=False)
        lab.commit(_pred("y", 2))  # memory
    other = ledger.Ledger("ada", student / "l")  # the disk has room again for another window
    other.append("result", lab_id="lab02", item_id="lab02.z", payload={"actual": 1})
    for name, data in lab.ledger.export_files():
        assert ledger.read_ledger(data).clean, name
    downloaded = [e for _, data in lab.ledger.export_files()
                  for e in ledger.read_ledger(data).events]
    assert {e["item_id"] for e in downloaded} >= {"lab01.x", "lab01.y"}


# --- the read limit -------------------------------------------------------------------------

def test_appends_rotate_before_the_read_limit_and_every_event_comes_back(tmp_path,
                                                                        monkeypatch):
    monkeypatch.setattr(ledger_events, "MAX_READ_BYTES", 8 * 1024)
    led = ledger.Ledger("ada", tmp_path)
    led.append("predict", lab_id="lab01", item_id="lab01.x",
               payload=_pred("x", 7).payload())
    for i in range(120):  # about 3.5 times the limit
        led.append("result", lab_id="lab01", item_id="lab01.x", payload={"i": i, "f": "x" * 150})
    files = sorted(tmp_path.glob("roofline-ledger-ada*.jsonl"))
    assert len(files) >= 3
    for path in files:
        assert path.stat().st_size <= 8 * 1024 and ledger.read_ledger_file(path).clean
    again = ledger.Ledger("ada", tmp_path)
    assert len(again.events()) == 121
    assert any("limit" in w or "full" in w for w in led.warnings)
    lab = quiz.LabSession("lab01", None, settings={"student_id": "ada",
                                                   "ledger_dir": str(tmp_path)})
    assert lab.first_prediction("lab01.x").value == 7


def test_a_window_reading_follows_another_into_the_next_file(tmp_path, monkeypatch):
    monkeypatch.setattr(ledger_events, "MAX_READ_BYTES", 8 * 1024)
    reader, writer = ledger.Ledger("ada", tmp_path), ledger.Ledger("ada", tmp_path)
    for i in range(60):
        writer.append("result", lab_id="lab01", item_id="lab01.x", payload={"i": i, "f": "x" * 150})
    assert len(list(tmp_path.glob("roofline-ledger-ada*.jsonl"))) >= 2
    assert [e["payload"]["i"] for e in reader.events()] == list(range(60))


def test_an_oversized_file_keeps_its_readable_prefix_and_its_locks(tmp_path, monkeypatch):
    led = ledger.Ledger("ada", tmp_path)
    led.append("predict", lab_id="lab01", item_id="lab01.x", payload=_pred("x", 7).payload())
    for i in range(60):
        led.append("result", lab_id="lab01", item_id="lab01.x", payload={"i": i, "f": "x" * 150})
    before = led.path.read_bytes()
    monkeypatch.setattr(ledger_events, "MAX_READ_BYTES", 4 * 1024)  # the file is now too big
    result = ledger.read_ledger_file(led.path)
    assert [p.code for p in result.problems] == ["too_large"]
    assert 0 < len(result.events) < 61 and result.events[0]["kind"] == "predict"
    lab = quiz.LabSession("lab01", None, settings={"student_id": "ada",
                                                   "ledger_dir": str(tmp_path)})
    assert lab.first_prediction("lab01.x").value == 7
    assert lab.commit(_pred("x", 9)).value == 7  # still locked
    assert led.path.read_bytes() == before  # kept untouched; new events went elsewhere
    assert lab.ledger.mode == "recovery"


# --- out-of-range timestamps ----------------------------------------------------------------

@pytest.mark.parametrize("ts", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_parse_ts_returns_none_for_times_outside_the_calendar(ts):
    assert ledger.parse_ts(ts) is None


def _hashed_line(prev: dict, **changes) -> bytes:
    event = {**prev, "seq": prev["seq"] + 1, "prev_hash": prev["hash"], **changes}
    event["hash"] = ledger.event_hash(event)
    return ledger.event_line(event)


@pytest.mark.parametrize("ts", ["0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59-14:00"])
def test_an_out_of_range_timestamp_does_not_hide_the_files_valid_events(student, ts):
    folder = student / "l"
    led = ledger.Ledger("ada", folder)
    first = led.append("predict", lab_id="lab01", item_id="lab01.x",
                       payload=_pred("x", 7).payload())
    with open(led.path, "ab") as f:
        f.write(_hashed_line(first, ts=ts, kind="revise",
                             payload=_pred("x", 1).payload()))
    lab = _session(folder)
    assert lab.ledger.mode != "memory"
    assert not any("browser-only" in w for w in lab.warnings)
    assert lab.first_prediction("lab01.x").value == 7
    assert any("kept untouched" in w for w in lab.warnings)  # reported, never reset
    assert json.loads(led.path.read_bytes().splitlines()[1])["ts"] == ts
