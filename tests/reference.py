"""A second, independent multi-head attention: plain Python loops and ``math.exp``.

It follows the exercise sheet's definitions one number at a time, with no numpy
maths, so that the tests can compare ``mha_core`` against it:

    Q_i = x_q W_i^Q,  K_i = x_kv W_i^K,  V_i = x_kv W_i^V   (W_i = columns i*d_k:(i+1)*d_k)
    head_i = softmax(Q_i K_i^T / sqrt(d_k)) V_i              (softmax over the keys of each row)
    output = [head_1 | ... | head_h] W^O

Arguments are nested lists (anything with ``.tolist()`` is converted); results
are nested lists. A boolean mask says True where a query may attend; a query
with no key to attend to gets zero weights and a zero output.
"""

import math


def _lists(a):
    return a.tolist() if hasattr(a, "tolist") else a


def matmul(A, B):
    """The product of an (n x m) and an (m x p) matrix, as lists."""
    return [[sum(row[t] * B[t][c] for t in range(len(B))) for c in range(len(B[0]))] for row in A]


def columns(W, start, stop):
    """Columns start..stop-1 of W: head i's slice of a d_model x d_model matrix."""
    return [row[start:stop] for row in W]


def attention(Q, K, V, mask=None, causal=False, scale=None):
    """One head, unbatched: Q (n_q x d_k), K (n_k x d_k), V (n_k x d_v). Returns (output, weights)."""
    Q, K, V, mask = _lists(Q), _lists(K), _lists(V), _lists(mask)
    d_k, n_k, d_v = len(Q[0]), len(K), len(V[0])
    scale = 1 / math.sqrt(d_k) if scale is None else scale
    output, weights = [], []
    for i, q in enumerate(Q):
        allowed = [j for j in range(n_k) if (mask is None or mask[i][j]) and (not causal or j <= i)]
        score = {j: scale * sum(q[t] * K[j][t] for t in range(d_k)) for j in allowed}
        if not allowed:
            weights.append([0.0] * n_k)
            output.append([0.0] * d_v)
            continue
        top = max(score.values())
        e = {j: math.exp(s - top) for j, s in score.items()}
        total = sum(e.values())
        w = [e[j] / total if j in e else 0.0 for j in range(n_k)]
        weights.append(w)
        output.append([sum(w[j] * V[j][c] for j in range(n_k)) for c in range(d_v)])
    return output, weights


def multi_head_attention(x_q, x_kv, W_Q, W_K, W_V, W_O, h, mask=None, causal=False):
    """Unbatched (x_q of n_q x d_model) or with one batch dimension (b x n_q x d_model).

    ``mask`` is n_q x n_k, or b x n_q x n_k with a batch. Returns (output, weights),
    output n_q x d_model and weights h x n_q x n_k (each with the batch in front).
    """
    x_q, x_kv, mask = _lists(x_q), _lists(x_kv), _lists(mask)
    x_kv = x_q if x_kv is None else x_kv
    if isinstance(x_q[0][0], list):  # a batch: one sequence at a time
        results = []
        for b in range(len(x_q)):
            m = mask[b] if mask is not None and isinstance(mask[0][0], list) else mask
            results.append(multi_head_attention(x_q[b], x_kv[b], W_Q, W_K, W_V, W_O, h, m, causal))
        return [r[0] for r in results], [r[1] for r in results]
    W_Q, W_K, W_V, W_O = (_lists(W) for W in (W_Q, W_K, W_V, W_O))
    d_model = len(W_Q)
    d_k = d_model // h
    heads, weights = [], []
    for i in range(h):
        start, stop = i * d_k, (i + 1) * d_k
        Q_i = matmul(x_q, columns(W_Q, start, stop))
        K_i = matmul(x_kv, columns(W_K, start, stop))
        V_i = matmul(x_kv, columns(W_V, start, stop))
        head_i, weights_i = attention(Q_i, K_i, V_i, mask, causal)
        heads.append(head_i)
        weights.append(weights_i)
    concat = [sum((heads[i][row] for i in range(h)), []) for row in range(len(x_q))]
    return matmul(concat, W_O), weights


def masked_softmax(scores, valid_lens, causal=False):
    """Problem 4.6's weights, ``scores`` (batch, h, n_q, n_k): each query's softmax over the keys it may see
    (j < valid_lens[b], and j <= i when ``causal``), 0 on every other key and on a row that sees none."""
    out = []
    for b, per_head in enumerate(_lists(scores)):
        out.append([])
        for rows in per_head:
            out[-1].append([])
            for i, row in enumerate(rows):
                seen = [j for j in range(len(row)) if j < valid_lens[b] and (not causal or j <= i)]
                top = max((row[j] for j in seen), default=0.0)
                exps = {j: math.exp(row[j] - top) for j in seen}
                out[-1][-1].append([exps[j] / sum(exps.values()) if j in exps else 0.0 for j in range(len(row))])
    return out
