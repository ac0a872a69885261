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

from . import misconceptions as tags
from .misconceptions import NAMES
from ..student.feedback import (  # noqa: F401 (what the checks and notebooks take from here too)
    FailedRun, WrongAnswer, as_array, as_choice, as_int, as_number, as_shape, as_vector, coloured, correct, error_value,
    sentence, short_tracebacks, shown, unanswered, _describe, _whole,
)


class Named(str):
    """A message that names a misconception: a ``str`` with a ``misconception`` tag."""

    misconception = None


def named(tag, message):
    """``message`` carrying the misconception ``tag`` (for tables of known wrong answers):
    ``WrongAnswer(named(tags.TRANSPOSED, "..."))`` raises with that tag."""
    if tag not in NAMES:
        raise ValueError(f"tag: {tag!r} is not a known misconception; expected one of {sorted(NAMES)}")
    text = Named(message)
    text.misconception = tag
    return text


def tag_of(message):
    """The tag ``message`` carries (:func:`named`), or None."""
    return getattr(message, "misconception", None)


HIDDEN_PASSED = "Hidden checks passed too."  # what most hidden tests of the workbook say when they pass


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


def mismatch(name):
    """What a hidden test that names nothing says of ``name``."""
    return f"`{name}` passed the visible test but not the hidden one: re-read the problem and try again."


def call(name, func, *args, hint="", shapes=""):
    """``func(*args)`` for the student's function ``name``; a blank body, a crash or
    a warning becomes a kind WrongAnswer (a warning on stderr would cost the test).
    A crash is tagged :data:`~.misconceptions.RAISED`, or with the tag of ``hint`` (:func:`named`) when it has one.
    A shape error inside the function is explained (:mod:`.shape_errors`: the expression,
    its operands' shapes, the classic bug behind it, with its tag), followed by ``shapes``
    (what the shapes should be) and ``hint``."""
    unanswered(name, func)
    if not callable(func):
        raise WrongAnswer(f"`{name}` should be a function (defined with `def {name}(...)`), got {_describe(func)}.",
                          misconception=tags.WRONG_KIND)
    shown = ", ".join(f"<array {a.shape}>" if isinstance(a, np.ndarray) else repr(a) for a in args)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return func(*args)
    except NotImplementedError:
        raise WrongAnswer(
            f"`{name}` has no answer yet (its body is not written yet): replace `raise NotImplementedError()` "
            "with your code and run the cell.", misconception=tags.NO_ANSWER
        ) from None
    except Exception as exc:  # the student's bug, shown as a message rather than a traceback
        from ..student.shape_errors import explain

        explained = explain(exc)
        if explained is not None:
            tag, text = explained
            called = shapes or f"(Called as {name}({shown}).)"
            text = f"{text} {called} {hint}".rstrip()
            if tag == tags.SHAPE_ERROR and tag_of(hint):
                tag = tag_of(hint)  # a generic shape error where the hint names the likely cause
            raise WrongAnswer(text, misconception=tag) from None
        raise WrongAnswer(f"your function raised {type(exc).__name__}: {exc} (when called as {name}({shown})). {hint}".rstrip(),
                          misconception=tag_of(hint) or tags.RAISED) from None


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


def close(value, expected, tol):
    """True when ``value`` is within ``tol`` of ``expected`` (arrays: every entry)."""
    return bool(np.all(np.abs(np.asarray(value, float) - np.asarray(expected, float)) <= tol))


