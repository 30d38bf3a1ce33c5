"""Shards into one: ``labs-grade --merge -o OUT SHARD...`` joins the output folders of runs that
graded parts of one course apart (a section each, on one machine or several) into the folder
one run would have written.

Grade each section as its own class, with the same course file (and its section's roster),
then merge::

    labs-grade section-a/ -c course.toml --roster roster-a.csv -o grades-a
    labs-grade section-b/ -c course.toml --roster roster-b.csv -o grades-b
    labs-grade --merge -o grades grades-a grades-b

The shards must have graded the same labs (``gradebook.csv`` and ``canvas.csv`` headers
equal, the same Points Possible). Rows are joined in the grader's order (students by
:func:`~labs.core.course.grading.ids.norm_id`): ``gradebook.csv``, ``canvas.csv``,
``canvas-left-out.csv``, ``items.csv`` and ``events.csv`` (streamed: a shard of any size),
``files.csv`` shard after shard, and the feedback pages with a new ``index.html``. A student
in several shards keeps the row of the shard where they have work (a roster student who
handed in nothing to a section is Missing there, so every section may be graded with the whole
roster); one with work in two shards keeps the first and is named on the console (exit
status 1). What compares students with each other (an id close to a roster id
that handed in nothing, a file's copies) is decided within each shard. Part of
:mod:`labs.core.course.grading` (import it through that name).
"""

from __future__ import annotations

import csv
import heapq
import os
import shutil
import sys
from pathlib import Path
from typing import Iterator

from labs.core.course.grading.ids import norm_id

__all__ = ["MERGED", "MergeError", "merge", "merge_main"]

#: (file, the column its student's id is in: 0 the first; None: shard after shard)
MERGED = (("gradebook.csv", 0), ("items.csv", 0), ("events.csv", 0), ("canvas-left-out.csv", 0),
          ("files.csv", None))
_BOM = "\ufeff"


class MergeError(ValueError):
    """Shards that cannot be merged, naming why."""


def _say(text: str, stream=None) -> None:
    print(text, file=stream or sys.stdout)


def _rows(path: Path) -> Iterator[list[str]]:
    with open(path, newline="", encoding="utf-8-sig") as f:
        yield from csv.reader(f)


def _header(path: Path) -> list[str]:
    return next(_rows(path), [])


def _student_key(value: str) -> tuple[str, str]:
    text = value[1:] if value.startswith("'") else value  # a cell csv_safe neutralised
    return norm_id(text), text


def _merge_sorted(paths: list[Path], column: int, out: Path, skip: set | None = None,
                  first_rows: int = 1) -> None:
    """Rows of already sorted CSVs, merged by the student in ``column`` (streamed)."""
    def keyed(rows: Iterator[list[str]], shard: int):
        for r in rows:
            if r:
                yield _student_key(r[column]), shard, r

    readers = []
    header = None
    for shard, path in enumerate(paths):
        rows = _rows(path)
        head = [next(rows, []) for _ in range(first_rows)]
        header = header or head
        readers.append(keyed(rows, shard))
    with open(out, "w", newline="", encoding="utf-8-sig") as f:
        writer = csv.writer(f)
        writer.writerows(header or [])
        for key, shard, row in heapq.merge(*readers):
            if skip and (key[0], shard) in skip:
                continue
            writer.writerow(row)


def merge(shards: list[Path], out: Path) -> list[str]:
    """Merge the shard folders into ``out`` (a new, empty folder); problems that need a look,
    in words (a student in two shards). MergeError when the shards cannot be merged."""
    for shard in shards:
        if not (shard / "gradebook.csv").is_file():
            raise MergeError(f"{shard} is not a labs-grade output folder (no gradebook.csv)")
    heads = [_header(s / "gradebook.csv") for s in shards]
    for shard, head in zip(shards[1:], heads[1:]):
        if head != heads[0]:
            raise MergeError(f"{shard}/gradebook.csv has other columns than "
                             f"{shards[0]}/gradebook.csv: grade every shard with the same "
                             "course file (and rosters with the same columns)")
    canvas = [s / "canvas.csv" for s in shards if (s / "canvas.csv").is_file()]
    if canvas and len(canvas) != len(shards):
        raise MergeError("some shards have a canvas.csv and some not: grade every shard the "
                         "same way")
    if canvas:
        tops = [[r for _, r in zip(range(2), _rows(p))] for p in canvas]
        for path, top in zip(canvas[1:], tops[1:]):
            if top != tops[0]:
                raise MergeError(f"{path}: its header or Points Possible row differs from "
                                 f"{canvas[0]}'s: grade every shard with the same course file")
    problems = []
    owner, twice = _owners(shards, heads[0], problems)
    out.mkdir(parents=True, exist_ok=True)
    for name, column in MERGED:
        present = [s / name for s in shards if (s / name).is_file()]
        if not present:
            continue
        if column is None:
            with open(out / name, "w", newline="", encoding="utf-8-sig") as f:
                writer = csv.writer(f)
                for n, path in enumerate(present):
                    rows = _rows(path)
                    head = next(rows, [])
                    if n == 0:
                        writer.writerow(head)
                    writer.writerows(rows)
        else:
            _merge_sorted(present, column, out / name, twice)
    if canvas:
        _merge_canvas(shards, owner, out / "canvas.csv")
    _merge_feedback(shards, out, owner)
    readme = [f"labs-grade --merge of {len(shards)} shards: " + ", ".join(map(str, shards))]
    readme += problems
    for shard in shards:
        if (shard / "README.txt").is_file():
            readme += ["", f"--- {shard}/README.txt", (shard / "README.txt").read_text(
                encoding="utf-8", errors="replace").rstrip()]
    (out / "README.txt").write_text("\n".join(readme) + "\n", encoding="utf-8")
    return problems


def _owners(shards: list[Path], header: list[str], problems: list[str]
            ) -> tuple[dict[str, int], set[tuple[str, int]]]:
    """Which shard keeps each student's row: the one where they have work (a roster student
    with nothing handed in to a section is Missing there); of two with work, the first, and
    the other is named in ``problems``. Also the (student, shard) rows left out."""
    status = [n for n, h in enumerate(header) if h.endswith(" - Status")]
    seen: dict[str, list[tuple[int, bool, str]]] = {}
    for n, shard in enumerate(shards):
        for row in list(_rows(shard / "gradebook.csv"))[1:]:
            if row:
                work = any(row[i] not in ("Missing", "") for i in status if i < len(row))
                seen.setdefault(_student_key(row[0])[0], []).append((n, work, row[0]))
    owner: dict[str, int] = {}
    dropped: set[tuple[str, int]] = set()
    for key, rows in seen.items():
        with_work = [r for r in rows if r[1]]
        keep = (with_work or rows)[0][0]
        owner[key] = keep
        dropped |= {(key, n) for n, _, _ in rows if n != keep}
        if len(with_work) > 1:
            problems.append(f"student {rows[0][2]} has work graded in "
                            + " and in ".join(str(shards[n]) for n, _, _ in with_work)
                            + f": {shards[keep]}'s row is kept; grade them in one section")
    return owner, dropped


def _merge_canvas(shards: list[Path], owner: dict[str, int], out: Path) -> None:
    """canvas.csv's rows follow each shard's gradebook, less the students it left out (not
    on its roster): each student's row from the shard that keeps them, in gradebook order."""
    by_key: dict[str, list[str]] = {}
    top: list[list[str]] = []
    for n, shard in enumerate(shards):
        rows = list(_rows(shard / "canvas.csv"))
        top = top or rows[:2]
        left = {_student_key(r[0])[0] for r in list(_rows(shard / "canvas-left-out.csv"))[1:]
                if r} if (shard / "canvas-left-out.csv").is_file() else set()
        keys = [_student_key(r[0])[0] for r in list(_rows(shard / "gradebook.csv"))[1:] if r]
        for key, row in zip([k for k in keys if k not in left], rows[2:]):
            if owner.get(key) == n:
                by_key[key] = row
    order = sorted(owner, key=lambda k: k)
    with open(out, "w", newline="", encoding="utf-8-sig") as f:
        writer = csv.writer(f)
        writer.writerows(top)
        writer.writerows(by_key[k] for k in order if k in by_key)


def _merge_feedback(shards: list[Path], out: Path, owner: dict[str, int]) -> None:
    """Every shard's pages (a student's from the shard that keeps their row) and one index."""
    from labs.core.course.grading.checks import severity
    from labs.core.course.grading.feedback import page_name, write_index

    if not any((s / "feedback").is_dir() for s in shards):
        return
    (out / "feedback").mkdir(exist_ok=True)
    entries = []
    title = ""
    for n, shard in enumerate(shards):
        rows = list(csv.DictReader(open(shard / "gradebook.csv", newline="",
                                        encoding="utf-8-sig")))
        for row in rows:
            sid = next(iter(row.values()), "")
            sid = sid[1:] if sid.startswith("'") else sid
            if owner.get(norm_id(sid)) != n:
                continue
            page = page_name(sid)
            source = shard / "feedback" / page
            if source.is_file():
                shutil.copyfile(source, out / "feedback" / page)
            flags = [f.split(": ", 1)[-1] for f in row.get("Flags", "").split("; ") if f]
            found = {severity(f) for f in flags} | ({"info"} if row.get("Notes") else set())
            level = next((s for s in ("wrong", "check", "info") if s in found), "")
            statuses = ", ".join(sorted({v for k, v in row.items() if k.endswith(" - Status")}))
            name = row.get("Name") if "Name" in row else ""
            entries.append((level, sid, name or ("" if "Name" not in row else None),
                            float(row.get("Total Points") or 0),
                            float(row.get("Max Points") or 0), statuses,
                            page if source.is_file() else "", "" if source.is_file()
                            else "no page in the shard"))
        index = shard / "feedback" / "index.html"
        if not title and index.is_file():
            text = index.read_text(encoding="utf-8", errors="replace")
            if "<title>Feedback pages · " in text:
                title = text.split("<title>Feedback pages · ", 1)[1].split("</title>", 1)[0]
    import html

    write_index(out / "feedback", html.unescape(title), entries)


def merge_main(inputs: list[str], out: Path, *, force: bool = False) -> int:
    """``labs-grade --merge``: exit 0 merged, 1 merged with a student in two shards, 2 when
    the shards cannot be merged or ``out`` cannot take them (nothing written)."""
    from labs.core.course.grading.outdir import check_out, clean_stale, replace_with, staging

    if len(inputs) < 1:
        _say("labs-grade --merge: give the output folders of the shards to merge",
             sys.stderr)
        return 2
    shards = [Path(i) for i in inputs]
    target = out.resolve()
    if any(s.resolve() == target for s in shards):
        _say("labs-grade --merge: -o must be a new folder, not one of the shards", sys.stderr)
        return 2
    stale = clean_stale(target)
    why = check_out(out, force)
    if why:
        _say(f"labs-grade --merge: {why}", sys.stderr)
        return 2
    tmp = staging(target, "labs-grade")
    try:
        shutil.rmtree(tmp, ignore_errors=True)
        problems = merge(shards, tmp)
        stale += replace_with(tmp, target)
    except (MergeError, csv.Error, UnicodeDecodeError, OSError) as exc:
        _say(f"labs-grade --merge: {exc}", sys.stderr)
        return 2
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for line in stale + problems:
        _say(f"  {line}")
    rows = sum(1 for _ in _rows(out / "gradebook.csv")) - 1
    _say(f"labs-grade --merge: {len(shards)} shards, {rows} students into {out}"
         + (f" ({os.path.join(str(out), 'canvas.csv')} for Canvas)"
            if (out / "canvas.csv").exists() else "") + ".")
    return 1 if problems else 0
