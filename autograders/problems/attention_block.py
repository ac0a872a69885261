"""Problem 4.3 (Level 4), notebooks/level4_synthesis.ipynb: ``multi_head_attention`` written with numpy, declared once.

The cases the check runs it on (random blocks; the hidden ones add a batch dimension, other sizes and seeds), the
right output (:func:`mha_core.multi_head_attention`), and each known mistake once, with its message and its
misconception: most as the block a student writes with one step written otherwise (:func:`written`: the lines
of that step as the student writes them), a few as a predicate on the output (its shape, NaN). The check
(:mod:`autograders.checks.functions`) runs these; the tests run the same wrong blocks as students' answers.
"""

import numpy as np

import mha_core as mha

from ..student.feedback import WrongAnswer
from . import shared
from .declare import Entry, Function, Mistake, Written, close
from .misconception import Misconception, named

SPLIT_WITHOUT_TRANSPOSE = Misconception(
    "split-without-transpose", "heads split without the transpose (tokens and heads mixed)"
)
HEADS_AXES_SWAPPED = Misconception("heads-axes-swapped", "the wrong axes swapped when splitting or merging the heads")
ROWS_NOT_COLUMNS = Misconception("rows-not-columns", "per-head slices from rows instead of columns")
X_W_TRANSPOSED = Misconception("x-w-transposed", "X @ W.T instead of X @ W (the transpose of the sheet's convention)")
SOFTMAX_WRONG_AXIS = Misconception("softmax-wrong-axis", "softmax over the wrong axis")
SOFTMAX_SUM_ALL = Misconception("softmax-sum-all", "softmax divided by the sum of every entry (a sum with no axis)")
MAX_SUM_AXES_DIFFER = Misconception("max-sum-axes-differ", "the softmax's maximum and sum taken over different axes")
W_O_PER_HEAD = Misconception("w-o-per-head", "W^O applied to each head apart (not to the heads side by side)")
BATCH_DIMENSION = Misconception("batch-dimension", "a leading batch dimension not handled")


# --- the cases ------------------------------------------------------------------------------------------------

# (batch, n, d_model, h, causal, seed); batch None = X of shape (n, d_model), else (batch, n, d_model).
# The visible cases try every kind of input the hidden ones try (case_kind): 2-D and batched, causal off
# and on, h = 1, d_k = 1, n = 1; the hidden cases add values (other sizes and seeds), never a kind, so a
# visible pass never meets a hidden zero for a kind of input. 2-D, causal off first (most mistakes show there).
CASES = (
    (None, 5, 8, 2, False, 0), (None, 5, 8, 2, True, 1), (None, 6, 12, 3, False, 2), (None, 6, 12, 3, True, 3),
    (2, 5, 8, 2, False, 12), (2, 5, 8, 2, True, 13), (None, 4, 6, 1, True, 14), (None, 5, 4, 4, False, 15),
    (None, 1, 8, 2, True, 16),
)
HIDDEN_CASES = (
    (None, 7, 16, 4, True, 4), (None, 4, 6, 1, True, 5), (None, 5, 4, 4, False, 6), (None, 1, 8, 2, True, 7),
    (None, 20, 32, 8, True, 8), (2, 5, 8, 2, False, 9), (2, 5, 8, 2, True, 10), (3, 6, 12, 4, True, 11),
)
RTOL = 1e-6  # relative to the largest entry of the expected output (float64)


def case_kind(batch, n, d_model, h, causal, seed=None):
    """The kind of input a case tries (its values aside): the words of its ``where``."""
    return ("batched" if batch else "2-D", "causal" if causal else "not causal", *(
        word for word, holds in (("h = 1", h == 1), ("d_k = 1", d_model == h), ("n = 1", n == 1)) if holds))


def inputs(batch, n, d_model, seed):
    """``X`` of shape (n, d_model), or (batch, n, d_model), and W_Q, W_K, W_V, W_O (d_model x d_model)."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d_model) if batch is None else (batch, n, d_model))
    Ws = [rng.standard_normal((d_model, d_model)) / np.sqrt(d_model) for _ in range(4)]
    return X, Ws


def view(case):
    """A case as the check and the messages read it: its inputs, sizes and ``where``."""
    batch, n, d_model, h, causal, seed = case
    X, Ws = inputs(batch, n, d_model, seed)
    return Entry(X=X, Ws=Ws, batch=batch, n=n, d_model=d_model, h=h, d_k=d_model // h, causal=causal,
                 where=f"For X of shape {X.shape}, h = {h}, causal={causal}")


def same(value, expected):
    return close(value, expected, RTOL * max(1.0, float(np.abs(expected).max())))


# --- the block as a student writes it, step by step --------------------------------------------------------------

STEPS = {  # the right lines of each step (the check's reference is mha_core's; the tests compare this one too)
    "heads": "Q, K, V = (np.swapaxes((X @ W).reshape(*batch, n, h, d_k), -2, -3) for W in (W_Q, W_K, W_V))",
    "scores": "scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)  # (..., h, n, n)",
    "mask": "if causal:\n    scores = np.where(np.tri(n, dtype=bool), scores, -1e9)  # finite: a row may see nothing",
    "softmax": "e = np.exp(scores - scores.max(axis=-1, keepdims=True))\nweights = e / e.sum(axis=-1, keepdims=True)",
    "attend": "heads = weights @ V  # (..., h, n, d_k)",
    "concat": "concat = np.swapaxes(heads, -2, -3).reshape(*batch, n, d_model)",
    "output": "return concat @ W_O",
}


def written(**steps):
    """``multi_head_attention`` as a student writes it, with ``steps`` written otherwise ({step: its lines}; ""
    leaves a step out)."""
    lines = {**STEPS, **steps}
    body = "\n".join(lines[step] for step in STEPS if lines[step])
    return Written("def multi_head_attention(X, W_Q, W_K, W_V, W_O, h, causal=False):\n"
                   "    *batch, n, d_model = X.shape\n    d_k = d_model // h\n"
                   + "".join(f"    {line}\n" for line in body.split("\n")))


def _heads(expression):
    """The heads step with ``expression`` (of ``W``) for each of Q, K, V."""
    return f"Q, K, V = ({expression} for W in (W_Q, W_K, W_V))"


def _softmax(max_axis, sum_axis):
    return (f"e = np.exp(scores - scores.max(axis={max_axis}, keepdims=True))\n"
            f"weights = e / e.sum(axis={sum_axis}, keepdims=True)")


def _moved(array, order):
    """``array``'s last three axes in ``order`` (a permutation of 0, 1, 2), written for any leading axes."""
    return f"np.moveaxis({array}, {tuple(o - 3 for o in order)}, (-3, -2, -1))"


# --- the mistakes, each once: the block as written with it, the message, the misconception ---------------------

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
_SAME_ROW = ("Subtracting a number leaves a row's softmax unchanged only when the whole row (one query, every key) loses "
             "the same number")
_SPLIT_NO_T = _heads("(X @ W).reshape(*batch, h, n, d_k)")
_MERGE_NO_T = "concat = heads.reshape(*batch, n, d_model)"
_MASK = "if causal:\n    scores = np.where({may_attend}, scores, {fill})"

MISTAKES = (
    Mistake(SPLIT_WITHOUT_TRANSPOSE + "/split-and-merge", written(heads=_SPLIT_NO_T, concat=_MERGE_NO_T),
            _TOKENS_AND_HEADS + ", and swap them back before putting the heads side by side."),
    Mistake(SPLIT_WITHOUT_TRANSPOSE + "/split", written(heads=_SPLIT_NO_T), _TOKENS_AND_HEADS + "."),
    Mistake(SPLIT_WITHOUT_TRANSPOSE + "/merge", written(concat=_MERGE_NO_T),
            "Tokens and heads mixed when the heads are put back: reshaping (h, n, d_k) straight to (n, d_model) puts "
            "one head's rows side by side. Swap the axes back to (n, h, d_k) first, then reshape to (n, d_model)."),
    Mistake(ROWS_NOT_COLUMNS, written(heads=_heads("np.moveaxis((X @ W).reshape(*batch, n, d_k, h), -1, -3)")),
            "Head i takes every h-th column: head i is the block of columns i·d_k:(i+1)·d_k of X W^Q (and of X W^K, "
            "X W^V): reshape to (n, h, d_k), not (n, d_k, h)."),
    Mistake(X_W_TRANSPOSED + "/rows", written(heads=_heads("np.stack([X @ W[i * d_k:(i + 1) * d_k].T for i in range(h)], "
                                                           "axis=-3)")),
            _TRANSPOSED_W.format(which="the projections (W_Q, W_K, W_V)") + (
                " The same numbers come from per-head slices taken from rows instead of columns: head i uses columns "
                "i·d_k:(i+1)·d_k of W^Q, W^K and W^V (W_Q[:, i*d_k:(i+1)*d_k], d_model × d_k), not rows.")),
    Mistake(SOFTMAX_WRONG_AXIS + "/queries", written(softmax=_softmax(-2, -2)),
            _SOFTMAX_AXIS.format(how="the weights are normalised over the queries (down each column)") + "."),
    Mistake(SOFTMAX_WRONG_AXIS + "/heads", written(softmax=_softmax(-3, -3)),
            _SOFTMAX_AXIS.format(how="the weights are normalised across the heads") + "."),
    Mistake(shared.NO_KEEPDIMS + "/sum", written(softmax="e = np.exp(scores)\n"
                                                         "weights = e / e.sum(axis=-1)[..., None, :]  # one head's (n,)"),
            _SOFTMAX_AXIS.format(how="without keepdims, row j's sum divides column j") + "."),
    Mistake(shared.NO_KEEPDIMS + "/max-and-sum", written(softmax="e = np.exp(scores - scores.max(axis=-1)[..., None, :])\n"
                                                                 "weights = e / e.sum(axis=-1)[..., None, :]"),
            _SOFTMAX_AXIS.format(how="without keepdims, row j's maximum and sum act on column j") + "."),
    Mistake(X_W_TRANSPOSED + "/every-w", written(heads=_heads("np.swapaxes((X @ W.T).reshape(*batch, n, h, d_k), -2, -3)"),
                                                 output="return concat @ W_O.T"),
            _TRANSPOSED_W.format(which="every W (W_Q, W_K, W_V and W_O)")),
    Mistake(X_W_TRANSPOSED + "/w-o", written(output="return concat @ W_O.T"),
            _TRANSPOSED_W.format(which="W_O (Concat @ W_O.T)")),
    Mistake(shared.SCALED_BY_D_K, written(scores="scores = Q @ np.swapaxes(K, -1, -2) / d_k"),
            "Scores divided by d_k instead of √d_k: divide Q_i K_i^T by the square root of d_k."),
    Mistake(shared.NO_SCALING, written(scores="scores = Q @ np.swapaxes(K, -1, -2)"),
            "No scaling: divide the scores Q_i K_i^T by √d_k before the softmax."),
    Mistake(shared.SCALED_WITH_D_MODEL, written(scores="scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_model)"),
            "Used d_model instead of d_k: each head's scores are divided by √d_k, its own width."),
    Mistake(shared.MULTIPLIED_BY_SQRT_D_K, written(scores="scores = Q @ np.swapaxes(K, -1, -2) * np.sqrt(d_k)"),
            "Multiplied by √d_k instead of dividing: the scores are divided by √d_k."),
    Mistake(shared.MASK_WRONG_WAY + "/flipped", written(mask=_MASK.format(may_attend="np.tri(n, dtype=bool).T", fill="-1e9")),
            f"The {_CAUSAL} is the wrong way round: query i may attend to keys j ≤ i (np.tri, the lower triangle), not "
            "to the keys after it."),
    Mistake(shared.CAUSAL_MASK_APPLIED + "/strict",
            written(mask=_MASK.format(may_attend="np.tri(n, k=-1, dtype=bool)", fill="-1e9")),
            f"The {_CAUSAL} hides the diagonal: query i may attend to keys j ≤ i, itself included."),
    Mistake(shared.MASK_WRONG_WAY + "/after-softmax",
            written(mask="", attend="if causal:\n    weights = weights * np.tri(n)\nheads = weights @ V"),
            f"The {_CAUSAL} is applied after the softmax: zeroing the weights of later keys without renormalising "
            "leaves rows that add up to less than 1. Mask the scores (set them to -inf) before the softmax."),
    Mistake(shared.CAUSAL_MASK_APPLIED + "/zero-scores",
            written(mask=_MASK.format(may_attend="np.tri(n, dtype=bool)", fill="0.0")),
            f"The {_CAUSAL} sets masked scores to 0: e^0 = 1 still gives those keys weight. Set them to -inf (or a "
            "very negative number) before the softmax."),
    Mistake(shared.CAUSAL_MASK_APPLIED + "/ignored", written(mask=""),
            f"causal=True is ignored: with it, apply the {_CAUSAL} (query i may attend to keys j ≤ i only)."),
    Mistake(shared.CAUSAL_MASK_APPLIED + "/always",
            written(mask="scores = np.where(np.tri(n, dtype=bool), scores, -1e9)  # causal or not"),
            f"The {_CAUSAL} is applied with causal=False too: mask only when causal is True."),
    Mistake(shared.HEADS_SUMMED, written(concat="", output="return heads.sum(axis=-3) @ W_O[:d_k]"),
            "Heads summed: the heads are concatenated, not summed, into (n, d_model) (head i in columns "
            "i·d_k:(i+1)·d_k), then multiplied by all of W^O."),
    Mistake(shared.FORGOT_W_O, written(output="return concat"),
            "Forgot W^O: after putting the heads side by side, multiply by W_O."),
    Mistake(shared.HEADS_SUMMED + "/tiled", written(concat="", output="return np.tile(heads.sum(axis=-3), h) @ W_O"),
            "Heads summed, then repeated h times to the full width: the heads are concatenated, not summed, into "
            "(n, d_model) (head i in columns i·d_k:(i+1)·d_k, each head's own numbers), then multiplied by all of W^O."),
    Mistake(W_O_PER_HEAD + "/blocks", written(concat="", output=(
        "return np.concatenate([heads[..., i, :, :] @ W_O[i * d_k:(i + 1) * d_k, i * d_k:(i + 1) * d_k]\n"
        "                       for i in range(h)], axis=-1)")),
            "W^O is applied to each head apart: head i times a d_k × d_k block of W_O, the blocks side by side, leaves "
            "every other entry of W_O out, so no output column mixes the heads. Put the heads side by side first, "
            "(n, d_model), then multiply by the whole W_O: each output column reads every head."),
    Mistake(W_O_PER_HEAD + "/mean", written(concat="", output=(
        "return np.mean([heads[..., i, :, :] @ W_O[i * d_k:(i + 1) * d_k] for i in range(h)], axis=0)")),
            "W^O is applied to each head apart (head i times its rows i·d_k:(i+1)·d_k of W_O) and the results "
            "averaged: Concat W_O is their sum, not their mean. Simplest: put the heads side by side, (n, d_model), "
            "then multiply by W_O."),
    Mistake(SOFTMAX_SUM_ALL + "/every-entry", written(softmax=_softmax(-1, -1).replace(
        "e.sum(axis=-1, keepdims=True)", "e.sum()")),
            "The softmax divides by the sum of every entry (`e.sum()` with no axis: all heads, queries and keys "
            "together), so no query's weights add up to 1. Each query's weights over the keys are normalised on their "
            "own: e.sum(axis=-1, keepdims=True)."),
    Mistake(SOFTMAX_SUM_ALL + "/whole-head", written(softmax=_softmax(-1, (-2, -1))),
            "The softmax divides by the sum of a whole head's scores (over the queries and the keys, axis=(-2, -1)), "
            "so no query's weights add up to 1. Each query's weights over the keys are normalised on their own: "
            "e.sum(axis=-1, keepdims=True)."),
    Mistake(MAX_SUM_AXES_DIFFER + "/max-over-queries", written(softmax=_softmax(-2, -1)),
            "The maximum you subtract and the sum you divide by run over different axes: the maximum over the queries "
            f"(axis -2, down each column), the sum over the keys (axis -1). {_SAME_ROW}: take the maximum over the "
            "keys too, scores.max(axis=-1, keepdims=True)."),
    Mistake(MAX_SUM_AXES_DIFFER + "/sum-over-queries", written(softmax=_softmax(-1, -2)),
            "The maximum you subtract and the sum you divide by run over different axes: the maximum over the keys "
            "(axis -1), the sum over the queries (axis -2, down each column). Each query's weights over the keys must "
            "add up to 1: sum over the keys too, e.sum(axis=-1, keepdims=True)."),
)


# The heads' axes swapped the wrong way: the split reshapes X @ W to (n, h, d_k) and must bring it to
# (h, n, d_k) (order (1, 0, 2)); the merge brings (h, n, d_k) back to (n, h, d_k) before the reshape. A
# wrong split is undone the same way before the reshape ("inverse"), or merged as if it had been right
# (swap the first two axes: "standard"); the reshape may be to (n, d_k, h) too.
SPLIT_AXES = {"nhd": ("n", "h", "d_k"), "ndh": ("n", "d_k", "h")}
ORDERS = [(0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0)]
WRONG_SPLITS = [(shape, o, merge) for shape in SPLIT_AXES for o in ORDERS for merge in ("inverse", "standard")
                if [SPLIT_AXES[shape][i] for i in o] != ["h", "n", "d_k"]  # from (n, d_k, h): "interleaved"
                and not (merge == "standard" and tuple(np.argsort(o)) == (1, 0, 2))]  # the same as "inverse"
WRONG_MERGES = [o for o in ORDERS if o not in ((1, 0, 2), (0, 1, 2))]  # (0, 1, 2) is the merge without the swap


def _axes(order, axes):
    return "(" + ", ".join(axes[i] for i in order) + ")"


def _split_mistake(shape, order, merge):
    axes = SPLIT_AXES[shape]
    layout = [axes[i] for i in order]
    reshaped = "(" + ", ".join(axes) + ")"
    reversed_all = " (`.T` on a 3-D array reverses every axis)" if order == (2, 1, 0) else ""
    interleaved = (" Reshaped to (n, d_k, h), head i is every h-th column: reshape to (n, h, d_k), so that head i is "
                   "columns i·d_k:(i+1)·d_k." if shape == "ndh" else "")
    back = tuple(int(i) for i in np.argsort(order)) if merge == "inverse" else (1, 0, 2)
    tag = shared.TRANSPOSED_ALL_AXES if reversed_all else HEADS_AXES_SWAPPED
    inner = "h, d_k" if shape == "nhd" else "d_k, h"
    return Mistake(
        f"{tag}/split-{shape}-{''.join(map(str, order))}-{merge}",
        written(heads=_heads(_moved(f"(X @ W).reshape(*batch, n, {inner})", order)),
                concat=f"concat = {_moved('heads', back)}.reshape(*batch, n, d_model)"),
        f"The heads are split with the wrong axes swapped: after the reshape to {reshaped} your Q, K and V are "
        f"{_axes(order, axes)}{reversed_all}, so the scores come out ({layout[0]}, {layout[1]}, {layout[1]}) instead "
        f"of (h, n, n), and the softmax weighs something else than each head's tokens.{interleaved} Swap the first "
        "two axes of (n, h, d_k) only, tokens and heads: (h, n, d_k), with np.swapaxes(A, -2, -3) (in 2-D also "
        "A.transpose(1, 0, 2)), so that head i is the (n, d_k) matrix of its columns for every token.")


def _merge_mistake(order):
    reversed_all = " (`.T` on a 3-D array reverses every axis)" if order == (2, 1, 0) else ""
    tag = shared.TRANSPOSED_ALL_AXES if reversed_all else HEADS_AXES_SWAPPED
    return Mistake(
        f"{tag}/merge-{''.join(map(str, order))}",
        written(concat=f"concat = {_moved('heads', order)}.reshape(*batch, n, d_model)"),
        f"The heads are put back with the wrong axes swapped: from (h, n, d_k) your code goes to "
        f"{_axes(order, ('h', 'n', 'd_k'))}{reversed_all} before the reshape to (n, d_model), so a token's row of the "
        "concatenation mixes in other tokens' numbers or interleaves the heads. Swap the first two axes back, (n, h, "
        "d_k) (np.swapaxes(heads, -2, -3)), then reshape: token j's row is head 1's d_k numbers, then head 2's, and "
        "so on.")


MISTAKES += tuple(_split_mistake(*split) for split in WRONG_SPLITS) + tuple(_merge_mistake(o) for o in WRONG_MERGES)


# --- what the output's shape and values say before it is compared ------------------------------------------------

SHAPES = (  # predicates on the output, named as soon as it is read
    Mistake(shared.HEADS_SUMMED + "/one-head-wide", None,
            lambda c: f"{c.where}, the output has shape {c.value.shape} = (n, d_k), one head's width: the heads are "
                      "concatenated, not summed (nor one kept), into (n, d_model), then multiplied by W_O.",
            matches=lambda value, c: c.h > 1 and value.shape == (*c.X.shape[:-2], c.n, c.d_k)),
    Mistake(shared.HEADS_SUMMED + "/heads-apart", None,
            lambda c: f"{c.where}, the output has shape {c.value.shape} = (h, n, d_k), the heads apart: put them side "
                      "by side (concatenated, not summed) into (n, d_model), then multiply by W_O.",
            matches=lambda value, c: value.shape == (*c.X.shape[:-2], c.h, c.n, c.d_k)),
    Mistake(BATCH_DIMENSION + "/output-shape", None,
            lambda c: f"With a leading batch dimension, X of shape {c.X.shape} = (batch, n, d_model), "
                      f"`multi_head_attention` should return shape {c.X.shape}, got {c.value.shape}. Write it for X of "
                      "shape (..., n, d_model): take n and d_model from X.shape[-2:], keep X.shape[:-2] (or use -1, "
                      "`...` in np.einsum, np.swapaxes(A, -2, -3)) in every reshape and transpose.",
            matches=lambda value, c: c.batch is not None and value.shape != c.X.shape),
    Mistake(shared.MASK_WRONG_WAY + "/nan", None,
            lambda c: f"{c.where}, the output has NaN or infinity in it: a query row with every key masked gives 0/0. "
                      f"Is the {_CAUSAL} the wrong way round, or does it hide the diagonal? Query i may attend to keys "
                      "j ≤ i, itself included.",
            matches=lambda value, c: c.causal and value.shape == c.X.shape and not np.isfinite(value).all()),
)


def _output(value, c):
    """The student's output as a float array (its shape not yet judged), or WrongAnswer saying what it is not."""
    if isinstance(value, tuple) and len(value) == 2 and np.shape(value[0]) == c.X.shape:
        raise WrongAnswer(f"{c.where}, `multi_head_attention` returned a pair (like mha_core's (output, weights)): "
                          "return the output array alone.")
    if value is None:
        raise WrongAnswer("`multi_head_attention` returned None: end it with `return` and the output array.")
    try:
        return np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise WrongAnswer(f"{c.where}, `multi_head_attention` should return an array of numbers, got "
                          f"{type(value).__name__}.") from None


def _wrong_output(value, c):
    """What is wrong with an output no predicate named: its shape, or NaN."""
    if value.shape != c.X.shape:
        raise WrongAnswer(f"{c.where}, `multi_head_attention` should return an array of shape {c.X.shape} = (n, d_model), "
                          f"got {value.shape}.")
    if not np.isfinite(value).all():
        raise WrongAnswer(f"{c.where}, the output has NaN or infinity in it: look for a division by zero, or an overflow "
                          "in np.exp (subtract each row's maximum score first).")


def _shapes(c):
    """What the shapes inside multi_head_attention should be (said after a shape error)."""
    batch = tuple(c.X.shape[:-2])
    return (f"For X of shape {c.X.shape} and h = {c.h} (d_k = {c.d_k}) the shapes should be: X @ W_Q, X @ W_K, X @ W_V "
            f"{(*batch, c.n, c.d_model)}; split into heads {(*batch, c.h, c.n, c.d_k)}; scores and weights "
            f"{(*batch, c.h, c.n, c.n)}, their row sums {(*batch, c.h, c.n, 1)} with keepdims=True; the heads side by "
            f"side {(*batch, c.n, c.d_model)}.")


def _hint(c):
    return "" if c.batch is None else named(BATCH_DIMENSION, f"Here X has a leading batch dimension, shape {c.X.shape} = "
                                            "(batch, n, d_model): write it for X of shape (..., n, d_model), n and "
                                            "d_model from X.shape[-2:].")


def _fallback(c):
    if c.batch is not None:
        return named(BATCH_DIMENSION, (
            f"{c.where}: `multi_head_attention` works without a batch dimension but not with one. Write it for X of "
            "shape (..., n, d_model): each batch entry is its own sequence, and every reshape, transpose and "
            "product must act on the last axes only (X.shape[:-2], `...` in np.einsum, np.swapaxes(A, -2, -3))."))
    return (f"{c.where}: `multi_head_attention` does not give multi-head attention. Step by step: X @ W_Q (and K, V); "
            "head i's Q_i = its columns i·d_k:(i+1)·d_k; softmax(Q_i K_i^T / √d_k) over the keys, times V_i; heads side "
            "by side; then @ W_O. To find the step, compare your intermediates with those of t = "
            "mha.MultiHeadAttention(W_Q, W_K, W_V, W_O, h).trace(X) in a cell of your own: t is not a tuple to unpack "
            "but a record read by name, t.Q, t.K, t.V, t.scores, t.scaled, t.weights, t.heads (each (h, n, ·), head i "
            "at [i]), t.concat and t.output.")


MULTI_HEAD_ATTENTION = Function(
    "q4_3_multi_head_attention", "multi_head_attention", CASES, view,
    arguments=lambda c: (c.X.copy(), *(W.copy() for W in c.Ws), c.h, c.causal),
    answer=lambda c: mha.multi_head_attention(c.X, None, *c.Ws, c.h, causal=c.causal)[0],
    same=same, hidden_cases=HIDDEN_CASES, mistakes=SHAPES + MISTAKES, convert=_output, wrong_output=_wrong_output,
    hint=_hint, shapes=_shapes, fallback=_fallback,
    right="h heads of width d_k, side by side, then W^O: it agrees with mha_core.",
    hidden_right="Hidden checks passed too: a batch dimension, other shapes, causal on and off.",
    trials=("batch dimension", "other shapes", "`causal` on and off"),
)
