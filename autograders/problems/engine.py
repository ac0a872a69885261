"""The one engine that judges every declared number, shape, vector and labelled choice.

``check(answer, assignment)`` is the function a notebook's test cell calls (``_checks.q2_2_scaled_score(
scaled_score)``): it converts the value (a wrong type gets "should be ..."), takes this student's numbers
(:mod:`autograders.student.numbers`), and passes, names the misconception of a known wrong answer, or
says what to do. With ``hidden=True`` it judges against the declaration's own recomputation, and names
nothing when the declaration says so.
"""

from ..student.feedback import WrongAnswer, as_choice, as_int, as_number, as_shape, as_vector, correct
from . import shared
from .declare import close, text
from .pools import Pool

CONVERT = {
    "number": lambda a, v, n: as_number(a.variable, v),
    "int": lambda a, v, n: as_int(a.variable, v),
    "shape": lambda a, v, n: as_shape(a.variable, v, ndim=a.ndim),
    "vector": lambda a, v, n: as_vector(a.variable, v, a.size(n)),
    "choice": lambda a, v, n: as_choice(a.variable, v, a.options),
}


def numbers(answer, assignment):
    """This student's numbers for ``answer`` (the sheet's outside a course, or when the problem has no pool)."""
    if not answer.numbers.entries:
        return dict(answer.numbers.sheet)
    from ..student import numbers as current

    return current.numbers(assignment, pool(answer))


def pool(answer):
    """The :class:`~.pools.Pool` of ``answer``: what vetting and the variants read."""
    found = _POOLS.get(id(answer))
    if found is None:
        spec = answer.numbers
        found = Pool(
            problem=spec.problem, sheet=spec.sheet, entries=spec.entries, tolerance=answer.tolerance, valid=spec.valid,
            answer=lambda e: answer.answer(spec.view(e)),
            mistakes=lambda e: {m.key: wrong for m, wrong in answer.mistakes_of(e)},
            recognised=lambda e, value: getattr(recognise(answer, value, e), "key", None),
            notes=({"variable": answer.variable} if answer.name else {}) | answer.notes)
        _POOLS[id(answer)] = (answer, found)  # the answer kept alive: its id stays its own
        return found
    return found[1]


_POOLS = {}


def same(answer, value, expected, tolerance):
    if answer.kind in ("shape", "head", "choice"):
        return value == (expected if answer.kind == "choice" else tuple(expected))
    if answer.kind == "int":
        return value == expected
    return close(value, expected, tolerance)


def shown(answer, value):
    if answer.kind in ("number",):
        return f"{value:g}"
    if answer.kind == "choice":
        return repr(value)
    return str(value)


def judge(answer, assignment, value, hidden=False):
    """Pass ``value`` (print the confirmation) or raise WrongAnswer, as ``answer`` declares."""
    entry = numbers(answer, assignment)
    n = answer.numbers.view(entry)
    value = answer.convert(value, n) if answer.convert else CONVERT[answer.kind](answer, value, n)
    if hidden and answer.hidden is not None:
        expected = answer.hidden(n)
        tolerance = answer.tolerance if answer.hidden_tolerance is None else answer.hidden_tolerance
    else:
        expected, tolerance = answer.answer(n), answer.tolerance
    if same(answer, value, expected, tolerance):
        right = answer.hidden_right if hidden and answer.hidden_right is not None else answer.right
        return correct(text(right, n, value=value))
    if hidden and answer.hidden_says is not None:
        raise WrongAnswer(text(answer.hidden_says, n, value=value, name=answer.variable))
    if answer.judge is not None:
        answer.judge(value, n, hidden)  # a hand-written diagnosis: raises when it recognises the answer
    mistake = recognise(answer, value, entry)
    if mistake is not None:
        prefix = answer.prefix.format(name=answer.variable, value=shown(answer, value))
        raise WrongAnswer(prefix + text(mistake.says, n, value=value), misconception=mistake.tag)
    if answer.wrong_ndim and len(value) != len(answer.answer(n)):
        message, tag = answer.wrong_ndim
        raise WrongAnswer(message.format(name=answer.variable, value=value), misconception=tag)
    raise WrongAnswer(text(answer.fallback, n, value=value, name=answer.variable), misconception=answer.fallback_tag)


def recognise(answer, value, entry, sheet=True):
    """The first of ``answer``'s misconceptions at the numbers ``entry`` whose wrong answer ``value`` is, or None
    (without ``sheet``: the sheet's answer for other numbers is not one). A function's check names its wrong
    values with this too."""
    n = answer.numbers.view(entry)
    return next((m for m, wrong in answer.mistakes_of(entry, sheet) if _matches(answer, m, value, wrong, n)), None)


def _matches(answer, mistake, value, wrong, n):
    if mistake.matches is not None:
        return mistake.matches(value, n)
    if answer.near is not None and mistake.key != shared.EXAMPLE_NUMBERS_ONLY:
        return answer.near(value, wrong)
    return same(answer, value, wrong, answer.tolerance)


def check(answer, assignment):
    """The check function of ``answer``: ``check(value, hidden=False)``, named after its grade_id."""

    def checked(value, hidden=False):
        return judge(answer, assignment, value, hidden)

    checked.__name__ = checked.__qualname__ = answer.id
    checked.__doc__ = f"Problem {answer.id[1:].split('_')[0]}.{answer.id.split('_')[1]}: `{answer.variable}`."
    checked.answer = answer
    return checked


def checks(module_globals, assignment, answers):
    """Put the check of each of ``answers`` into a check module's namespace, under its grade_id."""
    for answer in answers:
        module_globals[answer.id] = check(answer, assignment)
