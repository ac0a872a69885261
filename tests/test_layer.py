"""mha_core.layer: the block that shows its working, and the broken variants of Problems 3.2 and 3.3."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mha_core as mha

from . import reference


def rng_arrays(seed, *shapes, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


# --- MultiHeadAttention ----------------------------------------------------------------------------


def test_from_seed_is_reproducible_glorot_uniform():
    block = mha.MultiHeadAttention.from_seed(64, 8, seed=3)
    again = mha.MultiHeadAttention.from_seed(64, 8, seed=3)
    other = mha.MultiHeadAttention.from_seed(64, 8, seed=4)
    limit = np.sqrt(6 / (64 + 64))
    for name in ("W_Q", "W_K", "W_V", "W_O"):
        W = getattr(block, name)
        assert W.shape == (64, 64) and W.dtype == np.float64, name
        assert np.abs(W).max() <= limit and np.abs(W).max() > 0.9 * limit, name
        np.testing.assert_array_equal(W, getattr(again, name))
        assert not np.array_equal(W, getattr(other, name)), name
    assert not np.array_equal(block.W_Q, block.W_K), "the four matrices should differ"
    assert (block.h, block.d_k, block.d_model) == (8, 8, 64)
    assert repr(block) == "MultiHeadAttention(d_model=64, h=8, d_k=8)"
    assert mha.MultiHeadAttention.from_seed(64, 8, dtype=np.float32).W_O.dtype == np.float32


def test_from_heads_joins_the_per_head_matrices_as_column_blocks():
    h, d_model = 4, 8
    d_k = d_model // h
    per_head = [rng_arrays(10 + i, *[(d_model, d_k)] * h) for i in range(3)]  # W_Q_heads, W_K_heads, W_V_heads
    (W_O,) = rng_arrays(20, (d_model, d_model))
    block = mha.MultiHeadAttention.from_heads(*per_head, W_O)
    assert (block.h, block.d_k) == (h, d_k)
    for i in range(h):
        for got, heads in zip(block.head_weights(i), per_head):
            np.testing.assert_array_equal(got, heads[i])
    np.testing.assert_array_equal(block.W_Q[:, d_k : 2 * d_k], per_head[0][1])
    np.testing.assert_array_equal(block.W_O, W_O)
    stacked = mha.MultiHeadAttention.from_heads(*(np.stack(heads) for heads in per_head), W_O)  # (h, d_model, d_k)
    np.testing.assert_array_equal(stacked.W_V, block.W_V)


def test_call_is_multi_head_attention():
    block = mha.MultiHeadAttention.from_seed(16, 4, seed=1)
    x_q, x_kv = rng_arrays(1, (3, 16), (5, 16))
    mask = np.random.default_rng(1).random((3, 5)) < 0.5
    for a, b in zip(
        block(x_q, x_kv, mask=mask, causal=True),
        mha.multi_head_attention(x_q, x_kv, block.W_Q, block.W_K, block.W_V, block.W_O, 4, mask=mask, causal=True),
    ):
        np.testing.assert_array_equal(a, b)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 4]), st.integers(1, 4), st.integers(1, 4), st.booleans())
def test_trace_shows_each_step_of_the_sheet(seed, h, n_q, n_k, causal):
    d_model = 8
    d_k = d_model // h
    block = mha.MultiHeadAttention.from_seed(d_model, h, seed=seed % 1000)
    x_q, x_kv = rng_arrays(seed, (n_q, d_model), (n_k, d_model))
    t = block.trace(x_q, x_kv, causal=causal)
    for i in range(h):
        W_Q_i, W_K_i, W_V_i = block.head_weights(i)
        np.testing.assert_allclose(t.Q[i], x_q @ W_Q_i, err_msg="Q_i = x_q W_i^Q")
        np.testing.assert_allclose(t.K[i], x_kv @ W_K_i, err_msg="K_i = x_kv W_i^K")
        np.testing.assert_allclose(t.V[i], x_kv @ W_V_i, err_msg="V_i = x_kv W_i^V")
        np.testing.assert_allclose(t.scores[i], t.Q[i] @ t.K[i].T, err_msg="scores = Q_i K_i^T")
        np.testing.assert_allclose(t.scaled[i], t.scores[i] / np.sqrt(d_k), err_msg="scaled by sqrt(d_k)")
        head_i, weights_i = reference.attention(t.Q[i], t.K[i], t.V[i], causal=causal)
        np.testing.assert_allclose(t.weights[i], weights_i, rtol=1e-10, atol=1e-12, err_msg="weights")
        np.testing.assert_allclose(t.heads[i], head_i, rtol=1e-10, atol=1e-12, err_msg="head_i")
        np.testing.assert_array_equal(t.concat[:, i * d_k : (i + 1) * d_k], t.heads[i])
    output, weights = block(x_q, x_kv, causal=causal)
    np.testing.assert_allclose(t.output, output, rtol=1e-12)
    np.testing.assert_allclose(t.output, t.concat @ block.W_O, rtol=1e-12)
    np.testing.assert_array_equal(t.weights, weights)


def test_trace_shapes_for_problem_2_1_and_float32_kept():
    block = mha.MultiHeadAttention.from_seed(512, 8, dtype=np.float32)
    (x,) = rng_arrays(0, (10, 512), dtype=np.float32)
    t = block.trace(x)
    assert t.Q.shape == t.K.shape == t.V.shape == t.heads.shape == (8, 10, 64)
    assert t.scores.shape == t.scaled.shape == t.weights.shape == (8, 10, 10)
    assert t.concat.shape == t.output.shape == (10, 512)
    for name in ("Q", "K", "V", "scores", "scaled", "weights", "heads", "concat", "output"):
        assert getattr(t, name).dtype == np.float32, name


def test_trace_with_a_batch_and_a_mask():
    block = mha.MultiHeadAttention.from_seed(8, 2)
    (x,) = rng_arrays(1, (3, 4, 8))
    mask = np.eye(4, dtype=bool)
    t = block.trace(x, mask=mask)
    assert t.weights.shape == (3, 2, 4, 4)
    np.testing.assert_array_equal(t.weights, np.broadcast_to(np.eye(4), (3, 2, 4, 4)))  # only itself
    np.testing.assert_allclose(t.heads, t.V)


# --- Problem 3.3: shared projections ------------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([2, 4, 8]), st.booleans())
def test_shared_projections_give_identical_heads(seed, h, cross):
    d_model = 8
    d_k = d_model // h
    x_q, x_kv, W_Q_i, W_K_i, W_V_i = rng_arrays(seed, (5, d_model), (3, d_model), *[(d_model, d_k)] * 3)
    x_kv = x_kv if cross else None
    concat, weights = mha.shared_projection_attention(x_q, x_kv, W_Q_i, W_K_i, W_V_i, np.eye(d_model), h)
    blocks = concat.reshape(5, h, d_k)  # (n_q, h, d_k): W_O = I leaves the concatenation visible
    for i in range(1, h):
        np.testing.assert_array_equal(blocks[:, i], blocks[:, 0], err_msg=f"head {i} differs from head 0")
        np.testing.assert_array_equal(weights[i], weights[0], err_msg=f"weights of head {i}")
    # The same as a block built from h copies of one head's matrices.
    block = mha.MultiHeadAttention.from_heads([W_Q_i] * h, [W_K_i] * h, [W_V_i] * h, np.eye(d_model))
    np.testing.assert_allclose(block(x_q, x_kv)[0], concat, rtol=1e-12)


def test_distinct_projections_give_distinct_heads():
    block = mha.MultiHeadAttention.from_seed(8, 4, seed=2)
    (x,) = rng_arrays(2, (5, 8))
    t = block.trace(x)
    for i in range(1, 4):
        assert not np.allclose(t.weights[i], t.weights[0])


# --- Problem 3.2: summed heads --------------------------------------------------------------------------


def test_summed_heads_have_width_d_k_and_are_the_sum_of_the_concatenated_blocks():
    d_model, h = 512, 8
    block = mha.MultiHeadAttention.from_seed(d_model, h, seed=5)
    (x,) = rng_arrays(5, (10, d_model))
    (W_O_small,) = rng_arrays(6, (64, d_model))
    output, summed = mha.summed_heads_attention(x, None, block.W_Q, block.W_K, block.W_V, W_O_small, h)
    assert summed.shape == (10, 64), "summing 8 heads of width 64 leaves width 64, not 512"
    assert output.shape == (10, d_model)
    heads = block.trace(x).heads  # (h, n, d_k)
    np.testing.assert_allclose(summed, heads.sum(axis=0), rtol=1e-12)
    np.testing.assert_allclose(output, summed @ W_O_small, rtol=1e-12)


def test_summing_heads_loses_information():
    d_model, h, n = 16, 4, 20
    block = mha.MultiHeadAttention.from_seed(d_model, h, seed=7)
    (x,) = rng_arrays(7, (n, d_model))
    (W_O_small,) = rng_arrays(8, (d_model // h, d_model))
    Ws = (block.W_Q, block.W_K, block.W_V)
    output, summed = mha.summed_heads_attention(x, None, *Ws, W_O_small, h)
    # Reordering the heads changes the concatenation, but not the sum: which head saw what is lost.
    order = np.arange(d_model).reshape(h, -1)[[1, 0, 3, 2]].ravel()  # swap heads 0 <-> 1 and 2 <-> 3
    swapped = [W[:, order] for W in Ws]
    np.testing.assert_allclose(mha.summed_heads_attention(x, None, *swapped, W_O_small, h)[1], summed, rtol=1e-12)
    concat = block.trace(x).concat
    swapped_concat = mha.multi_head_attention(x, None, *swapped, np.eye(d_model), h)[0]
    assert not np.allclose(swapped_concat, concat)
    # Rank: whatever W^O_small is, the summed output has rank <= d_k; the real block reaches d_model.
    assert np.linalg.matrix_rank(output) <= d_model // h
    assert np.linalg.matrix_rank(block(x)[0]) == d_model


def test_summed_equals_concatenated_only_when_there_is_one_head():
    block = mha.MultiHeadAttention.from_seed(8, 1, seed=9)
    (x,) = rng_arrays(9, (5, 8))
    output, summed = mha.summed_heads_attention(x, None, block.W_Q, block.W_K, block.W_V, block.W_O, 1, causal=True)
    np.testing.assert_allclose(output, block(x, causal=True)[0], rtol=1e-12)
    np.testing.assert_allclose(summed, block.trace(x, causal=True).concat, rtol=1e-12)


def test_variants_accept_cross_attention_a_batch_and_masks():
    d_model, h = 8, 2
    x_q, x_kv, *Ws = rng_arrays(11, (2, 3, d_model), (2, 5, d_model), *[(d_model, d_model)] * 3)
    (W_O_small,) = rng_arrays(12, (4, d_model))
    mask = np.ones((2, 3, 5), bool)
    mask[1, 0] = False
    output, summed = mha.summed_heads_attention(x_q, x_kv, *Ws, W_O_small, h, mask=mask, causal=True)
    assert output.shape == (2, 3, d_model) and summed.shape == (2, 3, 4)
    assert (summed[1, 0] == 0).all()
    output, weights = mha.shared_projection_attention(x_q, x_kv, *(W[:, :4] for W in Ws), np.eye(d_model), h, mask=mask)
    assert output.shape == (2, 3, d_model) and weights.shape == (2, h, 3, 5)
    assert (weights[1, :, 0] == 0).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_variants_keep_the_dtype(dtype):
    x, *Ws = rng_arrays(13, (3, 8), *[(8, 8)] * 3, dtype=dtype)
    output, summed = mha.summed_heads_attention(x, None, *Ws, np.ones((4, 8), dtype), 2)
    assert output.dtype == summed.dtype == dtype
    output, weights = mha.shared_projection_attention(x, None, *(W[:, :4] for W in Ws), np.eye(8, dtype=dtype), 2)
    assert output.dtype == weights.dtype == dtype
