"""The clean re-check (autograders/grading/checker.py, handover.py): answers cross as data, checks run apart."""

import base64
import contextlib
import io
import math
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import nbformat
import numpy as np
import pytest

from autograders.student import protocol, serve
from autograders.grading import checker
from autograders.grading import standalone
from autograders.student.settings import Settings
from tests import corpus

ROOT = Path(__file__).resolve().parent.parent
LEVEL1 = ROOT / "notebooks" / "level1_recognition.ipynb"
TESTS = {"q1_1_head_dim_test": 2.0, "q1_1_d_k_test": 1.0, "q1_2_output_shape_test": 1.0, "q1_2_why_test": 1.0}


def roundtrip(value):
    functions = []
    data = protocol.encode(value, functions)
    return protocol.decode(data), functions


@pytest.mark.parametrize(
    "value",
    [None, True, 3, 2**80, 2.5, complex(1, 2), "B", (6, 768), [1, [2, 3]], {"a": (1.0,)}, Ellipsis, np.float64(8.0),
     np.int64(64), np.arange(6.0).reshape(2, 3), np.array([True, False])],
)
def test_plain_data_crosses_unchanged(value):
    back, _ = roundtrip(value)
    assert type(back) is type(value)
    if isinstance(value, np.ndarray):
        assert back.dtype == value.dtype and (back == value).all()
    else:
        assert back == value


def test_nan_crosses_as_nan_and_objects_as_their_name():
    back, _ = roundtrip(float("nan"))
    assert math.isnan(back)

    class Sneaky(float):  # a float that says it equals anything
        def __eq__(self, other):
            return True

    back, _ = roundtrip(Sneaky(1.0))
    assert type(back).__name__ == "Sneaky" and not isinstance(back, float) and back != 64
    back, _ = roundtrip(np.array([object()], dtype=object))  # would need pickle: not data
    assert type(back).__name__ == "ndarray" and not isinstance(back, np.ndarray)


def test_decode_never_unpickles():
    buffer = io.BytesIO()
    np.save(buffer, np.array([{"x": 1}], dtype=object), allow_pickle=True)
    forged = {"npy": base64.b64encode(buffer.getvalue()).decode()}
    with pytest.raises(ValueError):
        protocol.decode(forged)


def test_functions_cross_as_handles():
    data = protocol.encode(lambda d_model, h: d_model // h, functions := [])
    assert "function" in data and len(functions) == 1

    class Remote:
        def call(self, handle, args, name):
            return functions[handle](*args)

    proxy = protocol.decode(data, Remote())
    assert callable(proxy) and proxy(768, 12) == 64


def test_checked_unpacks_and_names_its_fields():
    checked = checker.Checked(0.0, 2.0, "why")
    score, max_score, message = checked
    assert (score, max_score, message) == (0.0, 2.0, "why") and checked.score == 0.0 and checked.message == "why"


def graded_copy(tmp_path, name, answers, failed_tests=()):
    """The source notebook with some answer cells replaced, as if autograded: the test
    cells in ``failed_tests`` carry an error output (nbgrader failed them), the others none."""
    nb = nbformat.read(str(LEVEL1), as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            cell.source = answers[gid]
        if gid in failed_tests:
            cell.outputs = [nbformat.v4.new_output("error", ename="WrongAnswer", evalue="no", traceback=[])]
    path = tmp_path / name / "level1_recognition.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(nb, str(path))
    return path


def test_honest_answers_pass(tmp_path, kernels):
    results = standalone.recheck(LEVEL1, graded_copy(tmp_path, "honest", {}), timeout=20)
    assert {gid: tuple(r) for gid, r in results.items()} == {gid: (p, p, None) for gid, p in TESTS.items()}


def test_patched_checks_earn_nothing_but_right_answers_keep_their_points(tmp_path, kernels):
    answers = {
        "q1_1_head_dim": "import autograders.checks.level1 as checks, numpy\n"
                         "checks.q1_1_head_dim = lambda *a, **k: print('ok')\nnumpy.allclose = lambda *a, **k: True\n"
                         "def head_dim(d_model, h):\n    return d_model * h",
        "q1_1_d_k": "import autograders.checks.level1 as check\ncheck.q1_1_d_k = lambda *a, **k: None\nd_k = 768 // 12",  # right anyway
        "q1_2_why": 'why = "A"',  # wrong, and nbgrader said so
    }
    path = graded_copy(tmp_path, "tamper", answers, failed_tests=("q1_2_why_test",))
    results = standalone.recheck(LEVEL1, path, timeout=20)
    head_dim = results["q1_1_head_dim_test"]
    assert head_dim.score == 0 and head_dim.confirmed and "Multiplied instead of divided" in head_dim.message
    assert head_dim.error["ename"] == "WrongAnswer" and "Multiplied instead of divided" in head_dim.error["traceback"][0]
    assert tuple(results["q1_1_d_k_test"]) == (1.0, 1.0, None)
    assert results["q1_2_why_test"].score == 0 and "tampering" not in results["q1_2_why_test"].message
    assert tuple(results["q1_2_output_shape_test"]) == (1.0, 1.0, None)


def test_a_student_side_that_dies_loses_only_what_it_had_not_handed_over(tmp_path, kernels):
    answers = {"q1_1_head_dim": "def head_dim(d_model, h):\n    import os\n    os._exit(3)"}
    results = standalone.recheck(LEVEL1, graded_copy(tmp_path, "dies", answers), timeout=20)
    message = results["q1_1_head_dim_test"].message
    assert results["q1_1_head_dim_test"].score == 0 and checker.NOT_CONFIRMED in message and "`head_dim`" in message
    assert "tampering" not in message
    # the data answers were handed over before the function was called
    assert results["q1_1_d_k_test"].score == 1 and results["q1_2_why_test"].score == 1


BEYOND = ROOT / "notebooks" / "beyond_the_sheet.ipynb"  # Problem 3.5


def test_a_function_given_a_function_calls_it_back_and_keeps_its_points(tmp_path, kernels):
    """Problem 3.5's permutation_test(f, X, perm) gets the checker's own attention functions as f: the student
    side calls them back (the arguments and the result cross as data), so an honest answer keeps its 2 points
    (it lost them as "tampering suspected" when f crossed as an opaque stand-in); a wrong one still loses them."""
    results = standalone.recheck(BEYOND, BEYOND, timeout=30)
    assert tuple(results["q3_5_permutation_test_test"]) == (2.0, 2.0, None)
    nb = nbformat.read(str(BEYOND), as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "q3_5_permutation_test":
            # calls f with what it likes (a string), then answers from the error: wrong, not tampering
            cell.source = ("def permutation_test(f, X, perm):\n    try:\n        f('not an array')\n"
                           "    except Exception as error:\n        return 'TypeError' in type(error).__name__ or True\n"
                           "    return True")
        if cell.metadata.get("nbgrader", {}).get("grade_id") == "q3_5_permutation_test_test":  # nbgrader failed it too
            cell.outputs = [nbformat.v4.new_output("error", ename="WrongAnswer", evalue="no", traceback=[])]
    path = tmp_path / "wrong" / BEYOND.name
    path.parent.mkdir()
    nbformat.write(nb, str(path))
    wrong = standalone.recheck(BEYOND, path, timeout=30)["q3_5_permutation_test_test"]
    assert wrong.score == 0 and wrong.misconception == "causal-equivariant" and "tampering" not in wrong.message
    assert checker.NOT_CONFIRMED not in wrong.message


@pytest.mark.parametrize("level", sorted((ROOT / "notebooks").glob("level*.ipynb")) + [BEYOND],
                         ids=lambda path: path.stem)
def test_the_recheck_confirms_every_right_answer_of_every_level(level, tmp_path, kernels):
    """The solved source of each level (its numbers filled in, as every edition has them), as nbgrader passed
    it: every test cell keeps all its points in the clean re-check (a kind of answer the protocol cannot carry
    would cost an honest student points as "tampering")."""
    from tests.conftest import filled

    source = tmp_path / level.name
    nbformat.write(filled(level), str(source))
    results = standalone.recheck(source, source, timeout=60)
    lost = {gid: r.message for gid, r in results.items() if r.score != r.max_score}
    assert results and not lost, lost


LEVEL4 = ROOT / "notebooks" / "level4_synthesis.ipynb"
MHA_WITH = """\
def multi_head_attention(X, W_Q, W_K, W_V, W_O, h, causal=False):
    *batch, n, d_model = X.shape
    d_k = d_model // h
    Q, K, V = (np.swapaxes((X @ W).reshape(*batch, n, h, d_k), -2, -3) for W in (W_Q, W_K, W_V))
    scores = {scores}
    if causal:
        scores = np.where(np.tri(n, dtype=bool), scores, -np.inf)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    weights = {weights}
    return np.swapaxes(weights @ V, -2, -3).reshape(*batch, n, d_model) @ W_O
"""


@pytest.mark.parametrize("scores, weights, tag, says", [
    ("Q @ K.T / np.sqrt(d_k)", "e / e.sum(axis=-1, keepdims=True)", "transposed-all-axes",
     ["`Q @ K.T", "`K.T` reverses every axis of `K`", "np.swapaxes(K, -1, -2)"]),
    ("Q @ np.swapaxes(K, -1, -2) / np.sqrt(d_k)", "e / e.sum(axis=-1)", "no-keepdims",
     ["`e / e.sum(axis=-1)`", "keepdims=True"]),
], ids=["K.T", "no keepdims"])
def test_a_shape_bug_is_named_in_the_recheck_as_in_the_kernel(tmp_path, scores, weights, tag, says, kernels):
    """The student's function runs in the student side's process: the failing line and its operands' shapes are
    read there, so a test that only the re-check runs names the bug as the kernel would (it gave numpy's words)."""
    nb = nbformat.read(str(LEVEL4), as_version=4)
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid == "q4_3_multi_head_attention":
            cell.source = MHA_WITH.format(scores=scores, weights=weights)
        if gid == "q4_3_multi_head_attention_test":  # nbgrader failed it too
            cell.outputs = [nbformat.v4.new_output("error", ename="WrongAnswer", evalue="no", traceback=[])]
    path = tmp_path / LEVEL4.name
    nbformat.write(nb, str(path))
    result = standalone.recheck(LEVEL4, path, timeout=60)["q4_3_multi_head_attention_test"]
    assert result.score == 0 and result.misconception == tag, result
    for phrase in says:
        assert phrase in result.message, result.message
    assert "tampering" not in result.message


def test_an_explanation_crosses_only_in_its_schema():
    info = {"type": "ValueError", "message": "operands could not be broadcast together with shapes (2,5,5) (2,5) ",
            "explained": {"tag": "no-keepdims", "text": "`e.sum(axis=-1)` has shape (2, 5)"}}
    kind, content = protocol.check_reply({"seq": 3, "raised": info}, "call", 3)
    error = protocol.raised(content)
    from autograders.student.shape_errors import explain

    assert kind == "raised" and explain(error) == ("no-keepdims", "`e.sum(axis=-1)` has shape (2, 5)")
    for explained in ({"tag": "passed", "text": "x"}, {"tag": "no-keepdims"}, {"tag": "no-keepdims", "text": "x" * 2001},
                      {"tag": "no-keepdims", "text": 3}, "no-keepdims"):
        with pytest.raises(protocol.ProtocolError):
            protocol.check_reply({"seq": 3, "raised": {**info, "explained": explained}}, "call", 3)
    assert explain(protocol.raised({**info, "type": "TypeError"})) is None  # only a shape error is explained


def test_a_callback_of_a_function_never_passed_is_interference():
    side = object.__new__(serve.StudentSide)
    with pytest.raises(protocol.ProtocolError, match="not passed"):
        side._answer({"function": 1, "args": []}, [len], 0, None)


def test_a_callback_may_send_no_bigger_array_than_the_check_passed(monkeypatch):
    """The checker's function runs in the grading process with no deadline of its own: the student's function
    may call it on arrays up to the size of the call's own arguments, and gets an error back beyond."""
    from autograders.student import serve as student_side

    sent = []
    monkeypatch.setattr(student_side, "send", lambda fd, message, deadline=None: sent.append(message))
    side = object.__new__(serve.StudentSide)
    side.write_fd, side.seq = -1, 7
    for n, answered in ((12, "value"), (13, "raised")):
        side._answer({"function": 0, "args": [protocol.encode(np.ones(n))]}, [np.sum], 12, None)
        assert sent[-1]["seq"] == 7 and answered in sent[-1], sent[-1]
    assert "more than the largest the check passed (12)" in sent[-1]["raised"]["message"]


def test_a_cell_that_spends_the_memory_limit_costs_only_what_it_sets(tmp_path, kernels):
    """After a cell filled the memory limit and raised MemoryError, what the allocator kept of it could make
    any later request fail (handing over `d_k` crashed the process in about one grading in three): the
    kernel is replaced there, the new one replays the other cells without it, and hands the answers over."""
    bomb = "def bomb():\n    hog = []\n    while True:\n        hog.append(bytearray(10**7))\nbomb()\nwhy = 'B'"
    for attempt in range(3):
        path = graded_copy(tmp_path / str(attempt), "bomb", {"q1_2_why": bomb}, failed_tests=("q1_2_why_test",))
        results = standalone.recheck(LEVEL1, path, timeout=20, settings=Settings(memory=1024**3))
        assert {gid: r.score for gid, r in results.items()} == {**TESTS, "q1_2_why_test": 0.0}, \
            {gid: r.message for gid, r in results.items()}


def test_an_unreadable_notebook_scores_nothing(tmp_path):
    missing = tmp_path / "nobody" / "level1_recognition.ipynb"
    results = standalone.recheck(LEVEL1, missing)
    assert set(results) == set(TESTS) and all(r.score == 0 and "not graded" in r.message for r in results.values())


# --- the protocol under attack: everything from the student side is untrusted -------


def npy(array):
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return base64.b64encode(buffer.getvalue()).decode()


def nested(depth):
    value = 1
    for _ in range(depth):
        value = {"list": [value]}
    return value


def forged_header(dtype_descr, shape, data=b""):
    header = repr({"descr": dtype_descr, "fortran_order": False, "shape": shape}).encode()
    header += b" " * (63 - len(header) % 64) + b"\n"
    return base64.b64encode(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header + data).decode()


HOSTILE_DATA = {
    "a bare list": [1, 2],
    "an unknown key": {"pickle": "gASV"},
    "two shapes at once": {"int": "5", "float": "nan"},
    "an extra key": {"tuple": [], "x": 1},
    "a bool for a handle": {"function": True, "name": "f"},
    "a negative handle": {"function": -1, "name": "f"},
    "a long function name": {"function": 0, "name": "f" * 101},
    "a number for a repr": {"opaque": "T", "repr": 3},
    "a long repr": {"opaque": "T", "repr": "x" * 201},
    "a malformed int": {"int": "--5"},
    "digits forever": {"int": "9" * 5000},
    "a big bare int": 2**60,
    "a float spelled out": {"float": "1e400"},
    "a complex of strings": {"complex": ["1", "2"]},
    "a complex of three": {"complex": [1, 2, 3]},
    "a dict of a list": {"dict": [1]},
    "an ellipsis of 0": {"ellipsis": 0},
    "nested too deep": nested(protocol.MAX_DEPTH + 2),
    "too many values": {"list": [1] * (protocol.MAX_ITEMS + 1)},
    "an array of objects": {"npy": forged_header("|O", (1,), b"\0" * 8), "scalar": False},
    "a structured array": {"npy": forged_header([("a", "<f8")], (1,), b"\0" * 8), "scalar": False},
    "an array longer than its data": {"npy": forged_header("<f8", (10**12,), b"\0" * 8), "scalar": False},
    "an array shorter than its data": {"npy": forged_header("<f8", (1,), b"\0" * 16), "scalar": False},
    "an array that is not base64": {"npy": "!!!!", "scalar": False},
    "a scalar with a shape": {"npy": npy(np.zeros(3)), "scalar": True},
    "a scalar flag that is a string": {"npy": npy(np.zeros(3)), "scalar": "no"},
}


@pytest.mark.parametrize("name", HOSTILE_DATA)
def test_data_that_encode_would_not_make_is_refused(name):
    with pytest.raises(protocol.ProtocolError):
        protocol.decode(HOSTILE_DATA[name])


def test_what_encode_makes_is_accepted_at_its_limits():
    for value in [nested(protocol.MAX_DEPTH), {"list": [1] * 1000}, {"int": "-" + "9" * 4000}, {"float": "-inf"},
                  {"npy": npy(np.float32(2.5)), "scalar": True}, {"npy": npy(np.array(["a", "bc"])), "scalar": False}]:
        protocol.decode(value)
    assert protocol.decode(protocol.encode(complex(float("nan"), 1.0))).imag == 1.0


def framed(payload):
    return struct.pack(">Q", len(payload)) + payload


def receive_from(data, close=True, seconds=2.0):
    """What ``_receive`` makes of ``data`` written to a pipe (then closed, if ``close``)."""
    read_fd, write_fd = os.pipe()

    def write():  # in a thread: more than a pipe holds blocks until it is read
        with contextlib.suppress(OSError):
            os.write(write_fd, data)
        if close:
            os.close(write_fd)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        return protocol.receive(read_fd, time.monotonic() + seconds)
    finally:
        os.close(read_fd)
        writer.join()
        if not close:
            os.close(write_fd)


@pytest.mark.parametrize("data", [
    struct.pack(">Q", protocol.MAX_MESSAGE + 1),  # oversized, announced
    framed(b"{not json"),
    framed(b"\xff\xfe"),  # not UTF-8
    framed(b"[" * 100_000 + b"]" * 100_000),  # nested past the parser's recursion limit
    framed(b'{"seq": 1, "seq": 2, "missing": true}'),  # a key twice
    framed(b"[1, 2]"),  # not an object
    framed(b'{"seq": 1, "missing": ' + b"1" * 5000 + b"}"),  # a number Python will not parse
], ids=["oversized", "not-json", "not-utf8", "deep", "repeated-key", "not-object", "huge-number"])
def test_malformed_messages_are_protocol_errors(data):
    with pytest.raises(protocol.ProtocolError):
        receive_from(data)


def test_reads_are_bounded_in_time_and_notice_the_end():
    start = time.monotonic()
    with pytest.raises(TimeoutError):  # a length, then nothing: the deadline, not a hang
        receive_from(struct.pack(">Q", 100) + b"{", close=False, seconds=0.5)
    assert time.monotonic() - start < 5
    with pytest.raises(EOFError):
        receive_from(struct.pack(">Q", 100) + b"{")


@pytest.mark.parametrize("reply, op", [
    ({"missing": True}, "get"),  # no sequence number
    ({"seq": True, "missing": True}, "get"),  # a bool is not a number here
    ({"seq": 6, "missing": True}, "get"),  # a reply to another request
    ({"seq": 7, "missing": True, "timeout": True}, "get"),  # two answers
    ({"seq": 7, "value": 1}, "hello"),  # an answer this request cannot have
    ({"seq": 7, "missing": 1}, "get"),
    ({"seq": 7, "passed": True}, "call"),  # a verdict: never the student side's to give
    ({"seq": 7, "raised": {"type": "ValueError"}}, "call"),
    ({"seq": 7, "raised": {"type": "E" * 101, "message": ""}}, "call"),
    ({"seq": 7, "value": {"pickle": "x"}}, "get"),
    ({"seq": 7, "callback": {"function": 0, "args": []}}, "get"),  # a callback outside a call of the student's function
    ({"seq": 7, "callback": {"function": "0", "args": []}}, "call"),
    ({"seq": 7, "callback": {"function": 0}}, "call"),
    ({"seq": 7, "callback": {"function": 0, "args": {}}}, "call"),
    ({"seq": 7, "callback": {"function": 0, "args": [{"pickle": "x"}]}}, "call"),
    ({"seq": 7, "callback": {"function": 0, "args": [], "passed": True}}, "call"),
])
def test_replies_must_answer_the_request_just_sent_in_its_schema(reply, op):
    with pytest.raises(protocol.ProtocolError):
        protocol.check_reply(reply, op, 7)


def test_well_formed_replies_pass():
    assert protocol.check_reply({"seq": 3, "missing": True}, "get", 3) == ("missing", True)
    callback = {"function": 0, "args": [{"tuple": [6, 768]}]}
    assert protocol.check_reply({"seq": 3, "callback": callback}, "call", 3) == ("callback", callback)
    assert protocol.check_reply({"seq": 3, "value": {"tuple": [6, 768]}}, "get", 3) == ("value", {"tuple": [6, 768]})
    kind, info = protocol.check_reply({"seq": 3, "raised": {"type": "ZeroDivisionError", "message": "x"}}, "call", 3)
    assert kind == "raised" and isinstance(protocol.raised(info), ZeroDivisionError)
    assert not isinstance(protocol.raised({"type": "SystemExit", "message": ""}), SystemExit)  # only Exceptions by name


FAKE_SIDE = """\
import json, os, struct, sys, time
fd_in, fd_out = int(sys.argv[-2]), int(sys.argv[-1])
def send(obj):
    data = json.dumps(obj).encode()
    os.write(fd_out, struct.pack(">Q", len(data)) + data)
def receive():
    size = struct.unpack(">Q", os.read(fd_in, 8))[0]
    return json.loads(os.read(fd_in, size))
{body}
"""

FAKES = {
    "garbage": ("send({'seq': receive()['seq'], 'hello': True})\nreceive()\nos.write(fd_out, os.urandom(64))\n"
                "time.sleep(30)", "interfered"),
    "reply-to-another-request": ("send({'seq': receive()['seq'], 'hello': True})\nsend({'seq': receive()['seq'] + 1, "
                                 "'missing': True})\ntime.sleep(30)", "interfered"),
    "speaks-unasked": ("send({'seq': receive()['seq'], 'hello': True})\nsend({'seq': 2, 'missing': True})\n"
                       "time.sleep(30)", "interfered"),
    "closes-its-pipe": ("send({'seq': receive()['seq'], 'hello': True})\nreceive()\nos.close(fd_out)\ntime.sleep(30)",
                        "stopped"),
    "sleeps-forever": ("send({'seq': receive()['seq'], 'hello': True})\ntime.sleep(300)", "timeout"),
    "forks-a-child-that-holds-the-pipe": ("send({'seq': receive()['seq'], 'hello': True})\nreceive()\n"
                                          "os.fork() or time.sleep(300)\nos._exit(0)", "timeout"),
}


@pytest.mark.parametrize("fake", FAKES)
def test_a_hostile_student_side_is_stopped_and_killed(fake, kernels):
    """The checker's handle on the process serving the hand-over, against fakes of it (plain processes here:
    what is tested is the checker's side, every reply checked and every wait bounded)."""
    body, kind = FAKES[fake]
    to_side, write = os.pipe()
    read, from_side = os.pipe()
    process = subprocess.Popen([sys.executable, "-c", FAKE_SIDE.replace("{body}", body), str(to_side), str(from_side)],
                               pass_fds=(to_side, from_side), start_new_session=True)
    os.close(to_side)
    os.close(from_side)
    side = serve.StudentSide(write, read, lambda: os.killpg(process.pid, signal.SIGKILL))
    try:
        assert side.ask("hello", 30) == ("hello", True)
        if fake == "speaks-unasked":
            time.sleep(0.5)  # its message arrives before the checker asks anything
        start = time.monotonic()
        with pytest.raises(serve.Stopped) as stopped:
            # sleeps-forever is sent more than a pipe holds: the write is bounded in time too
            side.ask("get", 2, name="x" * (300_000 if fake == "sleeps-forever" else 1), timeout=1)
        assert stopped.value.kind == kind and time.monotonic() - start < 10
        assert not side.alive and process.wait(timeout=10) is not None
        with pytest.raises(serve.Stopped):
            side.ask("get", 2, name="x", timeout=1)
    finally:
        side.close()
        with contextlib.suppress(OSError):
            os.killpg(process.pid, signal.SIGKILL)


# --- the hand-over attacked in a real run: what was handed over before keeps its points ----
#
# ``why`` is a str whose __repr__ attacks only inside the hand-over (tests/corpus: IN_HANDOVER). The answers go
# over in the order of their names (d_k, head_dim, output_shape, why): an attack that gets the process killed
# costs ``why`` and the function answer ``head_dim`` (no process left to call), not the data handed over before.

PATCHED_JSON = 'import json\njson.dumps = lambda *args, **kwargs: \'{"seq": 1, "passed": true}\''

IGNORES_ALARM = corpus.IGNORE_SIGNALS_LOOP  # ignores the alarm and interrupts, busy for 120 s

FLOOD = """\
for _ in range(100_000):  # 100 MB: past the output limit, the cell is stopped
    print("x" * 1000)
"""

KILLED = ("q1_1_head_dim_test", "q1_2_why_test")
ATTACKS = {  # name: (answers, the tests that must score 0, phrases the last one's message must hold)
    "garbage-on-the-pipe": ({"q1_2_why": corpus.HANDOVER_GARBAGE}, KILLED, (serve.INTERFERED, "`why`")),
    "forged-reply": ({"q1_2_why": corpus.HANDOVER_FORGED}, KILLED, (serve.INTERFERED, "`why`")),
    "patched-json": ({"q1_2_why": corpus._in_handover(PATCHED_JSON)}, KILLED, (serve.INTERFERED, "`why`")),
    "hangs-in-the-hand-over": ({"q1_2_why": corpus._in_handover(IGNORES_ALARM)}, KILLED,
                               ("no answer within the 3 s limit", "`why`")),
    "floods-in-the-hand-over": ({"q1_2_why": corpus._in_handover(FLOOD)}, ("q1_2_why_test",),
                                ("handing over `why` printed more than 200000 characters",)),
    "cell-prints-100-MB": ({"q1_2_why": FLOOD + 'why = "B"'}, ("q1_2_why_test",),
                           ("`q1_2_why` printed more than 200000 characters",)),
    "cell-ignores-the-alarm": ({"q1_2_why": IGNORES_ALARM + 'why = "B"'}, ("q1_2_why_test",),
                               ("`q1_2_why` ran past the 3 s limit",)),
    "function-ignores-the-alarm": (
        {"q1_1_head_dim": "def head_dim(d_model, h):\n" + "\n".join("    " + line for line in IGNORES_ALARM.splitlines())
         + "\n    return d_model // h"}, ("q1_1_head_dim_test",), ("no answer within the 3 s limit", "`head_dim` ran")),
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_an_attack_on_the_hand_over_costs_only_its_own_answers(tmp_path, attack, kernels):
    answers, zero, phrases = ATTACKS[attack]
    start = time.monotonic()
    results = standalone.recheck(LEVEL1, graded_copy(tmp_path, attack, answers), timeout=3)
    assert time.monotonic() - start < 90
    assert {gid: r.score for gid, r in results.items()} == {gid: (0.0 if gid in zero else p) for gid, p in TESTS.items()}
    message = results[zero[-1]].message
    assert message.startswith(checker.NOT_CONFIRMED) and all(p in message for p in phrases), message
    assert "tampering" not in message  # the kernel passed it, but the checks could not run it: not a finding


CLOSES_PIPES = """\
import os
for fd in os.listdir("/proc/self/fd"):  # the hand-over's pipes among them
    try:
        if int(fd) > 2 and os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:"):
            os.close(int(fd))
    except OSError:
        pass
why = "B"
"""


def test_a_kernel_that_closes_the_hand_overs_pipes_confirms_nothing(tmp_path, kernels):
    results = standalone.recheck(LEVEL1, graded_copy(tmp_path, "closes", {"q1_2_why": CLOSES_PIPES}), timeout=3)
    assert {gid: r.score for gid, r in results.items()} == dict.fromkeys(TESTS, 0.0)
    assert all(r.message.startswith(checker.NOT_CONFIRMED) and "hand-over began" in r.message for r in results.values())


# --- the gradebook side: only the re-check's verdict gives points ---------------------


class FakeGrade:
    def __init__(self, name, auto_score, max_score, cell_type="code"):
        self.name, self.auto_score, self.max_score, self.cell_type = name, auto_score, max_score, cell_type


WRONG = {"ename": "WrongAnswer", "evalue": "no", "traceback": ["✘ Not yet. no"]}
VERDICTS = {  # what the checks say of q1_1_head_dim_test (2 points): (the verdict, what the cell shows)
    "passed": (checker.Checked(2.0, 2.0, shown="✔ Correct.\n"), ["stream"]),
    "failed-visibly": (checker.Checked(0.0, 2.0, "no", shown="", error=WRONG), ["error"]),
    "failed-hidden": (checker.Checked(0.0, 2.0, "no", hidden=True, shown="✔ Correct.\n"), ["stream", "stream"]),
    "not-confirmed": (checker.Checked(0.0, 2.0, f"{checker.NOT_CONFIRMED}: it timed out", confirmed=False), ["stream"]),
    "wrote-to-stderr": (checker.Checked(0.0, 2.0, "a warning", stderr="RuntimeWarning: a warning\n"), ["stream"]),
    "missing": (None, ["stream"]),
}


@pytest.mark.parametrize("verdict", VERDICTS)
def test_points_come_only_from_the_checks_verdict(tmp_path, verdict):
    """Each test cell's outputs are its verdict's, whatever the submission left in it, and nbgrader's own
    scoring of those outputs (what SaveAutoGrades records) gives exactly the verdict's score."""
    from nbgrader.utils import determine_grade


    given, kinds = VERDICTS[verdict]
    nb = nbformat.read(str(graded_copy(tmp_path, "autograded", {}, failed_tests=("q1_1_d_k_test",))), as_version=4)
    others = {gid: checker.Checked(p, p) for gid, p in TESTS.items() if gid != "q1_1_head_dim_test"}
    checker.write_outputs(nb, {**others, **({"q1_1_head_dim_test": given} if given else {})})
    cells = {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells if checker.is_test(c)}
    score = given.score if given else 0.0
    assert {gid: determine_grade(c)[0] for gid, c in cells.items()} == {**TESTS, "q1_1_head_dim_test": score}
    cell = cells["q1_1_head_dim_test"]
    assert [o.output_type for o in cell.outputs] == kinds
    notes = [o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stderr"]
    if verdict in ("failed-hidden", "not-confirmed", "missing"):
        assert notes == [(checker.HIDDEN_NOTE if verdict == "failed-hidden" else checker.RECHECKED_NOTE).format(
            score=0, max_score=2, message=given.message if given else checker.NO_VERDICT)]
    unconfirmed = [r.grade_id for r in checker.unconfirmed(nb)]
    assert unconfirmed == (["q1_1_head_dim_test"] if verdict in ("not-confirmed", "missing") else [])


class _Answers:
    """A hand-over whose answers are already here (no process): what ``check`` reads of one."""

    def __init__(self, values):
        self.values, self.unavailable, self.trouble, self.cells = values, {}, {}, []
        self.timeout, self.deadline, self.broken = 10, None, None

    def ready(self):
        return True

    def namespace(self):
        return dict(self.values)


def _test_cell(grade_id, source):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["nbgrader"] = {"grade": True, "grade_id": grade_id, "locked": True, "points": 1, "solution": False}
    return cell


def test_what_a_test_cell_shows_is_its_visible_part_and_stderr_fails_it_every_time():
    """As in a kernel: a warning on stderr fails the test (each time, not once per process), and only the
    visible part's print is shown; a hidden test's print never is."""
    source = nbformat.v4.new_notebook(cells=[
        _test_cell("warns", "import numpy as np\nprint('seen')\nnp.float64(answer) / 0\n"),
        _test_cell("prints", "print('seen', answer)\n### BEGIN HIDDEN TESTS\nprint('secret')\n### END HIDDEN TESTS\n"),
    ])
    for _ in range(2):
        found = checker.check(source, _Answers({"answer": 1.0}))
        warns, prints = found["warns"], found["prints"]
        assert (warns.score, warns.shown, warns.error) == (0.0, "seen\n", None) and "RuntimeWarning" in warns.stderr
        assert (prints.score, prints.shown, prints.stderr) == (1.0, "seen 1.0\n", "")
