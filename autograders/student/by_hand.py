"""Heads built by hand (beyond the sheet, Problem 4.4): the data the student's matrices run on (the
workbook's content, beside the declarations; a notebook imports it: ``from autograders.student import by_hand``).

- A short sentence as one-hot embeddings: each row of ``X`` is ``[one-hot word | one-hot position]``
  (:func:`one_hot_embeddings`), so ``d_model = len(VOCAB) + n``. A head whose ``W_Q``, ``W_K`` the
  student chooses runs on it through :func:`~mha_core.attention.scaled_dot_product_attention`
  (:func:`head_weights`), causal as in a decoder.
- Keys and values in the style of CS224n's self-attention exercise (:data:`KEYS`, :data:`VALUES`):
  orthonormal keys, so a query can pick out two of them and average their values.
"""

import numpy as np

from mha_core import _validate as check
from mha_core.attention import scaled_dot_product_attention

SENTENCE = "the cat sat on the mat".split()
VOCAB = sorted(set(SENTENCE))  # ['cat', 'mat', 'on', 'sat', 'the']
N = len(SENTENCE)
D_MODEL = len(VOCAB) + N

# Orthonormal keys (the rows of a 4 x 4 Hadamard matrix, halved) and their values.
KEYS = np.array([[1.0, 1.0, 1.0, 1.0], [1.0, -1.0, 1.0, -1.0], [1.0, 1.0, -1.0, -1.0], [1.0, -1.0, -1.0, 1.0]]) / 2
VALUES = np.array([[2.0, 0.0, 1.0, 0.0], [0.0, 3.0, 0.0, 1.0], [1.0, 1.0, 4.0, 0.0], [-1.0, 0.0, 1.0, 2.0]])
PAIR = (2, 4)  # the values to average: v_2 and v_4 (counted from 1, as the keys are named k_1 ... k_4)


def one_hot_embeddings(words, vocab=VOCAB):
    """``(n, len(vocab) + n)``: row i is the one-hot code of word i, then the one-hot code of position i."""
    words = list(words)
    unknown = [w for w in words if w not in vocab]
    if not words or unknown:
        raise ValueError(f"words must be a non-empty list of words from {vocab}, got unknown {unknown}")
    n = len(words)
    X = np.zeros((n, len(vocab) + n))
    X[np.arange(n), [vocab.index(w) for w in words]] = 1
    X[np.arange(n), len(vocab) + np.arange(n)] = 1
    return X


def head_weights(X, W_Q, W_K):
    """The causal attention weights ``(n, n)`` of the head ``W_Q``, ``W_K`` (each ``(d_model, d_k)``) on ``X``."""
    X = check.array("X", X, ndim=2)
    W_Q = check.array("W_Q", W_Q, ndim=2)
    W_K = check.array("W_K", W_K, ndim=2)
    if W_Q.shape[0] != X.shape[1] or W_K.shape != W_Q.shape:
        raise ValueError(f"W_Q and W_K must both have shape ({X.shape[1]}, d_k), got {W_Q.shape} and {W_K.shape}")
    Q, K = X @ W_Q, X @ W_K
    return scaled_dot_product_attention(Q, K, X, causal=True)[1]


def other_sentences(count, seed=0, n=N):
    """``count`` sentences of ``n`` words from :data:`VOCAB` in random orders (repeats allowed), from ``seed``."""
    rng = np.random.default_rng(seed)
    return [[VOCAB[i] for i in rng.integers(0, len(VOCAB), n)] for _ in range(check.positive_int("count", count))]

