"""marimo-facing helpers for live measurement, shared by the labs (the physics and timing
live in :mod:`labs.core.measure`, which never imports marimo).

Usage in a lab (each widget in its own cell, see LABS_SPEC §7)::

    info = measure.detect()                       # cheap, never raises
    live.device_card(info)                        # what will be measured, or why nothing can
    measure_button = live.run_button("Measure square GEMMs")
    sweep_rows = live.gated_run(                  # stops the cell until the button is pressed
        measure_button, lambda progress: measure.sweep_square_gemm(
            SIZES, "fp32", device=info, budget_s=20, reference=roof, progress=progress),
        total=len(SIZES), title="Timing GEMMs", info=info)
    live.results_table(sweep_rows, filename="lab01_gemm_sweep.csv")
    lab.record("result", "lab01.measured_sweep", measure.ledger_payload(info, sweep_rows))

Nothing here measures on notebook open or during ``marimo export``: the run button's value is
False until a person presses it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Callable, Mapping, Sequence, TypeVar

import marimo as mo

from labs.core import measure
from labs.core.ui import style

__all__ = [
    "IDLE_MESSAGE", "KEEP_OPEN", "T", "csv_download", "device_card", "gated_run", "read_at_press",
    "results_table", "run_button", "run_if_pressed"
]

T = TypeVar("T")

#: Shown in place of results until the run button is pressed.
IDLE_MESSAGE = ("Nothing has been measured yet: press the button above to time real kernels "
                "on this machine (it takes up to the time budget shown).")
#: Said beside every running measurement: it lives in this page's session, and the ledger
#: records it when it ends, so a reload or a closed tab throws it away.
KEEP_OPEN = "keep this page open until it ends: a reload stops it, and nothing is recorded"


def device_card(info: measure.DeviceInfo | None = None) -> mo.Html:
    """What will be measured: device, memory, SMs/threads, registry entry; or the message
    saying why nothing can be (no torch, no GPU asked for, browser run)."""
    info = info if info is not None else measure.detect()
    if not info.available:
        return mo.callout(mo.md(f"**Live measurement is off.** {info.message}"), kind="warn")
    if info.kind == "cuda":
        cards = [("device", info.name, info.backend or "CUDA"),
                 ("memory", f"{info.memory_gb:.0f} GB", "GPU memory"),
                 ("SMs", str(info.sm_count), f"compute capability {info.compute_capability}")]
        if info.sm_clock_mhz:
            cards.append(("max SM clock", f"{info.sm_clock_mhz:.0f} MHz", "driver-reported"))
    else:
        cards = [("device", info.name, info.backend or "CPU"),
                 ("threads", str(info.threads), f"torch threads on {info.cores} logical CPUs"),
                 ("memory", f"{info.memory_gb:.0f} GB" if info.memory_gb else "unknown",
                  "RAM")]
    spec = info.spec()
    cards.append(("registry", spec.key if spec else "none",
                  "spec peaks apply" if spec else "compare with the measured roofline"))
    return mo.vstack([style.metric_cards(cards), mo.md(info.message)])


def run_button(label: str = "Measure on this machine") -> mo.ui.run_button:
    """The only way a measurement starts. Put it in its own cell."""
    return mo.ui.run_button(label=label, kind="success")


def gated_run(button, job: Callable[[measure.Progress], T], *, total: int, title: str,
              info: measure.DeviceInfo | None = None, idle_message: str = IDLE_MESSAGE) -> T:
    """Run ``job(progress)`` only once ``button`` has been pressed, with a progress bar.

    Stops the cell (``mo.stop``) with a notice while the button is unpressed, with
    ``info.message`` when nothing can be measured, and with an error callout when the
    measurement refuses or fails (``measure.MeasureError``, bad arguments): never a traceback.
    ``job`` receives a ``progress(done, total, label)`` callback for the bar.
    """
    if info is not None and not info.available:
        mo.stop(True, mo.callout(mo.md(f"**Live measurement is off.** {info.message}"),
                                 kind="warn"))
    mo.stop(not getattr(button, "value", False), mo.callout(mo.md(idle_message), kind="neutral"))
    try:
        with mo.status.progress_bar(total=max(int(total), 1), title=f"{title} ({KEEP_OPEN})",
                                    remove_on_exit=True) as bar:
            return job(_bar_progress(bar))
    except (measure.MeasureError, ValueError, KeyError) as e:
        mo.stop(True, style.error_callout(str(e).strip("'\"")))
        raise  # pragma: no cover  (mo.stop raises)


def run_if_pressed(button, job: Callable[[measure.Progress], T], *, total: int, title: str,
                   idle_message: str = IDLE_MESSAGE) -> tuple[T | None, mo.Html | None]:
    """``(job(progress), None)`` once ``button`` has been pressed, else ``(None, message)``.

    The twin of :func:`gated_run` for a cell whose output must stay on screen when nothing is
    measured (a figure of a recorded run, say): it never stops the cell. ``message`` is the
    idle notice, the reason nothing can be measured here (no torch, browser build; torch is
    only imported after the press), or the error callout of a refused or failed run."""
    if not getattr(button, "value", False):
        return None, mo.callout(mo.md(idle_message), kind="neutral")
    info = measure.detect()
    if not info.available:
        return None, mo.callout(mo.md(f"**Live measurement is off.** {info.message}"),
                                kind="warn")
    try:
        with mo.status.progress_bar(total=max(int(total), 1), title=f"{title} ({KEEP_OPEN})",
                                    remove_on_exit=True) as bar:
            return job(_bar_progress(bar)), None
    except (measure.MeasureError, ValueError, KeyError) as e:
        return None, style.error_callout(str(e).strip("'\""))


def read_at_press(**widgets) -> Callable[[], SimpleNamespace]:
    """A function giving the widgets' values as they are now: ``settings().budget``.

    A measurement cell that names its settings widgets re-runs on every step of them, which
    (the button reset by then) throws a finished measurement away, and costs a browser step
    every cell below. Made in the settings' own cell and called inside the job, it
    reads them at the press instead, and the measurement cell names no widget but its button."""
    def settings() -> SimpleNamespace:
        return SimpleNamespace(**{name: w.value for name, w in widgets.items()})
    return settings


def _bar_progress(bar) -> measure.Progress:
    """Adapt measure's progress(done, total, label) to a marimo progress bar's update()."""
    seen = {"done": 0}

    def progress(done: int, total: int, label: str) -> None:
        step = max(int(done) - seen["done"], 0)
        seen["done"] = max(seen["done"], int(done))
        bar.update(increment=step, subtitle=str(label)[:120])
    return progress


def _display(v):
    if isinstance(v, float):
        return float(f"{v:.4g}")
    return v


def results_table(rows: Sequence[Mapping], *, filename: str = "measurements.csv",
                  columns: Sequence[str] | None = None, label: str = "") -> mo.Html:
    """The rows as a table (4 significant digits; ``columns``: the columns shown, in that
    order) above a CSV download of the full-precision rows."""
    if not rows:
        return mo.callout(mo.md("No rows were measured."), kind="neutral")
    if columns:
        shown = [{k: _display(r[k]) for k in columns if k in r} for r in rows]
    else:
        shown = [{k: _display(v) for k, v in r.items()} for r in rows]
    return mo.vstack([mo.ui.table(shown, selection=None, label=label, show_download=False),
                      csv_download(rows, filename)])


def csv_download(rows: Sequence[Mapping], filename: str = "measurements.csv"):
    """A download button for the rows as CSV (measure.to_csv)."""
    if not filename.endswith(".csv"):
        raise ValueError(f"filename must end in .csv, got {filename!r}")
    return mo.download(data=measure.to_csv(rows).encode("utf-8"), filename=filename,
                       mimetype="text/csv", label=f"Download {filename}")
