"""Every declared function answer (``FUNCTIONS`` of autograders/problems), tested from its declaration.

As tests/test_problems.py does for numbers: the notebook's solution (read from the source notebook, never copied
here) passes the visible check and the hidden one; each declared mistake written as a wrong implementation, run
through the check as a student's answer cell, is named with its declared message and tag, on the first case where
it is wrong (visible and, where the hidden test names mistakes, hidden), and its message shows no number worked out;
the notebook's test cell calls the declared check. A mistake declared as a predicate on the output has no implementation to run: its examples are the level's
(tests/test_checks_level4.py).
"""

import importlib
import re

import numpy as np
import pytest

from autograders.checks import functions
from autograders.checks.feedback import WrongAnswer
from autograders.problems import LEVELS
from autograders.problems.declare import text
from tests.checking import as_written, solution

FUNCTIONS = [(assignment, function) for assignment, module in LEVELS.items()
             for function in getattr(module, "FUNCTIONS", ())]
MISTAKES = [pytest.param(assignment, function, mistake, id=f"{function.id}-{mistake.key}")
            for assignment, function in FUNCTIONS for mistake in function.implementations]


def notebook_check(assignment, function):
    """The check the notebook's test cell calls for ``function`` (its checks module's, by the cell's import)."""
    source = solution(assignment, f"{function.id}_test")
    module = re.search(r"from autograders\.checks import (\w+) as _checks", source).group(1)
    return getattr(importlib.import_module(f"autograders.checks.{module}"), function.id)


@pytest.mark.parametrize("assignment, function", [pytest.param(a, f, id=f.id) for a, f in FUNCTIONS])
def test_the_notebooks_solution_passes_the_visible_and_the_hidden_check(assignment, function, capsys):
    right = as_written(solution(assignment, function.id), function.name)
    for hidden in (False, True):
        notebook_check(assignment, function)(right, hidden=hidden)
    out, err = capsys.readouterr()
    assert out.count("✔ Correct.") == 2 and err == "", (out, err)


@pytest.mark.parametrize("assignment, function", [pytest.param(a, f, id=f.id) for a, f in FUNCTIONS])
def test_the_test_cell_calls_the_declared_check_visibly_and_hidden(assignment, function):
    source = solution(assignment, f"{function.id}_test")
    assert f"_checks.{function.id}({function.name})" in source
    assert f"_checks.{function.id}({function.name}, hidden=True)" in source
    assert notebook_check(assignment, function).function is function


def first_wrong(function, wrong):
    """The first visible case (its view) where the implementation ``wrong`` does not give the right output."""
    for case in function.cases:
        c = function.view(case)
        with np.errstate(all="ignore"):
            if not function.same(np.asarray(wrong(*function.arguments(c)), float), function.answer(c)):
                return c
    raise AssertionError("right on every visible case: a mistake the check cannot name")


@pytest.mark.parametrize("assignment, function, mistake", MISTAKES)
def test_each_wrong_implementation_is_named_with_its_message_and_tag(assignment, function, mistake):
    wrong = as_written(str(mistake.wrong), function.name)  # the declared source, as a student's answer cell
    c = first_wrong(function, wrong)
    says = function.prefix.format(where=c.get("where", "")) + text(mistake.says, c)
    for hidden in (False, True):
        with pytest.raises(WrongAnswer) as raised:
            notebook_check(assignment, function)(wrong, hidden=hidden)
        if hidden and not function.hidden_names:
            continue
        assert str(raised.value) == says, (hidden, str(raised.value))
        assert raised.value.misconception == mistake.tag, (hidden, raised.value.misconception)
        assert not re.search(r"\d\.\d{3}", says), says  # never the expected (or the student's) numbers


@pytest.mark.parametrize("assignment, function", [pytest.param(a, f, id=f.id) for a, f in FUNCTIONS])
def test_the_check_is_the_engines_and_says_what_the_hidden_test_tries(assignment, function):
    check = notebook_check(assignment, function)
    assert check.__name__ == function.id and check.trials == function.trials and function.trials
    assert functions.check(function).__name__ == function.id
