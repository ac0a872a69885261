"""The checks, outside the student's process: monkeypatching earns nothing.

nbgrader (like every autograder that runs tests in the student's kernel) trusts what the kernel
reports: a student who writes ``np.allclose = lambda *a, **k: True`` or ``check.q1_1_d_k = print``
in an answer cell passes every test. So the tests that decide run elsewhere, keeping two sides apart:

- the **student's side**: the submission's one run, in its sandboxed kernel
  (:class:`autograders.grading.autograde.SandboxExecute`), which after the last cell hands the answers
  the tests use over as **data** (JSON; numpy arrays as ``.npy`` read with ``allow_pickle=False``:
  nothing it produced is ever unpickled; :mod:`autograders.grading.student_side`). A function answer
  stays there: the checker gets a handle, and each call sends the arguments over and the result back,
  as data;
- the **checker side** (the grader's process, where no student code ever ran) runs the instructor's
  setup and data cells from the source notebook, puts the student's answers in, and runs each test
  cell of the source notebook (visible and hidden tests) against them. Only these checks decide.

Everything from the student's process is untrusted data: each reply is read with a deadline and a
size limit, must answer the request just sent (its sequence number) and match an explicit schema
(:mod:`autograders.grading.protocol`); anything else is interference, and the process is killed.

The verdict is per test cell: the checks passed → its points; anything else → 0 with a reason.
"Could not confirm" (a cell or a function call of the student's timed out, crashed or interfered
with the hand-over) names the cell or function; "tampering suspected" is said only when the test
passed in the student's kernel and the clean check of the same answers, handed over without
trouble, failed it.

    check(source_notebook, graded_notebook, handover)
        -> {grade_id: Checked(score, max_score, message or None, misconception, confirmed, hidden)}

(:mod:`autograders.grading.handover` calls it after a kernel's last cell; :func:`autograders.grading.standalone.recheck`
grades one notebook on its own the same way.)

What the verdicts do to the gradebook and the autograded notebook is :mod:`autograders.grading.verdicts`.
"""

import ast
import contextlib
import io
import time
from dataclasses import dataclass

from ..common.regions import hidden_line_numbers
from .protocol import (  # noqa: F401 (the protocol's public names, as the re-check's)
    MAX_DEPTH, MAX_ITEMS, MAX_MESSAGE, ProtocolError, RemoteFunction, check_reply, decode, encode, validate,
)
from .student_side import INTERFERED, Handover, Stopped, StudentSide, Unconfirmed  # noqa: F401

TAMPERING = "tampering suspected: nbgrader passed this test, but a clean re-check of your answers did not"
NOT_CONFIRMED = "could not confirm this test, so it scores 0"



@dataclass
class Checked:
    """One test cell's re-check. Unpacks as ``score, max_score, message``. ``misconception``: the
    tag of the check's own ``WrongAnswer`` when the clean run found the answer wrong, else None;
    ``confirmed``: False when the re-check could not run the test on the student's answers;
    ``hidden``: the test failed in its hidden tests, which only the re-check runs (``grade`` sets them
    aside in nbgrader's kernel: a wrong answer, never "tampering")."""

    score: float
    max_score: float
    message: str = None
    misconception: str = None
    confirmed: bool = True
    hidden: bool = False

    def __iter__(self):
        return iter((self.score, self.max_score, self.message))

    def __getitem__(self, index):
        return tuple(self)[index]


# --- the notebooks ------------------------------------------------------------------


def _meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def _is_test(cell):
    return cell.get("cell_type") == "code" and bool(_meta(cell).get("grade")) and not _meta(cell).get("solution")


def _assigned(source):
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


def _used(source):
    try:
        return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    except SyntaxError:
        return set()


def _passed_in_nbgrader(cell):
    """nbgrader's verdict on a test cell: no error output and nothing on stderr."""
    return not any(
        o.get("output_type") == "error" or (o.get("output_type") == "stream" and o.get("name") == "stderr")
        for o in cell.get("outputs", [])
    )


@contextlib.contextmanager
def _quiet():
    """The checks print their confirmations; keep them out of the caller's output."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def _label(cell, number):
    gid = _meta(cell).get("grade_id")
    return f"`{gid}`" if gid else f"code cell {number}"


def wanted(source):
    """The answers (names the solution cells bind) the test cells of ``source`` use: what is handed over."""
    answers = set().union(*[_assigned(c.source) for c in source.cells if c.cell_type == "code" and _meta(c).get("solution")])
    return sorted(set().union(*[_used(c.source) for c in source.cells if _is_test(c)]) & answers)


def check(source, graded, handover):
    """``{grade_id: Checked}`` for each test cell of the source notebook ``source``, run here against the
    answers ``handover`` (:class:`~autograders.grading.student_side.Handover`) brings from the student's
    process; ``graded``: the notebook as it ran there (its test cells' outputs: the kernel's verdicts)."""
    tests = [(c, _meta(c)["grade_id"], float(_meta(c).get("points", 0))) for c in source.cells if _is_test(c)]
    in_graded = {_meta(c).get("grade_id"): c for c in graded.cells if _meta(c).get("grade_id")}
    clean = {"__name__": "__recheck__"}  # the instructor's setup and data cells
    with _quiet():
        for cell in source.cells:
            meta = _meta(cell)
            if cell.cell_type == "code" and meta.get("locked") and not meta.get("grade") and not meta.get("solution"):
                exec(compile(cell.source, f"<{meta.get('grade_id')}>", "exec"), clean)  # noqa: S102 (instructor's code)
    return {gid: _verdict(handover, clean, cell, gid, points, in_graded.get(gid)) for cell, gid, points in tests}


def _verdict(handover, clean, cell, gid, points, nbgrader_cell):
    """One test cell's :class:`Checked`: points only when the checker's own run of the test passed."""
    if not handover.ready():
        return Checked(0.0, points, f"{NOT_CONFIRMED}: {handover.broken}"[:1000], confirmed=False)
    namespace = {**clean, **handover.namespace()}
    handover.deadline = time.monotonic() + handover.timeout
    try:
        with _quiet():
            exec(compile(cell.source, f"<{gid}>", "exec"), namespace)  # noqa: S102 (instructor's test)
        return Checked(points, points, None)
    except Unconfirmed as why:
        return Checked(0.0, points, f"{NOT_CONFIRMED}: {why}"[:1000], confirmed=False)
    except Exception as error:  # noqa: BLE001 (a failed test, whatever the exception)
        message = str(error) if type(error).__name__ == "WrongAnswer" else f"{type(error).__name__}: {error}"
        tag = _misconception(error)
        in_hidden = _failed_line(error, f"<{gid}>") in hidden_line_numbers(cell.source)
    finally:
        handover.deadline = None
    used = _used(cell.source)
    blame = [handover.unavailable[n] for n in sorted(used & set(handover.unavailable))]
    blame += [why for index, why in sorted(handover.trouble.items()) if _assigned(handover.cells[index][1]) & used]
    if blame:
        return Checked(0.0, points, f"{NOT_CONFIRMED}: {blame[0]}; {message}"[:1000], confirmed=False)
    if nbgrader_cell is None:
        message = f"this test cell is missing from the graded notebook; {message}"
    elif in_hidden:  # nbgrader's kernel never ran this part: its verdict says nothing about it
        return Checked(0.0, points, message[:1000], misconception=tag, hidden=True)
    elif _passed_in_nbgrader(nbgrader_cell):
        message = f"{TAMPERING}: {message}"
    return Checked(0.0, points, message[:1000], misconception=tag)


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
    from the student side (:func:`~autograders.grading.protocol.raised`) is never a ``WrongAnswer``, whatever its name."""
    from ..checks.feedback import WrongAnswer
    from ..checks.misconceptions import NAMES

    tag = getattr(error, "misconception", None) if isinstance(error, WrongAnswer) else None
    return tag if isinstance(tag, str) and tag in NAMES else None

