"""The building blocks of the checks behind the workbook's tests.

A check returns quietly with a one-line confirmation when the answer is right,
and raises :class:`WrongAnswer` with a message written for the student when it
is not: what was expected, and, for a known wrong answer, the misconception
behind it. It never lets a numpy traceback from deep inside reach the student.
"""

import numbers
import re
import warnings

import numpy as np

from ..problems import shared
from ..problems.declare import HIDDEN_PASSED, close, mismatch  # noqa: F401 (the checks take them from here too)
from ..problems.misconception import Named, named, tag_of  # noqa: F401 (likewise)
from ..student.feedback import (  # noqa: F401 (what the checks and notebooks take from here too)
    FailedRun, WrongAnswer, as_array, as_choice, as_int, as_number, as_shape, as_vector, coloured, correct, error_value,
    sentence, short_tracebacks, shown, unanswered, _describe, _whole,
)


def passed(message, hidden):
    """The confirmation: ``message``, or :data:`HIDDEN_PASSED` in a hidden test."""
    correct(HIDDEN_PASSED if hidden else message)


def tries(*phrases):
    """Declare what a function's hidden test tries beyond the visible one, in the words of the problem's prompt
    (``@tries("other widths", "$h = 1$")`` on its check; tests/test_accepted_forms.py finds each in the prompt,
    as it finds a declared answer's ``trials``)."""
    def declared(check):
        check.trials = phrases
        return check
    return declared


def call(name, func, *args, hint="", shapes=""):
    """``func(*args)`` for the student's function ``name``; a blank body, a crash or
    a warning becomes a kind WrongAnswer (a warning on stderr would cost the test).
    A crash is tagged :data:`~autograders.problems.shared.RAISED`, or with the tag of ``hint`` (:func:`named`)
    when it has one.
    A shape error inside the function is explained (:mod:`.shape_errors`: the expression,
    its operands' shapes, the classic bug behind it, with its tag), followed by ``shapes``
    (what the shapes should be) and ``hint``."""
    unanswered(name, func)
    if not callable(func):
        raise WrongAnswer(f"`{name}` should be a function (defined with `def {name}(...)`), got {_describe(func)}.",
                          misconception=shared.WRONG_KIND)
    shown = ", ".join(f"<array {a.shape}>" if isinstance(a, np.ndarray) else repr(a) for a in args)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return func(*args)
    except NotImplementedError:
        raise WrongAnswer(
            f"`{name}` has no answer yet (its body is not written yet): replace `raise NotImplementedError()` "
            "with your code and run the cell.", misconception=shared.NO_ANSWER
        ) from None
    except Exception as exc:  # the student's bug, shown as a message rather than a traceback
        from ..student.shape_errors import explain

        explained = explain(exc)
        if explained is not None:
            tag, text = explained
            called = shapes or f"(Called as {name}({shown}).)"
            text = f"{text} {called} {hint}".rstrip()
            if tag == shared.SHAPE_ERROR and tag_of(hint):
                tag = tag_of(hint)  # a generic shape error where the hint names the likely cause
            raise WrongAnswer(text, misconception=tag) from None
        raise WrongAnswer(f"your function raised {type(exc).__name__}: {exc} (when called as {name}({shown})). {hint}".rstrip(),
                          misconception=tag_of(hint) or shared.RAISED) from None


def name_mistake(where, mistakes, wrong_of, is_it):
    """Raise WrongAnswer ``"{where}: {message}"`` for the first of ``mistakes`` ({mistake: its message, tagged with
    :func:`named`}) whose wrong answer, ``wrong_of(mistake)``, ``is_it``; return if none is. A function's check
    names a wrong output so: it computes each known mistake and compares. A mistake that cannot be made on this
    input (its shapes do not fit: ValueError) is skipped."""
    for mistake, message in mistakes.items():
        with np.errstate(all="ignore"):
            try:
                wrong = wrong_of(mistake)
            except ValueError:
                continue
            if is_it(wrong):
                raise WrongAnswer(f"{where}: {message}", misconception=tag_of(message))
