"""What the instructor dashboard shows: items in lab order
with their question, plain numbers with units, the labs' option labels, ids as the student
wrote them (CSV escaping only in CSVs), figures that wrap long text and keep markers of the same
second apart, and student text shown as text everywhere (no element created from it).

The browser side (links, images, toolbar over titles, light and dark) is in
tests/browser/test_dashboard_browser.py.
"""

from __future__ import annotations

import html
import json
import math
import re
import types
from datetime import datetime, timedelta, timezone
from html.parser import HTMLParser

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labs.core import classroom, grading
from labs.core.course import catalogue
from labs.core.course.classroom import dashboard_figures
from labs.core.course.classroom.synth import HOSTILE_IDS, HOSTILE_TEXTS


@pytest.fixture(scope="module")
def hostile_class(tmp_path_factory):
    """A small synthetic class of the real labs' items plus the hostile ledgers."""
    folder = tmp_path_factory.mktemp("hostile")
    classroom.write_synthetic_class(folder, 12, seed=5)
    classroom.write_hostile_ledgers(folder)
    return folder


@pytest.fixture(scope="module")
def hostile(hostile_class):
    return classroom.load_class([hostile_class])


# --- order and names ------------------------------------------------------------------------


def test_items_come_in_lab_order_with_their_question(hostile):
    asked = catalogue.items()
    order = {i.item_id: n for n, i in enumerate(asked)}
    known = [i for i in hostile.items if i in order]
    assert known == sorted(known, key=order.get) and len(known) == len(asked)
    labs = [s.lab_id for s in hostile.items.values()]
    assert labs == sorted(labs, key=[e.lab_id for e in catalogue.catalogue()].index)
    ids = list(hostile.items)
    for item in asked:
        assert hostile.items[item.item_id].question == item.text
        assert hostile.items[item.item_id].title == item.text
    choices = hostile.item_choices()
    assert list(choices.values()) == ids  # one label per item, in lab order
    for label, item_id in choices.items():
        summary = hostile.items[item_id]
        assert label.startswith(f"{summary.lab_id} · ")
        assert label.endswith(item_id if len(item_id) <= 40 else item_id[:39] + "…")
        assert len(label) <= 90 + 2
        if summary.question:
            assert " ".join(summary.question.split())[:20] in label


# --- numbers, units, labels -----------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e-6, max_value=1e15, exclude_max=True) | st.integers(
    min_value=1, max_value=10**15 - 1), st.booleans(), st.sampled_from(["", "tokens", "×"]))
def test_plain_number_is_plain_and_reads_back(value, negative, units):
    value = -value if negative else value
    text = classroom.plain_number(value, units)
    number = text[: -len(units) - 1] if units else text
    assert "e" not in number.lower() and "×" not in number
    assert not units or text.endswith(" " + units)
    back = float(number.replace(",", ""))
    assert math.isclose(back, value, rel_tol=2e-6), (value, text)
    if isinstance(value, int) or float(value).is_integer():
        assert "." not in number


def test_plain_number_edges():
    assert classroom.plain_number(35100.0, "tokens") == "35,100 tokens"
    assert classroom.plain_number(0.135) == "0.135"
    assert classroom.plain_number(1234.5) == "1,234.5"
    assert classroom.plain_number(0) == "0"
    assert classroom.plain_number(3e20) == "3 × 10^20"
    assert classroom.plain_number(float("nan")) == "nan"
    assert classroom.plain_number("abc", "x") == "abc x"
    assert classroom.plain_number(True) == "True"
    assert classroom.plain_number(10**400, "x") == "1 × 10^400 x"  # no float in the way
    assert classroom.plain_number(-(10**400)) == "-1 × 10^400"


def test_numbers_and_labels_are_the_labs(hostile):
    numeric = next(s for s in hostile.items.values()
                   if s.answer_type == "numeric" and s.units and s.question)
    asked = catalogue.item(numeric.item_id)
    assert numeric.units == asked.units  # the lab's units, not what a file claims
    assert numeric.reference_text().endswith(" " + asked.units)
    assert "e+" not in numeric.reference_text()
    for r in numeric.rows:
        assert r.shown == classroom.plain_number(r.value, asked.units)
    choice = next(s for s in hostile.items.values() if s.answer_type == "choice" and s.question)
    labels = {label for label, _ in catalogue.item(choice.item_id).options}
    hostile_rows = [r for r in choice.rows if r.student_id in HOSTILE_IDS]
    assert hostile_rows, "the hostile ledgers answer the first lab's items"
    # the hostile files claim a label of their own; the dashboard shows the lab's
    assert all(r.shown in labels for r in choice.rows)
    assert choice.show(choice.options[0][1]) == choice.options[0][0]
    assert choice.reference_text() in labels


# --- ids as written; CSV escaping only in CSVs -------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), max_size=60))
def test_uncsv_undoes_csv_safe(text):
    assert classroom.uncsv(grading.csv_safe(text)) == text or text.startswith("'")


def test_ids_are_shown_as_written_and_escaped_only_in_csvs(hostile, hostile_class, tmp_path):
    assert set(HOSTILE_IDS) <= set(hostile.students)
    col = hostile.id_column
    shown = {r[col] for r in hostile.gradebook}
    assert set(HOSTILE_IDS) <= shown  # the table shows the ids as written ...
    csv_text = hostile.gradebook_csv().decode("utf-8-sig")
    assert "'=cmd|' /C calc'!A0" in csv_text and "'+sum(1)" in csv_text  # ... the CSV escapes
    out = tmp_path / "grades"
    grading.main([str(hostile_class), "-o", str(out)])
    from_events = classroom.load_class([out / "events.csv"])
    assert set(from_events.students) == set(hostile.students)
    assert set(from_events.items) == set(hostile.items)
    from_book = classroom.load_class([out / "gradebook.csv"])
    assert {r[next(iter(r))] for r in from_book.gradebook} == set(hostile.students)


# --- figures ----------------------------------------------------------------------------------


class _Tags(HTMLParser):
    """Every element a piece of HTML makes, including the HTML marimo carries in attributes:
    JSON strings (``data-html``, ``data-label``), ``{"mimetype": "text/html", "data": ...}``
    table cells, and every string of a plotly figure (plotly reads markup in all of them).
    Other JSON strings (a dropdown's options, a table's raw values) are data, shown as text."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "iframe" and "Plotly.newPlot" in (attrs.get("srcdoc") or ""):
            # outside a marimo server plotly draws into an iframe of its own (its scripts):
            # check the figure's strings, not plotly's page
            for literal in re.findall(r'"(?:[^"\\]|\\.)*"', attrs["srcdoc"]):
                self.found += elements(json.loads(literal))
            return
        self.found.append((tag, attrs))
        for name, value in attrs.items():
            if value and value.lstrip()[:1] in ('{', '[', '"'):
                try:
                    data = json.loads(value)
                    if isinstance(data, str) and data.lstrip()[:1] in ("[", "{"):
                        data = json.loads(data)  # a table's rows: JSON inside a JSON string
                except ValueError:
                    continue
                if isinstance(data, str):  # JSON-encoded HTML (data-html, data-label)
                    self.found += elements(data)
                else:
                    self.found += _json_elements(data, everything=(name == "data-figure"))


def _json_elements(data, everything: bool) -> list[tuple[str, dict]]:
    if isinstance(data, str):
        return elements(data) if everything else []
    found = []
    if isinstance(data, dict):
        if data.get("mimetype") == "text/html" and isinstance(data.get("data"), str):
            found += elements(data["data"])
        for v in data.values():
            found += _json_elements(v, everything)
    elif isinstance(data, list):
        for v in data:
            found += _json_elements(v, everything)
    return found


def _strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


def elements(text: str) -> list[tuple[str, dict]]:
    parser = _Tags()
    parser.feed(text)
    return parser.found


#: Elements student text could create if it were not escaped.
FORBIDDEN = {"img", "script", "a", "iframe", "object", "embed", "b", "svg", "math"}


def assert_no_element_from_student_text(text: str, where: str) -> None:
    for tag, attrs in elements(text):
        assert tag not in FORBIDDEN, f"{where}: <{tag} {attrs}> made from student text"
        for name, value in attrs.items():
            assert not name.startswith("on"), f"{where}: <{tag} {name}=...>"
            assert "evil.example" not in (value or "") or name.startswith("data-"), \
                f"{where}: <{tag} {name}={value!r}>"


def _figure_strings(fig) -> list[str]:
    return list(_strings(fig.to_plotly_json()))


def test_figures_show_student_text_literally(hostile):
    shown = []
    for item in hostile.items.values():
        shown.append(dashboard_figures.distribution_figure(item))
        shown.append(dashboard_figures.calibration_figure(hostile.calibration([item.item_id]),
                                             f"Calibration on {item.item_id}"))
    for sid in HOSTILE_IDS + ("tamper01",):
        shown.append(dashboard_figures.timeline_figure(hostile.timeline(sid), sid))
    seen = " ".join(html.unescape(s) for fig in shown for s in _figure_strings(fig))
    for fig in shown:
        for s in _figure_strings(fig):
            assert_no_element_from_student_text(s, "figure")
            assert "$" not in s, f"plotly would typeset {s!r} as LaTeX"
    # ... and the text is there, as typed
    assert "<img src=x onerror=alert(2)>" in seen and "[mallory](http://evil.example/m)" in seen


def test_long_text_is_wrapped_not_cut(hostile):
    long = "A very long option label that goes on and on " * 4
    item = classroom.ItemSummary(
        "lab01.long", "lab01", "choice", "", [], [], [], [], {},
        question="Which of these far too long labels would a student pick, if any at all, "
                 "given everything that came before in this long question?",
        options=((long, "a"), ("short", "b")))
    item.rows = [classroom.PredictionRow("s1", "lab01.long", "choice", v, None, "", 3, "", None)
                 for v in ("a", "a", "b")]
    item.rows = [classroom.PredictionRow(r.student_id, r.item_id, r.answer_type, r.value,
                                         item.show(r.value), "", 3, "", None) for r in item.rows]
    fig = dashboard_figures.distribution_figure(item)
    for label in fig.data[0].y:
        lines = label.split("<br>")
        assert len(lines) <= dashboard_figures._LABEL_LINES
        assert all(len(html.unescape(line)) <= dashboard_figures._LABEL_CHARS + 1 for line in lines)
    title_lines = re.sub(r"<span[^>]*>|</span>", "", fig.layout.title.text).split("<br>")
    assert all(len(html.unescape(line)) <= dashboard_figures._TITLE_CHARS + 13 for line in title_lines)
    # the title starts below the toolbar and the top margin holds every line
    assert fig.layout.title.pad.t - 15 >= dashboard_figures._TOOLBAR_PX  # 15 px glyphs above the baseline
    assert fig.layout.title.yref == "container"
    assert fig.layout.margin.t >= fig.layout.title.pad.t + dashboard_figures._TITLE_LINE_PX * (
        len(title_lines) - 1) + 5  # the last line's descent
    # the whole label is in the hover
    assert html.unescape(fig.data[0].customdata[0][0]).startswith(long.strip()[:60])


def test_timeline_markers_of_the_same_second_are_apart():
    t0 = datetime(2025, 3, 1, 9, 0, tzinfo=timezone.utc)

    def ev(item, kind, seconds, lab="lab01"):
        return {"time": t0 + timedelta(seconds=seconds), "lab": lab, "item": item, "kind": kind,
                "what": "", "valid": True, "flags": ""}

    rows = [ev("a", "predict", 0), ev("a", "unlock", 0.2), ev("a", "result", 0.4),
            ev("a", "predict", 0.5), ev("a", "explain", 600), ev("b", "predict", 30),
            ev("b", "unlock", 30), ev("c", "predict", 0, lab="lab02"),
            ev("c", "result", 0, lab="lab02")]
    pts = dashboard_figures.timeline_points(rows)
    assert len(pts) == len(rows)
    span = max(p["minutes"] for p in pts) - min(p["minutes"] for p in pts)
    for y in {p["y"] for p in pts}:
        row = sorted((p for p in pts if p["y"] == y), key=lambda p: p["n"])
        xs = [p["x"] for p in row]
        assert xs == sorted(xs), "drawn in the order they were written"
        assert all(b - a >= dashboard_figures.TIMELINE_GAP * span * 0.999 for a, b in zip(xs, xs[1:]))
        assert all(p["x"] >= p["minutes"] for p in row)
    far = next(p for p in pts if p["kind"] == "explain")
    assert far["x"] == far["minutes"]  # events far apart keep their true time
    assert {p["y"] for p in pts if p["item"] == "a"} != {p["y"] for p in pts if p["item"] == "b"}
    fig = dashboard_figures.timeline_figure(rows, "s1")
    xy = [(x, y) for tr in fig.data for x, y in zip(tr.x, tr.y)]
    assert len(set(xy)) == len(rows)


# --- the notebook, headless -----------------------------------------------------------------


@pytest.mark.slow
def test_dashboard_shows_hostile_text_as_text(hostile_class):
    """Every output of the dashboard, with the hostile ledgers loaded and the tampered
    student's flags (item ids with backticks, HTML, markdown) shown: no element is made from
    student text, and the text itself is there, escaped."""
    from labs import instructor_dashboard

    choice = next(i.item_id for i in catalogue.items() if i.kind == "choice")
    cli = {"ledgers": str(hostile_class), "config": "", "item": choice, "student": "tamper01"}
    outputs, defs = instructor_dashboard.app.run(defs={
        "source_form": types.SimpleNamespace(value=None),
        "upload": types.SimpleNamespace(value=[]), "cli_defaults": cli})
    assert defs["item"].item_id == choice and defs["student_picker"].value == "tamper01"
    page = ""
    for out in outputs:
        text = getattr(out, "text", None)
        if text is None:
            from marimo._output.formatting import try_format

            text = try_format(out).data
        page += str(text)
    assert_no_element_from_student_text(page, "dashboard")
    assert html.escape("<img src=x onerror=alert(1)>") in page or \
        "\\u0026lt;img src=x onerror=alert(1)\\u0026gt;" in page or "&amp;lt;img" in page
    assert "impossible_order" in page


def test_students_are_picked_by_id_and_roster_name(tmp_path):
    classroom.write_synthetic_class(tmp_path / "class", 3, seed=2)
    (tmp_path / "roster.csv").write_text("SIS User ID,Name,Email\n"
                                         "s0001,Ada Lovelace,ada@example.org\n"
                                         "s0002,<b>Bob</b>,bob@example.org\n")
    (tmp_path / "course.toml").write_text('[course]\nroster = "roster.csv"\n')
    cls = classroom.load_class([tmp_path / "class"], tmp_path / "course.toml")
    choices = cls.student_choices()
    assert choices["s0001 · Ada Lovelace"] == "s0001"
    assert choices["s0002 · <b>Bob</b>"] == "s0002"  # a name is text too (the dropdown's)
    assert choices["s0003"] == "s0003"
    assert sorted(choices.values()) == sorted(cls.students)
    assert {"Name", "Email"} <= set(cls.gradebook[0])
