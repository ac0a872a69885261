"""Grade a class: every submission autograded by nbgrader, in parallel, merged into one gradebook.

nbgrader has no parallel autograde (jupyter/nbgrader#174) and its gradebook is
SQLite by default, which is not safe for concurrent writers. So a **job** is one
(student, assignment) and runs nbgrader's own ``Autograde`` converter, with the
course's configuration, in a private course directory of its own:

    <tmp>/nbgrader_config.py                     the course's, copied
    <tmp>/source/<assignment>/                   the course's, copied
    <tmp>/submitted/<student>/<assignment>/      the submission, copied
    <tmp>/gradebook.db                           a SQLite gradebook holding only the
                                                 assignment's definitions (a template
                                                 made once per run by the parent)

A worker never touches the course's gradebook. The job's inputs and outputs are
plain data (file contents, scores, comments), so the same job function runs in a
local process pool or on a Dask cluster on other machines. The parent merges the
results one at a time into the course's gradebook (any SQLAlchemy URL), doing
exactly what ``nbgrader autograde`` does to it (the submission's timestamp, each
grade's ``auto_score`` and ``needs_manual_grade``, each comment's
``auto_comment``, the late penalty; manual grades are kept), and replaces that
submission's ``autograded/`` and ``feedback/`` directories, and nothing else.

After nbgrader's autograde, a job calls ``autograders.grading.recheck.recheck(source,
autograded)`` when that module exists: the re-check's verdict is the only source of
autograded points. A test keeps nbgrader's score only up to the re-check's; one the
re-check did not confirm (it failed, was interfered with, or left the test out)
scores 0, and the reason shows in the feedback and on the command line.

A broken submission (malformed JSON, a crash) is reported as failed with a
reason; the other jobs go on. As with ``nbgrader autograde``, a failed
submission's grades are left as they were and its ``autograded/`` folder removed.

The course's gradebook side (definitions copied, results merged) is in
:mod:`autograders.grading.gradebooks`; taking submissions in (a folder, an LMS's zips) in
:mod:`autograders.grading.intake`.

    from autograders.grading.grading import grade
    summary = grade("course", workers=2)
"""

import datetime
import itertools
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
import warnings
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path

from .gradebooks import copy_definitions, course_config, course_db_url, empty_gradebook, ensure_definitions, merge, scores_of
from .intake import pairs
from .progress import Progress, _reason
from .settings import Settings

STATUS_DIR = ".grading"  # the course's grading records
STATUS = f"{STATUS_DIR}/status.json"  # the last grading of each submission
_JOB_LOCK = threading.Lock()  # nbgrader sets environment variables: one job at a time per process


@dataclass
class Summary:
    """What one call of :func:`grade` did."""

    graded: list = field(default_factory=list)  # [(student, assignment)]
    failed: list = field(default_factory=list)  # [(student, assignment, reason)]
    seconds: float = 0.0
    scores: dict = field(default_factory=dict)  # {(student, assignment): {grade_id: (auto_score, max_score)}}
    rechecked: list = field(default_factory=list)  # [(student, assignment, grade_id, old, new, max_score, message)]
    feedback_failed: list = field(default_factory=list)  # [(student, assignment, reason)]: graded, no feedback page
    workers: int = 0
    backend: str = "local"
    phases: Counter = field(default_factory=Counter)  # {phase: seconds summed over the jobs}: where the time went

    @property
    def per_minute(self):
        done = len(self.graded) + len(self.failed)
        return 60.0 * done / self.seconds if self.seconds else 0.0

    def line(self):
        lowered = len({r[:2] for r in self.rechecked})
        return (
            f"graded {len(self.graded)}, failed {len(self.failed)}, in {self.seconds:.1f} s "
            f"({self.per_minute:.1f} submissions/min)"
        ) + (f"; the re-check lowered {len(self.rechecked)} test(s) in {lowered} submission(s)" if self.rechecked else "") + (
            f"; feedback unavailable for {len(self.feedback_failed)} submission(s)" if self.feedback_failed else "")


def _environment():
    """Environment of nbgrader and its kernels, as ``editions.nbgrader`` sets it for the CLI."""
    bin_dir = str(Path(sys.executable).parent)
    if bin_dir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
    os.environ.setdefault("MPLBACKEND", "Agg")


# --- jobs ------------------------------------------------------------------------


def _read_tree(directory, links=True):
    """{relative path: (mode, bytes)} of the files under ``directory``. ``links=False`` (a submission):
    symbolic links are left out, never followed (the grader reads them, with its own rights: a link
    to the course's source notebook or gradebook, or to /etc/shadow, would hand their contents to the
    student's kernel); ``rglob`` enters no linked folder either."""
    directory = Path(directory)
    return {
        str(p.relative_to(directory)): (p.stat().st_mode & 0o777, p.read_bytes())
        for p in sorted(directory.rglob("*"))
        if p.is_file() and (links or not p.is_symlink())
    }


def linked_folder(course, student, assignment):
    """The submission folder ``submitted/<student>/<assignment>/`` (or its student's folder) when it is
    a symbolic link, else None: its files would be read wherever it points, as the grader."""
    folder = Path(course) / "submitted" / student
    for path in (folder, folder / assignment):
        if path.is_symlink():
            return path
    return None


def _write_tree(directory, files):
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, (mode, data) in files.items():
        target = directory / name
        if ".." in Path(name).parts:
            raise ValueError(f"unsafe path {name!r}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        os.chmod(target, mode | 0o600)


def _replace_tree(target, files, mode_default=None):
    """Replace the directory ``target`` by ``files`` (written beside it, then swapped in)."""
    target = Path(target)
    fresh = target.with_name(target.name + ".new")
    old = target.with_name(target.name + ".old")
    for leftover in (fresh, old):
        if leftover.exists():
            shutil.rmtree(leftover)
    _write_tree(fresh, files)
    for name, (mode, _) in files.items():
        os.chmod(fresh / name, mode)
    if target.exists():
        target.rename(old)
    fresh.rename(target)
    if old.exists():
        shutil.rmtree(old)


def discover(course, assignments=None, students=None):
    """[(student, assignment)] of the submissions in ``course/submitted``, sorted."""
    submitted = Path(course) / "submitted"
    return pairs(submitted, assignments, students) if submitted.is_dir() else []


def make_job(course, student, assignment, config_text, template, extension=None, feedback=True, recheck=True):
    """A job's inputs, as plain data (file contents, not paths: a Dask worker may be elsewhere)."""
    course = Path(course)
    return {
        "student": student,
        "assignment": assignment,
        "config": config_text,
        "source": _read_tree(course / "source" / assignment),
        "submission": _read_tree(course / "submitted" / student / assignment, links=False),
        "gradebook": template,
        "extension": extension,  # seconds, or None
        "feedback": feedback,
        "recheck": recheck,
    }


def run_job(job):
    """Autograde one submission in a private course directory; return plain data.

    Never raises: a failure is ``{"ok": False, "reason": ...}``.
    """
    with _JOB_LOCK:
        start = time.perf_counter()
        result = {"student": job["student"], "assignment": job["assignment"], "ok": False, "reason": None,
                  "timestamp": None, "notebooks": {}, "files": {}, "feedback": {}, "rechecked": [], "warnings": [], "log": ""}
        tmp = tempfile.mkdtemp(prefix="mha-grade-")
        try:
            from nbgrader.utils import setenv

            with setenv(MHA_CORE_DRAW="0"):  # nobody looks at the figures: mha_core draws nothing (re-check too)
                _run_job(job, Path(tmp), result)
        except BaseException as error:  # noqa: BLE001 (a job never stops the batch)
            if isinstance(error, KeyboardInterrupt):
                raise
            import traceback

            result["ok"] = False
            result["reason"] = result["reason"] or f"{type(error).__name__}: {error}"
            result["log"] += traceback.format_exc()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        result["seconds"] = time.perf_counter() - start
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


def _job_logger():
    logger = logging.getLogger("autograders.grading.job")
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger


def _run_job(job, root, result):
    from nbgrader.api import Gradebook, MissingEntry
    from nbgrader.converters import Autograde
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.utils import capture_log

    _environment()
    student, assignment = job["student"], job["assignment"]
    (root / "nbgrader_config.py").write_text(job["config"])
    _write_tree(root / "source" / assignment, job["source"])
    _write_tree(root / "submitted" / student / assignment, job["submission"])
    (root / "gradebook.db").write_bytes(job["gradebook"])

    config = course_config(root)
    db_url = f"sqlite:///{root / 'gradebook.db'}"
    config.CourseDirectory.root = str(root)
    config.CourseDirectory.db_url = db_url
    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id, coursedir.student_id = assignment, student

    if job.get("extension"):
        with Gradebook(db_url, coursedir.course_id) as gb:
            gb.update_or_create_student(student)
            gb.update_or_create_submission(assignment, student, extension=datetime.timedelta(seconds=job["extension"]))

    if job.get("recheck", True):  # the hidden tests run in the clean re-check only, never in the student's kernel
        from .autograde import hidden_tests_aside

        hidden_tests_aside(config)
    app = Autograde(coursedir=coursedir, config=config, log=_job_logger())
    app.force = True
    app.create_student = True
    started = time.perf_counter()
    with _Stderr(root / "kernel.log"):
        outcome = capture_log(app)
    result["phases"] = {"autograde": time.perf_counter() - started}
    result["log"] = outcome.get("log", "") + outcome.get("error", "")
    result["ok"] = bool(outcome.get("success"))
    if not result["ok"]:
        result["reason"] = _reason(result["log"], root / "kernel.log")

    with Gradebook(db_url, coursedir.course_id) as gb:
        try:
            submission = gb.find_submission(assignment, student)
        except MissingEntry:
            return
        result["timestamp"] = submission.timestamp.isoformat() if submission.timestamp else None
        if not result["ok"]:
            return
        autograded = root / "autograded" / student / assignment
        started = time.perf_counter()
        if job.get("recheck", True):
            with _Stderr(root / "recheck.log"):
                result["rechecked"] = _recheck(gb, root, student, assignment, autograded,
                                                 Settings.from_config(config, course=root))
        else:  # no re-check, no records: a submission's own copies of them are taken off
            for path in sorted(autograded.glob("*.ipynb")):
                _rewrite(path, lambda nb: _record_lowered(nb, {}))
        result["phases"]["recheck"] = time.perf_counter() - started
        for notebook in submission.notebooks:
            result["notebooks"][notebook.name] = {
                "submitted": (root / "submitted" / student / assignment / f"{notebook.name}.ipynb").exists(),
                "late_submission_penalty": notebook.late_submission_penalty,
                "grades": {
                    g.name: {"auto_score": g.auto_score, "max_score": g.max_score, "needs_manual_grade": g.needs_manual_grade,
                             "cell_type": g.cell_type}
                    for g in notebook.grades
                },
                "comments": {c.name: c.auto_comment for c in notebook.comments},
            }
    from .feedback_html import neutralise_file

    started = time.perf_counter()
    for path in sorted((root / "autograded" / student / assignment).glob("*.ipynb")):
        neutralise_file(path)  # the formgrader renders it in the instructor's Jupyter: no active content
    result["files"] = _read_tree(root / "autograded" / student / assignment)
    result["phases"]["neutralise"] = time.perf_counter() - started
    if job.get("feedback", True):
        from .feedback_html import generate_feedback

        started = time.perf_counter()
        try:
            result["feedback"] = generate_feedback(root, config, assignment, student, _job_logger())
            result["phases"]["feedback"] = time.perf_counter() - started
        except Exception as error:  # the grades stand; the old page goes, a page saying why replaces it
            from .feedback_html import unavailable_pages

            reason = f"{type(error).__name__}: {error}".strip().splitlines()[0][:300]
            result["feedback_failed"] = reason
            result["warnings"].append(f"no feedback: {reason}")
            result["feedback"] = unavailable_pages(assignment, result["notebooks"] or [
                p.stem for p in (root / "autograded" / student / assignment).glob("*.ipynb")], reason)


# --- re-check (autograders/grading/recheck.py, when it exists) ----------------------------


def _recheck_function():
    import importlib

    try:
        module = importlib.import_module(f"{__package__}.recheck")
    except ImportError:
        return None
    return getattr(module, "recheck", None)


def _as_checked(value):
    """(score, message, misconception, confirmed) from what ``recheck`` gives for one test cell:
    score None when it is no finite number (then not confirmed); misconception a known tag or None.
    :func:`_failed_hidden` says whether it failed in the hidden tests."""
    from ..checks.misconceptions import NAMES

    if isinstance(value, (tuple, list)):
        score, message = (value[0] if value else None), (value[-1] if len(value) > 1 else "")
        tag, confirmed = None, True
    elif isinstance(value, dict):
        score, message = value.get("score"), value.get("message")
        tag, confirmed = value.get("misconception"), value.get("confirmed", True)
    else:
        score, message = getattr(value, "score", None), getattr(value, "message", None)
        tag, confirmed = getattr(value, "misconception", None), getattr(value, "confirmed", True)
    try:
        score = float(score)
    except (TypeError, ValueError):
        score = None
    if score is not None and (score != score or abs(score) == float("inf")):
        score = None
    confirmed = score is not None and confirmed is not False
    tag = tag if confirmed and isinstance(tag, str) and tag in NAMES else None
    return score, str(message or ""), tag, confirmed


def _failed_hidden(value):
    """True when the re-check's verdict ``value`` failed the test in its hidden tests (which nbgrader's
    kernel did not run: a wrong answer, not something the re-check lowered)."""
    return getattr(value, "hidden", None) is True or (isinstance(value, dict) and value.get("hidden") is True)


_NOT_CONFIRMED = "the re-check could not confirm this test, so it scores 0"
HIDDEN_NOTE = "Hidden tests: scored {score:g} of {max_score:g}. {message}\n"
RECHECKED_NOTE = "Re-checked: scored {score:g} of {max_score:g}. {message}\n"
RECHECKED = "recheck"  # a test cell's metadata key: the grader's record of a score the re-check lowered


def _record_lowered(nb, verdicts):
    """Put ``verdicts`` ({grade_id: record}) in their test cells' metadata (:data:`RECHECKED`) and
    take that key off every other cell: a submission's own copy of it is the student's writing.
    True when the notebook changed."""
    changed = False
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if cell.cell_type == "code" and grade_id in verdicts:
            cell.metadata[RECHECKED] = verdicts[grade_id]
            changed = True
        elif RECHECKED in cell.metadata:
            del cell.metadata[RECHECKED]
            changed = True
    return changed


def _recheck(gb, root, student, assignment, autograded, settings=None):
    """Confirm each autograded test with the re-check (private gradebook and notebook).

    The re-check's verdict is the only source of autograded points: a test keeps
    nbgrader's score only up to the re-check's, and one the re-check gave no score
    for (it failed, left the test out, or said something that is not a number)
    scores 0, with the reason in its feedback. A lowered test cell gets the grader's record in
    its metadata (:data:`RECHECKED`: score, max_score, confirmed, the check's misconception tag),
    which the class report trusts; no other cell keeps that key. ``settings``: the course's, as
    this job read them (the re-check's limits are nbgrader's kernel's)."""
    check = _recheck_function()
    if check is None:
        return []
    import nbformat
    from nbgrader.api import MissingEntry

    lowered = []
    for path in sorted(autograded.glob("*.ipynb")):
        source = root / "source" / assignment / path.name
        failure = None
        try:
            found = check(str(source), str(path), settings=settings)
        except Exception as error:  # noqa: BLE001 (a broken re-check confirms nothing: say why, grade on)
            found, failure = {}, f"the re-check failed ({type(error).__name__}: {error})"[:300]
        for key in ("cells", "results", "scores"):
            if not isinstance(found, dict) and hasattr(found, key):
                found = getattr(found, key)
        if not isinstance(found, dict):
            found, failure = {}, failure or f"the re-check gave no verdicts ({type(found).__name__})"
        try:
            notebook = gb.find_submission_notebook(path.stem, assignment, student)
        except MissingEntry:
            continue
        nb = nbformat.read(str(path), as_version=4)
        changed, records = False, {}
        autograded_tests = [g for g in notebook.grades if g.cell_type == "code" and g.auto_score is not None]
        order = {gid: i for i, gid in enumerate(found)}
        for grade in sorted(autograded_tests, key=lambda g: (order.get(g.name, len(order)), g.name)):
            hidden = False
            if grade.name in found:
                score, message, tag, confirmed = _as_checked(found[grade.name])
                hidden = confirmed and _failed_hidden(found[grade.name])
                if score is None:
                    score, message = 0.0, f"{_NOT_CONFIRMED}: its verdict was not a score"
            else:
                score, tag, confirmed = 0.0, None, False
                message = f"{_NOT_CONFIRMED}: {failure or 'it gave no verdict for this test'}"
            score = min(max(score, 0.0), grade.max_score)
            if score < grade.auto_score:
                if not hidden:  # a hidden test's failure is the answer's, not the re-check lowering a score
                    lowered.append((grade.name, grade.auto_score, float(score), grade.max_score, message))
                records[grade.name] = {"score": float(score), "max_score": float(grade.max_score),
                                       "confirmed": confirmed, "misconception": tag}
                grade.auto_score = float(score)
                for cell in nb.cells:
                    if cell.metadata.get("nbgrader", {}).get("grade_id") == grade.name and cell.cell_type == "code":
                        cell.outputs.append(nbformat.v4.new_output(
                            "stream", name="stdout", text=(HIDDEN_NOTE if hidden else RECHECKED_NOTE).format(
                                score=score, max_score=grade.max_score, message=message)))
                        changed = True
        changed = _record_lowered(nb, records) or changed
        gb.db.commit()
        if changed:
            _write(path, nb)
    return lowered


def _write(path, nb):
    """Write ``nb`` to ``path`` (nbgrader leaves autograded notebooks read-only: so are they after)."""
    import nbformat

    mode = path.stat().st_mode
    os.chmod(path, mode | 0o200)
    nbformat.write(nb, str(path))
    os.chmod(path, mode)


def _rewrite(path, change):
    """Apply ``change`` (a function of the notebook, True when it changed it) to the notebook at ``path``."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    if change(nb):
        _write(path, nb)


# --- backends ----------------------------------------------------------------------


def _init_worker():
    _environment()
    import nbgrader.converters  # noqa: F401 (imported once per worker, not per job)

    from . import feedback_html  # noqa: F401


def _local(jobs, workers, function=None):
    """Run ``jobs`` in a pool of ``workers`` processes; yield results as they finish.

    A worker process that dies (out of memory, a crash) breaks the whole pool: the
    jobs it took down are run again in a fresh pool, and one that has been caught
    in two breaks is then run alone, so that only the job that kills a worker on its
    own is reported as failed.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    function = function or run_job
    context = multiprocessing.get_context("spawn")
    pending, breaks = deque(jobs), Counter()
    while pending:
        alone = [j for j in pending if breaks[_key(j)] >= 2]
        batch = alone[:1] if alone else list(pending)
        for job in batch:
            pending.remove(job)
        size = 1 if alone else max(1, min(workers, len(batch)))
        pool = ProcessPoolExecutor(max_workers=size, mp_context=context, initializer=_init_worker)
        try:
            futures = {pool.submit(function, job): job for job in batch}
            for future in as_completed(futures):
                job = futures[future]
                try:
                    yield future.result()
                except BrokenProcessPool:
                    breaks[_key(job)] += 1
                    if alone:
                        yield _failed(job, "the grading process died while grading it (out of memory, or a crash)")
                    else:
                        pending.append(job)
                except Exception as error:  # noqa: BLE001
                    yield _failed(job, f"{type(error).__name__}: {error}")
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


def _dask(jobs, scheduler):
    """Run ``jobs`` on the Dask cluster at ``scheduler``; yield results as they finish."""
    from distributed import Client, as_completed

    client = Client(scheduler)
    try:
        futures = client.map(run_job, jobs, key=[f"grade-{j['student']}-{j['assignment']}-{time.time_ns()}" for j in jobs],
                             pure=False)
        by_key = {f.key: j for f, j in zip(futures, jobs)}
        for future in as_completed(futures):
            try:
                yield future.result()
            except Exception as error:  # noqa: BLE001 (e.g. KilledWorker)
                yield _failed(by_key[future.key], f"{type(error).__name__}: {error}")
            finally:
                future.release()
    finally:
        client.close()


def _serial(jobs):
    for job in jobs:
        yield run_job(job)


def _key(job):
    return job["student"], job["assignment"]


def _failed(job, reason):
    return {"student": job["student"], "assignment": job["assignment"], "ok": False, "reason": reason,
            "timestamp": None, "notebooks": {}, "files": {}, "feedback": {}, "rechecked": [], "log": reason, "seconds": 0.0}


# --- progress ---------------------------------------------------------------------


# --- the command -------------------------------------------------------------------


def _load_status(course):
    import json

    path = Path(course) / STATUS
    return json.loads(path.read_text()) if path.exists() else {}


def _save_status(course, status):
    import json

    path = Path(course) / STATUS
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(status, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def _extension_of(gb, student, assignment):
    from nbgrader.api import MissingEntry

    try:
        extension = gb.find_submission(assignment, student).extension
    except MissingEntry:
        return None
    return extension.total_seconds() if extension else None


def grade(course_dir, assignments=None, students=None, workers=None, backend="local", scheduler=None, db_url=None,
          progress=False, feedback=True, new_only=False, log=None, pairs=None, recheck=True, refused=None):
    """Autograde the submissions in ``course_dir/submitted`` (those of ``assignments``
    and ``students`` only, when given) and merge them into the gradebook.

    ``backend``: ``"local"`` (a pool of ``workers`` processes, default one per core),
    ``"dask"`` (the cluster whose scheduler is at ``scheduler``) or ``"serial"`` (in
    this process, one after another). ``db_url``: the gradebook (default: the
    course's ``CourseDirectory.db_url``). ``feedback``: write each submission's HTML
    feedback to ``feedback/<student>/<assignment>/``. ``new_only``: skip submissions
    autograded since they were submitted (as ``nbgrader autograde`` without
    ``--force``). ``pairs``: grade exactly these [(student, assignment)] instead.
    ``recheck``: re-check each autograded notebook with ``autograders.grading.recheck`` when
    it exists (about as long again as the autograde itself; off only for trusted
    submissions). ``refused``: [(student, assignment, reason)] that the intake
    refused (student "" when it could not tell whose): each is recorded as failed
    with its reason, in the summary and in the grading status the report reads.
    Returns a :class:`Summary`.
    """
    start = time.perf_counter()  # importing nbgrader counts too: a command pays it
    from nbgrader.api import Gradebook

    _environment()
    course = Path(course_dir).resolve()
    say = log or (lambda message: None)
    config = course_config(course)
    own_url, course_id = course_db_url(course, config)
    db_url = db_url or own_url
    workers = workers or os.cpu_count() or 1
    summary = Summary(workers=workers if backend == "local" else 0, backend=backend)

    found = discover(course, assignments, students) if pairs is None else sorted(set(map(tuple, pairs)))
    if new_only:
        found = [(s, a) for s, a in found if not _up_to_date(course, s, a)]
    jobs, templates = [], {}
    tmp = Path(tempfile.mkdtemp(prefix="mha-templates-"))
    try:
        empty = None
        for assignment in sorted({a for _, a in found}):
            try:
                ensure_definitions(course, db_url, assignment)
            except LookupError as error:
                templates[assignment] = str(error)
                continue
            if empty is None:
                empty = empty_gradebook(tmp / "empty.db", course_id, course / STATUS_DIR)
            path = tmp / f"{assignment}.db"
            shutil.copyfile(empty, path)
            copy_definitions(db_url, f"sqlite:///{path}", assignment)
            templates[assignment] = path.read_bytes()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    config_text = (course / "nbgrader_config.py").read_text() if (course / "nbgrader_config.py").exists() else ""
    early = []
    with Gradebook(db_url, course_id) as gb:
        for student, assignment in found:
            template = templates.get(assignment)
            if not isinstance(template, bytes):
                early.append(_failed({"student": student, "assignment": assignment}, template or "unknown assignment"))
                continue
            link = linked_folder(course, student, assignment)
            if link is not None:
                early.append(_failed({"student": student, "assignment": assignment},
                                     f"refused: {link.relative_to(course)} is a symbolic link, not a folder"))
                continue
            jobs.append(make_job(course, student, assignment, config_text, template,
                                 _extension_of(gb, student, assignment), feedback, recheck))
    early += [{**_failed({"student": s, "assignment": a}, reason), "stage": "intake"} for s, a, reason in refused or ()]
    # The biggest submissions first, so that the workers finish together.
    jobs.sort(key=lambda j: -sum(len(data) for _, data in j["submission"].values()))

    if backend == "local":
        results = _local(jobs, workers) if workers > 1 else _serial(jobs)
    elif backend == "dask":
        if not scheduler:
            raise ValueError("the dask backend needs a scheduler address (--scheduler tcp://host:8786)")
        results = _dask(jobs, scheduler)
    elif backend == "serial":
        results = _serial(jobs)
    else:
        raise ValueError(f"unknown backend {backend!r} (local, dask or serial)")

    bar = Progress(len(jobs) + len(early)) if progress else None
    status = _load_status(course)
    if refused is not None:  # an intake ran: its earlier refusals of files that named no student are stale
        taken_in = {a for _, a in found} | {a for _, a, _ in refused}
        status = {k: v for k, v in status.items() if not (k.startswith("?") and k.rpartition("/")[2] in taken_in)}
    unnamed = itertools.count()
    with Gradebook(db_url, course_id) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SQLAlchemy's SAWarning from nbgrader's add_submission
        try:
            for result in itertools.chain(early, results):
                student, assignment = result["student"], result["assignment"]
                try:
                    recording = time.perf_counter()
                    _record(course, gb, result, summary)
                    summary.phases.update({**result.get("phases", {}), "job": result.get("seconds", 0.0),
                                           "record": time.perf_counter() - recording})
                except Exception as error:  # noqa: BLE001 (one submission's trouble never stops the rest)
                    gb.db.rollback()
                    result = {**result, "ok": False, "reason": f"could not record it: {type(error).__name__}: {error}"[:300]}
                    summary.graded = [g for g in summary.graded if g != (student, assignment)]
                    summary.failed.append((student, assignment, result["reason"]))
                status[f"{student}/{assignment}" if student else f"?{next(unnamed)}/{assignment}"] = {
                    "ok": result["ok"], "reason": result["reason"], "seconds": round(result.get("seconds", 0.0), 2),
                    "graded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                    **({"stage": result["stage"]} if result.get("stage") else {}),
                    **({"feedback": result["feedback_failed"]} if result.get("feedback_failed") and result["ok"] else {}),
                }
                if bar:
                    bar.update(result["ok"], f"{student}/{assignment}")
        finally:
            _save_status(course, status)
    summary.seconds = time.perf_counter() - start
    say(summary.line())
    return summary


def _record(course, gb, result, summary):
    student, assignment = result["student"], result["assignment"]
    if not student:  # a file the intake refused without knowing whose it is: nothing of anyone's to touch
        summary.failed.append((student, assignment, result["reason"]))
        return
    if result["timestamp"] is not None or result["ok"]:
        merge(gb, result)
    autograded = course / "autograded" / student / assignment
    if result["ok"]:
        _replace_tree(autograded, result["files"])
        if result["feedback"]:
            _replace_tree(course / "feedback" / student / assignment, result["feedback"])
        summary.graded.append((student, assignment))
        summary.scores[(student, assignment)] = scores_of(gb, student, assignment)
        summary.rechecked += [(student, assignment, *r) for r in result["rechecked"]]
        if result.get("feedback_failed"):
            summary.feedback_failed.append((student, assignment, result["feedback_failed"]))
    else:
        if autograded.exists():  # as nbgrader does with a submission it could not grade
            shutil.rmtree(autograded)
        stale = course / "feedback" / student / assignment
        if stale.exists():  # an older grading's feedback would mislead
            shutil.rmtree(stale)
        summary.failed.append((student, assignment, result["reason"] or "autograde failed"))


def _up_to_date(course, student, assignment):
    """True when ``autograded/`` holds a grading at least as new as the submission (nbgrader's rule)."""
    from nbgrader.coursedir import CourseDirectory

    autograded = course / "autograded" / student / assignment
    if not autograded.exists():
        return False
    coursedir = CourseDirectory()
    new = coursedir.get_existing_timestamp(str(course / "submitted" / student / assignment))
    old = coursedir.get_existing_timestamp(str(autograded))
    return not (new is not None and old is not None and new > old)
