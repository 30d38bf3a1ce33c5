"""The design ledger: chain, durability, concurrency, corruption, read-only and browser-only runs."""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from labs.core import ledger
from labs.core.course.ledger import config as ledger_config
from labs.core.course.ledger import store as ledger_store

WRITER = Path(__file__).parent / "ledger_fixtures" / "writer.py"
POSIX = os.name == "posix"


def _append(led: ledger.Ledger, kind="result", item="lab01.x", **payload):
    return led.append(kind, lab_id="lab01", item_id=item, payload=payload or {"v": 1},
                      lab_version="sha256:test", session="s")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _all_files(directory: Path, student="ada") -> list[Path]:
    return sorted(directory.glob(f"roofline-ledger-{student}*.jsonl"))


# --- format and chain ----------------------------------------------------------------------

def test_roundtrip_chain_and_line_format(tmp_path):
    led = ledger.Ledger("ada", tmp_path)
    first = _append(led, "predict", value=300, reason="<b>bold</b> =HYPERLINK(1)")
    second = _append(led, "unlock")
    assert (first["seq"], second["seq"]) == (1, 2)
    assert first["prev_hash"] == ledger.GENESIS_HASH and second["prev_hash"] == first["hash"]
    raw = led.path.read_bytes()
    assert raw.endswith(b"\n") and raw.count(b"\n") == 2
    result = ledger.read_ledger(raw)
    assert result.clean and [e["kind"] for e in result.events] == ["predict", "unlock"]
    assert result.head_hash == led.head_hash == second["hash"]
    # every field the issue asks for is on every event
    for key in ("schema", "student_id", "lab_id", "lab_version", "item_id", "ts", "seq",
                "prev_hash", "hash", "kind", "payload"):
        assert key in first
    assert ledger.parse_ts(first["ts"]).tzinfo is not None
    # a reopened ledger continues the same chain
    again = ledger.Ledger("ada", tmp_path)
    third = _append(again)
    assert third["seq"] == 3 and third["prev_hash"] == second["hash"]


def test_tampered_reordered_and_deleted_lines_are_detected(tmp_path):
    led = ledger.Ledger("ada", tmp_path)
    for i in range(4):
        _append(led, value=i)
    lines = led.path.read_bytes().splitlines(keepends=True)
    edited = lines[1].replace(b'"value":1', b'"value":9')
    codes = lambda data: {p.code for p in ledger.read_ledger(data).problems}  # noqa: E731
    # an edited line is pinpointed: its own hash no longer matches, the rest still links
    result = ledger.read_ledger(b"".join(lines[:1] + [edited] + lines[2:]))
    assert [(p.line, p.code) for p in result.problems] == [(2, "hash_mismatch")]
    assert result.rejected[0][1]["payload"]["value"] == 9  # what it claims, kept for display
    # re-hashing the edited line moves the break to the next line
    forged = json.loads(edited)
    forged["hash"] = ledger.event_hash(forged)
    result = ledger.read_ledger(b"".join(lines[:1] + [ledger.event_line(forged)] + lines[2:]))
    assert [(p.line, p.code) for p in result.problems] == [(3, "chain_break")]
    assert codes(b"".join([lines[0], lines[2], lines[1], lines[3]])) == {"chain_break",
                                                                          "seq_order"}
    assert codes(b"".join([lines[0]] + lines[2:])) == {"chain_break"}
    assert codes(b"".join(lines)) == set()


@pytest.mark.parametrize("line, reason", [
    (b"{not json", "not valid JSON"),
    (b"[" * 100000 + b"]" * 100000, "line longer"),
    (b"[" * 5000 + b"]" * 5000, "nested too deeply"),
    (b'{"seq": NaN}', "not valid JSON"),
    (b"\xff\xfe\x00garbage", "not valid JSON"),
    (b'"just a string"', "not a JSON object"),
    (b"1" * 5000, "not valid JSON"),  # int larger than Python converts by default
])
def test_hostile_lines_are_reported_never_raised(line, reason):
    event, why = ledger.parse_line(line)
    assert event is None and reason in why


def test_wrong_types_and_deep_payload_rejected(tmp_path):
    led = ledger.Ledger("ada", tmp_path)
    good = _append(led)
    for field, bad in (("seq", "1"), ("seq", True), ("payload", []), ("kind", "hack"),
                       ("ts", "yesterday"), ("hash", "zz")):
        obj = dict(good, **{field: bad})
        assert ledger.check_event(obj) is not None, field
    deep: dict = {}
    node = deep
    for _ in range(10):
        node["a"] = {}
        node = node["a"]
    with pytest.raises(ValueError, match="payload"):
        led.append("result", lab_id="lab01", item_id="lab01.x", payload=deep)
    with pytest.raises(ValueError, match="payload"):
        led.append("result", lab_id="lab01", item_id="lab01.x", payload={"v": float("nan")})
    with pytest.raises(ValueError, match="kind"):
        led.append("cheat", lab_id="lab01", item_id="lab01.x", payload={})
    with pytest.raises(ValueError, match="too large"):
        led.append("result", lab_id="lab01", item_id="lab01.x", payload={"t": "x" * 70000})


def test_student_id_rules_and_resolution(tmp_path, monkeypatch):
    assert ledger.validate_student_id("  ada.lovelace@uni ") == "ada.lovelace@uni"
    for bad in ("", "../etc", "a b", "=cmd", "x" * 65, None):
        with pytest.raises(ValueError, match="student_id"):
            ledger.validate_student_id(bad)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv(ledger.ENV_STUDENT_ID, raising=False)
    assert ledger.resolve_student_id() is None
    ledger.save_config(student_id="remembered")
    assert ledger.resolve_student_id() == "remembered"
    monkeypatch.setenv(ledger.ENV_STUDENT_ID, "from-env")
    assert ledger.resolve_student_id() == "from-env"
    # a corrupt config counts as empty and is left as it is
    cfg = ledger.config_path()
    cfg.write_bytes(b"{broken")
    monkeypatch.delenv(ledger.ENV_STUDENT_ID)
    assert ledger.resolve_student_id() is None and cfg.read_bytes() == b"{broken"


def test_default_dir_env_config_and_platform(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv(ledger.ENV_LEDGER_DIR, raising=False)
    if sys.platform.startswith("linux"):
        assert ledger.default_ledger_dir() == tmp_path / "data" / "roofline-labs"
    ledger.save_config(ledger_dir=str(tmp_path / "chosen"))
    assert ledger.default_ledger_dir() == tmp_path / "chosen"
    monkeypatch.setenv(ledger.ENV_LEDGER_DIR, str(tmp_path / "env"))
    assert ledger.default_ledger_dir() == tmp_path / "env"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert ledger_config._platform_base("data") == Path.home() / "Library" / "Application Support"
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setenv("APPDATA", str(tmp_path / "Roaming"))
    assert ledger_config._platform_base("data") == tmp_path / "Roaming"


def test_lab_version_ignores_line_endings(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_bytes(b"x = 1\ny = 2\n")
    b.write_bytes(b"x = 1\r\ny = 2\r\n")
    assert ledger.lab_version(a) == ledger.lab_version(b) != ledger.lab_version(tmp_path / "missing.py")
    assert ledger.lab_version(a).startswith("sha256:") and len(ledger.lab_version(a)) == 23
    assert ledger.lab_version(None) == "unknown"


# --- corruption: kept, reported, recovery file ----------------------------------------------

def test_corrupt_ledger_is_kept_untouched_and_new_events_go_to_recovery(tmp_path):
    led = ledger.Ledger("ada", tmp_path)
    for i in range(3):
        _append(led, "predict", item=f"lab01.q{i}", value=i)
    lines = led.path.read_bytes().splitlines(keepends=True)
    led.path.write_bytes(lines[0] + b"{garbage in the middle\n" + b"".join(lines[1:]))
    before = _sha(led.path)

    reopened = ledger.Ledger("ada", tmp_path)
    assert reopened.mode == "recovery"
    text = " ".join(reopened.warnings)
    assert "kept untouched" in text and "line 2" in text and "recovery-1" in text
    assert len(reopened.events()) == 3  # the valid events still count (locks restore)
    new = _append(reopened, "explain", text="after corruption")
    assert _sha(led.path) == before  # never reset, never rewritten
    recovery = tmp_path / "roofline-ledger-ada.recovery-1.jsonl"
    assert ledger.read_ledger_file(recovery).clean and new["seq"] == 1
    assert len(reopened.events()) == 4
    # the next lab opening keeps using the same recovery file
    third = ledger.Ledger("ada", tmp_path)
    assert third.target_path == recovery and len(third.events()) == 4
    assert _append(third)["seq"] == 2


def test_corruption_by_another_process_while_open_switches_to_recovery(tmp_path):
    led = ledger.Ledger("ada", tmp_path)
    _append(led)
    with open(led.path, "ab") as f:  # someone else damages the file after we opened it
        f.write(b'{"half a line')
    before = _sha(led.path)
    _append(led, value=2)
    assert led.mode == "recovery" and _sha(led.path) == before
    assert any("cut off" in w for w in led.warnings)
    assert len(led.events()) == 2


def test_unreadable_and_oversized_files_are_reported(tmp_path, monkeypatch):
    led = ledger.Ledger("ada", tmp_path)
    _append(led)
    monkeypatch.setattr(ledger, "MAX_READ_BYTES", 10)
    result = ledger.read_ledger_file(led.path, max_bytes=10)
    assert [p.code for p in result.problems] == ["too_large"]
    assert [p.code for p in ledger.read_ledger_file(tmp_path / "nope.jsonl").problems] == [
        "unreadable"]


# --- concurrency and crashes ----------------------------------------------------------------

def _writer(directory, n, session, *extra, stdout=subprocess.DEVNULL):
    return subprocess.Popen([sys.executable, str(WRITER), str(directory), "ada", str(n),
                             session, *extra], stdout=stdout, stderr=subprocess.PIPE,
                            text=True)


@pytest.mark.slow
def test_two_processes_500_events_each_lose_nothing(tmp_path):
    go = tmp_path / "go"
    procs = [_writer(tmp_path, 500, s, "--wait-for", str(go)) for s in ("A", "B")]
    time.sleep(0.3)
    go.touch()
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    result = ledger.read_ledger_file(tmp_path / "roofline-ledger-ada.jsonl")
    assert result.clean, result.problems[:3]
    assert [e["seq"] for e in result.events] == list(range(1, 1001))
    for s in ("A", "B"):
        got = [e["payload"]["i"] for e in result.events if e["session"] == s]
        assert got == list(range(1, 501))
    writers = [e["session"] for e in result.events]
    assert writers.count("A") == writers.count("B") == 500
    # they really interleaved (the lock serialised them, it did not run them one after another)
    switches = sum(1 for a, b in zip(writers, writers[1:]) if a != b)
    assert switches > 10


@pytest.mark.slow
@pytest.mark.skipif(not POSIX, reason="SIGKILL semantics")
def test_kill_9_mid_write_repeatedly_keeps_every_committed_event(tmp_path):
    rng = random.Random(1234)
    committed: dict[str, set[int]] = {}
    for round_no in range(8):
        session = f"r{round_no}"
        # large lines make the write long enough for the kill to land inside it sometimes
        proc = _writer(tmp_path, 0, session, "40000", stdout=subprocess.PIPE)
        got = committed.setdefault(session, set())
        target = rng.randint(1, 12)
        while len(got) < target:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            got.add(int(line.split()[1]))
        time.sleep(rng.random() * 0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        for line in proc.stdout:  # anything printed before death was committed too
            if line.endswith("\n"):  # a line the kill cut short proves nothing
                got.add(int(line.split()[1]))
        proc.stdout.close()
        proc.stderr.close()

        led = ledger.Ledger("ada", tmp_path)  # opens fine, every file readable
        seen: dict[str, set[int]] = {}
        for e in led.events():
            seen.setdefault(e["session"], set()).add(e["payload"]["i"])
        for s, ids in committed.items():
            assert ids <= seen.get(s, set()), f"round {round_no}: lost events of {s}"
        for path in _all_files(tmp_path):
            codes = {p.code for p in ledger.read_ledger_file(path).problems}
            assert codes <= {"torn_tail"}, (path, codes)


def test_two_ledger_objects_in_one_process_share_one_chain(tmp_path):
    a, b = ledger.Ledger("ada", tmp_path), ledger.Ledger("ada", tmp_path)
    for i in range(5):
        _append(a, value=i)
        _append(b, value=i)
    result = ledger.read_ledger_file(a.path)
    assert result.clean and len(result.events) == 10
    assert len(a.events()) == len(b.events()) == 10


# --- no file system: read-only, missing, browser-only ----------------------------------------

def _make_read_only(paths: list[Path]) -> list[list[str]]:
    """Make ``paths`` read-only for this process; returns the commands that undo it.

    An ordinary user: chmod. Root ignores permission bits, so there the immutable attribute
    (``chattr +i``) is used; the test skips where neither works.
    """
    if os.geteuid() != 0:
        for p in paths:
            os.chmod(p, 0o555 if p.is_dir() else 0o444)
        return [["chmod", "u+w", str(p)] for p in paths]
    chattr = shutil.which("chattr")
    if chattr is None:
        pytest.skip("running as root without chattr: cannot make a folder read-only")
    undo = []
    for p in paths:
        if subprocess.run([chattr, "+i", str(p)], capture_output=True).returncode != 0:
            for cmd in undo:
                subprocess.run(cmd, capture_output=True)
            pytest.skip("running as root on a file system without chattr +i")
        undo.append([chattr, "-i", str(p)])
    return undo


@pytest.mark.skipif(not POSIX, reason="POSIX permissions")
def test_read_only_directory_keeps_working_in_memory_with_download(tmp_path):
    root = tmp_path / "ro"
    led = ledger.Ledger("ada", root)
    _append(led, "predict", value=1)
    _append(led, "unlock")
    undo = _make_read_only([led.path, led.lock_path, root])
    try:
        before = sorted(os.listdir(root)), _sha(led.path)
        offline = ledger.Ledger("ada", root)
        assert offline.mode == "memory" and "not writable" in " ".join(offline.warnings)
        assert len(offline.events()) == 2
        ev = offline.append("explain", lab_id="lab01", item_id="lab01.x",
                            payload={"text": "offline"})
        assert ev["seq"] == 3 and len(offline.events()) == 3
        # the session that was writing when the folder turned read-only falls back too
        assert _append(led, value=5)["seq"] == 3 and led.mode == "memory"
        # the download is the old file plus the new event: one unbroken chain
        [(name, data)] = offline.export_files()
        result = ledger.read_ledger(data)
        assert name == "roofline-ledger-ada.jsonl" and result.clean and len(result.events) == 3
        assert (sorted(os.listdir(root)), _sha(led.path)) == before
    finally:
        for cmd in reversed(undo):
            subprocess.run(cmd, capture_output=True)


def test_missing_directory_that_cannot_be_created_falls_back_to_memory(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    led = ledger.Ledger("ada", blocker / "ledgers")
    assert led.mode == "memory" and "cannot be created" in led.warnings[0]
    _append(led, "predict", value=3)
    [(name, data)] = led.export_files()
    assert name == "roofline-ledger-ada.jsonl" and ledger.read_ledger(data).clean


def test_write_failure_midway_falls_back_to_memory(tmp_path, monkeypatch):
    led = ledger.Ledger("ada", tmp_path)
    _append(led)

    def fail(*_a, **_k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ledger_store, "append_bytes", fail)
    ev = _append(led, value=2)
    assert led.mode == "memory" and ev["seq"] == 2 and "No space left" in led.warnings[-1]
    [(_, data)] = led.export_files()
    result = ledger.read_ledger(data)
    assert result.clean and len(result.events) == 2


def test_browser_only_run_downloads_and_reuploads(tmp_path, monkeypatch):
    monkeypatch.setattr(sys, "platform", "emscripten")
    first = ledger.Ledger("ada", tmp_path)
    assert first.mode == "memory" and "browser-only" in first.warnings[0]
    _append(first, "predict", value=42)
    _append(first, "unlock")
    [(name, data)] = first.export_files()
    assert list(tmp_path.iterdir()) == []  # nothing written to the (in-memory) disk

    # next visit: a fresh page, the student uploads the downloaded file
    second = ledger.Ledger("ada", tmp_path)
    assert second.events() == []
    result = second.import_bytes(data, name)
    assert result.clean and [e["kind"] for e in second.events()] == ["predict", "unlock"]
    ev = _append(second, "explain", text="next visit")
    assert ev["seq"] == 3 and ev["prev_hash"] == result.head_hash
    [(name2, data2)] = second.export_files()
    again = ledger.read_ledger(data2)
    assert name2 == name and again.clean and len(again.events) == 3
    assert data2.startswith(data)  # the uploaded bytes are kept as they were

    other = ledger.Ledger("bob", tmp_path)
    assert "another student" in str(other.import_bytes(data, name).problems[-1])
    assert other.events() == []


def test_a_line_is_checked_on_its_own_bytes_and_an_edit_still_shows():
    """The reader checks a line the lab wrote on the bytes its hash covers (without encoding
    the event again); a line re-encoded by an editor is checked on its canonical form, and an
    edited one is a hash mismatch either way."""
    import json

    from labs.core.course.ledger import events

    ev = {"schema": 1, "seq": 1, "ts": "2025-03-01T12:00:00.000000Z", "student_id": "ada",
          "lab_id": "lab01", "lab_version": "v", "item_id": "lab01.x", "kind": "predict",
          "payload": {"value": 1.5, "reason": "é <b>"}, "session": "s",
          "prev_hash": events.GENESIS_HASH}
    ev["hash"] = events.event_hash(ev)
    line = events.event_line(ev).strip()
    assert events._hashes_own_bytes(line, ev["hash"])
    assert events.parse_line(line) == (ev, None)
    reencoded = json.dumps(json.loads(line), indent=1).encode()
    assert not events._hashes_own_bytes(reencoded, ev["hash"])
    assert events.parse_line(reencoded)[1] is None
    edited = line.replace(b"1.5", b"2.5")
    assert events.parse_line(edited)[1].startswith("hash does not match")
