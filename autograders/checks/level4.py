"""Checks for Level 4 (Synthesis): Problems 4.1, 4.2 and 4.3.

One function per autograded answer cell, named after its grade_id. Expected
values come from :mod:`mha_core`; with ``hidden=True`` a check tries further
inputs or recomputes the answer with plain Python (``math``), and its messages
never give the answer away.

- 4.1: ``parameter_count(d_model, h)`` and the count for the student's d_model (the sheet's 512; weights
  only; biases named).
- 4.2: one causal query by hand (scaled scores, weights, output) for the student's vectors (the sheet's
  outside a course), within ``TOL`` = 1e-3, so the sheet's 2.0123 (added up from rounded terms) passes as
  well as the exact 2.0124.
- 4.3 (beyond the sheet): the student's ``multi_head_attention`` written with numpy, compared with
  :func:`mha_core.multi_head_attention` on random inputs (the hidden cases add a batch dimension); a
  wrong output is matched against :func:`mha_variant`, the block with one known mistake made, to name it.
"""

import math

import numpy as np

import mha_core as mha

from ..variants import current
from ..variants.levels import LEVEL4, Q4_1_PARAMS, Q4_2_SCALED_SCORES
from ..variants.levels.level4 import answers as answers_4_2, arrays as arrays_4_2, wrong_answers as wrong_answers_4_2

from . import own_work
from .feedback import WrongAnswer, as_array, as_number, as_vector, call, close, correct, named, tag_of

TOL = 1e-3




# --- Problem 4.1: the parameter count -------------------------------------------

D_MODEL, H = 512, 8  # the sheet's example

BIASES = ("You counted biases (d_model per projection, 4·d_model in all), as PyTorch's nn.MultiheadAttention does: "
          "a legitimate convention, but this problem counts weights only, as its prompt says.")


def _param_misconception(value, d_model, h):
    """The misconception behind a known wrong count, or None."""
    d_k = mha.head_dim(d_model, h)
    expected = mha.parameter_count(d_model, h)
    known = [
        (3 * d_model**2, named("forgot-w-o", "That forgot W^O: the three projections W^Q, W^K, W^V give 3·d_model², and the output "
                         "matrix W^O (d_model×d_model) adds d_model² more.")),
        (h * expected, named("heads-cost-more", 'That is the belief "parameters grow with h": it gives every head full d_model×d_model '
                       "matrices. Each head's W_i^Q, W_i^K, W_i^V is only d_model×d_k, with d_k = d_model/h.")),
        (4 * d_model * d_k, named("one-head-for-all", "That counts one head only (and a W^O as small as one head's matrices): there are h "
                            "heads, and W^O is d_model×d_model.")),
        (3 * d_model * d_k + d_model**2, named("one-head-for-all", "That counts the projections of one head only: every one of the h heads "
                                         "has its own W_i^Q, W_i^K, W_i^V.")),
        (mha.parameter_count(d_model, h, bias=True), named("counted-biases", BIASES)),
        (4 * d_model, "Each weight matrix has d_model·d_model entries, not d_model: square it."),
        (d_model**2, "That counts a single d_model×d_model matrix: there are four (W^Q, W^K, W^V and W^O)."),
    ]
    for wrong, message in known:
        if wrong != expected and close(value, wrong, 1e-9 * max(1.0, wrong)):
            return message
    return None


PARAM_CASES = [(512, 1), (512, 2), (512, 16), (512, 64), (512, 512), (768, 12), (1024, 16), (64, 4), (12, 3),
               (1, 1), (2048, 32), (96, 6)]


def q4_1_parameter_count(fn, hidden=False):
    cases = [(D_MODEL, H)] + (PARAM_CASES if hidden else [])
    values = {}
    for d_model, h in cases:
        value = as_number(f"parameter_count({d_model}, {h})", call("parameter_count", fn, d_model, h))
        values[d_model, h] = value
        # hidden: an independent count, matrix by matrix: 3 h (d_model x d_k) + (d_model x d_model)
        expected = 3 * h * (d_model * (d_model // h)) + d_model * d_model if hidden else mha.parameter_count(d_model, h)
        if close(value, expected, 1e-9 * expected):
            continue
        if hidden and close(value, expected + 4 * d_model, 1e-9 * expected):  # the bias convention, named at any size
            raise WrongAnswer(f"`parameter_count({d_model}, {h})`: {BIASES}", misconception="counted-biases")
        if hidden and (d_model, h) == (D_MODEL, H):
            raise WrongAnswer(f"`parameter_count({d_model}, {h})` is not the count of the weights: the visible test's "
                              "message says more.")
        if hidden:
            raise WrongAnswer(
                f"parameter_count gives the right count for d_model={D_MODEL}, h={H} but not for d_model={d_model}, "
                f"h={h}: write the count in terms of d_model and h, not numbers from the example.",
                misconception="example-numbers-only"
            )
        raise WrongAnswer(_param_misconception(value, d_model, h) or (
            f"parameter_count({d_model}, {h}) returned {value:,.0f}, which is not the count. Add up the entries of "
            "every W_i^Q, W_i^K, W_i^V (h heads, each d_model×d_k) and of W^O (d_model×d_model)."
        ))
    if hidden:
        for d_model in {d for d, _ in values}:
            counts = {v for (d, _), v in values.items() if d == d_model}
            if len(counts) > 1:
                raise WrongAnswer(f"parameter_count changes with h at d_model={d_model}: it should not depend on h.")
    correct("3·h·d_model·d_k + d_model² = 4·d_model², whatever h is." if not hidden else "Hidden checks passed too.")


_SHEET_NUMBERS = named("example-numbers-only", "That is the answer for the sheet's numbers, not for yours: "
                       "use the numbers in the cell under the problem.")


def q4_1_params_512(value, hidden=False):
    """The count for the student's d_model (the sheet's: 512, hence the name)."""
    value = as_number("params_512", value)
    entry = current.numbers(LEVEL4, Q4_1_PARAMS)
    d_model, h = entry["d_model"], entry["h"]
    expected = 4 * d_model * d_model if hidden else mha.parameter_count(d_model, h)
    if close(value, expected, Q4_1_PARAMS.tolerance):
        correct(f"{expected:,} parameters, for any h that divides {d_model}." if not hidden else "Hidden checks passed too.")
        return
    message = _param_misconception(value, d_model, h)  # named in the hidden test too (the biases' convention)
    if message is None and "example-numbers-only" in Q4_1_PARAMS.mistakes(entry):
        sheet = Q4_1_PARAMS.mistakes(entry)["example-numbers-only"]
        message = _SHEET_NUMBERS if close(value, sheet, Q4_1_PARAMS.tolerance) else None
    raise WrongAnswer(message or f"Not yet: evaluate your parameter count at d_model = {d_model} (ignoring biases).",
                      misconception=tag_of(message) if message else None)


# --- Problem 4.2: a causal query by hand -----------------------------------------

# The sheet's projected vectors (a student's own: the pool's entry, _vectors()): one head, d_k = 2, the query
# at position 4 of n = 4.
Q_VEC, K, V, D_K = arrays_4_2(Q4_2_SCALED_SCORES.sheet)
N = len(K)


def _entry_4_2():
    return current.numbers(LEVEL4, Q4_2_SCALED_SCORES)


def vectors_4_2():
    """(q, K, V, d_k) of this student's Problem 4.2 as arrays (row j of K is k_j, of V is v_j): the data cell's."""
    return arrays_4_2(_entry_4_2())


def expected_4_2():
    """(scaled scores, weights, output) of the query at position 4, as the last row of a causal pass."""
    q, K, V, d_k = vectors_4_2()
    n = len(K)
    Q = np.zeros((n, d_k))
    Q[n - 1] = q  # the other positions' queries do not matter for row 4
    out, w = mha.scaled_dot_product_attention(Q, K, V, causal=True)
    scaled = (K @ q) / np.sqrt(d_k)
    return scaled, w[n - 1], out[n - 1]


def _by_hand():
    """The same three answers with plain Python floats (the hidden checks' recomputation)."""
    q, K, V, d_k = vectors_4_2()
    scaled = [sum(qi * ki for qi, ki in zip(q.tolist(), k)) / math.sqrt(d_k) for k in K.tolist()]
    exps = [math.exp(s) for s in scaled]
    weights = [e / sum(exps) for e in exps]
    output = [sum(w * v[c] for w, v in zip(weights, V.tolist())) for c in range(V.shape[1])]
    return np.array(scaled), np.array(weights), np.array(output)


_MESSAGES_4_2 = {
    "scaled-by-d-k": named("scaled-by-d-k", "That scales by d_k = 2 instead of √d_k = √2 ≈ 1.4142: the scores are "
                           "divided by the square root of d_k."),
    "no-scaling": named("no-scaling", "That has no scaling: divide each dot product by √d_k = √2 before the softmax."),
    "-/multiplied-by-sqrt-d-k": "That multiplies by √d_k; the scores are divided by √d_k.",
    "forgot-softmax": named("forgot-softmax", "That forgot the softmax: it uses the scaled scores as weights. The softmax "
                            "exponentiates each score and divides by the sum, so the weights are positive and add up to 1."),
    "-/linear": ("That normalises the scores without exponentials: the softmax divides e^{s_j} by the sum of e^{s_j}, "
                 "not s_j by the sum of s_j."),
    "causal-mask-applied/strict": named(
        "causal-mask-applied", "That applies the causal mask wrongly: it hides position 4 itself. A causal mask hides "
        "only keys after the query; the query at position 4, the last one, may attend to all 4 keys."),
    "causal-mask-applied/first-only": named(
        "causal-mask-applied", "That applies the causal mask wrongly: the query at position 4 (the last position) may "
        "attend to all 4 keys, not only to the first."),
    "-/uniform": ("Equal weights 1/4 ignore the scores: the softmax of the scaled scores gives larger weights to larger "
                  "scores."),
}


def _wrong_4_2():
    """Known wrong (scaled scores, weights) pairs of Problem 4.2 for this student's vectors, each with its message."""
    return [(scores, weights, _MESSAGES_4_2[key]) for key, (scores, weights) in wrong_answers_4_2(_entry_4_2()).items()]


def _sheet_answer_4_2(value, index):
    """True when ``value`` is the sheet's answer, given for other vectors."""
    entry = _entry_4_2()
    sheet = answers_4_2(Q4_2_SCALED_SCORES.sheet)[index]
    return not close(answers_4_2(entry)[index], sheet, 2 * TOL) and close(value, sheet, TOL)


def _vector(name, value, size):
    """``value`` as a float vector of ``size`` entries (a (1, size) or (size, 1) array is accepted too)."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        array = None
    if array is not None and array.size == size and array.ndim <= 2 and np.isneginf(array).any():
        raise WrongAnswer(
            f"`{name}` has -inf in it: that is a causal mask applied wrongly. The query at position 4 is the last "
            "position, so it may attend to all 4 keys: no score is masked.", misconception="causal-mask-applied"
        )
    return as_vector(name, value, size)


def _near_miss(name, value, expected):
    if close(value, expected, 0.02):
        return (f"`{name}` is close but not within {TOL:g} of the answer in every entry: keep at least four decimals "
                "(or let numpy compute them).")
    return None


def q4_2_scaled_scores(value, hidden=False):
    value = _vector("scaled_scores", value, N)
    expected = _by_hand()[0] if hidden else expected_4_2()[0]
    if close(value, expected, TOL):
        correct("The scaled scores are q·k_j / √2 for the 4 keys." if not hidden else "Hidden checks passed too.")
        return
    masked = np.abs(value - expected) > TOL
    if masked.any() and (value[masked] < -100).all():
        raise WrongAnswer(
            "Some scores look masked (very negative): that is a causal mask applied wrongly. The query at position "
            "4 is the last position, so it may attend to all 4 keys.", misconception="causal-mask-applied"
        )
    for scores, _, message in _wrong_4_2():
        if scores is not None and close(value, scores, TOL):
            raise WrongAnswer(message)
    if _sheet_answer_4_2(value, 0):
        raise WrongAnswer(_SHEET_NUMBERS)
    raise WrongAnswer(_near_miss("scaled_scores", value, expected) or (
        "For each key k_j compute the dot product q·k_j, then divide it by √d_k."
    ))


def q4_2_weights(value, hidden=False):
    value = _vector("attention_weights", value, N)
    expected = _by_hand()[1] if hidden else expected_4_2()[1]
    if close(value, expected, TOL):
        correct("The weights are the softmax of the scaled scores; they sum to 1." if not hidden else "Hidden checks passed too.")
        return
    for _, weights, message in _wrong_4_2():
        if close(value, weights, TOL):
            raise WrongAnswer(message)
    if _sheet_answer_4_2(value, 1):
        raise WrongAnswer(_SHEET_NUMBERS)
    if not close(value.sum(), 1.0, 1e-2):
        raise WrongAnswer(f"Your weights add up to {value.sum():.4f}; attention weights add up to 1 (softmax).")
    raise WrongAnswer(_near_miss("attention_weights", value, expected) or (
        "Apply the softmax to the scaled scores: e^{s_j} divided by the sum of e^{s_j} over the 4 keys."
    ))


def q4_2_output(value, hidden=False):
    _, K, V, _ = vectors_4_2()
    value = _vector("output", value, V.shape[1])
    expected = _by_hand()[2] if hidden else expected_4_2()[2]
    if close(value, expected, TOL):
        correct("The output is the weighted sum of the values: Σ_j w_j v_j." if not hidden else "Hidden checks passed too.")
        return
    weights = expected_4_2()[1]
    for _, wrong_weights, message in _wrong_4_2():
        if close(value, wrong_weights @ V, TOL):
            raise WrongAnswer(message)
    if close(value, weights @ K, TOL):
        raise WrongAnswer("That is the weighted sum of the keys: the output weights the values v_j, not the keys.",
                          misconception="sum-of-keys")
    if _sheet_answer_4_2(value, 2):
        raise WrongAnswer(_SHEET_NUMBERS)
    raise WrongAnswer(_near_miss("output", value, expected) or (
        "The output is the sum over the 4 keys of w_j v_j, the values weighted by the attention weights."
    ))


# --- Problem 4.3: multi-head attention, written with numpy (beyond the sheet) ----

# (batch, n, d_model, h, causal, seed); batch None = X of shape (n, d_model), else (batch, n, d_model).
# The visible cases try every kind of input the hidden ones try (case_kind): 2-D and batched, causal off
# and on, h = 1, d_k = 1, n = 1; the hidden cases add values (other sizes and seeds), never a kind, so a
# visible pass never meets a hidden zero for a kind of input. 2-D, causal off first (most mistakes show there).
MHA_CASES = [
    (None, 5, 8, 2, False, 0), (None, 5, 8, 2, True, 1), (None, 6, 12, 3, False, 2), (None, 6, 12, 3, True, 3),
    (2, 5, 8, 2, False, 12), (2, 5, 8, 2, True, 13), (None, 4, 6, 1, True, 14), (None, 5, 4, 4, False, 15),
    (None, 1, 8, 2, True, 16),
]
MHA_HIDDEN_CASES = [
    (None, 7, 16, 4, True, 4), (None, 4, 6, 1, True, 5), (None, 5, 4, 4, False, 6), (None, 1, 8, 2, True, 7),
    (None, 20, 32, 8, True, 8), (2, 5, 8, 2, False, 9), (2, 5, 8, 2, True, 10), (3, 6, 12, 4, True, 11),
]


def case_kind(batch, n, d_model, h, causal, seed=None):
    """The kind of input a case of Problem 4.3 tries (its values aside): the words of :func:`_mha_where`."""
    return ("batched" if batch else "2-D", "causal" if causal else "not causal", *(
        word for word, holds in (("h = 1", h == 1), ("d_k = 1", d_model == h), ("n = 1", n == 1)) if holds))


MHA_RTOL = 1e-6  # relative to the largest entry of the expected output (float64)


def mha_inputs(batch, n, d_model, seed):
    """``X`` of shape (n, d_model), or (batch, n, d_model), and W_Q, W_K, W_V, W_O (d_model x d_model)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d_model) if batch is None else (batch, n, d_model))
    Ws = [rng.standard_normal((d_model, d_model)) / np.sqrt(d_model) for _ in range(4)]
    return X, Ws


def _split(A, h, transpose=True):
    """(..., n, d_model) -> (..., h, n, d_k); without the transpose, a reshape straight to (h, n, d_k)."""
    *batch, n, d_model = A.shape
    if transpose:
        return np.swapaxes(A.reshape(*batch, n, h, d_model // h), -2, -3)
    return A.reshape(*batch, h, n, d_model // h)


def _merge(heads, transpose=True):
    """(..., h, n, d_k) -> (..., n, h·d_k), the heads side by side; without the transpose, a plain reshape."""
    *batch, h, n, d_k = heads.shape
    if transpose:
        heads = np.swapaxes(heads, -2, -3)
    return heads.reshape(*batch, n, h * d_k)


def _softmax(scores, axis=-1, keepdims=True, shift=True):
    """Softmax along ``axis``. Without ``keepdims``, as one head's (n, n) scores minus their (n,) row maxima
    (if ``shift``), divided by their (n,) row sums: numpy broadcasts row j's to column j."""
    with np.errstate(all="ignore"):
        if keepdims:
            e = np.exp(scores - scores.max(axis=axis, keepdims=True))
            return e / e.sum(axis=axis, keepdims=True)
        e = np.exp(scores - np.expand_dims(scores.max(axis=-1), -2)) if shift else np.exp(scores)
        return e / np.expand_dims(e.sum(axis=-1), -2)


def mha_variant(X, W_Q, W_K, W_V, W_O, h, causal, mistake=None):
    """Multi-head self-attention in numpy, or, with ``mistake``, one of :data:`MHA_MISTAKES` made.

    The check recognises a wrong answer by computing these and comparing."""
    n, d_model = X.shape[-2:]
    d_k = d_model // h
    if mistake == "x_W_T":  # X @ W.T: the transpose of the sheet's X @ W (a square W, so it runs)
        W_Q, W_K, W_V, W_O = W_Q.T, W_K.T, W_V.T, W_O.T
    if mistake == "W_O_T":
        W_O = W_O.T
    split_T = mistake not in ("no_transpose", "split_no_transpose")
    merge_T = mistake not in ("no_transpose", "merge_no_transpose")
    if mistake == "rows":  # head i's W from rows i*d_k:(i+1)*d_k, transposed to fit: X @ W.T's columns
        Q, K, V = (np.stack([X @ W[i * d_k:(i + 1) * d_k].T for i in range(h)], axis=-3) for W in (W_Q, W_K, W_V))
    elif mistake == "interleaved":  # head i = every h-th column
        Q, K, V = (np.swapaxes((X @ W).reshape(*X.shape[:-1], d_k, h), -1, -2) for W in (W_Q, W_K, W_V))
        Q, K, V = (np.moveaxis(A, -2, -3) for A in (Q, K, V))
    else:
        Q, K, V = (_split(X @ W, h, split_T) for W in (W_Q, W_K, W_V))  # (..., h, n, d_k)
    scale = {"scale_d_k": d_k, "no_scale": 1.0, "scale_d_model": np.sqrt(d_model),
             "times_sqrt_d_k": 1 / np.sqrt(d_k)}.get(mistake, np.sqrt(d_k))
    scores = Q @ np.swapaxes(K, -1, -2) / scale  # (..., h, n, n)
    tri = np.tri(n, dtype=bool)  # query i may attend to keys j <= i
    may_attend = {"mask_flipped": tri.T, "mask_strict": np.tri(n, k=-1, dtype=bool)}.get(mistake, tri)
    masked = (causal and mistake != "ignores_causal") or (not causal and mistake == "always_causal")
    if masked and mistake == "mask_zero_scores":
        scores = np.where(may_attend, scores, 0.0)
    elif masked and mistake != "mask_after_softmax":
        scores = np.where(may_attend, scores, -1e9)  # a finite fill: a row with nothing to see becomes uniform
    axis, keepdims, shift = {"softmax_queries": (-2, True, True), "softmax_heads": (-3, True, True),
                             "softmax_no_keepdims": (-1, False, False),
                             "softmax_no_keepdims_max": (-1, False, True)}.get(mistake, (-1, True, True))
    weights = _softmax(scores, axis, keepdims, shift)
    if masked and mistake == "mask_after_softmax":
        weights = weights * may_attend  # zeroed, not renormalised
    heads = weights @ V  # (..., h, n, d_k)
    if mistake == "summed":
        return heads.sum(axis=-3) @ W_O[:d_k]
    concat = _merge(heads, merge_T)  # (..., n, d_model)
    return concat if mistake == "no_W_O" else concat @ W_O


_TOKENS_AND_HEADS = ("Tokens and heads mixed: reshaping (n, d_model) straight to (h, n, d_k) cuts the data in the "
                     "wrong place (head 1 gets whole rows of the first tokens). Reshape to (n, h, d_k), so that head i "
                     "is columns i·d_k:(i+1)·d_k, then swap the first two axes to (h, n, d_k)")
_SOFTMAX_AXIS = ("Softmax over the wrong axis: {how}. Each query's weights over the keys must add up to 1: "
                 "normalise along the last axis, with keepdims=True")
_CAUSAL = "causal mask"
_TRANSPOSED_W = ("X @ W.T instead of X @ W, for {which}: the transpose of the sheet's convention. Tokens are row "
                 "vectors, so X (n × d_model) is multiplied on the right: Q = X @ W_Q, K = X @ W_K, V = X @ W_V and "
                 "the output Concat @ W_O, with no transpose (x @ W.T is PyTorch's nn.Linear, which stores W "
                 "transposed). A square W hides the slip: the shapes fit, the numbers do not.")
MHA_MISTAKES = {
    "no_transpose": named("split-without-transpose",
                          _TOKENS_AND_HEADS + ", and swap them back before putting the heads side by side."),
    "split_no_transpose": named("split-without-transpose", _TOKENS_AND_HEADS + "."),
    "merge_no_transpose": (named("split-without-transpose", "Tokens and heads mixed when the heads are put back: reshaping (h, n, d_k) straight to "
                           "(n, d_model) puts one head's rows side by side. Swap the axes back to (n, h, d_k) first, "
                           "then reshape to (n, d_model).")),
    "interleaved": (named("rows-not-columns", "Head i takes every h-th column: head i is the block of columns i·d_k:(i+1)·d_k of X W^Q (and of "
                    "X W^K, X W^V): reshape to (n, h, d_k), not (n, d_k, h).")),
    "rows": named("x-w-transposed", _TRANSPOSED_W.format(which="the projections (W_Q, W_K, W_V)") + (
        " The same numbers come from per-head slices taken from rows instead of columns: head i uses columns "
        "i·d_k:(i+1)·d_k of W^Q, W^K and W^V (W_Q[:, i*d_k:(i+1)*d_k], d_model × d_k), not rows.")),
    "softmax_queries": named("softmax-wrong-axis", _SOFTMAX_AXIS.format(
        how="the weights are normalised over the queries (down each column)") + "."),
    "softmax_heads": named("softmax-wrong-axis", _SOFTMAX_AXIS.format(how="the weights are normalised across the heads") + "."),
    "softmax_no_keepdims": named("no-keepdims", _SOFTMAX_AXIS.format(
        how="without keepdims, row j's sum divides column j") + "."),
    "softmax_no_keepdims_max": named("no-keepdims", _SOFTMAX_AXIS.format(
        how="without keepdims, row j's maximum and sum act on column j") + "."),
    "x_W_T": named("x-w-transposed", _TRANSPOSED_W.format(which="every W (W_Q, W_K, W_V and W_O)")),
    "W_O_T": named("x-w-transposed", _TRANSPOSED_W.format(which="W_O (Concat @ W_O.T)")),
    "scale_d_k": named("scaled-by-d-k", "Scores divided by d_k instead of √d_k: divide Q_i K_i^T by the square root of d_k."),
    "no_scale": named("no-scaling", "No scaling: divide the scores Q_i K_i^T by √d_k before the softmax."),
    "scale_d_model": named("scaled-with-d-model", "Used d_model instead of d_k: each head's scores are divided by √d_k, its own width."),
    "times_sqrt_d_k": named("multiplied-by-sqrt-d-k", "Multiplied by √d_k instead of dividing: the scores are divided by √d_k."),
    "mask_flipped": (named("mask-wrong-way", f"The {_CAUSAL} is the wrong way round: query i may attend to keys j ≤ i (np.tri, the lower "
                     "triangle), not to the keys after it.")),
    "mask_strict": named("causal-mask-applied",
                         f"The {_CAUSAL} hides the diagonal: query i may attend to keys j ≤ i, itself included."),
    "mask_after_softmax": (named("mask-wrong-way", f"The {_CAUSAL} is applied after the softmax: zeroing the weights of later keys without "
                           "renormalising leaves rows that add up to less than 1. Mask the scores (set them to -inf) "
                           "before the softmax.")),
    "mask_zero_scores": named("causal-mask-applied", f"The {_CAUSAL} sets masked scores to 0: e^0 = 1 still gives "
                              "those keys weight. Set them to -inf (or a very negative number) before the softmax."),
    "ignores_causal": named("causal-mask-applied",
                            f"causal=True is ignored: with it, apply the {_CAUSAL} (query i may attend to keys j ≤ i only)."),
    "always_causal": named("causal-mask-applied",
                           f"The {_CAUSAL} is applied with causal=False too: mask only when causal is True."),
    "summed": (named("heads-summed", "Heads summed: the heads are concatenated, not summed, into (n, d_model) (head i in columns "
               "i·d_k:(i+1)·d_k), then multiplied by all of W^O.")),
    "no_W_O": named("forgot-w-o", "Forgot W^O: after putting the heads side by side, multiply by W_O."),
}


def _mha_where(X, h, causal):
    return f"For X of shape {X.shape}, h = {h}, causal={causal}"


def _mha_shapes(X, h):
    """What the shapes inside multi_head_attention should be, for X and h (said after a shape error)."""
    *batch, n, d_model = X.shape
    d_k = d_model // h
    return (f"For X of shape {X.shape} and h = {h} (d_k = {d_k}) the shapes should be: X @ W_Q, X @ W_K, X @ W_V "
            f"{(*batch, n, d_model)}; split into heads {(*batch, h, n, d_k)}; scores and weights {(*batch, h, n, n)}, "
            f"their row sums {(*batch, h, n, 1)} with keepdims=True; the heads side by side {(*batch, n, d_model)}.")


def _mha_output(value, X, h, causal):
    """The student's output as a float array of X's shape, or WrongAnswer saying what is wrong with it."""
    where = _mha_where(X, h, causal)
    *batch, n, d_model = X.shape
    d_k = d_model // h
    if isinstance(value, tuple) and len(value) == 2 and np.shape(value[0]) == X.shape:
        raise WrongAnswer(f"{where}, `multi_head_attention` returned a pair (like mha_core's (output, weights)): "
                          "return the output array alone.")
    unanswered = value is None
    if unanswered:
        raise WrongAnswer("`multi_head_attention` returned None: end it with `return` and the output array.")
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise WrongAnswer(f"{where}, `multi_head_attention` should return an array of numbers, got "
                          f"{type(value).__name__}.") from None
    shape = array.shape
    if shape != X.shape:
        named = "(batch, n, d_model)" if batch else "(n, d_model)"
        if h > 1 and shape == (*batch, n, d_k):
            raise WrongAnswer(f"{where}, the output has shape {shape} = (n, d_k), one head's width: the heads are "
                              "concatenated, not summed (nor one kept), into (n, d_model), then multiplied by W_O.",
                              misconception="heads-summed")
        if shape == (*batch, h, n, d_k):
            raise WrongAnswer(f"{where}, the output has shape {shape} = (h, n, d_k), the heads apart: put them side by "
                              "side (concatenated, not summed) into (n, d_model), then multiply by W_O.",
                              misconception="heads-summed")
        if batch:
            raise WrongAnswer(f"With a leading batch dimension, X of shape {X.shape} = {named}, `multi_head_attention` "
                              f"should return shape {X.shape}, got {shape}. Write it for X of shape (..., n, d_model): "
                              "take n and d_model from X.shape[-2:], keep X.shape[:-2] (or use -1, `...` in "
                              "np.einsum, np.swapaxes(A, -2, -3)) in every reshape and transpose.",
                              misconception="batch-dimension")
        raise WrongAnswer(f"{where}, `multi_head_attention` should return an array of shape {X.shape} = {named}, got "
                          f"{shape}.")
    if not np.isfinite(array).all():
        if causal:
            raise WrongAnswer(f"{where}, the output has NaN or infinity in it: a query row with every key masked gives "
                              f"0/0. Is the {_CAUSAL} the wrong way round, or does it hide the diagonal? Query i may "
                              "attend to keys j ≤ i, itself included.", misconception="mask-wrong-way")
        raise WrongAnswer(f"{where}, the output has NaN or infinity in it: look for a division by zero, or an overflow "
                          "in np.exp (subtract each row's maximum score first).")
    return array


def _mha_close(value, expected):
    return close(value, expected, MHA_RTOL * max(1.0, float(np.abs(expected).max())))


def _mha_mistake(value, X, Ws, h, causal, expected):
    """The message of the known mistake that gives ``value``, or None."""
    for mistake, message in MHA_MISTAKES.items():
        with np.errstate(all="ignore"):
            try:
                wrong = mha_variant(X, *Ws, h, causal, mistake)
            except ValueError:  # a variant whose shapes do not fit this case
                continue
        if wrong.shape == value.shape and not _mha_close(wrong, expected) and _mha_close(value, wrong):
            return message
    return None


def q4_3_multi_head_attention(fn, hidden=False):
    """Problem 4.3: the student's ``multi_head_attention`` against mha_core's, on random inputs."""
    cases = MHA_CASES + (MHA_HIDDEN_CASES if hidden else [])
    for batch, n, d_model, h, causal, seed in cases:
        X, Ws = mha_inputs(batch, n, d_model, seed)
        expected = mha.multi_head_attention(X, None, *Ws, h, causal=causal)[0]
        hint = "" if batch is None else named("batch-dimension", f"Here X has a leading batch dimension, shape {X.shape} = "
                                              "(batch, n, d_model): write it for X of shape (..., n, d_model), n and "
                                              "d_model from X.shape[-2:].")
        value = own_work.call("multi_head_attention", fn, X.copy(), *(W.copy() for W in Ws), h, causal, hint=hint,
                              shapes=_mha_shapes(X, h))
        value = _mha_output(value, X, h, causal)
        if _mha_close(value, expected):
            continue
        where = _mha_where(X, h, causal)
        message = _mha_mistake(value, X, Ws, h, causal, expected)
        if message:
            raise WrongAnswer(f"{where}: {message}", misconception=tag_of(message))
        if batch is not None:
            raise WrongAnswer(
                f"{where}: `multi_head_attention` works without a batch dimension but not with one. Write it for X of "
                "shape (..., n, d_model): each batch entry is its own sequence, and every reshape, transpose and "
                "product must act on the last axes only (X.shape[:-2], `...` in np.einsum, np.swapaxes(A, -2, -3)).",
                misconception="batch-dimension"
            )
        raise WrongAnswer(
            f"{where}: `multi_head_attention` does not give multi-head attention. Step by step: X @ W_Q (and K, V); "
            "head i's Q_i = its columns i·d_k:(i+1)·d_k; softmax(Q_i K_i^T / √d_k) over the keys, times V_i; heads side by side; "
            "then @ W_O. To find the step, compare your intermediates with mha.MultiHeadAttention(W_Q, W_K, W_V, W_O, "
            "h).trace(X) in a cell of your own."
        )
    correct("h heads of width d_k, side by side, then W^O: it agrees with mha_core." if not hidden else
            "Hidden checks passed too: a batch dimension, other shapes, causal on and off.")
