"""One problem, one place: in the product's code (autograders/, mha_core/), each misconception's tag is written in
one file, its declaration (a module of autograders/problems, or the students' own tags), and each declared answer's
grade_id in at most two: its declaration and at most one hand-written diagnosis. Everything else refers to the
declaration (``shared.TRANSPOSED``, ``problems.BATCH_DIMENSION``, ``answer.id``).

"Written" means a string literal of the code: docstrings and comments, which quote an id as an example, are
not counted. A tag counts in ``"tag"`` and in a mistake's key ``"tag/detail"``.
"""

import ast
import pathlib

import pytest

from autograders.problems.misconception import NAMES
from autograders.problems import LEVELS

ROOT = pathlib.Path(__file__).resolve().parents[1]
PRODUCT = sorted(p for package in ("autograders", "mha_core") for p in (ROOT / package).rglob("*.py"))
ANSWER_IDS = [answer.id for module in LEVELS.values() for answer in module.ANSWERS]

# The same word with another meaning: "raised" is also a reply's kind in the grading protocol; "float32" also names
# one of the wrong functions 4.6's check computes (its table's key, the mistake, not the tag).
HOMONYMS = {"raised": {"autograders/student/protocol.py", "autograders/student/serve.py"},  # a message of the wire
            "float32": {"autograders/checks/today.py"}}


def literals(path):
    """The string literals of ``path``'s code, docstrings left out."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)
                  and isinstance(node.body[0].value, ast.Constant)}
    return {node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings}


@pytest.fixture(scope="session")
def files_writing():
    """``files_writing(match, ignore=())``: the product's files with a literal ``match`` takes. The product is
    parsed once, by the one worker that runs these tests (FAST_SHARED in tests/conftest.py), not at collection."""
    written = {str(path.relative_to(ROOT)): literals(path) for path in PRODUCT}

    def files(match, ignore=()):
        return sorted(name for name, found in written.items() if name not in ignore and any(map(match, found)))

    return files


@pytest.mark.parametrize("tag", list(NAMES))
def test_a_tag_is_written_once_where_it_is_declared(tag, files_writing):
    found = files_writing(lambda s: s == tag or s.startswith(tag + "/"), HOMONYMS.get(tag, ()))
    assert len(found) == 1, f"{tag!r} is written in {found}: use its declared Misconception"
    assert found[0].startswith("autograders/problems/") or found[0] == "autograders/student/tags.py", found


@pytest.mark.parametrize("answer_id", ANSWER_IDS)
def test_an_answer_is_written_in_two_files_at_most(answer_id, files_writing):
    found = files_writing(lambda s: answer_id in s)
    assert any(name.startswith("autograders/problems/") for name in found), found
    assert len(found) <= 2, f"{answer_id!r} is written in {found}"


def test_the_scan_sees_a_literal_and_not_a_docstring(tmp_path):
    path = tmp_path / "example.py"
    path.write_text('"""Mentions "transposed" and q2_2_scaled_score."""\n\ndef f():\n    """q1_1_d_k"""\n'
                    '    return "transposed/rows", f"{1}q2_2_why"\n')
    assert literals(path) == {"transposed/rows", "q2_2_why"}
