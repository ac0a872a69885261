"""The answer key: one printable HTML page, for teachers only, built from the source notebooks.

``mha-workbook answer-key --out answer-key.html`` writes, level by level (Beyond the sheet last), every
problem's statement, its answers as the source notebook solves them (a value's code between the solution
markers, a function whole: its ``def`` line, docstring and body), the right
value of each answer with numbers (the sheet's, or one student's own with ``--course C --student S``
in a course with variants: the same pools and the same course key that grade them), the model
answer of each written answer, the worked solution and the rubric with its usual partial answers.
The page runs no script and loads nothing (its mathematics is MathML: :mod:`autograders.common.math_html`),
so it reads and prints the same offline. Like every edition, it shows the notebooks with their numbers filled in
from the declarations (``{{d_k}}``: :mod:`.placeholders`), the sheet's.

No edition a student receives holds it: the practice edition and the release are built from the
same notebooks by other code, and the key refuses to be written into either
(``tests/test_answer_key.py`` builds both and checks that neither holds the key or its model
answers).
"""

import html
import json
import re
from pathlib import Path

from ..common.math_html import STYLE as MATH_STYLE, markdown_html
from ..common.rubric_cells import graded_examples, without_graded_examples
from .editions import MANIFEST, SOURCE, assignments, read
from .placeholders import fill
from .preprocessors import RUBRIC_TAG, WORKED_SOLUTION_TAG, code_solution

MARKER = "mha-workbook answer key: for teachers only"  # in the page's <meta>; never in a student's file
SOLUTION = re.compile(r"^[ \t]*### BEGIN SOLUTION[ \t]*\n(.*?)^[ \t]*### END SOLUTION[ \t]*$", re.M | re.S)
HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*$\n?", re.M | re.S)

STYLE = """
body { font: 11pt/1.45 Georgia, serif; max-width: 46em; margin: 2em auto; color: #111; }
h1 { font-size: 20pt; } h2 { font-size: 16pt; border-bottom: 1px solid #888; margin-top: 2em; }
h3 { font-size: 13pt; } .label { font: bold 9pt sans-serif; text-transform: uppercase; color: #444; margin: 1em 0 .2em; }
pre { background: #f4f4f4; border: 1px solid #ddd; padding: .5em; white-space: pre-wrap; font-size: 9.5pt; }
.value { font-family: monospace; } .numbers { border: 1px solid #888; padding: .5em 1em; }
table { border-collapse: collapse; } td, th { border: 1px solid #aaa; padding: .2em .5em; text-align: left; }
.problem { border-top: 1px dashed #aaa; padding-top: .5em; }
@page { margin: 18mm; }
@media print {
  body { margin: 0; max-width: none; }
  h2 { break-before: page; } h2.first { break-before: auto; }
  .problem > h3, .label { break-after: avoid; } pre, table, .answer { break-inside: avoid; }
  a { color: inherit; text-decoration: none; }
}
"""


def _meta(cell):
    return cell.metadata.get("nbgrader", {})


def _md(text):
    return markdown_html(text)


def _code(text):
    return f"<pre>{html.escape(text.strip())}</pre>"


def _solution(source):
    """The solution regions of a cell's source, joined (the whole source when it has none)."""
    found = SOLUTION.findall(source)
    return "\n".join(part.rstrip() for part in found) if found else source


def ordered(paths):
    """The levels first, in their order, then the rest (Beyond the sheet, which follows them)."""
    return sorted(paths, key=lambda path: (not path.stem.startswith("level"), path.stem))


def _value(value):
    try:
        import numpy as np

        if isinstance(value, np.ndarray):
            return np.array2string(value, precision=4, separator=", ")
    except ImportError:  # pragma: no cover
        pass
    return repr(tuple(value)) if isinstance(value, list) else repr(value)


def problems(nb):
    """[(heading, [cells])] of a source notebook: each ``### Problem`` heading with the cells up to the next."""
    found = []
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("### Problem"):
            found.append((cell.source.split("\n", 1)[0][4:], [cell]))
        elif found and not (cell.cell_type == "markdown" and cell.source.startswith("**Next:**")):
            found[-1][1].append(cell)
    return found


def _answers(assignment, document):
    """{answer grade_id: (numbers, right value)} for the varied answers of ``assignment``, with the
    numbers of ``document`` (a student's, from :mod:`autograders.variants.course`) or the sheet's."""
    from ..variants.levels import POOLS

    numbers = (document or {}).get("numbers", {})
    found = {}
    for answer_id, pool in POOLS.get(assignment, {}).items():
        entry = numbers.get(pool.problem) or pool.sheet
        found[answer_id] = (entry, pool.answer(entry))
    return found


def _problem_html(heading, cells, answers, whose):
    parts = ['<section class="problem">', markdown_html(f"### {heading}", exclude_anchor_links=True),
             _md(cells[0].source.split("\n", 1)[1])]
    examples = "\n\n".join(graded_examples(cell.source) for cell in cells if WORKED_SOLUTION_TAG in cell.metadata.get("tags", []))
    for cell in cells[1:]:
        meta, tags = _meta(cell), cell.metadata.get("tags", [])
        if cell.cell_type == "code" and meta.get("solution"):
            gid = meta.get("grade_id", "")
            code = code_solution(cell.source)  # a function whole, from its def line, as the practice edition shows it
            parts += [f'<div class="answer"><p class="label">Answer {html.escape(gid)}</p>', _code(code)]
            if gid in answers:
                entry, value = answers[gid]
                shown = ", ".join(f"{k} = {_value(v)}" for k, v in entry.items())
                parts.append(f"<p>Right value for {html.escape(whose)} ({html.escape(shown)}): "
                             f'<span class="value">{html.escape(_value(value))}</span></p>')
            parts.append("</div>")
        elif cell.cell_type == "code" and meta.get("grade"):
            points = meta.get("points", 0)
            parts.append(f'<p class="label">Test {html.escape(meta.get("grade_id", ""))}: {points:g} point{"" if points == 1 else "s"}</p>')
        elif cell.cell_type == "markdown" and meta.get("solution"):
            parts += [f'<p class="label">Model answer ({meta.get("points", 0):g} points, graded by hand)</p>',
                      _md(_solution(cell.source))]
        elif RUBRIC_TAG in tags:  # the criteria, then the graded examples the worked solution ends with
            parts += ['<p class="label">Rubric</p>', _md(cell.source), _md(examples)]
        elif WORKED_SOLUTION_TAG in tags:
            parts += ['<p class="label">Worked solution</p>', _md(without_graded_examples(cell.source))]
    parts.append("</section>")
    return "\n".join(parts)


def build(source=SOURCE, documents=None, student=None):
    """The answer key's HTML. ``documents``: {assignment: a student's numbers document} (their own numbers)."""
    whose = f"{student}'s numbers" if student and documents else "the sheet's numbers"
    body, numbers = [], []
    for k, path in enumerate(ordered(assignments(source))):
        nb = fill(read(path), path)  # the sheet's numbers in the statements and solutions
        title = next((c.source.split("\n", 1)[0][2:] for c in nb.cells
                      if c.cell_type == "markdown" and c.source.startswith("# ")), path.stem)
        document = (documents or {}).get(path.stem)
        answers = _answers(path.stem, document)
        if document:
            numbers += [f"<tr><td>{html.escape(path.stem)}</td><td>{html.escape(problem)}</td>"
                        f"<td>{html.escape(json.dumps(values))}</td></tr>"
                        for problem, values in sorted(document.get("numbers", {}).items())]
        body.append(f'<h2{" class=first" if k == 0 else ""}>{html.escape(title)} <small>({path.stem})</small></h2>')
        body += [_problem_html(heading, cells, answers, whose) for heading, cells in problems(nb)]
    heading = "Answer key"
    if student:
        heading += (f": {html.escape(student)}&#x27;s own numbers" if documents else
                    f" for {html.escape(student)} (no variants in this course: everyone has the sheet&#x27;s numbers)")
    intro = ("<p>Every problem of the workbook with its answers, the value each answer must have, the model answers "
             "of the written answers, the worked solutions and the rubrics. <strong>For teachers only</strong>: do "
             "not put this page where students can read it.</p>")
    if student and documents:
        intro += (f'<div class="numbers"><p>{html.escape(student)}\'s numbers, problem by problem (the others keep the '
                  "sheet's):</p><table><tr><th>assignment</th><th>problem</th><th>numbers</th></tr>"
                  + "".join(numbers) + "</table></div>")
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
            f'<meta name="generator" content="{MARKER}">\n<title>{heading}</title>\n'
            f"<style>{STYLE}{MATH_STYLE}</style>\n</head><body>\n<h1>{heading}</h1>\n{intro}\n"
            + "\n".join(body) + "\n</body></html>\n")


def student_documents(course, student, db_url=None):
    """{assignment: document} of ``student``'s own numbers in ``course``; None in a course without variants."""
    from nbgrader.api import Gradebook

    from ..grading.gradebooks import course_config, course_db_url
    from ..variants import course as variants
    from ..variants.levels import POOLS

    url, course_id = course_db_url(course, course_config(course))
    with Gradebook(db_url or url, course_id) as gb:
        students = [s.id for s in gb.students]
    if student not in students:
        raise ValueError(f"{student!r} is not a student of {course}'s gradebook")
    if not variants.enabled(course):
        return None
    decided = variants.decide(course, course_id, [(student, a) for a in POOLS], students)
    return {assignment: document for (_, assignment), document in decided.items()}


def refuse_student_folder(out):
    """Why ``out`` is a place students read (a practice edition, a course's release or source), or None."""
    out = Path(out).resolve()
    for folder in out.parents:
        if (folder / MANIFEST).exists():
            return f"{folder} is a practice edition, which students read"
        if folder.name in ("release", "source") and (folder.parent / "nbgrader_config.py").exists():
            return f"{folder} is the course's {folder.name}/, which nbgrader hands out"
    return None


def write(out, source=SOURCE, course=None, student=None, db_url=None):
    """Write the key to ``out``; return its path."""
    problem = refuse_student_folder(out)
    if problem:
        raise ValueError(f"{out}: not written there ({problem})")
    if not list(assignments(source)):
        raise ValueError(f"{source}: no source notebook there (the key is built from the repository's notebooks/: "
                         "run it from a checkout, or give --source)")
    documents = student_documents(Path(course), student, db_url) if student else None
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(build(source, documents, student), encoding="utf-8")
    return out
