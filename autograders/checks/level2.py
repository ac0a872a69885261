"""Checks for Level 2 (Application): Problems 2.1, 2.2 and 2.3.

The numbers, shapes and choices are declared in :mod:`autograders.problems.level2` and judged by its
engine; 2.3's ``softmax`` (a function) is checked here, naming a wrong softmax with the misconceptions
declared for 2.3's weights.
"""

import numpy as np

import mha_core as mha

from ..problems import level2 as problems, shared
from ..problems.engine import checks, recognise

from . import own_work
from .feedback import WrongAnswer, close, correct, named, tag_of, tries

checks(globals(), problems.ASSIGNMENT, problems.ANSWERS)

WEIGHT_TOL = problems.WEIGHT_TOL
SCORES = problems.SHEET_2_3["scores"]
LARGE_SCORES = [1000.0, 1001.0, 1002.0]  # the prompt's large scores: e^1000 overflows a float
SPREAD_SCORES = [-1000.0, 0.0, 1000.0]  # far apart: e^(s - min(s)) reaches e^2000 (only the maximum is a safe shift)
SPREAD = 700  # a spread of scores beyond which e^(s - c) overflows unless c is the largest score


HIDDEN_SCORES = [
    [1.0, 2.0, 3.0, 4.0],
    [0.0, 0.0, 0.0],
    [-3.0, -1.0],
    [7.5],
    [1000.0, 1001.0, 1002.0],  # e^1000 overflows: subtract the maximum first
    [-1000.0, -1000.5],  # e^-1000 underflows to 0
    [-1000.0, 0.0, 1000.0],  # far apart: only the maximum is a safe shift (after the large scores, as visible)
    [-800.0, 5.0, 1.0, -3.0],
]
_OVERFLOW = (named(shared.SOFTMAX_OVERFLOWS, "e^s overflows for scores this large (e^1000 is beyond any float; e^-1000 underflows to 0). "
             "Subtract the largest score from every score before exponentiating: the softmax does not change, "
             "and the largest exponent becomes e^0 = 1."))


_SHIFT = named(problems.SOFTMAX_SHIFT_NOT_MAX, "e^(s - c) still overflows when the scores are far apart: subtracting the "
              "smallest score (or the mean, or the first one: anything but the largest) leaves exponents as large as "
              "the largest score minus the smallest. Subtract the largest score: every exponent is then at most 0 and "
              "the largest term is e^0 = 1, however far apart the scores are.")


@tries("large scores", "other lengths (one to four", "equal and negative scores", "underflows")
def q2_3_softmax(softmax, hidden=False):
    """Problem 2.3: ``softmax(scores)`` returns the attention weights of a 1-D array of scores."""
    # The visible test tries one large-score case and one far-apart case too, so that a naive
    # np.exp(s) / np.exp(s).sum(), or one shifted by the smallest score, fails here with the fix named,
    # and not only in the hidden tests. Both come after the large scores, so a softmax that reaches the
    # far-apart ones shifts its scores (by something other than the maximum, if it overflows there).
    cases = HIDDEN_SCORES if hidden else [list(SCORES), LARGE_SCORES, SPREAD_SCORES]
    for scores in cases:
        shown = f"softmax(np.array({scores}))"
        far = np.abs(scores).max() > 700  # e^s overflows (or underflows to 0) a float
        spread = max(scores) - min(scores) > SPREAD
        advice = _SHIFT if spread else _OVERFLOW
        got = own_work.call("softmax", softmax, np.array(scores), hint=advice if far else "")
        try:
            got = np.asarray(got, dtype=float) if isinstance(got, (list, tuple, np.ndarray)) else got
        except (TypeError, ValueError):
            pass
        if isinstance(got, np.ndarray) and got.ndim == 2 and got.size == len(scores) and 1 in got.shape:
            got = got.reshape(len(scores))  # a row or column of weights
        if not isinstance(got, np.ndarray) or got.shape != (len(scores),):
            shape = got.shape if isinstance(got, np.ndarray) else type(got).__name__
            raise WrongAnswer(f"`{shown}` should return an array of {len(scores)} weights, one per score, got {shape}.")
        if not np.isfinite(got).all():
            raise WrongAnswer(f"`{shown}` returned NaN or infinity: {advice if far else 'look for a division by zero.'}",
                              misconception=tag_of(advice) if far else None)
        expected = mha.softmax(np.array(scores))
        if close(got, expected, WEIGHT_TOL):
            continue
        if hidden:
            raise WrongAnswer(f"`{shown}` does not give softmax weights for these scores.")
        entry = {"scores": tuple(scores)}
        with np.errstate(all="ignore"):  # 2.3's weights' misconceptions, at these scores
            mistake = recognise(problems.WEIGHTS, got, entry, sheet=False)
        raise WrongAnswer(mistake.message(problems.SCORES_2_3.view(entry), value=got) if mistake else f"`{shown}` returned {np.round(got, 4)}: exponentiate each score, then divide "
                                     "by the sum of the exponentials.")
    correct("Your softmax works for other scores too, large ones included." if hidden else
            "Exponentials, normalised to sum to 1.")


