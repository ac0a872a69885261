"""Warm kernels (autograders/grading/warm.py, warmstart.py): forked in one bubblewrap sandbox per grading
process, each isolated from its siblings as a cold sandbox is from everything.

The probes run in the warm parent's children as the kernels do (the same isolation, then the command
exec'ed instead of ipykernel run in place); the last tests run real kernels through the provisioner.
"""

import json
import logging
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import nbformat
import pytest

from autograders.common.settings import DEFAULT
from autograders.grading import autograde, sandbox, warm, warmstart
from autograders.variants import current
from tests.test_sandbox import listener  # noqa: F401 (a fixture)

WARM = os.geteuid() == 0 and sandbox._bubblewrap([*sandbox.NAMESPACES]) is None
needs_warm = pytest.mark.skipif(not WARM, reason="warm kernels need root and bubblewrap (the cold path: test_sandbox.py)")

PROBE = r"""
import ctypes, errno, json, os, socket, sys
def attempt(action):
    try:
        action()
        return "done"
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error.errno))
status = dict(line.split(":\t", 1) for line in open("/proc/self/status").read().splitlines() if ":\t" in line)
job = os.path.dirname(os.getcwd())
libc = ctypes.CDLL(None, use_errno=True)
def new_userns():
    if libc.unshare(0x10000000) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
held = []
def abstract():  # the same name in both kernels: taken twice only in two network namespaces
    held.append(socket.socket(socket.AF_UNIX))
    held[-1].bind("\0mha-warm-probe")
def sysv():  # the same key: created twice only in two IPC namespaces
    libc.shmget.restype = ctypes.c_int
    if libc.shmget(0x4D4841, 4096, 0o1600 | 0o2000) < 0:  # IPC_CREAT | IPC_EXCL
        raise OSError(ctypes.get_errno(), "shmget")
def connect():
    s = socket.socket(); s.settimeout(3); s.connect(("127.0.0.1", PORT))
open(os.path.join(os.getcwd(), "mine"), "w").write("x")
open("/tmp/mine-" + str(os.getuid()), "w").write("x")
print(json.dumps({
    "uid": os.getuid(), "pid": os.getpid(), "ppid": os.getppid(), "groups": os.getgroups(),
    "caps": {k: status[k].strip() for k in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
    "nnp": status["NoNewPrivs"].strip(), "seccomp": status["Seccomp"].strip(),
    "pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "tmp": sorted(os.listdir("/tmp")), "jobs": sorted(os.listdir(os.path.dirname(job))), "job": job,
    "etc": attempt(lambda: open("/etc/mha-probe", "w")), "python": attempt(lambda: open(sys.prefix + "/mha-probe", "w")),
    "net": attempt(connect), "userns": attempt(new_userns), "init": attempt(lambda: os.listdir("/proc/1/root/tmp")),
    "abstract": attempt(abstract), "sysv": attempt(sysv),
    "report": json.loads(os.environ["MHA_SANDBOX"]),
}), flush=True)
sys.stdin.readline()
"""


@pytest.fixture
def parent(kernels):
    found = warmstart.parent(DEFAULT)
    assert found is not None and found.alive()
    return found


def start(parent, code, settings=DEFAULT):
    """A probe forked by ``parent`` (through the proxy, as a kernel is); (its sandbox, its process)."""
    box = sandbox.Sandbox(settings, under=parent.jobs)
    command = parent.command(box.command([sys.executable, "-c", code]))
    process = subprocess.Popen(command, env=box.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                               start_new_session=True)
    return box, process


def processes_of(uid):
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            if f"Uid:\t{uid}\t" in status.read_text():
                found.append(int(status.parent.name))
        except OSError:
            continue
    return found


@needs_warm
def test_two_warm_children_side_by_side_are_isolated(parent, listener):  # noqa: F811
    port, accepted = listener
    started = [start(parent, PROBE.replace("PORT", str(port))) for _ in range(2)]
    try:
        seen = [json.loads(process.stdout.readline()) for _, process in started]
        for (box, _), probe in zip(started, seen):
            assert probe["uid"] == box.uid and sandbox.UID_RANGE[0] <= probe["uid"] < sandbox.UID_RANGE[1]
            assert probe["groups"] == [] and probe["caps"] == dict.fromkeys(probe["caps"], "0000000000000000")
            assert probe["nnp"] == "1" and probe["seccomp"] == "2" and probe["userns"] == "EPERM"
            assert probe["pid"] == 2 and probe["ppid"] == 1 and probe["pids"] == [1, 2]  # not the parent, not the grader
            assert probe["abstract"] == "done" and probe["sysv"] == "done"  # a network and an IPC namespace of its own
            assert probe["init"] == "EACCES"  # its init's root, as bubblewrap's: not the kernel's to reach
            assert probe["job"] == str(box.root) and probe["jobs"] == [box.root.name]  # its siblings' directories hidden
            assert [t for t in probe["tmp"] if t.startswith("mine-")] == [f"mine-{box.uid}"]  # its own /tmp
            assert probe["etc"] in ("EROFS", "EACCES") and probe["python"] in ("EROFS", "EACCES")
            assert probe["net"] in ("ENETUNREACH", "ECONNREFUSED", "EHOSTUNREACH")
            assert probe["report"]["start"] == "warm" and probe["report"]["user"] == box.uid
            assert (box.work / "mine").is_file()  # its own directory is writable
        assert seen[0]["uid"] != seen[1]["uid"] and not accepted
    finally:
        for box, process in started:
            process.communicate("\n", timeout=30)
            box.close()


@needs_warm
def test_a_fork_bomb_stays_in_its_kernel_and_a_kill_ends_it_all(parent):
    bomb = textwrap.dedent("""
        import os, sys, time
        forks = 0
        try:
            while True:
                if os.fork() == 0:
                    time.sleep(600)
                    os._exit(0)
                forks += 1
        except OSError:
            pass
        print(forks, flush=True)
        time.sleep(600)
    """)
    box, process = start(parent, bomb, DEFAULT.replace(processes=40))
    other = None
    try:
        assert 0 < int(process.stdout.readline()) < 40
        assert len(processes_of(box.uid)) >= 20
        other, second = start(parent, "print('still', 6 * 7)")  # a sibling starts beside it
        assert second.communicate(timeout=60)[0].strip() == "still 42" and second.returncode == 0
        os.killpg(process.pid, signal.SIGKILL)  # as jupyter_client kills a kernel: its proxy's group
        process.wait(30)
        deadline = time.monotonic() + 20
        while processes_of(box.uid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert processes_of(box.uid) == []  # the parent killed the kernel's group; its PID namespace went with it
        assert parent.alive()
    finally:
        process.kill()
        box.close()
        if other is not None:
            other.close()


@needs_warm
def test_an_interrupt_reaches_the_kernel_and_the_exit_code_comes_back(parent):
    box, process = start(parent, "import sys, time\ntry:\n    print('up', flush=True)\n    time.sleep(60)\n"
                                 "except KeyboardInterrupt:\n    sys.exit(5)")
    try:
        assert process.stdout.readline().strip() == "up"
        process.send_signal(signal.SIGINT)  # the proxy forwards it to the kernel's group
        assert process.wait(30) == 5
    finally:
        process.kill()
        box.close()


def test_the_seccomp_filter_is_one_program_per_known_machine():
    program = warm.seccomp_filter("x86_64")
    assert len(program) == 12 * 8 and program != warm.seccomp_filter("aarch64")
    assert warm.seccomp_filter("mips") is None


def test_where_warm_kernels_cannot_run_they_start_cold_and_say_why(monkeypatch, caplog):
    monkeypatch.setenv("MHA_WARM", "0")
    monkeypatch.setattr(warmstart, "_told", set())
    with caplog.at_level(logging.WARNING, logger=warmstart.__name__):
        assert warmstart.parent(DEFAULT) is None
        assert warmstart.parent(DEFAULT.replace(namespaces=False)) is None
    assert "warm kernels unavailable (MHA_WARM=0): each kernel starts cold" in caplog.text
    assert "namespaces off" not in caplog.text  # the first reason found: MHA_WARM=0


@needs_warm
def test_a_graded_notebook_runs_in_a_warm_kernel(tmp_path, kernels):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import json, os\nreport = json.loads(os.environ['MHA_SANDBOX'])\n"
        "status = dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines() if ':\\t' in l)\n"
        "print(report['start'], os.getuid() == report['user'], os.getpid(), status['CapEff'].strip(), "
        "status['NoNewPrivs'].strip(), sorted(os.listdir('/proc/2/task')) != [])"),
        nbformat.v4.new_code_cell("import numpy as np\nprint(np.arange(4).sum(), json.loads(os.environ['MHA_VARIANTS_HANDED'])['assignment'])")]
    executor = autograde.SandboxExecute(timeout=30)
    with current.handing({"assignment": "level1_recognition", "numbers": {}}):  # the student's numbers reach the kernel
        nb, _ = executor.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    text = ["".join(o.get("text", "") for o in c.outputs) for c in nb.cells]
    assert text[0].split() == ["warm", "True", "2", "0000000000000000", "1", "True"], text
    assert text[1].split() == ["6", "level1_recognition"], text


def test_one_parent_serves_every_course_whose_directories_lie_outside_what_it_shows(tmp_path):
    """A job's private course is hidden by lying outside the sandbox's file system: it starts no parent of
    its own (one did per job, 1.5 s of CPU each); a directory inside one shown must be covered: it does."""
    inside = os.path.join(sys.prefix, "a-course")
    assert warmstart._shaping((str(tmp_path / "course"), "/home/teacher/course")) == ()
    assert warmstart._shaping((str(tmp_path / "course"), inside)) == (inside,)


def test_what_the_sandbox_shows_under_tmp_is_kept_under_the_kernels_fresh_tmp(tmp_path):
    # A checkout under /tmp (a CI's clone): its environment and packages are bound inside the sandbox's /tmp,
    # and each kernel's fresh /tmp must show them again, outermost mounts only, the warm directory not.
    info = tmp_path / "mountinfo"
    rows = ["/", "/tmp", "/tmp/ci", "/tmp/ci/.venv", "/tmp/ci/mha_core", "/tmp/warm", "/tmp/warm/job-1",
            "/tmp/a\\040b", "/tmpfoo", "/var/tmp/x", "/proc"]
    info.write_text("".join(f"{i} 1 0:{i} / {point} ro - tmpfs tmpfs ro\n" for i, point in enumerate(rows)))
    assert warm.mounted_under("/tmp", "/tmp/warm", str(info)) == ["/tmp/a b", "/tmp/ci"]
    assert warm.mounted_under("/var/tmp", "/tmp/warm", str(info)) == ["/var/tmp/x"]
    assert warm.mounted_under("/dev/shm", "/tmp/warm", str(info)) == []
