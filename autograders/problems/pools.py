"""A problem's pool of variants, and the vetting every entry must pass.

A :class:`Pool` holds the sheet's numbers and the entries students may get, with what the
checks need to judge an answer: the right answer of an entry, the wrong answers its
misconceptions give (``mistakes``: tag → value) and the precision the checks accept. An entry
passes :func:`vet` when its numbers are valid for the problem (``valid``: sizes that divide),
its right answer is defined, and every misconception's answer differs, at that precision,
from the right answer and from each other misconception's, so that the feedback names one
misconception only. Two plausible mistakes that coincide at some entries are declared together
(:class:`~.declare.Coincidence`, a message true for each): ``mistakes`` then gives
them as one where they agree, and any other coincidence of declared mistakes is named here, as is a
misconception's answer that the checks would name as another (``recognised``: one whose test is wider
than its value, as a whole number near the answer for a rounded one, takes it).
"""

import itertools
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..student.numbers import VariantError

MIN_ENTRIES = 24  # dozens: two students sharing one entry by chance stays rare in a class of 30


@dataclass(frozen=True)
class Pool:
    problem: str                       # the answer's grade_id, e.g. ``q1_1_d_k``
    sheet: dict                        # the sheet's own numbers
    entries: tuple                     # each a dict of numbers, the same keys as ``sheet``
    answer: Callable                   # entry -> the right answer (a number or an array)
    mistakes: Callable = lambda entry: {}  # entry -> {misconception tag: the answer it gives}
    tolerance: float = 1e-9            # absolute: what the checks accept as equal
    valid: Callable = lambda entry: None   # entry -> why its numbers are unusable, or None
    notes: dict = field(default_factory=dict)  # "variable": the answer's name when not its grade_id's tail
    recognised: Callable = None        # (entry, value) -> the tag the checks name for value (None: by value alone)


def same(a, b, tolerance):
    """True when ``a`` and ``b`` (numbers or arrays) have one shape and agree within ``tolerance``."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return a.shape == b.shape and bool(np.all(np.abs(a - b) <= tolerance))


def entry_problems(pool, entry):
    """Why ``entry`` cannot be in ``pool`` (a list of reasons; empty when it passes)."""
    if set(entry) != set(pool.sheet):
        return [f"numbers {sorted(entry)} are not the sheet's {sorted(pool.sheet)}"]
    reason = pool.valid(entry)
    if reason:
        return [reason]
    try:
        right = pool.answer(entry)
        wrong = pool.mistakes(entry)
    except (ArithmeticError, ValueError) as error:
        return [f"its answer cannot be computed ({error})"]
    values = np.asarray(right, float)
    if not np.all(np.isfinite(values)):
        return [f"its right answer {right!r} is not finite"]
    found = []
    for tag, value in wrong.items():
        if same(value, right, 2 * pool.tolerance):
            found.append(f"the misconception {tag!r} gives the right answer ({_show(right)})")
    for (tag_a, a), (tag_b, b) in itertools.combinations(wrong.items(), 2):
        if same(a, b, 2 * pool.tolerance):
            found.append(f"the misconceptions {tag_a!r} and {tag_b!r} give the same answer ({_show(a)})")
    if not found and pool.recognised is not None:  # a wider test than a value's (any whole number near it) may take
        for tag, value in wrong.items():          # another misconception's answer
            named = pool.recognised(entry, value)
            if named != tag:
                found.append(f"the answer of the misconception {tag!r} ({_show(value)}) is named {named!r}")
    return found


def vet(pool):
    """Raise VariantError naming every entry of ``pool`` (and the sheet) that fails vetting."""
    found = [f"the sheet's numbers {pool.sheet}: {reason}" for reason in entry_problems(pool, pool.sheet)]
    if len(pool.entries) < MIN_ENTRIES:
        found.append(f"{len(pool.entries)} entries, at least {MIN_ENTRIES} expected")
    seen = set()
    for index, entry in enumerate(pool.entries):
        key = tuple(sorted(entry.items()))
        if key in seen:
            found.append(f"entry {index} {entry}: a duplicate")
        seen.add(key)
        found += [f"entry {index} {entry}: {reason}" for reason in entry_problems(pool, entry)]
    if found:
        raise VariantError(f"pool {pool.problem}: " + "; ".join(found))
    return pool


def _show(value):
    value = np.asarray(value)
    if value.ndim == 0:
        number = float(value)
        return f"{int(number)}" if number.is_integer() and math.isfinite(number) else f"{number:.6g}"
    return np.array2string(value, precision=4)
