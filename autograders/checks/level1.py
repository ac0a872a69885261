"""Checks for Level 1 (Recognition): Problems 1.1 and 1.2.

One function per autograded answer cell, named after its grade_id. Expected
values come from :mod:`mha_core`; each known wrong answer is recognised and its
misconception named. With ``hidden=True`` a check tries further cases and its
messages do not give the answer away.
"""

import numpy as np

import mha_core as mha

from ..variants import current
from ..variants.levels import LEVEL1, Q1_1_D_K, Q1_2_OUTPUT_SHAPE

from .feedback import WrongAnswer, as_choice, as_number, as_shape, call, close, correct, named, tag_of

# Problem 1.1: the sheet's sizes (a student's own are the pool's entry: numbers()); further sizes for the function.
D_MODEL, H = Q1_1_D_K.sheet["d_model"], Q1_1_D_K.sheet["h"]
VISIBLE_SIZES = [(768, 12), (512, 4)]
HIDDEN_SIZES = [(512, 8), (1024, 16), (96, 3), (64, 64), (300, 1), (4096, 32)]

# Problem 1.2: a block of width 768 with 12 heads reads n = 6 tokens (the sheet's; a student's own: numbers()).
N = Q1_2_OUTPUT_SHAPE.sheet["n"]
WHY_OPTIONS = ("A", "B", "C", "D")
WHY_CORRECT = "B"




def numbers(pool):
    """This student's numbers for ``pool``'s problem (the sheet's outside a course)."""
    return current.numbers(LEVEL1, pool)


_SHEET_NUMBERS = named("example-numbers-only", "That is the answer for the sheet's numbers, not for yours: "
                       "use the numbers in the cell under the problem.")

_D_K_MESSAGES = {
    "multiplied-by-h": named("multiplied-by-h", "Multiplied instead of divided: d_model·h. The h heads *share* the width d_model, "
                      "so each head gets a smaller slice, d_model split evenly h ways."),
    "roles-swapped": named("roles-swapped", "Swapped roles: that is h / d_model. It is the width d_model that is split "
                           "among the h heads, not the other way round."),
    "head-full-width": named("head-full-width", "That is d_model, the full width of a token. One head works in a smaller "
                             "slice: the full width split evenly across the h heads."),
    "heads-free": named("heads-free", "That is h, the number of heads, not the width of one head."),
    "example-numbers-only": _SHEET_NUMBERS,
}


def _head_dim_mistakes(value, d_model, h, what):
    """Raise WrongAnswer naming the misconception if ``value`` is a known wrong d_k (the pool's
    misconceptions at these sizes: the same for every student's numbers)."""
    entry = {"d_model": d_model, "h": h}
    for key, wrong in Q1_1_D_K.mistakes(entry).items():
        if key == "example-numbers-only" and what.startswith("`head_dim("):
            continue  # the function's own test says it in its words
        if close(value, wrong, Q1_1_D_K.tolerance):
            message = _D_K_MESSAGES[key]
            raise WrongAnswer(f"{what} gave {value:g}. {message}", misconception=tag_of(message))


def q1_1_head_dim(head_dim, hidden=False):
    """Problem 1.1: ``head_dim(d_model, h)`` returns d_k = d_model / h."""
    for d_model, h in HIDDEN_SIZES if hidden else VISIBLE_SIZES:
        what = f"`head_dim({d_model}, {h})`"
        got = as_number(f"head_dim({d_model}, {h})", call("head_dim", head_dim, d_model, h))
        expected = mha.head_dim(d_model, h)
        if close(got, expected, 1e-9):
            continue
        if hidden:
            raise WrongAnswer(
                f"{what} returned {got:g}, which is not one head's width. Does your formula use both "
                "arguments, for sizes other than the sheet's?", misconception="example-numbers-only"
            )
        _head_dim_mistakes(got, d_model, h, what)
        raise WrongAnswer(
            f"{what} returned {got:g}, but should be {expected}: how many numbers describe one token "
            "inside one head when d_model numbers are shared evenly by h heads?",
            # the example's d_k at another size: a constant, not a formula
            misconception="example-numbers-only" if close(got, mha.head_dim(D_MODEL, H), 1e-9) else None,
        )
    if not hidden:
        correct("Each head gets d_k = d_v = d_model / h: the width is split evenly across the heads.")
    else:
        correct("Your head_dim also works for other widths and numbers of heads.")


def q1_1_d_k(d_k, hidden=False):
    """Problem 1.1: d_k for the student's d_model and h (the sheet's: 768, 12)."""
    value = as_number("d_k", d_k)
    entry = numbers(Q1_1_D_K)
    d_model, h = entry["d_model"], entry["h"]
    expected = d_model // h  # an independent recomputation of the pool's answer (mha.head_dim)
    if hidden:
        if not close(value, expected, 1e-9):  # the visible test's tolerance: 64, 64.0, np.int64(64) all pass
            raise WrongAnswer(f"`d_k` should be exactly one head's width for d_model = {d_model}, h = {h} "
                              "(a whole number).")
        correct(f"And d_k is a whole number: {h} divides {d_model} exactly.")
        return
    if not close(value, Q1_1_D_K.answer(entry), Q1_1_D_K.tolerance):
        _head_dim_mistakes(value, d_model, h, "`d_k`")
        raise WrongAnswer(f"`d_k` is {value:g}; use your formula with d_model = {d_model} and h = {h}.")
    correct(f"d_k = {d_model}/{h} = {expected}.")


def q1_2_output_shape(output_shape, hidden=False):
    """Problem 1.2: the shape of the block's output for the student's n, d_model, h (the sheet's: 6, 768, 12)."""
    shape = as_shape("output_shape", output_shape)
    entry = numbers(Q1_2_OUTPUT_SHAPE)
    d_model, h, n = entry["d_model"], entry["h"], entry["n"]
    if hidden:
        block = mha.MultiHeadAttention.from_seed(d_model, h)
        actual = block(np.random.default_rng(0).standard_normal((n, d_model)))[0].shape
        if shape != actual:
            raise WrongAnswer("`output_shape` does not match the shape of the block's actual output.")
        correct(f"It matches the output of a real block run on {n} tokens.")
        return
    messages = {
        "heads-summed": named("heads-summed", "That is the h heads stacked, each (n, d_k), before they are concatenated side by side. "
                     "The block returns one matrix with one row per token."),
        "one-head-for-all": named("one-head-for-all", "Only one head's width: (n, d_k). The block concatenates all h heads side by side, "
                  "so the width is h·d_v, and W^O keeps that width."),
        "multiplied-by-h": named("multiplied-by-h", "That is (n, h·d_model), as if every head were d_model wide. Each head is only "
                          "d_v = d_model/h wide, so the concatenation is h·d_model/h wide."),
        "matrix-confused": named("matrix-confused", "That is (n, n), the shape of a score matrix Q_i K_i^T (one score per pair of tokens), "
                "not the output, which has one row of features per token."),
        "transposed": named("transposed", "Rows and columns swapped: rows are tokens (n of them), columns are features."),
        "-/one-number-per-head": "That is (n, h): one number per head. Each head gives a whole d_v-wide vector per token.",
        "example-numbers-only": _SHEET_NUMBERS,
    }
    for key, wrong in Q1_2_OUTPUT_SHAPE.mistakes(entry).items():
        if shape == tuple(wrong):
            raise WrongAnswer(f"`output_shape` is {shape}. {messages[key]}", misconception=tag_of(messages[key]))
    expected = mha.shape_table(d_model, h, n)[-1].shape
    if len(shape) != len(expected):
        raise WrongAnswer(f"`output_shape` should be a 2-D shape (rows, columns), got {shape}.",
                          misconception="wrong-kind")
    if shape != expected:
        raise WrongAnswer(
            f"`output_shape` is {shape}. Rows: one per token (n = {n}). Columns: the width after "
            "concatenating the heads and applying W^O."
        )
    correct(f"The output is (n, d_model) = {expected}, the same shape as the input.")


WHY_MISCONCEPTIONS = {
    "A": named("head-full-width", 'That is the misconception "every head keeps the full width". Each head does '
               "*not* keep the full width d_model: it works in d_v = d_model/h. (And W^O does not average heads: "
               "it mixes the concatenated features.)"),
    "C": named("softmax-sets-width", 'That is the misconception "softmax fixes the width". Softmax makes each row of *weights* sum to 1; '
         "it says nothing about the width of the output."),
    "D": named("heads-summed", 'That is the misconception "the heads are summed". The heads are concatenated, not summed: summing '
         "would blur their h different views into one."),
}


def q1_2_why(why, hidden=False):
    """Problem 1.2: why the output width equals the input width (a choice A-D)."""
    choice = as_choice("why", why, WHY_OPTIONS)
    if choice != WHY_CORRECT:
        if hidden:
            raise WrongAnswer("`why` is not the reason the widths match.")
        raise WrongAnswer(f"`why` is {choice!r}. {WHY_MISCONCEPTIONS[choice]}",
                          misconception=tag_of(WHY_MISCONCEPTIONS[choice]))
    correct("h heads of width d_model/h concatenate back to d_model, and W^O keeps it.")
