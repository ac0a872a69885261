"""Level 2 checks: 2.3's function softmax (right answers pass, its known wrong answers are named, overflow is
explained) and what 2.3's declared answers leave to hand-written diagnoses. The declared answers themselves:
tests/test_problems.py."""

import re

import numpy as np
import pytest

from autograders.checks import level2 as check
from tests.checking import rejects


def stable_softmax(scores):
    exps = np.exp(scores - np.max(scores))
    return exps / exps.sum()


@pytest.mark.parametrize("hidden", [False, True])
def test_right_answers_pass(hidden, capsys):
    check.q2_3_softmax(stable_softmax, hidden=hidden)
    check.q2_3_softmax(lambda s: list(stable_softmax(s)), hidden=hidden)
    check.q2_3_weights([0.2595, 0.0351, 0.7054], hidden=hidden)  # the sheet's rounded weights
    check.q2_3_ratio(2.7, hidden=hidden)  # "roughly", as the prompt allows
    assert capsys.readouterr().out.count("✔ Correct.") == 4


# 2.1's shapes, 2.2's score and choice and 2.3's weights, winner and ratio are declared: every form, misconception,
# wrong kind, hint and hidden message is tested from their declarations (tests/test_problems.py). Here, 2.3's
# function and what the declarations leave to a hand-written diagnosis.


def _blank(scores):
    raise NotImplementedError()


def _unstable(scores):
    return np.exp(scores) / np.exp(scores).sum()


@pytest.mark.parametrize(
    "func, says",
    [
        (lambda s: s / s.sum(), "Linear normalisation"),
        (lambda s: np.exp(s), "Forgot to normalise"),
        (lambda s: np.exp(-s) / np.exp(-s).sum(), "signs are flipped"),
        (lambda s: stable_softmax(s)[::-1], "reverse order"),
        (lambda s: 100 * stable_softmax(s), "percentages"),
        (lambda s: stable_softmax(s).max(), "should return an array of 3 weights"),
        (lambda s: stable_softmax(s)[:2], "should return an array of 3 weights"),
        (lambda s: s / 0, "NaN or infinity"),
        (lambda s: s.softmax(), "raised AttributeError"),
        (_blank, "has no answer yet"),
        (stable_softmax(np.array([4.0, 2.0, 5.0])), "should be a function"),
        (None, "no answer yet"),
    ],
)
def test_softmax_mistakes(func, says):
    rejects(check.q2_3_softmax, func, says)


@pytest.mark.parametrize("hidden", [False, True])
def test_softmax_finds_overflow_and_hard_coding_visible_and_hidden_alike(hidden, recwarn):
    assert np.allclose(_unstable(np.array([4.0, 2.0, 5.0])), stable_softmax(np.array([4.0, 2.0, 5.0])))
    message = rejects(check.q2_3_softmax, _unstable, "overflows", "Subtract the largest score", hidden=hidden)
    assert "1000" in message
    hard_coded = lambda s: np.array([0.2595, 0.0351, 0.7054])  # noqa: E731
    rejects(check.q2_3_softmax, hard_coded, "1000" if not hidden else "should return an array of 4 weights",
            hidden=hidden)
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_a_loop_softmax_with_math_exp_is_told_about_overflow():
    import math as m

    def loop(scores):
        exps = [m.exp(s) for s in scores]
        return [e / sum(exps) for e in exps]

    for hidden in (False, True):
        rejects(check.q2_3_softmax, loop, "raised OverflowError", "Subtract the largest score", hidden=hidden)


@pytest.mark.parametrize("value, says", [([0.26, 0.04, 0.70], "to 4 decimals")])
def test_weights_mistakes(value, says):
    rejects(check.q2_3_weights, value, says)


def test_weights_hidden_gives_nothing_away():
    message = rejects(check.q2_3_weights, [0.26, 0.04, 0.70], "", hidden=True)
    assert not re.search(r"\d\.\d", message)


@pytest.mark.parametrize("value, says", [(0, "should be 1, 2 or 3"), (4, "should be 1, 2 or 3")])
def test_winner_mistakes(value, says):
    rejects(check.q2_3_winner, value, says)
