"""A source notebook names a problem's numbers (``{{d_k}}``) and every edition fills them in from the problem's
declaration (autograders/editions/placeholders.py): changing a problem's sheet numbers is an edit of its
declaration alone."""

import html
import re

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograders.editions import answer_key, editions
from autograders.editions.placeholders import PlaceholderError, fill, fill_text, unfilled
from autograders.problems import level2
from tests.conftest import NOTEBOOKS, all_notebooks, ids, level_notebooks, read

LEVEL2 = NOTEBOOKS / "level2_application.ipynb"


def _cells(text):
    return nbformat.reads(text, as_version=4)


@pytest.mark.parametrize("path", all_notebooks(), ids=ids(all_notebooks()))
def test_no_placeholder_is_left_in_any_edition(path):
    """The practice edition and the release's source (nbgrader's generate_assignment releases it as it is,
    but for the solutions and hidden tests) of every notebook hold no ``{{...}}``."""
    assert unfilled(_cells(editions.practice_text(path))) == []
    if path in level_notebooks():
        assert unfilled(_cells(editions.graded_text(path))) == []


def test_no_placeholder_is_left_in_the_answer_key():
    assert not re.search(r"\{\{[^{}]+\}\}", answer_key.build(NOTEBOOKS))


def test_the_source_names_2_2_s_numbers_and_filling_keeps_every_cell_s_place_and_metadata():
    source = read(LEVEL2)
    built = fill(source)
    named = {c.id for c in source.cells if unfilled(nbformat.from_dict({"cells": [c]}))}
    assert named >= {"problem-2-2", "q2_2_scaled_score", "q2_2_explain", "rubric-q2_2_explain", "solution-2-2"}
    assert [(c.id, c.cell_type, c.metadata) for c in built.cells] == [(c.id, c.cell_type, c.metadata) for c in source.cells]
    assert [c.source for c in built.cells if c.id not in named] == [c.source for c in source.cells if c.id not in named]


def test_a_placeholder_is_the_problem_s_number_or_arithmetic_on_numbers_with_a_format():
    names = {"d_k": 64, "dot": 40.0, "q1_1": {"h": 12}}
    assert fill_text("{{d_k}} and {{dot}}", names) == "64 and 40"  # a whole float written as one
    assert fill_text(r"$\frac{{{dot}}}{\sqrt{{{d_k}}}} = {{dot / sqrt(d_k):.1f}}$", names) == r"$\frac{40}{\sqrt{64}} = 5.0$"
    assert fill_text("{{dot / d_k}}, {{q1_1.h * 2}}, {{-d_k // 3}}", names) == "0.625, 24, -22"
    assert fill_text("{ d_k } {x} \\sqrt{d_k}", names) == "{ d_k } {x} \\sqrt{d_k}"  # TeX's braces are left alone


@pytest.mark.parametrize("text, says", [
    ("{{d_model}}", "no number named 'd_model'"),
    ("{{q9_9.d_k}}", "no number q9_9.d_k"),
    ("{{__import__('os')}}", "is not arithmetic"),
    ("{{d_k.real}}", "no number d_k.real"),
    ("{{d_k / 0}}", "division by zero"),
    ("{{d_k +}}", "not an expression"),
])
def test_a_placeholder_that_cannot_be_filled_stops_the_build_naming_it(text, says):
    with pytest.raises(PlaceholderError, match=re.escape(says)):
        fill_text(text, {"d_k": 64})


def test_a_bad_placeholder_names_its_notebook_cell_and_problem_and_a_left_one_is_a_leak():
    nb = new_notebook(cells=[new_markdown_cell("### Problem 2.2 — x"), new_code_cell("y = {{d_kk}}", id="q2_2_y")])
    with pytest.raises(PlaceholderError, match=r"tiny\.ipynb, cell 'q2_2_y' \(Problem 2\.2\): \{\{d_kk\}\}: no number"):
        fill(nb, "tiny.ipynb")
    assert editions.leaks(nb) == ["q2_2_y: {{d_kk}} unfilled"]
    assert fill(nbformat.from_dict({**nb, "cells": [nb.cells[0], new_code_cell("y = {{q2_2.d_k}}")]})).cells[1].source \
        == f"y = {level2.SHEET_2_2['d_k']}"


# --- changing 2.2's sheet numbers: one edit, every edition follows ------------------------------------------

NEW_2_2 = {"d_k": 36, "dot": 48.0, "d_model": 216}  # √36 = 6 = h = 216 / 36: option D's coincidence kept


def _problem_2_2(nb):
    """The text of Problem 2.2's cells (from its heading to 2.3's)."""
    text = "\n".join(cell.source for cell in nb.cells)
    return text[text.index("### Problem 2.2"):text.index("### Problem 2.3")]


def _key_2_2(key):
    """Problem 2.2's section of the answer key, its HTML unescaped, then each formula's TeX as ``$...$``."""
    part = next(part for part in key.split('<section class="problem">') if "Problem 2.2 — " in part)
    tex = " ".join(f"${t}$" for t in re.findall(r'<annotation encoding="application/x-tex">(.*?)</annotation>', part, re.S))
    return html.unescape(f"{part}\n{tex}")


@pytest.fixture
def new_sheet(monkeypatch):
    """2.2's declaration with other sheet numbers, for this test only (the declaration's file unchanged)."""
    old = dict(level2.SHEET_2_2)
    for name, value in NEW_2_2.items():
        monkeypatch.setitem(level2.SHEET_2_2, name, value)
    return old


def test_changing_2_2_s_sheet_numbers_in_its_declaration_changes_every_edition(new_sheet):
    """The practice edition, the release's source and the answer key show the new numbers and the new right answer
    (computed by the declaration, not by the notebook's placeholders), and none of the old ones."""
    numbers = level2.DOT_2_2.view(NEW_2_2)
    right, old_right = (level2.SCALED_SCORE.answer(n) for n in (numbers, level2.DOT_2_2.view(new_sheet)))
    assert right == 8.0 and old_right == 5.0
    key = answer_key.build(NOTEBOOKS)
    editions_2_2 = {"practice": _problem_2_2(editions.practice_notebook(read(LEVEL2))),
                    "release": _problem_2_2(editions.graded_notebook(read(LEVEL2))),
                    "answer key": _key_2_2(key)}
    for name, text in editions_2_2.items():
        assert "d_k = 36,$ $q k^{\\top} = 48).$" in text, name  # the statement
        assert "scaled_score = 48 / np.sqrt(36)" in text, name  # the solution (the release's source keeps it)
        assert "\\sqrt{36} = 6 = h" in text, name  # option D
        for old in ("40", "64", "512", "5.0", "0.625", "1.768", "0.125"):
            assert not re.search(rf"(?<![\d.]){re.escape(old)}(?![\d])", text), f"{name} still shows {old}"
    for name in ("practice", "answer key"):  # the worked solution: the new right answer, and what each slip gives
        text = editions_2_2[name]
        assert f"= {right:.1f} ." in text and f"{48 / 36:.3f}" in text and f"{48 / 216 ** 0.5:.3f}" in text, name
    assert "sheet={'d_k': 36, 'dot': 48.0, 'd_model': 216}" in editions_2_2["release"]  # its numbers cell
    assert f'Right value for the sheet&#x27;s numbers (d_k = 36, dot = 48.0, d_model = 216): <span class="value">{right}<' in key
    card = "\n".join(c.source for c in _cells(editions.practice_text(NOTEBOOKS / "self_test.ipynb")).cells)
    assert "48/\\sqrt{36} = 48/6 = 8.$" in card
