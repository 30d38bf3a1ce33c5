"""The labs a site holds and its index page (``labs-export``).

:func:`discover_labs` finds ``labs/lab_*.py`` by glob (a new lab needs no list to be edited);
:func:`read_lab_meta` reads each lab's title, subtitle, learning goals and estimated minutes from
its source without running it; :func:`render_index` writes the site's ``index.html`` from them
(self-contained: no scripts, no external resources).
"""

from __future__ import annotations

import ast
import html
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import labs
from labs.core.course.catalogue import read_header

__all__ = [
    "DEFAULT_LABS_DIR", "LAB_GLOB", "LAB_STYLE_SHEET", "LabMeta", "REPO_ROOT",
    "copy_style_sheet", "discover_labs", "read_lab_meta", "render_index"
]

REPO_ROOT = Path(labs.__file__).resolve().parent.parent  # the folder holding labs/
DEFAULT_LABS_DIR = REPO_ROOT / "labs"
LAB_GLOB = "lab_*.py"
#: The style sheet next to the labs that each lab names (``marimo.App(css_file=...)``): a copy
#: of a lab that goes elsewhere (a student workspace, a WebAssembly stage) takes it along.
LAB_STYLE_SHEET = "labs.css"


@dataclass
class LabMeta:
    """What the index page says about a lab, read from the lab file without running it."""

    path: Path
    title: str
    subtitle: str = ""
    goals: list[str] = field(default_factory=list)
    minutes: float | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def slug(self) -> str:
        return self.path.stem


def discover_labs(labs_dir: str | os.PathLike = DEFAULT_LABS_DIR,
                  only: Sequence[str] = ()) -> list[Path]:
    """``labs_dir/lab_*.py`` sorted by name; ``only`` keeps those whose stem contains one of
    the given strings (``lab_01`` or ``memory_wall``). Raises ValueError when nothing matches."""
    labs_dir = Path(labs_dir)
    if not labs_dir.is_dir():
        raise ValueError(f"labs_dir {str(labs_dir)!r} is not a folder")
    found = sorted(labs_dir.glob(LAB_GLOB))
    if only:
        found = [p for p in found if any(key in p.stem for key in only)]
    if not found:
        what = f" matching {', '.join(only)}" if only else ""
        raise ValueError(f"no {LAB_GLOB} notebooks{what} in {labs_dir}")
    return found


def copy_style_sheet(labs_dir: Path, folder: Path) -> bool:
    """Copy the labs' style sheet (:data:`LAB_STYLE_SHEET`) from ``labs_dir`` into ``folder``,
    where copies of the labs go; False when ``labs_dir`` has none."""
    sheet = Path(labs_dir) / LAB_STYLE_SHEET
    if not sheet.is_file():
        return False
    shutil.copyfile(sheet, Path(folder) / LAB_STYLE_SHEET)
    return True


def read_lab_meta(path: str | os.PathLike) -> LabMeta:
    """Title, subtitle, goals and minutes of a lab, from its source.

    The lab contract (LABS_SPEC §3) puts them in the header call
    ``style.lab_header(title, subtitle, goals=[...], minutes=N, reading=[...])``, read by the
    catalogue's reader (:func:`labs.core.course.catalogue.read_header`: literals, the lab's
    constants, f-strings of them). A ``LAB_META = {"title": ..., "goals": [...], "minutes": N}``
    constant, if present, takes precedence. Missing pieces become warnings (the export goes on;
    the index shows what it has).
    """
    path = Path(path)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = read_header(tree)

    warnings = []
    title = found.get("title")
    if not isinstance(title, str) or not title.strip():
        title = path.stem.replace("_", " ")
        warnings.append("no literal title in style.lab_header(...) or LAB_META")
    subtitle = found.get("subtitle") if isinstance(found.get("subtitle"), str) else ""
    goals = found.get("goals")
    if not (isinstance(goals, (list, tuple)) and all(isinstance(g, str) for g in goals)):
        goals = []
        warnings.append("no literal learning goals in style.lab_header(goals=[...])")
    minutes = found.get("minutes")
    if not (isinstance(minutes, (int, float)) and not isinstance(minutes, bool) and minutes > 0):
        minutes = None
        warnings.append("no literal estimated minutes in style.lab_header(minutes=N)")
    sheet = found.get("css_file")
    if sheet and not (path.parent / sheet).is_file():
        warnings.append(f"its style sheet {sheet} (css_file) is not beside it: the page is "
                        "drawn without it (form messages hard to read in the dark theme)")
    return LabMeta(path=path, title=title.strip(), subtitle=subtitle.strip(), goals=list(goals),
                   minutes=minutes, warnings=warnings)


def _fmt_minutes(minutes: float | None) -> str:
    return f"about {round(minutes)} min" if minutes else "time not stated"


def render_index(results: Sequence[Any], *, reveal: bool, offline: bool,
                 wasm_dirs: dict[str, str] | None = None) -> str:
    """A self-contained index page (no scripts, no external resources).

    ``results`` are the exported labs (:class:`labs.core.course.export.lab.LabResult`: their
    ``meta`` and ``page``), in the order the index lists them.
    """
    e = html.escape
    mode = ("Instructor copy: every prediction is filled with the reference answer, so all "
            "instruments and explanations are shown. Do not give this copy to students."
            if reveal else
            "Student copy: each lab shows its prediction gates closed, as a student first sees "
            "it. This static page does not run Python: to make predictions and use the "
            "instruments, open the lab with marimo (see the course README).")
    total = sum(r.meta.minutes or 0 for r in results)
    cards = []
    for r in results:
        m = r.meta
        goals = "".join(f"<li>{e(g)}</li>" for g in m.goals)
        wasm = ""
        if wasm_dirs and m.slug in wasm_dirs:
            wasm = (f' · <a href="{e(wasm_dirs[m.slug])}/index.html">interactive '
                    f"(runs in the browser)</a>")
        cards.append(
            f'<article class="lab"><h2><a href="{e(r.page.name)}">{e(m.title)}</a></h2>'
            f'<p class="meta">{e(_fmt_minutes(m.minutes))} · <code>{e(m.path.name)}</code>'
            f"{wasm}</p>"
            + (f'<p class="sub">{e(m.subtitle)}</p>' if m.subtitle else "")
            + (f"<h3>Learning goals</h3><ol>{goals}</ol>" if goals else "")
            + "</article>")
    note = ("" if not offline else
            '<p class="note">This copy works without internet when served over http '
            "(<code>python -m http.server</code> in this folder). Opened from disk "
            "(file://) the lab pages cannot start.</p>")
    title = "Roofline Labs · " + ("instructor copy" if reveal else "student copy")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{e(title)}</title>
<style>
:root {{ color-scheme: light dark; --muted: #6b7280; --border: rgba(128,128,128,.35); }}
body {{ font: 16px/1.5 system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 52rem;
       margin: 2rem auto; padding: 0 1rem; }}
h1 {{ font-size: 1.9rem; margin: 0 0 .3rem; }}
.mode {{ border-left: 4px solid {"#d55e00" if reveal else "#0072b2"}; padding: .4rem .8rem; }}
.lab {{ border: 1px solid var(--border); border-radius: 8px; padding: .6rem 1rem; margin: 1rem 0; }}
.lab h2 {{ font-size: 1.3rem; margin: .2rem 0; }}
.lab h3 {{ font-size: 1rem; margin: .6rem 0 .2rem; }}
.meta, .note {{ color: var(--muted); font-size: .9rem; margin: .1rem 0; }}
.sub {{ margin: .3rem 0; }}
ol {{ margin: .2rem 0; padding-left: 1.4rem; }}
</style></head>
<body><header><h1>{e(title)}</h1>
<p class="mode">{e(mode)}</p>
<p class="meta">{len(results)} labs · about {round(total)} minutes in all</p>{note}</header>
<main>{"".join(cards)}</main></body></html>
"""
