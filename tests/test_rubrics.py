"""Every written answer (a markdown cell graded by hand) has its rubric right after it.

A rubric is a markdown cell tagged ``rubric``, with no nbgrader metadata, whose
first line is ``**Rubric <problem> (<grade_id>, <P> points)**``, then one bullet
per point or half point, ``- **1 point**: states that ...``, adding up to the
graded cell's points, and a last line ``Usual partial answers: ...``. A student can open it
below the answer before writing, so it holds no model answer: no graded example, no quoted answer
given its points, no option letter of the problem's labelled choice. The two or three graded examples
that make every grader give the same points (``1. "<an answer>" **<n> points**: why``, each worth no
more than the cell, not all worth the same) end the problem's worked solution, folded as the solution;
the formgrader and the answer key show them under the rubric.
"""
import re
from fractions import Fraction

import pytest

from tests.conftest import answer_head, ids, level_notebooks, nbgrader_meta, read

LEVELS = level_notebooks()
RUBRIC_TAG = "rubric"
POINTS = r"(\d+(?:\.\d+)?|½|\d+½)"
HEADER = re.compile(rf"^\*\*Rubric (\d+\.\d+) \((\w+), {POINTS} points?\)\*\*$")
BULLET = re.compile(rf"^- \*\*{POINTS} points?\*\*: \S")
PARTIAL = "Usual partial answers: "
EXAMPLES = "Graded examples (so that every grader gives the same points):"
EXAMPLE = re.compile(rf'^\d\. ".+" \*\*{POINTS} points?\*\*: \S')
GRADED_QUOTE = re.compile(rf'"[^"]+"\s*\*\*{POINTS} points?\*\*')  # a quoted answer and its points
OPTION = re.compile(r"\boptions? [A-D]\b")


def example_problems(solution, gid, max_points):
    """What is wrong with the graded examples that end the worked solution ``solution`` of ``gid``."""
    from autograders.common.rubric_cells import graded_examples

    if solution is None:
        return [f"{gid}: no worked solution to hold its graded examples"]
    block = graded_examples(solution.source).split("\n")
    examples = [EXAMPLE.match(line) for line in block if re.match(r"^\d\. ", line)]
    if block[0] != EXAMPLES or not 2 <= len(examples) <= 3 or not all(examples):
        return [f"{gid}: its worked solution ends with two or three graded examples after '{EXAMPLES}', each "
                '\'<k>. "<an answer>" **<n> points**: <why>\'']
    if any(points(e[1]) > Fraction(max_points).limit_denominator(100) for e in examples):
        return [f"{gid}: a graded example is worth more than the cell's {max_points} points"]
    if len({e[1] for e in examples}) < 2:
        return [f"{gid}: the graded examples all get the same points: show where the points are lost"]
    return []


def points(text):
    """"2" -> 2, "0.5" -> 1/2, "½" -> 1/2, "1½" -> 3/2."""
    if text.endswith("½"):
        return Fraction(int(text[:-1] or 0)) + Fraction(1, 2)
    return Fraction(text)


def is_written_answer(cell):
    meta = nbgrader_meta(cell)
    return cell.cell_type == "markdown" and bool(meta.get("solution")) and bool(meta.get("grade"))


def is_rubric(cell):
    return RUBRIC_TAG in cell.get("metadata", {}).get("tags", [])


def rubric_problems(rubric, gid, max_points):
    """What is wrong with ``rubric`` as the rubric of the written answer ``gid`` worth ``max_points``."""
    if rubric is None or not is_rubric(rubric):
        return [f"{gid}: the cell right after it is not a markdown cell tagged {RUBRIC_TAG!r}"]
    problems = []
    if rubric.cell_type != "markdown" or "nbgrader" in rubric.metadata:
        problems.append(f"{gid}: its rubric is a markdown cell without nbgrader metadata")
    lines = [line.rstrip() for line in rubric.source.strip().split("\n")]
    header = HEADER.match(lines[0])
    if not header:
        return problems + [f"{gid}: the rubric's first line should be '**Rubric <problem> ({gid}, <P> points)**', "
                           f"got {lines[0]!r}"]
    problem, named, total = header.groups()
    if named != gid:
        problems.append(f"{gid}: its rubric names {named}")
    if points(total) != Fraction(max_points).limit_denominator(100):
        problems.append(f"{gid}: its rubric says {total} points, the cell is worth {max_points}")
    if not re.fullmatch(r"q" + problem.replace(".", "_") + r"_\w+", gid):
        problems.append(f"{gid}: its rubric is headed Problem {problem}")
    bullets = [BULLET.match(line) for line in lines if line.startswith("- ")]
    if not bullets or not all(bullets):
        problems.append(f"{gid}: every bullet of the rubric starts '- **<n> point(s)**: ' (got {len(bullets)} bullets)")
    elif sum(points(b[1]) for b in bullets) != Fraction(max_points).limit_denominator(100):
        problems.append(f"{gid}: the rubric's bullets add up to {sum(points(b[1]) for b in bullets)}, not {max_points}")
    if EXAMPLES in lines or any(re.match(r"^\d\. ", line) for line in lines) or GRADED_QUOTE.search(rubric.source):
        problems.append(f"{gid}: its rubric holds graded example answers (model answers a student can open): they "
                        "end the worked solution")
    if OPTION.search(rubric.source):
        problems.append(f"{gid}: its rubric names an option of the labelled choice: {OPTION.search(rubric.source)[0]!r}")
    if not lines[-1].startswith(PARTIAL) or len(lines[-1]) <= len(PARTIAL) + 10:
        problems.append(f"{gid}: the rubric's last line says what the usual partial answers get ('{PARTIAL}...')")
    return problems


def worked_solution(cells, gid):
    """The worked solution (``**Solution 2.2**``) of the written answer ``gid`` (``q2_2_explain``)."""
    problem = ".".join(re.match(r"q(\d+)_(\d+)_", gid).groups())
    return next((cell for cell in cells if cell.cell_type == "markdown" and "worked-solution" in cell.metadata.get("tags", [])
                 and cell.source.startswith(f"**Solution {problem}**")), None)


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_every_written_answer_has_one_rubric_right_after_it(path):
    cells = read(path).cells
    written = [i for i, cell in enumerate(cells) if is_written_answer(cell)]
    problems = []
    for i in written:
        meta = nbgrader_meta(cells[i])
        rubric = cells[i + 1] if i + 1 < len(cells) else None
        problems += rubric_problems(rubric, meta["grade_id"], meta["points"])
        problems += example_problems(worked_solution(cells, meta["grade_id"]), meta["grade_id"], meta["points"])
    rubrics = [i for i, cell in enumerate(cells) if is_rubric(cell)]
    orphans = [cells[i].get("id") for i in rubrics if i - 1 not in written]
    if orphans:
        problems.append(f"rubric cells that do not follow a written answer: {orphans}")
    assert not problems, "\n".join(problems)


# --- the checker itself ----------------------------------------------------------


def _rubric(source, tags=(RUBRIC_TAG,)):
    import nbformat

    return nbformat.v4.new_markdown_cell(source, metadata={"tags": list(tags)})


GOOD = """**Rubric 2.2 (q2_2_explain, 2 points)**

- **1 point**: derives that the variance of q k^T is d_k.
- **½ point**: gives the three sizes.
- **0.5 points**: says what softmax does with each.

Usual partial answers: the variance argument alone gets 1 point."""

GOOD_EXAMPLES = """Graded examples (so that every grader gives the same points):

1. "The variances of the d_k products add up; sizes 8, 1, 1/8: saturated, responsive, flat." **2 points**: all.
2. "The variance is d_k." **½ point**: no derivation."""
SOLUTION = "**Solution 2.2**\n\nThe score is 5.\n\n" + GOOD_EXAMPLES


def test_a_good_rubric_passes():
    assert rubric_problems(_rubric(GOOD), "q2_2_explain", 2) == []
    assert example_problems(_rubric(SOLUTION, ("worked-solution",)), "q2_2_explain", 2) == []


@pytest.mark.parametrize(
    "source, tags, gid, max_points, says",
    [
        (GOOD, (), "q2_2_explain", 2, "not a markdown cell tagged"),
        (GOOD, (RUBRIC_TAG,), "q2_3_explain", 2, "its rubric names q2_2_explain"),
        (GOOD, (RUBRIC_TAG,), "q2_2_explain", 3, "says 2 points"),
        (GOOD.replace("**½ point**", "**1 point**"), (RUBRIC_TAG,), "q2_2_explain", 2, "add up to 5/2"),
        (GOOD.replace("Usual partial answers", "Partial"), (RUBRIC_TAG,), "q2_2_explain", 2, "usual partial"),
        (GOOD.replace("**Rubric 2.2", "Rubric 2.2"), (RUBRIC_TAG,), "q2_2_explain", 2, "first line"),
        (GOOD.replace("- **1 point**:", "- 1 point:"), (RUBRIC_TAG,), "q2_2_explain", 2, "every bullet"),
        (GOOD.replace("Usual", GOOD_EXAMPLES + "\n\nUsual"), (RUBRIC_TAG,), "q2_2_explain", 2, "graded example answers"),
        (GOOD.replace("alone gets", '"the variance is d_k" **1 point**, alone gets'), (RUBRIC_TAG,), "q2_2_explain", 2,
         "graded example answers"),
        (GOOD.replace("alone gets 1 point", "alone (restating option A) gets 1 point"), (RUBRIC_TAG,), "q2_2_explain", 2,
         "names an option"),
    ],
)
def test_a_bad_rubric_is_named(source, tags, gid, max_points, says):
    problems = rubric_problems(_rubric(source, tags), gid, max_points)
    assert any(says in p for p in problems), problems


@pytest.mark.parametrize(
    "source, max_points, says",
    [
        ("**Solution 2.2**\n\nThe score is 5.", 2, "two or three graded examples"),
        (SOLUTION.replace('2. "The variance is d_k." **½ point**: no derivation.', ""), 2, "two or three graded examples"),
        (SOLUTION.replace("**½ point**: no derivation", "**3 points**: no derivation"), 2, "worth more than"),
        (SOLUTION.replace("**½ point**: no derivation", "**2 points**: no derivation"), 2, "all get the same points"),
    ],
)
def test_bad_graded_examples_are_named(source, max_points, says):
    problems = example_problems(_rubric(source, ("worked-solution",)), "q2_2_explain", max_points)
    assert any(says in p for p in problems), problems
    assert example_problems(None, "q2_2_explain", 2)


def test_the_grader_gets_the_rubric_with_its_graded_examples():
    """The formgrader's rubric (autograders.grading.rubrics.InsertRubrics reads rubrics_for_grader) is the
    rubric cell followed by the examples that end the worked solution; the practice edition folds the
    rubric without them."""
    import nbformat

    from autograders.common.rubric_cells import rubrics_for_grader, without_graded_examples
    from autograders.editions.preprocessors import FoldRubrics

    nb = nbformat.v4.new_notebook()
    nb.cells = [_rubric(GOOD), _rubric(SOLUTION, ("worked-solution",))]
    ((source, cell),) = rubrics_for_grader(nb)["q2_2_explain"]
    assert source.startswith(GOOD) and source.endswith(GOOD_EXAMPLES) and cell is nb.cells[0]
    assert without_graded_examples(SOLUTION) == "**Solution 2.2**\n\nThe score is 5."
    folded, _ = FoldRubrics().preprocess(nb, {})
    assert "Graded examples" not in folded.cells[0].source and "Graded examples" in folded.cells[1].source


# --- each written answer names its problem, and asks for more than a choice says ------------

WRITTEN_HEADER = "**Written answer, Problem {problem}:**"


def written_answer_problems(cell):
    """What is wrong with the written answer ``cell``'s layout: its first line names its problem,
    outside the one solution region that holds the model answer (the release keeps that line, so
    nbgrader's Validate, which shows an unanswered cell's text, says which problem is unanswered)."""
    gid = nbgrader_meta(cell)["grade_id"]
    problem = ".".join(re.match(r"q(\d+)_(\d+)_", gid).groups())
    lines = cell.source.split("\n")
    problems = []
    if lines[0] != WRITTEN_HEADER.format(problem=problem):
        problems.append(f"{gid}: its first line should be {WRITTEN_HEADER.format(problem=problem)!r}, got {lines[0]!r}")
    begin = [i for i, line in enumerate(lines) if line.strip() == "### BEGIN SOLUTION"]
    end = [i for i, line in enumerate(lines) if line.strip() == "### END SOLUTION"]
    if len(begin) != 1 or len(end) != 1 or not 0 < begin[0] < end[0]:
        problems.append(f"{gid}: one ### BEGIN SOLUTION ... ### END SOLUTION region after the first line")
    elif not any(line.strip() for line in lines[begin[0] + 1 : end[0]]):
        problems.append(f"{gid}: the solution region holds the model answer")
    elif any(line.strip() for line in lines[1 : begin[0]] + lines[end[0] + 1 :]):
        problems.append(f"{gid}: nothing but the first line outside the solution region")
    return problems


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_every_written_answer_names_its_problem_outside_the_solution(path):
    problems = [p for cell in read(path).cells if is_written_answer(cell) for p in written_answer_problems(cell)]
    assert not problems, "\n".join(problems)


def test_a_written_answer_without_its_header_is_named():
    import nbformat

    meta = {"nbgrader": {"grade_id": "q2_2_explain", "solution": True, "grade": True, "points": 2}}
    good = "**Written answer, Problem 2.2:**\n\n### BEGIN SOLUTION\nThe variance is d_k.\n### END SOLUTION"
    assert written_answer_problems(nbformat.v4.new_markdown_cell(good, metadata=meta)) == []
    for bad, says in (("The variance is d_k.", "first line"), (good.replace("2.2:", "2.3:"), "first line"),
                      (good.replace("### END SOLUTION", ""), "one ### BEGIN"),
                      (good.replace("The variance is d_k.", ""), "model answer"),
                      (good + "\nMore.", "nothing but")):
        found = written_answer_problems(nbformat.v4.new_markdown_cell(bad, metadata=meta))
        assert any(says in p for p in found), (bad, found)


ASKS_FOR_MORE = re.compile(r"\b(derive|show|give|evaluate|example|how many|prove|proof|write|compute|name one)\b", re.I)


def prompt_parts(path):
    """{problem: (its prompt, whether it asks for a labelled choice, whether it has a written answer)}."""
    found, problem = {}, None
    for cell in read(path).cells:
        match = re.match(r"### Problem (\d+\.\d+)", cell.source)
        if cell.cell_type == "markdown" and match:
            problem = match[1]
            found[problem] = [cell.source, False, False]
        gid = nbgrader_meta(cell).get("grade_id", "")
        if problem and gid.startswith("q" + problem.replace(".", "_") + "_"):
            if cell.cell_type == "code" and nbgrader_meta(cell).get("solution") and "one letter" in answer_head(cell.source):
                found[problem][1] = True
            if is_written_answer(cell):
                found[problem][2] = True
    return found


def written_part(prompt):
    """The prompt's list item or paragraph that asks for the written answer."""
    parts = re.split(r"\n\s*\n|\n(?=\s*(?:\d+\.|\*\*\([a-z]\)\*\*) )", prompt)
    return next((p for p in parts if "*Written" in p or "written-answer cell" in p), None)


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_a_written_part_after_a_choice_asks_for_more_than_the_option_says(path):
    """Where a problem asks for a labelled choice and a written answer, the written part asks for a
    derivation, a number or an example (something no option already says), not only 'explain why'."""
    problems = []
    for problem, (prompt, choice, written) in prompt_parts(path).items():
        part = written_part(prompt) if written else None
        if written and part is None:
            problems.append(f"Problem {problem}: the prompt does not say what the written answer is")
        elif choice and written and not ASKS_FOR_MORE.search(part):
            problems.append(f"Problem {problem}: its written part only asks to explain the choice: {part[:120]!r}")
    assert not problems, "\n".join(problems)


def test_explain_alone_is_not_more_than_a_choice():
    assert not ASKS_FOR_MORE.search("3. *Written answer*: explain why the chosen option is right.")
    assert ASKS_FOR_MORE.search("4. *Written*: derive the variance, then give the three sizes.")


def test_autograde_puts_the_graded_examples_under_the_rubric_for_the_grader(tmp_path):
    import nbformat
    from traitlets.config import Config

    from autograders.grading.rubrics import InsertRubrics

    answer = nbformat.v4.new_markdown_cell("**Written answer, Problem 2.2:**\n\nmine", metadata={
        "nbgrader": {"grade_id": "q2_2_explain", "solution": True, "grade": True, "points": 2}})
    source = nbformat.v4.new_notebook()
    source.cells = [answer, _rubric(GOOD), _rubric(SOLUTION, ("worked-solution",))]
    (tmp_path / "source" / "level2").mkdir(parents=True)
    nbformat.write(source, str(tmp_path / "source" / "level2" / "level2.ipynb"))
    config = Config()
    config.CourseDirectory.root = str(tmp_path)
    submission = nbformat.v4.new_notebook()
    submission.cells = [nbformat.from_dict(answer)]
    graded, _ = InsertRubrics(config=config).preprocess(submission, {"nbgrader": {"assignment": "level2", "notebook": "level2"}})
    assert [c.source for c in graded.cells[1:]] == [GOOD + "\n\n" + GOOD_EXAMPLES]
