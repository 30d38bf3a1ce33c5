"""Scoring for ``labs-grade``: a :class:`~labs.core.course.grading.load.Batch` and a course
config into a :class:`Gradebook`.

Per student and lab, per prediction item: commitment (a ``predict`` before the item was
unlocked, observed or explained), reasoning (confidence and reason), reconciliation (observed
and explained afterwards) and correctness (reported; points only if the rubric gives some).
The first ``predict`` of an item in the merged order is graded (each file in its chain order);
a second one is flagged. Lateness is per graded part (see :func:`grade_lab`): events that
change nothing graded never make work late. Deadlines follow per-student extensions; an
instructor's overrides
replace an item's (or a lab's) points and are listed in the notes. A lab with no events is
``Missing``, or ``Unreadable submission`` when a file named for the student could not be read.
Student-level flags come from :mod:`~labs.core.course.grading.checks`. Part of
:mod:`labs.core.course.grading` (import it through that name).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from labs.core.course.grading.checks import LINE_FLAGS, check_student, short_name, summarise
from labs.core.course.grading.config import CourseConfig, LabConfig
from labs.core.course.grading.ids import norm_id
from labs.core.course.grading.instructor_csvs import Override
from labs.core.course.grading.load import Batch, EventRecord, merge_events
from labs.core.course.answers import (finite_number, first_prediction, graded_result,
                                      is_reasoned, within_factor)

__all__ = [
    "Gradebook", "ItemGrade", "LabGrade", "STALE_AFTER", "UNREADABLE", "answer_text", "empty_book",
    "explanation_length", "grade", "grade_lab", "grade_student", "late_factor"
]

UNREADABLE = "Unreadable submission"


@dataclass
class ItemGrade:
    item_id: str
    committed: bool = False
    reasoned: bool = False
    explained: bool = False
    correct: bool | None = None  # None: unknown (no answer and no recorded result)
    points: float = 0.0
    override: float | None = None  # the instructor's points, replacing the rubric's
    comment: str = ""  # the instructor's comment with an override
    predicted_at: datetime | None = None  # the graded (first) prediction: commit, reason
    explained_at: datetime | None = None  # when observed and explained were both true
    earned: float = 0.0  # the rubric's points before any late penalty
    tolerance: float | None = None  # numeric: the factor correctness was judged within
    tolerance_from: str = ""  # "" the item's own; else the course file's key that set it
    #: what the prediction was judged against: the course file's answer, or the first
    #: reading of the student's instrument after the prediction (``graded_from``)
    graded_actual: Any = None
    graded_from: str = ""  # "answer" | "result" | ""
    graded_order: int | None = None  # the judged result event's position (feedback pages)
    #: (what, points, lateness, factor) of each part earned after the deadline
    late_parts: list[tuple[str, float, timedelta, float]] = field(default_factory=list)

    @property
    def penalty(self) -> float:
        """Points the late penalty took from this item."""
        return 0.0 if self.override is not None else round(self.earned - self.points, 4)


@dataclass
class LabGrade:
    """One student's result for one lab."""

    student_id: str
    lab_id: str
    points: float = 0.0
    max_points: float = 0.0
    #: time of the newest graded event (a prediction, or the observe + explain that earned
    #: points); later events that change nothing graded (a re-measurement, a revision) do not
    #: count; ``last_event``: the newest event of any kind
    submitted: datetime | None = None
    last_event: datetime | None = None
    lateness: timedelta = timedelta(0)  # of the newest graded event past the deadline
    status: str = "Missing"  # Missing | Unreadable submission | On time | Late | Submitted
    items: list[ItemGrade] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)  # "code (detail)"
    deadline: datetime | None = None  # the deadline that applied (extensions included)
    override: float | None = None  # the instructor's points for the whole lab
    comment: str = ""

    @property
    def penalty(self) -> float:
        """Points the late penalty took from the lab (0 with an override of the lab)."""
        return 0.0 if self.override is not None else round(
            sum(i.penalty for i in self.items), 4)

    @property
    def correct_text(self) -> str:
        known = [i.correct for i in self.items if i.correct is not None]
        return f"{sum(known)}/{len(known)}" if known else ""


@dataclass
class Gradebook:
    config: CourseConfig
    labs: list[LabConfig]
    students: list[str]
    grades: dict[tuple[str, str], LabGrade]
    student_flags: dict[str, list[str]]
    notes: dict[str, list[str]] = field(default_factory=dict)  # facts, not problems
    #: problems of the instructor's inputs that are no student's (an extension naming no
    #: student graded, without a roster to check it): the console lists them
    warnings: list[str] = field(default_factory=list)
    #: facts about the class (a course file's tolerance in place of an item's own, Canvas's
    #: test student left out): the console and README.txt say them
    notices: list[str] = field(default_factory=list)


def answer_text(payload: dict, key: str = "text") -> str:
    v = payload.get(key)
    return v if isinstance(v, str) else ""


def _is_correct(first: EventRecord, later: list[EventRecord], lab: LabConfig,
                ig: ItemGrade) -> bool | None:
    """Whether the first prediction is right: against the course file's answer when it gives
    one, else against the first reading of the student's instrument after the prediction (a
    ``result`` event; later ones, a re-measurement, change nothing). Numbers within the
    item's tolerance (:func:`labs.core.course.answers.within_factor`: exact, the boundary
    inside). Records what it was judged against on ``ig``; None when nothing can say."""
    value = first.payload.get("value")
    choice = first.payload.get("answer_type") == "choice"
    tolerance = ig.tolerance
    if first.item_id in lab.answers:
        right = lab.answers[first.item_id]
        ig.graded_actual, ig.graded_from = right, "answer"
        if choice or isinstance(right, str) or isinstance(value, (str, bool)):
            return value == right
        p, a = finite_number(value), finite_number(right)
        if p is None or a is None:
            return None
        return within_factor(p, a, tolerance)
    if not choice and finite_number(value) is None:
        return None  # no number to compare: no reading judges it
    e = graded_result(first, later)
    if e is None:
        return None
    ig.graded_from, ig.graded_order = "result", e.order
    if choice:
        if isinstance(e.payload.get("correct"), bool):
            ig.graded_actual = e.payload.get("actual")
            return e.payload["correct"]
        ig.graded_actual = e.payload["actual"]
        return e.payload["actual"] == value
    ig.graded_actual = a = finite_number(e.payload.get("actual"))
    return within_factor(finite_number(value), a, tolerance)


def explanation_length(text: str) -> int:
    """An explanation's length for ``min_explain_chars``: its characters that are not
    whitespace (padding with spaces or blank lines earns nothing)."""
    return len("".join(text.split()))  # split() drops exactly what str.isspace() calls space


def _order_problems(events: list[EventRecord]) -> list[str]:
    """Impossible orders within one item: unlock/observe/explain/revise before its predict,
    observe/explain before its unlock."""
    out = []
    first = first_prediction(events)
    has_predict = first is not None
    has_unlock = any(e.kind == "unlock" for e in events)
    seen_predict = seen_unlock = False
    for e in events:
        if e is first:
            seen_predict = True
        elif e.kind == "predict":
            pass
        elif e.kind == "unlock":
            if not seen_predict:
                out.append(f"unlock before predict ({e.item_id})")
            seen_unlock = True
        elif e.kind in ("observe", "explain", "revise") and has_predict and not seen_predict:
            out.append(f"{e.kind} before predict ({e.item_id})")
        elif e.kind in ("observe", "explain") and has_unlock and not seen_unlock:
            out.append(f"{e.kind} before unlock ({e.item_id})")
    return sorted(set(out))


#: An event this much older than its lab's deadline (without one: than the class's newest
#: event) is from another term: a ledger handed in again, or a computer's clock far off.
STALE_AFTER = timedelta(days=180)


def grade_lab(student_id: str, events: list[EventRecord], lab: LabConfig,
              config: CourseConfig, *, deadline: datetime | None = None,
              unreadable: bool = False, newest: datetime | None = None) -> LabGrade:
    """Grade one student's events of one lab (events in merged order, valid and invalid).

    ``deadline``: the one that applies to the student (default: the lab's); ``unreadable``:
    a file named for the student could not be read, so no events means "Unreadable
    submission", not "Missing". ``newest``: the class's newest event, what an event is old
    against when the lab has no deadline (``old_timestamp``: :data:`STALE_AFTER`).
    """
    deadline = lab.deadline if deadline is None else deadline
    g = LabGrade(student_id, lab.lab_id, max_points=lab.rubric.per_item * len(lab.items),
                 deadline=deadline)
    where: dict[tuple[str, str], list[int]] = {}
    against = lab.deadline or newest
    for e in events:
        for f in e.flags:
            if f != "odd_student_id":  # a student-level flag
                lines = where.setdefault((f, short_name(e.source)), [])
                if f in LINE_FLAGS:
                    lines.append(e.line)
        if against is not None and e.time is not None and against - e.time > STALE_AFTER:
            where.setdefault(("old_timestamp", short_name(e.source)), []).append(e.line)
    flags = summarise(where)
    if lab.versions:
        odd = sorted({e.lab_version for e in events if e.lab_version not in lab.versions})
        flags += [f"unknown_lab_version ({v})" for v in odd]
    valid = [e for e in events if e.valid]
    if not events:
        g.status = UNREADABLE if unreadable else "Missing"
        g.items = [ItemGrade(item) for item in lab.items]
        g.flags = flags
        return g
    times = [e.time for e in events if e.time is not None]
    g.last_event = max(times) if times else None
    by_item: dict[str, list[EventRecord]] = {}
    for e in valid:
        by_item.setdefault(e.item_id, []).append(e)
    for item_events in by_item.values():
        for problem in _order_problems(item_events):
            flags.append(f"impossible_order ({problem})")
    r = lab.rubric
    graded_times = []
    for item in lab.items:
        evs = by_item.get(item, [])
        ig = ItemGrade(item)
        ig.tolerance, ig.tolerance_from = lab.tolerance_for(item)
        first = first_prediction(evs)
        if first is not None:
            first_i = next(i for i, e in enumerate(evs) if e is first)
            before = evs[:first_i]
            ig.committed = not any(e.kind in ("unlock", "observe", "explain", "result")
                                   for e in before)
            ig.reasoned = is_reasoned(first.payload)
            after = evs[first_i + 1:]
            observe = next((e for e in after if e.kind == "observe"
                            and answer_text(e.payload).strip()), None)
            explain = next((e for e in after if e.kind == "explain" and explanation_length(
                answer_text(e.payload)) >= r.min_explain_chars), None)
            ig.explained = observe is not None and explain is not None
            ig.predicted_at = first.time
            if ig.explained:
                both = [e.time for e in (observe, explain) if e.time is not None]
                ig.explained_at = max(both) if both else None
            ig.correct = _is_correct(first, after, lab, ig)
            if any(e.kind == "predict" for e in after):
                flags.append(f"second_predict ({item})")  # only the first one is graded
            if any(e.kind == "revise" for e in after):
                flags.append(f"revised ({item})")
        parts = (("prediction", r.commit * ig.committed + r.reason * ig.reasoned
                  + r.correct * bool(ig.correct), ig.predicted_at),
                 ("explanation", r.explain * ig.explained, ig.explained_at))
        ig.earned = ig.points = sum(p for _, p, _ in parts)
        for what, pts, when in parts:
            if pts <= 0 or when is None:
                continue
            graded_times.append(when)
            late = when - deadline if deadline is not None else timedelta(0)
            if late > timedelta(0):
                factor = 0.0 if config.late_policy == "deadline" else late_factor(
                    late, config.late_penalty_per_day)
                ig.late_parts.append((what, pts, late, factor))
                ig.points -= pts * (1.0 - factor)
        ig.points = round(ig.points, 4)
        g.items.append(ig)
    g.submitted = max(graded_times) if graded_times else g.last_event
    if deadline is not None and g.submitted is not None:
        g.lateness = max(timedelta(0), g.submitted - deadline)
        g.status = "Late" if g.lateness > timedelta(0) else "On time"
    else:
        g.status = "Submitted"
    g.points = _total(g, config)
    g.flags = flags
    return g


def late_factor(lateness: timedelta, per_day: float) -> float:
    """What share of a late part's points it keeps: ``1 - per_day x started days late``
    (at least 0). 2 days 1 hour late at 0.1 per day: 3 started days, 0.7."""
    if lateness <= timedelta(0) or not per_day:
        return 1.0
    return max(0.0, 1.0 - per_day * math.ceil(lateness / timedelta(days=1)))


def _total(g: LabGrade, config: CourseConfig) -> float:
    """The lab's points: the items' (each part earned after the deadline less its late
    penalty; an instructor's item override as given), or the instructor's points for the
    whole lab."""
    if g.override is not None:
        return round(g.override, 4)
    return round(sum(i.points for i in g.items), 4)


def _apply_overrides(book: Gradebook, sid: str, overrides) -> None:
    """Merge the instructor's overrides of one student (checked by the plan)."""
    for o, lab in overrides:
        g = book.grades[(sid, lab.lab_id)]
        note = f"{o.item}: override {o.points:g}" + (f" ({o.comment})" if o.comment else "")
        if o.item == lab.lab_id:
            g.override, g.comment = o.points, o.comment
        else:
            ig = next(i for i in g.items if i.item_id == o.item)
            ig.points, ig.override, ig.comment = o.points, o.points, o.comment  # as given
            per = lab.rubric.per_item
            if o.points > per:
                note += f" (above the item's {per:g})"
        g.points = _total(g, book.config)
        book.notes.setdefault(sid, []).append(note)


def grade_student(plan, book: Gradebook, sid: str, mine: list[EventRecord],
                  hashes: set[str]) -> None:
    """Grade one student into ``book``: their flags and notes, a :class:`LabGrade` per lab,
    their extensions and the instructor's overrides. ``mine``: their events in the merged
    order (:func:`~labs.core.course.grading.load.merge_events`); ``hashes``: every hash they
    handed in."""
    flags, notes = check_student(plan, sid, mine, hashes)
    config = plan.config
    by_lab: dict[str, list[EventRecord]] = {}
    for e in mine:
        by_lab.setdefault(e.lab_id, []).append(e)
    uploads = plan.unreadable.get(sid, 0)
    empty = [lab for lab in plan.labs if not by_lab.get(lab.lab_id)]
    # an unreadable upload stands for the labs without events when the student handed in
    # nothing readable, or when the uploads can account for every such lab; else those labs
    # are Missing and a flag says which they may be
    unreadable = bool(uploads and empty) and (not mine or uploads >= len(empty))
    if uploads and not unreadable and empty:
        flags.append(f"unreadable_submission ({uploads} unreadable upload"
                     f"{'s' if uploads != 1 else ''} may be the work of "
                     f"{', '.join(lab.lab_id for lab in empty[:8])}, shown Missing)")
    for lab in plan.labs:
        g = grade_lab(sid, by_lab.get(lab.lab_id, []), lab, config,
                      deadline=lab.deadline_for(sid, config), unreadable=unreadable,
                      newest=plan.newest)
        book.grades[(sid, lab.lab_id)] = g
        if g.deadline is not None and lab.deadline is not None and g.deadline != lab.deadline:
            notes.append(f"{lab.lab_id}: extension to "
                         f"{g.deadline.strftime('%Y-%m-%d %H:%M')} UTC")
    book.student_flags[sid] = flags
    if notes:
        book.notes.setdefault(sid, []).extend(notes)
    _apply_overrides(book, sid, plan.overrides.get(sid, []))


def empty_book(plan) -> Gradebook:
    """A gradebook of the plan's class with no student graded yet."""
    return Gradebook(plan.config, plan.labs, [], {}, {}, {}, plan.warnings)


def grade(batch: Batch, config: CourseConfig | None = None, *,
          receipts: dict[str, list[str]] | None = None,
          overrides: list[Override] | None = None,
          lab_ids: list[str] | None = None) -> Gradebook:
    """Grade every student in ``batch`` (plus the roster) on every lab of ``config``.

    Without a configured lab list, the labs seen in the submissions are graded (with all of
    their items, the default rubric and no deadline); ``lab_ids`` keeps only those labs.
    Students are spelt as the roster spells them (the batch's events are renamed to match);
    ids compare by ``norm_id``. Overrides default to the config's ``overrides`` CSV. Raises
    ConfigError for an override or an extension that names no student or item of the class
    (with close matches; without a roster, an extension naming no graded student is in
    ``warnings`` unless it is one with leading zeros added or lost). The class-wide part is
    :func:`~labs.core.course.grading.plan.plan_class`; each student is
    :func:`grade_student`.
    """
    from labs.core.course.grading.plan import plan_class

    pieces = batch._pieces()
    files = list(batch.files) + [r for r, _ in pieces if all(r is not f for f in batch.files)]
    plan = plan_class(files, config, receipts=receipts, overrides=overrides, lab_ids=lab_ids)
    # a file the plan set aside (Canvas's test student's) is no one's
    batch.events, batch.hashes = merge_events([(r, e) for r, e in pieces if not r.skipped])
    batch.reindex()
    book = empty_book(plan)
    book.students = plan.students
    book.notices = plan.notices
    for sid in plan.students:
        grade_student(plan, book, sid, batch.for_student(sid),
                      batch.hashes.get(norm_id(sid), set()))
    return book
