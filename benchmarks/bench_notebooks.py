"""Executing the level notebooks headless, one after another, as nbgrader does.

Each source notebook in ``notebooks/`` with graded cells is run by nbclient in
a fresh kernel (its start-up counted: a student's submission pays it too), in
its own directory. The target is 30 s for all five levels together on a
2-core machine, so that autograding a class and the test suite stay quick.

    python -m benchmarks notebooks
"""

import subprocess
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

from autograders.editions.editions import SOURCE, assignments

TARGET = 30.0  # seconds, all levels together


def run(path):
    """Seconds to execute the notebook at ``path``, and the number of cells that raised."""
    nb = nbformat.read(str(path), as_version=4)
    start = time.perf_counter()
    NotebookClient(
        nb, timeout=120, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(Path(path).parent)}}
    ).execute(stderr=subprocess.DEVNULL)  # the kernel's own log; the cells' stderr is in the outputs
    seconds = time.perf_counter() - start
    errors = sum(any(o.output_type == "error" for o in c.get("outputs", [])) for c in nb.cells)
    return seconds, errors


def main():
    paths = assignments(SOURCE)
    if not paths:
        print("no level notebooks in notebooks/")
        return
    total = 0.0
    print(f"{'notebook':<28} {'seconds':>8} {'errors':>6}")
    for path in paths:
        seconds, errors = run(path)
        total += seconds
        print(f"{path.stem:<28} {seconds:>8.2f} {errors:>6}", flush=True)
    print(f"{'total':<28} {total:>8.2f}")
    verdict = "met" if total <= TARGET else "NOT met"
    print(f"{len(paths)} notebooks in {total:.1f} s: {total / TARGET:.2f}x the {TARGET:.0f} s target ({verdict})")


if __name__ == "__main__":
    main()
