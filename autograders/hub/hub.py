"""``mha-workbook hub up | stop | status``: a class on one Linux server.

``up`` checks everything it can before it changes anything (root, the roster, the
ports, a Python every user may run, the due dates, whether a student could read the
solutions: ``exposure.py``), closes what students could read of the solutions, then,
each step leaving what exists alone:

1. the environments in ``prefix``, whose kernels all use Unix sockets (``hub/site/``): the
   students' (``student/``: the students' wheel, no answer, no check), which every student's Lab
   runs from; the grader's (``grader/venv``: the whole workbook, in a folder only root and the
   instructor's group read), which the hub and the instructor's Lab run from; the exchange's own;
2. the configuration: everyone's Jupyter settings by role, the hub's config and secrets;
3. the accounts: the instructor and every roster student, each with a home of their own;
4. the instructor's course (``mha-workbook course``), every student in its gradebook,
   the due dates;
5. the hub (restarted if it runs: the servers and their kernels keep running), then the
   exchange's course and roster.
"""

import hashlib
import json
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

from ..common.inputs import InputError, read_csv
from . import accounts, exposure
from .roster import login_problem, read_roster
from .settings import SOCKET_PATH_MAX, HubSettings

REPO = Path(__file__).resolve().parents[2]
HUB_FILES = REPO / "hub"


class HubError(RuntimeError):
    """``hub up`` cannot go on; nothing (more) was changed."""


def log(message):
    print(message, flush=True)


# -- 0. before anything changes ------------------------------------------------------

def readable_by_all(path):
    """Whether every user can reach and read ``path`` (each folder above it searchable)."""
    path = Path(path).resolve()
    if not path.exists() or not os.stat(path).st_mode & 0o004:
        return False
    return all(os.stat(p).st_mode & 0o001 for p in path.parents)


def base_python():
    """A Python every user may run: the hub's students run their Lab from a venv made from it."""
    candidates = [Path(sys.base_prefix) / "bin" / f"python{sys.version_info.major}.{sys.version_info.minor}",
                  Path("/usr/bin/python3")]
    for python in candidates:
        if python.exists():
            prefix = subprocess.run([str(python), "-c", "import sys; print(sys.base_prefix)"],
                                    capture_output=True, text=True).stdout.strip()
            if readable_by_all(python) and prefix and readable_by_all(Path(prefix) / "lib"):
                return python
    raise HubError("no Python that every user may run: the students' servers cannot start. "
                   "Install one outside any private home (e.g. `apt-get install python3-venv`)")


def port_taken(port, host="127.0.0.1"):
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def running_pid(settings):
    """The pid of this hub's running JupyterHub, or None."""
    try:
        pid = int(settings.path("jupyterhub.pid").read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if b"jupyterhub" in cmdline else None


def free_loopback_port(avoid=()):
    """A TCP port free on 127.0.0.1 now, not one of ``avoid``."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in avoid:
            return port


def choose_exchange_port(settings):
    """Give ``settings`` its exchange's port when it has none (0): the one this root's hub recorded in its
    settings.json, while it is free or this hub's own; else a free one (two hubs on one machine never
    share it). ``up`` records it in settings.json."""
    if settings.exchange_port:
        return settings.exchange_port
    try:
        recorded = HubSettings.load(settings.root).exchange_port
    except (OSError, ValueError, TypeError):
        recorded = 0
    if recorded and (running_pid(settings) is not None or not port_taken(recorded)):
        settings.exchange_port = recorded
    else:
        settings.exchange_port = free_loopback_port(avoid={settings.port, settings.hub_port, settings.proxy_api_port})
    return settings.exchange_port


def preflight(settings, roster, clone=REPO):
    if os.geteuid() != 0:
        raise HubError("the hub needs root (it creates an account per student and starts each "
                       "student's Lab as that account): run it as root or with sudo")
    problem = login_problem(settings.instructor)
    if problem is None and accounts.foreign(settings.instructor):
        problem = f"{settings.instructor!r} is an existing system account that this hub did not create"
    if problem:
        raise HubError(f"instructor: {problem}")
    students = read_roster(roster, instructor=settings.instructor, foreign=accounts.foreign)
    ours = running_pid(settings) is not None
    choose_exchange_port(settings)
    for name, port in (("port", settings.port), ("port + 1 (the hub's API)", settings.hub_port),
                       ("port + 2 (the proxy's API)", settings.proxy_api_port),
                       ("exchange_port", settings.exchange_port)):
        if port_taken(port) and not ours:
            raise HubError(f"{name} {port} is taken by another program: choose another "
                           f"(make hub PORT=...) or stop that program; nothing was changed")
    longest = settings.longest_socket_path()
    if longest > SOCKET_PATH_MAX:
        raise HubError(f"prefix {settings.prefix!r} is too long: a kernel's socket under it would take "
                       f"{longest} bytes, more than a Unix socket's {SOCKET_PATH_MAX}; "
                       f"choose a shorter one; nothing was changed")
    python = base_python()
    try:
        openings = exposure.find(clone, course_dir(settings) if accounts.exists(settings.instructor) else None)
    except exposure.ExposureError as error:
        raise HubError(str(error)) from None
    return students, python, openings


# -- 1. environments ---------------------------------------------------------------

def _tree_digest(*paths):
    digest = hashlib.sha256()
    for root in paths:
        root = Path(root)
        for p in sorted([root] if root.is_file() else root.rglob("*")):
            if p.is_file() and "__pycache__" not in p.parts:
                digest.update(str(p.relative_to(REPO)).encode() + p.read_bytes())
    return digest.hexdigest()


def _venv(python, target, installs, stamp_text):
    """Make the venv ``target`` from ``python`` and run ``pip install`` with each of ``installs`` (lists of
    arguments) in turn, unless its stamp says it was made so already. True when it was (re)installed."""
    stamp = target / ".installed"
    if stamp.exists() and stamp.read_text() == stamp_text:
        return False
    log(f"installing {target} (a few minutes the first time)")
    if not (target / "bin" / "python").exists():
        subprocess.run([str(python), "-m", "venv", str(target)], check=True)
    pip = [str(target / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    for arguments in (["--upgrade", "pip"], *installs):  # a system venv's pip can be years old
        done = subprocess.run(pip + arguments, capture_output=True, text=True)
        if done.returncode:
            raise HubError(f"pip install {' '.join(arguments)} into {target} failed:\n{done.stderr[-3000:]}")
    stamp.write_text(stamp_text)
    return True


# What the students' environment is made of: the students' wheel's parts and how it is built, the hub's
# requirements (JupyterLab's server for the hub, nbgrader's exchange client, voila for the demo).
STUDENT_PARTS = ("mha_core", "autograders/__init__.py", "autograders/student", "autograders/editions/student_wheel.py",
                 "pyproject.toml", "hub/requirements.txt")
GRADER_PARTS = ("mha_core", "autograders", "pyproject.toml", "hub")


def close_grader_dir(settings):
    """The grader's folder (``HubSettings.grader_dir``): root's, mode 0750 in the group of every hub's
    instructors (:data:`accounts.GRADERS`, which no student joins) once the instructor's account exists
    (their server runs from it), 0700 before. What the hub runs as root and the grading sandbox binds
    (its folders on the way made searchable inside the sandbox only) read it through root's rights or
    the instructors'."""
    folder = settings.grader_dir
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    gid = accounts.ensure_grader(settings.instructor) if accounts.exists(settings.instructor) else None
    os.chown(folder, 0, 0 if gid is None else gid, follow_symlinks=False)
    folder.chmod(0o700 if gid is None else 0o750)


def install_students_environment(settings, python):
    """The students' environment: the hub's requirements and the students' wheel (built from this
    checkout; ``mha-workbook student-wheel``), reinstalled over an older one so that no file of it stays."""
    from ..editions import student_wheel

    stamp = _tree_digest(*(REPO / part for part in STUDENT_PARTS))
    if (settings.student_venv / ".installed").exists() and (settings.student_venv / ".installed").read_text() == stamp:
        return False
    with tempfile.TemporaryDirectory(prefix="mha-hub-wheel-") as out:
        wheel = student_wheel.build(out)
        return _venv(python, settings.student_venv,
                     [["-r", str(HUB_FILES / "requirements.txt"), str(wheel)],
                      ["--force-reinstall", "--no-deps", str(wheel)]],  # the same version: pip would keep the old
                     stamp)


def install_environments(settings, python):
    Path(settings.prefix).mkdir(parents=True, exist_ok=True)
    Path(settings.prefix).chmod(0o755)
    close_grader_dir(settings)
    _venv(python, settings.venv, [["-r", str(HUB_FILES / "requirements.txt"), f"{REPO}[demo]"]],
          _tree_digest(*(REPO / part for part in GRADER_PARTS)))
    install_students_environment(settings, python)
    reqs = HUB_FILES / "ngshare-requirements.txt"
    _venv(python, settings.exchange_venv, [["-r", str(reqs)]], hashlib.sha256(reqs.read_bytes()).hexdigest())
    for venv in (settings.venv, settings.student_venv):
        install_kernel_transport(venv)
    remove_shared_environment(settings)


def remove_shared_environment(settings):
    """A hub set up before the students' environment was split from the grader's ran everyone from
    ``<prefix>/venv``, which held the whole workbook where every account could read it: removed (a
    server started from it before this ``up`` must be restarted)."""
    old = Path(settings.prefix) / "venv"
    if (old / "pyvenv.cfg").is_file():
        shutil.rmtree(old)
        log(f"removed {old}, the environment everyone shared before (it held the answers): "
            "restart the servers started before this `hub up`")


def install_kernel_transport(venv):
    """Every kernel that anyone's process starts from ``venv`` uses Unix sockets in its user's runtime
    folder (``hub/site/mha_workbook_ipc.py`` says why and how): the Jupyter apps' configuration in the
    environment's ``etc/jupyter``, and the default for kernels started from Python in its site-packages."""
    site = HUB_FILES / "site"
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    purelib = subprocess.run([str(venv / "bin" / "python"), "-c", where], capture_output=True, text=True,
                             check=True).stdout.strip()
    etc = venv / "etc" / "jupyter"
    etc.mkdir(parents=True, exist_ok=True)
    for source, target in ((site / "jupyter_config.py", etc), (site / "mha_workbook_ipc.py", Path(purelib)),
                           (site / "mha_workbook_ipc.pth", Path(purelib))):
        shutil.copy(source, target / source.name)
        (target / source.name).chmod(0o644)


# -- 2. configuration ---------------------------------------------------------------

def _copy_tree(source, target):
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))


def write_configuration(settings):
    config = Path(settings.prefix, "config")
    student, instructor = config / "student", config / "instructor"
    _copy_tree(REPO / "lab", student)
    _copy_tree(HUB_FILES / "instructor", instructor)
    for role in (student, instructor):
        shutil.copy(HUB_FILES / "singleuser" / "nbgrader_config.py", role / "nbgrader_config.py")
        (role / "migrated").touch()  # else jupyter_core tries to write this marker into a folder users cannot write
    for p in [config, *config.rglob("*")]:
        p.chmod(0o755 if p.is_dir() else 0o644)

    root = settings.path()
    for folder in (root, root / "logs", root / "exchange"):
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o700)
    (root / "secrets").mkdir(mode=0o700, exist_ok=True)
    for name in ("proxy_token", "course_admin_token", "instructor_password"):
        secret = root / "secrets" / name
        if not secret.exists():
            secret.write_text(secrets.token_urlsafe(24) if name == "instructor_password" else secrets.token_hex(32))
            secret.chmod(0o600)
    shutil.copy(HUB_FILES / "jupyterhub_config.py", root / "jupyterhub_config.py")
    shutil.copy(HUB_FILES / "ngshare_service.py", root / "ngshare_service.py")
    settings.save()


# -- 3. accounts --------------------------------------------------------------------

def start_page(role):
    return (HUB_FILES / f"START-{role}.md").read_text()


def create_accounts(settings, students):
    accounts.ensure_group()
    people = [(settings.instructor, "Instructor", "instructor")] + [(s.id, s.full_name, "student") for s in students]
    created = []
    for name, full_name, role in people:
        if accounts.ensure_account(name, full_name):
            created.append(name)
    close_grader_dir(settings)  # the instructor's group, now that the account exists
    for name, full_name, role in people:
        accounts.place_file(name, "START.md", start_page(role), settings.venv_of(name) / "bin" / "python")
    make_runtime_dirs(settings, [name for name, _, _ in people])
    if created:
        log(f"created {len(created)} account(s): {', '.join(created)}")
    return created


def make_runtime_dirs(settings, names):
    """Each person's runtime folder (HubSettings.runtime_dir), theirs alone, in a folder of root's.
    Only the folder itself is given to them (not accounts.give, which walks a tree): root never
    walks what a student may have put in it."""
    parent = Path(settings.prefix, "run")
    parent.mkdir(exist_ok=True)
    os.chown(parent, 0, 0, follow_symlinks=False)
    parent.chmod(0o755)
    for name in names:
        user = pwd.getpwnam(name)
        folder = settings.runtime_dir(user.pw_uid)
        folder.mkdir(mode=0o700, exist_ok=True)
        os.chown(folder, user.pw_uid, user.pw_gid, follow_symlinks=False)
        folder.chmod(0o700)


# -- 4. the instructor's course -----------------------------------------------------

def as_user(settings, name, command, cwd=None, check=True):
    home = accounts.home(name)
    env = {"HOME": str(home), "USER": name, "LOGNAME": name, "LANG": "C.UTF-8",
           "PATH": f"{settings.venv_of(name) / 'bin'}:/usr/bin:/bin"}
    runuser = shutil.which("runuser", path="/usr/sbin:/sbin:/usr/bin") or "runuser"
    done = subprocess.run([runuser, "-u", name, "--", "env", "-i", *(f"{k}={v}" for k, v in env.items()), *command],
                          cwd=cwd or home, capture_output=True, text=True)
    if check and done.returncode:
        raise HubError(f"{' '.join(command[:3])} as {name} failed:\n{done.stdout}{done.stderr}")
    return done


def course_dir(settings):
    return accounts.home(settings.instructor) / "course"


def prepare_course(settings, roster, due=None):
    course = course_dir(settings)
    bin_dir = settings.venv / "bin"
    if not (course / "release").is_dir():
        log(f"creating the course in {course}")
        # The source notebooks (with the solutions) are handed over in a folder only the instructor reads.
        source = accounts.home(settings.instructor) / ".mha-source"
        shutil.rmtree(source, ignore_errors=True)
        shutil.copytree(REPO / "notebooks", source, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        source.chmod(0o700)
        accounts.give(source, settings.instructor)
        try:
            as_user(settings, settings.instructor, [str(bin_dir / "mha-workbook"), "course", "--course", str(course),
                                                    "--source", str(source)])
        finally:
            shutil.rmtree(source, ignore_errors=True)
    course.chmod(0o700)
    shared = Path(settings.prefix, "roster.csv")
    shutil.copy(roster, shared)
    shared.chmod(0o644)
    as_user(settings, settings.instructor, [str(bin_dir / "nbgrader"), "db", "student", "import", str(shared)], cwd=course)
    shared.unlink()
    for assignment, duedate in (due or {}).items():
        as_user(settings, settings.instructor, [str(bin_dir / "nbgrader"), "db", "assignment", "add", assignment,
                                                f"--duedate={duedate}"], cwd=course)
    demo = accounts.home(settings.instructor) / "demo"
    if not demo.exists():
        shutil.copytree(REPO / "demo", demo, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
        accounts.give(demo, settings.instructor)


def hand_out_numbers(settings, students):
    """When the course has variants (``mha-workbook variants init --course ~/course``), each student's own
    numbers in their home, ``~/.mha-workbook/variants/<assignment>.json``, where the locked cells under the
    varied problems read them. Written as the student; the grader decides the numbers again from the
    course key, never from these files. Returns how many files were written."""
    from ..variants import course as variants
    from ..variants.levels import POOLS

    course = course_dir(settings)
    if not variants.enabled(course):
        return 0
    decided = variants.decide(course, settings.course_id, [(s, a) for s in students for a in sorted(POOLS)], students)
    files = {student: {} for student in students}
    for (student, assignment), document in sorted(decided.items()):
        files[student][f".mha-workbook/variants/{assignment}.json"] = json.dumps(document, indent=1, sort_keys=True) + "\n"
    written = 0
    for student in students:  # one process per student, writing all their assignments' files
        written += len(accounts.write_as(student, files[student], settings.student_venv / "bin" / "python",
                                          replace=True))
    log(f"each student's numbers: {written} files in {len(students)} homes")
    return written


DUE_TODO = ("write one line per assignment under the header assignment,duedate "
            "(e.g. level1_recognition,2026-12-08 17:00:00 UTC)")


def read_due(path):
    """``assignment,duedate`` rows (e.g. ``level1_recognition,2026-12-08 17:00:00 UTC``); an InputError
    naming the line when the file is broken or a date is not one."""
    from dateutil.parser import parse

    if not path:
        return {}
    due = {}
    for line, row in read_csv(path, ("assignment", "duedate"), DUE_TODO, extra_ok=False):
        if not row["assignment"]:
            raise InputError(path, "no assignment", DUE_TODO, line)
        try:
            parse(row["duedate"])
        except (ValueError, OverflowError):
            raise InputError(path, f"duedate {row['duedate']!r} is not a date", DUE_TODO, line) from None
        due[row["assignment"]] = row["duedate"]
    return due


# -- 5. the hub ---------------------------------------------------------------------

def api(settings, method, path, data=None, service=""):
    """A call of the hub's REST API (or, with ``service``, a service's) as ``course-admin``."""
    token = settings.path("secrets", "course_admin_token").read_text().strip()
    base = settings.exchange_url.rstrip("/") if service == "ngshare" else f"http://127.0.0.1:{settings.port}/hub/api"
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    request = urllib.request.Request(base + path, data=body, method=method,
                                     headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
    except urllib.error.HTTPError as error:
        text = error.read().decode()
    return json.loads(text) if text.strip() else {}


def wait_for(check, what, timeout=90):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except (OSError, ValueError):
            pass
        time.sleep(0.5)
    raise HubError(f"{what} did not answer within {timeout} s")


def start_hub(settings):
    pid = running_pid(settings)
    if pid:
        log("restarting the hub (everyone's server keeps running)")
        os.kill(pid, signal.SIGTERM)
        # The proxy keeps running (and so the port): only the hub's own API port is freed.
        wait_for(lambda: running_pid(settings) is None and not port_taken(settings.hub_port), "the old hub's stop")
    logfile = open(settings.path("logs", "hub.log"), "ab")
    subprocess.Popen([str(settings.venv / "bin" / "jupyterhub"), "-f", str(settings.path("jupyterhub_config.py"))],
                     cwd=settings.path(), stdout=logfile, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                     start_new_session=True, env={"PATH": f"{settings.venv / 'bin'}:/usr/bin:/bin",
                                                  "LANG": "C.UTF-8", "HOME": settings.root})
    wait_for(lambda: "version" in api(settings, "GET", "/"), "the hub")
    wait_for(lambda: api(settings, "GET", "/courses", service="ngshare").get("success"), "the exchange")


def set_up_exchange(settings, students):
    course = settings.course_id
    if not any(c == course for c in api(settings, "GET", "/courses", service="ngshare").get("courses", [])):
        api(settings, "POST", f"/course/{course}", {"instructors": json.dumps([settings.instructor])}, "ngshare")
    api(settings, "POST", f"/instructor/{course}/{settings.instructor}",
        {"first_name": "", "last_name": "", "email": ""}, "ngshare")
    if students:
        listed = [{"username": s.id, "first_name": s.first_name, "last_name": s.last_name, "email": s.email}
                  for s in students]
        answer = api(settings, "POST", f"/students/{course}", {"students": json.dumps(listed)}, "ngshare")
        if not answer.get("success"):
            raise HubError(f"the exchange refused the roster: {answer.get('message')}")


def up(settings, roster, due=None, clone=REPO):
    """``clone``: the checkout whose solutions no student may read (None: not looked at)."""
    students, python, openings = preflight(settings, roster, clone)
    due_dates = read_due(due)
    exposure.close(openings, log)  # the last check done: now the first change
    settings.students = [s.id for s in students]
    install_environments(settings, python)
    write_configuration(settings)
    create_accounts(settings, students)
    prepare_course(settings, roster, due_dates)
    hand_out_numbers(settings, settings.students)
    start_hub(settings)
    set_up_exchange(settings, students)
    host = settings.ip or socket.gethostname()
    signin = (f"everyone signs in from the LMS {settings.lti['issuer']} (docs/lms.md)" if settings.lti else
              f"the instructor signs in as {settings.instructor} with the password in "
              f"{settings.path('secrets', 'instructor_password')}; students sign up at /hub/signup"
              + (" and are approved by the instructor at /hub/authorize" if settings.signup == "approve" else ""))
    log(f"the hub is up: http://{host}:{settings.port}/ (exchange on 127.0.0.1:{settings.exchange_port}; "
        f"{len(students)} students; "
        f"instructor: {settings.instructor}, course in {course_dir(settings)})\n{signin}")
    return students


def stop(settings):
    """Stop the hub, the proxy and everyone's server; every file, grade and account stays."""
    pid = running_pid(settings)
    if pid:
        for user in api(settings, "GET", "/users"):
            if user.get("servers"):
                api(settings, "DELETE", f"/users/{user['name']}/server")
        os.kill(pid, signal.SIGTERM)
        wait_for(lambda: running_pid(settings) is None, "the hub's stop")
    try:
        proxy = int(settings.path("proxy.pid").read_text())
        os.kill(proxy, signal.SIGTERM)
    except (OSError, ValueError):
        pass
    return pid is not None
