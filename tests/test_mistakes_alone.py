"""Every known mistake alone, fast: the notebook's nbgrader cells run in order in
this process (no kernel), with one answer cell replaced by the mistake.

This complements ``test_notebooks.py``, where nbgrader grades the mistakes in
shared submissions: here each one is judged alone, so a side effect of one
mistake on another problem's test cannot hide behind a cell that fails anyway.
"""

import contextlib
import io
import linecache

import pytest

from autograders.checks.feedback import WrongAnswer
from tests.conftest import ids, is_test_cell, level_notebooks, mistakes_for, nbgrader_meta, read

LEVELS = level_notebooks()
CASES = [
    pytest.param(path, mistake, id=f"{path.stem}-{index:02d}-{mistake.cell}")
    for path in LEVELS
    for index, mistake in enumerate(mistakes_for(path))
]


def _compiled(source, name):
    """``source`` compiled as IPython compiles a cell: under a file name of its own, its lines in
    linecache (a check that explains a shape error reads the student's line, as in a kernel)."""
    filename = f"<cell {name}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    return compile(source, filename, "exec")


def graded_cell_errors(path, replace=None):
    """Run the setup, data, answer and test cells of ``path``, the answer cell
    ``replace[0]`` holding ``replace[1]``; return {test grade_id: the WrongAnswer it raised, or None}."""
    namespace, results = {}, {}
    for cell in read(path).cells:
        gid = nbgrader_meta(cell).get("grade_id")
        if cell.cell_type != "code" or gid is None:
            continue
        source = replace[1] if replace and gid == replace[0] else cell.source
        if not is_test_cell(cell):
            exec(_compiled(source, gid), namespace)
            continue
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                exec(_compiled(source, gid), namespace)
            results[gid] = None
        except WrongAnswer as wrong:
            results[gid] = wrong
    return results


def run_graded_cells(path, replace=None):
    """{test grade_id: its failure message, or None} of :func:`graded_cell_errors`."""
    return {gid: None if wrong is None else str(wrong) for gid, wrong in graded_cell_errors(path, replace).items()}


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_source_passes_every_test_cell(path):
    results = run_graded_cells(path)
    assert results and not any(results.values()), results


@pytest.mark.parametrize("path, mistake", CASES)
def test_mistake_alone_fails_exactly_its_cells_and_names_itself(path, mistake):
    results = run_graded_cells(path, (mistake.cell, mistake.code))
    failed = {gid for gid, message in results.items() if message is not None}
    assert failed == set(mistake.fails), results
    assert any(mistake.says in results[gid] for gid in mistake.fails), results
