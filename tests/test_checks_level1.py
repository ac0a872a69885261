"""Level 1 checks: 1.1's function head_dim (its right answers pass, its known wrong answers are named, a
broken function is told kindly, the hidden test gives nothing away). The declared answers: tests/test_problems.py."""

import pytest

from autograders.checks import level1 as check
from tests.checking import rejects


@pytest.mark.parametrize("hidden", [False, True])
def test_right_answers_pass(hidden, capsys):
    check.q1_1_head_dim(lambda d_model, h: d_model // h, hidden=hidden)
    check.q1_1_head_dim(lambda d_model, h: d_model / h, hidden=hidden)
    assert capsys.readouterr().out.count("✔ Correct.") == 2


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


# 1.1's d_k and 1.2's answers are declared: every form, misconception, wrong kind, hint and hidden message
# is tested from their declarations (tests/test_problems.py).
