"""The maths of multi-head attention, in numpy.

Notation follows the exercise sheet: ``d_model`` is the width of a token, ``h``
the number of heads, ``d_k = d_v = d_model / h`` the width of one head, ``n_q``
and ``n_k`` the numbers of query and key tokens (``n`` when they are equal).
Weights are applied as ``x @ W``, head ``i`` uses columns ``i*d_k:(i+1)*d_k``,
and boolean masks say True where a query *may attend* (as PyTorch's
``scaled_dot_product_attention``; ``nn.MultiheadAttention`` uses the opposite).
"""

import math
import numbers

import numpy as np

from . import _validate as check


def head_dim(d_model, h):
    """Return ``d_k = d_model / h``; ``h`` must divide ``d_model``."""
    try:
        d_model, h = check.positive_int("d_model", d_model), check.positive_int("h", h)
    except ValueError as exc:
        raise ValueError(f"{exc} (d_model={d_model!r}, h={h!r})") from None
    if d_model % h:
        raise ValueError(f"h must divide d_model: d_model={d_model}, h={h} leaves a remainder of {d_model % h}")
    return d_model // h


def softmax(x, axis=-1):
    """Numerically stable softmax along ``axis`` (subtracts the maximum first)."""
    x = check.array("x", x)
    if isinstance(axis, bool) or not isinstance(axis, numbers.Integral) or not -x.ndim <= axis < x.ndim:
        raise ValueError(f"axis must be in [{-x.ndim}, {x.ndim}) for x of shape {x.shape}, got {axis}")
    with np.errstate(over="ignore"):  # a difference below -1.8e308 becomes -inf, and exp(-inf) = 0
        e = np.exp(x - x.max(axis=axis, keepdims=True))  # the largest entry becomes 0: exp cannot overflow
    return e / e.sum(axis=axis, keepdims=True)


def causal_mask(n_q, n_k=None):
    """Boolean ``(n_q, n_k)`` mask, True where query i may attend to key j (j <= i).

    Aligned top-left like PyTorch's ``is_causal``: query i sees keys 0..i.
    """
    n_q = check.positive_int("n_q", n_q)
    n_k = n_q if n_k is None else check.positive_int("n_k", n_k)
    return np.tri(n_q, n_k, dtype=bool)


def _mask(mask, causal, n_q, n_k, batch=()):
    """Combine an optional boolean ``mask`` with the causal one; None means no mask.

    ``mask`` has shape (..., n_q, n_k) whose leading dimensions broadcast to ``batch``.
    """
    if mask is not None:
        try:
            mask = np.asarray(mask)
        except ValueError as exc:  # a ragged list
            raise ValueError(f"mask must be a boolean array: {exc}") from None
        if mask.dtype != bool:
            raise ValueError(f"mask must be boolean (True = may attend), got dtype {mask.dtype}")
        if mask.ndim < 2 or mask.shape[-2:] != (n_q, n_k):
            raise ValueError(f"mask must have shape (..., {n_q}, {n_k}) = (..., n_q, n_k), got {mask.shape}")
        check.batch("mask", mask.shape[:-2], batch)
    if not isinstance(causal, (bool, np.bool_)):
        raise ValueError(f"causal must be True or False, got {causal!r}")
    if causal:
        tri = causal_mask(n_q, n_k)
        mask = tri if mask is None else mask & tri
    return mask


def _masked_softmax(scores, mask):
    """Softmax over the last axis where ``mask`` allows (True); a row with nothing allowed gets zero weights."""
    if mask is not None:
        scores = np.where(mask, scores, -np.inf)  # exp(-inf) = 0: no weight on a masked key
    peak = scores.max(axis=-1, keepdims=True)  # (..., n_q, 1)
    peak[peak == -np.inf] = 0  # a row with nothing to attend to stays at -inf, not NaN
    if not np.isfinite(peak).all():
        raise ValueError("the scores Q K^T overflow their dtype: the inputs are too large")
    with np.errstate(over="ignore"):  # as in softmax
        e = np.exp(scores - peak)  # each row's largest score becomes 0: exp cannot overflow
    total = e.sum(axis=-1, keepdims=True)  # (..., n_q, 1): >= 1, or 0 for a fully masked row
    return e / np.where(total == 0, 1, total)  # a fully masked row keeps its zero weights


def scaled_dot_product_attention(Q, K, V, mask=None, causal=False, scale=None):
    """Attention of queries ``Q`` over keys ``K`` and values ``V``.

    Parameters
    ----------
    Q : array of shape (..., n_q, d_k)
    K : array of shape (..., n_k, d_k)
    V : array of shape (..., n_k, d_v)
    mask : optional boolean array of shape (..., n_q, n_k), True = may attend; its leading
        dimensions must broadcast to the batch.
    causal : if True, query i also may not attend to keys after position i.
    scale : multiplies the scores; defaults to ``1 / sqrt(d_k)``.

    Returns
    -------
    output : array of shape (..., n_q, d_v)
    weights : array of shape (..., n_q, n_k); each row sums to 1.

    A query row whose keys are all masked gets all-zero weights and a zero
    output, never NaN.
    """
    Q = check.array("Q", Q, min_ndim=2)
    K = check.array("K", K, min_ndim=2, last=Q.shape[-1])
    V = check.array("V", V, min_ndim=2)
    if V.shape[-2] != K.shape[-2]:
        raise ValueError(f"V must have as many rows as K (n_k={K.shape[-2]}), got shape {V.shape}")
    batch = ()
    for name, a in (("Q", Q), ("K", K), ("V", V)):
        try:
            batch = np.broadcast_shapes(batch, a.shape[:-2])
        except ValueError:
            raise ValueError(f"{name} must have batch dimensions that broadcast with {batch}, got {a.shape}") from None
    if scale is not None:
        scale = check.positive_real("scale", scale)
    return _attend(Q, K, V, _mask(mask, causal, Q.shape[-2], K.shape[-2], batch), scale)


def _attend(Q, K, V, mask, scale=None):
    """Unchecked :func:`scaled_dot_product_attention`; ``mask`` already combined."""
    if scale is None:
        scale = 1 / math.sqrt(Q.shape[-1])  # a Python float: float32 inputs stay float32
    scores = Q @ np.swapaxes(K, -1, -2) * scale  # (..., n_q, n_k)
    weights = _masked_softmax(scores, mask)
    return weights @ V, weights  # (..., n_q, d_v), (..., n_q, n_k)


def split_heads(x, h):
    """``(..., n, d_model)`` -> ``(..., h, n, d_k)``: head i is columns i*d_k:(i+1)*d_k."""
    x = check.array("x", x, min_ndim=2)
    head_dim(x.shape[-1], h)
    return _split(x, h)


def _split(x, h):
    *batch, n, d_model = x.shape
    return np.swapaxes(x.reshape(*batch, n, h, d_model // h), -2, -3)  # (..., h, n, d_k)


def concat_heads(heads):
    """``(..., h, n, d_v)`` -> ``(..., n, h*d_v)``: the heads side by side (not summed)."""
    return _concat(check.array("heads", heads, min_ndim=3))


def _concat(heads):
    *batch, h, n, d_v = heads.shape
    return np.swapaxes(heads, -2, -3).reshape(*batch, n, h * d_v)  # (..., n, d_model)


def check_inputs(x_q, x_kv, W_Q, W_K, W_V, W_O, h):
    """Validate the arguments of :func:`multi_head_attention`; return them as arrays (``W_O`` None: not
    checked, for the heads before they are joined)."""
    x_q = check.array("x_q", x_q, min_ndim=2)
    d_model = x_q.shape[-1]
    head_dim(d_model, h)
    x_kv = x_q if x_kv is None else check.array("x_kv", x_kv, min_ndim=2, last=d_model)
    if x_kv.shape[:-2] != x_q.shape[:-2]:
        raise ValueError(f"x_kv must have the batch shape of x_q {x_q.shape[:-2]}, got {x_kv.shape[:-2]}")
    Ws = []
    for name, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V), ("W_O", W_O)):
        if W is None and name == "W_O":
            Ws.append(None)
            continue
        W = check.array(name, W, ndim=2)
        check.shape(name, W, (d_model, d_model))
        Ws.append(W)
    return (x_q, x_kv, *Ws)


def multi_head_attention(x_q, x_kv, W_Q, W_K, W_V, W_O, h, mask=None, causal=False):
    """Multi-head attention of ``x_q`` over ``x_kv`` (self-attention when they are the same).

    Parameters
    ----------
    x_q : array of shape (..., n_q, d_model)
    x_kv : array of shape (..., n_k, d_model), or None for self-attention.
    W_Q, W_K, W_V, W_O : arrays of shape (d_model, d_model), applied as ``x @ W``.
    h : number of heads; must divide d_model.
    mask, causal : as in :func:`scaled_dot_product_attention`.

    Returns
    -------
    output : array of shape (..., n_q, d_model)
    weights : array of shape (..., h, n_q, n_k)
    """
    x_q, x_kv, W_Q, W_K, W_V, W_O = check_inputs(x_q, x_kv, W_Q, W_K, W_V, W_O, h)
    _, _, _, heads, weights = attention_heads(x_q, x_kv, W_Q, W_K, W_V, h, mask, causal)
    return _concat(heads) @ W_O, weights  # (..., n_q, d_model), (..., h, n_q, n_k)


def attention_heads(x_q, x_kv, W_Q, W_K, W_V, h, mask=None, causal=False):
    """The h heads of :func:`multi_head_attention`, before they are joined: ``(Q, K, V, heads, weights)``.

    Arguments as in :func:`multi_head_attention` (no ``W_O``). Returns Q (..., h, n_q, d_k),
    K (..., h, n_k, d_k), V (..., h, n_k, d_v), heads (..., h, n_q, d_v) and weights (..., h, n_q, n_k):
    head i is ``weights[..., i, :, :] @ V[..., i, :, :]``.
    """
    x_q, x_kv, W_Q, W_K, W_V, _ = check_inputs(x_q, x_kv, W_Q, W_K, W_V, None, h)
    mask = _heads_mask(mask, causal, x_q, x_kv)  # (..., 1, n_q, n_k) or None
    Q = _split(x_q @ W_Q, h)  # (..., h, n_q, d_k)
    K = _split(x_kv @ W_K, h)  # (..., h, n_k, d_k)
    V = _split(x_kv @ W_V, h)  # (..., h, n_k, d_v)
    heads, weights = _attend(Q, K, V, mask)  # (..., h, n_q, d_v), (..., h, n_q, n_k)
    return Q, K, V, heads, weights


def _heads_mask(mask, causal, x_q, x_kv):
    """The mask of :func:`multi_head_attention`, (..., 1, n_q, n_k): the same for every head."""
    mask = _mask(mask, causal, x_q.shape[-2], x_kv.shape[-2], x_q.shape[:-2])
    return None if mask is None else np.expand_dims(mask, -3)  # (..., 1, n_q, n_k)
