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
        if bug in ("after softmax, renormalised", "0/0"):  # zeroed after the softmax, then divided by what is left
            w = np.exp(scores - scores.max(axis=-1, keepdims=True)) * allowed
            total = w.sum(axis=-1, keepdims=True)
            return w / total if bug == "0/0" else np.divide(w, total, out=np.zeros_like(w), where=total > 0)
        if bug == "float32":
            scores = scores.astype(np.float32)
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
    ("nan rows", "fully-masked-nan", "gives NaN"),
    ("fill -1e9", "fully-masked-uniform", "comes out uniform"),
    ("d2l's -1e6", "fully-masked-uniform", "d2l's -1e6"),
    ("queries padded", "padding-masks-queries", "instead of its keys"),
    ("j <= length", "padding-off-by-one", "One key too many"),
    ("first length", "padding-one-length", "the first one's length"),
    ("no padding", "padding-ignored", "padding mask is missing"),
    ("causal ignored", "causal-mask-applied", "causal=True is ignored"),
    ("always causal", "causal-mask-applied", "with causal=False too"),
    ("or", "masks-combined-with-or", "combined with \"or\""),
    ("after softmax, renormalised", "mask-after-softmax-renormalised", "after the softmax, then renormalised"),
    ("0/0", "fully-masked-nan", "0/0 = NaN"),  # no -inf anywhere: the message claims none
    ("float32", "float32", "float32"),
]


@pytest.mark.parametrize("bug, tag, says", MASK_BUGS, ids=[b for b, _, _ in MASK_BUGS])
@pytest.mark.parametrize("hidden", [False, True])
def test_each_mask_mistake_is_named(bug, tag, says, hidden):
    with pytest.raises(WrongAnswer) as info:
        beyond.q4_6_masked_softmax(student_mask(bug), hidden=hidden)
    assert info.value.misconception == tag, str(info.value)
    assert says in str(info.value)


def test_a_row_of_nan_is_explained_by_what_the_code_does():
    """The empty row's NaN: a sum of 0 (the code multiplies by the mask, no -inf anywhere) or -inf - (-inf) (a shift
    by the maximum of -inf scores): the message says both, and never that every score is -inf."""
    for bug in ("0/0", "nan rows"):
        with pytest.raises(WrongAnswer) as info:
            beyond.q4_6_masked_softmax(student_mask(bug))
        message = str(info.value)
        assert "every score is -inf" not in message and "0/0 = NaN" in message and "-inf - (-inf)" in message


def test_float32_weights_are_named_by_their_precision():
    scores, lens = today.mask_inputs(*today.MASK_CASES[0])
    error = np.abs(student_mask("float32")(scores, lens) - today.masked_weights(scores, lens, False)).max()
    assert today.MASK_TOL < error < 1e-6  # wrong at the check's 1e-9, right at float32's precision
    with pytest.raises(WrongAnswer) as info:
        beyond.q4_6_masked_softmax(student_mask("float32"))
    assert "1e-9" in str(info.value) and "precision" in str(info.value)


def test_each_mask_mistake_shows_in_a_visible_case_and_is_told_apart():
    """As the check compares: within MASK_TOL is right, within 1e-6 of a mistake's output (that is not right) is
    that mistake, neither relative to the weights' size."""
    for mistake in today.MASK_MISTAKES:
        for case in today.MASK_CASES:
            scores, lens = today.mask_inputs(*case)
            right = today.masked_weights(scores, lens, case[5])
            wrong = today.masked_weights(scores, lens, case[5], mistake)
            if np.allclose(wrong, right, rtol=0, atol=today.MASK_TOL):
                continue
            for other in today.MASK_MISTAKES:
                also = today.masked_weights(scores, lens, case[5], other)
                if other != mistake and not np.allclose(also, right, rtol=0, atol=today.MASK_TOL):
                    assert not np.allclose(also, wrong, rtol=0, atol=1e-6), (mistake, other)
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
        if m_new == -np.inf:
            continue
        p = np.exp(s - m_new)
        c = np.exp(m - m_new)
        total, acc, m = total * c + p.sum(), acc * c + p @ V[start:start + block_size], m_new
    return acc / total


def test_the_block_reference_agrees_with_mha_core_and_the_blocked_form():
    for case in today.BLOCK_CASES + today.BLOCK_HIDDEN_CASES:
        q, K, V = today.block_inputs(*case)
        seen = np.isfinite(K).all(axis=1)  # a key of score -inf is one the query may not see: mha_core's mask
        out, _ = mha.scaled_dot_product_attention(q[None], np.where(seen[:, None], K, 0.0), V, mask=seen[None])
        np.testing.assert_allclose(today.full_attention(q, K, V), out[0], rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(today.blocked(q, K, V, case[3]), out[0], rtol=1e-10, atol=1e-12)


def test_the_visible_block_cases_are_long_large_rising_and_try_every_kind():
    visible = {today.block_kind(*case) for case in today.BLOCK_CASES}
    hidden = {today.block_kind(*case) for case in today.BLOCK_HIDDEN_CASES}
    words = {word for kind in visible for word in kind}
    assert {word for kind in hidden for word in kind} <= words
    assert {"rising", "large", "long", "last block partial", "one block", "blocks of one", "very negative",
            "-inf"} <= words
    q, K, V = today.block_inputs(*today.BLOCK_CASES[0])
    s = K @ q
    block = today.BLOCK_CASES[0][3]
    maxima = [s[i:i + block].max() for i in range(0, len(s), block)]
    assert sum(b > max(maxima[:i]) for i, b in enumerate(maxima) if i) >= 5, "the maximum grows again and again"
    q, K, V = today.block_inputs(*today.BLOCK_CASES[2])
    assert np.abs(K @ q / np.sqrt(len(q))).max() > 710  # e^s overflows a float without the maximum
    for case in today.BLOCK_CASES + today.BLOCK_HIDDEN_CASES:
        q, K, V = today.block_inputs(*case)
        s = K @ q / np.sqrt(len(q))
        if case[4] == "very negative":  # every e^s underflows to 0 unless measured against the largest score
            assert s.max() < -745 and np.exp(s).sum() == 0
        if case[4] == "-inf":  # the whole first block is -inf, and some later keys, never all of them
            assert np.isneginf(s[:case[3]]).all() and np.isneginf(s[case[3]:]).any() and np.isfinite(s).any()


def student_blocks(bug):
    def blocks(q, K, V, block_size):
        m, total, acc = 0.0 if bug == "max from 0" else -np.inf, 0.0, np.zeros(V.shape[-1])
        stop = len(K) - len(K) % block_size if bug == "full blocks only" and len(K) > block_size else len(K)
        for start in range(0, stop, block_size):
            s = K[start:start + block_size] @ q / (1.0 if bug == "no scale" else np.sqrt(len(q)))
            m_new = s.max() if bug == "own max" else max(m, s.max())
            if m_new == -np.inf and bug != "no -inf guard":
                continue
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
    ("max from 0", "online-max-from-zero", "The running maximum starts at 0"),
    ("no -inf guard", "online-max-still-inf", "-inf - (-inf) is NaN"),
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
    def rows(start):  # block_size reaches the loop through inner functions only
        return slice(start, start + block_size)

    def step():
        return block_size

    m, total, acc = -np.inf, 0.0, np.zeros(V.shape[-1])
    for start in range(0, len(K), step()):
        s = K[rows(start)] @ q / np.sqrt(len(q))
        m_new = max(m, s.max())
        if m_new == -np.inf:
            continue
        total = total * np.exp(m - m_new) + np.exp(s - m_new).sum()
        acc = acc * np.exp(m - m_new) + np.exp(s - m_new) @ V[rows(start)]
        m = m_new
    return acc / total


@pytest.mark.parametrize("hidden", [False, True])
def test_all_the_scores_at_once_is_named_though_its_output_is_right(hidden):
    with pytest.raises(WrongAnswer) as info:
        beyond.q4_7_attention_in_blocks(all_scores_at_once, hidden=hidden)
    assert info.value.misconception == "all-scores-at-once" and "never reads `block_size`" in str(info.value)


@pytest.mark.parametrize("fn", [attention_in_blocks, blocks_in_a_helper, student_blocks("none")])
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


# --- Independent right answers, and the wrong ones that gave the right output ---------------------------


def masked_per_query(scores, valid_lens, causal=False):
    """4.6 with a loop over every sequence, head and query, and math.exp: no broadcasting at all."""
    import math

    out = np.zeros(np.shape(scores))
    batch, h, n_q, n_k = out.shape
    for b in range(batch):
        for head in range(h):
            for i in range(n_q):
                seen = [j for j in range(n_k) if j < valid_lens[b] and (not causal or j <= i)]
                if not seen:
                    continue
                top = max(scores[b][head][i][j] for j in seen)
                exps = {j: math.exp(scores[b][head][i][j] - top) for j in seen}
                for j, e in exps.items():
                    out[b, head, i, j] = e / sum(exps.values())
    return out


def masked_on_a_copy(scores, valid_lens, causal=False):
    """4.6 writing -inf in place, into its own copy of the scores, and the softmax in place too."""
    s = np.array(scores, dtype=float)
    n_q, n_k = s.shape[-2:]
    hidden = np.arange(n_k) >= np.asarray(valid_lens)[:, None, None, None]
    if causal:
        hidden = hidden | np.triu(np.ones((n_q, n_k), bool), k=1)
    s[np.broadcast_to(hidden, s.shape)] = -np.inf
    empty = np.isneginf(s).all(axis=-1, keepdims=True)
    s[np.broadcast_to(empty, s.shape)] = 0.0
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    s[np.broadcast_to(empty, s.shape)] = 0.0
    return s


def masked_additive(scores, valid_lens, causal=False):
    """4.6 with an additive mask (0 or -inf added to the scores), as many libraries write it."""
    n_q, n_k = scores.shape[-2:]
    keep = np.arange(n_k)[None, :] < np.asarray(valid_lens)[:, None]
    bias = np.where(keep, 0.0, -np.inf)[:, None, None, :]
    if causal:
        bias = bias + np.where(np.tril(np.ones((n_q, n_k))) > 0, 0.0, -np.inf)
    s = scores + bias
    top = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - np.where(np.isneginf(top), 0.0, top))
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1.0, total)


@pytest.mark.parametrize("fn", [masked_per_query, masked_on_a_copy, masked_additive])
@pytest.mark.parametrize("hidden", [False, True])
def test_other_right_masked_softmaxes_pass(fn, hidden, capsys):
    beyond.q4_6_masked_softmax(fn, hidden=hidden)
    assert capsys.readouterr().out.startswith("✔ Correct.")


def _in_place(how):
    """masked_softmax that writes into the caller's ``scores`` (its output is right)."""

    def masked(scores, valid_lens, causal=False):
        n_q, n_k = scores.shape[-2:]
        allowed = (np.arange(n_k) < np.asarray(valid_lens)[:, None])[:, None, None, :]
        if causal:
            allowed = allowed & np.tri(n_q, n_k, dtype=bool)
        allowed = np.broadcast_to(allowed, scores.shape)
        if how == "-inf written in":
            scores[~allowed] = -np.inf
        else:
            np.putmask(scores, ~allowed, -np.inf)
        peak = scores.max(axis=-1, keepdims=True)
        e = np.exp(scores - np.where(np.isfinite(peak), peak, 0.0))
        total = e.sum(axis=-1, keepdims=True)
        return np.divide(e, total, out=np.zeros_like(e), where=total > 0)

    return masked


@pytest.mark.parametrize("how", ["-inf written in", "np.putmask"])
@pytest.mark.parametrize("hidden", [False, True])
def test_a_masked_softmax_that_writes_into_the_scores_is_named(how, hidden):
    fn = _in_place(how)
    scores, lens = today.mask_inputs(*today.MASK_CASES[0])
    np.testing.assert_allclose(fn(scores.copy(), lens, False), today.masked_weights(scores, lens, False), atol=1e-12)
    with pytest.raises(WrongAnswer) as info:
        beyond.q4_6_masked_softmax(fn, hidden=hidden)
    assert info.value.misconception == "mutates-input" and "writes into the `scores`" in str(info.value)


@pytest.mark.parametrize("hidden", [False, True])
def test_a_causal_mask_aligned_bottom_right_is_named_in_a_visible_case(hidden):
    def bottom_right(scores, valid_lens, causal=False):
        n_q, n_k = scores.shape[-2:]
        allowed = (np.arange(n_k) < np.asarray(valid_lens)[:, None])[:, None, None, :]
        if causal:
            allowed = allowed & np.tri(n_q, n_k, k=n_k - n_q, dtype=bool)  # the last query sees the last key
        return masked_additive(np.where(allowed, scores, -np.inf), np.full(len(valid_lens), n_k), False)

    assert any(case[5] and case[2] != case[3] for case in today.MASK_CASES)  # visible: n_q != n_k, causal
    with pytest.raises(WrongAnswer) as info:
        beyond.q4_6_masked_softmax(bottom_right, hidden=hidden)
    assert info.value.misconception == "causal-mask-applied" and "bottom-right" in str(info.value)


def blocks_per_key(q, K, V, block_size):
    """4.7 with plain Python floats, one key at a time inside each block."""
    import math

    m, total, acc = -math.inf, 0.0, [0.0] * V.shape[1]
    for start in range(0, len(K), block_size):
        for j in range(start, min(start + block_size, len(K))):
            s = float(np.dot(K[j], q)) / math.sqrt(len(q))
            if s == -math.inf:
                continue
            m_new = max(m, s)
            c, p = math.exp(m - m_new), math.exp(s - m_new)
            total = total * c + p
            acc = [a * c + p * v for a, v in zip(acc, V[j])]
            m = m_new
    return np.array(acc) / total


def blocks_split(q, K, V, block_size):
    """4.7 over np.array_split's blocks, a copy of K scaled once, and a very negative finite start."""
    K = K.astype(float) / np.sqrt(len(q))
    cuts = range(block_size, len(K), block_size)
    m, total, acc = -1e300, 0.0, 0.0
    for K_b, V_b in zip(np.array_split(K, cuts), np.array_split(V, cuts)):
        s = K_b @ q
        m_new = max(m, np.max(s))
        p = np.exp(s - m_new)
        total = total * np.exp(m - m_new) + p.sum()
        acc = acc * np.exp(m - m_new) + p @ V_b
        m = m_new
    return acc / total


def blocks_where(q, K, V, block_size):
    """4.7 with the first block handled apart and np.where guarding every shift."""
    scale = np.sqrt(q.shape[0])
    s = K[:block_size] @ q / scale
    m = s.max()
    p = np.exp(s - m) if np.isfinite(m) else np.zeros_like(s)
    total, acc = p.sum(), p @ V[:block_size]
    for start in range(block_size, K.shape[0], block_size):
        s = K[start:start + block_size] @ q / scale
        m_new = np.maximum(m, s.max())
        shift = np.where(np.isfinite(m_new), m_new, 0.0)
        c = np.exp(m - shift)
        p = np.exp(s - shift)
        total, acc, m = total * c + p.sum(), acc * c + p @ V[start:start + block_size], m_new
    return acc / total


@pytest.mark.parametrize("fn", [attention_in_blocks, blocks_per_key, blocks_split, blocks_where])
@pytest.mark.parametrize("hidden", [False, True])
def test_other_right_blocked_attentions_pass_and_hold_one_block(fn, hidden, capsys):
    beyond.q4_7_attention_in_blocks(fn, hidden=hidden)
    assert capsys.readouterr().out.startswith("✔ Correct.")


def joined_blocks(q, K, V, block_size):
    """Every block's scores kept and joined, then one softmax: the blocks are only a way to compute K q."""
    s = np.concatenate([K[i:i + block_size] @ q for i in range(0, len(K), block_size)]) / np.sqrt(len(q))
    w = np.exp(s - s.max())
    return w @ V / w.sum()


def reads_block_size_then_all_at_once(q, K, V, block_size):
    assert block_size > 0  # block_size is read, and nothing else
    return all_scores_at_once(q, K, V, block_size)


def max_of_the_block_maxima_first(q, K, V, block_size):
    """A loop over blocks that keeps every block's exponentials until the end."""
    kept = []
    for start in range(0, len(K), block_size):
        kept.append(K[start:start + block_size] @ q / np.sqrt(len(q)))
    top = max(s.max() for s in kept)
    e = [np.exp(s - top) for s in kept]
    return sum(e_b @ V[i * block_size:(i + 1) * block_size] for i, e_b in enumerate(e)) / sum(x.sum() for x in e)


@pytest.mark.parametrize("fn", [joined_blocks, reads_block_size_then_all_at_once, max_of_the_block_maxima_first,
                                lambda q, K, V, *rest: all_scores_at_once(q, K, V, None)])
@pytest.mark.parametrize("hidden", [False, True])
def test_holding_all_the_scores_is_named_though_the_output_is_right(fn, hidden):
    q, K, V = today.block_inputs(*today.BLOCK_CASES[0])
    np.testing.assert_allclose(fn(q, K, V, 64), today.full_attention(q, K, V), rtol=1e-12)
    assert today.held_at_once(fn) >= 1
    with pytest.raises(WrongAnswer) as info:
        beyond.q4_7_attention_in_blocks(fn, hidden=hidden)
    assert info.value.misconception == "all-scores-at-once", str(info.value)
    assert "holds the scores of all the keys at once" in str(info.value)


def test_what_is_held_is_measured_beyond_copies_of_the_inputs():
    """A copy of K and V (d_k and d_v numbers per key) is not counted; the scores (1 per key) are."""

    def copies_then_blocks(q, K, V, block_size):
        return attention_in_blocks(q, np.array(K) * 1.0, V.copy(), block_size)

    def scores_kept(q, K, V, block_size):
        kept = K @ q  # noqa: F841 (held, unused)
        return attention_in_blocks(q, K, V, block_size)

    assert today.held_at_once(copies_then_blocks) < 0.25
    for right in (attention_in_blocks, blocks_split, blocks_where):
        assert today.held_at_once(right) < 0.25, right.__name__
    assert 0.9 < today.held_at_once(scores_kept) < 1.5


# --- In grading: the function runs in the student's process, its cells are read ----------------------


class _StudentSide:
    """Stands in for the re-check: runs the cell's function here on copies of the arguments (they go over as
    data), and holds the cells' sources as the re-check's session does."""

    def __init__(self, source, name):
        namespace = {"np": np}
        exec(source, namespace)
        self.func = namespace[name]
        self.session = type("Session", (), {"cells": [("cell 1", source)]})()

    def call(self, handle, args, name="function"):
        import copy

        return self.func(*copy.deepcopy(args))


def _remote(source, name):
    from autograders.student import protocol

    return protocol.RemoteFunction(_StudentSide(source, name), 0, name)


MUTATING = '''def masked_softmax(scores, valid_lens, causal=False):
    n_q, n_k = scores.shape[-2:]
    allowed = (np.arange(n_k) < np.asarray(valid_lens)[:, None])[:, None, None, :]
    if causal:
        allowed = allowed & np.tri(n_q, n_k, dtype=bool)
    scores[~np.broadcast_to(allowed, scores.shape)] = -np.inf
    peak = scores.max(axis=-1, keepdims=True)
    e = np.exp(scores - np.where(np.isfinite(peak), peak, 0.0))
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
'''
WHOLE_K = '''def attention_in_blocks(q, K, V, block_size):
    K = np.asarray(K, dtype=float)
    s = q @ K.T / np.sqrt(len(q)) + 0 * block_size
    w = np.exp(s - s.max())
    return w @ V / w.sum()
'''
BLOCKED = '''def attention_in_blocks(q, K, V, block_size):
    K = np.asarray(K, dtype=float)
    m, total, acc = -np.inf, 0.0, np.zeros(V.shape[-1])
    for start in range(0, len(K), block_size):
        s = K[start:start + block_size] @ q / np.sqrt(len(q))
        m_new = max(m, s.max())
        if m_new == -np.inf:
            continue
        c = np.exp(m - m_new)
        p = np.exp(s - m_new)
        total, acc, m = total * c + p.sum(), acc * c + p @ V[start:start + block_size], m_new
    return acc / total
'''


def test_in_grading_a_masked_softmax_that_writes_into_the_scores_is_named_from_its_cells(capsys):
    with pytest.raises(WrongAnswer) as info:
        beyond.q4_6_masked_softmax(_remote(MUTATING, "masked_softmax"), hidden=True)
    assert info.value.misconception == "mutates-input"
    beyond.q4_6_masked_softmax(_remote(MUTATING.replace("    scores[~", "    scores = scores.copy()\n    scores[~"),
                                       "masked_softmax"), hidden=True)
    assert capsys.readouterr().out.startswith("✔ Correct.")


def test_in_grading_a_product_of_the_whole_k_is_named_from_its_cells(capsys):
    with pytest.raises(WrongAnswer) as info:
        beyond.q4_7_attention_in_blocks(_remote(WHOLE_K, "attention_in_blocks"), hidden=True)
    assert info.value.misconception == "all-scores-at-once"
    beyond.q4_7_attention_in_blocks(_remote(BLOCKED, "attention_in_blocks"), hidden=True)
    assert capsys.readouterr().out.startswith("✔ Correct.")


MUTATES = {
    "subscript": ("def f(scores, v):\n    scores[0] = 1\n    return scores", True),
    "augmented": ("def f(scores, v):\n    scores -= scores.max()\n    return scores", True),
    "out=": ("def f(scores, v):\n    return np.exp(scores, out=scores)", True),
    "np.copyto": ("def f(scores, v):\n    np.copyto(scores, 0.0, where=v)\n    return scores", True),
    "a method": ("def f(scores, v):\n    scores.fill(0)\n    return scores", True),
    "a copy first": ("def f(scores, v):\n    scores = scores.copy()\n    scores[0] = 1\n    return scores", False),
    "np.where": ("def f(scores, v):\n    s = np.where(v, scores, -np.inf)\n    s[0] = 1\n    return s", False),
    "another argument": ("def f(scores, v):\n    v[0] = 1\n    return scores", False),
    "no definition": ("f = lambda scores, v: scores", False),
}


@pytest.mark.parametrize("case", MUTATES)
def test_the_graders_reading_of_a_function_that_writes_into_its_argument(case):
    from autograders.checks import own_work

    source, writes = MUTATES[case]
    assert own_work.mutates_argument_in_source([source], "f", 0) is writes


WHOLE = {
    "K @ q": ("def f(q, K, V, b):\n    return K @ q", True),
    "q @ K.T": ("def f(q, K, V, b):\n    return q @ K.T", True),
    "np.dot": ("def f(q, K, V, b):\n    return np.dot(K, q)", True),
    "scaled first": ("def f(q, K, V, b):\n    return (K / np.sqrt(len(q))) @ q", True),
    "an alias": ("def f(q, K, V, b):\n    keys = np.asarray(K)\n    return keys.dot(q)", True),
    "elementwise": ("def f(q, K, V, b):\n    return (K * q).sum(axis=1)", True),
    "a block": ("def f(q, K, V, b):\n    return K[:b] @ q", False),
    "a block of an alias": ("def f(q, K, V, b):\n    k = np.asarray(K)\n    return k[0:b] @ q", False),
    "scaled by a number": ("def f(q, K, V, b):\n    k = K * 2.0\n    return [k[i:i + b] @ q for i in range(0, len(k), b)]", False),
    "len and shape": ("def f(q, K, V, b):\n    return len(K) * K.shape[1]", False),
    "no definition": ("f = lambda q, K, V, b: K @ q", False),
}


@pytest.mark.parametrize("case", WHOLE)
def test_the_graders_reading_of_a_product_of_the_whole_argument(case):
    from autograders.checks import own_work

    source, whole = WHOLE[case]
    assert own_work.whole_argument_in_product([source], "f", 1) is whole
