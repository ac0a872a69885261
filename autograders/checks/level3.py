"""Checks for Level 3 (Analysis): Problems 3.1, 3.2 and 3.3.

The numbers, shapes and choices are declared in :mod:`autograders.problems.level3` and judged by its
engine; 3.1's ``attention_cost`` and 3.3's ``count_distinct_heads`` (functions) are checked here: the
sheet's sizes ``d_model = 512``, ``h = 8``, ``n = 10``, then further sizes; with ``hidden=True`` the
count is recomputed from a traced forward pass, and the messages never give the answer away.
"""

import numpy as np

import mha_core as mha

from ..problems import level3 as problems, shared
from ..problems.engine import checks

from . import own_work
from .feedback import WrongAnswer, as_int, as_number, close, named, passed, tag_of, tries

checks(globals(), problems.ASSIGNMENT, problems.ANSWERS)

D_MODEL, H, N = (problems.SHEET_3_1[name] for name in ("d_model", "h", "n"))  # the sheet's running example


TWO_FLOPS = ("You counted 2 FLOPs per multiply-add (a multiplication and an addition): a legitimate convention, "
             "but this problem counts multiply-adds, as its prompt says, so your count is twice the one asked for.")


def _cost_misconception(value, d_model, h, n):
    """The misconception behind a known wrong cost, or None."""
    expected = problems.attention_cost(d_model, h, n)
    d_k = d_model // h
    known = [
        (h * expected, named(shared.HEADS_COST_MORE, 'That is the misconception "h heads cost h times more": your count gives every head the '
                       "full width d_model. Each head works in width d_k = d_model/h.")),
        (expected / h, named(shared.ONE_HEAD_FOR_ALL, "That is the cost of one head only: there are h heads, each of width d_k = d_model/h.")),
        (expected / 2, "That counts only one of the two stages: the scores Q_i K_i^T and the weighted sum of "
                       "V_i each cost n·n·d_k multiply-adds per head."),
        (h * expected / 2, "That counts only one stage, and at the full width d_model: count both stages, each "
                           "head at width d_k = d_model/h."),
        (expected + h * n * n, "That also counts the softmax's exponentials: count multiply-adds only, of the "
                               "scores and the weighted sum."),
        (expected + 4 * n * d_model * d_model, "That also counts the projections (x W^Q, x W^K, x W^V and W^O): "
                                               "this count is only the scores and the weighted sum."),
        (2 * h * n * n * d_k * d_k, "That multiplies by d_k twice: a score is one dot product of length d_k, "
                                    "so it costs d_k multiply-adds, not d_k²."),
    ]
    for wrong, message in known:
        if wrong != expected and close(value, wrong, 1e-9 * max(1.0, abs(wrong))):
            return message
    return None


HIDDEN_COST_CASES = [(512, 1, 10), (512, 2, 10), (512, 64, 10), (512, 512, 10), (768, 12, 7), (64, 4, 3), (24, 3, 1),
                     (1024, 16, 128)]


@tries("other $d_{\\text{model}}$, $h$ and $n$", "$h = 1$", "$h = d_{\\text{model}}$", "real forward",
       "does not change with $h$")
def q3_1_attention_cost(fn, hidden=False):
    cases = [(D_MODEL, H, N)]
    if hidden:
        cases += HIDDEN_COST_CASES
    values = {}
    for d_model, h, n in cases:
        value = as_number(f"attention_cost({d_model}, {h}, {n})", own_work.call("attention_cost", fn, d_model, h, n))
        values[d_model, h, n] = value
        expected = problems.traced_cost(d_model, h, n) if hidden else problems.attention_cost(d_model, h, n)
        if close(value, expected, 1e-9 * expected):
            continue
        if close(value, 2 * expected, 2e-9 * expected):  # a legitimate convention, but not this problem's
            raise WrongAnswer(f"`attention_cost({d_model}, {h}, {n})`: {TWO_FLOPS}", misconception=shared.TWO_FLOPS)
        if hidden and (d_model, h, n) == (D_MODEL, H, N):
            raise WrongAnswer(
                f"`attention_cost({d_model}, {h}, {n})` is not the number of multiply-adds of the scores and the "
                "weighted sums of all the heads: the visible test's message says more."
            )
        if hidden:
            raise WrongAnswer(
                f"attention_cost gives the right count for d_model={D_MODEL}, h={H}, n={N} but not for "
                f"d_model={d_model}, h={h}, n={n}: write the count in terms of d_model, h and n, not numbers "
                "from the example.", misconception=shared.EXAMPLE_NUMBERS_ONLY
            )
        message = _cost_misconception(value, d_model, h, n)
        doubled = _cost_misconception(value / 2, d_model, h, n)
        if message is None and doubled is not None:
            message = named(tag_of(doubled) or shared.TWO_FLOPS, f"{TWO_FLOPS} And, counting multiply-adds: {doubled}")
        raise WrongAnswer(message or (
            f"attention_cost({d_model}, {h}, {n}) returned {value:,.0f}, which is not the count. Per head: the "
            "scores are an n×n matrix of dot products of length d_k, and the weighted sum is an n×n matrix "
            "times an n×d_k matrix. Then add up the h heads."
        ))
    if hidden:
        by_h = {h: v for (d, h, n), v in values.items() if (d, n) == (512, 10)}
        if len(set(by_h.values())) > 1:
            raise WrongAnswer("attention_cost changes with h at fixed d_model and n: look again at how d_k depends on h.")
    passed("Per head 2·n²·d_k; over h heads 2·n²·d_model: no h left.", hidden)


# --- Problem 3.3: heads that share their projections --------------------------

def _blocks(d_model, h, seed, shared, n=6):
    """Attention weights (h, n, n) of a block whose heads are separate, or share head 0's projections."""
    block = mha.MultiHeadAttention.from_seed(d_model, h, seed=seed)
    x = np.random.default_rng(seed + 100).standard_normal((n, d_model))
    if shared:
        return mha.shared_projection_attention(x, None, *block.head_weights(0), block.W_O, h)[1]
    return block(x)[1]


def _distinct_cases(hidden):
    """(weights, number of distinct heads) pairs; the count is worked out independently of the student."""
    if not hidden:
        return [(_blocks(8, 2, 0, shared=True), 1), (_blocks(8, 2, 0, shared=False), 2)]
    w4 = _blocks(16, 4, 1, shared=False)
    mixed = np.stack([w4[0], w4[1], w4[0], w4[2], w4[1]])  # 5 heads, 3 distinct
    return [
        (_blocks(16, 4, 1, shared=True), 1),
        (w4, 4),
        (mixed, 3),
        (_blocks(12, 1, 2, shared=False), 1),
        (_blocks(24, 8, 4, shared=True), 1),
        (_blocks(24, 8, 4, shared=False), 8),
        (np.stack([w4[3]] * 3 + [w4[2]]), 2),
    ]


@tries("1 to 8 heads", "not next to each other")
def q3_3_count_distinct_heads(fn, hidden=False):
    for weights, expected in _distinct_cases(hidden):
        h = weights.shape[0]
        given = weights.copy()  # the student's function gets a copy: it may change it freely
        value = as_int("count_distinct_heads(weights)", own_work.call("count_distinct_heads", fn, given))
        if value == expected:
            continue
        kind = "a shared-projection block" if expected == 1 and h > 1 else "a block"
        if hidden:
            raise WrongAnswer(
                f"count_distinct_heads gives a wrong count for {kind} with h={h} heads: compare whole heads "
                "(weights[i] with weights[j]) and count each different one once."
            )
        if expected == 1 and value == h:
            raise WrongAnswer(
                f"Your function counts {value} distinct heads in the shared-projection block. That is the belief "
                '"shared projections still give different heads": its heads\' weights are identical. Count a head '
                "only if no earlier head equals it.", misconception=problems.SHARED_PROJECTIONS_DIFFER
            )
        if value == len(np.unique(weights)):
            raise WrongAnswer(
                "Your function counts distinct numbers, not distinct heads: compare whole heads (each weights[i] "
                "is an n×n matrix), e.g. with np.unique(weights, axis=0) or np.array_equal.",
                misconception=problems.SHARED_PROJECTIONS_DIFFER
            )
        if value == h - expected:
            raise WrongAnswer("Your function counts the duplicated heads; count the distinct ones instead.")
        raise WrongAnswer(
            f"count_distinct_heads returned {value} for {kind} with h={h} heads; compare each head "
            "weights[i] with the others and count the different ones."
        )
    passed("The shared-projection block has 1 distinct head out of 2.", hidden)
