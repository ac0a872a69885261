"""The re-check's student side: the sandboxed process that runs a student's code, and the
checker's handle on it.

:func:`serve` runs inside the sandbox (``python -m autograders.grading.student_side serve IN OUT``): it runs cells, hands answers over as data and answers calls of
the student's functions, one reply per request (:mod:`autograders.grading.protocol`).
:class:`StudentSide` is that process seen from the checker (every reply checked, every wait with a
deadline, killed with its process group at the first fault); :class:`Session` keeps one going over a
whole re-check (restarted after a fault, the cells that had completed replayed, the faulty one left
out). What a fault did is said in words (:func:`fault`) for the verdicts of
:mod:`autograders.grading.recheck`.
"""

import contextlib
import gc
import math
import os
import select
import signal
import subprocess
import sys
import time

from ..common.settings import DEFAULT
from . import sandbox
from .output_cap import OutputLimitExceeded, cap
from .protocol import ProtocolError, check_reply, decode, decode_validated, encode, raised, raised_info, receive, send

GRACE = 3  # seconds past a cell's limit before the student side is killed from outside
START_TIMEOUT = 60  # seconds for a new student side to answer at all
INTERFERED = "the re-check was interfered with"
SERVE_MODULE = "autograders.grading.student_side"  # ``python -m`` it, with ``serve IN OUT``


class _CellTimeout(BaseException):
    pass


class _Alarm:
    """The in-process time limit (the student side's own, a courtesy: the checker kills it from outside)."""

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


def serve(fd_in, fd_out):
    """The student side: run cells, hand over answers, answer calls, one reply per request
    (``python -m autograders.grading.student_side serve IN OUT`` inside the sandbox). What a
    request's code prints is capped as in nbgrader's kernel (:mod:`.output_cap`, the limit
    the "hello" request gives): past it the cell is stopped and its reply is "overflow"."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    functions, alarm, budget = [], _Alarm(), cap(DEFAULT.output_limit)
    while True:
        request = receive(fd_in)
        op, seq, seconds = request.get("op"), request.get("seq"), request.get("timeout", DEFAULT.cell_timeout)
        budget.reset()
        if op == "hello":
            budget.limit = int(request.get("output_limit", budget.limit))
            reply = {"hello": True}
        elif op == "run":
            result = None
            with alarm.limit(seconds):
                with contextlib.suppress(OutputLimitExceeded):  # IPython shows it; in case its report printed on
                    result = shell.run_cell(request["source"], store_history=False, silent=True)
            if isinstance(getattr(result, "error_in_exec", None), MemoryError):
                # The cell spent the memory limit: what the allocator kept of it can fail any later request.
                # Stop here; the checker blames this cell and a new process replays the others without it.
                os._exit(3)
            if result is None or not result.success:
                _forget_the_error(shell)
            reply = {"timeout": True} if alarm.fired else {"overflow": True} if budget.exceeded else {"done": True}
        elif op == "get":
            reply = {"missing": True}
            with alarm.limit(seconds):
                if request["name"] in shell.user_ns:
                    reply = {"value": encode(shell.user_ns[request["name"]], functions)}
            reply = {"timeout": True} if alarm.fired else reply
        elif op == "call":
            reply = {"timeout": True}
            try:
                with alarm.limit(seconds):
                    args = [decode(a, _Checker(fd_in, fd_out, seq)) for a in request["args"]]
                    reply = {"value": encode(functions[request["function"]](*args), functions)}
            except BaseException as error:  # noqa: BLE001 (the student's function: any error is an answer)
                reply = {"raised": raised_info(error)}
            reply = {"timeout": True} if alarm.fired else reply
        else:
            return
        send(fd_out, {"seq": seq, **reply})


def _forget_the_error(shell):
    """Drop what keeps a failed cell's frames alive (``sys.last_*``, IPython's last result): a cell that
    filled the memory limit and raised MemoryError would otherwise hold it, and the next request fail.
    Only after a failed cell: a full collection costs tens of milliseconds with numpy and matplotlib
    loaded, and a cell that succeeded left no traceback behind."""
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            setattr(sys, name, None)
    shell.last_execution_result = None
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
    """The student side stopped answering properly: ``kind`` is "timeout", "stopped" or
    "interfered"; the process has been killed."""

    def __init__(self, kind, detail, earlier=False):
        super().__init__(detail)
        self.kind, self.detail, self.earlier = kind, detail, earlier


class StudentSide:
    """The sandboxed student process, seen from the checker: every reply is checked, every
    wait has a deadline, and at the first fault the process (and its group) is killed."""

    def __init__(self, settings=DEFAULT, command=None):
        self.box = sandbox.Sandbox(settings)
        self.seq = 0
        to_child, self.write_fd = os.pipe()
        self.read_fd, from_child = os.pipe()
        try:
            inner = command or [sys.executable, "-m", SERVE_MODULE, "serve"]
            inner = [*inner, str(to_child), str(from_child)]
            self.process = subprocess.Popen(
                self.box.command(inner), env={**self.box.env(), "NBGRADER_EXECUTION": "recheck"},
                pass_fds=(to_child, from_child), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True,
            )
        except BaseException:
            for fd in (self.write_fd, self.read_fd):
                os.close(fd)
            self.box.close()
            raise
        finally:
            os.close(to_child)
            os.close(from_child)
        os.set_blocking(self.write_fd, False)  # a side that reads no more cannot block the checker
        self.alive = True

    def ask(self, op, seconds, callbacks=((), 0), **fields):
        """(kind, content) of the reply to one request, within ``seconds``; raises :class:`Stopped`.
        ``callbacks``: (the checker's functions the request passed as handles, the size of its largest
        argument), the functions run here when the student's code calls them, within the same deadline."""
        if not self.alive:
            raise Stopped("stopped", "the student side had already stopped")
        self.seq += 1
        deadline = time.monotonic() + seconds
        try:
            if select.select([self.read_fd], [], [], 0)[0]:  # before any request: unasked-for bytes (or its end)
                if os.read(self.read_fd, 1):
                    raise ProtocolError("a message it was not asked for", earlier=True)
                raise EOFError("the student side stopped")
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
        """Kill the process with its process group (bubblewrap: what it sandboxed dies with it), close the pipes, remove the sandbox (as root: kill its user's processes)."""
        self.alive = False
        for pgid in (self.process.pid,):
            with contextlib.suppress(OSError):
                os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(OSError):
            self.process.kill()
        with contextlib.suppress(Exception):
            self.process.wait(timeout=10)
        for fd in (self.write_fd, self.read_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.write_fd = self.read_fd = -1
        self.box.close()

    def close(self):
        if self.alive:
            with contextlib.suppress(OSError, TimeoutError):
                send(self.write_fd, {"op": "bye"}, time.monotonic() + 1)
            with contextlib.suppress(Exception):
                self.process.wait(timeout=2)
        self.kill()


class Unconfirmed(BaseException):
    """Raised inside a test when a call of the student's function could not be completed
    (a BaseException: the checks' ``except Exception`` must not turn it into a wrong answer)."""


class Session:
    """The student side over a whole re-check: started, restarted after a fault (the cells
    that had completed replayed, the faulty one left out), the answers handed over."""

    def __init__(self, cells, wanted, settings, command=None):
        self.cells = cells  # [(label, source)]
        self.wanted, self.settings, self.timeout = list(wanted), settings, settings.cell_timeout
        self.command = command
        self.side, self.values, self.generation, self.starts = None, {}, 0, 0
        self.trouble = {}  # cell index -> what went wrong (left out of every later run)
        self.unavailable = {}  # answer name -> what went wrong handing it over
        self.broken = None  # why there is no student side at all
        self.deadline = None  # the current test's

    def ready(self):
        """True once a student side has run the cells and handed the answers over."""
        while self.side is None and self.broken is None:
            self._start()
        return self.broken is None

    def _start(self):
        if self.starts > self.settings.max_restarts:
            self.broken = f"the re-check gave up after restarting your code {self.settings.max_restarts} times"
            return
        self.starts += 1
        try:
            side = StudentSide(self.settings, self.command)
        except Exception as error:  # noqa: BLE001 (no sandbox: say so)
            self.broken = f"the re-check could not start a clean process ({type(error).__name__}: {error})"
            return
        try:
            side.ask("hello", START_TIMEOUT, output_limit=self.settings.output_limit)
        except Stopped as error:
            self.broken = f"the re-check's clean process did not start ({error.detail})"
            return
        previous = None  # (what, key) of the request before: a late reply to it, or bytes after it, are its fault
        for index, (_, source) in enumerate(self.cells):
            if index in self.trouble:
                continue
            try:
                kind, _ = side.ask("run", self.timeout + GRACE, source=source, timeout=self.timeout)
            except Stopped as error:
                self._blame(previous if error.earlier and previous else ("cell", index), error)
                return
            previous = ("cell", index)
            if kind == "timeout":
                self.trouble[index] = f"cell {self.cells[index][0]} ran past the {self.timeout} s limit in the re-check"
            elif kind == "overflow":  # stopped where it was: what it had not set yet is missing
                self.trouble[index] = (f"cell {self.cells[index][0]} printed more than {self.settings.output_limit} "
                                       "characters in the re-check and was stopped")
        values = {}
        for name in self.wanted:
            if name in self.unavailable:
                continue
            try:
                kind, content = side.ask("get", self.timeout + GRACE, name=name, timeout=self.timeout)
            except Stopped as error:
                self._blame(previous if error.earlier and previous else ("name", name), error)
                return
            previous = ("name", name)
            if kind == "timeout":
                self.unavailable[name] = f"handing over `{name}` took more than {self.timeout} s"
            elif kind == "value":
                values[name] = content
        self.side, self.values = side, values
        self.generation += 1

    def _blame(self, culprit, error):
        what, key = culprit
        if what == "cell":
            self.trouble[key] = fault(error, f"cell {self.cells[key][0]}", self.timeout)
        else:
            self.unavailable[key] = fault(error, f"handing over `{key}`", self.timeout)

    def namespace(self):
        """The answers, decoded (function answers call this session's student side); one
        that cannot be read is left out, and why is noted."""
        remote, values = _Handles(self, self.generation), {}
        for name, data in list(self.values.items()):
            try:
                values[name] = decode_validated(data, remote)
            except ProtocolError as error:
                self.unavailable[name] = f"{INTERFERED} while handing over `{name}`: it sent {error}"
                del self.values[name]
        return values

    def call(self, generation, handle, args, name):
        if self.side is None or generation != self.generation:
            raise Unconfirmed(f"your function `{name}` could not be called: the re-check's process had stopped")
        remaining = self.deadline - time.monotonic() if self.deadline else self.timeout
        if remaining <= 0:
            raise Unconfirmed(f"this test ran past the {self.timeout} s limit in the re-check")
        seconds = math.ceil(remaining)
        try:
            callbacks = []  # the checker's own functions among the arguments (3.5's f): called back, never sent
            encoded = [encode(a, callbacks) for a in args]
            largest = max([_size(a) for a in args], default=0)  # what a callback may send them: no bigger
            kind, content = self.side.ask("call", seconds + GRACE, callbacks=(callbacks, largest), function=handle,
                                          args=encoded,
                                          timeout=seconds)
            result = decode_validated(content, _Handles(self, generation)) if kind == "value" else None
        except (Stopped, ProtocolError) as error:
            if not isinstance(error, Stopped):
                self.side.kill()
                error = Stopped("interfered", f"it sent {error}")
            self.side = None
            raise Unconfirmed(fault(error, f"your function `{name}`", self.timeout)) from None
        if kind == "timeout":
            raise Unconfirmed(f"your function `{name}` ran past the {self.timeout} s limit in the re-check")
        if kind == "raised":
            raise raised(content)
        return result

    def close(self):
        if self.side is not None:
            self.side.close()
            self.side = None


class _Handles:
    """The student side's functions as one session's generation knows them."""

    def __init__(self, session, generation):
        self.session, self.generation = session, generation

    def call(self, handle, args, name="function"):
        return self.session.call(self.generation, handle, args, name)


def fault(error, what, timeout):
    """A sentence for what a :class:`Stopped` did to ``what`` (a cell, a function, an answer)."""
    if error.kind == "timeout":
        return f"{what} ran past the {timeout} s limit in the re-check and its process was stopped"
    if error.kind == "interfered":
        return f"{INTERFERED} while {what} ran: {error.detail}"
    return f"the re-check's process stopped while {what} ran (it crashed, exited or closed its pipes)"



if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    serve(int(sys.argv[2]), int(sys.argv[3]))
