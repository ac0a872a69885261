"""Checks for Level 2 (Application): Problems 2.1, 2.2 and 2.3.

One function per autograded answer cell, named after its grade_id. Expected
values come from :mod:`mha_core` and numpy; each known wrong answer is
recognised and its misconception named. With ``hidden=True`` a check tries
further cases or recomputes the answer another way, and its messages do not
give the answer away.
"""

import functools
import math

import numpy as np

import mha_core as mha

from ..variants import current
from ..variants.levels import LEVEL2, RATIO_TOL, WEIGHT_TOL
from ..variants.levels import Q2_1_HEAD_SHAPE, Q2_1_Q_SHAPE, Q2_1_SCORES_SHAPE, Q2_1_WQ_SHAPE, Q2_2_SCALED_SCORE
from ..variants.levels import Q2_3_RATIO, Q2_3_WEIGHTS
from ..variants.levels.level2 import ranked

from .feedback import WrongAnswer, as_choice, as_int, as_number, as_shape, as_vector, call, close, correct, named, tag_of

# The sheet's numbers (a student's own are the pools' entries: numbers()).
# Problem 2.1: the sheet's block.
D_MODEL, H, N = (Q2_1_WQ_SHAPE.sheet[k] for k in ("d_model", "h", "n"))
# Problem 2.2: one head's raw dot product.
D_K, DOT = Q2_2_SCALED_SCORE.sheet["d_k"], Q2_2_SCALED_SCORE.sheet["dot"]
WHY_OPTIONS = ("A", "B", "C", "D")
WHY_CORRECT = "A"
# Problem 2.3: scaled scores of tokens 1, 2, 3 for query token 3 (the sheet's winner token 3, runner-up token 1;
# a student's winner may be any of the three: the ratio is the winner's weight over the runner-up's).
SCORES = Q2_3_WEIGHTS.sheet["scores"]
SUM_TOL = len(SCORES) * WEIGHT_TOL + 1e-12  # weights each within WEIGHT_TOL add up to within this of 1
LARGE_SCORES = [1000.0, 1001.0, 1002.0]  # the prompt's large scores: e^1000 overflows a float




def numbers(pool):
    """This student's numbers for ``pool``'s problem (the sheet's outside a course)."""
    return current.numbers(LEVEL2, pool)


_SHEET_NUMBERS = named("example-numbers-only", "That is the answer for the sheet's numbers, not for yours: "
                       "use the numbers in the cell under the problem.")


def _named_mistake(pool, entry, value, messages, tolerance=None):
    """The message of ``messages`` (by the pool's misconception key) whose wrong answer ``value`` is, or None."""
    for key, wrong in pool.mistakes(entry).items():
        if close(value, wrong, pool.tolerance if tolerance is None else tolerance):
            return _SHEET_NUMBERS if key == "example-numbers-only" else messages[key]
    return None


# --- Problem 2.1 ----------------------------------------------------------------


def _sizes():
    entry = numbers(Q2_1_WQ_SHAPE)
    return entry, (entry["d_model"], entry["h"], entry["n"])


@functools.lru_cache(maxsize=4)
def _trace(d_model=D_MODEL, h=H, n=N):
    """A real forward pass of the block (computed once per size; only its shapes are read)."""
    block = mha.MultiHeadAttention.from_seed(d_model, h)
    return block, block.trace(np.random.default_rng(0).standard_normal((n, d_model)))


def warm():
    """Fill the cache of the reference forward pass (the grading zygote calls this once)."""
    _trace()


def _shape_check(name, value, pool, actual, messages, hidden, confirmation):
    shape = as_shape(name, value)
    entry, _ = _sizes()
    expected = tuple(pool.answer(entry))
    if hidden:
        if shape != actual:
            raise WrongAnswer(f"`{name}` does not match the shape found in a real forward pass.")
        correct("It matches a real forward pass.")
        return
    for key, wrong in pool.mistakes(entry).items():
        if shape == tuple(wrong):
            raise WrongAnswer(f"`{name}` is {shape}. {messages[key]}", misconception=tag_of(messages[key]))
    if len(shape) != 2:
        raise WrongAnswer(f"`{name}` should be a 2-D shape (rows, columns), got {shape}.", misconception="wrong-kind")
    if shape != expected:
        raise WrongAnswer(f"`{name}` is {shape}. Work out d_k = d_model/h first, then follow the rows and columns.")
    d_model, h, n = (entry[k] for k in ("d_model", "h", "n"))
    correct(confirmation.format(shape=expected, d_model=d_model, d_k=d_model // h))


def q2_1_wq_shape(wq_shape, hidden=False):
    """Problem 2.1: the shape of W_i^Q."""
    _, sizes = _sizes()
    block, _ = _trace(*sizes)
    known = {
        "one-head-for-all": named("one-head-for-all", "That is the full W^Q, for all heads together, not one head's slice: "
                            "head i keeps only its own d_k columns."),
        "transposed": named("transposed", "Transposed: Q_i = Q W_i^Q multiplies d_model-wide rows, so W_i^Q has d_model rows "
                        "and d_k columns."),
        "matrix-confused": named("matrix-confused", "That is the shape of Q_i (the projected queries), not of the matrix W_i^Q that makes them."),
    }
    _shape_check("wq_shape", wq_shape, Q2_1_WQ_SHAPE, block.head_weights(0)[0].shape, known,
                 hidden, "W_i^Q is {shape}: it squeezes a {d_model}-wide token to {d_k} numbers.")


def q2_1_q_shape(q_shape, hidden=False):
    """Problem 2.1: the shape of Q_i."""
    _, sizes = _sizes()
    _, trace = _trace(*sizes)
    known = {
        "one-head-for-all": named("one-head-for-all", "That is Q (or Q W^Q) for all heads together. One head projects to d_k = d_model/h "
                      "columns only."),
        "transposed": named("transposed", "Transposed: Q_i has one row per token."),
        "matrix-confused": named("matrix-confused", "That is W_i^Q, the projection matrix; Q_i = Q W_i^Q has one row per token."),
    }
    _shape_check("q_shape", q_shape, Q2_1_Q_SHAPE, trace.Q[0].shape, known, hidden,
                 "Q_i is {shape}: one {d_k}-wide query per token.")


def q2_1_scores_shape(scores_shape, hidden=False):
    """Problem 2.1: the shape of the score matrix Q_i K_i^T."""
    _, sizes = _sizes()
    _, trace = _trace(*sizes)
    known = {
        "qt-k": named("qt-k", "That is Q_i^T K_i instead of Q_i K_i^T: the transpose is on K_i, so the score matrix "
                    "has one entry per (token, token) pair."),
        "matrix-confused": named("matrix-confused", "That is the shape of Q_i (or of head_i). Multiplying by K_i^T turns the d_k columns "
                  "into one column per key token."),
        "one-head-for-all": named("one-head-for-all", "The score matrix belongs to one head: n rows (queries) and n columns (keys)."),
    }
    _shape_check("scores_shape", scores_shape, Q2_1_SCORES_SHAPE, trace.scores[0].shape, known, hidden,
                 "Q_i K_i^T is {shape}: one score for every (token, token) pair, as in figure s01.")


def q2_1_head_shape(head_shape, hidden=False):
    """Problem 2.1: the shape of head_i."""
    _, sizes = _sizes()
    _, trace = _trace(*sizes)
    known = {
        "matrix-confused": named("matrix-confused", "That is the weight matrix softmax(Q_i K_i^T/√d_k). head_i multiplies it by V_i, "
                "which brings back d_v columns."),
        "one-head-for-all": named("one-head-for-all", "That is the concatenation of all h heads (or the block's output). One head is d_v wide."),
        "transposed": named("transposed", "Transposed: head_i has one row per token."),
    }
    _shape_check("head_shape", head_shape, Q2_1_HEAD_SHAPE, trace.heads[0].shape, known, hidden,
                 "head_i is {shape}: one {d_k}-wide vector per token.")


# --- Problem 2.2 ----------------------------------------------------------------


def q2_2_scaled_score(scaled_score, hidden=False):
    """Problem 2.2: q^T k scaled for one head of width d_k (the sheet's: 40, 64)."""
    value = as_number("scaled_score", scaled_score)
    entry = numbers(Q2_2_SCALED_SCORE)
    d_k, dot = entry["d_k"], entry["dot"]
    if hidden:
        # Recompute through the library: two keys with dot products 40 and 0 with q;
        # the log of their weight ratio is the difference of the scaled scores.
        q = np.ones((1, d_k))
        keys = np.stack([np.full(d_k, dot / d_k), np.zeros(d_k)])
        _, weights = mha.scaled_dot_product_attention(q, keys, np.eye(2))
        if not close(value, math.log(weights[0, 0] / weights[0, 1]), 1e-3):
            raise WrongAnswer("`scaled_score` is not the score attention uses for this head.")
        correct("It is the score the attention layer itself uses.")
        return
    known = {
        "scaled-by-d-k": named("scaled-by-d-k", "Divided by d_k instead of √d_k: that over-shrinks the score. The typical "
                               "size of q^T k grows like √d_k, not d_k."),
        "no-scaling": named("no-scaling", "No scaling: the raw dot product still has to be divided by √d_k."),
        "scaled-with-d-model": named("scaled-with-d-model", "Used d_model instead of d_k: a head's dot product has d_k "
                                     "terms, so divide by √d_k."),
        "multiplied-by-sqrt-d-k": named("multiplied-by-sqrt-d-k", "Multiplied by √d_k instead of dividing: scaling makes "
                                        "the score smaller."),
        "-/multiplied-by-d-k": "Multiplied by d_k: scaling makes the score smaller, by √d_k.",
    }
    expected = dot / math.sqrt(d_k)
    if not close(value, expected, Q2_2_SCALED_SCORE.tolerance):
        message = _named_mistake(Q2_2_SCALED_SCORE, entry, value, known)
        if message:
            raise WrongAnswer(f"`scaled_score` is {value:g}. {message}", misconception=tag_of(message))
        raise WrongAnswer(f"`scaled_score` is {value:g}: divide q^T k = {dot:g} by √d_k with d_k = {d_k}.")
    correct(f"{dot:g}/√{d_k} = {dot:g}/{math.sqrt(d_k):g} = {expected:g}.")


WHY_MISCONCEPTIONS = {
    "B": named("scaled-by-d-k", 'That is the misconception "divide by d_k to average the products". Dividing by d_k over-shrinks: the '
         "average of d_k products has standard deviation 1/√d_k, so the scores crowd near 0 and softmax becomes "
         "nearly uniform (the signal is killed)."),
    "C": named("scaling-as-softmax", 'That is the misconception "scaling normalises the scores". Making weights '
               "sum to 1 is softmax's job; scaling changes the size of the scores, not their sum."),
    "D": named("scale-is-h", 'That is the misconception "the scale is the number of heads". A coincidence of this example: '
         "√64 = 8 = h here. The scale depends on d_k, the length of the dot product, whatever the number of heads."),
}


def q2_2_why(why, hidden=False):
    """Problem 2.2: why divide by √d_k (a choice A-D)."""
    choice = as_choice("why", why, WHY_OPTIONS)
    if choice != WHY_CORRECT:
        if hidden:
            raise WrongAnswer("`why` is not the reason for the scale.")
        raise WrongAnswer(f"`why` is {choice!r}. {WHY_MISCONCEPTIONS[choice]}",
                          misconception=tag_of(WHY_MISCONCEPTIONS[choice]))
    correct("q^T k has standard deviation √d_k; dividing by √d_k brings it back to about 1.")


# --- Problem 2.3 ----------------------------------------------------------------


def _softmax_mistake(got, scores):
    """A message naming the misconception if ``got`` is a known wrong softmax of ``scores``."""
    s = np.asarray(scores, float)
    with np.errstate(all="ignore"):
        known = [
            (s, named("forgot-softmax", "That forgot the softmax: these are the scores themselves. The softmax exponentiates each score "
                "and divides by the sum of the exponentials, so the weights are positive and add up to 1.")),
            (s / s.sum(), named("softmax-linear", "Linear normalisation (score / sum of scores) instead of exponentials: softmax "
                          "divides e^(s_j) by the sum of the e^(s_i).")),
            (np.exp(s), named("softmax-not-normalised", f"Forgot to normalise: these are the numerators e^(s_j). Divide each by their sum "
                        f"({np.exp(s).sum():.3f}) so the weights add up to 1.")),
            (np.exp(-s) / np.exp(-s).sum(), named("softmax-flipped-signs", "The signs are flipped: e^(-s_j) gives the *lowest* score the most "
                                            "weight. Use e^(s_j).")),
            (mha.softmax(s)[::-1], "The weights are in reverse order: keep weight j next to score j."),
            (np.sort(mha.softmax(s)), "The weights are sorted: keep weight j next to score j."),
        ]
    for wrong, message in known:
        if close(got, wrong, WEIGHT_TOL):
            return message
    if close(np.asarray(got) / 100, mha.softmax(s), WEIGHT_TOL):
        return named("weights-as-percentages", "These are percentages: weights are fractions that add up to 1.")
    return None


HIDDEN_SCORES = [
    [1.0, 2.0, 3.0, 4.0],
    [0.0, 0.0, 0.0],
    [-3.0, -1.0],
    [7.5],
    [1000.0, 1001.0, 1002.0],  # e^1000 overflows: subtract the maximum first
    [-1000.0, -1000.5],  # e^-1000 underflows to 0
]


_OVERFLOW = (named("softmax-overflows", "e^s overflows for scores this large (e^1000 is beyond any float; e^-1000 underflows to 0). "
             "Subtract the largest score from every score before exponentiating: the softmax does not change, "
             "and the largest exponent becomes e^0 = 1."))


def q2_3_softmax(softmax, hidden=False):
    """Problem 2.3: ``softmax(scores)`` returns the attention weights of a 1-D array of scores."""
    from .own_work import call as call_own  # a softmax that calls mha_core's earns nothing

    # The visible test tries one large-score case too, so that a naive np.exp(s) / np.exp(s).sum()
    # fails here, with the fix named, and not only in the hidden tests.
    cases = HIDDEN_SCORES if hidden else [list(SCORES), LARGE_SCORES]
    for scores in cases:
        shown = f"softmax(np.array({scores}))"
        far = np.abs(scores).max() > 700  # e^s overflows (or underflows to 0) a float
        got = call_own("softmax", softmax, np.array(scores), hint=_OVERFLOW if far else "")
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
            raise WrongAnswer(f"`{shown}` returned NaN or infinity: {_OVERFLOW if far else 'look for a division by zero.'}",
                              misconception=tag_of(_OVERFLOW) if far else None)
        expected = mha.softmax(np.array(scores))
        if close(got, expected, WEIGHT_TOL):
            continue
        if hidden:
            raise WrongAnswer(f"`{shown}` does not give softmax weights for these scores.")
        message = _softmax_mistake(got, scores)
        raise WrongAnswer(message or f"`{shown}` returned {np.round(got, 4)}: exponentiate each score, then divide "
                                     "by the sum of the exponentials.")
    correct("Your softmax works for other scores too, large ones included." if hidden else
            "Exponentials, normalised to sum to 1.")


def _scores():
    return tuple(float(s) for s in numbers(Q2_3_WEIGHTS)["scores"])


def q2_3_weights(weights, hidden=False):
    """Problem 2.3: the weights for the student's three scores (the sheet's: 4.0, 2.0, 5.0)."""
    w = as_vector("weights", weights, len(SCORES))  # a row or column of 3 weights is accepted
    scores = _scores()
    if hidden:
        # An independent recomputation with math.exp, and the two properties of any softmax.
        numerators = [math.exp(s) for s in scores]
        expected = [e / sum(numerators) for e in numerators]
        if not close(w.sum(), 1.0, SUM_TOL) or not (np.argsort(w) == np.argsort(scores)).all():
            raise WrongAnswer("`weights` should add up to 1 and keep the order of the scores.")
        if not close(w, expected, WEIGHT_TOL):
            raise WrongAnswer("`weights` is not the softmax of the scores to 4 decimals.")
        correct("The weights add up to 1 and follow the order of the scores.")
        return
    expected = Q2_3_WEIGHTS.answer({"scores": scores})
    if not close(w, expected, WEIGHT_TOL):
        sheet = scores != SCORES and close(w, Q2_3_WEIGHTS.answer(Q2_3_WEIGHTS.sheet), WEIGHT_TOL)
        message = _SHEET_NUMBERS if sheet else _softmax_mistake(w, scores)
        raise WrongAnswer(message or f"`weights` is {np.round(w, 4)}: each weight is e^(s_j) divided by "
                                     "e^(s_1) + e^(s_2) + e^(s_3), to 4 decimals.")
    correct(f"Weights {tuple(float(x) for x in np.round(expected, 4))}.")


def q2_3_winner(winner, hidden=False):
    """Problem 2.3: the number (1, 2 or 3, as the sheet counts) of the token with the largest weight."""
    value = as_int("winner", winner)
    scores = _scores()
    expected = int(np.argmax(mha.softmax(np.array(scores)))) + 1
    if value == expected:
        correct(f"Token {expected} has the largest score, so the largest weight"
                + (" (the query attending to itself)." if expected == len(scores) else "."))
        return
    if hidden:
        raise WrongAnswer("`winner` is not the token with the largest weight.")
    if value == expected - 1:  # the 0-based index of the winner
        itself = (f"Token {value} itself has score {scores[value - 1]:g}." if value >= 1 else
                  "There is no token 0.")
        raise WrongAnswer(
            f"`winner` is {value}. If you meant the Python index {value}, note that here tokens are numbered "
            f"1, 2, 3 as in the sheet. {itself}", misconception="counted-from-0"
        )
    if 1 <= value <= len(SCORES):
        raise WrongAnswer(
            f"`winner` is {value}, whose score is {scores[value - 1]:g}. Softmax keeps the order of the "
            "scores: the largest score gets the largest weight.", misconception="softmax-reorders"
        )
    raise WrongAnswer(f"`winner` should be 1, 2 or 3 (the token's number, as in the sheet), got {value}.")


def q2_3_ratio(ratio, hidden=False):
    """Problem 2.3: how many times the winner's weight is the runner-up's (the sheet's: w_3 / w_1)."""
    value = as_number("ratio", ratio)
    scores = _scores()
    entry = {"scores": scores}
    win, run, last = ranked(scores)
    w = mha.softmax(np.array(scores))
    expected = w[win - 1] / w[run - 1]
    s_w, s_r = scores[win - 1], scores[run - 1]
    asked = f"w_{win} / w_{run}"
    if hidden:
        # Independently: the ratio depends only on the score gap, e^(s_winner - s_runner-up).
        if not close(value, math.exp(s_w - s_r), RATIO_TOL):
            raise WrongAnswer(f"`ratio` is not how many times token {win}'s weight is token {run}'s (the winner's "
                              "over the runner-up's).")
        correct(named("ratio-misread", "The ratio depends only on the score gap."))
        return
    known = {
        "ratio-misread/scores": named("ratio-misread", f"That is the ratio of the *scores* ({s_w:g}/{s_r:g}). "
                                      f"Softmax exponentiates, so the ratio of the weights is e^(s_{win})/e^(s_{run}) "
                                      f"= e^(s_{win} - s_{run})."),
        "ratio-misread/difference": named("ratio-misread", "That is a difference of weights; 'by how much' here means how "
                                          f"many times larger: {asked}."),
        "ratio-misread/gap": named("ratio-misread", f"That is the score gap s_{win} - s_{run}. The weights' ratio is e "
                                   "raised to that gap."),
        "ratio-misread/upside-down": named("ratio-misread", f"Upside down: that is w_{run} / w_{win}. Token {win} wins, "
                                           f"so the ratio {asked} is larger than 1."),
        "ratio-misread/runner-up": named("ratio-misread", f"That compares the winner with token {last}, the smallest "
                                         f"weight; compare it with token {run}, the runner-up: {asked}."),
        "ratio-misread/sheet-tokens": named("ratio-misread", f"That is w_3 / w_1, the sheet's winner and runner-up: with "
                                            f"your scores token {win} wins and token {run} is the runner-up: {asked}."),
    }
    if not close(value, expected, RATIO_TOL):
        message = _named_mistake(Q2_3_RATIO, entry, value, known)
        if message:
            raise WrongAnswer(f"`ratio` is {value:g}. {message}", misconception=tag_of(message))
        raise WrongAnswer(f"`ratio` is {value:g}: divide token {win}'s weight by token {run}'s (the winner's by the "
                          f"runner-up's, {asked}).")
    gap = s_w - s_r
    correct(f"{asked} = e^({s_w:g}-{s_r:g}) = e^{gap:g} ≈ {expected:.3f}: a gap of 1 in the scores is a "
            "factor e in the weights.")
