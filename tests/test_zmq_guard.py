"""The test process's guard against a zmq context that blocks its worker forever (tests/conftest.py)."""

import subprocess
import sys

from tests.conftest import ROOT

CYCLE = """
import gc, sys, zmq
sys.path.insert(0, {root!r})
{guard}
class Holder: pass
held = Holder()
held.context = zmq.Context()
held.socket = held.context.socket(zmq.DEALER)
held.socket.connect("tcp://127.0.0.1:9")
held.itself = held  # a cycle: context and open socket collected together
del held
gc.collect()
print("collected")
"""


def _run(guard, seconds):
    code = CYCLE.format(root=str(ROOT), guard=guard)
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        return "blocked"
    return done.stdout.strip() or done.stderr[-2000:]


def test_a_context_collected_with_its_open_socket_never_blocks_the_tests(kernels):
    """Without the guard, pyzmq's ``__del__`` blocks in ``term()`` (the case the guard exists for); with it,
    collection ends. (Slow: the first waits out its time limit. The second imports the tests' conftest, which
    took over 8 s on a loaded machine: it has two minutes, where a blocked one would never end.)"""
    assert _run("", 8) == "blocked"
    assert _run("from tests.conftest import contexts_never_block; contexts_never_block()", 120) == "collected"
