"""Claims the notebooks' prose makes about attention, computed here independently of mha_core.

Each test names the problem whose text states the claim; if the claim stops being true (other
weights, another seed, a changed explorer), the prose must change with it.
"""

import math

import numpy as np

import mha_core as mha
from mha_core.explore.shapes import shape_state


def _softmax_rows(scores):
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _random_head(rng, n, d_k, d_model=16):
    x = rng.standard_normal((n, d_model))
    q, k = x @ rng.standard_normal((d_model, d_k)), x @ rng.standard_normal((d_model, d_k))
    return q @ k.T / np.sqrt(d_k)  # (n, n) scaled scores


def test_3_4_the_rank_bound_is_on_the_scores_not_the_weights():
    """3.4: at d_k = 1, n = 12 the scores have rank 1, while most trials give weights of rank 11 or 12."""
    rng = np.random.default_rng(0)
    trials = [_random_head(rng, 12, 1) for _ in range(200)]
    assert all(np.linalg.matrix_rank(s) == 1 for s in trials)
    ranks = np.array([np.linalg.matrix_rank(_softmax_rows(s)) for s in trials])
    assert np.mean(ranks >= 11) > 0.8, np.bincount(ranks)


def test_3_4_at_width_one_every_query_orders_the_keys_one_way_or_the_reverse():
    """3.4 and 5.1: with d_k = 1 (S = a b^T) each row ranks the keys as b does, or in reverse."""
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal(9), rng.standard_normal(9)
    order = np.argsort(b)
    for row, a_i in zip(np.outer(a, b), a):
        assert np.array_equal(np.argsort(row), order if a_i > 0 else order[::-1])


def _preferred_keys(weights):
    """For each head, how many different keys its queries put their largest weight on."""
    return [len(set(row)) for row in np.asarray(weights).argmax(axis=-1).tolist()]


def test_5_1_two_preferred_keys_without_a_mask_more_with_it():
    """5.1: the explorer at d_model = h = 16, n = 8: at most 2 keys per head unmasked, more than 2 causal."""
    unmasked = _preferred_keys(shape_state(16, 16, 8)["weights"])
    causal = _preferred_keys(shape_state(16, 16, 8, causal=True)["weights"])
    assert max(unmasked) == 2
    assert max(causal) > 2


def _width_one_causal_weights(keys, queries):
    """A width-1 head's causal weights, each row's softmax of q_i k_j / sqrt(1) over j <= i, in plain Python."""
    rows = []
    for i, q in enumerate(queries):
        exps = [math.exp(q * k) for k in keys[:i + 1]]
        rows.append([e / sum(exps) for e in exps] + [0.0] * (len(keys) - i - 1))
    return rows


def test_5_1_under_a_causal_mask_a_width_one_head_finds_the_previous_token():
    """Solution 5.1: keys 0, 1, -1, 2, -2, ... by position and queries +20, -20, ... put 1.000 (rounded) on token
    i - 1 in every row i >= 1 at n = 8; without the mask the same head prefers at most 2 keys."""
    n = 8
    keys = [0.0] + [(-1) ** (j + 1) * ((j + 1) // 2) for j in range(1, n)]
    assert keys[:5] == [0, 1, -1, 2, -2]
    queries = [20.0 * (-1) ** i for i in range(n)]
    weights = _width_one_causal_weights(keys, queries)
    assert all(round(weights[i][i - 1], 3) == 1.0 for i in range(1, n))
    scores = np.outer(queries, keys)  # no mask: every row ranks the same keys one way or the reverse
    assert len(set(scores.argmax(axis=1).tolist())) <= 2


def test_5_1_causal_width_one_heads_prefer_anything_from_one_key_to_one_per_row():
    """Solution 5.1: with random numbers a causal width-1 head can prefer a single key (every query's number
    negative, keys rising) or a different key in every row (the construction above), and anything between."""
    rng = np.random.default_rng(5)
    counts = set()
    for _ in range(400):
        k, q = rng.standard_normal(10), rng.standard_normal(10)
        scores = np.where(np.tri(10, dtype=bool), np.outer(q, k), -np.inf)
        counts.add(len(set(scores.argmax(axis=1).tolist())))
    assert min(counts) <= 2 and max(counts) >= 7, sorted(counts)
    rising = np.where(np.tri(10, dtype=bool), np.outer(-np.ones(10), np.arange(10.0)), -np.inf)
    assert len(set(rising.argmax(axis=1).tolist())) == 1


def test_5_1_the_counting_cell_agrees():
    """5.1's counting cell (tokens scaled by 4, no mask): every width-1 head prefers at most 2 keys."""
    x = 4 * mha.plots.example_embeddings(8, 16)
    weights = mha.MultiHeadAttention.from_seed(d_model=16, h=16).trace(x).weights
    assert max(_preferred_keys(weights)) <= 2
    wider = mha.MultiHeadAttention.from_seed(d_model=16, h=4).trace(x).weights
    assert max(_preferred_keys(wider)) > 2


def test_3_2_summing_is_concatenating_with_tied_blocks_of_w_o():
    """3.2 and card 2: sum_i head_i W = concat(heads) [W; ...; W], whose rank is at most d_v."""
    rng = np.random.default_rng(2)
    h, n, d_v, d_model = 4, 10, 3, 12
    heads = rng.standard_normal((h, n, d_v))
    W = rng.standard_normal((d_v, d_model))
    summed = heads.sum(axis=0) @ W
    tied = np.concatenate(list(heads), axis=1) @ np.vstack([W] * h)
    assert np.allclose(summed, tied)
    assert np.linalg.matrix_rank(summed) <= d_v
    full = np.concatenate(list(heads), axis=1) @ rng.standard_normal((h * d_v, d_model))
    assert np.linalg.matrix_rank(full) > d_v


def test_3_2_at_n_10_the_outputs_have_equal_rank_the_maps_do_not():
    """3.2 and card 2, at the problem's sizes (n = 10, h = 8, d_v = 64, d_model = 512): summed and concatenated
    outputs both have rank 10; the map [W; ...; W] has rank at most 64, a full W^O rank 512; at n = 100 the
    summed output is capped at 64."""
    rng = np.random.default_rng(32)
    h, d_v, d_model = 8, 64, 512
    W, W_O = rng.standard_normal((d_v, d_model)), rng.standard_normal((h * d_v, d_model))
    tied = np.vstack([W] * h)
    assert np.linalg.matrix_rank(tied) == d_v and np.linalg.matrix_rank(W_O) == d_model
    for n, summed_rank in ((10, 10), (100, d_v)):
        heads = rng.standard_normal((h, n, d_v))
        concat = np.concatenate(list(heads), axis=1)
        assert np.linalg.matrix_rank(concat @ tied) == summed_rank
        assert np.linalg.matrix_rank(concat @ W_O) == n
