"""Answers right for another student's numbers and wrong for one's own: the report's copying list.

With variants on, each student's numbers are in ``variants/<assignment>.csv``. For each varied
answer cell of each autograded notebook, the answer is read from its cell (never run: a literal,
or arithmetic on literals with ``sqrt``, ``exp`` and ``array`` of numpy or math, as a copied
``d_k = 768 // 12`` or ``40 / np.sqrt(64)`` is); when it is not right for the student's own
numbers but right, at the check's tolerance, for another student's (different) numbers, the pair
is listed. Nothing is deducted: the teacher decides. An answer computed by other code (a call
of the student's own function) is not read, so it is never listed.
"""

import ast
import math
import operator
from pathlib import Path

import numpy as np

from ..common.literals import assignments

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}
_CALLS = {"sqrt": math.sqrt, "exp": math.exp, "array": lambda x: x, "float": float, "int": int}


class _Unread(Exception):
    pass


def _value(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_value(e) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        value = _value(node.operand)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _value(node.left), _value(node.right)
        if isinstance(left, tuple) or isinstance(right, tuple) or (isinstance(node.op, ast.Pow) and abs(right) > 64):
            raise _Unread()
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if isinstance(node.func, ast.Attribute) and getattr(node.func.value, "id", None) not in ("np", "numpy", "math"):
            raise _Unread()
        if name in _CALLS:
            return _CALLS[name](_value(node.args[0]))
    raise _Unread()


def read_answer(source, name):
    """The value the last top-level ``name = ...`` of ``source`` gives, when it can be read without
    running anything; else None."""
    found = None
    for assigned, node in assignments(source):
        if assigned == name:
            try:
                found = _value(node)
            except (_Unread, ArithmeticError, ValueError, TypeError, OverflowError):
                found = None
    return found


def _equal(a, b, tolerance):
    try:
        a, b = np.asarray(a, float), np.asarray(b, float)
    except (TypeError, ValueError):
        return False
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= tolerance))


def copied(course):
    """[{assignment, problem, student, answer, whose: [students]}] over the course's recorded variants."""
    from ..variants import record
    from ..variants.levels import POOLS

    course = Path(course)
    found = []
    for path in sorted((course / "variants").glob("*.csv")):
        assignment = path.stem
        numbers = record.read(path)  # {(student, problem): (generation, numbers)}
        students = sorted({s for s, _ in numbers})
        cells = {s: _answer_cells(course, s, assignment) for s in students}  # each notebook read once
        for answer_id, pool in sorted(POOLS.get(assignment, {}).items()):
            rights = {s: pool.answer(_entry(numbers[s, pool.problem][1])) for s in students if (s, pool.problem) in numbers}
            for student in students:
                source = cells[student].get(answer_id)
                name = pool.notes.get("variable", answer_id.split("_", 2)[2])  # q1_1_d_k: d_k
                value = None if source is None else read_answer(source, name)
                if value is None or student not in rights or _equal(value, rights[student], pool.tolerance):
                    continue
                whose = [other for other, right in rights.items() if other != student
                         and numbers[other, pool.problem][1] != numbers[student, pool.problem][1]
                         and _equal(value, right, pool.tolerance)]
                if whose:
                    found.append({"assignment": assignment, "problem": answer_id, "student": student,
                                  "answer": _show(value), "whose": whose})
    return found


def _entry(numbers):
    return {name: tuple(value) if isinstance(value, list) else value for name, value in numbers.items()}


def _answer_cells(course, student, assignment):
    """{grade_id: source} of the code cells of the student's autograded notebook ({} when there is none)."""
    import nbformat

    path = course / "autograded" / student / assignment / f"{assignment}.ipynb"
    if not path.exists():
        return {}
    cells = {}
    for cell in nbformat.read(str(path), as_version=4).cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type == "code" and grade_id:
            cells.setdefault(grade_id, cell.source)  # a cell pasted twice: the first, as nbgrader grades it
    return cells


def _show(value):
    if isinstance(value, tuple):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    return f"{value:.6g}" if isinstance(value, float) else str(value)
