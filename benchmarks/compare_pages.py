"""Do the seven labs still export the same pages? A refactor's check (behaviour unchanged).

    python benchmarks/compare_pages.py snapshot before/       # on the old tree
    python benchmarks/compare_pages.py snapshot after/        # on the new tree
    python benchmarks/compare_pages.py diff before/ after/    # exit 1 on any difference
    python benchmarks/compare_pages.py snapshot --lab lab_06 before/   # one lab's two pages

``snapshot`` exports every lab as ``labs-export`` does, the student copy and the instructor
copy (``--reveal``), each with a throwaway ledger, and keeps what a reader sees, in page order:
each output's visible text and each figure's data and layout. Ids are left out (cell ids, code
hashes, plotly's uids, element ids), so moving code between cells, or into a setup cell,
changes nothing here unless a page changes. ``diff`` names the lab, the copy and the first
differing text or figure. One figure reads the machine it runs on (Lab 7's instructor copy
draws this machine's free memory as the capacity line): two snapshots taken minutes apart may
differ there alone, by a few MB.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from notebook_support import visible_text  # noqa: E402  (the tests' reader of marimo output)

#: Keys whose values are ids or hashes, never what a reader sees.
ID_KEYS = {"uid", "id", "code_hash", "legendgroup_uid"}
_FIGURE = re.compile(r"data-figure='([^']*)'")
_IDS = re.compile(r"\b(?:id|for|aria-labelledby|aria-controls|data-id)=\"[^\"]*\"")


def _without_ids(value):
    if isinstance(value, dict):
        return {k: _without_ids(v) for k, v in sorted(value.items()) if k not in ID_KEYS}
    if isinstance(value, list):
        return [_without_ids(v) for v in value]
    return value


def session_outputs(page: str) -> list[str]:
    """The HTML (or plain text) of every cell output in an exported page, in page order."""
    start = page.index('"session":') + len('"session":')
    session, _ = json.JSONDecoder().raw_decode(page[start:].lstrip())
    out = []
    for cell in session["cells"]:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            text = data.get("text/html") or data.get("text/markdown") or data.get("text/plain")
            if text:
                out.append(text)
    return out


def figures_in(markup: str) -> list:
    """Every figure's data and layout in an output, nested components included, ids left out."""
    found = []
    for m in _FIGURE.finditer(markup):
        figure = json.loads(html.unescape(m.group(1)))
        found.append(_without_ids({"data": figure.get("data"), "layout": figure.get("layout")}))
    for m in re.finditer(r"data-[\w-]+='([^']*)'", markup):  # nested: escaped once more
        inner = html.unescape(m.group(1))
        if "data-figure" in inner and not m.group(0).startswith("data-figure"):
            try:
                inner = json.loads(inner)
            except ValueError:
                pass
            found += figures_in(inner if isinstance(inner, str) else json.dumps(inner))
    return found


def page_view(page: str) -> dict:
    """What a reader sees on one exported page: texts and figures, ids left out."""
    outputs = session_outputs(page)
    return {"texts": [re.sub(r"\s+", " ", visible_text(_IDS.sub("", o))).strip()
                      for o in outputs],
            "figures": [f for o in outputs for f in figures_in(o)]}


def snapshot(folder: Path, only: str = "") -> None:
    """Export every lab whose file name contains ``only`` (all of them by default)."""
    from labs.core import export

    labs = [p for p in sorted((ROOT / "labs").glob("lab_*.py")) if only in p.name]
    if not labs:
        raise SystemExit(f"no lab's file name contains {only!r}")
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for lab in labs:
            for copy, reveal in (("student", False), ("instructor", True)):
                page = Path(tmp) / f"{lab.stem}-{copy}.html"
                problems = export.export_lab(lab, page, reveal=reveal)[2]
                if problems:
                    raise SystemExit(f"{lab.name} ({copy}): {problems}")
                view = page_view(page.read_text(encoding="utf-8"))
                (folder / f"{lab.stem}-{copy}.json").write_text(
                    json.dumps(view, indent=1, sort_keys=True), encoding="utf-8")
                print(f"{lab.stem} {copy}: {len(view['texts'])} outputs, "
                      f"{len(view['figures'])} figures")


def first_difference(a: dict, b: dict) -> str | None:
    for key in ("texts", "figures"):
        left, right = a[key], b[key]
        for i, (x, y) in enumerate(zip(left, right)):
            if x != y:
                x, y = (json.dumps(v, sort_keys=True) if not isinstance(v, str) else v
                        for v in (x, y))
                at = next((j for j, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
                return (f"{key}[{i}] differs at character {at}:\n  before: ...{x[max(0, at - 80):at + 120]}"
                        f"\n  after:  ...{y[max(0, at - 80):at + 120]}")
        if len(left) != len(right):
            return f"{key}: {len(left)} before, {len(right)} after"
    return None


def diff(before: Path, after: Path) -> int:
    names = sorted({p.name for p in before.glob("*.json")} | {p.name for p in after.glob("*.json")})
    changed = 0
    for name in names:
        a, b = before / name, after / name
        if not (a.exists() and b.exists()):
            print(f"{name}: only {'before' if a.exists() else 'after'}")
            changed += 1
            continue
        problem = first_difference(json.loads(a.read_text(encoding="utf-8")),
                                   json.loads(b.read_text(encoding="utf-8")))
        if problem:
            print(f"{name}: {problem}")
            changed += 1
    print(f"{len(names) - changed} of {len(names)} pages the same")
    return 1 if changed else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("folder", type=Path)
    s.add_argument("--lab", default="", help="only the labs whose file name contains this "
                   "(lab_06): a refactor of one lab checks its own two pages")
    d = sub.add_parser("diff")
    d.add_argument("before", type=Path)
    d.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    if args.command == "snapshot":
        snapshot(args.folder, args.lab)
        return 0
    return diff(args.before, args.after)


if __name__ == "__main__":
    sys.exit(main())
