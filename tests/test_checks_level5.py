"""The Level 5 checks: right answers pass, known wrong answers name their
misconception, wrong types get a "should be" message, hidden checks keep the
answer to themselves; and the self-test's flash cards."""

import re
from pathlib import Path

import nbformat
import numpy as np
import pytest

import mha_core as mha
from autograders.checks import level5 as check
from autograders.problems import level5 as problems
from tests.checking import rejects as _rejects
from tests.fixtures import level5 as fixtures

ROOT = Path(__file__).resolve().parents[1]
LEVEL5 = ROOT / "notebooks" / "level5_mastery.ipynb"
SELF_TEST = ROOT / "notebooks" / "self_test.ipynb"

# answer cell grade_id -> (check, the variable the cell defines): the declared answers and 5.2's function
ANSWERS = {answer.id: (getattr(check, answer.id), answer.variable) for answer in problems.ANSWERS}
ANSWERS["q5_2_attention_output"] = (check.q5_2_attention_output, "attention_output")


def _run(code, name):
    namespace = {"np": np, "mha": mha}
    exec(code, namespace)
    return namespace[name]


# Right answers in every accepted form, visible and hidden: tests/test_accepted_forms.py.


MISTAKES = fixtures.MISTAKES


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: f"{m.cell}:{m.code.splitlines()[-1].strip()}")
def test_each_known_mistake_names_its_misconception(mistake):
    check_function, name = ANSWERS[mistake.cell]
    assert mistake.fails == (f"{mistake.cell}_test",)
    _rejects(check_function, _run(mistake.code, name), mistake.says)


def test_every_answer_cell_has_a_known_mistake():
    assert {m.cell for m in MISTAKES} == set(ANSWERS)


# Every declared answer's wrong kinds, blank answer, unknown wrong answer and hidden message:
# tests/test_problems.py. Here, 5.2's function.
def test_a_blank_function_gets_no_answer_yet():
    def blank(weights, values):
        raise NotImplementedError()

    _rejects(check.q5_2_attention_output, blank, "no answer yet", "not written yet")
    _rejects(check.q5_2_attention_output, None, "no answer yet")


@pytest.mark.parametrize(
    "value,phrase",
    [
        ("weights @ values", "should be a function"),
        (lambda w, v: (w @ v)[:, :1], "should return shape"),
        (lambda w, v: (w @ v).T, "should return shape"),
        (lambda w, v: None, "forget the `return`"),
        (lambda w, v: "output", "should return an array of numbers"),
    ],
)
def test_a_function_of_the_wrong_kind_or_shape_is_told_what_it_should_be(value, phrase):
    _rejects(check.q5_2_attention_output, value, phrase)


def test_one_over_d_model_is_named_without_calling_it_h_over_d_model():
    # At the limit h = d_model, h / d_model is 1, the right answer: 1/512 is 1 / d_model.
    message = _rejects(check.q5_1_d_k_limit, 1 / 512, "1 / d_model", "upside down")
    assert "h / d_model" not in message, message


def test_an_unknown_wrong_function_gets_a_hint():
    _rejects(check.q5_2_attention_output, lambda w, v: 2 * (w @ v), "sum over j of w_ij v_j")


def test_the_function_check_reports_an_exception_kindly_and_needs_no_traceback():
    def buggy(weights, values):
        return weights @ values.T  # (4, 4) @ (3, 4): a shape error

    message = _rejects(check.q5_2_attention_output, buggy, "raised ValueError", "weights of shape (4, 4)")
    assert "Traceback" not in message
    # the shape error explained: the expression, its operands' shapes, what @ needs
    assert "`weights @ values.T` raised ValueError: `weights` has shape (4, 4) and `values.T` has shape (3, 4)" in message
    assert "the last axis of `weights` (4) to be as long as the second-to-last of `values.T` (3)" in message


def test_the_function_check_does_not_let_the_student_change_its_inputs():
    def in_place(weights, values):
        values *= 0  # would corrupt the check's own expected value if it were not given copies
        return weights @ values

    _rejects(check.q5_2_attention_output, in_place)


def test_a_function_right_for_square_weights_only_fails_the_visible_test_too():
    """The visible cases try every kind of shape the hidden ones try: no visible pass, then a hidden zero."""
    def square_only(weights, values):
        n_q, n_k = weights.shape
        return weights @ values if n_q == n_k else np.zeros((n_q, values.shape[1]))

    message = _rejects(check.q5_2_attention_output, square_only, "weights of shape (3, 5)")
    assert "@" not in message and "einsum" not in message
    _rejects(check.q5_2_attention_output, square_only, hidden=True)

    def crashes_unless_square(weights, values):
        return weights @ values[: len(weights)]

    _rejects(check.q5_2_attention_output, crashes_unless_square, "raised ValueError", "weights of shape (3, 5)")


def test_the_visible_cases_try_every_kind_the_hidden_ones_try():
    import inspect

    source = inspect.getsource(check.q5_2_attention_output)
    start = source.index("cases = (")
    visible = source[start:source.index("if not hidden", start)]
    for kind in ("softmax", "dirichlet", "one-hot", "uniform"):
        assert f'"{kind}"' in visible, kind
    shapes = [tuple(map(int, m)) for m in re.findall(r"\((\d+), (\d+), (\d+), \"", visible)]
    assert any(q < k for q, k, _ in shapes) and any(q > k for q, k, _ in shapes)
    assert any(q == 1 for q, _, _ in shapes) and any(d == 1 for _, _, d in shapes)


def test_a_wrong_answer_prints_nothing(capsys):
    _rejects(check.q5_3_score_shape, (6, 4))
    assert capsys.readouterr() == ("", "")


# --- The notebooks ------------------------------------------------------------


def test_the_level5_notebook_has_the_graded_cells_and_points():
    nb = nbformat.read(LEVEL5, as_version=4)
    graded = {
        c.metadata.nbgrader["grade_id"]: c.metadata.nbgrader
        for c in nb.cells
        if c.metadata.get("nbgrader", {}).get("grade")
    }
    tests = {f"{cell}_test" for cell in ANSWERS}
    written = {"q5_1_explain", "q5_2_explain"}
    assert set(graded) == tests | written
    assert all(1 <= meta["points"] <= 2 for meta in graded.values())
    worked = [c.source.splitlines()[0] for c in nb.cells if "worked-solution" in c.metadata.get("tags", [])]
    assert worked == ["**Solution 5.1**", "**Solution 5.2**", "**Solution 5.3**"]


def test_the_self_test_cards_reveal_one_by_one_and_are_not_graded():
    nb = nbformat.read(SELF_TEST, as_version=4)
    assert not any("nbgrader" in c.metadata for c in nb.cells)
    cards = [c.source for c in nb.cells if "<details>" in c.source]
    assert 8 <= len(cards) <= 12
    for card in cards:
        assert "<summary>Show answer</summary>\n\n" in card and card.endswith("\n\n</details>"), card
    text = "\n".join(cards)
    for question in ("cancels the $h$", "concatenate the heads", "Total parameters", "output length of cross"):
        assert question in text
