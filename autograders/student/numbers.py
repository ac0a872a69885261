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

SHEET = "sheet"  # the generation of the sheet's own numbers


class VariantError(ValueError):
    """Variants cannot be decided: a key, an overrides file, a pool or an id is wrong."""

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


# --- the cells under a varied problem's statement: "Your numbers: d_model = 256, h = 8", and its data ---------
# The graded edition writes each problem's sheet numbers into these calls (``sheet=...``, from its declaration,
# which stays with the grader): a student's own Python needs nothing else.


class Sheet:
    """A problem's sheet numbers, in the order the cell names them (what :func:`numbers` needs of a pool)."""

    def __init__(self, problem, sheet):
        self.problem, self.sheet = problem, dict(sheet)


def line(assignment, problem, *, sheet, symbols=None):
    """The line the cell shows for ``problem`` of ``assignment``: this student's numbers (``sheet``: the
    sheet's, ``symbols``: how the cell names a number, ``{"dot": "q k^T"}``)."""
    found = numbers(assignment, Sheet(problem, sheet))
    shown = ", ".join(f"{(symbols or {}).get(name, name)} = {_show(found[name])}" for name in sheet)
    if generation(assignment, problem) == SHEET:
        return f"Your numbers (the sheet's: outside a course everybody has these): {shown}."
    return f"Your numbers: {shown}. (Yours only: your neighbour's differ.)"


def show(assignment, problem, *, sheet, symbols=None):
    """Print this student's numbers for ``problem`` (the locked cell under its statement)."""
    print(line(assignment, problem, sheet=sheet, symbols=symbols))


def given(assignment, problem, *names, sheet, symbols=None):
    """This student's numbers ``names`` of ``problem``, as numpy arrays (a data cell's: 4.2's vectors)."""
    import numpy as np

    found = numbers(assignment, Sheet(problem, sheet))
    return tuple(np.asarray(found[name], dtype=float) for name in names)


def _show(value):
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    return f"{value:g}" if isinstance(value, float) else str(value)
