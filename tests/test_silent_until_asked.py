"""Silent until asked: within a problem, the order is predict -> answer -> explore -> solution.

What a student sees above an answer must not answer it, whatever kind of answer it is (a number, a
choice, a written answer). The executed-output check of ``test_predict_first`` catches a number or a
shape printed too early; these rules catch what no value comparison can:

- an explorer a prediction unlocks (``predict_first``) explains the idea it shows (its "because"
  line, its readouts), so it opens only below every answer of its problem, written ones included;
- an ungraded code cell between two answers of a problem runs before the second is asked;
- a cell that invites the student to edit it ("change me", "try", "move") can be set to the
  problem's own numbers, so it comes after the problem's answers, unless it only draws something
  that is part of the question (STATEMENT_PLAYGROUNDS, each with the reason it gives nothing away).
"""

import re

import pytest

from tests.conftest import ids, level_notebooks, nbgrader_meta, read

LEVELS = level_notebooks()
HEADING = re.compile(r"^#+\s+Problem (\d+\.\d+)", re.M)
INVITES = re.compile(r"change me|#\s*(try|change|move|slide)\b", re.I)
STATEMENT_PLAYGROUNDS = {
    # cell id -> why editing it before answering gives nothing away
    "head-split-diagram": "4.3: draws how a reshape cuts any (n, d_model) array into heads; computes no attention",
    "try-a-head": "4.4 (a): a sandbox for building the head; it shows the pattern of the student's own matrices",
}


def _is_answer(cell):
    return bool(nbgrader_meta(cell).get("solution"))  # code answers and written (markdown) answers


def problems(nb):
    """[(problem, [(index, cell), ...])]: the cells under each "Problem X.Y" heading, to the next."""
    found, current = [], None
    for i, cell in enumerate(nb.cells):
        match = HEADING.search(cell.source) if cell.cell_type == "markdown" else None
        if match:
            current = (match[1], [])
            found.append(current)
        elif current is not None:
            current[1].append((i, cell))
    return found


def _invites_editing(nb, i):
    cell, before = nb.cells[i], nb.cells[i - 1]
    if cell.cell_type != "code" or nbgrader_meta(cell):
        return False
    lead = before.source.strip().rsplit("\n", 1)[-1] if before.cell_type == "markdown" else ""
    return bool(INVITES.search(cell.source)) or bool(re.search(r"\bTry (it|other|a few)\b", lead))


def leaks(nb):
    found = []
    for problem, cells in problems(nb):
        answers = [i for i, cell in cells if _is_answer(cell)]
        if not answers:
            continue
        first, last = answers[0], answers[-1]
        for i, cell in cells:
            if cell.cell_type != "code" or nbgrader_meta(cell) or i > last:
                continue
            where = f"{problem}: cell {cell.get('id')} ({cell.source.splitlines()[0][:60]!r})"
            if "predict_first(" in cell.source:
                found.append(f"{where} opens an explorer above an answer of its problem")
            elif first < i and not cell.source.lstrip().startswith("predict_"):
                found.append(f"{where} runs between two answers of its problem")
            elif _invites_editing(nb, i) and cell.get("id") not in STATEMENT_PLAYGROUNDS:
                found.append(f"{where} invites editing above an answer of its problem")
    return found


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_nothing_above_an_answer_answers_it(path):
    assert not leaks(read(path)), "\n".join(leaks(read(path)))


def test_the_statement_playgrounds_exist_and_sit_before_their_answers():
    cells = {cell.get("id"): cell for path in LEVELS for cell in read(path).cells}
    assert set(STATEMENT_PLAYGROUNDS) <= set(cells)


def _notebook(*cells):
    import nbformat

    nb = nbformat.v4.new_notebook()
    for kind, source, meta in cells:
        cell = (nbformat.v4.new_markdown_cell if kind == "md" else nbformat.v4.new_code_cell)(source)
        cell.metadata.update(meta)
        nb.cells.append(cell)
    return nb


ANSWER = {"nbgrader": {"solution": True, "grade": False, "grade_id": "q9_1_x"}}
WRITTEN = {"nbgrader": {"solution": True, "grade": True, "grade_id": "q9_1_explain", "points": 1}}


@pytest.mark.parametrize("cells, expected", [
    ([("code", "predict_first('p', p)", {}), ("code", "x = None", ANSWER)], "opens an explorer"),
    ([("code", "x = None", ANSWER), ("code", "predict_first('p', p)", {}), ("md", "w", WRITTEN)],
     "opens an explorer"),
    ([("code", "x = None", ANSWER), ("code", "print(np.std(dots))", {}), ("md", "why", WRITTEN)], "between two"),
    ([("code", "q_demo = np.array([0.3, 0.8])  # change me", {}), ("code", "x = None", ANSWER)], "invites editing"),
])
def test_each_kind_of_leak_is_found(cells, expected):
    nb = _notebook(("md", "### Problem 9.1 — A test", {}), *cells)
    assert any(expected in line for line in leaks(nb)), leaks(nb)
    fixed = _notebook(("md", "### Problem 9.1 — A test", {}), *[c for c in cells if c[2]],
                      *[c for c in cells if not c[2]])
    assert not leaks(fixed)
