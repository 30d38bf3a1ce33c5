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

from labs.core.course.export_inspect import _FRONTEND_URL_RE, ExportError

ASSET_DIR_NAME = "_marimo"

# The plotly plugin asks a CDN for MathJax on every page (only needed for LaTeX in plotly
# labels, which the labs do not use). Offline it is pointed at a local path that does not
# exist: the request fails at once on the same server, the plot renders without it, and the
# page makes no request off the machine.
_MATHJAX_URL_RE = re.compile(r"https?://[^\s\"'`()<>]*?/mathjax-full@[^\s\"'`]*?\.js")
MATHJAX_LOCAL = "./mathjax-not-bundled.js"

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

    The entry script's MathJax URL is pointed at a local path (see ``_MATHJAX_URL_RE``).
    """
    static = marimo_static_dir()
    target = site / ASSET_DIR_NAME
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(static, target, ignore=shutil.ignore_patterns("index.html", "*.md"))
    for js in (target / "assets").glob("*.js"):
        text = js.read_text(encoding="utf-8", errors="surrogateescape")
        if "mathjax-full@" in text:
            js.write_text(_MATHJAX_URL_RE.sub(MATHJAX_LOCAL, text), encoding="utf-8",
                          errors="surrogateescape")
    return target


def make_page_offline(page: str, asset_prefix: str = f"./{ASSET_DIR_NAME}") -> str:
    """Point every frontend URL of an exported page at the local copy; add the file:// note."""
    page = _FRONTEND_URL_RE.sub(asset_prefix, page)
    return page.replace("</head>", _FILE_PROTOCOL_NOTICE + "</head>", 1)
