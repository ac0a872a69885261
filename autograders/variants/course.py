"""Variants in a course folder: turned on by its key, decided for each student before grading.

A course has variants when its folder holds the key ``variants.key`` (0600; :func:`init`, the
command ``mha-workbook variants init``). Then, before anything is graded, :func:`decide` gives
each submission's student their numbers for the assignment, computed from the key, the course's
id, the student's folder name (``submitted/<student>/``) and the generation (0, or what
``overrides.csv`` in the course folder says), and refuses with a :class:`VariantError` naming
what and where when the key is missing or unreadable, an overrides row is bad, a pool fails
vetting or a student folder is not a student of the gradebook. The decisions are recorded in
``variants/<assignment>.csv`` (:mod:`.record`). :func:`write_files` writes the students' own
files (``<out>/<student>/<assignment>.json``), which the course's server copies into each home
as ``~/.mha-workbook/variants/<assignment>.json`` (:mod:`.current`).
"""

import json
from pathlib import Path

from ..problems.pools import vet
from ..student.numbers import sheet_document
from . import record
from .choice import VariantError, choose, read_key, write_key
from .levels import POOLS, problems
from .overrides import read_overrides

KEY_FILE = "variants.key"
OVERRIDES_FILE = "overrides.csv"
RECORD_DIR = "variants"


def init(course):
    """Create the course's key (kept when it exists); return its path."""
    path = Path(course) / KEY_FILE
    write_key(path)
    return path


def enabled(course):
    """True when the course has variants: its key, or what only a course with variants has (its
    overrides, its record of variants), so that a lost key is an error, not the sheet's numbers."""
    course = Path(course)
    return any(p.exists() for p in (course / KEY_FILE, course / OVERRIDES_FILE)) or any(
        (course / RECORD_DIR).glob("*.csv"))


_VETTED = {}  # id(pool) -> pool: the pools this process has vetted (a Pool is frozen; kept, so no id is reused)


def _vetted(assignment):
    """Vet each pool of ``assignment`` once per process (all of them take about 2 s of CPU)."""
    for pool in POOLS.get(assignment, {}).values():
        if _VETTED.get(id(pool)) is not pool:
            vet(pool)
            _VETTED[id(pool)] = pool


def decide(course, course_id, students, gradebook_students):
    """{(student, assignment): document} for the (student, assignment) pairs ``students``.

    Without variants, every document is the sheet's. Raises VariantError before anything is
    decided when the key, the overrides, a pool or a student is wrong."""
    course = Path(course)
    students = sorted(set(students))
    if not enabled(course):
        return {(s, a): sheet_document(a, s) for s, a in students}
    key = read_key(course / KEY_FILE)
    if not course_id:
        raise VariantError(f"{course / 'nbgrader_config.py'}: CourseDirectory.course_id is empty; "
                           "the variants need the course's id")
    unknown = sorted({s for s, _ in students if s not in set(gradebook_students)})
    if unknown:
        raise VariantError("not students of the gradebook, nothing was graded: "
                           + ", ".join(f"submitted/{s}/" for s in unknown)
                           + " (add them to the gradebook, e.g. `nbgrader db student add`, or remove the folders)")
    for assignment in sorted({a for _, a in students}):
        _vetted(assignment)
    overrides = read_overrides(course / OVERRIDES_FILE, students=gradebook_students,
                               problems={a: set(problems(a)) for a in POOLS})
    decided = {}
    for student, assignment in students:
        document = sheet_document(assignment, student)
        for problem, pool in problems(assignment).items():
            generation = overrides.generation(student, assignment, problem)
            document["generation"][problem] = generation
            document["numbers"][problem] = dict(choose(pool, key, course_id, assignment, student, generation))
        decided[(student, assignment)] = json.loads(json.dumps(document))  # plain JSON data (tuples as lists)
    return decided


def write_record(course, decided):
    """Write (merge into) ``variants/<assignment>.csv`` for the documents ``decided``; return the paths."""
    folder = Path(course) / RECORD_DIR
    paths = []
    for assignment in sorted({a for _, a in decided}):
        path = folder / f"{assignment}.csv"
        rows = {key: value for key, value in (record.read(path) if path.exists() else {}).items()}
        for (student, where), document in decided.items():
            if where == assignment:
                rows = {k: v for k, v in rows.items() if k[0] != student}
                for problem, numbers in document["numbers"].items():
                    rows[(student, problem)] = (document["generation"][problem], numbers)
        if rows:
            paths.append(record.write(folder, assignment,
                                      [(s, p, g, n) for (s, p), (g, n) in rows.items()]))
    return paths


def write_files(course, course_id, assignment, students, out):
    """Each student's file ``<out>/<student>/<assignment>.json``; return the paths."""
    decided = decide(course, course_id, [(s, assignment) for s in students], students)
    paths = []
    for (student, _), document in sorted(decided.items()):
        path = Path(out) / student / f"{assignment}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
        paths.append(path)
    return paths
