"""Before anything else, ``hub up`` makes sure no student can read the solutions: in the clone it runs
from (``notebooks/``, ``.git``) and in the instructor's course (``source/``, the gradebook,
``variants.key``). Tried with a clone in a folder every account may search (``/srv/<temporary>``) and a
real student account reading it with ``cat``: readable before, refused after, one line printed."""

import fcntl
import grp
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from autograders.hub import accounts, exposure, hub
from autograders.hub.roster import RosterError

from .test_hub_preflight import nothing_may_change, roster  # noqa: F401 (a fixture)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root: it creates a student account (mhax...)")

ROOT = Path(__file__).resolve().parents[1]
STUDENT = "mhaxpeek"
NOTEBOOK = "notebooks/level1_recognition.ipynb"


@pytest.fixture(scope="module")
def student():
    # One run at a time on this machine uses the account (two checkouts' test runs would remove it
    # under each other); its tests run on one worker (tests/conftest.py, FAST_SHARED).
    lock = open(os.path.join(tempfile.gettempdir(), f"mha-{STUDENT}.lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    accounts.ensure_group()
    if accounts.exists(STUDENT):
        accounts.remove_account(STUDENT)
    accounts.ensure_account(STUDENT)
    try:
        yield STUDENT
    finally:
        accounts.remove_account(STUDENT)
        lock.close()


@pytest.fixture
def open_folder():
    """A folder every account may search, as /srv and /opt are."""
    folder = Path(tempfile.mkdtemp(prefix="mha-exposure-", dir="/srv"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder)


def make_clone(where):
    clone = where / "clone"
    (clone / "notebooks").mkdir(parents=True)
    shutil.copy(ROOT / NOTEBOOK, clone / NOTEBOOK)
    (clone / ".git" / "objects" / "ab").mkdir(parents=True)
    (clone / ".git" / "objects" / "ab" / "cdef").write_bytes(b"x\x9c solutions, compressed")
    for path in [clone, *clone.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    return clone


def read_as(name, path):
    return subprocess.run(["runuser", "-u", name, "--", "cat", str(path)], capture_output=True, text=True)


def test_a_clone_in_an_open_folder_is_closed_with_one_line(student, open_folder, capsys):
    clone = make_clone(open_folder)
    assert read_as(student, clone / NOTEBOOK).returncode == 0  # the hole, as a student sees it
    openings = exposure.find(clone, None)
    exposure.close(openings)
    line = capsys.readouterr().out.strip()
    assert line == f"closed: chmod o-rwx {clone} (any student could read the solutions and hidden tests in " \
                   f"this clone, e.g. {clone / NOTEBOOK})", line
    for secret in (NOTEBOOK, ".git/objects/ab/cdef"):
        refused = read_as(student, clone / secret)
        assert refused.returncode != 0 and "Permission denied" in refused.stderr
    assert os.stat(clone).st_mode & 0o777 == 0o750  # the owner's and group's bits as they were
    assert exposure.find(clone, None) == []


def test_the_students_group_bits_are_closed_too(student, open_folder, capsys):
    clone = make_clone(open_folder)
    os.chown(clone, 0, grp.getgrnam(accounts.GROUP).gr_gid)
    clone.chmod(0o750)
    assert read_as(student, clone / NOTEBOOK).returncode == 0
    exposure.close(exposure.find(clone, None))
    assert capsys.readouterr().out.startswith(f"closed: chmod o-rwx,g-rwx {clone} ")
    assert read_as(student, clone / NOTEBOOK).returncode != 0 and os.stat(clone).st_mode & 0o777 == 0o700


def test_the_instructors_course_is_closed(student, open_folder, capsys):
    course = open_folder / "course"
    for name in ("source/level1_recognition", "release"):
        (course / name).mkdir(parents=True)
    (course / "gradebook.db").write_bytes(b"SQLite format 3\0")
    (course / "variants.key").write_text("secret\n")
    for path in [course, *course.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    assert read_as(student, course / "variants.key").returncode == 0
    exposure.close(exposure.find(None, course))
    assert capsys.readouterr().out.startswith(f"closed: chmod o-rwx {course} (any student could read the course's")
    for name in ("variants.key", "gradebook.db"):
        assert read_as(student, course / name).returncode != 0


def test_a_private_clone_is_left_as_it_is(student, open_folder):
    clone = make_clone(open_folder)
    (open_folder / "private").mkdir(mode=0o700)
    clone = clone.rename(open_folder / "private" / "clone")
    assert exposure.find(clone, None) == [] and os.stat(clone).st_mode & 0o777 == 0o755


def test_a_clone_on_a_read_only_file_system_is_refused_with_what_to_do(student, open_folder, monkeypatch):
    clone = make_clone(open_folder)

    class ReadOnly:
        f_flag = os.ST_RDONLY

    monkeypatch.setattr(exposure.os, "statvfs", lambda path: ReadOnly)
    with pytest.raises(exposure.ExposureError, match=r"read-only file system: move it into a folder only root "
                                                     r"reads, then run make hub again; nothing was changed"):
        exposure.find(clone, None)
    assert os.stat(clone).st_mode & 0o777 == 0o755


def test_hub_up_closes_the_clone_only_after_every_check(student, open_folder, nothing_may_change, tmp_path):
    clone = make_clone(open_folder)
    nothing_may_change.prefix = str(open_folder / "prefix")  # short enough for a kernel's socket; never made
    with pytest.raises(RosterError):  # a roster with errors: refused, the clone left as it was
        hub.up(nothing_may_change, roster(tmp_path, ["Not A Login"]), clone=clone)
    assert os.stat(clone).st_mode & 0o777 == 0o755
    with pytest.raises(AssertionError, match="went past its checks"):  # every check passed: closed, then on
        hub.up(nothing_may_change, roster(tmp_path, ["mhaqann"]), clone=clone)
    assert os.stat(clone).st_mode & 0o777 == 0o750
    assert read_as(student, clone / NOTEBOOK).returncode != 0
