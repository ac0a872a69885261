"""Checks for Level 4 (Synthesis): Problems 4.1, 4.2 and 4.3.

4.1's count and 4.2's vectors are declared in :mod:`autograders.problems.level4` and judged by its
engine; 4.3's ``multi_head_attention`` is declared in :mod:`autograders.problems.attention_block` (its cases,
its right output, each mistake as a wrong implementation or a predicate on the output) and run by
:mod:`.functions`. Checked here: 4.1's ``parameter_count(d_model, h)`` (the sheet's sizes, then further sizes;
its wrong counts named with 4.1's declared misconceptions).
"""

import mha_core as mha

from ..problems import level4 as problems, shared
from ..problems.engine import checks, recognise

from . import functions, own_work
from .feedback import WrongAnswer, as_number, close, passed, tries

checks(globals(), problems.ASSIGNMENT, problems.ANSWERS)

TOL = problems.TOL


# --- Problem 4.1: the parameter count -------------------------------------------

D_MODEL, H = problems.SHEET_4_1["d_model"], problems.SHEET_4_1["h"]  # the sheet's example
PARAM_CASES = [(512, 1), (512, 2), (512, 16), (512, 64), (512, 512), (768, 12), (1024, 16), (64, 4), (12, 3),
               (1, 1), (2048, 32), (96, 6)]


@tries("other $d_{\\text{model}}$ and $h$", "$h = 1$", "$h = d_{\\text{model}}$", "count matrix by matrix",
       "does not change with $h$")
def q4_1_parameter_count(fn, hidden=False):
    cases = [(D_MODEL, H)] + (PARAM_CASES if hidden else [])
    values = {}
    for d_model, h in cases:
        value = as_number(f"parameter_count({d_model}, {h})", own_work.call("parameter_count", fn, d_model, h))
        values[d_model, h] = value
        # hidden: an independent count, matrix by matrix: 3 h (d_model x d_k) + (d_model x d_model)
        expected = 3 * h * (d_model * (d_model // h)) + d_model * d_model if hidden else mha.parameter_count(d_model, h)
        if close(value, expected, 1e-9 * expected):
            continue
        if hidden and close(value, expected + 4 * d_model, 1e-9 * expected):  # the bias convention, named at any size
            raise WrongAnswer(f"`parameter_count({d_model}, {h})`: {problems.BIASES}", misconception=problems.COUNTED_BIASES)
        if hidden and (d_model, h) == (D_MODEL, H):
            raise WrongAnswer(f"`parameter_count({d_model}, {h})` is not the count of the weights: the visible test's "
                              "message says more.")
        if hidden:
            raise WrongAnswer(
                f"parameter_count gives the right count for d_model={D_MODEL}, h={H} but not for d_model={d_model}, "
                f"h={h}: write the count in terms of d_model and h, not numbers from the example.",
                misconception=shared.EXAMPLE_NUMBERS_ONLY
            )
        mistake = recognise(problems.PARAMS, value, {"d_model": d_model, "h": h}, sheet=False)  # 4.1's misconceptions
        raise WrongAnswer(mistake.message({"d_model": d_model, "h": h}) if mistake else (
            f"parameter_count({d_model}, {h}) returned {value:,.0f}, which is not the count. Add up the entries of "
            "every W_i^Q, W_i^K, W_i^V (h heads, each d_model×d_k) and of W^O (d_model×d_model)."
        ))
    if hidden:
        for d_model in {d for d, _ in values}:
            counts = {v for (d, _), v in values.items() if d == d_model}
            if len(counts) > 1:
                raise WrongAnswer(f"parameter_count changes with h at d_model={d_model}: it should not depend on h.")
    passed("3·h·d_model·d_k + d_model² = 4·d_model², whatever h is.", hidden)


# --- Problem 4.3: multi-head attention, written with numpy (declared in autograders/problems/attention_block.py) ---

functions.checks(globals(), problems.FUNCTIONS)  # q4_3_multi_head_attention
