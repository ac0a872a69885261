"""The pools of the levels' varied problems, and the problems that keep the sheet's numbers.

:data:`POOLS` is ``{assignment: {answer grade_id: Pool}}``. A pool's ``problem`` names the numbers
(``q2_3``): the answers of one problem (2.3's weights, winner and ratio) have one pool each, with the
same entries and the same problem, so a student gets one set of numbers per problem. Each pool's
entries come from a small rule over a few lists (sizes that divide, scores in the sheet's order),
enumerated in a fixed order and never holding the sheet's own numbers (the practice edition's
worked solution would give those away); ``tests/test_variant_pools.py`` vets every entry.

Each misconception's key is its tag as the check names it (``tag/detail`` where one tag has
several wrong answers, ``-/detail`` for a wrong answer named without a tag): the checks take the
wrong values from ``pool.mistakes(entry)`` and their messages from their own table by key.
"""

import itertools
import math

import numpy as np

import mha_core as mha

from .pools import Pool

LEVEL1, LEVEL2, LEVEL5 = "level1_recognition", "level2_application", "level5_mastery"

# Problems whose point needs their exact numbers, or that have no numbers: they stay fixed.
FIXED = {
    "q1_1_head_dim": "a function: its tests already try many sizes",
    "q1_2_why": "a labelled choice",
    "q1_2_explain": "the written answer's own example (d_model = 1024, h = 16) is the rubric's",
    "q2_2_why": "a labelled choice whose option D is about the sheet's coincidence √64 = 8 = h",
    "q2_3_softmax": "a function: its tests already try many scores, large ones included",
}


def _divides(entry):
    d_model, h = entry["d_model"], entry["h"]
    if h < 1 or d_model % h:
        return f"h = {h} does not divide d_model = {d_model}"
    return None


def _without_sheet(entries, sheet):
    return tuple(e for e in entries if e != sheet)


# --- Level 1 ----------------------------------------------------------------------------

_WIDTHS = (128, 192, 256, 384, 512, 640, 1024, 1536)
_HEADS = (2, 4, 6, 8, 16)


def _sizes(extra=None):
    """(d_model, h) with h dividing d_model, one head at least 8 wide, not h wide and not the sheet's 64."""
    for d_model, h in itertools.product(_WIDTHS, _HEADS):
        if d_model % h == 0 and d_model // h >= 8 and d_model // h not in (h, 64):
            yield {"d_model": d_model, "h": h, **(extra or {})}


Q1_1_SHEET = {"d_model": 768, "h": 12}


def _q1_1_mistakes(entry):
    d_model, h = entry["d_model"], entry["h"]
    found = {"multiplied-by-h": d_model * h, "roles-swapped": h / d_model, "head-full-width": d_model, "heads-free": h}
    if entry != Q1_1_SHEET:
        found["example-numbers-only"] = Q1_1_SHEET["d_model"] / Q1_1_SHEET["h"]
    return found


Q1_1_D_K = Pool(
    problem="q1_1", sheet=Q1_1_SHEET, entries=_without_sheet(tuple(_sizes()), Q1_1_SHEET),
    answer=lambda e: mha.head_dim(e["d_model"], e["h"]), mistakes=_q1_1_mistakes, tolerance=1e-9, valid=_divides,
)

Q1_2_SHEET = {"d_model": 768, "h": 12, "n": 6}


def _q1_2_mistakes(entry):
    d_model, h, n = entry["d_model"], entry["h"], entry["n"]
    d_k = d_model // h
    found = {"heads-summed": (h, n, d_k), "one-head-for-all": (n, d_k), "multiplied-by-h": (n, h * d_model),
             "matrix-confused": (n, n), "transposed": (d_model, n), "-/one-number-per-head": (n, h)}
    if (d_model, n) != (Q1_2_SHEET["d_model"], Q1_2_SHEET["n"]):
        found["example-numbers-only"] = (Q1_2_SHEET["n"], Q1_2_SHEET["d_model"])
    return found


Q1_2_OUTPUT_SHAPE = Pool(
    problem="q1_2", sheet=Q1_2_SHEET,
    entries=_without_sheet(tuple(e for n in (3, 5, 7) for e in _sizes({"n": n}) if n not in (e["h"], e["d_model"] // e["h"])),
                           Q1_2_SHEET),
    answer=lambda e: (e["n"], e["d_model"]), mistakes=_q1_2_mistakes, tolerance=0, valid=_divides,
)


# --- Level 2 ----------------------------------------------------------------------------

Q2_1_SHEET = {"d_model": 512, "h": 8, "n": 10}
_Q2_1_ENTRIES = _without_sheet(tuple(
    {"d_model": d_model, "h": h, "n": n}
    for d_model, h, n in itertools.product((256, 384, 512, 768), (4, 6, 8, 16), (5, 7, 9, 12))
    if d_model % h == 0 and n not in (d_model // h, d_model, h) and n * h != d_model // h  # (n·h)² is not d_k²
), Q2_1_SHEET)


def _shape_pool(answer, mistakes):
    def valid(entry):
        reason = _divides(entry)
        if reason:
            return reason
        return "n equals d_k" if entry["n"] == entry["d_model"] // entry["h"] else None

    return Pool(problem="q2_1", sheet=Q2_1_SHEET, entries=_Q2_1_ENTRIES, tolerance=0, valid=valid,
                answer=lambda e: answer(e["d_model"], e["h"], e["n"], e["d_model"] // e["h"]),
                mistakes=lambda e: mistakes(e["d_model"], e["h"], e["n"], e["d_model"] // e["h"]))


Q2_1_WQ_SHAPE = _shape_pool(
    lambda d_model, h, n, d_k: (d_model, d_k),
    lambda d_model, h, n, d_k: {"one-head-for-all": (d_model, d_model), "transposed": (d_k, d_model),
                                "matrix-confused": (n, d_k)})
Q2_1_Q_SHAPE = _shape_pool(
    lambda d_model, h, n, d_k: (n, d_k),
    lambda d_model, h, n, d_k: {"one-head-for-all": (n, d_model), "transposed": (d_k, n),
                                "matrix-confused": (d_model, d_k)})
Q2_1_SCORES_SHAPE = _shape_pool(
    lambda d_model, h, n, d_k: (n, n),
    lambda d_model, h, n, d_k: {"qt-k": (d_k, d_k), "matrix-confused": (n, d_k), "one-head-for-all": (n * h, n * h)})
Q2_1_HEAD_SHAPE = _shape_pool(
    lambda d_model, h, n, d_k: (n, d_k),
    lambda d_model, h, n, d_k: {"matrix-confused": (n, n), "one-head-for-all": (n, d_model), "transposed": (d_k, n)})

Q2_2_SHEET = {"d_k": 64, "dot": 40.0, "d_model": 512}


def _q2_2_mistakes(entry):
    d_k, dot, d_model = entry["d_k"], entry["dot"], entry["d_model"]
    found = {"scaled-by-d-k": dot / d_k, "no-scaling": dot, "scaled-with-d-model": dot / math.sqrt(d_model),
             "multiplied-by-sqrt-d-k": dot * math.sqrt(d_k), "-/multiplied-by-d-k": dot * d_k}
    if entry != Q2_2_SHEET:
        found["example-numbers-only"] = Q2_2_SHEET["dot"] / math.sqrt(Q2_2_SHEET["d_k"])
    return found


Q2_2_SCALED_SCORE = Pool(
    problem="q2_2", sheet=Q2_2_SHEET,
    entries=tuple({"d_k": d_k, "dot": dot, "d_model": 8 * d_k}
                  for d_k, dot in itertools.product((16, 36, 64, 100, 144), (24.0, 30.0, 36.0, 48.0, 60.0, 72.0))
                  if dot / math.sqrt(d_k) != 5),  # 5: the sheet's answer
    answer=lambda e: e["dot"] / math.sqrt(e["d_k"]), mistakes=_q2_2_mistakes, tolerance=1e-3,
    valid=lambda e: None if e["d_k"] > 0 and e["d_model"] % e["d_k"] == 0 else "d_k does not divide d_model",
)

Q2_3_SHEET = {"scores": (4.0, 2.0, 5.0)}
WEIGHT_TOL = 5e-4  # the sheet gives weights to 4 decimals (3 decimals pass too)
RATIO_TOL = 0.02  # "roughly": ratios of rounded weights are accepted


def _q2_3_entries():
    """Scores in the sheet's order (token 3 first, token 1 second, token 2 last), gaps of at least 1."""
    for s2, low, high in itertools.product((1.0, 2.0), (0.5, 1.0, 1.5, 2.5, 3.0), (0.5, 1.5, 2.0)):
        scores = (s2 + low, s2, s2 + low + high)  # never the sheet's gap s_3 - s_1 = 1
        # two misreadings of the ratio would coincide: s_3/s_1 with s_3 - s_1, w_3/w_2 with the sheet's e
        if scores[2] / scores[0] != scores[2] - scores[0] and scores[2] - scores[1] != 1:
            yield {"scores": scores}


def _in_order(entry):
    s1, s2, s3 = entry["scores"]
    if not s3 - s1 >= 0.5 or not s1 - s2 >= 0.5 or s2 <= 0:
        return f"scores {entry['scores']}: expected s_3 > s_1 > s_2 > 0, each gap at least 0.5 (the feedback says so)"
    return None


def _weights_mistakes(entry):
    s = np.asarray(entry["scores"], float)
    w = mha.softmax(s)
    found = {"forgot-softmax": s, "softmax-linear": s / s.sum(), "softmax-not-normalised": np.exp(s),
             "softmax-flipped-signs": np.exp(-s) / np.exp(-s).sum(), "-/reversed": w[::-1], "-/sorted": np.sort(w),
             "weights-as-percentages": 100 * w}
    if entry != Q2_3_SHEET:
        found["example-numbers-only"] = mha.softmax(np.asarray(Q2_3_SHEET["scores"]))
    return found


def _ratio_mistakes(entry):
    s = entry["scores"]
    w = mha.softmax(np.asarray(s, float))
    found = {"ratio-misread/scores": s[2] / s[0], "ratio-misread/difference": w[2] - w[0],
             "ratio-misread/gap": s[2] - s[0], "ratio-misread/upside-down": w[0] / w[2],
             "ratio-misread/runner-up": w[2] / w[1]}
    if entry != Q2_3_SHEET:
        found["example-numbers-only"] = math.e ** (Q2_3_SHEET["scores"][2] - Q2_3_SHEET["scores"][0])
    return found


def _winner_mistakes(entry):
    winner = int(np.argmax(entry["scores"])) + 1  # the check reads winner - 1 as counted from 0 first
    return {"counted-from-0": winner - 1,
            **{f"softmax-reorders/token-{token}": token for token in range(1, 4) if token not in (winner, winner - 1)}}


_Q2_3_ENTRIES = tuple(_q2_3_entries())
Q2_3_WEIGHTS = Pool(problem="q2_3", sheet=Q2_3_SHEET, entries=_Q2_3_ENTRIES, valid=_in_order, tolerance=WEIGHT_TOL,
                    answer=lambda e: mha.softmax(np.asarray(e["scores"], float)), mistakes=_weights_mistakes)
Q2_3_WINNER = Pool(problem="q2_3", sheet=Q2_3_SHEET, entries=_Q2_3_ENTRIES, valid=_in_order, tolerance=0,
                   answer=lambda e: int(np.argmax(e["scores"])) + 1, mistakes=_winner_mistakes)
Q2_3_RATIO = Pool(problem="q2_3", sheet=Q2_3_SHEET, entries=_Q2_3_ENTRIES, valid=_in_order, tolerance=RATIO_TOL,
                  answer=lambda e: math.exp(e["scores"][2] - e["scores"][0]), mistakes=_ratio_mistakes)


# --- Level 5 ----------------------------------------------------------------------------

Q5_3_SHEET = {"d_model": 64, "h": 4, "n_q": 4, "n_k": 6}


def _cross_valid(entry):
    reason = _divides(entry)
    if reason:
        return reason
    sizes = (entry["n_q"], entry["n_k"], entry["d_model"] // entry["h"], entry["d_model"])
    return None if len(set(sizes)) == 4 else f"n_q, n_k, d_k and d_model {sizes} are not four different sizes"


def _cross_pool(answer, mistakes, sheet_answer):
    def all_mistakes(e):
        found = mistakes(e["d_model"], e["n_q"], e["n_k"], e["d_model"] // e["h"])
        if answer(e["d_model"], e["n_q"], e["n_k"], 0) != sheet_answer:
            found["example-numbers-only"] = sheet_answer
        return found

    entries = tuple({"d_model": d_model, "h": h, "n_q": n_q, "n_k": n_k}
                    for d_model, h, n_q, n_k in itertools.product((32, 96, 128, 192), (2, 4, 8), (2, 3, 5), (7, 9, 10)))
    return Pool(problem="q5_3", sheet=Q5_3_SHEET, tolerance=0, valid=_cross_valid,
                entries=_without_sheet(tuple(e for e in entries if _cross_valid(e) is None), Q5_3_SHEET),
                answer=lambda e: answer(e["d_model"], e["n_q"], e["n_k"], e["d_model"] // e["h"]), mistakes=all_mistakes)


Q5_3_SCORE_SHAPE = _cross_pool(
    lambda d_model, n_q, n_k, d_k: (n_q, n_k),
    lambda d_model, n_q, n_k, d_k: {"transposed": (n_k, n_q), "cross-attention-square/queries": (n_q, n_q),
                                    "cross-attention-square/keys": (n_k, n_k), "matrix-confused": (n_q, d_k)},
    (4, 6))
Q5_3_OUTPUT_SHAPE = _cross_pool(
    lambda d_model, n_q, n_k, d_k: (n_q, d_model),
    lambda d_model, n_q, n_k, d_k: {"cross-attention-square": (n_k, d_model), "one-head-for-all": (n_q, d_k),
                                    "transposed": (d_model, n_q), "matrix-confused": (n_q, n_k)},
    (4, 64))


POOLS = {
    LEVEL1: {"q1_1_d_k": Q1_1_D_K, "q1_2_output_shape": Q1_2_OUTPUT_SHAPE},
    LEVEL2: {"q2_1_wq_shape": Q2_1_WQ_SHAPE, "q2_1_q_shape": Q2_1_Q_SHAPE, "q2_1_scores_shape": Q2_1_SCORES_SHAPE,
             "q2_1_head_shape": Q2_1_HEAD_SHAPE, "q2_2_scaled_score": Q2_2_SCALED_SCORE,
             "q2_3_weights": Q2_3_WEIGHTS, "q2_3_winner": Q2_3_WINNER, "q2_3_ratio": Q2_3_RATIO},
    LEVEL5: {"q5_3_score_shape": Q5_3_SCORE_SHAPE, "q5_3_output_shape": Q5_3_OUTPUT_SHAPE},
}


def problems(assignment):
    """{problem: its first pool} of ``assignment`` (one set of numbers per problem)."""
    found = {}
    for pool in POOLS.get(assignment, {}).values():
        found.setdefault(pool.problem, pool)
    return found


def pool_of(assignment, answer_id):
    """The pool of the answer cell ``answer_id`` of ``assignment``."""
    return POOLS[assignment][answer_id]
