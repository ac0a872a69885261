"""The graded edition's visible tests: an answer's form only, never whether it is right.

In a graded course every visible test checks the form of its answer (a number, a shape, an array, one
of the labels, a function) and says it is recorded; whether it is right is decided when the work is
graded, by the checks the grader keeps (the course's hidden tests, run outside the student's process).
So no test a student can run tells a right answer from a wrong one, whatever they try. The practice
edition keeps the full checks, which answer at once. A test cell of the graded edition reads::

    from autograders.student.forms import form as _form
    _form("scaled_score", scaled_score, "number")   # ✔ Answer recorded: `scaled_score` = 5, a number. ...

(written by :func:`autograders.checks.forms.form_call` from the answer's declaration).
"""

import numpy as np

from .feedback import WrongAnswer, _describe, as_choice, as_int, as_number, as_shape, unanswered
from .tags import NO_ANSWER, WRONG_KIND

KINDS = ("number", "int", "shape", "vector", "choice", "function", "any")
LATER = "Whether it is right is decided when your work is graded."


def form(name, value, kind, options=None, ndim=None):
    """Check that ``value``, the answer ``name``, has the form ``kind`` (one of :data:`KINDS`; ``options``:
    a choice's labels, ``ndim``: a shape's length); say it is recorded, or raise WrongAnswer saying what
    form was expected (a blank answer: "no answer yet")."""
    if kind not in KINDS:
        raise ValueError(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    if kind == "number":
        shown = f"= {as_number(name, value):g}, a number"
    elif kind == "int":
        shown = f"= {as_int(name, value)}, a whole number"
    elif kind == "shape":
        shown = f"= {as_shape(name, value, ndim)}, a shape"
    elif kind == "vector":
        shown = f"holds {_vector(name, value).size} numbers"
    elif kind == "choice":
        shown = f"= {as_choice(name, value, options)!r}, one of {', '.join(options)}"
    elif kind == "function":
        unanswered(name, value)
        if not callable(value):
            raise WrongAnswer(f"`{name}` should be a function (defined with `def {name}(...)`), got {_describe(value)}.",
                              misconception=WRONG_KIND)
        if _blank(value):
            raise WrongAnswer(f"`{name}` has no answer yet (its body is not written yet): replace "
                              "`raise NotImplementedError()` with your code and run the cell.", misconception=NO_ANSWER)
        shown = "is a function"
    else:
        unanswered(name, value)
        shown = "is given"
    print(f"✔ Answer recorded: `{name}` {shown}. {LATER}")


def _blank(function):
    """True for a function whose body only raises NotImplementedError (the release's blank answer)."""
    code = getattr(function, "__code__", None)
    return code is not None and code.co_names == ("NotImplementedError",)


def _vector(name, value):
    """``value`` as a flat array of numbers (NaN and infinities are numbers here: the grading names them)."""
    unanswered(name, value)
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise WrongAnswer(f"`{name}` should be an array of numbers, got {_describe(value)}.",
                          misconception=WRONG_KIND) from None
    if array.ndim > 2 or (array.ndim == 2 and 1 not in array.shape):
        raise WrongAnswer(f"`{name}` should be a vector: a list or a 1-D array of numbers, got shape {array.shape}.",
                          misconception=WRONG_KIND)
    return np.ravel(array)
