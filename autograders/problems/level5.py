"""Level 5 (Mastery), notebooks/level5_mastery.ipynb: Problems 5.1, 5.2 and 5.3, declared once.

5.2's ``attention_output`` (a function) keeps its own check (:mod:`autograders.checks.level5`), which names a
misconception declared here.
"""

import functools
import itertools

import numpy as np

import mha_core as mha

from . import shared
from .declare import HIDDEN_PASSED, Answer, Mistake, Numbers, choice, mismatch
from .level1 import divides
from .misconception import Misconception

ASSIGNMENT = "level5_mastery"


def _choice(id, name, right_letter, says, right):
    return choice(id, right_letter, says, name=name, prefix="", right=right, hidden_right=HIDDEN_PASSED,
                  hidden_says=mismatch(name))


# --- Problem 5.1: the limit h = d_model, and the sweet spot (the paper's d_model = 512 for everybody) ---

PAPER = Numbers("q5_1", sheet={"d_model": 512, "sweet_d_k": 64})

D_K_LIMIT = Answer(
    "q5_1_d_k_limit", "number", lambda n: mha.head_dim(n.d_model, n.d_model), PAPER, name="d_k_at_limit", prefix="",
    trials=("real block with $h = d_{\\text{model}}$",),
    mistakes=(
        Mistake(shared.HEAD_FULL_WIDTH, lambda n: n.d_model, "That is d_model, the total width. The misconception: \"more "
                "heads means wider heads\". The heads share the width, d_k = d_model / h, so d_k shrinks as h grows."),
        Mistake(shared.HEADS_FREE, lambda n: mha.head_dim(n.d_model, n.d_model // n.sweet_d_k), lambda n: (
            f"{n.sweet_d_k} is the sweet spot (h = {n.d_model // n.sweet_d_k}), not the limit. At the limit h = d_model "
            f"= {n.d_model}: what is d_model / h?")),
        Mistake(shared.MULTIPLIED_BY_H, lambda n: n.d_model * n.d_model, "That is d_model · h. The heads split the width: "
                "d_k = d_model / h."),
        Mistake(shared.RATIO_MISREAD, lambda n: 1 / n.d_model, "That is 1 / d_model, the division turned upside down: each "
                "head does not get a fraction of one number. d_k = d_model / h counts how many of the d_model numbers "
                "each head gets."),
    ),
    fallback=lambda n: f"Not quite. Use d_k = d_model / h with d_model = {n.d_model} and h = d_model.",
    right=lambda n: f"d_k = d_model / h = {n.d_model}/{n.d_model} = {mha.head_dim(n.d_model, n.d_model)}: every head's "
                    "query and key are single numbers.",
    # hidden: one head's W_i^Q of a block with h = d_model has d_k columns
    hidden=lambda n: mha.MultiHeadAttention.from_seed(n.d_model, n.d_model).head_weights(0)[0].shape[1],
    hidden_right=HIDDEN_PASSED, hidden_says=mismatch("d_k_at_limit"),
)

SWEET_SPOT = Answer(
    "q5_1_sweet_spot_heads", "number", lambda n: n.d_model // n.sweet_d_k, PAPER, name="sweet_spot_h", prefix="",
    trials=("divides 512",),
    mistakes=(
        Mistake(shared.HEADS_FREE + "/d_model", lambda n: n.d_model, lambda n: "h = d_model is the misconception \"more heads is "
                f"always better\": it leaves each head with d_k = 1. Which h gives d_k = {n.sweet_d_k}?"),
        Mistake(shared.HEADS_FREE + "/d_k", lambda n: n.sweet_d_k, lambda n: f"{n.sweet_d_k} is d_k, the width of one head. The "
                "question asks for h, the number of heads."),
        Mistake("-/product", lambda n: n.d_model * n.sweet_d_k, "That is d_model · d_k. Since d_k = d_model / h, solve "
                "for h."),
    ),
    fallback=lambda n: f"Not quite. Since d_k = d_model / h, h = d_model / d_k with d_model = {n.d_model}, "
                       f"d_k = {n.sweet_d_k}.",
    right=lambda n: f"h = d_model / d_k = {n.d_model}/{n.sweet_d_k} = {n.d_model // n.sweet_d_k}: the original "
                    "Transformer's choice.",
    hidden_right=HIDDEN_PASSED, hidden_says=mismatch("sweet_spot_h"),  # the only h that gives d_k = 64
)

NARROW_HEADS_UNIFORM = Misconception("narrow-heads-uniform", "one-number heads taken to attend uniformly",
                                     option=r"uniform")

REFUTATION = _choice("q5_1_refutation", "refutation", "D", {
    "A": (shared.HEADS_FREE, "A is the misconception \"heads are free\": the counts are right, and W^O does receive 512 "
          "numbers per token, but each comes from a head whose weights were computed from one-number queries and "
          "keys. What those weights cannot single out never reaches W^O: what can one such head attend to?"),
    "B": (NARROW_HEADS_UNIFORM, "B is the misconception \"one-number heads attend uniformly\": the scores q_i k_j of "
          "one-number queries and keys still differ from key to key (the figure above has bright columns, not flat "
          "rows). Something is lost all the same: what does a head with d_k = 1 have left to compare tokens with?"),
    "C": (shared.HEADS_COST_MORE, "C is the misconception \"heads cost parameters\": the concatenation of the h heads is "
          "h·d_k = d_model wide, not h·d_model, so W^O stays d_model × d_model and the count is 4 d_model² whatever h "
          "is (Problem 4.1)."),
}, "The width is shared: more heads means narrower heads, down to d_k = 1. Not a free lunch.")


# --- Problem 5.2: where attention's power comes from -------------------------------------------------

CREATES_INFORMATION = Misconception(
    "creates-information", "attention creates new information",
    option=r"weights alone|number of heads",
)
BEYOND_THE_VALUES = Misconception(
    "beyond-the-values", "the output taken to leave the range of the values",
    option=r"beyond the values",
)
# named by the check of 5.2's attention_output (a function, autograders.checks.level5)
WEIGHTS_NEVER_MATTER = Misconception("weights-never-matter", "the weights never matter")

POWER = _choice("q5_2_power", "power_source", "C", {
    "A": (CREATES_INFORMATION, "A is the misconception \"attention weights alone create new information\": with "
          "identical values every weight pattern gives the same output, v."),
    "B": (BEYOND_THE_VALUES, "B is the misconception \"the output can leave the range of the values\": the weights "
          "are non-negative and each row sums to 1, so the output is a weighted average of the values."),
    "D": (CREATES_INFORMATION, "D is the misconception \"more heads create variety\": with identical inputs every "
          "head sees identical values too, so every head outputs its own constant and every position gets the same "
          "output."),
}, "Attention only mixes values: its power is which (diverse) values it emphasises.")


# --- Problem 5.3: cross-attention, n_q queries over n_k keys -------------------------------------------

SHEET_5_3 = {"d_model": 64, "h": 4, "n_q": 4, "n_k": 6}
CROSS_ATTENTION_SQUARE = Misconception(
    "cross-attention-square", "cross-attention is square (output follows the keys)",
    option=r"square again|one row per key",
)
HEADS_SPLIT_TOKENS = Misconception(
    "heads-split-tokens", "heads taken to split the tokens, not the width",
    option=r"slice of the encoder's tokens",
)


def _cross_valid(entry):
    sizes = (entry["n_q"], entry["n_k"], entry["d_model"] // entry["h"], entry["d_model"])
    return divides(entry) or (None if len(set(sizes)) == 4 else
                              f"n_q, n_k, d_k and d_model {sizes} are not four different sizes")


CROSS = Numbers("q5_3", sheet=SHEET_5_3, valid=_cross_valid, derive=lambda n: {"d_k": n["d_model"] // n["h"]},
                entries=tuple(e for e in ({"d_model": d_model, "h": h, "n_q": n_q, "n_k": n_k} for d_model, h, n_q, n_k
                                          in itertools.product((32, 96, 128, 192), (2, 4, 8), (2, 3, 5), (7, 9, 10)))
                              if _cross_valid(e) is None and e != SHEET_5_3))


@functools.lru_cache(maxsize=4)
def cross_trace(d_model, h, n_q, n_k):
    block = mha.MultiHeadAttention.from_seed(d_model, h, seed=53)
    rng = np.random.default_rng(53)
    return block.trace(rng.normal(size=(n_q, d_model)), rng.normal(size=(n_k, d_model)))


def _cross_shape(id, name, answer, mistakes, fallback, right, real, fallback_tag=None):
    return Answer(id, "shape", answer, CROSS, tolerance=0, ndim=2, prefix="", mistakes=mistakes, sheet_mistake=True,
                  fallback=fallback, fallback_tag=fallback_tag, right=right, hidden_right=HIDDEN_PASSED,
                  hidden=lambda n: real(cross_trace(n.d_model, n.h, n.n_q, n.n_k)), hidden_says=mismatch(name),
                  trials=("real cross-attention pass",))


_SQUARE = ("A square score matrix is the misconception \"cross-attention is still square\". With n_k ≠ n_q, how "
           "many queries (rows) and how many keys (columns) are there?")

SCORE_SHAPE = _cross_shape(
    "q5_3_score_shape", "score_shape", lambda n: (n.n_q, n.n_k), (
        Mistake(shared.TRANSPOSED, lambda n: (n.n_k, n.n_q), "That is (n_k, n_q): transposed. Q_i has one row per query and "
                "K_i^T one column per key, so the queries are the rows."),
        Mistake(CROSS_ATTENTION_SQUARE + "/queries", lambda n: (n.n_q, n.n_q), _SQUARE),
        Mistake(CROSS_ATTENTION_SQUARE + "/keys", lambda n: (n.n_k, n.n_k), _SQUARE),
        Mistake(shared.MATRIX_CONFUSED, lambda n: (n.n_q, n.d_k), "That is the shape of Q_i (n_q × d_k). The scores Q_i "
                "K_i^T have one column per key."),
    ), "Not quite. Q_i is n_q × d_k and K_i is n_k × d_k: what is the shape of Q_i K_i^T?",
    lambda n: f"Q_i K_i^T is n_q × n_k = {(n.n_q, n.n_k)}: one score per (query, key) pair.",
    lambda trace: trace.scores[0].shape, fallback_tag=shared.MATRIX_CONFUSED)

OUTPUT_SHAPE = _cross_shape(
    "q5_3_output_shape", "output_shape", lambda n: (n.n_q, n.d_model), (
        Mistake(CROSS_ATTENTION_SQUARE, lambda n: (n.n_k, n.d_model), "n_k rows is the misconception \"the output "
                "follows the keys\". The weights are n_q × n_k and multiply V_i (n_k × d_v): the n_k axis is summed "
                "away, one output row per query remains.", matches=lambda value, n: value[0] == n.n_k),
        Mistake(shared.ONE_HEAD_FOR_ALL, lambda n: (n.n_q, n.d_k), "That is one head's output, n_q × d_v. The block "
                "concatenates the h heads and applies W^O: how wide is the result?"),
        Mistake(shared.TRANSPOSED, lambda n: (n.d_model, n.n_q), "That is transposed: the output has one row per query "
                "token, each d_model wide."),
        Mistake(shared.MATRIX_CONFUSED, lambda n: (n.n_q, n.n_k), "That is the score matrix's shape. The output is the "
                "weights times V_i, then W^O."),
    ), "Not quite. One row per query token: how many rows, and how wide is each row after W^O?",
    lambda n: f"The output is n_q × d_model = {(n.n_q, n.d_model)}: one enriched vector per query token.",
    lambda trace: trace.output.shape)

UNCHANGED = _choice("q5_3_unchanged", "why_unchanged", "D", {
    "A": (CROSS_ATTENTION_SQUARE, "A is the misconception \"cross-attention is still square\": nothing needs "
          "padding, the score matrix is simply n_q × n_k."),
    "C": (CROSS_ATTENTION_SQUARE, "C is the misconception \"the output follows the keys\": there is one output row "
          "per query, n_q of them."),
    "B": (HEADS_SPLIT_TOKENS, "B is the misconception \"heads split the tokens\": every head sees every token; "
          "heads split the width d_model into h slices of d_k."),
}, "Heads, concatenation and W^O act on the width; n_q and n_k never enter them.")

ANSWERS = (D_K_LIMIT, SWEET_SPOT, REFUTATION, POWER, SCORE_SHAPE, OUTPUT_SHAPE, UNCHANGED)
