"""The students' wheel: what a student's own Python gets in a graded course, and nothing else.

``mha-workbook student-wheel --out DIR`` builds ``mha_workbook_student-<version>-py3-none-any.whl`` from
this checkout: the library (``mha_core``) and the students' side of the workbook (``autograders`` holding
only ``autograders.student``: no declared answer, no check, no grading; see its docstring), with the
project's own dependencies. A hosted class's students' environment and the single-user image install it
instead of the whole project, so nothing a student can import holds an answer
(``tests/test_student_side.py``). The practice edition (``make lab``) keeps the whole project: it is for
learning, with its full checks and worked solutions.
"""

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NAME = "mha-workbook-student"
PARTS = ("mha_core", "autograders/__init__.py", "autograders/student")  # the rest of autograders stays out
DESCRIPTION = "The multi-head attention workbook as its students get it: the library and the notebooks' helpers"
PACKAGE_DATA = {"mha_core": ["templates/*.html"], "mha_core.learned": ["weights.npz"]}


def project():
    """The main project's ``[project]`` table (version, dependencies), read from pyproject.toml."""
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def pyproject(packages):
    """The students' project file: its name, the main project's version and dependencies, ``packages``."""
    main, q = project(), json.dumps  # a JSON string is a TOML basic string
    data = "".join(f"{q(k)} = {q(v)}\n" for k, v in PACKAGE_DATA.items())
    return (f'[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n\n'
            f"[project]\nname = {q(NAME)}\nversion = {q(main['version'])}\ndescription = {q(DESCRIPTION)}\n"
            f"requires-python = {q(main['requires-python'])}\ndependencies = {q(main['dependencies'])}\n\n"
            f"[tool.setuptools]\npackages = {q(packages)}\n\n[tool.setuptools.package-data]\n{data}")


def packages():
    """The import packages of :data:`PARTS` (``mha_core``, ``mha_core.explore``, ..., ``autograders.student``)."""
    found = ["autograders"]
    for part in PARTS:
        path = ROOT / part
        if path.is_dir():
            found += [".".join(p.relative_to(ROOT).parts) for p in sorted([path, *path.rglob("*")])
                      if p.is_dir() and (p / "__init__.py").exists()]
    return sorted(set(found))


def build(out):
    """Build the students' wheel into the folder ``out``; return its path."""
    out = Path(out).resolve()
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mha-student-wheel-") as tmp:
        tree = Path(tmp) / "project"
        skip = shutil.ignore_patterns("__pycache__", "*.pyc")
        for part in PARTS:
            source, target = ROOT / part, tree / part
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_dir():
                shutil.copytree(source, target, ignore=skip)
            else:
                shutil.copy(source, target)
        (tree / "pyproject.toml").write_text(pyproject(packages()))
        before = set(out.glob("*.whl"))
        done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                               "--wheel-dir", str(out), str(tree)], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"building the students' wheel failed:\n{done.stderr[-3000:]}")
    made = sorted(set(out.glob("mha_workbook_student-*.whl")) - before) or sorted(out.glob("mha_workbook_student-*.whl"))
    return made[-1]


if __name__ == "__main__":  # `python autograders/editions/student_wheel.py OUT`: the standard library only (deploy/Dockerfile)
    print(build(sys.argv[1] if len(sys.argv) > 1 else "dist"))
