"""The engine that runs a declared function answer (:class:`~autograders.problems.declare.Function`).

``check(function)`` is what a notebook's test cell calls (``_checks.q4_3_multi_head_attention(
multi_head_attention)``). For each case, visible then (with ``hidden=True``) hidden, in this order of looks:
the student's function is called through :func:`.own_work.call` (a blank body, a crash, a shape error inside
it explained, the library called instead of written: each its message); its output is read (``convert``);
a predicate mistake names it; what no predicate names is told (``wrong_output``); an output that agrees with
the right one goes on to the next case; else the first wrong implementation whose output it agrees with is
named, or the ``fallback`` says what to do. After the last case: the confirmation.
"""

import numpy as np

from ..problems.declare import text
from . import own_work
from .feedback import WrongAnswer, correct, tag_of


def judge(function, fn, hidden=False):
    """Pass the student's ``fn`` (print the confirmation) or raise WrongAnswer, as ``function`` declares."""
    for case in function.cases + (function.hidden_cases if hidden else ()):
        c = function.view(case)
        value = own_work.call(function.name, fn, *function.arguments(c), hint=text(function.hint, c),
                              shapes=text(function.shapes, c))
        value = function.convert(value, c)
        for mistake in function.predicates:
            if mistake.when(c) and mistake.matches(value, c):
                raise WrongAnswer(text(mistake.says, c, value=value), misconception=mistake.tag)
        function.wrong_output(value, c)
        expected = function.answer(c)
        if function.same(value, expected):
            continue
        if hidden and not function.hidden_names:
            raise WrongAnswer(text(function.hidden_says, c, value=value))
        mistake = recognise(function, value, c, expected)
        if mistake is not None:
            raise WrongAnswer(function.prefix.format(where=c.get("where", "")) + text(mistake.says, c, value=value),
                              misconception=mistake.tag)
        message = text(function.fallback, c, value=value)
        raise WrongAnswer(message, misconception=tag_of(message))
    correct(text(function.hidden_right if hidden else function.right, {}))


def recognise(function, value, c, expected):
    """The first of ``function``'s wrong implementations whose output at the case ``c`` is ``value`` (and not the
    right ``expected``), or None. One that cannot run on this case (ValueError: its shapes do not fit) is skipped."""
    for mistake in function.implementations:
        if not mistake.when(c):
            continue
        with np.errstate(all="ignore"):
            try:
                wrong = mistake.wrong.function()(*function.arguments(c))
            except ValueError:
                continue
            if (np.shape(wrong) == np.shape(value) and not function.same(wrong, expected)
                    and function.same(value, wrong)):
                return mistake
    return None


def check(function):
    """The check function of ``function``: ``check(fn, hidden=False)``, named after its grade_id."""

    def checked(fn, hidden=False):
        return judge(function, fn, hidden)

    checked.__name__ = checked.__qualname__ = function.id
    checked.__doc__ = f"Problem {function.id[1:].split('_')[0]}.{function.id.split('_')[1]}: `{function.name}`."
    checked.function = function
    checked.trials = function.trials  # what the hidden test tries, as the prompt announces it
    return checked


def checks(module_globals, functions):
    """Put the check of each of ``functions`` into a check module's namespace, under its grade_id."""
    for function in functions:
        module_globals[function.id] = check(function)
