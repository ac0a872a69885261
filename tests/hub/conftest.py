"""A real class on this machine: ``mha-workbook hub up`` with system users, then the tests.

One hub for the session (its environments in ``$MHA_HUB_PREFIX``, default
``/opt/mha-workbook-test``, kept between runs; its state in a temporary folder), on free
loopback ports. Its people are system accounts named with the prefix ``mhat`` (or
``$MHA_HUB_PEOPLE``, four letters: two classes on one machine): the instructor ``mhatteach``
and the students of ROSTER. Accounts left by an earlier run that
died are removed first; every account, home and process of the class is removed after.

The tests need root (they create system users). Elsewhere they fail with that reason:
they are never skipped. Every test here is marked ``slow`` and ``hub``.
"""

import fcntl
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from autograders.hub import accounts, hub
from autograders.hub.settings import HubSettings

from ..browser.servers import hub_ports

ROOT = Path(__file__).resolve().parents[2]
PREFIX = os.environ.get("MHA_HUB_PREFIX", "/opt/mha-workbook-test")
PEOPLE = os.environ.get("MHA_HUB_PEOPLE", "mhat")
INSTRUCTOR = PEOPLE + "teach"
# From a terminal (test_exchange): Alice answers right, Bob partly, Mallory attacks. In Chromium
# (test_browser): Ann, Ben and Max the same. Carol leaves the roster (test_lifecycle). Quinn fills her
# quota (test_quota): the exchange keeps every submission for the whole session, so a student whose
# quota a test uses up is that test's alone (Mallory's was once, and a later test of hers got the
# quota's answer instead of the one it expected).
ROSTER = [(PEOPLE + "alice", "Alice", "Right"), (PEOPLE + "bob", "Bob", "Partly"),
          (PEOPLE + "mallory", "Mallory", "Hostile"), (PEOPLE + "ann", "Ann", "Right"), (PEOPLE + "ben", "Ben", "Partly"),
          (PEOPLE + "max", "Max", "Hostile"), (PEOPLE + "carol", "Carol", "Leaving"), (PEOPLE + "quinn", "Quinn", "Quota")]
ASSIGNMENT = "level1_recognition"


def pytest_configure(config):
    config.addinivalue_line("markers", "hub: a class hosted on this machine (JupyterHub, system users)")


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.hub)
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session", autouse=True)
def checkout_left_as_it_was():
    """`hub up` closes a clone that students could read (chmod o-rwx): a test must never do that to the
    checkout the tests run from (the grading sandbox's throwaway users read its packages)."""
    before = ROOT.stat().st_mode
    yield
    assert ROOT.stat().st_mode == before, f"a hub test changed {ROOT}'s mode: pass clone=None to hub.up"


def stop_hub(settings):
    """Stop a hub under test; when it did not start (or stop), kill what its pid files name."""
    try:
        hub.stop(settings)
    except Exception as error:  # the hub may not have started: still clean up
        print(f"hub stop: {error}")
    for pidfile in ("jupyterhub.pid", "proxy.pid"):
        try:
            os.kill(int(settings.path(pidfile).read_text()), signal.SIGKILL)
        except (OSError, ValueError):
            pass


def write_roster(path, people):
    path.write_text("id,first_name,last_name,email\n"
                    + "".join(f"{login},{first},{last},{login}@example.org\n" for login, first, last in people))
    return path


def remove_people():
    """Every account of ours with the test prefix: its processes, then the account and its home."""
    for name in sorted(n for n in accounts.members() if n.startswith(PEOPLE)):
        subprocess.run(["pkill", "-KILL", "-u", name], check=False)
        time.sleep(0.2)
        accounts.remove_account(name)


class Class:
    """The hosted class, and a way to act as each of its people."""

    def __init__(self, settings, roster):
        self.settings, self.roster = settings, roster
        self.tokens = {}

    @property
    def course(self):
        return accounts.home(INSTRUCTOR) / "course"

    def hub_api(self, method, path, data=None, token=None):
        """(status, JSON) of a hub REST call, as ``course-admin`` or with ``token``."""
        token = token or self.settings.path("secrets", "course_admin_token").read_text().strip()
        body = json.dumps(data).encode() if data is not None else None
        request = urllib.request.Request(f"http://127.0.0.1:{self.settings.port}/hub/api{path}", data=body,
                                         method=method, headers={"Authorization": f"token {token}"})
        return _send(request)

    def token(self, name):
        """A hub token of ``name``'s own, as their server has (the user is created in the hub if needed)."""
        if name not in self.tokens:
            self.hub_api("POST", f"/users/{name}")
            status, answer = self.hub_api("POST", f"/users/{name}/tokens", {"note": "tests"})
            assert status == 201, answer
            self.tokens[name] = answer["token"]
        return self.tokens[name]

    def exchange(self, name, method, path, data=None, params=None):
        """(status, JSON) of an ngshare call sent with ``name``'s token, as a hostile student would."""
        url = self.settings.exchange_url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        body = urllib.parse.urlencode(data).encode() if data is not None else None
        request = urllib.request.Request(url, data=body, method=method,
                                         headers={"Authorization": f"token {self.token(name)}"})
        return _send(request)

    def run(self, name, *command, cwd=None, timeout=600, input=None):
        """``command`` as ``name``, with the environment and umask of their Lab's terminal."""
        from autograders.hub.hubconfig import umask_of

        settings = self.settings
        environment = hub_terminal_environment(settings, name, self.token(name))
        runuser = shutil.which("runuser", path="/usr/sbin:/sbin:/usr/bin")
        return subprocess.run([runuser, "-u", name, "--", "env", "-i",
                               *(f"{k}={v}" for k, v in environment.items()), *command],
                              cwd=cwd or accounts.home(name), capture_output=True, text=True, timeout=timeout,
                              input=input, umask=umask_of(settings, name))

    def nbgrader(self, name, *arguments, cwd=None):
        return self.run(name, str(self.settings.venv_of(name) / "bin" / "nbgrader"), *arguments,
                        cwd=cwd or (self.course if name == INSTRUCTOR else None))


def hub_terminal_environment(settings, name, token):
    from autograders.hub.hubconfig import spawn_environment

    home = accounts.home(name)
    return {"HOME": str(home), "USER": name, "LOGNAME": name, "LANG": "C.UTF-8",
            "JUPYTERHUB_USER": name, "JUPYTERHUB_API_TOKEN": token, **spawn_environment(settings, name)}


def _send(request):
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            status, text = response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        status, text = error.code, error.read().decode()
    try:
        return status, json.loads(text) if text.strip() else {}
    except ValueError:
        return status, {"text": text}


def ok(done):
    """``done`` (a finished command), failing the test with its output unless it succeeded."""
    assert done.returncode == 0, done.stdout + done.stderr
    return done


@pytest.fixture(scope="session")
def released(hub_class):
    """The assignment, released to the exchange once for the session."""
    done = hub_class.nbgrader(INSTRUCTOR, "release_assignment", "--force", ASSIGNMENT)
    assert done.returncode == 0, done.stdout + done.stderr
    return ASSIGNMENT


@pytest.fixture(scope="session")
def hub_class():
    if os.geteuid() != 0:
        pytest.fail(f"the hub tests need root: they create system users (named {PEOPLE}...) and run a JupyterHub "
                    "that starts each user's Lab as that user", pytrace=False)
    # One class of these people on this machine at a time: every run's accounts have the same names.
    lock = open(os.path.join(tempfile.gettempdir(), f"mha-hub-tests-{PEOPLE}.lock"), "w")
    fcntl.flock(lock, fcntl.LOCK_EX)
    remove_people()
    state = Path(tempfile.mkdtemp(prefix="mha-hub-test-"))
    roster = write_roster(state.parent / f"{state.name}-roster.csv", ROSTER)
    port, exchange_port = hub_ports()
    settings = HubSettings(root=str(state / "hub"), prefix=PREFIX, ip="127.0.0.1", port=port,
                           exchange_port=exchange_port, instructor=INSTRUCTOR)
    try:
        # The checkout's own folder is left as the developer keeps it (tests/test_hub_exposure.py tries a
        # clone in a folder every account may search, as a student).
        hub.up(settings, roster, clone=None)
        yield Class(settings, roster)
    finally:
        stop_hub(settings)
        remove_people()
        log = settings.path("logs", "hub.log")
        if log.exists():  # for a failure's reader
            (ROOT / "artifacts").mkdir(exist_ok=True)
            shutil.copy(log, ROOT / "artifacts" / "hub.log")
        shutil.rmtree(state, ignore_errors=True)
        roster.unlink(missing_ok=True)
        lock.close()  # and with it the lock
