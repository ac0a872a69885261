"""The feedback page's and answer key's mathematics as MathML (autograders.common.math_html): every
formula of the notebooks converts, a formula the converter cannot handle stays as TeX, code is not
mathematics, tables in quotes render as tables, and the sanitiser keeps exactly this MathML and
nothing active inside it."""

import collections
import functools
import os
import re
import xml.etree.ElementTree as ET

import nbformat
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autograders.common.math_html import TEX, MathMLRenderer, markdown_html, mathml
from autograders.grading import neutralise
from tests.conftest import NOTEBOOKS

# Formulas the converter is known to leave as TeX in the notebooks (none today): each is shown as written.
LEFT_AS_TEX = set()
# What a student's or author's markdown may hold beyond the notebooks': the allow-list covers it too.
USUAL_FORMULAS = [
    r"\hat{x} + \bar{y} + \vec{v} + \tilde{z} + \dot{a}", r"\sqrt[3]{x}",
    r"\begin{pmatrix} 1 & 2 \\ 3 & 4 \end{pmatrix}", r"\begin{bmatrix} a \\ b \end{bmatrix}",
    r"\mathrm{softmax}(x) \mathbf{x} \mathcal{L}",
    r"\sum_{i=1}^{n} x_i \prod_j \lim_{n \to \infty} \max_i \arg\max_j", r"\dfrac{a}{b} \tfrac12 \binom{n}{k}",
    r"\underbrace{a+b}_{2} \overline{AB}", r"\begin{cases} 1 & x > 0 \\ 0 & \text{else} \end{cases}",
    r"\begin{aligned} a &= b \\ c &= d \end{aligned}",
]


@functools.cache
def notebook_formulas():
    """[(display, tex)] of every formula in the markdown cells of the notebooks, as their renderer finds them:
    rendered once, by the worker whose test first asks (not by every worker while collecting)."""
    found = []

    class Recorder(MathMLRenderer):
        def inline_math(self, body):
            found.append((False, body))
            return super().inline_math(body)

        def block_math(self, body):
            found.append((True, body))
            return super().block_math(body)

        def latex_environment(self, name, body):
            found.append((True, f"\\begin{{{name}}}{body}\\end{{{name}}}"))
            return super().latex_environment(name, body)

    from mistune import import_plugin
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    from autograders.common.math_html import PLUGINS

    plugins = [import_plugin(name) for name in PLUGINS]
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                MarkdownWithMath(renderer=Recorder(escape=False), plugins=plugins).render(cell.source)
    return found


def outside_annotations(markup):
    return re.sub(r"(?s)<annotation\b.*?</annotation>", "", markup)


def test_every_formula_of_the_notebooks_converts():
    formulas = notebook_formulas()
    assert len(formulas) > 1000 and any(display for display, _ in formulas)
    failed = {tex for display, tex in formulas if mathml(tex, display) is None}
    assert failed == LEFT_AS_TEX
    for display, tex in set(formulas):
        converted = mathml(tex, display)
        assert converted.startswith(f'<math display="{"block" if display else "inline"}"><semantics>'), tex
        assert "\\" not in outside_annotations(converted), f"a command left unconverted in {tex!r}"
        assert f'<annotation encoding="{TEX}">' in converted
        annotation = ET.fromstring(converted).find("semantics/annotation")
        assert annotation.text == tex, "the TeX is kept, as written"


def test_no_tex_is_left_on_the_notebooks_pages():
    """Every markdown cell rendered: no ``$`` or ``\\(`` outside code and the annotations."""
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            if cell.cell_type == "markdown":
                rendered = outside_annotations(markdown_html(cell.source))
                rendered = re.sub(r"(?s)<pre\b.*?</pre>|<code>.*?</code>", "", rendered)
                assert not re.search(r"\$|\\\(|\\\[", rendered), (path.name, cell.source[:80])


def test_the_allow_list_is_exactly_what_the_converter_emits():
    """The sanitiser's MathML: the elements and attributes written for the notebooks' formulas and the usual
    others, no more (an element nobody writes is one more thing to trust) and no less (it would be stripped)."""
    tags, attributes = set(), collections.defaultdict(set)
    for display, tex in {*notebook_formulas(), *((True, t) for t in USUAL_FORMULAS)}:
        for element in ET.fromstring(mathml(tex, display)).iter():
            tags.add(element.tag)
            attributes[element.tag] |= set(element.attrib)
    assert tags == neutralise.MATH_TAGS
    assert {t: a for t, a in attributes.items() if a} == neutralise.MATH_ATTRIBUTES
    assert not neutralise.MATH_TAGS & {"maction", "mglyph", "annotation-xml", "script", "a"}
    assert not [a for attrs in neutralise.MATH_ATTRIBUTES.values() for a in attrs if a.startswith("on") or "href" in a]


@pytest.mark.parametrize("tex", [r"x_{", r"\frac{", r"\sqrt", r"\left(", "^", "{", "%"])
def test_tex_the_converter_cannot_handle_stays_as_it_was(tex):
    assert mathml(tex) is None
    page = markdown_html(f"Before ${tex}$ and $$\\frac{{1}}{{2}}$$ after.")
    assert f"Before ${tex}$ and" in page.replace("&amp;", "&"), "left as TeX, as nbconvert writes it"
    assert "<mfrac>" in page and "after." in page, "the rest of the cell still converts"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab1+-=^_{}[]()\\&<>% |$", max_size=24))
def test_any_tex_converts_or_stays_and_no_word_is_lost(tex):
    converted = mathml(tex)
    if converted is not None:
        ET.fromstring(converted)  # well-formed: no text of the formula became markup
    page = markdown_html(f"Start {tex} end")
    text = re.sub(r"<[^>]+>", "", outside_annotations(page))
    assert "Start" in text and "end" in text


def test_text_in_a_formula_is_never_markup():
    page = markdown_html(r"$\text{<img src=x onerror=alert(1)> & \_} \le 5$")
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page
    assert "<mtext>&lt;img\xa0src=x\xa0onerror=alert(1)&gt;\xa0&amp;\xa0_</mtext><mo>≤</mo>" in page, \
        "characters, not references (text mode's spaces are no-break spaces), and text mode's escapes read"


def test_code_is_not_mathematics():
    page = markdown_html("In code `$x$` stays.\n\n```\nprice = \"$5 and $6\"\n```\n\n    $y$\n")
    assert "<math" not in page and "<code>$x$</code>" in page and "$5 and $6" in page and "$y$" in page


def test_every_delimiter_converts():
    page = markdown_html("$a$, $$b$$, \\\\(c\\\\), \\\\[d\\\\] and \\begin{equation}e\\end{equation}")
    assert page.count('<math display="inline">') == 2 and page.count('<math display="block">') == 3, page


def test_level_1_s_quoted_notation_table_is_a_table():
    nb = nbformat.read(NOTEBOOKS / "level1_recognition.ipynb", as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "markdown" and "| symbol |" in c.source)
    page = markdown_html(cell.source)
    quote = page[page.index("<blockquote>"):page.index("</blockquote>")]
    assert "<table>" in quote and "<th>symbol</th>" in quote and quote.count("<tr>") == 11, "a header and ten rows"
    assert "|" not in re.sub(r"<math\b.*?</math>", "", quote), "no pipe left as text"
    listed = markdown_html("- a list\n\n  | a | b |\n  | --- | --- |\n  | 1 | 2 |\n")
    assert "<li><p>a list</p>\n<table>" in listed


def test_the_sanitiser_keeps_the_mathml_and_strips_what_is_active_inside_it():
    honest = markdown_html(r"$\text{head}_i = \operatorname{softmax}\!\left(\frac{Q_i K_i^{\top}}{\sqrt{d_k}}\right)V_i$")
    assert not neutralise.has_active_content(honest)
    assert neutralise.sanitise(honest) == honest, "the converter's MathML passes the sanitiser unchanged"
    hostile = ('<math display="block" onload="window.pwned=1"><semantics><mrow>'
               '<mi onclick="window.pwned=2" href="javascript:window.pwned=3">x</mi>'
               '<mtext><script>window.pwned=4</script>kept</mtext>'
               '<maction actiontype="statusline"><mi>y</mi><mtext>z</mtext></maction>'
               '<mglyph src="http://pwned.invalid/g.png"></mglyph>'
               '<mi><style>@import "http://pwned.invalid/s.css";</style>w</mi></mrow>'
               '<annotation-xml encoding="text/html"><img src=x onerror="window.pwned=5"></annotation-xml>'
               '</semantics></math>')
    assert neutralise.has_active_content(hostile)
    clean = neutralise.sanitise(hostile)
    active = r"on\w+=|href|javascript|<script|<style|<img|maction|mglyph|annotation-xml|pwned"
    assert not re.search(active, clean), clean
    assert "<math" in clean and ">kept<" in clean and ">x<" in clean and not neutralise.has_active_content(clean)


def test_the_feedback_exporter_writes_mathml_tables_and_no_script():
    """nbgrader's feedback template through the feedback's exporter (as generate_feedback sets it up), on
    level 1's markdown: no MathJax, no script, the formulas as MathML, the quoted table as a table."""
    nb, page = level1_feedback_page()
    assert_offline(page)
    assert page.count("<math") == sum(len(re.findall(r"<math\b", markdown_html(c.source))) for c in nb.cells) > 100
    quote = page[page.index("<blockquote>"):page.index("</blockquote>")]
    assert "<th>symbol</th>" in quote and "$" not in outside_annotations(quote)


def assert_offline(page):
    """``page`` runs no script and loads nothing from elsewhere (nbgrader's template keeps a comment naming
    MathJax, which loads nothing)."""
    uncommented = re.sub(r"(?s)<!--.*?-->", "", page)
    assert "<script" not in page.lower() and "mathjax" not in uncommented.lower()
    assert not re.search(r"""<(script|link|img|iframe|object|embed)\b[^>]*(src|href)=["']?(https?:)?//""", page), \
        "nothing fetched from elsewhere"
    assert "cdn" not in uncommented.lower()


def level1_feedback_page():
    """Level 1's markdown through the feedback's exporter and nbgrader's feedback template (as
    generate_feedback sets them up)."""
    import nbgrader.server_extensions.formgrader as formgrader

    from autograders.grading.feedback_html import exporter_class

    here = os.path.dirname(formgrader.__file__)
    exporter = exporter_class()(template_name="feedback", extra_template_basedirs=[os.path.join(here, "templates")],
                                extra_template_paths=[os.path.join(here, "static/node_modules/bootstrap/dist/css")])
    nb = nbformat.read(NOTEBOOKS / "level1_recognition.ipynb", as_version=4)
    nb.cells = [c for c in nb.cells if c.cell_type == "markdown"]
    resources = {"nbgrader": {"notebook": "level1_recognition", "score": 1, "max_score": 2, "late_penalty": 0}}
    return nb, exporter.from_notebook_node(nb, resources=resources)[0]


def test_chromium_lays_the_pages_mathematics_out_offline(playwright_browser, tmp_path):
    """The answer key and a feedback page opened in Chromium with every request off the file system refused:
    none is made, the formulas are laid out as MathML (a fraction's numerator above its denominator, the notation
    table is a table) and no TeX shows."""
    from autograders.editions import answer_key

    pages = {"key": tmp_path / "key.html", "feedback": tmp_path / "feedback.html"}
    pages["key"].write_text(answer_key.build(NOTEBOOKS), encoding="utf-8")
    pages["feedback"].write_text(level1_feedback_page()[1], encoding="utf-8")
    for name, path in pages.items():
        page, asked = playwright_browser.new_page(), []
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:")
                   else (asked.append(route.request.url), route.abort()))
        page.goto(path.as_uri(), wait_until="load")
        seen = page.evaluate("""() => {
            const fraction = document.querySelector('mfrac'), math = fraction.closest('math');
            const [over, under] = [...fraction.children].map(part => part.getBoundingClientRect());
            return {display: getComputedStyle(math).display, stacked: over.bottom <= under.top + 1,
                    formulas: document.querySelectorAll('math').length, text: document.body.innerText,
                    tables: document.querySelectorAll('blockquote table').length};
        }""")
        page.close()
        assert asked == [], f"{name}: asked the network for {asked}"
        assert seen["display"] in ("math", "block math", "inline math"), f"{name}: Chromium did not take it for MathML"
        assert seen["stacked"], f"{name}: a fraction's numerator is not above its denominator"
        assert seen["formulas"] > 100 and not re.search(r"\$|\\frac|\\text", seen["text"]), f"{name}: TeX shown"
        assert name == "key" or seen["tables"] == 1, "level 1's notation table"


def test_an_inline_formula_keeps_the_text_right_after_it_on_its_line():
    page = markdown_html("of $d_k$. Head $i$'s weights, $x$ and $$y$$.")
    assert page.count('<span class="math-word">') == 2 and "</math>.</span>" in page and "</math>'s</span>" in page
    assert "</math> and" in page and '"math-word"><math display="block"' not in page, "nothing else wrapped"
