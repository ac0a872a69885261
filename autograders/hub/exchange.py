"""nbgrader's exchange on the hub: ngshare, a JupyterHub service, with two checks of ours.

ngshare (the exchange as a hub service) decides who a request comes from by the hub
token of the server that sends it, so nobody submits in another's name (nbgrader #1097);
it stamps each submission with its own clock (#1104); and it gives a student only their
own submissions and feedback (#978). The service side (``hub/ngshare_service.py``) also
refuses a submission over the size limit, and one that would take its student's submissions
(every one kept) past the quota; ``mha-workbook hub usage`` shows each student's.

On the student's side a submission is checked before it is sent (``autograders/student/exchange.py``:
a student's environment holds that module, not this one). On the instructor's side a collected file is
written only inside the student's folder.
"""

import getpass
import os
from pathlib import PurePosixPath

# The students' side (what a student's environment has): the submission's checks, ExchangeSubmit.
from ..student.exchange import SUBMISSION_LIMIT, submission_problems, submit_class  # noqa: F401 (re-exported)
from ..student.exchange import configure as configure_submit

os.environ.setdefault("USER", getpass.getuser())  # ngshare_exchange reads it at import, outside a hub's server
import ngshare_exchange  # noqa: E402

ExchangeSubmit = submit_class()


def unsafe_path(path):
    """Whether a collected file's ``path`` could land outside the student's folder."""
    parts = PurePosixPath(path).parts
    return not parts or PurePosixPath(path).is_absolute() or any(p in ("", ".", "..") for p in parts) \
        or "\\" in path or "\0" in path


class ExchangeCollect(ngshare_exchange.ExchangeCollect):
    def do_copy(self, src, dest):
        bad = [f.get("path", "") for f in src if unsafe_path(f.get("path", ""))]
        if bad:
            self.log.error("Refused a submission to %s with unsafe paths: %s", dest, bad)
            return
        super().do_copy(src, dest)


def configure(c, url, course_id):
    """Point nbgrader's config ``c`` at the ngshare service at ``url``, with our checks (the students'
    side's, and the collecting side's)."""
    configure_submit(c, url, course_id)
    c.ExchangeFactory.collect = ExchangeCollect
