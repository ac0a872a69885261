"""What a level is as a whole: it opens with its learning objectives, in a student's words."""

import re

import pytest

from tests.conftest import ids, level_notebooks, read

LEVELS = level_notebooks()


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_a_level_opens_with_two_to_four_objectives(path):
    cells = read(path).cells
    assert cells[0].source.startswith("# "), "the level's title comes first"
    objectives = cells[1]
    assert objectives.cell_type == "markdown" and objectives.get("id") == "objectives"
    assert objectives.source.startswith("**After this level you can:**")
    items = re.findall(r"^- (.+)$", objectives.source, re.M)
    assert 2 <= len(items) <= 4, items
    assert all(item[0].islower() and item.endswith((";", ".")) for item in items)  # one sentence, a student's words


SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)
PACKAGES = ("mha_core", "autograders")


def _package_sources():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    return {path: path.read_text() for package in PACKAGES for path in (root / package).rglob("*.py")}


def test_no_solution_ships_in_a_package_a_student_imports():
    """A value answer (a number, matrices, a choice) cannot refuse a library call the way a function
    answer does (autograders.checks.own_work): its solution must simply not be importable. No line of
    a solution that builds a value (20 characters or more, comments dropped) is in mha_core or
    autograders."""
    sources = _package_sources()
    leaked = []
    for path in level_notebooks():
        for cell in read(path).cells:
            if cell.cell_type != "code" or cell.source.lstrip().startswith("def "):
                continue
            for block in SOLUTION.findall(cell.source):
                for line in (line.split("#")[0].strip() for line in block.splitlines()):
                    if len(line) >= 20:
                        leaked += [f"{path.stem}: {line!r} in {p.name}" for p, text in sources.items() if line in text]
    assert not leaked, "\n".join(leaked)


def _offered(module):
    """Every value ``module`` offers a student without arguments: its constants and what its
    functions return when called with none."""
    import inspect

    for name in dir(module):
        obj = getattr(module, name)
        if inspect.isfunction(obj) or inspect.isclass(obj) or inspect.ismodule(obj):
            if inspect.isfunction(obj) and obj.__module__ == module.__name__:
                parameters = inspect.signature(obj).parameters.values()
                if all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
                    try:
                        yield f"{name}()", obj()
                    except Exception:  # noqa: BLE001 - a function that needs more is no free answer
                        pass
            continue
        yield name, obj


@pytest.mark.parametrize("check_name", ["q4_4_previous_token", "q4_4_average_query"])
def test_the_by_hand_module_offers_no_answer_to_the_problems_it_serves(check_name, capsys):
    """4.4's data lives in autograders.problems.by_hand, which students import: nothing it offers passes 4.4."""
    from autograders.checks import beyond
    from autograders.checks.feedback import WrongAnswer
    from autograders.problems import by_hand

    passing = []
    for name, value in _offered(by_hand):
        try:
            getattr(beyond, check_name)(value)
        except (WrongAnswer, Exception):  # noqa: BLE001 - refused, whatever the way
            continue
        passing.append(name)
    capsys.readouterr()
    assert not passing, f"autograders.problems.by_hand offers an answer to {check_name}: {passing}"
