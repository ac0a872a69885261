"""The workbook's labelled choices: right letters balanced, every misconception tag on the option it names.

Each option's text is read from the source notebook's problem cell ("- **A.** ..." or "- **A** — ..."),
the right letter from its solution cell, the tag from the check's own message for that letter. A tag
says which misconception the report counts: each tag declares the words an option showing that
misconception must hold (``option=`` of its declaration, autograders/problems): written per tag, not per
option, so a tag attached to the wrong option fails here.
"""

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from autograders.checks.feedback import WrongAnswer
from autograders.checks.forms import choice_form
from autograders.problems.misconception import OPTION_WORDS
from autograders.problems import LEVELS
from autograders.problems.engine import check

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"

# grade_id: (notebook, check): every declared labelled choice (autograders/problems)
CHOICES = {answer.id: (assignment, check(answer, assignment)) for assignment, module in LEVELS.items()
           for answer in module.ANSWERS if answer.kind == "choice"}

# tag: a pattern the text of an option carrying it must match (the misconception, in the option's words)
MARKERS = OPTION_WORDS  # tag: words an option carrying it must hold (its declaration's option=)


def _cells(notebook):
    return json.loads((NOTEBOOKS / f"{notebook}.ipynb").read_text())["cells"]


def _source(cell):
    return "".join(cell["source"])


def options(notebook, grade_id):
    """{letter: text} of the options listed in the markdown above the answer cell ``grade_id``."""
    cells = _cells(notebook)
    index = next(i for i, c in enumerate(cells) if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id)
    for cell in reversed(cells[:index]):
        items = re.findall(r"^\s*- \*\*([A-D])\.?\*\*\.?\s*(?:—\s*)?(.*?)(?=^\s*- \*\*[A-D]|\n\s*\n|\Z)",
                           _source(cell), re.M | re.S)
        found = {letter: " ".join(text.split()) for letter, text in items}
        if found:
            return found
        steps = dict(re.findall(r"\*\*\(([A-D])\)\*\* ([^*]+)", _source(cell)))  # 3.2: the steps of the pass
        if steps:
            return steps
    raise AssertionError(f"no options above {grade_id}")


def right_letter(notebook, grade_id):
    cell = next(c for c in _cells(notebook) if c["metadata"].get("nbgrader", {}).get("grade_id") == grade_id)
    (letter,) = re.findall(r'^\w+ = "([A-D])"$', _source(cell), re.M)
    return letter


def tag_for(check, letter):
    try:
        check(letter)
    except WrongAnswer as wrong:
        return wrong.misconception
    return None


def test_the_right_letters_are_balanced_over_the_workbook():
    letters = Counter(right_letter(notebook, gid) for gid, (notebook, _) in CHOICES.items())
    assert set(letters) == {"A", "B", "C", "D"}, letters
    assert max(letters.values()) - min(letters.values()) <= 1, letters


@pytest.mark.parametrize("grade_id", CHOICES)
def test_the_check_and_the_solution_agree_and_every_option_is_offered(grade_id, capsys):
    notebook, check = CHOICES[grade_id]
    _, labels = choice_form(check)
    offered = options(notebook, grade_id)
    assert sorted(offered) == sorted(labels), (offered, labels)
    right = right_letter(notebook, grade_id)
    check(right)
    check(right, hidden=True)
    assert capsys.readouterr().out.count("✔") == 2
    for letter in labels:
        if letter != right:
            with pytest.raises(WrongAnswer):
                check(letter, hidden=True)


@pytest.mark.parametrize("grade_id", CHOICES)
def test_each_tag_names_the_misconception_of_its_own_option(grade_id):
    notebook, check = CHOICES[grade_id]
    _, labels = choice_form(check)
    texts = options(notebook, grade_id)
    right = right_letter(notebook, grade_id)
    for letter in labels:
        if letter == right:
            continue
        tag = tag_for(check, letter)
        assert tag is not None, f"{grade_id} {letter}: a wrong option with no misconception tag"
        assert tag in MARKERS, f"{grade_id} {letter}: {tag} has no marker here"
        assert re.search(MARKERS[tag], texts[letter]), f"{grade_id} {letter} is tagged {tag}: {texts[letter]}"
    if grade_id != "q3_2_wrong_step":  # (3.2's options are the steps of a pass: the right one is the mistake)
        for tag, marker in MARKERS.items():  # no misconception's words in the right answer's text
            assert not re.search(marker, texts[right]), (grade_id, tag)


def test_the_markers_are_not_vacuous():
    """Each marker matches the option it is meant for and no option of the same question tagged otherwise
    (the right one included)."""
    for grade_id, (notebook, check) in CHOICES.items():
        texts = options(notebook, grade_id)
        for letter, text in texts.items():
            tag = tag_for(check, letter)
            if tag in MARKERS:
                others = [other for o, other in texts.items() if o != letter and tag_for(check, o) != tag]
                assert not any(re.search(MARKERS[tag], other) for other in others), (grade_id, letter, tag)
