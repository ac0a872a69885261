"""Level 4 (Synthesis), notebooks/level4_synthesis.ipynb: Problems 4.1 and 4.2, declared once.

4.1's count for the student's d_model (weights only; biases named). 4.2: one causal query by hand (scaled
scores, weights, output) for the student's vectors, within ``TOL`` = 1e-3, so the sheet's 2.0123 (added up
from rounded terms) passes as well as the exact 2.0124. 4.2's entries are small whole-number vectors (a
query, 4 keys, 4 values, d_k = 2), as the sheet's: each kept when its answers are apart from every
misconception's at twice ``TOL``, and apart from the sheet's own. 4.1's ``parameter_count`` (a function)
keeps its own check (:mod:`autograders.checks.level4`), which names 4.1's misconceptions declared here; 4.3's
``multi_head_attention`` (a function) is declared in :mod:`.attention_block` (``FUNCTIONS``).
"""

import itertools
import math

import numpy as np

import mha_core as mha

from ..student.feedback import WrongAnswer, as_vector
from . import shared
from .attention_block import MULTI_HEAD_ATTENTION
from .declare import HIDDEN_PASSED, Answer, Mistake, Numbers, close
from .level1 import divides
from .misconception import Misconception

ASSIGNMENT = "level4_synthesis"
TOL = 1e-3  # 4.2: each entry within this of the answer (the sheet's 2.0123, added from rounded terms, passes)


# --- Problem 4.1: the parameter count for one d_model ------------------------------------------------

SHEET_4_1 = {"d_model": 512, "h": 8}
WIDTH_4_1 = Numbers("q4_1", sheet=SHEET_4_1, valid=divides, derive=lambda n: {"d_k": n["d_model"] // n["h"]},
                    entries=tuple(
    {"d_model": d_model, "h": h}
    for d_model, h in itertools.product((128, 192, 256, 320, 384, 448, 576, 640, 768, 896, 960, 1152, 1280, 1536),
                                        (2, 6, 8, 16))
    # 512: the sheet's count whatever h; h·4·d_model² = 4·512² would read as the sheet's answer
    if d_model % h == 0 and d_model // h >= 8 and d_model != 512 and h * d_model**2 != 512**2))

# named by 4.1's count and by the check of its parameter_count (autograders.checks.level4)
COUNTED_BIASES = Misconception("counted-biases", "counted biases")
BIASES = ("You counted biases (d_model per projection, 4·d_model in all), as PyTorch's nn.MultiheadAttention does: "
          "a legitimate convention, but this problem counts weights only, as its prompt says.")

PARAMS = Answer(
    "q4_1_params_512", "number", lambda n: mha.parameter_count(n.d_model, n.h), WIDTH_4_1, tolerance=0.5, prefix="",
    near=lambda value, wrong: close(value, wrong, 1e-9 * max(1.0, wrong)), sheet_mistake=True,
    mistakes=(
        Mistake(shared.FORGOT_W_O, lambda n: 3 * n.d_model**2, "That forgot W^O: the three projections W^Q, W^K, W^V give "
                "3·d_model², and the output matrix W^O (d_model×d_model) adds d_model² more."),
        Mistake(shared.HEADS_COST_MORE, lambda n: n.h * 4 * n.d_model**2, 'That is the belief "parameters grow with h": it '
                "gives every head full d_model×d_model matrices. Each head's W_i^Q, W_i^K, W_i^V is only d_model×d_k, "
                "with d_k = d_model/h."),
        Mistake(shared.ONE_HEAD_FOR_ALL + "/one-head", lambda n: 4 * n.d_model * n.d_k, "That counts one head only (and a W^O as "
                "small as one head's matrices): there are h heads, and W^O is d_model×d_model."),
        Mistake(shared.ONE_HEAD_FOR_ALL + "/projections", lambda n: 3 * n.d_model * n.d_k + n.d_model**2, "That counts the "
                "projections of one head only: every one of the h heads has its own W_i^Q, W_i^K, W_i^V."),
        Mistake(COUNTED_BIASES, lambda n: 4 * n.d_model**2 + 4 * n.d_model, BIASES),
        Mistake("-/not-squared", lambda n: 4 * n.d_model, "Each weight matrix has d_model·d_model entries, not d_model: "
                "square it."),
        Mistake("-/one-matrix", lambda n: n.d_model**2, "That counts a single d_model×d_model matrix: there are four "
                "(W^Q, W^K, W^V and W^O)."),
    ),
    fallback=lambda n: f"Not yet: evaluate your parameter count at d_model = {n.d_model} (ignoring biases).",
    right=lambda n: f"{mha.parameter_count(n.d_model, n.h):,} parameters, for any h that divides {n.d_model}.",
    hidden=lambda n: 4 * n.d_model * n.d_model, hidden_right=HIDDEN_PASSED,
)


# --- Problem 4.2: one causal query by hand -------------------------------------------------------------

from ..student.sheet import SHEET_4_2  # noqa: E402 (the sheet's vectors: the students' side draws them too)


def arrays(entry):
    """(q, K, V, d_k) of an entry: K's and V's row j is k_j, v_j."""
    q, K, V = (np.asarray(entry[name], float) for name in ("query", "keys", "values"))
    return q, K, V, K.shape[1]


def answers(n):
    """(scaled scores, weights, output) of the query at position 4, as the last row of a causal pass."""
    q, K, V, d_k = arrays(n)
    Q = np.zeros((len(K), d_k))
    Q[-1] = q  # the other positions' queries do not matter for row 4
    out, w = mha.scaled_dot_product_attention(Q, K, V, causal=True)
    return (K @ q) / np.sqrt(d_k), w[-1], out[-1]


def by_hand(n):
    """The same three answers with plain Python floats (the hidden checks' recomputation)."""
    q, K, V, d_k = arrays(n)
    scaled = [sum(qi * ki for qi, ki in zip(q.tolist(), k)) / math.sqrt(d_k) for k in K.tolist()]
    exps = [math.exp(s) for s in scaled]
    weights = [e / sum(exps) for e in exps]
    output = [sum(w * v[c] for w, v in zip(weights, V.tolist())) for c in range(V.shape[1])]
    return np.array(scaled), np.array(weights), np.array(output)


def wrong_answers(n):
    """{misconception key: (scaled scores or None, weights)}: the known wrong ways through 4.2."""
    q, K, V, d_k = arrays(n)
    raw = K @ q
    scaled = raw / math.sqrt(d_k)
    return {
        shared.SCALED_BY_D_K: (raw / d_k, mha.softmax(raw / d_k)),
        shared.NO_SCALING: (raw, mha.softmax(raw)),
        "-/multiplied-by-sqrt-d-k": (raw * math.sqrt(d_k), mha.softmax(raw * math.sqrt(d_k))),
        shared.FORGOT_SOFTMAX: (None, scaled),
        "-/linear": (None, scaled / scaled.sum()),
        shared.CAUSAL_MASK_APPLIED + "/strict": (None, np.append(mha.softmax(scaled[:-1]), 0.0)),
        shared.CAUSAL_MASK_APPLIED + "/first-only": (None, np.eye(len(K))[0]),
        "-/uniform": (None, np.full(len(K), 1 / len(K))),
    }


SAYS_4_2 = {
    shared.SCALED_BY_D_K: "That scales by d_k = 2 instead of √d_k = √2 ≈ 1.4142: the scores are divided by the square root "
                     "of d_k.",
    shared.NO_SCALING: "That has no scaling: divide each dot product by √d_k = √2 before the softmax.",
    "-/multiplied-by-sqrt-d-k": "That multiplies by √d_k; the scores are divided by √d_k.",
    shared.FORGOT_SOFTMAX: "That forgot the softmax: it uses the scaled scores as weights. The softmax exponentiates each "
                      "score and divides by the sum, so the weights are positive and add up to 1.",
    "-/linear": "That normalises the scores without exponentials: the softmax divides e^{s_j} by the sum of e^{s_j}, "
                "not s_j by the sum of s_j.",
    shared.CAUSAL_MASK_APPLIED + "/strict": "That applies the causal mask wrongly: it hides position 4 itself. A causal mask "
                                  "hides only keys after the query; the query at position 4, the last one, may attend "
                                  "to all 4 keys.",
    shared.CAUSAL_MASK_APPLIED + "/first-only": "That applies the causal mask wrongly: the query at position 4 (the last "
                                      "position) may attend to all 4 keys, not only to the first.",
    "-/uniform": "Equal weights 1/4 ignore the scores: the softmax of the scaled scores gives larger weights to larger "
                 "scores.",
}


def _valid_4_2(entry):
    q, K, V, d_k = arrays(entry)
    if q.shape != (2,) or K.shape != (4, 2) or V.shape != (4, 2):
        return f"expected a query of 2 numbers and 4 keys and 4 values of 2, got {q.shape}, {K.shape}, {V.shape}"
    if abs((K @ q / math.sqrt(d_k)).sum()) < 0.5:
        return "the scaled scores add up to about 0: normalising them without exponentials is undefined"
    return None


# (q, (k_1, ..., k_4), (v_1, ..., v_4)): whole numbers in the sheet's spirit: q one of (0, 1), (1, 1), (2, 0),
# (1, -1), (0, 2); 4 of the keys (1, 0), (0, 1), (1, 1), (2, 0), (0, 2), (1, 2), (2, 1); one of 3 sets of values.
# Of the 525 such entries, the 470 that pass the vetting of all three answers, 40 taken evenly spaced. Written out,
# not searched at import: every kernel imports this module.
_Q4_2_TABLE = (
    ((0, 1), ((1, 0), (0, 1), (1, 1), (2, 0)), ((1, 0), (0, 2), (3, 0), (0, 4))),
    ((0, 1), ((1, 0), (0, 1), (1, 1), (2, 1)), ((0, 1), (2, 0), (0, 3), (1, 1))),
    ((0, 1), ((1, 0), (0, 1), (0, 2), (1, 2)), ((0, 1), (2, 0), (0, 3), (1, 1))),
    ((0, 1), ((1, 0), (1, 1), (2, 0), (1, 2)), ((0, 1), (2, 0), (0, 3), (1, 1))),
    ((0, 1), ((1, 0), (1, 1), (1, 2), (2, 1)), ((0, 1), (2, 0), (0, 3), (1, 1))),
    ((0, 1), ((1, 0), (0, 2), (1, 2), (2, 1)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((0, 1), ((0, 1), (1, 1), (0, 2), (2, 1)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((0, 1), ((0, 1), (2, 0), (1, 2), (2, 1)), ((0, 1), (2, 0), (0, 3), (1, 1))),
    ((0, 1), ((2, 0), (0, 2), (1, 2), (2, 1)), ((0, 1), (2, 0), (0, 3), (1, 1))),
    ((1, 1), ((1, 0), (0, 1), (2, 0), (2, 1)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((1, 1), ((1, 0), (1, 1), (2, 0), (1, 2)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((1, 1), ((1, 0), (1, 1), (1, 2), (2, 1)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((1, 1), ((1, 0), (0, 2), (1, 2), (2, 1)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((1, 1), ((0, 1), (1, 1), (0, 2), (2, 1)), ((1, 0), (0, 2), (3, 0), (0, 4))),
    ((1, 1), ((0, 1), (2, 0), (1, 2), (2, 1)), ((1, 0), (0, 2), (3, 0), (0, 4))),
    ((1, 1), ((1, 1), (2, 0), (1, 2), (2, 1)), ((1, 0), (0, 2), (3, 0), (0, 4))),
    ((2, 0), ((1, 0), (0, 1), (1, 1), (0, 2)), ((1, 0), (0, 2), (3, 0), (0, 4))),
    ((2, 0), ((1, 0), (0, 1), (2, 0), (0, 2)), ((0, 1), (2, 0), (0, 3), (1, 1))),
    ((2, 0), ((1, 0), (0, 1), (0, 2), (2, 1)), ((0, 1), (2, 0), (0, 3), (1, 1))),
    ((2, 0), ((1, 0), (1, 1), (2, 0), (2, 1)), ((0, 1), (2, 0), (0, 3), (1, 1))),
    ((2, 0), ((1, 0), (2, 0), (0, 2), (1, 2)), ((0, 1), (2, 0), (0, 3), (1, 1))),
    ((2, 0), ((0, 1), (1, 1), (2, 0), (0, 2)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((2, 0), ((0, 1), (1, 1), (0, 2), (2, 1)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((2, 0), ((0, 1), (0, 2), (1, 2), (2, 1)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((2, 0), ((1, 1), (0, 2), (1, 2), (2, 1)), ((0, 1), (2, 0), (0, 3), (1, 1))),
    ((1, -1), ((1, 0), (0, 1), (1, 1), (1, 2)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((1, -1), ((1, 0), (0, 1), (0, 2), (1, 2)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((1, -1), ((1, 0), (1, 1), (2, 0), (2, 1)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((1, -1), ((1, 0), (2, 0), (1, 2), (2, 1)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((1, -1), ((0, 1), (1, 1), (0, 2), (1, 2)), ((1, 0), (0, 2), (3, 0), (0, 4))),
    ((1, -1), ((0, 1), (2, 0), (1, 2), (2, 1)), ((1, 0), (0, 2), (3, 0), (0, 4))),
    ((1, -1), ((1, 1), (2, 0), (1, 2), (2, 1)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((0, 2), ((1, 0), (0, 1), (1, 1), (1, 2)), ((2, 0), (0, 1), (0, 3), (4, 0))),
    ((0, 2), ((1, 0), (0, 1), (2, 0), (2, 1)), ((1, 0), (0, 2), (3, 0), (0, 4))),
    ((0, 2), ((1, 0), (1, 1), (2, 0), (0, 2)), ((1, 0), (0, 2), (3, 0), (0, 4))),
    ((0, 2), ((1, 0), (1, 1), (0, 2), (2, 1)), ((1, 0), (0, 2), (3, 0), (0, 4))),
    ((0, 2), ((1, 0), (0, 2), (1, 2), (2, 1)), ((1, 0), (0, 2), (3, 0), (0, 4))),
    ((0, 2), ((0, 1), (1, 1), (2, 0), (2, 1)), ((0, 1), (2, 0), (0, 3), (1, 1))),
    ((0, 2), ((0, 1), (2, 0), (0, 2), (2, 1)), ((1, 0), (0, 2), (3, 0), (0, 4))),
    ((0, 2), ((1, 1), (2, 0), (0, 2), (2, 1)), ((1, 0), (0, 2), (3, 0), (0, 4))),
)

VECTORS_4_2 = Numbers("q4_2", sheet=SHEET_4_2, valid=_valid_4_2, derive=lambda n: {"V": arrays(n)[2]},
                      symbols={"query": "q", "keys": "(k_1, k_2, k_3, k_4)", "values": "(v_1, v_2, v_3, v_4)"},
                      entries=tuple(e for e in ({"query": tuple(map(float, q)),
                                                 "keys": tuple(tuple(map(float, k)) for k in keys),
                                                 "values": tuple(tuple(map(float, v)) for v in values)}
                                                for q, keys, values in _Q4_2_TABLE) if e != SHEET_4_2))


def _vector(name):
    """``value`` as a float vector of 4.2's size (a (1, size) or (size, 1) array is accepted too); -inf is named."""
    def convert(value, n):
        size = len(n["values"][0]) if name == "output" else 4
        try:
            array = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            array = None
        if array is not None and array.size == size and array.ndim <= 2 and np.isneginf(array).any():
            raise WrongAnswer(
                f"`{name}` has -inf in it: that is a causal mask applied wrongly. The query at position 4 is the last "
                "position, so it may attend to all 4 keys: no score is masked.", misconception=shared.CAUSAL_MASK_APPLIED)
        return as_vector(name, value, size)
    return convert


def _masked(value, n, hidden):
    """Scores that look masked (very negative where they are wrong): the causal mask applied wrongly."""
    wrong = np.abs(value - (by_hand(n)[0] if hidden else answers(n)[0])) > TOL
    if wrong.any() and (value[wrong] < -100).all():
        raise WrongAnswer("Some scores look masked (very negative): that is a causal mask applied wrongly. The query at "
                          "position 4 is the last position, so it may attend to all 4 keys.",
                          misconception=shared.CAUSAL_MASK_APPLIED)


def _fallback(name, index, text):
    def fallback(n):
        if index == 1 and not close(n.value.sum(), 1.0, 1e-2):
            return f"Your weights add up to {n.value.sum():.4f}; attention weights add up to 1 (softmax)."
        if close(n.value, answers(n)[index], 0.02):
            return (f"`{name}` is close but not within {TOL:g} of the answer in every entry: keep at least four "
                    "decimals (or let numpy compute them).")
        return text
    return fallback


def _by_hand_answer(id, index, name, mistakes, right, fallback, judge=None):
    return Answer(id, "vector", lambda n: answers(n)[index], VECTORS_4_2, name=name if name != id[5:] else None,
                  tolerance=TOL, prefix="", sheet_mistake=True, mistakes=mistakes, convert=_vector(name), judge=judge,
                  fallback=_fallback(name, index, fallback), right=right, hidden_right=HIDDEN_PASSED,
                  hidden=lambda n: by_hand(n)[index])


def _says(index, V=False):
    return tuple(Mistake(key, lambda n, key=key: wrong_answers(n)[key][index] @ n.V if V else wrong_answers(n)[key][index],
                         SAYS_4_2[key]) for key, pair in wrong_answers(SHEET_4_2).items() if pair[index] is not None)


SCALED_SCORES = _by_hand_answer(
    "q4_2_scaled_scores", 0, "scaled_scores", _says(0), "The scaled scores are q·k_j / √2 for the 4 keys.",
    "For each key k_j compute the dot product q·k_j, then divide it by √d_k.", judge=_masked)
WEIGHTS = _by_hand_answer(
    "q4_2_weights", 1, "attention_weights", _says(1), "The weights are the softmax of the scaled scores; they sum to 1.",
    "Apply the softmax to the scaled scores: e^{s_j} divided by the sum of e^{s_j} over the 4 keys.")
SUM_OF_KEYS = Misconception("sum-of-keys", "weighted sum of the keys, not the values")
OUTPUT = _by_hand_answer(
    "q4_2_output", 2, "output", _says(1, V=True) + (
        Mistake(SUM_OF_KEYS, lambda n: answers(n)[1] @ arrays(n)[1], "That is the weighted sum of the keys: the "
                "output weights the values v_j, not the keys."),),
    "The output is the weighted sum of the values: Σ_j w_j v_j.",
    "The output is the sum over the 4 keys of w_j v_j, the values weighted by the attention weights.")



# --- Problem 4.3: the block in numpy (a function, declared in .attention_block) -----------------------------

ANSWERS = (PARAMS, SCALED_SCORES, WEIGHTS, OUTPUT)
FUNCTIONS = (MULTI_HEAD_ATTENTION,)
