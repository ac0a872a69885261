"""What grading does once per process instead of once per job gives the same answers as nbgrader's own steps:
the nbgrader metadata check (:class:`~autograders.grading.repairs.CheckCellMetadataOnce`) and the private
gradebook's one engine (:func:`~autograders.grading.gradebooks.one_engine`)."""

import copy
import shutil
import sqlite3

import nbformat
import pytest
from nbgrader.api import Gradebook
from nbgrader.preprocessors import CheckCellMetadata

from autograders.grading import gradebooks, jobs
from autograders.grading.repairs import CheckCellMetadataOnce


def _cell(kind="code", **meta):
    nbgrader = {"grade": True, "grade_id": "q1", "locked": False, "points": 1, "schema_version": 3,
                "solution": True, "task": False, **meta}
    new = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    return new("x = 1", metadata={"nbgrader": nbgrader})


def _verdict(step, cells):
    nb = nbformat.v4.new_notebook(cells=copy.deepcopy(cells))
    try:
        step().preprocess(nb, {})
        return "valid"
    except Exception as error:  # noqa: BLE001 (ValidationError, SchemaTooOldError: what nbgrader raises)
        return f"{type(error).__name__}: {error}"


CASES = {
    "valid": [_cell()],
    "schema": [_cell(points="one")],  # the JSON schema refuses it
    "old schema": [_cell(schema_version=1)],
    "no grade_id": [_cell(grade_id="")],
    "markdown grade only": [_cell("markdown", solution=False)],  # same metadata as a valid code cell's, a markdown cell
    "duplicate ids": [_cell(), _cell()],
    "no metadata": [nbformat.v4.new_code_cell("y = 2")],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_metadata_check_done_once_says_what_nbgrader_s_says_every_time(name):
    expected = _verdict(CheckCellMetadata, CASES[name])
    for _ in range(2):  # the second time, what passed the schema before is not checked against it again
        assert _verdict(CheckCellMetadataOnce, CASES[name]) == expected, name


def test_metadata_that_failed_is_never_taken_for_metadata_that_passed():
    bad = [_cell(points="one")]
    assert _verdict(CheckCellMetadataOnce, bad) != "valid"
    assert _verdict(CheckCellMetadataOnce, bad) != "valid", "a refused metadata is checked again, and refused again"
    good = [_cell("code", solution=False)]
    assert _verdict(CheckCellMetadataOnce, good) == "valid"
    assert _verdict(CheckCellMetadataOnce, [_cell("markdown", solution=False)]) != "valid", \
        "nbgrader's checks of the cell itself run for metadata that passed the schema before"


def test_the_private_gradebook_s_engine_serves_every_job_and_only_it(tmp_path):
    jobs.environment()  # nbgrader runs alembic for a new gradebook
    empty = gradebooks.empty_gradebook(tmp_path / "empty.db", "course")
    url = gradebooks.private_url()
    other = f"sqlite:///{tmp_path / 'course.db'}"
    shutil.copyfile(empty, tmp_path / "course.db")
    engines = []
    for student in ("a", "b"):
        path = url.removeprefix("sqlite:///")
        shutil.copyfile(empty, path)  # written anew for each job
        with gradebooks.one_engine(url):
            with Gradebook(url, "course") as gb:
                gb.add_student(student)
                engines.append(gb.engine)
            with Gradebook(url, "course") as gb:
                assert [s.id for s in gb.students] == [student], "each job sees its own file"
                engines.append(gb.engine)
            with Gradebook(other, "course") as gb:
                assert gb.engine is not engines[0], "another gradebook gets an engine of its own"
                gb.add_student(student)
        with sqlite3.connect(path) as db:
            assert db.execute("PRAGMA journal_mode").fetchone()[0] == "delete", "nothing of it stays in the file"
    assert all(engine is engines[0] for engine in engines), "one engine for every job of the process"
    with Gradebook(url, "course") as gb:  # outside a job: nbgrader's own engine
        assert gb.engine is not engines[0]
    with Gradebook(other, "course") as gb:
        assert sorted(s.id for s in gb.students) == ["a", "b"], "the other gradebook keeps what was written"


def _contents(path):
    with sqlite3.connect(path) as db:
        tables = db.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
        rows = {name: sorted(db.execute(f'SELECT * FROM "{name}"').fetchall()) for kind, name, _ in tables
                if kind == "table"}
    return tables, rows


def test_an_empty_gradebook_is_the_one_nbgrader_makes(tmp_path, kernels):
    jobs.environment()  # nbgrader runs alembic
    with Gradebook(f"sqlite:///{tmp_path / 'nbgrader.db'}", "course101"):
        pass
    ours = gradebooks.empty_gradebook(tmp_path / "ours.db", "course101")
    assert _contents(ours) == _contents(tmp_path / "nbgrader.db")
    assert _contents(ours)[1]["alembic_version"], "stamped with alembic's head"


def test_a_gradebook_left_open_by_a_job_never_reaches_the_next_job_s_file(tmp_path):
    jobs.environment()
    empty = gradebooks.empty_gradebook(tmp_path / "empty.db", "course")
    url = gradebooks.private_url()
    shutil.copyfile(empty, url.removeprefix("sqlite:///"))
    with gradebooks.one_engine(url):
        from nbgrader.api import Student

        left = Gradebook(url, "course")  # never closed, in the middle of a write (a step that failed half-way)
        left.db.add(Student(id="a"))
        left.db.flush()
    assert gradebooks.private_url() != url, "the next job writes a gradebook of its own elsewhere"
    left.close()
