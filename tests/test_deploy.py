"""deploy/: the hosted class on Zero to JupyterHub, checked as far as it can be without
Docker or a cluster (deploy/README.md says what was and was not tried).

The files are parsed (the Helm values with PyYAML, the Dockerfile line by line, the
Python configs with traitlets) and checked against what the project promises: the image
the values pull is the one the Dockerfile documents; it is built from the wheel, not the
source notebooks; the exchange is the ngshare service the ngshare chart installs; the
culler is on; the resources follow deploy/capacity.json by the rule below; only
instructors get the Formgrader.

The resource rule (deploy/README.md, "Resources"):

- memory guarantee = memory_per_student_mib rounded up to a multiple of 16 MiB;
- memory limit = memory guarantee x memory_limit_factor;
- cpu guarantee = cpu_per_student rounded up to 0.01 of a core;
- cpu limit = cpu guarantee x cpu_limit_factor.
"""

import asyncio
import json
import math
import re
import shlex
import tempfile
import time
import tomllib
import urllib.request
import uuid
from decimal import ROUND_CEILING, Decimal
from pathlib import Path
from types import SimpleNamespace
from urllib.parse import urlsplit

import pytest
import yaml
from traitlets.config import Config
from traitlets.config.loader import PyFileConfigLoader

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"
INSTRUCTOR = ROOT / "hub" / "instructor"  # the instructor's configuration, the one-server hub's and the image's
DOCKERFILE = DEPLOY / "Dockerfile"
DOCKERIGNORE = DEPLOY / "Dockerfile.dockerignore"  # BuildKit's ignore file for deploy/Dockerfile

CULL_TIMEOUT = 3600  # an hour, the hosted class's promise
# The exchange's client: the same pin as the one-server hub's environment.
NGSHARE_EXCHANGE = next(line.strip() for line in (ROOT / "hub" / "requirements.txt").read_text().splitlines()
                        if line.startswith("ngshare-exchange=="))


# --- reading the files ---------------------------------------------------------------


def values():
    return yaml.safe_load((DEPLOY / "values.yaml").read_text())


def ngshare_values():
    return yaml.safe_load((DEPLOY / "ngshare-values.yaml").read_text())


def capacity():
    return json.loads((DEPLOY / "capacity.json").read_text())


def project_version():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def instructions(text=None):
    """The Dockerfile's instructions as (KEYWORD, argument text, stage index), comments
    dropped and continued lines joined."""
    text = DOCKERFILE.read_text() if text is None else text
    lines, current = [], ""
    for line in text.splitlines():
        if not current and (not line.strip() or line.lstrip().startswith("#")):
            continue
        if line.lstrip().startswith("#"):  # a comment inside a continued instruction
            continue
        if line.rstrip().endswith("\\"):
            current += line.rstrip()[:-1] + " "
            continue
        lines.append(current + line)
        current = ""
    result, stage = [], -1
    for line in lines:
        keyword, _, rest = line.strip().partition(" ")
        keyword = keyword.upper()
        if keyword == "FROM":
            stage += 1
        result.append((keyword, rest.strip(), stage))
    return result


def image_stages(target=None):
    """The indexes of the stages an image is built from: ``target``'s (a stage's name; None: the last
    stage, what a plain build makes) and those it is FROM, in order."""
    found = instructions()
    names = {}
    parents = {}
    for keyword, rest, stage in found:
        if keyword == "FROM":
            words = rest.split()
            parents[stage] = words[0]
            if len(words) == 3 and words[1].upper() == "AS":
                names[words[2]] = stage
    stage = max(parents) if target is None else names[target]
    chain = [stage]
    while parents[chain[0]] in names:
        chain.insert(0, names[parents[chain[0]]])
    return chain


def final_stage(target=None):
    """The instructions of the students' image (the last stage, with the stages it is built from), or of
    the stage ``target``."""
    chain = image_stages(target)
    return [(k, rest) for k, rest, stage in instructions() if stage in chain]


def copies(stage_filter=None):
    """(sources, destination, flags) of every COPY (or ADD)."""
    found = []
    for keyword, rest, stage in instructions():
        if keyword not in ("COPY", "ADD") or (stage_filter is not None and stage != stage_filter):
            continue
        words = shlex.split(rest)
        flags = [w for w in words if w.startswith("--")]
        paths = [w for w in words if not w.startswith("--")]
        found.append((paths[:-1], paths[-1], flags))
    return found


def env_of_image():
    env = {}
    for keyword, rest in final_stage():
        if keyword == "ENV":
            for word in shlex.split(rest):
                name, _, value = word.partition("=")
                env[name] = value
    return env


def documented_image():
    """(name, tag) from the Dockerfile's ``# Image: name:tag`` line."""
    match = re.search(r"^# Image: ([\w.-]+):([\w.-]+)$", DOCKERFILE.read_text(), flags=re.M)
    assert match, "deploy/Dockerfile documents no '# Image: name:tag' line"
    return match[1], match[2]


def labels():
    found = {}
    for keyword, rest in final_stage():
        if keyword == "LABEL":
            for word in shlex.split(rest):
                name, _, value = word.partition("=")
                found[name] = value
    return found


def pattern_regex(pattern):
    """A .dockerignore pattern as a regular expression (Go's filepath.Match with Docker's
    ``**``: ``*`` and ``?`` stop at a /, ``**`` crosses folders)."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + r"\Z")


def ignored(path, patterns):
    """Whether ``path`` (relative, with /) is left out of the build context: the last
    pattern matching the path or one of its parent folders decides (a folder left out
    takes its files with it); ``!`` puts back."""
    parts = path.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    decision = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        regex = pattern_regex(pattern.lstrip("!").strip("/"))
        if any(regex.match(prefix) for prefix in prefixes):
            decision = not negate
    return decision


def ignore_patterns():
    return [line.strip() for line in DOCKERIGNORE.read_text().splitlines()
            if line.strip() and not line.lstrip().startswith("#")]


def to_bytes(size):
    """JupyterHub's ByteSpecification: K, M, G, T are powers of 1024; a number is bytes."""
    if isinstance(size, (int, float)):
        return int(size)
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([KMGT])", str(size))
    assert match, f"not a JupyterHub size: {size!r}"
    return int(float(match[1]) * 1024 ** "KMGT".index(match[2]) * 1024)


def load_py_config(path):
    return PyFileConfigLoader(path.name, path=str(path.parent)).load_config()


def extra_config(name, env=None, custom=None):
    """Run the values' hub.extraConfig entry ``name`` as the chart does (exec'd in
    jupyterhub_config.py, where ``c`` and z2jh's ``get_config`` are defined), with its
    ngshare service registered as the chart registers hub.services; return ``c``."""
    v = values()
    c = Config()
    c.JupyterHub.services = [dict(service, name=key, api_token="generated-by-the-chart")
                             for key, service in v["hub"].get("services", {}).items()]

    def get_config(key, default=None):
        node = v
        for part in key.split("."):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return node

    namespace = {"c": c, "get_config": get_config}
    code = v["hub"]["extraConfig"][name]
    if env is not None:
        import os
        saved = dict(os.environ)
        os.environ.update(env)
        try:
            exec(code, namespace)
        finally:
            os.environ.clear()
            os.environ.update(saved)
    else:
        exec(code, namespace)
    return c


def resource_rule(figures):
    """What singleuser.memory and singleuser.cpu must be, from deploy/capacity.json."""
    memory = 16 * math.ceil(figures["memory_per_student_mib"] / 16)
    cpu = Decimal(str(figures["cpu_per_student"])).quantize(Decimal("0.01"), rounding=ROUND_CEILING)
    return {
        "memory": {"guarantee": memory * 2**20, "limit": memory * figures["memory_limit_factor"] * 2**20},
        "cpu": {"guarantee": float(cpu), "limit": float(cpu * Decimal(str(figures["cpu_limit_factor"])))},
    }


def ngshare_name():
    return ngshare_values().get("nameOverride") or "ngshare"  # the chart's name


def ngshare_service_host():
    nv = ngshare_values()
    assert nv.get("fullnameOverride"), "ngshare-values.yaml: set fullnameOverride, the Service's name"
    return nv["fullnameOverride"]


# --- the image -------------------------------------------------------------------------


def test_values_pull_the_image_the_dockerfile_documents():
    name, tag = documented_image()
    assert tag == project_version(), f"the image's tag {tag} is not the workbook's version {project_version()}"
    assert labels()["org.opencontainers.image.title"] == name
    assert labels()["org.opencontainers.image.version"] == tag
    image = values()["singleuser"]["image"]
    assert image["name"].rsplit("/", 1)[-1] == name, image
    assert str(image["tag"]) == tag, image
    readme = (DEPLOY / "README.md").read_text()
    assert f"-t {name}:{tag} ." in readme, "deploy/README.md does not build the documented image"


def test_image_runs_as_jovyan_uid_1000_as_the_values_say():
    useradd = [rest for keyword, rest in final_stage() if keyword == "RUN" and "useradd" in rest]
    assert useradd, "the image creates no user"
    words = shlex.split(useradd[0])
    assert words[-1] == "jovyan"
    uid, gid = int(words[words.index("--uid") + 1]), int(words[words.index("--gid") + 1])
    assert uid == 1000
    users = [rest for keyword, rest in final_stage() if keyword == "USER"]
    assert users and users[-1] in ("jovyan", str(uid)), "the image does not end as jovyan"
    single = values()["singleuser"]
    assert (single["uid"], single["fsGid"]) == (uid, gid)


def test_image_installs_the_workbook_from_its_wheel_and_the_pinned_exchange():
    build_stage = 0
    sources = {s.rstrip("/") for srcs, _, _ in copies(build_stage) for s in srcs}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    needed = {project["project"]["readme"], "pyproject.toml"}
    needed |= {package.split(".")[0] for package in project["tool"]["setuptools"]["packages"]}
    assert needed <= sources, f"the wheel's stage lacks {needed - sources}"
    assert any(k == "RUN" and "pip wheel" in rest for k, rest, stage in instructions() if stage == build_stage)
    installs = [rest for keyword, rest in final_stage() if keyword == "RUN" and "pip install" in rest]
    assert installs, "the image installs nothing"
    assert any(".whl" in rest for rest in installs), "the workbook is not installed from its wheel"
    assert not any(re.search(r"(^|\s)(-e|--editable)\s", rest) for rest in installs), "an editable install"
    assert any(NGSHARE_EXCHANGE in rest for rest in installs), f"{NGSHARE_EXCHANGE} not installed"
    for srcs, _, flags in copies():
        for source in srcs:
            top = source.strip("/").split("/")[0]
            assert top not in (".", "", "notebooks", "tests"), f"COPY {source}: the image would hold it"


def test_the_students_image_gets_the_students_wheel_and_no_layer_holds_a_wheel():
    """The students' image (the last stage) installs the students' wheel (mha_core and autograders.student:
    autograders/editions/student_wheel.py), the instructor's (stage ``instructor``) the whole workbook's;
    each wheel reaches its stage through a bind mount of the build stage, never a COPY (a layer would keep
    it, even after an ``rm``). tests/test_image.py reads the built image's layers."""
    found = instructions()
    build = [rest for keyword, rest, stage in found if stage == 0 and keyword == "RUN"]
    assert any("autograders/editions/student_wheel.py /wheels/student" in rest for rest in build), build
    assert not [c for c in copies() if any(f.startswith("--from") for f in c[2])], "a wheel copied into a layer"
    student, instructor = final_stage(), final_stage("instructor")
    installs = [rest for keyword, rest in student if keyword == "RUN" and "pip install" in rest]
    assert len(installs) == 1 and "--mount=type=bind,from=wheel,source=/wheels/student," in installs[0], installs
    assert "/wheels/grader" not in json.dumps(student), "the students' image gets the workbook's wheel"
    assert any("--mount=type=bind,from=wheel,source=/wheels/grader," in rest and "uninstall --yes mha-workbook-student" in rest
               for keyword, rest in instructor if keyword == "RUN")
    assert image_stages()[-1] != image_stages("instructor")[-1] and "instructor" not in DOCKERFILE.read_text().split(
        "AS student")[1], "the students' image is built from the instructor's"
    assert [rest for keyword, rest in student if keyword == "USER"][-1] == "1000"
    assert [rest for keyword, rest in instructor if keyword == "USER"][-1] == "1000"


def test_the_image_pins_the_charts_jupyterhub():
    chart = re.search(r"chart `jupyterhub` (\d+\.\d+\.\d+) \(JupyterHub (\d+\.\d+\.\d+)",
                      (DEPLOY / "values.yaml").read_text())
    assert chart, "values.yaml names no chart version"
    assert f"jupyterhub=={chart[2]}" in DOCKERFILE.read_text(), "the image's jupyterhub is not the hub's"
    assert f"--version {chart[1]}" in (DEPLOY / "README.md").read_text(), "README installs another chart"


def test_every_copy_source_exists_and_is_in_the_build_context():
    patterns = ignore_patterns()
    seen = 0
    for sources, _, flags in copies():
        if any(f.startswith("--from") for f in flags):
            continue
        for source in sources:
            path = ROOT / source
            assert path.exists(), f"COPY {source}: no such file in the repository"
            inside = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
            kept = [p for p in inside if not ignored(str(p.relative_to(ROOT)), patterns)]
            assert kept, f"COPY {source}: left out of the build context by {DOCKERIGNORE.name}"
            seen += 1
    assert seen >= 5


@pytest.mark.parametrize("path", [
    "notebooks/level1_recognition.ipynb", "tests/test_deploy.py", "tests/corpus/x.ipynb",
    ".git/HEAD", ".venv/bin/python", "course/gradebook.db", "workbook/START.md",
    "mha_core/__pycache__/attention.cpython-311.pyc", "autograders/__pycache__", "lab/migrated", "demo/classroom.ipynb",
])
def test_build_context_leaves_out_what_students_must_not_have(path):
    assert ignored(path, ignore_patterns()), f"{path} would be sent to the image's build"


def test_image_reads_the_students_config_and_the_exchange_config():
    env = env_of_image()
    destinations = {sources[0].rstrip("/"): dest.rstrip("/") for sources, dest, flags in copies()
                    if not flags and len(sources) == 1}
    assert env["JUPYTER_CONFIG_DIR"] == destinations["lab"], "the image's Jupyter config is not lab/"
    assert destinations["hub/singleuser/nbgrader_config.py"] == "/etc/jupyter/nbgrader_config.py"
    for name in ("JUPYTERLAB_SETTINGS_DIR", "JUPYTERLAB_WORKSPACES_DIR"):
        assert env[name].startswith("/home/jovyan/"), f"{name} must be writable by the student"
    exchange = (ROOT / "hub/singleuser/nbgrader_config.py").read_text()
    extra_env = values()["singleuser"]["extraEnv"]
    for name in ("MHA_EXCHANGE_URL", "MHA_COURSE_ID"):
        assert re.search(rf"environ(\.get\(|\[)\s*[\"']{name}[\"']", exchange), \
            f"the image's nbgrader_config.py does not read {name}, which values.yaml sets"
        assert name in extra_env
    from autograders.editions.editions import COURSE_ID
    assert extra_env["MHA_COURSE_ID"] == COURSE_ID


# --- the exchange ------------------------------------------------------------------------


def test_exchange_is_the_ngshare_service_of_the_ngshare_chart():
    v, nv, name = values(), ngshare_values(), ngshare_name()
    service = v["hub"]["services"][name]
    url = urlsplit(service["url"])
    assert (url.scheme, url.hostname, url.port) == ("http", ngshare_service_host(), nv["deployment"]["port"])
    assert not ({"api_token", "apiToken"} & set(service)), "a token in the values file"
    assert url._replace(path=f"/services/{name}").geturl() == v["singleuser"]["extraEnv"]["MHA_EXCHANGE_URL"]
    token = v["hub"]["extraEnv"]["NGSHARE_API_TOKEN"]["valueFrom"]["secretKeyRef"]
    assert token == {"name": f"{name}-token", "key": "token"}, "not the Secret ngshare's chart makes"
    assert not nv["ngshare"].get("hub_api_token"), "ngshare's token committed in ngshare-values.yaml"
    assert nv["ngshare"]["hub_api_url"] == "http://hub:8081/hub/api"


def test_the_hub_gives_the_service_the_token_from_ngshares_secret():
    c = extra_config("10-ngshare-token", env={"NGSHARE_API_TOKEN": "from-the-secret"})
    (service,) = [s for s in c.JupyterHub.services if s["name"] == ngshare_name()]
    assert service["api_token"] == "from-the-secret"


def test_students_pods_may_reach_ngshare_and_users_and_servers_may_use_it():
    v, nv, name = values(), ngshare_values(), ngshare_name()
    rules = v["singleuser"]["networkPolicy"]["egress"]
    assert any(
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": name}}} in rule["to"]
        and {"port": nv["deployment"]["port"], "protocol": "TCP"} in rule["ports"]
        for rule in rules
    ), "no egress from a student's pod to ngshare's"
    scope = f"access:services!service={name}"
    roles = v["hub"]["loadRoles"]
    assert scope in roles["user"]["scopes"] and "self" in roles["user"]["scopes"]
    server = roles["server"]["scopes"]
    assert scope in server  # ngshare-exchange shows ngshare the server's token
    assert {"users:activity!user", "access:servers!server"} <= set(server), "the server role lost its defaults"


# --- the culler and the resources --------------------------------------------------------


def test_idle_culler_stops_servers_idle_for_an_hour():
    cull = values()["cull"]
    assert cull["enabled"] is True
    assert cull["timeout"] == CULL_TIMEOUT
    assert not cull.get("users"), "culling users would delete them, not stop their servers"


def test_capacity_figures_are_documented():
    figures = capacity()
    assert "python -m benchmarks hub" in figures["source"], "capacity.json does not say where its figures come from"
    for key in ("memory_per_student_mib", "cpu_per_student", "memory_limit_factor", "cpu_limit_factor"):
        assert figures[key] > 0, key
    assert figures["memory_limit_factor"] >= 1 and figures["cpu_limit_factor"] >= 1


def test_student_resources_follow_the_measured_figures():
    expected = resource_rule(capacity())
    single = values()["singleuser"]
    got = {
        "memory": {k: to_bytes(single["memory"][k]) for k in ("guarantee", "limit")},
        "cpu": {k: float(single["cpu"][k]) for k in ("guarantee", "limit")},
    }
    mib = {k: v / 2**20 for k, v in expected["memory"].items()}
    assert got == expected, f"values.yaml singleuser should be memory {mib} MiB, cpu {expected['cpu']}"


# --- the Formgrader for instructors only ------------------------------------------------


FORMGRADER = "nbgrader.server_extensions.formgrader"


def test_students_config_has_no_formgrader_and_the_instructors_has():
    students = load_py_config(ROOT / "lab" / "jupyter_server_config.py").ServerApp.jpserver_extensions
    assert students[FORMGRADER] is False
    assert students["nbgrader.server_extensions.course_list"] is False
    page = json.loads((ROOT / "lab" / "labconfig" / "page_config.json").read_text())
    assert page["disabledExtensions"].get("@jupyter/nbgrader:formgrader") is True
    instructors = load_py_config(INSTRUCTOR / "jupyter_server_config.py").ServerApp.jpserver_extensions
    assert instructors[FORMGRADER] is True
    assert instructors["nbgrader.server_extensions.assignment_list"] is True
    page = json.loads((INSTRUCTOR / "labconfig" / "page_config.json").read_text())
    disabled = {name for name, off in page.get("disabledExtensions", {}).items() if off}
    assert disabled == {"@jupyter/nbgrader:formgrader"}, "only the Formgrader's in-Lab tab (blank under a hub) is off"


def test_everyones_kernels_speak_over_unix_sockets_not_tcp():
    """On a shared server a kernel's TCP ports are open to every account (tests/hub/attacks.py)."""
    for config in (ROOT / "lab" / "jupyter_server_config.py", INSTRUCTOR / "jupyter_server_config.py"):
        assert load_py_config(config).KernelManager.transport == "ipc", config
    runtime = values()["singleuser"]["extraEnv"]["JUPYTER_RUNTIME_DIR"]
    assert runtime.startswith("/tmp/"), "the sockets' folder belongs on the pod's own disk, not the home's volume"


def test_the_instructor_opens_the_formgrader_under_their_own_prefix(tmp_path, monkeypatch):
    """Course > Formgrader points at the server's own prefix, in a new tab, wherever the hub puts it."""
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/prof/")
    settings_dir = Path(load_py_config(INSTRUCTOR / "jupyter_server_config.py").LabApp.app_settings_dir)
    assert settings_dir.is_relative_to(tmp_path / "data"), "the rendered settings are not in the user's own folder"
    menus = json.loads((settings_dir / "overrides.json").read_text())["@jupyterlab/mainmenu-extension:plugin"]["menus"]
    (item,) = [i for menu in menus if menu["label"] == "Course" for i in menu["items"]]
    assert item["args"] == {"url": "/user/prof/formgrader", "text": "Formgrader", "newBrowserTab": True}


def test_only_instructors_servers_start_with_the_instructors_config():
    v = values()
    role = v["custom"]["instructors"]
    destinations = {sources[0].rstrip("/"): dest.rstrip("/") for sources, dest, flags in copies()
                    if not flags and len(sources) == 1}
    instructor_dir = destinations["hub/instructor"]
    assert role["environment"]["JUPYTER_CONFIG_DIR"] == instructor_dir
    assert env_of_image()["JUPYTER_CONFIG_DIR"] != instructor_dir
    assert "JUPYTER_CONFIG_DIR" not in v["singleuser"].get("extraEnv", {}), "set for every user"
    outside = yaml.safe_dump({key: part for key, part in v.items() if key != "custom"})
    assert instructor_dir not in outside, "the instructors' config given outside custom.instructors"

    c = extra_config("20-instructor-tools")
    hook = c.KubeSpawner.pre_spawn_hook
    shared = {"MHA_EXAMPLE": "1"}  # the configured environment, one dict for every spawner

    def spawner(*groups):
        return SimpleNamespace(user=SimpleNamespace(groups=[SimpleNamespace(name=g) for g in groups]),
                               environment=shared, mem_guarantee="224M", mem_limit="448M",
                               cpu_guarantee=0.05, cpu_limit=1.0)

    teacher = spawner("staff", role["group"])
    hook(teacher)
    assert teacher.environment["JUPYTER_CONFIG_DIR"] == instructor_dir
    assert teacher.image == role["image"] == f"mha-workbook-instructor:{project_version()}"
    assert (teacher.mem_limit, teacher.cpu_limit) == (role["memory"]["limit"], role["cpu"]["limit"])
    student = spawner("students")
    hook(student)
    assert "JUPYTER_CONFIG_DIR" not in student.environment, "a student got the instructors' config"
    assert not hasattr(student, "image"), "a student got the instructors' image"
    assert shared == {"MHA_EXAMPLE": "1"}, "the instructor's environment leaked into the shared one"
    assert (student.mem_limit, student.cpu_limit) == ("448M", 1.0)

    members = v["hub"]["config"]["JupyterHub"]["load_groups"][role["group"]]["users"]
    assert members and set(members) <= set(ngshare_values()["ngshare"]["admins"]), \
        "an instructor who cannot create the course in ngshare"


@pytest.mark.parametrize("prefix, url", [("/user/prof/", "/user/prof/formgrader"), ("/", "/formgrader"),
                                         ("", "/formgrader"), ("/hub/x", "/hub/x/formgrader")])
def test_formgrader_url_follows_the_prefix(prefix, url):
    from autograders.hub.labsettings import formgrader_url

    assert formgrader_url(prefix) == url


def test_a_prefix_that_is_not_a_path_is_refused_by_name():
    from autograders.hub.labsettings import formgrader_url

    with pytest.raises(ValueError, match="prefix must be a URL path"):
        formgrader_url("user/prof/")


def _students_lab_kernel_answers(home):
    """Start the students' JupyterLab (lab/, as ``make lab``) with its runtime folder in ``home``, start a
    kernel and ask it, as JupyterLab does (its websocket), for its kernel_info; return the reply's status
    (None without a reply in 60 s) and the server's log."""
    from tornado.websocket import websocket_connect

    from tests.browser import servers

    server = servers.jupyterlab(home, home)

    async def ask(kernel):
        url = server.url(f"api/kernels/{kernel}/channels").replace("http://", "ws://")
        socket = await websocket_connect(url)
        header = {"msg_id": uuid.uuid4().hex, "msg_type": "kernel_info_request", "session": uuid.uuid4().hex,
                  "username": "", "date": "", "version": "5.3"}
        socket.write_message(json.dumps({"header": header, "parent_header": {}, "metadata": {}, "content": {},
                                          "channel": "shell"}))
        while True:
            message = json.loads(await socket.read_message())
            if message["msg_type"] == "kernel_info_reply":
                return message["content"]["status"]

    try:
        request = urllib.request.Request(server.url("api/kernels"), method="POST", data=b'{"name": "python3"}',
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=60) as response:
            kernel = json.loads(response.read())["id"]
        try:
            return servers.run_async(asyncio.wait_for(ask(kernel), 60)), server.log()
        except (asyncio.TimeoutError, TypeError):  # no reply; or the socket closed (read_message gave None)
            return None, server.log()
    finally:
        server.stop()


def test_kernels_start_in_the_students_lab_even_from_a_deep_home_folder(tmp_path, kernels):
    """A kernel's Unix sockets are "<runtime folder>/kernel-<id>-ipc-<n>", and a socket's path has at most
    107 bytes: from a runtime folder longer than 57 characters (a deep home folder, a test worker's
    temporary one) no kernel started, and JupyterLab waited for it for ever."""
    deep = tmp_path / ("a-deep-home-folder-" * 3)
    deep.mkdir()
    assert len(str(deep / "runtime")) > 57
    status, log = _students_lab_kernel_answers(deep)
    assert status == "ok", f"the kernel did not answer:\n{log[-2000:]}"
    assert not (deep / "runtime").exists() or not any((deep / "runtime").glob("kernel-*")), \
        "the kernel's files are in the deep folder"
