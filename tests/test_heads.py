"""mha_core.heads: each constructed head looks where its pattern says, through a real softmax(QK^T/sqrt(d_k)).

The expected targets are worked out here from the sentence and the lexicons (plain loops),
the weights recomputed with numpy from the block's matrices.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograders.student.sentences import ENGLISH, FRENCH, SENTENCE
import mha_core as mha
from mha_core import heads

# Words a random sentence is drawn from: nouns of every class, their pronouns, things, fillers.
VOCABULARY = ["the", "a", "cat", "dog", "animal", "street", "mat", "man", "woman", "cats", "people",
              "it", "he", "she", "they", "him", "her", "sat", "was", "tired", "because", "on"]
sentences = st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=20)


def expected_self(pattern, tokens):
    """For each query position, the set of key positions the pattern says it looks at."""
    n, words = len(tokens), [t.lower() for t in tokens]
    targets = []
    for i in range(n):
        if pattern == "previous":
            allowed = {i - 1} if i > 0 else {0}
        elif pattern == "same word":
            allowed = {j for j in range(n) if j != i and words[j] == words[i]} or {i}
        elif pattern == "first":
            allowed = {0}
        elif pattern == "pronoun":
            wanted = heads.PRONOUNS.get(words[i])
            allowed = {j for j in range(n) if wanted and heads.NOUN_CLASSES.get(words[j]) == wanted} or {i}
        targets.append(allowed)
    return targets


def expected_cross(pattern, source, target):
    n_k = len(source)
    targets = []
    for i, word in enumerate(target):
        if pattern == "translation":
            allowed = {j for j in range(n_k) if word in heads.EN_FR.get(source[j], ())} or {0}
        elif pattern == "same position":
            allowed = {i} if i < n_k else {0}
        elif pattern == "first":
            allowed = {0}
        targets.append(allowed)
    return targets


def numpy_weights(c, causal=False):
    """softmax(Q_i K_i^T / sqrt(d_k)) for each head, straight from the block's matrices."""
    b = c.block
    x_kv = c.x if c.x_kv is None else c.x_kv
    out = []
    for i in range(b.h):
        cols = slice(i * b.d_k, (i + 1) * b.d_k)
        scores = (c.x @ b.W_Q[:, cols]) @ (x_kv @ b.W_K[:, cols]).T / np.sqrt(b.d_k)
        if causal:
            scores = np.where(np.tri(*scores.shape, dtype=bool), scores, -np.inf)
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        out.append(e / e.sum(axis=1, keepdims=True))
    return np.array(out)


def assert_looks_where_said(weights, targets, what):
    for i, allowed in enumerate(targets):
        row = weights[i]
        top = row.max()
        assert int(np.argmax(row)) in allowed, f"{what}: query {i} looks at {np.argmax(row)}, expected {allowed}"
        mass = sum(row[j] for j in allowed)  # ties share the weight
        assert mass > 0.3, f"{what}: query {i} puts only {mass:.2f} on {allowed}"
        others = [row[j] for j in range(len(row)) if j not in allowed]
        if others:
            assert top > 5 * max(others), f"{what}: query {i} does not clearly prefer {allowed}"


@settings(max_examples=60, deadline=None)
@given(sentences)
def test_each_self_attention_head_looks_where_its_pattern_says(tokens):
    patterns = ("previous", "same word", "first", "pronoun")
    c = heads.constructed(tokens, patterns)
    _, weights = mha.multi_head_attention(c.x, None, c.block.W_Q, c.block.W_K, c.block.W_V, c.block.W_O, c.block.h)
    assert weights.shape == (4, len(tokens), len(tokens))
    for k, pattern in enumerate(patterns):
        assert_looks_where_said(weights[k], expected_self(pattern, tokens), pattern)
    np.testing.assert_allclose(weights, numpy_weights(c), atol=1e-12, err_msg="not softmax(QK^T/sqrt(d_k))")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(list(heads.EN_FR) + ["street", "dog", "quickly"]), min_size=1, max_size=12),
       st.lists(st.sampled_from([w for ws in heads.EN_FR.values() for w in ws] + ["rue", "vite"]), min_size=1,
                max_size=12))
def test_each_cross_attention_head_looks_where_its_pattern_says(source, target):
    patterns = ("translation", "same position", "first")
    c = heads.translation(source, target, patterns)
    _, weights = mha.multi_head_attention(c.x, c.x_kv, c.block.W_Q, c.block.W_K, c.block.W_V, c.block.W_O, 3)
    assert weights.shape == (3, len(target), len(source))
    for k, pattern in enumerate(patterns):
        assert_looks_where_said(weights[k], expected_cross(pattern, source, target), pattern)
    np.testing.assert_allclose(weights, numpy_weights(c), atol=1e-12)


def test_the_example_sentences_resolve_as_the_prose_says():
    animal = "the animal didn't cross the street because it was too tired".split()
    c = heads.constructed(animal, ("pronoun",))
    w = c.weights()[0]
    assert animal[int(np.argmax(w[animal.index("it")]))] == "animal"
    cat = SENTENCE
    w = heads.constructed(cat).weights()
    it = cat.index("it")
    assert cat[int(np.argmax(w[3, it]))] == "cat" and w[3, it, cat.index("cat")] > 0.7
    assert int(np.argmax(w[0, it])) == it - 1  # previous
    s = heads.translation(ENGLISH, FRENCH)
    w = s.weights()[s.head("translation")]
    for fr, en in (("noir", "black"), ("chat", "cat"), ("fatigué", "tired"), ("tapis", "mat")):
        assert ENGLISH[int(np.argmax(w[FRENCH.index(fr)]))] == en, fr
    same = s.weights()[s.head("same position")]  # word by word: 'chat' (2nd) is sent to 'black' (2nd)
    assert ENGLISH[int(np.argmax(same[1]))] == "black"


def test_the_block_is_an_ordinary_multi_head_attention():
    c = heads.constructed(["the", "cat", "sat"], ("previous", "first", "random"), d_model=48)
    assert isinstance(c.block, mha.MultiHeadAttention)
    assert (c.block.d_model, c.block.h, c.block.d_k) == (48, 3, 16) and c.x.shape == (3, 48)
    trace = c.block.trace(c.x)
    np.testing.assert_allclose(trace.weights, numpy_weights(c))
    # W_V copies the codes and W_O is the identity: the output is the average code each head found.
    codes = c.x[:, :16]
    for i in range(3):
        np.testing.assert_allclose(trace.output[:, i * 16:(i + 1) * 16], trace.weights[i] @ codes)
    np.testing.assert_allclose(c.weights(causal=True), numpy_weights(c, causal=True))


def test_embeddings_are_word_position_and_one_codes():
    c = heads.constructed(["The", "cat", "the"], ("first",))
    x = c.x
    assert c.tokens == ["The", "cat", "the"], "labels keep their case"
    assert (x.sum(axis=1) == 3).all() and set(np.unique(x)) <= {0.0, 1.0}
    np.testing.assert_array_equal(x[0, :2], x[2, :2])  # "The" and "the": one word
    assert not np.array_equal(x[0], x[2])  # different positions


def test_random_heads_follow_the_seed():
    a = heads.constructed(["a", "b", "c"], ("random",), seed=1).block.W_Q
    assert np.array_equal(a, heads.constructed(["a", "b", "c"], ("random",), seed=1).block.W_Q)
    assert not np.array_equal(a, heads.constructed(["a", "b", "c"], ("random",), seed=2).block.W_Q)


@pytest.mark.parametrize("call, name", [
    (lambda: heads.constructed([]), "tokens"),
    (lambda: heads.constructed("the cat"), "tokens"),
    (lambda: heads.constructed(["the", ""]), "tokens"),
    (lambda: heads.constructed(["the", 3]), "tokens"),
    (lambda: heads.constructed(["a"], patterns=("previous", "backwards")), "patterns"),
    (lambda: heads.constructed(["a"], patterns=()), "patterns"),
    (lambda: heads.constructed(["a"], patterns=("translation",)), "patterns"),
    (lambda: heads.translation(["a"], ["b"], patterns=("pronoun",)), "patterns"),
    (lambda: heads.translation([], ["b"]), "source_tokens"),
    (lambda: heads.translation(["a"], None), "target_tokens"),
    (lambda: heads.constructed(["a", "b"], sharpness=0), "sharpness"),
    (lambda: heads.constructed(["a", "b"], ("first", "previous"), d_model=5), "h must divide d_model"),
    (lambda: heads.constructed(list("abcdefgh"), ("same word", "first"), d_model=8), "d_model"),
])
def test_bad_input_raises_value_error_naming_the_parameter(call, name):
    with pytest.raises(ValueError, match=name):
        call()


def test_head_names_its_pattern():
    c = heads.constructed(["a", "b"], ("first", "previous"))
    assert c.head("previous") == 1
    with pytest.raises(ValueError, match="pattern"):
        c.head("pronoun")
