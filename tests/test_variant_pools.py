"""The levels' pools of variants: every entry vetted, and the checks judging each student's own numbers."""

import json
import math

import numpy as np
import pytest

from autograders.checks import level1, level2
from autograders.checks.feedback import WrongAnswer
from autograders.variants import SHEET, VariantError
from autograders.student import numbers as current
from autograders.variants.levels import FIXED, POOLS, problems
from autograders.problems.pools import MIN_ENTRIES, vet

ALL = [(assignment, answer, pool) for assignment, pools in POOLS.items() for answer, pool in pools.items()]


def doc(assignment, **numbers):
    return {"student": "ann", "assignment": assignment, "generation": {p: 0 for p in numbers}, "numbers": numbers}


@pytest.mark.parametrize("assignment, answer, pool", ALL, ids=[a for _, a, _ in ALL])
def test_every_entry_of_every_pool_passes_vetting(assignment, answer, pool):
    vet(pool)  # each entry: valid sizes, a finite answer, misconceptions apart from it and from each other
    assert len(pool.entries) >= MIN_ENTRIES
    assert pool.sheet not in pool.entries, "the sheet's numbers are the worked solution's: never a student's"


def test_each_problems_entries_give_many_right_answers():
    for assignment in POOLS:
        for problem, first in problems(assignment).items():
            pools = [p for p in POOLS[assignment].values() if p.problem == problem]
            answers = {json.dumps([np.asarray(p.answer(e), float).tolist() for p in pools]) for e in first.entries}
            if all("one-answer" in p.notes for p in pools):  # the point of the problem (3.1: the ratio is 1)
                assert len(answers) == 1
                wrong = {json.dumps({k: float(v) for k, v in p.mistakes(e).items()}) for p in pools for e in first.entries}
                assert len(wrong) >= 8, f"{problem}: its misconceptions' answers should be each student's own"
                continue
            assert len(answers) >= 12, f"{problem}: too few different right answers to tell copying"


def test_the_answers_of_one_problem_share_its_numbers():
    for assignment in POOLS:
        for problem, first in problems(assignment).items():
            for pool in POOLS[assignment].values():
                if pool.problem == problem:
                    assert pool.entries == first.entries and pool.sheet == first.sheet


def test_fixed_problems_are_not_varied():
    varied = {answer for pools in POOLS.values() for answer in pools}
    assert not varied & set(FIXED)


def test_fixed_problems_name_answer_cells_of_the_notebooks():
    import nbformat

    from tests.conftest import NOTEBOOKS

    ids = {cell.metadata.get("nbgrader", {}).get("grade_id") for path in NOTEBOOKS.glob("*.ipynb")
           for cell in nbformat.read(str(path), as_version=4).cells}
    assert set(FIXED) <= ids, sorted(set(FIXED) - ids)


def test_softmax_pools_have_no_near_ties():
    winners = set()
    for entry in POOLS["level2_application"]["q2_3_weights"].entries:
        low, middle, high = sorted(entry["scores"])
        assert high - middle >= 0.5 and middle - low >= 0.5  # the winner and the runner-up cannot flip at 4 decimals
        winners.add(entry["scores"].index(high) + 1)
    assert winners == {1, 2, 3}  # the winner is not always token 3, as on the sheet


# --- where the numbers come from -----------------------------------------------------------


def test_without_a_file_the_checks_use_the_sheets_numbers(tmp_path, monkeypatch):
    monkeypatch.setenv(current.DIR_ENV, str(tmp_path))
    pool = POOLS["level1_recognition"]["q1_1_d_k"]
    assert current.numbers("level1_recognition", pool) == {"d_model": 768, "h": 12}
    assert current.generation("level1_recognition", "q1_1") == SHEET


def test_a_students_file_gives_their_numbers_and_the_handed_ones_win(tmp_path, monkeypatch):
    monkeypatch.setenv(current.DIR_ENV, str(tmp_path))
    (tmp_path / "level1_recognition.json").write_text(json.dumps(doc("level1_recognition", q1_1={"d_model": 256, "h": 4})))
    pool = POOLS["level1_recognition"]["q1_1_d_k"]
    assert current.numbers("level1_recognition", pool) == {"d_model": 256, "h": 4}
    with current.handing(doc("level1_recognition", q1_1={"d_model": 512, "h": 16})):
        assert current.numbers("level1_recognition", pool) == {"d_model": 512, "h": 16}
        monkeypatch.setenv(current.HANDED_ENV, json.dumps(doc("level1_recognition", q1_1={"d_model": 128, "h": 2})))
        assert current.numbers("level1_recognition", pool) == {"d_model": 512, "h": 16}
    assert current.numbers("level1_recognition", pool) == {"d_model": 128, "h": 2}  # a kernel the grader started


def test_a_broken_file_is_an_error_naming_it(tmp_path, monkeypatch):
    monkeypatch.setenv(current.DIR_ENV, str(tmp_path))
    path = tmp_path / "level1_recognition.json"
    path.write_text("{not json")
    with pytest.raises(VariantError, match="level1_recognition.json"):
        current.numbers("level1_recognition", POOLS["level1_recognition"]["q1_1_d_k"])
    path.write_text(json.dumps(doc("level1_recognition", q1_1={"d_model": 256})))
    with pytest.raises(VariantError, match="expected \\['d_model', 'h'\\]"):
        current.numbers("level1_recognition", POOLS["level1_recognition"]["q1_1_d_k"])


# --- the checks on several variants ----------------------------------------------------------


def _message(check, value):
    with pytest.raises(WrongAnswer) as info:
        check(value)
    return info.value


@pytest.mark.parametrize("d_model, h", [(256, 8), (1536, 6), (192, 8)])
def test_level1_judges_each_students_own_d_k(d_model, h, capsys):
    with current.handing(doc("level1_recognition", q1_1={"d_model": d_model, "h": h})):
        level1.q1_1_d_k(d_model // h)
        level1.q1_1_d_k(d_model // h, hidden=True)
        assert f"d_k = {d_model}/{h}" in capsys.readouterr().out
        error = _message(level1.q1_1_d_k, d_model * h)
        assert error.misconception == "multiplied-by-h"
        assert _message(level1.q1_1_d_k, h / d_model).misconception == "roles-swapped"
        assert _message(level1.q1_1_d_k, d_model).misconception == "head-full-width"
        assert _message(level1.q1_1_d_k, 64).misconception == "example-numbers-only"  # the sheet's answer
        with pytest.raises(WrongAnswer):
            level1.q1_1_d_k(64, hidden=True)


@pytest.mark.parametrize("d_model, h, n", [(256, 4, 3), (640, 8, 7)])
def test_level1_judges_each_students_own_output_shape(d_model, h, n, capsys):
    with current.handing(doc("level1_recognition", q1_2={"d_model": d_model, "h": h, "n": n})):
        level1.q1_2_output_shape((n, d_model))
        level1.q1_2_output_shape((n, d_model), hidden=True)
        assert _message(level1.q1_2_output_shape, (n, d_model // h)).misconception == "one-head-for-all"
        assert _message(level1.q1_2_output_shape, (d_model, n)).misconception == "transposed"
        assert _message(level1.q1_2_output_shape, (h, n, d_model // h)).misconception == "heads-summed"
        assert _message(level1.q1_2_output_shape, (6, 768)).misconception == "example-numbers-only"


@pytest.mark.parametrize("d_model, h, n", [(256, 4, 5), (768, 16, 9)])
def test_level2_shapes_for_each_students_own_block(d_model, h, n, capsys):
    d_k = d_model // h
    with current.handing(doc("level2_application", q2_1={"d_model": d_model, "h": h, "n": n})):
        for hidden in (False, True):
            level2.q2_1_wq_shape((d_model, d_k), hidden=hidden)
            level2.q2_1_q_shape((n, d_k), hidden=hidden)
            level2.q2_1_scores_shape((n, n), hidden=hidden)
            level2.q2_1_head_shape((n, d_k), hidden=hidden)
        assert f"a {d_model}-wide token to {d_k} numbers" in capsys.readouterr().out
        assert _message(level2.q2_1_wq_shape, (d_k, d_model)).misconception == "transposed"
        assert _message(level2.q2_1_scores_shape, (d_k, d_k)).misconception == "qt-k"
        assert _message(level2.q2_1_head_shape, (n, n)).misconception == "matrix-confused"
        with pytest.raises(WrongAnswer):
            level2.q2_1_wq_shape((512, 64), hidden=True)  # the sheet's


@pytest.mark.parametrize("d_k, dot", [(16, 24.0), (144, 72.0)])
def test_level2_scaled_score_for_each_students_own_numbers(d_k, dot, capsys):
    with current.handing(doc("level2_application", q2_2={"d_k": d_k, "dot": dot, "d_model": 8 * d_k})):
        level2.q2_2_scaled_score(dot / math.sqrt(d_k))
        level2.q2_2_scaled_score(dot / math.sqrt(d_k), hidden=True)
        assert _message(level2.q2_2_scaled_score, dot / d_k).misconception == "scaled-by-d-k"
        assert _message(level2.q2_2_scaled_score, dot).misconception == "no-scaling"
        assert _message(level2.q2_2_scaled_score, dot / math.sqrt(8 * d_k)).misconception == "scaled-with-d-model"
        assert _message(level2.q2_2_scaled_score, 5.0).misconception == "example-numbers-only"


@pytest.mark.parametrize("scores", [(3.0, 2.0, 3.5), (5.5, 3.0, 7.5)])
def test_level2_softmax_answers_for_each_students_own_scores(scores, capsys):
    e = [math.exp(s) for s in scores]
    weights = [x / sum(e) for x in e]
    with current.handing(doc("level2_application", q2_3={"scores": list(scores)})):
        for hidden in (False, True):
            level2.q2_3_weights(np.round(weights, 4), hidden=hidden)
            level2.q2_3_winner(3, hidden=hidden)
            level2.q2_3_ratio(weights[2] / weights[0], hidden=hidden)
        assert _message(level2.q2_3_weights, np.array(scores) / sum(scores)).misconception == "softmax-linear"
        assert _message(level2.q2_3_weights, [0.2595, 0.0351, 0.7054]).misconception == "example-numbers-only"
        assert _message(level2.q2_3_ratio, scores[2] - scores[0]).misconception == "ratio-misread"
        assert _message(level2.q2_3_winner, 2).misconception == "counted-from-0"
        with pytest.raises(WrongAnswer):
            level2.q2_3_ratio(math.e, hidden=True)  # the sheet's ratio


# --- the prompt's locked cell ------------------------------------------------------------------


def test_the_prompt_shows_the_sheets_numbers_as_such_and_a_students_as_theirs(tmp_path, monkeypatch, capsys):
    from autograders import variants

    monkeypatch.setenv(current.DIR_ENV, str(tmp_path))
    variants.show("level1_recognition", "q1_1")
    assert capsys.readouterr().out == "Your numbers (the sheet's: outside a course everybody has these): d_model = 768, h = 12.\n"
    with current.handing(doc("level2_application", q2_3={"scores": [3.5, 2.0, 5.0]})):
        variants.show("level2_application", "q2_3")
    assert capsys.readouterr().out.startswith("Your numbers: the scaled scores (s_1, s_2, s_3) = (3.5, 2, 5).")
    with pytest.raises(ValueError, match="expected one of q1_1, q1_2"):
        variants.show("level1_recognition", "q1_3")


def test_each_varied_problem_has_its_locked_numbers_cell_under_its_statement():
    import nbformat

    from tests.conftest import NOTEBOOKS

    for assignment in POOLS:
        nb = nbformat.read(str(NOTEBOOKS / f"{assignment}.ipynb"), as_version=4)
        ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
        for problem in problems(assignment):
            index = ids.index(f"{problem}_numbers")
            cell = nb.cells[index]
            assert cell.metadata["nbgrader"] == {"grade": False, "grade_id": f"{problem}_numbers", "locked": True,
                                                 "schema_version": 3, "solution": False, "task": False}
            assert f'variants.show("{assignment}", "{problem}")' in cell.source
            label = problem[1:].replace("_", ".")
            assert nb.cells[index - 1].source.startswith(f"### Problem {label}"), "just under the statement"


@pytest.mark.parametrize("d_model, h, n_q, n_k", [(96, 4, 3, 7), (192, 8, 5, 10)])
def test_level5_cross_attention_shapes_for_each_students_own_numbers(d_model, h, n_q, n_k, capsys):
    from autograders.checks import level5

    with current.handing(doc("level5_mastery", q5_3={"d_model": d_model, "h": h, "n_q": n_q, "n_k": n_k})):
        for hidden in (False, True):
            level5.q5_3_score_shape((n_q, n_k), hidden=hidden)
            level5.q5_3_output_shape((n_q, d_model), hidden=hidden)
        assert _message(level5.q5_3_score_shape, (n_k, n_q)).misconception == "transposed"
        assert _message(level5.q5_3_score_shape, (n_k, n_k)).misconception == "cross-attention-square"
        assert _message(level5.q5_3_output_shape, (n_k, d_model)).misconception == "cross-attention-square"
        assert _message(level5.q5_3_output_shape, (n_q, d_model // h)).misconception == "one-head-for-all"
        assert _message(level5.q5_3_score_shape, (4, 6)).misconception == "example-numbers-only"
        assert _message(level5.q5_3_output_shape, (4, 64)).misconception == "example-numbers-only"


def test_a_kernel_importing_the_checks_vets_no_pool():
    """2.3's pool is vetted when first read (the grader deciding numbers, the tests), not by ``import``: a student's
    kernel reads its numbers from its document, and a check judging 2.3 reads no entry."""
    import subprocess
    import sys

    code = ("from autograders.checks import level2\n"
            "from autograders.student import numbers as current\n"
            "from autograders.variants.levels import POOLS\n"
            "doc = {'student': 'ann', 'assignment': 'level2_application', 'generation': {'q2_3': 0},\n"
            "       'numbers': {'q2_3': {'scores': [1.0, 3.0, 2.0]}}}\n"
            "with current.handing(doc):\n"
            "    level2.q2_3_winner(2)  # token 2 has the largest of these scores\n"
            "print('entries' in vars(level2.problems.SCORES_2_3.entries))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("✔ Correct.") and out.split()[-1] == "False", out
