"""``python -m autograders feedback``: after grading by hand in the gradebook (as the
formgrader does it), the HTML feedback is written again with the manual score and
comment, still without the hidden tests' source; ``--student`` touches only that
student's files; ``--db`` reads another gradebook; a student whose autograded
notebook is missing or broken fails alone, with the reason.

One small class (2 students x level 1) is released and graded once for the module;
each test works on a copy of it.
"""

import html
import re
import shutil
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograders import editions, gradebooks, grading
from autograders.__main__ import main
from autograders.feedback_html import hidden_lines
from benchmarks.bench_grading import make_class

ROOT = Path(__file__).resolve().parent.parent
LEVEL = "level1_recognition"
WRITTEN = "q1_2_explain"  # the written answer (2 points), graded by hand
COMMENT = "Right: each head sees its own d_k-wide slice, then W_O mixes them."


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("feedback")
    (tmp / "notebooks").mkdir()
    shutil.copyfile(ROOT / "notebooks" / f"{LEVEL}.ipynb", tmp / "notebooks" / f"{LEVEL}.ipynb")
    editions.build_release(tmp / "course", tmp / "notebooks", say=lambda message: None)
    make_class(tmp / "course", ["ada", "bob"], [LEVEL], seed=3, blank_every=0)
    summary = grading.grade(tmp / "course", backend="serial", recheck=False)  # two submissions: no pool to start
    assert sorted(summary.graded) == [("ada", LEVEL), ("bob", LEVEL)], summary.failed
    return tmp / "course"


@pytest.fixture
def course(graded, tmp_path):
    return Path(shutil.copytree(graded, tmp_path / "course"))


def grade_by_hand(course, student, score, comment, db_url=None):
    """What the formgrader's API does on a manual score and a comment; return the
    notebook's (score, max_score) after it."""
    own_url, course_id = gradebooks.course_db_url(course)
    with Gradebook(db_url or own_url, course_id) as gb:
        grade = gb.find_grade(WRITTEN, LEVEL, LEVEL, student)
        grade.manual_score, grade.needs_manual_grade = score, False
        gb.find_comment(WRITTEN, LEVEL, LEVEL, student).manual_comment = comment
        gb.db.commit()
        notebook = gb.find_submission_notebook(LEVEL, LEVEL, student)
        return notebook.score, notebook.max_score


def hidden_sources():
    nb = editions.read(ROOT / "notebooks" / f"{LEVEL}.ipynb")
    return {line.strip() for cell in nb.cells for line in hidden_lines(cell.source) if len(line.strip()) > 3}


def feedback(course, student):
    raw = (course / "feedback" / student / LEVEL / f"{LEVEL}.html").read_text(encoding="utf-8")
    return raw, html.unescape(re.sub(r"<[^>]+>", "", raw))


def run(capsys, *args):
    assert main(["feedback", *args, "--quiet"]) == 0
    return capsys.readouterr().out


def test_manual_score_and_comment_shown_hidden_tests_not(course, capsys):
    assert COMMENT not in feedback(course, "ada")[1]
    score, max_score = grade_by_hand(course, "ada", 1.5, COMMENT)

    out = run(capsys, "--course", str(course))
    assert "feedback written 2, failed 0" in out

    raw, text = feedback(course, "ada")
    assert f"{LEVEL} (Score: {round(score, 2)} / {round(max_score, 2)})" in text, "the total with the manual score"
    assert "Written response (Score: 1.5 / 2.0)" in text
    assert COMMENT in text
    secrets = hidden_sources()
    assert any("hidden=True" in s for s in secrets)
    for student in ("ada", "bob"):
        raw, text = feedback(course, student)
        assert not [s for s in secrets if s in raw or s in text], f"{student}'s feedback shows hidden test source"
        assert "hidden tests: not shown" in text


def test_student_only_rewrites_that_students_files(course, capsys):
    grade_by_hand(course, "ada", 2.0, COMMENT)
    grade_by_hand(course, "bob", 0.5, COMMENT)
    files = {s: course / "feedback" / s / LEVEL / f"{LEVEL}.html" for s in ("ada", "bob")}
    before = {s: p.stat().st_mtime_ns for s, p in files.items()}

    out = run(capsys, "--course", str(course), "--student", "ada", "--assignment", LEVEL)
    assert "feedback written 1, failed 0" in out
    assert files["ada"].stat().st_mtime_ns != before["ada"] and COMMENT in feedback(course, "ada")[1]
    assert files["bob"].stat().st_mtime_ns == before["bob"] and COMMENT not in feedback(course, "bob")[1]


def test_db_reads_the_given_gradebook(course, capsys):
    other = course.parent / "elsewhere.db"
    shutil.copyfile(course / "gradebook.db", other)
    grade_by_hand(course, "bob", 1.0, COMMENT, db_url=f"sqlite:///{other}")

    out = run(capsys, "--course", str(course), "--student", "bob", "--db", f"sqlite:///{other}")
    assert "feedback written 1, failed 0" in out
    assert COMMENT in feedback(course, "bob")[1] and "Written response (Score: 1.0 / 2.0)" in feedback(course, "bob")[1]


def test_missing_or_broken_autograded_notebook_fails_alone(course, capsys):
    notebook = course / "autograded/bob" / LEVEL / f"{LEVEL}.ipynb"
    notebook.unlink()
    grade_by_hand(course, "ada", 1.0, COMMENT)

    out = run(capsys, "--course", str(course))
    assert f"FAILED bob/{LEVEL}: no autograded notebook autograded/bob/{LEVEL}/{LEVEL}.ipynb" in out
    assert "feedback written 1, failed 1" in out
    assert COMMENT in feedback(course, "ada")[1]
    assert not (course / "feedback/bob" / LEVEL).exists(), "bob's stale feedback is removed"

    notebook.write_text("{not json")
    out = run(capsys, "--course", str(course), "--student", "bob")
    assert f"FAILED bob/{LEVEL}: NotJSONError: Notebook does not appear to be JSON" in out
    assert "feedback written 0, failed 1" in out
