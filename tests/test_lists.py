"""The lists of problems kept by hand, checked against the notebooks' `### Problem` headings (and the
graded answers' lists against what is graded: the written answers' cells, the declarations of
`autograders/problems/`). `START.md` is not among them: it is made from the headings whenever an edition
is built (`editions.start_page`, tests/test_student_stumbles.py).

Each check reads a text and returns what to change, one line each, naming the file and the line:

    README.md line 16: the Beyond the sheet (optional) row lists 3.4, 3.5, 4.4–4.7, 5.4; the notebook
    has 3.4, 3.5, 4.4–4.8, 5.4: add 4.8

and each is run twice more, on what a new problem and a stray one would leave: the notebooks with one
problem more (the text lacks it), and the text with one problem more (the notebooks lack it). The
teacher's guide's "Level by level" repeats each level's objectives (its notebook's cell `objectives`): a
check compares them item by item. The guide's tables of times: tests/test_times.py."""

import re
from dataclasses import dataclass
from typing import Callable

import pytest

from autograders import problems as declarations
from tests.conftest import NOTEBOOKS, ROOT, read

HEADING = re.compile(r"### Problem (\d\.\d)\b")
GRADE_ID = re.compile(r"q(\d)_(\d)_")
NUMBER = re.compile(r"(\d)\.(\d)(?:\s*(?:–|to)\s*\1\.(\d))?")  # 4.4, or a range: 4.4–4.7, 4.4 to 4.7
LIST = r"\d\.\d(?:(?:,\s+|,?\s+and\s+|\s+to\s+|–)\d\.\d)*"  # 3.4 and 3.5; 4.4, 4.5, 4.6 and 4.7; 4.4 to 4.7
WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
         "ten": 10, "eleven": 11, "twelve": 12}
CORE = "level"  # the core's notebooks: level1_recognition ... level5_mastery


# --- what the notebooks and declarations hold -------------------------------------


def stems():
    return sorted(path.stem for path in NOTEBOOKS.glob("*.ipynb"))


def headings():
    """{notebook: its problems, in order}, from the `### Problem` headings."""
    return {stem: [m[1] for cell in read(NOTEBOOKS / f"{stem}.ipynb").cells if cell.cell_type == "markdown"
                   for m in [HEADING.match(cell.source)] if m] for stem in stems()}


def written():
    """{notebook: its problems with a written answer (a Markdown cell a student answers)}."""
    found = {}
    for stem in stems():
        cells = read(NOTEBOOKS / f"{stem}.ipynb").cells
        ids = [c.metadata.get("nbgrader", {}).get("grade_id", "") for c in cells
               if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("solution")]
        found[stem] = [f"{m[1]}.{m[2]}" for m in map(GRADE_ID.match, ids) if m]
    return found


def declared():
    """{module of autograders/problems/: the problems it declares answers of}."""
    return {module.__name__.rsplit(".", 1)[1]: sorted({f"{m[1]}.{m[2]}" for a in module.ANSWERS
                                                       for m in [GRADE_ID.match(a.id)]})
            for module in declarations.LEVELS.values()}


# --- reading and writing a list ---------------------------------------------------


def listed(text):
    """The problems ``text`` names, ranges counted out: "4.4 to 4.7" is 4.4, 4.5, 4.6, 4.7."""
    found = []
    for m in NUMBER.finditer(text):
        last = int(m[3]) if m[3] else int(m[2])
        found += [f"{m[1]}.{k}" for k in range(int(m[2]), last + 1)]
    return found


def spell(problems):
    """"3.4, 3.5, 4.4–4.7, 5.4": a run of three or more as a range; "none" for none."""
    runs = []
    for p in problems:
        major, minor = map(int, p.split("."))
        if runs and runs[-1][0] == major and runs[-1][2] == minor - 1:
            runs[-1][2] = minor
        else:
            runs.append([major, minor, minor])
    parts = []
    for major, first, last in runs:
        parts += ([f"{major}.{first}–{major}.{last}"] if last - first >= 2
                  else [f"{major}.{k}" for k in range(first, last + 1)])
    return ", ".join(parts) or "none"


def line_of(text, index):
    return text.count("\n", 0, index) + 1


def compare(where, says, has, whose):
    """What to change where ``says`` (a list as written) should be ``has``; None when they agree."""
    names = listed(says)
    missing, extra = [p for p in has if p not in names], [p for p in names if p not in has]
    if not missing and not extra:
        return None
    todo = [f"add {', '.join(missing)}"] * bool(missing) + [f"remove {', '.join(extra)}"] * bool(extra)
    return f"{where} lists {spell(names)}; {whose} {spell(has)}: {' and '.join(todo)}"


def table(text, header):
    """(line, cells) of each row of the table whose header row starts with ``header``."""
    lines = text.split("\n")
    start = next(k for k, line in enumerate(lines) if line.startswith(header))
    rows = []
    for k in range(start + 2, len(lines)):
        if not lines[k].startswith("|"):
            break
        rows.append((k + 1, [cell.strip() for cell in lines[k].strip().strip("|").split("|")]))
    return start + 1, rows


def row_notebook(name):
    """The notebook a row names: "3 Analysis" is level3_analysis, "Beyond the sheet (optional)" beyond_the_sheet."""
    if name[0].isdigit():
        return next(stem for stem in stems() if stem.startswith(f"level{name.split()[0]}_"))
    return re.sub(r"[ -]", "_", name.split(" (")[0].strip("`").lower())


def missing_rows(file, header_line, rows, has):
    return [f"{file} line {header_line}: the table has no row for {stem}: add one listing {spell(problems)}"
            for stem, problems in has.items() if stem not in rows]


# --- the lists ----------------------------------------------------------------------


def readme_levels(texts, has):
    """README.md's table of the levels: each row's problems are its notebook's."""
    text = texts["README.md"]
    header, rows = table(text, "| level | what a student does | problems |")
    said = [compare(f"README.md line {line}: the {cells[0]} row", cells[2], has.get(row_notebook(cells[0]), []),
                    "the notebook has") for line, cells in rows]
    found = {row_notebook(cells[0]) for _, cells in rows}
    return [s for s in said if s] + missing_rows("README.md", header, found, has)


def students_levels(texts, has):
    """docs/students.md's table of the levels: its problems, each at the start of an item ("4.5 the KV ...")."""
    text = texts["docs/students.md"]
    header, rows = table(text, "| notebook | problems |")
    said = [compare(f"docs/students.md line {line}: the {row_notebook(cells[0])} row",
                    ", ".join(re.findall(r"(?:^|; )(\d\.\d) ", cells[1])), has.get(row_notebook(cells[0]), []),
                    "the notebook has") for line, cells in rows]
    found = {row_notebook(cells[0]) for _, cells in rows}
    return [s for s in said if s] + missing_rows("docs/students.md", header, found, has)


def by_level(text, where, pattern, problems, start=0, end=None):
    """The sentences saying which level each of ``problems`` follows (``pattern``: groups ``list`` and
    ``level``, a digit or "five"): a level's problems are those numbered after it, and each has a sentence."""
    said, levels = [], set()
    for m in re.compile(pattern).finditer(text, start, len(text) if end is None else end):
        level = WORDS.get(m["level"]) or int(m["level"])
        levels.add(level)
        said.append(compare(f"{where} line {line_of(text, m.start('list'))}: \"{' '.join(m[0].split())}\"",
                            m["list"], [p for p in problems if p.startswith(f"{level}.")],
                            f"the problems {level}.x beyond the sheet are"))
    for level in sorted({int(p[0]) for p in problems} - levels):
        own = [p for p in problems if p.startswith(f"{level}.")]
        said.append(f"{where} line {line_of(text, start)}: no sentence says which levels {spell(own)} "
                    f"need: add one (they follow Level {level})")
    return [s for s in said if s]


def beyond_introduction(texts, has):
    """The optional level's first cell: "Problems 4.4, 4.5, 4.6 and 4.7 need Levels 1 to 4"."""
    pattern = rf"(?P<list>{LIST})(?:,\s+last,)?\s+(?:need\s+Levels\s+1\s+to\s+|all\s+)(?P<level>\d|five)\b"
    return by_level(texts["notebooks/beyond_the_sheet.ipynb"], "notebooks/beyond_the_sheet.ipynb, its first cell,",
                    pattern, has["beyond_the_sheet"])


def section(text, title):
    """(start, end) of the section of ``text`` headed ``title``."""
    start = text.index(f"\n{title}\n") + 1
    following = re.compile(r"\n#{1,3} ").search(text, start)
    return start, following.start() if following else len(text)


def teachers_beyond(texts, has):
    """docs/teachers.md: "In ten minutes" names the problems beyond the sheet, and "Level by level" says
    which level each follows ("3.4 and 3.5 follow Level 3, 4.4 to 4.7 Level 4")."""
    text, beyond = texts["docs/teachers.md"], has["beyond_the_sheet"]
    m = re.search(r"problems\s+beyond\s+the\s+sheet\s+\((?P<list>[^)]*)\)", text)
    said = [compare(f"docs/teachers.md line {line_of(text, m.start('list'))}: \"In ten minutes\"", m["list"], beyond,
                    "beyond_the_sheet has") if m else
            "docs/teachers.md: \"In ten minutes\" no longer names the problems beyond the sheet in parentheses: "
            "change the line back, or this test's pattern"]
    start, end = section(text, "### Beyond the sheet (optional)")
    pattern = rf"(?P<list>{LIST})(?:\s+\(last\))?\s+(?:follow\s+)?Level\s+(?P<level>\d)"
    return [s for s in said if s] + by_level(text, "docs/teachers.md", pattern, beyond, start, end)


def count_and_list(text, where, pattern, has, whose):
    """A sentence giving a list of ``has`` (group ``list``) and maybe their count in words (group ``count``)."""
    m = re.search(pattern, text)
    if not m:
        return [f"{where}: no line matches {pattern!r}: change the line back, or this test's pattern"]
    said = [compare(f"{where} line {line_of(text, m.start('list'))}: \"{' '.join(m['list'].split())}\"", m["list"],
                    has, whose)]
    count = m.groupdict().get("count")
    if count is not None and WORDS.get(count) != len(has):
        number = next((word for word, n in WORDS.items() if n == len(has)), str(len(has)))
        said.append(f"{where} line {line_of(text, m.start('count'))}: says \"{count}\"; {whose} {len(has)}: "
                    f"change it to \"{number}\"")
    return [s for s in said if s]


def written_lists(texts, has):
    """The lists of written answers: the core's and Beyond the sheet's (docs/teachers.md, docs/grading.md),
    and Level 5's introduction's."""
    core = [p for stem in sorted(has) if stem.startswith(CORE) for p in has[stem]]
    level5 = next(stem for stem in sorted(has) if stem.startswith("level5"))
    said = count_and_list(texts["docs/teachers.md"], "docs/teachers.md",
                          r"(?P<count>\w+)\s+written\s+answers\s+in\s+the\s+core\s+\((?P<list>[^)]*)\)",
                          core, "the core's written answers are")
    said += count_and_list(texts["docs/grading.md"], "docs/grading.md",
                           r"core\s+levels\s+have\s+(?P<count>\w+)\s+\((?P<list>[^)]*?)(?:,\s+none[^)]*)?\)",
                           core, "the core's written answers are")
    said += count_and_list(texts["docs/grading.md"], "docs/grading.md",
                           r"Beyond\s+the\s+sheet\s+has\s+(?P<count>\w+)\s+\((?P<list>[^)]*)\)",
                           has["beyond_the_sheet"], "beyond_the_sheet's written answers are")
    said += count_and_list(texts[f"notebooks/{level5}.ipynb"], f"notebooks/{level5}.ipynb, its first cell,",
                           rf"Problems\s+(?P<list>{LIST})\s+also\s+ask\s+for\s+a\s+short\s+written", has[level5],
                           f"{level5}'s written answers are")
    text = texts["docs/grading.md"]
    m = re.search(r"none\s+in\s+Levels?\s+(?P<levels>\d(?:(?:,\s+|\s+and\s+)\d)*)", text)
    none = [stem[5] for stem in sorted(has) if stem.startswith(CORE) and not has[stem]]
    if not m or re.findall(r"\d", m["levels"]) != none:
        says = " ".join(m[0].split()) if m else "nothing"
        should = f"none in Level{'s' * (len(none) > 1)} {' and '.join(none)}" if none else "nothing"
        levels = " and ".join(f"Level {n}" for n in none) or "none"
        said.append(f"docs/grading.md line {line_of(text, m.start() if m else 0)}: says \"{says}\"; the core levels "
                    f"without a written answer are {levels}: change it to \"{should}\"")
    return said


def development_modules(texts, has):
    """docs/development.md's rows of autograders/problems/: the problems each module declares answers of (the
    row's first parentheses; what follows them may name other problems, e.g. whose misconceptions it declares)."""
    text, said = texts["docs/development.md"], []
    for m in re.finditer(r"^\| `autograders/problems/(?P<module>\w+)\.py` \| (?P<list>[^|]*) \|$", text, re.M):
        if m["module"] in has:
            said.append(compare(f"docs/development.md line {line_of(text, m.start())}: the row of "
                                f"autograders/problems/{m['module']}.py", first_parentheses(m["list"]),
                                has[m["module"]], "its declarations answer"))
    return [s for s in said if s]



def first_parentheses(text):
    """``text`` up to the parenthesis that closes its first one (all of it if it has none)."""
    depth = 0
    for at, char in enumerate(text):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == ")" and depth == 0:
            return text[: at + 1]
    return text


def objectives():
    """{notebook: the items of its objectives cell ("**After this level you can:**")}."""
    found = {}
    for stem in stems():
        cell = next((c for c in read(NOTEBOOKS / f"{stem}.ipynb").cells if c.get("id") == "objectives"), None)
        if cell is not None:
            found[stem] = re.findall(r"^- (.+)$", cell.source, re.M)
    return found


def plain(item):
    """An objective as the guide writes it: one line, a comma or semicolon after a formula, not in it
    (the notebooks write `$h;$` so that the line does not break before it)."""
    return re.sub(r"([,;.:])\$", r"$\1", " ".join(item.split()))


def teachers_objectives(texts, has):
    """docs/teachers.md's "Level by level" gives each level's objectives: its notebook's, item by item."""
    text, said = texts["docs/teachers.md"], []
    for stem, items in has.items():
        name = ("Beyond the sheet (optional)" if stem == "beyond_the_sheet"
                else f"Level {stem[5]}: {stem.split('_', 1)[1].capitalize()}")
        start, end = section(text, f"### {name}")
        opening = text.index("I can:", start, end)
        listed_items = list(re.finditer(r"^- (.+(?:\n  .+)*)$", text[opening:text.index("**In class**", start, end)],
                                        re.M))
        short = name.split(":")[0].replace(" (optional)", "")
        where = f"docs/teachers.md line {line_of(text, opening)}: {short}"
        for k, (item, m) in enumerate(zip(items, listed_items), 1):
            if plain(m[1]) != plain(item):
                said.append(f"docs/teachers.md line {line_of(text, opening + m.start())}: {short}'s objective {k} "
                            f"reads \"{plain(m[1])}\"; {stem}'s cell `objectives` has \"{plain(item)}\": change it "
                            "to that")
        said += [f"{where} lists {len(listed_items)} objectives; {stem} has {len(items)}: add \"- {plain(item)}\""
                 for item in items[len(listed_items):]]
        said += [f"{where} lists {len(listed_items)} objectives; {stem} has {len(items)}: remove \"- {plain(m[1])}\""
                 for m in listed_items[len(items):]]
    return said

# --- the tests --------------------------------------------------------------------------

FILES = ("README.md", "docs/students.md", "docs/teachers.md", "docs/grading.md", "docs/development.md")


def texts():
    """{file: its text}; a notebook's is its first cell's."""
    found = {file: (ROOT / file).read_text() for file in FILES}
    found.update({f"notebooks/{stem}.ipynb": read(NOTEBOOKS / f"{stem}.ipynb").cells[0].source for stem in stems()})
    return found


CHECKS = {readme_levels: headings, students_levels: headings, beyond_introduction: headings,
          teachers_beyond: headings, written_lists: written, development_modules: declared,
          teachers_objectives: objectives}


@pytest.mark.parametrize("check", CHECKS, ids=lambda check: check.__name__)
def test_each_list_names_what_the_notebooks_hold(check):
    said = check(texts(), CHECKS[check]())
    assert not said, "\n".join(said)


@dataclass(frozen=True)
class Place:
    """Where ``check`` reads a list of ``whose`` problems: lines of ``file`` holding ``phrases``."""

    check: Callable
    whose: str
    file: str
    phrases: tuple


PLACES = [
    Place(readme_levels, "beyond_the_sheet", "README.md", ("| Beyond the sheet",)),
    Place(readme_levels, "level2_application", "README.md", ("| 2 Application",)),
    Place(students_levels, "beyond_the_sheet", "docs/students.md", ("| `beyond_the_sheet`",)),
    Place(students_levels, "level4_synthesis", "docs/students.md", ("| `level4_synthesis`",)),
    Place(beyond_introduction, "beyond_the_sheet", "notebooks/beyond_the_sheet.ipynb", ("all five",)),
    Place(teachers_beyond, "beyond_the_sheet", "docs/teachers.md", ("beyond the sheet (", "follow Level")),
    Place(written_lists, "level5_mastery", "docs/teachers.md", ("written answers in the core (",)),
    Place(written_lists, "level5_mastery", "docs/grading.md", ("none in Levels",)),
    Place(written_lists, "level5_mastery", "notebooks/level5_mastery.ipynb", ("also ask for a short written",)),
    Place(written_lists, "beyond_the_sheet", "docs/grading.md", ("Beyond the sheet has",)),
    Place(development_modules, "beyond", "docs/development.md", ("autograders/problems/beyond.py",)),
    Place(development_modules, "level4", "docs/development.md", ("autograders/problems/level4.py",)),
]


def lines_with(text, phrases):
    return {k for k, line in enumerate(text.split("\n"), 1) for phrase in phrases if phrase in line}


def next_problem(problems):
    """A problem after the last of ``problems``: 4.8 after 4.4 to 4.7."""
    major, minor = problems[-1].split(".")
    return f"{major}.{int(minor) + 1}"


def named_lines(said, file):
    return {int(m[1]) for s in said for m in [re.match(rf"{re.escape(file)}.*? line (\d+)", s)] if m}


@pytest.mark.parametrize("place", PLACES, ids=lambda p: f"{p.check.__name__}-{p.file}-{p.whose}")
def test_a_problem_the_notebook_gains_is_named_with_its_line(place):
    """The notebook gains a problem after its last: the check says "add" it on the line that lists them."""
    has = CHECKS[place.check]()
    new = next_problem(has[place.whose])
    has[place.whose] = has[place.whose] + [new]
    said = place.check(texts(), has)
    lines = lines_with(texts()[place.file], place.phrases)
    assert lines and lines <= named_lines(said, place.file), (lines, said)
    assert all(f"add {new}" in s or "change it to" in s for s in said), said


@pytest.mark.parametrize("place", PLACES, ids=lambda p: f"{p.check.__name__}-{p.file}-{p.whose}")
def test_a_problem_the_notebook_lacks_is_named_with_its_line(place):
    """On one line, the first of ``whose`` problems whose next is not one (4.7 of 4.4 to 4.7) is written as
    that next (4.4 to 4.8): the check says "remove" it, on that line."""
    has, all_texts = CHECKS[place.check](), texts()
    lines = all_texts[place.file].split("\n")
    for k in sorted(lines_with(all_texts[place.file], place.phrases)):
        one = next(m for m in re.finditer(r"\d\.\d", lines[k - 1])
                   if m[0] in has[place.whose] and next_problem([m[0]]) not in has[place.whose])
        stray = next_problem([one[0]])
        changed = lines[: k - 1] + [lines[k - 1][: one.start()] + stray + lines[k - 1][one.end():]] + lines[k:]
        said = place.check({**all_texts, place.file: "\n".join(changed)}, has)
        assert named_lines(said, place.file) == {k} and f"remove {stray}" in said[0], (k, said)


def test_an_objective_changed_or_added_in_a_notebook_is_named_with_its_line():
    has, all_texts = objectives(), texts()
    lines = all_texts["docs/teachers.md"].split("\n")
    for stem, items in has.items():
        title = "### Beyond the sheet" if stem == "beyond_the_sheet" else f"### Level {stem[5]}:"
        heading = next(k for k, line in enumerate(lines) if line.startswith(title))
        opening = next(k for k in range(heading, len(lines)) if "I can:" in lines[k]) + 1
        first = next(k for k in range(opening, len(lines)) if lines[k].startswith("- ")) + 1
        said = teachers_objectives(all_texts, {**has, stem: [items[0].replace(" ", " and more ", 1)] + items[1:]})
        assert named_lines(said, "docs/teachers.md") == {first} and "change it to" in said[0], (stem, said)
        said = teachers_objectives(all_texts, {**has, stem: items + ["do one thing more."]})
        assert named_lines(said, "docs/teachers.md") == {opening} and 'add "- do one thing more."' in said[0], said
