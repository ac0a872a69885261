"""Warm kernels: one bubblewrap sandbox per grading process, and in it a warm parent that forks each kernel.

A kernel started cold in its own sandbox (:mod:`autograders.grading.sandbox`) pays Python, ipykernel,
numpy, matplotlib and the workbook's imports at each start: about 0.8 s of CPU, against 0.2 s for a fork
of a process that has them already (measured 2026-12-06, notes in docs/grading.md). Bubblewrap 0.8 cannot
give such a process: every sandbox starts by exec'ing its command; it maps one uid per sandbox
(``--unshare-user``), so kernels forked inside one could not have uids of their own; and its
``--disable-userns`` cannot be combined with ``--userns``. So bubblewrap draws the outer boundary once per
grading process, and the part written here does per kernel what it cannot:

- **the sandbox** (:class:`~autograders.grading.warmstart.Parent`): bubblewrap with the launcher's
  allow-list root file system, read-only (:func:`~autograders.grading.sandbox._root_file_system`), new
  PID, network, IPC and UTS namespaces, ``--die-with-parent``, ``--new-session``, entered with
  ``--userns`` of a user namespace prepared by the grader (uid and gid 0 and
  :data:`~autograders.grading.sandbox.UID_RANGE` mapped to themselves) and only the capabilities in
  :data:`~autograders.grading.warmstart.CAPS`. Inside, :func:`serve` imports :data:`PRELOAD`, freezes the
  collector and forks one child per request.
- **each kernel** (:func:`_child`, :func:`_mounts`, :func:`_drop`: about 100 lines, against about 600 in
  the hand-written launcher bubblewrap replaced): its own session; new mount, PID, network, IPC and UTS
  namespaces (no interface up: bubblewrap's had a loopback), whose pid 1 is an init that makes the mounts
  as root there, then waits for the kernel and reaps, as bubblewrap's does; ``/`` private, fresh
  ``/tmp``, ``/var/tmp`` and ``/dev/shm``, the warm directory covered (its siblings' job directories and
  the socket vanish) and its own job directory bound back, a new ``/proc``; in the kernel, the launcher's
  limits, bounding and ambient capabilities dropped, no groups, a throwaway uid, every capability set
  emptied, ``no_new_privs``, a seccomp filter refusing new user namespaces (:func:`seccomp_filter`); then
  ipykernel runs in place (any other command is exec'ed).

Callers see an ordinary process: the provisioner's command line is a small proxy's
(:mod:`autograders.grading.warmstart`, which starts the parent too; the standard library only), which
hands its standard streams and the hand-over pipes to the parent over a Unix socket (SCM_RIGHTS), has it
send signals on to the kernel's process group and exits as the kernel does; when the proxy dies, the
parent kills the kernel. Where the warm parent cannot run (not root, no bubblewrap, namespaces off,
``MHA_WARM=0``, the parent failed to start), kernels start cold through the launcher, and a log line
says why.

    python -m autograders.grading.warm serve SOCKET   # inside bubblewrap, started by warmstart.Parent
"""

import ctypes
import fcntl
import json
import os
import re
import selectors
import signal
import socket
import struct
import sys

from .warmstart import FORWARDED, MESSAGE, MPLCONFIG

PRELOAD = ("numpy", "IPython", "ipykernel.kernelapp", "ipykernel.ipkernel", "matplotlib", "matplotlib.pyplot",
           "mha_core", "mha_core.plots", "mha_core.explore.predict", "autograders.variants", "autograders.problems.moments",
           "autograders.checks.feedback", "autograders.checks.level1", "autograders.checks.level2", "autograders.checks.level3",
           "autograders.checks.level4", "autograders.checks.level5", "autograders.checks.beyond",
           "autograders.grading.student_side", "autograders.grading.output_cap",
           # what every kernel imported after the fork (measured 2026-12-06: 0.18 s of CPU per kernel, debugpy most)
           "ipykernel.debugger", "IPython.core.oinspect", "sqlite3", "pdb", "jinja2", "mha_core.widgets")
CLONE_NEWNS, CLONE_NEWPID, CLONE_NEWUSER = 0x20000, 0x20000000, 0x10000000
CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS = 0x40000000, 0x08000000, 0x04000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_SECCOMP, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS, PR_CAP_AMBIENT = 1, 22, 24, 38, 47
_libc = ctypes.CDLL(None, use_errno=True)


def _check(result, what):
    if result != 0:
        error = ctypes.get_errno()
        raise OSError(error, f"{what}: {os.strerror(error)}")


def _mount(source, target, fstype, flags, data=None):
    encode = lambda s: s.encode() if s else None  # noqa: E731
    _check(_libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags), encode(data)), f"mount {target}")


# --- the seccomp filter: no new user namespace from a kernel ---------------------------

# (audit architecture, unshare, clone, clone3) by machine; clone's flags are its first argument on both
ARCHES = {"x86_64": (0xC000003E, 272, 56, 435), "aarch64": (0xC00000B7, 97, 220, 435)}


def seccomp_filter(machine=None):
    """A classic BPF program (bytes of ``struct sock_filter``) refusing unshare and clone with CLONE_NEWUSER
    (EPERM) and clone3, whose flags it cannot read (ENOSYS: the C library falls back to clone), and any
    other ABI's system calls (x32, i386); None on a machine it does not know."""
    known = ARCHES.get(machine or os.uname().machine)
    if known is None:
        return None
    arch, unshare, clone, clone3 = known
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    load, jeq, jge, jset, ret = 0x20, 0x15, 0x35, 0x45, 0x06
    program = [(load, 0, 0, 4), (jeq, 0, 9, arch), (load, 0, 0, 0), (jge, 7, 0, 0x40000000), (jeq, 6, 0, clone3),
               (jeq, 1, 0, unshare), (jeq, 0, 2, clone), (load, 0, 0, 16), (jset, 1, 0, CLONE_NEWUSER),
               (ret, 0, 0, allow), (ret, 0, 0, eperm), (ret, 0, 0, enosys)]
    return b"".join(struct.pack("=HBBI", *op) for op in program)


def _apply_seccomp(program):
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = struct.pack("=HxxxxxxQ", len(program) // 8, ctypes.addressof(buffer))
    _check(_libc.prctl(PR_SET_SECCOMP, 2, ctypes.c_char_p(fprog), 0, 0), "seccomp")  # 2: SECCOMP_MODE_FILTER


# --- the warm parent (inside bubblewrap) -----------------------------------------------------


def serve(path):
    """Import :data:`PRELOAD`, listen on ``path``, fork an isolated child per request; stop when standard
    input closes (the grader is gone)."""
    if sys.path and os.path.abspath(sys.path[0] or ".") == os.getcwd():
        del sys.path[0]  # as ipykernel_launcher does: the kernel adds its own directory back
    import gc
    import importlib

    for name in PRELOAD:
        try:
            importlib.import_module(name)
        except Exception as error:  # noqa: BLE001 (the kernel imports it, if at all)
            print(f"warm parent: {name} not preloaded ({error})", file=sys.stderr)
    _warm_tracebacks()
    from . import sandbox

    gc.freeze()  # what was imported is never scanned by a child's collections (its pages stay shared)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    os.chmod(path, 0o600)
    listener.listen(64)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda signum, frame: None)
    selector = selectors.DefaultSelector()
    for fileobj in (listener, wake_r, sys.stdin.fileno()):
        selector.register(fileobj, selectors.EVENT_READ)
    children = {}  # pid -> the proxy's connection
    print("ready", flush=True)
    try:
        while True:
            for key, _ in selector.select():
                if key.fileobj is listener:
                    selector.register(listener.accept()[0], selectors.EVENT_READ, data=None)
                elif key.fileobj == sys.stdin.fileno():
                    if not os.read(key.fileobj, 4096):
                        return
                elif key.fileobj == wake_r:
                    os.read(wake_r, 4096)
                    _reap(children, selector)
                elif key.data is None:  # a request
                    connection = key.fileobj
                    message, fds, _, _ = socket.recv_fds(connection, MESSAGE, 16)
                    selector.unregister(connection)
                    if not message:
                        connection.close()
                        continue
                    keep = [listener.fileno(), selector.fileno(), wake_r, wake_w, 0, 1, *[c.fileno() for c in children.values()]]
                    pid = os.fork()
                    if pid == 0:
                        _child(json.loads(message), fds, connection, keep, sandbox, os.path.dirname(path))
                    for fd in fds:
                        os.close(fd)
                    connection.send(json.dumps({"pid": pid}).encode())
                    children[pid] = connection
                    selector.register(connection, selectors.EVENT_READ, data=pid)
                else:  # from a kernel's proxy: a signal for the kernel, or the end (killed): so ends the kernel
                    message = key.fileobj.recv(MESSAGE)
                    if not message:
                        selector.unregister(key.fileobj)
                    _kill(key.data, json.loads(message)["signal"] if message else signal.SIGKILL)
    finally:
        for pid in children:
            _kill(pid)


def _warm_tracebacks():
    """Format one traceback as IPython does (stack_data, pygments: about 0.15 s), once here, not in each kernel."""
    try:
        from IPython.core import ultratb

        try:
            raise ValueError("a warm-up")
        except ValueError as error:
            ultratb.AutoFormattedTB(mode="Context").structured_traceback(type(error), error, error.__traceback__)
    except Exception:  # noqa: BLE001 (each kernel pays it)
        pass


def _kill(pid, signum=signal.SIGKILL):
    try:
        os.killpg(pid, signum)  # the child, its namespace's init and the kernel (the init's death ends them all)
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
        if connection is not None:
            try:
                connection.send(json.dumps({"exit": os.waitstatus_to_exitcode(status)}).encode())
            except OSError:
                pass
            if connection in selector.get_map():  # not when the proxy went first
                selector.unregister(connection)
            connection.close()


def _child(request, fds, connection, inherited, sandbox, home):
    """In the forked child: take the proxy's streams, isolate, run the command; never return."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for signum in (signal.SIGCHLD, *FORWARDED):
            signal.signal(signum, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # the parent gone: so is this
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
        _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS), "unshare")
        init = os.fork()
        if init:  # waits for the namespace's init, which waits for the kernel
            code = _wait(init)
        else:  # pid 1 of the new namespace, as root there: the mounts, then the kernel as its only child
            _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            args, command = sandbox.parse(request["argv"])
            job = _mounts(args, sandbox, home)
            kernel = os.fork()
            if kernel:
                code = _wait(kernel)
            else:
                report = json.loads(os.environ.get("MHA_WARM_REPORT") or "{}")
                _run(command, _drop(args, request, report, sandbox, job))
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


def _wait(pid):
    """Reap every child (an init's orphans too) until ``pid`` exits; its exit code (128 + N: killed by N)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # an interrupt is the kernel's (sent to the group)
    os.closerange(0, 1 << 16)  # nothing of the kernel's held here: its pipes end when it does
    while True:
        done, status = os.waitpid(-1, 0)
        if done == pid:
            code = os.waitstatus_to_exitcode(status)
            return code if code >= 0 else 128 - code


def _mounts(args, sandbox, home):
    """The kernel's file system, made by pid 1 of its namespaces (see the module's docstring); its job directory."""
    job = os.path.realpath(args.keep or args.workdir)
    if args.uid is None or not sandbox._under(job, home) or job == home:
        raise OSError(f"a warm kernel needs a throwaway uid and a job directory under {home}")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    held = os.open(job, os.O_PATH | os.O_DIRECTORY)
    for path in sandbox.PRIVATE_DIRS:
        # What the sandbox shows inside it (a checkout and its environment under /tmp, say), kept open before
        # the fresh tmpfs covers it, then bound back with what is mounted below it, read-only as it was.
        kept = [(point, os.open(point, os.O_PATH)) for point in mounted_under(path, home)]
        _mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, f"size={64 << 20},mode=1777")
        for point, fd in kept:
            if os.path.isdir(f"/proc/self/fd/{fd}"):
                os.makedirs(point, 0o755, exist_ok=True)
            else:  # a file bound alone
                os.makedirs(os.path.dirname(point), 0o755, exist_ok=True)
                os.close(os.open(point, os.O_CREAT | os.O_WRONLY, 0o644))
            _mount(f"/proc/self/fd/{fd}", point, None, MS_BIND | MS_REC)
            os.close(fd)
    os.makedirs(home, exist_ok=True)  # gone with /tmp if it lay there
    _mount("tmpfs", home, "tmpfs", MS_NOSUID | MS_NODEV, "size=1m,mode=0755")  # siblings and socket hidden
    os.makedirs(job, 0o755)
    _mount(f"/proc/self/fd/{held}", job, None, MS_BIND)
    os.close(held)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)  # this namespace's processes only
    return job


def mounted_under(path, home, mountinfo="/proc/self/mountinfo"):
    """The outermost mount points strictly under ``path``, but for ``home`` and what lies in it (given each
    kernel afresh); mountinfo's escapes (``\\040`` for a space) decoded."""
    from .sandbox import _under

    points = set()
    with open(mountinfo) as lines:
        for line in lines:
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), line.split()[4])
            if point != path and _under(point, path) and not _under(point, home):
                points.add(point)
    return sorted(p for p in points if not any(q != p and _under(p, q) for q in points))


def _drop(args, request, report, sandbox, job):
    """In the kernel's process: limits, then no capability, no group, a throwaway uid, no_new_privs, the seccomp
    filter, no descriptor but its own. Returns its environment (the launcher's: ``sandbox._environment``)."""
    sandbox._limits(args.settings, True)
    cap = 0
    while _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0:
        cap += 1
    if ctypes.get_errno() != 22:  # EINVAL: past the last capability
        _check(1, "dropping the bounding set")
    _check(_libc.prctl(PR_CAP_AMBIENT, 4, 0, 0, 0), "clearing the ambient set")  # 4: PR_CAP_AMBIENT_CLEAR_ALL
    os.setgroups([])
    os.setgid(args.uid)
    os.setuid(args.uid)  # from root to another uid: permitted and effective sets emptied
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    _check(_libc.capset(header, (ctypes.c_uint32 * 6)()), "capset")  # the inheritable set too
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    program = seccomp_filter()
    if program:
        _apply_seccomp(program)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # its init gone: so is it
    keep = sorted({0, 1, 2, *request["fds"]})
    for low, high in zip([-1, *keep], [*keep, 1 << 16]):
        if low + 1 < high:  # (os.closerange(0, 0) closes every descriptor)
            os.closerange(low + 1, high)  # nothing of the parent's in the kernel: its socket, its pipes
    os.makedirs(MPLCONFIG, 0o700, exist_ok=True)
    os.chdir(args.workdir)
    report["hidden"] = sorted({*report.get("hidden", ()), *args.settings.hide})  # the course's too, as the launcher says
    report.update(memory=args.settings.memory, file_size=args.settings.file_size, user=args.uid, start="warm",
                  writable=[job, *sandbox.PRIVATE_DIRS], seccomp="no new user namespaces" if program else "none")
    os.environ.clear()
    os.environ.update(request["env"])
    env = sandbox._environment(args, report)
    env["MPLCONFIGDIR"] = MPLCONFIG
    return env


def _run(command, env):
    """Run ``command`` in this process when it is ipykernel's launcher, else exec it."""
    if command[1:3] != ["-m", "ipykernel_launcher"] or os.path.realpath(command[0]) != os.path.realpath(sys.executable):
        os.execvpe(command[0], command, env)
    import random
    import tempfile

    os.environ.clear()
    os.environ.update(env)
    if "ipykernel.debugger" in sys.modules:  # what importing it sets (debugpy 1.8's force_pydevd), as in a cold kernel
        os.environ.setdefault("PYDEVD_USE_FRAME_EVAL", "NO")
    sys.argv = list(command[2:])
    sys.dont_write_bytecode = True
    tempfile.tempdir = None
    random.seed()  # not the same stream in every kernel
    sys.modules["numpy"].random.seed() if "numpy" in sys.modules else None
    from ipykernel.kernelapp import IPKernelApp

    IPKernelApp.launch_instance(argv=command[3:], parent_handle=1)  # as the launcher's JPY_PARENT_PID=1: no poller


if __name__ == "__main__":
    if sys.argv[1:2] != ["serve"] or len(sys.argv) != 3:
        sys.exit("usage: python -m autograders.grading.warm serve SOCKET  (inside bubblewrap: see warmstart.Parent)")
    serve(sys.argv[2])
