"""What the graded edition's visible tests check: each answer's form, from its declaration or its check.

In the graded edition every visible test checks only the form of its answer
(:func:`autograders.student.forms.form`: "a number", "one of A, B, C, D", "a function"); whether it is
right is decided by the hidden tests when the work is graded, where the full check runs. :func:`form_call`
writes that call for a check of the practice edition (``_checks.q1_2_why(why)``), reading the kind, the
options and the length of a shape from the declaration the check carries; a hand-written check of a
function answer asks for a function.
"""

FORM_CALL = "_form"  # a name no student has a reason to bind (the test cell binds it itself)
FORM_IMPORT = f"from autograders.student.forms import form as {FORM_CALL}"


def choice_form(check):
    """``(name, options)`` of the labelled choice ``check`` asks for (from its declaration), or None."""
    declared = getattr(check, "answer", None)
    return (declared.variable, tuple(declared.options)) if declared is not None and declared.kind == "choice" else None


def is_choice(check):
    """True when the check function ``check`` asks for a labelled choice."""
    return callable(check) and choice_form(check) is not None


def form_call(check, value, function=False):
    """The graded edition's visible call for ``check(value)`` (``value``: the argument's source, the answer's
    name; ``function``: the answer cell defines it with ``def``):
    ``_form("why", why, "choice", options=("A", "B", "C", "D"))``."""
    declared = getattr(check, "answer", None)
    if declared is None or declared.kind == "head":  # a hand-written check (a function, 4.4's matrices), 5.4's pair
        return f"{FORM_CALL}({value!r}, {value}, {'function' if function else 'any'!r})"
    extra = ""
    if declared.kind == "choice":
        extra = f", options={tuple(declared.options)!r}"
    elif declared.kind == "shape" and declared.ndim:
        extra = f", ndim={declared.ndim}"
    return f"{FORM_CALL}({declared.variable!r}, {value}, {declared.kind!r}{extra})"
