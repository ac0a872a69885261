"""Where the jobs run: a local pool of processes, a Dask cluster, or this process.

Each backend takes :class:`~autograders.grading.jobs.Job` s and yields their
:class:`~autograders.grading.jobs.JobResult` s as they finish, one per job, whatever happens to the
process that ran it (a job that kills its worker is reported failed, alone).
"""

import contextlib
import os
import shutil
import tempfile
import time
from collections import Counter, deque

from .jobs import environment, failed, run_job


PRELOAD = ["autograders.grading.jobs", "nbgrader.converters", "autograders.grading.feedback_html"]


def _init_worker(env=None):
    """A worker's start: the grader's environment as it is now (``env``: a worker is forked from the forkserver,
    which has the environment of its own start). What every job imports, the forkserver imported (PRELOAD).
    Its temporary files go in the pool's folder (``TMPDIR``), removed with the pool whatever becomes of it."""
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    tempfile.tempdir = os.environ.get("TMPDIR") or None
    environment()


def _folder():
    """A folder for a grading's temporary files, removed with it; searchable by a throwaway user (the way to a
    kernel's folder when grading unisolated)."""
    folder = tempfile.mkdtemp(prefix="mha-grading-")
    os.chmod(folder, 0o711)
    return folder


@contextlib.contextmanager
def temporary_files():
    """This process's grading files (its private gradebook, its kernels' folders, the font list) in a folder of
    their own while the block runs, removed at its end: nothing of a grading is left in /tmp."""
    from . import gradebooks, prepared

    folder, before = _folder(), tempfile.tempdir
    tempfile.tempdir = folder
    try:
        yield folder
    finally:
        tempfile.tempdir = before
        gradebooks.forget_private()
        prepared.forget()
        shutil.rmtree(folder, ignore_errors=True)


def local(jobs, workers, function=None):
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
    # The workers are forked from a forkserver that imported PRELOAD (1.1 s of CPU) once, not each worker on
    # its own as "spawn" would; the forkserver itself is started as "spawn" does, from a fresh interpreter.
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    pending, breaks = deque(jobs), Counter()
    while pending:
        alone = [j for j in pending if breaks[j.key] >= 2]
        batch = alone[:1] if alone else list(pending)
        for job in batch:
            pending.remove(job)
        size = 1 if alone else max(1, min(workers, len(batch)))
        folder = _folder()  # the workers' temporary files (their gradebooks, kernels' folders, font lists)
        pool = ProcessPoolExecutor(max_workers=size, mp_context=context, initializer=_init_worker,
                                   initargs=({**os.environ, "TMPDIR": folder},))
        try:
            futures = {pool.submit(function, job): job for job in batch}
            for future in as_completed(futures):
                job = futures[future]
                try:
                    yield future.result()
                except BrokenProcessPool:
                    breaks[job.key] += 1
                    if alone:
                        yield failed(job, "the grading process died while grading it (out of memory, or a crash)")
                    else:
                        pending.append(job)
                except Exception as error:  # noqa: BLE001
                    yield failed(job, f"{type(error).__name__}: {error}")
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
            shutil.rmtree(folder, ignore_errors=True)


def dask(jobs, scheduler):
    """Run ``jobs`` on the Dask cluster at ``scheduler``; yield results as they finish."""
    from distributed import Client, as_completed

    client = Client(scheduler)
    try:
        futures = client.map(run_job, jobs, key=[f"grade-{j.student}-{j.assignment}-{time.time_ns()}" for j in jobs],
                             pure=False)
        by_key = {f.key: j for f, j in zip(futures, jobs)}
        for future in as_completed(futures):
            try:
                yield future.result()
            except Exception as error:  # noqa: BLE001 (e.g. KilledWorker)
                yield failed(by_key[future.key], f"{type(error).__name__}: {error}")
            finally:
                future.release()
    finally:
        client.close()


def serial(jobs):
    with temporary_files():
        for job in jobs:
            yield run_job(job)
