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

from autograders.editions import editions
from tests.conftest import points

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
    # every autograded test passed (a written answer would wait for manual grading)
    auto, manual, _ = points(LEVEL)
    assert (grades["ada"]["score"], grades["ada"]["max_score"]) == (str(auto), str(auto + manual))
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
    assert page.count("data:image/png;base64,") == 4  # scores, success rates, misconceptions, the item analysis


def test_a_bad_zip_among_good_ones_is_refused_alone(tmp_path, kernels):
    """One student's broken zip (a member escaping with ``../``) and a file that is not a
    zip: the others are graded, each bad one is one line with its reason, nothing is
    written outside the course, and grades.csv has a row for every zip with its status."""
    import shutil

    (tmp_path / "notebooks").mkdir()
    shutil.copyfile(ROOT / "notebooks" / f"{LEVEL}.ipynb", tmp_path / "notebooks" / f"{LEVEL}.ipynb")
    course = tmp_path / "course"
    editions.build_release(course, tmp_path / "notebooks", say=lambda message: None)
    source = editions.read(ROOT / "notebooks" / f"{LEVEL}.ipynb")
    zips = tmp_path / "lms" / LEVEL
    zips.mkdir(parents=True)
    _zip(zips / "ada.zip", source)
    with zipfile.ZipFile(zips / "mallory.zip", "w") as z:
        z.writestr(f"{LEVEL}.ipynb", nbformat.writes(source))
        z.writestr("../../evil.ipynb", "{}")
    (zips / "carol.zip").write_bytes(b"not a zip")

    graded = run("grade", "--course", str(course), "--zips", str(tmp_path / "lms"), "--backend", "serial", "--quiet",
                 cwd=tmp_path)
    assert "Traceback" not in graded.stdout + graded.stderr
    assert "graded 1, failed 2" in graded.stdout
    failed = sorted(line for line in graded.stdout.splitlines() if line.startswith("FAILED"))
    assert failed == [f"FAILED carol/{LEVEL}: carol.zip refused: not a readable zip file (File is not a zip file)",
                      f"FAILED mallory/{LEVEL}: mallory.zip refused: member '../../evil.ipynb' leaves the zip's folder"]
    assert not list(tmp_path.rglob("evil.ipynb"))
    assert not (course / "submitted/mallory").exists()

    rows = {r["student"]: r for r in csv.DictReader((course / "reports/grades.csv").open())}
    assert sorted(rows) == ["ada", "carol", "mallory"], "every zip the intake saw has a row"
    assert (rows["ada"]["status"], rows["ada"]["score"], rows["ada"]["reason"]) == ("graded", "5", "")
    assert rows["mallory"]["status"] == "refused" and "leaves the zip's folder" in rows["mallory"]["reason"]
    assert rows["carol"]["status"] == "refused" and "not a readable zip" in rows["carol"]["reason"]
    assert "mallory.zip refused" in (course / "reports/report.html").read_text()


def test_help_lists_every_command(kernels):
    result = subprocess.run([sys.executable, "-m", "autograders", "--help"], text=True, capture_output=True,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    for command in ("clean", "practice", "release", "course", "grade", "report"):
        assert command in result.stdout
