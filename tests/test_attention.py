"""mha_core.attention against the plain-loop reference (tests/reference.py) and the sheet's properties."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import mha_core as mha

from . import reference

FLOATS = st.floats(-1, 1, allow_nan=False, allow_infinity=False, width=64)
MASKS = ["none", "random", "random per batch", "causal", "random and causal", "a fully masked row"]


def assert_close(actual, expected, what):
    """Equal to the reference up to rounding (relative to the size of the expected values)."""
    expected = np.asarray(expected, dtype=np.float64)
    assert np.shape(actual) == expected.shape, f"{what}: shape {np.shape(actual)} != {expected.shape}"
    np.testing.assert_allclose(actual, expected, rtol=1e-9, atol=1e-9 * (1 + np.abs(expected).max()), err_msg=what)


def rng_arrays(seed, *shapes, dtype=np.float64):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(dtype) for s in shapes]


@st.composite
def mask_for(draw, kind, batch, n_q, n_k):
    """(mask, causal) of the given kind, for queries n_q and keys n_k."""
    mask = None
    if kind in ("random", "random and causal", "a fully masked row"):
        mask = draw(hnp.arrays(bool, (n_q, n_k)))
    if kind == "random per batch":
        mask = draw(hnp.arrays(bool, (*batch, n_q, n_k)))
    if kind == "a fully masked row":
        mask[draw(st.integers(0, n_q - 1))] = False
    return mask, "causal" in kind


@st.composite
def mha_cases(draw):
    """Inputs of multi_head_attention: self or cross, with or without a batch and a mask."""
    h, d_k = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    d_model = h * d_k
    batch = draw(st.sampled_from([(), (1,), (2,)]))
    n_q = draw(st.integers(1, 4))
    cross = draw(st.booleans())
    n_k = draw(st.integers(1, 4)) if cross else n_q
    x_q = draw(hnp.arrays(np.float64, (*batch, n_q, d_model), elements=FLOATS))
    x_q *= draw(st.sampled_from([1.0, 30.0]))  # 30: scores in the hundreds, weights nearly one-hot
    x_kv = draw(hnp.arrays(np.float64, (*batch, n_k, d_model), elements=FLOATS)) if cross else None
    Ws = [draw(hnp.arrays(np.float64, (d_model, d_model), elements=FLOATS)) for _ in range(4)]
    mask, causal = draw(mask_for(draw(st.sampled_from(MASKS)), batch, n_q, n_k))
    return dict(x_q=x_q, x_kv=x_kv, W_Q=Ws[0], W_K=Ws[1], W_V=Ws[2], W_O=Ws[3], h=h, mask=mask, causal=causal)


@st.composite
def sdpa_cases(draw):
    """Inputs of scaled_dot_product_attention, with a batch of 0, 1 or 2 dimensions."""
    batch = draw(st.sampled_from([(), (2,), (2, 1)]))
    n_q, n_k, d_k, d_v = (draw(st.integers(1, 4)) for _ in range(4))
    Q = draw(hnp.arrays(np.float64, (*batch, n_q, d_k), elements=FLOATS))
    K = draw(hnp.arrays(np.float64, (*batch, n_k, d_k), elements=FLOATS))
    V = draw(hnp.arrays(np.float64, (*batch, n_k, d_v), elements=FLOATS))
    mask, causal = draw(mask_for(draw(st.sampled_from(MASKS)), batch, n_q, n_k))
    scale = draw(st.none() | st.floats(0.1, 3) | st.floats(3, 100))  # large: peaked weights
    return dict(Q=Q, K=K, V=V, mask=mask, causal=causal, scale=scale)


# --- against the reference -----------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(mha_cases())
def test_multi_head_attention_matches_the_loop_reference(case):
    output, weights = mha.multi_head_attention(**case)
    ref_output, ref_weights = reference.multi_head_attention(**case)
    assert_close(output, ref_output, "output")
    assert_close(weights, ref_weights, "weights")


@settings(max_examples=100, deadline=None)
@given(sdpa_cases())
def test_scaled_dot_product_attention_matches_the_loop_reference(case):
    output, weights = mha.scaled_dot_product_attention(**case)
    Q, K, V, mask = case["Q"], case["K"], case["V"], case["mask"]
    batch = Q.shape[:-2]
    for b in np.ndindex(*batch):
        m = None if mask is None else mask[b] if mask.ndim > 2 else mask
        ref_output, ref_weights = reference.attention(Q[b], K[b], V[b], m, case["causal"], case["scale"])
        assert_close(output[b], ref_output, f"output of batch {b}")
        assert_close(weights[b], ref_weights, f"weights of batch {b}")


def test_the_reference_reproduces_the_sheets_problem_4_2():
    output, weights = reference.attention([[1, 0]], [[1, 0], [0, 1], [1, 1], [2, 0]], [[1, 0], [0, 2], [3, 0], [0, 4]])
    assert np.round(weights[0], 4).tolist() == [0.2212, 0.1091, 0.2212, 0.4486]
    assert np.round(output[0], 4).tolist() == [0.8847, 2.0124]


# --- properties from the sheet -------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(mha_cases())
def test_weights_rows_sum_to_one_or_zero_when_fully_masked_and_never_nan(case):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "invalid value" or "divide by zero" on the way
        output, weights = mha.multi_head_attention(**case)
    assert np.isfinite(output).all() and np.isfinite(weights).all()
    x_q, x_kv = case["x_q"], case["x_kv"] if case["x_kv"] is not None else case["x_q"]
    n_q, n_k = x_q.shape[-2], x_kv.shape[-2]
    allowed = np.ones((n_q, n_k), bool) if case["mask"] is None else case["mask"]
    if case["causal"]:
        allowed = allowed & np.tri(n_q, n_k, dtype=bool)
    allowed = np.broadcast_to(np.expand_dims(allowed, -3), weights.shape)  # (..., h, n_q, n_k)
    assert (weights[~allowed] == 0).all(), "a masked key got weight"
    expected_sums = allowed.any(axis=-1).astype(float)  # 1, or 0 for a row with nothing to attend to
    np.testing.assert_allclose(weights.sum(axis=-1), expected_sums, atol=1e-12)


def test_a_fully_masked_row_gives_zero_weights_and_zero_output():
    Q, K, V = rng_arrays(1, (3, 4), (5, 4), (5, 2))
    mask = np.ones((3, 5), bool)
    mask[1] = False
    output, weights = mha.scaled_dot_product_attention(Q, K, V, mask=mask)
    assert (weights[1] == 0).all() and (output[1] == 0).all()
    assert weights[[0, 2]].sum(axis=-1) == pytest.approx([1, 1])
    x, *Ws = rng_arrays(2, (3, 8), (8, 8), (8, 8), (8, 8), (8, 8))
    output, weights = mha.multi_head_attention(x, None, *Ws, h=2, mask=mask[:, :3])
    assert (weights[:, 1] == 0).all() and (output[1] == 0).all()


def test_causal_with_more_queries_than_keys_leaves_no_row_empty():
    Q, K, V = rng_arrays(3, (4, 2), (2, 2), (2, 3))
    _, weights = mha.scaled_dot_product_attention(Q, K, V, causal=True)
    assert weights[0, 1] == 0 and weights[0, 0] == 1  # query 0 sees key 0 only (top-left aligned)
    np.testing.assert_allclose(weights.sum(axis=-1), 1)


@pytest.mark.parametrize("h", [1, 2, 4, 8])
def test_output_width_is_d_model_and_weights_are_h_by_n_q_by_n_k(h):
    """Problems 1.2 and 5.3: same width out as in; n_q rows out, whatever n_k is."""
    d_model, n_q, n_k = 16, 3, 7
    x_q, x_kv, *Ws = rng_arrays(4, (n_q, d_model), (n_k, d_model), *[(d_model, d_model)] * 4)
    output, weights = mha.multi_head_attention(x_q, x_kv, *Ws, h)
    assert output.shape == (n_q, d_model)
    assert weights.shape == (h, n_q, n_k)
    output, weights = mha.multi_head_attention(x_q[None].repeat(2, 0), x_kv[None].repeat(2, 0), *Ws, h)
    assert output.shape == (2, n_q, d_model) and weights.shape == (2, h, n_q, n_k)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(1, 6), st.booleans())
def test_identical_values_give_that_value_at_every_position(seed, n_q, n_k, causal):
    """Problem 5.2: with v_1 = ... = v_n = v every output row is v, whatever the weights."""
    Q, K, v = rng_arrays(seed, (n_q, 3), (n_k, 3), (4,))
    Q *= 10  # peaked weights change nothing
    output, _ = mha.scaled_dot_product_attention(Q, K, np.tile(v, (n_k, 1)), causal=causal)
    np.testing.assert_allclose(output, np.tile(v, (n_q, 1)), rtol=1e-12)
    # In the block: identical tokens in x_kv give identical V_i, so every query's output is the same row.
    x_q, token, *Ws = rng_arrays(seed, (n_q, 8), (8,), *[(8, 8)] * 4)
    output, _ = mha.multi_head_attention(x_q, np.tile(token, (n_k, 1)), *Ws, h=4)
    expected = token @ Ws[2] @ Ws[3]  # v W^O: each head passes its own block of v through
    np.testing.assert_allclose(output, np.tile(expected, (n_q, 1)), rtol=1e-10, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from([1, 2, 4]), st.permutations(range(5)))
def test_self_attention_without_a_mask_is_permutation_equivariant(seed, h, order):
    x, *Ws = rng_arrays(seed, (5, 8), *[(8, 8)] * 4)
    order = list(order)
    output, weights = mha.multi_head_attention(x, None, *Ws, h)
    permuted_output, permuted_weights = mha.multi_head_attention(x[order], None, *Ws, h)
    np.testing.assert_allclose(permuted_output, output[order], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(permuted_weights, weights[:, order][:, :, order], rtol=1e-10, atol=1e-12)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 5), st.sampled_from([1, 2, 4]))
def test_causal_output_at_i_does_not_see_later_tokens(seed, last, h):
    x, later, *Ws = rng_arrays(seed, (6, 8), (6, 8), *[(8, 8)] * 4)
    changed = x.copy()
    changed[last + 1 :] = later[last + 1 :]
    output, weights = mha.multi_head_attention(x, None, *Ws, h, causal=True)
    changed_output, changed_weights = mha.multi_head_attention(changed, None, *Ws, h, causal=True)
    np.testing.assert_allclose(changed_output[: last + 1], output[: last + 1], rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(changed_weights[:, : last + 1], weights[:, : last + 1], rtol=1e-12, atol=1e-14)
    assert (np.triu(weights, k=1) == 0).all(), "a query attended to a later key"


def test_a_batch_gives_what_each_sequence_gives_alone():
    x_q, x_kv, *Ws = rng_arrays(5, (3, 4, 8), (3, 6, 8), *[(8, 8)] * 4)
    mask = np.random.default_rng(5).random((3, 4, 6)) < 0.7
    output, weights = mha.multi_head_attention(x_q, x_kv, *Ws, 2, mask=mask, causal=True)
    for b in range(3):
        alone, alone_weights = mha.multi_head_attention(x_q[b], x_kv[b], *Ws, 2, mask=mask[b], causal=True)
        np.testing.assert_allclose(output[b], alone, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(weights[b], alone_weights, rtol=1e-12, atol=1e-14)
    shared, _ = mha.multi_head_attention(x_q, x_kv, *Ws, 2, mask=mask[0])  # one mask for the whole batch
    np.testing.assert_allclose(shared[0], mha.multi_head_attention(x_q[0], x_kv[0], *Ws, 2, mask=mask[0])[0])


def test_x_kv_none_is_self_attention():
    x, *Ws = rng_arrays(6, (5, 8), *[(8, 8)] * 4)
    for a, b in zip(mha.multi_head_attention(x, None, *Ws, 4), mha.multi_head_attention(x, x, *Ws, 4)):
        np.testing.assert_array_equal(a, b)


def test_sdpa_default_scale_is_one_over_sqrt_d_k():
    Q, K, V = rng_arrays(7, (3, 16), (4, 16), (4, 2))
    _, default = mha.scaled_dot_product_attention(Q, K, V)
    _, explicit = mha.scaled_dot_product_attention(Q, K, V, scale=0.25)
    np.testing.assert_allclose(default, explicit, rtol=1e-12)
    _, unscaled = mha.scaled_dot_product_attention(Q, K, V, scale=1)
    np.testing.assert_allclose(unscaled, mha.softmax(Q @ K.T), rtol=1e-12)


def test_sdpa_broadcasts_batch_dimensions():
    Q, K, V = rng_arrays(8, (2, 1, 3, 4), (5, 4), (1, 5, 2))  # batch (2, 1), none, (1,)
    output, weights = mha.scaled_dot_product_attention(Q, K, V)
    assert output.shape == (2, 1, 3, 2) and weights.shape == (2, 1, 3, 5)
    np.testing.assert_allclose(output[1, 0], mha.scaled_dot_product_attention(Q[1, 0], K, V[0])[0])


# --- softmax, the causal mask, heads ---------------------------------------------------------------


def test_softmax_is_numerically_stable():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        w = mha.softmax([1000.0, 1001.0, 999.0])
        assert mha.softmax([-1e308, 1e308]).tolist() == [0, 1]
        assert mha.softmax(np.array([-3e38, 3e38], np.float32)).tolist() == [0, 1]
        _, weights = mha.scaled_dot_product_attention([[1e154]], [[-1e154], [1e154]], [[1], [2]], scale=1)
        assert weights.tolist() == [[0, 1]]
    np.testing.assert_allclose(w, mha.softmax([1.0, 2.0, 0.0]), rtol=1e-15)
    assert w.sum() == pytest.approx(1)


@settings(max_examples=50, deadline=None)
@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=4), elements=st.floats(-50, 50)), st.data())
def test_softmax_along_any_axis(x, data):
    axis = data.draw(st.integers(-x.ndim, x.ndim - 1))
    w = mha.softmax(x, axis=axis)
    np.testing.assert_allclose(w.sum(axis=axis), 1, rtol=1e-12)
    expected = np.exp(x - x.max(axis=axis, keepdims=True))
    np.testing.assert_allclose(w, expected / expected.sum(axis=axis, keepdims=True), rtol=1e-12)


@pytest.mark.parametrize("n_q, n_k", [(1, 1), (4, 4), (3, 5), (5, 3)])
def test_causal_mask_is_top_left_aligned_true_where_allowed(n_q, n_k):
    mask = mha.causal_mask(n_q, n_k)
    assert mask.dtype == bool and mask.shape == (n_q, n_k)
    for i in range(n_q):
        for j in range(n_k):
            assert mask[i, j] == (j <= i), (i, j)
    np.testing.assert_array_equal(mha.causal_mask(n_q), mha.causal_mask(n_q, n_q))


def test_head_dim():
    assert mha.head_dim(768, 12) == 64
    assert mha.head_dim(512, 512) == 1
    assert mha.head_dim(np.int64(8), np.int32(2)) == 4


def test_split_and_concat_heads_are_inverse_and_use_column_blocks():
    x = np.arange(2 * 3 * 8, dtype=float).reshape(2, 3, 8)
    heads = mha.split_heads(x, 4)  # (2, 4, 3, 2)
    assert heads.shape == (2, 4, 3, 2)
    np.testing.assert_array_equal(heads[:, 1], x[..., 2:4])  # head 1 = columns d_k:2 d_k
    np.testing.assert_array_equal(mha.concat_heads(heads), x)


# --- dtypes ------------------------------------------------------------------------------------------


def test_float32_in_gives_float32_out():
    x, *Ws = rng_arrays(9, (2, 5, 8), *[(8, 8)] * 4, dtype=np.float32)
    output, weights = mha.multi_head_attention(x, None, *Ws, 2, causal=True, mask=np.ones((5, 5), bool))
    assert output.dtype == np.float32 and weights.dtype == np.float32
    output64, _ = mha.multi_head_attention(x.astype(np.float64), None, *(W.astype(np.float64) for W in Ws), 2, causal=True)
    np.testing.assert_allclose(output, output64, rtol=1e-4, atol=1e-5)
    Q = x[0]
    assert all(a.dtype == np.float32 for a in mha.scaled_dot_product_attention(Q, Q, Q, causal=True))
    assert all(a.dtype == np.float32 for a in mha.scaled_dot_product_attention(Q, Q, Q, scale=0.5))
    assert mha.softmax(Q).dtype == np.float32


def test_float64_by_default_and_integers_become_float64():
    x = np.arange(12).reshape(3, 4)
    W = np.eye(4, dtype=int)
    output, weights = mha.multi_head_attention(x, None, W, W, W, W, 2)
    assert output.dtype == np.float64 and weights.dtype == np.float64
    output, weights = mha.multi_head_attention(x.tolist(), None, W.tolist(), W, W, W, 2)
    assert output.dtype == np.float64
    assert mha.softmax([1, 2, 3]).dtype == np.float64
    assert mha.scaled_dot_product_attention([[1, 0]], [[1, 0]], [[2, 3]])[0].dtype == np.float64
