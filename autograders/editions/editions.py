"""The workbook's two editions, built from the source notebooks in ``notebooks/``.

``practice`` (self-study, ``python -m autograders practice --out workbook``): answers
blank (the placeholder alone, ``x = None``; a function keeps nbgrader's stub),
hidden tests removed, visible tests and nbgrader cell metadata kept (JupyterLab's
Validate button works), each worked solution folded with its problem's code
solution into a collapsed ``<details>`` callout, each rubric into its own. Notebooks
without graded cells (the self-test) are copied as they are; ``START.md`` (the
levels, how to work, how to get feedback) is written beside them. A rebuild never
overwrites a notebook the student changed: ``.manifest.json`` records what each
file held as built (a notebook's cell types and sources: opening and saving it
changes neither); a changed file is left alone and, only when the workbook's source
changed since that file was built, the new build is written beside it as
``<stem>.new.ipynb``. Each file written is said in one line with why; a rebuild that
writes nothing says so in one line.

``release`` (graded, ``python -m autograders release --course course``): an
nbgrader course directory with one assignment per level (assignment name =
notebook stem), released with ``nbgrader generate_assignment``. ``source/`` holds
the graded edition of each notebook (:func:`graded_notebook`: a labelled choice's
visible test checks only the form, its full check moves to the hidden tests); the
course's ``nbgrader_config.py`` puts ``DropWorkedSolutions`` and ``DropRubrics`` in
front of GenerateAssignment's preprocessors, so ``source/`` keeps the worked
solutions and rubrics and ``release/`` has none, and autograde puts each rubric
back for the grader (``autograders.grading.rubrics.InsertRubrics``).

In both, a written answer (a markdown cell graded by hand) keeps its first line,
``**Written answer, Problem 3.2:**``, which the source writes outside the solution
region: nbgrader's Validate prints a blank answer's text before "You did not provide a
response.", so that line names the problem left blank. Both builds refuse a written
answer without it (:func:`unnamed_written_answers`).
"""

import ast
import hashlib
import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat

from ..common.regions import first_hidden_line
from ..student.settings import DEFAULT
from .placeholders import fill, unfilled
from .preprocessors import PRACTICE_PREPROCESSORS, RUBRIC_TAG, WORKED_SOLUTION_TAG, kernel_language_info

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "notebooks"
MANIFEST = ".manifest.json"
COURSE_ID = "mha-workbook"
CELL_TIMEOUT = DEFAULT.cell_timeout  # seconds per cell, for nbgrader's autograde and validate (common/settings.py)

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


WRITTEN_HEADER = "**Written answer, Problem {problem}:**"


def unnamed_written_answers(nb):
    """The written answers of a student's notebook ``nb`` whose first line does not name
    their problem (:data:`WRITTEN_HEADER`, the problem read off the grade_id ``q3_2_...``)."""
    found = []
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "markdown" and meta.get("solution") and meta.get("grade"):
            match = re.match(r"q(\d+)_(\d+)_", meta.get("grade_id", ""))
            header = WRITTEN_HEADER.format(problem=f"{match[1]}.{match[2]}") if match else "**Written answer, ...**"
            if cell.source.split("\n")[0] != header:
                found.append(f"{meta.get('grade_id')}: its first line is not {header!r}")
    return found


def leaks(nb, folded=True):
    """Solutions, hidden tests, worked solutions or rubrics left in a student's notebook ``nb``, or a number
    left unfilled (``{{d_k}}``, :mod:`.placeholders`).

    With ``folded``, a worked solution or rubric folded into a ``<details>`` callout is
    allowed (the practice edition); otherwise any of them is a leak (the release).
    """
    found = [f"{where} unfilled" for where in unfilled(nb)]
    for cell in nb.cells:
        found += [f"{cell.get('id')}: {mark}" for mark in LEAKS if mark in cell.source]
        for tag, what in ((WORKED_SOLUTION_TAG, "a worked solution"), (RUBRIC_TAG, "a rubric")):
            if tag in cell.metadata.get("tags", []) and (not folded or not cell.source.startswith("<details>")):
                found.append(f"{cell.get('id')}: {what}")
    return found


# --- practice edition --------------------------------------------------------


def practice_notebook(nb, where="a notebook"):
    """The practice edition of the source notebook ``nb`` (a new notebook), its numbers filled in."""
    nb = fill(nb, where)  # a deep copy
    resources = {}
    for preprocessor in PRACTICE_PREPROCESSORS:
        nb, resources = preprocessor().preprocess(nb, resources)
    nb.metadata.pop("celltoolbar", None)
    return nb


def practice_text(path):
    """The practice edition of the notebook file ``path``, as the text to write."""
    text = Path(path).read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=4)
    if not is_graded(nb):  # the self-test: copied through, its numbers filled, with the kernel's language_info
        nb = fill(nb, path)
        nb.metadata["language_info"] = kernel_language_info()
        return dumps(nb)
    built = practice_notebook(nb, path)
    problems = leaks(built)
    if problems:
        raise RuntimeError(f"{path}: the practice edition would show {', '.join(problems)}")
    unnamed = unnamed_written_answers(built)
    if unnamed:
        raise RuntimeError(f"{path}: Validate would not name the problem of a blank written answer: {'; '.join(unnamed)}")
    return dumps(built)


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def fingerprint(data):
    """What a student can change in the file ``data`` (bytes): for a notebook, its cells'
    types and sources (not the outputs, execution counts and metadata that opening,
    running and saving it in Jupyter write); for any other file, its bytes."""
    try:
        cells = json.loads(data)["cells"]
        content = [[c["cell_type"], "".join(c["source"]) if isinstance(c["source"], list) else c["source"]]
                   for c in cells]
    except (ValueError, KeyError, TypeError):
        return "bytes:" + sha256(data)
    return "cells:" + sha256(json.dumps(content, ensure_ascii=False).encode("utf-8"))


class Manifest:
    """``<out>/.manifest.json``: the :func:`fingerprint` of each file as it was last built
    (a manifest written before fingerprints holds the sha256 of the bytes)."""

    def __init__(self, out):
        self.path = Path(out) / MANIFEST
        self.hashes = json.loads(self.path.read_text())["files"] if self.path.exists() else {}

    def untouched(self, path):
        """True when the student changed nothing in ``path`` since it was built (so a rebuild may replace it)."""
        if not path.exists() or path.name not in self.hashes:
            return False
        recorded, data = self.hashes[path.name], path.read_bytes()
        return recorded == (fingerprint(data) if ":" in recorded else sha256(data))

    def built_from(self, path, data):
        """True when ``path`` (as the student may since have changed it) was built from what ``data``
        holds: the workbook's source has not changed since, so a rebuild has nothing new for it."""
        recorded = self.hashes.get(path.name)
        return recorded is not None and recorded == (fingerprint(data) if ":" in recorded else sha256(data))

    def write(self, path, data):
        """Write ``data`` to ``path`` (atomically; not at all if it is there already) and record it."""
        if not path.exists() or path.read_bytes() != data:
            tmp = path.with_name(path.name + ".tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        self.hashes[path.name] = fingerprint(data)

    def save(self):
        self.path.write_text(json.dumps({"files": dict(sorted(self.hashes.items()))}, indent=1) + "\n")


def place(out, name, data, manifest, say=print):
    """Write ``data`` to ``out/name`` unless the student changed that file; return the path written (or None).

    A file that already holds what ``data`` holds (the same cells, whatever Jupyter
    wrote on opening and saving it) is left exactly as it is, and so is a file the student
    changed when the workbook's source has not changed since it was built (nothing new to give).
    Each file written is said in one line, with why.
    """
    target = Path(out) / name
    beside = target.with_name(f"{target.stem}.new{target.suffix}")
    same = target.exists() and fingerprint(target.read_bytes()) == fingerprint(data)
    if target.exists() and not same and manifest.built_from(target, data):
        return None  # the student's copy, built from this very source: nothing new, no .new beside it
    if same or not target.exists() or manifest.untouched(target):
        if same:
            manifest.hashes[target.name] = fingerprint(data)
        else:
            why = "new" if not target.exists() else "the workbook changed since it was built; you had not changed it"
            say(f"built {target} ({why})")
            manifest.write(target, data)
        if manifest.untouched(beside):  # a build left beside an older copy, no longer needed
            beside.unlink()
            del manifest.hashes[beside.name]
        return target
    if beside.exists() and not manifest.untouched(beside) and fingerprint(beside.read_bytes()) != fingerprint(data):
        say(f"kept {target} and {beside} (both changed by you); the workbook changed since, and its new "
            "edition was not written")
        return None
    if beside.exists() and fingerprint(beside.read_bytes()) == fingerprint(data):
        manifest.hashes[beside.name] = fingerprint(data)
        return beside  # written by an earlier rebuild, and still the newest edition: said then
    manifest.write(beside, data)
    say(f"kept {target} (you changed it); the workbook changed since it was built: its new edition is {beside}")
    return beside


START_PAGE = "START.md"
START_TEXT = """\
# Multi-head attention: the workbook

Five levels of exercises, from reading the definition to its limits, problems beyond the sheet,
and a quick self-test.
Open a level below (they build on each other), and keep this page for the way to work.
The problems of *Beyond the sheet* are optional: your teacher may skip them.

## The levels

{levels}

## How to work

1. Open a level and run its first code cell (the setup). **Run > Run All Cells** runs
   the whole notebook: every figure and explorer appears, and each test says where you are.
2. Answer in the code cell under each problem: replace the `None` placeholder (or the
   `raise NotImplementedError()` in a function) with your answer, and run the cell.
3. Run the test cell below it. Where a problem asks you to explain, write your answer in
   the cell headed **Written answer, Problem ...**: double-click it and replace
   "YOUR ANSWER HERE" (keep the heading line).
4. The sliders and plots are there to try things out; they are not graded.

## How to get feedback

- **The test under each answer** answers at once: `✔ Correct.`, or `✘ Not yet.` with what
  looks wrong (often the misconception behind it). "No answer yet" means the placeholder
  is still there.
- **Validate** (in the notebook's toolbar) runs the whole notebook and lists the tests
  that do not pass yet, and each written answer still blank, by its problem.
- **Solution** and **Rubric** callouts (closed, below each problem) hold the worked
  solution and how a written answer is graded: open them once you have tried.
- When your instructor grades your work, hidden tests check your answers further and the
  written answers are graded by hand. Only the sheet's cells and your answer cells run then:
  put what an answer needs (a helper, an import) in its answer cell.

Your work is safe: building the workbook again never overwrites a notebook you changed
(the new build is written beside it as `<name>.new.ipynb`).
"""


def _title(nb, fallback):
    """(title, first sentence after it) of the notebook's ``# Title`` cell."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("# "):
            title, _, rest = cell.source.partition("\n")
            sentence = re.match(r"\s*([^\n]*?[.!?])(\s|$)", rest)
            return title[2:].strip(), sentence[1] if sentence else ""
    return fallback, ""


def start_page(source=SOURCE):
    """The text of ``START.md``: each notebook with its title and problems, then how to work."""
    lines = []
    for path in sorted(source_notebooks(source), key=lambda p: (not p.stem.startswith("level"), p.stem == "self_test")):
        nb = read(path)  # the levels, then the others (beyond the sheet), the self-test last
        problems = [m[1] for c in nb.cells if c.cell_type == "markdown"
                    for m in [re.match(r"^### Problem ([^\n]+)", c.source)] if m]
        title, sentence = _title(nb, path.stem)
        listed = "; ".join(p.replace(" — ", " ", 1) for p in problems) if problems else sentence
        lines.append(f"- [{title}]({path.name})" + (f": {listed}" if listed else ""))
    return START_TEXT.format(levels="\n".join(lines))


def build_practice(out="workbook", source=SOURCE, say=print):
    """Build the practice edition of every notebook in ``source`` into ``out``, and its
    start page; return the paths written."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    manifest = Manifest(out)
    written, said = [], []

    def tell(message):
        said.append(message)
        say(message)

    for path in source_notebooks(source):
        data = practice_text(path).encode("utf-8")
        written.append(place(out, path.name, data, manifest, tell))
    place(out, START_PAGE, start_page(source).encode("utf-8"), manifest, say=lambda message: None)
    manifest.save()
    if said:
        say(f"practice edition: {len(written)} notebooks in {out} (a notebook you changed is never overwritten)")
    else:
        say(f"practice edition: {out} is up to date, nothing written (the workbook has not changed since your "
            "copy was made)")
    return [p for p in written if p is not None]


# --- graded edition: the course's source notebooks -------------------------------

HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
NUMBERS_FUNCTIONS = ("show", "given")  # autograders.variants' calls a graded edition gives the students' own


def check_modules(nb):
    """{name: module} of the check modules ``nb``'s code cells import
    (``from autograders.checks import level2 as _checks`` gives ``{"_checks": level2}``)."""
    found = {}
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "autograders.checks":
                for alias in node.names:
                    found[alias.asname or alias.name] = f"autograders.checks.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("autograders.checks.") and alias.asname:
                        found[alias.asname] = alias.name
    return {name: importlib.import_module(module) for name, module in found.items()}


def _imports_checks(node):
    return (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("autograders.checks")) or (
        isinstance(node, ast.Import) and any(a.name.startswith("autograders.checks") for a in node.names))


def form_only_test(source, modules, functions=()):
    """The graded edition of the test cell ``source``: its visible part checks only the form of each answer
    (``_checks.q2_2_scaled_score(scaled_score)`` becomes ``_form("scaled_score", scaled_score, "number")``,
    :func:`autograders.checks.forms.form_call`), and the import of the checks and their calls move to the
    front of the hidden tests, which the students' release never holds (``functions``: the answers the
    notebook's answer cells define with ``def``). ``source`` unchanged when it calls no check."""
    from ..checks.forms import FORM_IMPORT, form_call

    lines = source.split("\n")
    begin = first_hidden_line(source)
    begin = len(lines) if begin is None else begin
    visible_text = "\n".join(lines[:begin])
    try:
        tree = ast.parse(visible_text)
    except SyntaxError:
        return source
    moved, visible, forms = [], list(lines[:begin]), []
    for node in reversed(tree.body):
        call = node.value if isinstance(node, ast.Expr) else None
        is_check = (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                    and isinstance(call.func.value, ast.Name) and call.func.value.id in modules and not call.keywords)
        if not (is_check or _imports_checks(node)):
            continue
        if node.lineno != node.end_lineno:
            raise ValueError(f"a test cell's check on more than one line cannot be made form-only: {source[:80]!r}")
        line = visible[node.lineno - 1]
        if is_check:
            check = getattr(modules[call.func.value.id], call.func.attr, None)
            value = ast.get_source_segment(visible_text, call.args[0]) if call.args else None
            forms.insert(0, form_call(check, value, value in functions) if value else None)
        del visible[node.lineno - 1]
        moved.insert(0, line.strip())
    if not moved:
        return source
    visible += [FORM_IMPORT, *(f for f in forms if f)]
    if begin == len(lines):
        return "\n".join([*visible, HIDDEN_BEGIN, *moved, HIDDEN_END])
    indent = lines[begin][: len(lines[begin]) - len(lines[begin].lstrip())]
    return "\n".join([*visible, lines[begin], *(indent + m for m in moved), *lines[begin + 1 :]])


def numbers_cell(source):
    """The graded edition of a cell calling ``variants.show`` or ``variants.given`` (the numbers under a varied
    problem, its data): the students' own :mod:`autograders.student.numbers`, the problem's sheet numbers
    written in from its declaration (``sheet=...``), which stays with the grader."""
    from ..variants.prompt import sheet_of

    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
             and isinstance(node.func.value, ast.Name) and node.func.value.id == "variants"
             and node.func.attr in NUMBERS_FUNCTIONS and len(node.args) >= 2
             and all(isinstance(a, ast.Constant) and isinstance(a.value, str) for a in node.args[:2])]
    if not calls:
        return source
    lines = source.split("\n")
    for call in sorted(calls, key=lambda c: (c.lineno, c.col_offset), reverse=True):
        if call.lineno != call.end_lineno:
            raise ValueError(f"a numbers call on more than one line: {source[:80]!r}")
        given = sheet_of(call.args[0].value, call.args[1].value)
        args = ", ".join([*(ast.unparse(a) for a in call.args), *(f"{k}={v!r}" for k, v in given.items())])
        line = lines[call.lineno - 1]
        lines[call.lineno - 1] = f"{line[:call.col_offset]}{call.func.attr}({args}){line[call.end_col_offset:]}"
    imported = ", ".join(sorted({c.func.attr for c in calls}))
    return "\n".join(f"from autograders.student.numbers import {imported}" if line.strip() == "from autograders "
                     "import variants" else line for line in lines)


def graded_notebook(nb, where="a notebook"):
    """The graded edition of the source notebook ``nb`` (a new notebook), as the course's ``source/`` holds
    it: every visible test checks only its answer's form; right or wrong is decided by the hidden tests, the
    first of which is the full check (its message, naming the misconception, is in the feedback). Its cells
    import nothing the students' side lacks (:mod:`autograders.student`): the numbers cells show the sheet's
    numbers written in, and every ``{{d_k}}`` of the source filled in (:mod:`.placeholders`)."""
    nb = fill(nb, where)
    modules = check_modules(nb)
    functions = {name for cell in nb.cells if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution")
                 for name in re.findall(r"^def\s+(\w+)\s*\(", cell.source, re.M)}
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            # a test cell's own import names its checks (a notebook may import two modules as _checks)
            own = check_modules(nbformat.from_dict({"cells": [cell]}))
            cell.source = form_only_test(cell.source, {**modules, **own}, functions)
        elif cell.cell_type == "code":
            cell.source = numbers_cell(cell.source)
    return nb


def graded_text(path):
    """The graded edition of the notebook file ``path``, as the text to write (the file's
    own text when nothing changes)."""
    text = Path(path).read_text(encoding="utf-8")
    nb = nbformat.reads(text, as_version=4)
    graded = graded_notebook(nb, path)
    if [c.source for c in graded.cells] == [c.source for c in nb.cells]:
        return text
    return dumps(graded)


# --- graded release ----------------------------------------------------------

# The kernel arguments of a notebook executed headless (autograde, Validate): mha_core
# draws nothing there. Kept on the students' side: their Validate button uses them too.
from ..student.exchange import HEADLESS_KERNEL_ARGUMENTS  # noqa: E402

CONFIG = '''\
"""nbgrader configuration of the workbook's course; written by `python -m autograders release`."""

import os

from autograders.editions.preprocessors import release_preprocessors

c = get_config()  # noqa: F821 (defined by traitlets when it loads this file)
here = os.path.dirname(os.path.abspath(__file__))

c.CourseDirectory.root = here
c.CourseDirectory.course_id = {course_id!r}
# SQLite allows one writer at a time: wait up to 30 s for a lock (two autograde
# runs, or formgrader open while grading) rather than fail at once.
c.CourseDirectory.db_url = "sqlite:///" + os.path.join(here, "gradebook.db") + "?timeout=30"

# The release drops the worked solutions and rubrics before nbgrader's own steps
# (solutions replaced by the stub, hidden tests removed, cells locked).
c.GenerateAssignment.preprocessors = release_preprocessors()
c.ClearSolutions.code_stub = {{"python": "# YOUR CODE HERE\\nraise NotImplementedError()"}}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"

# Autograde and validate: a cell that runs longer than this is interrupted and
# fails; the rest of the notebook still runs.
c.Execute.timeout = {timeout}
c.Execute.interrupt_on_timeout = True
c.Execute.execute_retries = 0
# Nobody looks at the figures there: mha_core draws nothing in those kernels.
c.Execute.extra_arguments = {headless!r}

# A test cell scores 0 if it writes to stderr: ignore matplotlib's
# one-off font-cache notice rather than fail a student's test for it.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"Matplotlib is building the font cache"

# Autograde runs each submission in a sandboxed kernel (autograders/grading/sandbox.py):
# memory, file-size and output limits, no network, this course hidden, a
# throwaway user; a timeout, crash or memory blow-up costs only its own cell.
from autograders.grading import autograde  # noqa: E402

autograde.configure(c, course=here, hide=[{course!r}])

# Each written answer's rubric (kept in source/, dropped from the release) is put
# back below the answer at autograde, for the grader in the formgrader; every other
# HTML page (the students' feedback first) leaves it out.
from autograders.grading.rubrics import configure_rubrics  # noqa: E402

configure_rubrics(c)
'''


def write_config(course):
    """Write the course's nbgrader_config.py, and load it once here: nbgrader only logs
    a broken config file and goes on with its defaults (worked solutions and all)."""
    from traitlets.config.loader import PyFileConfigLoader

    path = Path(course) / "nbgrader_config.py"
    path.write_text(CONFIG.format(course_id=COURSE_ID, timeout=CELL_TIMEOUT, course=str(Path(course).resolve()),
                                   headless=HEADLESS_KERNEL_ARGUMENTS))
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
        (target / path.name).write_text(graded_text(path), encoding="utf-8")
        pending.append(released)
    if pending:
        nbgrader(course, "generate_assignment", "*", *(["--force"] if force else []), "--log-level=WARN")
    for released in pending:
        problems = leaks(read(released), folded=False)
        if problems:
            raise RuntimeError(f"{released}: the release shows {', '.join(problems)}")
        unnamed = unnamed_written_answers(read(released))
        if unnamed:
            raise RuntimeError(f"{released}: Validate would not name the problem of a blank written answer: "
                               f"{'; '.join(unnamed)}")
        say(f"{released.parent.name}: released to {released}")
    return names
