"""What a level is as a whole: it opens with its learning objectives, in a student's words."""

import re

import pytest

from tests.conftest import NOTEBOOKS as NOTEBOOK_DIR, answer_head, ids, level_notebooks, read

LEVELS = level_notebooks()


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_a_level_opens_with_two_to_four_objectives(path):
    cells = read(path).cells
    assert cells[0].source.startswith("# "), "the level's title comes first"
    objectives = cells[1]
    assert objectives.cell_type == "markdown" and objectives.get("id") == "objectives"
    assert objectives.source.startswith("**After this level you can:**")
    items = re.findall(r"^- (.+)$", objectives.source, re.M)
    assert 2 <= len(items) <= 4, items
    assert all(item[0].islower() and item.endswith((";", ".", ";$", ".$")) for item in items)  # one sentence, a student's words


SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)
PACKAGES = ("mha_core", "autograders")


def _package_sources():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    return {path: path.read_text() for package in PACKAGES for path in (root / package).rglob("*.py")}


def test_no_solution_ships_in_a_package_a_student_imports():
    """A value answer (a number, matrices, a choice) cannot refuse a library call the way a function
    answer does (autograders.checks.own_work): its solution must simply not be importable. No line of
    a solution that builds a value (20 characters or more, comments dropped) is in mha_core or
    autograders."""
    sources = _package_sources()
    leaked = []
    for path in level_notebooks():
        for cell in read(path).cells:
            if cell.cell_type != "code" or cell.source.lstrip().startswith("def "):
                continue
            for block in SOLUTION.findall(cell.source):
                for line in (line.split("#")[0].strip() for line in block.splitlines()):
                    if len(line) >= 20:
                        leaked += [f"{path.stem}: {line!r} in {p.name}" for p, text in sources.items() if line in text]
    assert not leaked, "\n".join(leaked)


def _offered(module):
    """Every value ``module`` offers a student without arguments: its constants and what its
    functions return when called with none."""
    import inspect

    for name in dir(module):
        obj = getattr(module, name)
        if inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismodule(obj):
            if inspect.isfunction(obj) and obj.__module__ == module.__name__:
                parameters = inspect.signature(obj).parameters.values()
                if all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
                    try:
                        yield f"{name}()", obj()
                    except Exception:  # noqa: BLE001 - a function that needs more is no free answer
                        pass
            continue
        yield name, obj


@pytest.mark.parametrize("check_name", ["q4_4_previous_token", "q4_4_average_query"])
def test_the_by_hand_module_offers_no_answer_to_the_problems_it_serves(check_name, capsys):
    """4.4's data lives in autograders.student.by_hand, which students import: nothing it offers passes 4.4."""
    from autograders.checks import beyond
    from autograders.checks.feedback import WrongAnswer
    from autograders.student import by_hand

    passing = []
    for name, value in _offered(by_hand):
        try:
            getattr(beyond, check_name)(value)
        except (WrongAnswer, Exception):  # noqa: BLE001 - refused, whatever the way
            continue
        passing.append(name)
    capsys.readouterr()
    assert not passing, f"autograders.student.by_hand offers an answer to {check_name}: {passing}"


CORE = [path for path in LEVELS if path.stem.startswith("level")]
MAX_CELLS, MAX_WORDS = 45, 3000
MODEL_ANSWER = re.compile(r"### BEGIN SOLUTION\n.*?### END SOLUTION\n?", re.S)


def markdown_words(nb):
    """The words of Markdown a student works through: every Markdown cell but the rubrics, and of a written
    answer only what surrounds its model answer (the rubric, its graded examples and the model answer are
    the grader's; the graded release has none of them). Worked solutions count, without the graded
    examples that end them: a student reads them."""
    from autograders.common.rubric_cells import without_graded_examples

    words = 0
    for cell in nb.cells:
        if cell.cell_type != "markdown" or "rubric" in cell.metadata.get("tags", []):
            continue
        words += len(MODEL_ANSWER.sub("", without_graded_examples(cell.source)).split())
    return words


@pytest.mark.parametrize("path", CORE, ids=ids(CORE))
def test_a_core_level_is_light_enough_to_work_through(path):
    nb = read(path)
    assert len(nb.cells) <= MAX_CELLS, f"{path.stem}: {len(nb.cells)} cells (at most {MAX_CELLS})"
    assert markdown_words(nb) <= MAX_WORDS, f"{path.stem}: {markdown_words(nb)} words of Markdown (at most {MAX_WORDS})"


def test_the_word_count_skips_rubrics_and_model_answers_only():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("one two three"),
                nbformat.v4.new_markdown_cell("**Written answer, Problem 9.1:**\n\n### BEGIN SOLUTION\nfour five\n"
                                              "### END SOLUTION"),
                nbformat.v4.new_markdown_cell("**Rubric 9.1 (q9_1_explain, 1 point)**"),
                nbformat.v4.new_code_cell("x = 1  # six seven"),
                nbformat.v4.new_markdown_cell("**Solution 9.1**\n\nGraded examples (so that every grader gives the same "
                                              "points):\n\n1. \"eight\" **1 point**: nine.")]
    nb.cells[2].metadata["tags"] = ["rubric"]
    assert markdown_words(nb) == 3 + 4 + 2  # the written answer's heading, the solution's; not the model answer, rubric, examples


PROBLEM = re.compile(r"^#+\s+Problem (\d+\.\d+)", re.M)
STATEMENT_FIGURES = {"head-split-diagram"}  # 4.3: how a reshape cuts an array into heads, part of the statement


def _meta(cell):
    return cell.metadata.get("nbgrader", {})


def extras(nb):
    """{problem: the kinds of its extras}: beside its graded answers a problem may have a choice, a written
    answer, an explorer (a code cell run but not graded) and a prediction. A prediction belongs to the
    problem its name gives (predict_1_1_... to 1.1), wherever its explorer sits."""
    found, current = {}, None
    for cell in nb.cells:
        match = PROBLEM.search(cell.source) if cell.cell_type == "markdown" else None
        if match:
            current = match[1]
            found.setdefault(current, set())
            continue
        if "prediction" in cell.metadata.get("tags", []):
            found.setdefault(".".join(answer_head(cell.source).split("\n")[-1].split("=")[0].split("_")[1:3]), set()).add("prediction")
        elif current is None:
            continue
        elif cell.cell_type == "markdown" and _meta(cell).get("solution"):
            found[current].add("written")
        elif cell.cell_type == "code" and _meta(cell).get("solution") and "# one letter" in answer_head(cell.source):
            found[current].add("choice")
        elif cell.cell_type == "code" and not _meta(cell) and cell.get("id") not in STATEMENT_FIGURES:
            found[current].add("explorer")  # a widget, a figure or a demonstration: any cell run but not graded
    return found


@pytest.mark.parametrize("path", CORE, ids=ids(CORE))
def test_each_problem_keeps_at_most_two_extras(path):
    heavy = {problem: sorted(kinds) for problem, kinds in extras(read(path)).items() if len(kinds) > 2}
    assert not heavy, f"{path.stem}: problems with more than two of a choice, a written answer, an explorer and a " \
                      f"prediction: {heavy}"


def test_about_six_written_answers_in_the_core():
    written = [_meta(cell)["grade_id"] for path in CORE for cell in read(path).cells
               if cell.cell_type == "markdown" and _meta(cell).get("solution")]
    assert 5 <= len(written) <= 7, written
    repeated = {"q1_2_explain", "q4_1_derive", "q4_2_setup"}  # each repeated an autograded answer
    assert not repeated & set(written)


def test_the_extras_are_told_apart():
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("### Problem 9.1 — A test"),
                nbformat.v4.new_code_cell('why = None  # one letter: "A" or "B"'),
                nbformat.v4.new_markdown_cell("**Written answer, Problem 9.1:**"),
                nbformat.v4.new_code_cell("predict_9_1_x = None  # your prediction"),
                nbformat.v4.new_code_cell("predict_first('predict_9_1_x', predict_9_1_x)")]
    nb.cells[1].metadata["nbgrader"] = {"solution": True, "grade": False, "grade_id": "q9_1_why"}
    nb.cells[2].metadata["nbgrader"] = {"solution": True, "grade": True, "grade_id": "q9_1_explain", "points": 1}
    nb.cells[3].metadata["tags"] = ["prediction"]
    assert extras(nb) == {"9.1": {"choice", "written", "prediction", "explorer"}}


PLACEHOLDER = re.compile(r"^[A-Za-z_]\w* = None$")


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_an_answer_line_is_short_its_comment_above_it(path):
    """A student edits the placeholder line: a long comment at its end scrolled the line sideways after the
    first edit and hid the start of the code. Each value answer and prediction is one or more comment
    lines, then ``name = None`` alone, then (an answer) ``### BEGIN SOLUTION`` at once."""
    problems = []
    for cell in read(path).cells:
        answer = cell.cell_type == "code" and _meta(cell).get("solution")
        if not (answer or "prediction" in cell.metadata.get("tags", [])):
            continue
        lines = cell.source.split("\n")
        if lines[0].startswith("def "):
            continue
        code = next(k for k, line in enumerate(lines) if not line.startswith("#"))
        if code == 0 or not PLACEHOLDER.match(lines[code]):
            problems.append(f"{cell.get('id')}: {lines[:code + 1]}")
        elif answer and lines[code + 1] != "### BEGIN SOLUTION":
            problems.append(f"{cell.get('id')}: the placeholder is not directly before ### BEGIN SOLUTION")
        elif max(len(line) for line in lines[:code]) > 100:
            problems.append(f"{cell.get('id')}: a comment line of more than 100 characters")
    assert not problems, "\n".join(problems)


# An inline formula and the text right after it: JupyterLab's MathJax lets a line break fall between
# them, so "$d_k$." could put the full stop alone at the start of the next line. Punctuation after a
# formula goes inside it ("$d_k.$", a colon as "{:}" so it is not spaced as a relation).
INLINE_MATH = re.compile(r"(?<![\\$])\$(?!\$)(?P<body>[^$\n]+?)(?<![\\ ])\$(?!\$)(?P<after>[.,;:?!)]+)")
LONE_PUNCTUATION = re.compile(r"(?<![\\$])\$(?!\$)[^$\n]+?(?<![\\ ])\$(?!\$)[ \t]+[.,;:?!)](?=\s|$)")
CODE_SPAN = re.compile(r"(`+).+?\1", re.S)


def loose_punctuation(text):
    """The places in ``text`` (Markdown; code spans skipped) where punctuation follows an inline formula,
    attached or after a space, outside it."""
    prose = CODE_SPAN.sub(lambda m: "c" * len(m.group()), text)  # a code span reads as a word
    return [m.group() for pattern in (INLINE_MATH, LONE_PUNCTUATION) for m in pattern.finditer(prose)]


@pytest.mark.parametrize("path", ALL := sorted(NOTEBOOK_DIR.glob("*.ipynb")), ids=ids(ALL))
def test_no_punctuation_is_left_to_wrap_after_inline_math(path):
    found = [f"{cell.get('id')}: {hit!r}" for cell in read(path).cells if cell.cell_type == "markdown"
             for hit in loose_punctuation(cell.source)]
    assert not found, f"{len(found)} places, the first: " + "; ".join(found[:8])


def test_loose_punctuation_is_found():
    assert loose_punctuation("the width $d_k$. Then") == ["$d_k$."]
    assert loose_punctuation("the width $d_k$ . Then $h$, and $n$: so ($x$)") == ["$h$,", "$n$:", "$x$)", "$d_k$ ."]
    assert loose_punctuation("the width $d_k.$ Then $h,$ and $n{:}$ so ($x)$ and $$a$$. `$x$.` $5 and $6.") == []
    assert loose_punctuation("($W_i^Q),$ `W_Q[:, 0]`.") == []  # the full stop follows the code, not the formula
