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

from collections.abc import MutableMapping
from dataclasses import dataclass

from ..common.literals import literal_assignments

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


class _Registry(MutableMapping):
    """The predictions by id: one per moment of ``autograders.problems.moments`` (its question, and its right
    value as the library computes it: the explorer the prediction unlocks says the same). A right value
    is computed when its entry is first read, so :func:`read` alone runs none of the library."""

    def __init__(self):
        self._entries, self._removed = {}, set()

    @staticmethod
    def _moments():
        from ..problems.moments import MOMENTS

        return MOMENTS

    def __getitem__(self, key):
        if key not in self._entries:
            if key in self._removed or key not in self._moments():
                raise KeyError(key)
            m = self._moments()[key]
            self._entries[key] = Prediction(m.question, m.actual(), m.tolerance, m.choices)
        return self._entries[key]

    def __setitem__(self, key, value):
        self._entries[key] = value
        self._removed.discard(key)

    def __delitem__(self, key):
        if key not in self:
            raise KeyError(key)
        self._entries.pop(key, None)
        self._removed.add(key)

    def __contains__(self, key):
        return key not in self._removed and (key in self._entries or key in self._moments())

    def __iter__(self):
        return iter([k for k in {**dict.fromkeys(self._moments()), **self._entries} if k not in self._removed])

    def __len__(self):
        return len(list(iter(self)))


#: Every prediction of the workbook, by id: one per prediction cell of the notebooks.
PREDICTIONS = _Registry()


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
    """The name and literal (a number or a string; else None) of the first top-level assignment of ``source``."""
    for name, value in literal_assignments(source)[:1]:
        return name, value if isinstance(value, (int, float, str)) else None
    return None, None
