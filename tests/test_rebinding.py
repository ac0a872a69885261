"""A scratch cell of the student's costs nothing: test cells depend on no name a student can rebind.

A test cell reaches its checks through a name it binds itself (``from autograders.checks
import level1 as _checks``, its first line), so a student's ``check = head_dim(8, 2) == 4``
in a cell of their own changes nothing. Checked here without a kernel, in every edition built
from the sources (the source notebooks: visible and hidden tests; the graded edition; the
practice edition), for each name of :func:`tests.corpus.names.rebindable` alone; the corpus
grades scratch cells with nbgrader (``tests/test_corpus.py``, the ``scratch-*`` students).
"""

import contextlib
import functools
import io

import pytest

from autograders.editions import editions
from tests.conftest import filled, ids, level_notebooks
from tests.corpus import names

LEVELS = level_notebooks()
EDITIONS = {
    "source": lambda nb: nb,  # as it runs: its numbers filled in (conftest.filled)
    "graded": editions.graded_notebook,
    "practice": editions.practice_notebook,
}


def _run(nb, scratch=""):
    """Run ``nb``'s code cells with nbgrader metadata in order (no kernel), ``scratch`` run as a
    student's own cell after the setup cell and again right before each test cell; return
    {test grade_id: None, or what it raised}."""
    namespace, results = {}, {}
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type != "code" or gid is None:
            continue
        if not names.is_test(cell):
            exec(cell.source, namespace)  # noqa: S102 (the workbook's own cells)
            if gid == "setup" and scratch:
                exec(scratch, namespace)  # noqa: S102
            continue
        if scratch:
            exec(scratch, namespace)  # noqa: S102
        results[gid] = _test(cell, namespace)
    return results


def _test(cell, namespace):
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            exec(cell.source, namespace)  # noqa: S102
        return None
    except Exception as error:  # noqa: BLE001 (any failure is a lost point; WrongAnswer included)
        return f"{type(error).__name__}: {error}"


@functools.lru_cache(maxsize=None)
def _answered(path):
    """(graded edition, the namespace after its setup, data and answer cells): the answers once per level."""
    nb = editions.graded_notebook(filled(path))
    namespace = {}
    for cell in nb.cells:
        if cell.cell_type == "code" and "nbgrader" in cell.metadata and not names.is_test(cell):
            exec(cell.source, namespace)  # noqa: S102
    return nb, namespace


@pytest.mark.parametrize("edition", sorted(EDITIONS))
@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_test_cells_read_no_name_but_their_answers(path, edition):
    """Each test cell binds every name it reads before reading it, apart from the answers
    (builtins count: a student's ``print = ...`` would shadow them)."""
    nb = EDITIONS[edition](filled(path))
    answers = names.answers(nb)
    tests = [c for c in nb.cells if names.is_test(c)]
    assert tests
    for cell in tests:
        assert names.free(cell.source) - answers == set(), cell.metadata.nbgrader.grade_id
        assert names.free(cell.source) & answers, f"{cell.metadata.nbgrader.grade_id} checks no answer"


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_the_enumeration_covers_the_names_test_cells_use(path):
    nb = filled(path)
    rebound = set(names.rebindable(nb))
    assert {"check", "print", "display", "mha_core", "_checks"} <= rebound
    used = set().union(*[names.loaded(c.source) for c in nb.cells if names.is_test(c)])
    assert used - names.answers(nb) <= rebound
    assert ("np" in rebound) == ("np" not in names.answers_use(nb))


class _Reads(dict):
    """A namespace that notes each name code run in it reads (a cell's top level reads its
    namespace through ``__getitem__``) before the code bound it."""

    def __init__(self, *args):
        super().__init__(*args)
        self.read, self.written = set(), set()

    def __getitem__(self, name):
        if name not in self.written:
            self.read.add(name)
        return super().__getitem__(name)

    def __setitem__(self, name, value):
        self.written.add(name)
        super().__setitem__(name, value)


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_test_cells_read_only_their_answers_when_they_run(path):
    """At run time (visible and hidden tests, graded edition): what each test cell reads from the
    namespace it runs in, builtins included, before binding it itself is an answer, nothing else."""
    nb, answered = _answered(path)
    answers = names.answers(nb)
    for cell in (c for c in nb.cells if names.is_test(c)):
        namespace = _Reads(answered)
        assert _test(cell, namespace) is None
        builtin = {n for n in dir(names.builtins)} & namespace.read - set(answered)
        assert namespace.read - answers == builtin == set(), cell.metadata.nbgrader.grade_id


@pytest.mark.parametrize("edition", sorted(EDITIONS))
@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_a_scratch_cell_rebinding_every_name_costs_nothing_in_every_edition(path, edition):
    """Every name at once, after the setup cell and before each test; the practice edition's blank
    answers say "no answer yet" exactly as without the scratch cell."""
    nb = EDITIONS[edition](filled(path))
    scratch = names.scratch(names.rebindable(filled(path)))
    if edition == "practice":
        assert _run(nb, scratch) == _run(nb)
        return
    results = _run(nb, scratch)
    assert results and not any(results.values()), results


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_a_scratch_cell_rebinding_every_name_to_anything_costs_nothing(path):
    nb, answered = _answered(path)
    for value in ("lambda *args, **kwargs: None",):
        for cell in (c for c in nb.cells if names.is_test(c)):
            namespace = dict(answered)
            exec(names.scratch(names.rebindable(filled(path)), value), namespace)  # noqa: S102
            assert _test(cell, namespace) is None, (value, cell.metadata.nbgrader.grade_id)


def test_the_reported_scratch_result_costs_nothing():
    """The case of the report: ``check = head_dim(8, 2) == 4`` after the answer to 1.1."""
    path = next(p for p in LEVELS if p.stem == "level1_recognition")
    results = _run(filled(path), "check = head_dim(8, 2) == 4 if 'head_dim' in dir() else True")
    assert results and not any(results.values()), results
