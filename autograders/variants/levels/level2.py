"""The pools of Level 2 (Application): 2.1's shapes, 2.2's scaled score and 2.3's softmax answers."""

import itertools
import math

import numpy as np

import mha_core as mha

from ..pools import Pool, entry_problems
from .common import divides, without_sheet

LEVEL2 = "level2_application"

Q2_1_SHEET = {"d_model": 512, "h": 8, "n": 10}
_Q2_1_ENTRIES = without_sheet(tuple(
    {"d_model": d_model, "h": h, "n": n}
    for d_model, h, n in itertools.product((256, 384, 512, 768), (4, 6, 8, 16), (5, 7, 9, 12))
    if d_model % h == 0 and n not in (d_model // h, d_model, h) and n * h != d_model // h  # (n·h)² is not d_k²
), Q2_1_SHEET)


def _shape_pool(answer, mistakes):
    def valid(entry):
        reason = divides(entry)
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


# Where the winner (w), the runner-up (r) and the last token (l) stand, tokens 1, 2, 3: the winner at each
# position. Never in order: ascending scores give sorted weights (the "sorted" slip), descending ones weights
# whose reverse is sorted.
_ARRANGEMENTS = ("rlw", "wlr", "rwl", "lwr")  # "rlw": the sheet's order (4, 2, 5)


def _q2_3_entries():
    """Scores with gaps of at least 0.5, the winner at token 1, 2 or 3 (the sheet's: token 3)."""
    for s_l, low, high in itertools.product((1.0, 2.0), (0.5, 1.0, 1.5, 2.5, 3.0), (0.5, 1.5, 2.0)):
        s_r, s_w = s_l + low, s_l + low + high  # never the sheet's gap s_w - s_r = 1
        # two misreadings of the ratio would coincide: s_w/s_r with s_w - s_r, w_w/w_l with the sheet's e
        if s_w / s_r == s_w - s_r or s_w - s_l == 1:
            continue
        for arrangement in _ARRANGEMENTS:
            yield {"scores": tuple({"w": s_w, "r": s_r, "l": s_l}[role] for role in arrangement)}


def ranked(scores):
    """The tokens (1, 2, 3) of the winner, the runner-up and the last, by score."""
    order = np.argsort(np.asarray(scores, float))[::-1]
    return tuple(int(i) + 1 for i in order)


def _in_order(entry):
    scores = entry["scores"]
    winner, runner, last = (scores[t - 1] for t in ranked(scores))
    if not winner - runner >= 0.5 or not runner - last >= 0.5 or last <= 0:
        return (f"scores {scores}: expected three positive scores, each gap at least 0.5 (the winner and the "
                "runner-up cannot flip at the checks' precision)")
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


def ratio(scores):
    """The winner's weight over the runner-up's: e^(s_winner - s_runner-up) (the sheet's: w_3 / w_1)."""
    winner, runner, _ = ranked(scores)
    return math.exp(scores[winner - 1] - scores[runner - 1])


def _ratio_mistakes(entry):
    s = entry["scores"]
    w = mha.softmax(np.asarray(s, float))
    win, run, last = (t - 1 for t in ranked(s))
    found = {"ratio-misread/scores": s[win] / s[run], "ratio-misread/difference": w[win] - w[run],
             "ratio-misread/gap": s[win] - s[run], "ratio-misread/upside-down": w[run] / w[win],
             "ratio-misread/runner-up": w[win] / w[last]}
    if {win, run} != {2, 0}:  # the sheet's tokens w_3 / w_1, when they are not this entry's winner and runner-up
        found["ratio-misread/sheet-tokens"] = w[2] / w[0]
    if entry != Q2_3_SHEET:
        found["example-numbers-only"] = math.e ** (Q2_3_SHEET["scores"][2] - Q2_3_SHEET["scores"][0])
    return found


def _winner_mistakes(entry):
    winner = ranked(entry["scores"])[0]  # the check reads winner - 1 as counted from 0 first
    return {"counted-from-0": winner - 1,
            **{f"softmax-reorders/token-{token}": token for token in range(1, 4) if token not in (winner, winner - 1)}}


def _q2_3_pools(entries):
    return (Pool(problem="q2_3", sheet=Q2_3_SHEET, entries=entries, valid=_in_order, tolerance=WEIGHT_TOL,
                 answer=lambda e: mha.softmax(np.asarray(e["scores"], float)), mistakes=_weights_mistakes),
            Pool(problem="q2_3", sheet=Q2_3_SHEET, entries=entries, valid=_in_order, tolerance=0,
                 answer=lambda e: ranked(e["scores"])[0], mistakes=_winner_mistakes),
            Pool(problem="q2_3", sheet=Q2_3_SHEET, entries=entries, valid=_in_order, tolerance=RATIO_TOL,
                 answer=lambda e: ratio(e["scores"]), mistakes=_ratio_mistakes))


# A few candidates have two misreadings that coincide (the flipped-sign softmax of (3, 5, 2) is the sheet's
# weights; w_3 / w_1 is the winner over the runner-up of (1, 4, 2.5)): the vetting leaves them out.
_CANDIDATES = tuple(_q2_3_entries())
_Q2_3_ENTRIES = tuple(e for e in _CANDIDATES if not any(entry_problems(p, e) for p in _q2_3_pools(_CANDIDATES)))
Q2_3_WEIGHTS, Q2_3_WINNER, Q2_3_RATIO = _q2_3_pools(_Q2_3_ENTRIES)
