"""A hosted class's settings, written once by ``mha-workbook hub up`` as ``settings.json``
in the hub's folder and read from there by everything else (the hub's config, the
course set-up, ``hub stop``, the tests).
"""

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

SIGNUPS = ("approve", "open")
# Sign-in from an LMS (LTI 1.3, autograders/hub/lti.py): what the platform's registration gives.
LTI_KEYS = {"issuer", "client_id", "deployment_id", "authorize_url", "jwks_endpoint"}
LTI_OPTIONAL = {"token_endpoint", "username_key"}
# A kernel's sockets are Unix sockets (lab/jupyter_server_config.py) named
# <runtime>/kernel-<36-character id>-ipc-<1..5>; such a path has at most 107 bytes.
SOCKET_PATH_MAX, KERNEL_SOCKET_NAME = 107, len("/kernel-") + 36 + len("-ipc-5")


@dataclass
class HubSettings:
    root: str = "/srv/mha-workbook"        # the hub's state: its database, secrets, logs, the exchange's files
    prefix: str = "/opt/mha-workbook"      # the environments: the students', the grader's (0750), the exchange's
    ip: str = ""                           # every interface: students reach the hub from their machines
    port: int = 8000
    exchange_port: int = 0                 # the ngshare service, on the loopback only; 0: a free one, chosen
                                           # by the first `hub up` of this root and kept in settings.json
    instructor: str = "instructor"
    students: list = field(default_factory=list)
    course_id: str = "mha-workbook"          # the course config's c.CourseDirectory.course_id
    signup: str = "approve"                # NativeAuthenticator: the instructor approves each signup
    demo_password: str = ""                # a shared password for everyone (demos only)
    cull_timeout: int = 3600               # seconds idle before a server is stopped
    submission_limit: int = 64 * 2**20     # bytes
    submission_quota: int = 200 * 2**20    # bytes: a student's submissions, all kept, together
    lti: dict = field(default_factory=dict)  # sign-in from an LMS (LTI_KEYS); empty: NativeAuthenticator

    def __post_init__(self):
        if self.signup not in SIGNUPS:
            raise ValueError(f"signup must be one of {', '.join(SIGNUPS)}, got {self.signup!r}")
        for name in ("port", "exchange_port"):
            if not 0 < getattr(self, name) < 65534 and not (name == "exchange_port" and self.exchange_port == 0):
                raise ValueError(f"{name} must be a TCP port (1-65533; the next two are the hub's too), got {getattr(self, name)}")
        if self.cull_timeout < 60:
            raise ValueError(f"cull_timeout must be at least 60 seconds, got {self.cull_timeout}")
        if self.submission_quota < self.submission_limit:
            raise ValueError(f"submission_quota ({self.submission_quota} bytes) must be at least submission_limit "
                             f"({self.submission_limit} bytes): else no student could submit once at the limit")
        if self.demo_password and len(self.demo_password) < 8:
            raise ValueError("demo_password must have at least 8 characters")
        missing, unknown = LTI_KEYS - set(self.lti), set(self.lti) - LTI_KEYS - LTI_OPTIONAL
        if self.lti and (missing or unknown):
            raise ValueError(f"the LTI settings need {', '.join(sorted(LTI_KEYS))} (and may have "
                             f"{', '.join(sorted(LTI_OPTIONAL))}); missing: {', '.join(sorted(missing)) or 'none'}; "
                             f"unknown: {', '.join(sorted(unknown)) or 'none'}")
        if self.lti:
            given = self.lti["deployment_id"]
            listed = [given] if isinstance(given, str) else given
            if not isinstance(listed, list) or not listed or not all(isinstance(d, str) and d for d in listed):
                raise ValueError(f"the LTI setting deployment_id must be the registration's deployment id (a "
                                 f"non-empty string, or a list of them), got {given!r}")

    @property
    def grader_dir(self):
        """The folder of the grader's environment: root's, readable by the instructor's group only
        (mode 0750), so that no student reads or imports what it holds."""
        return Path(self.prefix) / "grader"

    @property
    def venv(self):
        """The grader's environment: the whole workbook (the declarations with their answers, the checks,
        grading), for the hub itself and the instructor's server."""
        return self.grader_dir / "venv"

    @property
    def student_venv(self):
        """The students' environment: the students' wheel (``mha_core`` and ``autograders.student``: no
        answer, no check) with JupyterLab, nbgrader and the exchange's client, for every student's server."""
        return Path(self.prefix) / "student"

    def venv_of(self, name):
        """The environment ``name``'s server and terminal run from."""
        return self.venv if name == self.instructor else self.student_venv

    @property
    def exchange_venv(self):
        return Path(self.prefix) / "ngshare"

    def runtime_dir(self, uid):
        """The Jupyter runtime folder of the user ``uid``: their server's and kernels' connection files
        and their kernels' sockets, in a folder only root writes (``<prefix>/run``), theirs alone (0700).
        Not their home's ~/.local/share/jupyter/runtime: with a 32-character login, a socket's path
        there is longer than a Unix socket's limit."""
        return Path(self.prefix) / "run" / str(uid)

    def longest_socket_path(self):
        """Bytes in the longest path a kernel's socket may have under ``prefix`` (the largest uid)."""
        return len(str(self.runtime_dir(2**32 - 1)).encode()) + KERNEL_SOCKET_NAME

    @property
    def hub_port(self):
        """The hub's own API (the proxy forwards to it)."""
        return self.port + 1

    @property
    def proxy_api_port(self):
        return self.port + 2

    @property
    def exchange_url(self):
        return f"http://127.0.0.1:{self.exchange_port}/services/ngshare"

    def path(self, *parts):
        return Path(self.root, *parts)

    def save(self):
        self.path().mkdir(parents=True, exist_ok=True)
        target = self.path("settings.json")
        target.write_text(json.dumps(asdict(self), indent=2) + "\n")
        target.chmod(0o644)

    @classmethod
    def load(cls, root):
        data = json.loads(Path(root, "settings.json").read_text())
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})
