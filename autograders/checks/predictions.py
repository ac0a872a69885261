"""Predictions: the ungraded "predict first" answers a student gives before an explorer unlocks.

A prediction is a code cell of the source notebook tagged ``prediction`` whose first line
assigns a placeholder, exactly like an answer cell but with no nbgrader metadata (it is
never graded):

    predict_2_1_weight = None  # your prediction: the weight on "cat", between 0 and 1

The explorer below it takes the value and stays locked while it is None. The name is the
prediction's id (``predict_<level>_<problem>_<what>``) and a key of :data:`PREDICTIONS`,
which says what is right. The instructor's report reads each submission's prediction cells
with :func:`read` (the literal in the source, never by running it) and counts, per
prediction, how many students predicted right (:func:`judge`).
"""

import ast
from dataclasses import dataclass

TAG = "prediction"


@dataclass(frozen=True)
class Prediction:
    """What a prediction asks and which answers count as right.

    ``right`` is a number (right within ``tolerance``, absolute) or a label among ``choices``.
    """

    question: str
    right: object
    tolerance: float = 0.0
    choices: tuple = ()

    def judge(self, value):
        """True or False for a given value, None for no prediction (or one of the wrong kind)."""
        if value is None:
            return None
        if self.choices:
            label = str(value).strip().upper() if isinstance(value, str) else None
            return None if label not in self.choices else label == self.right
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return abs(value - self.right) <= self.tolerance


def _from_moments():
    """One :class:`Prediction` per moment of ``mha_core.explore.moments``: its question, and its right
    value as the library computes it (the explorer the prediction unlocks says the same)."""
    from mha_core.explore.moments import MOMENTS

    return {pid: Prediction(m.question, m.actual(), m.tolerance, m.choices) for pid, m in MOMENTS.items()}


#: Every prediction of the workbook, by id: one per prediction cell of the notebooks.
PREDICTIONS: dict[str, Prediction] = _from_moments()


def read(notebook):
    """``{prediction id: value}`` of the prediction cells of ``notebook`` (an nbformat node).

    A value is the literal the first assignment gives (a number or a string); anything else
    (an expression, a syntax error, a name not in :data:`PREDICTIONS`) reads as None.
    """
    found = {}
    for cell in notebook.cells:
        if cell.get("cell_type") != "code" or TAG not in cell.get("metadata", {}).get("tags", ()):
            continue
        name, value = _assignment(cell.get("source", ""))
        if name in PREDICTIONS:
            found[name] = value
    return found


def judge(prediction_id, value):
    """True/False for ``value`` as the prediction ``prediction_id``; None when there is none."""
    return PREDICTIONS[prediction_id].judge(value)


def _assignment(source):
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None, None
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                value = ast.literal_eval(node.value)
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                value = None
            return node.targets[0].id, value if isinstance(value, (int, float, str)) else None
    return None, None
