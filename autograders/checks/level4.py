"""Checks for Level 4 (Synthesis): Problems 4.1 and 4.2.

One function per autograded answer cell, named after its grade_id. Expected
values come from :mod:`mha_core`; with ``hidden=True`` a check tries further
inputs or recomputes the answer with plain Python (``math``), and its messages
never give the answer away. Problem 4.2 allows a difference of ``TOL`` = 1e-3, so
the sheet's 2.0123 (added up from rounded terms) passes as well as the exact 2.0124.
"""

import math

import numpy as np

import mha_core as mha

from ..feedback import WrongAnswer, as_array, as_number, call, close, correct

TOL = 1e-3




# --- Problem 4.1: the parameter count -------------------------------------------

D_MODEL, H = 512, 8  # the sheet's example


def _param_misconception(value, d_model, h):
    """The misconception behind a known wrong count, or None."""
    d_k = mha.head_dim(d_model, h)
    expected = mha.parameter_count(d_model, h)
    known = [
        (3 * d_model**2, "That forgot W^O: the three projections W^Q, W^K, W^V give 3·d_model², and the output "
                         "matrix W^O (d_model×d_model) adds d_model² more."),
        (h * expected, 'That is the belief "parameters grow with h": it gives every head full d_model×d_model '
                       "matrices. Each head's W_i^Q, W_i^K, W_i^V is only d_model×d_k, with d_k = d_model/h."),
        (4 * d_model * d_k, "That counts one head only (and a W^O as small as one head's matrices): there are h "
                            "heads, and W^O is d_model×d_model."),
        (3 * d_model * d_k + d_model**2, "That counts the projections of one head only: every one of the h heads "
                                         "has its own W_i^Q, W_i^K, W_i^V."),
        (mha.parameter_count(d_model, h, bias=True), "That includes biases (4·d_model of them): the problem says to "
                                                     "ignore biases, so count only the weight matrices."),
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
        if hidden:
            raise WrongAnswer(
                f"parameter_count gives the right count for d_model={D_MODEL}, h={H} but not for d_model={d_model}, "
                f"h={h}: write the count in terms of d_model and h, not numbers from the example."
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


def q4_1_params_512(value, hidden=False):
    value = as_number("params_512", value)
    expected = 4 * D_MODEL * D_MODEL if hidden else mha.parameter_count(D_MODEL, H)
    if close(value, expected, 0.5):
        correct(f"{expected:,} parameters, for any h that divides 512." if not hidden else "Hidden checks passed too.")
        return
    message = _param_misconception(value, D_MODEL, H)
    raise WrongAnswer(message or "Not yet: evaluate your parameter count at d_model = 512 (ignoring biases).")


# --- Problem 4.2: a causal query by hand -----------------------------------------

# The sheet's projected vectors: one head, d_k = 2, query at position 4 of n = 4.
Q_VEC = np.array([1.0, 0.0])
K = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]])
V = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0], [0.0, 4.0]])
D_K = 2
N = 4


def expected_4_2():
    """(scaled scores, weights, output) of the query at position 4, as the last row of a causal pass."""
    Q = np.zeros((N, D_K))
    Q[N - 1] = Q_VEC  # the other positions' queries do not matter for row 4
    out, w = mha.scaled_dot_product_attention(Q, K, V, causal=True)
    scaled = (K @ Q_VEC) / np.sqrt(D_K)
    return scaled, w[N - 1], out[N - 1]


def _by_hand():
    """The same three answers with plain Python floats (the hidden checks' recomputation)."""
    scaled = [sum(qi * ki for qi, ki in zip(Q_VEC.tolist(), k)) / math.sqrt(D_K) for k in K.tolist()]
    exps = [math.exp(s) for s in scaled]
    weights = [e / sum(exps) for e in exps]
    output = [sum(w * v[c] for w, v in zip(weights, V.tolist())) for c in range(V.shape[1])]
    return np.array(scaled), np.array(weights), np.array(output)


def _softmax(x):
    e = np.exp(np.asarray(x, float) - np.max(x))
    return e / e.sum()


def _wrong_4_2():
    """Known wrong (scaled scores, weights) pairs of Problem 4.2, each with its misconception."""
    raw = K @ Q_VEC
    scaled = raw / np.sqrt(D_K)
    strict = np.append(_softmax(scaled[:3]), 0.0)  # mask hides position 4 itself
    return [
        (raw / D_K, _softmax(raw / D_K),
         "That scales by d_k = 2 instead of √d_k = √2 ≈ 1.4142: the scores are divided by the square root of d_k."),
        (raw, _softmax(raw),
         "That has no scaling: divide each dot product by √d_k = √2 before the softmax."),
        (raw * np.sqrt(D_K), _softmax(raw * np.sqrt(D_K)),
         "That multiplies by √d_k; the scores are divided by √d_k."),
        (None, scaled,
         "That forgot the softmax: it uses the scaled scores as weights. The softmax exponentiates each score and "
         "divides by the sum, so the weights are positive and add up to 1."),
        (None, scaled / scaled.sum(),
         "That normalises the scores without exponentials: the softmax divides e^{s_j} by the sum of e^{s_j}, "
         "not s_j by the sum of s_j."),
        (None, strict,
         "That applies the causal mask wrongly: it hides position 4 itself. A causal mask hides only keys after "
         "the query; the query at position 4, the last one, may attend to all 4 keys."),
        (None, np.eye(N)[0],
         "That applies the causal mask wrongly: the query at position 4 (the last position) may attend to all 4 "
         "keys, not only to the first."),
        (None, np.full(N, 1 / N),
         "Equal weights 1/4 ignore the scores: the softmax of the scaled scores gives larger weights to larger scores."),
    ]


def _vector(name, value, size):
    """``value`` as a float vector of ``size`` entries (a (1, size) or (size, 1) array is accepted too)."""
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        array = None
    if array is not None and array.size == size and array.ndim == 2 and 1 in array.shape:
        array = array.reshape(size)
    if array is not None and array.shape == (size,) and np.isneginf(array).any():
        raise WrongAnswer(
            f"`{name}` has -inf in it: that is a causal mask applied wrongly. The query at position 4 is the last "
            "position, so it may attend to all 4 keys: no score is masked."
        )
    return as_array(name, value if array is None or array.shape != (size,) else array, shape=(size,))


def _near_miss(name, value, expected):
    if close(value, expected, 0.02):
        return (f"`{name}` is close but not within {TOL:g} of the answer in every entry: keep at least four decimals "
                "(or let numpy compute them).")
    return None


def q4_2_scaled_scores(value, hidden=False):
    value = _vector("scaled_scores", value, N)
    expected = _by_hand()[0] if hidden else expected_4_2()[0]
    if close(value, expected, TOL):
        correct("q·k_j / √2 for the 4 keys." if not hidden else "Hidden checks passed too.")
        return
    masked = np.abs(value - expected) > TOL
    if masked.any() and (value[masked] < -100).all():
        raise WrongAnswer(
            "Some scores look masked (very negative): that is a causal mask applied wrongly. The query at position "
            "4 is the last position, so it may attend to all 4 keys."
        )
    for scores, _, message in _wrong_4_2():
        if scores is not None and close(value, scores, TOL):
            raise WrongAnswer(message)
    raise WrongAnswer(_near_miss("scaled_scores", value, expected) or (
        "Not yet: for each key k_j compute the dot product q·k_j, then divide it by √d_k."
    ))


def q4_2_weights(value, hidden=False):
    value = _vector("attention_weights", value, N)
    expected = _by_hand()[1] if hidden else expected_4_2()[1]
    if close(value, expected, TOL):
        correct("softmax of the scaled scores; they sum to 1." if not hidden else "Hidden checks passed too.")
        return
    for _, weights, message in _wrong_4_2():
        if close(value, weights, TOL):
            raise WrongAnswer(message)
    if not close(value.sum(), 1.0, 1e-2):
        raise WrongAnswer(f"Your weights add up to {value.sum():.4f}; attention weights add up to 1 (softmax).")
    raise WrongAnswer(_near_miss("attention_weights", value, expected) or (
        "Not yet: apply the softmax to the scaled scores: e^{s_j} divided by the sum of e^{s_j} over the 4 keys."
    ))


def q4_2_output(value, hidden=False):
    value = _vector("output", value, V.shape[1])
    expected = _by_hand()[2] if hidden else expected_4_2()[2]
    if close(value, expected, TOL):
        correct("the weighted sum of the values: Σ_j w_j v_j." if not hidden else "Hidden checks passed too.")
        return
    weights = expected_4_2()[1]
    for _, wrong_weights, message in _wrong_4_2():
        if close(value, wrong_weights @ V, TOL):
            raise WrongAnswer(message)
    if close(value, weights @ K, TOL):
        raise WrongAnswer("That is the weighted sum of the keys: the output weights the values v_j, not the keys.")
    raise WrongAnswer(_near_miss("output", value, expected) or (
        "Not yet: the output is the sum over the 4 keys of w_j v_j, the values weighted by the attention weights."
    ))
