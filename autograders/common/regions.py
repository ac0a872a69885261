"""The hidden-test regions of a test cell, parsed in one place.

A test cell's hidden tests sit between a line holding ``BEGIN HIDDEN TESTS`` and one holding
``END HIDDEN TESTS`` (nbgrader's delimiters; ``### `` in front by convention)::

    _checks.q9_9_example(answer)
    ### BEGIN HIDDEN TESTS
    _checks.q9_9_example(answer, hidden=True)
    ### END HIDDEN TESTS

Lines end as Python's compiler ends them (``\\n``, ``\\r\\n`` or a lone ``\\r``), so a region's line
numbers are a traceback's. Where the markers are malformed the parse errs on the side of hiding:
a ``BEGIN`` inside a region does not start another (the region goes on to the next ``END``), an
unterminated region runs to the end of the cell, and an ``END`` outside any region is a marker line
with nothing hidden. nbgrader's release refuses the first two; the grading still meets them in a
source it did not release (its own tests, a hand-edited course).

Used by the autograde (the hidden tests set aside from the student's kernel), the feedback (their
source never shown), the re-check (did a failure come from them) and the graded edition (the form-only
check goes in front of them).
"""

import re
from dataclasses import dataclass

BEGIN, END = "BEGIN HIDDEN TESTS", "END HIDDEN TESTS"
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n|$)")


@dataclass(frozen=True)
class Region:
    """One hidden-test region: the 0-based indices of its ``BEGIN`` line and of its ``END`` line
    (None: unterminated, it runs to the cell's end), and the ``BEGIN`` line's indentation."""

    begin: int
    end: int = None
    indent: str = ""

    def lines(self, count):
        """The indices of the lines it covers (markers included), in a cell of ``count`` lines."""
        return range(self.begin, count if self.end is None else self.end + 1)


def split_lines(source):
    """``source``'s lines, each with its own line ending (``"".join`` gives ``source`` back)."""
    lines = _LINE.findall(source)
    return lines[:-1] if lines and lines[-1] == "" else lines


def _bare(line):
    return line.rstrip("\r\n")


def regions(source, begin=BEGIN, end=END):
    """The hidden-test :class:`Region` s of ``source``, in order."""
    found, start = [], None
    for index, line in enumerate(split_lines(source)):
        if start is None and begin in line:
            start = Region(index, None, line[: len(line) - len(line.lstrip())])
        if start is not None and end in line and (index > start.begin or line.find(end) > line.find(begin)):
            found.append(Region(start.begin, index, start.indent))
            start = None
    return found + ([start] if start is not None else [])


def hidden_line_numbers(source, begin=BEGIN, end=END):
    """The 1-based numbers of the lines inside ``source``'s hidden-test regions (markers included)."""
    count = len(split_lines(source))
    return {index + 1 for region in regions(source, begin, end) for index in region.lines(count)}


def hidden_lines(source, begin=BEGIN, end=END):
    """The lines inside ``source``'s hidden-test regions (markers included), without their line endings."""
    lines = split_lines(source)
    return [_bare(lines[i]) for region in regions(source, begin, end) for i in region.lines(len(lines))]


def replace_hidden(source, placeholder, begin=BEGIN, end=END):
    """``source`` with each hidden-test region replaced by one line, ``placeholder`` at the region's
    indentation; an ``END`` marker outside any region goes too (nothing of a marker is shown)."""
    lines = split_lines(source)
    found = regions(source, begin, end)
    covered = {i for region in found for i in region.lines(len(lines))}
    starts = {region.begin: region for region in found}
    kept = []
    for index, line in enumerate(lines):
        if index in starts:
            ending = line[len(_bare(line)):]
            kept.append(starts[index].indent + placeholder + ending)
        elif index not in covered and end not in line:
            kept.append(line)
    text = "".join(kept)
    if not source.endswith(("\n", "\r")):  # the last line kept had an ending only because a line followed
        text = text[:-2] if text.endswith("\r\n") else text[:-1] if text.endswith(("\n", "\r")) else text
    return text


def first_hidden_line(source, begin=BEGIN, end=END):
    """The 0-based index of the first region's ``BEGIN`` line, or None when ``source`` has none."""
    found = regions(source, begin, end)
    return found[0].begin if found else None
