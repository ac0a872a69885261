"""Grading a class: serial ``nbgrader autograde`` against ``python -m autograders grade``.

A synthetic class of 40 students x 5 levels (200 notebooks): each submission is a
level's source notebook (every answer right) with up to three of the level's known
mistakes (``tests/fixtures/level{N}.py``) put in, a few left blank. Four copies of
one course grade it:

- ``nbgrader autograde "*"``, serial, as nbgrader ships it (the course's
  ``nbgrader_config.py`` without the sandbox: nbgrader's own executor, a fresh
  kernel per notebook): what an instructor runs without this tool, the baseline;
- ``nbgrader autograde "*"``, serial, in the course as the tool writes it
  (each kernel exec'd cold in a bubblewrap sandbox of its own): how much of the gain is not
  parallelism;
- ``grade`` doing the same work (parallel workers, ``recheck=False, feedback=False``);
- ``grade`` as shipped (each notebook also re-checked in a clean process,
  per-student feedback HTML, then the report).

Every gradebook row must be equal. Target: ``grade`` as shipped at least 3x faster than the
baseline on a 2-core machine, variants on and off (issue "Trust the grade": isolation first, never
traded for speed).

Each row prints the load average (1, 5, 15 min): on a shared machine compare rows of one
run, never absolute times across runs. The two ``grade`` rows say where the time went
(seconds summed over the jobs, per phase; the report's own time).

    python -m benchmarks grading                  # 40 students, every level
    MHA_BENCH_STUDENTS=8 python -m benchmarks grading
    MHA_BENCH_SANDBOX_SERIAL=0 ...                # without the second serial nbgrader row
    MHA_BENCH_VARIANTS=1 ...                      # the two ``grade`` rows with variants on
    MHA_BENCH_AGAINST=/path/to/other/checkout ... # also that checkout's ``grade`` as shipped, side by side

With ``MHA_BENCH_AGAINST`` (another checkout of the workbook with its own ``.venv``, e.g. main's), that
checkout builds a course of its own, the same submissions are copied in, and its ``grade`` + report (as
shipped) runs ``MHA_BENCH_ROUNDS`` times (default 1) alternating with this checkout's; each row also says
the CPU seconds of every process it waited for (Linux: RUSAGE_CHILDREN of a subprocess per run; not the workers a
forkserver forked) and, with
``MHA_BENCH_CGROUP=/sys/fs/cgroup/cpuacct`` (a cgroup v1 cpuacct hierarchy; root), of every process each
side started, in a cgroup of its own removed afterwards. The
second serial nbgrader row and the same-work row are left out then.

With variants on, the two ``grade`` copies have a course key (every student their own numbers,
handed to the kernel and the re-check): their scores then differ from nbgrader's, which grades
every student on the sheet's numbers, wherever a problem varies; so the two ``grade`` rows are
compared with each other, and nbgrader's rows only tell the time.
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

from autograders.editions import editions

ROOT = Path(__file__).resolve().parent.parent
TARGET = 3.0  # times faster than serial nbgrader autograde, as shipped (issue "Trust the grade")


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


def stock_config(course):
    """Make ``course`` grade as nbgrader ships: its config without the sandbox block."""
    config = Path(course) / "nbgrader_config.py"
    text = config.read_text()
    marker = "from autograders.grading import autograde"
    if marker not in text:
        raise RuntimeError(f"{config} has no sandbox block to remove ({marker!r} not found)")
    config.write_text(text.split(marker)[0])


def _load():
    try:
        return "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "load average unknown"


def _timed(label, made, function):
    start = time.perf_counter()
    detail = function()
    seconds = time.perf_counter() - start
    print(f"{label:<46} {seconds:7.1f} s  {60 * len(made) / seconds:6.1f} submissions/min  ({_load()})  {detail or ''}",
          flush=True)
    return seconds


def _phases(summary):
    """Where a grading's time went: seconds summed over its jobs (in the workers), and the
    parent's merging into the gradebook."""
    order = ("autograde", "recheck", "feedback", "neutralise", "job", "record")
    return "summed over jobs: " + ", ".join(
        f"{name} {summary.phases[name]:.1f} s" + (" (parent)" if name == "record" else "")
        for name in order if name in summary.phases)


def _compare(label, a, b):
    differ = sorted((k for k in set(a) | set(b) if a.get(k) != b.get(k)), key=repr)
    print(f"{label}: {len(a)} gradebook rows compared, {len(differ)} different"
          + "".join(f"\n  {k}: {a.get(k)} vs {b.get(k)}" for k in differ[:10]), flush=True)
    return not differ


def with_variants(course, students, key=None):
    """Give ``course`` a course key (a copy of ``key``'s, or a new one) and its students in the
    gradebook (the variants refuse strangers); return the key's path."""
    from nbgrader.api import Gradebook

    from autograders.variants import course as variants

    path = Path(course) / variants.KEY_FILE
    if key:
        shutil.copy2(key, path)
    else:
        variants.init(course)
    with Gradebook(f"sqlite:///{course}/gradebook.db", editions.COURSE_ID) as gb:
        for student in sorted(students):
            gb.add_student(student)
    return path


_SHIPPED = ("import sys, time; from autograders.grading.grading import grade; from autograders.report import build; "
            "s = grade(sys.argv[1], workers=int(sys.argv[2])); start = time.perf_counter(); build(sys.argv[1]); "
            "print(s.line() + ', report %.1f s' % (time.perf_counter() - start))")


def _cgroup(side):
    """A cpuacct cgroup of its own for ``side``'s gradings under ``$MHA_BENCH_CGROUP`` (a cgroup v1 cpuacct
    hierarchy, e.g. /sys/fs/cgroup/cpuacct: every process counted, kernels in their namespaces too), or None."""
    root = os.environ.get("MHA_BENCH_CGROUP")
    if not root:
        return None
    path = Path(root) / f"mha-bench-{side}-{os.getpid()}"
    path.mkdir(exist_ok=True)
    return path


def shipped_in(checkout, course, workers, cpu=None, cgroup=None):
    """``grade`` + report as shipped, by ``checkout``'s own code and interpreter, in a subprocess: what it said.
    ``cpu``: a list that gets (CPU seconds of the processes it waited for, of its cgroup's or None)."""
    import resource

    python = Path(checkout) / ".venv" / "bin" / "python"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join([str(python.parent), env.get("PATH", "")])
    usage = lambda: int((cgroup / "cpuacct.usage").read_text()) / 1e9 if cgroup else 0.0  # noqa: E731
    waited = lambda: (lambda r: r.ru_utime + r.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))  # noqa: E731
    before, counted = waited(), usage()
    join = (lambda: (cgroup / "cgroup.procs").write_text(str(os.getpid()))) if cgroup else None
    done = subprocess.run([str(python), "-c", _SHIPPED, str(course), str(workers)], cwd=checkout, env=env,
                          capture_output=True, text=True, preexec_fn=join)
    spent = (waited() - before, usage() - counted if cgroup else None)
    if cpu is not None:
        cpu.append(spent)
    line = (done.stdout.strip().splitlines()[-1:] or [f"exit {done.returncode}: {done.stderr.strip()[-300:]}"])[0]
    return f"{line}; CPU {spent[0]:.1f} s" + (f" ({spent[1]:.1f} s in its cgroup)" if cgroup else "")


def side_by_side(against, serial, made, workers, tmp):
    """This checkout's ``grade`` as shipped against ``against``'s, on the same submissions, alternating."""
    other_python = Path(against) / ".venv" / "bin" / "python"
    course = {"this": Path(tmp) / "this", "other": Path(tmp) / "other"}
    shutil.copytree(serial, course["this"])
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = os.pathsep.join([str(other_python.parent), env.get("PATH", "")])
    subprocess.run([str(other_python), "-c", "import sys; from autograders.editions import editions; "
                    "editions.build_release(sys.argv[1], say=lambda m: None)", str(Path(tmp) / "other-built")],
                   cwd=against, env=env, check=True, capture_output=True)
    shutil.copytree(serial / "submitted", Path(tmp) / "other-built" / "submitted")
    seconds, cpu = {"this": [], "other": []}, {"this": [], "other": []}
    cgroups = {side: _cgroup(side) for side in seconds}
    try:
        for round_ in range(int(os.environ.get("MHA_BENCH_ROUNDS", "1"))):
            for side, checkout, template in (("this", ROOT, serial), ("other", against, Path(tmp) / "other-built")):
                shutil.rmtree(course[side], ignore_errors=True)
                shutil.copytree(template, course[side])
                secs = _timed(f"grade as shipped, {side} ({Path(checkout).name}), round {round_ + 1}", made,
                              lambda: shipped_in(checkout, course[side], workers, cpu[side], cgroups[side]))
                seconds[side].append(secs)
    finally:
        for path in filter(None, cgroups.values()):
            for attempt in range(20):  # a grading's last processes may take a moment to go
                try:
                    path.rmdir()
                    break
                except OSError as error:
                    time.sleep(0.5) if attempt < 19 else print(f"cgroup {path} not removed: {error}", flush=True)
    return course, seconds, cpu


def main():
    from autograders.grading.grading import grade
    from autograders.report import build

    students = int(os.environ.get("MHA_BENCH_STUDENTS", "40"))
    workers = int(os.environ.get("MHA_BENCH_WORKERS", "0")) or os.cpu_count()
    with tempfile.TemporaryDirectory(prefix="mha-bench-grading-") as tmp:
        stock, serial, full, bare = (Path(tmp) / name for name in ("stock", "serial", "full", "bare"))
        names = editions.build_release(serial, say=lambda message: None)
        made = make_class(serial, students, names)
        for copy in (stock, full, bare):
            shutil.copytree(serial, copy)
        stock_config(stock)
        varied = os.environ.get("MHA_BENCH_VARIANTS", "0") != "0"
        if varied:
            with_variants(bare, {student for student, _ in made}, key=with_variants(full, {student for student, _ in made}))
        print(f"{students} students x {len(names)} levels = {len(made)} submissions; {os.cpu_count()} cores, "
              f"{workers} workers; variants {'on' if varied else 'off'}; {_load()}", flush=True)

        def nbgrader_serial(course):
            done = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", "*", "--log-level=ERROR"], cwd=course,
                                  env=editions.nbgrader_env(), text=True, capture_output=True)
            errors = [line for line in (done.stdout + done.stderr).splitlines() if "ERROR" in line]
            return f"exit {done.returncode}" + "".join(f"\n  {line[:200]}" for line in errors[:10])

        def tool_bare():
            summary = grade(bare, workers=workers, feedback=False, recheck=False)
            return f"{summary.line()}\n  {_phases(summary)}"

        def tool_full():
            summary = grade(full, workers=workers)
            start = time.perf_counter()
            build(full)
            return f"{summary.line()}\n  {_phases(summary)}, report {time.perf_counter() - start:.1f} s (parent)"

        stock_s = _timed("serial nbgrader autograde (nbgrader's own)", made, lambda: nbgrader_serial(stock))
        against = os.environ.get("MHA_BENCH_AGAINST")
        if against:
            if varied:
                raise SystemExit("MHA_BENCH_AGAINST: with variants off only (each course would need the same key)")
            course, seconds, cpu = side_by_side(against, serial, made, workers, tmp)
            reference = gradebook_rows(f"sqlite:///{stock}/gradebook.db")
            same = _compare("grade as shipped, this checkout", reference, gradebook_rows(f"sqlite:///{course['this']}/gradebook.db"))
            same &= _compare(f"grade as shipped, {Path(against).name}", reference,
                             gradebook_rows(f"sqlite:///{course['other']}/gradebook.db"))
            this, other = sum(seconds["this"]), sum(seconds["other"])
            print(f"side by side, {len(seconds['this'])} round(s): this checkout {this:.1f} s, {Path(against).name} "
                  f"{other:.1f} s: this one takes {this / other:.2f}x its time; over serial nbgrader: this "
                  f"{stock_s * len(seconds['this']) / this:.2f}x, {Path(against).name} {stock_s * len(seconds['other']) / other:.2f}x"
                  f"; gradebooks {'equal' if same else 'DIFFERENT'}; {_load()}", flush=True)
            # (a pool's workers forked by a forkserver are not waited for by the grading: only the cgroup counts them)
            for kind, at in (("waited for", 0), ("in a cgroup of its own", 1)):
                mine, theirs = (sum(spent[at] or 0.0 for spent in cpu[side]) for side in ("this", "other"))
                if theirs:
                    print(f"CPU ({kind}): this checkout {mine:.1f} s ({mine / len(made) / len(cpu['this']):.2f} s per "
                          f"notebook), {Path(against).name} {theirs:.1f} s ({theirs / len(made) / len(cpu['other']):.2f} s): "
                          f"this one uses {mine / theirs:.2f}x its CPU", flush=True)
            return
        serial_s = (_timed("serial nbgrader autograde (course's sandbox)", made, lambda: nbgrader_serial(serial))
                    if os.environ.get("MHA_BENCH_SANDBOX_SERIAL", "1") != "0" else None)
        bare_s = _timed("grade --no-recheck --no-feedback (same work)", made, tool_bare)
        full_s = _timed("grade (re-check, feedback) + report", made, tool_full)
        reference = gradebook_rows(f"sqlite:///{stock}/gradebook.db")
        same = serial_s is None or _compare("nbgrader in the course's sandbox", reference,
                                            gradebook_rows(f"sqlite:///{serial}/gradebook.db"))
        if varied:  # each student graded on their own numbers: the two grade rows agree with each other
            same &= _compare("grade against grade --no-recheck --no-feedback, variants on",
                             gradebook_rows(f"sqlite:///{bare}/gradebook.db"), gradebook_rows(f"sqlite:///{full}/gradebook.db"))
        else:
            same &= _compare("grade --no-recheck --no-feedback", reference, gradebook_rows(f"sqlite:///{bare}/gradebook.db"))
            same &= _compare("grade", reference, gradebook_rows(f"sqlite:///{full}/gradebook.db"))
        met = stock_s / full_s >= TARGET and same
        print(f"speed-up over serial nbgrader: {stock_s / full_s:.2f}x as shipped (re-check, feedback, report), "
              f"{stock_s / bare_s:.2f}x same work (target {TARGET:.0f}x as shipped: {'met' if met else 'NOT met'}); "
              + (f"over serial nbgrader in the course's sandbox: {serial_s / full_s:.2f}x as shipped, "
                 f"{serial_s / bare_s:.2f}x same work; " if serial_s else "")
              + _load())


if __name__ == "__main__":
    main()
