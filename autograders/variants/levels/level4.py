"""The pools of Level 4 (Synthesis): 4.1's count for one d_model, 4.2's vectors.

4.2's entries are small whole-number vectors (a query, 4 keys, 4 values, d_k = 2), as the sheet's:
worked by hand, each answer to 4 decimals. An entry is kept when its scaled scores, weights and
output are apart from every misconception's at twice the checks' tolerance (``TOL``), and apart from
the sheet's own answers.
"""

import itertools
import math

import numpy as np

import mha_core as mha

from ..pools import Pool
from .common import divides, without_sheet

LEVEL4 = "level4_synthesis"
TOL = 1e-3  # 4.2: each entry within this of the answer (the sheet's 2.0123, added from rounded terms, passes)


# --- Problem 4.1: the parameter count for one d_model ----------------------------------------

Q4_1_SHEET = {"d_model": 512, "h": 8}


def _params_mistakes(entry):
    d_model, h = entry["d_model"], entry["h"]
    d_k, full = d_model // h, 4 * d_model**2
    found = {"forgot-w-o": 3 * d_model**2, "heads-cost-more": h * full, "one-head-for-all/one-head": 4 * d_model * d_k,
             "one-head-for-all/projections": 3 * d_model * d_k + d_model**2, "counted-biases": full + 4 * d_model,
             "-/not-squared": 4 * d_model, "-/one-matrix": d_model**2}
    if entry != Q4_1_SHEET:
        found["example-numbers-only"] = mha.parameter_count(Q4_1_SHEET["d_model"], Q4_1_SHEET["h"])
    return found


Q4_1_PARAMS = Pool(
    problem="q4_1", sheet=Q4_1_SHEET, tolerance=0.5, valid=divides, mistakes=_params_mistakes,
    entries=without_sheet(tuple(
        {"d_model": d_model, "h": h}
        for d_model, h in itertools.product((128, 192, 256, 320, 384, 448, 576, 640, 768, 896, 960, 1152, 1280, 1536),
                                            (2, 6, 8, 16))
        # 512: the sheet's count whatever h; h·4·d_model² = 4·512² would read as the sheet's answer
        if d_model % h == 0 and d_model // h >= 8 and d_model != 512 and h * d_model**2 != 512**2
    ), Q4_1_SHEET),
    answer=lambda e: mha.parameter_count(e["d_model"], e["h"]),
)


# --- Problem 4.2: one causal query by hand ---------------------------------------------------

Q4_2_SHEET = {"query": (1.0, 0.0), "keys": ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0), (2.0, 0.0)),
              "values": ((1.0, 0.0), (0.0, 2.0), (3.0, 0.0), (0.0, 4.0))}


def arrays(entry):
    """(q, K, V, d_k) of an entry: K's and V's row j is k_j, v_j."""
    q, K, V = (np.asarray(entry[name], float) for name in ("query", "keys", "values"))
    return q, K, V, K.shape[1]


def _softmax(x):
    e = np.exp(np.asarray(x, float) - np.max(x))
    return e / e.sum()


def answers(entry):
    """(scaled scores, weights, output) of the query at the last position (it sees every key)."""
    q, K, V, d_k = arrays(entry)
    scaled = K @ q / math.sqrt(d_k)
    weights = _softmax(scaled)
    return scaled, weights, weights @ V


def wrong_answers(entry):
    """{misconception key: (scaled scores or None, weights)}: the known wrong ways through 4.2."""
    q, K, V, d_k = arrays(entry)
    raw = K @ q
    scaled = raw / math.sqrt(d_k)
    n = len(K)
    return {
        "scaled-by-d-k": (raw / d_k, _softmax(raw / d_k)),
        "no-scaling": (raw, _softmax(raw)),
        "-/multiplied-by-sqrt-d-k": (raw * math.sqrt(d_k), _softmax(raw * math.sqrt(d_k))),
        "forgot-softmax": (None, scaled),
        "-/linear": (None, scaled / scaled.sum()),
        "causal-mask-applied/strict": (None, np.append(_softmax(scaled[:-1]), 0.0)),
        "causal-mask-applied/first-only": (None, np.eye(n)[0]),
        "-/uniform": (None, np.full(n, 1 / n)),
    }


def _vectors_valid(entry):
    q, K, V, d_k = arrays(entry)
    if q.shape != (2,) or K.shape != (4, 2) or V.shape != (4, 2):
        return f"expected a query of 2 numbers and 4 keys and 4 values of 2, got {q.shape}, {K.shape}, {V.shape}"
    scaled = K @ q / math.sqrt(d_k)
    if abs(scaled.sum()) < 0.5:
        return "the scaled scores add up to about 0: normalising them without exponentials is undefined"
    return None


def _sheet_differs(entry, index):
    return entry != Q4_2_SHEET and not np.allclose(answers(entry)[index], answers(Q4_2_SHEET)[index], atol=2 * TOL)


def _scores_mistakes(entry):
    found = {key: scores for key, (scores, _) in wrong_answers(entry).items() if scores is not None}
    if _sheet_differs(entry, 0):
        found["example-numbers-only"] = answers(Q4_2_SHEET)[0]
    return found


def _weights_mistakes(entry):
    found = {key: weights for key, (_, weights) in wrong_answers(entry).items()}
    if _sheet_differs(entry, 1):
        found["example-numbers-only"] = answers(Q4_2_SHEET)[1]
    return found


def _output_mistakes(entry):
    _, K, V, _ = arrays(entry)
    found = {key: weights @ V for key, (_, weights) in wrong_answers(entry).items()}
    found["sum-of-keys"] = answers(entry)[1] @ K
    if _sheet_differs(entry, 2):
        found["example-numbers-only"] = answers(Q4_2_SHEET)[2]
    return found


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


def _pool_4_2(index, mistakes, notes=None):
    entries = tuple({"query": tuple(map(float, q)), "keys": tuple(tuple(map(float, k)) for k in keys),
                     "values": tuple(tuple(map(float, v)) for v in values)} for q, keys, values in _Q4_2_TABLE)
    return Pool(problem="q4_2", sheet=Q4_2_SHEET, entries=without_sheet(entries, Q4_2_SHEET), tolerance=TOL,
                valid=_vectors_valid, answer=lambda e: answers(e)[index], mistakes=mistakes, notes=notes or {})


Q4_2_SCALED_SCORES = _pool_4_2(0, _scores_mistakes)
Q4_2_WEIGHTS = _pool_4_2(1, _weights_mistakes, {"variable": "attention_weights"})
Q4_2_OUTPUT = _pool_4_2(2, _output_mistakes)
