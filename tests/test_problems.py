"""Every declared answer (autograders/problems), tested from its declaration.

For each answer and several of its pool's entries (not only the sheet's): the right answer, written in
each form a student may use, passes the visible check and the hidden one (whose recomputation is the
declaration's own, independent of the right answer it declares: they must agree), and the confirmation is
the declared one at those numbers; each misconception's wrong answer at those numbers is rejected, visible
and hidden, and the visible message is the one declared, with the declared tag (2.3's answers at every order
of their scores); a wrong answer of the sheet's numbers, given for other numbers, names no misconception the
student did not make. Then the notebooks and the declarations agree: each declared answer
has its answer cell and its test cell, which calls the declared check visibly and hidden; each numbers
cell shows a declared pool's numbers, and each data cell hands the student their own.
"""

import json
import re
from fractions import Fraction

import nbformat
import numpy as np
import pytest

from autograders.checks.feedback import WrongAnswer
from autograders.problems import LEVELS
from autograders.problems.declare import text
from autograders.problems.level2 import ranked
from autograders.problems.engine import CONVERT, check, pool, recognise
from autograders.student import numbers as current
from autograders.student.feedback import sentence
from autograders.variants import prompt
from tests.conftest import NOTEBOOKS, is_test_cell

ANSWERS = [(assignment, answer) for assignment, module in LEVELS.items() for answer in module.ANSWERS]


def entries(answer, count=3):
    """The sheet's numbers and ``count`` entries spread over the pool."""
    found = answer.numbers.entries
    picked = [found[i * (len(found) - 1) // max(1, count - 1)] for i in range(count)] if found else []
    return [answer.numbers.sheet] + picked


def handed(assignment, answer, entry):
    numbers = {answer.numbers.problem: entry} if answer.numbers.entries else {}
    return current.handing(json.loads(json.dumps({"student": "ann", "assignment": assignment,
                                                  "generation": {p: 0 for p in numbers}, "numbers": numbers})))


def near(answer, right):
    """``right`` rounded to as many decimals as the tolerance allows (the precision a prompt states), and off
    by almost the tolerance both ways (a sum or a ratio of rounded terms)."""
    tol = answer.tolerance
    if not tol or answer.kind not in ("number", "vector"):
        return []
    a = np.asarray(right, float)
    decimals = next(d for d in range(12) if 0.5 * 10**-d <= tol)
    return [np.round(a, decimals), a + 0.9 * tol, a - 0.9 * tol]


def forms(answer, right):
    """``right`` in the forms a student may write it."""
    if answer.kind == "choice":
        return [right, right.lower(), f" {right} "]
    if answer.kind in ("shape", "head"):
        return [tuple(right), list(right), np.array(right), tuple(np.int64(d) for d in right),
                tuple(float(d) for d in right), np.zeros(right).shape]
    if answer.kind == "vector":
        a = np.asarray(right, float)
        return [a, a.tolist(), tuple(a.tolist()), a[None, :], a[:, None], np.round(a, 4).tolist(), *near(answer, a),
                [Fraction(x).limit_denominator(10**6) for x in a]]
    x = float(right)
    found = [right, x, np.float64(x), np.array(x), np.array([x]), Fraction(x).limit_denominator(10**6)]
    found += [float(v) for v in near(answer, x)]
    if x == int(x):
        found += [int(x), np.int64(int(x)), np.int32(int(x))]
    return found


CASES = [pytest.param(assignment, answer, index, id=f"{answer.id}-{index}")
         for assignment, answer in ANSWERS for index in range(len(entries(answer)))]


def passes_in_every_form(assignment, answer, entry, capsys):
    """The right answer at ``entry``, in each form, passes visible and hidden, confirmed as declared."""
    checked = check(answer, assignment)
    n = answer.numbers.view(entry)
    right = answer.answer(n)
    for value in forms(answer, right):  # the tolerance of the visible check is the hidden one's
        for hidden in (False, True):
            with handed(assignment, answer, entry):
                checked(value, hidden=hidden)
            out, err = capsys.readouterr()
            assert out.startswith("✔ Correct.") and out.count("\n") == 1 and err == "", (value, hidden, out, err)
            said = answer.hidden_right if hidden and answer.hidden_right is not None else answer.right
            converted = answer.convert(value, n) if answer.convert else CONVERT[answer.kind](answer, value, n)
            assert out == f"✔ Correct. {sentence(text(said, n, value=converted))}\n", (value, hidden, out)


@pytest.mark.parametrize("assignment, answer, index", CASES)
def test_the_right_answer_in_every_form_passes_the_visible_and_the_hidden_check(assignment, answer, index, capsys):
    passes_in_every_form(assignment, answer, entries(answer)[index], capsys)


@pytest.mark.parametrize("assignment, answer, index", CASES)
def test_each_misconception_is_rejected_with_its_own_message_and_tag(assignment, answer, index):
    rejects_each_misconception(assignment, answer, entries(answer)[index])


def rejects_each_misconception(assignment, answer, entry):
    """Each misconception's wrong answer at ``entry`` fails visible and hidden; the visible message and tag are its own."""
    checked = check(answer, assignment)
    named = answer.mistakes_of(entry)
    assert named or not answer.mistakes, f"{answer.id}: no misconception applies to {entry}"
    for mistake, wrong in named:
        value = tuple(wrong) if answer.kind == "shape" else wrong
        with handed(assignment, answer, entry), pytest.raises(WrongAnswer) as visible:
            checked(value)
        n = answer.numbers.view(entry)
        converted = value if answer.kind != "vector" else np.asarray(value, float)
        says = text(mistake.says, n, value=converted)
        assert says in str(visible.value), (mistake.key, str(visible.value))
        assert visible.value.misconception == mistake.tag, (mistake.key, visible.value.misconception)
        with handed(assignment, answer, entry), pytest.raises(WrongAnswer):
            checked(value, hidden=True)


ORDERS = [pytest.param(assignment, answer, entry, id=f"{answer.id}-{''.join(map(str, order))}")
          for assignment, answer in ANSWERS if answer.numbers.problem == "q2_3" and answer.numbers.entries
          for order, entry in {ranked(e["scores"]): e for e in reversed(answer.numbers.entries)}.items()]


@pytest.mark.parametrize("assignment, answer, entry", ORDERS)
def test_2_3_judges_alike_whichever_token_wins(assignment, answer, entry, capsys):
    """The first entry of each order of the scores (winner, runner-up, last): the winner is not always token 3."""
    passes_in_every_form(assignment, answer, entry, capsys)
    rejects_each_misconception(assignment, answer, entry)


def test_2_3_pools_put_the_winner_at_every_token():
    for assignment, answer in ANSWERS:
        if answer.numbers.problem == "q2_3" and answer.numbers.entries:
            assert {ranked(e["scores"])[0] for e in answer.numbers.entries} == {1, 2, 3}, answer.id


@pytest.mark.parametrize("assignment, answer", [pytest.param(a, x, id=x.id) for a, x in ANSWERS
                                                if x.numbers.entries and x.kind != "choice"])
def test_a_wrong_answer_of_the_sheets_numbers_names_nothing_at_other_numbers(assignment, answer):
    """At each tried entry, a misconception's answer at the sheet's numbers that no misconception (nor the right
    answer) gives there is named by no misconception: the fallback's tag, or a shape's length told."""
    told = {None, answer.fallback_tag, "wrong-kind", (answer.wrong_ndim or ("", None))[1]}
    for entry in entries(answer)[1:]:
        n = answer.numbers.view(entry)
        given_here = [answer.answer(n)] + [wrong for _, wrong in answer.mistakes_of(entry)]
        for mistake, wrong in answer.mistakes_of(answer.numbers.sheet):
            if any(np.shape(w) == np.shape(wrong) and np.allclose(np.asarray(w, float), np.asarray(wrong, float),
                                                                  atol=2 * answer.tolerance) for w in given_here):
                continue
            value = tuple(wrong) if answer.kind == "shape" else wrong
            with handed(assignment, answer, entry), pytest.raises(WrongAnswer) as visible:
                check(answer, assignment)(value)
            assert visible.value.misconception in told, (mistake.key, entry, str(visible.value))


@pytest.mark.parametrize("assignment, answer", [pytest.param(a, x, id=x.id) for a, x in ANSWERS if x.numbers.entries])
def test_every_entry_of_its_pool_is_vetted_and_sheet_free(assignment, answer):
    from autograders.problems.pools import MIN_ENTRIES, vet

    vet(pool(answer))
    assert len(answer.numbers.entries) >= MIN_ENTRIES and answer.numbers.sheet not in answer.numbers.entries


# --- the notebooks and the declarations agree ---------------------------------------------------------------


def _cells(assignment):
    return {cell.metadata.get("nbgrader", {}).get("grade_id"): cell
            for cell in nbformat.read(NOTEBOOKS / f"{assignment}.ipynb", as_version=4).cells}


@pytest.mark.parametrize("assignment, answer", [pytest.param(a, x, id=x.id) for a, x in ANSWERS])
def test_each_declared_answer_has_its_answer_and_test_cells_calling_its_check(assignment, answer):
    cells = _cells(assignment)
    assert answer.id in cells, f"{assignment}: no answer cell {answer.id}"
    assert f"{answer.variable} = None" in cells[answer.id].source, "the placeholder names the declared variable"
    source = cells[f"{answer.id}_test"].source
    assert f"_checks.{answer.id}({answer.variable})" in source
    assert f"_checks.{answer.id}({answer.variable}, hidden=True)" in source


@pytest.mark.parametrize("assignment", LEVELS)
def test_each_test_cell_calls_a_check_its_module_has(assignment):
    import importlib
    import re

    for grade_id, cell in _cells(assignment).items():
        if not is_test_cell(cell):
            continue
        modules = dict(re.findall(r"from autograders\.checks import (\w+) as (\w+)", cell.source))
        calls = re.findall(r"(\w+)\.(q\d+_\d+_\w+)\(", cell.source)
        assert calls, grade_id
        for alias, name in calls:
            module = importlib.import_module(f"autograders.checks.{[m for m, a in modules.items() if a == alias][0]}")
            assert callable(getattr(module, name, None)), f"{grade_id} calls {alias}.{name}: not a check"


@pytest.mark.parametrize("assignment", LEVELS)
def test_each_numbers_cell_shows_a_declared_pools_numbers(assignment):
    problems = {a.numbers.problem: a.numbers for a in LEVELS[assignment].ANSWERS if a.numbers.entries}
    shown = {grade_id.removesuffix("_numbers"): cell for grade_id, cell in _cells(assignment).items()
             if grade_id and grade_id.endswith("_numbers")}
    assert set(shown) == set(problems)
    for problem, numbers in problems.items():
        assert f'variants.show("{assignment}", "{problem}")' in shown[problem].source
        entry = numbers.entries[-1]
        document = {"student": "ann", "assignment": assignment, "generation": {problem: 0},
                    "numbers": {problem: json.loads(json.dumps(entry))}}
        with current.handing(document):
            line = prompt.text(assignment, problem)
        for name, value in entry.items():
            assert f"{numbers.symbols.get(name, name)} = {prompt.current._show(value)}" in line, (name, line)


def test_each_data_cell_hands_the_student_their_own_arrays():
    """A data cell's ``variants.given(...)`` (4.2's vectors) gives the numbers of the student's entry."""
    calls = [(assignment, problem, re.findall(r'"(\w+)"', names)) for assignment in LEVELS
             for cell in _cells(assignment).values()
             for problem, names in re.findall(rf'variants\.given\("{assignment}", "(\w+)",([^)]*)\)', cell.source)]
    assert calls, "no data cell calls variants.given"
    for assignment, problem, names in calls:
        numbers = {a.numbers.problem: a.numbers for a in LEVELS[assignment].ANSWERS if a.numbers.entries}
        entry = numbers[problem].entries[-1]
        document = {"student": "ann", "assignment": assignment, "generation": {problem: 0},
                    "numbers": {problem: json.loads(json.dumps(entry))}}
        with current.handing(document):
            arrays = prompt.given(assignment, problem, *names)
        assert [a.tolist() for a in arrays] == [np.asarray(entry[name], float).tolist() for name in names], problem


# --- what every answer of a kind is told: a wrong kind, an unknown wrong answer, a hidden failure -------------

WRONG_KINDS = {  # kind: [(a value of the wrong kind, what the message says it should be)]
    "number": [("1.5", "should be a single number"), ([1, 2], "should be a single number"),
               (True, "should be a single number"), (float("nan"), "should be a finite number")],
    "int": [("3", "should be a single number"), (2.5, "should be a whole number")],
    "shape": [("(10, 64)", "should be a shape"), (512, "should be a shape"), ((10.5, 64), "not a whole number")],
    "vector": [("0.1, 0.2", "should be an array of numbers"), ([[1.0, 2.0, 3.0]] * 2, "should have shape"),
               ([float("nan")], "should have shape")],
    "choice": [(2, "should be one of"), ("E", "should be one of"), (["A"], "should be one of")],
    "head": [("(1, 2)", "should be a whole number pair"), (512, "should be a whole number pair"),
             ((1.5, 2), "should be a whole number pair"), ((1, 2, 1), "should be a whole number pair")],
}
KINDS = [pytest.param(assignment, answer, value, says, id=f"{answer.id}-{value!r}")
         for assignment, answer in ANSWERS for value, says in WRONG_KINDS[answer.kind]]


@pytest.mark.parametrize("assignment, answer, value, says", KINDS)
def test_a_value_of_the_wrong_kind_is_told_what_it_should_be(assignment, answer, value, says):
    for hidden in (False, True):
        with handed(assignment, answer, answer.numbers.sheet), pytest.raises(WrongAnswer) as told:
            check(answer, assignment)(value, hidden=hidden)
        assert str(told.value).startswith(f"`{answer.variable}` should") and says in str(told.value), str(told.value)
        assert told.value.misconception == "wrong-kind"


@pytest.mark.parametrize("assignment, answer", [pytest.param(a, x, id=x.id) for a, x in ANSWERS])
def test_no_answer_yet_is_told_so(assignment, answer):
    with handed(assignment, answer, answer.numbers.sheet), pytest.raises(WrongAnswer, match="no answer yet") as told:
        check(answer, assignment)(None)
    assert told.value.misconception == "no-answer"


def unknown(answer, right):
    """A wrong answer no declared misconception gives (nor a hand-written diagnosis, for these numbers)."""
    if answer.kind == "choice":
        return None
    if answer.kind == "shape":
        return tuple(d + 97 for d in right)
    if answer.kind == "head":  # another head of the model, which no misconception names
        from autograders.problems.beyond import _model

        return next(hd for hd in _model().heads if hd != right and recognise(answer, hd, {}) is None)
    return np.asarray(right, float) * 3.7 + 11 if answer.kind == "vector" else round(float(right) * 3.7 + 11)


@pytest.mark.parametrize("assignment, answer, index", [c for c in CASES if c.values[1].kind != "choice"])
def test_an_unknown_wrong_answer_gets_the_declared_hint_and_the_hidden_check_keeps_the_answer(
        assignment, answer, index):
    entry = entries(answer)[index]
    n = answer.numbers.view(entry)
    right, value = answer.answer(n), unknown(answer, answer.answer(n))
    with handed(assignment, answer, entry), pytest.raises(WrongAnswer) as told:
        check(answer, assignment)(value)
    if answer.judge is None and answer.fallback:
        assert str(told.value) == text(answer.fallback, n, value=value, name=answer.variable)
        assert told.value.misconception == answer.fallback_tag
    with handed(assignment, answer, entry), pytest.raises(WrongAnswer) as hidden:
        check(answer, assignment)(value, hidden=True)
    if answer.hidden_says is not None:
        assert str(hidden.value) == text(answer.hidden_says, n, value=value, name=answer.variable)
        shown = [str(tuple(right))] if answer.kind == "shape" else [f"{x:g}" for x in np.ravel(right) if x not in (0, 1)]
        assert not any(s in str(hidden.value) for s in shown), (shown, str(hidden.value))


@pytest.mark.parametrize("assignment, answer", [pytest.param(a, x, id=x.id) for a, x in ANSWERS if x.kind == "choice"])
def test_a_wrong_choice_in_the_hidden_check_keeps_the_right_letter(assignment, answer):
    right = answer.answer(answer.numbers.view(answer.numbers.sheet))
    for letter in set(answer.options) - {right}:
        with handed(assignment, answer, answer.numbers.sheet), pytest.raises(WrongAnswer) as hidden:
            check(answer, assignment)(letter, hidden=True)
        assert f'"{right}"' not in str(hidden.value) and f"'{right}'" not in str(hidden.value), str(hidden.value)


@pytest.mark.parametrize("assignment, answer", [pytest.param(a, x, id=x.id) for a, x in ANSWERS if x.kind == "shape"])
def test_a_shape_with_a_dimension_too_many_is_told_its_length(assignment, answer):
    right = tuple(answer.answer(answer.numbers.view(answer.numbers.sheet)))
    with handed(assignment, answer, answer.numbers.sheet), pytest.raises(WrongAnswer) as told:
        check(answer, assignment)(right + (1,))
    message = str(told.value)
    assert f"should have {len(right)} numbers" in message or f"should be a {len(right)}-D shape" in message, message
    declared = answer.wrong_ndim[1] if answer.wrong_ndim and not answer.ndim else "wrong-kind"
    assert told.value.misconception == declared
    with handed(assignment, answer, answer.numbers.sheet), pytest.raises(WrongAnswer):
        check(answer, assignment)(right + (1,), hidden=True)
