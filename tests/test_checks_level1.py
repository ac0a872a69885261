"""Level 1 checks: right answers pass, the functions' known wrong answers are named, wrong types say
"should be", other wrong answers get a hint, hidden checks give nothing away (each declared
misconception's message and tag: tests/test_problems.py)."""


import numpy as np
import pytest

from autograders.checks import level1 as check
from tests.checking import rejects


@pytest.mark.parametrize("hidden", [False, True])
def test_right_answers_pass(hidden, capsys):
    check.q1_1_head_dim(lambda d_model, h: d_model // h, hidden=hidden)
    check.q1_1_head_dim(lambda d_model, h: d_model / h, hidden=hidden)
    check.q1_1_d_k(64, hidden=hidden)
    check.q1_1_d_k(np.float64(64.0), hidden=hidden)
    check.q1_2_output_shape((6, 768), hidden=hidden)
    check.q1_2_output_shape([6, 768], hidden=hidden)
    check.q1_2_why(" b ", hidden=hidden)
    assert capsys.readouterr().out.count("✔ Correct.") == 7


@pytest.mark.parametrize(
    "body, says",
    [
        (lambda d_model, h: d_model * h, "Multiplied instead of divided"),
        (lambda d_model, h: h / d_model, "Swapped roles"),
        (lambda d_model, h: d_model, "the full width of a token"),
        (lambda d_model, h: h, "the number of heads"),
        (lambda d_model, h: 64, "returned 64, but should be 128"),
        (lambda d_model, h: "64", "should be a single number"),
        (lambda d_model: 64, "raised TypeError"),
        (64, "should be a function"),
        (None, "no answer yet"),
    ],
)
def test_head_dim_mistakes(body, says):
    rejects(check.q1_1_head_dim, body, says)


def _blank(d_model, h):
    raise NotImplementedError()


def test_head_dim_blank_and_hidden_cases():
    rejects(check.q1_1_head_dim, _blank, "has no answer yet")
    # Right on the sheet's sizes only: the hidden test catches it without naming the answer.
    message = rejects(check.q1_1_head_dim, lambda d_model, h: 64 if d_model == 768 else d_model // 4, "", hidden=True)
    assert "not one head's width" in message and "should be" not in message


@pytest.mark.parametrize(
    "value, says",
    [
        (32, "use your formula"),
        ("64", "should be a single number"),
        ([64], "should be a single number"),
        (None, "no answer yet"),
    ],
)
def test_d_k_mistakes(value, says):
    rejects(check.q1_1_d_k, value, says)


def test_d_k_hidden_gives_nothing_away():
    message = rejects(check.q1_1_d_k, 64.5, "", hidden=True)
    assert "64" not in message


@pytest.mark.parametrize(
    "value, says",
    [
        ((6, 512), "Rows: one per token"),
        ((6, 768, 1), "should be a 2-D shape"),
        ("6x768", "should be a shape"),
        ((6.5, 768), "6.5 is not a whole number"),
        (None, "no answer yet"),
    ],
)
def test_output_shape_mistakes(value, says):
    rejects(check.q1_2_output_shape, value, says)


def test_output_shape_hidden_gives_nothing_away():
    message = rejects(check.q1_2_output_shape, (6, 64), "", hidden=True)
    assert "768" not in message


@pytest.mark.parametrize(
    "value, says",
    [
        ("E", "should be one of"),
        (2, "should be one of"),
        (None, "no answer yet"),
    ],
)
def test_why_mistakes(value, says):
    rejects(check.q1_2_why, value, says)
