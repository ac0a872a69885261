"""The pools of Level 3 (Analysis): 3.1's cost ratio, 3.2's concatenation and W^O shapes.

3.1's ratio is 1 for every entry (the problem's point: h heads of width d_model/h cost what one
full-width head costs); what varies is the two h's, so the misconceptions' answers (h/h_ref, "h heads
cost h times more", and h_ref/h, one head of each counted) are the student's own.
"""

import itertools

import mha_core as mha

from ..pools import Pool
from .common import divides, without_sheet

LEVEL3 = "level3_analysis"


# --- Problem 3.1: the cost with h heads over the cost with h_ref heads ---------------------

Q3_1_SHEET = {"d_model": 512, "n": 10, "h": 8, "h_ref": 1}


def attention_cost(d_model, h, n):
    """Multiply-adds of the scores and the weighted sums of all h heads (mha_core's count)."""
    stages = mha.flop_count(d_model, h, n)
    return stages["scores"] + stages["weighted_sum"]


def _ratio_valid(entry):
    for name in ("h", "h_ref"):
        reason = divides({"d_model": entry["d_model"], "h": entry[name]})
        if reason:
            return reason.replace("h =", f"{name} =")
    if not entry["h"] > entry["h_ref"] or entry["h"] % entry["h_ref"]:
        return f"h = {entry['h']} is not a multiple of h_ref = {entry['h_ref']} larger than it"
    return None


def _ratio_mistakes(entry):
    h, h_ref = entry["h"], entry["h_ref"]
    return {"heads-cost-more": h / h_ref, "one-head-for-all": h_ref / h}


# h_ref divides h (the messages say "h/h_ref times cheaper"); eight different ratios h/h_ref
_HEAD_PAIRS = ((2, 1), (4, 1), (6, 1), (12, 1), (16, 1), (24, 1), (32, 1), (4, 2), (16, 2), (6, 3), (12, 3), (8, 4),
               (16, 4))
_Q3_1_ENTRIES = without_sheet(tuple(
    {"d_model": d_model, "n": n, "h": h, "h_ref": h_ref}
    for d_model, n, (h, h_ref) in itertools.product((384, 768), (6, 12), _HEAD_PAIRS)
), Q3_1_SHEET)

Q3_1_COST_RATIO = Pool(
    problem="q3_1", sheet=Q3_1_SHEET, entries=_Q3_1_ENTRIES, tolerance=1e-6, valid=_ratio_valid,
    answer=lambda e: attention_cost(e["d_model"], e["h"], e["n"]) / attention_cost(e["d_model"], e["h_ref"], e["n"]),
    mistakes=_ratio_mistakes, notes={"one-answer": "the ratio is 1 whatever the numbers: the problem's point"},
)


# --- Problem 3.2: the shapes of the concatenated heads and of W^O ---------------------------

Q3_2_SHEET = {"d_model": 512, "h": 8, "n": 10}


def _block_valid(entry):
    reason = divides(entry)
    if reason:
        return reason
    d_model, h, n = entry["d_model"], entry["h"], entry["n"]
    sizes = (d_model, h, n, d_model // h)
    if h < 2 or len(set(sizes)) < 4:
        return f"d_model, h, n and d_k {sizes} are not four different sizes, with h > 1"
    return None


_Q3_2_ENTRIES = without_sheet(tuple(
    {"d_model": d_model, "h": h, "n": n}
    for d_model, h, n in itertools.product((128, 192, 256, 384, 768), (2, 4, 6, 16), (5, 7, 12))
    if _block_valid({"d_model": d_model, "h": h, "n": n}) is None and d_model // h >= 8
), Q3_2_SHEET)


def _block_pool(answer, mistakes, notes=None):
    sheet_answer = answer(Q3_2_SHEET["d_model"], Q3_2_SHEET["h"], Q3_2_SHEET["n"], 64)

    def all_mistakes(e):
        d_model, h, n = e["d_model"], e["h"], e["n"]
        found = mistakes(d_model, h, n, d_model // h)
        if answer(d_model, h, n, d_model // h) != sheet_answer:
            found["example-numbers-only"] = sheet_answer
        return found

    return Pool(problem="q3_2", sheet=Q3_2_SHEET, entries=_Q3_2_ENTRIES, tolerance=0, valid=_block_valid,
                answer=lambda e: answer(e["d_model"], e["h"], e["n"], e["d_model"] // e["h"]), mistakes=all_mistakes,
                notes=notes or {})


Q3_2_CONCAT_SHAPE = _block_pool(
    lambda d_model, h, n, d_k: (n, d_model),
    lambda d_model, h, n, d_k: {"heads-summed/summed": (n, d_k), "heads-summed/stacked": (h, n, d_k),
                                "-/one-column-per-head": (n, h), "-/transposed": (d_model, n)})
Q3_2_WO_SHAPE = _block_pool(
    lambda d_model, h, n, d_k: (d_model, d_model),
    lambda d_model, h, n, d_k: {"heads-summed": (d_k, d_model), "-/maps-to-d-k": (d_model, d_k),
                                "matrix-confused": (n, d_model)},
    {"variable": "W_O_shape"})
