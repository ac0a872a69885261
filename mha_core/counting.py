"""Shapes, parameters and operation counts of a multi-head attention block."""

from typing import NamedTuple

import numpy as np

from . import _validate as check
from .attention import head_dim


def parameter_count(d_model, h, bias=False):
    """Parameters of W_Q, W_K, W_V, W_O: 4 d_model^2, plus 4 d_model with biases.

    ``h`` only has to divide ``d_model``: the count does not depend on it
    (Problem 4.1). With biases it matches ``torch.nn.MultiheadAttention``.
    """
    d_k = head_dim(d_model, h)
    if not isinstance(bias, (bool, np.bool_)):
        raise ValueError(f"bias must be True or False, got {bias!r}")
    weights = 3 * h * d_model * d_k + d_model * d_model  # h heads of W_i^Q, W_i^K, W_i^V, then W^O
    return weights + (4 * d_model if bias else 0)


def flop_count(d_model, h, n_q, n_k=None):
    """Operation count of one forward pass, stage by stage.

    Matrix products are counted in multiply-adds; the softmax in exponentials
    (one per score). ``n_k`` defaults to ``n_q`` (self-attention).
    The multiply-adds do not depend on ``h`` (Problem 3.1): ``h`` heads of width
    ``d_k = d_model / h`` cost what one head of width ``d_model`` costs. The
    softmax does grow with ``h``: there are ``h`` score matrices of n_q x n_k.
    """
    d_k = head_dim(d_model, h)
    n_q = check.positive_int("n_q", n_q)
    n_k = n_q if n_k is None else check.positive_int("n_k", n_k)
    stages = {
        "projections": (n_q + 2 * n_k) * d_model * d_model,  # x_q W_Q, x_kv W_K, x_kv W_V
        "scores": h * n_q * n_k * d_k,  # Q_i K_i^T for every head
        "softmax": h * n_q * n_k,  # one exponential per score
        "weighted_sum": h * n_q * n_k * d_k,  # weights_i V_i for every head
        "output_projection": n_q * d_model * d_model,  # concat W_O
    }
    stages["multiply_adds"] = sum(v for k, v in stages.items() if k != "softmax")
    stages["total"] = stages["multiply_adds"] + stages["softmax"]
    return stages


class ShapeRow(NamedTuple):
    name: str
    shape: tuple
    meaning: str


def shape_table(d_model, h, n_q, n_k=None):
    """Every intermediate of the block with its shape, in the order it is computed."""
    d_k = head_dim(d_model, h)
    n_q = check.positive_int("n_q", n_q)
    cross = n_k is not None
    n_k = n_q if n_k is None else check.positive_int("n_k", n_k)
    rows = [ShapeRow("X" if not cross else "X_q", (n_q, d_model), "input tokens" + (" (queries)" if cross else ""))]
    if cross:
        rows.append(ShapeRow("X_kv", (n_k, d_model), "encoder tokens (keys and values)"))
    rows += [
        ShapeRow("W_i^Q, W_i^K, W_i^V", (d_model, d_k), f"one head's projections (d_k = {d_model}/{h})"),
        ShapeRow("Q_i", (n_q, d_k), "one head's queries"),
        ShapeRow("K_i, V_i", (n_k, d_k), "one head's keys and values"),
        ShapeRow("Q_i K_i^T", (n_q, n_k), "scores: one per (query, key) pair"),
        ShapeRow("softmax(Q_i K_i^T / √d_k)", (n_q, n_k), "weights: each row sums to 1"),
        ShapeRow("head_i", (n_q, d_k), "weighted sum of V_i"),
        ShapeRow("Concat(head_1..head_h)", (n_q, h * d_k), f"h·d_v = {h}·{d_k} = {d_model}"),
        ShapeRow("W^O", (d_model, d_model), "output projection"),
        ShapeRow("output", (n_q, d_model), "same width as the input"),
    ]
    return rows
