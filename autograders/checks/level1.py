"""Checks for Level 1 (Recognition): Problems 1.1 and 1.2.

One function per autograded answer cell, named after its grade_id. Expected
values come from :mod:`mha_core`; each known wrong answer is recognised and its
misconception named. With ``hidden=True`` a check tries further cases and its
messages do not give the answer away.
"""

import mha_core as mha

from ..problems import level1 as problems, shared
from ..problems.engine import checks, recognise

from . import own_work
from .feedback import WrongAnswer, as_number, close, correct, tries

checks(globals(), problems.ASSIGNMENT, problems.ANSWERS)  # q1_1_d_k, q1_2_output_shape, q1_2_why

# Problem 1.1's function: the sheet's sizes, then further sizes.
D_MODEL, H = problems.SIZES_1_1.sheet["d_model"], problems.SIZES_1_1.sheet["h"]
VISIBLE_SIZES = [(768, 12), (512, 4)]
HIDDEN_SIZES = [(512, 8), (1024, 16), (96, 3), (64, 64), (300, 1), (4096, 32)]


@tries("other widths and numbers of heads", "$h = 1$", "$h = d_{\\text{model}}$")
def q1_1_head_dim(head_dim, hidden=False):
    """Problem 1.1: ``head_dim(d_model, h)`` returns d_k = d_model / h."""
    for d_model, h in HIDDEN_SIZES if hidden else VISIBLE_SIZES:
        what = f"`head_dim({d_model}, {h})`"
        got = as_number(f"head_dim({d_model}, {h})", own_work.call("head_dim", head_dim, d_model, h))
        expected = mha.head_dim(d_model, h)
        if close(got, expected, 1e-9):
            continue
        if hidden:
            raise WrongAnswer(
                f"{what} returned {got:g}, which is not one head's width. Does your formula use both "
                "arguments, for sizes other than the sheet's?", misconception=shared.EXAMPLE_NUMBERS_ONLY
            )
        mistake = recognise(problems.D_K, got, {"d_model": d_model, "h": h}, sheet=False)  # 1.1's misconceptions
        if mistake is not None:
            raise WrongAnswer(f"{what} gave {got:g}. {mistake.says}", misconception=mistake.tag)
        raise WrongAnswer(
            f"{what} returned {got:g}, but should be {expected}: how many numbers describe one token "
            "inside one head when d_model numbers are shared evenly by h heads?",
            # the example's d_k at another size: a constant, not a formula
            misconception=shared.EXAMPLE_NUMBERS_ONLY if close(got, mha.head_dim(D_MODEL, H), 1e-9) else None,
        )
    correct("Your head_dim also works for other widths and numbers of heads." if hidden else
            "Each head gets d_k = d_v = d_model / h: the width is split evenly across the heads.")
