"""One submission's grading, as typed values: a :class:`Job` in, a :class:`JobResult` out.

A job is one (student, assignment): its inputs are plain data (file contents, not paths, so
that a Dask worker elsewhere can run it), and :func:`run_job` runs nbgrader's own ``Autograde``
converter on it, with the course's configuration, in a private course directory of its own:

    <tmp>/nbgrader_config.py                     the course's, copied
    <tmp>/source/<assignment>/                   the course's, copied
    <tmp>/submitted/<student>/<assignment>/      the submission, copied
and a SQLite gradebook holding only the assignment's definitions (one path per process, written anew
for each job: :func:`~autograders.grading.gradebooks.one_engine`)

(its kernel runs the student's cells, never a test cell, and after the last cell hands the answers
over to the checks, whose verdicts become the test cells' outputs, which nbgrader scores:
:mod:`autograders.grading.handover`, :mod:`autograders.grading.checker`), then the autograded
notebooks' active content neutralised, and the feedback pages. What it gives back is a
:class:`JobResult`: each notebook's grades (:class:`CellGrade`, as the private gradebook holds them),
the autograded and feedback files, the tests the checks could not confirm (:class:`Lowered`). A job never raises: a failure is ``ok=False`` with a reason.
The pipeline around it (backends, the course's gradebook) is :mod:`autograders.grading.grading`.
"""

import datetime
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from .gradebooks import course_config, one_engine, private_url
from .checker import Lowered, unconfirmed  # noqa: F401 (Lowered: a result's rechecked entries)
from .progress import _reason

_JOB_LOCK = threading.Lock()  # nbgrader sets environment variables: one job at a time per process


@dataclass
class Job:
    """One submission to grade, as plain data."""

    student: str
    assignment: str
    config: str = ""  # the course's nbgrader_config.py
    source: dict = field(default_factory=dict)  # {relative path: (mode, bytes)} of source/<assignment>/
    submission: dict = field(default_factory=dict)  # the same, of submitted/<student>/<assignment>/
    gradebook: bytes = b""  # a SQLite gradebook holding the assignment's definitions only
    extension: Optional[float] = None  # seconds, or None
    feedback: bool = True  # write the feedback pages
    recheck: bool = True  # the tests run in the grader, never in the student's kernel
    variants: Optional[dict] = None  # the student's numbers (autograders.student.numbers); None: the sheet's

    @property
    def key(self):
        return self.student, self.assignment

    @property
    def size(self):
        return sum(len(data) for _, data in self.submission.values())


@dataclass
class CellGrade:
    """One graded cell's grade, as the job's gradebook holds it."""

    auto_score: Optional[float]
    max_score: float
    needs_manual_grade: bool
    cell_type: str


@dataclass
class NotebookGrades:
    """One notebook's verdicts: ``grades`` and ``comments`` by grade_id."""

    submitted: bool  # the student handed in a file of that name
    late_submission_penalty: Optional[float]
    grades: dict = field(default_factory=dict)  # {grade_id: CellGrade}
    comments: dict = field(default_factory=dict)  # {grade_id: auto_comment}


@dataclass
class JobResult:
    """What grading one submission gave (plain data: it comes back from a worker process)."""

    student: str
    assignment: str
    ok: bool = False
    reason: Optional[str] = None
    timestamp: Optional[str] = None  # the submission's, ISO format
    notebooks: dict = field(default_factory=dict)  # {notebook name: NotebookGrades}
    files: dict = field(default_factory=dict)  # the autograded folder: {relative path: (mode, bytes)}
    feedback: dict = field(default_factory=dict)  # the feedback folder, the same
    rechecked: list = field(default_factory=list)  # [Lowered]
    feedback_failed: Optional[str] = None  # why no feedback page could be made (the grades stand)
    warnings: list = field(default_factory=list)
    log: str = ""
    seconds: float = 0.0
    phases: dict = field(default_factory=dict)  # {phase: seconds}
    stage: Optional[str] = None  # "intake": refused before grading

    @property
    def key(self):
        return self.student, self.assignment


def failed(job, reason, stage=None):
    """The result of ``job`` (or of a (student, assignment) never made into one) that failed for ``reason``."""
    student, assignment = job.key if isinstance(job, Job) else job
    return JobResult(student, assignment, ok=False, reason=reason, log=reason or "", stage=stage)


def environment():
    """Environment of nbgrader and its kernels, as ``editions.nbgrader`` sets it for the CLI."""
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
    os.environ.setdefault("MPLBACKEND", "Agg")


# --- files as data -------------------------------------------------------------------


def read_tree(directory, links=True):
    """{relative path: (mode, bytes)} of the files under ``directory``. ``links=False`` (a submission):
    symbolic and hard links are left out, never followed (the grader reads them, with its own rights: a
    link to the course's source notebook or gradebook, or to /etc/shadow, would hand their contents to
    the student's kernel); ``rglob`` enters no linked folder either."""
    directory = Path(directory)
    return {
        str(p.relative_to(directory)): (p.stat().st_mode & 0o777, p.read_bytes())
        for p in sorted(directory.rglob("*"))
        if p.is_file() and (links or not (p.is_symlink() or p.stat().st_nlink > 1))
    }


def linked_folder(course, student, assignment):
    """The submission folder ``submitted/<student>/<assignment>/`` (or its student's folder) when it is
    a symbolic link, else None: its files would be read wherever it points, as the grader."""
    folder = Path(course) / "submitted" / student
    for path in (folder, folder / assignment):
        if path.is_symlink():
            return path
    return None


def write_tree(directory, files):
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, (mode, data) in files.items():
        target = directory / name
        if ".." in Path(name).parts:
            raise ValueError(f"unsafe path {name!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        os.chmod(target, mode | 0o600)


def replace_tree(target, files):
    """Replace the directory ``target`` by ``files`` (written beside it, then swapped in)."""
    target = Path(target)
    fresh = target.with_name(target.name + ".new")
    old = target.with_name(target.name + ".old")
    for leftover in (fresh, old):
        if leftover.exists():
            shutil.rmtree(leftover)
    write_tree(fresh, files)
    for name, (mode, _) in files.items():
        os.chmod(fresh / name, mode)
    if target.exists():
        target.rename(old)
    fresh.rename(target)
    if old.exists():
        shutil.rmtree(old)


def make_job(course, student, assignment, config_text, template, extension=None, feedback=True, recheck=True,
             variants=None):
    """A :class:`Job` for ``submitted/<student>/<assignment>/`` of ``course``; ``variants``: the student's
    numbers as the grader decided them (never read from the submission)."""
    course = Path(course)
    return Job(student, assignment, config=config_text, source=read_tree(course / "source" / assignment),
               submission=read_tree(course / "submitted" / student / assignment, links=False), gradebook=template,
               extension=extension, feedback=feedback, recheck=recheck, variants=variants)


# --- running one ----------------------------------------------------------------------


def run_job(job):
    """Autograde one submission in a private course directory; return its :class:`JobResult`.

    Never raises: a failure is ``ok=False`` with a ``reason``.
    """
    with _JOB_LOCK:
        start = time.perf_counter()
        result = JobResult(job.student, job.assignment)
        tmp = tempfile.mkdtemp(prefix="mha-grade-")
        try:
            from nbgrader.utils import setenv

            from ..student import numbers as current

            # The checks of this process and of every kernel it starts (nbgrader's, the re-check's) use the
            # numbers handed here, whatever file the submission or an environment variable holds.
            numbers = job.variants or current.sheet_document(job.assignment, job.student)
            with setenv(MHA_CORE_DRAW="0"), current.handing(numbers), one_engine(private_url()):
                _run_job(job, Path(tmp), result)  # (MHA_CORE_DRAW: nobody looks at the figures)
        except BaseException as error:  # noqa: BLE001 (a job never stops the batch)
            if isinstance(error, KeyboardInterrupt):
                raise
            import traceback

            result.ok = False
            result.reason = result.reason or f"{type(error).__name__}: {error}"
            result.log += traceback.format_exc()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        result.seconds = time.perf_counter() - start
        return result


class _Stderr:
    """Send file descriptor 2 (kernels' own log lines) to a file while a job runs."""

    def __init__(self, path):
        self.path = path

    def __enter__(self):
        sys.stderr.flush()
        self.saved = os.dup(2)
        self.file = open(self.path, "wb")
        os.dup2(self.file.fileno(), 2)
        return self

    def __exit__(self, *exc):
        sys.stderr.flush()
        os.dup2(self.saved, 2)
        os.close(self.saved)
        self.file.close()


def job_logger():
    logger = logging.getLogger("autograders.grading.job")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger


def _run_job(job, root, result):
    import nbformat
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.converters import Autograde
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.utils import capture_log

    environment()
    student, assignment = job.student, job.assignment
    (root / "nbgrader_config.py").write_text(job.config)
    write_tree(root / "source" / assignment, job.source)
    write_tree(root / "submitted" / student / assignment, job.submission)
    db_url = private_url()
    Path(db_url.removeprefix("sqlite:///")).write_bytes(job.gradebook)

    config = course_config(root)
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = db_url
    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id, coursedir.student_id = assignment, student

    if job.extension:
        with Gradebook(db_url, coursedir.course_id) as gb:
            gb.update_or_create_student(student)
            gb.update_or_create_submission(assignment, student, extension=datetime.timedelta(seconds=job.extension))

    config.SandboxExecute.checks = job.recheck  # off: the test cells run in the kernel, as nbgrader's own
    app = Autograde(coursedir=coursedir, config=config, log=job_logger())
    app.force = True
    app.create_student = True
    started = time.perf_counter()
    with _Stderr(root / "kernel.log"):
        outcome = capture_log(app)
    result.phases = {"autograde": time.perf_counter() - started}
    result.log = outcome.get("log", "") + outcome.get("error", "")
    result.ok = bool(outcome.get("success"))
    if not result.ok:
        result.reason = _reason(result.log, root / "kernel.log")

    autograded = root / "autograded" / student / assignment
    with Gradebook(db_url, coursedir.course_id) as gb:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            return
        result.timestamp = submission.timestamp.isoformat() if submission.timestamp else None
        if not result.ok:
            return
        for notebook in submission.notebooks:
            result.notebooks[notebook.name] = NotebookGrades(
                submitted=(root / "submitted" / student / assignment / f"{notebook.name}.ipynb").exists(),
                late_submission_penalty=notebook.late_submission_penalty,
                grades={g.name: CellGrade(g.auto_score, g.max_score, g.needs_manual_grade, g.cell_type)
                        for g in notebook.grades},
                comments={c.name: c.auto_comment for c in notebook.comments},
            )
    from .feedback_html import neutralise_file

    started = time.perf_counter()
    for path in sorted(autograded.glob("*.ipynb")):
        result.rechecked += unconfirmed(nbformat.read(str(path), as_version=4))
        neutralise_file(path)  # the formgrader renders it in the instructor's Jupyter: no active content
    result.files = read_tree(autograded)
    result.phases["neutralise"] = time.perf_counter() - started
    if job.feedback:
        from .feedback_html import generate_feedback

        started = time.perf_counter()
        try:
            result.feedback = generate_feedback(root, config, assignment, student, job_logger())
            result.phases["feedback"] = time.perf_counter() - started
        except Exception as error:  # the grades stand; the old page goes, a page saying why replaces it
            from .feedback_html import unavailable_pages

            reason = f"{type(error).__name__}: {error}".strip().splitlines()[0][:300]
            result.feedback_failed = reason
            result.warnings.append(f"no feedback: {reason}")
            result.feedback = unavailable_pages(assignment, list(result.notebooks) or [
                p.stem for p in autograded.glob("*.ipynb")], reason)
