"""Re-check a graded submission in a clean process: monkeypatching earns nothing.

nbgrader (like every autograder that runs tests in the student's kernel) trusts
what the kernel reports: a student who writes ``np.allclose = lambda *a, **k:
True`` or ``check.q1_1_d_k = print`` in an answer cell passes every test. So after
nbgrader, :func:`recheck` grades the submission again, keeping the two sides apart:

- the **student side** (a fresh sandboxed process, see :mod:`autograders.grading.sandbox`)
  runs the autograded notebook's code cells except the test cells (setup and
  data cells as nbgrader restored them, the student's answers and own cells), one
  request per cell, then hands over the answers the tests use as **data** (JSON;
  numpy arrays as ``.npy`` read with ``allow_pickle=False``: nothing the student
  side produced is ever unpickled). A function answer stays on the student side:
  the checker gets a handle, and each call sends the arguments over and the
  result back, as data;
- the **checker side** (the process calling :func:`recheck`, where no student code
  ever ran) runs the instructor's setup and data cells from the source notebook,
  puts the student's answers in, and runs each test cell of the source notebook
  (visible and hidden tests) against them. Only these checks decide.

Student code shares the student side's process, so everything that comes from it
is untrusted data: each reply is read with a deadline and a size limit, must
answer the request just sent (its sequence number) and match an explicit schema
(keys, types, lengths, nesting, array dtypes and sizes); anything else is
interference. A cell's time limit is enforced from outside: past it (and a few
seconds' grace for the in-process alarm) the student side is killed with its
process group, a new one replays the cells that had completed, and the re-check
goes on without the cell that hung, as :class:`autograders.grading.autograde.SandboxExecute`
does for nbgrader's kernel.

The verdict is per test cell: the checks passed → its points; anything else → 0
with a reason. "Could not confirm" (a cell or a function call of the student's
timed out, crashed or interfered with the re-check) names the cell or function;
"tampering suspected" is said only when nbgrader passed the test and the clean
re-check of the same answers, which ran without trouble, failed it.

    recheck(source_notebook_path, autograded_notebook_path)
        -> {grade_id: Checked(score, max_score, message or None, misconception, confirmed)}
"""

import ast
import base64
import binascii
import builtins
import contextlib
import io
import json
import math
import os
import re
import select
import signal
import struct
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np
from numpy.lib import format as npy_format

from . import sandbox
from .output_cap import OutputLimitExceeded, cap
from .settings import DEFAULT, Settings

MAX_MESSAGE = 16 * 1024 * 1024  # bytes in one message from the student side
MAX_DEPTH = 24  # containers nested in one value (encode stops at 20)
MAX_ITEMS = 200_000  # values in one message
MAX_TEXT = 1_000_000  # characters of one string
MAX_ARRAY = 8 * 1024 * 1024  # bytes of one array's data
ARRAY_KINDS = "biufcUS"  # bool, int, uint, float, complex, str, bytes: nothing with fields or objects
GRACE = 3  # seconds past a cell's limit before the student side is killed from outside
START_TIMEOUT = 60  # seconds for a new student side to answer at all
TAMPERING = "tampering suspected: nbgrader passed this test, but a clean re-check of your answers did not"
NOT_CONFIRMED = "could not confirm this test, so it scores 0"
INTERFERED = "the re-check was interfered with"


@dataclass
class Checked:
    """One test cell's re-check. Unpacks as ``score, max_score, message``. ``misconception``: the
    tag of the check's own ``WrongAnswer`` when the clean run found the answer wrong, else None;
    ``confirmed``: False when the re-check could not run the test on the student's answers;
    ``hidden``: the test failed in its hidden tests, which only the re-check runs (``grade`` sets them
    aside in nbgrader's kernel: a wrong answer, never "tampering")."""

    score: float
    max_score: float
    message: str = None
    misconception: str = None
    confirmed: bool = True
    hidden: bool = False

    def __iter__(self):
        return iter((self.score, self.max_score, self.message))

    def __getitem__(self, index):
        return tuple(self)[index]


class ProtocolError(ValueError):
    """Something from the student side that is not what the protocol allows; ``earlier``:
    it came from what the previous request set off (a reply to it, or bytes sent after it)."""

    def __init__(self, message, earlier=False):
        super().__init__(message)
        self.earlier = earlier


# --- data across the boundary -------------------------------------------------------


def encode(value, functions=None, depth=0):
    """``value`` as JSON-able data. Functions go into ``functions`` (a list) and are sent
    as handles; anything else that is not plain data is sent as its type name and repr."""
    if depth > 20:
        return {"opaque": "object", "repr": "(too deeply nested)"}
    kind = type(value)
    if value is None or kind in (bool, str):
        return value
    if kind is int:
        return value if abs(value) < 2**53 else {"int": str(value)}
    if kind is float:
        return value if math.isfinite(value) else {"float": repr(value)}
    if kind is complex:
        return {"complex": [encode(value.real), encode(value.imag)]}
    if value is Ellipsis:
        return {"ellipsis": True}
    if kind in (tuple, list):
        return {kind.__name__: [encode(v, functions, depth + 1) for v in value]}
    if kind is dict and all(type(k) is str for k in value):
        return {"dict": {k: encode(v, functions, depth + 1) for k, v in value.items()}}
    if isinstance(value, (np.ndarray, np.generic)) and type(value).__module__ == "numpy":
        array = np.asarray(value)
        if array.dtype.kind in ARRAY_KINDS and array.dtype.fields is None:
            buffer = io.BytesIO()
            np.save(buffer, array, allow_pickle=False)
            return {"npy": base64.b64encode(buffer.getvalue()).decode(), "scalar": isinstance(value, np.generic)}
    if callable(value) and not isinstance(value, type) and functions is not None:
        functions.append(value)
        return {"function": len(functions) - 1, "name": str(getattr(value, "__name__", "function"))[:100]}
    try:
        text = str(repr(value))
    except Exception:  # noqa: BLE001 (the student's __repr__)
        text = f"<{kind.__name__} object>"
    return {"opaque": kind.__name__[:100], "repr": text[:200]}


# Each shape of a value that is not a JSON scalar: its exact keys.
_SHAPES = {frozenset(k): k[0] for k in (("int",), ("float",), ("complex",), ("ellipsis",), ("tuple",), ("list",),
                                         ("dict",), ("npy", "scalar"), ("function", "name"), ("opaque", "repr"))}


def _text(value, limit, what):
    if type(value) is not str or len(value) > limit:
        raise ProtocolError(f"{what} should be a string of at most {limit} characters")
    return value


def validate(data, depth=0, budget=None):
    """Raise :class:`ProtocolError` unless ``data`` is exactly what :func:`encode` makes:
    the allowed shapes and types, at most ``MAX_DEPTH`` containers deep, ``MAX_ITEMS``
    values, arrays of plain dtypes whose header matches their bytes."""
    budget = budget if budget is not None else [MAX_ITEMS]
    budget[0] -= 1
    if budget[0] < 0:
        raise ProtocolError(f"more than {MAX_ITEMS} values in one message")
    if depth > MAX_DEPTH:
        raise ProtocolError(f"values nested more than {MAX_DEPTH} deep")
    kind = type(data)
    if data is None or kind in (bool, float):
        return
    if kind is str:
        _text(data, MAX_TEXT, "a string")
        return
    if kind is int:
        if abs(data) >= 2**53:
            raise ProtocolError("an integer out of range")
        return
    if kind is not dict:
        raise ProtocolError(f"a {kind.__name__} where a value was expected")
    shape = _SHAPES.get(frozenset(data))
    if shape is None:
        raise ProtocolError(f"a value with the keys {sorted(map(str, data))[:6]}")
    item = data[shape]
    if shape == "int":
        if type(item) is not str or not re.fullmatch(r"-?[0-9]{1,4000}", item):
            raise ProtocolError("a malformed integer")
    elif shape == "float":
        if item not in ("nan", "inf", "-inf"):
            raise ProtocolError("a malformed float")
    elif shape == "complex":
        if type(item) is not list or len(item) != 2:
            raise ProtocolError("a malformed complex number")
        for part in item:
            if type(part) not in (int, float) and not (type(part) is dict and set(part) == {"float"}):
                raise ProtocolError("a malformed complex number")
            validate(part, depth + 1, budget)
    elif shape == "ellipsis":
        if item is not True:
            raise ProtocolError("a malformed Ellipsis")
    elif shape in ("tuple", "list"):
        if type(item) is not list:
            raise ProtocolError(f"a malformed {shape}")
        for value in item:
            validate(value, depth + 1, budget)
    elif shape == "dict":
        if type(item) is not dict:
            raise ProtocolError("a malformed dict")
        for key, value in item.items():
            _text(key, 1000, "a dict key")
            validate(value, depth + 1, budget)
    elif shape == "npy":
        if type(data["scalar"]) is not bool:
            raise ProtocolError("a malformed array")
        array_header(item, data["scalar"])
    elif shape == "function":
        if type(item) is not int or not 0 <= item < 1_000_000:
            raise ProtocolError("a malformed function handle")
        _text(data["name"], 100, "a function's name")
    else:  # opaque
        _text(item, 100, "a type name")
        _text(data["repr"], 200, "a repr")


def array_header(text, scalar=False):
    """(raw .npy bytes, dtype, shape) of a base64 ``.npy`` from the student side, checked
    before numpy reads it: version 1 or 2, a plain dtype, data exactly as long as the header says."""
    _text(text, 2 * MAX_ARRAY, "an array")
    try:
        raw = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise ProtocolError("an array that is not base64") from None
    stream = io.BytesIO(raw)
    try:
        version = npy_format.read_magic(stream)
        reader = {(1, 0): npy_format.read_array_header_1_0, (2, 0): npy_format.read_array_header_2_0}[version]
        shape, _, dtype = reader(stream)
    except (ValueError, KeyError, TypeError, SyntaxError, OverflowError, RecursionError, MemoryError):
        raise ProtocolError("an array with a malformed header") from None
    if dtype.kind not in ARRAY_KINDS or dtype.fields is not None or dtype.subdtype is not None or dtype.hasobject:
        raise ProtocolError(f"an array of dtype {str(dtype)[:40]}")
    if len(shape) > 32 or any(type(n) is not int or n < 0 for n in shape) or (scalar and shape != ()):
        raise ProtocolError("an array with a malformed shape")
    count = 1
    for n in shape:
        count *= n
    size = count * dtype.itemsize
    if size > MAX_ARRAY or size != len(raw) - stream.tell():
        raise ProtocolError(f"an array whose data does not match its shape {shape[:8]}")
    return raw, dtype, shape


def decode(data, remote=None):
    """The value ``encode`` gave ``data`` for (checked by :func:`validate` first); a
    function handle becomes a call through ``remote``."""
    validate(data)
    return _decode(data, remote)


def _decode(data, remote):
    if data is None or type(data) in (bool, int, float, str):
        return data
    (key,) = [k for k in data if k not in ("scalar", "name", "repr")]
    if key == "int":
        return int(data["int"])
    if key == "float":
        return float(data["float"])
    if key == "complex":
        return complex(*(_decode(part, remote) for part in data["complex"]))
    if key == "ellipsis":
        return Ellipsis
    if key in ("tuple", "list"):
        items = [_decode(v, remote) for v in data[key]]
        return tuple(items) if key == "tuple" else items
    if key == "dict":
        return {k: _decode(v, remote) for k, v in data["dict"].items()}
    if key == "npy":
        raw, _, _ = array_header(data["npy"], data["scalar"])
        try:
            array = np.load(io.BytesIO(raw), allow_pickle=False)
        except (ValueError, OSError, EOFError):
            raise ProtocolError("an array numpy could not read") from None
        return array[()] if data["scalar"] else array
    if key == "function":
        return RemoteFunction(remote, data["function"], data["name"])
    return _opaque(data["opaque"], data["repr"])


def _opaque(type_name, text):
    """A stand-in for a value that is not plain data: its type's name and its repr."""
    cls = type(type_name if type_name.isidentifier() else "object", (), {"__repr__": lambda self: text})
    return cls()


class RemoteFunction:
    """A student's function that runs on the student side; called with data, returns data."""

    def __init__(self, remote, handle, name):
        self.remote, self.handle, self.__name__ = remote, handle, name

    def __call__(self, *args):
        return self.remote.call(self.handle, args, self.__name__)

    def __repr__(self):
        return f"<function {self.__name__}>"


def _raised(info):
    """The exception the student's function raised, rebuilt by name (a builtin type, or a stand-in)."""
    name, message = info["type"], info["message"]
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = type(name if name.isidentifier() else "Exception", (Exception,), {})
    return cls(message)


# --- messages: length-prefixed JSON, bounded in size and time ---------------------


def _send(fd, obj, deadline=None):
    data = json.dumps(obj).encode()
    view = memoryview(struct.pack(">Q", len(data)) + data)
    while view:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([], [fd], [], wait)[1]:
                raise TimeoutError("the student side took no request in time")
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            continue


def _read(fd, n, deadline):
    chunks, left = [], n
    while left:
        if deadline is not None:
            wait = deadline - time.monotonic()
            if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                raise TimeoutError("no answer from the student side in time")
        try:
            chunk = os.read(fd, min(left, 1 << 20))
        except BlockingIOError:
            continue
        if not chunk:
            raise EOFError("the student side stopped")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _no_duplicates(pairs):
    if len({k for k, _ in pairs}) != len(pairs):
        raise ProtocolError("a message with a repeated key")
    return dict(pairs)


def _receive(fd, deadline=None, limit=MAX_MESSAGE):
    """One message: at most ``limit`` bytes, read by ``deadline`` (``time.monotonic()``), a JSON object."""
    (size,) = struct.unpack(">Q", _read(fd, 8, deadline))
    if size > limit:
        raise ProtocolError(f"a message of {size} bytes (more than {limit})")
    try:
        message = json.loads(_read(fd, size, deadline).decode("utf-8"), object_pairs_hook=_no_duplicates)
    except ProtocolError:
        raise
    except (ValueError, RecursionError, MemoryError) as error:  # bad JSON, bad UTF-8, nested too deep, huge numbers
        raise ProtocolError(f"a message that is not JSON ({type(error).__name__})") from None
    if type(message) is not dict:
        raise ProtocolError("a message that is not a JSON object")
    return message


# What may answer each request, besides the request's own "seq": exactly one of these keys.
REPLIES = {
    "hello": ("hello",),
    "run": ("done", "timeout", "overflow"),
    "get": ("value", "missing", "timeout"),
    "call": ("value", "raised", "timeout"),
}


def check_reply(reply, op, seq):
    """(kind, content) of a reply to request ``seq`` (an ``op``); :class:`ProtocolError` if it is anything else."""
    if type(reply) is not dict or type(reply.get("seq")) is not int:
        raise ProtocolError("a message without a sequence number")
    if reply["seq"] != seq:
        raise ProtocolError(f"a reply to request {reply['seq']} while request {seq} was waiting", earlier=reply["seq"] == seq - 1)
    kinds = [k for k in reply if k != "seq"]
    if len(kinds) != 1 or kinds[0] not in REPLIES[op]:
        raise ProtocolError(f"a reply with the keys {sorted(map(str, kinds))[:6]} to a {op!r} request")
    kind = kinds[0]
    content = reply[kind]
    if kind in ("hello", "done", "timeout", "missing", "overflow"):
        if content is not True:
            raise ProtocolError(f"a malformed {kind!r} reply")
    elif kind == "value":
        validate(content)
    elif kind == "raised":
        if type(content) is not dict or set(content) != {"type", "message"}:
            raise ProtocolError("a malformed exception")
        _text(content["type"], 100, "an exception's type")
        _text(content["message"], 1000, "an exception's message")
    return kind, content


# --- the student side ---------------------------------------------------------------


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
    (``python -m autograders.grading.recheck serve IN OUT`` inside the sandbox). What a
    request's code prints is capped as in nbgrader's kernel (:mod:`.output_cap`, the limit
    the "hello" request gives): past it the cell is stopped and its reply is "overflow"."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    functions, alarm, budget = [], _Alarm(), cap(DEFAULT.output_limit)
    while True:
        request = _receive(fd_in)
        op, seq, seconds = request.get("op"), request.get("seq"), request.get("timeout", DEFAULT.cell_timeout)
        budget.reset()
        if op == "hello":
            budget.limit = int(request.get("output_limit", budget.limit))
            reply = {"hello": True}
        elif op == "run":
            with alarm.limit(seconds):
                with contextlib.suppress(OutputLimitExceeded):  # IPython shows it; in case its report printed on
                    shell.run_cell(request["source"], store_history=False, silent=True)
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
                    args = [decode(a) for a in request["args"]]
                    reply = {"value": encode(functions[request["function"]](*args), functions)}
            except BaseException as error:  # noqa: BLE001 (the student's function: any error is an answer)
                reply = {"raised": {"type": type(error).__name__[:100], "message": str(error)[:1000]}}
            reply = {"timeout": True} if alarm.fired else reply
        else:
            return
        _send(fd_out, {"seq": seq, **reply})


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
            inner = command or [sys.executable, "-m", "autograders.grading.recheck", "serve"]
            inner = [*inner, str(to_child), str(from_child)]
            self.process = subprocess.Popen(
                self.box.command(inner, fds=(to_child, from_child)), env={**self.box.env(), "NBGRADER_EXECUTION": "recheck"},
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

    def ask(self, op, seconds, **fields):
        """(kind, content) of the reply to one request, within ``seconds``; raises :class:`Stopped`."""
        if not self.alive:
            raise Stopped("stopped", "the student side had already stopped")
        self.seq += 1
        deadline = time.monotonic() + seconds
        try:
            if select.select([self.read_fd], [], [], 0)[0]:  # before any request: unasked-for bytes (or its end)
                if os.read(self.read_fd, 1):
                    raise ProtocolError("a message it was not asked for", earlier=True)
                raise EOFError("the student side stopped")
            _send(self.write_fd, {"op": op, "seq": self.seq, **fields}, deadline)
            return check_reply(_receive(self.read_fd, deadline), op, self.seq)
        except ProtocolError as error:
            self.kill()
            raise Stopped("interfered", f"it sent {error}", error.earlier) from None
        except TimeoutError:
            self.kill()
            raise Stopped("timeout", f"no answer within {seconds:g} s") from None
        except (EOFError, OSError) as error:
            self.kill()
            raise Stopped("stopped", f"its process stopped ({type(error).__name__})") from None

    def kill(self):
        """Kill the process with its process group (through the zygote's proxy: the child's
        group too), close the pipes, remove the sandbox (as root: kill its user's processes)."""
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
                _send(self.write_fd, {"op": "bye"}, time.monotonic() + 1)
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
            self.trouble[key] = _fault(error, f"cell {self.cells[key][0]}", self.timeout)
        else:
            self.unavailable[key] = _fault(error, f"handing over `{key}`", self.timeout)

    def namespace(self):
        """The answers, decoded (function answers call this session's student side); one
        that cannot be read is left out, and why is noted."""
        remote, values = _Handles(self, self.generation), {}
        for name, data in list(self.values.items()):
            try:
                values[name] = _decode(data, remote)
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
            kind, content = self.side.ask("call", seconds + GRACE, function=handle, args=[encode(a) for a in args],
                                          timeout=seconds)
            result = _decode(content, _Handles(self, generation)) if kind == "value" else None
        except (Stopped, ProtocolError) as error:
            if not isinstance(error, Stopped):
                self.side.kill()
                error = Stopped("interfered", f"it sent {error}")
            self.side = None
            raise Unconfirmed(_fault(error, f"your function `{name}`", self.timeout)) from None
        if kind == "timeout":
            raise Unconfirmed(f"your function `{name}` ran past the {self.timeout} s limit in the re-check")
        if kind == "raised":
            raise _raised(content)
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


def _fault(error, what, timeout):
    """A sentence for what a :class:`Stopped` did to ``what`` (a cell, a function, an answer)."""
    if error.kind == "timeout":
        return f"{what} ran past the {timeout} s limit in the re-check and its process was stopped"
    if error.kind == "interfered":
        return f"{INTERFERED} while {what} ran: {error.detail}"
    return f"the re-check's process stopped while {what} ran (it crashed, exited or closed its pipes)"


# --- the notebooks ------------------------------------------------------------------


def _meta(cell):
    return cell.get("metadata", {}).get("nbgrader", {})


def _is_test(cell):
    return cell.get("cell_type") == "code" and bool(_meta(cell).get("grade")) and not _meta(cell).get("solution")


def _assigned(source):
    """Names a cell's code binds at its top level (answers: ``x = ...``, ``def f``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _used(source):
    try:
        return {n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    except SyntaxError:
        return set()


def _crashed(cell):
    return any(o.get("output_type") == "error" and o.get("ename") == "KernelCrashed" for o in cell.get("outputs", []))


def _passed_in_nbgrader(cell):
    """nbgrader's verdict on a test cell: no error output and nothing on stderr."""
    return not any(
        o.get("output_type") == "error" or (o.get("output_type") == "stream" and o.get("name") == "stderr")
        for o in cell.get("outputs", [])
    )


@contextlib.contextmanager
def _quiet():
    """The checks print their confirmations; keep them out of the caller's output."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def _label(cell, number):
    gid = _meta(cell).get("grade_id")
    return f"`{gid}`" if gid else f"code cell {number}"


def recheck(source_notebook_path, autograded_notebook_path, timeout=None, command=None, settings=None):
    """Grade the autograded notebook again, the student's code and the checks in separate
    processes; return ``{grade_id: Checked(score, max_score, message or None)}`` for each
    test cell of the source notebook. ``settings``: the course's (:class:`Settings`, as
    grading read them; by default those of the nearest ``nbgrader_config.py``);
    ``timeout``: another cell timeout, ``command``: the student side's program (tests)."""
    import nbformat

    source = nbformat.read(str(source_notebook_path), as_version=4)
    tests = [(c, _meta(c)["grade_id"], float(_meta(c).get("points", 0))) for c in source.cells if _is_test(c)]
    try:
        graded = nbformat.read(str(autograded_notebook_path), as_version=4)
    except Exception as error:  # noqa: BLE001
        why = f"not graded: the notebook could not be read ({type(error).__name__})"
        return {gid: Checked(0.0, points, why, confirmed=False) for _, gid, points in tests}

    settings = settings or Settings.of_course(autograded_notebook_path)
    if timeout:
        settings = settings.replace(cell_timeout=int(timeout))
    answers = set().union(*[_assigned(c.source) for c in source.cells if c.cell_type == "code" and _meta(c).get("solution")])
    wanted = sorted(set().union(*[_used(c.source) for c, _, _ in tests]) & answers)
    in_graded = {_meta(c).get("grade_id"): c for c in graded.cells if _meta(c).get("grade_id")}

    # The student side: every code cell but the tests (and those that crashed nbgrader's kernel).
    cells = [(_label(c, n), c.source) for n, c in enumerate(graded.cells, 1)
             if c.cell_type == "code" and not _is_test(c) and not _crashed(c) and c.source.strip()]
    session = Session(cells, wanted, settings, command=command)
    try:
        # The checker side: the instructor's setup and data cells, the student's answers.
        clean = {"__name__": "__recheck__"}
        with _quiet():
            for cell in source.cells:
                meta = _meta(cell)
                if cell.cell_type == "code" and meta.get("locked") and not meta.get("grade") and not meta.get("solution"):
                    exec(compile(cell.source, f"<{meta.get('grade_id')}>", "exec"), clean)  # noqa: S102 (instructor's code)
        return {gid: _verdict(session, clean, cell, gid, points, in_graded.get(gid)) for cell, gid, points in tests}
    finally:
        session.close()


def _verdict(session, clean, cell, gid, points, nbgrader_cell):
    """One test cell's :class:`Checked`: points only when the checker's own run of the test passed."""
    if not session.ready():
        return Checked(0.0, points, f"{NOT_CONFIRMED}: {session.broken}"[:1000], confirmed=False)
    namespace = {**clean, **session.namespace()}
    session.deadline = time.monotonic() + session.timeout
    try:
        with _quiet():
            exec(compile(cell.source, f"<{gid}>", "exec"), namespace)  # noqa: S102 (instructor's test)
        return Checked(points, points, None)
    except Unconfirmed as why:
        return Checked(0.0, points, f"{NOT_CONFIRMED}: {why}"[:1000], confirmed=False)
    except Exception as error:  # noqa: BLE001 (a failed test, whatever the exception)
        message = str(error) if type(error).__name__ == "WrongAnswer" else f"{type(error).__name__}: {error}"
        tag = _misconception(error)
        in_hidden = _failed_line(error, f"<{gid}>") in hidden_line_numbers(cell.source)
    finally:
        session.deadline = None
    used = _used(cell.source)
    blame = [session.unavailable[n] for n in sorted(used & set(session.unavailable))]
    blame += [why for index, why in sorted(session.trouble.items()) if _assigned(session.cells[index][1]) & used]
    if blame:
        return Checked(0.0, points, f"{NOT_CONFIRMED}: {blame[0]}; {message}"[:1000], confirmed=False)
    if nbgrader_cell is None:
        message = f"this test cell is missing from the graded notebook; {message}"
    elif in_hidden:  # nbgrader's kernel never ran this part: its verdict says nothing about it
        return Checked(0.0, points, message[:1000], misconception=tag, hidden=True)
    elif _passed_in_nbgrader(nbgrader_cell):
        message = f"{TAMPERING}: {message}"
    return Checked(0.0, points, message[:1000], misconception=tag)


def hidden_line_numbers(source, begin="BEGIN HIDDEN TESTS", end="END HIDDEN TESTS"):
    """The (1-based) numbers of the lines of ``source`` inside its hidden-test regions."""
    numbers, inside = set(), False
    for number, line in enumerate(source.split("\n"), 1):
        if begin in line:
            inside = True
        if inside:
            numbers.add(number)
        if end in line:
            inside = False
    return numbers


def _failed_line(error, filename):
    """The line of the code compiled as ``filename`` where ``error`` was raised from (its last frame there)."""
    line, tb = None, error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    return line


def _misconception(error):
    """The tag of a check's own ``WrongAnswer`` (a known one), else None. An exception rebuilt
    from the student side (:func:`_raised`) is never a ``WrongAnswer``, whatever its name."""
    from ..checks.feedback import WrongAnswer
    from ..checks.misconceptions import NAMES

    tag = getattr(error, "misconception", None) if isinstance(error, WrongAnswer) else None
    return tag if isinstance(tag, str) and tag in NAMES else None


if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    serve(int(sys.argv[2]), int(sys.argv[3]))
