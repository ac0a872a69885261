"""The exchange's service: ngshare, started by JupyterHub, with the class's limits.

Runs in ngshare's own environment (ngshare 0.6 needs SQLAlchemy 1.4), so it imports
nothing of the workbook. Beside ngshare's own options it takes ``--limit BYTES`` and
``--quota BYTES``:

- a submission (or feedback) whose files hold more than the limit is refused with a message
  naming its size and the limit, before anything is stored;
- a student's submissions, all of them kept (the last one counts, the others are the audit
  trail), hold at most the quota together: one that would pass it is refused with a message
  naming the quota and what the student's submissions hold, before anything is stored (one over
  the limit is refused for that, whatever the student's submissions hold: the same upload gets the
  same answer whatever was submitted before it);
- ``GET usage/<course>`` (the course's instructors and the exchange's admins): each student's
  submissions and the bytes they hold, with the quota;
- requests larger than that (base64 and form encoding included) are cut off by the HTTP
  server itself, so a huge upload cannot fill the service's memory;
- the service listens on the loopback only (ngshare listens on every interface for
  Kubernetes; here the proxy and the students' servers are on this machine).
"""

import json
import sys

from tornado.httpserver import HTTPServer


def decoded_size(files_json):
    """Bytes held by ngshare's JSON list of base64 files, without decoding them."""
    total = 0
    for entry in json.loads(files_json):
        content = entry.get("content", "").replace("\n", "")
        total += len(content) * 3 // 4 - content[-2:].count("=")
    return total


def mib(size):
    return f"{size / 2**20:.1f} MiB"


def usage(db, student_id=None):
    """{student id: (submissions, bytes)} over every submission stored (of one student, or all)."""
    from ngshare.database import File, Submission
    from sqlalchemy import distinct, func

    query = db.query(Submission.student_id, func.count(distinct(Submission._id)),
                     func.coalesce(func.sum(File.size), 0)).outerjoin(Submission.files).group_by(Submission.student_id)
    if student_id is not None:
        query = query.filter(Submission.student_id == student_id)
    return {student: (count, int(size)) for student, count, size in query}


def with_quota(service, quota, limit=None):
    """Refuse a submission that would take its student past ``quota`` bytes; serve ``usage/<course>``.
    (ngshare's handlers are synchronous in one process: two submissions are never checked at once.)"""
    submit = service.SubmitAssignment.post

    def post(self, course_id, assignment_id):
        try:
            size = decoded_size(self.get_body_argument("files", None) or "[]")
        except (ValueError, TypeError, AttributeError):
            size = 0  # ngshare's own checks answer malformed input
        if self.user is not None and (limit is None or size <= limit):  # over the limit: refused for that
            count, used = usage(self.db, self.user.id).get(self.user.id, (0, 0))
            if used + size > quota:
                self.json_error(413, f"Submission refused: your {count} submission(s) hold {mib(used)} and this "
                                     f"one {mib(size)}; the quota is {quota / 2**20:.0f} MiB over all your "
                                     f"submissions (every one is kept): ask your instructor")
        return submit(self, course_id, assignment_id)

    service.SubmitAssignment.post = post

    class Usage(service.MyRequestHandler):
        """usage/<course_id>: each student of the course's submissions and bytes (instructors and admins)."""

        def get(self, course_id):
            course = self.find_course(course_id)
            self.check_course_instructor(course)
            used = usage(self.db)
            students = sorted(s.id for s in course.students)
            self.json_success(quota=quota, usage=[
                {"student_id": s, "submissions": used.get(s, (0, 0))[0], "bytes": used.get(s, (0, 0))[1]}
                for s in students])

    application = service.MyApplication.__init__

    def __init__(self, prefix, *args, **kwargs):
        application(self, prefix, *args, **kwargs)
        self.add_handlers(r".*", [(prefix + "usage/([^/]+)", Usage)])  # before ngshare's catch-all

    service.MyApplication.__init__ = __init__
    return service


def with_limit(limit):
    """Limit ngshare's uploads to ``limit`` bytes and its server to the loopback; returns the service module."""
    from ngshare import ngshare as service

    unpack = service.MyHelpers.json_files_unpack

    def json_files_unpack(self, json_str, target):
        if json_str is not None:
            try:
                size = decoded_size(json_str)
            except (ValueError, TypeError, AttributeError):
                size = 0  # ngshare's own checks answer malformed input
            if size > limit:
                self.json_error(413, f"Submission refused: it holds {size / 2**20:.1f} MiB, "
                                     f"the limit is {limit / 2**20:.0f} MiB")
        return unpack(self, json_str, target)

    service.MyHelpers.json_files_unpack = json_files_unpack

    class LimitedServer(HTTPServer):
        def initialize(self, *args, **kwargs):
            # base64 (4/3) and percent-encoding of its '+' and '/' (at most 3x): 2x plus 1 MiB is ample
            kwargs.update(max_body_size=2 * limit + 2**20, max_buffer_size=2 * limit + 2**20)
            super().initialize(*args, **kwargs)

        def listen(self, port, address="", **kwargs):
            super().listen(port, "127.0.0.1", **kwargs)

    service.HTTPServer = LimitedServer
    return service


def option(argv, name, default):
    """The value of ``name`` in ``argv`` (taken out of it), or ``default``."""
    if name not in argv:
        return default
    at = argv.index(name)
    value = int(argv[at + 1])
    del argv[at:at + 2]
    return value


def main(argv):
    argv = list(argv)
    limit = option(argv, "--limit", 64 * 2**20)
    quota = option(argv, "--quota", 200 * 2**20)
    with_quota(with_limit(limit), quota, limit).main(argv)


if __name__ == "__main__":
    main(sys.argv[1:])
