"""The :class:`LabSession`: one lab opened by one student, its settings, events and status line.

It resolves who the student is and where the ledger lives, records events (keeping those made
before a student id is given), commits and restores the first prediction of an item, and
changes the ledger folder without unlocking anything (the status line it shows is drawn by
:mod:`labs.core.course.quiz.status`). Part of
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
from labs.core.course.quiz.prediction import Prediction, first_prediction
from labs.core.course.quiz.status import status_view

__all__ = ["LabSession", "MEMORY_LEDGERS", "ledger_settings", "resolved_settings"]


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
MEMORY_LEDGERS: dict[tuple[str, str], _ledger.Ledger] = {}


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
        #: item id -> what the last submission in this window led to, when it did not lock
        #: the submitted answer (the item was already locked, e.g. in another tab)
        self.commit_notices: dict[str, str] = {}
        self._explain_views: dict[str, Any] = {}  # explain forms re-made after a save (alive)
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
        kept = MEMORY_LEDGERS.get(self._memory_key())
        if kept is not None:  # memory mode: the same records across re-runs and uploads
            self.ledger = kept
        else:
            try:
                self.ledger = _ledger.Ledger(self.student_id, self.ledger_dir)
            except Exception as exc:  # never let storage stop the lab: fall back to memory
                self.ledger = _ledger.Ledger(
                    self.student_id, self.ledger_dir, memory=True,
                    memory_reason=f"The ledger in {self.ledger_dir} could not be opened "
                                  f"({exc}). Your records are kept in memory only: download "
                                  "them before closing the lab.")
        pending, self._pending = self._pending, []
        for kind, item_id, payload, ts in pending:
            self.ledger.append(kind, lab_id=self.lab_id, item_id=item_id, payload=payload,
                               lab_version=self.version, session=self.session, ts=ts)
        self._keep_if_memory()

    def _memory_key(self) -> tuple[str, str]:
        return (str(self.student_id), str(self.ledger_dir))

    def _keep_if_memory(self) -> None:
        """A ledger that writes to memory (from the start, or since a write failed) is kept for
        the kernel's life, so a session re-created by a settings change or an upload finds the
        same records instead of opening the folder afresh."""
        if self.ledger is not None and self.ledger.mode == "memory":
            MEMORY_LEDGERS[self._memory_key()] = self.ledger

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
        """Write to ``directory`` from now on; returns None, or why not (nothing changed then).

        The locks this lab has shown must hold in the new folder: a folder without a ledger of
        this student receives a copy of every record (the old files stay as they were); a folder
        that already holds one is used only if it has the same first answers, else the change is
        refused with a message naming the items.
        """
        path, problem = self.check_ledger_dir(directory)
        if problem is not None or path is None:
            return problem
        if _same_folder(path, self.ledger_dir):
            return None
        notice = None
        ledger = self.ledger
        n = len(ledger.events()) if ledger is not None else 0
        if n and not _ledger.student_files(path, ledger.student_id):
            try:
                ledger.copy_to(path)
            except FileExistsError:
                return (f"Another window just started a ledger in {path}; "
                        "choose the folder again to compare it with this one.")
            except OSError as exc:
                return (f"The folder {path} cannot be written ({exc}). The lab keeps writing "
                        f"to {self.ledger_dir}.")
            notice = (f"Your {n} records were copied to {path}; the lab writes there from now "
                      f"on. The files in {self.ledger_dir} stay as they were.")
        elif n:
            notice = (f"{path} already held your ledger with the same locked predictions. "
                      f"Earlier records stay in {self.ledger_dir}; hand in the files of both "
                      "folders.")
        if remember:
            try:
                _ledger.save_config(ledger_dir=str(path))
            except OSError as exc:
                self.problems.append(f"The folder could not be remembered ({exc}).")
        self._settings["ledger_dir"] = str(path)
        self._open()
        if notice:
            self.problems.append(notice)
        self._notify(notice)
        return None

    def check_ledger_dir(self, directory: Any) -> tuple[Path | None, str | None]:
        """``(folder, None)`` if the lab may switch to ``directory``, else ``(None, why)``.

        Reads only: used by the folder form to refuse before anything changes. A folder is
        refused when it already holds a ledger of this student whose first answers differ from
        (or lack) the ones this ledger has locked, since switching would unlock them.
        """
        if not isinstance(directory, str) or not directory.strip():
            return None, "Enter a folder path."
        path = Path(directory.strip()).expanduser()
        if not path.is_absolute():
            return None, "Enter a full folder path (starting at the root of the disk)."
        ledger = self.ledger
        if ledger is None or _same_folder(path, self.ledger_dir):
            return path, None
        if _ledger.in_browser():
            return None, ("This is a browser-only run: there is no folder to write to. Use "
                          "the download button to keep your ledger.")
        files = _ledger.student_files(path, ledger.student_id)
        if not files:
            return path, None
        there = _ledger.first_predictions(
            [e for f in files for e in _ledger.read_ledger_file(f).events
             if e.get("student_id") == ledger.student_id])
        lost = []
        for item, first in ledger.first_predictions().items():
            other = there.get(item)
            if other is None or other["payload"].get("value") != first["payload"].get("value"):
                lost.append(f"{item}: {_answer(first)} here, "
                            f"{_answer(other) if other else 'nothing'} there")
        if not lost:
            return path, None
        more = f" and {len(lost) - 3} more" if len(lost) > 3 else ""
        return None, (f"{path} already holds a ledger for {ledger.student_id} without the "
                      f"predictions you locked here ({'; '.join(lost[:3])}{more}). Switching "
                      f"would unlock them, so the lab keeps writing to {self.ledger_dir}. "
                      "Choose an empty folder (your records are copied there) or move that "
                      "ledger away first.")

    def upload(self, data: bytes, name: str = "uploaded.jsonl") -> str:
        """Adopt a downloaded ledger (browser-only runs); returns a message for the student."""
        if self.ledger is None:
            return "Enter your student id first."
        result = self.ledger.import_bytes(data, name)
        self._keep_if_memory()
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
    def check_item(self, item_id: str) -> str:
        """``item_id`` if it names an item of this lab (``'<lab_id>.<item>'``), else ValueError
        saying what it must look like."""
        if not isinstance(item_id, str) or not item_id.startswith(self.lab_id + "."):
            raise ValueError(f"item_id must look like '{self.lab_id}.<item>', got {item_id!r}")
        return item_id

    def record(self, kind: str, item_id: str, payload: dict) -> dict | None:
        """Append one event (``predict``, ``unlock``, ``observe``, ``explain``, ``decision``,
        ``result``, ``revise``) for ``item_id``; returns the event, or None while no student id
        is known (it is then kept and written once the id is given)."""
        self.check_item(item_id)
        if kind not in _ledger.KINDS:
            raise ValueError(f"kind must be one of {', '.join(_ledger.KINDS)}, got {kind!r}")
        if not isinstance(payload, dict):
            raise ValueError(f"payload must be a dict, got {type(payload).__name__}")
        payload = _plain(payload)
        if self.ledger is None:
            self._pending.append((kind, item_id, dict(payload), _ledger.utc_now()))
            return None
        event = self.ledger.append(kind, lab_id=self.lab_id, item_id=item_id, payload=payload,
                                   lab_version=self.version, session=self.session)
        self._keep_if_memory()
        return event

    def events(self, item_id: str | None = None, kind: str | None = None) -> list[dict]:
        """This lab's events (optionally of one item / kind), oldest first, pending included."""
        if self.ledger is not None:
            evs = [e for e in self.ledger.events() if e["lab_id"] == self.lab_id]
        else:
            evs = [{"kind": k, "item_id": i, "payload": p, "ts": ts, "lab_id": self.lab_id}
                   for k, i, p, ts in self._pending]
        return [e for e in evs if (item_id is None or e["item_id"] == item_id)
                and (kind is None or e["kind"] == kind)]

    def record_result(self, item_id: str, result: dict) -> dict | None:
        """Record what this student's instrument showed for ``item_id`` (a ``result`` event),
        only when it differs from the last reading recorded, in this window or before a reload
        (a reload must not record the same value again). Returns the event, else None."""
        self.check_item(item_id)
        if item_id not in self._last_result:
            earlier = self.events(item_id, "result")
            self._last_result[item_id] = earlier[-1].get("payload") if earlier else None
        if self._last_result[item_id] == result:
            return None
        self._last_result[item_id] = result
        return self.record("result", item_id, result)

    @property
    def pending_count(self) -> int:
        """How many events wait for a student id (written once it is given)."""
        return len(self._pending)

    # -- widgets the session keeps alive (marimo holds UI elements by weak reference) --------
    def keep_widget(self, widget: Any) -> Any:
        """Keep a status control (id entry, folder form, upload) alive; returns it."""
        self._widgets.append(widget)
        return widget

    def forget_widgets(self) -> None:
        """Drop the status controls kept so far (the status line is being drawn anew)."""
        self._widgets = []

    @property
    def widgets(self) -> tuple:
        """The status controls kept alive, oldest first."""
        return tuple(self._widgets)

    def keep_explain_view(self, item_id: str, view: Any) -> None:
        """Keep the explain form re-made after a save alive (the newest per item)."""
        self._explain_views[self.check_item(item_id)] = view

    def first_prediction(self, item_id: str) -> Prediction | None:
        """The first committed prediction of ``item_id`` (what the lock restores), or None."""
        self.check_item(item_id)
        event = first_prediction(self.events(item_id, "predict"))
        return Prediction.from_event(event) if event is not None else None

    def commit(self, prediction: Prediction) -> Prediction:
        """Lock ``prediction`` unless the item is already locked; returns the locked one.

        Decided under the ledger's lock, so two windows committing at once leave one
        ``predict``. First commit: a ``predict`` then an ``unlock`` event. Already locked with
        a different answer: a ``revise`` event; the first prediction stays the locked one, and
        :attr:`commit_notices` says so for the form to show.
        """
        item = self.check_item(prediction.item_id)
        payload = _plain(prediction.payload())
        if self.ledger is None:  # no student id yet: decide among the pending events
            first = self.first_prediction(item)
            written = None
            if first is None:
                self.record("predict", item, payload)
                self.record("unlock", item, {})
            elif not first.same_answer(prediction):
                self.record("revise", item, payload)
            locked = first or self.first_prediction(item) or prediction
        else:
            first_event, written = self.ledger.commit_first(
                lab_id=self.lab_id, item_id=item, payload=payload, lab_version=self.version,
                session=self.session, same=_same_payload)
            if written is not None and written["kind"] == "predict":
                self.ledger.append("unlock", lab_id=self.lab_id, item_id=item,
                                   payload={"after_seq": written["seq"]},
                                   lab_version=self.version, session=self.session)
            self._keep_if_memory()
            first = None if written is first_event else Prediction.from_event(first_event)
            locked = first or Prediction.from_event(first_event) or prediction
        if first is None:
            self.commit_notices.pop(item, None)
        else:
            self.commit_notices[item] = _already_locked(first, prediction)
        return locked

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
        return status_view(self)


def _same_folder(a: Path, b: Path) -> bool:
    try:
        return a == b or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def _answer(event: Mapping) -> str:
    """A ``predict`` event's answer as the student saw it (option label, or value + units)."""
    pred = Prediction.from_event(event)
    return pred.display() if pred is not None else "?"


def _same_payload(first: dict, new: dict) -> bool:
    a = Prediction.from_event({"payload": first})
    b = Prediction.from_event({"payload": new})
    return a is not None and b is not None and a.same_answer(b)


def _already_locked(first: Prediction, submitted: Prediction) -> str:
    dt = _ledger.parse_ts(first.timestamp)
    when = f" at {dt:%Y-%m-%d %H:%M} UTC" if dt else ""
    if first.same_answer(submitted):
        return (f"This prediction was already locked{when} with the same answer, probably in "
                "another window or tab.")
    return (f"You submitted {submitted.display()} here, but this prediction was already locked"
            f"{when} with {first.display()}, probably in another window or tab. The first "
            "answer stands; yours is recorded as a revision.")


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
