"""One run, checked outside it: after a submission's last cell, its kernel hands the answers over.

A submission's cells run once, in one sandboxed kernel (:class:`~autograders.grading.autograde.SandboxExecute`,
nbgrader's Execute step, with each test cell's visible tests only). After the last cell that same
kernel runs :func:`~autograders.grading.student_side.serve` over the two pipes its provisioner gave it
at launch (:meth:`~autograders.grading.provisioner.SandboxProvisioner.take_pipes`), and
:func:`check_answers` runs every test of the source notebook, hidden ones too, here in the grader's
process, on the answers that cross as data (:func:`autograders.grading.recheck.check`). The verdicts
go to ``SandboxExecute.verdicts`` (:func:`autograders.grading.standalone.recheck`) and, in ``grade``'s jobs, to ``<verdicts_into>/<notebook>.json``,
which :func:`autograders.grading.verdicts.apply_recheck` applies to the gradebook.

What went wrong in the run (a cell past its time limit, a flood of output, the memory limit) comes
from the run itself: a test using what such a cell set is "could not confirm", as it would be had the
cell run again. A notebook whose last kernel died is given one more, which replays the cells that had
completed (as after any crash), to hand the answers over.
"""

import contextlib
import dataclasses
import json
import os
import signal
from pathlib import Path

SERVE = "from autograders.grading.student_side import serve as _mha_serve\n_mha_serve({}, {})"


def _source(executor, resources):
    import nbformat

    if executor.source_notebook is not None:
        return executor.source_notebook
    name = ((resources or {}).get("nbgrader") or {}).get("notebook")
    path = Path(executor.check_source) / f"{name}.ipynb"
    return nbformat.read(str(path), as_version=4) if name and path.is_file() else None


def _trouble(executor, cells):
    """{index in ``cells``: what went wrong when that cell ran} (:class:`Handover`'s ``trouble``)."""
    found = {index: executor.cell_trouble(position, label) for index, (label, position) in enumerate(cells)}
    return {index: why for index, why in found.items() if why}


def _side(executor, provisioner):
    """The kernel serving the hand-over (:class:`StudentSide`), or None when it has no pipes."""
    from .student_side import StudentSide

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


def check_answers(executor, resources, provisioner, broken=None):
    """Run the source notebook's tests on the answers the live kernel of ``provisioner`` hands over (None:
    no kernel left, ``broken`` says why); set ``executor.verdicts`` and write them where it says."""
    from .recheck import _is_test, _label, check, wanted
    from .student_side import Handover

    source = _source(executor, resources)
    if source is None:
        return
    cells = [(_label(c, n), n - 1) for n, c in enumerate(executor.nb.cells, 1)
             if c.cell_type == "code" and not _is_test(c) and c.source.strip()]
    handover = Handover(_side(executor, provisioner), [(label, executor.nb.cells[at].source) for label, at in cells],
                        wanted(source), executor.settings, _trouble(executor, cells), broken)
    try:
        executor.verdicts = check(source, executor.nb, handover)
    finally:
        handover.close()
    if executor.verdicts_into:
        name = resources["nbgrader"]["notebook"]
        folder = Path(executor.verdicts_into)
        folder.mkdir(parents=True, exist_ok=True)
        data = {gid: dataclasses.asdict(checked) for gid, checked in executor.verdicts.items()}
        (folder / f"{name}.json").write_text(json.dumps(data))


def read_verdicts(folder, notebook_path):
    """The verdicts :func:`check_answers` wrote for the autograded notebook at ``notebook_path``."""
    path = Path(folder) / f"{Path(notebook_path).stem}.json"
    if not path.is_file():
        raise RuntimeError("the notebook's process never handed its answers over")
    return json.loads(path.read_text())
