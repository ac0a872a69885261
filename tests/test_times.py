"""The teacher's guide's times (docs/teachers.md, "Time per level"): its counts are the notebooks', each
level's estimate is the sum of its parts' estimates, no part is priced below its floor, and the totals
the prose gives are the tables'."""

import re

import nbformat
import pytest

from tests.conftest import NOTEBOOKS, ROOT, filled

DOC = ROOT / "docs" / "teachers.md"
PROBLEM = re.compile(r"^#+\s+Problem (\d+\.\d+)", re.M)
MODEL_ANSWER = re.compile(r"### BEGIN SOLUTION\n.*?### END SOLUTION\n?", re.S)
NOT_READ = {"rubric", "worked-solution"}  # folded for the grader or for after the attempt
LEVELS = {"1 Recognition": "level1_recognition", "2 Application": "level2_application",
          "3 Analysis": "level3_analysis", "4 Synthesis": "level4_synthesis", "5 Mastery": "level5_mastery",
          "self-test": "self_test", "Beyond the sheet (optional)": "beyond_the_sheet"}
CORE_ROW = "the core (the five levels and the self-test)"
OPENINGS = {"1 opening": "level1_recognition", "2 opening": "level2_application", "3 opening": "level3_analysis",
            "4 opening": "level4_synthesis", "5 opening": "level5_mastery", "Beyond opening": "beyond_the_sheet"}
READING, CODE, WRITTEN, PREDICTION = 120, 4, 10, 3  # words a minute; minutes each (the floor the guide states)


def counts(cells):
    """(words read, code answers, of them functions, written answers, predictions) of ``cells``."""
    words = code = functions = written = predictions = 0
    for cell in cells:
        meta, tags = cell.metadata.get("nbgrader", {}), set(cell.metadata.get("tags", []))
        if cell.cell_type == "markdown" and not tags & NOT_READ:
            words += len(MODEL_ANSWER.sub("", cell.source).split())
        if meta.get("solution") and cell.cell_type == "code":
            code += 1
            functions += bool(re.search(r"^def ", cell.source, re.M))
        written += bool(meta.get("solution") and cell.cell_type == "markdown")
        predictions += "prediction" in tags
    return words, code, functions, written, predictions


def parts(nb):
    """{"opening" or a problem's number: its cells}: a problem runs from its heading to the next one."""
    found, current = {"opening": []}, "opening"
    for cell in nb.cells:
        match = PROBLEM.search(cell.source) if cell.cell_type == "markdown" else None
        if match:
            current = match[1]
            found[current] = []
        found[current].append(cell)
    return found


def minutes(text):
    """'7 h 2 min' or '95 min' in minutes."""
    match = re.fullmatch(r"(?:(\d+) h)? ?(?:(\d+) min)?", text.strip())
    assert match and any(match.groups()), text
    return int(match[1] or 0) * 60 + int(match[2] or 0)


def number(text):
    return int(text.replace(",", ""))


def table(header, text=None):
    """{first cell: (its line in the guide, the row's cells)} of the guide's table whose header row starts
    with ``| header |``."""
    lines = (DOC.read_text() if text is None else text).splitlines()
    start = next(k for k, line in enumerate(lines) if line.startswith(f"| {header} |"))
    rows = {}
    for k in range(start + 2, len(lines)):
        if not lines[k].startswith("|"):
            break
        cells = [cell.strip() for cell in lines[k].strip("|").split("|")]
        rows[cells[0]] = (k + 1, cells)
    return rows


def level_rows():
    return {name: row for name, (_, row) in table("level").items()}


def part_rows():
    return {name: row for name, (_, row) in table("part").items()}


def where(row_line, name):
    return f"docs/teachers.md line {row_line}: the {name} row"


def counted(values):
    return " | ".join(f"{v:,}" for v in values)


def problem_rows(text, notebooks):
    """What to change in the table "part" so that each of ``notebooks``' parts ({stem: {part: cells}}) has a
    row counting its cells, and no row is left of a part that is gone."""
    rows, said, listed = table("part", text), [], set()
    for stem, found in notebooks.items():
        opening = next(k for k, v in OPENINGS.items() if v == stem)
        for part, cells in found.items():
            name = opening if part == "opening" else part
            listed.add(name)
            if name not in rows:
                after = max(line for line, _ in rows.values())
                said.append(f"docs/teachers.md line {after}: no row for {name} ({stem}) in the table \"part\": add "
                            f"\"| {name} | {counted(counts(cells))} | <estimate> | <why> |\" in its place")
            elif [number(x) for x in rows[name][1][1:6]] != list(counts(cells)):
                said.append(f"{where(rows[name][0], name)} counts {' | '.join(rows[name][1][1:6])}; {stem} has "
                            f"{counted(counts(cells))}: change them to that")
    said += [f"{where(line, name)} counts a part no notebook has: remove it (and its minutes from its level's)"
             for name, (line, _) in rows.items() if name not in listed]
    return said


def notebook(stem):
    """The notebook as students read it: its numbers (``{{d_k}}``) filled in."""
    return filled(NOTEBOOKS / f"{stem}.ipynb")


def test_each_level_row_counts_what_its_notebook_holds():
    rows = table("level")
    assert set(LEVELS) | {CORE_ROW} == set(rows)
    for name, stem in LEVELS.items():
        nb = notebook(stem)
        words, code, _, written, predictions = counts(nb.cells)
        has = [len(nb.cells), words, code, written, predictions]
        line, row = rows[name]
        assert [number(x) for x in row[1:6]] == has, (
            f"{where(line, name)} counts {' | '.join(row[1:6])}; {stem} has {counted(has)}: change them to that")


def test_the_core_row_adds_the_core_up():
    rows = level_rows()
    core = [row for name, row in rows.items() if name not in (CORE_ROW, "Beyond the sheet (optional)")]
    for column in range(1, 6):
        assert number(rows[CORE_ROW][column]) == sum(number(row[column]) for row in core), rows[CORE_ROW][column]
    assert minutes(rows[CORE_ROW][6]) == sum(minutes(row[6]) for row in core)
    assert rows[CORE_ROW][7] and rows["Beyond the sheet (optional)"][7], "the expert's range stands beside ours"


def every_part():
    return {stem: parts(notebook(stem)) for stem in sorted(set(LEVELS.values()) - {"self_test"})}


def test_each_problem_row_counts_what_its_problem_holds():
    said = problem_rows(DOC.read_text(), every_part())
    assert not said, "\n".join(said)


def test_a_problem_added_or_gone_is_named_with_its_line():
    """A notebook gains a problem after its last, loses its last, or a count of one changes: the line is named."""
    text, notebooks = DOC.read_text(), every_part()
    lines = text.splitlines()
    rows = table("part", text)
    stem = "beyond_the_sheet"
    last = list(notebooks[stem])[-1]
    major, minor = last.split(".")
    new = f"{major}.{int(minor) + 1}"
    said = problem_rows(text, {**notebooks, stem: {**notebooks[stem], new: notebooks[stem][last]}})
    assert said == [s for s in said if s.startswith(f"docs/teachers.md line {max(l for l, _ in rows.values())}: "
                                                    f"no row for {new} ")] and len(said) == 1, said
    gone = dict(notebooks[stem])
    del gone[last]
    said = problem_rows(text, {**notebooks, stem: gone})
    assert len(said) == 1 and said[0].startswith(f"docs/teachers.md line {rows[last][0]}: the {last} row counts a part "
                                                 "no notebook has: remove it"), said
    line = rows[last][0]
    changed = lines[: line - 1] + [lines[line - 1].replace(f"| {last} | ", f"| {last} | 1", 1)] + lines[line:]
    said = problem_rows("\n".join(changed), notebooks)
    assert len(said) == 1 and said[0].startswith(f"docs/teachers.md line {line}: the {last} row counts 1"), said


def test_each_level_s_estimate_is_the_sum_of_its_problems():
    rows, levels = part_rows(), table("level")
    for name, stem in LEVELS.items():
        if stem == "self_test":
            continue
        owned = [part for part in parts(notebook(stem)) if part != "opening"]
        opening = next(k for k, v in OPENINGS.items() if v == stem)
        total = sum(minutes(rows[part][6]) for part in [opening, *owned])
        line, row = levels[name]
        assert minutes(row[6]) == total, (f"{where(line, name)}'s estimate is {row[6]}; its parts' add up to "
                                          f"{total} min: change it to {total // 60} h {total % 60} min")


def floor(words, code, written, predictions):
    return round(words / READING + CODE * code + WRITTEN * written + PREDICTION * predictions)  # to the minute


def test_no_part_is_priced_below_its_floor_and_each_says_why():
    rows = part_rows()
    for name, row in rows.items():
        words, code, _, written, predictions = (number(x) for x in row[1:6])
        assert minutes(row[6]) >= floor(words, code, written, predictions), name
        assert len(row[7].split()) >= 3, f"{name}: the estimate's reason"
    self_test = level_rows()["self-test"]
    assert minutes(self_test[6]) >= floor(number(self_test[2]), 0, 0, 0)


def test_a_function_to_write_costs_more_than_a_value():
    """The expert's remark: a function is a task of its own (4.3, 4.4 (a), 4.6, 4.7 at 20 to 40 minutes)."""
    rows = part_rows()
    for name in ("4.3", "4.4", "4.6", "4.7"):
        words, code, _, written, predictions = (number(x) for x in rows[name][1:6])
        assert minutes(rows[name][6]) >= floor(words, code, written, predictions) + 20, name


def test_the_prose_gives_the_tables_totals():
    text = " ".join(DOC.read_text().split())
    levels = level_rows()
    core, beyond = levels[CORE_ROW][6], levels["Beyond the sheet (optional)"][6]
    said = next((k for k, line in enumerate(DOC.read_text().splitlines(), 1) if "The core adds up" in line), None)
    assert f"The core adds up to about {core} and Beyond the sheet to {beyond}." in text, (
        f"docs/teachers.md line {said}: the sentence under the tables should read \"The core adds up to about "
        f"{core} and Beyond the sheet to {beyond}.\"")


def test_the_counts_count():
    """The counter on a notebook made up here: what is read, what is answered."""
    nb = nbformat.v4.new_notebook()
    cells = [nbformat.v4.new_markdown_cell("# Title words"),
             nbformat.v4.new_markdown_cell("### Problem 9.1 — Three more"),
             nbformat.v4.new_code_cell("# a number\nx = None\n### BEGIN SOLUTION\nx = 1\n### END SOLUTION"),
             nbformat.v4.new_code_cell('def f(a):\n    """Doc."""\n    ### BEGIN SOLUTION\n    return a\n    ### END SOLUTION'),
             nbformat.v4.new_markdown_cell("**Written answer, Problem 9.1:**\n\n### BEGIN SOLUTION\nnot read\n### END SOLUTION"),
             nbformat.v4.new_markdown_cell("**Rubric 9.1** not read"),
             nbformat.v4.new_markdown_cell("**Solution 9.1** not read either"),
             nbformat.v4.new_code_cell("predict_9_1_x = None")]
    for cell in cells[2:5]:
        cell.metadata["nbgrader"] = {"solution": True}
    cells[5].metadata["tags"], cells[6].metadata["tags"] = ["rubric"], ["worked-solution"]
    cells[7].metadata["tags"] = ["prediction"]
    nb.cells = cells
    assert counts(nb.cells) == (3 + 6 + 4, 2, 1, 1, 1)  # "#" and "—" are words here as in the notebooks
    assert {k: len(v) for k, v in parts(nb).items()} == {"opening": 1, "9.1": 7}
    assert minutes("7 h 2 min") == 422 and minutes("95 min") == 95 and minutes("3 h") == 180
    with pytest.raises(AssertionError):
        minutes("about 7 hours")
