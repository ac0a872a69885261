"""The round trip through the hub's exchange, and every attack on it, from a student's terminal.

Release → each student fetches, answers, submits → the instructor collects → ``mha-workbook
grade`` → feedback released → each student fetches their own. Alice answers everything
right, Bob only Problem 1.1, Mallory attacks: she submits in Bob's name, back-dates her
submission, reads, lists and overwrites what is not hers, over the exchange's API and the
file system. Each attack is refused, and the instructor's copy of every honest student is
exactly what that student submitted.
"""

import csv
import json
import os
import re
import shutil
from datetime import datetime, timezone

import nbformat
import pytest

from .conftest import ASSIGNMENT, INSTRUCTOR, PEOPLE, ROOT, ok

ALICE, BOB, MALLORY = PEOPLE + "alice", PEOPLE + "bob", PEOPLE + "mallory"
SOURCE = ROOT / "notebooks" / f"{ASSIGNMENT}.ipynb"
NOTEBOOK = f"{ASSIGNMENT}.ipynb"


def grade_ids(nb, which):
    return {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells
            if c.metadata.get("nbgrader", {}).get(which)}


def partly_answered(released):
    """The released notebook with the source's answers to Problem 1.1 only."""
    source = nbformat.read(SOURCE, as_version=4)
    answers = grade_ids(source, "solution")
    for cell in released.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id", "")
        if grade_id.startswith("q1_1") and grade_id in answers:
            cell.source = answers[grade_id].source
    return released


def points_of(prefix=""):
    source = nbformat.read(SOURCE, as_version=4)
    return sum(c.metadata["nbgrader"]["points"] for gid, c in grade_ids(source, "grade").items()
               if c.cell_type == "code" and gid.startswith(prefix))


def write_as(hub_class, name, relative, data):
    path = hub_class_home(name) / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    shutil.chown(path, name, name)
    return path


def hub_class_home(name):
    from autograders.hub import accounts

    return accounts.home(name)


@pytest.fixture(scope="module")
def submitted(hub_class, released):
    """The assignment fetched by all three, submitted by Alice and Bob; their bytes. Their fetched folders
    are removed after this file: a later fetch of the assignment (test_lifecycle's, run alone) is refused
    while one is there."""
    try:
        for name in (ALICE, BOB, MALLORY):
            ok(hub_class.nbgrader(name, "fetch_assignment", ASSIGNMENT))
        write_as(hub_class, ALICE, f"{ASSIGNMENT}/{NOTEBOOK}", SOURCE.read_bytes())
        released = nbformat.read(hub_class_home(BOB) / ASSIGNMENT / NOTEBOOK, as_version=4)
        write_as(hub_class, BOB, f"{ASSIGNMENT}/{NOTEBOOK}", nbformat.writes(partly_answered(released)).encode())
        sent = {}
        for name in (ALICE, BOB):
            sent[name] = (hub_class_home(name) / ASSIGNMENT / NOTEBOOK).read_bytes()
            ok(hub_class.nbgrader(name, "submit", ASSIGNMENT))
        yield sent
    finally:
        for name in (ALICE, BOB, MALLORY):
            shutil.rmtree(hub_class_home(name) / ASSIGNMENT, ignore_errors=True)


def collect(hub_class):
    ok(hub_class.nbgrader(INSTRUCTOR, "collect", "--update", ASSIGNMENT))
    return hub_class.course / "submitted"


def test_a_student_cannot_submit_in_another_students_name(hub_class, submitted):
    refused = hub_class.nbgrader(MALLORY, "submit", ASSIGNMENT, f"--student={BOB}")
    assert refused.returncode != 0 and "explicit student ID is not possible" in refused.stdout + refused.stderr
    # The API itself: a 'user' field naming Bob is ignored, the token says who submits.
    files = json.dumps([{"path": NOTEBOOK, "content": "e30K"}])  # base64 of "{}\n"
    status, answer = hub_class.exchange(MALLORY, "POST", f"/submission/{hub_class.settings.course_id}/{ASSIGNMENT}",
                                        {"files": files, "user": BOB})
    assert status == 200 and answer["success"], answer
    status, listed = hub_class.exchange(INSTRUCTOR, "GET",
                                        f"/submissions/{hub_class.settings.course_id}/{ASSIGNMENT}/{BOB}")
    assert status == 200 and len(listed["submissions"]) == 1, listed  # Bob's own, and only his
    submitted_dir = collect(hub_class)
    assert (submitted_dir / BOB / ASSIGNMENT / NOTEBOOK).read_bytes() == submitted[BOB]
    assert (submitted_dir / MALLORY / ASSIGNMENT / NOTEBOOK).read_bytes() == b"{}\n"


def test_the_time_of_a_submission_is_the_servers(hub_class, submitted):
    forged = "2020-01-01 00:00:00.000000 UTC"
    write_as(hub_class, MALLORY, f"{ASSIGNMENT}/timestamp.txt", forged.encode())
    ok(hub_class.nbgrader(MALLORY, "submit", ASSIGNMENT))
    stamp = (collect(hub_class) / MALLORY / ASSIGNMENT / "timestamp.txt").read_text().strip()
    when = datetime.strptime(stamp[:26], "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=timezone.utc)
    assert abs((datetime.now(timezone.utc) - when).total_seconds()) < 600, stamp


def test_nobody_reads_lists_or_overwrites_another_students_work_through_the_exchange(hub_class, submitted):
    course = hub_class.settings.course_id
    status, listed = hub_class.exchange(BOB, "GET", f"/submissions/{course}/{ASSIGNMENT}/{BOB}")
    timestamp = listed["submissions"][0]["timestamp"] if status == 200 else ""
    attempts = [
        ("GET", f"/submission/{course}/{ASSIGNMENT}/{ALICE}", None, None),          # read a submission
        ("GET", f"/submissions/{course}/{ASSIGNMENT}", None, None),                 # list everyone's
        ("GET", f"/submissions/{course}/{ASSIGNMENT}/{ALICE}", None, None),         # list Alice's
        ("GET", f"/feedback/{course}/{ASSIGNMENT}/{BOB}", None, {"timestamp": timestamp}),   # Bob's feedback
        ("POST", f"/feedback/{course}/{ASSIGNMENT}/{BOB}",                           # write Bob's feedback
         {"timestamp": timestamp, "files": json.dumps([{"path": "x.html", "content": "eA=="}])}, None),
        ("GET", f"/students/{course}", None, None),                                 # the roster
        ("POST", f"/students/{course}", {"students": json.dumps([{"username": PEOPLE + "zed", "first_name": "",
                                                                   "last_name": "", "email": ""}])}, None),
        ("POST", f"/instructor/{course}/{MALLORY}", {"first_name": "M", "last_name": "", "email": ""}, None),
        ("POST", "/course/mallorys-course", {"instructors": json.dumps([MALLORY])}, None),
        ("DELETE", f"/student/{course}/{ALICE}", None, None),                       # drop Alice
        ("POST", f"/assignment/{course}/{ASSIGNMENT}", {"files": "[]"}, None),     # replace the release
        ("DELETE", f"/assignment/{course}/{ASSIGNMENT}", None, None),               # or remove it
    ]
    for method, path, data, params in attempts:
        status, answer = hub_class.exchange(MALLORY, method, path, data, params)
        assert status == 403 and not answer.get("success"), (method, path, status, answer)


def test_nobody_reads_another_students_files_or_the_course_on_disk(hub_class, submitted):
    server_pid = hub_class.settings.path("jupyterhub.pid").read_text().strip()
    targets = [
        f"/home/{ALICE}", f"/home/{ALICE}/{ASSIGNMENT}/{NOTEBOOK}",                # another student's home
        f"/home/{INSTRUCTOR}/course", f"/home/{INSTRUCTOR}/course/source/{ASSIGNMENT}/{NOTEBOOK}",  # solutions
        f"/home/{INSTRUCTOR}/course/gradebook.db",
        str(hub_class.settings.path("exchange")),                                  # the exchange's storage
        str(hub_class.settings.path("secrets", "course_admin_token")),
        str(hub_class.settings.path("jupyterhub.sqlite")),
        f"/proc/{server_pid}/environ",                                              # the hub's tokens
    ]
    for target in targets:
        done = hub_class.run(MALLORY, "/bin/sh", "-c", f"ls -la '{target}' && cat '{target}'")
        assert done.returncode != 0 and "Permission denied" in done.stderr, (target, done.stdout[:300])


def solution_lines():
    """Lines of the level notebooks' solutions, as long and as distinctive as a search needs (not in the
    workbook's own installed code, which students may read; verbatim in a notebook's JSON)."""
    public = "\n".join(p.read_text() for package in ("autograders", "mha_core") for p in (ROOT / package).rglob("*.py"))
    lines = set()
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):  # every level, Beyond the sheet too
        for cell in nbformat.read(notebook, as_version=4).cells:
            for block in re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", cell.source, re.S):
                lines |= {line.strip() for line in block.splitlines()
                          if len(line.strip()) >= 30 and not set(line) & set('\\"') and line.strip() not in public}
    return sorted(lines)


def test_the_environment_students_run_holds_no_solution(hub_class):
    """Mallory searches everything she can read of the hub's environments for a line of a solution."""
    planted = write_as(hub_class, MALLORY, "planted/patterns.txt", "\n".join(solution_lines()).encode())
    assert len(solution_lines()) > 40

    def search(folder):
        return hub_class.run(MALLORY, "grep", "-rlIsF", "-f", str(planted), str(folder))

    try:
        done = search(hub_class.settings.prefix)
        assert done.returncode in (1, 2) and not done.stdout, done.stdout[:500]  # 2: some folders were not hers
        richest = max(sorted((ROOT / "notebooks").glob("*.ipynb")),  # the source holding most solution lines
                      key=lambda path: sum(line in path.read_text() for line in solution_lines()))
        copy = write_as(hub_class, MALLORY, f"planted/source/{richest.name}", richest.read_bytes())
        assert search(copy.parent).stdout.strip() == str(copy)  # the same search finds a source notebook
    finally:
        shutil.rmtree(planted.parent)


def test_a_student_token_reaches_only_its_owner(hub_class, submitted):
    token = hub_class.token(MALLORY)
    status, me = hub_class.hub_api("GET", "/user", token=token)
    assert status == 200 and me["name"] == MALLORY
    for method, path in (("GET", f"/users/{BOB}"), ("POST", f"/users/{BOB}/tokens"), ("GET", "/users"),
                         ("POST", f"/users/{BOB}/server"), ("DELETE", f"/users/{ALICE}/server")):
        status, answer = hub_class.hub_api(method, path, {} if method == "POST" else None, token=token)
        assert status in (403, 404), (method, path, status, answer)


@pytest.mark.parametrize("make, reason", [
    (lambda folder: os.symlink("/dev/zero", folder / "zero"), "zero: a symbolic link"),
    (lambda folder: os.mkfifo(folder / "pipe"), "pipe: not a regular file"),
    (lambda folder: (folder / "big.bin").write_bytes(b"\0" * (65 * 2**20)), "the limit is 64 MiB"),
])
def test_a_submission_with_a_link_a_device_or_too_big_is_refused_clearly(hub_class, submitted, make, reason):
    folder = hub_class_home(MALLORY) / ASSIGNMENT
    before = hub_class.exchange(MALLORY, "GET", f"/submissions/{hub_class.settings.course_id}/{ASSIGNMENT}/{MALLORY}")
    make(folder)
    try:
        done = hub_class.nbgrader(MALLORY, "submit", ASSIGNMENT)
        assert done.returncode != 0 and reason in done.stdout + done.stderr, done.stdout + done.stderr
    finally:
        for name in ("zero", "pipe", "big.bin"):
            (folder / name).unlink(missing_ok=True)
    after = hub_class.exchange(MALLORY, "GET", f"/submissions/{hub_class.settings.course_id}/{ASSIGNMENT}/{MALLORY}")
    assert after == before  # nothing was stored


def test_the_service_refuses_an_oversized_or_escaping_upload_sent_past_the_client(hub_class, submitted):
    course = hub_class.settings.course_id
    big = "A" * (4 * (65 * 2**20) // 3)  # 65 MiB once decoded
    status, answer = hub_class.exchange(MALLORY, "POST", f"/submission/{course}/{ASSIGNMENT}",
                                        {"files": json.dumps([{"path": "big.bin", "content": big}])})
    assert status == 413 and "the limit is 64 MiB" in answer["message"], (status, answer)
    for path in ("../../../etc/evil", "/etc/evil", "a/../../evil"):
        status, answer = hub_class.exchange(MALLORY, "POST", f"/submission/{course}/{ASSIGNMENT}",
                                            {"files": json.dumps([{"path": path, "content": "eA=="}])})
        assert status == 400 and answer["message"] == "Illegal path", (path, status, answer)


def test_the_round_trip_grades_each_student_and_each_reads_only_their_own_feedback(hub_class, submitted):
    collect(hub_class)
    done = ok(hub_class.run(INSTRUCTOR, str(hub_class.settings.venv / "bin" / "mha-workbook"), "grade",
                            "--course", str(hub_class.course), "--assignment", ASSIGNMENT, "--quiet",
                            "--student", ALICE, "--student", BOB))
    assert "graded 2, failed 0" in done.stdout, done.stdout
    with open(hub_class.course / "reports" / "grades.csv") as table:
        scores = {row["student"]: float(row["score"]) for row in csv.DictReader(table)}
    assert scores[ALICE] == points_of() and scores[BOB] == points_of("q1_1") > 0, scores
    ok(hub_class.nbgrader(INSTRUCTOR, "release_feedback", ASSIGNMENT))
    for name in (ALICE, BOB):
        ok(hub_class.nbgrader(name, "fetch_feedback", ASSIGNMENT))
        [page] = (hub_class_home(name) / ASSIGNMENT / "feedback").glob(f"*/{ASSIGNMENT}.html")
        text = page.read_text()
        assert f"{scores[name]:g}" in text and "BEGIN HIDDEN TESTS" not in text
    # Mallory has no feedback of her own (nothing of hers was graded) and none of anyone else's arrives.
    hub_class.nbgrader(MALLORY, "fetch_feedback", ASSIGNMENT)
    assert not list((hub_class_home(MALLORY) / ASSIGNMENT).glob("feedback/*/*.html"))
