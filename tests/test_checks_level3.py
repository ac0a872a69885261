"""The checks of Level 3 (Analysis): right answers pass, known wrong ones name their misconception."""

import numpy as np
import pytest

import mha_core as mha
from autograders.checks import level3 as check
from autograders.problems import level3 as problems
from autograders.checks.feedback import WrongAnswer
from tests.checking import accepts as _accepts
from tests.checking import rejects as _rejects

# --- Problem 3.1 ---------------------------------------------------------------


def right_cost(d_model, h, n):
    return h * 2 * n * n * (d_model // h)


def test_expected_cost_is_flat_in_h_and_matches_a_traced_pass():
    costs = {problems.attention_cost(512, h, 10) for h in mha.plots.head_options(512)}
    assert costs == {2 * 10 * 10 * 512}
    for d_model, h, n in [(512, 8, 10), (24, 3, 5), (64, 64, 2)]:
        assert problems.traced_cost(d_model, h, n) == problems.attention_cost(d_model, h, n)
    sheet = problems.HEADS_3_1.view(problems.HEADS_3_1.sheet)
    assert problems.COST_RATIO.answer(sheet) == 1


def test_attention_cost_accepts_int_and_float_answers(capsys):
    _accepts(check.q3_1_attention_cost, right_cost, capsys)
    _accepts(check.q3_1_attention_cost, lambda d_model, h, n: 2.0 * n**2 * h * (d_model / h), capsys)


@pytest.mark.parametrize(
    "fn, says",
    [
        (lambda d, h, n: 2 * h * n * n * d, "h heads cost h times more"),
        (lambda d, h, n: 2 * n * n * (d // h), "one head only"),
        (lambda d, h, n: h * n * n * (d // h), "only one of the two stages"),
        (lambda d, h, n: right_cost(d, h, n) + h * n * n, "softmax"),
        (lambda d, h, n: right_cost(d, h, n) + 4 * n * d * d, "projections"),
        (lambda d, h, n: 2 * h * n * n * (d // h) ** 2, "d_k twice"),
        (lambda d, h, n: 7, "not the count"),
    ],
)
def test_attention_cost_names_the_misconception(fn, says):
    _rejects(check.q3_1_attention_cost, fn, says)


def test_attention_cost_hidden_catches_a_hard_coded_answer_without_giving_it_away(capsys):
    hard_coded = lambda d_model, h, n: 102400  # noqa: E731
    check.q3_1_attention_cost(hard_coded)
    message = _rejects(check.q3_1_attention_cost, hard_coded, "not numbers from the example", hidden=True)
    assert "102,400" not in message and "102400" not in message


def _raise(exc):
    def fn(*args):
        raise exc

    return fn


@pytest.mark.parametrize(
    "fn, says",
    [
        (_raise(NotImplementedError()), "not written yet"),
        (_raise(NotImplementedError()), "has no answer yet"),
        (_raise(ZeroDivisionError("division by zero")), "your function raised ZeroDivisionError: division by zero"),
        (None, "no answer yet"),
        (42, "should be a function"),
        (lambda d, h, n: "lots", "should be a single number"),
        (lambda d, h: 1, "raised TypeError"),
    ],
)
def test_attention_cost_reports_broken_functions_kindly(fn, says):
    _rejects(check.q3_1_attention_cost, fn, says)


def test_a_warning_inside_the_students_function_does_not_reach_stderr(capsys):
    def noisy(d_model, h, n):
        np.float64(1.0) / np.float64(0.0)  # RuntimeWarning: divide by zero
        return right_cost(d_model, h, n)

    check.q3_1_attention_cost(noisy)
    assert capsys.readouterr().err == ""


# --- Problem 3.2 ---------------------------------------------------------------


def test_expected_shapes_agree_with_a_traced_pass():
    block = mha.MultiHeadAttention.from_seed(512, 8)
    sheet = problems.BLOCK_3_2.view(problems.BLOCK_3_2.sheet)
    assert problems.CONCAT_SHAPE.answer(sheet) == block.trace(np.ones((10, 512))).concat.shape == (10, 512)
    assert problems.WO_SHAPE.answer(sheet) == block.W_O.shape == (512, 512)


# --- Problem 3.3 ---------------------------------------------------------------


def test_distinct_cases_are_what_they_claim():
    for hidden in (False, True):
        for weights, expected in check._distinct_cases(hidden):
            assert len(np.unique(weights.reshape(len(weights), -1), axis=0)) == expected
    shared, separate = (w for w, _ in check._distinct_cases(False))
    np.testing.assert_array_equal(shared[0], shared[1])  # byte-for-byte identical heads
    assert not np.allclose(separate[0], separate[1])


def loop_count(weights):
    distinct = []
    for head in weights:
        if not any(np.array_equal(head, seen) for seen in distinct):
            distinct.append(head)
    return len(distinct)


@pytest.mark.parametrize(
    "fn",
    [
        loop_count,
        lambda w: len(np.unique(w.reshape(len(w), -1), axis=0)),
        lambda w: np.int64(len({head.tobytes() for head in w})),
        lambda w: float(loop_count(w)),
    ],
)
def test_count_distinct_heads_accepts(fn, capsys):
    _accepts(check.q3_3_count_distinct_heads, fn, capsys)


@pytest.mark.parametrize(
    "fn, says",
    [
        (lambda w: len(w), "shared projections still give different heads"),
        (lambda w: len(np.unique(w)), "distinct numbers, not distinct heads"),
        (lambda w: len(w) - loop_count(w), "counts the duplicated heads"),
        (lambda w: 5, "compare each head"),
        (lambda w: 1.5, "should be a whole number"),
        (_raise(NotImplementedError()), "not written yet"),
        (_raise(IndexError("index 3 is out of bounds")), "your function raised IndexError"),
    ],
)
def test_count_distinct_heads_names_the_misconception(fn, says):
    _rejects(check.q3_3_count_distinct_heads, fn, says)


def test_count_distinct_heads_hidden_catches_a_function_right_only_for_two_heads():
    only_two = lambda w: 1 if np.array_equal(w[0], w[-1]) else 2  # noqa: E731
    check.q3_3_count_distinct_heads(only_two)
    _rejects(check.q3_3_count_distinct_heads, only_two, "compare whole heads", hidden=True)


def test_the_students_function_cannot_spoil_the_checks_data():
    def scribble(weights):
        weights[...] = 0
        return loop_count(weights)

    with pytest.raises(WrongAnswer):  # every head is now zero: 1 distinct head, not 2
        check.q3_3_count_distinct_heads(scribble)
    check.q3_3_count_distinct_heads(loop_count)  # the next call still sees the real weights
