"""Markdown to HTML with its mathematics as MathML: pages that need no script and no network.

The student's feedback page and the teachers' answer key are read offline (a grader's machine
without internet, a printed copy) and must load nothing from elsewhere. Their markdown is rendered
as nbconvert renders it (:class:`MarkdownWithMath`, mistune), but each ``$...$``, ``$$...$$``,
``\\(...\\)``, ``\\[...\\]`` and ``\\begin{env}...\\end{env}`` becomes MathML (latex2mathml, on the
server), which current browsers draw themselves (MathML Core: Chromium 109+, Firefox, Safari).
Code spans and code blocks are never read as mathematics (markdown's own rules). Each formula
keeps its TeX as ``<annotation encoding="application/x-tex">``; a formula the converter cannot
handle is left as TeX, as nbconvert writes it.

Tables inside a block quote or a list render as tables, as JupyterLab's markdown renderer (marked,
GitHub's flavour) draws them: nbconvert's mistune renders a table only at the top level, so
level 1's notation table (inside a ``>`` quote) came out as a paragraph of pipes.
"""

import functools
import html
import re
from xml.etree.ElementTree import Element, SubElement, tostring

from mistune import import_plugin
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

TEX = "application/x-tex"
# A font with OpenType MATH tables (each system's own: Windows, macOS, Linux's DejaVu, Latin Modern or
# Noto), without which Chromium on Linux draws fences and roots at text size: the generic ``math``
# family alone fell back to a text font there.
STYLE = ('math { font-family: "Cambria Math", "STIX Two Math", "Latin Modern Math", "DejaVu Math TeX Gyre", '
         '"Noto Sans Math", math; } .math-word { white-space: nowrap; }')
# Chromium breaks a line between an inline formula and the text right after it ("$d_k$." put the full
# stop alone on the next line): the two are kept together, as TeX keeps them.
_GLUED = re.compile(r'(<math display="inline">(?:(?!</math>).)*</math>)([^\s<]+)', re.S)
PLUGINS = (*MarkdownWithMath.DEFAULT_PLUGINS, "mistune.plugins.table.table_in_quote",
           "mistune.plugins.table.table_in_list")
# latex2mathml keeps text mode's escaped characters as written (\text{kv\_heads} gives "kv\_heads").
_TEXT_ESCAPE = re.compile(r"\\([_%$&#{}])")


@functools.lru_cache(maxsize=4096)
def mathml(tex, display=False):
    """The MathML (a ``<math>`` element, as HTML) of the TeX formula ``tex``, its TeX kept as an
    annotation; None when latex2mathml cannot convert it. Cached: a class's pages repeat the same
    formulas (about 0.2 ms each to convert)."""
    from latex2mathml.converter import convert_to_element

    try:
        converted = convert_to_element(tex, display="block" if display else "inline")
    except Exception:  # noqa: BLE001 (latex2mathml's own errors, and IndexError/StopIteration on broken TeX)
        return None
    math = Element("math", display="block" if display else "inline")
    semantics = SubElement(math, "semantics")
    semantics.extend(converted)  # one <mrow>
    SubElement(semantics, "annotation", encoding=TEX).text = tex
    for element in semantics.iter():
        if element.tag == "annotation":
            continue
        # latex2mathml's texts mix characters and character references (&#x02264;): decoded here,
        # escaped again by tostring, so a "<" or "&" in \text{} cannot become markup.
        element.text = html.unescape(element.text) if element.text else element.text
        element.tail = html.unescape(element.tail) if element.tail else element.tail
        if element.tag == "mtext" and element.text:
            element.text = _TEXT_ESCAPE.sub(r"\1", element.text)
    return tostring(math, encoding="unicode", short_empty_elements=False)


class MathMLRenderer(IPythonRenderer):
    """nbconvert's markdown renderer, writing mathematics as MathML."""

    def inline_math(self, body):
        return mathml(body) or super().inline_math(body)

    def block_math(self, body):
        return mathml(body, display=True) or super().block_math(body)

    def latex_environment(self, name, body):
        return mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True) or super().latex_environment(name, body)


def markdown_html(source, **options):
    """``source`` (markdown) as HTML, mathematics as MathML; ``options`` are nbconvert's
    :class:`IPythonRenderer`'s (attachments, anchor_link_text...). Raw HTML is kept as it is."""
    renderer = MathMLRenderer(escape=False, **options)
    page = MarkdownWithMath(renderer=renderer, plugins=[import_plugin(name) for name in PLUGINS]).render(source)
    return _GLUED.sub(r'<span class="math-word">\1\2</span>', page)
