"""Checks for Level 5 (Mastery): Problems 5.1, 5.2 and 5.3.

One function per autograded answer cell, named after its grade_id. Each returns
quietly with a short confirmation, or raises :class:`WrongAnswer` naming the
misconception behind a known wrong answer. Expected values come from
``mha_core`` and numpy, never typed in.
"""

import functools

import numpy as np

import mha_core as mha

from ..variants import current
from ..variants.levels import LEVEL5, Q5_3_SCORE_SHAPE

from .feedback import WrongAnswer, as_choice, as_number, as_shape, call, close, correct

# Problem 5.1: the limit h -> d_model, and the sweet spot, for d_model = 512.
D_MODEL_5_1 = 512
SWEET_SPOT_D_K = 64

# Problem 5.3: a decoder of n_q tokens attends over an encoder of n_k tokens (the sheet's; a student's own:
# the pool's entry, _cross_sizes()).
D_MODEL_5_3, H_5_3, N_Q, N_K = (Q5_3_SCORE_SHAPE.sheet[k] for k in ("d_model", "h", "n_q", "n_k"))
SHEET_NUMBERS = ("That is the answer for the sheet's numbers, not for yours: use the numbers in the cell under "
                 "the problem.")

OPTIONS = ("A", "B", "C", "D")


HIDDEN_PASSED = "Hidden checks passed too."  # every hidden test of the workbook says so when it passes


def _hidden_mismatch(name):
    return WrongAnswer(f"`{name}` passed the visible test but not the hidden one: re-read the problem and try again.")


# --- Problem 5.1 -------------------------------------------------------------


def q5_1_d_k_limit(value, hidden=False):
    """d_k when h = d_model = 512: 1."""
    value = as_number("d_k_at_limit", value)
    d_model = D_MODEL_5_1
    expected = mha.head_dim(d_model, d_model)
    if hidden:
        # Independently: one head's W_i^Q of a block with h = d_model has d_k columns.
        W_Q_i, _, _ = mha.MultiHeadAttention.from_seed(d_model, d_model).head_weights(0)
        if not close(value, W_Q_i.shape[1], 1e-9):  # the visible test's tolerance
            raise _hidden_mismatch("d_k_at_limit")
        return correct(HIDDEN_PASSED)
    if close(value, expected, 1e-9):
        return correct(f"d_k = d_model / h = {d_model}/{d_model} = {expected}: every head's query and key are single numbers.")
    if close(value, d_model, 1e-9):
        raise WrongAnswer(
            "That is d_model, the total width. The misconception: \"more heads means wider heads\". "
            "The heads share the width, d_k = d_model / h, so d_k shrinks as h grows.", misconception="head-full-width"
        )
    if close(value, mha.head_dim(d_model, d_model // SWEET_SPOT_D_K), 1e-9):
        raise WrongAnswer(
            f"{SWEET_SPOT_D_K} is the sweet spot (h = {d_model // SWEET_SPOT_D_K}), not the limit. "
            f"At the limit h = d_model = {d_model}: what is d_model / h?", misconception="heads-free"
        )
    if close(value, d_model * d_model, 1e-9):
        raise WrongAnswer("That is d_model · h. The heads split the width: d_k = d_model / h.",
                          misconception="multiplied-by-h")
    if close(value, 1 / d_model, 1e-9):
        raise WrongAnswer(
            "That is 1 / d_model, the division turned upside down: each head does not get a fraction of one "
            "number. d_k = d_model / h counts how many of the d_model numbers each head gets.",
            misconception="ratio-misread"
        )
    raise WrongAnswer(f"Not quite. Use d_k = d_model / h with d_model = {d_model} and h = d_model.")


def q5_1_sweet_spot_heads(value, hidden=False):
    """The number of heads that gives d_k = 64 at d_model = 512: 8."""
    value = as_number("sweet_spot_h", value)
    d_model, d_k = D_MODEL_5_1, SWEET_SPOT_D_K
    expected = d_model // d_k
    if hidden:
        h = round(value)  # within the visible test's tolerance of a whole number, or it fails below
        if not close(value, h, 1e-9) or h < 1 or d_model % h or mha.head_dim(d_model, h) != d_k:
            raise _hidden_mismatch("sweet_spot_h")
        return correct(HIDDEN_PASSED)
    if close(value, expected, 1e-9):
        return correct(f"h = d_model / d_k = {d_model}/{d_k} = {expected}: the original Transformer's choice.")
    if close(value, d_model, 1e-9):
        raise WrongAnswer(
            "h = d_model is the misconception \"more heads is always better\": it leaves each head with "
            f"d_k = 1. Which h gives d_k = {d_k}?", misconception="heads-free"
        )
    if close(value, d_k, 1e-9):
        raise WrongAnswer(f"{d_k} is d_k, the width of one head. The question asks for h, the number of heads.",
                          misconception="heads-free")
    if close(value, d_model * d_k, 1e-9):
        raise WrongAnswer("That is d_model · d_k. Since d_k = d_model / h, solve for h.")
    raise WrongAnswer(f"Not quite. Since d_k = d_model / h, h = d_model / d_k with d_model = {d_model}, d_k = {d_k}.")


def q5_1_refutation(value, hidden=False):
    """The statement that refutes "more heads is always better": D."""
    value = as_choice("refutation", value, OPTIONS)
    if hidden:
        if value != "D":
            raise _hidden_mismatch("refutation")
        return correct(HIDDEN_PASSED)
    if value == "D":
        return correct("The width is shared: more heads means narrower heads, down to d_k = 1. Not a free lunch.")
    if value == "A":
        raise WrongAnswer(
            "A is the misconception \"heads are free\": the counts are right, and W^O does receive 512 numbers per "
            "token, but each comes from a head whose weights were computed from one-number queries and keys. What "
            "those weights cannot single out never reaches W^O: what can one such head attend to?",
            misconception="heads-free"
        )
    if value == "B":
        raise WrongAnswer(
            "B is the misconception \"one-number heads attend uniformly\": the scores q_i k_j of one-number queries "
            "and keys still differ from key to key (the figure above has bright columns, not flat rows). Something "
            "is lost all the same: what does a head with d_k = 1 have left to compare tokens with?",
            misconception="narrow-heads-uniform"
        )
    raise WrongAnswer(
        "C is the misconception \"heads cost parameters\": the concatenation of the h heads is h·d_k = d_model wide, "
        "not h·d_model, so W^O stays d_model × d_model and the count is 4 d_model² whatever h is (Problem 4.1).",
        misconception="heads-cost-more"
    )


# --- Problem 5.2 -------------------------------------------------------------


def _random_weights(rng, n_q, n_k, kind):
    """An (n_q, n_k) matrix whose rows sum to 1."""
    if kind == "softmax":
        return mha.softmax(rng.normal(scale=3.0, size=(n_q, n_k)))
    if kind == "dirichlet":
        return rng.dirichlet(np.full(n_k, 0.5), size=n_q)
    if kind == "one-hot":
        return np.eye(n_k)[rng.integers(0, n_k, size=n_q)]
    return np.full((n_q, n_k), 1.0 / n_k)  # uniform


def _call(name, func, weights, values, hidden=False):
    """The student's function on copies of the inputs; a kind WrongAnswer on any failure."""
    where = f"called with weights of shape {weights.shape} and values of shape {values.shape}"
    where += " (a hidden test)" if hidden else ""
    hint = f"It was {where}, and should return the (n_q, d_v) array whose row i is the sum over keys j of w_ij v_j."
    result = call(name, func, weights.copy(), values.copy(), hint=hint)
    if result is None:
        raise WrongAnswer(f"`{name}` returned None: did you forget the `return`?")
    try:
        return np.asarray(result, dtype=float), where
    except (TypeError, ValueError):
        raise WrongAnswer(f"`{name}` should return an array of numbers, got {type(result).__name__}.") from None


def _diagnose_output(result, weights, values, where):
    """Raise WrongAnswer naming the misconception behind a wrong attention output."""
    n_q, n_k, d_v = weights.shape[0], weights.shape[1], values.shape[1]
    if result.shape in ((d_v,), (1, d_v)) or result.shape == (n_q, d_v):
        if close(np.broadcast_to(result, (n_q, d_v)), np.broadcast_to(values.mean(axis=0), (n_q, d_v)), 1e-6):
            raise WrongAnswer(
                f"When {where}, every row is the plain average of the values. The misconception: "
                "\"the weights never matter\". They stop mattering only when every value is the same; "
                "in general row i is the sum over j of w_ij v_j.", misconception="weights-never-matter"
            )
    if result.shape == (n_q, d_v):
        for j in range(n_k):
            if close(result, np.broadcast_to(values[j], (n_q, d_v)), 1e-6):
                raise WrongAnswer(
                    f"When {where}, every row is the single value v_{j + 1}. That shortcut only holds when every "
                    "value is the same: in general row i is the sum over j of w_ij v_j.",
                    misconception="weights-never-matter"
                )
    if n_q == n_k and result.shape == (n_q, d_v) and close(result, weights.T @ values, 1e-6):
        raise WrongAnswer(
            f"When {where}, your sum runs over the queries (the columns of the weights) instead of the keys: "
            "weights transposed. Row i of the output is the sum over keys j of w_ij v_j, "
            "using row i of the weights.", misconception="transposed"
        )
    if result.shape != (n_q, d_v):
        raise WrongAnswer(
            f"When {where}, `attention_output` should return shape (n_q, d_v) = {(n_q, d_v)}, got {result.shape}: "
            "one output row per query, as wide as a value."
        )
    raise WrongAnswer(
        f"When {where}, the result is not the weighted sum of the values. Row i should be the sum over j of w_ij v_j."
    )


def q5_2_attention_output(func, hidden=False):
    """``attention_output(weights, values)`` returns ``weights @ values``; with identical values, v."""
    name = "attention_output"
    rng = np.random.default_rng(52 if not hidden else 5200)
    cases = (
        # every kind of input the hidden cases try, once (n_q < n_k, n_q > n_k, n_q = 1, d_v = 1; sharp, flat,
        # one-hot and uniform weights): a visible pass is not undone by a new kind there, only by new values
        [(4, 4, 3, "softmax", False), (4, 4, 3, "softmax", True), (3, 5, 2, "dirichlet", False),
         (5, 2, 1, "one-hot", False), (1, 4, 3, "uniform", True)]
        if not hidden
        else [
            (n_q, n_k, d_v, kind, same)
            for (n_q, n_k, d_v) in ((3, 7, 2), (6, 2, 5), (1, 5, 4), (5, 5, 1))
            for kind in ("softmax", "dirichlet", "one-hot", "uniform")
            for same in (False, True)
        ]
    )
    for n_q, n_k, d_v, kind, same in cases:
        weights = _random_weights(rng, n_q, n_k, kind)
        v = rng.normal(size=d_v)
        values = np.tile(v, (n_k, 1)) if same else rng.normal(size=(n_k, d_v))
        result, where = _call(name, func, weights, values, hidden)
        expected = np.einsum("ij,jd->id", weights, values)  # independent of `@`
        if result.shape == expected.shape and close(result, expected, 1e-6):
            continue
        if hidden:
            kind_text = "identical values" if same else "different values"
            raise WrongAnswer(
                f"`{name}` passed the visible test but not a hidden one ({kind_text}, weights of shape "
                f"{weights.shape}, values of shape {values.shape}): make sure it works for any n_q, n_k and d_v."
            )
        if same and result.shape == expected.shape:
            raise WrongAnswer(
                f"With identical values v every output row should be v itself, whatever the weights; "
                f"when {where} it is not. Row i is the sum over j of w_ij v_j."
            )
        _diagnose_output(result, weights, values, where)
    if hidden:
        return correct(f"{HIDDEN_PASSED} (any weights whose rows sum to 1, any shapes)")
    return correct("With identical values the output is v in every row, however different the weights are.")


def q5_2_power(value, hidden=False):
    """Where attention's power comes from: C."""
    value = as_choice("power_source", value, OPTIONS)
    if hidden:
        if value != "C":
            raise _hidden_mismatch("power_source")
        return correct(HIDDEN_PASSED)
    if value == "C":
        return correct("Attention only mixes values: its power is which (diverse) values it emphasises.")
    if value == "A":
        raise WrongAnswer(
            "A is the misconception \"attention weights alone create new information\": with identical "
            "values every weight pattern gives the same output, v.", misconception="creates-information"
        )
    if value == "B":
        raise WrongAnswer(
            "B is the misconception \"the output can leave the range of the values\": the weights are "
            "non-negative and each row sums to 1, so the output is a weighted average of the values.",
            misconception="beyond-the-values"
        )
    raise WrongAnswer(
        "D is the misconception \"more heads create variety\": with identical inputs every head sees "
        "identical values too, so every head outputs its own constant and every position gets the same output.",
        misconception="creates-information"
    )


# --- Problem 5.3 -------------------------------------------------------------


def _cross_sizes():
    """This student's (d_model, h, n_q, n_k) for 5.3 (the sheet's outside a course)."""
    entry = current.numbers(LEVEL5, Q5_3_SCORE_SHAPE)
    return entry["d_model"], entry["h"], entry["n_q"], entry["n_k"]


def _cross_shapes():
    rows = {r.name: r.shape for r in mha.shape_table(*_cross_sizes())}
    return rows["Q_i K_i^T"], rows["output"], rows["Q_i"], rows["head_i"]


def _cross_trace():
    return _cross_trace_of(*_cross_sizes())


@functools.lru_cache(maxsize=4)
def _cross_trace_of(d_model, h, n_q, n_k):
    block = mha.MultiHeadAttention.from_seed(d_model, h, seed=53)
    rng = np.random.default_rng(53)
    return block.trace(rng.normal(size=(n_q, d_model)), rng.normal(size=(n_k, d_model)))


def _sheet_answer(value, which):
    """True when ``value`` is the sheet's answer given for other numbers."""
    return _cross_sizes() != (D_MODEL_5_3, H_5_3, N_Q, N_K) and value == which


def q5_3_score_shape(value, hidden=False):
    """The shape of Q_i K_i^T in cross-attention: (n_q, n_k) (the sheet's: (4, 6))."""
    value = as_shape("score_shape", value, ndim=2)
    expected, _, q_shape, _ = _cross_shapes()
    _, _, n_q, n_k = _cross_sizes()
    if hidden:
        if value != _cross_trace().scores[0].shape:
            raise _hidden_mismatch("score_shape")
        return correct(HIDDEN_PASSED)
    if value == expected:
        return correct(f"Q_i K_i^T is n_q × n_k = {expected}: one score per (query, key) pair.")
    if value == expected[::-1]:
        raise WrongAnswer(
            "That is (n_k, n_q): transposed. Q_i has one row per query and K_i^T one column per key, "
            "so the queries are the rows.", misconception="transposed"
        )
    if value in ((n_q, n_q), (n_k, n_k)):
        raise WrongAnswer(
            "A square score matrix is the misconception \"cross-attention is still square\". "
            "With n_k ≠ n_q, how many queries (rows) and how many keys (columns) are there?",
            misconception="cross-attention-square"
        )
    if value == q_shape:
        raise WrongAnswer("That is the shape of Q_i (n_q × d_k). The scores Q_i K_i^T have one column per key.",
                          misconception="matrix-confused")
    if _sheet_answer(value, (N_Q, N_K)):
        raise WrongAnswer(SHEET_NUMBERS, misconception="example-numbers-only")
    raise WrongAnswer("Not quite. Q_i is n_q × d_k and K_i is n_k × d_k: what is the shape of Q_i K_i^T?",
                      misconception="matrix-confused")


def q5_3_output_shape(value, hidden=False):
    """The shape of the block's output in cross-attention: (n_q, d_model) (the sheet's: (4, 64))."""
    value = as_shape("output_shape", value, ndim=2)
    _, expected, _, head_shape = _cross_shapes()
    d_model, _, n_q, n_k = _cross_sizes()
    if hidden:
        if value != _cross_trace().output.shape:
            raise _hidden_mismatch("output_shape")
        return correct(HIDDEN_PASSED)
    if value == expected:
        return correct(f"The output is n_q × d_model = {expected}: one enriched vector per query token.")
    if value[0] == n_k:
        raise WrongAnswer(
            "n_k rows is the misconception \"the output follows the keys\". The weights are n_q × n_k and "
            "multiply V_i (n_k × d_v): the n_k axis is summed away, one output row per query remains.",
            misconception="cross-attention-square"
        )
    if value == head_shape:
        raise WrongAnswer(
            "That is one head's output, n_q × d_v. The block concatenates the h heads and applies W^O: "
            "how wide is the result?", misconception="one-head-for-all"
        )
    if value == expected[::-1]:
        raise WrongAnswer("That is transposed: the output has one row per query token, each d_model wide.",
                          misconception="transposed")
    if value == (n_q, n_k):
        raise WrongAnswer("That is the score matrix's shape. The output is the weights times V_i, then W^O.",
                          misconception="matrix-confused")
    if _sheet_answer(value, (N_Q, D_MODEL_5_3)):
        raise WrongAnswer(SHEET_NUMBERS, misconception="example-numbers-only")
    raise WrongAnswer("Not quite. One row per query token: how many rows, and how wide is each row after W^O?")


def q5_3_unchanged(value, hidden=False):
    """Why multi-head works unchanged for n_k ≠ n_q: D."""
    value = as_choice("why_unchanged", value, OPTIONS)
    if hidden:
        if value != "D":
            raise _hidden_mismatch("why_unchanged")
        return correct(HIDDEN_PASSED)
    if value == "D":
        return correct("Heads, concatenation and W^O act on the width; n_q and n_k never enter them.")
    if value == "A":
        raise WrongAnswer(
            "A is the misconception \"cross-attention is still square\": nothing needs padding, the score "
            "matrix is simply n_q × n_k.", misconception="cross-attention-square"
        )
    if value == "C":
        raise WrongAnswer(
            "C is the misconception \"the output follows the keys\": there is one output row per query, "
            "n_q of them.", misconception="cross-attention-square"
        )
    raise WrongAnswer(
        "B is the misconception \"heads split the tokens\": every head sees every token; heads split the "
        "width d_model into h slices of d_k.", misconception="heads-split-tokens"
    )
