"""Level 2 (Application), notebooks/level2_application.ipynb: Problems 2.1, 2.2 and 2.3, declared once.

2.3's ``softmax`` (a function) keeps its own check (:mod:`autograders.checks.level2`), which names its
wrong answers with :data:`WEIGHTS`' misconceptions and the ones declared for it here.
"""

import dataclasses
import functools
import itertools
import math

import numpy as np

import mha_core as mha

from . import shared
from .declare import Answer, Later, Mistake, Numbers, choice, close
from .level1 import divides
from .misconception import Misconception

ASSIGNMENT = "level2_application"


# --- Problem 2.1: the shapes through one head --------------------------------------------------------

SHEET_2_1 = {"d_model": 512, "h": 8, "n": 10}


def _valid_2_1(n):
    return divides(n) or ("n equals d_k" if n["n"] == n["d_model"] // n["h"] else None)


BLOCK_2_1 = Numbers("q2_1", sheet=SHEET_2_1, valid=_valid_2_1, derive=lambda n: {"d_k": n["d_model"] // n["h"]},
                    entries=tuple(
    {"d_model": d_model, "h": h, "n": n}
    for d_model, h, n in itertools.product((256, 384, 512, 768), (4, 6, 8, 16), (5, 7, 9, 12))
    if d_model % h == 0 and n not in (d_model // h, d_model, h) and n * h != d_model // h  # (n·h)² is not d_k²
    and {"d_model": d_model, "h": h, "n": n} != SHEET_2_1))


QT_K = Misconception("qt-k", "Q_i^T K_i instead of Q_i K_i^T")


@functools.lru_cache(maxsize=4)
def trace(d_model=512, h=8, n=10):
    """A real forward pass of the block (computed once per size; only its shapes are read)."""
    block = mha.MultiHeadAttention.from_seed(d_model, h)
    return block, block.trace(np.random.default_rng(0).standard_normal((n, d_model)))


def _shape(id, answer, mistakes, right, real):
    return Answer(
        id, "shape", answer, BLOCK_2_1, tolerance=0, mistakes=mistakes, right=right,
        wrong_ndim=("`{name}` should be a 2-D shape (rows, columns), got {value}.", shared.WRONG_KIND),
        fallback=lambda n: f"`{id.split('_', 2)[2]}` is {n.value}. Work out d_k = d_model/h first, then follow the "
                           "rows and columns.",
        hidden=lambda n: real(*trace(n.d_model, n.h, n.n)), hidden_right="It matches a real forward pass.",
        trials=("real forward pass",),
        hidden_says=lambda n: f"`{n.name}` does not match the shape found in a real forward pass.")


WQ_SHAPE = _shape(
    "q2_1_wq_shape", lambda n: (n.d_model, n.d_k), (
        Mistake(shared.ONE_HEAD_FOR_ALL, lambda n: (n.d_model, n.d_model), "That is the full W^Q, for all heads together, "
                "not one head's slice: head i keeps only its own d_k columns."),
        Mistake(shared.TRANSPOSED, lambda n: (n.d_k, n.d_model), "Transposed: Q_i = Q W_i^Q multiplies d_model-wide rows, "
                "so W_i^Q has d_model rows and d_k columns."),
        Mistake(shared.MATRIX_CONFUSED, lambda n: (n.n, n.d_k), "That is the shape of Q_i (the projected queries), not of "
                "the matrix W_i^Q that makes them."),
    ), lambda n: f"W_i^Q is {(n.d_model, n.d_k)}: it squeezes a {n.d_model}-wide token to {n.d_k} numbers.",
    lambda block, trace: block.head_weights(0)[0].shape)
Q_SHAPE = _shape(
    "q2_1_q_shape", lambda n: (n.n, n.d_k), (
        Mistake(shared.ONE_HEAD_FOR_ALL, lambda n: (n.n, n.d_model), "That is Q (or Q W^Q) for all heads together. One head "
                "projects to d_k = d_model/h columns only."),
        Mistake(shared.TRANSPOSED, lambda n: (n.d_k, n.n), "Transposed: Q_i has one row per token."),
        Mistake(shared.MATRIX_CONFUSED, lambda n: (n.d_model, n.d_k), "That is W_i^Q, the projection matrix; Q_i = Q W_i^Q "
                "has one row per token."),
    ), lambda n: f"Q_i is {(n.n, n.d_k)}: one {n.d_k}-wide query per token.", lambda block, trace: trace.Q[0].shape)
SCORES_SHAPE = _shape(
    "q2_1_scores_shape", lambda n: (n.n, n.n), (
        Mistake(QT_K, lambda n: (n.d_k, n.d_k), "That is Q_i^T K_i instead of Q_i K_i^T: the transpose is on K_i, so "
                "the score matrix has one entry per (token, token) pair."),
        Mistake(shared.MATRIX_CONFUSED, lambda n: (n.n, n.d_k), "That is the shape of Q_i (or of head_i). Multiplying by "
                "K_i^T turns the d_k columns into one column per key token."),
        Mistake(shared.ONE_HEAD_FOR_ALL, lambda n: (n.n * n.h, n.n * n.h), "The score matrix belongs to one head: n rows "
                "(queries) and n columns (keys)."),
    ), lambda n: f"Q_i K_i^T is {(n.n, n.n)}: one score for every (token, token) pair, as in figure s01.",
    lambda block, trace: trace.scores[0].shape)
HEAD_SHAPE = _shape(
    "q2_1_head_shape", lambda n: (n.n, n.d_k), (
        Mistake(shared.MATRIX_CONFUSED, lambda n: (n.n, n.n), "That is the weight matrix softmax(Q_i K_i^T/√d_k). head_i "
                "multiplies it by V_i, which brings back d_v columns."),
        Mistake(shared.ONE_HEAD_FOR_ALL, lambda n: (n.n, n.d_model), "That is the concatenation of all h heads (or the "
                "block's output). One head is d_v wide."),
        Mistake(shared.TRANSPOSED, lambda n: (n.d_k, n.n), "Transposed: head_i has one row per token."),
    ), lambda n: f"head_i is {(n.n, n.d_k)}: one {n.d_k}-wide vector per token.", lambda block, trace: trace.heads[0].shape)


# --- Problem 2.2: the scaled score, and why --------------------------------------------------------

SHEET_2_2 = {"d_k": 64, "dot": 40.0, "d_model": 512}
DOT_2_2 = Numbers(
    "q2_2", sheet=SHEET_2_2, symbols={"dot": "q k^T"},
    valid=lambda n: None if n["d_k"] > 0 and n["d_model"] % n["d_k"] == 0 else "d_k does not divide d_model",
    entries=tuple({"d_k": d_k, "dot": dot, "d_model": 8 * d_k}
                  for d_k, dot in itertools.product((16, 36, 64, 100, 144), (24.0, 30.0, 36.0, 48.0, 60.0, 72.0))
                  if dot / math.sqrt(d_k) != 5))  # 5: the sheet's answer


def _library_score(n):
    """The score the library's attention uses: two keys with dot products ``dot`` and 0 with q; the log of
    their weight ratio is the difference of the scaled scores."""
    q = np.ones((1, n.d_k))
    keys = np.stack([np.full(n.d_k, n.dot / n.d_k), np.zeros(n.d_k)])
    _, weights = mha.scaled_dot_product_attention(q, keys, np.eye(2))
    return math.log(weights[0, 0] / weights[0, 1])


SCALED_SCORE = Answer(
    "q2_2_scaled_score", "number", lambda n: n.dot / math.sqrt(n.d_k), DOT_2_2, tolerance=1e-3, sheet_mistake=True,
    trials=("the library's own attention",),
    mistakes=(
        Mistake(shared.SCALED_BY_D_K, lambda n: n.dot / n.d_k, "Divided by d_k instead of √d_k: that over-shrinks the "
                "score. The typical size of q k^T grows like √d_k, not d_k."),
        Mistake(shared.NO_SCALING, lambda n: n.dot, "No scaling: the raw dot product still has to be divided by √d_k."),
        Mistake(shared.SCALED_WITH_D_MODEL, lambda n: n.dot / math.sqrt(n.d_model), "Used d_model instead of d_k: a head's "
                "dot product has d_k terms, so divide by √d_k."),
        Mistake(shared.MULTIPLIED_BY_SQRT_D_K, lambda n: n.dot * math.sqrt(n.d_k), "Multiplied by √d_k instead of dividing: "
                "scaling makes the score smaller."),
        Mistake("-/multiplied-by-d-k", lambda n: n.dot * n.d_k, "Multiplied by d_k: scaling makes the score smaller, "
                "by √d_k."),
    ),
    fallback=lambda n: f"`scaled_score` is {n.value:g}: divide q k^T = {n.dot:g} by √d_k with d_k = {n.d_k}.",
    right=lambda n: f"{n.dot:g}/√{n.d_k} = {n.dot:g}/{math.sqrt(n.d_k):g} = {n.dot / math.sqrt(n.d_k):g}.",
    hidden=_library_score, hidden_says="`scaled_score` is not the score attention uses for this head.",
    hidden_right="It is the score the attention layer itself uses.",
)

SCALING_AS_SOFTMAX = Misconception("scaling-as-softmax", "scaling confused with softmax's job", option=r"sum to 1")
SCALE_IS_H = Misconception("scale-is-h", "the scale taken for the number of heads", option=r"number of heads")

WHY = choice(
    "q2_2_why", "A", {
        "B": (shared.SCALED_BY_D_K, 'That is the misconception "divide by d_k to average the products". Dividing by d_k '
              "over-shrinks: the average of d_k products has standard deviation 1/√d_k, so the scores crowd near 0 "
              "and softmax becomes nearly uniform (the signal is killed)."),
        "C": (SCALING_AS_SOFTMAX, 'That is the misconception "scaling normalises the scores". Making weights sum to '
              "1 is softmax's job; scaling changes the size of the scores, not their sum."),
        "D": (SCALE_IS_H, 'That is the misconception "the scale is the number of heads". A coincidence of this '
              "example: √64 = 8 = h here. The scale depends on d_k, the length of the dot product, whatever the "
              "number of heads."),
    },
    right="q k^T has standard deviation √d_k; dividing by √d_k brings it back to about 1.",
    hidden_says="`why` is not the reason for the scale.",
)


# --- Problem 2.3: softmax by hand: the weights, the winner, by how much -------------------------------

SHEET_2_3 = {"scores": (4.0, 2.0, 5.0)}
WEIGHT_TOL = 5e-4  # the sheet gives weights to 4 decimals (3 decimals pass too)
SUM_TOL = 3 * WEIGHT_TOL + 1e-12  # three weights each within WEIGHT_TOL add up to within this of 1
RATIO_TOL = 0.02  # "roughly": ratios of rounded weights are accepted

SOFTMAX_LINEAR = Misconception("softmax-linear", "softmax as a linear normalisation")
SOFTMAX_NOT_NORMALISED = Misconception("softmax-not-normalised", "softmax not normalised")
SOFTMAX_FLIPPED_SIGNS = Misconception("softmax-flipped-signs", "softmax with flipped signs")
WEIGHTS_AS_PERCENTAGES = Misconception("weights-as-percentages", "weights as percentages")
SCALED_TWICE = Misconception("scaled-twice", "scores already scaled divided by √d_k again")
SOFTMAX_REORDERS = Misconception("softmax-reorders", "softmax reorders the scores")
# named by the check of 2.3's softmax function (autograders.checks.level2)
SOFTMAX_SHIFT_NOT_MAX = Misconception(
    "softmax-shift-not-max", "softmax shifted by a score other than the largest (overflows for scores far apart)"
)

# Where the winner (w), the runner-up (r) and the last token (l) stand, tokens 1, 2, 3: the winner at each
# position. Never in order: ascending scores give sorted weights (the "sorted" slip), descending ones weights
# whose reverse is sorted.
_ARRANGEMENTS = ("rlw", "wlr", "rwl", "lwr")  # "rlw": the sheet's order (4, 2, 5)


def _candidates():
    """Scores with gaps of at least 0.5, the winner at token 1, 2 or 3 (the sheet's: token 3)."""
    for s_l, low, high in itertools.product((1.0, 2.0), (0.5, 1.0, 1.5, 2.5, 3.0), (0.5, 1.5, 2.0)):
        s_r, s_w = s_l + low, s_l + low + high  # never the sheet's gap s_w - s_r = 1
        # two misreadings of the ratio would coincide: s_w/s_r with s_w - s_r, w_w/w_l with the sheet's e
        if s_w / s_r == s_w - s_r or s_w - s_l == 1:
            continue
        for arrangement in _ARRANGEMENTS:
            yield {"scores": tuple({"w": s_w, "r": s_r, "l": s_l}[role] for role in arrangement)}


def ranked(scores):
    """The tokens (1, 2, 3) of the winner, the runner-up and the last, by score."""
    order = np.argsort(np.asarray(scores, float))[::-1]
    return tuple(int(i) + 1 for i in order)


def _in_order(entry):
    scores = entry["scores"]
    winner, runner, last = (scores[t - 1] for t in ranked(scores))
    if not winner - runner >= 0.5 or not runner - last >= 0.5 or last <= 0:
        return (f"scores {scores}: expected three positive scores, each gap at least 0.5 (the winner and the "
                "runner-up cannot flip at the checks' precision)")
    return None


def _derive_2_3(n):
    s = tuple(float(x) for x in n["scores"])
    win, run, last = ranked(s)
    return {"scores": s, "w": mha.softmax(np.asarray(s)), "win": win, "run": run, "last": last,
            "s_w": s[win - 1], "s_r": s[run - 1], "asked": f"w_{win} / w_{run}"}


def _winner_score(n):
    return f"Token {n.win} has the largest score, so the largest weight" + (
        " (the query attending to itself)." if n.win == len(n.scores) else ".")


SHEET_SQRT_D_K = 8.0  # √64: the sheet's d_k, Problem 2.2's


def _divided_again(value, n):
    """The number c of about 2 or more (a √d_k: 2.2's are 4 to 12) whose division of the scores gives ``value``'s
    weights, the scores scaled a second time; None when ``value`` is no softmax of the scores so divided. (Below 2:
    the scores (4, 1, 5.5) divided by 1.5 are the sheet's gaps, and its weights.)"""
    w = np.asarray(value, float)
    if w.shape != (3,) or not (w > 0).all() or w[n.win - 1] <= w[n.last - 1]:
        return None
    c = (n.s_w - n.scores[n.last - 1]) / math.log(w[n.win - 1] / w[n.last - 1])
    return c if c > 1.9 and close(w, mha.softmax(np.asarray(n.scores) / c), WEIGHT_TOL) else None


def _declare_2_3(numbers):
    weights = Answer(
        "q2_3_weights", "vector", lambda n: mha.softmax(np.asarray(n.scores, float)), numbers, tolerance=WEIGHT_TOL,
        size=lambda n: 3, sheet_mistake=True, prefix="",
        mistakes=(
            Mistake(shared.FORGOT_SOFTMAX, lambda n: np.asarray(n.scores), "That forgot the softmax: these are the scores "
                    "themselves. The softmax exponentiates each score and divides by the sum of the exponentials, so "
                    "the weights are positive and add up to 1."),
            Mistake(SOFTMAX_LINEAR, lambda n: np.asarray(n.scores) / sum(n.scores), "Linear normalisation (score / "
                    "sum of scores) instead of exponentials: softmax divides e^(s_j) by the sum of the e^(s_i)."),
            Mistake(SOFTMAX_NOT_NORMALISED, lambda n: np.exp(n.scores), lambda n: "Forgot to normalise: these are the "
                    f"numerators e^(s_j). Divide each by their sum ({np.exp(n.scores).sum():.3f}) so the weights add up "
                    "to 1."),
            Mistake(SOFTMAX_FLIPPED_SIGNS, lambda n: np.exp(-np.asarray(n.scores)) / np.exp(-np.asarray(n.scores)).sum(),
                    "The signs are flipped: e^(-s_j) gives the *lowest* score the most weight. Use e^(s_j)."),
            Mistake("-/reversed", lambda n: n.w[::-1], "The weights are in reverse order: keep weight j next to score j."),
            Mistake("-/sorted", lambda n: np.sort(n.w), "The weights are sorted: keep weight j next to score j."),
            Mistake(WEIGHTS_AS_PERCENTAGES, lambda n: 100 * n.w, "These are percentages: weights are fractions that "
                    "add up to 1.", matches=lambda value, n: close(np.asarray(value) / 100, n.w, WEIGHT_TOL)),
            Mistake(SCALED_TWICE, lambda n: mha.softmax(np.asarray(n.scores) / SHEET_SQRT_D_K),
                    lambda n: f"These are the weights of your scores divided by about {_divided_again(n.value, n):.3g}: "
                              "the scores here are already scaled (s_j = q k_j^T / √d_k), and dividing them again "
                              "flattens the weights. Take the softmax of the scores as they are.",
                    matches=lambda value, n: _divided_again(value, n) is not None),
        ),
        fallback=lambda n: f"`weights` is {np.round(n.value, 4)}: each weight is e^(s_j) divided by e^(s_1) + e^(s_2) "
                           "+ e^(s_3), to 4 decimals.",
        right=lambda n: f"Weights {tuple(float(x) for x in np.round(n.w, 4))}.",
        # hidden: an independent recomputation with math.exp; any answer this close adds up to 1 in the scores' order
        hidden=lambda n: [math.exp(s) / sum(math.exp(t) for t in n.scores) for s in n.scores],
        hidden_right="The weights add up to 1 and follow the order of the scores.",
        trials=("recomputes them independently", "add up to 1"),
        hidden_says=lambda n: ("`weights` should add up to 1 and keep the order of the scores."
                               if not close(n.value.sum(), 1.0, SUM_TOL)
                               or not (np.argsort(n.value) == np.argsort(n.scores)).all()
                               else "`weights` is not the softmax of the scores to 4 decimals."),
    )
    winner = Answer(
        "q2_3_winner", "int", lambda n: n.win, numbers, tolerance=0, prefix="",
        mistakes=(
            Mistake(shared.COUNTED_FROM_0, lambda n: n.win - 1, lambda n: (
                f"`winner` is {n.value}. If you meant the Python index {n.value}, note that here tokens are numbered "
                "1, 2, 3 as in the sheet. " + (f"Token {n.value} itself has score {n.scores[n.value - 1]:g}."
                                               if n.value >= 1 else "There is no token 0."))),
            *(Mistake(f"{SOFTMAX_REORDERS}/token-{token}", lambda n, token=token: token, lambda n: (
                f"`winner` is {n.value}, whose score is {n.scores[n.value - 1]:g}. Softmax keeps the order of the "
                "scores: the largest score gets the largest weight."), when=lambda n, token=token: token not in (n.win, n.win - 1))
              for token in range(1, 4)),
        ),
        fallback=lambda n: f"`winner` should be 1, 2 or 3 (the token's number, as in the sheet), got {n.value}.",
        right=_winner_score, hidden_says="`winner` is not the token with the largest weight.", trials=("the same number",),
    )
    ratio = Answer(
        "q2_3_ratio", "number", lambda n: math.exp(n.s_w - n.s_r), numbers, tolerance=RATIO_TOL, sheet_mistake=True,
        trials=("recomputes it from the scores",),
        mistakes=(
            Mistake(shared.RATIO_MISREAD + "/scores", lambda n: n.s_w / n.s_r, lambda n: f"That is the ratio of the *scores* "
                    f"({n.s_w:g}/{n.s_r:g}). Softmax exponentiates, so the ratio of the weights is e^(s_{n.win})/"
                    f"e^(s_{n.run}) = e^(s_{n.win} - s_{n.run})."),
            Mistake(shared.RATIO_MISREAD + "/difference", lambda n: n.w[n.win - 1] - n.w[n.run - 1], lambda n: "That is a "
                    f"difference of weights; 'by how much' here means how many times larger: {n.asked}."),
            Mistake(shared.RATIO_MISREAD + "/gap", lambda n: n.s_w - n.s_r, lambda n: f"That is the score gap s_{n.win} - "
                    f"s_{n.run}. The weights' ratio is e raised to that gap."),
            Mistake(shared.RATIO_MISREAD + "/upside-down", lambda n: n.w[n.run - 1] / n.w[n.win - 1], lambda n: "Upside down: "
                    f"that is w_{n.run} / w_{n.win}. Token {n.win} wins, so the ratio {n.asked} is larger than 1."),
            Mistake(shared.RATIO_MISREAD + "/runner-up", lambda n: n.w[n.win - 1] / n.w[n.last - 1], lambda n: "That compares the "
                    f"winner with token {n.last}, the smallest weight; compare it with token {n.run}, the runner-up: "
                    f"{n.asked}."),
            Mistake(shared.RATIO_MISREAD + "/sheet-tokens", lambda n: n.w[2] / n.w[0], lambda n: "That is w_3 / w_1, the sheet's "
                    f"winner and runner-up: with your scores token {n.win} wins and token {n.run} is the runner-up: "
                    f"{n.asked}.", when=lambda n: {n.win, n.run} != {3, 1}),
        ),
        fallback=lambda n: f"`ratio` is {n.value:g}: divide token {n.win}'s weight by token {n.run}'s (the winner's by "
                           f"the runner-up's, {n.asked}).",
        right=lambda n: f"{n.asked} = e^({n.s_w:g}-{n.s_r:g}) = e^{n.s_w - n.s_r:g} ≈ "
                        f"{n.w[n.win - 1] / n.w[n.run - 1]:.3f}: a gap of 1 in the scores is a factor e in the weights.",
        hidden=lambda n: math.exp(n.s_w - n.s_r), hidden_right="The ratio depends only on the score gap.",
        hidden_says=lambda n: f"`ratio` is not how many times token {n.win}'s weight is token {n.run}'s (the winner's "
                              "over the runner-up's).",
    )
    return weights, winner, ratio


def _vetted_2_3():
    """The candidates whose three answers pass vetting: a few have two misreadings that coincide (the
    flipped-sign softmax of (3, 5, 2) is the sheet's weights; w_3 / w_1 is the winner over the runner-up of
    (1, 4, 2.5)). Run when the pool is first read (:class:`~.declare.Later`), never at import."""
    from .engine import pool
    from .pools import entry_problems

    candidates = dataclasses.replace(SCORES_2_3, entries=tuple(_candidates()))
    pools = [pool(answer) for answer in _declare_2_3(candidates)]
    return (e for e in candidates.entries if not any(entry_problems(p, e) for p in pools))


SCORES_2_3 = Numbers("q2_3", SHEET_2_3, Later(_vetted_2_3), _in_order, _derive_2_3,
                     symbols={"scores": "the scaled scores (s_1, s_2, s_3)"})
WEIGHTS, WINNER, RATIO = _declare_2_3(SCORES_2_3)

ANSWERS = (WQ_SHAPE, Q_SHAPE, SCORES_SHAPE, HEAD_SHAPE, SCALED_SCORE, WHY, WEIGHTS, WINNER, RATIO)
