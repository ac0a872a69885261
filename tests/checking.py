"""Helpers for the tests of the level checks (``tests/test_checks_level{N}.py``) and the runner
of a level notebook's graded cells in this process (no kernel)."""

import contextlib
import io
import linecache

import pytest

from autograders.checks.feedback import WrongAnswer
from tests.conftest import filled, is_test_cell, nbgrader_meta


def rejects(check, value, *phrases, hidden=False):
    """``check(value)`` raises WrongAnswer whose message holds every phrase; return the message."""
    with pytest.raises(WrongAnswer) as info:
        check(value, hidden=hidden)
    message = str(info.value)
    for phrase in phrases:
        assert phrase in message, message
    return message


def accepts(check, value, capsys):
    """``check(value)`` passes, visible and hidden, with a confirmation each and nothing on stderr."""
    for hidden in (False, True):
        check(value, hidden=hidden)
    out = capsys.readouterr()
    assert out.out.count("✔ Correct.") == 2 and out.err == ""


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
    for cell in filled(path).cells:  # as the editions run it: its numbers filled in
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


def as_written(source, name, cell="answer"):
    """The function ``name`` that ``source`` defines, run as a student's answer cell (the setup's ``np`` and ``mha``
    in its namespace, its lines where an explained shape error reads them)."""
    import numpy as np

    import mha_core as mha

    namespace = {"np": np, "mha": mha}
    exec(_compiled(source, cell), namespace)
    return namespace[name]


def solution(assignment, grade_id):
    """The source of the cell ``grade_id`` of the source notebook ``assignment`` (filled in, as every edition is):
    an answer cell's solution."""
    from tests.conftest import NOTEBOOKS

    return next(cell.source for cell in filled(NOTEBOOKS / f"{assignment}.ipynb").cells
                if nbgrader_meta(cell).get("grade_id") == grade_id)
