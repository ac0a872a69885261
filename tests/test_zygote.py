"""Kernels forked from a warm zygote (autograders/grading/zygote.py): as isolated as launched ones."""

import os
import select
import signal
import subprocess
import sys
import tempfile
import textwrap
import time

import nbformat
import pytest

from autograders.grading import sandbox, zygote
from autograders.common.settings import Settings


def _inside(box, code, **kwargs):
    return subprocess.run(box.command([sys.executable, "-c", textwrap.dedent(code)]), env=box.env(), capture_output=True,
                          text=True, timeout=120, **kwargs)


@pytest.fixture
def box():
    made = sandbox.Sandbox(Settings(memory=0))
    yield made
    made.close()


def test_the_launcher_command_goes_through_the_zygote_unless_switched_off(box, monkeypatch):
    assert box.command(["true"])[:5] == [sys.executable, "-I", "-S", zygote.__file__, "run"]
    monkeypatch.setenv("MHA_ZYGOTE", "0")
    assert box.command(["true"])[:3] == [sys.executable, "-m", "autograders.grading.sandbox"]
    assert sandbox.Sandbox.command(box, ["true"], zygote=False)[:3] == [sys.executable, "-m", "autograders.grading.sandbox"]


def test_exit_codes_and_deaths_by_signal_reach_the_caller(box):
    assert _inside(box, "import os; os._exit(3)").returncode == 3
    assert _inside(box, "import os, signal; os.kill(os.getpid(), signal.SIGKILL)").returncode == -signal.SIGKILL
    done = _inside(box, "import sys; print('out'); print('err', file=sys.stderr)")
    assert (done.returncode, done.stdout, done.stderr) == (0, "out\n", "err\n")


def test_killing_the_proxy_kills_what_the_zygote_forked(box):
    proxy = subprocess.Popen(box.command([sys.executable, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(300)"]),
                             env=box.env(), stdout=subprocess.PIPE, text=True)
    pid = int(proxy.stdout.readline())
    assert pid != proxy.pid  # the child is the zygote's, not the proxy's
    os.kill(pid, 0)
    proxy.kill()
    proxy.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.05)
    pytest.fail(f"process {pid} outlived its proxy")


def _run_notebook(cells, **options):
    """Execute ``cells`` with nbgrader's executor in the sandbox; the outputs' text per cell."""
    from autograders.grading.autograde import SandboxExecute

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    executor = SandboxExecute(**{"timeout": 20, **options})
    with tempfile.TemporaryDirectory() as here:  # the submission's folder: its other files are copied in
        nb, _ = executor.preprocess(nb, {"metadata": {"path": here}})
    return ["".join(o.get("text", "") or str(o.get("evalue", "")) or str(o.get("data", {}).get("text/plain", ""))
                    for o in cell.outputs) for cell in nb.cells]


def test_a_forked_kernel_starts_warm_isolated_and_clean(kernels):
    probe = "import sys, os, json; print('mha_core.widgets' in sys.modules, json.loads(os.environ['MHA_SANDBOX'])['network'])"
    tamper = "import numpy; numpy.allclose = lambda *a, **k: True; open('/tmp/left-behind', 'w').write('x'); print('done')"
    check = "import numpy, os; print(numpy.allclose(1, 2), os.path.exists('/tmp/left-behind'))"
    first = _run_notebook([probe, tamper])
    second = _run_notebook([probe, check])
    assert first == ["True isolated\n", "done\n"]
    assert second[1] == "False False\n"  # nothing of the first kernel in the second
    cold = _run_notebook([probe], zygote=False)
    assert cold == ["False isolated\n"]


def test_a_stuck_cell_is_interrupted_through_the_proxy_and_the_rest_runs(kernels):
    outputs = _run_notebook(["x = 1", "import time\nwhile True: time.sleep(0.01)", "print(x + 1)"], timeout=3)
    assert "timeout" in outputs[1]
    assert outputs[2] == "2\n"


def test_a_crashed_kernel_is_replaced_and_the_rest_runs(kernels):
    outputs = _run_notebook(["x = 41", "import os; os._exit(1)", "print(x + 1)"])
    assert "crash" in outputs[1]
    assert outputs[2] == "42\n"


def test_file_descriptors_handed_on_keep_their_numbers(box):
    pipes = [os.pipe() for _ in range(6)]
    writers = [w for _, w in pipes]
    code = f"import os\nfor fd in {writers}: os.write(fd, str(fd).encode())"
    done = subprocess.run(box.command([sys.executable, "-c", code], fds=writers), env=box.env(), pass_fds=writers,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    for r, w in pipes:
        os.close(w)
        assert os.read(r, 100) == str(w).encode()
        os.close(r)


def test_a_handed_on_fd_closed_by_the_child_reaches_its_reader_at_once(box):
    """The proxy keeps no copy: a student side that closes its pipe (or dies) is seen at once, not at a deadline."""
    read_fd, write_fd = os.pipe()
    code = f"import os, time\nos.write({write_fd}, b'x')\nos.close({write_fd})\ntime.sleep(60)"
    child = subprocess.Popen(box.command([sys.executable, "-c", code], fds=[write_fd]), env=box.env(), pass_fds=[write_fd],
                             start_new_session=True)
    os.close(write_fd)
    try:
        assert os.read(read_fd, 1) == b"x"
        start = time.monotonic()
        assert select.select([read_fd], [], [], 20)[0] and os.read(read_fd, 1) == b""  # the end, while it sleeps
        assert time.monotonic() - start < 20 and child.poll() is None
    finally:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        os.close(read_fd)
