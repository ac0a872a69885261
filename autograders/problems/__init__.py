"""Every graded answer of the workbook, declared once: a module per notebook (its numbers, pool of
per-student variants, right answers, accepted forms, misconceptions and hidden cases), judged by
:mod:`.engine`. A module of this package that sets ``ASSIGNMENT`` (the notebook's name) and ``ANSWERS``
is found here by itself. Importing the package imports every module of it, so that the misconceptions' registry
(:data:`.misconception.NAMES`, what the report and the re-check read) holds every declared one. How to change or add
a problem: docs/adding-a-problem.md."""

import importlib
import pkgutil

LEVELS = {}  # {assignment: its module}, in the modules' order (level1 ... level5, then the others)
for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: (not m.name.startswith("level"), m.name)):
    _module = importlib.import_module(f"{__name__}.{_info.name}")
    if hasattr(_module, "ASSIGNMENT") and hasattr(_module, "ANSWERS"):
        LEVELS[_module.ASSIGNMENT] = _module


def declared(assignment):
    """{problem: its :class:`~.declare.Numbers`} of ``assignment``'s problems that have per-student numbers."""
    module = LEVELS.get(assignment)
    return {a.numbers.problem: a.numbers for a in (module.ANSWERS if module else ()) if a.numbers.entries}
