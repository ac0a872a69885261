"""The learned heads' model: the task, the forward pass through mha_core (and the training code's own,
which must agree), ablation, the hand-written gradients, and the shipped weights reproduced by retraining."""

import numpy as np
import pytest

import mha_core as mha
from mha_core import learned
from mha_core.learned import train


def test_the_task_repeats_a_and_asks_for_b():
    tokens, targets, j = learned.induction_batch(np.random.default_rng(0), 200)
    assert tokens.shape == (200, learned.N) and targets.shape == j.shape == (200,)
    for row, target, first in zip(tokens, targets, j):
        assert len(set(row[:-1].tolist())) == learned.N - 1  # n - 1 different tokens
        assert row[-1] == row[first] and target == row[first + 1] and first + 1 <= learned.N - 2
    with pytest.raises(ValueError, match="vocab"):
        learned.induction_batch(np.random.default_rng(0), 2, n=8, vocab=5)


def test_the_forward_pass_is_mha_core_s_and_the_training_code_agrees():
    model = learned.load()
    tokens = learned.evaluation_set(size=16)[0]
    logits, weights = model.run(tokens)
    x = model.E[tokens] + model.P[: tokens.shape[1]]
    for layer, (W_Q, W_K, W_V, W_O) in enumerate(model.layers):
        out, w = mha.multi_head_attention(x, None, W_Q, W_K, W_V, W_O, model.h, causal=True)
        assert np.allclose(w, weights[layer])
        mine, cache = train.attention_forward(x, model.layers[layer], model.h)
        assert np.allclose(mine, out) and np.allclose(cache[4], w)
        x = x + out
    assert np.allclose(x @ model.W_U, logits)


def test_ablating_a_head_is_zeroing_its_output():
    model = learned.load()
    tokens = learned.evaluation_set(size=4)[0]
    x = model.E[tokens] + model.P[: tokens.shape[1]]
    W_Q, W_K, W_V, W_O = model.layers[0]
    Q, K, V = (mha.split_heads(x @ W, model.h) for W in (W_Q, W_K, W_V))
    heads, _ = mha.scaled_dot_product_attention(Q, K, V, causal=True)
    heads[:, 1] = 0  # head 2 of layer 1 says nothing
    x1 = x + mha.concat_heads(heads) @ W_O
    out, _ = mha.multi_head_attention(x1, None, *model.layers[1], model.h, causal=True)
    assert np.allclose((x1 + out) @ model.W_U, model.run(tokens, ablate=[(1, 2)])[0])
    with pytest.raises(ValueError, match="ablate"):
        model.run(tokens, ablate=[(3, 1)])


def test_the_gradients_are_the_loss_s_slopes():
    model = train.initial(seed=3)
    tokens, targets, _ = learned.induction_batch(np.random.default_rng(4), 3)
    _, grads = train.loss_and_gradients(model, tokens, targets)
    rng = np.random.default_rng(5)
    pairs = [(model.E, grads.E), (model.P, grads.P), (model.W_U, grads.W_U)]
    pairs += [(W, G) for layer, layer_grads in zip(model.layers, grads.layers) for W, G in zip(layer, layer_grads)]
    for W, G in pairs:
        index = tuple(rng.integers(0, s) for s in W.shape)
        if W is model.E:
            index = (int(tokens[0, 0]), index[1])  # a token that occurs
        eps, keep = 1e-6, W[index]
        W[index] = keep + eps
        up = train.loss_and_gradients(model, tokens, targets)[0]
        W[index] = keep - eps
        down = train.loss_and_gradients(model, tokens, targets)[0]
        W[index] = keep
        assert abs((up - down) / (2 * eps) - G[index]) < 1e-6 * max(1.0, abs(G[index]))


def test_the_patterns_and_titles():
    model = learned.load()
    sequence = learned.evaluation_set(size=1)[0][0]
    stacked = learned.patterns(model, sequence)
    assert stacked.shape == (4, learned.N, learned.N) and np.allclose(stacked.sum(axis=-1), 1)
    assert np.allclose(stacked[1], model.pattern(sequence, (1, 2)))
    assert learned.head_titles(model)[1] == "layer 1, head 2"


# Training amplifies rounding: a start moved by one part in 1e15 ends 600 Adam steps later up to 2e-6
# of each array's largest entry away (measured), and another machine's BLAS sums its dot products in
# another order. So retraining must land within 1e-4 of that scale (50 times the measured drift, far
# below one Adam step of 3e-3) and behave the same, not match bit for bit.
DRIFT = 1e-4


def test_retraining_reproduces_the_shipped_weights(retrained):
    model = learned.load()
    shipped, again = model.as_arrays(), retrained.as_arrays()
    assert sorted(shipped) == sorted(again) and shipped["h"] == again["h"]
    for name in set(shipped) - {"h"}:
        scale = np.abs(shipped[name]).max()
        assert np.abs(shipped[name] - again[name]).max() <= DRIFT * scale, name
    assert retrained.accuracy() == model.accuracy()
    sequence = learned.evaluation_set(size=1)[0][0]
    assert np.allclose(learned.patterns(retrained, sequence), learned.patterns(model, sequence), atol=DRIFT)


@pytest.fixture(scope="module")
def retrained():
    """The model retrained from its seed (train.SEED): the one slow part of this file."""
    return train.train()
