"""The checks' verdicts as the test cells' outputs: the only source of autograded points.

The test cells never run in the student's kernel. After the hand-over
(:mod:`autograders.grading.handover`), :func:`write_outputs` gives each test cell of the notebook the
outputs of its check (:class:`autograders.grading.recheck.Checked`): what its visible tests printed,
the error a visible test raised (as the student's kernel shows it), or, for a test that failed in its
hidden tests or could not be confirmed, a line on stderr saying so. nbgrader's own ``SaveAutoGrades``,
the next step of its autograde, then scores each cell from these outputs exactly as it scores any
cell (an error or stderr: 0; else its points).

A test that failed without a visible error gets the grader's record in its metadata
(:data:`RECHECKED`: score, max_score, confirmed, the check's misconception tag, message), which the
class report trusts; no other cell keeps that key (a submission's own copy is the student's writing).
"""

from typing import NamedTuple

HIDDEN_NOTE = "Hidden tests: scored {score:g} of {max_score:g}. {message}\n"
RECHECKED_NOTE = "Re-checked: scored {score:g} of {max_score:g}. {message}\n"
RECHECKED = "recheck"  # a test cell's metadata key: the grader's record of a test that failed unseen
NO_VERDICT = "could not confirm this test, so it scores 0: it gave no verdict for this test"
GRADED_RIGHT = "Graded: right."  # in place of the form check's "decided when graded", once it is


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
    from ..common.regions import replace_hidden

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
    """Give each test cell of ``nb`` (:func:`~autograders.grading.recheck.is_test`) the outputs of its verdict
    in ``verdicts`` ({grade_id: Checked}; a test without one scores 0, not confirmed) and its record
    (:data:`RECHECKED`)."""
    from .recheck import Checked, is_test

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
