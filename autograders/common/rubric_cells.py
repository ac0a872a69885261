"""The rubric cells' format, read by the editions (folded, dropped) and by the grading (put back for
the grader, hidden from every other page).

A rubric is a markdown cell tagged ``rubric`` right after a written answer, whose first line is
``**Rubric 2.2 (q2_2_explain, 2 points)**`` (halves as ``½``); it is never an nbgrader cell. It holds the
criteria (a bullet per point) and the usual partial answers, no model answer: a student may open it
before writing. Its graded examples, which are model answers, end the problem's worked solution (the
cell tagged ``worked-solution`` whose first line is ``**Solution 2.2**``), after the line
:data:`EXAMPLES`; the grader gets them back under the rubric (:func:`rubrics_for_grader`).
"""

import re

RUBRIC_TAG = "rubric"
WORKED_SOLUTION_TAG = "worked-solution"
EXAMPLES = "Graded examples (so that every grader gives the same points):"
SOLUTION_OF = re.compile(r"^\*\*Solution (\d+\.\d+)\*\*")
RUBRIC_HEADING = re.compile(
    r"^\*\*Rubric (?P<problem>\d+\.\d+) \((?P<grade_id>[A-Za-z0-9_-]+), "
    r"(?P<points>\d+(?:\.\d+)?|\d*½) points?\)\*\*[ \t]*\n?"
)


def is_rubric(cell):
    return cell.cell_type == "markdown" and RUBRIC_TAG in cell.metadata.get("tags", [])


def rubric_of(cell):
    """``(problem, grade_id, points)`` of a rubric whose first line is ``**Rubric 2.2 (q2_2_explain, 2 points)**``."""
    match = RUBRIC_HEADING.match(cell.source)
    if match is None:
        first = cell.source.splitlines()[0] if cell.source else ""
        raise ValueError(
            f"a rubric cell should start with '**Rubric <level>.<problem> (<grade_id>, <points> points)**', not {first!r}"
        )
    points = match["points"]
    return match["problem"], match["grade_id"], float(points[:-1] or 0) + 0.5 if points.endswith("½") else float(points)


def plain_rubrics(nb):
    """The rubric cells of ``nb``; an error if one is an nbgrader cell (nbgrader would grade or lock it)."""
    found = [cell for cell in nb.cells if is_rubric(cell)]
    for cell in found:
        if "nbgrader" in cell.metadata:
            raise RuntimeError(f"rubric cell {cell.get('id')!r} must not be an nbgrader cell")
    return found


def graded_examples(source):
    """The graded examples that end a worked solution's ``source``: from the line :data:`EXAMPLES` on
    ("" when it has none)."""
    lines = source.split("\n")
    start = next((k for k, line in enumerate(lines) if line.strip() == EXAMPLES), None)
    return "" if start is None else "\n".join(lines[start:]).strip("\n")


def without_graded_examples(source):
    """A worked solution's ``source`` without the graded examples that end it."""
    examples = graded_examples(source)
    return source[: source.rindex(examples)].rstrip("\n") if examples else source


def rubrics_for_grader(nb):
    """{grade_id: [rubric cells]} of the source notebook ``nb``, each rubric followed by its problem's
    graded examples (taken from the end of the worked solution): everything a grader reads."""
    examples = {}
    for cell in nb.cells:
        match = SOLUTION_OF.match(cell.source) if cell.cell_type == "markdown" else None
        if match and WORKED_SOLUTION_TAG in cell.metadata.get("tags", []) and graded_examples(cell.source):
            examples[match[1]] = graded_examples(cell.source)
    found = {}
    for cell in plain_rubrics(nb):
        problem, grade_id, _ = rubric_of(cell)
        source = cell.source.rstrip("\n")
        if problem in examples:
            source += "\n\n" + examples[problem]
        found.setdefault(grade_id, []).append((source, cell))
    return found
