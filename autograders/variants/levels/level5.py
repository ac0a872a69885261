"""The pools of Level 5 (Mastery): 5.3's cross-attention shapes."""

import itertools

from ..pools import Pool
from .common import divides, without_sheet

LEVEL5 = "level5_mastery"

Q5_3_SHEET = {"d_model": 64, "h": 4, "n_q": 4, "n_k": 6}


def _cross_valid(entry):
    reason = divides(entry)
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
                entries=without_sheet(tuple(e for e in entries if _cross_valid(e) is None), Q5_3_SHEET),
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
