"""Where a student's code runs when it is graded: a bubblewrap sandbox.

nbgrader executes a submission in an ordinary Jupyter kernel that can read and write whatever
the grader's user can, reach the network and eat all memory. The course's ``nbgrader_config.py``
(see :func:`autograders.grading.autograde.configure`) replaces nbgrader's ``Execute`` step by
``SandboxExecute``, which starts each kernel (a submission's one process) through::

    python -m autograders.grading.sandbox LAUNCH_JSON -- COMMAND...

``LAUNCH_JSON`` is one :class:`Launch`: the course's settings as
:meth:`~autograders.student.settings.Settings.as_dict` gives them (limits, directories to hide),
the private directory and the throwaway user. The launcher sets what bubblewrap has no option for,
the resource limits (address space, file size, open files, no core dumps; processes, counted per
user, for a throwaway user only), strips the environment, and execs bubblewrap (``bwrap``, Debian's
``bubblewrap``, Flatpak's sandbox; tried with 0.8.0), which does the isolation: new mount, PID,
network, IPC and UTS namespaces, ``--die-with-parent``, ``--new-session``, a root file system built
from an allow-list of read-only binds (:data:`SYSTEM_DIRS`, the Python installation and the
workbook's two packages; nothing of the repository or the course), everything it may write in
memory and capped in total (its directory, ``/tmp``, ``/var/tmp``, ``/dev/shm``). The kernel is
exec'd, never forked from a process of the grader's: nothing of the grader is in its memory. As
root, bubblewrap runs privileged and the command inside starts through ``setpriv`` (util-linux) as
a fresh uid with no groups, no capabilities and ``no_new_privs``. A grader that is not root runs
bubblewrap unprivileged, in a new user namespace (its own uid, no capabilities).

Where bubblewrap cannot make its sandbox (no ``bwrap``, user namespaces refused) the launcher
refuses (:class:`Refused`), unless the course asks for unisolated grading (``unisolated``, the
``--unisolated`` option of ``grade``): then the command runs with the limits, the stripped
environment and, as root, a throwaway user (never root itself: refused where that user could not
read Python), and its report says "unisolated (why)". Each process reports what it got in
``$MHA_SANDBOX`` (JSON). This module imports the standard library only. The grader's side of a
sandbox, its private folder, its throwaway user and this launcher's command line, is
:class:`autograders.grading.sandbox_folder.Sandbox`.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the checkout: autograders/ and mha_core/

if __package__:
    from ..student.settings import DEFAULT, MiB, Settings
else:  # run as a plain script: the settings module (autograders/student/settings.py), by its path
    import importlib.util

    _spec = importlib.util.spec_from_file_location("_mha_settings", Path(__file__).resolve().parents[1] / "student" / "settings.py")
    _settings = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_settings)
    DEFAULT, MiB, Settings = _settings.DEFAULT, _settings.MiB, _settings.Settings

# The sandbox's file system: these read-only, with the Python installation and the workbook's two
# packages (the checks compute their expected values; no file of theirs holds a solution or a hidden
# test: tests/test_sandbox.py reads them all); private and empty: the temporary directories; read-write:
# the process's own directory. Nothing else exists for it: not the repository (its .git, notebooks/,
# tests/), not the course, not /root, /home, /run.
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys")
PACKAGES = ("autograders", "mha_core")
# Of the workbook, a graded kernel is shown what a student's own Python has (autograders.student: no answer,
# no check) and the library; the rest of autograders (the declarations, the checks, grading) stays with the
# grader. With the tests run in the kernel (--no-recheck, trusted work only), the whole package.
STUDENT_SIDE = ("mha_core", "autograders/__init__.py", "autograders/student")
PRIVATE_DIRS = ("/tmp", "/var/tmp", "/dev/shm")
BWRAP, SETPRIV = "bwrap", "setpriv"
NAMESPACES = ("--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try")

# The environment a process keeps; everything else (tokens, the grader's paths) is dropped.
KEEP_ENV = ("PATH", "JPY_PARENT_PID", "LANG", "LANGUAGE", "TZ", "PYTHONPATH", "MPLBACKEND", "NBGRADER_EXECUTION",
            "JPY_SESSION_NAME", "MHA_CORE_DRAW")
KEEP_ENV_PREFIXES = ("LC_",)

HANDED_ENV = "MHA_VARIANTS_HANDED"  # the student's numbers, as the grader decided them (autograders.student.numbers)


def _under(path, parent):
    path, parent = os.path.abspath(path), os.path.abspath(parent)
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _is_checkout(root):
    """True when ``root`` (the directory holding the packages) is the project's source tree, not site-packages."""
    if root.name in ("site-packages", "dist-packages"):  # an installed copy (its neighbours: numpy and the rest)
        return False
    return any((root / name).exists() for name in (".git", "pyproject.toml", "notebooks", "tests"))


def _reachable(path):
    """True when a user of its own could reach ``path`` (every directory above it searchable by others)."""
    path = Path(os.path.realpath(path))
    return all(os.stat(p).st_mode & 0o001 for p in path.parents) and bool(os.stat(path).st_mode & 0o004)


# --- the launcher: limits, environment, then bubblewrap -----------------------------


def _root_file_system(keep, workdir, hide, disk, whole=False, library=None):
    """bubblewrap's arguments for the sandbox's file system (see :data:`SYSTEM_DIRS`), and what
    its report says: (arguments, the read-only paths, the covered ones). ``hide``: paths to cover
    should they lie inside a directory shown (with the repository, when the packages are its own).
    What the kernel may write is in memory, ``disk`` bytes in all: ``workdir`` is a tmpfs of half of
    it (the files the grader put there copied in), the private directories share the other half. Of the
    workbook's packages: :data:`STUDENT_SIDE`, or both whole (``whole``: the tests run in the kernel).
    ``library``: the grading copy of ``mha_core`` (:mod:`autograders.grading.library_copy`), bound in
    place of every ``mha_core`` the kernel could import or read (:func:`_library_places`)."""
    venv = Path(sys.executable).parent.parent  # the launcher runs without site (-S): sys.prefix is the base's
    prefixes = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]
    prefixes = sorted({os.path.realpath(p) for p in prefixes + ([venv] if (venv / "pyvenv.cfg").is_file() else [])})
    if "/" in prefixes:
        raise OSError("Python is installed in / itself: no installation to show alone")
    packages = [os.path.realpath(ROOT / name) for name in (PACKAGES if whole else STUDENT_SIDE)
                if (ROOT / name).exists() and not (library and name == "mha_core")]
    hidden = [os.path.realpath(p) for p in hide]
    args = ["--proc", "/proc", "--dev", "/dev"]
    for path, share in zip(PRIVATE_DIRS, (4, 8, 8)):
        args += ["--perms", "1777", "--size", str(max(MiB, disk // share)), "--tmpfs", path]
    shown, covered, made = [], [], set()

    def bind(path, how="--ro-bind", source=None):
        parts = Path(path).parts
        for i in range(2, len(parts)):  # the directories on the way, searchable (bubblewrap copies a 0700 /root's mode)
            way = str(Path(*parts[:i]))
            inside = any(_under(way, s) for s in shown) and not any(_under(way, c) for c in covered)
            if way not in made and not inside and not os.path.islink(way):
                made.add(way)
                args.extend(["--perms", "0755", "--dir", way])
        args.extend([how, source or path, path])

    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]  # /bin -> usr/bin
        elif os.path.isdir(path):
            bind(path)
            shown.append(path)
    for path in [*prefixes, *packages]:
        if not any(_under(path, s) for s in shown):
            bind(path)
            shown.append(path)
    grader_side = [] if whole else [os.path.realpath(ROOT / "autograders")]  # covered, the student side bound back
    for path in ([str(ROOT)] if _is_checkout(ROOT) else []) + grader_side + hidden:
        if any(_under(path, s) for s in shown) and os.path.isdir(path) and not any(_under(path, c) for c in covered):
            args += ["--tmpfs", path]  # inside a directory shown: covered, and what is wanted of it bound back
            covered.append(path)
    for path in [*prefixes, *packages]:
        if any(_under(path, c) for c in covered):
            bind(path)
    for path in _library_places(prefixes) if library else ():
        bind(path, source=os.path.realpath(library))
    for path in covered:
        args += ["--remount-ro", path]
    bind(os.path.realpath(keep), "--bind")
    args += ["--perms", "0777", "--size", str(max(MiB, disk // 2)), "--tmpfs", workdir, *_copied_in(workdir)]
    args += ["--remount-ro", "/", "--chdir", workdir]
    return args, sorted({*shown, *packages}), sorted({*covered, *hidden})


def _library_places(prefixes):
    """Where a kernel could import or read ``mha_core`` from: the workbook's own, and any installed in
    the Python shown (a site-packages of one of ``prefixes``)."""
    places = {os.path.realpath(ROOT / "mha_core")}
    for prefix in prefixes:
        for packages in Path(prefix).glob("lib*/python*/*-packages"):
            if (packages / "mha_core").is_dir():
                places.add(os.path.realpath(packages / "mha_core"))
    return sorted(places)


def _copied_in(workdir):
    """bubblewrap's arguments that copy the files the grader left in ``workdir`` (the submission's other
    files, matplotlib's font list) into the tmpfs mounted over it: each read from a descriptor opened here
    (``--file FD DEST``, inherited by bubblewrap). Links are never followed."""
    args = []
    for path in sorted(Path(workdir).rglob("*")):
        if path.is_symlink():
            continue
        if path.is_dir():
            args += ["--perms", "0777", "--dir", str(path)]
        elif path.is_file():
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
            os.set_inheritable(fd, True)
            args += ["--perms", "0666", "--file", str(fd), str(path)]
    return args


def why_not_isolated():
    """None when bubblewrap can isolate a kernel on this machine, for this user; else why not."""
    return _bubblewrap(_flags(os.geteuid() == 0))


def why_not_unisolated():
    """None when unisolated grading can keep students' code off root's account here (a grader that is not
    root; or root, with Python and the workbook readable by a throwaway user); else why not."""
    if os.geteuid() != 0:
        return None
    unreachable = [p for p in (sys.executable, ROOT / "autograders") if not _reachable(p)]
    if unreachable:
        return (f"unisolated grading as root runs students' code as a throwaway user, who cannot read "
                f"{unreachable[0]}: install the workbook where every user may read it, or install bubblewrap")
    return None


def _flags(root):
    return [*NAMESPACES, "--die-with-parent", "--new-session", *([] if root else ["--unshare-user"])]


def _bubblewrap(flags):
    """None when bubblewrap makes ``flags``' namespaces for this user, else why not (its own words)."""
    if not shutil.which(BWRAP):
        return "bubblewrap is not installed: apt-get install bubblewrap"
    try:
        probe = subprocess.run([BWRAP, *flags, "--ro-bind", "/", "/", "true"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as error:
        return str(error)
    return None if probe.returncode == 0 else (probe.stderr.strip().splitlines() or ["bwrap failed"])[-1][:300]


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
        hard = resource.getrlimit(which)[1]  # a grader without CAP_SYS_RESOURCE may not raise it
        if value and value > 0:
            value = value if hard == resource.RLIM_INFINITY else min(value, hard)
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
    if report.get("filesystem") == "isolated" and "JPY_PARENT_PID" in env:
        # In its own PID namespace a kernel's parent is bubblewrap's init, pid 1: ipykernel watches no parent
        # then (bubblewrap's --die-with-parent does that job); the grader's pid would read as its death.
        env["JPY_PARENT_PID"] = "1"
    if args.variants:
        env[HANDED_ENV] = args.variants
    if args.library and report.get("filesystem") != "isolated":  # no binds: the copy comes first on the path
        env["PYTHONPATH"] = os.pathsep.join(p for p in [os.path.dirname(args.library), env.get("PYTHONPATH")] if p)
    env.setdefault("MPLBACKEND", "Agg")
    return env


class Launch:
    """What the launcher is asked to do, in one value: isolate under ``settings`` (a
    :class:`~autograders.student.settings.Settings`: the limits, the directories to hide, namespaces
    or not), work in ``workdir`` (working directory and home), keep ``keep`` visible (default:
    ``workdir``), become the throwaway ``uid`` (as root) and hand it the files ``own``; ``variants``: the
    student's numbers (JSON) for the command's :data:`HANDED_ENV`, or None; ``library``: the folder of the
    grading copy of ``mha_core`` to show in place of the library, or None (the library itself)."""

    FIELDS = ("settings", "workdir", "keep", "uid", "own", "variants", "library")

    def __init__(self, settings=DEFAULT, workdir=None, keep=None, uid=None, own=(), variants=None, library=None):
        if not workdir:
            raise ValueError("workdir: the launcher needs a private directory to work in")
        if uid is not None and (type(uid) is not int or uid < 0):
            raise ValueError(f"uid: expected a user id (an int >= 0), got {uid!r}")
        self.settings, self.workdir, self.keep = settings, str(workdir), str(keep) if keep else None
        if variants is not None and type(variants) is not str:
            raise ValueError(f"variants: expected the numbers as a JSON string, got {type(variants).__name__}")
        self.uid, self.own, self.variants = uid, [str(p) for p in own], variants
        if library is not None and type(library) is not str:
            raise ValueError(f"library: expected a folder's path, got {type(library).__name__}")
        self.library = library

    def to_json(self):
        return json.dumps({"settings": self.settings.as_dict(), "workdir": self.workdir, "keep": self.keep,
                           "uid": self.uid, "own": self.own, "variants": self.variants,
                           "library": self.library}, sort_keys=True)

    @classmethod
    def from_json(cls, text):
        data = json.loads(text)
        if type(data) is not dict or set(data) - set(cls.FIELDS):
            raise ValueError(f"LAUNCH_JSON: expected an object with the keys {', '.join(cls.FIELDS)}")
        return cls(Settings.from_dict(data.get("settings") or {}), data.get("workdir"), data.get("keep"),
                   data.get("uid"), data.get("own") or (), data.get("variants"), data.get("library"))


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
    """Set the limits, then exec ``COMMAND`` in bubblewrap (see the module's docstring); refuse, in one
    line on stderr, where that cannot be done safely."""
    args, command = parse(sys.argv[1:] if argv is None else argv)
    try:
        argv, env = isolate(args, command)
    except Refused as error:
        raise SystemExit(f"sandbox: refused: {error}") from None
    os.execvpe(argv[0], argv, env)


class Refused(Exception):
    """bubblewrap cannot isolate the kernel, and running it without would not be safe or was not asked for."""


def isolate(args, command):
    """Set this process's limits as the launcher's ``args`` (a :class:`Launch`) say; return (the command
    line that runs ``command`` isolated, its environment). Raises :class:`Refused` where bubblewrap cannot
    make its sandbox and the settings do not ask for unisolated grading, or where that would run the
    kernel as root (no throwaway user, or one that could not read Python)."""
    settings = args.settings
    report = {"memory": settings.memory, "file_size": settings.file_size,
              "library": "the grading copy" if args.library else "whole"}
    root = os.geteuid() == 0
    dropping = root and args.uid is not None
    refused = _bubblewrap(_flags(root))
    wrapper = []
    if refused is None:
        keep = args.keep or args.workdir
        try:
            mounts, report["visible"], report["hidden"] = _root_file_system(keep, args.workdir, settings.hide,
                                                                            settings.disk, settings.tests_in_kernel,
                                                                            args.library)
        except OSError as error:
            refused = str(error)
        else:
            wrapper = [BWRAP, *_flags(root), *mounts, "--"]
            report["filesystem"] = report["network"] = "isolated"
            report["writable"] = [args.workdir, os.path.realpath(keep), *PRIVATE_DIRS]
    if refused is not None:
        if not settings.unisolated:
            raise Refused(f"bubblewrap cannot isolate students' code here ({refused}); install it "
                          "(apt-get install bubblewrap) or, for trusted work only, grade with --unisolated")
        report["filesystem"] = report["network"] = f"unisolated ({refused})"
        if root and not dropping:
            raise Refused("unisolated grading as root needs a throwaway user for the kernel")
        unsafe = why_not_unisolated()
        if unsafe:
            raise Refused(unsafe)
    _limits(settings, dropping)
    os.chdir(args.workdir)
    if dropping:
        for path in args.own:
            os.chown(path, args.uid, args.uid)
        wrapper += [SETPRIV, f"--reuid={args.uid}", f"--regid={args.uid}", "--clear-groups", "--inh-caps=-all",
                    "--bounding-set=-all", "--no-new-privs", "--"]
        report["user"] = args.uid
    else:
        wrapper += [SETPRIV, "--no-new-privs", "--"] if refused is not None and shutil.which(SETPRIV) else []
        report["user"] = f"unchanged ({os.getuid()})"
    return [*wrapper, *command], _environment(args, report)


if __name__ == "__main__":
    launch()
