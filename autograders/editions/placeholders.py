"""A source notebook's numbers named, not typed: ``{{d_k}}`` filled in from the problem's declaration.

In ``notebooks/*.ipynb`` a number a statement, a solution or a rubric quotes from a problem's sheet
numbers is written ``{{d_k}}`` (the sheet's ``d_k`` of the problem whose ``### Problem 2.2`` heading
the cell follows), and a worked value as arithmetic on them, with a format after a colon:
``{{dot / sqrt(d_k):.1f}}`` gives ``5.0``. A number of another problem is qualified by its numbers' name:
``{{q2_1.d_model}}``. Every edition (the practice edition, the release, the answer key) is built from
the filled notebook (:func:`fill`): changing a problem's numbers is an edit of its ``Numbers(sheet=...)``
alone (``autograders/problems/``), and no ``{{`` reaches anybody.

Without a format a whole number is written as one (``40.0`` as ``40``), any other with ``:g``. The
arithmetic is ``+ - * / // % **``, parentheses and ``sqrt``; anything else stops the build, naming the
cell.
"""

import ast
import json
import math
import operator
import re

import nbformat

PLACEHOLDER = re.compile(r"\{\{([^{}]+)\}\}")
PROBLEM_HEADING = re.compile(r"^### Problem (\d+)\.(\d+)")

_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
              ast.USub: operator.neg, ast.UAdd: operator.pos}
_FUNCTIONS = {"sqrt": math.sqrt}


class PlaceholderError(ValueError):
    """A ``{{...}}`` of a source notebook that cannot be filled."""


def sheets():
    """{numbers' name (``q2_2``): the sheet's numbers, with what ``derive`` adds} of every declaration."""
    from ..problems import LEVELS

    return {answer.numbers.problem: answer.numbers.view(answer.numbers.sheet)
            for module in LEVELS.values() for answer in module.ANSWERS if answer.numbers.problem}


def value(expression, names):
    """The value of ``expression`` (a placeholder's text before its format) over ``names``."""
    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in names:
                raise PlaceholderError(f"no number named {node.id!r} here")
            return names[node.id]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            numbers = names.get(node.value.id)
            if not isinstance(numbers, dict) or node.attr not in numbers:
                raise PlaceholderError(f"no number {node.value.id}.{node.attr}")
            return numbers[node.attr]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
            return _OPERATORS[type(node.op)](walk(node.operand))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS
                and len(node.args) == 1 and not node.keywords):
            return _FUNCTIONS[node.func.id](walk(node.args[0]))
        raise PlaceholderError(f"{ast.unparse(node)!r} is not arithmetic on the numbers")

    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError:
        raise PlaceholderError("not an expression") from None
    return walk(tree)


def written(number, spec=""):
    """``number`` as the notebook shows it: with ``spec`` (a format), else a whole number as one."""
    if spec:
        return format(number, spec)
    if isinstance(number, float) and number.is_integer():
        return str(int(number))
    return f"{number:g}" if isinstance(number, float) else str(number)


def fill_text(text, names):
    """``text`` with each ``{{expression:format}}`` replaced by its value over ``names``."""
    def one(match):
        expression, _, spec = match[1].partition(":")
        try:
            return written(value(expression, names), spec.strip())
        except PlaceholderError as error:
            raise PlaceholderError(f"{match[0]}: {error}") from None
        except (ArithmeticError, ValueError) as error:
            raise PlaceholderError(f"{match[0]}: {error}") from None

    return PLACEHOLDER.sub(one, text)


def fill(nb, where="a notebook"):
    """A copy of the notebook ``nb`` with every placeholder filled: a cell's own names are the numbers of
    the problem whose ``### Problem`` heading it follows; every problem's are there by its name."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    known = sheets()
    problem = None
    for cell in nb.cells:
        heading = PROBLEM_HEADING.match(cell.source) if cell.cell_type == "markdown" else None
        if heading:
            problem = f"q{heading[1]}_{heading[2]}"
        if "{{" not in cell.source:
            continue
        names = {**known, **known.get(problem, {})}
        try:
            cell.source = fill_text(cell.source, names)
        except PlaceholderError as error:
            shown = f"Problem {problem[1:].replace('_', '.')}" if problem else "no problem"
            raise PlaceholderError(f"{where}, cell {cell.get('id')!r} ({shown}): {error}") from None
    return nb


def unfilled(nb):
    """The ``{{...}}`` left in a notebook's cells (none in a built edition)."""
    return [f"{cell.get('id')}: {match[0]}" for cell in nb.cells for match in PLACEHOLDER.finditer(cell.source)]
