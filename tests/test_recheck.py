"""The clean re-check (autograders/recheck.py): answers cross as data, checks run apart."""

import base64
import io
import math
from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograders import recheck as rc

ROOT = Path(__file__).resolve().parent.parent
LEVEL1 = ROOT / "notebooks" / "level1_recognition.ipynb"
TESTS = {"q1_1_head_dim_test": 2.0, "q1_1_d_k_test": 1.0, "q1_2_output_shape_test": 1.0, "q1_2_why_test": 1.0}


def roundtrip(value):
    functions = []
    data = rc.encode(value, functions)
    return rc.decode(data), functions


@pytest.mark.parametrize(
    "value",
    [None, True, 3, 2**80, 2.5, complex(1, 2), "B", (6, 768), [1, [2, 3]], {"a": (1.0,)}, Ellipsis, np.float64(8.0),
     np.int64(64), np.arange(6.0).reshape(2, 3), np.array([True, False])],
)
def test_plain_data_crosses_unchanged(value):
    back, _ = roundtrip(value)
    assert type(back) is type(value)
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and (back == value).all()
    else:
        assert back == value


def test_nan_crosses_as_nan_and_objects_as_their_name():
    back, _ = roundtrip(float("nan"))
    assert math.isnan(back)

    class Sneaky(float):  # a float that says it equals anything
        def __eq__(self, other):
            return True

    back, _ = roundtrip(Sneaky(1.0))
    assert type(back).__name__ == "Sneaky" and not isinstance(back, float) and back != 64
    back, _ = roundtrip(np.array([object()], dtype=object))  # would need pickle: not data
    assert type(back).__name__ == "ndarray" and not isinstance(back, np.ndarray)


def test_decode_never_unpickles():
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    forged = {"npy": base64.b64encode(buffer.getvalue()).decode()}
    with pytest.raises(ValueError):
        rc.decode(forged)


def test_functions_cross_as_handles():
    data = rc.encode(lambda d_model, h: d_model // h, functions := [])
    assert "function" in data and len(functions) == 1

    class Remote:
        def call(self, handle, args):
            return functions[handle](*args)

    proxy = rc.decode(data, Remote())
    assert callable(proxy) and proxy(768, 12) == 64


def test_checked_unpacks_and_names_its_fields():
    checked = rc.Checked(0.0, 2.0, "why")
    score, max_score, message = checked
    assert (score, max_score, message) == (0.0, 2.0, "why") and checked.score == 0.0 and checked.message == "why"


def graded_copy(tmp_path, name, answers, failed_tests=()):
    """The source notebook with some answer cells replaced, as if autograded: the test
    cells in ``failed_tests`` carry an error output (nbgrader failed them), the others none."""
    nb = nbformat.read(str(LEVEL1), as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
        if gid in failed_tests:
            cell.outputs = [nbformat.v4.new_output("error", ename="WrongAnswer", evalue="no", traceback=[])]
    path = tmp_path / name / "level1_recognition.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, str(path))
    return path


def test_honest_answers_pass(tmp_path, kernels):
    results = rc.recheck(LEVEL1, graded_copy(tmp_path, "honest", {}), timeout=20)
    assert {gid: tuple(r) for gid, r in results.items()} == {gid: (p, p, None) for gid, p in TESTS.items()}


def test_patched_checks_earn_nothing_but_right_answers_keep_their_points(tmp_path, kernels):
    answers = {
        "q1_1_head_dim": "import autograders.checks.level1 as checks, numpy\n"
                         "checks.q1_1_head_dim = lambda *a, **k: print('ok')\nnumpy.allclose = lambda *a, **k: True\n"
                         "def head_dim(d_model, h):\n    return d_model * h",
        "q1_1_d_k": "check.q1_1_d_k = lambda *a, **k: None\nd_k = 768 // 12",  # right anyway
        "q1_2_why": 'why = "A"',  # wrong, and nbgrader said so
    }
    path = graded_copy(tmp_path, "tamper", answers, failed_tests=("q1_2_why_test",))
    results = rc.recheck(LEVEL1, path, timeout=20)
    assert results["q1_1_head_dim_test"].score == 0 and rc.TAMPERING in results["q1_1_head_dim_test"].message
    assert "Multiplied instead of divided" in results["q1_1_head_dim_test"].message
    assert tuple(results["q1_1_d_k_test"]) == (1.0, 1.0, None)
    assert results["q1_2_why_test"].score == 0 and "tampering" not in results["q1_2_why_test"].message
    assert tuple(results["q1_2_output_shape_test"]) == (1.0, 1.0, None)


def test_a_student_side_that_dies_loses_only_what_it_had_not_handed_over(tmp_path, kernels):
    answers = {"q1_1_head_dim": "def head_dim(d_model, h):\n    import os\n    os._exit(3)"}
    results = rc.recheck(LEVEL1, graded_copy(tmp_path, "dies", answers), timeout=20)
    assert results["q1_1_head_dim_test"].score == 0 and "could not run" in results["q1_1_head_dim_test"].message
    # the data answers were handed over before the function was called
    assert results["q1_1_d_k_test"].score == 1 and results["q1_2_why_test"].score == 1


def test_an_unreadable_notebook_scores_nothing(tmp_path):
    missing = tmp_path / "nobody" / "level1_recognition.ipynb"
    results = rc.recheck(LEVEL1, missing)
    assert set(results) == set(TESTS) and all(r.score == 0 and "not graded" in r.message for r in results.values())
