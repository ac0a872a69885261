"""A sandbox as the grader holds it (:class:`Sandbox`): one private folder and, as root, one throwaway
user for one process, and the command line that starts that process in it through the launcher,
:mod:`autograders.grading.sandbox`, which sets the limits and execs bubblewrap.

The folder goes where a kernel's sockets inside it stay within a Unix socket's path (:func:`sandbox_parent`);
it holds the submission's other files and matplotlib's font list, copied in (never a link followed); as root it
is the throwaway user's (:func:`pick_uid`), whose processes are killed when the sandbox closes
(:func:`kill_user`).
"""

import os
import random
import shutil
import signal
import sys
import tempfile
from pathlib import Path

from . import sandbox
from ..student.numbers import handed_json
from ..student.settings import DEFAULT, MiB

LAUNCHER = os.path.abspath(sandbox.__file__)  # run as a plain script, without site: the standard library only
UID_RANGE = (3_000_000, 3_900_000)  # throwaway uids, one per process
SOCKET_PATH_MAX = 107  # a Unix socket's path, in bytes (sun_path's 108, its NUL included)
LONGEST_SOCKET = "mha-sandbox-xxxxxxxx/sockets/kernel-99999"  # a kernel's socket, from the sandbox's folder on


def sandbox_parent():
    """Where a sandbox's folder goes: the temporary folder (``TMPDIR``, a grading's own folder), or ``/tmp``
    when a kernel's sockets there would be longer than a Unix socket's path may be (a deep ``TMPDIR``: every
    kernel failed to start with "File name too long")."""
    base = tempfile.gettempdir()
    return base if len(os.fsencode(os.path.join(base, LONGEST_SOCKET))) <= SOCKET_PATH_MAX else "/tmp"


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
    """SIGKILL every process of ``uid`` (the throwaway user: whatever a process left behind, should it
    have run without a PID namespace of its own)."""
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


class Sandbox:
    """One private directory (and, as root, one throwaway user) for one process.

    ``command(inner)`` is the launcher's command line that runs ``inner`` inside
    it, under ``settings`` (:class:`~autograders.student.settings.Settings`: its limits,
    its hidden directories, namespaces or not); ``close()`` kills whatever the user left running
    and removes the directory.
    """

    def __init__(self, settings=DEFAULT, copy_from=None, fonts=None, library=None):
        self.settings = settings  # the limits, the directories to hide (autograders.student.settings)
        self.library = library  # the grading copy of mha_core (autograders.grading.library_copy), or None
        self.root = Path(tempfile.mkdtemp(prefix="mha-sandbox-", dir=sandbox_parent()))
        self.work = self.root / "work"
        self.work.mkdir()
        self.uid = pick_uid() if os.geteuid() == 0 else None
        if copy_from:
            self._copy(Path(copy_from))
        if fonts:  # matplotlib's font list, built once (autograders.grading.prepared): a copy of its own
            shutil.copytree(fonts, self.work / ".matplotlib", dirs_exist_ok=True)
        if self.uid is not None:  # its directory the throwaway user's; the folder around it stays the grader's
            for path in [*self.work.rglob("*"), self.work]:
                os.chown(path, self.uid, self.uid, follow_symlinks=False)
        os.chmod(self.root, 0o711 if self.uid is not None else 0o700)

    def _copy(self, source, budget=100 * MiB):
        """The submission's other files (data, modules), not its notebooks, into the work directory."""
        for path in sorted(source.rglob("*")) if source.is_dir() else []:
            if path.is_symlink() or not path.is_file() or path.stat().st_nlink > 1:  # never followed (read as the grader)
                continue
            if path.suffix != ".ipynb" and path.stat().st_size <= budget:
                budget -= path.stat().st_size
                target = self.work / path.relative_to(source)
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, target)

    def command(self, inner, own=()):
        """The command line that runs ``inner`` in this sandbox (the launcher's, as a plain script without
        site: the standard library only, no .pth file's imports for every process)."""
        launch = sandbox.Launch(self.settings, workdir=self.work, keep=self.root, uid=self.uid, own=own,
                                variants=handed_json(), library=str(self.library) if self.library else None)
        return [sys.executable, "-I", "-S", LAUNCHER, launch.to_json(), "--", *inner]

    def env(self):
        """The environment to start the launcher with (the command inside imports this package)."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in [str(sandbox.ROOT), env.get("PYTHONPATH", "")] if p)
        return env

    def close(self):
        if self.uid is not None:
            kill_user(self.uid)
        shutil.rmtree(self.root, ignore_errors=True)
