"""The check side: the tests run here, in the grader, on the answers a submission's kernel hands over, and
their verdicts become the test cells' outputs, the only source of autograded points.

nbgrader (like every autograder that runs tests in the student's kernel) trusts what the kernel
reports: a student who writes ``np.allclose = lambda *a, **k: True`` or ``check.q1_1_d_k = print``
in an answer cell passes every test. So the tests that decide run elsewhere, keeping two sides apart:

- the **student's side**: the submission's one run of its own cells (never a test cell), in its
  sandboxed kernel (:class:`autograders.grading.autograde.SandboxExecute`), which after the last cell hands the answers
  the tests use over as **data** (JSON; numpy arrays as ``.npy`` read with ``allow_pickle=False``:
  nothing it produced is ever unpickled; :mod:`autograders.grading.handover`, :mod:`autograders.student.serve`).
  A function answer stays there: the checker gets a handle, and each call sends the arguments over and the
  result back, as data;
- the **checker side** (the grader's process, where no student code ever ran) runs the instructor's
  setup and data cells from the source notebook, puts the student's answers in, and runs each test
  cell of the source notebook (visible and hidden tests) against them. Only these checks decide.

Everything from the student's process is untrusted data: each reply is read with a deadline and a
size limit, must answer the request just sent (its sequence number) and match an explicit schema
(:mod:`autograders.student.protocol`); anything else is interference, and the process is killed.

The verdict is per test cell: the checks passed → its points; anything else → 0 with a reason.
"Could not confirm" (a cell or a function call of the student's timed out, crashed or interfered
with the hand-over) names the cell or function. A patched check or ``np.allclose`` in the student's
process changes nothing here: the tests never run there. What a visible test prints, or the error it
raises, is what the test cell shows; a hidden test's output is never shown.

    check(source_notebook, handover)
        -> {grade_id: Checked(score, max_score, message or None, misconception, confirmed, hidden, shown, error)}

(:func:`autograders.grading.handover.check_answers` calls it after a kernel's last cell;
:func:`autograders.grading.standalone.recheck` grades one notebook on its own the same way.)

The verdicts become the test cells' outputs (:func:`write_outputs`): what its visible tests printed, the
error a visible test raised (as the student's kernel shows it), or, for a test that failed in its hidden
tests or could not be confirmed, a line on stderr saying so. nbgrader's own ``SaveAutoGrades``, the next
step of its autograde, then scores each cell from these outputs exactly as it scores any cell (an error or
stderr: 0; else its points). A test that failed without a visible error gets the grader's record in its
metadata (:data:`RECHECKED`: score, max_score, confirmed, the check's misconception tag, message), which
the class report trusts; no other cell keeps that key (a submission's own copy is the student's writing).
"""

import ast
import contextlib
import io
import sys
import time
import warnings
from dataclasses import dataclass
from typing import NamedTuple

from ..common.regions import hidden_line_numbers, replace_hidden
from ..student.serve import Unconfirmed

NOT_CONFIRMED = "could not confirm this test, so it scores 0"
HIDDEN_NOTE = "Hidden tests: scored {score:g} of {max_score:g}. {message}\n"
RECHECKED_NOTE = "Re-checked: scored {score:g} of {max_score:g}. {message}\n"
RECHECKED = "recheck"  # a test cell's metadata key: the grader's record of a test that failed unseen
NO_VERDICT = "could not confirm this test, so it scores 0: it gave no verdict for this test"
GRADED_RIGHT = "Graded: right."  # in place of the form check's "decided when graded", once it is


@dataclass
class Checked:
    """One test cell's verdict. Unpacks as ``score, max_score, message``. ``misconception``: the
    tag of the check's own ``WrongAnswer`` when it found the answer wrong, else None;
    ``confirmed``: False when the test could not run on the student's answers; ``hidden``: it
    failed in its hidden tests. What the cell shows (:func:`write_outputs`):
    ``shown`` and ``stderr``, what its visible tests printed; ``error``, the error output of a visible test that
    failed (as the student's kernel would show it), else None."""

    score: float
    max_score: float
    message: str = None
    misconception: str = None
    confirmed: bool = True
    hidden: bool = False
    shown: str = ""
    error: dict = None
    stderr: str = ""

    def __iter__(self):
        return iter((self.score, self.max_score, self.message))

    def __getitem__(self, index):
        return tuple(self)[index]


# --- the notebooks ------------------------------------------------------------------


def nbgrader_meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def is_test(cell):
    meta = nbgrader_meta(cell)
    return cell.get("cell_type") == "code" and bool(meta.get("grade")) and not meta.get("solution")


def names_bound(source):
    """Names a cell's code binds at its top level (answers: ``x = ...``, ``def f``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def names_used(source):
    try:
        return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    except SyntaxError:
        return set()


@contextlib.contextmanager
def _quiet(out=None, err=None):
    """The checks print their confirmations: into ``out`` and ``err`` (a visible test's, which its cell
    shows), else nowhere. Warnings are shown afresh in each test (entering ``catch_warnings`` forgets which
    were shown), with the filters of a kernel: Python's, and IPython's for the test's own code."""
    with warnings.catch_warnings(), contextlib.redirect_stdout(out if out is not None else io.StringIO()), \
            contextlib.redirect_stderr(err if err is not None else io.StringIO()):
        warnings.filterwarnings("default", category=DeprecationWarning, module="__recheck__")
        warnings.showwarning = _show_warning  # to this test's stderr, whoever hosts the grader (pytest records them)
        yield


def _show_warning(message, category, filename, lineno, file=None, line=None):
    sys.stderr.write(warnings.formatwarning(message, category, filename, lineno, line))


def cell_label(cell, number):
    gid = nbgrader_meta(cell).get("grade_id")
    return f"`{gid}`" if gid else f"code cell {number}"


def wanted(source):
    """The answers (names the solution cells bind) the test cells of ``source`` use: what is handed over."""
    answers = set().union(*[names_bound(c.source) for c in source.cells
                            if c.cell_type == "code" and nbgrader_meta(c).get("solution")])
    return sorted(set().union(*[names_used(c.source) for c in source.cells if is_test(c)]) & answers)


def _parts(source, filename):
    """The test cell ``source`` as runs of top-level statements, each ``(hidden, code)``: a statement
    touching a hidden-test region is hidden (its output is never shown)."""
    hidden_lines = hidden_line_numbers(source)
    runs = []
    for node in ast.parse(source, filename).body:
        hidden = any(n in hidden_lines for n in range(node.lineno, (node.end_lineno or node.lineno) + 1))
        if runs and runs[-1][0] == hidden:
            runs[-1][1].append(node)
        else:
            runs.append((hidden, [node]))
    return [(hidden, compile(ast.Module(body=nodes, type_ignores=[]), filename, "exec")) for hidden, nodes in runs]


def check(source, handover):
    """``{grade_id: Checked}`` for each test cell of the source notebook ``source``, run here against the
    answers ``handover`` (:class:`~autograders.student.serve.Handover`) brings from the student's
    process (where the test cells never run)."""
    tests = [(c, nbgrader_meta(c)["grade_id"], float(nbgrader_meta(c).get("points", 0)))
             for c in source.cells if is_test(c)]
    clean = {"__name__": "__recheck__"}  # the instructor's setup and data cells
    with _quiet():
        for cell in source.cells:
            meta = nbgrader_meta(cell)
            if cell.cell_type == "code" and meta.get("locked") and not meta.get("grade") and not meta.get("solution"):
                exec(compile(cell.source, f"<{meta.get('grade_id')}>", "exec"), clean)  # noqa: S102 (instructor's code)
    return {gid: _verdict(handover, clean, cell, gid, points) for cell, gid, points in tests}


def _verdict(handover, clean, cell, gid, points):
    """One test cell's :class:`Checked`: points only when the checker's own run of the test passed."""
    if not handover.ready():
        return Checked(0.0, points, f"{NOT_CONFIRMED}: {handover.broken}"[:1000], confirmed=False)
    namespace = {**clean, **handover.namespace()}
    shown, stderr, hidden = io.StringIO(), io.StringIO(), False
    handover.deadline = time.monotonic() + handover.timeout
    try:
        for hidden, code in _parts(cell.source, f"<{gid}>"):
            with _quiet(*((None, None) if hidden else (shown, stderr))):
                exec(code, namespace)  # noqa: S102 (instructor's test)
        if stderr.getvalue():  # as nbgrader scores a cell: anything on stderr (a warning) fails it
            return Checked(0.0, points, stderr.getvalue().strip().splitlines()[-1][:1000], shown=shown.getvalue(),
                           stderr=stderr.getvalue())
        return Checked(points, points, None, shown=shown.getvalue())
    except Unconfirmed as why:
        return Checked(0.0, points, f"{NOT_CONFIRMED}: {why}"[:1000], confirmed=False, shown=shown.getvalue())
    except Exception as error:  # noqa: BLE001 (a failed test, whatever the exception)
        message = str(error) if type(error).__name__ == "WrongAnswer" else f"{type(error).__name__}: {error}"
        tag = _misconception(error)
        shown_error = None if hidden else error_output(error, cell.source, gid)
    finally:
        handover.deadline = None
    used = names_used(cell.source)
    handing = [handover.unavailable[n] for n in sorted(used & set(handover.unavailable))]
    if handing:  # an answer that never crossed: the test's error says nothing of the student's work
        return Checked(0.0, points, f"{NOT_CONFIRMED}: {handing[0]}; {message}"[:1000], confirmed=False,
                       shown=shown.getvalue())
    ran = [why for index, why in sorted(handover.trouble.items()) if names_bound(handover.cells[index][1]) & used]
    if ran:  # a cell that set what it uses was stopped: its error shows, as in that run
        return Checked(0.0, points, f"{NOT_CONFIRMED}: {ran[0]}; {message}"[:1000], confirmed=False,
                       shown=shown.getvalue(), error=shown_error)
    return Checked(0.0, points, message[:1000], misconception=tag, hidden=hidden, shown=shown.getvalue(),
                   error=shown_error)


def error_output(error, source, gid):
    """The error output a failed visible test shows, as the student's kernel shows it: a check's
    ``WrongAnswer`` as its message alone (:func:`autograders.student.feedback.short_tracebacks`), anything
    else as its type and value, with ``line``: the test's line that raised it (the cell's context around
    it is drawn by :func:`write_outputs`, from the cell the student sees)."""
    from ..checks.feedback import WrongAnswer, coloured, error_value, shown

    if isinstance(error, WrongAnswer):
        return {"ename": "WrongAnswer", "evalue": error_value(error), "traceback": [coloured(shown(error))]}
    lines, at = source.splitlines(), _failed_line(error, f"<{gid}>")
    return {"ename": type(error).__name__, "evalue": str(error),
            "line": lines[at - 1] if at and 0 < at <= len(lines) else None}


def _failed_line(error, filename):
    """The line of the code compiled as ``filename`` where ``error`` was raised from (its last frame there)."""
    line, tb = None, error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _misconception(error):
    """The tag of a check's own ``WrongAnswer`` (a known one), else None. An exception rebuilt
    from the student side (:func:`~autograders.student.protocol.raised`) is never a ``WrongAnswer``, whatever its name."""
    from ..checks.feedback import WrongAnswer
    from ..problems.misconception import NAMES

    tag = getattr(error, "misconception", None) if isinstance(error, WrongAnswer) else None
    return tag if isinstance(tag, str) and tag in NAMES else None


# --- the verdicts as the test cells' outputs ------------------------------------------


class Lowered(NamedTuple):
    """A test the checks could not confirm (``old``: None, no other score exists)."""

    grade_id: str
    old: float
    new: float
    max_score: float
    message: str


def _grade_id(cell):
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id")


def _stream(name, text):
    from nbformat import NotebookNode

    return NotebookNode(output_type="stream", name=name, text=text)


ASIDE = "# (hidden tests: run by the grader's checks, outside this kernel)"  # in place of them, in a traceback


def _traceback(source, gid, ename, evalue, line):
    """A traceback as IPython draws one (without its syntax colours): the cell's lines around ``line``, hidden tests
    replaced by :data:`ASIDE`, then ``ename: evalue``."""
    lines = replace_hidden(source, ASIDE).splitlines()
    at = next((n for n, text in enumerate(lines, 1) if line is not None and text == line), None)
    context = "".join(f"{'---->' if n == at else '     '} {n} {lines[n - 1]}\n"
                      for n in range(max(1, (at or 1) - 4), min(len(lines), (at or 1) + 1) + 1)) if at else ""
    red = f"\x1b[31m{ename}\x1b[39m"
    return [f"\x1b[31m{'-' * 75}\x1b[39m", f"{red}{' ' * (42 - len(ename))}Traceback (most recent call last)",
            *([f"Cell `{gid}`, line {at}\n{context}"] if at else []), f"{red}: {evalue}"]


def _graded(shown, right):
    """What a visible test printed, as a graded page shows it: the graded edition's form check said
    "✔ Answer recorded: … Whether it is right is decided when your work is graded." (:data:`autograders.student.forms.LATER`);
    once graded that sentence gives way to :data:`GRADED_RIGHT`, or, for an answer the hidden tests found wrong,
    goes with the tick (their note follows)."""
    from ..student.forms import LATER

    if right:
        return shown.replace(LATER, GRADED_RIGHT)
    return "".join(line.replace(f" {LATER}", "").removeprefix("✔ ") if LATER in line else line
                   for line in shown.splitlines(keepends=True))


def _outputs(checked, source, gid):
    """(the outputs of a test cell (its source: ``source``) whose verdict is ``checked``, its record or None)."""
    from nbformat import NotebookNode

    shown = _graded(checked.shown, right=checked.score >= checked.max_score)
    outputs = [_stream("stdout", shown)] if shown else []
    if checked.stderr:
        outputs.append(_stream("stderr", checked.stderr))
    if checked.error:
        error = dict(checked.error)
        if "traceback" not in error:
            error["traceback"] = _traceback(source, gid, error["ename"], error["evalue"], error.pop("line", None))
        outputs.append(NotebookNode(output_type="error", **error))
    if checked.score >= checked.max_score or checked.error or checked.stderr:
        return outputs, None
    note = HIDDEN_NOTE if checked.hidden and checked.confirmed else RECHECKED_NOTE
    outputs.append(_stream("stderr", note.format(score=checked.score, max_score=checked.max_score,
                                                 message=checked.message or "")))
    return outputs, {"score": float(checked.score), "max_score": float(checked.max_score),
                     "confirmed": bool(checked.confirmed), "misconception": checked.misconception,
                     "message": checked.message or ""}


def write_outputs(nb, verdicts):
    """Give each test cell of ``nb`` (:func:`is_test`) the outputs of its verdict
    in ``verdicts`` ({grade_id: Checked}; a test without one scores 0, not confirmed) and its record
    (:data:`RECHECKED`)."""
    records = {}
    for cell in nb.cells:
        if not is_test(cell):
            continue
        gid = _grade_id(cell)
        points = float(cell.metadata["nbgrader"].get("points", 0))
        checked = verdicts.get(gid) or Checked(0.0, points, NO_VERDICT, confirmed=False)
        cell.outputs, record = _outputs(checked, cell.source, gid)
        cell.execution_count = None
        if record:
            records[gid] = record
    take_off_records(nb, records)


def take_off_records(nb, keep=None):
    """Put ``keep`` ({grade_id: record}) in their test cells' metadata (:data:`RECHECKED`) and take that
    key off every other cell: a submission's own copy of it is the student's writing."""
    keep = keep or {}
    for cell in nb.cells:
        if cell.cell_type == "code" and _grade_id(cell) in keep:
            cell.metadata[RECHECKED] = keep[_grade_id(cell)]
        elif RECHECKED in cell.metadata:
            del cell.metadata[RECHECKED]


def unconfirmed(nb):
    """[:class:`Lowered`] of the tests of an autograded notebook ``nb`` the checks could not confirm."""
    found = []
    for cell in nb.cells:
        record = cell.get("metadata", {}).get(RECHECKED)
        if isinstance(record, dict) and record.get("confirmed") is False:
            found.append(Lowered(_grade_id(cell), None, record["score"], record["max_score"], record.get("message", "")))
    return found
