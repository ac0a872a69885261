"""The workbook's two editions, built from the source notebooks in ``notebooks/``.

``practice`` (self-study, ``python -m autograders practice --out workbook``): answers
blank (nbgrader's stubs), hidden tests removed, visible tests and nbgrader cell
metadata kept (JupyterLab's Validate button works), each worked solution folded
with its problem's code solution into a collapsed ``<details>`` callout. Notebooks
without graded cells (the self-test) are copied as they are. A rebuild never
overwrites a notebook the student changed: ``.manifest.json`` records the sha256
of each file as built; a changed file is left alone and the new build is written
beside it as ``<stem>.new.ipynb``.

``release`` (graded, ``python -m autograders release --course course``): an
nbgrader course directory with one assignment per level (assignment name =
notebook stem), released with ``nbgrader generate_assignment``; the course's
``nbgrader_config.py`` puts ``DropWorkedSolutions`` in front of GenerateAssignment's
preprocessors, so ``source/`` keeps the worked solutions and ``release/`` has none.
"""

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat

from .nbgrader_ext import PRACTICE_PREPROCESSORS, WORKED_SOLUTION_TAG

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "notebooks"
MANIFEST = ".manifest.json"
COURSE_ID = "mha-workbook"
CELL_TIMEOUT = 30  # seconds per cell, for nbgrader's autograde and validate

# Marks that must not survive into a student's copy.
LEAKS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS")


def read(path):
    return nbformat.read(str(path), as_version=4)


def dumps(nb):
    return nbformat.writes(nb) + "\n"


def is_graded(nb):
    """True when ``nb`` has nbgrader answer or test cells (a level, not the self-test)."""
    return any(
        cell.metadata.get("nbgrader", {}).get("solution") or cell.metadata.get("nbgrader", {}).get("grade")
        for cell in nb.cells
    )


def source_notebooks(source=SOURCE):
    return sorted(Path(source).glob("*.ipynb"))


def assignments(source=SOURCE):
    """The graded source notebooks: one nbgrader assignment each, named by its stem."""
    return [path for path in source_notebooks(source) if is_graded(read(path))]


def leaks(nb, folded=True):
    """Solutions, hidden tests or worked solutions left in a student's notebook ``nb``.

    With ``folded``, a worked solution folded into a ``<details>`` callout is allowed
    (the practice edition); otherwise any worked solution is a leak (the release).
    """
    found = []
    for cell in nb.cells:
        found += [f"{cell.get('id')}: {mark}" for mark in LEAKS if mark in cell.source]
        if WORKED_SOLUTION_TAG in cell.metadata.get("tags", []):
            if not folded or not cell.source.startswith("<details>"):
                found.append(f"{cell.get('id')}: a worked solution")
    return found


# --- practice edition --------------------------------------------------------


def practice_notebook(nb):
    """The practice edition of the source notebook ``nb`` (a new notebook)."""
    nb = nbformat.from_dict(json.loads(json.dumps(nb)))  # a deep copy
    resources = {}
    for preprocessor in PRACTICE_PREPROCESSORS:
        nb, resources = preprocessor().preprocess(nb, resources)
    nb.metadata.pop("celltoolbar", None)
    return nb


def practice_text(path):
    """The practice edition of the notebook file ``path``, as the text to write."""
    text = Path(path).read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=4)
    if not is_graded(nb):
        return text  # the self-test: copied through
    built = practice_notebook(nb)
    problems = leaks(built)
    if problems:
        raise RuntimeError(f"{path}: the practice edition would show {', '.join(problems)}")
    return dumps(built)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


class Manifest:
    """``<out>/.manifest.json``: the sha256 of each file as it was last built."""

    def __init__(self, out):
        self.path = Path(out) / MANIFEST
        self.hashes = json.loads(self.path.read_text())["files"] if self.path.exists() else {}

    def untouched(self, path):
        """True when ``path`` is still exactly as built (so a rebuild may replace it)."""
        return path.exists() and self.hashes.get(path.name) == sha256(path.read_bytes())

    def write(self, path, data):
        """Write ``data`` to ``path`` (atomically; not at all if it is there already) and record it."""
        if not path.exists() or path.read_bytes() != data:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        self.hashes[path.name] = sha256(data)

    def save(self):
        self.path.write_text(json.dumps({"files": dict(sorted(self.hashes.items()))}, indent=1) + "\n")


def place(out, name, data, manifest, say=print):
    """Write ``data`` to ``out/name`` unless the student changed that file; return the path written (or None)."""
    target = Path(out) / name
    beside = target.with_name(f"{target.stem}.new{target.suffix}")
    if not target.exists() or manifest.untouched(target) or target.read_bytes() == data:
        if not target.exists() or target.read_bytes() != data:
            say(f"built {target}")
        manifest.write(target, data)
        if manifest.untouched(beside):  # a build left beside an older copy, no longer needed
            beside.unlink()
            del manifest.hashes[beside.name]
        return target
    if beside.exists() and not manifest.untouched(beside) and beside.read_bytes() != data:
        say(f"kept {target} and {beside} (both changed by you); the new build was not written")
        return None
    manifest.write(beside, data)
    say(f"kept {target} (you changed it); the new build is in {beside}")
    return beside


def build_practice(out="workbook", source=SOURCE, say=print):
    """Build the practice edition of every notebook in ``source`` into ``out``; return the paths written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(out)
    written = []
    for path in source_notebooks(source):
        data = practice_text(path).encode("utf-8")
        written.append(place(out, path.name, data, manifest, say))
    manifest.save()
    say(f"practice edition: {len(written)} notebooks in {out} (a notebook you changed is never overwritten)")
    return [p for p in written if p is not None]


# --- graded release ----------------------------------------------------------

CONFIG = '''\
"""nbgrader configuration of the workbook's course; written by `python -m autograders release`."""

import os

from autograders.nbgrader_ext import release_preprocessors

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
here = os.path.dirname(os.path.abspath(__file__))

c.CourseDirectory.root = here
c.CourseDirectory.course_id = {course_id!r}
# SQLite allows one writer at a time: wait up to 30 s for a lock (two autograde
# runs, or formgrader open while grading) rather than fail at once.
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(here, "gradebook.db") + "?timeout=30"

# The release drops the worked solutions before nbgrader's own steps
# (solutions replaced by the stub, hidden tests removed, cells locked).
c.GenerateAssignment.preprocessors = release_preprocessors()
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Autograde and validate: a cell that runs longer than this is interrupted and
# fails; the rest of the notebook still runs.
c.Execute.timeout = {timeout}
c.Execute.interrupt_on_timeout = True
c.Execute.execute_retries = 0

# A test cell scores 0 if it writes to stderr: ignore matplotlib's
# one-off font-cache notice rather than fail a student's test for it.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"Matplotlib is building the font cache"

# Autograde runs each submission in a sandboxed kernel (autograders/sandbox.py):
# memory, file-size and output limits, no network, this course hidden, a
# throwaway user; a timeout, crash or memory blow-up costs only its own cell.
from autograders import sandbox  # noqa: E402

sandbox.configure(c, course=here, hide=[{course!r}])
'''


def write_config(course):
    """Write the course's nbgrader_config.py, and load it once here: nbgrader only logs
    a broken config file and goes on with its defaults (worked solutions and all)."""
    from traitlets.config.loader import PyFileConfigLoader

    path = Path(course) / "nbgrader_config.py"
    path.write_text(CONFIG.format(course_id=COURSE_ID, timeout=CELL_TIMEOUT, course=str(Path(course).resolve())))
    PyFileConfigLoader(path.name, path=str(path.parent)).load_config()
    return path


def nbgrader_env():
    """The environment for an nbgrader subprocess: this interpreter's bin/ first on PATH (for alembic)."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.setdefault("MPLBACKEND", "Agg")
    return env


def nbgrader(course, *args, check=True, capture=False):
    """Run ``nbgrader ARGS`` in the course directory with this interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "nbgrader", *args],
        cwd=course,
        env=nbgrader_env(),
        check=check,
        text=True,
        capture_output=capture,
    )


def build_release(course="course", source=SOURCE, force=False, say=print):
    """Create the nbgrader course in ``course`` and release every level; return the assignment names.

    An assignment already released is left as it is (submissions may exist for
    it, and nbgrader cannot add or remove graded cells then) unless ``force``.
    One ``nbgrader generate_assignment "*"`` releases them all (nbgrader itself
    skips those already released): nbgrader takes seconds just to start.
    """
    course = Path(course).resolve()
    course.mkdir(parents=True, exist_ok=True)
    write_config(course)
    names, pending = [], []
    for path in assignments(source):
        names.append(path.stem)
        released = course / "release" / path.stem / path.name
        if released.exists() and not force:
            say(f"{path.stem}: already released in {released.parent} (use --force to release again)")
            continue
        target = course / "source" / path.stem
        target.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target / path.name)
        pending.append(released)
    if pending:
        nbgrader(course, "generate_assignment", "*", *(["--force"] if force else []), "--log-level=WARN")
    for released in pending:
        problems = leaks(read(released), folded=False)
        if problems:
            raise RuntimeError(f"{released}: the release shows {', '.join(problems)}")
        say(f"{released.parent.name}: released to {released}")
    return names
