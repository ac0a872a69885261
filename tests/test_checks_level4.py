"""The checks of Level 4 (Synthesis): right answers pass, known wrong ones name their misconception."""

import numpy as np
import pytest

import mha_core as mha
from autograders.checks import level4 as check
from tests.checking import accepts as _accepts
from tests.checking import rejects as _rejects


def _raise(exc):
    def fn(*args):
        raise exc

    return fn


# --- Problem 4.1 ---------------------------------------------------------------


def right_count(d_model, h):
    return h * 3 * d_model * (d_model // h) + d_model * d_model


def test_the_hidden_cases_are_valid_and_the_count_is_flat_in_h():
    for d_model, h in check.PARAM_CASES:
        assert mha.parameter_count(d_model, h) == right_count(d_model, h) == 4 * d_model**2


@pytest.mark.parametrize(
    "fn", [right_count, lambda d_model, h: 4 * d_model**2, lambda d_model, h: 3.0 * h * d_model * (d_model / h) + d_model**2]
)
def test_parameter_count_accepts(fn, capsys):
    _accepts(check.q4_1_parameter_count, fn, capsys)


@pytest.mark.parametrize(
    "fn, says",
    [
        (lambda d, h: 3 * d * d, "forgot W^O"),
        (lambda d, h: 4 * h * d * d, "parameters grow with h"),
        (lambda d, h: 4 * d * (d // h), "one head only"),
        (lambda d, h: 3 * d * (d // h) + d * d, "projections of one head only"),
        (lambda d, h: 4 * d * d + 4 * d, "includes biases"),
        (lambda d, h: 4 * d, "square it"),
        (lambda d, h: d * d, "single d_model×d_model matrix"),
        (lambda d, h: 12345, "not the count"),
        (_raise(NotImplementedError()), "not written yet"),
        (_raise(NotImplementedError()), "has no answer yet"),
        (_raise(ValueError("bad")), "your function raised ValueError: bad"),
        (lambda d: 1, "raised TypeError"),
        (lambda d, h: [d], "should be a single number"),
        (None, "no answer yet"),
        ("4 * d_model**2", "should be a function"),
    ],
)
def test_parameter_count_names_the_misconception(fn, says):
    _rejects(check.q4_1_parameter_count, fn, says)


def test_parameter_count_hidden_catches_hard_coded_and_h_dependent_answers():
    hard_coded = lambda d_model, h: 1_048_576  # noqa: E731
    check.q4_1_parameter_count(hard_coded)
    message = _rejects(check.q4_1_parameter_count, hard_coded, "not numbers from the example", hidden=True)
    assert "1,048,576" not in message.split("d_model=512, h=8")[-1]  # names the failing case, not its answer
    grows_after_8 = lambda d_model, h: 4 * d_model**2 * max(1, h // 8)  # noqa: E731
    check.q4_1_parameter_count(grows_after_8)
    _rejects(check.q4_1_parameter_count, grows_after_8, "d_model=512, h=16", hidden=True)


@pytest.mark.parametrize("value", [1_048_576, 1048576.0, np.int64(1_048_576), 4 * 512**2])
def test_params_512_accepts(value, capsys):
    _accepts(check.q4_1_params_512, value, capsys)


@pytest.mark.parametrize(
    "value, says",
    [
        (786_432, "forgot W^O"),
        (8_388_608, "parameters grow with h"),
        (131_072, "one head only"),
        (1_050_624, "includes biases"),
        (2_048, "square it"),
        (262_144, "single d_model×d_model matrix"),
        (1_000_000, "Not yet"),
        ("1048576", "should be a single number"),
        (None, "no answer yet"),
    ],
)
def test_params_512_names_the_misconception(value, says):
    _rejects(check.q4_1_params_512, value, says)


# --- Problem 4.2 ---------------------------------------------------------------


def test_expected_values_agree_with_the_plain_python_recomputation_and_the_sheet():
    for mine, by_hand in zip(check.expected_4_2(), check._by_hand()):
        np.testing.assert_allclose(mine, by_hand, atol=1e-12)
    scaled, weights, output = check.expected_4_2()
    assert np.round(scaled, 4).tolist() == [0.7071, 0.0, 0.7071, 1.4142]
    assert np.round(weights, 4).tolist() == [0.2212, 0.1091, 0.2212, 0.4486]
    assert np.round(output, 4).tolist() == [0.8847, 2.0124]


def _known():
    scaled, weights, output = check.expected_4_2()
    return scaled, weights, output


@pytest.mark.parametrize("hidden", [False, True])
def test_scaled_scores_accept_exact_rounded_and_row_vectors(hidden, capsys):
    scaled, _, _ = _known()
    for value in (scaled, [0.7071, 0, 0.7071, 1.4142], scaled[None, :], scaled.tolist(), scaled + 9e-4):
        check.q4_2_scaled_scores(value, hidden=hidden)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "value, says",
    [
        ([0.5, 0.0, 0.5, 1.0], "instead of √d_k"),
        ([1.0, 0.0, 1.0, 2.0], "no scaling"),
        ([1.4142, 0.0, 1.4142, 2.8284], "multiplies by √d_k"),
        ([0.7071, 0.0, 0.7071, -np.inf], "causal mask applied wrongly"),
        ([0.7071, 0.0, 0.7071, -1e9], "causal mask applied wrongly"),
        ([0.707, 0.0, 0.707, 1.41], "close but not within"),
        ([1.0, 2.0, 3.0, 4.0], "Not yet"),
        ([0.7071, 0.0, 0.7071], "should have shape (4,)"),
        ("0.7071, 0, 0.7071, 1.4142", "should be an array of numbers"),
        ([np.nan, 0.0, 0.7071, 1.4142], "NaN"),
        (None, "no answer yet"),
    ],
)
def test_scaled_scores_name_the_misconception(value, says):
    _rejects(check.q4_2_scaled_scores, value, says)


@pytest.mark.parametrize("hidden", [False, True])
def test_weights_accept_exact_and_rounded(hidden, capsys):
    _, weights, _ = _known()
    for value in (weights, [0.2212, 0.1091, 0.2212, 0.4486], weights - 9e-4):
        check.q4_2_weights(value, hidden=hidden)
    assert capsys.readouterr().err == ""


def _softmax(x):
    e = np.exp(np.asarray(x, float))
    return e / e.sum()


@pytest.mark.parametrize(
    "value, says",
    [
        (_softmax([0.5, 0, 0.5, 1]), "instead of √d_k"),
        (_softmax([1, 0, 1, 2]), "no scaling"),
        ([0.7071, 0.0, 0.7071, 1.4142], "forgot the softmax"),
        ([0.25, 0.0, 0.25, 0.5], "without exponentials"),
        (np.append(_softmax([0.7071, 0, 0.7071]), 0), "causal mask wrongly"),
        ([1.0, 0.0, 0.0, 0.0], "causal mask wrongly"),
        ([0.25, 0.25, 0.25, 0.25], "ignore the scores"),
        ([0.3, 0.3, 0.3, 0.3], "add up to 1"),
        ([0.22, 0.11, 0.22, 0.45], "close but not within"),
        ([0.1, 0.2, 0.3, 0.4], "Not yet"),
        ([[0.2212, 0.1091], [0.2212, 0.4486]], "should have shape (4,)"),
    ],
)
def test_weights_name_the_misconception(value, says):
    _rejects(check.q4_2_weights, value, says)


@pytest.mark.parametrize("value", [[0.8847, 2.0124], [0.8847, 2.0123], (0.8847, 2.0123)])
def test_output_accepts_the_exact_value_and_the_sheets_rounded_one(value, capsys):
    _accepts(check.q4_2_output, value, capsys)


def test_the_sheets_2_0123_is_its_rounded_terms_added():
    _, weights, output = _known()
    assert round(0.2181 + 1.7942, 4) == 2.0123  # the sheet's printed terms
    assert round(2 * weights[1], 4) == 0.2181 and round(4 * weights[3], 4) == 1.7943  # exactly: a digit higher
    assert abs(2.0123 - output[1]) <= check.TOL and round(output[1], 4) == 2.0124


@pytest.mark.parametrize(
    "value, says",
    [
        (_softmax([0.5, 0, 0.5, 1]) @ check.V, "instead of √d_k"),
        (_softmax([1, 0, 1, 2]) @ check.V, "no scaling"),
        (np.array([0.7071, 0.0, 0.7071, 1.4142]) @ check.V, "forgot the softmax"),
        (np.append(_softmax([0.7071, 0, 0.7071]), 0) @ check.V, "causal mask wrongly"),
        ([1.0, 0.0], "causal mask wrongly"),
        (None, "no answer yet"),
        ([0.88, 2.01], "close but not within"),
        ([1.0, 1.0], "Not yet"),
        ([0.8847, 2.0124, 0.0], "should have shape (2,)"),
    ],
)
def test_output_names_the_misconception(value, says):
    _rejects(check.q4_2_output, value, says)


def test_output_weighted_sum_of_keys():
    _, weights, _ = _known()
    _rejects(check.q4_2_output, weights @ check.K, "weighted sum of the keys")

