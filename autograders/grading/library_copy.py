"""The library as a graded kernel sees it: a copy of ``mha_core`` that computes no graded answer.

``mha_core.graded`` declares which of the library's modules answer a graded problem and which draw;
:func:`grading_copy` writes, once per grading process and for each content of the library, a folder
``mha_core`` in which those are stand-ins (a few lines each, none of the library's code) and the
others are copied as they are, compiled. The sandbox (:mod:`autograders.grading.sandbox`) binds it
wherever the kernel could import ``mha_core`` from: the real package, its source and its bytecode are
not there to read. A module the declaration does not name stops the build: a new module is declared
before it is graded with.
"""

import atexit
import compileall
import hashlib
import shutil
import tempfile
import threading
from pathlib import Path

from .sandbox import ROOT

STAND_IN = '''"""{module} while your work is graded: a stand-in (mha_core.graded)."""
from mha_core.graded import stand_in as _stand_in

__getattr__ = _stand_in(__name__, answers={answers})
'''

_lock = threading.Lock()
_built = {}  # {the library's content: the folder holding the copy}


def _files(source):
    """The library's files, relative to ``source``, each with its kind (``mha_core.graded.kind``)."""
    from mha_core import graded

    for path in sorted(source.rglob("*")):
        relative = path.relative_to(source)
        if not path.is_file() or "__pycache__" in relative.parts or path.suffix == ".pyc":
            continue
        module = ".".join(relative.with_suffix("").parts) if path.suffix == ".py" else relative.parts[0]
        found = graded.kind(module.removesuffix(".__init__"))
        if found is None:
            raise RuntimeError(f"mha_core/{relative} is not declared in mha_core/graded.py (ANSWERS, VIEWS or KEPT)")
        yield relative, found


def _key(source):
    digest = hashlib.sha256()
    for relative, found in _files(source):
        digest.update(f"{relative}\0{found}\0".encode())
        if found == "kept":
            digest.update((source / relative).read_bytes())
    return digest.hexdigest()[:16]


def build(source, into):
    """Write the grading copy of the package at ``source`` as ``into/mha_core``; return that folder."""
    target = Path(into) / "mha_core"
    for relative, found in _files(source):
        if found != "kept" and relative.suffix != ".py":
            continue  # a data file of a stand-in's (the learned weights, a figure's template): not needed
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        if found == "kept":
            shutil.copyfile(source / relative, path)
        else:
            module = ".".join(("mha_core", *relative.with_suffix("").parts)).removesuffix(".__init__")
            path.write_text(STAND_IN.format(module=module, answers=found == "answers"))
    for path in [target, *target.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    compileall.compile_dir(str(target), quiet=2)
    for path in target.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return target


def grading_copy(source=ROOT / "mha_core"):
    """The folder ``mha_core`` a graded kernel imports (built on the first call for this content of
    the library, removed when this process exits)."""
    source = Path(source)
    with _lock:
        key = _key(source)
        if key not in _built or not _built[key].is_dir():
            folder = Path(tempfile.mkdtemp(prefix=f"mha-library-{key}-"))
            folder.chmod(0o755)  # read by a throwaway user's kernel (the sandbox binds it read-only)
            atexit.register(shutil.rmtree, folder, True)
            _built[key] = build(source, folder)
        return _built[key]
