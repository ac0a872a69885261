"""The pools of Level 1 (Recognition): 1.1's d_k and 1.2's output shape."""

import itertools

import mha_core as mha

from ..pools import Pool
from .common import divides, without_sheet

LEVEL1 = "level1_recognition"

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
    problem="q1_1", sheet=Q1_1_SHEET, entries=without_sheet(tuple(_sizes()), Q1_1_SHEET),
    answer=lambda e: mha.head_dim(e["d_model"], e["h"]), mistakes=_q1_1_mistakes, tolerance=1e-9, valid=divides,
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
    entries=without_sheet(tuple(e for n in (3, 5, 7) for e in _sizes({"n": n}) if n not in (e["h"], e["d_model"] // e["h"])),
                           Q1_2_SHEET),
    answer=lambda e: (e["n"], e["d_model"]), mistakes=_q1_2_mistakes, tolerance=0, valid=divides,
)
