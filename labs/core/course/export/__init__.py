"""``labs-export``: publish the labs as a static site an instructor can hand out.

Each lab (``labs/lab_*.py``, found by glob) is run once with ``marimo export html`` and written
as ``<lab>.html`` next to an ``index.html`` that lists every lab's title, learning goals and
estimated minutes (read from the lab's ``style.lab_header(...)`` call, see :func:`read_lab_meta`).

Modes (see the README, "For instructors"):

* student copy (default, ``site/student``): gates closed, as a student first sees the lab;
* ``--reveal`` instructor copy (``site/instructor``): the labs run with ``-- --reveal`` so every
  prediction is filled with its reference answer (``labs.core.course.quiz.reveal``) and every instrument,
  figure and explanation is shown;
* ``--offline``: marimo's frontend (``marimo/_static`` of the installed package) is copied to
  ``<site>/_marimo/`` (only the files the pages need, with a local stand-in for the MathJax
  script the plotly plugin asks for) and the pages point there instead of the public CDN, so
  the site renders with no internet, and no request fails, when served over http
  (``python -m http.server`` in the site folder);
* ``--wasm``: also run ``marimo export html-wasm`` per lab into ``<site>/wasm/<lab>/``, keeping
  only the files each page needs. Needs ``uv``: without it labs-export says so and exits with
  status 2 before exporting anything.

Pages leave the notebook code out (``--with-code`` keeps it: about 150 KB more per lab; the
students have the notebooks anyway). The export fails (exit status 1, a message naming the lab
and the cell) when a page contains marimo's "output is too large" placeholder or a cell that
raised. Exporting never touches the instructor's own ledger: the labs run with
``ROOFLINE_LEDGER_DIR`` pointing to a temporary folder and ``ROOFLINE_STUDENT_ID=export``.

This module is the exporter's public face (``from labs.core import export``); the work is done in
``export.index`` (finding the labs, their metadata, the index page), ``export.lab`` (one lab
through ``marimo export html``), ``export.inspection`` (checking a page), ``export.offline`` (the
bundled frontend), ``export.wasm`` (the html-wasm staging) and ``export.site`` (the whole site
and the command line).
"""

from __future__ import annotations

import sys

from labs.core.course.export.index import (  # noqa: F401  (the public API, re-exported)
    DEFAULT_LABS_DIR,
    LAB_GLOB,
    REPO_ROOT,
    LabMeta,
    discover_labs,
    read_lab_meta,
    render_index,
)
from labs.core.course.export.inspection import (  # noqa: F401
    FRONTEND_URL_RE,
    BENIGN_ERROR_KINDS,
    GATE_TEXT,
    TOO_LARGE_MARKER,
    CellReport,
    ExportError,
    PageReport,
    inspect_page,
    lab_cell_code,
)
from labs.core.course.export.lab import LabResult, export_env, export_lab, marimo_cmd  # noqa: F401
from labs.core.course.export.offline import (  # noqa: F401
    MATHJAX_URL_RE,
    ASSET_DIR_NAME,
    MATHJAX_FILE,
    MATHJAX_LOCAL,
    bundle_offline_assets,
    make_page_offline,
    marimo_static_dir,
    needed_files,
    prune_offline_assets,
    prune_to,
)
from labs.core.course.export.site import SiteResult, build_parser, export_site, main  # noqa: F401
from labs.core.course.export.wasm import (  # noqa: F401
    UV_MISSING,
    bundled_wasm_files,
    export_wasm,
    find_uv,
    resolve_short_imports,
)

__all__ = [
    "ASSET_DIR_NAME", "BENIGN_ERROR_KINDS", "CellReport", "DEFAULT_LABS_DIR", "ExportError",
    "FRONTEND_URL_RE", "GATE_TEXT", "LAB_GLOB", "LabMeta", "LabResult", "MATHJAX_FILE",
    "MATHJAX_LOCAL", "MATHJAX_URL_RE", "PageReport", "REPO_ROOT", "SiteResult", "TOO_LARGE_MARKER",
    "UV_MISSING", "build_parser", "bundle_offline_assets", "bundled_wasm_files", "discover_labs",
    "export_env", "export_lab", "export_site", "export_wasm", "find_uv", "inspect_page",
    "lab_cell_code", "main", "make_page_offline", "marimo_cmd", "marimo_static_dir",
    "needed_files", "prune_offline_assets", "prune_to", "read_lab_meta", "render_index",
    "resolve_short_imports"
]

if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
