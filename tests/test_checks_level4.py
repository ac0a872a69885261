"""The checks of Level 4 (Synthesis): right answers pass, known wrong ones name their misconception."""

import re

import numpy as np
import pytest

import mha_core as mha
from autograders.checks import level4 as check
from autograders.checks.feedback import WrongAnswer
from autograders.problems import attention_block as block, level4 as problems
from tests.checking import accepts as _accepts
from tests.checking import as_written, solution
from tests.checking import rejects as _rejects


def _raise(exc):
    def fn(*args):
        raise exc

    return fn


# --- Problem 4.1 ---------------------------------------------------------------


def right_count(d_model, h):
    return h * 3 * d_model * (d_model // h) + d_model * d_model


def test_the_hidden_cases_are_valid_and_the_count_is_flat_in_h():
    for d_model, h in check.PARAM_CASES:
        assert mha.parameter_count(d_model, h) == right_count(d_model, h) == 4 * d_model**2


@pytest.mark.parametrize(
    "fn", [right_count, lambda d_model, h: 4 * d_model**2, lambda d_model, h: 3.0 * h * d_model * (d_model / h) + d_model**2]
)
def test_parameter_count_accepts(fn, capsys):
    _accepts(check.q4_1_parameter_count, fn, capsys)


@pytest.mark.parametrize(
    "fn, says",
    [
        (lambda d, h: 3 * d * d, "forgot W^O"),
        (lambda d, h: 4 * h * d * d, "parameters grow with h"),
        (lambda d, h: 4 * d * (d // h), "one head only"),
        (lambda d, h: 3 * d * (d // h) + d * d, "projections of one head only"),
        (lambda d, h: 4 * d * d + 4 * d, "You counted biases"),
        (lambda d, h: 4 * d, "square it"),
        (lambda d, h: d * d, "single d_model×d_model matrix"),
        (lambda d, h: 12345, "not the count"),
        (_raise(NotImplementedError()), "not written yet"),
        (_raise(NotImplementedError()), "has no answer yet"),
        (_raise(ValueError("bad")), "your function raised ValueError: bad"),
        (lambda d: 1, "raised TypeError"),
        (lambda d, h: [d], "should be a single number"),
        (None, "no answer yet"),
        ("4 * d_model**2", "should be a function"),
    ],
)
def test_parameter_count_names_the_misconception(fn, says):
    _rejects(check.q4_1_parameter_count, fn, says)


def test_parameter_count_hidden_catches_hard_coded_and_h_dependent_answers():
    hard_coded = lambda d_model, h: 1_048_576  # noqa: E731
    check.q4_1_parameter_count(hard_coded)
    message = _rejects(check.q4_1_parameter_count, hard_coded, "not numbers from the example", hidden=True)
    assert "1,048,576" not in message.split("d_model=512, h=8")[-1]  # names the failing case, not its answer
    grows_after_8 = lambda d_model, h: 4 * d_model**2 * max(1, h // 8)  # noqa: E731
    check.q4_1_parameter_count(grows_after_8)
    _rejects(check.q4_1_parameter_count, grows_after_8, "d_model=512, h=16", hidden=True)


def test_parameter_count_hidden_names_the_bias_convention_at_every_size():
    """Counting biases is PyTorch's convention: named at d_model = 512 and at the hidden sizes alike,
    never answered with the right count."""
    with_biases = lambda d_model, h: 4 * (d_model * d_model + d_model)  # noqa: E731 (a bias vector per projection)
    message = _rejects(check.q4_1_parameter_count, with_biases, "You counted biases", "weights only", hidden=True)
    assert "1,048,576" not in message and "1048576" not in message
    biased_elsewhere = lambda d_model, h: 4 * d_model**2 + (4 * d_model if d_model != 512 else 0)  # noqa: E731
    check.q4_1_parameter_count(biased_elsewhere)  # right at the visible size
    first_hidden = next((d, h) for d, h in check.PARAM_CASES if d != 512)
    _rejects(check.q4_1_parameter_count, biased_elsewhere, f"parameter_count({first_hidden[0]}, {first_hidden[1]})",
             "You counted biases", hidden=True)


def test_parameter_count_hidden_wrong_at_the_example_never_claims_it_right_there():
    message = _rejects(check.q4_1_parameter_count, lambda d, h: 3 * d * d, hidden=True)
    assert "right count for d_model=512, h=8" not in message, message


# --- Problem 4.2 ---------------------------------------------------------------


def test_expected_values_agree_with_the_plain_python_recomputation_and_the_sheet():
    for mine, by_hand in zip(problems.answers(problems.SHEET_4_2), problems.by_hand(problems.SHEET_4_2)):
        np.testing.assert_allclose(mine, by_hand, atol=1e-12)
    scaled, weights, output = problems.answers(problems.SHEET_4_2)
    assert np.round(scaled, 4).tolist() == [0.7071, 0.0, 0.7071, 1.4142]
    assert np.round(weights, 4).tolist() == [0.2212, 0.1091, 0.2212, 0.4486]
    assert np.round(output, 4).tolist() == [0.8847, 2.0124]


def _known():
    scaled, weights, output = problems.answers(problems.SHEET_4_2)
    return scaled, weights, output


# Right answers in every form and each declared misconception's wrong answer: tests/test_problems.py. Here,
# what the declarations leave to a hand-written diagnosis (a masked score, a near miss, the dot product).
@pytest.mark.parametrize(
    "value, says",
    [
        ([0.7071, 0.0, 0.7071, -np.inf], "causal mask applied wrongly"),
        ([0.7071, 0.0, 0.7071, -1e9], "causal mask applied wrongly"),
        ([0.707, 0.0, 0.707, 1.41], "close but not within"),
        ([1.0, 2.0, 3.0, 4.0], "compute the dot product"),
        ([np.nan, 0.0, 0.7071, 1.4142], "NaN"),
    ],
)
def test_scaled_scores_name_the_misconception(value, says):
    _rejects(check.q4_2_scaled_scores, value, says)


@pytest.mark.parametrize(
    "value, says",
    [
        ([0.3, 0.3, 0.3, 0.3], "add up to 1"),
        ([0.22, 0.11, 0.22, 0.45], "close but not within"),
    ],
)
def test_weights_name_the_misconception(value, says):
    _rejects(check.q4_2_weights, value, says)


def test_the_sheets_2_0123_is_its_rounded_terms_added():
    _, weights, output = _known()
    assert round(0.2181 + 1.7942, 4) == 2.0123  # the sheet's printed terms
    assert round(2 * weights[1], 4) == 0.2181 and round(4 * weights[3], 4) == 1.7943  # exactly: a digit higher
    assert abs(2.0123 - output[1]) <= check.TOL and round(output[1], 4) == 2.0124


@pytest.mark.parametrize("value, says", [([0.88, 2.01], "close but not within")])
def test_output_names_the_misconception(value, says):
    _rejects(check.q4_2_output, value, says)


# --- Problem 4.3 ---------------------------------------------------------------
# Declared in autograders/problems/attention_block.py: the notebook's solution passes and each declared mistake
# is named with its message and tag (tests/test_functions.py). Here: the declaration's reference and written
# block against a plain loop, what the declaration leaves to examples (the predicates on the output, the wrong
# kinds), other ways of writing the mistakes, the shape errors explained, fairness between visible and hidden.

ALL_CASES = block.CASES + block.HIDDEN_CASES
SOLUTION = as_written(solution(problems.ASSIGNMENT, "q4_3_multi_head_attention"), "multi_head_attention")


def declared(key):
    """The declared mistake ``key``'s wrong implementation, as a student's answer cell."""
    mistake = next(m for m in block.MULTI_HEAD_ATTENTION.mistakes if m.key == key)
    return as_written(str(mistake.wrong), "multi_head_attention")


def loop_mha(X, W_Q, W_K, W_V, W_O, h, causal=False):
    """Multi-head attention with plain loops over batch entries, heads, queries and keys."""
    if X.ndim == 3:
        return np.stack([loop_mha(x, W_Q, W_K, W_V, W_O, h, causal) for x in X])
    n, d_model = X.shape
    d_k = d_model // h
    heads = []
    for i in range(h):
        cols = slice(i * d_k, (i + 1) * d_k)
        Q, K, V = X @ W_Q[:, cols], X @ W_K[:, cols], X @ W_V[:, cols]
        out = np.zeros((n, d_k))
        for q in range(n):
            keys = range(q + 1) if causal else range(n)
            s = np.array([Q[q] @ K[j] for j in keys]) / np.sqrt(d_k)
            w = np.exp(s - s.max())
            w /= w.sum()
            out[q] = sum(w_j * V[j] for w_j, j in zip(w, keys))
        heads.append(out)
    return np.concatenate(heads, axis=1) @ W_O


def einsum_mha(X, W_Q, W_K, W_V, W_O, h, causal=False):
    n, d_model = X.shape[-2:]
    d_k = d_model // h
    Q, K, V = ((X @ W).reshape(*X.shape[:-1], h, d_k) for W in (W_Q, W_K, W_V))  # (..., n, h, d_k)
    s = np.einsum("...qhd,...khd->...hqk", Q, K) / np.sqrt(d_k)
    if causal:
        s = s + np.triu(np.full((n, n), -1e9), k=1)
    w = np.exp(s - s.max(-1, keepdims=True))
    w = w / w.sum(-1, keepdims=True)
    return np.einsum("...hqk,...khd->...qhd", w, V).reshape(X.shape) @ W_O


def test_the_reference_the_written_block_and_the_solution_agree_with_a_plain_loop():
    """The check's right output (mha_core's), the block the declared mistakes are written from (without a mistake)
    and the notebook's solution: each is multi-head attention, as a plain loop computes it."""
    unmistaken = as_written(str(block.written()), "multi_head_attention")
    for batch, n, d_model, h, causal, seed in ALL_CASES:
        assert d_model % h == 0
        X, Ws = block.inputs(batch, n, d_model, seed)
        expected = loop_mha(X, *Ws, h, causal)
        reference = block.MULTI_HEAD_ATTENTION.answer(block.view((batch, n, d_model, h, causal, seed)))
        for output in (reference, unmistaken(X, *Ws, h, causal), SOLUTION(X, *Ws, h, causal)):
            np.testing.assert_allclose(output, expected, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("fn", [SOLUTION, loop_mha, einsum_mha], ids=["solution", "loop", "einsum"])
def test_multi_head_attention_accepts_three_ways_of_writing_it(fn, capsys):
    _accepts(check.q4_3_multi_head_attention, fn, capsys)


def test_the_generic_message_names_fields_the_trace_has():
    """It suggests comparing with mha_core's trace: the names it gives are that record's, read by name."""
    import dataclasses

    message = _rejects(check.q4_3_multi_head_attention, _answer(lambda X, W_Q, W_O, h: X @ W_O),
                       "does not give multi-head attention", "not a tuple to unpack")
    fields = {f.name for f in dataclasses.fields(mha.MultiHeadAttention.from_seed(8, 2).trace(np.ones((3, 8))))}
    named = set(re.findall(r"\bt\.(\w+)", message))
    assert named == fields, named ^ fields


def _answer(value):
    return lambda X, W_Q, W_K, W_V, W_O, h, causal=False: value(X, W_Q, W_O, h)


def _nan_when_causal(X, W_Q, W_K, W_V, W_O, h, causal=False):
    out = SOLUTION(X, W_Q, W_K, W_V, W_O, h, causal)
    return out * np.nan if causal else out


@pytest.mark.parametrize(
    "fn, says",
    [
        (None, "no answer yet"),
        ("X @ W_O", "should be a function"),
        (_raise(NotImplementedError()), "has no answer yet"),
        (_raise(IndexError("oops")), "your function raised IndexError: oops"),
        (_answer(lambda X, W_Q, W_O, h: None), "returned None"),
        (lambda X, *W, causal=False: mha.multi_head_attention(X, None, *W, causal=causal), "with numpy"),
        (lambda *a: (SOLUTION(*a), None), "return the output array alone"),
        (_answer(lambda X, W_Q, W_O, h: "output"), "should return an array of numbers"),
        (_answer(lambda X, W_Q, W_O, h: X[..., : X.shape[-1] // h]), "concatenated, not summed"),
        (_answer(lambda X, W_Q, W_O, h: np.zeros((h, *X.shape[:-1], X.shape[-1] // h))), "the heads apart"),
        (_answer(lambda X, W_Q, W_O, h: X[:-1]), "should return an array of shape (5, 8) = (n, d_model), got (4, 8)"),
        (_nan_when_causal, "causal mask"),
        (_answer(lambda X, W_Q, W_O, h: X / 0), "division by zero"),
        (_answer(lambda X, W_Q, W_O, h: X @ W_O), "does not give multi-head attention"),
    ],
)
def test_multi_head_attention_wrong_kinds_and_shapes(fn, says):
    message = _rejects(check.q4_3_multi_head_attention, fn, says)
    assert not re.search(r"\d\.\d{3}", message), message


def test_the_visible_cases_try_every_kind_of_input_the_hidden_ones_try():
    """The hidden cases add values (sizes, seeds), never a kind of input the visible test has not tried."""
    visible = {block.case_kind(*case) for case in block.CASES}
    hidden = {block.case_kind(*case) for case in block.HIDDEN_CASES}
    assert hidden <= visible, hidden - visible
    assert {kind[0] for kind in visible} == {"2-D", "batched"} and {kind[1] for kind in visible} == {"causal", "not causal"}
    assert {"h = 1", "d_k = 1", "n = 1"} <= {word for kind in hidden for word in kind[2:]}
    assert not set(block.HIDDEN_CASES) & set(block.CASES)  # other values: seeds differ at least
    assert block.CASES[0][0] is None and not block.CASES[0][4]  # 2-D, causal off first


def _two_d_only(X, W_Q, W_K, W_V, W_O, h, causal=False):
    n, d_model = X.shape  # written for (n, d_model) only
    return SOLUTION(X, W_Q, W_K, W_V, W_O, h, causal)


def _flattens_the_batch(X, *rest):  # one long sequence: the batch entries attend to each other
    return SOLUTION(X.reshape(-1, X.shape[-1]), *rest).reshape(X.shape)


def _drops_the_batch(X, *rest):
    return SOLUTION(X[0] if X.ndim == 3 else X, *rest)


def _squeezes(X, W_Q, W_K, W_V, W_O, h, causal=False):  # np.squeeze drops the head axis when h = 1, or n = 1
    n, d_model = X.shape[-2:]
    d_k = d_model // h
    Q, K, V = (np.swapaxes((X @ W).reshape(*X.shape[:-1], h, d_k), -2, -3).squeeze() for W in (W_Q, W_K, W_V))
    s = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
    if causal:
        s = np.where(np.tri(n, dtype=bool), s, -np.inf)
    w = np.exp(s - s.max(-1, keepdims=True))
    heads = (w / w.sum(-1, keepdims=True)) @ V
    return np.swapaxes(heads.reshape(*X.shape[:-2], h, n, d_k), -2, -3).reshape(X.shape) @ W_O


def _uniform_when_one_wide(X, W_Q, W_K, W_V, W_O, h, causal=False):  # a special case for d_k = 1, wrong
    if X.shape[-1] == h:
        return SOLUTION(X, W_Q, W_K, W_V, W_O, 1, causal)
    return SOLUTION(X, W_Q, W_K, W_V, W_O, h, causal)


def _mask_from_first_row(X, W_Q, W_K, W_V, W_O, h, causal=False):  # a mask that needs n > 1
    n = X.shape[-2]
    if causal and n == 1:
        raise IndexError("index 1 is out of bounds for axis 0 with size 1")
    return SOLUTION(X, W_Q, W_K, W_V, W_O, h, causal)


def _only_causal_right(X, W_Q, W_K, W_V, W_O, h, causal=False):
    return SOLUTION(X, W_Q, W_K, W_V, W_O, h, True)


def _fails(check_fn, fn, hidden):
    try:
        check_fn(fn, hidden=hidden)
    except WrongAnswer:
        return True
    return False


FAIRNESS = [SOLUTION, loop_mha, einsum_mha, _two_d_only, _flattens_the_batch, _drops_the_batch, _squeezes,
            _uniform_when_one_wide, _mask_from_first_row, _only_causal_right, declared("scaled-by-d-k"),
            declared("mask-wrong-way/flipped")]


@pytest.mark.parametrize("fn", FAIRNESS, ids=lambda f: getattr(f, "__name__", "student"))
def test_a_visible_pass_never_meets_a_hidden_zero_for_a_kind_of_input(fn, capsys):
    """Student-style implementations, right for some kinds of input only: the visible test fails exactly
    when the hidden one does (the hidden test runs the visible cases too, so only a visible pass matters)."""
    visible, hidden = _fails(check.q4_3_multi_head_attention, fn, False), _fails(check.q4_3_multi_head_attention, fn, True)
    assert visible == hidden, (visible, hidden)
    # kind by kind (against a plain loop, not the check): wrong on a visible case of a kind <=> on a hidden one
    wrong_visible = {block.case_kind(*case) for case in block.CASES if not _right_on(fn, case)}
    wrong_hidden = {block.case_kind(*case) for case in block.HIDDEN_CASES if not _right_on(fn, case)}
    assert wrong_hidden <= wrong_visible, wrong_hidden - wrong_visible
    assert visible == bool(wrong_visible)


def _right_on(fn, case):
    batch, n, d_model, h, causal, seed = case
    X, Ws = block.inputs(batch, n, d_model, seed)
    try:
        with np.errstate(all="ignore"):
            value = np.asarray(fn(X.copy(), *(W.copy() for W in Ws), h, causal), float)
    except Exception:
        return False
    expected = loop_mha(X, *Ws, h, causal)
    return value.shape == expected.shape and np.allclose(value, expected, rtol=1e-6, atol=1e-6)


def test_the_batch_mistakes_are_named_by_the_visible_test():
    _rejects(check.q4_3_multi_head_attention, _two_d_only, "leading batch dimension")
    _rejects(check.q4_3_multi_head_attention, _flattens_the_batch, "works without a batch dimension but not with one")
    _rejects(check.q4_3_multi_head_attention, _drops_the_batch, "should return shape (2, 5, 8)")


def test_the_check_leaves_the_students_arrays_and_its_own_alone(capsys):
    def scribbles(X, W_Q, W_K, W_V, W_O, h, causal=False):
        out = SOLUTION(X, W_Q, W_K, W_V, W_O, h, causal)
        X[...] = 0
        W_O[...] = 0
        return out

    _accepts(check.q4_3_multi_head_attention, scribbles, capsys)
    _accepts(check.q4_3_multi_head_attention, SOLUTION, capsys)


# --- Problem 4.3's picture -----------------------------------------------------------


def test_head_split_diagram_draws_every_cell_three_times(monkeypatch):
    from matplotlib.patches import Rectangle

    monkeypatch.delenv("MHA_CORE_DRAW", raising=False)
    for n, h, d_k in [(4, 2, 3), (5, 3, 2), (1, 1, 1)]:
        fig = mha.plots.head_split_diagram(n=n, h=h, d_k=d_k)
        (ax,) = fig.axes
        cells = [p for p in ax.patches if isinstance(p, Rectangle)]
        assert len(cells) == 3 * n * h * d_k
        texts = [t.get_text() for t in ax.texts]
        assert texts.count(str(n)) == 3 * h * d_k and f"head {h - 1}\n(axis 0 = {h - 1})" in texts
        assert fig._repr_png_()[:4] == b"\x89PNG"


def test_head_split_diagram_checks_its_arguments_and_draws_nothing_under_nbgrader(monkeypatch):
    for kwargs, says in [({"n": 0}, "n must be a whole number >= 1"), ({"h": 2.5}, "h must be a whole number"),
                         ({"d_k": 9}, "d_k must be at most 6")]:
        with pytest.raises(ValueError, match=re.escape(says)):
            mha.plots.head_split_diagram(**kwargs)
    monkeypatch.setenv("MHA_CORE_DRAW", "0")
    fig = mha.plots.head_split_diagram()
    assert not fig.axes and "Problem 4.3" in fig.get_suptitle()


# --- the classic bugs, named; a shape error inside the function, explained ------------------


def classic(bug):
    """The reshape-and-swap solution with one classic bug: ``K.T`` on (..., h, n, d_k), the softmax's max or sum
    without keepdims, ``X @ W.T`` (all four W, or the projections only), ``Q @ K`` (no transpose at all)."""

    def multi_head_attention(X, W_Q, W_K, W_V, W_O, h, causal=False):
        *batch, n, d_model = X.shape
        d_k = d_model // h
        P = (lambda W: W.T) if bug in ("x_W_T", "x_W_T_qkv") else (lambda W: W)
        Q, K, V = (np.swapaxes((X @ P(W)).reshape(*batch, n, h, d_k), -2, -3) for W in (W_Q, W_K, W_V))
        if bug == "K.T":
            scores = Q @ K.T / np.sqrt(d_k)
        elif bug == "Q @ K":
            scores = Q @ K / np.sqrt(d_k)
        else:
            scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
        if causal:
            scores = np.where(np.tri(n, dtype=bool), scores, -np.inf)
        if bug == "max without keepdims":
            e = np.exp(scores - scores.max(axis=-1))
        else:
            e = np.exp(scores - scores.max(axis=-1, keepdims=True))
        weights = e / e.sum(axis=-1) if bug == "sum without keepdims" else e / e.sum(axis=-1, keepdims=True)
        concat = np.swapaxes(weights @ V, -2, -3).reshape(*batch, n, d_model)
        return concat @ (W_O.T if bug in ("x_W_T", "W_O.T") else W_O)

    return multi_head_attention


CLASSIC = [
    ("K.T", "transposed-all-axes", ["`Q @ K.T`", "`K.T` reverses every axis of `K`, shape (2, 5, 4) becomes (4, 5, 2)",
                                    "np.swapaxes(K, -1, -2), shape (2, 4, 5)"]),
    ("sum without keepdims", "no-keepdims", ["`e / e.sum(axis=-1)`", "`e.sum(axis=-1)` has shape (2, 5)",
                                             "add keepdims=True, which gives shape (2, 5, 1)"]),
    ("max without keepdims", "no-keepdims", ["`scores.max(axis=-1)` has shape (2, 5)", "keepdims=True"]),
    ("x_W_T", "x-w-transposed", ["X @ W.T instead of X @ W, for every W", "Q = X @ W_Q"]),
    ("x_W_T_qkv", "x-w-transposed", ["X @ W.T instead of X @ W, for the projections"]),
    ("W_O.T", "x-w-transposed", ["X @ W.T instead of X @ W, for W_O (Concat @ W_O.T)"]),
    ("Q @ K", "shape-error", ["`Q @ K`", "`Q` has shape (2, 5, 4) and `K` has shape (2, 5, 4)",
                              "last axis of `Q` (4) to be as long as the second-to-last of `K` (5)"]),
]


@pytest.mark.parametrize("bug, tag, says", CLASSIC, ids=[bug for bug, _, _ in CLASSIC])
@pytest.mark.parametrize("hidden", [False, True])
def test_each_classic_bug_gets_named_feedback(bug, tag, says, hidden):
    with pytest.raises(WrongAnswer) as info:
        check.q4_3_multi_head_attention(classic(bug), hidden=hidden)
    message = str(info.value)
    for phrase in says:
        assert phrase in message, message
    assert info.value.misconception == tag
    assert "operands could not be broadcast" not in message and "gufunc" not in message  # numpy's words, translated
    if tag != "x-w-transposed":  # a shape error: what the shapes should have been
        assert "For X of shape (5, 8) and h = 2 (d_k = 4) the shapes should be" in message
        assert "split into heads (2, 5, 4); scores and weights (2, 5, 5)" in message


def test_the_transposed_weights_student_is_what_it_claims():
    """classic("x_W_T_qkv") is multi-head attention with W_Q, W_K, W_V transposed (a plain loop says so)."""
    for batch, n, d_model, h, causal, seed in block.CASES[:2]:
        X, Ws = block.inputs(batch, n, d_model, seed)
        np.testing.assert_allclose(classic("x_W_T_qkv")(X, *Ws, h, causal),
                                   loop_mha(X, Ws[0].T, Ws[1].T, Ws[2].T, Ws[3], h, causal), rtol=1e-10)


def test_a_batched_transpose_of_every_axis_is_named_too():
    def batched_K_T(X, W_Q, W_K, W_V, W_O, h, causal=False):
        if X.ndim == 3:  # right in 2-D; in a batch, K.T of (batch, h, n, d_k)
            Q, K = (np.swapaxes((X @ W).reshape(*X.shape[:-1], h, -1), -2, -3) for W in (W_Q, W_K))
            return Q @ K.T
        return SOLUTION(X, W_Q, W_K, W_V, W_O, h, causal)

    message = _rejects(check.q4_3_multi_head_attention, batched_K_T, "shape (2, 2, 5, 4) becomes (4, 5, 2, 2)")
    assert "(2, 2, 5, 4)" in message and "np.swapaxes(K, -1, -2), shape (2, 2, 4, 5)" in message


@pytest.mark.parametrize("numpy_says, tag, says", [
    ("operands could not be broadcast together with shapes (2,5,5) (2,5) ", "no-keepdims",
     ["shapes (2, 5, 5) and (2, 5)", "without keepdims=True", "(2, 5, 1)"]),
    ("operands could not be broadcast together with remapped shapes [original->remapped]: (2,4,4)->(2,newaxis,"
     "newaxis) (4,4,2)->(4,newaxis,newaxis)  and requested shape (4,2)", "transposed-all-axes",
     ["(2, 4, 4) and (4, 4, 2)", "np.swapaxes(K, -1, -2)"]),
    ("matmul: Input operand 1 has a mismatch in its core dimension 0, with gufunc signature (n?,k),(k,m?)->(n?,m?) "
     "(size 5 is different from 4)", "shape-error", ["inner sizes differ (5 against 4)"]),
    ("cannot reshape array of size 80 into shape (5,2,4)", "shape-error", ["80 numbers cannot be reshaped to (5,2,4)"]),
])
def test_a_shape_error_known_only_by_its_message_is_explained(numpy_says, tag, says):
    """The re-check sends back only the exception's type and message: the shapes in numpy's words are used."""
    from autograders.student import shape_errors

    found, text = shape_errors.explain(ValueError(numpy_says))
    assert found == tag
    for phrase in says:
        assert phrase in text, text
    assert shape_errors.explain(ValueError("bad")) is None and shape_errors.explain(IndexError(numpy_says)) is None


def test_the_real_numpy_messages_are_the_ones_read():
    """The messages above are numpy's own: each raised here by the operation it names."""
    from autograders.student import shape_errors

    for make in (lambda: np.ones((2, 5, 5)) / np.ones((2, 5)), lambda: np.ones((2, 4, 4)) @ np.ones((4, 4, 2)),
                 lambda: np.ones((2, 5, 4)) @ np.ones((4, 5, 2)), lambda: np.ones(80).reshape(5, 2, 4)):
        with pytest.raises(ValueError) as info:
            make()
        assert shape_errors.is_shape_error(ValueError(str(info.value))), str(info.value)


def test_an_array_that_misbehaves_when_read_falls_back_to_numpys_words():
    class Hostile(np.ndarray):
        @property
        def shape(self):  # what the explanation reads; numpy itself does not
            raise RuntimeError("no")

    def multi_head_attention(X, W_Q, W_K, W_V, W_O, h, causal=False):
        Q, K = np.ones((2, 5, 4)), np.ones((2, 5, 4)).view(Hostile)
        return Q @ K  # a shape error whose operand cannot be read

    message = _rejects(check.q4_3_multi_head_attention, multi_head_attention, "raised ValueError",
                       "inner sizes differ (5 against 4)")
    assert "Traceback" not in message and "`Q` has shape" not in message


# --- named from what the code does: heads summed, axes swapped, a softmax's sum or maximum astray ---------


def written(bug):
    """A 2-D multi_head_attention as a student writes it, with ``bug`` (the line the student wrote, or its kind)."""

    def multi_head_attention(X, W_Q, W_K, W_V, W_O, h, causal=False):
        n, d_model = X.shape[-2:]
        d_k = d_model // h
        split = {"transpose(0, 2, 1)": (lambda A: A.reshape(n, h, d_k).transpose(0, 2, 1)),
                 ".T": (lambda A: A.reshape(n, h, d_k).T),
                 "swapaxes(A, -1, -2)": (lambda A: np.swapaxes(A.reshape(n, h, d_k), -1, -2)),
                 "reshape(n, d_k, h), swapaxes(-1, -3)": (lambda A: np.swapaxes(A.reshape(n, d_k, h), -1, -3))
                 }.get(bug, lambda A: A.reshape(n, h, d_k).transpose(1, 0, 2))
        Q, K, V = split(X @ W_Q), split(X @ W_K), split(X @ W_V)
        S = Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)
        if causal:
            S = np.where(np.tri(n, dtype=bool), S, -np.inf)
        E = np.exp(S - S.max(axis=-2 if bug == "max over axis -2" else -1, keepdims=True))
        A = {"E / E.sum()": lambda: E / E.sum(), "E / np.sum(E)": lambda: E / np.sum(E),
             "sum over axis=(-2, -1)": lambda: E / E.sum(axis=(-2, -1), keepdims=True),
             "sum over axis 1": lambda: E / E.sum(axis=1, keepdims=True)}.get(bug, lambda: E / E.sum(axis=-1, keepdims=True))()
        heads = A @ V
        if bug == "heads.sum(axis=-3) @ W_O":
            return heads.sum(axis=-3) @ W_O
        if bug == "heads.sum(axis=-3, keepdims=True) @ W_O":
            return heads.sum(axis=-3, keepdims=True) @ W_O
        if bug == "np.sum(heads, axis=0) @ W_O":
            return np.sum(heads, axis=0) @ W_O
        if bug == "sum(heads) @ W_O":
            return sum(heads) @ W_O
        if bug == "heads.mean(axis=0) @ W_O":
            return heads.mean(axis=0) @ W_O
        if bug == "a loop adding the heads":
            out = 0
            for i in range(h):
                out = out + heads[i]
            return out @ W_O
        merge = {"transpose(0, 2, 1)": (0, 2, 1), ".T": (2, 1, 0), "heads.transpose(1, 2, 0)": (1, 2, 0)}.get(bug, (1, 0, 2))
        if bug == "reshape(n, d_k, h), swapaxes(-1, -3)":
            return np.swapaxes(heads, -1, -3).reshape(n, d_model) @ W_O  # undone the same way
        return heads.transpose(*merge).reshape(n, d_model) @ W_O

    return multi_head_attention


WRITTEN = [
    ("heads.sum(axis=-3) @ W_O", "heads-summed", ["`heads.sum(axis=-3)` adds up the 2 heads", "concatenated, not summed",
                                                  "keepdims=True does not help"]),
    ("heads.sum(axis=-3, keepdims=True) @ W_O", "heads-summed", ["adds up the 2 heads", "concatenated, not summed"]),
    ("np.sum(heads, axis=0) @ W_O", "heads-summed", ["adds up the 2 heads, axis 0 of `heads`", "concatenated"]),
    ("sum(heads) @ W_O", "heads-summed", ["`sum(heads)` adds up the 2 heads", "concatenated, not summed"]),
    ("heads.mean(axis=0) @ W_O", "heads-summed", ["averages the 2 heads", "concatenated, not summed"]),
    ("a loop adding the heads", "heads-summed", ["`out` has shape (5, 4), one head wide", "concatenated, not summed"]),
    ("transpose(0, 2, 1)", "heads-axes-swapped", ["split with the wrong axes swapped", "are (n, d_k, h)",
                                                  "np.swapaxes(A, -2, -3)"]),
    ("swapaxes(A, -1, -2)", "heads-axes-swapped", ["split with the wrong axes swapped", "are (n, d_k, h)"]),
    (".T", "transposed-all-axes", ["reverses every axis", "are (d_k, h, n)", "np.swapaxes(A, -2, -3)"]),
    ("reshape(n, d_k, h), swapaxes(-1, -3)", "transposed-all-axes", ["every h-th column", "are (h, d_k, n)"]),
    ("heads.transpose(1, 2, 0)", "heads-axes-swapped", ["put back with the wrong axes swapped", "(n, d_k, h)",
                                                        "np.swapaxes(heads, -2, -3)"]),
    ("E / E.sum()", "softmax-sum-all", ["`e.sum()` with no axis", "e.sum(axis=-1, keepdims=True)"]),
    ("E / np.sum(E)", "softmax-sum-all", ["sum of every entry"]),
    ("sum over axis=(-2, -1)", "softmax-sum-all", ["a whole head's scores"]),
    ("max over axis -2", "max-sum-axes-differ", ["the maximum over the queries (axis -2", "scores.max(axis=-1"]),
    ("sum over axis 1", "max-sum-axes-differ", ["the sum over the queries", "e.sum(axis=-1, keepdims=True)"]),
]


@pytest.mark.parametrize("bug, tag, says", WRITTEN, ids=[bug for bug, _, _ in WRITTEN])
@pytest.mark.parametrize("hidden", [False, True])
def test_each_mistake_is_named_from_what_the_code_does(bug, tag, says, hidden):
    """Heads summed (never "add keepdims=True"), the heads' axes swapped, a sum with no axis, a maximum and a sum
    over different axes: each named, never the generic "does not give multi-head attention"."""
    with pytest.raises(WrongAnswer) as info:
        check.q4_3_multi_head_attention(written(bug), hidden=hidden)
    message = str(info.value)
    for phrase in says:
        assert phrase in message, message
    assert info.value.misconception == tag, message
    assert "does not give multi-head attention" not in message
    if tag == "heads-summed":
        assert "add keepdims=True" not in message

