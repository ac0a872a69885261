"""Per-student HTML feedback that never shows the hidden tests' source.

nbgrader's ``generate_feedback`` renders the autograded notebook, whose test cells
autograde restored from the gradebook *with* their hidden tests (jupyter/nbgrader#917).
:class:`HideHiddenTests` runs after nbgrader's ``GetGrades``: in each cell it
replaces the lines between ``### BEGIN HIDDEN TESTS`` and ``### END HIDDEN TESTS``
by one comment, and drops those lines from the cell's outputs too (a Python
traceback quotes the failing line), but keeps every message: a hidden check's
``WrongAnswer`` says what is wrong without the code that found it.

No active content from a submission reaches a browser: the feedback page is served
from the instructor's Jupyter (the formgrader links to it), where a script would act
with the instructor's token. :func:`neutralise` makes a notebook safe to render
(HTML and markdown outputs, markdown and raw cells with markup, cleaned by the nh3
sanitiser with :data:`TAGS` and :data:`ATTRIBUTES`; JavaScript, SVG, widget views,
Mermaid and other active outputs dropped; the widget state removed). The grading job
applies it to every autograded notebook, which nbgrader's formgrader renders itself,
and :class:`NeutraliseActiveContent` to the copy the feedback is rendered from; the
feedback page's body (everything but nbconvert's own head: its styles and MathJax,
with MathJax's ``Safe`` extension) is sanitised once more as a whole. What the page
adds to nbgrader's feedback template (:func:`styled_page`) is the autoescaped Jinja2
template ``templates/feedback_page.html.j2``.

:func:`generate_feedback` renders one submission (the grading workers call it in
their private course right after autograding); :func:`regenerate` renders again,
from the course's gradebook, the feedback of submissions already autograded, for
example after manual grading in the formgrader.
"""

import copy
import functools
import html
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

from nbconvert.exporters.exporter import ResourcesDict
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import NbGraderPreprocessor
from traitlets import Unicode

from ..common.regions import BEGIN, END, hidden_lines, replace_hidden

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
PLACEHOLDER = "# (hidden tests: not shown)"
TEMPLATES = Path(__file__).parent / "templates"  # feedback_page.html.j2
ALT_TEXT = "No description has been provided for this image"  # nbconvert's, for an <img> without one


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


# --- no active content from a submission ---------------------------------------------

# What nbconvert's templates, nbgrader's feedback template, pygments and markdown write.
TAGS = frozenset({
    "a", "abbr", "b", "blockquote", "br", "caption", "cite", "code", "col", "colgroup", "dd", "del", "details", "dfn",
    "div", "dl", "dt", "em", "figcaption", "figure", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "i", "img", "ins", "kbd",
    "li", "mark", "ol", "p", "pre", "q", "s", "samp", "small", "span", "strike", "strong", "sub", "summary", "sup",
    "table", "tbody", "td", "tfoot", "th", "thead", "time", "tr", "tt", "u", "ul", "var", "wbr",
})
ATTRIBUTES = {
    "*": {"class", "id", "title", "lang", "dir", "align", "style"},
    "a": {"href", "name"},
    "img": {"src", "alt", "width", "height"},
    "td": {"colspan", "rowspan"}, "th": {"colspan", "rowspan", "scope"},
    "col": {"span"}, "colgroup": {"span"}, "ol": {"start", "type"}, "time": {"datetime"},
}
STYLE_PROPERTIES = frozenset({
    "color", "background-color", "font-weight", "font-style", "text-decoration", "text-align", "vertical-align",
    "white-space", "width", "height", "max-width", "border", "border-collapse", "padding", "margin",
})
LINK_SCHEMES = ("http", "https", "mailto")
IMAGE_DATA = re.compile(r"data:image/(png|jpeg|gif|webp|svg\+xml)[;,]", re.IGNORECASE)
# Output types a template writes escaped or as an <img>; HTML and markdown are sanitised; the rest is dropped.
KEPT_OUTPUTS = ("text/plain", "image/png", "image/jpeg", "image/gif", "text/latex")
_SCHEME = re.compile(r"^([a-z][a-z0-9+.\-]*):")


def _url_allowed(tag, value):
    """A link to the web, a mail address or a relative one; an image embedded in the page (one
    fetched from elsewhere would tell its server when the instructor reads the page)."""
    url = re.sub(r"[\x00-\x20]", "", html.unescape(value)).lower()
    scheme = _SCHEME.match(url)
    if tag == "img":
        return bool(IMAGE_DATA.match(url))
    return scheme is None or scheme[1] in LINK_SCHEMES


def _attribute_filter(tag, attribute, value):
    if attribute in ("href", "src") and not _url_allowed(tag, value):
        return None
    return value


def sanitise(fragment):
    """``fragment`` (HTML) with only :data:`TAGS`, :data:`ATTRIBUTES` and safe URLs left:
    no script, event handler, iframe, form, meta refresh, ``javascript:`` link or style sheet."""
    import nh3

    return nh3.clean(fragment, tags=set(TAGS), attributes={k: set(v) for k, v in ATTRIBUTES.items()},
                     attribute_filter=_attribute_filter, url_schemes={*LINK_SCHEMES, "data"},
                     generic_attribute_prefixes={"data-"}, filter_style_properties=set(STYLE_PROPERTIES),
                     link_rel="noopener noreferrer")


class _Audit(HTMLParser):
    """Finds markup :func:`sanitise` would change: a tag, attribute, URL or style it does not keep."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.active = False

    def handle_starttag(self, tag, attrs):
        if tag not in TAGS:
            self.active = True
        for name, value in attrs:
            allowed = (name in ATTRIBUTES["*"] or name in ATTRIBUTES.get(tag, ()) or name.startswith("data-")
                       or (tag, name) == ("a", "rel"))  # nh3 sets rel="noopener noreferrer" on links
            if not allowed or name == "style" or _attribute_filter(tag, name, value or "") is None:
                self.active = True

    handle_startendtag = handle_starttag

    def handle_endtag(self, tag):
        if tag not in TAGS:
            self.active = True

    def handle_decl(self, decl):
        self.active = True

    handle_pi = unknown_decl = handle_decl


def has_active_content(fragment):
    """True when ``fragment`` (HTML) holds markup that :func:`sanitise` would remove."""
    audit = _Audit()
    audit.feed(fragment)
    audit.close()
    return audit.active


def _markdown_html(source, attachments=None):
    """``source`` rendered as nbconvert's HTML templates render markdown (raw HTML kept);
    a source it cannot render (a missing attachment) comes back as it is, to be audited as HTML."""
    from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

    try:
        return MarkdownWithMath(renderer=IPythonRenderer(escape=False, attachments=attachments or {})).render(source)
    except Exception:  # noqa: BLE001 (nbconvert's InvalidNotebook, mistune's errors)
        return source


# Markdown writes a tag or a URL only from raw HTML or an autolink ("<"), a link or an image
# ("](") or a link reference ("]:"): a cell with none of them is not even rendered.
_MARKUP = ("<", "](", "]:")


def _text(value):
    return "".join(value) if isinstance(value, list) else value


def neutralise(nb):
    """Make the notebook ``nb`` safe to render as HTML, in place; return how many cells
    changed. Markdown and raw cells whose markup is active are replaced by their
    sanitised rendering (others are left exactly as they are); HTML and markdown
    outputs are sanitised; JavaScript, SVG, widget views, Mermaid and any other output
    type a template would write as it is are dropped (a line says which); attachments
    keep images only; the notebook's widget state is removed."""
    changed = 0
    if nb.metadata.pop("widgets", None) is not None:
        changed += 1
    for cell in nb.cells:
        before = copy.deepcopy(cell)
        if cell.cell_type == "markdown" and any(sign in cell.source for sign in _MARKUP):
            rendered = _markdown_html(cell.source, cell.get("attachments"))
            if has_active_content(rendered):
                cell.source = sanitise(rendered)
        elif cell.cell_type == "raw" and cell.metadata.get("raw_mimetype", "").lower() in ("", "text/html"):
            if has_active_content(cell.source):
                cell.source = sanitise(cell.source)
        for name, bundle in list(cell.get("attachments", {}).items()):
            cell.attachments[name] = {m: v for m, v in bundle.items() if m.startswith("image/")}
        for output in cell.get("outputs", []):
            if output.output_type not in ("display_data", "execute_result"):
                continue
            data = output.get("data", {})
            kept = {m: v for m, v in data.items() if m in KEPT_OUTPUTS}
            if "text/html" in data:
                kept["text/html"] = sanitise(_text(data["text/html"]))
            elif "text/markdown" in data:
                kept["text/html"] = sanitise(_markdown_html(_text(data["text/markdown"])))
            dropped = sorted(set(data) - set(KEPT_OUTPUTS) - {"text/html", "text/markdown"})
            if dropped and "text/plain" not in kept:
                kept["text/plain"] = f"[{', '.join(dropped)} output: not shown]"
            output.data = kept
            output.metadata = {k: v for k, v in output.get("metadata", {}).items() if k != "filenames"}
        changed += cell != before
    return changed


def neutralise_file(path):
    """:func:`neutralise` the notebook file at ``path``, rewritten only if it changed; return that count."""
    import os

    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    changed = neutralise(nb)
    if changed:
        mode = os.stat(path).st_mode
        os.chmod(path, mode | 0o200)
        nbformat.write(nb, str(path))
        os.chmod(path, mode)
    return changed


class NeutraliseActiveContent(NbGraderPreprocessor):
    """:func:`neutralise` the notebook the feedback is rendered from; escape its name,
    which nbgrader's feedback template writes as it is."""

    def preprocess(self, nb, resources):
        neutralise(nb)
        if "nbgrader" in resources and "notebook" in resources["nbgrader"]:
            resources["nbgrader"]["notebook"] = html.escape(str(resources["nbgrader"]["notebook"]))
        return nb, resources


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
    return _page_template().render(head=Markup(page[:head_end]), rest=Markup(page[head_end:]))  # noqa: S704


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
    writes (styles, MathJax), is kept. A page without a body is sanitised whole."""
    head_end = page.find("</head>")
    opening = _BODY.search(page, head_end if head_end >= 0 else 0)
    closing = page.rfind("</body>")
    if head_end < 0 or not opening or closing < opening.end():
        return sanitise(page)
    return page[:opening.end()] + _alt_text(sanitise(page[opening.end():closing])) + page[closing:]


@functools.lru_cache(maxsize=None)
def exporter_class():
    """nbconvert's HTMLExporter whose templates compile once per process, not once per notebook."""
    import jinja2
    from nbconvert.exporters import HTMLExporter, TemplateExporter
    from nbconvert.filters.highlight import Highlight2HTML
    from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

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
    # of the feedback's time), the two costs this class removes. So it overrides
    # ``_create_environment`` and ``from_notebook_node``, the latter repeating HTMLExporter's own steps
    # with ``_init_resources`` and ``_nb_metadata``, as read from nbconvert 7.17.2 (pyproject.toml pins
    # nbconvert to 7.16-7.17: a later release is read again before the pin moves).
    class FeedbackHTMLExporter(HTMLExporter):
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
            self.register_filter("highlight_code", self.filters.get(
                "highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self)))
            resources = self._init_resources(resources)
            self.register_filter("filter_data_type", WidgetsDataTypeFilter(
                notebook_metadata=self._nb_metadata, parent=self, resources=resources))
            page, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
            return sanitise_page(styled_page(page)), resources

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

