"""The grading engine (``autograders/grading/grading.py``): parallel grading gives exactly the
gradebook of serial ``nbgrader autograde``; regrading one student or one assignment
leaves the others alone; a broken submission fails alone; the Dask backend agrees;
feedback hides the hidden tests' source but keeps their messages; the report.

One small class (3 students x levels 1-2, one of them blank) is built once for the
module and graded twice: by ``nbgrader autograde "*"`` and by :func:`grade`.
"""

import dataclasses
import html
import os
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import nbformat
import pytest

from autograders.editions import editions
from autograders import report
from autograders.grading import backends, grading, handover, jobs, sandbox_folder
from autograders.grading.feedback_html import HideHiddenTests, hidden_lines
from benchmarks.bench_grading import gradebook_rows, make_class
from tests.conftest import points

ROOT = Path(__file__).resolve().parent.parent
LEVELS = ["level1_recognition", "level2_application"]
STUDENTS = ["student000", "student001", "student002"]  # student002 submits the blank release
# Right for the visible sizes and for (512, 8), wrong for the hidden (1024, 16): only a hidden check fails.
HARD_CODED = 'def head_dim(d_model, h):\n    """d_k."""\n    return d_model / h if d_model in (768, 512) else 1\n'
HIDDEN_MESSAGE = "which is not one head's width"


def _answer(path, cell_id, code):
    nb = nbformat.read(str(path), as_version=4)
    for cell in nb.cells:
        if cell.metadata.get("nbgrader", {}).get("grade_id") == cell_id:
            cell.source = code
    nbformat.write(nb, str(path))


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """(serial course, tool course, summary, rows of each right after grading)."""
    tmp = tmp_path_factory.mktemp("grading")
    pristine = tmp / "pristine"
    editions.build_release(pristine, say=lambda message: None)
    make_class(pristine, STUDENTS, LEVELS, seed=3, blank_every=3)
    _answer(pristine / "submitted/student000/level1_recognition/level1_recognition.ipynb", "q1_1_head_dim", HARD_CODED)
    serial, tool = tmp / "serial", tmp / "tool"
    shutil.copytree(pristine, serial)
    shutil.copytree(pristine, tool)
    done = subprocess.run([sys.executable, "-m", "nbgrader", "autograde", "*", "--log-level=ERROR"], cwd=serial,
                          env=editions.nbgrader_env(), capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    summary = grading.grade(tool, workers=2)
    return types.SimpleNamespace(
        pristine=pristine, serial=serial, tool=tool, summary=summary,
        serial_rows=gradebook_rows(f"sqlite:///{serial}/gradebook.db"),
        tool_rows=gradebook_rows(f"sqlite:///{tool}/gradebook.db"),
    )


def _differences(a, b, keep=lambda key: True):
    return {k: (a.get(k), b.get(k)) for k in set(a) | set(b) if keep(k) and a.get(k) != b.get(k)}


def test_parallel_grades_equal_serial_nbgrader_row_by_row(graded):
    assert sorted(graded.summary.graded) == sorted((s, a) for s in STUDENTS for a in LEVELS)
    assert graded.summary.failed == []
    grade_rows = [k for k in graded.serial_rows if k[-1] == "grade"]
    cells = sum(points(level)[2] for level in LEVELS)
    assert len(grade_rows) == len(STUDENTS) * cells, "every grade cell of every submission compared"
    assert _differences(graded.serial_rows, graded.tool_rows) == {}
    # the class is not trivial: full marks, zeros and partial scores all occur
    scores = [v[0] for k, v in graded.tool_rows.items() if k[-1] == "grade" and v[0] is not None]
    assert 0.0 in scores and any(s > 0 for s in scores)
    summary_scores = graded.summary.scores[("student000", "level1_recognition")]
    assert summary_scores["q1_1_head_dim_test"] == (0.0, 2.0), "the hard-coded head_dim fails its hidden check"


def test_autograded_notebooks_written_like_nbgrader(graded):
    for student in STUDENTS:
        for level in LEVELS:
            ours = graded.tool / "autograded" / student / level / f"{level}.ipynb"
            theirs = graded.serial / "autograded" / student / level / f"{level}.ipynb"
            assert ours.exists() and theirs.exists()
            a, b = (nbformat.read(str(p), as_version=4) for p in (ours, theirs))
            assert [c.source for c in a.cells] == [c.source for c in b.cells]


def _text(path):
    raw = path.read_text(encoding="utf-8")
    return raw, html.unescape(re.sub(r"<[^>]+>", "", raw))


def test_feedback_keeps_hidden_messages_but_never_their_source(graded):
    secrets = set()
    for level in LEVELS:
        nb = editions.read(ROOT / "notebooks" / f"{level}.ipynb")
        for cell in nb.cells:
            secrets |= {line.strip() for line in hidden_lines(cell.source) if len(line.strip()) > 3}
    assert any("hidden=True" in s for s in secrets)
    files = sorted((graded.tool / "feedback").rglob("*.html"))
    assert len(files) == len(STUDENTS) * len(LEVELS)
    for path in files:
        raw, text = _text(path)
        leaked = [s for s in secrets if s in raw or s in text]
        assert not leaked, f"{path} shows hidden test source: {leaked}"
        assert "BEGIN HIDDEN TESTS" not in text
    _, text = _text(graded.tool / "feedback/student000/level1_recognition/level1_recognition.html")
    assert HIDDEN_MESSAGE in text, "a failing hidden check's message stays in the feedback"
    assert "hidden tests: not shown" in text
    for path in files:  # figures are named when graded, never drawn (level 2's s01 waits for its prediction)
        raw, text = _text(path)
        assert "data:image/png" not in raw, f"{path}: a figure was drawn while grading"
    assert "white-space: pre-wrap" in raw, "a long message wraps instead of scrolling sideways"


def test_hidden_source_scrubbed_from_a_traceback_too():
    source = 'check.a(x)\n### BEGIN HIDDEN TESTS\ncheck.a(x, hidden=True)\n### END HIDDEN TESTS'
    cell = nbformat.v4.new_code_cell(source, metadata={"nbgrader": {"grade": True, "grade_id": "t", "points": 1}})
    cell.outputs = [nbformat.v4.new_output(
        "error", ename="NameError", evalue="name 'x' is not defined",
        traceback=["Cell In[3], line 3\n      1 check.a(x)\n      2 ### BEGIN HIDDEN TESTS\n----> 3 check.a(x, hidden=True)",
                   "NameError: name 'x' is not defined"])]
    nb = nbformat.v4.new_notebook(cells=[cell])
    nb, _ = HideHiddenTests().preprocess(nb, {})
    shown = nb.cells[0].source + "\n".join(nb.cells[0].outputs[0].traceback)
    assert "hidden=True" not in shown and "BEGIN HIDDEN" not in shown
    assert "NameError: name 'x' is not defined" in shown and "check.a(x)" in shown


def _rows_without(rows, student=None, assignment=None):
    return {k: v for k, v in rows.items() if k[0] != student and k[1] != assignment}


def _files(course, skip):
    found = {}
    for folder in ("autograded", "feedback"):
        for p in (course / folder).rglob("*"):
            if p.is_file() and not skip(p.relative_to(course / folder).parts):
                found[str(p.relative_to(course))] = (p.stat().st_mtime_ns, p.read_bytes())
    return found


def _db_rows(course, notebook):
    """Every grade and comment row (ids included) of the submitted notebooks of ``notebook``."""
    import sqlite3

    with sqlite3.connect(course / "gradebook.db") as db:
        return {
            table: sorted(db.execute(
                f"select {table}.* from {table} join submitted_notebook s on {table}.notebook_id = s.id "
                "join notebook n on s.notebook_id = n.id where n.name = ?", (notebook,)).fetchall(), key=repr)
            for table in ("grade", "comment")
        }


def test_regrade_one_student_then_one_assignment_leaves_the_rest_untouched(graded):
    course = graded.tool
    # student001 blanks level 2 and resubmits
    released = course / "release/level2_application/level2_application.ipynb"
    shutil.copyfile(released, course / "submitted/student001/level2_application/level2_application.ipynb")
    before_rows = gradebook_rows(f"sqlite:///{course}/gradebook.db")
    before_files = _files(course, skip=lambda parts: parts[0] == "student001")
    summary = grading.grade(course, students=["student001"], workers=2)
    assert sorted(summary.graded) == [("student001", a) for a in LEVELS]
    after_rows = gradebook_rows(f"sqlite:///{course}/gradebook.db")
    assert _differences(_rows_without(before_rows, student="student001"),
                        _rows_without(after_rows, student="student001")) == {}
    assert _files(course, skip=lambda parts: parts[0] == "student001") == before_files
    blank = {k: v for k, v in after_rows.items() if k[:2] == ("student001", "level2_application") and k[-1] == "grade"}
    assert blank and all(v[0] in (0.0, None) for v in blank.values()), "the resubmitted blank level 2 scores 0"

    raw_before = _db_rows(course, "level1_recognition")
    before_files = _files(course, skip=lambda parts: len(parts) > 1 and parts[1] == "level2_application")
    summary = grading.grade(course, assignments=["level2_application"], workers=2)
    assert sorted(summary.graded) == [(s, "level2_application") for s in STUDENTS]
    raw_after = _db_rows(course, "level1_recognition")
    assert _files(course, skip=lambda parts: len(parts) > 1 and parts[1] == "level2_application") == before_files
    # level 1's grade and comment rows (ids, scores, flags) are exactly as they were
    assert len(raw_before["grade"]) == len(STUDENTS) * points("level1_recognition")[2]
    assert raw_before == raw_after


def test_broken_submissions_never_stop_the_batch(graded):
    """Metadata nbgrader refuses (a newer nbgrader's schema: serial ``nbgrader autograde``
    stops the whole run on it) is restored from the gradebook and the notebook graded like
    an untouched one; malformed JSON is graded as an empty notebook (the course's sandbox
    hook) or fails alone, with a reason."""
    course = graded.tool
    broken, garbled = course / "submitted/zz-broken", course / "submitted/zz-json"
    shutil.copytree(graded.pristine / "submitted/student000", broken)
    path = broken / "level1_recognition/level1_recognition.ipynb"
    nb = nbformat.read(str(path), as_version=4)
    next(c for c in nb.cells if "nbgrader" in c.metadata).metadata.nbgrader["schema_version"] = 99
    nbformat.write(nb, str(path))
    (garbled / "level1_recognition").mkdir(parents=True)
    (garbled / "level1_recognition/level1_recognition.ipynb").write_text('{"cells": [ this is not JSON')
    summary = grading.grade(course, students=["zz-broken", "zz-json"], workers=2)
    assert ("zz-broken", "level2_application") in summary.graded
    assert ("zz-broken", "level1_recognition") in summary.graded
    assert summary.scores[("zz-broken", "level1_recognition")] == graded.summary.scores[("student000", "level1_recognition")]
    failed = {(s, a): reason for s, a, reason in summary.failed}
    if ("zz-json", "level1_recognition") in failed:
        assert "JSON" in failed.pop(("zz-json", "level1_recognition"))
    else:
        assert all(score == 0 for score, _ in summary.scores[("zz-json", "level1_recognition")].values() if score is not None)
    assert not failed
    restored = (course / "autograded/zz-broken/level1_recognition/level1_recognition.ipynb").read_text()
    assert "was restored from the assignment" in restored
    assert (course / "feedback/zz-broken/level2_application/level2_application.html").exists()


def test_dask_local_cluster_gives_the_same_scores(graded, tmp_path):
    distributed = pytest.importorskip("distributed")
    course = tmp_path / "dask"
    shutil.copytree(graded.pristine, course)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        summary = grading.grade(course, assignments=["level1_recognition"], backend="dask",
                                scheduler=cluster.scheduler_address)
    assert summary.failed == [] and len(summary.graded) == len(STUDENTS)
    rows = gradebook_rows(f"sqlite:///{course}/gradebook.db")
    serial = {k: v for k, v in graded.serial_rows.items() if k[1] == "level1_recognition"}
    assert rows == serial


def test_a_test_the_checks_could_not_confirm_scores_0_and_says_why(graded, tmp_path, monkeypatch):
    """The checks' verdict is the only source of points: one they could not confirm scores 0 in the
    gradebook (nbgrader's own SaveAutoGrades, from the outputs it gave the cell), is listed, and its
    reason is in the feedback."""
    from autograders.grading import checker

    course = tmp_path / "recheck"
    shutil.copytree(graded.pristine, course)
    calls, check = [], checker.check

    def unconfirmed(source, handover):
        calls.append(source)
        found = check(source, handover)
        found["q1_1_d_k_test"] = checker.Checked(0.0, 1.0, f"{checker.NOT_CONFIRMED}: the answer did not hold up",
                                                 confirmed=False)
        return found

    monkeypatch.setattr(handover, "check", unconfirmed)  # what check_answers calls
    summary = grading.grade(course, students=["student001"], assignments=["level1_recognition"], backend="serial")
    scores = summary.scores[("student001", "level1_recognition")]
    before = graded.summary.scores[("student001", "level1_recognition")]
    assert calls and before["q1_1_d_k_test"][0] == 1.0 and scores["q1_1_d_k_test"][0] == 0.0
    assert {gid: s for gid, s in scores.items() if gid != "q1_1_d_k_test"} == {
        gid: s for gid, s in before.items() if gid != "q1_1_d_k_test"}  # the other tests as they were
    assert [r[2] for r in summary.rechecked] == ["q1_1_d_k_test"]
    _, text = _text(course / "feedback/student001/level1_recognition/level1_recognition.html")
    assert "Re-checked: scored 0 of 1. could not confirm this test, so it scores 0: the answer did not hold up" in text


def test_each_submission_runs_once(graded, tmp_path, monkeypatch):
    """One execution per submission, counted from the grader's side: one sandboxed process started (every
    one starts through the sandbox's launcher), each of the sheet's cells and the answer cells sent to it
    once, no test cell ever and no other cell (the explorers, the predictions: "Not run when graded"), and the hidden tests decided all the same (student000's hard-coded answer fails
    only there)."""
    from jupyter_client.asynchronous.client import AsyncKernelClient
    from jupyter_client.client import KernelClient

    course = tmp_path / "once"
    shutil.copytree(graded.pristine, course)
    started, sent = [], []
    command = sandbox_folder.Sandbox.command
    monkeypatch.setattr(sandbox_folder.Sandbox, "command", lambda self, *a, **k: started.append(a) or command(self, *a, **k))
    for client in (KernelClient, AsyncKernelClient):  # every request to run code, whichever client sends it
        monkeypatch.setattr(client, "execute", lambda self, code, *a, _run=client.execute, **k: sent.append(code)
                            or _run(self, code, *a, **k))
    summary = grading.grade(course, students=["student000"], assignments=["level1_recognition"], backend="serial")
    assert summary.scores[("student000", "level1_recognition")]["q1_1_head_dim_test"][0] == 0.0  # hidden test
    kernels = [a for a in started if "ipykernel" in str(a)]  # (not prepared.py's font list, once per process)
    assert len(kernels) == 1, started
    nb = nbformat.read(str(course / "autograded/student000/level1_recognition/level1_recognition.ipynb"), as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code" and c.source.strip()]
    tests = [c for c in code if c.metadata.get("nbgrader", {}).get("grade") and not c.metadata["nbgrader"].get("solution")]
    cells = [c.source for c in code if c not in tests and "nbgrader" in c.metadata]  # the sheet's and the answers
    students = [c.source for c in code if c.metadata.get("nbgrader", {}).get("solution")]
    assert students and [sent.count(source) for source in students] == [1] * len(students), (students, sent)
    assert tests and not [c for c in tests if c.source in sent]
    assert sent[:-1] == cells and handover.SERVE.split("\n")[0] in sent[-1]  # then the hand-over
    plain = [c for c in code if "nbgrader" not in c.metadata]  # the explorer and the prediction: not run
    assert plain and not [c for c in plain if c.source in sent]
    assert all([o.get("text") for o in c.outputs] == [handover.NOT_RUN] for c in plain)


def test_another_gradebook_url_gets_the_definitions_and_the_same_scores(graded, tmp_path):
    """``--db URL``: a gradebook that does not know the assignment yet (a new PostgreSQL
    database, say) is given its definitions from the course's own, then graded into."""
    course = tmp_path / "other-db"
    shutil.copytree(graded.pristine, course)
    url = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    summary = grading.grade(course, students=["student001"], assignments=["level1_recognition"], db_url=url,
                            backend="serial", feedback=False, recheck=False)
    assert summary.graded == [("student001", "level1_recognition")]
    serial = {k: v for k, v in graded.serial_rows.items() if k[:2] == ("student001", "level1_recognition")}
    assert gradebook_rows(url) == serial
    assert gradebook_rows(f"sqlite:///{course}/gradebook.db") == {}, "the course's own gradebook is not written"


def _crash_or_echo(job):
    """A job function for the pool test: kills its worker process for student "crash"."""
    if job.student == "crash":
        os._exit(3)
    return dataclasses.replace(jobs.failed(job, None), ok=True)


def test_a_job_that_kills_its_worker_fails_alone(kernels):
    queued = [jobs.Job(s, "a") for s in ("a1", "crash", "b1", "c1", "d1")]
    results = list(backends.local(queued, 2, _crash_or_echo))
    assert sorted(r.student for r in results) == sorted(j.student for j in queued), "each job reported once"
    assert {r.student: r.ok for r in results} == {"a1": True, "crash": False, "b1": True, "c1": True, "d1": True}
    assert "died" in next(r.reason for r in results if r.student == "crash")


def test_report_csv_and_html(graded, tmp_path):
    csv_path, html_path = report.build(graded.tool, tmp_path / "out")
    import csv

    rows = list(csv.DictReader(csv_path.open()))
    header = csv_path.read_text().splitlines()[0].split(",")
    assert header[:6] == ["student", "assignment", "status", "score", "max_score", "late_penalty"]
    assert "q1_1_head_dim_test" in header and "q2_3_softmax_test" in header
    by_key = {(r["student"], r["assignment"]): r for r in rows}
    row = by_key[("student000", "level1_recognition")]
    auto, manual, _ = points("level1_recognition")
    assert row["q1_1_head_dim_test"] == "0" and row["max_score"] == str(auto + manual) and row["status"] == "graded"
    expected = sum(float(row[c]) for c in header[6:] if c.startswith("q1_") and row[c])
    assert float(row["score"]) == expected
    blank = by_key[("student002", "level1_recognition")]
    assert float(blank["score"]) == 0
    page = html_path.read_text()
    assert page.count("data:image/png;base64,") == 4  # scores, success rates, misconceptions, the item analysis
    for title in ("Score distribution per level", "Success rate per problem", "Misconceptions"):
        assert title in page
    assert "no answer yet" in page  # the blank submission
    counts, _ = report.read_results(graded.tool).misconception_counts()
    assert counts["no answer yet"] >= 8


def test_progress_bar_and_summary_line():
    import io

    from autograders.grading.progress import Progress

    out = io.StringIO()
    bar = Progress(4, stream=out)
    for ok in (True, False, True, True):
        bar.update(ok)
    lines = [line for line in out.getvalue().splitlines() if line]  # tqdm redraws after a carriage return
    assert lines[0].startswith("[....") and "0/4" in lines[0]
    assert lines[-1].startswith("[" + "#" * 30 + "]") and "4/4 (1 failed)" in lines[-1]
    summary = grading.Summary(graded=[("a", "x")] * 3, failed=[("b", "x", "bad")], seconds=30.0)
    assert summary.line() == "graded 3, failed 1, in 30.0 s (8.0 submissions/min)"


def test_the_benchmarks_baseline_is_the_course_config_without_the_sandbox(tmp_path):
    from autograders.grading.gradebooks import course_config
    from benchmarks.bench_grading import stock_config

    editions.write_config(tmp_path)
    course = course_config(tmp_path)
    stock_config(tmp_path)
    stock = course_config(tmp_path)
    assert "SandboxExecute" in course and "autograde_preprocessors" in course.Autograde
    assert "SandboxExecute" not in stock and "Autograde" not in stock, "nbgrader's own executor"
    assert stock.Execute == course.Execute and stock.CourseDirectory == course.CourseDirectory
    with pytest.raises(RuntimeError, match="no sandbox block"):
        stock_config(tmp_path)


def test_a_failed_feedback_replaces_the_old_page_and_is_reported(graded, tmp_path, monkeypatch):
    """A regrade whose feedback cannot be made: the student's old page goes, a page saying the feedback
    is unavailable and why takes its place; the summary line, the command's status and the report say so;
    the grades stand. The next grading that makes feedback takes the note off again."""
    from autograders.grading import feedback_html

    course = tmp_path / "stale"
    shutil.copytree(graded.pristine, course)
    key = ("student001", "level1_recognition")
    page = course / "feedback/student001/level1_recognition/level1_recognition.html"
    first = grading.grade(course, students=[key[0]], assignments=[key[1]], backend="serial", recheck=False)
    assert first.graded == [key] and not first.feedback_failed and page.is_file()
    old = page.read_bytes()

    def broken(*args, **kwargs):
        raise RuntimeError("generate_feedback failed: the <template> is broken & gone")

    monkeypatch.setattr(feedback_html, "generate_feedback", broken)
    again = grading.grade(course, students=[key[0]], assignments=[key[1]], backend="serial", recheck=False)
    assert again.graded == [key] and not again.failed
    assert again.scores[key] == first.scores[key], "the grades stand"
    assert again.feedback_failed == [(*key, "RuntimeError: generate_feedback failed: the <template> is broken & gone")]
    assert "feedback unavailable for 1 submission(s)" in again.line()
    assert sorted(p.name for p in page.parent.iterdir()) == [page.name]
    raw, text = _text(page)
    assert page.read_bytes() != old and "feedback unavailable" in text and "the <template> is broken & gone" in text
    assert "<template>" not in raw, "the reason is escaped"
    status = (course / grading.STATUS).read_text()
    assert "broken & gone" in status
    csv_path, html_path = report.build(course)
    raw, text = _text(html_path)
    assert "Feedback unavailable" in text and "student001" in text.split("Feedback unavailable", 1)[1]
    assert "broken & gone" in text.split("Feedback unavailable", 1)[1]
    monkeypatch.undo()
    third = grading.grade(course, students=[key[0]], assignments=[key[1]], backend="serial", recheck=False)
    assert not third.feedback_failed and "feedback unavailable" not in _text(page)[1]
    assert "broken & gone" not in (course / grading.STATUS).read_text()
    _, text = _text(report.build(course)[1])
    assert "broken & gone" not in text


def test_a_submissions_links_are_never_followed(tmp_path):
    """The grader reads a submission's files with its own rights: a link beside the notebook (to the
    course's source notebook, its gradebook, /etc/shadow, or nowhere) is left out of the job, never
    read; a submission or student folder that is itself a link is named, so that grade refuses it.
    The corpus's linked-files case grades such a submission."""
    course = tmp_path / "course"
    secret = course / "source" / "level1" / "level1.ipynb"
    secret.parent.mkdir(parents=True)
    secret.write_text("### BEGIN HIDDEN TESTS")
    folder = course / "submitted" / "bob" / "level1"
    (folder / "data").mkdir(parents=True)
    (folder / "level1.ipynb").write_text("{}")
    (folder / "data" / "x.csv").write_text("1,2")
    os.symlink(secret, folder / "absolute.txt")
    os.symlink("../../../source/level1/level1.ipynb", folder / "relative.txt")
    os.symlink(secret.parent, folder / "folder")
    os.symlink(tmp_path / "nowhere", folder / "dangling.txt")
    assert sorted(jobs.read_tree(folder, links=False)) == ["data/x.csv", "level1.ipynb"]
    job = grading.make_job(course, "bob", "level1", "", b"")
    assert sorted(job.submission) == ["data/x.csv", "level1.ipynb"]
    assert grading.linked_folder(course, "bob", "level1") is None
    os.symlink(secret.parent, course / "submitted" / "bob" / "level2")
    os.symlink(course / "submitted" / "bob", course / "submitted" / "eve")
    assert grading.linked_folder(course, "bob", "level2") == course / "submitted" / "bob" / "level2"
    assert grading.linked_folder(course, "eve", "level1") == course / "submitted" / "eve"
