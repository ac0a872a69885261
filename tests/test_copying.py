"""The report's copying list: answers read from their cells without running them, and matched
against the other students' recorded numbers."""

import math

import nbformat
import pytest

from autograders.report.copying import copied, read_answer
from autograders.variants import record

LEVEL = "level1_recognition"


@pytest.mark.parametrize("source, name, value", [
    ("d_k = 32\n", "d_k", 32),
    ("d_k = None  # a number\nd_k = 768 // 12\n", "d_k", 64),
    ("scaled_score = 40 / np.sqrt(64)\n", "scaled_score", 5.0),
    ("output_shape = (3, 2 * 128)\n", "output_shape", (3, 256)),
    ("weights = np.array([0.25, -0.5, 1e-3])\n", "weights", (0.25, -0.5, 0.001)),
    ("d_k = head_dim(512, 8)\n", "d_k", None),  # the student's own function: not run
    ("d_k = __import__('os').getpid()\n", "d_k", None),
    ("d_k = 10 ** 10 ** 10\n", "d_k", None),
    ("d_k = (\n", "d_k", None),
])
def test_answers_are_read_without_running_anything(source, name, value):
    assert read_answer(source, name) == value


def _notebook(path, d_k, shape):
    nb = nbformat.v4.new_notebook()
    for grade_id, code in (("q1_1_d_k", f"d_k = {d_k}\n"), ("q1_2_output_shape", f"output_shape = {shape}\n")):
        cell = nbformat.v4.new_code_cell(code)
        cell.metadata["nbgrader"] = {"grade_id": grade_id, "solution": True}
        nb.cells.append(cell)
    path.parent.mkdir(parents=True)
    nbformat.write(nb, str(path))


def test_an_answer_right_for_another_students_numbers_is_listed_with_whose(tmp_path):
    numbers = {"ann": ({"d_model": 256, "h": 8}, {"d_model": 256, "h": 8, "n": 3}),
               "ben": ({"d_model": 512, "h": 16}, {"d_model": 640, "h": 8, "n": 5}),
               "cy": ({"d_model": 192, "h": 8}, {"d_model": 512, "h": 4, "n": 7}),
               "dee": ({"d_model": 1024, "h": 16}, {"d_model": 256, "h": 8, "n": 3})}
    record.write(tmp_path / "variants", LEVEL, [(s, p, 0, n) for s, (one, two) in numbers.items()
                                                 for p, n in (("q1_1", one), ("q1_2", two))])
    answers = {"ann": (32, (3, 256)),  # right for her own
               "ben": (32, (5, 640)),  # copied ann's d_k (ben's is 32 too: d_model 512 / 16): not listed
               "cy": (32, (3, 256)),  # ann's (and dee's) answers, wrong for cy's own
               "dee": (24, (3, 256))}  # cy's d_k; dee shares ann's numbers for 1.2, so her shape is her own
    for student, (d_k, shape) in answers.items():
        _notebook(tmp_path / "autograded" / student / LEVEL / f"{LEVEL}.ipynb", d_k, shape)
    found = {(row["student"], row["problem"]): (row["answer"], row["whose"]) for row in copied(tmp_path)}
    assert found == {("cy", "q1_1_d_k"): ("32", ["ann", "ben"]), ("cy", "q1_2_output_shape"): ("(3, 256)", ["ann", "dee"]),
                     ("dee", "q1_1_d_k"): ("24", ["cy"])}


def test_no_record_no_list(tmp_path):
    assert copied(tmp_path) == []


def test_copied_answers_whose_names_are_not_their_grade_ids_are_listed(tmp_path):
    """W_O_shape (grade_id q3_2_wo_shape) and attention_weights (q4_2_weights): the pools name the variable."""
    from autograders.variants.levels import POOLS

    def notebook(assignment, student, grade_id, code):
        nb = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell(code)
        cell.metadata["nbgrader"] = {"grade_id": grade_id, "solution": True}
        nb.cells.append(cell)
        path = tmp_path / "autograded" / student / assignment / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, str(path))

    blocks = {"ann": {"d_model": 256, "h": 4, "n": 7}, "ben": {"d_model": 768, "h": 16, "n": 5}}
    record.write(tmp_path / "variants", "level3_analysis", [(s, "q3_2", 0, n) for s, n in blocks.items()])
    notebook("level3_analysis", "ann", "q3_2_wo_shape", "W_O_shape = (256, 256)\n")
    notebook("level3_analysis", "ben", "q3_2_wo_shape", "W_O_shape = (256, 256)\n")  # ann's
    ann, ben = POOLS["level4_synthesis"]["q4_2_weights"].entries[:2]
    record.write(tmp_path / "variants", "level4_synthesis", [(s, "q4_2", 0, e) for s, e in (("ann", ann), ("ben", ben))])
    e = [math.exp((ann["query"][0] * k[0] + ann["query"][1] * k[1]) / math.sqrt(2)) for k in ann["keys"]]
    copied_weights = [round(x / sum(e), 4) for x in e]
    notebook("level4_synthesis", "ben", "q4_2_weights", f"attention_weights = np.array({copied_weights})\n")  # ann's
    found = {(row["student"], row["problem"]): row["whose"] for row in copied(tmp_path)}
    assert found == {("ben", "q3_2_wo_shape"): ["ann"], ("ben", "q4_2_weights"): ["ann"]}
