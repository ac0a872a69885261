"""Prediction cells are read from their literal source, never run, and judged by their entry."""

import nbformat
import pytest

from autograders.checks import predictions
from autograders.checks.predictions import Prediction


@pytest.fixture
def entries(monkeypatch):
    monkeypatch.setitem(predictions.PREDICTIONS, "predict_9_1_weight", Prediction("weight?", 0.67, tolerance=0.05))
    monkeypatch.setitem(predictions.PREDICTIONS, "predict_9_2_which", Prediction("which?", "B", choices=("A", "B")))


def notebook(*sources, tag=predictions.TAG):
    nb = nbformat.v4.new_notebook()
    for source in sources:
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = [tag]
        nb.cells.append(cell)
    return nb


def test_literals_are_read_and_judged(entries):
    found = predictions.read(notebook("predict_9_1_weight = 0.7  # yours", "predict_9_2_which = 'a'"))
    assert found == {"predict_9_1_weight": 0.7, "predict_9_2_which": "a"}
    assert predictions.judge("predict_9_1_weight", 0.7) is True
    assert predictions.judge("predict_9_1_weight", 0.5) is False
    assert predictions.judge("predict_9_2_which", "a") is False
    assert predictions.judge("predict_9_2_which", " b ") is True


@pytest.mark.parametrize("source", ["predict_9_1_weight = None", "predict_9_1_weight = __import__('os').getpid()",
                                    "predict_9_1_weight = (", "predict_9_1_weight = [0.67]",
                                    "predict_9_1_weight = True"])
def test_anything_but_a_plain_literal_is_no_prediction(entries, source):
    value = predictions.read(notebook(source)).get("predict_9_1_weight")
    assert predictions.judge("predict_9_1_weight", value) is None


def test_untagged_cells_and_unknown_names_are_not_predictions(entries):
    assert predictions.read(notebook("predict_9_1_weight = 0.67", tag="other")) == {}
    assert predictions.read(notebook("predict_0_0_nothing = 1")) == {}
    assert predictions.judge("predict_9_2_which", "Z") is None
