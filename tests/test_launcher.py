"""``roofline-labs``: a student workspace with only the labs, marimo settings that
beat the student's own, links that open a lab in app view, and a start that cleans up.

The browser side (what the student sees) is in tests/browser/test_launcher_browser.py.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.parse
import urllib.request
from datetime import datetime
from pathlib import Path

import pytest

from labs.core import ledger
from labs.core.course import launcher
from labs.core.course.export.offline import MATHJAX_FILE

ROOT = Path(__file__).resolve().parents[1]


def _fake_labs(folder: Path, titles: dict[str, str]) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for name, title in titles.items():
        path = folder / name
        path.write_text(f"def _(style):\n    style.lab_header({title!r}, 'sub', goals=['g1'], "
                        "minutes=30, reading=[])\n", encoding="utf-8")
        out.append(path)
    return out


def test_package_labs_are_the_labs_only():
    names = [p.name for p in launcher.package_labs()]
    assert names and all(re.fullmatch(r"lab_\d\d_\w+\.py", n) for n in names)
    assert "gallery.py" not in names and "instructor_dashboard.py" not in names
    assert names == sorted(names)


def test_workspace_holds_released_copies_and_marimo_settings(tmp_path):
    ws = launcher.prepare_workspace(tmp_path / "ws")
    sources = launcher.package_labs()
    assert [p.name for p in ws.labs] == [p.name for p in sources]
    assert ws.installed == [p.name for p in sources] and not ws.updated and not ws.set_aside
    for copy, src in zip(ws.labs, sources):
        assert ledger.lab_version(copy) == ledger.lab_version(src)  # the ledger names a release
    listed = sorted(p.name for p in ws.path.iterdir() if not p.name.startswith("."))
    assert listed == sorted([p.name for p in sources] + ["labs.css", "pyproject.toml"])
    # the style sheet the labs name (css_file) sits beside them, as in the package
    assert (ws.path / "labs.css").read_bytes() == (sources[0].parent / "labs.css").read_bytes()
    settings = tomllib.loads((ws.path / "pyproject.toml").read_text())["tool"]["marimo"]
    assert settings["runtime"]["auto_instantiate"] is True
    assert settings["runtime"]["on_cell_change"] == "autorun"
    assert settings["runtime"]["output_max_bytes"] >= 8_000_000
    assert settings["save"]["autosave"] == "off"
    assert settings["display"]["theme"] == "system"  # light or dark as the system is set
    (css,) = settings["display"]["custom_css"]
    assert ".marimo-cell.stopped" in (ws.path / css).read_text()
    again = launcher.prepare_workspace(tmp_path / "ws")  # nothing to do the second time
    assert not (again.installed or again.updated or again.set_aside) and again.messages() == []


def test_an_updated_lab_replaces_an_untouched_copy(tmp_path):
    src = _fake_labs(tmp_path / "src", {"lab_01_a.py": "A", "lab_02_b.py": "B"})
    launcher.prepare_workspace(tmp_path / "ws", src)
    src[0].write_text(src[0].read_text() + "# fixed\n")
    ws = launcher.prepare_workspace(tmp_path / "ws", src)
    assert ws.updated == ["lab_01_a.py"] and not ws.set_aside
    assert (ws.path / "lab_01_a.py").read_text() == src[0].read_text()
    assert "Updated" in " ".join(ws.messages())


def test_a_lab_the_student_edited_is_kept_aside_and_the_release_restored(tmp_path):
    src = _fake_labs(tmp_path / "src", {"lab_01_a.py": "A"})
    launcher.prepare_workspace(tmp_path / "ws", src)
    mine = tmp_path / "ws" / "lab_01_a.py"
    mine.write_text(mine.read_text() + "print('my experiment')\n")
    ws = launcher.prepare_workspace(tmp_path / "ws", src, now=datetime(2026, 1, 2, 3, 4, 5))
    ((name, moved),) = ws.set_aside
    assert name == "lab_01_a.py" and moved == ws.path / "edited" / "lab_01_a.20260102-030405.py"
    assert "my experiment" in moved.read_text()  # nothing the student wrote is lost
    assert mine.read_text() == src[0].read_text()
    assert str(moved) in " ".join(ws.messages())


def test_a_set_aside_lab_keeps_the_style_sheet_it_names(tmp_path):
    src = _fake_labs(tmp_path / "src", {"lab_01_a.py": "A"})
    (tmp_path / "src" / "labs.css").write_text(".text-error.text-error { color: red; }\n")
    launcher.prepare_workspace(tmp_path / "ws", src)
    mine = tmp_path / "ws" / "lab_01_a.py"
    mine.write_text(mine.read_text() + "print('my experiment')\n")
    ws = launcher.prepare_workspace(tmp_path / "ws", src)
    ((_, moved),) = ws.set_aside
    for folder in (ws.path, moved.parent):  # css_file resolves beside each copy
        assert (folder / "labs.css").read_text() == (tmp_path / "src" / "labs.css").read_text()


def test_an_unwritable_workspace_is_a_message_not_a_traceback(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    assert launcher.main(["--workspace", str(blocker / "ws"), "--no-browser"]) == 2
    err = capsys.readouterr().err
    assert "could not prepare the workspace" in err and "--workspace" in err
    assert "Traceback" not in err


def test_lab_links_open_app_view_with_the_token():
    url = launcher.lab_url("http://127.0.0.1:2718", Path("/w s/lab_01_x.py"), "tok&en")
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
    assert query == {"file": ["/w s/lab_01_x.py"], "view-as": ["present"],
                     "show-chrome": ["false"], "access_token": ["tok&en"]}


def test_index_lists_each_lab_numbered_and_escaped_and_says_where_the_ledger_is(tmp_path):
    labs = _fake_labs(tmp_path, {"lab_01_a.py": "Lab 1 · Alpha",
                                 "lab_02_b.py": "Beta <script>x</script>"})
    urls = [f"http://h/?file={i}&view-as=present" for i in range(2)]
    page = launcher.render_index(labs, urls, "Your ledger is /x/roofline-ledger-ada.jsonl",
                                 tmp_path)
    assert "Lab 1 · Alpha" in page and "Lab 2 · Beta &lt;script&gt;" in page
    assert "<script>" not in page and 'href="http://h/?file=0&amp;view-as=present"' in page
    assert "roofline-ledger-ada.jsonl" in page and "about 30 minutes" in page
    assert "Ctrl + ." in page


def test_ledger_line_names_the_file_or_says_the_id_is_asked(monkeypatch, tmp_path):
    monkeypatch.setenv(ledger.ENV_LEDGER_DIR, str(tmp_path))
    monkeypatch.setenv(ledger.ENV_STUDENT_ID, "ada")
    folder, sid, line = launcher.ledger_summary()
    assert (folder, sid) == (tmp_path, "ada") and str(tmp_path / "roofline-ledger-ada.jsonl") in line
    monkeypatch.delenv(ledger.ENV_STUDENT_ID)
    _, sid, line = launcher.ledger_summary()
    assert sid is None and "asks for your student id" in line


def test_console_command_is_declared():
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["roofline-labs"] == "labs.core.course.launcher:main"


def start_launcher(workspace: Path, env: dict) -> tuple[subprocess.Popen, list[str], Path]:
    """``roofline-labs --no-browser`` in a subprocess; its lab links and index page."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "labs.core.course.launcher", "--workspace", str(workspace),
         "--no-browser"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    links, lines = [], []
    for line in proc.stdout:
        lines.append(line)
        links += re.findall(r"http://127\.0\.0\.1:\d+/\?\S+", line)
        index = re.search(r"(file://\S+index\.html)", line)
        if index:
            return proc, links, Path(urllib.parse.unquote(index.group(1)[len("file://"):]))
    proc.wait()
    raise AssertionError("the launcher stopped early:\n" + "".join(lines))


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> str:
    """Stop the launcher with ``sig`` (SIGINT: a student's Ctrl+C); returns what it printed
    from then on."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.stdout.read() if proc.stdout and not proc.stdout.closed else ""


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=3):
            return True
    except (urllib.error.URLError, OSError):
        return False


@pytest.mark.slow
def test_launcher_serves_every_lab_and_stops_marimo_with_it(tmp_path):
    env = dict(os.environ, ROOFLINE_LEDGER_DIR=str(tmp_path / "ledger"),
               ROOFLINE_STUDENT_ID="ada")
    proc, links, index = start_launcher(tmp_path / "ws", env)
    try:
        assert len(links) == len(launcher.package_labs())
        assert index.exists() and (index.stat().st_mode & 0o077) == 0  # holds the token
        for link in links:
            assert "view-as=present" in link and "access_token=" in link
            with urllib.request.urlopen(link, timeout=30) as r:
                assert r.status == 200
        base = links[0].split("/?")[0]
        no_token = base + "/?" + re.sub(r"&?access_token=[^&]+", "", links[0].split("/?")[1])
        with urllib.request.urlopen(no_token, timeout=30) as r:  # the token is required
            assert "/auth/login" in r.geturl()
        # marimo's frontend asks a CDN for MathJax (plotly's LaTeX) when it draws a figure:
        # the server hands the page its scripts pointed at a stand-in it serves itself
        import http.cookiejar

        browser = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        with browser.open(links[0], timeout=30) as r:
            page = r.read().decode()
        scripts = re.findall(r"(?:src|href)=\"\./(assets/[\w.-]+\.js)\"", page)
        assert scripts, page[:500]
        served = "".join(browser.open(f"{base}/{js}", timeout=30).read().decode()
                         for js in scripts)
        assert "mathjax" in served.lower() and "mathjax-full@" not in served
        with browser.open(f"{base}/assets/{MATHJAX_FILE}", timeout=30) as r:
            assert r.status == 200 and b"MathJax is not bundled" in r.read()
    finally:
        said = stop(proc, signal.SIGINT)  # Ctrl+C
    assert proc.returncode == 0
    # Ctrl+C says the labs stopped and where the ledger is
    stopped = next(line for line in said.splitlines() if "stopped" in line)
    assert "Roofline Labs stopped" in stopped, said
    assert str(tmp_path / "ledger" / "roofline-ledger-ada.jsonl") in stopped
    assert "Traceback" not in said
    deadline = time.monotonic() + 20
    while _answers(base + "/health") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not _answers(base + "/health"), "marimo kept running after the launcher stopped"
    shutil.rmtree(tmp_path / "ws", ignore_errors=True)


# --- the same address after a restart; what to do without torch -----------------


def test_a_workspace_keeps_its_port_and_token(tmp_path):
    ws = tmp_path / "ws"
    first = launcher.stable_address(ws)
    again = launcher.stable_address(ws)
    assert (again.port, again.token) == (first.port, first.token) and not again.notice
    assert first.port == launcher.DEFAULT_PORT or first.notice  # the default, unless taken
    kept = ws / launcher.STATE_DIR / launcher.SERVER_FILE
    assert (kept.stat().st_mode & 0o077) == 0  # the token opens the student's labs
    other = launcher.stable_address(tmp_path / "other")
    assert other.token != first.token  # a token per workspace


def test_a_taken_port_gives_way_to_the_next_free_one_and_says_so(tmp_path):
    import socket

    ws = tmp_path / "ws"
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        address = launcher.stable_address(ws, requested=taken)
        assert address.port != taken and f"Port {taken} is in use" in address.notice
    assert launcher.stable_address(ws).port == address.port  # kept for next time


def _time_wait_port() -> int:
    """A loopback port on which nothing listens and a closed connection waits in TIME-WAIT,
    as after a server stopped with a browser connected: the server side closes first."""
    import socket

    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        conn, _ = server.accept()
        conn.close()  # the server's side of the connection now waits in TIME-WAIT
        client.close()
    return port


@pytest.mark.skipif(sys.platform != "linux", reason="reads TIME-WAIT sockets with ss (Linux)")
def test_a_restart_keeps_the_port_while_the_last_connections_wait_in_time_wait(tmp_path):
    """Stopping the labs and starting them again within a minute must not move the address:
    TIME-WAIT sockets hold the port for nobody (marimo's server binds with SO_REUSEADDR)."""
    ws = tmp_path / "ws"
    port = _time_wait_port()
    states = subprocess.run(["ss", "-Htan", f"sport = :{port}"], capture_output=True,
                            text=True).stdout if shutil.which("ss") else "TIME-WAIT"
    assert "TIME-WAIT" in states and "LISTEN" not in states, states
    address = launcher.stable_address(ws, requested=port)
    assert (address.port, address.notice) == (port, "")
    # and the server itself can listen there, as the probe said
    import socket

    with socket.socket() as server:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("127.0.0.1", port))
        server.listen()
        again = launcher.stable_address(ws)  # a real listener still moves it
        assert again.port != port and f"Port {port} is in use" in again.notice


def _without_torch(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))


def _uses_the_package_index_alone(command: str) -> bool:
    """No other index, no URL, no find-links: only what the package index itself serves."""
    return not re.search(r"--(extra-)?index-url|--torch-backend|--find-links|\s-f\s|://|"
                         r"--default-index|--index\b", command)


def test_without_torch_the_start_gives_the_cpu_build_and_a_fallback_from_the_index_alone(
        monkeypatch):
    """Linux: PyTorch's CPU build from PyTorch's own index first; where that index cannot be
    reached, the package index alone (whose Linux build is the CUDA one: said, with its size)."""
    _without_torch(monkeypatch)
    commands = launcher.torch_commands()
    notice = launcher.torch_notice()
    if sys.platform.startswith("linux"):
        assert commands["cpu"] in notice and "--torch-backend=cpu" in commands["cpu"]
    assert sys.executable in commands["cpu"] or os.name == "nt"
    assert commands["index"] in notice and _uses_the_package_index_alone(commands["index"])
    assert not _uses_the_package_index_alone(commands["cpu"])  # the check can fail
    linux = launcher.torch_advice("linux")
    first, fallback = linux.index(commands["cpu"]), linux.index(commands["index"])
    assert first < fallback and "cannot reach PyTorch's index" in linux[first:fallback]
    assert "CUDA build" in linux[fallback:] and "GB" in linux[fallback:]
    for platform in ("darwin", "win32"):  # there the package index's build is the CPU one
        advice = launcher.torch_advice(platform)
        assert advice.index(commands["index"]) < advice.find("--torch-backend") or (
            "--torch-backend" not in advice)
        assert "--torch-backend=cpu" not in advice
    assert "stop roofline-labs (Ctrl+C" in notice and "run roofline-labs again" in notice


def test_the_labs_give_the_same_torch_commands_as_the_launcher(monkeypatch):
    from labs.core.measure import device
    from labs.core.measure.profile import guard as profile_guard

    _without_torch(monkeypatch)
    assert device.torch_commands() == launcher.torch_commands()
    for platform in ("linux", "darwin", "win32"):
        lab, start = device.torch_install_advice(platform), launcher.torch_advice(platform)
        shown = [c for c in launcher.torch_commands().values() if c in start]
        assert shown and [c for c in device.torch_commands().values() if c in lab] == shown
    assert launcher.torch_commands()["index"] in device._NO_TORCH
    assert "stop roofline-labs" in device._NO_TORCH
    said = profile_guard.measurement_unavailable("This comparison")
    assert f"`{launcher.torch_commands()['index']}`" in said


def test_the_troubleshooting_page_gives_both_commands_and_says_which_to_choose():
    page = (ROOT / "docs" / "students" / "troubleshooting.md").read_text(encoding="utf-8")
    section = page[page.index("## The lab says"):page.index("\n## ", page.index("## The lab says") + 5)]
    placeholder = launcher.torch_commands('<this python>')
    for key in ("cpu", "index", "gpu"):
        assert placeholder[key].replace('"<this python>"', "<this python>") in section or \
            placeholder[key] in section, key
    assert "cannot reach" in section and "CUDA build" in section
