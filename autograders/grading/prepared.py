"""What every sandboxed kernel would otherwise redo at its start, done once per grading process.

A kernel starts in a new sandbox (:mod:`autograders.grading.sandbox`): its home and matplotlib's
configuration directory are empty, and it writes no bytecode (``PYTHONDONTWRITEBYTECODE``, read-only
mounts). Measured on 2026-12-05 (load average 6, 2 cores): matplotlib built its font list again in
every kernel (0.7 to 1.5 s), and where the checkout had no up-to-date ``__pycache__`` (a grader whose
environment sets ``PYTHONDONTWRITEBYTECODE``) each kernel compiled the workbook's modules it imports
(0.65 s). So, once per process, :func:`font_list` compiles the workbook's two packages where they lie
(when the checkout is writable) and has matplotlib build its font list in a sandbox of its own, running
nothing but that; each kernel's sandbox then gets its own copy of the list (what one student's code
does to its copy reaches no one else).
"""

import compileall
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

from .sandbox import PACKAGES, ROOT
from .sandbox_folder import Sandbox

FONT_LIST = "fontlist-*.json"  # matplotlib's cache (matplotlib.font_manager), named by its version
_lock = threading.Lock()
_built = {}  # {"fonts": the directory holding the list, or None when it could not be built}


def compile_packages():
    """Compile ``autograders`` and ``mha_core`` where they lie, if this user may write there (a
    read-only installation keeps what its installer compiled)."""
    for name in PACKAGES:
        path = ROOT / name
        if path.is_dir() and os.access(path, os.W_OK):
            compileall.compile_dir(str(path), quiet=2)


def _build(settings):
    box = Sandbox(settings)
    out = box.root / "fonts"  # what the sandbox writes is in its memory: the list is copied out here
    out.mkdir()
    if box.uid is not None:
        os.chown(out, box.uid, box.uid)
    copy = ("import glob, os, shutil, sys, matplotlib.font_manager\n"
            f"for path in glob.glob(os.path.join(os.environ['MPLCONFIGDIR'], {FONT_LIST!r})):\n"
            "    shutil.copy(path, sys.argv[1])")
    try:
        command = box.command([sys.executable, "-c", copy, str(out)])
        done = subprocess.run(command, env=box.env(), cwd=box.work, capture_output=True, timeout=120)
        found = sorted(out.glob(FONT_LIST))
        if done.returncode or not found:
            return None
        keep = Path(box.root.parent) / f"{box.root.name}-fonts"  # outlives the box, removed at exit
        keep.mkdir(mode=0o700)  # the grader's: each kernel gets a copy (Sandbox)
        for path in found:
            shutil.copyfile(path, keep / path.name)
        return keep
    except (OSError, subprocess.SubprocessError):
        return None
    finally:
        box.close()


def font_list(settings):
    """The directory holding matplotlib's font list as a kernel in a sandbox under ``settings`` builds
    it (built on the first call; None if it could not be: each kernel then builds its own, as before)."""
    with _lock:
        if "fonts" not in _built:
            compile_packages()
            _built["fonts"] = _build(settings)
            if _built["fonts"] is not None:
                import atexit

                atexit.register(shutil.rmtree, _built["fonts"], True)
        return _built["fonts"]


def forget():
    """Forget the font list built (its folder is being removed): built again on the next call."""
    with _lock:
        _built.clear()
