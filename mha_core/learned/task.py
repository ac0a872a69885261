"""The toy task of the learned heads: induction, "after A B ... A, predict B".

A sequence holds ``n - 1`` different tokens drawn from a vocabulary of ``vocab`` tokens, then
repeats one of them, A = ``x[j]`` (never the last two of the first ``n - 1``); the target is the
token that followed A the first time, B = ``x[j + 1]``. Only the last position is scored.
One attention layer cannot solve it (the value at A's first position holds A, not B); two can:
a previous-token head writes "x[i - 1]" into each position, then an induction head at the
last position looks for the position whose previous token is the current one.
"""

import numpy as np

from .. import _validate as check

N = 8  # tokens per sequence
VOCAB = 16  # the vocabulary: tokens 0..15, written as letters A..P
LETTERS = "ABCDEFGHIJKLMNOP"


def induction_batch(rng, batch, n=N, vocab=VOCAB):
    """``(tokens, targets, j)``: ``batch`` sequences of the task, shapes (batch, n), (batch,), (batch,).

    ``rng`` is a ``numpy.random.Generator``; ``j`` is the first position of the repeated token A.
    """
    batch, n, vocab = (check.positive_int(k, v) for k, v in (("batch", batch), ("n", n), ("vocab", vocab)))
    if n < 4 or vocab < n - 1:
        raise ValueError(f"n must be >= 4 and vocab >= n - 1, got n={n}, vocab={vocab}")
    first = np.argsort(rng.random((batch, vocab)), axis=1)[:, : n - 1]  # n - 1 different tokens per row
    j = rng.integers(0, n - 3, size=batch)  # A's first position: B = x[j + 1] is before position n - 2
    rows = np.arange(batch)
    tokens = np.concatenate([first, first[rows, j][:, None]], axis=1)  # the last token repeats A
    return tokens, first[rows, j + 1], j


def evaluation_set(size=2000, seed=1234):
    """The fixed sequences every accuracy of the workbook is measured on (``seed`` apart from training's)."""
    return induction_batch(np.random.default_rng(seed), size)


def spelled(tokens):
    """A sequence of tokens as letters: [0, 1, 2] -> ['A', 'B', 'C']."""
    return [LETTERS[int(t)] for t in np.asarray(tokens).ravel()]
