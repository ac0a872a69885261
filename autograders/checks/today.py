"""Checks for the attention of today's models, beyond the sheet: Problems 4.6 (masks in a batch) and 4.7
(attention in blocks), two functions the student writes with numpy.

Each check runs the student's function on cases of every kind the hidden test tries (the hidden cases
add sizes and seeds, never a kind), compares with a reference computed here, and names a wrong answer by
computing the known mistakes (:data:`MASK_MISTAKES`, :data:`BLOCK_MISTAKES`) and comparing. The
output of 4.7 cannot tell a loop over blocks from all the scores at once (they agree to rounding): the
statement asks for the loop, and its mistakes are the loop's. The test cells call these through
:mod:`autograders.checks.beyond`.
"""

import tracemalloc

import numpy as np

from ..problems import beyond as problems, shared
from . import own_work
from .feedback import WrongAnswer, correct, name_mistake, named, tag_of, tries

# --- Problem 4.6: a key-padding mask and the causal mask, for a batch of sequences ------------------------

# (batch, h, n_q, n_k, valid_lens, causal, scale, seed): scores (batch, h, n_q, n_k) of normal entries times scale
MASK_CASES = [
    (2, 3, 4, 4, (2, 3), False, 3.0, 0),  # padding alone
    (2, 3, 4, 4, (3, 2), True, 3.0, 1),  # padding and causal
    (3, 2, 5, 5, (5, 0, 3), True, 3.0, 2),  # an empty sequence: its rows see no key at all
    (2, 3, 3, 5, (5, 2), False, 3.0, 3),  # n_q != n_k (queries of one sequence, keys of another)
    (2, 3, 4, 4, (4, 3), True, 400.0, 4),  # large scores: e^s overflows unless each row's maximum is subtracted
    (2, 3, 3, 5, (5, 4), True, 3.0, 10),  # n_q != n_k with the causal mask: query i sees keys j <= i (top-left)
]
MASK_HIDDEN_CASES = [
    (1, 1, 6, 6, (4,), True, 3.0, 5), (4, 2, 5, 5, (5, 1, 0, 3), False, 3.0, 6), (3, 4, 2, 6, (6, 1, 4), True, 3.0, 7),
    (2, 3, 7, 7, (0, 7), True, 500.0, 8), (5, 3, 3, 3, (1, 2, 3, 0, 2), True, 3.0, 9),
]
MASK_TOL = 1e-9


def mask_kind(batch, h, n_q, n_k, valid_lens, causal, scale, seed=None):
    """The kind of input a case of 4.6 tries (its values aside)."""
    return ("causal" if causal else "padding only", *(word for word, holds in (
        ("a row with no key", 0 in valid_lens), ("n_q != n_k", n_q != n_k), ("large scores", scale > 100)) if holds))


def mask_inputs(batch, h, n_q, n_k, valid_lens, causal, scale, seed):
    rng = np.random.default_rng([46, seed])
    return scale * rng.standard_normal((batch, h, n_q, n_k)), np.array(valid_lens)


def _allowed(valid_lens, n_q, n_k, causal, mistake=None):
    """(batch, 1, n_q, n_k): True where query i may attend to key j, or where ``mistake`` lets it."""
    lens = np.asarray(valid_lens)
    if mistake == "pad_first":
        lens = np.full_like(lens, lens[0])
    keys, queries = np.arange(n_k), np.arange(n_q)[:, None]
    pad = (keys <= lens[:, None, None]) if mistake == "pad_off_by_one" else (keys < lens[:, None, None])
    if mistake == "pad_queries":  # whole rows of the queries past the length, every key
        pad = np.broadcast_to(queries < lens[:, None, None], (len(lens), n_q, n_k))
    if mistake == "no_padding":
        pad = np.ones((len(lens), n_q, n_k), bool)
    pad = np.broadcast_to(pad, (len(lens), n_q, n_k))
    tri = {"triu": keys >= queries, "strict": keys < queries,
           "bottom_right": keys <= queries + (n_k - n_q)}.get(mistake, keys <= queries)
    use_tri = (causal and mistake != "no_causal") or (not causal and mistake == "always_causal")
    if not use_tri:
        return pad[:, None]
    return (pad | tri)[:, None] if mistake == "or" else (pad & tri)[:, None]


def masked_weights(scores, valid_lens, causal, mistake=None):
    """The weights of 4.6 (rows with no key: zeros), or with one of :data:`MASK_MISTAKES` made."""
    n_q, n_k = scores.shape[-2:]
    allowed = _allowed(valid_lens, n_q, n_k, causal, mistake)
    if mistake == "float32":  # the right steps in single precision
        return masked_weights(scores.astype(np.float32), valid_lens, causal)
    with np.errstate(all="ignore"):
        if mistake == "after_softmax":  # softmax of every score, then the masked weights zeroed (not renormalised)
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True) * allowed
        if mistake == "after_softmax_renormalised":  # then renormalised (a row whose sum is 0: weights 0)
            e = np.exp(scores - scores.max(axis=-1, keepdims=True)) * allowed
            total = e.sum(axis=-1, keepdims=True)
            return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
        fill = {"zero_fill": 0.0, "uniform_row": -1e9}.get(mistake, -np.inf)
        s = np.where(allowed, scores, fill)
        peak = s.max(axis=-1, keepdims=True)
        e = np.exp(s - np.where(np.isfinite(peak), peak, 0.0))
        total = e.sum(axis=-1, keepdims=True)
        return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


_AFTER = (problems.MASK_AFTER_SOFTMAX, "The mask is applied after the softmax: zeroing the weights of masked keys without "
          "renormalising leaves rows that add up to less than 1, and the masked keys still shaped the others. Mask "
          "the scores (set them to -inf) before the softmax.")
MASK_MISTAKES = {
    "after_softmax": named(*_AFTER),
    "after_softmax_renormalised": named(problems.MASK_AFTER_SOFTMAX_RENORMALISED, "The mask is applied after the softmax, "
                                        "then renormalised: that gives the right weights only while the allowed keys' "
                                        "e^(s - max) survive, and the maximum subtracted is over every key, the masked "
                                        "ones too. With scores this large, a masked score far above the allowed ones "
                                        "makes their e^(s - max) underflow to 0, and the row comes out 0 (or 0/0). Mask "
                                        "the scores (set them to -inf) before the softmax: the maximum is then the "
                                        "largest allowed score."),
    "zero_fill": named(problems.MASK_FILL_ZERO, "Masked scores are set to 0: e^0 = 1 still gives those keys weight (a score "
                       "of 0 is an ordinary score). Set them to -inf, so that e^-inf = 0."),
    "triu": named(shared.MASK_WRONG_WAY, "The causal mask is the wrong triangle: query i may attend to keys j ≤ i (np.tri, "
                  "the lower triangle), not to the keys after it."),
    "strict": named(shared.CAUSAL_MASK_APPLIED, "The causal mask hides the diagonal: query i may attend to keys j ≤ i, "
                    "itself included."),
    "uniform_row": named(problems.FULLY_MASKED_UNIFORM, "A row whose keys are all masked comes out uniform, 1/n_k on every "
                         "key, padding included: a finite fill (-1e9, or d2l's -1e6) makes every masked score equal, "
                         "and softmax spreads the weight evenly. A query with no key to attend to gets weights 0."),
    "pad_queries": named(problems.PADDING_MASKS_QUERIES, "The padding mask hides the queries past each sequence's length "
                         "(whole rows) instead of its keys (columns): key j of sequence b is padding when "
                         "j >= valid_lens[b], and no query may attend to it."),
    "pad_off_by_one": named(problems.PADDING_OFF_BY_ONE, "One key too many: sequence b's real keys are 0 … valid_lens[b] - 1 "
                            "(key j is real when j < valid_lens[b], not j <= valid_lens[b])."),
    "pad_first": named(problems.PADDING_ONE_LENGTH, "Every sequence is masked with the first one's length: sequence b keeps "
                       "keys j < valid_lens[b], its own, so the mask has one row of keys per batch entry, "
                       "(batch, n_k), broadcast as (batch, 1, 1, n_k)."),
    "no_padding": named(problems.PADDING_IGNORED, "The padding mask is missing: sequence b's keys j >= valid_lens[b] are "
                        "padding and must get weight 0."),
    "no_causal": named(shared.CAUSAL_MASK_APPLIED, "causal=True is ignored: with it, query i may attend to keys j ≤ i only "
                       "(and only to real keys)."),
    "always_causal": named(shared.CAUSAL_MASK_APPLIED, "The causal mask is applied with causal=False too: mask only when "
                           "causal is True."),
    "bottom_right": named(shared.CAUSAL_MASK_APPLIED, "The causal mask is aligned bottom-right (the last query sees "
                          "the last key, as when decoding with a cache): here query i sees keys j ≤ i counted from "
                          "the first key, the top-left triangle np.tri(n_q, n_k), as PyTorch's is_causal does."),
    "float32": named(problems.FLOAT32, "The weights agree with the right ones only to about 1e-7, the precision of "
                     "float32 (single-precision) numbers; the test asks for 1e-9, which float64, numpy's default, "
                     "gives. Compute in float64: no astype(np.float32) or dtype=np.float32."),
    "or": named(problems.MASKS_COMBINED_WITH_OR, "The two masks are combined with \"or\": a key is then allowed when either "
                "mask allows it. A key must be allowed by both, padding and causal: combine them with &."),
}
_NAN_ROW = named(problems.FULLY_MASKED_NAN, "A row whose keys are all masked (an empty sequence, valid length 0) gives NaN: "
                 "it has no weight left to normalise, every one is 0 (masked), and so is their sum: 0/0 = NaN (with "
                 "masked scores of -inf, shifting the row by its maximum gives -inf - (-inf) = NaN already). Give such "
                 "a row weights 0: for instance divide only where the sum is positive (np.divide(e, total, "
                 "out=np.zeros_like(e), where=total > 0)), and shift a row of -inf by 0, not by its maximum.")


_MUTATES = named(problems.MUTATES_INPUT, "`masked_softmax` writes into the `scores` it is given (-inf in the masked "
                 "places, or the softmax in place): the caller's scores are changed behind its back, and the next head "
                 "or layer that reads them gets the masked ones. Work on a new array: np.where(allowed, scores, -np.inf) "
                 "makes one.")


def _mutated(fn, given, scores, lens):
    """The message when ``fn`` wrote into the arrays it was ``given`` (local: compared with the originals;
    in the re-check, where the call ran in the student's process, read from its cells), else None."""
    if own_work.is_remote(fn):
        sources = own_work.remote_sources(fn)
        return _MUTATES if any(own_work.mutates_argument_in_source(sources, "masked_softmax", i) for i in (0, 1)) \
            else None
    same = np.array_equal(given[0], scores, equal_nan=True) and np.array_equal(given[1], lens)
    return None if same else _MUTATES


def _no_key_rows(valid_lens, n_q, n_k, causal):
    return ~_allowed(valid_lens, n_q, n_k, causal).any(axis=-1)  # (batch, 1, n_q)


def _mask_output(value, shape, where, no_key, large):
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise WrongAnswer(f"{where}, `masked_softmax` should return an array of numbers, got {type(value).__name__}.",
                          misconception=shared.WRONG_KIND) from None
    if array.shape != shape:
        raise WrongAnswer(f"{where}, `masked_softmax` should return weights of the shape of the scores, {shape} = "
                          f"(batch, h, n_q, n_k), got {array.shape}.", misconception=shared.WRONG_KIND)
    bad = ~np.isfinite(array)
    if bad.any():
        rows = bad.any(axis=-1)
        if no_key.any() and not (rows & ~np.broadcast_to(no_key, rows.shape)).any():
            raise WrongAnswer(f"{where}: {_NAN_ROW}", misconception=tag_of(_NAN_ROW))
        raise WrongAnswer(f"{where}, the weights have NaN or infinity in them" + (
            ": e^s overflows for scores this large; subtract each row's largest allowed score first." if large else
            ": look for a division by zero."), misconception=shared.SOFTMAX_OVERFLOWS if large else None)
    return array


@tries("other batches, lengths and shapes")
def q4_6_masked_softmax(fn, hidden=False):
    """Problem 4.6: masked_softmax(scores, valid_lens, causal) against the reference, every kind of case."""
    for case in MASK_CASES + (MASK_HIDDEN_CASES if hidden else []):
        batch, h, n_q, n_k, valid_lens, causal, scale, seed = case
        scores, lens = mask_inputs(*case)
        where = f"For scores of shape {scores.shape}, valid_lens={list(valid_lens)}, causal={causal}"
        shapes = (f"For scores of shape {scores.shape} = (batch, h, n_q, n_k) the masks' shapes should be: padding "
                  f"(batch, n_k) = {(batch, n_k)}, given axes of length 1 for the heads and the queries, {(batch, 1, 1, n_k)}; "
                  f"causal (n_q, n_k) = {(n_q, n_k)}; both together {(batch, 1, n_q, n_k)}, which broadcasts over the heads.")
        given = (scores.copy(), lens.copy())
        value = own_work.call("masked_softmax", fn, *given, causal, shapes=shapes)
        mutated = _mutated(fn, given, scores, lens)
        if mutated:
            raise WrongAnswer(f"{where}: {mutated}", misconception=tag_of(mutated))
        value = _mask_output(value, scores.shape, where, _no_key_rows(lens, n_q, n_k, causal), scale > 100)
        expected = masked_weights(scores, lens, causal)
        if np.allclose(value, expected, rtol=0, atol=MASK_TOL):
            continue
        name_mistake(where, MASK_MISTAKES, lambda mistake: masked_weights(scores, lens, causal, mistake), lambda wrong: (
            not np.allclose(wrong, expected, rtol=0, atol=MASK_TOL) and np.allclose(value, wrong, rtol=0, atol=1e-6)))
        raise WrongAnswer(f"{where}, `masked_softmax` does not give the masked weights: each query's weights are the "
                          "softmax of the scores of the keys it may see (j < valid_lens[b], and j ≤ i with causal=True), "
                          "0 on every other key; a query that may see none gets 0 everywhere.")
    correct("Padding and causal masks combined, broadcast over the heads, and no NaN where a row sees nothing."
            if not hidden else "Hidden checks passed too: other batches, lengths and shapes.")


# --- Problem 4.7: softmax-weighted values, one block of keys at a time --------------------------------------


# (n_k, d_k, d_v, block_size, kind, seed). kind "rising": the scores' maximum grows block after block, so what was
# summed must be rescaled again and again; "large": scores in the hundreds (e^s overflows without the maximum);
# "very negative": every score near -1000 (e^s underflows to 0 unless measured against the largest one); "-inf":
# some scores are -inf (keys that get no weight) and the whole first block is.
BLOCK_CASES = [
    (1000, 8, 4, 64, "rising", 0),  # long, 1000 keys, the last block partial (1000 = 15 · 64 + 40)
    (10, 4, 3, 3, "rising", 1),
    (300, 8, 5, 32, "large", 2),
    (5, 4, 2, 8, "rising", 3),  # one block, larger than the keys
    (37, 4, 3, 1, "large", 4),  # blocks of one key
    (50, 4, 3, 8, "very negative", 10),
    (40, 4, 3, 8, "-inf", 11),
]
BLOCK_HIDDEN_CASES = [
    (4096, 16, 8, 128, "large", 5), (2000, 8, 8, 100, "rising", 6), (63, 4, 4, 7, "rising", 7), (1, 4, 2, 4, "rising", 8),
    (500, 8, 3, 1, "large", 9), (700, 8, 4, 32, "very negative", 12), (129, 8, 2, 16, "-inf", 13),
]
BLOCK_RTOL = 1e-9


def block_kind(n_k, d_k, d_v, block_size, kind, seed=None):
    return (kind, *(word for word, holds in (("last block partial", n_k % block_size != 0 and n_k > block_size),
                                             ("one block", block_size >= n_k), ("blocks of one", block_size == 1),
                                             ("long", n_k >= 1000)) if holds))


NEGATIVE_SCORE = -1000.0  # the "very negative" kind's scores lie around it: far below log of the smallest float


def block_inputs(n_k, d_k, d_v, block_size, kind, seed):
    """q (d_k,), K (n_k, d_k), V (n_k, d_v)."""
    rng = np.random.default_rng([47, seed])
    q = rng.standard_normal(d_k)
    K = rng.standard_normal((n_k, d_k))
    if kind in ("rising", "-inf"):  # the keys line up with q more and more: block after block, a larger maximum
        K += np.linspace(0, 6, n_k)[:, None] * q / np.linalg.norm(q)
    elif kind == "large":
        K *= 250.0
    else:  # every score K_j q / √d_k = (20 N_j q) / √d_k + NEGATIVE_SCORE, some 20 from -1000
        K = 20.0 * K + NEGATIVE_SCORE * np.sqrt(d_k) * q / (q @ q)
    if kind == "-inf":  # the first block and every seventh key: a key whose score is -inf (q has no zero entry)
        q = np.where(q == 0, 1.0, q)
        hidden_keys = np.r_[np.arange(min(block_size, n_k - 1)), np.arange(block_size, n_k, 7)]
        K[hidden_keys] = -np.inf * np.sign(q)
    return q, K, rng.standard_normal((n_k, d_v))


def full_attention(q, K, V):
    """softmax(K q / √d_k) @ V, all the scores at once (the reference)."""
    s = K @ q / np.sqrt(len(q))
    e = np.exp(s - s.max())
    return e @ V / e.sum()


def blocked(q, K, V, block_size, mistake=None):
    """The output, one block at a time, with one of :data:`BLOCK_MISTAKES` made."""
    scale = 1.0 if mistake == "no_scale" else np.sqrt(len(q))
    m, total, acc = 0.0 if mistake == "max_from_zero" else -np.inf, 0.0, np.zeros(V.shape[-1])
    stop = len(K) - len(K) % block_size if mistake == "last_block_dropped" and len(K) > block_size else len(K)
    with np.errstate(all="ignore"):
        for start in range(0, stop, block_size):
            s = K[start:start + block_size] @ q / scale
            m_new = s.max() if mistake == "block_max" else max(m, s.max())
            if m_new == -np.inf and mistake != "inf_minus_inf":  # nothing but -inf so far: no weight yet
                continue
            p = np.exp(s - m_new)
            c = np.exp(m - m_new) if mistake != "block_max" else 1.0
            total = total * (1.0 if mistake in ("no_rescale", "acc_only", "block_max") else c) + p.sum()
            acc = acc * (1.0 if mistake in ("no_rescale", "sum_only", "block_max") else c) + p @ V[start:start + block_size]
            m = m_new
    return acc / total


_RESCALE = ("When the maximum grows from m to m_new, what was summed so far was computed against the old m: multiply "
            "{what} by e^(m - m_new) before adding the new block's terms.")
BLOCK_MISTAKES = {
    "no_rescale": named(problems.ONLINE_SOFTMAX_NO_RESCALE, "The running sum and the running weighted sum are not rescaled "
                        "when the maximum changes, so earlier blocks keep too much weight. " +
                        _RESCALE.format(what="both the running sum and the accumulated weighted values")),
    "sum_only": named(problems.ONLINE_SOFTMAX_NO_RESCALE, "The running sum is rescaled when the maximum changes, but the "
                      "accumulated weighted values are not. " + _RESCALE.format(what="the accumulator too")),
    "acc_only": named(problems.ONLINE_SOFTMAX_NO_RESCALE, "The accumulated weighted values are rescaled when the maximum "
                      "changes, but the running sum is not. " + _RESCALE.format(what="the running sum too")),
    "block_max": named(problems.ONLINE_SOFTMAX_NO_RESCALE, "Each block is exponentiated against its own maximum and the "
                       "blocks are added as they are: their terms are on different scales. Keep one running maximum "
                       "m; " + _RESCALE.format(what="the running sum and the accumulator")),
    "last_block_dropped": named(problems.LAST_BLOCK_DROPPED, "The last, partial block is left out: when block_size does not "
                                "divide n_k, the keys after the last full block count too (range(0, n_k, block_size))."),
    "no_scale": named(shared.NO_SCALING, "No scaling: divide each block's scores q K_b^T by √d_k, as attention does."),
}
# Mistakes that give NaN, each on the kind of input that shows it (a finite wrong output is named above).
NAN_MISTAKES = {
    "max_from_zero": named(problems.ONLINE_MAX_FROM_ZERO, "The running maximum starts at 0: when every score is below "
                           "about -745, each e^(s - 0) underflows to 0, the sum stays 0, and 0/0 is NaN. Start it at "
                           "-inf (the maximum of no scores yet), so that the first block's largest score becomes m."),
    "inf_minus_inf": named(problems.ONLINE_MAX_STILL_INF, "A block whose scores are all -inf (keys that get no weight) "
                           "leaves the maximum at -inf, and s - m = -inf - (-inf) is NaN. While the maximum is still "
                           "-inf nothing has any weight yet: skip such a block (or shift it by 0), as a masked row "
                           "is handled in Problem 4.6."),
}


@tries("longer inputs and other block sizes")
def q4_7_attention_in_blocks(fn, hidden=False):
    """Problem 4.7: attention_in_blocks(q, K, V, block_size) against the full computation, every kind of case."""
    for case in BLOCK_CASES + (BLOCK_HIDDEN_CASES if hidden else []):
        n_k, d_k, d_v, block_size = case[:4]
        q, K, V = block_inputs(*case)
        where = f"For {n_k} keys (d_k = {d_k}, d_v = {d_v}) in blocks of {block_size}"
        value = own_work.call("attention_in_blocks", fn, q.copy(), K.copy(), V.copy(), block_size)
        expected = full_attention(q, K, V)
        try:
            array = np.asarray(value, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            array = None
        if array is None or array.shape != expected.shape:
            shown = np.shape(value) if array is not None else type(value).__name__
            raise WrongAnswer(f"{where}, `attention_in_blocks` should return one output vector of d_v = {d_v} numbers "
                              f"(the weighted sum of the values), got {shown}.", misconception=shared.WRONG_KIND)
        if not np.isfinite(array).all():
            name_mistake(where, NAN_MISTAKES, lambda mistake: blocked(q, K, V, block_size, mistake),
                         lambda wrong: not np.isfinite(wrong).all())
            raise WrongAnswer(f"{where}, the output has NaN or infinity in it. Either e^s overflowed (subtract the "
                              "running maximum before exponentiating) or the rescaling factor is upside down: it is "
                              "e^(m - m_new), at most 1, and 0 at the first block, where m = -inf.",
                              misconception=shared.SOFTMAX_OVERFLOWS)
        if np.allclose(array, expected, rtol=BLOCK_RTOL, atol=BLOCK_RTOL * np.abs(expected).max()):
            continue
        name_mistake(where, BLOCK_MISTAKES, lambda mistake: blocked(q, K, V, block_size, mistake), lambda wrong: (
            np.isfinite(wrong).all() and not np.allclose(wrong, expected) and np.allclose(array, wrong, rtol=1e-6)))
        raise WrongAnswer(f"{where}, `attention_in_blocks` does not give softmax(q K^T / √d_k) V: keep a running "
                          "maximum m, a running sum of e^(s - m) and a running sum of e^(s - m) v, rescale both sums "
                          "whenever m grows, and divide at the end.")
    if own_work.ignores_argument(fn, "attention_in_blocks", 3):
        raise WrongAnswer("`attention_in_blocks` gives the right output but never reads `block_size`: it computes all "
                          "n_k scores at once, which is what the problem is about avoiding. Read K and V block_size "
                          "keys at a time, with a running maximum, sum and weighted sum.",
                          misconception=problems.ALL_SCORES_AT_ONCE)
    held = held_at_once(fn)
    if held is not None and held >= HELD_LIMIT:
        raise WrongAnswer(f"`attention_in_blocks` gives the right output but holds the scores of all the keys at once: "
                          f"on {MEMORY_KEYS:,} keys in blocks of {MEMORY_BLOCK} it kept about {held:.1f} numbers per key "
                          "alive at the same time (the whole q K^T, or every block's scores kept and joined before one "
                          "softmax), not counting copies of K and V. Keep only the current block's scores: the running "
                          "maximum, sum and weighted sum carry what the earlier blocks contributed.",
                          misconception=problems.ALL_SCORES_AT_ONCE)
    correct("One block at a time, the same output as all the scores at once: FlashAttention's idea."
            if not hidden else "Hidden checks passed too: longer inputs, other block sizes.")


# --- 4.7: what the function holds at once ------------------------------------------------------------------

MEMORY_KEYS, MEMORY_BLOCK = 2 ** 15, 512  # 64 blocks: a loop over them holds a few thousand numbers, not 32,768
HELD_LIMIT = 0.5  # numbers per key held at once beyond copies of K and V: all the scores hold 1 (float64) or more


def _peak(fn, q, K, V, block_size):
    """The bytes ``fn(q, K, V, block_size)`` allocated beyond what was allocated before it ran, at its peak
    (tracemalloc, which numpy reports its arrays to)."""
    tracing = tracemalloc.is_tracing()
    if not tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        own_work.call("attention_in_blocks", fn, q, K, V, block_size)
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        if not tracing:
            tracemalloc.stop()


def held_at_once(fn, n_k=MEMORY_KEYS, block_size=MEMORY_BLOCK):
    """How many numbers (float64) per key ``fn`` holds at once beyond copies of its inputs, or None where that
    cannot be measured. Its peak is measured twice: with d_k = d_v = 4 (P) and with d_k = d_v = 8 (P_8).
    Copies of K and V double from one to the other, the scores (one per key) do not: 2 P - P_8 leaves what does
    not grow with the widths. (Every copy of K or V is 1 MiB or more, so numpy reuses its temporaries alike at
    both widths.) A loop over blocks holds about 0.1 per key here (a block's scores and the blocks' views), all
    the scores at once 1 to 3.

    In the re-check the function runs in the student's process, where nothing can be measured from here: its
    cells are read instead, and a product of the whole K (``K @ q``, ``np.dot(K, q)``) counts as 1."""
    if own_work.is_remote(fn):
        whole = own_work.whole_argument_in_product(own_work.remote_sources(fn), "attention_in_blocks", 1)
        return 1.0 if whole else None
    peaks = {}
    for width in (4, 8):
        q, K, V = block_inputs(n_k, width, width, block_size, "rising", 100 + width)
        peaks[width] = _peak(fn, q, K, V, block_size)
    return (2 * peaks[4] - peaks[8]) / (8 * n_k)
