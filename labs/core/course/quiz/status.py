"""The ledger status line a lab shows under its title, with its controls.

Where the ledger writes, for whom, what went wrong (in plain sentences), and the controls: the
student id form, downloads, an upload in memory mode, and the folder form (which refuses a
folder that would unlock a prediction, before anything changes). Part of
:mod:`labs.core.course.quiz` (:meth:`LabSession.status` renders it).
"""

from __future__ import annotations

import os

import marimo as mo

from labs.core.course import ledger as _ledger
from labs.core.ui import style

__all__ = ["stack_elements", "status_view"]


def status_view(lab):
    """The ledger status line: where it writes, the student id, warnings, and controls
    (student id entry, download, upload in memory mode, change folder)."""
    lab.forget_widgets()
    if os.environ.get("ROOFLINE_STATIC_EXPORT") == "1":
        # A static page runs no Python: say so instead of showing the exporter's ledger.
        return mo.md("*Static preview: predictions are not recorded on this page. Open the "
                     "lab with `roofline-labs` to lock predictions into your ledger.*")
    parts = []
    ledger = lab.ledger
    if lab.student_id is None:
        parts.append(_student_id_form(lab))
    path = str(ledger.target_path) if ledger and ledger.target_path else None
    events = len(ledger.events()) if ledger else lab.pending_count
    warning = " ".join(lab.warnings) or None
    if lab.student_id is None and not warning:
        warning = ("Enter your student id to start recording; what you do before that is "
                   "kept and saved once you do.")
    parts.append(style.ledger_status(path, lab.student_id, events, warning))
    if ledger is not None:
        controls = _downloads(lab, ledger)
        if ledger.mode == "memory":
            controls.append(_upload_widget(lab))
        details = [mo.md(f"Ledger folder: `{_md_code(str(lab.ledger_dir))}`  \n"
                         f"Lab version: `{lab.version}` · receipt (hash of your newest "
                         f"record): `{ledger.head_hash[:16]}`"),
                   _folder_form(lab)]
        parts.append(mo.hstack(controls, justify="start", gap=0.5) if controls
                     else mo.md(""))
        parts.append(mo.accordion({"Ledger details": mo.vstack(details)}))
    return mo.vstack(parts, gap=0.5)


def _student_id_form(lab):
    def validate(value):
        text = value.get("student_id") if isinstance(value, dict) else value
        try:
            _ledger.validate_student_id(text or "")
        except ValueError as exc:
            return str(exc).replace("student_id", "Your student id", 1)
        return None

    def submit(value):
        if isinstance(value, dict) and value.get("student_id"):
            lab.set_student_id(value["student_id"])

    # full width: at marimo's default width the placeholder was cut off behind the counter
    form = stack_elements(student_id=mo.ui.text(
        placeholder="e.g. your university login", max_length=64, full_width=True,
        label="Your student id (asked once, remembered on this computer)")).form(
        submit_button_label="Save my id", validate=validate, on_change=submit)
    lab.keep_widget(form)
    return form


def _folder_form(lab):
    def validate(value):  # shown in the form: a refused folder changes nothing
        text = value.get("folder") if isinstance(value, dict) else value
        return lab.check_ledger_dir(text)[1]

    def submit(value):
        if isinstance(value, dict) and value.get("folder"):
            lab.set_ledger_dir(value["folder"])

    form = stack_elements(folder=mo.ui.text(
        value=str(lab.ledger_dir), full_width=True,
        label="Write the ledger to another folder")).form(
        submit_button_label="Use this folder", validate=validate, on_change=submit)
    lab.keep_widget(form)
    return form


def _downloads(lab, ledger: _ledger.Ledger) -> list:
    files = ledger.export_files() or [(ledger.path.name, b"")]
    out = []
    for name, _ in files:
        def data(name=name) -> bytes:  # read at click time: the ledger keeps growing
            return dict(ledger.export_files()).get(name, b"")

        out.append(mo.download(data=data, filename=name, mimetype="application/x-ndjson",
                               label=f"Download {name}"))
    return out


def _upload_widget(lab):
    def loaded(files):
        for f in files or ():
            lab.upload(bytes(f.contents), f.name)

    widget = mo.ui.file(filetypes=[".jsonl", ".json", ".txt"], max_size=16_000_000,
                        label="Upload a ledger you downloaded before", on_change=loaded)
    lab.keep_widget(widget)
    return widget


def stack_elements(**elements):
    """Elements one under the other, as one batch (its value is a dict by name)."""
    template = "\n\n".join("{%s}" % name for name in elements)
    return mo.md(template).batch(**elements)


def _md_code(text: str) -> str:
    return text.replace("`", "'")
