"""One run, checked outside it: after a submission's last cell, its kernel hands the answers over.

A submission's own cells run once, in one sandboxed kernel (:class:`~autograders.grading.autograde.SandboxExecute`,
nbgrader's Execute step); its test cells never run there. After the last cell that same
kernel runs :func:`~autograders.student.serve.serve` over the two pipes its provisioner gave it
at launch (:meth:`~autograders.grading.provisioner.SandboxProvisioner.take_pipes`), and
:func:`check_answers` runs every test of the assignment's source notebook, hidden ones too, here in the
grader's process, on the answers that cross as data (:func:`autograders.grading.checker.check`); their
verdicts become the test cells' outputs (:func:`autograders.grading.checker.write_outputs`), which
nbgrader's ``SaveAutoGrades`` then scores.

Only the sheet's own cells (its set-up and data cells) and the student's answer
cells run (:func:`graded_cells`): what is graded is what the answer cells define. A cell the student added,
and the sheet's explorers and predictions, do not run, so none of them can install a hook, patch the
hand-over or rebind an answer after the last answer cell; each keeps a one-line note that says so.

What went wrong in the run (a cell past its time limit, a flood of output, the memory limit) comes
from the run itself: a test using what such a cell set is "could not confirm", as it would be had the
cell run again. A notebook whose last kernel died is given one more, which replays the cells that had
completed (as after any crash), to hand the answers over.
"""

import contextlib
import os
import signal
from pathlib import Path

from ..student.serve import Handover, StudentSide
from .checker import cell_label, check, is_test, names_bound, names_used, nbgrader_meta, wanted, write_outputs

SERVE = "from autograders.student.serve import serve as _mha_serve\n_mha_serve({}, {})"
NOT_RUN = ("Not run when graded: only the sheet's own cells and the answer cells run. "
           "Put what an answer needs in its answer cell.\n")


def graded_cells(nb, source):
    """The indices of the cells of ``nb`` that run when it is graded: the sheet's set-up and data cells (locked:
    nbgrader's ``OverwriteCells`` has put back their text as released) and the answer cells, each known by a
    grade_id of the assignment's ``source`` notebook, in the last cell holding it (the one nbgrader's
    ``DeduplicateIds`` keeps). Any other cell (one the student added, an explorer, a prediction) does not run."""
    sheet = {nbgrader_meta(c).get("grade_id") for c in source.cells if c.cell_type == "code" and not is_test(c)
             and (nbgrader_meta(c).get("solution") or nbgrader_meta(c).get("locked"))}
    last = {nbgrader_meta(c).get("grade_id"): i for i, c in enumerate(nb.cells) if c.cell_type == "code"}
    return {i for gid, i in last.items() if gid in sheet - {None}}


def not_run(cell, needed=frozenset()):
    """Mark ``cell`` as not run when graded (its outputs: the note alone). ``needed``: the names the cells that
    run use; the note names those ``cell`` defines (a helper the student put in a cell of their own)."""
    from nbformat import NotebookNode

    cell.execution_count = None
    lost = sorted(names_bound(cell.source) & set(needed))
    also = f"It defines {', '.join(f'`{n}`' for n in lost)}, which an answer cell uses.\n" if lost else ""
    cell.outputs = [NotebookNode(output_type="stream", name="stdout", text=NOT_RUN + also)] if cell.source.strip() else []


def used_by(nb, runs):
    """The names the cells ``runs`` of ``nb`` use (what a cell that does not run may leave undefined)."""
    return set().union(*[names_used(nb.cells[i].source) for i in runs])


def source_of(executor, resources):
    """The assignment's source notebook of the notebook being graded: the course's
    ``source/<assignment>/<notebook>.ipynb``, as nbgrader's ``CourseDirectory`` finds it."""
    import nbformat
    from nbgrader.coursedir import CourseDirectory

    if executor.source_notebook is not None:
        return executor.source_notebook
    info = (resources or {}).get("nbgrader") or {}
    if not info.get("notebook"):
        return None
    coursedir = CourseDirectory(config=executor.config)
    folder = coursedir.format_path(coursedir.source_directory, ".", info["assignment"])
    path = Path(folder) / f"{info['notebook']}.ipynb"
    return nbformat.read(str(path), as_version=4) if path.is_file() else None


def _trouble(executor, cells):
    """{index in ``cells``: what went wrong when that cell ran} (:class:`Handover`'s ``trouble``)."""
    found = {index: executor.cell_trouble(position, label) for index, (label, position) in enumerate(cells)}
    return {index: why for index, why in found.items() if why}


def _side(executor, provisioner):
    """The kernel serving the hand-over (:class:`StudentSide`), or None when it has no pipes."""
    pipes = provisioner.take_pipes() if provisioner is not None else ()
    if not pipes:
        return None
    write, read, kernel_in, kernel_out = pipes

    def kill():  # bubblewrap's sandbox dies with the process it started (its own session: one group)
        executor.shutdown_kernel = "immediate"
        with contextlib.suppress(OSError, TypeError):
            os.killpg(provisioner.pgid or provisioner.pid, signal.SIGKILL)

    side = StudentSide(write, read, kill)
    executor.kc.execute(SERVE.format(kernel_in, kernel_out), silent=True, store_history=False, allow_stdin=False)
    return side


def check_answers(executor, source, provisioner, broken=None):
    """Run the tests of ``source`` (the assignment's source notebook, :func:`source_of`) on the answers the
    live kernel of ``provisioner`` hands over (None: no kernel left, ``broken`` says why); their verdicts go
    to ``executor.verdicts`` and become the test cells' outputs."""
    if not any(is_test(c) for c in executor.nb.cells):  # no test cell (a plain notebook): nothing to check
        executor.verdicts = {}
        return
    if source is None:
        raise RuntimeError("the assignment's source notebook was not found: its tests cannot run")
    runs = graded_cells(executor.nb, source)
    cells = [(cell_label(c, n), n - 1) for n, c in enumerate(executor.nb.cells, 1)
             if c.cell_type == "code" and n - 1 in runs and c.source.strip()]
    handover = Handover(_side(executor, provisioner), [(label, executor.nb.cells[at].source) for label, at in cells],
                        wanted(source), executor.settings, _trouble(executor, cells), broken)
    try:
        executor.verdicts = check(source, handover)
    finally:
        handover.close()
    write_outputs(executor.nb, executor.verdicts)
