"""The report's item analysis: per question the shares with full, partial and no points, the most frequent
misconceptions, the options chosen; the class's predictions; the plot, embedded with alt text."""

import base64
import re

import nbformat
import pytest

from autograders.checks import predictions
from autograders.checks.predictions import Prediction
from autograders import report

LEVEL = "level5_mastery"
STUDENTS = ["ann", "bob", "cy", "dee", "eve"]
# per student: (q5_1_refutation's letter, its test's score of 1, q5_1_explain's score of 2, predict_9_1 value)
ANSWERS = {"ann": ("D", 1, 2, 0.7), "bob": ("A", 0, 1, 0.2), "cy": ("B", 0, 0, None), "dee": ("A", 0, 1, 0.66),
           "eve": ("'E'", 0, None, "many")}


@pytest.fixture
def entries(monkeypatch):
    monkeypatch.setitem(predictions.PREDICTIONS, "predict_9_1_weight", Prediction("the weight on cat?", 0.67,
                                                                                  tolerance=0.05))


def _notebook(letter, guess):
    nb = nbformat.v4.new_notebook()
    answer = nbformat.v4.new_code_cell(f"refutation = None\nrefutation = {letter if letter.startswith(chr(39)) else repr(letter)}")
    answer.metadata["nbgrader"] = {"grade_id": "q5_1_refutation", "solution": True, "grade": False}
    guessed = nbformat.v4.new_code_cell(f"predict_9_1_weight = {guess!r}  # yours")
    guessed.metadata["tags"] = [predictions.TAG]
    nb.cells += [answer, guessed]
    return nb


def results(entries_=None):
    made = report.Results(cells={LEVEL: ["q5_1_refutation_test", "q5_1_explain"]})
    tags = {"bob": "heads-free", "cy": "narrow-heads-uniform", "dee": "heads-free", "eve": "wrong-kind"}
    for student in STUDENTS:
        letter, test, written, guess = ANSWERS[student]
        made.rows.append({"student": student, "assignment": LEVEL, "status": "graded", "score": test + (written or 0),
                          "max_score": 3, "cells": {"q5_1_refutation_test": (test, 1, "code"),
                                                    "q5_1_explain": (written, 2, "markdown")}})
        if test < 1:
            key = (student, LEVEL, "q5_1_refutation_test")
            made.messages[key] = "failed"
            made.tags[key] = tags[student]
        report.add_answers(made, student, LEVEL, _notebook(letter, guess))
    return made


def test_choices_and_predictions_are_read_from_the_literals(entries):
    made = results()
    assert made.choices[("ann", LEVEL, "q5_1_refutation")] == "D"
    assert made.choices[("eve", LEVEL, "q5_1_refutation")] is None  # 'E' is not an option
    assert made.predictions[("bob", LEVEL)] == {"predict_9_1_weight": 0.2}
    assert made.predictions[("eve", LEVEL)] == {"predict_9_1_weight": "many"}


def test_the_item_analysis_counts_by_hand(entries):
    test, written = report.item_analysis(results())
    # the choice's test: 1 of 5 full, none partial, 4 of 5 nothing
    assert (test["n"], test["full"], test["partial"], test["none"]) == (5, 0.2, 0.0, 0.8)
    assert test["tags"][0] == ("more heads are free or always better", 2)  # bob and dee
    assert dict(test["tags"][1:]) == {"one-number heads taken to attend uniformly": 1,
                                      "answer of the wrong kind (type or shape)": 1}
    assert test["chosen"] == [("A", 2), ("B", 1), ("C", 0), ("D (right)", 1), ("none", 1)]
    # the written answer: eve's is not graded yet, so 4: ann full, bob and dee partial, cy none
    assert (written["n"], written["full"], written["partial"], written["none"]) == (4, 0.25, 0.5, 0.25)
    assert written["written"] and written["chosen"] is None and written["tags"] == []


def test_the_predictions_are_counted_per_prediction(entries):
    (summary,) = report.prediction_summary(results())
    # 0.7 and 0.66 are within 0.05 of 0.67; 0.2 is not; None and "many" are no prediction
    assert (summary["right"], summary["wrong"], summary["none"], summary["share"]) == (2, 1, 2, "67%")
    assert summary["question"] == "the weight on cat?"


def test_a_prediction_not_in_the_registry_is_left_out():
    assert report.prediction_summary(results()) == []  # no entries: nothing read


def test_the_report_shows_the_item_analysis_its_plot_and_the_predictions(entries, tmp_path):
    page = report.write_report(results(), tmp_path / "report.html").read_text()
    section = page[page.index("<h2>Item analysis</h2>"):page.index("<h2>Late submissions</h2>")]
    assert "<td>5.1 refutation</td><td class=n>5</td><td class=n>20%</td><td class=n>0%</td><td class=n>80%</td>" in section
    assert "more heads are free or always better (2)" in section and "A: 2, B: 1, C: 0, D (right): 1, none: 1" in section
    assert "5.1 explain (written)" in section
    assert "<td>predict_9_1_weight</td>" in section and "the weight on cat?" in section and "67%" in section
    (img,) = re.findall(r'<img alt="([^"]+)" src="data:image/png;base64,([^"]+)">', section)
    alt, png = img
    assert "a bar per question (2)" in alt and "5.1 refutation: 80% no points" in alt
    assert base64.b64decode(png)[:4] == b"\x89PNG"


def test_the_plot_has_a_bar_per_question_in_three_parts(entries):
    import io

    from matplotlib import image

    items = report.item_analysis(results())
    png = report.plot_items(items)
    picture = image.imread(io.BytesIO(png))
    assert picture.shape[0] > 100 and picture.shape[1] > 300
