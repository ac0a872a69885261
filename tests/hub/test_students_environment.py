"""What a student's Python holds on the hub: the students' wheel, no answer, and no way into the grader's.

Alice, in her terminal (her server's environment and umask), imports every module of the workbook that
her environment holds and tries the grader's packages; she searches every file of it for what only the
grader keeps (the markers of solutions and hidden tests, every declared mistake's message, every line of
a solution); she tries to list, read and import the grader's environment. Her server is started by the
hub and runs from the students' environment; the instructor's from the grader's, where the whole
workbook imports (the control).
"""

import grp
import json
import os
import pwd
import re
import shutil
import stat
from pathlib import Path

from autograders.hub.accounts import GRADERS

from .conftest import INSTRUCTOR, PEOPLE, ok
from .test_exchange import solution_lines, write_as
from .test_lifecycle import start, stop

ALICE = PEOPLE + "alice"
GRADER_ONLY = ("autograders.checks", "autograders.problems", "autograders.intake", "autograders.grading",
               "autograders.report", "autograders.editions", "autograders.variants", "autograders.hub", "autograders.common")
MARKERS = ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden=True")
# No file of the workbook holds any of them; of the other packages, nbgrader's files only (listed by its own
# RECORD: its preprocessors find and strip the first two) hold the first two.
MARKERS_ALLOWED_IN = ("nbgrader",)

WALK = r"""
import importlib, importlib.metadata as md, json, pkgutil, sys
ours = md.distribution("mha-workbook-student")
tops = sorted({str(f).split("/")[0] for f in ours.files if str(f).endswith(".py") and "/" in str(f)})
imported, failed = [], {}
for top in tops:
    package = importlib.import_module(top)
    imported.append(top)
    for info in pkgutil.walk_packages(package.__path__, top + "."):
        try:
            importlib.import_module(info.name)
            imported.append(info.name)
        except Exception as error:
            failed[info.name] = f"{type(error).__name__}: {error}"
import autograders
refused = []
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except ImportError:
        refused.append(name)
try:
    md.distribution("mha-workbook")
    whole = True
except md.PackageNotFoundError:
    whole = False
ours_files = sorted(str(ours.locate_file(f)) for f in ours.files)
allowed = {}
for name in %r:
    dist = md.distribution(name)
    allowed[name] = sorted(str(dist.locate_file(f)) for f in dist.files)
print(json.dumps({"tops": tops, "imported": imported, "failed": failed, "refused": refused,
                  "autograders": sorted(m.name for m in pkgutil.iter_modules(autograders.__path__)),
                  "whole": whole, "prefix": sys.prefix, "allowed": allowed, "ours": ours_files}))
""" % (MARKERS_ALLOWED_IN,)


def as_alice(hub_class, *command, input=None):
    return hub_class.run(ALICE, *command, input=input)


def students_python(hub_class):
    return str(hub_class.settings.student_venv / "bin" / "python")


def walked(hub_class):
    done = ok(as_alice(hub_class, students_python(hub_class), "-c", WALK, *GRADER_ONLY))
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_student_imports_everything_of_the_workbook_in_her_environment_and_none_of_the_graders(hub_class):
    seen = walked(hub_class)
    assert seen["prefix"] == str(hub_class.settings.student_venv)
    assert seen["tops"] == ["autograders", "mha_core"] and not seen["whole"], seen["tops"]
    assert seen["failed"] == {}, seen["failed"]
    assert seen["autograders"] == ["student"], seen["autograders"]
    assert "autograders.student.exchange" in seen["imported"] and "mha_core" in seen["imported"]
    assert not any(name.startswith(GRADER_ONLY) for name in seen["imported"])
    assert seen["refused"] == list(GRADER_ONLY), seen["refused"]


def _messages():
    """Every fixed message a declared mistake gives (as tests/test_student_side.py lists them)."""
    from tests.test_student_side import _messages as messages

    return sorted(messages())


def _search(hub_class, patterns, folder):
    """The files under ``folder`` holding one of ``patterns`` (fixed strings, one a line), searched by Alice;
    grep's exit code, and what she could not read."""
    done = as_alice(hub_class, "grep", "-rlF", "-f", "-", str(folder), input="\n".join(patterns) + "\n")
    unreadable = [line for line in done.stderr.splitlines() if "Permission denied" in line]
    return sorted(done.stdout.split()), done.returncode, unreadable


def test_no_file_of_the_students_environment_holds_a_marker_a_mistakes_message_or_a_solution(hub_class):
    venv = hub_class.settings.student_venv
    messages, lines = _messages(), solution_lines()
    assert len(messages) > 20 and len(lines) > 40  # the search has something to look for
    one_line = [m for m in messages if "\n" not in m]  # grep's patterns are lines: a message's lines each
    patterns = sorted(set(one_line) | {part.strip() for m in messages if "\n" in m for part in m.splitlines()
                                       if len(part.strip()) > 20} | set(lines))
    found, code, unreadable = _search(hub_class, patterns, venv)
    assert unreadable == [], unreadable[:5]  # she read every file: nothing was searched past
    assert code == 1 and found == [], found[:10]

    found, code, unreadable = _search(hub_class, MARKERS, venv)
    assert unreadable == [] and code in (0, 1)
    seen = walked(hub_class)
    ours = [path for path in found if path in set(seen["ours"]) or "/site-packages/mha_workbook_ipc" in path]
    assert ours == [], f"a marker in the workbook's own files: {ours}"
    begun = _search(hub_class, MARKERS[:2], venv)[0]
    assert begun and set(begun) <= set(seen["allowed"]["nbgrader"]) | {p for p in begun if "/nbgrader/" in p and
                                                                        p.endswith(".pyc")}, begun[:10]
    # `hidden=True` is also an ordinary keyword argument of other libraries (prompt_toolkit's, wcwidth's):
    # outside the workbook's files and nbgrader's, it marks no test.

    # The control: the same searches find a source notebook's solutions and a declaration's messages.
    home = Path(pwd.getpwnam(ALICE).pw_dir)
    control = write_as(hub_class, ALICE, "control/level2.ipynb",
                       (Path(__file__).resolve().parents[2] / "notebooks" / "level2_application.ipynb").read_bytes())
    declaration = write_as(hub_class, ALICE, "control/level2.py",
                           (Path(__file__).resolve().parents[2] / "autograders" / "problems" / "level2.py").read_bytes())
    try:
        assert _search(hub_class, patterns, control.parent)[0] == sorted([str(control), str(declaration)])
        assert str(control) in _search(hub_class, MARKERS, control.parent)[0]
    finally:
        shutil.rmtree(home / "control")


def test_a_student_can_neither_list_nor_read_nor_import_the_graders_environment(hub_class):
    settings = hub_class.settings
    folder = settings.grader_dir
    mode = os.stat(folder)
    instructor = pwd.getpwnam(INSTRUCTOR)
    graders = grp.getgrnam(GRADERS)  # every hub's instructor (another hub on these environments keeps this one in)
    assert stat.S_IMODE(mode.st_mode) == 0o750 and mode.st_uid == 0 and mode.st_gid == graders.gr_gid
    assert INSTRUCTOR in graders.gr_mem
    alice = pwd.getpwnam(ALICE)
    assert alice.pw_gid != graders.gr_gid and ALICE not in graders.gr_mem

    purelib = ok(hub_class.run(INSTRUCTOR, str(settings.venv / "bin" / "python"), "-c",
                               "import sysconfig; print(sysconfig.get_paths()['purelib'])")).stdout.strip()
    for target in (folder, settings.venv, Path(purelib) / "autograders" / "problems",
                   Path(purelib) / "autograders" / "problems" / "level2.py"):
        done = as_alice(hub_class, "/bin/sh", "-c", f"ls -la '{target}' || cat '{target}'")
        assert done.returncode != 0 and "Permission denied" in done.stderr and not done.stdout, (target, done.stdout[:300])
    tried = as_alice(hub_class, "/usr/bin/env", f"PYTHONPATH={purelib}", students_python(hub_class), "-c",
                     "import autograders.problems")
    assert tried.returncode == 1 and "ModuleNotFoundError: No module named 'autograders.problems'" in tried.stderr, \
        tried.stderr[-500:]
    ran = as_alice(hub_class, str(settings.venv / "bin" / "python"), "-c", "print(1)")
    assert ran.returncode == 126 and "Permission denied" in ran.stderr, ran.stderr

    # The control: the instructor imports the whole workbook there.
    done = ok(hub_class.run(INSTRUCTOR, str(settings.venv / "bin" / "python"), "-c",
                            "import autograders.problems, autograders.grading; print('ok')"))
    assert done.stdout.strip() == "ok"


def _server_command(hub_class, name):
    """The command line of ``name``'s running single-user server."""
    uid = pwd.getpwnam(name).pw_uid
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            if proc.stat().st_uid != uid:
                continue
            argv = proc.joinpath("cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(re.search(rb"jupyterhub-singleuser$", part) for part in argv):
            return [part.decode() for part in argv if part]
    return None


def test_a_students_server_runs_from_the_students_environment_and_the_instructors_from_the_graders(hub_class):
    settings = hub_class.settings
    for name, venv in ((ALICE, settings.student_venv), (INSTRUCTOR, settings.venv)):
        start(hub_class, name)
        try:
            argv = _server_command(hub_class, name)
            assert argv and any(part == str(venv / "bin" / "jupyterhub-singleuser") for part in argv), argv
        finally:
            stop(hub_class, name)
