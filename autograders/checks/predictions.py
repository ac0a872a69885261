"""Predictions: the ungraded "predict first" answers a student gives before an explorer unlocks.

A prediction is a code cell of the source notebook tagged ``prediction`` whose first line of
code assigns a placeholder, what it asks for on a comment line above it, exactly like an answer
cell but with no nbgrader metadata (it is never graded):

    # your prediction: the weight on "cat", between 0 and 1
    predict_2_1_weight = None

The explorer below it takes the value and stays locked while it is None. The name is the
prediction's id (``predict_<level>_<problem>_<what>``) and a key of :data:`PREDICTIONS`,
which says what is right. The instructor's report reads each submission's prediction cells
with :func:`read` (the literal in the source, never by running it) and counts, per
prediction, how many students predicted right (:func:`judge`).
"""

import functools
from dataclasses import dataclass

from ..common.literals import literal_assignments

TAG = "prediction"


@dataclass(frozen=True)
class Prediction:
    """What a prediction asks and which answers count as right.

    ``right`` is a number (right within ``tolerance``, absolute) or a label among ``choices``; ``answer`` is
    that value, or a function computing it (called when ``right`` is first read).
    """

    question: str
    answer: object
    tolerance: float = 0.0
    choices: tuple = ()

    @functools.cached_property
    def right(self):
        return self.answer() if callable(self.answer) else self.answer

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


def _predictions():
    """:data:`PREDICTIONS`, every prediction of the workbook by id: one per moment of
    ``autograders.student.moments`` (its question, and its right value as the library computes it: the
    explorer the prediction unlocks says the same). Made when first used, its right values when first read,
    so that :func:`read` alone runs none of the library."""
    if "PREDICTIONS" not in globals():
        from ..student.moments import MOMENTS

        globals()["PREDICTIONS"] = {key: Prediction(m.question, m.actual, m.tolerance, m.choices)
                                    for key, m in MOMENTS.items()}
    return globals()["PREDICTIONS"]


def __getattr__(name):
    if name == "PREDICTIONS":
        return _predictions()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
        if name in _predictions():
            found[name] = value
    return found


def judge(prediction_id, value):
    """True/False for ``value`` as the prediction ``prediction_id``; None when there is none."""
    return _predictions()[prediction_id].judge(value)


def _assignment(source):
    """The name and literal (a number or a string; else None) of the first top-level assignment of ``source``."""
    for name, value in literal_assignments(source)[:1]:
        return name, value if isinstance(value, (int, float, str)) else None
    return None, None
