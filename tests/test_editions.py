"""The two editions built from the source notebooks: practice (self-study) and release (graded)."""

import inspect
import json
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from autograders.editions import editions
from autograders.__main__ import main as cli
from autograders.editions.clean import clean_notebook
from autograders.editions.preprocessors import SOLUTION_HEADING, code_solution, is_rubric, is_worked_solution
from tests.conftest import (
    NOTEBOOKS,
    all_notebooks,
    answered_practice,
    cell_text,
    ids,
    is_answer_cell,
    is_test_cell,
    level_notebooks,
    filled,
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
    source = by_grade_id(read(path))
    for gid, cell in by_grade_id(built).items():
        if is_answer_cell(cell):
            top_level = [line for line in source[gid].source.split("\n") if "BEGIN SOLUTION" in line and not line[:1].isspace()]
            if top_level:  # the placeholder alone (its comment above it), as the prose says: the student replaces the None
                placeholder = source[gid].source.split(top_level[0])[0].rstrip("\n")
                assert cell.source == placeholder and placeholder.split("\n")[-1].endswith(" = None"), (gid, cell.source)
            else:  # a function: defined, its body nbgrader's stub
                assert cell.source.lstrip().startswith("def "), gid
                assert "# YOUR CODE HERE\nraise NotImplementedError()" in cell.source.replace("    ", ""), gid
        elif cell.cell_type == "markdown" and nbgrader_meta(cell).get("solution"):
            header = source[gid].source.split("\n")[0]  # kept: Validate shows it for a blank answer
            assert header.startswith("**Written answer, Problem ") and cell.source == f"{header}\n\nYOUR ANSWER HERE", gid


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
    source = filled(path)  # the numbers a solution names, filled in
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
    assert plain, f"{NOTEBOOKS} has no notebook without graded cells (the self-test is one)"
    for path in plain:  # as they are, but for the kernel's language_info (opening them then changes nothing)
        copied, source = read(practice / path.name), filled(path)  # the numbers they name, filled in
        assert copied.metadata.pop("language_info") == editions.kernel_language_info(), path.name
        source.metadata.pop("language_info")
        assert copied == source, path.name


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
            if errors or any(o.output_type == "stream" and o.name == "stderr" for o in cell.outputs):
                problems.append(f"{gid}: a blank answer cell showed an error: {cell_text(cell)[-400:]}")
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


def tiny_with_written(directory, first_line):
    """tiny_source's level with a written answer (q9_1_explain) whose source starts with ``first_line``."""
    source = tiny_source(directory)
    path = source / "level9_tiny.ipynb"
    nb = read(path)
    meta = {"nbgrader": {"schema_version": 3, "grade": True, "solution": True, "locked": False, "points": 1,
                         "grade_id": "q9_1_explain"}}
    nb.cells.insert(3, new_markdown_cell(f"{first_line}\n\n### BEGIN SOLUTION\nTwo is two.\n### END SOLUTION", metadata=meta))
    nbformat.write(clean_notebook(nb), str(path))
    return path


def test_a_written_answer_that_does_not_name_its_problem_is_refused(tmp_path):
    path = tiny_with_written(tmp_path / "bad", "**Written answer:**")
    with pytest.raises(RuntimeError, match=r"q9_1_explain: its first line is not '\*\*Written answer, Problem 9\.1:\*\*'"):
        editions.practice_text(path)
    path = tiny_with_written(tmp_path / "good", "**Written answer, Problem 9.1:**")
    built = nbformat.reads(editions.practice_text(path), as_version=4)
    assert editions.unnamed_written_answers(built) == []
    assert built.cells[3].source == "**Written answer, Problem 9.1:**\n\nYOUR ANSWER HERE"


def test_tiny_practice_notebook(tmp_path):
    source = tiny_source(tmp_path / "src")
    out = tmp_path / "workbook"
    assert cli(["practice", "--out", str(out), "--source", str(source)]) == 0
    nb = read(out / "level9_tiny.ipynb")
    assert [c.source for c in nb.cells] == [
        "### Problem 9.1 — Two",
        "x = None  # a number",
        '"""Problem 9.1."""\nassert x == 2',
        "<details><summary>Solution 9.1</summary>\n\nIt is two.\n\n```python\nx = 2\n```\n\n</details>",
    ]
    assert nb.cells[2].metadata.nbgrader.grade_id == "q9_1_x_test"


def test_rebuild_replaces_untouched_and_keeps_changed(tmp_path, capsys):
    source = tiny_source(tmp_path / "src")
    out = tmp_path / "workbook"
    editions.build_practice(out, source)
    manifest = json.loads((out / editions.MANIFEST).read_text())["files"]
    assert set(manifest) == {"level9_tiny.ipynb", "self_test.ipynb", editions.START_PAGE}

    # The student answers the level; the self-test stays as built.
    level, selftest = out / "level9_tiny.ipynb", out / "self_test.ipynb"
    work = level.read_text().replace("x = None  # a number", "x = 2")
    assert work != level.read_text()
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
    assert read(level).cells[1].source == "x = None  # a number"
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


def opened_and_saved(path):
    """What JupyterLab leaves after opening ``path``, running it and saving it: kernel
    metadata, outputs and execution counts, cell metadata, its own JSON layout."""
    nb = read(path)
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.2", "mimetype": "text/x-python"}
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2}}
    for number, cell in enumerate(nb.cells, 1):
        cell.metadata["trusted"] = True
        if cell.cell_type == "code":
            cell.execution_count = number
            cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text="ran\n")]
    path.write_text(json.dumps(nb, indent=2, sort_keys=False) + "\n")
    return path.read_bytes()


def test_opening_and_saving_is_not_a_change(tmp_path, capsys):
    source = tiny_source(tmp_path / "src")
    out = tmp_path / "workbook"
    editions.build_practice(out, source)
    level = out / "level9_tiny.ipynb"
    saved = opened_and_saved(level)
    opened_and_saved(out / "self_test.ipynb")
    (out / editions.START_PAGE).read_text()  # read, not changed
    capsys.readouterr()

    editions.build_practice(out, source)  # the README's first command, again
    assert sorted(p.name for p in out.iterdir() if ".new." in p.name) == [], "opening and saving counted as a change"
    assert level.read_bytes() == saved, "a notebook that holds the build already should be left as it is"
    assert "built" not in capsys.readouterr().out

    # The source changes: an untouched (opened and saved) notebook is replaced by the new build.
    tiny_source(tmp_path / "src", answer="x = 1 + 1")
    editions.build_practice(out, source)
    assert "x = 1 + 1" in read(level).cells[3].source
    assert not (out / "level9_tiny.new.ipynb").exists()

    # An answer changed: never overwritten, the new build goes beside it.
    nb = read(level)
    nb.cells[1].source = "x = 2"
    nbformat.write(nb, str(level))
    work = level.read_bytes()
    tiny_source(tmp_path / "src", answer="x = 4 // 2")
    editions.build_practice(out, source)
    assert level.read_bytes() == work
    assert "x = 4 // 2" in (out / "level9_tiny.new.ipynb").read_text()


def test_a_manifest_of_byte_hashes_still_protects_changed_work(tmp_path):
    """A workbook built before the manifest recorded cells: its sha256 of the bytes is still honoured."""
    source = tiny_source(tmp_path / "src")
    out = tmp_path / "workbook"
    editions.build_practice(out, source)
    level = out / "level9_tiny.ipynb"
    import hashlib

    old = {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in out.iterdir() if p.name != editions.MANIFEST}
    (out / editions.MANIFEST).write_text(json.dumps({"files": old}))
    nb = read(level)
    nb.cells[1].source = "x = 2"
    nbformat.write(nb, str(level))
    tiny_source(tmp_path / "src", answer="x = 1 + 1")
    editions.build_practice(out, source)
    assert read(level).cells[1].source == "x = 2"
    assert "x = 1 + 1" in (out / "level9_tiny.new.ipynb").read_text()


def test_start_page_lists_every_notebook_and_says_how_to_work(practice):
    text = (practice / editions.START_PAGE).read_text()
    for path in all_notebooks():
        nb = read(path)
        title = next(c.source.splitlines()[0][2:] for c in nb.cells if c.source.startswith("# "))
        assert f"[{title}]({path.name})" in text, path.name
        for cell in nb.cells:
            match = re.match(r"### Problem (\d+\.\d+)", cell.source)
            if match:
                assert match[1] in text, f"Problem {match[1]} is not on the start page"
    for part in ("## How to work", "## How to get feedback", "Validate", "no answer yet".capitalize()):
        assert part in text, part


# --- graded edition: every visible test form only ----------------------------------


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_graded_edition_makes_every_test_form_only(path):
    """Every visible test of the graded edition checks its answer's form only (``_form(...)``, the students'
    module); the checks' import and each full check lead the hidden tests, which the release never holds: no
    test a student can run names the checks or tells a right answer from a wrong one."""
    source, graded = filled(path), editions.graded_notebook(read(path))
    assert [c.cell_type for c in graded.cells] == [c.cell_type for c in source.cells]
    rewritten = 0
    for before, after in zip(source.cells, graded.cells):
        calls = re.findall(r"^_checks\.(\w+)\((\w+)\)$", HIDDEN.sub("", before.source), re.M)
        if not (calls and is_test_cell(before)):
            if "variants." not in before.source:  # a numbers or data cell: the students' own calls
                assert after.source == before.source, nbgrader_meta(before).get("grade_id")
            continue
        rewritten += 1
        visible, hidden = after.source.split("### BEGIN HIDDEN TESTS")
        assert "autograders.checks" not in visible and "_checks" not in visible
        assert "from autograders.student.forms import form as _form" in visible
        for name, value in calls:
            assert re.search(rf"^_form\('\w+', {value}, '\w+'", visible, re.M), visible
            assert f"\n_checks.{name}({value})\n" in hidden
        assert hidden.lstrip("\n").startswith("from autograders.checks import"), "the checks' import leads the hidden tests"
    assert rewritten == sum(is_test_cell(c) for c in source.cells) > 0


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_graded_edition_imports_only_the_students_side_outside_hidden_tests(path):
    """What a student's Python runs of the graded edition (every cell outside the hidden tests) imports
    mha_core, numpy and autograders.student only: nothing a hosted class's students lack."""
    graded = editions.graded_notebook(read(path))
    for cell in graded.cells:
        if cell.cell_type != "code":
            continue
        shown = HIDDEN.sub("", cell.source)
        for module in re.findall(r"^\s*(?:from|import)\s+([\w.]+)", shown, re.M):
            assert module.split(".")[0] in ("numpy", "mha_core") or module.startswith("autograders.student"), (
                nbgrader_meta(cell).get("grade_id"), module)


def test_form_only_checks_the_form_and_says_so(capsys):
    """The graded edition's visible test says an answer of the right form is recorded, whatever its value; a
    blank or wrongly typed answer is told what form was expected."""
    from autograders.checks import level1
    from autograders.student.feedback import WrongAnswer
    from autograders.student.forms import form

    options = level1.q1_2_why.answer.options
    for option in options:  # right or wrong: the same words
        form("why", option.lower(), "choice", options=options)
        said = capsys.readouterr().out
        assert said.startswith("✔ Answer recorded") and ", ".join(options) in said and "graded" in said
    said = set()
    for value in (64, 63.5, 1e9):
        form("d_k", value, "number")
        said.add(capsys.readouterr().out.replace(f"{value:g}", "X"))
    assert len(said) == 1
    with pytest.raises(WrongAnswer, match="no answer yet"):
        form("why", None, "choice", options=options)
    with pytest.raises(WrongAnswer, match="should be one of"):
        form("why", "E", "choice", options=options)
    with pytest.raises(WrongAnswer, match="a single number"):
        form("d_k", "64", "number")
    with pytest.raises(WrongAnswer, match="should be a function"):
        form("softmax", 3, "function")

    def softmax(scores):
        """The release's blank answer."""
        # YOUR CODE HERE
        raise NotImplementedError()

    with pytest.raises(WrongAnswer, match="no answer yet"):
        form("softmax", softmax, "function")
    form("softmax", lambda scores: scores / scores.sum(), "function")  # wrong, but an answer: recorded
    assert "is a function" in capsys.readouterr().out
    with pytest.raises(WrongAnswer, match="3 numbers"):
        form("output_shape", (6, 768), "shape", ndim=3)
    with pytest.raises(ValueError, match="kind"):
        form("x", 1, "letter")


@pytest.mark.parametrize("path", LEVELS, ids=ids(LEVELS))
def test_release_layout(path, course):
    name = path.stem
    assert name in course.names
    assert (course.root / "source" / name / path.name).read_text() == editions.graded_text(path)
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
    assert [p.__name__ for p in config.GenerateAssignment.preprocessors[:2]] == ["DropWorkedSolutions", "DropRubrics"]
    assert config.Autograde.autograde_preprocessors[-1].__name__ == "InsertRubrics"
    assert [p.__name__ for p in config.HTMLExporter.preprocessors] == ["HideRubrics"]


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


# --- rubrics and labelled choices through nbgrader: a one-level course ---------------

LEVEL2 = NOTEBOOKS / "level2_application.ipynb"
RUBRIC_MARK = "rubric-marker-7f3a: one point per width named"
FORGED = "forged-rubric-91c2: full marks whatever is written"


def with_rubric(directory):
    """Level 2 in ``directory`` with one rubric of ours (``RUBRIC_MARK``) right after q2_2_explain."""
    nb = read(LEVEL2)
    nb.cells = [c for c in nb.cells if not is_rubric(c)]
    index = next(i for i, c in enumerate(nb.cells) if nbgrader_meta(c).get("grade_id") == "q2_2_explain")
    points = nbgrader_meta(nb.cells[index])["points"]
    rubric = new_markdown_cell(f"**Rubric 2.2 (q2_2_explain, {points} points)**\n\n- **{points} points**: {RUBRIC_MARK}",
                               metadata={"tags": ["rubric"]})
    nb.cells.insert(index + 1, rubric)
    directory.mkdir(parents=True, exist_ok=True)
    nbformat.write(clean_notebook(nb), str(directory / LEVEL2.name))
    return directory


@pytest.fixture(scope="module")
def small_release(tmp_path_factory):
    """Level 2 (with our rubric) released, and two students' submissions: ``right`` (every
    answer of the source) and ``wrong`` (the same, a wrong labelled choice for 2.2, and
    a rubric cell of its own). Nothing runs a notebook here."""
    from autograders.checks import level2

    tmp = tmp_path_factory.mktemp("small")
    source = with_rubric(tmp / "notebooks")
    root = tmp / "course"
    editions.build_release(root, source, say=lambda message: None)
    name = LEVEL2.stem
    released = root / "release" / name / LEVEL2.name
    right = answered_practice(source / LEVEL2.name, released, tmp / "right")
    nb = read(right)
    why = level2.q2_2_why.answer  # the declaration (autograders/problems/level2.py)
    wrong_choice = next(o for o in why.options if o != why.answer({}))
    for cell in nb.cells:
        if nbgrader_meta(cell).get("grade_id") == "q2_2_why":
            cell.source = f'why = "{wrong_choice}"'
    nb.cells.insert(0, new_markdown_cell(f"**Rubric 2.2 (q2_2_explain, 2 points)**\n\n- {FORGED}", metadata={"tags": ["rubric"]}))
    for student, submission in (("right", read(right)), ("wrong", nb)):
        target = root / "submitted" / student / name
        target.mkdir(parents=True)
        nbformat.write(submission, str(target / LEVEL2.name))
    return dict(root=root, source=source, name=name, released=released, wrong_choice=wrong_choice)


@pytest.fixture(scope="module")
def small_course(small_release):
    """``small_release``'s two students autograded (slow: SLOW_FIXTURES); nbgrader's
    feedback and the project's, both kept."""
    from autograders.grading.feedback_html import generate_feedback
    from autograders.grading.gradebooks import course_config

    root, name = small_release["root"], small_release["name"]
    autograde = editions.nbgrader(root, "autograde", name, "--log-level=WARN", check=False, capture=True)
    feedback = {}
    editions.nbgrader(root, "generate_feedback", name, "--log-level=WARN", check=False, capture=True)
    for student in ("right", "wrong"):
        html = root / "feedback" / student / name / f"{name}.html"
        feedback[("nbgrader", student)] = html.read_text() if html.exists() else ""
        files = generate_feedback(root, course_config(root), name, student)
        feedback[("project", student)] = files[f"{name}.html"][1].decode()
    return dict(small_release, log=autograde.stdout + autograde.stderr, feedback=feedback)


def small_grades(small_course, student):
    from nbgrader.api import Gradebook

    root, name = small_course["root"], small_course["name"]
    with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gb:
        notebook = gb.find_submission_notebook(name, name, student)
        return {g.name: (g.auto_score, g.max_score) for g in notebook.grades if g.cell.cell_type == "code"}


def test_the_release_carries_the_kernels_language_info(small_release):
    """JupyterLab writes the kernel's language_info into a notebook it opens: a release without it showed
    unsaved changes (the dot on its tab) as soon as a student opened it on the hub."""
    assert read(small_release["released"]).metadata["language_info"] == editions.kernel_language_info()


def test_rubric_is_dropped_from_the_release_and_folded_in_practice(small_release, tmp_path):
    released = read(small_release["released"])
    assert not any(is_rubric(c) for c in released.cells)
    assert RUBRIC_MARK not in small_release["released"].read_text()
    assert editions.leaks(released, folded=False) == []
    course_source = read(small_release["root"] / "source" / small_release["name"] / LEVEL2.name)
    assert sum(RUBRIC_MARK in c.source for c in course_source.cells) == 1, "the course's source keeps the rubric"

    editions.build_practice(tmp_path / "practice", small_release["source"], say=lambda message: None)
    practice = read(tmp_path / "practice" / LEVEL2.name)
    assert editions.leaks(practice) == []
    index = next(i for i, c in enumerate(practice.cells) if nbgrader_meta(c).get("grade_id") == "q2_2_explain")
    folded = practice.cells[index + 1]
    assert is_rubric(folded) and RUBRIC_MARK in folded.source
    assert re.match(r"<details><summary>Rubric 2\.2\b[^<]*</summary>\n", folded.source), folded.source[:80]
    assert folded.source.rstrip().endswith("</details>") and "**Rubric" not in folded.source


@pytest.mark.parametrize("student", ["right", "wrong"])
def test_autograde_puts_the_rubric_right_after_its_written_answer(small_course, student):
    path = small_course["root"] / "autograded" / student / small_course["name"] / LEVEL2.name
    assert path.exists(), small_course["log"][-3000:]
    cells = read(path).cells
    rubrics = [i for i, c in enumerate(cells) if is_rubric(c)]
    answer = next(i for i, c in enumerate(cells) if nbgrader_meta(c).get("grade_id") == "q2_2_explain")
    assert rubrics == [answer + 1], f"rubric cells at {rubrics}, the written answer at {answer}"
    assert RUBRIC_MARK in cells[answer + 1].source and "nbgrader" not in cells[answer + 1].metadata
    assert not any(FORGED in c.source for c in cells), "a rubric the student wrote should not reach the grader"


def test_formgrader_shows_the_rubric(small_course):
    """The formgrader's page of a submission (nbgrader's HTMLExporter with the course's
    config and the 'formgrade' template, as the formgrader builds it) shows the rubric."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers
    from autograders.grading.gradebooks import course_config

    config = course_config(small_course["root"])
    config.HTMLExporter.template_name = "formgrade"
    config.HTMLExporter.extra_template_basedirs = [handlers.template_path]
    path = small_course["root"] / "autograded" / "right" / small_course["name"] / LEVEL2.name
    resources = {"assignment_id": small_course["name"], "notebook_id": LEVEL2.stem, "submission_id": "x", "index": 0,
                 "total": 1, "base_url": "/", "student": "right", "last_name": None, "first_name": None,
                 "notebook_path": str(path)}
    html, _ = HTMLExporter(config=config).from_filename(str(path), resources=resources)
    assert RUBRIC_MARK in html


@pytest.mark.parametrize("kind", ["nbgrader", "project"])
@pytest.mark.parametrize("student", ["right", "wrong"])
def test_feedback_never_shows_the_rubric(small_course, kind, student):
    html = small_course["feedback"][(kind, student)]
    answer = next(c.source for c in read(LEVEL2).cells if nbgrader_meta(c).get("grade_id") == "q2_2_explain")
    first = code_solution(answer).split("\n")[0]  # "Each product $q_j k_j$ has mean ..."
    assert first.split("$")[0] in html, "the feedback should show the written answer"
    if kind == "project":  # its formulas as MathML, their TeX kept
        assert '<annotation encoding="application/x-tex">q_j k_j</annotation>' in html
    else:  # nbgrader's own page leaves them to MathJax
        assert first[:40] in html
    assert "Written answer, Problem 2.2" in html, "and the line naming its problem"
    assert RUBRIC_MARK not in html and "Rubric 2.2" not in html and FORGED not in html


# --- Validate names the problem of each written answer left blank -------------------------

WRITTEN_NAMED = re.compile(r"^\*\*Written answer, Problem (\d+\.\d+):\*\*\n\nYOUR ANSWER HERE$")


def written_problems(nb):
    """{grade_id: "2.2"} of the written answers (markdown cells graded by hand) of ``nb``."""
    return {nbgrader_meta(c)["grade_id"]: ".".join(re.match(r"q(\d+)_(\d+)_", nbgrader_meta(c)["grade_id"]).groups())
            for c in nb.cells if c.cell_type == "markdown" and nbgrader_meta(c).get("solution") and nbgrader_meta(c).get("grade")}


def release_like(nb):
    """The release of the source notebook ``nb`` as nbgrader's generate_assignment makes it (the
    course's preprocessors in order, in process), without the gradebook (SaveCells)."""
    from autograders.editions.preprocessors import release_preprocessors

    nb, resources = editions.graded_notebook(nb), {}
    for preprocessor in release_preprocessors():
        if preprocessor.__name__ != "SaveCells":
            nb, resources = preprocessor().preprocess(nb, resources)
    return nb


WITH_WRITTEN = [path for path in LEVELS if written_problems(read(path))]  # Levels 1 and 4 have none


def test_most_levels_have_written_answers():
    assert len(WITH_WRITTEN) >= 3, WITH_WRITTEN


@pytest.mark.parametrize("edition", ["practice", "release"])
@pytest.mark.parametrize("path", WITH_WRITTEN, ids=ids(WITH_WRITTEN))
def test_validate_names_the_problem_of_each_blank_written_answer(path, edition, tmp_path):
    """nbgrader's Validator (its checksum test of answer cells; the notebook not run) lists each
    written answer left blank with the cell's text, which names its problem."""
    from nbgrader.preprocessors import ClearOutput
    from nbgrader.validator import Validator

    built = editions.practice_notebook(read(path)) if edition == "practice" else release_like(read(path))
    expected = written_problems(read(path))
    assert expected, f"{path.stem}: no written answers"
    target = tmp_path / path.name
    nbformat.write(built, str(target))
    failed = Validator(preprocessors=[ClearOutput]).validate(str(target)).get("failed", [])
    named = [WRITTEN_NAMED.match(cell["source"]) for cell in failed]
    assert sorted(m[1] for m in named if m) == sorted(expected.values()), [cell["source"][:80] for cell in failed]
    assert all(cell["raw_error"] == "You did not provide a response." for cell, m in zip(failed, named) if m)


def test_nbgrader_validate_of_the_blank_release_names_the_written_problem(small_release, kernels):
    """The command a student's Validate button runs, on Level 2's release left blank: the written
    answer's block starts with its problem, then nbgrader's "You did not provide a response."."""
    run = editions.nbgrader(small_release["root"], "validate", str(small_release["released"]), check=False, capture=True)
    output = run.stdout + run.stderr
    blocks = output.split("The following cell failed:")[1:]
    assert blocks, output[-3000:]
    for problem in written_problems(read(LEVEL2)).values():
        mine = [b for b in blocks if b.lstrip().startswith(f"**Written answer, Problem {problem}:**")]
        assert len(mine) == 1, output[-3000:]
        assert "YOUR ANSWER HERE" in mine[0] and "You did not provide a response." in mine[0]


def test_release_checks_only_the_form_of_a_choice(small_release):
    """In the release a wrong labelled choice passes the visible test ("Answer recorded"),
    a blank one says "no answer yet"; the practice edition's test tells at once. Each test cell
    imports what it calls itself: it runs in a namespace holding only the answer."""
    from autograders.checks.feedback import WrongAnswer

    released = by_grade_id(read(small_release["released"]))["q2_2_why_test"].source
    assert "_form('why', why, 'choice'" in released and "hidden=True" not in released and "_checks" not in released
    wrong = small_release["wrong_choice"]
    exec(compile(released, "<release>", "exec"), {"why": wrong})  # noqa: S102 (passes: no exception)
    with pytest.raises(WrongAnswer, match="no answer yet"):
        exec(compile(released, "<release>", "exec"), {"why": None})  # noqa: S102
    practice = editions.practice_notebook(read(small_release["source"] / LEVEL2.name))
    visible = by_grade_id(practice)["q2_2_why_test"].source
    with pytest.raises(WrongAnswer) as info:
        exec(compile(visible, "<practice>", "exec"), {"why": wrong})  # noqa: S102
    assert repr(wrong) in str(info.value)


def test_autograde_scores_a_choice_by_its_hidden_test(small_course):
    right, wrong = small_grades(small_course, "right"), small_grades(small_course, "wrong")
    assert right, small_course["log"][-3000:]
    assert all(score == top for score, top in right.values()), right
    assert wrong["q2_2_why_test"] == (0, right["q2_2_why_test"][1])
    assert {k: v for k, v in wrong.items() if k != "q2_2_why_test"} == {k: v for k, v in right.items() if k != "q2_2_why_test"}
    # The feedback names the misconception (the full check leads the hidden tests).
    from autograders.checks import level2

    shown = small_course["feedback"][("project", "wrong")]
    says = next(m.says for m in level2.q2_2_why.answer.mistakes if m.wrong({}) == small_course["wrong_choice"])
    assert says.split(":")[0][:30] in shown.replace("&#x27;", "'")
    from autograders.student.forms import LATER
    assert LATER not in shown  # graded: the form check's promise gives way to the verdict


def test_a_graded_page_says_what_the_form_check_left_to_the_grading(capsys):
    """The form check says "Whether it is right is decided when your work is graded."; the graded page,
    where it has been, says instead that the answer is right, or drops the tick and the promise above the
    hidden tests' note (a review found "✔ Answer recorded … decided when graded" above "scored 0 of 1")."""
    from autograders.grading.checker import GRADED_RIGHT, Checked, write_outputs
    from autograders.student.forms import LATER, form

    form("d_k", 9216, "number")
    said = capsys.readouterr().out
    assert LATER in said
    cells = [new_code_cell("_form('d_k', d_k, 'number')", metadata={"nbgrader": {"grade": True, "grade_id": gid, "points": 1}})
             for gid in ("right", "wrong")]
    nb = new_notebook(cells=cells)
    write_outputs(nb, {"right": Checked(1.0, 1.0, shown=said),
                       "wrong": Checked(0.0, 1.0, "Multiplied instead of divided.", hidden=True, shown=said)})
    right, wrong = (["".join(o.text for o in cell.outputs if o.name == name) for name in ("stdout", "stderr")]
                    for cell in nb.cells)
    assert right == [said.replace(LATER, GRADED_RIGHT), ""]
    assert LATER not in wrong[0] and "✔" not in wrong[0] and wrong[0].startswith("Answer recorded: `d_k` = 9216")
    assert wrong[1].startswith("Hidden tests: scored 0 of 1. Multiplied instead of divided.")


def test_hide_rubrics_keeps_them_only_for_the_formgrader():
    from traitlets import Unicode
    from traitlets.config import Configurable

    from autograders.grading.rubrics import HideRubrics

    class Exporter(Configurable):  # what HideRubrics reads of the exporter that runs it
        template_name = Unicode()

    nb = new_notebook(cells=[new_markdown_cell("answer"), new_markdown_cell("**Rubric 2.2 (q2_2_explain, 2 points)**",
                                                                            metadata={"tags": ["rubric"]})])
    for template, kept in (("formgrade", 2), ("feedback", 1), ("lab", 1)):
        exporter = Exporter(template_name=template)
        shown, _ = HideRubrics(parent=exporter).preprocess(nbformat.from_dict(nb), {})
        assert len(shown.cells) == kept, template
