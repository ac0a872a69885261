"""Checks for Level 3 (Analysis): Problems 3.1, 3.2 and 3.3.

One function per autograded answer cell, named after its grade_id. The sheet's sizes are
``d_model = 512``, ``h = 8``, ``n = 10``, so ``d_k = d_model / h = 64``; 3.1's ratio and 3.2's
shapes judge a student's own numbers (:mod:`..variants.levels.level3`'s pools: the sheet's outside a course).
Expected values come from :mod:`mha_core`; with ``hidden=True`` a check recomputes
them another way (from a traced forward pass) or tries further inputs, and its
messages never give the answer away.
"""


import functools

import numpy as np

import mha_core as mha

from ..variants import current
from ..variants.levels import LEVEL3, Q3_1_COST_RATIO, Q3_2_CONCAT_SHAPE, Q3_2_WO_SHAPE

from .feedback import WrongAnswer, as_choice, as_int, as_number, as_shape, call, close, correct, named, tag_of

D_MODEL, H, N = 512, 8, 10  # the sheet's running example (Problems 2.1, 3.1, 3.2; a student's own: the pools' entries)




# --- Problem 3.1: is "h heads make it h times slower" correct? -----------------

CLAIM_OPTIONS = ("A", "B", "C")


def q3_1_claim(value, hidden=False):
    choice = as_choice("claim", value, CLAIM_OPTIONS)
    if choice == "A":
        raise WrongAnswer(
            'That is the misconception "h heads cost h times more". Each head does not work at the full width '
            "d_model: count one head's multiply-adds at its own width d_k = d_model/h, then multiply by h.",
            misconception="heads-cost-more"
        )
    if choice == "C":
        raise WrongAnswer(
            'That is the opposite slip, "narrow heads are h times cheaper": each head is h times narrower, '
            "but there are h of them. Multiply one head's cost by h.", misconception="one-head-for-all"
        )
    correct("The h heads and their 1/h width cancel." if not hidden else "Hidden checks passed too.")


def attention_cost_expected(d_model, h, n):
    """Multiply-adds of the scores Q_i K_i^T and the weighted sums A_i V_i over all h heads."""
    stages = mha.flop_count(d_model, h, n)
    return stages["scores"] + stages["weighted_sum"]


@functools.lru_cache(maxsize=256)
def _traced_cost(d_model, h, n):
    """The same count read off the shapes of a real forward pass (an independent recomputation)."""
    trace = mha.MultiHeadAttention.from_seed(d_model, h, seed=3).trace(np.ones((n, d_model)))
    d_k = trace.Q.shape[-1]
    n_k = trace.V.shape[-2]
    # every score is a length-d_k dot product; every head entry is a length-n_k weighted sum
    return trace.scores.size * d_k + trace.heads.size * n_k


TWO_FLOPS = ("You counted 2 FLOPs per multiply-add (a multiplication and an addition): a legitimate convention, "
             "but this problem counts multiply-adds, as its prompt says, so your count is twice the one asked for.")


def _cost_misconception(value, d_model, h, n):
    """The misconception behind a known wrong cost, or None."""
    expected = attention_cost_expected(d_model, h, n)
    d_k = d_model // h
    known = [
        (h * expected, named("heads-cost-more", 'That is the misconception "h heads cost h times more": your count gives every head the '
                       "full width d_model. Each head works in width d_k = d_model/h.")),
        (expected / h, named("one-head-for-all", "That is the cost of one head only: there are h heads, each of width d_k = d_model/h.")),
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


def warm():
    """Fill the caches of the traced references (the grading zygote calls this once)."""
    for case in [(D_MODEL, H, N), (D_MODEL, 1, N), *HIDDEN_COST_CASES]:
        _traced_cost(*case)
    _block_shapes(D_MODEL, H, N)


def q3_1_attention_cost(fn, hidden=False):
    from .own_work import call as call_own  # a count that calls mha_core's flop_count earns nothing

    cases = [(D_MODEL, H, N)]
    if hidden:
        cases += HIDDEN_COST_CASES
    values = {}
    for d_model, h, n in cases:
        value = as_number(f"attention_cost({d_model}, {h}, {n})", call_own("attention_cost", fn, d_model, h, n))
        values[d_model, h, n] = value
        expected = _traced_cost(d_model, h, n) if hidden else attention_cost_expected(d_model, h, n)
        if close(value, expected, 1e-9 * expected):
            continue
        if close(value, 2 * expected, 2e-9 * expected):  # a legitimate convention, but not this problem's
            raise WrongAnswer(f"`attention_cost({d_model}, {h}, {n})`: {TWO_FLOPS}", misconception="two-flops")
        if hidden and (d_model, h, n) == (D_MODEL, H, N):
            raise WrongAnswer(
                f"`attention_cost({d_model}, {h}, {n})` is not the number of multiply-adds of the scores and the "
                "weighted sums of all the heads: the visible test's message says more."
            )
        if hidden:
            raise WrongAnswer(
                f"attention_cost gives the right count for d_model={D_MODEL}, h={H}, n={N} but not for "
                f"d_model={d_model}, h={h}, n={n}: write the count in terms of d_model, h and n, not numbers "
                "from the example.", misconception="example-numbers-only"
            )
        message = _cost_misconception(value, d_model, h, n)
        doubled = _cost_misconception(value / 2, d_model, h, n)
        if message is None and doubled is not None:
            message = named(tag_of(doubled) or "two-flops", f"{TWO_FLOPS} And, counting multiply-adds: {doubled}")
        raise WrongAnswer(message or (
            f"attention_cost({d_model}, {h}, {n}) returned {value:,.0f}, which is not the count. Per head: the "
            "scores are an n×n matrix of dot products of length d_k, and the weighted sum is an n×n matrix "
            "times an n×d_k matrix. Then add up the h heads."
        ))
    if hidden:
        by_h = {h: v for (d, h, n), v in values.items() if (d, n) == (512, 10)}
        if len(set(by_h.values())) > 1:
            raise WrongAnswer("attention_cost changes with h at fixed d_model and n: look again at how d_k depends on h.")
    correct("Per head 2·n²·d_k; over h heads 2·n²·d_model: no h left." if not hidden else "Hidden checks passed too.")


def _ratio_numbers():
    """This student's (d_model, n, h, h_ref) for 3.1's ratio (the sheet's outside a course)."""
    entry = current.numbers(LEVEL3, Q3_1_COST_RATIO)
    return entry["d_model"], entry["n"], entry["h"], entry["h_ref"]


def cost_ratio_expected():
    return Q3_1_COST_RATIO.answer(current.numbers(LEVEL3, Q3_1_COST_RATIO))


def q3_1_cost_ratio(value, hidden=False):
    value = as_number("cost_ratio", value)
    d_model, n, h, h_ref = _ratio_numbers()
    d_k, d_k_ref = d_model // h, d_model // h_ref
    if hidden:
        expected = _traced_cost(d_model, h, n) / _traced_cost(d_model, h_ref, n)
    else:
        expected = cost_ratio_expected()
    if close(value, expected, Q3_1_COST_RATIO.tolerance):
        correct(f"Ratio 1: as many multiply-adds with {h} heads as with {h_ref}." if not hidden
                else "Hidden checks passed too.")
        return
    heads = "one head" if h_ref == 1 else f"{h_ref} heads"
    width = f"the full width d_model = {d_model}" if h_ref == 1 else f"the width of the {heads}, d_model/h_ref = {d_k_ref}"
    known = {
        "heads-cost-more": named(
            "heads-cost-more", f'That is the misconception "h heads cost h times more": it would hold if each of the {h} '
            f"heads worked at {width}. Each works at d_k = {d_model}/{h} = {d_k}."),
        "one-head-for-all": named(
            "one-head-for-all", f"That ratio counts only one of the {h} heads: each head is {h} times cheaper than a "
            f"full-width head, but all {h} of them run." if h_ref == 1 else
            f"That ratio counts only one head of each block: each of the {h} heads is {h // h_ref} times cheaper than "
            f"one of the {h_ref} heads, but all {h} of them run."),
    }
    for key, wrong in Q3_1_COST_RATIO.mistakes(current.numbers(LEVEL3, Q3_1_COST_RATIO)).items():
        if close(value, wrong, Q3_1_COST_RATIO.tolerance):
            raise WrongAnswer(known[key], misconception=tag_of(known[key]))
    raise WrongAnswer(
        f"Divide the multi-head cost ({h} heads of width d_k = {d_k}) by the cost with {heads} (of width {d_k_ref}), "
        f"both for n = {n} tokens, counting the scores and the weighted sum."
    )


# --- Problem 3.2: the broken forward pass ---------------------------------------

STEP_OPTIONS = ("A", "B", "C", "D")


def q3_2_wrong_step(value, hidden=False):
    choice = as_choice("wrong_step", value, STEP_OPTIONS)
    if choice in ("A", "B"):
        raise WrongAnswer(
            f"Step {choice} is right: each head is d_k = d_model/h = 512/8 = 64 wide, not d_model = 512, so each "
            "W_i^V is 512×64 and each head is 10×64. Look at what happens to the 8 heads afterwards.",
            misconception="head-full-width"
        )
    if choice == "D":
        raise WrongAnswer(
            'That is the misconception "the wrong shape is the error": W^O of shape 64×512 is a symptom, not the '
            "cause: it only fits because of an earlier step. Which step made the heads 64 wide in total?",
            misconception="symptom-for-cause"
        )
    correct("Summing the heads is the error; the 64×512 W^O only follows from it." if not hidden
            else "Hidden checks passed too.")


def _shape_of(rows, name):
    return next(r.shape for r in rows if r.name == name)


def _block_numbers():
    """This student's (d_model, h, n) for 3.2's shapes (the sheet's outside a course)."""
    entry = current.numbers(LEVEL3, Q3_2_CONCAT_SHAPE)
    return entry, (entry["d_model"], entry["h"], entry["n"])


@functools.lru_cache(maxsize=4)
def _block_shapes(d_model, h, n):
    """The shapes of the concatenated heads and of W^O in a real forward pass (the block itself is not kept)."""
    block = mha.MultiHeadAttention.from_seed(d_model, h)
    return block.trace(np.ones((n, d_model))).concat.shape, block.W_O.shape


def concat_shape_expected():
    return _shape_of(mha.shape_table(*_block_numbers()[1]), "Concat(head_1..head_h)")


_SHEET_NUMBERS = named("example-numbers-only", "That is the answer for the sheet's numbers, not for yours: "
                       "use the numbers in the cell under the problem.")


def _named_shape(pool, entry, shape, known):
    """The message of ``known`` (by the pool's misconception key) whose wrong shape ``shape`` is, or None."""
    for key, wrong in pool.mistakes(entry).items():
        if shape == tuple(wrong):
            return _SHEET_NUMBERS if key == "example-numbers-only" else known[key]
    return None


def q3_2_concat_shape(value, hidden=False):
    shape = as_shape("concat_shape", value)
    entry, (d_model, h, n) = _block_numbers()
    d_k = d_model // h
    expected = _block_shapes(d_model, h, n)[0] if hidden else concat_shape_expected()
    if shape == expected:
        correct(f"{h} heads of width {d_k} side by side: {n}×{d_model}." if not hidden else "Hidden checks passed too.")
        return
    known = {
        "heads-summed/summed": named(
            "heads-summed", f"{(n, d_k)} is the shape after summing the heads: summing collapses the {h} heads into one "
            f"{d_k}-wide block, so their distinct views are averaged away. Concatenation puts them side by side."),
        "heads-summed/stacked": named(
            "heads-summed", f"{(h, n, d_k)} is the {h} heads stacked, before concatenation. Concatenating puts them side "
            "by side along the width axis: one row per token."),
        "-/one-column-per-head": f"Concatenation joins the heads' widths: each head contributes d_k = {d_k} columns, not 1.",
        "-/transposed": "Rows are tokens and columns are features: write the shape as (tokens, width).",
    }
    message = _named_shape(Q3_2_CONCAT_SHAPE, entry, shape, known)
    if message:
        raise WrongAnswer(message, misconception=tag_of(message))
    if len(shape) != 2:
        raise WrongAnswer(f"`concat_shape` should have 2 numbers (rows, columns), like (10, 64); got {shape}.")
    raise WrongAnswer("There is one row per token, and the heads' widths add up side by side.")


def wo_shape_expected():
    return _shape_of(mha.shape_table(*_block_numbers()[1]), "W^O")


def q3_2_wo_shape(value, hidden=False):
    shape = as_shape("W_O_shape", value)
    entry, (d_model, h, n) = _block_numbers()
    d_k = d_model // h
    expected = _block_shapes(d_model, h, n)[1] if hidden else wo_shape_expected()
    if shape == expected:
        correct(f"W^O maps the {d_model}-wide concatenation back to d_model = {d_model}." if not hidden
                else "Hidden checks passed too.")
        return
    known = {
        "heads-summed": named(
            "heads-summed", f"A {d_k}×{d_model} W^O is sized for summed heads, the broken pass's mistake. W^O multiplies "
            f"the concatenation of all {h} heads: its number of rows is the concatenation's width."),
        "-/maps-to-d-k": "W^O maps back to d_model, not to d_k: the block's output is as wide as its input.",
        "matrix-confused": named(
            "matrix-confused", f"{(n, d_model)} is the shape of the block's output, not of W^O: W^O does not depend on n."),
    }
    message = _named_shape(Q3_2_WO_SHAPE, entry, shape, known)
    if message:
        raise WrongAnswer(message, misconception=tag_of(message))
    if len(shape) != 2:
        raise WrongAnswer(f"`W_O_shape` should have 2 numbers (rows, columns), like (64, 512); got {shape}.")
    raise WrongAnswer("W^O multiplies the concatenated heads from the right and gives back width d_model.")


# --- Problem 3.3: heads that share their projections --------------------------

SHARED_OPTIONS = ("A", "B", "C", "D")


def q3_3_shared_outcome(value, hidden=False):
    choice = as_choice("shared_outcome", value, SHARED_OPTIONS)
    if choice == "B":
        raise WrongAnswer(
            'That is the misconception "shared projections still give different heads". Both heads see the same '
            "tokens and apply the same W^Q, W^K, W^V: what could make their Q, K, V differ?",
            misconception="shared-projections-differ"
        )
    if choice == "C":
        raise WrongAnswer(
            'That is the misconception "they average out": there is nothing to average. With the same matrices both '
            "heads compute exactly the same numbers, and concatenation keeps both copies.",
            misconception="shared-projections-differ"
        )
    if choice == "D":
        raise WrongAnswer(
            'That is the misconception "sharing breaks the shapes". The shapes still fit: shared matrices have the '
            "same d_model×d_k shape as separate ones. The problem is what the heads compute, not their shapes.",
            misconception="sharing-breaks-shapes"
        )
    correct("Same Q, K, V, so byte-for-byte identical heads: 2 heads paid for, 1 view." if not hidden
            else "Hidden checks passed too.")


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


def q3_3_count_distinct_heads(fn, hidden=False):
    for weights, expected in _distinct_cases(hidden):
        h = weights.shape[0]
        given = weights.copy()  # the student's function gets a copy: it may change it freely
        value = as_int("count_distinct_heads(weights)", call("count_distinct_heads", fn, given))
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
                "only if no earlier head equals it.", misconception="shared-projections-differ"
            )
        if value == len(np.unique(weights)):
            raise WrongAnswer(
                "Your function counts distinct numbers, not distinct heads: compare whole heads (each weights[i] "
                "is an n×n matrix), e.g. with np.unique(weights, axis=0) or np.array_equal.",
                misconception="shared-projections-differ"
            )
        if value == h - expected:
            raise WrongAnswer("Your function counts the duplicated heads; count the distinct ones instead.")
        raise WrongAnswer(
            f"count_distinct_heads returned {value} for {kind} with h={h} heads; compare each head "
            "weights[i] with the others and count the different ones."
        )
    correct("The shared-projection block has 1 distinct head out of 2." if not hidden else "Hidden checks passed too.")
