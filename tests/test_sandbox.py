"""The sandbox a submission runs in (autograders/sandbox.py).

What the operating system allows decides part of the isolation: new network and
mount namespaces need CAP_SYS_ADMIN (root, or unprivileged user namespaces), and
becoming a throwaway user needs root. Each test probes that independently of the
sandbox (``unshare -n true``, ``os.geteuid()``) and then asserts what must hold:
where the OS allows it, the isolation is enforced; where it does not, the sandbox
says so in its report (``$MHA_SANDBOX``) and the gap is the documented one.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import nbformat
import pytest

from autograders import sandbox

ROOT = Path(__file__).resolve().parent.parent
MiB = 1024**2


def _can(*command):
    """True when the OS lets this process run ``command`` (a probe independent of the sandbox)."""
    try:
        return subprocess.run(list(command), capture_output=True, timeout=20).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


NAMESPACES = _can("unshare", "--net", "--mount", "true") or _can("unshare", "--user", "--map-root-user", "--net", "--mount", "true")
ROOT_USER = os.geteuid() == 0


def run_inside(box, code, timeout=60):
    """Run Python ``code`` inside ``box``; return (report, stdout)."""
    result = subprocess.run(box.command([sys.executable, "-c", textwrap.dedent(code)]), env=box.env(), capture_output=True,
                            text=True, timeout=timeout)
    assert result.returncode == 0, result.stderr[-3000:]
    lines = result.stdout.splitlines()
    return json.loads(lines[0]), "\n".join(lines[1:])


@pytest.fixture
def listener():
    """A TCP server on the host's loopback: the sandbox must not reach it when its network is cut."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    accepted = []

    def serve():
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            accepted.append(1)
            connection.close()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1], accepted
    server.close()


def test_limits_isolation_and_cleanup(tmp_path, listener, monkeypatch):
    port, accepted = listener
    course = tmp_path / "course"  # a course as nbgrader leaves it: world-readable
    (course / "source").mkdir(parents=True)
    (course / "source" / "hidden.txt").write_text("the hidden tests")
    os.chmod(tmp_path, 0o755)
    outside = Path(f"/tmp/mha-sandbox-test-{os.getpid()}.txt")
    monkeypatch.setenv("MHA_TEST_SECRET", "a token")
    box = sandbox.Sandbox(memory=512 * MiB, file_size=1 * MiB, hide=[course])
    try:
        report, out = run_inside(box, f"""
            import json, os, socket, subprocess, sys
            print(os.environ["MHA_SANDBOX"])
            def attempt(what, action):
                try:
                    action()
                    print(what, "ok")
                except BaseException as error:
                    print(what, type(error).__name__)
            attempt("memory", lambda: bytearray(600 * 1024 * 1024))
            attempt("big-file", lambda: open("big.bin", "wb").write(b"x" * (2 * 1024 * 1024)))
            attempt("small-file", lambda: open("small.bin", "wb").write(b"x" * 1000))
            attempt("network", lambda: socket.create_connection(("127.0.0.1", {port}), timeout=3))
            attempt("read-course", lambda: open({str(course / "source" / "hidden.txt")!r}).read())
            attempt("read-notebooks", lambda: open({str(ROOT / "notebooks" / "level1_recognition.ipynb")!r}).read())
            attempt("write-tmp", lambda: open({str(outside)!r}, "w").write("x"))
            attempt("write-repo", lambda: open({str(ROOT / "pwned-by-sandbox-test.txt")!r}, "w").write("x"))
            print("secret", os.environ.get("MHA_TEST_SECRET"))
            print("uid", os.getuid())
            subprocess.Popen(["sleep", "300"], start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # left behind
            """)
        seen = dict(line.split(" ", 1) for line in out.splitlines())
        # Always enforced: the limits, the environment.
        assert report["memory"] == 512 * MiB and seen["memory"] == "MemoryError"
        assert seen["big-file"] == "OSError" and seen["small-file"] == "ok"  # EFBIG, not death by SIGXFSZ
        assert seen["secret"] == "None"
        # Network: cut where the OS allows new namespaces; otherwise reported as shared.
        if NAMESPACES:
            assert report["network"] == "isolated" and seen["network"] != "ok" and not accepted
        else:
            assert report["network"].startswith("shared") and seen["network"] == "ok"
        # Files: the course and the instructor's notebooks hidden; /tmp private.
        if NAMESPACES:
            assert report["filesystem"] == "isolated"
            assert seen["read-course"] == "FileNotFoundError" and seen["read-notebooks"] == "FileNotFoundError"
            assert seen["write-tmp"] == "ok" and not outside.exists()  # written to the sandbox's own /tmp
        else:
            assert report["filesystem"].startswith("shared")
        # The user: a throwaway one as root, which cannot write to the repository.
        if ROOT_USER and "unchanged" not in str(report["user"]):
            assert sandbox.UID_RANGE[0] <= report["user"] < sandbox.UID_RANGE[1] and seen["uid"] == str(report["user"])
            assert seen["write-repo"] == "PermissionError"
        elif ROOT_USER:  # only when the interpreter is unreachable for other users and nothing can show it
            assert not NAMESPACES
        assert not (ROOT / "pwned-by-sandbox-test.txt").exists()
    finally:
        uid = box.uid
        box.close()
        outside.unlink(missing_ok=True)
        (ROOT / "pwned-by-sandbox-test.txt").unlink(missing_ok=True)
    assert not box.root.exists()
    if uid is not None:  # whatever it left running is gone
        time.sleep(0.2)
        left = [p for p in Path("/proc").glob("[0-9]*/status")
                if f"Uid:\t{uid}\t" in _read(p) and "State:\tZ" not in _read(p)]  # zombies: dead, awaiting their reaper
        assert not left


def _read(path):
    try:
        return path.read_text()
    except OSError:
        return ""


def _notebook(*sources):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    nb.metadata.kernelspec = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


def _text(cell):
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type == "error":
            parts.append(f"{output.ename}: {output.evalue}")
        else:
            parts.append(str(output.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def test_a_bad_cell_costs_only_itself(tmp_path):
    """A timeout, a stuck kernel, a crash, a memory blow-up and an output flood each
    leave a note in their own cell; every other cell runs, with the state it had."""
    nb = _notebook(
        "x = 1",
        "while True:\n    pass",
        "y = x + 1",
        "import os\nos._exit(1)",
        "def bomb():\n    hog = []\n    while True:\n        hog.append(bytearray(10**7))\nbomb()",
        "for i in range(100_000):\n    print('flood', i)",
        "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nwhile True:\n    pass",
        "import sys\nprint('end', x, y, len(bytearray(10**8)))\nprint('clean stderr', file=sys.stderr)",
    )
    executor = sandbox.SandboxExecute(timeout=3, memory_limit=1024**3, output_limit=50_000)
    started = time.perf_counter()
    nb, _ = executor.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    seconds = time.perf_counter() - started
    text = [_text(c) for c in nb.cells]
    assert "timeout" in text[1] and "CellTimeoutError" in text[1]
    assert "crash" in text[3] and "KernelCrashed" in text[3]
    assert "MemoryError" in text[4] and "memory limit of 1 GiB" in text[4]
    assert "[output limit:" in text[5] and len(text[5]) < 50_000 + 1000
    assert "timeout" in text[6]
    assert "end 1 2 100000000" in text[7] and "clean stderr" in text[7]  # state replayed, memory free again
    assert seconds < 60


def test_course_config_runs_autograde_in_the_sandbox(tmp_path):
    from traitlets.config.loader import PyFileConfigLoader

    from autograders import editions

    editions.write_config(tmp_path)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    steps = [step.__name__ for step in config.Autograde.autograde_preprocessors]
    assert steps[0] == "SandboxExecute" and "Execute" not in steps
    assert "RestoreMissingCells" in [step.__name__ for step in config.Autograde.sanitize_preprocessors]
    assert str(tmp_path.resolve()) in config.SandboxExecute.hide
    assert config.Autograde.pre_convert_hook is sandbox.prepare_submission


def test_prepare_submission_renamed_and_malformed(tmp_path):
    source = tmp_path / "source" / "level1_recognition"
    source.mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / "level1_recognition.ipynb", source)
    submitted = tmp_path / "submitted" / "alice" / "level1_recognition"
    submitted.mkdir(parents=True)
    renamed = submitted / "level1_recognition (1).ipynb"
    shutil.copy(ROOT / "notebooks" / "level1_recognition.ipynb", renamed)
    notebooks = [str(renamed)]
    sandbox.prepare_submission(assignment="level1_recognition", student="alice", notebooks=notebooks)
    assert notebooks == [str(submitted / "level1_recognition.ipynb")] and renamed.exists()
    first = nbformat.read(notebooks[0], as_version=4).cells[0]
    assert "was submitted as `level1_recognition (1).ipynb`" in first.source

    broken = submitted / "level1_recognition.ipynb"
    broken.write_bytes(b'{"cells": [')
    notebooks = [str(broken)]
    sandbox.prepare_submission(assignment="level1_recognition", student="alice", notebooks=notebooks)
    assert (submitted / "level1_recognition.ipynb.invalid").read_bytes() == b'{"cells": ['
    nb = nbformat.read(str(broken), as_version=4)
    assert "is not a valid notebook" in nb.cells[0].source and len(nb.cells) == 1
