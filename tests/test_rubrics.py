"""Every written answer (a markdown cell graded by hand) has its rubric right after it.

A rubric is a markdown cell tagged ``rubric``, with no nbgrader metadata, whose
first line is ``**Rubric <problem> (<grade_id>, <P> points)**``, then one bullet
per point or half point, ``- **1 point**: states that ...``, adding up to the
graded cell's points, and a last line ``Usual partial answers: ...``.
"""

import re
from fractions import Fraction

import pytest

from tests.conftest import ids, level_notebooks, nbgrader_meta, read

LEVELS = level_notebooks()
RUBRIC_TAG = "rubric"
POINTS = r"(\d+(?:\.\d+)?|½|\d+½)"
HEADER = re.compile(rf"^\*\*Rubric (\d+\.\d+) \((\w+), {POINTS} points?\)\*\*$")
BULLET = re.compile(rf"^- \*\*{POINTS} points?\*\*: \S")
PARTIAL = "Usual partial answers: "


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
    if not lines[-1].startswith(PARTIAL) or len(lines[-1]) <= len(PARTIAL) + 10:
        problems.append(f"{gid}: the rubric's last line says what the usual partial answers get ('{PARTIAL}...')")
    return problems


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_every_written_answer_has_one_rubric_right_after_it(path):
    cells = read(path).cells
    written = [i for i, cell in enumerate(cells) if is_written_answer(cell)]
    assert written, f"{path.stem}: no written answers"
    problems = []
    for i in written:
        meta = nbgrader_meta(cells[i])
        rubric = cells[i + 1] if i + 1 < len(cells) else None
        problems += rubric_problems(rubric, meta["grade_id"], meta["points"])
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

- **1 point**: derives that the variance of q^T k is d_k.
- **½ point**: gives the three sizes.
- **0.5 points**: says what softmax does with each.

Usual partial answers: the variance argument alone gets 1 point."""


def test_a_good_rubric_passes():
    assert rubric_problems(_rubric(GOOD), "q2_2_explain", 2) == []


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
    ],
)
def test_a_bad_rubric_is_named(source, tags, gid, max_points, says):
    problems = rubric_problems(_rubric(source, tags), gid, max_points)
    assert any(says in p for p in problems), problems
