"""What students' Python gets holds no answer (autograders/student, the students' wheel, the graded kernel).

The students' side is ``mha_core`` and ``autograders.student``: tried here as a student would try it, by
importing everything it holds, alone, and by reading every file for what only the grader keeps (the
declarations' messages, hidden tests, solutions); the graded kernel is attacked in tests/corpus
(``imports-the-answers``).
"""

import ast
import json
import pkgutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import autograders.student as student
from autograders.editions import student_wheel
from autograders.problems import LEVELS

ROOT = Path(__file__).resolve().parents[1]
STUDENT = ROOT / "autograders" / "student"
GRADER_ONLY = ("autograders.checks", "autograders.problems", "autograders.intake", "autograders.grading",
               "autograders.report", "autograders.editions", "autograders.variants", "autograders.hub", "autograders.common")


def _files():
    return sorted(p for p in STUDENT.rglob("*.py") if "__pycache__" not in p.parts)


def _imported(path):
    """The absolute names of the modules ``path`` imports (relative imports resolved)."""
    package = "autograders.student"
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = ".".join(p for p in (base, node.module) if p)
            found += [module] + [f"{module}.{a.name}" for a in node.names]
    return found


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name)
def test_the_students_side_imports_nothing_the_grader_keeps(path):
    grader = [m for m in _imported(path) if m.startswith(GRADER_ONLY)]
    assert grader == [], f"{path.name} imports {grader}: the students' side must stand alone"


def _messages():
    """Every fixed message a declared mistake gives (what would tell a student which answer is wrong)."""
    found = set()
    for module in LEVELS.values():
        for answer in module.ANSWERS:
            for mistake in answer.mistakes:
                if isinstance(mistake.says, str) and len(mistake.says) > 20:
                    found.add(mistake.says)
    return found


def test_no_file_of_the_students_side_holds_a_solution_a_hidden_test_or_a_mistake_s_message():
    messages = _messages()
    assert len(messages) > 20  # the scan has something to look for
    for path in _files():
        text = path.read_text()
        for mark in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden=True"):
            assert mark not in text, (path.name, mark)
        leaked = [m for m in messages if m in text]
        assert leaked == [], (path.name, leaked[:3])


def test_no_file_of_the_library_holds_a_marker_of_a_solution_or_a_hidden_test():
    """mha_core is the other half of what students get: no file of it holds a marker (not even ``hidden=True``
    as a keyword argument of its own: the search of a student's environment would not tell it from one)."""
    files = [p for p in (ROOT / "mha_core").rglob("*") if p.is_file() and p.suffix in (".py", ".html", ".json")]
    assert len(files) > 20
    for path in files:
        text = path.read_text()
        assert not [m for m in ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden=True") if m in text], path


ALONE = """
import importlib, json, pkgutil, sys
sys.path.insert(0, sys.argv[1])
sys.path.append(sys.argv[2])  # numpy and the rest, without the .pth files (the editable install's finder)
import autograders, autograders.student
assert autograders.__file__.startswith(sys.argv[1]), autograders.__file__
imported = []
for info in pkgutil.iter_modules(autograders.student.__path__):
    importlib.import_module("autograders.student." + info.name)
    imported.append(info.name)
refused = []
for name in %r:
    try:
        importlib.import_module(name)
    except ImportError:
        refused.append(name)
from autograders.student import forms, numbers
forms.form("d_k", 64, "number")
numbers.show("level2_application", "q2_2", sheet={"d_k": 64, "dot": 40.0}, symbols={"dot": "q k^T"})
print(json.dumps({"imported": imported, "refused": refused,
                  "packages": sorted(m.name for m in pkgutil.iter_modules(autograders.__path__))}))
"""


def _alone(site, tmp_path):
    """Run :data:`ALONE` with ``site`` (a folder holding autograders/ and mha_core/) first on the path."""
    import sysconfig

    purelib = sysconfig.get_paths()["purelib"]
    done = subprocess.run([sys.executable, "-S", "-c", ALONE % (GRADER_ONLY,), str(site), purelib], capture_output=True, text=True,
                          cwd=tmp_path, timeout=120, env={"PATH": "/usr/bin:/bin", "MPLBACKEND": "Agg",
                                                          "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr[-3000:]
    *said, last = done.stdout.strip().splitlines()
    return said, json.loads(last)


def test_the_students_side_runs_alone_and_reaches_nothing_else(tmp_path, kernels):
    """A copy of what a graded kernel is shown (autograders/__init__.py, autograders/student, mha_core) imports
    every module of the students' side, checks a form and shows a student's numbers, and can import none of
    the grader's packages."""
    import shutil

    from autograders.grading.sandbox import STUDENT_SIDE

    site = tmp_path / "site"
    for part in STUDENT_SIDE:
        (site / part).parent.mkdir(parents=True, exist_ok=True)
        copy = shutil.copytree if (ROOT / part).is_dir() else shutil.copy
        copy(ROOT / part, site / part)
    said, seen = _alone(site, tmp_path)
    modules = {info.name for info in pkgutil.iter_modules(student.__path__)}
    assert set(seen["imported"]) == modules and seen["refused"] == list(GRADER_ONLY) and seen["packages"] == ["student"]
    assert said[0].startswith("✔ Answer recorded: `d_k` = 64, a number.") and "q k^T = 40" in said[1]


@pytest.mark.slow
def test_the_students_wheel_holds_the_students_side_only(tmp_path):
    """``mha-workbook student-wheel``: the wheel a graded class's students install holds mha_core and
    autograders.student, no other module of autograders; installed alone it runs as above."""
    wheel = student_wheel.build(tmp_path / "dist")
    names = zipfile.ZipFile(wheel).namelist()
    ours = [n for n in names if not n.startswith(("mha_core/", "mha_workbook_student-"))]
    assert ours and all(n == "autograders/__init__.py" or n.startswith("autograders/student/") for n in ours), ours
    assert {f"autograders/student/{p.name}" for p in _files()} <= set(names)
    assert "mha_core/learned/weights.npz" in names  # the package data came along
    metadata = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA"))).decode()
    assert "Requires-Dist: numpy" in metadata and "Requires-Dist: nbgrader" in metadata
    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site), str(wheel)],
                   check=True, timeout=300)
    _, seen = _alone(site, tmp_path)
    assert seen["refused"] == list(GRADER_ONLY) and seen["packages"] == ["student"]
