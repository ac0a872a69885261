"""The numbers the checks of this process use: a student's own, or the sheet's.

A student's numbers for one assignment are one JSON document::

    {"student": id, "assignment": a, "generation": {problem: g}, "numbers": {problem: {name: value}}}

Where they come from, first found wins:

1. **handed** by the grader: during grading the numbers are decided from the course key and
   the student's folder, never read from the submission. The grading process holds them for
   the job it runs (:func:`handing`), and the sandbox launcher hands them to the kernels it
   starts in :data:`HANDED_ENV` (the launcher strips every other variable, so a submission
   cannot bring its own);
2. in a student's lab, the file ``<folder>/<assignment>.json``, the folder being
   ``$MHA_VARIANTS_DIR`` or ``~/.mha-workbook/variants`` (what the course's server writes);
3. none: the sheet's own numbers (generation ``"sheet"``): the practice edition, ``make lab``
   and the solved source notebooks.
"""

import contextlib
import json
import os
from pathlib import Path

from .choice import SHEET, VariantError

DIR_ENV = "MHA_VARIANTS_DIR"  # another folder of students' files (tests, ``make lab``)
HANDED_ENV = "MHA_VARIANTS_HANDED"  # the document, as JSON, in a kernel the grader started
HOME_FOLDER = (".mha-workbook", "variants")

_handed = {}  # "document": the job's (the grader runs one job at a time per process: jobs._JOB_LOCK)


def sheet_document(assignment, student=""):
    """The document of the sheet's numbers (no problem listed: each takes its pool's sheet)."""
    return {"student": student, "assignment": assignment, "generation": {}, "numbers": {}}


@contextlib.contextmanager
def handing(document):
    """Within this block, this process's checks (and the kernels the grader starts) use ``document``."""
    check_document(document, document.get("assignment") if isinstance(document, dict) else None, "handed numbers")
    before = _handed.get("document")
    _handed["document"] = document
    try:
        yield document
    finally:
        _handed["document"] = before


def handed():
    """The document the grader handed to this process, or None."""
    return _handed.get("document")


def handed_json():
    """:func:`handed` as the JSON the sandbox puts in :data:`HANDED_ENV`, or None."""
    document = handed()
    return None if document is None else json.dumps(document, sort_keys=True)


def folder():
    """The folder of the students' files in this lab."""
    given = os.environ.get(DIR_ENV)
    return Path(given) if given else Path.home().joinpath(*HOME_FOLDER)


def document(assignment):
    """This process's document for ``assignment`` (see the module's docstring for the order)."""
    found = handed()
    if found is None and os.environ.get(HANDED_ENV):
        try:
            found = json.loads(os.environ[HANDED_ENV])
        except ValueError:
            raise VariantError(f"${HANDED_ENV}: not JSON") from None
        where = f"${HANDED_ENV}"
    elif found is not None:
        where = "handed numbers"
    if found is None:
        path = folder() / f"{assignment}.json"
        if not path.exists():
            return sheet_document(assignment)
        try:
            found = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            raise VariantError(f"your numbers {path}: unreadable ({error}); ask your instructor") from None
        where = str(path)
    if isinstance(found, dict) and found.get("assignment") != assignment:
        return sheet_document(assignment)  # handed for another assignment: this one keeps the sheet's
    return check_document(found, assignment, where)


def check_document(found, assignment, where):
    """``found`` when it is a document for ``assignment``; a VariantError naming ``where`` otherwise."""
    if not isinstance(found, dict) or not isinstance(found.get("numbers"), dict):
        raise VariantError(f"{where}: expected an object with \"numbers\": {{problem: {{name: value}}}}")
    if found.get("assignment") != assignment:
        raise VariantError(f"{where}: for assignment {found.get('assignment')!r}, not {assignment!r}")
    for problem, numbers in found["numbers"].items():
        if not isinstance(numbers, dict):
            raise VariantError(f"{where}: the numbers of {problem!r} are not an object")
    return found


def numbers(assignment, pool):
    """The numbers of ``pool``'s problem for this process: the document's, else the sheet's."""
    found = document(assignment)["numbers"].get(pool.problem)
    if found is None:
        return dict(pool.sheet)
    if set(found) != set(pool.sheet):
        raise VariantError(f"the numbers of {assignment} {pool.problem} name {sorted(found)}, "
                           f"expected {sorted(pool.sheet)}")
    return {name: _plain(value) for name, value in found.items()}


def generation(assignment, problem):
    """The generation of ``problem``'s numbers in this process (``"sheet"`` when none is given)."""
    return document(assignment).get("generation", {}).get(problem, SHEET)


def _plain(value):
    return tuple(value) if isinstance(value, list) else value
