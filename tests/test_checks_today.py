"""Problems 4.6 (masks in a batch) and 4.7 (attention in blocks): right answers pass, each named mistake,
written as a student writes it, is named with its tag, visible and hidden; the references agree with
independent computations; the visible cases try every kind of input the hidden ones try."""

import numpy as np
import pytest

import mha_core as mha
from autograders.checks import beyond, today
from autograders.checks.feedback import WrongAnswer
from autograders.problems import beyond as problems
from tests import reference
from tests.checking import accepts

# --- Problem 4.6 -----------------------------------------------------------------------------------------


ALL_MASK_CASES = today.MASK_CASES + today.MASK_HIDDEN_CASES


def test_the_mask_reference_agrees_with_loops_and_with_mha_core():
    for case in ALL_MASK_CASES:
        scores, lens = today.mask_inputs(*case)
        causal = case[5]
        expected = today.masked_weights(scores, lens, causal)
        np.testing.assert_allclose(expected, reference.masked_softmax(scores, lens, causal), atol=1e-12)
        n_q, n_k = scores.shape[-2:]
        mask = (np.arange(n_k) < lens[:, None])[:, None, None, :]  # mha_core's convention: True = may attend
        from mha_core.attention import _masked_softmax  # mha_core's masked softmax, given the scores directly

        full = np.broadcast_to(mask & (np.tri(n_q, n_k, dtype=bool) if causal else True), scores.shape)
        np.testing.assert_allclose(expected, _masked_softmax(scores, full), atol=1e-12)


def masked_softmax(scores, valid_lens, causal=False):
    """A student's right answer (as the notebook's solution, written again)."""
    n_q, n_k = scores.shape[-2:]
    allowed = (np.arange(n_k) < np.asarray(valid_lens)[:, None])[:, None, None, :]
    if causal:
        allowed = allowed & np.tri(n_q, n_k, dtype=bool)
    s = np.where(allowed, scores, -np.inf)
    peak = s.max(axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isfinite(peak), peak, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def masked_loop(scores, valid_lens, causal=False):
    """Another right answer: a loop over the batch, an epsilon-free safe division."""
    out = np.zeros_like(scores)
    n_q, n_k = scores.shape[-2:]
    for b, length in enumerate(valid_lens):
        ok = np.arange(n_k) < length
        ok = ok & np.tri(n_q, n_k, dtype=bool) if causal else np.broadcast_to(ok, (n_q, n_k))
        s = np.where(ok, scores[b], -np.inf)
        rows = ok.any(axis=-1)
        e = np.exp(s[..., rows, :] - s[..., rows, :].max(axis=-1, keepdims=True))
        out[b][..., rows, :] = e / e.sum(axis=-1, keepdims=True)
    return out


@pytest.mark.parametrize("fn", [masked_softmax, masked_loop])
def test_masked_softmax_accepts(fn, capsys):
    accepts(beyond.q4_6_masked_softmax, fn, capsys)


def student_mask(bug):
    """masked_softmax as a student writes it, with ``bug``."""

    def masked(scores, valid_lens, causal=False):
        n_q, n_k = scores.shape[-2:]
        lens = np.asarray(valid_lens)
        if bug == "first length":
            lens = np.full_like(lens, lens[0])
        keys = np.arange(n_k)
        real = (keys <= lens[:, None]) if bug == "j <= length" else (keys < lens[:, None])
        real = real[:, None, None, :]
        if bug == "queries padded":
            real = (np.arange(n_q) < lens[:, None])[:, None, :, None]
        if bug == "no padding":
            real = np.ones((1, 1, 1, n_k), bool)
        tri = {"np.triu": np.triu(np.ones((n_q, n_k), bool)), "k=-1": np.tri(n_q, n_k, k=-1, dtype=bool)}.get(
            bug, np.tri(n_q, n_k, dtype=bool))
        use = (causal and bug != "causal ignored") or bug == "always causal"
        allowed = (real | tri if bug == "or" else real & tri) if use else real
        if bug == "after softmax":
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True) * allowed
        fill = {"fill 0": 0.0, "fill -1e9": -1e9, "d2l's -1e6": -1e6}.get(bug, -np.inf)
        s = np.where(allowed, scores, fill)
        if bug == "nan rows":
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
        peak = s.max(axis=-1, keepdims=True)
        e = np.exp(s - np.where(np.isfinite(peak), peak, 0.0))
        total = e.sum(axis=-1, keepdims=True)
        return np.divide(e, total, out=np.zeros_like(e), where=total > 0)

    return masked


MASK_BUGS = [
    ("after softmax", "mask-after-softmax", "applied after the softmax"),
    ("fill 0", "mask-fill-zero", "Masked scores are set to 0"),
    ("np.triu", "mask-wrong-way", "the wrong triangle"),
    ("k=-1", "causal-mask-applied", "hides the diagonal"),
    ("nan rows", "fully-masked-nan", "gives 0/0 = NaN"),
    ("fill -1e9", "fully-masked-uniform", "comes out uniform"),
    ("d2l's -1e6", "fully-masked-uniform", "d2l's -1e6"),
    ("queries padded", "padding-masks-queries", "instead of its keys"),
    ("j <= length", "padding-off-by-one", "One key too many"),
    ("first length", "padding-one-length", "the first one's length"),
    ("no padding", "padding-ignored", "padding mask is missing"),
    ("causal ignored", "causal-mask-applied", "causal=True is ignored"),
    ("always causal", "causal-mask-applied", "with causal=False too"),
    ("or", "masks-combined-with-or", "combined with \"or\""),
]


@pytest.mark.parametrize("bug, tag, says", MASK_BUGS, ids=[b for b, _, _ in MASK_BUGS])
@pytest.mark.parametrize("hidden", [False, True])
def test_each_mask_mistake_is_named(bug, tag, says, hidden):
    with pytest.raises(WrongAnswer) as info:
        beyond.q4_6_masked_softmax(student_mask(bug), hidden=hidden)
    assert info.value.misconception == tag, str(info.value)
    assert says in str(info.value)


def test_each_mask_mistake_shows_in_a_visible_case_and_is_told_apart():
    for mistake in today.MASK_MISTAKES:
        for case in today.MASK_CASES:
            scores, lens = today.mask_inputs(*case)
            right = today.masked_weights(scores, lens, case[5])
            wrong = today.masked_weights(scores, lens, case[5], mistake)
            if np.allclose(wrong, right, atol=today.MASK_TOL):
                continue
            for other in today.MASK_MISTAKES:
                also = today.masked_weights(scores, lens, case[5], other)
                assert other == mistake or not np.allclose(also, wrong, atol=1e-6), (mistake, other)
            break
        else:
            raise AssertionError(f"{mistake} changes no visible case")


def test_the_visible_mask_cases_try_every_kind_the_hidden_ones_try():
    visible = {today.mask_kind(*case) for case in today.MASK_CASES}
    hidden = {today.mask_kind(*case) for case in today.MASK_HIDDEN_CASES}
    words = {word for kind in visible for word in kind}
    assert {word for kind in hidden for word in kind} <= words, hidden
    assert {"a row with no key", "n_q != n_k", "large scores", "causal", "padding only"} <= words
    assert all(case[0] != case[1] for case in today.MASK_CASES + today.MASK_HIDDEN_CASES if case[1] > 1), \
        "batch == h would hide a mask broadcast over the heads"


@pytest.mark.parametrize("fn, says", [
    (None, "no answer yet"),
    (lambda s, v, c=False: s.sum(axis=1), "should return weights of the shape of the scores"),
    (lambda s, v, c=False: mha.softmax(s), "Write it with numpy"),
    (lambda s, v, c=False: np.exp(s) / np.exp(s).sum(axis=-1, keepdims=True) * 0 + 0.5, "does not give the masked weights"),
])
def test_masked_softmax_wrong_kinds(fn, says):
    with pytest.raises(WrongAnswer) as info:
        beyond.q4_6_masked_softmax(fn)
    assert says in str(info.value), str(info.value)


# --- Problem 4.7 -----------------------------------------------------------------------------------------


def attention_in_blocks(q, K, V, block_size):
    m, total, acc = -np.inf, 0.0, np.zeros(V.shape[-1])
    for start in range(0, len(K), block_size):
        s = K[start:start + block_size] @ q / np.sqrt(len(q))
        m_new = max(m, s.max())
        p = np.exp(s - m_new)
        c = np.exp(m - m_new)
        total, acc, m = total * c + p.sum(), acc * c + p @ V[start:start + block_size], m_new
    return acc / total


def test_the_block_reference_agrees_with_mha_core_and_the_blocked_form():
    for case in today.BLOCK_CASES + today.BLOCK_HIDDEN_CASES:
        q, K, V = today.block_inputs(*case)
        out, _ = mha.scaled_dot_product_attention(q[None], K, V)
        np.testing.assert_allclose(today.full_attention(q, K, V), out[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(today.blocked(q, K, V, case[3]), out[0], rtol=1e-10, atol=1e-12)


def test_the_visible_block_cases_are_long_large_rising_and_try_every_kind():
    visible = {today.block_kind(*case) for case in today.BLOCK_CASES}
    hidden = {today.block_kind(*case) for case in today.BLOCK_HIDDEN_CASES}
    words = {word for kind in visible for word in kind}
    assert {word for kind in hidden for word in kind} <= words
    assert {"rising", "large", "long", "last block partial", "one block", "blocks of one"} <= words
    q, K, V = today.block_inputs(*today.BLOCK_CASES[0])
    s = K @ q
    block = today.BLOCK_CASES[0][3]
    maxima = [s[i:i + block].max() for i in range(0, len(s), block)]
    assert sum(b > max(maxima[:i]) for i, b in enumerate(maxima) if i) >= 5, "the maximum grows again and again"
    q, K, V = today.block_inputs(*today.BLOCK_CASES[2])
    assert np.abs(K @ q / np.sqrt(len(q))).max() > 710  # e^s overflows a float without the maximum


def student_blocks(bug):
    def blocks(q, K, V, block_size):
        m, total, acc = -np.inf, 0.0, np.zeros(V.shape[-1])
        stop = len(K) - len(K) % block_size if bug == "full blocks only" and len(K) > block_size else len(K)
        for start in range(0, stop, block_size):
            s = K[start:start + block_size] @ q / (1.0 if bug == "no scale" else np.sqrt(len(q)))
            m_new = s.max() if bug == "own max" else max(m, s.max())
            p = np.exp(s - m_new)
            c = np.exp(m - m_new)
            if bug == "no exp shift":
                p, c = np.exp(s), 1.0
            if bug == "upside down":
                c = np.exp(m_new - m)
            total = total * (1.0 if bug in ("no rescale", "acc only", "own max") else c) + p.sum()
            acc = acc * (1.0 if bug in ("no rescale", "sum only", "own max") else c) + p @ V[start:start + block_size]
            m = m_new
        return acc / total

    return blocks


BLOCK_BUGS = [
    ("no rescale", "online-softmax-no-rescale", "are not rescaled when the maximum changes"),
    ("sum only", "online-softmax-no-rescale", "the accumulated weighted values are not"),
    ("acc only", "online-softmax-no-rescale", "but the running sum is not"),
    ("own max", "online-softmax-no-rescale", "against its own maximum"),
    ("full blocks only", "last-block-dropped", "The last, partial block is left out"),
    ("no scale", "no-scaling", "No scaling"),
    ("no exp shift", "softmax-overflows", "subtract the running maximum"),
    ("upside down", "softmax-overflows", "upside down"),
]


@pytest.mark.parametrize("bug, tag, says", BLOCK_BUGS, ids=[b for b, _, _ in BLOCK_BUGS])
@pytest.mark.parametrize("hidden", [False, True])
def test_each_block_mistake_is_named(bug, tag, says, hidden):
    with pytest.raises(WrongAnswer) as info:
        beyond.q4_7_attention_in_blocks(student_blocks(bug), hidden=hidden)
    assert info.value.misconception == tag, str(info.value)
    assert says in str(info.value)


def test_attention_in_blocks_accepts(capsys):
    accepts(beyond.q4_7_attention_in_blocks, attention_in_blocks, capsys)


def test_each_block_mistake_shows_in_a_visible_case_and_is_told_apart():
    for mistake in today.BLOCK_MISTAKES:
        for case in today.BLOCK_CASES:
            q, K, V = today.block_inputs(*case)
            right = today.full_attention(q, K, V)
            wrong = today.blocked(q, K, V, case[3], mistake)
            if np.allclose(wrong, right):
                continue
            for other in today.BLOCK_MISTAKES:
                also = today.blocked(q, K, V, case[3], other)
                assert other == mistake or not np.allclose(also, wrong, rtol=1e-6), (mistake, other)
            break
        else:
            raise AssertionError(f"{mistake} changes no visible case")


@pytest.mark.parametrize("fn, says", [
    (None, "no answer yet"),
    (lambda q, K, V, b: V, "one output vector"),
    (lambda q, K, V, b: mha.scaled_dot_product_attention(q[None], K, V)[0][0], "Write it with numpy"),
    (lambda q, K, V, b: V.mean(axis=0), "does not give softmax"),
])
def test_attention_in_blocks_wrong_kinds(fn, says):
    with pytest.raises(WrongAnswer) as info:
        beyond.q4_7_attention_in_blocks(fn)
    assert says in str(info.value), str(info.value)


def all_scores_at_once(q, K, V, block_size):
    s = K @ q / np.sqrt(len(q))  # every score at once: block_size is never read
    w = np.exp(s - s.max())
    return w / w.sum() @ V


def blocks_in_a_helper(q, K, V, block_size):
    def rows(start):  # block_size reaches the loop through an inner function
        return slice(start, start + block_size)

    m, total, acc = -np.inf, 0.0, np.zeros(V.shape[-1])
    for start in range(0, len(K), 1):
        s = K[rows(start)][:1] @ q / np.sqrt(len(q))
        m_new = max(m, s.max())
        total = total * np.exp(m - m_new) + np.exp(s - m_new).sum()
        acc = acc * np.exp(m - m_new) + np.exp(s - m_new) @ V[rows(start)][:1]
        m = m_new
    return acc / total


@pytest.mark.parametrize("hidden", [False, True])
def test_all_the_scores_at_once_is_named_though_its_output_is_right(hidden):
    with pytest.raises(WrongAnswer) as info:
        beyond.q4_7_attention_in_blocks(all_scores_at_once, hidden=hidden)
    assert info.value.misconception == "all-scores-at-once" and "never reads `block_size`" in str(info.value)


@pytest.mark.parametrize("fn", [attention_in_blocks, blocks_in_a_helper, student_blocks("none"),
                                lambda q, K, V, *rest: all_scores_at_once(q, K, V, None)])
def test_what_reads_block_size_or_cannot_be_read_is_not_taken_for_all_scores_at_once(fn, capsys):
    beyond.q4_7_attention_in_blocks(fn)
    assert capsys.readouterr().out.startswith("✔ Correct.")


SOURCES = {
    "all at once": ("def attention_in_blocks(q, K, V, block_size):\n    s = K @ q\n    return s @ V", True),
    "a loop": ("def attention_in_blocks(q, K, V, b):\n    for i in range(0, len(K), b):\n        pass", False),
    "an inner function": ("def attention_in_blocks(q, K, V, b):\n    f = lambda i: K[i:i + b]\n    return f(0)", False),
    "locals()": ("def attention_in_blocks(q, K, V, b):\n    return locals()['b']", False),
    "*args": ("def attention_in_blocks(q, *rest):\n    return q", False),
    "no definition": ("attention_in_blocks = lambda q, K, V, b: q", False),
    "redefined": ("def attention_in_blocks(q, K, V, b):\n    return b", True),  # the last definition counts
}


@pytest.mark.parametrize("case", SOURCES)
def test_the_graders_reading_of_the_cells_agrees(case):
    """In grading the function runs in the student's process: its cells' source is read instead of its code."""
    from autograders.checks import own_work

    source, ignored = SOURCES[case]
    cells = [source] if case != "redefined" else [SOURCES["a loop"][0], "x = 1", source.replace("return b", "return q")]
    assert own_work._source_ignores(cells, "attention_in_blocks", 3) is ignored


def test_a_definition_replaced_by_an_assignment_is_not_read_as_the_answer():
    from autograders.checks import own_work

    cells = [SOURCES["all at once"][0], "attention_in_blocks = lambda q, K, V, b: q"]  # the lambda is what runs
    assert own_work._source_ignores(cells, "attention_in_blocks", 3) is False


# --- Problem 4.7: where n² matters, from mha_core's own counts ------------------------------------------


def test_the_claim_about_n_squared_holds_in_mha_cores_flop_counts():
    """At n = 10 (d_model = 512, h = 8) the projections cost about a hundred times the n² stages (scores and
    weighted sums), and they are even at n = 2 d_model: computed from mha.flop_count, stage by stage."""

    def ratio(d_model, h, n):
        stages = mha.flop_count(d_model, h, n)
        return (stages["projections"] + stages["output_projection"]) / (stages["scores"] + stages["weighted_sum"])

    assert 90 <= ratio(512, 8, 10) <= 110
    for entry in (problems.SHEET_4_7, *problems.COST_4_7.entries):
        d, h, n = entry["d_model"], entry["h"], entry["n_short"]
        assert ratio(d, h, 2 * d) == 1.0
        assert ratio(d, h, 2 * d - 1) > 1 > ratio(d, h, 2 * d + 1)
        n_entry = problems.COST_4_7.view(entry)
        assert problems.PROJECTIONS_OVER_SCORES.answer(n_entry) == pytest.approx(ratio(d, h, n), rel=1e-12)
        assert problems.EVEN_N.answer(n_entry) == 2 * d


def test_a_padding_mask_broadcast_over_the_heads_axis_is_explained_with_the_shapes():
    def masked(scores, valid_lens, causal=False):
        n_q, n_k = scores.shape[-2:]
        real = (np.arange(n_k) < np.asarray(valid_lens)[:, None])[:, None, :]  # (batch, 1, n_k): one axis short
        s = np.where(real, scores, -np.inf)
        e = np.exp(s - s.max(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)

    with pytest.raises(WrongAnswer) as info:
        beyond.q4_6_masked_softmax(masked)
    message = str(info.value)
    assert "shapes (2, 1, 4) and (2, 3, 4, 4)" in message and "(2, 1, 1, 4)" in message, message
    assert "broadcasts over the heads" in message
