"""JupyterHub's configuration for a hosted class, from its HubSettings.

``hub/jupyterhub_config.py`` (copied into the hub's folder) calls ``configure``:

- the pure-Python ``configurable-http-proxy`` from PyPI as the proxy (no Node), with room
  for a class's requests at once (``proxy.py``);
- each person's JupyterLab spawned as their own system user (LocalProcessSpawner, with a
  umask of 0077 for students: ``spawner.py``), students with the students' tools from the
  students' environment (no answer, no check), the instructor with the Formgrader from the
  grader's (the whole workbook, which students cannot read);
- RosterAuthenticator (NativeAuthenticator on the roster), sign-in from an LMS (LTI 1.3,
  ``lti.py``) or a shared demo password;
- services: ngshare (the exchange), the idle culler, and ``course-admin``, the token the
  set-up uses to create the exchange's course and roster (kept in a root-only file);
- servers and the proxy outlive a restart of the hub, so a restart loses nobody's work.
"""

import pwd
from pathlib import Path

ADMIN_SERVICE = "course-admin"


def role_config_dir(settings, role):
    return str(Path(settings.prefix, "config", role))


def spawn_environment(settings, name):
    """The environment of ``name``'s JupyterLab (the instructor's or a student's)."""
    instructor = name == settings.instructor
    user = pwd.getpwnam(name)
    bin_dir = str(settings.venv_of(name) / "bin")
    environment = {
        "JUPYTER_CONFIG_DIR": role_config_dir(settings, "instructor" if instructor else "student"),
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",  # nbgrader runs alembic from PATH
        "MHA_EXCHANGE_URL": settings.exchange_url,
        "MHA_COURSE_ID": settings.course_id,
        "JUPYTER_RUNTIME_DIR": str(settings.runtime_dir(user.pw_uid)),
    }
    if instructor:
        environment["MHA_COURSE_ROOT"] = str(Path(user.pw_dir) / "course")
    return environment


def server_command(settings, name):
    """``name``'s single-user server: the students' environment's, or the grader's for the instructor."""
    return [str(settings.venv_of(name) / "bin" / "jupyterhub-singleuser")]


def umask_of(settings, name):
    """The umask of ``name``'s server and all it starts (``spawner.py`` says why)."""
    from .spawner import INSTRUCTOR_UMASK, STUDENT_UMASK

    return INSTRUCTOR_UMASK if name == settings.instructor else STUDENT_UMASK


def configure(c, settings):
    root, bin_dir = settings.path(), settings.venv / "bin"
    c.JupyterHub.ip = settings.ip
    c.JupyterHub.port = settings.port
    c.JupyterHub.hub_port = settings.hub_port
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{settings.proxy_api_port}"
    c.JupyterHub.db_url = f"sqlite:///{root / 'jupyterhub.sqlite'}"
    c.JupyterHub.cookie_secret_file = str(root / "jupyterhub_cookie_secret")
    c.JupyterHub.pid_file = str(root / "jupyterhub.pid")
    c.JupyterHub.cleanup_servers = False
    c.JupyterHub.cleanup_proxy = False
    c.ConfigurableHTTPProxy.command = [str(bin_dir / "python"), "-m", "autograders.hub.proxy"]  # the PyPI proxy
    c.ConfigurableHTTPProxy.pid_file = str(root / "proxy.pid")
    c.ConfigurableHTTPProxy.auth_token = settings.path("secrets", "proxy_token").read_text().strip()

    c.JupyterHub.spawner_class = "autograders.hub.spawner.ClassSpawner"
    c.Spawner.cmd = server_command(settings, "")  # a student's; pre_spawn gives each person theirs
    c.Spawner.notebook_dir = "~"
    c.Spawner.default_url = "/lab/tree/START.md"  # written into every home (jupyterhub-singleuser ignores LabApp's)
    c.Spawner.start_timeout = 120
    c.Spawner.http_timeout = 120

    def pre_spawn(spawner):
        spawner.cmd = server_command(settings, spawner.user.name)
        spawner.environment.update(spawn_environment(settings, spawner.user.name))
        spawner.umask = umask_of(settings, spawner.user.name)

    c.Spawner.pre_spawn_hook = pre_spawn

    c.Authenticator.admin_users = {settings.instructor}
    c.Authenticator.delete_invalid_users = True
    instructor_password = settings.path("secrets", "instructor_password")
    if settings.lti:
        from . import lti

        lti.configure(c, settings)
    elif settings.demo_password:
        c.JupyterHub.authenticator_class = "autograders.hub.auth.RosterSharedPassword"
        c.RosterSharedPassword.roster = set(settings.students)
        c.RosterSharedPassword.user_password = settings.demo_password
        c.RosterSharedPassword.admin_password = instructor_password.read_text().strip()
    else:
        c.JupyterHub.authenticator_class = "autograders.hub.auth.RosterAuthenticator"
        c.RosterAuthenticator.roster = set(settings.students)
        c.RosterAuthenticator.instructor_password_file = str(instructor_password)
        c.RosterAuthenticator.open_signup = settings.signup == "open"
        c.RosterAuthenticator.minimum_password_length = 8
        import nativeauthenticator

        c.JupyterHub.template_paths = [str(Path(nativeauthenticator.__file__).parent / "templates")]

    c.JupyterHub.services = [
        {
            "name": "ngshare",
            "url": f"http://127.0.0.1:{settings.exchange_port}",
            "command": [str(settings.exchange_venv / "bin" / "python"), str(root / "ngshare_service.py"),
                        "--database", f"sqlite:///{root / 'exchange' / 'ngshare.db'}",
                        "--storage", str(root / "exchange" / "files"),
                        "--admins", ADMIN_SERVICE,
                        "--limit", str(settings.submission_limit), "--quota", str(settings.submission_quota)],
            "oauth_no_confirm": True,
        },
        {
            "name": "idle-culler",
            "command": [str(bin_dir / "python"), "-m", "jupyterhub_idle_culler",
                        f"--timeout={settings.cull_timeout}", f"--cull-every={min(300, settings.cull_timeout // 2)}"],
        },
        {
            "name": ADMIN_SERVICE,
            "api_token": settings.path("secrets", "course_admin_token").read_text().strip(),
        },
    ]
    c.JupyterHub.load_roles = [
        {"name": "idle-culler", "services": ["idle-culler"],
         "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"]},
        {"name": ADMIN_SERVICE, "services": [ADMIN_SERVICE],
         "scopes": ["admin:users", "admin:servers", "tokens", "list:users", "read:users", "list:services",
                    "read:services"]},
        # Every signed-in person may reach the exchange (ngshare itself decides what they may do there).
        {"name": "user", "scopes": ["self", "access:services!service=ngshare"]},
    ]
