"""No active content from a submission reaches a browser.

The feedback page is served from the instructor's Jupyter (the formgrader links to it), where a
script would act with the instructor's token. :func:`neutralise` makes a notebook safe to render
(HTML and markdown outputs, markdown and raw cells with markup, cleaned by the nh3 sanitiser with
:data:`TAGS` and :data:`ATTRIBUTES`; JavaScript, SVG, widget views, Mermaid and other active outputs
dropped; the widget state removed). The grading job applies it to every autograded notebook
(:func:`neutralise_file`), which nbgrader's formgrader renders itself, and
:class:`NeutraliseActiveContent` to the copy the feedback is rendered from
(:mod:`autograders.grading.feedback_html`).
"""

import copy
import html
import re
from html.parser import HTMLParser

from nbgrader.preprocessors import NbGraderPreprocessor


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
# The MathML that autograders.common.math_html writes (latex2mathml's presentation markup, its TeX as an
# annotation): exactly what it emits on the notebooks' formulas and on the usual others (hats, matrices,
# sums, \mathrm), checked by tests/test_math_html.py. No link, no event handler, no annotation-xml (which
# may hold HTML), no maction or mglyph.
MATH_TAGS = frozenset({
    "math", "semantics", "annotation", "mrow", "mi", "mn", "mo", "mtext", "mspace", "msub", "msup", "msubsup",
    "mfrac", "msqrt", "mroot", "mover", "munder", "munderover", "mstyle", "mtable", "mtr", "mtd",
})
MATH_ATTRIBUTES = {
    "math": {"display"}, "annotation": {"encoding"}, "mi": {"mathvariant"},
    "mo": {"stretchy", "fence", "form", "minsize", "maxsize", "accent"}, "mover": {"accent"},
    "mspace": {"width", "linebreak"}, "mstyle": {"displaystyle", "scriptlevel"}, "mfrac": {"linethickness"},
    "mtd": {"columnalign"},
}
TAGS = TAGS | MATH_TAGS
ATTRIBUTES = {**ATTRIBUTES, **MATH_ATTRIBUTES}
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
    """``source`` rendered as the feedback page renders markdown (raw HTML kept, mathematics as MathML);
    a source it cannot render (a missing attachment) comes back as it is, to be audited as HTML."""
    from ..common.math_html import markdown_html

    try:
        return markdown_html(source, attachments=attachments or {})
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


