"""The answer key (`mha-workbook answer-key`): every problem with its answers, model answers,
worked solutions and rubrics; a student's own numbers in a course with variants; in no edition a
student receives."""

import re
from pathlib import Path

import pytest

from autograders.__main__ import main
from autograders.editions import answer_key, editions
from autograders.variants import choose, read_key
from autograders.variants.levels import POOLS
from tests.conftest import NOTEBOOKS, filled


def model_answers():
    """{grade_id: text} of every written answer's model answer in the source notebooks, their numbers filled in."""
    found = {}
    for path in editions.assignments(NOTEBOOKS):
        for cell in filled(path).cells:
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type == "markdown" and meta.get("solution"):
                found[meta["grade_id"]] = answer_key.SOLUTION.search(cell.source)[1].strip()
    return found


@pytest.fixture(scope="module")
def key():
    return answer_key.build(NOTEBOOKS)


def test_the_key_holds_every_problem_with_its_answers_solution_and_rubric(key):
    headings = [h for path in editions.assignments(NOTEBOOKS) for h, _ in answer_key.problems(editions.read(path))]
    assert len(headings) >= 13 and key.count('<section class="problem">') == len(headings)
    for heading in headings:
        words = heading.split("$")[0]  # a heading's formula is MathML (below)
        assert f"<h3>{words.replace(chr(39), '&#x27;')}" in key or f"<h3>{words}" in key, heading
    assert "<h3>Problem 5.3 — Cross-attention: <math" in key
    for path in editions.assignments(NOTEBOOKS):
        for cell in editions.read(path).cells:
            meta, tags = cell.metadata.get("nbgrader", {}), cell.metadata.get("tags", [])
            if cell.cell_type == "code" and meta.get("solution"):
                assert f"Answer {meta['grade_id']}<" in key
            if "rubric" in tags:
                assert cell.source.split("\n", 1)[0].strip("*") in key  # "Rubric 2.2 (q2_2_explain, 2 points)"
    assert key.count("Worked solution") >= len(headings)
    assert key.count("Model answer (") == len(model_answers())
    assert "BEGIN SOLUTION" not in key and "HIDDEN TESTS" not in key  # the regions' contents only, no hidden test


def test_the_key_shows_its_mathematics_with_no_script_and_nothing_from_elsewhere(key):
    """A printed or offline key: no MathJax, no script; every formula MathML, none left as TeX."""
    from tests.test_math_html import assert_offline, outside_annotations

    assert_offline(key)
    assert key.count("<math") > 400
    assert "$" not in re.sub(r"(?s)<pre\b.*?</pre>|<code>.*?</code>", "", outside_annotations(key))


def test_the_key_gives_the_sheet_s_right_values(key):
    # 2.2: its declaration's sheet numbers and right value there; 1.1: 768 / 12; 4.1: 4 * 512**2 (by hand)
    pool = POOLS["level2_application"]["q2_2_scaled_score"]
    shown = ", ".join(f"{k} = {answer_key._value(v)}" for k, v in pool.sheet.items())
    right = answer_key._value(pool.answer(pool.sheet))
    assert f'Right value for the sheet&#x27;s numbers ({shown}): <span class="value">{right}<' in key
    assert ">64.0</span>" in key or ">64</span>" in key
    assert ">1048576</span>" in key


def test_the_key_of_one_student_has_their_own_numbers(tmp_path, monkeypatch, kernels):
    import os
    import sys

    from nbgrader.api import Gradebook

    monkeypatch.setenv("PATH", os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]]))  # alembic

    course = tmp_path / "course"
    course.mkdir()
    editions.write_config(course)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}", editions.COURSE_ID) as gb:
        for student in ("bob", "carol"):
            gb.add_student(student)
    out = tmp_path / "sheet.html"
    assert main(["answer-key", "--course", str(course), "--student", "bob", "--out", str(out)]) == 0
    assert "Answer key for bob (no variants in this course" in out.read_text()
    assert "Right value for the sheet&#x27;s numbers" in out.read_text()
    assert main(["variants", "init", "--course", str(course)]) == 0
    key = read_key(course / "variants.key")
    pages = {}
    for student in ("bob", "carol"):
        pages[student] = tmp_path / f"{student}.html"
        assert main(["answer-key", "--course", str(course), "--student", student, "--out", str(pages[student])]) == 0
    text = pages["bob"].read_text()
    assert "Answer key: bob&#x27;s own numbers" in text and "Right value for the sheet" not in text
    pool = POOLS["level2_application"]["q2_2_scaled_score"]
    entry = choose(pool, key, editions.COURSE_ID, "level2_application", "bob")
    assert entry != pool.sheet
    right = answer_key._value(pool.answer(entry))
    assert f"Right value for bob&#x27;s numbers ({', '.join(f'{k} = {v!r}' for k, v in entry.items())})" in text
    assert f'<span class="value">{right}</span>' in text
    assert pages["bob"].read_text() != pages["carol"].read_text()
    assert main(["answer-key", "--course", str(course), "--student", "nobody", "--out", str(tmp_path / "x.html")]) == 2


def test_the_key_is_not_written_where_students_read(tmp_path, capsys):
    workbook = tmp_path / "workbook"
    workbook.mkdir()
    (workbook / editions.MANIFEST).write_text('{"files": {}}')
    assert main(["answer-key", "--out", str(workbook / "key.html")]) == 2
    assert "practice edition" in capsys.readouterr().err and not (workbook / "key.html").exists()
    (tmp_path / "course" / "release").mkdir(parents=True)
    (tmp_path / "course" / "nbgrader_config.py").write_text("")
    assert answer_key.refuse_student_folder(tmp_path / "course" / "release" / "level1" / "key.html")


def test_no_edition_a_student_receives_holds_the_key(practice_dir, course):
    """The practice edition (make lab) and the release (what nbgrader hands out): neither holds the key's
    marker nor any written answer's model answer (the one thing of the key the practice edition does not fold in)."""
    answers = model_answers()
    assert answers
    editions_ = {"practice edition": Path(practice_dir), "release": Path(course.root) / "release"}
    for name, folder in editions_.items():
        files = [p for p in folder.rglob("*") if p.is_file()]
        assert any(p.suffix == ".ipynb" for p in files), f"no notebook in the {name}"
        for path in files:
            text = path.read_text(errors="replace")
            assert answer_key.MARKER not in text and "Answer key" not in text, f"{path}: the answer key"
            for gid, answer in answers.items():
                first = answer.split("\n")[0]
                assert first not in text, f"{name} {path.name}: {gid}'s model answer"


def test_the_key_refuses_a_folder_without_source_notebooks(tmp_path, capsys):
    """Installed without the repository (no notebooks/), the key was an empty page and the command said it
    was written: now it says where the notebooks are expected, and writes nothing."""
    out = tmp_path / "key.html"
    assert main(["answer-key", "--source", str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no source notebook there" in err and "--source" in err and not out.exists()


def test_the_key_lists_the_levels_first_and_beyond_the_sheet_after_them(key):
    titles = re.findall(r"<h2[^>]*>.*?<small>\((\w+)\)</small></h2>", key)
    stems = [path.stem for path in editions.assignments(NOTEBOOKS)]
    levels = sorted(stem for stem in stems if stem.startswith("level"))
    assert titles == levels + sorted(set(stems) - set(levels)), titles
    assert titles[-1] == "beyond_the_sheet"


def test_a_function_answer_is_shown_whole_and_a_value_answer_without_its_placeholder(key):
    import html

    shown = dict(re.findall(r'<p class="label">Answer (\w+)</p>\s*<pre>(.*?)</pre>', key, re.S))
    functions = values = 0
    for path in editions.assignments(NOTEBOOKS):
        for cell in filled(path).cells:  # the key shows the sheet's numbers where the source names them
            meta = cell.metadata.get("nbgrader", {})
            if cell.cell_type != "code" or not meta.get("solution"):
                continue
            text = html.unescape(shown[meta["grade_id"]])
            assert "### BEGIN SOLUTION" not in text and "### END SOLUTION" not in text
            code = [line for line in cell.source.splitlines() if line.strip() and not line.lstrip().startswith("#")]
            body = answer_key.SOLUTION.search(cell.source)[1]
            if code[0].startswith("def "):
                functions += 1
                assert code[0] in text.splitlines(), meta["grade_id"]  # the def line, signature and all
                assert text.splitlines()[0].startswith("def ") and body.strip() in text
                assert text.index(code[0]) < text.index(body.strip().splitlines()[0])
            else:
                values += 1
                assert text == body.strip() and code[0] not in text.splitlines(), meta["grade_id"]  # no placeholder
    assert functions >= 10 and values >= 20
    assert "<pre>def multi_head_attention(X, W_Q, W_K, W_V, W_O, h, causal=False):" in key


def test_the_key_shows_each_rubric_with_its_graded_examples_under_it(key):
    rubrics = [m.start() for m in re.finditer(r'<p class="label">Rubric</p>', key)]
    assert len(rubrics) >= 6
    for start in rubrics:
        section = key[start:key.index("</section>", start)]
        rubric, _, solution = section.partition('<p class="label">Worked solution</p>')
        assert "Graded examples (so that every grader gives the same points)" in rubric
        assert "Graded examples" not in solution
