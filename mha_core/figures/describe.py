"""Alt text from the data: what a heatmap or a head's panel shows, in words (numpy only, no drawing)."""

import numpy as np


def describe_rows(data, row_labels, col_labels, name="Attention weights", what="key"):
    """Alt text from the data: each query's strongest ``what`` (key, or score) and its value (the first 12
    rows, then how many more)."""
    w = np.ma.filled(np.ma.masked_invalid(np.ma.asarray(data, float)), -np.inf)
    n_q, n_k = w.shape
    parts = [f"{row_labels[i]} → {col_labels[j]} {w[i, j]:.2f}" for i, j in enumerate(w.argmax(axis=1))]
    more = [f"… {n_q - 12} more rows"] if n_q > 12 else []
    return f"{name}, {n_q} queries × {n_k} keys. Strongest {what} of each query: " + "; ".join(parts[:12] + more) + "."


PLACES = ("itself", "the previous token", "the first token", "another token")  # of a self-attention row's top key


def describe_panel(w, name):
    """Alt text for one head's panel: where its rows' strongest weights fall (in a square panel: itself,
    the previous token, the first token or another; else key j), and how strong they are on average."""
    w = np.ma.filled(np.ma.masked_invalid(np.ma.asarray(w, float)), -np.inf)
    n_q, n_k = w.shape
    top = w.argmax(axis=1)
    if n_q == n_k:
        where = [PLACES[0] if j == i else PLACES[1] if j == i - 1 else PLACES[2] if j == 0 else PLACES[3]
                 for i, j in enumerate(top)]
        order = PLACES
    else:
        where = [f"key {j + 1}" for j in top]
        order = dict.fromkeys(where)
    said = ", ".join(f"{place} in {where.count(place)}" for place in order if place in where)
    return f"{name}: strongest key is {said} of {n_q} rows (mean top weight {np.mean(w.max(axis=1)):.2f})"
