"""A shape error inside a student's function, explained: which operation, which operands, which shapes.

numpy reports a shape mismatch in its own words ("operands could not be broadcast together with
shapes (2,5,5) (2,5)", "matmul: Input operand 1 has a mismatch in its core dimension 0 ...").
:func:`explain` turns it into a sentence for the student, and names the classic bugs behind it:

- ``K.T`` on an array of 3 or more axes reverses every axis (the head or batch axis too):
  ``np.swapaxes(K, -1, -2)`` was meant (tag ``transposed-all-axes``);
- a sum or maximum without ``keepdims=True`` (the softmax's row sums, shape (h, n), divide the
  (h, n, n) scores: numpy lines them up with the wrong axes; tag ``no-keepdims``);
- heads summed instead of concatenated: ``heads.sum(axis=-3) @ W_O`` (with or without keepdims,
  ``sum(heads)``, a mean), or any array one head wide, (..., n, d_k), multiplied by W_O, which takes
  the h heads side by side (h · d_k rows, with ``h`` the function's own variable; tag ``heads-summed``).
  keepdims is never the advice for a matrix product.

When the error was raised in this process, the traceback gives the line of the student's code,
the exact expression (Python's column positions) and the shapes of the names in it (read from the
frame's variables: nothing of the student's is run again). When only the message is known (the
re-check runs the function in another process and sends back its type and message), the shapes
in numpy's message are used. Nothing here imports the rest of the checks (no import cycle with
:mod:`.feedback`, which calls :func:`explain`).
"""

import ast
import linecache
import os
import re

import numpy as np

import mha_core

from . import tags

TAGS = (tags.TRANSPOSED_ALL_AXES, tags.NO_KEEPDIMS, tags.HEADS_SUMMED, tags.SHAPE_ERROR)  # what explain() names

# numpy's site-packages, mha_core/ and autograders/: a frame in these is not the student's
_LIBRARY_DIRS = (os.path.dirname(os.path.dirname(os.path.abspath(np.__file__))) + os.sep,
                 os.path.dirname(os.path.abspath(mha_core.__file__)) + os.sep,
                 os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep)
_BROADCAST = re.compile(r"operands could not be broadcast together with (?:remapped )?shapes?(?: \[original->remapped\])?:? (.*)")
_SHAPE = re.compile(r"\((\d+(?:,\d+)*),?\)")
_MATMUL = re.compile(r"matmul: Input operand (\d) has a mismatch in its core dimension (\d).*\(size (\d+) is different from (\d+)\)")
_RESHAPE = re.compile(r"cannot reshape array of size (\d+) into shape (\(.*?\))")
_REDUCTIONS = {"sum", "max", "min", "mean", "amax", "amin", "logsumexp"}
_SYMBOLS = {ast.MatMult: "@", ast.Div: "/", ast.Mult: "*", ast.Add: "+", ast.Sub: "-"}


def is_shape_error(exc):
    """True for numpy's broadcasting, matmul and reshape errors."""
    text = str(exc)
    return isinstance(exc, ValueError) and bool(_BROADCAST.search(text) or _MATMUL.search(text) or
                                                _RESHAPE.search(text))


def explain(exc):
    """``(tag, text)`` explaining the shape error ``exc`` raised by a student's function, or None
    when ``exc`` is not one. ``tag`` is one of :data:`TAGS`."""
    if not is_shape_error(exc):
        return None
    given = getattr(exc, "explained", None)  # explained in the student side's process, from its own line (re-check)
    if type(exc) is ValueError and isinstance(given, tuple) and len(given) == 2 and given[0] in TAGS:
        return given
    try:  # the student's objects are read (an array subclass could do anything): numpy's words if that fails
        where = _student_frame(exc.__traceback__)
        found = _from_source(exc, *where) if where else None
    except Exception:
        found = None
    return found or _from_message(str(exc))


# --- from the student's own line ----------------------------------------------------------


def _student_frame(tb):
    """(frame, source of the failing expression, line number) of the innermost frame of the traceback
    that is the student's code (not numpy's, not the checks'), or None."""
    found = None
    while tb is not None:
        filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if not filename.startswith(_LIBRARY_DIRS) and not filename.startswith("<frozen"):
            found = tb
        tb = tb.tb_next
    if found is None:
        return None
    code, frame = found.tb_frame.f_code, found.tb_frame
    positions = list(code.co_positions())
    index = found.tb_lasti // 2
    line, end_line, col, end_col = positions[index] if index < len(positions) else (found.tb_lineno,) * 2 + (None,) * 2
    lines = [linecache.getline(code.co_filename, k, frame.f_globals) for k in range(line or 0, (end_line or line or 0) + 1)]
    if not any(lines):
        return None
    if col is not None and end_col is not None:
        text = "".join(lines)
        stop = len(text) - len(lines[-1]) + end_col
        source = text[col:stop]
    else:
        source = "".join(lines).strip()
    return frame, source.strip(), found.tb_lineno


def _shape(node, names):
    """The shape of the expression ``node`` where it is a name, ``name.T`` / ``.transpose()`` or a
    reduction of one with a constant axis; else None. Nothing is evaluated."""
    if isinstance(node, ast.Name):
        value = names.get(node.id)
        return tuple(value.shape) if isinstance(value, np.ndarray) else None
    if isinstance(node, ast.Attribute) and node.attr == "T":
        inner = _shape(node.value, names)
        return None if inner is None else inner[::-1]
    reduced = _reduction(node)
    if reduced is not None:
        operand, axis, keepdims = reduced
        inner = _shape(operand, names)
        if inner is None or axis is None or not -len(inner) <= axis < len(inner):
            return None
        axis %= len(inner)
        return inner[:axis] + ((1,) if keepdims else ()) + inner[axis + 1:]
    return None


def _reduction(node):
    """``(operand, axis, keepdims)`` of ``x.sum(axis=-1)`` or ``np.sum(x, axis=-1)`` (a constant axis), or
    Python's ``sum(x)`` (axis 0), else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "sum" and len(node.args) == 1:
        return node.args[0], 0, False
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _REDUCTIONS):
        return None
    keywords = {k.arg: k.value for k in node.keywords}
    args = list(node.args)
    if isinstance(node.func.value, ast.Name) and node.func.value.id in ("np", "numpy"):
        if not args:
            return None
        operand = args.pop(0)
    else:
        operand = node.func.value
    axis = keywords.get("axis", args[0] if args else None)
    keepdims = keywords.get("keepdims")
    try:
        axis = ast.literal_eval(axis) if axis is not None else None
        keepdims = bool(ast.literal_eval(keepdims)) if keepdims is not None else False
    except ValueError:
        return None
    return operand, axis if isinstance(axis, int) else None, keepdims


def _show(shape):
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _from_source(exc, frame, source, line):
    try:
        tree = ast.parse(source, mode="eval").body
    except SyntaxError:
        return None
    names = {**frame.f_globals, **frame.f_locals}
    code = f"`{source}`" if len(source) <= 80 else f"`{source[:77]}...`"
    said = f"Inside your function, {code} raised ValueError"
    for node in ast.walk(tree):  # K.T on 3 or more axes
        if isinstance(node, ast.Attribute) and node.attr == "T":
            shape = _shape(node.value, names)
            if shape is not None and len(shape) >= 3:
                name = ast.unparse(node.value)
                return tags.TRANSPOSED_ALL_AXES, (
                    f"{said}: `{name}.T` reverses every axis of `{name}`, shape {_show(shape)} becomes "
                    f"{_show(shape[::-1])} (the head or batch axis moves to the end too). To transpose each head's "
                    f"matrix, swap the last two axes only: np.swapaxes({name}, -1, -2), shape "
                    f"{_show(shape[:-2] + shape[-2:][::-1])}.")
    summed = _heads_summed(tree, names, said)
    if summed:
        return tags.HEADS_SUMMED, summed
    in_matmul = {id(side) for node in ast.walk(tree) if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult)
                 for side in (node.left, node.right)}
    for node in ast.walk(tree):  # a reduction without keepdims, broadcast against its own operand (not in a @)
        reduced = _reduction(node)
        if reduced is not None and not reduced[2] and reduced[1] is not None and id(node) not in in_matmul:
            operand = _shape(reduced[0], names)
            if operand is not None and len(operand) >= 2:
                kept = _shape(node, names)
                call = ast.unparse(node)
                return tags.NO_KEEPDIMS, (
                    f"{said}: `{call}` has shape {_show(kept)}, one axis fewer than {_show(operand)}, so numpy lines "
                    "it up with the wrong axes (or cannot at all). Keep the axis: add keepdims=True, which gives "
                    f"shape {_show(operand[:reduced[1] % len(operand)] + (1,) + operand[reduced[1] % len(operand) + 1:])}"
                    ", one sum (or maximum) per row, broadcast along it.")
    for node in ast.walk(tree):  # which operation, which operands
        if isinstance(node, ast.BinOp) and type(node.op) in _SYMBOLS:
            left, right = _shape(node.left, names), _shape(node.right, names)
            if left is None or right is None or _fits(node.op, left, right):
                continue
            a, b = ast.unparse(node.left), ast.unparse(node.right)
            return tags.SHAPE_ERROR, f"{said}: {_operands(node.op, a, left, b, right)}"
    return tags.SHAPE_ERROR, f"{said}: {_numpy_words(str(exc))}"


def _heads_summed(tree, names, said):
    """The explanation of ``A @ W`` failing where ``A`` is one head wide and ``W`` takes the heads side by
    side: ``A`` sums (or averages) an axis of r entries with r · A's width = W's rows, or the function's
    ``h`` is that r. None otherwise."""
    h = names.get("h")
    for node in ast.walk(tree):
        if not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult)):
            continue
        left, right = _shape(node.left, names), _shape(node.right, names)
        if left is None or right is None or len(right) != 2 or _fits(node.op, left, right):
            continue
        width, rows = left[-1], right[0]
        if width >= rows or rows % width:
            continue
        r, b = rows // width, ast.unparse(node.right)
        reduced = _reduction(node.left)
        operand = reduced and reduced[1] is not None and _shape(reduced[0], names)
        if operand and len(operand) >= 3 and operand[reduced[1] % len(operand)] == r:
            a, name = ast.unparse(node.left), ast.unparse(reduced[0])
            verb = "averages" if getattr(node.left.func, "attr", "") == "mean" else "adds up"
            return (f"{said}: `{a}` {verb} the {r} heads, axis {reduced[1]} of `{name}` (shape "
                    f"{_show(operand)}), into one array of shape {_show(left)}, one head wide, where `{b}`, shape "
                    f"{_show(right)}, takes the {r} heads side by side ({r} · {width} = {rows} rows). The heads are "
                    f"concatenated, not summed: move the head axis next to the last one (np.swapaxes({name}, -2, -3)) "
                    f"and reshape to (..., n, {rows}), then multiply by `{b}`. (keepdims=True does not help here: `@` "
                    "is a matrix product, not an entry-by-entry operation.)")
        if isinstance(h, int) and not isinstance(h, bool) and h == r and h > 1:
            a = ast.unparse(node.left)
            return (f"{said}: `{a}` has shape {_show(left)}, one head wide (d_k = {width}), where `{b}`, shape "
                    f"{_show(right)}, takes the h = {h} heads side by side (h · d_k = {rows} rows). Were the heads "
                    "summed (or one kept)? They are concatenated, not summed: head i in columns i·d_k:(i+1)·d_k, "
                    f"shape (..., n, {rows}), then multiplied by `{b}`.")
    return None


def _fits(op, left, right):
    try:
        if isinstance(op, ast.MatMult):
            np.matmul(np.empty(left), np.empty(right))
        else:
            np.broadcast_shapes(left, right)
        return True
    except ValueError:
        return False


def _operands(op, a, left, b, right):
    if isinstance(op, ast.MatMult):
        inner = right[-2] if len(right) >= 2 else right[0]
        return (f"`{a}` has shape {_show(left)} and `{b}` has shape {_show(right)}; `{a} @ {b}` needs the last axis "
                f"of `{a}` ({left[-1]}) to be as long as the second-to-last of `{b}` ({inner}), and the axes before "
                "those to be equal (or 1).")
    return (f"`{a}` has shape {_show(left)} and `{b}` has shape {_show(right)}: `{_SYMBOLS[type(op)]}` works entry by "
            "entry, so numpy lines the shapes up from the right, and each pair of sizes must be equal or 1.")


# --- from numpy's message alone ------------------------------------------------------------


def _numpy_words(text):
    match = _BROADCAST.search(text)
    if match:
        shapes = [tuple(int(d) for d in m.split(",")) for m in _SHAPE.findall(match[1].split(" and requested")[0])
                  if "->" not in m]
        originals = [s for s in shapes if s]
        return ("numpy could not line up shapes " + " and ".join(_show(s) for s in originals[:2]) +
                " (sizes are compared from the right; each pair must be equal or 1).")
    match = _MATMUL.search(text)
    if match:
        return (f"a matrix product `A @ B` whose inner sizes differ ({match[3]} against {match[4]}): the last axis "
                "of A must be as long as the second-to-last of B.")
    match = _RESHAPE.search(text)
    if match:
        return (f"an array of {match[1]} numbers cannot be reshaped to {match[2]}: a reshape keeps the number of "
                "entries.")
    return text


def _from_message(text):
    """``(tag, text)`` from numpy's message alone."""
    match = _BROADCAST.search(text)
    if match and "->" not in match[1]:
        shapes = [tuple(int(d) for d in m.split(",")) for m in _SHAPE.findall(match[1])]
        if len(shapes) == 2:
            big, small = sorted(shapes, key=len, reverse=True)
            if len(big) == len(small) + 1 and len(big) >= 3 and big[:-1] == small:
                return tags.NO_KEEPDIMS, (
                    f"Your function raised ValueError: numpy could not line up shapes {_show(big)} and "
                    f"{_show(small)}. {_show(small)} is {_show(big)} summed (or maximised) over its last axis without "
                    f"keepdims=True: keep the axis (shape {_show(small + (1,))}) so each row's sum divides that row.")
    match = _BROADCAST.search(text)
    if match and "->" in match[1]:  # a matmul's leading axes: K.T on (h, n, d_k) is (d_k, n, h)
        originals = [tuple(int(d) for d in m.split(",")) for m in re.findall(r"\((\d+(?:,\d+)*),?\)->", match[1])]
        if len(originals) == 2 and len(originals[0]) >= 3 and originals[1] == originals[0][::-1]:
            return tags.TRANSPOSED_ALL_AXES, (
                f"Your function raised ValueError: a matrix product of shapes {_show(originals[0])} and "
                f"{_show(originals[1])}, the second the first with every axis reversed. That is `K.T` on a 3-D array: "
                ".T reverses every axis. Swap the last two only: np.swapaxes(K, -1, -2).")
    return tags.SHAPE_ERROR, f"Your function raised ValueError: {_numpy_words(text)}"
