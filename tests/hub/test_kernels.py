"""Every kernel a person's process starts on the hub, listened to from another account: nothing received.

A kernel on TCP publishes every output on a port of 127.0.0.1 that any account may subscribe to.
Here Mallory (tests/hub/attacks.py, LISTEN) subscribes to every TCP port that Bob's or the
instructor's processes listen on, while they start kernels each way the hub allows: from their
terminal (``nbgrader validate``, ``jupyter execute``, ``nbconvert --execute``, ``jupyter run``,
nbclient from Python, ``mha-workbook grade``) and from their server (the Validate button, Voila).
Each kernel prints its owner's secret for two seconds. Mallory receives nothing; the same attack on a
kernel started with ``--transport=tcp`` receives the secret (the attack works when there is a hole).
"""

import json
import pwd
import shutil
import subprocess
import time
import urllib.parse
import urllib.request

import nbformat
import pytest

from . import attacks
from .conftest import ASSIGNMENT, INSTRUCTOR, PEOPLE, hub_terminal_environment, ok
from .test_exchange import SOURCE, hub_class_home, write_as
from .test_lifecycle import start

BOB, MALLORY = PEOPLE + "bob", PEOPLE + "mallory"
# The kernel notes its transport and where its sockets are (~/kernel.txt), then prints a secret for 2 s.
LEAK = """import getpass, json, os, time, ipykernel
info = json.load(open(ipykernel.get_connection_file()))
with open(os.path.expanduser("~/kernel.txt"), "a") as f:
    f.write(f"{info['transport']} {info['ip']}\\n")
for i in range(20):
    print("SECRET of", getpass.getuser(), i, flush=True)
    time.sleep(0.1)
"""


def leak_notebook():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(LEAK)])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    return nbformat.writes(nb).encode()


@pytest.fixture(scope="module")
def leaks(hub_class):
    for name in (BOB, INSTRUCTOR):
        write_as(hub_class, name, "leak.ipynb", leak_notebook())
        write_as(hub_class, name, "leak.py", LEAK.encode())
    return hub_class


def listened(hub_class, victim, action):
    """What Mallory receives from ``victim``'s TCP ports while ``action()`` runs; and its result."""
    hub_class_home(victim).joinpath("kernel.txt").unlink(missing_ok=True)
    settings = hub_class.settings
    environment = hub_terminal_environment(settings, MALLORY, hub_class.token(MALLORY))
    runuser = shutil.which("runuser", path="/usr/sbin:/sbin:/usr/bin")
    listener = subprocess.Popen(
        [runuser, "-u", MALLORY, "--", "env", "-i", *(f"{k}={v}" for k, v in environment.items()),
         str(settings.student_venv / "bin" / "python"), "-c", attacks.LISTEN, str(pwd.getpwnam(victim).pw_uid)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        cwd=str(hub_class_home(MALLORY)))
    assert listener.stdout.readline().strip() == "listening", listener.stderr.read()
    try:
        result = action()
    finally:
        time.sleep(0.5)
        out, err = listener.communicate("", timeout=60)
    assert listener.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1]), result


def in_terminal(hub_class, name, *command):
    return lambda: ok(hub_class.run(name, *command, timeout=300))


def terminal_commands(hub_class, name):
    bin_dir = hub_class.settings.venv_of(name) / "bin"
    return {
        "nbgrader validate": [bin_dir / "nbgrader", "validate", "leak.ipynb"],
        "jupyter execute": [bin_dir / "jupyter", "execute", "leak.ipynb"],
        "jupyter nbconvert --execute": [bin_dir / "jupyter", "nbconvert", "--to", "notebook", "--execute",
                                        "--stdout", "leak.ipynb"],
        "jupyter run": [bin_dir / "jupyter", "run", "leak.py"],
        "nbclient from Python": [bin_dir / "python", "-c", "import nbclient, nbformat; "
                                 "nbclient.NotebookClient(nbformat.read('leak.ipynb', 4)).execute()"],
    }


@pytest.mark.parametrize("victim", [BOB, INSTRUCTOR])
@pytest.mark.parametrize("how", ["nbgrader validate", "jupyter execute", "jupyter nbconvert --execute",
                                 "jupyter run", "nbclient from Python"])
def test_a_kernel_started_in_a_terminal_is_heard_by_nobody_else(leaks, victim, how):
    command = [str(part) for part in terminal_commands(leaks, victim)[how]]
    heard, done = listened(leaks, victim, in_terminal(leaks, victim, *command))
    assert heard["received"] == 0, heard
    assert kernels_seen(leaks, victim) == ["ipc"]


def kernels_seen(hub_class, name):
    """The transport of each kernel that ran the leak as ``name``; its sockets in their runtime folder."""
    runtime = str(hub_class.settings.runtime_dir(pwd.getpwnam(name).pw_uid)) + "/kernel-"
    lines = hub_class_home(name).joinpath("kernel.txt").read_text().split("\n")
    seen = [line.split() for line in lines if line]
    assert all(ip.startswith(runtime) for transport, ip in seen if transport == "ipc"), seen
    return [transport for transport, _ in seen]


def test_the_listener_hears_a_kernel_on_tcp(leaks):
    """The control: the same attack on a kernel started with TCP on purpose receives the secret."""
    jupyter = str(leaks.settings.student_venv / "bin" / "jupyter")
    heard, done = listened(leaks, BOB, in_terminal(leaks, BOB, jupyter, "run", "--transport=tcp", "leak.py"))
    assert heard["received"] > 0 and heard["secrets"] > 0, heard
    assert kernels_seen(leaks, BOB) == ["tcp"]


def test_the_graders_kernels_are_heard_by_nobody_else(leaks, released):
    """``mha-workbook grade`` in the instructor's terminal, grading a submission (Bob's as collected, or
    the source notebook in his folder when this file runs alone)."""
    submitted = leaks.course / "submitted" / BOB / ASSIGNMENT
    placed = not submitted.exists()
    if placed:
        submitted.mkdir(parents=True)
        shutil.copy(SOURCE, submitted / SOURCE.name)
        for path in (submitted.parent, submitted, submitted / SOURCE.name):
            shutil.chown(path, INSTRUCTOR, INSTRUCTOR)
    grade = [str(leaks.settings.venv / "bin" / "mha-workbook"), "grade", "--course", str(leaks.course),
             "--assignment", ASSIGNMENT, "--quiet", "--student", BOB]
    try:
        heard, done = listened(leaks, INSTRUCTOR, in_terminal(leaks, INSTRUCTOR, *grade))
    finally:
        if placed:
            forget_grading(leaks, BOB)
    assert "graded 1, failed 0" in done.stdout, done.stdout + done.stderr
    assert heard["received"] == 0, heard


def forget_grading(hub_class, name):
    """The course as it was before ``name``'s placed submission was graded: no submitted, autograded or
    feedback folder of theirs, nothing of theirs in the gradebook. (Left there, a later release_feedback
    sent feedback for a submission the exchange never had, and failed; a later test took the gradebook's
    entry for a round trip's.)"""
    for folder in ("submitted", "autograded", "feedback"):
        shutil.rmtree(hub_class.course / folder / name, ignore_errors=True)
    forget = ("from nbgrader.api import Gradebook\n"
              f"with Gradebook('sqlite:///{hub_class.course}/gradebook.db') as gradebook:\n"
              f"    gradebook.remove_submission({ASSIGNMENT!r}, {name!r})")
    ok(hub_class.run(INSTRUCTOR, str(hub_class.settings.venv / "bin" / "python"), "-c", forget))


def through_server(hub_class, name, method, path, data=None):
    url = f"http://127.0.0.1:{hub_class.settings.port}/user/{name}/{path}"
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    request = urllib.request.Request(url, data=body, method=method,
                                     headers={"Authorization": f"token {hub_class.token(name)}"})
    with urllib.request.urlopen(request, timeout=300) as response:
        return response.read().decode()


def test_the_validate_button_and_voila_are_heard_by_nobody_else(leaks):
    for name in (BOB, INSTRUCTOR):
        start(leaks, name)
    heard, answer = listened(leaks, BOB, lambda: json.loads(
        through_server(leaks, BOB, "POST", "assignments/validate", {"path": "leak.ipynb"})))
    assert answer["success"], answer
    assert heard["received"] == 0, heard
    assert kernels_seen(leaks, BOB) == ["ipc"]
    heard, page = listened(leaks, INSTRUCTOR, lambda: through_server(leaks, INSTRUCTOR, "GET",
                                                                      "voila/render/leak.ipynb"))
    assert "SECRET of" in page, page[-500:]
    assert heard["received"] == 0, heard
    assert kernels_seen(leaks, INSTRUCTOR) == ["ipc"]
