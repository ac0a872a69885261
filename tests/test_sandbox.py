"""The sandbox a submission runs in (autograders/grading/sandbox.py, the launcher; sandbox_folder.py, the grader's side).

What the operating system allows decides part of the isolation: new network and
mount namespaces need CAP_SYS_ADMIN (root, or unprivileged user namespaces), and
becoming a throwaway user needs root. Each test probes that independently of the
sandbox (``unshare -n true``, ``os.geteuid()``) and then asserts what must hold:
where the OS allows it, the isolation is enforced; where it does not, the sandbox
says so in its report (``$MHA_SANDBOX``) and the gap is the documented one.
"""

import errno
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from pathlib import Path

import nbformat
import pytest

from autograders.grading import autograde, sandbox, sandbox_folder
from autograders.student.settings import DEFAULT, Settings
from tests.corpus import world_writable

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
    box = sandbox_folder.Sandbox(Settings(memory=512 * MiB, file_size=1 * MiB, hide=[course]))
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
            assert sandbox_folder.UID_RANGE[0] <= report["user"] < sandbox_folder.UID_RANGE[1] and seen["uid"] == str(report["user"])
            assert seen["write-repo"] in ("PermissionError", "OSError")  # EACCES, or EROFS in its own root
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


def test_a_bad_cell_costs_only_itself(tmp_path, kernels):
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
    # 6 s: enough for the memory bomb to reach 1 GiB with both cores busy (3 s was not, at load 4).
    executor = autograde.SandboxExecute(timeout=6, memory_limit=1024**3, output_limit=50_000)
    started = time.perf_counter()
    nb, _ = executor.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
    seconds = time.perf_counter() - started
    text = [_text(c) for c in nb.cells]
    assert "timeout" in text[1] and "CellTimeoutError" in text[1]
    assert "crash" in text[3] and "KernelCrashed" in text[3]
    assert "MemoryError" in text[4] and "memory limit of 1 GiB" in text[4]
    # The course's limit reached the kernel, which stopped the flood there (not a timeout).
    assert "[output limit:" in text[5] and "OutputLimitExceeded" in text[5] and "timeout" not in text[5]
    assert len(text[5]) < 50_000 + 3000 and text[5].count("[output limit:") <= 2  # the note, the error
    assert "timeout" in text[6]
    assert "end 1 2 100000000" in text[7] and "clean stderr" in text[7]  # state replayed, memory free again
    assert seconds < 90


def test_a_deep_temporary_folder_still_starts_kernels(tmp_path, kernels, monkeypatch):
    """With ``TMPDIR`` deep enough that a kernel's sockets there would pass a Unix socket's 107 bytes (a
    pytest-xdist worker's folder did: every submission failed with "File name too long"), the sandbox's
    folder goes to /tmp and the notebook runs; nothing of it is left there."""
    deep = tmp_path / ("d" * (sandbox_folder.SOCKET_PATH_MAX - len(str(tmp_path)) - 30))  # a kernel's sockets there: past the limit
    deep.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(deep))
    assert len(str(deep / sandbox_folder.LONGEST_SOCKET)) > sandbox_folder.SOCKET_PATH_MAX
    roots, made = [], sandbox_folder.Sandbox.__init__

    def remembered(self, *args, **kwargs):
        made(self, *args, **kwargs)
        roots.append(self.root)

    monkeypatch.setattr(sandbox_folder.Sandbox, "__init__", remembered)
    nb, _ = autograde.SandboxExecute(timeout=30).preprocess(_notebook("print(6 * 7)"), {"metadata": {"path": str(tmp_path)}})
    assert "42" in _text(nb.cells[0])
    assert roots and all(root.parent == Path("/tmp") and not root.exists() for root in roots), roots


def test_course_config_runs_autograde_in_the_sandbox(tmp_path, kernels):
    from traitlets.config.loader import PyFileConfigLoader

    from autograders.editions import editions

    editions.write_config(tmp_path)
    config = PyFileConfigLoader("nbgrader_config.py", path=str(tmp_path)).load_config()
    steps = [step.__name__ for step in config.Autograde.autograde_preprocessors]
    assert steps[0] == "SandboxExecute" and "Execute" not in steps
    sanitize = [step.__name__ for step in config.Autograde.sanitize_preprocessors]
    assert "RestoreMissingCells" in sanitize and "OverwriteCells" not in sanitize
    # edited metadata restored before any of nbgrader's steps reads it
    assert sanitize.index("RestoreCellMetadata") < sanitize.index("DeduplicateIds") < sanitize.index("CheckCellMetadataOnce")
    assert "CheckCellMetadata" not in sanitize + steps and "CheckCellMetadataOnce" in steps  # its schema checked once
    assert str(tmp_path.resolve()) in config.SandboxExecute.hide
    assert config.Autograde.pre_convert_hook is autograde.prepare_submission


def test_kernels_start_through_the_registered_provisioner():
    """jupyter_client's public route: the entry point is installed, and the kernel spec the
    executor's kernel manager gets names it and carries the executor's settings."""
    from jupyter_client.provisioning import KernelProvisionerFactory

    from autograders.grading import provisioner

    entries = KernelProvisionerFactory.instance().get_provisioner_entries()
    assert entries.get(provisioner.PROVISIONER) == "autograders.grading.provisioner:SandboxProvisioner", \
        "reinstall the project (pip install -e .): its entry points are read from the installed metadata"
    executor = autograde.SandboxExecute(output_limit=1234, memory_limit=3 * MiB, timeout=7)
    executor.nb = nbformat.v4.new_notebook()
    km = executor.create_kernel_manager()
    spec = km.kernel_spec
    stanza = spec.metadata["kernel_provisioner"]
    assert stanza["provisioner_name"] == provisioner.PROVISIONER
    assert Settings.from_dict(stanza["config"]["settings"]) == executor.settings
    assert executor.settings.memory == 3 * MiB and executor.settings.cell_timeout == 7
    assert "--OutputLimit.characters=1234" in spec.argv


def test_prepare_submission_renamed_and_malformed(tmp_path):
    source = tmp_path / "source" / "level1_recognition"
    source.mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / "level1_recognition.ipynb", source)
    submitted = tmp_path / "submitted" / "alice" / "level1_recognition"
    submitted.mkdir(parents=True)
    renamed = submitted / "level1_recognition (1).ipynb"
    shutil.copy(ROOT / "notebooks" / "level1_recognition.ipynb", renamed)
    notebooks = [str(renamed)]
    autograde.prepare_submission(assignment="level1_recognition", student="alice", notebooks=notebooks)
    assert notebooks == [str(submitted / "level1_recognition.ipynb")] and renamed.exists()
    first = nbformat.read(notebooks[0], as_version=4).cells[0]
    assert "was submitted as `level1_recognition (1).ipynb`" in first.source

    broken = submitted / "level1_recognition.ipynb"
    broken.write_bytes(b'{"cells": [')
    notebooks = [str(broken)]
    autograde.prepare_submission(assignment="level1_recognition", student="alice", notebooks=notebooks)
    assert (submitted / "level1_recognition.ipynb.invalid").read_bytes() == b'{"cells": ['
    nb = nbformat.read(str(broken), as_version=4)
    assert "is not a valid notebook" in nb.cells[0].source and len(nb.cells) == 1


# --- the non-root grader (an instructor on a laptop): a user namespace -------
#
# The launcher has a second path: started by a user that is not root, it creates a
# user namespace (with mount and network namespaces) mapping only its own uid, and
# hides and privatises directories inside it. These tests start it as such a user:
# as root, a small helper (GRADER, below; independent of the sandbox's code) drops
# to an unused uid and execs the launcher, with a work directory that user owns.
#
# That user must be able to run the project's interpreter. Here (and in CI) Python
# lives under /root/.pyenv and /root is 0700: another user cannot even reach it (and
# ``setpriv --reuid`` only seems to work because it execs while still holding
# CAP_DAC_OVERRIDE; the dynamic loader then silently falls back to the system's
# libpython and standard library). On the instructor's laptop the interpreter is the
# instructor's own, so the helper recreates that, and only that: in a private mount
# namespace of its own it replaces each directory others cannot search on the way to
# the interpreter, the environment and the repository (here /root; in CI perhaps a
# 0700 directory from mktemp holding the clone) by a searchable tmpfs holding only
# the entry on that way, bound back (all of its entries for the repository itself).
# Nothing outside the helper's namespace changes; the launcher then hides /root again.

GRADER = r'''
import ctypes, json, os, socket, sys

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
MS_RDONLY, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 32, 4096, 16384, 1 << 18
libc = ctypes.CDLL(None, use_errno=True)
cfg, command = json.loads(sys.argv[1]), sys.argv[2:]


def fail(what):
    sys.exit(f"non-root grader setup: {what}")


def call(result, what):
    if result != 0:
        fail(f"{what}: {os.strerror(ctypes.get_errno())}")


def mount(source, target, fstype, flags, data=None):
    enc = lambda s: s.encode() if s else None
    call(libc.mount(enc(source), target.encode(), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def blocked(paths):
    """{the first directory others cannot search on the way to (or at) a path: the entries needed in it}"""
    found = {}
    for path in paths:
        parts = path.strip("/").split("/")
        for i in range(len(parts) + 1):
            directory = "/" + "/".join(parts[:i])
            if os.path.isdir(directory) and not os.stat(directory).st_mode & 0o001:
                found.setdefault(directory, set()).add(parts[i] if i < len(parts) else "*")  # "*": all of it
                break
    return found


def expose(paths, stage):
    for n in range(16):
        found = blocked(paths)
        if not found:
            return
        directory = min(found, key=len)
        copy = os.path.join(stage, str(n))
        os.mkdir(copy)
        mount(directory, copy, None, MS_BIND | MS_REC)  # as it was, seen by root only
        mount("tmpfs", directory, "tmpfs", 0, "mode=0755,size=1m")
        for name in os.listdir(copy) if "*" in found[directory] else found[directory]:
            source, target = os.path.join(copy, name), os.path.join(directory, name)
            if os.path.islink(source):
                os.symlink(os.readlink(source), target)
                continue
            os.mkdir(target) if os.path.isdir(source) else open(target, "w").close()
            mount(source, target, None, MS_BIND | MS_REC)
    fail(f"cannot make {paths} reachable")


def maps(uid, gid):
    for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)


uid = cfg["uid"]
call(libc.unshare(ctypes.c_int(CLONE_NEWNS)), "unshare(CLONE_NEWNS)")
mount(None, "/", None, MS_REC | MS_PRIVATE)
expose(cfg["reach"], cfg["stage"])
course = cfg["course"]
mount("tmpfs", os.path.dirname(course), "tmpfs", 0, "mode=0755,size=1m")  # a course nbgrader left world-readable
os.makedirs(os.path.join(course, "source"))
with open(os.path.join(course, "source", "hidden.txt"), "w") as f:
    f.write("the hidden tests")
if cfg.get("readonly_proc"):  # writing the launcher's uid map will be refused, after its unshare succeeded
    mount(None, "/proc", None, MS_BIND | MS_REMOUNT | MS_RDONLY)
os.setgroups([])
os.setgid(uid)
os.setuid(uid)
call(libc.prctl(4, 1, 0, 0, 0), "prctl(PR_SET_DUMPABLE)")  # setuid made /proc/self root's; an exec would undo that
if os.getuid() != uid or "CapEff:\t0000000000000000" not in open("/proc/self/status").read():
    fail("still privileged after setuid")
for path in cfg["readable"]:
    if not os.access(path, os.R_OK):
        fail(f"{path} is not readable by uid {uid} (files made with umask 077?)")

if cfg.get("probe"):  # can this user create the namespaces the launcher asks for? (no exec: one thread)
    print(json.dumps({"userns": libc.unshare(ctypes.c_int(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET)) == 0}))
    sys.exit(0)
limited = False
if cfg.get("no_userns") and libc.unshare(ctypes.c_int(CLONE_NEWUSER)) == 0:
    # In a user namespace of its own, no user namespace may be created any more:
    # what a host with user.max_user_namespaces = 0 does, for this process tree only.
    maps(uid, uid)
    with open("/proc/sys/user/max_user_namespaces", "w") as f:
        f.write("0")
    limited = True
control = {"read": {p: os.access(p, os.R_OK) for p in cfg["control_files"]}, "limited": limited}
try:
    socket.create_connection(("127.0.0.1", cfg["port"]), timeout=3).close()
    control["connect"] = "ok"
except OSError as error:
    control["connect"] = str(error)
print(json.dumps(control), flush=True)
os.execve(command[0], command, {**cfg["env"], "HOME": cfg["home"]})
'''

# What the student's code reports from inside (one JSON line).
OBSERVE = r'''
import ctypes, errno, fcntl, json, os, resource, socket, struct, sys

cfg = json.loads(sys.argv[1])
libc = ctypes.CDLL(None, use_errno=True)


def attempt(action):
    try:
        result = action()
        return "ok" if result is None else result
    except OSError as error:
        return errno.errorcode.get(error.errno, str(error))
    except BaseException as error:
        return type(error).__name__


def lo_up():
    with socket.socket() as s:
        flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH14x", b"lo", 0))[:18])[1]  # SIOCGIFFLAGS
    return bool(flags & 1)  # IFF_UP


def umount(path):
    if libc.umount2(path.encode(), 2) != 0:  # MNT_DETACH
        raise OSError(ctypes.get_errno(), path)


def remount_writable(path):
    if libc.mount(None, path.encode(), None, ctypes.c_ulong(32 | 4096), None) != 0:  # MS_REMOUNT | MS_BIND
        raise OSError(ctypes.get_errno(), path)


def unhide_from_own_namespace(path):
    """What a student could try: become root in a user namespace of its own, then umount."""
    uid, gid = os.getuid(), os.getgid()
    if libc.unshare(0x10000000 | 0x00020000) != 0:  # CLONE_NEWUSER | CLONE_NEWNS
        raise OSError(ctypes.get_errno(), "unshare")
    for name, text in (("setgroups", "deny"), ("uid_map", f"0 {uid} 1"), ("gid_map", f"0 {gid} 1")):
        with open(f"/proc/self/{name}", "w") as f:
            f.write(text)
    umount(path)


seen = {"report": json.loads(os.environ["MHA_SANDBOX"]), "uid": os.getuid(), "cwd": os.getcwd(),
        "env": {k: os.environ.get(k) for k in ("MHA_TEST_SECRET", "HOME", "TMPDIR")},
        "capeff": next(l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")),
        "limits": {n: resource.getrlimit(getattr(resource, n))[0]
                   for n in ("RLIMIT_AS", "RLIMIT_FSIZE", "RLIMIT_NOFILE", "RLIMIT_CORE")}}
seen["interfaces"] = [name for _, name in socket.if_nameindex()]
seen["lo_up"] = attempt(lo_up)
seen["connect_host"] = attempt(lambda: socket.create_connection(("127.0.0.1", cfg["port"]), timeout=3).close())
seen["connect_outside"] = attempt(lambda: socket.create_connection(("1.1.1.1", 80), timeout=3).close())
seen["tmp"] = attempt(lambda: sorted(os.listdir("/tmp")))
seen["root"] = attempt(lambda: sorted(os.listdir("/root")))
seen["host_tmp_file"] = os.path.exists(cfg["visible"])
seen["write_tmp"] = attempt(lambda: open(cfg["written"], "w").close())
seen["listing"] = {p: attempt(lambda: sorted(os.listdir(p))) for p in cfg["hidden"]}
seen["read"] = {p: attempt(lambda: open(p).close()) for p in cfg["secret_files"]}
seen["memory"] = attempt(lambda: bytearray(600 * 2**20) and None)
seen["big_file"] = attempt(lambda: open("big.bin", "wb").write(b"x" * (2 * 2**20)) and None)
seen["write_package"] = attempt(lambda: open(os.path.join(cfg["mounted"], "pwned.py"), "w").close())
seen["remount"] = attempt(lambda: remount_writable(cfg["mounted"]))
seen["umount"] = attempt(lambda: umount(cfg["mounted"]))
seen["umount_own_ns"] = attempt(lambda: unhide_from_own_namespace(cfg["mounted"]))
seen["mounted_after"] = attempt(lambda: sorted(os.listdir(cfg["mounted"])))
seen["world_writable"] = {d: attempt(lambda: open(os.path.join(d, cfg["ww_name"]), "w").close())
                          for d in cfg["world_writable"]}
print(json.dumps(seen))
'''


def _mount_point_for_course(reach):
    """An existing directory the helper may cover with a tmpfs (in its own namespace) for the course."""
    for candidate in ("/media", "/mnt", "/srv", "/opt"):
        if os.path.isdir(candidate) and not os.path.islink(candidate) and not any(
            sandbox._under(p, candidate) for p in reach
        ):
            return candidate
    pytest.fail("no directory among /media, /mnt, /srv, /opt to hold a test course")


def _kept_entries(parent, kept):
    """The entries of ``parent`` the launcher recreates to bind back a ``kept`` path under it."""
    return {Path(p).relative_to(parent).parts[0] for p in kept if sandbox._under(p, parent) and p != parent}


@pytest.fixture
def grader(listener):
    """Run ``command`` as a non-root grader (see GRADER); return (control, observations)."""
    if not ROOT_USER:
        message = ("the non-root grader tests drop from root to an unused uid; run as root (as CI does). As "
                   "non-root, test_limits_isolation_and_cleanup itself takes the non-root path.")
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    port, accepted = listener
    uid = sandbox_folder.pick_uid()
    home = Path(tempfile.mkdtemp(prefix="mha-nonroot-"))  # the grader's: its sandbox root
    stage = Path(tempfile.mkdtemp(prefix="mha-nonroot-stage-"))  # root's: mount points in the helper only
    work = home / "work"
    work.mkdir()
    for path in (home, work):
        os.chown(path, uid, uid)
    visible = Path(f"/tmp/mha-nonroot-visible-{os.getpid()}.txt")  # in the real /tmp, readable by anyone
    visible.write_text("on the host")
    visible.chmod(0o644)
    written = Path(f"/tmp/mha-nonroot-written-{os.getpid()}.txt")
    python = os.path.realpath(sys.executable)
    ww_name = f"mha-nonroot-ww-{os.getpid()}.txt"
    reach = sorted({os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), str(ROOT), python})
    course = str(Path(_mount_point_for_course(reach)) / "course")
    env = {k: v for k, v in os.environ.items() if k not in ("HOME",)}
    env.update(PYTHONPATH=str(ROOT), MHA_TEST_SECRET="a token")

    def run(launcher_argv=None, observe=True, unisolated=False, refused=False, **options):
        launcher = launcher_argv or [sys.executable, "-m", "autograders.grading.sandbox"]
        inner = {"port": port, "visible": str(visible), "written": str(written), "course": course,
                 "mounted": str(ROOT / "autograders" / "student"), "world_writable": list(world_writable()), "ww_name": ww_name,
                 "hidden": [course, str(ROOT / "notebooks"), str(ROOT / "tests")],
                 "secret_files": [f"{course}/source/hidden.txt", str(ROOT / "notebooks" / "level1_recognition.ipynb")]}
        settings = Settings(memory=512 * MiB, file_size=1 * MiB, hide=(course,), unisolated=unisolated)
        launch = sandbox.Launch(settings, workdir=work, keep=home)
        command = [*launcher, launch.to_json(), "--", sys.executable, "-c", OBSERVE, json.dumps(inner)]
        cfg = {"uid": uid, "reach": reach, "stage": tempfile.mkdtemp(dir=stage), "course": course, "home": str(home),
               "env": env, "port": port, "control_files": [str(visible), f"{course}/source/hidden.txt"],
               "readable": [python, str(ROOT / "autograders" / "grading" / "sandbox.py")], "probe": not observe, **options}
        result = subprocess.run([sys.executable, "-I", "-c", GRADER, json.dumps(cfg), *command], capture_output=True,
                                text=True, timeout=60)
        if refused:  # the launcher said why in one line and ran nothing
            assert result.returncode != 0 and '"report"' not in result.stdout, result.stdout[-3000:]
            return result.stderr.strip().splitlines()[-1]
        assert result.returncode == 0, result.stderr[-3000:]
        lines = result.stdout.splitlines()
        if not observe:
            return json.loads(lines[0])
        assert len(lines) == 2, result.stdout[-3000:] + result.stderr[-3000:]
        return json.loads(lines[0]), json.loads(lines[1])

    run.uid, run.home, run.work, run.course, run.visible, run.written, run.accepted = (
        uid, home, work, course, visible, written, accepted)
    run.world_writable = [os.path.join(d, ww_name) for d in world_writable()]
    run.kept = [str(home), os.path.realpath(sys.base_prefix), os.path.realpath(sys.prefix), str(ROOT / "autograders"),
                str(ROOT / "mha_core")]
    try:
        yield run
    finally:
        sandbox_folder.kill_user(uid)
        visible.unlink(missing_ok=True)
        written.unlink(missing_ok=True)
        for path in run.world_writable:
            Path(path).unlink(missing_ok=True)
        shutil.rmtree(home, ignore_errors=True)
        shutil.rmtree(stage, ignore_errors=True)


_PROBED = {}


def _userns_for(grader):
    """Whether the OS lets a non-root user create the launcher's namespaces (probed once, without the launcher)."""
    if "userns" not in _PROBED:
        _PROBED["userns"] = grader(observe=False)["userns"]
    return _PROBED["userns"]


def test_non_root_grader_isolated_in_a_user_namespace(grader):
    userns = _userns_for(grader)
    if not userns:  # the OS refuses unprivileged user namespaces: the launcher refuses, saying so
        assert grader(refused=True).startswith("sandbox: refused: bubblewrap cannot isolate")
        return
    control, seen = grader()
    report, uid = seen["report"], grader.uid
    # Outside the sandbox this user reads the course and the host's /tmp, and reaches the host's loopback.
    assert control["read"] == {str(grader.visible): True, f"{grader.course}/source/hidden.txt": True}
    assert control["connect"] == "ok"
    # Always: limits, the environment, its own uid (no throwaway user without root), no capabilities.
    assert report["user"] == f"unchanged ({uid})" and seen["uid"] == uid and seen["capeff"] == "0" * 16
    assert seen["limits"] == {"RLIMIT_AS": 512 * MiB, "RLIMIT_FSIZE": 1 * MiB,
                              "RLIMIT_NOFILE": DEFAULT.open_files, "RLIMIT_CORE": 0}
    assert seen["memory"] == "MemoryError" and seen["big_file"] == "EFBIG"
    assert seen["env"]["MHA_TEST_SECRET"] is None and seen["env"]["HOME"] == str(grader.work) == seen["cwd"]
    assert report["filesystem"] == "isolated" and report["network"] == "isolated"
    # Network: only a loopback of its own (bubblewrap brings it up: nothing listens there); the host's
    # loopback and any outside address unreachable.
    assert seen["interfaces"] == ["lo"]
    assert seen["connect_host"] == ("ECONNREFUSED" if seen["lo_up"] is True else "ENETUNREACH")
    assert seen["connect_outside"] == "ENETUNREACH"
    deadline = time.monotonic() + 5
    while not grader.accepted and time.monotonic() < deadline:  # the listener's thread counts the control's
        time.sleep(0.05)
    assert len(grader.accepted) == 1  # only the control's connection
    # /tmp private: the host's files not there, what it writes not on the host; only the kept paths' entries.
    assert seen["env"]["TMPDIR"] == "/tmp" and seen["host_tmp_file"] is False
    assert seen["write_tmp"] == "ok" and not grader.written.exists()
    assert set(seen["tmp"]) <= _kept_entries("/tmp", grader.kept)
    assert set(seen["root"]) <= _kept_entries("/root", grader.kept)  # nothing of /root but the way to Python
    # Hidden: the course (--hide), the repository's notebooks and tests (gone with /tmp when the clone is there).
    assert grader.course in report["hidden"] and seen["listing"][grader.course] == "ENOENT"  # not in its root at all
    for path, listing in seen["listing"].items():
        assert listing in ([], "ENOENT"), (path, listing)
    assert set(seen["read"].values()) == {"ENOENT"}, seen["read"]
    # What it is shown it cannot change: the package read-only, and no capability to remount or unmount it,
    # here or in a user namespace of its own (mounts locked).
    assert seen["write_package"] == "EROFS" and not (ROOT / "autograders" / "student" / "pwned.py").exists()
    assert seen["remount"] == "EPERM" and seen["umount"] == "EPERM"
    assert seen["umount_own_ns"] != "ok" and "serve.py" in seen["mounted_after"]  # still the students' package
    # Every world-writable directory of the machine: written inside (private) or refused; nothing outside.
    assert set(seen["world_writable"]) == set(world_writable())
    assert [p for p in grader.world_writable if os.path.exists(p)] == []


def test_non_root_launcher_started_from_a_threaded_process(grader):
    """``python -m autograders.grading.sandbox`` imports numpy, whose BLAS threads made unshare(CLONE_NEWUSER)
    fail (EINVAL): the launcher then starts again single-threaded. Forced here with a thread of its own,
    as numpy starts none on a one-CPU machine."""
    userns = _userns_for(grader)
    shim = ("import threading; threading.Thread(target=threading.Event().wait, daemon=True).start(); "
            "import runpy; runpy.run_module('autograders.grading.sandbox', run_name='__main__', alter_sys=True)")
    if not userns:
        assert grader([sys.executable, "-c", shim], refused=True).startswith("sandbox: refused")
        return
    _, seen = grader([sys.executable, "-c", shim])
    report = seen["report"]
    assert report["network"] == report["filesystem"] == "isolated" and seen["interfaces"] == ["lo"]


def test_non_root_without_user_namespaces_refuses_unless_unisolated(grader):
    """Where user namespaces cannot be created (here: a user namespace whose user.max_user_namespaces is 0,
    as a host with the sysctl at 0), the launcher refuses in one line saying what to do; asked for
    unisolated grading, the kernel runs with the limits and a stripped environment, as the grader (not root),
    and its report says "unisolated (...)" with bubblewrap's own words."""
    line = grader(no_userns=True, refused=True)
    assert line.startswith("sandbox: refused: bubblewrap cannot isolate students' code here (") and "--unisolated" in line
    control, seen = grader(no_userns=True, unisolated=True)
    report = seen["report"]
    assert report["filesystem"].startswith("unisolated (") and report["network"].startswith("unisolated (")
    assert "hidden" not in report and report["user"] == f"unchanged ({grader.uid})" and seen["uid"] == grader.uid != 0
    if control["limited"]:
        assert "ENOSPC" in report["network"] or os.strerror(errno.ENOSPC) in report["network"]  # what bwrap said
    assert seen["limits"]["RLIMIT_AS"] == 512 * MiB and seen["memory"] == "MemoryError"
    assert seen["env"]["MHA_TEST_SECRET"] is None and seen["env"]["TMPDIR"] == str(grader.work)


def test_non_root_uid_map_refused_after_unshare(grader):
    """Ubuntu 24.04 (AppArmor) lets unshare(CLONE_NEWUSER) succeed, then refuses writing
    the uid map: bubblewrap then makes no sandbox at all, and the launcher refuses, saying so.
    Simulated with a read-only /proc (the write fails with EROFS instead of EPERM, at the same place)."""
    line = grader(readonly_proc=True, refused=True)
    assert line.startswith("sandbox: refused: bubblewrap cannot isolate") and "install it" in line
    _, seen = grader(readonly_proc=True, unisolated=True)
    assert seen["report"]["filesystem"].startswith("unisolated (") and seen["report"]["user"] == f"unchanged ({grader.uid})"
    assert seen["env"]["MHA_TEST_SECRET"] is None and seen["limits"]["RLIMIT_AS"] == 512 * MiB


# --- edited nbgrader metadata (restored from the assignment before nbgrader's checks) -----


def _assignment(path):
    """(the notebook, its graded cells as the gradebook describes them) from a source notebook."""
    nb = nbformat.read(str(path), as_version=4)
    source = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("grade") or meta.get("solution") or meta.get("locked") or meta.get("task"):
            source.append((meta["grade_id"], cell.cell_type, dict(meta), cell.source))
    return nb, source


def _by_id(nb, grade_id):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == grade_id)


def test_restore_metadata_flipped_renamed_emptied_and_foreign():
    nb, source = _assignment(ROOT / "notebooks" / "level1_recognition.ipynb")
    expected = {gid: meta for gid, _, meta, _ in source}
    assert autograde.restore_metadata(nb.cells, source) == []  # an untouched notebook: nothing to say
    _by_id(nb, "q1_1_d_k_test").metadata.nbgrader.update(solution=True, locked=False)  # "solution + grade"
    why = _by_id(nb, "q1_2_why")
    why.metadata.nbgrader["grade_id"] = "my_answer"
    head_dim = _by_id(nb, "q1_1_head_dim")
    del head_dim.metadata.nbgrader["grade_id"]
    foreign = nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade": True, "grade_id": "mine", "points": 5,
                                                                        "solution": False, "locked": True}})
    nb.cells.insert(1, foreign)  # before the setup cell: no assignment cell is missing there
    plain = nbformat.v4.new_code_cell("y = 2", metadata={"nbgrader": {"grade": False, "solution": False, "locked": False}})
    nb.cells.append(plain)
    changes = autograde.restore_metadata(nb.cells, source)
    assert len(changes) == 4 and "`q1_2_why`: found by its place (it was marked `my_answer`)" in changes
    for cell in nb.cells:
        gid = cell.metadata.get("nbgrader", {}).get("grade_id")
        if gid in expected:
            assert cell.metadata.nbgrader == expected[gid], gid
    assert why.metadata.nbgrader == expected["q1_2_why"] and head_dim.metadata.nbgrader == expected["q1_1_head_dim"]
    assert "nbgrader" not in foreign.metadata  # not the assignment's: a plain cell
    assert plain.metadata.nbgrader == {"grade": False, "solution": False, "locked": False}  # says nothing: left alone


def test_restore_metadata_two_renamed_in_one_gap_by_order_and_kind():
    nb, source = _assignment(ROOT / "notebooks" / "level1_recognition.ipynb")
    expected = {gid: meta for gid, _, meta, _ in source}
    shape, shape_test = _by_id(nb, "q1_2_output_shape"), _by_id(nb, "q1_2_output_shape_test")
    shape.metadata.nbgrader["grade_id"] = "a"
    shape_test.metadata.nbgrader["grade_id"] = "b"
    shape_test.metadata.nbgrader["solution"] = True  # flipped too: the place and the content decide
    autograde.restore_metadata(nb.cells, source)
    assert shape.metadata.nbgrader == expected["q1_2_output_shape"]
    assert shape_test.metadata.nbgrader == expected["q1_2_output_shape_test"]


# --- the kernel's file system: an allow-list ---------------------------------------


def _launcher(work, keep, uid, code, pythonpath, cwd=None, settings=DEFAULT):
    """Run ``code`` in the launcher (as root: the throwaway ``uid``) with ``pythonpath``; return its stdout."""
    launch = sandbox.Launch(settings, workdir=work, keep=keep, uid=uid)
    command = [sys.executable, "-m", "autograders.grading.sandbox", launch.to_json()]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(pythonpath)
    result = subprocess.run([*command, "--", sys.executable, "-c", textwrap.dedent(code)], env=env, cwd=cwd or work,
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


SURVEY = r"""
import glob, json, os, subprocess, sys
import autograders, mha_core
seen = {"report": json.loads(os.environ["MHA_SANDBOX"]), "packages": [autograders.__file__, mha_core.__file__]}
git = subprocess.run(["git", "-C", ROOT, "show", "HEAD:notebooks/level1_recognition.ipynb"], capture_output=True)
seen["git_show"] = [git.returncode, len(git.stdout)]
seen["git_objects"] = glob.glob(ROOT + "/.git/*") + ([ROOT + "/.git"] if os.path.lexists(ROOT + "/.git") else [])
installed = os.path.dirname(os.path.dirname(autograders.__file__))
seen["installed"] = sorted(os.listdir(installed))
seen["top"] = sorted(os.listdir("/"))
names = []  # every name it can see, /proc and /sys aside
for top in seen["top"]:
    if top in ("proc", "sys"):
        continue
    for folder, dirs, files in os.walk("/" + top):
        names += [os.path.join(folder, n) for n in dirs + files
                  if n == ".git" or n.startswith(("level1_recognition", "level2_application", "level5_mastery"))]
seen["names"] = names
print(json.dumps(seen))
"""


@pytest.mark.skipif(not (NAMESPACES and ROOT_USER), reason="needs a mount namespace and root (the non-root path: below)")
def test_kernel_sees_nothing_of_the_repository_nor_the_course(tmp_path, kernels):
    """git show, .git/objects, where the package is installed, a walk of everything visible:
    nothing of the repository but its two packages, nothing of the course."""
    box = sandbox_folder.Sandbox(Settings(hide=[tmp_path]))
    try:
        out = subprocess.run(box.command([sys.executable, "-c", f"ROOT = {str(ROOT)!r}\n" + SURVEY]),
                             env=box.env(), capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        seen = json.loads(out.stdout.splitlines()[-1])
    finally:
        box.close()
    assert seen["report"]["filesystem"] == "isolated"
    assert seen["git_show"][0] != 0 and seen["git_show"][1] == 0 and seen["git_objects"] == []
    assert set(seen["installed"]) <= {"autograders", "mha_core", ".venv"}  # the editable install's repository
    assert seen["names"] == []
    assert set(seen["top"]) <= {"bin", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "root", "sbin", "sys",
                                "tmp", "usr", "var", *Path(ROOT).parts[1:2], *Path(sys.prefix).parts[1:2]}


@pytest.mark.skipif(not (NAMESPACES and ROOT_USER), reason="needs a mount namespace and root")
def test_clone_under_tmp_shows_only_its_packages(kernels):
    """The project cloned under /tmp (its venv elsewhere): the clone's packages are shown, its
    notebooks, tests and .git are not, although /tmp is where the kernel's own directory is."""
    clone = Path(tempfile.mkdtemp(prefix="mha-clone-"))
    box = sandbox_folder.Sandbox()
    try:
        for name in sandbox.PACKAGES:
            shutil.copytree(ROOT / name, clone / name, ignore=shutil.ignore_patterns("__pycache__"))
        (clone / "notebooks").mkdir()
        shutil.copy(ROOT / "notebooks" / "level1_recognition.ipynb", clone / "notebooks")
        (clone / ".git").mkdir()
        (clone / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
        (clone / "pyproject.toml").write_text("[project]\nname = 'clone'\n")
        for path in [clone, *clone.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        code = f"ROOT = {str(clone)!r}\n" + SURVEY
        seen = json.loads(_launcher(box.work, box.root, box.uid, code, clone).splitlines()[-1])
    finally:
        box.close()
        shutil.rmtree(clone, ignore_errors=True)
    assert seen["report"]["filesystem"] == "isolated"
    assert all(p.startswith(str(clone)) for p in seen["packages"])  # the clone's code, not the repository's
    assert sorted(seen["installed"]) == ["autograders", "mha_core"]
    assert seen["git_objects"] == [] and seen["names"] == []


def _files_of(paths):
    return {p: p.read_text(errors="replace") for root in paths for p in Path(root).rglob("*") if p.is_file()
            and "__pycache__" not in p.parts}


def _lines(text):
    return [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_the_packages_shown_to_the_kernel_hold_no_solution_nor_hidden_test():
    """What the kernel is shown of the project (autograders/student, mha_core/) holds none of the
    notebooks' solutions or hidden tests: no three consecutive lines of one of them (the declarations and
    the checks stay with the grader: tests/test_student_side.py)."""
    import re

    shown = {p: "\n".join(_lines(t)) for p, t in _files_of([ROOT / n for n in sandbox.STUDENT_SIDE]).items()}
    blocks = 0
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in nbformat.read(str(path), as_version=4).cells:
            for begin, end in (("### BEGIN SOLUTION", "### END SOLUTION"), ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS")):
                for found in re.finditer(re.escape(begin) + "(.*?)" + re.escape(end), cell.source, re.S):
                    blocks += 1
                    lines = _lines(found.group(1))
                    windows = ["\n".join(lines[i:i + 3]) for i in range(max(1, len(lines) - 2))]
                    for window in windows:
                        if len(window) < 30:
                            continue
                        holders = [str(p) for p, text in shown.items() if window in text]
                        assert not holders, (path.name, window, holders)
    assert blocks >= 20  # the notebooks were read


# --- world-writable directories: private to the kernel or read-only -----------------


def test_world_writable_directories_are_private_to_the_kernel(kernels):
    """Every world-writable directory of this machine (found now, not a fixed list): the kernel
    writes a file in each; none appears outside."""
    from tests.corpus import world_writable

    directories = world_writable()
    assert "/tmp" in directories  # the search found them
    name = f"mha-sandbox-ww-{os.getpid()}.txt"
    box = sandbox_folder.Sandbox()
    try:
        report, out = run_inside(box, f"""
            import json, os
            print(os.environ["MHA_SANDBOX"])
            for d in {list(directories)!r}:
                try:
                    open(os.path.join(d, {name!r}), "w").write("x")
                    print(d, "wrote")
                except OSError as error:
                    print(d, type(error).__name__)
            """)
        written = [os.path.join(d, name) for d in directories if os.path.exists(os.path.join(d, name))]
    finally:
        box.close()
        for d in directories:
            Path(d, name).unlink(missing_ok=True)
    assert report["filesystem"] == "isolated" and written == []
    seen = dict(line.rsplit(" ", 1) for line in out.splitlines())
    assert all(seen[d] == "wrote" for d in sandbox.PRIVATE_DIRS if d in seen)  # its own, private ones


def test_grading_without_bubblewrap_refuses_unless_unisolated(tmp_path, monkeypatch, capsys):
    """No bubblewrap: ``grade`` refuses in one line saying what to install; ``--unisolated`` grades, after a
    warning that says what it means; the jobs' course configuration then asks the launcher for it."""
    from autograders import __main__ as cli
    from autograders.grading import grading
    from autograders.variants import VariantError

    asked = []

    def stop(*args, **kwargs):
        asked.append(kwargs.get("unisolated"))
        raise VariantError("stopped before grading")

    (tmp_path / "nbgrader_config.py").write_text("c = get_config()\n")
    monkeypatch.setattr(sandbox, "BWRAP", "bwrap-not-installed-here")
    monkeypatch.setattr(grading, "grade", stop)
    assert sandbox.why_not_isolated() == "bubblewrap is not installed: apt-get install bubblewrap"
    assert cli.main(["grade", "--course", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.strip() == ("grade: refused: bubblewrap cannot isolate students' code here (bubblewrap is not installed: "
                           "apt-get install bubblewrap); install it, or grade trusted work with --unisolated"), err
    assert asked == []  # nothing graded
    monkeypatch.setattr(sandbox, "why_not_unisolated", lambda: None)
    assert cli.main(["grade", "--course", str(tmp_path), "--unisolated"]) == 2
    err = capsys.readouterr().err
    assert "warning: --unisolated: students' code runs without bubblewrap" in err and "never root" in err
    assert err.index("warning") < err.index("stopped before grading") and asked == [True]


def test_unisolated_as_root_refused_where_a_throwaway_user_cannot_read_python(monkeypatch):
    """As root, unisolated grading never runs students' code as root: where the throwaway user could not
    read Python (a venv under a 0700 /root), it is refused before anything runs."""
    monkeypatch.setattr(sandbox.os, "geteuid", lambda: 0)
    monkeypatch.setattr(sandbox, "_reachable", lambda path: False)
    assert "cannot read" in sandbox.why_not_unisolated()
    monkeypatch.setattr(sandbox, "_bubblewrap", lambda flags: "bwrap-not-here")
    launch = sandbox.Launch(DEFAULT.replace(unisolated=True), workdir="/nonexistent", uid=None)
    with pytest.raises(sandbox.Refused, match="throwaway user"):
        sandbox.isolate(launch, ["true"])
    launch = sandbox.Launch(DEFAULT.replace(unisolated=True), workdir="/nonexistent", uid=3_000_123)
    with pytest.raises(sandbox.Refused, match="cannot read"):
        sandbox.isolate(launch, ["true"])
    launch = sandbox.Launch(DEFAULT, workdir="/nonexistent", uid=3_000_123)
    with pytest.raises(sandbox.Refused, match="--unisolated"):
        sandbox.isolate(launch, ["true"])


LIBRARY_SURVEY = r"""
import json, os, sys
import mha_core
from tests_names import ANSWERING
refused, answered = [], []
for name in ANSWERING:
    module, _, attribute = name.rpartition(".")
    try:
        found = getattr(__import__("mha_core." + module, fromlist=["_"]) if module else mha_core, attribute)
        found(8, 2) if attribute != "MultiHeadAttention" else found.from_seed(8, 2)
        answered.append(name)
    except Exception as error:
        (refused if type(error).__name__ == "NotAvailable" else answered).append(name)
readable = []
for top in sorted({os.path.realpath(p) for p in [ROOT, sys.prefix, sys.base_prefix]}):
    for folder, _, files in os.walk(top):
        for name in files:
            try:
                with open(os.path.join(folder, name), "rb") as f:
                    if b"def _masked_softmax" in f.read():
                        readable.append(os.path.join(folder, name))
            except OSError:
                pass
print(json.dumps({"refused": refused, "answered": answered, "readable": readable}))
"""


@pytest.mark.skipif(not NAMESPACES, reason="needs a mount namespace (the copy is bound where mha_core is)")
@pytest.mark.parametrize("copy", [True, False], ids=["grading copy", "control: the whole library"])
def test_the_graded_kernels_library_answers_no_graded_problem(tmp_path, kernels, copy):
    """In the sandbox with the grading copy, every function of mha_core that answers a graded problem raises
    NotAvailable, and no file the kernel can read (the repository's packages, the Python shown) holds the
    library's code; the control, with the library itself, computes them all and reads its source."""
    from autograders.grading.library_copy import grading_copy
    from tests.test_own_work import ANSWERING

    box = sandbox_folder.Sandbox(library=grading_copy() if copy else None)
    try:
        (box.work / "tests_names.py").write_text(f"ANSWERING = {ANSWERING!r}\n")
        out = subprocess.run(box.command([sys.executable, "-c", f"ROOT = {str(ROOT)!r}\n" + LIBRARY_SURVEY]),
                             env=box.env(), cwd=box.work, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
        seen = json.loads(out.stdout.splitlines()[-1])
    finally:
        box.close()
    if copy:
        assert seen["refused"] == ANSWERING and seen["readable"] == [], seen
    else:
        assert seen["refused"] == [] and seen["readable"], seen
