"""A class's results, read from the gradebook and the autograded notebooks (:class:`Results`): every
submission's row, the failed tests with their misconception tags, the choices and predictions made.

A misconception is data: a check that recognises a wrong answer raises its
``WrongAnswer`` with a tag (a misconception declared with the problem, ``autograders/problems/``), and the failed
test cell's error output carries it (its value's first line, ``[misconception: TAG]``,
which the student never sees). The report counts tags and shows each one's name
(:data:`MISCONCEPTIONS`); it never reads the message's phrases. A tag is whatever
the notebook's output says, so anything a student could have written: only a known
tag counts, anything else (no tag, an unknown or malformed one) is "other".

A test that failed in its hidden tests, or that the checks could not confirm, has no error
output (its line on stderr says why): the grader records the checks' verdict in that cell's
metadata (``RECHECKED``: whether the checks ran the test, and the tag of the check's own
``WrongAnswer``) and takes the key off every other cell. The report counts that tag (a known one), or "not confirmed by
the re-check" (:data:`UNCONFIRMED`) when the re-check could not run the test; it never
reads the "Re-checked: ..." line, which a student's own cell could print too.
"""

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from ..checks import forms, predictions
from ..common.literals import literal_assignments
from .analysis import MISCONCEPTIONS, OTHER, UNCONFIRMED, choice_check, misconception_name, problem_label

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
_TAG = re.compile(r"\[misconception: ([a-z0-9-]{1,40})\]")


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
    (an error output): the tag of its outputs (:func:`tag_of_outputs`). Else it failed unseen (hidden
    tests, not confirmed): the grader's record in its metadata, when well formed, gives the check's tag (a known one)
    or says the re-check could not confirm the test. Anything else: (None, False), "other"."""
    outputs = cell.get("outputs") or []
    if any(isinstance(o, dict) and o.get("output_type") == "error" for o in outputs):
        return tag_of_outputs(outputs), False
    from ..grading.checker import RECHECKED

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
    choices: dict = field(default_factory=dict)  # (student, assignment, answer grade_id) -> the letter chosen, or None
    predictions: dict = field(default_factory=dict)  # (student, assignment) -> {prediction id: value} (checks.predictions)
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

    from ..grading.gradebooks import course_db_url
    from ..grading.grading import load_status

    course = Path(course).resolve()
    own, course_id = course_db_url(course)
    results = Results()
    status = load_status(course)
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
                    nb = nbformat.read(str(path), as_version=4)
                    add_failed_tests(results, student, assignment.name, nb, cells)
                    add_answers(results, student, assignment.name, nb)
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


def add_answers(results, student, assignment, nb):
    """Add what the autograded notebook ``nb`` answered to ``results``: the letter of each labelled choice
    (the literal its answer cell assigns, read, never run; None when it is not one of the options) and
    the prediction cells' values (:func:`autograders.checks.predictions.read`)."""
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        check = choice_check(grade_id) if cell.cell_type == "code" else None
        if check is not None:
            _, options = forms.choice_form(check)
            value = _literal(cell.source)
            letter = value.strip().upper() if isinstance(value, str) else None
            results.choices[student, assignment, grade_id] = letter if letter in options else None
    found = predictions.read(nb)
    if found:
        results.predictions[student, assignment] = found


def _literal(source):
    """The literal the last top-level assignment of ``source`` gives, or None."""
    found = literal_assignments(source)
    return found[-1][1] if found else None


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
