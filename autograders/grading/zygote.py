"""A warm process that forks sandboxed kernels: their imports are paid once per worker.

A kernel spends about 1.5 s of CPU before its first cell: Python, ipykernel,
numpy, matplotlib, ipywidgets and the workbook's modules. Grading starts two per
submission (nbgrader's kernel and the re-check's student side). The zygote imports
all that once, then forks a child per request. The child isolates itself exactly
as the launcher does (:func:`autograders.grading.sandbox.isolate`: namespaces, mounts,
limits, the throwaway user) and, instead of exec'ing ``python -m
ipykernel_launcher`` or ``python -m autograders.grading.student_side serve``, runs it in place;
any other command is exec'ed as the launcher would. Nothing a student ran is ever
in the zygote: each child starts from the same clean imports.

Callers still see an ordinary process. The launcher's side
(:func:`autograders.grading.sandbox.zygote_command`, which starts the zygote) turns the launcher's
command line into a small proxy's (``zygote.py run``, the standard library only), which
hands its standard streams (and the file descriptors named) to the zygote,
forwards signals to the child and exits as the child exits; when the proxy is
killed, the zygote kills the child. Without a zygote (it failed to start, or
``MHA_ZYGOTE=0``), it returns the launcher's command line unchanged. This module
is the proxy and the zygote: it imports the launcher (to isolate a child), never
the other way round.

    python -m autograders.grading.zygote serve SOCKET  # started by sandbox.start_zygote()
    python -I -S .../autograders/grading/zygote.py run SOCKET [--fd=N]... -- LAUNCHER COMMAND LINE
"""

import fcntl
import json
import os
import selectors
import shutil
import signal
import socket
import sys
import tempfile

PRELOAD = (
    "numpy", "matplotlib", "IPython", "ipykernel.kernelapp", "ipykernel.debugger", "psutil", "ipywidgets",
    "mha_core", "mha_core.plots",
    "mha_core.widgets", "nbformat", "autograders.checks.feedback", "autograders.grading.student_side", "autograders.checks.level1",
    "autograders.checks.level2", "autograders.checks.level3", "autograders.checks.level4", "autograders.checks.level5",
)
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
MESSAGE = 1 << 20  # bytes of one request, at most
PR_SET_PDEATHSIG = 1


# --- the proxy ----------------------------------------------------------------------


def run(path, fds, launcher):
    """Have the zygote run ``launcher`` (the launcher's command line); exit as it does."""
    options = launcher[3:] if launcher[1:3] == ["-m", "autograders.grading.sandbox"] else None
    if options is None:
        os.execvp(launcher[0], launcher)
    fds = [0, 1, 2, *fds]
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        connection.connect(path)
        request = json.dumps({"argv": options, "fds": fds, "env": dict(os.environ)}).encode()
        socket.send_fds(connection, [request], fds)
        pid = json.loads(connection.recv(MESSAGE))["pid"]
    except (OSError, ValueError, KeyError):  # no zygote after all: the launcher itself
        os.execvp(launcher[0], launcher)
    for fd in fds[3:]:  # the child has them: when it closes one (or dies), its reader sees the end at once
        os.close(fd)

    def forward(signum, frame):
        try:
            os.killpg(pid, signum)
        except OSError:
            pass

    for signum in FORWARDED:
        signal.signal(signum, forward)
    reply = connection.recv(MESSAGE)
    code = json.loads(reply)["exit"] if reply else 1
    if code < 0:  # died of a signal: so does the proxy
        if -code != signal.SIGKILL:
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


# --- the zygote -------------------------------------------------------------------


def serve(path):
    """Import :data:`PRELOAD`, listen on ``path``, fork a sandboxed child per request;
    stop when standard input closes (the caller is gone)."""
    if sys.path and os.path.abspath(sys.path[0] or ".") == os.getcwd():
        del sys.path[0]  # as ipykernel_launcher does: the kernel adds its own directory back
    import importlib

    for name in PRELOAD:
        try:
            module = importlib.import_module(name)
            getattr(module, "warm", lambda: None)()  # a module's caches, filled once for every child
        except Exception:  # noqa: BLE001 (a missing module is imported by the child, if at all)
            pass
    _warm_tracebacks()
    from . import sandbox

    import gc

    gc.freeze()  # what was imported is never scanned by a child's collections (and its pages stay shared)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    selector.register(wake_r, selectors.EVENT_READ)
    selector.register(sys.stdin.fileno(), selectors.EVENT_READ)
    children = {}  # pid -> connection
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    try:
        while True:
            for key, _ in selector.select():
                if key.fileobj is listener:
                    connection, _ = listener.accept()
                    selector.register(connection, selectors.EVENT_READ, data=None)
                elif key.fileobj == sys.stdin.fileno():
                    if not os.read(key.fileobj, 4096):
                        return
                elif key.fileobj == wake_r:
                    os.read(wake_r, 4096)
                    _reap(children, selector)
                elif key.data is None:  # a new request
                    connection = key.fileobj
                    message, fds, _, _ = socket.recv_fds(connection, MESSAGE, 16)
                    selector.unregister(connection)
                    if not message:
                        connection.close()
                        continue
                    keep = [listener.fileno(), selector.fileno(), wake_r, wake_w, sys.stdin.fileno(), sys.stdout.fileno(),
                            *[c.fileno() for c in children.values()]]
                    pid = os.fork()
                    if pid == 0:
                        _child(json.loads(message), fds, connection, keep, sandbox)
                    for fd in fds:
                        os.close(fd)
                    connection.send(json.dumps({"pid": pid}).encode())
                    children[pid] = connection
                    selector.register(connection, selectors.EVENT_READ, data=pid)
                else:  # the proxy went away (killed): so does its child
                    if not key.fileobj.recv(16):
                        selector.unregister(key.fileobj)
                        _kill(key.data)
    finally:
        for pid in children:
            _kill(pid)
        shutil.rmtree(os.path.dirname(path), ignore_errors=True)


def _warm_tracebacks():
    """Format one traceback as IPython does: the first one costs about 0.15 s (stack_data, pygments' lexer,
    imported and compiled), paid once here instead of at each child's first failed cell."""
    try:
        from IPython.core import ultratb

        try:
            raise ValueError("a warm-up")
        except ValueError as error:
            ultratb.AutoFormattedTB(mode="Context").structured_traceback(type(error), error, error.__traceback__)
    except Exception:  # noqa: BLE001 (no warm-up: each child pays it)
        pass


def _kill(pid):
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass


def _reap(children, selector):
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        connection = children.pop(pid, None)
        if connection is None:
            continue
        try:
            connection.send(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())
        except OSError:
            pass
        try:
            selector.unregister(connection)
        except (KeyError, ValueError):
            pass
        connection.close()


def _child(request, fds, connection, inherited, sandbox):
    """In the forked child: take the proxy's streams, isolate, run the command; never return."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, *FORWARDED):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        os.setsid()
        above = 1 + max([*request["fds"], *fds, *inherited])  # out of the way of the targets, then into place
        high = [fcntl.fcntl(fd, fcntl.F_DUPFD, above) for fd in fds]
        for fd in [*fds, *inherited]:
            try:
                os.close(fd)
            except OSError:
                pass
        for target, fd in zip(request["fds"], high):
            os.dup2(fd, target)
            os.close(fd)
        connection.close()
        os.environ.clear()
        os.environ.update(request["env"])
        args, command = sandbox.parse(request["argv"])
        env = sandbox.isolate(args)
        sandbox._libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # the zygote gone: so is this
        _run(command, env)
        code = 0
    except SystemExit as done:
        code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:  # noqa: BLE001 (say why on the kernel's stderr, then die)
        import traceback

        traceback.print_exc()
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:  # noqa: BLE001
                pass
        os._exit(code)


def _run(command, env):
    """Run ``command`` in this process when it is one of ours, else exec it."""
    ours = command[0] == sys.executable and command[1:2] == ["-m"]
    module = command[2] if ours and len(command) > 2 else None
    if module not in ("ipykernel_launcher", "autograders.grading.student_side"):
        os.execvpe(command[0], command, env)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = [module, *command[3:]]
    sys.dont_write_bytecode = True
    tempfile.tempdir = None
    if "numpy" in sys.modules:  # the legacy global generator: not the same stream in every child
        sys.modules["numpy"].random.seed()
    if "matplotlib" in sys.modules:
        for getter in ("get_configdir", "get_cachedir"):
            clear = getattr(getattr(sys.modules["matplotlib"], getter, None), "cache_clear", None)
            if clear:
                clear()
    if module == "ipykernel_launcher":
        from ipykernel.kernelapp import IPKernelApp

        # parent_handle: read from $JPY_PARENT_PID when ipykernel was imported (in the zygote,
        # which has none); the kernel's parent is the zygote, whose end it must not outlive.
        IPKernelApp.launch_instance(argv=command[3:], parent_handle=os.getppid())
    else:
        sys.path.insert(0, os.getcwd())  # as ``python -m`` does
        from .student_side import serve

        serve(int(command[4]), int(command[5]))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["serve"] and len(argv) == 2:
        serve(argv[1])
    elif argv[:1] == ["run"] and "--" in argv:
        split = argv.index("--")
        run(argv[1], [int(a.removeprefix("--fd=")) for a in argv[2:split]], argv[split + 1:])
    else:
        sys.exit("usage: python -m autograders.grading.zygote serve SOCKET | run SOCKET [--fd=N]... -- LAUNCHER...")


if __name__ == "__main__":
    main()
