"""Level 3 (Analysis), notebooks/level3_analysis.ipynb: Problems 3.1, 3.2 and 3.3, declared once.

3.1's ratio is 1 for every entry (the problem's point: h heads of width d_model/h cost what one full-width
head costs); what varies is the two h's, so the misconceptions' answers (h/h_ref, "h heads cost h times
more", and h_ref/h, one head of each counted) are the student's own. 3.1's ``attention_cost`` and 3.3's
``count_distinct_heads`` (functions) keep their own checks (:mod:`autograders.checks.level3`), which name
misconceptions declared here.
"""

import functools
import itertools

import numpy as np

import mha_core as mha

from . import shared
from .declare import HIDDEN_PASSED, Answer, Mistake, Numbers, choice
from .level1 import divides
from .misconception import Misconception

ASSIGNMENT = "level3_analysis"


def _choice(id, right_letter, says, right):
    return choice(id, right_letter, says, prefix="", right=right, hidden_right=HIDDEN_PASSED)


# --- Problem 3.1: is "h heads make it h times slower" correct? -----------------------------------------

def attention_cost(d_model, h, n):
    """Multiply-adds of the scores Q_i K_i^T and the weighted sums A_i V_i over all h heads (mha_core's count)."""
    stages = mha.flop_count(d_model, h, n)
    return stages["scores"] + stages["weighted_sum"]


@functools.lru_cache(maxsize=256)
def traced_cost(d_model, h, n):
    """The same count read off the shapes of a real forward pass (an independent recomputation)."""
    trace = mha.MultiHeadAttention.from_seed(d_model, h, seed=3).trace(np.ones((n, d_model)))
    d_k = trace.Q.shape[-1]
    n_k = trace.V.shape[-2]
    # every score is a length-d_k dot product; every head entry is a length-n_k weighted sum
    return trace.scores.size * d_k + trace.heads.size * n_k


def _ratio_valid(entry):
    for name in ("h", "h_ref"):
        reason = divides({"d_model": entry["d_model"], "h": entry[name]})
        if reason:
            return reason.replace("h =", f"{name} =")
    if not entry["h"] > entry["h_ref"] or entry["h"] % entry["h_ref"]:
        return f"h = {entry['h']} is not a multiple of h_ref = {entry['h_ref']} larger than it"
    return None


def _derive_3_1(n):
    h, h_ref, d_model = n["h"], n["h_ref"], n["d_model"]
    heads = "one head" if h_ref == 1 else f"{h_ref} heads"
    return {"d_k": d_model // h, "d_k_ref": d_model // h_ref, "heads": heads,
            "width": f"the full width d_model = {d_model}" if h_ref == 1 else
                     f"the width of the {heads}, d_model/h_ref = {d_model // h_ref}"}


SHEET_3_1 = {"d_model": 512, "n": 10, "h": 8, "h_ref": 1}
# h_ref divides h (the messages say "h/h_ref times cheaper"); eight different ratios h/h_ref
_HEAD_PAIRS = ((2, 1), (4, 1), (6, 1), (12, 1), (16, 1), (24, 1), (32, 1), (4, 2), (16, 2), (6, 3), (12, 3), (8, 4),
               (16, 4))
HEADS_3_1 = Numbers("q3_1", sheet=SHEET_3_1, valid=_ratio_valid, derive=_derive_3_1, entries=tuple(
    e for e in ({"d_model": d_model, "n": n, "h": h, "h_ref": h_ref}
                for d_model, n, (h, h_ref) in itertools.product((384, 768), (6, 12), _HEAD_PAIRS)) if e != SHEET_3_1))

COST_RATIO = Answer(
    "q3_1_cost_ratio", "number", lambda n: attention_cost(n.d_model, n.h, n.n) / attention_cost(n.d_model, n.h_ref, n.n),
    HEADS_3_1, tolerance=1e-6, prefix="", trials=("real forward passes",), notes={"one-answer": "the ratio is 1 whatever the numbers: the problem's point"},
    mistakes=(
        Mistake(shared.HEADS_COST_MORE, lambda n: n.h / n.h_ref, lambda n: 'That is the misconception "h heads cost h times '
                f'more": it would hold if each of the {n.h} heads worked at {n.width}. Each works at d_k = '
                f"{n.d_model}/{n.h} = {n.d_k}."),
        Mistake(shared.ONE_HEAD_FOR_ALL, lambda n: n.h_ref / n.h, lambda n: (
            f"That ratio counts only one of the {n.h} heads: each head is {n.h} times cheaper than a full-width head, "
            f"but all {n.h} of them run." if n.h_ref == 1 else f"That ratio counts only one head of each block: each "
            f"of the {n.h} heads is {n.h // n.h_ref} times cheaper than one of the {n.h_ref} heads, but all {n.h} of "
            "them run.")),
    ),
    fallback=lambda n: f"Divide the multi-head cost ({n.h} heads of width d_k = {n.d_k}) by the cost with {n.heads} (of "
                       f"width {n.d_k_ref}), both for n = {n.n} tokens, counting the scores and the weighted sum.",
    right=lambda n: f"Ratio 1: as many multiply-adds with {n.h} heads as with {n.h_ref}.", hidden_right=HIDDEN_PASSED,
    hidden=lambda n: traced_cost(n.d_model, n.h, n.n) / traced_cost(n.d_model, n.h_ref, n.n),
)


# --- Problem 3.2: the broken forward pass ---------------------------------------------------------------

SYMPTOM_FOR_CAUSE = Misconception("symptom-for-cause", "a symptom taken for the cause", option=r"W\^O \\in")


def _step_right(letter):
    return (shared.HEAD_FULL_WIDTH, f"Step {letter} is right: each head is d_k = d_model/h = 512/8 = 64 wide, not d_model = "
            "512, so each W_i^V is 512×64 and each head is 10×64. Look at what happens to the 8 heads afterwards.")


WRONG_STEP = _choice("q3_2_wrong_step", "C", {
    "A": _step_right("A"), "B": _step_right("B"),
    "D": (SYMPTOM_FOR_CAUSE, 'That is the misconception "the wrong shape is the error": W^O of shape 64×512 is a '
          "symptom, not the cause: it only fits because of an earlier step. Which step made the heads 64 wide in total?"),
}, "Summing the heads is the error; the 64×512 W^O only follows from it.")


def _block_valid(entry):
    reason = divides(entry)
    if reason:
        return reason
    d_model, h, n = entry["d_model"], entry["h"], entry["n"]
    sizes = (d_model, h, n, d_model // h)
    if h < 2 or len(set(sizes)) < 4:
        return f"d_model, h, n and d_k {sizes} are not four different sizes, with h > 1"
    return None


SHEET_3_2 = {"d_model": 512, "h": 8, "n": 10}
BLOCK_3_2 = Numbers("q3_2", sheet=SHEET_3_2, valid=_block_valid, derive=lambda n: {"d_k": n["d_model"] // n["h"]},
                    entries=tuple(e for e in ({"d_model": d_model, "h": h, "n": n} for d_model, h, n in itertools.product(
                        (128, 192, 256, 384, 768), (2, 4, 6, 16), (5, 7, 12)))
                        if _block_valid(e) is None and e["d_model"] // e["h"] >= 8 and e != SHEET_3_2))


@functools.lru_cache(maxsize=4)
def block_shapes(d_model, h, n):
    """The shapes of the concatenated heads and of W^O in a real forward pass (the block itself is not kept)."""
    block = mha.MultiHeadAttention.from_seed(d_model, h)
    return block.trace(np.ones((n, d_model))).concat.shape, block.W_O.shape


def _table_shape(n, name):
    return next(r.shape for r in mha.shape_table(n.d_model, n.h, n.n) if r.name == name)


def _block_shape(id, row, index, mistakes, like, fallback, right, name=None):
    return Answer(id, "shape", lambda n: _table_shape(n, row), BLOCK_3_2, tolerance=0, prefix="", name=name,
                  mistakes=mistakes, sheet_mistake=True, fallback=fallback, right=right, hidden_right=HIDDEN_PASSED,
                  hidden=lambda n: block_shapes(n.d_model, n.h, n.n)[index], trials=("real forward pass",),
                  wrong_ndim=("`{name}` should have 2 numbers (rows, columns), like " + like + "; got {value}.", None))


CONCAT_SHAPE = _block_shape(
    "q3_2_concat_shape", "Concat(head_1..head_h)", 0, (
        Mistake(shared.HEADS_SUMMED + "/summed", lambda n: (n.n, n.d_k), lambda n: f"{(n.n, n.d_k)} is the shape after summing "
                f"the heads: summing adds the {n.h} heads into one {n.d_k}-wide block, so W^O must weigh feature j of every "
                "head alike. Concatenation puts them side by side."),
        Mistake(shared.HEADS_SUMMED + "/stacked", lambda n: (n.h, n.n, n.d_k), lambda n: f"{(n.h, n.n, n.d_k)} is the {n.h} "
                "heads stacked, before concatenation. Concatenating puts them side by side along the width axis: one "
                "row per token."),
        Mistake("-/one-column-per-head", lambda n: (n.n, n.h), lambda n: "Concatenation joins the heads' widths: each "
                f"head contributes d_k = {n.d_k} columns, not 1."),
        Mistake("-/transposed", lambda n: (n.d_model, n.n), "Rows are tokens and columns are features: write the shape "
                "as (tokens, width)."),
    ), "(10, 64)", "There is one row per token, and the heads' widths add up side by side.",
    lambda n: f"{n.h} heads of width {n.d_k} side by side: {n.n}×{n.d_model}.")

WO_SHAPE = _block_shape(
    "q3_2_wo_shape", "W^O", 1, (
        Mistake(shared.HEADS_SUMMED, lambda n: (n.d_k, n.d_model), lambda n: f"A {n.d_k}×{n.d_model} W^O is sized for summed "
                f"heads, the broken pass's mistake. W^O multiplies the concatenation of all {n.h} heads: its number of "
                "rows is the concatenation's width."),
        Mistake("-/maps-to-d-k", lambda n: (n.d_model, n.d_k), "W^O maps back to d_model, not to d_k: the block's output "
                "is as wide as its input."),
        Mistake(shared.MATRIX_CONFUSED, lambda n: (n.n, n.d_model), lambda n: f"{(n.n, n.d_model)} is the shape of the "
                "block's output, not of W^O: W^O does not depend on n."),
    ), "(64, 512)", "W^O multiplies the concatenated heads from the right and gives back width d_model.",
    lambda n: f"W^O maps the {n.d_model}-wide concatenation back to d_model = {n.d_model}.", name="W_O_shape")


# --- Problem 3.3: heads that share their projections ----------------------------------------------------

# named by 3.3's choice and by the check of its count_distinct_heads (autograders.checks.level3)
SHARED_PROJECTIONS_DIFFER = Misconception(
    "shared-projections-differ", "shared projections give different heads",
    option=r"still differ|average out",
)
SHARING_BREAKS_SHAPES = Misconception(
    "sharing-breaks-shapes", "shared projections taken to break the shapes",
    option=r"shape no longer fits",
)

SHARED_OUTCOME = _choice("q3_3_shared_outcome", "A", {
    "B": (SHARED_PROJECTIONS_DIFFER, 'That is the misconception "shared projections still give different heads". '
          "Both heads see the same tokens and apply the same W^Q, W^K, W^V: what could make their Q, K, V differ?"),
    "C": (SHARED_PROJECTIONS_DIFFER, 'That is the misconception "they average out": there is nothing to average. '
          "With the same matrices both heads compute exactly the same numbers, and concatenation keeps both copies."),
    "D": (SHARING_BREAKS_SHAPES, 'That is the misconception "sharing breaks the shapes". The shapes still fit: '
          "shared matrices have the same d_model×d_k shape as separate ones. The problem is what the heads compute, "
          "not their shapes."),
}, "Same Q, K, V, so byte-for-byte identical heads: 2 heads paid for, 1 view.")

ANSWERS = (COST_RATIO, WRONG_STEP, CONCAT_SHAPE, WO_SHAPE, SHARED_OUTCOME)
