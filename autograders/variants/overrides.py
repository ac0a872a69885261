"""The instructor's overrides: a new generation for a student (after lost work, say).

A CSV with the columns ``student_id,assignment,problem,generation``; ``*`` as the assignment
or the problem means all of them; the generation is a whole number or ``sheet``. A later row
wins over an earlier one, a named problem over ``*``. Every bad row gets one line naming the
row and the reason, and a file with any error is refused whole: nothing is graded with a
guessed variant.
"""

from pathlib import Path

from ..common.inputs import read_csv
from .choice import SHEET, VariantError, VariantInputError

COLUMNS = ("student_id", "assignment", "problem", "generation")
ANY = "*"
TODO = "correct it (or move it away: then every student gets their own numbers) and grade again"


class Overrides:
    """{(student, assignment, problem): generation}, with ``*`` rows applied when asked."""

    def __init__(self, rows=()):
        self.rows = list(rows)

    def generation(self, student, assignment, problem, default=0):
        found, rank = default, -1
        for who, where, what, generation in self.rows:
            if who != student or where not in (assignment, ANY) or what not in (problem, ANY):
                continue
            this = (where != ANY) + (what != ANY)  # the most specific row wins; among equals the last
            if this >= rank:
                found, rank = generation, this
        return found


def read_overrides(path, *, students, problems):
    """The overrides at ``path`` (none when it does not exist), checked against the gradebook's
    ``students`` and ``problems`` ({assignment: problem grade_ids with variants})."""
    path = Path(path)
    if not path.exists():
        return Overrides()
    lines = read_csv(path, COLUMNS, TODO, error=VariantInputError)
    rows, problems_found = [], []
    for number, line in lines:
        reason, row = _row(line, set(students), problems)
        if reason:
            problems_found.append(f"line {number}: {reason}")
        else:
            rows.append(row)
    if problems_found:
        raise VariantError(f"overrides {path}: not used, nothing was graded:\n  " + "\n  ".join(problems_found))
    return Overrides(rows)


def _row(line, students, problems):
    student, assignment = (line.get("student_id") or "").strip(), (line.get("assignment") or "").strip()
    problem, generation = (line.get("problem") or "").strip(), (line.get("generation") or "").strip()
    if student not in students:
        return f"student {student!r} is not in the gradebook", None
    if assignment != ANY and assignment not in problems:
        return f"assignment {assignment!r} is not one of {', '.join(sorted(problems))}", None
    known = set().union(*problems.values()) if assignment == ANY else problems[assignment]
    if problem != ANY and problem not in known:
        return f"problem {problem!r} has no variants in {assignment!r}", None
    if generation == SHEET:
        return None, (student, assignment, problem, SHEET)
    if not generation.isdigit():
        return f"generation {generation!r} is not a whole number >= 0 or {SHEET!r}", None
    return None, (student, assignment, problem, int(generation))
