"""Per-student HTML feedback that never shows the hidden tests' source.

nbgrader's ``generate_feedback`` renders the autograded notebook, whose test cells
autograde restored from the gradebook *with* their hidden tests (jupyter/nbgrader#917).
:class:`HideHiddenTests` runs after nbgrader's ``GetGrades``: in each cell it
replaces the lines between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``
by one comment, and drops those lines from the cell's outputs too (a Python
traceback quotes the failing line), but keeps every message: a hidden check's
``WrongAnswer`` says what is wrong without the code that found it.

No active content from a submission reaches a browser (:mod:`autograders.grading.neutralise`:
every autograded notebook, and the copy the feedback is rendered from, are neutralised); the
feedback page's body (everything but nbconvert's own head: its styles) is sanitised once
more as a whole. The page runs no script and loads nothing: its mathematics is MathML, written
on the server (:mod:`autograders.common.math_html`), not MathJax from a CDN. What the page
adds to nbgrader's feedback template (:func:`styled_page`) is the autoescaped Jinja2
template ``templates/feedback_page.html.j2``.

:func:`generate_feedback` renders one submission (the grading workers call it in
their private course right after autograding); :func:`regenerate` renders again,
from the course's gradebook, the feedback of submissions already autograded, for
example after manual grading in the formgrader.
"""

import functools
import json
import re
import shutil
from pathlib import Path

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from ..common.math_html import STYLE as MATH_STYLE
from ..common.regions import BEGIN, END, hidden_lines, replace_hidden
from .neutralise import (  # noqa: F401 (known here too)
    ATTRIBUTES, IMAGE_DATA, KEPT_OUTPUTS, TAGS, NeutraliseActiveContent, _markdown_html, has_active_content, neutralise,
    neutralise_file, sanitise,
)

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PLACEHOLDER = "# (hidden tests: not shown)"
TEMPLATES = Path(__file__).parent / "templates"  # feedback_page.html.j2
ALT_TEXT = "No description has been provided for this image"  # nbconvert's, for an <img> without one
NO_MATHJAX = "{%- macro mathjax(url='') -%}{%- endmacro %}"  # nbconvert's base/mathjax.html.j2, writing nothing


def strip_hidden(source, begin=BEGIN, end=END, placeholder=PLACEHOLDER):
    """``source`` with each hidden-test region replaced by ``placeholder``."""
    return replace_hidden(source, placeholder, begin, end)


def _scrub(text, secret):
    """``text`` without the lines that quote any of the ``secret`` lines."""
    if not secret:
        return text
    return "\n".join(line for line in text.split("\n") if not any(s in ANSI.sub("", line) for s in secret))


class HideHiddenTests(NbGraderPreprocessor):
    """Remove hidden tests' source from cells and their outputs; keep the messages."""

    begin_test_delimeter = Unicode(BEGIN).tag(config=True)
    end_test_delimeter = Unicode(END).tag(config=True)

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


_BODY = re.compile(r"<body[^>]*>", re.IGNORECASE)


@functools.lru_cache(maxsize=None)
def _page_template():
    import jinja2

    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                                     undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return environment.get_template("feedback_page.html.j2")


def styled_page(page):
    """nbconvert's ``page`` with the feedback's own head (``templates/feedback_page.html.j2``)
    put before its ``</head>``; a page without a head is returned as it is."""
    from markupsafe import Markup

    head_end = page.find("</head>")
    if head_end < 0:
        return page
    # Autoescaped: only nbconvert's page, cut at its </head>, goes in as it is.
    return _page_template().render(head=Markup(page[:head_end]), rest=Markup(page[head_end:]),  # noqa: S704
                                   math_style=Markup(MATH_STYLE))  # noqa: S704


def _alt_text(body):
    """``body`` with nbconvert's placeholder as the alt text of each ``<img>`` that has none
    (what nbconvert's HTMLExporter does to a whole page, on the body alone and only when
    it holds an image)."""
    if "<img" not in body:
        return body
    from bs4 import BeautifulSoup

    soup = BeautifulSoup(body, features="html.parser")
    for image in soup.select("img:not([alt])"):
        image.attrs["alt"] = ALT_TEXT
    return str(soup)


def sanitise_page(page):
    """An nbconvert page with its body sanitised as a whole; the head, which its template
    writes (styles), is kept. A page without a body is sanitised whole."""
    head_end = page.find("</head>")
    opening = _BODY.search(page, head_end if head_end >= 0 else 0)
    closing = page.rfind("</body>")
    if head_end < 0 or not opening or closing < opening.end():
        return sanitise(page)
    return page[:opening.end()] + _alt_text(sanitise(page[opening.end():closing])) + page[closing:]


_RENDERED = {}  # (filter, its inputs as JSON) -> HTML: a cell renders the same in every submission of a process


def _memo(key, render):
    key = json.dumps(key, sort_keys=True, default=repr)
    if key not in _RENDERED:
        if len(_RENDERED) >= 50_000:
            _RENDERED.clear()
        _RENDERED[key] = render()
    return _RENDERED[key]


@functools.lru_cache(maxsize=None)
def exporter_class():
    """nbconvert's HTMLExporter whose templates compile once per process, not once per notebook."""
    import jinja2
    from nbconvert.exporters import HTMLExporter, TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter
    from traitlets import default

    from ..common.math_html import markdown_html

    class Compiled(jinja2.BytecodeCache):
        """Compiled templates kept in memory, keyed by name and source checksum (jinja's buckets)."""

        store = {}

        def load_bytecode(self, bucket):
            if bucket.key in self.store:
                bucket.bytecode_from_string(self.store[bucket.key])

        def dump_bytecode(self, bucket):
            self.store[bucket.key] = bucket.bytecode_to_string()

    # HTMLExporter's public options (template_name, exclude_*, filters, preprocessors) have no say over
    # the Jinja2 environment's bytecode cache nor over the page's last BeautifulSoup pass (about a fifth
    # of the feedback's time), nor over rendering each cell's Markdown and highlighting its code again in
    # every submission (the cells the assignment gives are the same in all: a third of the rest), the
    # costs this class removes. So it overrides ``_create_environment``, ``markdown2html`` (its output a
    # function of its inputs and settings, but for ``embed_images``, which reads files) and
    # ``from_notebook_node``, the latter repeating HTMLExporter's own steps with ``_init_resources`` and
    # ``_nb_metadata``, as read from nbconvert 7.17.2 (pyproject.toml pins nbconvert to 7.16-7.17: a
    # later release is read again before the pin moves).
    class FeedbackHTMLExporter(HTMLExporter):
        # nbgrader's feedback template calls nbconvert's ``mathjax()`` macro (a CDN script) without
        # the exporter's ``mathjax_url``: a loader tried before the templates' folders (nbconvert's
        # public ``extra_loaders``) gives it a macro that writes nothing. The mathematics is MathML.
        @default("extra_loaders")
        def _no_mathjax(self):
            return [jinja2.DictLoader({"mathjax.html.j2": NO_MATHJAX})]

        def _create_environment(self):
            environment = super()._create_environment()
            environment.bytecode_cache = Compiled()
            return environment

        def from_notebook_node(self, nb, resources=None, **kw):
            # HTMLExporter's own steps but its last: a BeautifulSoup pass over the whole page
            # (about a fifth of the feedback's time) that gives an <img> without alt text a
            # placeholder (done on the sanitised body, by _alt_text) and makes JupyterLab
            # templates' cells focusable (nbgrader's feedback template, classic, writes none).
            language = nb.metadata.get("language_info", {})
            lexer = language.get("pygments_lexer", language.get("name", None))
            plain = Highlight2HTML(pygments_lexer=lexer, parent=self)

            def highlight(source, language=None, metadata=None):
                return _memo(["highlight", lexer, plain.extra_formatter_options, source, language, metadata],
                             lambda: plain(source, language=language, metadata=metadata))
            self.register_filter("highlight_code", self.filters.get("highlight_code", highlight))
            resources = self._init_resources(resources)
            self.register_filter("filter_data_type", WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources))
            page, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
            return sanitise_page(styled_page(page)), resources

        @jinja2.pass_context
        def markdown2html(self, context, source):
            # HTMLExporter's filter with the mathematics as MathML and tables in quotes and lists
            # (autograders.common.math_html); nbgrader's comments go through it too. Rendered once per
            # process for the same inputs and settings, but with ``embed_images``, which reads files.
            attachments = context.get("cell", {}).get("attachments", {})
            path = context.get("resources", {}).get("metadata", {}).get("path", "")
            render = functools.partial(
                markdown_html, source, attachments=attachments, embed_images=self.embed_images, path=path,
                anchor_link_text=self.anchor_link_text, exclude_anchor_links=self.exclude_anchor_links,
                **self.lexer_options)
            if self.embed_images:
                return render()
            return _memo(["markdown", source, attachments, path, self.anchor_link_text, self.exclude_anchor_links,
                          self.lexer_options], render)

    return FeedbackHTMLExporter


def feedback_preprocessors():
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from nbgrader.preprocessors import GetGrades

    return [GetGrades, HideHiddenTests, NeutraliseActiveContent, CSSHTMLHeaderPreprocessor]


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
    return {str(p.relative_to(out)): (p.stat().st_mode & 0o777, p.read_bytes()) for p in sorted(out.rglob("*")) if p.is_file()}


def regenerate(course, assignments=None, students=None, db_url=None, progress=False):
    """Write ``feedback/<student>/<assignment>/`` again from the gradebook ``db_url``
    (default: the course's), manual scores and comments included, for every
    submission in it or those of ``assignments`` and ``students``. A submission whose
    autograded notebook is missing or broken fails alone and loses its old feedback
    (as in ``grade``). Return ([(student, assignment)] written, [(student, assignment, reason)] failed)."""
    from nbgrader.api import Gradebook

    from .gradebooks import course_config, course_db_url
    from .progress import Progress, _reason

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


def unavailable_pages(assignment, notebooks, reason, when=None):
    """{``<notebook>.html``: (mode, bytes)}: for each of ``notebooks``, a page saying that its feedback
    could not be made, and why (``templates/feedback_unavailable.html.j2``, autoescaped). It replaces
    an older grading's page, which would otherwise stand as if it were this grading's."""
    import datetime

    import jinja2

    environment = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)), autoescape=True)
    template = environment.get_template("feedback_unavailable.html.j2")
    when = when or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return {f"{name}.html": (0o644, template.render(assignment=assignment, notebook=name, reason=ANSI.sub("", reason),
                                                    when=when).encode("utf-8"))
            for name in sorted(notebooks)}

