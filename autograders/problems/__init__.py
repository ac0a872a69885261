"""Every graded answer of the workbook, declared once: a module per notebook (its numbers, pool of
per-student variants, right answers, accepted forms, misconceptions and hidden cases), judged by
:mod:`.engine`. How to change or add a problem: docs/adding-a-problem.md."""

from . import level1, level2, level3, level4, level5

LEVELS = {module.ASSIGNMENT: module for module in (level1, level2, level3, level4, level5)}


def declared(assignment):
    """{problem: its :class:`~.declare.Numbers`} of ``assignment``'s problems that have per-student numbers."""
    module = LEVELS.get(assignment)
    return {a.numbers.problem: a.numbers for a in (module.ANSWERS if module else ()) if a.numbers.entries}
