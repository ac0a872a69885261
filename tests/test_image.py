"""The single-user image (deploy/Dockerfile), built by `make image` and run with podman.

Not part of `make test` (which deselects the marker ``image``; CI runs `make test` only):
building the image takes minutes and needs podman and root. `make image-test` builds it and
runs these tests. Where podman is missing they are skipped, and the reason is printed.

What is tried: the image's JupyterLab starts (as jovyan, with the students' configuration), a
kernel starts through its REST API, a level runs top to bottom in it (every answer filled in:
the source notebook, mounted read-only into the container for the test only), the nbgrader
tools are the students' (the assignment list and Validate; no Formgrader, course list or
Create Assignment), and the image's file system holds no line of any solution or hidden test; every
layer of it (``podman save``: also what a later layer removed) holds no marker of a solution or hidden
test outside nbgrader's own code, no declared mistake's message, no wheel, and of ``autograders`` only
``student``.
"""

import json
import os
import re
import secrets
import shutil
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.browser.servers import free_port

pytestmark = [pytest.mark.image, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[1]
IMAGE = "mha-workbook-singleuser:0.1.0"
# These machines: crun refuses their hybrid cgroups, the default ulimits are refused, and
# podman's default bridge network is not to be used.
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager=cgroupfs"]
RUN = ["run", "--rm", "--network=host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"]
LEVEL = "level2_application"


def podman(*arguments, **kw):
    return subprocess.run(PODMAN + list(arguments), capture_output=True, text=True, **kw)


@pytest.fixture(scope="module")
def image():
    if shutil.which("podman") is None:
        pytest.skip("podman is not installed: `make image-test` needs it (apt-get install podman buildah runc)")
    if os.geteuid() != 0:
        pytest.skip("podman's storage of the image (`make image`) is root's: run `make image-test` as root")
    if podman("image", "exists", IMAGE).returncode:
        pytest.fail(f"no image {IMAGE}: build it first (`make image`)", pytrace=False)
    return IMAGE


def _get(url, token):
    request = urllib.request.Request(url, headers={"Authorization": f"token {token}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _post(url, token, body):
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": f"token {token}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.status, json.loads(response.read().decode())


@pytest.fixture(scope="module")
def lab(image):
    """(base URL, token) of the image's JupyterLab, started as its CMD's user with its environment."""
    port, token, name = free_port(), secrets.token_hex(16), f"mha-image-test-{secrets.token_hex(4)}"
    started = podman(*RUN, "-d", "--name", name, image, "jupyter", "lab", "--no-browser", "--ip=127.0.0.1",
                     f"--port={port}", f"--IdentityProvider.token={token}")
    assert started.returncode == 0, started.stderr
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if _get(f"{base}/api/status", token)[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(1)
        else:
            pytest.fail(f"the image's JupyterLab did not answer in 120 s:\n{podman('logs', name).stderr[-3000:]}")
        yield base, token, name
    finally:
        podman("rm", "-f", name)


def test_the_image_runs_as_jovyan_with_the_hub_command(image):
    done = podman(*RUN, image, "sh", "-c", "id -u; id -g; command -v jupyterhub-singleuser; "
                                           "jupyterhub-singleuser --version; echo $JUPYTER_CONFIG_DIR")
    assert done.returncode == 0, done.stderr
    uid, gid, command, version, config = done.stdout.split()
    assert (uid, gid) == ("1000", "100")
    assert command.endswith("/jupyterhub-singleuser") and version.startswith("5.5.")
    assert config == "/etc/jupyter/student"


def test_a_kernel_starts_and_runs_code(lab):
    """A kernel started by the server, as the Lab starts it: its output read over the server's websocket."""
    import websocket  # websocket-client, a dependency of jupyter_server

    base, token, _ = lab
    status, kernel = _post(f"{base}/api/kernels", token, {"name": "python3"})
    assert status == 201
    channel = websocket.create_connection(f"{base.replace('http', 'ws')}/api/kernels/{kernel['id']}/channels",
                                          header=[f"Authorization: token {token}"], timeout=60)
    try:
        msg_id = uuid.uuid4().hex
        channel.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test", "session": uuid.uuid4().hex,
                       "version": "5.3", "date": ""},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": "import mha_core, os; print(os.getuid(), mha_core.__name__, 6 * 7)", "silent": False,
                        "store_history": False, "user_expressions": {}, "allow_stdin": False}}))
        printed = ""
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and "42" not in printed:
            message = json.loads(channel.recv())
            if message.get("parent_header", {}).get("msg_id") == msg_id:
                if message["msg_type"] == "stream":
                    printed += message["content"]["text"]
                assert message["msg_type"] != "error", message["content"]
    finally:
        channel.close()
    assert printed.split() == ["1000", "mha_core", "42"]


def test_a_level_runs_top_to_bottom(lab, tmp_path):
    _, _, name = lab
    source = ROOT / "notebooks" / f"{LEVEL}.ipynb"
    podman("exec", "-u", "0", name, "mkdir", "-p", "/tmp/level")
    assert podman("cp", str(source), f"{name}:/tmp/level/{LEVEL}.ipynb").returncode == 0
    podman("exec", "-u", "0", name, "chown", "-R", "1000:100", "/tmp/level")
    done = podman("exec", "-w", "/tmp/level", name, "jupyter", "execute", "--output", "ran.ipynb", f"{LEVEL}.ipynb",
                  timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    ran = tmp_path / "ran.ipynb"
    assert podman("cp", f"{name}:/tmp/level/ran.ipynb", str(ran)).returncode == 0
    cells = [c for c in json.loads(ran.read_text())["cells"] if c["cell_type"] == "code"]
    assert cells and all(c.get("execution_count") for c in cells), "every code cell ran"
    errors = [o for c in cells for o in c.get("outputs", []) if o["output_type"] == "error"]
    assert not errors, errors[:1]


def test_the_tools_are_the_students(lab):
    base, token, _ = lab
    status, page = _get(f"{base}/lab", token)
    assert status == 200
    config = json.loads(page.split('id="jupyter-config-data" type="application/json">', 1)[1].split("</script>")[0])
    disabled = config.get("disabledExtensions", [])
    for plugin in ("@jupyter/nbgrader:formgrader", "@jupyter/nbgrader:create-assignment",
                   "@jupyter/nbgrader:course-list"):
        assert plugin in disabled, f"{plugin} is on in the students' Lab"
    assert not any(p.startswith("@jupyter/nbgrader:assignment-list") for p in disabled)
    assert not any(p.startswith("@jupyter/nbgrader:validate") for p in disabled)
    assert _get(f"{base}/formgrader", token)[0] == 404, "no Formgrader server extension"
    assert _get(f"{base}/nbgrader_version?version=0", token)[0] == 200, "the assignment list's handlers are there"


def _secret_lines():
    """Every line of a solution or hidden test in the source notebooks that appears in no file the
    image may hold (the library, the checks, the configuration): such a line in the image leaks."""
    public = "\n".join(p.read_text(errors="replace") for folder in ("mha_core", "autograders", "lab", "hub")
                       for p in (ROOT / folder).rglob("*") if p.is_file() and p.suffix in (".py", ".json", ".md", ".j2", ".html"))
    lines = set()
    for notebook in sorted((ROOT / "notebooks").glob("level*.ipynb")):
        for cell in json.loads(notebook.read_text())["cells"]:
            inside = False
            for line in "".join(cell["source"]).splitlines():
                if line.strip().startswith(("### BEGIN SOLUTION", "### BEGIN HIDDEN TESTS")):
                    inside = True
                elif line.strip().startswith(("### END SOLUTION", "### END HIDDEN TESTS")):
                    inside = False
                elif inside and len(line.strip()) >= 24 and line.strip() not in public:
                    lines.add(line.strip())
    return sorted(lines)


def test_the_image_holds_no_solution(image, tmp_path):
    lines = _secret_lines()
    assert len(lines) > 50, "the source notebooks' solutions give lines to look for"
    patterns = tmp_path / "patterns"
    patterns.write_text("\n".join(lines) + "\n")
    control = subprocess.run(["grep", "-rlF", "-f", str(patterns), str(ROOT / "notebooks")], capture_output=True, text=True)
    assert len(control.stdout.split()) >= 5, "the search finds them where they are"
    mounted = podman("image", "mount", image)
    assert mounted.returncode == 0, mounted.stderr
    top = mounted.stdout.strip()
    try:
        found = subprocess.run(["grep", "-rlF", "-f", str(patterns), top], capture_output=True, text=True)
        assert found.stdout == "", f"solutions in the image: {found.stdout[:2000]}"
        names = {p.name for p in (ROOT / "notebooks").glob("*.ipynb")}
        leaked = [str(p) for p in Path(top).rglob("*.ipynb") if p.name in names]
        assert leaked == [], leaked
        assert not (Path(top) / "home/jovyan/notebooks").exists()
    finally:
        podman("image", "unmount", image)


MARKERS = ("BEGIN SOLUTION", "BEGIN HIDDEN TESTS", "hidden=True")


def _messages():
    """Every fixed message a declared mistake gives (tests/test_student_side.py lists them so)."""
    from autograders.problems import LEVELS

    return sorted({mistake.says for module in LEVELS.values() for answer in module.ANSWERS
                   for mistake in answer.mistakes if isinstance(mistake.says, str) and len(mistake.says) > 20})


def _layers(image, where):
    """Each layer of ``image`` unpacked into its own folder under ``where`` (``podman save``, docker-archive:
    every layer as it was written, files a later layer removes included)."""
    import tarfile

    archive = where / "image.tar"
    saved = podman("save", "--format", "docker-archive", "-o", str(archive), image)
    assert saved.returncode == 0, saved.stderr
    with tarfile.open(archive) as outer:
        manifest = json.load(outer.extractfile("manifest.json"))
        layers = manifest[0]["Layers"]
        folders = []
        for index, name in enumerate(layers):
            folder = where / f"layer-{index}"
            folder.mkdir()
            with tarfile.open(fileobj=outer.extractfile(name)) as layer:
                members = [m for m in layer.getmembers() if m.isfile() or m.isdir()]
                for member in members:
                    member.mode = 0o755 if member.isdir() else 0o644
                layer.extractall(folder, members=members, filter="data")
            folders.append(folder)
    archive.unlink()
    return folders


def test_no_layer_of_the_image_holds_a_marker_a_mistakes_message_a_wheel_or_the_graders_side(image, tmp_path):
    """Every layer of the students' image, each file in it (also one a later layer removes): no marker of a
    solution or hidden test in the workbook's files, ``BEGIN SOLUTION`` and ``BEGIN HIDDEN TESTS`` in nbgrader's
    own code only (its preprocessors name them), no declared mistake's message, no wheel, and the workbook's
    ``autograders`` holds ``student`` only."""
    layers = _layers(image, tmp_path)
    assert len(layers) >= 3
    messages = _messages()
    patterns = tmp_path / "patterns"
    patterns.write_text("\n".join(sorted({part.strip() for m in messages for part in m.splitlines()
                                          if len(part.strip()) > 20})) + "\n")
    found = subprocess.run(["grep", "-rlF", "-f", str(patterns), *map(str, layers)], capture_output=True, text=True)
    assert found.returncode == 1 and found.stdout == "", f"a declared mistake's message in the image: {found.stdout[:2000]}"
    marked = subprocess.run(["grep", "-rlF", *(arg for m in MARKERS for arg in ("-e", m)), *map(str, layers)],
                            capture_output=True, text=True).stdout.split()
    ours = [path for path in marked if re.search(r"/site-packages/(autograders|mha_core|mha_workbook)", path)]
    assert ours == [], f"a marker in the workbook's files: {ours[:20]}"
    begun = subprocess.run(["grep", "-rlF", "-e", MARKERS[0], "-e", MARKERS[1], *map(str, layers)],
                           capture_output=True, text=True).stdout.split()
    outside = [path for path in begun if "/site-packages/nbgrader/" not in path]
    assert outside == [], f"a solution's or hidden test's marker outside nbgrader's code: {outside[:20]}"
    # `hidden=True` is also an ordinary keyword argument of other libraries (prompt_toolkit's): outside the
    # workbook's files it marks no test.
    wheels = [str(p) for layer in layers for p in layer.rglob("*.whl")]
    assert wheels == [], wheels
    packages = {p.name for layer in layers for p in layer.glob("usr/local/lib/python3*/site-packages/autograders/*")
                if p.is_dir() and p.name != "__pycache__"}
    assert packages == {"student"}, packages
    # The control: the same search finds the messages in the grader's declarations.
    control = subprocess.run(["grep", "-rlF", "-f", str(patterns), str(ROOT / "autograders" / "problems")],
                             capture_output=True, text=True)
    assert control.stdout.strip(), "the search finds the messages where they are"
