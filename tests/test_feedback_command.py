"""``python -m autograders feedback``: after grading by hand in the gradebook (as the
formgrader does it), the HTML feedback is written again with the manual score and
comment, still without the hidden tests' source; ``--student`` touches only that
student's files; ``--db`` reads another gradebook; a student whose autograded
notebook is missing or broken fails alone, with the reason.

One small class (2 students x level 1) is released and graded once for the module;
each test works on a copy of it.
"""

import html
import os
import re
import shutil
from pathlib import Path

import pytest
from nbgrader.api import Gradebook

from autograders.editions import editions
from autograders.grading import checker, gradebooks, grading
from autograders.__main__ import main
from autograders.grading.feedback_html import hidden_lines
from benchmarks.bench_grading import make_class

ROOT = Path(__file__).resolve().parent.parent
LEVEL = "level2_application"
WRITTEN = "q2_2_explain"  # the written answer (2 points), graded by hand
COMMENT = "Right: each head sees its own d_k-wide slice, then W_O mixes them."


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("feedback")
    (tmp / "notebooks").mkdir()
    shutil.copyfile(ROOT / "notebooks" / f"{LEVEL}.ipynb", tmp / "notebooks" / f"{LEVEL}.ipynb")
    editions.build_release(tmp / "course", tmp / "notebooks", say=lambda message: None)
    make_class(tmp / "course", ["ada", "bob"], [LEVEL], seed=3, blank_every=0)
    summary = grading.grade(tmp / "course", backend="serial", recheck=False)  # two submissions: no pool to start
    assert sorted(summary.graded) == [("ada", LEVEL), ("bob", LEVEL)], summary.failed
    return tmp / "course"


@pytest.fixture
def course(graded, tmp_path):
    return Path(shutil.copytree(graded, tmp_path / "course"))


def grade_by_hand(course, student, score, comment, db_url=None):
    """What the formgrader's API does on a manual score and a comment; return the
    notebook's (score, max_score) after it."""
    own_url, course_id = gradebooks.course_db_url(course)
    with Gradebook(db_url or own_url, course_id) as gb:
        grade = gb.find_grade(WRITTEN, LEVEL, LEVEL, student)
        grade.manual_score, grade.needs_manual_grade = score, False
        gb.find_comment(WRITTEN, LEVEL, LEVEL, student).manual_comment = comment
        gb.db.commit()
        notebook = gb.find_submission_notebook(LEVEL, LEVEL, student)
        return notebook.score, notebook.max_score


def hidden_sources():
    nb = editions.read(ROOT / "notebooks" / f"{LEVEL}.ipynb")
    return {line.strip() for cell in nb.cells for line in hidden_lines(cell.source) if len(line.strip()) > 3}


def feedback(course, student):
    raw = (course / "feedback" / student / LEVEL / f"{LEVEL}.html").read_text(encoding="utf-8")
    return raw, html.unescape(re.sub(r"<[^>]+>", "", raw))


def run(capsys, *args):
    assert main(["feedback", *args, "--quiet"]) == 0
    return capsys.readouterr().out


def test_manual_score_and_comment_shown_hidden_tests_not(course, capsys):
    assert COMMENT not in feedback(course, "ada")[1]
    score, max_score = grade_by_hand(course, "ada", 1.5, COMMENT)

    out = run(capsys, "--course", str(course))
    assert "feedback written 2, failed 0" in out

    raw, text = feedback(course, "ada")
    assert f"{LEVEL} (Score: {round(score, 2)} / {round(max_score, 2)})" in text, "the total with the manual score"
    assert "Written response (Score: 1.5 / 2.0)" in text
    assert COMMENT in text
    secrets = hidden_sources()
    assert any("hidden=True" in s for s in secrets)
    for student in ("ada", "bob"):
        raw, text = feedback(course, student)
        assert not [s for s in secrets if s in raw or s in text], f"{student}'s feedback shows hidden test source"
        assert "hidden tests: not shown" in text


def test_the_feedback_page_shows_its_mathematics_with_no_script_and_nothing_from_elsewhere(graded):
    """Both students' pages: no MathJax from a CDN, no script at all; the problems' formulas are MathML
    (level 2's display formula among them), no TeX left as text outside code."""
    from tests.test_math_html import assert_offline, outside_annotations

    for student in ("ada", "bob"):
        raw, text = feedback(graded, student)
        assert_offline(raw)
        assert raw.count("<math") > 100 and '<math display="block">' in raw
        assert "<annotation encoding=\"application/x-tex\">\\text{score} = \\frac{q k^{\\top}}{\\sqrt{d_k}}" in raw
        body = re.sub(r"(?s)<pre\b.*?</pre>|<code>.*?</code>", "", outside_annotations(raw.split("<body", 1)[1]))
        assert "$" not in body, "no formula left as TeX"


def test_student_only_rewrites_that_students_files(course, capsys):
    grade_by_hand(course, "ada", 2.0, COMMENT)
    grade_by_hand(course, "bob", 0.5, COMMENT)
    files = {s: course / "feedback" / s / LEVEL / f"{LEVEL}.html" for s in ("ada", "bob")}
    before = {s: p.stat().st_mtime_ns for s, p in files.items()}

    out = run(capsys, "--course", str(course), "--student", "ada", "--assignment", LEVEL)
    assert "feedback written 1, failed 0" in out
    assert files["ada"].stat().st_mtime_ns != before["ada"] and COMMENT in feedback(course, "ada")[1]
    assert files["bob"].stat().st_mtime_ns == before["bob"] and COMMENT not in feedback(course, "bob")[1]


def test_db_reads_the_given_gradebook(course, capsys):
    other = course.parent / "elsewhere.db"
    shutil.copyfile(course / "gradebook.db", other)
    grade_by_hand(course, "bob", 1.0, COMMENT, db_url=f"sqlite:///{other}")

    out = run(capsys, "--course", str(course), "--student", "bob", "--db", f"sqlite:///{other}")
    assert "feedback written 1, failed 0" in out
    assert COMMENT in feedback(course, "bob")[1] and "Written response (Score: 1.0 / 2.0)" in feedback(course, "bob")[1]


def test_missing_or_broken_autograded_notebook_fails_alone(course, capsys):
    notebook = course / "autograded/bob" / LEVEL / f"{LEVEL}.ipynb"
    notebook.unlink()
    grade_by_hand(course, "ada", 1.0, COMMENT)

    out = run(capsys, "--course", str(course))
    assert f"FAILED bob/{LEVEL}: no autograded notebook autograded/bob/{LEVEL}/{LEVEL}.ipynb" in out
    assert "feedback written 1, failed 1" in out
    assert COMMENT in feedback(course, "ada")[1]
    assert not (course / "feedback/bob" / LEVEL).exists(), "bob's stale feedback is removed"

    notebook.write_text("{not json")
    out = run(capsys, "--course", str(course), "--student", "bob")
    assert f"FAILED bob/{LEVEL}: NotJSONError: Notebook does not appear to be JSON" in out
    assert "feedback written 0, failed 1" in out


# --- no active content from a submission ----------------------------------------------

PWNED = "pwned.invalid"  # every payload below sets window.pwned or asks this host for something
HOSTILE_CODE = r'''from IPython.display import HTML, SVG, Javascript, Markdown, display
display(HTML('<script>window.pwned = "html script"</script><img src="x" onerror="window.pwned = 1">'
             '<iframe src="javascript:parent.pwned = 2"></iframe><iframe srcdoc="<script>parent.pwned = 3</script>"></iframe>'
             '<meta http-equiv="refresh" content="0; url=http://pwned.invalid/meta">'
             '<a id="jslink" href="javascript:window.pwned = 4">click</a><b>bold survives</b>'
             '<img src="http://pwned.invalid/beacon" onload="window.pwned = 5">'))
display(Javascript('window.pwned = "javascript output"'))
display(SVG('<svg xmlns="http://www.w3.org/2000/svg" onload="window.pwned = 6"><script>window.pwned = 7</script></svg>'))
display(Markdown('<img src="y" onerror="window.pwned = 8"> **markdown survives**'))
print('<script>window.pwned = "printed"</script>')
'''
HOSTILE_MARKDOWN = ('Written: <img src="z" onerror="window.pwned = 9"><script>window.pwned = 10</script> '
                    "[a link](javascript:window.pwned=11) <details open ontoggle=\"window.pwned = 12\">x</details> "
                    "$\\sqrt{d_k}$ and *markdown kept*")
EVIL_SVG = '<svg xmlns="http://www.w3.org/2000/svg" onload="window.pwned = 13"><script>window.pwned = 14</script></svg>'


def hostile_notebook(nb):
    """``nb`` with a cell displaying every kind of active output, a markdown cell with raw
    HTML and a javascript: link, an SVG attachment, a raw HTML cell and widget state."""
    import base64

    import nbformat

    nb = nbformat.from_dict(nb)
    nb.cells.append(nbformat.v4.new_code_cell(HOSTILE_CODE))
    nb.cells.append(nbformat.v4.new_markdown_cell(HOSTILE_MARKDOWN))
    nb.cells.append(nbformat.v4.new_markdown_cell(
        "![an attachment](attachment:evil.svg)",
        attachments={"evil.svg": {"image/svg+xml": base64.b64encode(EVIL_SVG.encode()).decode()}}))
    nb.cells.append(nbformat.v4.new_raw_cell('<script>window.pwned = 15</script><p onclick="x">raw</p>',
                                             metadata={"raw_mimetype": "text/html"}))
    nb.metadata["widgets"] = {"application/vnd.jupyter.widget-state+json": {
        "version_major": 2, "version_minor": 0, "state": {"m": {"model_name": "HTMLModel", "state": {
            "value": '<img src=x onerror="window.pwned = 16">'}}}}}
    for cell in nb.cells:  # forged grader's records of a lowered score, which the class report would trust
        if cell.cell_type == "code":
            cell.metadata[checker.RECHECKED] = {"score": 0.0, "max_score": 1.0, "confirmed": True,
                                                "misconception": "multiplied-by-h"}
    return nb


@pytest.fixture(scope="module")
def hostile(graded, tmp_path_factory):
    """The graded class's course with mallory's hostile submission graded too (her answers
    are the source's: full marks)."""
    import nbformat

    course = Path(shutil.copytree(graded, tmp_path_factory.mktemp("hostile") / "course"))
    target = course / "submitted/mallory" / LEVEL
    target.mkdir(parents=True)
    nbformat.write(hostile_notebook(editions.read(ROOT / "notebooks" / f"{LEVEL}.ipynb")), str(target / f"{LEVEL}.ipynb"))
    summary = grading.grade(course, students=["mallory"], backend="serial", recheck=False)
    assert summary.graded == [("mallory", LEVEL)], summary.failed
    return course


def test_forged_recheck_records_are_taken_off_even_without_the_recheck(hostile):
    """mallory's code cells came with forged records of a lowered score; graded with --no-recheck, no
    record is left for the class report to count."""
    nb = editions.read(hostile / "autograded/mallory" / LEVEL / f"{LEVEL}.ipynb")
    assert [c for c in nb.cells if c.cell_type == "code"]
    assert not [c for c in nb.cells if checker.RECHECKED in c.metadata]


def test_the_autograded_notebook_keeps_no_active_content(hostile):
    """The formgrader renders the autograded notebook in the instructor's Jupyter: the
    grading job leaves no active output, markup or widget state in it."""
    from autograders.grading.feedback_html import _markdown_html, has_active_content

    nb = editions.read(hostile / "autograded/mallory" / LEVEL / f"{LEVEL}.ipynb")
    assert "widgets" not in nb.metadata
    mimes = {m for c in nb.cells for o in c.get("outputs", []) for m in o.get("data", {})}
    assert not mimes & {"application/javascript", "image/svg+xml", "text/markdown"}, mimes
    html_outputs = [o.data["text/html"] for c in nb.cells for o in c.get("outputs", []) if "text/html" in o.get("data", {})]
    assert any("bold survives" in h for h in html_outputs) and any("markdown survives" in h for h in html_outputs)
    assert not [h for h in html_outputs if has_active_content(h)]
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            assert not has_active_content(_markdown_html(cell.source, cell.get("attachments"))), cell.source
            assert all(m.startswith("image/") for b in cell.get("attachments", {}).values() for m in b)
        if cell.cell_type == "raw":
            assert not has_active_content(cell.source) and "raw" in cell.source
    assert any("markdown kept" in c.source for c in nb.cells)


def test_an_honest_feedback_page_loses_nothing_to_the_sanitiser(course, capsys, monkeypatch):
    """ada's feedback with and without the sanitiser: the same text, links and pictures."""
    from autograders.grading import feedback_html

    run(capsys, "--course", str(course), "--student", "ada")
    raw_sanitised, text_sanitised = feedback(course, "ada")
    monkeypatch.setattr(feedback_html, "sanitise_page", lambda page: page)
    monkeypatch.setattr(feedback_html, "neutralise", lambda nb: 0)
    run(capsys, "--course", str(course), "--student", "ada")
    raw, text = feedback(course, "ada")
    assert text_sanitised.split() == text.split(), "the same words (the sanitiser may drop blank lines)"
    for tag in ("<div", "<img", "<a ", "<pre", "<table", "<script", "<math", "<mfrac", "<annotation"):
        assert raw_sanitised.count(tag) == raw.count(tag), tag
    nb = editions.read(course / "autograded/ada" / LEVEL / f"{LEVEL}.ipynb")
    monkeypatch.undo()
    assert feedback_html.neutralise(nb) == 0, "an honest notebook is left exactly as it is"


def _chromium():
    from tests.browser import servers

    missing = servers.browser_missing()
    if missing:
        if os.environ.get("MHA_REQUIRE_BROWSER"):
            pytest.fail(f"{missing} (MHA_REQUIRE_BROWSER is set)", pytrace=False)
        pytest.skip(missing)
    return servers


def _open_in_chromium(servers, pages):
    """{page: (window.pwned, document.title, [requests to PWNED], [dialogs], body text)} of each file.

    In a thread of its own: the browser tests' session-wide Playwright keeps an asyncio loop
    running in this one, and Playwright's sync API refuses to start inside a running loop."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(_open_in_chromium_here, servers, pages).result()


def _open_in_chromium_here(servers, pages):
    from playwright.sync_api import sync_playwright

    seen = {}
    with sync_playwright() as playwright:
        browser = servers.launch(playwright)
        try:
            for path in pages:
                page = browser.new_page()
                requests, dialogs = [], []
                page.on("request", lambda r: requests.append(r.url) if PWNED in r.url else None)
                page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
                page.goto(path.as_uri(), wait_until="load")
                page.wait_for_timeout(1500)
                page.click("#jslink", timeout=2000) if page.query_selector("#jslink") else None
                page.wait_for_timeout(200)
                seen[path] = (page.evaluate("window.pwned"), page.title(), requests, dialogs,
                              page.evaluate("document.body ? document.body.innerText : ''"))
                page.close()
        finally:
            browser.close()
    return seen


def test_no_script_of_a_submission_runs_in_chromium(hostile, tmp_path):
    """mallory's feedback page, and her autograded notebook rendered as the formgrader
    renders it (nbconvert with nbgrader's ``formgrade`` template), opened in Chromium: no
    payload runs, asks the network or redirects; the honest markup is still shown. Her
    submitted notebook rendered the same way (the control) does run a payload, so the
    check can fail."""
    from nbconvert.exporters import HTMLExporter
    from nbgrader.server_extensions.formgrader import handlers

    servers = _chromium()
    feedback_page = hostile / "feedback/mallory" / LEVEL / f"{LEVEL}.html"
    pages = {"feedback": feedback_page}
    for name, folder in (("autograded", "autograded"), ("control", "submitted")):
        exporter = HTMLExporter(template_name="formgrade", extra_template_basedirs=[handlers.template_path])
        resources = {"assignment_id": LEVEL, "notebook_id": LEVEL, "submission_id": "1", "index": 0, "total": 1,
                     "base_url": "", "student": "mallory", "last_name": None, "first_name": None, "notebook_path": "/"}
        page, _ = exporter.from_filename(str(hostile / folder / "mallory" / LEVEL / f"{LEVEL}.ipynb"), resources=resources)
        pages[name] = tmp_path / f"{name}.html"
        pages[name].write_text(page, encoding="utf-8")
    seen = _open_in_chromium(servers, pages.values())

    pwned, title, requests, dialogs, text = seen[pages["control"]]
    assert pwned is not None, "the control: the submitted notebook rendered as it is runs a payload"
    for name in ("feedback", "autograded"):
        pwned, title, requests, dialogs, text = seen[pages[name]]
        assert (pwned, requests, dialogs) == (None, [], []), f"{name}: a submission's script ran"
        assert title and "pwned" not in title, f"{name}: the title changed to {title!r}"
        assert "bold survives" in text and "markdown survives" in text and "markdown kept" in text, name
    from html.parser import HTMLParser

    class Tags(HTMLParser):
        found = []

        def handle_starttag(self, tag, attrs):
            self.found.append((tag, attrs))

    parser = Tags()
    parser.feed(feedback_page.read_text(encoding="utf-8").split("</head>", 1)[1])
    assert not [t for t, _ in parser.found if t in ("script", "iframe", "meta", "svg", "style", "object", "embed", "form")]
    assert not [(t, n, v) for t, attrs in parser.found for n, v in attrs
                if n.startswith("on") or "javascript:" in (v or "").lower() or PWNED in (v or "")]
    assert "Score:" in seen[pages["feedback"]][4]


def test_the_report_escapes_student_ids_and_reasons(tmp_path):
    from autograders import report
    from autograders.report import write

    nasty = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">'
    results = report.Results(cells={LEVEL: ["q1_1_d_k_test"]})
    results.rows.append({"student": nasty, "assignment": LEVEL, "score": None, "max_score": None, "late_penalty": None,
                         "needs_manual_grade": False, "status": "refused", "reason": nasty, "cells": {}})
    results.failed.append((nasty, LEVEL, f"{nasty}.zip refused: {nasty}"))
    page = report.write_report(results, tmp_path / "report.html").read_text()
    assert "<script" not in page and "<img src=x" not in page
    assert html.unescape(page).count(nasty) == 3, "the id, the assignment's failed row and the reason, escaped"
    import csv

    rows = list(csv.DictReader(report.write_csv(results, tmp_path / "grades.csv").open()))
    assert (rows[0]["student"], rows[0]["status"], rows[0]["reason"]) == (nasty, "refused", nasty), \
        "the CSV is data: kept as it is, not HTML-escaped"
    assert (write._text("=1+1"), write._text("@SUM(A1)"), write._text("ada")) == ("'=1+1", "'@SUM(A1)", "ada")


@pytest.mark.parametrize("markdown", [
    "[x](javascript:window.pwned=1)", "[x][r]\n\n[r]: javascript:window.pwned=1", "<javascript:window.pwned=1>",
    "[x](JaVaScRiPt&#58;window.pwned=1)", '<a href="jav&#x09;ascript:window.pwned=1">x</a>',
    "<svg onload=\"window.pwned=1\"></svg>", '<meta http-equiv="refresh" content="0;url=javascript:window.pwned=1">',
])
def test_markdown_that_renders_active_markup_is_replaced_by_its_sanitised_rendering(markdown):
    import nbformat

    from autograders.grading.feedback_html import _markdown_html, has_active_content, neutralise

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(markdown),
                                         nbformat.v4.new_markdown_cell("An honest *answer*: $n_k \\neq n_q$, [a link](#top).")])
    honest = nb.cells[1].source
    assert neutralise(nb) == 1
    assert not has_active_content(_markdown_html(nb.cells[0].source))
    assert "pwned" not in _markdown_html(nb.cells[0].source).split(">", 1)[0] and nb.cells[1].source == honest


def test_the_feedback_page_gets_its_wrap_style_before_its_head_ends_and_nothing_else():
    from autograders.grading import feedback_html

    page = "<html><head><title>t</title></head><body><p>a &lt;b&gt;</p></body></html>"
    styled = feedback_html.styled_page(page)
    head, body = styled.split("</head>")
    assert "white-space: pre-wrap" in head and "<title>t</title>" in head
    assert body.rstrip("\n") == "<body><p>a &lt;b&gt;</p></body></html>", "nbconvert's page is kept as it is, not escaped again"
    assert feedback_html.styled_page("<p>no head</p>") == "<p>no head</p>"


def test_images_without_alt_text_get_one_and_the_others_keep_theirs():
    from autograders.grading import feedback_html

    body = '<p><img src="a.png"><img alt="weights 0.26, 0.71" src="b.png"></p>'
    seen = feedback_html._alt_text(body)
    assert seen.count(f'alt="{feedback_html.ALT_TEXT}"') == 1 and 'alt="weights 0.26, 0.71"' in seen
    assert feedback_html._alt_text("<p>no image</p>") == "<p>no image</p>"


def test_the_report_page_is_a_template_with_autoescape(tmp_path):
    from autograders import report
    from autograders.report import write

    results = report.Results(cells={LEVEL: ["q1_1_d_k_test"]})
    page = report.write_report(results, tmp_path / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and page.count("<img alt=") == 3 and "<p>None.</p>" in page
    assert write._template().environment.autoescape is True
