"""Chromium, a JupyterLab server and a Voila server for the browser tests and the benchmark.

Each server runs on a free loopback port in a directory of its own (its settings
and workspaces too, so nothing of the user's JupyterLab state is read or
written), and is stopped with its kernels afterwards. Chromium is the system's
(``apt-get install chromium``): Playwright's own browser downloads are not used.
"""

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
STUDENT_LAB = ROOT / "lab"  # the students' JupyterLab configuration (make lab's JUPYTER_CONFIG_DIR)
CHROMIUM = os.environ.get("MHA_CHROMIUM", "/usr/bin/chromium")
SKIP_MESSAGE = f"Chromium not found at {CHROMIUM}: browser tests skipped; apt-get install chromium"
# Without the background-networking flags Chromium's own connections are refused on a
# closed network and slow it down; --no-sandbox is needed as root (CI, containers).
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run", "--disable-quic", "--disable-dev-shm-usage",
]
START_TIMEOUT = 120  # seconds for a server to answer (a loaded 2-core machine)


def browser_missing():
    """Why the browser tests cannot run here (a message), or None when they can."""
    if not Path(CHROMIUM).exists():
        return SKIP_MESSAGE
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright for Python is not installed: browser tests skipped; pip install -e '.[test]'"
    return None


def launch(playwright):
    """The system Chromium, headless."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bindable(port):
    """True if nothing listens on, or lingers in TIME_WAIT on, ``port``."""
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def free_base_port(avoid=()):
    """A port p with p, p+1 and p+2 free (a hub's proxy, its API, the proxy's API), none in ``avoid``."""
    for _ in range(100):
        port = free_port()
        block = (port, port + 1, port + 2)
        if port < 65000 and not set(block) & set(avoid) and all(bindable(p) for p in block):
            return port
    raise RuntimeError("no three free ports in a row")


def run_async(coroutine):
    """``asyncio.run(coroutine)`` in a thread of its own: a session's Playwright (tests/conftest.py's
    ``chromium``) keeps an event loop running in the main thread, where ``asyncio.run`` refuses to start
    (a test that passed alone then failed after the browser's tests)."""
    import asyncio
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as thread:
        return thread.submit(asyncio.run, coroutine).result()


def hub_ports():
    """(port, exchange_port) for a hub under test: four free ports that do not overlap."""
    port = free_base_port()
    exchange_port = free_port()
    while exchange_port in (port, port + 1, port + 2) or not bindable(exchange_port):
        exchange_port = free_port()
    return port, exchange_port


def environment(home, **extra):
    """The environment of a server: this interpreter's bin/ first (nbgrader runs alembic),
    Jupyter's per-user state under ``home``, no BLAS thread pools fighting over 2 cores."""
    env = dict(os.environ) | extra
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env.update(
        JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        MPLBACKEND="Agg",
        PYTHONPATH=os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
    )
    env.setdefault("OPENBLAS_NUM_THREADS", "1")
    env.setdefault("OMP_NUM_THREADS", "1")
    return env


class Server:
    """A Jupyter server process (JupyterLab or Voila) on ``127.0.0.1:port``."""

    def __init__(self, args, cwd, home, ready_path, env=None, quiet=True):
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.home = Path(home)
        self.log_path = self.home / "server.log"
        self.ready_path = ready_path
        self.args = [arg.format(port=self.port, token=self.token) for arg in args]
        self.cwd = cwd
        self.env = env or {}
        self.quiet = quiet  # write user settings that keep news and update checks away
        self.process = None

    @property
    def base(self):
        return f"http://127.0.0.1:{self.port}"

    def start(self):
        if self.quiet:
            (self.home / "settings" / "@jupyterlab" / "apputils-extension").mkdir(parents=True, exist_ok=True)
            # No "fetch news?" toast, no update check: nothing pops over the notebook.
            (self.home / "settings" / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings").write_text(
                '{"fetchNews": "false", "checkForUpdates": false}'
            )
        log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", *self.args], cwd=self.cwd, env=environment(self.home, **self.env), stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.args[0]} exited with {self.process.returncode}:\n{self.log()}")
            try:
                with urllib.request.urlopen(self.url(self.ready_path), timeout=5) as response:
                    if response.status == 200:
                        return self
            except urllib.error.HTTPError:  # it answers: up (Voila has no cheap page that returns 200)
                return self
            except OSError:
                pass
            time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"{self.args[0]} did not answer within {START_TIMEOUT} s:\n{self.log()}")

    def url(self, path):
        sep = "&" if "?" in path else "?"
        return f"{self.base}/{path.lstrip('/')}{sep}token={self.token}"

    def log(self):
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""

    def stop(self):
        """Stop the server (SIGTERM to its process group: its kernels too), then wait."""
        if self.process is None or self.process.poll() is not None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        except ProcessLookupError:
            pass


def jupyterlab(root, home):
    """JupyterLab serving ``root`` as ``make lab`` serves ``workbook/``: configured by
    ``lab/`` alone (no news, the student's nbgrader tools, the start page), the user's
    settings and workspaces under ``home``. The server's working directory is ``root``
    (nbgrader's Validate reads an ``nbgrader_config.py`` there, as in a student's workbook/)."""
    args = [
        "jupyter", "lab", "--no-browser", "--allow-root", "--ip=127.0.0.1", "--port={port}",
        "--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}", "--ServerApp.open_browser=False",
    ]
    return Server(args, root, home, "api/status", env={"JUPYTER_CONFIG_DIR": str(STUDENT_LAB)}, quiet=False).start()


def voila(notebook, home, extra=()):
    """Voila serving the dashboard of ``notebook`` (the arguments of ``make demo``), no token."""
    notebook = Path(notebook)
    args = ["voila", str(notebook), "--no-browser", "--port={port}", "--Voila.ip=127.0.0.1",
            *VOILA_ARGS, *extra]
    return Server(args, notebook.parent, home, "api/no-such-page").start()  # not "/": that runs the notebook


# The dashboard's look: the lab template, light theme, no tracebacks shown to the room.
VOILA_ARGS = ["--theme=light", "--show_tracebacks=False"]


def copy_tree(source, target):
    shutil.copytree(source, target, dirs_exist_ok=True)
    return target
