"""Where a student's code runs when it is graded: a sandboxed kernel.

nbgrader executes a submission in an ordinary Jupyter kernel that can read and
write whatever the grader's user can, reach the network and eat all memory. The
course's ``nbgrader_config.py`` (see :func:`autograders.grading.autograde.configure`)
replaces nbgrader's ``Execute`` step by ``SandboxExecute``, which starts each kernel
through this module::

    python -m autograders.grading.sandbox LAUNCH_JSON -- python -m ipykernel_launcher -f CONNECTION_FILE

``LAUNCH_JSON`` is one :class:`Launch` as JSON: the course's settings as
:meth:`~autograders.common.settings.Settings.as_dict` gives them (limits, directories to
hide, namespaces or not) and this kernel's private directory and throwaway user. It is the
only wire form of the settings on their way to the kernel (the zygote hands the same
argument on), read back by :meth:`Launch.from_json` and nothing else.

The launcher (running as the grader, usually root) sets resource limits
(address space, file size, processes, open files, no core dumps), moves the
process into new network and mount namespaces where the kernel allows it (no
network at all; a root file system built from an allow-list, see
:data:`SYSTEM_DIRS`: nothing of the repository but its two packages, nothing of
the course; private empty ``/tmp``, ``/var/tmp`` and ``/dev/shm``), strips the
environment, then, as root, becomes a throwaway user (a fresh uid per kernel, no
groups, ``no_new_privs``; a non-root grader's user namespace loses its
capabilities instead) and execs the kernel. The kernel talks to
nbgrader over Unix sockets (zmq's ``ipc`` transport) in a private directory,
which is also its working directory and home, so a new network namespace does
not cut it off. Each kernel reports what it got in ``$MHA_SANDBOX`` (JSON).
The re-check's student side (:mod:`autograders.grading.student_side`) runs in the same
sandbox. This module imports the standard library only (the launcher runs it as a
plain script); nbgrader's side is :mod:`autograders.grading.autograde`.
"""

import atexit
import ctypes
import errno
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout: autograders/ and mha_core/

if __package__:
    from ..common.settings import DEFAULT, MiB, Settings
else:  # run as a plain script (see launch): the settings module (autograders/common/settings.py), by its path
    import importlib.util

    _spec = importlib.util.spec_from_file_location("_mha_settings", Path(__file__).resolve().parents[1] / "common" / "settings.py")
    _settings = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_settings)
    DEFAULT, MiB, Settings = _settings.DEFAULT, _settings.MiB, _settings.Settings

# The kernel's file system (where Linux allows a mount namespace) is built from
# nothing: a fresh root holding only these, then pivot_root into it. Read-only: the
# system's programs, libraries and configuration, the Python installation, and the
# workbook's two packages (the checks compute their expected values; no file of
# theirs holds a solution or a hidden test: tests/test_sandbox.py reads them all).
# Private (an empty tmpfs each, gone with the kernel): the temporary directories.
# Read-write: the kernel's own directory. Nothing else exists for it: not the
# repository (its .git, notebooks/, tests/), not the course, not /root, /home, /run.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
PACKAGES = ("autograders", "mha_core")
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
DEVICES = ("null", "zero", "full", "random", "urandom", "tty")

# The environment a kernel keeps; everything else (tokens, the grader's paths) is dropped.
KEEP_ENV = ("PATH", "JPY_PARENT_PID", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "MPLBACKEND", "NBGRADER_EXECUTION", "JPY_SESSION_NAME",
            "MHA_CORE_DRAW")
KEEP_ENV_PREFIXES = ("LC_",)

HANDED_ENV = "MHA_VARIANTS_HANDED"  # the student's numbers, as the grader decided them (autograders.variants.current)

UID_RANGE = (3_000_000, 3_900_000)  # throwaway uids, one per kernel

CLONE_NEWNS, CLONE_NEWUSER, CLONE_NEWNET = 0x00020000, 0x10000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 8, 32, 4096, 16384, 1 << 18
MNT_DETACH, AT_FDCWD, AT_RECURSIVE, MOUNT_ATTR_RDONLY, MOUNT_ATTR_NOSUID, MOUNT_ATTR_NODEV = 2, -100, 0x8000, 1, 2, 4
SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41}.get(os.uname().machine)  # elsewhere: chroot
SYS_MOUNT_SETATTR = 442  # Linux 5.12; the same number on every architecture
PR_SET_NO_NEW_PRIVS, PR_CAPBSET_DROP, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 38, 24, 47, 4

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result, what):
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def _unshare(flags):
    _check(_libc.unshare(ctypes.c_int(flags)), "unshare")


def _mount(source, target, fstype, flags, data=None):
    _check(
        _libc.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            ctypes.c_ulong(flags),
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def _under(path, parent):
    path, parent = os.path.abspath(path), os.path.abspath(parent)
    return path == parent or path.startswith(parent.rstrip("/") + "/")


# --- the launcher (stage one: as the grader; then exec the kernel) -----------


def _namespaces(report):
    """New mount and network namespaces (as root; otherwise inside a user namespace): True if the latter."""
    if os.geteuid() == 0:
        for flag, key in ((CLONE_NEWNS, "filesystem"), (CLONE_NEWNET, "network")):
            try:
                _unshare(flag)
                report[key] = "isolated"
            except OSError as error:
                report[key] = f"shared ({error.strerror})"
        return False
    uid, gid = os.getuid(), os.getgid()
    try:
        _unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWNET)
    except OSError as error:
        report["filesystem"] = report["network"] = f"shared ({error.strerror})"
        return False
    report["network"] = "isolated"  # a new network namespace: no interface up, whatever follows
    try:  # refused after a successful unshare where AppArmor restricts user namespaces (Ubuntu 24.04)
        Path("/proc/self/setgroups").write_text("deny")
        Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
        Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")
    except OSError as error:
        report["filesystem"] = f"shared ({error.strerror})"
        report["user"] = f"unchanged ({uid})"  # not os.getuid(): unmapped, that says 65534
        return True
    report["filesystem"] = "isolated"
    return True


def _readonly(target):
    """Make the mount at ``target`` and every mount below it read-only (and nosuid, nodev)."""
    attr = (ctypes.c_uint64 * 4)(MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0, 0, 0)
    if _libc.syscall(ctypes.c_long(SYS_MOUNT_SETATTR), ctypes.c_int(AT_FDCWD), target.encode(),
                     ctypes.c_uint(AT_RECURSIVE), ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr))) == 0:
        return
    if ctypes.get_errno() != errno.ENOSYS:
        _check(-1, f"mount_setattr {target}")
    # Before Linux 5.12: one mount at a time, keeping the flags it has (a locked one's cannot be dropped).
    keep = {os.ST_NOSUID: MS_NOSUID, os.ST_NODEV: MS_NODEV, os.ST_NOEXEC: MS_NOEXEC}
    points = [line.split()[4].encode().decode("unicode_escape") for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    for point in sorted({p for p in points if _under(p, target)}, key=len):
        flags = os.statvfs(point).f_flag
        extra = sum(ms for st, ms in keep.items() if flags & st)
        _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | extra)


def _place(new, path):
    """Make ``path`` exist under ``new`` as it does on the host (a symbolic link as a link,
    each directory as an empty one where nothing is mounted yet); return its real path."""
    current = "/"
    for part in Path(path).parts[1:]:
        host = os.path.join(current, part)
        inside = new + host
        if os.path.islink(host):
            if not os.path.lexists(inside):
                os.symlink(os.readlink(host), inside)
            current = _place(new, os.path.realpath(host))
        else:
            if not os.path.lexists(inside):
                os.mkdir(inside, 0o755)
            current = host
    return current


def _is_checkout(root):
    """True when ``root`` (the directory holding the packages) is the project's source tree, not site-packages."""
    if root.name in ("site-packages", "dist-packages"):  # an installed copy (its neighbours: numpy and the rest)
        return False
    return any((root / name).exists() for name in (".git", "pyproject.toml", "notebooks", "tests"))


def _new_root(keep, hide):
    """Build the kernel's file system from nothing and pivot into it (see SYSTEM_DIRS):
    the system's directories, the Python installation and the two packages read-only,
    ``keep`` (the kernel's own directory) read-write, fresh /tmp, /var/tmp and /dev/shm,
    a /dev of a few devices, the host's /proc. ``hide``: paths to cover should they lie
    inside one of the directories shown (with the repository, when the packages are
    its own). Return (the read-only paths, the covered ones)."""
    prefixes = sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix)})
    if "/" in prefixes:
        raise OSError(errno.EINVAL, "Python is installed in / itself: no installation to show alone")
    packages = [os.path.realpath(ROOT / name) for name in PACKAGES if (ROOT / name).is_dir()]
    system = [p for p in SYSTEM_DIRS if os.path.lexists(p)]
    covers = [str(ROOT)] if _is_checkout(ROOT) else []
    covers += [os.path.realpath(p) for p in hide]
    keep = os.path.realpath(keep)
    wanted = [*system, *prefixes, *packages, keep, "/proc", *[f"/dev/{d}" for d in DEVICES]]
    sources = {}  # held open: the new root is mounted over ``keep``, the covers over some of them
    try:
        for path in wanted:
            real = os.path.realpath(path)
            if real not in sources and os.path.exists(real):
                sources[real] = os.open(real, os.O_PATH)
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        new = keep  # any existing directory would do: its content is held open above
        _mount("tmpfs", new, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755")

        def bind(path, readonly=True):
            real = _place(new, path)
            if real in sources:  # ``keep`` alone: recursively, it would hold the new root mounted on it
                _mount(f"/proc/self/fd/{sources[real]}", new + real, None, MS_BIND | (MS_REC if real != keep else 0))
                if readonly:
                    _readonly(new + real)
            return real

        for path in PRIVATE_DIRS:
            if path != "/dev/shm":
                _mount("tmpfs", new + _place(new, path), "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
        shown = []
        for path in [*system, *prefixes]:
            if os.path.islink(path) or any(_under(os.path.realpath(path), s) for s in shown):
                _place(new, path)  # a link (/bin -> usr/bin), or already inside a directory shown
            else:
                shown.append(bind(path))
        covered = []  # only what lies inside a directory shown: elsewhere there is nothing to cover
        for path in covers:
            if any(_under(path, s) for s in shown) and os.path.isdir(new + path) and not any(_under(path, c) for c in covered):
                _mount("tmpfs", new + path, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0755")
                covered.append(path)
        for path in [*packages, *[p for p in prefixes if any(_under(p, c) for c in covered)]]:
            if not any(_under(path, s) for s in shown) or any(_under(path, c) for c in covered):
                shown.append(bind(path))
        for path in covered:
            _mount(None, new + path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        bind(keep, readonly=False)
        bind("/proc", readonly=False)
        dev = new + _place(new, "/dev")
        _mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755")
        for name in DEVICES:
            if f"/dev/{name}" in sources:
                open(f"{dev}/{name}", "w").close()
                _mount(f"/proc/self/fd/{sources['/dev/' + name]}", f"{dev}/{name}", None, MS_BIND)
        for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                             ("stderr", "/proc/self/fd/2")):
            os.symlink(target, f"{dev}/{name}")
        os.mkdir(f"{dev}/shm")
        _mount("tmpfs", f"{dev}/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=64m,mode=1777")
        _mount(None, dev, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC)
        _mount(None, new, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.chdir(new)
        if SYS_PIVOT_ROOT and _libc.syscall(ctypes.c_long(SYS_PIVOT_ROOT), b".", b".") == 0:
            _check(_libc.umount2(b".", MNT_DETACH), "umount the old root")  # stacked on the new one: gone
        else:
            os.chroot(".")
        os.chdir("/")
    finally:
        for fd in sources.values():
            os.close(fd)
    _close_directories()
    return sorted({*shown, *packages}), sorted({*covered, *[os.path.realpath(p) for p in hide]})


def _close_directories():
    """Close any inherited descriptor of a directory: a way back into the old root."""
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            if fd > 2 and stat.S_ISDIR(os.fstat(fd).st_mode):
                os.close(fd)
        except OSError:
            continue


def _drop_capabilities():
    """Drop every capability (those a user namespace gave this process): nothing of its
    file system may be unmounted or remounted writable by the code that runs next."""
    for cap in range(64):
        if _libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() == errno.EINVAL:
            break
    _libc.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, this process
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable (two words each): all empty
    _check(_libc.capset(ctypes.byref(header), ctypes.byref(data)), "capset")


def _reachable(path):
    """True when a user of its own could reach ``path`` (every directory above it searchable by others)."""
    path = Path(os.path.realpath(path))
    return all(os.stat(p).st_mode & 0o001 for p in path.parents) and bool(os.stat(path).st_mode & 0o004)


def _limits(settings, dropping):
    import resource

    limits = [
        (resource.RLIMIT_AS, settings.memory),
        (resource.RLIMIT_FSIZE, settings.file_size),
        (resource.RLIMIT_CORE, 0),
        (resource.RLIMIT_NOFILE, settings.open_files),
    ]
    if dropping:  # counted per user: only meaningful for a user of its own
        limits.append((resource.RLIMIT_NPROC, settings.processes))
    for which, value in limits:
        if value and value > 0:
            resource.setrlimit(which, (value, value))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # too large a file: an error, not death


def _environment(args, report):
    env = {k: v for k, v in os.environ.items() if k in KEEP_ENV or k.startswith(KEEP_ENV_PREFIXES)}
    work = args.workdir
    env.update(
        HOME=work,
        TMPDIR="/tmp" if report.get("filesystem") == "isolated" else work,
        MPLCONFIGDIR=os.path.join(work, ".matplotlib"),
        IPYTHONDIR=os.path.join(work, ".ipython"),
        OPENBLAS_NUM_THREADS="1",
        OMP_NUM_THREADS="1",
        MKL_NUM_THREADS="1",
        PYTHONNOUSERSITE="1",
        PYTHONDONTWRITEBYTECODE="1",
        MHA_SANDBOX=json.dumps(report, sort_keys=True),
    )
    if args.variants:
        env[HANDED_ENV] = args.variants
    env.setdefault("MPLBACKEND", "Agg")
    return env


class Launch:
    """What the launcher is asked to do, in one value: isolate under ``settings`` (a
    :class:`~autograders.common.settings.Settings`: the limits, the directories to hide, namespaces
    or not), work in ``workdir`` (working directory and home), keep ``keep`` visible (default:
    ``workdir``), become the throwaway ``uid`` (as root) and hand it the files ``own``; ``variants``: the
    student's numbers (JSON) for the command's :data:`HANDED_ENV`, or None."""

    FIELDS = ("settings", "workdir", "keep", "uid", "own", "variants")

    def __init__(self, settings=DEFAULT, workdir=None, keep=None, uid=None, own=(), variants=None):
        if not workdir:
            raise ValueError("workdir: the launcher needs a private directory to work in")
        if uid is not None and (type(uid) is not int or uid < 0):
            raise ValueError(f"uid: expected a user id (an int >= 0), got {uid!r}")
        self.settings, self.workdir, self.keep = settings, str(workdir), str(keep) if keep else None
        if variants is not None and type(variants) is not str:
            raise ValueError(f"variants: expected the numbers as a JSON string, got {type(variants).__name__}")
        self.uid, self.own, self.variants = uid, [str(p) for p in own], variants

    def to_json(self):
        return json.dumps({"settings": self.settings.as_dict(), "workdir": self.workdir, "keep": self.keep,
                           "uid": self.uid, "own": self.own, "variants": self.variants}, sort_keys=True)

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)
        if type(data) is not dict or set(data) - set(cls.FIELDS):
            raise ValueError(f"LAUNCH_JSON: expected an object with the keys {', '.join(cls.FIELDS)}")
        return cls(Settings.from_dict(data.get("settings") or {}), data.get("workdir"), data.get("keep"),
                   data.get("uid"), data.get("own") or (), data.get("variants"))


USAGE = "usage: python -m autograders.grading.sandbox LAUNCH_JSON -- COMMAND..."


def parse(argv):
    """The launcher's arguments, ``LAUNCH_JSON -- COMMAND...``: (its :class:`Launch`, the command to run inside)."""
    if len(argv) < 3 or argv[1] != "--":
        raise SystemExit(USAGE)
    try:
        return Launch.from_json(argv[0]), list(argv[2:])
    except ValueError as error:
        raise SystemExit(f"{USAGE}\n{error}") from None


def launch(argv=None):
    """Stage one: isolate this process, become the throwaway user, exec ``COMMAND``."""
    args, command = parse(sys.argv[1:] if argv is None else argv)
    if os.geteuid() != 0 and args.settings.namespaces and __package__ and len(os.listdir("/proc/self/task")) > 1:
        # unshare(CLONE_NEWUSER) fails (EINVAL) in a process with threads, and ``-m autograders.grading.sandbox``
        # imported numpy (with the package), whose BLAS threads are running: start again as a plain script
        # (-I: the standard library only, one thread), same process and arguments.
        os.execv(sys.executable, [sys.executable, "-I", os.path.abspath(__file__),
                                  *(sys.argv[1:] if argv is None else argv)])
    os.execvpe(command[0], command, isolate(args))


def isolate(args):
    """Isolate this process as the launcher's ``args`` (a :class:`Launch`) say (namespaces, mounts,
    limits, the throwaway user); return the environment for the command inside."""
    settings = args.settings
    report = {"memory": settings.memory, "file_size": settings.file_size}
    userns = False
    if not settings.namespaces:
        report["filesystem"] = report["network"] = "shared (namespaces off)"
    else:
        userns = _namespaces(report)
    if report.get("filesystem") == "isolated":
        keep = args.keep or args.workdir
        try:
            report["visible"], report["hidden"] = _new_root(keep, settings.hide)
            report["writable"] = [os.path.realpath(keep), *PRIVATE_DIRS]
        except OSError as error:
            _libc.umount2(os.path.realpath(keep).encode(), MNT_DETACH)  # a root half built: gone
            report["filesystem"] = f"shared ({error.strerror or error})"
    dropping = os.geteuid() == 0 and args.uid is not None
    unreachable = [p for p in (sys.executable, ROOT / "autograders") if not _reachable(p)]
    if dropping and unreachable:  # e.g. Python under /root (0700) and no mount namespace to show it
        dropping = False
        report["user"] = f"unchanged: {unreachable[0]} is not readable by other users"
    _limits(settings, dropping)
    os.chdir(args.workdir)
    if dropping:
        for path in args.own:
            os.chown(path, args.uid, args.uid)
        os.setgroups([])
        os.setgid(args.uid)
        os.setuid(args.uid)
        report["user"] = args.uid
    else:
        report.setdefault("user", f"unchanged ({os.getuid()})")
    if userns:
        _drop_capabilities()
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(no_new_privs)")
    return _environment(args, report)


# --- the grader's side: private directories, throwaway users -----------------


def pick_uid():
    """A uid in ``UID_RANGE`` that no running process has."""
    used = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            line = next(x for x in status.read_text().splitlines() if x.startswith("Uid:"))
            used.add(int(line.split()[1]))
        except (OSError, StopIteration, ValueError, IndexError):
            continue
    while True:
        uid = random.randrange(*UID_RANGE)
        if uid not in used:
            return uid


def kill_user(uid):
    """SIGKILL every process of ``uid`` (the throwaway user: whatever a kernel left behind)."""
    for _ in range(5):
        found = False
        for status in Path("/proc").glob("[0-9]*/status"):
            try:
                line = next(x for x in status.read_text().splitlines() if x.startswith("Uid:"))
                if int(line.split()[1]) == uid:
                    found = True
                    os.kill(int(status.parent.name), signal.SIGKILL)
            except (OSError, StopIteration, ValueError, IndexError):
                continue
        if not found:
            return


# --- the warm zygote (autograders/grading/zygote.py), the caller's side ---------

ZYGOTE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zygote.py")  # the proxy: a plain script
_zygote_lock = threading.Lock()
_zygote = None  # (Popen, socket path) of this process's zygote


def zygote_enabled():
    return os.environ.get("MHA_ZYGOTE", "1") != "0"


def start_zygote():
    """This process's zygote (started on first use, again if it died): its socket path, or None."""
    global _zygote
    with _zygote_lock:
        if _zygote is not None and _zygote[0].poll() is None:
            return _zygote[1]
        path = os.path.join(tempfile.mkdtemp(prefix="mha-zygote-"), "socket")
        env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
               "MPLBACKEND": os.environ.get("MPLBACKEND", "Agg"), "MPLCONFIGDIR": os.path.dirname(path),
               "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # debugpy's "frozen modules" notice, once per worker
               "PYTHONPATH": os.pathsep.join(p for p in [str(ROOT), os.environ.get("PYTHONPATH", "")] if p)}
        process = subprocess.Popen([sys.executable, "-m", "autograders.grading.zygote", "serve", path], env=env,
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True)
        ready = process.stdout.readline()  # a line once it listens; nothing if it died
        if ready.strip() != b"ready":
            process.kill()
            process.wait()
            _zygote = None
            return None
        _zygote = (process, path)
        atexit.unregister(stop_zygote)  # once, however often the zygote was restarted
        atexit.register(stop_zygote)
        return path


def stop_zygote():
    """Stop this process's zygote (its children die with it)."""
    global _zygote
    with _zygote_lock:
        if _zygote is not None:
            process, _ = _zygote
            process.stdin.close()  # the zygote's signal to stop
            try:
                process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            _zygote = None


def zygote_command(launcher, fds=()):
    """The command line that runs the launcher's ``launcher`` command line through the
    zygote (passing the file descriptors ``fds`` on), or ``launcher`` if none runs."""
    path = start_zygote() if zygote_enabled() else None
    if path is None:
        return launcher
    # The proxy needs the standard library only: run as a plain script (-I -S), not ``-m
    # autograders.grading.zygote``, which would import the package (numpy) for every kernel.
    return [sys.executable, "-I", "-S", str(ZYGOTE), "run", path, *[f"--fd={fd}" for fd in fds], "--",
            *launcher]


class Sandbox:
    """One private directory (and, as root, one throwaway user) for one process.

    ``command(inner)`` is the launcher's command line that runs ``inner`` inside
    it, under ``settings`` (:class:`~autograders.common.settings.Settings`: its limits,
    its hidden directories, namespaces or not, the zygote or not); ``close()`` kills whatever the user left running and removes the directory.
    """

    def __init__(self, settings=DEFAULT, copy_from=None):
        self.settings = settings  # the limits, the directories to hide (autograders.common.settings)
        self.root = Path(tempfile.mkdtemp(prefix="mha-sandbox-"))
        self.work = self.root / "work"
        self.work.mkdir()
        self.uid = pick_uid() if os.geteuid() == 0 else None
        if copy_from:
            self._copy(Path(copy_from))
        if self.uid is not None:
            for path in [self.root, *self.work.rglob("*"), self.work]:
                os.chown(path, self.uid, self.uid, follow_symlinks=False)
        os.chmod(self.root, 0o700)

    def _copy(self, source, budget=100 * MiB):
        """The submission's other files (data, modules), not its notebooks, into the work directory."""
        for path in sorted(source.rglob("*")) if source.is_dir() else []:
            if path.is_file() and not path.is_symlink() and path.suffix != ".ipynb" and path.stat().st_size <= budget:
                budget -= path.stat().st_size
                target = self.work / path.relative_to(source)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)

    def command(self, inner, own=(), fds=(), zygote=None):
        """The command line that runs ``inner`` in this sandbox: the launcher's, through the
        warm zygote (:mod:`autograders.grading.zygote`) unless ``zygote`` (default: the sandbox's) is
        false. ``fds``: file descriptors besides the standard streams that ``inner`` uses."""
        from ..variants.current import handed_json

        settings = self.settings
        launch = Launch(settings, workdir=self.work, keep=self.root, uid=self.uid, own=own, variants=handed_json())
        cmd = [sys.executable, "-m", "autograders.grading.sandbox", launch.to_json(), "--", *inner]
        if settings.zygote if zygote is None else zygote:
            return zygote_command(cmd, fds)
        return cmd

    def env(self):
        """The environment to start the launcher with (it needs to import this package)."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
        return env

    def close(self):
        if self.uid is not None:
            kill_user(self.uid)
        shutil.rmtree(self.root, ignore_errors=True)


if __name__ == "__main__":
    launch()
