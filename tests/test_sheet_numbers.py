"""The exercise sheet's worked numbers (NOTES.md), recomputed by mha_core."""

import numpy as np
import pytest

import mha_core as mha


def test_1_1_head_dim():
    assert mha.head_dim(768, 12) == 64


def test_2_1_shapes():
    rows = {r.name: r.shape for r in mha.shape_table(512, 8, 10)}
    assert rows["W_i^Q, W_i^K, W_i^V"] == (512, 64)
    assert rows["Q_i"] == (10, 64)
    assert rows["Q_i K_i^T"] == (10, 10)
    assert rows["head_i"] == (10, 64)
    trace = mha.MultiHeadAttention.from_seed(512, 8).trace(np.ones((10, 512)))
    assert trace.Q[0].shape == (10, 64) and trace.scores[0].shape == (10, 10) and trace.heads[0].shape == (10, 64)


def test_2_2_scaled_score():
    q = np.full(64, 1.0)
    k = np.full(64, 40 / 64)  # q . k = 40
    _, w = mha.scaled_dot_product_attention(q[None], np.stack([k, 0 * k]), np.eye(2))
    assert w[0, 0] / w[0, 1] == pytest.approx(np.exp(5.0))


def test_2_3_weights():
    w = mha.softmax([4.0, 2.0, 5.0])
    assert np.round(w, 4).tolist() == [0.2595, 0.0351, 0.7054]
    assert np.exp([4.0, 2.0, 5.0]).sum() == pytest.approx(210.400, abs=5e-4)


def test_4_1_parameter_count():
    assert mha.parameter_count(512, 8) == 1_048_576
    assert mha.parameter_count(512, 8, bias=True) == 1_048_576 + 4 * 512


def test_4_2_causal_query_output():
    q = np.array([[1.0, 0.0]])
    K = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]])
    V = np.array([[1.0, 0.0], [0.0, 2.0], [3.0, 0.0], [0.0, 4.0]])
    out, w = mha.scaled_dot_product_attention(q, K, V)
    assert np.round(w[0], 4).tolist() == [0.2212, 0.1091, 0.2212, 0.4486]
    assert np.round(out[0], 4).tolist() == [0.8847, 2.0124]
    # The same query as the last row of a causal self-attention over 4 positions.
    Q4 = np.vstack([np.zeros((3, 2)), q])
    out4, _ = mha.scaled_dot_product_attention(Q4, K, V, causal=True)
    np.testing.assert_allclose(out4[3], out[0])
