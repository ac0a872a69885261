"""Every right answer is accepted in every reasonable form, by the visible check AND by
the hidden one, with the same tolerances.

:data:`ACCEPTED` maps each autograded answer (its grade_id) to alternative right
answers: ints for floats, numpy scalars, Fractions, lists and arrays for shapes,
whole-number floats in shapes (``(512, 512 / 8)``), row and column vectors where a
vector is asked, values rounded to the precision the prompt states (4 decimals), and
loop implementations of the functions. Each right answer is computed here, with
plain Python, numpy or ``tests.reference`` (independent of the checks), then written
in each form. Every row runs against the visible and the hidden check: a form the
visible test accepts and the hidden one rejects would cost a student the points
after a green visible test.

Then the fairness of the prompts and the checks: a convention that is a legitimate
alternative (2 FLOPs per multiply-add, counting biases) is named by the visible and the
hidden check and fixed by its prompt; whatever a hidden test tries is announced in its
prompt (:data:`HIDDEN_TRIALS`, checked against the checks' own case lists); every
answer that is not a labelled choice has a stated precision; near the answer, the
visible and the hidden check accept the same values (the same tolerances).

The feedback's wording (no doubled "Not yet", a capital after "Correct.", wrapping
between words, the conventions named) is tested at the end.
"""

import math
import re
from fractions import Fraction

import numpy as np
import pytest

from autograders.checks import feedback
from autograders.checks import beyond, level1, level2, level3, level4, level5
from autograders.checks.feedback import WrongAnswer
from autograders.student import feedback as student_feedback
from autograders.problems import LEVELS
from tests import reference
from tests.checking import rejects
from tests.conftest import answer_head

# --- right answers, computed independently of the checks -----------------------------

D_K_1 = 768 // 12  # Problem 1.1
OUTPUT_1_2 = (6, 768)  # 1.2: (n, d_model), the input's shape
D_K_2 = 512 // 8  # Problem 2.1
SHEET_2_2 = LEVELS["level2_application"].SHEET_2_2  # Problem 2.2's numbers, from its declaration
SCORE_2_2 = SHEET_2_2["dot"] / math.sqrt(SHEET_2_2["d_k"])
SCORES = [4.0, 2.0, 5.0]  # Problem 2.3
_EXPS = [math.exp(s) for s in SCORES]
WEIGHTS = [e / sum(_EXPS) for e in _EXPS]
COST_8 = 8 * 2 * 10 * 10 * D_K_2  # 3.1: h heads x (scores + weighted sum), each n*n*d_k multiply-adds
COST_1 = 1 * 2 * 10 * 10 * 512
Q_4_2, K_4_2, V_4_2 = [[1.0, 0.0]], [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0]], [[1.0, 0.0], [0.0, 2.0], [3.0, 0.0], [0.0, 4.0]]
OUT_4_2, W_4_2 = reference.attention(Q_4_2, K_4_2, V_4_2)  # one head, the query sees all 4 keys
SCALED_4_2 = [sum(a * b for a, b in zip(Q_4_2[0], k)) / math.sqrt(2) for k in K_4_2]


def _head_4_4(c=20.0):
    """A previous-token head by hand (Problem 4.4): q_i = c e_i, k_j = e_{j+1}, from the positions (columns 5..10)."""
    W_Q, W_K = np.zeros((11, 7)), np.zeros((11, 7))
    for i in range(6):
        W_Q[5 + i, i], W_K[5 + i, i + 1] = c, 1.0
    return W_Q, W_K


HEAD_4_4 = _head_4_4()
_KEYS_4_4 = np.array([[1, 1, 1, 1], [1, -1, 1, -1], [1, 1, -1, -1], [1, -1, -1, 1]]) / 2
QUERY_4_4 = 20 * (_KEYS_4_4[1] + _KEYS_4_4[3])  # equal large scores for k_2 and k_4


def numbers(x, decimals=4):
    """A right number in the forms a student may write it."""
    forms = [x, float(x), np.float64(x), np.array(x), np.array([x]), round(x, decimals), Fraction(x).limit_denominator(10**6)]
    if float(x) == int(x):
        forms += [int(x), np.int64(x), np.int32(x), np.float32(x)]
    return forms


def shapes(shape):
    """A right shape in the forms a student may write it."""
    return [
        tuple(shape), list(shape), np.array(shape), tuple(np.int64(d) for d in shape),
        tuple(float(d) for d in shape), (shape[0], shape[1] * 8 / 8), np.zeros(shape).shape,
    ]


def vectors(v, decimals=4):
    """A right vector in the forms a student may write it."""
    a = np.array(v, dtype=float)
    return [a, list(v), tuple(v), a[None, :], a[:, None], np.round(a, decimals), np.round(a, decimals).tolist(),
            [Fraction(x).limit_denominator(10**6) for x in v]]


# --- right functions, several ways --------------------------------------------------


def head_dim_loop(d_model, h):
    d_k = 0
    while (d_k + 1) * h <= d_model:  # how many numbers each of the h heads gets
        d_k += 1
    return d_k


def softmax_loop(scores):
    top = max(scores)
    exps = [math.exp(s - top) for s in scores]
    return [e / sum(exps) for e in exps]


def softmax_logsumexp(scores):
    top = np.max(scores)
    return np.exp(scores - top - np.log(np.sum(np.exp(scores - top))))


def cost_loop(d_model, h, n):
    total = 0
    for _head in range(h):
        d_k = d_model // h
        total += n * n * d_k  # the scores: n*n dot products of length d_k
        total += n * n * d_k  # the weighted sum: (n x n) times (n x d_k)
    return total


def distinct_loop(weights):
    seen = []
    for head in weights:
        if not any(np.array_equal(head, s) for s in seen):
            seen.append(head)
    return len(seen)


def params_loop(d_model, h):
    d_k = d_model // h
    total = 0
    for _head in range(h):
        for _matrix in ("W_Q", "W_K", "W_V"):
            total += d_model * d_k
    return total + d_model * d_model


def output_loop(weights, values):
    n_q, n_k = len(weights), len(values)
    return [[sum(weights[i][j] * values[j][c] for j in range(n_k)) for c in range(len(values[0]))] for i in range(n_q)]


def masked_softmax_fill(scores, valid_lens, causal=False):
    """Problem 4.6 as many courses write it: a large negative fill (not -inf), then the mask multiplied in."""
    n_q, n_k = scores.shape[-2:]
    keep = (np.arange(n_k)[None, :] < np.reshape(valid_lens, (-1, 1)))[:, None, None, :]
    if causal:
        keep = keep & (np.arange(n_k)[None, :] <= np.arange(n_q)[:, None])
    filled = np.where(keep, scores, -1e9)
    e = np.exp(filled - filled.max(axis=-1, keepdims=True)) * keep
    total = e.sum(axis=-1, keepdims=True)
    return e / np.where(total == 0, 1, total)


def blocks_normalised(q, K, V, block_size):
    """Problem 4.7 keeping the output normalised after every block (the online softmax's other form)."""
    m, total, out = -math.inf, 0.0, np.zeros(V.shape[1])
    for start in range(0, len(K), block_size):
        s = K[start:start + block_size] @ q / math.sqrt(len(q))
        m_new = max(m, float(s.max()))
        if m_new == -math.inf:  # only keys of score -inf so far
            continue
        p = np.exp(s - m_new)
        total_new = total * math.exp(m - m_new) + p.sum()
        out = (out * total * math.exp(m - m_new) + p @ V[start:start + block_size]) / total_new
        m, total = m_new, total_new
    return out


def blocks_logsumexp(q, K, V, block_size):
    """Problem 4.7 with a running log-sum-exp instead of a maximum and a sum."""
    lse, acc = -math.inf, np.zeros(V.shape[1])
    for start in range(0, len(K), block_size):
        s = K[start:start + block_size] @ q / math.sqrt(len(q))
        lse_new = np.logaddexp(lse, np.logaddexp.reduce(s))
        if lse_new == -math.inf:
            continue
        acc = acc * math.exp(lse - lse_new) + np.exp(s - lse_new) @ V[start:start + block_size]
        lse = lse_new
    return acc


# The functions' right answers, several ways (the declared numbers, shapes, vectors and choices:
# tests/test_problems.py, from their declarations).
ACCEPTED = {
    # Level 1
    "q1_1_head_dim": (level1.q1_1_head_dim, [
        lambda d_model, h: d_model // h, lambda d_model, h: d_model / h, head_dim_loop,
        lambda d_model, h: Fraction(d_model, h), lambda d_model, h: np.int64(d_model) // np.int64(h),
        lambda d_model, h: np.float64(d_model / h),
    ]),
    # Level 2
    "q2_3_softmax": (level2.q2_3_softmax, [
        lambda s: np.exp(s - s.max()) / np.exp(s - s.max()).sum(), softmax_loop, softmax_logsumexp,
        lambda s: tuple(softmax_loop(list(s))), lambda s: np.array(softmax_loop(list(s)))[:, None],
    ]),
    # Level 3
    "q3_1_attention_cost": (level3.q3_1_attention_cost, [
        cost_loop, lambda d_model, h, n: 2 * n * n * d_model, lambda d_model, h, n: 2.0 * n**2 * h * (d_model / h),
        lambda d_model, h, n: np.int64(2) * h * n * n * (d_model // h),
    ]),
    "q3_3_count_distinct_heads": (level3.q3_3_count_distinct_heads, [
        distinct_loop, lambda w: len(np.unique(w.reshape(len(w), -1), axis=0)), lambda w: float(distinct_loop(w)),
        lambda w: np.int64(len({head.tobytes() for head in w})),
    ]),
    # Level 4
    "q4_1_parameter_count": (level4.q4_1_parameter_count, [
        params_loop, lambda d_model, h: 4 * d_model**2, lambda d_model, h: 3.0 * h * d_model * (d_model / h) + d_model**2,
    ]),
    # Level 5
    "q5_2_attention_output": (level5.q5_2_attention_output, [
        lambda w, v: w @ v, output_loop, lambda w, v: np.einsum("ij,jd->id", w, v), lambda w, v: (w @ v).tolist(),
    ]),
    # Beyond the sheet (autograders.checks.beyond)
    "q3_4_max_rank": (beyond.q3_4_max_rank, [
        lambda n, d_k: min(n, d_k), lambda n, d_k: n if n < d_k else d_k, lambda n, d_k: float(min(n, d_k)),
        lambda n, d_k: np.int64(np.minimum(n, d_k)),
    ]),
    "q3_5_permutation_test": (beyond.q3_5_permutation_test, [
        lambda f, X, perm: bool(np.allclose(f(X[perm]), f(X)[perm])), lambda f, X, perm: np.allclose(f(X[perm]), f(X)[perm]),
        lambda f, X, perm: all(np.allclose(f(X[perm])[i], f(X)[p]) for i, p in enumerate(perm)),
        lambda f, X, perm: bool(np.abs(f(X[perm]) - f(X)[perm]).max() < 1e-8),
    ]),
    "q3_5_why_positions": (beyond.q3_5_why_positions, ["B", "b", " B "]),
    "q4_4_previous_token": (beyond.q4_4_previous_token, [HEAD_4_4, list(HEAD_4_4), tuple(W.tolist() for W in HEAD_4_4), (HEAD_4_4[0] * 2, HEAD_4_4[1]),
                             (HEAD_4_4[0].astype(np.float32), HEAD_4_4[1].astype(int))]),
    "q4_6_masked_softmax": (beyond.q4_6_masked_softmax, [
        lambda *args: np.array(reference.masked_softmax(*args)), masked_softmax_fill, reference.masked_softmax,
    ]),
    "q4_7_attention_in_blocks": (beyond.q4_7_attention_in_blocks, [
        blocks_normalised, blocks_logsumexp, lambda *args: blocks_logsumexp(*args).tolist(),
        lambda *args: blocks_normalised(*args)[None, :],
    ]),
    "q4_4_average_query": (beyond.q4_4_average_query, vectors(QUERY_4_4) + [(QUERY_4_4 * 3).tolist()]),
    "q5_4_previous_token_head": (beyond.q5_4_previous_token_head, [(1, 2), [1, 2], (1.0, 2.0), np.array([1, 2])]),
    "q5_4_induction_head": (beyond.q5_4_induction_head, [(2, 2), [2, 2], (np.int64(2), 2.0)]),
}

ROWS = [(cell, i) for cell, (_, forms) in ACCEPTED.items() for i in range(len(forms))]


def _label(form):
    text = getattr(form, "__name__", None) or repr(form)
    return text if len(text) <= 40 else text[:37] + "..."


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
@pytest.mark.parametrize("cell, i", ROWS, ids=[f"{c}[{i}]:{_label(ACCEPTED[c][1][i])}" for c, i in ROWS])
def test_every_accepted_form_passes_the_visible_and_the_hidden_check(cell, i, hidden, capsys):
    check, forms = ACCEPTED[cell]
    check(forms[i], hidden=hidden)
    out, err = capsys.readouterr()
    assert out.startswith("✔ Correct.") and out.count("\n") == 1 and err == "", (out, err)



def test_the_table_covers_every_autograded_answer_of_the_notebooks():
    import nbformat

    from tests.conftest import is_test_cell, level_notebooks

    graded = set()
    for path in level_notebooks():  # the levels and Beyond the sheet
        for cell in nbformat.read(path, as_version=4).cells:
            if is_test_cell(cell) :
                graded.add(cell.metadata.nbgrader["grade_id"].removesuffix("_test"))
    declared = {answer.id for module in LEVELS.values() for answer in module.ANSWERS}  # tests/test_problems.py
    missing = graded - set(ACCEPTED) - declared - {"q4_3_multi_head_attention"}  # 4.3: tests/test_checks_level4.py,
    # and its notebook's solution: tests/test_functions.py
    assert not missing, f"no accepted forms for {sorted(missing)}"


# --- a rejected form says why, visible and hidden alike ---------------------------------


@pytest.mark.parametrize("hidden", [False, True])
@pytest.mark.parametrize(
    "check, value",
    [
        (level1.q1_2_output_shape, (6, 768.5)),
        (level2.q2_1_wq_shape, (512, 64.5)),
        (level3.q3_2_concat_shape, [10, 512.25]),
        (level5.q5_3_score_shape, np.array([4.5, 6])),
    ],
)
def test_a_shape_with_a_fraction_in_it_is_not_a_whole_number(check, value, hidden):
    rejects(check, value, "is not a whole number", hidden=hidden)


def test_weights_to_three_decimals_pass_and_their_sum_tolerance_follows_from_the_entries():
    three = np.round(WEIGHTS, 3)
    assert abs(three.sum() - 1) >= 1e-3  # 0.999: the hidden check's old sum tolerance (1e-3) rejected it
    assert level2.problems.SUM_TOL >= len(SCORES) * level2.WEIGHT_TOL  # the hidden check's tolerance on the sum
    for hidden in (False, True):
        level2.q2_3_weights(three, hidden=hidden)
    # off by more than the tolerance in one entry: rejected by both
    off = np.array(WEIGHTS) + [2 * level2.WEIGHT_TOL, -2 * level2.WEIGHT_TOL, 0]
    for hidden in (False, True):
        with pytest.raises(WrongAnswer):
            level2.q2_3_weights(off, hidden=hidden)


@pytest.mark.parametrize(
    "check, wrong, secrets",
    [
        (level1.q1_1_d_k, D_K_1 + 1, [str(D_K_1)]),
        (level1.q1_2_output_shape, (6, 64), [str(OUTPUT_1_2), "768)"]),
        (level2.q2_1_wq_shape, (512, 128), [str(D_K_2)]),
        (level2.q2_2_scaled_score, SHEET_2_2["dot"] / SHEET_2_2["d_k"], [f"{SCORE_2_2:.1f}", f"= {SCORE_2_2:g}"]),
        (level2.q2_3_weights, [0.3, 0.3, 0.4], [f"{w:.4f}" for w in WEIGHTS] + [f"{w:.3f}" for w in WEIGHTS]),
        (level2.q2_3_softmax, lambda s: np.full(len(s), 1 / len(s)), [f"{w:.4f}" for w in WEIGHTS]),
        (level2.q2_3_ratio, 3.0, ["2.718", "2.72"]),
        (level3.q3_1_cost_ratio, 2.0, ["= 1 ", "= 1.", "is 1", "ratio 1"]),
        (level3.q3_1_attention_cost, lambda d, h, n: 7, [f"{COST_8:,}", str(COST_8)]),
        (level3.q3_2_concat_shape, (10, 256), ["(10, 512)"]),
        (level3.q3_2_wo_shape, (256, 512), ["(512, 512)"]),
        (level4.q4_2_scaled_scores, [1.0, 2.0, 3.0, 4.0], [f"{x:.4f}" for x in SCALED_4_2]),
        (level4.q4_2_weights, [0.1, 0.2, 0.3, 0.4], [f"{x:.4f}" for x in W_4_2[0]]),
        (level4.q4_2_output, [1.0, 1.0], [f"{x:.4f}" for x in OUT_4_2[0]] + ["2.0123"]),
        (level5.q5_1_sweet_spot_heads, 16, ["= 8", " 8 "]),
        (level5.q5_3_output_shape, (6, 64), ["(4, 64)"]),
    ],
)
def test_a_hidden_check_never_gives_the_answer_away(check, wrong, secrets):
    message = rejects(check, wrong, hidden=True)
    assert not [s for s in secrets if s in message], message


# --- conventions and forgotten steps are named -----------------------------------------


@pytest.mark.parametrize("hidden", [False, True])
def test_two_flops_per_multiply_add_is_named_and_loses_the_point(hidden):
    message = rejects(level3.q3_1_attention_cost, lambda d, h, n: 2 * cost_loop(d, h, n),
                      "You counted 2 FLOPs per multiply-add", "this problem counts multiply-adds", "as its prompt says",
                      hidden=hidden)
    assert f"{COST_8:,}" not in message and str(COST_8) not in message


def test_two_flops_with_a_known_misconception_names_both():
    rejects(level3.q3_1_attention_cost, lambda d, h, n: 2 * 2 * h * n * n * d, "2 FLOPs per multiply-add",
            "h heads cost h times more")


@pytest.mark.parametrize("hidden", [False, True], ids=["visible", "hidden"])
def test_counting_biases_is_named_as_a_convention_and_loses_the_point(hidden):
    """Biases on every projection (d_model² + d_model each, PyTorch's default) are a legitimate
    convention: named, visible and hidden alike, and wrong because 4.1's prompt says weights only."""
    with_biases = lambda d, h: 4 * (d * d + d)  # noqa: E731
    for check, value in ((level4.q4_1_params_512, with_biases(512, 8)), (level4.q4_1_parameter_count, with_biases)):
        message = rejects(check, value, "You counted biases", "weights only", "as its prompt says", hidden=hidden)
        right = params_loop(512, 8)
        assert f"{right:,}" not in message and str(right) not in message, message


CONVENTIONS = {
    # problem: (phrases its prompt must hold, the check of the answer the convention changes)
    "3.1": (["**multiply-adds**", "not as 2 FLOPs"], "q3_1_attention_cost"),
    "4.1": (["ignore biases", "without biases", "Weights only"], "q4_1_parameter_count"),
}


@pytest.mark.parametrize("problem", sorted(CONVENTIONS))
def test_the_prompt_fixes_the_convention_its_check_names(problem):
    phrases, gid = CONVENTIONS[problem]
    prompt = " ".join(PROMPTS[problem].split())  # the prompt's words, whatever its line breaks
    missing = [p for p in phrases if p not in prompt]
    assert not missing, f"Problem {problem}'s prompt should say {missing}"
    assert gid in ACCEPTED


# --- what the hidden tests try, the prompt says --------------------------------------


# Punctuation right after a formula sits inside it in the notebooks ("$h,$", "$x{:}$": tests/test_levels.py);
# the prompts are compared with the checks' phrases as a reader reads them, the punctuation after the formula.
GLUED = re.compile(r"(?<![\\$])((?:[.,;?!)]|\{:\})+)\$(?!\$)")


def as_read(markdown):
    """``markdown`` with the punctuation glued inside a formula put back after it: "$h,$" -> "$h$,"."""
    return GLUED.sub(lambda m: "$" + m[1].replace("{:}", ":"), markdown)


def _prompts_and_answers():
    """({"2.3": prompt text}, {grade_id: (problem, the answer cell's source)}) of the level notebooks."""
    import nbformat

    from tests.conftest import is_answer_cell, is_test_cell, level_notebooks

    prompts, answers, hidden = {}, {}, set()
    for path in level_notebooks():  # the levels and Beyond the sheet
        for cell in nbformat.read(path, as_version=4).cells:
            match = re.match(r"### Problem (\d+\.\d+)", cell.source)
            if cell.cell_type == "markdown" and match:
                prompts[match[1]] = as_read(cell.source)
            gid = cell.metadata.get("nbgrader", {}).get("grade_id", "")
            problem = ".".join(re.match(r"q(\d+)_(\d+)_", gid).groups()) if re.match(r"q\d+_\d+_", gid) else None
            if is_answer_cell(cell):
                answers[gid] = (problem, cell.source)
            elif is_test_cell(cell) and "BEGIN HIDDEN TESTS" in cell.source:
                hidden.add(gid.removesuffix("_test"))
    return prompts, answers, hidden


PROMPTS, ANSWERS, HIDDEN_TESTED = _prompts_and_answers()

# What each answer's hidden test tries beyond the visible one, as its prompt words it: a function's or a
# matrix's in its check (``@tries(...)``: their checks are written by hand), a declared answer's in its
# declaration (``trials``; a labelled choice's: "the same letter"). An empty list: the hidden test only
# recomputes the same answer independently (nothing new is tried).
FUNCTION_TRIALS = {name: list(check.trials) for module in (level1, level2, level3, level4, level5, beyond)
                   for name, check in vars(module).items() if hasattr(check, "trials") and not hasattr(check, "answer")}
HIDDEN_TRIALS = {**FUNCTION_TRIALS, **{answer.id: list(answer.trials) for module in LEVELS.values()
                                       for answer in module.ANSWERS}}  # a declared answer's: its ``trials``


def test_every_hidden_test_has_its_trials_listed():
    assert set(HIDDEN_TRIALS) == HIDDEN_TESTED, (
        f"hidden tests without a row: {sorted(HIDDEN_TESTED - set(HIDDEN_TRIALS))}; "
        f"rows without a hidden test: {sorted(set(HIDDEN_TRIALS) - HIDDEN_TESTED)}")


@pytest.mark.parametrize("gid", sorted(HIDDEN_TRIALS))
def test_the_prompt_announces_what_the_hidden_test_tries(gid):
    problem, _ = ANSWERS[gid]
    prompt = " ".join(PROMPTS[problem].split())  # the prompt's words, whatever its line breaks
    missing = [phrase for phrase in HIDDEN_TRIALS[gid] if phrase not in prompt]
    assert not missing, f"Problem {problem}'s prompt does not say what {gid}'s hidden test tries: {missing}"


@pytest.mark.parametrize(
    "gid, cases, visible",
    [
        ("q1_1_head_dim", [(d, h) for d, h in level1.HIDDEN_SIZES], (768, 12)),
        ("q3_1_attention_cost", [(d, h) for d, h, _ in level3.HIDDEN_COST_CASES], (512, 8)),
        ("q4_1_parameter_count", level4.PARAM_CASES, (512, 8)),
    ],
)
def test_the_hidden_sizes_are_the_ones_announced(gid, cases, visible):
    """Read off the checks' own case lists: h = 1, h = d_model and other widths, each tried only if announced."""
    announced = HIDDEN_TRIALS[gid]
    if any(h == 1 for _, h in cases):
        assert "$h = 1$" in announced
    if any(h == d for d, h in cases):
        assert "$h = d_{\\text{model}}$" in announced
    if any(d != visible[0] for d, _ in cases):
        assert any(phrase.startswith("other") for phrase in announced)


def test_the_hidden_softmax_scores_are_the_ones_announced():
    lengths = {len(s) for s in level2.HIDDEN_SCORES}
    assert lengths == set(range(1, 5)), "the prompt says one to four scores"
    assert any(max(s) >= 1000 for s in level2.HIDDEN_SCORES) and any(max(s) <= -1000 for s in level2.HIDDEN_SCORES)


def test_the_hidden_batches_are_announced():
    assert any(case[0] is not None for case in level4.q4_3_multi_head_attention.function.hidden_cases)
    assert "batch dimension" in HIDDEN_TRIALS["q4_3_multi_head_attention"]


def test_the_hidden_masks_and_blocks_are_the_ones_announced():
    """4.6's hidden cases add batches, lengths and shapes; 4.7's add longer inputs and other block sizes."""
    from autograders.checks import today

    def seen(cases, *fields):
        return {tuple(case[i] for i in fields) for case in cases}

    batches, lengths, shapes = seen(today.MASK_CASES, 0), seen(today.MASK_CASES, 4), seen(today.MASK_CASES, 1, 2, 3)
    hidden = today.MASK_HIDDEN_CASES
    assert seen(hidden, 0) - batches and seen(hidden, 4) - lengths and seen(hidden, 1, 2, 3) - shapes
    assert max(case[0] for case in today.BLOCK_HIDDEN_CASES) > max(case[0] for case in today.BLOCK_CASES)
    assert seen(today.BLOCK_HIDDEN_CASES, 3) - seen(today.BLOCK_CASES, 3)


# --- a precision wherever a number is asked ---------------------------------------------

PRECISION = re.compile(r"exact|decimals?\b|whole number|difference of|\$10\^\{-\d+\}\$")


def _blocks(prompt):
    """The prompt's paragraphs and list items."""
    return [b for b in re.split(r"\n\s*\n|\n(?=\s*(?:\d+\.|-|\*\*\([a-z]\)\*\*) )", prompt) if b.strip()]


def _named(source):
    """The name an answer cell sets (``x = None``) or defines (``def f(...)``)."""
    match = re.match(r"\s*def (\w+)\(|(\w+) = None", answer_head(source).split("\n")[-1])
    return match[1] or match[2]


@pytest.mark.parametrize("gid", sorted(g for g, (_, s) in ANSWERS.items() if "one letter" not in answer_head(s)))
def test_the_prompt_states_a_precision_wherever_a_number_is_asked(gid):
    """Where a number, a shape, an array or a function's value is asked, its placeholder or its item in
    the prompt (or the prompt's lead-in to all its answers, or its 'Return ...' line) says how exact."""
    problem, source = ANSWERS[gid]
    name = _named(source)
    blocks = [b for b in _blocks(PROMPTS[problem])
              if f"`{name}`" in b or f"`{name}(" in b or b.lstrip().startswith("Return") or "answers, each" in b]
    said = [answer_head(source), *blocks]
    assert any(PRECISION.search(text) for text in said), (
        f"{gid}: neither its placeholder nor its item in Problem {problem}'s prompt states a precision "
        f"(exact, a whole number, to N decimals, a tolerance)")


def test_the_prompts_are_read_with_the_punctuation_after_the_formula():
    assert as_read("other $d_{\\text{model}},$ $h$ and $n.$ Then $x{:}$ so ($y),$ $$z.$$") == \
        "other $d_{\\text{model}}$, $h$ and $n$. Then $x$: so ($y$), $$z.$$"


def test_a_number_without_a_precision_is_caught():
    assert not PRECISION.search("2. `params_512`: the count for $d_{\\text{model}} = 512$.")
    for said in ("an exact whole number", "to 4 decimals", "right to $10^{-6}$ of its largest entry"):
        assert PRECISION.search(said), said


# --- the visible and hidden checks: the same tolerances -------------------------------


def _verdicts(check, answer):
    """(does the visible check accept ``answer``, does the hidden one)."""
    verdicts = []
    for hidden in (False, True):
        try:
            check(answer, hidden=hidden)
            verdicts.append(True)
        except WrongAnswer:
            verdicts.append(False)
    return verdicts


def _near(value, delta):
    if isinstance(value, (list, tuple, np.ndarray)):
        return (np.asarray(value, dtype=float) + delta).tolist()
    return float(value) + delta


NEAR = [c for c, (_, forms) in ACCEPTED.items() if not callable(forms[0]) and not isinstance(forms[0], str)
        and "shape" not in c]


@pytest.mark.parametrize("cell", NEAR)
def test_the_hidden_check_accepts_exactly_what_the_visible_one_does_near_the_answer(cell, capsys):
    """A value off by 10^-9 ... 0.4 (each entry, both ways) is accepted by both checks or by neither."""
    check, forms = ACCEPTED[cell]
    differ = []
    for delta in (1e-9, 1e-7, 1e-6, 1e-5, 1e-4, 4e-4, 9e-4, 2e-3, 4e-3, 6e-3, 1e-2, 0.04, 0.4):
        for sign in (1, -1):
            value = _near(forms[0], sign * delta)
            verdicts = _verdicts(check, value)
            if verdicts[0] != verdicts[1]:
                differ.append(f"{sign * delta:+g}: visible {'accepts' if verdicts[0] else 'rejects'}, "
                              f"hidden {'accepts' if verdicts[1] else 'rejects'}")
    capsys.readouterr()
    assert not differ, f"{cell}: " + "; ".join(differ)


FUNCTIONS = [c for c, (_, forms) in ACCEPTED.items() if callable(forms[0])]


def _scaled(function, factor):
    """``function`` whose every returned number is multiplied by ``factor``."""
    return lambda *args: (np.asarray(function(*args), dtype=float) * factor).tolist()


@pytest.mark.parametrize("cell", FUNCTIONS)
def test_the_hidden_check_accepts_exactly_what_the_visible_one_does_from_a_function(cell, capsys):
    """A function whose results are off by a factor 1 ± 10^-12 ... 0.4 passes both checks or neither
    (the hidden check tries other inputs, so the offset is relative; no factor sits on a tolerance)."""
    check, forms = ACCEPTED[cell]
    differ = []
    for delta in (1e-12, 1e-10, 3e-9, 3e-7, 3e-5, 3e-4, 2e-3, 6e-3, 3e-2, 0.4):
        for sign in (1, -1):
            verdicts = _verdicts(check, _scaled(forms[0], 1 + sign * delta))
            if verdicts[0] != verdicts[1]:
                differ.append(f"x(1{sign * delta:+g}): visible {'accepts' if verdicts[0] else 'rejects'}, "
                              f"hidden {'accepts' if verdicts[1] else 'rejects'}")
    capsys.readouterr()
    assert not differ, f"{cell}: " + "; ".join(differ)


@pytest.mark.parametrize(
    "check, value",
    [
        (level2.q2_3_weights, SCORES),
        (level2.q2_3_softmax, lambda s: s),
        (level2.q2_3_softmax, lambda s: np.array(s, dtype=float)),
        (level4.q4_2_weights, SCALED_4_2),
    ],
)
def test_weights_equal_to_the_scores_name_the_forgotten_softmax(check, value):
    rejects(check, value, "forgot the softmax")


@pytest.mark.parametrize("hidden", [False, True])
def test_a_naive_softmax_is_told_about_overflow_and_the_fix(hidden):
    message = rejects(level2.q2_3_softmax, lambda s: np.exp(s) / np.exp(s).sum(), "overflows",
                      "Subtract the largest score", hidden=hidden)
    assert "1000" in message
    assert [1000.0, 1001.0, 1002.0] in level2.HIDDEN_SCORES  # the visible large case is tried hidden too


# --- the feedback's wording -------------------------------------------------------------


@pytest.mark.parametrize("cell", sorted(ACCEPTED))
def test_a_confirmation_starts_with_a_capital_or_a_symbol(cell, capsys):
    check, forms = ACCEPTED[cell]
    for hidden in (False, True):
        check(forms[0], hidden=hidden)
        lines = capsys.readouterr().out.splitlines()
        assert any(line.startswith("✔ Correct. ") for line in lines), f"hidden={hidden}: no confirmation printed: {lines}"
        for line in lines:
            message = line.removeprefix("✔ Correct. ")
            assert not re.match(r"[a-z]{2,}(?![\w(·^/])", message), line


def test_shown_never_doubles_not_yet_and_keeps_the_message_whole():
    for message in ("Not yet: divide by two.", "not yet. divide by two.", "Not yet divide by two."):
        assert feedback.shown(message) == "✘ Not yet. Divide by two."
    long = "word " * 60 + "grows"
    assert feedback.shown(long) == f"✘ Not yet. Word {long[5:].strip()}"  # one line: the report reads phrases in it
    assert feedback.shown("`d_k` is 3.") == "✘ Not yet. `d_k` is 3."
    assert feedback.shown("d_k should be 64.") == "✘ Not yet. d_k should be 64."  # a symbol keeps its case


def test_the_wrap_style_breaks_between_words_only():
    style = student_feedback.WRAP_STYLE
    assert "word-break: normal" in style and "overflow-wrap: break-word" in style and "break-all" not in style
    assert ".jp-OutputArea-output pre" in style  # JupyterLab's rule there says break-all
    assert "#validation-message pre" in style  # nbgrader's Validate dialog: no wrapping at all


class _FakeShell:
    def __init__(self):
        self.shown, self.published, self.handler = [], [], None

        class Publisher:
            def publish(pub, data, metadata=None, **kwargs):
                self.published.append(data)

        self.display_pub = Publisher()
        self.hooks = []

        class Events:
            def register(events, name, hook):
                self.hooks.append((name, hook))

        self.events = Events()

    def set_custom_exc(self, types, handler):
        self.handler = handler

    def _showtraceback(self, etype, value, lines):
        self.shown.append(lines)


def test_short_tracebacks_shows_one_line_and_sets_the_wrap_style(monkeypatch):
    import builtins

    shell = _FakeShell()
    monkeypatch.setattr(builtins, "get_ipython", lambda: shell, raising=False)
    feedback.short_tracebacks()
    assert shell.published == [{"text/html": student_feedback.WRAP_STYLE, "text/plain": ""}]
    error = WrongAnswer("Not yet: the output grows with h.")
    shell.handler(shell, WrongAnswer, error, None)
    (lines,) = shell.shown
    assert len(lines) == 1 and re.sub(r"\x1b\[[0-9;]*m", "", lines[0]) == "✘ Not yet. The output grows with h."
