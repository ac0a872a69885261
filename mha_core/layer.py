"""A multi-head attention block that shows its working, and the broken variants
the workbook uses to show what goes wrong (Problems 3.2 and 3.3)."""

from dataclasses import dataclass

import numpy as np

from . import _validate as check
from .attention import attention_heads, check_inputs, concat_heads, head_dim, multi_head_attention


@dataclass(frozen=True)
class Trace:
    """Every intermediate of one forward pass; index ``[i]`` on the head axis for head i."""

    Q: np.ndarray  # (..., h, n_q, d_k)   Q_i = x_q W_i^Q
    K: np.ndarray  # (..., h, n_k, d_k)   K_i = x_kv W_i^K
    V: np.ndarray  # (..., h, n_k, d_v)   V_i = x_kv W_i^V
    scores: np.ndarray  # (..., h, n_q, n_k)   Q_i K_i^T, before scaling
    scaled: np.ndarray  # (..., h, n_q, n_k)   Q_i K_i^T / sqrt(d_k)
    weights: np.ndarray  # (..., h, n_q, n_k)  softmax of the scaled scores
    heads: np.ndarray  # (..., h, n_q, d_v)   head_i = weights_i V_i
    concat: np.ndarray  # (..., n_q, d_model) [head_1 | ... | head_h]
    output: np.ndarray  # (..., n_q, d_model) concat W^O


class MultiHeadAttention:
    """The four d_model x d_model matrices of a block, split into ``h`` heads."""

    def __init__(self, W_Q, W_K, W_V, W_O, h):
        W_Q = check.array("W_Q", W_Q, ndim=2)
        d_model = W_Q.shape[0]
        self.h, self.d_k = h, head_dim(d_model, h)
        _, _, self.W_Q, self.W_K, self.W_V, self.W_O = check_inputs(
            np.zeros((1, d_model), W_Q.dtype), None, W_Q, W_K, W_V, W_O, h
        )

    @classmethod
    def from_seed(cls, d_model, h, seed=0, dtype=np.float64):
        """Random matrices with Glorot-uniform scaling, reproducible from ``seed``."""
        head_dim(d_model, h)
        if np.dtype(dtype) not in (np.float32, np.float64):
            raise ValueError(f"dtype must be float32 or float64, got {np.dtype(dtype)}")
        rng = np.random.default_rng(seed)
        limit = np.sqrt(6 / (d_model + d_model))
        Ws = rng.uniform(-limit, limit, size=(4, d_model, d_model)).astype(dtype)
        return cls(*Ws, h=h)

    @classmethod
    def from_heads(cls, W_Q_heads, W_K_heads, W_V_heads, W_O):
        """Build from per-head matrices W_i^Q, W_i^K, W_i^V, each d_model x d_k."""
        h = _count(W_Q_heads)
        if not h:
            raise ValueError(f"W_Q_heads must be a list of h >= 1 matrices, each d_model x d_k, got {W_Q_heads!r}")
        first = check.array("W_Q_heads[0]", W_Q_heads[0], ndim=2)
        d_model, d_k = first.shape
        if d_k * h != d_model:
            raise ValueError(
                f"W_Q_heads must hold h={h} matrices of shape (d_model, d_model/h), "
                f"got {h} of shape {first.shape}: {h} x {d_k} != {d_model}"
            )
        joined = []
        for name, heads in (("W_Q_heads", W_Q_heads), ("W_K_heads", W_K_heads), ("W_V_heads", W_V_heads)):
            if _count(heads) != h:
                raise ValueError(f"{name} must hold h={h} matrices, like W_Q_heads, got {_count(heads)}")
            arrays = [check.array(f"{name}[{i}]", W, ndim=2) for i, W in enumerate(heads)]
            for i, W in enumerate(arrays):
                check.shape(f"{name}[{i}]", W, (d_model, d_k))
            joined.append(np.concatenate(arrays, axis=1))  # (d_model, h*d_k)
        return cls(*joined, W_O, h=h)

    @property
    def d_model(self):
        return self.W_Q.shape[0]

    def head_weights(self, i):
        """``(W_i^Q, W_i^K, W_i^V)``, each d_model x d_k: the columns of head ``i``."""
        if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or not 0 <= i < self.h:
            raise ValueError(f"i must be a head index in 0..{self.h - 1}, got {i!r}")
        cols = slice(i * self.d_k, (i + 1) * self.d_k)
        return self.W_Q[:, cols], self.W_K[:, cols], self.W_V[:, cols]

    def __call__(self, x_q, x_kv=None, mask=None, causal=False):
        """``(output, weights)`` as :func:`multi_head_attention`."""
        x_q = check.array("x_q", x_q, min_ndim=2, last=self.d_model)
        return multi_head_attention(x_q, x_kv, self.W_Q, self.W_K, self.W_V, self.W_O, self.h, mask, causal)

    def trace(self, x_q, x_kv=None, mask=None, causal=False):
        """Run the block and keep every intermediate (a :class:`Trace`)."""
        x_q = check.array("x_q", x_q, min_ndim=2, last=self.d_model)
        Q, K, V, heads, weights = attention_heads(x_q, x_kv, self.W_Q, self.W_K, self.W_V, self.h, mask, causal)
        scores = Q @ np.swapaxes(K, -1, -2)  # (..., h, n_q, n_k)
        scaled = scores / scores.dtype.type(np.sqrt(self.d_k))
        concat = concat_heads(heads)  # (..., n_q, d_model)
        return Trace(Q, K, V, scores, scaled, weights, heads, concat, concat @ self.W_O)

    def __repr__(self):
        return f"MultiHeadAttention(d_model={self.d_model}, h={self.h}, d_k={self.d_k})"


def summed_heads_attention(x_q, x_kv, W_Q, W_K, W_V, W_O_small, h, mask=None, causal=False):
    """BROKEN on purpose (Problem 3.2): heads are *summed*, then ``W_O`` is d_k x d_model.

    Returns ``(output, summed)``: output (..., n_q, d_model) and the (..., n_q, d_k)
    sum of the heads. Summing is concatenating with every head's block of ``W_O`` tied to
    ``W_O_small``, so the output has rank at most d_k, and ``W_O_small`` weighs feature j of
    every head alike.
    """
    x_q = check.array("x_q", x_q, min_ndim=2)
    d_model = x_q.shape[-1]
    d_k = head_dim(d_model, h)
    W_O_small = check.array("W_O_small", W_O_small, ndim=2)
    check.shape("W_O_small", W_O_small, (d_k, d_model))
    _, _, _, heads, _ = attention_heads(x_q, x_kv, W_Q, W_K, W_V, h, mask, causal)  # (..., h, n_q, d_k)
    summed = heads.sum(axis=-3)  # (..., n_q, d_k): h heads through one d_k-wide sum
    return summed @ W_O_small, summed  # (..., n_q, d_model), (..., n_q, d_k)


def _count(heads):
    """How many matrices a list (or stacked array) of per-head matrices holds; None if it is not one."""
    try:
        return len(heads)
    except TypeError:
        return None


def shared_projection_attention(x_q, x_kv, W_Q_i, W_K_i, W_V_i, W_O, h, mask=None, causal=False):
    """BROKEN on purpose (Problem 3.3): every head uses the *same* d_model x d_k matrices.

    Returns ``(output, weights)`` as :func:`multi_head_attention`; all h heads'
    weights are identical and the h blocks of the concatenation are duplicates.
    """
    x_q = check.array("x_q", x_q, min_ndim=2)
    d_model = x_q.shape[-1]
    d_k = head_dim(d_model, h)
    shared = []
    for name, W in (("W_Q_i", W_Q_i), ("W_K_i", W_K_i), ("W_V_i", W_V_i)):
        W = check.array(name, W, ndim=2)
        check.shape(name, W, (d_model, d_k))
        shared.append(np.tile(W, (1, h)))  # (d_model, h*d_k): the same columns h times
    return multi_head_attention(x_q, x_kv, *shared, W_O, h, mask=mask, causal=causal)
