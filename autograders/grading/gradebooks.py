"""The course's nbgrader configuration and gradebook, as grading uses them.

nbgrader's gradebook (SQLite by default, any SQLAlchemy URL) holds the
definitions the release wrote (assignments, notebooks, cells) and the grades.
:func:`copy_definitions` gives a job's private gradebook, or a new PostgreSQL
one, an assignment's definitions with their ids; :func:`merge` records one job's
result in the course's gradebook exactly as ``nbgrader autograde`` would.
"""

import atexit
import contextlib
import os
import shutil
import tempfile
from pathlib import Path

from ..common.course_config import course_config


# --- the course's configuration and gradebook ----------------------------------------


def course_db_url(course, config=None):
    """The gradebook URL of the course (``CourseDirectory.db_url``, as configured)."""
    from nbgrader.coursedir import CourseDirectory

    config = config if config is not None else course_config(course)
    coursedir = CourseDirectory(config=config)
    coursedir.root = str(Path(course).resolve())
    return coursedir.db_url, coursedir.course_id


def _definition_tables():
    from nbgrader.api import Base

    return Base.metadata.tables


def has_assignment(db_url, assignment):
    from sqlalchemy import create_engine, inspect, select

    table = _definition_tables()["assignment"]
    engine = create_engine(db_url, future=True)
    try:
        with engine.connect() as conn:
            return "assignment" in inspect(engine).get_table_names() and conn.execute(
                select(table.c.id).where(table.c.name == assignment)).first() is not None
    finally:
        engine.dispose()


def copy_definitions(src_url, dst_url, assignment):
    """Copy ``assignment``'s definitions (the assignment, its notebooks, grade, solution,
    task and source cells, and the course row) from one gradebook to another, rows and
    ids as they are, in one transaction. The destination must have nbgrader's tables."""
    from sqlalchemy import create_engine, select

    t = _definition_tables()
    src, dst = create_engine(src_url, future=True), create_engine(dst_url, future=True)
    try:
        with src.connect() as s:
            assignment_row = s.execute(select(t["assignment"]).where(t["assignment"].c.name == assignment)).mappings().one()
            course = s.execute(select(t["course"]).where(t["course"].c.id == assignment_row["course_id"])).mappings().all()
            notebooks = s.execute(select(t["notebook"]).where(t["notebook"].c.assignment_id == assignment_row["id"])).mappings().all()
            notebook_ids = [n["id"] for n in notebooks]
            cells = s.execute(select(t["base_cell"]).where(t["base_cell"].c.notebook_id.in_(notebook_ids))).mappings().all()
            cell_ids = [c["id"] for c in cells]
            kinds = {
                name: s.execute(select(t[name]).where(t[name].c.id.in_(cell_ids))).mappings().all()
                for name in ("grade_cells", "solution_cells", "task_cells")
            }
            sources = s.execute(select(t["source_cell"]).where(t["source_cell"].c.notebook_id.in_(notebook_ids))).mappings().all()
        with dst.begin() as d:
            have_course = {r[0] for r in d.execute(select(t["course"].c.id))}
            rows = [
                ("course", [dict(r) for r in course if r["id"] not in have_course]),
                ("assignment", [dict(assignment_row)]),
                ("notebook", [dict(r) for r in notebooks]),
                ("base_cell", [dict(r) for r in cells]),
                *[(name, [dict(r) for r in found]) for name, found in kinds.items()],
                ("source_cell", [dict(r) for r in sources]),
            ]
            for name, found in rows:
                if found:
                    d.execute(t[name].insert(), found)
    finally:
        src.dispose()
        dst.dispose()


def empty_gradebook(path, course_id):
    """A new SQLite gradebook at ``path`` as nbgrader 0.9.6's ``Gradebook`` makes it (its tables, the table
    ``alembic_version`` with the head of nbgrader's migrations, the course), the head read in this process
    by alembic's ``ScriptDirectory`` (0.1 s), not by nbgrader's ``alembic heads`` subprocess (1.2 s of CPU)."""
    import nbgrader
    from alembic.script import ScriptDirectory
    from nbgrader.api import Base, Gradebook
    from sqlalchemy import create_engine, text

    head = ScriptDirectory(str(Path(nbgrader.__file__).parent / "alembic")).get_heads()[0]
    engine = create_engine(f"sqlite:///{path}", future=True)
    Base.metadata.create_all(bind=engine)
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL);"))
        connection.execute(text("INSERT INTO alembic_version (version_num) VALUES (:head);"), {"head": head})
    engine.dispose()
    with Gradebook(f"sqlite:///{path}", course_id):  # its tables there: nbgrader adds the course only
        pass
    return path


def ensure_definitions(course, db_url, assignment):
    """Make sure the gradebook ``db_url`` knows ``assignment``: when it does not (a new
    PostgreSQL gradebook, say), copy the definitions from the course's own gradebook
    (the one ``release`` wrote). Raise LookupError if neither has it."""
    if has_assignment(db_url, assignment):
        return
    own, course_id = course_db_url(course)
    if own != db_url and has_assignment(own, assignment):
        from nbgrader.api import Gradebook

        with Gradebook(db_url, course_id):  # creates the tables if needed
            pass
        copy_definitions(own, db_url, assignment)
        return
    raise LookupError(f"assignment {assignment!r} is not in the gradebook (run `python -m autograders course` first)")


# --- a job's private gradebook ----------------------------------------------------------

_private = {}  # this process's private gradebook: its "url" (one path for all its jobs) and its "engine"


def private_url():
    if "url" not in _private:
        home = tempfile.mkdtemp(prefix="mha-gradebook-")
        atexit.register(shutil.rmtree, home, True)
        _private["url"] = f"sqlite:///{home}/gradebook.db"
    return _private["url"]


def forget_private():
    """Forget this process's private gradebook (its folder is being removed): a new one for the next job."""
    engine = _private.get("engine")
    if engine is not None:
        engine.dispose()
    _private.clear()


@contextlib.contextmanager
def one_engine(url):
    """While a job runs, every nbgrader ``Gradebook`` on ``url`` (the private gradebook, read back here, then
    dropped: no fsync, no journal file) has one SQLAlchemy engine, kept for the process's next jobs: its cache
    of compiled statements fills once, not in each of a job's ten gradebooks. nbgrader 0.9.6 has no hook:
    ``Gradebook.__init__`` calls ``nbgrader.api.create_engine``, replaced meanwhile; its ``close`` disposes."""
    import nbgrader.api as api
    from sqlalchemy import event

    real = api.create_engine

    def create(db_url, *args, **kwargs):
        if str(db_url) != url or args or kwargs != {"echo": False, "future": True}:
            return real(db_url, *args, **kwargs)
        if _private.get("engine") is None:
            _private["engine"] = real(db_url, *args, **kwargs)
            event.listen(_private["engine"], "connect", lambda connection, _: connection.executescript(
                "PRAGMA synchronous=OFF; PRAGMA journal_mode=MEMORY;"))
        return _private["engine"]

    api.create_engine = create
    try:
        yield
    finally:
        api.create_engine = real
        engine = _private.get("engine")
        if engine is not None and engine.pool.checkedout():  # a gradebook left open: never on the next job's file
            _private.clear()  # a new path and engine next time
        elif engine is not None:
            engine.dispose()  # no connection left on the file the next job replaces


# --- merging into the course's gradebook ------------------------------------------


def merge(gb, result):
    """Record one job's result (a :class:`~autograders.grading.jobs.JobResult`) in the course's
    gradebook as ``nbgrader autograde`` would.

    The submission's timestamp; each grade's ``auto_score`` (``needs_manual_grade``
    as nbgrader decides it, a manual score already given kept); each comment's
    ``auto_comment``; the late penalty. A failed job: the student and submission
    exist (as nbgrader leaves them), the grades are not touched.
    """
    student, assignment = result.student, result.assignment
    gb.update_or_create_student(student)
    if result.timestamp:
        gb.update_or_create_submission(assignment, student, timestamp=result.timestamp)
    else:
        gb.update_or_create_submission(assignment, student)
    if not result.ok:
        return
    for name, notebook in result.notebooks.items():
        submitted = gb.find_submission_notebook(name, assignment, student)
        grades = {g.name: g for g in submitted.grades}
        comments = {c.name: c for c in submitted.comments}
        for grade_id, new in notebook.grades.items():
            grade = grades[grade_id]
            grade.auto_score = new.auto_score
            if notebook.submitted:
                grade.needs_manual_grade = bool(grade.manual_score is not None or grade.auto_score is None)
            else:
                grade.needs_manual_grade = new.needs_manual_grade
        for comment_id, text in notebook.comments.items():
            comments[comment_id].auto_comment = text
        submitted.late_submission_penalty = notebook.late_submission_penalty
    gb.db.commit()


def scores_of(gb, student, assignment):
    """{grade_id: (auto_score, max_score)} of a submission in the gradebook ``gb``."""
    submission = gb.find_submission(assignment, student)
    return {g.name: (g.auto_score, g.max_score) for nb in submission.notebooks for g in nb.grades}
