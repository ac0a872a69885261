"""The cells under a varied problem's statement: the locked line "Your numbers: d_model = 256, h = 8", and the
data a problem gives (:func:`given`). The source notebook calls them by the problem's name; the graded edition
calls the students' own :mod:`autograders.student.numbers` with the sheet numbers written in (:func:`sheet_of`)."""

from ..student import numbers as current


def sheet_of(assignment, problem):
    """``{"sheet": ..., "symbols": ...}``: what the students' side is given of ``problem``'s declaration."""
    from ..problems import declared  # the declarations import this package

    pool = declared(assignment).get(problem)
    if pool is None:
        raise ValueError(f"problem: {problem!r} has no variants in {assignment!r}; "
                         f"expected one of {', '.join(sorted(declared(assignment)))}")
    return {"sheet": dict(pool.sheet), "symbols": dict(pool.symbols) or None}


def text(assignment, problem):
    """The line the cell shows for ``problem`` of ``assignment``."""
    return current.line(assignment, problem, **sheet_of(assignment, problem))


def show(assignment, problem):
    """Print this student's numbers for ``problem`` (the locked cell under its statement)."""
    print(text(assignment, problem))


def given(assignment, problem, *names):
    """This student's numbers ``names`` of ``problem``, as numpy arrays (a data cell's)."""
    return current.given(assignment, problem, *names, **sheet_of(assignment, problem))
