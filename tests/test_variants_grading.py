"""Variants through grading: the grader decides each student's numbers and hands them to the
sandboxed kernel and the clean re-check; ``variants/<assignment>.csv``; bad input refused first.

One course of level 1 only (the cheapest level), three students graded once by ``mha-workbook grade``.
"""

import csv
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from autograders.editions import editions
from autograders.grading import grading, sandbox, sandbox_folder
from autograders.variants import VariantError, choose
from autograders.student import numbers as current
from autograders.variants import course as variants
from autograders.variants import record
from autograders.variants.levels import POOLS
from tests.conftest import cell_text, submission

ROOT = Path(__file__).resolve().parent.parent
LEVEL = "level1_recognition"
KEY = bytes(range(32))


def run(*args, cwd, env=None, ok=True):
    env = editions.nbgrader_env() | {"PYTHONPATH": str(ROOT)} | (env or {})
    result = subprocess.run([sys.executable, "-m", "autograders", *args], cwd=cwd, env=env, text=True,
                            capture_output=True, timeout=900)
    if ok:
        assert result.returncode == 0, f"{args} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result


def _answers(numbers):
    """What a student right for ``numbers`` writes in 1.1 and 1.2 (computed here, not by the pools)."""
    one, two = numbers["q1_1"], numbers["q1_2"]
    return one["d_model"] // one["h"], (two["n"], two["d_model"])


def _pick_students(course_id, count=3):
    """The first ``count`` names (deterministic under KEY) whose right answers all differ."""
    chosen, seen = [], set()
    for i in range(200):
        name = f"s{i:03d}"
        numbers = {pool.problem: choose(pool, KEY, course_id, LEVEL, name) for pool in POOLS[LEVEL].values()}
        d_k, shape = _answers(numbers)
        if d_k not in {a for a, _ in seen} and shape not in {b for _, b in seen} and d_k != 64:
            chosen.append((name, numbers))
            seen.add((d_k, shape))
        if len(chosen) == count:
            return chosen
    raise AssertionError("no three students with different answers")


def _submit(course, student, notebook, extra=None):
    folder = course / "submitted" / student / LEVEL
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, str(folder / f"{LEVEL}.ipynb"))
    for name, text in (extra or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def _scores(course, student):
    from nbgrader.api import Gradebook

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", editions.COURSE_ID) as gb:
        notebook = gb.find_submission_notebook(LEVEL, LEVEL, student)
        return {g.name: g.auto_score for g in notebook.grades if g.auto_score is not None}, \
            {c.name: c.auto_comment or "" for c in notebook.comments}


@pytest.fixture(scope="module")
def course(tmp_path_factory, kernels):
    root = tmp_path_factory.mktemp("variants")
    source = root / "source_notebooks"
    source.mkdir()
    shutil.copy(ROOT / "notebooks" / f"{LEVEL}.ipynb", source)
    course = root / "course"
    run("course", "--course", str(course), "--source", str(source), cwd=root)
    return course


def test_variants_init_writes_a_key_only_its_owner_reads(course):
    shown = run("variants", "init", "--course", str(course), cwd=course.parent)
    key = course / variants.KEY_FILE
    assert "course key" in shown.stdout and stat.S_IMODE(key.stat().st_mode) == 0o600
    key.unlink()  # the test below writes a known key, so that the students it picks are fixed


def test_three_students_graded_on_their_own_numbers(course, tmp_path):
    from nbgrader.api import Gradebook

    key = course / variants.KEY_FILE
    fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, KEY.hex().encode())
    os.close(fd)
    (ann, ann_numbers), (ben, ben_numbers), (cy, cy_numbers) = _pick_students(editions.COURSE_ID)
    source = editions.read(ROOT / "notebooks" / f"{LEVEL}.ipynb")

    def right_for(numbers):
        d_k, shape = _answers(numbers)
        return submission(submission(source, "q1_1_d_k", f"d_k = {d_k}\n"), "q1_2_output_shape",
                          f"output_shape = {shape}\n")

    # Bad input first: each refused before anything is graded.
    _submit(course, ann, right_for(ann_numbers))
    with pytest.raises(VariantError, match=f"submitted/{ann}/"):
        grading.grade(course, workers=1)  # not a student of the gradebook yet
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", editions.COURSE_ID) as gb:
        for student in (ann, ben, cy):
            gb.add_student(student)
    (course / variants.OVERRIDES_FILE).write_text("student_id,assignment,problem,generation\nnobody,*,*,1\n")
    with pytest.raises(VariantError, match="line 2: student 'nobody' is not in the gradebook"):
        grading.grade(course, workers=1)
    (course / variants.OVERRIDES_FILE).unlink()
    os.chmod(key, 0o644)
    refused = run("grade", "--course", str(course), "--quiet", cwd=course.parent, ok=False)
    assert refused.returncode == 2 and "readable by others" in refused.stderr
    os.chmod(key, 0o600)
    assert not (course / "autograded").exists(), "nothing may be graded with a guessed variant"

    # The students' own files, as the server copies them into their homes.
    written = run("variants", "write", "--course", str(course), "--assignment", LEVEL, "--out", str(tmp_path / "homes"),
                  cwd=course.parent)
    assert "wrote 3 files" in written.stdout
    files = {s: json.loads((tmp_path / "homes" / s / f"{LEVEL}.json").read_text()) for s in (ann, ben, cy)}
    assert {s: {p: {k: v for k, v in n.items()} for p, n in f["numbers"].items()} for s, f in files.items()} == {
        ann: ann_numbers, ben: ben_numbers, cy: cy_numbers}

    # ben is right for his own numbers; cy copied ann's answers and brings ann's file along, in the
    # submission (where the kernel's home is made) and in the grader's environment.
    _submit(course, ben, right_for(ben_numbers))
    forged = json.dumps(files[ann] | {"student": cy})
    _submit(course, cy, right_for(ann_numbers), {f".mha-workbook/variants/{LEVEL}.json": forged, f"{LEVEL}.json": forged})
    elsewhere = tmp_path / "forged"
    elsewhere.mkdir()
    (elsewhere / f"{LEVEL}.json").write_text(forged)
    graded = run("grade", "--course", str(course), "--workers", "2", "--quiet", cwd=course.parent,
                 env={current.DIR_ENV: str(elsewhere)})
    assert "graded 3, failed 0" in graded.stdout

    full = {"q1_1_head_dim_test": 2, "q1_1_d_k_test": 1, "q1_2_output_shape_test": 1, "q1_2_why_test": 1}
    for student in (ann, ben):
        assert _scores(course, student)[0] == full, student
    scores, _ = _scores(course, cy)
    assert scores == full | {"q1_1_d_k_test": 0, "q1_2_output_shape_test": 0}
    # nbgrader's kernel failed cy's copied answers too (its numbers were handed, not the forged files'):
    # had it passed them, the re-check would have lowered its score and said so.
    assert "re-checked" not in graded.stdout
    autograded = editions.read(course / "autograded" / cy / LEVEL / f"{LEVEL}.ipynb")
    for cell in autograded.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") in ("q1_1_d_k_test", "q1_2_output_shape_test"):
            # (the graded edition's visible test checks the form; the hidden test, on cy's own numbers, fails it)
            assert cell.metadata["recheck"]["score"] == 0 and "Hidden tests: scored 0" in cell_text(cell)
    one = cy_numbers["q1_1"]
    assert f"d_model = {one['d_model']}" in json.dumps(autograded.cells and [c.get("outputs") for c in autograded.cells])

    rows = record.read(course / "variants" / f"{LEVEL}.csv")
    assert rows == {(s, p): (0, n) for s, numbers in ((ann, ann_numbers), (ben, ben_numbers), (cy, cy_numbers))
                    for p, n in numbers.items()}


def test_the_launcher_hands_the_numbers_to_the_kernel_and_nothing_else_does(tmp_path, monkeypatch):
    assert sandbox.HANDED_ENV == current.HANDED_ENV
    document = current.sheet_document(LEVEL, "ann") | {"numbers": {"q1_1": {"d_model": 256, "h": 8}}}
    box = sandbox_folder.Sandbox()
    try:
        with current.handing(document):
            command = box.command(["true"])
        launch = sandbox.Launch.from_json(command[command.index("--") - 1])
        assert json.loads(launch.variants) == document
        monkeypatch.setenv(current.HANDED_ENV, "forged")
        monkeypatch.setenv(current.DIR_ENV, "/forged")
        env = sandbox._environment(launch, {})
        assert json.loads(env[current.HANDED_ENV]) == document and current.DIR_ENV not in env
        no_numbers = sandbox.Launch.from_json(box.command(["true"])[-3])
        assert current.HANDED_ENV not in sandbox._environment(no_numbers, {})
    finally:
        box.close()


def test_level4s_handed_numbers_reach_the_kernel_and_the_recheck(tmp_path, kernels):
    """One student of level 4, graded once: 4.1's count for their own d_model and 4.2's scores for their own
    vectors, both typed in as numbers, score only if nbgrader's kernel and the re-check both judge their numbers;
    4.2's other answers are the solution's code, run on the vectors the data cell reads."""
    from nbgrader.api import Gradebook

    level = "level4_synthesis"
    source = tmp_path / "source_notebooks"
    source.mkdir()
    shutil.copy(ROOT / "notebooks" / f"{level}.ipynb", source)
    course = tmp_path / "course"
    run("course", "--course", str(course), "--source", str(source), cwd=tmp_path)
    fd = os.open(course / variants.KEY_FILE, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, KEY.hex().encode())
    os.close(fd)
    pools = POOLS[level]
    student, numbers = next((name, {p.problem: choose(p, KEY, editions.COURSE_ID, level, name) for p in pools.values()})
                            for name in (f"s{i:03d}" for i in range(50)))  # never the sheet's numbers (the pools)
    d_model = numbers["q4_1"]["d_model"]
    q, keys = numbers["q4_2"]["query"], numbers["q4_2"]["keys"]
    scaled = [round((q[0] * k[0] + q[1] * k[1]) / 2**0.5, 6) for k in keys]  # by hand, d_k = 2
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", editions.COURSE_ID) as gb:
        gb.add_student(student)
    nb = editions.read(ROOT / "notebooks" / f"{level}.ipynb")
    nb = submission(nb, "q4_1_params_512", f"params_512 = {4 * d_model**2}\n")
    nb = submission(nb, "q4_2_scaled_scores", f"scaled_scores = np.array({scaled})\n")
    folder = course / "submitted" / student / level
    folder.mkdir(parents=True)
    nbformat.write(nb, str(folder / f"{level}.ipynb"))
    graded = run("grade", "--course", str(course), "--workers", "1", "--quiet", cwd=course.parent)
    assert "graded 1, failed 0" in graded.stdout and "re-checked" not in graded.stdout

    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", editions.COURSE_ID) as gb:
        notebook = gb.find_submission_notebook(level, level, student)
        scores = {g.name: (g.auto_score, g.max_score) for g in notebook.grades if g.auto_score is not None}
    for test in ("q4_1_params_512_test", "q4_2_scaled_scores_test", "q4_2_weights_test", "q4_2_output_test"):
        assert scores[test][0] == scores[test][1] > 0, (test, scores)
    autograded = editions.read(course / "autograded" / student / level / f"{level}.ipynb")
    shown = json.dumps([c.get("outputs") for c in autograded.cells])
    assert f"d_model = {d_model}" in shown and "Yours only" in shown
    assert record.read(course / "variants" / f"{level}.csv")[student, "q4_1"] == (0, numbers["q4_1"])
