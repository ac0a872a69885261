"""The locked cell under a varied problem's statement: "Your numbers: d_model = 256, h = 8"."""

from . import current
from .choice import SHEET


def text(assignment, problem):
    """The line the cell shows for ``problem`` of ``assignment``."""
    from ..problems import declared  # the declarations import this package

    pool = declared(assignment).get(problem)
    if pool is None:
        raise ValueError(f"problem: {problem!r} has no variants in {assignment!r}; "
                         f"expected one of {', '.join(sorted(declared(assignment)))}")
    numbers = current.numbers(assignment, pool)
    shown = ", ".join(f"{pool.symbols.get(name, name)} = {_show(numbers[name])}" for name in pool.sheet)
    if current.generation(assignment, problem) == SHEET:
        return f"Your numbers (the sheet's: outside a course everybody has these): {shown}."
    return f"Your numbers: {shown}. (Yours only: your neighbour's differ.)"


def show(assignment, problem):
    """Print this student's numbers for ``problem`` (the locked cell under its statement)."""
    print(text(assignment, problem))


def _show(value):
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(_show(v) for v in value) + ")"
    return f"{value:g}" if isinstance(value, float) else str(value)
