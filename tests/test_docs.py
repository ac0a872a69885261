"""The README and docs/: every relative link resolves (the file, and its #anchor as GitHub makes
it), and every command in a fenced shell block exists: a make target of the Makefile, a
subcommand of `mha-workbook` (its options parsed by the real parser), a benchmark of
`python -m benchmarks`, a module of `python -m`, or a program installed here."""

import re
import shlex
import shutil
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]

LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```", re.M | re.S)
SHELL = {"", "sh", "bash", "shell", "console"}
# Programs the docs show that this machine does not have and no test runs (the reader's own tools).
ELSEWHERE = {"conda": "Conda users' own installer", "sudo": "the reader's", "cd": "a shell builtin"}


def anchor(heading):
    """The #anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading.strip()).lower()
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    kept = "".join(ch for ch in text if ch in " -_" or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(path):
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    found, seen = set(), {}
    for heading in re.findall(r"^#{1,6} (.+?)\s*#*$", text, re.M):
        name = anchor(heading)
        found.add(name if name not in seen else f"{name}-{seen[name]}")
        seen[name] = seen.get(name, 0) + 1
    return found


def links(path):
    text = FENCE.sub("", path.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)
    return [a or b for a, b in LINK.findall(text)]


def relative_links():
    for page in DOCS:
        for target in links(page):
            if not re.match(r"[a-z]+:", target):
                yield page, target


def test_the_readme_is_short_and_every_page_is_linked_from_it_or_another_page():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200
    linked = {(page.parent / target.split("#")[0]).resolve() for page, target in relative_links() if target.split("#")[0]}
    orphans = [str(p.relative_to(ROOT)) for p in DOCS if p.parent.name == "docs" and p.resolve() not in linked]
    assert not orphans, f"pages no other page links to: {orphans}"


@pytest.mark.parametrize("page, target", list(relative_links()), ids=lambda x: str(x).replace(str(ROOT), "."))
def test_a_relative_link_resolves(page, target):
    path, _, fragment = target.partition("#")
    file = (page.parent / path).resolve() if path else page
    shown = str(file.relative_to(ROOT)) if file.is_relative_to(ROOT) else str(file)
    assert file.exists(), f"{page.relative_to(ROOT)} links to {target}: no such file"
    if fragment:
        assert file.suffix == ".md", f"{page.relative_to(ROOT)} links to {target}: an anchor in a file that is not Markdown"
        assert fragment in anchors(file), (f"{page.relative_to(ROOT)} links to {target}: no heading with that anchor in "
                                           f"{shown} (there: {sorted(anchors(file))})")


def test_the_anchor_rule_is_github_s():
    assert anchor("The library: `mha_core`") == "the-library-mha_core"
    assert anchor("The exchange: nobody submits as, reads or back-dates anybody else") == \
        "the-exchange-nobody-submits-as-reads-or-back-dates-anybody-else"
    assert anchor("Level 1: Recognition") == "level-1-recognition"


def commands():
    for page in DOCS:
        for language, body in FENCE.findall(page.read_text(encoding="utf-8")):
            if language.strip() not in SHELL:
                continue
            lines = [line.rstrip() for line in body.splitlines()]
            if any(line.startswith("$ ") for line in lines):  # a transcript: its commands only
                lines = [line[2:] for line in lines if line.startswith("$ ")]
            for line in lines:
                line = re.sub(r"(^|\s)#.*$", "", line).strip()
                if line:
                    yield page, line


def make_targets():
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z0-9_./-]+):(?!=)", text, re.M)) | {"$(STAMP)"}


def check_command(line):
    """None when ``line`` names a command that exists, else why not."""
    words = shlex.split(line)
    while words and re.match(r"^[A-Z_][A-Z0-9_]*=", words[0]):  # VAR=value before the command
        words = words[1:]
    if words and words[0] == "sudo":
        words = words[1:]
    if not words:
        return "no command"
    program, args = words[0], words[1:]
    venv = re.fullmatch(r"(?:\.\./)*\.venv/bin/(.+)", program)
    if venv:  # a program of the clone's venv (.venv/bin/nbgrader, ../.venv/bin/python): looked up beside this Python
        program = venv[1]
    if program == "make":
        targets = [a for a in args if not a.startswith("-") and "=" not in a]
        missing = [t for t in targets if t not in make_targets()]
        return f"no make target {missing}" if missing else None
    if program in ("python", "python3") and args[:1] == ["-m"]:
        module, rest = args[1], args[2:]
        if module == "autograders":
            program, args = "mha-workbook", rest
        elif module == "benchmarks":
            names = {p.stem.removeprefix("bench_") for p in (ROOT / "benchmarks").glob("bench_*.py")}
            wrong = [n for n in rest if n not in names]
            return f"no benchmark {wrong}" if wrong else None
        else:
            import importlib.util

            return None if importlib.util.find_spec(module) else f"no module {module}"
    if program == "mha-workbook":
        from autograders.__main__ import build_parser

        try:
            build_parser().parse_args(args)
        except SystemExit:
            return f"mha-workbook does not take {' '.join(args)!r}"
        return None
    if program in ELSEWHERE:
        return None
    here = shutil.which(program, path=str(Path(sys.executable).parent)) or shutil.which(program)
    return None if here else f"no program {program!r} here"


@pytest.mark.parametrize("page, line", list(commands()), ids=lambda x: str(x).replace(str(ROOT), "."))
def test_a_command_shown_exists(page, line):
    problem = check_command(line)
    assert problem is None, f"{page.relative_to(ROOT)}: `{line}`: {problem}"


def test_the_command_check_can_fail():
    assert check_command("make lab") is None
    assert check_command("make no-such-target") is not None
    assert check_command("mha-workbook grade --course course --no-such-option") is not None
    assert check_command(".venv/bin/nbgrader db student add alice") is None
    assert check_command(".venv/bin/no-such-program") is not None
    assert check_command("../.venv/bin/python -m autograders variants write --no-such-option") is not None
    assert check_command("mha-workbook no-such-command") is not None
    assert check_command("python -m benchmarks no_such_benchmark") is not None
    assert check_command("python -m benchmarks hub") is None
    assert check_command("no-such-program --help") is not None


LAYOUT = ROOT / "docs" / "development.md"
MODULE_ROW = re.compile(r"^\| `((?:autograders|mha_core)/[^`]+\.py)` \|", re.M)


def test_the_layout_has_a_row_for_every_module_of_the_two_packages():
    """docs/development.md's "The modules": one row per module file of autograders/ and mha_core/, none for a
    module that is gone."""
    listed = MODULE_ROW.findall(LAYOUT.read_text(encoding="utf-8"))
    modules = {str(path.relative_to(ROOT)) for package in ("autograders", "mha_core")
               for path in (ROOT / package).rglob("*.py")}
    missing = sorted(modules - set(listed))
    assert not missing, (f"{LAYOUT.relative_to(ROOT)}, \"The modules\": no row for {missing}: add one line each, "
                         "| `<path>` | what it holds |")
    gone = sorted(set(listed) - modules)
    assert not gone, f"{LAYOUT.relative_to(ROOT)}, \"The modules\": rows for modules that are gone: {gone}"
    twice = sorted({path for path in listed if listed.count(path) > 1})
    assert not twice, f"{LAYOUT.relative_to(ROOT)}, \"The modules\": more than one row for {twice}"
