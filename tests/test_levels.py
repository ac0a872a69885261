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
