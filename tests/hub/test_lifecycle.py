"""A course over weeks: servers stopped by the culler or a restart lose no work; a longer roster
adds students and touches nothing that exists; a student taken off it keeps files and grades
and can no longer sign in.

Alice's graded submission is the round trip's (test_exchange) when that ran first; otherwise this file
makes it itself (:func:`alice_graded`) and leaves her folder as it found it.
"""

import csv
import shutil
import sqlite3
import time
from datetime import datetime, timezone

import pytest

from autograders.hub import accounts, hub

from .conftest import ASSIGNMENT, INSTRUCTOR, PEOPLE, ROOT, ROSTER, ok, write_roster

ALICE, CAROL, DAVE = PEOPLE + "alice", PEOPLE + "carol", PEOPLE + "dave"


def server(hub_class, name):
    status, user = hub_class.hub_api("GET", f"/users/{name}")
    return user.get("servers", {}).get("") if status == 200 else None


def start(hub_class, name, timeout=180):
    hub_class.token(name)
    hub_class.hub_api("POST", f"/users/{name}/server")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = server(hub_class, name)
        if found and found["ready"]:
            return found
        time.sleep(1)
    raise AssertionError(f"{name}'s server did not start in {timeout} s")


def stop(hub_class, name, timeout=60):
    hub_class.hub_api("DELETE", f"/users/{name}/server")
    deadline = time.monotonic() + timeout
    while server(hub_class, name) and time.monotonic() < deadline:
        time.sleep(1)
    assert server(hub_class, name) is None


@pytest.fixture(scope="module")
def alice_graded(hub_class, released):
    """Alice's submission, collected and graded: the round trip's (tests/hub/test_exchange.py), or,
    when this file runs without it, one made here the same way."""
    if submissions(hub_class, ALICE):
        return
    ok(hub_class.nbgrader(ALICE, "fetch_assignment", ASSIGNMENT))
    try:
        answered = accounts.home(ALICE) / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"
        answered.write_bytes((ROOT / "notebooks" / f"{ASSIGNMENT}.ipynb").read_bytes())
        shutil.chown(answered, ALICE, ALICE)
        ok(hub_class.nbgrader(ALICE, "submit", ASSIGNMENT))
    finally:  # test_exchange's fetch, after this file, is refused while Alice's folder is there
        shutil.rmtree(accounts.home(ALICE) / ASSIGNMENT)
    ok(hub_class.nbgrader(INSTRUCTOR, "collect", "--update", ASSIGNMENT))
    ok(hub_class.run(INSTRUCTOR, str(hub_class.settings.venv / "bin" / "mha-workbook"), "grade", "--course",
                     str(hub_class.course), "--assignment", ASSIGNMENT, "--quiet", "--student", ALICE))
    assert submissions(hub_class), "Alice's submission is not in the gradebook"


def test_the_culler_runs_as_a_service_with_the_configured_timeout(hub_class):
    status, services = hub_class.hub_api("GET", "/services")
    assert status == 200 and {"ngshare", "idle-culler", "course-admin"} <= set(services), services
    command = services["idle-culler"]["command"]
    assert f"--timeout={hub_class.settings.cull_timeout}" in command, command


def test_a_stopped_server_loses_no_saved_work(hub_class):
    """What the culler does to an idle server (a DELETE of it) keeps every file in the home."""
    start(hub_class, ALICE)
    work = accounts.home(ALICE) / "scratch.txt"
    done = hub_class.run(ALICE, "/bin/sh", "-c", f"echo kept > {work}")
    assert done.returncode == 0, done.stderr
    stop(hub_class, ALICE)
    start(hub_class, ALICE)
    assert work.read_text() == "kept\n"


def submissions(hub_class, student=None):
    """Submissions in the gradebook (``student``'s only, if given)."""
    with sqlite3.connect(hub_class.course / "gradebook.db") as db:
        if student is None:
            return db.execute("SELECT count(*) FROM submitted_assignment").fetchone()[0]
        return db.execute("SELECT count(*) FROM submitted_assignment WHERE student_id = ?", (student,)).fetchone()[0]


def test_a_longer_roster_adds_students_and_keeps_everything_else(hub_class, alice_graded):
    running = start(hub_class, ALICE)
    hub_class.token(CAROL)  # Carol is a user of the hub, with a token
    graded = submissions(hub_class)
    homes = {name: accounts.home(name).stat().st_ino for name, *_ in ROSTER}
    instructor_password = hub_class.settings.path("secrets", "instructor_password").read_text()
    roster = write_roster(hub_class.roster, [*[p for p in ROSTER if p[0] != CAROL], (DAVE, "Dave", "Late")])
    due = hub_class.roster.with_name("due.csv")
    due.write_text(f"assignment,duedate\n{ASSIGNMENT},2026-01-05 17:00:00 UTC\n")
    hub_class.settings.students = []
    hub.up(hub_class.settings, roster, due, clone=None)  # never chmod the checkout the tests run from

    # Nothing that existed was touched: Alice's server and kernel kept running through the restart.
    assert server(hub_class, ALICE)["state"]["pid"] == running["state"]["pid"]
    assert {name: accounts.home(name).stat().st_ino for name in homes} == homes
    assert hub_class.settings.path("secrets", "instructor_password").read_text() == instructor_password
    assert accounts.ours(DAVE) and accounts.home(DAVE).stat().st_mode & 0o777 == 0o700
    done = hub_class.nbgrader(INSTRUCTOR, "db", "student", "list")
    assert DAVE in done.stdout and CAROL in done.stdout, done.stdout  # the gradebook keeps Carol
    assert submissions(hub_class) == graded
    # The due date, set now, marks the earlier submissions late (by the exchange's clock), with how late.
    done = hub_class.run(INSTRUCTOR, str(hub_class.settings.venv / "bin" / "mha-workbook"), "report",
                         "--course", str(hub_class.course))
    assert done.returncode == 0, done.stdout + done.stderr
    with open(hub_class.course / "reports" / "grades.csv") as table:
        late = {row["student"]: row["late_by"] for row in csv.DictReader(table) if row["assignment"] == ASSIGNMENT}
    assert late[ALICE].startswith(f"{(datetime.now(timezone.utc) - datetime(2026, 1, 5, 17, tzinfo=timezone.utc)).days} d")
    assert "Late submissions" in (hub_class.course / "reports" / "report.html").read_text()
    status, listed = hub_class.exchange(INSTRUCTOR, "GET", f"/students/{hub_class.settings.course_id}")
    assert DAVE in {s["username"] for s in listed["students"]}

    # Carol is off the roster: her account and files stay, the hub no longer knows her.
    assert accounts.exists(CAROL) and accounts.home(CAROL).is_dir()
    status, _ = hub_class.hub_api("GET", f"/users/{CAROL}")
    assert status == 404
    status, _ = hub_class.hub_api("GET", "/user", token=hub_class.tokens.pop(CAROL))
    assert status == 403  # her token went with her
