"""Draw the speed page's figures from the recorded runs in benchmarks/results/ (SVG, committed).

    pip install matplotlib && python docs/plots/make_plots.py

Each figure reads the Markdown table a benchmark printed into its results JSON (the same table
the docs quote), so a figure shows exactly the recorded run, nothing typed by hand. Ranges are
min-max over the run's repetitions, as in the tables.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
ASSETS = ROOT / "docs" / "assets"
RANGE = re.compile(r"(-?[\d.]+)(?:–(-?[\d.]+))?")
LAB = re.compile(r"lab_0(\d)_")
plt.rcParams.update({"svg.hashsalt": "roofline-labs", "font.size": 9,
                     "svg.fonttype": "none"})


def _range(cell: str) -> tuple[float, float] | None:
    m = RANGE.search(cell.replace(",", ""))
    if not m:
        return None
    lo = float(m.group(1))
    return lo, float(m.group(2) or lo)


def _table(markdown: str, header_start: str) -> list[list[str]]:
    lines = markdown.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header_start))
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def _short(name: str, width: int = 40) -> str:
    return name if len(name) <= width else name[:width - 1].rstrip() + "…"


def _bar(ax, y, lo_hi, color, height=0.34, label=None):
    lo, hi = lo_hi
    ax.barh(y, max(hi - lo, (hi or 1) * 0.012), left=lo, height=height, color=color, label=label)


def browser_widgets(source="browser-xeon-full-2026-11-26.json", out="speed-browser-widgets.svg"):
    data = json.loads((RESULTS / source).read_text())
    rows = _table(data["markdown"], "| notebook | widget |")
    rows = [r for r in rows if _range(r[3].split("/")[1]) and not r[2].startswith("0.0")]
    fig, ax = plt.subplots(figsize=(8, 0.22 * len(rows) + 1.4))
    for i, r in enumerate(rows):
        y = len(rows) - i
        step = _range(r[3].split("/")[1])
        floor = _range(r[4].split("/")[1])
        _bar(ax, y + 0.18, step, "#3f51b5", label="lab's step, p95" if i == 0 else None)
        if floor:
            _bar(ax, y - 0.18, floor, "#9e9e9e",
                 label="same outputs replayed, no lab code (the floor), p95" if i == 0 else None)
    ax.axvline(100, color="#c62828", lw=1, ls="--", label="target: p95 ≤ 100 ms")
    labels = [f"Lab {LAB.search(r[0]).group(1)} · {_short(r[1])}" for r in rows]
    ax.set_yticks(range(len(rows), 0, -1), labels)
    ax.set_xscale("log")
    ax.set_xticks([40, 60, 100, 200, 400], ["40", "60", "100", "200", "400"])
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("redraw p95, key press to last figure change\n(ms, log scale; a bar spans the min–max over 2 runs)")
    fig.suptitle(f"Every widget that redraws a figure: {data['started'][:16].replace('T', ' ')} "
                 f"UTC, load {data['load_before']:.2f} → {data['load_after']:.2f}", x=0.01,
                 ha="left", fontsize=9)
    ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), frameon=False, fontsize=8)
    ax.set_ylim(0.3, len(rows) + 0.7)
    ax.grid(axis="x", which="both", color="#e0e0e0", lw=0.5)
    fig.tight_layout()
    fig.savefig(ASSETS / out, bbox_inches="tight")
    plt.close(fig)


def kernel_side(source="labs-vm-2026-11-23b.json", out="speed-kernel.svg"):
    data = json.loads((RESULTS / source).read_text())
    rows = [r for r in _table(data["markdown"], "| notebook | cold run s")
            if r[0].startswith("lab_") and "(baseline)" not in r[0]]
    floor = next(r for r in _table(data["markdown"], "| notebook | cold run s")
                 if r[0].startswith("floor:"))
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3.3), sharey=True)
    ys = range(len(rows), 0, -1)
    for y, r in zip(ys, rows):
        _bar(a1, y, _range(r[1]), "#3f51b5")
        _bar(a2, y, _range(r[3].split("/")[1]), "#3f51b5")
    fl = _range(floor[1])
    a1.axvspan(*fl, color="#9e9e9e", alpha=0.35, label="floor: import marimo, numpy, plotly")
    a1.axvline(1.5, color="#c62828", lw=1, ls="--", label="target < 1.5 s")
    a2.axvline(25, color="#c62828", lw=1, ls="--", label="target p95 < 25 ms")
    a1.set_yticks(list(ys), [f"Lab {LAB.search(r[0]).group(1)}" for r in rows])
    a1.set_xlabel("cold run, s (min–max over 2 runs)")
    a2.set_xlabel("update after a widget step, p95 ms (kernel side)")
    a1.set_xlim(0, 2.5)
    a2.set_xlim(0, 70)
    for a in (a1, a2):
        a.legend(loc="lower left", bbox_to_anchor=(0, 1.0), fontsize=7, frameon=False)
        a.grid(axis="x", color="#e0e0e0", lw=0.5)
    fig.suptitle(f"Kernel side, every lab: {data['started'][:16].replace('T', ' ')} UTC, load "
                 f"{data['load_before']:.2f} → {data['load_after']:.2f}", x=0.01, ha="left",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(ASSETS / out, bbox_inches="tight")
    plt.close(fig)


if __name__ == "__main__":
    ASSETS.mkdir(exist_ok=True)
    browser_widgets()
    kernel_side()
    print("wrote", *sorted(p.name for p in ASSETS.glob("speed-*.svg")))
