"""Executing the level notebooks headless, one after another, as nbgrader does.

Each source notebook in ``notebooks/`` with graded cells, its numbers filled in as every edition has them
(``autograders/editions/placeholders.py``), is run by nbclient in
a fresh kernel (its start-up counted: a student's submission pays it too), in
its own directory, with ``MHA_CORE_DRAW=0`` as the grader runs it (nobody looks at
the figures: they are not drawn). The target is 30 s for all five levels together
on a 2-core machine, so that autograding a class and the test suite stay quick.
A second pass draws everything, as a student's Run All does (no target: said for
what it costs). Each pass prints its CPU time too (the kernels' and this process's),
which a shared machine's load changes less than the wall time.

    python -m benchmarks notebooks
"""

import os
import resource
import subprocess
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from autograders.editions.editions import SOURCE, assignments
from autograders.editions.placeholders import fill

TARGET = 30.0  # seconds, all levels together


def run(path):
    """Seconds to execute the notebook at ``path``, and the number of cells that raised."""
    nb = fill(nbformat.read(str(path), as_version=4), path)
    start = time.perf_counter()
    NotebookClient(
        nb, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(Path(path).parent)}}
    ).execute(stderr=subprocess.DEVNULL)  # the kernel's own log; the cells' stderr is in the outputs
    seconds = time.perf_counter() - start
    errors = sum(any(o.output_type == "error" for o in c.get("outputs", [])) for c in nb.cells)
    return seconds, errors


def cpu_seconds():
    """CPU time of this process and of its finished children (the kernels), user and system."""
    return sum(getattr(resource.getrusage(who), field) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for field in ("ru_utime", "ru_stime"))


def run_all(paths, draw):
    """Run every notebook of ``paths`` with drawing ``draw``: (seconds in all, CPU seconds in all)."""
    was = os.environ.get("MHA_CORE_DRAW")
    os.environ["MHA_CORE_DRAW"] = "1" if draw else "0"  # the kernels inherit it
    try:
        total, cpu = 0.0, cpu_seconds()
        for path in paths:
            seconds, errors = run(path)
            total += seconds
            print(f"{path.stem:<28} {seconds:>8.2f} {errors:>6}", flush=True)
        return total, cpu_seconds() - cpu
    finally:
        if was is None:
            del os.environ["MHA_CORE_DRAW"]
        else:
            os.environ["MHA_CORE_DRAW"] = was


def main():
    paths = assignments(SOURCE)
    if not paths:
        print("no level notebooks in notebooks/")
        return
    for draw, what in ((False, "as graded (MHA_CORE_DRAW=0)"), (True, "drawn, as a student's Run All")):
        print(f"-- {what}, load average {os.getloadavg()[0]:.1f}")
        print(f"{'notebook':<28} {'seconds':>8} {'errors':>6}")
        total, cpu = run_all(paths, draw)
        print(f"{'total':<28} {total:>8.2f}   ({cpu:.1f} s of CPU)")
        if not draw:
            verdict = "met" if total <= TARGET else "NOT met"
            print(f"{len(paths)} notebooks in {total:.1f} s: {total / TARGET:.2f}x the {TARGET:.0f} s target ({verdict})")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
