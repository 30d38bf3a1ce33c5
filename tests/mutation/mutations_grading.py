"""Hand-written mutations for the grading area (run_mutations.py runs them).

Kept apart from mutations.py because grading changes often: when the grader is rewritten,
update the snippets here (``python tests/mutation/run_mutations.py --area grading --list``
names the stale ones) and run ``--area grading`` again. Each entry is one plausible mistake in
how a ledger becomes a grade: the answer rules (``labs/core/course/answers.py``), the score,
the course file, the class plan, the run at scale (chunks, the staging folder) and
``--merge``; ``tests`` name the grading tests that should catch it.

Rewritten for the new grader; of the list written for the old one, every rule still exists
and each mistake is kept with a new snippet (the tolerance's boundary and the reasoned rule
now live in answers.py; "the default tolerance" is now the rubric's default of None, each
item's own tolerance). None was dropped. Mistakes that were in both lists are here once.

Behaviour-neutral mutations (none is listed): a mutation that survives must either get a test
that kills it or be explained here.
"""

from run_mutations import Mutation as M

G = "labs/core/course/grading/"
ANSWERS = "labs/core/course/answers.py"
SCORE = G + "score.py"
CONFIG = G + "config.py"
RUN = G + "run.py"
MERGE = G + "merge.py"
PLAN = G + "plan.py"
#: Every grading test module, the fast rule tests first (about 50 s on the shared VM when
#: nothing fails; -x stops at the first failure).
GRADING_TESTS = ("tests/test_grading_rules.py tests/test_answers.py tests/test_grading_oracle.py "
                 "tests/test_grading.py tests/test_grading_course.py tests/test_grading_class.py "
                 "tests/test_grading_robust.py tests/test_grading_scale.py")
#: The instructor copy's switch (the slow export test included).
REVEAL_TESTS = "tests/test_reveal.py"

ANSWER_RULES = [
    M("grading.tolerance-strict", ANSWERS,
      "return big <= _decimal(factor) * small", "return big < _decimal(factor) * small",
      GRADING_TESTS, "< for <=: an answer exactly at the tolerance graded wrong"),
    M("grading.tolerance-binary-floats", ANSWERS,
      "    if r < factor * (1 - _NEAR):\n        return True",
      "    if True:\n        return r <= factor", GRADING_TESTS,
      "the tolerance's boundary compared in binary floats: 1.05 against 0.7 is outside 1.5"),
    M("grading.valueless-predict-counts", ANSWERS,
      'if _field(e, "kind") == "predict" and holds_value(_field(e, "payload")) and (',
      'if _field(e, "kind") == "predict" and (', GRADING_TESTS,
      "a predict without a value taken as the first prediction"),
    M("grading.last-prediction-graded", ANSWERS,
      '    for e in events:\n        if _field(e, "kind") == "predict"',
      '    for e in reversed(list(events)):\n        if _field(e, "kind") == "predict"',
      GRADING_TESTS, "the newest prediction graded instead of the first committed one"),
    M("grading.confidence-zero-reasoned", ANSWERS,
      "not isinstance(conf, bool) and conf in CONFIDENCE_LEVELS",
      "not isinstance(conf, bool) and 0 <= conf <= 5", GRADING_TESTS,
      "a confidence of 0 counts as reasoned"),
    M("grading.confidence-bool-reasoned", ANSWERS,
      "isinstance(conf, int) and not isinstance(conf, bool) and conf in CONFIDENCE_LEVELS",
      "isinstance(conf, int) and conf in CONFIDENCE_LEVELS", GRADING_TESTS,
      "a confidence of true counts as reasoned (true == 1)"),
    M("grading.blank-reason-reasoned", ANSWERS,
      "and isinstance(reason, str) and bool(reason.strip()))",
      "and isinstance(reason, str) and bool(reason))", GRADING_TESTS,
      "a reason of spaces counts as a reason"),
]

SCORING = [
    M("grading.unlock-before-predict-committed", SCORE,
      'ig.committed = not any(e.kind in ("unlock", "observe", "explain", "result")',
      'ig.committed = not any(e.kind in ("observe", "explain", "result")', GRADING_TESTS,
      "a prediction made after its instrument was unlocked still counts as committed"),
    M("grading.blank-explanation-counts", SCORE,
      'return len("".join(text.split()))', "return len(text)", GRADING_TESTS,
      "an explanation of spaces counts toward the minimum length"),
    M("grading.explanation-inner-whitespace-counts", SCORE,
      'return len("".join(text.split()))', "return len(text.strip())", GRADING_TESTS,
      "spaces and blank lines inside an explanation count toward its length"),
    M("grading.blank-observation-counts", SCORE,
      'observe = next((e for e in after if e.kind == "observe"\n'
      "                            and answer_text(e.payload).strip()), None)",
      'observe = next((e for e in after if e.kind == "observe"\n'
      '                            and answer_text(e.payload)), None)', GRADING_TESTS,
      "an observation of spaces counts as observed"),
    M("grading.second-predict-unflagged", SCORE,
      '                flags.append(f"second_predict ({item})")', "                pass",
      GRADING_TESTS, "a second prediction of an item not flagged"),
    M("grading.wrong-answer-earns-correct", SCORE,
      "+ r.correct * bool(ig.correct)", "+ r.correct * (ig.correct is not None)",
      GRADING_TESTS, "a wrong answer earns the correctness points (known, not right)"),
    M("grading.unknown-answer-earns-correct", SCORE,
      "+ r.correct * bool(ig.correct), ig.predicted_at)",
      "+ r.correct * (ig.correct is not False), ig.predicted_at)", GRADING_TESTS,
      "a prediction with nothing measured and no answer earns the correctness points"),
    M("grading.result-tolerance-ignored", SCORE,
      "    return within_factor(finite_number(value), a, tolerance)\n",
      "    return within_factor(finite_number(value), a, 1.5)\n", GRADING_TESTS,
      "the item's tolerance ignored when grading against a recorded result (1.5 for all)"),
    M("grading.last-reading-judged", ANSWERS,
      "    for e in later:\n        if _field(e, \"kind\") != \"result\":",
      "    for e in reversed(list(later)):\n        if _field(e, \"kind\") != \"result\":",
      GRADING_TESTS,
      "correctness judged against the last reading, not the first after the prediction"),
    M("grading.bool-answer-is-number", ANSWERS,
      "    if isinstance(value, bool) or not isinstance(value, numbers.Real):\n"
      "        return None\n",
      "    if not isinstance(value, numbers.Real):\n        return None\n", GRADING_TESTS,
      "a prediction of true graded as the number 1"),
    M("grading.late-days-floored", SCORE,
      "1.0 - per_day * math.ceil(lateness / timedelta(days=1))",
      "1.0 - per_day * math.floor(lateness / timedelta(days=1))", GRADING_TESTS,
      "lateness counted in whole days down: a part 23 hours late loses nothing"),
    M("grading.late-penalty-below-zero", SCORE,
      "return max(0.0, 1.0 - per_day * math.ceil(lateness / timedelta(days=1)))",
      "return 1.0 - per_day * math.ceil(lateness / timedelta(days=1))", GRADING_TESTS,
      "a very late part takes points away from others (factor below 0)"),
    M("grading.deadline-policy-keeps-points", SCORE,
      'factor = 0.0 if config.late_policy == "deadline" else late_factor(',
      'factor = 1.0 if config.late_policy == "deadline" else late_factor(', GRADING_TESTS,
      "a hard deadline keeps the points of work done after it"),
    M("grading.on-time-at-the-second", SCORE,
      "            if late > timedelta(0):\n                factor",
      "            if late >= timedelta(0):\n                factor", GRADING_TESTS,
      "work done exactly at the deadline called late"),
    M("grading.extension-ignored", SCORE,
      "deadline=lab.deadline_for(sid, config)", "deadline=lab.deadline", GRADING_TESTS,
      "a student's extension ignored"),
    M("grading.lab-override-ignored", SCORE,
      "    if g.override is not None:\n        return round(g.override, 4)\n",
      "", GRADING_TESTS, "an instructor's points for the whole lab ignored"),
    M("grading.unreadable-shown-missing", SCORE,
      'g.status = UNREADABLE if unreadable else "Missing"', 'g.status = "Missing"',
      GRADING_TESTS, "an unreadable submission shown as Missing"),
    M("grading.one-unreadable-marks-all", SCORE,
      "unreadable = bool(uploads and empty) and (not mine or uploads >= len(empty))",
      "unreadable = bool(uploads and empty)", GRADING_TESTS,
      "one unreadable upload marks every lab without events Unreadable"),
    M("grading.max-points-one-item", SCORE,
      "max_points=lab.rubric.per_item * len(lab.items)", "max_points=lab.rubric.per_item",
      GRADING_TESTS, "a lab's maximum counted as one item's"),
    M("grading.old-ledger-unflagged", SCORE,
      "against - e.time > STALE_AFTER", "against - e.time > STALE_AFTER * 10", GRADING_TESTS,
      "a ledger from a year before the deadline not flagged old"),
]

COURSE = [
    M("grading.default-tolerance", CONFIG,
      "    tolerance: float | None = None", "    tolerance: float | None = 1.5", GRADING_TESTS,
      "the rubric's default tolerance a fixed 1.5, replacing each item's own"),
    M("grading.item-tolerance-ignored", CONFIG,
      "        return own[item_id], \"\"", "        return 1.5, \"\"", GRADING_TESTS,
      "the grader keeps its own 1.5 instead of the item's tolerance"),
    M("grading.extension-shortens-deadline", CONFIG,
      "return max(ext, self.deadline)", "return ext", GRADING_TESTS,
      "an extension dated before the deadline shortens it"),
    M("grading.course-extensions-ignored", CONFIG,
      "            ext = course.extensions.get(norm_id(student_id))",
      "            ext = None", GRADING_TESTS, "course-wide extensions ignored"),
    M("grading.named-zone-utc", CONFIG,
      "        value = value.replace(tzinfo=zone)",
      "        value = value.replace(tzinfo=timezone.utc)", GRADING_TESTS,
      "a deadline in the course's named time zone read as UTC"),
    M("grading.ids-case-sensitive", G + "ids.py",
      'return unicodedata.normalize("NFKC", str(student_id)).strip().casefold()',
      'return unicodedata.normalize("NFKC", str(student_id)).strip()', GRADING_TESTS,
      "student ids compared case-sensitively: Ada01 and ada01 two students"),
    M("grading.growing-ledger-duplicate", G + "load.py",
      "if digest and digest == report.digest and first.source != e.source \\",
      "if first.source != e.source \\", GRADING_TESTS,
      "a growing ledger handed in twice noted as a duplicate"),
    M("grading.copies-by-source", G + "checks.py",
      'groups.setdefault(f.digest or f"source:{f.source}", []).append(f)',
      'groups.setdefault(f"source:{f.source}", []).append(f)', GRADING_TESTS,
      "copies of one file (same bytes, several students) not flagged"),
]

PLANNING = [
    M("grading.dropped-file-to-classmate", PLAN,
      "        if accounts and lms:", "        if False:", GRADING_TESTS,
      "a dropped student's file pointed at the closest classmate"),
    M("grading.canvas-test-student-graded", PLAN,
      "    if report.lms_id and name.startswith(TEST_STUDENT_PREFIX):\n        return True",
      "    if False:\n        return True", GRADING_TESTS,
      "Canvas's test student (Student View) graded as a student"),
    M("grading.newest-is-max", PLAN,
      "return newest[len(newest) // 2] if newest else None",
      "return newest[-1] if newest else None", GRADING_TESTS,
      "one clock a year ahead marks the whole class's events old (the newest, not the median)"),
    M("grading.chunk-loses-unreadable", PLAN,
      "{s: self.unreadable[s] for s in students if s in self.unreadable}", "{}",
      GRADING_TESTS, "a chunk sent to a worker forgets its students' unreadable uploads"),
    M("grading.chunk-loses-class-flags", PLAN,
      "{s: self.class_flags[s] for s in students if s in self.class_flags}", "{}",
      GRADING_TESTS, "a chunk forgets the flags that compare its students with the class"),
    M("grading.chunk-loses-overrides", PLAN,
      "{s: self.overrides[s] for s in students if s in self.overrides}", "{}",
      GRADING_TESTS, "a chunk forgets the instructor's overrides of its students"),
    M("grading.chunk-loses-newest", PLAN,
      "set(), [], self.newest)", "set(), [], None)", GRADING_TESTS,
      "a chunk forgets what events are old against: no old_timestamp flag in labs-grade"),
]

SCALE = [
    M("grading.chunk-boundary-twice", RUN,
      "part = plan.chunk(plan.students[i:i + size])",
      "part = plan.chunk(plan.students[i:i + size + 1])", GRADING_TESTS,
      "a chunk's last student is also the next chunk's first: their rows written twice"),
    M("grading.chunk-boundary-lost", RUN,
      "for n, i in enumerate(range(0, len(plan.students), size)):",
      "for n, i in enumerate(range(0, len(plan.students), size + 1)):", GRADING_TESTS,
      "one student between two chunks never graded"),
    M("grading.chunk-rows-twice", RUN,
      '                gb_writer.writerows(done["gradebook"])\n',
      '                gb_writer.writerows(done["gradebook"])\n'
      '                gb_writer.writerows(done["gradebook"])\n', GRADING_TESTS,
      "a chunk's gradebook rows written twice"),
    M("grading.chunk-file-order", RUN,
      "pieces.sort(key=lambda piece: piece[1][0].rank)",
      "pieces.sort(key=lambda piece: -piece[1][0].rank)", GRADING_TESTS,
      "a worker merges a student's files newest found first: another prediction is graded"),
    M("grading.spill-left-in-output", RUN,
      "    shutil.rmtree(spill, ignore_errors=True)\n", "", GRADING_TESTS,
      "the spilled events (every student's) left in the output folder"),
    M("grading.stale-staging-kept", G + "outdir.py",
      "        shutil.rmtree(path, ignore_errors=True)\n        if path.exists():",
      "        if path.exists():", GRADING_TESTS,
      "an interrupted run's staging folder not removed by the next run"),
    M("grading.live-run-staging-removed", G + "outdir.py",
      "        if int(pid) != os.getpid() and _alive(int(pid)):",
      "        if False:", GRADING_TESTS,
      "the staging folder of a run still going removed by another run"),
    M("grading.force-replaces-foreign", G + "outdir.py",
      "    foreign = sorted(names - OUTPUT_NAMES)", "    foreign = []", GRADING_TESTS,
      "--force replaces a folder holding files labs-grade did not write"),
    M("grading.stopped-run-keeps-output", G + "cli.py",
      "                shutil.rmtree(tmp, ignore_errors=True)  # gone already unless it failed",
      "                pass", GRADING_TESTS, "a stopped run keeps its partial output"),
    M("grading.merge-empty-row-wins", MERGE,
      "keep = (with_work or rows)[0][0]", "keep = rows[0][0]", GRADING_TESTS,
      "--merge keeps the first shard's Missing row over the shard where the student has work"),
    M("grading.merge-two-shards-unsaid", MERGE,
      "        if len(with_work) > 1:", "        if len(with_work) > 2:", GRADING_TESTS,
      "--merge says nothing of a student with work in two shards"),
    M("grading.merge-dropped-rows-kept", MERGE,
      "            if skip and (key[0], shard) in skip:", "            if False:",
      GRADING_TESTS, "--merge keeps a student's items and events rows from every shard"),
    M("grading.merge-files-header-repeated", MERGE,
      "                    if n == 0:\n                        writer.writerow(head)",
      "                    if True:\n                        writer.writerow(head)",
      GRADING_TESTS, "--merge writes files.csv's header once per shard"),
    M("grading.merge-canvas-shard-order", MERGE,
      "order = sorted(owner, key=lambda k: k)", "order = list(owner)", GRADING_TESTS,
      "--merge's canvas.csv in shard order, not the gradebook's"),
    M("grading.merge-ids-case-sensitive", MERGE,
      "    return norm_id(text), text", "    return text, text", GRADING_TESTS,
      "--merge orders and matches students by their id as spelt, not as the grader does"),
    M("grading.merge-stale-kept", MERGE,
      "    stale = clean_stale(target)", "    stale = []", GRADING_TESTS,
      "--merge leaves what an interrupted --merge left next to its output"),
]

OUTPUTS = [
    M("grading.feedback-last-reading", G + "feedback.py",
      "        head = _shown(ig.graded_actual, info, units)\n",
      "        head = _shown(results[-1].payload.get('actual'), info, units)\n", GRADING_TESTS,
      "the feedback page shows the last reading as the one graded"),
    M("grading.feedback-default-tolerance", G + "feedback.py",
      'value, actual, **({"tolerance": tolerance} if tolerance else {}))', "value, actual)",
      GRADING_TESTS,
      "the feedback page's words judge with the default tolerance, not the item's"),
    M("grading.items-csv-tolerance-source", G + "gradebook.py",
      "csv_safe(ig.tolerance_from or \"the item's own\")", "\"the item's own\"",
      GRADING_TESTS, "items.csv says an item's own tolerance where the course file set it"),
    M("grading.canvas-points-fixed", G + "canvas_csv.py",
      "return round(lab.rubric.per_item * len(lab.items), 2)", "return 10.0", GRADING_TESTS,
      "Canvas's points possible a fixed 10"),
    M("grading.reveal-any-value", "labs/core/course/quiz/reveal.py",
      "return value.strip().lower() in TRUE_VALUES", 'return value.strip() not in ("0", "")',
      REVEAL_TESTS, "ROOFLINE_REVEAL=false or off reveals the answers (only 0 read as no)"),
]

MUTATIONS = [*ANSWER_RULES, *SCORING, *COURSE, *PLANNING, *SCALE, *OUTPUTS]
