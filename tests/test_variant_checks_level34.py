"""The checks of levels 3 and 4 judge each student's own numbers, and name the same misconceptions for every variant.

The expected values here are worked out by hand from the numbers (not by the checks' own helpers)."""

import pytest

from autograders.checks import level3
from autograders.checks.feedback import WrongAnswer
from autograders.variants import current

L3 = "level3_analysis"


def doc(assignment, **numbers):
    return {"student": "ann", "assignment": assignment, "generation": {p: 0 for p in numbers}, "numbers": numbers}


def _message(check, value):
    with pytest.raises(WrongAnswer) as info:
        check(value)
    return info.value


# --- Level 3 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("d_model, n, h, h_ref", [(384, 6, 12, 3), (768, 12, 16, 1), (384, 12, 8, 4)])
def test_level3_cost_ratio_for_each_students_own_heads(d_model, n, h, h_ref, capsys):
    with current.handing(doc(L3, q3_1={"d_model": d_model, "n": n, "h": h, "h_ref": h_ref})):
        for hidden in (False, True):
            level3.q3_1_cost_ratio(1, hidden=hidden)  # h heads of width d_model/h: 2 n² d_model, like h_ref heads
        assert f"with {h} heads as with {h_ref}" in capsys.readouterr().out
        error = _message(level3.q3_1_cost_ratio, h / h_ref)
        assert error.misconception == "heads-cost-more" and f"d_k = {d_model}/{h} = {d_model // h}" in str(error)
        error = _message(level3.q3_1_cost_ratio, h_ref / h)
        assert error.misconception == "one-head-for-all" and f"all {h} of them run" in str(error)
        if h / h_ref != 8:
            assert _message(level3.q3_1_cost_ratio, 8).misconception is None  # the sheet's 8 names nothing here
        with pytest.raises(WrongAnswer):
            level3.q3_1_cost_ratio(h / h_ref, hidden=True)


@pytest.mark.parametrize("d_model, h, n", [(256, 4, 7), (768, 16, 5), (192, 6, 12)])
def test_level3_concat_and_w_o_shapes_for_each_students_own_block(d_model, h, n, capsys):
    d_k = d_model // h
    with current.handing(doc(L3, q3_2={"d_model": d_model, "h": h, "n": n})):
        for hidden in (False, True):
            level3.q3_2_concat_shape((n, d_model), hidden=hidden)
            level3.q3_2_wo_shape((d_model, d_model), hidden=hidden)
        assert f"{h} heads of width {d_k} side by side: {n}×{d_model}." in capsys.readouterr().out
        error = _message(level3.q3_2_concat_shape, (n, d_k))
        assert error.misconception == "heads-summed" and f"({n}, {d_k}) is the shape after summing" in str(error)
        assert _message(level3.q3_2_concat_shape, (h, n, d_k)).misconception == "heads-summed"
        assert "not 1" in str(_message(level3.q3_2_concat_shape, (n, h)))
        assert _message(level3.q3_2_concat_shape, (10, 512)).misconception == "example-numbers-only"
        error = _message(level3.q3_2_wo_shape, (d_k, d_model))
        assert error.misconception == "heads-summed" and f"A {d_k}×{d_model} W^O" in str(error)
        assert _message(level3.q3_2_wo_shape, (n, d_model)).misconception == "matrix-confused"
        assert "not to d_k" in str(_message(level3.q3_2_wo_shape, (d_model, d_k)))
        assert _message(level3.q3_2_wo_shape, (512, 512)).misconception == "example-numbers-only"
        for check, sheet in ((level3.q3_2_concat_shape, (10, 512)), (level3.q3_2_wo_shape, (512, 512))):
            with pytest.raises(WrongAnswer):
                check(sheet, hidden=True)
