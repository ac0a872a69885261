"""Shared fixtures for the notebook and edition tests.

The tests are parametrised over the notebooks in ``notebooks/`` (levels: those
with nbgrader cells) and their ``tests/fixtures/level{N}.py``, so a new level is
picked up as soon as it exists. ``MHA_NOTEBOOKS`` and ``MHA_FIXTURES`` point them
at other directories (to try a draft notebook outside the repository).

The slow work (building the course, one ``nbgrader autograde`` per assignment
grading all of its submissions, ``nbgrader validate``, executing the source and
practice notebooks) is started once per session on a pool of ``MHA_TEST_WORKERS``
(default 2) threads, each driving subprocesses or kernels, so that both cores
stay busy; each fixture waits only for its own results.
"""

import functools
import gc
import importlib.util
import inspect
import itertools
import multiprocessing.util
import os
import queue
import re
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = Path(os.environ.get("MHA_NOTEBOOKS", ROOT / "notebooks")).resolve()
FIXTURES = Path(os.environ.get("MHA_FIXTURES", ROOT / "tests" / "fixtures")).resolve()
WORKERS = int(os.environ.get("MHA_TEST_WORKERS", "2"))
KERNEL_TIMEOUT = 60  # seconds per cell when the tests execute a notebook themselves

TIMINGS = []  # (job, seconds) of the session's slow work, shown at the end of the run
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def contexts_never_block():
    """In the test process, a zmq context left to the garbage collector is not terminated. Collected in one
    cycle with a socket of its own still open (a kernel client a failed test never stopped), its ``__del__``
    cannot close that socket (the weak references it would use are cleared first) and ``term()`` then waits
    for it forever: seen in 2026-12 as a worker blocked while pytest formatted a failure. Here the context
    closes the sockets it still knows, unsent messages dropped, and is left; the process's exit frees it.
    (The grader closes its own contexts: ``SandboxExecute._async_cleanup_kernel``.)"""
    import zmq

    def __del__(self):
        if not self.closed:
            for socket in list(getattr(self, "_sockets", None) or ()):
                if not socket.closed:
                    socket.close(linger=0)

    zmq.Context.__del__ = __del__


contexts_never_block()

from autograders.editions import editions  # noqa: E402


# --- the notebooks -----------------------------------------------------------


def read(path):
    return nbformat.read(str(path), as_version=4)


def filled(path):
    """The source notebook at ``path`` as every edition is built from it: its numbers (``{{d_k}}``) filled in
    from the declarations (``autograders/editions/placeholders.py``). What runs or is graded is this."""
    from autograders.editions.placeholders import fill

    return fill(read(path), path)


def nbgrader_meta(cell):
    return cell.metadata.get("nbgrader", {})


def is_test_cell(cell):
    meta = nbgrader_meta(cell)
    return cell.cell_type == "code" and bool(meta.get("grade")) and not meta.get("solution")


def points(level):
    """(autograded points, points graded by hand, graded cells) of the level notebook ``level`` (a stem),
    read from its source's nbgrader metadata: what a course's gradebook holds for one submission."""
    auto = manual = cells = 0
    for cell in read(ROOT / "notebooks" / f"{level}.ipynb").cells:
        meta = nbgrader_meta(cell)
        if meta.get("grade"):
            cells += 1
            if meta.get("solution") and cell.cell_type == "markdown":
                manual += meta.get("points", 0)
            else:
                auto += meta.get("points", 0)
    return auto, manual, cells


def is_answer_cell(cell):
    meta = nbgrader_meta(cell)
    return cell.cell_type == "code" and bool(meta.get("solution"))


def all_notebooks():
    return editions.source_notebooks(NOTEBOOKS)


def level_notebooks():
    return editions.assignments(NOTEBOOKS)


def level_of(path):
    match = re.match(r"level(\d+)_", Path(path).stem)
    return int(match[1]) if match else None


def fixtures_for(path):
    """The module ``tests/fixtures/level{N}.py`` of the level notebook ``path``
    (``tests/fixtures/<stem>.py`` for another notebook), or None."""
    level = level_of(path)
    stem = f"level{level}" if level is not None else Path(path).stem
    file = FIXTURES / f"{stem}.py"
    if not file.exists():
        return None
    name = f"tests.fixtures.{stem}" if FIXTURES == ROOT / "tests" / "fixtures" else f"_mha_fixtures_{stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, file)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def mistakes_for(path):
    module = fixtures_for(path)
    return list(getattr(module, "MISTAKES", [])) if module else []


def answer_head(source):
    """An answer cell's comment lines and its first line of code (``# a number, exact ...`` then
    ``x = None``, or a function's ``def`` line): where the cell says what it asks for."""
    lines = source.split("\n")
    code = next((k for k, line in enumerate(lines) if line.strip() and not line.lstrip().startswith("#")), len(lines) - 1)
    return "\n".join(lines[: code + 1])


def ids(paths):
    return [Path(p).stem for p in paths]


def cell_text(cell):
    """All a code cell printed or raised, ANSI colours removed."""
    parts = []
    for output in cell.get("outputs", []):
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type == "error":
            parts += [output.ename, output.evalue, *output.traceback]
        else:
            parts.append(str(output.get("data", {}).get("text/plain", "")))
    return ANSI.sub("", "\n".join(parts))


def execute(path, timeout=KERNEL_TIMEOUT, source=False):
    """Execute the notebook at ``path`` headless in its directory (a ``source`` notebook: :func:`filled`);
    return (notebook, seconds)."""
    from nbclient import NotebookClient

    nb = filled(path) if source else read(path)
    start = time.perf_counter()
    NotebookClient(
        nb, timeout=timeout, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(Path(path).parent)}}
    ).execute(stderr=subprocess.DEVNULL)  # the kernel's own log (not the cells' stderr, which is in the outputs)
    return nb, time.perf_counter() - start


# --- the session's slow work -------------------------------------------------


def submission(source_nb, cell_id, code):
    """``source_nb`` with the answer cell ``cell_id``'s source replaced by ``code``."""
    nb = nbformat.from_dict(source_nb)
    found = [cell for cell in nb.cells if nbgrader_meta(cell).get("grade_id") == cell_id]
    assert found, f"no cell with grade_id {cell_id!r}"
    found[0].source = code
    return nb


def batches(mistakes, one_by_one=False):
    """Group ``[(index, Mistake)]`` into submissions: each mistake once, and in a group
    no two mistakes change the same answer cell or expect the same test cell to fail.

    A group is one submission, so grading costs one notebook execution per group,
    not per mistake. Each member is judged on its own ``fails`` (0), on the cells
    no member expects to fail (full marks) and on its feedback; a member judged
    wrong is graded again alone (see ``_autograde``), so a failure is reported
    against the mistake that caused it. What a group cannot show is a mistake's
    side effect on a test that another member fails anyway: set
    ``MHA_MISTAKES_ONE_BY_ONE=1`` to grade every mistake alone (slower).
    """
    groups = []
    for index, mistake in sorted(mistakes, key=lambda im: -len(im[1].fails)):
        for group in [] if one_by_one else groups:
            if all(m.cell != mistake.cell and not set(m.fails) & set(mistake.fails) for _, m in group):
                group.append((index, mistake))
                break
        else:
            groups.append([(index, mistake)])
    return [sorted(group, key=lambda im: im[0]) for group in groups]


def answered_practice(source, practice, directory):
    """The practice notebook ``practice`` with every answer of ``source`` filled in, as a
    student who got everything right would have it; return its path in ``directory``."""
    answers = {nbgrader_meta(c)["grade_id"]: c.source for c in filled(source).cells if nbgrader_meta(c).get("solution")}
    nb = read(practice)
    from autograders.checks.predictions import PREDICTIONS, TAG

    for cell in nb.cells:
        if nbgrader_meta(cell).get("grade_id") in answers:
            cell.source = answers[nbgrader_meta(cell)["grade_id"]]
        elif TAG in cell.metadata.get("tags", ()):  # and every prediction entered (right): the explorers open
            name = answer_head(cell.source).split("\n")[-1].split("=", 1)[0].strip()
            cell.source = f"{name} = {PREDICTIONS[name].right!r}"
    directory.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, str(directory / practice.name))
    return directory / practice.name


@dataclass
class Course:
    """The course built once for the session, its submissions and their grading."""

    root: Path
    names: list = field(default_factory=list)  # assignment names
    # assignment -> {student id: [(index, Mistake), ...]}: "full", "blank", "cheat" have none,
    # "batch-NN" a group of mistakes, "solo-NN" mistake NN alone (only after its group failed)
    students: dict = field(default_factory=dict)
    logs: dict = field(default_factory=dict)  # assignment -> [nbgrader output, ...]

    @property
    def db_url(self):
        return f"sqlite:///{self.root / 'gradebook.db'}?timeout=30"

    def grades(self, assignment, student):
        """{grade_id: (auto_score, max_score)} of the autograded (code) test cells of a submission."""
        from nbgrader.api import Gradebook, MissingEntry

        with Gradebook(self.db_url) as gb:
            try:
                notebook = gb.find_submission_notebook(assignment, assignment, student)
            except MissingEntry:
                return {}
            return {grade.name: (grade.auto_score, grade.max_score) for grade in notebook.grades if grade.cell.cell_type == "code"}

    def autograded(self, assignment, student):
        return read(self.root / "autograded" / student / assignment / f"{assignment}.ipynb")

    def log(self, assignment):
        return "\n".join(output[-3000:] for output in self.logs.get(assignment, ["(autograde did not run)"]))

    def submit(self, assignment, student, nb, members=()):
        target = self.root / "submitted" / student / assignment
        target.mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, str(target / f"{assignment}.ipynb"))
        self.students.setdefault(assignment, {})[student] = list(members)

    def student_of(self, assignment, index):
        """The submission that grades mistake ``index``: alone if it was, else its group."""
        students = self.students.get(assignment, {})
        if f"solo-{index:02d}" in students:
            return f"solo-{index:02d}"
        return next((s for s, members in students.items() if index in [i for i, _ in members]), None)

    def mistake_problems(self, assignment, student, index):
        """What is wrong with the grading of mistake ``index`` in ``student``'s submission
        (empty when all is as expected): its own ``fails`` must score 0, the cells no
        mistake of the submission expects to fail full marks, and its feedback must
        name it."""
        members = dict(self.students[assignment][student])
        mistake = members[index]
        grades = self.grades(assignment, student)
        if not grades:
            return [f"{student} was not graded:\n{self.log(assignment)}"]
        others = set().union(*(set(m.fails) for i, m in members.items() if i != index)) - set(mistake.fails)
        problems = []
        for gid, (score, max_score) in grades.items():
            expected = 0 if gid in mistake.fails else None if gid in others else max_score
            if expected is not None and score != expected:
                problems.append(f"{gid} scored {score}, expected {expected}")
        nb = self.autograded(assignment, student)
        feedback = "\n".join(cell_text(c) for c in nb.cells if nbgrader_meta(c).get("grade_id") in mistake.fails)
        if mistake.says not in feedback:
            problems.append(f"the feedback should name {mistake.says!r}; it says:\n{feedback[-1200:]}")
        return problems


def _run(course, *args):
    """Run nbgrader in ``course``; return (exit code, stdout and stderr interleaved as printed)."""
    env = editions.nbgrader_env() | {"PYTHONUNBUFFERED": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "nbgrader", *args], cwd=course, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    return result.returncode, result.stdout


def _build_course(root):
    course = Course(root)
    course.names = editions.build_release(root, NOTEBOOKS, say=lambda message: None)
    one_by_one = bool(os.environ.get("MHA_MISTAKES_ONE_BY_ONE"))
    for name in course.names:
        source_nb = filled(NOTEBOOKS / f"{name}.ipynb")
        answer_ids = {nbgrader_meta(c).get("grade_id") for c in source_nb.cells if is_answer_cell(c)}
        course.submit(name, "full", source_nb)
        released = read(root / "release" / name / f"{name}.ipynb")
        course.submit(name, "blank", released)
        cheat = nbformat.from_dict(released)  # blank answers, and every test cell emptied
        for cell in cheat.cells:
            if is_test_cell(cell):
                cell.source = "pass"
        course.submit(name, "cheat", cheat)
        mistakes = [(i, m) for i, m in enumerate(mistakes_for(NOTEBOOKS / f"{name}.ipynb")) if m.cell in answer_ids]
        for number, group in enumerate(batches(mistakes, one_by_one)):
            nb = source_nb
            for _, mistake in group:
                nb = submission(nb, mistake.cell, mistake.code)
            course.submit(name, f"batch-{number:02d}", nb, group)
    return course


def _autograde(course, name):
    """Grade every submission of ``name`` in one nbgrader call; then any group of
    mistakes that was not graded as expected again, one mistake per submission."""
    code, output = _run(course.root, "autograde", name, "--log-level=WARN")
    course.logs.setdefault(name, []).append(f"nbgrader autograde {name} exited {code}:\n{output}")
    source_nb = filled(NOTEBOOKS / f"{name}.ipynb")
    again = [
        (index, mistake)
        for student, members in list(course.students[name].items())
        if len(members) > 1
        for index, mistake in members
        if course.mistake_problems(name, student, index)
    ]
    for index, mistake in again:
        course.submit(name, f"solo-{index:02d}", submission(source_nb, mistake.cell, mistake.code), [(index, mistake)])
    if again:
        code, output = _run(course.root, "autograde", name, "--student=solo-*", "--log-level=WARN")
        course.logs[name].append(f"nbgrader autograde {name} --student=solo-* exited {code}:\n{output}")


class Pool:
    """A thread pool that runs the most urgent job first (lowest ``priority``, then first submitted).

    The long autograde runs go first and the short executions fill the gaps, so
    the workers finish together.
    """

    def __init__(self, workers):
        self.jobs = queue.PriorityQueue()
        self.order = itertools.count()
        self.threads = [threading.Thread(target=self._work, daemon=True, name=f"{SLOW_WORK_THREAD} {i}")
                        for i in range(workers)]
        for thread in self.threads:
            thread.start()

    def submit(self, function, *args, priority=1, label=None):
        future = Future()
        self.jobs.put((priority, next(self.order), future, function, (label, args)))
        return future

    def _work(self):
        while True:
            _, _, future, function, (label, args) = self.jobs.get()
            if function is None:
                return
            if future.set_running_or_notify_cancel():
                start = time.perf_counter()
                try:
                    future.set_result(function(*args))
                except BaseException as error:  # handed to whoever waits for the result
                    future.set_exception(error)
                TIMINGS.append((label or function.__name__, time.perf_counter() - start))

    def close(self):
        while True:  # cancel what has not started
            try:
                _, _, future, _, _ = self.jobs.get_nowait()
            except queue.Empty:
                break
            future.cancel()
        for _ in self.threads:
            self.jobs.put((float("inf"), next(self.order), None, None, (None, ())))
        for thread in self.threads:
            thread.join()


class Session:
    """Starts the slow work on first use; each fixture waits for its own results."""

    def __init__(self, tmp):
        self.tmp = tmp
        # What kernels' start imports (IPython, through jupyter_client's kernel spec directories) is imported
        # here first: imported by two threads of the pool at once, IPython's modules met each other half made.
        import IPython.core.interactiveshell  # noqa: F401
        from jupyter_client.kernelspec import KernelSpecManager

        KernelSpecManager().kernel_dirs  # noqa: B018 (its default imports ipykernel's paths)
        self.pool = Pool(WORKERS)
        (tmp / "course").mkdir()
        self.course = self.pool.submit(self._course_pipeline, priority=0, label="build the course")
        self.sources = {p.stem: self.pool.submit(execute, p, KERNEL_TIMEOUT, True, label=f"execute source {p.stem}")
                        for p in level_notebooks()}
        self.practice_dir = tmp / "workbook"
        editions.build_practice(self.practice_dir, NOTEBOOKS, say=lambda message: None)
        self.practice = {
            p.stem: self.pool.submit(execute, self.practice_dir / p.name, label=f"execute practice {p.stem}")
            for p in level_notebooks()
        }
        editions.write_config(tmp / "course")  # validate runs with the course's configuration
        sources = tmp / "notebooks"  # the source notebooks filled in, as the editions are built from them
        sources.mkdir()
        for p in level_notebooks():
            nbformat.write(filled(p), str(sources / p.name))
        self.validate_source = self.pool.submit(self._validate, sorted(sources.glob("*.ipynb")), label="validate notebooks/")
        answered = [answered_practice(p, self.practice_dir / p.name, tmp / "answered") for p in level_notebooks()]
        self.validate_answered = self.pool.submit(self._validate, answered, label="validate answered practice")

    def _course_pipeline(self):
        course = _build_course(self.tmp / "course")
        # The assignments with the most submissions first, so that the workers finish together.
        names = sorted(course.names, key=lambda n: -len(course.students[n]))
        self.autogrades = [
            self.pool.submit(_autograde, course, n, priority=0, label=f"autograde {n} ({len(course.students[n])} submissions)")
            for n in names
        ]
        released = sorted((course.root / "release").glob("*/*.ipynb"))
        self.validate_release = self.pool.submit(self._validate, released, True, label="validate --invert release")
        return course

    def _validate(self, paths, invert=False):
        """{notebook stem: nbgrader validate's output} (``--invert`` with ``invert``), run in the course."""
        root = self.tmp / "course"
        code, output = _run(root, "validate", *(["--invert"] if invert else []), *map(str, paths))
        parts = re.split(r"\[ValidateApp \| INFO\] Validating '([^']+)'", output)
        found = {Path(parts[i]).stem: parts[i + 1] for i in range(1, len(parts) - 1, 2)}
        return {p.stem: found.get(p.stem, f"(no output; exit {code})\n{output[-2000:]}") for p in paths}

    def wait_course(self):
        course = self.course.result()
        for future in self.autogrades:
            future.result()
        return course

    def close(self):
        self.pool.close()


@pytest.fixture(scope="module")
def no_drawing():
    """The explorers and figures of a module build their state and text only (no matplotlib drawing)."""
    import mha_core

    was = mha_core._drawing  # None (as MHA_CORE_DRAW says) stays None afterwards
    mha_core.drawing(False)
    yield
    mha_core._drawing = was


@pytest.fixture(scope="session")
def session_work(tmp_path_factory):
    work = Session(tmp_path_factory.mktemp("mha"))
    yield work
    work.close()


@pytest.fixture(scope="session")
def course(session_work):
    """The nbgrader course, every submission of every level autograded."""
    return session_work.wait_course()


@pytest.fixture(scope="session")
def executed_sources(session_work):
    """{stem: (executed source notebook, seconds)}."""
    return {stem: future.result() for stem, future in session_work.sources.items()}


@pytest.fixture(scope="session")
def executed_practice(session_work):
    """{stem: (executed practice notebook, seconds)}."""
    return {stem: future.result() for stem, future in session_work.practice.items()}


@pytest.fixture(scope="session")
def practice_dir(session_work):
    return session_work.practice_dir


@pytest.fixture(scope="session")
def validation(session_work):
    """{"source" | "release" | "answered practice": {stem: output}} of nbgrader validate."""
    source = session_work.validate_source.result()
    answered = session_work.validate_answered.result()
    session_work.course.result()
    return {"source": source, "release": session_work.validate_release.result(), "answered practice": answered}


# --- the fast tier -------------------------------------------------------------
# A test is slow when it uses a fixture that grades, executes notebooks, starts
# kernels, sandboxes, servers or a browser: `pytest -m "not slow"` (`make check`)
# leaves it out. Each such fixture is listed under the file that defines it, so that
# another fixture of the same name (test_intake's bare `course` folder) is not taken
# for it. A fixture that uses one of these is slow too (pytest's closure of the
# fixtures a test uses), and a fast test that starts a kernel all the same fails
# (the guard below).
SLOW_FIXTURES = {
    "tests/conftest.py": {"session_work", "course", "executed_sources", "executed_practice", "practice_dir",
                          "validation", "kernels", "playwright_browser",  # kernels: tests that start kernels or sandboxes themselves
                          "graded_cells"},  # grades: a level's graded cells run once per known mistake (about 25 s of CPU)
    "tests/test_corpus.py": {"corpus"},
    "tests/test_editions.py": {"small_release", "small_course"},  # runs nbgrader generate_assignment (about 5 s of CPU)
    "tests/test_feedback_command.py": {"graded"},
    "tests/test_grading.py": {"graded"},
    "tests/test_postgres.py": {"graded", "postgres"},
    "tests/test_sandbox.py": {"listener", "grader"},
    "tests/test_learned.py": {"retrained"},  # retrains the learned heads (about 15 s of CPU)
    "tests/browser/conftest.py": {"lab_root", "lab", "voila", "lab_page", "projector_page"},
}


@pytest.fixture(scope="session")
def playwright_browser():
    """Chromium, or a skip (a failure under MHA_REQUIRE_BROWSER) saying what is missing: one for the whole
    session (Playwright's sync API runs once per process), shared by tests/browser and tests/hub."""
    from tests.browser import servers

    missing = servers.browser_missing()
    if missing:
        if os.environ.get("MHA_REQUIRE_BROWSER"):
            pytest.fail(f"{missing} (MHA_REQUIRE_BROWSER is set: the browser tests must run)", pytrace=False)
        pytest.skip(missing)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = servers.launch(playwright)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def kernels():
    """Marks a test (or a fixture) that starts kernels, sandboxes or grading processes itself (slow)."""


@functools.cache
def _file_of(code):
    """The file of a code object relative to ROOT ("" outside it). Cached: collection asks about
    the same few hundred fixture functions for each of ~3,000 tests."""
    try:
        return Path(inspect.getsourcefile(code)).resolve().relative_to(ROOT).as_posix()
    except (TypeError, ValueError):
        return ""


def _defined_in(function):
    code = getattr(function, "__code__", None)
    return _file_of(code) if code is not None else ""  # no code: pytest's own (a parametrized argument's)


def used_fixtures(item, table):
    """The fixtures of ``table`` ({file: {name, ...}}) that ``item`` uses, as ``file::name``."""
    # The definitions a test's fixture names resolve to: pytest has no public API for them;
    # ``item._fixtureinfo.name2fixturedefs`` (a name's definitions, the one used last) is read
    # from pytest 8.3 and 9.0. Without it, a name is enough (a clash then marks too much).
    info = getattr(item, "_fixtureinfo", None)
    found = []
    for name in getattr(item, "fixturenames", ()):
        if info is None:
            found += [f"{where}::{name}" for where, names in table.items() if name in names]
            continue
        definitions = list(info.name2fixturedefs.get(name, ()))
        while definitions:  # the one used, and those it overrides while it asks for its own name
            fixturedef = definitions.pop()
            where = _defined_in(fixturedef.func)
            if name in table.get(where, ()):
                found.append(f"{where}::{name}")
            if name not in fixturedef.argnames:
                break
    return found


def slow_fixtures(item):
    """The fixtures of SLOW_FIXTURES that ``item`` uses, as ``file::name``."""
    return used_fixtures(item, SLOW_FIXTURES)


# First, so that the groups are marked before pytest-xdist's own hook in a worker reads them into
# the node ids (xdist 3.8, remote.py; a worker's ``dist`` is "no", its ``loadgroup`` says the mode).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        if slow_fixtures(item):
            item.add_marker(pytest.mark.slow)
    if getattr(config.option, "loadgroup", False) or getattr(config.option, "dist", "no") == "loadgroup":
        for item, group in share_groups(items).items():
            item.add_marker(pytest.mark.xdist_group(group))


# --- two workers (pytest-xdist, ``-n 2 --dist loadgroup``: `make test`) -------------
# A session or module fixture that grades, executes or serves is computed once per worker that
# needs it, so the tests sharing one run in the same worker: tests using fixtures of one group
# below share a worker, and so do tests whose fixtures are linked by a test using both. The hub's
# tests (they create and remove the same system users) and the browser's share one: they wait on
# servers and Chromium, and the other worker's grading and executions keep the second core busy.
# Other tests go where there is room.
BROWSER_AND_HUB = "browser and hub"
SHARED = {
    "tests/conftest.py": {name: "session work" for name in
                          ("session_work", "course", "executed_sources", "executed_practice", "practice_dir", "validation")}
                         | {"graded_cells": "graded cells"},
    "tests/browser/conftest.py": {name: BROWSER_AND_HUB for name in ("lab_root", "lab", "voila", "lab_page", "projector_page")},
}

# Fast-tier fixtures that take seconds to build (nbgrader steps, no kernel): their users share a worker.
FAST_SHARED = {"tests/test_one_place.py": {"files_writing"},  # the product's files parsed (2 s)
               "tests/test_hub_exposure.py": {"student"}}  # one account: its tests on one worker


@pytest.fixture(scope="session")
def graded_cells():
    """``graded_cells(path, replace=None)``: a level notebook's graded cells run in this process
    (tests.checking.graded_cell_errors), once per worker for each (notebook, replaced answer):
    test_mistakes_alone and test_report_tags judge the same runs. Read its results, never change them."""
    from tests.checking import graded_cell_errors

    return functools.cache(graded_cell_errors)


def share_groups(items):
    """{item: group name} for the items that must share a worker with others; the rest are free."""
    parent = {}

    def find(key):
        while parent.setdefault(key, key) != key:
            parent[key] = parent[parent[key]]
            key = parent[key]
        return key

    keys = {}
    for item in items:
        found = []
        for fixture in slow_fixtures(item):
            where, name = fixture.split("::")
            if name == "kernels" or name == "playwright_browser":
                continue  # no state: a marker, and one Chromium per worker
            found.append(SHARED.get(where, {}).get(name, where))  # a test file's own fixtures: that file
        found += used_fixtures(item, FAST_SHARED)
        if item.get_closest_marker("hub") or item.nodeid.startswith(("tests/hub/", "tests/browser/")):
            found.append(BROWSER_AND_HUB)
        for key in found[1:]:
            parent[find(key)] = find(found[0])
        if found:
            keys[item] = found[0]
    return {item: find(key) for item, key in keys.items()}


# --- memory between tests ---------------------------------------------------------
# ipywidgets keeps every widget it made until it is closed (its registry of instances), and with
# them each explorer's figure: the heap a worker's garbage collector walks grew to 850,000 objects
# in the fast tier. Each test's widgets are closed after it, and what collection imported is set
# aside from the collector (gc.freeze) before the first test.


def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()


@pytest.fixture(autouse=True)
def _close_widgets():
    yield
    if "ipywidgets" in sys.modules:
        sys.modules["ipywidgets"].Widget.close_all()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """A worker's notebook jobs, for the summary printed by the controller."""
    TIMINGS.extend(tuple(job) for job in getattr(node, "workeroutput", {}).get("timings", ()))


def pytest_sessionfinish(session):
    if hasattr(session.config, "workeroutput"):  # an xdist worker: hand the timings to the controller
        session.config.workeroutput["timings"] = list(TIMINGS)


# --- the guard: a fast test that starts a kernel fails ---------------------------
# While a test that is not marked slow runs (its set-up, call and tear-down), starting a
# kernel is refused with a failure that names the test: jupyter_client's KernelManager; a
# process whose command line is a kernel's, the sandbox's (bubblewrap's), nbgrader's
# autograde or validate, a Jupyter or Voila server's, Chromium's; a process of a
# multiprocessing "spawn" pool (grading's). The session's own slow work (the "slow work"
# threads of Pool, busy in a full run while fast tests run) is not the test's.
KERNEL_COMMAND = re.compile(
    r"(?:^|\s)(?:-m\s+)?(?:ipykernel_launcher|ipykernel|autograders\.grading\.sandbox|autograders\.student\.serve)(?:\s|$)"
    r"|autograders/grading/sandbox\.py\s|\bbwrap\s"
    r"|\bnbgrader\s+(?:autograde|validate)\b"
    r"|\b(?:-m\s+)?autograders\s+(?:grade|regrade)\b"
    r"|\b(?:jupyter[-\s](?:lab|server|notebook|execute|nbconvert\b.*--execute)|voila)\b"
    r"|\bchrom(?:e|ium)\b|\bplaywright\b"
)
SLOW_WORK_THREAD = "slow work"


class KernelGuard:
    """Refuses (and records) what a fast test starts; see :func:`pytest_runtest_makereport`."""

    def __init__(self):
        self.test = None  # the node id of the fast test running, or None
        self.started = []  # what it tried to start, since its last report

    def refuse(self, what):
        if self.test is None or threading.current_thread().name.startswith(SLOW_WORK_THREAD):
            return
        message = (f"{self.test} is in the fast tier (not marked slow) but started {what}. Give it a fixture "
                   f"of SLOW_FIXTURES (tests/conftest.py), `kernels` if it starts the kernel itself.")
        self.started.append(message)
        pytest.fail(message, pytrace=False)

    def install(self, monkeypatch):
        import subprocess as sp

        from jupyter_client.manager import AsyncKernelManager, KernelManager

        guard = self
        execute_child = sp.Popen._execute_child

        def _execute_child(popen, args, *rest, **kw):
            argv = [args] if isinstance(args, (str, bytes, os.PathLike)) else list(args)
            line = " ".join(os.fsdecode(a) if isinstance(a, (bytes, os.PathLike)) else str(a) for a in argv)
            if KERNEL_COMMAND.search(line):
                guard.refuse(f"the process `{line[:300]}`")
            return execute_child(popen, args, *rest, **kw)

        monkeypatch.setattr(sp.Popen, "_execute_child", _execute_child)
        spawn = multiprocessing.util.spawnv_passfds  # how a "spawn" pool (grading's workers) starts a process

        def spawnv_passfds(path, args, passfds):
            guard.refuse("a process of multiprocessing (grading runs its jobs in a pool of them)")
            return spawn(path, args, passfds)

        monkeypatch.setattr(multiprocessing.util, "spawnv_passfds", spawnv_passfds)
        for cls in (KernelManager, AsyncKernelManager):
            start = cls.start_kernel

            def start_kernel(manager, *args, _start=start, **kw):
                guard.refuse(f"a kernel ({type(manager).__name__}.start_kernel)")
                return _start(manager, *args, **kw)

            monkeypatch.setattr(cls, "start_kernel", start_kernel)


GUARD = KernelGuard()


@pytest.fixture(scope="session", autouse=True)
def _kernel_guard():
    with pytest.MonkeyPatch.context() as monkeypatch:
        GUARD.install(monkeypatch)
        yield GUARD


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item, nextitem):
    GUARD.test = None if item.get_closest_marker("slow") else item.nodeid
    GUARD.started = []
    try:
        return (yield)
    finally:
        GUARD.test = None


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    started, GUARD.started = GUARD.started, []
    if started and GUARD.test == item.nodeid and report.passed:  # the test swallowed the failure: fail it here
        report.outcome = "failed"
        report.longrepr = "\n".join(started)
    return report


def pytest_terminal_summary(terminalreporter):
    if TIMINGS:
        terminalreporter.section("notebook jobs (seconds)")
        for label, seconds in TIMINGS:
            terminalreporter.write_line(f"{seconds:7.1f}  {label}")
