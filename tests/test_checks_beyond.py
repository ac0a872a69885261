"""The checks of the problems beyond the sheet (3.4, 3.5, 4.4 and, last, 5.4; 4.6 and 4.7: test_checks_today):
right answers pass visible and hidden, each known wrong answer of the fixtures names its misconception, wrong kinds get "should be",
and the expected answers are what an independent computation gives."""

import numpy as np
import pytest

import mha_core as mha
from autograders.checks import beyond as check
from autograders.checks.feedback import WrongAnswer
from autograders.problems import beyond as problems
from autograders.student import by_hand
from mha_core import learned
from tests.checking import accepts, rejects
from tests.fixtures import beyond_the_sheet

# answer cell grade_id -> (check, the variables the cell defines, in the check's order)
ANSWERS = {
    "q3_4_max_rank": (check.q3_4_max_rank, ("max_rank",)),
    "q3_5_permutation_test": (check.q3_5_permutation_test, ("permutation_test",)),
    "q3_5_why_positions": (check.q3_5_why_positions, ("why_positions",)),
    "q4_4_previous_token": (check.q4_4_previous_token, ("head",)),
    "q4_4_average_query": (check.q4_4_average_query, ("query",)),
    "q5_4_previous_token_head": (check.q5_4_previous_token_head, ("previous_token_head",)),
    "q5_4_induction_head": (check.q5_4_induction_head, ("induction_head",)),
}
MISTAKES = [m for m in beyond_the_sheet.MISTAKES if m.cell in ANSWERS]


def _run(code, names):
    namespace = {"np": np, "mha": mha, "by_hand": by_hand, "keys": by_hand.KEYS, "values": by_hand.VALUES}
    exec(code, namespace)
    return [namespace[name] for name in names]


@pytest.mark.parametrize("mistake", MISTAKES, ids=lambda m: f"{m.cell}:{m.code.splitlines()[-1].strip()}")
def test_each_known_mistake_names_its_misconception(mistake):
    check_function, names = ANSWERS[mistake.cell]
    assert mistake.fails == (f"{mistake.cell}_test",)
    args = _run(mistake.code, names)
    with pytest.raises(WrongAnswer) as info:
        check_function(*args)
    assert mistake.says in str(info.value), str(info.value)


def test_every_answer_cell_has_a_known_mistake():
    assert {m.cell for m in MISTAKES} == set(ANSWERS)


# --- right answers, visible and hidden ----------------------------------------------------------


def test_the_rank_is_min_n_d_k_and_numpy_agrees(capsys):
    accepts(check.q3_4_max_rank, lambda n, d_k: min(n, d_k), capsys)
    for n, d_k in check.RANK_VISIBLE + check.RANK_HIDDEN:  # an independent count: singular values of a product
        if n * d_k <= 4096:
            rng = np.random.default_rng(n + d_k)
            values = np.linalg.svd(rng.normal(size=(n, d_k)) @ rng.normal(size=(d_k, n)), compute_uv=False)
            assert int(np.sum(values > 1e-9 * values[0])) == min(n, d_k)


def test_a_hidden_rank_case_catches_an_answer_of_the_visible_cases_only():
    visible = dict(zip(check.RANK_VISIBLE, (10, 64)))
    fn = lambda n, d_k: visible.get((n, d_k), 0)  # noqa: E731
    check.q3_4_max_rank(fn)
    rejects(lambda f, hidden: check.q3_4_max_rank(f, hidden=hidden), fn, "not for n =", hidden=True)


@pytest.mark.parametrize("body", ["np.allclose(f(X[perm]), f(X)[perm])",
                                  "all(np.allclose(a, b) for a, b in zip(f(X[perm]), f(X)[perm]))",
                                  "np.max(np.abs(f(X[perm]) - f(X)[perm])) < 1e-9"])
def test_permutation_test_accepts_tolerant_comparisons(body, capsys):
    namespace = {"np": np}
    exec(f"def permutation_test(f, X, perm):\n    return bool({body})\n", namespace)
    accepts(check.q3_5_permutation_test, namespace["permutation_test"], capsys)


def test_attention_without_mask_is_equivariant_and_causal_is_not():
    for f, X, perm, expected in check._cases_3_5(hidden=False) + check._cases_3_5(hidden=True):
        permuted_first = f(X[perm])
        by_rows = np.stack([f(X)[p] for p in perm])  # row by row, not fancy indexing
        assert np.allclose(permuted_first, by_rows) == expected
        assert not np.array_equal(perm[perm], np.arange(len(perm)))  # never an involution


def test_why_positions(capsys):
    accepts(check.q3_5_why_positions, "B", capsys)
    accepts(check.q3_5_why_positions, " b ", capsys)
    rejects(check.q3_5_why_positions, "E", "should be one of")


def previous_token_head(scale=20.0):
    """4.4 (a)'s solution, kept here and in the source notebook only (never in a package a student imports):
    queries and keys from the positions only, k_j = e_{j+1}, q_i = scale * e_i (d_k = n + 1)."""
    W_Q, W_K = np.zeros((by_hand.D_MODEL, by_hand.N + 1)), np.zeros((by_hand.D_MODEL, by_hand.N + 1))
    for i in range(by_hand.N):
        W_Q[len(by_hand.VOCAB) + i, i] = scale
        W_K[len(by_hand.VOCAB) + i, i + 1] = 1.0
    return W_Q, W_K


def test_the_constructed_previous_token_head_passes_at_every_sentence(capsys):
    W_Q, W_K = previous_token_head()
    for hidden in (False, True):
        check.q4_4_previous_token((W_Q, W_K), hidden=hidden)
    assert capsys.readouterr().out.count("✔ Correct.") == 2
    for words in check.VISIBLE_SENTENCES + check.HIDDEN_SENTENCES:  # recomputed here, by hand
        X = by_hand.one_hot_embeddings(words)
        scores = (X @ W_Q) @ (X @ W_K).T / np.sqrt(W_Q.shape[1])
        scores[np.triu_indices(6, 1)] = -np.inf
        weights = np.exp(scores) / np.exp(scores).sum(axis=1, keepdims=True)
        assert (weights[np.arange(1, 6), np.arange(5)] >= 0.9).all()


def test_the_hidden_sentences_differ_from_the_visible_ones():
    assert by_hand.SENTENCE == check.VISIBLE_SENTENCES[0] and check.VISIBLE_SENTENCES[1] != by_hand.SENTENCE
    assert all(s not in check.VISIBLE_SENTENCES for s in check.HIDDEN_SENTENCES)


def test_a_head_that_is_not_a_pair_is_the_wrong_kind():
    rejects(check.q4_4_previous_token, np.zeros((11, 7)), "should be a pair (W_Q_i, W_K_i)")
    rejects(check.q4_4_previous_token, None, "no answer yet")


def test_the_one_hot_embeddings():
    X = by_hand.one_hot_embeddings(by_hand.SENTENCE)
    assert X.shape == (6, 11) and (X.sum(axis=1) == 2).all()
    assert (X[0, :5] == X[4, :5]).all() and X[0, by_hand.VOCAB.index("the")] == 1  # "the" twice
    assert (X[:, 5:] == np.eye(6)).all()
    with pytest.raises(ValueError, match="words"):
        by_hand.one_hot_embeddings(["dog"])


def test_the_average_query(capsys):
    K = by_hand.KEYS
    assert np.allclose(K @ K.T, np.eye(4))  # orthonormal keys
    accepts(check.q4_4_average_query, 20 * (K[1] + K[3]), capsys)
    accepts(check.q4_4_average_query, (30 * (K[1] + K[3]))[None, :].tolist(), capsys)  # a row, as a list
    target = (by_hand.VALUES[1] + by_hand.VALUES[3]) / 2
    assert np.allclose(check._target(), target)


# --- the learned model -------------------------------------------------------------------------


def test_the_shipped_model_solves_the_task_and_its_roles_are_found_twice_alike():
    model = learned.load()
    assert model.accuracy() >= 0.99
    assert problems.roles(model) == problems.roles(model, independent=True) == ((1, 2), (2, 2))
    scores = problems.head_scores(model, learned.evaluation_set())
    assert scores[1, 2][0] > 0.7 and scores[2, 2][1] > 0.95  # clear-cut: most of each head's weight
    assert not hasattr(learned, "head_scores")  # 5.4's answer in one call is not in the library students import
    # the task needs both: switching either off costs more than half the accuracy; the others cost little
    assert model.accuracy(ablate=[(1, 2)]) < 0.5 and model.accuracy(ablate=[(2, 2)]) < 0.5
    assert model.accuracy(ablate=[(1, 1)]) > 0.9 and model.accuracy(ablate=[(2, 1)]) > 0.9


def test_the_learned_answers(capsys):
    accepts(check.q5_4_previous_token_head, (1, 2), capsys)
    accepts(check.q5_4_previous_token_head, [1.0, 2], capsys)
    accepts(check.q5_4_induction_head, np.array([2, 2]), capsys)
    rejects(check.q5_4_induction_head, (3, 1), "is not a head of the model")
    rejects(check.q5_4_induction_head, None, "no answer yet")


def _positional_head(query_of, key_of, scale=20.0):
    """A head from the positions only: the query of position i is ``scale`` · e_{query_of(i)}, the key of position j
    e_{key_of(j)} (d_k = n + 2; an index outside 0..n+1 leaves that row zero)."""
    d_k = by_hand.N + 2
    W_Q, W_K = np.zeros((by_hand.D_MODEL, d_k)), np.zeros((by_hand.D_MODEL, d_k))
    for i in range(by_hand.N):
        if 0 <= query_of(i) < d_k:
            W_Q[len(by_hand.VOCAB) + i, query_of(i)] = scale
        if 0 <= key_of(i) < d_k:
            W_K[len(by_hand.VOCAB) + i, key_of(i)] = 1.0
    return W_Q, W_K


NEXT_TOKEN_HEADS = {
    "key shifted back": _positional_head(lambda i: i, lambda j: j - 1),  # key j matches query j - 1
    "query shifted forward": _positional_head(lambda i: i + 1, lambda j: j),  # query i matches key i + 1
    "two ahead": _positional_head(lambda i: i + 2, lambda j: j),
}


@pytest.mark.parametrize("name", NEXT_TOKEN_HEADS)
@pytest.mark.parametrize("hidden", [False, True])
def test_a_next_token_head_is_told_the_mask_hides_its_keys(name, hidden):
    """The shift the wrong way: each query matches a later key, which the causal mask hides. Not "the scores do not
    depend on where the query is" (its weights, uniform over the visible keys, peak on the first token only by a tie)."""
    W_Q, W_K = NEXT_TOKEN_HEADS[name]
    X = by_hand.one_hot_embeddings(by_hand.SENTENCE)
    scores = (X @ W_Q) @ (X @ W_K).T
    assert all(scores[i].argmax() > i for i in range(by_hand.N - 2))  # the head is what its name says, unmasked
    with pytest.raises(WrongAnswer) as info:
        check.q4_4_previous_token((W_Q, W_K), hidden=hidden)
    assert info.value.misconception == "matches-hidden-key"
    if not hidden:
        assert "a key the causal mask hides" in str(info.value) and "Shift the other way" in str(info.value)
        assert "first token" not in str(info.value)


def test_a_head_that_ignores_the_query_still_attends_to_the_first_token():
    W_Q = np.zeros((by_hand.D_MODEL, 1))
    W_Q[:, 0] = 1.0
    W_K = np.zeros((by_hand.D_MODEL, 1))
    W_K[len(by_hand.VOCAB), 0] = 20.0  # only the first position's key scores
    with pytest.raises(WrongAnswer) as info:
        check.q4_4_previous_token((W_Q, W_K))
    assert info.value.misconception == "attends-to-first"


def test_4_5_decode_limits_factors_are_counted_from_one_decoding_steps_arrays():
    """Option A's 2 n_ctx d_head multiply-adds per head and option D's 2 d_head = 256 (sheet) times fewer
    exponentials, counted from the arrays of one generated token's attention at the sheet's numbers."""
    sheet = problems.MODEL_4_5.sheet
    n_heads, n_kv, d_head, n_ctx = sheet["n_heads"], sheet["n_kv_heads"], sheet["d_head"], 64  # any n_ctx
    q = np.ones((n_heads, d_head))
    K = V = np.ones((n_kv, n_ctx, d_head))
    scores = np.einsum("gqd,gkd->gqk", q.reshape(n_kv, -1, d_head), K)  # (n_kv, heads per group, n_ctx)
    macs = scores.size * d_head + scores.size * V.shape[-1]  # each score a dot product; each output entry a sum
    exponentials = scores.size
    assert macs // n_heads == 2 * n_ctx * d_head and macs // exponentials == 2 * d_head == 256
    said = {}
    for letter in "AD":
        with pytest.raises(WrongAnswer) as info:
            check.q4_5_decode_limit(letter)
        said[letter] = str(info.value)
    assert "2 · n_ctx · d_head multiply-adds per head" in said["A"]
    assert f"{2 * d_head} times fewer at d_head = {d_head}" in said["D"]
