"""The levels' pools of variants: many right answers, one set of numbers per problem, the fixed problems; where a
student's numbers come from; the prompt's locked cell.

Each entry's vetting, and the checks judging each student's own numbers (the right answer, each misconception's
message and tag, 2.3's winner at every token), are tested from the declarations in ``tests/test_problems.py``."""

import json

import numpy as np
import pytest

from autograders.variants import SHEET, VariantError
from autograders.student import numbers as current
from autograders.variants.levels import FIXED, POOLS, problems


def doc(assignment, **numbers):
    return {"student": "ann", "assignment": assignment, "generation": {p: 0 for p in numbers}, "numbers": numbers}


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
