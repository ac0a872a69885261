"""Example inputs and the names the figures and explorers give them (numpy only): reproducible
embeddings, the valid numbers of heads, the constructed heads' titles. The workbook's sentences are
its content, not the library's: the figures and explorers take them as arguments."""

import numpy as np

from . import _validate as check

UNTRAINED = "random (untrained) weights"  # said in the title of every figure drawn from random projections

PATTERN_TITLES = {
    "previous": "previous token",
    "same word": "same word elsewhere",
    "first": "first token (sink)",
    "pronoun": "pronoun → its noun",
    "translation": "word → its translation",
    "same position": "same position (word by word)",
    "random": "random projections",
}


def example_embeddings(n, d_model, seed=0):
    """A reproducible ``(n, d_model)`` float64 input: standard normal rows.

    Rows do not depend on ``n``: the first rows of a longer input are the same.
    """
    n = check.positive_int("n", n)
    d_model = check.positive_int("d_model", d_model)
    return np.random.default_rng(seed).standard_normal((n, d_model))


def head_options(d_model):
    """The valid numbers of heads for ``d_model``: its divisors, ascending."""
    d_model = check.positive_int("d_model", d_model)
    small = [k for k in range(1, int(d_model**0.5) + 1) if d_model % k == 0]
    return sorted(set(small + [d_model // k for k in small]))
