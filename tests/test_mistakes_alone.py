"""Every known mistake alone, fast: the notebook's nbgrader cells run in order in
this process (no kernel), with one answer cell replaced by the mistake.

This complements ``test_notebooks.py``, where nbgrader grades the mistakes in
shared submissions: here each one is judged alone, so a side effect of one
mistake on another problem's test cannot hide behind a cell that fails anyway.
"""

import pytest

from tests.conftest import ids, level_notebooks, mistakes_for

LEVELS = level_notebooks()
CASES = [
    pytest.param(path, mistake, id=f"{path.stem}-{index:02d}-{mistake.cell}")
    for path in LEVELS
    for index, mistake in enumerate(mistakes_for(path))
]


def messages(errors):
    """{test grade_id: its failure message, or None} of a run of the graded cells."""
    return {gid: None if wrong is None else str(wrong) for gid, wrong in errors.items()}


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_source_passes_every_test_cell(path, graded_cells):
    results = messages(graded_cells(path))
    assert results and not any(results.values()), results


@pytest.mark.parametrize("path, mistake", CASES)
def test_mistake_alone_fails_exactly_its_cells_and_names_itself(path, mistake, graded_cells):
    results = messages(graded_cells(path, (mistake.cell, mistake.code)))
    failed = {gid for gid, message in results.items() if message is not None}
    assert failed == set(mistake.fails), results
    assert any(mistake.says in results[gid] for gid in mistake.fails), results
