"""A PostgreSQL gradebook (``grade --db postgresql://...``), on a throwaway server.

The module starts its own PostgreSQL cluster (``initdb`` into a temporary folder,
``pg_ctl start``, listening only on a Unix socket in that folder; as the
``postgres`` user when run as root) and removes it at the end. Without the server
binaries (Debian: ``apt-get install postgresql``) the tests are skipped, or fail
when ``MHA_REQUIRE_POSTGRES`` is set (CI sets it).

One small class (level 1, 3 students: student000 with a hard-coded answer that fails
a hidden check, student001 with a few known mistakes, student002 the blank release;
level 1 only, as the slower levels would add nothing here) is graded into a new
PostgreSQL database by :func:`grade` as shipped (2 workers, re-check, feedback).
The same autograde results are then recorded by :func:`grade` into the course's
SQLite gradebook (the workers' results are replayed rather than computed twice:
what differs is the database), and every gradebook row must be equal. Then the
report is built from PostgreSQL, and the CLI regrades one resubmitted notebook into
PostgreSQL, touching no other row.
"""

import csv
import os
import pwd
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from autograders.editions import editions
from autograders import report
from autograders.grading import backends, gradebooks, grading
from benchmarks.bench_grading import gradebook_rows, make_class
from tests.test_grading import HARD_CODED, _answer

ROOT = Path(__file__).resolve().parent.parent
LEVEL = "level1_recognition"
STUDENTS = ["student000", "student001", "student002"]  # student002 submits the blank release
PAIRS = [(student, LEVEL) for student in STUDENTS]
REQUIRED = bool(os.environ.get("MHA_REQUIRE_POSTGRES"))


# --- a throwaway PostgreSQL server -----------------------------------------------------


def _unavailable(reason):
    if REQUIRED:
        pytest.fail(f"MHA_REQUIRE_POSTGRES is set, but {reason}", pytrace=False)
    pytest.skip(reason)


def _server_bin():
    """The folder of initdb, pg_ctl and postgres: $MHA_PG_BIN if set, else Debian's newest or PATH's."""
    def version(path):
        return int(path.parent.name) if path.parent.name.isdigit() else 0

    if os.environ.get("MHA_PG_BIN"):
        candidates = [os.environ["MHA_PG_BIN"]]
    else:
        candidates = [str(p) for p in sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=version, reverse=True)]
        candidates += [str(Path(shutil.which("initdb")).resolve().parent) if shutil.which("initdb") else None]
    for folder in filter(None, candidates):
        if all((Path(folder) / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return Path(folder)
    return None


class Cluster:
    """A PostgreSQL cluster in ``root`` (data in ``root/data``, socket in ``root``), trust auth."""

    def __init__(self, bindir, root):
        self.bindir, self.root, self.data, self.log = bindir, root, root / "data", root / "server.log"
        self.as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        self.started = False

    def run(self, program, *args, timeout=120):
        return subprocess.run([*self.as_owner, str(self.bindir / program), *args], capture_output=True, text=True,
                              timeout=timeout)

    def start(self):
        done = self.run("initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C",
                        "--no-sync")
        if done.returncode != 0:
            pytest.fail(f"initdb failed:\n{done.stdout}{done.stderr}", pytrace=False)
        # Only a Unix socket (no TCP port to collide with another run); durability off: it is thrown away.
        options = (f"-k {self.root} -c listen_addresses='' -c fsync=off -c synchronous_commit=off "
                   "-c full_page_writes=off")
        done = self.run("pg_ctl", "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "-t", "60", "start")
        self.started = done.returncode == 0
        if not self.started:
            log = self.log.read_text()[-3000:] if self.log.exists() else ""
            pytest.fail(f"the PostgreSQL server did not start:\n{done.stdout}{done.stderr}\n{log}", pytrace=False)

    def stop(self):
        if self.started:
            done = self.run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "-t", "30", "stop", timeout=60)
            if done.returncode != 0:
                self.run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "-t", "30", "stop", timeout=60)
            self.started = False

    def url(self, database):
        return f"postgresql://postgres@/{database}?host={self.root}"

    def create_database(self, name, template=None):
        """A new database (a copy of ``template``, when given); its URL."""
        import psycopg

        with psycopg.connect(host=str(self.root), user="postgres", dbname="postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        return self.url(name)


@pytest.fixture(scope="module")
def postgres():
    """A running throwaway cluster; stopped and removed at the end, even on failure."""
    bindir = _server_bin()
    if bindir is None:
        _unavailable("PostgreSQL's server (initdb, pg_ctl, postgres) is not installed: apt-get install postgresql")
    try:
        import psycopg  # noqa: F401 (SQLAlchemy's driver for postgresql:// URLs)
    except ImportError as error:
        _unavailable(f"the PostgreSQL driver is missing ({error}): pip install -e '.[test]'")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            _unavailable("PostgreSQL refuses to run as root and there is no postgres user to run it as")
    root = Path(tempfile.mkdtemp(prefix="mha-pg-"))  # short: a socket path has at most 107 bytes
    cluster = Cluster(bindir, root)
    try:
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
        shutil.rmtree(root, ignore_errors=True)


# --- the class -----------------------------------------------------------------------


def _definitions(url):
    """Every row of nbgrader's definition tables (ids included), table by table."""
    from sqlalchemy import create_engine, select

    tables = gradebooks._definition_tables()
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return {name: sorted(map(tuple, conn.execute(select(tables[name]))), key=repr)
                    for name in ("course", "assignment", "notebook", "base_cell", "grade_cells", "solution_cells",
                                 "task_cells", "source_cell")}
    finally:
        engine.dispose()


def _submission_rows(url):
    """{(student, assignment): {table: sorted rows, ids included}} of every submission."""
    from sqlalchemy import create_engine, select

    t = gradebooks._definition_tables()
    sa, sn, a = t["submitted_assignment"], t["submitted_notebook"], t["assignment"]
    found = {}
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            for row in conn.execute(select(sa, a.c.name).join(a, sa.c.assignment_id == a.c.id)):
                found.setdefault((row.student_id, row.name), {})["submitted_assignment"] = [tuple(row)]
            queries = {
                "submitted_notebook": select(sn, sa.c.student_id, a.c.name).join(sa, sn.c.assignment_id == sa.c.id),
                **{name: select(t[name], sa.c.student_id, a.c.name).join(sn, t[name].c.notebook_id == sn.c.id)
                   .join(sa, sn.c.assignment_id == sa.c.id) for name in ("grade", "comment")},
            }
            for name, query in queries.items():
                for row in conn.execute(query.join(a, sa.c.assignment_id == a.c.id)):
                    found.setdefault((row.student_id, row.name), {}).setdefault(name, []).append(tuple(row))
    finally:
        engine.dispose()
    return {key: {name: sorted(rows, key=repr) for name, rows in tables.items()} for key, tables in found.items()}


def _files_of_others(course, student):
    """{path: (mtime, bytes)} of ``autograded/`` and ``feedback/`` except ``student``'s."""
    return {str(p): (p.stat().st_mtime_ns, p.read_bytes()) for folder in ("autograded", "feedback")
            for p in (course / folder).rglob("*") if p.is_file() and p.relative_to(course / folder).parts[0] != student}


@pytest.fixture(scope="module")
def graded(postgres, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("postgres")
    source = tmp / "notebooks"  # the course of level 1 alone
    source.mkdir()
    shutil.copyfile(ROOT / "notebooks" / f"{LEVEL}.ipynb", source / f"{LEVEL}.ipynb")
    pristine = tmp / "pristine"
    editions.build_release(pristine, source, say=lambda message: None)
    make_class(pristine, STUDENTS, [LEVEL], seed=3, blank_every=3)
    _answer(pristine / "submitted/student000" / LEVEL / f"{LEVEL}.ipynb", "q1_1_head_dim", HARD_CODED)
    pg, lite = tmp / "pg", tmp / "sqlite"
    shutil.copytree(pristine, pg)
    shutil.copytree(pristine, lite)
    url = postgres.create_database("class")

    results, local = {}, backends.local

    def recording(jobs, workers, function=None):
        for result in local(jobs, workers, function):
            results[result.key] = result
            yield result

    def replaying(jobs, workers, function=None):
        return (results[job.key] for job in jobs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backends, "local", recording)
        summary = grading.grade(pg, db_url=url, workers=2)
        patch.setattr(backends, "local", replaying)
        reference = grading.grade(lite, workers=2)
    return {"pg": pg, "sqlite": lite, "url": url, "summary": summary, "reference": reference,
            "pg_rows": gradebook_rows(url), "sqlite_rows": gradebook_rows(f"sqlite:///{lite}/gradebook.db")}


# --- the tests -------------------------------------------------------------------------


def test_postgres_gradebook_equals_sqlite_row_by_row(graded):
    summary = graded["summary"]
    assert summary.failed == [], summary.failed
    assert sorted(summary.graded) == PAIRS
    assert sorted(graded["reference"].graded) == sorted(summary.graded)
    assert graded["reference"].scores == summary.scores
    pg, lite = graded["pg_rows"], graded["sqlite_rows"]
    assert sorted({k[:2] for k in pg if k[-1] == "grade"}) == PAIRS, "every submission's grades compared"
    assert {k: (pg.get(k), lite.get(k)) for k in set(pg) | set(lite) if pg.get(k) != lite.get(k)} == {}
    # not trivial: the wrong answer scores 0 on its hidden check, the blank release 0, right answers full marks
    head_dim = pg[("student000", LEVEL, LEVEL, "q1_1_head_dim_test", "grade")]
    assert (head_dim[0], head_dim[3]) == (0.0, 2.0)
    blank = [v[0] for k, v in pg.items() if k[0] == "student002" and k[-1] == "grade" and v[0] is not None]
    assert blank and set(blank) == {0.0}
    assert any(v[0] == v[3] > 0 for k, v in pg.items() if k[0] == "student000" and k[-1] == "grade")
    # the assignments' definitions were copied into PostgreSQL row for row, ids included
    assert _definitions(graded["url"]) == _definitions(f"sqlite:///{graded['pg']}/gradebook.db")
    assert gradebook_rows(f"sqlite:///{graded['pg']}/gradebook.db") == {}, "the course's own gradebook is not written"


def test_report_from_postgres_equals_report_from_sqlite(graded, tmp_path):
    csv_pg, html_pg = report.build(graded["pg"], tmp_path / "pg", db_url=graded["url"])
    csv_lite, _ = report.build(graded["sqlite"], tmp_path / "sqlite")
    assert csv_pg.read_text() == csv_lite.read_text()
    rows = {(r["student"], r["assignment"]): r for r in csv.DictReader(csv_pg.open())}
    assert sorted(rows) == PAIRS
    assert rows[("student000", LEVEL)]["q1_1_head_dim_test"] == "0"
    assert rows[("student002", LEVEL)]["score"] == "0"
    counts = report.read_results(graded["pg"], graded["url"]).misconception_counts()
    assert counts == report.read_results(graded["sqlite"]).misconception_counts()
    assert counts[0]["no answer yet"] > 0
    assert html_pg.read_text().count("data:image/png;base64,") == 4  # with the item analysis's bars


def test_cli_regrades_one_submission_into_postgres_and_nothing_else(graded, postgres, tmp_path):
    """``python -m autograders grade --db URL --student S --assignment A`` as an instructor
    runs it: student002 resubmits level 1 with every answer right; only that submission's
    rows and files change, and the report is built from PostgreSQL. (On copies of the
    graded course and database: the other tests see them as graded.)"""
    course = tmp_path / "course"
    shutil.copytree(graded["pg"], course)
    url = postgres.create_database("regrade", template="class")
    key = ("student002", LEVEL)
    notebook = Path(LEVEL) / f"{LEVEL}.ipynb"
    shutil.copyfile(course / "source" / notebook, course / "submitted/student002" / notebook)
    before, files = _submission_rows(url), _files_of_others(course, key[0])
    assert {Path(f).relative_to(course).parts[:2] for f in files} == {
        (folder, s) for folder in ("autograded", "feedback") for s, _ in PAIRS if s != key[0]}
    others = {k: v for k, v in before.items() if k != key}
    assert sorted(others) == [p for p in PAIRS if p != key]
    env = editions.nbgrader_env() | {"PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "autograders", "grade", "--course", str(course), "--db", url,
                           "--student", key[0], "--assignment", key[1], "--workers", "1", "--no-recheck", "--quiet",
                           "--out", str(tmp_path / "out")],
                          cwd=tmp_path, env=env, text=True, capture_output=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "graded 1, failed 0" in done.stdout, done.stdout
    after = _submission_rows(url)
    assert {k: v for k, v in after.items() if k != key} == others, "no other submission's row changed, ids included"
    assert _files_of_others(course, key[0]) == files
    # the same rows (ids) were updated in place, with new scores
    ids = {name: sorted(row[0] for row in rows) for name, rows in after[key].items()}
    assert ids == {name: sorted(row[0] for row in rows) for name, rows in before[key].items()}
    rows = gradebook_rows(url)
    scored = [v for k, v in rows.items() if k[:2] == key and k[-1] == "grade" and v[0] is not None]
    assert scored and all(v[0] == v[3] for v in scored), "every autograded cell now has full marks"
    grades = {(r["student"], r["assignment"]): r for r in csv.DictReader((tmp_path / "out/grades.csv").open())}
    assert float(grades[key]["score"]) == sum(v[0] for v in scored) > 0
    assert grades[("student000", LEVEL)]["q1_1_head_dim_test"] == "0"
    assert gradebook_rows(f"sqlite:///{course}/gradebook.db") == {}, "the course's own gradebook is not written"
