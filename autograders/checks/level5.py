"""Checks for Level 5 (Mastery): Problems 5.1, 5.2 and 5.3.

The numbers, shapes and choices are declared in :mod:`autograders.problems.level5` and judged by its
engine; 5.2's ``attention_output`` (a function) is checked here.
"""

import numpy as np

import mha_core as mha

from ..problems import level5 as problems, shared
from ..problems.engine import checks

from . import own_work
from .feedback import HIDDEN_PASSED, WrongAnswer, close, correct, tries

checks(globals(), problems.ASSIGNMENT, problems.ANSWERS)

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
    result = own_work.call(name, func, weights.copy(), values.copy(), hint=hint)
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
                "in general row i is the sum over j of w_ij v_j.", misconception=problems.WEIGHTS_NEVER_MATTER
            )
    if result.shape == (n_q, d_v):
        for j in range(n_k):
            if close(result, np.broadcast_to(values[j], (n_q, d_v)), 1e-6):
                raise WrongAnswer(
                    f"When {where}, every row is the single value v_{j + 1}. That shortcut only holds when every "
                    "value is the same: in general row i is the sum over j of w_ij v_j.",
                    misconception=problems.WEIGHTS_NEVER_MATTER
                )
    if n_q == n_k and result.shape == (n_q, d_v) and close(result, weights.T @ values, 1e-6):
        raise WrongAnswer(
            f"When {where}, your sum runs over the queries (the columns of the weights) instead of the keys: "
            "weights transposed. Row i of the output is the sum over keys j of w_ij v_j, "
            "using row i of the weights.", misconception=shared.TRANSPOSED
        )
    if result.shape != (n_q, d_v):
        raise WrongAnswer(
            f"When {where}, `attention_output` should return shape (n_q, d_v) = {(n_q, d_v)}, got {result.shape}: "
            "one output row per query, as wide as a value."
        )
    raise WrongAnswer(
        f"When {where}, the result is not the weighted sum of the values. Row i should be the sum over j of w_ij v_j."
    )


@tries("non-square weights", "from 1 to 5", "one-hot")
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
