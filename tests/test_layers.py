"""The layers run one way: a module imports only from its own subpackage and from the layers below it.

From the bottom: the library; what students' Python gets and what editions and grading both read; the package's
face; the declarations (problems, their misconceptions and pools); each student's numbers and the checks; grading;
the editions; the hub; the command. Read from the source with ``ast``: every import statement, at module level or
inside a function, and ``importlib.import_module`` of a written name (docs/development.md, "The layers").
"""

import ast
from pathlib import Path

import pytest

from tests.test_structure import _absolute, module_name

ROOT = Path(__file__).resolve().parent.parent

# Lowest first; the packages of one layer import nothing of each other.
LAYERS = (
    ("mha_core",),                                  # the library
    ("autograders.student", "autograders.common"),  # what students' Python gets; what editions and grading both read
    ("autograders",),                               # the package's face (WrongAnswer): imported before any module
    ("autograders.problems",),                      # the declarations: numbers, answers, misconceptions, pools
    ("autograders.variants", "autograders.checks"),  # each student's numbers; the checks behind the tests
    ("autograders.intake",),                        # submissions into the course
    ("autograders.grading",),
    ("autograders.report",),                        # the class report, read from the graded course
    ("autograders.editions",),
    ("autograders.hub",),
    ("autograders.__main__",),                      # the command
)
LAYER = {unit: rank for rank, units in enumerate(LAYERS) for unit in units}


def unit_of(module):
    """The package of ``LAYERS`` that ``module`` (a dotted name) belongs to, or None (numpy, the standard library)."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if ".".join(parts[:end]) in LAYER:
            return ".".join(parts[:end])
    return None


def imports(path, name):
    """[(line, the import as written, the absolute module it names)] of the module ``name`` at ``path``."""
    found = []
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source, filename=str(path))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node.module, node.level, name, path.name == "__init__.py")
            targets = [f"{base}.{alias.name}" for alias in node.names] if node.module is None else [base]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"
              and node.args and isinstance(node.args[0], (ast.Constant, ast.JoinedStr))):
            first = node.args[0] if isinstance(node.args[0], ast.Constant) else node.args[0].values[0]
            if not isinstance(first, ast.Constant) or not isinstance(first.value, str):
                continue  # a name made at run time (its own package's modules: f"{__name__}.{...}")
            targets = [first.value]
        else:
            continue
        written = " ".join(" ".join(lines[node.lineno - 1:node.end_lineno]).split())
        found += [(node.lineno, written, target) for target in targets]
    return found


def against_the_order(root=ROOT):
    """Every import of a module of ``LAYERS``'s packages that reaches a package of its own layer or above."""
    found = []
    for path in sorted(p for package in ("autograders", "mha_core") for p in (root / package).rglob("*.py")):
        name = module_name(path, root)
        mine = unit_of(name)
        for line, written, target in imports(path, name):
            theirs = unit_of(target)
            if theirs is None or theirs == mine or target == mine:
                continue
            if LAYER[theirs] >= LAYER[mine]:
                found.append(f"{path.relative_to(root)}:{line} ({mine}) imports {theirs}: {written}")
    return found


def test_the_imports_run_one_way():
    found = against_the_order()
    assert not found, "imports against the layers (a module imports from its own package and the layers below):\n" + (
        "\n".join(found))


def test_every_subpackage_has_its_layer():
    subpackages = {module_name(p.parent) for p in (ROOT / "autograders").glob("*/__init__.py")}
    assert subpackages <= set(LAYER), f"subpackages with no layer: {sorted(subpackages - set(LAYER))}"


# --- the walk itself, on a made-up package ----------------------------------------------------------------------


@pytest.mark.parametrize("statement", [
    "from ..grading import report\n",
    "def f():\n    from autograders.grading.report import REPORT\n",
    "import autograders.hub.cli\n",
    "import importlib\nimportlib.import_module(f'autograders.editions.{1}')\n",
], ids=["relative", "inside a function", "absolute", "import_module"])
def test_an_import_upwards_is_named_with_its_module_and_line(tmp_path, statement):
    for package in ("autograders", "autograders/problems", "autograders/grading", "autograders/hub",
                    "autograders/editions", "mha_core"):
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "autograders/problems/level9.py").write_text("import numpy as np\nfrom . import declare\n" + statement)
    (tmp_path / "autograders/grading/report.py").write_text("from ..problems import level9\n")  # downwards: fine
    found = against_the_order(tmp_path)
    assert len(found) == 1 and found[0].startswith("autograders/problems/level9.py:"), found
    assert "(autograders.problems) imports autograders." in found[0] and statement.split("\n")[-2].strip() in found[0]


def test_a_layers_two_packages_import_nothing_of_each_other(tmp_path):
    for package in ("autograders", "autograders/checks", "autograders/variants", "mha_core"):
        (tmp_path / package).mkdir(parents=True, exist_ok=True)
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "autograders/checks/level9.py").write_text("from ..variants import levels\n")
    assert against_the_order(tmp_path) == [
        "autograders/checks/level9.py:1 (autograders.checks) imports autograders.variants: from ..variants import levels"]
