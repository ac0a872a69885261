"""Level 1 (Recognition), notebooks/level1_recognition.ipynb: Problems 1.1 and 1.2, declared once.

1.1's ``head_dim`` (a function) keeps its own check (:mod:`autograders.checks.level1`), which names its
wrong answers with :data:`D_K`'s misconceptions.
"""

import itertools

import numpy as np

import mha_core as mha

from . import shared
from .declare import Answer, Mistake, Numbers, choice
from .misconception import Misconception

ASSIGNMENT = "level1_recognition"


def divides(n):
    return None if n["h"] >= 1 and n["d_model"] % n["h"] == 0 else f"h = {n['h']} does not divide d_model = {n['d_model']}"


def _sizes(extra=None):
    """(d_model, h) with h dividing d_model, one head at least 8 wide, not h wide and not the sheet's 64."""
    for d_model, h in itertools.product((128, 192, 256, 384, 512, 640, 1024, 1536), (2, 4, 6, 8, 16)):
        if d_model % h == 0 and d_model // h >= 8 and d_model // h not in (h, 64):
            yield {"d_model": d_model, "h": h, **(extra or {})}


def _d_k(n):
    return {"d_k": n["d_model"] // n["h"]}


# --- Problem 1.1: d_k for a block of width d_model with h heads --------------------------------------

SIZES_1_1 = Numbers("q1_1", sheet={"d_model": 768, "h": 12}, valid=divides, derive=_d_k,
                    entries=tuple(e for e in _sizes() if e != {"d_model": 768, "h": 12}))

ROLES_SWAPPED = Misconception("roles-swapped", "split h by d_model (roles swapped)")

D_K = Answer(
    "q1_1_d_k", "number", lambda n: mha.head_dim(n.d_model, n.h), SIZES_1_1, sheet_mistake=True,
    trials=("exact, not rounded",),
    prefix="`{name}` gave {value}. ",
    mistakes=(
        Mistake(shared.MULTIPLIED_BY_H, lambda n: n.d_model * n.h, "Multiplied instead of divided: d_model·h. The h heads "
                "*share* the width d_model, so each head gets a smaller slice, d_model split evenly h ways."),
        Mistake(ROLES_SWAPPED, lambda n: n.h / n.d_model, "Swapped roles: that is h / d_model. It is the width "
                "d_model that is split among the h heads, not the other way round."),
        Mistake(shared.HEAD_FULL_WIDTH, lambda n: n.d_model, "That is d_model, the full width of a token. One head works "
                "in a smaller slice: the full width split evenly across the h heads."),
        Mistake(shared.HEADS_FREE, lambda n: n.h, "That is h, the number of heads, not the width of one head."),
    ),
    fallback=lambda n: f"`d_k` is {n.value:g}; use your formula with d_model = {n.d_model} and h = {n.h}.",
    right=lambda n: f"d_k = {n.d_model}/{n.h} = {n.d_k}.",
    hidden=lambda n: n.d_k, hidden_right=lambda n: f"And d_k is a whole number: {n.h} divides {n.d_model} exactly.",
    hidden_says=lambda n: f"`d_k` should be exactly one head's width for d_model = {n.d_model}, h = {n.h} (a whole "
                          "number).",
)


# --- Problem 1.2: the block's output shape, and why --------------------------------------------------

SHEET_1_2 = {"d_model": 768, "h": 12, "n": 6}
SIZES_1_2 = Numbers("q1_2", sheet=SHEET_1_2, valid=divides, derive=_d_k, entries=tuple(
    e for n in (3, 5, 7) for e in _sizes({"n": n}) if n not in (e["h"], e["d_model"] // e["h"]) and e != SHEET_1_2))


def _real_output_shape(n):
    block = mha.MultiHeadAttention.from_seed(n.d_model, n.h)
    return block(np.random.default_rng(0).standard_normal((n.n, n.d_model)))[0].shape


OUTPUT_SHAPE = Answer(
    "q1_2_output_shape", "shape", lambda n: (n.n, n.d_model), SIZES_1_2, tolerance=0, sheet_mistake=True,
    trials=("real block run on your $n$ tokens",),
    mistakes=(
        Mistake(shared.HEADS_SUMMED, lambda n: (n.h, n.n, n.d_k), "That is the h heads stacked, each (n, d_k), before they "
                "are concatenated side by side. The block returns one matrix with one row per token."),
        Mistake(shared.ONE_HEAD_FOR_ALL, lambda n: (n.n, n.d_k), "Only one head's width: (n, d_k). The block concatenates "
                "all h heads side by side, so the width is h·d_v, and W^O keeps that width."),
        Mistake(shared.MULTIPLIED_BY_H, lambda n: (n.n, n.h * n.d_model), "That is (n, h·d_model), as if every head were "
                "d_model wide. Each head is only d_v = d_model/h wide, so the concatenation is h·d_model/h wide."),
        Mistake(shared.MATRIX_CONFUSED, lambda n: (n.n, n.n), "That is (n, n), the shape of a score matrix Q_i K_i^T (one "
                "score per pair of tokens), not the output, which has one row of features per token."),
        Mistake(shared.TRANSPOSED, lambda n: (n.d_model, n.n), "Rows and columns swapped: rows are tokens (n of them), "
                "columns are features."),
        Mistake("-/one-number-per-head", lambda n: (n.n, n.h), "That is (n, h): one number per head. Each head gives a "
                "whole d_v-wide vector per token."),
    ),
    wrong_ndim=("`{name}` should be a 2-D shape (rows, columns), got {value}.", shared.WRONG_KIND),
    fallback=lambda n: f"`output_shape` is {n.value}. Rows: one per token (n = {n.n}). Columns: the width after "
                       "concatenating the heads and applying W^O.",
    right=lambda n: f"The output is (n, d_model) = {(n.n, n.d_model)}, the same shape as the input.",
    hidden=_real_output_shape, hidden_says="`output_shape` does not match the shape of the block's actual output.",
    hidden_right=lambda n: f"It matches the output of a real block run on {n.n} tokens.",
)

SOFTMAX_SETS_WIDTH = Misconception(
    "softmax-sets-width", "softmax taken to set the output's width",
    option=r"[Ss]oftmax normalises.*width",
)

WHY = choice(
    "q1_2_why", "B", {
        "A": (shared.HEAD_FULL_WIDTH, 'That is the misconception "every head keeps the full width". Each head does *not* '
              "keep the full width d_model: it works in d_v = d_model/h. (And W^O does not average heads: it mixes "
              "the concatenated features.)"),
        "C": (SOFTMAX_SETS_WIDTH, 'That is the misconception "softmax fixes the width". Softmax makes each row of '
              "*weights* sum to 1; it says nothing about the width of the output."),
        "D": (shared.HEADS_SUMMED, 'That is the misconception "the heads are summed". The heads are concatenated, not '
              "summed: summing would blur their h different views into one."),
    },
    right="h heads of width d_model/h concatenate back to d_model, and W^O keeps it.",
    hidden_says="`why` is not the reason the widths match.",
)

ANSWERS = (D_K, OUTPUT_SHAPE, WHY)
