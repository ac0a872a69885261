"""Which entry of a pool a student gets: a keyed hash, the same on every machine and run.

seed = HMAC-SHA256(course key, [course, assignment, problem, student id, generation]) with the
five fields as one JSON array (no separator a student id could contain makes two inputs
collide); the entry is ``pool[seed mod len(pool)]``. The course key is a file only the
instructor can read: without it a student cannot compute anybody's numbers.
"""

import hashlib
import hmac
import json
import os
import secrets
import stat
from pathlib import Path

from ..common.inputs import InputError, read_text

from ..student.numbers import SHEET, VariantError  # noqa: F401 (the students' side reads them too)

KEY_BYTES = 32


class VariantInputError(InputError, VariantError):
    """One of the variants' files (the key, the overrides, a record) cannot be used."""


def seed(key, course, assignment, problem, student, generation):
    """The keyed hash of one student's one problem, as a non-negative integer."""
    if not isinstance(key, bytes) or len(key) < KEY_BYTES:
        raise VariantError(f"key must be at least {KEY_BYTES} bytes, got {type(key).__name__} of length {len(key) if hasattr(key, '__len__') else '?'}")
    for name, value in (("course", course), ("assignment", assignment), ("problem", problem), ("student", student)):
        if not isinstance(value, str) or not value:
            raise VariantError(f"{name} must be a non-empty string, got {value!r}")
    message = json.dumps([course, assignment, problem, student, _generation(generation)]).encode()
    return int.from_bytes(hmac.new(key, message, hashlib.sha256).digest(), "big")


def choose(pool, key, course, assignment, student, generation=0):
    """The entry of ``pool`` (a :class:`~autograders.problems.pools.Pool`) for ``student`` at ``generation``."""
    if _generation(generation) == SHEET:
        return pool.sheet
    return pool.entries[seed(key, course, assignment, pool.problem, student, generation) % len(pool.entries)]


def _generation(generation):
    if generation == SHEET:
        return SHEET
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
        raise VariantError(f"generation must be {SHEET!r} or a whole number >= 0, got {generation!r}")
    return generation


def write_key(path):
    """Create the course key at ``path`` (readable by its owner only); an existing key is kept."""
    path = Path(path)
    if path.exists():
        return read_key(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w") as f:
        f.write(secrets.token_hex(KEY_BYTES) + "\n")
    return read_key(path)


KEY_TODO = ("restore it from your backup (without it nobody's numbers can be decided again); "
            "a course without variants yet makes one with `mha-workbook variants init`")


def read_key(path):
    """The course key at ``path`` as bytes; a VariantInputError naming the file when it cannot be used."""
    path = Path(path)
    text = read_text(path, KEY_TODO, error=VariantInputError).strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise VariantInputError(path, f"expected {2 * KEY_BYTES} hexadecimal digits", KEY_TODO) from None
    if len(key) < KEY_BYTES:
        raise VariantInputError(path, f"expected {2 * KEY_BYTES} hexadecimal digits, got {len(text)}", KEY_TODO)
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise VariantInputError(path, f"readable by others (mode {stat.filemode(mode)})",
                                f"`chmod 600 {path}`: whoever reads it can compute every student's numbers")
    return key
