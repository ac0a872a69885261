"""A class's results, from the gradebook and the autograded notebooks: ``grades.csv``
and ``report.html`` (score distribution per level, success rate per problem, how
often each named misconception occurred, the submissions that could not be graded).

A misconception is data: a check that recognises a wrong answer raises its
``WrongAnswer`` with a tag (``autograders/checks/misconceptions.py``), and the failed
test cell's error output carries it (its value's first line, ``[misconception: TAG]``,
which the student never sees). The report counts tags and shows each one's name
(:data:`MISCONCEPTIONS`); it never reads the message's phrases. A tag is whatever
the notebook's output says, so anything a student could have written: only a known
tag counts, anything else (no tag, an unknown or malformed one) is "other".

A test nbgrader passed and the clean re-check lowered has no error output: the grader
records the re-check's verdict in that cell's metadata (``grading.RECHECKED``: whether
the re-check ran the test, and the tag of the check's own ``WrongAnswer``) and takes the
key off every other cell. The report counts that tag (a known one), or "not confirmed by
the re-check" (:data:`UNCONFIRMED`) when the re-check could not run the test; it never
reads the "Re-checked: ..." line, which a student's own cell could print too.

    python -m autograders report --course course --out course/reports
"""

import base64
import csv
import functools
import io
import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..checks.misconceptions import NAMES

TEMPLATES = Path(__file__).parent / "templates"  # report.html.j2

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
OTHER = "other (no named misconception)"
UNCONFIRMED = "not confirmed by the re-check"

MISCONCEPTIONS = NAMES  # tag: the name the report shows
_TAG = re.compile(r"\[misconception: ([a-z0-9-]{1,40})\]")


def misconception_name(tag):
    """The name the report shows for ``tag``, or None for a tag that is not a known one."""
    return MISCONCEPTIONS.get(tag) if isinstance(tag, str) else None


def tag_of_outputs(outputs):
    """The misconception tag of a failed test cell's ``outputs``: the first line of the value of
    its last error output, when it is exactly ``[misconception: TAG]`` with a known TAG; else None."""
    errors = [o for o in outputs or [] if isinstance(o, dict) and o.get("output_type") == "error"]
    value = errors[-1].get("evalue") if errors else None
    if not isinstance(value, str):
        return None
    match = _TAG.fullmatch(value.split("\n", 1)[0])
    return match[1] if match and match[1] in MISCONCEPTIONS else None


def verdict_of_cell(cell):
    """(tag, unconfirmed) of a failed test cell of an autograded notebook. nbgrader failed it
    (an error output): the tag of its outputs (:func:`tag_of_outputs`). Else the re-check lowered
    it: the grader's record in its metadata, when well formed, gives the check's tag (a known one)
    or says the re-check could not confirm the test. Anything else: (None, False), "other"."""
    outputs = cell.get("outputs") or []
    if any(isinstance(o, dict) and o.get("output_type") == "error" for o in outputs):
        return tag_of_outputs(outputs), False
    from .grading import RECHECKED

    record = (cell.get("metadata") or {}).get(RECHECKED)
    if not isinstance(record, dict) or type(record.get("confirmed")) is not bool:
        return None, False
    if not record["confirmed"]:
        return None, True
    tag = record.get("misconception")
    return (tag if misconception_name(tag) else None), False


# --- reading the course -------------------------------------------------------------


@dataclass
class Results:
    """Everything the report shows, read from the gradebook and ``autograded/``."""

    rows: list = field(default_factory=list)  # one dict per submission: student, assignment, status, reason, score, ...
    cells: dict = field(default_factory=dict)  # assignment -> [grade_id] of its graded cells, in notebook order
    messages: dict = field(default_factory=dict)  # (student, assignment, grade_id) -> message of a failed test
    tags: dict = field(default_factory=dict)  # (student, assignment, grade_id) -> its misconception tag, or None
    unconfirmed: set = field(default_factory=set)  # {(student, assignment, grade_id)} the re-check could not confirm
    failed: list = field(default_factory=list)  # [(student, assignment, reason)] from the last grading
    no_feedback: list = field(default_factory=list)  # [(student, assignment, reason)]: graded, feedback unavailable

    def misconception_counts(self):
        """{name: number of failed tests whose output carries its tag}, and {name: Counter of problems};
        a test the re-check could not confirm counts as :data:`UNCONFIRMED`, one with no known tag as OTHER."""
        counts, where = Counter(), defaultdict(Counter)
        for key in self.messages:
            grade_id = key[2]
            name = UNCONFIRMED if key in self.unconfirmed else misconception_name(self.tags.get(key)) or OTHER
            counts[name] += 1
            where[name][problem_label(grade_id)] += 1
        return counts, where

    def success_rates(self):
        """[(assignment, grade_id, fraction of graded submissions with full marks, n)] of the code test cells."""
        rates = []
        for assignment, ids in self.cells.items():
            rows = [r for r in self.rows if r["assignment"] == assignment and r["status"] == "graded"]
            for grade_id in ids:
                scored = [(r["cells"][grade_id]) for r in rows if grade_id in r["cells"]]
                scored = [s for s in scored if s[2] == "code"]
                if scored:
                    full = sum(1 for score, max_score, _ in scored if score is not None and score >= max_score)
                    rates.append((assignment, grade_id, full / len(scored), len(scored)))
        return rates


def problem_label(grade_id):
    """``q2_3_softmax_test`` -> ``2.3 softmax``."""
    match = re.match(r"q(\d+)_(\d+)_(.*?)(_test)?$", grade_id)
    return f"{match[1]}.{match[2]} {match[3]}" if match else grade_id


def _failure_message(cell):
    parts = []
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            parts.append("\n".join(output.get("traceback", [])) or f"{output.get('ename')}: {output.get('evalue')}")
    return ANSI.sub("", "\n".join(parts))


def read_results(course, db_url=None):
    """The course's :class:`Results` (gradebook ``db_url``, default the course's own)."""
    import nbformat
    from nbgrader.api import Gradebook

    from .gradebooks import course_db_url
    from .grading import STATUS

    course = Path(course).resolve()
    own, course_id = course_db_url(course)
    results = Results()
    status_path = course / STATUS
    status = json.loads(status_path.read_text()) if status_path.exists() else {}
    with Gradebook(db_url or own, course_id) as gb:
        for assignment in sorted(gb.assignments, key=lambda a: a.name):
            ids = []
            for notebook in assignment.notebooks:
                ids += [c.name for c in notebook.grade_cells]
            results.cells[assignment.name] = _in_notebook_order(course, assignment.name, ids)
            for submission in sorted(assignment.submissions, key=lambda s: s.student.id):
                student = submission.student.id
                cells, penalty = {}, 0.0
                for notebook in submission.notebooks:
                    penalty += notebook.late_submission_penalty or 0.0
                    for g in notebook.grades:
                        cells[g.name] = (g.score if (g.auto_score is not None or g.manual_score is not None) else None,
                                         g.max_score, g.cell_type)
                record = status.get(f"{student}/{assignment.name}", {})
                graded = (course / "autograded" / student / assignment.name).is_dir()
                state = _failure(record) or ("graded" if graded else "not graded")
                results.rows.append({
                    "student": student, "assignment": assignment.name,
                    "score": round(submission.score - penalty, 4), "max_score": submission.max_score,
                    "late_penalty": penalty, "late_by": late_by(submission.total_seconds_late),
                    "needs_manual_grade": submission.needs_manual_grade,
                    "status": state, "reason": (record.get("reason") or "") if _failure(record) else "", "cells": cells,
                })
                if _failure(record):
                    results.failed.append((student, assignment.name, record.get("reason") or ""))
                elif record.get("feedback"):
                    results.no_feedback.append((student, assignment.name, record["feedback"]))
                for path in sorted((course / "autograded" / student / assignment.name).glob("*.ipynb")):
                    add_failed_tests(results, student, assignment.name, nbformat.read(str(path), as_version=4), cells)
    # A submission that failed before nbgrader recorded it (a refused zip, a notebook
    # nbgrader rejects) has no gradebook row: it gets a row of its own all the same.
    known = {(r["student"], r["assignment"]) for r in results.rows}
    for key, record in sorted(status.items()):
        student, _, assignment = key.partition("/")
        student = "" if student.startswith("?") else student  # a refused file that named no student
        if _failure(record) and (student, assignment) not in known:
            results.failed.append((student, assignment, record.get("reason") or ""))
            results.rows.append({
                "student": student, "assignment": assignment, "score": None, "max_score": None, "late_penalty": None,
                "late_by": "", "needs_manual_grade": False, "status": _failure(record), "reason": record.get("reason") or "",
                "cells": {},
            })
    return results


def late_by(seconds):
    """How late a submission came, after the assignment's due date (nbgrader's gradebook, from the
    submission's time: on a hub, the exchange's clock): "" when on time, else e.g. "1 d 2 h 5 min"."""
    if not seconds or seconds <= 0:
        return ""
    minutes = max(1, round(seconds / 60))
    days, minutes = divmod(minutes, 24 * 60)
    hours, minutes = divmod(minutes, 60)
    return " ".join(f"{n} {unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "min")) if n)


def add_failed_tests(results, student, assignment, nb, cells):
    """Add the test cells of the autograded notebook ``nb`` that scored less than their points
    (``cells``: {grade_id: (score, max_score, cell_type)}, the gradebook's) to ``results``: message,
    tag, and whether the re-check could not confirm it (:func:`verdict_of_cell`)."""
    for cell in nb.cells:
        meta = cell.metadata.get("nbgrader", {})
        grade_id = meta.get("grade_id")
        score = cells.get(grade_id, (None,))[0]
        if cell.cell_type == "code" and meta.get("grade") and not meta.get("solution"):
            if score is not None and score < meta.get("points", 0):
                key = (student, assignment, grade_id)
                results.messages[key] = _failure_message(cell)
                results.tags[key], unconfirmed = verdict_of_cell(cell)
                if unconfirmed:
                    results.unconfirmed.add(key)


def _failure(record):
    """"refused" (the intake did not take it in) or "failed" (grading it failed), else None."""
    if record.get("ok") is not False:
        return None
    return "refused" if record.get("stage") == "intake" else "failed"


def _in_notebook_order(course, assignment, ids):
    import nbformat

    order = []
    for path in sorted((Path(course) / "source" / assignment).glob("*.ipynb")):
        nb = nbformat.read(str(path), as_version=4)
        order += [c.metadata.get("nbgrader", {}).get("grade_id") for c in nb.cells]
    position = {gid: i for i, gid in enumerate(order)}
    return sorted(ids, key=lambda gid: (position.get(gid, len(position)), gid))


# --- grades.csv ----------------------------------------------------------------------


def write_csv(results, path):
    """One row per submission the intake or the gradebook knows of: student, assignment,
    status (graded, not graded, failed, refused), score, max_score, late_penalty, late_by, reason
    (why it failed or was refused), then one column per graded cell of every assignment
    (empty where not that assignment's)."""
    columns = [gid for ids in results.cells.values() for gid in ids]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["student", "assignment", "status", "score", "max_score", "late_penalty", "late_by", "reason",
                         *columns])
        for r in results.rows:
            cells = [_number(r["cells"][gid][0]) if gid in r["cells"] else "" for gid in columns]
            writer.writerow([_text(r["student"]), _text(r["assignment"]), r["status"], _number(r["score"]),
                             _number(r["max_score"]), _number(r["late_penalty"]), r.get("late_by", ""),
                             _text(r.get("reason", "")), *cells])
    return path


def _text(value):
    """A text cell a spreadsheet will not read as a formula (OWASP's CSV injection advice)."""
    value = str(value or "")
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def _number(value):
    if value is None:
        return ""
    return f"{value:g}" if isinstance(value, float) else str(value)


# --- plots ----------------------------------------------------------------------------


def _pyplot():
    import matplotlib

    if "matplotlib.pyplot" not in __import__("sys").modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _figure_png(fig):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return buffer.getvalue()


def plot_scores(results):
    """Score distribution per level: one histogram of % of the maximum per assignment."""
    plt = _pyplot()
    names = [name for name in results.cells if any(r["assignment"] == name for r in results.rows)] or list(results.cells)
    fig, axes = plt.subplots(1, max(1, len(names)), figsize=(2.6 * max(1, len(names)), 2.6), sharey=True, squeeze=False)
    for ax, name in zip(axes[0], names):
        percent = [100 * r["score"] / r["max_score"] for r in results.rows
                   if r["assignment"] == name and r["status"] == "graded" and r["max_score"]]
        ax.hist(percent, bins=range(0, 101, 10), color="#4C72B0", edgecolor="white")
        mean = f"mean {sum(percent) / len(percent):.0f}%" if percent else "no submissions"
        ax.set_title(f"{name}\n{len(percent)} graded, {mean}", fontsize=9)
        ax.set_xlabel("score (% of maximum)", fontsize=8)
        ax.set_xlim(0, 100)
        ax.tick_params(labelsize=8)
        ax.yaxis.get_major_locator().set_params(integer=True)
    axes[0][0].set_ylabel("submissions", fontsize=8)
    fig.suptitle("Score distribution per level", fontsize=11)
    fig.tight_layout()
    return _figure_png(fig)


def plot_success(results):
    """Success rate per problem (test cell): the share of graded submissions with full marks."""
    plt = _pyplot()
    rates = results.success_rates()
    fig, ax = plt.subplots(figsize=(7, 0.26 * max(4, len(rates)) + 0.8))
    labels = [problem_label(gid) for _, gid, _, _ in rates]
    values = [100 * rate for _, _, rate, _ in rates]
    levels = sorted({a for a, _, _, _ in rates})
    colours = plt.get_cmap("tab10")
    ax.barh(range(len(rates)), values, color=[colours(levels.index(a) % 10) for a, _, _, _ in rates])
    ax.set_yticks(range(len(rates)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("submissions with full marks (%)")
    for i, (value, (_, _, _, n)) in enumerate(zip(values, rates)):
        ax.text(min(value + 1, 92), i, f"{value:.0f}% of {n}", va="center", fontsize=7)
    ax.set_title("Success rate per problem")
    fig.tight_layout()
    return _figure_png(fig)


def plot_misconceptions(results, top=20):
    """How often each named misconception occurred (failed tests naming it)."""
    plt = _pyplot()
    counts, _ = results.misconception_counts()
    items = counts.most_common(top)
    fig, ax = plt.subplots(figsize=(7, 0.3 * max(3, len(items)) + 0.8))
    if items:
        colours = {OTHER: "#999999", UNCONFIRMED: "#DD8452"}
        ax.barh(range(len(items)), [n for _, n in items], color=[colours.get(k, "#C44E52") for k, _ in items])
        ax.set_yticks(range(len(items)), [k for k, _ in items], fontsize=8)
        ax.invert_yaxis()
        ax.xaxis.get_major_locator().set_params(integer=True)
    else:
        ax.text(0.5, 0.5, "no failed tests", ha="center", va="center", transform=ax.transAxes)
        ax.set_yticks([])
    ax.set_xlabel("failed tests naming it")
    ax.set_title("Misconceptions")
    fig.tight_layout()
    return _figure_png(fig)


# --- report.html ---------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _template():
    import jinja2

    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                     undefined=jinja2.StrictUndefined)
    return environment.get_template("report.html.j2")


def write_report(results, path, course=None):
    """``report.html`` (``templates/report.html.j2``, autoescaped): summary per level, the three plots
    (embedded PNG), the misconceptions with the problems where they occurred, and the failed submissions."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    counts, where = results.misconception_counts()
    levels = []
    for name in results.cells:
        rows = [r for r in results.rows if r["assignment"] == name]
        graded = [r for r in rows if r["status"] == "graded"]
        mean = sum(r["score"] for r in graded) / len(graded) if graded else None
        levels.append({"name": name, "submissions": len(rows), "graded": len(graded),
                       "failed": sum(1 for s, a, _ in results.failed if a == name),
                       "mean": "" if mean is None else f"{mean:.2f}",
                       "max": _number(next((r["max_score"] for r in rows if r["max_score"] is not None), ""))})
    plots = [{"heading": heading, "alt": alt, "png": base64.b64encode(png).decode()} for heading, alt, png in (
        ("Score distribution per level", "score distribution per level", plot_scores(results)),
        ("Success rate per problem", "success rate per problem", plot_success(results)),
        ("Misconceptions", "misconceptions", plot_misconceptions(results)))]
    misconceptions = [{"name": name, "count": n, "where": where[name].most_common()} for name, n in counts.most_common()]
    late = [r for r in results.rows if r.get("late_by")]
    page = _template().render(levels=levels, plots=plots, misconceptions=misconceptions, failed=results.failed,
                              no_feedback=results.no_feedback, late=late,
                              other=OTHER, unconfirmed=UNCONFIRMED)
    path.write_text(page, encoding="utf-8")
    return path


def build(course, out=None, db_url=None):
    """Write ``grades.csv`` and ``report.html`` into ``out`` (default ``<course>/reports``); return their paths."""
    course = Path(course).resolve()
    out = Path(out) if out else course / "reports"
    results = read_results(course, db_url)
    return write_csv(results, out / "grades.csv"), write_report(results, out / "report.html", course)
