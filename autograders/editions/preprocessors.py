"""nbgrader preprocessors for the workbook's two editions (see ``editions.py``).

A worked solution is a markdown cell tagged ``worked-solution`` whose first line
is ``**Solution 2.2**``. The practice edition folds it, with the problem's code
solution, into a collapsed ``<details>`` callout (try first, then reveal);
the graded release drops it. Both run alongside nbgrader's own preprocessors
(``ClearSolutions``, ``ClearHiddenTests``, ...), before ``ClearSolutions``.

A rubric is a markdown cell tagged ``rubric`` right after a written answer, whose
first line is ``**Rubric 2.2 (q2_2_explain, 2 points)**``: how the grader scores
that answer. The practice edition folds it into a collapsed "Rubric" callout; the
release drops it (the format: :mod:`autograders.common.rubric_cells`). At grading,
autograde puts it back for the grader and every other HTML page leaves it out:
:mod:`autograders.grading.rubrics`.
"""

import json
import re

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader import utils
from nbgrader.preprocessors import (
    CheckCellMetadata,
    ClearHiddenTests,
    ClearMarkScheme,
    ClearOutput,
    ClearSolutions,
    ComputeChecksums,
    LockCells,
    NbGraderPreprocessor,
)
from traitlets import Unicode

from ..common.rubric_cells import RUBRIC_HEADING, RUBRIC_TAG, is_rubric, plain_rubrics, rubric_of  # noqa: F401 (theirs too)

WORKED_SOLUTION_TAG = "worked-solution"
SOLUTION_HEADING = re.compile(r"^\*\*Solution (?P<level>\d+)\.(?P<problem>\d+)\*\*[ \t]*\n?")


def is_worked_solution(cell):
    return cell.cell_type == "markdown" and WORKED_SOLUTION_TAG in cell.metadata.get("tags", [])


def problem_of(cell):
    """``"2.2"`` for a worked solution whose first line is ``**Solution 2.2**``."""
    match = SOLUTION_HEADING.match(cell.source)
    if match is None:
        first = cell.source.splitlines()[0] if cell.source else ""
        raise ValueError(f"a worked-solution cell should start with '**Solution <level>.<problem>**', not {first!r}")
    return f"{match['level']}.{match['problem']}"


def code_solution(source, begin="BEGIN SOLUTION", end="END SOLUTION"):
    """What an answer cell holds once answered, to show in a worked solution.

    A solution region at the top level (after a placeholder like ``x = None``)
    gives the region alone; one inside a ``def`` gives the whole cell (the
    ``def`` line and docstring) without the delimiter lines.
    """
    lines = source.split("\n")
    starts = [i for i, line in enumerate(lines) if begin in line]
    if starts and all(not lines[i][:1].isspace() for i in starts):
        shown, inside = [], False
        for line in lines:
            if begin in line:
                inside = True
            elif end in line:
                inside = False
            elif inside:
                shown.append(line)
        return "\n".join(shown).strip("\n")
    return "\n".join(line for line in lines if begin not in line and end not in line).strip("\n")


class DropWorkedSolutions(NbGraderPreprocessor):
    """Remove the worked-solution cells (for the graded release)."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        for cell in nb.cells:
            if is_worked_solution(cell) and "nbgrader" in cell.metadata:
                raise RuntimeError(f"worked-solution cell {cell.get('id')!r} must not be an nbgrader cell")
        nb.cells = [cell for cell in nb.cells if not is_worked_solution(cell)]
        return nb, resources


class FoldWorkedSolutions(NbGraderPreprocessor):
    """Fold each worked solution and its problem's code solution into a collapsed callout.

    Problem 2.2's code solution is that of its code answer cells (grade_ids
    ``q2_2_*``, see :func:`code_solution`), in notebook order. Must run before
    ``ClearSolutions`` blanks those cells.
    """

    summary = Unicode("Solution {problem}", help="The callout's visible summary").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        answers = {}
        for cell in nb.cells:
            if cell.cell_type == "code" and utils.is_solution(cell):
                grade_id = cell.metadata.nbgrader.get("grade_id", "")
                match = re.match(r"^q(\d+)_(\d+)_", grade_id)
                if match:
                    answers.setdefault(f"{match[1]}.{match[2]}", []).append(code_solution(cell.source))
        for cell in nb.cells:
            if is_worked_solution(cell):
                if "nbgrader" in cell.metadata:
                    raise RuntimeError(f"worked-solution cell {cell.get('id')!r} must not be an nbgrader cell")
                cell.source = self.fold(cell.source, problem_of(cell), answers.get(problem_of(cell), []))
        return nb, resources

    def fold(self, source, problem, code_blocks):
        body = SOLUTION_HEADING.sub("", source, count=1).strip("\n")
        parts = [f"<details><summary>{self.summary.format(problem=problem)}</summary>", "", body]
        for code in code_blocks:
            parts += ["", "```python", code, "```"]
        parts += ["", "</details>"]
        return "\n".join(parts)


# --- rubrics -----------------------------------------------------------------


class DropRubrics(NbGraderPreprocessor):
    """Remove the rubric cells (for the graded release)."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        dropped = plain_rubrics(nb)
        nb.cells = [cell for cell in nb.cells if not any(cell is r for r in dropped)]
        return nb, resources


def kernel_language_info():
    """The ``language_info`` this Python's kernel reports (ipykernel's). JupyterLab writes the kernel's
    into a notebook when it opens it; the source notebooks hold only ``{"name": "python"}``, so every level
    showed unsaved changes right after opening. The practice edition, built by the Python its kernel runs,
    carries the kernel's own, and opening changes nothing."""
    try:
        from ipykernel.ipkernel import IPythonKernel
    except ImportError:  # no kernel here: nothing better to write
        return {"name": "python"}
    return json.loads(json.dumps(IPythonKernel.language_info))


class KernelLanguageInfo(NbGraderPreprocessor):
    """Write the kernel's ``language_info`` (both editions: opened in JupyterLab they then show no
    unsaved change; ``kernel_language_info`` says why)."""

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        nb.metadata["language_info"] = kernel_language_info()
        return nb, resources


class FoldRubrics(NbGraderPreprocessor):
    """Fold each rubric into a collapsed callout (the practice edition: read it after trying)."""

    summary = Unicode("Rubric {problem}: how {points} of the written answer {are} graded",
                      help="The callout's visible summary").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        for cell in plain_rubrics(nb):
            problem, _, points = rubric_of(cell)
            body = RUBRIC_HEADING.sub("", cell.source, count=1).strip("\n")
            shown = f"{points:g} point" + ("" if points == 1 else "s")
            summary = self.summary.format(problem=problem, points=shown, are="is" if points == 1 else "are")
            cell.source = "\n".join([f"<details><summary>{summary}</summary>", "", body, "", "</details>"])
        return nb, resources


class PracticeClearSolutions(ClearSolutions):
    """nbgrader's ClearSolutions, except that a solution region at the top level of a
    code cell is removed without a stub when a placeholder line comes before it
    (``why = None``, its comment on the line above): the student replaces the ``None``, and
    Run All on a blank notebook raises nothing in the answer cell (the test below it
    says "no answer yet"). A region inside a ``def`` keeps nbgrader's stub: the
    function is defined, and calling it says "no answer yet" (``feedback.call``).
    """

    def _replace_solution_region(self, cell, language):
        if cell.cell_type == "code":
            lines = cell.source.split("\n")
            kept, inside, before, removed = [], False, False, False
            for line in lines:
                top = not line[:1].isspace()
                if self.begin_solution_delimeter in line and top and not inside and before:
                    inside = removed = True
                elif inside and self.end_solution_delimeter in line:
                    inside = False
                elif not inside:
                    kept.append(line)
                    before = before or bool(line.strip() and not line.lstrip().startswith("#"))
            if removed and not inside:
                cell.source = "\n".join(kept).rstrip("\n")
                super()._replace_solution_region(cell, language)  # any region left inside a def
                return True
        return super()._replace_solution_region(cell, language)


# The preprocessors of each edition, in order. The release's are nbgrader's
# GenerateAssignment defaults with DropWorkedSolutions and DropRubrics in front
# (the course's nbgrader_config.py sets them); the practice edition runs the same
# clearing steps in process, without the gradebook (no SaveCells), folding instead
# of dropping the worked solutions and rubrics, and without a stub that raises
# after a placeholder.


def release_preprocessors():
    from nbgrader.converters import GenerateAssignment

    defaults = GenerateAssignment.class_traits()["preprocessors"].default()
    return [DropWorkedSolutions, DropRubrics, *defaults, KernelLanguageInfo]


PRACTICE_PREPROCESSORS = [
    FoldWorkedSolutions,
    FoldRubrics,
    LockCells,
    PracticeClearSolutions,
    ClearOutput,
    CheckCellMetadata,
    ComputeChecksums,
    ClearHiddenTests,
    ClearMarkScheme,
    ComputeChecksums,
    CheckCellMetadata,
    KernelLanguageInfo,
]
