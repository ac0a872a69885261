"""The checks of levels 3 and 4 (and 2.3's moving winner) judge each student's own numbers, and name the same
misconceptions for every variant.

The expected values here are worked out by hand from the numbers (not by the checks' own helpers)."""

import math

import numpy as np
import pytest

from autograders.checks import level2, level3, level4
from autograders.checks.feedback import WrongAnswer
from autograders.student import numbers as current

L3, L4 = "level3_analysis", "level4_synthesis"


def doc(assignment, **numbers):
    return {"student": "ann", "assignment": assignment, "generation": {p: 0 for p in numbers}, "numbers": numbers}


def _message(check, value):
    with pytest.raises(WrongAnswer) as info:
        check(value)
    return info.value


# --- 2.3: the winner at any token ---------------------------------------------------------------


@pytest.mark.parametrize("scores, winner, runner, last", [((4.5, 1.0, 2.5), 1, 3, 2), ((2.5, 4.5, 1.0), 2, 1, 3),
                                                          ((1.0, 4.5, 2.5), 2, 3, 1)])
def test_level2_softmax_answers_when_the_winner_is_not_token_3(scores, winner, runner, last, capsys):
    from autograders.variants.levels import POOLS

    assert {"scores": scores} in POOLS["level2_application"]["q2_3_ratio"].entries
    e = [math.exp(s) for s in scores]
    w = [x / sum(e) for x in e]
    ratio = w[winner - 1] / w[runner - 1]
    with current.handing(doc("level2_application", q2_3={"scores": list(scores)})):
        for hidden in (False, True):
            level2.q2_3_weights(np.round(w, 4), hidden=hidden)
            level2.q2_3_winner(winner, hidden=hidden)
            level2.q2_3_ratio(round(ratio, 2), hidden=hidden)
        assert f"w_{winner} / w_{runner} = e^(" in capsys.readouterr().out
        assert _message(level2.q2_3_winner, winner - 1).misconception == "counted-from-0"
        other = next(t for t in (1, 2, 3) if t not in (winner, winner - 1))  # winner - 1 reads as counted from 0
        assert _message(level2.q2_3_winner, other).misconception == "softmax-reorders"
        assert f"w_{runner} / w_{winner}" in str(_message(level2.q2_3_ratio, 1 / ratio))
        assert f"token {last}, the smallest" in str(_message(level2.q2_3_ratio, w[winner - 1] / w[last - 1]))
        error = _message(level2.q2_3_ratio, w[2] / w[0])  # the sheet's w_3 / w_1
        assert error.misconception == "ratio-misread"
        assert (f"token {winner} wins" in str(error)) or (winner, runner) == (1, 3)  # 1 / ratio: upside down
        with pytest.raises(WrongAnswer):
            level2.q2_3_ratio(w[2] / w[0], hidden=True)


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


# --- Level 4 ------------------------------------------------------------------------------------


@pytest.mark.parametrize("d_model, h", [(640, 8), (192, 6), (1536, 16)])
def test_level4_parameter_count_for_each_students_own_d_model(d_model, h, capsys):
    d_k = d_model // h
    with current.handing(doc(L4, q4_1={"d_model": d_model, "h": h})):
        for hidden in (False, True):
            level4.q4_1_params_512(4 * d_model**2, hidden=hidden)
        assert f"{4 * d_model**2:,} parameters, for any h that divides {d_model}." in capsys.readouterr().out
        assert _message(level4.q4_1_params_512, 3 * d_model**2).misconception == "forgot-w-o"
        assert _message(level4.q4_1_params_512, h * 4 * d_model**2).misconception == "heads-cost-more"
        assert _message(level4.q4_1_params_512, 4 * d_model * d_k).misconception == "one-head-for-all"
        assert _message(level4.q4_1_params_512, 4 * d_model**2 + 4 * d_model).misconception == "counted-biases"
        assert _message(level4.q4_1_params_512, 4 * 512**2).misconception == "example-numbers-only"
        assert f"d_model = {d_model}" in str(_message(level4.q4_1_params_512, 12345))
        with pytest.raises(WrongAnswer):
            level4.q4_1_params_512(4 * 512**2, hidden=True)


def _by_hand(q, keys, values):
    scaled = [(q[0] * k[0] + q[1] * k[1]) / math.sqrt(2) for k in keys]
    e = [math.exp(s) for s in scaled]
    weights = [x / sum(e) for x in e]
    output = [sum(w * v[c] for w, v in zip(weights, values)) for c in (0, 1)]
    return scaled, weights, output


SHEET = ((1.0, 0.0), ((1.0, 0.0), (0.0, 1.0), (1.0, 1.0), (2.0, 0.0)), ((1.0, 0.0), (0.0, 2.0), (3.0, 0.0), (0.0, 4.0)))
VECTORS = [((0.0, 1.0), ((1.0, 0.0), (1.0, 1.0), (2.0, 0.0), (1.0, 2.0)), ((0.0, 1.0), (2.0, 0.0), (0.0, 3.0), (1.0, 1.0))),
           ((2.0, 0.0), ((1.0, 0.0), (2.0, 0.0), (0.0, 2.0), (1.0, 2.0)), ((0.0, 1.0), (2.0, 0.0), (0.0, 3.0), (1.0, 1.0))),
           ((0.0, 2.0), ((0.0, 1.0), (2.0, 0.0), (0.0, 2.0), (2.0, 1.0)), ((1.0, 0.0), (0.0, 2.0), (3.0, 0.0), (0.0, 4.0)))]


@pytest.mark.parametrize("q, keys, values", VECTORS)
def test_level4_causal_query_for_each_students_own_vectors(q, keys, values, capsys):
    from autograders.variants.levels import POOLS

    assert {"query": q, "keys": keys, "values": values} in POOLS[L4]["q4_2_weights"].entries
    scaled, weights, output = _by_hand(q, keys, values)
    raw = [s * math.sqrt(2) for s in scaled]
    with current.handing(doc(L4, q4_2={"query": list(q), "keys": [list(k) for k in keys],
                                       "values": [list(v) for v in values]})):
        from autograders import variants

        q_, K, V = variants.given(L4, "q4_2", "query", "keys", "values")  # the data cell's arrays are the student's
        assert q_.tolist() == list(q) and K.tolist() == [list(k) for k in keys] and K.shape[1] == 2
        for hidden in (False, True):
            level4.q4_2_scaled_scores(np.round(scaled, 4), hidden=hidden)
            level4.q4_2_weights(np.round(weights, 4), hidden=hidden)
            level4.q4_2_output(np.round(output, 4), hidden=hidden)
        assert _message(level4.q4_2_scaled_scores, [r / 2 for r in raw]).misconception == "scaled-by-d-k"
        assert _message(level4.q4_2_scaled_scores, raw).misconception == "no-scaling"
        assert _message(level4.q4_2_weights, scaled).misconception == "forgot-softmax"
        e3 = [math.exp(s) for s in scaled[:3]]
        strict = [x / sum(e3) for x in e3] + [0.0]
        assert _message(level4.q4_2_weights, strict).misconception == "causal-mask-applied"
        keys_summed = [sum(w * k[c] for w, k in zip(weights, keys)) for c in (0, 1)]
        assert _message(level4.q4_2_output, keys_summed).misconception == "sum-of-keys"
        _, sheet_weights, sheet_output = _by_hand(*SHEET)
        assert _message(level4.q4_2_output, np.round(sheet_output, 4)).misconception == "example-numbers-only"
        assert _message(level4.q4_2_weights, np.round(sheet_weights, 4)).misconception == "example-numbers-only"
        with pytest.raises(WrongAnswer):
            level4.q4_2_output(sheet_output, hidden=True)


def test_copied_answers_whose_names_are_not_their_grade_ids_are_listed(tmp_path):
    """W_O_shape (grade_id q3_2_wo_shape) and attention_weights (q4_2_weights): the pools name the variable."""
    import nbformat

    from autograders.report.copying import copied
    from autograders.variants import record
    from autograders.variants.levels import POOLS

    def notebook(assignment, student, grade_id, code):
        nb = nbformat.v4.new_notebook()
        cell = nbformat.v4.new_code_cell(code)
        cell.metadata["nbgrader"] = {"grade_id": grade_id, "solution": True}
        nb.cells.append(cell)
        path = tmp_path / "autograded" / student / assignment / f"{assignment}.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(nb, str(path))

    blocks = {"ann": {"d_model": 256, "h": 4, "n": 7}, "ben": {"d_model": 768, "h": 16, "n": 5}}
    record.write(tmp_path / "variants", L3, [(s, "q3_2", 0, n) for s, n in blocks.items()])
    notebook(L3, "ann", "q3_2_wo_shape", "W_O_shape = (256, 256)\n")
    notebook(L3, "ben", "q3_2_wo_shape", "W_O_shape = (256, 256)\n")  # ann's
    ann, ben = POOLS[L4]["q4_2_weights"].entries[:2]
    record.write(tmp_path / "variants", L4, [(s, "q4_2", 0, e) for s, e in (("ann", ann), ("ben", ben))])
    e = [math.exp((ann["query"][0] * k[0] + ann["query"][1] * k[1]) / math.sqrt(2)) for k in ann["keys"]]
    copied_weights = [round(x / sum(e), 4) for x in e]
    notebook(L4, "ben", "q4_2_weights", f"attention_weights = np.array({copied_weights})\n")  # ann's
    found = {(row["student"], row["problem"]): row["whose"] for row in copied(tmp_path)}
    assert found == {("ben", "q3_2_wo_shape"): ["ann"], ("ben", "q4_2_weights"): ["ann"]}
