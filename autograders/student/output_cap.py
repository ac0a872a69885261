"""What a cell may print: a cap on ``sys.stdout`` and ``sys.stderr``, per cell.

Used in two places, with the course's ``output_limit`` (:mod:`autograders.student.settings`): in nbgrader's
kernel, as an IPython extension loaded on the kernel's command line::

    python -m ipykernel_launcher -f CONNECTION_FILE \\
        --IPKernelApp.extra_extensions=autograders.student.output_cap --OutputLimit.characters=200000

and during the hand-over (:func:`autograders.student.serve.serve`), which caps what each
request's code prints the same way. Past the limit the cell is stopped
(:class:`OutputLimitExceeded`), at once, whatever the machine's load.
"""

import sys
import threading

from traitlets import Integer
from traitlets.config import Configurable

from ..student.settings import DEFAULT

OUTPUT_MARK = "[output limit:"
CHUNK = 8192  # characters a capped stream gathers before handing them on


class OutputLimitExceeded(BaseException):
    """Raised in a cell that prints past the output limit: the flood stops there, at once, whatever
    the machine's load (printing on, even into nothing, cost a 200,000-line loop seconds of CPU)."""


class Budget:
    """The characters one cell has printed, across the streams that share it."""

    def __init__(self, limit):
        self.limit, self.used, self.noted, self.streams = limit, 0, False, []

    def reset(self):
        self.flush()
        self.used, self.noted = 0, False

    def flush(self):
        for stream in self.streams:
            stream.flush()

    @property
    def exceeded(self):
        return self.used > self.limit


class CappedStream:
    """A stream that passes on at most ``budget.limit`` characters per cell (shared by stdout and
    stderr), then stops the cell (:class:`OutputLimitExceeded`; other threads' output is dropped).

    It hands its text on in chunks of :data:`CHUNK` characters (and on ``flush``, which ipykernel
    calls before a display and after each cell): ipykernel's own stream costs ~0.1 ms per write,
    which made a 20,000-line flood take seconds to reach the limit on a loaded machine."""

    def __init__(self, stream, budget, notice_stream=None):
        self._stream, self._budget, self._notice = stream, budget, notice_stream
        self._pending, self._size = [], 0
        budget.streams.append(self)

    def write(self, text):
        if not isinstance(text, str):
            return self._stream.write(text)  # the TypeError the stream itself raises
        budget = self._budget
        for other in budget.streams:  # the order of stdout and stderr kept
            if other is not self and other._pending:
                other.flush()
        room = budget.limit - budget.used
        budget.used += len(text)
        if room >= len(text):
            self._pending.append(text)
            self._size += len(text)
            if self._size >= CHUNK:
                self._hand_on()
            return len(text)
        if room > 0:
            self._pending.append(text[:room])
        self._hand_on()
        message = f"{OUTPUT_MARK} this cell printed more than {budget.limit} characters and was stopped]"
        if not budget.noted:
            budget.noted = True
            (self._notice or self._stream).write(f"\n{message}\n")
        if threading.current_thread() is threading.main_thread():
            raise OutputLimitExceeded(message)
        return len(text)

    def _hand_on(self):
        if self._pending:
            text, self._pending, self._size = "".join(self._pending), [], 0
            self._stream.write(text)

    def flush(self):
        self._hand_on()
        return self._stream.flush()

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def cap(limit):
    """Replace ``sys.stdout`` and ``sys.stderr`` by capped streams sharing one budget of ``limit``
    characters (:meth:`Budget.reset` before each cell); return the budget."""
    budget = Budget(limit)
    stdout = sys.stdout
    sys.stdout = CappedStream(stdout, budget)
    sys.stderr = CappedStream(sys.stderr, budget, notice_stream=stdout)
    return budget


class OutputLimit(Configurable):
    """The kernel's cap, set on its command line (``--OutputLimit.characters=N``)."""

    characters = Integer(DEFAULT.output_limit, help="characters a cell may print; past them it is stopped").tag(config=True)


def load_ipython_extension(ip):
    """Cap what each cell of this kernel may print (``--IPKernelApp.extra_extensions=...``)."""
    budget = cap(OutputLimit(config=ip.config).characters)
    ip.events.register("pre_run_cell", lambda *_: budget.reset())
    ip.events.register("post_run_cell", lambda *_: budget.flush())
