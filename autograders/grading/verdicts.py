"""The re-check's verdicts applied: the only source of autograded points.

After nbgrader's autograde, whose kernel handed its answers over to the checks after the last cell
(:mod:`autograders.grading.handover`), :func:`apply_recheck` takes those verdicts for each autograded
notebook of a job's private course and lowers, in that private gradebook and notebook, every test
they did not confirm: a test keeps nbgrader's score only up to the re-check's; one the re-check did not
confirm (it failed, was interfered with, or left the test out) scores 0, with the reason in the
cell's output (the feedback shows it) and the grader's record in the cell's metadata
(:data:`RECHECKED`, which the class report trusts; no other cell keeps that key).
"""

import os
from typing import NamedTuple


class Lowered(NamedTuple):
    """A test cell whose nbgrader score the re-check lowered."""

    grade_id: str
    old: float
    new: float
    max_score: float
    message: str


def _as_checked(value):
    """(score, message, misconception, confirmed) from what ``recheck`` gives for one test cell:
    score None when it is no finite number (then not confirmed); misconception a known tag or None.
    :func:`_failed_hidden` says whether it failed in the hidden tests."""
    from ..checks.misconceptions import NAMES

    if isinstance(value, (tuple, list)):
        score, message = (value[0] if value else None), (value[-1] if len(value) > 1 else "")
        tag, confirmed = None, True
    elif isinstance(value, dict):
        score, message = value.get("score"), value.get("message")
        tag, confirmed = value.get("misconception"), value.get("confirmed", True)
    else:
        score, message = getattr(value, "score", None), getattr(value, "message", None)
        tag, confirmed = getattr(value, "misconception", None), getattr(value, "confirmed", True)
    try:
        score = float(score)
    except (TypeError, ValueError):
        score = None
    if score is not None and (score != score or abs(score) == float("inf")):
        score = None
    confirmed = score is not None and confirmed is not False
    tag = tag if confirmed and isinstance(tag, str) and tag in NAMES else None
    return score, str(message or ""), tag, confirmed


def _failed_hidden(value):
    """True when the re-check's verdict ``value`` failed the test in its hidden tests (which nbgrader's
    kernel did not run: a wrong answer, not something the re-check lowered)."""
    return getattr(value, "hidden", None) is True or (isinstance(value, dict) and value.get("hidden") is True)


_NOT_CONFIRMED = "the re-check could not confirm this test, so it scores 0"
HIDDEN_NOTE = "Hidden tests: scored {score:g} of {max_score:g}. {message}\n"
RECHECKED_NOTE = "Re-checked: scored {score:g} of {max_score:g}. {message}\n"
RECHECKED = "recheck"  # a test cell's metadata key: the grader's record of a score the re-check lowered


def _record_lowered(nb, verdicts):
    """Put ``verdicts`` ({grade_id: record}) in their test cells' metadata (:data:`RECHECKED`) and
    take that key off every other cell: a submission's own copy of it is the student's writing.
    True when the notebook changed."""
    changed = False
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type == "code" and grade_id in verdicts:
            cell.metadata[RECHECKED] = verdicts[grade_id]
            changed = True
        elif RECHECKED in cell.metadata:
            del cell.metadata[RECHECKED]
            changed = True
    return changed


def apply_recheck(gb, root, student, assignment, autograded, check):
    """Confirm each autograded test with the re-check (private gradebook and notebook).

    The re-check's verdict is the only source of autograded points: a test keeps
    nbgrader's score only up to the re-check's, and one the re-check gave no score
    for (it failed, left the test out, or said something that is not a number)
    scores 0, with the reason in its feedback. A lowered test cell gets the grader's record in
    its metadata (:data:`RECHECKED`: score, max_score, confirmed, the check's misconception tag),
    which the class report trusts; no other cell keeps that key. ``check(source, autograded path)``:
    the verdicts on that notebook (:func:`autograders.grading.handover.read_verdicts`, or a stand-in
    for tests). Returns [:class:`Lowered`]."""
    import nbformat
    from nbgrader.api import MissingEntry

    lowered = []
    for path in sorted(autograded.glob("*.ipynb")):
        source = root / "source" / assignment / path.name
        failure = None
        try:
            found = check(str(source), str(path))
        except Exception as error:  # noqa: BLE001 (a broken re-check confirms nothing: say why, grade on)
            found, failure = {}, f"the re-check failed ({type(error).__name__}: {error})"[:300]
        for key in ("cells", "results", "scores"):
            if not isinstance(found, dict) and hasattr(found, key):
                found = getattr(found, key)
        if not isinstance(found, dict):
            found, failure = {}, failure or f"the re-check gave no verdicts ({type(found).__name__})"
        try:
            notebook = gb.find_submission_notebook(path.stem, assignment, student)
        except MissingEntry:
            continue
        nb = nbformat.read(str(path), as_version=4)
        changed, records = False, {}
        autograded_tests = [g for g in notebook.grades if g.cell_type == "code" and g.auto_score is not None]
        order = {gid: i for i, gid in enumerate(found)}
        for grade in sorted(autograded_tests, key=lambda g: (order.get(g.name, len(order)), g.name)):
            hidden = False
            if grade.name in found:
                score, message, tag, confirmed = _as_checked(found[grade.name])
                hidden = confirmed and _failed_hidden(found[grade.name])
                if score is None:
                    score, message = 0.0, f"{_NOT_CONFIRMED}: its verdict was not a score"
            else:
                score, tag, confirmed = 0.0, None, False
                message = f"{_NOT_CONFIRMED}: {failure or 'it gave no verdict for this test'}"
            score = min(max(score, 0.0), grade.max_score)
            if score < grade.auto_score:
                if not hidden:  # a hidden test's failure is the answer's, not the re-check lowering a score
                    lowered.append(Lowered(grade.name, grade.auto_score, float(score), grade.max_score, message))
                records[grade.name] = {"score": float(score), "max_score": float(grade.max_score),
                                       "confirmed": confirmed, "misconception": tag}
                grade.auto_score = float(score)
                for cell in nb.cells:
                    if cell.metadata.get("nbgrader", {}).get("grade_id") == grade.name and cell.cell_type == "code":
                        cell.outputs.append(nbformat.v4.new_output(
                            "stream", name="stdout", text=(HIDDEN_NOTE if hidden else RECHECKED_NOTE).format(
                                score=score, max_score=grade.max_score, message=message)))
                        changed = True
        changed = _record_lowered(nb, records) or changed
        gb.db.commit()
        if changed:
            _write(path, nb)
    return lowered


def _write(path, nb):
    """Write ``nb`` to ``path`` (nbgrader leaves autograded notebooks read-only: so are they after)."""
    import nbformat

    mode = path.stat().st_mode
    os.chmod(path, mode | 0o200)
    nbformat.write(nb, str(path))
    os.chmod(path, mode)


def _rewrite(path, change):
    """Apply ``change`` (a function of the notebook, True when it changed it) to the notebook at ``path``."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    if change(nb):
        _write(path, nb)


def take_off_records(autograded):
    """No re-check: take the submission's own copies of :data:`RECHECKED` off its autograded notebooks."""
    for path in sorted(autograded.glob("*.ipynb")):
        _rewrite(path, lambda nb: _record_lowered(nb, {}))
