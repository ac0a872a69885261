"""Constructed heads: W_Q and W_K written by hand so that a head's pattern is really
computed through softmax(Q_i K_i^T / sqrt(d_k)), not drawn.

Notation is the exercise sheet's: ``d_model``, ``h``, ``d_k = d_model / h``, ``n_q``,
``n_k``; weights are applied as ``x @ W`` and head ``i`` uses columns
``i*d_k:(i+1)*d_k`` (as :class:`mha_core.layer.MultiHeadAttention`).

A token's embedding (one row of ``x``, d_model columns) is three one-hot codes side
by side, then zeros::

    [ word (one column per distinct word, lower-cased) | position (one per place) | 1 ]

A head reads these codes through its W_i^Q and W_i^K. For "previous", W_i^Q sends
position p to slot p-1 and W_i^K sends position p to slot p, so the score of query
i and key j is large exactly when j = i - 1. Every pattern is built the same way:

- ``"previous"``: each token looks at the token before it (the first at itself);
- ``"same word"``: at another occurrence of its own word (a word seen once: at itself);
- ``"first"``: at the first token (an "attention sink");
- ``"pronoun"``: a pronoun at the nouns of :data:`NOUN_CLASSES` it agrees with
  (:data:`PRONOUNS`); any other token at itself;
- ``"translation"`` (cross-attention): a target word at the source word(s) it
  translates (:data:`EN_FR`), sharing its weight if there are several; a word that
  translates none of them at the first source token;
- ``"same position"`` (cross-attention): target position i at source position i
  (the first source token when the source is shorter): the word-by-word guess that
  fails where the word order differs (*black cat* / *chat noir*);
- ``"random"``: Glorot-uniform W_i^Q, W_i^K from ``seed``, for comparison.

The matching key gets a scaled score ``sharpness`` above an unrelated key, the
fallback (itself, or the first token) half of that. W_i^V copies the embedding into
the head (its first columns) and W^O is the identity, so the output is the
concatenation of what each head found: the average code of the tokens it looked at.
"""

from dataclasses import dataclass

import numpy as np

from . import _validate as check
from .attention import head_dim
from .layer import MultiHeadAttention

SELF_PATTERNS = ("previous", "same word", "first", "pronoun", "random")
CROSS_PATTERNS = ("translation", "same position", "first", "random")

# A toy agreement lexicon. The agreement class is all a pronoun asks for: "it" finds
# animals, never things, so in "the animal didn't cross the street because it was too
# tired" it finds "animal", not "street". A trained model reads "tired" to decide;
# this rule cannot, and would pick "animal" after "because it was too wide" as well.
NOUN_CLASSES = {
    **dict.fromkeys(("animal", "cat", "dog", "bird", "horse", "mouse"), "it"),
    **dict.fromkeys(("man", "boy", "king", "father", "brother"), "he"),
    **dict.fromkeys(("woman", "girl", "queen", "mother", "sister"), "she"),
    **dict.fromkeys(("animals", "cats", "dogs", "birds", "people", "children"), "they"),
}
PRONOUNS = {"it": "it", "he": "he", "him": "he", "his": "he", "she": "she", "her": "she",
            "they": "they", "them": "they"}

# A toy English -> French lexicon: each source word and the target words that translate it.
EN_FR = {
    "the": ("le", "la", "les", "l'"), "a": ("un", "une"), "black": ("noir", "noire"),
    "white": ("blanc", "blanche"), "small": ("petit", "petite"), "cat": ("chat",), "dog": ("chien",),
    "mouse": ("souris",), "sat": ("s'assit", "assis"), "sleeps": ("dort",), "is": ("est",), "was": ("était",),
    "on": ("sur",), "mat": ("tapis",), "because": ("car",), "it": ("il", "elle"), "very": ("très",),
    "tired": ("fatigué", "fatiguée"), "and": ("et",),
}


@dataclass(frozen=True)
class Constructed:
    """A block of constructed heads and the embeddings it was built for.

    ``block(x, x_kv)`` runs it; ``tokens`` label the query rows, ``kv_tokens`` the key
    columns (the same tokens in self-attention, where ``x_kv`` is None).
    """

    block: MultiHeadAttention
    x: np.ndarray  # (n_q, d_model) query tokens' embeddings
    x_kv: np.ndarray | None  # (n_k, d_model) source tokens' embeddings; None in self-attention
    tokens: list
    kv_tokens: list
    patterns: tuple
    words: list  # the distinct (lower-case) words, in the order of their code columns

    def weights(self, causal=False):
        """Every head's ``(h, n_q, n_k)`` attention weights, computed by the block."""
        return self.block(self.x, self.x_kv, causal=causal)[1]

    def head(self, pattern):
        """Index of the first head built with ``pattern``."""
        if pattern not in self.patterns:
            raise ValueError(f"pattern must be one of this block's {self.patterns}, got {pattern!r}")
        return self.patterns.index(pattern)


def constructed(tokens, patterns=("previous", "same word", "first", "pronoun"), d_model=None, sharpness=5.0,
                seed=0):
    """Self-attention heads, one per name in ``patterns``, for the sentence ``tokens``.

    Parameters
    ----------
    tokens : list of n words (the sentence).
    patterns : names from :data:`SELF_PATTERNS`; head i follows ``patterns[i]``, so h = len(patterns).
    d_model : width; a multiple of h with d_k large enough for the codes (None: the smallest such).
    sharpness : scaled score of the matching key above an unrelated one.
    seed : seeds the ``"random"`` heads.

    Returns
    -------
    :class:`Constructed` with ``block`` (a :class:`MultiHeadAttention`) and ``x`` of shape (n, d_model).
    """
    tokens = _tokens("tokens", tokens)
    return _build(tokens, None, _patterns(patterns, SELF_PATTERNS, "constructed"), d_model, sharpness, seed)


def translation(source_tokens, target_tokens, patterns=("translation", "same position", "first"), d_model=None,
                sharpness=5.0, seed=0):
    """Cross-attention heads: target (decoder) words query source (encoder) words.

    ``patterns`` are names from :data:`CROSS_PATTERNS`; the lexicon is :data:`EN_FR`
    (English source, French target). Returns a :class:`Constructed` whose ``x`` holds the
    n_q target tokens (queries) and ``x_kv`` the n_k source tokens (keys and values).
    """
    source = _tokens("source_tokens", source_tokens)
    target = _tokens("target_tokens", target_tokens)
    return _build(target, source, _patterns(patterns, CROSS_PATTERNS, "translation"), d_model, sharpness, seed)


# --- building -----------------------------------------------------------------------------------


class _Codes:
    """Where each one-hot code sits in an embedding row."""

    def __init__(self, words, positions):
        self.words = {w: k for k, w in enumerate(dict.fromkeys(words))}  # distinct words, first-seen order
        self.positions = positions
        self.width = len(self.words) + positions + 1  # word | position | 1

    def word(self, w):
        return self.words[w]

    def position(self, p):
        return len(self.words) + p

    @property
    def bias(self):
        return self.width - 1

    def embed(self, tokens, d_model):
        x = np.zeros((len(tokens), d_model))
        for p, w in enumerate(tokens):
            x[p, [self.word(w), self.position(p), self.bias]] = 1.0
        return x


def _slots(pattern, codes, queries, keys):
    """How many d_k columns ``pattern`` needs."""
    return {
        "previous": codes.positions,
        "same word": len(codes.words) + codes.positions,
        "first": 1,
        "pronoun": len(set(PRONOUNS.values())) + codes.positions,
        "translation": len(_meanings(codes)) + 1,
        "same position": codes.positions + 1,
        "random": 1,
    }[pattern]


def _head(pattern, codes, queries, keys, d_model, d_k, strength, rng):
    """(W_i^Q, W_i^K), each d_model x d_k, for one pattern; query . key = ``strength`` on a match."""
    Wq, Wk = np.zeros((d_model, d_k)), np.zeros((d_model, d_k))
    half = strength / 2  # the fallback: itself, or the first token
    if pattern == "previous":
        for p in range(codes.positions):
            Wk[codes.position(p), p] = 1.0
            Wq[codes.position(p), p] += half  # itself, second choice (the first token's only one)
            if p > 0:
                Wq[codes.position(p), p - 1] += strength  # the key one place back
    elif pattern == "same word":
        n_words = len(codes.words)
        for w, k in codes.words.items():
            Wq[codes.word(w), k] = strength
            Wk[codes.word(w), k] = 1.0
        for p in range(codes.positions):
            Wq[codes.position(p), n_words + p] = -half  # itself scores strength - half: only when alone
            Wk[codes.position(p), n_words + p] = 1.0
    elif pattern == "first":
        Wq[codes.bias, 0] = strength
        Wk[codes.position(0), 0] = 1.0
    elif pattern == "pronoun":
        classes = sorted(set(PRONOUNS.values()))
        for w in codes.words:
            if w in PRONOUNS:
                Wq[codes.word(w), classes.index(PRONOUNS[w])] = strength
            if w in NOUN_CLASSES:
                Wk[codes.word(w), classes.index(NOUN_CLASSES[w])] = 1.0
        for p in range(codes.positions):
            Wq[codes.position(p), len(classes) + p] = half
            Wk[codes.position(p), len(classes) + p] = 1.0
    elif pattern == "translation":
        meanings = _meanings(codes)
        for w in codes.words:
            if w in EN_FR:
                Wk[codes.word(w), meanings.index(w)] = 1.0
            for k, source in enumerate(meanings):
                if w in EN_FR[source]:
                    Wq[codes.word(w), k] = strength
            if w in queries and not any(w in EN_FR.get(source, ()) for source in keys):
                Wq[codes.word(w), len(meanings)] = half  # nothing it translates in the source: the first token
        Wk[codes.position(0), len(meanings)] = 1.0
    elif pattern == "same position":
        for p in range(codes.positions):
            Wq[codes.position(p), p] = strength
            Wk[codes.position(p), p] = 1.0
            if p >= len(keys):
                Wq[codes.position(p), codes.positions] = half  # past the end of the source: the first token
        Wk[codes.position(0), codes.positions] = 1.0
    else:  # random
        limit = np.sqrt(6 / (d_model + d_model))
        Wq, Wk = rng.uniform(-limit, limit, size=(2, d_model, d_k))
    return Wq, Wk


def _meanings(codes):
    """The source words of :data:`EN_FR` present in the sentences: one d_k slot each."""
    return [w for w in EN_FR if w in codes.words]


def _build(queries, keys, patterns, d_model, sharpness, seed):
    sharpness = check.positive_real("sharpness", sharpness)
    h = len(patterns)
    cross = keys is not None
    labels, kv_labels = queries, (keys if cross else queries)
    queries, kv = [t.lower() for t in labels], [t.lower() for t in kv_labels]  # a word is its lower-case form
    codes = _Codes(queries + kv, max(len(queries), len(kv)))
    need = max(max(_slots(p, codes, queries, kv) for p in patterns), -(-codes.width // h))
    if d_model is None:
        d_model = h * need
    d_k = head_dim(d_model, h)
    if d_k < need:
        raise ValueError(f"d_model must be at least h·{need} = {h * need} for these {len(codes.words)} words at "
                         f"{codes.positions} positions with h={h} heads, got d_model={d_model} (d_k={d_k})")
    strength = sharpness * np.sqrt(d_k)  # the block divides the scores by sqrt(d_k)
    rng = np.random.default_rng(seed)
    heads = [_head(p, codes, queries, kv, d_model, d_k, strength, rng) for p in patterns]
    W_V = np.zeros((d_model, d_k))
    W_V[: min(codes.width, d_k), : min(codes.width, d_k)] = np.eye(min(codes.width, d_k))  # copies the codes
    block = MultiHeadAttention.from_heads([q for q, _ in heads], [k for _, k in heads], [W_V] * h, np.eye(d_model))
    x = codes.embed(queries, d_model)
    x_kv = codes.embed(kv, d_model) if cross else None
    return Constructed(block, x, x_kv, list(labels), list(kv_labels), tuple(patterns), list(codes.words))


# --- checks ---------------------------------------------------------------------------------------


def _tokens(name, tokens):
    if isinstance(tokens, str) or not hasattr(tokens, "__iter__"):
        raise ValueError(f"{name} must be a list of words (e.g. 'the cat sat'.split()), got {tokens!r}")
    tokens = list(tokens)
    if not tokens:
        raise ValueError(f"{name} must hold at least one word, got an empty sentence")
    for t in tokens:
        if not isinstance(t, str) or not t.strip():
            raise ValueError(f"{name} must hold non-empty words (strings), got {t!r}")
    return [t.strip() for t in tokens]


def _patterns(patterns, allowed, where):
    if isinstance(patterns, str):
        patterns = (patterns,)
    try:
        patterns = tuple(patterns)
    except TypeError:
        raise ValueError(f"patterns must be a list of names from {allowed}, got {patterns!r}") from None
    if not patterns:
        raise ValueError(f"patterns must name at least one head, from {allowed}")
    for p in patterns:
        if p not in allowed:
            raise ValueError(f"patterns of {where}() must be names from {allowed}, got {p!r}")
    return patterns


__all__ = [
    "CROSS_PATTERNS",
    "Constructed",
    "EN_FR",
    "NOUN_CLASSES",
    "PRONOUNS",
    "SELF_PATTERNS",
    "constructed",
    "translation",
]
