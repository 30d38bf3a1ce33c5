"""Checking an exported lab page before it is published (``labs-export``'s page inspection).

:func:`inspect_page` reads the ``__MARIMO_MOUNT_CONFIG__`` a ``marimo export html`` page embeds
and reports, per cell, errors (a cell that raised), marimo's "output is too large" placeholder,
closed prediction gates and plotly figures, plus the references to marimo's frontend on a CDN
(0 once a page was made offline). Pages without code are named by :func:`lab_cell_code`.
Reads text only: runs nothing, writes nothing.
"""

from __future__ import annotations

import html
import json
import os
import re
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BENIGN_ERROR_KINDS", "CellReport", "ExportError", "FRONTEND_URL_RE", "GATE_TEXT",
    "PageReport", "TOO_LARGE_MARKER", "inspect_page", "lab_cell_code"
]

#: What marimo writes in place of an output over ``output_max_bytes`` (export still exits 0).
TOO_LARGE_MARKER = "output is too large"
#: The fixed words of ``labs.core.ui.style.gate_notice``: what a closed gate shows where an
#: instrument would be (tests/test_export.py checks that style still says it).
GATE_TEXT = "Instrument hidden."
#: marimo error kinds that are not failures: a cell below a ``mo.stop`` gate.
BENIGN_ERROR_KINDS = frozenset({"ancestor-stopped"})
# The frontend prefix marimo writes ~190 times into each page, matched by its shape (package
# name, version, dist) rather than by host, so a change of CDN in marimo still matches.
FRONTEND_URL_RE = re.compile(r"https?://[^\s\"'`()<>]*?/@marimo-team/frontend@[^/\s\"'`]+/dist")


class ExportError(RuntimeError):
    """A lab could not be exported, or its page is not fit to publish."""


@dataclass
class CellReport:
    """One cell of an exported page, as marimo recorded it."""

    index: int  # 1-based position in the notebook
    cell_id: str
    name: str
    first_line: str
    error_kinds: list[str]
    error_text: str
    html_bytes: int
    too_large: bool
    gate_closed: bool
    figures: int

    def where(self) -> str:
        named = f" {self.name!r}" if self.name and self.name != "_" else ""
        return f"cell {self.index}{named} (`{self.first_line}`)"


@dataclass
class PageReport:
    """What :func:`inspect_page` found in an exported page."""

    cells: list[CellReport]
    size_bytes: int
    frontend_urls: int  # references to marimo's frontend on a CDN (0 once made offline)

    @property
    def errors(self) -> list[CellReport]:
        return [c for c in self.cells if c.error_kinds]

    @property
    def too_large(self) -> list[CellReport]:
        return [c for c in self.cells if c.too_large]

    @property
    def closed_gates(self) -> list[CellReport]:
        return [c for c in self.cells if c.gate_closed]

    @property
    def figures(self) -> int:
        return sum(c.figures for c in self.cells)

    def problems(self, lab: str) -> list[str]:
        """Publishing blockers, one sentence each, naming the lab and the cell."""
        out = []
        for c in self.errors:
            out.append(f"{lab}: {c.where()} raised an error "
                       f"({', '.join(c.error_kinds)}): {c.error_text}")
        for c in self.too_large:
            out.append(f"{lab}: {c.where()} output was replaced by marimo's "
                       f"'{TOO_LARGE_MARKER}' placeholder (shrink that output)")
        return out


def _mount_json(page: str, key: str) -> Any:
    """A top-level value of the ``__MARIMO_MOUNT_CONFIG__`` object embedded in the page."""
    start = page.find("__MARIMO_MOUNT_CONFIG__")
    if start < 0:
        raise ExportError("the page has no marimo mount config (not a marimo HTML export?)")
    match = re.compile(r'\n\s*"' + re.escape(key) + r'":\s*').search(page, start)
    if not match:
        raise ExportError(f"the page's marimo mount config has no {key!r}")
    value, _ = json.JSONDecoder().raw_decode(page, match.end())
    return value


_TAG_RE = re.compile(r"<[^>]+>")


def _plain(text: str) -> str:
    return html.unescape(_TAG_RE.sub("", text))


def _error_text(cell: dict, outputs: list) -> str:
    """The exception line of a failed cell: last line of its traceback, else marimo's message."""
    for stream in cell.get("console") or []:
        if stream.get("mimetype") == "application/vnd.marimo+traceback":
            lines = [ln for ln in _plain(stream.get("text", "")).splitlines() if ln.strip()]
            if lines:
                return lines[-1].strip()[:300]
    for out in outputs:
        if out.get("type") == "error":
            return str(out.get("evalue") or out.get("msg") or out.get("ename"))[:300]
    return "unknown error"


def lab_cell_code(path: str | os.PathLike) -> dict[str, str]:
    """Cell id -> code of a notebook, as marimo numbers its cells (the ids an export uses).

    Pages exported without code carry no code to name a failing cell by; this reads it from
    the notebook file (parsed, not run). Empty if marimo cannot load the file.
    """
    try:
        from marimo._ast.load import load_app

        app = load_app(str(path))
        return {str(c.cell_id): c.code for c in app._cell_manager.cell_data()} if app else {}
    except Exception:  # naming cells is a courtesy: never let it hide the real problem
        return {}


def inspect_page(page: str, cell_code: dict[str, str] | None = None) -> PageReport:
    """Per-cell errors, placeholders, closed gates and figure counts of an exported page.

    ``cell_code`` (from :func:`lab_cell_code`) names cells when the page has no code in it.
    """
    notebook = _mount_json(page, "notebook")
    session = _mount_json(page, "session") or {}
    code_by_id = {c.get("id"): c for c in (notebook or {}).get("cells", [])}
    order = [c.get("id") for c in (notebook or {}).get("cells", [])]
    cells = []
    for scell in session.get("cells", []):
        cid = scell.get("id")
        ncell = code_by_id.get(cid, {})
        code = ncell.get("code") or (cell_code or {}).get(str(cid), "")
        code_lines = [ln.strip() for ln in str(code).splitlines() if ln.strip()]
        first = code_lines[0] if code_lines else ""
        outputs = scell.get("outputs") or []
        kinds = [str(o.get("ename", "error")) for o in outputs if o.get("type") == "error"]
        kinds = [k for k in kinds if k not in BENIGN_ERROR_KINDS]
        blob = json.dumps(outputs, ensure_ascii=False)
        cells.append(CellReport(
            index=order.index(cid) + 1 if cid in order else len(cells) + 1,
            cell_id=str(cid), name=str(ncell.get("name", "_")),
            first_line=first if len(first) <= 70 else first[:67] + "...",
            error_kinds=kinds, error_text=_error_text(scell, outputs) if kinds else "",
            html_bytes=len(blob.encode("utf-8")),
            too_large=TOO_LARGE_MARKER in blob.lower(),
            gate_closed=GATE_TEXT in blob,
            figures=blob.count("<marimo-plotly"),
        ))
    # The placeholder can only come from an output, but check the whole page too.
    if TOO_LARGE_MARKER in page.lower() and not any(c.too_large for c in cells):
        cells.append(CellReport(len(cells) + 1, "?", "_", "(outside any cell)", [], "", 0,
                                True, False, 0))
    return PageReport(cells=cells, size_bytes=len(page.encode("utf-8")),
                      frontend_urls=len(FRONTEND_URL_RE.findall(page)))

