"""The tiny attention-only model of the learned heads: two layers of two heads, no MLP, no layer norm.

``x_0 = E[tokens] + P``; each layer adds causal multi-head attention to the residual stream,
``x_{l+1} = x_l + MHA_l(x_l)`` (:func:`mha_core.multi_head_attention`); the logits are
``x_2 @ W_U``. The last position predicts B (:mod:`.task`); positions 1 .. n - 2 predict the first
token, a second job that keeps a second head busy. Its weights are trained by :mod:`mha_core.learned.train` and
shipped as ``weights.npz`` (:func:`load`). Heads are named ``(layer, head)`` from 1: ``(1, 2)``
is the second head of the first layer.

Ablating a head zeroes its output before W_O (the rows ``i*d_k:(i+1)*d_k`` of W_O: exactly
what head i adds to the residual stream), so the rest of the model runs unchanged.
"""

from dataclasses import dataclass
from importlib import resources

import numpy as np

from .. import _validate as check
from ..attention import head_dim, multi_head_attention
from .task import evaluation_set

WEIGHTS = "weights.npz"


@dataclass(frozen=True)
class TinyModel:
    """Weights of the attention-only model; ``layers`` holds (W_Q, W_K, W_V, W_O) per layer."""

    E: np.ndarray  # (vocab, d_model) token embeddings
    P: np.ndarray  # (n, d_model) position embeddings
    layers: tuple  # ((W_Q, W_K, W_V, W_O), ...), each (d_model, d_model)
    W_U: np.ndarray  # (d_model, vocab) unembedding
    h: int  # heads per layer

    @property
    def d_model(self):
        return self.E.shape[1]

    @property
    def d_k(self):
        return head_dim(self.d_model, self.h)

    @property
    def heads(self):
        """Every head's name, (layer, head) counted from 1."""
        return [(layer, head) for layer in range(1, len(self.layers) + 1) for head in range(1, self.h + 1)]

    def as_arrays(self):
        """The weights as a flat ``{name: array}`` (the ``.npz`` file's contents)."""
        arrays = {"E": self.E, "P": self.P, "W_U": self.W_U, "h": np.array(self.h)}
        for index, weights in enumerate(self.layers, start=1):
            for name, W in zip(("W_Q", "W_K", "W_V", "W_O"), weights):
                arrays[f"layer{index}_{name}"] = W
        return arrays

    @classmethod
    def from_arrays(cls, arrays):
        count = len({k.split("_")[0] for k in arrays if k.startswith("layer")})
        layers = tuple(tuple(np.asarray(arrays[f"layer{i}_{n}"], float) for n in ("W_Q", "W_K", "W_V", "W_O"))
                       for i in range(1, count + 1))
        return cls(np.asarray(arrays["E"], float), np.asarray(arrays["P"], float), layers,
                   np.asarray(arrays["W_U"], float), int(arrays["h"]))

    def _check_heads(self, ablate):
        ablate = tuple(tuple(a) for a in ablate)
        unknown = [a for a in ablate if a not in self.heads]
        if unknown:
            raise ValueError(f"ablate must name heads (layer, head) among {self.heads}, got {unknown}")
        return ablate

    def run(self, tokens, ablate=()):
        """``(logits, weights)`` for ``tokens`` (n,) or (batch, n): every position's logits
        (..., n, vocab) and each layer's weights [(..., h, n, n), ...]; heads in ``ablate`` zeroed."""
        tokens = np.asarray(tokens)
        if not np.issubdtype(tokens.dtype, np.integer) or tokens.ndim not in (1, 2):
            raise ValueError(f"tokens must be whole numbers of shape (n,) or (batch, n), got {tokens.dtype} {tokens.shape}")
        n, vocab = tokens.shape[-1], self.E.shape[0]
        if n > self.P.shape[0] or tokens.min() < 0 or tokens.max() >= vocab:
            raise ValueError(f"tokens must be at most {self.P.shape[0]} long, each in 0..{vocab - 1}")
        ablate = self._check_heads(ablate)
        x = self.E[tokens] + self.P[:n]  # (..., n, d_model)
        weights = []
        for layer, (W_Q, W_K, W_V, W_O) in enumerate(self.layers, start=1):
            W_O = W_O.copy()
            for _, head in (a for a in ablate if a[0] == layer):
                W_O[(head - 1) * self.d_k: head * self.d_k] = 0  # the head's output never reaches the stream
            out, w = multi_head_attention(x, None, W_Q, W_K, W_V, W_O, self.h, causal=True)
            x = x + out
            weights.append(w)
        return x @ self.W_U, weights

    def predict(self, tokens, ablate=()):
        """The predicted token at the last position: B, the token after A's first occurrence."""
        return self.run(tokens, ablate)[0][..., -1, :].argmax(axis=-1)

    def first_token_accuracy(self, ablate=(), data=None):
        """The share of positions 1 .. n - 2 of the evaluation set that predict the first token (the second job)."""
        tokens = (evaluation_set() if data is None else data)[0]
        guesses = self.run(tokens, ablate)[0][:, 1:-1].argmax(axis=-1)
        return float(np.mean(guesses == tokens[:, :1]))

    def accuracy(self, ablate=(), data=None):
        """The share of the evaluation set (:func:`~.task.evaluation_set`) predicted right."""
        tokens, targets, _ = evaluation_set() if data is None else data
        return float(np.mean(self.predict(tokens, ablate) == targets))

    def pattern(self, tokens, head):
        """Head ``(layer, head)``'s weights on one sequence: (n, n), row = query, column = key."""
        (layer, index), = self._check_heads([head])
        return self.run(np.asarray(tokens).reshape(-1))[1][layer - 1][index - 1]


def load():
    """The shipped model (``mha_core/learned/weights.npz``, made by ``python -m mha_core.learned.train``)."""
    with resources.files(__package__).joinpath(WEIGHTS).open("rb") as handle, np.load(handle) as arrays:
        return TinyModel.from_arrays(dict(arrays))


def patterns(model, tokens):
    """Every head's weights on one sequence, stacked: (layers · h, n, n), in the order of ``model.heads``."""
    weights = model.run(np.asarray(tokens).reshape(-1))[1]
    return np.concatenate(weights, axis=0)


def head_titles(model):
    """"layer 1, head 1", ... in the order of ``model.heads``."""
    return [f"layer {layer}, head {head}" for layer, head in model.heads]
