"""A class of 30 with variants, graded twice by ``mha-workbook grade`` (level 1 only: the cheapest):
right for their own numbers → full marks; copied from a friend → the varied points lost and listed
in the report's copying list with the friend; blank → zero. The second grading is a fresh clone's
(the files git tracks, copied to a new folder; an empty home; a course that clone builds, given the
same key and the same submissions): it gives the same ``variants/*.csv`` and the same scores."""

import csv
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import nbformat

from autograders.editions import editions
from autograders.variants import choose
from autograders.variants import course as variants
from autograders.variants.levels import POOLS
from tests.conftest import submission
from tests.test_variants_grading import KEY, LEVEL, ROOT, _answers, run

AUTOGRADED = 5  # level 1's autograded points: head_dim 2, d_k 1, output_shape 1, why 1
VARIED = 2  # d_k and output_shape


def _numbers(student):
    return {pool.problem: choose(pool, KEY, editions.COURSE_ID, LEVEL, student) for pool in POOLS[LEVEL].values()}


def _grades(path):
    return {r["student"]: (r["score"], r["status"]) for r in csv.DictReader(path.open()) if r["assignment"] == LEVEL}


def _fresh_clone():
    """The checkout as a fresh clone holds it (the files git tracks, as they are now) in a new folder
    that the sandbox's throwaway user can read, as a clone would be."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    clone = Path(tempfile.mkdtemp(prefix="mha-clone-"))
    for name in filter(None, listed.decode().split("\0")):
        if (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / name, clone / name)
    for path in [clone, *clone.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return clone


def test_a_class_of_30_graded_twice(tmp_path, kernels):
    from nbgrader.api import Gradebook

    source_dir = tmp_path / "source_notebooks"
    source_dir.mkdir()
    shutil.copy(ROOT / "notebooks" / f"{LEVEL}.ipynb", source_dir)
    course = tmp_path / "course"
    run("course", "--course", str(course), "--source", str(source_dir), cwd=tmp_path)
    fd = os.open(course / variants.KEY_FILE, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, KEY.hex().encode())
    os.close(fd)

    students = [f"p{i:02d}" for i in range(30)]
    numbers = {s: _numbers(s) for s in students}
    answers = {s: _answers(numbers[s]) for s in students}
    copiers = {}  # copier: the friend whose answers differ from the copier's own in both problems
    for student in students[-4:-1]:
        copiers[student] = next(f for f in students[:26]
                                if all(a != b for a, b in zip(answers[f], answers[student])))
    blank = students[-1]
    source = editions.read(ROOT / "notebooks" / f"{LEVEL}.ipynb")
    released = editions.read(course / "release" / LEVEL / f"{LEVEL}.ipynb")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", editions.COURSE_ID) as gb:
        for student in students:
            gb.add_student(student)
    for student in students:
        d_k, shape = answers[copiers.get(student, student)]
        nb = released if student == blank else submission(
            submission(source, "q1_1_d_k", f"d_k = {d_k}\n"), "q1_2_output_shape", f"output_shape = {shape}\n")
        folder = course / "submitted" / student / LEVEL
        folder.mkdir(parents=True)
        nbformat.write(nb, str(folder / f"{LEVEL}.ipynb"))

    started = time.perf_counter()
    first = run("grade", "--course", str(course), "--workers", "2", "--quiet", "--no-feedback", cwd=tmp_path)
    seconds = time.perf_counter() - started
    assert "graded 30, failed 0" in first.stdout, first.stdout
    print(f"30 level-1 submissions with variants, 2 workers: {seconds:.0f} s")
    grades = _grades(course / "reports" / "grades.csv")
    recorded = (course / "variants" / f"{LEVEL}.csv").read_bytes()
    assert len(recorded.splitlines()) == 1 + 2 * 30  # a row per student and problem
    for student in students:
        expected = 0 if student == blank else AUTOGRADED - VARIED if student in copiers else AUTOGRADED
        assert grades[student] == (str(expected), "graded"), student

    page = (course / "reports" / "report.html").read_text()
    listed = page[page.index("Answers right for another student"):page.index("Late submissions")]
    for copier, friend in copiers.items():
        assert listed.count(f"<td>{copier}</td>") >= 2, f"{copier} copied both answers"
        assert friend in listed
    assert listed.count("<tr><td>") == 2 * len(copiers), "only the copiers are listed"

    clone, home, fresh = _fresh_clone(), tmp_path / "home", tmp_path / "fresh course"
    try:
        home.mkdir()
        env = {"PYTHONPATH": str(clone), "HOME": str(home)}
        run("course", "--course", str(fresh), "--source", str(source_dir), cwd=clone, env=env)
        shutil.copy2(course / variants.KEY_FILE, fresh / variants.KEY_FILE)
        shutil.copytree(course / "submitted", fresh / "submitted")
        with Gradebook(f"sqlite:///{fresh / 'gradebook.db'}", editions.COURSE_ID) as gb:
            for student in students:
                gb.add_student(student)
        again = run("grade", "--course", str(fresh), "--workers", "2", "--quiet", "--no-feedback", cwd=clone, env=env)
    finally:
        shutil.rmtree(clone, ignore_errors=True)
    assert "graded 30, failed 0" in again.stdout
    assert (fresh / "variants" / f"{LEVEL}.csv").read_bytes() == recorded
    assert _grades(fresh / "reports" / "grades.csv") == grades
