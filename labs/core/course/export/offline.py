"""``labs-export --offline``: marimo's frontend bundled next to the pages, no CDN.

:func:`bundle_offline_assets` copies ``marimo/_static`` of the installed package to
``<site>/_marimo/``; :func:`make_page_offline` points every frontend URL of a page there and
adds a notice for pages opened from disk (browsers do not run ES modules from ``file://``).
Served over http (``python -m http.server`` in the site folder) the site needs no internet.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Iterable
from urllib.parse import unquote

from labs.core.course.export.inspection import ExportError
# under its old local name: tests/mutation/mutations.py names the line that uses it
from labs.core.course.export.inspection import FRONTEND_URL_RE as _FRONTEND_URL_RE

__all__ = [
    "ASSET_DIR_NAME", "MATHJAX_FILE", "MATHJAX_LOCAL", "MATHJAX_STUB", "MATHJAX_URL_RE",
    "SERVE_MARIMO", "bundle_offline_assets", "make_page_offline", "marimo_static_dir",
    "needed_files", "prune_offline_assets", "prune_to", "serve_marimo", "write_mathjax_stand_in"
]

ASSET_DIR_NAME = "_marimo"

# The plotly plugin asks a CDN for MathJax on every page (only needed for LaTeX in plotly
# labels, which the labs do not use). Offline it is pointed at a one-line local script that
# stands in for it (MATHJAX_STUB): the request is answered by the same server, nothing fails
# (no 404 in the console), the plot renders, and the page makes no request off the machine.
MATHJAX_URL_RE = re.compile(r"https?://[^\s\"'`()<>]*?/mathjax-full@[^\s\"'`]*?\.js")
MATHJAX_FILE = "mathjax-not-bundled.js"
#: Where the offline pages (at the site's root) load the stand-in from.
MATHJAX_LOCAL = f"./{ASSET_DIR_NAME}/{MATHJAX_FILE}"
MATHJAX_STUB = ("/* Roofline Labs offline copy: MathJax is not bundled (the labs' figures use no "
                "LaTeX). This empty script stands in for it, so no request fails or leaves the "
                "machine. */\n")

# Text files whose contents name other files (followed by needed_files); binaries are leaves.
_TEXT_SUFFIXES = {".html", ".js", ".mjs", ".css", ".json", ".webmanifest", ".svg", ".txt", ".map"}
# A file name as pages and scripts write it: ``./assets/index-s-M1OXjs.js``, ``favicon.ico``.
_NAME_RE = re.compile(r"[A-Za-z0-9_.@~+%-]+\.[A-Za-z0-9]{1,12}")


def needed_files(folder: Path, roots: Iterable[Path]) -> set[Path]:
    """The files under ``folder`` that ``roots`` need: the roots, every file whose name a needed
    text file mentions (``<link href>``, ``import()``, a stylesheet's ``url()``, a manifest's
    icons), and so on until nothing new is named. Names are matched by file name, URL-decoded;
    a name no file has is ignored (it is a URL on the web or a name in code).
    """
    by_name: dict[str, list[Path]] = {}
    for path in folder.rglob("*"):
        if path.is_file():
            by_name.setdefault(path.name, []).append(path)
    needed: set[Path] = set()
    todo = [Path(r) for r in roots]
    while todo:
        path = todo.pop()
        if path in needed:
            continue
        needed.add(path)
        if path.suffix.lower() not in _TEXT_SUFFIXES or not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        names = set(_NAME_RE.findall(text))
        names |= {unquote(unquote(n)) for n in names if "%" in n}
        for name in names:
            todo.extend(p for p in by_name.get(name.rsplit("/", 1)[-1], ()) if p not in needed)
    return needed


def prune_to(folder: Path, keep: set[Path]) -> list[Path]:
    """Delete every file under ``folder`` not in ``keep`` (then empty folders); returns them."""
    removed = [p for p in folder.rglob("*") if p.is_file() and p not in keep]
    for path in removed:
        path.unlink()
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), reverse=True):
        if not any(sub.iterdir()):
            sub.rmdir()
    return removed


# Shown instead of a blank page when an offline copy is opened from disk (file://): browsers
# refuse to load ES modules from file:// pages, so marimo's frontend cannot start there.
_FILE_PROTOCOL_NOTICE = """<script>
if (location.protocol === "file:") {
  document.addEventListener("DOMContentLoaded", function () {
    var d = document.createElement("div");
    d.setAttribute("role", "alert");
    d.style.cssText = "font:16px/1.5 system-ui,sans-serif;max-width:40em;margin:3em auto;" +
      "padding:1em 1.2em;border:2px solid #d55e00;border-radius:8px";
    d.textContent = "This page was opened from disk (file://), where browsers do not run " +
      "marimo's frontend. Serve the folder instead: open a terminal in it, run " +
      "`python -m http.server 8000`, then open http://localhost:8000/";
    document.body.prepend(d);
  });
}
</script>"""


def marimo_static_dir() -> Path:
    """The frontend build shipped inside the installed marimo package."""
    import marimo

    static = Path(marimo.__file__).parent / "_static"
    if not (static / "assets").is_dir():
        raise ExportError(f"marimo's frontend assets are missing from {static}")
    return static


def bundle_offline_assets(site: Path) -> Path:
    """Copy marimo's frontend into ``site/_marimo`` (once per site); returns that folder.

    The entry script's MathJax URL is pointed at a local stand-in (see ``MATHJAX_URL_RE``).
    What the pages do not need is removed once they are written (:func:`prune_offline_assets`).
    """
    static = marimo_static_dir()
    target = site / ASSET_DIR_NAME
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(static, target, ignore=shutil.ignore_patterns("index.html", "*.md"))
    write_mathjax_stand_in(target / "assets", target / "assets", MATHJAX_LOCAL,
                           stand_in=target / MATHJAX_FILE)
    return target


def write_mathjax_stand_in(assets_dir: Path, out: Path, url: str, *,
                           stand_in: Path | None = None) -> list[Path]:
    """Write to ``out`` a copy of each of marimo's frontend scripts in ``assets_dir`` that asks
    a CDN for MathJax, pointed at ``url`` instead, and the stand-in (:data:`MATHJAX_STUB`) at
    ``stand_in`` (default: ``out/`` :data:`MATHJAX_FILE`); returns the copies. ``url`` is
    where the page finds the stand-in: a
    script's ``src`` resolves against the page, not the script. The live servers
    (``export.offline.serve_marimo``) serve these copies in place of the installed ones."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for js in sorted(Path(assets_dir).glob("*.js")):
        text = js.read_text(encoding="utf-8", errors="surrogateescape")
        if "mathjax-full@" in text:
            copy = out / js.name
            copy.write_text(MATHJAX_URL_RE.sub(url, text), encoding="utf-8",
                            errors="surrogateescape")
            written.append(copy)
    (stand_in or out / MATHJAX_FILE).write_text(MATHJAX_STUB, encoding="utf-8")
    return written


def prune_offline_assets(site: Path, pages: Iterable[Path]) -> list[Path]:
    """Keep in ``site/_marimo`` only what the offline ``pages`` need; returns what went."""
    target = site / ASSET_DIR_NAME
    return prune_to(target, needed_files(target, [*pages, target / MATHJAX_FILE]))


def make_page_offline(page: str, asset_prefix: str = f"./{ASSET_DIR_NAME}") -> str:
    """Point every frontend URL of an exported page at the local copy; add the file:// note."""
    page = _FRONTEND_URL_RE.sub(asset_prefix, page)
    return page.replace("</head>", _FILE_PROTOCOL_NOTICE + "</head>", 1)


#: ``python -c SERVE_MARIMO edit|run ...`` runs marimo's command line as ``python -m marimo``
#: does, through :func:`serve_marimo`.
SERVE_MARIMO = "from labs.core.course.export.offline import serve_marimo; serve_marimo()"


def serve_marimo() -> None:
    """marimo's command line (``sys.argv[1:]``: ``edit ...`` or ``run ...``), its pages making
    no request off the machine. marimo's frontend asks a CDN for MathJax whenever it draws a
    plotly figure (for LaTeX in plotly's labels, which the labs do not use; every lab's header
    holds a figure), so offline every lab logged a failed request. Here the scripts that name
    that CDN are served from copies pointed at a local stand-in (``export.offline``'s, as in
    ``labs-export --offline``), put ahead of marimo's own assets folder; nothing else changes."""
    import atexit
    import tempfile

    from marimo._cli.cli import main as marimo_main
    from marimo._server.api.endpoints import assets

    overlay = Path(tempfile.mkdtemp(prefix="roofline-marimo-assets-"))
    atexit.register(shutil.rmtree, overlay, True)
    # a script's src resolves against the page (/?file=...), whose assets are at ./assets/
    write_mathjax_stand_in(Path(assets.assets_dir), overlay, f"./assets/{MATHJAX_FILE}")
    mounts = [r for r in assets.router.routes if getattr(r, "path", None) == "/assets"]
    if len(mounts) != 1 or not hasattr(mounts[0].app, "all_directories"):
        raise RuntimeError("marimo's /assets route has changed: the MathJax stand-in cannot "
                           "be served (labs.core.course.export.offline.serve_marimo)")
    mounts[0].app.all_directories.insert(0, str(overlay))
    marimo_main(prog_name="marimo")
