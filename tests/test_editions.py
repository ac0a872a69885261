"""The two editions built from the source notebooks: practice (self-study) and release (graded)."""

import json
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograders import editions
from autograders.__main__ import main as cli
from autograders.clean import clean_notebook
from autograders.nbgrader_ext import SOLUTION_HEADING, code_solution, is_worked_solution
from tests.conftest import (
    NOTEBOOKS,
    all_notebooks,
    cell_text,
    ids,
    is_answer_cell,
    is_test_cell,
    level_notebooks,
    nbgrader_meta,
    read,
)

LEVELS = level_notebooks()
HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS\n?", re.S)


@pytest.fixture(scope="module")
def practice(tmp_path_factory):
    out = tmp_path_factory.mktemp("practice")
    editions.build_practice(out, NOTEBOOKS, say=lambda message: None)
    return out


def by_grade_id(nb):
    return {nbgrader_meta(c)["grade_id"]: c for c in nb.cells if "grade_id" in nbgrader_meta(c)}


# --- practice edition ---------------------------------------------------------


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_practice_has_no_solutions_or_hidden_tests(path, practice):
    text = (practice / path.name).read_text()
    for mark in ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "hidden=True"):
        assert mark not in text, f"{mark!r} in the practice edition"
    built = read(practice / path.name)
    for gid, cell in by_grade_id(built).items():
        if is_answer_cell(cell):
            assert "# YOUR CODE HERE\nraise NotImplementedError()" in cell.source.replace("    ", ""), gid
        elif cell.cell_type == "markdown" and nbgrader_meta(cell).get("solution"):
            assert cell.source == "YOUR ANSWER HERE", gid


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_practice_keeps_visible_tests_and_nbgrader_metadata(path, practice):
    source, built = by_grade_id(read(path)), by_grade_id(read(practice / path.name))
    assert list(source) == list(built), "the practice edition should keep every nbgrader cell, in order"
    for gid, cell in source.items():
        assert {k: v for k, v in nbgrader_meta(built[gid]).items() if k != "checksum"} == {
            k: v for k, v in nbgrader_meta(cell).items() if k != "checksum"
        } | {"cell_type": cell.cell_type}, gid
        if is_test_cell(cell):
            assert built[gid].source.strip() == HIDDEN.sub("", cell.source).strip(), gid


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_practice_folds_each_worked_solution(path, practice):
    source = read(path)
    answers = {nbgrader_meta(c)["grade_id"]: c.source for c in source.cells if is_answer_cell(c)}
    worked = [c for c in source.cells if is_worked_solution(c)]
    folded = [c for c in read(practice / path.name).cells if is_worked_solution(c)]
    assert len(folded) == len(worked)
    for original, cell in zip(worked, folded):
        match = SOLUTION_HEADING.match(original.source)
        problem = f"{match['level']}.{match['problem']}"
        assert cell.source.startswith(f"<details><summary>Solution {problem}</summary>\n\n"), cell.source[:80]
        assert cell.source.rstrip().endswith("</details>")
        assert SOLUTION_HEADING.sub("", original.source).strip() in cell.source
        for gid, answer in answers.items():
            if gid.startswith(f"q{problem.replace('.', '_')}_"):
                assert f"```python\n{code_solution(answer)}\n```" in cell.source, f"{gid}'s solution is not in Solution {problem}"


def test_practice_copies_notebooks_without_graded_cells(practice):
    plain = [p for p in all_notebooks() if p not in LEVELS]
    for path in plain:
        assert (practice / path.name).read_bytes() == path.read_bytes(), path.name


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_practice_runs_to_the_end_and_says_no_answer_yet(path, executed_practice):
    nb, seconds = executed_practice[path.stem]
    problems = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        gid = nbgrader_meta(cell).get("grade_id", cell.id)
        if cell.execution_count is None:
            problems.append(f"{gid}: not executed")
        errors = [o for o in cell.outputs if o.output_type == "error"]
        if is_test_cell(cell):
            if not errors or errors[0].ename != "WrongAnswer" or "no answer yet" not in errors[0].evalue:
                problems.append(f"{gid}: should fail with WrongAnswer '... no answer yet ...', got: {cell_text(cell)[-600:]}")
        elif is_answer_cell(cell):
            if errors and errors[0].ename != "NotImplementedError":
                problems.append(f"{gid}: a blank answer raised {errors[0].ename}: {cell_text(cell)[-400:]}")
        elif errors:
            problems.append(f"{gid}: {cell_text(cell)[-600:]}")
    assert not problems, "\n".join(problems)


# --- the manifest: a rebuild never overwrites the student's work --------------


def tiny_source(directory, answer="x = 2"):
    """A one-problem level notebook (and a self-test) in ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)

    def meta(**kw):
        return {"nbgrader": {"schema_version": 3, **kw}}

    nb = new_notebook(
        cells=[
            new_markdown_cell("### Problem 9.1 — Two"),
            new_code_cell(
                f"x = None  # a number\n### BEGIN SOLUTION\n{answer}\n### END SOLUTION",
                metadata=meta(grade=False, solution=True, locked=False, grade_id="q9_1_x"),
            ),
            new_code_cell(
                '"""Problem 9.1."""\nassert x == 2\n### BEGIN HIDDEN TESTS\nassert x + 1 == 3\n### END HIDDEN TESTS',
                metadata=meta(grade=True, solution=False, locked=True, points=1, grade_id="q9_1_x_test"),
            ),
            new_markdown_cell("**Solution 9.1**\n\nIt is two.", metadata={"tags": ["worked-solution"]}),
        ]
    )
    nbformat.write(clean_notebook(nb), str(directory / "level9_tiny.ipynb"))
    nbformat.write(clean_notebook(new_notebook(cells=[new_markdown_cell("Q ::: A")])), str(directory / "self_test.ipynb"))
    return directory


def test_tiny_practice_notebook(tmp_path):
    source = tiny_source(tmp_path / "src")
    out = tmp_path / "workbook"
    assert cli(["practice", "--out", str(out), "--source", str(source)]) == 0
    nb = read(out / "level9_tiny.ipynb")
    assert [c.source for c in nb.cells] == [
        "### Problem 9.1 — Two",
        "x = None  # a number\n# YOUR CODE HERE\nraise NotImplementedError()",
        '"""Problem 9.1."""\nassert x == 2',
        "<details><summary>Solution 9.1</summary>\n\nIt is two.\n\n```python\nx = 2\n```\n\n</details>",
    ]
    assert nb.cells[2].metadata.nbgrader.grade_id == "q9_1_x_test"


def test_rebuild_replaces_untouched_and_keeps_changed(tmp_path, capsys):
    source = tiny_source(tmp_path / "src")
    out = tmp_path / "workbook"
    editions.build_practice(out, source)
    manifest = json.loads((out / editions.MANIFEST).read_text())["files"]
    assert set(manifest) == {"level9_tiny.ipynb", "self_test.ipynb"}

    # The student answers the level; the self-test stays as built.
    level, selftest = out / "level9_tiny.ipynb", out / "self_test.ipynb"
    work = level.read_text().replace("raise NotImplementedError()", "x = 2")
    level.write_text(work)
    # The source changes (both notebooks).
    tiny_source(tmp_path / "src", answer="x = 1 + 1")
    nb = read(source / "self_test.ipynb")
    nb.cells[0].source = "Q ::: A, revised"
    nbformat.write(nb, str(source / "self_test.ipynb"))
    capsys.readouterr()

    editions.build_practice(out, source)
    said = capsys.readouterr().out
    assert level.read_text() == work, "the student's notebook was overwritten"
    beside = out / "level9_tiny.new.ipynb"
    assert "x = 1 + 1" in beside.read_text(), "the new build should be written beside it"
    assert str(level) in said and str(beside) in said
    assert "revised" in selftest.read_text(), "an untouched notebook should be replaced by the new build"

    # Rebuilding again changes nothing, and the .new file is refreshed, not duplicated.
    editions.build_practice(out, source)
    assert level.read_text() == work
    assert sorted(p.name for p in out.glob("*.ipynb")) == ["level9_tiny.ipynb", "level9_tiny.new.ipynb", "self_test.ipynb"]

    # A notebook the student deleted is built again.
    level.unlink()
    editions.build_practice(out, source)
    assert read(level).cells[1].source.endswith("raise NotImplementedError()")
    assert "x = 1 + 1" in read(level).cells[3].source
    assert not beside.exists(), "the stale .new build beside it should go once the notebook is rebuilt"


def test_existing_notebook_without_manifest_is_kept(tmp_path):
    source = tiny_source(tmp_path / "src")
    out = tmp_path / "workbook"
    out.mkdir()
    (out / "level9_tiny.ipynb").write_text("{}")  # not built by us
    editions.build_practice(out, source)
    assert (out / "level9_tiny.ipynb").read_text() == "{}"
    assert (out / "level9_tiny.new.ipynb").exists()


# --- graded release -------------------------------------------------------------


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_release_layout(path, course):
    name = path.stem
    assert name in course.names
    assert (course.root / "source" / name / path.name).read_bytes() == path.read_bytes()
    released = read(course.root / "release" / name / path.name)
    assert editions.leaks(released, folded=False) == []
    assert not any(is_worked_solution(c) for c in released.cells), "a worked solution in the release"
    text = (course.root / "release" / name / path.name).read_text()
    assert "hidden=True" not in text
    assert list(by_grade_id(released)) == list(by_grade_id(read(path)))


def test_course_config(course):
    from traitlets.config.loader import PyFileConfigLoader

    config = PyFileConfigLoader("nbgrader_config.py", path=str(course.root)).load_config()
    assert Path(config.CourseDirectory.root) == course.root
    assert config.CourseDirectory.db_url == f"sqlite:///{course.root / 'gradebook.db'}?timeout=30"
    assert config.Execute.timeout == editions.CELL_TIMEOUT
    assert config.GenerateAssignment.preprocessors[0].__name__ == "DropWorkedSolutions"


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_nbgrader_validate_passes_on_source(path, validation):
    output = validation["source"][path.stem]
    assert "Success! Your notebook passes all the tests." in output, output[-3000:]


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_nbgrader_validate_invert_passes_on_release(path, validation):
    output = validation["release"][path.stem]
    assert "Success! The notebook does not pass any tests." in output, output[-3000:]


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_validate_button_passes_on_answered_practice(path, validation):
    """The practice edition keeps nbgrader's metadata and checksums: a student who
    answers every problem right gets Success from JupyterLab's Validate button."""
    output = validation["answered practice"][path.stem]
    assert "Success! Your notebook passes all the tests." in output, output[-3000:]
