"""The rubric cells' format, read by the editions (folded, dropped) and by the grading (put back for
the grader, hidden from every other page).

A rubric is a markdown cell tagged ``rubric`` right after a written answer, whose first line is
``**Rubric 2.2 (q2_2_explain, 2 points)**`` (halves as ``½``); it is never an nbgrader cell.
"""

import re

RUBRIC_TAG = "rubric"
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
