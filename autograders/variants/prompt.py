"""The locked cell under a varied problem's statement: "Your numbers: d_model = 256, h = 8"."""

from . import current
from .choice import SHEET

# How a number is named in the prompt: the sheet's symbols.
SYMBOLS = {"dot": "q^T k", "scores": "the scaled scores (s_1, s_2, s_3)", "query": "q", "keys": "(k_1, k_2, k_3, k_4)",
           "values": "(v_1, v_2, v_3, v_4)"}


def text(assignment, problem):
    """The line the cell shows for ``problem`` of ``assignment``."""
    from .levels import problems  # the declarations import this package

    pool = problems(assignment).get(problem)
    if pool is None:
        raise ValueError(f"problem: {problem!r} has no variants in {assignment!r}; "
                         f"expected one of {', '.join(sorted(problems(assignment)))}")
    numbers = current.numbers(assignment, pool)
    shown = ", ".join(f"{SYMBOLS.get(name, name)} = {_show(numbers[name])}" for name in pool.sheet)
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
