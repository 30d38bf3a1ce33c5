"""The README is a front door and the documentation site tells no student an answer.

* The README stays short (under 150 lines), keeps the test command `.ci/run` runs verbatim, and
  every file it links to exists.
* No text a student is sent to (the README, LABS_SPEC, every page in docs/, the docstrings the
  API reference renders) shows a lab's reference answer, found the way the labs' own leak test
  finds one (``tests/leak_support.py``): each lab is run in reveal mode and every reference
  answer it returns is searched for. In the docs a number can also be a date, a time or a
  benchmark's measurement, which are no answer: dates and times are scrubbed, and a benchmark's
  verbatim output (marked ``<!-- benchmark output: verbatim -->`` in the page) is left out; it
  appears on the measurement pages only, and what those benchmarks may print is checked below. A choice answer is searched
  by its key phrase when that phrase has two words or more (one word such as "memory-bound" is
  the vocabulary of every page), unless the sentence names every option of the question.
* The measurement pages record each benchmark with its command, date, machine and load, and
  leave out the figures that answer a lab's predictions (Lab 5's plateaus, Lab 7's profile table).
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

from leak_support import (BENCHMARK_OUTPUT, Cell, Reference, find_leaks, lab_files,
                          without_benchmark_output)

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
TEST_COMMAND = 'pip install -e ".[test]" && python -m pytest -q'
MEASUREMENT = DOCS / "measurement"
_DATE_TIME = re.compile(r"\b\d{4}-\d\d-\d\d(?:[T ]\d\d:\d\d(?::\d\d)?)?\b|\b\d\d:\d\d\b")


def student_texts() -> dict[str, str]:
    """Every Markdown text a student may be sent to, by its path."""
    files = [README, ROOT / "LABS_SPEC.md", *sorted(DOCS.rglob("*.md"))]
    return {str(f.relative_to(ROOT)): f.read_text(encoding="utf-8") for f in files}




def rendered_docstrings() -> dict[str, str]:
    """The docstrings of every module the API reference renders (``::: module`` lines): the
    module's, and those of its public functions, classes and their public members."""
    out = {}
    for page in sorted((DOCS / "reference").glob("*.md")):
        for name in re.findall(r"^::: ([\w.]+)", page.read_text(encoding="utf-8"), re.M):
            module = importlib.import_module(name)
            docs = [inspect.getdoc(module) or ""]
            for attr, obj in vars(module).items():
                where = getattr(obj, "__module__", None) or ""
                # a package face (hierarchy) renders what its private modules define
                if attr.startswith("_") or not (where == name or where.startswith(name + ".")):
                    continue
                docs.append(inspect.getdoc(obj) or "")
                if inspect.isclass(obj):
                    docs += [inspect.getdoc(m) or "" for n, m in vars(obj).items()
                             if not n.startswith("_")]
            out[name] = "\n".join(docs)
    return out


@pytest.fixture(scope="module")
def references(tmp_path_factory) -> list[Reference]:
    """Every lab's reference answers, as its instructor copy returns them."""
    from leak_support import collect_references  # one recorder of the reveal answers

    seen = [r for lab_file in lab_files(ROOT)
            for r in collect_references(lab_file, tmp_path_factory.mktemp(lab_file.stem))]
    assert {r.item_id.split(".")[0] for r in seen} >= {f"lab0{n}" for n in range(1, 8)}
    return seen


def _options() -> tuple[tuple[str, ...], ...]:
    """Every choice question's option labels (a sentence naming all of them is no answer)."""
    from labs.core import catalogue

    items = catalogue.items()
    items = items.values() if isinstance(items, dict) else items
    return tuple(tuple(label for label, _ in item.options) for item in items if item.options)


def _leaks(texts: dict[str, str], references: list[Reference]) -> list[str]:
    options = _options()
    cells = [Cell(i, path, text, options) for i, (path, text) in enumerate(texts.items())]
    numeric = [r for r in references if r.label is None]
    choices = [r for r in references if r.label is not None
               and len(key_phrase_of(r.label, options).split()) >= 2]
    return [str(leak) for leak in find_leaks(cells, numeric + choices)]


def key_phrase_of(label: str, options) -> str:
    from leak_support import key_phrase

    fellows = next((o for o in options if label in o), (label,))
    return key_phrase(label, fellows)


# --- the README ----------------------------------------------------------------------------


def test_readme_is_a_front_door():
    text = README.read_text(encoding="utf-8")
    lines = text.splitlines()
    assert len(lines) < 150, f"the README has {len(lines)} lines (a front door: < 150)"
    assert TEST_COMMAND in text
    assert TEST_COMMAND in (ROOT / ".ci" / "run").read_text(), ".ci/run runs the README's command"
    assert not re.search(r"\bissues? \d|#\d+\b", text), "no issue numbers in the README"
    for target in re.findall(r"\]\(((?!https?:)[^)#\s]+)", text):
        assert (ROOT / target).exists(), f"the README links to {target}, which does not exist"


def test_every_docs_page_is_in_the_navigation():
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    pages = [str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if "hooks" not in p.parts]
    assert pages and not [p for p in pages if p not in nav]


# --- no graded answer in what a student reads ----------------------------------------------


def test_leak_check_finds_an_answer_in_docs_text(references):
    """The check itself: an example that computes a graded case is found (a numeric answer with
    separators, and a choice answer's key phrase)."""
    numeric = next(r for r in references if r.label is None and r.value >= 1000)
    choice = next(r for r in references if r.label is not None
                  and len(key_phrase_of(r.label, _options()).split()) >= 2)
    text = (f"an example that prints {numeric.value:,.0f} exactly\n"
            f"so the answer is {key_phrase_of(choice.label, _options())}.")
    assert len(_leaks({"docs/example.md": text}, references)) == 2


def test_no_student_text_shows_a_reference_answer(references):
    texts = {p: without_benchmark_output(t) for p, t in student_texts().items()}
    leaks = _leaks(texts, references)
    assert not leaks, "graded answers in the README/docs:\n" + "\n".join(leaks)


def test_no_rendered_docstring_shows_a_numeric_reference_answer(references):
    numeric = [r for r in references if r.label is None]
    cells = [Cell(i, name, _DATE_TIME.sub(" ", text))
             for i, (name, text) in enumerate(rendered_docstrings().items())]
    leaks = [str(leak) for leak in find_leaks(cells, numeric)]
    assert not leaks, "graded answers in the API reference:\n" + "\n".join(leaks)


# --- the measurement pages -----------------------------------------------------------------


def _section(page: Path, heading: str) -> str:
    text = page.read_text(encoding="utf-8")
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end > 0 else None]


def test_docs_record_lab_7s_default_profile_without_its_answers():
    """One real run of benchmarks/bench_profile.py: its date, machine, load and wall times; the
    summary table (largest operator type, memory-bound share of a batch-1 decode step) is what
    Lab 7's predictions ask, so it is not quoted."""
    from labs.core import measure

    section = _section(MEASUREMENT / "instruments.md", "## Lab 7's default profile")
    assert "python benchmarks/bench_profile.py" in section
    assert re.search(r"20\d\d-\d\d-\d\d \d\d:\d\d UTC", section) and "load average" in section
    assert re.search(r"[\d.]+ s and [\d.]+ s wall", section)
    header = measure.markdown_summary([]).splitlines()[0]
    assert header not in section
    assert not re.search(r"\| decoder (decode|prefill), batch", section)
    assert not re.search(r"\b[A-Z]{3,}_[A-Z]{3,}\b|TBD|TODO", section)


def test_docs_record_lab_5s_staircase_run_without_its_plateaus():
    section = _section(MEASUREMENT / "instruments.md", "## The memory hierarchy")
    assert "python benchmarks/bench_hierarchy.py" in section
    assert re.search(r"20\d\d-\d\d-\d\d \d\d:\d\d UTC", section) and "load average" in section
    assert "| plateau |" not in section and "GB/s (best)" not in section


def test_benchmark_output_is_marked_on_the_measurement_pages_only():
    for path, text in student_texts().items():
        blocks = BENCHMARK_OUTPUT.findall(text)
        assert text.count("<!-- benchmark output") == len(blocks), f"{path}: an unclosed block"
        if blocks:
            assert path.startswith("docs/measurement/"), path
            for block in blocks:
                assert len(block) < 12_000, f"{path}: a long block left unchecked"


def test_every_recorded_benchmark_names_its_command_date_machine_and_load():
    for page in ("instruments.md", "speed.md"):
        text = (MEASUREMENT / page).read_text(encoding="utf-8")
        runs = text.count("**Recorded run")
        assert runs >= 2, page
        for block in text.split("**Recorded run")[1:]:
            head = block[:3000]
            assert re.search(r"20\d\d-\d\d-\d\d", head), f"{page}: a run without its date"
            assert "load" in head, f"{page}: a run without its load"
            assert re.search(r"EPYC|Xeon|GPU", head), f"{page}: a run without its machine"


# --- the examples in docs/ run, and say what they return ------------------------------------

_FENCE = re.compile(r"(?P<mark><!-- example: not run \((?P<why>[^)]*)\) -->\s*\n)?"
                    r"^```python[^\n]*\n(?P<code>.*?)^```\s*$", re.M | re.S)


def docs_examples() -> list[tuple[str, list[tuple[str, str | None]]]]:
    """Every page's ```python blocks, in page order, as (code, why it is not run or None). A
    block that is a fragment (a registry entry, undefined names, a timing run) is marked in the
    page with ``<!-- example: not run (why) -->`` on the line before its fence."""
    pages = []
    for page in sorted(DOCS.rglob("*.md")):
        blocks = [(m["code"], m["why"]) for m in _FENCE.finditer(page.read_text(encoding="utf-8"))]
        if blocks:
            pages.append((str(page.relative_to(ROOT)), blocks))
    return pages


def _stated_result(comment: str):
    """The Python literal a result comment starts with (``# 403.3 FLOP/B`` -> 403.3), or a
    marker that there is none. The longest prefix that is a literal wins."""
    import ast

    cuts = [i for i, ch in enumerate(comment) if ch in " :"] + [len(comment)]
    for cut in sorted(set(cuts), reverse=True):
        head = comment[:cut].rstrip(",")
        try:
            return head, ast.literal_eval(head)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            continue
    return None, _NO_RESULT


_NO_RESULT = object()


def _matches(shown: str, stated, value) -> bool:
    """``value`` rounds to what the page shows: a number to the digits written, a string,
    tuple or list item by item."""
    import decimal
    import numbers

    if isinstance(stated, (tuple, list)):
        parts = re.findall(r"'[^']*'|\"[^\"]*\"|[^,\s()\[\]]+", shown)
        return (isinstance(value, (tuple, list)) and len(value) == len(stated) == len(parts)
                and all(_matches(p, s, v) for p, s, v in zip(parts, stated, value)))
    if isinstance(stated, numbers.Number) and not isinstance(stated, bool):
        if not isinstance(value, numbers.Number):
            return False
        exponent = decimal.Decimal(shown.replace("_", "")).as_tuple().exponent
        return abs(value - stated) <= 0.5 * 10.0 ** exponent * (1 + 1e-9)
    return value == stated


def _run_page(page: str, blocks, seen: list | None = None) -> list[str]:
    """Runs a page's blocks in one namespace (a later block uses an earlier one's names);
    every expression followed by a ``# result`` comment line is checked against it. ``seen``
    collects the value of every expression and of every name the blocks bind."""
    import ast

    wrong, namespace = [], {"__name__": f"docs_example_{Path(page).stem}"}
    for code, why in blocks:
        tree = ast.parse(code, filename=page)  # a block not run must still be Python
        if why is not None:
            continue
        lines = code.splitlines()
        for stmt in tree.body:
            following = lines[stmt.end_lineno].strip() if stmt.end_lineno < len(lines) else ""
            if not isinstance(stmt, ast.Expr):
                exec(compile(ast.Module([stmt], []), page, "exec"), namespace)
                continue
            value = eval(compile(ast.Expression(stmt.value), page, "eval"), namespace)
            if seen is not None:
                seen.append(value)
            if not following.startswith("#"):
                continue
            shown, stated = _stated_result(following.lstrip("#").strip())
            if stated is _NO_RESULT:
                wrong.append(f"{page}: `{ast.unparse(stmt)}` is followed by a comment that "
                             f"does not start with its result: {following!r}")
            elif not _matches(shown, stated, value):
                wrong.append(f"{page}: `{ast.unparse(stmt)}` returns {value!r}; the page "
                             f"says {shown}")
    if seen is not None:
        seen += [v for k, v in namespace.items() if not k.startswith("__")]
    return wrong


@pytest.fixture
def device_registry_kept():
    """The device registry as it was before the test, after it: an example that registers or
    replaces a device leaves no trace (the public register/unregister, not the module's dict)."""
    from labs.core import hardware

    before = hardware.all_devices()
    yield
    for key in set(hardware.keys()) - {d.key for d in before}:
        hardware.unregister(key)
    for device in before:  # a built-in cannot be replaced, so only custom ones differ
        if hardware.get(device.key) is not device:
            hardware.register(device, replace=True)


@pytest.mark.parametrize("page,blocks", docs_examples(), ids=lambda v: v if isinstance(v, str) else "")
def test_docs_examples_run_and_return_what_the_page_says(page, blocks, tmp_path, monkeypatch,
                                                         device_registry_kept):
    """Every ```python block in docs/ runs (in a temporary folder, with a temporary ledger
    folder; the device registry is restored afterwards), and each result a comment states is what the
    code returns now, so an example made stale by a change fails here."""
    from labs.core import ledger

    if any(re.search(r"^\s*import torch", code, re.M) for code, why in blocks if why is None):
        pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(ledger.ENV_LEDGER_DIR, str(tmp_path / "ledgers"))
    wrong = _run_page(page, blocks)
    assert not wrong, "stale examples in docs/:\n" + "\n".join(wrong)


def test_docs_example_check_finds_a_stale_result():
    """The check itself: a stated result that is no longer returned fails, one that rounds to
    the value passes, and prose after an expression is refused."""
    ok = ("x = 2 / 3\nx\n# 0.667: two thirds\n(x, 'a b')\n# (0.67, 'a b'): a tuple\n", None)
    assert _run_page("docs/ok.md", [ok]) == []
    stale = ("x = 2 / 3\nx\n# 0.6: two thirds\n", None)
    assert len(_run_page("docs/stale.md", [stale])) == 1
    prose = ("x = 1\nx\n# the value of x\n", None)
    assert "does not start with its result" in _run_page("docs/prose.md", [prose])[0]
    assert _run_page("docs/skipped.md", [("undefined_name\n", "a fragment")]) == []


# --- code fences: every block opens and closes, and a command block starts with a command ---

_FENCE_LINE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_INLINE_CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)")
COMMAND_LANGUAGES = {"bash", "sh", "shell", "console", "zsh"}
# A command line: an optional "$ " prompt, then a variable assignment or a program (a word in
# lower case, a path, a quoted path), not a sentence; or a comment.
_COMMAND_START = re.compile(r'^(\$ )?([A-Z_][A-Z0-9_]*=\S*\s|"[^"]+"(\s|$)|'
                            r"[a-z0-9_.~/-][\w.~/@+-]*(\s|$))|^#")


def fence_problems(text: str) -> list[str]:
    """What would render a page's code wrongly: a fence that never closes, a closing fence with
    text after it (Markdown then takes the command and the prose after it as one inline code
    span, "bash python -m pip ..."), a fence marker inside a line of prose, and a command block
    (bash, sh, console) whose first line is not a command."""
    problems, open_fence, block = [], None, []
    for number, line in enumerate(text.splitlines(), 1):
        match = _FENCE_LINE.match(line)
        if open_fence is not None:
            start, fence, info = open_fence
            if match and match["fence"][0] == fence[0] and len(match["fence"]) >= len(fence):
                if match["info"].strip():
                    problems.append(f"line {number}: text after the closing fence of the "
                                    f"block opened on line {start}: {line.strip()[:60]!r}")
                first = next((b.strip() for b in block if b.strip()), "")
                if info in COMMAND_LANGUAGES and not _COMMAND_START.match(first):
                    problems.append(f"line {start}: a {info} block that does not start with a "
                                    f"command: {first[:60]!r}")
                open_fence, block = None, []
            else:
                block.append(line)
            continue
        if match:
            info = match["info"].strip().split()[0] if match["info"].strip() else ""
            if "`" in match["info"]:
                problems.append(f"line {number}: a fence with backticks after it: "
                                f"{line.strip()[:60]!r}")
            open_fence = (number, match["fence"], info.lower())
            continue
        prose = _INLINE_CODE.sub("", line)
        if "```" in prose or "~~~" in prose:
            problems.append(f"line {number}: a fence marker inside a line: {line.strip()[:60]!r}")
    if open_fence is not None:
        problems.append(f"line {open_fence[0]}: a code block that never closes")
    return problems


def test_every_code_block_in_what_a_student_reads_opens_closes_and_starts_right():
    problems = [f"{path}: {p}" for path, text in student_texts().items()
                for p in fence_problems(text)]
    assert not problems, "broken code fences:\n" + "\n".join(problems)


def test_fence_check_finds_a_command_run_into_prose():
    """The check itself: the shapes that rendered a command inline or as prose are found; a
    fence inside inline code (```` ```python ````) and an indented block are not."""
    run_in = "text\n\n```bash\npython -m pip install torch\n``` Without torch it still works.\n"
    assert any("text after the closing fence" in p for p in fence_problems(run_in))
    assert any("never closes" in p for p in fence_problems("```bash\nls\n"))
    prose = "```bash\nWithout torch every lab still works.\n```\n"
    assert any("does not start with a command" in p for p in fence_problems(prose))
    assert any("inside a line" in p for p in fence_problems("see ```bash ls here\n"))
    fine = ("Every ```` ```python ```` block runs, and ```so does this``` span.\n\n    ```bash\n    $ labs-grade --help\n"
            "    ```\n\n```bash\n# a comment first\nROOFLINE_LEDGER_DIR=/tmp x\n```\n"
            '```console\n"/path/python" -m pip install torch\n```\n')
    assert fence_problems(fine) == []


# --- no docs example computes a graded case -------------------------------------------------


def _numbers(value, depth: int = 0) -> list[float]:
    """The numbers in a value an example computes, as a student printing it would see them: a
    number; a tuple, list or dict item by item; an object's public attributes (one level)."""
    import numbers

    if isinstance(value, bool) or value is None or depth > 2:
        return []
    if isinstance(value, numbers.Real):
        return [float(value)]
    if isinstance(value, (tuple, list, set, frozenset)):
        return [x for item in list(value)[:50] for x in _numbers(item, depth + 1)]
    if isinstance(value, dict):
        return [x for item in list(value.values())[:50] for x in _numbers(item, depth + 1)]
    if inspect.ismodule(value) or inspect.isroutine(value) or inspect.isclass(value):
        return []
    fields = getattr(value, "__dict__", None)
    if isinstance(fields, dict) and depth == 0:
        return [x for k, item in fields.items() if not k.startswith("_")
                for x in _numbers(item, depth + 1)]
    return []


def _significant_digits(value: float) -> int:
    """How many significant digits the reference answer carries (3.9: 2; 29300.0: 3), at
    least 2."""
    digits = re.sub(r"e.*$", "", repr(value)).replace("-", "").replace(".", "").lstrip("0")
    return max(2, len(digits.rstrip("0")))


def gives_the_answer(computed: float, reference: Reference) -> bool:
    """``computed`` is ``reference``'s numeric answer to the digits the answer carries (a share
    in % also as a fraction)."""
    answer = float(reference.value)
    if answer == 0:
        return False
    n = _significant_digits(answer)
    same = lambda x: float(f"{x:.{n}g}") == float(f"{answer:.{n}g}")  # noqa: E731
    return same(computed) or (reference.units.strip() == "%" and same(computed * 100))


def example_answers(references: list[Reference], pages) -> list[str]:
    """Every graded numeric answer one of ``pages``' examples computes, with the page."""
    numeric = [r for r in references if r.label is None and isinstance(r.value, (int, float))]
    found = []
    for page, blocks in pages:
        seen: list = []
        _run_page(page, blocks, seen)
        values = [x for v in seen for x in _numbers(v)]
        found += [f"{page}: an example computes {x!r}, the answer to {r.item_id} ({r.value!r})"
                  for r in numeric for x in values if gives_the_answer(x, r)]
    return sorted(set(found))


def test_no_docs_example_computes_a_reference_answer(references, tmp_path, monkeypatch,
                                                     device_registry_kept):
    """Run every ```python example in docs/ and compare what each expression returns, and every
    name the examples bind, with the labs' numeric reference answers: an example whose
    arguments are a graded case gives its answer whether or not the page prints it."""
    from labs.core import ledger

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(ledger.ENV_LEDGER_DIR, str(tmp_path / "ledgers"))
    pages = [(page, blocks) for page, blocks in docs_examples()  # torch ones time this machine
             if not any(re.search(r"^\s*import torch", c, re.M) for c, why in blocks
                        if why is None)]
    found = example_answers(references, pages)
    assert not found, "docs examples compute graded answers:\n" + "\n".join(found)


def test_example_check_finds_a_graded_case(references, tmp_path, monkeypatch):
    """The check itself: an example that computes a graded case (a bare number, or a field of
    the object it returns) is found; a nearby number is not."""
    monkeypatch.chdir(tmp_path)
    numeric = next(r for r in references if r.label is None and r.value >= 1000)
    code = (f"from types import SimpleNamespace\nstep = SimpleNamespace(t={numeric.value!r} * 1.0001)"
            f"\nstep.t * 1.1\n")
    assert example_answers(references, [("docs/x.md", [(code, None)])])
    near = f"x = {numeric.value!r} * 1.1\n"
    assert not example_answers(references, [("docs/y.md", [(near, None)])])
