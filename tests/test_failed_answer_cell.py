"""A test never judges a value its answer cell failed to set in its last run (the practice edition).

In a kernel, a cell that raises leaves its names as they were: a student whose fixed 4.2 cell then
raises would see "✔ Correct" under a red traceback, for the value of the run before. The setup cell's
``short_tracebacks`` binds an answer cell's name to a FailedRun after the cell raises, and every check
says so instead of judging it.
"""

import builtins

import pytest

from autograders.checks import feedback as checks_feedback
from autograders.student import feedback
from autograders.student.feedback import FailedRun, WrongAnswer


class _Kernel:
    """Stands in for ipykernel's: the execute_request under way, as JupyterLab sends it (or nbclient)."""

    def __init__(self, cell_id):
        self.cell_id = cell_id

    def get_parent(self, channel):
        return {"header": {"msg_id": "m1"}, "metadata": {"cellId": self.cell_id} if self.cell_id else {}}


@pytest.fixture
def shell():
    interactive = pytest.importorskip("IPython.core.interactiveshell").InteractiveShell.instance()
    interactive._showtraceback = lambda *args: None
    interactive.kernel = _Kernel("4b1f-cell")
    builtins.get_ipython = lambda: interactive
    feedback.short_tracebacks()
    del builtins.get_ipython  # as in a kernel: post_run_cell hooks run outside the cell's builtins
    try:
        yield interactive
    finally:
        interactive.events.unregister("post_run_cell", feedback._forget_failed_answers)
        interactive.set_custom_exc((), None)
        del interactive.kernel
        for name in ("output", "softmax", "scratch"):
            interactive.user_ns.pop(name, None)


FAILED = "raised an error the last time it ran"


def test_a_value_answer_that_raised_is_not_judged(shell):
    shell.run_cell("output = None  # an array of 2 numbers\noutput = [0.8847, 2.0124]")
    assert shell.user_ns["output"] == [0.8847, 2.0124]
    shell.run_cell("output = None  # an array of 2 numbers\noutput = softmax_of_nothing @ values")  # NameError
    assert isinstance(shell.user_ns["output"], FailedRun)
    with pytest.raises(WrongAnswer, match=FAILED) as raised:
        feedback.as_vector("output", shell.user_ns["output"], 2)
    assert raised.value.misconception == "no-answer"
    shell.run_cell("output = None  # an array of 2 numbers\noutput = [1.0, 2.0]")  # fixed and run again
    assert shell.user_ns["output"] == [1.0, 2.0]


def test_an_answer_cell_whose_placeholder_has_its_comment_above_is_recognised(shell):
    """The notebooks put the placeholder's comment on its own line above it (a long comment at the end of
    the line scrolled the student's code sideways): the answer's name is still read, past the comments."""
    shell.run_cell("# an array of 2 numbers, to 4 decimals\n\noutput = None\noutput = [1.0, 2.0]")
    shell.run_cell("# an array of 2 numbers, to 4 decimals\noutput = None\noutput = undefined_name @ values")
    assert isinstance(shell.user_ns["output"], FailedRun)
    shell.run_cell("# a comment first\ndef softmax(scores):\n    return scores +")
    assert isinstance(shell.user_ns["softmax"], FailedRun)
    shell.run_cell("scratch = 1")
    shell.run_cell("# a comment, then code that is not a placeholder\nscratch = 2\noutput = None\n1 / 0")
    assert shell.user_ns["scratch"] == 2 and shell.user_ns["output"] is None


@pytest.mark.parametrize("source, name", [
    ("x = None  # a number", "x"), ("# a number\nx = None", "x"), ("\n  # one\n\n# two\nx = None", "x"),
    ("# a comment\ndef f(a):", "f"), ("  x = None", "x"), ("# only a comment", None), ("y = 3\nx = None", None),
    ("#x = None", None), ("xs = [None]", None)])
def test_the_answer_name_is_the_first_line_of_code_s(source, name):
    match = feedback.ANSWER_CELL.match(source)
    assert (match and (match[1] or match[2])) == name


def test_a_first_run_that_raised_is_not_called_blank(shell):
    shell.run_cell("output = None  # an array of 2 numbers\noutput = [1, 2][5]")  # IndexError on the first try
    with pytest.raises(WrongAnswer, match=FAILED):
        feedback.unanswered("output", shell.user_ns["output"])


def test_a_function_answer_whose_cell_did_not_compile_is_not_the_old_one(shell):
    shell.run_cell("def softmax(scores):\n    return scores")
    shell.run_cell("def softmax(scores):\n    return scores +")  # SyntaxError: the old def would stay
    with pytest.raises(WrongAnswer, match=FAILED):
        checks_feedback.call("softmax", shell.user_ns["softmax"], [1.0, 2.0])


def test_other_cells_that_raise_keep_their_names(shell):
    shell.run_cell("scratch = 1")
    shell.run_cell("scratch = 2\n1 / 0")  # not an answer cell: no placeholder line
    assert shell.user_ns["scratch"] == 2


def test_grading_runs_keep_their_messages(shell):
    """nbclient (nbgrader's Autograde, the re-check) names no cell: a blank answer whose cell raised
    is still "no answer yet", as before."""
    shell.kernel = _Kernel(None)
    shell.run_cell("output = None  # an array of 2 numbers\noutput = [1, 2][5]")
    assert shell.user_ns["output"] is None
    with pytest.raises(WrongAnswer, match="has no answer yet"):
        feedback.unanswered("output", shell.user_ns["output"])
