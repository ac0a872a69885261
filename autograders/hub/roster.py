"""The class roster: a CSV with nbgrader's own columns, ``id,first_name,last_name,email``.

``id`` is the student's login on the hub and their system user, so it must be a name
``useradd`` accepts and one nobody else holds. Every bad row gets one line naming the
row and the reason; a roster with any error is refused whole (nothing is created).
"""

import csv
import re
from dataclasses import dataclass
from pathlib import Path

from ..common.inputs import InputError, read_text

COLUMNS = ("id", "first_name", "last_name", "email")
# Debian's useradd NAME_REGEX, without the trailing '$' of machine accounts; 32 is utmp's limit.
LOGIN = re.compile(r"[a-z_][a-z0-9_-]{0,31}")
# Names a roster may never give a student: the superuser, and the hub's own accounts.
RESERVED = frozenset({"root", "admin", "jupyterhub", "ngshare", "course-admin", "idle-culler", "nobody"})


class RosterError(InputError):
    """The roster cannot be used; ``problems`` holds one line per bad row."""

    def __init__(self, path, problems):
        self.path, self.problems, self.line, self.todo = Path(path), list(problems), None, ""
        self.problem = "; ".join(self.problems)
        ValueError.__init__(self, f"roster {path}: not used, nothing was created: {self.problems[0]}"
                            if len(self.problems) == 1 else
                            f"roster {path}: " + "\n  ".join(["not used, nothing was created:", *self.problems]))


@dataclass(frozen=True)
class Student:
    id: str
    first_name: str = ""
    last_name: str = ""
    email: str = ""

    @property
    def full_name(self):
        return " ".join(part for part in (self.first_name, self.last_name) if part)


def login_problem(name):
    """Why ``name`` cannot be a login, or None."""
    if not name:
        return "empty id"
    if not LOGIN.fullmatch(name):
        return (f"id {name!r} is not a valid login (lower-case letters, digits, '_' and '-', "
                "starting with a letter or '_', at most 32 characters)")
    if name in RESERVED:
        return f"id {name!r} is reserved"
    return None


def read_roster(path, *, instructor, foreign=lambda name: False):
    """The students of the roster at ``path``, in its order.

    ``foreign(name)`` says whether ``name`` is an existing system account that this hub
    did not create (such an id is refused: the hub would otherwise log a student in as it).
    Raises RosterError naming every bad row, or the file, when it cannot be used.
    """
    path = Path(path)
    try:
        text = read_text(path, "", empty_ok=True)
    except InputError as error:
        raise RosterError(path, [f"line {error.line}: {error.problem}" if error.line
                                 else f"cannot be read: {error.problem}"]) from None
    reader = csv.reader(text.splitlines(), strict=True)
    try:
        rows = list(reader)
    except csv.Error as error:
        raise RosterError(path, [f"line {reader.line_num}: not valid CSV ({error})"]) from None
    if not rows:
        raise RosterError(path, ["is empty (expected a header: " + ",".join(COLUMNS) + ")"])
    header = [name.strip() for name in rows[0]]
    missing = [name for name in COLUMNS if name not in header]
    if missing:
        raise RosterError(path, [f"line 1: the header lacks the column(s) {', '.join(missing)} "
                                 f"(expected {','.join(COLUMNS)})"])
    problems, students, seen = [], [], {}
    for line, row in enumerate(rows[1:], start=2):
        if not any(cell.strip() for cell in row):
            continue
        if len(row) != len(header):
            problems.append(f"line {line}: {len(row)} fields, the header has {len(header)}")
            continue
        record = {name: cell.strip() for name, cell in zip(header, row)}
        login = record["id"]
        problem = login_problem(login)
        if problem is None and login == instructor:
            problem = f"id {login!r} is the instructor's login"
        if problem is None and login in seen:
            problem = f"id {login!r} repeats line {seen[login]}"
        if problem is None and foreign(login):
            problem = f"id {login!r} is an existing system account that this hub did not create"
        if problem:
            problems.append(f"line {line}: {problem}")
            continue
        seen[login] = line
        students.append(Student(**{name: record[name] for name in COLUMNS}))
    if problems:
        raise RosterError(path, problems)
    return students
