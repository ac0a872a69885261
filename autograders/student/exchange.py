"""The students' side of nbgrader's exchange on a hosted class, and the headless Validate.

On the hub a student's submission goes to ngshare (a JupyterHub service, ``autograders/hub/exchange.py``
says what it checks). Before it is sent it is checked here: no symbolic links, no devices, pipes or
sockets (a link to ``/dev/zero`` would never finish uploading), at most :data:`SUBMISSION_LIMIT` bytes;
a refusal by the service fails the command (ngshare-exchange only logs it, and `nbgrader submit` would
exit 0). The students' nbgrader configuration (``hub/singleuser/nbgrader_config.py``) calls
:func:`configure`; the instructor's adds the collecting side (:func:`autograders.hub.exchange.configure`).

ngshare-exchange (the hub's environments have it, hub/requirements.txt) is imported when the exchange is
configured, not with this module: it reads ``$USER`` at import and needs nbgrader's exchange.
"""

import fnmatch
import getpass
import os
import stat
from pathlib import Path

SUBMISSION_LIMIT = 64 * 2**20  # bytes; the service refuses more too

# The kernel arguments of a notebook executed headless (autograde, Validate): mha_core draws nothing
# there (mha_core.drawing(False), run before the first cell, binding no name).
HEADLESS_KERNEL_ARGUMENTS = ["--IPKernelApp.exec_lines=__import__('mha_core').drawing(False)"]


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


_SUBMIT = []


def submit_class():
    """ngshare-exchange's ExchangeSubmit with the checks above (made once, when first asked for)."""
    if _SUBMIT:
        return _SUBMIT[0]
    os.environ.setdefault("USER", getpass.getuser())  # ngshare_exchange reads it at import, outside a hub's server
    import ngshare_exchange
    from nbgrader.exchange import ExchangeError

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

    _SUBMIT.append(ExchangeSubmit)
    return ExchangeSubmit


def configure(c, url, course_id):
    """Point nbgrader's config ``c`` at the ngshare service at ``url`` (None: ngshare-exchange's own
    default), submitting through :func:`submit_class`, for the course ``course_id``."""
    submit = submit_class()
    import ngshare_exchange

    ngshare_exchange.configureExchange(c, url)
    c.ExchangeFactory.submit = submit
    c.CourseDirectory.course_id = course_id
