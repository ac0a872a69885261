"""The student's side of the hand-over: serving the answers from the student's own process, and the
checker's handle on it.

A submission runs once, in one sandboxed kernel (:class:`autograders.grading.autograde.SandboxExecute`).
After its last cell that same process runs :func:`serve` over two pipes it was given at launch: it
hands answers over as data and answers calls of the student's functions, one reply per request
(:mod:`autograders.student.protocol`). :class:`StudentSide` is that process seen from the checker
(every reply checked, every wait with a deadline, the process killed at the first fault);
:class:`Handover` is the answers the tests use, fetched once, and the calls of the student's
functions. What a fault did is said in words (:func:`fault`) for the verdicts of
:mod:`autograders.grading.checker`.
"""

import contextlib
import gc
import math
import os
import select
import signal
import sys
import time

from ..student.settings import DEFAULT
from .output_cap import cap
from .protocol import ProtocolError, check_reply, decode, decode_validated, encode, raised, raised_info, receive, send

GRACE = 3  # seconds past a request's limit before the student's process is killed from outside
START_TIMEOUT = 60  # seconds for the student's process to answer the first request at all
INTERFERED = "the hand-over of your answers was interfered with"


class _CellTimeout(BaseException):
    pass


class _Alarm:
    """The in-process time limit (a courtesy: the checker kills the process from outside)."""

    def __init__(self):
        self.fired = False

    def __call__(self, signum, frame):
        self.fired = True
        raise _CellTimeout()

    @contextlib.contextmanager
    def limit(self, seconds):
        self.fired = False
        signal.signal(signal.SIGALRM, self)
        signal.alarm(max(1, int(seconds)))
        try:
            yield
        except _CellTimeout:
            self.fired = True
        finally:
            signal.alarm(0)


class _Discard:
    """Where what the student's functions print during the hand-over goes: nobody reads it."""

    def write(self, text):
        return len(text)

    def flush(self):
        pass


def serve(fd_in, fd_out):
    """Hand the answers over and answer calls of the student's functions, one reply per request, until
    "bye" (run by the grader in the student's kernel, after the last cell, as
    ``from autograders.student.serve import serve; serve(IN, OUT)``). What a request's code
    prints is discarded, capped as in a cell (:mod:`.output_cap`, the limit the "hello" request gives):
    past it the function is stopped and its reply is that error."""
    from IPython import get_ipython

    namespace = get_ipython().user_ns
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = _Discard()
    functions, alarm, budget = [], _Alarm(), cap(DEFAULT.output_limit)
    try:
        while True:
            request = receive(fd_in)
            op, seq, seconds = request.get("op"), request.get("seq"), request.get("timeout", DEFAULT.cell_timeout)
            budget.reset()
            if op == "hello":
                budget.limit = int(request.get("output_limit", budget.limit))
                reply = {"hello": True}
            elif op == "get":
                reply = {"missing": True}
                try:
                    with alarm.limit(seconds):  # encoding runs the student's code too (a __repr__)
                        if request["name"] in namespace:
                            reply = {"value": encode(namespace[request["name"]], functions)}
                except BaseException:  # noqa: BLE001 (OutputLimitExceeded, or what their code raised)
                    reply = {"overflow": True} if budget.exceeded else {"missing": True}
                reply = {"timeout": True} if alarm.fired else reply
            elif op == "call":
                reply = {"timeout": True}
                try:
                    with alarm.limit(seconds):
                        args = [decode(a, _Checker(fd_in, fd_out, seq)) for a in request["args"]]
                        reply = {"value": encode(functions[request["function"]](*args), functions)}
                except BaseException as error:  # noqa: BLE001 (the student's function: any error is an answer)
                    reply = {"raised": raised_info(error)}
                    _forget_the_error()
                reply = {"timeout": True} if alarm.fired else reply
            else:
                return
            send(fd_out, {"seq": seq, **reply})
    finally:
        sys.stdout, sys.stderr = saved


def _forget_the_error():
    """Drop what keeps a failed call's frames alive (``sys.last_*``): a call that filled the memory limit
    and raised MemoryError would otherwise hold it, and the next request fail."""
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            setattr(sys, name, None)
    gc.collect()


class _Checker:
    """A function the checker passed to the student's (Problem 3.5's ``f``), called back: the arguments go
    over as data, the checker runs its own function and sends the result (or the error) back."""

    def __init__(self, fd_in, fd_out, seq):
        self.fd_in, self.fd_out, self.seq = fd_in, fd_out, seq

    def call(self, handle, args, name="function"):
        send(self.fd_out, {"seq": self.seq, "callback": {"function": handle, "args": [encode(a) for a in args]}})
        reply = receive(self.fd_in)
        if reply.get("op") != "returned" or reply.get("seq") != self.seq:
            raise RuntimeError(f"the checker did not answer the call of {name}")
        if "raised" in reply:
            raise raised(reply["raised"])
        return decode(reply["value"])


def _size(value):
    """How many numbers ``value`` holds (an array's elements, 1 for anything else)."""
    return int(getattr(value, "size", 1)) if hasattr(value, "shape") else 1


class Stopped(Exception):
    """The student's process stopped answering properly: ``kind`` is "timeout", "stopped" or
    "interfered"; the process has been killed."""

    def __init__(self, kind, detail, earlier=False):
        super().__init__(detail)
        self.kind, self.detail, self.earlier = kind, detail, earlier


class StudentSide:
    """The student's process serving the hand-over, seen from the checker: every reply is checked, every
    wait has a deadline, and at the first fault ``kill`` (which stops the process) is called.
    ``write_fd``/``read_fd``: the checker's ends of the two pipes the process was given at launch."""

    def __init__(self, write_fd, read_fd, kill):
        self.write_fd, self.read_fd, self._kill = write_fd, read_fd, kill
        self.seq = 0
        os.set_blocking(self.write_fd, False)  # a process that reads no more cannot block the checker
        self.alive = True

    def ask(self, op, seconds, callbacks=((), 0), **fields):
        """(kind, content) of the reply to one request, within ``seconds``; raises :class:`Stopped`.
        ``callbacks``: (the checker's functions the request passed as handles, the size of its largest
        argument), the functions run here when the student's code calls them, within the same deadline."""
        if not self.alive:
            raise Stopped("stopped", "the student's process had already stopped")
        self.seq += 1
        deadline = time.monotonic() + seconds
        try:
            if select.select([self.read_fd], [], [], 0)[0]:  # before any request: unasked-for bytes (or its end)
                if os.read(self.read_fd, 1):
                    raise ProtocolError("a message it was not asked for", earlier=True)
                raise EOFError("the student's process stopped")
            send(self.write_fd, {"op": op, "seq": self.seq, **fields}, deadline)
            while True:
                kind, content = check_reply(receive(self.read_fd, deadline), op, self.seq)
                if kind != "callback":
                    return kind, content
                self._answer(content, *callbacks, deadline)
        except ProtocolError as error:
            self.kill()
            raise Stopped("interfered", f"it sent {error}", error.earlier) from None
        except TimeoutError:
            self.kill()
            raise Stopped("timeout", f"no answer within {seconds:g} s") from None
        except (EOFError, OSError) as error:
            self.kill()
            raise Stopped("stopped", f"its process stopped ({type(error).__name__})") from None

    def _answer(self, callback, callbacks, largest, deadline):
        """Run the checker's function a callback names, on the data the student side sent (no array bigger than
        ``largest`` numbers: the largest argument the call passed); send its result."""
        if not 0 <= callback["function"] < len(callbacks):
            raise ProtocolError(f"a callback of function {callback['function']}, which was not passed")
        args = [decode_validated(a, None) for a in callback["args"]]
        try:
            too_big = next((a for a in args if _size(a) > largest), None)
            if too_big is not None:  # the checker's own function runs here, with no deadline of its own
                raise ValueError(f"an argument of {_size(too_big)} numbers, more than the largest the check passed "
                                 f"({largest})")
            reply = {"value": encode(callbacks[callback["function"]](*args))}
        except Exception as error:  # noqa: BLE001 (the student's arguments: the error goes back to their function)
            reply = {"raised": {"type": type(error).__name__[:100], "message": str(error)[:1000]}}
        send(self.write_fd, {"op": "returned", "seq": self.seq, **reply}, deadline)

    def kill(self):
        """Stop the process (``kill``: the kernel, with bubblewrap's whole sandbox), close the pipes."""
        if self.alive:
            self.alive = False
            with contextlib.suppress(Exception):
                self._kill()
        self._close_pipes()

    def close(self):
        """Say goodbye (``serve`` returns: the kernel's cell ends) and close the pipes."""
        if self.alive:
            with contextlib.suppress(OSError, TimeoutError):
                send(self.write_fd, {"op": "bye"}, time.monotonic() + 1)
            self.alive = False
        self._close_pipes()

    def _close_pipes(self):
        for fd in (self.write_fd, self.read_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.write_fd = self.read_fd = -1


class Unconfirmed(BaseException):
    """Raised inside a test when a call of the student's function could not be completed
    (a BaseException: the checks' ``except Exception`` must not turn it into a wrong answer)."""


class Handover:
    """The answers of one run, handed over once by its process (``side``; None when no process was left to
    ask: ``broken`` says why). ``cells``: [(label, source)] of the code cells that ran; ``trouble``: {cell
    index: what went wrong when it ran} (a timeout, a flood, a crash, the memory limit), from the run itself."""

    def __init__(self, side, cells, wanted, settings, trouble=None, broken=None):
        self.side, self.cells, self.wanted = side, list(cells), list(wanted)
        self.settings, self.timeout = settings, settings.cell_timeout
        self.trouble = dict(trouble or {})
        self.unavailable = {}  # answer name -> what went wrong handing it over
        self.broken = broken  # why there is no answer at all
        self.values, self.fetched = {}, False
        self.deadline = None  # the current test's

    def ready(self):
        """True once the answers have been handed over (asked for once, before the first test)."""
        if not self.fetched:
            self.fetched = True
            self._fetch()
        return self.broken is None

    def _fetch(self):
        if self.side is None:
            self.broken = self.broken or "your notebook's process had stopped before it could hand your answers over"
            return
        try:
            self.side.ask("hello", START_TIMEOUT, output_limit=self.settings.output_limit)
        except Stopped as error:
            self.broken, self.side = fault(error, "the hand-over began", self.timeout), None
            return
        for at, name in enumerate(self.wanted):
            try:
                kind, content = self.side.ask("get", self.timeout + GRACE, name=name, timeout=self.timeout)
            except Stopped as error:
                why = fault(error, f"handing over `{name}`", self.timeout)
                self.unavailable.update({rest: why for rest in self.wanted[at:]})
                self.side = None
                return
            if kind == "timeout":
                self.unavailable[name] = f"handing over `{name}` took more than {self.timeout} s"
            elif kind == "overflow":
                self.unavailable[name] = (f"handing over `{name}` printed more than {self.settings.output_limit} "
                                          "characters and was stopped")
            elif kind == "value":
                self.values[name] = content

    def namespace(self):
        """The answers, decoded (function answers call the student's process); one that cannot be read is
        left out, and why is noted."""
        remote, values = _Handles(self), {}
        for name, data in list(self.values.items()):
            try:
                values[name] = decode_validated(data, remote)
            except ProtocolError as error:
                self.unavailable[name] = f"{INTERFERED} while handing over `{name}`: it sent {error}"
                del self.values[name]
        return values

    def call(self, handle, args, name):
        if self.side is None:
            raise Unconfirmed(f"your function `{name}` could not be called: your notebook's process had stopped")
        remaining = self.deadline - time.monotonic() if self.deadline else self.timeout
        if remaining <= 0:
            raise Unconfirmed(f"this test ran past the {self.timeout} s limit")
        seconds = math.ceil(remaining)
        try:
            callbacks = []  # the checker's own functions among the arguments (3.5's f): called back, never sent
            encoded = [encode(a, callbacks) for a in args]
            largest = max([_size(a) for a in args], default=0)  # what a callback may send them: no bigger
            kind, content = self.side.ask("call", seconds + GRACE, callbacks=(callbacks, largest), function=handle,
                                          args=encoded, timeout=seconds)
            result = decode_validated(content, _Handles(self)) if kind == "value" else None
        except (Stopped, ProtocolError) as error:
            if not isinstance(error, Stopped):
                self.side.kill()
                error = Stopped("interfered", f"it sent {error}")
            self.side = None
            raise Unconfirmed(fault(error, f"your function `{name}` ran", self.timeout)) from None
        if kind == "timeout":
            raise Unconfirmed(f"your function `{name}` ran past the {self.timeout} s limit")
        if kind == "raised":
            raise raised(content)
        return result

    def close(self):
        if self.side is not None:
            self.side.close()
            self.side = None


class _Handles:
    """The student's functions, called through the hand-over (``session``: autograders/checks/own_work.py reads
    the student's cells there, ``session.cells``)."""

    def __init__(self, handover):
        self.session = handover

    def call(self, handle, args, name="function"):
        return self.session.call(handle, args, name)


def fault(error, what, timeout):
    """A sentence for what a :class:`Stopped` did to ``what`` (a function, an answer, the hand-over)."""
    if error.kind == "timeout":
        return f"no answer within the {timeout} s limit while {what}, so your notebook's process was stopped"
    if error.kind == "interfered":
        return f"{INTERFERED} while {what}: {error.detail}"
    return f"your notebook's process stopped while {what} (it crashed, exited or closed its pipes)"
