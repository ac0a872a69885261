"""Grade a class: every submission autograded by nbgrader, in parallel, merged into one gradebook.

nbgrader has no parallel autograde (jupyter/nbgrader#174) and its gradebook is
SQLite by default, which is not safe for concurrent writers. So a submission flows
down, each step in its own module, none importing one above it:

- intake (:mod:`autograders.intake`, beside this package): the submissions found in ``submitted/``,
  or taken in from an LMS's zips;
- a :class:`~autograders.grading.jobs.Job` each (:mod:`autograders.grading.jobs`): plain data,
  run by nbgrader's own ``Autograde`` in a private course directory with a gradebook of its own,
  its kernel sandboxed (:mod:`autograders.grading.autograde`, :mod:`autograders.grading.sandbox`);
- the checks outside the student's process, on the answers the kernel hands over after its last cell
  (:mod:`autograders.grading.handover`; no test cell runs in the student's kernel), whose verdicts
  become the test cells' outputs (:mod:`autograders.grading.checker`), the only source of autograded points;
- a :class:`~autograders.grading.jobs.JobResult` back, from a local process pool, a Dask
  cluster or this process (:mod:`autograders.grading.backends`);
- the course's gradebook (:mod:`autograders.grading.gradebooks`), any SQLAlchemy URL, into
  which this module merges the results one at a time, doing exactly what ``nbgrader autograde``
  does to it (the submission's timestamp, each grade's ``auto_score`` and ``needs_manual_grade``,
  each comment's ``auto_comment``, the late penalty; manual grades are kept), and that
  submission's ``autograded/`` and ``feedback/`` directories replaced, and nothing else;
- then the class report (:mod:`autograders.report`, beside this package), read from that gradebook.

A broken submission (malformed JSON, a crash) is reported as failed with a
reason; the other jobs go on. As with ``nbgrader autograde``, a failed
submission's grades are left as they were and its ``autograded/`` folder removed.
Each grading is recorded in ``.grading/status.json`` (:data:`STATUS`), which the report reads.

    from autograders.grading.grading import grade
    summary = grade("course", workers=2)
"""

import datetime
import itertools
import os
import shutil
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import backends
from .gradebooks import copy_definitions, course_config, course_db_url, empty_gradebook, ensure_definitions, merge, scores_of
from ..intake.folder import pairs
from .jobs import environment, failed, linked_folder, make_job, replace_tree, run_job  # noqa: F401 (this module's API too)
from .progress import Progress

STATUS_DIR = ".grading"  # the course's grading records
STATUS = f"{STATUS_DIR}/status.json"  # the last grading of each submission


@dataclass
class Summary:
    """What one call of :func:`grade` did."""

    graded: list = field(default_factory=list)  # [(student, assignment)]
    failed: list = field(default_factory=list)  # [(student, assignment, reason)]
    seconds: float = 0.0
    scores: dict = field(default_factory=dict)  # {(student, assignment): {grade_id: (auto_score, max_score)}}
    rechecked: list = field(default_factory=list)  # [(student, assignment, grade_id, None, 0, max_score, message)]: not confirmed
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
        ) + (f"; the checks could not confirm {len(self.rechecked)} test(s) in {lowered} submission(s)" if self.rechecked else "") + (
            f"; feedback unavailable for {len(self.feedback_failed)} submission(s)" if self.feedback_failed else "")


def discover(course, assignments=None, students=None):
    """[(student, assignment)] of the submissions in ``course/submitted``, sorted."""
    submitted = Path(course) / "submitted"
    return pairs(submitted, assignments, students) if submitted.is_dir() else []



# --- the command -------------------------------------------------------------------


STATUS_TODO = "it is the grader's own record of each grading: remove it (the next grading writes it anew)"


def load_status(course):
    from ..common.inputs import InputError, read_json

    path = Path(course) / STATUS
    if not path.exists():
        return {}
    status = read_json(path, STATUS_TODO)
    if not isinstance(status, dict):
        raise InputError(path, "not a JSON object ({\"student/assignment\": {...}, ...})", STATUS_TODO)
    return status


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
          progress=False, feedback=True, new_only=False, log=None, pairs=None, recheck=True, refused=None,
          unisolated=False):
    """Autograde the submissions in ``course_dir/submitted`` (those of ``assignments``
    and ``students`` only, when given) and merge them into the gradebook.

    ``backend``: ``"local"`` (a pool of ``workers`` processes, default one per core),
    ``"dask"`` (the cluster whose scheduler is at ``scheduler``) or ``"serial"`` (in
    this process, one after another). ``db_url``: the gradebook (default: the
    course's ``CourseDirectory.db_url``). ``feedback``: write each submission's HTML
    feedback to ``feedback/<student>/<assignment>/``. ``new_only``: skip submissions
    autograded since they were submitted (as ``nbgrader autograde`` without
    ``--force``). ``pairs``: grade exactly these [(student, assignment)] instead.
    ``recheck``: after the last cell, each kernel hands its answers over to the checks
    (:mod:`autograders.grading.handover`), which decide the points and run the hidden tests
    outside the student's process (off only for trusted submissions). ``refused``: [(student, assignment, reason)] that the intake
    refused (student "" when it could not tell whose): each is recorded as failed
    with its reason, in the summary and in the grading status the report reads.
    Returns a :class:`Summary`.
    """
    start = time.perf_counter()  # importing nbgrader counts too: a command pays it
    from nbgrader.api import Gradebook

    environment()
    course = Path(course_dir).resolve()
    say = log or (lambda message: None)
    # The course's config, the status and the variants' files are read before anything is graded:
    # a broken one stops here (an InputError naming its line).
    config = course_config(course)
    load_status(course)
    own_url, course_id = course_db_url(course, config)
    db_url = db_url or own_url
    workers = workers or os.cpu_count() or 1
    summary = Summary(workers=workers if backend == "local" else 0, backend=backend)

    found = discover(course, assignments, students) if pairs is None else sorted(set(map(tuple, pairs)))
    if new_only:
        found = [(s, a) for s, a in found if not _up_to_date(course, s, a)]
    numbers = _variants(course, db_url, course_id, found)  # a VariantError here: nothing graded
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
                empty = empty_gradebook(tmp / "empty.db", course_id)
            path = tmp / f"{assignment}.db"
            shutil.copyfile(empty, path)
            copy_definitions(db_url, f"sqlite:///{path}", assignment)
            templates[assignment] = path.read_bytes()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    config_text = (course / "nbgrader_config.py").read_text() if (course / "nbgrader_config.py").exists() else ""
    if unisolated:  # asked for on the command line (trusted work only): the kernels' launcher reads it there
        config_text += "\nc.SandboxExecute.unisolated = True  # grade --unisolated\n"
    early = []
    with Gradebook(db_url, course_id) as gb:
        for student, assignment in found:
            template = templates.get(assignment)
            if not isinstance(template, bytes):
                early.append(failed((student, assignment), template or "unknown assignment"))
                continue
            link = linked_folder(course, student, assignment)
            if link is not None:
                early.append(failed((student, assignment),
                                    f"refused: {link.relative_to(course)} is a symbolic link, not a folder"))
                continue
            jobs.append(make_job(course, student, assignment, config_text, template,
                                 _extension_of(gb, student, assignment), feedback, recheck,
                                 numbers.get((student, assignment))))
    early += [failed((s, a), reason, stage="intake") for s, a, reason in refused or ()]
    # The biggest submissions first, so that the workers finish together.
    jobs.sort(key=lambda j: -j.size)

    if backend == "local":
        results = backends.local(jobs, workers) if workers > 1 else backends.serial(jobs)
    elif backend == "dask":
        if not scheduler:
            raise ValueError("the dask backend needs a scheduler address (--scheduler tcp://host:8786)")
        results = backends.dask(jobs, scheduler)
    elif backend == "serial":
        results = backends.serial(jobs)
    else:
        raise ValueError(f"unknown backend {backend!r} (local, dask or serial)")

    bar = Progress(len(jobs) + len(early)) if progress else None
    status = load_status(course)
    if refused is not None:  # an intake ran: its earlier refusals of files that named no student are stale
        taken_in = {a for _, a in found} | {a for _, a, _ in refused}
        status = {k: v for k, v in status.items() if not (k.startswith("?") and k.rpartition("/")[2] in taken_in)}
    unnamed = itertools.count()
    with Gradebook(db_url, course_id) as gb, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SQLAlchemy's SAWarning from nbgrader's add_submission
        try:
            for result in itertools.chain(early, results):
                student, assignment = result.key
                try:
                    recording = time.perf_counter()
                    _record(course, gb, result, summary)
                    summary.phases.update({**result.phases, "job": result.seconds, "record": time.perf_counter() - recording})
                except Exception as error:  # noqa: BLE001 (one submission's trouble never stops the rest)
                    gb.db.rollback()
                    result = replace(result, ok=False, reason=f"could not record it: {type(error).__name__}: {error}"[:300])
                    summary.graded = [g for g in summary.graded if g != (student, assignment)]
                    summary.failed.append((student, assignment, result.reason))
                status[f"{student}/{assignment}" if student else f"?{next(unnamed)}/{assignment}"] = _status_entry(result)
                if bar:
                    bar.update(result.ok, f"{student}/{assignment}")
        finally:
            _save_status(course, status)
    summary.seconds = time.perf_counter() - start
    say(summary.line())
    return summary


def _variants(course, db_url, course_id, found):
    """Each submission's numbers, decided from the course's key and the student's folder
    (:mod:`autograders.variants.course`), recorded in ``variants/<assignment>.csv``; {} without variants."""
    from nbgrader.api import Gradebook

    from ..variants import course as variants

    if not variants.enabled(course) or not found:
        return {}
    with Gradebook(db_url, course_id) as gb:
        students = [s.id for s in gb.students]
    decided = variants.decide(course, course_id, found, students)
    variants.write_record(course, decided)
    return decided


def _status_entry(result):
    """One submission's entry in :data:`STATUS` (its keys are what the report reads)."""
    return {
        "ok": result.ok, "reason": result.reason, "seconds": round(result.seconds, 2),
        "graded_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        **({"stage": result.stage} if result.stage else {}),
        **({"feedback": result.feedback_failed} if result.feedback_failed and result.ok else {}),
    }


def _record(course, gb, result, summary):
    student, assignment = result.key
    if not student:  # a file the intake refused without knowing whose it is: nothing of anyone's to touch
        summary.failed.append((student, assignment, result.reason))
        return
    if result.timestamp is not None or result.ok:
        merge(gb, result)
    autograded = course / "autograded" / student / assignment
    if result.ok:
        replace_tree(autograded, result.files)
        if result.feedback:
            replace_tree(course / "feedback" / student / assignment, result.feedback)
        summary.graded.append((student, assignment))
        summary.scores[(student, assignment)] = scores_of(gb, student, assignment)
        summary.rechecked += [(student, assignment, *r) for r in result.rechecked]
        if result.feedback_failed:
            summary.feedback_failed.append((student, assignment, result.feedback_failed))
    else:
        if autograded.exists():  # as nbgrader does with a submission it could not grade
            shutil.rmtree(autograded)
        stale = course / "feedback" / student / assignment
        if stale.exists():  # an older grading's feedback would mislead
            shutil.rmtree(stale)
        summary.failed.append((student, assignment, result.reason or "autograde failed"))


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
