"""The re-check's wire protocol: what crosses between the checker and the student side.

A message is length-prefixed JSON, read with a deadline and a size limit; a value is what
:func:`encode` makes of a Python value (plain data; numpy arrays as ``.npy`` read with
``allow_pickle=False``; a function as a handle the checker calls back through), and nothing
the student side sends is used before :func:`validate` and :func:`check_reply` accepted it
(keys, types, lengths, nesting, array dtypes and sizes, the sequence number of the request).
Both sides import this module: :mod:`autograders.student.serve` runs the student's code,
:mod:`autograders.grading.checker` runs the checks.
"""

import base64
import binascii
import builtins
import io
import json
import math
import os
import re
import select
import struct
import time

import numpy as np
from numpy.lib import format as npy_format

from .shape_errors import TAGS as SHAPE_TAGS, explain

MAX_MESSAGE = 16 * 1024 * 1024  # bytes in one message from the student side
MAX_DEPTH = 24  # containers nested in one value (encode stops at 20)
MAX_ITEMS = 200_000  # values in one message
MAX_TEXT = 1_000_000  # characters of one string
MAX_ARRAY = 8 * 1024 * 1024  # bytes of one array's data
ARRAY_KINDS = "biufcUS"  # bool, int, uint, float, complex, str, bytes: nothing with fields or objects


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
    return decode_validated(data, remote)


def decode_validated(data, remote):
    if data is None or type(data) in (bool, int, float, str):
        return data
    (key,) = [k for k in data if k not in ("scalar", "name", "repr")]
    if key == "int":
        return int(data["int"])
    if key == "float":
        return float(data["float"])
    if key == "complex":
        return complex(*(decode_validated(part, remote) for part in data["complex"]))
    if key == "ellipsis":
        return Ellipsis
    if key in ("tuple", "list"):
        items = [decode_validated(v, remote) for v in data[key]]
        return tuple(items) if key == "tuple" else items
    if key == "dict":
        return {k: decode_validated(v, remote) for k, v in data["dict"].items()}
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


def raised(info):
    """The exception the student's function raised, rebuilt by name (a builtin type, or a stand-in)."""
    name, message = info["type"], info["message"]
    cls = getattr(builtins, name, None)
    if not (isinstance(cls, type) and issubclass(cls, Exception)):
        cls = type(name if name.isidentifier() else "Exception", (Exception,), {})
    error = cls(message)
    if "explained" in info:  # the student side read the failing line and its operands' shapes
        error.explained = (info["explained"]["tag"], info["explained"]["text"])
    return error


def raised_info(error):
    """What the student side sends of an exception the student's function raised: its type and message,
    and for a shape error the explanation only its own process can give (the failing line, the operands'
    shapes, the named bug: autograders/checks/shape_errors.py). It only ever words that student's feedback."""
    info = {"type": type(error).__name__[:100], "message": str(error)[:1000]}
    try:
        explained = explain(error) if isinstance(error, Exception) else None
    except Exception:  # noqa: BLE001 (the student's objects are read: no explanation then)
        explained = None
    if explained:
        info["explained"] = {"tag": explained[0], "text": str(explained[1])[:2000]}
    return info


# --- messages: length-prefixed JSON, bounded in size and time ---------------------


def send(fd, obj, deadline=None):
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


def read_exactly(fd, n, deadline):
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


def receive(fd, deadline=None, limit=MAX_MESSAGE):
    """One message: at most ``limit`` bytes, read by ``deadline`` (``time.monotonic()``), a JSON object."""
    (size,) = struct.unpack(">Q", read_exactly(fd, 8, deadline))
    if size > limit:
        raise ProtocolError(f"a message of {size} bytes (more than {limit})")
    try:
        message = json.loads(read_exactly(fd, size, deadline).decode("utf-8"), object_pairs_hook=_no_duplicates)
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
    "get": ("value", "missing", "timeout", "overflow"),
    "call": ("value", "raised", "timeout", "callback"),
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
    if kind in ("hello", "timeout", "missing", "overflow"):
        if content is not True:
            raise ProtocolError(f"a malformed {kind!r} reply")
    elif kind == "value":
        validate(content)
    elif kind == "callback":  # the student's function calls a function the checker passed it: {function, args}
        if type(content) is not dict or set(content) != {"function", "args"} or type(content["function"]) is not int \
                or type(content["args"]) is not list:
            raise ProtocolError("a malformed callback")
        for argument in content["args"]:
            validate(argument)
    elif kind == "raised":
        if type(content) is not dict or set(content) - {"explained"} != {"type", "message"}:
            raise ProtocolError("a malformed exception")
        _text(content["type"], 100, "an exception's type")
        _text(content["message"], 1000, "an exception's message")
        if "explained" in content:  # a shape error explained where it was raised (autograders/checks/shape_errors.py)
            explained = content["explained"]
            if type(explained) is not dict or set(explained) != {"tag", "text"} or explained["tag"] not in SHAPE_TAGS:
                raise ProtocolError("a malformed explanation of an exception")
            _text(explained["text"], 2000, "an exception's explanation")
    return kind, content

