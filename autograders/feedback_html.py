"""Per-student HTML feedback that never shows the hidden tests' source.

nbgrader's ``generate_feedback`` renders the autograded notebook, whose test cells
autograde restored from the gradebook *with* their hidden tests (jupyter/nbgrader#917).
:class:`HideHiddenTests` runs after nbgrader's ``GetGrades``: in each cell it
replaces the lines between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``
by one comment, and drops those lines from the cell's outputs too (a Python
traceback quotes the failing line), but keeps every message: a hidden check's
``WrongAnswer`` says what is wrong without the code that found it.

:func:`generate_feedback` renders one submission (the grading workers call it in
their private course right after autograding); :func:`regenerate` renders again,
from the course's gradebook, the feedback of submissions already autograded, for
example after manual grading in the formgrader.
"""

import functools
import re
import shutil
from pathlib import Path

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PLACEHOLDER = "# (hidden tests: not shown)"
# A check's message is one long line: wrap it, as the notebook does, instead of scrolling sideways.
WRAP_OUTPUTS = ("<style>.output_text pre, .jp-OutputArea-output pre "
                "{ white-space: pre-wrap; word-break: normal; overflow-wrap: break-word; }</style>\n")


def hidden_lines(source, begin="BEGIN HIDDEN TESTS", end="END HIDDEN TESTS"):
    """The lines of ``source`` inside hidden-test regions (the delimiters included)."""
    found, inside = [], False
    for line in source.split("\n"):
        if begin in line:
            inside = True
        if inside:
            found.append(line)
        if end in line:
            inside = False
    return found


def strip_hidden(source, begin="BEGIN HIDDEN TESTS", end="END HIDDEN TESTS", placeholder=PLACEHOLDER):
    """``source`` with each hidden-test region replaced by ``placeholder``."""
    kept, inside = [], False
    for line in source.split("\n"):
        if begin in line:
            inside = True
            kept.append(line[: len(line) - len(line.lstrip())] + placeholder)
        elif end in line:
            inside = False
        elif not inside:
            kept.append(line)
    return "\n".join(kept)


def _scrub(text, secret):
    """``text`` without the lines that quote any of the ``secret`` lines."""
    if not secret:
        return text
    return "\n".join(line for line in text.split("\n") if not any(s in ANSI.sub("", line) for s in secret))


class HideHiddenTests(NbGraderPreprocessor):
    """Remove hidden tests' source from cells and their outputs; keep the messages."""

    begin_test_delimeter = Unicode("BEGIN HIDDEN TESTS").tag(config=True)
    end_test_delimeter = Unicode("END HIDDEN TESTS").tag(config=True)

    def preprocess_cell(self, cell: NotebookNode, resources: ResourcesDict, index: int):
        if self.begin_test_delimeter not in cell.source:
            return cell, resources
        secret = [line.strip() for line in hidden_lines(cell.source, self.begin_test_delimeter, self.end_test_delimeter)]
        secret = [s for s in secret if len(s) >= 4]
        cell.source = strip_hidden(cell.source, self.begin_test_delimeter, self.end_test_delimeter)
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                output.traceback = [_scrub(part, secret) for part in output.traceback]
                output.evalue = _scrub(output.evalue, secret)
            elif output.output_type == "stream":
                output.text = _scrub(output.text, secret)
            else:
                for mime in ("text/plain", "text/html", "text/markdown"):
                    if mime in output.get("data", {}):
                        value = output.data[mime]
                        output.data[mime] = _scrub("".join(value) if isinstance(value, list) else value, secret)
        return cell, resources


@functools.lru_cache(maxsize=None)
def exporter_class():
    """nbconvert's HTMLExporter whose templates compile once per process, not once per notebook."""
    import jinja2
    from nbconvert.exporters import HTMLExporter

    class Compiled(jinja2.BytecodeCache):
        """Compiled templates kept in memory, keyed by name and source checksum (jinja's buckets)."""

        store = {}

        def load_bytecode(self, bucket):
            if bucket.key in self.store:
                bucket.bytecode_from_string(self.store[bucket.key])

        def dump_bytecode(self, bucket):
            self.store[bucket.key] = bucket.bytecode_to_string()

    class FeedbackHTMLExporter(HTMLExporter):
        def _create_environment(self):
            environment = super()._create_environment()
            environment.bytecode_cache = Compiled()
            return environment

        def from_notebook_node(self, nb, resources=None, **kw):
            html, resources = super().from_notebook_node(nb, resources, **kw)
            return html.replace("</head>", WRAP_OUTPUTS + "</head>", 1), resources

    return FeedbackHTMLExporter


def feedback_preprocessors():
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import GetGrades

    return [GetGrades, HideHiddenTests, CSSHTMLHeaderPreprocessor]


def generate_feedback(root, config, assignment, student, log=None):
    """Run nbgrader's GenerateFeedback for one autograded submission in the course at
    ``root`` (hidden tests hidden); return {relative path: (mode, bytes)} of the
    feedback folder. Raises RuntimeError with nbgrader's log if it fails."""
    from nbgrader.converters import GenerateFeedback
    from nbgrader.coursedir import CourseDirectory
    from nbgrader.utils import capture_log
    from traitlets.config import Config

    config = Config(config)
    config.GenerateFeedback.preprocessors = feedback_preprocessors()
    config.GenerateFeedback.exporter_class = exporter_class()
    coursedir = CourseDirectory(config=config)
    coursedir.assignment_id, coursedir.student_id = assignment, student
    app = GenerateFeedback(coursedir=coursedir, config=config, **({"log": log} if log else {}))
    app.force = True
    outcome = capture_log(app)
    if not outcome.get("success"):
        raise RuntimeError("generate_feedback failed:\n" + outcome.get("log", "") + outcome.get("error", ""))
    out = Path(root) / "feedback" / student / assignment
    return {
        str(p.relative_to(out)): (p.stat().st_mode & 0o777, p.read_bytes())
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def regenerate(course, assignments=None, students=None, db_url=None, progress=False):
    """Write ``feedback/<student>/<assignment>/`` again from the gradebook ``db_url``
    (default: the course's), manual scores and comments included, for every
    submission in it or those of ``assignments`` and ``students``. A submission whose
    autograded notebook is missing or broken fails alone and loses its old feedback
    (as in ``grade``). Return ([(student, assignment)] written, [(student, assignment, reason)] failed)."""
    from nbgrader.api import Gradebook

    from .gradebooks import course_config, course_db_url
    from .grading import Progress, _reason

    course = Path(course).resolve()
    config = course_config(course)
    own_url, course_id = course_db_url(course, config)
    config.CourseDirectory.root = str(course)
    config.CourseDirectory.db_url = db_url or own_url  # what nbgrader's GetGrades reads
    with Gradebook(config.CourseDirectory.db_url, course_id) as gb:
        chosen = sorted(
            (s.student.id, a.name, [nb.name for nb in s.notebooks])
            for a in gb.assignments if not assignments or a.name in assignments
            for s in a.submissions if not students or s.student.id in students
        )
    bar = Progress(len(chosen)) if progress and chosen else None
    written, failed = [], []
    for student, assignment, notebooks in chosen:
        autograded = Path("autograded") / student / assignment
        missing = [str(autograded / f"{name}.ipynb") for name in notebooks
                   if not (course / autograded / f"{name}.ipynb").is_file()]
        reason = f"no autograded notebook {', '.join(missing)} (grade it again)" if missing else None
        if not reason:
            try:
                generate_feedback(course, config, assignment, student)
            except RuntimeError as error:
                reason = _reason(str(error))
        if reason:
            shutil.rmtree(course / "feedback" / student / assignment, ignore_errors=True)
            failed.append((student, assignment, reason))
        else:
            written.append((student, assignment))
        if bar:
            bar.update(not reason, f"{student}/{assignment}")
    return written, failed
