"""The grader's side of warm kernels (:mod:`autograders.grading.warm`): this process's warm sandbox, and the
proxy each kernel's command line runs.

:func:`parent` starts, once per grading process (again if it died), a :class:`Parent`: bubblewrap around
``python -m autograders.grading.warm serve``, entered with ``--userns`` of a user namespace prepared here
(:func:`_user_namespace`: uid and gid 0 and :data:`~autograders.grading.sandbox.UID_RANGE` mapped to
themselves, written from this process; util-linux's ``unshare --map-users`` would go through newuidmap and
/etc/subuid). It returns None where a warm parent cannot run, and says why in a log line (once per reason):
the kernels then start cold, each in a sandbox of its own (:mod:`autograders.grading.sandbox`), with the
same isolation. :meth:`Parent.command` turns the launcher's command line into the proxy's:

    python -I -S .../warmstart.py run SOCKET [--fd=N]... -- LAUNCHER COMMAND LINE

The proxy (:func:`run`, the standard library only) hands its standard streams and the descriptors named
to the parent (SCM_RIGHTS), forwards signals to the kernel's process group (through the parent: the kernel's
pid is a number in the sandbox's PID namespace) and exits as the kernel does;
jupyter_client and the hand-over (:mod:`autograders.grading.handover`) see an ordinary process.
"""

import json
import os
import signal
import socket
import sys
import threading

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
MESSAGE = 1 << 20  # bytes of one request, at most
CAPS = ("CAP_SYS_ADMIN", "CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP")  # the parent's: to isolate its children
MPLCONFIG = "/tmp/mha-warm-matplotlib"  # the parent's (matplotlib keeps the path): each kernel's own, in its /tmp


# --- the proxy (the grader's side of one kernel) -------------------------------------------


def run(path, fds, launcher):
    """Have the warm parent at ``path`` run ``launcher`` (the launcher's command line); exit as it does.
    Without a parent (it died), the launcher itself runs: cold, said on stderr."""
    fds = [0, 1, 2, *fds]
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        connection.connect(path)
        socket.send_fds(connection, [json.dumps({"argv": launcher[4:], "fds": fds, "env": dict(os.environ)}).encode()], fds)
        json.loads(connection.recv(MESSAGE))["pid"]
    except (OSError, ValueError, KeyError) as error:
        print(f"warm kernels: the parent did not answer ({error}); this kernel starts cold", file=sys.stderr, flush=True)
        os.execvp(launcher[0], launcher)
    for fd in fds[3:]:  # the kernel has them: when it closes one (or dies), the reader sees the end at once
        os.close(fd)

    def forward(signum, frame):  # the parent sends it on: ``pid`` is a number in the sandbox's PID namespace
        try:
            connection.send(json.dumps({"signal": signum}).encode())
        except OSError:
            pass

    for signum in FORWARDED:
        signal.signal(signum, forward)
    reply = connection.recv(MESSAGE)
    code = json.loads(reply)["exit"] if reply else 1
    if code < 0:  # died of a signal: so does the proxy
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


# --- the grader's side: this process's warm sandbox ------------------------------------------

_lock = threading.Lock()
_parents = {}  # the directories it hides (_shaping) -> Parent
_told = set()  # the reasons already logged
_failed = {}  # the directories it would hide -> why its parent failed to start


def _user_namespace():
    """An fd of a new user namespace mapping uid and gid 0 and ``UID_RANGE`` to themselves (written from here)."""
    import subprocess

    from .sandbox import UID_RANGE

    code = "import ctypes, sys; print(ctypes.CDLL(None, use_errno=True).unshare(0x10000000), flush=True); sys.stdin.read()"
    helper = subprocess.Popen([sys.executable, "-I", "-S", "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        if helper.stdout.readline().strip() != b"0":
            raise OSError("unshare(CLONE_NEWUSER) refused")
        low, high = UID_RANGE
        for kind in ("uid_map", "gid_map"):
            with open(f"/proc/{helper.pid}/{kind}", "w") as maps:
                maps.write(f"0 0 1\n{low} {low} {high - low}\n")
        return os.open(f"/proc/{helper.pid}/ns/user", os.O_RDONLY)
    finally:
        helper.stdin.close()
        helper.wait()


class Parent:
    """A warm parent in its bubblewrap sandbox, for the directories ``hide`` (see the module's docstring).
    ``jobs``: where the kernels' sandboxes must lie."""

    def __init__(self, hide):
        import shutil
        import subprocess
        import tempfile

        from . import sandbox
        from .prepared import compile_packages

        compile_packages()
        self.home = tempfile.mkdtemp(prefix="mha-warm-")
        self.jobs, self.socket = os.path.join(self.home, "jobs"), os.path.join(self.home, "socket")
        os.mkdir(self.jobs)
        mounts, visible, hidden = sandbox._root_file_system(self.home, self.home, hide)
        report = {"filesystem": "isolated", "network": "isolated", "visible": visible, "hidden": hidden}
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "PYTHONPATH": str(sandbox.ROOT), "MPLBACKEND": "Agg", "MPLCONFIGDIR": MPLCONFIG,
               "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "PYTHONNOUSERSITE": "1",
               "PYTHONDONTWRITEBYTECODE": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1", "MHA_WARM_REPORT": json.dumps(report)}
        started, failed = threading.Event(), []

        def keep():  # bubblewrap dies with the thread that started it (--die-with-parent): one that lives on
            try:
                userns = _user_namespace()
                try:
                    flags = [*sandbox.NAMESPACES, "--die-with-parent", "--new-session", "--userns", str(userns)]
                    flags += [arg for cap in CAPS for arg in ("--cap-add", cap)]
                    self.process = subprocess.Popen(
                        [sandbox.BWRAP, *flags, *mounts, "--", sys.executable, "-m", "autograders.grading.warm", "serve",
                         self.socket], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, pass_fds=(userns,))
                finally:
                    os.close(userns)
            except OSError as error:
                failed.append(error)
                return
            finally:
                started.set()
            self.process.wait()

        threading.Thread(target=keep, name="mha-warm-parent", daemon=True).start()
        started.wait()
        if failed or self.process.stdout.readline().strip() != b"ready":
            self.stop()
            shutil.rmtree(self.home, ignore_errors=True)
            raise OSError(failed[0] if failed else "the warm parent did not start (its errors: above)")

    def alive(self):
        return self.process.poll() is None

    def command(self, launcher, fds=()):
        """The proxy's command line that has this parent run ``launcher`` (the launcher's command line, as
        :meth:`~autograders.grading.sandbox.Sandbox.command` gives it), passing the descriptors ``fds`` on."""
        from .sandbox import parse

        launch, _ = parse(launcher[4:])
        for path in launch.own:  # the launcher would hand them over; the kernel's parent may not (no CAP_CHOWN)
            os.chown(path, launch.uid, launch.uid)
        return [sys.executable, "-I", "-S", os.path.abspath(__file__), "run", self.socket, *[f"--fd={fd}" for fd in fds],
                "--", *launcher]

    def stop(self):
        import shutil
        import subprocess

        process = getattr(self, "process", None)
        if process is not None and process.poll() is None:
            process.stdin.close()  # the parent's signal to stop (its kernels die with it)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(self.home, ignore_errors=True)


def _refused(settings):
    """Why kernels under ``settings`` cannot start warm here (what is quick to tell), or None."""
    if os.environ.get("MHA_WARM") == "0":
        return "MHA_WARM=0"
    if not settings.namespaces:
        return "namespaces off"
    if os.geteuid() != 0:
        return "the grader is not root: no throwaway uids to map"
    return None


def _shaping(hide):
    """The directories of ``hide`` that change the sandbox's file system: those inside a directory it shows
    (the others, a job's private course say, are not in it anyway). One parent serves every course alike."""
    from .sandbox import _root_file_system, _under

    _, shown, _ = _root_file_system("/", "/", ())
    return tuple(path for path in hide if any(_under(path, s) for s in shown))


def parent(settings):
    """This process's warm parent for ``settings`` (started on first use, again if it died; one per set of
    directories to hide inside the sandbox's file system, in practice one), or None: then kernels start cold, and a log line
    (once per reason) says why."""
    import atexit
    import logging

    from .sandbox import NAMESPACES, _bubblewrap

    with _lock:
        why = _refused(settings)
        hide = _shaping(settings.hide) if why is None else ()
        found = _parents.get(hide)
        if why is None and found is not None and found.alive():
            return found
        why = why or _failed.get(hide) or _bubblewrap([*NAMESPACES, "--die-with-parent", "--new-session"])
        if why is None:
            try:
                found = _parents[hide] = Parent(hide)
                atexit.register(found.stop)
                return found
            except OSError as error:
                why = _failed[hide] = str(error)  # not tried again in this process
        if why not in _told:
            _told.add(why)
            logging.getLogger(__name__).warning("warm kernels unavailable (%s): each kernel starts cold", why)
        return None


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] != ["run"] or "--" not in argv:
        sys.exit("usage: python -I -S .../warmstart.py run SOCKET [--fd=N]... -- LAUNCHER COMMAND LINE")
    split = argv.index("--")
    run(argv[1], [int(a.removeprefix("--fd=")) for a in argv[2:split]], argv[split + 1:])


if __name__ == "__main__":
    main()
