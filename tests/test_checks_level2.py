"""Level 2 checks: 2.3's function softmax (right answers pass, its known wrong answers are named, overflow is
explained) and what 2.3's declared answers leave to hand-written diagnoses. The declared answers themselves:
tests/test_problems.py."""

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


def test_weights_of_scores_divided_by_a_root_of_d_k_again_are_named_at_every_entry():
    """2.3's scores are already scaled: divided again by a √d_k (the sheet's 8, or any of 2.2's, 4 to 12), the
    weights are named so at every entry, never as another misconception (nor as the sheet's weights)."""
    from autograders.problems import level2 as problems
    from autograders.problems.engine import recognise

    weights = problems.WEIGHTS
    for entry in (weights.numbers.sheet, *weights.numbers.entries):
        for root in (4.0, 6.0, 8.0, 10.0, 12.0):
            value = np.round(stable_softmax(np.asarray(entry["scores"]) / root), 4)
            mistake = recognise(weights, value, entry)
            assert mistake is not None and mistake.tag == "scaled-twice", (entry, root)
    message = rejects(check.q2_3_weights, np.round(stable_softmax(np.array([4.0, 2.0, 5.0]) / 8), 4), "already scaled")
    assert "divided by about 8:" in message, message
    rejects(check.q2_3_softmax, lambda s: stable_softmax(s / 8), "already scaled")


@pytest.mark.parametrize("value, says", [(0, "should be 1, 2 or 3"), (4, "should be 1, 2 or 3")])
def test_winner_mistakes(value, says):
    rejects(check.q2_3_winner, value, says)


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
