"""Form-only checks of labelled choices, for the graded edition.

In the graded edition a labelled choice's visible test checks only the form of
the answer ("one of A, B, C, D"); whether it is right is decided by the hidden
tests when the work is graded (a student cannot find the answer by trying each
label against the visible test). The practice edition keeps the full check.

A choice check is declared (:mod:`autograders.problems`) or is a check function
that calls ``feedback.as_choice(name, value, OPTIONS)``: :func:`choice_form`
reads the declaration, or that call from the check's source:

    from autograders.checks.forms import form_only
    form_only(check.q1_2_why, why)      # ✔ Answer recorded: `why` = 'B', one of A, B, C, D. ...
"""

import ast
import functools
import inspect
import textwrap

from .feedback import as_choice


@functools.lru_cache(maxsize=None)
def choice_form(check):
    """``(name, options)`` of the labelled choice ``check`` asks for (its declaration, or the ``as_choice``
    call of a hand-written check), or None."""
    declared = getattr(check, "answer", None)
    if declared is not None:
        return (declared.variable, tuple(declared.options)) if declared.kind == "choice" else None
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(check)))
    except (OSError, TypeError, SyntaxError):
        return None
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and _called(node.func) == "as_choice"):
            continue
        arguments = dict(zip(("name", "value", "options"), node.args)) | {k.arg: k.value for k in node.keywords}
        if "options" not in arguments:
            continue
        try:
            name = ast.literal_eval(arguments["name"])
        except (KeyError, ValueError):
            name = "answer"
        expression = compile(ast.Expression(arguments["options"]), "<options>", "eval")
        options = eval(expression, check.__globals__)  # noqa: S307 (the check's own code: a name or a tuple)
        return str(name), tuple(options)
    return None


def _called(func):
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


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
