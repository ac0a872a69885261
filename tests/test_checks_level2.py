"""Level 2 checks: right answers pass, the functions' known wrong answers are named, wrong types say
"should be", other wrong answers get a hint, hidden checks give nothing away (each declared
misconception's message and tag: tests/test_problems.py)."""

import math
import re

import numpy as np
import pytest

from autograders.checks import level2 as check
from autograders.checks.feedback import WrongAnswer
from tests.checking import rejects


def stable_softmax(scores):
    exps = np.exp(scores - np.max(scores))
    return exps / exps.sum()


@pytest.mark.parametrize("hidden", [False, True])
def test_right_answers_pass(hidden, capsys):
    check.q2_1_wq_shape((512, 64), hidden=hidden)
    check.q2_1_q_shape([10, 64], hidden=hidden)
    check.q2_1_scores_shape((10, 10), hidden=hidden)
    check.q2_1_head_shape((10, 64), hidden=hidden)
    check.q2_2_scaled_score(40 / np.sqrt(64), hidden=hidden)
    check.q2_2_scaled_score(5, hidden=hidden)
    check.q2_2_why("a", hidden=hidden)
    check.q2_3_softmax(stable_softmax, hidden=hidden)
    check.q2_3_softmax(lambda s: list(stable_softmax(s)), hidden=hidden)
    check.q2_3_weights(stable_softmax(np.array([4.0, 2.0, 5.0])), hidden=hidden)
    check.q2_3_weights([0.2595, 0.0351, 0.7054], hidden=hidden)  # the sheet's rounded weights
    check.q2_3_winner(3, hidden=hidden)
    check.q2_3_winner(np.int64(3), hidden=hidden)
    check.q2_3_ratio(math.e, hidden=hidden)
    check.q2_3_ratio(0.7054 / 0.2595, hidden=hidden)
    check.q2_3_ratio(2.7, hidden=hidden)  # "roughly"
    assert capsys.readouterr().out.count("✔ Correct.") == 16


@pytest.mark.parametrize(
    "func, value, says",
    [
        (check.q2_1_wq_shape, (512, 128), "Work out d_k"),
        (check.q2_1_head_shape, (8, 10, 64), "should be a 2-D shape"),
        (check.q2_1_head_shape, "10x64", "should be a shape"),
        (check.q2_1_head_shape, None, "no answer yet"),
    ],
)
def test_shape_mistakes(func, value, says):
    rejects(func, value, says)


@pytest.mark.parametrize("func", [check.q2_1_wq_shape, check.q2_1_q_shape, check.q2_1_scores_shape, check.q2_1_head_shape])
def test_shape_hidden_gives_nothing_away(func):
    message = rejects(func, (1, 2), "real forward pass", hidden=True)
    assert not re.search(r"\d", message)


@pytest.mark.parametrize(
    "value, says",
    [
        (4.0, "divide q k^T = 40 by √d_k"),
        ("5.0", "should be a single number"),
        (np.array([5.0, 5.0]), "should be a single number"),
        (None, "no answer yet"),
    ],
)
def test_scaled_score_mistakes(value, says):
    rejects(check.q2_2_scaled_score, value, says)


def test_scaled_score_hidden_gives_nothing_away():
    assert "5" not in rejects(check.q2_2_scaled_score, 0.625, "", hidden=True)


@pytest.mark.parametrize(
    "value, says",
    [("B", "over-shrinks"), ("c", "softmax's job"), ("D", "A coincidence of this example"), ("E", "should be one of"),
     (1, "should be one of"), ("B", 'misconception "divide by d_k to average the products"'),
     ("c", 'misconception "scaling normalises the scores"'), ("D", 'misconception "the scale is the number of heads"')],
)
def test_why_mistakes(value, says):
    rejects(check.q2_2_why, value, says)


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


@pytest.mark.parametrize(
    "value, says",
    [
        ([25.95, 3.51, 70.54], "percentages"),
        ([0.7054, 0.0351, 0.2595], "reverse order"),
        ([0.0351, 0.2595, 0.7054], "sorted"),
        ([0.26, 0.04, 0.70], "to 4 decimals"),
        ([0.2595, 0.0351], "should have shape (3,)"),
        ("0.2595 0.0351 0.7054", "should be an array of numbers"),
        (None, "no answer yet"),
    ],
)
def test_weights_mistakes(value, says):
    rejects(check.q2_3_weights, value, says)


def test_weights_hidden_gives_nothing_away():
    message = rejects(check.q2_3_weights, [0.26, 0.04, 0.70], "", hidden=True)
    assert not re.search(r"\d\.\d", message)


@pytest.mark.parametrize(
    "value, says",
    [(2, "Python index"), (1, "Softmax keeps the order"), (0, "should be 1, 2 or 3"), (4, "should be 1, 2 or 3"),
     (2.5, "should be a whole number"), ("token 3", "should be a single number"), (None, "no answer yet")],
)
def test_winner_mistakes(value, says):
    rejects(check.q2_3_winner, value, says)


@pytest.mark.parametrize(
    "value, says",
    [
        (0.7054 - 0.2595, "a difference of weights"),
        (0.2595 / 0.7054, "Upside down"),
        (0.7054 / 0.0351, "compares the winner with token 2"),
        (3.0, "divide token 3's weight by token 1's"),
        ("e", "should be a single number"),
        (None, "no answer yet"),
    ],
)
def test_ratio_mistakes(value, says):
    rejects(check.q2_3_ratio, value, says)


SHIFTED_BY_OTHER_THAN_THE_MAXIMUM = {
    "the smallest score": lambda s: np.exp(s - s.min()) / np.exp(s - s.min()).sum(),
    "np.min": lambda s: (lambda e: e / np.sum(e))(np.exp(s - np.min(s))),
    "the mean": lambda s: np.exp(s - s.mean()) / np.exp(s - s.mean()).sum(),
    "the first score": lambda s: np.exp(s - s[0]) / np.exp(s - s[0]).sum(),
}


def _loop_min_shift(scores):
    import math as m

    low = min(scores)
    exps = [m.exp(s - low) for s in scores]
    return [e / sum(exps) for e in exps]


@pytest.mark.parametrize("name", [*SHIFTED_BY_OTHER_THAN_THE_MAXIMUM, "a loop with math.exp"])
@pytest.mark.parametrize("hidden", [False, True])
def test_a_softmax_shifted_by_the_smallest_score_fails_visibly_with_the_fix_named(name, hidden, recwarn):
    """exp(s - min(s)) is right on the sheet's scores and on the large ones (1000, 1001, 1002), and overflows when
    the scores are far apart: the visible test tries such scores once, as the hidden ones do."""
    softmax = SHIFTED_BY_OTHER_THAN_THE_MAXIMUM.get(name, _loop_min_shift)
    for scores in ([4.0, 2.0, 5.0], check.LARGE_SCORES):  # where it is right: only far-apart scores tell
        assert np.allclose(softmax(np.array(scores)), stable_softmax(np.array(scores)))
    with np.errstate(all="ignore"):
        assert not np.isfinite(SHIFTED_BY_OTHER_THAN_THE_MAXIMUM["the smallest score"](np.array(check.SPREAD_SCORES))).all()
    with pytest.raises(WrongAnswer) as info:
        check.q2_3_softmax(softmax, hidden=hidden)
    message = str(info.value)
    assert info.value.misconception == "softmax-shift-not-max", message
    assert "far apart" in message and "Subtract the largest score" in message and "smallest score" in message
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_the_visible_softmax_cases_try_every_kind_the_hidden_ones_try_that_a_shift_can_miss():
    """Large scores and scores far apart are both tried visibly, the far-apart ones after the large ones (as hidden)."""
    def kinds(cases):
        return {("far" if np.abs(s).max() > 700 else "near", "spread" if max(s) - min(s) > check.SPREAD else "close")
                for s in cases}

    visible = [list(check.SCORES), check.LARGE_SCORES, check.SPREAD_SCORES]
    assert {k for k in kinds(check.HIDDEN_SCORES) if k[1] == "spread"} <= kinds(visible)
    assert check.SPREAD_SCORES in check.HIDDEN_SCORES
    first_spread = next(i for i, s in enumerate(check.HIDDEN_SCORES) if max(s) - min(s) > check.SPREAD)
    assert check.HIDDEN_SCORES.index(check.LARGE_SCORES) < first_spread
