"""What is graded is what the answer cells define: when a notebook is graded, only the sheet's own cells
(its set-up and data cells) and the answer cells run (autograders/grading/handover.py,
``graded_cells``). A cell a student adds, and the sheet's explorers and predictions, do not run, so none of
them can install a hook, patch the hand-over, start a thread or rebind an answer after the last answer cell.
"""

from pathlib import Path

import nbformat

from autograders.grading import standalone
from autograders.grading.handover import NOT_RUN, graded_cells
from tests.corpus import FLIP

ROOT = Path(__file__).resolve().parent.parent
LEVEL1 = ROOT / "notebooks" / "level1_recognition.ipynb"
WRONG = {"q1_1_head_dim": "def head_dim(d_model, h):\n    return d_model * h", "q1_2_why": 'why = "A"'}
FLIPPED = ("q1_1_head_dim_test", "q1_2_why_test")


def _gid(cell):
    return cell.metadata.get("nbgrader", {}).get("grade_id")


def _code(source, **meta):
    cell = nbformat.v4.new_code_cell(source)
    if meta:
        cell.metadata["nbgrader"] = {"solution": False, "grade": False, "locked": False, "schema_version": 3, **meta}
    return cell


def _at(nb, grade_id):
    return next(i for i, c in enumerate(nb.cells) if _gid(c) == grade_id)


def test_the_sheet_s_cells_and_the_answer_cells_run_and_nothing_else():
    source = nbformat.read(str(LEVEL1), as_version=4)
    nb = nbformat.read(str(LEVEL1), as_version=4)
    nb.cells.insert(_at(nb, "q1_1_numbers") + 1, _code("x = 1"))  # a cell of the student's own
    nb.cells.insert(_at(nb, "q1_1_numbers") + 1, _code("y = 1", locked=True, grade_id="made_up"))  # looks locked
    runs = graded_cells(nb, source)
    ran = {_gid(nb.cells[i]) for i in runs}
    sheet = {_gid(c) for c in source.cells if c.cell_type == "code" and _gid(c)
             and not c.metadata["nbgrader"].get("grade")}
    assert ran == sheet and "made_up" not in ran and None not in ran
    plain = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and "nbgrader" not in c.metadata]
    assert len(plain) == 3 and not set(plain) & runs  # the student's cell and the sheet's two


def test_a_pasted_answer_runs_as_its_last_copy():
    source = nbformat.read(str(LEVEL1), as_version=4)
    nb = nbformat.read(str(LEVEL1), as_version=4)
    why = _at(nb, "q1_2_why")
    nb.cells.insert(why + 1, nbformat.from_dict({**nb.cells[why], "source": 'why = "C"'}))
    runs = graded_cells(nb, source)
    assert why not in runs and why + 1 in runs  # the one nbgrader's DeduplicateIds keeps


def _graded(tmp_path, name, edit):
    nb = nbformat.read(str(LEVEL1), as_version=4)
    for cell in nb.cells:
        if _gid(cell) in WRONG:
            cell.source = WRONG[_gid(cell)]
    edit(nb)
    path = tmp_path / name / LEVEL1.name
    path.parent.mkdir(parents=True)
    nbformat.write(nb, str(path))
    return standalone.recheck(LEVEL1, path, timeout=20)


def test_a_cell_of_the_student_s_own_cannot_change_what_is_graded(tmp_path, kernels):
    """Wrong answers, then cells of the student's own (after the last cell, between the set-up and the first
    answer, in the sheet's explorer, made to look like the sheet's) that make them right through every hook,
    a thread and a patched hand-over: both tests score 0. (A sheet's locked cell rewritten is put back by
    nbgrader's OverwriteCells: the corpus's flips-in-the-set-up, graded as a class.)"""

    def edit(nb):
        nb.cells.append(_code(FLIP))
        nb.cells.insert(_at(nb, "setup") + 1, _code(FLIP))
        nb.cells.insert(_at(nb, "q1_1_numbers") + 1, _code(FLIP, locked=True, grade_id="q1_1_more"))
        explorer = next(c for c in nb.cells if c.cell_type == "code" and "nbgrader" not in c.metadata)
        explorer.source = FLIP

    results = _graded(tmp_path, "own-cells", edit)
    assert {gid: results[gid].score for gid in FLIPPED} == {gid: 0.0 for gid in FLIPPED}
    assert results["q1_1_d_k_test"].score == 1.0 and results["q1_1_head_dim_test"].confirmed


def test_the_same_cell_in_an_answer_cell_does_change_it(tmp_path, kernels):
    """The control: the cell above works where it runs. In the last answer cell, its hooks and its patched
    hand-over change what is handed over, to answers its own code computes: what an answer cell defines
    is graded, and this one is there for a teacher to read (docs/security.md)."""
    results = _graded(tmp_path, "answer-cell", lambda nb: nb.cells[_at(nb, "q1_2_why")].__setitem__(
        "source", 'why = "A"\n' + FLIP))
    assert {gid: results[gid].score for gid in FLIPPED} == {"q1_1_head_dim_test": 2.0, "q1_2_why_test": 1.0}


def test_a_cell_that_did_not_run_shows_the_note_alone():
    """(The corpus's cases show the note on the feedback page of a graded class.)"""
    from autograders.grading.handover import not_run

    cell = _code("print('mine')")
    cell.outputs, cell.execution_count = [nbformat.v4.new_output("stream", text="old")], 3
    not_run(cell)
    assert cell.execution_count is None and [o["text"] for o in cell.outputs] == [NOT_RUN]
    empty = _code("  ")
    not_run(empty)
    assert empty.outputs == []


# --- Validate runs what grading runs (autograders/student/validating.py) ---


def _validated(tmp_path, monkeypatch, config_file):
    """Validate, as the Lab's handler makes it (a ``Validator`` from the configuration ``config_file``
    loads), on the practice edition of Level 1 whose ``head_dim`` needs a helper in a cell of its own (the
    other answers left blank): {first line of each test it says fails: its error}."""
    from nbgrader.validator import Validator
    from traitlets.config.loader import PyFileConfigLoader

    from autograders.editions import editions

    trait = Validator.class_traits()["preprocessors"]
    monkeypatch.setattr(trait, "default_args", trait.default_args)  # restored afterwards
    nb = editions.practice_notebook(nbformat.read(str(LEVEL1), as_version=4))
    nb.cells[_at(nb, "q1_1_head_dim")].source = "def head_dim(d_model, h):\n    return _divide(d_model, h)"
    nb.cells.insert(_at(nb, "q1_1_head_dim"), _code("def _divide(a, b):\n    return a // b"))
    tmp_path.mkdir(exist_ok=True)
    target = tmp_path / LEVEL1.name
    nbformat.write(nb, str(target))
    if config_file:
        config = PyFileConfigLoader(config_file.name, str(config_file.parent)).load_config()
        validator = Validator(config=config)
    else:  # nbgrader's own steps, as nbgrader/validator.py ships them
        from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, Execute

        validator = Validator(preprocessors=[CheckCellMetadata, ClearOutput, Execute])
    failed = validator.validate(str(target)).get("failed", [])
    return {cell["source"].split("\n")[0]: cell["raw_error"] for cell in failed}


FUNCTION_TEST = '"""Problem 1.1: the formula for d_k, as a function."""'


def test_validate_in_the_students_lab_fails_an_answer_that_needs_a_cell_of_their_own(tmp_path, monkeypatch, kernels):
    """The Lab's and the hub's configuration: the helper's cell does not run, so the function's test fails,
    saying which name is missing. (The control below: nbgrader's own Validate passes it.)"""
    for config in (ROOT / "lab" / "nbgrader_config.py", ROOT / "hub" / "singleuser" / "nbgrader_config.py"):
        failed = _validated(tmp_path / config.parent.name, monkeypatch, config)
        assert "NameError: name '_divide' is not defined" in failed[FUNCTION_TEST], config
        assert len(failed) == 4, failed  # and the three blank answers


def test_nbgrader_s_own_validate_passes_it(tmp_path, monkeypatch, kernels):
    failed = _validated(tmp_path, monkeypatch, None)
    assert FUNCTION_TEST not in failed and len(failed) == 3, failed


def test_a_helper_in_a_cell_of_the_student_s_own_is_named_where_it_did_not_run(tmp_path, kernels):
    """The answer's function calls a helper defined in a cell of the student's own: its test fails with the
    NameError, and the helper's cell says it did not run and which name an answer cell needed from it."""
    from autograders.grading.autograde import SandboxExecute

    source = nbformat.read(str(LEVEL1), as_version=4)
    nb = nbformat.read(str(LEVEL1), as_version=4)
    nb.cells[_at(nb, "q1_1_head_dim")].source = "def head_dim(d_model, h):\n    return _divide(d_model, h)"
    helper = _code("def _divide(a, b):\n    return a // b\n\nscratch = 1")
    nb.cells.insert(_at(nb, "q1_1_head_dim"), helper)
    executor = SandboxExecute(timeout=20, checks=True)
    executor.source_notebook = source
    executor.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    verdict = executor.verdicts["q1_1_head_dim_test"]
    assert verdict.score == 0 and "name '_divide' is not defined" in verdict.message
    assert [o["text"] for o in helper.outputs] == [NOT_RUN + "It defines `_divide`, which an answer cell uses.\n"]
    assert executor.verdicts["q1_1_d_k_test"].score == 1.0


def test_validate_in_the_students_lab_runs_a_plain_notebook_whole(tmp_path, monkeypatch, kernels):
    """A notebook with no nbgrader cell (a student's own) runs every cell in Validate, as grading runs it."""
    from nbgrader.validator import Validator
    from traitlets.config.loader import PyFileConfigLoader

    trait = Validator.class_traits()["preprocessors"]
    monkeypatch.setattr(trait, "default_args", trait.default_args)
    config = PyFileConfigLoader("nbgrader_config.py", str(ROOT / "lab")).load_config()
    target = tmp_path / "mine.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[_code("open('ran.txt', 'w').write('ran')")]), str(target))
    Validator(config=config).validate(str(target))
    assert (tmp_path / "ran.txt").read_text() == "ran"
