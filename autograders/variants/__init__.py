"""Per-student variants: each student's own numbers for the problems whose numbers are arbitrary.

A problem's variants are a vetted pool of entries (declared with the problem: every entry checked by
:func:`autograders.problems.pools.vet`; the levels' pools: :mod:`.levels`); which entry a student gets is a keyed
hash (:mod:`.choice`): HMAC(course key, course | assignment | problem | student id | generation). Generation
``"sheet"`` is the sheet's own numbers (the practice edition, ``make lab``); an instructor
gives a student a new generation in an overrides file (:mod:`.overrides`). Which numbers this
process uses: :mod:`.current`; the prompt's locked cell: :func:`show`; a course's key, decisions
and record: :mod:`.course`.
"""

from .choice import SHEET, VariantError, choose, read_key, seed, write_key
from .prompt import given, show

__all__ = ["SHEET", "VariantError", "choose", "read_key", "given", "seed", "show", "write_key"]
