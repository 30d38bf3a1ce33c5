"""The prediction lock: commit a prediction before the instrument renders, then compare and explain.

Everything a lab needs for predict -> observe -> explain, backed by :mod:`labs.core.course.ledger`.
The exact cells a lab writes are in LABS_SPEC.md §4. In short::

    get_ledger_settings, set_ledger_settings = quiz.ledger_settings()      # cell 1
    lab = quiz.LabSession("lab01", __file__, settings=get_ledger_settings(),
                          on_settings=set_ledger_settings)                 # cell 2
    lab.status()
    get_x, set_x = quiz.lock_state(lab, "lab01.x")                         # per prediction
    x_form = quiz.numeric_form(lab, "lab01.x", question=..., units=..., lo=..., hi=...,
                               locked=get_x(), on_lock=set_x)
    quiz.prediction_panel(x_form, get_x())
    x_prediction = get_x()                                                 # gate variable
    mo.stop(x_prediction is None, quiz.gate_notice("Lock your prediction ..."))

Why the lock survives a reload: ``mo.state`` resets when the page reloads, so
:func:`lock_state` seeds it with the *first* ``predict`` event of the item in the ledger. A later
different submission (a second tab, a stale page) is recorded as ``revise`` and never replaces
the first. All student text is HTML-escaped wherever it is shown.
"""

from __future__ import annotations

import html
import math
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

import marimo as mo

from labs.core.course import ledger as _ledger
from labs.core.ui import style
from labs.core.physics.units import format_value  # noqa: F401  (re-exported)

MAX_REASON_CHARS = 200
MAX_TEXT_CHARS = 2000
CONFIDENCE_OPTIONS = {"1 · a guess": 1, "2": 2, "3": 3, "4": 4, "5 · sure": 5}
LOCK_LABEL = "Lock prediction"


# --------------------------------------------------------------------------------------------
# Predictions


@dataclass(frozen=True)
class Prediction:
    """A committed prediction. Tests construct it directly: ``Prediction("lab01.x", 300.0)``.

    ``value`` is a number (numeric items) or the option's value (choice items, whose ``label``
    is the text the student picked). ``timestamp`` is the UTC ISO time of the ``predict`` event.
    """

    item_id: str
    value: Any
    units: str = ""
    confidence: int | None = None
    reason: str = ""
    timestamp: str = ""
    label: str | None = None
    answer_type: str = "numeric"  # "numeric" | "choice"
    seq: int | None = None

    def display(self, fmt: Callable[[Any], str] | str | None = None) -> str:
        """The answer as text: the option label, or the number with its units."""
        if self.answer_type == "choice":
            return self.label if self.label is not None else str(self.value)
        return _with_units(format_value(self.value, fmt), self.units)

    def payload(self) -> dict:
        """The ``predict``/``revise`` event payload for this prediction."""
        out = {"value": self.value, "answer_type": self.answer_type, "units": self.units,
               "confidence": self.confidence, "reason": self.reason}
        if self.label is not None:
            out["label"] = self.label
        return out

    @classmethod
    def from_event(cls, event: Mapping) -> "Prediction | None":
        """The prediction a ``predict``/``revise`` event records, or None if it holds none."""
        p = event.get("payload") if isinstance(event, Mapping) else None
        if not isinstance(p, Mapping) or "value" not in p:
            return None
        conf = p.get("confidence")
        label = p.get("label")
        return cls(
            item_id=str(event.get("item_id", "")), value=p["value"],
            units=str(p.get("units") or ""),
            confidence=conf if isinstance(conf, int) and not isinstance(conf, bool) else None,
            reason=str(p.get("reason") or ""), timestamp=str(event.get("ts", "")),
            label=label if isinstance(label, str) else None,
            answer_type="choice" if p.get("answer_type") == "choice" else "numeric",
            seq=event.get("seq") if isinstance(event.get("seq"), int) else None,
        )

    def same_answer(self, other: "Prediction") -> bool:
        return (self.value, self.confidence, self.reason.strip()) == (
            other.value, other.confidence, other.reason.strip())


def _with_units(text: str, units: str) -> str:
    return f"{text} {units}".strip() if units else text


# --------------------------------------------------------------------------------------------
# Session: who, where, and the ledger


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


# --------------------------------------------------------------------------------------------
# The lock


def lock_state(lab: LabSession, item_id: str):
    """``(get, set)`` for one prediction, seeded from the ledger so a reload restores the lock.

    ``get()`` is the locked :class:`Prediction` or None. Assign both to notebook globals.
    """
    return mo.state(lab.first_prediction(item_id), allow_self_loops=True)


def _check_bounds(lo: Any, hi: Any, log_scale: bool) -> tuple[float, float]:
    for name, v in (("lo", lo), ("hi", hi)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ValueError(f"{name} must be a finite number, got {v!r}")
    if not lo < hi:
        raise ValueError(f"lo must be < hi, got lo={lo!r}, hi={hi!r}")
    if log_scale and lo <= 0:
        raise ValueError(f"lo must be > 0 with log_scale=True, got {lo!r}")
    return float(lo), float(hi)


def log_steps(lo: float, hi: float) -> list[float]:
    """Round numbers (1, 1.5, 2, 3, 5, 7 per decade) from lo to hi, lo and hi included."""
    mantissas = (1, 1.5, 2, 3, 5, 7)
    steps = {lo, hi}
    for exp in range(math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1):
        for m in mantissas:
            v = float(f"{m * 10.0 ** exp:.6g}")
            if lo < v < hi:
                steps.add(v)
    return sorted(int(v) if v == int(v) and abs(v) < 2**53 else v for v in steps)


_SUFFIX = {"k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}


def parse_number(text: Any) -> float | None:
    """``"3e5"``, ``"300,000"``, ``"300k"`` -> 300000.0; None if it is not a finite number."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        return float(text) if math.isfinite(text) else None
    if not isinstance(text, str):
        return None
    s = text.strip().replace(",", "").replace("_", "").replace(" ", "")
    scale = 1.0
    if s and s[-1].lower() in _SUFFIX and not s.lower().endswith("e"):
        scale, s = _SUFFIX[s[-1].lower()], s[:-1]
    try:
        v = float(s) * scale
    except ValueError:
        return None
    return v if math.isfinite(v) else None


class _LockHandler:
    """The form's on_change: turn a submission into a locked Prediction, record it, call back.

    Also checks the submission (the browser checks it first through the form's ``validate``;
    a submission that arrives some other way and is invalid is ignored, never raised).
    """

    def __init__(self, lab: LabSession, item_id: str, *, answer_type: str, units: str,
                 lo: float | None = None, hi: float | None = None,
                 options: Mapping[str, Any] | None = None,
                 steps: list | None = None, on_lock: Callable[[Prediction], None]):
        self.lab, self.item_id, self.answer_type, self.units = lab, item_id, answer_type, units
        self.lo, self.hi, self.options, self.steps, self.on_lock = lo, hi, options, steps, on_lock
        self.last_error: str | None = None

    # raw = what the browser sends (text, slider index, option label); value = marimo's value
    def from_frontend(self, raw: Any) -> dict:
        raw = raw if isinstance(raw, dict) else {}
        answer = raw.get("answer")
        if self.steps is not None and isinstance(answer, (int, float)) \
                and not isinstance(answer, bool) and 0 <= answer < len(self.steps):
            answer = self.steps[int(answer)]
        elif self.options is not None:
            answer = self.options.get(answer) if isinstance(answer, str) else None
        conf = raw.get("confidence")
        return {"answer": answer, "reason": raw.get("reason"),
                "confidence": CONFIDENCE_OPTIONS.get(conf) if isinstance(conf, str) else None,
                "_label": raw.get("answer") if self.options is not None else None}

    def check(self, value: Any) -> tuple[Prediction | None, str | None]:
        """(prediction, None) for a valid submission, else (None, message for the student)."""
        if not isinstance(value, dict):
            return None, "Fill in the form first."
        answer, conf, reason = value.get("answer"), value.get("confidence"), value.get("reason")
        label = None
        if self.options is not None:
            label = value.get("_label")
            if label is None:
                label = next((k for k, v in self.options.items() if v == answer), None)
            if answer is None or label is None:
                return None, "Choose one of the options."
        else:
            number = parse_number(answer)
            if number is None:
                return None, ("Enter your prediction as a number (e.g. 300, 3e5 or 300k)."
                              if answer in (None, "") or isinstance(answer, str)
                              else "Enter a number.")
            if not self.lo <= number <= self.hi:
                return None, (f"Your prediction must be between {format_value(self.lo)} and "
                              f"{format_value(self.hi)} {self.units}".rstrip() + ".")
            answer = int(number) if number == int(number) and abs(number) < 2**53 else number
        if not (isinstance(conf, int) and 1 <= conf <= 5) or isinstance(conf, bool):
            return None, "Choose how confident you are (1-5)."
        if not isinstance(reason, str) or not reason.strip():
            return None, "Write one line on why you expect this."
        if len(reason) > MAX_REASON_CHARS or "\n" in reason.strip():
            return None, f"Keep the reason to one line (at most {MAX_REASON_CHARS} characters)."
        return Prediction(item_id=self.item_id, value=answer, units=self.units,
                          confidence=conf, reason=reason.strip(), timestamp=_ledger.utc_now(),
                          label=label, answer_type=self.answer_type), None

    def validate(self, raw: Any) -> str | None:
        """The form's ``validate``: a message shown in the form instead of submitting."""
        return self.check(self.from_frontend(raw))[1]

    def __call__(self, value: Any) -> None:
        if value is None:
            return
        prediction, error = self.check(value)
        self.last_error = error
        if prediction is None:
            return
        locked = self.lab.commit(prediction)
        self.on_lock(locked)


def _prediction_form(handler: _LockHandler, answer_element, question: str,
                     locked: Prediction | None):
    disabled = locked is not None
    confidence = mo.ui.radio(
        CONFIDENCE_OPTIONS, inline=True, disabled=disabled, label="Confidence",
        value=next((k for k, v in CONFIDENCE_OPTIONS.items()
                    if locked is not None and v == locked.confidence), None))
    reason = mo.ui.text(value=locked.reason if locked else "", max_length=MAX_REASON_CHARS,
                        placeholder="one line: why do you expect this?", full_width=True,
                        disabled=disabled, label="Reason")
    form = _stack(answer=answer_element, confidence=confidence, reason=reason).form(
        label=question, submit_button_label=LOCK_LABEL,
        submit_button_disabled=disabled, validate=handler.validate, on_change=handler,
        submit_button_tooltip="Once locked, the prediction cannot be changed." if not disabled
        else "Locked.")
    form.roofline_item = {"item_id": handler.item_id, "question": question,
                          "handler": handler}
    return form


def numeric_form(lab: LabSession, item_id: str, *, question: str, units: str, lo: float,
                 hi: float, locked: Prediction | None,
                 on_lock: Callable[[Prediction], None], log_scale: bool = False):
    """A bounded numeric prediction: answer, confidence 1-5, one-line reason, "Lock prediction".

    ``log_scale=False``: a text box (accepts 300, 3e5, 300k; no default to anchor on).
    ``log_scale=True``: a slider over round numbers spaced logarithmically from lo to hi.
    Out-of-range or missing answers show a message in the form. Disabled once ``locked``.
    """
    lab._check_item(item_id)
    lo, hi = _check_bounds(lo, hi, log_scale)
    disabled = locked is not None
    steps = None
    if log_scale:
        steps = log_steps(lo, hi)
        start = locked.value if locked is not None and locked.value in steps else \
            min(steps, key=lambda s: abs(math.log(s) - (math.log(lo) + math.log(hi)) / 2))
        answer = mo.ui.slider(steps=steps, value=start, show_value=True, disabled=disabled,
                              full_width=True, label=f"Your prediction ({units})" if units
                              else "Your prediction")
    else:
        answer = mo.ui.text(
            value=str(locked.value) if locked is not None else "",
            placeholder=f"{format_value(lo)} to {format_value(hi)}", disabled=disabled,
            label=f"Your prediction ({units})" if units else "Your prediction")
    handler = _LockHandler(lab, item_id, answer_type="numeric", units=units, lo=lo, hi=hi,
                           steps=steps, on_lock=on_lock)
    return _prediction_form(handler, answer, question, locked)


def choice_form(lab: LabSession, item_id: str, *, question: str, options: Mapping[str, Any],
                locked: Prediction | None, on_lock: Callable[[Prediction], None]):
    """Multiple choice twin of :func:`numeric_form`: ``options`` maps label -> value."""
    lab._check_item(item_id)
    if not isinstance(options, Mapping) or len(options) < 2 \
            or not all(isinstance(k, str) and k for k in options):
        raise ValueError(f"options must map at least two labels to values, got {options!r}")
    odd = [k for k, v in options.items() if not (v is None or isinstance(v, (str, int, bool))
                                                   or (isinstance(v, float) and math.isfinite(v)))]
    if odd:  # the value goes into the ledger: it must be plain JSON
        raise ValueError(f"options values must be str, int, float, bool or None (they are "
                         f"recorded in the ledger); not so for {odd!r}")
    label = None
    if locked is not None:
        label = locked.label if locked.label in options else next(
            (k for k, v in options.items() if v == locked.value), None)
    answer = mo.ui.radio(dict(options), value=label, disabled=locked is not None,
                         label="Your prediction")
    handler = _LockHandler(lab, item_id, answer_type="choice", units="",
                           options=dict(options), on_lock=on_lock)
    return _prediction_form(handler, answer, question, locked)


def prediction_panel(form, locked_prediction: Prediction | None):
    """The form while unlocked; once locked, a card with the locked answer (text escaped)."""
    if locked_prediction is None:
        return form
    info = getattr(form, "roofline_item", {}) or {}
    question = info.get("question", "")
    card = mo.callout(mo.Html(locked_card_html(locked_prediction)), kind="success")
    return mo.vstack([mo.md(question), card]) if question else card


def locked_card_html(prediction: Prediction) -> str:
    """The locked answer as HTML, every piece of student text escaped."""
    conf = (f" · confidence {prediction.confidence}/5"
            if prediction.confidence is not None else "")
    body = (f"<div><strong>Locked prediction:</strong> "
            f"{html.escape(prediction.display())}{html.escape(conf)}</div>")
    if prediction.reason:
        body += f"<div><em>Why:</em> {html.escape(prediction.reason)}</div>"
    return body + (f'<div style="font-size:.85em;opacity:.75">'
                   f"{html.escape(_short_time(prediction.timestamp))}"
                   "This is your first committed answer; it stays as it is.</div>")


def _short_time(ts: str) -> str:
    dt = _ledger.parse_ts(ts)
    return f"Locked {dt:%Y-%m-%d %H:%M} UTC. " if dt else ""


def gate_notice(message: str):
    """What a closed gate shows in place of the instrument."""
    return style.gate_notice(message)


# --------------------------------------------------------------------------------------------
# After the reveal


def ratio_off(predicted: float, actual: float) -> float | None:
    """How many times off (>= 1), or None when a ratio means nothing (zero or opposite signs)."""
    if predicted == 0 or actual == 0 or (predicted > 0) != (actual > 0):
        return None
    r = predicted / actual
    return max(r, 1 / r)


def compare(prediction: Prediction | None, actual: Any, *, units: str = "",
            fmt: Callable[[Any], str] | str | None = None, actual_label: str | None = None,
            lab: LabSession | None = None):
    """"You predicted X · the instrument shows Y · off by Z×" (numeric) or right/wrong (choice).

    With ``lab=``, the actual value is recorded once as a ``result`` event of the item (again
    only when it changes), so the grader can report correctness against what this student's
    instrument showed.
    """
    if prediction is None:
        return gate_notice("No prediction locked yet.")
    if prediction.answer_type == "choice":
        right = prediction.value == actual
        shown = actual_label if actual_label is not None else str(actual)
        verdict = "right" if right else "not what you predicted: explain the difference below"
        out = style.comparison_callout(prediction.display(), shown, verdict,
                                       "ok" if right else "warn")
        result = {"actual": _jsonable(actual), "correct": right}
    else:
        p, a = parse_number(prediction.value), parse_number(actual)
        if a is None:
            raise ValueError(f"actual must be a finite number, got {actual!r}")
        shown = _with_units(format_value(a, fmt), units)
        predicted = _with_units(format_value(prediction.value, fmt), units or prediction.units)
        r = ratio_off(p, a) if p is not None else None
        if r is None:
            verdict, kind = (f"off by {_with_units(format_value(abs((p or 0) - a), fmt), units)}",
                             "warn")
        else:
            direction = "" if r < 1.005 else (" (too high)" if p > a else " (too low)")
            verdict = f"off by {r:.3g}×{direction}"
            kind = "ok" if r <= 1.5 else ("warn" if r <= 10 else "danger")
        out = style.comparison_callout(predicted, shown, verdict, kind)
        result = {"actual": a, "units": units, "ratio": r}
    if lab is not None:  # record what this student's instrument showed, once per value
        item = prediction.item_id
        if item not in lab._last_result:  # a reload must not record the same value again
            earlier = lab.events(item, "result")
            lab._last_result[item] = earlier[-1].get("payload") if earlier else None
        if lab._last_result[item] != result:
            lab._last_result[item] = result
            lab.record("result", item, result)
    return out


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    return str(value)


class _ExplainHandler:
    def __init__(self, lab: LabSession, item_id: str):
        self.lab, self.item_id = lab, item_id

    @staticmethod
    def check(value: Any) -> str | None:
        if not isinstance(value, dict):
            return "Fill in both boxes."
        for key, what in (("observe", "what the instrument shows"),
                          ("explain", "your explanation")):
            text = value.get(key)
            if not isinstance(text, str) or len(text.strip()) < 3:
                return f"Write {what}."
            if len(text) > MAX_TEXT_CHARS:
                return f"Keep {what} under {MAX_TEXT_CHARS} characters."
        return None

    def __call__(self, value: Any) -> None:
        if value is None or self.check(value) is not None:
            return
        self.lab.record("observe", self.item_id, {"text": value["observe"].strip()})
        self.lab.record("explain", self.item_id, {"text": value["explain"].strip()})


def explain_form(lab: LabSession, item_id: str, *, observe_label: str, explain_label: str):
    """Observe and explain: two text boxes; "Save" records an ``observe`` and an ``explain``
    event. Pre-filled with the last saved texts, so a reload shows them; saving again appends
    new events (nothing is overwritten)."""
    lab._check_item(item_id)
    handler = _ExplainHandler(lab, item_id)
    saved = lab.last_text(item_id, "explain")
    form = _stack(
        observe=mo.ui.text_area(value=lab.last_text(item_id, "observe"), rows=2,
                                max_length=MAX_TEXT_CHARS, full_width=True,
                                label=observe_label),
        explain=mo.ui.text_area(value=saved, rows=3, max_length=MAX_TEXT_CHARS,
                                full_width=True, label=explain_label),
    ).form(submit_button_label="Save", validate=handler.check, on_change=handler,
            label="Saved ✓ (you can edit and save again)" if saved else "")
    form.roofline_item = {"item_id": item_id, "handler": handler}
    return form


def simulate_submit(form, **values: Any) -> None:
    """Submit ``form`` as a browser would (headless tests): same conversion, same on_change.

    Prediction forms: ``answer=`` (number, or an option *value* or label for choices),
    ``confidence=`` (1-5), ``reason=``. Explain forms: ``observe=``, ``explain=``.
    """
    info = getattr(form, "roofline_item", None)
    if not info:
        raise ValueError("form must come from quiz.numeric_form/choice_form/explain_form")
    handler = info["handler"]
    if isinstance(handler, _ExplainHandler):
        raw = {"observe": str(values.get("observe", "")), "explain": str(values.get("explain", ""))}
    else:
        answer = values.get("answer")
        if handler.options is not None:
            answer = answer if answer in handler.options else next(
                (k for k, v in handler.options.items() if v == answer), None)
        elif handler.steps is not None:
            answer = min(range(len(handler.steps)),
                         key=lambda i: abs(handler.steps[i] - float(answer)))
        else:
            answer = "" if answer is None else str(answer)
        conf = next((k for k, v in CONFIDENCE_OPTIONS.items()
                     if v == values.get("confidence")), None)
        raw = {"answer": answer, "confidence": conf, "reason": values.get("reason", "")}
    form._update(raw)


__all__ = [
    "CONFIDENCE_OPTIONS", "LabSession", "Prediction", "choice_form", "compare",
    "explain_form", "format_value", "gate_notice", "ledger_settings", "lock_state",
    "log_steps", "numeric_form", "parse_number", "prediction_panel", "ratio_off",
    "resolved_settings", "simulate_submit",
]
