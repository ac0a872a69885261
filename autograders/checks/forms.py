"""Form-only checks of labelled choices, for the graded edition.

In the graded edition a labelled choice's visible test checks only the form of
the answer ("one of A, B, C, D"); whether it is right is decided by the hidden
tests when the work is graded (a student cannot find the answer by trying each
label against the visible test). The practice edition keeps the full check.

Every labelled choice is declared (:mod:`autograders.problems`): :func:`choice_form`
reads its variable and options from the declaration its check carries:

    from autograders.checks.forms import form_only
    form_only(check.q1_2_why, why)      # ✔ Answer recorded: `why` = 'B', one of A, B, C, D. ...
"""

from .feedback import as_choice


def choice_form(check):
    """``(name, options)`` of the labelled choice ``check`` asks for (from its declaration), or None."""
    declared = getattr(check, "answer", None)
    return (declared.variable, tuple(declared.options)) if declared is not None and declared.kind == "choice" else None


def is_choice(check):
    """True when the check function ``check`` asks for a labelled choice."""
    return callable(check) and choice_form(check) is not None


def form_only(check, value):
    """Check only that ``value`` is one of ``check``'s labels (a blank answer or another
    type gets the same message as the full check); say the answer is recorded."""
    form = choice_form(check)
    if form is None:
        raise TypeError(f"{getattr(check, '__name__', check)!r} does not ask for a labelled choice")
    name, options = form
    choice = as_choice(name, value, options)
    print(f"✔ Answer recorded: `{name}` = {choice!r}, one of {', '.join(options)}. "
          "Whether it is right is decided when your work is graded.")
