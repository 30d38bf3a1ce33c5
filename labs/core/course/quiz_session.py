"""The :class:`LabSession`: one lab opened by one student, its settings, events and status line.

It resolves who the student is and where the ledger lives, records events (keeping those made
before a student id is given), restores the first committed prediction of an item, and renders
the ledger status with its controls (id entry, download, upload, change folder). Part of
:mod:`labs.core.course.quiz` (import it through that name).
"""

from __future__ import annotations

import math
import os
import secrets
from pathlib import Path
from typing import Any, Callable, Mapping

import marimo as mo

from labs.core.course import ledger as _ledger
from labs.core.course.quiz_prediction import Prediction
from labs.core.ui import style


def ledger_settings():
    """``(get, set)`` of the ledger settings as reactive state (setup cell 1 of every lab).

    The value is a dict ``{"student_id", "ledger_dir", "generation"}``; the lab passes it to
    :class:`LabSession` in the next cell, so entering a student id, changing the folder or
    uploading a ledger re-creates the session and re-runs every cell that uses ``lab``.
    Assign both to globals (``get_ledger_settings, set_ledger_settings = ...``): marimo only
    tracks state bound to a notebook global.
    """
    return mo.state(resolved_settings(), allow_self_loops=True)


def resolved_settings() -> dict:
    """Settings from the environment and the remembered config (no UI)."""
    return {"student_id": _ledger.resolve_student_id(),
            "ledger_dir": str(_ledger.default_ledger_dir()), "generation": 0}


#: Ledgers that could only be kept in memory, by (student id, folder): a session re-created
#: after a settings change or an upload (or a page reload served by the same kernel process)
#: finds its records again instead of starting empty.
_MEMORY_LEDGERS: dict[tuple[str, str], _ledger.Ledger] = {}


class LabSession:
    """One lab opened by one student: records events to the ledger and renders its status.

    ``LabSession(lab_id, lab_file)`` alone resolves the student id from
    ``$ROOFLINE_STUDENT_ID`` or the remembered id, and the ledger folder from
    ``$ROOFLINE_LEDGER_DIR``, the remembered folder or the per-user default. If there is no id,
    :meth:`status` shows an entry form; events recorded before it is given are kept and written
    as soon as it is. Pass ``settings=get_ledger_settings(), on_settings=set_ledger_settings``
    (see :func:`ledger_settings`) so the lab's cells re-run when the id or folder changes.
    Storage problems never raise: they become warnings in :meth:`status`.
    """

    def __init__(self, lab_id: str, lab_file: str | os.PathLike | None, *,
                 settings: Mapping | None = None,
                 on_settings: Callable[[dict], None] | None = None):
        if not isinstance(lab_id, str) or not lab_id.strip() or "." in lab_id:
            raise ValueError(f"lab_id must be a short name without dots, got {lab_id!r}")
        self.lab_id = lab_id
        self.lab_file = str(lab_file) if lab_file else None
        self.version = _ledger.lab_version(lab_file)
        self.session = secrets.token_hex(8)
        self._settings = dict(settings) if settings is not None else resolved_settings()
        self._on_settings = on_settings
        self.ledger: _ledger.Ledger | None = None
        self.problems: list[str] = []  # messages about settings (bad id, bad folder)
        self._pending: list[tuple[str, str, dict, str]] = []  # before a student id is known
        self._widgets: list[Any] = []  # keep status widgets alive (marimo holds weak refs)
        self._last_result: dict[str, Any] = {}
        self.student_id: str | None = None
        notices = self._settings.pop("notices", None)  # messages from the session before
        if isinstance(notices, list):
            self.problems += [str(n) for n in notices[:5]]
        sid = self._settings.get("student_id")
        if sid:
            try:
                self.student_id = _ledger.validate_student_id(sid)
            except ValueError as exc:
                self.problems.append(str(exc))
        self._open()

    # -- opening ---------------------------------------------------------------------------
    @property
    def ledger_dir(self) -> Path:
        d = self._settings.get("ledger_dir")
        return Path(d).expanduser() if d else _ledger.default_ledger_dir()

    def _open(self) -> None:
        if self.student_id is None:
            self.ledger = None
            return
        key = (self.student_id, str(self.ledger_dir))
        kept = _MEMORY_LEDGERS.get(key)
        if kept is not None:  # memory mode: the same records across re-runs and uploads
            self.ledger = kept
        else:
            try:
                self.ledger = _ledger.Ledger(self.student_id, self.ledger_dir)
            except Exception as exc:  # never let storage stop the lab: fall back to memory
                self.ledger = _ledger.Ledger(self.student_id, self.ledger_dir, memory=True)
                self.ledger.warnings.insert(0, f"The ledger could not be opened ({exc}).")
            if self.ledger.mode == "memory":
                _MEMORY_LEDGERS[key] = self.ledger
        pending, self._pending = self._pending, []
        for kind, item_id, payload, ts in pending:
            self.ledger.append(kind, lab_id=self.lab_id, item_id=item_id, payload=payload,
                               lab_version=self.version, session=self.session, ts=ts)

    def set_student_id(self, student_id: str, *, remember: bool = True) -> str | None:
        """Use ``student_id`` from now on (and remember it); returns an error message or None."""
        try:
            sid = _ledger.validate_student_id(student_id)
        except ValueError as exc:
            return str(exc).replace("student_id", "Your student id", 1)
        if remember:
            try:
                _ledger.save_config(student_id=sid)
            except OSError as exc:
                self.problems.append(f"Your id could not be remembered ({exc}); "
                                     "you will be asked again next time.")
        self.student_id = sid
        self._settings["student_id"] = sid
        self._open()
        self._notify()
        return None

    def set_ledger_dir(self, directory: str, *, remember: bool = True) -> str | None:
        """Write to ``directory`` from now on; returns an error message or None.

        Earlier records stay where they were (the message says so): nothing is moved.
        """
        if not isinstance(directory, str) or not directory.strip():
            return "Enter a folder path."
        path = Path(directory.strip()).expanduser()
        if not path.is_absolute():
            return "Enter a full folder path (starting at the root of the disk)."
        if remember:
            try:
                _ledger.save_config(ledger_dir=str(path))
            except OSError as exc:
                self.problems.append(f"The folder could not be remembered ({exc}).")
        old = self.ledger.target_path if self.ledger else None
        self._settings["ledger_dir"] = str(path)
        self._open()
        notice = None
        if old is not None and old != self.ledger.target_path:
            notice = f"Earlier records stay in {old}; hand in both files."
            self.problems.append(notice)
        self._notify(notice)
        return None

    def upload(self, data: bytes, name: str = "uploaded.jsonl") -> str:
        """Adopt a downloaded ledger (browser-only runs); returns a message for the student."""
        if self.ledger is None:
            return "Enter your student id first."
        result = self.ledger.import_bytes(data, name)
        n = sum(1 for e in result.events if e["student_id"] == self.student_id)
        msg = f"Loaded {n} records from {name}."
        if result.problems:
            msg += f" Problems: {'; '.join(str(p) for p in result.problems[:3])}."
        self.problems.append(msg)
        self._notify(msg)
        return msg

    def _notify(self, notice: str | None = None) -> None:
        """Hand the new settings to the notebook so the cells using ``lab`` re-run."""
        if self._on_settings is not None:
            new = dict(self._settings)
            new["generation"] = int(new.get("generation") or 0) + 1
            new["notices"] = [notice] if notice else []
            self._on_settings(new)

    # -- events ----------------------------------------------------------------------------
    def _check_item(self, item_id: str) -> str:
        if not isinstance(item_id, str) or not item_id.startswith(self.lab_id + "."):
            raise ValueError(f"item_id must look like '{self.lab_id}.<item>', got {item_id!r}")
        return item_id

    def record(self, kind: str, item_id: str, payload: dict) -> dict | None:
        """Append one event (``predict``, ``unlock``, ``observe``, ``explain``, ``decision``,
        ``result``, ``revise``) for ``item_id``; returns the event, or None while no student id
        is known (it is then kept and written once the id is given)."""
        self._check_item(item_id)
        if kind not in _ledger.KINDS:
            raise ValueError(f"kind must be one of {', '.join(_ledger.KINDS)}, got {kind!r}")
        if not isinstance(payload, dict):
            raise ValueError(f"payload must be a dict, got {type(payload).__name__}")
        payload = _plain(payload)
        if self.ledger is None:
            self._pending.append((kind, item_id, dict(payload), _ledger.utc_now()))
            return None
        return self.ledger.append(kind, lab_id=self.lab_id, item_id=item_id, payload=payload,
                                  lab_version=self.version, session=self.session)

    def events(self, item_id: str | None = None, kind: str | None = None) -> list[dict]:
        """This lab's events (optionally of one item / kind), oldest first, pending included."""
        if self.ledger is not None:
            evs = [e for e in self.ledger.events() if e["lab_id"] == self.lab_id]
        else:
            evs = [{"kind": k, "item_id": i, "payload": p, "ts": ts, "lab_id": self.lab_id}
                   for k, i, p, ts in self._pending]
        return [e for e in evs if (item_id is None or e["item_id"] == item_id)
                and (kind is None or e["kind"] == kind)]

    def first_prediction(self, item_id: str) -> Prediction | None:
        """The first committed prediction of ``item_id`` (what the lock restores), or None."""
        self._check_item(item_id)
        for event in self.events(item_id, "predict"):
            pred = Prediction.from_event(event)
            if pred is not None:
                return pred
        return None

    def commit(self, prediction: Prediction) -> Prediction:
        """Lock ``prediction`` unless the item is already locked; returns the locked one.

        First commit: a ``predict`` then an ``unlock`` event. Already locked with a different
        answer: a ``revise`` event; the first prediction stays the locked one.
        """
        existing = self.first_prediction(prediction.item_id)
        if existing is not None:
            if not existing.same_answer(prediction):
                self.record("revise", prediction.item_id, prediction.payload())
            return existing
        event = self.record("predict", prediction.item_id, prediction.payload())
        self.record("unlock", prediction.item_id,
                    {"after_seq": event["seq"]} if event else {})
        locked = self.first_prediction(prediction.item_id)
        return locked if locked is not None else prediction

    def last_text(self, item_id: str, kind: str) -> str:
        """The text of the newest ``observe``/``explain`` event of an item ("" if none)."""
        for event in reversed(self.events(item_id, kind)):
            text = event.get("payload", {}).get("text")
            if isinstance(text, str):
                return text
        return ""

    # -- status ----------------------------------------------------------------------------
    @property
    def warnings(self) -> list[str]:
        return list(self.problems) + (list(self.ledger.warnings) if self.ledger else [])

    def status(self):
        """The ledger status line: where it writes, the student id, warnings, and controls
        (student id entry, download, upload in memory mode, change folder)."""
        self._widgets = []
        if os.environ.get("ROOFLINE_STATIC_EXPORT") == "1":
            # A static page runs no Python: say so instead of showing the exporter's ledger.
            return mo.md("*Static preview: predictions are not recorded on this page. Open the "
                         "lab with `marimo edit` to lock predictions into your ledger.*")
        parts = []
        ledger = self.ledger
        if self.student_id is None:
            parts.append(self._student_id_form())
        path = str(ledger.target_path) if ledger and ledger.target_path else None
        events = len(ledger.events()) if ledger else len(self._pending)
        warning = " ".join(self.warnings) or None
        if self.student_id is None and not warning:
            warning = ("Enter your student id to start recording; what you do before that is "
                       "kept and saved once you do.")
        parts.append(style.ledger_status(path, self.student_id, events, warning))
        if ledger is not None:
            controls = self._downloads(ledger)
            if ledger.mode == "memory":
                controls.append(self._upload_widget())
            details = [mo.md(f"Ledger folder: `{_md_code(str(self.ledger_dir))}`  \n"
                             f"Lab version: `{self.version}` · receipt (hash of your newest "
                             f"record): `{ledger.head_hash[:16]}`"),
                       self._folder_form()]
            parts.append(mo.hstack(controls, justify="start", gap=0.5) if controls
                         else mo.md(""))
            parts.append(mo.accordion({"Ledger details": mo.vstack(details)}))
        return mo.vstack(parts, gap=0.5)

    def _student_id_form(self):
        def validate(value):
            text = value.get("student_id") if isinstance(value, dict) else value
            try:
                _ledger.validate_student_id(text or "")
            except ValueError as exc:
                return str(exc).replace("student_id", "Your student id", 1)
            return None

        def submit(value):
            if isinstance(value, dict) and value.get("student_id"):
                self.set_student_id(value["student_id"])

        form = _stack(student_id=mo.ui.text(
            placeholder="e.g. your university login", max_length=64,
            label="Your student id (asked once, remembered on this computer)")).form(
            submit_button_label="Save my id", validate=validate, on_change=submit)
        self._widgets.append(form)
        return form

    def _folder_form(self):
        def validate(value):
            text = value.get("folder") if isinstance(value, dict) else value
            if not text or not os.path.isabs(os.path.expanduser(str(text).strip())):
                return "Enter a full folder path."
            return None

        def submit(value):
            if isinstance(value, dict) and value.get("folder"):
                self.set_ledger_dir(value["folder"])

        form = _stack(folder=mo.ui.text(
            value=str(self.ledger_dir), full_width=True,
            label="Write the ledger to another folder")).form(
            submit_button_label="Use this folder", validate=validate, on_change=submit)
        self._widgets.append(form)
        return form

    def _downloads(self, ledger: _ledger.Ledger) -> list:
        files = ledger.export_files() or [(ledger.path.name, b"")]
        out = []
        for name, _ in files:
            def data(name=name) -> bytes:  # read at click time: the ledger keeps growing
                return dict(ledger.export_files()).get(name, b"")

            out.append(mo.download(data=data, filename=name, mimetype="application/x-ndjson",
                                   label=f"Download {name}"))
        return out

    def _upload_widget(self):
        def loaded(files):
            for f in files or ():
                self.upload(bytes(f.contents), f.name)

        widget = mo.ui.file(filetypes=[".jsonl", ".json", ".txt"], max_size=16_000_000,
                            label="Upload a ledger you downloaded before", on_change=loaded)
        self._widgets.append(widget)
        return widget


def _stack(**elements):
    """Elements one under the other, as one batch (its value is a dict by name)."""
    template = "\n\n".join("{%s}" % name for name in elements)
    return mo.md(template).batch(**elements)


def _plain(value: Any, path: str = "payload", depth: int = 0) -> Any:
    """``value`` as plain JSON: numpy scalars/arrays and tuples converted, else ValueError."""
    if depth > _ledger.MAX_PAYLOAD_DEPTH:
        raise ValueError(f"{path} is nested too deeply for the ledger")
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{path} must be finite, got {value!r}")
        return float(value)
    if isinstance(value, dict):
        return {str(k): _plain(v, f"{path}[{k!r}]", depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(value)]
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy scalar or array
        return _plain(value.tolist(), path, depth)
    raise ValueError(f"{path} must be plain JSON (str, number, bool, None, list, dict), "
                     f"got {type(value).__name__}")


def _md_code(text: str) -> str:
    return text.replace("`", "'")
