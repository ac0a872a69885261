"""Silent until asked: within a problem, the order is predict -> answer -> explore -> solution.

What a student sees above an answer must not answer it, whatever kind of answer it is (a number, a
choice, a written answer). The executed-output check of ``test_predict_first`` catches a number or a
shape printed too early; these rules catch what no value comparison can:

- an explorer a prediction unlocks (``predict_first``) explains the idea it shows (its "because"
  line, its readouts), so it opens only below every answer of its problem, written ones included;
- an ungraded code cell between two answers of a problem runs before the second is asked;
- a cell that invites the student to edit it ("change me", "try", "move") can be set to the
  problem's own numbers, so it comes after the problem's answers, unless it only draws something
  that is part of the question (STATEMENT_PLAYGROUNDS, each with the reason it gives nothing away);
- any other cell run above an answer (a figure, a demonstration) shows something before the
  question is answered: it is a statement playground or it moves below;
- a labelled choice's right option and a written answer's rubric state the answer in formulas: none
  of them (:func:`telltales`) is written in the Markdown above the question, its hints and the
  statement's other lines included (tests/test_predict_first.py looks for them, and for the rubric's
  numbers, in every output above it).
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
    "explore-5-4-heads": "5.4: the learned heads' patterns are what the question asks the student to read",
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
            elif i < first and cell.get("id") not in STATEMENT_PLAYGROUNDS and not _is_data(cell):
                found.append(f"{where} shows something above an answer of its problem")
    return found + stated_above(nb)


def _is_data(cell):
    return cell.source.lstrip().startswith("predict_") or "prediction" in cell.metadata.get("tags", [])


# --- what a choice's right option and a written answer's rubric say ------------------------------

MATH = re.compile(r"\$\$?([^$]+)\$\$?")
OPTION = re.compile(r"^\s*- \*\*([A-D])(?:\.\*\*| ?\*\* ?—)(.*)$", re.M)
OPERATOR = re.compile(r"[·×^/+\\-]")
SOLVED_LETTER = re.compile(r'### BEGIN SOLUTION\n\s*\w+\s*=\s*"([A-D])"')
TEX = [(r"\\(text|mathrm|operatorname|mathbf|mathbb)\{([^{}]*)\}", r"\2"), (r"\\(left|right|,|;|!|quad)", ""),
       (r"\\cdot", "·"), (r"\\times", "×"), (r"\^\{?\\top\}?", "^T"), (r"\\top", "T"), (r"\\tfrac|\\dfrac", r"\\frac"),
       (r"²", "^2"), (r"[{}\s]", "")]


def plain(formula):
    """A formula as plain comparable text: ``h \\cdot n^{2}`` and ``h · n^2`` are both ``h·n^2``."""
    for pattern, repl in TEX:
        formula = re.sub(pattern, repl, formula)
    return formula


NUMBER = re.compile(r"(?<![\w.,])(?:\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+\.\d+|\d{3,})(?![\w,]|\.\d)")


def _formulas(text):
    """The formulas ``text`` writes, each without the punctuation a sentence puts inside its mathematics
    (``$d_k = 64.$``, ``$x{:}$``: the notebooks keep a full stop with its formula)."""
    return {re.sub(r"(?:[.,;:]|\{[,;:]\})+$", "", plain(m).strip()) for m in MATH.findall(text)}


def _numbers(text):
    """The numbers of three digits or more, or with decimals, that ``text`` writes (``98{,}304`` as 98,304)."""
    return set(NUMBER.findall(text.replace("{,}", ",")))


def _question(cell):
    """A problem statement without its list of options (the options are the question, not its answer)."""
    return OPTION.sub("", cell.source)


def telltales(nb):
    """{answer grade_id: formulas its right option (a choice) or its rubric's points (a written answer)
    state that the problem's statement does not: an equation, a formula of five characters or more with an
    operator, a number of three digits or more or with decimals}."""
    found = {}
    for problem, cells in problems_with_heading(nb):
        heading = cells[0][1]
        options = dict((letter, text) for letter, text in OPTION.findall(heading.source))
        asked = _formulas(_question(heading))
        for i, cell in cells[1:]:
            gid = nbgrader_meta(cell).get("grade_id")
            if not _is_answer(cell):
                continue
            if cell.cell_type == "code" and SOLVED_LETTER.search(cell.source) and options:
                said = options.get(SOLVED_LETTER.search(cell.source)[1], "")
            elif cell.cell_type == "markdown" and i + 1 < len(nb.cells) and "rubric" in nb.cells[i + 1].metadata.get("tags", []):
                said = "\n".join(line for line in nb.cells[i + 1].source.split("Graded examples")[0].splitlines()
                                  if line.startswith("- **"))
            else:
                continue
            formulas = {f for f in _formulas(said) if f not in asked and ("=" in f or (len(f) >= 5 and OPERATOR.search(f)))}
            formulas |= _numbers(said) - _numbers(heading.source)
            if formulas:
                found[gid] = formulas
    return found


def problems_with_heading(nb):
    """[(problem, [(index, cell), ...])] as :func:`problems`, each list starting with its heading cell."""
    found = []
    for problem, cells in problems(nb):
        heading = next(i for i, cell in enumerate(nb.cells) if cell.cell_type == "markdown"
                       and (m := HEADING.search(cell.source)) and m[1] == problem)
        found.append((problem, [(heading, nb.cells[heading]), *cells]))
    return found


def stated_above(nb):
    """["<answer>: its right option / rubric's <formula> is written above it in <cell>"]."""
    said, found = telltales(nb), []
    for problem, cells in problems_with_heading(nb):
        for i, cell in cells:
            gid = nbgrader_meta(cell).get("grade_id")
            for j, above in cells:
                if j >= i or gid not in said or above.cell_type != "markdown" or nbgrader_meta(above):
                    continue
                text = _question(above) if j == cells[0][0] else above.source
                for formula in sorted(said[gid] & (_formulas(text) | _numbers(text))):
                    found.append(f"{problem}: {gid}'s answer ${formula}$ is written above it, in cell {above.get('id')}")
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


CHOICE = {"nbgrader": {"solution": True, "grade": False, "grade_id": "q9_1_why"}}
RUBRIC = {"tags": ["rubric"]}
STATEMENT = ("### Problem 9.1 — A test\n\n- **A.** The heads are summed.\n"
             "- **B.** The heads are concatenated: $h \\cdot d_v = d_{\\text{model}}$.")
SOLVED_B = 'why = None  # one letter: "A" or "B"\n### BEGIN SOLUTION\nwhy = "B"\n### END SOLUTION'
RUBRIC_9_1 = ("**Rubric 9.1 (q9_1_explain, 1 point)**\n\n- **1 point**: writes the score $s_{ij} = q_i k_j$ and "
              "the cost $h \\cdot n^2$, 102,400 multiply-adds.")


# The examples of the issue that asked for this test, each as it was: each must be found.
ISSUE_EXAMPLES = {
    "5.1 (d): the reveal after the prediction states the rubric's point": [
        ("md", "**Now check.** At $d_k = 1$ the score is $s_{ij} = q_i k_j$: one ranking of the keys.", {}),
        ("md", "**Written answer, Problem 9.1:**", WRITTEN), ("md", RUBRIC_9_1, RUBRIC)],
    "3.1: the FLOP plot above the written answer prints h · n²": [
        ("code", "x = None", ANSWER), ("code", "mha.plots.flop_plot(d_model=512, n=10)", {}),
        ("md", "**Written answer, Problem 9.1:**", WRITTEN), ("md", RUBRIC_9_1, RUBRIC)],
    "1.2: the shape table above the choice shows the concatenation's width": [
        ("code", "mha.widgets.predict_first('p', p)  # the shape explorer", {}), ("code", SOLVED_B, CHOICE)],
    "4.1: the parameter explorer spells out the derivation above the written answer": [
        ("code", "x = None", ANSWER), ("code", "mha.widgets.predict_first('p', p)  # the parameter explorer", {}),
        ("md", "**Written answer, Problem 9.1:**", WRITTEN), ("md", RUBRIC_9_1, RUBRIC)],
    "2.2: Run All prints the measured standard deviations above the choice": [
        ("code", "print(np.std(q @ k.T), np.std(q @ k.T / 8))", {}), ("code", SOLVED_B, CHOICE)],
    "4.2: q_demo, to edit, above the answers": [
        ("code", "q_demo = np.array([0.3, 0.8])  # change me", {}), ("code", "x = None", ANSWER)],
    "a choice's right option written out above it": [
        ("md", "Remember: $h \\cdot d_v = d_{\\text{model}}$.", {}), ("code", SOLVED_B, CHOICE)],
}


@pytest.mark.parametrize("example", sorted(ISSUE_EXAMPLES))
def test_each_example_of_the_issue_is_found(example):
    nb = _notebook(("md", STATEMENT, {}), *ISSUE_EXAMPLES[example])
    assert leaks(nb), example


def test_the_right_option_and_the_rubric_are_read():
    nb = _notebook(("md", STATEMENT, {}), ("code", SOLVED_B, CHOICE), ("md", "**Written answer, Problem 9.1:**", WRITTEN),
                   ("md", RUBRIC_9_1, RUBRIC))
    assert telltales(nb) == {"q9_1_why": {"h·d_v=d_model"}, "q9_1_explain": {"s_ij=q_ik_j", "h·n^2", "102,400"}}
    assert not leaks(nb)  # the statement's options are the question, not its answer
