import marimo

__generated_with = "0.25.2"
app = marimo.App(width="medium", app_title="Roofline Labs · instructor dashboard",
                 css_file="labs.css")


@app.cell
def _():
    import tempfile
    from pathlib import Path

    import marimo as mo

    from labs.core import classroom, grading, style

    return Path, classroom, grading, mo, style, tempfile


@app.cell
def _(mo):
    mo.md("""
    # Roofline Labs · instructor dashboard

    What a class predicted, how sure they were, and who has not finished. Point it at the
    ledgers students handed in (a folder, a zip as the LMS gives it, or single `.jsonl` files),
    or at `labs-grade`'s `events.csv`; a `gradebook.csv` alone shows the gradebook only.
    Start it with the folder already filled in:
    `marimo run labs/instructor_dashboard.py -- --ledgers submissions.zip --config course.toml`
    (add `--item lab01.crossover_n` or `--student s0042` to open on one item or student).
    Nothing is written anywhere; uploads go to a temporary folder. What students wrote (ids,
    reasons, explanations) is shown as text, exactly as written.
    """)
    return


@app.cell
def _(mo):
    # Widgets in their own cell. The form only loads on "Load the class" (not per keystroke).
    cli_defaults = {key: str(mo.cli_args().get(key) or "")
                    for key in ("ledgers", "config", "item", "student")}
    cli_defaults["student"] = mo.cli_args().get("student")  # a number to marimo: matched later
    source_form = mo.md("{ledgers}\n\n{config}").batch(
        ledgers=mo.ui.text(value=cli_defaults["ledgers"], full_width=True,
                           label="Ledgers: folders, zips or files, separated by commas"),
        config=mo.ui.text(value=cli_defaults["config"], full_width=True,
                          label="Course TOML (optional: deadlines, answers, roster)"),
    ).form(submit_button_label="Load the class")
    upload = mo.ui.file(filetypes=[".zip", ".jsonl", ".csv"], multiple=True,
                        label="…or upload ledgers / a zip / events.csv")
    return cli_defaults, source_form, upload


@app.cell
def _(mo, source_form, upload):
    mo.vstack([source_form, upload])
    return


@app.cell
def _(Path, cli_defaults, tempfile, upload):
    # Uploaded files go to a private temporary folder (names reduced to their last part).
    upload_dir = None
    if upload.value:
        upload_dir = tempfile.TemporaryDirectory(prefix="roofline-dashboard-")
        for _f in upload.value:
            _name = Path(_f.name).name or "upload.jsonl"
            (Path(upload_dir.name) / _name).write_bytes(_f.contents)
    chosen = dict(cli_defaults)
    return chosen, upload_dir


@app.cell
def _(chosen, classroom, grading, mo, source_form, style, upload_dir):
    _choice = source_form.value or chosen
    _inputs = [s.strip() for s in str(_choice.get("ledgers") or "").split(",") if s.strip()]
    if upload_dir is not None:
        _inputs.append(upload_dir.name)
    mo.stop(not _inputs, mo.callout(mo.md("Give a folder, zip or file of ledgers above, or "
                                          "upload them, then **Load the class**."),
                                    kind="neutral"))
    try:
        with mo.status.spinner(title="Reading and checking the ledgers ..."):
            cls = classroom.load_class(_inputs, str(_choice.get("config") or "").strip() or None)
        load_error = None
    except (ValueError, grading.ConfigError) as _exc:
        cls, load_error = None, str(_exc)
    mo.stop(cls is None, style.error_callout(load_error or "Nothing loaded.",
                                             title="The class could not be loaded."))
    return (cls,)


@app.cell
def _(cls, mo, style):
    _flagged = sum(1 for s in cls.students if cls.student_flags(s))
    _bad_files = sum(1 for f in cls.batch.files if f.problems) if cls.batch else 0
    _events = len(cls.batch.events) if cls.batch else 0
    mo.vstack([
        style.metric_cards([
            ("Students", f"{len(cls.students)}", "in the ledgers (and roster)"),
            ("Events", f"{_events:,}", "unique, duplicates merged"),
            ("Prediction items", f"{len(cls.items)}", f"in {len(cls.labs)} labs"),
            ("Flagged students", f"{_flagged}", "anomalies the grader found"),
            ("Files with problems", f"{_bad_files}", "see the files table"),
        ]),
        style.notice_list("Notes", cls.notes) if cls.notes else mo.md(""),
        mo.md(f"<small>Loaded in {cls.load_seconds:.1f} s from "
              f"{len(cls.sources)} source(s).</small>"),
    ])
    return


@app.cell
def _(chosen, cls, mo):
    # Items in lab order, named by their question (the catalogue of the labs).
    _choices = cls.item_choices()
    _start = next((k for k, v in _choices.items() if v == chosen.get("item")),
                  next(iter(_choices), None))
    item_picker = mo.ui.dropdown(options=_choices, value=_start, label="Prediction item",
                                 searchable=True, full_width=True)
    item_picker
    return (item_picker,)


@app.cell
def _(cls, item_picker, mo):
    mo.stop(item_picker.value is None, mo.md("_No prediction items in these ledgers._"))
    item = cls.items[item_picker.value]
    return (item,)


@app.cell
def _(item, mo, style):
    def _pct(x):
        return "n/a" if x is None else f"{100 * x:.0f}%"

    mo.vstack([
        style.text_block(item.title),
        style.metric_cards([
            ("Predicted", f"{item.n:,} / {len(item.students):,}", "first commits graded"),
            ("Predicted before unlocking", _pct(item.committed_share),
             "committed, not peeked"),
            ("Correct", _pct(item.correct_share), "grader's verdict"),
            ("True value", item.reference_text(),
             "median of what instruments showed" if item.answer_type == "numeric"
             else "what most instruments showed"),
            ("Not explained", f"{len(item.not_explained):,}", "predicted, no observe+explain"),
        ]),
    ])
    return


@app.cell
def _(classroom, cls, item, mo):
    mo.hstack([
        classroom.distribution_figure(item),
        classroom.calibration_figure(cls.calibration([item.item_id]),
                                     f"Calibration on {item.item_id}"),
    ], widths=[3, 2])
    return


@app.cell
def _(item, mo, style):
    _rows = [{"student": r.student_id, "prediction": r.shown, "confidence": r.confidence,
              "actual": item.show(r.actual),
              **({"off by ×": None if r.ratio is None else round(r.ratio, 2)}
                 if item.answer_type == "numeric" else {}),
              "correct": r.correct, "before unlock": r.committed, "explained": r.explained,
              "revised": r.revised, "reason": r.reason} for r in item.rows]
    _missing = [{"student": s, "missing": "prediction"} for s in item.not_predicted] + [
        {"student": s, "missing": "observe + explain"} for s in item.not_explained]
    _flags = [{"student": s, "flags": "; ".join(f)} for s, f in sorted(item.flags.items())]
    mo.ui.tabs({
        f"Predictions ({item.n:,})": style.text_table(_rows),
        f"Not finished ({len(_missing):,})": style.text_table(_missing),
        f"Grader flags ({len(_flags):,})": style.text_table(_flags),
    })
    return


@app.cell
def _(classroom, cls, mo):
    mo.vstack([
        mo.md("## The whole class: confidence against correctness, every item"),
        classroom.calibration_figure(cls.calibration(), "Calibration, all items"),
    ])
    return


@app.cell
def _(chosen, cls, mo):
    _choices = cls.student_choices()  # "id · name" when the roster has names
    _wanted = cls.find_student(chosen.get("student"))  # ids are text: "02310140" stays one
    _start = next((k for k, v in _choices.items() if v == _wanted), next(iter(_choices), None))
    student_picker = mo.ui.dropdown(options=_choices, value=_start, label="Student",
                                    searchable=True)
    mo.vstack([mo.md("## One student"), student_picker])
    return (student_picker,)


@app.cell
def _(classroom, cls, mo, student_picker, style):
    mo.stop(student_picker.value is None)
    _rows = cls.timeline(student_picker.value)
    _flags = cls.student_flags(student_picker.value)
    _notes = cls.student_notes(student_picker.value)
    mo.vstack([
        classroom.timeline_figure(_rows, student_picker.value),
        style.notice_list("Flags", _flags) if _flags else mo.md("_No flags for this student._"),
        style.notice_list("Notes", _notes, kind="info") if _notes else mo.md(""),
        style.text_table([{k: (v.strftime("%Y-%m-%d %H:%M:%S") if k == "time" and v else v)
                           for k, v in r.items()} for r in _rows], page_size=10),
    ])
    return


@app.cell
def _(cls, grading, mo, style):
    def _events_csv() -> bytes:
        import tempfile as _tempfile
        from pathlib import Path as _P

        with _tempfile.TemporaryDirectory() as _d:
            return grading.write_csv(grading.event_rows(cls.batch), _P(_d) / "events.csv",
                                     grading.EVENT_COLUMNS).read_bytes()

    mo.vstack([
        mo.md("## Gradebook"),
        mo.hstack([
            mo.download(data=cls.gradebook_csv, filename="gradebook.csv",
                        mimetype="text/csv", label="Download gradebook.csv"),
            mo.download(data=_events_csv, filename="events.csv", mimetype="text/csv",
                        label="Download events.csv", disabled=cls.batch is None),
        ], justify="start"),
        style.text_table(cls.gradebook),
    ])
    return


@app.cell
def _(classroom, cls, grading, mo, style):
    _files = [{k: classroom.uncsv(v) for k, v in f.items()}
              for f in (grading.file_rows(cls.batch) if cls.batch else [])]
    _bad = [f for f in _files if f["problems"] or f["skipped"]]
    mo.accordion({f"Files read ({len(_files):,}, {len(_bad):,} with problems or skipped)":
                  style.text_table(_bad or _files, page_size=10)})
    return


if __name__ == "__main__":
    app.run()
