"""The source notebooks: clean, well-formed for nbgrader, executable, and graded right.

Grading uses one nbgrader course built for the session (see conftest.py): for
each level, the source itself (full marks), the blank release (zero), the blank
release with its test cells emptied (zero: nbgrader restores them) and the known
mistakes of ``tests/fixtures/level{N}.py`` (zero exactly on the tests each one
fails, full marks elsewhere, feedback naming it), all graded by a single
``nbgrader autograde`` per assignment.
"""

import re

import nbformat
import pytest

from autograders.editions.clean import clean_notebook
from autograders.editions.preprocessors import SOLUTION_HEADING, is_worked_solution
from tests.conftest import (
    all_notebooks,
    cell_text,
    filled,
    fixtures_for,
    ids,
    is_answer_cell,
    is_test_cell,
    level_notebooks,
    level_of,
    mistakes_for,
    nbgrader_meta,
    read,
)

NOTEBOOKS = all_notebooks()
LEVELS = level_notebooks()
GRADE_ID = re.compile(r"^(setup|q\d_\d_[a-z0-9_]+)$")
DECIMAL = re.compile(r"(?<![\d.,])(?:\d{1,3}(?:,\d{3})+|\d+)\.\d+(?!\d)")
# "Problem 2.2", "Solutions 2.2 and 2.3", "Rubric 2.2", "version 2.5": references, not quantities.
REFERENCE = re.compile(r"(problems?|solutions?|rubrics?|levels?|sections?|versions?|§)\s*$", re.IGNORECASE)

MISTAKE_CASES = [
    pytest.param(path, index, mistake, id=f"{path.stem}-{index:02d}-{mistake.cell}")
    for path in LEVELS
    for index, mistake in enumerate(mistakes_for(path))
]


def graded_cells(nb):
    return [cell for cell in nb.cells if "nbgrader" in cell.metadata]


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks in notebooks/"


# --- clean and well-formed ----------------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_clean(path):
    text = path.read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=4)
    assert set(nb.metadata) <= {"kernelspec", "language_info"}, "notebook metadata beyond the kernelspec"
    for cell in nb.cells:
        assert set(cell.metadata) <= {"nbgrader", "tags"}, f"cell {cell.id}: metadata {sorted(cell.metadata)}"
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None, f"cell {cell.id} has outputs"
    cleaned = nbformat.writes(clean_notebook(nbformat.reads(text, as_version=4))) + "\n"
    assert cleaned == text, f"run `python -m autograders clean {path.relative_to(path.parent.parent)}`"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_valid_nbformat(path):
    nbformat.validate(read(path))


# A code cell of JupyterLab 4.6 at 1280 px, the file browser open, shows 108 characters before it
# scrolls sideways (measured in Chromium: 846 px of 7.83 px characters); 100 leaves the margin.
CODE_WIDTH = 100


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_code_lines_fit_the_cell(path):
    long = [f"{cell.id}: {line}" for cell in read(path).cells if cell.cell_type == "code"
            for line in cell.source.splitlines() if len(line) > CODE_WIDTH]
    assert not long, f"code lines over {CODE_WIDTH} characters:\n" + "\n".join(long)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_grade_ids_unique_readable_and_cell_ids(path):
    cells = graded_cells(read(path))
    grade_ids = [nbgrader_meta(cell).get("grade_id") for cell in cells]
    duplicates = sorted({g for g in grade_ids if grade_ids.count(g) > 1})
    assert not duplicates, f"duplicated grade_ids (a copied cell?): {duplicates}"
    bad = [g for g in grade_ids if not isinstance(g, str) or not GRADE_ID.match(g)]
    assert not bad, f"grade_ids should match {GRADE_ID.pattern}: {bad}"
    mismatched = [(cell.id, g) for cell, g in zip(cells, grade_ids) if cell.id != g]
    assert not mismatched, f"cell id should equal grade_id (run clean): {mismatched}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_nbgrader_metadata(path):
    nb = read(path)
    problems = []
    for cell in graded_cells(nb):
        meta = nbgrader_meta(cell)
        gid = meta.get("grade_id")
        if meta.get("schema_version") != 3:
            problems.append(f"{gid}: schema_version {meta.get('schema_version')!r}, not 3")
        for key in ("grade", "solution", "locked"):
            if not isinstance(meta.get(key), bool):
                problems.append(f"{gid}: '{key}' should be true or false")
        if meta.get("grade") and not (isinstance(meta.get("points"), (int, float)) and meta["points"] > 0):
            problems.append(f"{gid}: a graded cell needs points > 0, has {meta.get('points')!r}")
        if (is_test_cell(cell) or is_answer_cell(cell)) and "raises-exception" not in cell.metadata.get("tags", []):
            # JupyterLab's Run All (and nbclient) go on past a cell with this tag: a blank
            # answer or a failing test must not stop the explorers below it from running.
            problems.append(f"{gid}: answer and test cells carry the tag raises-exception")
        if is_test_cell(cell):
            if not meta.get("locked"):
                problems.append(f"{gid}: a test cell must be locked")
            if not gid.endswith("_test"):
                problems.append(f"{gid}: a test cell's grade_id ends in _test")
            visible = re.sub(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", "", cell.source, flags=re.S)
            if not re.search(r"^_checks\.\w+\(", visible, re.M):  # the checks the cell imports itself
                problems.append(f"{gid}: no visible check before the hidden tests")
        elif is_answer_cell(cell):
            if meta.get("grade") or meta.get("locked"):
                problems.append(f"{gid}: an answer cell is grade: false, locked: false")
            lines = cell.source.split("\n")
            begin = [i for i, line in enumerate(lines) if line.strip() == "### BEGIN SOLUTION"]
            if len(begin) != 1 or "### END SOLUTION" not in cell.source:
                problems.append(f"{gid}: one ### BEGIN SOLUTION ... ### END SOLUTION region")
            elif not any(line.strip() for line in lines[: begin[0]]):
                problems.append(f"{gid}: no placeholder line before ### BEGIN SOLUTION")
        elif cell.cell_type == "markdown" and meta.get("solution"):
            if not meta.get("grade"):
                problems.append(f"{gid}: a written answer is grade: true with points")
        elif gid == "setup":
            if not meta.get("locked") or meta.get("grade") or meta.get("solution"):
                problems.append("setup: locked, not graded, not a solution")
        elif meta.get("grade") or meta.get("solution"):
            problems.append(f"{gid}: a {cell.cell_type} cell with grade={meta.get('grade')} solution={meta.get('solution')}")
    for cell in nb.cells:
        if is_worked_solution(cell):
            if "nbgrader" in cell.metadata:
                problems.append(f"{cell.id}: a worked solution must not be an nbgrader cell")
            if not SOLUTION_HEADING.match(cell.source):
                problems.append(f"{cell.id}: a worked solution starts with **Solution <level>.<problem>**")
        elif "BEGIN SOLUTION" in cell.source and not (is_answer_cell(cell) or nbgrader_meta(cell).get("solution")):
            problems.append(f"{cell.id}: a solution region outside an answer cell or a written answer")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_each_answer_has_a_test_after_it(path):
    nb = read(path)
    gids = [nbgrader_meta(c).get("grade_id") for c in nb.cells]
    for index, cell in enumerate(nb.cells):
        if is_answer_cell(cell):
            gid = nbgrader_meta(cell)["grade_id"]
            tests = [c for c in nb.cells[index + 1 :] if is_test_cell(c)]
            assert tests, f"{gid}: no test cell after it"
    assert "setup" in gids, "no setup cell"


# --- executes -----------------------------------------------------------------


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_source_executes_and_every_test_passes(path, executed_sources):
    nb, seconds = executed_sources[path.stem]
    problems = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        gid = nbgrader_meta(cell).get("grade_id", cell.id)
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if errors:
            problems.append(f"{gid}: {cell_text(cell)[-800:]}")
        stderr = [o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"]
        if stderr and is_test_cell(cell):
            problems.append(f"{gid} writes to stderr (nbgrader would score it 0): {''.join(stderr)[:400]}")
    assert not problems, "\n".join(problems)


# --- graded by nbgrader ---------------------------------------------------------


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_source_scores_full_marks(path, course):
    grades = course.grades(path.stem, "full")
    assert grades, course.log(path.stem)
    short = {gid: score for gid, score in grades.items() if score[0] != score[1]}
    assert not short, f"{short}\n{course.log(path.stem)}"


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_blank_release_runs_to_the_end_and_scores_zero(path, course):
    grades = course.grades(path.stem, "blank")
    assert grades, course.log(path.stem)
    scored = {gid: score for gid, score in grades.items() if score[0] != 0}
    assert not scored, f"a blank answer scored: {scored}"
    nb = course.autograded(path.stem, "blank")
    code = [cell for cell in nb.cells if cell.cell_type == "code"]
    # The sheet's cells and the answer cells run in the kernel, to the last one; the test cells never do: the
    # grader's checks write their outputs (a blank answer's "not yet"), so each has one; the explorers and the
    # predictions do not run when graded, and say so.
    graded = [cell for cell in code if "nbgrader" in cell.metadata and not is_test_cell(cell)]
    assert all(cell.execution_count is not None for cell in graded), "execution stopped before the end"
    others = [cell for cell in code if "nbgrader" not in cell.metadata]
    assert all(cell_text(cell).startswith("Not run when graded") and cell.execution_count is None for cell in others)
    silent = [cell.id for cell in code if is_test_cell(cell) and not cell.outputs]
    assert not silent, f"test cells without the checks' verdict: {silent}"
    timeouts = [cell.id for cell in code if "CellTimeoutError" in cell_text(cell)]
    assert not timeouts, f"cells timed out: {timeouts}"


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_emptied_test_cells_are_restored(path, course):
    """A blank release whose test cells were emptied (``pass``) still scores 0:
    autograde restores the locked test cells from the gradebook."""
    grades = course.grades(path.stem, "cheat")
    assert grades, course.log(path.stem)
    scored = {gid: score for gid, score in grades.items() if score[0] != 0}
    assert not scored, f"emptied tests scored: {scored}"


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_every_answer_cell_has_a_mistake(path):
    module = fixtures_for(path)
    assert module is not None, f"no tests/fixtures/level{level_of(path)}.py"
    nb = read(path)
    answers = {nbgrader_meta(c)["grade_id"] for c in nb.cells if is_answer_cell(c)}
    tests = {nbgrader_meta(c)["grade_id"] for c in nb.cells if is_test_cell(c)}
    mistakes = mistakes_for(path)
    unknown = [(m.cell, m.fails) for m in mistakes if m.cell not in answers or not set(m.fails) <= tests or not m.fails]
    assert not unknown, f"mistakes naming cells that are not answer / test cells: {unknown}"
    uncovered = sorted(answers - {m.cell for m in mistakes})
    assert not uncovered, f"answer cells with no Mistake in the fixtures: {uncovered}"


@pytest.mark.parametrize("path, index, mistake", MISTAKE_CASES)
def test_mistake_is_graded_and_named(path, index, mistake, course):
    """0 exactly on ``mistake.fails``, full marks elsewhere, and the feedback names it.

    Mistakes on different answer cells with disjoint ``fails`` share a submission
    (conftest.batches); a shared submission graded otherwise than expected is
    graded again with this mistake alone, and that grading is the one judged.
    """
    student = course.student_of(path.stem, index)
    assert student is not None, f"{mistake.cell} is not an answer cell of {path.name}"
    problems = course.mistake_problems(path.stem, student, index)
    assert not problems, f"{mistake.cell} <- {mistake.code!r} ({student}):\n" + "\n".join(problems)


# --- numbers ------------------------------------------------------------------


def _text(nb, kinds=("markdown", "code")):
    return "\n".join(cell.source for cell in nb.cells if cell.cell_type in kinds)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_numbers_are_computed(path):
    """Each number the fixtures list is in the notebook as every edition shows it (its ``{{...}}`` filled in) and
    is computed so. A number filled in from a declaration is not listed: the declaration computes it
    (tests/test_placeholders.py, and the sheet's own in tests/test_sheet_numbers.py)."""
    module = fixtures_for(path)
    assert module is not None, f"no fixtures for {path.name} in tests/fixtures/"
    text = _text(filled(path))
    problems = []
    for number in getattr(module, "NUMBERS", []):
        if not re.search(rf"(?<![\d.]){re.escape(number.literal)}(?![\d])", text):
            problems.append(f"{number.literal} is not in the notebook")
        if number.formatted() != number.literal:
            problems.append(f"{number.literal} is computed as {number.formatted()}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_every_decimal_in_the_prose_is_checked(path):
    """Every decimal typed in the prose (a placeholder's value is not typed) has a Number in the fixtures."""
    module = fixtures_for(path)
    assert module is not None, f"no fixtures for {path.name} in tests/fixtures/"
    literals = {n.literal.lstrip("+-−") for n in getattr(module, "NUMBERS", [])}
    unchecked = []
    for cell in read(path).cells:
        if cell.cell_type != "markdown":
            continue
        for match in DECIMAL.finditer(cell.source):
            line_before = cell.source[: match.start()].rsplit("\n", 1)[-1]
            if REFERENCE.search(re.sub(r"(\d+\.\d+\s*(,|and|&|or)?\s*)+$", "", line_before)):
                continue
            if match.group() not in literals:
                unchecked.append(match.group())
    assert not unchecked, f"decimals in the prose with no Number in the fixtures: {sorted(set(unchecked))}"


RANDOM_WEIGHTS = re.compile(r"from_seed\(|np\.random|default_rng\(|rng\.")
FIGURES_OF_WEIGHTS = ("heatmap", "head_grid", "cross_heatmap")


def _figure_calls(source):
    """The ``mha.plots.<figure>(...)`` calls of a cell's source, as ast.Call nodes."""
    import ast

    return [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute) and node.func.attr in FIGURES_OF_WEIGHTS
            and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "plots"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=ids(NOTEBOOKS))
def test_figures_of_random_weights_say_so(path):
    """A figure drawn in a cell that makes random projections or scores says "random (untrained) weights"
    (``untrained=True``); the heads built to mean something (mha.heads) need not."""
    unsaid = []
    for index, cell in enumerate(read(path).cells):
        if cell.cell_type != "code" or not RANDOM_WEIGHTS.search(cell.source):
            continue
        for call in _figure_calls(cell.source):
            said = any(k.arg == "untrained" and getattr(k.value, "value", None) is True for k in call.keywords)
            if not said:
                unsaid.append(f"cell {index}: mha.plots.{call.func.attr}(...) without untrained=True")
    assert not unsaid, "\n".join(unsaid)


def test_the_random_figures_check_sees_a_figure_that_does_not_say_so():
    calls = _figure_calls("block = mha.MultiHeadAttention.from_seed(16, 4)\nmha.plots.head_grid(w, title='x')")
    assert [c.func.attr for c in calls] == ["head_grid"]
    assert not any(k.arg == "untrained" for k in calls[0].keywords)
