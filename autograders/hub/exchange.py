"""nbgrader's exchange on the hub: ngshare, a JupyterHub service, with two checks of ours.

ngshare (the exchange as a hub service) decides who a request comes from by the hub
token of the server that sends it, so nobody submits in another's name (nbgrader #1097);
it stamps each submission with its own clock (#1104); and it gives a student only their
own submissions and feedback (#978). The service side (``hub/ngshare_service.py``) also
refuses a submission over the size limit, and one that would take its student's submissions
(every one kept) past the quota; ``mha-workbook hub usage`` shows each student's.

On the student's side a submission is checked before it is sent: no symbolic links, no
devices, pipes or sockets (a link to ``/dev/zero`` would never finish uploading), and at
most SUBMISSION_LIMIT bytes; a refusal by the service fails the command (ngshare-exchange only logs
it, and `nbgrader submit` would exit 0). On the instructor's side a collected file is written only
inside the student's folder.
"""

import fnmatch
import getpass
import os
import stat
from pathlib import Path, PurePosixPath

from nbgrader.exchange import ExchangeError

os.environ.setdefault("USER", getpass.getuser())  # ngshare_exchange reads it at import, outside a hub's server
import ngshare_exchange  # noqa: E402

SUBMISSION_LIMIT = 64 * 2**20  # bytes; the service refuses more too


def submission_problems(folder, limit=SUBMISSION_LIMIT, ignored=lambda name: False):
    """What makes ``folder`` unfit to submit (one line each), or an empty list."""
    folder = Path(folder)
    problems, total = [], 0
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not ignored(d)]
        for name in dirnames + [f for f in filenames if not ignored(f)]:
            path = Path(dirpath) / name
            mode = os.lstat(path).st_mode
            where = path.relative_to(folder)
            if stat.S_ISLNK(mode):
                problems.append(f"{where}: a symbolic link (submit the file itself)")
            elif stat.S_ISREG(mode):
                total += os.lstat(path).st_size
            elif not stat.S_ISDIR(mode):
                problems.append(f"{where}: not a regular file (a device, pipe or socket)")
    if total > limit:
        problems.append(f"the submission is {total / 2**20:.1f} MiB; the limit is {limit / 2**20:.0f} MiB")
    return problems


def unsafe_path(path):
    """Whether a collected file's ``path`` could land outside the student's folder."""
    parts = PurePosixPath(path).parts
    return not parts or PurePosixPath(path).is_absolute() or any(p in ("", ".", "..") for p in parts) \
        or "\\" in path or "\0" in path


class ExchangeSubmit(ngshare_exchange.ExchangeSubmit):
    def copy_files(self):
        patterns = self.coursedir.ignore
        problems = submission_problems(self.src_path, ignored=lambda n: any(fnmatch.fnmatch(n, p) for p in patterns))
        if problems:
            for line in problems:
                self.log.error("Not submitted: %s", line)
            raise ExchangeError("Not submitted: " + "; ".join(problems))
        self.timestamp, self.refusal = None, None
        super().copy_files()
        if self.timestamp is None:  # ngshare_exchange logs the refusal and returns: `nbgrader submit` would exit 0
            raise ExchangeError("Not submitted: " + (self.refusal or "the exchange did not answer"))

    def _ngshare_api_check_error(self, response, url):
        try:
            answer = response.json()
            if not answer.get("success"):
                self.refusal = answer.get("message")
        except (ValueError, AttributeError):
            pass
        return super()._ngshare_api_check_error(response, url)


class ExchangeCollect(ngshare_exchange.ExchangeCollect):
    def do_copy(self, src, dest):
        bad = [f.get("path", "") for f in src if unsafe_path(f.get("path", ""))]
        if bad:
            self.log.error("Refused a submission to %s with unsafe paths: %s", dest, bad)
            return
        super().do_copy(src, dest)


def configure(c, url, course_id):
    """Point nbgrader's config ``c`` at the ngshare service at ``url``, with our checks."""
    ngshare_exchange.configureExchange(c, url)
    c.ExchangeFactory.submit = ExchangeSubmit
    c.ExchangeFactory.collect = ExchangeCollect
    c.CourseDirectory.course_id = course_id
