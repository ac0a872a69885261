"""The instructor command end to end, in a subprocess as an instructor runs it:
``course``, ``grade --zips`` (an LMS's zip files, through nbgrader's zip_collect),
``grade --submissions --student`` (one student regraded), ``report``."""

import csv
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat

from autograders import editions

ROOT = Path(__file__).resolve().parent.parent
LEVEL = "level1_recognition"


def run(*args, cwd):
    env = editions.nbgrader_env() | {"PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "autograders", *args], cwd=cwd, env=env, text=True,
                            capture_output=True, timeout=600)
    assert result.returncode == 0, f"{args} exited {result.returncode}:\n{result.stdout}\n{result.stderr}"
    return result


def _zip(path, notebook):
    with zipfile.ZipFile(path, "w") as z:
        z.writestr(f"{LEVEL}.ipynb", nbformat.writes(notebook))


def test_course_grade_zips_regrade_and_report(tmp_path, kernels):
    course = tmp_path / "course"
    run("course", "--course", str(course), cwd=tmp_path)
    assert (course / "nbgrader_config.py").exists() and (course / "gradebook.db").exists()
    assert sorted(p.name for p in (course / "release").iterdir()) == [p.stem for p in editions.assignments()]

    # An LMS export: one zip per student, named after the student.
    source = editions.read(ROOT / "notebooks" / f"{LEVEL}.ipynb")
    blank = editions.read(course / "release" / LEVEL / f"{LEVEL}.ipynb")
    zips = tmp_path / "lms" / LEVEL
    zips.mkdir(parents=True)
    _zip(zips / "ada.zip", source)
    _zip(zips / "bob.zip", blank)
    graded = run("grade", "--course", str(course), "--zips", str(tmp_path / "lms"), "--workers", "2", cwd=tmp_path)
    assert "graded 2, failed 0, in " in graded.stdout and "submissions/min" in graded.stdout
    assert "[" + "#" * 30 + "] 2/2 (0 failed)" in graded.stderr, "a progress bar on stderr"
    assert (course / "submitted/ada" / LEVEL / f"{LEVEL}.ipynb").exists()
    assert (course / "feedback/bob" / LEVEL / f"{LEVEL}.html").exists()

    grades = {r["student"]: r for r in csv.DictReader((course / "reports/grades.csv").open())}
    # every autograded test passed; the written answer (2 points) waits for manual grading
    assert (grades["ada"]["score"], grades["ada"]["max_score"]) == ("5", "7")
    assert grades["bob"]["score"] == "0"

    # bob resubmits (a folder in nbgrader's submitted/ layout); only bob is regraded
    resubmitted = tmp_path / "resubmitted" / "bob" / LEVEL
    resubmitted.mkdir(parents=True)
    nbformat.write(source, str(resubmitted / f"{LEVEL}.ipynb"))
    ada_feedback = course / "feedback/ada" / LEVEL / f"{LEVEL}.html"
    stamp = ada_feedback.stat().st_mtime_ns
    again = run("grade", "--course", str(course), "--submissions", str(tmp_path / "resubmitted"), "--student", "bob",
                "--quiet", "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert "graded 1, failed 0" in again.stdout
    assert ada_feedback.stat().st_mtime_ns == stamp
    grades = {r["student"]: r for r in csv.DictReader((tmp_path / "out/grades.csv").open())}
    assert grades["bob"]["score"] == grades["ada"]["score"]

    shown = run("report", "--course", str(course), "--out", str(tmp_path / "report"), cwd=tmp_path)
    assert "report.html" in shown.stdout
    page = (tmp_path / "report/report.html").read_text()
    assert page.count("data:image/png;base64,") == 3


def test_help_lists_every_command(kernels):
    result = subprocess.run([sys.executable, "-m", "autograders", "--help"], text=True, capture_output=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    for command in ("clean", "practice", "release", "course", "grade", "report"):
        assert command in result.stdout
