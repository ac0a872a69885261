"""The Validate button runs what grading runs: the sheet's cells, the answer cells and the tests.

When work is graded, only the sheet's set-up and data cells and the answer cells run
(:func:`autograders.grading.handover.graded_cells`): a cell a student adds, and the sheet's explorers
and predictions, do not. So that Validate shows, before a student submits, an answer that needs a
cell of their own (a helper, an import there), it skips the cells grading skips: a code cell without
nbgrader metadata keeps a one-line note instead of running. (In the student's Lab there is no source
notebook to tell the sheet's cells by: a cell's own metadata decides; a cell made to look like the
sheet's runs here, and still does not when graded. A notebook with no nbgrader cell at all runs whole,
as grading runs it.)

nbgrader's ``Validator`` takes its steps as an argument, not as a configuration key, and the Lab's
Validate handler makes it with the configuration alone: :func:`validate_as_graded`, called from the
Lab's ``nbgrader_config.py``, makes :class:`GradedCellsOnly` its execution step.
"""

from nbformat import NotebookNode
from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, Execute

NOT_RUN = ("Not run when graded (nor by Validate): only the sheet's own cells and the answer cells run. "
           "Put what an answer needs in its answer cell.\n")


class GradedCellsOnly(Execute):
    """nbgrader's ``Execute`` (configured as ``c.Execute``), skipping the code cells without nbgrader metadata
    in a notebook that has some (a plain notebook, with none, runs whole: grading runs it whole too)."""

    graded_only = False

    def preprocess(self, nb, resources=None, km=None):
        self.graded_only = any(cell.metadata.get("nbgrader") for cell in nb.cells)
        return super().preprocess(nb, resources, km)

    def preprocess_cell(self, cell, resources, index):
        if self.graded_only and cell.cell_type == "code" and not cell.metadata.get("nbgrader"):
            cell.execution_count = None
            cell.outputs = [NotebookNode(output_type="stream", name="stdout", text=NOT_RUN)] if cell.source.strip() else []
            return cell, resources
        return super().preprocess_cell(cell, resources, index)


def validate_as_graded():
    """Make every ``Validator`` made from now on in this process run :class:`GradedCellsOnly`."""
    from nbgrader.validator import Validator

    Validator.class_traits()["preprocessors"].default_args = ([CheckCellMetadata, ClearOutput, GradedCellsOnly],)
