"""Grading a class: serial ``nbgrader autograde`` against ``python -m autograders grade``.

A synthetic class of 40 students x 5 levels (200 notebooks): each submission is a
level's source notebook (every answer right) with up to three of the level's known
mistakes (``tests/fixtures/level{N}.py``) put in, a few left blank. Two copies of
one course grade it: one with ``nbgrader autograde "*"`` (serial, nbgrader's own
command), one with the tool (``grade``: parallel workers, plus the per-student
feedback HTML and the report). Every grade row must be equal. Target: the tool at
least 2x faster on a 2-core machine.

    python -m benchmarks grading                  # 40 students, every level
    MHA_BENCH_STUDENTS=10 python -m benchmarks grading
"""

import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat

from autograders import editions

ROOT = Path(__file__).resolve().parent.parent
TARGET = 2.0  # times faster than serial nbgrader autograde


def _fixtures(stem):
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import importlib

    level = stem.split("_")[0].removeprefix("level")
    try:
        return importlib.import_module(f"tests.fixtures.level{level}").MISTAKES
    except ImportError:
        return []


def _with_answer(nb, cell_id, code):
    nb = nbformat.from_dict(nb)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == cell_id:
            cell.source = code
    return nb


def make_class(course, students, assignments=None, seed=0, blank_every=9):
    """Write a synthetic class into ``course/submitted``: ``students`` (a number or a list
    of ids) x ``assignments`` (default: every level released in the course). Return
    [(student, assignment)]."""
    course = Path(course)
    rng = random.Random(seed)
    names = assignments or sorted(p.name for p in (course / "source").iterdir() if p.is_dir())
    ids = [f"student{i:03d}" for i in range(students)] if isinstance(students, int) else list(students)
    made = []
    for number, student in enumerate(ids):
        for name in names:
            source = editions.read(course / "source" / name / f"{name}.ipynb")
            if blank_every and number % blank_every == blank_every - 1:
                nb = editions.read(course / "release" / name / f"{name}.ipynb")
            else:
                nb = source
                mistakes = _fixtures(name)
                chosen, cells = [], set()
                for mistake in rng.sample(mistakes, min(len(mistakes), rng.randint(0, 3))):
                    if mistake.cell not in cells:
                        cells.add(mistake.cell)
                        chosen.append(mistake)
                for mistake in chosen:
                    nb = _with_answer(nb, mistake.cell, mistake.code)
            target = course / "submitted" / student / name
            target.mkdir(parents=True, exist_ok=True)
            nbformat.write(nb, str(target / f"{name}.ipynb"))
            (target / "timestamp.txt").write_text(f"2025-03-{1 + number % 28:02d} 12:{number % 60:02d}:00.000000 UTC")
            made.append((student, name))
    return made


def gradebook_rows(db_url):
    """{(student, assignment, notebook, cell, what): value} of every grade and comment, and
    each submission's timestamp: what must be equal between two gradings."""
    from nbgrader.api import Gradebook

    rows = {}
    with Gradebook(db_url) as gb:
        for assignment in gb.assignments:
            for submission in assignment.submissions:
                student = submission.student.id
                rows[(student, assignment.name, "", "", "timestamp")] = submission.timestamp
                for notebook in submission.notebooks:
                    rows[(student, assignment.name, notebook.name, "", "late")] = notebook.late_submission_penalty
                    for g in notebook.grades:
                        rows[(student, assignment.name, notebook.name, g.name, "grade")] = (
                            g.auto_score, g.manual_score, g.extra_credit, g.max_score, g.needs_manual_grade)
                    for c in notebook.comments:
                        rows[(student, assignment.name, notebook.name, c.name, "comment")] = (c.auto_comment, c.manual_comment)
    return rows


def _load():
    try:
        return "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "load average unknown"


def main():
    from autograders.grading import grade
    from autograders.report import build

    students = int(os.environ.get("MHA_BENCH_STUDENTS", "40"))
    workers = int(os.environ.get("MHA_BENCH_WORKERS", "0")) or os.cpu_count()
    with tempfile.TemporaryDirectory(prefix="mha-bench-grading-") as tmp:
        serial, tool = Path(tmp) / "serial", Path(tmp) / "tool"
        names = editions.build_release(serial, say=lambda message: None)
        made = make_class(serial, students, names)
        shutil.copytree(serial, tool)
        print(f"{students} students x {len(names)} levels = {len(made)} submissions; {os.cpu_count()} cores; {_load()}",
              flush=True)

        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "nbgrader", "autograde", "*", "--log-level=ERROR"], cwd=serial,
                       env=editions.nbgrader_env(), check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        serial_seconds = time.perf_counter() - start
        print(f"serial nbgrader autograde: {serial_seconds:7.1f} s  {60 * len(made) / serial_seconds:6.1f} submissions/min",
              flush=True)

        start = time.perf_counter()
        summary = grade(tool, workers=workers, progress=True)
        build(tool)
        tool_seconds = time.perf_counter() - start
        print(f"grade ({workers} workers) + feedback + report: {tool_seconds:7.1f} s  "
              f"{60 * len(made) / tool_seconds:6.1f} submissions/min  ({summary.line()})", flush=True)

        a = gradebook_rows(f"sqlite:///{serial}/gradebook.db")
        b = gradebook_rows(f"sqlite:///{tool}/gradebook.db")
        differ = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        print(f"grade rows compared: {len(a)}; different: {len(differ)}" + "".join(f"\n  {k}: {a.get(k)} vs {b.get(k)}" for k in differ[:10]))
        ratio = serial_seconds / tool_seconds
        verdict = "met" if ratio >= TARGET and not differ else "NOT met"
        print(f"speed-up {ratio:.2f}x (target {TARGET:.0f}x: {verdict}); {_load()}")


if __name__ == "__main__":
    main()
