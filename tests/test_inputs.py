"""Every file a person writes that the grader or the hub reads, broken each way a file breaks.

Each broken form gives one line (which file, which line when there is one, what is wrong, what to
do) as an InputError, and the file is left byte for byte as it was. The readers: the roster and
the due dates (``hub up``), the overrides, the variants records and the course key (``grade``,
``report``, ``variants``), the course's ``nbgrader_config.py``, the grading status, and
``deploy/capacity.json`` (the hub benchmark). Then the commands themselves: ``grade`` and
``report`` with a broken variants record stop with that one line before anything is graded.
"""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from autograders.common.inputs import InputError
from autograders.grading import gradebooks, grading
from autograders.hub import hub, roster
from autograders.variants import choice, overrides, record
from benchmarks import bench_hub

ROOT = Path(__file__).resolve().parents[1]
KEY = "ab" * 32 + "\n"
GOOD_NUMBERS = json.dumps({"d_model": 96, "h": 3}).replace('"', '""')

# Each reader: (its file's name, a good text, a call that reads the file at ``path`` in folder ``folder``).
READERS = {
    "roster": ("roster.csv", "id,first_name,last_name,email\nann,Ann,,\n",
               lambda path: roster.read_roster(path, instructor="teacher")),
    "due dates": ("due.csv", "assignment,duedate\nlevel1_recognition,2026-12-08 17:00:00 UTC\n", hub.read_due),
    "overrides": ("overrides.csv", "student_id,assignment,problem,generation\nann,level1_recognition,q1_1_d_k,2\n",
                  lambda path: overrides.read_overrides(path, students={"ann"},
                                                        problems={"level1_recognition": {"q1_1_d_k"}})),
    "variants record": ("level1_recognition.csv",
                        f'student_id,problem,generation,numbers\nann,q1_1_d_k,0,"{GOOD_NUMBERS}"\n', record.read),
    "course key": ("variants.key", KEY, choice.read_key),
    "course config": ("nbgrader_config.py", "c = get_config()\nc.CourseDirectory.course_id = 'x'\n",
                      lambda path: gradebooks.course_config(path.parent)),
    "grading status": ("status.json", '{"ann/level1_recognition": {"ok": true}}\n',
                       lambda path: grading.load_status(path.parent.parent)),
    "capacity.json": ("capacity.json", json.dumps({"source": "x", "memory_per_student_mib": 305,
                                                   "cpu_per_student": 0.42, "memory_limit_factor": 2,
                                                   "cpu_limit_factor": 5}, indent=1),
                      bench_hub.read_capacity),
}
CSV = ("roster", "due dates", "overrides", "variants record")
JSON = ("grading status", "capacity.json")

# Each broken form: (which readers it applies to, how to break the good text, what the line must say, on
# which line of the file; the roster's words where they are its own).
FORMS = {
    "a control character": (tuple(READERS), lambda text: text.replace("\n", "\n\x07", 1),
                            "control character (U+0007)", 2),
    "binary": (tuple(READERS), lambda text: "\x00\x01\x02PK" + text, "not a text file", 1),
    "not UTF-8": (tuple(READERS), lambda text: text.encode("latin-1") + b"\xe9\xff\n", "not UTF-8 text", "last"),
    "empty": (tuple(READERS), lambda text: "", "empty", None),
    "a folder": (tuple(READERS), None, "a folder, not a file", None),
    "a broken row": (CSV, lambda text: text + "ann,extra,fields,here,and,more\n", "the header has", 3),
    "wrong columns": (CSV, lambda text: "who,what\n" + text.split("\n", 1)[1], "the first line must be", 1),
    "bad quoting": (CSV, lambda text: text + 'ann,"q1"x,0,1\n', "not valid CSV", 3),
    "bad JSON": (JSON, lambda text: text.rstrip()[:-1] + ",\n", "not valid JSON", None),
    "JSON of the wrong shape": (JSON, lambda text: "[1, 2]\n", "not a JSON object", None),
}
ROSTER_SAYS = {"wrong columns": "the header lacks the column(s)", "empty": "is empty"}
CASES = [(reader, form) for form, (readers, _, _, _) in FORMS.items() for reader in readers]
MORE = {  # broken forms of one file only: (reader, text, what the line must say, the line)
    "numbers not JSON": ("variants record", 'student_id,problem,generation,numbers\nann,q1_1_d_k,0,{d_model: 96\n',
                         "the numbers are not valid JSON", 2),
    "a control character in the numbers": (
        "variants record", 'student_id,problem,generation,numbers\nann,q1_1_d_k,0,"{""a"": ""\x1b[31m""}"\n',
        "control character (U+001B)", 2),
    "not a date": ("due dates", "assignment,duedate\nlevel1_recognition,next friday\n",
                   "'next friday' is not a date", 2),
    "a key not hex": ("course key", "not hex at all\n", "hexadecimal digits", None),
    "config not Python": ("course config", "c = get_config()\nc.CourseDirectory.course_id = 'x\n",
                          "not valid Python", 2),
    "config fails when run": ("course config", "c = get_config()\n\nc.Nope.x = undefined_name\n",
                              "fails when run (NameError", 3),
    "capacity lacks a number": ("capacity.json", '{"source": "x", "cpu_per_student": 0.42}',
                                "lacks memory_per_student_mib", None),
}


def place(tmp_path, reader, content):
    name = READERS[reader][0]
    folder = tmp_path / ".grading" if reader == "grading status" else tmp_path
    folder.mkdir(exist_ok=True)
    path = folder / name
    if content is None:
        path.mkdir()
    else:
        path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
        if reader == "course key":
            path.chmod(0o600)
    return path


def fingerprint(path):
    return "folder" if path.is_dir() else hashlib.sha256(path.read_bytes()).hexdigest()


def refused(path, reader):
    """The one line the reader gives for ``path``; the file is unchanged."""
    before = fingerprint(path)
    with pytest.raises(InputError) as caught:
        READERS[reader][2](path)
    assert fingerprint(path) == before
    line = str(caught.value)
    assert "\n" not in line and str(path) in line, line
    return caught.value


@pytest.mark.parametrize("reader", READERS)
def test_each_good_file_is_read(tmp_path, reader):
    name, text, read = READERS[reader]
    read(place(tmp_path, reader, text))


@pytest.mark.parametrize("reader, form", CASES, ids=[f"{r}: {f}" for r, f in CASES])
def test_each_broken_form_is_one_line_and_changes_nothing(tmp_path, reader, form):
    _, text, _ = READERS[reader]
    _, breaking, says, line = FORMS[form]
    if reader == "roster":
        says = ROSTER_SAYS.get(form, says)
    error = refused(place(tmp_path, reader, None if breaking is None else breaking(text)), reader)
    assert says in str(error), str(error)
    if line == "last":
        line = text.count("\n") + 1
    if line is not None and reader not in JSON:  # a JSON file's own lines: the decoder's
        assert f"line {line}:" in str(error) or f"line {line}" in str(error).split(":")[0], str(error)


@pytest.mark.parametrize("case", MORE)
def test_the_broken_forms_of_one_file(tmp_path, case):
    reader, text, says, line = MORE[case]
    error = refused(place(tmp_path, reader, text), reader)
    assert says in str(error) and (line is None or f"line {line}:" in str(error)), str(error)


def test_every_line_says_what_to_do(tmp_path):
    for reader, (_, text, _) in READERS.items():
        if reader == "roster":  # the roster's line says what happened instead: nothing was created
            continue
        folder = tmp_path / reader.replace(" ", "-")
        folder.mkdir()
        error = refused(place(folder, reader, "\x07" + text), reader)
        assert error.todo and str(error).endswith(error.todo), str(error)


# --- the commands, on a course with a broken variants record ----------------------------------------


@pytest.fixture
def broken_course(tmp_path, monkeypatch):
    """A course with variants, one submission, and a variants record with a broken row."""
    from nbgrader.api import Gradebook

    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}:{os.environ['PATH']}")  # nbgrader runs alembic

    course = tmp_path / "course"
    course.mkdir()
    (course / "nbgrader_config.py").write_text("c = get_config()\nc.CourseDirectory.course_id = 'demo'\n")
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", "demo") as gb:
        gb.add_student("ann")
    (course / "variants.key").write_text(KEY)
    (course / "variants.key").chmod(0o600)
    submitted = course / "submitted" / "ann" / "level1_recognition"
    submitted.mkdir(parents=True)
    (submitted / "level1_recognition.ipynb").write_text('{"cells": [], "metadata": {}, "nbformat": 4, '
                                                         '"nbformat_minor": 5}')
    broken = course / "variants" / "level1_recognition.csv"
    broken.parent.mkdir()
    broken.write_text(f'student_id,problem,generation,numbers\nann,q1_1_d_k,0,"{GOOD_NUMBERS}"\nann,q1_2\x07,0\n')
    return course, broken


def files_of(folder):
    return {str(p.relative_to(folder)): fingerprint(p) for p in sorted(folder.rglob("*"))}


@pytest.mark.slow
@pytest.mark.parametrize("command", [["grade", "--no-recheck"], ["report"]])
def test_grade_and_report_stop_at_a_broken_record_with_one_line(broken_course, command):
    course, broken = broken_course
    before = files_of(course)
    done = subprocess.run([sys.executable, "-m", "autograders", *command, "--course", str(course)],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 2, done.stdout + done.stderr
    line = done.stderr.strip()
    assert "Traceback" not in line and len(line.splitlines()) == 1, line
    assert f"{broken}, line 3: a control character (U+0007) in the text; restore it" in line, line
    assert files_of(course) == before, done.stdout + done.stderr  # nothing graded or written; the record as it was
