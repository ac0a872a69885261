"""Re-check a graded submission in a clean process: monkeypatching earns nothing.

nbgrader (like every autograder that runs tests in the student's kernel) trusts
what the kernel reports: a student who writes ``np.allclose = lambda *a, **k:
True`` or ``check.q1_1_d_k = print`` in an answer cell passes every test. So after
nbgrader, :func:`recheck` grades the submission again, keeping the two sides apart:

- the **student side** (a fresh sandboxed process, see :mod:`autograders.sandbox`)
  runs the autograded notebook's code cells except the test cells (setup and
  data cells as nbgrader restored them, the student's answers and own cells),
  then hands over the answers the tests use as **data** (JSON; numpy arrays as
  ``.npy`` read with ``allow_pickle=False``: nothing the student side produced is
  ever unpickled). A function answer stays on the student side: the checker gets
  a handle, and each call sends the arguments over and the result back, as data;
- the **checker side** (the process calling :func:`recheck`, where no student code
  ever ran) runs the instructor's setup and data cells from the source notebook,
  puts the student's answers in, and runs each test cell of the source notebook
  (visible and hidden tests) against them.

A test cell earns its points only if nbgrader and the re-check both pass it; the
grading engine (:mod:`autograders.grading`) lowers a score the re-check does not
confirm and shows its message: "tampering suspected" when nbgrader passed the cell.

    recheck(source_notebook_path, autograded_notebook_path)
        -> {grade_id: Checked(score, max_score, message or None)}
"""

import ast
import base64
import builtins
import contextlib
import io
import json
import os
import select
import signal
import struct
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import sandbox

MAX_MESSAGE = 64 * 1024 * 1024  # bytes in one message from the student side
CELL_TIMEOUT = 30  # seconds per cell and per call, unless the course sets Execute.timeout
TAMPERING = "tampering suspected: nbgrader passed this test, but a clean re-check of your answers did not"


@dataclass
class Checked:
    """One test cell's re-check. Unpacks as ``score, max_score, message``."""

    score: float
    max_score: float
    message: str = None

    def __iter__(self):
        return iter((self.score, self.max_score, self.message))

    def __getitem__(self, index):
        return tuple(self)[index]


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
        return value if np.isfinite(value) else {"float": repr(value)}
    if kind is complex:
        return {"complex": [value.real, value.imag]}
    if value is Ellipsis:
        return {"ellipsis": True}
    if kind in (tuple, list):
        return {kind.__name__: [encode(v, functions, depth + 1) for v in value]}
    if kind is dict and all(type(k) is str for k in value):
        return {"dict": {k: encode(v, functions, depth + 1) for k, v in value.items()}}
    if isinstance(value, (np.ndarray, np.generic)) and type(value).__module__ == "numpy":
        array = np.asarray(value)
        if array.dtype != object:
            buffer = io.BytesIO()
            np.save(buffer, array, allow_pickle=False)
            return {"npy": base64.b64encode(buffer.getvalue()).decode(), "scalar": isinstance(value, np.generic)}
    if callable(value) and not isinstance(value, type) and functions is not None:
        functions.append(value)
        return {"function": len(functions) - 1, "name": str(getattr(value, "__name__", "function"))[:100]}
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 (the student's __repr__)
        text = f"<{kind.__name__} object>"
    return {"opaque": kind.__name__[:100], "repr": text[:200]}


def decode(data, remote=None):
    """The value ``encode`` gave ``data`` for; a function handle becomes a call through ``remote``."""
    if data is None or isinstance(data, (bool, int, float, str)):
        return data
    if isinstance(data, list):
        raise ValueError("bare list in data")
    (key,) = [k for k in data if k not in ("scalar", "name", "repr")] or ["opaque"]
    if key == "int":
        return int(data["int"])
    if key == "float":
        return float(data["float"])
    if key == "complex":
        return complex(*data["complex"])
    if key == "ellipsis":
        return Ellipsis
    if key in ("tuple", "list"):
        items = [decode(v, remote) for v in data[key]]
        return tuple(items) if key == "tuple" else items
    if key == "dict":
        return {k: decode(v, remote) for k, v in data["dict"].items()}
    if key == "npy":
        array = np.load(io.BytesIO(base64.b64decode(data["npy"])), allow_pickle=False)
        return array[()] if data.get("scalar") else array
    if key == "function":
        return RemoteFunction(remote, int(data["function"]), str(data.get("name", "function")))
    return _opaque(str(data.get("opaque", "object")), str(data.get("repr", "")))


def _opaque(type_name, text):
    """A stand-in for a value that is not plain data: its type's name and its repr."""
    cls = type(type_name if type_name.isidentifier() else "object", (), {"__repr__": lambda self: text})
    return cls()


class RemoteFunction:
    """A student's function that runs on the student side; called with data, returns data."""

    def __init__(self, remote, handle, name):
        self.remote, self.handle, self.__name__ = remote, handle, name

    def __call__(self, *args):
        return self.remote.call(self.handle, args)

    def __repr__(self):
        return f"<function {self.__name__}>"


def _raised(info):
    """The exception the student's function raised, rebuilt by name (a builtin type, or a stand-in)."""
    name, message = str(info.get("type", "Exception")), str(info.get("message", ""))[:500]
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = type(name if name.isidentifier() else "Exception", (Exception,), {})
    return cls(message)


def _send(fd, obj):
    data = json.dumps(obj).encode()
    os.write(fd, struct.pack(">Q", len(data)))
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _receive(fd, deadline=None):
    def read(n):
        chunks, left = [], n
        while left:
            if deadline is not None:
                wait = deadline - time.monotonic()
                if wait <= 0 or not select.select([fd], [], [], wait)[0]:
                    raise TimeoutError("no answer from the student side in time")
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                raise EOFError("the student side stopped")
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    (size,) = struct.unpack(">Q", read(8))
    if size > MAX_MESSAGE:
        raise ValueError(f"the student side sent {size} bytes (more than {MAX_MESSAGE})")
    return json.loads(read(size))


# --- the student side ---------------------------------------------------------------


class _CellTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise _CellTimeout()


def serve(fd_in, fd_out):
    """The student side: run cells, then hand over answers and answer calls (``python -m
    autograders.recheck serve IN OUT`` inside the sandbox)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    functions = []
    while True:
        request = _receive(fd_in)
        op = request.get("op")
        if op == "run":
            for source in request["cells"]:
                signal.signal(signal.SIGALRM, _alarm)
                signal.alarm(int(request.get("timeout", CELL_TIMEOUT)))
                try:
                    shell.run_cell(source, store_history=False, silent=True)
                except _CellTimeout:
                    pass
                finally:
                    signal.alarm(0)
            _send(fd_out, {"ok": True})
        elif op == "get":
            values = {}
            for name in request["names"]:
                if name in shell.user_ns:
                    values[name] = encode(shell.user_ns[name], functions)
            _send(fd_out, {"values": values})
        elif op == "call":
            signal.alarm(int(request.get("timeout", CELL_TIMEOUT)))
            try:
                args = [decode(a) for a in request["args"]]
                result = functions[request["function"]](*args)
                reply = {"value": encode(result, functions)}
            except _CellTimeout:
                reply = {"raised": {"type": "TimeoutError", "message": "the function ran too long"}}
            except BaseException as error:  # noqa: BLE001 (the student's function: any error is an answer)
                reply = {"raised": {"type": type(error).__name__, "message": str(error)}}
            finally:
                signal.alarm(0)
            _send(fd_out, reply)
        else:
            return


class StudentSide:
    """The sandboxed student process, seen from the checker."""

    def __init__(self, timeout, memory=sandbox.MEMORY_LIMIT, hide=()):
        self.timeout = timeout
        self.box = sandbox.Sandbox(memory=memory, hide=hide)
        to_child, self.write_fd = os.pipe()
        self.read_fd, from_child = os.pipe()
        inner = [sys.executable, "-m", "autograders.recheck", "serve", str(to_child), str(from_child)]
        self.process = subprocess.Popen(
            self.box.command(inner, fds=(to_child, from_child)), env={**self.box.env(), "NBGRADER_EXECUTION": "recheck"}, pass_fds=(to_child, from_child),
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )
        os.close(to_child)
        os.close(from_child)
        self.dead = None

    def ask(self, request, seconds):
        if self.dead:
            raise RecheckError(self.dead)
        try:
            _send(self.write_fd, request)
            return _receive(self.read_fd, time.monotonic() + seconds)
        except (OSError, EOFError, TimeoutError, ValueError) as error:
            self.dead = f"the re-check could not run your code to the end ({error})"
            self.close()
            raise RecheckError(self.dead) from None

    def call(self, handle, args):
        reply = self.ask({"op": "call", "function": handle, "args": [encode(a) for a in args], "timeout": self.timeout},
                         self.timeout + 10)
        if "raised" in reply:
            raise _raised(reply["raised"])
        return decode(reply.get("value"), self)

    def close(self):
        with contextlib.suppress(OSError):
            _send(self.write_fd, {"op": "bye"})
        with contextlib.suppress(Exception):
            self.process.wait(timeout=2)
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for fd in (self.write_fd, self.read_fd):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.write_fd = self.read_fd = -1
        self.box.close()


class RecheckError(Exception):
    """The student side could not be run or asked (it crashed, hung, or sent garbage)."""


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


def _course_settings(autograded_path):
    """(cell timeout, memory limit, directories to hide) from the nearest course configuration."""
    timeout, memory, hide = CELL_TIMEOUT, sandbox.MEMORY_LIMIT, []
    for directory in Path(autograded_path).resolve().parents:
        if (directory / "nbgrader_config.py").is_file():
            try:
                from traitlets.config.loader import PyFileConfigLoader

                config = PyFileConfigLoader("nbgrader_config.py", path=str(directory)).load_config()
            except Exception:  # noqa: BLE001 (a broken config: the defaults)
                break
            timeout = config.get("Execute", {}).get("timeout", timeout) or timeout
            memory = config.get("SandboxExecute", {}).get("memory_limit", memory)
            hide = [str(directory), *config.get("SandboxExecute", {}).get("hide", [])]
            break
    return int(timeout), int(memory), hide


@contextlib.contextmanager
def _quiet():
    """The checks print their confirmations; keep them out of the caller's output."""
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        yield


def recheck(source_notebook_path, autograded_notebook_path, timeout=None):
    """Grade the autograded notebook again, the student's code and the checks in separate
    processes; return ``{grade_id: Checked(score, max_score, message or None)}`` for each
    test cell of the source notebook."""
    import nbformat

    source = nbformat.read(str(source_notebook_path), as_version=4)
    tests = [(c, _meta(c)["grade_id"], float(_meta(c).get("points", 0))) for c in source.cells if _is_test(c)]
    try:
        graded = nbformat.read(str(autograded_notebook_path), as_version=4)
    except Exception as error:  # noqa: BLE001
        why = f"not graded: the notebook could not be read ({type(error).__name__})"
        return {gid: Checked(0.0, points, why) for _, gid, points in tests}

    course_timeout, memory, hide = _course_settings(autograded_notebook_path)
    timeout = timeout or course_timeout
    answers = set().union(*[_assigned(c.source) for c in source.cells if c.cell_type == "code" and _meta(c).get("solution")])
    wanted = sorted(set().union(*[_used(c.source) for c, _, _ in tests]) & answers)
    in_graded = {_meta(c).get("grade_id"): c for c in graded.cells if _meta(c).get("grade_id")}

    # The student side: every code cell but the tests (and those that crashed nbgrader's kernel).
    cells = [c.source for c in graded.cells if c.cell_type == "code" and not _is_test(c) and not _crashed(c) and c.source.strip()]
    student = StudentSide(timeout, memory=memory, hide=hide)
    try:
        values, trouble = {}, None
        try:
            slow = sum(1 for c in graded.cells if any(o.get("ename") == "CellTimeoutError" for o in c.get("outputs", [])))
            student.ask({"op": "run", "cells": cells, "timeout": timeout}, timeout * (slow + 1) + 60)
            values = student.ask({"op": "get", "names": wanted}, 60)["values"]
        except RecheckError as error:
            trouble = str(error)

        # The checker side: the instructor's setup and data cells, the student's answers.
        clean = {"__name__": "__recheck__"}
        with _quiet():
            for cell in source.cells:
                meta = _meta(cell)
                if cell.cell_type == "code" and meta.get("locked") and not meta.get("grade") and not meta.get("solution"):
                    exec(compile(cell.source, f"<{meta.get('grade_id')}>", "exec"), clean)  # noqa: S102 (instructor's code)
        results = {}
        for cell, gid, points in tests:
            namespace = dict(clean)
            for name, data in values.items():
                try:
                    namespace[name] = decode(data, student)
                except Exception:  # noqa: BLE001 (garbage from the student side)
                    namespace[name] = _opaque("object", "(unreadable)")
            message = None
            try:
                with _quiet():
                    exec(compile(cell.source, f"<{gid}>", "exec"), namespace)  # noqa: S102 (instructor's test)
            except Exception as error:  # noqa: BLE001 (a failed test, whatever the exception)
                message = str(error) if type(error).__name__ == "WrongAnswer" else f"{type(error).__name__}: {error}"
                if trouble:
                    message = f"{trouble}; {message}"
            if message is None:
                results[gid] = Checked(points, points, None)
                continue
            nbgrader_cell = in_graded.get(gid)
            if nbgrader_cell is None:
                message = f"this test cell is missing from the graded notebook; {message}"
            elif _passed_in_nbgrader(nbgrader_cell):
                message = f"{TAMPERING}: {message}"
            results[gid] = Checked(0.0, points, message[:1000])
        return results
    finally:
        student.close()


if __name__ == "__main__" and sys.argv[1:2] == ["serve"]:
    serve(int(sys.argv[2]), int(sys.argv[3]))
