"""The rubrics at grading (the rubric cells' format: :mod:`autograders.common.rubric_cells`).

Autograde puts each rubric back, from the course's ``source/`` notebook, right after
the submission's cell of that grade_id, followed by its graded examples (which the source
keeps at the end of the worked solution, out of the rubric a student can open:
:class:`InsertRubrics`), so the grader reads them in the formgrader; any other HTML rendering of a notebook, the students' feedback
first, leaves it out (:class:`HideRubrics`). The course's nbgrader config calls
:func:`configure_rubrics`.
"""

import copy
import os

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from ..common.rubric_cells import RUBRIC_TAG, is_rubric, rubrics_for_grader


class InsertRubrics(NbGraderPreprocessor):
    """At autograde: put each rubric of the course's source notebook right after the
    submission's cell of the rubric's grade_id, so the grader reads it in the formgrader.

    The rubric is a plain markdown cell (no nbgrader metadata): nbgrader neither
    grades nor checksums it. Cells tagged ``rubric`` in the submission are removed
    first (a student does not write the rubric). A rubric whose cell the submission
    lacks goes at the end. Reads ``source/<assignment>/<notebook>.ipynb`` of the
    course (``CourseDirectory.root``).
    """

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        nb.cells = [cell for cell in nb.cells if not is_rubric(cell)]
        rubrics = self.rubrics(resources)
        if not rubrics:
            return nb, resources
        cells = []
        for cell in nb.cells:
            cells.append(cell)
            grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
            cells += rubrics.pop(grade_id, [])
        nb.cells = cells + [cell for pending in rubrics.values() for cell in pending]
        return nb, resources

    def rubrics(self, resources):
        """{grade_id: [rubric cells]} of the source notebook, in order."""
        import nbformat
        from nbgrader.coursedir import CourseDirectory

        info = resources.get("nbgrader", {})
        coursedir = CourseDirectory(config=self.config)
        path = os.path.join(coursedir.format_path(coursedir.source_directory, ".", info.get("assignment", "")),
                            f"{info.get('notebook', '')}.ipynb")
        if not os.path.isfile(path):
            self.log.warning("no source notebook %s: no rubrics shown to the grader", path)
            return {}
        found = {}
        for grade_id, rubrics in rubrics_for_grader(nbformat.read(path, as_version=4)).items():
            for source, cell in rubrics:
                rubric = copy.deepcopy(cell)
                rubric.metadata = NotebookNode(tags=[RUBRIC_TAG])
                rubric.source = source  # the criteria, then the graded examples the worked solution ends with
                found[grade_id] = found.get(grade_id, []) + [rubric]
        return found


class HideRubrics(NbGraderPreprocessor):
    """Remove rubric cells from an HTML rendering unless it is the formgrader's (template
    ``formgrade``): the students' feedback never shows them.

    Registered on ``HTMLExporter.preprocessors`` in the course's config, so it runs in
    every exporter nbgrader makes (``generate_feedback``, the formgrader, this
    project's feedback) and reads the template of the exporter that runs it.
    """

    kept_for = Unicode("formgrade", help="The template whose pages show the rubrics").tag(config=True)

    def preprocess(self, nb: NotebookNode, resources: ResourcesDict):
        if getattr(self.parent, "template_name", None) != self.kept_for:
            nb.cells = [cell for cell in nb.cells if not is_rubric(cell)]
        return nb, resources


def configure_rubrics(c):
    """Set up the rubrics in the course's nbgrader config ``c``: inserted at autograde (after
    whatever autograde steps ``c`` has so far), hidden from every HTML page but the formgrader's."""
    from nbgrader.converters import Autograde

    steps = (c.Autograde.autograde_preprocessors if "autograde_preprocessors" in c.Autograde
             else Autograde.class_traits()["autograde_preprocessors"].default())
    c.Autograde.autograde_preprocessors = [*[s for s in steps if s is not InsertRubrics], InsertRubrics]
    c.HTMLExporter.preprocessors = [HideRubrics]
