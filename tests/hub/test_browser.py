"""The round trip in Chromium: three students at once, each in a browser context of their own.

Ann answers everything right, Ben only Problem 1.1, Max is hostile: from a notebook cell in
his own Lab he tries every attack on Ann (tests/hub/attacks.py). They sign up with their
roster ids; the instructor approves them at /hub/authorize; each logs in (the hub spawns
their Lab as their system user), fetches the assignment in Nbgrader's Assignments panel,
answers, submits. The instructor collects and grades in their terminal and releases the
feedback; each student fetches it in the panel and reads their own page, and only theirs.
The instructor's Formgrader opens in a tab of its own and lists the assignments; the demo
runs in Voila inside the instructor's server. Screenshots: artifacts/screenshots/hub-*.png.
"""

import csv
import json
import os
import re
from pathlib import Path

import nbformat
import pytest

from . import attacks
from .conftest import ASSIGNMENT, INSTRUCTOR, PEOPLE, ROOT
from .test_exchange import NOTEBOOK, SOURCE, partly_answered, points_of

ANN, BEN, MAX = PEOPLE + "ann", PEOPLE + "ben", PEOPLE + "max"
PASSWORD = "a-long-class-password-42"
SCREENSHOTS = Path(os.environ.get("MHA_SCREENSHOTS", ROOT / "artifacts" / "screenshots"))
TIMEOUT = 180_000


def shot(page, name):
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"hub-{name}.png"))


class Person:
    """One person's browser context on the hub."""

    def __init__(self, browser, base, name, password=PASSWORD):
        self.base, self.name, self.password = base, name, password
        self.context = browser.new_context(viewport={"width": 1280, "height": 900})
        self.context.set_default_timeout(TIMEOUT)
        self.page = self.context.new_page()

    def url(self, path):
        return f"{self.base}{path}"

    def sign_up(self):
        page = self.page
        page.goto(self.url("/hub/signup"))
        page.fill("#username_input", self.name)
        if page.locator("#email_input").count():
            page.fill("#email_input", f"{self.name}@example.org")
        page.fill("#password_input", self.password)
        if page.locator("#password_confirmation_input").count():
            page.fill("#password_confirmation_input", self.password)
        page.locator("form [type=submit]").first.click()
        page.wait_for_load_state()
        return page.content()

    def log_in(self, wait=True):
        page = self.page
        page.goto(self.url("/hub/login"))
        page.fill("#username_input", self.name)
        page.fill("#password_input", self.password)
        page.locator("#login_submit").click()
        if wait:
            self.wait_for_lab()

    def wait_for_lab(self):
        self.page.wait_for_url(re.compile(f"/user/{self.name}/lab"), timeout=TIMEOUT)
        self.page.locator(".jp-LabShell").wait_for()

    def contents(self, method, path, body=None):
        """A call of the Jupyter contents API from the page, as Lab itself makes it."""
        return self.page.evaluate("""async ([url, method, body]) => {
            const xsrf = (document.cookie.match(/_xsrf=([^;]+)/) || [])[1] || '';
            const r = await fetch(url, {method, headers: {'X-XSRFToken': xsrf, 'Content-Type': 'application/json'},
                                         body: body === null ? undefined : JSON.stringify(body)});
            return [r.status, await r.text()];
        }""", [self.url(f"/user/{self.name}/api/contents/{path}"), method, body])

    def put_notebook(self, path, nb):
        status, text = self.contents("PUT", path, {"type": "notebook", "format": "json", "content": nb})
        assert status in (200, 201), text

    def menu(self, top, command):
        self.page.locator(".lm-MenuBar-item", has_text=re.compile(f"^{top}$")).click()
        self.page.locator(f"li.lm-Menu-item[data-command='{command}']").first.click()

    def assignments(self):
        self.menu("Nbgrader", "nbgrader:open-assignment-list")
        self.page.locator("#released_assignments_list").wait_for()
        return self.page

    def row(self, section):
        return self.page.locator(f"#{section}_assignments_list > .list_item", has_text=ASSIGNMENT).first

    def fetch(self):
        """Fetch the assignment as a student does, pressing Refresh again while the list stays hidden (seen once
        in a full run with three Labs starting at once: the Fetch button there but never shown for 3 minutes)."""
        from playwright.sync_api import TimeoutError as PlaywrightTimeout

        self.assignments()
        button = self.row("released").locator(".item_status button")
        for attempt in range(TIMEOUT // 30_000):
            self.page.locator("#refresh_assignments_list").click()
            try:
                button.wait_for(state="visible", timeout=30_000)
                break
            except PlaywrightTimeout:
                shot(self.page, f"fetch-hidden-{self.name}-{attempt}")
        button.click()
        self.row("fetched").wait_for()

    def submit(self):
        self.page.locator("#refresh_assignments_list").click()
        self.row("fetched").locator('.item_status button:text("Submit")').click()
        self.row("submitted").wait_for()

    def fetch_feedback(self):
        self.page.locator("#refresh_assignments_list").click()
        self.row("submitted").locator('button:text("Fetch Feedback")').click()
        self.page.wait_for_function("""name => fetch(`/user/${name}/api/contents/""" + ASSIGNMENT
                                    + """/feedback`).then(r => r.ok)""", arg=self.name, timeout=TIMEOUT)

    def feedback_url(self):
        status, text = self.contents("GET", f"{ASSIGNMENT}/feedback")
        assert status == 200, text
        [stamp] = [entry["name"] for entry in json.loads(text)["content"]]
        return self.url(f"/user/{self.name}/files/{ASSIGNMENT}/feedback/{stamp}/{ASSIGNMENT}.html")

    def run_notebook(self, path):
        page = self.page
        page.goto(self.url(f"/user/{self.name}/lab/tree/{path}"))
        page.locator(".jp-StatusBar-TextItem", has_text=re.compile(r"\(ipykernel\) \| Idle$")).wait_for()
        self.menu("Run", "runmenu:run-all")
        page.wait_for_function("""() => [...document.querySelectorAll('.jp-OutputArea-output')]
            .some(e => e.textContent.includes('{"'))""", timeout=TIMEOUT)
        return page.locator(".jp-OutputArea-output").all_text_contents()


@pytest.fixture
def people():
    """Everyone's browser context; on the way out, a screenshot of each page (for a failure's reader)."""
    made = []
    yield made
    for person in made:
        for number, page in enumerate(person.context.pages):
            try:
                shot(page, f"last-{person.name}-{number}")
            except Exception:  # a page already closed
                pass
        person.context.close()


def test_three_students_round_trip_in_chromium(hub_class, released, playwright_browser, people):
    chromium = playwright_browser
    base = f"http://127.0.0.1:{hub_class.settings.port}"
    teacher = Person(chromium, base, INSTRUCTOR, hub_class.settings.path("secrets", "instructor_password").read_text())
    students = {name: Person(chromium, base, name) for name in (ANN, BEN, MAX)}
    people.extend([teacher, *students.values()])

    # Sign-up: the students' wait for the instructor's approval. Nobody signs up as the
    # instructor (whoever did first would be an admin): the instructor has a password of the hub's.
    for person in students.values():
        assert "sent to the admin" in person.sign_up()
    impostor = Person(chromium, base, INSTRUCTOR)
    people.append(impostor)
    assert "Something went wrong" in impostor.sign_up()
    impostor.log_in(wait=False)
    impostor.page.wait_for_load_state()
    assert f"/user/{INSTRUCTOR}" not in impostor.page.url
    teacher.log_in()
    teacher.page.goto(teacher.url("/hub/authorize"))
    shot(teacher.page, "authorize")
    for name in students:
        row = teacher.page.locator("tr", has=teacher.page.get_by_text(name, exact=True))
        row.get_by_role("button", name="Authorize", exact=True).click()
        row.get_by_role("button", name="Unauthorize").wait_for()
    # A signup with an id off the roster is refused.
    stranger = Person(chromium, base, PEOPLE + "stranger")
    people.append(stranger)
    assert "Something went wrong" in stranger.sign_up()
    stranger.log_in(wait=False)
    stranger.page.wait_for_load_state()
    assert f"/user/{PEOPLE}stranger" not in stranger.page.url

    # All three log in at once: the hub spawns three Labs side by side.
    for person in students.values():
        person.page.goto(person.url("/hub/login"))
    for person in students.values():
        person.log_in(wait=False)
    for person in students.values():
        person.wait_for_lab()
        assert re.search(r"START\.md", person.page.url), person.page.url  # the start page
    shot(students[ANN].page, "student-start")
    menus = students[BEN].page.locator(".lm-MenuBar-item").all_text_contents()
    assert "Course" not in menus  # students' tools only

    for person in students.values():
        person.fetch()
    shot(students[BEN].page, "assignments-fetched")
    folder = f"{ASSIGNMENT}/{NOTEBOOK}"
    students[ANN].put_notebook(folder, json.loads(SOURCE.read_text()))
    status, text = students[BEN].contents("GET", folder)
    released_nb = nbformat.reads(json.dumps(json.loads(text)["content"]), as_version=4)
    students[BEN].put_notebook(folder, json.loads(nbformat.writes(partly_answered(released_nb))))

    # Max's notebook cell attacks Ann from his own kernel; everything is refused.
    attack = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        attacks.cell(hub_class.settings.course_id, ASSIGNMENT, ANN, INSTRUCTOR))])
    attack.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    students[MAX].put_notebook("attack.ipynb", json.loads(nbformat.writes(attack)))
    printed = "\n".join(students[MAX].run_notebook("attack.ipynb"))
    shot(students[MAX].page, "attack")
    verdicts = attacks.verdicts(printed)
    allowed = {k: v for k, v in verdicts.items() if v.startswith("ALLOWED")}
    assert not allowed, allowed
    assert len(verdicts) >= 14 and int(verdicts["the victim's processes seen"]) > 0, verdicts
    assert verdicts["a kernel's channels open to every account"] == "refused: transport ipc", verdicts

    for person in students.values():
        person.assignments()
        person.submit()
    shot(students[ANN].page, "submitted")

    # The instructor, in their terminal: collect, grade with the workbook's grader, release feedback.
    for command in (["collect", "--update", ASSIGNMENT],):
        done = hub_class.nbgrader(INSTRUCTOR, *command)
        assert done.returncode == 0, done.stdout + done.stderr
    done = hub_class.run(INSTRUCTOR, str(hub_class.settings.venv / "bin" / "mha-workbook"), "grade", "--course",
                         str(hub_class.course), "--assignment", ASSIGNMENT, "--quiet",
                         *sum((["--student", name] for name in students), []))
    assert "graded 3, failed 0" in done.stdout, done.stdout + done.stderr
    with open(hub_class.course / "reports" / "grades.csv") as table:
        scores = {row["student"]: float(row["score"]) for row in csv.DictReader(table) if row["student"] in students}
    assert scores == {ANN: points_of(), BEN: points_of("q1_1"), MAX: 0}, scores
    done = hub_class.nbgrader(INSTRUCTOR, "release_feedback", ASSIGNMENT)
    assert done.returncode == 0, done.stdout + done.stderr

    pages = {}
    for name, person in students.items():
        person.assignments()
        person.fetch_feedback()
        pages[name] = person.feedback_url()
        response = person.page.goto(pages[name])
        assert response.status == 200 and f"{scores[name]:g}" in person.page.content()
        shot(person.page, f"feedback-{name}")
    # Nobody opens another's page, even knowing its address.
    for intruder, victim in ((MAX, ANN), (BEN, ANN), (ANN, MAX)):
        response = students[intruder].page.goto(pages[victim])
        assert response.status in (403, 404) or "/hub/" in students[intruder].page.url, \
            (intruder, victim, response.status, students[intruder].page.url)
        assert "Hidden tests" not in students[intruder].page.content()

    # The instructor's Formgrader opens in a tab of its own and lists the assignments.
    teacher.page.goto(teacher.url(f"/user/{INSTRUCTOR}/lab"))
    teacher.wait_for_lab()
    with teacher.context.expect_page() as opened:
        teacher.menu("Course", "help:open")
    formgrader = opened.value
    formgrader.wait_for_load_state()
    formgrader.get_by_text(ASSIGNMENT).first.wait_for(timeout=TIMEOUT)
    assert f"/user/{INSTRUCTOR}/formgrader" in formgrader.url
    shot(formgrader, "formgrader")

    # The classroom demo, from the instructor's server, in Voila.
    demo = teacher.context.new_page()
    demo.goto(teacher.url(f"/user/{INSTRUCTOR}/voila/render/demo/classroom.ipynb"), timeout=TIMEOUT)
    demo.locator(".widget-slider, .jupyter-widgets.widget-slider").first.wait_for(timeout=TIMEOUT)
    shot(demo, "demo")
