"""Checks for Level 4 (Synthesis): Problems 4.1, 4.2 and 4.3.

4.1's count and 4.2's vectors are declared in :mod:`autograders.problems.level4` and judged by its
engine. Checked here: 4.1's ``parameter_count(d_model, h)`` (the sheet's sizes, then further sizes; its
wrong counts named with 4.1's declared misconceptions), and 4.3 (part of Level 4): the student's
``multi_head_attention`` written with numpy, compared with :func:`mha_core.multi_head_attention` on random
inputs (the hidden cases add a batch dimension); a wrong output is matched against :func:`mha_variant`,
the block with one known mistake made, to name it.
"""

import numpy as np

import mha_core as mha

from ..problems import level4 as problems, shared
from ..problems.engine import checks, numbers, recognise

from . import own_work
from .feedback import WrongAnswer, as_number, close, correct, name_mistake, named, passed, tries

checks(globals(), problems.ASSIGNMENT, problems.ANSWERS)

TOL = problems.TOL


# --- Problem 4.1: the parameter count -------------------------------------------

D_MODEL, H = problems.SHEET_4_1["d_model"], problems.SHEET_4_1["h"]  # the sheet's example
PARAM_CASES = [(512, 1), (512, 2), (512, 16), (512, 64), (512, 512), (768, 12), (1024, 16), (64, 4), (12, 3),
               (1, 1), (2048, 32), (96, 6)]


@tries("other $d_{\\text{model}}$ and $h$", "$h = 1$", "$h = d_{\\text{model}}$", "count matrix by matrix",
       "does not change with $h$")
def q4_1_parameter_count(fn, hidden=False):
    cases = [(D_MODEL, H)] + (PARAM_CASES if hidden else [])
    values = {}
    for d_model, h in cases:
        value = as_number(f"parameter_count({d_model}, {h})", own_work.call("parameter_count", fn, d_model, h))
        values[d_model, h] = value
        # hidden: an independent count, matrix by matrix: 3 h (d_model x d_k) + (d_model x d_model)
        expected = 3 * h * (d_model * (d_model // h)) + d_model * d_model if hidden else mha.parameter_count(d_model, h)
        if close(value, expected, 1e-9 * expected):
            continue
        if hidden and close(value, expected + 4 * d_model, 1e-9 * expected):  # the bias convention, named at any size
            raise WrongAnswer(f"`parameter_count({d_model}, {h})`: {problems.BIASES}", misconception=problems.COUNTED_BIASES)
        if hidden and (d_model, h) == (D_MODEL, H):
            raise WrongAnswer(f"`parameter_count({d_model}, {h})` is not the count of the weights: the visible test's "
                              "message says more.")
        if hidden:
            raise WrongAnswer(
                f"parameter_count gives the right count for d_model={D_MODEL}, h={H} but not for d_model={d_model}, "
                f"h={h}: write the count in terms of d_model and h, not numbers from the example.",
                misconception=shared.EXAMPLE_NUMBERS_ONLY
            )
        mistake = recognise(problems.PARAMS, value, {"d_model": d_model, "h": h}, sheet=False)  # 4.1's misconceptions
        raise WrongAnswer(mistake.message({"d_model": d_model, "h": h}) if mistake else (
            f"parameter_count({d_model}, {h}) returned {value:,.0f}, which is not the count. Add up the entries of "
            "every W_i^Q, W_i^K, W_i^V (h heads, each d_model×d_k) and of W^O (d_model×d_model)."
        ))
    if hidden:
        for d_model in {d for d, _ in values}:
            counts = {v for (d, _), v in values.items() if d == d_model}
            if len(counts) > 1:
                raise WrongAnswer(f"parameter_count changes with h at d_model={d_model}: it should not depend on h.")
    passed("3·h·d_model·d_k + d_model² = 4·d_model², whatever h is.", hidden)


# --- Problem 4.2: a causal query by hand -----------------------------------------

# --- Problem 4.3: multi-head attention, written with numpy (part of Level 4) ----

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


def _softmax(scores, axis=-1, keepdims=True, shift=True, sum_axis=None):
    """Softmax along ``axis`` (``sum_axis``: the sum over another axis, or over every entry with "all").
    Without ``keepdims``, as one head's (n, n) scores minus their (n,) row maxima (if ``shift``), divided
    by their (n,) row sums: numpy broadcasts row j's to column j."""
    with np.errstate(all="ignore"):
        if keepdims:
            e = np.exp(scores - scores.max(axis=axis, keepdims=True))
            if sum_axis == "all":  # E.sum() with no axis: every head, query and key (and batch entry)
                return e / e.sum()
            return e / e.sum(axis=axis if sum_axis is None else sum_axis, keepdims=True)
        e = np.exp(scores - np.expand_dims(scores.max(axis=-1), -2)) if shift else np.exp(scores)
        return e / np.expand_dims(e.sum(axis=-1), -2)


def _permute(A, order):
    """``A`` with its last three axes in ``order`` (a permutation of 0, 1, 2)."""
    lead = A.ndim - 3
    return A.transpose(*range(lead), *(lead + i for i in order))


# The heads' axes swapped the wrong way: the split reshapes X @ W to (n, h, d_k) and must bring it to
# (h, n, d_k) (order (1, 0, 2)); the merge brings (h, n, d_k) back to (n, h, d_k) before the reshape. A
# wrong split is undone the same way before the reshape ("inverse"), or merged as if it had been right
# (swap the first two axes: "standard"); the reshape may be to (n, d_k, h) too.
SPLIT_AXES = {"nhd": ("n", "h", "d_k"), "ndh": ("n", "d_k", "h")}
ORDERS = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
WRONG_SPLITS = [(shape, o, merge) for shape in SPLIT_AXES for o in ORDERS for merge in ("inverse", "standard")
                if [SPLIT_AXES[shape][i] for i in o] != ["h", "n", "d_k"]  # from (n, d_k, h): "interleaved"
                and not (merge == "standard" and tuple(np.argsort(o)) == (1, 0, 2))]  # the same as "inverse"
WRONG_MERGES = [o for o in ORDERS if o not in ((1, 0, 2), (0, 1, 2))]  # (0, 1, 2) is merge_no_transpose


def _axes_key(kind, order, shape=None, merge="inverse"):
    return f"{kind}_axes_{shape + '_' if shape else ''}{''.join(map(str, order))}{'_std' if merge == 'standard' else ''}"


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
    split = next((case for case in WRONG_SPLITS if mistake == _axes_key("split", case[1], case[0], case[2])), None)
    merge_order = next((o for o in WRONG_MERGES if mistake == _axes_key("merge", o)), None)
    if split:  # (n, h, d_k) or (n, d_k, h) in the wrong order, and back the same way before the reshape
        inner = (h, d_k) if split[0] == "nhd" else (d_k, h)
        Q, K, V = (_permute((X @ W).reshape(*X.shape[:-1], *inner), split[1]) for W in (W_Q, W_K, W_V))
    elif mistake == "rows":  # head i's W from rows i*d_k:(i+1)*d_k, transposed to fit: X @ W.T's columns
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
    axis, keepdims, shift, sum_axis = {
        "softmax_queries": (-2, True, True, None), "softmax_heads": (-3, True, True, None),
        "softmax_no_keepdims": (-1, False, False, None), "softmax_no_keepdims_max": (-1, False, True, None),
        "softmax_sum_all": (-1, True, True, "all"), "softmax_sum_head": (-1, True, True, (-2, -1)),
        "max_queries_sum_keys": (-2, True, True, -1), "max_keys_sum_queries": (-1, True, True, -2),
    }.get(mistake, (-1, True, True, None))
    weights = _softmax(scores, axis, keepdims, shift, sum_axis)
    if masked and mistake == "mask_after_softmax":
        weights = weights * may_attend  # zeroed, not renormalised
    heads = weights @ V  # (..., h, n, d_k)
    if split:
        inverse = tuple(int(i) for i in np.argsort(split[1])) if split[2] == "inverse" else (1, 0, 2)
        return _permute(heads, inverse).reshape(X.shape) @ W_O
    if merge_order:
        return _permute(heads, merge_order).reshape(X.shape) @ W_O
    if mistake == "summed":
        return heads.sum(axis=-3) @ W_O[:d_k]
    if mistake == "summed_tiled":  # the sum of the heads, (..., n, d_k), repeated h times to (..., n, d_model)
        return np.tile(heads.sum(axis=-3), h) @ W_O
    if mistake == "W_O_per_head":  # head i times its own d_k × d_k block of W_O's diagonal, side by side
        return np.concatenate([heads[..., i, :, :] @ W_O[i * d_k:(i + 1) * d_k, i * d_k:(i + 1) * d_k]
                               for i in range(h)], axis=-1)
    if mistake == "W_O_per_head_mean":  # head i times its rows of W_O, averaged over the heads instead of summed
        return np.mean([heads[..., i, :, :] @ W_O[i * d_k:(i + 1) * d_k] for i in range(h)], axis=0)
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
    "no_transpose": named(problems.SPLIT_WITHOUT_TRANSPOSE,
                          _TOKENS_AND_HEADS + ", and swap them back before putting the heads side by side."),
    "split_no_transpose": named(problems.SPLIT_WITHOUT_TRANSPOSE, _TOKENS_AND_HEADS + "."),
    "merge_no_transpose": (named(problems.SPLIT_WITHOUT_TRANSPOSE, "Tokens and heads mixed when the heads are put back: reshaping (h, n, d_k) straight to "
                           "(n, d_model) puts one head's rows side by side. Swap the axes back to (n, h, d_k) first, "
                           "then reshape to (n, d_model).")),
    "interleaved": (named(problems.ROWS_NOT_COLUMNS, "Head i takes every h-th column: head i is the block of columns i·d_k:(i+1)·d_k of X W^Q (and of "
                    "X W^K, X W^V): reshape to (n, h, d_k), not (n, d_k, h).")),
    "rows": named(problems.X_W_TRANSPOSED, _TRANSPOSED_W.format(which="the projections (W_Q, W_K, W_V)") + (
        " The same numbers come from per-head slices taken from rows instead of columns: head i uses columns "
        "i·d_k:(i+1)·d_k of W^Q, W^K and W^V (W_Q[:, i*d_k:(i+1)*d_k], d_model × d_k), not rows.")),
    "softmax_queries": named(problems.SOFTMAX_WRONG_AXIS, _SOFTMAX_AXIS.format(
        how="the weights are normalised over the queries (down each column)") + "."),
    "softmax_heads": named(problems.SOFTMAX_WRONG_AXIS, _SOFTMAX_AXIS.format(how="the weights are normalised across the heads") + "."),
    "softmax_no_keepdims": named(shared.NO_KEEPDIMS, _SOFTMAX_AXIS.format(
        how="without keepdims, row j's sum divides column j") + "."),
    "softmax_no_keepdims_max": named(shared.NO_KEEPDIMS, _SOFTMAX_AXIS.format(
        how="without keepdims, row j's maximum and sum act on column j") + "."),
    "x_W_T": named(problems.X_W_TRANSPOSED, _TRANSPOSED_W.format(which="every W (W_Q, W_K, W_V and W_O)")),
    "W_O_T": named(problems.X_W_TRANSPOSED, _TRANSPOSED_W.format(which="W_O (Concat @ W_O.T)")),
    "scale_d_k": named(shared.SCALED_BY_D_K, "Scores divided by d_k instead of √d_k: divide Q_i K_i^T by the square root of d_k."),
    "no_scale": named(shared.NO_SCALING, "No scaling: divide the scores Q_i K_i^T by √d_k before the softmax."),
    "scale_d_model": named(shared.SCALED_WITH_D_MODEL, "Used d_model instead of d_k: each head's scores are divided by √d_k, its own width."),
    "times_sqrt_d_k": named(shared.MULTIPLIED_BY_SQRT_D_K, "Multiplied by √d_k instead of dividing: the scores are divided by √d_k."),
    "mask_flipped": (named(shared.MASK_WRONG_WAY, f"The {_CAUSAL} is the wrong way round: query i may attend to keys j ≤ i (np.tri, the lower "
                     "triangle), not to the keys after it.")),
    "mask_strict": named(shared.CAUSAL_MASK_APPLIED,
                         f"The {_CAUSAL} hides the diagonal: query i may attend to keys j ≤ i, itself included."),
    "mask_after_softmax": (named(shared.MASK_WRONG_WAY, f"The {_CAUSAL} is applied after the softmax: zeroing the weights of later keys without "
                           "renormalising leaves rows that add up to less than 1. Mask the scores (set them to -inf) "
                           "before the softmax.")),
    "mask_zero_scores": named(shared.CAUSAL_MASK_APPLIED, f"The {_CAUSAL} sets masked scores to 0: e^0 = 1 still gives "
                              "those keys weight. Set them to -inf (or a very negative number) before the softmax."),
    "ignores_causal": named(shared.CAUSAL_MASK_APPLIED,
                            f"causal=True is ignored: with it, apply the {_CAUSAL} (query i may attend to keys j ≤ i only)."),
    "always_causal": named(shared.CAUSAL_MASK_APPLIED,
                           f"The {_CAUSAL} is applied with causal=False too: mask only when causal is True."),
    "summed": (named(shared.HEADS_SUMMED, "Heads summed: the heads are concatenated, not summed, into (n, d_model) (head i in columns "
               "i·d_k:(i+1)·d_k), then multiplied by all of W^O.")),
    "no_W_O": named(shared.FORGOT_W_O, "Forgot W^O: after putting the heads side by side, multiply by W_O."),
    "summed_tiled": named(shared.HEADS_SUMMED, "Heads summed, then repeated h times to the full width: the heads are "
                          "concatenated, not summed, into (n, d_model) (head i in columns i·d_k:(i+1)·d_k, each head's "
                          "own numbers), then multiplied by all of W^O."),
    "W_O_per_head": named(problems.W_O_PER_HEAD, "W^O is applied to each head apart: head i times a d_k × d_k block of W_O, "
                          "the blocks side by side, leaves every other entry of W_O out, so no output column mixes the "
                          "heads. Put the heads side by side first, (n, d_model), then multiply by the whole W_O: each "
                          "output column reads every head."),
    "W_O_per_head_mean": named(problems.W_O_PER_HEAD, "W^O is applied to each head apart (head i times its rows "
                               "i·d_k:(i+1)·d_k of W_O) and the results averaged: Concat W_O is their sum, not their "
                               "mean. Simplest: put the heads side by side, (n, d_model), then multiply by W_O."),
}


_SAME_ROW = ("Subtracting a number leaves a row's softmax unchanged only when the whole row (one query, every key) loses "
             "the same number")
MHA_MISTAKES.update({
    "softmax_sum_all": named(problems.SOFTMAX_SUM_ALL, "The softmax divides by the sum of every entry (`e.sum()` with no axis: "
                             "all heads, queries and keys together), so no query's weights add up to 1. Each query's "
                             "weights over the keys are normalised on their own: e.sum(axis=-1, keepdims=True)."),
    "softmax_sum_head": named(problems.SOFTMAX_SUM_ALL, "The softmax divides by the sum of a whole head's scores (over the "
                              "queries and the keys, axis=(-2, -1)), so no query's weights add up to 1. Each query's "
                              "weights over the keys are normalised on their own: e.sum(axis=-1, keepdims=True)."),
    "max_queries_sum_keys": named(problems.MAX_SUM_AXES_DIFFER, "The maximum you subtract and the sum you divide by run over "
                                  "different axes: the maximum over the queries (axis -2, down each column), the sum "
                                  f"over the keys (axis -1). {_SAME_ROW}: take the maximum over the keys too, "
                                  "scores.max(axis=-1, keepdims=True)."),
    "max_keys_sum_queries": named(problems.MAX_SUM_AXES_DIFFER, "The maximum you subtract and the sum you divide by run over "
                                  "different axes: the maximum over the keys (axis -1), the sum over the queries "
                                  "(axis -2, down each column). Each query's weights over the keys must add up to 1: "
                                  "sum over the keys too, e.sum(axis=-1, keepdims=True)."),
})


def _axes(order, axes):
    return "(" + ", ".join(axes[i] for i in order) + ")"


def _split_message(shape, order):
    axes = SPLIT_AXES[shape]
    layout = [axes[i] for i in order]
    reshaped = "(" + ", ".join(axes) + ")"
    reversed_all = " (`.T` on a 3-D array reverses every axis)" if order == (2, 1, 0) else ""
    interleaved = (" Reshaped to (n, d_k, h), head i is every h-th column: reshape to (n, h, d_k), so that head i is "
                   "columns i·d_k:(i+1)·d_k." if shape == "ndh" else "")
    return named(shared.TRANSPOSED_ALL_AXES if reversed_all else problems.HEADS_AXES_SWAPPED, (
        f"The heads are split with the wrong axes swapped: after the reshape to {reshaped} your Q, K and V are "
        f"{_axes(order, axes)}{reversed_all}, so the scores come out ({layout[0]}, {layout[1]}, {layout[1]}) instead "
        f"of (h, n, n), and the softmax weighs something else than each head's tokens.{interleaved} Swap the first "
        "two axes of (n, h, d_k) only, tokens and heads: (h, n, d_k), with np.swapaxes(A, -2, -3) (in 2-D also "
        "A.transpose(1, 0, 2)), so that head i is the (n, d_k) matrix of its columns for every token."))


def _merge_message(order):
    reversed_all = " (`.T` on a 3-D array reverses every axis)" if order == (2, 1, 0) else ""
    return named(shared.TRANSPOSED_ALL_AXES if reversed_all else problems.HEADS_AXES_SWAPPED, (
        f"The heads are put back with the wrong axes swapped: from (h, n, d_k) your code goes to "
        f"{_axes(order, ('h', 'n', 'd_k'))}{reversed_all} before the reshape to (n, d_model), so a token's row of the "
        "concatenation mixes in other tokens' numbers or interleaves the heads. Swap the first two axes back, (n, h, "
        "d_k) (np.swapaxes(heads, -2, -3)), then reshape: token j's row is head 1's d_k numbers, then head 2's, and "
        "so on."))


MHA_MISTAKES.update({_axes_key("split", o, shape, merge): _split_message(shape, o) for shape, o, merge in WRONG_SPLITS})
MHA_MISTAKES.update({_axes_key("merge", o): _merge_message(o) for o in WRONG_MERGES})


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
    if value is None:
        raise WrongAnswer("`multi_head_attention` returned None: end it with `return` and the output array.")
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise WrongAnswer(f"{where}, `multi_head_attention` should return an array of numbers, got "
                          f"{type(value).__name__}.") from None
    shape = array.shape
    if shape != X.shape:
        layout = "(batch, n, d_model)" if batch else "(n, d_model)"
        if h > 1 and shape == (*batch, n, d_k):
            raise WrongAnswer(f"{where}, the output has shape {shape} = (n, d_k), one head's width: the heads are "
                              "concatenated, not summed (nor one kept), into (n, d_model), then multiplied by W_O.",
                              misconception=shared.HEADS_SUMMED)
        if shape == (*batch, h, n, d_k):
            raise WrongAnswer(f"{where}, the output has shape {shape} = (h, n, d_k), the heads apart: put them side by "
                              "side (concatenated, not summed) into (n, d_model), then multiply by W_O.",
                              misconception=shared.HEADS_SUMMED)
        if batch:
            raise WrongAnswer(f"With a leading batch dimension, X of shape {X.shape} = {layout}, `multi_head_attention` "
                              f"should return shape {X.shape}, got {shape}. Write it for X of shape (..., n, d_model): "
                              "take n and d_model from X.shape[-2:], keep X.shape[:-2] (or use -1, `...` in "
                              "np.einsum, np.swapaxes(A, -2, -3)) in every reshape and transpose.",
                              misconception=problems.BATCH_DIMENSION)
        raise WrongAnswer(f"{where}, `multi_head_attention` should return an array of shape {X.shape} = {layout}, got "
                          f"{shape}.")
    if not np.isfinite(array).all():
        if causal:
            raise WrongAnswer(f"{where}, the output has NaN or infinity in it: a query row with every key masked gives "
                              f"0/0. Is the {_CAUSAL} the wrong way round, or does it hide the diagonal? Query i may "
                              "attend to keys j ≤ i, itself included.", misconception=shared.MASK_WRONG_WAY)
        raise WrongAnswer(f"{where}, the output has NaN or infinity in it: look for a division by zero, or an overflow "
                          "in np.exp (subtract each row's maximum score first).")
    return array


def _mha_close(value, expected):
    return close(value, expected, MHA_RTOL * max(1.0, float(np.abs(expected).max())))


@tries("batch dimension", "other shapes", "`causal` on and off")
def q4_3_multi_head_attention(fn, hidden=False):
    """Problem 4.3: the student's ``multi_head_attention`` against mha_core's, on random inputs."""
    cases = MHA_CASES + (MHA_HIDDEN_CASES if hidden else [])
    for batch, n, d_model, h, causal, seed in cases:
        X, Ws = mha_inputs(batch, n, d_model, seed)
        expected = mha.multi_head_attention(X, None, *Ws, h, causal=causal)[0]
        hint = "" if batch is None else named(problems.BATCH_DIMENSION, f"Here X has a leading batch dimension, shape {X.shape} = "
                                              "(batch, n, d_model): write it for X of shape (..., n, d_model), n and "
                                              "d_model from X.shape[-2:].")
        value = own_work.call("multi_head_attention", fn, X.copy(), *(W.copy() for W in Ws), h, causal, hint=hint,
                              shapes=_mha_shapes(X, h))
        value = _mha_output(value, X, h, causal)
        if _mha_close(value, expected):
            continue
        where = _mha_where(X, h, causal)
        name_mistake(where, MHA_MISTAKES, lambda mistake: mha_variant(X, *Ws, h, causal, mistake), lambda wrong: (
            wrong.shape == value.shape and not _mha_close(wrong, expected) and _mha_close(value, wrong)))
        if batch is not None:
            raise WrongAnswer(
                f"{where}: `multi_head_attention` works without a batch dimension but not with one. Write it for X of "
                "shape (..., n, d_model): each batch entry is its own sequence, and every reshape, transpose and "
                "product must act on the last axes only (X.shape[:-2], `...` in np.einsum, np.swapaxes(A, -2, -3)).",
                misconception=problems.BATCH_DIMENSION
            )
        raise WrongAnswer(
            f"{where}: `multi_head_attention` does not give multi-head attention. Step by step: X @ W_Q (and K, V); "
            "head i's Q_i = its columns i·d_k:(i+1)·d_k; softmax(Q_i K_i^T / √d_k) over the keys, times V_i; heads side by side; "
            "then @ W_O. To find the step, compare your intermediates with those of t = mha.MultiHeadAttention(W_Q, "
            "W_K, W_V, W_O, h).trace(X) in a cell of your own: t is not a tuple to unpack but a record read by name, "
            "t.Q, t.K, t.V, t.scores, t.scaled, t.weights, t.heads (each (h, n, ·), head i at [i]), t.concat and "
            "t.output."
        )
    correct("h heads of width d_k, side by side, then W^O: it agrees with mha_core." if not hidden else
            "Hidden checks passed too: a batch dimension, other shapes, causal on and off.")
