"""``roofline-labs``: open the labs the way a student should first see them.

``marimo edit labs/`` shows a student the machinery: every cell's code, the gallery and the
instructor dashboard next to the labs, and an "Ancestor stopped" error under every instrument
that waits for a prediction. The launcher instead

1. keeps a **student workspace** (default ``~/roofline-labs``, or ``--workspace`` /
   ``$ROOFLINE_WORKSPACE``) holding only the labs (``labs/lab_*.py`` of the installed package,
   and ``labs.css``, the style sheet they name),
   copied byte for byte, so the ledger's ``lab_version`` is the released one. A copy the
   course has since updated is replaced; a copy the student edited is first moved to
   ``edited/`` (nothing is lost) and the released version is put back;
2. writes the workspace's ``pyproject.toml``: marimo settings for these labs only, which take
   precedence over the student's own marimo config (the labs run on open, widgets re-run the
   instruments, figures are never cut for size, the lab files are not auto-saved) and a style
   sheet that hides marimo's "Ancestor stopped" notice in the code view;
3. starts ``marimo edit`` on the workspace (127.0.0.1, no browser of its own) at a **stable
   address**: the port and access token are kept in the workspace
   (``.roofline/server.json``, readable by the student only), so a link or bookmark from an
   earlier session works again after a restart. The port is :data:`DEFAULT_PORT` the first
   time (or ``--port``); when it is taken, the next free one is used, said, and kept. Then it
   opens a local page listing the labs (title, time, goals) and saying where the ledger lives;
   each link opens a lab in marimo's app view without the editor's panels
   (``view-as=present&show-chrome=false``: outputs only; Ctrl/Cmd + . shows the code).
4. without torch, says that nothing can be measured, the exact commands that install PyTorch
   into this Python (:func:`torch_advice`: the CPU build from PyTorch's own index, and the
   package index alone as the fallback), and that restarting means stopping
   ``roofline-labs`` (Ctrl+C) and starting it again.

``roofline-labs --no-browser`` prints the links instead of opening them. Ctrl+C stops marimo
and says where the ledger is (:func:`stopped_message`).
"""

from __future__ import annotations

import argparse
import html
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
import webbrowser
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Sequence

from labs.core.course import ledger
from labs.core.course.export.index import (DEFAULT_LABS_DIR, copy_style_sheet, discover_labs,
                                          read_lab_meta)
from labs.core.course.export.offline import SERVE_MARIMO
from labs.core.course.install import torch_advice, torch_commands, torch_notice  # noqa: F401

__all__ = [
    "Address", "DEFAULT_PORT", "EDITED_DIR", "ENV_WORKSPACE", "PORT_TRIES", "SERVER_FILE",
    "STATE_DIR", "STUDENT_CSS", "WORKSPACE_PYPROJECT", "Workspace", "default_workspace",
    "lab_title", "lab_url", "ledger_summary", "main", "marimo_command", "package_labs",
    "prepare_workspace", "render_index", "stable_address", "stopped_message", "torch_advice",
    "torch_commands", "torch_notice"
]

ENV_WORKSPACE = "ROOFLINE_WORKSPACE"
#: The port a workspace's server takes the first time (marimo's own default is 2718, which a
#: student's other marimo session may hold); then the workspace keeps the one it used.
DEFAULT_PORT = 27182
#: How many ports after the kept one are tried before giving up on a stable address.
PORT_TRIES = 20
SERVER_FILE = "server.json"
STATE_DIR = ".roofline"  # manifest, style sheet, index page (hidden from marimo's file list)
EDITED_DIR = "edited"

#: marimo settings for the workspace (project layer: above the student's own marimo config).
WORKSPACE_PYPROJECT = """\
# Written by roofline-labs each time it starts: marimo settings for the labs in this folder.
# They apply here only and take precedence over your own marimo settings (fonts and everything
# else not named here stay yours).
[tool.marimo.runtime]
auto_instantiate = true     # a lab runs when it opens
on_cell_change = "autorun"  # moving a widget re-runs the instruments
output_max_bytes = 8000000  # a figure is never replaced by "output too large"
auto_reload = "off"

[tool.marimo.save]
autosave = "off"            # the labs stay the released versions your ledger names
format_on_save = false

[tool.marimo.display]
custom_css = [".roofline/student.css"]
theme = "system"            # light or dark as your system is set (marimo's default is light)
"""

#: Cells below a closed prediction gate carry class ``stopped``; their "Ancestor stopped"
#: notice is marimo's, not the lab's: the gate's own cell says what to do.
STUDENT_CSS = """\
/* Written by roofline-labs. The cell that waits for a prediction says so itself; the cells
   below it would each add marimo's "Ancestor stopped ... cell-NN" notice.
   Rules here reach the page only: marimo copies one custom sheet into its widgets' shadow
   roots, the labs' own labs.css (css_file), so a rule for a widget belongs there. */
.marimo-cell.stopped [data-cell-role="output"] { display: none; }
"""


@dataclass
class Workspace:
    """What :func:`prepare_workspace` did: the lab files to open, and what changed."""

    path: Path
    labs: list[Path] = field(default_factory=list)
    installed: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)
    set_aside: list[tuple[str, Path]] = field(default_factory=list)

    def messages(self) -> list[str]:
        out = []
        if self.installed:
            out.append(f"Copied {len(self.installed)} lab(s) into {self.path}.")
        if self.updated:
            out.append("Updated to the course's current version: " + ", ".join(self.updated)
                       + ".")
        for name, moved in self.set_aside:
            out.append(f"{name} had been edited: your copy is kept as {moved}, and the "
                       "course's version is back in place (your ledger names that version).")
        return out


def package_labs() -> list[Path]:
    """The labs of the installed package (``labs/lab_*.py``), in order; not the gallery or the
    instructor dashboard."""
    return discover_labs(DEFAULT_LABS_DIR)


def default_workspace() -> Path:
    value = os.environ.get(ENV_WORKSPACE, "").strip()
    return Path(value).expanduser() if value else Path.home() / "roofline-labs"


def _manifest(workspace: Path) -> dict:
    try:
        data = json.loads((workspace / STATE_DIR / "manifest.json").read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def prepare_workspace(workspace: str | os.PathLike, sources: Sequence[Path] | None = None,
                      *, now: datetime | None = None) -> Workspace:
    """Bring ``workspace`` up to date with ``sources`` (default: the package's labs) and write
    its marimo settings; see the module docstring. Raises OSError if it cannot be written."""
    ws = Workspace(Path(workspace).expanduser().resolve())
    sources = list(package_labs() if sources is None else sources)
    if not sources:
        raise ValueError("sources: no lab_*.py notebooks to put in the workspace")
    state = ws.path / STATE_DIR
    state.mkdir(parents=True, exist_ok=True)
    manifest = _manifest(ws.path)
    installed: dict = manifest.get("installed", {}) if isinstance(manifest.get("installed"),
                                                                   dict) else {}
    stamp = (now or datetime.now()).strftime("%Y%m%d-%H%M%S")
    for src in sources:
        target = ws.path / src.name
        released = ledger.lab_version(src)
        history = [v for v in installed.get(src.name, []) if isinstance(v, str)]
        if not target.exists():
            ws.installed.append(src.name)
        else:
            current = ledger.lab_version(target)
            if current == released:
                ws.labs.append(target)
                installed[src.name] = list(dict.fromkeys(history + [released]))
                continue
            if current in history:  # an earlier release the student never touched
                ws.updated.append(src.name)
            else:  # the student's own edits: keep them, out of the way
                edited = ws.path / EDITED_DIR
                edited.mkdir(exist_ok=True)
                moved = edited / f"{src.stem}.{stamp}.py"
                shutil.move(str(target), moved)
                _copy_style_sheet(sources, edited)  # the set-aside copy still names it
                ws.set_aside.append((src.name, moved))
        shutil.copyfile(src, target)
        installed[src.name] = list(dict.fromkeys(history + [released]))
        ws.labs.append(target)
    _copy_style_sheet(sources, ws.path)
    (ws.path / "pyproject.toml").write_text(WORKSPACE_PYPROJECT, encoding="utf-8")
    (state / "student.css").write_text(STUDENT_CSS, encoding="utf-8")
    (state / "manifest.json").write_text(json.dumps({"installed": installed}, indent=1),
                                         encoding="utf-8")
    return ws


def _copy_style_sheet(sources: Sequence[Path], folder: Path) -> None:
    """Put the style sheet the labs name (``css_file``) into ``folder``, beside its copies of
    them as in the package: the course's file, replaced like a lab the student never touched."""
    for labs_dir in dict.fromkeys(src.parent for src in sources):
        if copy_style_sheet(labs_dir, folder):
            return


def lab_url(base_url: str, lab: Path, token: str | None) -> str:
    """A lab opened in marimo's editor in app view (``view-as=present``: outputs only) without
    the editor's side panels and toolbars (``show-chrome=false``); Ctrl/Cmd + . shows the code
    and hides it again."""
    query = {"file": str(lab), "view-as": "present", "show-chrome": "false"}
    if token:
        query["access_token"] = token
    return base_url.rstrip("/") + "/?" + urllib.parse.urlencode(query)


def ledger_summary() -> tuple[Path, str | None, str]:
    """(ledger folder, student id or None, one sentence for the student)."""
    folder = ledger.default_ledger_dir()
    sid = ledger.resolve_student_id()
    if sid:
        where = folder / ledger.ledger_filename(sid)
        return folder, sid, (f"Your ledger (what you predict, observe and explain) is {where}: "
                             "hand in that file.")
    return folder, None, (f"Your ledger will be {folder / (ledger.FILE_PREFIX + '<your id>.jsonl')}"
                          ": the first lab you open asks for your student id once.")


def render_index(labs: Sequence[Path], urls: Sequence[str], ledger_line: str,
                 workspace: Path) -> str:
    """The page the student sees first: the labs (title, minutes, goals), each a link that
    opens it, and where the ledger lives. Self-contained, light and dark."""
    items = []
    for lab, url in zip(labs, urls):
        meta = read_lab_meta(lab)
        minutes = f" · about {meta.minutes:g} minutes" if meta.minutes else ""
        goals = "".join(f"<li>{html.escape(g)}</li>" for g in meta.goals)
        items.append(
            f'<li class="lab"><a href="{html.escape(url)}">{html.escape(lab_title(lab))}</a>'
            f'<span class="time">{minutes}</span><p>{html.escape(meta.subtitle)}</p>'
            + (f"<details><summary>Learning goals</summary><ul>{goals}</ul></details>"
               if goals else "") + "</li>")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Roofline Labs</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
 :root {{ color-scheme: light dark; --fg:#1f2328; --muted:#59636e; --bg:#fff; --card:#f6f8fa;
         --link:#0b5cad; }}
 @media (prefers-color-scheme: dark) {{ :root {{ --fg:#e6edf3; --muted:#9198a1; --bg:#0d1117;
         --card:#161b22; --link:#58a6ff; }} }}
 body {{ font: 16px/1.5 system-ui, sans-serif; color: var(--fg); background: var(--bg);
        max-width: 52rem; margin: 2rem auto; padding: 0 1rem; }}
 h1 {{ margin-bottom: .2rem; }} .muted, .time {{ color: var(--muted); }}
 ol.labs {{ list-style: none; padding: 0; }}
 li.lab {{ background: var(--card); border-radius: 8px; padding: .8rem 1rem; margin: .7rem 0; }}
 li.lab a {{ font-size: 1.15rem; font-weight: 600; color: var(--link); }}
 li.lab p {{ margin: .3rem 0; }} code {{ font-size: .9em; }}
</style></head><body>
<h1>Roofline Labs</h1>
<p class="muted">Each lab opens in your browser with its code out of the way; every instrument
waits until you lock a prediction. Work top to bottom.</p>
<ol class="labs">{''.join(items)}</ol>
<p>{html.escape(ledger_line)}</p>
<p class="muted">Your copies of the labs are in <code>{html.escape(str(workspace))}</code>.
These links work while <code>roofline-labs</code> runs in your terminal (Ctrl+C stops it; run it
again to come back: the same links work again, and your predictions are restored from the
ledger). Curious how a lab works?
Press Ctrl + . (Cmd + . on a Mac) in the lab to show its code, and again to hide it.</p>
</body></html>
"""


def lab_title(lab: Path) -> str:
    """The lab's title as its header gives it, numbered from its file name ("Lab 2 · ...")."""
    title = read_lab_meta(lab).title
    parts = lab.stem.split("_")
    if title.lower().startswith("lab") or len(parts) < 2 or not parts[1].isdigit():
        return title
    return f"Lab {int(parts[1])} · {title}"


def _free_port(host: str) -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _port_is_free(host: str, port: int) -> bool:
    """Whether marimo could listen on ``port``: bound the way its server binds (uvicorn sets
    SO_REUSEADDR), so the TIME-WAIT sockets a stopped server's browser connections leave for
    about a minute do not count as "in use" and a restart keeps its address. Not on Windows,
    where SO_REUSEADDR would let the probe bind a port another program listens on (marimo's
    own probe leaves it out there too)."""
    with socket.socket() as s:
        if os.name != "nt":
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


@dataclass
class Address:
    """Where a workspace's server listens: its port, its access token, and what to tell the
    student about it (a moved port), if anything."""

    port: int
    token: str
    notice: str = ""


def stable_address(workspace: Path, host: str = "127.0.0.1",
                   requested: int | None = None) -> Address:
    """The workspace's kept port and token (``.roofline/server.json``), so links from an
    earlier session still work; the first time, :data:`DEFAULT_PORT` (or ``requested``) and a
    new token. A kept port that is taken gives way to the next free one (said in ``notice``),
    which is then kept. ``requested`` (``--port``) wins over the kept port."""
    path = Path(workspace) / STATE_DIR / SERVER_FILE
    try:
        kept = json.loads(path.read_text("utf-8"))
        kept = kept if isinstance(kept, dict) else {}
    except (OSError, ValueError):
        kept = {}
    token = kept.get("token")
    if not (isinstance(token, str) and len(token) >= 16 and token.replace("-", "").replace(
            "_", "").isalnum()):
        token = secrets.token_urlsafe(18)
    wanted = kept.get("port")
    wanted = requested or (wanted if isinstance(wanted, int) and 1024 <= wanted <= 65535
                           else DEFAULT_PORT)
    port, notice = wanted, ""
    if not _port_is_free(host, wanted):
        port = next((p for p in range(wanted + 1, min(wanted + 1 + PORT_TRIES, 65536))
                     if _port_is_free(host, p)), None) or _free_port(host)
        notice = (f"Port {wanted} is in use (roofline-labs may already be running in another "
                  f"terminal: its links still work there). This session uses port {port}; "
                  "the links below and the list of labs are up to date, and this port is "
                  "kept for next time.")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"port": port, "token": token}), encoding="utf-8")
    os.chmod(path, 0o600)  # the token opens the student's labs
    return Address(port, token, notice)


class _Stopped(Exception):
    """SIGTERM: stop as Ctrl+C does."""


def _stop_on_sigterm(*_) -> None:
    raise _Stopped


def stopped_message() -> str:
    """The line printed when the student stops the labs (Ctrl+C): that they stopped, where
    the ledger is (read again now: the id may have been given during the session), and how to
    come back."""
    folder, sid, _ = ledger_summary()
    if sid:
        where = (f"Your ledger is {folder / ledger.ledger_filename(sid)}: hand in that file "
                 "when you are done.")
    else:
        where = (f"No student id is remembered yet; your ledger will be "
                 f"{folder / (ledger.FILE_PREFIX + '<your id>.jsonl')}.")
    return (f"Roofline Labs stopped. {where} Run roofline-labs again to come back: the same "
            "links work, and your locked predictions are restored.")


def _wait_until_up(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"marimo stopped (exit status {proc.returncode}) before it "
                               "answered: see its messages above.")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    raise RuntimeError(f"marimo did not answer at {url} within {timeout:.0f} s.")


def marimo_command(workspace: Path, host: str, port: int) -> list[str]:
    return [sys.executable, "-c", SERVE_MARIMO, "edit", str(workspace), "--headless",
            "--host", host, "--port", str(port), "--token-password-file", "-",
            "--skip-update-check", "--no-sandbox"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="roofline-labs",
        description="Open the Roofline Labs in your browser (marimo's editor, app view).")
    p.add_argument("--workspace", type=Path, default=None,
                   help=f"folder for your copies of the labs (default: ${ENV_WORKSPACE} or "
                        "~/roofline-labs)")
    p.add_argument("--port", type=int, default=None,
                   help=f"port on 127.0.0.1 (default: the one this workspace used last, "
                        f"{DEFAULT_PORT} the first time; the next free one if it is taken)")
    p.add_argument("--no-browser", action="store_true",
                   help="print the links instead of opening a browser")
    p.add_argument("--timeout", type=float, default=120.0,
                   help="seconds to wait for marimo to start (default 120)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    host = "127.0.0.1"
    try:
        ws = prepare_workspace(args.workspace or default_workspace())
    except (OSError, ValueError) as exc:
        print(f"roofline-labs: could not prepare the workspace: {exc}\nPick another folder "
              "with --workspace PATH.", file=sys.stderr)
        return 2
    for line in ws.messages():
        print(line)
    address = stable_address(ws.path, host, args.port)
    port, token = address.port, address.token
    if address.notice:
        print(address.notice)
    notice = torch_notice()
    if notice:
        print(notice)
    base = f"http://{host}:{port}"
    # marimo's own banner would point the student at its file browser: keep its output in a
    # log, shown only if it fails.
    log_path = ws.path / STATE_DIR / "marimo.log"
    log = open(log_path, "wb")
    stopping = False
    proc = subprocess.Popen(marimo_command(ws.path, host, port), stdin=subprocess.PIPE,
                            stdout=log, stderr=subprocess.STDOUT, cwd=ws.path)
    try:  # SIGTERM (a closed terminal, a test) must stop marimo too, not only Ctrl+C
        signal.signal(signal.SIGTERM, _stop_on_sigterm)
    except ValueError:  # not the main thread: the caller stops us
        pass
    try:
        proc.stdin.write((token + "\n").encode())
        proc.stdin.close()
        _wait_until_up(f"{base}/health", proc, args.timeout)
        urls = [lab_url(base, lab, token) for lab in ws.labs]
        _, _, ledger_line = ledger_summary()
        index = ws.path / STATE_DIR / "index.html"
        index.write_text(render_index(ws.labs, urls, ledger_line, ws.path), encoding="utf-8")
        os.chmod(index, 0o600)  # it holds this session's access token
        print("\nRoofline Labs is running. Your labs:")
        for lab, url in zip(ws.labs, urls):
            print(f"  {lab_title(lab)}\n    {url}")
        print(f"\n{ledger_line}\nThe list of labs: {index.as_uri()}\nStop with Ctrl+C.",
              flush=True)
        if not args.no_browser and not webbrowser.open(index.as_uri()):
            print("(No browser could be opened here: open one of the links above.)")
        return proc.wait()
    except RuntimeError as exc:
        log.flush()
        tail = log_path.read_text("utf-8", errors="replace")[-3000:]
        print(f"roofline-labs: {exc}\n--- marimo said ({log_path}) ---\n{tail}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, _Stopped):
        stopping = True
        return 0
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        log.close()
        if stopping:  # after marimo is gone: "stopped" is then true
            print("\n" + stopped_message(), flush=True)


if __name__ == "__main__":
    sys.exit(main())
