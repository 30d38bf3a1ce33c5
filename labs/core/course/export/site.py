"""The whole site and the ``labs-export`` command line.

:func:`export_site` exports every lab (in parallel, :mod:`export_lab`), makes the pages offline
when asked (:mod:`export_offline`), adds the WASM pages (:mod:`export_wasm`) and writes the
index (:mod:`export_index`); :func:`main` is ``labs-export``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from labs.core.course.export import wasm as _wasm
from labs.core.course.export.index import (
    DEFAULT_LABS_DIR,
    LabMeta,
    discover_labs,
    read_lab_meta,
    render_index,
)
from labs.core.course.export.inspection import FRONTEND_URL_RE, ExportError
from labs.core.course.export.lab import LabResult, export_lab
from labs.core.course.export.offline import (
    bundle_offline_assets,
    make_page_offline,
    prune_offline_assets,
)

__all__ = ["SiteResult", "build_parser", "export_site", "main"]


@dataclass
class SiteResult:
    site: Path
    labs: list[LabResult]
    problems: list[str]
    warnings: list[str]


def export_site(out: Path, labs: Sequence[Path], *, reveal: bool = False, offline: bool = False,
                wasm: bool = False, include_code: bool = False, jobs: int | None = None,
                timeout: float = 300.0, log=None) -> SiteResult:
    """Export ``labs`` into the site folder ``out`` (created; old lab pages are replaced).

    Raises ExportError before writing anything when ``wasm`` is asked for and uv is missing.
    """
    log = log or (lambda message: print(message, flush=True))
    if wasm and _wasm.find_uv() is None:
        raise ExportError(_wasm.UV_MISSING)
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    metas = [read_lab_meta(p) for p in labs]
    warnings = [f"{m.path.name}: {w}" for m in metas for w in m.warnings]
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(metas)))

    def one(meta: LabMeta) -> LabResult:
        page = out / f"{meta.slug}.html"
        seconds, report, problems = export_lab(meta.path, page, reveal=reveal,
                                               include_code=include_code, timeout=timeout)
        log(f"  {meta.path.name}: {seconds:.1f} s, {report.size_bytes / 1024:.0f} KB, "
            f"{report.figures} figures" + (f", {len(problems)} problem(s)" if problems else ""))
        return LabResult(meta, page, seconds, report, problems)

    log(f"Exporting {len(metas)} lab(s) to {out} "
        f"({'instructor copy, --reveal' if reveal else 'student copy'}"
        f"{', offline' if offline else ''}) ...")
    results: list[LabResult] = []
    problems: list[str] = []
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(one, m) for m in metas]
        for meta, fut in zip(metas, futures):
            try:
                results.append(fut.result())
            except ExportError as exc:
                problems.append(str(exc))
    for r in results:
        problems.extend(r.problems)
        if reveal and r.report and r.report.closed_gates:
            where = ", ".join(c.where() for c in r.report.closed_gates[:3])
            warnings.append(f"{r.meta.path.name}: the instructor copy still shows "
                            f"{len(r.report.closed_gates)} closed gate(s): {where}")

    if offline and results:
        bundle_offline_assets(out)
        for r in results:
            page = make_page_offline(r.page.read_text(encoding="utf-8"))
            r.page.write_text(page, encoding="utf-8")
            if r.report:
                r.report.frontend_urls = len(FRONTEND_URL_RE.findall(page))
                r.report.size_bytes = len(page.encode("utf-8"))
        prune_offline_assets(out, [r.page for r in results])

    wasm_dirs: dict[str, str] = {}
    if wasm:
        for m in metas:
            target = out / "wasm" / m.slug
            try:
                secs = _wasm.export_wasm(m.path, target, timeout=max(timeout, 600.0))
                wasm_dirs[m.slug] = f"wasm/{m.slug}"
                log(f"  {m.path.name}: WASM in {secs:.1f} s")
            except ExportError as exc:
                problems.append(str(exc))

    (out / "index.html").write_text(
        render_index(results, reveal=reveal, offline=offline, wasm_dirs=wasm_dirs),
        encoding="utf-8")
    # GitHub Pages (Jekyll) would leave out ``_marimo/``: folders starting with _ are skipped.
    (out / ".nojekyll").touch()
    return SiteResult(out, results, problems, warnings)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="labs-export",
        description="Export the Roofline Labs to a static site folder with an index page.")
    p.add_argument("-o", "--out", type=Path, default=None,
                   help="site folder (default: site/student, or site/instructor with --reveal)")
    p.add_argument("--reveal", action="store_true",
                   help="instructor copy: predictions filled with reference answers")
    p.add_argument("--offline", action="store_true",
                   help="bundle marimo's frontend next to the pages (no CDN; serve over http)")
    p.add_argument("--wasm", action="store_true",
                   help="also export browser-only interactive pages (needs uv)")
    p.add_argument("--labs-dir", type=Path, default=DEFAULT_LABS_DIR,
                   help="folder holding lab_*.py (default: the repo's labs/)")
    p.add_argument("--lab", action="append", default=[], metavar="NAME",
                   help="only labs whose file name contains NAME (repeatable)")
    p.add_argument("--with-code", action="store_true",
                   help="include the notebook code in the pages (about 150 KB more per lab)")
    p.add_argument("--jobs", type=int, default=None, help="labs exported at once (default: cores)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per lab (default 300)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    out = args.out or Path("site") / ("instructor" if args.reveal else "student")
    try:
        labs = discover_labs(args.labs_dir, args.lab)
    except ValueError as exc:
        print(f"labs-export: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    try:
        result = export_site(out, labs, reveal=args.reveal, offline=args.offline,
                             wasm=args.wasm, include_code=args.with_code, jobs=args.jobs,
                             timeout=args.timeout)
    except ExportError as exc:  # raised before anything is written (uv missing for --wasm)
        print(f"labs-export: {exc}. Nothing was exported.", file=sys.stderr)
        return 2
    for w in result.warnings:
        print(f"warning: {w}", file=sys.stderr)
    if result.problems:
        print(f"labs-export FAILED: {len(result.problems)} problem(s); do not publish "
              f"{out}:", file=sys.stderr)
        for p in result.problems:
            print(f"  - {p}", file=sys.stderr)
        return 1
    print(f"Wrote {out / 'index.html'} and {len(result.labs)} lab page(s) in "
          f"{time.perf_counter() - t0:.1f} s.")
    if args.offline:
        print(f"Serve it offline: cd {out} && python -m http.server 8000  "
              "(then open http://localhost:8000/)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
