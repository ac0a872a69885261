"""Each student's numbers in their home (``hub up`` with a course that has variants), and how the hub
writes into a home: as its user, so that a link the user made sends root nowhere."""

import json
import os
import subprocess
import sys

from autograders.hub import accounts, hub
from autograders.hub.settings import HubSettings
from autograders.variants import course as variants
from autograders.variants.levels import POOLS


def _write(files, replace):
    """The paths written by the writer given ``files`` ({path: text})."""
    done = subprocess.run([sys.executable, "-c", accounts._WRITE, "replace" if replace else "keep"],
                          input=json.dumps({str(p): t for p, t in files.items()}), text=True, capture_output=True, check=True)
    return [os.path.basename(p) for p in json.loads(done.stdout)]


def test_the_writer_writes_keeps_and_never_follows_a_link_at_the_target(tmp_path):
    target = tmp_path / "home" / ".mha-workbook" / "variants" / "level1.json"
    other = target.with_name("level2.json")
    assert _write({target: "one"}, replace=False) == ["level1.json"] and target.read_text() == "one"
    assert _write({target: "two", other: "2"}, replace=False) == ["level2.json"]  # the first kept
    assert target.read_text() == "one" and other.read_text() == "2"
    assert _write({target: "two", other: "3"}, replace=True) == ["level1.json", "level2.json"]
    assert target.read_text() == "two" and other.read_text() == "3"
    elsewhere = tmp_path / "elsewhere.txt"
    link = tmp_path / "home" / "START.md"
    link.symlink_to(elsewhere)  # dangling: exists() says False, lexists() True
    assert _write({link: "start"}, replace=False) == [] and not elsewhere.exists()
    assert _write({link: "start"}, replace=True) == ["START.md"] and not elsewhere.exists() and not link.is_symlink()
    assert link.read_text() == "start"


def _hub_course(tmp_path, monkeypatch, with_key):
    course = tmp_path / "course"
    course.mkdir()
    if with_key:
        variants.init(course)
    monkeypatch.setattr(hub, "course_dir", lambda settings: course)
    monkeypatch.setattr(hub, "log", lambda message: None)
    written, processes = {}, []

    def write_as(name, files, python, replace=False):
        processes.append(name)
        for relative, text in files.items():
            written.setdefault((name, relative), (json.loads(text), replace))
        return list(files)

    monkeypatch.setattr(accounts, "write_as", write_as)
    written["processes"] = processes
    return course, written


def test_a_course_without_variants_hands_out_nothing(tmp_path, monkeypatch):
    _, written = _hub_course(tmp_path, monkeypatch, with_key=False)
    assert hub.hand_out_numbers(HubSettings(), ["ada", "bo"]) == 0 and written == {"processes": []}


def test_each_student_gets_their_own_numbers_of_every_varied_assignment(tmp_path, monkeypatch):
    course, written = _hub_course(tmp_path, monkeypatch, with_key=True)
    settings = HubSettings()
    students = ["ada", "bo", "cy"]
    assert hub.hand_out_numbers(settings, students) == len(students) * len(POOLS)
    assert written.pop("processes") == students  # one writing process per student
    for assignment in POOLS:
        decided = variants.decide(course, settings.course_id, [(s, assignment) for s in students], students)
        for student in students:
            document, replace = written[(student, f".mha-workbook/variants/{assignment}.json")]
            assert document == decided[(student, assignment)] and document["student"] == student and replace
    firsts = {json.dumps(written[(s, f".mha-workbook/variants/{min(POOLS)}.json")][0]["numbers"]) for s in students}
    assert len(firsts) > 1, "three students, one set of numbers: the key does not vary them"
    assert os.stat(course / variants.KEY_FILE).st_mode & 0o077 == 0
