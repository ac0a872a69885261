"""Bad input: every public function raises ValueError naming the argument and what was expected."""

import re

import numpy as np
import pytest

import mha_core as mha

D, H = 8, 2  # d_model, h
X = np.ones((3, D))
W = np.eye(D)
WS = (W, W, W, W)
Q, K, V = np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 2))


def raises(message):
    return pytest.raises(ValueError, match=re.escape(message))


# The ways a caller's array can be unusable, with the words the message must contain.
BAD_ARRAYS = [
    (np.array([[1.0, np.nan]]), "must be finite (no NaN or inf)"),
    (np.array([[np.inf, 1.0]]), "must be finite (no NaN or inf)"),
    (np.array([[-np.inf, 1.0]], np.float32), "must be finite (no NaN or inf)"),
    (np.array([[1 + 2j, 1.0]]), "must hold real numbers, got dtype complex128"),
    (np.array([["a", "b"]]), "must hold real numbers, got dtype <U1"),
    (np.array([[1.0, None]], dtype=object), "must hold real numbers, got dtype object"),
    (np.array([[True, False]]), "must hold real numbers, got dtype bool"),
    ([[1.0, 2.0], [3.0]], "must be an array of numbers"),  # ragged
    (np.empty((0, 2)), "must not be empty, got shape (0, 2)"),
]


# --- head_dim and whole numbers ---------------------------------------------------------------------


def test_head_dim_names_both_values_when_h_does_not_divide_d_model():
    with raises("h must divide d_model: d_model=512, h=7 leaves a remainder of 1"):
        mha.head_dim(512, 7)


@pytest.mark.parametrize(
    "d_model, h, message",
    [
        (512, 0, "h must be a whole number >= 1, got 0 (d_model=512, h=0)"),
        (512, -8, "h must be a whole number >= 1, got -8 (d_model=512, h=-8)"),
        (0, 8, "d_model must be a whole number >= 1, got 0 (d_model=0, h=8)"),
        (-512, 8, "d_model must be a whole number >= 1, got -512 (d_model=-512, h=8)"),
        (512, 8.0, "h must be a whole number >= 1, got 8.0 (d_model=512, h=8.0)"),
        (512, True, "h must be a whole number >= 1, got True (d_model=512, h=True)"),
        (512, "8", "h must be a whole number >= 1, got '8' (d_model=512, h='8')"),
        (512, None, "h must be a whole number >= 1, got None"),
        (512.0, 8, "d_model must be a whole number >= 1, got 512.0"),
        (np.bool_(True), 1, "d_model must be a whole number >= 1, got"),
    ],
)
def test_head_dim_rejects_what_is_not_a_whole_number_above_zero(d_model, h, message):
    with raises(message):
        mha.head_dim(d_model, h)


@pytest.mark.parametrize("h", [0, True, 2.0, "2", 3])
def test_every_function_taking_h_rejects_a_bad_h(h):
    message = "h must divide d_model" if h == 3 else "h must be a whole number >= 1"
    calls = [
        lambda: mha.multi_head_attention(X, None, *WS, h),
        lambda: mha.MultiHeadAttention(*WS, h),
        lambda: mha.MultiHeadAttention.from_seed(D, h),
        lambda: mha.split_heads(X, h),
        lambda: mha.summed_heads_attention(X, None, W, W, W, np.ones((4, D)), h),
        lambda: mha.shared_projection_attention(X, None, W[:, :4], W[:, :4], W[:, :4], W, h),
        lambda: mha.parameter_count(D, h),
        lambda: mha.flop_count(D, h, 3),
        lambda: mha.shape_table(D, h, 3),
    ]
    for call in calls:
        with raises(message):
            call()


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: mha.causal_mask(0), "n_q must be a whole number >= 1, got 0"),
        (lambda: mha.causal_mask(3, -1), "n_k must be a whole number >= 1, got -1"),
        (lambda: mha.causal_mask(2.5), "n_q must be a whole number >= 1, got 2.5"),
        (lambda: mha.flop_count(D, H, 0), "n_q must be a whole number >= 1, got 0"),
        (lambda: mha.flop_count(D, H, 3, "4"), "n_k must be a whole number >= 1, got '4'"),
        (lambda: mha.shape_table(D, H, 3, 0), "n_k must be a whole number >= 1, got 0"),
        (lambda: mha.shape_table(D, H, None), "n_q must be a whole number >= 1, got None"),
        (lambda: mha.parameter_count(D, H, bias="yes"), "bias must be True or False, got 'yes'"),
        (lambda: mha.parameter_count(0, 1), "d_model must be a whole number >= 1, got 0"),
    ],
)
def test_counts_and_masks_reject_bad_sizes(call, message):
    with raises(message):
        call()


# --- softmax -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("axis", [1, -2, 1.0, True, None, "0"])
def test_softmax_rejects_a_bad_axis(axis):
    with raises("axis must be in [-1, 1) for x of shape (3,), got"):
        mha.softmax([1.0, 2.0, 3.0], axis=axis)


@pytest.mark.parametrize("bad, message", BAD_ARRAYS + [(3.0, "x must have at least 1 dimensions, got shape ()")])
def test_softmax_rejects_bad_x(bad, message):
    with raises(message):
        mha.softmax(bad)
    with pytest.raises(ValueError, match="^x "):
        mha.softmax(bad)


# --- scaled_dot_product_attention --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Q", "K", "V"])
@pytest.mark.parametrize("bad, message", BAD_ARRAYS)
def test_sdpa_names_the_bad_array(name, bad, message):
    args = {"Q": np.ones((1, 2)), "K": np.ones((1, 2)), "V": np.ones((1, 2)), name: bad}  # the shapes of BAD_ARRAYS
    with pytest.raises(ValueError, match=f"^{name} " + re.escape(message)):
        mha.scaled_dot_product_attention(**args)


@pytest.mark.parametrize(
    "args, message",
    [
        (dict(Q=np.ones(4)), "Q must have at least 2 dimensions, got shape (4,)"),
        (dict(K=np.ones((5, 3))), "K must have last dimension 4, got shape (5, 3)"),
        (dict(V=np.ones((4, 2))), "V must have as many rows as K (n_k=5), got shape (4, 2)"),
        (dict(Q=np.ones((2, 3, 4)), K=np.ones((3, 5, 4))), "K must have batch dimensions that broadcast with (2,), got (3, 5, 4)"),
        (dict(V=np.ones((3, 5, 2)), K=np.ones((2, 5, 4))), "V must have batch dimensions that broadcast with (2,), got (3, 5, 2)"),
        (dict(mask=np.ones((3, 5), int)), "mask must be boolean (True = may attend), got dtype int64"),
        (dict(mask=np.ones((3, 5))), "mask must be boolean (True = may attend), got dtype float64"),
        (dict(mask=np.ones((5, 3), bool)), "mask must have shape (..., 3, 5) = (..., n_q, n_k), got (5, 3)"),
        (dict(mask=np.ones(5, bool)), "mask must have shape (..., 3, 5) = (..., n_q, n_k), got (5,)"),
        (dict(mask=np.ones((2, 3, 5), bool)), "mask must have batch dimensions that broadcast to (), got (2,)"),
        (dict(mask=[[True, False], [True]]), "mask must be a boolean array"),
        (dict(mask=np.ones((3, 5), bool), causal="yes"), "causal must be True or False, got 'yes'"),
        (dict(causal=None), "causal must be True or False, got None"),
    ],
)
def test_sdpa_rejects_mismatched_shapes_and_masks(args, message):
    with raises(message):
        mha.scaled_dot_product_attention(**{"Q": Q, "K": K, "V": V, **args})


def test_sdpa_mask_batch_must_match_the_batch():
    Qb, Kb, Vb = np.ones((2, 3, 4)), np.ones((2, 5, 4)), np.ones((2, 5, 2))
    with raises("mask must have batch dimensions that broadcast to (2,), got (3,)"):
        mha.scaled_dot_product_attention(Qb, Kb, Vb, mask=np.ones((3, 3, 5), bool))
    mha.scaled_dot_product_attention(Qb, Kb, Vb, mask=np.ones((1, 3, 5), bool))  # broadcasts: fine


@pytest.mark.parametrize("scale", [0, -1.0, np.nan, np.inf, "0.5", True, 1j, [0.5], np.array([0.5])])
def test_sdpa_rejects_a_bad_scale(scale):
    with raises(f"scale must be a finite number > 0, got {scale!r}"):
        mha.scaled_dot_product_attention(Q, K, V, scale=scale)


def test_sdpa_accepts_numpy_scalars_as_scale():
    mha.scaled_dot_product_attention(Q, K, V, scale=np.float32(0.5))
    mha.scaled_dot_product_attention(Q, K, V, scale=2)


@pytest.mark.filterwarnings("ignore:overflow encountered in matmul:RuntimeWarning")  # numpy's loop, not BLAS, warns
def test_sdpa_reports_overflowing_scores_instead_of_nan():
    big = np.full((2, 2), 1e30, np.float32)
    with raises("the scores Q K^T overflow their dtype: the inputs are too large"):
        mha.scaled_dot_product_attention(big, big, big, scale=1)


# --- multi_head_attention ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["W_Q", "W_K", "W_V", "W_O"])
def test_mha_names_the_matrix_with_the_wrong_shape(name):
    Ws = dict(W_Q=np.eye(512), W_K=np.eye(512), W_V=np.eye(512), W_O=np.eye(512))
    with raises(f"{name} must have shape (512, 512), got (512, 64)"):
        mha.multi_head_attention(np.ones((10, 512)), None, **{**Ws, name: np.ones((512, 64))}, h=8)
    with raises(f"{name} must be 2-D, got shape (2, 512, 512)"):
        mha.multi_head_attention(np.ones((10, 512)), None, **{**Ws, name: np.ones((2, 512, 512))}, h=8)


@pytest.mark.parametrize("name", ["x_q", "x_kv", "W_Q", "W_K", "W_V", "W_O"])
@pytest.mark.parametrize("bad, message", BAD_ARRAYS)
def test_mha_names_the_bad_array(name, bad, message):
    args = dict(x_q=X, x_kv=X, W_Q=W, W_K=W, W_V=W, W_O=W, h=H)
    args[name] = bad
    with pytest.raises(ValueError, match=f"^{name} "):
        mha.multi_head_attention(**args)


@pytest.mark.parametrize(
    "args, message",
    [
        (dict(x_q=np.ones(D)), "x_q must have at least 2 dimensions, got shape (8,)"),
        (dict(x_q=np.ones((3, 6))), "W_Q must have shape (6, 6), got (8, 8)"),
        (dict(x_kv=np.ones((4, 6))), "x_kv must have last dimension 8, got shape (4, 6)"),
        (dict(x_q=np.ones((2, 3, D)), x_kv=np.ones((3, 4, D))), "x_kv must have the batch shape of x_q (2,), got (3,)"),
        (dict(x_q=np.ones((2, 3, D)), x_kv=np.ones((4, D))), "x_kv must have the batch shape of x_q (2,), got ()"),
        (dict(mask=np.ones((3, 3), np.int8)), "mask must be boolean (True = may attend), got dtype int8"),
        (dict(x_kv=np.ones((4, D)), mask=np.ones((3, 3), bool)), "mask must have shape (..., 3, 4) = (..., n_q, n_k), got (3, 3)"),
        (dict(mask=np.ones((H, 3, 3), bool)), "mask must have batch dimensions that broadcast to (), got (2,)"),
        (dict(causal=1), "causal must be True or False, got 1"),
    ],
)
def test_mha_rejects_mismatched_shapes_and_masks(args, message):
    full = dict(x_q=X, x_kv=None, W_Q=W, W_K=W, W_V=W, W_O=W, h=H)
    with raises(message):
        mha.multi_head_attention(**{**full, **args})


def test_mha_batch_mismatch_between_x_q_and_its_mask():
    with raises("mask must have batch dimensions that broadcast to (2,), got (3,)"):
        mha.multi_head_attention(np.ones((2, 3, D)), None, *WS, H, mask=np.ones((3, 3, 3), bool))


# --- heads -----------------------------------------------------------------------------------------------


def test_split_and_concat_heads_reject_bad_input():
    with raises("x must have at least 2 dimensions, got shape (8,)"):
        mha.split_heads(np.ones(D), H)
    with raises("h must divide d_model: d_model=8, h=3"):
        mha.split_heads(X, 3)
    with raises("heads must have at least 3 dimensions, got shape (3, 8)"):
        mha.concat_heads(X)


# --- MultiHeadAttention ------------------------------------------------------------------------------------


def test_block_rejects_matrices_of_the_wrong_shape():
    with raises("W_Q must have shape (8, 8), got (8, 4)"):
        mha.MultiHeadAttention(np.ones((8, 4)), W, W, W, H)
    with raises("W_O must have shape (8, 8), got (4, 4)"):
        mha.MultiHeadAttention(W, W, W, np.eye(4), H)
    with raises("W_Q must be 2-D, got shape (8,)"):
        mha.MultiHeadAttention(np.ones(8), W, W, W, H)
    with raises("W_V must be finite (no NaN or inf)"):
        mha.MultiHeadAttention(W, W, np.full((8, 8), np.nan), W, H)


def test_block_rejects_input_of_the_wrong_width():
    block = mha.MultiHeadAttention.from_seed(D, H)
    with raises("x_q must have last dimension 8, got shape (3, 6)"):
        block(np.ones((3, 6)))
    with raises("x_q must have last dimension 8, got shape (3, 6)"):
        block.trace(np.ones((3, 6)))
    with raises("x_kv must have last dimension 8, got shape (4, 6)"):
        block.trace(X, np.ones((4, 6)))
    with raises("mask must have shape (..., 3, 3) = (..., n_q, n_k), got (3, 4)"):
        block.trace(X, mask=np.ones((3, 4), bool))


def test_from_seed_rejects_bad_arguments():
    with raises("d_model must be a whole number >= 1, got 0"):
        mha.MultiHeadAttention.from_seed(0, 1)
    with raises("h must divide d_model: d_model=10, h=4"):
        mha.MultiHeadAttention.from_seed(10, 4)
    with raises("dtype must be float32 or float64, got int64"):
        mha.MultiHeadAttention.from_seed(D, H, dtype=np.int64)


def test_from_heads_rejects_mismatched_matrices():
    heads = [np.ones((D, 4))] * 2
    with raises("W_Q_heads must be a list of h >= 1 matrices, each d_model x d_k, got []"):
        mha.MultiHeadAttention.from_heads([], heads, heads, W)
    with raises("W_Q_heads must be a list of h >= 1 matrices, each d_model x d_k, got 3"):
        mha.MultiHeadAttention.from_heads(3, heads, heads, W)
    with raises("W_Q_heads must hold h=2 matrices of shape (d_model, d_model/h), got 2 of shape (8, 3): 2 x 3 != 8"):
        mha.MultiHeadAttention.from_heads([np.ones((D, 3))] * 2, heads, heads, W)
    with raises("W_K_heads must hold h=2 matrices, like W_Q_heads, got 3"):
        mha.MultiHeadAttention.from_heads(heads, [np.ones((D, 4))] * 3, heads, W)
    with raises("W_V_heads must hold h=2 matrices, like W_Q_heads, got None"):
        mha.MultiHeadAttention.from_heads(heads, heads, None, W)
    with raises("W_V_heads[1] must have shape (8, 4), got (8, 3)"):
        mha.MultiHeadAttention.from_heads(heads, heads, [np.ones((D, 4)), np.ones((D, 3))], W)
    with raises("W_Q_heads[1] must have shape (8, 4), got (4, 8)"):
        mha.MultiHeadAttention.from_heads([np.ones((D, 4)), np.ones((4, D))], heads, heads, W)
    with raises("W_K_heads[0] must be finite (no NaN or inf)"):
        mha.MultiHeadAttention.from_heads(heads, [np.full((D, 4), np.inf)] * 2, heads, W)
    with raises("W_O must have shape (8, 8), got (8, 4)"):
        mha.MultiHeadAttention.from_heads(heads, heads, heads, np.ones((D, 4)))


@pytest.mark.parametrize("i", [-1, 2, 1.0, True, "0", None])
def test_head_weights_rejects_a_bad_index(i):
    block = mha.MultiHeadAttention.from_seed(D, H)
    with raises(f"i must be a head index in 0..1, got {i!r}"):
        block.head_weights(i)


def test_head_weights_accepts_numpy_integers():
    block = mha.MultiHeadAttention.from_seed(D, H)
    np.testing.assert_array_equal(block.head_weights(np.int64(1))[0], block.W_Q[:, 4:])


# --- the broken variants -------------------------------------------------------------------------------------


def test_summed_heads_attention_rejects_bad_matrices():
    with raises("W_O_small must have shape (4, 8), got (8, 8)"):
        mha.summed_heads_attention(X, None, W, W, W, W, H)
    with raises("W_K must have shape (8, 8), got (8, 4)"):
        mha.summed_heads_attention(X, None, W, np.ones((D, 4)), W, np.ones((4, D)), H)
    with raises("x_kv must have last dimension 8, got shape (3, 4)"):
        mha.summed_heads_attention(X, np.ones((3, 4)), W, W, W, np.ones((4, D)), H)
    with raises("mask must be boolean"):
        mha.summed_heads_attention(X, None, W, W, W, np.ones((4, D)), H, mask=np.ones((3, 3)))


def test_shared_projection_attention_rejects_bad_matrices():
    W_i = np.ones((D, 4))
    with raises("W_V_i must have shape (8, 4), got (8, 8)"):
        mha.shared_projection_attention(X, None, W_i, W_i, W, W, H)
    with raises("W_Q_i must be 2-D, got shape (8,)"):
        mha.shared_projection_attention(X, None, np.ones(D), W_i, W_i, W, H)
    with raises("W_O must have shape (8, 8), got (8, 4)"):
        mha.shared_projection_attention(X, None, W_i, W_i, W_i, W_i, H)
    with raises("x_q must be finite (no NaN or inf)"):
        mha.shared_projection_attention(np.full((3, D), np.nan), None, W_i, W_i, W_i, W, H)
