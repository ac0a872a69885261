"""One notebook graded on its own, as ``grade`` grades it: its own code cells run once in a sandboxed
kernel (never a test cell), and after the last cell that kernel hands the answers over to the
checks, which run here (:mod:`autograders.grading.handover`, :mod:`autograders.grading.checker`).
The tests use it on notebooks made by hand; ``grade`` runs the same steps inside nbgrader's Autograde."""

import json
import tempfile

from ..student.settings import CONFIG_NAMES, Settings
from .autograde import SandboxExecute
from .checker import Checked, is_test, nbgrader_meta


def recheck(source_notebook_path, notebook_path, timeout=None, settings=None):
    """``{grade_id: Checked}`` for each test cell of the source notebook, on the notebook at
    ``notebook_path``. ``settings``: the course's (by default those of the nearest ``nbgrader_config.py``);
    ``timeout``: another cell timeout."""
    import nbformat

    source = nbformat.read(str(source_notebook_path), as_version=4)
    try:
        nb = nbformat.read(str(notebook_path), as_version=4)
    except Exception as error:  # noqa: BLE001
        why = f"not graded: the notebook could not be read ({type(error).__name__})"
        return {nbgrader_meta(c)["grade_id"]:
                Checked(0.0, float(nbgrader_meta(c).get("points", 0)), why, confirmed=False)
                for c in source.cells if is_test(c)}
    settings = settings or Settings.of_course(notebook_path)
    if timeout:
        settings = settings.replace(cell_timeout=int(timeout))
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    executor = SandboxExecute(timeout=settings.cell_timeout,
                              **{name: getattr(settings, field) for field, name in CONFIG_NAMES.items()})
    executor.source_notebook = source
    with tempfile.TemporaryDirectory(prefix="mha-run-") as work:
        executor.preprocess(nb, {"metadata": {"path": work}})
    return executor.verdicts or {}
