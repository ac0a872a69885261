"""What a student sees of a check: an answer's form, and a failed check as its message.

A check returns quietly with a one-line confirmation when the answer is right, and raises
:class:`WrongAnswer` with a message written for the student when it is not. This module holds what
both the grader's checks (:mod:`autograders.checks.feedback`) and the students' side need: the error,
the forms an answer must have (a number, a shape, an array, a labelled choice: what a blank or
wrongly typed answer is told), and how a notebook shows a failed check (:func:`short_tracebacks`). It
knows no right answer.
"""

import numbers
import re

import numpy as np

from . import tags
from .tags import TAG_LINE

KNOWN_TAGS = None  # the grader's tags ({tag: name}, autograders.problems.misconception): where loaded, an unknown
# tag is refused where it is raised; a student's own Python has none


class WrongAnswer(AssertionError):
    """An answer is wrong; the message says why, kindly. Fails the test cell.

    ``misconception``: the tag (a key of :data:`KNOWN_TAGS`, the grader's names of misconceptions)
    of the misconception the check recognised, or None; by default the tag of a message
    made by :func:`named`. The class report counts these tags.
    """

    misconception = None

    def __init__(self, message="", misconception=None):
        super().__init__(message)
        tag = misconception if misconception is not None else getattr(message, "misconception", None)
        if tag is not None:
            if KNOWN_TAGS is not None and tag not in KNOWN_TAGS:
                raise ValueError(f"misconception: {tag!r} is not a known tag; expected one of {sorted(KNOWN_TAGS)}")
            self.misconception = str(tag)  # the plain tag, an instance attribute: kept by pickle and copy


def error_value(error):
    """The error output's value for ``error``: for a tagged WrongAnswer, a first line
    ``[misconception: TAG]`` the report reads (first: a value cut short keeps it), then the
    message. The student sees the traceback lines only, never the value."""
    tag = getattr(error, "misconception", None)
    known = tag is not None and (KNOWN_TAGS is None or tag in KNOWN_TAGS)
    return (f"{TAG_LINE.format(tag)}\n" if known else "") + str(error)


def sentence(text):
    """``text`` with a capital if it starts with an ordinary word ("your function ..." ->
    "Your function ..."); a symbol or a name from the code (``d_k``, ``h``, ``softmax(...)``) is kept."""
    if re.match(r"[a-z]{2,}(?![\w(·^/])", text):
        return text[0].upper() + text[1:]
    return text


def correct(message):
    """Print a short confirmation (to stdout: nbgrader scores a cell with stderr 0)."""
    print(f"✔ Correct. {sentence(message)}")


class FailedRun:
    """What an answer's name holds after its answer cell raised (see :func:`short_tracebacks`): not the
    value an earlier run left behind, which a test would judge as if the cell had worked."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<the last run of {self.name}'s cell failed>"

    def __call__(self, *args, **kwargs):
        raise WrongAnswer(_failed_message(self.name), misconception=tags.NO_ANSWER)


def _failed_message(name):
    return (f"`{name}`'s cell raised an error the last time it ran, so `{name}` holds no answer of yours: "
            "fix the error shown under that cell, run it again, then run this test.")


def unanswered(name, value):
    """Raise if ``value`` is still the placeholder the notebook gave it, or its cell failed when last run."""
    if isinstance(value, FailedRun):
        raise WrongAnswer(_failed_message(name), misconception=tags.NO_ANSWER)
    if value is None or value is Ellipsis:
        raise WrongAnswer(f"`{name}` has no answer yet: replace the placeholder with your answer and run the cell.",
                          misconception=tags.NO_ANSWER)


def as_number(name, value):
    """``value`` as a float, or WrongAnswer saying a single number was expected."""
    unanswered(name, value)
    if isinstance(value, np.ndarray) and value.size == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise WrongAnswer(f"`{name}` should be a single number (like 3.5), got {_describe(value)}.",
                          misconception=tags.WRONG_KIND)
    value = float(value)
    if not np.isfinite(value):
        raise WrongAnswer(f"`{name}` should be a finite number, got {value}.", misconception=tags.WRONG_KIND)
    return value


def as_int(name, value):
    """``value`` as an int, or WrongAnswer saying a whole number was expected."""
    number = as_number(name, value)
    if number != int(number):
        raise WrongAnswer(f"`{name}` should be a whole number, got {number}.", misconception=tags.WRONG_KIND)
    return int(number)


def _whole(number):
    """``number`` as an int if it is a real, finite, whole number (``64``, ``64.0``, ``np.int64(64)``), else None."""
    if isinstance(number, np.ndarray) and number.ndim == 0:
        number = number.item()
    if isinstance(number, bool) or not isinstance(number, numbers.Real):
        return None
    if isinstance(number, numbers.Integral):
        return int(number)
    number = float(number)
    return int(number) if np.isfinite(number) and number == int(number) else None


def as_shape(name, value, ndim=None):
    """``value`` as a tuple of ints (a shape), or WrongAnswer saying what was expected.

    A tuple, a list or a 1-D array of whole numbers is a shape; whole-number floats count
    (``(512, 512 / 8)`` is ``(512, 64)``), other numbers get "not a whole number".
    """
    unanswered(name, value)
    example = "(10, 64)" if ndim in (None, 2) else str(tuple(range(1, ndim + 1)))
    if isinstance(value, np.ndarray) and value.ndim == 1:
        value = list(value)
    if not isinstance(value, (tuple, list)) or not all(
        (isinstance(d, numbers.Real) or isinstance(d, np.ndarray) and d.ndim == 0) and not isinstance(d, bool)
        for d in value
    ):
        raise WrongAnswer(f"`{name}` should be a shape: a tuple of whole numbers like {example}, got {_describe(value)}.",
                          misconception=tags.WRONG_KIND)
    dims = [_whole(d) for d in value]
    if None in dims:
        bad = next(d for d, w in zip(value, dims) if w is None)
        raise WrongAnswer(f"`{name}` should be a shape: a tuple of whole numbers like {example}, got "
                          f"{_describe(value)}: {bad} is not a whole number.", misconception=tags.WRONG_KIND)
    if ndim is not None and len(dims) != ndim:
        raise WrongAnswer(f"`{name}` should have {ndim} numbers (like {example}), got {len(dims)}: {tuple(dims)}.",
                          misconception=tags.WRONG_KIND)
    return tuple(dims)


def as_array(name, value, shape=None):
    """``value`` as a finite float array of ``shape``, or WrongAnswer saying what was expected."""
    unanswered(name, value)
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise WrongAnswer(f"`{name}` should be an array of numbers, got {_describe(value)}.",
                          misconception=tags.WRONG_KIND) from None
    if shape is not None and array.shape != tuple(shape):
        raise WrongAnswer(f"`{name}` should have shape {tuple(shape)}, got {array.shape}.", misconception=tags.WRONG_KIND)
    if not np.isfinite(array).all():
        raise WrongAnswer(f"`{name}` contains NaN or infinity; every entry should be a finite number.",
                          misconception=tags.WRONG_KIND)
    return array


def as_vector(name, value, size):
    """``value`` as a float vector of ``size`` entries: a flat array, a list, or a row
    (1, size) or column (size, 1) array; otherwise WrongAnswer saying what was expected."""
    unanswered(name, value)
    try:
        array = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        array = None
    if array is not None and array.ndim == 2 and array.size == size and 1 in array.shape:
        value = array.reshape(size)
    return as_array(name, value, shape=(size,))


def as_choice(name, value, options):
    """``value`` as one of the labelled ``options`` (e.g. "A"), case-insensitive."""
    unanswered(name, value)
    labels = ", ".join(repr(o) for o in options)
    if not isinstance(value, str) or value.strip().upper() not in [o.upper() for o in options]:
        raise WrongAnswer(f"`{name}` should be one of {labels} (a string), got {_describe(value)}.",
                          misconception=tags.WRONG_KIND)
    return value.strip().upper()


def _describe(value):
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{type(value).__name__} {text}"


# JupyterLab's output area sets `word-break: break-all` on <pre>, which splits a long message
# inside its words ("gr" / "ows"), and nbgrader's Validate dialog does not wrap its <pre> at all;
# wrap at spaces instead, breaking a word only when it is longer than the line. `body` makes the
# rule outweigh the page's own.
WRAP_STYLE = ("<style>body .jp-OutputArea-output pre, body .output_area pre, body #validation-message pre "
              "{ white-space: pre-wrap; word-break: normal; overflow-wrap: break-word; }</style>")


def shown(message):
    """A check's message as the notebook shows it: after "✘ Not yet.", without a second "Not yet"."""
    text = re.sub(r"^not yet\b[.:,;!]?\s*", "", str(message).strip(), flags=re.IGNORECASE)
    return f"✘ Not yet. {sentence(text)}"


# "✘ Not yet." in dark red: 6.7:1 on JupyterLab's error background (#fdd), where ANSI red (31, drawn
# #e75c58) is 2.7:1 and WCAG AA asks 4.5:1 (tests/test_contrast.py). A 24-bit colour escape is drawn
# as given by JupyterLab, Voila and nbconvert alike.
NOT_YET_RGB = (160, 0, 0)


def coloured(line):
    """``line`` with its "✘ Not yet." in :data:`NOT_YET_RGB`; the rest in the page's text colour."""
    r, g, b = NOT_YET_RGB
    return line.replace("✘ Not yet.", f"\x1b[38;2;{r};{g};{b}m✘ Not yet.\x1b[0m", 1)


def short_tracebacks():
    """In IPython, show a WrongAnswer as its message alone, not a traceback.

    The cell still ends in an error output, so nbgrader and the Validate
    button still count the test as failed. The output's value ends with the
    misconception's tag (:func:`error_value`), which the class report reads;
    the student sees the traceback lines: the message alone, which a style
    rule makes the page wrap between words.
    """
    try:
        shell = get_ipython()  # noqa: F821 (defined inside IPython only)
    except NameError:
        return

    def show(shell, etype, value, tb, tb_offset=None):
        # An error output (as a traceback would be) whose only line is the message.
        shell._showtraceback(etype, error_value(value), [coloured(shown(value))])

    shell.set_custom_exc((WrongAnswer,), show)
    shell.events.register("post_run_cell", _forget_failed_answers)
    # An invisible output of the setup cell: the style rule, for every output of the page.
    shell.display_pub.publish(data={"text/html": WRAP_STYLE, "text/plain": ""}, metadata={})


# An answer cell's first line of code, after any comment lines (the placeholder's comment sits above it):
# ``name = None`` or ``def name(``.
ANSWER_CELL = re.compile(r"\A(?:[ \t]*(?:#[^\n]*)?(?:\n|\Z))*[ \t]*(?:([A-Za-z_]\w*)\s*=\s*None\b|def\s+([A-Za-z_]\w*)\s*\()")


def _forget_failed_answers(result):
    """After an answer cell raised (its first line of code ``name = None`` or ``def name(``), bind
    ``name`` to a :class:`FailedRun`: the test below then says the cell failed, instead of judging
    the value an earlier, successful run left (or calling a blank answer "no answer yet").

    Only for a cell a person ran (the execute_request carries JupyterLab's ``cellId``): grading runs a
    submission once, top to bottom, with nothing left from an earlier run, and keeps its messages."""
    if result.success or result.info is None or not _run_by_a_person():
        return
    match = ANSWER_CELL.match(result.info.raw_cell)
    name = match and (match[1] or match[2])
    if name:
        _shell().user_ns[name] = FailedRun(name)


def _run_by_a_person():
    """True when the cell under way came from a notebook front end (its request names the cell);
    nbclient (nbgrader, the re-check) and consoles send no ``cellId``."""
    kernel = getattr(_shell(), "kernel", None)
    parent = kernel.get_parent("shell") if kernel is not None else None
    return bool(parent and (parent.get("metadata") or {}).get("cellId"))


def _shell():
    """The running IPython shell. A post_run_cell hook runs outside the cell's builtins, where the bare
    name get_ipython is not defined: ask IPython itself."""
    from IPython import get_ipython

    return get_ipython()
