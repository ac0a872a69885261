"""``mha-workbook hub up | stop | status | grades``: the class on one server (see ``hub.py``)."""

import json
import sys

from .roster import RosterError
from .settings import HubSettings


def _settings(args, **more):
    return HubSettings(root=args.root, prefix=args.prefix, **more)


def _loaded(args):
    """The settings of the hub in ``--root``; None, said on stderr, when there is none."""
    try:
        return HubSettings.load(args.root)
    except FileNotFoundError:
        print(f"no hub in {args.root}", file=sys.stderr)
        return None


def _up(args):
    from .hub import HubError, up

    try:
        lti = json.loads(open(args.lti).read()) if args.lti else {}
        settings = _settings(args, ip=args.ip, port=args.port, instructor=args.instructor, signup=args.signup,
                             demo_password=args.demo_password or "", cull_timeout=args.cull_timeout, lti=lti,
                             exchange_port=args.exchange_port,
                             submission_quota=args.quota * 2**20)
        up(settings, args.roster, args.due)
    except (HubError, RosterError, ValueError, OSError) as error:
        print(f"make hub: {error}", file=sys.stderr)
        return 2
    return 0


def _stop(args):
    from .hub import stop

    settings = _loaded(args)
    if settings is None:
        return 2
    print("stopped the hub; every file, grade and account stays" if stop(settings) else "the hub was not running")
    return 0


def _status(args):
    from .hub import running_pid

    try:
        settings = HubSettings.load(args.root)
    except FileNotFoundError:
        print(f"no hub in {args.root}")
        return 1
    pid = running_pid(settings)
    print(f"running (pid {pid}) on port {settings.port}, {len(settings.students)} students" if pid else "stopped")
    return 0 if pid else 1


def _grades(args):
    """Each student's score of an assignment, from the instructor's gradebook, to the LMS (``ags.py``)."""
    from . import accounts, ags, lti
    from ..report import read_results

    settings = _loaded(args)
    if settings is None:
        return 2
    if not settings.lti:
        print("the hub has no LTI settings (mha-workbook hub up --lti lti.json): no LMS to send grades to",
              file=sys.stderr)
        return 2
    course = args.course or accounts.home(settings.instructor) / "course"
    rows = [row for row in read_results(course).rows if row["assignment"] == args.assignment and row["status"] == "graded"]
    scores = {row["student"]: (row["score"], row["max_score"]) for row in rows}
    pending = {row["student"] for row in rows if row["needs_manual_grade"]}
    try:
        sent, missed = ags.send_grades(settings.lti, lti.read_launches(settings.path("lti", "launches.json")),
                                       lti.tool_key(settings), args.assignment, scores, pending)
    except ags.AGSError as error:
        print(f"hub grades: {error}", file=sys.stderr)
        return 2
    print(f"{args.assignment}: {len(sent)} grades sent to the LMS"
          + (f" ({len(pending & set(sent))} marked as waiting for manual grading)" if pending & set(sent) else ""))
    for student, reason in missed:
        print(f"  not sent for {student}: {reason}")
    return 0 if sent or not scores else 1


def _unlink(args):
    """The instructor's word that ``--student`` may sign in from another LMS account (lti.py)."""
    from . import lti

    settings = _loaded(args)
    if settings is None:
        return 2
    if args.student not in settings.students and args.student != settings.instructor:
        print(f"hub unlink: {args.student!r} is not on the roster (ids are compared exactly)", file=sys.stderr)
        return 2
    if lti.unlink(settings.path("lti", "launches.json"), args.student):
        print(f"{args.student}: no LMS account tied any more; their next launch from the LMS ties the one it comes from")
    else:
        print(f"{args.student}: no LMS account was tied (they never launched)")
    return 0


def usage_lines(url, token, course_id):
    """Each student's submissions on the exchange and what they hold, against the quota."""
    import json
    import urllib.error
    import urllib.request

    request = urllib.request.Request(f"{url.rstrip('/')}/usage/{course_id}",
                                     headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            answer = json.loads(response.read().decode())
    except urllib.error.HTTPError as error:
        answer = json.loads(error.read().decode() or "{}")
    if not answer.get("success"):
        raise ValueError(f"the exchange refused: {answer.get('message', 'no answer')}")
    quota = answer["quota"]
    lines = [f"{'student':<32} {'submissions':>11} {'MiB':>8} {'MiB left':>8}  (quota {quota / 2**20:.0f} MiB each)"]
    for row in answer["usage"]:
        lines.append(f"{row['student_id']:<32} {row['submissions']:>11} {row['bytes'] / 2**20:>8.1f} "
                     f"{max(0, quota - row['bytes']) / 2**20:>8.1f}")
    return lines


def _usage(args):
    """In the instructor's terminal, with their own token; as root, with the hub's course-admin token."""
    import os

    try:
        if os.environ.get("MHA_EXCHANGE_URL") and os.environ.get("JUPYTERHUB_API_TOKEN"):
            url, token = os.environ["MHA_EXCHANGE_URL"], os.environ["JUPYTERHUB_API_TOKEN"]
            course = os.environ.get("MHA_COURSE_ID", HubSettings().course_id)
        else:
            settings = HubSettings.load(args.root)
            url, course = settings.exchange_url, settings.course_id
            token = settings.path("secrets", "course_admin_token").read_text().strip()
        print("\n".join(usage_lines(url, token, course)))
    except (OSError, ValueError) as error:
        print(f"hub usage: {error}", file=sys.stderr)
        return 2
    return 0


def add_commands(commands):
    defaults = HubSettings()
    hub = commands.add_parser("hub", help="host the class on this server: JupyterHub, the exchange, the course")
    actions = hub.add_subparsers(dest="action", required=True)
    for name, run, text in (("up", _up, "start (or restart with a new roster) the class's hub"),
                            ("stop", _stop, "stop the hub and everyone's server; all data stays"),
                            ("status", _status, "is the hub running?"),
                            ("grades", _grades, "send an assignment's grades to the LMS (LTI Advantage AGS)"),
                            ("usage", _usage, "each student's submissions on the exchange, against the quota"),
                            ("unlink", _unlink, "let a student sign in from another LMS account (LTI)")):
        action = actions.add_parser(name, help=text)
        action.add_argument("--root", default=defaults.root, help=f"the hub's state (default {defaults.root})")
        action.add_argument("--prefix", default=defaults.prefix, help=f"its environments (default {defaults.prefix})")
        action.set_defaults(run=run)
        if name == "up":
            action.add_argument("--roster", required=True, help="CSV: id,first_name,last_name,email (id = login)")
            action.add_argument("--instructor", default=defaults.instructor, help="the instructor's login")
            action.add_argument("--port", type=int, default=defaults.port)
            action.add_argument("--exchange-port", type=int, default=0,
                                help="the exchange's port on 127.0.0.1 (default: a free one, chosen at the first "
                                     "`hub up` of this root and kept in its settings.json)")
            action.add_argument("--ip", default=defaults.ip, help="address to listen on (default: all)")
            action.add_argument("--signup", choices=["approve", "open"], default=defaults.signup,
                                help="approve: the instructor approves each signup (default); "
                                     "open: a roster id's first signup sets its password")
            action.add_argument("--demo-password", help="one shared password for everyone (demos only)")
            action.add_argument("--cull-timeout", type=int, default=defaults.cull_timeout,
                                help="seconds without activity before a server is stopped (default 3600)")
            action.add_argument("--quota", type=int, default=defaults.submission_quota // 2**20,
                                help="MiB each student's submissions may hold together on the exchange, every "
                                     f"one kept (default {defaults.submission_quota // 2**20})")
            action.add_argument("--due", help="CSV: assignment,duedate (e.g. 2026-12-08 17:00:00 UTC)")
            action.add_argument("--lti", help="JSON: sign-in from an LMS (LTI 1.3): issuer, client_id, authorize_url, "
                                              "jwks_endpoint, and token_endpoint for grades (docs/lms.md)")
        if name == "unlink":
            action.add_argument("--student", required=True, help="the roster id, exactly as the roster writes it")
        if name == "grades":
            action.add_argument("--assignment", required=True, help="the assignment whose grades are sent")
            action.add_argument("--course", help="the course (default: the instructor's ~/course)")
