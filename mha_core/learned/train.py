"""Train the learned heads' model (:mod:`mha_core.learned.model`) in numpy, deterministically.

``python -m mha_core.learned.train`` retrains it from ``SEED`` and writes ``weights.npz`` beside this
file (about 15 s of CPU on one core: 600 Adam steps of 128 sequences). The forward pass here is the
model's, written out so that its gradients can be taken by hand (backpropagation through causal
softmax attention, then Adam); a test checks that it gives what :meth:`TinyModel.run` gives, and that
retraining gives the shipped weights.
"""

import argparse
import time
from pathlib import Path

import numpy as np

from .model import WEIGHTS, TinyModel
from .task import N, VOCAB, induction_batch

SEED = 0
D_MODEL, H, LAYERS = 32, 2, 2
STEPS, BATCH, LEARNING_RATE = 600, 128, 3e-3


def initial(seed=SEED, d_model=D_MODEL, h=H, layers=LAYERS, n=N, vocab=VOCAB):
    """Random starting weights, from ``seed``."""
    rng = np.random.default_rng(seed)
    scale = 1 / np.sqrt(d_model)
    layer_weights = tuple(tuple(rng.normal(0, scale, (d_model, d_model)) for _ in range(4)) for _ in range(layers))
    return TinyModel(rng.normal(0, 1, (vocab, d_model)), rng.normal(0, 1, (n, d_model)), layer_weights,
                     rng.normal(0, scale, (d_model, vocab)), h)


def _split(x, h):  # (B, n, d) -> (B, h, n, d_k)
    B, n, d = x.shape
    return x.reshape(B, n, h, d // h).transpose(0, 2, 1, 3)


def _concat(x):  # (B, h, n, d_k) -> (B, n, d)
    B, h, n, d_k = x.shape
    return x.transpose(0, 2, 1, 3).reshape(B, n, h * d_k)


def attention_forward(x, weights, h):
    """One causal attention layer on a batch ``x`` (B, n, d), written out for training: ``(output, cache)``,
    the cache holding what the backward pass needs (its weights at index 4)."""
    W_Q, W_K, W_V, W_O = weights
    n = x.shape[1]
    Q, K, V = (_split(x @ W, h) for W in (W_Q, W_K, W_V))
    scale = 1 / np.sqrt(Q.shape[-1])
    S = (Q @ K.transpose(0, 1, 3, 2)) * scale
    S = np.where(np.tri(n, dtype=bool), S, -np.inf)
    S = S - S.max(axis=-1, keepdims=True)
    A = np.exp(S)
    A /= A.sum(axis=-1, keepdims=True)
    C = _concat(A @ V)
    return C @ W_O, (x, Q, K, V, A, C, scale)


def _attention_backward(d_out, weights, cache, h):
    W_Q, W_K, W_V, W_O = weights
    x, Q, K, V, A, C, scale = cache
    dW_O = np.einsum("bni,bnj->ij", C, d_out)
    d_heads = _split(d_out @ W_O.T, h)
    dA = d_heads @ V.transpose(0, 1, 3, 2)
    dV = A.transpose(0, 1, 3, 2) @ d_heads
    dS = A * (dA - (dA * A).sum(axis=-1, keepdims=True))  # the softmax's Jacobian; masked entries have A = 0
    dQ = (dS @ K) * scale
    dK = (dS.transpose(0, 1, 3, 2) @ Q) * scale
    dQ, dK, dV = _concat(dQ), _concat(dK), _concat(dV)
    grads = tuple(np.einsum("bni,bnj->ij", x, d) for d in (dQ, dK, dV)) + (dW_O,)
    dx = dQ @ W_Q.T + dK @ W_K.T + dV @ W_V.T
    return dx, grads


def loss_and_gradients(model, tokens, targets):
    """The loss and its gradient for every weight (a TinyModel): the cross-entropy of the last
    position's prediction (B, the induction target) plus that of positions 1 .. n - 2 predicting
    the first token (which a head must copy along: a second job for the heads)."""
    B, n = tokens.shape
    x = model.E[tokens] + model.P[:n]
    caches = []
    for weights in model.layers:
        out, cache = attention_forward(x, weights, model.h)
        caches.append(cache)
        x = x + out
    scored = x[:, 1:]  # positions 1 .. n - 1
    logits = scored @ model.W_U  # (B, n - 1, vocab)
    logits = logits - logits.max(axis=-1, keepdims=True)
    p = np.exp(logits)
    p /= p.sum(axis=-1, keepdims=True)
    wanted = np.concatenate([np.repeat(tokens[:, :1], n - 2, axis=1), targets[:, None]], axis=1)  # (B, n - 1)
    weight = np.full(n - 1, 1 / (n - 2))
    weight[-1] = 1.0  # the induction target counts as much as all the first-token ones together
    rows, cols = np.arange(B)[:, None], np.arange(n - 1)[None, :]
    picked = p[rows, cols, wanted]
    loss = float(-(np.log(picked) * weight).sum(axis=1).mean())
    d_logits = p
    d_logits[rows, cols, wanted] -= 1
    d_logits *= weight[None, :, None] / B
    dW_U = np.einsum("bni,bnj->ij", scored, d_logits)
    dx = np.zeros_like(x)
    dx[:, 1:] = d_logits @ model.W_U.T
    layer_grads = []
    for weights, cache in zip(reversed(model.layers), reversed(caches)):
        d_in, grads = _attention_backward(dx, weights, cache, model.h)
        dx = dx + d_in  # the residual stream carries dx past the layer as well
        layer_grads.append(grads)
    dE = np.zeros_like(model.E)
    np.add.at(dE, tokens, dx)
    dP = np.zeros_like(model.P)
    dP[:n] = dx.sum(axis=0)
    return loss, TinyModel(dE, dP, tuple(reversed(layer_grads)), dW_U, model.h)


def _flat(model):
    return [model.E, model.P, *(W for layer in model.layers for W in layer), model.W_U]


def _unflat(arrays, h, layers):
    E, P, *rest = arrays
    Ws, W_U = rest[:-1], rest[-1]
    return TinyModel(E, P, tuple(tuple(Ws[4 * i: 4 * i + 4]) for i in range(layers)), W_U, h)


def train(seed=SEED, steps=STEPS, batch=BATCH, learning_rate=LEARNING_RATE, log=None):
    """The trained model: Adam on fresh batches of the task, everything drawn from ``seed``."""
    model = initial(seed)
    rng = np.random.default_rng(seed + 1)
    params = [a.copy() for a in _flat(model)]
    m = [np.zeros_like(a) for a in params]
    v = [np.zeros_like(a) for a in params]
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    for step in range(1, steps + 1):
        tokens, targets, _ = induction_batch(rng, batch)
        loss, grads = loss_and_gradients(_unflat(params, model.h, len(model.layers)), tokens, targets)
        for a, g, m_a, v_a in zip(params, _flat(grads), m, v):
            m_a *= beta1
            m_a += (1 - beta1) * g
            v_a *= beta2
            v_a += (1 - beta2) * g * g
            a -= learning_rate * (m_a / (1 - beta1**step)) / (np.sqrt(v_a / (1 - beta2**step)) + eps)
        if log is not None and (step % 250 == 0 or step == 1):
            log(f"step {step:5d}  loss {loss:.4f}")
    return _unflat(params, model.h, len(model.layers))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name(WEIGHTS), help="where to write the weights")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    model = train(log=print)
    np.savez(args.out, **model.as_arrays())
    print(f"accuracy {model.accuracy():.3f}, {time.perf_counter() - start:.1f} s; written to {args.out}")


if __name__ == "__main__":
    main()
