"""Checks for the problems beyond the sheet: 3.4 (the rank bottleneck), 3.5 (permutation
equivariance) and 4.4 (build a head); 4.6 (masks in a batch) and 4.7 (attention in blocks) from
:mod:`.today`; the declared answers (4.5, 4.7 (b), 5.4's learned heads...) from :mod:`autograders.problems.beyond`.

One function per autograded answer cell, named after its grade_id. Expected values come from
:mod:`mha_core` (its attention, :mod:`autograders.student.by_hand`'s data); with ``hidden=True`` a check tries further inputs or recomputes the answer another way, and
its messages never give the answer away. The known wrong answers are data: each table maps what a
wrong answer does to its message, tagged with its misconception (:mod:`.misconceptions`).
"""

import math

import numpy as np

import mha_core as mha
from ..student import by_hand

from ..problems import beyond as problems, shared
from ..problems.engine import checks

from . import own_work
from .today import q4_6_masked_softmax, q4_7_attention_in_blocks  # noqa: F401 (4.6 and 4.7's functions)
from .feedback import (WrongAnswer, as_array, as_int, call, close, mismatch, named, passed, tag_of, tries,
                       unanswered)

checks(globals(), problems.ASSIGNMENT, problems.ANSWERS)  # the declared answers of notebooks/beyond_the_sheet.ipynb

# --- Problem 3.4: the rank bottleneck --------------------------------------------

RANK_VISIBLE = [(10, 64), (100, 64)]  # n below d_k, then above it
RANK_HIDDEN = [(1, 1), (3, 512), (512, 64), (64, 64), (7, 2), (2, 7), (1000, 1), (5, 6)]

RANK_MISTAKES = (  # (the wrong rank, from n and d_k; its message)
    (lambda n, d_k: n, named(problems.RANK_IS_N, "That is n: Q_i K_i^T is n × n, but it is a product of Q_i (n × d_k) and "
                             "K_i^T (d_k × n), and a product's rank is at most the smaller rank of its factors: at most d_k.")),
    (lambda n, d_k: d_k, named(problems.RANK_IGNORES_N, "That is d_k even where n is smaller: an n × n matrix has rank at "
                               "most n too. The bound is the smaller of the two.")),
    (lambda n, d_k: n * d_k, "A rank is never more than the number of rows (n) or columns (n): the bound is the smaller "
                             "of n and d_k."),
    (lambda n, d_k: max(n, d_k), "That is the larger of n and d_k: the bound is the smaller one (both n and d_k cap the "
                                 "rank)."),
)


def _rank_mistake(value, n, d_k):
    return next((says for wrong, says in RANK_MISTAKES if value == wrong(n, d_k) != min(n, d_k)), None)


def _rank_of_scores(n, d_k, seed):
    """The rank of Q_i K_i^T for random Q_i, K_i (n × d_k): numpy's, counted from the singular values."""
    rng = np.random.default_rng([seed, n, d_k])
    Q, K = rng.normal(size=(2, n, d_k))
    if n > 64:  # Q has full column rank d_k, so rank(Q K^T) = rank(K): two thin SVDs, not an n x n one
        return int(min(np.linalg.matrix_rank(Q), np.linalg.matrix_rank(K)))
    return int(np.linalg.matrix_rank(Q @ K.T))


@tries("other $n$ and $d_k$", "from $n = d_k = 1$ to $n = 1000$", "the rank numpy finds")
def q3_4_max_rank(fn, hidden=False):
    """Problem 3.4: max_rank(n, d_k), the largest rank of one head's score matrix: min(n, d_k)."""
    for n, d_k in RANK_HIDDEN if hidden else RANK_VISIBLE:
        value = as_int(f"max_rank({n}, {d_k})", own_work.call("max_rank", fn, n, d_k))
        expected = _rank_of_scores(n, d_k, seed=1 if hidden else 0)
        if value == expected:
            continue
        if hidden:
            raise WrongAnswer(f"`max_rank` gives the right rank for the visible cases but not for n = {n}, "
                              f"d_k = {d_k}: write it for any n and d_k.", misconception=tag_of(_rank_mistake(value, n, d_k)))
        message = _rank_mistake(value, n, d_k)
        raise WrongAnswer(f"`max_rank({n}, {d_k})` is {value}. " + (message or (
            "That is not the largest rank: Q_i is n × d_k and K_i^T is d_k × n; what bounds the rank of their product?")),
            misconception=tag_of(message))
    passed("rank(Q_i K_i^T) ≤ min(n, d_k): a head of width d_k has at most d_k independent ways of looking.", hidden)


# --- Problem 3.5: permutation equivariance ----------------------------------------

D_MODEL_3_5, H_3_5 = 8, 2


def attention_function(seed, causal=False):
    """A self-attention ``f(X)`` (d_model = 8, h = 2, random weights from ``seed``), causal or not."""
    rng = np.random.default_rng(seed)
    Ws = [rng.normal(size=(D_MODEL_3_5, D_MODEL_3_5)) / np.sqrt(D_MODEL_3_5) for _ in range(4)]

    def f(X):
        return mha.multi_head_attention(X, None, *Ws, H_3_5, causal=causal)[0]

    f.__name__ = "causal_attention" if causal else "attention"
    return f


def _cases_3_5(hidden):
    """(f, X, perm, expected) cases: ``f`` equivariant or causal, ``perm`` never its own inverse."""
    seeds = (35,) if not hidden else (1, 2, 3, 4)
    cases = []
    for seed in seeds:
        rng = np.random.default_rng(seed)
        n = 6 if seed == 35 else int(rng.integers(4, 10))
        X = rng.normal(size=(n, D_MODEL_3_5))
        perm = np.roll(np.arange(n), 1) if seed == 35 else rng.permutation(n)
        while np.array_equal(perm[perm], np.arange(n)):  # an involution would hide an inverted permutation
            perm = rng.permutation(n)
        cases.append((attention_function(seed), X, perm, True))
        cases.append((attention_function(seed, causal=True), X, perm, False))
    return cases


def _truth(name, value):
    unanswered(name, value)
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise WrongAnswer(f"`{name}` should be a function returning True or False (a bool), got {type(value).__name__} {value!r:.60}.",
                      misconception=shared.WRONG_KIND)


PERMUTATION_MISTAKES = {
    "exact": named(problems.EXACT_FLOAT_EQUALITY, "It says False for a self-attention without a mask, yet True when f only "
                   "doubles X: it compares floats exactly. The two sides add the same numbers in another order, so "
                   "they differ by about 1e-16; compare with np.allclose."),
    "not-permuted": named(problems.OUTPUT_NOT_PERMUTED, "It compares f(X[perm]) with f(X): the output's rows must be "
                          "permuted too, f(X[perm]) against f(X)[perm]. Equivariant means \"permute the input, the output "
                          "is permuted the same way\", not \"the output does not change\"."),
    "inverted": named(problems.PERMUTATION_INVERTED, "It works when perm is its own inverse (a swap) but not for a cycle: "
                      "it permutes the output with the inverse permutation. Compare f(X[perm]) with f(X)[perm]."),
    "causal": named(problems.CAUSAL_EQUIVARIANT, "It says True for a causal self-attention: with a causal mask token i sees "
                    "only tokens 0..i, so moving a token changes what it and the others see, and the rows are not simply "
                    "permuted. Your function must compare the two sides, not assume they agree."),
}


def _diagnose_3_5(fn):
    """Why ``fn`` says False for an equivariant f: run it on f(X) = 2X with a cycle and with a swap."""
    X = np.arange(12.0).reshape(4, 3) / 7

    def doubled(X):
        return 2 * X

    cycle, swap = np.array([1, 2, 3, 0]), np.array([1, 0, 2, 3])
    on_cycle = _truth("permutation_test", call("permutation_test", fn, doubled, X, cycle))
    on_swap = _truth("permutation_test", call("permutation_test", fn, doubled, X, swap))
    if on_cycle:
        return PERMUTATION_MISTAKES["exact"]
    return PERMUTATION_MISTAKES["inverted" if on_swap else "not-permuted"]


@tries("other inputs and permutations", "4 to 9 tokens")
def q3_5_permutation_test(fn, hidden=False):
    """Problem 3.5: permutation_test(f, X, perm) says whether f(X[perm]) == f(X)[perm] (within rounding)."""
    for f, X, perm, expected in _cases_3_5(hidden):
        value = _truth("permutation_test", call("permutation_test", fn, f, X, perm))
        if hidden:
            got = f(X[perm])
            expected = bool(np.max(np.abs(got - f(X)[perm])) <= 1e-9 * max(1.0, np.max(np.abs(got))))  # by hand
        if value == expected:
            continue
        where = f"permutation_test({f.__name__}, X of shape {X.shape}, perm={perm.tolist()})"
        if hidden:
            raise WrongAnswer(f"`{where}` returned {value}: it should hold for any X and any permutation.",
                              misconception=problems.CAUSAL_EQUIVARIANT if value else None)
        message = PERMUTATION_MISTAKES["causal"] if value else _diagnose_3_5(fn)
        raise WrongAnswer(f"`{where}` returned {value}. {message}", misconception=tag_of(message))
    passed("Without a mask, self-attention is permutation equivariant; a causal mask breaks it.", hidden)


# --- Problem 4.4 (a): a previous-token head, built by hand --------------------------

THRESHOLD = 0.9  # the weight on position i - 1 every row i > 0 must reach
VISIBLE_SENTENCES = [by_hand.SENTENCE, by_hand.other_sentences(1, seed=44)[0]]
HIDDEN_SENTENCES = by_hand.other_sentences(6, seed=4)


def _head_matrix(name, value, d_k=None):
    array = as_array(name, value)
    if array.ndim != 2 or array.shape[0] != by_hand.D_MODEL or (d_k is not None and array.shape[1] != d_k):
        width = "d_k" if d_k is None else str(d_k)
        raise WrongAnswer(f"`{name}` should be an array of shape (d_model, {width}) = ({by_hand.D_MODEL}, {width}): one row per "
                          f"entry of a token's embedding (5 words + 6 positions), got shape {array.shape}.",
                          misconception=shared.WRONG_KIND)
    return array


def _matches_hidden_keys(scores):
    """True when most queries i < n - 1 score a later key (j > i, hidden by the causal mask) above every key
    they may see: the shift built the wrong way (query i matching key i + 1)."""
    n = len(scores)
    later = [scores[i, i + 1:].max() > scores[i, :i + 1].max() + 1e-9 for i in range(n - 1)]
    return sum(later) > (n - 1) / 2


def _pattern_mistake(weights, scores=None):
    """The message for a head whose weights (n, n) miss the previous token, or None if it is right.
    ``scores``: the head's scores before the mask, (n, n), to see which keys the queries were built to match."""
    n = len(weights)
    rows = np.arange(1, n)
    on_previous = weights[rows, rows - 1]
    if (on_previous >= THRESHOLD).all():
        return None
    if scores is not None and _matches_hidden_keys(scores):
        return named(problems.MATCHES_HIDDEN_KEY, "Each query matches a key the causal mask hides: query i scores highest "
                     "on a later position (i + 1, the next token), which query i may not see, so its weight goes "
                     "elsewhere. Shift the other way: the key of position j must match the query of position j + 1 "
                     "(query i looks back, at key i - 1).")
    top = weights[rows].argmax(axis=1)
    if (top == rows - 1).all():
        return named(problems.TOO_FLAT, f"The pattern is right (every row's largest weight is on the previous token) but "
                     f"too flat: the weakest row puts only {on_previous.min():.2f} there, and {THRESHOLD} is asked. "
                     "Scale the scores up: multiply W_Q_i (or W_K_i) by a larger number, so the softmax sharpens.")
    later = rows >= 2  # row 1's previous token is the first token: leave it out of the diagnosis
    if (top[later] == rows[later]).mean() > 0.5:
        return named(problems.ATTENDS_TO_ITSELF, "Most rows put their largest weight on the token itself (the diagonal): the "
                     "query of position i matches the key of position i. Make the key of position j match the query "
                     "of position j + 1 instead: shift one of them by a position.")
    if (top[later] == 0).mean() > 0.5:
        return named(problems.ATTENDS_TO_FIRST, "Most rows put their largest weight on the first token: the scores do not "
                     "depend on where the query is. The key that matches query i must be the one at position i - 1.")
    wrong = [int(i) for i, t in zip(rows, top) if t != i - 1]
    return (f"Rows {wrong} put their largest weight elsewhere than on the previous token (row i should look at "
            f"position i - 1, for every i > 0).")


@tries("other sentences of 6 of these words", "plain numpy")
def q4_4_previous_token(head, hidden=False):
    """Problem 4.4 (a): ``head = (W_Q, W_K)`` so that the head puts >= 0.9 on position i - 1 for every i > 0."""
    unanswered("head", head)
    if not isinstance(head, (tuple, list)) or len(head) != 2:
        raise WrongAnswer(f"`head` should be a pair (W_Q_i, W_K_i) of two arrays, got {type(head).__name__} {head!r:.60}.",
                          misconception=shared.WRONG_KIND)
    W_Q, W_K = head
    W_Q = _head_matrix("W_Q_i", W_Q)
    W_K = _head_matrix("W_K_i", W_K, d_k=W_Q.shape[1])
    for index, words in enumerate(HIDDEN_SENTENCES if hidden else VISIBLE_SENTENCES):
        X = by_hand.one_hot_embeddings(words)
        if hidden:  # recomputed with plain numpy, not mha_core: causal softmax of X W_Q (X W_K)^T / sqrt(d_k)
            scores = (X @ W_Q) @ (X @ W_K).T / math.sqrt(W_Q.shape[1])
            scores = np.where(np.tri(len(X), dtype=bool), scores, -np.inf)
            weights = np.exp(scores - scores.max(axis=1, keepdims=True))
            weights /= weights.sum(axis=1, keepdims=True)
        else:
            weights = by_hand.head_weights(X, W_Q, W_K)
        message = _pattern_mistake(weights, (X @ W_Q) @ (X @ W_K).T)
        if message is None:
            continue
        sentence = " ".join(words)
        if hidden:
            raise WrongAnswer(f"On the sentence \"{sentence}\" the head misses the previous token: "
                              "it should work for any words.", misconception=tag_of(message))
        if index > 0:  # right on the problem's sentence, wrong on another one of the same length
            raise WrongAnswer(named(problems.WORDS_NOT_POSITIONS, f"It works on \"{' '.join(by_hand.SENTENCE)}\" but not on "
                                    f"\"{sentence}\": your scores depend on the words. \"The previous token\" is about "
                                    "positions: build W_Q_i and W_K_i from the position part of the embedding only."))
        raise WrongAnswer(f"On \"{sentence}\": {message}", misconception=tag_of(message))
    passed(f"Every position i > 0 puts at least {THRESHOLD} of its weight on position i - 1.", hidden)


# --- Problem 4.4 (b): a query that averages two values (CS224n's style) -------------

AVERAGE_TOL = 0.05  # every entry of the output within this of (v_2 + v_4) / 2


def _target():
    a, b = by_hand.PAIR
    return (by_hand.VALUES[a - 1] + by_hand.VALUES[b - 1]) / 2


@tries("recomputes the output with plain Python")
def q4_4_average_query(value, hidden=False):
    """Problem 4.4 (b): a query q whose output over KEYS, VALUES is within 0.05 of (v_2 + v_4) / 2."""
    q = as_array("query", value)
    if q.size != by_hand.KEYS.shape[1] or q.ndim > 2:
        raise WrongAnswer(f"`query` should be an array of {by_hand.KEYS.shape[1]} numbers (a vector of width d_k), got shape {q.shape}.",
                          misconception=shared.WRONG_KIND)
    q = q.reshape(-1)
    target = _target()
    if hidden:  # plain Python: softmax of q . k_j / sqrt(d_k), then the weighted sum of the values
        scores = [sum(a * b for a, b in zip(q.tolist(), k)) / math.sqrt(len(k)) for k in by_hand.KEYS.tolist()]
        top = max(scores)
        exps = [math.exp(s - top) for s in scores]
        weights = np.array([e / sum(exps) for e in exps])
        output = weights @ by_hand.VALUES
    else:
        output, weights = mha.scaled_dot_product_attention(q[None], by_hand.KEYS, by_hand.VALUES)
        output, weights = output[0], weights[0]
    if close(output, target, AVERAGE_TOL):
        passed("The output is the average of v_2 and v_4: the query points at k_2 + k_4, scaled up.", hidden)
        return
    if hidden:
        raise WrongAnswer(mismatch("query"))
    a, b = (i - 1 for i in by_hand.PAIR)
    shown = np.array2string(output, precision=2, suppress_small=True)
    pair = weights[a] + weights[b]
    values_sum = by_hand.VALUES[a] + by_hand.VALUES[b]
    if np.linalg.norm(q) > 0 and abs(q @ values_sum) / (np.linalg.norm(q) * np.linalg.norm(values_sum)) > 0.99:
        message = named(problems.QUERY_FROM_VALUES, "The query points along v_2 + v_4: a query is matched against the keys, "
                        "not the values. Point it at the keys k_2 and k_4.")
    elif max(weights[a], weights[b]) > 0.75:
        message = named(problems.ONE_KEY_ONLY, "Almost all the weight is on one key: the output is close to one value, not to "
                        "the average of two. The query must match k_2 and k_4 equally.")
    elif np.argsort(weights)[-2:].tolist() in ([a, b], [b, a]) and abs(weights[a] - weights[b]) < 0.05 and pair < 0.95:
        message = named(problems.TOO_FLAT, f"The query picks k_2 and k_4 equally, but too softly: together they get only "
                        f"{pair:.2f} of the weight, so the other values leak in. Scale the query up.")
    else:
        message = "The weights are not split half and half between k_2 and k_4."
    raise WrongAnswer(f"With that query the output is {shown}, not within {AVERAGE_TOL} of (v_2 + v_4) / 2. {message}",
                      misconception=tag_of(message))
